"""S4.5: the final LayerNorm removes the scale of the last block's output, and its output norm varies only a
little with the input's direction.

Appendix III: scaling final-block outputs by SCALE (22.89 -> 228.9) leaves the LayerNorm output norm at 23.1262 vs
23.1263; a direction change to cosine COSINE moves it a little (23.1496 vs 23.0546, SOURCE_TURNED_CHANGE). The checks
are ``final_norm_checks`` (a pure function of this test's estimates; version 9 decides "a little" on S4's own draw
with the uncertainty of that single draw), and their numbers are in the topic's home, ``final_norm.toml``. The output norm of g ⊙ z + b (z the standardised input) depends on direction only
through an uneven gain g or the bias b: the change is measured again with the gain evened out and with the bias
removed, to say which causes it. On an untrained norm (unit gain, zero bias) the claim is an identity. The scale
part is an identity of any affine normalisation: an implementation check (hypothesis searches scales 0.5-1000).
"""

import pytest

from claims.s4_ffn.final_norm_checks import final_norm_checks
from claims.s4_ffn.final_norm_measures import SOURCE_TURNED_CHANGE, measure_final_norm
from fixtures.catalogue_text import procedure
from latent_instruments.stats import Estimate


def _row(e: Estimate) -> dict:
    return {"value": e.value, "low": e.low, "high": e.high}


# 9: 'a little' decided on S4's one draw (at least ALPHA_ONE_DRAW of vectors move no more), the ordering a reading;
# 8: under a factor × S4's draw (chosen after); 7: S4's ordering decided, 'a little' a reading
@pytest.mark.claim("S4.5", version=9, sample="prompts")
@pytest.mark.models("trained", "hf", "reference")
@pytest.mark.needs("ln_final.hook_in")
def test_final_norm_removes_scale(subject, activations, claim):
    """S4.5: turned to cosine COSINE and × SCALE, the final norm's output norm moves 'a little': S4's one draw is an
    ordinary draw of this model's changes (at least ALPHA_ONE_DRAW of its vectors move no more); the checks are
    ``final_norm_checks``."""
    e, shown = measure_final_norm(subject, activations, claim)
    rotated, nearly, scaled = (shown.changes[k] for k in ("turned", "nearly", "scaled"))

    claim.record(
        final_norm_checks(e),
        procedure=procedure("S4.5/final-norm-removes-scale", states=rotated.size, positions=rotated.shape[1],
                            prompts=rotated.shape[0]),
        details={
            "turned to cosine 0.52 and × 10: relative output-norm change over vectors": {
                "mean": _row(e.turned), "median": _row(shown.readings["median"]),
                "fraction of vectors under 1 % (a reading: the catalogue's 'under 1 %')": _row(shown.readings["under 1 %"]),
                "largest": {"value": float(rotated.max())}, "S4 (one vector)": {"value": SOURCE_TURNED_CHANGE},
                "fraction of vectors moved no more than S4's one draw (the claim check)": _row(e.within_source),
                "mean, turned to cosine 0.9967 instead": _row(shown.readings["nearly"]),
            },
            "what makes the output norm depend on direction": shown.direction,
            "mean_input_norm": shown.mean_input_norm, "largest change, × 10": float(scaled.max()),
            "mean change, × 10 (an identity of the norm)": _row(shown.readings["scaled"]),
            "fraction of vectors moved no more than S4's one draw, gain concentrated on 1/16 of the coordinates":
                _row(e.concentrated),
        },
        beside_source={"relative output-norm change, turned to cosine 0.52 and × 10": float(rotated.mean()),
                       "relative output-norm change, turned to cosine 0.9967 and × 10": float(nearly.mean()),
                       "relative output-norm change, × 10": float(scaled.mean())},
    )
