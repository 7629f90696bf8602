"""Checks deploy/k8s/ against the daemon: every flag exists, the cluster list names the
StatefulSet's pods through the headless Service on the port the daemon listens on, and the
probes ask the health service the daemon serves.

Usage: k8s_manifest_test.py GRAPHSTORED MANIFEST...
Writes one JUnit test case per check to $XML_OUTPUT_FILE (when set) and exits 1 on a failure.
"""
import os
import re
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ET

import yaml


def load(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    return by_kind


def daemon_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, check=False)
    flags = set(re.findall(r"^  --([a-z_]+)", out.stdout + out.stderr, re.M))
    assert flags, "graphstored --help listed no flags"
    return flags


def args_of(container):
    args = {}
    for a in container.get("args", []):
        m = re.fullmatch(r"--([a-z_]+)=(.*)", a)
        assert m, f"argument {a!r} is not --name=value"
        args[m.group(1)] = m.group(2)
    return args


def main():
    binary, manifests = sys.argv[1], sys.argv[2:]
    kinds = load(manifests)
    flags = daemon_flags(binary)
    [svc] = kinds["Service"]
    [sts] = kinds["StatefulSet"]
    pod = sts["spec"]["template"]
    [container] = [c for c in pod["spec"]["containers"] if c["name"] == "graphstored"]
    args = args_of(container)
    port = int(args["port"])

    def flags_exist():
        unknown = set(args) - flags
        assert not unknown, f"flags graphstored does not have: {sorted(unknown)}"
        assert args["host"] in ("0.0.0.0", "::"), "the daemon must listen beyond loopback in a pod"

    def service_is_headless_and_selects_the_pods():
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"].get("publishNotReadyAddresses") is True, "peers must resolve before they are ready"
        labels = pod["metadata"]["labels"]
        for k, v in svc["spec"]["selector"].items():
            assert labels.get(k) == v, f"service selector {k}={v} does not match the pod labels"
        assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert sts["spec"]["serviceName"] == svc["metadata"]["name"]

    def ports_agree():
        named = {p["name"]: p["containerPort"] for p in container["ports"]}
        [sp] = svc["spec"]["ports"]
        assert sp["port"] == port, f"service port {sp['port']} != --port={port}"
        target = sp.get("targetPort", sp["port"])
        assert named.get(target, target) == port, f"service targetPort {target} is not --port={port}"

    def cluster_names_every_pod_in_order():
        replicas = sts["spec"]["replicas"]
        want = [f"{sts['metadata']['name']}-{k}.{svc['metadata']['name']}:{port}" for k in range(replicas)]
        assert args["cluster"].split(",") == want, f"--cluster={args['cluster']} should be {','.join(want)}"
        assert sts["spec"].get("podManagementPolicy") == "Parallel", "servers wait for each other: start them together"

    def probes_use_grpc_health():
        # With TLS on the main port, probes (which cannot speak TLS) ask the health-only port.
        probe_port = int(args["health_port"]) if "tls_cert" in args else port
        ready = container["readinessProbe"]["grpc"]
        assert ready["port"] == probe_port
        # The service graphstored reports SERVING once sampling is open (server/server.cc).
        with open("proto/graphstore/v1/graphstore.proto") as f:
            proto = f.read()
        package = re.search(r"^package ([\w.]+);", proto, re.M).group(1)
        service = re.search(r"^service (\w+)", proto, re.M).group(1)
        assert ready["service"] == f"{package}.{service}", f"readiness asks {ready['service']!r}"
        live = container["livenessProbe"]["grpc"]
        assert live["port"] == probe_port and live.get("service", "") == "", "liveness asks the server as a whole"

    def partition_volume_is_mounted_per_pod():
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        claims = {c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]}
        [name] = [n for n, path in mounts.items() if path == args["partition"]]
        assert name in claims, f"--partition={args['partition']} is not on a per-pod volume claim"

    def shutdown_fits_grace_period():
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        # graphstored's shutdown: in-flight calls get 5 s, peer calls up to --peer_timeout_ms.
        need = 5 + int(args.get("peer_timeout_ms", "10000")) / 1000
        assert grace >= need, f"terminationGracePeriodSeconds {grace} < {need}"

    checks = [flags_exist, service_is_headless_and_selects_the_pods, ports_agree,
              cluster_names_every_pod_in_order, probes_use_grpc_health, partition_volume_is_mounted_per_pod,
              shutdown_fits_grace_period]
    suite = ET.Element("testsuite", name="k8s_manifest_test")
    failed = 0
    for check in checks:
        case = ET.SubElement(suite, "testcase", name=check.__name__.replace("_", " "))
        try:
            check()
            print(f"ok   {check.__name__}")
        except Exception:  # noqa: BLE001 - any failure is reported as the case's
            failed += 1
            ET.SubElement(case, "failure", message="check failed").text = traceback.format_exc()
            print(f"FAIL {check.__name__}\n{traceback.format_exc()}")
    suite.set("tests", str(len(checks)))
    suite.set("failures", str(failed))
    if os.environ.get("XML_OUTPUT_FILE"):
        root = ET.Element("testsuites")
        root.append(suite)
        ET.ElementTree(root).write(os.environ["XML_OUTPUT_FILE"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
