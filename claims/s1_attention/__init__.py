"""S1: attention as Gaussian odds ratios and barycentric coordinates; the depth-wise trajectory; pooled-feature probes."""
