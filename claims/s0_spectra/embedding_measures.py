"""S0.1 and S0.2's measurements on the embedding layers' spectra: the token embeddings' exponent and the low-band
minus high-band gain of tok+pos over tok. test_embedding.py records what these measure; embedding_checks.py decides;
the numbers the checks decide with are in the topic's home, embedding.toml.
"""

from dataclasses import dataclass

import numpy as np

from claims.s0_spectra.model_spectra import mean_fit
from fixtures.catalogue_text import gate
from latent_instruments.stats import Estimate


@dataclass(frozen=True)
class FlatEstimates:
    """What S0.1's checks decide on, measured on the token-embedding states, over sequences.

    Attributes:
        slope: the power-law exponent of their mean spectrum (log-log slope).
        shuffled: the magnitude of that exponent with positions shuffled within each sequence (white by construction).
    """

    slope: Estimate
    shuffled: Estimate


@dataclass(frozen=True)
class TiltEstimates:
    """What S0.2's checks decide on, over sequences: low-band minus high-band gain of tok+pos over tok (decades).

    Attributes:
        trained: the trained model's tilt.
        learned: its tilt minus its untrained twin's, paired on the same token ids.
        hann: the trained model's tilt, Hann-windowed with each sequence's mean removed.
    """

    trained: Estimate
    learned: Estimate
    hann: Estimate


@dataclass(frozen=True)
class TiltShown:
    """What S0.2's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        twin: the untrained twin's tilt (a point value, decades).
    """

    twin: float = float("nan")


def position_tilt(bins, pos: np.ndarray, tok: np.ndarray) -> float:
    """Low-band gain minus high-band gain, in decades, of tok+pos over tok; pos, tok (batch, n_freq)."""
    p, t = pos.mean(axis=0), tok.mean(axis=0)
    return float(np.log10(p[bins.low].mean() / t[bins.low].mean()) - np.log10(p[bins.high].mean() / t[bins.high].mean()))


def measure_flat(spectra, claim) -> FlatEstimates:
    """S0.1's measurement over sequences: the fitted power-law exponent of the token-embedding states, and the
    absolute exponent of the same embeddings with their positions shuffled within each sequence (the control:
    white by construction).

    Args:
        spectra: the model's spectra (``claims.s0_spectra.model_spectra``) with ``hidden`` and ``shuffled_embed``,
            each (batch, [layers,] n_freq) power.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap`` (fewer than 2 sequences, a statistic not finite).
    """
    bins, embed = spectra.bins, spectra.hidden[:, spectra.labels.index("embed")]  # (batch, n_freq)
    return FlatEstimates(claim.bootstrap(embed, lambda u: float(mean_fit(bins, u).slope)),
                         claim.bootstrap(spectra.shuffled_embed, lambda u: abs(float(mean_fit(bins, u).slope))))


def measure_tilt(spectra, twin_spectra, claim) -> tuple[TiltEstimates, TiltShown]:
    """S0.2's measurement over sequences: the tilt of tok+pos over tok in the trained model, its excess over the
    untrained twin's on the same token ids, and the trained tilt Hann-windowed (the control): (the checks'
    estimates, what the record shows beside them: the twin's tilt).

    Args:
        spectra, twin_spectra: the model's and its twin's spectra with ``hidden`` (and ``hidden_hann``).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where no position embeddings are added to the
            stream.
    """
    if "embed+pos" not in spectra.labels:
        claim.not_informative(gate("S0.2/learned-positions-raise-low-frequencies/no-position-embeddings"))
    bins, i_tok, i_pos = spectra.bins, spectra.labels.index("embed"), spectra.labels.index("embed+pos")
    paired = np.stack([spectra.hidden[:, [i_tok, i_pos]], twin_spectra.hidden[:, [i_tok, i_pos]]], axis=1)
    return TiltEstimates(
        claim.bootstrap(paired, lambda u: position_tilt(bins, u[:, 0, 1], u[:, 0, 0])),
        claim.bootstrap(paired, lambda u: position_tilt(bins, u[:, 0, 1], u[:, 0, 0])
                        - position_tilt(bins, u[:, 1, 1], u[:, 1, 0])),
        claim.bootstrap(spectra.hidden_hann[:, [i_tok, i_pos]], lambda u: position_tilt(bins, u[:, 1], u[:, 0])),
    ), TiltShown(twin=position_tilt(bins, paired[:, 1, 1], paired[:, 1, 0]))
