"""Self-tests of latent_instruments.inversion: pseudo-inverse decoding and gradient-descent inversion."""

import torch
from hypothesis import given, settings, strategies as st

from latent_instruments.inversion import invert_by_gradient_descent, pseudo_inverse_decode


def embedding_matrix(vocab: int, d_model: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(vocab, d_model, generator=torch.Generator().manual_seed(seed))


@given(vocab=st.integers(2, 40), extra=st.integers(0, 24), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_pseudo_inverse_recovers_tokens_when_d_model_covers_vocab(vocab, extra, seed):
    weight = embedding_matrix(vocab, vocab + extra, seed)
    ids = torch.randint(0, vocab, (3, 7), generator=torch.Generator().manual_seed(seed))
    assert torch.equal(pseudo_inverse_decode(weight[ids], weight), ids)


def test_restricted_vocabulary_masks_with_minus_infinity():
    weight = torch.eye(4)
    embeddings = torch.tensor([[[-1.0, -2.0, -3.0, 5.0]]])  # token 3 wins unrestricted
    allowed = torch.tensor([True, True, False, False])
    assert pseudo_inverse_decode(embeddings, weight).item() == 3
    assert pseudo_inverse_decode(embeddings, weight, allowed).item() == 0  # -1 beats -2; a 0-mask would pick 2


def test_gradient_descent_inverts_an_invertible_toy_map():
    d_model, vocab = 16, 12
    weight = embedding_matrix(vocab, d_model)
    q, _ = torch.linalg.qr(torch.randn(d_model, d_model, generator=torch.Generator().manual_seed(1)))
    layer = lambda e: (torch.tanh(e) + 0.5 * e) @ q  # monotone per coordinate, then a rotation  # noqa: E731
    ids = torch.randint(0, vocab, (4, 6), generator=torch.Generator().manual_seed(2))
    result = invert_by_gradient_descent(layer, weight[ids], embedding_scale=weight.norm(dim=1).mean().item(),
                                        steps=400, lr=0.1, generator=torch.Generator().manual_seed(3))
    assert torch.equal(pseudo_inverse_decode(result.embeddings, weight), ids)
    assert result.closer_than_shift.all()


def test_a_map_that_forgets_its_input_cannot_be_inverted():
    weight = embedding_matrix(12, 16)
    ids = torch.randint(0, 12, (4, 6), generator=torch.Generator().manual_seed(2))
    result = invert_by_gradient_descent(lambda e: e[..., :1] * 0, weight[ids], 1.0, steps=20, lr=0.1,
                                        generator=torch.Generator().manual_seed(3))
    assert (pseudo_inverse_decode(result.embeddings, weight) == ids).float().mean() < 0.5
