"""Arrays made from data are tuned by it (the core's tuner), unless told."""
import numpy as np
import pytest

import caterva

# 32 MiB: the tuner's minimum.
LABELS = np.repeat(np.arange(512, dtype=np.int64), 8192).reshape(256, 128, 128)


def test_an_array_from_data_is_tuned_and_says_why(tmp_path):
    a = caterva.asarray(LABELS, urlpath=tmp_path / "a.b2nd")
    report = a.vlmeta["caterva.tuning"]
    assert report.startswith("balanced: "), report
    assert "candidates on samples of whole blocks" in report, report
    np.testing.assert_array_equal(a[...], LABELS)
    # Kept with the array, for every reader.
    b = caterva.open(tmp_path / "a.b2nd")
    assert b.vlmeta["caterva.tuning"] == report
    np.testing.assert_array_equal(b[...], LABELS)


@pytest.mark.parametrize("objective", ["speed", "size"])
def test_each_objective_chooses(objective):
    a = caterva.asarray(LABELS, tune=objective)
    assert a.vlmeta["caterva.tuning"].startswith(objective + ": ")
    np.testing.assert_array_equal(a[...], LABELS)
    if objective == "speed":
        assert a.codec == caterva.Codec.LZ4


def test_what_the_caller_names_or_declines_is_not_tuned():
    assert "caterva.tuning" not in caterva.asarray(LABELS, tune=False).vlmeta
    named = caterva.asarray(LABELS, codec=caterva.Codec.ZSTD, clevel=1)
    assert "caterva.tuning" not in named.vlmeta
    assert named.codec == caterva.Codec.ZSTD
    # Small arrays keep the default rule.
    assert "caterva.tuning" not in caterva.asarray(np.arange(1000)).vlmeta
    with pytest.raises(ValueError, match="tune must be"):
        caterva.zeros((4,), dtype=np.int32, tune="fastest")


def test_tune_says_what_the_constructors_would_choose():
    t = caterva.tune(LABELS)
    a = caterva.asarray(LABELS)
    assert t["report"].split(";")[0] == a.vlmeta["caterva.tuning"].split(";")[0]
    assert (t["chunks"], t["blocks"], t["codec"]) == (a.chunks, a.blocks, a.codec)
    assert "default rule" in caterva.tune(np.arange(10))["report"]
    b = caterva.asarray(LABELS, tune=False, **{k: v for k, v in t.items() if k != "report"})
    np.testing.assert_array_equal(b[...], LABELS)
    assert b.codec == t["codec"]
