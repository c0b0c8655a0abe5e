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
    flat = tensor.detach().reshape(-1)  # a view of a contiguous tensor
    bad = 0
    for start in range(0, flat.numel(), _CHECKED_PER_PIECE):  # isfinite's temporaries stay small on a large table
        piece = flat[start : start + _CHECKED_PER_PIECE]
        bad += piece.numel() - int(torch.isfinite(piece).count_nonzero())
    if bad:
        raise NonFiniteError(
            f"{what} holds {bad} non-finite value(s) (NaN or inf) out of {tensor.numel()}; "
            "check the checkpoint and the --dtype (fp16 overflows are common) before trusting any claim"
        )
