"""SpatialTunnel's models with known behaviour: ``shortcut`` (the photo shortcut) and ``depth``.

``behaviours`` says what each is taught and reads each doc as ``known_models.examples.Asked``;
``build`` is ``spatial-tasks known-model shortcut|depth`` (renders, training, lmms-eval figures, card);
the shipped checkpoints are under ``checkpoints/``. The training itself is shared:
``spatial_tasks.known_models``. Read docs/known-models.md first.
"""
