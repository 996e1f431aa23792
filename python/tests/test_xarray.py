"""The xarray backend: `xr.open_dataarray(path, engine="caterva")`, lazy,
with dims, coordinates and attrs from the vlmeta, checked with xarray's own
operations against the same DataArray in memory; folders of arrays as
Datasets (`xr.open_dataset(folder, engine="caterva")`, `to_caterva`),
checked against what zarr writes and reads of the same Datasets."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest

import caterva as cat

xr = pytest.importorskip("xarray")
from caterva.xarray_backend import ATTRS, MARKER, CatervaBackendArray, to_caterva  # noqa: E402


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
    many.attrs["bad"] = object()
    with pytest.raises(TypeError, match="attribute 'bad'.*msgpack"):
        to_caterva(many, tmp_path / "many.b2nd")
    assert not (tmp_path / "many.b2nd").exists()
    # Twenty attributes (a frame holds 16 vlmetalayers) are written in one.
    del many.attrs["bad"]
    to_caterva(many, tmp_path / "many.b2nd")
    assert xr.open_dataarray(tmp_path / "many.b2nd", engine="caterva").attrs == many.attrs
    clash = ref.copy()
    clash.attrs = {"_ARRAY_DIMENSIONS": 1}
    with pytest.raises(ValueError, match="backend's own"):
        to_caterva(clash, tmp_path / "clash.b2nd")


# -- Datasets: folders of arrays ----------------------------------------------


def weather():
    """Variables sharing dims, a datetime and a string index, non-index
    coordinates (one of Python strings with a missing one), NaNs, a
    CF-packed variable (int16 with scale_factor and _FillValue, from its
    encoding), a boolean, attributes."""
    rng = np.random.default_rng(5)
    time = pd.date_range("2026-02-01", periods=20, freq="6h")
    t = rng.normal(280, 5, size=(20, 4)).astype("f4")
    t[3, 1] = np.nan
    p = rng.uniform(0, 30, size=(4, 20))
    p[2, 5:8] = np.nan
    ds = xr.Dataset(
        {"t": (("time", "station"), t, {"units": "K", "long_name": "air temperature"}),
         "precip": (("station", "time"), p, {"units": "mm"}),
         "open": ("station", np.array([True, False, True, True]))},
        coords={"time": time, "station": ["oslo", "bergen", "tromso", "alta"],
                "lat": ("station", [59.9, 60.4, 69.6, 69.97], {"units": "degrees_north"}),
                "owner": ("station", np.array(["met", None, "uit", "met"], dtype=object))},
        attrs={"title": "stations", "history": ["made", "checked"], "version": 3, "scale": 0.25},
    )
    ds.precip.encoding = {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -9999}
    return ds


def odd():
    """Integers packed by hand (CF attributes in attrs, decoded on reading),
    a 2-d and a scalar datetime coordinate, a timedelta, a 0-d variable, an
    empty dimension, bytes and unicode strings, more attributes than a
    frame has vlmetalayers, names that are not plain file names."""
    rng = np.random.default_rng(6)
    raw = rng.integers(-100, 100, size=(4, 5)).astype("i2")
    raw[0, 0] = -100
    return xr.Dataset(
        {"raw": (("y", "x"), raw, {"scale_factor": 0.5, "add_offset": 10.0, "_FillValue": np.int16(-100)}),
         "wait": ("run", np.array([1, 20, 300], dtype="m8[s]").astype("m8[ns]")),
         "level": ((), 3.5, {"units": "m"}),
         "none": (("empty", "x"), np.zeros((0, 5))),
         "température": (("y", "x"), rng.random((4, 5))),
         ".hidden": ("x", np.array(["é", "ü", "", "abc", "ß"])),
         "codes": ("x", np.array([b"a", b"bc", b"", b"d", b"e"])),
         "many": ("y", np.arange(4.0), {f"k{i}": i for i in range(20)})},
        coords={"run": [10, 20, 30], "lon": (("y", "x"), rng.random((4, 5))),
                "ref": ((), pd.Timestamp("2026-03-01"))},
        attrs={f"g{i}": [i, str(i)] for i in range(30)},
    )


def _to_zarr(ds, path, **kwargs):
    # zarr 3 warns that fixed-width strings and consolidated metadata are
    # not in its specification yet: what it writes is what is compared.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, **kwargs)


def _open_zarr(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, engine="zarr", **kwargs).load()


@pytest.mark.parametrize("make", [weather, odd])
def test_datasets_round_trip_as_through_zarr(tmp_path, make):
    pytest.importorskip("zarr")
    ds = make()
    _to_zarr(ds, tmp_path / "z.zarr")
    to_caterva(ds, tmp_path / "c")
    # Every variable an array (hidden from the listing: the marker).
    assert len(cat.list_arrays(tmp_path / "c")) == len(ds.variables)
    assert (tmp_path / "c" / MARKER).is_file()
    for opts in ({}, {"mask_and_scale": False}, {"decode_times": False, "decode_timedelta": False},
                 {"decode_coords": False}, {"drop_variables": [next(iter(ds.data_vars)), "lat", "lon"]}):
        got = xr.open_dataset(tmp_path / "c", engine="caterva", **opts).load()
        xr.testing.assert_identical(got, _open_zarr(tmp_path / "z.zarr", **opts))
    # What zarr read, written: its encoding is zarr's (chunks are taken,
    # its filters and compressors are not caterva's).
    to_caterva(_open_zarr(tmp_path / "z.zarr"), tmp_path / "from-zarr")
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "from-zarr", engine="caterva").load(),
                                _open_zarr(tmp_path / "z.zarr"))
    got = xr.open_dataset(tmp_path / "c", engine="caterva")
    # The variables in the Dataset's order (not the listing's, by name).
    assert list(got.data_vars) == list(ds.data_vars) and list(got.coords) == list(ds.coords)
    # What is not lost to packing comes back as it was (a missing string
    # comes back empty, as from zarr: fixed-width strings have no gap).
    exact = [k for k, v in ds.variables.items() if "scale_factor" not in {**v.attrs, **v.encoding} and k != "owner"]
    xr.testing.assert_identical(got[exact].drop_vars("owner", errors="ignore").load(),
                                ds[exact].drop_vars("owner", errors="ignore"))
    if "many" in ds:
        # 20 attributes do not fit one a layer: they are in one.
        with cat.open(tmp_path / "c" / "many.b2nd", mode="r") as a:
            assert a.vlmeta[ATTRS].items() >= ds.many.attrs.items() and "k0" not in a.vlmeta


def test_dataset_opens_lazily(tmp_path, monkeypatch):
    ds = weather()
    to_caterva(ds, tmp_path / "c")
    reads = []
    orig = CatervaBackendArray._read
    monkeypatch.setattr(CatervaBackendArray, "_read",
                        lambda self, key: reads.append((os.path.basename(self.arr.urlpath), key)) or orig(self, key))
    got = xr.open_dataset(tmp_path / "c", engine="caterva")
    # Only the index coordinates are read (xarray makes their indexes).
    assert {f for f, _ in reads} == {"time.b2nd", "station.b2nd"}
    reads.clear()
    one = got.t.isel(time=7, station=slice(1, 3)).load()
    # The selected items of t, and of its non-index coordinates.
    assert sorted(reads) == [("lat.b2nd", (slice(1, 3, 1),)), ("owner.b2nd", (slice(1, 3, 1),)),
                             ("t.b2nd", (7, slice(1, 3, 1)))]
    xr.testing.assert_identical(one.drop_vars("owner"), ds.t.isel(time=7, station=slice(1, 3)).drop_vars("owner"))
    reads.clear()
    packed = got.precip.variable[2].load()
    assert reads == [("precip.b2nd", (2, slice(None)))]
    np.testing.assert_allclose(packed.values, ds.precip.values[2], atol=0.005)
    assert np.isnan(packed.values[5:8]).all()


def test_folders_and_single_arrays_are_told_apart(tmp_path):
    entry = xr.backends.list_engines()["caterva"]
    da = sample()
    # A sparse frame named without an extension is one array: its
    # directory holds the frame's index.
    to_caterva(da, tmp_path / "sparse", contiguous=False)
    assert entry.guess_can_open(str(tmp_path / "sparse"))
    xr.testing.assert_identical(xr.open_dataarray(tmp_path / "sparse", engine="caterva").load(), da)
    # A folder of DataArray files, their coordinates in their vlmeta (the
    # same ones in each), an array without metadata, and what is not an
    # array: a Dataset of the arrays.
    folder = tmp_path / "arrays"
    folder.mkdir()
    to_caterva(da, folder / "temperature.b2nd")
    to_caterva((da * 2).rename("double"), folder / "twice.b2frame", contiguous=True)
    cat.asarray(np.arange(7), urlpath=str(folder / "plain.b2nd")).close()
    (folder / "notes.txt").write_text("not an array")
    (folder / "sub").mkdir()
    assert not entry.guess_can_open(str(folder))
    got = xr.open_dataset(folder, engine="caterva")
    assert list(got.data_vars) == ["plain", "temperature", "double"]  # by file name
    assert set(got.coords) == {"time", "y", "x"} and got.attrs == {}
    xr.testing.assert_identical(got.temperature.load(), da)
    xr.testing.assert_identical(got.double.load(), (da * 2).rename("double"))
    # An array without dims shares none.
    assert got.plain.dims == ("plain_dim_0",) and got.plain.values.tolist() == list(range(7))
    # The same coordinate with other values in two arrays is refused.
    to_caterva(da.assign_coords(y=da.y + 1).rename("other"), folder / "other.b2nd")
    with pytest.raises(ValueError, match="coordinate 'y' differs between"):
        xr.open_dataset(folder, engine="caterva")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="neither an array nor a folder of arrays"):
        xr.open_dataset(tmp_path / "empty", engine="caterva")


def complete_weather():
    """weather() without its missing string (which comes back empty)."""
    return weather().assign_coords(owner=("station", ["met", "", "uit", "met"]))


def test_writer_modes_encoding_and_accessors(tmp_path):
    ds = complete_weather()
    path = tmp_path / "c"
    original = ds.copy(deep=True)
    # ds.caterva.to: to_caterva as a method (the accessor this module registers).
    ds.caterva.to(path, checksums=True, encoding={
        "t": {"chunks": (8, 4), "blocks": (4, 2), "codec": cat.Codec.ZSTD, "clevel": 3, "contiguous": True}})
    # xarray finds the engine by itself for a folder to_caterva wrote.
    assert xr.backends.list_engines()["caterva"].guess_can_open(str(path))
    xr.testing.assert_identical(xr.open_dataset(path).load(), xr.open_dataset(path, engine="caterva").load())
    # Encoding works on copies: the Dataset written is as it was.
    xr.testing.assert_identical(ds, original)
    assert ds.precip.encoding == original.precip.encoding and ds.t.encoding == {}
    with cat.open(path / "t.b2nd", mode="r") as t, cat.open(path / "precip.b2nd", mode="r") as p:
        assert (t.chunks, t.blocks, t.codec, t.clevel, t.contiguous, t.checksums) == (
            (8, 4), (4, 2), cat.Codec.ZSTD, 3, True, True)
        assert p.dtype == np.int16 and p.checksums and not p.contiguous
    before = xr.open_dataset(path, engine="caterva").load()
    # Refused before anything is written.
    with pytest.raises(FileExistsError, match="mode='w' replaces it"):
        to_caterva(ds, path)
    with pytest.raises(ValueError, match="unexpected encoding for variable 't': \\['level'\\]"):
        to_caterva(ds, tmp_path / "x", encoding={"t": {"level": 3}})
    with pytest.raises(ValueError, match="does not have: \\['nope'\\]"):
        to_caterva(ds, tmp_path / "x", encoding={"nope": {}})
    with pytest.raises(ValueError, match="give them in encoding"):
        to_caterva(ds, tmp_path / "x", chunks=(4,))
    with pytest.raises(TypeError, match="attribute 'bad' of 't'.*msgpack"):
        to_caterva(ds.assign(t=ds.t.assign_attrs(bad=object())), tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="dimension 'time' would have 3 items in 'u' and 20 in 't'"):
        to_caterva(xr.Dataset({"u": ("time", np.arange(3.0))}), path, mode="a")
    with pytest.raises(FileExistsError, match="is an array, not a folder"):
        to_caterva(ds, path / "t.b2nd", mode="a")
    xr.testing.assert_identical(xr.open_dataset(path, engine="caterva").load(), before)
    # mode 'a': a variable replaced (other shape, dtype, attrs) and one added.
    to_caterva(xr.Dataset({"open": ("station", np.array([0, 1, 0, 1], "u1")), "id": ("code", [7, 8])},
                          attrs={"title": "now"}), path, mode="a")
    got = xr.open_dataset(path, engine="caterva").load()
    assert got.open.dtype == np.uint8 and got.id.dims == ("code",) and got.attrs == {"title": "now"}
    assert list(got.data_vars) == ["t", "precip", "open", "id"]
    for k in ("t", "precip", "lat", "time"):
        xr.testing.assert_identical(got[k].variable, before[k].variable)
    # The chunks and compression read are kept when what was read is written.
    to_caterva(got, tmp_path / "copy")
    with cat.open(tmp_path / "copy" / "t.b2nd", mode="r") as t:
        assert (t.chunks, t.blocks, t.codec, t.clevel) == ((8, 4), (4, 2), cat.Codec.ZSTD, 3)
    # mode 'w' replaces the dataset; what is not an array stays.
    (path / "notes.txt").write_text("kept")
    to_caterva(ds[["open"]], path, mode="w")
    assert sorted(os.listdir(path)) == [MARKER, "lat.b2nd", "notes.txt", "open.b2nd", "owner.b2nd", "station.b2nd"]
    xr.testing.assert_identical(xr.open_dataset(path, engine="caterva").load(), ds[["open"]])
    # A DataArray's accessor writes one array.
    ds.t.caterva.to(tmp_path / "t.b2frame", contiguous=True)
    xr.testing.assert_identical(xr.open_dataarray(tmp_path / "t.b2frame", engine="caterva").load(), ds.t)
    # One named as its coordinate (ds.time) keeps its name, as in netCDF.
    ds.time.caterva.to(tmp_path / "time.b2nd")
    xr.testing.assert_identical(xr.open_dataarray(tmp_path / "time.b2nd", engine="caterva").load(), ds.time)
    with pytest.raises(ValueError, match="mode must be 'w-' or 'w' for a DataArray"):
        to_caterva(ds.t, tmp_path / "t2.b2nd", mode="a")


def test_names_that_are_not_file_names(tmp_path):
    ds = xr.Dataset({"a/b": ("x", [1, 2]), "A_b": ("x", [3, 4]), "a_b": ("x", [5, 6]), "..": ("x", [7, 8]),
                     "día 1": ("x", [9, 10])})
    to_caterva(ds, tmp_path / "c")
    assert sorted(os.listdir(tmp_path / "c")) == sorted(
        [MARKER, "a_b.b2nd", "A_b-2.b2nd", "a_b-3.b2nd", "_..b2nd", "d_a_1.b2nd"])
    got = xr.open_dataset(tmp_path / "c", engine="caterva").load()
    xr.testing.assert_identical(got, ds)
    assert list(got.data_vars) == list(ds.data_vars)
    with pytest.raises(TypeError, match="non-empty str"):
        to_caterva(xr.Dataset({1: ("x", [1])}), tmp_path / "d")


def test_append_as_zarr_appends(tmp_path):
    pytest.importorskip("zarr")
    # (zarr rewrites a missing string as 'nan' when it appends)
    ds = complete_weather()
    first, second = ds.isel(time=slice(0, 12)), ds.isel(time=slice(12, None))
    second.attrs = {"title": "appended"}
    _to_zarr(first, tmp_path / "z.zarr", mode="w")
    _to_zarr(second, tmp_path / "z.zarr", append_dim="time")
    to_caterva(first, tmp_path / "c")
    to_caterva(second, tmp_path / "c", append_dim="time")
    got = xr.open_dataset(tmp_path / "c", engine="caterva").load()
    xr.testing.assert_identical(got, _open_zarr(tmp_path / "z.zarr"))
    # Times and packed values encoded as the stored ones were (the same
    # units, scale and fill value): the whole series as if written at once.
    whole = xr.open_dataset(_written(ds, tmp_path / "whole"), engine="caterva").load()
    assert set(got.variables) == set(whole.variables)
    for k in whole.variables:
        xr.testing.assert_identical(got[k].variable, whole[k].variable)
    with pytest.raises(ValueError, match="16 items along 'station' cannot be appended to the stored 4"):
        to_caterva(xr.concat([second] * 4, "station"), tmp_path / "c", append_dim="time")
    # Strings as wide as the stored ones or narrower are appended; wider ones cannot be.
    to_caterva(xr.Dataset({"note": ("n", ["ab", "cde"])}), tmp_path / "s")
    to_caterva(xr.Dataset({"note": ("n", ["x"])}), tmp_path / "s", append_dim="n")
    with pytest.raises(ValueError, match="values of <U6 cannot be appended to its array of <U3"):
        to_caterva(xr.Dataset({"note": ("n", ["longer"])}), tmp_path / "s", append_dim="n")
    assert xr.open_dataset(tmp_path / "s", engine="caterva").note.values.tolist() == ["ab", "cde", "x"]


def _written(ds, path):
    to_caterva(ds, path)
    return path


def test_dask_variables_are_written_by_dask(tmp_path):
    pytest.importorskip("dask")
    ds = complete_weather()
    to_caterva(ds.chunk({"time": 5}), tmp_path / "c")
    with cat.open(tmp_path / "c" / "t.b2nd", mode="r") as t:
        assert t.chunks == (5, 4)
    got = xr.open_dataset(tmp_path / "c", engine="caterva", chunks={})
    assert got.t.chunks == ((5, 5, 5, 5), (4,))
    xr.testing.assert_identical(got.compute(), xr.open_dataset(_written(ds, tmp_path / "numpy"),
                                                               engine="caterva").load())
