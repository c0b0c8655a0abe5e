"""S4.1: feed-forward networks hold most trainable parameters.

S4 Appendix I counts, on its model, "7,089,408 ffwd params out of 10,788,929
total params (65.71%)": the parameters of every block's ``ffwd`` module
(two linear layers with biases) over all parameters, the untied output head
included. That count is an architecture's, so it is checked on each model's
architecture in the zoo (random-init references included: initialisation
does not change a count), and S4's own model is rebuilt from its code on the
meta device (nothing allocated) to show the source's figure beside ours.
"""


import pytest

from claims.s4_ffn.parameters_checks import SOURCE_FFN, ParameterEstimates, parameters_checks
from fixtures.catalogue_text import procedure
from latent_instruments.stats import Estimate
from models.adapters import adapter_for
from claims.s4_ffn.parameter_counts import (
    ParameterCount, count_parameters, ffn_modules, s4_shape_as_gpt2, s4_source_count,
)


def _row(count: ParameterCount) -> dict:
    """A parameter-table row of a count."""
    return {"total": count.total, "FFN": count.ffn, "embeddings": count.embeddings, "head": count.head,
            "attention, norms": count.total - count.ffn - count.embeddings - count.head, "FFN share": count.ffn_share,
            "FFN share of blocks": count.ffn_share_of_blocks}


def _exact(value: float) -> Estimate:
    return Estimate(value, value, value, 1.0, 1)


@pytest.mark.claim("S4.1", version=1)
@pytest.mark.models("trained", "hf", "reference")
def test_ffn_holds_most_parameters(model_name, subject, claim):
    """S4.1: the FFNs' share of all parameters exceeds one half (S4: 65.71 %)."""
    count = count_parameters(subject.model, subject.adapter)
    source = s4_source_count()
    gpt2 = s4_shape_as_gpt2()
    gpt2_count = count_parameters(gpt2, adapter_for(gpt2))
    claim.record(
        parameters_checks(ParameterEstimates(_exact(count.ffn_share), _exact(abs(gpt2_count.ffn - SOURCE_FFN)))),
        procedure=procedure("S4.1/ffn-holds-most-parameters",
                            ffn_modules=(", ".join(
                                         ffn_modules(subject.adapter)))),
        details={"parameters": {
            model_name: _row(count) | {"vocab": int(subject.model.get_input_embeddings().weight.shape[0]),
                                       "d_model": subject.d_model,
                                       "blocks": len(subject.adapter.block_list(subject.model)),
                                       "tied": int(count.head == 0)},
            "S4 (its code, rebuilt)": _row(source) | {"vocab": 65, "d_model": 384, "blocks": 6, "tied": 0},
            "S4's shape as GPT-2": _row(gpt2_count),
        }},
        beside_source={"FFN parameters / all parameters": count.ffn_share},
    )
