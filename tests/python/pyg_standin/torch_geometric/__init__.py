"""A stand-in of the parts of PyG (torch_geometric 2.4-2.8) that graphstore.pyg meets: the same
class names, fields and call shapes, written for the tests; no PyG source is in it."""
