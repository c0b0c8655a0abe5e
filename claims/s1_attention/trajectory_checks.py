"""S1.4's checks as a pure function of its estimates: ``test_trajectory.py`` measures, this decides, and the
self-tests (``tests/cases_s1.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass

from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class TrajectoryEstimates:
    """What S1.4's test measures over prompts (cosine units). Excess closeness is cos(state, row of τ_(t+1)) minus
    cos(state, row of a shuffled next token).

    Attributes:
        gain: the final block's excess closeness to the unembedding row W_U[τ_(t+1)] (final norm applied at every
            depth, the logit lens) minus max(earlier layers', 0).
        over_twin: the final layer's excess closeness, the model's minus its untrained twin's (paired).
    """

    gain: Estimate
    over_twin: Estimate


def trajectory_checks(e: TrajectoryEstimates) -> list[Check]:
    """S1.4's claim check (decided on W_U since version 3) and the untrained-twin control."""
    what, space = "the unembedding row W_U[τ_(t+1)]", "the final norm applied at every depth (logit lens)"
    return [
        Check.of(
            f"{what}: final block's excess closeness minus max(earlier layers', 0)",
            e.gain, "cosine", ">", 0.0,
            f"S1: 'z⁽ᴸ⁾_t ≈ e_(t+1)' at the end of the trajectory 'e_t, z⁽¹⁾_t, …, z⁽ᴸ⁾_t'; read against {what} with "
            f"{space}. Excess closeness is cos(state, row of τ_(t+1)) − cos(state, row of a shuffled next token), so "
            "the threshold 0 says both halves of the claim: the final state is closer to the next token's row than "
            "every earlier state is, and closer to it than to other tokens' rows (the shuffled targets must be "
            "farther). S1 is an argument, not an experiment: no figure to take a margin from; the low end of a "
            "bootstrap interval over prompts must clear 0",
            key="S1.4/final-block-s-excess-closeness-minus-max-earlier-layers-0"),
        Check.of("final-layer excess closeness to W_U[τ_(t+1)], model minus its untrained twin",
                 e.over_twin, "cosine", ">", 0.0,
                 "control: the untrained twin (same architecture, random weights, the same prompts) must not show "
                 "it. A trained model's logits ⟨ln_f(z⁽ᴸ⁾), W_U[τ]⟩ single out the next token far better than "
                 "its twin's, so its final state must be the more specific to W_U[τ_(t+1)]; if not, the "
                 "measurement (target alignment t → t+1, the norm, the rows) is broken, or the closeness is "
                 "architecture, not learning. Independent of the trajectory's order, so a failed claim stays a "
                 "finding", role="control",
                 key="S1.4/final-layer-excess-closeness-to-w-u-t-1-model-minus-its-untrained-twin"),
    ]
