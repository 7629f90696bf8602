"""Stand-ins of torch_geometric.loader.NodeLoader and LinkLoader over a (FeatureStore,
GraphStore) pair, shaped as PyG's: a torch DataLoader over the input's positions whose
collate_fn hands the sampler one batch of the input (sample_from_nodes / sample_from_edges),
and whose filter_fn, in the main process, joins the batch's node attributes through the
feature store and sets the fields PyG's loaders set."""

import torch
import torch.utils.data

from torch_geometric.data import HeteroData
from torch_geometric.loader.base import DataLoaderIterator
from torch_geometric.loader.utils import filter_custom_hetero_store, filter_custom_store
from torch_geometric.sampler import EdgeSamplerInput, HeteroSamplerOutput, NodeSamplerInput


class _Loader(torch.utils.data.DataLoader):
    def __init__(self, data, iterator, transform=None, filter_per_worker=None, custom_cls=None, **kwargs):
        self.feature_store, self.graph_store = data
        self.data = data
        self.transform = transform
        # PyG infers it: False for a remote backend (features are fetched in the main process).
        self.filter_per_worker = bool(filter_per_worker)
        self.custom_cls = custom_cls
        kwargs.pop("dataset", None)
        kwargs.pop("collate_fn", None)
        super().__init__(iterator, collate_fn=self.collate_fn, **kwargs)

    def __call__(self, index):
        out = self.collate_fn(index)
        return out if self.filter_per_worker else self.filter_fn(out)

    def _get_iterator(self):
        if self.filter_per_worker:
            return super()._get_iterator()
        return DataLoaderIterator(super()._get_iterator(), self.filter_fn)

    def _joined(self, out):
        if isinstance(out, HeteroSamplerOutput):
            data = filter_custom_hetero_store(self.feature_store, self.graph_store, out.node, out.row, out.col,
                                              out.edge, self.custom_cls)
            for t, ids in out.node.items():
                data[t].n_id = ids
            for t, ids in out.edge.items():
                if t in out.row:
                    data[t].e_id = ids
            return data
        data = filter_custom_store(self.feature_store, self.graph_store, out.node, out.row, out.col, out.edge,
                                   self.custom_cls)
        data.n_id = out.node
        data.e_id = out.edge
        data.num_sampled_nodes = out.num_sampled_nodes
        data.num_sampled_edges = out.num_sampled_edges
        return data


class NodeLoader(_Loader):
    def __init__(self, data, node_sampler, input_nodes=None, input_time=None, transform=None, filter_per_worker=None,
                 custom_cls=None, input_id=None, **kwargs):
        self.node_sampler = node_sampler
        node_type = None
        if isinstance(input_nodes, tuple):
            node_type, input_nodes = input_nodes
        nodes = torch.as_tensor(input_nodes, dtype=torch.long)
        self.input_data = NodeSamplerInput(input_id, nodes, input_time, node_type)
        super().__init__(data, range(nodes.numel()), transform, filter_per_worker, custom_cls, **kwargs)

    def collate_fn(self, index):
        out = self.node_sampler.sample_from_nodes(self.input_data[index])
        return self.filter_fn(out) if self.filter_per_worker else out

    def filter_fn(self, out):
        data = self._joined(out)
        input_id, seed_time = out.metadata[0], out.metadata[1]
        if isinstance(out, HeteroSamplerOutput):
            t = self.input_data.input_type
            data[t].input_id = input_id
            data[t].batch_size = input_id.numel()
            if seed_time is not None:
                data[t].seed_time = seed_time
        else:
            data.input_id = input_id
            data.batch_size = input_id.numel()
            if seed_time is not None:
                data.seed_time = seed_time
        return data if self.transform is None else self.transform(data)


class LinkLoader(_Loader):
    def __init__(self, data, link_sampler, edge_label_index=None, edge_label=None, edge_label_time=None,
                 neg_sampling=None, transform=None, filter_per_worker=None, custom_cls=None, input_id=None, **kwargs):
        self.link_sampler = link_sampler
        # As PyG's get_edge_label_index over (FeatureStore, GraphStore): the edges come with
        # their type, a bare tensor fails PyG's assertion.
        assert isinstance(edge_label_index, (list, tuple))
        edge_type, edge_label_index = edge_label_index
        self.neg_sampling = neg_sampling
        n = edge_label_index.size(1)
        self.input_data = EdgeSamplerInput(input_id, edge_label_index[0], edge_label_index[1], edge_label,
                                           edge_label_time, edge_type)
        super().__init__(data, range(n), transform, filter_per_worker, custom_cls, **kwargs)

    def collate_fn(self, index):
        index = torch.as_tensor(index, dtype=torch.long)
        d = self.input_data
        batch = EdgeSamplerInput(d.input_id[index] if d.input_id is not None else index, d.row[index], d.col[index],
                                 d.label[index] if d.label is not None else None,
                                 d.time[index] if d.time is not None else None, d.input_type)
        out = self.link_sampler.sample_from_edges(batch, neg_sampling=self.neg_sampling)
        return self.filter_fn(out) if self.filter_per_worker else out

    def filter_fn(self, out):
        data = self._joined(out)
        mode = None if self.neg_sampling is None else self.neg_sampling.mode.value
        target = data[self.input_data.input_type] if isinstance(data, HeteroData) else data
        target.input_id = out.metadata[0]
        if mode == "triplet":
            target.src_index, target.dst_pos_index, target.dst_neg_index = out.metadata[1:4]
        else:
            target.edge_label_index, target.edge_label = out.metadata[1], out.metadata[2]
        return data if self.transform is None else self.transform(data)
