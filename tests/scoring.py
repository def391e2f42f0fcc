"""A shared check of the *_yesno scorers: batch 1 = padded batches = grouped by image."""

from __future__ import annotations

import numpy as np

TOL = 1e-5  # fp32 logits: batch 1 vs padded batches vs precomputed image features


def check_batch_invariance(model, items, monkeypatch, tol: float = TOL) -> tuple[list, list[int]]:
    """Score ``items`` one by one, in one padded batch, grouped by image and packed where the family
    packs (batches of 3); assert
    they agree to ``tol`` and that the prompts reach the logits. Returns (the one-by-one scores,
    the number of images each vision-tower call encoded)."""
    encoded: list[int] = []
    encode = model._yesno_encode_images
    monkeypatch.setattr(model, "_yesno_encode_images", lambda parts: encoded.append(len(parts)) or encode(parts))
    one = [model.score_yes_no(c, v) for c, v in items]
    batched = model.score_yes_no_batch(items)
    grouped = model.score_grouped(items, batch_size=3)
    packed = model.score_packed(items, batch_size=3) if model.can_pack() else grouped
    for a, b, g, p in zip(one, batched, grouped, packed, strict=True):
        assert np.isfinite([a.logit_yes, a.logit_no]).all()
        assert abs(a.logit_yes - b.logit_yes) <= tol and abs(a.logit_no - b.logit_no) <= tol
        assert abs(a.logit_yes - g.logit_yes) <= tol and abs(a.logit_no - g.logit_no) <= tol
        assert abs(a.logit_yes - p.logit_yes) <= tol and abs(a.logit_no - p.logit_no) <= tol and a.text == p.text
    assert len({round(s.logit_yes - s.logit_no, 6) for s in one}) > 1  # the prompts do reach the logits
    return one, encoded
