"""S4.5's measurements: the final norm's output-norm changes under S4's turns and scales, the paired excess of two
turns and the hypothesis search for the largest change over scales. test_final_norm.py records what these measure;
final_norm_checks.py decides; the numbers both read are in the topic's home, final_norm.toml.
"""

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from hypothesis import given, settings as hypothesis_settings, strategies as st

from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.normalization import (
    gain_unevenness, relative_norm_change, rotate_to_cosine, with_concentrated_gain, with_even_gain, without_bias,
)
from latent_instruments.stats import Estimate, per_unit, proportion, sample_mean

SCALE, COSINE, CLOSE, SOURCE_TURNED_CHANGE, SCALE_IDENTITY = numbers(
    __file__, "SCALE", "COSINE", "CLOSE", "SOURCE_TURNED_CHANGE", "SCALE_IDENTITY")
PER_PROMPT = 8  # positions sampled per held-out prompt: 256 vectors at the first look of 32 (S4: 1000 prompts' last positions)
UNDER = 0.01  # a reading in the details: "under 1 %" is the catalogue's paraphrase of S4's one vector, not S4's words


@dataclass(frozen=True)
class FinalNormEstimates:
    """What S4.5's checks decide on, measured on a model's final norm, each over prompts (the bootstrap unit).

    Attributes:
        within_source: the fraction of vectors whose relative output-norm change (|‖n(x')‖ − ‖n(x)‖| / ‖n(x)‖) is at
            most S4's one draw (SOURCE_TURNED_CHANGE) when each input is turned to cosine COSINE and scaled × SCALE.
        turned: the mean relative output-norm change under the same turns (S4's figure sits beside it).
        turned_excess: the paired difference, change at COSINE minus change at CLOSE (both × SCALE).
        worst_scale: the largest change hypothesis finds over scales 0.5-1000 (a point: an implementation check).
        examples: how many examples hypothesis tried.
        unnormalised: the least change with the norm replaced by identity, input × SCALE.
        concentrated: ``within_source`` with the gain concentrated on 1/16 of the coordinates.
    """

    within_source: Estimate
    turned: Estimate
    turned_excess: Estimate
    worst_scale: Estimate
    examples: int
    unnormalised: Estimate
    concentrated: Estimate


@dataclass(frozen=True)
class FinalNormShown:
    """What S4.5's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        changes: {"turned", "nearly", "scaled"}: the relative output-norm changes (prompts, k) turned to COSINE, to
            CLOSE (both × SCALE), and × SCALE alone.
        direction: what makes the output norm depend on direction (the gain's unevenness, the bias's size, the mean
            change with the gain evened and with the bias removed).
        mean_input_norm: the mean norm of the sampled final-block outputs (activation units).
        readings: {"median", "under 1 %", "nearly", "scaled"}: the median change turned to COSINE, the fraction of
            vectors it moves under 1 %, and the mean change turned to CLOSE and × SCALE alone.
    """

    changes: dict[str, np.ndarray] = field(default_factory=dict)
    direction: dict = field(default_factory=dict)
    mean_input_norm: float = float("nan")
    readings: dict[str, Estimate] = field(default_factory=dict)


def paired_excess(u: np.ndarray) -> float:
    """Mean over prompts and vectors of the first change minus the second; units (batch, k, 2)."""
    return float((u[..., 0] - u[..., 1]).mean())


PROPERTY_EXAMPLES = 60  # hypothesis examples: (row of the sampled final-block outputs, scale in [0.5, 1000])


def worst_scale_change(norm: torch.nn.Module, x: torch.Tensor) -> tuple[float, int]:
    """The largest relative output-norm change hypothesis finds over rows of x (vectors, d_model) and scales in
    [0.5, 1000] (derandomised: the same examples every run), and the number of examples tried."""
    seen: list[float] = []

    @hypothesis_settings(max_examples=PROPERTY_EXAMPLES, derandomize=True, database=None, deadline=None)
    @given(row=st.integers(0, x.shape[0] - 1), scale=st.floats(0.5, 1000.0))
    def keeps_norm(row, scale):
        vector = x[row : row + 1]
        seen.append(relative_norm_change(norm, vector, vector * scale).item())
        assert seen[-1] < SCALE_IDENTITY

    try:
        keeps_norm()
    except AssertionError:
        pass  # hypothesis shrank a counterexample; its change is in `seen`
    return max(seen), len(seen)


def _final_norm(subject) -> torch.nn.Module:
    """A float32 copy of the model's final norm (the model itself stays in its dtype)."""
    return copy.deepcopy(subject.model.get_submodule(subject.adapter.final_norm)).float()


def _final_block_outputs(activations, seed: int) -> torch.Tensor:
    """(batch, k, d_model) final-norm inputs, float32: k = PER_PROMPT seeded random positions per prompt
    (the first position excluded), so that the prompt stays the bootstrap unit."""
    x = activations.cache["ln_final.hook_in"][:, 1:, :]
    k = max(1, min(PER_PROMPT, x.shape[1]))
    generator = torch.Generator().manual_seed(seed)
    pick = torch.stack([torch.randperm(x.shape[1], generator=generator)[:k] for _ in range(x.shape[0])])
    return torch.take_along_dim(x, pick.to(x.device)[:, :, None], dim=1).float()


def _identity_parameters(norm: torch.nn.Module) -> bool:
    """Whether a norm has unit gain and zero bias (an untrained norm), where S4.5 holds by construction."""
    weight, bias = getattr(norm, "weight", None), getattr(norm, "bias", None)
    return (weight is None or bool((weight == 1).all())) and (bias is None or bool((bias == 0).all()))


def _changes(norm: torch.nn.Module, x: torch.Tensor, other: torch.Tensor) -> np.ndarray:
    """(batch, k) relative output-norm changes of :func:`relative_norm_change` for x, other (batch, k, d_model)."""
    return relative_norm_change(norm, x.flatten(0, 1), other.flatten(0, 1)).reshape(x.shape[:2]).cpu().numpy()


def _median(u: np.ndarray) -> float:
    return float(np.median(u))


def _under(u: np.ndarray) -> float:
    return float((u < UNDER).mean())


def within_source(u: np.ndarray) -> Estimate:
    """S4.5's deciding statistic: the fraction of the changes u (prompts, k) at most S4's one draw, each
    vector a unit (its own random position and turn), with its exact binomial interval (a proportion: all or none
    of the vectors within gives [0, 0.01] or [0.99, 1], never a zero-width bootstrap)."""
    return proportion((u <= SOURCE_TURNED_CHANGE).ravel())


def _row(e: Estimate) -> dict:
    return {"value": e.value, "low": e.low, "high": e.high}


def _direction_dependence(norm, x: torch.Tensor, turned: torch.Tensor, measured: Estimate, claim) -> dict:
    """S4.5's details on what makes the output norm depend on direction: the gain's unevenness, the bias's size, and
    the mean change as measured (``measured``), with the gain evened and with the bias removed; x, turned (batch,
    positions, d_model)."""
    gain, bias = norm.weight.detach().double(), getattr(norm, "bias", None)
    evened, unbiased = _changes(with_even_gain(norm), x, turned), _changes(without_bias(norm), x, turned)
    return {
        "gain unevenness, std(g²) / mean(g²)": {"value": gain_unevenness(norm)},
        "‖bias‖ / ‖gain‖": {"value": 0.0 if bias is None else float(bias.detach().double().norm() / gain.norm())},
        "mean change, as measured": _row(measured),
        "mean change, gain evened (bias kept)": _row(claim.bootstrap(evened, sample_mean)),
        "mean change, bias removed (gain kept)": _row(claim.bootstrap(unbiased, sample_mean)),
    }


def measure_final_norm(subject, activations, claim) -> tuple[FinalNormEstimates, FinalNormShown]:
    """S4.5's measurement on sampled final-block outputs (prompts, k, d_model): the final norm's output-norm change
    turned to COSINE and to CLOSE (both × SCALE) and × SCALE alone, its controls, and what makes it depend on
    direction: (the checks' estimates, what the record shows beside them).

    Args:
        subject: the loaded model (``LoadedModel``).
        activations: its capture with ``ln_final.hook_in`` (batch, seq, d_model).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` on a norm of unit gain and zero bias (an identity).
        ValueError: as ``ClaimRecorder.bootstrap``.
    """
    seed = claim.seed
    x = _final_block_outputs(activations, seed)
    norm = _final_norm(subject).to(x.device)
    turned = rotate_to_cosine(x.flatten(0, 1), COSINE, torch.Generator().manual_seed(seed)).reshape(x.shape) * SCALE
    close = rotate_to_cosine(x.flatten(0, 1), CLOSE, torch.Generator().manual_seed(seed + 1)).reshape(x.shape) * SCALE
    scaled, rotated, nearly = _changes(norm, x, x * SCALE), _changes(norm, x, turned), _changes(norm, x, close)
    if _identity_parameters(norm):
        claim.not_informative(gate("S4.5/final-norm-removes-scale/identity", scaled=scaled.mean(), rotated=rotated.mean()),
                              details={"identity": {"mean change, ×10": float(scaled.mean()),
                                                    "mean change, turned to cosine 0.52 and ×10": float(rotated.mean()),
                                                    "d_model": x.shape[-1]}})
    unnormalised = _changes(torch.nn.Identity(), x, x * SCALE)
    worst, examples = worst_scale_change(norm, x.flatten(0, 1))
    measured = claim.bootstrap(rotated, sample_mean)
    return FinalNormEstimates(
        within_source=within_source(rotated),
        turned=measured,
        turned_excess=claim.bootstrap(np.stack([rotated, nearly], axis=-1), paired_excess),
        worst_scale=Estimate(worst, worst, worst, 1.0, examples), examples=examples,
        unnormalised=per_unit(unnormalised, "min"),
        concentrated=within_source(_changes(with_concentrated_gain(norm), x, turned)),
    ), FinalNormShown(
        changes={"turned": rotated, "nearly": nearly, "scaled": scaled},
        direction=_direction_dependence(norm, x, turned, measured, claim),
        mean_input_norm=float(x.norm(dim=-1).mean()),
        readings={"median": claim.bootstrap(rotated, _median), "under 1 %": claim.bootstrap(rotated, _under),
                  "nearly": claim.bootstrap(nearly, sample_mean), "scaled": claim.bootstrap(scaled, sample_mean)})
