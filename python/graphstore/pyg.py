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

Each takes the servers (in partition order) and the Loader's connection options: ``tls``,
``tls_ca``, ``tls_cert``, ``tls_key``, ``tls_server_name``, ``token``, ``deadline``,
``keepalive``, ``keepalive_timeout``, ``reconnect_deadline``, ``feature_encoding``.

PyG 2.4 to 2.7 (``torch_geometric``) is needed only when these classes are used: they derive
from its ``FeatureStore``, ``GraphStore`` and ``BaseSampler``, so that PyG's loaders accept them.
This module imports without PyG.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.utils.dlpack

from graphstore import _graphstore
from graphstore.batch import edge_type_of
from graphstore.features import dequantize
from graphstore.loader import Loader, _bound_options
from graphstore.v1 import graphstore_pb2 as pb
from graphstore.v1 import types_pb2 as types

__all__ = ["FeatureStore", "GraphStore", "NeighborSampler", "CONNECTION_OPTIONS"]

# The Loader options that say how to reach the servers, which every class here takes.
CONNECTION_OPTIONS = ("tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name", "token", "deadline", "keepalive",
                      "keepalive_timeout", "reconnect_deadline", "feature_encoding")

_DTYPES = {"FLOAT32": torch.float32, "FLOAT16": torch.float16, "BFLOAT16": torch.bfloat16, "FLOAT64": torch.float64,
           "INT64": torch.int64, "INT32": torch.int32, "UINT8": torch.uint8, "BOOL": torch.bool}
_BITS = {types.FEATURE_ENCODING_INT8: 8, types.FEATURE_ENCODING_INT4: 4, types.FEATURE_ENCODING_INT2: 2,
         types.FEATURE_ENCODING_INT1: 1}


_PYG: Dict[str, type] = {}


def _pyg() -> Dict[str, type]:
    """torch_geometric's classes this module derives from, or ImportError saying what is needed."""
    if _PYG:
        return _PYG
    try:
        from torch_geometric.data import EdgeAttr, FeatureStore as _FS, GraphStore as _GS, TensorAttr  # noqa: PLC0415
        from torch_geometric.sampler import (BaseSampler, HeteroSamplerOutput, NodeSamplerInput,  # noqa: PLC0415
                                             SamplerOutput)
    except ImportError as e:
        raise ImportError("graphstore.pyg needs PyG (torch_geometric 2.4 to 2.7: pip install torch_geometric); "
                          f"without it use graphstore.Loader ({e})") from e
    _PYG.update({"EdgeAttr": EdgeAttr, "FeatureStore": _FS, "GraphStore": _GS, "TensorAttr": TensorAttr,
                 "BaseSampler": BaseSampler, "HeteroSamplerOutput": HeteroSamplerOutput,
                 "NodeSamplerInput": NodeSamplerInput, "SamplerOutput": SamplerOutput})
    return _PYG


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


def _ids_of(index, num_nodes: int) -> torch.Tensor:
    """PyG's index (None, an int, a slice, a list, a bool mask or an int tensor) as int64 ids."""
    if index is None:
        return torch.arange(num_nodes)
    if isinstance(index, slice):
        return torch.arange(num_nodes)[index]
    if isinstance(index, int):
        return torch.tensor([index], dtype=torch.int64)
    t = index if isinstance(index, torch.Tensor) else torch.as_tensor(index)
    if t.dtype == torch.bool:
        if t.numel() != num_nodes:
            raise IndexError(f"index: a mask of {t.numel()} entries for {num_nodes} nodes")
        return t.nonzero().view(-1)
    if t.is_floating_point():
        raise IndexError("index: node ids must be integers")
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
        return out

    # ----- reads ------------------------------------------------------------------------------
    def _check(self, attr) -> "types.NodeTypeInfo":
        if attr.attr_name not in ("x", "y"):
            raise KeyError(f"attr_name {attr.attr_name!r}: the feature store holds 'x' and 'y'")
        t = self._meta.node_type(attr.group_name)
        if attr.attr_name == "x" and t.features.dim == 0:
            raise KeyError(f"node type {t.name!r} stores no features")
        if attr.attr_name == "y" and not t.has_labels:
            raise KeyError(f"node type {t.name!r} stores no labels")
        return t

    def _read(self, attrs) -> List[torch.Tensor]:
        # x and y of the same node type and index come from one call to each owner.
        asked: Dict[tuple, list] = {}
        for k, attr in enumerate(attrs):
            t = self._check(attr)
            index = getattr(attr, "index", None)
            index = index if isinstance(index, (torch.Tensor, list, tuple, slice, int)) else None
            asked.setdefault((t.name, id(index)), [t, index, []])[2].append(k)
        out: List[Optional[torch.Tensor]] = [None] * len(attrs)
        for t, index, positions in asked.values():
            ids = _ids_of(index, t.num_nodes)
            if ids.numel() > self._max_rows:
                raise ValueError(f"index: {ids.numel()} rows of {t.name!r} at once is beyond max_rows="
                                 f"{self._max_rows}; read them in slices")
            names = {attrs[k].attr_name for k in positions}
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
        self._calls = 0

    @property
    def edge_permutation(self):
        return None

    def sample_from_nodes(self, inputs, **kwargs):
        return self._output(self._sample(inputs.node, inputs.input_type, getattr(inputs, "time", None)),
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
        draw = torch.Generator().manual_seed(self._seed * 1_000_003 + self._calls)
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
        out = self._output(self._sample(seeds, node_type, None), None)
        input_id = getattr(inputs, "input_id", None)
        if mode == "triplet":
            neg = inverse[2 * num_pos:]
            neg = neg.view(-1) if per_src == 1 else neg.view(num_pos, per_src)
            out.metadata = (input_id, inverse[:num_pos], inverse[num_pos:2 * num_pos], neg, None)
        else:
            out.metadata = (input_id, inverse.view(2, -1), label, None)
        return out

    def _sample(self, seeds: torch.Tensor, node_type, times):
        """The one batch the servers sample for `seeds` (distinct ids), seeds first."""
        seeds = seeds.to(torch.int64).view(-1)
        opts = dict(self._options, batch_size=max(1, seeds.numel()),
                    input_nodes=(node_type, seeds) if node_type is not None else seeds,
                    # A new channel per call, with draws of its own: PyG hands a sampler one
                    # batch at a time.
                    seed=self._seed * 1_000_003 + self._calls)
        if times is not None:
            opts["input_time"] = times
        self._calls += 1
        with Loader(self._servers, **opts) as loader:
            batches = list(loader.epoch(0))
        if len(batches) != 1:
            raise RuntimeError(f"the servers answered {len(batches)} batches for one batch of seeds")
        return batches[0]

    def _output(self, b, metadata):
        pyg = _pyg()
        if not b.is_hetero:
            ei = b.edge_index
            return pyg["SamplerOutput"](node=b.n_id, row=ei[0], col=ei[1], edge=b.e_id, batch=None,
                                        num_sampled_nodes=b.num_sampled_nodes,
                                        num_sampled_edges=b.num_sampled_edges, metadata=metadata)
        node = {t: b[t].n_id for t in b.node_types}
        nsn = {t: b[t].num_sampled_nodes for t in b.node_types}
        row, col, edge, nse = {}, {}, {}, {}
        for et in b.edge_types:
            key = et if isinstance(et, tuple) else edge_type_of(et)
            e = b[et]
            row[key], col[key], edge[key], nse[key] = e.edge_index[0], e.edge_index[1], e.e_id, e.num_sampled_edges
        return pyg["HeteroSamplerOutput"](node=node, row=row, col=col, edge=edge, batch=None, num_sampled_nodes=nsn,
                                          num_sampled_edges=nse, metadata=metadata)


# Each public class: graphstore's half, and the PyG class it completes.
_CLASSES = {"FeatureStore": (_FeatureStore, "FeatureStore"), "GraphStore": (_GraphStore, "GraphStore"),
            "NeighborSampler": (_NeighborSampler, "BaseSampler")}
_BUILT: Dict[str, type] = {}


def __getattr__(name):
    """The classes, made on first use over the installed PyG."""
    if name not in _CLASSES:
        raise AttributeError(f"module 'graphstore.pyg' has no attribute {name!r}")
    if name not in _BUILT:
        ours, base = _CLASSES[name]
        _BUILT[name] = type(name, (ours, _pyg()[base]), {"__module__": __name__, "__doc__": ours.__doc__,
                                                          "__qualname__": name})
    return _BUILT[name]
