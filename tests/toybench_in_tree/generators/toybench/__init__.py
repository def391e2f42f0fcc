"""ToyBench's generator."""
