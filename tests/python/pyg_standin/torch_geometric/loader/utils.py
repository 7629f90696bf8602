"""Stand-ins of the helpers torch_geometric.loader.utils gives its loaders for a remote backend:
a batch's node attributes fetched in one multi_get_tensor, edges put in place by edge type."""

import torch

from torch_geometric.data import Data, HeteroData


def filter_custom_store(feature_store, graph_store, node, row, col, edge, custom_cls=None):
    data = custom_cls() if custom_cls is not None else Data()
    data.edge_index = torch.stack([row, col], dim=0)
    attrs = []
    for attr in feature_store.get_all_tensor_attrs():
        attr.index = node  # every listed attribute is indexed by the batch's nodes
        attrs.append(attr)
        data.num_nodes = node.size(0)
    for attr, t in zip(attrs, feature_store.multi_get_tensor(attrs)):
        data[attr.attr_name] = t
    return data


def filter_custom_hetero_store(feature_store, graph_store, node_dict, row_dict, col_dict, edge_dict, custom_cls=None):
    data = custom_cls() if custom_cls is not None else HeteroData()
    attrs = []
    for attr in feature_store.get_all_tensor_attrs():
        if attr.group_name in node_dict:
            attr.index = node_dict[attr.group_name]
            attrs.append(attr)
            data[attr.group_name].num_nodes = attr.index.size(0)
    for attr, t in zip(attrs, feature_store.multi_get_tensor(attrs)):
        data[attr.group_name][attr.attr_name] = t
    for attr in graph_store.get_all_edge_attrs():
        key = attr.edge_type
        if key in row_dict and key in col_dict:
            data[key].edge_index = torch.stack([row_dict[key], col_dict[key]], dim=0)
    return data
