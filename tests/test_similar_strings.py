"""The string table, suffix matcher and similar-strings counts (S4.6-S4.8) against brute force."""

from collections import Counter, defaultdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from latent_instruments.similar_strings import combine, following, mass_tokens, normalised, similar_string_counts
from latent_instruments.strings import StringTable, SuffixMatcher, string_codes


@given(st.lists(st.integers(0, 6), min_size=8, max_size=60), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_the_table_holds_every_unique_string_with_what_follows_it(text, length):
    ids = np.array(text)
    table = StringTable.of(ids, length, 7)
    following = defaultdict(Counter)
    for i in range(len(text) - length + 1):
        key = tuple(text[i : i + length])
        following[key].update([text[i + length]] if i + length < len(text) else [])
    assert sorted(following) == [tuple(r) for r in table.strings.tolist()]  # unique, in lexicographic order
    for row, counts in zip(table.strings.tolist(), table.next_counts.tolist()):
        assert counts == [following[tuple(row)][t] for t in range(7)]


def test_codes_refuse_strings_that_do_not_pack():
    with pytest.raises(ValueError, match="do not pack into 64 bits"):
        string_codes(np.zeros((1, 10), dtype=np.int64), 4096)
    with pytest.raises(ValueError, match="outside"):
        string_codes(np.array([[0, 9]]), 5)


@given(st.lists(st.integers(0, 3), min_size=12, max_size=50), st.lists(st.integers(0, 3), min_size=4, max_size=4))
@settings(max_examples=60, deadline=None)
def test_the_suffix_matcher_uses_the_longest_suffix_seen(text, prompt):
    probs, used = SuffixMatcher(np.array(text), 4, 4).predict(np.array([prompt]))
    for k in range(4, 0, -1):
        nexts = [text[i + k] for i in range(len(text) - k) if text[i : i + k] == prompt[-k:]]
        if nexts:
            assert used.item() == k
            assert probs[0].tolist() == pytest.approx([nexts.count(t) / len(nexts) for t in range(4)])
            return
    assert used.item() == 0 and probs[0].tolist() == pytest.approx([0.25] * 4)


def test_similar_string_counts_equal_the_whole_similarity_matrix_thresholded():
    generator = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(5, 3, generator=generator), torch.randn(50, 3, generator=generator)
    keys = keys / keys.norm(dim=-1, keepdim=True)
    counts = torch.randint(0, 4, (50, 6), generator=generator).float()
    got = similar_string_counts(queries, keys.half(), counts, [0.2, 0.8], chunk=7)
    sims = (queries / queries.norm(dim=-1, keepdim=True)) @ keys.half().float().T
    for i, t in enumerate([0.2, 0.8]):
        assert torch.equal(got[i], ((sims > t).double() @ counts.double()))
    prepared = following(counts, 7, torch.device("cpu"))  # once per table, as S4.6 reads it in every block's pass
    assert torch.equal(similar_string_counts(queries, keys.half(), prepared, [0.2, 0.8]), got)
    with pytest.raises(ValueError, match="50 string directions but 49 rows"):
        similar_string_counts(queries, keys.half(), following(counts[:49], 7, torch.device("cpu")), [0.5])


def test_a_cosine_equal_to_the_threshold_in_float32_is_no_hit_and_one_just_above_is():
    # cosines 0.85 and 0.5 exactly as float32, then the next float32 up: S4's strict ">" at the float32 threshold (a
    # comparison in float64 would count float32(0.85) = 0.8500000238 as above 0.85)
    at = torch.tensor([0.85, 0.5], dtype=torch.float32)
    above = torch.nextafter(at, torch.ones(2))
    keys = torch.stack([torch.cat([c, torch.zeros(1)]) for c in (*at[:, None], *above[:, None])])  # (4, 2)
    following = torch.eye(4)  # string i is followed by token i
    got = similar_string_counts(torch.tensor([[1.0, 0.0]]), keys, following, [0.85, 0.5])
    assert got[0, 0].tolist() == [0, 0, 1, 0]  # above 0.85: only the string just above it
    assert got[1, 0].tolist() == [1, 0, 1, 1]


def test_similar_string_counts_name_bad_input():
    with pytest.raises(ValueError, match="share d"):
        similar_string_counts(torch.ones(2, 3), torch.ones(4, 2), torch.ones(4, 5), [0.5])
    with pytest.raises(ValueError, match="rows of next-token counts"):
        similar_string_counts(torch.ones(2, 3), torch.ones(4, 3), torch.ones(3, 5), [0.5])
    with pytest.raises(ValueError, match=r"in \(-1, 1\)"):
        similar_string_counts(torch.ones(2, 3), torch.ones(4, 3), torch.ones(4, 5), [1.0])


def test_blocks_combine_on_raw_counts_as_s4_does():
    counts = torch.tensor([[[1.0, 0.0]], [[0.0, 10.0]], [[0.0, 0.0]]])  # (blocks, batch, vocab)
    assert combine(counts, torch.tensor([1.0, 1.0, 5.0]))[0].tolist() == pytest.approx([1 / 11, 10 / 11])
    assert combine(counts[2:], torch.ones(1)).tolist() == [[0.5, 0.5]]  # nothing similar: uniform
    assert normalised(counts[0]).tolist() == [[1.0, 0.0]]
    with pytest.raises(ValueError, match="non-negative"):
        combine(counts, torch.tensor([1.0, -1.0, 1.0]))


def test_mass_tokens_are_the_fewest_that_exceed_the_mass():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.95, 0.05, 0.0, 0.0], [0.6, 0.25, 0.15, 0.0]])
    assert [t.tolist() for t in mass_tokens(probs, 0.9)] == [[0, 1, 2], [0], [0, 1, 2]]


def test_the_interpolated_back_off_mixes_every_suffix_length():
    """Witten-Bell over 1..3: a distribution everywhere; the continuation seen after the longest suffix dominates,
    the shorter contexts' continuations keep some mass, an unseen token keeps the uniform floor's."""
    from latent_instruments.strings import SuffixMatcher

    text = np.array([0, 1, 2, 3] * 50 + [5, 1, 2, 4] * 5, dtype=np.int64)  # after "1 2": 3 mostly, 4 sometimes
    matcher = SuffixMatcher(text, 3, vocab=7)
    orders = matcher.interpolated(np.array([[0, 1, 2], [6, 6, 6]]))
    assert sorted(orders) == [1, 2, 3]
    probs = orders[3]
    assert torch.allclose(probs.sum(1), torch.ones(2, dtype=torch.float64)) and bool((probs > 0).all())
    assert probs[0].argmax() == 3 and probs[0, 4] > probs[0, 6] > 0  # "0 1 2" is always followed by 3
    assert torch.allclose(probs[1], torch.full((7,), 1 / 7, dtype=torch.float64))  # 6 never occurs: uniform
