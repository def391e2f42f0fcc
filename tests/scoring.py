"""A shared check of the *_yesno scorers: every scoring path a model offers equals one by one."""

from __future__ import annotations

import numpy as np

from spatial_tasks.models.scoring_paths import GROUPED, ONE_BY_ONE, PACKED, PREPARED_ONCE

TOL = 1e-5  # fp32 logits: batch 1 vs padded batches vs precomputed image features vs packed


def check_batch_invariance(model, items, monkeypatch, tol: float = TOL) -> tuple[list, list[int]]:
    """Score ``items`` one by one, then by each path the model offers alone (``offered_paths``:
    the family's paths this class implements; batches of 3); assert every path agrees with one by
    one to ``tol`` (the pipelines also on the argmax token) and that the prompts reach the logits.
    Returns (the one-by-one scores, the number of images each vision-tower call of the grouped
    path encoded)."""
    calls: list[int] = []
    encode = getattr(model, "yesno_encode_images", None)
    if encode is not None:
        monkeypatch.setattr(model, "yesno_encode_images", lambda parts: calls.append(len(parts)) or encode(parts))
    one = model.score_items(items, 1, paths=(ONE_BY_ONE,))
    encoded: list[int] = []
    assert ONE_BY_ONE in model.offered_paths()
    for path in model.offered_paths():
        calls.clear()
        other = model.score_items(items, 3, paths=(path,))  # this path alone: nothing may be passed on
        if path == GROUPED:
            encoded = list(calls)
        for a, b in zip(one, other, strict=True):
            assert np.isfinite([a.logit_yes, a.logit_no]).all()
            assert abs(a.logit_yes - b.logit_yes) <= tol and abs(a.logit_no - b.logit_no) <= tol, path
            if path in (PACKED, PREPARED_ONCE):
                assert a.text == b.text, path
    assert len({round(s.logit_yes - s.logit_no, 6) for s in one}) > 1  # the prompts do reach the logits
    return one, encoded
