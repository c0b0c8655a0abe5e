"""Errors shared by the instruments."""

import torch


class NonFiniteError(ValueError):
    """Raised when a tensor that a measurement depends on holds NaN or inf.

    A claim must never pass on non-finite activations, so every instrument
    checks its inputs and raises this instead of returning a number.
    """


def require_finite(tensor: torch.Tensor, what: str) -> None:
    """Raise :class:`NonFiniteError` naming ``what`` if ``tensor`` has NaN/inf.

    Args:
        tensor: any shape.
        what: a human-readable name for the tensor, used in the message.
    Raises:
        NonFiniteError: with the count of non-finite entries and a hint.
    """
    bad = (~torch.isfinite(tensor)).sum().item()
    if bad:
        raise NonFiniteError(
            f"{what} holds {bad} non-finite value(s) (NaN or inf) out of {tensor.numel()}; "
            "check the checkpoint and the --dtype (fp16 overflows are common) before trusting any claim"
        )
