"""The xarray backend: `xr.open_dataarray(path, engine="caterva")`, lazy,
with dims, coordinates and attrs from the vlmeta, checked with xarray's own
operations against the same DataArray in memory."""

import numpy as np
import pandas as pd
import pytest

import caterva as cat

xr = pytest.importorskip("xarray")
from caterva.xarray_backend import CatervaBackendArray, to_caterva  # noqa: E402


def sample():
    rng = np.random.default_rng(3)
    time = pd.date_range("2026-01-01", periods=40, freq="D")
    data = rng.normal(size=(40, 12, 9)).astype("f4")
    return xr.DataArray(data, dims=("time", "y", "x"),
                        coords={"time": time, "y": np.arange(12) * 0.5, "x": [f"s{i}" for i in range(9)]},
                        name="temperature", attrs={"units": "K", "scale": 0.5, "tags": ["a", "b"], "nested": {"k": 1}})


@pytest.mark.parametrize("contiguous", [False, True])
def test_open_dataarray_is_lazy_and_equal(tmp_path, contiguous, monkeypatch):
    ref = sample()
    url = tmp_path / ("t.b2frame" if contiguous else "t.b2nd")
    to_caterva(ref, url, chunks=(10, 6, 9), blocks=(5, 3, 3), contiguous=contiguous)
    reads = []
    orig = CatervaBackendArray._read
    monkeypatch.setattr(CatervaBackendArray, "_read", lambda self, key: reads.append(key) or orig(self, key))
    da = xr.open_dataarray(url, engine="caterva")
    assert reads == []  # opening reads metadata only
    assert da.name == "temperature" and da.dims == ("time", "y", "x") and da.shape == ref.shape
    assert da.dtype == np.float32 and da.attrs == ref.attrs
    xr.testing.assert_identical(da.coords.to_dataset(), ref.coords.to_dataset())
    # isel: one read, of the selected items only
    got = da.isel(time=3, y=slice(2, 8, 2))
    assert len(reads) == 0
    xr.testing.assert_identical(got.load(), ref.isel(time=3, y=slice(2, 8, 2)))
    assert len(reads) == 1 and reads[0][0] == 3
    # sel on coordinates (a date range, labels), and an outer selection
    xr.testing.assert_identical(da.sel(time=slice("2026-01-05", "2026-01-09"), x=["s1", "s7"]).load(),
                                ref.sel(time=slice("2026-01-05", "2026-01-09"), x=["s1", "s7"]))
    xr.testing.assert_allclose(da.mean("time"), ref.mean("time"), rtol=1e-6)
    xr.testing.assert_allclose(da.sel(y=2.5).max(), ref.sel(y=2.5).max())
    xr.testing.assert_identical(da.load(), ref)


def test_arrays_without_xarray_metadata_and_dask(tmp_path):
    a = cat.asarray(np.arange(24, dtype="i8").reshape(4, 6), urlpath=str(tmp_path / "plain.b2nd"))
    a.vlmeta["units"] = "m"
    a.vlmeta.set_raw("raw", b"\x00\xffC")
    a.close()
    da = xr.open_dataarray(tmp_path / "plain.b2nd", engine="caterva")
    assert da.dims == ("dim_0", "dim_1") and da.name is None
    assert da.attrs == {"units": "m", "raw": b"\x00\xffC"}
    np.testing.assert_array_equal(da.values, np.arange(24).reshape(4, 6))
    # Dask chunks, computed in threads
    pytest.importorskip("dask")
    dd = xr.open_dataarray(tmp_path / "plain.b2nd", engine="caterva", chunks={"dim_0": 2})
    assert dd.chunks == ((2, 2), (6,))
    assert int(dd.sum().compute()) == sum(range(24))


def test_backend_is_registered_and_guesses():
    assert "caterva" in xr.backends.list_engines()
    entry = xr.backends.list_engines()["caterva"]
    assert entry.guess_can_open("a.b2nd") and entry.guess_can_open("b.b2frame") and not entry.guess_can_open("c.nc")


def test_to_caterva_refuses_before_writing(tmp_path):
    ref = sample()
    bad = ref.copy()
    bad.attrs = {"f": object()}
    with pytest.raises(TypeError, match="msgpack"):
        to_caterva(bad, tmp_path / "bad.b2nd")
    assert not (tmp_path / "bad.b2nd").exists()
    many = ref.copy()
    many.attrs = {f"a{i}": i for i in range(20)}
    with pytest.raises(ValueError, match="at most 16"):
        to_caterva(many, tmp_path / "many.b2nd")
    assert not (tmp_path / "many.b2nd").exists()
    clash = ref.copy()
    clash.attrs = {"_ARRAY_DIMENSIONS": 1}
    with pytest.raises(ValueError, match="backend's own"):
        to_caterva(clash, tmp_path / "clash.b2nd")
