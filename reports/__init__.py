"""Reports of latent-claims: claim records, results.json, report.md/html, baseline comparison."""
