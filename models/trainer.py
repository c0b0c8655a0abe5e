"""A small trainer: a recipe and a corpus in, a cached safetensors checkpoint out.

The model is Hugging Face's GPT-2 architecture configured as S4's model:
pre-LN blocks, ReLU FFN with 4x expansion, learned absolute positions and an
untied output head. A checkpoint is a local HF folder (``config.json`` +
``model.safetensors``) plus ``recipe.json``, ``tokenizer.json`` and
``loss_curve.json``, written atomically under
``<cache>/checkpoints/<name>-<key>/``.
"""

import json
import math
import time
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

from models.cache import atomic_directory, cache_root
from models.corpus import Corpus
from models.recipes import Recipe
from models.runtime import pin_cpu_threads
from models.tokenization import CharTokenizer


def gpt2_config(recipe: Recipe, vocab_size: int) -> GPT2Config:
    """S4's architecture in HF's GPT-2 classes (pre-LN is GPT-2's own layout)."""
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=recipe.context,
        n_embd=recipe.n_embd,
        n_layer=recipe.n_layer,
        n_head=recipe.n_head,
        n_inner=4 * recipe.n_embd,
        activation_function="relu",
        resid_pdrop=recipe.dropout,
        embd_pdrop=recipe.dropout,
        attn_pdrop=recipe.dropout,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
    )


def checkpoint_dir(recipe: Recipe, corpus: Corpus, tokenizer: CharTokenizer) -> Path:
    """Where the checkpoint of this recipe on this corpus lives (it may not exist yet)."""
    return cache_root() / "checkpoints" / f"{recipe.name}-{recipe.key(corpus.sha256, tokenizer.to_json())}"


def _batches(data: torch.Tensor, context: int, batch: int, generator: torch.Generator):
    while True:
        starts = torch.randint(0, data.numel() - context - 1, (batch,), generator=generator)
        windows = torch.stack([data[s : s + context + 1] for s in starts.tolist()])
        yield windows[:, :-1], windows[:, 1:]


def _lr(recipe: Recipe, step: int) -> float:
    return recipe.lr if step < recipe.lr_drop_step else recipe.lr_final


def train(recipe: Recipe, corpus: Corpus, device: str = "cpu") -> Path:
    """Train ``recipe`` on ``corpus`` unless its checkpoint is cached; return the folder.

    Args:
        recipe: the recipe (``models.recipes``).
        corpus: its training split is used; the validation split gives the loss curve.
        device: torch device string.
    Returns:
        the checkpoint folder (a local HF model folder).
    Raises:
        NonFiniteError-like RuntimeError: if the training loss becomes NaN.
    """
    tokenizer = CharTokenizer.from_corpus(corpus)
    final = checkpoint_dir(recipe, corpus, tokenizer)
    if (final / "model.safetensors").exists():
        return final
    pin_cpu_threads()
    torch.manual_seed(recipe.seed)
    model = GPT2LMHeadModel(gpt2_config(recipe, tokenizer.vocab_size)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr)
    train_data = torch.tensor(tokenizer.encode(corpus.train), dtype=torch.long)
    val_data = torch.tensor(tokenizer.encode(corpus.validation), dtype=torch.long)
    batches = _batches(train_data, recipe.context, recipe.batch, torch.Generator().manual_seed(recipe.seed))
    val_x, val_y = next(_batches(val_data, recipe.context, recipe.batch, torch.Generator().manual_seed(0)))
    curve, started = [], time.perf_counter()
    progress = tqdm(range(recipe.steps), desc=f"training {recipe.name}", unit="step", mininterval=5)
    for step in progress:
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = _lr(recipe, step)
        x, y = next(batches)
        logits = model(input_ids=x.to(device)).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.to(device).flatten())
        if not math.isfinite(loss.item()):
            raise RuntimeError(f"training loss of {recipe.name} became {loss.item()} at step {step}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
            model.eval()
            with torch.no_grad():
                val_logits = model(input_ids=val_x.to(device)).logits
                val_loss = torch.nn.functional.cross_entropy(val_logits.flatten(0, 1), val_y.to(device).flatten())
            curve.append({"step": step + 1, "train_loss": loss.item(), "val_loss": val_loss.item()})
            progress.set_postfix(train=f"{loss.item():.3f}", val=f"{val_loss.item():.3f}")
    model.eval()
    with atomic_directory(final) as scratch:
        model.save_pretrained(scratch, safe_serialization=True)
        (scratch / "recipe.json").write_text(json.dumps(asdict(recipe), indent=1))
        (scratch / "tokenizer.json").write_text(tokenizer.to_json())
        meta = {"corpus": corpus.name, "corpus_sha256": corpus.sha256, "device": device,
                "train_seconds": time.perf_counter() - started, "curve": curve}
        (scratch / "loss_curve.json").write_text(json.dumps(meta, indent=1))
    return final
