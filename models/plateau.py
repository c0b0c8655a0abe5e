"""Is a zoo model trained to a plateau? (issue 77: a verdict is about a converged subject.)

A recipe is at a plateau where the same recipe trained twice as long, its schedule stretched (steps and the
learning-rate drop both doubled: :func:`stretched`), lowers the held-out loss by less than :data:`PLATEAU_GAIN`.
Both models are measured on the same held-out text, the first :data:`HELD_OUT_CHARACTERS` of the corpus's validation
split, in bits per character (``models.evaluation``: one number a char and a sub-word model share), not on the
trainer's one validation batch, whose noise is about the size of the gain being judged.

``python -m models plateau [NAMES] [--write]`` measures it (the doubled run is trained into the cache, a
maintainer's step, never inside pytest) and, with ``--write``, keeps it in the shipped manifest beside the model's
own loss (``models/shipped/manifest.json``: ``models[NAME].plateau``); the report's models table shows it. A
recipe that ends behind a late learning-rate drop can look flat while its loss still falls: the doubled run, which
drops as late again, says whether it does.
"""

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import torch
from transformers import AutoModelForCausalLM

import models.mixer  # noqa: F401 (registers the masked mixer with the Auto classes)
from models.corpus import Corpus
from models.evaluation import held_out_bits_per_character
from models.identity import file_sha256
from models.recipes import Recipe
from models.tokenization import tokenizer_from_json

PLATEAU_GAIN = 0.01  # issue 77: twice the training lowers the held-out loss by less than 1 %
HELD_OUT_CHARACTERS = 200_000  # of the validation split: ~0.3 % standard error on a tiny model's loss, a third of the gain


def stretched(recipe: Recipe, factor: int = 2) -> Recipe:
    """The same recipe trained ``factor`` times as long, its schedule stretched: steps, the learning-rate drop and
    the evaluation interval all scaled; named ``<name>-x<factor>`` (its own checkpoint)."""
    return replace(recipe, name=f"{recipe.name}-x{factor}", steps=recipe.steps * factor,
                   lr_drop_step=recipe.lr_drop_step * factor, eval_every=recipe.eval_every * factor)


@dataclass(frozen=True)
class Plateau:
    """A recipe's held-out loss and its doubled run's.

    Attributes:
        steps, doubled_steps: the two trainings' optimizer steps.
        bits_per_character, doubled_bits_per_character: their held-out loss (bits per character).
        characters: how much of the validation split both were measured on.
    """

    steps: int
    bits_per_character: float
    doubled_steps: int
    doubled_bits_per_character: float
    characters: int = HELD_OUT_CHARACTERS

    @property
    def lowered(self) -> float:
        """The fraction of the held-out loss the doubled run removes (negative: it made it worse)."""
        return 1.0 - self.doubled_bits_per_character / self.bits_per_character

    @property
    def at_plateau(self) -> bool:
        """Whether the doubled run lowers the loss by less than :data:`PLATEAU_GAIN`."""
        return self.lowered < PLATEAU_GAIN

    def to_json(self) -> dict:
        """The manifest's ``plateau`` entry: the numbers, the fraction lowered and the verdict."""
        return {**asdict(self), "lowered": round(self.lowered, 5), "at_plateau": self.at_plateau,
                "threshold": PLATEAU_GAIN}

    def describe(self) -> str:
        """One line: "1.792 bits/char at 700 steps, 1.701 at 1400 (5.1 % lower): not at a plateau (needs < 1 %)"."""
        verdict = "at a plateau" if self.at_plateau else "not at a plateau"
        return (f"{self.bits_per_character:.4g} bits/char at {self.steps} steps, {self.doubled_bits_per_character:.4g} "
                f"at {self.doubled_steps} ({self.lowered:.1%} lower): {verdict} (needs < {PLATEAU_GAIN:.0%})")


@torch.no_grad()
def held_out(folder: Path, corpus: Corpus, characters: int = HELD_OUT_CHARACTERS) -> float:
    """A checkpoint folder's held-out loss in bits per character on the first ``characters`` of the validation split
    (``models.evaluation.held_out_bits_per_character``), loaded from safetensors on the CPU.

    Raises:
        OSError: for a folder without a model; ValueError, NonFiniteError: as ``held_out_bits_per_character``.
    """
    model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, trust_remote_code=False).eval()
    loaded = SimpleNamespace(name=folder.name, weights_sha256=file_sha256(folder / "model.safetensors"), model=model,
                             tokenizer=tokenizer_from_json((folder / "tokenizer.json").read_text()),
                             context=json.loads((folder / "recipe.json").read_text())["context"], input_device="cpu")
    return held_out_bits_per_character(loaded, corpus.validation, characters)


def measure(recipe: Recipe, own: Path, doubled: Path, corpus: Corpus) -> Plateau:
    """The plateau of ``recipe``: its checkpoint ``own`` and its :func:`stretched` training ``doubled``, both measured
    by :func:`held_out`."""
    return Plateau(recipe.steps, held_out(own, corpus), recipe.steps * 2, held_out(doubled, corpus))
