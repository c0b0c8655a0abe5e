"""S3.7 and S3.13's checks as pure functions of their estimates: ``cosine_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check. The numbers they decide
with, RECOVERS and MINIMISED, are in the topic's home, ``cosine.toml``, with their derivations.
"""

from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.cosine_measures import (
    BUDGETS, SHORT_TOKENS, CosineContext, CosineEstimates, LayerNormEstimates,
)
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

# S3.7's controls: most one-token inputs recovered by the indirect cosine inversion, most long tokens by L2;
# S3.13: "minimised" = the cosine distance ends below MINIMISED of where it started
RECOVERS, MINIMISED = numbers(__file__, "RECOVERS", "MINIMISED")


def cosine_checks(e: CosineEstimates, context: CosineContext) -> list[Check]:
    """S3.7's claim check (the ordering), its convergence control where ``longer`` is given, and two controls;
    ``context``: the long inputs' tokens, the control's setting and inputs, and N (:class:`CosineContext`)."""
    ordering = Check.of(f"token accuracy, {context.long_tokens}-token minus one-token inputs (direct, cosine loss)",
                        e.ordering, "fraction of tokens", ">", 0.0,
                        **catalogued("S3.7/ordering"))
    return [
        ordering, *([] if e.longer is None else convergence_checks(ordering, e.longer, context.steps)),
        Check.of("token accuracy of one-token inputs, indirect (embedding) representation, cosine loss "
                 f"({context.control_setting})",
                 e.indirect, "fraction of tokens", ">", RECOVERS,
                 role="control",
                 **catalogued("S3.7/indirect-control", control_inputs=context.control_inputs)),
        Check.of(f"least token accuracy of the {context.long_tokens}-token inputs, direct, L2 loss (the same descent)",
                 e.descent,
                 "fraction of tokens", ">", RECOVERS, role="control",
                 **catalogued("S3.7/l2-descent-control")),
    ]


def layer_norm_checks(e: LayerNormEstimates) -> list[Check]:
    """S3.13's two claim checks and its two controls (the descent minimises without norms, and on one token)."""
    return [
        Check.of(f"cosine distance reached with layer norms, over its start ({SHORT_TOKENS}-token inputs)",
                 e.with_norms, "ratio", ">", MINIMISED,
                 **catalogued("S3.13/with-norms")),
        Check.of(f"cosine distance reached, with layer norms minus without ({SHORT_TOKENS}-token inputs)",
                 e.gap,
                 "1 − cos", ">", 0.0,
                 **catalogued("S3.13/norms-gap")),
        Check.of("cosine distance reached without layer norms, over its start", e.minimised,
                 "ratio", "<", MINIMISED, role="control",
                 **catalogued("S3.13/without-norms-control", budgets=', '.join(map(str, BUDGETS)))),
        Check.of("cosine distance reached by one-token inputs with layer norms, over its start", e.one, "ratio", "<",
                 MINIMISED, role="control",
                 **catalogued("S3.13/one-token-control")),
    ]
