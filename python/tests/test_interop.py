"""Files exchanged with python-caterva 0.7.3 (NumPy 1.x) and python-blosc2
(NumPy 2), each run in its own virtual environment (.ci/setup makes them
under target/interop/; CATERVA_INTEROP_CATERVA_PYTHON and
CATERVA_INTEROP_BLOSC2_PYTHON override them). Every value is compared."""

import os
import pathlib
import subprocess
import textwrap

import numpy as np
import pytest

import caterva as cat

ROOT = pathlib.Path(__file__).resolve().parents[2]


def peer_python(name, env):
    p = os.environ.get(env) or str(ROOT / "target" / "interop" / name / "bin" / "python")
    assert os.path.exists(p), f"{p} is missing: run .ci/setup"
    return p


def run_peer(name, env, code, *args):
    r = subprocess.run([peer_python(name, env), "-c", textwrap.dedent(code), *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{name} peer failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def old_caterva(code, *args):
    return run_peer("caterva", "CATERVA_INTEROP_CATERVA_PYTHON", code, *args)


def blosc2(code, *args):
    return run_peer("blosc2", "CATERVA_INTEROP_BLOSC2_PYTHON", code, *args)


@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("checksums", [False, True])
def test_python_caterva_reads_ours(tmp_path, contiguous, checksums):
    ref = np.random.default_rng(5).random((23, 17, 9))
    url = tmp_path / ("a.b2frame" if contiguous else "a.b2nd")
    a = cat.asarray(ref, chunks=(10, 8, 9), blocks=(5, 4, 3), urlpath=str(url), contiguous=contiguous,
                    checksums=checksums, meta={"user": b"\x93\x01\x02\x03"})
    a.close()
    np.save(tmp_path / "ref.npy", ref)
    old_caterva("""
        import sys, numpy as np, caterva as cat
        assert np.__version__.startswith("1."), np.__version__
        url, ref = sys.argv[1], np.load(sys.argv[2])
        c = cat.open(url)
        assert tuple(c.shape) == ref.shape and c.itemsize == 8, (c.shape, c.itemsize)
        assert tuple(c.chunks) == (10, 8, 9) and tuple(c.blocks) == (5, 4, 3)
        got = np.frombuffer(c.to_buffer(), dtype=np.float64).reshape(ref.shape)
        assert (got == ref).all()
        assert (np.asarray(c[3:9, 2, 1:8]).view(np.float64) == ref[3:9, 2, 1:8]).all()
        assert c.meta["user"] == b"\\x93\\x01\\x02\\x03"
    """, url, tmp_path / "ref.npy")


@pytest.mark.parametrize("contiguous", [False, True])
def test_we_read_and_write_python_caterva_files(tmp_path, contiguous):
    """A python-caterva script's file, read and changed here, read back there."""
    url = tmp_path / ("o.b2frame" if contiguous else "o.b2nd")
    old_caterva("""
        import sys, numpy as np, caterva as cat
        ref = np.arange(30 * 40, dtype=np.int32).reshape(30, 40)
        cat.from_buffer(bytes(ref), ref.shape, ref.itemsize, chunks=(12, 15), blocks=(6, 5),
                        urlpath=sys.argv[1], contiguous=sys.argv[2] == "1", meta={"m": b"abcd"})
    """, url, int(contiguous))
    ref = np.arange(30 * 40, dtype=np.int32).reshape(30, 40)
    a = cat.open(url)
    assert a.dtype == np.dtype("S4") and a.meta["m"] == b"abcd"
    np.testing.assert_array_equal(np.asarray(a[:]).view(np.int32), ref)
    np.testing.assert_array_equal(a[5:17, 3].view(np.int32), ref[5:17, 3])
    a[0:12, 0:15] = np.full((12, 15), -1, dtype=np.int32)  # raw items of the same size
    a.append(np.full((2, 40), 9, dtype=np.int32))
    a.close()
    old_caterva("""
        import sys, numpy as np, caterva as cat
        c = cat.open(sys.argv[1])
        got = np.frombuffer(c.to_buffer(), dtype=np.int32).reshape(c.shape)
        ref = np.arange(30 * 40, dtype=np.int32).reshape(30, 40)
        ref[:12, :15] = -1
        ref = np.concatenate([ref, np.full((2, 40), 9, np.int32)])
        assert (got == ref).all()
    """, url)


@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("dtype", ["<f4", "<i2", "<c8", "|b1"])
def test_python_blosc2_reads_ours(tmp_path, contiguous, dtype):
    ref = (np.random.default_rng(7).random((31, 20)) * 50).astype(dtype)
    url = tmp_path / ("b.b2frame" if contiguous else "b.b2nd")
    a = cat.asarray(ref, chunks=(16, 10), blocks=(8, 5), urlpath=str(url), contiguous=contiguous)
    a.vlmeta["note"] = b"from caterva"
    a.close()
    np.save(tmp_path / "ref.npy", ref)
    blosc2("""
        import sys, numpy as np, blosc2
        url, ref = sys.argv[1], np.load(sys.argv[2])
        b = blosc2.open(url)
        assert b.dtype == ref.dtype, (b.dtype, ref.dtype)
        assert b.shape == ref.shape and b.chunks == (16, 10) and b.blocks == (8, 5)
        assert (b[:] == ref).all()
        assert (b[4:29:3, 7] == ref[4:29:3, 7]).all()
    """, url, tmp_path / "ref.npy")


@pytest.mark.parametrize("contiguous", [False, True])
def test_we_read_python_blosc2_files(tmp_path, contiguous):
    url = tmp_path / ("c.b2frame" if contiguous else "c.b2nd")
    blosc2("""
        import sys, numpy as np, blosc2
        ref = np.linspace(0, 1, 25 * 18 * 3, dtype=np.float64).reshape(25, 18, 3)
        blosc2.asarray(ref, urlpath=sys.argv[1], mode="w", chunks=(10, 9, 3), blocks=(5, 3, 3),
                       contiguous=sys.argv[2] == "1")
    """, url, int(contiguous))
    ref = np.linspace(0, 1, 25 * 18 * 3, dtype=np.float64).reshape(25, 18, 3)
    a = cat.open(url)
    assert a.dtype == np.float64 and a.chunks == (10, 9, 3)
    np.testing.assert_array_equal(a[:], ref)
    np.testing.assert_array_equal(a[::-3, [0, 17], 1], ref[::-3][:, [0, 17], 1])
    a[20:, :, :] = 0.5
    a.close()
    blosc2("""
        import sys, numpy as np, blosc2
        ref = np.linspace(0, 1, 25 * 18 * 3, dtype=np.float64).reshape(25, 18, 3)
        ref[20:] = 0.5
        assert (blosc2.open(sys.argv[1])[:] == ref).all()
    """, url)


def test_user_script_of_python_caterva_runs_unchanged(tmp_path):
    """python-caterva's README/examples style, run against this package."""
    script = textwrap.dedent("""
        import numpy as np
        import caterva as cat

        shape = (100, 100)
        chunks = (20, 20)
        blocks = (10, 10)
        dtype = np.dtype(np.float64)
        urlpath = "ex_persistency.cat"
        cat.remove(urlpath)

        a = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
        c = cat.from_buffer(bytes(a), a.shape, a.itemsize, chunks=chunks, blocks=blocks,
                            urlpath=urlpath, contiguous=False, codec=cat.Codec.LZ4, clevel=5,
                            filters=[cat.Filter.SHUFFLE], nthreads=2)
        c2 = cat.open(urlpath)
        for i in range(shape[0]):
            buffer = np.asarray(c2[i]).view(dtype)
            np.testing.assert_almost_equal(buffer, a[i])
        b = np.frombuffer(c2.to_buffer(), dtype=dtype).reshape(shape)
        np.testing.assert_array_equal(a, b)
        d = cat.copy(c2, chunks=(50, 50), blocks=(25, 25))
        e = cat.empty(shape, itemsize=8, chunks=chunks, blocks=blocks)
        e[0:50, :] = np.ones((50, 100))
        z = cat.zeros(shape, 8, chunks=chunks, blocks=blocks)
        f = cat.full(shape, fill_value=b"\\x00" * 7 + b"\\x01", chunks=chunks, blocks=blocks)
        s = cat.asarray(a, chunks=chunks, blocks=blocks)
        print(c2.info)
        assert c2.cratio > 1 and c2.codec == cat.Codec.LZ4 and d.ndim == 2
        c2.resize((150, 100))
        assert c2.shape == (150, 100)
        cat.remove(urlpath)
        print("done")
    """)
    (tmp_path / "script.py").write_text(script)
    import sys

    r = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("done")
    # The same script runs under the real python-caterva 0.7.3, so it is its users' code.
    r = subprocess.run([peer_python("caterva", "CATERVA_INTEROP_CATERVA_PYTHON"), "script.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# Values both sides build from this source: vlmeta exchanged by value.
VLMETA_SRC = """{
    "str": "texte é", "int": -5, "big": 2**64 - 1, "float": 0.25, "bool": True, "none": None,
    "list": [1, "x", [2.5]], "tuple": (1, ("a", None)), "dict": {"a": [1, {"b": b"\\x00"}]},
    "bytes": b"\\x00\\xff", "complex": 1.5 - 2j, "set": {3, 4},
    "array": np.arange(6, dtype=">i4").reshape(2, 3),
    "records": np.array([(1.5, b"ab")], dtype=[("x", "<f8"), ("y", "S2")]),
}"""

VLMETA_CHECK = """
def same(g, w):
    if isinstance(w, np.ndarray):
        return isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
    return g == w and type(g) is type(w)
for k, w in want.items():
    assert same(got[k], w), (k, got[k], w)
assert set(got) == set(want), (set(got), set(want))
"""


@pytest.mark.parametrize("contiguous", [False, True])
def test_vlmeta_exchanged_with_python_blosc2(tmp_path, contiguous):
    """Issue 25: python-blosc2 could not read a str caterva wrote (and then
    failed vlmeta.getall() for the whole array); blosc2's values showed up
    here as raw msgpack."""
    ours, theirs = tmp_path / ("o.b2frame" if contiguous else "o.b2nd"), tmp_path / ("t.b2frame" if contiguous else "t.b2nd")
    a = cat.zeros((6,), np.float64, urlpath=str(ours), contiguous=contiguous)
    want = eval(VLMETA_SRC)
    for k, v in want.items():
        a.vlmeta[k] = v
    a.close()
    blosc2("import sys, numpy as np, blosc2\n"
           "want = " + VLMETA_SRC + "\n"
           "b = blosc2.open(sys.argv[1], mode='a')\n"
           "got = b.vlmeta.getall()\n"
           + VLMETA_CHECK +
           "b.vlmeta['from_blosc2'] = {'ok': (1, 2)}\n"
           "c = blosc2.zeros((6,), dtype=np.float64, urlpath=sys.argv[2], contiguous=sys.argv[3] == '1', mode='w')\n"
           "for k, v in want.items():\n"
           "    c.vlmeta[k] = v\n", ours, theirs, int(contiguous))
    got = cat.open(theirs).vlmeta.getall()
    exec(VLMETA_CHECK, {"np": np, "got": got, "want": want})
    assert cat.open(ours).vlmeta["from_blosc2"] == {"ok": (1, 2)}


# Issue 25: record dtypes of any description length and items over 255 bytes.
WIDE_DTYPES = {
    "records5": "np.dtype([(f'field_{i}', '<f4') for i in range(5)])",
    "records40": "np.dtype([(f'a_rather_long_field_name_{i}', '<i8' if i % 2 else '>f8') for i in range(40)])",
    "U100": "np.dtype('<U100')",
    "subarrays": "np.dtype([('a', '<f8', (40,)), ('b', 'S3'), ('c', '<i2', (2, 3))])",
    "S300": "np.dtype('S300')",
    # python-blosc2 shuffles <U by 4-byte characters (SHUFFLE's filters_meta), which
    # c-blosc2 2.15 ignores: these read as other characters without the regrouping.
    "U5": "np.dtype('<U5')",
    "U7": "np.dtype('<U7')",
    "U1": "np.dtype('<U1')",
}


def wide_values(np, dt, n):
    raw = (np.arange(n * dt.itemsize, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)
    v = raw.view(dt) if dt.fields else np.frombuffer(raw.tobytes(), dtype=dt)
    if dt.kind == "U":
        v = np.array([f"value {i} " * (i % 11) for i in range(n)], dtype=dt)
    if dt.fields:  # no NaN payloads: compare by bytes and by value
        v = v.copy()
        for name in dt.names:
            if v[name].dtype.kind == "f":
                v[name] = np.arange(v[name].size, dtype=v[name].dtype).reshape(v[name].shape)
    return v


@pytest.mark.parametrize("name", sorted(WIDE_DTYPES))
@pytest.mark.parametrize("contiguous", [False, True])
def test_wide_dtypes_exchanged_with_python_blosc2(tmp_path, name, contiguous):
    dt = eval(WIDE_DTYPES[name])
    ref = wide_values(np, dt, 37)
    ours, theirs = tmp_path / f"o-{contiguous}.b2nd", tmp_path / f"t-{contiguous}.b2nd"
    a = cat.asarray(ref, chunks=(16,), blocks=(4,), urlpath=str(ours), contiguous=contiguous)
    assert a.dtype == dt and a.itemsize == dt.itemsize
    a.close()
    np.save(tmp_path / "ref.npy", ref)
    blosc2("""
        import sys, numpy as np, blosc2
        ref = np.load(sys.argv[1])
        b = blosc2.open(sys.argv[2])
        assert b.dtype == ref.dtype, (b.dtype, ref.dtype)
        assert b[:].tobytes() == ref.tobytes() and (b[5:30:3] == ref[5:30:3]).all()
        c = blosc2.asarray(ref, urlpath=sys.argv[3], mode="w", chunks=(10,), blocks=(5,),
                           contiguous=sys.argv[4] == "1")
        c[3] = ref[30]
    """, tmp_path / "ref.npy", ours, theirs, int(contiguous))
    want = ref.copy()
    want[3] = ref[30]
    t = cat.open(theirs)
    assert t.dtype == dt and t.itemsize == dt.itemsize
    assert t[:].tobytes() == want.tobytes() and (t[2:9] == want[2:9]).all()
    t[7] = ref[0]  # and written here, read back there
    t.close()
    want[7] = ref[0]
    np.save(tmp_path / "want.npy", want)
    blosc2("""
        import sys, numpy as np, blosc2
        assert blosc2.open(sys.argv[1])[:].tobytes() == np.load(sys.argv[2]).tobytes()
    """, theirs, tmp_path / "want.npy")
