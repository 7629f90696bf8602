"""The Python loop against the C++ Loader's loop over the same server, in the same run.

    bazel build -c opt //bench:loader_bench //python:graphstore //server:graphstored //tools:graphstore-generate
    /usr/bin/python3 bench/python_bench.py                  # 1M nodes, 100 float features
    /usr/bin/python3 bench/python_bench.py --slice=3 --pairs=12 --processes
    /usr/bin/python3 bench/python_bench.py --pairs=24 --configs=socket-64,shm-64   # fewer, longer

One graphstored serves the generated "1m" graph (generated on first use into --cache). For
each configuration — batch 1024 at [15, 10, 5] and batch 64 at [10, 5], over the socket and
through shared memory — one Loader is opened and its batches are taken in alternating slices
of --slice seconds: by the Python loop (`for batch in loader.epoch(e)`, a Batch per batch) and
by the C++ loop on the same Loader (`Next()` in C++ with the batch dropped, no Python object:
the binding's drain_for). Python reads what a trainer's step reads (x, edge_index, y,
batch_size) and C++ nothing, so the ratio is the cost of the Python layer; slices a few seconds apart in --pairs pairs whose order alternates (C++
first, then Python first) see the same state of a shared machine, which separate runs
seconds or minutes apart do not. Printed: each side's batches/s over all its slices, and the
median with the range of the pairs' ratios Python / C++ (the figure compared with the target).

--processes adds the earlier comparison: the C++ Loader in its own process (bench/loader_bench)
against a Python Loader, --slice seconds each, alternating; it moves with the machine's load
between runs (up to 1.6x for the same loop here), so its ratios are the noisier ones.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# --installed: the graphstore this interpreter has (a wheel; tools/test_envs.sh --bench), not the
# package tree Bazel built.
if "--installed" not in sys.argv:
    sys.path.insert(0, os.path.join(ROOT, "bazel-bin", "python", "site"))
import graphstore  # noqa: E402


def python_loop(address, batch_size, fanouts, shared_memory, seconds):
    with graphstore.Loader([address], fanouts, batch_size=batch_size, shuffle=True, split="",
                           shared_memory=shared_memory, backend_key="python_bench") as loader:
        batches, start, elapsed, epoch = -1, 0.0, 0.0, 0
        while elapsed < seconds:
            for batch in loader.epoch(epoch):
                batch.x, batch.edge_index, batch.y, batch.batch_size  # noqa: B018
                if batches < 0:
                    start = time.monotonic()
                batches += 1
                elapsed = time.monotonic() - start
                if elapsed >= seconds:
                    break
            epoch += 1
    return batches / elapsed


def alternate(address, batch_size, fanouts, shared_memory, seconds, pairs):
    """Alternating slices on one Loader: (C++ batches/s, Python batches/s, sorted pair ratios)."""
    with graphstore.Loader([address], fanouts, batch_size=batch_size, shuffle=True, split="",
                           shared_memory=shared_memory, backend_key="python_bench") as loader:
        impl = loader._open()
        state = {"epoch": 0, "it": None}

        def next_epoch():
            # A fresh epoch, its first batch (the servers' start-up) outside every slice.
            state["it"] = loader.epoch(state["epoch"])
            state["epoch"] += 1
            next(state["it"], None)

        def python_slice():
            batches, last, start = 0, 0.0, time.monotonic()
            for batch in state["it"]:
                # What a trainer's step reads.
                batch.x, batch.edge_index, batch.y, batch.batch_size  # noqa: B018
                batches += 1
                last = time.monotonic() - start
                if last >= seconds:
                    break
            else:
                next_epoch()
            return batches, last

        def cpp_slice():
            batches, last = impl.drain_for(seconds)
            if last < seconds:
                next_epoch()
            return batches, last

        next_epoch()
        python_slice()  # warm-up: the pools and the pipeline fill
        cpp_slice()
        totals = {"c": [0, 0.0], "p": [0, 0.0]}
        ratios = []
        for r in range(pairs):
            rate = {}
            for side in ("c", "p") if r % 2 == 0 else ("p", "c"):
                batches, last = cpp_slice() if side == "c" else python_slice()
                totals[side][0] += batches
                totals[side][1] += last
                rate[side] = batches / last if last > 0 else 0.0
            if rate["c"] > 0:
                ratios.append(rate["p"] / rate["c"])
    return totals["c"][0] / totals["c"][1], totals["p"][0] / totals["p"][1], sorted(ratios)


def cpp_loop(address, batch_size, fanouts, shared_memory, seconds):
    out = subprocess.run([os.path.join(ROOT, "bazel-bin", "bench", "loader_bench"), f"--servers={address}",
                          f"--batch_size={batch_size}", f"--fanouts={','.join(map(str, fanouts))}",
                          f"--shared_memory={'true' if shared_memory else 'false'}", f"--seconds={seconds}",
                          "--backend_key=python_bench"], capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main():
    p = argparse.ArgumentParser(description="Python loop vs C++ Loader")
    p.add_argument("--cache", default="/tmp/graphstore-bench")
    p.add_argument("--slice", type=float, default=2, help="seconds of each slice (run, with --processes)")
    p.add_argument("--pairs", type=int, default=10, help="pairs of slices per configuration")
    p.add_argument("--processes", action="store_true", help="also compare with the C++ Loader in its own process")
    p.add_argument("--installed", action="store_true", help="use the installed graphstore, not bazel-bin's")
    p.add_argument("--configs", default="socket-1024,shm-1024,socket-64,shm-64",
                   help="configurations to run: transport (socket, shm) and batch size (1024, 64)")
    p.add_argument("--bin", default=os.path.join(ROOT, "bazel-bin"),
                   help="where server/graphstored and tools/graphstore-generate are")
    args = p.parse_args()
    known = {f"{'shm' if shm else 'socket'}-{batch_size}": (batch_size, fanouts, shm)
             for batch_size, fanouts in ((1024, [15, 10, 5]), (64, [10, 5])) for shm in (False, True)}
    wanted = [c for c in args.configs.split(",") if c]
    if not wanted or any(c not in known for c in wanted):
        sys.exit(f"--configs: expected names from {', '.join(known)}, got {args.configs!r}")
    configs = [known[c] for c in wanted]
    graph = os.path.join(args.cache, "1m-v2")
    if not os.path.exists(os.path.join(graph, "manifest.json")):
        print(f"generating 1m into {graph} ...", file=sys.stderr)
        subprocess.run([os.path.join(args.bin, "tools", "graphstore-generate"), "--nodes=1000000",
                        "--avg_degree=25.6", "--feature_dim=100", f"--out={graph}"], check=True,
                       stdout=subprocess.DEVNULL)
    port_file = os.path.join(args.cache, f"python_bench-{os.getpid()}.port")
    server = subprocess.Popen([os.path.join(args.bin, "server", "graphstored"), f"--partition={graph}",
                               "--port=0", f"--port_file={port_file}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if server.poll() is not None:
                sys.exit("graphstored exited during start-up")
            time.sleep(0.05)
        address = f"127.0.0.1:{open(port_file).read().strip()}"
        import torch  # noqa: PLC0415
        print(f"graph 1m (1M nodes, ~25M edges, 100 float features); batches/s; ratio = median of the pairs' "
              f"Python / C++ (their range); Python {sys.version.split()[0]}, torch {torch.__version__}")
        print(f"\nOne Loader, {args.pairs} pairs of {args.slice:g} s slices: the C++ loop and the Python loop")
        header = f"{'config':<28} {'transport':<14} {'C++ loop':>11} {'Python':>9} {'ratio':>7}   range"
        print(header)

        def row(batch_size, fanouts, shm, cpp, py, ratios):
            config = f"batch {batch_size}, {fanouts}"
            print(f"{config:<28} {'shared memory' if shm else 'socket':<14} {cpp:>11.2f} {py:>9.2f} "
                  f"{statistics.median(ratios):>7.3f}   {ratios[0]:.3f}-{ratios[-1]:.3f}", flush=True)

        for batch_size, fanouts, shm in configs:
            row(batch_size, fanouts, shm, *alternate(address, batch_size, fanouts, shm, args.slice, args.pairs))
        if args.processes:
            print(f"\nSeparate processes, {args.pairs} pairs of {args.slice:g} s runs: bench/loader_bench and a "
                  "Python Loader")
            print(header)
            for batch_size, fanouts, shm in configs:
                cpp, py = [], []
                for r in range(args.pairs):
                    if r % 2 == 0:
                        cpp.append(cpp_loop(address, batch_size, fanouts, shm, args.slice))
                        py.append(python_loop(address, batch_size, fanouts, shm, args.slice))
                    else:
                        py.append(python_loop(address, batch_size, fanouts, shm, args.slice))
                        cpp.append(cpp_loop(address, batch_size, fanouts, shm, args.slice))
                row(batch_size, fanouts, shm, statistics.median(cpp), statistics.median(py),
                    sorted(q / c for c, q in zip(cpp, py)))
    finally:
        server.terminate()
        server.wait()
        if os.path.exists(port_file):
            os.remove(port_file)


if __name__ == "__main__":
    main()
