"""S0.6's and S0.7's "pretty close", calibrated out of sample on S0's subject class (issues 64 and 73).

S0 says of Fig 4, the attention residuals of a random-init OPT-125m: "not a completely straight line, but it's pretty
close", and of Fig 5: "the initial MLP residuals are pretty close to the initial hidden states". Each margin is taken
from K = 59 random inits of OPT-125m's architecture (``models/configs/opt-125m.json``) at seeds no run of the suite
uses (:data:`SEEDS`), on windows of the training split (no run's prompts come from it: they are drawn from the
validation split). Since issue 73 each init gives the statistic that decides, the high end of the claim's interval
(the same bootstrap over sequences, at the level and sample size of the claim's last look at that length), once for
each depth L = 2..12 (blocks 1..L of the init: an untrained block does not depend on the blocks after it, so these
are L-block inits of the same architecture). The margin at a depth is the largest of the K high ends: a
distribution-free tolerance bound (Wilks: it lies above the :data:`COVERAGE` point of S0's subject class with
confidence 1 - COVERAGE^K), beside the class's COVERAGE point as the K values estimate it, which states the margin's
own uncertainty; COVERAGE is in the claims' home, ``residual.toml``. "Pretty close" is no more than what 19 in 20 of
S0's subjects show.

    python -m claims.s0_spectra.calibrate_pretty_close --positions 128 --sequences 128 [--device cuda] [--write]

prints the tables; ``--write`` puts them in ``claims/s0_spectra/residual.toml``'s S0.6 and S0.7 calibration tables
for that length (between their markers), which the claim tests read. A judged record uses a margin only at the shape it was
calibrated for: its length, its last look's sequences and its depth. On 2 CPU cores 128 × 128 takes about 40 s an
init (40 minutes); S0's 2048 positions (64 × 2048) about 3 minutes an init, so that length is calibrated on a GPU.
"""

import argparse
import json
import math
import time
import warnings

import numpy as np
import torch

from claims.s0_spectra.calibration_tables import (  # noqa: F401 (table and markers: the command's, tested)
    CATALOGUE, CLAIMS, SUBJECT, WINDOW_SEED, check_writable, markers, table, write,
)
from fixtures.homes import numbers

COVERAGE = numbers(CATALOGUE, "COVERAGE")  # "pretty close": no more than 19 in 20 of what S0 calls so (residual.toml)
MIN_INITS = math.ceil(math.log(1 - COVERAGE) / math.log(COVERAGE))  # 59: the fewest whose largest is a 95/95 bound
SEEDS = tuple(range(1001, 1001 + MIN_INITS))  # none a run's default seed (0) or a recipe's (1337, 1442, 88, 99999)
DEPTHS = tuple(range(2, 13))  # L = 2..12: blocks 1..L of each 12-block init, one margin per depth a model may have
RESAMPLES = 1000  # latent_instruments.stats.bootstrap's default, the claim's
RUN_SEED = 0  # the run's default --seed: the bootstrap and the position shuffles of the judged records
S0_SOURCE_SHAPE = (8, 2048)  # S0's 8 × 2048 (--prompts 8x2048, docs/gpu.md)


def looks_at(positions: int, sequences: int):
    """The looks (``fixtures.rounds.Rounds``) of a default run at ``positions`` tokens whose last look takes
    ``sequences`` windows: the default shape's at that length (32 → 64 → 128 at 128 tokens, 8 → ... → 64 at 2048),
    else four times fewer windows at first, doubled twice (--prompts N/4 --max-prompts N)."""
    from fixtures.option_checks import PROMPTS, default_max_prompts
    from fixtures.rounds import Rounds

    for n, tokens in (*PROMPTS.values(), S0_SOURCE_SHAPE):
        if tokens == positions and default_max_prompts(n) == sequences:
            return Rounds(n, sequences)
    return Rounds(max(1, sequences // 4), sequences)


def last_look(positions: int) -> int | None:
    """Windows of the claim's last look at ``positions`` tokens, for the shapes runs take by default (the profiles'
    ``PROMPTS`` and S0's 8 × 2048: their looks end at ``default_max_prompts`` of their N): 128 at 128 tokens, 64 at
    2048; None for a length no default shape runs (then --max-prompts of the user's run sets it)."""
    from fixtures.option_checks import PROMPTS, default_max_prompts

    shapes = (*PROMPTS.values(), S0_SOURCE_SHAPE)
    return next((default_max_prompts(n) for n, tokens in shapes if tokens == positions), None)


def training_windows(ids: torch.Tensor, tokenizer, n: int, length: int, block: int,
                     seed: int = WINDOW_SEED) -> torch.Tensor:
    """The ``block``-th block of ``n`` text windows of ``length`` tokens from the training split's token ids, in the
    order of ``seed``, disjoint from every other block of that order and from the validation split.

    Returns:
        (n, length) token ids, in corpus order.
    Raises:
        ValueError: if the training split holds too few text windows for that block.
    """
    from fixtures.prompts import not_text

    slots = torch.randperm(ids.numel() // length, generator=torch.Generator().manual_seed(seed)).tolist()
    chosen, skip = [], n * block
    for s in slots:
        window = ids[s * length:(s + 1) * length]
        if not_text(window.tolist(), tokenizer):
            continue
        if skip:
            skip -= 1
            continue
        chosen.append(s)
        if len(chosen) == n:
            return torch.stack([ids[s * length:(s + 1) * length] for s in sorted(chosen)])
    raise ValueError(f"the training split holds fewer than {n * (block + 1)} text windows of {length} tokens")


def high_ends(units: np.ndarray, by_depth, depths: int, confidence: float) -> list[float]:
    """The high end of the interval the claim takes of a statistic at each depth, from one bootstrap over sequences
    with the claim's resamples, level and method (``latent_instruments.stats.bootstrap``: the same rows, BCa).

    Args:
        units: (sequences, ...) one init's spectra.
        by_depth: maps rows of ``units`` (k, ...) to the statistic at every depth of :data:`DEPTHS`, shape (depths,).
        depths: how many depths ``by_depth`` gives.
        confidence: the interval's level (the claim's looks', :func:`looks_at`).
    Returns:
        one high end per depth.
    """
    from scipy import stats

    def resampled(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        # every resample's and jackknife sample's rows at once, run in turn, as stats.bootstrap runs them
        idx = np.moveaxis(np.asarray(idx), axis, -1)
        rows = idx.reshape(-1, idx.shape[-1]).astype(int)
        out = np.array([by_depth(units[row]) for row in rows])
        return np.moveaxis(out, -1, 0).reshape((depths, *idx.shape[:-1]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.bootstrap((np.arange(units.shape[0]),), resampled, vectorized=True, n_resamples=RESAMPLES,
                             confidence_level=confidence, method="BCa",
                             rng=np.random.default_rng(RUN_SEED)).confidence_interval
    return [float(h) for h in ci.high]


def bend_by_depth(bins, attn: np.ndarray) -> tuple[np.ndarray, object]:
    """S0.6's units and statistic at every depth of :data:`DEPTHS`: the largest |bend| of blocks 2..L beyond a straight
    law's (:func:`claims.s0_spectra.bends.largest_later_bend`); attn (sequences, n_blocks, n_freq). Blocks 1..L of an
    init are an L-block init of the same architecture: an untrained block's output does not depend on later blocks."""
    from claims.s0_spectra.bends import bends, straight_bends

    straight, last = straight_bends(bins, attn), np.array(DEPTHS) - 1
    return attn, lambda u: np.maximum.accumulate(np.abs(bends(bins, u, straight)[1:]))[last - 1]


def closeness_by_depth(bins, mlp: np.ndarray, attn: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, object]:
    """S0.7's units and statistic at every depth of :data:`DEPTHS`: the MLP residuals' mean shape distance to the
    block outputs over the attention residuals' (:func:`claims.s0_spectra.residual_spectra.closeness_ratio`, means
    over blocks 1..L); each (sequences, n_blocks, n_freq)."""
    from claims.s0_spectra.residual_spectra import shape_distance

    n, last = mlp.shape[1], np.array(DEPTHS) - 1

    def ratio(u: np.ndarray) -> np.ndarray:
        to_mlp = np.cumsum(shape_distance(bins, u[:, :n], u[:, 2 * n:]))
        return to_mlp[last] / np.cumsum(shape_distance(bins, u[:, n:2 * n], u[:, 2 * n:]))[last]

    return np.concatenate([mlp, attn, hidden], axis=1), ratio


def margin_of(values: list[float]) -> tuple[float, float]:
    """The margin: the largest of ``values`` rounded up to three digits, a distribution-free tolerance bound
    (Wilks): with K values it lies above the :data:`COVERAGE` point of the class with confidence
    ``1 - COVERAGE**K`` (:func:`tolerance_confidence`). Returned with the class's :data:`COVERAGE` point as ``values``
    estimate it (numpy's "linear" quantile): how far the bound sits above that point is the margin's own
    uncertainty over which inits were drawn.

    Raises:
        ValueError: for fewer values than a 95 %/95 % bound needs (:data:`MIN_INITS`).
    """
    if len(values) < MIN_INITS:
        raise ValueError(f"a {COVERAGE:.0%}/{COVERAGE:.0%} tolerance bound needs at least {MIN_INITS} inits, got "
                         f"{len(values)}")
    return math.ceil(max(values) * 1000) / 1000, float(np.quantile(values, COVERAGE, method="linear"))


def tolerance_confidence(inits: int) -> float:
    """The confidence that the largest of ``inits`` values lies above the :data:`COVERAGE` point of their class."""
    return 1 - COVERAGE ** inits


def calibrate(positions: int, sequences: int, device: str = "cpu") -> dict:
    """S0.6's deciding statistic on each init of :data:`SEEDS` at each depth of :data:`DEPTHS`, and each depth's
    margin with its uncertainty.

    Args:
        positions: tokens per sequence (the length the margin is for).
        sequences: windows per init (the claim's last look at that length: 128 at 128 tokens, 64 at 2048).
        device: where the forward passes run (the inits are drawn on the CPU either way).
    Returns:
        {claim: {"positions", "sequences", "confidence", "seeds", "coverage", "window_blocks", "depths": [{"blocks",
        "values" (one high end per seed: decades per decade² for S0.6, a ratio for S0.7), "margin", "point"}]}}.
    Raises:
        ValueError: for a shape the training split cannot fill, or fewer sequences than a bootstrap needs.
    """
    from claims.s0_spectra.model_spectra import SPECTRA_NEEDS, ModelSpectra
    from models.capture import run_with_cache
    from models.corpus import load_shakespeare
    from models.loading import load
    from models.zoo import resolve

    confidence = looks_at(positions, sequences).confidence
    corpus, ids, found = load_shakespeare(), None, {claim: [] for claim in CLAIMS}
    for k, seed in enumerate(SEEDS):
        started = time.perf_counter()
        subject = load(resolve(SUBJECT), corpus, device, torch.float32, seed)
        if ids is None:
            ids = torch.tensor(subject.tokenizer.encode(corpus.train))
            # disjoint blocks of windows the split can hold, less one for the windows skipped as not text: a block
            # an init where there are enough (128 tokens: 89); else each init draws its own, in an order of its own,
            # so that the inits stay independent (S0's 2048: about 10 blocks for 59 inits) though not disjoint
            blocks = max(1, ids.numel() // (sequences * positions) - 1)
        batch = training_windows(ids, subject.tokenizer, sequences, positions,
                                 *((k, WINDOW_SEED) if blocks >= len(SEEDS) else (0, WINDOW_SEED + 1 + k))).to(device)
        spectra = ModelSpectra(run_with_cache(subject.model, subject.adapter, batch, names=SPECTRA_NEEDS), RUN_SEED)
        n = spectra.n_blocks
        statistics = {"S0.6": bend_by_depth(spectra.bins, spectra.attn),
                      "S0.7": closeness_by_depth(spectra.bins, spectra.mlp, spectra.attn, spectra.hidden[:, -n:])}
        for claim, (units, by_depth) in statistics.items():
            found[claim].append([round(h, 5) for h in high_ends(units, by_depth, len(DEPTHS), confidence)])
        print(json.dumps({"seed": seed, **{c: found[c][-1] for c in CLAIMS},
                          "seconds": round(time.perf_counter() - started, 1)}), flush=True)
        del subject, spectra
    return {claim: {"positions": positions, "sequences": sequences, "confidence": round(confidence, 6),
                    "seeds": list(SEEDS), "coverage": COVERAGE, "window_blocks": blocks,
                    "depths": [by_depth_margin(depth, [v[i] for v in found[claim]]) for i, depth in enumerate(DEPTHS)]}
            for claim in CLAIMS}


def by_depth_margin(depth: int, values: list[float]) -> dict:
    """One depth's calibration: {"blocks", "values" (one high end per init), "margin", "point" (the class's
    :data:`COVERAGE` point as the values estimate it)}."""
    margin, point = margin_of(values)
    return {"blocks": depth, "values": values, "margin": margin, "point": round(point, 5)}


def subject_context() -> int:
    """The context length of :data:`SUBJECT` (its config's ``max_position_embeddings``), tokens."""
    from models.zoo import REFERENCES

    return int(json.loads(REFERENCES[SUBJECT].read_text())["max_position_embeddings"])


def check_arguments(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """Check the command line before the calibration starts (issue 74, cases 1 and 14).

    Returns:
        the torch device to run on (``auto`` resolved).
    Raises:
        SystemExit: (``parser.error``, status 2) for --positions below 2 or past the subject's context
            (:func:`subject_context`), --sequences below the bootstrap's 2, a device not there, and with --write:
            another --sequences than the claims' last look at that length (:func:`last_look`), a catalogue without
            that length's markers, or one that cannot be written.
    """
    import pytest

    from fixtures.option_checks import check_device

    if args.positions < 2:
        parser.error(f"--positions {args.positions}: a bend needs at least 2 tokens per sequence; pass e.g. 128")
    context = subject_context()
    if args.positions > context:
        parser.error(f"--positions {args.positions}: {SUBJECT}'s context is {context} tokens; pass at most {context}")
    if args.sequences < 2:
        parser.error(f"--sequences {args.sequences}: the interval is a bootstrap over windows, which needs at least "
                     f"2; pass the claims' last look at that length (e.g. 128 at 128 tokens)")
    try:
        device = check_device(args.device)
    except pytest.UsageError as err:
        parser.error(str(err))
    if args.write:
        expected = last_look(args.positions)
        if expected is not None and args.sequences != expected:
            parser.error(f"--sequences {args.sequences}: S0.6's and S0.7's last look at {args.positions} tokens takes "
                         f"{expected} windows, and a margin made from another sample size is not those checks' "
                         f"margin; pass --sequences {expected} to --write, or leave out --write to only print it")
        try:
            check_writable(args.positions, CATALOGUE)
        except ValueError as err:
            parser.error(str(err))
    return device


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m claims.s0_spectra.calibrate_pretty_close", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, required=True, help="tokens per sequence (128, or S0's 2048)")
    parser.add_argument("--sequences", type=int, required=True, help="windows per init (the last look's: 128, 64)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--write", action="store_true", help="write the tables into claims/s0_spectra/residual.toml")
    args = parser.parse_args(argv)
    device = check_arguments(args, parser)
    calibrations = calibrate(args.positions, args.sequences, device)
    print("".join(table(claim, c) for claim, c in calibrations.items()), end="")
    if args.write:
        write(calibrations, CATALOGUE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
