"""S3.10's measurements: token accuracy against the number of output features kept, and the crossing k* where it reaches
half the full output's. test_bandwidth.py measures with these; bandwidth_checks.py decides.
"""

from dataclasses import replace
from functools import partial

import numpy as np
import torch

from claims.s3_inversion.bandwidth_checks import CrossingEstimates, crossing_checks
from claims.s3_inversion.convergence import further_steps
from claims.s3_inversion.inversions import TOP_K, layer_output
from latent_instruments.inversion import invert
from latent_instruments.stats import Estimate
from models.forwards import descents_at_once, frozen, side_by_side
from reports.checks import Check


GRID = 4  # first pass: k at quarters of d_model


class Curve:
    """Per-prompt accuracy, S3's success test and top-5 decoding at each k evaluated, inverting once per k (cached).

    Attributes:
        points: k -> (prompts,) token accuracy (whole-vocabulary decoding), every prompt.
        success: k -> (prompts,) 1.0 where S3's success test holds on the first k features, every prompt.
        top_k: k -> (prompts, T, 5) decoded token ids, best first.
        rows: the prompts the curve reports (``__call__``, ``mean``, ``passed``): all of them until the headline
            setting has been chosen, then the half that did not choose it (``Scale.reported``).
    """

    def __init__(self, subject, ids: torch.Tensor, problem, config, seed: int):
        self.subject, self.ids, self.pinv, self.config, self.seed = subject, ids, problem.pinv, config, seed
        self.layer = layer_output(subject, 0, ids.shape[1])
        self.points: dict[int, np.ndarray] = {}
        self.success: dict[int, np.ndarray] = {}
        self.top_k: dict[int, torch.Tensor] = {}
        self.found: dict[int, torch.Tensor] = {}  # k -> found inputs, where a convergence control continues them
        self.rows: slice | np.ndarray = slice(None)
        self._ahead: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # k -> a descent run ahead (:meth:`ahead`)

    def _descent(self, k: int, start: torch.Tensor | None = None, rows=slice(None)) -> tuple[torch.Tensor, ...]:
        """(prompts, T, TOP_K) decoded token ids over the whole vocabulary, (prompts,) S3's success test and the found
        inputs (prompts, T, d_model), from the first k features (one descent, on one thread); with ``start`` (found
        inputs of the prompts ``rows``), the descent that ended there continued for ``convergence.further_steps``
        more, on those prompts."""
        weight = self.subject.model.get_input_embeddings().weight.detach()
        config = self.config if start is None else replace(self.config, steps=further_steps(self.config.steps))
        with frozen(self.subject.model):
            found = invert(self.layer, self.ids[rows], weight, torch.Generator().manual_seed(self.seed), config,
                           features=slice(0, k), k=TOP_K, pinv=self.pinv, start=start)
        return found.top_k, found.success, found.inputs

    def __call__(self, k: int) -> np.ndarray:
        """(reported prompts,) token accuracy from the first k features of block 1's output, whole-vocabulary
        decoding."""
        if k not in self.points:
            self.top_k[k], success, self.found[k] = self._ahead.pop(k) if k in self._ahead else self._descent(k)
            self.points[k] = (self.top_k[k][..., 0] == self.ids).double().mean(1).cpu().numpy()
            self.success[k] = success.double().cpu().numpy()
        return self.points[k][self.rows]

    def continued(self, *ks: int) -> np.ndarray:
        """(reported prompts, len(ks)) token accuracy from the first k features after the descents of ``ks`` (already
        evaluated) continue side by side to ``convergence.LONGER`` × N steps on the reported prompts (S3.10's
        convergence control)."""
        rows = torch.as_tensor(np.arange(self.ids.shape[0])[self.rows], device=self.ids.device)  # the reported ones
        more = side_by_side(self.subject.model, [partial(self._descent, k, self.found[k][rows], rows) for k in ks])
        return np.column_stack([(top[..., 0] == self.ids[rows]).double().mean(1).cpu().numpy() for top, _, _ in more])

    def ahead(self, *ks: int) -> None:
        """Run the descents of ``ks`` not yet run side by side (``models.forwards.side_by_side``; on a GPU, where they
        would run one by one, nothing) and keep them aside: a k counts as evaluated (``points``, the record's k's) only
        once it is asked for, so a search that runs its likely next k beside the current one records what the
        one-by-one search does, in the time of one descent where the guess was right."""
        missing = [k for k in dict.fromkeys(ks) if k not in self.points and k not in self._ahead]
        if len(missing) > 1 and descents_at_once(self.subject.model) > 1:
            self._ahead.update(zip(missing, side_by_side(self.subject.model, [partial(self._descent, k) for k in missing])))

    def mean(self, k: int) -> float:
        """Mean token accuracy from the first k features, over the reported prompts."""
        return float(self(k).mean())

    def passed(self, k: int) -> np.ndarray:
        """(reported prompts,) 1.0 where S3's success test holds on the first k features."""
        self(k)
        return self.success[k][self.rows]


def crossing(curve: Curve, d_model: int, level: float) -> int:
    """Fewest features k with mean accuracy ≥ level: a grid of ``GRID`` steps over d_model, then bisection. Each k is
    run beside the k the search asks for next should this one fall short of the level (grid) or reach it (bisection)
    (:meth:`Curve.ahead`), which changes the time, not what is evaluated."""
    grid = sorted({max(1, round(d_model * i / GRID)) for i in range(1, GRID + 1)})
    for i, k in enumerate(grid):
        curve.ahead(k, *grid[i + 1 : i + 2])
        if curve.mean(k) >= level:
            high = k
            break
    else:
        raise ValueError(f"no k up to d_model = {d_model} reaches {level}: the level must be at most the full output's")
    low = max([k for k in grid if k < high], default=0)
    while high - low > 1:
        middle = (low + high) // 2
        curve.ahead(middle, (low + middle) // 2)
        if curve.mean(middle) >= level:
            high = middle
        else:
            low = middle
    return high


def crossing_fraction(units: np.ndarray, ks: list[int], d_model: int) -> float:
    """k*/d_model from accuracies at the evaluated k: the fewest features whose mean accuracy reaches half the full
    output's (S3.10's crossing), as a fraction of the width.

    Args:
        units: (prompts, len(ks)) token accuracy per prompt at each k, columns in the order of ``ks``.
        ks: the feature counts evaluated, ascending, the last one d_model (the full output).
        d_model: the width.
    Raises:
        ValueError: if ``ks`` does not end at d_model.
    """
    if ks[-1] != d_model:
        raise ValueError(f"the evaluated feature counts must end at d_model = {d_model}; got {ks[-1]}")
    means = units.mean(axis=0)
    return next(k for k, m in zip(ks, means) if m >= means[-1] / 2) / d_model


def threshold_within(k_star: int, prompts: int) -> Check:
    """S3.10's crossing check (``crossing_checks``) of the count ``k_star`` over ``prompts`` (exact: no interval)."""
    return crossing_checks(CrossingEstimates(Estimate(float(k_star), float(k_star), float(k_star), 1.0, prompts)),
                           0)[0]
