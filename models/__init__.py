"""Model side of latent-claims: corpus, tokenizers, trainer, zoo, architecture adapters."""
