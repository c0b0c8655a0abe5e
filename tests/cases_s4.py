"""S4's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s4_ffn.feedforward_checks import feedforward_checks
from claims.s4_ffn.feedforward_measures import FeedforwardEstimates
from claims.s4_ffn.ffn_path_checks import ffn_path_checks
from claims.s4_ffn.ffn_path_measures import FfnPathEstimates
from claims.s4_ffn.ffn_output_checks import ffn_output_checks
from claims.s4_ffn.ffn_output_measures import FfnOutputEstimates
from claims.s4_ffn.parameters_checks import parameters_checks
from claims.s4_ffn.parameters_measures import ParameterEstimates
from claims.s4_ffn.similar_strings_checks import approximation_checks, gain_checks, sibling_checks
from claims.s4_ffn.similar_strings_measures import ApproximationEstimates, GainEstimates, SiblingEstimates
from claims.s4_ffn.token_subspace_checks import subspace_checks, token_embedding_checks
from claims.s4_ffn.token_subspace_measures import SubspaceEstimates, TokenEmbeddingEstimates
from claims.s4_ffn.final_norm_checks import final_norm_checks
from claims.s4_ffn.final_norm_measures import FinalNormEstimates
from latent_instruments.stats import Estimate
from tests.check_cases import Case, estimate, per_unit

CASES = [
    Case("S4.9", token_embedding_checks, TokenEmbeddingEstimates(
        per_unit(0.999, 65), Estimate(1.0, 1.0, 1.0, 1.0, 65, "census"),
        per_unit(0.001, 8), continued=8, steps=2000)),
    Case("S4.10", subspace_checks, SubspaceEstimates(estimate(0.8, 0.05), [estimate(0.6), estimate(0.55)],
                                                     [estimate(0.4)])),
    Case("S4.6", approximation_checks, ApproximationEstimates(estimate(0.02), estimate(0.3, 0.02), estimate(0.03),
                                                              floor_sd=0.08)),
    Case("S4.7", sibling_checks, SiblingEstimates({"tiny-w96-seed88": estimate(0.05), "tiny-w96-seed99999":
                                                   estimate(0.06)})),
    Case("S4.8", gain_checks, GainEstimates(estimate(0.05), estimate(0.03))),
    Case("S4.1", parameters_checks, ParameterEstimates(Estimate(0.66, 0.66, 0.66, 1.0, 1),
                                                       Estimate(0.0, 0.0, 0.0, 1.0, 1))),
    Case("S4.2", feedforward_checks,
         FeedforwardEstimates([estimate(3.0), estimate(1.5)], estimate(0.4), estimate(0.05))),
    Case("S4.2", feedforward_checks, FeedforwardEstimates([estimate(3.0)], None, estimate(0.05)), label="one block"),
    Case("S4.3", ffn_output_checks, FfnOutputEstimates(
        ratios=[estimate(1.6), estimate(1.8)], cosines=[estimate(0.3), estimate(0.2)],
        excess=[estimate(0.25), estimate(0.15)], above_twin=estimate(0.1))),
    Case("S4.4", ffn_path_checks, FfnPathEstimates(
        ratio=estimate(0.7), cos=estimate(0.95), excess=estimate(0.8), input_cos=estimate(0.5),
        readout=per_unit(1e-5, 32))),
    Case("S4.4", ffn_path_checks, FfnPathEstimates(
        ratio=estimate(0.7), cos=estimate(0.95), excess=estimate(0.8), input_cos=estimate(0.5),
        readout=per_unit(1e-5, 32), below_siblings=estimate(-0.02), siblings=1),
         label="siblings"),
    Case("S4.5", final_norm_checks, FinalNormEstimates(
        within_source=estimate(0.3, 0.05), turned=estimate(0.02, 0.005), turned_excess=estimate(0.01, 0.002),
        worst_scale=Estimate(1e-5, 1e-5, 1e-5, 1.0, 60),
        examples=60, unnormalised=per_unit(9.0, 256), concentrated=estimate(0.01, 0.004))),
]
