"""Trains a heterogeneous GraphSAGE link predictor (anchor-based, as GiGL's ABLP) through
graphstore on a user -> item graph such as MovieLens 100k (graphstore-movielens): each batch
brings anchors, their positive and negative label items and the neighbourhood of all of them.
After every epoch it embeds every user and item through graphstore and reports validation
recall@20 and MRR beside a popularity baseline.

The evaluation, shared with client/examples/train_link_pred.cc (a test compares the two
baselines): each val user's val label items are the truth; the items the user rated in the
train split are excluded from its ranking; the popularity baseline ranks items by their number
of train ratings, ties by lower item id.

    PYTHONPATH=bazel-bin/python/site /usr/bin/python3 python/examples/train_link_pred.py \
        --servers=127.0.0.1:PORT[,127.0.0.1:PORT2] --epochs=25

Under `torchrun --nproc_per_node=K` (or `--nnodes`) each rank trains on its share of the global
batches in DistributedDataParallel, every rank the same number of steps, and embeds its share
of the users and items; the embeddings are summed over the ranks before the evaluation.
"""

import argparse
import sys
import time

import grpc
import torch
import torch.nn.functional as F

import graphstore
import graphstore.distributed
from graphstore.v1 import graphstore_pb2 as pb
from graphstore.v1 import graphstore_pb2_grpc as pb_grpc


def mean_over(h_src, edge_index, num_dst):
    """Mean of the source rows over each destination's incoming edges."""
    out = torch.zeros(num_dst, h_src.size(1))
    if edge_index is None or edge_index.size(1) == 0:
        return out
    src, dst = edge_index
    out.index_add_(0, dst, h_src.index_select(0, src))
    deg = torch.zeros(num_dst).index_add_(0, dst, torch.ones(dst.size(0)))
    return out / deg.clamp_min(1).unsqueeze(1)


class BipartiteSage(torch.nn.Module):
    """Two node types, one relation each way: h'_t = W_self h_t + W_neigh mean(h of the other
    type), plus a learned embedding per node."""

    def __init__(self, user_dim, item_dim, num_users, num_items, hidden):
        super().__init__()
        self.user_in, self.item_in = torch.nn.Linear(user_dim, hidden), torch.nn.Linear(item_dim, hidden)
        self.user_emb, self.item_emb = torch.nn.Embedding(num_users, hidden), torch.nn.Embedding(num_items, hidden)
        torch.nn.init.normal_(self.user_emb.weight, 0, 0.1)
        torch.nn.init.normal_(self.item_emb.weight, 0, 0.1)
        lin = lambda: torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(2))  # noqa: E731
        self.user_self, self.user_neigh, self.item_self, self.item_neigh = lin(), lin(), lin(), lin()

    def forward(self, batch, task):
        u, i = batch[task.user_type], batch[task.item_type]
        hu = self.user_in(u.x) + self.user_emb(u.n_id)
        hi = self.item_in(i.x) + self.item_emb(i.n_id)
        e_ui = batch[task.to_item].edge_index if task.to_item in batch else None
        e_iu = batch[task.to_user].edge_index if task.to_user in batch else None
        for layer in range(2):
            nu = self.user_self[layer](hu) + self.user_neigh[layer](mean_over(hi, e_iu, hu.size(0)))
            ni = self.item_self[layer](hi) + self.item_neigh[layer](mean_over(hu, e_ui, hi.size(0)))
            hu, hi = (F.relu(nu), F.relu(ni)) if layer == 0 else (nu, ni)
        return hu, hi


def bpr_loss(hu, hi, batch):
    """BPR over every (positive, negative) pair of each anchor of a batch."""
    anchor = hu.index_select(0, batch.anchors)
    pos_mask, neg_mask = batch.positive.ge(0), batch.negative.ge(0)
    pos = hi.index_select(0, batch.positive.clamp_min(0).flatten()).view(*batch.positive.shape, -1)
    neg = hi.index_select(0, batch.negative.clamp_min(0).flatten()).view(*batch.negative.shape, -1)
    sp = (pos * anchor.unsqueeze(1)).sum(-1)
    sn = (neg * anchor.unsqueeze(1)).sum(-1)
    pair_mask = (pos_mask.unsqueeze(2) & neg_mask.unsqueeze(1)).float()
    pair_loss = -F.logsigmoid(sp.unsqueeze(2) - sn.unsqueeze(1))
    return (pair_loss * pair_mask).sum() / pair_mask.sum().clamp_min(1)


def labels(servers, split, task):
    """Label items per anchor of a split, read from every server with the generated stubs."""
    out = {}
    for address in servers:
        with grpc.insecure_channel(address) as channel:
            r = pb_grpc.GraphStoreStub(channel).GetAblpInput(pb.GetAblpInputRequest(
                split=split, node_type=task.user_type, supervision_edge_type="__".join(task.supervision)), timeout=30)
        anchors = torch.frombuffer(bytearray(r.anchors.data), dtype=torch.int64)
        pos = torch.frombuffer(bytearray(r.positive_labels.data), dtype=torch.int64).view(len(anchors), -1)
        for a, row in zip(anchors.tolist(), pos.tolist()):
            out.setdefault(a, []).extend(p for p in row if p >= 0)
    return out


def recall_mrr(scores, truth, k=20):
    """recall@k and MRR of scores [users, items] against truth {user: [items]}."""
    top = scores.topk(k, 1).indices
    order = scores.argsort(1, descending=True)
    rank_of = torch.empty_like(order).scatter_(1, order, torch.arange(scores.size(1)).expand_as(order).contiguous())
    recall = mrr = 0.0
    for u, items in truth.items():
        want = set(items)
        recall += len(want.intersection(top[u].tolist())) / min(k, len(want))
        mrr += 1.0 / (int(rank_of[u, list(want)].min()) + 1)
    n = max(len(truth), 1)
    return recall / n, mrr / n


class Task:
    def __init__(self, args):
        self.user_type, self.item_type = args.user_type, args.item_type
        self.supervision = (args.user_type, args.relation, args.item_type)
        rev = args.relation[4:] if args.relation.startswith("rev_") else "rev_" + args.relation
        self.reverse = (args.item_type, rev, args.user_type)
        # Keys of batch edges in message-passing direction: messages to items come from users.
        self.to_item, self.to_user = self.supervision, self.reverse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", required=True, help="comma-separated host:port of every server, in partition order")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--batch_size", type=int, default=64, help="anchors per batch")
    p.add_argument("--fanouts", default="10,5", help="neighbours per hop and edge type")
    p.add_argument("--negatives", type=int, default=16, help="generated negatives per anchor")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--user_type", default="user")
    p.add_argument("--item_type", default="movie")
    p.add_argument("--relation", default="rates", help="supervision relation: user__REL__item")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--feature_encoding", default="")
    p.add_argument("--shutdown_servers", action="store_true")
    return p.parse_args(argv)


def seen_and_popularity(servers, task, num_users, num_items):
    """The train labels as a [users, items] mask, and each item's train popularity (ties by
    lower id)."""
    seen = torch.zeros(num_users, num_items, dtype=torch.bool)
    popularity = torch.zeros(num_items, dtype=torch.float64)
    for u, items in labels(servers, "train", task).items():
        seen[u, items] = True
        popularity.index_add_(0, torch.tensor(items), torch.ones(len(items), dtype=torch.float64))
    return seen, (popularity - torch.arange(num_items, dtype=torch.float64) / (num_items + 1)).float()


def embed_all(ddp, model, embed, task, epoch, sizes, hidden):
    """Every user's and item's embedding, from one epoch of the embedding loaders (each rank
    embeds its share; the sum over the ranks holds every row once)."""
    model.eval()
    h = {t: torch.zeros(n, hidden) for t, n in sizes.items()}
    with torch.no_grad():
        for t, loader in embed.items():
            for batch in loader.epoch(epoch):
                hu, hi = model(batch, task)
                s = batch[t].batch_size
                h[t].index_copy_(0, batch[t].n_id[:s], (hu if t == task.user_type else hi)[:s])
    for t in h:
        ddp.all_sum_(h[t])
    return h


def train_epoch(ddp, model, opt, train, task, epoch):
    """One epoch of BPR over the train anchors: mean loss, batches and anchors (over all ranks),
    seconds. Every rank takes the same number of steps (weight 0: a repeat where a rank's share
    ran out)."""
    model.train()
    start, loss_sum, batches, anchors = time.monotonic(), 0.0, 0, 0
    for batch, weight in ddp.even_steps(train, epoch):
        hu, hi = model(batch, task)
        loss = bpr_loss(hu, hi, batch)
        opt.zero_grad()
        (loss * weight).backward()
        opt.step()
        if weight:
            loss_sum += loss.item()
            batches += 1
            anchors += batch.anchors.numel()
    loss_sum, batches, anchors = ddp.all_sum([loss_sum, batches, anchors])
    return loss_sum / max(batches, 1), int(batches), int(anchors), time.monotonic() - start


def main(argv=None):
    args = parse_args(argv)
    ddp = graphstore.distributed.Process.from_environment()
    say = print if ddp.leader else (lambda *a, **k: None)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    task = Task(args)
    servers = args.servers.split(",")
    fanouts = [int(f) for f in args.fanouts.split(",")]
    common = dict(num_neighbors={task.supervision: fanouts, task.reverse: fanouts}, seed=args.seed,
                  labels=False, feature_encoding=args.feature_encoding, rank=ddp.rank, world_size=ddp.world_size)
    try:
        train = graphstore.Loader(servers, batch_size=args.batch_size, shuffle=True,
                                  ablp=graphstore.AblpInput(task.supervision, split="train"),
                                  num_negatives=args.negatives, backend_key="train_link_pred.py/train",
                                  worker_key=f"train_link_pred.py:train:{ddp.rank}", **common)
        embed = {t: graphstore.Loader(servers, input_nodes=t, batch_size=256, split="",
                                      backend_key="train_link_pred.py/embed",
                                      worker_key=f"train_link_pred.py:{t}:{ddp.rank}", **common)
                 for t in (task.user_type, task.item_type)}
        types = {t.name: t for t in train.meta.node_types}
        num_users, num_items = types[task.user_type].num_nodes, types[task.item_type].num_nodes
        val = labels(servers, "val", task)
        seen, popularity = seen_and_popularity(servers, task, num_users, num_items)
        masked = lambda s: s.masked_fill(seen, -1e9)  # noqa: E731
        pop_recall, pop_mrr = recall_mrr(masked(popularity.expand(num_users, -1).clone()), val)
        say(f"dataset '{train.meta.dataset_name}': {num_users} {task.user_type}, {num_items} {task.item_type}; "
              f"{train.num_seeds} train anchors, {len(val)} val users, {len(servers)} server(s)")
        say(f"popularity baseline: val recall@20 {pop_recall:.4f}  MRR {pop_mrr:.4f}", flush=True)

        model = ddp.wrap(BipartiteSage(types[task.user_type].features.dim, types[task.item_type].features.dim,
                                       num_users, num_items, args.hidden))
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        sizes = {task.user_type: num_users, task.item_type: num_items}

        def evaluate(epoch):
            h = embed_all(ddp, getattr(model, "module", model), embed, task, epoch, sizes, args.hidden)
            return recall_mrr(masked(h[task.user_type] @ h[task.item_type].t()), val)

        r0, m0 = evaluate(0)
        say(f"before training: val recall@20 {r0:.4f}  MRR {m0:.4f}", flush=True)
        for epoch in range(args.epochs):
            loss, batches, anchors, secs = train_epoch(ddp, model, opt, train, task, epoch)
            recall, mrr = evaluate(epoch + 1)
            say(f"epoch {epoch}: loss {loss:.4f}  val recall@20 {recall:.4f}  MRR {mrr:.4f}  "
                  f"(popularity {pop_recall:.4f})  {anchors} anchors in {batches} batches, {batches / secs:.1f} batches/s", flush=True)
        for loader in embed.values():
            loader.close()
        ddp.barrier()  # every rank done before the servers go
        if args.shutdown_servers and ddp.leader:
            train.shutdown_servers()
            say("asked the servers to shut down")
        else:
            train.close()
    except graphstore.GraphstoreError as e:
        print(f"train_link_pred.py (rank {ddp.rank}): {e}", file=sys.stderr)
        return 1
    finally:
        ddp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
