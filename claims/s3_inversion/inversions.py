"""S3's shared inversion work: each model's prompts, vocabularies and inversions, computed once per session
(the fixtures that hand it to the tests: ``claims/s3_inversion/conftest.py``).

The problem, per model (:class:`Problem`): S3's prompt is 'The sky is blue.' (5 GPT-2 tokens) and its
expanded allowed vocabulary the words of 'The sky is blue or red depending on the time of day.' (13
tokens). Both are measured in the model's own tokens: a prompt is T held-out tokens, T = the length of
S3's prompt in the model's tokenizer (16 characters, 7 tokens of the corpus BPE, 5 of GPT-2's), and its
allowed vocabulary is the distinct tokens of the held-out window that continues it to the length of S3's
sentence (the prompt "inside a slightly longer sentence", as S3's).

The inversions, per model, block and setting (:class:`Run`), by ``latent_instruments.inversion.invert``
on all prompts in one batch, are cached: S3.2 reads an untrained model's first block, S3.3 the same for
the trained model and its twin, S3.4 every depth. Two settings:

* "source": S3's own: plain gradient descent, η 1 → 1/100 linearly over N steps, a₀ ~ N(½, 1/20²) per
  element, L1 loss on the block's output, decoded by W_E⁺ (the instrument's defaults);
* "adapted": two stated deviations, a normalised step (each position moves η × the mean embedding norm
  along its gradient's direction, η 0.1 → 0.001) from a start at the embeddings' own scale
  (N(0, (mean norm)² / d_model) per element). S3 reports "some learning rate tuning" for trained
  GPT-2; on our trained models (and on three of the four random-init references) the source's step
  recovers few tokens where this one recovers most at the CPU's N. The headline (:meth:`Scale.headline`) is
  S3's own setting at source scale (a GPU: N = 2000 for trained blocks, as S3), and on a CPU, as a stated
  scaled form, the better of the two per model and block, chosen once on the first third of the prompts and
  measured on the other two thirds (choosing inside every resample, version 3, biased the interval upward); the
  procedure names the setting, and most records give both settings' numbers in their details. (S3.9's wide
  untrained single layers keep the better of the two at source scale too: their ledger entry was measured so
  on an H100, and moving them needs that GPU run again.)

Why one module: S3's claims share one cache of inversions (a run per model, block and setting, each minutes on a
CPU), and the problem and the settings that key it; split, the cache's key and what it holds would live apart. The
sizes that key it too are a policy of their own, in ``claims.s3_inversion.scale``.

Sizes (:class:`Scale`): at source scale (``--source-scale on``, the default with CUDA) 64 prompts,
N = 200 steps for untrained models (S3.2's figure) and 2000 for trained ones (S3's N for a trained GPT-2
block); on a CPU by default 24 prompts, of which 8 choose the setting and 16 are reported (the fewest a bootstrap
decides from, ``latent_instruments.stats.MIN_BOOTSTRAP_UNITS``), and N = 200 for every model, and each record
says so (``scaled``).

On a CPU a test's independent descents run side by side, one per CPU thread (``models.forwards.side_by_side``, which
:meth:`Inversions.runs_of` and S3.7, S3.10 and S3.13 use): each descent is on one thread whatever the count
(``latent_instruments.inversion.DESCENT_THREADS``), so the numbers are the same as one by one, under pytest-xdist too.
"""

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch

from fixtures.pool import ModelPool
from latent_instruments.ablation import attention_residual_removed
from latent_instruments.inversion import InversionConfig, invert
from latent_instruments.decoding import PseudoInverse, decode_top_k, pseudo_inverse, zero_masked_decode
from models.forwards import block_output_fn, blocks_output_fn, side_by_side
from models.loading import LoadedModel
from claims.s3_inversion.convergence import further_steps
from claims.s3_inversion.scale import Scale

SOURCE_PROMPT = "The sky is blue."  # S3's prompt (5 GPT-2 tokens)
SOURCE_SENTENCE = "The sky is blue or red depending on the time of day."  # S3's expanded allowed vocabulary (13)
DESCENT_SETTINGS = ("source", "adapted")  # the two inversion settings (S3's own, the adapted one); not the run's `settings`
TOP_K = 5  # S3 shows the top-5 decodings
EXAMPLES = 2  # prompts shown as decoded text per run
KEPT_PROBLEMS = 4  # problems kept: a model and its untrained twin (never another model's), each at two looks' sizes


@dataclass
class Problem:
    """One model's inversion problem.

    Attributes:
        ids: the prompts, (prompts, T) int64, on the model's input device.
        allowed: each prompt's allowed vocabulary, (prompts, vocab) bool: the distinct tokens of its
            continuation to the length of S3's sentence.
        prompt_allowed: each prompt's own tokens, (prompts, vocab) bool (S3.6's narrowest vocabulary).
        weight: W_E, (vocab, d_model), detached.
        pinv: its pseudo-inverse.
        sentence_tokens: length of the window the allowed vocabulary is taken from.
    """

    ids: torch.Tensor
    allowed: torch.Tensor
    prompt_allowed: torch.Tensor
    weight: torch.Tensor
    pinv: PseudoInverse
    sentence_tokens: int

    @property
    def tokens(self) -> int:
        """T, tokens per prompt."""
        return self.ids.shape[1]


@dataclass(frozen=True, kw_only=True)
class Run:
    """One model's inversion of every prompt at one block under one setting, per prompt.

    Attributes:
        accuracy: restricted-vocabulary token accuracy, (prompts,).
        hits: where the restricted decoding's first choice is the prompt's token, (prompts, T) bool.
        exact: 1.0 where every token was recovered (restricted), (prompts,).
        full_accuracy: the same decoded over the whole vocabulary, (prompts,).
        prompt_accuracy: the same decoded over each prompt's own tokens only, (prompts,).
        success: 1.0 where S3's test ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁ holds, (prompts,).
        start_accuracy: restricted token accuracy of the random start a₀ itself (chance), (prompts,).
        start_prompt_accuracy: the random start's token accuracy over the prompt's own tokens, (prompts,).
        zero_accuracy, zero_prompt_accuracy: token accuracy decoded as S3's code does, the scores times a 0/1 mask
            of the allowed vocabulary (the continuation's tokens; the prompt's own), then argmax, (prompts,).
        start_zero_prompt_accuracy: the random start decoded so over the prompt's own tokens, (prompts,).
        zero_wins, zero_prompt_wins: fraction of positions where that decode picks a disallowed token (every
            allowed score negative, so a masked 0 wins), (prompts,).
        distance_ratio: ‖O(a_g) − O(a)‖₁ / ‖O(a′) − O(a)‖₁, (prompts,) (S3: "< 1/6" for GPT-2 XL at N = 1000).
        examples: decoded text of the first prompts, {row: {"text": ..., "tokens right": ...}}.
        steps: N.
        seconds: wall time.
        deviations: how the setting differs from S3's, in words ("" for S3's own).
        found: the found inputs a_g, (prompts, T, d_model), where a convergence control continues the descent; None
            once the model's problem is no longer kept (``KEPT_PROBLEMS``).
    """

    accuracy: np.ndarray
    hits: np.ndarray
    exact: np.ndarray
    full_accuracy: np.ndarray
    prompt_accuracy: np.ndarray
    success: np.ndarray
    start_accuracy: np.ndarray
    start_prompt_accuracy: np.ndarray
    zero_accuracy: np.ndarray
    zero_prompt_accuracy: np.ndarray
    start_zero_prompt_accuracy: np.ndarray
    zero_wins: np.ndarray
    zero_prompt_wins: np.ndarray
    distance_ratio: np.ndarray
    examples: dict
    steps: int
    seconds: float
    deviations: str
    found: torch.Tensor | None = None


ADAPTED_RATE = (0.1, 0.001)  # the adapted setting's η at step 0 and at step N, in mean embedding norms
SOURCE_DESCRIPTION = "S3's own (plain gradient descent on the L1 distance, η 1 → 1/100 linearly, a₀ ~ N(½, 1/20²))"
ADAPTED_DESCRIPTION = (f"the adapted one (each position moved {ADAPTED_RATE[0]:g} → {ADAPTED_RATE[1]:g} mean embedding "
                       "norms along its gradient's direction, from N(0, norm²/d_model))")


def setting(name: str, steps: int, weight: torch.Tensor) -> InversionConfig:
    """The inversion settings: "source" (S3's own) or "adapted" (normalised step from the scale of W_E's rows,
    ``weight`` (vocab, d_model)).

    Raises:
        ValueError: for another name.
    """
    if name == "source":
        return InversionConfig(steps=steps)
    if name == "adapted":
        scale = weight.float().norm(dim=1).mean().item()
        return InversionConfig(steps=steps, lr=ADAPTED_RATE[0], lr_end=ADAPTED_RATE[1], start_mean=0.0,
                               start_std=scale / weight.shape[1] ** 0.5, step="normalised", step_scale=scale)
    raise ValueError(f"setting must be one of {', '.join(DESCENT_SETTINGS)}; got {name!r}")


def show(text: str) -> str:
    """Decoded text for a report cell: quoted, with newlines visible."""
    return repr(text)


def examples(ids: torch.Tensor, top_k: torch.Tensor, tokenizer, label: str, target: bool = True) -> dict:
    """The first prompts as S3 shows them: the target, then the k-th choice at every position, k = 1..5.

    Args:
        ids: (prompts, T) true tokens; top_k: (prompts, T, k) decoded choices, best first.
        label: names the decoding in the row labels ("restricted", "full vocabulary").
        target: whether to include the target rows.
    Returns:
        {row label: {"text": quoted decoded text, "tokens right": "r/T"}}.
    """
    rows, ids, top_k = {}, ids.cpu(), top_k.cpu()
    for b in range(min(EXAMPLES, ids.shape[0])):
        if target:
            rows[f"prompt {b + 1}: target"] = {"text": show(tokenizer.decode(ids[b].tolist())), "tokens right": ""}
        for k in range(top_k.shape[-1]):
            right = int((top_k[b, :, k] == ids[b]).sum())
            rows[f"prompt {b + 1}: {label}, choice {k + 1}"] = {
                "text": show(tokenizer.decode(top_k[b, :, k].tolist())), "tokens right": f"{right}/{ids.shape[1]}"}
    return rows


def first_prompt(rows: dict) -> dict:
    """The rows of :func:`examples` (or ``Run.examples``) that show prompt 1, for a report section per target."""
    return {k: v for k, v in rows.items() if k.startswith("prompt 1:")}


def layer_output(subject: LoadedModel, block: int | tuple[int, ...], tokens: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Embeddings (batch, T, d_model) -> block ``block``'s output (0-based), run in the model's dtype, float32;
    for a tuple of blocks, their outputs side by side, (batch, T, blocks × d_model) (S3.14)."""
    if isinstance(block, tuple):
        fn = blocks_output_fn(subject.model, subject.adapter, list(block), tokens)
    else:
        fn = block_output_fn(subject.model, subject.adapter, block, tokens)
    dtype = subject.model.get_input_embeddings().weight.dtype
    return lambda embeddings: fn(embeddings.to(dtype)).float()


def _attention_residual_removed(subject: LoadedModel, block: int):
    """S3.11: block ``block`` without its residual connection across attention."""
    module = subject.adapter.block_list(subject.model)[block]
    return attention_residual_removed(module, module.get_submodule(subject.adapter.attn))


ABLATIONS = {  # changes to a model an inversion can run under: name -> (subject, block) -> context manager
    "": lambda subject, block: nullcontext(),
    "attention residual removed": _attention_residual_removed,
}


@dataclass
class Inversions:
    """The session's S3 work: one :class:`Problem` per model and prompt count (the latest ``KEPT_PROBLEMS`` kept),
    one :class:`Run` per key."""

    pool: ModelPool  # draws the prompts (``ModelPool.text_windows``) and counts the windows redrawn
    seed: int
    scale: Scale
    runs: dict = field(default_factory=dict)
    problems: dict = field(default_factory=dict)  # (name, prompts) -> Problem: a model and its twin, two looks each

    def at(self, look: int) -> "Inversions":
        """The same work at a sequential test's later look: ``look`` times the prompts, the same caches."""
        return replace(self, scale=replace(self.scale, look=look))

    def problem(self, name: str, subject: LoadedModel) -> Problem:
        """The model's prompts, allowed vocabularies and W_E⁺ (computed once while the model is in use)."""
        key = (name, self.scale.prompts_for(subject.d_model))
        if key not in self.problems:
            earlier = next((p.pinv for (n, _), p in self.problems.items() if n == name), None)  # W_E⁺ of a look
            family = name.removesuffix(":untrained")  # a model and its twin; another model's problem is let go
            for other in [k for k in self.problems if k[0].removesuffix(":untrained") != family]:
                del self.problems[other]  # with it W_E, which keeps a freed model's embedding matrix alive
            while len(self.problems) >= KEPT_PROBLEMS:
                self.problems.pop(next(iter(self.problems)))
            kept = {n for n, _ in self.problems} | {name}  # the found inputs of the others' runs: no longer continued
            for k, run in self.runs.items():
                if k[0] not in kept and run.found is not None:
                    self.runs[k] = replace(run, found=None)
            tok = subject.tokenizer
            tokens = len(tok.encode(SOURCE_PROMPT))
            window = max(tokens + 1, round(tokens * len(tok.encode(SOURCE_SENTENCE)) / len(tok.encode(SOURCE_PROMPT))))
            window = min(window, subject.context)
            ids = self.pool.text_windows(name, self.scale.prompts_for(subject.d_model), window)
            weight = subject.model.get_input_embeddings().weight.detach()
            allowed = torch.zeros(ids.shape[0], weight.shape[0], dtype=torch.bool, device=ids.device)
            prompt_allowed = allowed.clone().scatter_(1, ids[:, :tokens], True)
            allowed.scatter_(1, ids, True)
            pinv = earlier if earlier is not None else pseudo_inverse(weight)
            self.problems[key] = Problem(ids[:, :tokens], allowed, prompt_allowed, weight, pinv, window)
        return self.problems[key]

    def run(self, name: str, subject: LoadedModel, block: int | tuple[int, ...], how: str,
            ablation: str = "", masked: int = 0) -> Run:
        """Invert every prompt from block ``block``'s output (0-based; a tuple: those blocks' outputs together)
        under setting ``how``, with the model changed by ``ablation`` (one of ``ABLATIONS``; "" for none) and the
        outputs of the first ``masked`` positions left out of the target (S3.9's [:, masked:, :]); cached."""
        return self.runs_of(name, subject, [(block, how)], ablation, masked)[0]

    def runs_of(self, name: str, subject: LoadedModel, targets: Sequence[tuple[int | tuple[int, ...], str]],
                ablation: str = "", masked: int = 0, continued: bool = False) -> list[Run]:
        """:meth:`run` for each (block, setting) of ``targets``, the missing ones side by side
        (``models.forwards.side_by_side``); with ``continued``, those runs' descents continued from where they ended
        to ``convergence.LONGER`` × N steps in all (a convergence control), on the reported prompts only
        (``Scale.reported``: every per-prompt array of such a run has their length), cached apart.

        Returns:
            the runs, in ``targets``' order.
        """
        problem = self.problem(name, subject)
        keys = [(name, self.scale.prompts_for(subject.d_model), block, how, ablation, masked, continued)
                for block, how in targets]
        first_keys = [(*key[:-1], False) for key in keys] if continued else []  # the N runs continued
        for key in [k for k in first_keys if k in self.runs and self.runs[k].found is None]:
            del self.runs[key]  # its found inputs were let go with its model's problem: run again
        first = self.runs_of(name, subject, targets, ablation, masked) if continued else [None] * len(targets)
        starts = {k: None if run is None else run.found for k, run in zip(keys, first)}
        missing = list(dict.fromkeys(k for k in keys if k not in self.runs))
        # an ablation changes one block's module: the runs that share its block run together
        for block in dict.fromkeys(k[2] for k in missing) if ablation else [None] * bool(missing):
            batch = [k for k in missing if block is None or k[2] == block]
            with ABLATIONS[ablation](subject, block):
                self.runs.update(zip(batch, side_by_side(subject.model, [
                    partial(self._invert, name, subject, problem, k[2], k[3], masked, starts[k]) for k in batch])))
        return [self.runs[k] for k in keys]

    def _invert(self, name: str, subject: LoadedModel, problem: Problem, block, how: str, masked: int,
                continue_from: torch.Tensor | None = None) -> Run:
        """One descent (and its random start) on ``problem``, or (``continue_from``, found inputs of every prompt) one
        continued for ``convergence.further_steps`` on the reported prompts only (``Scale.reported``: the prompts a
        convergence control reads); the caller holds the model frozen and ablated."""
        first = self.scale.steps(name)
        steps = first if continue_from is None else further_steps(first)
        if continue_from is not None:
            rows = torch.as_tensor(self.scale.reported(np.arange(problem.ids.shape[0])), device=problem.ids.device)
            problem = replace(problem, ids=problem.ids[rows], allowed=problem.allowed[rows],
                              prompt_allowed=problem.prompt_allowed[rows])
            continue_from = continue_from[rows.to(continue_from.device)]
        config = setting(how, steps, problem.weight)
        k = min(TOP_K, int(problem.allowed.sum(1).min()))
        layer = layer_output(subject, block, problem.tokens)
        started = time.perf_counter()
        positions = slice(masked, None) if masked else None
        found = invert(layer, problem.ids, problem.weight, torch.Generator().manual_seed(self.seed), config,
                       allowed=problem.allowed, k=k, pinv=problem.pinv, positions=positions, start=continue_from)
        start = invert(layer, problem.ids, problem.weight, torch.Generator().manual_seed(self.seed),
                       replace(config, steps=0), allowed=problem.allowed, k=1,
                       pinv=problem.pinv, positions=positions)
        seconds = time.perf_counter() - started
        full = decode_top_k(found.inputs, TOP_K, pinv=problem.pinv)  # the same a_g over the whole vocabulary
        own = [decode_top_k(x, 1, problem.prompt_allowed, pinv=problem.pinv)[..., 0] for x in (found.inputs, start.inputs)]
        zero = [zero_masked_decode(x, mask, problem.pinv) for x, mask in (
            (found.inputs, problem.allowed), (found.inputs, problem.prompt_allowed), (start.inputs, problem.prompt_allowed))]
        wins = [~m.gather(1, z) for z, m in ((zero[0], problem.allowed), (zero[1], problem.prompt_allowed))]
        shown = examples(problem.ids, found.top_k, subject.tokenizer, "restricted")
        shown |= examples(problem.ids, full, subject.tokenizer, "full vocabulary", target=False)
        zero_accuracy, zero_prompt_accuracy, start_zero_prompt_accuracy = (
            _numpy((z == problem.ids).double().mean(1)) for z in zero)
        return Run(accuracy=_numpy(found.token_accuracy), hits=(found.decoded == problem.ids).cpu().numpy(),
                   exact=_numpy(found.exact_match), full_accuracy=_numpy((full[..., 0] == problem.ids).double().mean(1)),
                   prompt_accuracy=_numpy((own[0] == problem.ids).double().mean(1)), success=_numpy(found.success),
                   start_accuracy=_numpy(start.token_accuracy),
                   start_prompt_accuracy=_numpy((own[1] == problem.ids).double().mean(1)),
                   zero_accuracy=zero_accuracy, zero_prompt_accuracy=zero_prompt_accuracy,
                   start_zero_prompt_accuracy=start_zero_prompt_accuracy,
                   zero_wins=_numpy(wins[0].double().mean(1)), zero_prompt_wins=_numpy(wins[1].double().mean(1)),
                   distance_ratio=_numpy(found.output_distance / found.shifted_distance),
                   examples=dict(sorted(shown.items(), key=_row_order)),
                   steps=first if continue_from is None else first + steps, seconds=seconds,
                   deviations="; ".join(config.deviations()), found=found.inputs)


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.double().cpu().numpy()


def _row_order(item) -> tuple:
    label = item[0]
    prompt = int(label.split(":")[0].split()[-1])
    return prompt, 0 if label.endswith("target") else 1 if "restricted" in label else 2, label
