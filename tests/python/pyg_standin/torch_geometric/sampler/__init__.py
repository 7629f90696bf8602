"""Stand-ins of torch_geometric.sampler's input and output types and BaseSampler."""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import torch


@dataclass
class NodeSamplerInput:
    input_id: Optional[torch.Tensor]
    node: torch.Tensor
    time: Optional[torch.Tensor] = None
    input_type: Optional[str] = None

    def __getitem__(self, index):
        index = torch.as_tensor(index, dtype=torch.long)
        return NodeSamplerInput(self.input_id[index] if self.input_id is not None else index, self.node[index],
                                self.time[index] if self.time is not None else None, self.input_type)


@dataclass
class SamplerOutput:
    node: torch.Tensor
    row: torch.Tensor
    col: torch.Tensor
    edge: Optional[torch.Tensor]
    batch: Optional[torch.Tensor] = None
    num_sampled_nodes: Optional[List[int]] = None
    num_sampled_edges: Optional[List[int]] = None
    orig_row: Optional[torch.Tensor] = None
    orig_col: Optional[torch.Tensor] = None
    metadata: Any = None


@dataclass
class HeteroSamplerOutput:
    node: Dict
    row: Dict
    col: Dict
    edge: Dict
    batch: Optional[Dict] = None
    num_sampled_nodes: Optional[Dict] = None
    num_sampled_edges: Optional[Dict] = None
    orig_row: Optional[Dict] = None
    orig_col: Optional[Dict] = None
    metadata: Any = None


class BaseSampler:
    def sample_from_nodes(self, index, **kwargs):
        raise NotImplementedError

    def sample_from_edges(self, index, neg_sampling=None):
        raise NotImplementedError

    @property
    def edge_permutation(self):
        return None


@dataclass
class EdgeSamplerInput:
    input_id: Optional[torch.Tensor]
    row: torch.Tensor
    col: torch.Tensor
    label: Optional[torch.Tensor] = None
    time: Optional[torch.Tensor] = None
    input_type: Optional[tuple] = None


class NegativeSamplingMode:
    def __init__(self, value):
        self.value = value


@dataclass
class NegativeSampling:
    mode: Any
    amount: float = 1
    src_weight: Optional[torch.Tensor] = None
    dst_weight: Optional[torch.Tensor] = None

    def __post_init__(self):
        self.mode = NegativeSamplingMode(self.mode) if isinstance(self.mode, str) else self.mode
