"""Helpers of the Python tests: real graphstored processes on loopback, generated datasets, and
a unittest runner that writes one JUnit <testcase> per test (for the suite's count)."""

import os
import signal
import socket
import subprocess
import sys
import time
import traceback
import unittest
import xml.etree.ElementTree as ET

ROOT = os.getcwd()  # the runfiles tree under `bazel test`
# GRAPHSTORE_TEST_INSTALLED=1 (tools/test_envs.sh): test the graphstore installed in this
# interpreter (a wheel), not the package tree Bazel built.
INSTALLED = os.environ.get("GRAPHSTORE_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, os.path.join(ROOT, "python", "site"))


def package_env():
    """The environment a child Python needs to import the graphstore under test."""
    if INSTALLED:
        return dict(os.environ)
    return dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python", "site"))
TMP = os.environ.get("TEST_TMPDIR", "/tmp")
GRAPHSTORED = os.path.join(ROOT, "server", "graphstored")


def tool(name):
    return os.path.join(ROOT, "tools", name)


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Daemon:
    """graphstored serving one partition on loopback; ready once its port file is written."""

    def __init__(self, partition, port=0, cluster=None, name="d", flags=()):
        self.port_file = os.path.join(TMP, f"{name}-{os.getpid()}-{time.monotonic_ns()}.port")
        self.log_path = self.port_file + ".log"
        args = [GRAPHSTORED, f"--partition={partition}", f"--port={port}", f"--port_file={self.port_file}"]
        if cluster:
            args.append(f"--cluster={cluster}")
        args.extend(flags)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.port_file) and os.path.getsize(self.port_file) > 0:
                with open(self.port_file) as f:
                    self.port = int(f.read().strip())
                return self
            try:
                # Returns at once if the daemon dies; otherwise look at the port file again.
                self.proc.wait(timeout=0.02)
                raise RuntimeError(f"graphstored exited during start-up:\n{open(self.log_path).read()[-2000:]}")
            except subprocess.TimeoutExpired:
                pass
        raise RuntimeError("graphstored did not serve within 60 s")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def start_cluster(dataset, parts):
    """One daemon per partition of `dataset` (DIR/part-K), each told the whole cluster."""
    ports = free_ports(parts)
    cluster = ",".join(f"127.0.0.1:{p}" for p in ports)
    daemons = [Daemon(os.path.join(dataset, f"part-{k}"), port=ports[k], cluster=cluster, name=f"part{k}")
               for k in range(parts)]
    for d in daemons:
        d.wait_ready()
    return daemons


class _JunitResult(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cases = []
        self._start = 0.0

    def startTest(self, test):
        self._start = time.monotonic()
        super().startTest(test)

    def _record(self, test, kind, text=""):
        self.cases.append((test.id().split(".")[-1], kind, text, time.monotonic() - self._start))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", "".join(traceback.format_exception(*err)))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", "".join(traceback.format_exception(*err)))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)


def main(suite_name):
    """Runs the calling module's tests; writes $XML_OUTPUT_FILE; exits 1 on a failure."""
    module = sys.modules["__main__"]
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_JunitResult, stream=sys.stdout)
    result = runner.run(suite)
    out = os.environ.get("XML_OUTPUT_FILE")
    if out:
        root = ET.Element("testsuite", name=suite_name, tests=str(len(result.cases)))
        for name, kind, text, secs in result.cases:
            case = ET.SubElement(root, "testcase", name=name, classname=suite_name, time=f"{secs:.3f}")
            if kind in ("failure", "error"):
                ET.SubElement(case, kind, message=text.strip().splitlines()[-1] if text else kind).text = text
            elif kind == "skipped":
                ET.SubElement(case, "skipped", message=text)
        ET.ElementTree(root).write(out, encoding="unicode")
    sys.exit(0 if result.wasSuccessful() and not result.skipped else 1)
