"""S0.1 and S0.2: the spectra of the embedding layers, before any block.

S0.1 — token embeddings (before positions) have a flat power spectrum, trained or not.
S0.2 — in a trained model, adding learned position embeddings raises low-frequency power; untrained, it does not.
"""

import pytest

from claims.s0_spectra.model_spectra import SPECTRA_NEEDS
from claims.s0_spectra.embedding_checks import flat_checks, tilt_checks
from claims.s0_spectra.embedding_measures import measure_flat, measure_tilt
from fixtures.catalogue_text import procedure


@pytest.mark.claim("S0.1", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("trained", "untrained", "reference", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "shuffled_embed")
def test_token_embeddings_have_a_flat_spectrum(model_name, spectra, claim):
    """S0.1: the fitted power-law exponent of the token-embedding states is within ±FLAT_SLOPE of zero (the
    topic's home, ``embedding.toml``).

    The control is the same embeddings with their positions shuffled within each
    sequence: white by construction, so its exponent must be within the band too,
    or the instrument (binning, first-token drop) is biased and a flat verdict
    would mean nothing.
    """
    e = measure_flat(spectra, claim)
    bins, embed = spectra.bins, spectra.hidden[:, spectra.labels.index("embed")]  # (batch, n_freq)
    claim.record(
        flat_checks(e),
        procedure=procedure("S0.1/token-embeddings-have-a-flat-spectrum", sequences=embed.shape[0],
                            positions=spectra.positions, bins=bins.centers.size,
                            band_decades=bins.band_decades),
        details={"exponent": {"token embeddings": e.slope.value, "shuffled positions": e.shuffled.value}},
        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {f"{model_name}: token embeddings": {"embed": embed.mean(0).tolist(),
                                                             "shuffled positions": spectra.shuffled_embed.mean(0).tolist()}}},
    )


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
    e, shown = measure_tilt(spectra, twin_spectra, claim)
    bins, i_tok, i_pos = spectra.bins, spectra.labels.index("embed"), spectra.labels.index("embed+pos")
    claim.record(
        tilt_checks(e),
        procedure=procedure("S0.2/learned-positions-raise-low-frequencies",
                            sequences=spectra.hidden.shape[0], positions=spectra.positions),
        details={"tilt (decades)": {"trained": e.trained.value, "untrained twin": shown.twin,
                                    "trained, Hann-windowed": e.hann.value}},
        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {f"{model_name}": {"embed": spectra.hidden[:, i_tok].mean(0).tolist(),
                                           "embed+pos": spectra.hidden[:, i_pos].mean(0).tolist()},
                         f"{model_name}:untrained (control)": {
                             "embed": twin_spectra.hidden[:, i_tok].mean(0).tolist(),
                             "embed+pos": twin_spectra.hidden[:, i_pos].mean(0).tolist()}}},
    )
