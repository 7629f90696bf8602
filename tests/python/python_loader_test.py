"""The Python package against real graphstored processes on loopback: every field of a
homogeneous, a heterogeneous and an ABLP batch against the partition's own arrays, zero copy,
an epoch across 2 servers, errors as exceptions, channels released by close() and garbage
collection, and message passing equal to the C++ Loader's."""

import copy
import gc
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import gs_testing as gt  # puts the package on sys.path

import grpc
import numpy as np
import torch

import graphstore
from graphstore import _graphstore
from graphstore.v1 import graphstore_pb2 as pb
from graphstore.v1 import graphstore_pb2_grpc as pb_grpc

SHARED = os.environ.get("GRAPHSTORE_SHARED_DATA", os.path.join(gt.ROOT, "..", "shared", "data"))
MOVIELENS = os.path.join(SHARED, "ml-100k")


def npy(path):
    return np.load(path, mmap_mode="r")


class Partition:
    """The arrays of one partition directory, read with numpy."""

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)

    def node(self, ntype, name):
        return npy(os.path.join(self.path, "nodes", ntype, f"{name}.npy"))

    def edge(self, etype, name):
        return npy(os.path.join(self.path, "edges", etype, f"{name}.npy"))


def stub(address):
    channel = grpc.insecure_channel(address)
    return channel, pb_grpc.GraphStoreStub(channel)


def num_channels(address):
    channel, s = stub(address)
    with channel:
        stats = s.GetServerStats(pb.GetServerStatsRequest(), timeout=10)
    return sum(b.num_channels for b in stats.backends)


def in_memory(t, memory):
    """Whether every byte of tensor t lies in one of the (address, size) blocks."""
    start, end = t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()
    return any(a <= start and end <= a + n for a, n in memory)


def setUpModule():
    global WORK, G1, D1, G2, CLUSTER, ML, DML
    WORK = tempfile.mkdtemp(dir=gt.TMP)
    G1 = os.path.join(WORK, "g1")
    gt.run(gt.tool("graphstore-generate"), "--nodes=3000", "--feature_dim=16", "--classes=5", "--seed=7", f"--out={G1}")
    D1 = gt.Daemon(G1, name="single").wait_ready()
    G2 = os.path.join(WORK, "g2")
    gt.run(gt.tool("graphstore-generate"), "--nodes=4000", "--feature_dim=8", "--classes=4", "--seed=3",
           "--partitions=2", "--method=random", f"--out={G2}")
    CLUSTER = gt.start_cluster(G2, 2)
    ML = DML = None
    if os.path.exists(os.path.join(MOVIELENS, "u.data")):
        ML = os.path.join(WORK, "ml")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={ML}")
        DML = gt.Daemon(ML, name="movielens").wait_ready()


def tearDownModule():
    for d in [D1, DML] + CLUSTER:
        if d is not None:
            d.stop()


class AbiTest(unittest.TestCase):
    def test_the_extension_links_no_torch(self):
        # One build serves every torch: the extension's dynamic section names no torch library,
        # and its tensors reach this interpreter's torch through DLPack.
        out = subprocess.run(["readelf", "-d", _graphstore.__file__], capture_output=True, text=True, check=True).stdout
        needed = [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
        self.assertTrue(needed, out)
        self.assertEqual([n for n in needed if "torch" in n or "c10" in n], [])
        # Installed from a wheel, the extension brings its libraries (RPATH $ORIGIN).
        if gt.INSTALLED:
            self.assertNotIn(gt.ROOT, graphstore.__file__)
            self.assertTrue(any("graphstore.libs" in line for line in out.splitlines() if "RUNPATH" in line), out)
        with graphstore.Loader([D1.address], [2], batch_size=8, split="train") as loader:
            batch = next(iter(loader))
        self.assertIsInstance(batch.x, torch.Tensor)
        self.assertEqual(float((batch.x * 2).sum()), float(batch.x.sum()) * 2)

    def test_imports_beside_grpcio(self):
        # grpcio (imported first, above) and the extension's own gRPC live in one process: the
        # stubs of graphstore.v1 call the server while a loader streams from it.
        channel, s = stub(D1.address)
        with channel, graphstore.Loader([D1.address], [2], batch_size=8, split="train") as loader:
            batches = loader.epoch(0)
            next(batches)
            stats = s.GetServerStats(pb.GetServerStatsRequest(), timeout=10)
            self.assertGreaterEqual(sum(b.num_channels for b in stats.backends), 1)
            self.assertGreater(sum(1 for _ in batches), 0)


class HomogeneousTest(unittest.TestCase):
    def check_epoch(self, shared_memory):
        p = Partition(G1)
        ntype = p.manifest["node_types"][0]["name"]
        e0 = p.manifest["edge_types"][0]
        etype = f"{e0['src_type']}__{e0['relation']}__{e0['dst_type']}"
        features, labels = p.node(ntype, "features"), p.node(ntype, "labels")
        indptr, indices = p.edge(etype, "indptr"), p.edge(etype, "indices")
        self.assertEqual(p.manifest.get("edge_dir", "out"), "out")
        train = set(p.node(ntype, "train").tolist())
        train_list = np.sort(np.asarray(p.node(ntype, "train")))
        seen = []
        loader = graphstore.Loader(servers=[D1.address], num_neighbors=[6, 3], batch_size=100, split="train",
                                   shuffle=True, seed=4, edge_ids=True, shared_memory=shared_memory,
                                   backend_key=f"homogeneous-{shared_memory}")
        self.assertEqual(loader.num_shared_memory_servers, 1 if shared_memory else 0)
        batches = 0
        for batch in loader.epoch(0):
            batches += 1
            self.assertEqual(batch.shared_memory, shared_memory)
            n, m = batch.n_id.numel(), batch.edge_index.size(1)
            self.assertEqual(batch.n_id.dtype, torch.int64)
            self.assertEqual((batch.x.dtype, tuple(batch.x.shape)), (torch.float32, (n, 16)))
            self.assertEqual((batch.y.dtype, tuple(batch.y.shape)), (torch.int64, (n,)))
            self.assertEqual((batch.edge_index.dtype, batch.edge_index.dim()), (torch.int64, 2))
            self.assertEqual(tuple(batch.e_id.shape), (m,))
            self.assertIsInstance(batch.batch_size, int)
            self.assertTrue(all(isinstance(c, int) for c in batch.num_sampled_nodes + batch.num_sampled_edges))
            self.assertEqual(batch.num_sampled_nodes[0], batch.batch_size)
            self.assertEqual(sum(batch.num_sampled_nodes), n)
            self.assertEqual(sum(batch.num_sampled_edges), m)
            self.assertEqual(len(batch.num_sampled_nodes), 3)
            self.assertEqual(len(batch.num_sampled_edges), 2)
            # Split seeds: the index into the split's id list (ascending ids), as PyG's input_id.
            np.testing.assert_array_equal(train_list[batch.input_id.numpy()], batch.n_id[:batch.batch_size].numpy())
            ids = batch.n_id.numpy()
            self.assertEqual(len(set(ids.tolist())), n)
            seen += ids[:batch.batch_size].tolist()
            np.testing.assert_array_equal(batch.x.numpy(), features[ids])
            np.testing.assert_array_equal(batch.y.numpy(), labels[ids])
            # Message-passing direction: row 0 the sampled neighbour, row 1 the node that
            # sampled it; the stored edge (row 1 -> row 0) is the CSR entry e_id.
            src, dst = batch.edge_index.numpy()
            self.assertTrue((src < n).all() and (dst < n).all())
            self.assertTrue((dst[:batch.num_sampled_edges[0]] < batch.batch_size).all())
            e = batch.e_id.numpy()
            self.assertTrue((indptr[ids[dst]] <= e).all() and (e < indptr[ids[dst] + 1]).all())
            np.testing.assert_array_equal(indices[e], ids[src])
        self.assertEqual(batches, len(loader))
        self.assertEqual(sorted(seen), sorted(train))
        loader.close()

    def test_fields_over_the_socket(self):
        self.check_epoch(shared_memory=False)

    def test_fields_through_shared_memory(self):
        self.check_epoch(shared_memory=True)

    def test_quantized_features_within_half_a_step(self):
        # Each column quantized over its range in 2^b - 1 steps; kept encoded, the codes decode
        # with graphstore.dequantize to the same values the loader decodes them to.
        p = Partition(G1)
        ntype = p.manifest["node_types"][0]["name"]
        features = p.node(ntype, "features")
        lo, hi = np.asarray(p.node(ntype, "feature_range"))
        args = dict(servers=[D1.address], num_neighbors=[4], batch_size=200, split="train", shuffle=True, seed=3,
                    shared_memory=False)
        for bits in (8, 4, 2, 1):
            with self.subTest(bits=bits), graphstore.Loader(feature_encoding=f"int{bits}", **args) as decoded, \
                    graphstore.Loader(feature_encoding=f"int{bits}", decode_features=False, **args) as kept:
                step = np.where(hi > lo, (hi - lo) / (2 ** bits - 1), 1).astype(np.float32)
                want = {b.batch_index: b for b in decoded.epoch(0)}
                for b in kept.epoch(0):
                    d = want.pop(b.batch_index)
                    self.assertEqual((d.x.dtype, d.x_bits), (torch.float32, 0))
                    err = np.abs(d.x.numpy() - features[d.n_id.numpy()])
                    self.assertTrue((err <= step / 2 * (1 + 1e-5) + 1e-6).all(), f"largest error {err.max()}")
                    self.assertTrue(torch.equal(b.n_id, d.n_id))
                    self.assertEqual((b.x.dtype, b.x_bits), (torch.uint8, bits))
                    self.assertEqual(tuple(b.x.shape), (b.n_id.numel(), (16 * bits + 7) // 8))
                    np.testing.assert_allclose(b.x_scale.numpy(), step, rtol=1e-6)
                    again = graphstore.dequantize(b.x, b.x_scale, b.x_offset, b.x_bits)
                    self.assertTrue(torch.allclose(again, d.x, rtol=1e-6, atol=1e-6))
                self.assertEqual(want, {})
        x = torch.zeros(2, 2, dtype=torch.uint8)
        scale = torch.ones(4)
        for kind, name, call in (
                (ValueError, "bits", lambda: graphstore.dequantize(x, scale, scale, 3)),
                (ValueError, "columns", lambda: graphstore.dequantize(x, scale, scale, 8)),
                (ValueError, "x must", lambda: graphstore.dequantize(x.float(), scale, scale, 4)),
                (TypeError, "scale", lambda: graphstore.dequantize(x, [1.0] * 4, scale, 4))):
            with self.assertRaises(kind) as cm:
                call()
            self.assertIn(name, str(cm.exception))

    def test_explicit_seeds_give_input_id(self):
        seeds = [17, 3, 2500, 41]
        with graphstore.Loader([D1.address], [3], input_nodes=torch.tensor(seeds), batch_size=2) as loader:
            got = {}
            for batch in loader.epoch(0):
                self.assertEqual(batch.input_id.dtype, torch.int64)
                for pos, nid in zip(batch.input_id.tolist(), batch.n_id[:batch.batch_size].tolist()):
                    got[pos] = nid
        self.assertEqual(got, dict(enumerate(seeds)))

    def test_epochs_iterate_like_a_dataloader(self):
        with graphstore.Loader([D1.address], [2], batch_size=500, split="val") as loader:
            first = [b.epoch for b in loader]
            second = [b.epoch for b in loader]
            loader.set_epoch(7)
            third = [b.epoch for b in loader]
        self.assertEqual((set(first), set(second), set(third)), ({0}, {1}, {7}))
        self.assertEqual(len(first), len(loader) if not loader.closed else len(first))

    def test_a_fixed_number_of_steps_per_epoch(self):
        # Leaving each epoch after two batches, as a trainer with a step budget does: the
        # messages still on their way are lost with the stream, and must not stop later epochs.
        for shared in (True, False):
            with graphstore.Loader([D1.address], [3], batch_size=20, split="train", shared_memory=shared,
                                   buffer_messages=4, prefetch=1) as loader:
                self.assertEqual(loader.num_shared_memory_servers, 1 if shared else 0)
                for epoch in range(25):
                    steps = [b.epoch for _, b in zip(range(2), loader.epoch(epoch))]
                    self.assertEqual(steps, [epoch, epoch])

    def test_the_cpp_loop_shares_the_epoch_with_the_python_loop(self):
        # The benchmark's C++ loop (drain_for) and the Python loop take turns on one epoch: every
        # batch once between them, and the C++ loop stops at the epoch's end.
        with graphstore.Loader([D1.address], [2], batch_size=100, split="val") as loader:
            it = loader.epoch(0)
            first = next(it)
            taken, seconds = loader._open().drain_for(3600.0)
            rest = list(it)
            self.assertGreater(len(loader), 2)
            self.assertEqual(1 + taken + len(rest), len(loader))
            self.assertEqual(rest, [])
            self.assertGreaterEqual(seconds, 0.0)
            self.assertEqual(first.epoch, 0)

    def test_fields_are_read_once_and_may_be_reassigned(self):
        with graphstore.Loader([D1.address], [2], batch_size=100, split="val") as loader:
            batch = next(iter(loader))
        x = batch.x
        self.assertIs(batch.x, x)  # read once, then kept
        self.assertEqual(batch["node"].x.data_ptr(), x.data_ptr())
        batch.x = x * 2
        self.assertTrue(torch.equal(batch.x, x * 2))
        self.assertIsNone(batch.anchors)
        self.assertEqual(batch.ppr, [])
        with self.assertRaisesRegex(AttributeError, "no attribute 'not_a_field'"):
            batch.not_a_field  # noqa: B018
        self.assertIn("batch_size=", repr(batch))

    def test_a_batch_pickles_and_deep_copies_with_every_field(self):
        with graphstore.Loader([D1.address], [2], batch_size=100, split="val", edge_ids=True) as loader:
            batch = next(iter(loader))
        for copy_ in (pickle.loads(pickle.dumps(batch)), copy.deepcopy(batch)):
            self.assertNotIn("_raw", copy_.__dict__)
            for name in ("x", "y", "n_id", "edge_index", "e_id"):
                self.assertTrue(torch.equal(getattr(copy_, name), getattr(batch, name)), name)
            self.assertEqual((copy_.batch_size, copy_.num_sampled_nodes), (batch.batch_size, batch.num_sampled_nodes))
            self.assertTrue(torch.equal(copy_["node"].x, batch.x))

    def test_same_seed_same_batches(self):
        def epoch(key):
            with graphstore.Loader([D1.address], [4, 2], batch_size=64, shuffle=True, seed=9,
                                   backend_key=key) as loader:
                return {b.batch_index: (b.n_id.clone(), b.edge_index.clone()) for b in loader.epoch(2)}
        a, b = epoch("determinism-a"), epoch("determinism-b")
        self.assertEqual(a.keys(), b.keys())
        for k in a:
            self.assertTrue(torch.equal(a[k][0], b[k][0]) and torch.equal(a[k][1], b[k][1]))

    def test_several_connections_give_the_same_batches_in_order(self):
        def epoch(key, connections):
            with graphstore.Loader([D1.address], [4, 2], batch_size=64, shuffle=True, seed=9, backend_key=key,
                                   shared_memory=False, connections_per_server=connections) as loader:
                return [(b.batch_index, b.n_id.clone(), b.edge_index.clone()) for b in loader.epoch(0)]
        one, three = epoch("connections-1", 1), epoch("connections-3", 3)
        self.assertEqual([b[0] for b in three], list(range(len(one))))
        for a, b in zip(one, three):
            self.assertTrue(torch.equal(a[1], b[1]) and torch.equal(a[2], b[2]))


class ZeroCopyTest(unittest.TestCase):
    def check(self, shared_memory, names, **options):
        with graphstore.Loader([D1.address], [5, 5], batch_size=128, shared_memory=shared_memory,
                               edge_ids=True, **options) as loader:
            batch = next(iter(loader))
        self.assertEqual(batch.shared_memory, shared_memory)
        self.assertTrue(batch._memory)
        for name in names:
            self.assertTrue(in_memory(getattr(batch, name), batch._memory), f"{name} was copied")
        # The memory outlives the loader: tensors keep it.
        ids = batch.n_id.numpy()
        np.testing.assert_allclose(batch.x.numpy(), Partition(G1).node("node", "features")[ids], rtol=1e-3, atol=1e-3)

    def test_socket_batches_view_the_decoded_buffers(self):
        self.check(False, ("n_id", "x", "y", "edge_index", "e_id"))

    def test_shared_memory_batches_view_the_mapped_buffer(self):
        # edge_index is laid out from the message's int32 rows and columns; everything else
        # is a view of the server's file.
        self.check(True, ("n_id", "x", "y", "e_id"))

    def test_encoded_features_view_the_received_bytes(self):
        self.check(False, ("n_id", "x", "y", "edge_index", "e_id"), feature_encoding="float16")


class ClusterTest(unittest.TestCase):
    def test_an_epoch_covers_both_partitions(self):
        servers = [d.address for d in CLUSTER]
        train = set()
        for k in range(2):
            train |= set(Partition(os.path.join(G2, f"part-{k}")).node("node", "train").tolist())
        with graphstore.Loader(servers, [4, 4], batch_size=200, shuffle=True, split="train") as loader:
            for epoch in range(2):
                seeds, by_server = [], set()
                for batch in loader.epoch(epoch):
                    seeds += batch.n_id[:batch.batch_size].tolist()
                    by_server.add(batch.server)
                self.assertEqual(sorted(seeds), sorted(train))
                self.assertEqual(by_server, {0, 1})
            # What each server sent, over its stream and as an owner of rows, adds up.
            sent = loader.bytes_received_by_server
            self.assertEqual(len(sent), 2)
            self.assertEqual(loader.bytes_received, sum(stream + answers for stream, answers in sent))

    def test_ranks_split_the_seeds(self):
        servers = [d.address for d in CLUSTER]
        parts = []
        for rank in range(2):
            with graphstore.Loader(servers, [2], batch_size=300, split="train", rank=rank, world_size=2,
                                   backend_key="ranks") as loader:
                parts.append({i for b in loader.epoch(0) for i in b.n_id[:b.batch_size].tolist()})
        self.assertFalse(parts[0] & parts[1])
        self.assertTrue(parts[0] and parts[1])


class SecurityTest(unittest.TestCase):
    """TLS and tokens through the Python Loader (the C++ client's security underneath)."""

    @classmethod
    def setUpClass(cls):
        cls.certs = os.path.join(WORK, "certs")
        gt.run("bash", "tests/security/make_certs.sh", cls.certs)
        cls.tokens = os.path.join(WORK, "tokens")
        with open(cls.tokens, "w") as f:
            f.write("python-trainer-token-0123456789 py-trainer trainer\ncert trainer-a trainer\n")
        cls.d = gt.Daemon(G1, name="secure", flags=[
            f"--tls_cert={cls.certs}/server.pem", f"--tls_key={cls.certs}/server.key",
            f"--tls_client_ca={cls.certs}/ca.pem", f"--auth_tokens={cls.tokens}"]).wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def epoch_seeds(self, **security):
        with graphstore.Loader([self.d.address], [3], batch_size=500, split="val", shared_memory=False,
                               deadline=5, **security) as loader:
            return sorted(int(s) for b in loader.epoch(0) for s in b.n_id[:b.batch_size])

    def test_mutual_tls_with_a_certificate_or_a_token(self):
        ca = f"{self.certs}/ca.pem"
        by_cert = self.epoch_seeds(tls_ca=ca, tls_cert=f"{self.certs}/trainer-a.pem",
                                   tls_key=f"{self.certs}/trainer-a.key")
        self.assertEqual(len(by_cert), len(set(by_cert)))
        self.assertGreater(len(by_cert), 0)
        # The token names the identity; the certificate still opens the connection.
        by_token = self.epoch_seeds(tls_ca=ca, tls_cert=f"{self.certs}/trainer-a.pem",
                                    tls_key=f"{self.certs}/trainer-a.key", token="python-trainer-token-0123456789")
        self.assertEqual(by_cert, by_token)

    def test_refusals_are_python_exceptions(self):
        ca = f"{self.certs}/ca.pem"
        with self.assertRaises(graphstore.GraphstoreError) as cm:
            self.epoch_seeds(tls_ca=ca, tls_cert=f"{self.certs}/trainer-b.pem", tls_key=f"{self.certs}/trainer-b.key")
        self.assertEqual(cm.exception.code, "PERMISSION_DENIED")
        self.assertIn("trainer-b", cm.exception.message)
        with self.assertRaises(graphstore.GraphstoreError) as cm:
            self.epoch_seeds(tls_ca=ca)  # no client certificate
        self.assertEqual(cm.exception.code, "UNAVAILABLE")
        with self.assertRaises(ValueError) as bad:
            self.epoch_seeds(tls_ca=ca, tls_cert=f"{self.certs}/trainer-a.pem")
        self.assertIn("tls_key", str(bad.exception))
        with self.assertRaises(ValueError) as missing:
            self.epoch_seeds(tls_ca="/nonexistent/ca.pem")
        self.assertIn("tls_ca", str(missing.exception))


class ErrorsTest(unittest.TestCase):
    def assertServerError(self, code, words, fn):
        with self.assertRaises(graphstore.GraphstoreError) as cm:
            fn()
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        for w in words:
            self.assertIn(w, cm.exception.message)
        return cm.exception

    def test_server_errors_carry_code_and_message(self):
        self.assertServerError("INVALID_ARGUMENT", ["split"],
                               lambda: graphstore.Loader([D1.address], [2], batch_size=4, split="nope"))
        self.assertServerError("INVALID_ARGUMENT", ["seeds[2]=5", "seeds[0]"],
                               lambda: graphstore.Loader([D1.address], [2], input_nodes=[5, 6, 5]))
        e = self.assertServerError("INVALID_ARGUMENT", ["num_neighbors"],
                                   lambda: graphstore.Loader([D1.address], {("a", "b", "c"): [2]}, batch_size=4))
        self.assertEqual(e.code_value, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertServerError("INVALID_ARGUMENT", ["partitions"],
                               lambda: graphstore.Loader([D1.address, D1.address], [2], batch_size=4))

    def test_unreachable_server(self):
        port = gt.free_ports(1)[0]
        self.assertServerError("UNAVAILABLE", [], lambda: graphstore.Loader([f"127.0.0.1:{port}"], [2], deadline=2))

    def test_ctrl_c_interrupts_a_wait_for_a_batch(self):
        # A trainer waiting on a server that sends nothing (stopped: the connection stays up,
        # and no keepalive would end the wait) gets KeyboardInterrupt on Ctrl-C, as any Python
        # wait does, and can still close.
        d = gt.Daemon(G1, name="stopped").wait_ready()
        waiting = threading.Event()

        def interrupt_once_waiting(impl):
            # Once the main thread is blocked in the loader's next(), waiting for a batch that
            # cannot come. Interrupted in any case, so that a failure here cannot hang the test.
            try:
                if impl.wait_for_waiting(60):
                    waiting.set()
            finally:
                os.kill(os.getpid(), signal.SIGINT)

        try:
            with graphstore.Loader([d.address], [3], batch_size=20, split="train", shared_memory=False,
                                   buffer_messages=1, prefetch=1, stream_window_bytes=16 << 10,
                                   reconnect_deadline=0, keepalive=0) as loader:
                it = loader.epoch(0)
                next(it)
                d.proc.send_signal(signal.SIGSTOP)
                with self.assertRaises(KeyboardInterrupt):
                    threading.Thread(target=interrupt_once_waiting, args=(loader._open(),), daemon=True).start()
                    for _ in it:
                        pass
                self.assertTrue(waiting.is_set())
                d.proc.send_signal(signal.SIGCONT)
            self.assertTrue(loader.closed)
        finally:
            d.proc.send_signal(signal.SIGCONT)
            d.stop()

    def test_a_server_restart_mid_epoch_loses_and_repeats_nothing(self):
        # 512 features: an epoch (~80 MB) is far more than the server's buffer, the window and
        # the client's 16 MiB read-ahead hold, so the kill lands mid-epoch.
        wide = os.path.join(WORK, "wide")
        if not os.path.exists(wide):
            gt.run(gt.tool("graphstore-generate"), "--nodes=3000", "--feature_dim=512", "--classes=5", "--seed=7",
                   f"--out={wide}")
        port = gt.free_ports(1)[0]
        d = gt.Daemon(wide, port=port, name="restarted").wait_ready()
        args = dict(servers=[d.address], num_neighbors=[4, 2], batch_size=16, split="train", shuffle=True, seed=8,
                    shared_memory=False, buffer_messages=1, prefetch=1, stream_window_bytes=64 << 10,
                    backend_key="restart")
        try:
            with graphstore.Loader(**args) as reference:
                want = {b.batch_index: (b.n_id.clone(), b.edge_index.clone(), b.x.clone()) for b in reference.epoch(0)}
            with graphstore.Loader(**args) as loader:
                got = {}
                for b in loader.epoch(0):
                    self.assertNotIn(b.batch_index, got)
                    got[b.batch_index] = (b.n_id.clone(), b.edge_index.clone(), b.x.clone())
                    if len(got) == 4:
                        d.proc.kill()
                        d.proc.wait()
                        d = gt.Daemon(wide, port=port, name="restarted").wait_ready()
                self.assertGreaterEqual(loader.num_reconnects, 1)
            self.assertEqual(sorted(got), sorted(want))
            for i, (n_id, edge_index, x) in want.items():
                self.assertTrue(torch.equal(got[i][0], n_id) and torch.equal(got[i][1], edge_index)
                                and torch.equal(got[i][2], x), f"batch {i}")
        finally:
            d.stop()

    @staticmethod
    def small_graph_server(name, flag):
        """A 2000-node generated graph with `flag` (--edge_weights, --times) and a server on it."""
        g = os.path.join(WORK, name)
        gt.run(gt.tool("graphstore-generate"), "--nodes=2000", "--feature_dim=4", "--classes=3", "--seed=5",
               flag, f"--out={g}")
        return g, gt.Daemon(g, name=name).wait_ready()

    def test_weighted_draws_never_take_a_zero_weight_edge(self):
        g, d = self.small_graph_server("weighted", "--edge_weights")
        try:
            weights = Partition(g).edge("node__to__node", "weights")
            self.assertGreater(int((weights == 0).sum()), 0)
            zero_seen = {}
            for weighted in (False, True):
                with graphstore.Loader([d.address], [-1], batch_size=200, split="train", edge_ids=True,
                                       weighted=weighted, backend_key=f"weighted-{weighted}") as loader:
                    w = np.concatenate([weights[b.e_id.numpy()] for b in loader.epoch(0)])
                zero_seen[weighted] = int((w == 0).sum())
            self.assertGreater(zero_seen[False], 0)  # a full fanout reaches them uniformly ...
            self.assertEqual(zero_seen[True], 0)     # ... and never by weight
            # PyG's weight_attr draws the same edges as weighted=True (fanout 3 of rows longer than that);
            # batches may arrive in any order, so they are matched by their seeds.
            def by_seeds(batches):
                return {tuple(b.n_id[:b.batch_size].tolist()): b.e_id.tolist() for b in batches}
            drawn = {}
            for name, kwargs in (("weighted", dict(weighted=True)), ("weight_attr", dict(weight_attr="edge_weight"))):
                with graphstore.Loader([d.address], [3, 2], batch_size=200, split="train", edge_ids=True,
                                       backend_key=f"by-{name}", **kwargs) as loader:
                    drawn[name] = by_seeds(loader.epoch(0))
            self.assertEqual(drawn["weight_attr"], drawn["weighted"])
            with graphstore.Loader([d.address], [3, 2], batch_size=200, split="train", edge_ids=True,
                                   backend_key="uniform-3-2") as loader:
                uniform = by_seeds(loader.epoch(0))
            self.assertEqual(uniform.keys(), drawn["weighted"].keys())
            self.assertNotEqual(uniform, drawn["weighted"])
            self.assertServerError("INVALID_ARGUMENT", ["stores no edge weights"],
                                   lambda: graphstore.Loader([D1.address], [2], weighted=True))
        finally:
            d.stop()

    def test_temporal_batches_see_nothing_after_their_seed(self):
        g, d = self.small_graph_server("temporal", "--times")
        try:
            edge_time = Partition(g).edge("node__to__node", "time")  # single partition: e_id = position
            node_time = np.load(os.path.join(g, "book", "node.time.npy"))
            seeds = list(range(0, 2000, 50))
            at = [int(node_time[s]) + 100000 * (i % 4) for i, s in enumerate(seeds)]
            edges = {}
            # Through shared memory (uniform) and through the socket (last).
            for strategy, shared in (("uniform", True), ("last", False)):
                with graphstore.Loader([d.address], [-1, 4], input_nodes=seeds, batch_size=1, edge_ids=True,
                                       time_attr="time", input_time=torch.tensor(at), shared_memory=shared,
                                       node_times=True,
                                       temporal_strategy=strategy, backend_key=f"temporal-{strategy}") as loader:
                    edges[strategy] = 0
                    for b in loader.epoch(0):
                        t = at[seeds.index(int(b.n_id[0]))]
                        self.assertEqual(b.shared_memory, shared)
                        self.assertTrue(bool((edge_time[b.e_id.numpy()] <= t).all()), f"seed {int(b.n_id[0])}")
                        edges[strategy] += b.e_id.numel()
                        # The batch says when: the seed's time, each node's stored time, and the
                        # time each was sampled at (the seed's, here for every node: one seed).
                        self.assertEqual(b.seed_time.tolist(), [t])
                        self.assertTrue(torch.equal(b.time, torch.from_numpy(node_time[b.n_id.numpy()])))
                        self.assertTrue(bool((b.sampled_time == t).all()))
                        self.assertEqual(b["node"].seed_time.tolist(), [t])
                        self.assertTrue(bool((b.time[1:] <= t).all()), f"seed {int(b.n_id[0])}")
            with graphstore.Loader([d.address], [-1, 4], input_nodes=seeds, batch_size=1, edge_ids=True,
                                   backend_key="not-temporal") as loader:
                everything = 0
                for b in loader.epoch(0):
                    everything += b.e_id.numel()
                    self.assertIsNone(b.seed_time)
                    self.assertIsNone(b.time)  # not asked for
                    self.assertIsNone(b["node"].sampled_time)
            self.assertGreater(edges["uniform"], 0)
            self.assertGreater(everything, edges["uniform"])  # the times really cut
            # Seeds at their node times (no input_time) sample too.
            with graphstore.Loader([d.address], [3], split="train", batch_size=100, time_attr="time",
                                   node_times=True, backend_key="node-times") as loader:
                sampled = 0
                for b in loader.epoch(0):
                    sampled += b.edge_index.size(1)
                    self.assertTrue(torch.equal(b.seed_time, torch.from_numpy(node_time[b["node"].seeds.numpy()])))
                    # A seed is sampled at its own time; a node it reaches at the earliest time of
                    # the nodes that reached it, never before the node's own time.
                    self.assertTrue(torch.equal(b.sampled_time[:b.batch_size], b.seed_time))
                    self.assertTrue(bool((b.time <= b.sampled_time).all()))
                    self.assertEqual(b.time_dict.keys(), {"node"})
                self.assertGreater(sampled, 0)
            # Stored times without temporal sampling (PyG's `time` as a feature).
            with graphstore.Loader([d.address], [3], split="train", batch_size=100, node_times=True,
                                   backend_key="times-only") as loader:
                b = next(iter(loader.epoch(0)))
                self.assertTrue(torch.equal(b.time, torch.from_numpy(node_time[b.n_id.numpy()])))
                self.assertIsNone(b.seed_time)
                self.assertIsNone(b.sampled_time)
            self.assertServerError("INVALID_ARGUMENT", ["temporal_strategy: no edge type"],
                                   lambda: graphstore.Loader([D1.address], [2], time_attr="time"))
            self.assertServerError("INVALID_ARGUMENT", ["config.with_node_times: no node type"],
                                   lambda: graphstore.Loader([D1.address], [2], node_times=True))
        finally:
            d.stop()

    def test_epochs_must_increase(self):
        with graphstore.Loader([D1.address], [2], batch_size=1000, split="val") as loader:
            list(loader.epoch(3))
            self.assertServerError("FAILED_PRECONDITION", ["epoch 1"], lambda: loader.epoch(1))
        self.assertServerError("FAILED_PRECONDITION", ["closed"], lambda: loader.epoch(4))

    def test_duplicate_seeds_refused_by_the_server(self):
        channel, s = stub(D1.address)
        with channel:
            backend = s.InitSamplingBackend(pb.InitSamplingBackendRequest(
                backend_key="dup", config=pb.SamplingConfig(batch_size=4, num_neighbors=[2])), timeout=10)
            with self.assertRaises(grpc.RpcError) as cm:
                s.RegisterSamplingInput(pb.RegisterSamplingInputRequest(
                    backend_id=backend.backend_id, nodes=pb.NodeSeeds(ids=[1, 2, 1])), timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("nodes.ids[2]=1 repeats nodes.ids[0]", cm.exception.details())

    def test_bad_arguments_name_themselves(self):
        cases = [
            (TypeError, "batch_size", dict(batch_size="8")),
            (ValueError, "batch_size", dict(batch_size=0)),
            (TypeError, "shuffle", dict(shuffle=1)),
            (ValueError, "num_neighbors[1]", dict(num_neighbors=[2, -5])),
            (TypeError, "num_neighbors", dict(num_neighbors=3)),
            (ValueError, "feature_encoding", dict(feature_encoding="int3")),
            (ValueError, "rank", dict(rank=2, world_size=2)),
            (ValueError, "sampler", dict(sampler="random_walk")),
            (TypeError, "input_nodes", dict(input_nodes=torch.tensor([1.5]))),
            (ValueError, "deadline", dict(deadline=0)),
            (ValueError, "connections_per_server", dict(connections_per_server=65)),
            (ValueError, "reconnect_deadline", dict(reconnect_deadline=-1)),
            (ValueError, "keepalive", dict(keepalive=-1)),
            (ValueError, "keepalive_timeout", dict(keepalive_timeout=0)),
            (TypeError, "weighted", dict(weighted="yes")),
            (ValueError, "weight_attr must be", dict(weight_attr="w")),
            (TypeError, "weight_attr", dict(weight_attr=True)),
            (ValueError, "weight_attr or weighted", dict(weight_attr="weight", weighted=["node__to__node"])),
            (ValueError, "temporal_strategy", dict(time_attr="time", temporal_strategy="newest")),
            (ValueError, "time_attr", dict(time_attr="timestamp")),
            (ValueError, "input_time has 1 times for 2 seeds", dict(input_nodes=[1, 2], time_attr="time", input_time=[5])),
            (ValueError, "input_time needs time_attr", dict(input_nodes=[1, 2], input_time=[5, 6])),
            (TypeError, "input_time", dict(input_nodes=[1, 2], time_attr="time", input_time=torch.tensor([1.0, 2.0]))),
            (ValueError, "servers", dict(servers=[])),
            (TypeError, "ablp", dict(ablp="user__rates__movie")),
        ]
        for kind, word, kwargs in cases:
            args = dict(servers=[D1.address], num_neighbors=[2])
            args.update(kwargs)
            with self.assertRaises(kind, msg=str(kwargs)) as cm:
                graphstore.Loader(**args)
            self.assertIn(word, str(cm.exception))

    def test_to_pyg_says_what_it_needs(self):
        with graphstore.Loader([D1.address], [2], batch_size=16) as loader:
            batch = next(iter(loader))
        try:
            import torch_geometric  # noqa: F401
        except ImportError:
            with self.assertRaises(ImportError) as cm:
                batch.to_pyg()
            self.assertIn("torch_geometric", str(cm.exception))
        else:
            data = batch.to_pyg()
            self.assertTrue(torch.equal(data.edge_index, batch.edge_index))


class FakeCuda:
    """_device.CudaRuntime on a machine without a GPU: memory registrations are recorded, the
    "device" is the CPU, streams and events are markers that log what was asked of them."""

    def __init__(self):
        self.device = torch.device("cpu")
        self.log = []
        self.live = {}  # address -> size

    def register(self, address, size):
        assert address not in self.live, "registered twice"
        self.live[address] = size
        self.log.append(("register", address))
        return 0

    def unregister(self, address):
        assert self.live.pop(address, None) is not None, "unregistered what was not registered"
        self.log.append(("unregister", address))
        return 0

    def new_stream(self):
        return "side"

    def stream_context(self, stream):
        fake = self

        class Context:
            def __enter__(self):
                fake.log.append(("enter", stream))

            def __exit__(self, *exc):
                fake.log.append(("exit", stream))
        return Context()

    def current_stream(self):
        fake = self

        class Stream:
            def wait_event(self, event):
                fake.log.append(("wait", event.n))
        return Stream()

    def record_event(self, stream):
        fake = self
        n = sum(1 for e in self.log if e[0] == "event")

        class Event:
            def __init__(self):
                self.n = n

            def query(self):
                return True
        self.log.append(("event", n))
        return Event()

    def record_stream(self, tensor, stream):
        pass


class DeviceTest(unittest.TestCase):
    """pin_memory and device="cuda" without a GPU: the errors, and the logic around CUDA with a
    recording stand-in for it (tools/gpu_check.sh runs the real thing)."""

    def setUp(self):
        from graphstore import _device
        self._device = _device
        self.saved = _device.cuda_runtime

    def tearDown(self):
        self._device.cuda_runtime = self.saved

    def test_without_cuda_both_options_say_so(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        for kwargs, word in ((dict(pin_memory=True), "pin_memory=True needs CUDA"),
                             (dict(device="cuda"), "device='cuda' needs CUDA"),
                             (dict(device=torch.device("cuda", 0)), "device='cuda:0' needs CUDA")):
            with self.assertRaises(ValueError) as cm:
                graphstore.Loader([D1.address], [2], batch_size=8, **kwargs)
            self.assertIn(word, str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            graphstore.Loader([D1.address], [2], batch_size=8, device="tpu")
        self.assertIn("device must be", str(cm.exception))

    def test_pinned_batches_lie_in_memory_registered_once(self):
        fake = FakeCuda()
        self._device.cuda_runtime = lambda option, device=None: fake
        for shared in (False, True):
            with graphstore.Loader([D1.address], [4, 2], batch_size=64, pin_memory=True, shared_memory=shared,
                                   edge_ids=True) as loader:
                registry = loader._registry
                for epoch in (0, 1):
                    for b in loader.epoch(epoch):
                        self.assertEqual(b.shared_memory, shared)
                        for t in (b.x, b.y, b.n_id, b.edge_index, b.e_id):
                            self.assertTrue(registry.covers(t.data_ptr(), t.numel() * t.element_size()))
                self.assertEqual(registry.failures, [])
                kept = b
                # Once warm, blocks are reused: later epochs register far fewer than a block a batch.
                before = sum(1 for e in fake.log if e[0] == "register")
                later = sum(1 for _ in loader.epoch(2)) + sum(1 for _ in loader.epoch(3))
                self.assertLess(sum(1 for e in fake.log if e[0] == "register") - before, later)
            # A batch outlives its loader, and its memory stays registered while it does.
            self.assertTrue(registry.covers(kept.x.data_ptr(), kept.x.numel() * 4))
            del kept, b, t
            gc.collect()
            self.assertEqual(fake.live, {}, "a block was freed without being unregistered")

    def test_device_batches_arrive_in_order_one_copy_ahead(self):
        fake = FakeCuda()
        self._device.cuda_runtime = lambda option, device=None: fake
        with graphstore.Loader([D1.address], [3], batch_size=100, split="val", backend_key="device-plain") as plain:
            want = [(b.batch_index, b.n_id.clone()) for b in plain.epoch(0)]
        with graphstore.Loader([D1.address], [3], batch_size=100, split="val", device="cuda",
                               backend_key="device-moved") as loader:
            got = []
            for b in loader.epoch(0):
                # Handed out only after the trainer's stream waited for its copy; by then the
                # copy of the next batch has been started on the side stream.
                waits = [e for e in fake.log if e[0] == "wait"]
                events = [e for e in fake.log if e[0] == "event"]
                self.assertEqual(waits[-1], ("wait", len(got)))
                self.assertEqual(len(events), min(len(got) + 2, len(want)))
                self.assertEqual(b._memory, [])  # a copy: nothing views the loader's buffers
                got.append((b.batch_index, b.n_id.clone()))
        self.assertEqual(sorted(i for i, _ in got), sorted(i for i, _ in want))
        want = dict(want)
        for i, ids in got:
            self.assertTrue(torch.equal(ids, want[i]))
        self.assertEqual([e for e in fake.log if e[0] in ("enter", "exit")][:2], [("enter", "side"), ("exit", "side")])


class ChannelsTest(unittest.TestCase):
    def test_close_releases_channels(self):
        before = num_channels(D1.address)
        loader = graphstore.Loader([D1.address], [2], batch_size=64, backend_key="close")
        next(iter(loader))
        self.assertEqual(num_channels(D1.address), before + 1)
        loader.close()
        self.assertEqual(num_channels(D1.address), before)
        loader.close()  # idempotent
        self.assertTrue(loader.closed)

    def test_garbage_collection_releases_channels(self):
        before = num_channels(D1.address)
        loader = graphstore.Loader([D1.address], [2], batch_size=64, backend_key="gc")
        it = iter(loader)
        batch = next(it)
        self.assertEqual(num_channels(D1.address), before + 1)
        del loader, it
        gc.collect()
        self.assertEqual(num_channels(D1.address), before)
        self.assertGreater(batch.x.numel(), 0)  # a batch taken stays usable

    def test_loaders_dropped_mid_epoch_again_and_again(self):
        # Each loader is dropped while its stream is sending: the client cancels the stream as the
        # server starts its next write. A write started after the stream's final status ended the
        # call twice and brought the daemon down (about once in a few hundred drops).
        before = num_channels(D1.address)
        for i in range(300):
            loader = graphstore.Loader([D1.address], [2], batch_size=64, backend_key="dropped")
            it = iter(loader)
            self.assertGreater(next(it).x.numel(), 0)
            del loader, it
            gc.collect()
            self.assertIsNone(D1.proc.poll(), f"graphstored exited after {i + 1} dropped loaders")
        self.assertEqual(num_channels(D1.address), before)

    def test_context_manager_releases_channels_on_error(self):
        before = num_channels(D1.address)
        with self.assertRaises(KeyError):
            with graphstore.Loader([D1.address], [2], batch_size=64, backend_key="with"):
                raise KeyError("trainer failed")
        self.assertEqual(num_channels(D1.address), before)


@unittest.skipIf(not os.path.exists(os.path.join(MOVIELENS, "u.data")), f"no MovieLens 100k at {MOVIELENS}")
class HeteroTest(unittest.TestCase):
    def test_hetero_fields(self):
        p = Partition(ML)
        fan = {("user", "rates", "movie"): [4, 2], ("movie", "rev_rates", "user"): [4, 2]}
        with graphstore.Loader([DML.address], fan, input_nodes="user", split="", batch_size=50, labels=False,
                               edge_ids=True) as loader:
            self.assertEqual(len(loader), (943 + 49) // 50)
            users = []
            for batch in loader.epoch(0):
                self.assertTrue(batch.is_hetero)
                self.assertEqual(set(batch.node_types), {"user", "movie"})
                self.assertTrue(all(isinstance(t, tuple) and len(t) == 3 for t in batch.edge_types))
                self.assertEqual(batch.batch_size_dict["user"], batch["user"].batch_size)
                users += batch["user"].n_id[:batch["user"].batch_size].tolist()
                # input_id on the seed type only: the index into every user's ascending id list.
                self.assertEqual(batch.input_type, "user")
                self.assertTrue(torch.equal(batch["user"].input_id, batch["user"].n_id[:batch["user"].batch_size]))
                self.assertIsNone(batch["movie"].input_id)
                for t in ("user", "movie"):
                    store = batch[t]
                    ids = store.n_id.numpy()
                    self.assertEqual(store.x.dtype, torch.float32)
                    np.testing.assert_array_equal(store.x.numpy(), p.node(t, "features")[ids])
                    self.assertEqual(sum(store.num_sampled_nodes), store.num_nodes)
                self.assertIs(batch.x_dict["user"], batch["user"].x)
                for key in batch.edge_types:
                    src_t, _, dst_t = key
                    e = batch[key]
                    self.assertEqual(e.edge_index.dtype, torch.int64)
                    self.assertEqual(sum(e.num_sampled_edges), e.num_edges)
                    src, dst = e.edge_index.numpy()
                    self.assertTrue((src < batch[src_t].num_nodes).all() and (dst < batch[dst_t].num_nodes).all())
                    # The stored edge runs from the node that sampled (row 1) to its neighbour.
                    stored = e.stored_type
                    self.assertEqual(stored.split("__")[0], dst_t)
                    a, b = batch[dst_t].n_id.numpy()[dst], batch[src_t].n_id.numpy()[src]
                    indptr, indices = p.edge(stored, "indptr"), p.edge(stored, "indices")
                    # e_id is the global edge id; edge_ids.npy gives it per CSR position.
                    order = np.argsort(p.edge(stored, "edge_ids"))
                    eid = order[e.e_id.numpy()]  # one partition: edge_ids is a permutation
                    self.assertTrue((indptr[a] <= eid).all() and (eid < indptr[a + 1]).all())
                    np.testing.assert_array_equal(indices[eid], b)
            self.assertEqual(sorted(users), list(range(943)))

    def test_to_pyg_puts_fields_where_neighbor_loader_does(self):
        # PyG's NeighborLoader sets input_id, seed_time and batch_size on the input node type
        # only; n_id, x, y per node type; edge_index and e_id per edge type; num_sampled_nodes /
        # num_sampled_edges per type. A stand-in for torch_geometric.data records what to_pyg sets.
        class Store(dict):
            def __getattr__(self, k):
                return self[k]

            def __setattr__(self, k, v):
                self[k] = v

        class HeteroData(dict):
            def __getitem__(self, k):
                return self.setdefault(k, Store())

        fake = type(sys)("torch_geometric")
        fake.data = type(sys)("torch_geometric.data")
        fake.data.Data, fake.data.HeteroData = Store, HeteroData
        saved = {k: sys.modules.get(k) for k in ("torch_geometric", "torch_geometric.data")}
        sys.modules.update({"torch_geometric": fake, "torch_geometric.data": fake.data})
        try:
            fan = {("user", "rates", "movie"): [3], ("movie", "rev_rates", "user"): [3]}
            with graphstore.Loader([DML.address], fan, input_nodes=("user", torch.tensor([7, 3, 900])), batch_size=3,
                                   edge_ids=True, labels=False) as loader:
                batch = next(iter(loader))
            data = batch.to_pyg()
            self.assertEqual(data["user"]["input_id"].tolist(), [0, 1, 2])
            self.assertEqual(data["user"]["batch_size"], 3)
            self.assertNotIn("batch_size", data["movie"])
            self.assertNotIn("input_id", data["movie"])
            for t in ("user", "movie"):
                self.assertIn("n_id", data[t])
                self.assertIn("num_sampled_nodes", data[t])
            for k in (("user", "rates", "movie"), ("movie", "rev_rates", "user")):
                self.assertIn("edge_index", data[k])
                self.assertIn("e_id", data[k])
            with graphstore.Loader([D1.address], [2], input_nodes=torch.tensor([5, 9]), batch_size=2) as loader:
                homo = next(iter(loader)).to_pyg()
            self.assertEqual(homo["input_id"].tolist(), [0, 1])
            self.assertEqual(homo["batch_size"], 2)
            for k in ("x", "y", "edge_index", "n_id", "num_sampled_nodes", "num_sampled_edges"):
                self.assertIn(k, homo)
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v

    def test_ablp_fields(self):
        p = Partition(ML)
        labels = p.edge("user__rates__movie", "labels_train")
        positives = {(int(u), int(m)) for u, m in labels}
        anchors_all = {u for u, _ in positives}
        fan = {("user", "rates", "movie"): [3], ("movie", "rev_rates", "user"): [3]}
        with graphstore.Loader([DML.address], fan, batch_size=32, shuffle=True, labels=False,
                               ablp=graphstore.AblpInput(("user", "rates", "movie"), split="train"),
                               num_negatives=5) as loader:
            anchors_seen = []
            for batch in loader.epoch(0):
                a = batch.anchors
                self.assertEqual(a.dtype, torch.int64)
                self.assertEqual(batch.positive.size(0), a.size(0))
                self.assertEqual(tuple(batch.negative.shape), (a.size(0), 5))
                users = batch["user"].n_id.numpy()
                movies = batch["movie"].n_id.numpy()
                anchor_ids = users[a.numpy()]
                anchors_seen += anchor_ids.tolist()
                for row, u in enumerate(anchor_ids):
                    pos = batch.positive[row]
                    got = {(int(u), int(movies[k])) for k in pos[pos >= 0].tolist()}
                    want = {(x, y) for x, y in positives if x == u}
                    self.assertEqual(got, want)
                self.assertTrue((batch.negative < len(movies)).all() and (batch.negative >= -1).all())
                # The anchors are the batch's user seeds: the first rows of the user nodes.
                self.assertTrue(torch.equal(a, torch.arange(a.size(0))))
            self.assertEqual(sorted(anchors_seen), sorted(anchors_all))

    def test_temporal_times_of_every_type(self):
        # MovieLens on its ratings' times: users are seeds, movies are not; label movies take
        # their anchor's time.
        g = os.path.join(WORK, "ml-times")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={g}", "--times")
        d = gt.Daemon(g, name="movielens-times").wait_ready()
        try:
            stored = {t: np.load(os.path.join(g, "book", f"{t}.time.npy")) for t in ("user", "movie")}
            fan = {("user", "rates", "movie"): [4, 2], ("movie", "rev_rates", "user"): [4, 2]}
            for shared in (True, False):
                with graphstore.Loader([d.address], fan, input_nodes="user", split="", batch_size=64,
                                       time_attr="time", node_times=True, shared_memory=shared, labels=False,
                                       node_features=False, backend_key=f"times-{shared}") as loader:
                    reached = 0
                    for b in loader.epoch(0):
                        users, movies = b["user"], b["movie"]
                        self.assertEqual(tuple(users.seed_time.shape), (users.batch_size,))
                        self.assertEqual(tuple(movies.seed_time.shape), (0,))  # no movie seeds
                        np.testing.assert_array_equal(users.seed_time.numpy(), stored["user"][users.seeds.numpy()])
                        for t, n in (("user", users), ("movie", movies)):
                            self.assertEqual(n.sampled_time.numel(), n.num_nodes)
                            np.testing.assert_array_equal(n.time.numpy(), stored[t][n.n_id.numpy()])
                            # Reached nodes are never newer than the time they were reached at.
                            first = n.num_sampled_nodes[0]
                            self.assertTrue(bool((n.time[first:] <= n.sampled_time[first:]).all()), t)
                            reached += n.num_nodes - first
                        self.assertEqual(set(b.time_dict), {"user", "movie"})
                    self.assertGreater(reached, 0)
            with graphstore.Loader([d.address], fan, batch_size=32, time_attr="time", labels=False,
                                   node_features=False, ablp=graphstore.AblpInput(("user", "rates", "movie"),
                                                                                  split="train"),
                                   backend_key="times-ablp") as loader:
                for b in loader.epoch(0):
                    anchor_time = b["user"].seed_time.tolist()
                    want = {}
                    for row, labels in enumerate(b.positive.tolist()):
                        for k in labels:
                            if k >= 0:
                                want[k] = min(want.get(k, anchor_time[row]), anchor_time[row])
                    self.assertTrue(want)
                    got = b["movie"].sampled_time.tolist()
                    self.assertEqual({k: got[k] for k in want}, want)
                    self.assertIsNone(b["movie"].time)  # not asked for
        finally:
            d.stop()


class MessagePassingTest(unittest.TestCase):
    def test_same_output_as_the_cpp_loader(self):
        out_dir = tempfile.mkdtemp(dir=WORK)
        gt.run(os.path.join(gt.ROOT, "tests", "python", "mp_reference"), f"--servers={D1.address}", "--epoch=1",
               "--batch_size=64", "--fanouts=10,5", "--seed=11", f"--out={out_dir}")
        dim = 16
        w = ((torch.arange(dim * 4) % 7) - 3).float().div(10).view(dim, 4)
        compared = 0
        with graphstore.Loader([D1.address], [10, 5], batch_size=64, shuffle=True, seed=11, labels=False,
                               backend_key="mp-python") as loader:
            for batch in loader.epoch(1):
                # A PyG-style layer in plain torch: messages flow edge_index[0] -> edge_index[1].
                h = batch.x @ w
                src, dst = batch.edge_index
                total = torch.zeros_like(h).index_add_(0, dst, h.index_select(0, src))
                deg = torch.zeros(h.size(0)).index_add_(0, dst, torch.ones(dst.size(0)))
                out = h + total / deg.clamp_min(1).unsqueeze(1)
                base = os.path.join(out_dir, f"{batch.batch_index}.{batch.server}")
                ref_ids = np.fromfile(base + ".n_id", dtype=np.int64)
                ref_out = np.fromfile(base + ".out", dtype=np.float32).reshape(-1, 4)
                np.testing.assert_array_equal(batch.n_id.numpy(), ref_ids)
                np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-5, atol=1e-5)
                compared += 1
        self.assertEqual(compared, len(os.listdir(out_dir)) // 2)
        self.assertGreater(compared, 10)


class ExamplesTest(unittest.TestCase):
    """python/examples/train_sage.py, the worked example of the docs, runs one epoch each way;
    the two link-prediction examples evaluate alike."""

    @unittest.skipIf(not os.path.exists(os.path.join(MOVIELENS, "u.data")), f"no MovieLens 100k at {MOVIELENS}")
    def test_link_prediction_examples_share_one_evaluation(self):
        # Both rank items with each user's train ratings excluded and score a popularity baseline
        # of train rating counts (ties by lower id): on the same split they print the same one.
        def baseline(cmd, env=None):
            r = subprocess.run(cmd + [f"--servers={DML.address}", "--epochs=0"], capture_output=True, text=True,
                               env=env, timeout=300, check=False)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            line = [x for x in r.stdout.splitlines() if x.startswith("popularity baseline:")]
            self.assertEqual(len(line), 1, r.stdout)
            return line[0]
        script = os.path.join(gt.ROOT, "python", "examples", "train_link_pred.py")
        py = baseline([sys.executable, script], env=gt.package_env())
        cpp = baseline([os.path.join(gt.ROOT, "client", "train_link_pred")])
        self.assertEqual(py, cpp)
        self.assertRegex(py, r"recall@20 0\.[0-9]{4}  MRR 0\.[0-9]{4}")

    def test_train_sage_uniform_weighted_and_temporal(self):
        g = os.path.join(WORK, "examples")
        gt.run(gt.tool("graphstore-generate"), "--nodes=2000", "--feature_dim=8", "--classes=3", "--seed=11",
               "--edge_weights", "--times", f"--out={g}")
        d = gt.Daemon(g, name="examples").wait_ready()
        try:
            env = gt.package_env()
            script = os.path.join(gt.ROOT, "python", "examples", "train_sage.py")
            for flags, says in (([], "uniform"), (["--weighted"], "weighted"),
                                (["--temporal=last"], "uniform, temporal (last"),
                                (["--weighted", "--temporal=uniform"], "weighted, temporal (uniform")):
                r = subprocess.run([sys.executable, script, f"--servers={d.address}", "--epochs=1", *flags],
                                   capture_output=True, text=True, env=env, timeout=300, check=False)
                self.assertEqual(r.returncode, 0, f"{flags}:\n{r.stdout}\n{r.stderr}")
                self.assertIn(f"neighbour sampling: {says}", r.stdout)
                self.assertRegex(r.stdout, r"epoch 0: loss [0-9.]+ ")
            # On a dataset without times, the example says why it cannot sample temporally.
            r = subprocess.run([sys.executable, script, f"--servers={D1.address}", "--epochs=1", "--temporal=last"],
                               capture_output=True, text=True, env=env, timeout=300, check=False)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("INVALID_ARGUMENT", r.stderr)
            self.assertIn("time", r.stderr)
        finally:
            d.stop()


if __name__ == "__main__":
    gt.main("python_loader_test")
