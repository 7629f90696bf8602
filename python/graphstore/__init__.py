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

import torch  # noqa: F401  (loads LibTorch before the extension that links it)

from graphstore import _graphstore
from graphstore.batch import Batch, EdgeStore, NodeStore, PprWeights
from graphstore.errors import GraphstoreError
from graphstore.features import dequantize
from graphstore.loader import AblpInput, Loader, PprOptions

__all__ = ["AblpInput", "Batch", "EdgeStore", "GraphstoreError", "Loader", "NodeStore", "PprOptions",
           "PprWeights", "dequantize"]

__version__ = "0.1.0"

def _check_abi():
    import re  # noqa: PLC0415
    built = _graphstore.torch_version()
    have = re.match(r"\d+\.\d+\.\d+", torch.__version__)
    if have is None or have.group(0) != built:
        raise ImportError(f"graphstore was built against LibTorch {built} but this Python has torch "
                          f"{torch.__version__}; rebuild graphstore against the installed torch")
    if _graphstore.cxx11_abi() != torch._C._GLIBCXX_USE_CXX11_ABI:
        raise ImportError("graphstore and torch were built with different C++ string ABIs "
                          "(_GLIBCXX_USE_CXX11_ABI); rebuild graphstore against the installed torch")


_check_abi()
