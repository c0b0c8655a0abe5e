"""S3.12's checks as pure functions of its estimates: ``mixer_measures.py`` measures, these decide, and the self-tests
(``tests/cases_s3.py``) drive the same functions to hold and to fail each check. ``mixer_checks`` composes one pair's
checks (``pair_checks``) and the twins' controls (``works_checks``) for the record; ``tests/test_s3_checks.py`` holds
its order and what a pair not compared leaves out.
"""

from dataclasses import dataclass, field

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

BLOCK = 2  # S3: "the output [:, 1:, :] of the second mixer ... block" (1-based)
HALF = 0.5


@dataclass(frozen=True)
class TwinsEstimates:
    """Per untrained twin, the fraction of prompts whose unmasked tokens mostly come back from block ``BLOCK``
    (exact intervals)."""

    works: list[Estimate]


def works_checks(e: TwinsEstimates, names: list[str]) -> list[Check]:
    """The untrained twins' controls: each twin's block-``BLOCK`` inversion gives back most unmasked tokens on most
    prompts, as S3 says untrained blocks do; ``names``: the twins'."""
    return [works_check(w, f"prompts of {name} whose unmasked tokens mostly come back (> {HALF}, block {BLOCK})",
                        UNTRAINED_INVERTS, key=f"S3.12/twin-{i + 1}-unmasked-tokens-come-back")
            for i, (w, name) in enumerate(zip(e.works, names))]


@dataclass(frozen=True)
class PairEstimates:
    """What S3.12's test measures on one compared pair (a transformer and the mixer of its width and recipe), from
    block ``BLOCK``'s output without the first position, over the reported prompts.

    Attributes:
        ordering: masked first token recovered, mixer minus transformer (paired score interval).
        above_chance: the mixer's masked-token recovery minus chance (the random start's hits), paired.
        longer: ``ordering`` after both masked descents continued to 5N (None where not continued).
        longer_above_chance: ``above_chance`` after the mixer's masked descent continued to 5N (the control at the
            headline's budget, issue 77; None where not continued).
        source_setting: ``ordering`` with both descents in S3's own setting (a reading beside the headline, issue
            77; None at source scale, where the headline is S3's setting).
    """

    ordering: Estimate
    above_chance: Estimate
    longer: Estimate | None = None
    longer_above_chance: Estimate | None = None
    source_setting: Estimate | None = None


def pair_checks(e: PairEstimates, kind: str, transformer: str, mixer: str, steps: int) -> list[Check]:
    """S3.12's claim check for one pair (``kind``: "trained" or "untrained twins", whose derivations differ), its
    convergence control where ``longer`` is given, and the above-chance control; ``steps``: the transformer's N."""
    ordering = Check.of(
        f"masked first token recovered, {mixer} minus {transformer} (block {BLOCK}, [:, 1:, :])", e.ordering,
        "fraction of prompts", ">", 0.0, **catalogued("S3.12/masked-first-token-recovered-minus-block-1", kind))
    above = Check.of(f"masked first token recovered by {mixer} minus chance (block {BLOCK})", e.above_chance,
                     "fraction of prompts", ">", 0.0, role="control",
                     **catalogued("S3.12/masked-first-token-recovered-by-minus-chance-block"))
    return [
        ordering, *([] if e.longer is None else convergence_checks(ordering, e.longer, steps, untrained=kind != "trained")),
        *([] if e.source_setting is None else [source_setting_reading(ordering, e.source_setting)]),
        above, *([] if e.longer_above_chance is None else [at_headline_budget(above, e.longer_above_chance, steps)]),
    ]


@dataclass(frozen=True)
class MixerEstimates:
    """What S3.12's test measures on its two pairs, the trained one and their untrained twins.

    Attributes:
        twins: the untrained twins' recovery of the unmasked tokens (their controls).
        pairs: {kind: the pair's estimates, or None where it was not compared: gated, or the twins' control failed}.
        names: {kind: (transformer, mixer)}; steps: {kind: the transformer's N}.
        gated: shown beside the checks, deciding nothing: why a pair was not compared.
        units: shown: {(model, block): (prompts, [masked, unmasked, chance])} in the headline setting.
        chosen: shown: {(model, block): the headline setting's index}.
        masked: shown: each model's masked-token recovery from block ``BLOCK`` (trained pair, then twins).
    """

    twins: TwinsEstimates
    pairs: dict[str, PairEstimates | None]
    names: dict[str, tuple[str, str]]
    steps: dict[str, int]
    gated: list[str] = field(default_factory=list, compare=False)
    units: dict = field(default_factory=dict, compare=False)
    chosen: dict = field(default_factory=dict, compare=False)
    masked: list[Estimate] = field(default_factory=list, compare=False)


def mixer_checks(e: MixerEstimates) -> list[Check]:
    """S3.12's checks: the trained pair's (where compared), then the twins' controls, then the twins' pair's (where
    compared): :func:`pair_checks` and :func:`works_checks` in that order."""
    checks = []
    for kind in ("trained", "untrained twins"):
        if kind == "untrained twins":
            checks += works_checks(e.twins, list(e.names[kind]))
        if e.pairs.get(kind) is not None:
            checks += pair_checks(e.pairs[kind], kind, *e.names[kind], e.steps[kind])
    return checks
