"""S4's fixtures: the similar-strings approximation of a seed-sibling group (``approximation``)."""

import pytest

from claims.s4_ffn.approximation import measure


@pytest.fixture(scope="session")
def approximation(pool, model_name, corpus, settings):
    """S4's similar-strings approximation on a seed-sibling group's first member, computed once per group for
    S4.6-S4.8 (``claims.s4_ffn.approximation``)."""
    return measure(pool, model_name, corpus, settings.seed, settings.zoo)
