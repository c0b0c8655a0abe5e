"""Errors shared by the instruments."""

import torch


class NonFiniteError(ValueError):
    """Raised when a tensor that a measurement depends on holds NaN or inf.

    A claim must never pass on non-finite activations, so every instrument
    checks its inputs and raises this instead of returning a number.
    """


_CHECKED_PER_PIECE = 1 << 24  # entries per isfinite pass: ~100 MB of temporaries at most


def require_finite(tensor: torch.Tensor, what: str) -> None:
    """Raise :class:`NonFiniteError` naming ``what`` if ``tensor`` has NaN/inf.

    Args:
        tensor: any shape.
        what: a human-readable name for the tensor, used in the message.
    Raises:
        NonFiniteError: with the count of non-finite entries and a hint.
    """
    bad = sum(piece.numel() - int(torch.isfinite(piece).count_nonzero()) for piece in _pieces(tensor.detach()))
    if bad:
        raise NonFiniteError(
            f"{what} holds {bad} non-finite value(s) (NaN or inf) out of {tensor.numel()}; "
            "check the checkpoint and the --dtype (fp16 overflows are common) before trusting any claim"
        )


def _pieces(tensor: torch.Tensor):
    """Views of ``tensor`` of at most about ``_CHECKED_PER_PIECE`` entries, covering it once (never a copy): flat
    slices of a contiguous tensor, else slices along its first dimension."""
    if tensor.is_contiguous() or tensor.dim() == 0:
        flat = tensor.reshape(-1)
        return (flat[start : start + _CHECKED_PER_PIECE] for start in range(0, flat.numel(), _CHECKED_PER_PIECE))
    rows = max(1, _CHECKED_PER_PIECE * tensor.shape[0] // max(1, tensor.numel()))
    return tensor.split(rows, dim=0)
