"""A model's held-out loss, measured by the suite itself: a user's folder carries no training curve (issue 33).

S3.5's convergence gate compares how well a ladder's rungs trained. Models of one ladder may tokenize
differently (a sub-word model's vocabulary grows with its family), so the loss is given per character of the
text, in bits, which any two tokenizers share.
"""

import hashlib
import math

import torch

from latent_instruments.errors import require_finite
from models.loading import LoadedModel

HELD_OUT_CHARACTERS = 20_000  # of the run's validation text: ~5,000 sub-word tokens, seconds for a 7B model on a GPU
WINDOWS_PER_BATCH = 16  # context windows per forward pass
_MEASURED: dict[tuple[str, str, str], float] = {}  # (model, weights digest, text digest) -> bits per character


def held_out_bits_per_character(loaded: LoadedModel, text: str, characters: int = HELD_OUT_CHARACTERS) -> float:
    """Next-token loss on held-out text, in bits per character.

    The first ``characters`` of ``text`` are tokenized by the model's own tokenizer and cut into windows of its
    context; every token after a window's first is predicted. The summed NLL (nats) over ln 2, divided by the
    characters those predicted tokens cover (the text's characters times their share of its tokens). Measured
    once per model, weights and text in a process (S3.5's two variants read it twice).

    Args:
        loaded: the model, with its tokenizer.
        text: held-out text, e.g. the run's corpus's validation split.
        characters: how much of it to read.
    Returns:
        bits per character (lower is better; a uniform guess over 84 characters is 6.4).
    Raises:
        ValueError: for text that tokenizes to fewer than 2 tokens.
        NonFiniteError: if the loss is NaN or inf.
    """
    text = text[:characters]
    key = (loaded.name, loaded.weights_sha256, hashlib.sha256(text.encode()).hexdigest())
    if key not in _MEASURED:
        _MEASURED[key] = _bits_per_character(loaded, text)
    return _MEASURED[key]


@torch.no_grad()
def _bits_per_character(loaded: LoadedModel, text: str) -> float:
    ids = torch.tensor(loaded.tokenizer.encode(text), dtype=torch.long)
    if ids.numel() < 2:
        raise ValueError(f"held-out text of {len(text)} characters gives {ids.numel()} tokens; need at least 2")
    context = min(loaded.context, ids.numel())
    full = ids.numel() // context
    batches = list(ids[:full * context].view(full, context).split(WINDOWS_PER_BATCH))  # (≤ 16, context) each
    if ids.numel() - full * context > 1:
        batches.append(ids[full * context:][None])  # the shorter last window
    nats, predicted = 0.0, 0
    for w in batches:
        logits = loaded.model(w.to(loaded.input_device)).logits[:, :-1].double()  # (windows, context − 1, vocab)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten().to(logits.device),
                                                 reduction="sum")
        require_finite(loss, "held-out loss")
        nats += float(loss)
        predicted += w[:, 1:].numel()
    return nats / math.log(2) / (len(text) * predicted / ids.numel())
