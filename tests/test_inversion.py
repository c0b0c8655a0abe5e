"""Self-tests of latent_instruments.inversion on maps of known answer.

The pseudo-inverse against torch's, decoding (top-k order, −inf masking), S3's defaults (start, schedule,
shift), every variant (indirect and direct, four losses, plain and normalised steps, output subsets),
the batch equal to the prompt-by-prompt loop, and the earlier API kept for S3.5.
"""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from latent_instruments.inversion import InversionConfig, descend, invert, per_prompt_loss
from latent_instruments.decoding import decode_top_k, pseudo_inverse, pseudo_inverse_decode


def embedding_matrix(vocab: int, d_model: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(vocab, d_model, generator=torch.Generator().manual_seed(seed))


def token_ids(batch: int, seq: int, vocab: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def invertible_layer(d_model: int):
    """Monotone per coordinate, then a rotation: a map with one exact inverse."""
    q, _ = torch.linalg.qr(torch.randn(d_model, d_model, generator=torch.Generator().manual_seed(1)))
    return lambda e: (torch.tanh(e) + 0.5 * e) @ q


# --- pseudo-inverse and decoding ---------------------------------------------------------------------------


@given(vocab=st.integers(2, 60), d_model=st.integers(2, 24), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_pseudo_inverse_scores_equal_torchs_pinv(vocab, d_model, seed):
    weight = embedding_matrix(vocab, d_model, seed).double()
    x = torch.randn(3, d_model, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    want = x @ torch.linalg.pinv(weight)
    torch.testing.assert_close(pseudo_inverse(weight).scores(x), want, rtol=1e-8, atol=1e-8 * want.abs().max())


@given(vocab=st.integers(2, 40), extra=st.integers(0, 24), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_pseudo_inverse_recovers_tokens_when_d_model_covers_vocab(vocab, extra, seed):
    weight = embedding_matrix(vocab, vocab + extra, seed)
    ids = torch.randint(0, vocab, (3, 7), generator=torch.Generator().manual_seed(seed))
    assert torch.equal(pseudo_inverse_decode(weight[ids], weight), ids)


def test_round_trip_holds_for_random_rows_where_vocab_far_exceeds_d_model():
    """S3.1's setting in small: 2000 random rows in 64 dimensions, each row still decodes to itself."""
    weight = embedding_matrix(2000, 64)
    ids = token_ids(4, 50, 2000)
    assert torch.equal(pseudo_inverse_decode(weight[ids], weight), ids)


def test_restricted_vocabulary_masks_with_minus_infinity():
    weight = torch.eye(4)
    embeddings = torch.tensor([[[-1.0, -2.0, -3.0, 5.0]]])  # token 3 wins unrestricted
    allowed = torch.tensor([True, True, False, False])
    assert pseudo_inverse_decode(embeddings, weight).item() == 3
    assert pseudo_inverse_decode(embeddings, weight, allowed).item() == 0  # -1 beats -2; a 0-mask would pick 2


def test_top_k_is_best_first_and_per_prompt_masks_apply_to_their_prompt():
    scores = torch.tensor([[[0.1, 0.9, 0.5, 0.3]], [[0.1, 0.9, 0.5, 0.3]]])  # (2, 1, 4)
    assert decode_top_k(scores, 3)[0, 0].tolist() == [1, 2, 3]
    allowed = torch.tensor([[True, True, True, True], [True, False, False, True]])
    assert decode_top_k(scores, 2, allowed)[:, 0].tolist() == [[1, 2], [3, 0]]


# --- S3's defaults ---------------------------------------------------------------------------------------


def test_defaults_are_the_sources():
    config = InversionConfig()
    assert (config.representation, config.loss, config.step) == ("indirect", "l1", "plain")
    assert (config.lr, config.lr_end, config.start_mean, config.start_std, config.shift_std) == (1, 0.01, 0.5, 0.05, 0.05)
    assert config.deviations() == []
    assert InversionConfig(step="normalised", lr=0.1, step_scale=0.72).deviations() == [
        "step normalised (S3: plain)", "initial η 0.1 (S3: 1.0)", "step unit 0.72"]


def test_learning_rate_decays_linearly_from_lr_to_lr_end():
    config = InversionConfig(steps=100)
    rates = [config.rate(i) for i in range(101)]
    assert rates[0] == 1.0 and rates[100] == pytest.approx(0.01)
    steps = [a - b for a, b in zip(rates, rates[1:])]
    assert max(steps) == pytest.approx(min(steps))


def test_the_random_start_is_n_half_one_twentieth():
    weight = embedding_matrix(12, 64)
    result = invert(lambda e: e, token_ids(8, 16, 12), weight, torch.Generator().manual_seed(0), InversionConfig(steps=0))
    assert result.inputs.mean().item() == pytest.approx(0.5, abs=0.005)
    assert result.inputs.std().item() == pytest.approx(0.05, rel=0.05)


def test_the_shift_is_one_twentieth_per_element():
    """With an identity layer ‖O(a′) − O(a)‖₁ = Σ|σ·noise| ≈ σ·√(2/π) per element."""
    weight = embedding_matrix(12, 64)
    result = invert(lambda e: e, token_ids(8, 16, 12), weight, torch.Generator().manual_seed(0), InversionConfig(steps=0))
    assert (result.shifted_distance / (16 * 64)).mean().item() == pytest.approx(0.05 * math.sqrt(2 / math.pi), rel=0.03)


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="loss must be one of"):
        InversionConfig(loss="huber")
    with pytest.raises(ValueError, match="representation"):
        InversionConfig(representation="sideways")
    with pytest.raises(ValueError, match="exceeds"):
        invert(lambda e: e, token_ids(2, 3, 4), embedding_matrix(4, 8), torch.Generator(), k=3,
               allowed=torch.tensor([True, True, False, False]))


# --- the optimisation --------------------------------------------------------------------------------------


@pytest.mark.parametrize("representation", ["indirect", "direct"])
@pytest.mark.parametrize("loss", ["l1", "l2", "cosine", "mixed"])
def test_every_variant_inverts_an_invertible_map(representation, loss):
    d_model, vocab = 16, 12
    weight = embedding_matrix(vocab, d_model)
    ids = token_ids(4, 6, vocab)
    result = invert(invertible_layer(d_model), ids, weight, torch.Generator().manual_seed(3),
                    InversionConfig(representation=representation, loss=loss, steps=300))
    assert torch.equal(result.decoded, ids)
    assert result.token_accuracy.tolist() == [1.0] * 4 and result.exact_match.all()


def test_the_source_setting_passes_its_success_test_on_an_invertible_map():
    weight = embedding_matrix(12, 16)
    result = invert(invertible_layer(16), token_ids(4, 6, 12), weight, torch.Generator().manual_seed(3),
                    InversionConfig(steps=300))
    assert result.success.all()
    assert (result.output_distance < result.shifted_distance).all()


def test_a_map_that_forgets_its_input_cannot_be_inverted():
    weight = embedding_matrix(12, 16)
    ids = token_ids(4, 6, 12)
    result = invert(lambda e: e[..., :1] * 0, ids, weight, torch.Generator().manual_seed(3), InversionConfig(steps=20))
    assert result.token_accuracy.mean() < 0.5 and not result.exact_match.any()


def test_the_batch_is_the_prompt_by_prompt_loop():
    """Prompts do not interact: one optimisation of the batch gives each prompt's own (start fixed: σ = 0)."""
    weight = embedding_matrix(12, 16)
    target = weight[token_ids(5, 6, 12)]
    config = InversionConfig(steps=50, start_std=0.0, shift_std=0.0)
    layer = invertible_layer(16)
    batched = descend(layer, target, config, torch.Generator())[0]
    looped = torch.cat([descend(layer, target[b:b + 1], config, torch.Generator())[0] for b in range(5)])
    torch.testing.assert_close(batched, looped, rtol=1e-5, atol=1e-6)


def test_the_descent_gives_the_same_bits_whatever_the_process_thread_count():
    """A serial run (2 threads here) and a pytest-xdist worker (1) must not sum in other orders: the descent pins its
    own thread count, and gives the process's count back."""
    import latent_instruments.inversion as inversion

    weight = embedding_matrix(64, 96)
    target = weight[token_ids(16, 24, 64)]
    invertible = invertible_layer(96)
    seen = []  # the thread count the layer ran under, at every call

    def layer(embeddings):
        seen.append(torch.get_num_threads())
        return invertible(embeddings)

    before = torch.get_num_threads()
    found = []
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            found.append(descend(layer, target, InversionConfig(steps=30), torch.Generator().manual_seed(0))[0])
            assert torch.get_num_threads() == threads  # restored
    finally:
        torch.set_num_threads(before)
    assert set(seen) == {inversion.DESCENT_THREADS} == {1}  # whatever the process's count
    assert torch.equal(found[0], found[1])


def test_the_normalised_step_moves_each_position_by_lr_times_scale():
    target = embedding_matrix(12, 16)[token_ids(2, 3, 12)]
    config = InversionConfig(steps=1, lr=0.3, lr_end=0.3, start_std=0.0, step="normalised", step_scale=2.0)
    found = descend(lambda e: e @ torch.diag(torch.arange(1.0, 17.0)), target, config, torch.Generator())[0]
    torch.testing.assert_close((found - 0.5).norm(dim=-1), torch.full((2, 3), 0.6))


def test_only_the_selected_output_positions_and_features_are_targets():
    """Identity layer, target positions 1: and features :8: position 0 and features 8: never move from the start."""
    weight = embedding_matrix(12, 16)
    target = weight[token_ids(2, 4, 12)]
    config = InversionConfig(steps=100, start_std=0.0)
    found = descend(lambda e: e, target, config, torch.Generator(), positions=slice(1, None), features=slice(0, 8))[0]
    assert torch.equal(found[:, 0], torch.full((2, 16), 0.5)) and torch.equal(found[..., 8:], torch.full((2, 4, 8), 0.5))
    torch.testing.assert_close(found[:, 1:, :8], target[:, 1:, :8], atol=0.02, rtol=0)


def test_losses_have_their_known_values():
    out, target = torch.tensor([[3.0, 4.0]]), torch.tensor([[0.0, 0.0]])
    assert per_prompt_loss(out, target, InversionConfig(loss="l1")).item() == 7.0
    assert per_prompt_loss(out, target, InversionConfig(loss="l2")).item() == pytest.approx(5.0)
    assert per_prompt_loss(out, 2 * out, InversionConfig(loss="cosine")).item() == pytest.approx(0.0, abs=1e-7)
    mixed = InversionConfig(loss="mixed", mix=(2.0, 0.5))
    assert per_prompt_loss(out, -out, mixed).item() == pytest.approx(2.0 * 2.0 + 0.5 * 14.0)


def test_a_seeded_generator_gives_the_same_inversion():
    weight = embedding_matrix(12, 16)
    ids = token_ids(3, 5, 12)
    a, b = (invert(invertible_layer(16), ids, weight, torch.Generator().manual_seed(7), InversionConfig(steps=20))
            for _ in range(2))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.shifted_distance, b.shifted_distance)


def test_descents_side_by_side_give_the_numbers_of_one_by_one_in_order_and_leave_the_model_as_it_was():
    """S3's descents run two at a time (``models.forwards.side_by_side``: ``Inversions.runs_of``, S3.7, S3.10, S3.13):
    two blocks and two settings on one model give exactly what one-by-one runs give, in the jobs' order (each forward
    pass's hooks act for its own thread, every hook removed after); the model's gradient flags come back as they were;
    a job's error reaches the caller."""
    from functools import partial

    from transformers import GPT2Config, GPT2LMHeadModel

    from models.adapters import adapter_for
    from models.forwards import block_output_fn, frozen, side_by_side

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=30, n_positions=8, n_embd=16, n_layer=2, n_head=2)).eval()
    weight = model.get_input_embeddings().weight.detach()
    ids = torch.randint(0, 30, (4, 6), generator=torch.Generator().manual_seed(1))

    def descend(block: int, lr: float) -> torch.Tensor:
        with frozen(model):  # as the claims' jobs do: a no-op inside side_by_side's own
            layer = block_output_fn(model, adapter_for(model), block, ids.shape[1])
            return invert(layer, ids, weight, torch.Generator().manual_seed(2), InversionConfig(steps=30, lr=lr),
                          k=1).inputs

    jobs = [partial(descend, block, lr) for block in (0, 1) for lr in (1.0, 0.5)]
    with frozen(model):
        one_by_one = [job() for job in jobs]
    assert all(p.requires_grad for p in model.parameters())
    together = side_by_side(model, jobs)
    assert all(torch.equal(a, b) for a, b in zip(one_by_one, together, strict=True))
    assert not torch.equal(together[0], together[1])  # the order is the jobs' (they differ)
    assert all(p.requires_grad for p in model.parameters())
    assert all(not m._forward_hooks for m in model.modules())  # every hook placed was removed

    def fails():
        raise ValueError("a descent went wrong")

    with pytest.raises(ValueError, match="a descent went wrong"):
        side_by_side(model, [jobs[0], fails])
    assert all(p.requires_grad for p in model.parameters())


def test_forward_passes_through_one_model_in_two_threads_stop_and_record_each_for_its_own_thread():
    """Side by side, with no lock: one thread's passes stop after block 1, the other's after block 2 recording block 1
    on the way, hundreds of times each through the same modules; each gets exactly its one-thread outputs, a pass
    through a module another thread stops at is not stopped there, and no hook is left after, or after a pass alone."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from models.adapters import adapter_for
    from models.forwards import block_output_fn, blocks_output_fn, side_by_side

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=30, n_positions=8, n_embd=16, n_layer=3, n_head=2)).eval()
    adapter, x = adapter_for(model), torch.randn(2, 6, 16)
    first, both = block_output_fn(model, adapter, 0, 6), blocks_output_fn(model, adapter, [0, 1], 6)
    with torch.no_grad():
        alone = [first(x), both(x)]
        assert not any(m._forward_hooks for m in model.modules())  # a pass outside side_by_side removes its hooks
        assert torch.equal(both(x)[..., :16], alone[0]) and not torch.equal(both(x)[..., 16:], alone[0])
        together = side_by_side(model, [lambda: [first(x) for _ in range(300)], lambda: [both(x) for _ in range(300)]])
    assert all(torch.equal(out, alone[0]) for out in together[0])
    assert all(torch.equal(out, alone[1]) for out in together[1])
    assert not any(m._forward_hooks for m in model.modules())


def test_a_continued_descent_starts_where_the_first_ended_and_keeps_its_shift_noise():
    """S3's convergence controls continue a descent from its found input (``start``): zero further steps give back the
    same input and the same shifted distance (the random start is drawn all the same), more steps lower the loss, and
    a start of another shape is refused."""
    weight = embedding_matrix(12, 16)
    ids = token_ids(4, 6, 12)
    layer = lambda e: torch.tanh(e @ weight.T[:, :6] @ weight[:6])  # noqa: E731 - hard to invert at once
    first = invert(layer, ids, weight, torch.Generator().manual_seed(3), InversionConfig(steps=5))
    same = invert(layer, ids, weight, torch.Generator().manual_seed(3), InversionConfig(steps=0), start=first.inputs)
    torch.testing.assert_close(same.inputs, first.inputs)
    torch.testing.assert_close(same.shifted_distance, first.shifted_distance)
    more = invert(layer, ids, weight, torch.Generator().manual_seed(3), InversionConfig(steps=40), start=first.inputs)
    assert more.loss.sum() < first.loss.sum()
    with pytest.raises(ValueError, match="start must have the input's shape"):
        invert(layer, ids, weight, torch.Generator().manual_seed(3), InversionConfig(steps=1), start=first.inputs[:1])
