"""S3.9's checks as pure functions of their estimates: ``between_tokens_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check. The numbers they decide
with (RAREST, read off S3's two rates; HALF; SOME) are in the topic's home, ``between_tokens.toml``.
"""

from claims.s3_inversion.between_tokens_measures import MaskedEstimates, WideLayerEstimates
from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.scope import SMALL_TRAINED, UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued, gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from reports.checks import Check

# S3's rarest identifying rate (untrained 4096-wide layers, "perhaps 1/5ths"), 'most', and the wide layers' floor
RAREST, HALF, SOME = numbers(__file__, "RAREST", "HALF", "SOME")


def twin_works_check(twin_works: Estimate, twin: str) -> Check:
    """The control that the same descent gives back most of the untrained twin's unmasked tokens."""
    return works_check(twin_works, f"prompts of {twin} whose unmasked tokens mostly come back (> {HALF})",
                       UNTRAINED_INVERTS, key="S3.9/twin-unmasked-tokens-come-back")


def masked_checks(e: MaskedEstimates, twin: str, steps: int) -> list[Check]:
    """S3.9's claim check (the masked token rarely comes back), the twin's control, and the convergence control
    where ``longer`` is given; ``steps``: N."""
    masked = Check.of("fraction of prompts whose masked first token is recovered (restricted vocabulary)", e.masked,
                      "fraction of prompts", "<", RAREST,
                      **catalogued("S3.9/masked-recovered"))
    return [masked, twin_works_check(e.twin_works, twin),
            *([] if e.longer is None else convergence_checks(masked, e.longer, steps)),
            *([] if e.source_setting is None else [source_setting_reading(masked, e.source_setting)])]


def masked_gate(e: MaskedEstimates, twin: str) -> str:
    """Why S3.9 says nothing on a trained model, or "" where its checks decide: the inversion does not give back
    most of the model's unmasked tokens (``e.unmasked``'s low end not above HALF) while the twin's control passes,
    so a missed masked token would say nothing about the information between positions (S3 on small trained
    models: ``scope.SMALL_TRAINED``). Where the twin's control does not pass, the record says so instead.

    Raises:
        AttributeError: where ``e.unmasked`` is None (estimates not measured by ``measure_masked``).
    """
    twin_works = twin_works_check(e.twin_works, twin)
    if e.unmasked.low <= HALF and twin_works.passed:
        return gate("S3.9/later-positions-do-not-identify-a-masked-token/unmasked-not-recovered",
                    value=e.unmasked.value, low=e.unmasked.low, high=e.unmasked.high, twin=twin_works.value,
                    SMALL_TRAINED=SMALL_TRAINED)
    return ""


def wide_layer_checks(e: WideLayerEstimates, widths: tuple[int, int], seeds: int) -> list[Check]:
    """S3.9's untrained claim checks (wider finds more; most wide layers find it) and the unmasked-token control."""
    return [
        Check.of(f"fraction of initialisations finding the masked token, width {widths[1]} minus {widths[0]}",
                 e.wider_more, "fraction of initialisations", ">", 0.0,
                 **catalogued("S3.9/wider-finds-more")),
        Check.of(f"fraction of width-{widths[1]} initialisations finding the masked token", e.wider,
                 "fraction of initialisations", ">", HALF,
                 **catalogued("S3.9/wider-finds-most")),
        Check.of(f"least token accuracy at the unmasked positions over the width-{widths[1]} initialisations",
                 e.unmasked, "fraction of tokens", ">", SOME, role="control",
                 **catalogued("S3.9/wide-unmasked-control", seeds=seeds)),
    ]
