"""S4.6's similarity stage against its own matrix multiplications (issue 9: at most 2× on this machine).

The stage (``latent_instruments.similar_strings.similar_string_counts``) streams the strings in
chunks: one matmul of chunk × prompts cosines, the strict threshold, and the hits' next-token
counts (a sparse product). Its bound is the cosine matmuls alone, over the same chunks. Shapes of
the tiny profile's S4.6: 2,000 prompts, the 863,952 unique 10-character strings of the
1,115,394-character text with their real next-character counts, tiny-w96's 96 dimensions (random
unit directions), one block and one threshold, float32, CPU. Each
benchmark's ``extra_info`` has the shape and, on the second of the pair, ``stage_over_matmul`` =
stage ÷ matmuls on their fastest rounds; ``strings_per_second`` is prompts × strings per second.
"""

import numpy as np
import pytest
import torch

from claims.s4_ffn.approximation import STRING_LENGTH, TEXT_CHARS
from latent_instruments.similar_strings import CHUNK, similar_string_counts
from latent_instruments.strings import StringTable
from models.corpus import load_corpus
from models.tokenization import corpus_tokenizer

SEED = 0
PROMPTS, D_MODEL, THRESHOLD = 2_000, 96, 0.9
SMOKE_STRINGS = 10_000  # with --benchmark-disable (make test): once, small
_FASTEST: dict[str, float] = {}


@pytest.fixture(scope="module")
def problem(request):
    """(queries (P, d), keys (n, d) float16 unit rows, next counts (n, V)) on the CPU: random directions, and the
    real next-character counts of the corpus text's unique strings (their sparsity sets the counting's cost)."""
    corpus = load_corpus()
    tokenizer = corpus_tokenizer("char", corpus)
    table = StringTable.of(np.asarray(tokenizer.encode(corpus.train[:TEXT_CHARS])), STRING_LENGTH, tokenizer.vocab_size)
    strings = len(table) if not request.config.getoption("benchmark_disable") else SMOKE_STRINGS
    generator = torch.Generator().manual_seed(SEED)
    queries = torch.randn(PROMPTS, D_MODEL, generator=generator)
    keys = torch.randn(strings, D_MODEL, generator=generator)
    keys = (keys / keys.norm(dim=-1, keepdim=True)).half()
    return queries, keys, table.next_counts[:strings]


def _matmuls(queries: torch.Tensor, keys: torch.Tensor) -> None:
    """The stage's cosine matmuls alone: the same chunks, the same float16 -> float32 moves of the keys."""
    q = (queries / queries.norm(dim=-1, keepdim=True)).T.contiguous()
    chunk = CHUNK["cpu"]
    for start in range(0, keys.shape[0], chunk):
        keys[start : start + chunk].float() @ q


def _record(benchmark, kind: str, strings: int) -> None:
    benchmark.extra_info.update(kind=kind, prompts=PROMPTS, strings=strings, d_model=D_MODEL)
    if not benchmark.enabled:
        return
    _FASTEST[kind] = benchmark.stats.stats.min
    benchmark.extra_info["strings_per_second"] = PROMPTS * strings / _FASTEST[kind]
    if len(_FASTEST) == 2:
        benchmark.extra_info["stage_over_matmul"] = _FASTEST["stage"] / _FASTEST["matmul"]


def test_cosine_matmuls_alone(benchmark, problem):
    queries, keys, _ = problem
    benchmark.pedantic(_matmuls, args=(queries, keys), rounds=3 if benchmark.enabled else 1, iterations=1)
    _record(benchmark, "matmul", keys.shape[0])


def test_similarity_stage(benchmark, problem):
    queries, keys, counts = problem
    out = benchmark.pedantic(similar_string_counts, args=(queries, keys, counts, [THRESHOLD]),
                             rounds=3 if benchmark.enabled else 1, iterations=1)
    assert out.shape == (1, PROMPTS, counts.shape[1])
    _record(benchmark, "stage", keys.shape[0])
