"""The sizes of S3's runs (:class:`Scale`): prompts and descent steps per model, on a CPU and at source scale, and
which prompts choose the headline setting and which report it. Part of the key of S3's cache of inversions
(``claims.s3_inversion.inversions``), which reads it.
"""

from dataclasses import dataclass

import numpy as np

from latent_instruments.stats import Estimate, proportion
from models.zoo import resolve

WIDE = 512  # d_model from which a model counts as wide for the CPU sizes (references, hf models)


@dataclass(frozen=True)
class Scale:
    """The sizes of S3's runs.

    Attributes:
        source: whether these are the source-scale sizes.
        prompts: number of prompts inverted together (bootstrap units); on a CPU the first third choose the
            setting and the other two thirds are reported (:meth:`chosen`, :meth:`reported`).
        wide_prompts: the same for models 512 or more wide (the references, hf models), whose blocks cost
            about 30x a tiny model's per step on a CPU; since issue 43 the CPU's are 24 too (16 reported prompts
            are the fewest a bootstrap decides from), which costs the references 3x their earlier 8.
        untrained_steps: N for untrained and random-init models (S3.2: "the same model before training ... N=200").
        trained_steps: N for trained models (S3: N = 2000 for a trained GPT-2 block; 20000 for its failure).
        look: a sequential test's later look takes this many times the prompts (``fixtures.rounds``).
    """

    source: bool
    prompts: int
    wide_prompts: int
    untrained_steps: int
    trained_steps: int
    look: int = 1

    @classmethod
    def of(cls, source_scale: bool) -> "Scale":
        """The source's sizes with ``--source-scale on`` (the default with CUDA), else the CPU sizes."""
        if source_scale:
            return cls(True, 64, 64, 200, 2000)
        return cls(False, 24, 24, 200, 200)

    def prompts_for(self, d_model: int) -> int:
        """Prompts for a model of this width (times the look's scale)."""
        return (self.wide_prompts if d_model >= WIDE else self.prompts) * self.look

    def steps(self, name: str) -> int:
        """N for a model: trained (and hf) models get ``trained_steps``, untrained and reference ``untrained_steps``."""
        return self.untrained_steps if resolve(name).random_init else self.trained_steps

    def choosing(self, units: np.ndarray) -> np.ndarray:
        """The prompts that choose the headline setting: on a CPU the first third of ``units`` (prompts, ...), at
        source scale none (S3's setting is fixed)."""
        return units[:0] if self.source else units[:units.shape[0] // 3]

    def reported(self, units: np.ndarray) -> np.ndarray:
        """The prompts a headline statistic is measured on: on a CPU the last two thirds of ``units`` (prompts,
        ...), those that did not choose the setting (16 of the CPU's 24); at source scale all of them."""
        return units if self.source else units[units.shape[0] // 3:]

    def reported_fraction(self, units: np.ndarray, chosen: np.ndarray | int | None = None) -> Estimate:
        """The fraction of the reported prompts that succeed, with its exact binomial interval.

        Args:
            units: (prompts,) 0/1, or (prompts, settings) 0/1 with ``chosen`` the column (:meth:`chosen`).
        Returns:
            ``latent_instruments.stats.proportion`` of the reported prompts (Clopper–Pearson at the look's level).
        Raises:
            ValueError: as ``proportion`` (no prompts, units that are not 0/1).
        """
        units = np.asarray(units)
        if chosen is not None:
            units = units[:, int(chosen)]
        return proportion(self.reported(units))

    def chosen(self, units: np.ndarray) -> np.ndarray:
        """The headline setting per column, as an index into ``DESCENT_SETTINGS``: units (prompts, ..., settings) ->
        (...,) ints, chosen once.

        At source scale it is S3's own setting (index 0), as S3's code runs it. On a CPU it is the better of the
        two by the mean over the choosing third of the prompts (S3's "some learning rate tuning"): at the CPU's
        N = 200, S3's setting passes S3's own success test on few of a trained model's prompts (0-56 % on the
        tiny zoo, where S3 gives a trained block N = 2000), so a verdict on it would measure the budget, not the
        model. The claim is then measured on the other two thirds (:meth:`reported`): a maximum over two
        estimates, taken on the prompts it is reported on (version 3, inside every resample), is biased upward.

        Raises:
            ValueError: on a CPU, for fewer than 3 prompts (one to choose, two to report).
        """
        if self.source:
            return np.zeros(units.shape[1:-1], dtype=int)
        if units.shape[0] < 3:
            raise ValueError(f"choosing a setting on a third of the prompts needs at least 3, got {units.shape[0]}")
        return self.choosing(units).mean(axis=0).argmax(axis=-1)

    def headline(self, units: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """The chosen setting's mean per column: units (prompts, ..., settings), chosen (...,) from
        :meth:`chosen` -> (...,). Called inside a bootstrap on :meth:`reported` units; nothing is chosen here."""
        return np.take_along_axis(units.mean(axis=0), np.asarray(chosen)[..., None], axis=-1)[..., 0]

    @property
    def headline_label(self) -> str:
        """The headline setting in a check's name: "S3's setting" at source scale, else "better setting"."""
        return "S3's setting" if self.source else "better setting"

    @property
    def headline_reading(self) -> str:
        """How the headline setting is chosen, for a check's derivation."""
        if self.source:
            return ("The statistic is S3's own setting's, as S3's text gives it: start N(½, 1/20²), shift "
                    "σ = 1/20, η 1 → 1/100 (S3's published code starts lower; S3.7 reports both rates)")
        return ("The statistic is the better of S3's own setting and the adapted one, chosen once on the first "
                "third of the prompts and measured on the other two thirds: on a CPU, N = 200 leaves S3's setting short of "
                "S3's success test on most of a trained model's prompts (S3 gives a trained block N = 2000); at "
                "source scale (a GPU) it is S3's setting alone, on every prompt")

    def note(self) -> str:
        """What differs from the source's sizes, for ``claim.record(scaled=...)``; "" at source scale."""
        if self.source:
            return ""
        return (f"CPU sizes: {self.prompts} prompts ({self.prompts // 3} choose the setting, the others are reported) "
                f"and N = {self.untrained_steps} steps for every model; at source "
                f"scale (--source-scale on, the default with CUDA) 64 prompts and N = 2000 for trained models, as S3's "
                "trained GPT-2 block (fewer steps can only leave a trained model less well inverted)")
