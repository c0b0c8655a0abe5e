"""S0.3, S0.4 and S0.5: the hidden-state spectrum straightens into a power law with depth, a learned one.

S0.3 — in a trained model the spectrum straightens into a power law as depth grows, layer by layer.
S0.4 — the final layers' law spans about one order of magnitude over the frequency range.
S0.5 — an untrained model does not show the straightening: it is learned.

Straightness is the scatter of the log-binned spectrum about its log-log line
(RMS, in decades), kept apart from the line's slope and span (S0.4): R² mixed
them, and a straight shallow law scored as crooked.
"""

import numpy as np
import pytest

from claims.s0_spectra.model_spectra import SPECTRA_NEEDS, loglog_panels, mean_fit
from claims.s0_spectra.straightening_checks import learned_checks, span_checks, straightening_checks
from claims.s0_spectra.straightening_measures import (
    S0_BAND_DECADES, LastBlockContext, StraighteningContext, learned_straightening, measure_learned,
    measure_span, measure_straightening, span_over_s0_band, straightening,
)
from fixtures.catalogue_text import procedure
from reports.plots import series


@pytest.mark.claim("S0.3", version=5, sample="prompts")  # 5: control, straighter than the position-shuffled stream
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "hidden_hann", "shuffled hidden")
def test_power_law_straightens_with_depth(model_name, spectra, claim):
    """S0.3: the scatter about a power law falls with depth, layer by layer, and the last block's law is one.

    Checks: the Spearman correlation of scatter with depth is negative; the last
    block scatters less than the first block's input; the last block's exponent is
    negative (a power law, not white noise, which is straight too); the
    Hann-windowed, mean-removed spectra straighten too (the leakage check), or
    S0's unwindowed procedure measured leakage rather than the model.
    """
    bins, hidden, start = spectra.bins, spectra.hidden, spectra.start
    labels = spectra.labels
    e = measure_straightening(spectra, claim)
    deviation = mean_fit(bins, hidden).deviation
    deviation_hann = mean_fit(bins, spectra.hidden_hann).deviation
    claim.record(
        straightening_checks(e, StraighteningContext(labels[start], labels[-1])),
        procedure=procedure("S0.3/power-law-straightens-with-depth", sequences=hidden.shape[0],
                            positions=spectra.positions, bins=bins.centers.size,
                            band_decades=bins.band_decades),
        details={
            "per layer": {label: {"scatter (decades)": float(deviation[i]), "scatter, Hann (decades)": float(deviation_hann[i]),
                                  "exponent": float(mean_fit(bins, hidden[:, i]).slope)}
                          for i, label in enumerate(labels)},
        },
        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {**loglog_panels(f"{model_name}: hidden states (S0 Fig 2)", labels, hidden),
                         **loglog_panels(f"{model_name}: Hann-windowed (leakage check)", labels, spectra.hidden_hann)}},
    )


@pytest.mark.claim("S0.4", version=3, sample="prompts")  # 3: control, the law survives a Hann window
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "hidden_hann")
def test_final_power_law_spans_about_one_decade(model_name, spectra, claim):
    """S0.4: the last block's power law falls by about one decade (S0_SPAN) over S0's S0_BAND_DECADES decades of
    frequency (the topic's home, ``straightening.toml``).

    The span scales with the band (a power law's span is |exponent| × decades), so
    the scaled form compares the exponent: S0's ~1 decade over its band is an
    exponent near −1/3, and "about" allows a factor of two in span.
    """
    bins, hidden, labels = spectra.bins, spectra.hidden, spectra.labels
    e, shown = measure_span(spectra, claim)
    claim.record(
        span_checks(e, LastBlockContext(labels[-1])),
        beside_source={"span of the final layers' power law": span_over_s0_band(e.slope.value)},
        procedure=procedure("S0.4/final-power-law-spans-about-one-decade", sequences=hidden.shape[0],
                            positions=spectra.positions, bins=bins.centers.size,
                            band_decades=bins.band_decades),
        scaled=(f"S0 measured the span over {S0_BAND_DECADES:.1f} decades of frequency (2048 tokens); "
                f"{spectra.positions} tokens give "
                f"{bins.band_decades:.2f}, so the exponent (span per decade) is compared"),
        details={"per layer": {label: {"exponent": x.value, "span over this band (decades)": abs(x.value) * bins.band_decades,
                                       "span over S0's band (decades)": span_over_s0_band(x.value)}
                               for label, x in zip(labels, shown.by_layer)}},
        plot={"kind": "lines", "title": f"S0.4 on {model_name}: power-law exponent by layer", "x": list(range(len(labels))),
              "xlabel": "layer (0 = " + labels[0] + ")", "ylabel": "log-log slope",
              "series": {"exponent": series(shown.by_layer),
                         f"S0: −1/3 (1 decade over {S0_BAND_DECADES:.1f})": {"value": [-1 / S0_BAND_DECADES] * len(labels)}}},
    )


@pytest.mark.claim("S0.5", version=3, sample="prompts")  # 3: without the position bump, from block 1; control
@pytest.mark.models("trained", "hf", twin=True)
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("hidden", "hidden_nopos", "shuffled hidden_nopos")
def test_straightening_is_learned(model_name, spectra, twin_spectra, claim):
    """S0.5: the untrained twin straightens less than the trained model, on the same token ids.

    Learned positions confound S0.3's comparison: the trained model's position embedding adds a
    low-frequency bump (S0.2) that makes its first block's input crooked, and the residual
    stream carries it unchanged to every layer, so "straightens more" could be the bump alone.
    Here the position embedding is subtracted from every layer's state, and the straightening is
    counted from block 1's output (block 1 of both models applied, the bump's own start left out).
    """
    e, shown = measure_learned(spectra, twin_spectra, claim)
    bins, first = spectra.bins, spectra.labels.index("block 1")
    with_positions = np.stack([spectra.hidden, twin_spectra.hidden], axis=1)
    start = spectra.start
    claim.record(
        learned_checks(e, LastBlockContext(spectra.labels[-1])),
        procedure=procedure("S0.5/straightening-is-learned", sequences=spectra.hidden.shape[0],
                            positions=spectra.positions),
        details={"straightening (decades)": {
            "trained, positions removed, from block 1": straightening(bins, spectra.hidden_nopos, first),
            "untrained twin, positions removed, from block 1": shown.twin.value,
            f"trained minus twin with positions, from {spectra.labels[start]} (S0.3's, confounded)":
                learned_straightening(bins, with_positions, start),
            f"confound: scatter at {spectra.labels[start]}, trained minus twin":
                float(mean_fit(bins, spectra.hidden[:, start]).deviation - mean_fit(bins, twin_spectra.hidden[:, start]).deviation),
        }},
        plot={"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
              "panels": {**loglog_panels(f"{model_name}, positions removed", spectra.labels, spectra.hidden_nopos),
                         **loglog_panels(f"{model_name}:untrained, positions removed", twin_spectra.labels,
                                         twin_spectra.hidden_nopos)}},
    )
