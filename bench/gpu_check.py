"""graphstore on a GPU, three figures (run by tools/gpu_check.sh, which starts the server):

1. PyG's GraphSAGE trained one epoch on the GPU from ``batch.to_pyg()`` of a
   ``Loader(device="cuda")``, and its validation accuracy;
2. batches/s of ``Loader(device="cuda")`` against the trainer's own ``.to("cuda")`` of ordinary
   batches, and against batches left on the host (the baseline: what sampling allows);
3. the loader's host-to-device copies in GB/s (page-locked receive buffers, side stream) against
   torch's copy of the same bytes from memory torch pinned itself (target: ratio >= 0.8), as one
   buffer a batch and split into the loader's tensors (what the split alone costs).

    python3 bench/gpu_check.py --server=127.0.0.1:PORT [--seconds=20]
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import graphstore


def loader(server, device=None, split="train", shuffle=True, pin_memory=False):
    return graphstore.Loader([server], [10, 5], batch_size=1024, split=split, shuffle=shuffle, seed=0,
                             device=device, pin_memory=pin_memory, backend_key=f"gpu-check-{split}")


def train_one_epoch(server, classes):
    from torch_geometric.nn import GraphSAGE  # noqa: PLC0415

    torch.manual_seed(0)
    model = None
    steps, start = 0, time.monotonic()
    with loader(server, device="cuda") as train:
        for batch in train.epoch(0):
            data = batch.to_pyg()
            if model is None:
                model = GraphSAGE(data.x.size(1), 128, num_layers=2, out_channels=classes).cuda()
                optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            assert data.x.is_cuda and data.edge_index.is_cuda, "to_pyg() left the GPU"
            optimizer.zero_grad()
            out = model(data.x, data.edge_index)[:data.batch_size]
            loss = F.cross_entropy(out, data.y[:data.batch_size])
            loss.backward()
            optimizer.step()
            steps += 1
    torch.cuda.synchronize()
    seconds = time.monotonic() - start
    correct = total = 0
    model.eval()
    with torch.no_grad(), loader(server, device="cuda", split="val", shuffle=False) as val:
        for batch in val.epoch(0):
            data = batch.to_pyg()
            pred = model(data.x, data.edge_index)[:data.batch_size].argmax(-1)
            correct += int((pred == data.y[:data.batch_size]).sum())
            total += data.batch_size
    print(f"(1) GraphSAGE (PyG), 1 epoch on {torch.cuda.get_device_name()}: {steps} steps in {seconds:.1f} s, "
          f"loss {float(loss):.3f}, val acc {correct / max(total, 1):.3f}", flush=True)


def rate(server, seconds, mode):
    """batches/s over `seconds` after a warm-up batch; each step ends with the batch's x,
    edge_index and y on the GPU (or, for "host", read on the host)."""
    kw = {"device": "cuda"} if mode == "device" else {}
    with loader(server, **kw) as l:
        n, start, epoch = -1, 0.0, 0
        while True:
            for batch in l.epoch(epoch):
                if mode == "own":
                    x, ei, y = (t.to("cuda", non_blocking=False) for t in (batch.x, batch.edge_index, batch.y))
                else:
                    x, ei, y = batch.x, batch.edge_index, batch.y
                if mode != "host":
                    torch.cuda.current_stream().synchronize()
                if n < 0:
                    start = time.monotonic()
                n += 1
                if time.monotonic() - start >= seconds:
                    return n / (time.monotonic() - start)
            epoch += 1


def torch_pinned_rate(batches):
    """torch's own pinned-to-device GB/s over `batches`, each a list of buffer sizes copied on a
    side stream one after another, as the loader copies a batch's tensors."""
    stream = torch.cuda.Stream()
    pinned = [[torch.empty(n, dtype=torch.uint8, pin_memory=True) for n in sizes] for sizes in batches]
    for parts in pinned[:2]:
        for p in parts:
            p.to("cuda", non_blocking=True)
    elapsed = 0.0
    with torch.cuda.stream(stream):
        for parts in pinned:
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record(stream)
            for p in parts:
                p.to("cuda", non_blocking=True)
            e.record(stream)
            e.synchronize()
            elapsed += b.elapsed_time(e)
    return sum(sum(sizes) for sizes in batches) / (elapsed / 1e3) / 1e9


def copy_rates(server, batches):
    """The loader's GB/s; torch's pinned-to-device GB/s over the same bytes as one buffer a
    batch, and split into the same tensors as the loader's; the mean batch MB and tensors a batch."""
    timings = []
    with loader(server, device="cuda") as l:
        l._pipeline.timings = timings
        for i, _ in zip(range(batches), l.epoch(0)):
            pass
    torch.cuda.synchronize()
    kept = timings[2:]  # the first copies pay for warming up
    parts = [p for _, _, p in kept]
    sizes = [sum(p) for p in parts]
    ours = sum(sizes) / (sum(b.elapsed_time(e) for b, e, _ in kept) / 1e3) / 1e9
    whole = torch_pinned_rate([[n] for n in sizes])
    split = torch_pinned_rate(parts)
    return ours, whole, split, statistics.mean(sizes) / 1e6, statistics.mean(len(p) for p in parts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--seconds", type=float, default=15)
    a = p.parse_args()
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, Python {sys.version.split()[0]}", flush=True)
    train_one_epoch(a.server, a.classes)
    host = rate(a.server, a.seconds, "host")
    own = rate(a.server, a.seconds, "own")
    device = rate(a.server, a.seconds, "device")
    print(f"(2) batches/s, batch 1024 [10, 5]: device='cuda' {device:.1f}; trainer's own .to('cuda') {own:.1f} "
          f"(ratio {device / own:.2f}); left on the host {host:.1f} (ratio {device / host:.2f})", flush=True)
    ours, theirs, split, mb, parts = copy_rates(a.server, 40)
    print(f"(3) host-to-device copies of {mb:.1f} MB batches: loader {ours:.2f} GB/s, torch pinned {theirs:.2f} GB/s, "
          f"ratio {ours / theirs:.2f} (target >= 0.8); torch pinned in the loader's {parts:.1f} tensors a batch "
          f"{split:.2f} GB/s (loader / it {ours / split:.2f})", flush=True)


if __name__ == "__main__":
    main()
