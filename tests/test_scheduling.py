"""pytest-xdist scheduling by model: the unit of work is the subject, so one model loads on one worker."""

import pytest

from fixtures.scheduling import work_unit
from reports.node_ids import model_of

NAMES = ["tiny-w96", "tiny-w128", "tiny-w96:untrained", "tiny-ladder", "/data/my-gpt2"]


def test_the_subject_is_read_from_the_parameter_part_of_the_node_id():
    assert model_of("claims/s4_ffn/test_feedforward.py::test_ffn[tiny-w96]", NAMES) == "tiny-w96"
    assert model_of("claims/s4_ffn/test_feedforward.py::test_ffn[tiny-w96:untrained]", NAMES) == "tiny-w96:untrained"
    assert model_of("claims/s3_inversion/test_width.py::test_wider[tiny-ladder-restricted]", NAMES) == "tiny-ladder"
    assert model_of("claims/s3_inversion/test_width.py::test_wider[restricted-tiny-w128]", NAMES) == "tiny-w128"
    assert model_of("claims/s0_spectra/test_spectra.py::test_power[/data/my-gpt2]", NAMES) == "/data/my-gpt2"
    assert model_of("tests/test_stats.py::test_bootstrap", NAMES) is None


def test_tests_of_one_model_form_one_work_unit():
    units = {work_unit(n, NAMES) for n in (
        "claims/a.py::test_x[tiny-w96]", "claims/b.py::test_y[tiny-w96]", "claims/b.py::test_y[tiny-w128]")}
    assert units == {"tiny-w96", "tiny-w128"}
    assert work_unit("tests/test_stats.py::TestX::test_bootstrap", NAMES) == "tests/test_stats.py"


@pytest.mark.parametrize("nodeid, model, rest", [
    ("a.py::t[tiny-w96]", "tiny-w96", ""),
    ("a.py::t[tiny-w96-restricted]", "tiny-w96", "restricted"),
    ("a.py::t[cpu-widths-ref-llama-small]", "ref-llama-small", "cpu-widths"),
    ("a.py::t[a-m-b]", "m", "a-b"),
    ("a.py::t[tiny-w960]", "tiny-w96", "tiny-w960"),  # another model, not a prefix
    ("a.py::t", "m", ""),
])
def test_the_other_parameters_are_the_parameter_part_without_the_models_name(nodeid, model, rest):
    from reports.node_ids import function_of, params_besides

    assert params_besides(nodeid, model) == rest
    assert function_of(nodeid) == "t"
