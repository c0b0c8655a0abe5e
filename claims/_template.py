"""TEMPLATE — the four parts of a claim (docs/new-claim.md): the home (commented below) goes to
claims/<family folder>/<topic>.toml, the checks part to claims/<family folder>/<topic>_checks.py, the measure part to
claims/<family folder>/<topic>_measures.py, the test part to claims/<family folder>/test_<topic>.py; then a Case in
tests/cases_<sN>.py (the family id in lower case: tests/cases_s4.py).

SX.Y — the claim in one sentence, as claims/catalogue.toml states it.

A claim reads top to bottom: its home (thresholds, one place each) → measure (activations to estimates with
intervals) → pure checks with derivations → record; the test only wires the fixtures to the two. It never loads models itself (the fixtures do),
never hard-codes a measurement, and never tunes a threshold until it passes. tests/test_claim_checks.py refuses a Check.of written in a test file.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest

from fixtures.catalogue_text import catalogued, gate, procedure
from fixtures.homes import numbers
from latent_instruments.stats import Estimate, sample_mean
from reports.checks import Check

# ---- <topic>.toml: the home of every number the checks decide with (fixtures/homes.py) ----------------------------
#
# [values]
# # the source's figure this comes from (e.g. "S4 Appendix IV: smallest ratio 1.67"), and the margin taken
# THRESHOLD = 1.0
#
# [docs]  # docs/measurements.md's row (python -m fixtures.docs_pages --write)
# title = "a few words"
# measured = """what is measured, numbers as {THRESHOLD:g} (controls in brackets)"""
#
# [[claims]]
# id = "SX.Y"
#
# [[claims.source_numbers]]  # a number the source reports on its own subject, set beside ours (beside_source=)
# quantity = "the catalogue's quantity"
# value = 1.67               # or a value's name: "SOURCE_RATIO"
# unit = "ratio"
# where = "its place in the source and a short quote"
# subject = "the source's model and setting"
#
# [[claims.thresholds]]
# check = "what the statistic is"
# key = "SX.Y/statistic"          # a name, not the display text or a value: baselines pair the check by it
# role = "claim"
# comparison = ">"
# bound = "THRESHOLD"             # what the check compares with; the catalogue's threshold text renders from it
# provenance = "source"
# basis = "one line: the source's words or figure"
# version = 1
# derivation = """the source's words and the margin taken, its numbers as fields: above {THRESHOLD:g}"""
#
# [[claims.procedures]]
# key = "SX.Y/the-claim-in-words"
# text = """{prompts} held-out prompts ..."""
#
# [[claims.gates]]
# key = "SX.Y/the-claim-in-words/identity"
# text = """why the claim says nothing on this subject, {prompts} filled by the measure"""

# ---- <topic>_checks.py: the checks, a pure function of the estimates ---------------------------------------------

THRESHOLD = numbers(__file__, "THRESHOLD")  # read from the home, never written here


def topic_checks(e: "TopicEstimates") -> list[Check]:
    """SX.Y's claim check and its control; a stricter reading of the source's words is a Check of role="reading":
    recorded and shown, deciding nothing."""
    return [
        # the key names the home's row: its derivation, with {THRESHOLD:g} and the like filled from the home's values
        Check.of("what the statistic is", e.statistic, "unit", ">", THRESHOLD, **catalogued("SX.Y/statistic")),
        Check.of("what would fail a vacuous pass", e.control, "unit", ">", 0.0, role="control",
                 **catalogued("SX.Y/vacuous-pass-control")),
    ]


# ---- <topic>_measures.py: activations to estimates (it never imports the checks) ----------------------------------


@dataclass(frozen=True)
class TopicEstimates:
    """What SX.Y's checks decide on, over prompts (the bootstrap unit).

    Attributes:
        statistic: what it is, in its unit.
        control: what would fail a vacuous pass, in its unit.
    """

    statistic: Estimate
    control: Estimate


@dataclass(frozen=True)
class TopicShown:
    """What SX.Y's record shows beside its checks, deciding nothing.

    Attributes:
        per_prompt: (prompts,) the statistic's units (what the record's details and figures need).
    """

    per_prompt: np.ndarray = field(default_factory=lambda: np.zeros(0))



def measure_topic(captured, twin_captured, claim) -> tuple[TopicEstimates, TopicShown]:
    """SX.Y's measurement: one number per prompt (the bootstrap unit), with its interval at the run's --seed.

    Args:
        captured, twin_captured: the model's and its untrained twin's captures, (batch, seq, d_model) activations.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``; a claim that is an
            identity here ends with ``claim.not_informative(gate("SX.Y/<test>/<why>"))``, the reason
            the home's ``[[claims.gates]]`` text of that key.
    """
    per_prompt = captured.cache["blocks.0.hook_resid_post"].float().norm(dim=-1).mean(dim=1).cpu().numpy()  # (batch,)
    if per_prompt.std() == 0:  # e.g. an identity on this subject: the home's [[claims.gates]] text says why
        claim.not_informative(gate("SX.Y/the-claim-in-words/identity", prompts=len(per_prompt)))
    twin_per_prompt = twin_captured.cache["blocks.0.hook_resid_post"].float().norm(dim=-1).mean(dim=1).cpu().numpy()
    return (TopicEstimates(claim.bootstrap(per_prompt, sample_mean), claim.bootstrap(twin_per_prompt, sample_mean)),
            TopicShown(per_prompt=per_prompt))


# ---- test_<topic>.py: the fixtures wired to the measure and the checks ------------------------------------------


# an id of claims/catalogue.toml; bump version when the procedure changes. sample="prompts": the statistic is a mean
# over the held-out prompts, so while a check is undecided the test runs again on 2x and 4x the prompts (fixtures
# that draw prompts follow; intervals are 98.3 % at every look); leave it out where the sample is fixed (seeds)
@pytest.mark.claim("SX.Y", version=1, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True)  # roles: trained untrained reference hf ladder siblings depths
@pytest.mark.needs("blocks.*.hook_resid_post")  # canonical activations read (models/adapters.py lists them)
def test_the_claim_in_words(model_name, activations, twin_activations, claim):
    """SX.Y: what is measured, on what, against what."""
    estimates, shown = measure_topic(activations, twin_activations, claim)
    claim.record(
        topic_checks(estimates),
        # the home's [[claims.procedures]] text of this key: prompts, positions, layers used, and every
        # difference from the source's procedure, "{prompts}" filled here
        procedure=procedure("SX.Y/the-claim-in-words", prompts=len(shown.per_prompt)),
        details={"per_layer": {"block 1": float(estimates.statistic.value)}},  # tables: {row: value} or {row: {col: v}}
        # the same quantity as a number the source reports on its own subject (the home's source_numbers)
        beside_source={"the catalogue's quantity": float(estimates.statistic.value)},
    )

# ---- tests/cases_<sN>.py: Case("SX.Y", topic_checks, TopicEstimates(estimate(2.0), estimate(0.5))) -----------
