"""Contrastive probing of hidden states (SpatialTunnel paper §5; the authors' probing.py).

* ``data`` -- where probing pairs enter (our generator's probing variant, the official
  ``contrastive_probing`` tables, EmbSpatial-style MCQ TSVs), checked once;
* ``run`` -- ``spatial-tasks probe``: the model pass (resumable, memory bounded), ``recompute``;
* ``metrics`` -- pure functions: axis coherence, VD-EI, the layer choice (App. D.3/D.4);
* ``plots`` / ``report`` -- coherence per layer, PCA, the report section.
"""
