"""Throughput of the instruments: spectra, Hellinger distance, inversion steps.

Inputs have the claims' shapes on the tiny profile: hidden states of 32 sequences x 128 tokens x 128
wide (tiny-w128), next-character distributions over the 84-character vocabulary, and S3's inversion of
the first block of a tiny-w128-shaped GPT-2 (random init) on 16 prompts x 16 tokens.
"""

import pytest
import torch

from latent_instruments.distances import hellinger_distance
from latent_instruments.inversion import InversionConfig, descend
from latent_instruments.spectra import LogBins, fit_power_law, power_spectral_density
from models.adapters import adapter_for
from models.forwards import block_output_fn
from models.recipes import MAIN_MODEL, PROFILES
from models.trainer import gpt2_config
from models.loading import from_config

SEED = 0
HIDDEN = (32, 128, 128)  # (batch, seq, d_model)
VOCAB = 84  # the character tokenizer's alphabet
INVERSION_PROMPTS, INVERSION_TOKENS = 16, 16  # as claims/s3_inversion
INVERSION_STEPS, INVERSION_ROUNDS = 20, 3


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def hidden() -> torch.Tensor:
    """Hidden states with a decaying spectrum along the sequence (a random walk), float32."""
    return _randn(*HIDDEN, seed=SEED).cumsum(dim=1)


def test_power_spectral_density(benchmark, hidden):
    """Spectra per second: one (32, 128, 128) hidden state to its per-sequence PSD."""
    benchmark.group = "instruments"
    benchmark.extra_info["shape"] = list(HIDDEN)
    benchmark(power_spectral_density, hidden)


def test_fit_power_law(benchmark, hidden):
    """Power-law fits per second, on the mean spectrum of the batch."""
    freqs, psd = power_spectral_density(hidden)
    bins = LogBins.of(freqs)
    benchmark.group = "instruments"
    benchmark.extra_info["n_freq"] = freqs.numel()
    benchmark(fit_power_law, bins, psd.mean(dim=0))


def test_hellinger_distance(benchmark):
    """Hellinger distances per second between two (32, 128, 84) batches of distributions."""
    p = torch.softmax(_randn(*HIDDEN[:2], VOCAB, seed=SEED + 1), dim=-1)
    q = torch.softmax(_randn(*HIDDEN[:2], VOCAB, seed=SEED + 2), dim=-1)
    benchmark.group = "instruments"
    benchmark.extra_info["shape"] = list(p.shape)
    benchmark(hellinger_distance, p, q)


@pytest.mark.parametrize("steps", [INVERSION_STEPS], ids=lambda n: f"{n}-steps")
def test_inversion(benchmark, steps):
    """Inversions of ``steps`` gradient steps per second; extra_info["steps_per_second"] is steps x that."""
    recipe = next(r for r in PROFILES["tiny"] if r.name == MAIN_MODEL["tiny"])
    model = from_config(gpt2_config(recipe, VOCAB), SEED).eval()
    model.requires_grad_(False)
    weight = model.get_input_embeddings().weight.detach()
    ids = torch.randint(0, VOCAB, (INVERSION_PROMPTS, INVERSION_TOKENS), generator=torch.Generator().manual_seed(SEED))
    layer = block_output_fn(model, adapter_for(model), 0, INVERSION_TOKENS)

    def invert():  # S3's own setting (latent_instruments.inversion.InversionConfig's defaults)
        return descend(layer, weight[ids], InversionConfig(steps=steps), torch.Generator().manual_seed(SEED))

    benchmark.group = "instruments"
    benchmark.extra_info.update(steps=steps, prompts=INVERSION_PROMPTS, tokens=INVERSION_TOKENS, model=recipe.name)
    benchmark.pedantic(invert, rounds=INVERSION_ROUNDS, warmup_rounds=1, iterations=1)
    if benchmark.enabled:
        benchmark.extra_info["steps_per_second"] = steps / benchmark.stats.stats.mean
