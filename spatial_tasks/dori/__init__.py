"""DORI: object orientation (arXiv 2505.21649)."""
