"""Input representation (inversion) by gradient descent, batched over prompts (S3).

Source S3's procedure, every variant it uses, in one optimisation over a batch
of prompts (prompts do not interact in a transformer's forward pass, so the
gradient of the summed loss with respect to one prompt's input is that
prompt's own gradient: the batch is the prompt-by-prompt loop, run at once):

* what is optimised: ``"indirect"``, the token embeddings (batch, seq, d_model),
  decoded with the Moore-Penrose pseudo-inverse of the token-embedding matrix
  W_E (argmax of a·W_E⁺); or ``"direct"``, a vector over the vocabulary per
  position (batch, seq, vocab) that multiplies W_E (the model then reads
  a·W_E), decoded by its own argmax. The direct target is S3's code's:
  ``DIRECT_TARGET`` (10) at the token's index and 0 elsewhere, so the model's
  target input is 10·W_E[token] (S3's text: "there is no specific rule ... any
  small value as a baseline with a larger value as the corresponding
  indicies"). The value matters: plain descent moves a only within W_E's
  column space, and a target of 1 is too small against S3's start N(½, 1/20²)
  to be decoded once the vocabulary is several times the width
  (:func:`latent_instruments.decoding.direct_fit_decode`);
* the loss on the (selected) output, per prompt: ``"l1"`` Σ|O(a_g) − O(a)| (S3's
  eq. 5), ``"l2"`` ‖O(a_g) − O(a)‖₂, ``"cosine"`` 1 − cos φ of the flattened
  outputs, ``"mixed"`` α(1 − cos φ) + β Σ|·|;
* the optimiser: plain gradient descent a ← a − η ∇a, η decayed linearly over
  the N steps, η_i = η₀(N − i)/N + η_end·i/N as S3's code (η 1 → 1/100 in its
  text), from S3's random start a₀ ~ N(½, (1/20)²) per element;
* the success test: ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁ for the shifted input
  a′ = a + σ·noise, σ = 1/20 per element (S3's code: ``embedding +
  0.05*torch.randn``), measured with the L1 norm whatever the loss;
* decoding: top-k per position, a restricted vocabulary applied by −inf
  masking, or S3's own 0/1 multiplication (:func:`zero_masked_decode`, which
  lets a disallowed token win when every allowed logit is negative), and any
  subset of output positions and features as the target.

Defaults are the source's. The one deviation offered, ``step="normalised"``,
moves each position by η × ``step_scale`` along its gradient's direction; it is
never a default, and a claim that uses it must say so and measure the
source's plain step beside it.

S3's public code (blbadger/nnetworks) starts from N(0, 1) and decays η to
η/10 over 500 steps; its text gives N(½, 1/20²) and η → η/100, which are the
defaults here.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from latent_instruments.decoding import PseudoInverse, decode_top_k, pseudo_inverse
from latent_instruments.errors import require_finite

# CPU threads every descent runs on. Hundreds of steps amplify the last bits of a matmul's summation order, which
# follows the thread count: a serial run (2 threads) and a pytest-xdist worker (1) differed in the third decimal of
# S3's statistics. One count for every process gives the same numbers both ways (and on 2 cores costs little: the
# tiny models' matmuls gain almost nothing from a second thread).
DESCENT_THREADS = 1
# S3's direct target: `target_logits[:, i, tokens[0, i]] = 10` (GPT2_direct_representation.py, quoted in its text),
# every other entry 0. With a value of 1 (version 3 of S3.7), an exact fit from S3's start decoded 0 of 100 tokens of a
# random W_E at Llama-7B's vocabulary/width ratio (7.8), where 10 decodes all 100.
DIRECT_TARGET = 10.0
REPRESENTATIONS = ("indirect", "direct")
LOSSES = ("l1", "l2", "cosine", "mixed")
STEPS = ("plain", "normalised")


@dataclass(frozen=True)
class InversionConfig:
    """How to invert; every default is source S3's.

    Attributes:
        representation: "indirect" (optimise token embeddings, decode with W_E⁺) or "direct"
            (optimise a (vocab,) vector per position that multiplies W_E).
        loss: "l1", "l2", "cosine" or "mixed" (see the module docstring).
        steps: N, the number of gradient steps (S3: 200 for an untrained block, 500-20000 trained).
        lr: η at step 0 (S3: 1).
        lr_end: η reached at step N (S3: 1/100); η decays linearly in between.
        start_mean, start_std: the random start a₀ ~ N(start_mean, start_std²) per element (S3: ½, 1/20).
        shift_std: σ of the shifted input a′ = a + σ·noise, per element (S3: 1/20).
        step: "plain" (S3) or "normalised" (a deviation: each position moves η × step_scale along its
            gradient's direction, whatever the gradient's size).
        step_scale: the unit of η for the normalised step (e.g. a typical embedding norm); unused when plain.
        direct_target: the direct target's value at the token's index, 0 elsewhere (S3's code: 10); unused
            when indirect.
        mix: (α, β) of the "mixed" loss α(1 − cos φ) + β Σ|·| (S3 names them, gives no values).
    """

    representation: str = "indirect"
    loss: str = "l1"
    steps: int = 200
    lr: float = 1.0
    lr_end: float = 0.01
    start_mean: float = 0.5
    start_std: float = 0.05
    shift_std: float = 0.05
    step: str = "plain"
    step_scale: float = 1.0
    direct_target: float = DIRECT_TARGET
    mix: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self):
        for name, value, allowed in (("representation", self.representation, REPRESENTATIONS),
                                     ("loss", self.loss, LOSSES), ("step", self.step, STEPS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        if self.steps < 0:
            raise ValueError(f"steps must be at least 0, got {self.steps}")

    def rate(self, i: int) -> float:
        """η at step i of N, linear from ``lr`` (i = 0) towards ``lr_end`` (i = N), as S3's code."""
        n = max(self.steps, 1)
        return self.lr * (n - i) / n + self.lr_end * i / n

    def deviations(self) -> list[str]:
        """The settings that differ from source S3's, in words (empty for the source's setting)."""
        source, out = InversionConfig(), []
        for field, what in (("step", "step"), ("loss", "loss"), ("representation", "representation"),
                            ("lr", "initial η"), ("lr_end", "final η"), ("start_mean", "start mean"),
                            ("start_std", "start σ"), ("shift_std", "shift σ"),
                            ("direct_target", "direct target")):
            value, base = getattr(self, field), getattr(source, field)
            if value != base:
                out.append(f"{what} {f'{value:.4g}' if isinstance(value, float) else value} (S3: {base})")
        if self.step == "normalised":
            out.append(f"step unit {self.step_scale:.4g}")
        return out


@dataclass(frozen=True)
class Inversion:
    """Outcome of :func:`invert`, per prompt.

    Attributes:
        inputs: the found a_g, (batch, seq, d_model) indirect or (batch, seq, vocab) direct.
        top_k: decoded token ids, best first, (batch, seq, k), int64.
        token_accuracy: fraction of positions whose first choice is the true token, (batch,).
        exact_match: whether every position is, (batch,), bool.
        output_distance: ‖O(a_g) − O(a)‖₁ over the target outputs, (batch,).
        shifted_distance: ‖O(a′) − O(a)‖₁ for the shifted input a′, (batch,).
        loss: the configured loss at a_g, (batch,).
        config: the settings used.
    """

    inputs: torch.Tensor
    top_k: torch.Tensor
    token_accuracy: torch.Tensor
    exact_match: torch.Tensor
    output_distance: torch.Tensor
    shifted_distance: torch.Tensor
    loss: torch.Tensor
    config: InversionConfig

    @property
    def decoded(self) -> torch.Tensor:
        """First-choice token ids, (batch, seq), int64."""
        return self.top_k[..., 0]

    @property
    def success(self) -> torch.Tensor:
        """S3's success test per prompt: ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁, (batch,), bool."""
        return self.output_distance < self.shifted_distance


def _select(output: torch.Tensor, positions, features) -> torch.Tensor:
    """The target part of a layer output (batch, seq, d_out): positions on dim 1, features on dim 2."""
    if positions is not None:
        output = output[:, positions]
    if features is not None:
        output = output[..., features]
    return output


def per_prompt_loss(output: torch.Tensor, target: torch.Tensor, config: InversionConfig) -> torch.Tensor:
    """The configured loss of each prompt's output against its target, (batch,).

    Args:
        output, target: (batch, ...) layer outputs, flattened per prompt.
        config: its ``loss`` and ``mix``.
    """
    diff = (output - target).flatten(1)
    if config.loss == "l1":
        return diff.abs().sum(1)
    if config.loss == "l2":
        return diff.square().sum(1).clamp_min(1e-30).sqrt()  # clamp: a finite gradient at an exact match
    cos = 1 - torch.nn.functional.cosine_similarity(output.flatten(1), target.flatten(1), dim=1)
    if config.loss == "cosine":
        return cos
    alpha, beta = config.mix
    return alpha * cos + beta * diff.abs().sum(1)


@contextmanager
def fixed_cpu_threads(n: int) -> Iterator[None]:
    """Run the block with torch's CPU intra-op thread count set to ``n``, then restore the count it had."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def descend(
    layer_output: Callable[[torch.Tensor], torch.Tensor],
    target_inputs: torch.Tensor,
    config: InversionConfig,
    generator: torch.Generator,
    to_embeddings: Callable[[torch.Tensor], torch.Tensor] = lambda x: x,
    positions=None,
    features=None,
    start: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """S3's gradient descent on a batch of continuous inputs, without decoding (see :func:`invert`).

    Args:
        layer_output: embeddings (batch, seq, d_model) -> a layer's output (batch, seq, d_out);
            differentiable; its parameters are not updated (only the input's gradient is taken).
        target_inputs: the real input a, (batch, seq, d_in), the optimised variable's shape and dtype.
        config: the optimisation (steps, η schedule, start, shift, loss, step).
        generator: seeds the start a₀ (drawn first) and the shift noise (drawn second), on the generator's
            device and then moved to the inputs', so that a seed gives the same draws on every device.
        to_embeddings: maps the optimised input to embeddings (identity indirect; x @ W_E direct).
        positions, features: index (int, slice, list or tensor) of the output positions (dim 1) and
            features (last dim) used as the target; None for all.
        start: where to start instead of S3's random a₀, (batch, seq, d_in): a found a_g, to continue a descent
            (S3's convergence controls: 4N further steps, ``config.steps``, from where N ended).
            The random start is drawn all the same, so the shift noise is the same draw as the first descent's.
    Returns:
        (a_g (batch, seq, d_in), ‖O(a_g) − O(a)‖₁ (batch,), ‖O(a′) − O(a)‖₁ (batch,), loss at a_g (batch,)),
        all on the inputs' device, in their dtype.
    Raises:
        NonFiniteError: if a layer output or the gradient becomes NaN or inf.

    On a CPU it runs on ``DESCENT_THREADS`` threads, whatever the process's count, so that a serial run and a
    pytest-xdist worker sum in the same order and give the same numbers.
    """
    with fixed_cpu_threads(DESCENT_THREADS):
        return _descend(layer_output, target_inputs, config, generator, to_embeddings, positions, features, start)


def _descend(layer_output, target_inputs, config, generator, to_embeddings, positions, features, start):
    shape, dtype, device = target_inputs.shape, target_inputs.dtype, target_inputs.device

    def draw() -> torch.Tensor:
        return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device).to(device)

    def output(x: torch.Tensor) -> torch.Tensor:
        return _select(layer_output(to_embeddings(x)), positions, features).to(dtype)

    with torch.no_grad():
        target = output(target_inputs)
        require_finite(target, "target layer output")
    guess = config.start_mean + config.start_std * draw()  # drawn even when continuing: the same shift noise below
    if start is not None:
        if start.shape != shape:
            raise ValueError(f"a descent's start must have the input's shape {tuple(shape)}, got {tuple(start.shape)}")
        guess = start.detach().to(device=device, dtype=dtype).clone()
    guess.requires_grad_(True)
    for i in range(config.steps):
        loss = per_prompt_loss(output(guess), target, config).sum()
        (grad,) = torch.autograd.grad(loss, guess)
        with torch.no_grad():
            if config.step == "normalised":
                grad = grad * (config.step_scale / grad.norm(dim=-1, keepdim=True).clamp_min(1e-12))
            guess -= config.rate(i) * grad
    with torch.no_grad():
        found = output(guess)
        require_finite(found, "layer output of the found input")
        shifted = output(target_inputs + config.shift_std * draw())
        distance = (found - target).abs().flatten(1).sum(1)
        shifted_distance = (shifted - target).abs().flatten(1).sum(1)
        loss = per_prompt_loss(found, target, config)
    return guess.detach(), distance, shifted_distance, loss


def invert(
    layer_output: Callable[[torch.Tensor], torch.Tensor],
    token_ids: torch.Tensor,
    embedding_matrix: torch.Tensor,
    generator: torch.Generator,
    config: InversionConfig = InversionConfig(),
    *,
    allowed: torch.Tensor | None = None,
    positions=None,
    features=None,
    k: int = 5,
    pinv: PseudoInverse | None = None,
    start: torch.Tensor | None = None,
) -> Inversion:
    """Recover a batch of prompts from a layer's output in one optimisation (S3), and decode them.

    Args:
        layer_output: embeddings (batch, seq, d_model) -> a layer's output (batch, seq, d_out), e.g.
            ``models.forwards.block_output_fn``; differentiable. It receives embeddings in W_E's dtype
            promoted to at least float32 (cast inside it to run a model in another precision).
        token_ids: the real input a, (batch, seq), int64, on W_E's device.
        embedding_matrix: W_E, (vocab, d_model); the target input is W_E[ids] (indirect) or
            ``config.direct_target`` × one-hot(ids) (direct).
        generator: seeds the start and the shift (see :func:`descend`).
        config: the optimisation; defaults are S3's.
        allowed: optional bool mask (batch, vocab) or (vocab,) of the tokens the decode may choose (S3's
            restricted vocabulary; −inf masking). It does not change the optimisation.
        positions, features: the output positions and features used as the target (None: all).
        k: top-k choices kept per position (S3 shows 5).
        pinv: W_E⁺ from :func:`pseudo_inverse`, to reuse one across calls (computed when None; indirect only).
        start: continue from this input, an earlier :class:`Inversion`'s ``inputs`` (see :func:`descend`).
    Returns:
        :class:`Inversion`, its tensors on W_E's device.
    Raises:
        ValueError: for token_ids not (batch, seq), a k larger than the allowed vocabulary, or a ``start`` whose
            shape is not the optimised input's.
        NonFiniteError: if W_E, a layer output or the decoded scores hold NaN or inf.
    """
    if token_ids.dim() != 2:
        raise ValueError(f"token_ids must be (batch, seq), got shape {tuple(token_ids.shape)}")
    vocab = embedding_matrix.shape[0]
    if k > vocab or (allowed is not None and not allowed.is_meta and k > int(allowed.sum(-1).min())):
        raise ValueError(f"k = {k} exceeds the number of tokens the decode may choose")
    dtype = torch.promote_types(embedding_matrix.dtype, torch.float32)
    weight = embedding_matrix.detach().to(dtype)
    if config.representation == "indirect":
        target, to_embeddings = weight[token_ids], (lambda x: x)
    else:
        target = config.direct_target * torch.nn.functional.one_hot(token_ids, vocab).to(dtype)
        to_embeddings = (lambda x: x @ weight)  # noqa: E731 - S3's "matmul(x, wte.weight)"
    found, distance, shifted, loss = descend(layer_output, target, config, generator, to_embeddings,
                                             positions, features, start)
    if config.representation == "indirect":
        top = decode_top_k(found, k, allowed, pinv=pseudo_inverse(weight) if pinv is None else pinv)
    else:
        top = decode_top_k(found, k, allowed)
    hits = top[..., 0] == token_ids
    return Inversion(found, top, hits.to(dtype).mean(dim=1), hits.all(dim=1), distance, shifted, loss, config)
