"""S0.1 and S0.2: the spectra of the embedding layers, before any block.

S0.1 — token embeddings (before positions) have a flat power spectrum, trained or not.
S0.2 — in a trained model, adding learned position embeddings raises low-frequency power; untrained, it does not.
"""

import numpy as np
import pytest

from claims.s0_spectra.conftest import SPECTRA_NEEDS, mean_fit
from latent_instruments.stats import Estimate
from reports.checks import Check


# S0 Fig 2: the final layers' law spans about one decade of power over the 3.0 decades of frequency of 2047
# positions, an exponent of about -1/3. "Flat" (uniform power) is taken as an exponent within a third of that:
FLAT_SLOPE = 0.1


@pytest.mark.claim("S0.1", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("trained", "untrained", "reference", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "shuffled_embed")
def test_token_embeddings_have_a_flat_spectrum(model_name, spectra, claim):
    """S0.1: the fitted power-law exponent of the token-embedding states is within ±0.1 of zero.

    The control is the same embeddings with their positions shuffled within each
    sequence: white by construction, so its exponent must be within the band too,
    or the instrument (binning, first-token drop) is biased and a flat verdict
    would mean nothing.
    """
    bins, embed = spectra.bins, spectra.hidden[:, spectra.labels.index("embed")]  # (batch, n_freq)
    slope = claim.bootstrap(embed, lambda u: float(mean_fit(bins, u).slope))
    shuffled = claim.bootstrap(spectra.shuffled_embed, lambda u: abs(float(mean_fit(bins, u).slope)))
    derivation = (f"S0 Fig 2/3: 'uniform power across frequency just after the initial token embeddings'. S0 gives "
                  f"no number; flat is read as an exponent within ±{FLAT_SLOPE}, a third of the about −1/3 of the "
                  "final layers' law in the same figure (one decade over 3.0 decades of frequency, S0.4), so flat "
                  "and power law cannot be confused; the interval must lie inside the band")
    claim.record(
        [
            Check.of("token-embedding exponent, above the lower edge", slope, "log-log slope", ">", -FLAT_SLOPE,
                     derivation),
            Check.of("token-embedding exponent, below the upper edge", slope, "log-log slope", "<", FLAT_SLOPE,
                     derivation),
            Check.of("shuffled-position control: magnitude of the shuffled embeddings' exponent", shuffled,
                     "log-log slope", "<", FLAT_SLOPE, "tokens shuffled within each sequence have a white spectrum "
                     "in expectation; a larger exponent means the instrument tilts spectra, and a flat verdict "
                     "would mean nothing", role="control"),
        ],
        procedure=(f"{embed.shape[0]} held-out sequences of {spectra.positions} tokens (S0: 8 × 2048 of C4), first "
                   f"token dropped, |rfft|² averaged over d_model then sequences; power-law fit over "
                   f"{bins.centers.size} log-spaced bins ({bins.band_decades:.2f} decades of frequency)."),
        details={"exponent": {"token embeddings": slope.value, "shuffled positions": shuffled.value}},
        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {f"{model_name}: token embeddings": {"embed": embed.mean(0).tolist(),
                                                             "shuffled positions": spectra.shuffled_embed.mean(0).tolist()}}},
    )


def _tilt(bins, pos: np.ndarray, tok: np.ndarray) -> float:
    """Low-band gain minus high-band gain, in decades, of tok+pos over tok; pos, tok (batch, n_freq)."""
    p, t = pos.mean(axis=0), tok.mean(axis=0)
    return float(np.log10(p[bins.low].mean() / t[bins.low].mean()) - np.log10(p[bins.high].mean() / t[bins.high].mean()))


def tilt_checks(trained: Estimate, learned: Estimate, hann: Estimate) -> list[Check]:
    """S0.2's claim checks (the tilt, and the trained model's over its twin's) and its Hann-window control.

    The control guards the pass (``guards_pass``): it is the claim's own tilt through another window, so where the
    tilt genuinely fails it fails too, and the record must read as the claim failing (a finding), not as a failed
    control.
    """
    return [
        Check.of("low-frequency tilt added by the position embeddings", trained, "decades", ">", 0.0,
                 "S0 Fig 2: 'an increase in low frequencies after the position embeddings get added'; no number "
                 "is given, so the threshold is the claim's sign, cleared by the low end of the interval"),
        Check.of("tilt of the trained model minus its untrained twin's", learned, "decades", ">", 0.0,
                 "S0 Fig 3: 'at initialization the position embeddings are flat'; the rise must be learned, so "
                 "the trained tilt must exceed the twin's on the same token ids (paired bootstrap)"),
        Check.of("the same tilt, Hann-windowed with each sequence's mean removed", hann, "decades", ">", 0.0,
                 "control: S0's unwindowed periodogram leaks power from the sequence's ends and slow drifts into "
                 "the low band (as S0.3's and S0.10's controls); position embeddings that differ at the first "
                 "few positions, or drift, would tilt it with no low-frequency structure along the sequence. "
                 "The tilt must survive a Hann window (which tapers the ends), by the interval's low end",
                 role="control", guards_pass=True),
    ]


@pytest.mark.claim("S0.2", version=4, sample="prompts")  # 4: the Hann control guards the pass (3: it, 2: more prompts)
@pytest.mark.models("trained", "hf", twin=True)
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "hidden_hann")
def test_learned_positions_raise_low_frequencies(model_name, spectra, twin_spectra, claim):
    """S0.2: adding position embeddings tilts the spectrum toward low frequencies, in the trained model only.

    The tilt is the gain in low-band power (lowest third of the band in log f)
    minus the gain in high-band power (top third), in decades: adding anything
    uncorrelated with the tokens raises all frequencies alike, so only the tilt
    says that the positions carry low-frequency structure.
    """
    if "embed+pos" not in spectra.labels:
        claim.not_informative("no position embeddings are added to the stream (rotary or ALiBi positions act "
                              "inside attention), so there is no tok+pos layer to compare")
    bins, i_tok, i_pos = spectra.bins, spectra.labels.index("embed"), spectra.labels.index("embed+pos")
    paired = np.stack([spectra.hidden[:, [i_tok, i_pos]], twin_spectra.hidden[:, [i_tok, i_pos]]], axis=1)
    trained = claim.bootstrap(paired, lambda u: _tilt(bins, u[:, 0, 1], u[:, 0, 0]))
    learned = claim.bootstrap(paired, lambda u: _tilt(bins, u[:, 0, 1], u[:, 0, 0]) - _tilt(bins, u[:, 1, 1], u[:, 1, 0]))
    twin = _tilt(bins, paired[:, 1, 1], paired[:, 1, 0])
    hann = claim.bootstrap(spectra.hidden_hann[:, [i_tok, i_pos]], lambda u: _tilt(bins, u[:, 1], u[:, 0]))
    claim.record(
        tilt_checks(trained, learned, hann),
        procedure=(f"{spectra.hidden.shape[0]} held-out sequences of {spectra.positions} tokens; mean power over the "
                   "lowest and the top third of the non-zero band in log frequency, of the token embeddings and of "
                   "token + position embeddings (the first block's input)."),
        details={"tilt (decades)": {"trained": trained.value, "untrained twin": twin, "trained, Hann-windowed": hann.value}},

        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {f"{model_name}": {"embed": spectra.hidden[:, i_tok].mean(0).tolist(),
                                           "embed+pos": spectra.hidden[:, i_pos].mean(0).tolist()},
                         f"{model_name}:untrained (control)": {
                             "embed": twin_spectra.hidden[:, i_tok].mean(0).tolist(),
                             "embed+pos": twin_spectra.hidden[:, i_pos].mean(0).tolist()}}},
    )
