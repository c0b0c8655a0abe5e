"""The S0.6 calibration CLI (``claims.s0_spectra.calibrate_pretty_close``) checks its arguments before it calibrates
(issue 74, cases 1 and 14): a margin written into the catalogue is made at the claim's last look at that length."""

from pathlib import Path

import pytest

from claims.s0_spectra import calibrate_pretty_close as cli


@pytest.fixture
def no_calibration(monkeypatch):
    """Fail the test if the (minutes-long) calibration starts: every refusal must come before it."""
    def calibrate(*args, **kwargs):
        raise AssertionError("calibrated before the arguments were checked")
    monkeypatch.setattr(cli, "calibrate", calibrate)


def refusal(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main(list(argv))
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_write_refuses_a_calibration_at_another_shape_than_the_claims_last_look(no_calibration, capsys):
    """Case 1: 2 windows an init at 128 tokens loosened the margin from 0.076 to 0.105 without a word."""
    err = refusal(capsys, "--positions", "128", "--sequences", "2", "--write")
    assert "--sequences 2" in err and "128 windows" in err and "last look" in err
    assert cli.last_look(128) == 128 and cli.last_look(2048) == 64 and cli.last_look(100) is None


def test_the_table_stores_its_shape():
    c = {"positions": 128, "sequences": 128, "confidence": 0.98, "seeds": [1, 2], "coverage": 0.95, "window_blocks": 9,
         "depths": [{"blocks": 4, "values": [0.1, 0.2], "margin": 0.2, "point": 0.195}]}
    table = cli.table("S0.6", c)
    assert "\nsequences = 128\n" in table and "\nconfidence = 0.98\n" in table and "\nblocks = 4\n" in table


def test_the_claims_read_a_margin_only_at_the_shape_it_was_made_at():
    """Issue 74, case 1, and issue 73: a run whose last look takes another number of windows finds no margin (its
    record is inconclusive, never judged by a margin made from another sample)."""
    from claims.s0_spectra.residual_spectra import pretty_close

    assert pretty_close("S0.6", 128, 128, 4) is not None and pretty_close("S0.7", 128, 128, 12) is not None
    assert pretty_close("S0.6", 128, 2, 4) is None and pretty_close("S0.6", 128, 256, 4) is None
    assert pretty_close("S0.6", 128, 128, 4, confidence=1 - 0.05 / 3) is not None
    assert pretty_close("S0.6", 128, 128, 4, confidence=0.95) is None  # --prompts 128x128: one look, 95 % intervals


@pytest.mark.parametrize("argv, said", [
    (("--positions", "128", "--sequences", "0"), "--sequences 0: "),
    (("--positions", "128", "--sequences", "1"), "--sequences 1: "),
    (("--positions", "-5", "--sequences", "8"), "--positions -5: "),
    (("--positions", "4096", "--sequences", "8"), "--positions 4096: ref-opt-125m's context is 2048 tokens"),
    (("--positions", "128", "--sequences", "128", "--device", "tpu"), "--device tpu: "),
    (("--positions", "128", "--sequences", "128", "--device", "cuda:9"), "--device cuda:9: "),
])
def test_bad_arguments_are_refused_before_calibrating(no_calibration, capsys, argv, said):
    """Case 14: --sequences 0, --positions -5 and a device that is not there each gave a late traceback."""
    assert said in refusal(capsys, *argv)


def test_write_without_markers_or_to_a_read_only_catalogue_is_refused_first(no_calibration, capsys, tmp_path,
                                                                               monkeypatch):
    catalogue = tmp_path / "catalogue.toml"
    catalogue.write_text("# >>> S0.6 pretty close at 128 (x)\nold\n# <<< S0.6 pretty close at 128\n"
                         "# >>> S0.7 pretty close at 128 (x)\nold\n# <<< S0.7 pretty close at 128\n")
    monkeypatch.setattr(cli, "CATALOGUE", catalogue)
    err = refusal(capsys, "--positions", "2048", "--sequences", "64", "--write")
    assert "no S0.6 calibration markers for 2048" in err
    import os

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == catalogue else real_access(path, mode))
    err = refusal(capsys, "--positions", "128", "--sequences", "128", "--write")
    assert "cannot write" in err and str(catalogue) in err


def test_the_inits_windows_are_disjoint_blocks_where_the_split_holds_enough_and_independent_draws_else():
    """Issue 73 review: at S0's 2048 tokens the training split holds about 10 disjoint blocks for 59 inits; cycling
    through them would make the inits share windows and overstate the tolerance bound's confidence."""
    from claims.s0_spectra.calibration_tables import windows_drawn

    enough = {"window_blocks": 89, "seeds": list(range(59))}
    few = {"window_blocks": 10, "seeds": list(range(59))}
    assert "k-th of 89 disjoint blocks" in windows_drawn(enough)
    assert "each init its own draw" in windows_drawn(few) and "not disjoint" in windows_drawn(few)
