"""A random partition's owners, computed in Python from docs/format.md's description of the deal
(nothing imported from the package's own code), against every entry of each partition's
book/<type>.partition.npy: written by write_dataset (two node types, each its own key), by
graphstore-partition in memory and by its bounded path, whose owners must be the same. A
client that reads the format alone can find any node's owner from the manifest's key."""

import json
import os
import shutil
import tempfile
import unittest

import gs_testing as gt  # puts the package on sys.path

import numpy as np

import graphstore

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(state):
    """The next state and output of SplitMix64."""
    state = (state + GOLDEN) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def type_key(seed, t):
    return splitmix64(seed ^ ((GOLDEN * (t + 1)) & M64))[1]


def owners(key, num_nodes, parts):
    """Every node's partition: its position in the keyed shuffle, mod parts."""
    if num_nodes <= 1:
        return [0] * num_nodes
    state, subkeys = key, []
    for _ in range(3):
        state, out = splitmix64(state)
        subkeys.append(out)
    k0, k1, k2 = subkeys
    bits = (num_nodes - 1).bit_length()
    mask, shift = (1 << bits) - 1, (bits + 1) // 2

    def step(x):
        x = (((x ^ k0) & M64) * 0xD6E8FEB86659FD93) & M64 & mask
        x ^= x >> shift
        x = (((x + k1) & M64) * GOLDEN) & M64 & mask
        x ^= x >> shift
        x = (((x ^ k2) & M64) * 0xC2B2AE3D27D4EB4F) & M64 & mask
        x ^= x >> shift
        return x

    out = []
    for g in range(num_nodes):
        x = step(g)
        while x >= num_nodes:
            x = step(x)
        out.append(x % parts)
    return out


class OwnerDealTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gs-deal-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check_partitions(self, out, parts, seed):
        """Every partition's manifest names each type's key (the seed's), and its book file holds
        the deal's owners; the ids each partition lists are the ones dealt to it."""
        for p in range(parts):
            pdir = os.path.join(out, f"part-{p}")
            with open(os.path.join(pdir, "manifest.json")) as f:
                manifest = json.load(f)
            self.assertEqual(manifest["partition_method"], "random")
            for t, nt in enumerate(manifest["node_types"]):
                key = int(nt["owner_deal"]["key"])
                self.assertEqual(key, type_key(seed, t), nt["name"])
                expected = owners(key, int(nt["num_nodes"]), parts)
                book = np.load(os.path.join(pdir, "book", nt["name"] + ".partition.npy"))
                self.assertEqual(book.tolist(), expected, nt["name"])
                ids = np.load(os.path.join(pdir, "nodes", nt["name"], "ids.npy"))
                self.assertEqual(ids.tolist(), [g for g, o in enumerate(expected) if o == p])

    def test_write_dataset_deals_each_type_by_its_key(self):
        rng = np.random.default_rng(3)
        users, items = 1000, 257
        data = {
            "nodes": {"user": {"x": rng.standard_normal((users, 4), dtype=np.float32)},
                      "item": {"x": rng.standard_normal((items, 4), dtype=np.float32)}},
            "edges": {("user", "buys", "item"): {"edge_index": np.stack([rng.integers(0, users, 3000),
                                                                          rng.integers(0, items, 3000)])}},
        }
        out = os.path.join(self.dir, "shop")
        graphstore.write_dataset(data, out, num_partitions=3, seed=17)
        self.check_partitions(out, 3, 17)
        # Partitioned by METIS instead: no key, the file alone says.
        metis = os.path.join(self.dir, "metis")
        graphstore.write_dataset(data, metis, num_partitions=2, method="metis")
        with open(os.path.join(metis, "part-0", "manifest.json")) as f:
            self.assertNotIn("owner_deal", json.dumps(json.load(f)))

    def test_the_partition_tool_deals_alike_in_memory_and_bounded(self):
        src = np.arange(0, 5000, dtype=np.int64)
        dst = (src * 7 + 3) % 5000
        np.save(os.path.join(self.dir, "src.npy"), src)
        np.save(os.path.join(self.dir, "dst.npy"), dst)
        edges = os.path.join(self.dir, "src.npy") + "," + os.path.join(self.dir, "dst.npy")
        for bounded in ("never", "always"):
            out = os.path.join(self.dir, bounded)
            gt.run(gt.tool("graphstore-partition"), f"--edges={edges}", "--partitions=4", "--method=random",
                   "--seed=9", f"--bounded={bounded}", f"--tmp_dir={self.dir}", f"--out={out}")
            self.check_partitions(out, 4, 9)


if __name__ == "__main__":
    unittest.main()
