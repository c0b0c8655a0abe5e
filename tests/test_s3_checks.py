"""S3's checks, gates and controls fail on inputs built to fail them (S3.5, S3.7, S3.8, S3.9, S3.10, S3.13).

Each test builds the statistic a claim test computes, from a known case, and decides it with the claim's own checks
function (``claims/s3_inversion/*_checks.py``, through its case in ``tests/cases_s3.py``), the check picked by its key:
a flipped comparator or a moved threshold there turns these red.
"""

from dataclasses import replace
from functools import partial

import numpy as np
import pytest
import torch

from claims.s3_inversion.bandwidth_checks import below_width_check
from claims.s3_inversion.bandwidth_measures import crossing, crossing_fraction, longer_crossing
from claims.s3_inversion.between_tokens_checks import RAREST
from claims.s3_inversion.cosine_checks import RECOVERS
from claims.s3_inversion.cosine_measures import SUCCEEDS, reached_over_start
from claims.s3_inversion.vocabulary_measures import accuracy_difference
from latent_instruments.inversion import DIRECT_TARGET, InversionConfig, invert
from latent_instruments.decoding import decode_top_k, direct_fit_decode, pseudo_inverse, zero_masked_decode
from latent_instruments.stats import MIN_BOOTSTRAP_UNITS, Estimate, bootstrap, per_unit, proportion
from reports.checks import Check
from tests.cases_s3 import CASES
from tests.check_cases import check_of


def _mean(u: np.ndarray) -> float:
    return float(u.mean())


claim_check = partial(check_of, CASES)  # the claim's own check of a key (tests/check_cases.py)


ORDERING = "S3.7/ordering"  # cosine_checks' claim check
INDIRECT = "S3.7/indirect-control"  # its controls
L2_DESCENT = "S3.7/l2-descent-control"
MASKED = "S3.9/masked-recovered"  # masked_checks' claim check
FRACTION_OF_WIDTH = "S3.10/fraction-of-width"  # bandwidth_checks' reading
TOKEN_GAP = "S3.3/token-gap"  # gap_checks' claim checks
EXACT_GAP = "S3.3/exact-gap"


def _start(batch: int, seq: int, vocab: int) -> torch.Tensor:
    """S3's start a₀ ~ N(½, 1/20²) over the vocabulary, (batch, seq, vocab)."""
    return 0.5 + 0.05 * torch.randn(batch, seq, vocab, generator=torch.Generator().manual_seed(3))


# --- S3.7: the identifiability gate and the L2 descent control ---------------------------------------------


def test_an_exact_fit_decodes_every_token_where_the_width_covers_the_vocabulary():
    weight = torch.randn(84, 96, generator=torch.Generator().manual_seed(0))  # a char model's shape
    ids = torch.randint(0, 84, (8, 12), generator=torch.Generator().manual_seed(1))
    decoded = direct_fit_decode(ids, _start(8, 12, 84), pseudo_inverse(weight), DIRECT_TARGET)
    assert bool((decoded == ids).all())


def _exact_fit(vocab: int, width: int, target: float):
    """The gate's interval on a random W_E (vocab, width) from S3's start: token accuracy of the exact fit."""
    weight = torch.randn(vocab, width, generator=torch.Generator().manual_seed(0))
    ids = torch.randint(0, vocab, (8, 12), generator=torch.Generator().manual_seed(1))
    decoded = direct_fit_decode(ids, _start(8, 12, vocab), pseudo_inverse(weight), target)
    return bootstrap((decoded == ids).double().mean(1).numpy(), _mean, seed=0)


def test_an_exact_fit_cannot_decode_where_the_vocabulary_is_43_times_the_width():
    """The sub-word tiny model's shape (4096 × 96): even S3's target 10 leaves the gate's bound under 'most'."""
    assert _exact_fit(4096, 96, DIRECT_TARGET).low <= SUCCEEDS


def test_s3s_target_of_10_decodes_at_llama_7bs_vocabulary_width_ratio_where_1_does_not():
    """Version 4 of S3.7: at a vocabulary 7.8 times the width (Llama-7B's 32000/4096, here 3120/400) the gate passes
    with S3's target 10 and would call S3.7 not informative with version 3's one-hot of 1."""
    assert _exact_fit(3120, 400, DIRECT_TARGET).low > SUCCEEDS
    assert _exact_fit(3120, 400, 1.0).low <= SUCCEEDS


def test_s3_7s_exact_fit_gate_stays_below_every_long_input_s3_calls_a_success():
    """Version 7 (issue 73): the exact-fit gate's half is read off S3's numbers, not set after looking: S3's long
    inputs that succeed decode 4 of 5, 5 of 7, 6 of 7 and 10 of 11 of their words, every one above it, so a model
    whose perfect inversion decodes at most half could succeed as none of them does."""
    successes = (4 / 5, 5 / 7, 6 / 7, 10 / 11)  # 'This is hasta prompt sentence', '... somewhat longer ...', ...
    assert SUCCEEDS < min(successes)


def test_s3_7_is_not_informative_where_the_vocabulary_is_no_larger_than_the_width():
    """Version 7 (issue 73): a char model's W_E (84 tokens, 96 features) is outside S3's direct representation, whose
    scope words are quoted; a vocabulary wider than the width by one token, or the sub-word model's, is inside."""
    from claims.s3_inversion.cosine_measures import outside_direct_scope

    def weight(vocab: int, width: int) -> torch.Tensor:
        return torch.randn(vocab, width, generator=torch.Generator().manual_seed(0))

    char = outside_direct_scope(weight(84, 96))
    assert "vocabulary (84) is no larger than the width (96; W_E's rank 84)" in char
    assert "the output dimension is much smaller than the input" in char  # S3's scope words, quoted
    assert outside_direct_scope(weight(96, 96)) != ""  # no larger: equal counts too
    assert "W_E's rank 1)" in outside_direct_scope(torch.ones(84, 96))  # not injective, still outside the scope
    assert outside_direct_scope(weight(97, 96)) == "" and outside_direct_scope(weight(4096, 96)) == ""
    assert _exact_fit(3120, 400, 1.0).high <= RECOVERS


def test_the_exact_fit_is_where_plain_descent_on_a_linear_map_ends():
    """On the identity layer the L2 descent converges to a₀ + P(onehot − a₀): the bound is the descent's limit."""
    weight, _ = torch.linalg.qr(torch.randn(40, 8, generator=torch.Generator().manual_seed(0)))  # orthonormal columns
    ids = torch.randint(0, 40, (4, 3), generator=torch.Generator().manual_seed(1))
    config = InversionConfig(representation="direct", loss="l2", steps=2000, lr=0.2, lr_end=1e-4)
    found = invert(lambda x: x, ids, weight, torch.Generator().manual_seed(5), config, k=1)
    start = invert(lambda x: x, ids, weight, torch.Generator().manual_seed(5), replace(config, steps=0), k=1).inputs
    assert torch.equal(found.decoded, direct_fit_decode(ids, start, pseudo_inverse(weight), config.direct_target))


def test_the_direct_fit_refuses_a_start_that_is_not_over_the_vocabulary():
    weight = torch.randn(40, 8)
    with pytest.raises(ValueError, match="vocab = 40"):
        direct_fit_decode(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, 8), pseudo_inverse(weight), DIRECT_TARGET)


def test_the_l2_descent_control_fails_on_a_layer_that_forgets_its_input():
    weight = torch.randn(20, 32, generator=torch.Generator().manual_seed(0))
    ids = torch.randint(0, 20, (16, 6), generator=torch.Generator().manual_seed(1))
    config = InversionConfig(representation="direct", loss="l2", steps=50)
    found = invert(lambda x: torch.zeros_like(x) + x.sum() * 0, ids, weight, torch.Generator().manual_seed(2),
                   config, k=1)
    control = claim_check(L2_DESCENT, descent=per_unit(found.token_accuracy.double().numpy(), "min"))  # as measured
    assert control.role == "control" and control.status == "failed"


# --- S3.6: S3's 0/1-mask decoding, under which a restriction can lower accuracy -------------------------------


def test_a_masked_zero_wins_where_every_allowed_score_is_negative():
    scores = torch.tensor([[[-0.2, -0.1, 0.5, -0.3], [0.4, 0.1, -0.5, -0.6]]])  # (1 prompt, 2 positions, vocab 4)
    allowed = torch.tensor([[True, True, False, False]])
    assert zero_masked_decode(scores, allowed).tolist() == [[2, 0]]  # position 1: the masked 0 at index 2 wins
    assert decode_top_k(scores, 1, allowed)[..., 0].tolist() == [[1, 0]]  # −inf masking keeps the allowed best


def test_the_restriction_gain_fails_where_answers_score_below_zero():
    """Every answer is the whole vocabulary's argmax but scores below 0: under S3's mask the restriction loses them."""
    vocab, seq = 6, 4
    ids = torch.arange(seq).unsqueeze(0).repeat(16, 1)  # (16 prompts, 4 positions): a bootstrap decides from 16
    scores = torch.full((16, seq, vocab), -1.0)
    scores.scatter_(2, ids.unsqueeze(-1), -0.1)  # the answer is best, yet negative
    scores[::2, 0, 0] = 0.5  # every other prompt keeps its first answer above 0: the units vary
    allowed = torch.zeros(16, vocab, dtype=torch.bool).scatter_(1, ids, True)
    whole = (scores.argmax(-1) == ids).double().mean(1)
    zero = (zero_masked_decode(scores, allowed) == ids).double().mean(1)
    counts = np.rint(torch.stack([whole, zero], 1).numpy() * seq).astype(np.int64)
    gain = claim_check("S3.6/prompt-only-gain",
                       prompt_only=bootstrap(counts, accuracy_difference(1, 0, seq), seed=0))
    assert (gain.value, gain.status) == (-0.875, "failed")


def test_s3_6_continues_where_a_gain_is_decided_and_checks_only_a_decided_gains_convergence():
    """S3.6's continuation (``convergence.settled``) runs where any of the three gains is decided at N
    (``decided_gain``); a gain whose interval holds 0 at N gets no convergence control, its longer value aside."""
    from claims.s3_inversion.vocabulary_checks import decided_gain, vocabulary_checks
    from claims.s3_inversion.vocabulary_measures import VocabularyEstimates
    from tests.check_cases import estimate

    undecided = estimate(0.0, 0.1)
    e = VocabularyEstimates(undecided, estimate(0.3, 0.1), undecided, estimate(0.6, 0.1),
                            longer=(estimate(0.1, 0.05), estimate(0.35, 0.1), estimate(0.12, 0.05)))
    assert [c.key for c in vocabulary_checks(e, 200) if c.convergence] == [
        "S3.6/distractors-gain/after-5N", "S3.6/distractors-gain/plateau"]
    assert decided_gain(e, 200).key == "S3.6/distractors-gain"
    assert decided_gain(VocabularyEstimates(undecided, undecided, undecided, estimate(0.6, 0.1)), 200).status == \
        "inconclusive"  # none decided: not continued


def test_no_s3_row_set_after_looking_decides():
    """Issue 73: an S3 threshold row of a deciding role (claim, control, gate) comes from S3's words or numbers, an
    identity, or a reading fixed before looking; a row set after ("after") is a reading or a demoted check."""
    from fixtures.catalogue import load_catalogue

    deciding = [(c.id, t.check) for c in load_catalogue().claims.values() if c.family == "S3" for t in c.thresholds
                if t.role in ("claim", "control", "gate") and t.provenance == "after"]
    assert deciding == []


# --- S3.9: rarer than S3's rarest untrained rate -----------------------------------------------------------


def test_a_model_finding_the_masked_token_in_two_of_five_prompts_fails():
    found = np.array([1.0, 1.0, 0.0, 0.0, 0.0] * 40)  # 200 prompts; version 2's one half let this pass
    check = claim_check(MASKED, masked=proportion(found))
    assert check.status == "failed"
    assert proportion(found).high < 0.5  # version 2's bound, one half, would have passed it


def test_s3_9s_bound_is_s3s_rarest_untrained_rate_among_its_source_numbers():
    """Version 9 (issue 73): RAREST is read off S3's figures ('perhaps 1/5ths' at 4096 wide, 'more than 4/5ths' at
    8192), the catalogue's source numbers of S3.9, not a line set after looking."""
    from fixtures.catalogue import load_catalogue

    claim = load_catalogue().claims["S3.9"]
    assert RAREST == min(n.value for n in claim.source_numbers)
    row = next(t for t in claim.thresholds if t.key == MASKED)
    assert row.provenance == "source's numbers" and "perhaps 1/5ths" in row.basis
    assert row.bound == "RAREST" and row.threshold == f"RAREST = {RAREST:g}"  # the home's expression over S3's rates


def test_a_model_that_never_finds_the_masked_token_passes_from_16_prompts_and_not_from_8():
    """0 of 32 at 98.3 % ([0, 0.14]) clears RAREST; 0 of 8 ([0, 0.45]) decides nothing."""
    def status(n: int) -> str:
        return claim_check(MASKED, masked=proportion(np.zeros(n), confidence=1 - 0.05 / 3)).status

    assert status(32) == "passed" and status(8) == "inconclusive"


# --- S3.10: the crossing well below the width ---------------------------------------------------------------


def _curve(crossing: int, ks: list[int], prompts: int = 16) -> np.ndarray:
    """Per-prompt accuracy at each k: every token from ``crossing`` on, none below the k before it, and at that k
    half the prompts all their tokens: the crossing of a resample falls on either k (a bootstrap of one value for
    every resample would be a zero-width interval, which decides nothing)."""
    before = max(k for k in ks if k < crossing)
    rows = [[1.0 if k >= crossing or (k == before and p % 2) else 0.0 for k in ks] for p in range(prompts)]
    return np.array(rows)


class StepCurve:
    """A curve with accuracy 1 from ``step`` features on and 0 below, which notes the k's asked for and run ahead."""

    def __init__(self, step: int):
        self.step, self.asked, self.run_ahead = step, [], []

    def mean(self, k: int) -> float:
        self.asked.append(k)
        return float(k >= self.step)

    def ahead(self, *ks: int) -> None:
        self.run_ahead.append(ks)


def test_the_crossing_search_asks_for_the_k_of_a_one_by_one_bisection_and_runs_the_next_one_ahead():
    """Grid 24, 48 (reached), then bisection 36 (short), 42, 39, 37 (reached): the k's a one-by-one search evaluates,
    in its order, whatever was run ahead; beside each, the k asked next should it fall short (grid) or reach (bisection)."""
    curve = StepCurve(37)
    assert crossing(curve, 96, 0.5) == 37
    assert curve.asked == [24, 48, 36, 42, 39, 37]
    assert curve.run_ahead == [(24, 48), (48, 72), (36, 30), (42, 39), (39, 37), (37, 36)]
    with pytest.raises(ValueError, match="no k up to d_model = 96 reaches 2"):
        crossing(StepCurve(37), 96, 2.0)


def test_a_crossing_at_the_width_fails_the_claims_own_bound_and_one_below_it_passes():
    """Version 10 (issue 73): S3.10's bound below the width is S3's own ('reducing this number to 2202 yields no
    incorrect input tokens'): an exact count, failed wholly at k* = d_model, passed at d_model − 1."""
    def count(k: int) -> Check:
        return below_width_check(per_unit(np.array([float(k)]), "min"), 96)

    assert count(96).status == "failed" and count(95).status == "passed" and count(48).status == "passed"
    assert count(96).role == "claim" and count(96).threshold == 95.5


def test_a_crossing_at_the_width_that_stays_there_at_5n_passes_its_convergence_control_and_one_that_moves_fails():
    """The crossing's convergence control (version 10): the descents at d_model and d_model − 1 features continued;
    the crossing stays at the width only where d_model − 1 features still recover under half the full output's."""
    from claims.s3_inversion.convergence import convergence_check

    failed = below_width_check(per_unit(np.array([96.0]), "min"), 96)
    stays = longer_crossing(np.column_stack([np.ones(16), np.full(16, 0.2)]), 96)  # 0.2 < ½ of 1.0
    moved = longer_crossing(np.column_stack([np.ones(16), np.full(16, 0.6)]), 96)
    assert (stays.value, moved.value) == (96.0, 95.0)
    assert convergence_check(failed, stays, 200).status == "passed"  # the failure stays: it stands
    assert convergence_check(failed, moved, 200).status == "failed"  # more steps removed it: unconverged
    with pytest.raises(ValueError, match="prompts, 2"):
        longer_crossing(np.ones((16, 3)), 96)


def test_s3_10s_fraction_of_the_width_is_a_reading_that_decides_nothing():
    """Version 10: k*/d_model < 0.77 (set after looking) is shown beside S3's 0.54 as a reading; a crossing at the
    width fails it and the claim's own bound alike, but only the bound decides."""
    from claims.s3_inversion.bandwidth_checks import bandwidth_checks
    from claims.s3_inversion.bandwidth_measures import BandwidthContext, BandwidthEstimates
    from tests.check_cases import estimate, exact
    from tests.check_cases import per_unit as point

    e = BandwidthEstimates(estimate(0.9, 0.05), estimate(0.99, 0.01), exact(0.8), point(96.0))
    checks = {c.name: c for c in bandwidth_checks(e, BandwidthContext(k_star=96, d_model=96, steps=200))}
    assert checks["crossing k* as a fraction of d_model"].role == "reading"
    assert checks["crossing k* as a fraction of d_model"].status == "failed"
    assert checks["crossing k* in features, below the width (96)"].status == "failed"
    assert checks["crossing k* in features, below the width (96)"].role == "claim"


def test_a_crossing_at_the_width_is_dimension_counting_and_fails_the_old_line():
    ks = [24, 48, 72, 84, 90, 93, 95, 96]
    units = _curve(96, ks)
    fraction = bootstrap(units, lambda u: crossing_fraction(u, ks, 96), seed=0)
    assert fraction.value in (95 / 96, 1.0) and fraction.low < fraction.high
    check = claim_check(FRACTION_OF_WIDTH, fraction=fraction)
    assert check.role == "reading" and check.status == "failed"


def test_a_crossing_at_half_the_width_passes_the_old_line():
    ks = [24, 36, 42, 45, 47, 48, 72, 96]
    fraction = bootstrap(_curve(48, ks), lambda u: crossing_fraction(u, ks, 96), seed=0)
    assert fraction.value in (47 / 96, 0.5) and fraction.low < fraction.high
    assert claim_check(FRACTION_OF_WIDTH, fraction=fraction).status == "passed"


def test_the_crossing_needs_the_full_output_last():
    with pytest.raises(ValueError, match="end at d_model = 96"):
        crossing_fraction(np.ones((4, 2)), [24, 48], 96)


# --- S3.13: the descent must minimise without norms ----------------------------------------------------------


def test_a_stalled_descent_fails_the_control():
    """Distances reached at a third of the start, as the tiny twins at S3.2's N = 200 (version 1)."""
    rng = np.random.default_rng(0)
    start = rng.uniform(0.7, 0.9, 16)
    units = np.column_stack([start * rng.uniform(0.25, 0.35, 16), start])
    control = claim_check("S3.13/without-norms-control",
                          minimised=bootstrap(units, lambda u: reached_over_start(u, 0, 1), seed=0))
    assert control.role == "control" and control.status == "failed"


def test_norms_that_do_not_impede_fail_the_claim():
    """With norms the distance also falls to a thirtieth of the start: S3's 'no longer possible' does not hold."""
    rng = np.random.default_rng(0)
    start = rng.uniform(0.7, 0.9, 16)
    units = np.column_stack([start * rng.uniform(0.02, 0.04, 16), start])
    check = claim_check("S3.13/with-norms",
                        with_norms=bootstrap(units, lambda u: reached_over_start(u, 0, 1), seed=0))
    assert check.status == "failed"


# --- S3.11: the found input must match the ablated block's output -------------------------------------------


def test_a_descent_that_does_not_reach_the_output_fails_the_success_control():
    """No steps: the random start a₀ is far from the target, so S3's success test fails on every prompt."""
    from claims.s3_inversion.residual_checks import MATCHED
    from claims.s3_inversion.scale import Scale

    weight = torch.randn(20, 16, generator=torch.Generator().manual_seed(0))
    ids = torch.randint(0, 20, (12, 5), generator=torch.Generator().manual_seed(1))
    found = invert(torch.tanh, ids, weight, torch.Generator().manual_seed(2), InversionConfig(steps=0), k=1)
    success = np.column_stack([found.success.double().numpy()] * 2)  # (prompts, settings)
    cpu = Scale.of(False)  # as S3.11 measures it: the setting chosen on a third of the prompts, the rest reported
    control = claim_check("S3.11/success-test",
                          success=cpu.reported_fraction(success, cpu.chosen(success)))
    assert control.role == "control" and control.threshold == MATCHED and control.status == "failed"


# --- S3.8: agreement ρ > ½, and a broken instrument that must fail it ---------------------------------------


def test_attributions_that_barely_agree_fail_the_claim():
    """Version 1 asked ρ > 0: a weak agreement of 0.2 passed it; ρ > ½ does not."""
    from claims.s3_inversion.attribution_checks import agreement_checks
    from claims.s3_inversion.attribution_measures import agreement_estimates
    rng = np.random.default_rng(0)
    rho, twin = 0.2 + 0.05 * rng.standard_normal(64), 0.05 * rng.standard_normal(64)
    claim, control = agreement_checks(agreement_estimates(rho, twin, seed=0))
    assert claim.status == "failed" and control.status == "passed"


def test_a_twin_whose_gradients_agree_as_well_fails_the_control():
    """If the untrained twin's gradients rank the tokens as occlusion does, the agreement is not the model's."""
    from claims.s3_inversion.attribution_checks import agreement_checks
    from claims.s3_inversion.attribution_measures import agreement_estimates
    rng = np.random.default_rng(0)
    rho = 0.8 + 0.05 * rng.standard_normal(64)
    claim, control = agreement_checks(agreement_estimates(rho, rho - 0.05, seed=0))
    assert claim.status == "passed" and control.status == "failed"


def test_attributions_that_follow_position_alone_agree_for_any_weights():
    """Gradient×input and occlusion that both rank by recency agree whatever the weights: the twin's do too."""
    from claims.s3_inversion.attribution_checks import agreement_checks
    from claims.s3_inversion.attribution_measures import agreement_estimates, rank_agreement
    rng = np.random.default_rng(0)
    recency = np.tile(np.arange(7.0), (32, 1))
    noisy = lambda: recency + 0.5 * rng.standard_normal(recency.shape)  # noqa: E731
    occluded = noisy()
    _, control = agreement_checks(agreement_estimates(rank_agreement(noisy(), occluded),
                                                       rank_agreement(noisy(), occluded), seed=0))
    assert control.status == "failed"


def test_a_constant_attribution_has_no_rank_correlation_and_is_left_out():
    from claims.s3_inversion.attribution_measures import rank_agreement
    a = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    rho = rank_agreement(a, np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]]))
    assert rho[0] == pytest.approx(1.0) and np.isnan(rho[1])


def test_the_occluding_token_never_equals_the_token_it_replaces():
    """On prompts of one repeated word-boundary token, the most frequent token would occlude itself (no change)."""
    from claims.s3_inversion.attribution_measures import other_frequent_token
    ids = torch.tensor([[5] * 21, [5] * 10 + [9] * 11, [5, 9, 2] * 7])
    substitute = other_frequent_token(ids)
    assert not bool((substitute == ids).any())
    assert set(substitute.unique().tolist()) <= {5, 9}
    with pytest.raises(ValueError, match="one distinct token"):
        other_frequent_token(torch.full((2, 4), 3))


# --- the headline setting: S3's own at source scale, the better of two on a CPU (issue 20) --------------------


def test_at_source_scale_the_headline_is_s3s_setting_even_where_the_adapted_one_recovers_more():
    """A model that only the adapted step inverts fails S3.2 at source scale: S3's own setting decides there."""
    from claims.s3_inversion.inversions import DESCENT_SETTINGS
    from claims.s3_inversion.scale import Scale
    exact = np.column_stack([np.zeros(64), np.ones(64)])  # (prompts, settings): S3's recovers none, adapted all
    assert DESCENT_SETTINGS[0] == "source"
    gpu, cpu = Scale.of(True), Scale.of(False)
    assert gpu.headline(exact, gpu.chosen(exact)) == 0.0 and int(gpu.chosen(exact)) == 0
    assert cpu.headline(exact, cpu.chosen(exact)) == 1.0 and int(cpu.chosen(exact)) == 1
    assert gpu.headline_label == "S3's setting" and cpu.headline_label == "better setting"
    check = claim_check("S3.2/exact",
                        exact=gpu.reported_fraction(exact, gpu.chosen(exact)))
    assert check.status == "failed"


def test_on_a_cpu_the_setting_is_chosen_on_a_third_of_the_prompts_and_measured_on_the_rest():
    """Item 7 of issue 34: two settings equal in truth; a choice made inside every resample, on the prompts it is
    reported on, takes the luckier and biases the interval upward; chosen once on the first third, the other two
    thirds' estimate of the chosen setting is unbiased. The CPU's 24 prompts report 16, the fewest a bootstrap
    decides from (issue 43)."""
    from claims.s3_inversion.scale import Scale
    cpu = Scale.of(False)
    rng = np.random.default_rng(0)
    units = rng.binomial(1, 0.5, (66, 2)).astype(float)  # (prompts, settings), both recover half the tokens
    assert cpu.choosing(units).shape[0] == 22 and cpu.reported(units).shape[0] == 44
    assert np.array_equal(cpu.reported(units), units[22:]) and Scale.of(True).choosing(units).shape[0] == 0
    assert cpu.prompts_for(96) == 24 and cpu.reported(np.zeros(cpu.prompts_for(96))).shape[0] == MIN_BOOTSTRAP_UNITS
    chosen = cpu.chosen(units)
    assert int(chosen) == int(units[:22].mean(0).argmax())  # decided by the first third alone
    once = bootstrap(cpu.reported(units), lambda u: float(cpu.headline(u, chosen)), seed=0)
    inside = bootstrap(units, lambda u: float(u.mean(0).max()), seed=0)  # version 3: the max in every resample
    assert once.low < 0.5 < once.high and inside.value > 0.5
    assert Scale.of(True).reported(units) is units  # at source scale nothing is chosen, every prompt reported
    with pytest.raises(ValueError, match="at least 3"):
        cpu.chosen(units[:2])


def test_the_headline_is_chosen_per_column():
    """(prompts, depths, settings): each depth its own setting on a CPU, S3's at every depth at source scale."""
    from claims.s3_inversion.scale import Scale
    units = np.stack([np.column_stack([np.full(8, 0.9), np.full(8, 0.1)]),
                      np.column_stack([np.full(8, 0.2), np.full(8, 0.6)])], 1)
    assert Scale.of(False).chosen(units).tolist() == [0, 1]
    assert Scale.of(False).headline(units, Scale.of(False).chosen(units)).tolist() == pytest.approx([0.9, 0.6])
    assert Scale.of(True).headline(units, Scale.of(True).chosen(units)).tolist() == pytest.approx([0.9, 0.2])


# --- S3.5: the width gain, the convergence gate and the success control -----------------------------------------


def test_a_ladder_whose_narrowest_rung_recovers_more_fails_the_gain():
    """(prompts, rungs, settings): the narrow rung recovers 0.8 of the tokens, the wide one 0.4, in either setting."""
    from claims.s3_inversion.scale import Scale
    from claims.s3_inversion.width_measures import width_gain
    rng = np.random.default_rng(0)
    units = np.stack([rng.binomial(10, 0.8, (32, 2)) / 10, rng.binomial(10, 0.4, (32, 2)) / 10], 1)
    def gain(u: np.ndarray, scale) -> str:  # width_checks' claim check at block 1, seed 1337
        chosen = scale.chosen(u)
        gains = {(1337, 1): bootstrap(scale.reported(u), lambda v: width_gain(v, scale, chosen), seed=0)}
        return claim_check("S3.5/gain-block-1-seed-1337", gains=gains).status

    for scale in (Scale.of(False), Scale.of(True)):
        assert gain(units, scale) == "failed"
    assert gain(units[:, ::-1], Scale.of(False)) == "passed"


def test_a_wider_rung_that_trained_worse_closes_the_convergence_gate():
    from claims.s3_inversion.width_measures import reordered_rungs
    rungs = {1337: ["w96", "w128", "w192"], 1442: ["w96-s", "w192-s"]}
    ordered = {"w96": 1.79, "w128": 1.75, "w192": 1.70, "w96-s": 1.83, "w192-s": 1.77}
    assert reordered_rungs(rungs, ordered) == []
    assert reordered_rungs(rungs, {**ordered, "w192": 1.86}) == ["w192 1.860 > w128 1.750"]  # issue 20's corpus


def test_a_users_ladder_reaching_4096_runs_s3_5s_checks_and_the_zoos_ladders_stop_at_the_width_gate():
    """Issue 33: S3.5 decides only on a ladder that reaches S3's widths. A constructed Llama ladder (7B, 13B, 30B:
    4096, 5120, 6656 wide) with two seed sets passes both gates; the tiny zoo's (96-192) stops at the width gate, and
    a 4096 ladder whose widest rung trained worse at the convergence gate."""
    from claims.s3_inversion.width_measures import GAIN_ONSET, ladder_gate

    widths = {"llama-7b": 4096, "llama-13b": 5120, "llama-30b": 6656, "llama-7b-s2": 4096, "llama-30b-s2": 6656}
    seeds = {0: ["llama-7b", "llama-13b", "llama-30b"], 1: ["llama-7b-s2", "llama-30b-s2"]}
    losses = {"llama-7b": 0.80, "llama-13b": 0.76, "llama-30b": 0.72, "llama-7b-s2": 0.81, "llama-30b-s2": 0.73}
    assert ladder_gate(widths, seeds, losses) is None  # the checks run
    assert "convergence gate" in ladder_gate(widths, seeds, {**losses, "llama-30b-s2": 0.85})
    tiny = {"tiny-w96": 96, "tiny-w128": 128, "tiny-w192": 192}
    assert f"below the {GAIN_ONSET}" in ladder_gate(tiny, {0: list(tiny)}, dict.fromkeys(tiny, 1.0))


def test_a_narrowest_rung_that_rarely_passes_the_success_test_fails_the_control():
    from claims.s3_inversion.scale import Scale
    from claims.s3_inversion.width_checks import SUCCESS_MAJORITY
    def status(passing: tuple[int, int]) -> str:
        success = np.column_stack([np.r_[np.ones(k), np.zeros(16 - k)] for k in passing])  # (prompts, settings)
        success = np.concatenate([success[:8], success])  # 8 choosing prompts, then the 16 reported
        cpu = Scale.of(False)
        est = cpu.reported_fraction(success, cpu.chosen(success))
        assert est.method.startswith("exact binomial") and est.n == 16
        check = claim_check("S3.5/narrowest-success-seed-1337", success={1337: est})
        assert check.role == "control" and check.threshold == SUCCESS_MAJORITY
        return check.status

    assert status((1, 2)) == "failed"  # 2 of 16 at best: decisively not a majority
    assert status((6, 8)) == "inconclusive"  # 8 of 16: the exact interval reaches a majority, so undecided
    assert status((15, 16)) == "passed"


def test_s3_14s_gap_control_is_undecided_where_the_gap_may_be_nothing():
    """S3.14's share is a fraction of block 1's advantage over block 3: a gap whose interval holds 0 decides nothing
    (the record is inconclusive, control undecided), a positive one passes."""
    from claims.s3_inversion.layers_checks import gap_check
    from latent_instruments.stats import Estimate

    assert gap_check(Estimate(0.02, -0.01, 0.05, 0.95, 16)).status == "inconclusive"
    assert gap_check(Estimate(0.10, 0.05, 0.15, 0.95, 16)).status == "passed"
    assert gap_check(Estimate(-0.10, -0.15, -0.05, 0.95, 16)).status == "failed"  # no gap: a failed control (version 8), never a gate


def test_s3_14s_share_fails_where_the_layers_together_close_the_gap_and_its_floor_fails_a_broken_descent():
    """The share of block 1's advantage recovered by blocks 1-3 together: near 1 fails the claim (< ½), far below 0
    (the concatenation far worse than block 3 alone) fails the floor control (> −½)."""
    from claims.s3_inversion.scale import Scale
    from claims.s3_inversion.layers_checks import HALF
    from claims.s3_inversion.layers_measures import recovered_share

    rng = np.random.default_rng(0)

    def share(block_1: float, block_3: float, together: float) -> str:
        means = np.array([block_1, block_3, together])
        units = np.clip(means[None, :, None] + rng.normal(0, 0.02, (64, 3, 2)), 0, 1)  # (prompts, targets, settings)
        cpu = Scale.of(False)
        est = bootstrap(cpu.reported(units), lambda u: recovered_share(u, cpu, cpu.chosen(units)), seed=0)

        share = claim_check("S3.14/share", share=est)
        floor = claim_check("S3.14/share-floor", share=est)
        assert (share.role, share.threshold, floor.role, floor.threshold) == ("claim", HALF, "control", -HALF)
        return share.status, floor.status

    assert share(0.8, 0.4, 0.42) == ("passed", "passed")  # together no better than block 3: S3's finding
    assert share(0.8, 0.4, 0.78)[0] == "failed"  # the extra layers recover nearly all of block 1's advantage
    assert share(0.8, 0.4, 0.05)[1] == "failed"  # far below block 3 alone: the descent broke on the long target


# --- issue 43: the checks decided prompt by prompt, or by exact intervals ------------------------------------------


def test_s3_1_round_trip_fails_on_one_wrong_token_in_any_prompt_and_the_shuffle_control_on_one_recovered_prompt():
    """S3.1 (version 3) is asserted of every prompt: one wrong token in one of 24 prompts fails it; the control
    fails where one prompt's shuffled decode recovers most of its tokens."""
    from claims.s3_inversion.round_trip_checks import EXACT, PERMUTED_CEILING
    from latent_instruments.stats import per_unit

    def round_trip(accuracy: np.ndarray) -> Check:  # round_trip_checks' claim check, as S3.1 measures it
        return claim_check("S3.1/exact",
                           recovered=per_unit(accuracy, "min"))

    every = np.ones(24)
    assert round_trip(every).status == "passed" and round_trip(every).threshold == EXACT
    one_wrong = np.r_[np.ones(23), 4 / 5]
    assert round_trip(one_wrong).status == "failed"
    shuffled = np.r_[np.zeros(23), 0.6]
    control = claim_check("S3.1/shuffled-rows",
                          permuted=per_unit(shuffled, "max"))
    assert (control.role, control.threshold, control.status) == ("control", PERMUTED_CEILING, "failed")


def test_s3_3s_paired_gap_fails_where_the_trained_model_recovers_more_prompts_than_its_twin():
    """S3.3's exact-recovery gap (version 5) is Newcombe's paired interval: a twin that recovers fewer of the same 16
    prompts fails it; one that recovers every prompt the trained model misses passes."""
    from latent_instruments.stats import proportion_difference

    trained = np.r_[np.ones(12), np.zeros(4)]
    worse_twin = np.r_[np.zeros(12), np.ones(4)]
    assert claim_check(EXACT_GAP, exact_gap=proportion_difference(worse_twin, trained, paired=True)).status == "failed"
    better_twin = np.ones(16)
    assert claim_check(EXACT_GAP, exact_gap=proportion_difference(better_twin, np.zeros(16), paired=True)
                       ).status == "passed"


def test_s3_7s_controls_fail_a_descent_that_misses_one_input_and_a_one_token_inversion_that_recovers_few():
    from claims.s3_inversion.cosine_checks import RECOVERS
    from latent_instruments.stats import per_unit

    l2 = np.r_[np.ones(23), 0.4]  # the L2 descent leaves one of 24 inputs mostly unrecovered
    assert claim_check(L2_DESCENT, descent=per_unit(l2, "min")).status == "failed"
    one_token = np.r_[np.ones(10), np.zeros(33)]  # 10 of 43 reported one-token inputs
    assert claim_check(INDIRECT, indirect=proportion(one_token)).status == "failed"
    assert claim_check(INDIRECT, indirect=proportion(np.ones(43))).status == "passed"
    assert {claim_check(key).threshold for key in (L2_DESCENT, INDIRECT)} == {RECOVERS}


def test_s3s_works_control_fails_a_descent_that_misses_an_untrained_blocks_input_and_16_of_16_pass():
    """Issue 43, item 4: where S3 says the inversion works (an untrained block), its failure is a control decided by
    an exact interval: red where it fails on most prompts, undecided on about half, passed on 16 of 16 (a bootstrap
    of 16 equal accuracies would be a zero-width interval, which decides nothing)."""
    from claims.s3_inversion.scope import MOST, UNTRAINED_INVERTS, works_control

    def status(k: int, n: int = 16) -> str:
        return works_control(np.arange(n) < k, "prompts", UNTRAINED_INVERTS).status

    assert status(16) == "passed" and status(13) == "passed"
    assert status(8) == "inconclusive" and status(12) == "inconclusive"  # 12/16: the exact low end 0.48 ≤ ½
    assert status(2) == "failed" and status(0) == "failed"
    check = works_control(np.ones(4, bool), "prompts", UNTRAINED_INVERTS)
    assert check.role == "control" and check.threshold == MOST and check.interval.startswith("exact binomial")
    assert check.status == "inconclusive"  # 4 of 4: [0.40, 1] at 95 % cannot decide


def test_s3_14s_gap_of_zero_on_every_prompt_is_undecided_not_a_gate():
    """Block 1 and block 3 equal on all 16 prompts give a zero-width bootstrap gap: it decides nothing, so the record
    is inconclusive (control undecided), not "not informative" (version 7)."""
    from claims.s3_inversion.layers_checks import gap_check

    gap = bootstrap(np.zeros(16), lambda u: float(u.mean()), seed=0)
    assert (gap.low, gap.high) == (0.0, 0.0)
    assert gap_check(gap).status == "inconclusive" and gap_check(gap).undecidable


def test_s3_10s_crossing_at_the_first_feature_fails_its_own_check_instead_of_a_gate():
    """Issue 56, item 4: S3.10's k* = 1 gate (not informative) had no quote and no control that could fail; since
    version 8 a crossing at the first feature fails the claim check that the threshold lies inside the output."""
    from claims.s3_inversion.bandwidth_checks import threshold_within

    assert threshold_within(1, 16).status == "failed"
    assert threshold_within(2, 16).status == "passed" and threshold_within(55, 16).status == "passed"


def test_a_failure_that_a_longer_descent_removes_fails_its_convergence_control_and_one_that_stays_passes_it():
    """S3's convergence control (claims.s3_inversion.convergence): the failed claim check again after 5N steps,
    compared the other way; a longer descent that passes the claim, or blurs the failure, does not pass it."""
    from claims.s3_inversion.convergence import LONGER, convergence_check

    failed = claim_check(ORDERING, ordering=bootstrap(np.full(16, -0.5) + np.linspace(-0.01, 0.01, 16), np.mean,
                                                      seed=0))
    assert failed.status == "failed"
    def longer(values):
        return convergence_check(failed, bootstrap(np.asarray(values, float), np.mean, seed=0), 200)
    stays = longer(np.linspace(-0.02, -0.006, 16))  # S3.7 on tiny-w96 at 5N: -0.013
    removed = longer(np.linspace(0.1, 0.3, 16))
    blurred = longer(np.linspace(-0.3, 0.3, 16))
    assert stays.status == "passed" and removed.status == "failed" and blurred.status == "inconclusive"
    assert stays.comparison == "<" and stays.threshold == failed.threshold and stays.convergence
    assert f"after {LONGER}N = {LONGER * 200} steps" in stays.name


def test_a_hold_that_a_longer_descent_reverses_fails_its_convergence_control_and_one_that_stays_passes_it():
    """Issue 64, item 5: a hold resting on a trained model's failure to recover (S3.3, S3.4, S3.11) is continued
    too, compared as it holds: a gap that stays passes, one that closes or blurs does not; an undecided check has
    no control."""
    from claims.s3_inversion.convergence import convergence_check

    held = claim_check(TOKEN_GAP, token_gap=bootstrap(np.full(16, 0.4) + np.linspace(-0.01, 0.01, 16), np.mean, seed=0))
    assert held.status == "passed"
    def longer(values):
        return convergence_check(held, bootstrap(np.asarray(values, float), np.mean, seed=0), 200)
    stays, closed, blurred = (longer(np.linspace(*ends, 16)) for ends in ((0.2, 0.3), (-0.3, -0.1), (-0.05, 0.06)))
    assert stays.status == "passed" and closed.status == "failed" and blurred.status == "inconclusive"
    assert stays.comparison == held.comparison and stays.convergence
    undecided = claim_check(TOKEN_GAP, token_gap=bootstrap(np.linspace(-0.1, 0.1, 16), np.mean, seed=0))
    with pytest.raises(ValueError, match="decided check"):
        convergence_check(undecided, bootstrap(np.zeros(16), np.mean, seed=0), 200)


def test_the_mixer_checks_compose_the_pairs_that_were_compared():
    """S3.12: the trained pair's checks, then the twins' controls, then the twins' pair's; a pair that was not
    compared (gated, or twins whose control failed) adds no check of its own, the twins' controls stay."""
    from claims.s3_inversion.mixer_checks import compared, mixer_checks, not_compared, pair_checks, works_checks
    from claims.s3_inversion.mixer_measures import MixerEstimates, PairContext, PairEstimates, TwinsEstimates
    from tests.check_cases import estimate, exact

    pair, twins = PairEstimates(exact(0.4, 16, 0.2), estimate(0.5, 0.1)), TwinsEstimates([exact(0.8), exact(0.9)])
    contexts = {"trained": PairContext("trained", "tiny-w96", "tiny-mixer-w96", 200),
                "untrained twins": PairContext("untrained twins", "tiny-w96:untrained", "tiny-mixer-w96:untrained", 200)}
    names = ["tiny-w96:untrained", "tiny-mixer-w96:untrained"]
    both = mixer_checks(MixerEstimates(twins, {"trained": pair, "untrained twins": pair}, contexts))
    expected = (pair_checks(pair, contexts["trained"]) + works_checks(twins, names)
                + pair_checks(pair, contexts["untrained twins"]))
    assert [(c.name, c.derivation) for c in both] == [(c.name, c.derivation) for c in expected]
    neither = mixer_checks(MixerEstimates(twins, {"trained": None, "untrained twins": None}, contexts))
    assert [c.name for c in neither] == [c.name for c in works_checks(twins, names)]
    assert not_compared(MixerEstimates(twins, {"trained": None, "untrained twins": None}, contexts), ["gated"]) == \
        "gated"  # nothing compared, every control passed: not informative
    only_twins = mixer_checks(MixerEstimates(twins, {"trained": None, "untrained twins": pair}, contexts))
    assert [c.role for c in only_twins] == ["control", "control", "claim", "control"]
    failing = TwinsEstimates([exact(0.8), exact(0.2)])  # a twin's descent fails: its controls, no pair of theirs
    unworked = MixerEstimates(failing, {"trained": pair, "untrained twins": pair}, contexts)
    assert list(compared(unworked)) == ["trained"] and not_compared(unworked, []) == ""
    assert [c.role for c in mixer_checks(unworked)] == ["claim", "control", "control", "control"]


# --- Issue 77: a decision stands at a plateau, and every control at the headline's budget ------------------


def _decided_record(checks) -> "ClaimRecord":
    from reports.checks import ClaimRecord
    return ClaimRecord("S3.4", 8, "tiny-w96", "t", checks=checks)


def test_a_descent_still_moving_past_the_plateau_fraction_is_unconverged_and_one_that_stopped_stands():
    """A hold at N = 200 that stays on its side at 5N but moved more than PLATEAU of its margin is "unconverged"
    (the statistic has not stopped moving); one that moved less stands; an untrained block's descent (S3's own N =
    200 reached) needs no plateau."""
    from claims.s3_inversion.convergence import PLATEAU, convergence_checks
    from claims.s3_inversion.depth_checks import depth_checks
    from claims.s3_inversion.depth_measures import DepthContext, DepthEstimates

    def record(longer: float):
        e = DepthEstimates(Estimate(0.4, 0.3, 0.5, 0.95, 16, "BCa bootstrap, 1000 resamples"), proportion(np.ones(16)),
                           longer=Estimate(longer, longer - 0.1, longer + 0.1, 0.95, 16, "BCa bootstrap, 1000 resamples"))
        return _decided_record(depth_checks(e, DepthContext(4, "better setting", "", "adapted", 200)))

    moving, stopped = record(0.4 * (1 - 2 * PLATEAU)), record(0.4 * (1 - PLATEAU / 2))
    assert moving.failed("claim") == [] and moving.headline.passed  # still on the passing side at 5N ...
    assert [c.key.rsplit("/", 1)[-1] for c in moving.unconverged()] == ["plateau"]  # ... but still moving
    assert stopped.unconverged() == []
    plateau = [c for c in moving.checks if c.key.endswith("/plateau")][0]
    assert plateau.value == pytest.approx(2 * PLATEAU) and plateau.interval == "deterministic"
    decided = moving.checks[0]
    far = Estimate(0.1, 0.05, 0.15, 0.95, 16, "BCa bootstrap, 1000 resamples")
    assert len(convergence_checks(decided, far, 200)) == 2  # a trained block below S3's 2000: a plateau asked
    assert len(convergence_checks(decided, far, 200, untrained=True)) == 1  # 5N ≥ S3's own 200: none
    assert len(convergence_checks(decided, far, 400)) == 1  # 5N = 2000 reached S3's own N for a trained block


def test_a_failure_still_moving_is_unconverged_not_a_finding():
    """A failure that stays on its failing side at 5N but moved past the fraction is not confirmed: unconverged."""
    from claims.s3_inversion.depth_checks import depth_checks
    from claims.s3_inversion.depth_measures import DepthContext, DepthEstimates

    boot = "BCa bootstrap, 1000 resamples"
    e = DepthEstimates(Estimate(-0.4, -0.5, -0.3, 0.95, 16, boot), proportion(np.ones(16)),
                       longer=Estimate(-0.1, -0.15, -0.05, 0.95, 16, boot))
    rec = _decided_record(depth_checks(e, DepthContext(4, "better setting", "", "adapted", 200)))
    assert rec.failed("claim") and [c.key.rsplit("/", 1)[-1] for c in rec.unconverged()] == ["plateau"]


def test_a_control_that_fails_only_at_the_later_budget_fails_the_record():
    """S3.14's gap control is checked again at 5N, the budget the headline share comes from: a gap that vanished
    there fails the record (red) though it passed at N."""
    from claims.s3_inversion.layers_checks import layers_checks
    from claims.s3_inversion.layers_measures import LayersContext, LayersEstimates

    boot = "BCa bootstrap, 1000 resamples"
    e = LayersEstimates(Estimate(0.1, 0.0, 0.2, 0.95, 16, boot), Estimate(0.3, 0.25, 0.35, 0.95, 16, boot),
                        longer=Estimate(0.11, 0.01, 0.21, 0.95, 16, boot),
                        longer_advantage=Estimate(-0.2, -0.25, -0.15, 0.95, 16, boot))
    rec = _decided_record(layers_checks(e, LayersContext("", 200)))
    assert rec.unconverged() == [] and [c.name for c in rec.failed("control")] == [
        "block 1's advantage over block 3 (the gap the share is a fraction of), after 5N = 1000 steps"]
    assert [c for c in rec.checks if c.name.startswith("block 1's advantage") and c.passed]  # it passed at N


def test_s3s_own_setting_is_shown_beside_the_headline_and_a_disagreement_is_said():
    """Issue 77, item 2: the claim check again in S3's own setting is a reading (it decides nothing); where it fails
    and the headline setting holds, the record's cell and ``settings_disagree`` (its message) say so."""
    from claims.s3_inversion.depth_checks import depth_checks
    from claims.s3_inversion.depth_measures import DepthContext, DepthEstimates
    from reports import tables
    from reports.records import settings_disagree

    boot = "BCa bootstrap, 1000 resamples"

    def record(own: float):
        e = DepthEstimates(Estimate(0.4, 0.3, 0.5, 0.95, 16, boot), proportion(np.ones(16)),
                           source_setting=Estimate(own, own - 0.05, own + 0.05, 0.95, 16, boot))
        rec = _decided_record(depth_checks(e, DepthContext(4, "better setting", "", "adapted", 200)))
        rec.outcome = "holds"
        return rec

    agree, disagree = record(0.2), record(-0.2)
    [reading] = disagree.readings()
    assert reading.role == "reading" and reading.key.endswith("/source-setting") and reading.status == "failed"
    assert disagree.headline.passed and disagree.failed("claim") == []  # the headline setting decides
    assert settings_disagree(agree) == "" and "(S3's own setting disagrees)" not in tables.cell(agree)
    assert settings_disagree(disagree).startswith("S3's own setting disagrees: token accuracy, block 1 minus block 4")
    assert "(S3's own setting disagrees)" in tables.cell(disagree)
