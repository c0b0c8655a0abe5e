"""S3.6's statistic: one decoding's token accuracy minus another's, from exact counts. test_vocabulary.py measures with
it; vocabulary_checks.py decides.
"""


def accuracy_difference(a: int, b: int, tokens: int):
    """Statistic of units (prompts, decodings) holding counts of tokens right per prompt: the accuracy of decoding
    ``a`` minus that of ``b``, from integer counts (exact: equal accuracies give 0, not a float32 rounding)."""
    return lambda u: float(u[:, a].sum() - u[:, b].sum()) / (len(u) * tokens)
