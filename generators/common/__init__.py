"""Shared layer for the scene generators (installed as ``spatial_tasks.generators.common``).

- ``blender``: version-adaptive bpy helpers (bpy 4.5 and 5.x): scene reset, Cycles settings,
  materials, physical sky, camera, meshes, camera projection, multilayer-EXR passes.
- ``jobs``: sharding (``--shard K/N``), SHA-256 seeds, atomic writes, the worker pool.
- ``png``: PNG chunk helpers (strip Cycles' timing text so the same seed gives the same bytes).
- ``dataset``: parquet shards with ``datasets`` features, generation records, card templates.
- ``publish``: upload a dataset folder to the Hugging Face Hub.

Only ``blender`` needs bpy, and it imports it lazily.
"""
