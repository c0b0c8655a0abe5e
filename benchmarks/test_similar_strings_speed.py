"""S4.6's stages, each against its own bound (issue 66, item 1: goal at most 1.5× on the CPU).

S4.6's pipeline is four stages: the table forward (every unique string through the model, its FFN outputs at the
last position: ``models.string_outputs.compute_directions``), the cosines and the counting (one streamed loop,
``latent_instruments.similar_strings.similar_string_counts``), and the Hellinger distances to the model's
distributions (``latent_instruments.distances.hellinger_distance``). The table forward's bound is a bare forward
pass of the same tokens (no hooks, nothing kept); the similarity stage's, its cosine matmuls alone. Each pair's
second benchmark has ``stage_over_bound`` in its ``extra_info``: stage ÷ bound on their fastest rounds.

The similarity stage:

The stage (``latent_instruments.similar_strings.similar_string_counts``) streams the strings in
chunks: one matmul of chunk × prompts cosines, the strict threshold, and the hits' next-token
counts (a sparse product). Its bound is the cosine matmuls alone, over the same chunks. Shapes of
the tiny profile's S4.6: 2,000 prompts, the 863,952 unique 10-character strings of the
1,115,394-character text with their real next-character counts, tiny-w96's 96 dimensions (random
unit directions), one block and one threshold, float32, CPU. Each
benchmark's ``extra_info`` has the shape and, on the second of the pair, ``stage_over_bound`` = stage ÷ matmuls on
their fastest rounds; ``strings_per_second`` is prompts × strings per second. The table forward: tiny-w96's architecture (random weights: the cost does not depend on them) over
``TABLE_STRINGS`` of the strings.
"""

import time

import numpy as np
import pytest
import torch

from claims.s4_ffn.approximation import STRING_LENGTH, TEXT_CHARS
from latent_instruments.similar_strings import CHUNK, following, similar_string_counts
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


def _record(benchmark, kind: str, bound: str, **info) -> None:
    """``info`` and the fastest round under ``kind``; for a stage whose ``bound`` ran first, ``stage_over_bound``."""
    benchmark.extra_info.update(kind=kind, **info)
    if not benchmark.enabled:
        return
    _FASTEST[kind] = benchmark.stats.stats.min
    if kind != bound and bound in _FASTEST:
        benchmark.extra_info["stage_over_bound"] = _FASTEST[kind] / _FASTEST[bound]


def test_cosine_matmuls_alone(benchmark, problem):
    queries, keys, _ = problem
    benchmark.pedantic(_matmuls, args=(queries, keys), rounds=3 if benchmark.enabled else 1, iterations=1)
    _record(benchmark, "matmul", "matmul", prompts=PROMPTS, strings=keys.shape[0], d_model=D_MODEL)


def test_similarity_stage(benchmark, problem):
    """One block's pass, as S4.6 runs it: the table's next-token counts prepared once (``following``, timed in
    ``extra_info["following_seconds"]``: S4.6 reads them in every one of its 6 blocks × 2-3 variants' passes)."""
    queries, keys, counts = problem
    started = time.perf_counter()
    prepared = following(counts, CHUNK["cpu"], torch.device("cpu"))
    benchmark.extra_info["following_seconds"] = time.perf_counter() - started
    out = benchmark.pedantic(similar_string_counts, args=(queries, keys, prepared, [THRESHOLD]),
                             rounds=3 if benchmark.enabled else 1, iterations=1)
    assert out.shape == (1, PROMPTS, counts.shape[1])
    _record(benchmark, "stage", "matmul", prompts=PROMPTS, strings=keys.shape[0], d_model=D_MODEL)
    if benchmark.enabled:
        benchmark.extra_info["strings_per_second"] = PROMPTS * keys.shape[0] / _FASTEST["stage"]


TABLE_STRINGS = 32 * 2048  # 32 of the table forward's passes (the whole table is 863,952 strings, 422 passes)


@pytest.fixture(scope="module")
def table_model():
    """(subject, StringTable) of tiny-w96's architecture, random weights, eval mode, CPU, and the first
    ``TABLE_STRINGS`` unique strings of the corpus text (``SMOKE_STRINGS`` with --benchmark-disable)."""
    from types import SimpleNamespace

    from models.adapters import adapter_for
    from models.recipes import PREPARED
    from models.trainer import build_model

    corpus = load_corpus()
    tokenizer = corpus_tokenizer("char", corpus)
    table = StringTable.of(np.asarray(tokenizer.encode(corpus.train[:TEXT_CHARS])), STRING_LENGTH, tokenizer.vocab_size)
    recipe = next(r for r in PREPARED["tiny"] if r.name == "tiny-w96")
    torch.manual_seed(SEED)
    model = build_model(recipe, tokenizer.vocab_size).eval()
    subject = SimpleNamespace(model=model, adapter=adapter_for(model), input_device=torch.device("cpu"),
                              d_model=recipe.n_embd)
    return subject, table


def _table(table: StringTable, request) -> StringTable:
    n = SMOKE_STRINGS if request.config.getoption("benchmark_disable") else TABLE_STRINGS
    return StringTable(table.strings[:n], table.next_counts[:n], table.vocab)


def _bare_forwards(model, strings: torch.Tensor) -> None:
    """The table forward's bound: the same passes through the model, no hooks, nothing kept."""
    from models.string_outputs import STRINGS_PER_PASS

    with torch.no_grad():
        for start in range(0, strings.shape[0], STRINGS_PER_PASS):
            model(input_ids=strings[start : start + STRINGS_PER_PASS])


def test_table_forward_bare(benchmark, table_model, request):
    subject, table = table_model
    strings = _table(table, request).strings
    benchmark.pedantic(_bare_forwards, args=(subject.model, strings), rounds=3 if benchmark.enabled else 1,
                       iterations=1)
    _record(benchmark, "table bare", "table bare", strings=strings.shape[0])


def test_table_forward_stage(benchmark, table_model, request):
    from models.string_outputs import compute_directions

    subject, table = table_model
    small = _table(table, request)
    out = benchmark.pedantic(compute_directions, args=(subject, small), rounds=3 if benchmark.enabled else 1,
                             iterations=1)
    assert out.shape == (4, len(small), subject.d_model)
    _record(benchmark, "table stage", "table bare", strings=len(small))


def test_hellinger_stage(benchmark):
    """The last stage: (2,000 prompts, vocab 84) distributions against the model's, float64 (no bound: it is
    milliseconds beside the others)."""
    from latent_instruments.distances import hellinger_distance

    generator = torch.Generator().manual_seed(SEED)
    p, q = (torch.softmax(torch.randn(PROMPTS, 84, generator=generator, dtype=torch.float64), -1) for _ in range(2))
    out = benchmark.pedantic(hellinger_distance, args=(p, q), rounds=5 if benchmark.enabled else 1, iterations=1)
    assert out.shape == (PROMPTS,)
    benchmark.extra_info.update(kind="hellinger", prompts=PROMPTS)
