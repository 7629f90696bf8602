"""graphstore.write_dataset against real graphstored processes: a graph written from Python in the
shapes PyG users hold (Data, HeteroData, dicts of torch or numpy arrays) is served, and the Loader
gives back the rows, labels and edges that were given; input the format refuses is a ValueError
that names the type and the field."""

import os
import shutil
import tempfile
import unittest

import gs_testing as gt  # puts the package on sys.path

import numpy as np
import torch

import graphstore

CORA = os.path.join(os.environ.get("GRAPHSTORE_SHARED_DATA", ""), "cora", "cora.cites")


class Storage:
    """A stand-in of PyG's NodeStorage / EdgeStorage: attributes, absent ones raise."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class Data(Storage):
    """A stand-in of torch_geometric.data.Data: the same attribute names."""


class HeteroData:
    """A stand-in of torch_geometric.data.HeteroData: node_types, edge_types and data[type]."""

    def __init__(self):
        self._stores = {}

    def __getitem__(self, key):
        return self._stores.setdefault(key, Storage())

    @property
    def node_types(self):
        return [k for k in self._stores if isinstance(k, str)]

    @property
    def edge_types(self):
        return [k for k in self._stores if isinstance(k, tuple)]


def random_graph(num_nodes, num_edges, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=g)
    return torch.stack([src, dst])


def serve(out, parts):
    if parts == 1:
        return [gt.Daemon(out).wait_ready()]
    return gt.start_cluster(out, parts)


class WriteDatasetTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=gt.TMP)
        self.daemons = []

    def tearDown(self):
        for d in self.daemons:
            d.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def check_batches(self, loader, x, y, edges, seeds, node_type=None, edge_type=None):
        """Every batch's rows and labels are the given ones of its n_id, every edge_index column
        (source, target) is a given edge (source, target), and the seeds are those asked for."""
        seen = []
        for batch in loader.epoch(0):
            store = batch[node_type] if node_type else batch
            n_id = store.n_id
            seen += n_id[:store.batch_size].tolist()
            if x is not None:
                self.assertTrue(torch.equal(store.x, x[n_id]))
            if y is not None:
                self.assertTrue(torch.equal(store.y, y[n_id]))
            e = batch[edge_type] if edge_type else batch
            self.assertGreater(e.edge_index.shape[1], 0)
            for src, dst in e.edge_index.t().tolist():
                pair = (n_id[src].item(), n_id[dst].item())
                self.assertTrue(pair in edges, f"{pair} is not a given edge")
        self.assertEqual(sorted(seen), sorted(seeds))

    def test_a_data_round_trips_through_two_servers(self):
        # Two communities of 300 nodes, one edge in twenty between them: METIS finds them, a
        # random assignment cuts about half of the edges.
        n, m = 600, 4000
        g = torch.Generator().manual_seed(1)
        side = torch.randint(0, 2, (m,), generator=g)
        src = torch.randint(0, 300, (m,), generator=g) + 300 * side
        across = torch.rand(m, generator=g) < 0.05
        dst = torch.randint(0, 300, (m,), generator=g) + 300 * torch.where(across, 1 - side, side)
        # Every fourth edge weighs nothing: a weighted draw never takes it.
        weight = torch.rand(m, generator=g) + 0.5
        weight[::4] = 0.0
        data = Data(edge_index=torch.stack([src, dst]), x=torch.randn(n, 8), y=torch.randint(0, 5, (n,)),
                    edge_weight=weight, num_nodes=n)
        order = torch.randperm(n, generator=g)
        for name, part in (("train", order[:400]), ("val", order[400:500]), ("test", order[500:])):
            mask = torch.zeros(n, dtype=torch.bool)
            mask[part] = True
            setattr(data, f"{name}_mask", mask)
        crossing = int(across.sum())
        random_cut = graphstore.write_dataset(data, os.path.join(self.dir, "random"), num_partitions=2,
                                              method="random")["cut_edges"]
        out = os.path.join(self.dir, "data")
        report = graphstore.write_dataset(data, out, num_partitions=2, method="metis", name="from-python")
        self.assertEqual(report["num_nodes"], n)
        self.assertEqual(report["num_edges"], m)
        self.assertLessEqual(report["cut_edges"], 2 * crossing, f"METIS cut {report['cut_edges']}")
        self.assertGreater(random_cut, 0.35 * m, f"random cut {random_cut}")
        self.daemons = serve(out, 2)
        edges = set(map(tuple, data.edge_index.t().tolist()))
        with graphstore.Loader([d.address for d in self.daemons], [5, 3], batch_size=64) as loader:
            self.check_batches(loader, data.x, data.y, edges, order[:400].tolist())
        with graphstore.Loader([d.address for d in self.daemons], [5], batch_size=64, split="test",
                               weighted=True) as loader:
            self.check_batches(loader, data.x, data.y, edges, order[500:].tolist())
        # Each edge keeps its id (its column in edge_index) and its weight: the ids name the
        # very edges drawn, and no weightless edge is among them though they are a quarter.
        drawn = []
        with graphstore.Loader([d.address for d in self.daemons], [-1], batch_size=64, edge_ids=True) as loader:
            for batch in loader.epoch(0):
                self.assertTrue(torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index]))
        with graphstore.Loader([d.address for d in self.daemons], [5], batch_size=64, edge_ids=True,
                               weighted=True) as loader:
            for batch in loader.epoch(0):
                self.assertTrue(torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index]))
                drawn.append(batch.e_id)
        drawn = torch.cat(drawn)
        self.assertGreater(drawn.numel(), 1000)
        self.assertTrue(bool((weight[drawn] > 0).all()), "a weightless edge was drawn")

    def test_a_hetero_data_round_trips_with_reverse_edges(self):
        data = HeteroData()
        data["user"].x = torch.randn(300, 4)
        data["user"].y = torch.randint(-1, 3, (300,))
        data["user"].train_mask = torch.arange(300) % 3 == 0
        data["item"].num_nodes = 200
        data["item"].x = torch.randn(200, 6)
        buys = torch.stack([torch.randint(0, 300, (1500,)), torch.randint(0, 200, (1500,))])
        data["user", "buys", "item"].edge_index = buys
        data["user", "buys", "item"].edge_attr = torch.rand(1500, 2)
        out = os.path.join(self.dir, "hetero")
        graphstore.write_dataset(data, out, reverse_edges=True)
        self.daemons = serve(out, 1)
        fan = {("user", "buys", "item"): [4, 4], ("item", "rev_buys", "user"): [4, 4]}
        attr = data["user", "buys", "item"].edge_attr
        buys_seen = 0
        with graphstore.Loader([self.daemons[0].address], fan, input_nodes="user", batch_size=25, edge_ids=True,
                               edge_features=True) as loader:
            seeds = []
            for batch in loader.epoch(0):
                u, i = batch["user"], batch["item"]
                seeds += u.n_id[:u.batch_size].tolist()
                self.assertTrue(torch.equal(u.x, data["user"].x[u.n_id]))
                self.assertTrue(torch.equal(u.y, data["user"].y[u.n_id]))
                self.assertTrue(torch.equal(i.x, data["item"].x[i.n_id]))
                given = set(map(tuple, buys.t().tolist()))
                e = batch["user", "buys", "item"]
                # Each drawn buy carries its own id and attributes as written.
                buys_seen += e.e_id.numel()
                if e.e_id.numel() > 0:
                    self.assertTrue(torch.equal(buys[:, e.e_id], torch.stack([u.n_id[e.edge_index[0]],
                                                                            i.n_id[e.edge_index[1]]])))
                    self.assertTrue(torch.equal(e.edge_attr, attr[e.e_id]))
                for key in batch.edge_types:
                    e = batch[key]
                    src_t, _, dst_t = key
                    for a, b in e.edge_index.t().tolist():
                        pair = (batch[src_t].n_id[a].item(), batch[dst_t].n_id[b].item())
                        # Either relation is a buy: user -> item, or its reverse item -> user.
                        self.assertIn(pair if src_t == "user" else pair[::-1], given)
            self.assertEqual(sorted(seeds), list(range(0, 300, 3)))
            self.assertGreater(buys_seen, 100)

    def test_dicts_of_numpy_arrays_and_ids(self):
        n = 200
        ei = random_graph(n, 900, 3).numpy()
        x = np.random.default_rng(4).standard_normal((n, 3)).astype(np.float64)
        graph = {"edge_index": ei, "x": x, "y": np.arange(n) % 4, "train_idx": np.arange(0, n, 2)}
        out = os.path.join(self.dir, "dict")
        graphstore.write_dataset(graph, out, num_partitions=2, method="stream", edge_dir="out")
        self.daemons = serve(out, 2)
        edges = set(map(tuple, ei.T.tolist()))
        # edge_dir "out": a hop follows an edge from its source to its destination, and the batch
        # carries it reversed (messages flow from the destination drawn to the source that drew it).
        reverse = {(b, a) for a, b in edges}
        with graphstore.Loader([d.address for d in self.daemons], [4], batch_size=32) as loader:
            self.check_batches(loader, torch.from_numpy(x).float(), torch.arange(n) % 4, reverse,
                               list(range(0, n, 2)))

    def test_a_directed_data_comes_back_as_pygs_graph(self):
        """A directed graph written with the defaults: every batch edge is a given edge in PyG's
        direction (edge_index[0] -> edge_index[1]), and with fanout -1 each seed draws exactly its
        in-edges, as PyG's NeighborLoader does, on one server and on 2-partition clusters."""
        n, m = 1500, 5000
        ei = random_graph(n, m, 11)
        in_degree = torch.bincount(ei[1], minlength=n)
        out_degree = torch.bincount(ei[0], minlength=n)
        self.assertGreater(int((in_degree != out_degree).sum()), n // 2)  # directed: the two differ
        edges = set(map(tuple, ei.t().tolist()))
        data = Data(edge_index=ei, x=torch.randn(n, 4), y=torch.arange(n) % 3, num_nodes=n,
                    train_idx=torch.arange(0, n, 3))
        for parts, method in ((1, "random"), (2, "random"), (2, "metis"), (2, "stream")):
            with self.subTest(parts=parts, method=method):
                out = os.path.join(self.dir, f"directed-{parts}-{method}")
                graphstore.write_dataset(data, out, num_partitions=parts, method=method)
                self.daemons = serve(out, parts)
                seen = []
                with graphstore.Loader([d.address for d in self.daemons], [-1, 3], batch_size=100) as loader:
                    for batch in loader.epoch(0):
                        n_id, k = batch.n_id, batch.batch_size
                        seen += n_id[:k].tolist()
                        src, dst = batch.edge_index
                        for pair in zip(n_id[src].tolist(), n_id[dst].tolist()):
                            self.assertTrue(pair in edges, f"{pair} is not a given edge")
                        # The first hop's edges end at the seeds: each seed's count is its in-degree.
                        hop = int(batch.num_sampled_edges[0])
                        drawn = torch.bincount(dst[:hop], minlength=k)[:k]
                        self.assertTrue(torch.equal(drawn, in_degree[n_id[:k]]))
                        self.assertTrue(torch.equal(batch.x, data.x[n_id]))
                self.assertEqual(sorted(seen), list(range(0, n, 3)))
                for d in self.daemons:
                    d.stop()
                self.daemons = []

    @unittest.skipUnless(os.path.exists(CORA), "needs cora/cora.cites (GRAPHSTORE_SHARED_DATA)")
    def test_an_edge_lists_own_ids_come_back_through_raw_ids(self):
        """Cora's paper ids are sparse (35 ... 1155073): graphstore-partition numbers each node
        type's ids densely in ascending order and keeps the file's id of each global id in
        book/<type>.raw_ids.npy, which every partition holds alike. Through it a user's ids go in
        (seeds) and come back out (n_id, every edge) on a 2-partition cluster. With the tool's
        default edge_dir "out" each seed draws exactly the papers it cites in the file, and the
        batch carries each citation from the cited paper to the citing seed."""
        cites = []
        with open(CORA) as f:
            for line in f:
                cited, citing = map(int, line.split()[:2])
                cites.append((citing, cited))
        given = set(cites)
        out = os.path.join(self.dir, "cora")
        gt.run(gt.tool("graphstore-partition"), f"--edges={CORA}", "--swap_columns", "--partitions=2",
               "--method=random", f"--out={out}")
        raw = [np.load(os.path.join(out, f"part-{k}", "book", "node.raw_ids.npy")) for k in range(2)]
        self.assertTrue(np.array_equal(raw[0], raw[1]))
        raw = raw[0]
        self.assertTrue(bool((np.diff(raw) > 0).all()))  # ascending: a file id's global id is its rank
        self.assertEqual(set(raw.tolist()), {p for e in cites for p in e})
        cited_by = {}
        for citing, cited in cites:
            cited_by.setdefault(citing, set()).add(cited)
        # Seeds named by the file's ids: the papers citing the most, some citing one, one citing none.
        ranked = sorted(cited_by, key=lambda p: (-len(cited_by[p]), p))
        none = sorted(set(raw.tolist()) - set(cited_by))[:1]
        want = ranked[:40] + ranked[-23:] + none
        seeds = torch.from_numpy(np.searchsorted(raw, want))
        self.assertEqual(raw[seeds.numpy()].tolist(), want)
        self.daemons = serve(out, 2)
        got, mapped = [], []
        with graphstore.Loader([d.address for d in self.daemons], [-1], input_nodes=seeds, batch_size=16,
                               shuffle=False, node_features=False, labels=False) as loader:
            for batch in loader.epoch(0):
                k = batch.batch_size
                ids = raw[batch.n_id.numpy()]
                got += ids[:k].tolist()
                src, dst = batch.edge_index.numpy()
                drawn = {}
                for a, b in zip(ids[src].tolist(), ids[dst].tolist()):
                    self.assertTrue((b, a) in given, f"{b} -> {a} is not a citation of the file")
                    drawn.setdefault(b, set()).add(a)
                for paper in ids[:k].tolist():
                    self.assertEqual(drawn.get(paper, set()), cited_by.get(paper, set()), f"paper {paper}")
                mapped.append(ids)
        self.assertEqual(got, want)
        # The loader does both itself when given the dataset's directory: the same batches, their
        # n_id already in the file's ids.
        servers = [d.address for d in self.daemons]
        with graphstore.Loader(servers, [-1], input_nodes=want, batch_size=16, shuffle=False, node_features=False,
                               labels=False, raw_ids=out) as loader:
            batches = [batch.n_id.numpy() for batch in loader.epoch(0)]
        self.assertEqual(len(batches), len(mapped))
        for a, b in zip(batches, mapped):
            self.assertTrue(np.array_equal(a, b))
        with self.assertRaisesRegex(graphstore.GraphstoreError, r"seeds\[1\]=36 is no id"):
            graphstore.Loader(servers, [-1], input_nodes=[35, 36], raw_ids=out)
        with self.assertRaisesRegex(ValueError, "bool mask"):
            graphstore.Loader(servers, [-1], input_nodes=torch.ones(len(raw), dtype=torch.bool), raw_ids=out)

    def test_a_directed_hetero_data_comes_back_as_pygs_graph(self):
        """A HeteroData without reverse edges: item seeds draw the users that bought them along
        (user, buys, item), in PyG's direction; user seeds draw nothing. With edge_dir="out" the
        same hop goes from users to items and the batch names it (item, rev_buys, user)."""
        data = HeteroData()
        data["user"].x = torch.randn(300, 4)
        data["user"].y = torch.arange(300) % 2
        data["user"].train_mask = torch.ones(300, dtype=torch.bool)
        data["item"].x = torch.randn(200, 6)
        data["item"].y = torch.arange(200) % 3
        data["item"].train_mask = torch.ones(200, dtype=torch.bool)
        buys = torch.stack([torch.randint(0, 300, (1200,)), torch.randint(0, 200, (1200,))])
        data["user", "buys", "item"].edge_index = buys
        given = set(map(tuple, buys.t().tolist()))
        for edge_dir, seeds, key, degree in (
                ("in", "item", ("user", "buys", "item"), torch.bincount(buys[1], minlength=200)),
                ("out", "user", ("item", "rev_buys", "user"), torch.bincount(buys[0], minlength=300))):
            with self.subTest(edge_dir=edge_dir):
                out = os.path.join(self.dir, f"hetero-{edge_dir}")
                graphstore.write_dataset(data, out, num_partitions=2, method="random",
                                         **({} if edge_dir == "in" else {"edge_dir": "out"}))
                self.daemons = serve(out, 2)
                fan = {("user", "buys", "item"): [-1]}
                with graphstore.Loader([d.address for d in self.daemons], fan, input_nodes=seeds,
                                       batch_size=40) as loader:
                    batches = 0
                    for batch in loader.epoch(0):
                        batches += 1
                        self.assertEqual(list(batch.edge_types), [key])
                        s = batch[seeds]
                        src_t, _, dst_t = key
                        src, dst = batch[key].edge_index
                        a, b = batch[src_t].n_id[src], batch[dst_t].n_id[dst]
                        pairs = zip(a.tolist(), b.tolist()) if src_t == "user" else zip(b.tolist(), a.tolist())
                        for pair in pairs:
                            self.assertTrue(pair in given, f"{pair} is not a given buy")
                        drawn = torch.bincount(dst, minlength=s.batch_size)[:s.batch_size]
                        self.assertTrue(torch.equal(drawn, degree[s.n_id[:s.batch_size]]))
                    self.assertGreater(batches, 0)
                for d in self.daemons:
                    d.stop()
                self.daemons = []

    def test_input_the_format_refuses_names_the_type_and_field(self):
        out = os.path.join(self.dir, "bad")
        ei = torch.tensor([[0, 1], [1, 2]])
        cases = [
            ({"edge_index": torch.tensor([[0, 9], [1, 2]]), "num_nodes": 5}, {},
             "edge type 'node__to__node': edge 1 (9 -> 2) is out of range"),
            ({"edge_index": ei.float()}, {}, "edge_index: is torch.float32, expected integers"),
            ({"edge_index": ei, "y": torch.zeros(3, 2, dtype=torch.long)}, {}, "node type 'node': y must be 1-D"),
            ({"edge_index": ei, "num_nodes": 3, "x": torch.zeros(4, 2)}, {},
             "x must be [num_nodes, features] = [3, F]"),
            # Three nodes and three edges: whose times are these?
            ({"edge_index": torch.tensor([[0, 1, 2], [1, 2, 0]]), "time": torch.tensor([1, 2, 3])}, {},
             "name it node_time or edge_time"),
            ({"edge_index": ei, "colour": ei}, {}, "unknown keys ['colour']"),
            ({"edge_index": ei, "edge_weight": torch.tensor([1.0, -1.0])}, {}, "edge weight 1 is -1"),
            ({"edges": {("a", "b"): {"edge_index": ei}}}, {}, "is not a (src, relation, dst) tuple"),
            ({"edge_index": ei}, {"method": "kmeans"}, "method must be"),
            ({"edge_index": ei}, {"num_partitions": 0}, "num_partitions must be in [1, 4096]"),
            ([1, 2, 3], {}, "data must be a PyG Data or HeteroData"),
        ]
        for data, kwargs, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(ValueError) as cm:
                    graphstore.write_dataset(data, out, **kwargs)
                self.assertIn(message, str(cm.exception))


if __name__ == "__main__":
    gt.main("write_dataset_test")
