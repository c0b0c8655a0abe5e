"""S0's fixtures: the subject's spectra and its twin's, at each look (``model_spectra``: what they hold)."""

import numpy as np
import pytest

from claims.s0_spectra.model_spectra import SPECTRA_NEEDS, ModelSpectra, Spectra, arrays_of, declared_arrays
from models.zoo import resolve


def _spectra_of(pool, name: str, scale: int, seed: int, arrays: tuple[str, ...]) -> Spectra:
    """One test's declared arrays at one look: the first from the model's shared capture, a later one streamed."""
    captured = pool.capture(name)
    first = captured.memo("spectra", lambda: ModelSpectra(captured.cache, seed))
    if scale == 1:
        return Spectra(first, arrays_of(first, arrays))
    batch = pool.prompts(name, scale).shape[0]
    parts = pool.stream(name, scale, "spectra: " + ", ".join(sorted(arrays)), SPECTRA_NEEDS,
                        lambda cache, rows: arrays_of(ModelSpectra(cache, seed, rows, batch), arrays))
    return Spectra(first, {array: np.concatenate([part[array] for part in parts]) for array in arrays})


@pytest.fixture
def spectra(request, pool, model_name, settings, sample_scale) -> Spectra:
    """The subject's declared :class:`Spectra` at this look (the model's spectra computed once per look's batch)."""
    return _spectra_of(pool, model_name, sample_scale, settings.seed, declared_arrays(request.node))


@pytest.fixture
def twin_spectra(request, pool, model_name, settings, sample_scale) -> Spectra:
    """The same for the subject's untrained twin (the control of S0.2 and S0.5), on the same token ids."""
    return _spectra_of(pool, resolve(model_name).twin, sample_scale, settings.seed, declared_arrays(request.node))
