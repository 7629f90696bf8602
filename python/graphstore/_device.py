"""Batches for a GPU: host memory registered as page-locked, and copies to the device on a side
stream while the trainer computes on the batch before (``Loader(pin_memory=True)``,
``Loader(device="cuda")``).

Both go through the trainer's own torch: ``torch.cuda.cudart()`` registers memory, torch's
streams and events order the copies. The CUDA calls sit behind ``CudaRuntime`` so that the
logic around them can be checked on a machine without a GPU.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional, Tuple

import torch


class CudaRuntime:
    """What the loader asks of CUDA, through torch."""

    def __init__(self, device: torch.device):
        self.device = device
        self._cudart = torch.cuda.cudart()
        for name in ("cudaHostRegister", "cudaHostUnregister"):
            if not hasattr(self._cudart, name):
                raise ValueError(f"pin_memory=True needs torch.cuda.cudart().{name}, which torch "
                                 f"{torch.__version__} does not have")

    def register(self, address: int, size: int) -> int:
        """cudaHostRegister; returns the CUDA error code (0: success)."""
        return int(self._cudart.cudaHostRegister(address, size, 0))

    def unregister(self, address: int) -> int:
        return int(self._cudart.cudaHostUnregister(address))

    def new_stream(self):
        return torch.cuda.Stream(device=self.device)

    def stream_context(self, stream):
        return torch.cuda.stream(stream)

    def current_stream(self):
        return torch.cuda.current_stream(self.device)

    def record_event(self, stream):
        return stream.record_event()

    def record_stream(self, tensor, stream) -> None:
        tensor.record_stream(stream)

    def timing_event(self, stream):
        """An event recorded on `stream` that can time the work between two of them."""
        event = torch.cuda.Event(enable_timing=True)
        event.record(stream)
        return event


def cuda_runtime(option: str, device: Optional[torch.device] = None) -> CudaRuntime:
    """The CUDA runtime for ``option`` (the Loader option that needs it); ValueError naming the
    option when this torch or machine has no CUDA."""
    if not torch.cuda.is_available():
        raise ValueError(f"{option} needs CUDA, but torch.cuda.is_available() is False (torch "
                         f"{torch.__version__}{' without CUDA' if torch.version.cuda is None else ''})")
    return CudaRuntime(device if device is not None else torch.device("cuda", torch.cuda.current_device()))


class HostRegistry:
    """Registers each block of host memory the loader's batches will view as page-locked, once,
    when it comes into use, and unregisters it when it goes: the loader's hook (it may run on
    any of the loader's threads)."""

    def __init__(self, runtime: CudaRuntime):
        self._runtime = runtime
        self._lock = threading.Lock()
        self._blocks: Dict[int, int] = {}  # address -> size of the registered blocks
        self.failures: List[Tuple[int, int, int]] = []  # (address, size, error) of refused ones

    def __call__(self, address: int, size: int, added: bool) -> None:
        with self._lock:
            if added:
                error = self._runtime.register(address, size)
                if error == 0:
                    self._blocks[address] = size
                else:
                    self.failures.append((address, size, error))
            elif self._blocks.pop(address, None) is not None:
                self._runtime.unregister(address)

    @property
    def registered_bytes(self) -> int:
        with self._lock:
            return sum(self._blocks.values())

    def covers(self, address: int, size: int) -> bool:
        """Whether [address, address + size) lies in one registered block."""
        with self._lock:
            return any(a <= address and address + size <= a + s for a, s in self._blocks.items())


class DevicePipeline:
    """Copies each batch to the device on a side stream, one batch ahead of the trainer.

    ``start(batch)`` queues the copy of every tensor of a host batch (page-locked, so the copy is
    asynchronous) and returns the device batch; ``ready(batch)`` makes the trainer's stream wait
    for that copy before the batch is handed out. The host batch stays referenced until its copy
    has finished (the event says so), so its memory is not reused while the copy reads it.
    """

    def __init__(self, runtime: CudaRuntime):
        self._runtime = runtime
        self._stream = runtime.new_stream()
        self._pending: List[Tuple[object, object]] = []  # (event, host batch) still being read
        # Set to a list to time the copies: (start event, end event, each tensor's bytes) per batch.
        self.timings: Optional[list] = None

    def start(self, host_batch, to_device: Callable[[object], object]):
        begin = self._runtime.timing_event(self._stream) if self.timings is not None else None
        with self._runtime.stream_context(self._stream):
            device_batch = to_device(host_batch)
        if begin is not None:
            sizes = [t.numel() * t.element_size() for t in device_batch._device_tensors()]
            self.timings.append((begin, self._runtime.timing_event(self._stream), sizes))
        event = self._runtime.record_event(self._stream)
        self._pending.append((event, host_batch))
        device_batch._copy_event = event
        return device_batch

    def ready(self, device_batch) -> None:
        current = self._runtime.current_stream()
        current.wait_event(device_batch._copy_event)
        device_batch._copy_event = None
        # The tensors were allocated on the side stream and are used on the trainer's: their
        # memory must not go back to the side stream's pool while the trainer's still reads it.
        for t in device_batch._device_tensors():
            self._runtime.record_stream(t, current)
        self._pending = [(e, h) for e, h in self._pending if not e.query()]

    @property
    def pending(self) -> int:
        """Host batches whose copy may still be reading them."""
        return len(self._pending)
