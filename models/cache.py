"""The on-disk cache (corpus, tokenizers, checkpoints); its files are written by ``models.atomic_files``."""

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache directory: ``$LATENT_CLAIMS_CACHE`` or ``~/.cache/latent-claims``.

    Everything in it is keyed by content hashes, so it is safe to share
    between checkouts and to carry to another machine.
    """
    root = Path(os.environ.get("LATENT_CLAIMS_CACHE") or Path.home() / ".cache" / "latent-claims")
    root.mkdir(parents=True, exist_ok=True)
    return root
