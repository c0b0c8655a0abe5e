"""S3's fixtures: the session's inversions (``claims.s3_inversion.inversions``), at each look's sample."""

import pytest

from claims.s3_inversion.inversions import Inversions
from claims.s3_inversion.scale import Scale


@pytest.fixture(scope="session")
def session_inversions(settings, pool) -> Inversions:
    """The session's :class:`Inversions` (one per session; runs are cached across S3's tests)."""
    return Inversions(pool, settings.seed, Scale.of(settings.source_scale))


@pytest.fixture
def inversions(session_inversions, sample_scale) -> Inversions:
    """The session's inversions at this look's sample (``fixtures.rounds``): the first look's, or a multiple."""
    return session_inversions.at(sample_scale)
