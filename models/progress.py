"""Training progress: one bar over every model to train, with an estimate measured on this machine.

The bar counts training work, 6 × parameters × tokens FLOPs per step (``training_flops``), so tqdm's rate is the
throughput measured so far and its ETA covers every model still to train, not only the current one. After each
model's first ``CALIBRATION_STEPS`` steps a line says how long that model and the rest will take at the
throughput just measured. ``python -m models prepare`` shows one bar for the zoo; the suite, which trains a model
on first use, shows one per model through pytest's terminal (``fixtures.pool``).
"""

import sys

from tqdm.auto import tqdm

CALIBRATION_STEPS = 10  # steps timed before a model's estimate is stated (the first one, with its warm-up, left out)


def format_duration(seconds: float) -> str:
    """"about 40 seconds", "about 12 minutes", "about 26 hours", "about 5 days"."""
    for unit, size, up_to in (("second", 1, 90), ("minute", 60, 90 * 60), ("hour", 3600, 72 * 3600)):
        if seconds < up_to:
            count = max(1, round(seconds / size))
            return f"about {count} {unit}{'s' if count != 1 else ''}"
    return f"about {round(seconds / 86400)} days"


def training_flops(n_params: int, steps: int, batch: int, context: int) -> float:
    """Training work of ``steps`` optimizer steps: 6 FLOPs per parameter per token (2 forward, 4 backward).

    Attention's own FLOPs, evaluation and the optimizer are left out: a measure of work for the bar, whose rate
    is measured, not a prediction by itself.
    """
    return 6.0 * n_params * steps * batch * context


class TrainingProgress:
    """The progress of training one or more models.

    Args:
        work: {model name: its training FLOPs (:func:`training_flops`)}, every model this bar covers.
        label: the bar's description, e.g. "zoo tiny".
    """

    def __init__(self, work: dict[str, float], label: str):
        self.work = dict(work)
        self.bar = tqdm(total=sum(self.work.values()), desc=label, unit="FLOP", unit_scale=True, mininterval=5,
                        file=sys.stderr)

    def advance(self, flops: float, **postfix) -> None:
        """One step done: ``flops`` of work (FLOPs); ``postfix`` shown beside the bar (model, losses)."""
        self.bar.update(flops)
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)

    def measured(self, name: str, steps_left: int, seconds_per_step: float, flops_per_step: float) -> str:
        """State what model ``name``'s first steps measured; return the line written.

        Args:
            steps_left: the model's steps still to run.
            seconds_per_step: wall time per step over its first steps (s).
            flops_per_step: its work per step (FLOPs).
        """
        line = (f"training {name}: {format_duration(steps_left * seconds_per_step)} more "
                f"({seconds_per_step:.3g} s a step over its first {CALIBRATION_STEPS} steps)")
        if len(self.work) > 1:
            rate = flops_per_step / seconds_per_step
            line += (f"; the {len(self.work)} models: {format_duration((self.bar.total - self.bar.n) / rate)} more "
                     f"at this throughput ({rate / 1e9:.3g} GFLOP/s of training)")
        tqdm.write(line, file=sys.stderr)
        return line

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()
