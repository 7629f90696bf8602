"""Writing a graph held in Python as graphstore partition directories.

``write_dataset`` takes what a PyG user holds — a ``Data``, a ``HeteroData``, or plain dicts of
torch tensors or numpy arrays — and writes the directories ``graphstored`` serves, through the
same C++ writer, checks and partitioners as ``graphstore-partition``. PyG's classes are read by
the attributes they define, so PyG itself need not be installed.
"""

from typing import Any, Dict, Optional, Tuple

import torch
import torch.utils.dlpack

from graphstore import _graphstore

HOMOGENEOUS_NODE = "node"
HOMOGENEOUS_EDGE = ("node", "to", "node")
SPLITS = ("train", "val", "test")
_NODE_KEYS = {"x", "y", "num_nodes", "time", "node_time"} | {f"{s}_mask" for s in SPLITS} | {f"{s}_idx" for s in SPLITS}
_EDGE_KEYS = {"edge_index", "edge_attr", "edge_weight", "time", "edge_time"}


def _tensor(value, dtype, what):
    try:
        t = torch.as_tensor(value)
    except Exception as e:  # a list of lists, a string, ...
        raise ValueError(f"{what}: not an array ({e})") from None
    if t.dtype == torch.bool and dtype != torch.bool:
        raise ValueError(f"{what}: is bool, expected numbers")
    if dtype == torch.int64 and t.is_floating_point():
        raise ValueError(f"{what}: is {t.dtype}, expected integers")
    return t.detach().to(device="cpu", dtype=dtype).contiguous()


def _capsule(value, dtype, what):
    if value is None:
        return None
    return torch.utils.dlpack.to_dlpack(_tensor(value, dtype, what))


def _get(store, key):
    """An attribute of a PyG storage or a key of a dict; None when absent."""
    if isinstance(store, dict):
        return store.get(key)
    try:
        return getattr(store, key)
    except (AttributeError, KeyError):
        return None


def _num_nodes(store, name, incident):
    n = _get(store, "num_nodes")
    if n is not None:
        return int(n)
    for key in ("x", "y", "node_time"):
        v = _get(store, key)
        if v is not None:
            return int(torch.as_tensor(v).shape[0])
    for mask in (f"{s}_mask" for s in SPLITS):
        v = _get(store, mask)
        if v is not None:
            return int(torch.as_tensor(v).shape[0])
    # As PyG infers it: one more than the largest id an edge names (`incident`: each edge_index
    # naming the type, with the rows that do).
    largest = -1
    for index, rows in incident:
        t = torch.as_tensor(index)
        for r in rows:
            if t.dim() == 2 and t.shape[0] == 2 and t.shape[1] > 0:
                largest = max(largest, int(t[r].max()))
    if largest < 0:
        raise ValueError(f"node type '{name}': no num_nodes, x, y or edges to count its nodes from")
    return largest + 1


def _splits(store, name, num_nodes):
    out = {}
    for s in SPLITS:
        mask, idx = _get(store, f"{s}_mask"), _get(store, f"{s}_idx")
        if mask is not None and idx is not None:
            raise ValueError(f"node type '{name}': give {s}_mask or {s}_idx, not both")
        if mask is not None:
            m = torch.as_tensor(mask)
            if m.dtype != torch.bool or m.dim() != 1 or m.shape[0] != num_nodes:
                raise ValueError(f"node type '{name}': {s}_mask must be a bool vector of num_nodes ({num_nodes})")
            out[s] = torch.utils.dlpack.to_dlpack(m.nonzero().flatten().contiguous())
        elif idx is not None:
            out[s] = _capsule(idx, torch.int64, f"node type '{name}': {s}_idx")
    return out


def _node(store, name, num_nodes, time_key):
    x, y = _get(store, "x"), _get(store, "y")
    if y is not None and torch.as_tensor(y).dim() != 1:
        raise ValueError(f"node type '{name}': y must be 1-D class ids (-1 for none), got shape "
                         f"{tuple(torch.as_tensor(y).shape)}")
    if x is not None and torch.as_tensor(x).dim() == 1:
        x = torch.as_tensor(x).unsqueeze(1)
    return {
        "name": name,
        "num_nodes": num_nodes,
        "x": _capsule(x, torch.float32, f"node type '{name}': x"),
        "y": _capsule(y, torch.int64, f"node type '{name}': y"),
        "time": _capsule(_get(store, time_key) if time_key else None, torch.int64, f"node type '{name}': time"),
        "splits": _splits(store, name, num_nodes),
    }


def _edge(store, et, time_key):
    src, rel, dst = et
    what = f"edge type '{src}__{rel}__{dst}'"
    index = _get(store, "edge_index")
    if index is None:
        raise ValueError(f"{what}: no edge_index")
    weight = _get(store, "edge_weight")
    return {
        "src": src, "rel": rel, "dst": dst,
        "edge_index": _capsule(index, torch.int64, f"{what}: edge_index"),
        "edge_attr": _capsule(_get(store, "edge_attr"), torch.float32, f"{what}: edge_attr"),
        "edge_weight": _capsule(weight, torch.float32, f"{what}: edge_weight"),
        "time": _capsule(_get(store, time_key) if time_key else None, torch.int64, f"{what}: time"),
    }


def _own_time(store, name):
    """The attribute holding a hetero store's times: `name` (node_time, edge_time), else PyG's `time`."""
    for key in (name, "time"):
        if _get(store, key) is not None:
            return key
    return None


def _time_keys(store, num_nodes, num_edges, what):
    """Which of a homogeneous store's attributes are node times and which edge times: node_time and
    edge_time by name; PyG's `time` by its length."""
    node_key = "node_time" if _get(store, "node_time") is not None else None
    edge_key = "edge_time" if _get(store, "edge_time") is not None else None
    t = _get(store, "time")
    if t is not None:
        n = torch.as_tensor(t).shape[0]
        if n == num_edges and n != num_nodes:
            edge_key = edge_key or "time"
        elif n == num_nodes and n != num_edges:
            node_key = node_key or "time"
        else:
            raise ValueError(f"{what}: time has {n} entries for {num_nodes} nodes and {num_edges} edges; "
                             "name it node_time or edge_time")
    return node_key, edge_key


def _gather(data) -> Dict[str, Any]:
    """The node and edge types of `data` with their tensors as DLPack capsules."""
    if isinstance(data, dict) and ("nodes" in data or "edges" in data):
        nodes, edges = data.get("nodes", {}), data.get("edges", {})
        hetero = True
    elif hasattr(data, "node_types") and hasattr(data, "edge_types") and not isinstance(data, dict):
        nodes = {nt: data[nt] for nt in data.node_types}
        edges = {tuple(et): data[et] for et in data.edge_types}
        hetero = True
    elif _get(data, "edge_index") is not None:
        unknown = set(data) - _NODE_KEYS - _EDGE_KEYS if isinstance(data, dict) else set()
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}; a homogeneous graph takes {sorted(_NODE_KEYS | _EDGE_KEYS)}")
        nodes, edges, hetero = {HOMOGENEOUS_NODE: data}, {HOMOGENEOUS_EDGE: data}, False
    else:
        raise ValueError("data must be a PyG Data or HeteroData, or a dict with edge_index (one node and edge type) "
                         "or with 'nodes' and 'edges' (types to their tensors)")
    for et in edges:
        if not (isinstance(et, tuple) and len(et) == 3 and all(isinstance(p, str) for p in et)):
            raise ValueError(f"edge type {et!r} is not a (src, relation, dst) tuple of strings")
    names = list(nodes)
    for src, _, dst in edges:
        for n in (src, dst):
            if n not in names:
                names.append(n)
    counted = []
    for name in names:
        store = nodes.get(name, {})
        incident = [(_get(s, "edge_index"), [r for r, n in ((0, et[0]), (1, et[2])) if n == name])
                    for et, s in edges.items() if name in (et[0], et[2])]
        counted.append((name, store, _num_nodes(store, name, incident)))
    if hetero:
        node_time = {name: _own_time(store, "node_time") for name, store, _ in counted}
        edge_time = {et: _own_time(store, "edge_time") for et, store in edges.items()}
    else:
        num_edges = int(torch.as_tensor(_get(data, "edge_index")).shape[1])
        keys = _time_keys(data, counted[0][2], num_edges, "data")
        node_time, edge_time = {HOMOGENEOUS_NODE: keys[0]}, {HOMOGENEOUS_EDGE: keys[1]}
    return {"nodes": [_node(store, name, num, node_time[name]) for name, store, num in counted],
            "edges": [_edge(store, et, edge_time[et]) for et, store in edges.items()]}


def write_dataset(data, out: str, num_partitions: int = 1, method: str = "random", *, edge_dir: str = "in",
                  seed: int = 0, name: str = "graph", split: Optional[Tuple[float, float, float]] = None,
                  reverse_edges: bool = False) -> Dict[str, Any]:
    """Writes `data` as graphstore partition directories under `out` (one partition: `out`
    itself; N: `out`/part-0 .. part-N-1), as graphstore-partition would.

    `data` is a PyG ``Data`` (``edge_index``, ``x``, ``y``, ``train_mask`` / ``val_mask`` /
    ``test_mask`` or ``*_idx``, ``edge_attr``, ``edge_weight``, ``time``), a ``HeteroData`` (the
    same per node and edge type), or dicts of torch tensors or numpy arrays of those names:
    ``{"edge_index": ..., "x": ...}`` for one node type, ``{"nodes": {type: {...}}, "edges":
    {(src, rel, dst): {...}}}`` for several. `method` is "random", "metis" or "stream";
    `split`, fractions (train, val, test) for graphs without masks; `reverse_edges` also stores
    each edge type's reverse.

    `edge_dir` says which neighbours a hop draws. "in" (the default, PyG's): a node draws its
    in-neighbours, the sources of the edges that end at it, and every batch's ``edge_index``
    holds the given edges as given (``edge_index[0]`` the source), so the batches are PyG's
    graph. "out": a node draws the destinations of its out-edges, and batches carry each
    edge type reversed, under its reverse name (``(dst, "rev_" + rel, src)``), as GLT's
    ``edge_dir="out"`` does: messages flow along the reversed edges. Returns the report: edge cut, balance, nodes and edges per
    partition. Raises ValueError naming the type and field for input the format refuses.
    """
    if not isinstance(num_partitions, int) or isinstance(num_partitions, bool):
        raise ValueError(f"num_partitions must be an int, got {num_partitions!r}")
    if method not in ("random", "metis", "stream"):
        raise ValueError(f"method must be 'random', 'metis' or 'stream', got {method!r}")
    if edge_dir not in ("out", "in"):
        raise ValueError(f"edge_dir must be 'out' or 'in', got {edge_dir!r}")
    if split is not None:
        split = tuple(float(f) for f in split)
        if len(split) != 3:
            raise ValueError("split must be three fractions (train, val, test)")
    graph = _gather(data)
    return _graphstore.write_dataset(graph, str(out), num_partitions, method, edge_dir, int(seed), name, split,
                                     bool(reverse_edges))
