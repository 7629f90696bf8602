"""The example trainers under torchrun against real graphstored processes: two ranks on CPU
(gloo, DistributedDataParallel) train to one trainer's validation accuracy, every rank takes the
same number of steps when the epoch's batches do not split evenly, and the link predictor's
ranks embed every node once between them."""

import os
import re
import subprocess
import sys
import unittest

import gs_testing as gt  # puts the package on sys.path

import torch

WORK = os.path.join(gt.TMP, "torchrun")
MOVIELENS = os.path.join(os.environ.get("GRAPHSTORE_SHARED_DATA", ""), "ml-100k")
SAGE = os.path.join(gt.ROOT, "python", "examples", "train_sage.py")
LINK = os.path.join(gt.ROOT, "python", "examples", "train_link_pred.py")


def torchrun(ranks):
    """torchrun on one host. torch 1.13's torchrun under Python 3.11 cannot parse its own default
    --redirects=0 (enum iteration changed), so it is given a value it can: stderr teed. One node
    needs no rendezvous of nodes: a static one (the address torchrun's workers meet at) spares
    the agent polling its c10d store every few seconds, which with both cores busy once broke
    ("RendezvousConnectionError ... Broken pipe") and ended a run that trained well."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--node_rank=0", "--rdzv_backend=static",
           "--master_addr=127.0.0.1", f"--master_port={gt.free_ports(1)[0]}", f"--nproc_per_node={ranks}",
           "--max_restarts=0"]
    if torch.__version__.startswith("1.") and sys.version_info >= (3, 11):
        cmd += ["--redirects=2", "--tee=2"]
    return cmd


def train(script, servers, *flags, ranks=1):
    """Runs an example, under torchrun (one host, `ranks` processes) when ranks > 1; its stdout."""
    cmd = [sys.executable, script] if ranks == 1 else torchrun(ranks) + [script]
    env = gt.package_env()
    env["OMP_NUM_THREADS"] = "1"
    r = subprocess.run(cmd + [f"--servers={servers}", *flags], capture_output=True, text=True, env=env,
                       timeout=600, check=False)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr[-4000:]}")
    return r.stdout


def epochs(out):
    """[(val acc, batches)] of each printed epoch line."""
    return [(float(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"val acc ([0-9.]+)\s+\((\d+) batches", out)]


class TorchrunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(WORK, exist_ok=True)
        cls.data = os.path.join(WORK, "sage")
        gt.run(gt.tool("graphstore-generate"), "--nodes=20000", "--feature_dim=16", "--classes=4", "--seed=5",
               f"--out={cls.data}")
        cls.daemon = gt.Daemon(cls.data, name="torchrun").wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_two_ranks_match_one_trainer(self):
        # Two ranks of batch B take, per step, the seeds one trainer of batch 2B takes (global
        # batches 2k and 2k+1 are its batch k): the same data per step, and the same accuracy.
        # Sampling, initialisation and dropout are seeded, so both runs are repeatable; the
        # figure compared is the mean validation accuracy of the last three epochs.
        one = train(SAGE, self.daemon.address, "--epochs=8", "--batch_size=128", "--seed=2")
        two = train(SAGE, self.daemon.address, "--epochs=8", "--batch_size=64", "--seed=2", ranks=2)
        self.assertIn("data parallel: 2 ranks (gloo)", two)
        self.assertEqual(two.count("epoch 7:"), 1, "only rank 0 prints")
        a1, a2 = epochs(one), epochs(two)
        self.assertEqual(len(a1), 8, one)
        self.assertEqual(len(a2), 8, two)
        # Every batch of 64 once over the ranks: two for each of the one trainer's batches of 128
        # (one fewer when the last of 128 holds no more than 64 seeds).
        self.assertIn(a2[0][1], (2 * a1[0][1], 2 * a1[0][1] - 1))
        last1, last2 = sum(a for a, _ in a1[-3:]) / 3, sum(a for a, _ in a2[-3:]) / 3
        self.assertGreater(last1, 0.8, f"the model did not learn:\n{one}")
        self.assertLessEqual(abs(last1 - last2), 0.01, f"one trainer:\n{one}\ntwo ranks:\n{two}")

    def test_uneven_batches_take_even_steps(self):
        # A batch size that splits the train seeds into an odd number of batches: rank 0 has one
        # more. Every batch is trained on once over the ranks and neither rank hangs at the
        # all-reduce of the last step (the run's timeout would fail the test).
        probe = train(SAGE, self.daemon.address, "--epochs=0")
        seeds = int(re.search(r"(\d+) train / \d+ val seeds", probe).group(1))
        size = next(b for b in range(100, 200) if -(-seeds // b) % 2 == 1)
        batches = -(-seeds // size)
        out = train(SAGE, self.daemon.address, "--epochs=2", f"--batch_size={size}", ranks=2)
        steps = re.search(r"(\d+) steps an epoch each", out)
        self.assertEqual(int(steps.group(1)), (batches + 1) // 2)
        self.assertEqual([b for _, b in epochs(out)], [batches, batches])

    def test_rank_without_a_batch_is_refused_by_name(self):
        # Fewer batches than ranks: a rank would have nothing to step on; it says so.
        env = gt.package_env()
        cmd = torchrun(2) + [SAGE, f"--servers={self.daemon.address}", "--epochs=1", "--batch_size=100000"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("an epoch needs at least one batch per rank", r.stderr)

    @unittest.skipIf(not os.path.exists(os.path.join(MOVIELENS, "u.data")), f"no MovieLens 100k at {MOVIELENS}")
    def test_link_predictor_ranks_embed_every_node_once(self):
        # Untrained (epoch 0 evaluation only): the embeddings come from the same initial weights
        # (DDP broadcasts rank 0's), so two ranks embedding half the nodes each and summing give
        # the one-process figures exactly.
        ml = os.path.join(WORK, "ml")
        gt.run(gt.tool("graphstore-movielens"), f"--input={MOVIELENS}", f"--out={ml}")
        d = gt.Daemon(ml, name="ml").wait_ready()
        try:
            one = train(LINK, d.address, "--epochs=1")
            two = train(LINK, d.address, "--epochs=1", ranks=2)
        finally:
            d.stop()
        before = lambda out: re.search(r"before training: (.*)", out).group(1)  # noqa: E731
        self.assertEqual(before(one), before(two))
        # Every train anchor once per epoch over the ranks, however their batches split.
        anchors = lambda out: int(re.search(r"epoch 0: .* (\d+) anchors in", out).group(1))  # noqa: E731
        total = int(re.search(r"(\d+) train anchors", one).group(1))
        self.assertEqual(anchors(one), total)
        self.assertEqual(anchors(two), total)


if __name__ == "__main__":
    gt.main("torchrun_test")
