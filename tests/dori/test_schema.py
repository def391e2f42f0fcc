"""Table 5's broad classes and the natural/simulated split, kept as data."""

from spatial_tasks.dori.schema import BROAD_CLASSES, broad_classes, is_natural


def test_broad_classes_follow_table_5_with_its_overlaps():
    assert broad_classes("car") == ["Vehicle"]
    assert broad_classes("Teddy_Bear") == ["Miscellaneous"]
    assert broad_classes("bottle") == ["Food", "Containers"]  # the paper lists it twice
    assert broad_classes("medicine_bottle") == ["Containers"]
    assert broad_classes("spaceship") == ["Miscellaneous"] and broad_classes(None) == ["Miscellaneous"]
    # as transcribed from the paper's Table 5: 72 entries, 69 distinct (bottle, bowl, wine glass twice)
    assert {k: len(v) for k, v in BROAD_CLASSES.items()} == {
        "Vehicle": 14, "Person": 3, "Animals": 11, "Food": 13, "Containers": 6, "Furniture": 7, "Electronics": 5,
        "Miscellaneous": 13}
    assert len({c for v in BROAD_CLASSES.values() for c in v}) == 69


def test_sources():
    assert is_natural("KITTI") and is_natural("NOCS REAL") and is_natural("coco")
    assert is_natural("ShapeNet") is False and is_natural("3D-Future") is False
    assert is_natural("spatial-tasks-render") is False
    assert is_natural("somewhere") is None
