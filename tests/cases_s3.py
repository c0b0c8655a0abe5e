"""S3's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s3_inversion.attribution_checks import agreement_checks
from claims.s3_inversion.attribution_measures import AgreementEstimates
from claims.s3_inversion.bandwidth_checks import bandwidth_checks, crossing_checks
from claims.s3_inversion.bandwidth_measures import BandwidthContext, BandwidthEstimates, CrossingEstimates
from claims.s3_inversion.between_tokens_checks import masked_checks, wide_layer_checks
from claims.s3_inversion.between_tokens_measures import MaskedEstimates, WideLayerEstimates
from claims.s3_inversion.cosine_checks import cosine_checks, layer_norm_checks
from claims.s3_inversion.cosine_measures import CosineContext, CosineEstimates, LayerNormEstimates
from claims.s3_inversion.depth_checks import depth_checks
from claims.s3_inversion.depth_measures import DepthContext, DepthEstimates
from claims.s3_inversion.layers_checks import layers_checks
from claims.s3_inversion.layers_measures import LayersContext, LayersEstimates
from claims.s3_inversion.mixer_checks import pair_checks, works_checks
from claims.s3_inversion.mixer_measures import PairContext, PairEstimates, TwinsEstimates
from claims.s3_inversion.round_trip_checks import round_trip_checks
from claims.s3_inversion.round_trip_measures import RoundTripEstimates
from claims.s3_inversion.residual_checks import residual_checks
from claims.s3_inversion.residual_measures import ResidualContext, ResidualEstimates
from claims.s3_inversion.untrained_checks import gap_checks, recovery_checks
from claims.s3_inversion.untrained_measures import GapContext, GapEstimates, RecoveryContext, RecoveryEstimates
from claims.s3_inversion.vocabulary_checks import vocabulary_checks
from claims.s3_inversion.vocabulary_measures import VocabularyEstimates
from claims.s3_inversion.width_checks import width_checks
from claims.s3_inversion.width_measures import WidthEstimates
from tests.check_cases import Case, estimate, exact, per_unit


COSINE = {"context": CosineContext(long_tokens=12, control_setting="S3's setting", control_inputs=64, steps=200)}
DEPTH = {"context": DepthContext(last_block=6, headline_label="better setting", headline_reading="", deepest="source",
                                 steps=200)}
HEADLINE = {"headline_label": "better setting", "headline_reading": ""}
RESIDUAL = {"context": ResidualContext(model="tiny-w96", twin="tiny-w96:untrained", headline_reading="", source=False,
                                       steps=200, twin_steps=200)}
PAIR = {"transformer": "tiny-w96", "mixer": "tiny-mixer-w96", "steps": 200}


CASES = [
    Case("S3.14", layers_checks, LayersEstimates(estimate(0.1, 0.1), estimate(0.3, 0.05)),
         {"context": LayersContext(headline_reading="", steps=200)}),
    Case("S3.14", layers_checks, LayersEstimates(estimate(0.1, 0.1), estimate(0.3, 0.05), estimate(0.15, 0.1),
                                                 estimate(0.25, 0.05), estimate(0.2, 0.1)),
         {"context": LayersContext(headline_reading="", steps=200)}, label="continued"),
    Case("S3.9", masked_checks, MaskedEstimates(exact(0.05, 16, 0.05), exact(0.85, 16, 0.1)),
         {"twin": "tiny-w96:untrained", "steps": 200}),
    Case("S3.9", masked_checks, MaskedEstimates(exact(0.05, 16, 0.05), exact(0.85, 16, 0.1), exact(0.06, 16, 0.06),
                                                exact(0.07, 16, 0.05)),
         {"twin": "tiny-w96:untrained", "steps": 200}, label="continued"),
    Case("S3.9", wide_layer_checks, WideLayerEstimates(exact(0.6, 10, 0.3), exact(0.9, 10, 0.1), per_unit(0.3, 10)),
         {"widths": (256, 512), "seeds": 5}, label="wide layers"),
    Case("S3.10", crossing_checks, CrossingEstimates(per_unit(40.0), exact(0.9)), {"d_model": 96}),
    Case("S3.10", bandwidth_checks, BandwidthEstimates(estimate(0.8, 0.1), estimate(0.4, 0.05), exact(0.8),
                                                       per_unit(40.0)),
         {"context": BandwidthContext(k_star=40, d_model=96, steps=200)}, label="trained"),
    Case("S3.10", bandwidth_checks, BandwidthEstimates(estimate(0.8, 0.1), estimate(0.4, 0.05), exact(0.8),
                                                       per_unit(40.0), exact(0.9, 16, 0.05), estimate(0.75, 0.1),
                                                       per_unit(41.0)),
         {"context": BandwidthContext(k_star=40, d_model=96, steps=200)}, label="untrained, continued"),
    Case("S3.8", agreement_checks, AgreementEstimates(estimate(0.8, 0.05), estimate(0.1, 0.1))),
    Case("S3.5", width_checks, WidthEstimates(
        {(1337, 1): estimate(0.2), (1337, 2): estimate(0.15), (99, 1): estimate(0.25), (99, 2): estimate(0.1)},
        {1337: exact(0.8), 99: exact(0.85, 16, 0.12)}, {1337: [96, 128, 192], 99: [96, 192]}),
         {"headline_label": "better setting"}),
    Case("S3.1", round_trip_checks, RoundTripEstimates(per_unit(1.0), per_unit(0.0), 16, 5)),
    Case("S3.12", pair_checks, PairEstimates(exact(0.4, 16, 0.2), estimate(0.5, 0.1)),
         {"context": PairContext("trained", **PAIR)}),
    Case("S3.12", pair_checks, PairEstimates(exact(0.4, 16, 0.2), estimate(0.5, 0.1), exact(0.35, 16, 0.2),
                                             estimate(0.45, 0.1), exact(0.3, 16, 0.2)),
         {"context": PairContext("trained", **PAIR)}, label="continued"),
    Case("S3.12", pair_checks, PairEstimates(exact(0.4, 16, 0.2), estimate(0.5, 0.1)),
         {"context": PairContext("untrained twins", **PAIR)},
         label="untrained"),
    Case("S3.12", works_checks, TwinsEstimates([exact(0.8), exact(0.9, 16, 0.05)]),
         {"names": ["tiny-w96:untrained", "tiny-mixer-w96:untrained"]}, label="twins"),
    Case("S3.6", vocabulary_checks, VocabularyEstimates(estimate(0.5, 0.1), estimate(0.3, 0.1), estimate(0.2, 0.1),
                                                        estimate(0.6, 0.1)), {"steps": 200}),
    Case("S3.6", vocabulary_checks, VocabularyEstimates(estimate(0.5, 0.1), estimate(0.3, 0.1), estimate(0.2, 0.1),
                                                        estimate(0.6, 0.1), (estimate(0.45, 0.1), None,
                                                                             estimate(0.17, 0.1)),
                                                        estimate(0.65, 0.1),
                                                        (estimate(0.55, 0.1), estimate(0.35, 0.1),
                                                         estimate(0.25, 0.1))),
         {"steps": 200}, label="continued"),
    Case("S3.11", residual_checks, ResidualEstimates(estimate(0.1, 0.1), estimate(0.9, 0.1), exact(0.8),
                                                     exact(0.85, 16, 0.12)), RESIDUAL),
    Case("S3.11", residual_checks, ResidualEstimates(estimate(0.1, 0.1), estimate(0.9, 0.1), exact(0.8),
                                                     exact(0.85, 16, 0.12), estimate(0.15, 0.1), estimate(0.85, 0.1),
                                                     (estimate(0.2, 0.1), estimate(0.8, 0.1))),
         RESIDUAL, label="continued"),
    Case("S3.2", recovery_checks, RecoveryEstimates(exact(0.8), estimate(0.1), exact(0.85, 16, 0.12), exact(0.7)),
         {"context": RecoveryContext(**HEADLINE, best="source")}),
    Case("S3.3", gap_checks, GapEstimates(exact(0.5, 16, 0.2), estimate(0.3, 0.05), exact(0.8)),
         {"context": GapContext(**HEADLINE, best="source", steps=200)}),
    Case("S3.3", gap_checks, GapEstimates(exact(0.5, 16, 0.2), estimate(0.3, 0.05), exact(0.8), exact(0.45, 16, 0.2),
                                          estimate(0.25, 0.05), longer_success=exact(0.75),
                                          source_setting=(exact(0.4, 16, 0.2), estimate(0.2, 0.05))),
         {"context": GapContext(**HEADLINE, best="source", steps=200)}, label="continued"),
    Case("S3.7", cosine_checks, CosineEstimates(estimate(0.5, 0.1), exact(0.9, 64), per_unit(0.95)), COSINE),
    Case("S3.7", cosine_checks, CosineEstimates(estimate(0.5, 0.1), exact(0.9, 64), per_unit(0.95), estimate(0.45)),
         COSINE, label="continued"),
    Case("S3.13", layer_norm_checks, LayerNormEstimates(estimate(0.4), estimate(0.2), estimate(0.02, 0.005),
                                                        estimate(0.03, 0.005))),
    Case("S3.4", depth_checks, DepthEstimates(estimate(0.5, 0.1), exact(0.8), longer=estimate(0.4, 0.1),
                                              longer_success=exact(0.75), source_setting=estimate(0.3, 0.1)), DEPTH,
         label="trained"),
    Case("S3.4", depth_checks, DepthEstimates(estimate(0.5, 0.1), exact(0.8), first_works=exact(0.85)), DEPTH,
         label="untrained"),
]
