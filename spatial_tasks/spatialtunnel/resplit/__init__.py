"""Consistent / counter / ambiguous re-splits of real depth benchmarks (SpatialTunnel paper §3,
Tables 1 and 2): EmbSpatial-Bench and CV-Bench-3D in lmms-eval.

* ``docs`` -- where their depth questions enter, each placed by the tunnel's 5 % rule;
* ``tasks`` -- the lmms-eval hooks (lmms-eval's own prompts and answer readers);
* ``metrics`` -- pure functions: Acc_con, Acc_ctr, Δ, the split counts; the paper's tables;
* ``baselines`` / ``report`` -- the oracle and shortcut baselines, the report section.
"""
