"""graphstore for PyTorch trainers: sampled subgraphs from graphstore servers, as PyG-shaped
batches of ``torch.Tensor``.

    import graphstore
    with graphstore.Loader(servers=["host:port"], num_neighbors=[15, 10, 5], batch_size=1024,
                           split="train", shuffle=True) as loader:
        for epoch in range(10):
            for batch in loader.epoch(epoch):
                out = model(batch.x, batch.edge_index)[:batch.batch_size]

``graphstore.v1`` holds the generated protobuf and gRPC stubs of the wire protocol, for
operators' scripts (``GetServerStats``, ``DescribeChannel``, ...).
"""

from graphstore import _graphstore  # noqa: F401  (the client core; links no torch)
from graphstore.batch import Batch, EdgeStore, NodeStore, PprWeights
from graphstore.dataset import write_dataset
from graphstore.errors import GraphstoreError
from graphstore.features import dequantize
from graphstore.loader import AblpInput, Loader, PprOptions

__all__ = ["AblpInput", "Batch", "EdgeStore", "GraphstoreError", "Loader", "NodeStore", "PprOptions",
           "PprWeights", "dequantize", "write_dataset"]

__version__ = "0.2.0"
