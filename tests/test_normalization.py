"""Self-tests of latent_instruments.normalization: LayerNorm and RMSNorm remove scale (S4.5)."""

import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from torch import nn

from latent_instruments.normalization import relative_norm_change, rotate_to_cosine

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
    assert torch.allclose(torch.cosine_similarity(x, turned, dim=-1), torch.full((8,), cosine, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(turned.norm(dim=-1), x.norm(dim=-1))


def test_identity_does_see_scale():
    x = torch.randn(4, 8)
    assert relative_norm_change(nn.Identity(), x, 10 * x).mean().item() == pytest.approx(9.0, rel=1e-5)
