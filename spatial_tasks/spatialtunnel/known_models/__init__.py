"""Tiny VLMs trained on our own renders to a known behaviour, so the benchmarks are seen to catch it.

``behaviours`` says what each model is taught, ``examples`` turns generator renders into the
inputs lmms-eval sends, ``train`` teaches, ``build`` is the ``spatial-tasks known-model`` command
(renders, training, lmms-eval figures, card); the shipped checkpoints are under ``checkpoints/``.
Read docs/known-models.md first.
"""
