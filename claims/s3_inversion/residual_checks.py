"""S3.11's checks as a pure function of its estimates: ``residual_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check. Every number it decides
with is in the topic's home, ``residual.toml``, with its derivation (the twin's control's floor is the family's,
``scope.MOST``).
"""

from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.residual_measures import ResidualContext, ResidualEstimates
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from reports.checks import Check

# residual.toml: "destroys" keeps less than HALF, "little change" more; MATCHED: most prompts pass S3's success test
HALF, MATCHED = numbers(__file__, "HALF", "MATCHED")


def twin_works_check(twin_works: Estimate, twin: str) -> Check:
    """The control that the twin's intact block 1 inverts above chance, as S3 says an untrained block does; the test
    records it alone, before the shares, where it does not pass (the descent failed, which must show)."""
    return works_check(twin_works, f"prompts on which {twin}'s intact block 1 recovers more tokens than the random "
                       "start (chance)", UNTRAINED_INVERTS, key="S3.11/twin-block-1-beats-chance")


def residual_checks(e: ResidualEstimates, context: ResidualContext) -> list[Check]:
    """S3.11's two claim checks (the trained share under HALF, the twin's over), their convergence controls where
    a longer value is given, S3's own setting beside each (readings, on a CPU), the success-test control and the
    twin's block-1 control. Pure: the same estimates give the same checks.

    Args:
        e: the estimates (``residual_measures.measure_residual``, with ``continue_residual``'s where continued).
        context: the two models' names, ``Scale``'s words, whether S3's own setting is the headline, each one's N.
    Returns:
        the trained share, the twin's share, then the controls and readings.
    """
    model, twin = context.model, context.twin
    shares = [
        Check.of(f"share of {model}'s recovery above chance kept without the attention residual",
                 e.kept, "fraction", "<", HALF,
                 **catalogued("S3.11/trained-share", headline_reading=context.headline_reading)),
        Check.of(f"share of {twin}'s recovery above chance kept without the attention residual",
                 e.twin_kept, "fraction", ">", HALF,
                 **catalogued("S3.11/twin-share")),
    ]
    longer = [c for check, more, n, untrained in zip(shares, (e.kept_longer, e.twin_longer),
                                                     (context.steps, context.twin_steps), (False, True))
              if more is not None for c in convergence_checks(check, more, n, untrained)]
    return [
        *shares, *longer, *(source_setting_reading(s, own) for s, own in zip(shares, e.source_setting)),
        Check.of(f"fraction of {model}'s prompts passing S3's success test without the attention residual "
                 + ("(S3's setting)" if context.source else "(the setting that passes more)"),
                 e.success, "fraction of prompts", ">", MATCHED, role="control",
                 **catalogued("S3.11/success-test")),
        twin_works_check(e.twin_works, twin),
    ]
