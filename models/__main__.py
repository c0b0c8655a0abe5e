"""``python -m models prepare --zoo tiny``: fetch the corpus, train the BPE and the zoo's models.

``python -m models fingerprint NAME...`` prints what each model is, for a ledger entry
(``claims/expected_verdicts.toml``).

The suite would do all of this lazily on first use; running it up front shows
training progress and loss in the terminal, which a captured pytest run hides.
"""

import argparse
import sys
import time

import torch

from models.corpus import CorpusError, load_corpus
from models.recipes import PROFILES
from models.tokenization import train_bpe
from models.trainer import train
from models.zoo import fingerprint, resolve


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 when the corpus cannot be had)."""
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    parser.add_argument("command", choices=["prepare", "fingerprint"])
    parser.add_argument("names", nargs="*", help="fingerprint: model names (zoo names, groups, HF folders)")
    parser.add_argument("--zoo", choices=["auto", *PROFILES], default="auto")
    parser.add_argument("--corpus", help="a UTF-8 text file instead of the Shakespeare corpus")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0, help="fingerprint: the run's --seed (random-init models)")
    args = parser.parse_args(argv)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    zoo = ("full" if device.startswith("cuda") else "tiny") if args.zoo == "auto" else args.zoo
    try:
        corpus = load_corpus(args.corpus)
    except CorpusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "fingerprint":
        for name in args.names:
            print(f"{name}\t{fingerprint(resolve(name), corpus, args.seed)}")
        return 0
    print(f"corpus {corpus.name}: {len(corpus.text):,} characters, sha256 {corpus.sha256[:16]}")
    train_bpe(corpus)
    started = time.perf_counter()
    for recipe in PROFILES[zoo]:
        print(f"{recipe.name}: {train(recipe, corpus, device=device)}")
    print(f"zoo {zoo} ready in {time.perf_counter() - started:.0f} s (cached models are not retrained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
