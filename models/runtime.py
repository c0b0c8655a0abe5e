"""Run-time settings that make CPU numbers repeatable."""

import torch


def pin_cpu_threads(share: int = 1) -> None:
    """Fix torch's CPU thread count: its current value, divided among ``share`` processes.

    Left alone, MKL adapts its thread count at run time (MKL_DYNAMIC), which
    changes the summation order of large matrix products and so the trained
    weights in the last bits; setting the count explicitly turns that off.
    Seen here: the 192-wide tiny model trained to different weights in two
    processes until this was called.

    Args:
        share: processes that run at once on this machine (pytest-xdist workers): each takes its part of
            the threads, at least one. Two workers of two threads each on 2 cores ran the claims more than
            5× slower than one process (OpenMP threads spinning against each other). A different thread
            count sums in another order, so a worker's numbers can differ from a serial run's in the last bits.
    """
    torch.set_num_threads(max(1, torch.get_num_threads() // share))
