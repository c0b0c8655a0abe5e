"""S4.5: the final LayerNorm removes the scale of the last block's output.

Appendix III: scaling final-block outputs by 10 (22.89 -> 228.9) leaves the
LayerNorm output norm at 23.1262 vs 23.1263; even a direction change to
cosine 0.52 moves it by under 1 % (23.1496 vs 23.0546).
"""

import copy

import pytest
import torch
from hypothesis import given, settings as hypothesis_settings, strategies as st

from latent_instruments.normalization import relative_norm_change, rotate_to_cosine
from latent_instruments.stats import Estimate, bootstrap
from reports.records import Check

pytestmark = pytest.mark.gpu

N_VECTORS = 256  # S4 uses 1000 prompts' last positions; we sample positions of the held-out batch
SCALE, COSINE = 10.0, 0.52  # S4 Appendix III


def _final_norm(subject) -> torch.nn.Module:
    """A float32 copy of the model's final norm (the model itself stays in its dtype)."""
    return copy.deepcopy(subject.model.get_submodule(subject.adapter.final_norm)).float()


def _final_block_outputs(activations, seed: int) -> torch.Tensor:
    """(N_VECTORS, d_model) final-norm inputs at seeded random positions (first position excluded), float32."""
    x = activations.cache["ln_final.hook_in"][:, 1:, :].flatten(0, 1)
    pick = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(seed))[:N_VECTORS]
    return x[pick.to(x.device)].float()


def _identity_parameters(norm: torch.nn.Module) -> bool:
    """Whether a norm has unit gain and zero bias (an untrained norm), where S4.5 holds by construction."""
    weight, bias = getattr(norm, "weight", None), getattr(norm, "bias", None)
    return (weight is None or bool((weight == 1).all())) and (bias is None or bool((bias == 0).all()))


@pytest.mark.claim("S4.5", version=2)
@pytest.mark.models("trained", "hf", "reference")
@pytest.mark.needs("ln_final.hook_in")
def test_final_norm_removes_scale(model_name, subject, activations, claim, settings):
    """S4.5: relative change of the final-norm output norm under ×10 scaling, and under a turn to cosine 0.52."""
    x = _final_block_outputs(activations, settings.seed)
    norm = _final_norm(subject).to(x.device)
    if _identity_parameters(norm):
        claim.not_informative(
            "the final norm has unit gain and zero bias (untrained), so its output norm is sqrt(d_model) for any "
            "input: S4.5 holds by construction and says nothing about what training did; a trained checkpoint "
            "would be informative")
    turned = rotate_to_cosine(x, COSINE, torch.Generator().manual_seed(settings.seed)) * SCALE
    scaled = relative_norm_change(norm, x, x * SCALE).cpu().numpy()
    rotated = relative_norm_change(norm, x, turned).cpu().numpy()
    unnormalised = relative_norm_change(torch.nn.Identity(), x, x * SCALE).cpu().numpy()

    def mean(u):
        return float(u.mean())

    claim.record(
        [
            Check.of("relative output-norm change, input × 10", bootstrap(scaled, mean, seed=settings.seed), "fraction", "<", 1e-3,
                     "S4 Appendix III: 23.1262 vs 23.1263 after ×10, a change of 4e-6; we allow 1e-3 (250× that) for "
                     "the norm's eps and low-precision dtypes, still 10× below the 1 % of the direction check"),
            Check.of("relative output-norm change, turned to cosine 0.52 and × 10", bootstrap(rotated, mean, seed=settings.seed),
                     "fraction", "<", 0.01,
                     "S4 Appendix III: cosine 0.5178 moved 23.1496 to 23.0546 (0.41 %); the claim's bound is 'under 1 %', "
                     "taken as is, for the mean over vectors (upper end of a 95 % bootstrap interval)"),
            Check.of("same measure with the norm replaced by identity, input × 10", bootstrap(unnormalised, mean, seed=settings.seed),
                     "fraction", ">", 1e-3,
                     "control: without normalisation the output norm grows ×10 (change 9); the measurement must see "
                     "that, or the first check could pass because nothing was measured", role="control"),
        ],
        procedure=(
            f"{N_VECTORS} final-norm inputs at random held-out positions (S4: 1000 prompts' last positions). The "
            "direction change turns each vector to cosine exactly 0.52 in a random orthogonal plane (S4 adds noise × 2 "
            "and gets cosine 0.5178), then scales by 10 as S4 does."
        ),
        details={"max_change_scaled": float(scaled.max()), "max_change_turned": float(rotated.max()),
                 "mean_input_norm": float(x.norm(dim=-1).mean())},
    )


PROPERTY_EXAMPLES = 60  # hypothesis examples: (row of the sampled final-block outputs, scale in [0.5, 1000])


@pytest.mark.claim("S4.5", version=2)
@pytest.mark.models("trained", "hf", "reference")
@pytest.mark.needs("ln_final.hook_in")
def test_final_norm_scale_invariance_property(model_name, subject, activations, claim, settings):
    """S4.5's scale part as a property: for any real final-block output and any scale in [0.5, 1000], the
    final norm keeps the output norm within 1e-3. Hypothesis searches for the worst case (and shrinks it);
    the record holds the largest change seen, so a counterexample is a "fails" of S4.5 like any other."""
    x = _final_block_outputs(activations, settings.seed)
    norm = _final_norm(subject).to(x.device)
    if _identity_parameters(norm):
        claim.not_informative("the final norm has unit gain and zero bias (untrained): scale invariance holds by "
                              "construction and says nothing about what training did")
    seen: list[float] = []

    class NormChanged(Exception):
        """A counterexample: the output norm moved by 1e-3 or more."""

    @hypothesis_settings(max_examples=PROPERTY_EXAMPLES, derandomize=True, database=None, deadline=None)
    @given(row=st.integers(0, x.shape[0] - 1), scale=st.floats(0.5, 1000.0))
    def keeps_norm(row, scale):
        vector = x[row : row + 1]
        seen.append(relative_norm_change(norm, vector, vector * scale).item())
        if not seen[-1] < 1e-3:
            raise NormChanged(seen[-1])

    try:
        keeps_norm()
    except NormChanged:
        pass  # hypothesis shrank a counterexample; its change is in `seen`, and the check below fails on it
    worst = max(seen)
    claim.record(
        [Check.of(f"largest relative output-norm change over {len(seen)} hypothesis examples, scale in [0.5, 1000]",
                  Estimate(worst, worst, worst, 1.0, len(seen)), "fraction", "<", 1e-3,
                  "S4 Appendix III: ×10 changed the norm by 4e-6; the bound 1e-3 is the one of the ×10 check above, "
                  "for the worst case found rather than the mean (no interval: a maximum over searched examples)")],
        procedure=f"hypothesis (derandomized: the same examples on every run) draws {PROPERTY_EXAMPLES} examples of a sampled "
                  "final-norm input and a scale, searching for the largest relative change of the output norm.",
    )
