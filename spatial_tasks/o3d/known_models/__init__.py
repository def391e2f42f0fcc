"""O3-D's model with known behaviour: ``height``, which judges depth by height in the plane alone.

``behaviours`` says what it is taught and reads each doc as ``known_models.examples.Asked``;
``build`` is ``spatial-tasks known-model height`` (renders, training, lmms-eval figures per cue, card);
the shipped checkpoint is under ``checkpoints/``. The training itself is shared:
``spatial_tasks.known_models``. Read docs/known-models.md first.
"""
