"""Data-parallel training under ``torchrun``: one Loader per rank, the same number of steps on
every rank.

    torchrun --nproc_per_node=2 train.py --servers=...

    ddp = graphstore.distributed.Process.from_environment()
    loader = graphstore.Loader(servers, ..., rank=ddp.rank, world_size=ddp.world_size)
    model = ddp.wrap(model)
    for batch, weight in ddp.even_steps(loader, epoch):
        loss = weight * loss_of(model(batch))  # weight 0: this rank's share ran out

A Loader of rank ``r`` in ``world_size W`` gets the epoch's global batches ``r, r + W, ...``:
every batch once over all ranks, but when the epoch's batch count is not a multiple of ``W`` the
first ranks have one batch more. A rank with a step fewer would leave the others waiting at the
gradient all-reduce of their last step (DDP's hang on uneven inputs), so ``even_steps`` gives
every rank ``ceil(batches / W)`` steps: where a rank's share ran out it repeats its last batch
with weight 0, a step of zero gradients through the same model, so every rank joins every
all-reduce and every batch still counts once.
"""

import os
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Tuple

import torch
import torch.distributed as dist


@dataclass
class Process:
    """What ``torchrun`` (or ``torch.distributed.launch``) told this process."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def leader(self) -> bool:
        """Rank 0: the one that prints and asks the servers to shut down."""
        return self.rank == 0

    @classmethod
    def from_environment(cls, backend: Optional[str] = None) -> "Process":
        """Reads ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``; with more than one process joins
        the process group (``nccl`` where this rank has a GPU, else ``gloo``) at the rendezvous
        ``torchrun`` set up. Without them: one process, rank 0 of 1."""
        world = _env_int("WORLD_SIZE", 1)
        rank = _env_int("RANK", 0)
        local = _env_int("LOCAL_RANK", 0)
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"RANK={rank} and WORLD_SIZE={world}: need 0 <= RANK < WORLD_SIZE")
        device = torch.device("cpu")
        if torch.cuda.is_available() and world > 1 and backend in (None, "nccl"):
            device = torch.device("cuda", local % torch.cuda.device_count())
            torch.cuda.set_device(device)
        if world > 1 and not dist.is_initialized():
            dist.init_process_group(backend or ("nccl" if device.type == "cuda" else "gloo"))
        return cls(rank=rank, world_size=world, local_rank=local, device=device)

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model in ``DistributedDataParallel`` when there are several ranks (the same
        initial weights everywhere: DDP broadcasts rank 0's); itself otherwise."""
        model = model.to(self.device)
        if not self.distributed:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def steps(self, loader) -> int:
        """Steps every rank takes in an epoch of ``loader``: the most batches any rank has."""
        n = len(loader)
        if not self.distributed:
            return n
        t = torch.tensor([n], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def even_steps(self, loader, epoch: int) -> Iterator[Optional[object]]:
        """``(batch, weight)`` over ``loader.epoch(epoch)``: its batches with weight 1, then
        weight-0 repeats until this rank has taken as many steps as the rank with the most."""
        return pad(loader.epoch(epoch), self.steps(loader))

    def all_sum(self, values: List[float]) -> List[float]:
        """``values`` summed over the ranks (float64), for loss and accuracy counts."""
        if not self.distributed:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.tolist()

    def all_sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the ranks in place (embeddings each rank filled its share of)."""
        if self.distributed:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def close(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()


def pad(batches: Iterable, steps: int) -> Iterator[Tuple[object, float]]:
    """``(batch, 1.0)`` for each of ``batches``, then ``(last batch, 0.0)`` up to ``steps`` items
    in all: a step whose loss, multiplied by its weight, is zero but still runs the model's
    forward and backward, so DDP's gradient all-reduce sees every rank."""
    taken, last = 0, None
    for b in batches:
        if taken == steps:
            raise RuntimeError(f"the loader yielded more than the {steps} steps its ranks agreed on")
        taken, last = taken + 1, b
        yield b, 1.0
    if taken < steps and last is None:
        raise RuntimeError(f"this rank has no batch of the epoch's {steps} steps: an epoch needs at least "
                           "one batch per rank (a smaller batch_size, or fewer ranks)")
    for _ in range(steps - taken):
        yield last, 0.0


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
