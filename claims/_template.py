"""TEMPLATE — the three parts of a claim (docs/new-claim.md): the checks part below goes to
claims/<family folder>/<topic>_checks.py, the measure part to claims/<family folder>/<topic>_measures.py, the test
part to claims/<family folder>/test_<topic>.py; then a Case in tests/cases_<family>.py.

SX.Y — the claim in one sentence, as claims/catalogue.toml states it.

A claim reads top to bottom: catalogue entry → measure (activations to estimates with intervals) → pure checks with
derivations → record; the test only wires the fixtures to the two. It never loads models itself (the fixtures do),
never hard-codes a measurement, and never tunes a threshold until it passes. tests/test_claim_checks.py refuses a Check.of written in a test file.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest

from fixtures.catalogue_text import catalogued, gate, procedure
from latent_instruments.stats import Estimate, sample_mean
from reports.checks import Check

# ---- <topic>_checks.py: the estimates and the checks, a pure function ------------------------------------------

THRESHOLD = 1.0  # the source's figure this comes from (e.g. "S4 Appendix IV: smallest ratio 1.67"), margin taken


@dataclass(frozen=True)
class TopicEstimates:
    """What SX.Y's test measures, over prompts (the bootstrap unit).

    Attributes:
        statistic: what it is, in its unit.
        control: what would fail a vacuous pass, in its unit.
        per_prompt: shown beside the checks, deciding nothing: (prompts,) the statistic's units (what the record's
            details and figures need; a default, so that the self-test's constructed estimates can leave it out).
    """

    statistic: Estimate
    control: Estimate
    per_prompt: np.ndarray | None = field(default=None, compare=False)


def topic_checks(e: TopicEstimates) -> list[Check]:
    """SX.Y's claim check and its control; a stricter reading of the source's words is a Check of role="reading":
    recorded and shown, deciding nothing."""
    return [
        # the derivation (the source's figure and the margin taken) is the catalogue row's of this key, beside its
        # threshold: derivation = "... the margin {THRESHOLD:g} ..." there, its numbers filled from the constants
        # the check uses, never retyped
        Check.of("what the statistic is", e.statistic, "unit", ">", THRESHOLD,
                 **catalogued("SX.Y/what-the-statistic-is", THRESHOLD=THRESHOLD)),
        Check.of("what would fail a vacuous pass", e.control, "unit", ">", 0.0, role="control",
                 **catalogued("SX.Y/vacuous-pass-control")),
    ]


# ---- <topic>_measures.py: activations to estimates ---------------------------------------------------------------


def measure_topic(captured, twin_captured, claim) -> TopicEstimates:
    """SX.Y's measurement: one number per prompt (the bootstrap unit), with its interval at the run's --seed.

    Args:
        captured, twin_captured: the model's and its untrained twin's captures, (batch, seq, d_model) activations.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``; a claim that is an
            identity here ends with ``claim.not_informative(gate("SX.Y/<test>/<why>"))``, the reason
            the catalogue's ``[[claims.gates]]`` text of that key.
    """
    per_prompt = captured.cache["blocks.0.hook_resid_post"].float().norm(dim=-1).mean(dim=1).cpu().numpy()  # (batch,)
    if per_prompt.std() == 0:  # e.g. an identity on this subject: the catalogue's [[claims.gates]] text says why
        claim.not_informative(gate("SX.Y/the-claim-in-words/identity", prompts=len(per_prompt)))
    twin_per_prompt = twin_captured.cache["blocks.0.hook_resid_post"].float().norm(dim=-1).mean(dim=1).cpu().numpy()
    return TopicEstimates(claim.bootstrap(per_prompt, sample_mean), claim.bootstrap(twin_per_prompt, sample_mean),
                          per_prompt=per_prompt)


# ---- test_<topic>.py: the fixtures wired to the measure and the checks ------------------------------------------


# an id of claims/catalogue.toml; bump version when the procedure changes. sample="prompts": the statistic is a mean
# over the held-out prompts, so while a check is undecided the test runs again on 2x and 4x the prompts (fixtures
# that draw prompts follow; intervals are 98.3 % at every look); leave it out where the sample is fixed (seeds)
@pytest.mark.claim("SX.Y", version=1, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True)  # roles: trained untrained reference hf ladder siblings depths
@pytest.mark.needs("blocks.*.hook_resid_post")  # canonical activations read (models/adapters.py lists them)
def test_the_claim_in_words(model_name, activations, twin_activations, claim):
    """SX.Y: what is measured, on what, against what."""
    estimates = measure_topic(activations, twin_activations, claim)
    claim.record(
        topic_checks(estimates),
        # the catalogue's [[claims.procedures]] text of this key: prompts, positions, layers used, and every
        # difference from the source's procedure, "{prompts}" filled here
        procedure=procedure("SX.Y/the-claim-in-words", prompts=len(estimates.per_prompt)),
        details={"per_layer": {"block 1": float(estimates.statistic.value)}},  # tables: {row: value} or {row: {col: v}}
        # the same quantity as a number the source reports on its own subject (catalogue.toml's source_numbers)
        beside_source={"the catalogue's quantity": float(estimates.statistic.value)},
    )

# ---- tests/cases_<family>.py: Case("SX.Y", topic_checks, TopicEstimates(estimate(2.0), estimate(0.5))) -----------
