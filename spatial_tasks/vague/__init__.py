"""VAGUE: intent disambiguation from an ambiguous utterance and the image (arXiv 2411.14137)."""
