"""The trainer's loader: registers seeds on every server and iterates sampled batches."""

from __future__ import annotations

import hashlib
import os
import numbers
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Union

import torch

from graphstore import _graphstore
from graphstore.batch import Batch, EdgeType, edge_type_name
from graphstore.v1 import graphstore_pb2 as pb

_SAMPLERS = {
    "neighbor": pb.SAMPLER_KIND_NEIGHBOR,
    "ppr": pb.SAMPLER_KIND_PPR,
    "subgraph": pb.SAMPLER_KIND_SUBGRAPH,
}
_NEGATIVE_SAMPLING = {
    "none": pb.NEGATIVE_SAMPLING_NONE,
    "uniform": pb.NEGATIVE_SAMPLING_UNIFORM,
    "degree": pb.NEGATIVE_SAMPLING_DEGREE,
}
_ENCODINGS = ("", "float32", "float16", "bfloat16", "int8", "int4", "int2", "int1")
_TEMPORAL_STRATEGIES = {
    "uniform": pb.TEMPORAL_STRATEGY_UNIFORM,
    "last": pb.TEMPORAL_STRATEGY_LAST,
}


@dataclass(frozen=True)
class AblpInput:
    """Anchor-based link-prediction seeds (GiGL's ABLP): every anchor node with outgoing edges
    of ``supervision_edge_type`` in ``split``; each batch carries the anchors, their positive
    (and negative) label nodes, and the neighbourhood of all of them.

    Attributes:
        supervision_edge_type: the edge type whose edges are the positive labels, as a
            ``(src, rel, dst)`` tuple or ``"src__rel__dst"``; ``src`` is the anchor type.
        split: ``"train"``, ``"val"`` or ``"test"``.
        negative_edge_type: an edge type holding explicit negative labels, or None.
    """

    supervision_edge_type: Union[EdgeType, str]
    split: str = "train"
    negative_edge_type: Optional[Union[EdgeType, str]] = None


@dataclass(frozen=True)
class PprOptions:
    """Options of the PPR sampler (``sampler="ppr"``).

    Attributes:
        alpha: restart probability, in (0, 1).
        eps: residual threshold of forward push, > 0.
        max_nodes_per_seed: keep at most this many nodes per seed, highest weight first.
    """

    alpha: float = 0.15
    eps: float = 1e-4
    max_nodes_per_seed: int = 32


def _int(name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _str(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _fanouts(name, value) -> List[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of ints, not {type(value).__name__}")
    out = [_int(f"{name}[{i}]", v) for i, v in enumerate(value)]
    for i, v in enumerate(out):
        if v < -1:
            raise ValueError(f"{name}[{i}] must be >= -1 (-1: every neighbour), got {v}")
    if not out:
        raise ValueError(f"{name} must name at least one hop")
    return out


def _times(name, value, count) -> List[int]:
    if isinstance(value, torch.Tensor):
        if value.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            raise TypeError(f"{name} must hold integer times, not {value.dtype}")
        if value.dim() != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {list(value.shape)}")
        times = value.to(torch.int64).tolist()
    elif isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a tensor or a list of int times, not {type(value).__name__}")
    else:
        times = [_int(f"{name}[{i}]", v, -(1 << 63)) for i, v in enumerate(value)]
    if len(times) != count:
        raise ValueError(f"{name} has {len(times)} times for {count} seeds in input_nodes; give one per seed")
    return times


def _ids(name, value) -> List[int]:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            value = value.nonzero().flatten()
        elif value.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            raise TypeError(f"{name} must hold integer node ids or be a bool mask, not {value.dtype}")
        if value.dim() != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {list(value.shape)}")
        return value.to(torch.int64).tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a tensor or a list of node ids, not {type(value).__name__}")
    return [_int(f"{name}[{i}]", v, 0) for i, v in enumerate(value)]


class Loader:
    """Samples subgraphs for a trainer from graphstore servers, as PyG's ``NeighborLoader``
    does from a graph in memory::

        loader = graphstore.Loader(servers=["host:port", ...], num_neighbors=[15, 10, 5],
                                   batch_size=1024, split="train", shuffle=True)
        for epoch in range(10):
            for batch in loader.epoch(epoch):
                out = model(batch.x, batch.edge_index)[:batch.batch_size]

    Every server hosts one partition of the graph (pass them in partition order); each samples
    the seeds it owns and streams the batches, which arrive in arrival order. A server on this
    host hands batches over through shared memory, the others over the connection. The
    loader holds one channel per server until ``close()`` (also on garbage collection and at
    the end of a ``with`` block).

    Args:
        servers: ``"host:port"`` of every server, in partition order (a list, or one
            comma-separated str).
        num_neighbors: neighbours to sample per hop (``-1``: all), for a graph with one edge
            type; or a dict from edge type (``(src, rel, dst)`` or ``"src__rel__dst"``, as the
            dataset stores it) to per-hop lists.
        input_nodes: the seeds, as PyG takes them: None (every node of the split), a node type
            (str), ids (a list or int tensor) or a bool mask over the nodes, or a
            ``(node_type, ids)`` tuple. Each id at most once.
        batch_size: seeds per batch.
        shuffle: permute the seeds each epoch (deterministically, from ``seed`` and the epoch).
        drop_last: drop each server's last batch when it has fewer than ``batch_size`` seeds.
        replace: sample neighbours with replacement.

    Keyword-only (graphstore's own):
        split: the stored split the seeds come from when ``input_nodes`` gives no ids:
            ``"train"``, ``"val"``, ``"test"``, or ``""`` for every node.
        rank, world_size: this trainer's share of the seeds on every server (GiGL's rank and
            world size).
        seed: sampling seed: batches depend only on (seed, epoch, batch index).
        node_features, labels, edge_ids, edge_features: what each batch carries (``x``,
            ``y``, ``e_id``, ``edge_attr``).
        sampler: ``"neighbor"`` (k-hop), ``"subgraph"`` (k-hop, then the induced subgraph)
            or ``"ppr"`` (personalized PageRank neighbourhoods; see ``ppr``).
        weighted: draw neighbours in proportion to the stored edge weights: ``True`` for every
            edge type, or a list of edge types (``"src__rel__dst"`` or ``(src, rel, dst)``); each
            must store weights (``graphstore-partition --edge_weights``). Zero-weight edges are
            never drawn. With ``replace``, draws are independent.
        weight_attr: PyG's name for the same choice: ``"edge_weight"`` (or ``"weight"``) draws
            every edge type by the weights the dataset stores, as ``weighted=True``; ``None``:
            uniform (unless ``weighted`` says otherwise).
        time_attr: ``"time"`` samples temporally with the times the dataset stores (node times
            ``book/<type>.time.npy``, edge times ``edges/<type>/time.npy``; ``graphstore-partition
            --node_times / --edge_times``): every seed has a time (``input_time``, else its node
            time) and a node only reaches neighbours whose edge time is at or before the time of
            the node that reached it, so a seed never sees the future. ``None``: not temporal.
        input_time: with ``time_attr`` and ids in ``input_nodes``: each seed's time (a list or
            int tensor, in the order of the ids). Default: the seeds' node times.
        temporal_strategy: with ``time_attr``: ``"uniform"`` draws among the neighbours at or
            before a node's time, ``"last"`` takes the most recent of them. Temporal batches carry
            ``seed_time`` and ``sampled_time`` (see ``NodeStore``).
        node_times: each batch carries ``time``: every sampled node's stored time, for the node
            types that store times (at least one must), temporal or not (PyG's ``time``; one
            random read per node on the server, as labels are).
        ppr: ``PprOptions`` for ``sampler="ppr"``.
        ablp: ``AblpInput`` for link-prediction batches (seeds are its anchors).
        num_negatives, negative_sampling: generated negatives per anchor of an ABLP batch
            (``"none"``, ``"uniform"``, ``"degree"``).
        feature_encoding: how feature rows travel from remote servers: ``"float32"``,
            ``"float16"``, ``"bfloat16"``, ``""`` (as stored), or quantized per column over its
            range in 255, 15, 3 or 1 steps: ``"int8"``, ``"int4"``, ``"int2"``, ``"int1"`` (1,
            1/2, 1/4 and 1/8 byte a value, within half a step; ``"int1"`` keeps 0/1 features
            exact).
        feature_cache_rows: feature rows of the hottest nodes this trainer keeps (fetched
            once); batches then carry only the other rows. 0: no cache.
        decode_features: hand ``x`` as float32 (True) or in the wire encoding for decoding on
            the trainer's device (quantized codes with ``x_scale``, ``x_offset`` and ``x_bits``;
            see ``graphstore.dequantize``).
        shared_memory: take batches through shared memory from servers on this host.
        prefetch: batches read ahead per server.
        backend_key: the server-side sampling backend to create or join; loaders with the same
            key share its workers and must ask for the same batch shape. Default: one backend
            per batch shape (loaders asking for the same shape share it).
        server_workers, max_in_flight_per_channel: the backend's worker threads and batches of
            one channel sampled at once (0: the server's defaults).
        buffer_messages, buffer_bytes: server-side buffer of this loader's channels (0: the
            server's defaults).
        stream_window_bytes: flow-control window of each stream (0: gRPC's self-tuning one).
        deadline: seconds every unary call may take.
        lease_ms: channel lease on the servers (0: their default).
        reconnect_deadline: seconds a server that restarts or drops the connection is retried
            (the epoch resumes from the first batch not yet delivered, every batch once and
            identical to an uninterrupted epoch); past it the server's last error is raised.
            0: raise at once.
        renew_leases: renew the channels' leases in the background, so a trainer busy for
            longer than the lease (validation, a checkpoint) keeps them.
        keepalive: seconds without hearing from a server after which the loader pings it, and
            fails its stream (like a server that went away) when no answer comes within
            ``keepalive_timeout`` seconds: a hung server or a dead link raises instead of
            leaving the trainer waiting for ever. 0: no pings.
        worker_key: this trainer's name in server logs and stats.
        tls: connect with TLS (implied by ``tls_ca``, ``tls_cert`` and ``tls_key``); without
            ``tls_ca`` the system's CA certificates verify the servers.
        tls_ca: PEM file of the CA that signed the servers' certificates.
        tls_cert, tls_key: PEM files of this trainer's client certificate and key, for servers
            that require mutual TLS.
        tls_server_name: the name the servers' certificates carry, when not the host of their
            address.
        token: bearer token sent with every call (servers run with ``--auth_tokens``); default:
            the ``GRAPHSTORE_TOKEN`` environment variable, if set.

    Raises:
        TypeError, ValueError: a bad argument, naming it.
        GraphstoreError: a server refused (with its gRPC code and message) or is unreachable.
    """

    def __init__(self, servers: Union[Sequence[str], str], num_neighbors=None, input_nodes=None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, replace: bool = False, *,
                 weighted: Union[bool, Sequence] = False, weight_attr: Optional[str] = None,
                 time_attr: Optional[str] = None, input_time=None,
                 temporal_strategy: str = "uniform",
                 split: str = "train", rank: int = 0, world_size: int = 1, seed: int = 0,
                 node_features: bool = True, labels: bool = True, edge_ids: bool = False,
                 edge_features: bool = False, node_times: bool = False, sampler: str = "neighbor",
                 ppr: Optional[PprOptions] = None,
                 ablp: Optional[AblpInput] = None, num_negatives: int = 0, negative_sampling: str = "uniform",
                 feature_encoding: str = "", feature_cache_rows: int = 0, decode_features: bool = True,
                 shared_memory: bool = True, prefetch: int = 4, backend_key: Optional[str] = None,
                 server_workers: int = 0, max_in_flight_per_channel: int = 0, buffer_messages: int = 0,
                 buffer_bytes: int = 0, stream_window_bytes: int = 8 << 20, deadline: float = 30.0,
                 lease_ms: int = 0, reconnect_deadline: float = 60.0, renew_leases: bool = True,
                 keepalive: float = 20.0, keepalive_timeout: float = 10.0,
                 worker_key: str = "python-trainer", tls: bool = False,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None, token: Optional[str] = None):
        self._impl = None
        if isinstance(servers, str):
            servers = [s for s in servers.split(",") if s]
        if not isinstance(servers, Sequence) or not all(isinstance(s, str) for s in servers):
            raise TypeError("servers must be a list of 'host:port' str")
        if not servers:
            raise ValueError("servers must name at least one server")
        config = pb.SamplingConfig()
        config.batch_size = _int("batch_size", batch_size, 1)
        config.shuffle = _bool("shuffle", shuffle)
        config.drop_last = _bool("drop_last", drop_last)
        config.replace = _bool("replace", replace)
        if weight_attr is not None:
            if _str("weight_attr", weight_attr) not in ("edge_weight", "weight"):
                raise ValueError("weight_attr must be 'edge_weight' or 'weight' (the weights the dataset stores) "
                                 f"or None, got {weight_attr!r}")
            if weighted is not False:
                raise ValueError("give weight_attr or weighted, not both")
            weighted = True
        if weighted is True:
            config.weighted_edge_types.append("*")
        elif weighted is not False:
            if isinstance(weighted, str) or not isinstance(weighted, Sequence) or not weighted:
                raise TypeError("weighted must be True, False or a non-empty list of edge types")
            config.weighted_edge_types.extend(edge_type_name(t) for t in weighted)
        config.with_node_features = _bool("node_features", node_features)
        config.with_labels = _bool("labels", labels)
        config.with_edge_ids = _bool("edge_ids", edge_ids)
        config.with_edge_features = _bool("edge_features", edge_features)
        config.with_node_times = _bool("node_times", node_times)
        if _str("sampler", sampler) not in _SAMPLERS:
            raise ValueError(f"sampler must be one of {sorted(_SAMPLERS)}, got {sampler!r}")
        config.kind = _SAMPLERS[sampler]
        if num_neighbors is None:
            if sampler != "ppr":
                raise ValueError("num_neighbors is required for the neighbor and subgraph samplers")
        elif isinstance(num_neighbors, dict):
            if not num_neighbors:
                raise ValueError("num_neighbors must name at least one edge type")
            for k, v in num_neighbors.items():
                name = edge_type_name(k)
                config.num_neighbors_by_type[name].per_hop.extend(_fanouts(f"num_neighbors[{k!r}]", v))
        else:
            config.num_neighbors.extend(_fanouts("num_neighbors", num_neighbors))
        if ppr is not None:
            if not isinstance(ppr, PprOptions):
                raise TypeError(f"ppr must be graphstore.PprOptions, not {type(ppr).__name__}")
            config.ppr.alpha, config.ppr.eps = float(ppr.alpha), float(ppr.eps)
            config.ppr.max_nodes_per_seed = _int("ppr.max_nodes_per_seed", ppr.max_nodes_per_seed, 1)
        elif sampler == "ppr":
            d = PprOptions()
            config.ppr.alpha, config.ppr.eps, config.ppr.max_nodes_per_seed = d.alpha, d.eps, d.max_nodes_per_seed
        config.num_negatives = _int("num_negatives", num_negatives, 0)
        if _str("negative_sampling", negative_sampling) not in _NEGATIVE_SAMPLING:
            raise ValueError(f"negative_sampling must be one of {sorted(_NEGATIVE_SAMPLING)}, got {negative_sampling!r}")
        config.negative_sampling = _NEGATIVE_SAMPLING[negative_sampling] if config.num_negatives else 0

        options = pb.SamplerOptions(num_workers=_int("server_workers", server_workers, 0),
                                    max_in_flight_per_channel=_int("max_in_flight_per_channel",
                                                                   max_in_flight_per_channel, 0))
        node_type, ids = "", []
        if input_nodes is None:
            pass
        elif isinstance(input_nodes, str):
            node_type = input_nodes
        elif isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str):
            node_type = input_nodes[0]
            if input_nodes[1] is not None:
                ids = _ids("input_nodes[1]", input_nodes[1])
        else:
            ids = _ids("input_nodes", input_nodes)
        if input_nodes is not None and not isinstance(input_nodes, str) and not ids and (
                not isinstance(input_nodes, tuple) or input_nodes[1] is not None):
            raise ValueError("input_nodes holds no node id")
        seed_times = []
        if _str("temporal_strategy", temporal_strategy) not in _TEMPORAL_STRATEGIES:
            raise ValueError(f"temporal_strategy must be one of {sorted(_TEMPORAL_STRATEGIES)}, "
                             f"got {temporal_strategy!r}")
        if time_attr is not None:
            if _str("time_attr", time_attr) != "time":
                raise ValueError(f"time_attr must be 'time' (the times the dataset stores) or None, got {time_attr!r}")
            config.temporal_strategy = _TEMPORAL_STRATEGIES[temporal_strategy]
        if input_time is not None:
            if time_attr is None:
                raise ValueError("input_time needs time_attr='time' (temporal sampling)")
            if not ids:
                raise ValueError("input_time needs the seeds' ids in input_nodes (one time per id)")
            seed_times = _times("input_time", input_time, len(ids))
        ablp_bytes = None
        if ablp is not None:
            if not isinstance(ablp, AblpInput):
                raise TypeError(f"ablp must be graphstore.AblpInput, not {type(ablp).__name__}")
            if ids:
                raise ValueError("give either ablp or ids in input_nodes, not both")
            sup = edge_type_name(ablp.supervision_edge_type)
            req = pb.GetAblpInputRequest(split=_str("ablp.split", ablp.split), supervision_edge_type=sup,
                                         node_type=node_type or sup.split("__")[0])
            if ablp.negative_edge_type is not None:
                req.negative_edge_type = edge_type_name(ablp.negative_edge_type)
            ablp_bytes = req.SerializeToString()
        rank, world_size = _int("rank", rank, 0), _int("world_size", world_size, 1)
        if rank >= world_size:
            raise ValueError(f"rank must be < world_size ({world_size}), got {rank}")
        if _str("feature_encoding", feature_encoding).lower() not in _ENCODINGS:
            raise ValueError(f"feature_encoding must be one of {[e for e in _ENCODINGS if e]} or '', "
                             f"got {feature_encoding!r}")
        if isinstance(deadline, bool) or not isinstance(deadline, numbers.Real) or deadline <= 0:
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        if (isinstance(reconnect_deadline, bool) or not isinstance(reconnect_deadline, numbers.Real)
                or not reconnect_deadline >= 0):
            raise ValueError(f"reconnect_deadline must be a number of seconds >= 0, got {reconnect_deadline!r}")
        for name, value, least in (("keepalive", keepalive, 0), ("keepalive_timeout", keepalive_timeout, 0.001)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= least:
                raise ValueError(f"{name} must be a number of seconds >= {least:g}, got {value!r}")
        if backend_key is None:
            digest = hashlib.sha1(config.SerializeToString(deterministic=True) + options.SerializeToString(
                deterministic=True)).hexdigest()[:16]
            backend_key = f"python/{digest}"
        security = {}
        for name, value in (("tls_ca", tls_ca), ("tls_cert", tls_cert), ("tls_key", tls_key),
                            ("tls_server_name", tls_server_name), ("token", token)):
            security[name] = "" if value is None else _str(name, value)
        if token is None:
            security["token"] = os.environ.get("GRAPHSTORE_TOKEN", "")
        for name in ("tls_ca", "tls_cert", "tls_key"):
            if security[name] and not os.path.isfile(security[name]):
                raise ValueError(f"{name}: no file {security[name]!r}")
        self._servers = list(servers)
        self._impl = _graphstore.Loader(
            servers=self._servers, config=config.SerializeToString(), sampler_options=options.SerializeToString(),
            ablp=ablp_bytes, backend_key=_str("backend_key", backend_key), node_type=node_type,
            split=_str("split", split), seeds=ids, seed_times=seed_times, rank=rank, world_size=world_size,
            seed=_int("seed", seed, 0), buffer_messages=_int("buffer_messages", buffer_messages, 0),
            buffer_bytes=_int("buffer_bytes", buffer_bytes, 0), prefetch=_int("prefetch", prefetch, 1),
            stream_window_bytes=_int("stream_window_bytes", stream_window_bytes, 0),
            deadline_ms=int(deadline * 1000), lease_ms=_int("lease_ms", lease_ms, 0),
            worker_key=_str("worker_key", worker_key), shared_memory=_bool("shared_memory", shared_memory),
            feature_encoding=feature_encoding, feature_cache_rows=_int("feature_cache_rows", feature_cache_rows, 0),
            decode_features=_bool("decode_features", decode_features),
            reconnect_deadline_ms=int(reconnect_deadline * 1000), renew_leases=_bool("renew_leases", renew_leases),
            keepalive_time_ms=int(keepalive * 1000), keepalive_timeout_ms=max(1, int(keepalive_timeout * 1000)),
            tls=_bool("tls", tls), **security)
        self._next_epoch = 0
        self._current = None  # the epoch being iterated

    # ----- iteration ------------------------------------------------------------------------

    def epoch(self, epoch: int) -> Iterator[Batch]:
        """Starts ``epoch`` on every server and returns an iterator over its batches (in
        arrival order). Epochs must increase; starting one ends the iteration of the last."""
        epoch = _int("epoch", epoch, 0)
        impl = self._open()
        impl.start_epoch(epoch)
        self._next_epoch = epoch + 1
        token = object()
        self._current = token
        return self._batches(impl, epoch, token)

    def _batches(self, impl, epoch, token) -> Iterator[Batch]:
        while True:
            if self._current is not token:
                raise RuntimeError(f"epoch {epoch} was superseded by a later epoch of this loader")
            d = impl.next()
            if d is None:
                return
            yield Batch(d)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next ``iter(loader)`` runs (afterwards they count up from it)."""
        self._next_epoch = _int("epoch", epoch, 0)

    def __iter__(self) -> Iterator[Batch]:
        """The batches of the next epoch: 0 first, then one more each time (or as
        ``set_epoch`` says)."""
        return self.epoch(self._next_epoch)

    def __len__(self) -> int:
        """Batches per epoch over all servers."""
        return int(self._open().num_batches())

    # ----- what the loader knows ----------------------------------------------------------------

    @property
    def meta(self) -> "pb.DatasetMeta":
        """The dataset's ``graphstore.v1.DatasetMeta`` (node and edge types, feature sizes,
        classes, partitions)."""
        m = pb.DatasetMeta()
        m.ParseFromString(self._open().meta())
        return m

    @property
    def servers(self) -> List[str]:
        """The servers, in partition order."""
        return list(self._servers)

    @property
    def num_seeds(self) -> int:
        """Seeds per epoch over all servers."""
        return int(self._open().num_seeds())

    @property
    def num_shared_memory_servers(self) -> int:
        """How many servers hand batches over through shared memory."""
        return int(self._open().num_shared_memory_servers())

    @property
    def num_reconnects(self) -> int:
        """Times a server that restarted or dropped the connection was reconnected and its
        epoch resumed."""
        return int(self._open().num_reconnects())

    @property
    def num_cached_rows(self) -> int:
        """Feature rows in this trainer's cache, over all node types."""
        return int(self._open().num_cached_rows())

    @property
    def bytes_received(self) -> int:
        """Bytes received over connections for this loader's batches so far."""
        return int(self._open().bytes_received())

    @property
    def channel_ids(self) -> List[int]:
        """This loader's channel on every server (for ``DescribeChannel``)."""
        impl = self._open()
        return [int(impl.channel_id(i)) for i in range(len(self._servers))]

    # ----- lifetime -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether ``close()`` ran."""
        return self._impl is None or self._impl.closed

    def close(self) -> None:
        """Ends open streams and destroys this loader's channels on every server. Idempotent.
        Batches already taken keep their tensors."""
        if self._impl is not None:
            self._current = None
            self._impl.close()

    def shutdown_servers(self) -> None:
        """Asks every server to exit (the end of a job that owns its servers), then closes."""
        self._open().shutdown_servers()

    def _open(self):
        if self._impl is None or self._impl.closed:
            from graphstore.errors import GraphstoreError  # noqa: PLC0415
            raise GraphstoreError("FAILED_PRECONDITION", 9, "the loader is closed")
        return self._impl

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} batches per epoch"
        return f"graphstore.Loader(servers={self._servers}, {state})"
