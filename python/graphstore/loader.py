"""The trainer's loader: registers seeds on every server and iterates sampled batches."""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import torch

from graphstore import _device, _graphstore
from graphstore.batch import Batch, EdgeType, edge_type_name
from graphstore.v1 import graphstore_pb2 as pb


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


_PPR_DEFAULTS = _graphstore.ppr_defaults()


@dataclass(frozen=True)
class PprOptions:
    """Options of the PPR sampler (``sampler="ppr"``).

    Attributes:
        alpha: restart probability, in (0, 1).
        eps: residual threshold of forward push, > 0.
        max_nodes_per_seed: keep at most this many nodes per seed, highest weight first.
    """

    alpha: float = _PPR_DEFAULTS["alpha"]
    eps: float = _PPR_DEFAULTS["eps"]
    max_nodes_per_seed: int = _PPR_DEFAULTS["max_nodes_per_seed"]


# ----- Conversions: what trainers pass, in the plain values the extension checks ---------------
#
# The options themselves (names, defaults, docs and every check) are declared once, in the
# extension (python/loader_schema.cc); this module only changes representations: tensors and
# masks to lists, edge-type tuples to names, dataclasses to dicts. A value it cannot convert is
# handed over as it is, and the extension says what is wrong with it.

_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _plain(value):
    """Numbers of other types (numpy's, torch's scalars) as Python ints and floats."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype in _INT_DTYPES:
        return int(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, int):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, (int, float)):
        return float(value)
    return value


def _int_list(name: str, value, what: str, mask: bool = False) -> list:
    if not isinstance(value, torch.Tensor) and hasattr(value, "__array__"):
        value = torch.as_tensor(value)  # numpy arrays
    if isinstance(value, torch.Tensor):
        if mask and value.dtype == torch.bool:
            value = value.nonzero().flatten()
        elif value.dtype not in _INT_DTYPES:
            raise TypeError(f"{name} must hold {what}{' or be a bool mask' if mask else ''}, not {value.dtype}")
        if value.dim() != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {list(value.shape)}")
        return value.to(torch.int64).tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a tensor or a list of {what}, not {type(value).__name__}")
    return [_plain(v) for v in value]


def _servers(value):
    if isinstance(value, str):
        return [s for s in value.split(",") if s]
    return list(value) if isinstance(value, (list, tuple)) else value


def _num_neighbors(value):
    if isinstance(value, dict):
        return {edge_type_name(k): [_plain(v) for v in hops] if isinstance(hops, (list, tuple)) else hops
                for k, hops in value.items()}
    if isinstance(value, torch.Tensor):
        return _int_list("num_neighbors", value, "ints")
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _input_nodes(value):
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        ids = None if value[1] is None else _int_list("input_nodes[1]", value[1], "integer node ids", mask=True)
        return {"node_type": value[0], "ids": ids}
    return _int_list("input_nodes", value, "integer node ids", mask=True)


def _input_time(value):
    return None if value is None else _int_list("input_time", value, "integer times")


def _weighted(value):
    if isinstance(value, bool) or isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [edge_type_name(t) for t in value]


def _ppr(value):
    if value is None:
        return None
    if not isinstance(value, PprOptions):
        raise TypeError(f"ppr must be graphstore.PprOptions, not {type(value).__name__}")
    return {"alpha": float(value.alpha), "eps": float(value.eps), "max_nodes_per_seed": _plain(value.max_nodes_per_seed)}


def _ablp(value):
    if value is None:
        return None
    if not isinstance(value, AblpInput):
        raise TypeError(f"ablp must be graphstore.AblpInput, not {type(value).__name__}")
    neg = value.negative_edge_type
    return {"supervision_edge_type": edge_type_name(value.supervision_edge_type), "split": value.split,
            "negative_edge_type": None if neg is None else edge_type_name(neg)}


def _device_name(value):
    return str(value) if isinstance(value, torch.device) else value


_CONVERT = {
    "servers": _servers, "num_neighbors": _num_neighbors, "input_nodes": _input_nodes, "input_time": _input_time,
    "weighted": _weighted, "ppr": _ppr, "ablp": _ablp, "device": _device_name,
}

# (name, default, positional, doc) of every option, in signature order.
_OPTIONS = _graphstore.options()


def _signature() -> inspect.Signature:
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, default, positional, _ in _OPTIONS:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if positional else inspect.Parameter.KEYWORD_ONLY
        params.append(inspect.Parameter(name, kind, default=inspect.Parameter.empty if name == "servers" else default))
    return inspect.Signature(params)


def _doc_of_options() -> str:
    lines = []
    for name, default, positional, doc in _OPTIONS:
        if name == "weighted":
            lines.append("")
            lines.append("    Keyword-only (graphstore's own):")
        words, line = doc.split(), f"        {name}: "
        for word in words:
            if len(line) + len(word) + 1 > 100:
                lines.append(line.rstrip())
                line = "            "
            line += word + " "
        lines.append(line.rstrip())
    return "\n".join(lines)


_SIGNATURE = _signature()


def _bound_options(*args, **kwargs):
    """(the options dict the extension takes, the bound arguments) of a Loader's arguments."""
    bound = _SIGNATURE.bind(None, *args, **kwargs)
    options = {}
    for name, value in list(bound.arguments.items())[1:]:
        convert = _CONVERT.get(name)
        options[name] = convert(value) if convert is not None else _plain(value)
    nodes = bound.arguments.get("input_nodes")
    nodes = nodes[1] if isinstance(nodes, tuple) and len(nodes) == 2 else nodes
    if bound.arguments.get("raw_ids") is not None and str(getattr(nodes, "dtype", "")) in ("torch.bool", "bool"):
        raise ValueError("input_nodes: a bool mask selects nodes by global id; with raw_ids give the dataset's own ids")
    return options, bound


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
{options}

    Raises:
        TypeError, ValueError: a bad argument, naming it.
        GraphstoreError: a server refused (with its gRPC code and message) or is unreachable.
    """

    def __init__(self, *args, **kwargs):
        self._impl = None
        options, bound = _bound_options(*args, **kwargs)
        device = _device_name(bound.arguments.get("device"))
        pin = bound.arguments.get("pin_memory", False)
        hook = None
        self._pipeline = None
        self._device = None
        if isinstance(pin, bool) and (pin or (isinstance(device, str) and device.startswith("cuda"))):
            option = "pin_memory=True" if pin else f"device={device!r}"
            runtime = _device.cuda_runtime(option, torch.device(device) if isinstance(device, str)
                                           and device.startswith("cuda") else None)
            hook = self._registry = _device.HostRegistry(runtime)
            if isinstance(device, str) and device.startswith("cuda"):
                self._device = runtime.device
                self._pipeline = _device.DevicePipeline(runtime)
        self._servers = options.get("servers")
        self._impl = _graphstore.Loader(options, hook)
        self._servers = list(self._servers)
        self._next_epoch = 0
        self._current = None  # the epoch being iterated

    # ----- iteration ------------------------------------------------------------------------

    def epoch(self, epoch: int) -> Iterator[Batch]:
        """Starts ``epoch`` on every server and returns an iterator over its batches (in
        arrival order). Epochs must increase; starting one ends the iteration of the last."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
            raise TypeError(f"epoch must be an int, not {type(epoch).__name__}")
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        impl = self._open()
        impl.start_epoch(int(epoch))
        self._next_epoch = int(epoch) + 1
        token = object()
        self._current = token
        if self._pipeline is not None:
            return self._device_batches(impl, epoch, token)
        return self._batches(impl, epoch, token)

    def _batches(self, impl, epoch, token) -> Iterator[Batch]:
        while True:
            if self._current is not token:
                raise RuntimeError(f"epoch {epoch} was superseded by a later epoch of this loader")
            d = impl.next()
            if d is None:
                return
            yield Batch(d)

    def _device_batches(self, impl, epoch, token) -> Iterator[Batch]:
        # One batch ahead: batch k+1 is copied on the side stream while the trainer has batch k.
        pipeline, device = self._pipeline, self._device
        ahead = None
        for host in self._batches(impl, epoch, token):
            # Its host tensors made first (fields are made on first use): the copies the pipeline
            # queues, and times, are then the copies alone.
            host._fields()
            moved = pipeline.start(host, lambda b: b._to(device, non_blocking=True))
            if ahead is not None:
                pipeline.ready(ahead)
                yield ahead
            ahead = moved
        if ahead is not None:
            pipeline.ready(ahead)
            yield ahead

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next ``iter(loader)`` runs (afterwards they count up from it)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
        self._next_epoch = int(epoch)

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
        """Bytes received over connections for this loader's batches so far: the streams' and,
        where rows come from their owners, the owners' answers."""
        return int(self._open().bytes_received())

    @property
    def bytes_received_by_server(self) -> List[Tuple[int, int]]:
        """``bytes_received`` per server, in the servers' order: ``(over its streams, in its
        answers as the owner of rows)``."""
        return [(int(s), int(a)) for s, a in self._open().bytes_received_by_server()]

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


Loader.__doc__ = Loader.__doc__.replace("{options}", _doc_of_options())
Loader.__init__.__signature__ = _SIGNATURE
