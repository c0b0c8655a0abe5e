"""Self-tests of S4.1's parameter count: S4's figures from its architecture; the FFN modules of every adapter."""

import pytest
import torch

from claims.s4_ffn.parameters_measures import (
    SOURCE_FFN, SOURCE_TOTAL, count_parameters, s4_shape_as_gpt2, s4_source_count, s4_source_model,
)
from models.adapters import adapter_for
from tests.conftest import TINY_CONFIGS, tiny_model

# Parameter-name fragments of each architecture's FFN, read off its Hugging Face module names: an independent
# route to the count that count_parameters reaches through the adapter's module paths.
FFN_NAMES = {"opt": (".fc1.", ".fc2.")}


def test_s4_figures_from_its_architecture():
    """S4 Appendix I: 7,089,408 FFN parameters of 10,788,929, derived part by part from its code's layers."""
    d, vocab, context, blocks = 384, 65, 256, 6
    embeddings = vocab * d + context * d  # token + position tables
    ffn = (d * 4 * d + 4 * d) + (4 * d * d + d)  # two linears with biases
    attention = 3 * d * d + (d * d + d)  # bias-free key/query/value of 6 heads of 64, output projection with bias
    norms = 2 * 2 * d  # ln1, ln2: gain and bias
    head = d * vocab + vocab  # untied lm_head with bias
    assert blocks * ffn == SOURCE_FFN == 7_089_408
    assert embeddings + blocks * (ffn + attention + norms) + 2 * d + head == SOURCE_TOTAL == 10_788_929
    count = s4_source_count()
    assert (count.total, count.ffn, count.embeddings, count.head) == (SOURCE_TOTAL, SOURCE_FFN, embeddings, head)
    assert f"{SOURCE_FFN / SOURCE_TOTAL:.2%}" == "65.71%"


def test_the_source_model_is_built_on_meta():
    assert all(p.device.type == "meta" for p in s4_source_model().parameters())


def test_s4_shape_as_gpt2_differs_only_by_qkv_and_head_biases():
    model = s4_shape_as_gpt2()
    count = count_parameters(model, adapter_for(model))
    assert count.ffn == SOURCE_FFN
    assert count.total == SOURCE_TOTAL + 6 * 3 * 384 - 65 == 10_795_776
    assert count.embeddings == 65 * 384 + 256 * 384 and count.head == 65 * 384


@pytest.mark.parametrize("arch", sorted(TINY_CONFIGS))
def test_ffn_count_matches_the_ffn_parameter_names(arch):
    """count_parameters' FFN (adapter paths) equals the parameters named as the FFN's, for every architecture."""
    model = tiny_model(arch)
    fragments = FFN_NAMES.get(arch, (".mlp.",))
    named = sum(p.numel() for n, p in model.named_parameters() if any(f in n for f in fragments))
    count = count_parameters(model, adapter_for(model))
    assert count.ffn == named > 0
    assert count.total == sum(p.numel() for p in model.parameters())
    assert 0 < count.ffn_share < count.ffn_share_of_blocks < 1


def test_tied_embeddings_are_counted_once():
    model = tiny_model("gpt2")  # GPT-2 ties its head to the token embedding by default
    count = count_parameters(model, adapter_for(model))
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert count.head == 0
    assert count.total == sum({id(p): p.numel() for p in model.parameters()}.values())


def test_counting_allocates_nothing_on_meta():
    with torch.device("meta"):
        model = tiny_model("llama")
    assert count_parameters(model, adapter_for(model)).ffn == 2 * 3 * 32 * 64
