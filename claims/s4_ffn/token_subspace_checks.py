"""S4.9 and S4.10's checks as pure functions of their estimates: ``token_subspace_measures.py`` measures, these decide,
and the self-tests (``tests/cases_s4.py``) drive the same functions to hold and to fail each check. Every number
they decide with is in the topic's home, ``token_subspace.toml``, with its derivation.

S4.10's final-layer subspaces at blocks 6..1 satisfy SOURCE_SATISFIED_6 ... SOURCE_SATISFIED_1 % of S4's prompts,
against S4's chance SOURCE_CHANCE_6 ... SOURCE_CHANCE_1 %: block 1's is what S4 still calls far above chance.
Block-specific subspaces (learned at the input of the block after, through the later blocks): blocks 6, 5, 4 give
SOURCE_SPECIFIC_6, SOURCE_SPECIFIC_5, SOURCE_SPECIFIC_4 % against the same chance levels. Since version 2 the
statistic is the excess over a null, (rate − null) / (1 − null), where the null is the same criterion with each
prompt's FFN output paired with another prompt's tokens (prompt-shuffled): it keeps the ranking's bias towards
frequent tokens and large subspaces, which the analytic chance C(V/2, n)/C(V, n) does not. The bound is S4's own
excess over its (analytic) chance at its weakest block, block 1: (SOURCE_SATISFIED_1 − SOURCE_CHANCE_1) / (100 −
SOURCE_CHANCE_1) = FAR_ABOVE_NULL; block-specific, block 4: SPECIFIC_ABOVE_NULL. The shuffled null is at least the
analytic chance where the ranking is biased, so reading S4's excess as the bound for ours asks at least as much as
S4 showed.
"""

from claims.s4_ffn.token_subspace_measures import SubspaceEstimates, TokenEmbeddingEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

PROBABILITY_NEAR_ONE, EVERY_TOKEN, CONVERGED, FAR_ABOVE_NULL, SPECIFIC_ABOVE_NULL = numbers(
    __file__, "PROBABILITY_NEAR_ONE", "EVERY_TOKEN", "CONVERGED", "FAR_ABOVE_NULL", "SPECIFIC_ABOVE_NULL")


def token_embedding_checks(e: TokenEmbeddingEstimates) -> list[Check]:
    """S4.9's two claim checks (p above PROBABILITY_NEAR_ONE for every token; its first direction predicts more than
    EVERY_TOKEN of them) and the convergence control (more steps gain under CONVERGED). Pure: the same estimates give
    the same checks.

    Returns:
        two claim checks and one control, in that order.
    """
    return [
        Check.of("least mean p(token) of a token's learned vectors", e.p, "probability", ">", PROBABILITY_NEAR_ONE,
                 **catalogued("S4.9/probability-near-one")),
        Check.of("fraction of tokens whose first singular direction alone predicts them (argmax)", e.predicts,
                 "fraction", ">", EVERY_TOKEN,
                 **catalogued("S4.9/first-direction-predicts")),
        Check.of(f"largest gain in mean p of the {e.continued} least predicted tokens from {e.steps} more steps",
                 e.gain, "probability", "<", CONVERGED,
                 role="control",
                 **catalogued("S4.9/converged")),
    ]


def subspace_checks(e: SubspaceEstimates) -> list[Check]:
    """S4.10's control (the instrument on the final state), then per block the final-layer check (above
    FAR_ABOVE_NULL) and, but at the last block, the block-specific check (above SPECIFIC_ABOVE_NULL). Pure: the same
    estimates give the same checks.

    Returns:
        one control, then per block one or two claim checks.
    """
    checks = [Check.of("final state: excess over the prompt-shuffled null, the model's own 90 %-mass tokens",
                       e.final_state, "fraction", ">", FAR_ABOVE_NULL, role="control",
                       **catalogued("S4.10/final-state-control"))]
    for b, excess in enumerate(e.excess):
        checks.append(Check.of(f"block {b + 1}: excess over the prompt-shuffled null (final-layer subspaces, |cos|)",
                               excess, "fraction", ">", FAR_ABOVE_NULL,
                               **catalogued(f"S4.10/block-{b + 1}/final-layer")))
        if b < len(e.specific):  # the last block's own subspaces are the final-layer ones
            checks.append(Check.of(f"block {b + 1}: excess over the prompt-shuffled null (block-specific subspaces, "
                                   "|cos|)", e.specific[b], "fraction", ">", SPECIFIC_ABOVE_NULL,
                                   **catalogued(f"S4.10/block-{b + 1}/block-specific", next_block=b + 2)))
    return checks
