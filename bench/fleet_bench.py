"""A fleet on one machine: N storage hosts and W trainer hosts, each in a network namespace of its
own on a bridge, each host's link shaped both ways, real graphstored processes and real Python
Loaders. Needs root (network namespaces, tc); without it, says so and exits 0.

    bazel build -c opt //server:graphstored //tools:graphstore-generate //python:graphstore //bench:loader_bench
    sudo /usr/bin/python3 bench/fleet_bench.py                       # the standard cases
    sudo /usr/bin/python3 bench/fleet_bench.py --cases=1x4,4x4 --rate_mbit=200 --seconds=26

Layout: a switch namespace holds a bridge; host k is namespace gsf-k with one veth to it
(address 10.97.0.(k+1)/24 inside the namespaces only). Each link is a token bucket (`tbf`) of
--rate_mbit on both ends, so a host's traffic each way is one FIFO queue (this kernel has no
fair-queueing qdisc and no netem). --cpu_percent puts each host's processes in a cgroup v1 cpu
group with that quota; --cores_per_host=K gives host k the cores k*K..k*K+K-1 alone (on a
machine of K * (N + W) cores or more; tools/device_check.sh runs it so on 16). Everything made
is removed at the end, also after an error.

A case "NxW" runs N servers (partition k on host k, --cluster of all) and W trainers (one
Loader each, rank r of world_size W, global batches, shared memory off) for --warmup seconds,
then measures --seconds. Each line prints the aggregate seeds/s, its ratio to N = 1 with the
same W in the same run, the trainers' min/max share, the bytes each way on every link (the
kernel's counters of the switch side), the servers' bytes beyond the batches' own by kind, and
CPU per batch of the servers and the trainers, and how the machine's cores spent the window (user,
system, softirq, idle, steal: whether the cores rather than the links bound the case); per trainer, its
longest wait for a batch, the time its epochs' first batches took, and what TCP sent it again.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from fleet_model import print_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GRAPHSTORE_BIN: a tree laid out as bazel-bin (server/, tools/, python/site) built elsewhere.
BIN = os.environ.get("GRAPHSTORE_BIN", os.path.join(ROOT, "bazel-bin"))
SWITCH = "gsf-sw"
PREFIX = "10.97.0."
PORT = 7400


def sh(*args, check=True, ns=None):
    cmd = [str(a) for a in args]
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def kill_in(ns):
    """Kills every process left in namespace `ns`."""
    for pid in sh("ip", "netns", "pids", ns, check=False).split():
        subprocess.run(["kill", "-9", pid], check=False)


class Network:
    """The namespaces, the bridge, the veths and their shaping; `close` removes all of it."""

    def __init__(self, hosts, rate_mbit, cpu_percent, rtt_ms=0.0, cores_per_host=0, sysctls=()):
        self.hosts, self.rate, self.cpu, self.rtt_ms = hosts, rate_mbit, cpu_percent, rtt_ms
        self.sysctls = list(sysctls)
        self.cores_per_host = cores_per_host
        self.made_ns, self.groups = [], []

    def ns(self, k):
        return f"gsf-{k}"

    def address(self, k):
        return f"{PREFIX}{k + 1}"

    def open(self):
        self.close()  # leftovers of an interrupted run
        sh("ip", "netns", "add", SWITCH)
        self.made_ns.append(SWITCH)
        sh("ip", "-n", SWITCH, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", SWITCH, "link", "set", "br0", "up")
        for k in range(self.hosts):
            ns = self.ns(k)
            sh("ip", "netns", "add", ns)
            self.made_ns.append(ns)
            sh("ip", "link", "add", f"gsf{k}h", "netns", ns, "type", "veth", "peer", "name", f"gsf{k}s",
               "netns", SWITCH)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            for setting in self.sysctls:
                sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", setting)
            sh("ip", "-n", ns, "link", "set", f"gsf{k}h", "name", "eth0")
            sh("ip", "-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", SWITCH, "link", "set", f"gsf{k}s", "master", "br0")
            sh("ip", "-n", SWITCH, "link", "set", f"gsf{k}s", "up")
            # The link's rate both ways: host -> switch on eth0, switch -> host on gsfKs.
            for where, dev in ((ns, "eth0"), (SWITCH, f"gsf{k}s")):
                tbf = ["tbf", "rate", f"{self.rate}mbit", "burst", "64kb", "latency", "50ms"]
                if self.rtt_ms:
                    # Half the round trip each way, on every link: host to host is two links.
                    sh("tc", "-n", where, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
                       f"{self.rtt_ms / 4}ms")
                    sh("tc", "-n", where, "qdisc", "add", "dev", dev, "parent", "1:", "handle", "2:", *tbf)
                else:
                    sh("tc", "-n", where, "qdisc", "add", "dev", dev, "root", *tbf)
            if self.cpu:
                group = f"/sys/fs/cgroup/cpu/gsf-{k}"
                os.makedirs(group, exist_ok=True)
                with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
                    f.write("100000")
                with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
                    f.write(str(int(self.cpu * 1000)))
                self.groups.append(group)

    def cores(self, k):
        """Host k's core group with --cores_per_host (cores k*K .. k*K+K-1, wrapping), else None."""
        if not self.cores_per_host:
            return None
        count = os.cpu_count()
        return {(k * self.cores_per_host + i) % count for i in range(self.cores_per_host)}

    def run(self, k, args, log):
        """A process on host k (in its namespace and, with a CPU share, its cgroup; with a core
        group, on those cores alone)."""
        prefix = ["ip", "netns", "exec", self.ns(k)]
        if self.cpu:
            prefix = ["cgexec", "-g", f"cpu:gsf-{k}"] + prefix if shutil.which("cgexec") else prefix
        cores = self.cores(k)
        pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
        p = subprocess.Popen(prefix + [str(a) for a in args], stdout=log, stderr=subprocess.STDOUT,
                             preexec_fn=pin)
        if self.cpu and not shutil.which("cgexec"):
            with open(f"/sys/fs/cgroup/cpu/gsf-{k}/cgroup.procs", "w") as f:
                f.write(str(p.pid))
        return p

    def link_bytes(self):
        """{host: (bytes to the host, bytes from the host)}, the switch side's counters."""
        out = json.loads(sh("ip", "-n", SWITCH, "-j", "-s", "link", "show"))
        by_name = {d["ifname"]: d["stats64"] for d in out if "stats64" in d}
        return {k: (by_name[f"gsf{k}s"]["tx"]["bytes"], by_name[f"gsf{k}s"]["rx"]["bytes"])
                for k in range(self.hosts) if f"gsf{k}s" in by_name}

    def tcp_segments(self, hosts):
        """(segments sent, segments retransmitted) by TCP on `hosts`, from each namespace's
        /proc/net/snmp: what the kernel sent again after a drop at a full link's FIFO."""
        sent = again = 0
        for k in hosts:
            lines = [x.split() for x in sh("ip", "netns", "exec", self.ns(k), "cat", "/proc/net/snmp").splitlines()
                     if x.startswith("Tcp:")]
            if len(lines) >= 2:
                row = dict(zip(lines[0][1:], lines[1][1:]))
                sent += int(row.get("OutSegs", 0))
                again += int(row.get("RetransSegs", 0))
        return sent, again

    def resent_by_socket(self, hosts):
        """{(host, local, peer): bytes TCP sent again} of every connection on `hosts` (ss -tin),
        to tell which connections a full FIFO's drops fell on."""
        out = {}
        if not shutil.which("ss"):
            return out
        for k in hosts:
            key = None
            for line in sh("ip", "netns", "exec", self.ns(k), "ss", "-tin", check=False).splitlines():
                if line and not line[0].isspace():
                    cols = line.split()
                    key = (k, cols[3], cols[4]) if len(cols) >= 5 and cols[0] != "State" else None
                elif key is not None:
                    m = re.search(r"bytes_retrans:(\d+)", line)
                    out[key] = int(m.group(1)) if m else 0
                    key = None
        return out

    def close(self):
        listed = sh("ip", "netns", "list", check=False)
        for line in listed.splitlines():
            name = line.split()[0] if line.strip() else ""
            if name == SWITCH or (name.startswith("gsf-") and name[4:].isdigit()):
                kill_in(name)
                sh("ip", "netns", "del", name, check=False)
        for group in self.groups:
            try:
                os.rmdir(group)
            except OSError:
                pass
        self.made_ns, self.groups = [], []


def netem_available():
    """Whether this kernel has netem: a delay on a scratch namespace's loopback."""
    probe = "gsf-probe"
    sh("ip", "netns", "add", probe, check=False)
    try:
        r = subprocess.run(["tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           capture_output=True, text=True, check=False)
        return r.returncode == 0
    finally:
        sh("ip", "netns", "del", probe, check=False)


def dataset(cache, n, nodes, features):
    """The generated graph in n partitions, kept in `cache` for the generator that wrote it: its
    binary's hash is the stamp, so another build's generator (whose files may differ) writes its
    own again."""
    out = os.path.join(cache, f"fleet-{nodes}-{features}-{n}")
    generate = os.path.join(BIN, "tools", "graphstore-generate")
    with open(generate, "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()
    done = os.path.join(out, "done")
    written = ""
    if os.path.exists(done):
        with open(done) as f:
            written = f.read()
    if written != stamp:
        shutil.rmtree(out, ignore_errors=True)
        sh(generate, f"--nodes={nodes}", f"--feature_dim={features}",
           f"--partitions={n}", "--method=random", "--seed=7", f"--out={out}")
        with open(done, "w") as f:
            f.write(stamp)
    return out


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """The machine's CPU time by kind since boot, in clock ticks (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    return {"user": user + nice, "system": system, "softirq": softirq + irq, "idle": idle + iowait, "steal": steal}


def start_relays(net, n, logs, rtt_ms):
    """bench/delay_relay.py on hosts 0..n-1, each holding what crosses it rtt_ms / 2 each way
    between the host's address (what peers and trainers dial) and its server on loopback."""
    relays = []
    for k in range(n):
        log = os.path.join(logs, f"relay-{k}.log")
        cmd = [sys.executable, os.path.join(ROOT, "bench", "delay_relay.py"), f"--listen={net.address(k)}:{PORT}",
               f"--to=127.0.0.1:{PORT + 1}", f"--one_way_ms={rtt_ms / 2}"]
        relays.append((log, net.run(k, cmd, open(log, "w"))))
    for log, p in relays:
        while "relay ready" not in open(log).read():
            if p.poll() is not None:
                raise RuntimeError(f"a relay exited: see {log}")
            time.sleep(0.05)
    return relays


def start_servers(net, args, n, logs, fair_send, relay_ms=None):
    """graphstored on hosts 0..n-1, serving (each behind a delaying relay where `relay_ms` is
    not None); [(port file, process)], their addresses, and [(log, relay process)]."""
    data = dataset(args.cache, n, args.nodes, args.features)
    servers = [f"{net.address(k)}:{PORT}" for k in range(n)]
    relays = [] if relay_ms is None else start_relays(net, n, logs, relay_ms)
    procs = []
    for k in range(n):
        part = data if n == 1 else os.path.join(data, f"part-{k}")
        port_file = os.path.join(logs, f"server-{k}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        host, port = (net.address(k), PORT) if relay_ms is None else ("127.0.0.1", PORT + 1)
        flags = [f"--partition={part}", f"--host={host}", f"--port={port}", f"--port_file={port_file}",
                 "--peer_timeout_ms=60000",
                 f"--num_workers={args.server_workers}", "--log_level=warn", f"--peer_cache_mb={args.peer_cache_mb}",
                 f"--fair_send={'true' if fair_send else 'false'}"]
        if n > 1:
            flags.append(f"--cluster={','.join(servers)}")
        flags += args.server_flags.split()
        procs.append((port_file, net.run(k, [os.path.join(BIN, "server", "graphstored")] + flags,
                                         open(os.path.join(logs, f"server-{k}.log"), "w"))))
    for port_file, p in procs:
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if p.poll() is not None:
                raise RuntimeError(f"graphstored exited: see {logs}")
            time.sleep(0.05)
    return procs, servers, relays


def stop(procs):
    for _, p in procs:
        p.terminate()
    for _, p in procs:
        p.wait(timeout=60)


def run_torchrun_case(net, args, n, w, logs):
    """python/examples/train_sage.py under torchrun, one rank on each of W trainer hosts (the
    static rendezvous: node rank 0 hosts the store; the namespaces share a host name, so c10d's
    test of which host is the endpoint cannot tell them apart), DDP over gloo between the hosts;
    rank 0's epoch lines."""
    procs, servers, _ = start_servers(net, args, n, logs, True)
    script = os.path.join(ROOT, "python", "examples", "train_sage.py")
    launch = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={w}", "--nproc_per_node=1",
              f"--master_addr={net.address(n)}", "--master_port=29400", "--max_restarts=0"]
    import torch
    if torch.__version__.startswith("1.") and sys.version_info >= (3, 11):
        launch += ["--redirects=2", "--tee=2"]  # torch 1.13's torchrun cannot parse its default 0 on 3.11
    # gloo finds its address from the host name, which is the machine's, not the namespace's.
    env = dict(os.environ, PYTHONPATH=os.path.join(BIN, "python", "site"), OMP_NUM_THREADS="1",
               GLOO_SOCKET_IFNAME="eth0")
    ranks = []
    for r in range(w):
        out = open(os.path.join(logs, f"torchrun-{r}.log"), "w+")
        cmd = launch + [f"--node_rank={r}", script, f"--servers={','.join(servers)}", f"--epochs={args.torchrun_epochs}",
                        f"--batch_size={args.batch_size}", f"--fanouts={args.fanouts}"]
        ranks.append((out, subprocess.Popen(["ip", "netns", "exec", net.ns(n + r)] + cmd, stdout=out,
                                            stderr=subprocess.STDOUT, env=env)))
    lines = []
    for r, (out, p) in enumerate(ranks):
        p.wait(timeout=1800)
        out.seek(0)
        text = out.read()
        if p.returncode != 0:
            raise RuntimeError(f"torchrun on trainer host {r} exited {p.returncode}: see {out.name}")
        lines += [x for x in text.splitlines() if x.startswith("epoch ") or "data parallel" in x]
    stop(procs)
    return lines


def run_case(net, args, n, w, logs, fair_send, relay_ms=None):
    """One case: its servers and trainers; a dict of what the line prints."""
    procs, servers, relays = start_servers(net, args, n, logs, fair_send, relay_ms)
    # Trainers register, say so (GO.ready.R), and wait for GO, which holds the measured window:
    # registration gathers the whole input on every server, which on two shared cores takes
    # seconds at N >= 4, and must not eat into the warm-up.
    go = os.path.join(logs, "go")
    for f in [go] + [f"{go}.ready.{r}" for r in range(w)]:
        if os.path.exists(f):
            os.remove(f)
    trainers = []
    for r in range(w):
        out = open(os.path.join(logs, f"trainer-{r}.json"), "w+")
        cpp = args.trainers == "cpp" or (args.trainers == "mixed" and r % 2 == 1)
        if cpp:
            # The C++ Loader (a backend of its own: its sampling config is the C++ default's).
            cmd = [os.path.join(BIN, "bench", "loader_bench"), f"--servers={','.join(servers)}",
                   f"--batch_size={args.batch_size}", f"--fanouts={args.fanouts}", "--shared_memory=false",
                   "--backend_key=fleet-cpp", f"--rank={r}", f"--world_size={w}",
                   f"--feature_encoding={args.feature_encoding}", f"--fleet_go={go}"]
        else:
            cmd = [sys.executable, "-X", "faulthandler", os.path.abspath(__file__), "trainer",
                   f"--servers={','.join(servers)}", f"--rank={r}", f"--world_size={w}",
                   f"--batch_size={args.batch_size}", f"--fanouts={args.fanouts}", f"--go={go}",
                   f"--feature_encoding={args.feature_encoding}", f"--step_ms={args.slow_trainer_ms if r == 0 else 0}",
                   f"--ordered={1 if args.ordered == 'on' else 0}",
                   f"--rows_from_owners={1 if args.rows_from_owners == 'on' else 0}"]
        trainers.append((out, net.run(n + r, cmd, out)))
    deadline = time.time() + 600
    while not all(os.path.exists(f"{go}.ready.{r}") for r in range(w)):
        if any(p.poll() is not None for _, p in trainers) or time.time() > deadline:
            failed = [r for r, (_, p) in enumerate(trainers) if p.poll() is not None]
            tails = "; ".join(f"trainer {r}: " + open(os.path.join(logs, f"trainer-{r}.json")).read()[-600:]
                              for r in failed)
            raise RuntimeError(f"a trainer did not register: {tails or 'timed out'}")
        time.sleep(0.05)
    t0 = time.time() + args.warmup
    t1 = t0 + args.seconds
    with open(go + ".tmp", "w") as f:
        f.write(f"{t0} {t1}\n")
    os.rename(go + ".tmp", go)
    time.sleep(max(0.0, t0 - time.time()))
    links0, cpu0, tcp0 = net.link_bytes(), [proc_cpu(p.pid) for _, p in procs], net.tcp_segments(range(n))
    machine0, resent0 = machine_cpu(), net.resent_by_socket(range(n))
    relay0 = sum(proc_cpu(p.pid) for _, p in relays)
    time.sleep(max(0.0, t1 - time.time()))
    links1, cpu1, tcp1 = net.link_bytes(), [proc_cpu(p.pid) for _, p in procs], net.tcp_segments(range(n))
    machine1, resent1 = machine_cpu(), net.resent_by_socket(range(n))
    relay1 = sum(proc_cpu(p.pid) for _, p in relays)
    results = []
    for out, p in trainers:
        p.wait(timeout=args.seconds + 120)
        out.seek(0)
        lines = [x for x in out.read().splitlines() if x.startswith("{")]
        if p.returncode != 0 or not lines:
            raise RuntimeError(f"a trainer failed: see {out.name}")
        results.append(json.loads(lines[-1]))
    stop(procs + relays)
    link = {k: (links1[k][0] - links0[k][0], links1[k][1] - links0[k][1]) for k in links1}
    c = summarise(args, n, w, results, link, [b - a for a, b in zip(cpu0, cpu1)])
    c["fair_send"] = fair_send
    c["relay_ms"], c["relay_cpu"] = relay_ms, relay1 - relay0
    c["seconds"] = args.seconds
    c["tcp_sent"], c["tcp_again"] = tcp1[0] - tcp0[0], tcp1[1] - tcp0[1]
    # What the servers sent each trainer again, by the trainer host's address.
    c["resent_to"] = [0] * w
    for (k, local, peer), b in resent1.items():
        address = peer.rsplit(":", 1)[0].strip("[]").replace("::ffff:", "")
        for r in range(w):
            if address == net.address(n + r):
                c["resent_to"][r] += b - resent0.get((k, local, peer), 0)
    spent = {k: machine1[k] - machine0[k] for k in machine0}
    c["machine"] = {k: v / max(sum(spent.values()), 1) for k, v in spent.items()}
    return c


def share(values):
    """The least of `values` over the largest (0 when all are 0): how evenly trainers were fed."""
    return min(values) / max(values) if max(values) else 0.0


def summarise(args, n, w, results, link, server_cpu):
    seeds = [r["seeds"] / args.seconds for r in results]
    batches = sum(r["batches"] for r in results)
    payload = sum(r["bytes"] for r in results)
    server_tx = sum(link[k][1] for k in range(n))  # from the servers' hosts
    received = [link[n + r][0] for r in range(w)]  # to each trainer's host, in the window
    trainer_rx = sum(received)
    return {
        "n": n, "w": w, "seeds_s": sum(seeds), "share": share(seeds),
        # The same share in bytes each trainer's link received: not rounded to whole batches.
        "byte_share": share(received),
        "per_trainer": seeds, "batches": batches, "payload": payload,
        "links": {k: link[k] for k in link}, "server_tx": server_tx,
        "between_servers": max(0, server_tx - trainer_rx),
        "server_cpu_ms_per_batch": 1000 * sum(server_cpu) / max(batches, 1),
        "trainer_cpu_ms_per_batch": 1000 * sum(r["cpu"] for r in results) / max(batches, 1),
        # Each process's CPU over the batches it served (a server: every batch of the window;
        # a trainer: its own).
        "server_cpu_each": [1000 * c / max(batches, 1) for c in server_cpu],
        "trainer_cpu_each": [1000 * r["cpu"] / max(r["batches"], 1) for r in results],
        "retries": sum(r.get("retries", 0) for r in results),
        # Per trainer: [(bytes over server k's stream, bytes server k answered as an owner)].
        "by_server": [r.get("by_server", []) for r in results],
        # Per trainer: its longest wait for a batch, and the seconds its epochs' first batches took.
        "waits": [((r.get("waits") or [[0, False]])[0][0], r.get("epoch_waits", 0)) for r in results],
    }


def print_case(c, base, one):
    """`base`: seeds/s of N = 1 with the same W; `one`: the N = 1 case whose bytes a seed are
    the batches' own on the wire (what a server link carries beyond them is the cluster's)."""
    ratio = f"{c['seeds_s'] / base:.2f}x" if base else "-"
    per_host = f"{c['seeds_s'] / base / c['n']:.2f}" if base else "-"
    seeds = c["seeds_s"] * c["seconds"]
    own = seeds * one["server_tx"] / (one["seeds_s"] * one["seconds"]) if one else c["server_tx"]
    relay = f", relay RTT +{c['relay_ms']:g} ms" if c.get("relay_ms") is not None else ""
    print(f"N={c['n']} W={c['w']} fair send {'on' if c['fair_send'] else 'off'}{relay}: {c['seeds_s']:,.0f} seeds/s  vs N=1 {ratio}  per host {per_host}  "
          f"shares min/max {c['share']:.2f} ({', '.join(f'{s:,.0f}' for s in c['per_trainer'])}; "
          f"in bytes received {c['byte_share']:.2f})", flush=True)
    links = "  ".join(f"h{k} {a / 1e6:,.0f}/{b / 1e6:,.0f}" for k, (a, b) in sorted(c["links"].items())
                      if k < c["n"] + c["w"])
    print(f"    link MB to/from each host: {links}")
    to_trainers = c["server_tx"] - c["between_servers"]
    print(f"    servers sent {c['server_tx'] / 1e6:,.1f} MB, {c['server_tx'] / seeds:,.0f} B a seed ({c['payload'] / 1e6:,.1f} MB "
          f"of batch tensors); beyond N=1's {own / seeds:,.0f} B a seed: +{100 * (c['server_tx'] - own) / own:.1f} % = "
          f"{(to_trainers - own) / 1e6:,.1f} MB more to the trainers (owners bytes, owners' replies' framing) + "
          f"{c['between_servers'] / 1e6:,.1f} MB between servers (hops' ids and lists)")
    if c.get("tcp_sent"):
        # Segments sent again count in the link's bytes once more: bytes beyond the batches'.
        again = c["server_tx"] * c["tcp_again"] / c["tcp_sent"]
        print(f"    TCP on the servers' hosts sent {c['tcp_sent']:,} segments, {c['tcp_again']:,} of them again "
              f"({100 * c['tcp_again'] / c['tcp_sent']:.2f} %, about {again / 1e6:,.1f} MB of the bytes above); "
              f"to each trainer, kB: {' '.join(f't{r} {b / 1e3:,.0f}' for r, b in enumerate(c.get('resent_to', [])))}")
    if c["n"] > 1 and all(c["by_server"]):
        # Where each trainer's bytes came from: its streams, and the owners' answers (rows_from_owners).
        stream = [sum(s for s, _ in t) for t in c["by_server"]]
        answers = [sum(a for _, a in t) for t in c["by_server"]]
        print(f"    each trainer's MB over streams / from owners: "
              f"{'  '.join(f't{r} {s / 1e6:,.0f}/{a / 1e6:,.0f}' for r, (s, a) in enumerate(zip(stream, answers)))}; "
              f"shares min/max {share(stream):.2f} / {share(answers):.2f}")
    retried = f"; {c['retries']} registration(s) retried" if c["retries"] else ""
    each = lambda v: ", ".join(f"{x:.1f}" for x in v)
    print(f"    CPU per batch: servers {c['server_cpu_ms_per_batch']:.1f} ms ({each(c['server_cpu_each'])}), "
          f"trainers {c['trainer_cpu_ms_per_batch']:.1f} ms (each of its own: {each(c['trainer_cpu_each'])})"
          f"{retried}", flush=True)
    if any(longest for longest, _ in c["waits"]):
        print("    each trainer's longest wait for a batch / its epochs' first batches, s: "
              + "  ".join(f"t{r} {longest:.2f}/{starts:.2f}" for r, (longest, starts) in enumerate(c["waits"])))
    m = c["machine"]
    # A process is charged for the kernel's work on packets that arrive while it runs (the
    # emulated links' bridge, veths and token buckets run in softirq), so its CPU a batch
    # includes the network's; the machine's idle time says whether the cores bound the case.
    print(f"    the machine's {os.cpu_count()} cores: user {m['user']:.0%}, system {m['system']:.0%}, "
          f"softirq {m['softirq']:.0%}, idle {m['idle']:.0%}, taken by the host (steal) {m['steal']:.0%}", flush=True)


def trainer_main(argv):
    """A trainer host's process: one Loader, epochs until --end; prints one JSON line."""
    p = argparse.ArgumentParser()
    p.add_argument("--servers")
    p.add_argument("--rank", type=int)
    p.add_argument("--world_size", type=int)
    p.add_argument("--batch_size", type=int)
    p.add_argument("--fanouts")
    p.add_argument("--go", help="say GO.ready.RANK once registered, then wait for GO: 'start end'")
    p.add_argument("--feature_encoding", default="")
    p.add_argument("--step_ms", type=float, default=0)
    p.add_argument("--ordered", type=int, default=1)
    p.add_argument("--rows_from_owners", type=int, default=1)
    a = p.parse_args(argv)
    sys.path.insert(0, os.path.join(BIN, "python", "site"))
    import graphstore
    retries = 0
    while True:
        try:
            loader = graphstore.Loader(a.servers.split(","), [int(f) for f in a.fanouts.split(",")],
                                       batch_size=a.batch_size, shuffle=True, split="", shared_memory=False,
                                       rank=a.rank, world_size=a.world_size, backend_key="fleet",
                                       worker_key=f"fleet:{a.rank}", feature_encoding=a.feature_encoding,
                                       ordered=bool(a.ordered), rows_from_owners=bool(a.rows_from_owners),
                                       # Room for many trainers registering at once on two
                                       # cores (their streams open while the others register).
                                       deadline=180.0)
            break
        except graphstore.GraphstoreError as e:
            # Many processes starting at once on two cores can pass a server's deadlines while
            # they register. Counted.
            retries += 1
            print(f"registration failed ({e}); retrying", file=sys.stderr, flush=True)
            if retries == 3:
                raise
    open(f"{a.go}.ready.{a.rank}", "w").close()
    while not os.path.exists(a.go):
        time.sleep(0.02)
    with open(a.go) as f:
        a.start, a.end = (float(x) for x in f.read().split())
    seeds = batches = payload = 0
    cpu = None
    epoch = 0
    # The longest waits for a batch in the window: (seconds, whether the epoch's first batch).
    last, waits = None, []
    while time.time() < a.end:
        first = True
        for batch in loader.epoch(epoch):
            now = time.time()
            if last is not None and now >= a.start:
                waits.append((now - last, first))
            last, first = now, False
            if now >= a.end:
                break
            if now >= a.start:
                if cpu is None:
                    cpu = time.process_time()
                    sent0 = loader.bytes_received_by_server
                seeds += batch.batch_size
                batches += 1
                # The batch's own bytes: its tensors, whichever server or owner sent them.
                payload += sum(t.numel() * t.element_size() for t in
                               (batch.x, batch.y, batch.edge_index, batch.n_id) if t is not None)
            if a.step_ms:
                time.sleep(a.step_ms / 1000)  # a model's step on a slower trainer
        epoch += 1
    # What each server sent this trainer in the window: over its stream, and as an owner of rows.
    sent = [(s - s0, o - o0) for (s, o), (s0, o0) in zip(loader.bytes_received_by_server, sent0)] if cpu else []
    waits.sort(reverse=True)
    out = {"seeds": seeds, "batches": batches, "cpu": time.process_time() - (cpu or 0.0), "bytes": payload,
           "retries": retries, "by_server": sent, "waits": waits[:3],
           "epoch_waits": sum(w for w, first in waits if first), "all_waits": sum(w for w, _ in waits)}
    loader.close()
    print(json.dumps(out), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "trainer":
        return trainer_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="1x1,1x2,1x4,2x2,2x4,4x4", help="NxW: N storage hosts, W trainers")
    p.add_argument("--rate_mbit", type=int, default=200, help="each link's rate, both ways")
    p.add_argument("--cpu_percent", type=int, default=0, help="each host's CPU quota (cgroup v1), 0: none")
    p.add_argument("--cores_per_host", type=int, default=0,
                   help="K: host k's processes on cores k*K..k*K+K-1 alone (a core group per host), 0: shared")
    p.add_argument("--nodes", type=int, default=200000)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--batch_size", type=int, default=512)
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--feature_encoding", default="")
    p.add_argument("--server_workers", type=int, default=1)
    p.add_argument("--trainers", choices=["python", "cpp", "mixed"], default="python",
                   help="the trainers' Loader: Python, C++ (bench/loader_bench), or alternating")
    p.add_argument("--slow_trainer_ms", type=float, default=0,
                   help="rank 0 takes this long a batch (a slower trainer: the others must not wait for it)")
    p.add_argument("--peer_cache_mb", type=int, default=1)
    p.add_argument("--server_flags", default="", help="more graphstored flags, space-separated "
                   "(e.g. --server_flags=--send_quantum_kb=256)")
    p.add_argument("--warmup", type=float, default=8)
    p.add_argument("--seconds", type=float, default=26)
    p.add_argument("--cache", default="/tmp/graphstore-fleet")
    p.add_argument("--torchrun", action="store_true",
                   help="run python/examples/train_sage.py under torchrun across the W trainer hosts instead")
    p.add_argument("--torchrun_epochs", type=int, default=2)
    p.add_argument("--rtt_ms", type=float, default=0,
                   help="host-to-host round trip added with netem (needs sch_netem: `tc qdisc add dev lo root netem "
                        "delay 1ms` says 'Specified qdisc kind is unknown' where it is missing)")
    p.add_argument("--relay_rtt_ms", default="",
                   help="comma-separated round trips, ms: each case once per value, every server behind "
                        "bench/delay_relay.py holding each byte half of it each way (0: the relay alone); "
                        "a round trip measured where the kernel has no netem")
    p.add_argument("--ordered", choices=["on", "off"], default="on",
                   help="Python trainers' Loader(ordered=): batches in batch order (a slow server "
                        "holds the rest back), or in arrival order")
    p.add_argument("--host_sysctl", action="append", default=[],
                   help="a sysctl every host's namespace sets, e.g. net.ipv4.tcp_slow_start_after_idle=0 "
                        "(repeatable)")
    p.add_argument("--rows_from_owners", choices=["on", "off"], default="on",
                   help="Python trainers' Loader(rows_from_owners=): other partitions' rows asked of "
                        "their owners (a row crosses once), or every batch whole from its server")
    p.add_argument("--fair_send", choices=["on", "off", "both"], default="on",
                   help="the servers' --fair_send; both: each case off, then on (before / after)")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("fleet_bench: needs root (network namespaces and tc); skipped")
        return 0
    if not shutil.which("tc") or not shutil.which("ip"):
        print("fleet_bench: needs iproute2's ip and tc; skipped")
        return 0
    cases = [tuple(int(x) for x in c.split("x")) for c in a.cases.split(",")]
    os.makedirs(a.cache, exist_ok=True)
    logs = os.path.join(a.cache, "logs")
    os.makedirs(logs, exist_ok=True)
    try:
        relays = [float(x) for x in a.relay_rtt_ms.split(",")] if a.relay_rtt_ms else [None]
    except ValueError:
        print(f"fleet_bench: --relay_rtt_ms wants comma-separated milliseconds, not {a.relay_rtt_ms!r}")
        return 2
    if any(r is not None and r < 0 for r in relays):
        print("fleet_bench: --relay_rtt_ms values must be >= 0")
        return 2
    if a.rtt_ms and not netem_available():
        print("fleet_bench: --rtt_ms needs the kernel's netem qdisc (sch_netem), which this kernel lacks")
        return 1
    net = Network(max(n + w for n, w in cases), a.rate_mbit, a.cpu_percent, a.rtt_ms, a.cores_per_host,
                  a.host_sysctl)
    print(f"fleet: {a.nodes:,} nodes, {a.features} features, batch {a.batch_size}, [{a.fanouts}], "
          f"{a.rate_mbit} Mbit/s links, peer caches {a.peer_cache_mb} MiB, {a.server_workers} sampling worker(s) "
          f"a server, {a.trainers} Loaders ({'batch' if a.ordered == 'on' else 'arrival'} order, "
          f"{'rows from their owners' if a.rows_from_owners == 'on' else 'whole batches'}), encoding {a.feature_encoding or 'as stored'}, "
          f"{a.warmup:.0f} s warm-up + {a.seconds:.0f} s a case, "
          f"{f'{a.cores_per_host} core(s) a host of {os.cpu_count()}' if a.cores_per_host else f'{os.cpu_count()} cores shared'}"
          f"{f', RTT {a.rtt_ms} ms' if a.rtt_ms else ''}", flush=True)
    for r in relays:
        if r is not None:  # what the relays add, measured here (loopback, this machine's load)
            probe = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "delay_relay.py"),
                                    f"--one_way_ms={r / 2}", "--check"], capture_output=True, text=True)
            print(f"    relay RTT +{r:g} ms: {probe.stdout.strip() or probe.stderr.strip()}", flush=True)
    base = {}
    try:
        net.open()
        if a.torchrun:
            for n, w in cases:
                print(f"N={n} W={w} torchrun, one rank a trainer host:", flush=True)
                for line in run_torchrun_case(net, a, n, w, logs):
                    print(f"    {line}", flush=True)
            return 0
        modes = {"on": [True], "off": [False], "both": [False, True]}[a.fair_send]
        done = []
        for n, w, fair, relay in [(n, w, f, r) for n, w in cases for f in modes for r in relays]:
            try:
                c = run_case(net, a, n, w, logs, fair, relay)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                # Said, and the run goes on: the other cases and the model still print.
                print(f"N={n} W={w} fair send {'on' if fair else 'off'}: FAILED: {e}", flush=True)
                for ns in [SWITCH] + [net.ns(k) for k in range(net.hosts)]:
                    kill_in(ns)
                continue
            if n == 1:
                base[(w, fair, relay)] = c["seeds_s"]
                base.setdefault(("one", fair, relay), c)
            print_case(c, base.get((w, fair, relay)) if n > 1 else None, base.get(("one", fair, relay)))
            first = next((d for d in done if (d["n"], d["w"], d["fair_send"]) == (n, w, fair)), None)
            if relay is not None and first is not None and first["seeds_s"]:
                print(f"    relay RTT +{relay:g} ms against +{first['relay_ms']:g} ms: "
                      f"{c['seeds_s'] / first['seeds_s']:.3f} of its seeds/s (the relays' CPU "
                      f"{c['relay_cpu']:.1f} s against {first['relay_cpu']:.1f} s in the window)", flush=True)
            done.append(c)
        for fair in modes:
            print_model([c for c in done if c["relay_ms"] == relays[0]], a.rate_mbit, a.seconds, fair)
    finally:
        net.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
