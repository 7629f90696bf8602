"""graphstore.pyg against real graphstored processes, through stand-ins of PyG's classes (the
names, fields and calls of torch_geometric 2.4-2.7): the feature store reads each row from its
owner, the graph store describes the stored types, and a NodeLoader over (feature store, graph
store) with graphstore's sampler gives batches of the user's graph in PyG's direction."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import gs_testing as gt  # puts the package on sys.path

import torch

import graphstore
import graphstore.pyg

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyg_standin")


class Data:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class WithoutPygTest(unittest.TestCase):
    def test_the_module_imports_without_pyg_and_says_what_it_needs(self):
        code = ("import graphstore.pyg as p\n"
                "try:\n    p.FeatureStore\nexcept ImportError as e:\n    print('ImportError:', e)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if "pyg_standin" not in p))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertIn("ImportError: graphstore.pyg needs PyG (torch_geometric 2.4 to 2.7", out.stdout)


class PygBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, STANDIN)
        cls.dir = tempfile.mkdtemp(dir=gt.TMP)
        n, m = 3000, 20000
        g = torch.Generator().manual_seed(5)
        edge_index = torch.stack([torch.randint(0, n, (m,), generator=g), torch.randint(0, n, (m,), generator=g)])
        cls.data = Data(edge_index=edge_index, x=torch.randn(n, 12, generator=g), y=torch.randint(0, 7, (n,), generator=g),
                        num_nodes=n)
        out = os.path.join(cls.dir, "directed")
        graphstore.write_dataset(cls.data, out, num_partitions=2, method="random")
        cls.daemons = gt.start_cluster(out, 2)
        cls.servers = [d.address for d in cls.daemons]
        cls.edges = set(map(tuple, edge_index.t().tolist()))

    @classmethod
    def tearDownClass(cls):
        for d in cls.daemons:
            d.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        sys.path.remove(STANDIN)

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
        with self.assertRaisesRegex(KeyError, "attr_name 'edge_attr'"):
            fs[None, "edge_attr", torch.tensor([1])]
        with self.assertRaisesRegex(KeyError, "group_name 'paper' is not a node type"):
            fs["paper", "x", torch.tensor([1])]
        with self.assertRaisesRegex(TypeError, "read-only"):
            fs.put_tensor(torch.zeros(1, 12), None, "x", torch.tensor([0]))
        with self.assertRaisesRegex(TypeError, "num_neighbors: not a connection option"):
            graphstore.pyg.FeatureStore(self.servers, num_neighbors=[1])
        with self.assertRaisesRegex(ValueError, "disjoint=True"):
            graphstore.pyg.NeighborSampler(self.servers, [2], disjoint=True)

    def test_the_graph_store_describes_the_edge_types(self):
        from torch_geometric.data import GraphStore
        gs = graphstore.pyg.GraphStore(self.servers, max_edges=1000)
        self.assertIsInstance(gs, GraphStore)
        (attr,) = gs.get_all_edge_attrs()
        self.assertEqual(attr.size, (3000, 3000))
        self.assertEqual(attr.layout, "coo")
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


if __name__ == "__main__":
    gt.main("pyg_backend_test")
