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

A decision stands only at a plateau (issue 77): between the two budgets the statistic moved by less than
:data:`PLATEAU` of its margin at N (:func:`plateau_check`), or the longer descent reached S3's own N for that block
(2000 steps for a trained block, 200 for an untrained one: the decision is then at S3's budget). The CPU's cap is 5N:
no third budget is run inside the claims phase, so a statistic still moving past the fraction leaves the record
inconclusive, "unconverged", with both values kept (the report draws them as a small curve). Untrained holds are
continued too, and a continued record's other controls are checked again at 5N, the budget its headline then comes
from (:func:`at_headline_budget`).

Where more steps can only deepen a failure (too much recovered: S3.9's masked token found, S3.13's distance
minimised with the norms in place), no longer descent is run and the record says why (:func:`deepens`).
"""

from collections.abc import Callable, Collection
from typing import TypeVar

from claims.s3_inversion.scale import Scale
from reports.checks import FAILED, PASSED, Check
from latent_instruments.stats import Estimate

LONGER = 5  # the convergence control's budget: 5N steps in all, as S3.13's own ladder's second rung
# A plateau: from N to 5N the statistic moved less than this fraction of its margin at N (its distance from the
# threshold). Fixed by an argument, not by the values: were each later 5x budget to move at most half as far as the
# one before (a converging descent), all later moves together would add at most as much again, so the decision
# keeps at least half its margin at N.
PLATEAU = 0.25
SOURCE = Scale.of(True)  # S3's own N: 2000 steps for a trained block, 200 for an untrained one
E = TypeVar("E")  # a topic's estimates


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


def plateau_check(decided: Check, longer: Estimate, steps: int) -> Check:
    """The plateau control of a decided claim check (issue 77): how far its statistic moved between N and LONGER·N
    steps, as a fraction of its margin at N, |longer − decided| / |decided − threshold|, which must stay below
    :data:`PLATEAU`. Both values are on the same prompts, so the move is the descent's, not a sample's: a
    deterministic number (its interval is the value). Passes only where the statistic has stopped moving.

    Args:
        decided: the claim check at N steps (decided: "passed" or "failed").
        longer: the same statistic after the continued descent.
        steps: N.
    Raises:
        ValueError: for a decided statistic on its threshold (no margin to measure a move against).
    """
    margin = abs(decided.value - decided.threshold)
    if margin == 0:
        raise ValueError(f"{decided.name}: the statistic at N sits on its threshold; no margin to measure a move by")
    moved = abs(longer.value - decided.value) / margin
    return Check.of(
        f"{decided.name}, moved from N = {steps} to {LONGER}N steps", Estimate(moved, moved, moved, 1.0, longer.n),
        "fraction of its margin at N", "<", PLATEAU,
        f"plateau control: from N = {steps} steps ({decided.value:.4g}) to {LONGER}N ({longer.value:.4g}) on the same "
        f"prompts the statistic moved {moved:.3g} of its distance from the threshold ({decided.threshold:g}); a "
        f"decision stands only where it moved less than {PLATEAU:g} of it (S3 gives a trained block N = "
        f"{SOURCE.trained_steps}, which a CPU does not reach: its cap is {LONGER}N). Where it moved more, the "
        "statistic has not stopped moving and the record is inconclusive (unconverged)",
        role="control", convergence=True, key=f"{decided.key}/plateau" if decided.key else "")


def convergence_checks(decided: Check, longer: Estimate, steps: int, untrained: bool = False) -> list[Check]:
    """A decided claim check's convergence controls: :func:`convergence_check` (the decision stays at LONGER·N), and
    :func:`plateau_check` (the statistic stopped moving) unless the longer descent reached S3's own N for the block
    (``untrained``: 200 steps, else 2000), where the decision is at S3's own budget.

    Raises:
        ValueError: as :func:`convergence_check` and :func:`plateau_check`.
    """
    own = SOURCE.untrained_steps if untrained else SOURCE.trained_steps
    stays = convergence_check(decided, longer, steps)
    return [stays] if LONGER * steps >= own else [stays, plateau_check(decided, longer, steps)]


def at_headline_budget(control: Check, later: Estimate, steps: int) -> Check:
    """A control of a record whose headline comes from the continued descent, checked again there (issue 77: every
    control at the budget its headline comes from): ``control``'s statistic, unit, comparison and threshold on
    ``later``, the same statistic after the descent continued to LONGER·N steps. It decides as the control at N does:
    one that fails only here fails the record.

    Args:
        control: the control at N steps; later: its statistic after the continued descent; steps: N.
    Raises:
        ValueError: as ``Check.of``.
    """
    return Check.of(
        f"{control.name}, after {LONGER}N = {LONGER * steps} steps", later, control.unit, control.comparison,
        control.threshold,
        f"{control.derivation}. Checked again after the descent continued to {LONGER}N = {LONGER * steps} steps, the "
        "budget the headline comes from (issue 77): a control that fails only there fails the record",
        role="control", key=f"{control.key}/after-{LONGER}N" if control.key else "")


def continues(decided: str, descents: str, holds: bool = False) -> str:
    """The procedure's sentence for a convergence control: where ``decided`` (the claim check, in words) fails (and
    with ``holds``, where it holds), ``descents`` (which ones, in words) continue to LONGER·N steps."""
    return (f"Where {decided} {'is decided (holds or fails)' if holds else 'fails'}, {descents} continue from where "
            f"they ended to {LONGER}N steps (the convergence control, claims.s3_inversion.convergence): the verdict "
            f"stands only if it stays, and, below S3's own N, only if the statistic moved less than {PLATEAU:g} of its "
            f"margin (a plateau). {SCHEDULE}")


SCHEDULE = ("The continuation runs the setting's schedule anew from the found inputs (η from its start value down "
            "again over the 4N added steps), not the first schedule held at its end: that linear schedule has no "
            "continuation past N, and a descent held at its final η barely moves (tiny-w96, block 1: 0.54 → 0.61 "
            "of tokens, against 0.77 restarted), which would confirm a hold by default.")
UNTRAINED_PAST_N = ("An untrained block is decided at S3's own N = 200 (S3: untrained blocks invert after N = 200), "
                    "so no plateau is asked of it; it is still continued to 5N, holds and failures alike (issue 77), "
                    "and a decision that does not stay there is unconverged.")


def deepens(why: str) -> str:
    """The procedure's sentence for a failure that more steps can only deepen, with ``why``."""
    return (f"Convergence: more descent steps can only deepen a failure of this claim ({why}), so no longer descent "
            "is run for it (claims.s3_inversion.convergence).")


def settled(estimates: E, decide: Callable[[E], Check], further: Callable[[E], E],
            when: Collection[str] = (FAILED,)) -> E:
    """S3's one continuation (issue 79, item 3): the claim test's measure → (continue) → checks → record, where the
    decision to continue is the checks' own and no measure calls a checks function.

    The first descent's ``estimates`` are decided by ``decide`` (the claim's checks function, its deciding check);
    where that check's status is one of ``when`` (a failure a longer descent could remove; a hold that rests on a
    failure to recover), ``further`` continues the same descents to LONGER·N steps and returns the estimates with the
    longer descent's statistics in place; else the estimates are returned as they are.

    Args:
        estimates: the topic's estimates at N steps (its ``*_measures.py`` dataclass).
        decide: estimates -> the deciding check (e.g. ``lambda e: cosine_checks(e, context)[0]``).
        further: estimates -> the estimates after the continued descent (the topic's measures module).
        when: the statuses that continue (``reports.checks`` FAILED, PASSED, INCONCLUSIVE).
    Raises:
        whatever ``decide`` and ``further`` raise.
    """
    return further(estimates) if decide(estimates).status in when else estimates
