"""Features kept in their wire encoding (``Loader(decode_features=False)``), decoded where the
trainer wants them: on its GPU, after the smaller encoded rows have been copied there."""

from __future__ import annotations

import torch

_BITS = (8, 4, 2, 1)


def dequantize(x: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor, bits: int) -> torch.Tensor:
    """The float features of quantized codes, on the device (and in the dtype) of ``scale``.

    Args:
        x: uint8 codes, as a batch hands them with ``decode_features=False``: ``[n, dim]`` for
            8 bits, ``[n, ceil(dim * bits / 8)]`` for 4, 2 and 1 (code ``j`` of a row at bits
            ``(j * bits) % 8`` and up of the row's byte ``j * bits // 8``).
        scale, offset: float ``[dim]`` (the batch's ``x_scale`` and ``x_offset``).
        bits: bits per code (the batch's ``x_bits``): 8, 4, 2 or 1.

    Returns:
        ``[n, dim]``: ``offset + scale * code``, within ``scale / 2`` of the original values
        (they are inside each column's range, which is taken over the stored rows), up to
        float32 rounding.

    Raises:
        TypeError, ValueError: an argument that is not of this form, naming it.
    """
    if isinstance(bits, bool) or not isinstance(bits, int) or bits not in _BITS:
        raise ValueError(f"bits must be one of {list(_BITS)}, got {bits!r}")
    for name, t in (("x", x), ("scale", scale), ("offset", offset)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dtype != torch.uint8 or x.dim() != 2:
        raise ValueError(f"x must be a uint8 matrix of codes, got {x.dtype} of shape {tuple(x.shape)}")
    if scale.dim() != 1 or offset.shape != scale.shape:
        raise ValueError(f"scale and offset must be [dim] each, got {tuple(scale.shape)} and {tuple(offset.shape)}")
    dim = scale.numel()
    width = (dim * bits + 7) // 8
    if x.size(1) != width:
        raise ValueError(f"x must have {width} columns for {dim} codes of {bits} bits, got {x.size(1)}")
    x = x.to(scale.device)
    if bits == 8:
        codes = x
    else:
        per_byte = 8 // bits
        shifts = torch.arange(0, 8, bits, dtype=torch.uint8, device=x.device)
        codes = ((x.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)).reshape(x.size(0), width * per_byte)[:, :dim]
    return offset + scale * codes.to(scale.dtype)
