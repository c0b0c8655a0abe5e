"""Run-time settings that make CPU numbers repeatable."""

import torch


def pin_cpu_threads() -> None:
    """Fix torch's CPU thread count to its current value.

    Left alone, MKL adapts its thread count at run time (MKL_DYNAMIC), which
    changes the summation order of large matrix products and so the trained
    weights in the last bits; setting the count explicitly turns that off.
    Seen here: the 192-wide tiny model trained to different weights in two
    processes until this was called.
    """
    torch.set_num_threads(torch.get_num_threads())
