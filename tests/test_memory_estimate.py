"""A capture is planned against the machine's memory before it runs (issue 59, item 2).

``--prompts 32x2048`` on ref-opt-125m under a 12 GB limit ran 70 s, peaked at 9.5 GiB and became an error record
("you tried to allocate 6442450944 bytes": the bare forward pass's eager attention scores of one block,
32 × 12 × 2048 × 2048 float32). Built here from OPT-125m's widths, without the model.
"""

from types import SimpleNamespace

import pytest
import torch

from fixtures.memory_estimate import CaptureTooLarge, check_capture, estimate_capture, rows_that_fit

GIB = 2**30


def opt_125m() -> SimpleNamespace:
    """What the estimate reads of OPT-125m: its config's widths and its parameters' dtype (float32)."""
    config = SimpleNamespace(hidden_size=768, num_attention_heads=12, ffn_dim=3072, vocab_size=50272)
    return SimpleNamespace(config=config, parameters=lambda: iter([torch.zeros(1)]))


def s0_names(blocks: int = 12) -> set[str]:
    """S0's residual spectra: each block's attention and MLP outputs and its output, and the embeddings."""
    return {f"blocks.{i}.hook_{h}" for i in range(blocks) for h in ("attn_out", "mlp_out", "resid_post")} | {
        "hook_embed", "hook_pos_embed"}


def test_the_bare_pass_at_32x2048_is_the_allocation_that_failed_and_it_shrinks_to_what_fits():
    bare = estimate_capture(opt_125m(), set(), 32, 2048)
    assert bare.transient == 3 * 6442450944  # three copies of one block's attention scores
    assert rows_that_fit(bare, 12 * GIB) == 17  # of 32 sequences: the pass that only times takes 17
    assert rows_that_fit(bare, 200 * GIB) == 32


def test_a_capture_that_cannot_fit_is_refused_naming_a_size_that_fits():
    est = estimate_capture(opt_125m(), s0_names(), 32, 2048)
    assert 7 * GIB < est.captured < 8 * GIB  # 38 arrays of 32 × 2048 × 768 float32
    with pytest.raises(CaptureTooLarge, match=r"ref-opt-125m: the capture of 32 × 2048 tokens needs about .* use "
                                              r"--prompts 12x2048, or free memory"):
        check_capture(est, 12 * GIB, "ref-opt-125m")
    check_capture(estimate_capture(opt_125m(), s0_names(), 8, 2048), 12 * GIB, "ref-opt-125m")  # S0's own 8 fit
    check_capture(estimate_capture(opt_125m(), s0_names(), 32, 128), 2 * GIB, "ref-opt-125m")  # the CPU's default
    with pytest.raises(CaptureTooLarge, match="a shorter sequence than 2048 tokens"):
        check_capture(est, 1 * GIB, "ref-opt-125m")


def test_the_report_shows_the_largest_planned_capture_beside_the_measured_peak():
    from reports.sections import _planned

    models = {"tiny-w96": {"capture_estimate_mib": 40.2}, "ref-opt-125m": {"capture_estimate_mib": 812.0},
              "broken": {"error": "x"}}
    assert _planned(models) == " (largest capture planned: 812 MiB, ref-opt-125m)"
    assert _planned({"old": {"forward_seconds": 1.0}}) == ""
