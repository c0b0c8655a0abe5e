"""Input representation (inversion) by gradient descent on the input embedding (S3).

Source S3's procedure: start from a random input a0, run plain gradient
descent with a learning rate decayed linearly over N steps on an L1 loss
between a layer's output for a0 and for the real input, then decode the
found embedding with the pseudo-inverse of the token-embedding matrix and an
argmax, optionally restricted to an allowed vocabulary.

One difference, stated wherever this is reported: the L1 gradient has a
scale that depends on the model, so each position's step is the gradient's
direction times ``lr * embedding_scale`` (normalised gradient descent). The
learning rate then means "fraction of a typical embedding norm per step",
and one schedule serves every model of a size ladder alike.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite


def pseudo_inverse_decode(
    embeddings: torch.Tensor, embedding_matrix: torch.Tensor, allowed: torch.Tensor | None = None
) -> torch.Tensor:
    """Tokens whose pseudo-inverse coordinate is largest (S3.1's decoding).

    Computes argmax over the vocabulary of ``embeddings @ pinv(W_E)``. Source
    S3's masked decode multiplies disallowed logits by 0, which lets a
    disallowed token win when every allowed one is negative; here they are
    set to -inf instead.

    Args:
        embeddings: shape (batch, seq, d_model).
        embedding_matrix: W_E, shape (vocab, d_model).
        allowed: optional bool mask, shape (batch, vocab) or (vocab,); moved
            to the embeddings' device if it is on another.
    Returns:
        token ids, shape (batch, seq), int64, on the embeddings' device.
    Raises:
        NonFiniteError: if embeddings hold NaN or inf.
    """
    require_finite(embeddings, "embeddings to decode")
    pinv = torch.linalg.pinv(embedding_matrix.double())  # (d_model, vocab)
    coords = embeddings.double() @ pinv  # (batch, seq, vocab)
    if allowed is not None:
        mask = allowed.to(coords.device)
        mask = mask if mask.dim() == 2 else mask.unsqueeze(0)
        coords = coords.masked_fill(~mask.unsqueeze(1), float("-inf"))
    return coords.argmax(dim=-1)


@dataclass(frozen=True)
class InversionResult:
    """Outcome of :func:`invert_by_gradient_descent`.

    Attributes:
        embeddings: the found input a_g, shape (batch, seq, d_model).
        output_distance: ||O(a_g) - O(a)||_1 per sequence, shape (batch,).
        shifted_distance: ||O(a') - O(a)||_1 per sequence for the slightly
            shifted input a' = a + 0.05 * embedding_scale * noise (noise of unit
            expected norm per position: a shift of 5 % of a typical embedding), shape (batch,).
    """

    embeddings: torch.Tensor
    output_distance: torch.Tensor
    shifted_distance: torch.Tensor

    @property
    def closer_than_shift(self) -> torch.Tensor:
        """S3's success test per sequence: O(a_g) is closer to O(a) than O(a') is. Shape (batch,), bool."""
        return self.output_distance < self.shifted_distance


def invert_by_gradient_descent(
    layer_output: Callable[[torch.Tensor], torch.Tensor],
    target_embeddings: torch.Tensor,
    embedding_scale: float,
    steps: int,
    lr: float,
    generator: torch.Generator,
) -> InversionResult:
    """Find an input embedding whose layer output matches the target's (S3).

    Args:
        layer_output: maps embeddings (batch, seq, d_model) to a layer's output
            (batch, seq, d_out); differentiable; its parameters are not updated.
        target_embeddings: the real input a, shape (batch, seq, d_model).
        embedding_scale: a typical token-embedding norm (units of d_model
            space), used for the random start, the shifted input and the step.
        steps: N, the number of gradient-descent steps.
        lr: initial step as a fraction of ``embedding_scale``; decays linearly
            to lr / 100 at step N as in source S3.
        generator: seeds the random start and the shift noise, drawn on the
            generator's device and moved to the target's, so a seed gives
            the same draws whatever device the target is on.
    Returns:
        InversionResult, its tensors on the target's device.
    Raises:
        ValueError: if steps < 1.
        NonFiniteError: if the layer output becomes NaN or inf.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    shape, dtype, device = target_embeddings.shape, target_embeddings.dtype, target_embeddings.device

    def noise() -> torch.Tensor:
        # Drawn on the generator's device, then moved: same seed, same start and shift on every device.
        return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device).to(device) / shape[-1] ** 0.5

    with torch.no_grad():
        target = layer_output(target_embeddings)
        require_finite(target, "target layer output")
    guess = (noise() * embedding_scale).requires_grad_(True)
    for step in range(steps):
        rate = lr * (1.0 - 0.99 * step / max(steps - 1, 1)) * embedding_scale
        loss = (layer_output(guess) - target).abs().sum()
        (grad,) = torch.autograd.grad(loss, guess)
        with torch.no_grad():
            guess -= rate * grad / grad.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    with torch.no_grad():
        found = layer_output(guess)
        require_finite(found, "layer output of the found input")
        shifted = layer_output(target_embeddings + 0.05 * embedding_scale * noise())
        distance = (found - target).abs().flatten(1).sum(1)
        shifted_distance = (shifted - target).abs().flatten(1).sum(1)
    return InversionResult(guess.detach(), distance, shifted_distance)
