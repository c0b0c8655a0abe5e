"""S3.6's checks as a pure function of its estimates: ``test_vocabulary.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass

from claims.s3_inversion.convergence import convergence_check
from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class VocabularyEstimates:
    """What S3.6's test measures on one a_g per prompt from block 1, decoded three ways (fractions of tokens,
    paired differences over the reported prompts).

    Attributes:
        prompt_only: prompt-only minus whole-vocabulary decoding.
        distractors: prompt + distractors minus whole-vocabulary decoding.
        narrowing: prompt-only minus prompt + distractors decoding.
        above_start: prompt-only decoding, found input minus the random start a₀ (a control).
        longer: the three gains after the descent continued to 5N, each None where its gain is undecided (or not
            continued), in the order above.
    """

    prompt_only: Estimate
    distractors: Estimate
    narrowing: Estimate
    above_start: Estimate
    longer: tuple[Estimate | None, Estimate | None, Estimate | None] = (None, None, None)


def vocabulary_checks(e: VocabularyEstimates, steps: int) -> list[Check]:
    """S3.6's three claim checks (a strict gain at each narrowing), their convergence controls where a longer value
    is given, and the control that the narrowest vocabulary does not make the recovery by itself; ``steps``: N."""
    gains = [
        Check.of("token accuracy, prompt-only minus whole-vocabulary decoding",
                 e.prompt_only, "fraction of tokens", ">", 0.0,
                 "S3: a trained GPT-2 block's a_g is rare tokens over the whole vocabulary and 'The sky is blue.' "
                 "exactly with only the prompt's words allowed. S3 gives one prompt, no rate: the threshold is "
                 "the strict gain itself, the paired difference above 0 by the low end of its interval. Under "
                 "S3's 0/1 mask it can be negative (a masked 0 beats an answer scoring below zero)",
                 key="S3.6/token-accuracy-prompt-only-minus-whole-vocabulary-decoding"),
        Check.of("token accuracy, prompt + distractors minus whole-vocabulary decoding",
                 e.distractors, "fraction of tokens", ">", 0.0,
                 "S3: GPT-J's first block gives 'The skyeton resp cease' over the whole vocabulary and 'The sky "
                 "is blue of' over the 13 tokens of 'The sky is blue or red depending on the time of day.': a "
                 "restriction that keeps distractors still improves; strict gain, low end above 0",
                 key="S3.6/token-accuracy-prompt-distractors-minus-whole-vocabulary-decoding"),
        Check.of("token accuracy, prompt-only minus prompt + distractors decoding",
                 e.narrowing, "fraction of tokens", ">", 0.0,
                 "S3: 'even a very small expansion of the allowed vocabulary results in a trained GPT-2 block "
                 "being unable to accurately recognize the input' (exact with the prompt's words, 'day or day "
                 "blue or' with the sentence's): the distractors are chosen; strict gain, low end above 0",
                 key="S3.6/token-accuracy-prompt-only-minus-prompt-distractors-decoding"),
    ]
    longer = [convergence_check(g, more, steps) for g, more in zip(gains, e.longer) if more is not None]
    return [
        *gains, *longer,
        Check.of("token accuracy over the prompt's own tokens, found input minus random start a₀",
                 e.above_start, "fraction of tokens", ">", 0.0,
                 "control: the narrowest vocabulary must not make the recovery by itself. The random start "
                 "decoded with the prompt's own tokens scores chance (about one over the number of distinct "
                 "prompt tokens); a found input no better than that would pass the claim vacuously",
                 role="control", key="S3.6/token-accuracy-over-the-prompt-s-own-tokens-found-input-minus-random"),
    ]
