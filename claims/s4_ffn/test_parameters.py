"""S4.1: feed-forward networks hold most trainable parameters.

S4 Appendix I counts, on its model, SOURCE_FFN "ffwd params out of" SOURCE_TOTAL
"total params" (SOURCE_SHARE; all three in the topic's home, ``parameters.toml``):
the parameters of every block's ``ffwd`` module (two linear layers with biases)
over all parameters, the untied output head included. That count is an architecture's, so it is checked on each model's
architecture in the zoo (random-init references included: initialisation
does not change a count), and S4's own model is rebuilt from its code on the
meta device (nothing allocated) to show the source's figure beside ours.
"""


import pytest

from claims.s4_ffn.parameters_measures import ParameterCount, ffn_modules, measure_parameters, s4_source_count
from claims.s4_ffn.parameters_checks import parameters_checks
from fixtures.catalogue_text import procedure


def _row(count: ParameterCount) -> dict:
    """A parameter-table row of a count."""
    return {"total": count.total, "FFN": count.ffn, "embeddings": count.embeddings, "head": count.head,
            "attention, norms": count.total - count.ffn - count.embeddings - count.head, "FFN share": count.ffn_share,
            "FFN share of blocks": count.ffn_share_of_blocks}


@pytest.mark.claim("S4.1", version=1)
@pytest.mark.models("trained", "hf", "reference")
def test_ffn_holds_most_parameters(model_name, subject, claim):
    """S4.1: the FFNs' share of all parameters exceeds one half, MOST (S4: SOURCE_SHARE)."""
    e, shown = measure_parameters(subject)
    claim.record(
        parameters_checks(e),
        procedure=procedure("S4.1/ffn-holds-most-parameters",
                            ffn_modules=(", ".join(
                                         ffn_modules(subject.adapter)))),
        details={"parameters": {
            model_name: _row(shown.count) | {"vocab": int(subject.model.get_input_embeddings().weight.shape[0]),
                                       "d_model": subject.d_model,
                                       "blocks": len(subject.adapter.block_list(subject.model)),
                                       "tied": int(shown.count.head == 0)},
            "S4 (its code, rebuilt)": _row(s4_source_count()) | {"vocab": 65, "d_model": 384, "blocks": 6, "tied": 0},
            "S4's shape as GPT-2": _row(shown.gpt2_count),
        }},
        beside_source={"FFN parameters / all parameters": shown.count.ffn_share},
    )
