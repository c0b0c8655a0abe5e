"""Self-tests of latent_instruments.normalization: LayerNorm and RMSNorm remove scale (S4.5)."""

import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from torch import nn

from latent_instruments.normalization import (
    gain_unevenness, relative_norm_change, rotate_to_cosine, with_even_gain, without_bias,
)

scales = st.floats(min_value=0.5, max_value=1e4)
cosines = st.floats(min_value=-1.0, max_value=1.0)
seeds = st.integers(0, 10_000)


def affine_layernorm(d_model: int, seed: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d_model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.3 * torch.randn(d_model, generator=g))
        norm.bias.copy_(0.1 * torch.randn(d_model, generator=g))
    return norm


@given(scale=scales, seed=seeds)
@example(scale=10.0, seed=0)  # S4 Appendix III
@settings(max_examples=40, deadline=None)
@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_scaling_the_input_keeps_the_output_norm(kind, scale, seed):
    norm = affine_layernorm(64, seed) if kind == "layernorm" else nn.RMSNorm(64)
    x = 3 * torch.randn(16, 64, generator=torch.Generator().manual_seed(seed))
    assert relative_norm_change(norm, x, x * scale).max().item() < 1e-4


@given(cosine=cosines, seed=seeds)
@settings(max_examples=40, deadline=None)
def test_unit_affine_layernorm_keeps_norm_in_every_direction(cosine, seed):
    norm, g = nn.LayerNorm(64, elementwise_affine=False), torch.Generator().manual_seed(seed)
    x = torch.randn(8, 64, generator=g) * 5
    assert relative_norm_change(norm, x, rotate_to_cosine(x, cosine, g) * 10).max().item() < 1e-3


@given(cosine=cosines, seed=seeds)
@settings(max_examples=40, deadline=None)
def test_rotation_reaches_the_asked_cosine_and_keeps_the_norm(cosine, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 32, generator=g, dtype=torch.float64)
    turned = rotate_to_cosine(x, cosine, g)
    assert torch.allclose(torch.cosine_similarity(x, turned, dim=-1), torch.full((8,), cosine, dtype=torch.float64),
                          atol=1e-9)
    assert torch.allclose(turned.norm(dim=-1), x.norm(dim=-1))


def test_identity_does_see_scale():
    x = torch.randn(4, 8)
    assert relative_norm_change(nn.Identity(), x, 10 * x).mean().item() == pytest.approx(9.0, rel=1e-5)


def test_gain_unevenness_is_zero_for_an_even_gain_and_grows_with_spread():
    even, uneven = nn.LayerNorm(64), affine_layernorm(64, 0)
    assert gain_unevenness(even) == 0.0
    assert gain_unevenness(nn.LayerNorm(64, elementwise_affine=False)) == 0.0
    with torch.no_grad():
        even.weight.fill_(3.0)
    assert gain_unevenness(even) == pytest.approx(0.0, abs=1e-12)  # one common gain is not uneven
    g = uneven.weight.detach().double().square()
    assert gain_unevenness(uneven) == pytest.approx(float(g.std(unbiased=False) / g.mean()))
    assert gain_unevenness(uneven) > 0.1


@given(cosine=cosines, seed=seeds)
@settings(max_examples=30, deadline=None)
def test_an_evened_gain_without_bias_keeps_the_norm_in_every_direction(cosine, seed):
    """With the gain evened and the bias removed, a LayerNorm's output norm no longer depends on direction."""
    norm, g = affine_layernorm(64, seed), torch.Generator().manual_seed(seed)
    x = torch.randn(8, 64, generator=g) * 5
    plain = without_bias(with_even_gain(norm))
    assert relative_norm_change(plain, x, rotate_to_cosine(x, cosine, g) * 10).max().item() < 1e-4


def test_evening_the_gain_keeps_its_rms_and_the_bias():
    norm = affine_layernorm(32, 1)
    evened = with_even_gain(norm)
    assert torch.allclose(evened.weight.square().mean(), norm.weight.square().mean())
    assert torch.equal(evened.bias, norm.bias) and gain_unevenness(evened) < 1e-6
    assert not torch.equal(norm.weight, evened.weight)  # a copy: the original is untouched
    assert torch.equal(without_bias(norm).bias, torch.zeros(32)) and norm.bias.abs().sum() > 0


def test_an_uneven_gain_makes_the_output_norm_depend_on_direction():
    norm, g = affine_layernorm(64, 2), torch.Generator().manual_seed(2)
    with torch.no_grad():
        norm.bias.zero_()
    x = torch.randn(64, 64, generator=g) * 5
    turned = rotate_to_cosine(x, 0.52, g)
    assert relative_norm_change(norm, x, turned).mean().item() > 1e-2
    assert relative_norm_change(with_even_gain(norm), x, turned).max().item() < 1e-4


def test_a_norm_without_gain_cannot_be_evened():
    with pytest.raises(ValueError, match="no gain"):
        with_even_gain(nn.LayerNorm(8, elementwise_affine=False))
