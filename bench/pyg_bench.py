"""PyG's loaders over graphstore.pyg against graphstore's Loader, and against PyG's own
NeighborLoader on an in-memory Data of the same graph, in one run (seeds/s).

    bazel build -c opt //server:graphstored //tools:graphstore-generate //python:graphstore
    /usr/bin/python3 bench/pyg_bench.py                  # 100,000 nodes, 32 features
    /usr/bin/python3 bench/pyg_bench.py --nodes=400000 --batches=200 --rounds=5

One graphstored serves a generated graph; the same graph's arrays (`--format=npy`) make the
in-memory Data. Each line takes --batches batches of --batch_size train seeds at --fanouts:

- graphstore.Loader: the stream of one channel (prefetch 4), x / y / edge_index read;
- NodeLoader over graphstore.pyg: PyG's NodeLoader(data=(FeatureStore, GraphStore),
  node_sampler=NeighborSampler) where torch_geometric is installed; without it, the tests'
  stand-in NodeLoader (tests/python/pyg_standin), which makes the calls PyG's makes for a remote
  backend in its order (sample_from_nodes on a batch of the shuffled input, then one
  FeatureStore.multi_get_tensor at the sampled nodes), as the line then says;
- graphstore.pyg.NodeLoader: the same NodeLoader with the same arguments, whose epoch is one
  channel the server samples ahead (prefetch 4) instead of one channel per batch;
- PyG's NeighborLoader on the in-memory Data, where torch_geometric is installed.
"""

import argparse
import statistics
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GRAPHSTORE_BIN: a tree laid out as bazel-bin (server/, tools/, python/site) built elsewhere.
BIN = os.environ.get("GRAPHSTORE_BIN", os.path.join(ROOT, "bazel-bin"))
sys.path.insert(0, os.path.join(BIN, "python", "site"))
import torch  # noqa: E402

import graphstore  # noqa: E402
import graphstore.pyg as gpyg  # noqa: E402

try:
    import torch_geometric  # noqa: F401
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader, NodeLoader
    HAVE_PYG = True
except ImportError:
    # The tests' stand-ins of PyG's classes, NodeLoader included (it makes the calls PyG's makes
    # for a remote backend: sample_from_nodes, then one multi_get_tensor of the sampled nodes).
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "pyg_standin"))
    from torch_geometric.loader import NodeLoader
    HAVE_PYG = False


def serve(directory):
    port_file = os.path.join(directory, "port")
    proc = subprocess.Popen([os.path.join(BIN, "server", "graphstored"), f"--partition={directory}/graph",
                             "--port=0", f"--port_file={port_file}", "--log_level=warn"])
    while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
        if proc.poll() is not None:
            raise RuntimeError("graphstored exited")
        time.sleep(0.05)
    with open(port_file) as f:
        return proc, f"127.0.0.1:{int(f.read())}"


def take_batch(b):
    """What a training step reads of a batch (the same for every line): x, y, edge_index."""
    _ = (b.x.sum(), b.y[:1], b.edge_index[:, :1])
    return int(b.batch_size)


def timed(batches, take):
    """seeds/s over `batches` items of an iterator, the first one warm-up."""
    it = iter(batches)
    take(next(it))
    seeds, start = 0, time.perf_counter()
    for b in it:
        seeds += take(b)
    return seeds / (time.perf_counter() - start)


def loader_line(address, args):
    with graphstore.Loader([address], args.fanouts, batch_size=args.batch_size, shuffle=True, split="train") as loader:
        batches = (b for i, b in zip(range(args.batches + 1), loader.epoch(0)))
        return timed(batches, take_batch)


def pyg_store_line(address, train, args, loader_cls=None):
    fs, gs = gpyg.FeatureStore([address]), gpyg.GraphStore([address])
    sampler = gpyg.NeighborSampler([address], args.fanouts)
    loader = (loader_cls or NodeLoader)(data=(fs, gs), node_sampler=sampler, input_nodes=train,
                                        batch_size=args.batch_size, shuffle=True)
    batches = (b for i, b in zip(range(args.batches + 1), loader))
    return timed(batches, take_batch)


def neighbor_loader_line(npy, train, args):
    import numpy as np
    x = torch.from_numpy(np.load(os.path.join(npy, "features.npy")))
    y = torch.from_numpy(np.load(os.path.join(npy, "labels.npy")))
    src = torch.from_numpy(np.load(os.path.join(npy, "src.npy")))
    dst = torch.from_numpy(np.load(os.path.join(npy, "dst.npy")))
    # The stored edges run src -> dst and graphstore's default hop follows them out of a node;
    # PyG draws a node's in-neighbours: the same graph for it has them reversed.
    data = Data(x=x, y=y, edge_index=torch.stack([dst, src]))
    loader = NeighborLoader(data, num_neighbors=args.fanouts, batch_size=args.batch_size, input_nodes=train,
                            shuffle=True)
    batches = (b for i, b in zip(range(args.batches + 1), loader))
    return timed(batches, take_batch)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=100000)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--batch_size", type=int, default=512)
    p.add_argument("--fanouts", type=lambda s: [int(f) for f in s.split(",")], default=[10, 5])
    p.add_argument("--batches", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3, help="rounds of every line, alternating; medians printed")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        gen = os.path.join(BIN, "tools", "graphstore-generate")
        common = [f"--nodes={a.nodes}", f"--feature_dim={a.features}", "--seed=3"]
        subprocess.run([gen, *common, f"--out={work}/graph"], check=True, capture_output=True)
        subprocess.run([gen, *common, "--format=npy", f"--out={work}/npy"], check=True, capture_output=True)
        import numpy as np
        train = torch.from_numpy(np.load(os.path.join(work, "npy", "train.npy")))
        proc, address = serve(work)
        try:
            print(f"pyg_bench: {a.nodes:,} nodes, {a.features} features, batch {a.batch_size}, {a.fanouts}, "
                  f"{a.batches} batches a line, one server on loopback (shared memory, the default)", flush=True)
            lines = {"loader": lambda: loader_line(address, a), "per_call": lambda: pyg_store_line(address, train, a),
                     "ahead": lambda: pyg_store_line(address, train, a, gpyg.NodeLoader)}
            runs = {k: [] for k in lines}
            for _ in range(a.rounds):
                for k, line in lines.items():
                    runs[k].append(line())
            base, rate, ahead = (statistics.median(runs[k]) for k in ("loader", "per_call", "ahead"))
            print(f"medians of {a.rounds} rounds, alternating", flush=True)
            print(f"graphstore.Loader:                  {base:9,.0f} seeds/s", flush=True)
            how = "PyG's NodeLoader" if HAVE_PYG else "NodeLoader (PyG stand-in: no torch_geometric here)"
            print(f"{how} over graphstore.pyg: {rate:9,.0f} seeds/s  ({rate / base:.2f}x the Loader)", flush=True)
            print(f"graphstore.pyg.NodeLoader (a subclass of {how}, prefetch 4): {ahead:9,.0f} seeds/s  "
                  f"({ahead / base:.2f}x the Loader, {ahead / rate:.2f}x per-call)", flush=True)
            if HAVE_PYG:
                try:
                    mem = neighbor_loader_line(os.path.join(work, "npy"), train, a)
                    print(f"PyG's NeighborLoader, in-memory Data:  {mem:9,.0f} seeds/s  ({base / mem:.2f}x: Loader / it)")
                except ImportError as e:
                    # PyG's in-memory sampler runs on pyg-lib or torch-sparse, packages of their own.
                    print(f"PyG's NeighborLoader on an in-memory Data: not measured ({e})")
            else:
                print("PyG's NeighborLoader on an in-memory Data: not measured (torch_geometric is not installed)")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
