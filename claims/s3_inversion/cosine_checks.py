"""S3.7 and S3.13's checks as pure functions of their estimates: ``cosine_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s3_inversion.convergence import convergence_checks
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

RECOVERS = 0.5  # S3.7's controls: most one-token inputs recovered by the indirect cosine inversion, most long tokens by L2
SUCCEEDS = 0.5  # S3.7's gate: S3's long inputs that succeed decode 4/5 to 10/11 of their words, each above one half
MINIMISED = 0.1  # S3.13: "minimised" = the cosine distance ends below a tenth of where it started
SHORT_TOKENS = 5  # S3.13: "as long as the input is not too long (>5 tokens)"
BUDGETS = (1, 5, 25)  # S3.13: N, 5N, 25N steps, the first at which the descent minimises without norms


@dataclass(frozen=True)
class CosineEstimates:
    """What S3.7's test measures over prompts (fractions of tokens recovered from block 1's output).

    Attributes:
        ordering: token accuracy of the long inputs minus the one-token inputs (direct, cosine loss), paired.
        indirect: token accuracy of the control's one-token inputs in embedding space (an exact interval).
        descent: the least token accuracy of the long inputs under the L2 loss (per input).
        longer: ``ordering`` after the descents continued to 5N steps (None where not continued).
        found: shown beside the checks, deciding nothing: {label: (found, start) inversions} of every descent
            ("long", "one", "l2", "code, long", "code, one", "indirect", "indirect, adapted").
        code_units: shown: (prompts, [long, one-token]) token accuracy at the rate of S3's published code.
        code_ordering: shown: ``ordering`` at the rate of S3's published code.
        control: shown: (control inputs, [S3's setting, adapted]) token accuracy of the indirect one-token inputs.
        per: shown: token accuracy of the long, one-token and (the control's setting) indirect inputs.
        exact_fit: shown: token accuracy of an exact fit of the direct representation from S3's start.
        continued: shown: (prompts, [long, one-token]) token accuracy after the convergence control's longer
            descents (None where not continued).
        singles: shown: (control inputs, 1) the control's one-token inputs.
        context: not a measurement: the arguments ``cosine_checks`` takes after the estimates (long tokens, the
            control's setting in words, its inputs, N).
    """

    ordering: Estimate
    indirect: Estimate
    descent: Estimate
    longer: Estimate | None = None
    found: dict = field(default_factory=dict, compare=False)
    code_units: np.ndarray | None = field(default=None, compare=False)
    code_ordering: Estimate | None = field(default=None, compare=False)
    control: np.ndarray | None = field(default=None, compare=False)
    per: list[Estimate] = field(default_factory=list, compare=False)
    exact_fit: Estimate | None = field(default=None, compare=False)
    continued: np.ndarray | None = field(default=None, compare=False)
    singles: object = field(default=None, compare=False)
    context: tuple = field(default=(), compare=False)


def cosine_checks(e: CosineEstimates, long_tokens: int, control_setting: str, control_inputs: int,
                  steps: int) -> list[Check]:
    """S3.7's claim check (the ordering), its convergence control where ``longer`` is given, and two controls.

    Args:
        long_tokens: tokens of the long inputs; control_setting: the control's setting, in words;
        control_inputs: the control's one-token inputs; steps: N of the first descent.
    """
    ordering = Check.of(f"token accuracy, {long_tokens}-token minus one-token inputs (direct, cosine loss)",
                        e.ordering, "fraction of tokens", ">", 0.0,
                        **catalogued("S3.7/token-accuracy-token-minus-one-token-inputs-direct-cosine-loss"))
    return [
        ordering, *([] if e.longer is None else convergence_checks(ordering, e.longer, steps)),
        Check.of("token accuracy of one-token inputs, indirect (embedding) representation, cosine loss "
                 f"({control_setting})",
                 e.indirect, "fraction of tokens", ">", RECOVERS,
                 role="control",
                 **catalogued("S3.7/token-accuracy-of-one-token-inputs-indirect-embedding-representation",
                              RECOVERS=RECOVERS, control_inputs=control_inputs)),
        Check.of(f"least token accuracy of the {long_tokens}-token inputs, direct, L2 loss (the same descent)",
                 e.descent,
                 "fraction of tokens", ">", RECOVERS, role="control",
                 **catalogued("S3.7/least-token-accuracy-of-the-token-inputs-direct-l2-loss-the-same",
                              RECOVERS=RECOVERS)),
    ]


@dataclass(frozen=True)
class LayerNormEstimates:
    """What S3.13's test measures over prompts on a random-init model's block 1 (cosine distances reached by the
    direct inversion, as ratios to their start where so named).

    Attributes:
        with_norms: distance reached with the layer norms over its start (``SHORT_TOKENS``-token inputs).
        gap: distance reached with the norms minus without (1 − cos), paired.
        minimised: distance reached without the norms over its start.
        one: distance reached by one-token inputs with the norms over its start.
        units: shown beside the checks, deciding nothing: (prompts, 6) cosine distances: with norms, without, their
            starts, one token with norms, its start.
        tried: shown: {N: the distance reached without norms over its start}; steps: shown: the N the comparison ran.
        removed: shown: how many norms were removed; inversions: shown: {"with norms", "without norms"}: the
            found inputs.
    """

    with_norms: Estimate
    gap: Estimate
    minimised: Estimate
    one: Estimate
    units: np.ndarray | None = field(default=None, compare=False)
    tried: dict[str, float] = field(default_factory=dict, compare=False)
    steps: int = field(default=0, compare=False)
    removed: int = field(default=0, compare=False)
    inversions: dict = field(default_factory=dict, compare=False)


def layer_norm_checks(e: LayerNormEstimates) -> list[Check]:
    """S3.13's two claim checks and its two controls (the descent minimises without norms, and on one token)."""
    return [
        Check.of(f"cosine distance reached with layer norms, over its start ({SHORT_TOKENS}-token inputs)",
                 e.with_norms, "ratio", ">", MINIMISED,
                 **catalogued("S3.13/cosine-distance-reached-with-layer-norms-over-its-start-token-inputs",
                              MINIMISED=MINIMISED)),
        Check.of(f"cosine distance reached, with layer norms minus without ({SHORT_TOKENS}-token inputs)",
                 e.gap,
                 "1 − cos", ">", 0.0,
                 **catalogued("S3.13/cosine-distance-reached-with-layer-norms-minus-without-token-inputs")),
        Check.of("cosine distance reached without layer norms, over its start", e.minimised,
                 "ratio", "<", MINIMISED, role="control",
                 **catalogued("S3.13/cosine-distance-reached-without-layer-norms-over-its-start", MINIMISED=MINIMISED,
                              budgets=', '.join(map(str, BUDGETS)))),
        Check.of("cosine distance reached by one-token inputs with layer norms, over its start", e.one, "ratio", "<",
                 MINIMISED, role="control",
                 **catalogued("S3.13/cosine-distance-reached-by-one-token-inputs-with-layer-norms-over-its",
                              MINIMISED=MINIMISED)),
    ]
