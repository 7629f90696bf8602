"""graphstore.pyg against real graphstored processes, through stand-ins of PyG's classes (the
names, fields and calls of torch_geometric 2.4-2.8): the feature store reads each row from its
owner, the graph store describes the stored types, and a NodeLoader over (feature store, graph
store) with graphstore's sampler gives batches of the user's graph in PyG's direction."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import gs_testing as gt  # puts the package on sys.path

import torch

import graphstore
import graphstore.pyg

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyg_standin")
# GRAPHSTORE_PYG=installed: the same tests against the torch_geometric installed in this
# interpreter instead of the stand-ins (where PyG is installable: tools/device_check.sh).
INSTALLED_PYG = os.environ.get("GRAPHSTORE_PYG") == "installed"


def standins(on):
    """Puts the PyG stand-ins on the path (or takes them off); never with an installed PyG."""
    if INSTALLED_PYG:
        return
    if on:
        sys.path.insert(0, STANDIN)
    else:
        sys.path.remove(STANDIN)


class Data:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def server_stats(address):
    import grpc
    from graphstore.v1 import graphstore_pb2 as pb, graphstore_pb2_grpc as pb_grpc
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.GraphStoreStub(channel).GetServerStats(pb.GetServerStatsRequest(), timeout=10)


def rows_answered(servers):
    """Feature rows and labels the servers answered GetNodeFeatures / GetNodeLabels with so far."""
    return sum(s.node_rows_answered + s.node_labels_answered for s in map(server_stats, servers))


def wait_for_sampled(address, at_least, timeout=60):
    """The most batches any channel of the server has sampled this epoch, once one reaches
    `at_least` or `timeout` seconds pass (then what it reached). Each round is one
    GetServerStats call, which paces the loop."""
    deadline, most = time.monotonic() + timeout, 0
    while most < at_least and time.monotonic() < deadline:
        stats = server_stats(address)
        most = max([c.batches_sampled for b in stats.backends for c in b.channels] + [0])
    return most


@unittest.skipIf(INSTALLED_PYG, "torch_geometric is installed")
class WithoutPygTest(unittest.TestCase):
    def test_the_module_imports_without_pyg_and_says_what_it_needs(self):
        code = ("import graphstore.pyg as p\n"
                "try:\n    p.FeatureStore\nexcept ImportError as e:\n    print('ImportError:', e)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if "pyg_standin" not in p))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertIn("ImportError: graphstore.pyg needs PyG (torch_geometric 2.4 to 2.8", out.stdout)


class _Served(unittest.TestCase):
    """Daemons a class starts in setUpClass (cls.daemons, data under cls.dir), with the PyG
    stand-ins on the path."""

    @classmethod
    def tearDownClass(cls):
        for d in cls.daemons:
            d.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        standins(False)


class PygBackendTest(_Served):
    @classmethod
    def setUpClass(cls):
        standins(True)
        cls.dir = tempfile.mkdtemp(dir=gt.TMP)
        n, m = 3000, 20000
        g = torch.Generator().manual_seed(5)
        edge_index = torch.stack([torch.randint(0, n, (m,), generator=g), torch.randint(0, n, (m,), generator=g)])
        cls.data = Data(edge_index=edge_index, x=torch.randn(n, 12, generator=g), y=torch.randint(0, 7, (n,), generator=g),
                        edge_attr=torch.randn(m, 3, generator=g), num_nodes=n)
        out = os.path.join(cls.dir, "directed")
        graphstore.write_dataset(cls.data, out, num_partitions=2, method="random")
        cls.daemons = gt.start_cluster(out, 2)
        cls.servers = [d.address for d in cls.daemons]
        one = os.path.join(cls.dir, "one")
        graphstore.write_dataset(cls.data, one)
        cls.single = gt.Daemon(one, name="one").wait_ready()
        cls.daemons.append(cls.single)
        cls.edges = set(map(tuple, edge_index.t().tolist()))

    def test_the_feature_store_reads_rows_and_labels_from_their_owners(self):
        from torch_geometric.data import FeatureStore, TensorAttr
        fs = graphstore.pyg.FeatureStore(self.servers)
        self.assertIsInstance(fs, FeatureStore)
        idx = torch.tensor([0, 2999, 17, 17, 1500, 3])
        self.assertTrue(torch.equal(fs[None, "x", idx], self.data.x[idx]))
        self.assertTrue(torch.equal(fs[None, "y", idx], self.data.y[idx]))
        self.assertTrue(torch.equal(fs[None, "x", 5:9], self.data.x[5:9]))
        self.assertTrue(torch.equal(fs.get_tensor(TensorAttr(None, "x", None)), self.data.x))
        self.assertEqual(fs.get_tensor_size(TensorAttr(None, "x")), (3000, 12))
        self.assertEqual(fs.get_tensor_size(TensorAttr(None, "y")), (3000,))
        self.assertEqual(sorted(a.attr_name for a in fs.get_all_tensor_attrs()), ["x", "y"])
        self.assertEqual(len(fs), 2)  # abstract in PyG 2.4 and 2.5
        x, y = fs.multi_get_tensor([TensorAttr(None, "x", idx), TensorAttr(None, "y", idx)])
        self.assertTrue(torch.equal(x, self.data.x[idx]) and torch.equal(y, self.data.y[idx]))
        self.assertEqual(fs[None, "x", torch.tensor([], dtype=torch.long)].shape, (0, 12))

    def test_edge_features_come_from_the_partitions_that_store_them(self):
        from torch_geometric.data import TensorAttr
        for servers in ([self.single.address], self.servers):
            fs = graphstore.pyg.FeatureStore(servers)
            eids = torch.tensor([0, 19999, 7, 7, 12345, 3])
            self.assertTrue(torch.equal(fs[None, "edge_attr", eids], self.data.edge_attr[eids]))
            (attr,) = graphstore.pyg.GraphStore(servers).get_all_edge_attrs()
            self.assertTrue(torch.equal(fs[attr.edge_type, "edge_attr", 5], self.data.edge_attr[5:6]))
            self.assertTrue(torch.equal(fs.get_tensor(TensorAttr(None, "edge_attr", None)), self.data.edge_attr))
            self.assertEqual(fs.get_tensor_size(TensorAttr(None, "edge_attr")), (20000, 3))
            # Not listed on a homogeneous graph: PyG's filter indexes every listed attribute by nodes.
            self.assertEqual(sorted(a.attr_name for a in fs.get_all_tensor_attrs()), ["x", "y"])
            with self.assertRaisesRegex(IndexError, r"ids must be in \[0, 20000\)"):
                fs[None, "edge_attr", torch.tensor([20000])]
            with self.assertRaisesRegex(KeyError, "group_name 'cites' is not an edge type"):
                fs["cites", "edge_attr", torch.tensor([1])]

    def test_encoded_rows_come_back_in_the_stored_dtype(self):
        fs = graphstore.pyg.FeatureStore(self.servers, feature_encoding="float16")
        idx = torch.arange(0, 3000, 7)
        x = fs[None, "x", idx]
        self.assertEqual(x.dtype, torch.float32)
        self.assertTrue(torch.allclose(x, self.data.x[idx], rtol=1e-3, atol=1e-3))
        q = graphstore.pyg.FeatureStore(self.servers, feature_encoding="int8")[None, "x", idx]
        self.assertEqual(q.shape, (idx.numel(), 12))
        span = self.data.x.max(0).values - self.data.x.min(0).values
        self.assertTrue(bool(((q - self.data.x[idx]).abs() <= span / 255 + 1e-5).all()))

    def test_bad_reads_name_what_is_wrong(self):
        fs = graphstore.pyg.FeatureStore(self.servers)
        with self.assertRaisesRegex(IndexError, r"ids must be in \[0, 3000\)"):
            fs[None, "x", torch.tensor([3000])]
        with self.assertRaisesRegex(KeyError, "attr_name 'edge_weight'"):
            fs[None, "edge_weight", torch.tensor([1])]
        with self.assertRaisesRegex(KeyError, "group_name 'paper' is not a node type"):
            fs["paper", "x", torch.tensor([1])]
        with self.assertRaisesRegex(TypeError, "read-only"):
            fs.put_tensor(torch.zeros(1, 12), None, "x", torch.tensor([0]))
        with self.assertRaisesRegex(TypeError, "num_neighbors: not a connection option"):
            graphstore.pyg.FeatureStore(self.servers, num_neighbors=[1])
        with self.assertRaisesRegex(ValueError, "disjoint=True"):
            graphstore.pyg.NeighborSampler(self.servers, [2], disjoint=True)

    def test_the_graph_store_describes_the_edge_types(self):
        from torch_geometric.data import EdgeLayout, GraphStore
        gs = graphstore.pyg.GraphStore(self.servers, max_edges=1000)
        self.assertIsInstance(gs, GraphStore)
        (attr,) = gs.get_all_edge_attrs()
        self.assertEqual(attr.size, (3000, 3000))
        self.assertIs(attr.layout, EdgeLayout.COO)
        with self.assertRaisesRegex(ValueError, "beyond max_edges=1000: sample it with graphstore.pyg.NeighborSampler"):
            gs.get_edge_index(attr)
        # Below the limit, the whole type comes back as written: the user's columns, in order.
        whole = graphstore.pyg.GraphStore(self.servers).get_edge_index(attr)
        self.assertTrue(torch.equal(whole, self.data.edge_index))

    def test_pygs_node_loader_over_the_stores_gives_the_users_graph(self):
        from torch_geometric.loader import NodeLoader
        from torch_geometric.sampler import BaseSampler
        fs = graphstore.pyg.FeatureStore(self.servers)
        gs = graphstore.pyg.GraphStore(self.servers)
        sampler = graphstore.pyg.NeighborSampler(self.servers, num_neighbors=[5, 3])
        self.assertIsInstance(sampler, BaseSampler)
        seeds = torch.arange(0, 3000, 11)
        loader = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=seeds, batch_size=64)
        seen, edges = [], 0
        for batch in loader:
            n_id = batch.n_id
            self.assertTrue(torch.equal(batch.x, self.data.x[n_id]))
            self.assertTrue(torch.equal(batch.y, self.data.y[n_id]))
            seen += n_id[:batch.batch_size].tolist()
            self.assertEqual(batch.num_sampled_nodes[0], batch.batch_size)
            # Each edge is one of the user's, messages flowing source -> target as in PyG, and
            # its id is its column in the user's edge_index.
            src, dst = n_id[batch.edge_index[0]], n_id[batch.edge_index[1]]
            for pair in zip(src.tolist(), dst.tolist()):
                self.assertIn(pair, self.edges)
            self.assertTrue(torch.equal(self.data.edge_index[:, batch.e_id], torch.stack([src, dst])))
            edges += batch.edge_index.shape[1]
        self.assertEqual(sorted(seen), seeds.tolist())
        self.assertGreater(edges, 1000)

    def check_batch(self, batch):
        """A batch of the user's graph: stored rows, stored edges in PyG's direction."""
        n_id = batch.n_id
        self.assertTrue(torch.equal(batch.x, self.data.x[n_id]))
        self.assertTrue(torch.equal(batch.y, self.data.y[n_id]))
        src, dst = n_id[batch.edge_index[0]], n_id[batch.edge_index[1]]
        self.assertTrue(torch.equal(self.data.edge_index[:, batch.e_id], torch.stack([src, dst])))

    def test_graphstores_node_loader_samples_ahead_on_one_server_and_a_cluster(self):
        from torch_geometric.loader import NodeLoader
        seeds = torch.arange(1, 3000, 7)
        for servers in ([self.single.address], self.servers):
            sampler = graphstore.pyg.NeighborSampler(servers, num_neighbors=[5, 3], seed=2)
            stores = (graphstore.pyg.FeatureStore(servers), graphstore.pyg.GraphStore(servers))
            loader = graphstore.pyg.NodeLoader(stores, node_sampler=sampler, input_nodes=seeds, batch_size=50,
                                               shuffle=True)
            self.assertIsInstance(loader, NodeLoader)
            self.assertEqual(len(loader), 9)
            seen, input_ids = [], []
            answered = rows_answered(servers)
            for k, batch in enumerate(loader):
                self.check_batch(batch)
                self.assertEqual(batch.batch_size, 50 if k < 8 else 29)
                self.assertTrue(torch.equal(seeds[batch.input_id], batch.n_id[:batch.batch_size]))
                seen += batch.n_id[:batch.batch_size].tolist()
                input_ids += batch.input_id.tolist()
                if k == 0 and len(servers) == 1:
                    # While the first batch is in hand, the server samples the next ones: the
                    # epoch is one channel, read ahead (a batch per call would hold one).
                    self.assertGreaterEqual(wait_for_sampled(servers[0], 3), 3)
            self.assertEqual(sorted(seen), seeds.tolist())
            self.assertEqual(sorted(input_ids), list(range(seeds.numel())))
            if len(servers) == 1:
                # PyG's filter_fn asked the feature store for the batches' rows: they came with
                # the batches, not from a second call (on a cluster peers ask owners for rows).
                self.assertEqual(rows_answered(servers), answered)
            # An epoch without the shuffle is the input's order; a seed given twice falls back to
            # sampling a batch at a time on threads, each batch the same as PyG's loader gives.
            twice = torch.cat([seeds[:40], seeds[:40]])
            plain = NodeLoader(stores, node_sampler=graphstore.pyg.NeighborSampler(servers, [5, 3], seed=9),
                               input_nodes=twice, batch_size=16)
            ahead = graphstore.pyg.NodeLoader(stores, node_sampler=graphstore.pyg.NeighborSampler(servers, [5, 3], seed=9),
                                              input_nodes=twice, batch_size=16, prefetch=3)
            pairs = list(zip(plain, ahead))
            self.assertEqual(len(pairs), 5)
            for a, b in pairs:
                self.check_batch(b)
                self.assertTrue(torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index))
        with self.assertRaisesRegex(ValueError, "prefetch=-1"):
            graphstore.pyg.NodeLoader(stores, node_sampler=sampler, input_nodes=seeds, prefetch=-1)

    def test_link_loaders_drive_the_sampler_with_binary_and_triplet_negatives(self):
        from torch_geometric.loader import LinkLoader
        from torch_geometric.sampler import NegativeSampling
        pos = self.data.edge_index[:, :300]
        for servers in ([self.single.address], self.servers):
            stores = (graphstore.pyg.FeatureStore(servers), graphstore.pyg.GraphStore(servers))
            # Over a remote store PyG's LinkLoader takes the edges with their type, as a user
            # names it from the graph store.
            (edges,) = stores[1].get_all_edge_attrs()
            for mode in ("binary", "triplet"):
                def make(cls, **extra):
                    return cls(stores, link_sampler=graphstore.pyg.NeighborSampler(servers, [4, 2], seed=3),
                               edge_label_index=(edges.edge_type, pos), neg_sampling=NegativeSampling(mode, 1),
                               batch_size=64, **extra)
                plain, ahead = make(LinkLoader), make(graphstore.pyg.LinkLoader, prefetch=2)
                batches = 0
                for a, b in zip(plain, ahead):
                    batches += 1
                    self.check_batch(b)
                    # Sampled ahead on threads, each batch keeps the draws of its turn.
                    self.assertTrue(torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index))
                    mine = pos[:, b.input_id]
                    if mode == "binary":
                        n = b.input_id.numel()
                        self.assertTrue(torch.equal(b.n_id[b.edge_label_index[:, :n]], mine))
                        self.assertEqual(b.edge_label.tolist(), [1.0] * n + [0.0] * n)
                    else:
                        self.assertTrue(torch.equal(b.n_id[b.src_index], mine[0]))
                        self.assertTrue(torch.equal(b.n_id[b.dst_pos_index], mine[1]))
                        self.assertEqual(b.dst_neg_index.shape, (b.input_id.numel(),))
                self.assertEqual(batches, 5)

    def test_the_sampler_draws_what_the_loader_draws_for_the_same_seeds(self):
        from torch_geometric.sampler import NodeSamplerInput
        seeds = torch.tensor([4, 40, 400, 2000])
        sampler = graphstore.pyg.NeighborSampler(self.servers, num_neighbors=[4, 2])
        out = sampler.sample_from_nodes(NodeSamplerInput(torch.arange(4), seeds))
        self.assertTrue(torch.equal(out.node[:4], seeds))
        self.assertTrue(torch.equal(out.metadata[0], torch.arange(4)))
        again = graphstore.pyg.NeighborSampler(self.servers, num_neighbors=[4, 2]).sample_from_nodes(
            NodeSamplerInput(torch.arange(4), seeds))
        self.assertTrue(torch.equal(out.node, again.node) and torch.equal(out.row, again.row))

    def test_link_batches_carry_pygs_labels_for_binary_and_triplet_negatives(self):
        from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling
        pos = self.data.edge_index[:, :50]
        inputs = EdgeSamplerInput(torch.arange(50), pos[0], pos[1])
        sampler = graphstore.pyg.NeighborSampler(self.servers, num_neighbors=[3], seed=4)
        plain = sampler.sample_from_edges(inputs)
        self.assertTrue(torch.equal(plain.node[plain.metadata[1]], pos))
        binary = sampler.sample_from_edges(inputs, NegativeSampling("binary", 2))
        input_id, label_index, label, _ = binary.metadata
        self.assertTrue(torch.equal(input_id, torch.arange(50)))
        self.assertEqual(label_index.shape, (2, 150))
        self.assertTrue(torch.equal(binary.node[label_index[:, :50]], pos))
        self.assertTrue(torch.equal(label, torch.cat([torch.ones(50), torch.zeros(100)])))
        triplet = sampler.sample_from_edges(inputs, NegativeSampling("triplet", 1))
        _, src_index, dst_pos, dst_neg, _ = triplet.metadata
        self.assertTrue(torch.equal(triplet.node[src_index], pos[0]))
        self.assertTrue(torch.equal(triplet.node[dst_pos], pos[1]))
        self.assertEqual(dst_neg.shape, (50,))
        # Every endpoint is a seed: the first nodes of the batch, each once.
        seeds = torch.cat([src_index, dst_pos, dst_neg]).unique()
        self.assertEqual(int(seeds.max()) + 1, seeds.numel())
        with self.assertRaisesRegex(ValueError, "src_weight"):
            sampler.sample_from_edges(inputs, NegativeSampling("binary", 1, src_weight=torch.ones(3000)))
        # PyG 2.4 and 2.5 call the weights `weight`.
        older = NegativeSampling("binary", 1)
        older.weight = torch.ones(3000)
        with self.assertRaisesRegex(ValueError, "weight"):
            sampler.sample_from_edges(inputs, older)


class HeteroTest(_Served):
    """A directed heterogeneous graph written from Python (users follow users, users buy items,
    and both reversed), read back by PyG's NodeLoader and graphstore's on one server and
    two partitions: HeteroData batches whose rows are the user's rows and whose every edge is an
    edge the user wrote, in PyG's direction. Generated here, so it runs wherever PyG is."""

    @classmethod
    def setUpClass(cls):
        standins(True)
        cls.dir = tempfile.mkdtemp(dir=gt.TMP)
        g = torch.Generator().manual_seed(11)
        users, items = 1500, 700
        cls.x = {"user": torch.randn(users, 6, generator=g), "item": torch.randn(items, 4, generator=g)}
        cls.written = {
            ("user", "follows", "user"): torch.stack([torch.randint(0, users, (6000,), generator=g),
                                                      torch.randint(0, users, (6000,), generator=g)]),
            ("user", "buys", "item"): torch.stack([torch.randint(0, users, (5000,), generator=g),
                                                   torch.randint(0, items, (5000,), generator=g)]),
        }
        data = {"nodes": {t: {"x": x} for t, x in cls.x.items()},
                "edges": {et: {"edge_index": ei} for et, ei in cls.written.items()}}
        one, two = os.path.join(cls.dir, "one"), os.path.join(cls.dir, "two")
        graphstore.write_dataset(data, one, reverse_edges=True)
        graphstore.write_dataset(data, two, num_partitions=2, reverse_edges=True)
        cls.one = gt.Daemon(one, name="hetero-one").wait_ready()
        cls.cluster = gt.start_cluster(two, 2)
        cls.daemons = [cls.one] + cls.cluster
        cls.edges = {et: set(zip(ei[0].tolist(), ei[1].tolist())) for et, ei in cls.written.items()}
        # The reverses (reverse_edges): an item sends to its buyer, a user to whom it follows.
        for src, rel, dst in list(cls.edges):
            cls.edges[(dst, "rev_" + rel, src)] = {(d, s) for s, d in cls.edges[(src, rel, dst)]}

    def test_pygs_node_loader_gives_the_written_heterogeneous_graph(self):
        from torch_geometric.data import HeteroData
        from torch_geometric.loader import NodeLoader
        seeds = torch.arange(0, 1500, 4)
        for servers in ([self.one.address], [d.address for d in self.cluster]):
            stores = (graphstore.pyg.FeatureStore(servers), graphstore.pyg.GraphStore(servers))
            self.assertEqual(sorted(a.edge_type for a in stores[1].get_all_edge_attrs()), sorted(self.edges))
            for cls in (NodeLoader, graphstore.pyg.NodeLoader):
                sampler = graphstore.pyg.NeighborSampler(servers, num_neighbors=[4, 3], seed=2)
                seen, edges = [], {et: 0 for et in self.edges}
                for batch in cls(stores, node_sampler=sampler, input_nodes=("user", seeds), batch_size=50):
                    self.assertIsInstance(batch, HeteroData)
                    user = batch["user"]
                    seen += user.n_id[:user.batch_size].tolist()
                    for t in ("user", "item"):
                        if t in batch.node_types:
                            self.assertTrue(torch.equal(batch[t].x, self.x[t][batch[t].n_id]), t)
                    for et in batch.edge_types:
                        ei = batch[et].edge_index
                        pairs = set(zip(batch[et[0]].n_id[ei[0]].tolist(), batch[et[2]].n_id[ei[1]].tolist()))
                        self.assertLessEqual(pairs, self.edges[tuple(et)], et)
                        edges[tuple(et)] += ei.shape[1]
                self.assertEqual(sorted(seen), seeds.tolist())
                # Users draw their in-neighbours (followers, and items bought through the
                # reverse type); the items of the first hop draw their buyers.
                for et in self.edges:
                    self.assertGreater(edges[et], 200, et)


MOVIELENS = os.path.join(os.environ.get("GRAPHSTORE_SHARED_DATA", ""), "ml-100k")


@unittest.skipUnless(os.path.exists(os.path.join(MOVIELENS, "u.data")), "needs ml-100k (GRAPHSTORE_SHARED_DATA)")
class MovieLensTest(_Served):
    """A heterogeneous graph (users rate movies, and the reverse) through PyG's NodeLoader and
    graphstore's, on one server and on two partitions: every batch's rows are the stored rows of
    their type and every edge a stored edge of its type, sources first."""

    @classmethod
    def setUpClass(cls):
        import numpy as np
        standins(True)
        cls.dir = tempfile.mkdtemp(dir=gt.TMP)
        one, two = os.path.join(cls.dir, "one"), os.path.join(cls.dir, "two")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={one}")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={two}", "--partitions=2")
        timed = os.path.join(cls.dir, "timed")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={timed}", "--times")
        cls.one = gt.Daemon(one, name="ml-one").wait_ready()
        cls.cluster = gt.start_cluster(two, 2)
        cls.timed = gt.Daemon(timed, name="ml-timed").wait_ready()
        cls.daemons = [cls.one, cls.timed] + cls.cluster
        # Each stored edge's time by edge id, per edge type.
        cls.edge_time = {}
        for et in (("user", "rates", "movie"), ("movie", "rev_rates", "user")):
            d = os.path.join(timed, "edges", "__".join(et))
            times, eids = np.load(os.path.join(d, "time.npy")), np.load(os.path.join(d, "edge_ids.npy"))
            by_id = np.empty_like(times)
            by_id[eids] = times
            cls.edge_time[et] = torch.from_numpy(by_id)
        cls.x = {t: torch.from_numpy(np.load(os.path.join(one, "nodes", t, "features.npy"))) for t in ("user", "movie")}
        cls.edges = {}
        for et in (("user", "rates", "movie"), ("movie", "rev_rates", "user")):
            d = os.path.join(one, "edges", "__".join(et))
            indptr, indices = np.load(os.path.join(d, "indptr.npy")), np.load(os.path.join(d, "indices.npy"))
            rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))  # edge_dir "out": rows are sources
            cls.edges[et] = set(zip(rows.tolist(), indices.tolist()))

    def test_hetero_batches_are_the_stored_graph(self):
        from torch_geometric.data import HeteroData
        from torch_geometric.loader import NodeLoader
        users = torch.arange(0, 943, 3)
        for servers in ([self.one.address], [d.address for d in self.cluster]):
            stores = (graphstore.pyg.FeatureStore(servers), graphstore.pyg.GraphStore(servers))
            self.assertEqual(sorted(str(a.group_name) for a in stores[0].get_all_tensor_attrs()),
                             ["('movie', 'rev_rates', 'user')", "('user', 'rates', 'movie')", "movie", "user"])
            rating = stores[0][("user", "rates", "movie"), "edge_attr", torch.arange(5)]
            self.assertEqual(rating.shape, (5, 1))
            self.assertEqual(sorted(a.edge_type for a in stores[1].get_all_edge_attrs()),
                             [("movie", "rev_rates", "user"), ("user", "rates", "movie")])
            for cls in (NodeLoader, graphstore.pyg.NodeLoader):
                sampler = graphstore.pyg.NeighborSampler(servers, num_neighbors=[4, 2], seed=1)
                seen, edges = [], 0
                for batch in cls(stores, node_sampler=sampler, input_nodes=("user", users), batch_size=40):
                    self.assertIsInstance(batch, HeteroData)
                    user = batch["user"]
                    seen += user.n_id[:user.batch_size].tolist()
                    self.assertTrue(torch.equal(users[user.input_id], user.n_id[:user.batch_size]))
                    for t in ("user", "movie"):
                        self.assertTrue(torch.equal(batch[t].x, self.x[t][batch[t].n_id]))
                    for et, stored in self.edges.items():
                        if et not in batch:
                            continue
                        src, dst = batch[et[0]].n_id, batch[et[2]].n_id
                        ei = batch[et].edge_index
                        pairs = set(zip(src[ei[0]].tolist(), dst[ei[1]].tolist()))
                        self.assertLessEqual(pairs, stored, et)
                        edges += ei.shape[1]
                self.assertEqual(sorted(seen), users.tolist())
                self.assertGreater(edges, 1000)

    def test_temporal_draws_follow_pygs_time_attr_and_strategy(self):
        from torch_geometric.loader import NodeLoader
        servers = [self.timed.address]
        stores = (graphstore.pyg.FeatureStore(servers), graphstore.pyg.GraphStore(servers))
        users = torch.arange(0, 943, 2)
        # Seed times early in the ratings' span: a seed reaches only edges at or before its time.
        at = 874_724_710 + (torch.arange(users.numel()) % 50) * 86_400 * 3  # the first 150 of 215 days
        for strategy in ("uniform", "last"):
            for cls in (NodeLoader, graphstore.pyg.NodeLoader):
                sampler = graphstore.pyg.NeighborSampler(servers, [4, 2], time_attr="time",
                                                         temporal_strategy=strategy, seed=5)
                loader = cls(stores, node_sampler=sampler, input_nodes=("user", users), input_time=at, batch_size=60)
                edges = 0
                for batch in loader:
                    user = batch["user"]
                    self.assertTrue(torch.equal(user.seed_time, at[user.input_id]))
                    latest = int(user.seed_time.max())
                    for et, times in self.edge_time.items():
                        if et in batch and batch[et].e_id.numel():
                            self.assertLessEqual(int(times[batch[et].e_id].max()), latest, (strategy, et))
                            edges += batch[et].e_id.numel()
                self.assertGreater(edges, 100, strategy)


if __name__ == "__main__":
    gt.main("pyg_backend_test")
