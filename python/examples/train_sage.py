"""Trains a GraphSAGE node classifier through graphstore: sampled subgraphs stream from the
storage servers as PyG-shaped batches, the model trains with PyTorch, and loss and accuracy are
printed per epoch.

    PYTHONPATH=bazel-bin/python/site /usr/bin/python3 python/examples/train_sage.py \
        --servers=127.0.0.1:PORT[,127.0.0.1:PORT2] --epochs=5

Data parallel, one process per GPU (or CPU worker), on one host or several:

    PYTHONPATH=bazel-bin/python/site torchrun --nproc_per_node=2 python/examples/train_sage.py \
        --servers=...
    torchrun --nnodes=2 --nproc_per_node=4 --rdzv_backend=c10d --rdzv_endpoint=HOST0:29500 ...

Each rank reads its share of every epoch's global batches (rank r takes batches r, r + W, ...),
the model is in DistributedDataParallel (gloo on CPU, nccl on GPU), every rank takes the same
number of steps, and loss and accuracy are summed over the ranks.

On a dataset with edge weights (`graphstore-generate --edge_weights`, `graphstore-partition
--edge_weights=...`), `--weighted` draws neighbours in proportion to them; on one with times
(`--times`, `--node_times / --edge_times`), `--temporal=uniform` or `--temporal=last` samples
each seed at its node time, so no batch sees an edge from after its seed.
"""

import argparse
import sys
import time

import torch
import torch.nn.functional as F

import graphstore
import graphstore.distributed

try:
    from torch_geometric.nn import SAGEConv
except ImportError:
    class SAGEConv(torch.nn.Module):
        """h'_v = W_self h_v + W_neigh mean_{u -> v} h_u over edge_index (source -> target), as
        torch_geometric.nn.SAGEConv computes it."""

        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin_l = torch.nn.Linear(in_channels, out_channels)
            self.lin_r = torch.nn.Linear(in_channels, out_channels, bias=False)

        def forward(self, x, edge_index):
            src, dst = edge_index
            total = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
            deg = torch.zeros(x.size(0), dtype=x.dtype).index_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
            return self.lin_l(total / deg.clamp_min(1).unsqueeze(1)) + self.lin_r(x)


class Sage(torch.nn.Module):
    def __init__(self, in_channels, hidden, classes):
        super().__init__()
        self.conv1 = SAGEConv(in_channels, hidden)
        self.conv2 = SAGEConv(hidden, classes)

    def forward(self, x, edge_index):
        h = F.relu(self.conv1(x, edge_index))
        h = F.dropout(h, p=0.2, training=self.training)
        return self.conv2(h, edge_index)


def run_epoch(ddp, model, loader, epoch, optimizer=None):
    """One pass over an epoch; trains when an optimizer is given. In training every rank takes
    the same number of steps (a rank whose share of the batches ran out repeats its last batch
    with weight 0), so no rank waits at the gradient all-reduce for another. Loss and accuracy
    count each batch's seeds only, summed over the ranks. Returns (mean loss, accuracy, batches, seconds)."""
    start = time.monotonic()
    loss_sum, right, seen, batches = 0.0, 0, 0, 0
    steps = ddp.even_steps(loader, epoch) if optimizer is not None else ((b, 1.0) for b in loader.epoch(epoch))
    for batch, weight in steps:
        s = batch.batch_size
        out = model(batch.x, batch.edge_index)[:s]
        y = batch.y[:s]
        if optimizer is not None:
            loss = F.cross_entropy(out, y)
            optimizer.zero_grad()
            (loss * weight).backward()
            optimizer.step()
        if weight == 0.0:
            continue  # a repeat: this rank's share of the epoch ran out
        loss_sum += loss.item() * s if optimizer is not None else 0.0
        right += int((out.argmax(1) == y).sum())
        seen += s
        batches += 1
    loss_sum, right, seen, batches = ddp.all_sum([loss_sum, right, seen, batches])
    return loss_sum / max(seen, 1), right / max(seen, 1), int(batches), time.monotonic() - start


def dist_backend():
    return torch.distributed.get_backend() if torch.distributed.is_initialized() else "one process"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", required=True, help="comma-separated host:port of every server, in partition order")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--fanouts", default="10,5", help="neighbours per hop")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--seed", type=int, default=0, help="sampling and initialisation seed")
    p.add_argument("--feature_encoding", default="", help="float32, float16, bfloat16, int8, int4, int2 or int1 on the wire")
    p.add_argument("--feature_cache_rows", type=int, default=0, help="hottest nodes' feature rows kept here")
    p.add_argument("--weighted", action="store_true", help="draw neighbours in proportion to the stored edge weights")
    p.add_argument("--temporal", choices=["uniform", "last"], default=None,
                   help="sample each seed at its node time: among the neighbours up to then, or the latest of them")
    p.add_argument("--shutdown_servers", action="store_true", help="ask every server to exit when done")
    args = p.parse_args(argv)

    ddp = graphstore.distributed.Process.from_environment()
    say = print if ddp.leader else (lambda *a, **k: None)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    common = dict(num_neighbors=[int(f) for f in args.fanouts.split(",")], batch_size=args.batch_size,
                  seed=args.seed, feature_encoding=args.feature_encoding,
                  feature_cache_rows=args.feature_cache_rows, weighted=args.weighted,
                  rank=ddp.rank, world_size=ddp.world_size)
    if ddp.device.type == "cuda":
        common.update(device=str(ddp.device))
    if args.temporal is not None:
        common.update(time_attr="time", temporal_strategy=args.temporal)
    draw = "weighted" if args.weighted else "uniform"
    sampling = draw + (f", temporal ({args.temporal}, seeds at their node times)" if args.temporal else "")
    # Loaders that share a backend key must ask for the same batches: one key per way of sampling
    # (the ranks share it; each rank's channel takes its own share of the batches).
    key = f"train_sage.py/{draw}" + (f"/{args.temporal}" if args.temporal else "")
    try:
        train = graphstore.Loader(args.servers, shuffle=True, split="train", backend_key=key + "/train",
                                  worker_key=f"train_sage.py:train:{ddp.rank}", **common)
        val = graphstore.Loader(args.servers, split="val", backend_key=key + "/val",
                                worker_key=f"train_sage.py:val:{ddp.rank}", **common)
        nt = train.meta.node_types[0]
        say(f"dataset '{train.meta.dataset_name}': {nt.num_nodes} nodes, {nt.features.dim} features, "
            f"{nt.num_classes} classes; {train.num_seeds} train / {val.num_seeds} val seeds on "
            f"{len(train.servers)} server(s)")
        say(f"transport: shared memory from {train.num_shared_memory_servers} of {len(train.servers)} server(s), "
            f"bytes in messages from the rest; layer: {SAGEConv.__module__}.SAGEConv")
        say(f"neighbour sampling: {sampling}")
        if ddp.distributed:
            say(f"data parallel: {ddp.world_size} ranks ({dist_backend()}), {ddp.steps(train)} steps an epoch each, "
                f"every batch once over the ranks")
        say(f"chance accuracy: {1 / max(nt.num_classes, 1):.3f}", flush=True)
        model = ddp.wrap(Sage(nt.features.dim, args.hidden, nt.num_classes))
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        for epoch in range(args.epochs):
            model.train()
            loss, acc, batches, secs = run_epoch(ddp, model, train, epoch, optimizer)
            model.eval()
            with torch.no_grad():
                # Evaluation needs no gradient sync: the plain module on each rank's share.
                _, val_acc, _, _ = run_epoch(ddp, getattr(model, "module", model), val, epoch)
            say(f"epoch {epoch}: loss {loss:.4f}  train acc {acc:.3f}  val acc {val_acc:.4f}  "
                f"({batches} batches, {batches / secs:.1f} batches/s)", flush=True)
        val.close()
        ddp.barrier()  # every rank done before the servers go
        if args.shutdown_servers and ddp.leader:
            train.shutdown_servers()
            say("asked the servers to shut down")
        else:
            train.close()
    except graphstore.GraphstoreError as e:
        print(f"train_sage.py (rank {ddp.rank}): {e}", file=sys.stderr)
        return 1
    finally:
        ddp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
