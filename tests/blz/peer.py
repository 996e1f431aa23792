"""The real BLZ writers for tests/blz.rs: bcolz-zipline writes carrays and
ctables, bloscpack writes .blp files; both read back what caterva exported.

    peer.py write DIR   write every case into DIR: <name>.bcolz (or .blp) and
                        <name>.npy, the values it must read as
    peer.py check DIR   read every <name>.out.bcolz / .out.blp / .out.ctable that
                        caterva exported and compare it with <name>.npy
"""
import collections
import collections.abc
import json
import os
import sys

# bloscpack 0.15 predates Python 3.10, where these aliases went away.
for _n in ("MutableMapping", "Mapping", "Iterable"):
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))

import bcolz  # noqa: E402
import bloscpack  # noqa: E402
import numpy as np  # noqa: E402

CODECS = ["lz4", "blosclz", "zlib", "zstd"]
CHECKSUMS = ["None", "adler32", "crc32", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"]


def data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), n, dtype=np.int64).astype(dt)
        a[::7] = np.arange(len(a[::7]), dtype=np.int64).astype(dt)  # runs that compress
    elif dt.kind == "f":
        a = (rng.standard_normal(n) * 1000).astype(dt)
        a[::5] = 1.5
    elif dt.kind == "S":
        words = [b"", b"a", b"abc", b"price", b"zipline!"]
        a = np.array([words[i % len(words)][: dt.itemsize] for i in rng.integers(0, 5, n)], dtype=dt)
    elif dt.kind == "U":
        a = np.array(["x" * (i % (dt.itemsize // 4 + 1)) for i in range(n)], dtype=dt)
    else:
        raise ValueError(dtype)
    return a.reshape(shape)


def cases():
    """(name, dtype, shape, chunklen, cname, shuffle, attrs)"""
    out = []
    dtypes = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "?", "S7", "U3"]
    for i, dt in enumerate(dtypes):
        for j, cname in enumerate(CODECS):
            shuffle = (i + j) % 2
            out.append((f"c_{dt.replace('?', 'b')}_{cname}_{shuffle}", dt, (1000 + 37 * i,), 128, cname, shuffle, {}))
    out.append(("leftover_bitshuffle", "i8", (1001,), 100, "lz4", 2, {}))
    out.append(("exact_chunks", "f8", (1024,), 256, "zstd", 1, {}))
    out.append(("one_short_chunk", "u2", (5,), 1000, "blosclz", 1, {}))
    out.append(("empty", "f4", (0,), 64, "lz4", 1, {}))
    out.append(("nd2", "i4", (123, 7), 10, "zstd", 1, {}))
    out.append(("nd3", "f8", (50, 3, 4), 8, "lz4", 0, {}))
    out.append(("nd_empty", "u1", (0, 5), 16, "zlib", 1, {}))
    out.append(("attrs", "i8", (300,), 64, "lz4", 1, {"unit": "USD", "scale": 1000, "ok": True, "ratio": 0.25, "list": [1, "a", None], "nested": {"k": [1, 2]}}))
    return out


def write(d):
    for name, dt, shape, chunklen, cname, shuffle, attrs in cases():
        a = data(dt, shape, hash(name) % 1000)
        np.save(os.path.join(d, name + ".npy"), a)
        c = bcolz.carray(a, rootdir=os.path.join(d, name + ".bcolz"), mode="w", chunklen=chunklen,
                         cparams=bcolz.cparams(clevel=5, shuffle=shuffle, cname=cname))
        for k, v in attrs.items():
            c.attrs[k] = v
        c.flush()
    # a ctable of mixed columns
    n = 777
    cols = [data("i8", (n,), 1), data("f4", (n,), 2), data("?", (n,), 3), data("S5", (n,), 4), data("u2", (n,), 5)]
    names = ["id", "price", "flag", "sym", "vol"]
    t = bcolz.ctable(cols, names=names, rootdir=os.path.join(d, "table.bcolz"), mode="w", chunklen=100)
    t.flush()
    with open(os.path.join(d, "table.json"), "w") as f:
        json.dump(names, f)
    for name, col in zip(names, cols):
        np.save(os.path.join(d, f"table.{name}.npy"), col)
    # a small ctable, to import as records (a structured dtype)
    n = 1234
    rec = np.zeros(n, dtype=[("a", "<i4"), ("b", "<f8"), ("c", "|u1")])
    rec["a"], rec["b"], rec["c"] = data("i4", (n,), 6), data("f8", (n,), 7), data("u1", (n,), 8)
    t = bcolz.ctable([rec["a"], rec["b"], rec["c"]], names=["a", "b", "c"],
                     rootdir=os.path.join(d, "rec.bcolz"), mode="w", chunklen=100)
    t.attrs["source"] = "test"
    t.flush()
    np.save(os.path.join(d, "rec.npy"), rec)
    # Bloscpack files: every checksum, with and without offsets, metadata or not
    for i, cs in enumerate(CHECKSUMS):
        for offsets in (True, False):
            name = f"blp_{cs}_{int(offsets)}"
            a = data(["i8", "f4", "u2", "i4"][i % 4], (5000 + i * 11,), i)
            np.save(os.path.join(d, name + ".npy"), a)
            bargs = bloscpack.BloscpackArgs(offsets=offsets, checksum=cs, max_app_chunks=0)
            blargs = bloscpack.BloscArgs(typesize=a.itemsize, clevel=5, shuffle=True, cname=CODECS[i % 4])
            bloscpack.pack_ndarray_file(a, os.path.join(d, name + ".blp"), chunk_size=4000,
                                           blosc_args=blargs, bloscpack_args=bargs)
    # raw bytes, no NumPy metadata, a file with app-chunk room and compressed metadata
    raw = data("u1", (10000,), 9)
    np.save(os.path.join(d, "blp_raw.npy"), raw)
    src = os.path.join(d, "raw.bin")
    raw.tofile(src)
    bloscpack.pack_file(src, os.path.join(d, "blp_raw.blp"), chunk_size=3000,
                                bloscpack_args=bloscpack.BloscpackArgs(checksum="crc32", max_app_chunks=4))
    a = data("f8", (3000,), 10)
    np.save(os.path.join(d, "blp_meta.npy"), a)
    meta = {"dtype": a.dtype.str, "shape": list(a.shape), "order": "C", "container": "numpy",
            "note": "x" * 300}
    bloscpack.pack_bytes_file(a.tobytes(), os.path.join(d, "blp_meta.blp"), chunk_size=5000,
                                 metadata=meta, blosc_args=bloscpack.BloscArgs(typesize=8),
                                 metadata_args=bloscpack.MetadataArgs(meta_checksum="sha1", meta_codec="zlib"))
    print("wrote", len(os.listdir(d)), "entries")


def check(d):
    n = 0
    for f in sorted(os.listdir(d)):
        path = os.path.join(d, f)
        if f.endswith(".out.bcolz"):
            name = f[: -len(".out.bcolz")]
            want = np.load(os.path.join(d, name + ".npy"))
            c = bcolz.open(path, mode="r")
            got = c[:]
            assert got.dtype == want.dtype, (f, got.dtype, want.dtype)
            assert got.shape == want.shape, (f, got.shape, want.shape)
            assert np.array_equal(got, want), f
            attrs = os.path.join(d, name + ".attrs.json")
            if os.path.exists(attrs):
                with open(attrs) as fh:
                    assert dict(c.attrs) == json.load(fh), (f, dict(c.attrs))
            n += 1
        elif f.endswith(".out.ctable"):
            t = bcolz.open(path, mode="r")
            with open(os.path.join(d, "table.json")) as fh:
                names = json.load(fh)
            assert list(t.names) == names, t.names
            for name in names:
                want = np.load(os.path.join(d, f"table.{name}.npy"))
                got = t[name][:]
                assert got.dtype == want.dtype and np.array_equal(got, want), name
            n += 1
        elif f.endswith(".out.blp"):
            name = f[: -len(".out.blp")]
            want = np.load(os.path.join(d, name + ".npy"))
            got = bloscpack.unpack_ndarray_file(path)
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), f
            n += 1
    print("checked", n)
    if n == 0:
        sys.exit("nothing to check")


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
