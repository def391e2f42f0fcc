"""Tiny VLMs trained on our own renders to a known behaviour, so the benchmarks are seen to catch it.

The shared part of every benchmark's ``known_models/``: ``examples`` turns what a behaviour sees in a
doc (``Asked``) into the inputs lmms-eval sends, ``train`` teaches a tiny Qwen2.5-VL in two stages,
``card`` writes the card, loss curve and hashes and measures a checkpoint through the lmms-eval CLI.
Each benchmark's ``known_models/`` says what is planted and builds it (``spatial-tasks known-model``).
Read docs/known-models.md first.
"""
