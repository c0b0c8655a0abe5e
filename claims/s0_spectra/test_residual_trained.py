"""S0.8 - S0.10: the spectra of what a trained model's blocks add, its attention and MLP residuals and updates.

S0.8 — trained attention residuals: spikes in the first three layers, smooth in the middle, a low-frequency
       spike in the last layer (Fig 6).
S0.9 — trained MLP residuals: a large spike in layer 1, smooth afterwards (Fig 7).
S0.10 — early layers add disproportionately more low-frequency power than later layers.

Measurements in ``residual_measures.py`` (statistics in ``residual_spectra.py``), checks in
``residual_checks.py``. S0.10's control is the Hann-windowed
update (leakage).

Controls: each spectral statistic is computed again on the same states with their positions shuffled within each
sequence (white by construction, every token's state kept): a spike, a law or a difference that the shuffled states
show as well comes from the estimator's noise or from single tokens, not from structure along the sequence.
"""

import pytest

from claims.s0_spectra.model_spectra import SPECTRA_NEEDS, early_blocks
from claims.s0_spectra.residual_checks import attention_spike_checks, low_band_checks, mlp_spike_checks
from claims.s0_spectra.residual_measures import (
    AttentionSpikeContext, LowBandContext, measure_attention_spikes, measure_low_band, measure_mlp_spike,
)
from claims.s0_spectra.residual_spectra import block_labels, residual_procedure, spectra_figure, spikes
from reports.plots import series


@pytest.mark.claim("S0.8", version=3, sample="prompts")  # 3: control, spikes above the position-shuffled null
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("attn", "shuffled attn")
def test_trained_attention_residual_spikes(model_name, spectra, claim):
    """S0.8: the early blocks' attention residuals spike more than the middle ones; the last spikes at low frequency."""
    estimates = measure_attention_spikes(spectra, claim)
    bins, attn, n = spectra.bins, spectra.attn, spectra.n_blocks
    size, freq = spikes(bins, attn)
    claim.record(
        attention_spike_checks(estimates, AttentionSpikeContext(early_blocks(n))),
        procedure=residual_procedure(spectra, "each block's attention residual (attn_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(block_labels(n), size, freq)}},
        plot=spectra_figure(model_name, "attention residuals (S0 Fig 6)", bins, attn),
    )


@pytest.mark.claim("S0.9", version=3, sample="prompts")  # 3: control, block 1's spike above the shuffled null
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("mlp", "shuffled mlp")
def test_trained_mlp_residual_spike_in_block_one(model_name, spectra, claim):
    """S0.9: block 1's MLP residual spikes more than any later block's."""
    estimates = measure_mlp_spike(spectra, claim)
    bins, mlp = spectra.bins, spectra.mlp
    size, freq = spikes(bins, mlp)
    claim.record(
        mlp_spike_checks(estimates),
        procedure=residual_procedure(spectra, "each block's MLP residual (mlp_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(block_labels(spectra.n_blocks), size, freq)}},
        plot=spectra_figure(model_name, "MLP residuals (S0 Fig 7)", bins, mlp),
    )


@pytest.mark.claim("S0.10", version=3, sample="prompts")  # 3: control, the Hann-windowed updates agree
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("update", "update_hann")
def test_early_blocks_add_low_frequencies(model_name, spectra, claim):
    """S0.10: the early blocks' updates put a larger share of their power in the low band than later blocks'."""
    estimates, shown = measure_low_band(spectra, claim)
    n = spectra.n_blocks
    claim.record(
        low_band_checks(estimates, LowBandContext(early_blocks(n))),
        procedure=residual_procedure(spectra, "each block's update resid_post − resid_pre (attention + MLP residual)"),
        details={"low-band share by block": dict(zip(block_labels(n), (x.value for x in shown.per_block)))},
        plot={"kind": "bars", "title": f"S0.10 on {model_name}: low-band share of each block's update",
              "categories": block_labels(n), "xlabel": "block", "ylabel": "share of power in the low band",
              "series": {"low-band share": series(shown.per_block)}},
    )
