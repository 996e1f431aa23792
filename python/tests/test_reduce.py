"""Reductions in the core (a.sum(axis=0)…), np.sum & co. through
__array_function__, and elementwise work through __array_ufunc__, against
NumPy over random shapes, partitions, axes and dtypes, NaN, empty axes and
bad input."""

import warnings

import numpy as np
import pytest

import caterva as cat

OPS = ["sum", "mean", "min", "max", "std", "var", "any", "all",
       "nansum", "nanmean", "nanmin", "nanmax", "nanstd", "nanvar"]
DTYPES = ["|b1", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", "<u8", "<f2", ">f4", "<f8", ">f8", "<c8", "<c16"]
_AxisError = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError


def random_values(rng, shape, dtype, nan):
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) < 0.6
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, size=shape, dtype=d.newbyteorder("="), endpoint=True).astype(d)
    vals = rng.integers(-800, 800, size=shape) / 8.0
    if d.kind == "c":
        vals = vals + 1j * (rng.integers(-800, 800, size=shape) / 8.0)
    if nan:
        vals = np.where(rng.random(shape) < 0.1, np.nan, vals)
    return vals.astype(d)


def random_case(rng, dtype):
    ndim = int(rng.integers(0, 5))
    shape = tuple(0 if rng.random() < 0.05 else int(rng.integers(1, 9)) for _ in range(ndim))
    chunks = tuple(int(rng.integers(1, max(s, 1) + 1)) for s in shape)
    blocks = tuple(int(rng.integers(1, c + 1)) for c in chunks)
    ref = random_values(rng, shape, dtype, nan=rng.random() < 0.5)
    return ref, cat.asarray(ref, chunks=chunks, blocks=blocks)


def random_axis(rng, ndim):
    r = rng.random()
    if r < 0.25 or ndim == 0:
        return None
    if r < 0.5:
        return int(rng.integers(-ndim, ndim))
    axes = tuple(int(a) for a in range(ndim) if rng.random() < 0.5)
    if len(axes) > 1 and rng.random() < 0.5:
        axes = tuple(reversed(axes))
    return axes


def assert_matches(got, want, dtype):
    want = np.asarray(want)
    got_arr = np.asarray(got)
    assert got_arr.shape == want.shape
    assert got_arr.dtype == want.dtype, (got_arr.dtype, want.dtype)
    if want.dtype.kind in "fc":
        tol = {2: 2e-3, 4: 1e-5, 8: 1e-5}[want.dtype.itemsize if want.dtype.kind == "f" else want.dtype.itemsize // 2]
        # Sums in float16/float32 accumulate in float64 here, in pairs of the
        # item type in NumPy: compare against the sum of magnitudes.
        np.testing.assert_allclose(got_arr.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
                                   want.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
                                   rtol=tol, atol=tol * 1000, equal_nan=True)
    else:
        np.testing.assert_array_equal(got_arr, want)
    if want.ndim == 0:
        assert np.isscalar(got) or isinstance(got, np.generic)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_reduction_matches_numpy(dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    d = np.dtype(dtype)
    for _ in range(10):
        ref, a = random_case(rng, dtype)
        for op in OPS:
            if d.kind == "c" and op not in ("sum", "mean", "any", "all", "nansum", "nanmean"):
                continue  # NumPy-in-memory fallback, tested below
            if d.kind == "b" and op.startswith("nan") and op not in ("nansum", "nanmean", "nanmin", "nanmax"):
                continue
            axis = random_axis(rng, a.ndim)
            kw = {}
            if op in ("std", "var", "nanstd", "nanvar") and rng.random() < 0.3:
                kw["ddof"] = 1
            if rng.random() < 0.3:
                kw["keepdims"] = True
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    want = getattr(np, op)(ref, axis=axis, **kw)
                    if d == np.float16 and op not in ("min", "max", "nanmin", "nanmax", "any", "all"):
                        # NumPy accumulates float16 sums of squares in float16,
                        # which overflow (inf) where float64 does not: compare
                        # with NumPy's float32 answer rounded to float16.
                        want = np.asarray(getattr(np, op)(ref.astype("<f4"), axis=axis, **kw)).astype("<f2")
                except (ValueError, TypeError) as e:
                    with pytest.raises(type(e)):
                        getattr(a, op)(axis=axis, **kw)
                    continue
                got = getattr(a, op)(axis=axis, **kw)
            assert_matches(got, want, dtype)


def test_numpy_functions_route_to_the_methods(monkeypatch):
    ref = np.arange(60, dtype="<f8").reshape(3, 4, 5)
    a = cat.asarray(ref, chunks=(2, 3, 2), blocks=(1, 2, 2))
    calls = []
    orig = cat.NDArray._reduce

    def spy(self, name, *args, **kw):
        calls.append(name)
        return orig(self, name, *args, **kw)

    monkeypatch.setattr(cat.NDArray, "_reduce", spy)
    assert_matches(np.sum(a, axis=0), ref.sum(axis=0), "<f8")
    assert_matches(np.mean(a, axis=(0, 2), keepdims=True), ref.mean(axis=(0, 2), keepdims=True), "<f8")
    assert_matches(np.std(a, 1, None, None, 1), ref.std(1, ddof=1), "<f8")
    assert_matches(np.nanmax(a), np.nanmax(ref), "<f8")
    assert_matches(np.nanvar(a, axis=-1), np.nanvar(ref, axis=-1), "<f8")
    assert_matches(np.min(a), ref.min(), "<f8")
    assert_matches(np.amax(a, axis=2), ref.max(axis=2), "<f8")
    assert_matches(np.any(a > 50), np.any(ref > 50), "|b1")
    assert calls == ["sum", "mean", "std", "nanmax", "nanvar", "min", "max"]
    # Other functions see the values, as before.
    np.testing.assert_array_equal(np.concatenate([a, a]), np.concatenate([ref, ref]))
    np.testing.assert_array_equal(np.where(a > 3, a, 0), np.where(ref > 3, ref, 0))
    np.testing.assert_array_equal(np.cumsum(a, axis=1), np.cumsum(ref, axis=1))


def test_elementwise_work_reads_into_numpy():
    ref = np.arange(24, dtype="<i4").reshape(4, 6)
    a = cat.asarray(ref, chunks=(3, 4), blocks=(2, 2))
    for got, want in [(a + 1, ref + 1), (1 - a, 1 - ref), (a * a, ref * ref), (a / 2, ref / 2), (-a, -ref),
                      (a ** 2, ref ** 2), (abs(a - 10), abs(ref - 10)), (a % 5, ref % 5), (ref + a, ref + ref),
                      (np.sin(a), np.sin(ref)), (np.add(a, ref), ref + ref)]:
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    for got, want in [(a == 3, ref == 3), (a != 3, ref != 3), (a < 5, ref < 5), (a >= ref, ref >= ref)]:
        assert isinstance(got, np.ndarray) and got.dtype == bool
        np.testing.assert_array_equal(got, want)
    # out= an array of ours: written back.
    b = cat.zeros((4, 6), dtype="<i4", chunks=(2, 2), blocks=(1, 1))
    np.add(a, 5, out=b)
    np.testing.assert_array_equal(b[...], ref + 5)
    # Arrays stay usable as dict keys (by identity).
    assert {a: 1}[a] == 1


def test_reductions_of_files_and_max_memory(tmp_path):
    rng = np.random.default_rng(3)
    ref = rng.normal(1e6, 1.0, size=(64, 33, 10))
    a = cat.asarray(ref, chunks=(16, 11, 10), blocks=(4, 11, 5), urlpath=str(tmp_path / "a.b2frame"))
    a = cat.open(str(tmp_path / "a.b2frame"))
    np.testing.assert_allclose(a.std(axis=(0, 2)), ref.std(axis=(0, 2)), rtol=1e-9)
    np.testing.assert_allclose(a.var(), ref.var(), rtol=1e-9)
    # A bound that fits one chunk at a time gives the same result.
    np.testing.assert_array_equal(a.sum(axis=1, max_memory=200_000), a.sum(axis=1))
    with pytest.raises(ValueError, match="max_memory"):
        a.sum(axis=1, max_memory=1000)


def test_numpy_semantics_at_the_edges():
    empty = cat.asarray(np.zeros((3, 0)), chunks=(2, 1), blocks=(1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        np.testing.assert_array_equal(empty.sum(axis=1), np.zeros(3))
        with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
            assert np.isnan(empty.mean(axis=1)).all()
    for op in ("min", "max", "nanmin", "nanmax"):
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(empty, op)(axis=1)
        assert getattr(empty, op)(axis=0).shape == (0,)
    nans = cat.asarray(np.array([[np.nan, np.nan], [1.0, np.nan]]), chunks=(1, 2), blocks=(1, 1))
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        np.testing.assert_array_equal(nans.nanmax(axis=1), [np.nan, 1.0])
    assert np.isnan(nans.max())
    assert np.isnan(nans.nanvar(axis=0, ddof=1)).all()
    # Sums of small integers are int64 and wrap like NumPy's.
    big = np.full(10, 2**62, dtype="<i8")
    b = cat.asarray(big, chunks=(3,), blocks=(2,))
    assert b.sum() == big.sum() and b.sum().dtype == np.int64
    u = cat.asarray(np.arange(10, dtype="|u1"), chunks=(4,), blocks=(2,))
    assert u.sum().dtype == np.uint64 and u.mean().dtype == np.float64
    # 0-d arrays.
    z = cat.asarray(np.float32(2.5))
    assert z.sum() == 2.5 and z.sum().dtype == np.float32
    with pytest.raises(_AxisError):
        z.sum(axis=0)


def test_bad_axes_and_fallbacks():
    ref = np.arange(12.0).reshape(3, 4)
    a = cat.asarray(ref, chunks=(2, 2), blocks=(1, 2))
    with pytest.raises(_AxisError):
        a.sum(axis=2)
    with pytest.raises(_AxisError):
        a.mean(axis=(0, -3))
    with pytest.raises(ValueError, match="duplicate"):
        a.sum(axis=(1, -1))
    with pytest.raises(TypeError):
        a.sum(axis=1.5)
    # What the core does not do, NumPy does on the values read.
    assert_matches(a.sum(axis=0, dtype=np.float32), ref.sum(axis=0, dtype=np.float32), "<f4")
    assert_matches(a.max(initial=100.0), ref.max(initial=100.0), "<f8")
    assert_matches(a.sum(where=ref > 3), ref.sum(where=ref > 3), "<f8")
    out = np.empty(4)
    assert a.sum(axis=0, out=out) is out
    np.testing.assert_array_equal(out, ref.sum(axis=0))
    c = cat.asarray(ref + 1j * ref, chunks=(2, 2), blocks=(1, 2))
    assert_matches(c.var(axis=1), (ref + 1j * ref).var(axis=1), "<f8")
    assert_matches(c.max(), (ref + 1j * ref).max(), "<c16")
    days = np.array(["2020-01-01", "2021-05-05", "2019-12-31"], dtype="<M8[D]")
    t = cat.asarray(days, chunks=(2,), blocks=(1,))
    assert t.max() == days.max() and t.min(axis=0) == days.min()
    s = cat.asarray(np.array(["a", "bc", "d"]), chunks=(2,), blocks=(1,))
    with pytest.raises(TypeError):
        s.sum()
