"""S2.1 and S2.2's checks as pure functions of their estimates: ``stream_measures.py`` measures, these decide,
and the self-tests (``tests/cases_s2.py``) drive the same functions to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

# S2 Table 1: the cosine between consecutive layers "stabilizes quickly above 0.88" (text: "often bigger than 0.9")
COSINE_FLOOR = 0.88
SOURCE_LAYERS = 32  # S2's scope: "several layers ranging from 32 in small models to more than a hundred"


@dataclass(frozen=True)
class GrowthEstimates:
    """What S2.1's test measures over prompts (ratios of mean L2 norms).

    Attributes:
        keeps_growing: the smallest step ratio of the mean norm, layer l + 1 / layer l.
        typical: the median token's norm ratio, last block / block 1.
        labels: shown beside the checks, deciding nothing: the layers' labels, block 1's input first (L + 1).
        norms, twin_norms: shown: (prompts, L + 1) mean L2 norm per layer, the model's and its untrained twin's.
        rate, twin_rate: shown: the growth factor per block from block 1's output to the last (the scaled reading).
        per_layer, twin_per_layer: shown: the mean norm of each layer over prompts.
    """

    keeps_growing: Estimate
    typical: Estimate
    labels: list[str] = field(default_factory=list, compare=False)
    norms: np.ndarray | None = field(default=None, compare=False)
    twin_norms: np.ndarray | None = field(default=None, compare=False)
    rate: Estimate | None = field(default=None, compare=False)
    twin_rate: Estimate | None = field(default=None, compare=False)
    per_layer: list[Estimate] = field(default_factory=list, compare=False)
    twin_per_layer: list[Estimate] = field(default_factory=list, compare=False)


def growth_checks(e: GrowthEstimates, first: str, last: str) -> list[Check]:
    """S2.1's claim check (the norm grows at every step) and the median-token control guarding a pass; ``first``
    and ``last`` name block 1's and the last block's outputs."""
    return [
        Check.of("smallest step ratio of mean norm, layer l + 1 / layer l", e.keeps_growing, "ratio", ">", 1.0,
                 **catalogued("S2.1/smallest-step-ratio-of-mean-norm-layer-l-1-layer-l")),
        Check.of(f"median token's norm ratio, {last} / {first}", e.typical, "ratio", ">", 1.0, role="control",
                 guards_pass=True, **catalogued("S2.1/median-token-s-norm-ratio")),
    ]


@dataclass(frozen=True)
class DirectionEstimates:
    """What S2.2's test measures over prompts (cosines), over every transition after the first block's.

    Attributes:
        floor: the smallest consecutive-layer cosine of a token's states.
        above_null: the smallest margin of that cosine over the mismatched-token null (paired).
        labels: shown beside the checks, deciding nothing: the layers' labels, block 1's input first (L + 1).
        per_step, per_null, per_cross, per_twin: shown: per transition (per layer for ``per_cross``), the mean
            consecutive cosine, its mismatched-token null, the cross-token cosine and the untrained twin's
            consecutive cosine.
    """

    floor: Estimate
    above_null: Estimate
    labels: list[str] = field(default_factory=list, compare=False)
    per_step: list[Estimate] = field(default_factory=list, compare=False)
    per_null: list[Estimate] = field(default_factory=list, compare=False)
    per_cross: list[Estimate] = field(default_factory=list, compare=False)
    per_twin: list[Estimate] = field(default_factory=list, compare=False)


def direction_checks(e: DirectionEstimates, counted: str) -> list[Check]:
    """S2.2's claim check (above S2's 0.88) and the mismatched-token control; ``counted`` names the transitions
    ("block 1 → block 2 .. block 5 → block 6")."""
    return [
        Check.of(f"smallest consecutive-layer cosine, {counted}", e.floor, "cosine", ">", COSINE_FLOOR,
                 **catalogued("S2.2/smallest-consecutive-layer-cosine")),
        Check.of("smallest margin of the consecutive cosine over the mismatched-token null", e.above_null, "cosine",
                 ">", 0.0,
                 role="control",
                 **catalogued("S2.2/smallest-margin-of-the-consecutive-cosine-over-the-mismatched-token")),
    ]
