"""S3's convergence controls: a failure that more descent steps remove is the step budget's, not the model's.

S3 gives a trained block N = 2000 steps (20000 for its failures) and an untrained one 200; on a CPU every model gets
200. At N = 200 S3.7's 56-token input came back at 0.48 of its tokens on tiny-w96, and at N = 2000 (an H200) at 0.994,
which moved S3.7's statistic from −0.51 to −0.006: a verdict the budget made. So every S3 check that a longer descent
could change gets, where it fails and (issue 64) where its hold rests on a trained model's failure to recover (S3.3,
S3.4, S3.11), a convergence control on the same prompts: the same descent continued from where its N steps ended for
(``LONGER`` − 1)·N further steps under the same setting's schedule anew (η from its start value down again, 5N steps
in all: the longer descent pays only for its extra steps; :data:`SCHEDULE` says why not the first schedule held),
and the statistic measured again (:func:`convergence_check`). The verdict stands only where it stays; where the longer
descent reverses or blurs it, the record is inconclusive, "unconverged" (``reports.checks.Check.convergence``), and
its headline is the longer descent's value, the N value kept beside it.

Where more steps can only deepen a failure (too much recovered: S3.9's masked token found, S3.13's distance
minimised with the norms in place), no longer descent is run and the record says why (:func:`deepens`).
"""

from reports.checks import FAILED, PASSED, Check
from latent_instruments.stats import Estimate

LONGER = 5  # the convergence control's budget: 5N steps in all, as S3.13's own ladder's second rung


def further_steps(steps: int) -> int:
    """The steps a continued descent adds to one of N = ``steps``: (LONGER − 1)·N, so LONGER·N in all."""
    return (LONGER - 1) * steps


def convergence_check(decided: Check, longer: Estimate, steps: int) -> Check:
    """The convergence control of a decided claim check: its statistic after the descent continued to LONGER·N steps
    on the same prompts, so that it passes only where the decision stays. A failure is compared the other way (the
    interval wholly on the failing side); a hold (issue 64: a hold resting on a failure to recover, S3.3, S3.4,
    S3.11) the same way (the interval still wholly on the passing side).

    Args:
        decided: the claim check at N steps (``Check.status`` "failed" or "passed").
        longer: the same statistic, the same units, after the continued descent.
        steps: N, the first descent's steps.
    Raises:
        ValueError: for a check that is undecided, or as ``Check.of``.
    """
    if decided.status not in (FAILED, PASSED):
        raise ValueError(f"{decided.name}: a convergence control continues a decided check, not a {decided.status} one")
    held = decided.status == PASSED
    comparison = decided.comparison if held else ("<" if decided.comparison == ">" else ">")
    what = "hold" if held else "failure"
    return Check.of(
        f"{decided.name}, after {LONGER}N = {LONGER * steps} steps", longer, decided.unit, comparison,
        decided.threshold,
        f"convergence control: the claim check again after the same descent, on the same prompts, continued from "
        f"where its N = {steps} steps ended for {further_steps(steps)} more ({LONGER}N in all). The {what} is the "
        f"model's only where it stays: the interval wholly on the {'passing' if held else 'failing'} side of the "
        f"claim's own threshold ({comparison} {decided.threshold:g}); where it is not, more steps "
        f"{'reverse' if held else 'remove'} or blur it and the record is inconclusive (unconverged) (S3 gives a "
        "trained block N = 2000 to 20000 steps)", role="control", convergence=True,
        key=f"{decided.key}/after-{LONGER}N" if decided.key else "")


def continues(decided: str, descents: str, holds: bool = False) -> str:
    """The procedure's sentence for a convergence control: where ``decided`` (the claim check, in words) fails (and
    with ``holds``, where it holds), ``descents`` (which ones, in words) continue to LONGER·N steps."""
    return (f"Where {decided} {'is decided (holds or fails)' if holds else 'fails'}, {descents} continue from where "
            f"they ended to {LONGER}N steps (the convergence control, claims.s3_inversion.convergence): the verdict "
            f"stands only if it stays. {SCHEDULE}")


SCHEDULE = ("The continuation runs the setting's schedule anew from the found inputs (η from its start value down "
            "again over the 4N added steps), not the first schedule held at its end: that linear schedule has no "
            "continuation past N, and a descent held at its final η barely moves (tiny-w96, block 1: 0.54 → 0.61 "
            "of tokens, against 0.77 restarted), which would confirm a hold by default.")
UNTRAINED_PAST_N = ("An untrained block is continued past S3's own N = 200 only where it fails: more steps can only "
                    "help it recover, so a failure that stays at 5N stands a fortiori; an untrained block's hold is "
                    "never continued (S3: untrained blocks invert after N = 200).")


def deepens(why: str) -> str:
    """The procedure's sentence for a failure that more steps can only deepen, with ``why``."""
    return (f"Convergence: more descent steps can only deepen a failure of this claim ({why}), so no longer descent "
            "is run for it (claims.s3_inversion.convergence).")
