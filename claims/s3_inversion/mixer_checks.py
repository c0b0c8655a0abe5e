"""S3.12's checks as pure functions of its estimates: ``mixer_measures.py`` measures, these decide, and the self-tests
(``tests/cases_s3.py``) drive the same functions to hold and to fail each check. ``mixer_checks`` composes the compared
pairs' checks (``pair_checks``, :func:`compared`) and the twins' controls (``works_checks``) for the record;
``tests/test_s3_checks.py`` holds its order and what a pair not compared leaves out. The number they decide with,
HALF, is in the topic's home, ``mixer.toml``.
"""

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.mixer_measures import (
    BLOCK, HALF, KINDS, MixerEstimates, PairContext, PairEstimates, TwinsEstimates,
)
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from reports.checks import Check


def works_checks(e: TwinsEstimates, names: list[str]) -> list[Check]:
    """The untrained twins' controls: each twin's block-``BLOCK`` inversion gives back most unmasked tokens on most
    prompts, as S3 says untrained blocks do; ``names``: the twins'."""
    return [works_check(w, f"prompts of {name} whose unmasked tokens mostly come back (> {HALF}, block {BLOCK})",
                        UNTRAINED_INVERTS, key=f"S3.12/twin-{i + 1}-unmasked-tokens-come-back")
            for i, (w, name) in enumerate(zip(e.works, names))]


def pair_checks(e: PairEstimates, context: PairContext) -> list[Check]:
    """S3.12's claim check for one pair (``context.kind``: "trained" or "untrained twins", whose derivations differ),
    its convergence control where ``longer`` is given, and the above-chance control; ``context.steps``: the
    transformer's N."""
    ordering = Check.of(
        f"masked first token recovered, {context.mixer} minus {context.transformer} (block {BLOCK}, [:, 1:, :])",
        e.ordering, "fraction of prompts", ">", 0.0, **catalogued("S3.12/ordering", context.kind))
    above = Check.of(f"masked first token recovered by {context.mixer} minus chance (block {BLOCK})", e.above_chance,
                     "fraction of prompts", ">", 0.0, role="control",
                     **catalogued("S3.12/above-chance"))
    return [
        ordering, *([] if e.longer is None else convergence_checks(ordering, e.longer, context.steps,
                                                                    untrained=context.kind != "trained")),
        *([] if e.source_setting is None else [source_setting_reading(ordering, e.source_setting)]),
        above, *([] if e.longer_above_chance is None else [at_headline_budget(above, e.longer_above_chance,
                                                                               context.steps)]),
    ]


def compared(e: MixerEstimates) -> dict[str, PairEstimates]:
    """The pairs S3.12's record compares, by kind: the trained pair where it was not gated, the twins' pair where
    the twins' controls (:func:`works_checks`) all pass (S3 says untrained blocks invert: where they do not, the
    controls fail the record, and the pair is not compared)."""
    twins = e.contexts["untrained twins"]
    works = all(c.passed for c in works_checks(e.twins, [twins.transformer, twins.mixer]))
    return {kind: pair for kind, pair in e.pairs.items()
            if pair is not None and (kind != "untrained twins" or works)}


def mixer_checks(e: MixerEstimates) -> list[Check]:
    """S3.12's checks: the trained pair's (where compared), then the twins' controls, then the twins' pair's (where
    compared): :func:`pair_checks` and :func:`works_checks` in that order."""
    checks, pairs, twins = [], compared(e), e.contexts["untrained twins"]
    for kind in KINDS:
        if kind == "untrained twins":
            checks += works_checks(e.twins, [twins.transformer, twins.mixer])
        if kind in pairs:
            checks += pair_checks(pairs[kind], e.contexts[kind])
    return checks


def not_compared(e: MixerEstimates, gated: list[str]) -> str:
    """Why S3.12 says nothing, or "" where its record decides: no pair is compared while every control passed;
    ``gated``: the gates' reasons (``MixerShown.gated``), joined."""
    checks = mixer_checks(e)
    return "; ".join(gated) if not any(c.role == "claim" for c in checks) and all(c.passed for c in checks) else ""
