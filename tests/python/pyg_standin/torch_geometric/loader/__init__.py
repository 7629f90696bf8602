"""A stand-in of torch_geometric.loader.NodeLoader over a (FeatureStore, GraphStore) pair: it
slices the input into batches, asks the sampler for each, and joins the features the way PyG's
loader does for a remote backend (one multi_get_tensor with the sampled nodes as index)."""

import torch

from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler import HeteroSamplerOutput, NodeSamplerInput


class NodeLoader:
    def __init__(self, data, node_sampler, input_nodes, batch_size=1, shuffle=False, **kwargs):
        self.feature_store, self.graph_store = data
        self.node_sampler = node_sampler
        node_type = None
        if isinstance(input_nodes, tuple):
            node_type, input_nodes = input_nodes
        nodes = torch.as_tensor(input_nodes, dtype=torch.long)
        self.input_data = NodeSamplerInput(torch.arange(nodes.numel()), nodes, None, node_type)
        self.batch_size = batch_size
        self.shuffle = shuffle

    def __iter__(self):
        n = self.input_data.node.numel()
        order = torch.randperm(n) if self.shuffle else torch.arange(n)
        for start in range(0, n, self.batch_size):
            out = self.node_sampler.sample_from_nodes(self.input_data[order[start:start + self.batch_size]])
            yield self.filter_fn(out)

    def filter_fn(self, out):
        attrs = self.feature_store.get_all_tensor_attrs()
        if isinstance(out, HeteroSamplerOutput):
            data = HeteroData()
            for a in self.graph_store.get_all_edge_attrs():
                if a.edge_type in out.row:
                    data[a.edge_type].edge_index = torch.stack([out.row[a.edge_type], out.col[a.edge_type]])
            asked = [a for a in attrs if a.group_name in out.node]
            for a in asked:
                a.index = out.node[a.group_name]
            for a, t in zip(asked, self.feature_store.multi_get_tensor(asked)):
                data[a.group_name][a.attr_name] = t
            for t, ids in out.node.items():
                data[t].n_id = ids
            data[self.input_data.input_type].batch_size = out.metadata[0].numel()
            return data
        data = Data(edge_index=torch.stack([out.row, out.col]))
        for a in attrs:
            a.index = out.node
        for a, t in zip(attrs, self.feature_store.multi_get_tensor(attrs)):
            data[a.attr_name] = t
        data.n_id = out.node
        data.e_id = out.edge
        data.input_id = out.metadata[0]
        data.batch_size = out.metadata[0].numel()
        data.num_sampled_nodes = out.num_sampled_nodes
        return data
