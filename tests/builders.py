"""What the self-tests build and share: settings, records and run folders of the report's tests, HF model folders,
and the synthetic claim tests of the plugin's. Self-tests import these from here, never from another test module.
"""

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from fixtures.catalogue import catalogue_json
from fixtures.settings import Settings
from reports import writer
from reports.checks import Check, ClaimRecord
from tests.conftest import tiny_model

CLEAN = "0123456789abcdef0123456789abcdef01234567"


def settings_for(tmp_path: Path, baseline=None) -> Settings:
    return Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path / "reports", baseline)


def record(value: float, model="tiny-w128", plot=None, outcome=None, version=1, control=0.5) -> ClaimRecord:
    checks = [Check("straightening", value, value - 0.01, value + 0.01, "decades", ">", 0.0, "S0 Fig 2: positive drop"),
              Check("learned", control, control - 0.01, control + 0.01, "decades", ">", 0.0, "S0.5 twin", role="control")]
    rec = ClaimRecord("S0.3", version, model, f"claims/s0_spectra/test_spectra.py::t[{model}]", {}, checks,
                      "procedure", {"slope_by_layer": {"embed": -0.1, "block 1": -1.2}}, plot, function="t")
    rec.outcome = outcome or ("holds" if value - 0.01 > 0 else "fails")
    return rec


def run_failing_as_expected(folder) -> tuple[str, ClaimRecord]:
    """A run folder's results.json with one record failing as expected on tiny-w96 (straightening -0.2 [-0.21,
    -0.19]); returns the weights digest and the record."""
    sha = "ab" * 32
    rec = replace(record(-0.2, outcome="fails as expected"), model="tiny-w96", expected="fails", version=1)
    doc = writer.results(settings_for(folder), [rec], {"tiny-w96": {
        "weights_sha256": sha, "build": {"cpu": "AMD EPYC (AVX2)", "torch": "2.13.0+cpu"}}}, 0, 1.0, catalogue_json())
    (folder / "results.json").write_text(json.dumps(doc.to_json()))
    return sha, rec


SPECTRA = {"kind": "loglog", "x": [0.0, 0.1, 0.2, 0.3], "panels": {"m": {"embed": [1, 1, 1, 1], "block 1": [4, 3, 2, 1]}}}


def merged_record(claim: str, model: str, value: float = 0.2) -> ClaimRecord:
    """A claim record like a claim test makes (see tests/test_reports.py)."""
    checks = [Check("straightening", value, value - 0.01, value + 0.01, "decades", ">", 0.0, "S0 Fig 2: positive drop"),
              Check("learned", 0.5, 0.49, 0.51, "decades", ">", 0.0, "S0.5 twin", role="control")]
    rec = ClaimRecord(claim, 1, model, f"claims/s0_spectra/test_spectra.py::t_{claim.replace('.', '_')}[{model}]", {},
                      checks, "procedure", {"slope_by_layer": {"embed": -0.1, "block 1": -1.2}}, None)
    rec.outcome = "holds" if value - 0.01 > 0 else "fails"
    return rec


def model_facts(d_model: int) -> dict:
    """A model's facts as the pool describes it."""
    return {"role": "trained", "architecture": "gpt2", "n_params": 1000 * d_model, "d_model": d_model, "n_blocks": 4,
            "source": "recipe", "load_seconds": 0.1, "train_seconds": 12.0, "final_val_loss": 1.9,
            "forward_seconds": 0.01, "capture_seconds": 0.02, "captured": ["blocks.0.hook_resid_post"]}


def machine(tmp_path: Path, name: str, models: dict[str, int], seed: int = 0, exitstatus: int = 0,
            peak_rss: float = 100.0, git: str = CLEAN) -> Path:
    """One machine's run folder: claims S0.3 and S0.10 on each of ``models`` ({name: d_model})."""
    s = Settings("tiny", tuple(models), "cpu", torch.float32, seed, None, tmp_path / name, None)
    records = [merged_record(c, m, 0.2 if c == "S0.3" else -0.1) for m in models for c in ("S0.10", "S0.3")]
    folder = writer.write_run(s, records, {m: model_facts(d) for m, d in models.items()}, exitstatus, peak_rss,
                              catalogue_json())
    edit(folder, git=git)  # the checkout's own state (+dirty or not) must not decide the tests
    return folder


def edit(folder: Path, **changes) -> dict:
    """Change top-level keys of a run's results.json; return the document."""
    path = folder / "results.json"
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))
    return doc


def load(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 400


def save_hf_folder(folder, arch="gpt_neox"):
    """A tiny random-init HF model with a fast tokenizer, saved as a local folder (as a user would)."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(TEXT.splitlines(), trainers.BpeTrainer(vocab_size=50, special_tokens=["[UNK]"],
                                                                          initial_alphabet=[], show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(folder)
    tiny_model(arch).save_pretrained(folder, safe_serialization=True)
    return folder


# Synthetic claim tests on a random-init reference (never loaded: the tests only record), one per outcome.
CASES = textwrap.dedent('''
    import pytest
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    def check(value, role="claim"):
        return Check.of("statistic", Estimate(value, value - 0.1, value + 0.1, 0.95, 8), "unit", ">", 0.0,
                        "derivation", role=role)

    @pytest.mark.claim("S4.1", version=1)
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", ["holds", "fails", "listed-fails", "listed-holds", "listed-crash",
                                      "listed-control", "not-informative", "nan", "straddles", "listed-straddles",
                                      "straddling-control", "straddling-control-claim-fails", "listed-unconverged"])
    def test_case(model_name, case, claim):
        if case == "listed-crash":
            raise RuntimeError("Expected all tensors to be on the same device")
        if case == "not-informative":
            claim.not_informative("an identity here")
        value = {"holds": 1.0, "listed-holds": 1.0, "listed-control": 1.0, "nan": float("nan"), "straddles": 0.05,
                 "listed-straddles": 0.05, "straddling-control": 0.05}.get(case, -1.0)
        control = {"listed-control": -1.0, "straddling-control": 0.05, "straddling-control-claim-fails": 0.05}.get(case, 1.0)
        longer = [Check.of("statistic, after 5N", Estimate(0.3, 0.2, 0.4, 0.95, 16), "unit", "<", 0.0, "derivation",
                           role="control", convergence=True)] if case == "listed-unconverged" else []
        claim.record([check(value), check(control, role="control"), *longer])
''')


def nightly_history(base: Path, values: list[float], steady: float = 0.5, weights: list[str] | None = None,
                    commits: list[str] | None = None) -> list[Path]:
    """Run folders under ``base``, one a night, of one replay command, as the nightly history keeps them: S0.3 on
    tiny-w96 whose statistic is ``values[i]`` on night i (interval ± 0.01, threshold 0: it holds above 0.01), as
    a zoo model fine-tuned a little more each night would measure (new weights each night unless ``weights``), and
    S0.3 on tiny-w128 steady at ``steady``. Night i was created 2026-11-(i + 1) at 03:15 UTC, on commit
    ``commits[i]`` (default: one commit). Built as documents (cheap): no claim runs. Returns the folders."""
    template = writer.results(settings_for(base), [], {}, 0, 1.0, catalogue_json())
    folders = []
    for i, value in enumerate(values):
        run_id = f"202611{i + 1:02d}T031500Z"
        models = {"tiny-w96": {"weights_sha256": (weights[i] if weights else f"{i:02x}" * 32)},
                  "tiny-w128": {"weights_sha256": "cd" * 32}}
        doc = replace(template, run_id=run_id, created_utc=f"2026-11-{i + 1:02d}T03:15:00+00:00", models=models,
                      git=commits[i] if commits else CLEAN, records=[record(value, "tiny-w96"), record(steady)])
        folder = base / run_id
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(writer.finite_json(doc.to_json())))
        folders.append(folder)
    return folders
