"""A measurement that will run long says so when it starts (issue 74, case 16: S4.9 on a 200k-token vocabulary ran
for over 10 minutes on 2 cores with no estimate shown)."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

from claims.s4_ffn.token_vectors import CONTINUED_TOKENS, DRAWN_TOKENS, LONG, STEPS, expected_duration
from fixtures.recording import ClaimRecorder
from latent_instruments.token_subspaces import learn_token_embeddings


def test_the_first_steps_time_is_reported_once():
    head = torch.nn.Linear(8, 5)
    seen = []
    learn_token_embeddings(head, torch.arange(5), 8, 3, 4, 0.1, 0, first_step=seen.append)
    assert len(seen) == 1 and seen[0] > 0


def subject(vocab: int, d_model: int = 16):
    head = SimpleNamespace(weight=torch.empty(vocab, d_model, device="meta"))
    return SimpleNamespace(name="big-vocab", model=SimpleNamespace(get_output_embeddings=lambda: head))


def test_s49_on_a_200k_vocabulary_estimates_its_duration_from_the_first_step():
    seconds, line = expected_duration(subject(200_000), 2.0)
    assert seconds == pytest.approx(2.0 * STEPS * (2 + CONTINUED_TOKENS / DRAWN_TOKENS)) and seconds > LONG
    assert "200,000-token vocabulary" in line and f"about {seconds / 60:.0f} min" in line and "big-vocab" in line
    assert expected_duration(subject(65), 1e-4)[0] < LONG  # a character vocabulary stays quiet


def recorder(plugins: dict):
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=plugins.get))
    return SimpleNamespace(item=SimpleNamespace(config=config, nodeid="claims/x.py::test_y[big-vocab]"))


def test_an_announcement_reaches_the_terminal_past_the_capture():
    lines, opened = [], []
    terminal = SimpleNamespace(write_line=lambda line, **_: lines.append(line))
    capture = SimpleNamespace(global_and_fixture_disabled=lambda: contextlib.nullcontext(opened.append(1)))
    ClaimRecorder.announce(recorder({"terminalreporter": terminal, "capturemanager": capture}), "about 41 min")
    assert opened == [1] and lines == ["\nclaims/x.py::test_y[big-vocab]: about 41 min"]


def test_without_a_terminal_an_announcement_is_a_warning():
    with pytest.warns(UserWarning, match="about 41 min"):
        ClaimRecorder.announce(recorder({}), "about 41 min")
