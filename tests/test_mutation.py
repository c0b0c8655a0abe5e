"""`make mutation`'s driver (benchmarks/mutation.py, issue 75): what it mutates and what decides each mutant."""

import json

from benchmarks.mutation import OPERATORS, REPO, claims_of, equivalents, runner, self_tests_of, subject_of, targets


def test_the_targets_are_the_instruments_and_the_claims_measures():
    found = targets()
    assert "latent_instruments/spectra.py" in found["latent_instruments"]
    assert "claims/s3_inversion/layers_measures.py" in found["measures"]
    assert all(m.endswith("_measures.py") for m in found["measures"])


def test_a_module_s_runner_is_its_self_tests_and_for_measures_the_golden_comparison_of_its_claims():
    assert "tests/test_known_answers.py" in self_tests_of("latent_instruments/spectra.py")
    assert claims_of("claims/s3_inversion/layers_measures.py") == ["S3.14"]
    verdicts = json.loads((REPO / "models/shipped/verdicts.json").read_text())["records"]
    assert subject_of("S4.1", verdicts) == "tiny-w96" and subject_of("S3.5", verdicts) == "tiny-ladder"
    command = runner("claims/s4_ffn/final_norm_measures.py", "PY", verdicts) or ""
    assert "PY -m pytest claims -m gpu --zoo tiny --shard tiny-w96 --claim S4.5 " in command
    assert subject_of("S4.6", verdicts) == "tiny-siblings" and subject_of("S3.2", verdicts) == "tiny-w96:untrained"


def test_the_sample_takes_the_issue_s_kinds_of_change_only():
    assert OPERATORS.match("core/ReplaceComparisonOperator_Gt_LtE") and OPERATORS.match("core/NumberReplacer")
    assert OPERATORS.match("core/ReplaceUnaryOperator_USub_UAdd") and OPERATORS.match("core/ReplaceBinaryOperator_Add_Sub")
    assert not OPERATORS.match("core/ReplaceBinaryOperator_Add_RShift") and not OPERATORS.match("core/VariableInserter")


def test_known_equivalent_mutants_each_say_why():
    assert all(why.strip() for why in equivalents().values())
