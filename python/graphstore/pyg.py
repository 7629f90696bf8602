"""PyG's remote-backend contract over graphstore servers: code written for PyG's loaders runs
over a graphstore cluster unchanged::

    from torch_geometric.loader import NodeLoader
    import graphstore.pyg

    servers = ["host0:port", "host1:port"]
    feature_store = graphstore.pyg.FeatureStore(servers)
    graph_store = graphstore.pyg.GraphStore(servers)
    sampler = graphstore.pyg.NeighborSampler(servers, num_neighbors=[15, 10])
    loader = NodeLoader((feature_store, graph_store), node_sampler=sampler,
                        input_nodes=train_ids, batch_size=1024)

``FeatureStore`` reads node features and labels by index (``fs["paper", "x", idx]``), each row
from the server that owns it, all owners at once, in the encoding the servers are asked for
(``feature_encoding``), handed back in the stored dtype. ``GraphStore`` describes the stored edge
types and gives a whole edge type's ``edge_index`` only when asked and below ``max_edges``.
``NeighborSampler`` samples on the servers with the same keyed draws as ``graphstore.Loader``.
``NodeLoader`` and ``LinkLoader`` are PyG's, with batches sampled ahead (``prefetch``): a node
loader's epoch is one channel whose batches bring their rows to the feature store.

Each takes the servers (in partition order) and the Loader's connection options: ``tls``,
``tls_ca``, ``tls_cert``, ``tls_key``, ``tls_server_name``, ``token``, ``deadline``,
``keepalive``, ``keepalive_timeout``, ``reconnect_deadline``, ``feature_encoding``.

PyG 2.4 to 2.8 (``torch_geometric``) is needed only when these classes are used: they derive
from its ``FeatureStore``, ``GraphStore`` and ``BaseSampler``, so that PyG's loaders accept them.
This module imports without PyG.
"""

from __future__ import annotations

import collections
import concurrent.futures
import math
import threading
import weakref
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.utils.dlpack

from graphstore import _graphstore
from graphstore.batch import edge_type_of
from graphstore.features import dequantize
from graphstore.loader import Loader, _bound_options
from graphstore.v1 import graphstore_pb2 as pb
from graphstore.v1 import types_pb2 as types

__all__ = ["FeatureStore", "GraphStore", "NeighborSampler", "NodeLoader", "LinkLoader", "CONNECTION_OPTIONS"]

# The Loader options that say how to reach the servers, which every class here takes.
CONNECTION_OPTIONS = ("tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name", "token", "deadline", "keepalive",
                      "keepalive_timeout", "reconnect_deadline", "feature_encoding")

_DTYPES = {"FLOAT32": torch.float32, "FLOAT16": torch.float16, "BFLOAT16": torch.bfloat16, "FLOAT64": torch.float64,
           "INT64": torch.int64, "INT32": torch.int32, "UINT8": torch.uint8, "BOOL": torch.bool}
_BITS = {types.FEATURE_ENCODING_INT8: 8, types.FEATURE_ENCODING_INT4: 4, types.FEATURE_ENCODING_INT2: 2,
         types.FEATURE_ENCODING_INT1: 1}


_PYG: Dict[str, type] = {}

# The rows of the nodes of batches a NodeLoader here read from its channel, by the node tensor
# its SamplerOutput handed to PyG: PyG's filter_fn asks the feature store for exactly those rows
# (attr.index is that tensor), and they come from the batch instead of a second call. An entry
# lives as long as its node tensor.
_HANDED: Dict[int, tuple] = {}


def _hand_over(node: torch.Tensor, servers: tuple, x, y) -> None:
    key = id(node)
    _HANDED[key] = (weakref.ref(node), servers, x, y)
    weakref.finalize(node, _HANDED.pop, key, None)


def _handed(index, servers: tuple):
    """(x, y) a batch brought for the node tensor `index` from these servers, or None."""
    entry = _HANDED.get(id(index)) if isinstance(index, torch.Tensor) else None
    if entry is None or entry[0]() is not index or entry[1] != servers:
        return None
    return entry[2], entry[3]


def _pyg() -> Dict[str, type]:
    """torch_geometric's classes this module derives from, or ImportError saying what is needed."""
    if _PYG:
        return _PYG
    try:
        from torch_geometric.data import EdgeAttr, FeatureStore as _FS, GraphStore as _GS, TensorAttr  # noqa: PLC0415
        from torch_geometric.sampler import (BaseSampler, HeteroSamplerOutput, NodeSamplerInput,  # noqa: PLC0415
                                             SamplerOutput)
    except ImportError as e:
        raise ImportError("graphstore.pyg needs PyG (torch_geometric 2.4 to 2.8: pip install torch_geometric); "
                          f"without it use graphstore.Loader ({e})") from e
    _PYG.update({"EdgeAttr": EdgeAttr, "FeatureStore": _FS, "GraphStore": _GS, "TensorAttr": TensorAttr,
                 "BaseSampler": BaseSampler, "HeteroSamplerOutput": HeteroSamplerOutput,
                 "NodeSamplerInput": NodeSamplerInput, "SamplerOutput": SamplerOutput})
    return _PYG


def _pyg_loaders() -> Dict[str, type]:
    """torch_geometric's NodeLoader and LinkLoader, which this module's loaders extend."""
    pyg = _pyg()
    if "NodeLoader" not in pyg:
        from torch_geometric.loader import LinkLoader, NodeLoader  # noqa: PLC0415
        pyg.update({"NodeLoader": NodeLoader, "LinkLoader": LinkLoader})
    return pyg


def _connection(servers, options: dict):
    unknown = sorted(set(options) - set(CONNECTION_OPTIONS))
    if unknown:
        raise TypeError(f"{unknown[0]}: not a connection option (they are {', '.join(CONNECTION_OPTIONS)})")
    values, _ = _bound_options(servers, [1], **options)
    return _graphstore.Store(values), options


class _Meta:
    """The dataset's node and edge types, as the first server describes them."""

    def __init__(self, store):
        m = pb.DatasetMeta()
        m.ParseFromString(store.call(0, "GetDatasetMeta", pb.GetDatasetMetaRequest().SerializeToString()))
        self.meta = m
        self.nodes = {t.name: t for t in m.node_types}
        self.edges = {t.name: t for t in m.edge_types}
        self.hetero = m.is_heterogeneous

    def node_type(self, group) -> "types.NodeTypeInfo":
        """The stored node type PyG's group name means (None: the only one)."""
        if group is None and len(self.nodes) == 1:
            return next(iter(self.nodes.values()))
        if isinstance(group, tuple):
            raise KeyError(f"group_name {group!r}: an edge type; the feature store holds node features and labels")
        if group not in self.nodes:
            raise KeyError(f"group_name {group!r} is not a node type of the dataset (node types: "
                           f"{', '.join(sorted(self.nodes))})")
        return self.nodes[group]

    def group_of(self, t: "types.NodeTypeInfo"):
        return t.name if self.hetero else None


def _dtype_of(dtype) -> torch.dtype:
    return _DTYPES[types.DType.Name(dtype).replace("DTYPE_", "")]


def _ids_of(index, num_nodes: int, what: str = "node") -> torch.Tensor:
    """PyG's index (None, an int, a slice, a list, a bool mask or an int tensor) as int64 ids."""
    if index is None:
        return torch.arange(num_nodes)
    if isinstance(index, slice):
        return torch.arange(num_nodes)[index]
    t = torch.tensor([index], dtype=torch.int64) if isinstance(index, int) else index
    t = t if isinstance(index, torch.Tensor) else torch.as_tensor(index)
    if t.dtype == torch.bool:
        if t.numel() != num_nodes:
            raise IndexError(f"index: a mask of {t.numel()} entries for {num_nodes} {what}s")
        return t.nonzero().view(-1)
    if t.is_floating_point():
        raise IndexError(f"index: {what} ids must be integers")
    t = t.to(torch.int64).view(-1)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= num_nodes):
        raise IndexError(f"index: ids must be in [0, {num_nodes}); got {int(t.min())}..{int(t.max())}")
    return t


def _read_only(what: str):
    return TypeError(f"graphstore's {what} is read-only; write the dataset with graphstore.write_dataset or "
                     "graphstore-partition")


class _FeatureStore:
    """Node features (``x``) and labels (``y``) of a graphstore cluster, by PyG's
    ``TensorAttr(group_name=node type, attr_name="x" or "y", index=ids)``. Read-only: a dataset
    is written with ``graphstore.write_dataset``."""

    def __init__(self, servers: Sequence[str], max_rows: int = 1 << 24, **connection):
        super().__init__()
        self._store, self._connection = _connection(servers, connection)
        self._servers = tuple(servers)
        self._meta = _Meta(self._store)
        self._max_rows = max_rows
        self._encoding = self._store.encoding()

    # ----- PyG's contract ---------------------------------------------------------------------
    def _put_tensor(self, tensor, attr) -> bool:
        raise _read_only("feature store")

    def _remove_tensor(self, attr) -> bool:
        raise _read_only("feature store")

    def _get_tensor(self, attr):
        return self._read([attr])[0]

    def _multi_get_tensor(self, attrs):
        return self._read(list(attrs))

    def __len__(self) -> int:
        # Abstract in PyG 2.4 and 2.5's FeatureStore: the number of tensors the store holds.
        return len(self.get_all_tensor_attrs())

    def _get_tensor_size(self, attr) -> Optional[Tuple[int, ...]]:
        if attr.attr_name == "edge_attr":
            e = self._edge_type(attr.group_name)
            return (e.num_edges, e.features.dim)
        t = self._meta.node_type(attr.group_name)
        if attr.attr_name == "x" and t.features.dim > 0:
            return (t.num_nodes, t.features.dim)
        if attr.attr_name == "y" and t.has_labels:
            return (t.num_nodes,)
        return None

    def get_all_tensor_attrs(self) -> List:
        tensor_attr = _pyg()["TensorAttr"]
        out = []
        for t in self._meta.nodes.values():
            group = self._meta.group_of(t)
            if t.features.dim > 0:
                out.append(tensor_attr(group_name=group, attr_name="x"))
            if t.has_labels:
                out.append(tensor_attr(group_name=group, attr_name="y"))
        # Edge features are listed on heterogeneous graphs only: PyG's filter for a homogeneous
        # remote store indexes every listed attribute by the batch's nodes.
        if self._meta.hetero:
            for e in self._meta.edges.values():
                if e.features.dim > 0:
                    out.append(tensor_attr(group_name=(e.src_type, e.relation, e.dst_type), attr_name="edge_attr"))
        return out

    def _edge_type(self, group) -> "types.EdgeTypeInfo":
        """The stored edge type with features that PyG's group name means (None: the only one)."""
        edges = self._meta.edges
        if group is None and len(edges) == 1:
            e = next(iter(edges.values()))
        else:
            name = "__".join(group) if isinstance(group, tuple) and len(group) == 3 else str(group)
            if name not in edges:
                raise KeyError(f"group_name {group!r} is not an edge type of the dataset (edge types: "
                               f"{', '.join(sorted(edges))})")
            e = edges[name]
        if e.features.dim == 0:
            raise KeyError(f"edge type {e.name!r} stores no features")
        return e

    def edge_rows(self, edge_type, ids: torch.Tensor) -> torch.Tensor:
        """The feature rows of edge ids (columns of the written edge_index) of `edge_type`, in
        the order of `ids`, in the stored dtype: every partition is asked for the ones it stores."""
        e = self._edge_type(edge_type)
        ids = ids.to(torch.int64).view(-1)
        x = torch.empty((ids.numel(), e.features.dim), dtype=_dtype_of(e.features.dtype))
        found = torch.zeros(ids.numel(), dtype=torch.bool)
        for server in range(self._store.num_servers()):
            for start in range(0, ids.numel(), 1 << 16):
                chunk = ids[start:start + (1 << 16)]
                req = pb.GetEdgeFeaturesRequest(edge_type=e.name, ids=chunk.tolist(), only_stored=True)
                resp = pb.GetEdgeFeaturesResponse()
                resp.ParseFromString(self._store.call(server, "GetEdgeFeatures", req.SerializeToString()))
                if not resp.positions:
                    continue
                at = torch.tensor(list(resp.positions), dtype=torch.int64) + start
                x[at] = torch.frombuffer(bytearray(resp.features.data), dtype=x.dtype).view(-1, e.features.dim)
                found[at] = True
        if not bool(found.all()):
            missing = int(ids[~found][0])
            raise IndexError(f"index: edge id {missing} of {e.name!r} is stored in no partition")
        return x

    # ----- reads ------------------------------------------------------------------------------
    def _check(self, attr) -> "types.NodeTypeInfo":
        if attr.attr_name not in ("x", "y", "edge_attr"):
            raise KeyError(f"attr_name {attr.attr_name!r}: the feature store holds 'x', 'y' and 'edge_attr'")
        t = self._meta.node_type(attr.group_name)
        if attr.attr_name == "x" and t.features.dim == 0:
            raise KeyError(f"node type {t.name!r} stores no features")
        if attr.attr_name == "y" and not t.has_labels:
            raise KeyError(f"node type {t.name!r} stores no labels")
        return t

    def _read(self, attrs) -> List[torch.Tensor]:
        # x and y of the same node type and index come from one call to each owner.
        asked: Dict[tuple, list] = {}
        out: List[Optional[torch.Tensor]] = [None] * len(attrs)
        for k, attr in enumerate(attrs):
            index = getattr(attr, "index", None)
            index = index if isinstance(index, (torch.Tensor, list, tuple, slice, int)) else None
            if attr.attr_name == "edge_attr":
                e = self._edge_type(attr.group_name)
                out[k] = self.edge_rows(e.name, _ids_of(index, e.num_edges, "edge"))
                continue
            t = self._check(attr)
            asked.setdefault((t.name, id(index)), [t, index, []])[2].append(k)
        for t, index, positions in asked.values():
            names = {attrs[k].attr_name for k in positions}
            rows = _handed(index, self._servers) if self._encoding == types.FEATURE_ENCODING_UNSPECIFIED else None
            if rows is not None and (rows[0] is not None or "x" not in names) and (rows[1] is not None or "y" not in names):
                for k in positions:
                    out[k] = rows[0] if attrs[k].attr_name == "x" else rows[1]
                continue
            ids = _ids_of(index, t.num_nodes)
            if ids.numel() > self._max_rows:
                raise ValueError(f"index: {ids.numel()} rows of {t.name!r} at once is beyond max_rows="
                                 f"{self._max_rows}; read them in slices")
            x, y = self.rows(t.name, ids, features="x" in names, labels="y" in names)
            for k in positions:
                out[k] = x if attrs[k].attr_name == "x" else y
        return out

    def rows(self, node_type: str, ids: torch.Tensor, features: bool = True, labels: bool = False):
        """(x, y) of `ids` of `node_type`: x in the stored dtype (None unless `features`), y int64
        (None unless `labels`), rows in the order of `ids`."""
        t = self._meta.node_type(node_type if node_type or self._meta.hetero else None)
        ids = ids.to(torch.int64).contiguous()
        n = ids.numel()
        if n == 0:
            x = torch.empty((0, t.features.dim)) if features else None
            return x, torch.empty(0, dtype=torch.int64) if labels else None
        raw, labs, scale, offset, dtype, dim = self._store.node_rows(t.name, torch.utils.dlpack.to_dlpack(ids), labels)
        x = self._decoded(t, raw, scale, offset, dtype, n, dim) if features else None
        y = torch.frombuffer(labs, dtype=torch.int64) if labels else None
        return x, y

    def _decoded(self, t, raw, scale, offset, dtype, n: int, dim: int) -> torch.Tensor:
        bits = _BITS.get(self._encoding, 0)
        if bits:
            codes = torch.frombuffer(raw, dtype=torch.uint8).view(n, -1)
            return dequantize(codes, torch.frombuffer(bytearray(scale), dtype=torch.float32),
                              torch.frombuffer(bytearray(offset), dtype=torch.float32), bits)[:, :dim]
        x = torch.frombuffer(raw, dtype=_DTYPES[types.DType.Name(dtype).replace("DTYPE_", "")]).view(n, dim)
        if x.dtype in (torch.float16, torch.bfloat16) and t.features.dtype == types.DTYPE_FLOAT32:
            x = x.float()
        return x

    def __repr__(self) -> str:
        return f"graphstore.pyg.FeatureStore({self._meta.meta.dataset_name!r}, {self._store.num_servers()} servers)"


class _GraphStore:
    """The edge types a graphstore cluster stores, with their sizes. A whole edge type's
    ``edge_index`` (columns in edge-id order: the order it was written in) is read from the
    servers only when asked, up to ``max_edges``; sampling goes through
    ``graphstore.pyg.NeighborSampler`` on the servers."""

    def __init__(self, servers: Sequence[str], max_edges: int = 10_000_000, **connection):
        super().__init__()
        self._servers = list(servers)
        self._connection = connection
        self._store, _ = _connection(servers, connection)
        self._meta = _Meta(self._store)
        self._max_edges = max_edges

    def _put_edge_index(self, edge_index, edge_attr) -> bool:
        raise _read_only("graph store")

    def _remove_edge_index(self, edge_attr) -> bool:
        raise _read_only("graph store")

    def get_all_edge_attrs(self) -> List:
        edge_attr = _pyg()["EdgeAttr"]
        out = []
        for e in self._meta.edges.values():
            src, dst = self._meta.nodes[e.src_type], self._meta.nodes[e.dst_type]
            out.append(edge_attr(edge_type=(e.src_type, e.relation, e.dst_type), layout="coo", is_sorted=False,
                                 size=(src.num_nodes, dst.num_nodes)))
        return out

    def _get_edge_index(self, edge_attr):
        name = self._name_of(edge_attr.edge_type)
        e = self._meta.edges[name]
        if e.num_edges > self._max_edges:
            raise ValueError(f"edge type {name!r} has {e.num_edges} edges, beyond max_edges={self._max_edges}: "
                             "sample it with graphstore.pyg.NeighborSampler instead of reading it whole")
        # Every node the stored rows belong to takes all its neighbours over this type in one
        # hop; each edge comes once, with its id, and the ids put the columns back in order.
        into = self._meta.meta.edge_dir == types.EDGE_DIRECTION_IN
        rows_type = e.dst_type if into else e.src_type
        fanouts = {(t.src_type, t.relation, t.dst_type): [-1 if t.name == name else 0]
                   for t in self._meta.edges.values()}
        key = (e.src_type, e.relation, e.dst_type) if into else (e.dst_type, "rev_" + e.relation, e.src_type)
        ids, pairs = [], []
        with Loader(self._servers, fanouts if self._meta.hetero else [-1],
                    input_nodes=(rows_type, None) if self._meta.hetero else None, split="", batch_size=4096,
                    node_features=False, labels=False, edge_ids=True, **self._connection) as loader:
            for b in loader.epoch(0):
                es = b[key] if self._meta.hetero else b
                src_ids = b[key[0]].n_id if self._meta.hetero else b.n_id
                dst_ids = b[key[2]].n_id if self._meta.hetero else b.n_id
                pair = torch.stack([src_ids[es.edge_index[0]], dst_ids[es.edge_index[1]]])
                pairs.append(pair if into else pair.flip(0))
                ids.append(es.e_id)
        edge_ids = torch.cat(ids) if ids else torch.empty(0, dtype=torch.int64)
        edge_index = torch.cat(pairs, dim=1) if pairs else torch.empty((2, 0), dtype=torch.int64)
        return edge_index[:, torch.argsort(edge_ids)]

    def _name_of(self, edge_type) -> str:
        if edge_type is None and len(self._meta.edges) == 1:
            return next(iter(self._meta.edges))
        name = "__".join(edge_type) if isinstance(edge_type, tuple) and len(edge_type) == 3 else str(edge_type)
        if name not in self._meta.edges:
            raise KeyError(f"edge_type {edge_type!r} is not an edge type of the dataset")
        return name


class _NeighborSampler:
    """PyG's ``BaseSampler`` whose draws happen on the graphstore servers, keyed as
    ``graphstore.Loader``'s are (batches depend only on the seed, the input and the options).
    ``sample_from_nodes`` returns PyG's ``SamplerOutput`` / ``HeteroSamplerOutput`` with ``node``
    (global ids, seeds first), ``row`` / ``col`` (local indices, messages flowing row -> col as
    in PyG), ``edge`` (global edge ids), per-hop counts and ``metadata = (input_id,
    seed_time)``; ``sample_from_edges`` the same for the endpoints of a batch of edges (one node
    type), with PyG's binary or triplet negatives drawn uniformly, keyed by the seed."""

    def __init__(self, servers: Sequence[str], num_neighbors, *, replace: bool = False, disjoint: bool = False,
                 weight_attr: Optional[str] = None, time_attr: Optional[str] = None,
                 temporal_strategy: str = "uniform", subgraph_type: str = "directional", seed: int = 0,
                 **connection):
        super().__init__()
        if disjoint:
            raise ValueError("disjoint=True: graphstore batches share the nodes their seeds reach; "
                             "sample each seed as its own batch for disjoint subgraphs")
        if subgraph_type not in ("directional", "induced"):
            raise ValueError(f"subgraph_type={subgraph_type!r}: graphstore samples 'directional' (k-hop) "
                             "or 'induced' subgraphs")
        store, _ = _connection(servers, connection)
        self._meta = _Meta(store)
        self._servers = list(servers)
        self._options = dict(num_neighbors=num_neighbors, replace=replace, weight_attr=weight_attr,
                             time_attr=time_attr, temporal_strategy=temporal_strategy,
                             sampler="subgraph" if subgraph_type == "induced" else "neighbor",
                             node_features=False, labels=False, edge_ids=True, global_batches=True, shuffle=False,
                             **connection)
        self._seed = seed
        # Each call takes the next key of its draws, in the order PyG makes the calls; the
        # loaders here that sample ahead on threads hand each call its key (_keyed).
        self._calls = 0
        self._lock = threading.Lock()
        self._key_of_call = threading.local()

    @property
    def edge_permutation(self):
        return None

    def sample_from_nodes(self, inputs, **kwargs):
        return self._output(self._sample(inputs.node, inputs.input_type, getattr(inputs, "time", None),
                                         self._take_key()),
                            (getattr(inputs, "input_id", None), getattr(inputs, "time", None)))

    def sample_from_edges(self, inputs, neg_sampling=None):
        input_type = getattr(inputs, "input_type", None)
        if input_type is not None and input_type[0] != input_type[-1]:
            raise ValueError(f"input_type {input_type!r}: graphstore samples link batches whose endpoints are of "
                             "one node type; for two types use graphstore.Loader with ablp=")
        if getattr(inputs, "time", None) is not None:
            raise ValueError("time: temporal link batches are not sampled by graphstore.pyg; use "
                             "graphstore.Loader with ablp= and time_attr=")
        src, dst = inputs.row.to(torch.int64), inputs.col.to(torch.int64)
        num_pos = src.numel()
        node_type = input_type[0] if input_type is not None else None
        num_nodes = self._meta.node_type(node_type if self._meta.hetero else None).num_nodes
        key = self._take_key()
        draw = torch.Generator().manual_seed(key)
        mode = None if neg_sampling is None else str(getattr(neg_sampling.mode, "value", neg_sampling.mode))
        if mode not in (None, "binary", "triplet"):
            raise ValueError(f"neg_sampling.mode {mode!r}: 'binary' or 'triplet'")
        # PyG 2.4 and 2.5 weigh negatives with `weight`, 2.6 and 2.7 with `src_weight` / `dst_weight`.
        if neg_sampling is not None and any(getattr(neg_sampling, w, None) is not None
                                            for w in ("weight", "src_weight", "dst_weight")):
            raise ValueError("neg_sampling: graphstore draws negatives uniformly; weight / src_weight / dst_weight "
                             "are not taken")
        label = getattr(inputs, "label", None)
        if mode == "binary":
            num_neg = math.ceil(num_pos * neg_sampling.amount)
            src = torch.cat([src, torch.randint(0, num_nodes, (num_neg,), generator=draw)])
            dst = torch.cat([dst, torch.randint(0, num_nodes, (num_neg,), generator=draw)])
            label = torch.ones(num_pos) if label is None else label
            label = torch.cat([label, label.new_zeros((num_neg,) + tuple(label.shape[1:]))])
        elif mode == "triplet":
            per_src = int(math.ceil(neg_sampling.amount))
            dst = torch.cat([dst, torch.randint(0, num_nodes, (num_pos * per_src,), generator=draw)])
        seeds, inverse = torch.cat([src, dst]).unique(return_inverse=True)
        out = self._output(self._sample(seeds, node_type, None, key), None)
        input_id = getattr(inputs, "input_id", None)
        if mode == "triplet":
            neg = inverse[2 * num_pos:]
            neg = neg.view(-1) if per_src == 1 else neg.view(num_pos, per_src)
            out.metadata = (input_id, inverse[:num_pos], inverse[num_pos:2 * num_pos], neg, None)
        else:
            out.metadata = (input_id, inverse.view(2, -1), label, None)
        return out

    def _take_key(self) -> int:
        """The key of this call's draws: the one a sampling-ahead loader gave it, else the next."""
        key = getattr(self._key_of_call, "key", None)
        if key is not None:
            self._key_of_call.key = None
            return key
        with self._lock:
            key = self._seed * 1_000_003 + self._calls
            self._calls += 1
        return key

    def _keyed(self, key: int, call, *args):
        self._key_of_call.key = key
        try:
            return call(*args)
        finally:
            self._key_of_call.key = None

    def _sample(self, seeds: torch.Tensor, node_type, times, key: int):
        """The one batch the servers sample for `seeds` (distinct ids), seeds first."""
        seeds = seeds.to(torch.int64).view(-1)
        # A new channel per call, with draws of its own: PyG hands a sampler one batch at a time.
        opts = dict(self._options, batch_size=max(1, seeds.numel()),
                    input_nodes=(node_type, seeds) if node_type is not None else seeds, seed=key)
        if times is not None:
            opts["input_time"] = times
        with Loader(self._servers, **opts) as loader:
            batches = list(loader.epoch(0))
        if len(batches) != 1:
            raise RuntimeError(f"the servers answered {len(batches)} batches for one batch of seeds")
        return batches[0]

    def _epoch_of_nodes(self, input_data, batches: List[List[int]], prefetch: int):
        """The SamplerOutputs of a node loader's epoch (`batches`: positions in `input_data`, in
        the order PyG iterates them) from one channel whose servers sample `prefetch` batches
        ahead per server; None where one channel cannot give them (a seed twice in the epoch,
        batches of unequal sizes before the last)."""
        sizes = [len(b) for b in batches]
        if not sizes or any(n != sizes[0] for n in sizes[:-1]) or sizes[-1] > sizes[0]:
            return None
        index = torch.cat([torch.as_tensor(b, dtype=torch.long) for b in batches])
        part = input_data[index]
        seeds = part.node.to(torch.int64)
        if seeds.unique().numel() != seeds.numel():
            return None
        input_id = part.input_id if part.input_id is not None else index
        times = getattr(part, "time", None)
        node_type = part.input_type
        # The batches bring their rows, which the feature store hands PyG's filter_fn (_HANDED).
        rows = self._options.get("feature_encoding") in (None, "")
        opts = dict(self._options, batch_size=sizes[0], prefetch=prefetch, seed=self._take_key(),
                    input_nodes=(node_type, seeds) if node_type is not None else seeds,
                    node_features=rows and any(t.features.dim > 0 for t in self._meta.nodes.values()),
                    labels=rows and any(t.has_labels for t in self._meta.nodes.values()))
        if times is not None:
            opts["input_time"] = times

        def outputs():
            with Loader(self._servers, **opts) as loader:
                start = 0
                for n, b in zip(sizes, loader.epoch(0)):
                    end = start + n
                    yield self._output(b, (input_id[start:end], None if times is None else times[start:end]), rows)
                    start = end
        return outputs()

    def _output(self, b, metadata, rows: bool = False):
        pyg = _pyg()
        servers = tuple(self._servers)
        if not b.is_hetero:
            ei, node = b.edge_index, b.n_id
            if rows:
                _hand_over(node, servers, b.x, b.y)
            return pyg["SamplerOutput"](node=node, row=ei[0], col=ei[1], edge=b.e_id, batch=None,
                                        num_sampled_nodes=b.num_sampled_nodes,
                                        num_sampled_edges=b.num_sampled_edges, metadata=metadata)
        node = {t: b[t].n_id for t in b.node_types}
        if rows:
            for t, n in node.items():
                _hand_over(n, servers, b[t].x, b[t].y)
        nsn = {t: b[t].num_sampled_nodes for t in b.node_types}
        row, col, edge, nse = {}, {}, {}, {}
        for et in b.edge_types:
            key = et if isinstance(et, tuple) else edge_type_of(et)
            e = b[et]
            row[key], col[key], edge[key], nse[key] = e.edge_index[0], e.edge_index[1], e.e_id, e.num_sampled_edges
        return pyg["HeteroSamplerOutput"](node=node, row=row, col=col, edge=edge, batch=None, num_sampled_nodes=nsn,
                                          num_sampled_edges=nse, metadata=metadata)


class _InFlight:
    """One epoch of a PyG loader whose batches are sampled ahead: a node loader's epoch from one
    channel (the servers read `prefetch` batches ahead), else each batch's ``collate_fn`` on
    `prefetch` threads, in order, each call with the key it would have had one at a time. Each
    item goes through the loader's ``filter_fn`` in the calling thread, as PyG's own iterator
    does."""

    def __init__(self, loader, sampler: "_NeighborSampler", prefetch: int):
        self._loader = loader
        batches = [list(map(int, b)) for b in loader._index_sampler]
        self._len = len(batches)
        outputs = None
        if hasattr(loader, "node_sampler"):
            outputs = sampler._epoch_of_nodes(loader.input_data, batches, prefetch)
            if outputs is not None and loader.filter_per_worker:
                outputs = map(loader.filter_fn, outputs)
        self._items = outputs if outputs is not None else self._ahead(sampler, batches, prefetch)

    def _ahead(self, sampler, batches, prefetch: int):
        with concurrent.futures.ThreadPoolExecutor(prefetch, thread_name_prefix="graphstore-pyg") as pool:
            pending: collections.deque = collections.deque()
            try:
                for index in batches:
                    pending.append(pool.submit(sampler._keyed, sampler._take_key(), self._loader.collate_fn, index))
                    if len(pending) > prefetch:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:
                    f.cancel()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self._len

    def __next__(self):
        out = next(self._items)
        return out if self._loader.filter_per_worker else self._loader.filter_fn(out)

    def close(self) -> None:
        if hasattr(self._items, "close"):
            self._items.close()

    def __del__(self):
        self.close()


class _SamplesAhead:
    """PyG's ``NodeLoader`` / ``LinkLoader`` with the same arguments, and ``prefetch`` (default 4):
    with graphstore's ``NeighborSampler`` and no DataLoader workers, the servers sample batches
    k+1..k+prefetch while the model trains on batch k (a node loader reads its epoch from one
    channel; a link loader asks for `prefetch` batches at once). With workers, or another
    sampler, it iterates as PyG's loader does."""

    def __init__(self, *args, prefetch: int = 4, **kwargs):
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise ValueError(f"prefetch={prefetch!r}: a number of batches >= 0 (0: one batch at a time)")
        self._prefetch = prefetch
        super().__init__(*args, **kwargs)

    def _get_iterator(self):
        sampler = getattr(self, "node_sampler", None) or getattr(self, "link_sampler", None)
        # Workers, pinned memory and un-batched loading are torch's DataLoader's to do.
        if self.num_workers > 0 or self._prefetch == 0 or not isinstance(sampler, _NeighborSampler) \
                or getattr(self, "pin_memory", False) or getattr(self, "_auto_collation", True) is False:
            return super()._get_iterator()
        return _InFlight(self, sampler, self._prefetch)


# Each public class: graphstore's half, and the PyG class it completes.
_CLASSES = {"FeatureStore": (_FeatureStore, "FeatureStore"), "GraphStore": (_GraphStore, "GraphStore"),
            "NeighborSampler": (_NeighborSampler, "BaseSampler"), "NodeLoader": (_SamplesAhead, "NodeLoader"),
            "LinkLoader": (_SamplesAhead, "LinkLoader")}
_BUILT: Dict[str, type] = {}


def __getattr__(name):
    """The classes, made on first use over the installed PyG."""
    if name not in _CLASSES:
        raise AttributeError(f"module 'graphstore.pyg' has no attribute {name!r}")
    if name not in _BUILT:
        ours, base = _CLASSES[name]
        pyg = _pyg_loaders() if base in ("NodeLoader", "LinkLoader") else _pyg()
        _BUILT[name] = type(name, (ours, pyg[base]), {"__module__": __name__, "__doc__": ours.__doc__,
                                                      "__qualname__": name})
    return _BUILT[name]
