"""Mixed devices found without a GPU (issue 45).

Every tensor constructor (``torch.zeros``, ``torch.tensor``, ``torch.randperm``, ``torch.from_numpy``, ...) in
``claims/``, ``latent_instruments/`` and ``models/`` either names its ``device=``, is moved at once
(``torch.x(...).to(...)``), or is listed in ``ALLOWED`` with why it may stay on the CPU. A new constructor that
would meet a model's tensors on a GPU ("Expected all tensors to be on the same device") fails here on a CPU-only
machine, before it can fail in the 15 minutes of a lent GPU. The list is held to the code both ways: an entry no
constructor needs any more fails too.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("claims", "latent_instruments", "models")
CONSTRUCTORS = {"zeros", "ones", "empty", "full", "arange", "tensor", "as_tensor", "from_numpy", "randn", "rand",
                "randint", "randperm", "normal", "eye", "linspace", "logspace"}

HOST = "statistics on the host: numbers already moved off the model's device, never meeting its tensors"
CPU_DRAW = ("indices or starts drawn by a seeded CPU generator (the same draw on every device), moved with .to() "
            "where they meet the model's tensors, or indexing a CPU tensor")
MOVED_LATER = "token ids built on the host and moved to the subject's input device where the model reads them"
MODULE_INIT = "a parameter made in a module's __init__: the module moves as a whole with .to(device)"

ALLOWED = {
    ("claims/s0_spectra/model_spectra.py", "__init__"): "permutations of positions for the shuffled control, "
                                                   "drawn on the CPU and moved .to() each state's device where "
                                                   "applied (the embeddings' on the CPU)",
    ("claims/s0_spectra/calibrate_pretty_close.py", "calibrate"): MOVED_LATER,
    ("claims/s0_spectra/calibrate_pretty_close.py", "training_windows"): CPU_DRAW,
    ("claims/s1_attention/probe_measures.py", "play_windows"): MOVED_LATER,
    ("claims/s2_residual/analogy_measures.py", "_ranks"): "query ids; analogy_ranks moves them to the embedding's device",
    ("claims/s2_residual/stream_measures.py", "block_rate"): HOST,
    ("claims/s2_residual/test_stream.py", "_growth_details"): HOST,
    ("claims/s4_ffn/approximation.py", "measure"): MOVED_LATER,
    ("claims/s4_ffn/approximation.py", "_prompts"): CPU_DRAW,
    ("claims/s4_ffn/ffn_path_measures.py", "excess_over_cross_token"): HOST,
    ("claims/s4_ffn/final_norm_measures.py", "_final_block_outputs"): CPU_DRAW,
    ("claims/s4_ffn/token_vectors.py", "token_embeddings"): CPU_DRAW,
    ("claims/s4_ffn/token_subspace_measures.py", "subspace_facts"): HOST,
    ("claims/s4_ffn/token_subspace_measures.py", "shuffled_ratios"): CPU_DRAW,
    ("claims/s4_ffn/token_vectors.py", "continued"): CPU_DRAW,
    ("latent_instruments/analogies.py", "analogy_ranks"): "the empty result of no queries; ranks are returned on the CPU",
    ("latent_instruments/geometry.py", "fit_log_growth"): HOST,
    ("latent_instruments/strings.py", "of"): "the string table is built and kept on the host (numpy windows)",
    ("latent_instruments/strings.py", "predict"): HOST,
    ("latent_instruments/strings.py", "interpolated"): HOST,
    ("latent_instruments/token_subspaces.py", "starting_vectors"): CPU_DRAW,
    ("models/attention_forms.py", "_hf_rotary"): "a probe of the rotary embedding's output shape, never kept",
    ("models/evaluation.py", "_bits_per_character"): MOVED_LATER,
    ("models/batched_training.py", "train_batched"): "the corpus's token ids; each stacked batch is moved with .to(device)",
    ("models/mixer.py", "__init__"): MODULE_INIT,
    ("models/string_outputs.py", "compute_directions"): "the table of FFN outputs is stored on the host (hundreds of MB); "
                                              "each chunk is computed on the device and copied in",
    ("models/trainer.py", "training_batches"): CPU_DRAW,
    ("models/trainer.py", "train"): "the corpus's token ids; each batch is moved with .to(device)",
}


def constructors_without_device(path: Path, root: Path = REPO) -> set[tuple[str, str]]:
    """(file relative to ``root``, enclosing function) of every ``torch.<constructor>(...)`` in ``path`` with no
    ``device=`` and not moved at once by ``.to(...)`` / ``.cuda()``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                and node.func.attr in CONSTRUCTORS):
            continue
        if any(k.arg == "device" for k in node.keywords):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda"):
            continue
        scope = node
        while scope in parents and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents[scope]
        found.add((path.relative_to(root).as_posix(), getattr(scope, "name", "<module>")))
    return found


def _scan() -> set[tuple[str, str]]:
    return {site for folder in SCANNED for path in sorted((REPO / folder).rglob("*.py"))
            for site in constructors_without_device(path)}


def test_every_tensor_constructor_names_its_device_or_says_why_not():
    found = _scan()
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, (
        "tensor constructors without device= that may meet a model's tensors on a GPU: "
        f"{unexplained}; pass device=..., move the result with .to(...), or add the site to ALLOWED with why")
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"ALLOWED lists sites that no longer construct a tensor without a device: {stale}"


def test_the_scan_sees_a_constructor_on_the_cpu(tmp_path):
    """The check can fail: a constructor without a device is found; with device= or .to() it is not."""
    source = tmp_path / "claim.py"
    source.write_text("import torch\n\n"
                      "def mixed(x):\n    return x + torch.zeros(3)\n\n"
                      "def named(x):\n    return x + torch.zeros(3, device=x.device)\n\n"
                      "def moved(x):\n    return x + torch.arange(3).to(x.device)\n")
    assert constructors_without_device(source, tmp_path) == {("claim.py", "mixed")}
