"""ToyBench: a tiny fifth benchmark that lives only in the tests (see ../README.md)."""
