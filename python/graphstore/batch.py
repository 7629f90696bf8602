"""Sampled batches, named as PyG names them."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.utils.dlpack

EdgeType = Tuple[str, str, str]


def _move(value, device, non_blocking):
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=non_blocking)
    if isinstance(value, dict):
        return {k: _move(v, device, non_blocking) for k, v in value.items()}
    if isinstance(value, list):
        return [_move(v, device, non_blocking) for v in value]
    if isinstance(value, (NodeStore, EdgeStore, PprWeights)):
        out = type(value).__new__(type(value))
        for k in value.__slots__:
            setattr(out, k, _move(getattr(value, k), device, non_blocking))
        return out
    return value


def _walk(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)
    elif isinstance(value, (NodeStore, EdgeStore, PprWeights)):
        for k in value.__slots__:
            yield from _walk(getattr(value, k))


def edge_type_of(name: str) -> Union[EdgeType, str]:
    """The ``(src, rel, dst)`` tuple of an edge type's wire name ``"src__rel__dst"`` (the name
    itself when it is not of that form)."""
    parts = name.split("__")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else name


def edge_type_name(edge_type: Union[EdgeType, str]) -> str:
    """The wire name ``"src__rel__dst"`` of an edge type given as a tuple or a name."""
    if isinstance(edge_type, str):
        return edge_type
    if isinstance(edge_type, tuple) and len(edge_type) == 3 and all(isinstance(p, str) for p in edge_type):
        return "__".join(edge_type)
    raise TypeError(f"an edge type is a (src, rel, dst) tuple of str or a 'src__rel__dst' str, not {edge_type!r}")


_DTYPES = {
    "int64": torch.int64, "int32": torch.int32, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float64": torch.float64, "uint8": torch.uint8, "bool": torch.bool,
}


def _tensor(raw) -> Optional[torch.Tensor]:
    """A tensor the extension handed over as ``(dtype, DLPack capsule)`` (viewing its memory, no
    copy), ``(dtype, shape)`` (no element), or None (a field the batch does not carry)."""
    if raw is None:
        return None
    dtype, data = raw
    if isinstance(data, list):
        return torch.empty(data, dtype=_DTYPES[dtype])
    t = torch.utils.dlpack.from_dlpack(data)
    return t.view(torch.bool) if dtype == "bool" else t  # torch 1.13's DLPack has no bool


def _tensors(d: dict) -> dict:
    return {k: _tensor(v) if isinstance(v, tuple) or v is None else v for k, v in d.items()}


class NodeStore:
    """The tensors of one node type in a batch.

    Attributes:
        n_id: int64 ``[n]`` global ids of the sampled nodes; the batch's seeds of this type
            first (in a link-prediction batch, the anchors, then their label nodes).
        x: ``[n, dim]`` features (float32 unless the loader keeps the wire encoding), or None.
        y: int64 ``[n]`` labels, or None.
        x_scale, x_offset, x_bits: with a quantized encoding kept as it travelled
            (``decode_features=False``): float32 ``[dim]`` each, and the bits of each code; ``x``
            then holds the codes (uint8 ``[n, dim]`` for 8 bits, packed uint8
            ``[n, ceil(dim * x_bits / 8)]`` for 4, 2 and 1) and ``graphstore.dequantize(x,
            x_scale, x_offset, x_bits)`` restores the features, on any device. ``x_bits`` is 0
            otherwise.
        seeds: int64 ``[batch_size]``: this type's seeds as registered.
        batch_size: the number of seeds of this type: the first rows of ``n_id``, ``x``, ``y``.
        num_sampled_nodes: nodes added at each hop (entry 0: the seeds).
        seed_time: temporal loaders (``time_attr``) only, else None: int64 ``[batch_size]``, each
            seed's time (its ``input_time``, else its node time), as PyG's ``seed_time``.
        time: loaders with ``node_times=True``, types whose nodes store a time: int64 ``[n]``,
            each node's stored time, as PyG's ``time``; else None.
        sampled_time: temporal loaders only: int64 ``[n]``, the time each node was sampled at,
            which no edge drawn from it is newer than (a seed's own time; a label node's, its
            anchor's; another node's, the earliest among the nodes that reached it in the hop
            that added it). ``sampled_time - time`` is a node's age as its batch sees it.
        input_id: the seed type only (else None): int64 ``[batch_size]``, each seed's position in
            the loader's input — ``input_nodes``, or the split's nodes in ascending id order (the
            index into the split's id list) — as PyG's ``input_id``.
    """

    __slots__ = ("n_id", "x", "y", "x_scale", "x_offset", "x_bits", "seeds", "batch_size", "num_sampled_nodes",
                 "seed_time", "time", "sampled_time", "input_id")

    def __init__(self, d: dict):
        d = _tensors(d)
        for k in self.__slots__:
            setattr(self, k, d[k])

    @property
    def num_nodes(self) -> int:
        """The number of sampled nodes of this type."""
        return int(self.n_id.numel()) if self.n_id is not None else 0

    def __repr__(self) -> str:
        return f"NodeStore(num_nodes={self.num_nodes}, batch_size={self.batch_size})"


class EdgeStore:
    """The edges of one edge type in a batch, in message-passing direction.

    Attributes:
        edge_index: int64 ``[2, m]``: row 0 indexes the source type's nodes (the sampled
            neighbours), row 1 the destination type's (the nodes that sampled them), as PyG's
            ``MessagePassing`` consumes it.
        e_id: int64 ``[m]`` global edge ids, when asked for (``edge_ids=True``), else None.
        edge_attr: ``[m, d]`` edge features, when asked for (``edge_features=True``), else None.
        num_sampled_edges: edges added at each hop.
        stored_type: the edge type as the dataset stores it (the reverse of this key when the
            dataset's edges point from the sampling node to its neighbours).
    """

    __slots__ = ("edge_index", "e_id", "edge_attr", "num_sampled_edges", "stored_type")

    def __init__(self, d: dict):
        d = _tensors(d)
        for k in self.__slots__:
            setattr(self, k, d[k])

    @property
    def num_edges(self) -> int:
        """The number of sampled edges of this type."""
        return int(self.edge_index.size(1)) if self.edge_index is not None else 0

    def __repr__(self) -> str:
        return f"EdgeStore(num_edges={self.num_edges}, stored_type={self.stored_type!r})"


class PprWeights:
    """Personalized PageRank weights of one (seed type, node type) pair of a PPR batch.

    Attributes:
        seed_type, node_type: the node types of the seeds and of the weighted nodes.
        seed_index, node_index: int64 ``[k]`` local indices into those types' nodes.
        weight: float32 ``[k]`` the PPR weight of ``node_index[i]`` for ``seed_index[i]``.
    """

    __slots__ = ("seed_type", "node_type", "seed_index", "node_index", "weight")

    def __init__(self, d: dict):
        d = _tensors(d)
        for k in self.__slots__:
            setattr(self, k, d[k])


# The batch's own fields, its first node type's, and its first edge type's (the homogeneous view).
_INFO_FIELDS = frozenset(("input_id", "input_type", "epoch", "batch_index", "server", "shared_memory"))
_NODE_FIELDS = frozenset(NodeStore.__slots__) - {"input_id"}
_EDGE_FIELDS = frozenset(("edge_index", "e_id", "edge_attr", "num_sampled_edges"))
_FIELDS = _INFO_FIELDS | _NODE_FIELDS | _EDGE_FIELDS
_ABLP_FIELDS = frozenset(("anchors", "positive", "negative"))
_EMPTY_NODE = {k: None for k in NodeStore.__slots__} | {"x_bits": 0, "batch_size": 0, "num_sampled_nodes": []}
_EMPTY_EDGE = {k: None for k in EdgeStore.__slots__} | {"num_sampled_edges": [], "stored_type": ""}


class Batch:
    """One sampled subgraph, with the fields PyG's ``NeighborLoader`` gives.

    The tensors view the memory the loader received them into (or the server's shared memory
    on the same host): nothing is copied on the way to Python, and the memory stays valid as
    long as a tensor refers to it.

    Homogeneous fields (for a heterogeneous batch they are those of the first node and edge
    type; use ``batch[node_type]`` and ``batch[(src, rel, dst)]``):

    Attributes:
        x, y, n_id, edge_index, e_id, edge_attr: see ``NodeStore`` and ``EdgeStore``.
        batch_size: the number of seeds; the seeds are the first ``batch_size`` nodes.
        num_sampled_nodes, num_sampled_edges: per-hop counts (lists of int).
        input_id: int64 ``[batch_size]``: each seed's position in the loader's input (see
            ``NodeStore.input_id``), of the seed type ``input_type``; None for link-prediction
            batches and for split seeds with ``global_batches=False``.
        x_scale, x_offset, x_bits, seed_time, time, sampled_time: see ``NodeStore``.
        epoch, batch_index: which batch of which epoch this is.
        server: the index of the server (in the loader's ``servers``) that sampled it.
        anchors, positive, negative: link-prediction (ABLP) batches only, else None: int64
            local indices; ``anchors`` ``[a]`` into the anchor type's nodes, ``positive``
            ``[a, p]`` and ``negative`` ``[a, q]`` into the label type's nodes, padded with -1.
        ppr: PPR batches only: a list of ``PprWeights``.
    """

    def __init__(self, raw):
        # The loader's batch (graphstore._graphstore.RawBatch): each field becomes a torch.Tensor
        # the first time it is read, and is kept from then on (fields may be reassigned, e.g.
        # ``batch.x = batch.x.cuda()``). What every training step reads comes in one call.
        self._raw = raw
        x, edge_index, y, self.batch_size = raw.step_fields()
        self.x, self.edge_index, self.y = _tensor(x), _tensor(edge_index), _tensor(y)

    def __getattr__(self, name: str):
        # Only called for a name not set yet: the lazily read fields.
        raw = self.__dict__.get("_raw")
        if raw is None:
            raise AttributeError(name)
        if name == "_info":
            value = raw.info()
        elif name in _INFO_FIELDS:
            value = self._info[name]
            value = _tensor(value) if isinstance(value, tuple) or value is None else value
        elif name in _NODE_FIELDS:
            node = self._nodes.get(self._info["first_node_type"])
            value = getattr(node, name) if node is not None else _EMPTY_NODE[name]
        elif name in _EDGE_FIELDS:
            edge = self._edges.get(edge_type_of(self._info["first_edge_type"]))
            value = getattr(edge, name) if edge is not None else _EMPTY_EDGE[name]
        elif name in _ABLP_FIELDS:
            ablp = self._info["ablp"]
            value = _tensor(ablp[name]) if ablp is not None else None
        elif name == "ppr":
            value = [PprWeights(p) for p in self._info["ppr"]]
        elif name == "_nodes":
            value = {k: NodeStore(raw.node(k)) for k in raw.node_types()}
        elif name == "_edges":
            value = {edge_type_of(k): EdgeStore(raw.edge(k)) for k in raw.edge_types()}
        elif name == "_memory":
            value = raw.memory()
        else:
            raise AttributeError(f"'Batch' object has no attribute {name!r}")
        self.__dict__[name] = value
        return value

    def _fields(self) -> None:
        """Reads every field (for pickling, copying, or moving the batch)."""
        for name in (*_FIELDS, *_ABLP_FIELDS, "ppr", "_nodes", "_edges", "_memory"):
            getattr(self, name)

    def __getstate__(self) -> dict:
        # Pickling and deepcopy take every field, and leave the loader's batch behind (it
        # cannot leave this process).
        self._fields()
        return {k: v for k, v in self.__dict__.items() if k not in ("_raw", "_info")}

    def _to(self, device, non_blocking: bool = False) -> "Batch":
        """A copy of the batch with every tensor on ``device`` (the loader's ``device=``)."""
        self._fields()
        moved = Batch.__new__(Batch)
        state = {}
        for k, v in self.__dict__.items():
            if k in ("_raw", "_info", "_memory"):
                continue
            state[k] = _move(v, device, non_blocking)
        moved.__dict__.update(state)
        moved.__dict__["_memory"] = []
        return moved

    def _device_tensors(self):
        """Every tensor of a moved batch (the loader marks them used on the trainer's stream)."""
        yield from _walk(self.__dict__)

    @property
    def node_types(self) -> List[str]:
        """The node types in the batch."""
        return list(self._nodes)

    @property
    def edge_types(self) -> List[Union[EdgeType, str]]:
        """The edge types in the batch, as ``(src, rel, dst)`` tuples in message-passing
        direction."""
        return list(self._edges)

    @property
    def is_hetero(self) -> bool:
        """Whether the graph has more than one node or edge type."""
        return len(self._nodes) > 1 or len(self._edges) > 1

    @property
    def num_nodes(self) -> int:
        """Sampled nodes over every type."""
        return sum(n.num_nodes for n in self._nodes.values())

    def __getitem__(self, key: Union[str, EdgeType]) -> Union[NodeStore, EdgeStore]:
        """``batch["paper"]`` is a node type's ``NodeStore``; ``batch[("a", "r", "b")]`` (or
        ``batch["a__r__b"]``) an edge type's ``EdgeStore``."""
        if isinstance(key, str) and key in self._nodes:
            return self._nodes[key]
        ek = edge_type_of(key) if isinstance(key, str) else key
        if ek in self._edges:
            return self._edges[ek]
        raise KeyError(f"{key!r} is neither a node type {self.node_types} nor an edge type {self.edge_types}")

    def __contains__(self, key) -> bool:
        try:
            self[key]
            return True
        except (KeyError, TypeError):
            return False

    def _collect(self, store, attr):
        return {k: getattr(v, attr) for k, v in store.items() if getattr(v, attr) is not None}

    @property
    def x_dict(self) -> Dict[str, torch.Tensor]:
        """Features by node type (as ``HeteroData.x_dict``)."""
        return self._collect(self._nodes, "x")

    @property
    def y_dict(self) -> Dict[str, torch.Tensor]:
        """Labels by node type."""
        return self._collect(self._nodes, "y")

    @property
    def n_id_dict(self) -> Dict[str, torch.Tensor]:
        """Global node ids by node type."""
        return self._collect(self._nodes, "n_id")

    @property
    def time_dict(self) -> Dict[str, torch.Tensor]:
        """Stored node times by node type, for the types that have them (``node_times=True``)."""
        return self._collect(self._nodes, "time")

    @property
    def edge_index_dict(self) -> Dict[Union[EdgeType, str], torch.Tensor]:
        """``edge_index`` by edge type (as ``HeteroData.edge_index_dict``)."""
        return self._collect(self._edges, "edge_index")

    @property
    def batch_size_dict(self) -> Dict[str, int]:
        """Seeds per node type."""
        return {k: v.batch_size for k, v in self._nodes.items()}

    def to_pyg(self):
        """This batch as ``torch_geometric.data.Data`` (one node and edge type) or
        ``HeteroData``, sharing the tensors. Needs ``torch_geometric``; raises ImportError saying
        so when it is not installed."""
        try:
            from torch_geometric.data import Data, HeteroData  # noqa: PLC0415
        except ImportError as e:
            raise ImportError(
                "Batch.to_pyg() needs torch_geometric, which is not importable here; the batch's "
                "fields (x, edge_index, y, n_id, batch_size, ...) work without it") from e
        if not self.is_hetero:
            data = Data()
            for k in ("x", "y", "edge_index", "n_id", "e_id", "edge_attr", "input_id", "seed_time", "time",
                      "sampled_time"):
                if getattr(self, k) is not None:
                    data[k] = getattr(self, k)
            data.batch_size = self.batch_size
            data.num_sampled_nodes = self.num_sampled_nodes
            data.num_sampled_edges = self.num_sampled_edges
            if self.n_id is not None:
                data.num_nodes = int(self.n_id.numel())
            return data
        data = HeteroData()
        for k, v in self._nodes.items():
            for a in ("x", "y", "n_id", "time", "sampled_time", "input_id"):
                if getattr(v, a) is not None:
                    data[k][a] = getattr(v, a)
            # As PyG's NeighborLoader: seed_time and batch_size only on the types with seeds.
            if v.batch_size > 0:
                if v.seed_time is not None:
                    data[k].seed_time = v.seed_time
                data[k].batch_size = v.batch_size
            data[k].num_sampled_nodes = v.num_sampled_nodes
            data[k].num_nodes = v.num_nodes
        for k, v in self._edges.items():
            for a in ("edge_index", "e_id", "edge_attr"):
                if getattr(v, a) is not None:
                    data[k][a] = getattr(v, a)
            data[k].num_sampled_edges = v.num_sampled_edges
        return data

    def __repr__(self) -> str:
        if self.is_hetero:
            return (f"Batch(epoch={self.epoch}, batch_index={self.batch_index}, nodes={self._nodes}, "
                    f"edges={self._edges})")
        return (f"Batch(epoch={self.epoch}, batch_index={self.batch_index}, batch_size={self.batch_size}, "
                f"num_nodes={self.num_nodes}, num_edges={sum(e.num_edges for e in self._edges.values())})")
