"""ToyBench: Yes/No questions about a coloured square (a benchmark added inside the tree)."""
