"""The package's API, value by value against NumPy."""

import pickle
import threading

import numpy as np
import pytest

import caterva as cat

STORAGES = ["memory", "sparse", "contiguous"]


def where(kind, tmp_path, name="a"):
    if kind == "memory":
        return {}
    if kind == "sparse":
        return {"urlpath": str(tmp_path / f"{name}.b2nd"), "contiguous": False}
    return {"urlpath": str(tmp_path / f"{name}.b2frame"), "contiguous": True}


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("dtype", ["<f8", "<i4", "|u1", ">i8", "<c16", "|b1", "<U3", "<M8[s]"])
def test_asarray_roundtrip_dtypes(tmp_path, kind, dtype):
    rng = np.random.default_rng(1)
    shape = (13, 7, 5)
    if dtype == "<U3":
        ref = rng.choice(np.array(["a", "bc", "def", ""], dtype=dtype), size=shape)
    elif dtype == "<M8[s]":
        ref = (rng.integers(0, 2**31, size=shape)).astype(dtype)
    else:
        ref = (rng.random(shape) * 100).astype(dtype)
    a = cat.asarray(ref, chunks=(5, 4, 5), blocks=(2, 2, 3), **where(kind, tmp_path))
    assert a.dtype == np.dtype(dtype)
    assert a.shape == shape and a.ndim == 3 and a.itemsize == ref.itemsize
    assert a.chunks == (5, 4, 5) and a.blocks == (2, 2, 3)
    assert a.size == ref.nbytes and a.nitems == ref.size
    np.testing.assert_array_equal(a[...], ref)
    np.testing.assert_array_equal(np.asarray(a), ref)
    assert a.to_buffer() == ref.tobytes() == a.tobytes()
    if kind != "memory":
        b = cat.open(a.urlpath)
        assert b.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(b[:], ref)


def test_python_caterva_style_bytes_items(tmp_path):
    """python-caterva's arrays have an itemsize and no dtype: items are bytes."""
    ref = np.arange(60, dtype=np.float64).reshape(6, 10)
    url = str(tmp_path / "p.cat")
    c = cat.from_buffer(bytes(ref), ref.shape, ref.itemsize, chunks=(3, 5), blocks=(2, 2), urlpath=url)
    assert c.dtype == np.dtype("S8")
    np.testing.assert_array_equal(np.asarray(c[1:3, 2:7]).view(np.float64), ref[1:3, 2:7])
    np.testing.assert_array_equal(np.frombuffer(c.to_buffer(), dtype=np.float64).reshape(6, 10), ref)
    # A NumPy array of the same item size is written as its bytes.
    c[0] = np.full(10, 7.5)
    np.testing.assert_array_equal(c[0].view(np.float64), np.full(10, 7.5))
    with pytest.raises(FileExistsError):
        cat.from_buffer(bytes(ref), ref.shape, 8, chunks=(3, 5), blocks=(2, 2), urlpath=url)
    c.close()
    cat.remove(url)
    assert not (tmp_path / "p.cat").exists()
    cat.remove(url)  # nothing there: not an error


@pytest.mark.parametrize("kind", STORAGES)
def test_constructors(tmp_path, kind):
    z = cat.zeros((10, 12), 4, chunks=(4, 5), blocks=(2, 5), **where(kind, tmp_path, "z"))
    assert z.dtype == np.dtype("S4")
    assert bytes(z.to_buffer()) == bytes(480)
    e = cat.empty((10, 12), dtype=np.int16, chunks=(4, 5), blocks=(2, 5), **where(kind, tmp_path, "e"))
    np.testing.assert_array_equal(e[:], np.zeros((10, 12), np.int16))
    f = cat.full((9, 4), b"\x01\x02", chunks=(4, 4), blocks=(2, 2), **where(kind, tmp_path, "f"))
    assert f.itemsize == 2 and f[3, 3] == b"\x01\x02"
    g = cat.full((9, 4), 2.5, dtype=np.float32, chunks=(4, 4), blocks=(2, 2), **where(kind, tmp_path, "g"))
    np.testing.assert_array_equal(g[:], np.full((9, 4), 2.5, np.float32))
    h = cat.empty((3, 3), np.float64, chunks=(2, 2), blocks=(1, 1))
    assert h.dtype == np.float64
    d = cat.asarray(np.arange(10.0))  # default partitions
    assert d.chunks == (10,) and d[3] == 3.0
    s = cat.asarray(np.float32(4.5))  # 0-d
    assert s.shape == () and s[()] == np.float32(4.5) and np.asarray(s) == 4.5


def test_compression_kwargs():
    ref = np.arange(10_000, dtype=np.int64).reshape(100, 100)
    for codec in cat.Codec:
        a = cat.asarray(ref, chunks=(50, 50), blocks=(10, 25), codec=codec, clevel=7,
                        filters=[cat.Filter.DELTA, cat.Filter.BITSHUFFLE], filtersmeta=[0, 0], nthreads=2)
        assert a.codec == codec and a.clevel == 7
        assert a.filters[-2:] == [cat.Filter.DELTA, cat.Filter.BITSHUFFLE]
        assert a.cratio > 1
        np.testing.assert_array_equal(a[:], ref)
    u = cat.asarray(ref, chunks=(50, 50), blocks=(10, 25), codec=cat.Codec.ZSTD, usedict=True)
    np.testing.assert_array_equal(u[:], ref)
    with pytest.raises(ValueError, match="level"):
        cat.asarray(ref, clevel=12)
    with pytest.raises(TypeError, match="unexpected"):
        cat.asarray(ref, chunkz=(2, 2))


def _random_key(rng, shape):
    key = []
    for n in shape:
        r = rng.integers(0, 6)
        if r == 0:
            key.append(int(rng.integers(-n, n)))
        elif r == 1:
            a, b = sorted(rng.integers(-n - 2, n + 3, size=2))
            key.append(slice(int(a), int(b)))
        elif r == 2:
            a, b = rng.integers(-n - 2, n + 3, size=2)
            step = int(rng.choice([-3, -2, -1, 2, 3, 5]))
            key.append(slice(int(a), int(b), step))
        elif r == 3:
            key.append(slice(None))
        elif r == 4:
            key.append(rng.integers(-n, n, size=int(rng.integers(0, 5))))
        else:
            key.append(rng.random(n) < 0.4)
    return key


def _numpy_index(ref, key):
    """NumPy's result for an orthogonal key (np.ix_ for the arrays)."""
    out = ref
    axis = 0
    for k in key:
        if isinstance(k, np.ndarray):
            idx = np.nonzero(k)[0] if k.dtype == bool else k
            out = np.take(out, idx, axis=axis)
            axis += 1
        elif isinstance(k, int):
            out = np.take(out, k, axis=axis)
        else:
            out = out[(slice(None),) * axis + (k,)]
            axis += 1
    return out


@pytest.mark.parametrize("kind", STORAGES)
def test_random_slicing_against_numpy(tmp_path, kind):
    rng = np.random.default_rng(42)
    shape = (17, 11, 9)
    ref = rng.integers(0, 1000, size=shape).astype(np.int32)
    a = cat.asarray(ref, chunks=(6, 5, 4), blocks=(3, 2, 2), **where(kind, tmp_path))
    for _ in range(300):
        key = _random_key(rng, shape)
        want = _numpy_index(ref, key)
        got = a.oindex[tuple(key)]
        assert np.shape(got) == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=str(key))
        # [] is NumPy's indexing: the same as NumPy's with at most one index
        # array, refused with several (NumPy would pair them).
        if sum(isinstance(k, np.ndarray) for k in key) > 1:
            with pytest.raises(IndexError, match="oindex"):
                a[tuple(key)]
        else:
            want = ref[tuple(key)]
            got = a[tuple(key)]
            assert np.shape(got) == want.shape, key
            np.testing.assert_array_equal(got, want, err_msg=str(key))
    # And writes: random keys, random values, mirrored into the NumPy array.
    for _ in range(100):
        key = _random_key(rng, shape)
        view_shape = _numpy_index(ref, key).shape
        vals = rng.integers(-500, 500, size=view_shape).astype(np.int32)
        a.oindex[tuple(key)] = vals
        # Mirror with np.ix_-style assignment.
        idx = []
        for n, k in zip(shape, key):
            if isinstance(k, np.ndarray):
                idx.append(np.nonzero(k)[0] if k.dtype == bool else k % n)
            elif isinstance(k, int):
                idx.append(np.array([k % n]))
            else:
                idx.append(np.arange(n)[k])
        full_shape = tuple(len(i) for i in idx)
        ref[np.ix_(*idx)] = vals.reshape(full_shape)
    np.testing.assert_array_equal(a[:], ref)


@pytest.mark.parametrize("kind", STORAGES)
def test_numpy_indexing_reads_and_writes_against_numpy(tmp_path, kind):
    """[] and vindex against NumPy's own indexing, random keys and values,
    reads and writes, and the errors NumPy raises."""
    rng = np.random.default_rng(7)
    shape = (9, 7, 5)
    ref = rng.integers(-100, 100, size=shape).astype(np.int16)
    a = cat.asarray(ref, chunks=(4, 3, 2), blocks=(2, 2, 2), **where(kind, tmp_path))
    for _ in range(200):
        key = _random_key(rng, shape)
        # At most one index array: NumPy's semantics, integers as advanced
        # indices included (the array's axis goes first when they are apart).
        arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
        for i in arrays[1:]:
            key[i] = slice(None)
        if rng.random() < 0.2:
            key.insert(int(rng.integers(0, len(key) + 1)), None)
        key = tuple(key)
        want = ref[key]
        got = a[key]
        assert np.shape(got) == np.shape(want), key
        np.testing.assert_array_equal(got, want, err_msg=str(key))
        vals = rng.integers(-300, 300, size=np.shape(want))
        for v in [vals, int(rng.integers(-9, 9)), vals.astype(np.float64) + 0.5]:
            ref[key] = v
            a[key] = v
        np.testing.assert_array_equal(a[...], ref, err_msg=str(key))
    # Paired coordinates and boolean masks (vindex, and a[mask]).
    for _ in range(60):
        npts = int(rng.integers(0, 12))
        idx = tuple(rng.integers(-n, n, size=npts) for n in shape)
        np.testing.assert_array_equal(a.vindex[idx], ref[idx])
        vals = rng.integers(-50, 50, size=npts)
        a.vindex[idx] = vals
        ref[idx] = vals
        mask = rng.random(shape) < 0.1
        np.testing.assert_array_equal(a[mask], ref[mask])
        a[mask] = 7
        ref[mask] = 7
        np.testing.assert_array_equal(a[...], ref)
    two = (np.array([[0], [3]]), np.array([1, 2, 4]), np.array(2))
    np.testing.assert_array_equal(a.vindex[two], ref[two])
    # The same values refused, with the same exceptions, nothing written.
    before = ref.copy()
    for key, value in [(0, 2**40), ((0, 0, 0), 1 + 2j), ((slice(None), 0, 0), [2**40] * 9), ((1, 1, 1), "x"),
                       ((1, 1, 1), np.nan), ((2,), np.ones(4)), ((0, 0, 0), None), ((0, 0, 0), np.float64(1e20))]:
        with pytest.raises(Exception) as theirs:
            ref.copy()[key] = value
        with pytest.raises(type(theirs.value)):
            a[key] = value
    np.testing.assert_array_equal(a[...], before)
    with pytest.raises(IndexError, match="vindex"):
        a[[0, 1], [2, 3]]
    with pytest.raises(IndexError):
        a.vindex[[0, 1], [2, 3]]  # one array per axis
    with pytest.raises(IndexError):
        a[np.ones((9, 7), bool)]


def test_basic_indexing_cases():
    ref = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    a = cat.asarray(ref, chunks=(3, 2, 4), blocks=(2, 2, 2))
    for key in [0, -1, (1, 2), (1, 2, 3), (Ellipsis, 2), (None, 1), (slice(None), None, 2), (1, Ellipsis, None),
                (), Ellipsis, (slice(3, 1),), (slice(None, None, -1), 0, slice(5, 0, -2)), np.int64(2),
                (np.array(1), 2)]:
        got = a[key]
        want = ref[key]
        assert np.shape(got) == np.shape(want), key
        np.testing.assert_array_equal(got, want)
    assert isinstance(a[1, 2, 3], np.float64)
    for bad in [4, -5, (0, 5), (0, 0, 0, 0), (Ellipsis, Ellipsis), 1.5, (np.array([[1]]),), True, "x"]:
        with pytest.raises(IndexError):
            a[bad]
    a[1:3, :, 0] = 99  # broadcast scalar
    ref[1:3, :, 0] = 99
    a[0] = np.arange(6)  # broadcast a row
    ref[0] = np.arange(6)
    a[..., ::-2] = -1
    ref[..., ::-2] = -1
    np.testing.assert_array_equal(a[:], ref)
    with pytest.raises(ValueError):
        a[0] = np.ones(7)
    assert len(a) == 4
    assert [x.shape for x in a] == [(5, 6)] * 4


def test_reshapes():
    ref = np.arange(30, dtype=np.int64).reshape(5, 6)
    a = cat.asarray(ref, chunks=(2, 4), blocks=(2, 2))
    a.append(np.full((2, 6), 7), axis=0)
    ref = np.concatenate([ref, np.full((2, 6), 7)])
    a.append(np.arange(7), axis=1)  # one slab, without its axis
    ref = np.concatenate([ref, np.arange(7)[:, None]], axis=1)
    np.testing.assert_array_equal(a[:], ref)
    a.insert(1, np.full((1, 7), -3))
    ref = np.insert(ref, 1, -3, axis=0)
    a.insert(-1, np.full((8, 2), 5), axis=1)
    ref = np.insert(ref, [6, 6], 5, axis=1)
    np.testing.assert_array_equal(a[:], ref)
    a.delete(0)
    ref = np.delete(ref, 0, axis=0)
    a.delete(slice(2, 5), axis=1)
    ref = np.delete(ref, [2, 3, 4], axis=1)
    np.testing.assert_array_equal(a[:], ref)
    a.resize((9, 3))
    grown = np.zeros((9, 3), np.int64)
    grown[:7, :3] = ref[:7, :3]
    np.testing.assert_array_equal(a[:], grown)
    with pytest.raises(ValueError, match="slabs"):
        a.append(np.ones((2, 4)), axis=0)
    with pytest.raises(IndexError):
        a.delete(9)
    b = cat.asarray(np.arange(6.0).reshape(1, 6, 1), chunks=(1, 3, 1), blocks=(1, 2, 1))
    b.squeeze()
    assert b.shape == (6,)
    np.testing.assert_array_equal(b[:], np.arange(6.0))


def test_copy_slice_cframe(tmp_path):
    ref = np.random.default_rng(3).random((20, 30))
    a = cat.asarray(ref, chunks=(10, 10), blocks=(5, 5), meta={"m": b"1234"})
    a.vlmeta["v"] = b"hello"
    c = a.copy(chunks=(7, 9), blocks=(7, 3), urlpath=str(tmp_path / "c.b2nd"))
    assert c.chunks == (7, 9) and c.meta["m"] == b"1234" and c.vlmeta["v"] == b"hello"
    np.testing.assert_array_equal(c[:], ref)
    d = cat.copy(a)
    assert d.chunks == (10, 10)
    np.testing.assert_array_equal(d[:], ref)
    s = a.slice((slice(3, 15), 4))
    assert s.shape == (12, 1)
    np.testing.assert_array_equal(s[:, 0], ref[3:15, 4])
    s2 = a.slice((slice(None, None, 2), [1, 5]))
    np.testing.assert_array_equal(s2[:], ref[::2][:, [1, 5]])
    f = cat.from_cframe(a.to_cframe())
    np.testing.assert_array_equal(f[:], ref)
    assert f.meta["m"] == b"1234"
    with pytest.raises(cat.CatervaError):
        cat.from_cframe(b"not a frame at all" * 10)
    a.save(str(tmp_path / "s.b2frame"))
    np.testing.assert_array_equal(cat.open(tmp_path / "s.b2frame")[:], ref)


def test_meta_vlmeta_checksums(tmp_path):
    url = str(tmp_path / "m.b2nd")
    a = cat.zeros((10,), np.uint16, chunks=(5,), blocks=(5,), urlpath=url, meta={"abc": b"\x01\x02\x03"}, checksums=True)
    assert "abc" in a.meta and a.meta["abc"] == b"\x01\x02\x03"
    assert "caterva" in a.meta.keys() and len(a.meta) >= 3
    a.meta["abc"] = b"xyz"
    with pytest.raises(ValueError):
        a.meta["abc"] = b"toolong"
    with pytest.raises(KeyError):
        a.meta["nope"]
    a.vlmeta["k"] = "texte"
    a.vlmeta["k"] = b"bytes"
    assert dict(a.vlmeta) == {"k": b"bytes"}
    assert a.checksums and a.verify() == []
    b = cat.asarray(np.arange(10))
    assert not b.checksums
    b.enable_checksums()
    assert b.checksums and b.verify() == []
    a.close()
    # Damage a chunk file: the read is refused, verify names the chunk.
    a = cat.open(url)
    a[:] = np.arange(10, dtype=np.uint16)
    a.close()
    chunk = tmp_path / "m.b2nd" / "00000001.chunk"
    data = bytearray(chunk.read_bytes())
    data[-1] ^= 0xFF
    chunk.write_bytes(bytes(data))
    a = cat.open(url)
    with pytest.raises(cat.CatervaError, match="checksum"):
        a[:]
    assert [n for n, _ in a.verify()] == [1]


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("checksums", [False, True])
def test_vlmeta_of_zeros_reopens(tmp_path, kind, checksums):
    # c-blosc2 stores 32 or more zero bytes as a special chunk; every open
    # of such an array used to fail (issue 24).
    a = cat.zeros((10,), np.int64, chunks=(5,), blocks=(5,), checksums=checksums, **where(kind, tmp_path))
    a.vlmeta.set_raw("z", bytes(40))
    a.vlmeta["odd"] = bytes(33)
    assert a.vlmeta.raw("z") == bytes(40) and a.vlmeta["odd"] == bytes(33)
    b = cat.from_cframe(a.to_cframe())
    assert b.vlmeta["odd"] == bytes(33)
    if kind != "memory":
        url = where(kind, tmp_path)["urlpath"]
        a.close()
        a = cat.open(url)
        assert a.vlmeta.raw("z") == bytes(40) and a.vlmeta["odd"] == bytes(33)
        a.save(str(tmp_path / "copy.b2frame"))
        assert cat.open(tmp_path / "copy.b2frame").vlmeta["odd"] == bytes(33)
    # Metadata no open would accept is refused at write, and nothing changes.
    with pytest.raises(Exception, match="vlmetalayer 'huge'"):
        a.vlmeta["huge"] = bytes(17 << 20)
    assert "huge" not in a.vlmeta


def test_errors_and_lifetime(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        cat.open(tmp_path / "missing.b2nd")
    with pytest.raises(ValueError):
        cat.zeros((10, 10), 4, chunks=(20, 5), blocks=(30, 5))
    with pytest.raises(ValueError, match="itemsize"):
        cat.zeros((3,), 0)
    (tmp_path / "junk").write_bytes(b"junk" * 100)
    with pytest.raises(Exception) as e:
        cat.open(tmp_path / "junk")
    assert isinstance(e.value, (cat.CatervaError, OSError))
    url = str(tmp_path / "l.b2frame")
    with cat.asarray(np.arange(5), urlpath=url, contiguous=True) as a:
        assert a[4] == 4
    with pytest.raises(ValueError, match="closed"):
        a[0]
    a.close()  # twice: fine
    assert "closed" in repr(a)
    r = cat.open(url, mode="r")
    with pytest.raises(ValueError, match="read-only"):
        r[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        r.append([1])
    w = cat.open(url)
    w[0] = 10
    r.refresh()  # (before, it may read the old or the new item)
    assert r[0] == 10
    with pytest.raises(ValueError, match="mode"):
        cat.open(url, mode="x")
    # mode='w' replaces an array
    b = cat.asarray(np.ones(3), urlpath=url, contiguous=True, mode="w")
    assert b.shape == (3,)


def test_pickle(tmp_path):
    ref = np.arange(24).reshape(4, 6)
    m = cat.asarray(ref, chunks=(2, 3), blocks=(1, 3))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m))[:], ref)
    p = cat.asarray(ref, chunks=(2, 3), blocks=(1, 3), urlpath=str(tmp_path / "p.b2nd"))
    q = pickle.loads(pickle.dumps(p))
    assert q.urlpath == p.urlpath
    np.testing.assert_array_equal(q[:], ref)
    r = pickle.loads(pickle.dumps(cat.open(p.urlpath, mode="r")))
    assert r.mode == "r"


def test_gil_is_released():
    """Another thread runs Python code while a long read decompresses."""
    ref = np.random.default_rng(0).random((400, 400, 40))
    a = cat.asarray(ref, chunks=(100, 100, 40), blocks=(20, 20, 40), clevel=9, codec=cat.Codec.ZLIB)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=count)
    t.start()
    try:
        for _ in range(3):
            before = len(ticks)
            out = a[:]
            assert len(ticks) - before > 10  # the counter ran during the read
    finally:
        stop.set()
        t.join()
    np.testing.assert_array_equal(out, ref)
    # Several threads reading one array at once.
    errors = []

    def read(i):
        try:
            np.testing.assert_array_equal(a[i * 10:(i + 1) * 10], ref[i * 10:(i + 1) * 10])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_scalars_iteration_copies_and_python_caterva_names():
    """Conversions, iteration and copies as NumPy does them; python-caterva's
    keyword names taken with a DeprecationWarning (issue 25, items 7 and 8)."""
    zero_d = cat.asarray(np.array(2.5))
    one = cat.asarray(np.array([7], dtype=np.int32))
    many = cat.asarray(np.arange(6.0).reshape(2, 3))
    assert float(zero_d) == 2.5 and int(zero_d) == 2 and complex(zero_d) == 2.5 and bool(zero_d)
    assert float(one) == 7.0 and int(one) == 7 and bool(one) and not bool(cat.zeros((1,), dtype="i2"))
    for to in (float, int, bool):
        with pytest.raises((TypeError, ValueError)):
            to(many)
    with pytest.raises(TypeError, match="0-d"):
        iter(zero_d).__next__()
    assert [r.tolist() for r in many] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(many, copy=False)
    np.testing.assert_array_equal(np.asarray(many, copy=True), np.arange(6.0).reshape(2, 3))
    with pytest.warns(DeprecationWarning, match="codec"):
        a = cat.zeros((10,), 8, chunks=(5,), blocks=(5,), cname=cat.Codec.ZSTD, use_dict=0, complevel=9)
    assert a.codec == cat.Codec.ZSTD and a.clevel == 9
    with pytest.raises(TypeError, match="not both"):
        cat.zeros((10,), 8, codec=cat.Codec.LZ4, cname=cat.Codec.ZSTD)
    with pytest.warns(DeprecationWarning, match="itemsize"):
        b = a.copy(itemsize=8, chunks=(10,), blocks=(5,))
    assert b.chunks == (10,)
    with pytest.raises(ValueError):
        a.copy(itemsize=4)


VLMETA_VALUES = {
    "str": "texte é", "int": 5, "neg": -(2**63), "big": 2**64 - 1, "float": 0.1, "true": True,
    "false": False, "none": None, "list": [1, 2, "x"], "tuple": (1, (2.5, "y")), "dict": {"a": [1, {"b": None}]},
    "bytes": b"\x00\x01", "complex": 1 - 2j, "set": {1, 2, 3}, "np_int": np.int16(-7), "np_float": np.float32(1.5),
    "np_bool": np.bool_(True), "array": np.arange(6, dtype=">i4").reshape(2, 3),
    "records": np.zeros(2, dtype=[("a", "<f8"), ("b", "S3", (2,))]),
}


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("part", [0, 1])
def test_vlmeta_values_round_trip(tmp_path, kind, part):
    # Issue 25: every value went through bytes() (5 -> five zero bytes, a str came back as bytes).
    values = dict(list(VLMETA_VALUES.items())[part::2])
    a = cat.zeros((4,), np.int8, chunks=(2,), blocks=(2,), **where(kind, tmp_path))
    for k, v in values.items():
        a.vlmeta[k] = v
    if "int" in values:
        a.vlmeta["int"] = 6  # an update
        values["int"] = 6
    arrays = [a, cat.from_cframe(a.to_cframe())]
    if kind != "memory":
        a.close()
        arrays[0] = cat.open(where(kind, tmp_path)["urlpath"])
    for b in arrays:
        got = b.vlmeta.getall()
        assert set(got) == set(values)
        for k, v in values.items():
            g = got[k]
            if isinstance(v, np.ndarray):
                assert isinstance(g, np.ndarray) and g.dtype == v.dtype and g.shape == v.shape
                assert g.tobytes() == v.tobytes()
                continue
            assert g == v and type(g) is type(v.item() if isinstance(v, np.generic) else v), (k, g)
    if "int" in values:
        assert arrays[-1].vlmeta.raw("int") == b"\x06"  # msgpack, as python-blosc2 stores it


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("checksums", [False, True])
def test_vlmeta_count_limit(tmp_path, kind, checksums):
    # c-blosc2 writes at most 16 vlmetalayers into a frame (the checksum
    # table is one): the 17th used to fail in c-blosc2 (files) or later, at
    # to_cframe/save (memory). It is refused up front, nothing changes.
    a = cat.zeros((4,), np.int8, checksums=checksums, **where(kind, tmp_path))
    room = 15 if checksums else 16
    for i in range(room):
        a.vlmeta[f"k{i}"] = i
    with pytest.raises(ValueError, match="no room for vlmetalayer 'extra'"):
        a.vlmeta["extra"] = 1
    a.vlmeta["k0"] = "updated"
    b = cat.from_cframe(a.to_cframe())
    assert b.vlmeta.getall() == {"k0": "updated", **{f"k{i}": i for i in range(1, room)}}
    if kind != "memory":
        a.close()
        assert len(cat.open(where(kind, tmp_path)["urlpath"]).vlmeta) == room


def test_vlmeta_bad_values_and_raw_bytes():
    a = cat.zeros((4,), np.int8)
    for bad in (object(), [1, object()], {"k": range(3)}, 2**64):
        with pytest.raises((TypeError, OverflowError)):
            a.vlmeta["bad"] = bad
        assert "bad" not in a.vlmeta
    with pytest.raises(TypeError, match="names are str"):
        a.vlmeta[1] = 2
    # Bytes written without msgpack (by C code) are read with raw(); [] says so, never a wrong value.
    a.vlmeta.set_raw("c", b"hello")
    assert a.vlmeta.raw("c") == b"hello"
    with pytest.raises(ValueError, match=r"vlmeta.raw\('c'\)"):
        a.vlmeta["c"]
    with pytest.raises(TypeError, match="must be bytes"):
        a.vlmeta.set_raw("c", "str")
    with pytest.raises(KeyError):
        a.vlmeta.raw("missing")


def test_meta_takes_bytes_only():
    # Issue 25: meta={"m": 10**8} wrote 100 MB of zeros.
    for bad in (10**8, 5, "text", [1, 2]):
        with pytest.raises(TypeError, match="metalayer 'm' must be bytes"):
            cat.zeros((4,), np.int8, meta={"m": bad})
    a = cat.zeros((4,), np.int8, meta={"m": bytearray(b"ab"), "v": memoryview(b"cd")})
    assert a.meta["m"] == b"ab" and a.meta["v"] == b"cd"
    with pytest.raises(TypeError, match="must be bytes"):
        a.meta["m"] = 12
    assert a.meta["m"] == b"ab"
    with pytest.raises(ValueError, match="at most 16777216"):
        cat.zeros((4,), np.int8, meta={"m": bytes((16 << 20) + 1)})
    b = cat.zeros((4,), np.int8, meta={"m": bytes(16 << 20)})
    assert len(b.meta["m"]) == 16 << 20


def test_numpy_defaults_and_rough_edges(tmp_path, monkeypatch):
    # Issue 25, item 7: float64 by default (NumPy, python-blosc2, zarr).
    a = cat.zeros((10, 3))
    assert a.dtype == np.float64 and a[:].dtype == np.float64
    assert cat.empty(5).dtype == np.float64 and cat.zeros((4,), dtype="i2").dtype == np.int16
    with pytest.raises(ValueError, match="0 bytes"):
        cat.zeros((4,), dtype="U")
    with pytest.raises(TypeError, match="Python objects"):
        cat.zeros((4,), dtype=object)
    # from_buffer: surplus or missing bytes are an error, as np.frombuffer(...).reshape is.
    for n in (79, 81, 88):
        with pytest.raises(ValueError, match="needs 80"):
            cat.from_buffer(bytes(n), (10,), dtype="f8")
    assert cat.from_buffer(bytes(80), (10,), dtype="f8")[:].sum() == 0
    # Threads: the CPUs this process may use, not 1.
    assert cat.utils.default_nthreads() >= 1
    # A pickle of an array opened by a relative path names the array, wherever it is unpickled.
    monkeypatch.chdir(tmp_path)
    r = cat.asarray(np.arange(4), urlpath="rel.b2nd")
    blob = pickle.dumps(r)
    monkeypatch.chdir("/")
    assert (pickle.loads(blob)[:] == np.arange(4)).all()
    monkeypatch.chdir(tmp_path)
    # mode="w" replaces an array of the other storage kind, both ways; never something else.
    for contiguous in (True, False, True):
        w = cat.asarray(np.arange(3) + contiguous, urlpath="kind.b2nd", contiguous=contiguous, mode="w")
        assert w.contiguous == contiguous and (cat.open("kind.b2nd")[:] == np.arange(3) + contiguous).all()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OSError):
        cat.zeros((3,), urlpath=str(tmp_path / "notes.txt"), contiguous=False, mode="w")
    assert (tmp_path / "notes.txt").read_text() == "mine"
    # Errors by kind, not by message: a missing array is FileNotFoundError.
    with pytest.raises(FileNotFoundError):
        cat.open(tmp_path / "missing.b2nd")


def test_default_partitions_come_from_the_core():
    # Issue 25, item 9: the core's benchmarked propose_partitions, not a Python heuristic.
    for shape, dt in [((1000, 1000), "f8"), ((7,), "i1"), ((50, 60, 70), "U10"), ((0, 5), "f4")]:
        a = cat.zeros(shape, dtype=dt)
        chunks, blocks = cat._caterva.propose_partitions(np.dtype(dt).itemsize, list(shape), nthreads=cat.utils.default_nthreads())
        assert a.chunks == tuple(chunks) and a.blocks == tuple(blocks), (shape, a.chunks, a.blocks)
    b = cat.zeros((1000, 1000), dtype="f8", chunks=(100, 1000))
    assert b.chunks == (100, 1000) and all(x <= c for x, c in zip(b.blocks, b.chunks))
    with pytest.raises(ValueError, match="blocks were given without chunks"):
        cat.zeros((10,), blocks=(5,))
    with pytest.raises(ValueError, match="access"):
        cat._caterva.propose_partitions(8, [10], access="sideways")


def test_defaults_are_the_cores_proposal(tmp_path):
    # Issue 27: one default for every binding. No codec given: LZ4 5 + shuffle
    # (caterva::propose_cparams, C's caterva_propose_config); a 3-d array is a
    # stack along axis 0 (blocks one item thin there); the public
    # propose_partitions gives the constructors' shapes and other patterns.
    a = cat.asarray(np.arange(24 * 73 * 144, dtype="f4").reshape(24, 73, 144), urlpath=str(tmp_path / "a.b2nd"))
    assert a.codec == cat.Codec.LZ4 and a.clevel == 5 and list(a.filters)[-1] == cat.Filter.SHUFFLE
    assert a.blocks[0] == 1
    assert (a.chunks, a.blocks) == cat.propose_partitions(a.shape, dtype="f4")
    np.testing.assert_array_equal(cat.open(str(tmp_path / "a.b2nd"))[7], np.arange(24 * 73 * 144, dtype="f4").reshape(24, 73, 144)[7])
    chunks, blocks = cat.propose_partitions((300, 745, 400), itemsize=8, access="planes:1")
    assert blocks[1] == 1
    chunks, blocks = cat.propose_partitions((300, 745, 400), itemsize=8, access="scans")
    assert chunks[2] == 400 and blocks[2] == 400
    z = cat.zeros((100, 100), dtype="f8", codec=cat.Codec.ZSTD, clevel=1)
    assert z.codec == cat.Codec.ZSTD and z.clevel == 1
    with pytest.raises(ValueError, match="access"):
        cat.propose_partitions((10,), itemsize=8, access="sideways")
    with pytest.raises(TypeError, match="itemsize or dtype"):
        cat.propose_partitions((10,))


@pytest.mark.parametrize("kind", STORAGES)
def test_wide_items_and_long_record_dtypes(tmp_path, kind):
    # Issue 25, item 5: record dtypes over 64 characters, items over 255 bytes.
    dtypes = [np.dtype([(f"field_{i}", "<f4") for i in range(5)]), np.dtype("<U100"),
              np.dtype([("a", "<f8", (40,)), ("b", "S3")]), np.dtype("V1000")]
    for i, dt in enumerate(dtypes):
        ref = np.frombuffer(np.random.default_rng(i).integers(0, 255, 13 * 4 * dt.itemsize, dtype=np.uint8).tobytes(),
                            dtype=dt).reshape(13, 4) if dt.fields is None and dt.kind == "V" else np.zeros((13, 4), dtype=dt)
        if dt.kind == "U":
            ref = np.array([[f"{r}-{c} " * (r + c) for c in range(4)] for r in range(13)], dtype=dt)
        elif dt.fields and "a" in dt.names:
            ref["a"] = np.arange(13 * 4 * 40).reshape(13, 4, 40)
            ref["b"] = b"xyz"
        elif dt.fields:
            for j, name in enumerate(dt.names):
                ref[name] = np.arange(52).reshape(13, 4) * (j + 1)
        a = cat.asarray(ref, chunks=(5, 3), blocks=(2, 2), **where(kind, tmp_path, f"w{i}"))
        assert a.dtype == dt and a.itemsize == dt.itemsize
        a[2:4, 1] = ref[7:9, 3]
        want = ref.copy()
        want[2:4, 1] = ref[7:9, 3]
        if kind != "memory":
            a.close()
            a = cat.open(where(kind, tmp_path, f"w{i}")["urlpath"])
        assert a[:].tobytes() == want.tobytes() and a[5:12:3, ::2].tobytes() == want[5:12:3, ::2].tobytes()
        a.resize((15, 4))
        assert a[13:].tobytes() == bytes(2 * 4 * dt.itemsize)


def test_a_stale_handle_is_told_to_refresh_and_its_writes_apply_to_the_array_as_it_is(tmp_path):
    path = str(tmp_path / "stale.b2nd")
    a = cat.zeros((8, 4), dtype=np.int32, chunks=(4, 4), blocks=(2, 2), urlpath=path, mode="w")
    b = cat.open(path, mode="a")
    for i in range(40):
        b.append(np.full((1, 4), i, dtype=np.int32))
    b[0] = 7
    # The core refuses a read through the stale handle (nothing read)...
    flat = np.empty(8 * 4, dtype=np.int32).view(np.uint8)
    with pytest.raises(cat.ChangedError, match="refresh"):
        a._a.get_slice([0, 0], [8, 4], flat)
    assert issubclass(cat.ChangedError, cat.CatervaError)
    # ...and NDArray refreshes it and selects from the array as it is now.
    assert a[:].shape == (48, 4) and a[0, 0] == 7
    assert b.refresh() is False
    b[47] = 5
    assert a.oindex[[47], [0]][0, 0] == 5 and a.vindex[[47], [1]][0] == 5
    # A write through a stale handle goes into the array as it is now.
    b.append(np.full((1, 4), 6, dtype=np.int32))
    b.resize((48, 4))
    a[1] = 9
    assert a.shape == (48, 4)
    a.append(np.full((1, 4), 99, dtype=np.int32))
    assert b.refresh()
    want = np.zeros((49, 4), dtype=np.int32)
    want[0], want[1], want[8:48] = 7, 9, np.arange(40)[:, None]
    want[47], want[48] = 5, 99
    np.testing.assert_array_equal(b[:], want)
    np.testing.assert_array_equal(a[:], want)
