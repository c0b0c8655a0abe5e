"""S3's convergence controls: a failure that more descent steps remove is the step budget's, not the model's.

S3 gives a trained block N = 2000 steps (20000 for its failures) and an untrained one 200; on a CPU every model gets
200. At N = 200 S3.7's 56-token input came back at 0.48 of its tokens on tiny-w96, and at N = 2000 (an H200) at 0.994,
which moved S3.7's statistic from −0.51 to −0.006: a verdict the budget made. So every S3 check that a longer descent
could change gets, where it fails, a convergence control on the same prompts: the same descent continued from where
its N steps ended for (``LONGER`` − 1)·N further steps under the same setting's schedule anew (η from its start
value down again, 5N steps in all: the longer descent pays only for its extra steps), and the failed statistic
measured again (:func:`convergence_check`). The failure stands only where it stays; where the longer descent removes
or blurs it, the record is inconclusive, "unconverged" (``reports.checks.Check.convergence``).

Where more steps can only deepen a failure (too much recovered: S3.9's masked token found, S3.13's distance
minimised with the norms in place), no longer descent is run and the record says why (:func:`deepens`).
"""

from reports.checks import Check
from latent_instruments.stats import Estimate

LONGER = 5  # the convergence control's budget: 5N steps in all, as S3.13's own ladder's second rung


def further_steps(steps: int) -> int:
    """The steps a continued descent adds to one of N = ``steps``: (LONGER − 1)·N, so LONGER·N in all."""
    return (LONGER - 1) * steps


def convergence_check(failed: Check, longer: Estimate, steps: int) -> Check:
    """The convergence control of a failed claim check: its statistic after the descent continued to LONGER·N steps
    on the same prompts, compared the other way, so that it passes only where the failure stays.

    Args:
        failed: the claim check that failed at N steps (``Check.status`` "failed").
        longer: the same statistic, the same units, after the continued descent.
        steps: N, the first descent's steps.
    Raises:
        ValueError: as ``Check.of``.
    """
    flipped = "<" if failed.comparison == ">" else ">"
    return Check.of(
        f"{failed.name}, after {LONGER}N = {LONGER * steps} steps", longer, failed.unit, flipped, failed.threshold,
        f"convergence control: the failed claim check again after the same descent, on the same prompts, continued "
        f"from where its N = {steps} steps ended for {further_steps(steps)} more (the setting's schedule anew, "
        f"{LONGER}N in all). The failure is the model's only where it stays: the interval wholly on the failing side "
        f"of the claim's own threshold ({flipped} {failed.threshold:g}); where it is not, more steps remove or blur "
        "the failure and the record is inconclusive (unconverged), never a finding (S3 gives a trained block "
        "N = 2000 to 20000 steps)", role="control", convergence=True)


def continues(failed: str, descents: str) -> str:
    """The procedure's sentence for a convergence control: where ``failed`` (the claim check, in words) fails,
    ``descents`` (which ones, in words) continue to LONGER·N steps."""
    return (f"Where {failed} fails, {descents} continue from where they ended to {LONGER}N steps (the convergence "
            "control, claims.s3_inversion.convergence): the failure stands only if it stays.")


def deepens(why: str) -> str:
    """The procedure's sentence for a failure that more steps can only deepen, with ``why``."""
    return (f"Convergence: more descent steps can only deepen a failure of this claim ({why}), so no longer descent "
            "is run for it (claims.s3_inversion.convergence).")
