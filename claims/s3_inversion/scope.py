"""Where S3 says its inversions work, and where it puts a subject out of scope: the gates of S3's claims.

A claim premised on an inversion (the unmasked tokens come back, the full output recovers every token, block 1
inverts above chance) can be left unmeasured for two different reasons, and the record must say which:

* **S3 puts the subject out of scope.** S3 reports small *trained* models whose blocks do not give their input
  back (:data:`SMALL_TRAINED`); on such a model a premise that fails is S3's own finding, and the claim is not
  informative there. The record's message quotes the sentence.
* **The instrument failed where S3 says it works.** S3 says an *untrained* block inverts
  (:data:`UNTRAINED_INVERTS`), and that cosine descent minimises one-token inputs (S3.13). There a failed premise is
  a failed descent, which no verdict may hide: it is a control (:func:`works_control`), decided by its exact
  interval, red where it fails decisively and inconclusive where it straddles.

Used by S3.4, S3.9, S3.10, S3.11 and S3.12 (issue 43, item 4); S3.13's premise and S3.14's gap are controls of their
own, and S3.7's gate quotes S3 in its message.
"""

import numpy as np

from latent_instruments.stats import Estimate, proportion
from reports.checks import Check

MOST = 0.5  # a control's floor: the inversion works on most prompts, by the low end of the exact interval

SMALL_TRAINED = (
    "S3 puts small trained models out of this premise's scope: 'even a very small expansion of the allowed vocabulary "
    "results in a trained GPT-2 block being unable to accurately recognize the input' (Restricted Vocabulary Input "
    "Representation), and 'smaller language models are capable of accurate input representation before training, but "
    "only for one or at most two transformer blocks. But with increased model size, trained models are capable of "
    "fairly accurate input representation' (Big models exhibit accurate input representations)")
UNTRAINED_INVERTS = (
    "S3: 'the same model before training is capable of recovering the target input after N=200 steps' (Restricted "
    "Vocabulary Input Representation): where an untrained block does not give its input back, the descent failed, "
    "not the model")


def works_control(works: np.ndarray, name: str, derivation: str, key: str = "") -> Check:
    """A control that the inversion works where S3 says it does: the fraction of prompts on which it does, above
    one half (:data:`MOST`) by the low end of its exact binomial interval (``latent_instruments.stats.proportion``).

    An exact interval decides from any number of prompts, and 16 of 16 prompts give [0.79, 1] at 95 % (a bootstrap
    of 16 accuracies of 1.0 would give a zero-width interval, which decides nothing).

    Args:
        works: (prompts,) booleans or 0/1: whether the inversion worked on each reported prompt (e.g. more than half
            of its unmasked tokens recovered, or more tokens than the random start's).
        name: what is counted, e.g. "prompts of tiny-w96:untrained whose unmasked tokens mostly come back".
        derivation: the source sentence that says the inversion works there.
    Returns:
        A check of role "control", comparison ">" ``MOST`` (:func:`works_check`).
    Raises:
        ValueError: as ``proportion`` (no prompts, units that are not 0/1).
    """
    return works_check(proportion(np.asarray(works, dtype=bool)), name, derivation, key=key)


def works_check(fraction: Estimate, name: str, derivation: str, key: str = "") -> Check:
    """:func:`works_control`'s check from its estimate: ``fraction`` of prompts (an exact interval) above ``MOST``;
    ``key`` its stable key (``reports.checks.Check.key``). Pure: the claims' checks functions call it."""
    return Check.of(f"fraction of {name}", fraction, "fraction of prompts", ">",
                    MOST, f"control: {derivation}; on most prompts (> {MOST}) by the low end of the exact interval",
                    role="control", key=key)
