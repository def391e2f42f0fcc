"""VAGUE generators: the bundled sample and the dataset-construction pipeline."""
