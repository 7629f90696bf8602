"""The Python loop against the C++ Loader over the same server, in the same run.

    bazel build -c opt //bench:loader_bench //python:graphstore //server:graphstored //tools:graphstore-generate
    /usr/bin/python3 bench/python_bench.py                  # 1M nodes, 100 float features
    /usr/bin/python3 bench/python_bench.py --seconds=20 --rounds=3

One graphstored serves the generated "1m" graph (generated on first use into --cache). For
each configuration — batch 1024 at [15, 10, 5] and batch 64 at [10, 5], over the socket and
through shared memory — the C++ Loader's loop (bench/loader_bench) and the same loop in Python
(`for batch in loader.epoch(e)`) each run for --seconds, alternating for --rounds rounds; the
figures are the medians. Both take every batch and touch nothing, so the ratio is the cost of
the Python layer. Ratio = Python batches/s / C++ batches/s.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bazel-bin", "python", "site"))
import graphstore  # noqa: E402


def python_loop(address, batch_size, fanouts, shared_memory, seconds):
    with graphstore.Loader([address], fanouts, batch_size=batch_size, shuffle=True, split="",
                           shared_memory=shared_memory, backend_key="python_bench") as loader:
        batches, start, elapsed, epoch = -1, 0.0, 0.0, 0
        while elapsed < seconds:
            for _ in loader.epoch(epoch):
                if batches < 0:
                    start = time.monotonic()
                batches += 1
                elapsed = time.monotonic() - start
                if elapsed >= seconds:
                    break
            epoch += 1
    return batches / elapsed


def cpp_loop(address, batch_size, fanouts, shared_memory, seconds):
    out = subprocess.run([os.path.join(ROOT, "bazel-bin", "bench", "loader_bench"), f"--servers={address}",
                          f"--batch_size={batch_size}", f"--fanouts={','.join(map(str, fanouts))}",
                          f"--shared_memory={'true' if shared_memory else 'false'}", f"--seconds={seconds}",
                          "--backend_key=python_bench"], capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main():
    p = argparse.ArgumentParser(description="Python loop vs C++ Loader")
    p.add_argument("--cache", default="/tmp/graphstore-bench")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    graph = os.path.join(args.cache, "1m-v2")
    if not os.path.exists(os.path.join(graph, "manifest.json")):
        print(f"generating 1m into {graph} ...", file=sys.stderr)
        subprocess.run([os.path.join(ROOT, "bazel-bin", "tools", "graphstore-generate"), "--nodes=1000000",
                        "--avg_degree=25.6", "--feature_dim=100", f"--out={graph}"], check=True,
                       stdout=subprocess.DEVNULL)
    port_file = os.path.join(args.cache, f"python_bench-{os.getpid()}.port")
    server = subprocess.Popen([os.path.join(ROOT, "bazel-bin", "server", "graphstored"), f"--partition={graph}",
                               "--port=0", f"--port_file={port_file}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if server.poll() is not None:
                sys.exit("graphstored exited during start-up")
            time.sleep(0.05)
        address = f"127.0.0.1:{open(port_file).read().strip()}"
        print(f"graph 1m (1M nodes, ~25M edges, 100 float features); {args.rounds} rounds of {args.seconds:g} s, "
              "medians; batches/s")
        print(f"{'config':<28} {'transport':<14} {'C++ Loader':>11} {'Python':>9} {'ratio':>7}")
        for batch_size, fanouts in ((1024, [15, 10, 5]), (64, [10, 5])):
            for shm in (False, True):
                cpp, py = [], []
                for _ in range(args.rounds):
                    cpp.append(cpp_loop(address, batch_size, fanouts, shm, args.seconds))
                    py.append(python_loop(address, batch_size, fanouts, shm, args.seconds))
                c, q = statistics.median(cpp), statistics.median(py)
                config = f"batch {batch_size}, {fanouts}"
                print(f"{config:<28} {'shared memory' if shm else 'socket':<14} {c:>11.2f} {q:>9.2f} {q / c:>7.3f}",
                      flush=True)
    finally:
        server.terminate()
        server.wait()
        if os.path.exists(port_file):
            os.remove(port_file)


if __name__ == "__main__":
    main()
