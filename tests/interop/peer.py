"""The Python side of the interop tests (tests/interop.rs drives it).

    python peer.py caterva write DIR   arrays written by python-caterva 0.7.3
    python peer.py blosc2  write DIR   arrays written by python-blosc2 (NDArray)
    python peer.py caterva check DIR   read every array described in DIR with python-caterva
    python peer.py blosc2  check DIR   read every array described in DIR with python-blosc2

Each array NAME is described by NAME.spec (one "key values..." per line) and
its C-order bytes NAME.bin:

    path <file or directory>        contiguous 0|1
    shape <n>...                    chunks <n>...        blocks <n>...
    itemsize <n>                    dtype <numpy dtype string>   (optional)
    meta <name> <hex>               vlmeta <name> <hex>  (raw stored bytes; repeatable)

A checker compares bytes, not only shapes, and exits non-zero on the first
difference, naming it.
"""

import os
import sys


def read_spec(path):
    spec = {"meta": {}, "vlmeta": {}, "dtype": None}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            key, rest = parts[0], parts[1:]
            if key in ("meta", "vlmeta"):
                spec[key][rest[0]] = bytes.fromhex(rest[1]) if len(rest) > 1 else b""
            elif key in ("shape", "chunks", "blocks"):
                spec[key] = tuple(int(x) for x in rest)
            elif key in ("itemsize", "contiguous"):
                spec[key] = int(rest[0])
            else:
                spec[key] = rest[0] if rest else ""
    return spec


def write_spec(d, name, spec, data):
    with open(os.path.join(d, name + ".spec"), "w") as f:
        f.write(f"path {spec['path']}\n")
        f.write(f"contiguous {int(spec['contiguous'])}\n")
        for k in ("shape", "chunks", "blocks"):
            f.write(" ".join([k] + [str(x) for x in spec[k]]) + "\n")
        f.write(f"itemsize {spec['itemsize']}\n")
        if spec.get("dtype"):
            f.write(f"dtype {spec['dtype']}\n")
        for kind in ("meta", "vlmeta"):
            for k, v in spec.get(kind, {}).items():
                f.write(f"{kind} {k} {v.hex()}\n")
    with open(os.path.join(d, name + ".bin"), "wb") as f:
        f.write(data)


def pattern(nbytes, seed):
    return bytes((i * 7 + seed * 13 + (i >> 8)) % 251 for i in range(nbytes))


def nitems(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def fail(name, what):
    print(f"FAIL {name}: {what}")
    sys.exit(1)


# Arrays the peers write: (name, shape, chunks, blocks, itemsize or dtype, contiguous).
CATERVA_CASES = [
    ("c1d_u1", (10,), (4,), (3,), 1, True),
    ("c2d_i2_sparse", (7, 9), (4, 5), (2, 3), 2, False),
    ("c3d_i4", (5, 6, 7), (2, 3, 4), (2, 2, 2), 4, True),
    ("c2d_i8_sparse", (20, 3), (7, 3), (3, 1), 8, False),
    ("c2d_odd3", (6, 5), (4, 4), (2, 3), 3, True),
    ("c4d_i8_ragged", (5, 4, 3, 6), (3, 3, 2, 4), (2, 2, 1, 3), 8, True),
]

BLOSC2_CASES = [
    ("b2d_f8", (4, 6), (3, 4), (2, 2), "<f8", True),
    ("b2d_i2_sparse", (7, 9), (4, 5), (2, 3), "<i2", False),
    ("b1d_u1", (10,), (4,), (3,), "|u1", True),
    ("b3d_f4_ragged", (5, 6, 7), (2, 3, 4), (2, 2, 2), "<f4", False),
    ("b2d_c16", (3, 5), (2, 2), (1, 2), "<c16", True),
    ("b0d_f8", (), (), (), "<f8", True),
]


def caterva_write(d):
    import caterva

    for i, (name, shape, chunks, blocks, itemsize, contiguous) in enumerate(CATERVA_CASES):
        path = os.path.join(d, name + (".b2frame" if contiguous else ".b2nd"))
        data = pattern(nitems(shape) * itemsize, i)
        meta = {"units": f"m/{name}".encode()} if i % 2 == 0 else {}
        caterva.from_buffer(data, shape, itemsize, chunks=chunks, blocks=blocks, urlpath=path,
                            contiguous=contiguous, meta=meta)
        spec = dict(path=path, contiguous=contiguous, shape=shape, chunks=chunks, blocks=blocks,
                    itemsize=itemsize, meta=meta)
        write_spec(d, name, spec, data)


def blosc2_write(d):
    import blosc2
    import numpy as np
    from blosc2 import blosc2_ext

    for i, (name, shape, chunks, blocks, dtype, contiguous) in enumerate(BLOSC2_CASES):
        path = os.path.join(d, name + (".b2frame" if contiguous else ".b2nd"))
        dt = np.dtype(dtype)
        data = pattern(nitems(shape) * dt.itemsize, i)
        a = np.frombuffer(data, dtype=dt).reshape(shape)
        meta = {"units": f"m/{name}".encode()}
        kw = dict(urlpath=path, contiguous=contiguous, mode="w", meta=meta)
        if shape:
            kw.update(chunks=chunks, blocks=blocks)
        arr = blosc2.asarray(a, **kw)
        arr.schunk.vlmeta["history"] = f"written by python-blosc2 {blosc2.__version__}"
        # python-blosc2 stores msgpack-encoded values: record the stored bytes.
        raw_vl = blosc2_ext.vlmeta.get_vlmeta(arr.schunk.vlmeta, "history")
        raw_meta = {k: bytes(blosc2_ext.meta__getitem__(arr.schunk, k)) for k in meta}
        spec = dict(path=path, contiguous=contiguous, shape=shape, chunks=tuple(arr.chunks),
                    blocks=tuple(arr.blocks), itemsize=dt.itemsize, dtype=dt.str, meta=raw_meta,
                    vlmeta={"history": bytes(raw_vl)})
        write_spec(d, name, spec, data)


def specs(d):
    names = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".spec"))
    if not names:
        fail(d, "no arrays to check")
    for name in names:
        spec = read_spec(os.path.join(d, name + ".spec"))
        with open(os.path.join(d, name + ".bin"), "rb") as f:
            yield name, spec, f.read()


def caterva_check(d):
    import caterva

    n = 0
    for name, spec, data in specs(d):
        arr = caterva.open(spec["path"])
        if tuple(arr.shape) != spec["shape"]:
            fail(name, f"shape {arr.shape} != {spec['shape']}")
        if arr.itemsize != spec["itemsize"]:
            fail(name, f"itemsize {arr.itemsize} != {spec['itemsize']}")
        if spec["shape"] and (tuple(arr.chunks) != spec["chunks"] or tuple(arr.blocks) != spec["blocks"]):
            fail(name, f"partitions {arr.chunks}/{arr.blocks} != {spec['chunks']}/{spec['blocks']}")
        got = bytes(arr.to_buffer())
        if got != data:
            fail(name, f"bytes differ ({len(got)} read, {len(data)} expected)")
        for k, v in spec["meta"].items():
            if bytes(arr.meta[k]) != v:
                fail(name, f"metalayer {k}: {bytes(arr.meta[k])!r} != {v!r}")
        n += 1
    print(f"python-caterva {caterva.__version__}: {n} arrays identical")


def blosc2_check(d):
    import blosc2
    import numpy as np
    from blosc2 import blosc2_ext

    n = 0
    for name, spec, data in specs(d):
        arr = blosc2.open(spec["path"])
        if not isinstance(arr, blosc2.NDArray):
            fail(name, f"opened as {type(arr).__name__}, not NDArray")
        if tuple(arr.shape) != spec["shape"]:
            fail(name, f"shape {arr.shape} != {spec['shape']}")
        want_dtype = np.dtype(spec["dtype"]) if spec["dtype"] else None
        if want_dtype is not None and arr.dtype != want_dtype:
            fail(name, f"dtype {arr.dtype} != {want_dtype}")
        if arr.dtype.itemsize != spec["itemsize"]:
            fail(name, f"itemsize {arr.dtype.itemsize} != {spec['itemsize']}")
        if spec["shape"] and (tuple(arr.chunks) != spec["chunks"] or tuple(arr.blocks) != spec["blocks"]):
            fail(name, f"partitions {arr.chunks}/{arr.blocks} != {spec['chunks']}/{spec['blocks']}")
        got = arr[()].tobytes() if spec["shape"] == () else arr[...].tobytes()
        if got != data:
            fail(name, f"bytes differ ({len(got)} read, {len(data)} expected)")
        for k, v in spec["meta"].items():
            raw = bytes(blosc2_ext.meta__getitem__(arr.schunk, k))
            if raw != v:
                fail(name, f"metalayer {k}: {raw!r} != {v!r}")
            arr.schunk.meta[k]  # the msgpack value python-blosc2 users see decodes
        for k, v in spec["vlmeta"].items():
            raw = bytes(blosc2_ext.vlmeta.get_vlmeta(arr.schunk.vlmeta, k))
            if raw != v:
                fail(name, f"vlmeta {k}: {raw!r} != {v!r}")
            arr.schunk.vlmeta[k]  # the msgpack value python-blosc2 users see decodes
        n += 1
    print(f"python-blosc2 {blosc2.__version__}: {n} arrays identical")


def main():
    lib, mode, d = sys.argv[1:4]
    {("caterva", "write"): caterva_write, ("blosc2", "write"): blosc2_write,
     ("caterva", "check"): caterva_check, ("blosc2", "check"): blosc2_check}[(lib, mode)](d)


if __name__ == "__main__":
    main()
