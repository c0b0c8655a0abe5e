"""Seed siblings trained as one batched job (issue 58): one recipe at several seeds, stacked along a model axis.

A small model leaves most of a GPU idle, and four trainings side by side share it by time, not by width (S4's
recipe: 315 s each side by side on an H200, 83 s alone). Here the builds of one recipe that differ only in their
seed are one job, after PyTorch's model-ensembling recipe: their parameters are stacked along a leading model axis
(``torch.func.stack_module_state``), one forward is ``vmap`` over that axis of ``functional_call``, and one AdamW
steps the stacked parameters. The GPU then sees one job ``n_models`` times as wide.

Each model keeps what makes it itself: its initialisation (``torch.manual_seed(seed)`` before it is built, as
:func:`models.trainer.train` does), its data order (a batch generator seeded by its seed), and its optimizer state
(AdamW is elementwise, so one optimizer over stacked parameters is one per model). The summed loss's gradient with
respect to a model's slice is that model's own gradient. So without dropout a few batched steps give each model
the weights of training it alone, to float32 tolerance (``tests/test_batched_training.py``). With dropout (S4's recipe:
0.2) each model draws masks of its own (``vmap(randomness="different")``) from the one global generator, not the
stream it would draw alone: the same distribution of trainings, other bits. Attention runs eagerly (its matmuls
batch over the model axis; PyTorch's fused attention has no batching rule).

A checkpoint's cache key is its recipe's, however it was trained: a build trained alone (the suite's training on
first use) and one trained in a batch are the same recipe on other bits, as two machines' builds are. Whichever is
in the cache is kept; its ``loss_curve.json`` names the models it was trained with (``trained_with``) and its share
of the job's time, and a run records its weights digest, so a verdict that changes with the build is traceable.
"""

import copy
import math
import time
from dataclasses import replace
from pathlib import Path

import torch
from torch.func import functional_call, stack_module_state, vmap

from models.corpus import Corpus
from models.progress import CALIBRATION_STEPS, TrainingProgress, training_flops
from models.recipes import Recipe
from models.runtime import pin_cpu_threads
from models.tokenization import corpus_tokenizer
from models.trainer import (build_model, check_checkpoint, checkpoint_dir, learning_rate, matmul_precision,
                            save_checkpoint, train, training_batches)


def seed_siblings_of(a: Recipe, b: Recipe) -> bool:
    """Whether two recipes differ only in name and seed: one job can train them (:func:`train_batched`)."""
    return a.seed != b.seed and replace(a, name=b.name, seed=b.seed) == b


def sibling_batches(recipes: list[Recipe]) -> list[list[Recipe]]:
    """The recipes grouped into batched jobs, in order: each group one recipe and its seed siblings among
    ``recipes`` (:func:`seed_siblings_of`); a recipe with none is a group of one."""
    groups: list[list[Recipe]] = []
    for recipe in recipes:
        group = next((g for g in groups if all(seed_siblings_of(r, recipe) for r in g)), None)
        if group is None:
            groups.append([recipe])
        else:
            group.append(recipe)
    return groups


def _losses(base: torch.nn.Module):
    """``(params, buffers, inputs, targets) -> losses``: each model's mean next-token cross-entropy, vmapped over
    the model axis; inputs and targets ``(n_models, batch, context)`` token ids, losses ``(n_models,)`` in nats."""
    def loss_of(params, buffers, inputs, targets):
        logits = functional_call(base, (params, buffers), (inputs,)).logits  # (batch, context, vocab)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    return vmap(loss_of, randomness="different")  # dropout: each model its own masks


def train_batched(recipes: list[Recipe], corpus: Corpus, device: str = "cpu",
                  progress: TrainingProgress | None = None) -> list[Path]:
    """Train seed siblings of one recipe as one job; return their checkpoint folders, in order.

    Models whose checkpoint is cached are not retrained (:func:`models.trainer.train` checks them); with fewer than
    two left, each trains alone.

    Args:
        recipes: one recipe and its seed siblings (:func:`seed_siblings_of`, pairwise).
        corpus, device: as :func:`models.trainer.train`.
        progress: the bar of ``python -m models prepare``; None: a bar of this job's own.
    Returns:
        the checkpoint folders (local HF model folders), one per recipe.
    Raises:
        ValueError: if two recipes differ in more than name and seed (or share a seed).
        ModelLoadError: for a damaged cached checkpoint (as :func:`models.trainer.train`).
        RuntimeError: if a model's training loss becomes NaN or infinite, naming the model and the step.
    """
    if any(not seed_siblings_of(a, b) for i, a in enumerate(recipes) for b in recipes[i + 1:]):
        raise ValueError(f"{', '.join(r.name for r in recipes)}: a batched training takes one recipe at several "
                         "seeds; these differ in more than name and seed")
    cached = [r for r in recipes if checkpoint_dir(r, corpus).exists() or checkpoint_dir(r, corpus).is_symlink()]
    for recipe in cached:  # a damaged cached sibling is named now, not after the job
        check_checkpoint(recipe, corpus, checkpoint_dir(recipe, corpus))
    todo = [r for r in recipes if r not in cached]
    if len(todo) < 2:
        return [train(r, corpus, device=device, progress=progress) for r in recipes]
    first, n = todo[0], len(todo)
    tokenizer = corpus_tokenizer(first.tokenizer, corpus)
    pin_cpu_threads()
    models = []
    for recipe in todo:  # each model's initialisation as alone: its seed, then build
        torch.manual_seed(recipe.seed)
        models.append(build_model(recipe, tokenizer.vocab_size).to(device))
    params, buffers = stack_module_state(models)  # {name: (n_models, *shape)}, leaves that take gradients
    base = copy.deepcopy(models[0]).to("meta")  # the architecture, without weights of its own
    if first.architecture == "gpt2":  # SDPA has no batching rule (vmap would loop over it), while
        base.set_attn_implementation("eager")  # eager attention's matmuls and dropout batch over the model axis
    losses_of = _losses(base)
    n_params = sum(p.numel() for p in models[0].parameters())
    step_flops = n * training_flops(n_params, 1, first.batch, first.context)
    label = f"{n} seed siblings of {first.name}"
    own = progress is None
    if own:
        progress = TrainingProgress({r.name: step_flops / n * r.steps for r in todo}, f"training {label}")
    with matmul_precision(device):
        optimizer = torch.optim.AdamW(params.values(), lr=first.lr)
        train_data = torch.tensor(tokenizer.encode(corpus.train), dtype=torch.long)
        val_data = torch.tensor(tokenizer.encode(corpus.validation), dtype=torch.long)
        streams = [training_batches(train_data, r.context, r.batch, torch.Generator().manual_seed(r.seed)) for r in todo]
        val_x, val_y = next(training_batches(val_data, first.context, first.batch, torch.Generator().manual_seed(0)))
        val_x, val_y = (t.to(device).expand(n, *t.shape) for t in (val_x, val_y))  # one validation batch for all
        curves: list[list[dict]] = [[] for _ in todo]
        started, timed = time.perf_counter(), None
        for step in range(first.steps):
            base.train()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(first, step)
            inputs, targets = zip(*(next(s) for s in streams))
            losses = losses_of(params, buffers, torch.stack(inputs).to(device), torch.stack(targets).to(device))
            values = losses.tolist()
            for recipe, value in zip(todo, values):
                if not math.isfinite(value):
                    raise RuntimeError(f"training loss of {recipe.name} became {value} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            losses.sum().backward()  # the sum's gradient on a model's slice is that model's own
            optimizer.step()
            if (step + 1) % first.eval_every == 0 or step + 1 == first.steps:
                base.eval()
                with torch.no_grad():
                    val_losses = losses_of(params, buffers, val_x, val_y).tolist()
                for curve, value, val in zip(curves, values, val_losses):
                    curve.append({"step": step + 1, "train_loss": value, "val_loss": val})
            progress.advance(step_flops, model=label, train=" ".join(f"{v:.3f}" for v in values))
            if step == 0:
                timed = time.perf_counter()
            elif step == CALIBRATION_STEPS and step + 1 < first.steps:
                progress.measured(label, first.steps - step - 1, (time.perf_counter() - timed) / step, step_flops)
        if own:
            progress.close()
    seconds = time.perf_counter() - started
    for i, (recipe, model) in enumerate(zip(todo, models)):
        with torch.no_grad():  # the model's own tensors take its slice of the stacked ones
            for name, tensor in (*model.named_parameters(), *model.named_buffers()):
                tensor.copy_((params | buffers)[name][i])
        model.eval()
        save_checkpoint(checkpoint_dir(recipe, corpus), model, recipe, tokenizer, corpus, device,
                        {"train_seconds": seconds / n, "job_seconds": seconds, "curve": curves[i],
                         "trained_with": [r.name for r in todo if r is not recipe]})
    return [train(r, corpus, device=device, progress=progress) if r not in todo else checkpoint_dir(r, corpus)
            for r in recipes]
