"""The real peers of tests/blz_attrs.rs: bcolz-zipline writes, and reads
back, attributes, defaults and names (the venv target/interop/bcolz);
python-blosc2 reads what caterva imported and writes what bcolz cannot
take as it is (the venv target/interop/blosc2).

    attrs_peer.py write DIR     bcolz: write the carrays and the ctable into DIR
    attrs_peer.py check DIR     bcolz: open what caterva exported (<name>.out.bcolz)
                                and compare with what was written
    attrs_peer.py b2write DIR   python-blosc2: void.b2nd (dtype V8), bin.b2nd (a bytes vlmeta)
    attrs_peer.py b2check DIR   python-blosc2: read the vlmetalayers (and records) of
                                the <name>.b2frame files caterva imported
"""
import json
import math
import os
import sys

import numpy as np

NAN, INF = float("nan"), float("inf")

# name -> (dtype, dflt, attributes); bcolz writes NaN and Infinity into
# meta/storage and __attrs__, and non-ASCII as \uXXXX.
CARRAYS = {
    "nan": ("f8", NAN, {"nan": NAN, "inf": INF, "ninf": -INF, "mixed": [1.5, NAN, {"k": -INF}],
                        "text": "NaN, Infinity: not numbers"}),
    "euro": ("i8", 0, {"unit": "\u20ac", "caf\u00e9": "cr\u00e8me \U0001F600", "plain": "USD"}),
    "names": ("f4", -1.5, {
        "": "empty name",
        "a name of more than thirty-one bytes": 1,
        "bcolz_dflt": "the user's own, not the default",
        "bcolz_attrs": {"also": "the user's"},
        "caterva.xxh3": "the checksum table's name",
        "caterva.xxh4": "one character off it",
        "short": 2,
    }),
    "big": ("i8", 0, {"fine": 1, "huge": 2 ** 70}),
}
BLP_META = {"nan": NAN, "ninf": -INF, "a metadata name over thirty-one bytes": "kept", "\u20ac": 1}
TABLE = {"caf\u00e9": "i8", "na\u00efve": "f8", "x": "u1"}


def same(a, b):
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) == type(b) and a == b


def write(d):
    import bcolz

    for name, (dt, dflt, attrs) in CARRAYS.items():
        c = bcolz.carray(np.arange(100, dtype=dt), rootdir=os.path.join(d, name + ".bcolz"), mode="w",
                         chunklen=32, dflt=dflt)
        for k, v in attrs.items():
            c.attrs[k] = v
        c.flush()
    cols = [np.arange(50, dtype=dt) * (i + 1) for i, dt in enumerate(TABLE.values())]
    t = bcolz.ctable(cols, names=list(TABLE), rootdir=os.path.join(d, "table.bcolz"), mode="w", chunklen=16)
    t.attrs["\u20ac"] = "\u20ac"
    t.flush()
    # a Bloscpack file whose metadata (Python's json too) has NaN and a long name
    import collections
    import collections.abc
    for n in ("MutableMapping", "Mapping", "Iterable"):
        if not hasattr(collections, n):  # bloscpack 0.15 predates Python 3.10
            setattr(collections, n, getattr(collections.abc, n))
    import bloscpack

    a = np.arange(100, dtype="f8")
    meta = {"dtype": a.dtype.str, "shape": [100], "order": "C", "container": "numpy", **BLP_META}
    bloscpack.pack_bytes_file(a.tobytes(), os.path.join(d, "meta.blp"), chunk_size=256, metadata=meta,
                              blosc_args=bloscpack.BloscArgs(typesize=8))
    rec = np.zeros(50, dtype=list(TABLE.items()))
    for name, col in zip(TABLE, cols):
        rec[name] = col
    np.save(os.path.join(d, "table.npy"), rec)
    print("wrote")


def check(d):
    import bcolz

    n = 0
    for name, (dt, dflt, attrs) in CARRAYS.items():
        path = os.path.join(d, name + ".out.bcolz")
        if not os.path.exists(path):
            continue
        c = bcolz.open(path, mode="r")
        assert np.array_equal(c[:], np.arange(100, dtype=dt)), name
        got = dict(c.attrs)
        assert same(got, attrs), (name, got, attrs)
        assert same(np.asarray(c.dflt).item(), float(dflt) if dt[0] == "f" else dflt), (name, c.dflt)
        n += 1
    path = os.path.join(d, "table.out.bcolz")
    if os.path.exists(path):
        t = bcolz.open(path, mode="r")
        assert list(t.names) == list(TABLE), t.names
        rec = np.load(os.path.join(d, "table.npy"))
        for name in TABLE:
            assert np.array_equal(t[name][:], rec[name]), name
        n += 1
    path = os.path.join(d, "void.out.bcolz")
    if os.path.exists(path):
        c = bcolz.open(path, mode="r")
        want = np.frombuffer(bytes(range(80)), dtype="V8")
        assert c.dtype == np.dtype("V8"), c.dtype
        assert c[:].tobytes() == want.tobytes()
        n += 1
    print("checked", n, json.dumps(sorted(os.listdir(d))))


def b2write(d):
    import blosc2

    blosc2.asarray(np.frombuffer(bytes(range(80)), dtype="V8"), urlpath=os.path.join(d, "void.b2nd"), mode="w")
    a = blosc2.asarray(np.arange(10), urlpath=os.path.join(d, "bin.b2nd"), mode="w")
    a.schunk.vlmeta["raw"] = b"\x00\xffxy"
    print("b2wrote")


def b2check(d):
    import blosc2

    n = 0
    for name, (dt, dflt, attrs) in CARRAYS.items():
        path = os.path.join(d, name + ".b2frame")
        if not os.path.exists(path):
            continue
        a = blosc2.open(path)
        vl = a.schunk.vlmeta.getall()
        assert np.array_equal(a[:], np.arange(100, dtype=dt)), name
        want = {k: v for k, v in attrs.items() if k in ("nan", "inf", "ninf", "mixed", "text", "unit",
                                                         "caf\u00e9", "plain", "short", "fine")}
        rest = {k: v for k, v in attrs.items() if k not in want}
        if rest:
            want["bcolz_attrs"] = rest
        want["bcolz_dflt"] = dflt
        assert same(vl, want), (name, vl, want)
        for k in ("nan", "inf", "ninf"):
            if k in vl:
                assert type(vl[k]) is float, (k, vl[k])
        n += 1
    path = os.path.join(d, "meta.b2frame")
    if os.path.exists(path):
        a = blosc2.open(path)
        vl = a.schunk.vlmeta.getall()
        want = {"nan": NAN, "ninf": -INF, "\u20ac": 1,
                "bcolz_attrs": {"a metadata name over thirty-one bytes": "kept"}}
        assert same(vl, want), (vl, want)
        assert np.array_equal(a[:], np.arange(100, dtype="f8"))
        n += 1
    path = os.path.join(d, "table.b2frame")
    if os.path.exists(path):
        a = blosc2.open(path)
        rec = np.load(os.path.join(d, "table.npy"))
        got = a[:]
        assert got.dtype == rec.dtype, (got.dtype, rec.dtype)
        assert list(got.dtype.names) == list(TABLE), got.dtype.names
        assert np.array_equal(got, rec)
        assert a.schunk.vlmeta.getall() == {"\u20ac": "\u20ac"}, a.schunk.vlmeta.getall()
        n += 1
    print("b2checked", n)


if __name__ == "__main__":
    {"write": write, "check": check, "b2write": b2write, "b2check": b2check}[sys.argv[1]](sys.argv[2])
