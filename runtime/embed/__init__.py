"""The default embedder: deterministic, similarity-preserving vectors, and each model's usual dimension."""
