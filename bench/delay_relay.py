"""A TCP relay that holds every byte for a fixed time each way: a round trip added to one server's
connections where the kernel has no netem.

    python3 bench/delay_relay.py --listen=10.97.0.1:7400 --to=127.0.0.1:7401 --one_way_ms=0.5
    python3 bench/delay_relay.py --one_way_ms=0.5 --check     # the round trip it gives, on loopback

Each accepted connection gets a connection of its own to --to; what either side sends is read at
once and written to the other side --one_way_ms after it was read, in order, so a request and its
answer cross it in the round trip's time more. At most --window_kb waits in each direction: past
that the relay stops reading, and the sender's socket fills as it would on a slow link (a
server's send share sees its streams' back-pressure as before). Unlike netem, the two TCP
connections each see loopback's round trip, not the added one, so a window does not limit a
connection's rate: what the relay measures is the round trips an RPC waits for. It prints
"relay ready" once it listens and runs until it is killed. Two threads a direction of each
connection: one reads at once, one writes each chunk when its time comes.
"""

import argparse
import collections
import socket
import sys
import threading
import time


class Pipe:
    """One direction of a relayed connection: a reader thread that reads at once and a writer
    thread that writes each chunk `delay_s` after it was read (time.sleep is precise to tens of
    microseconds where an event loop's timers round up to a millisecond)."""

    def __init__(self, src, dst, delay_s, window):
        self.src, self.dst, self.delay_s, self.window = src, dst, delay_s, window
        self.chunks = collections.deque()
        self.pending = 0
        self.cond = threading.Condition()
        self.threads = [threading.Thread(target=self.read, daemon=True),
                        threading.Thread(target=self.write, daemon=True)]
        for t in self.threads:
            t.start()

    def read(self):
        while True:
            try:
                chunk = self.src.recv(256 * 1024)
            except OSError:
                chunk = b""
            with self.cond:
                while self.pending > self.window:
                    self.cond.wait()
                self.chunks.append((time.monotonic() + self.delay_s, chunk))
                self.pending += len(chunk)
                self.cond.notify_all()
            if not chunk:
                return

    def write(self):
        while True:
            with self.cond:
                while not self.chunks:
                    self.cond.wait()
                due, chunk = self.chunks.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not chunk:
                break
            try:
                self.dst.sendall(chunk)
            except OSError:
                break
            with self.cond:
                self.pending -= len(chunk)
                self.cond.notify_all()
        for s in (self.dst, self.src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(client, to, delay_s, window):
    try:
        upstream = socket.create_connection(to)
    except OSError:
        client.close()
        return
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Pipe(client, upstream, delay_s, window)
    Pipe(upstream, client, delay_s, window)


def check(one_way_ms, probes=200):
    """The round trip through a relay holding one_way_ms each way, on this host's loopback: the
    median of `probes` 100-byte echoes, ms."""
    echo = socket.create_server(("127.0.0.1", 0))

    def answer():
        c, _ = echo.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            data = c.recv(65536)
            if not data:
                return
            c.sendall(data)

    threading.Thread(target=answer, daemon=True).start()
    listener = socket.create_server(("127.0.0.1", 0))

    def accept():
        client, _ = listener.accept()
        relay(client, echo.getsockname(), one_way_ms / 1000.0, 1 << 20)

    threading.Thread(target=accept, daemon=True).start()
    s = socket.create_connection(listener.getsockname())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(probes):
        t = time.perf_counter()
        s.sendall(b"x" * 100)
        got = 0
        while got < 100:
            got += len(s.recv(100))
        times.append(time.perf_counter() - t)
    s.close()
    return 1000 * sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", help="host:port to accept on")
    p.add_argument("--to", help="host:port each connection is relayed to")
    p.add_argument("--one_way_ms", type=float, required=True, help="how long each byte waits, each way")
    p.add_argument("--check", action="store_true", help="print the round trip through such a relay on loopback, and exit")
    p.add_argument("--window_kb", type=int, default=1024, help="the most that waits in each direction, KiB")
    a = p.parse_args()
    if a.one_way_ms < 0 or a.window_kb < 1:
        print("delay_relay: --one_way_ms must be >= 0 and --window_kb >= 1", file=sys.stderr)
        return 2
    if a.check:
        print(f"round trip through a relay of {a.one_way_ms:g} ms each way: {check(a.one_way_ms):.3f} ms (median)")
        return 0
    if not a.listen or not a.to:
        print("delay_relay: --listen and --to are needed (or --check)", file=sys.stderr)
        return 2
    host, port = a.listen.rsplit(":", 1)
    to_host, to_port = a.to.rsplit(":", 1)
    listener = socket.create_server((host, int(port)), reuse_port=False)
    print("relay ready", flush=True)
    while True:
        client, _ = listener.accept()
        relay(client, (to_host, int(to_port)), a.one_way_ms / 1000.0, a.window_kb * 1024)


if __name__ == "__main__":
    sys.exit(main())
