"""What each server of a cluster holds, as the trainers register and read: resident memory
(VmRSS) of every graphstored after start, after channels registered with every node as input
(global batches), and after batches read; the time from a registration to its first batch; and
the batches' rate; and, beside each server's memory, its partition's own share (what
graphstore-inspect's sizing says a server holds for it, resident once its files are read) and
what is beyond it. With --baseline, a second graphstored binary runs the same steps in the same
run and each figure is printed beside it with the ratio.

    bazel build -c opt //server:graphstored //tools:graphstore-generate //python:graphstore
    bazel-bin/tools/graphstore-generate --nodes=10000000 --feature_dim=0 --avg_degree=5 \\
        --partitions=4 --out=/tmp/g10m
    /usr/bin/python3 bench/memory_bench.py --graph=/tmp/g10m --partitions=4 --channels=2 \\
        [--baseline=/path/to/an/older/graphstored]

Ports are picked by the kernel on loopback; the servers are stopped at the end.
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-bin")
sys.path.insert(0, os.path.join(BIN, "python", "site"))
import graphstore  # noqa: E402


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def rss_mb(pid, field="VmRSS"):
    """A process's resident memory in MiB: all of it (VmRSS), or its anonymous part (RssAnon: the
    heap, not the mapped partition files)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory(procs):
    return [rss_mb(p.pid) for p in procs], [rss_mb(p.pid, "RssAnon") for p in procs]


def peer_cache_lookups(metrics_ports):
    """Each server's peer-cache lookups so far, rows and lists, from its metrics: (hits, misses)."""
    import urllib.request
    out = []
    for port in metrics_ports:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
        v = {}
        for line in text.splitlines():
            m = re.match(r"graphstore_peer_cache_(list_)?(hits|misses)_total\S* (\S+)", line)
            if m:
                v[m.group(2)] = v.get(m.group(2), 0) + float(m.group(3))
        out.append((v.get("hits", 0), v.get("misses", 0)))
    return out


def peer_cache_mb(servers):
    """Each server's peer cache (GetServerStats.peer_cache_bytes): its lookup counts until it has
    chosen what to keep, then what it keeps."""
    import grpc
    from graphstore.v1 import graphstore_pb2 as pb, graphstore_pb2_grpc as pb_grpc
    out = []
    for address in servers:
        with grpc.insecure_channel(address) as channel:
            stats = pb_grpc.GraphStoreStub(channel).GetServerStats(pb.GetServerStatsRequest(), timeout=30)
            out.append(stats.peer_cache_bytes / 1e6)
    return out


def partition_dir(graph, parts, k):
    return os.path.join(graph, f"part-{k}") if parts > 1 else graph


def own_share_mb(inspect, part):
    """What graphstore-inspect's sizing says a server holds for `part` (its own nodes and edges and
    the book in memory), in MiB."""
    out = subprocess.run([inspect, f"--partition={part}"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"a server holds ([0-9.]+) MiB for this partition", out)
    if m is None:
        raise RuntimeError(f"graphstore-inspect printed no sizing for {part}:\n{out}")
    return float(m.group(1))


def start_cluster(binary, graph, parts, work, extra):
    ports = free_ports(2 * parts)
    ports, metrics_ports = ports[:parts], ports[parts:]
    cluster = ",".join(f"127.0.0.1:{p}" for p in ports)
    procs = []
    for k in range(parts):
        part = partition_dir(graph, parts, k)
        port_file = os.path.join(work, f"port-{k}")
        args = [binary, f"--partition={part}", f"--port={ports[k]}", f"--port_file={port_file}", "--log_level=warn",
                f"--metrics_port={metrics_ports[k]}"] + extra
        if parts > 1:
            args.append(f"--cluster={cluster}")
        procs.append((subprocess.Popen(args), port_file))
    for proc, port_file in procs:
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if proc.poll() is not None:
                raise RuntimeError(f"graphstored exited ({proc.returncode})")
            time.sleep(0.05)  # waits for the server to write its port (a file it creates)
    return [p for p, _ in procs], [f"127.0.0.1:{p}" for p in ports], metrics_ports


def one_binary(binary, args, work):
    extra = [f"--peer_cache_mb={args.peer_cache_mb}"] if args.peer_cache_mb >= 0 else []
    t0 = time.perf_counter()
    procs, servers, metrics_ports = start_cluster(binary, args.graph, args.partitions, work, extra)
    started_s = time.perf_counter() - t0
    out = {}
    try:
        # Sampling opens once every peer answered: the first registration waits for it.
        out["start"], out["start_anon"] = memory(procs)
        out["start_cache"] = peer_cache_mb(servers)
        out["started_s"] = started_s
        loaders, first = [], []
        for c in range(args.channels):
            t0 = time.perf_counter()
            loader = graphstore.Loader(servers, args.fanouts, split="", batch_size=args.batch_size, shuffle=True,
                                       shared_memory=False, rank=c, world_size=args.channels, deadline=600,
                                       node_features=bool(args.features), labels=bool(args.features))
            it = iter(loader.epoch(0))
            next(it)
            first.append(time.perf_counter() - t0)
            loaders.append((loader, it))
        out["registered"], out["registered_anon"] = memory(procs)
        out["registered_cache"] = peer_cache_mb(servers)
        out["first_batch_s"] = first
        t0, n = time.perf_counter(), 0
        for _ in range(args.batches):
            for _, it in loaders:
                b = next(it)
                n += int(b.batch_size)
        out["seeds_per_s"] = n / (time.perf_counter() - t0)
        out["read"], out["read_anon"] = memory(procs)
        out["read_cache"] = peer_cache_mb(servers)
        out["lookups"] = peer_cache_lookups(metrics_ports)
        for loader, _ in loaders:
            loader.close()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", required=True, help="a dataset directory (DIR/part-K for several partitions)")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--channels", type=int, default=2, help="trainers, each a Loader over every server")
    p.add_argument("--batches", type=int, default=50, help="batches each trainer reads after its first")
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--fanouts", type=lambda s: [int(f) for f in s.split(",")], default=[10, 5])
    p.add_argument("--features", type=int, default=0, help="1: batches carry features and labels")
    p.add_argument("--graphstored", default=os.path.join(BIN, "server", "graphstored"))
    p.add_argument("--baseline", default="", help="another graphstored binary measured the same way")
    p.add_argument("--peer_cache_mb", type=int, default=-1, help="each server's peer cache (-1: its default)")
    p.add_argument("--inspect", default=os.path.join(BIN, "tools", "graphstore-inspect"),
                   help="graphstore-inspect, for each partition's own share")
    a = p.parse_args()
    runs = [("this build", a.graphstored)] + ([("baseline", a.baseline)] if a.baseline else [])
    share = [own_share_mb(a.inspect, partition_dir(a.graph, a.partitions, k)) for k in range(a.partitions)]
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for name, binary in runs:
            results[name] = one_binary(binary, a, work)
    print(f"memory_bench: {a.graph}, {a.partitions} servers, {a.channels} trainers (every node as input, global "
          f"batches), batch {a.batch_size}, {a.fanouts}, {a.batches} batches each")
    print("own share per server (graphstore-inspect sizing: own nodes and edges, the book in memory) MB " +
          ", ".join(f"{x:.0f}" for x in share))
    for name, r in results.items():
        print(f"{name:>10}: RSS MB per server  start {', '.join(f'{x:.0f}' for x in r['start'])}  "
              f"registered {', '.join(f'{x:.0f}' for x in r['registered'])}  "
              f"after reading {', '.join(f'{x:.0f}' for x in r['read'])}")
        print(f"{'':>10}  servers up (files verified, book built) in {r['started_s']:.1f} s")
        for key in ("start", "registered", "read"):
            print(f"{'':>10}  {key:>10}: RSS / own share " + ", ".join(f"{x / s:.2f}" for x, s in zip(r[key], share)) +
                  "; beyond it MB " + ", ".join(f"{x - s:+.0f}" for x, s in zip(r[key], share)) +
                  "; anonymous (not the mapped files) MB " + ", ".join(f"{x:.0f}" for x in r[key + "_anon"]) +
                  "; of it peer cache MB " + ", ".join(f"{x:.0f}" for x in r[key + "_cache"]))
        print(f"{'':>10}  peer cache lookups (rows and lists) per server, hit / all: " +
              ", ".join(f"{h / 1e6:.1f}M / {(h + m) / 1e6:.1f}M" for h, m in r["lookups"]))
        print(f"{'':>10}  registration to first batch {', '.join(f'{x:.2f}' for x in r['first_batch_s'])} s, "
              f"{r['seeds_per_s']:,.0f} seeds/s")
    if a.baseline:
        mine, base = results["this build"], results["baseline"]
        for key in ("start", "registered", "read"):
            ratio = sum(mine[key]) / max(1e-9, sum(base[key]))
            print(f"ratio {key}: {ratio:.2f} of the baseline's memory (sum over servers)")
        print(f"ratio seeds/s: {mine['seeds_per_s'] / base['seeds_per_s']:.2f} of the baseline's")


if __name__ == "__main__":
    main()
