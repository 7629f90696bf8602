"""Stand-ins of torch_geometric.data's remote-backend classes and of Data / HeteroData."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional, Tuple

import torch

_UNSET = object()


@dataclass
class TensorAttr:
    group_name: Any = _UNSET
    attr_name: Any = _UNSET
    index: Any = _UNSET

    def is_set(self, key):
        return getattr(self, key) is not _UNSET


class EdgeLayout(Enum):
    """As PyG's: a plain Enum, so an attribute's layout is EdgeLayout.COO, never the string."""
    COO = "coo"
    CSC = "csc"
    CSR = "csr"


@dataclass
class EdgeAttr:
    edge_type: Any
    layout: Any
    is_sorted: bool = False
    size: Optional[Tuple[int, int]] = None

    def __post_init__(self):
        self.layout = EdgeLayout(self.layout)  # PyG's __init__ casts it


class FeatureStore:
    """As PyG's: public calls build a TensorAttr and hand it to the underscored methods."""

    def __init__(self, tensor_attr_cls=None):
        self._tensor_attr_cls = tensor_attr_cls or TensorAttr

    def get_tensor(self, *args, **kwargs):
        attr = args[0] if args and isinstance(args[0], TensorAttr) else TensorAttr(*args, **kwargs)
        if not attr.is_set("index"):
            attr.index = None
        out = self._get_tensor(attr)
        if out is None:
            raise KeyError(attr)
        return out

    def multi_get_tensor(self, attrs):
        for a in attrs:
            if not a.is_set("index"):
                a.index = None
        return self._multi_get_tensor(attrs)

    def get_tensor_size(self, *args, **kwargs):
        attr = args[0] if args and isinstance(args[0], TensorAttr) else TensorAttr(*args, **kwargs)
        if not attr.is_set("index"):
            attr.index = None
        return self._get_tensor_size(attr)

    def put_tensor(self, tensor, *args, **kwargs):
        return self._put_tensor(tensor, TensorAttr(*args, **kwargs))

    def __getitem__(self, key):
        # store[group, attr, index] (the fully given form of PyG's indexing).
        group, attr, index = key
        return self.get_tensor(TensorAttr(group, attr, index))


class GraphStore:
    def __init__(self, edge_attr_cls=None):
        self._edge_attr_cls = edge_attr_cls or EdgeAttr

    def get_edge_index(self, *args, **kwargs):
        attr = args[0] if args and isinstance(args[0], EdgeAttr) else EdgeAttr(*args, **kwargs)
        return self._get_edge_index(attr)


class _Store(dict):
    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError as e:
            raise AttributeError(k) from e

    def __setattr__(self, k, v):
        self[k] = v

    def __contains__(self, k):
        return dict.__contains__(self, k)


class Data(_Store):
    pass


class HeteroData(_Store):
    def __getitem__(self, key):
        if key not in self:
            dict.__setitem__(self, key, _Store())
        return dict.__getitem__(self, key)

    @property
    def node_types(self):
        """As PyG's: the types keyed by a name (not the batch's own attributes)."""
        return [k for k, v in dict.items(self) if isinstance(k, str) and isinstance(v, _Store)]

    @property
    def edge_types(self):
        """As PyG's: the types keyed by (src, relation, dst)."""
        return [k for k in dict.keys(self) if isinstance(k, tuple)]
