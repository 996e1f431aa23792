"""The compatibility matrix against today's Blosc2 writers (tests/matrix.rs drives it).

    python matrix.py write DIR   write every cell with python-blosc2 (c-blosc2 3.x inside)
    python matrix.py write DIR WORD   only the cells whose name contains WORD
    python matrix.py check DIR   read every cell caterva-rs wrote into DIR, compare bytes

`write` leaves, per cell NAME, the array (NAME.b2nd: a contiguous frame; NAME.dir:
a sparse one), NAME.bin (the C-order bytes python-blosc2 itself reads back: the
reference, even for lossy codecs) and one line in cells.txt, tab-separated
`key=value` fields (lists comma-separated, maps `name:hex` joined by `;`):

    name path contiguous axis dtype itemsize shape chunks blocks codec filters filters_meta meta vlmeta

`axis` says which axis of the matrix the cell stands for (codec, filter, dtype,
shape, special, storage, cparams, meta). Cells python-blosc2 cannot write here
(a codec plugin that is not installed) are listed in skipped.txt with the reason.

`check` reads cells.txt as caterva-rs wrote it (the same fields; the bytes in
NAME.bin) and exits non-zero naming every cell that python-blosc2 reads
differently or cannot open.
"""

import ast
import os
import sys
import traceback

import blosc2
import numpy as np
from blosc2 import blosc2_ext

C, F = blosc2.Codec, blosc2.Filter


def data_for(dtype, shape, seed):
    """Deterministic contents with runs (equal blocks) and noise, any dtype."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        v = np.cumsum(rng.normal(size=n)).astype(dt)
        v[: n // 4] = 1.5  # a run: blocks equal to one value
    elif dt.kind == "c":
        v = (np.cumsum(rng.normal(size=n)) + 1j * rng.normal(size=n)).astype(dt)
    elif dt.kind in "iu":
        v = (np.arange(n, dtype=np.int64) * 3 + rng.integers(0, 4, size=n)).astype(dt)  # wraps
        v[: n // 4] = 7
    elif dt.kind == "b":
        v = rng.integers(0, 2, size=n).astype(dt)
    elif dt.kind == "U":
        words = ["", "a", "héllo", "wörld", "zzzzz", "日本語"]
        v = np.array([words[i % len(words)][: dt.itemsize // 4] for i in range(n)], dtype=dt)
    elif dt.kind == "M":
        v = (np.arange(n) * 86_400_000_000_000 + 1_700_000_000_000_000_000).astype("<i8").view(dt)
    else:  # S, V, records
        raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8)
        raw[: n * dt.itemsize // 3] = 0x2A
        v = np.frombuffer(raw.tobytes(), dtype=dt).copy()
        if dt.names:
            for name in dt.names:  # no NaN payload surprises in float fields
                if dt[name].kind == "f":
                    v[name] = np.arange(n, dtype=dt[name])
    return v.reshape(shape)


def cparams(codec=C.ZSTD, clevel=5, filters=None, filters_meta=None, **kw):
    filters = filters or [F.SHUFFLE]
    filters_meta = filters_meta or [0] * len(filters)
    return blosc2.CParams(codec=codec, clevel=clevel, filters=list(filters), filters_meta=list(filters_meta), **kw)


# Each cell: (axis, name, dtype, shape, chunks, blocks, keyword arguments for blosc2.asarray,
# and how the array is made: "data" (asarray), "zeros", "full", "empty", "nans").
CELLS = []


def cell(axis, name, dtype, shape, chunks=None, blocks=None, make="data", contiguous=True, **kw):
    CELLS.append(dict(axis=axis, name=name, dtype=dtype, shape=tuple(shape), chunks=chunks, blocks=blocks,
                      make=make, contiguous=contiguous, kw=kw))


S2, CH2, BL2 = (37, 29), (16, 12), (8, 5)  # a ragged 2-d array

# Codecs, with the default filter (SHUFFLE), over two typesizes.
for codec in (C.BLOSCLZ, C.LZ4, C.LZ4HC, C.ZLIB, C.ZSTD):
    for dt in ("<i4", "<f8"):
        cell("codec", f"codec_{codec.name.lower()}_{dt[1:]}", dt, S2, CH2, BL2, cparams=cparams(codec))
for clevel in (0, 1, 9):
    cell("codec", f"codec_zstd_clevel{clevel}", "<i8", S2, CH2, BL2, cparams=cparams(C.ZSTD, clevel))
# Codec plugins of c-blosc2 3.x.
cell("codec", "codec_ndlz_4", "|u1", (40, 40), (32, 32), (16, 16),
     cparams=cparams(C.NDLZ, filters=[F.NOFILTER], codec_meta=4))
cell("codec", "codec_ndlz_8", "|u1", (40, 40), (32, 32), (16, 16),
     cparams=cparams(C.NDLZ, filters=[F.NOFILTER], codec_meta=8))
for codec, meta in ((C.ZFP_ACC, 4), (C.ZFP_PREC, 24), (C.ZFP_RATE, 30)):
    for dt in ("<f4", "<f8"):
        cell("codec", f"codec_{codec.name.lower()}_{dt[1:]}", dt, (20, 20, 8), (10, 10, 8), (5, 5, 4),
             cparams=cparams(codec, filters=[F.NOFILTER], codec_meta=meta))
for codec in (C.OPENHTJ2K, C.GROK, C.OPENZL, C.J2K, C.HTJ2K):
    cell("codec", f"codec_{codec.name.lower()}", "|u1", (32, 32), (32, 32), (16, 16),
         cparams=cparams(codec, filters=[F.NOFILTER]))

# Filters and filter metas, alone and in pipelines.
FILTERS = [
    ("nofilter", "<i4", [F.NOFILTER], [0]),
    ("shuffle", "<i4", [F.SHUFFLE], [0]),
    ("shuffle_meta_typesize", "<i4", [F.SHUFFLE], [4]),
    ("shuffle_meta2", "<i8", [F.SHUFFLE], [2]),
    ("shuffle_meta4_u", "<U3", [F.SHUFFLE], [4]),
    ("bitshuffle", "<i4", [F.BITSHUFFLE], [0]),
    ("bitshuffle_f8", "<f8", [F.BITSHUFFLE], [0]),
    ("delta", "<i4", [F.DELTA], [0]),
    ("trunc_prec_f4", "<f4", [F.TRUNC_PREC], [10]),
    ("trunc_prec_f8", "<f8", [F.TRUNC_PREC], [20]),
    ("bytedelta", "<f4", [F.SHUFFLE, F.BYTEDELTA], [0, 4]),
    ("bytedelta_meta0", "<i4", [F.SHUFFLE, F.BYTEDELTA], [0, 0]),
    ("int_trunc", "<i4", [F.INT_TRUNC], [20]),
    ("ndcell", "<f8", [F.NDCELL], [4]),
    ("ndmean", "<f4", [F.NDMEAN], [4]),
    ("delta_shuffle", "<i8", [F.DELTA, F.SHUFFLE], [0, 0]),
    ("trunc_bitshuffle", "<f8", [F.TRUNC_PREC, F.BITSHUFFLE], [30, 0]),
    ("shuffle_shuffle", "<i2", [F.SHUFFLE, F.SHUFFLE], [0, 0]),
    ("six_filters", "<i4", [F.DELTA, F.NOFILTER, F.SHUFFLE, F.NOFILTER, F.BITSHUFFLE, F.NOFILTER],
     [0, 0, 0, 0, 0, 0]),
]
for name, dt, filters, metas in FILTERS:
    # INT_TRUNC keeps the high bits: large values, or every chunk is zeros.
    make = "scaled" if name == "int_trunc" else "data"
    cell("filter", f"filter_{name}", dt, S2, CH2, BL2, make=make, cparams=cparams(C.ZSTD, 5, filters, metas))
cell("filter", "filter_ndcell_2d", "<f8", (40, 40), (32, 32), (16, 16),
     cparams=cparams(C.ZSTD, 5, [F.NDCELL], [4]))

# Dtypes, with python-blosc2's own defaults (it picks filters per dtype).
DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16",
          ">i4", ">f8", "<M8[ns]", "<U1", "<U5", "|S1", "|S7", "|V300", "|S1000", "<U80",
          "rec_mixed", "rec_nested"]
RECORDS = {
    "rec_mixed": [("a", "<i4"), ("b", "<f8"), ("c", "S3")],
    "rec_nested": [("p", [("x", "<f4"), ("y", "<f4")]), ("tag", "<U2"), ("n", "<u2")],
}
for dt in DTYPES:
    nice = dt.replace("<", "le_").replace(">", "be_").replace("|", "").replace("[", "_").replace("]", "")
    big = np.dtype(RECORDS.get(dt, dt)).itemsize >= 300
    shape, ch, bl = ((9, 7), (4, 4), (2, 3)) if big else (S2, CH2, BL2)
    cell("dtype", f"dtype_{nice}", RECORDS.get(dt, dt), shape, ch, bl)

# Shapes: 0-d, empty along an axis, 1..4-d with ragged edges, more dims than 8.
SHAPES = [
    ("0d", (), None, None),
    ("empty_first", (0, 5), (3, 5), (2, 2)),
    ("empty_last", (6, 0), (4, 3), (2, 2)),
    ("empty_1d", (0,), (4,), (2,)),
    ("1d", (101,), (30,), (7,)),
    ("1d_one_chunk", (10,), (10,), (10,)),
    ("2d", S2, CH2, BL2),
    ("3d", (9, 11, 13), (4, 5, 6), (2, 3, 4)),
    ("4d", (5, 4, 3, 6), (3, 3, 2, 4), (2, 2, 1, 3)),
    ("8d", (2, 3, 2, 3, 2, 3, 2, 3), (2, 2, 2, 2, 2, 2, 2, 2), (1, 2, 1, 2, 1, 2, 1, 2)),
    ("9d", (2,) * 9, (2,) * 9, (1,) * 9),
    ("auto_partition", (300, 200), None, None),
]
# Arrays without chunks and with automatic partitions: python-blosc2 (c-blosc2 3.x)
# writes them as frame format version 3 (chunk size not fixed yet).
for name, shape, make in (("empty_v3", (0, 5), "data"), ("empty_v3_zeros", (0, 5), "zeros"),
                          ("empty_v3_1d_U", (0,), "empty"), ("empty_v3_3d", (3, 0, 4), "data")):
    cell("shape", f"shape_{name}", "<U3" if name.endswith("_U") else "<f8", shape, make=make)
    cell("shape", f"shape_{name}_sparse", "<f8", shape, make=make, contiguous=False)
for name, shape, ch, bl in SHAPES:
    cell("shape", f"shape_{name}", "<f8", shape, ch, bl)
    if name in ("0d", "empty_first", "4d"):
        cell("shape", f"shape_{name}_sparse", "<i2", shape, ch, bl, contiguous=False)

# Special chunks: whole chunks of zeros, NaNs, one value, uninitialised.
for make in ("zeros", "full", "empty", "nans"):
    for dt in ("<f8", "<i4") if make != "nans" else ("<f4", "<f8"):
        cell("special", f"special_{make}_{dt[1:]}", dt, S2, CH2, BL2, make=make)
        if dt == "<f8":
            cell("special", f"special_{make}_{dt[1:]}_sparse", dt, S2, CH2, BL2, make=make, contiguous=False)
cell("special", "special_full_record", RECORDS["rec_mixed"], S2, CH2, BL2, make="full")
cell("special", "special_full_U", "<U4", S2, CH2, BL2, make="full")
# Items wider than a chunk header's typesize (255): c-blosc2 3.x stores the whole value.
for n in (256, 300, 509, 4096):
    cell("special", f"special_full_S{n}", f"|S{n}", (9, 7), (4, 4), (2, 3), make="full")
cell("special", "special_full_V300_sparse", "|V300", (9, 7), (4, 4), (2, 3), make="full", contiguous=False)
cell("special", "special_runs", "<i8", (64, 64), (32, 32), (8, 8), make="runs")

# Storage: the same cells as sparse directories.
for name, dt, cp in (("zstd", "<i4", cparams()), ("lz4_bitshuffle", "<f8", cparams(C.LZ4, 5, [F.BITSHUFFLE])),
                     ("U", "<U5", None), ("record", RECORDS["rec_mixed"], None)):
    kw = {"cparams": cp} if cp else {}
    cell("storage", f"storage_sparse_{name}", dt, S2, CH2, BL2, contiguous=False, **kw)
    cell("storage", f"storage_contiguous_{name}", dt, S2, CH2, BL2, **kw)

# Compression parameters other than codec and filters.
for mode in (blosc2.SplitMode.ALWAYS_SPLIT, blosc2.SplitMode.NEVER_SPLIT, blosc2.SplitMode.AUTO_SPLIT,
             blosc2.SplitMode.FORWARD_COMPAT_SPLIT):
    cell("cparams", f"cparams_{mode.name.lower()}", "<f8", S2, CH2, BL2, cparams=cparams(C.ZSTD, 5, splitmode=mode))
for codec in (C.ZSTD, C.LZ4, C.LZ4HC):
    cell("cparams", f"cparams_dict_{codec.name.lower()}", "<i4", (200, 100), (100, 100), (10, 100),
         cparams=cparams(codec, 5, use_dict=True))
cell("cparams", "cparams_blocksize_only", "<i4", (200, 100), (100, 100), None, cparams=cparams(blocksize=4096))
cell("cparams", "cparams_nthreads4", "<f8", (200, 100), (100, 100), (10, 10), cparams=cparams(nthreads=4))
cell("cparams", "cparams_btune_default", "<f8", S2, CH2, BL2)

# Frames that hold no NDArray: a BatchArray (c-blosc2 3.x's variable-length blocks,
# frame version 3 with the VL-blocks flag) and an ObjectArray.
cell("frame", "frame_vl_blocks_batcharray", "|u1", (), make="batch")
cell("frame", "frame_objectarray", "|u1", (), make="object")

# Arrays changed after creation: grown, shrunk, partly overwritten, saved from memory.
for make in ("grown", "shrunk", "setitem", "cframe", "saved"):
    cell("history", f"history_{make}", "<i4", S2, CH2, BL2, make=make)
    cell("history", f"history_{make}_sparse", "<f8", S2, CH2, BL2, make=make, contiguous=False)

# Metadata: fixed-size metalayers and vlmeta of several kinds.
cell("meta", "meta_and_vlmeta", "<i4", S2, CH2, BL2, meta={"units": "m/s", "scale": [1, 2.5, "x"]},
     vlmeta={"history": "written by python-blosc2", "attrs": {"a": 1, "b": [1, 2]}, "blob": b"\x00\x01" * 300})
cell("meta", "meta_and_vlmeta_sparse", "<i4", S2, CH2, BL2, contiguous=False, meta={"units": "m/s"},
     vlmeta={"history": "sparse"})


def make_array(c, path):
    dt = np.dtype(c["dtype"])
    kw = dict(urlpath=path, contiguous=c["contiguous"], mode="w")
    if c["shape"] and c["chunks"]:
        kw["chunks"] = c["chunks"]
    if c["shape"] and c["blocks"]:
        kw["blocks"] = c["blocks"]
    if c["kw"].get("cparams") is not None:
        kw["cparams"] = c["kw"]["cparams"]
    if "meta" in c["kw"]:
        kw["meta"] = c["kw"]["meta"]
    make, shape = c["make"], c["shape"]
    if make == "data":
        arr = blosc2.asarray(data_for(dt, shape, len(c["name"])), **kw)
    elif make == "scaled":
        arr = blosc2.asarray(data_for(dt, shape, len(c["name"])) * 3000, **kw)
    elif make in ("grown", "shrunk", "setitem"):
        arr = blosc2.asarray(data_for(dt, shape, len(c["name"])), **kw)
        if make == "grown":
            arr.resize((shape[0] + 20, shape[1] + 3))
            arr[shape[0]:shape[0] + 5, :] = data_for(dt, (5, shape[1] + 3), 99)
        elif make == "shrunk":
            arr.resize((shape[0] - 10, shape[1] - 4))
        else:
            arr[3:20, 2:9] = data_for(dt, (17, 7), 98)
            arr[30:, :] = 0
    elif make in ("cframe", "saved"):
        mem = blosc2.asarray(data_for(dt, shape, len(c["name"])), chunks=kw["chunks"], blocks=kw["blocks"])
        if make == "saved":
            mem.save(urlpath=path, contiguous=c["contiguous"])
        elif c["contiguous"]:
            with open(path, "wb") as f:
                f.write(mem.to_cframe())
        else:
            blosc2.ndarray_from_cframe(mem.to_cframe()).copy(urlpath=path, contiguous=False, mode="w")
        arr = blosc2.open(path, mode="a")
    elif make == "runs":
        v = np.zeros(shape, dtype=dt)
        v[:32, :32] = 5  # a chunk of one value, written as data
        v[32:, :32] = np.arange(32 * 32).reshape(32, 32)
        v[:32, 32:48] = -1  # blocks of one value beside blocks of noise
        v[:32, 48:] = np.arange(32 * 16).reshape(32, 16) * 1000
        arr = blosc2.asarray(v, **kw)
    elif make == "zeros":
        arr = blosc2.zeros(shape, dtype=dt, **kw)
    elif make == "empty":
        arr = blosc2.empty(shape, dtype=dt, **kw)
    elif make == "nans":
        arr = blosc2.nans(shape, dtype=dt, **kw)
    elif make == "full":
        fill = np.ones((), dtype=dt)
        if dt.kind == "f":
            fill = dt.type(3.25)
        elif dt.kind == "U":
            fill = "ab"
        elif dt.kind in "SV":
            fill = np.frombuffer(bytes(range(1, 256)) * (dt.itemsize // 255 + 1), dtype="S1")[: dt.itemsize]
            fill = np.frombuffer(fill.tobytes(), dtype=dt)[0]
        elif dt.names:
            fill = np.array((5, 2.5, b"xy"), dtype=dt)[()]
        arr = blosc2.full(shape, fill, dtype=dt, **kw)
    for k, v in c["kw"].get("vlmeta", {}).items():
        arr.schunk.vlmeta[k] = v
    return arr


def raw_metas(arr):
    meta = {k: bytes(blosc2_ext.meta__getitem__(arr.schunk, k)).hex() for k in arr.schunk.meta.keys()}
    vl = {k: bytes(blosc2_ext.vlmeta.get_vlmeta(arr.schunk.vlmeta, k)).hex() for k in arr.schunk.vlmeta.keys()}
    return meta, vl


LISTS = ("shape", "chunks", "blocks", "filters", "filters_meta")


def format_cell(c):
    def val(k, v):
        if k in LISTS:
            return ",".join(str(x) for x in v)
        if k in ("meta", "vlmeta"):
            return ";".join(f"{n}:{h}" for n, h in v.items())
        return str(int(v) if isinstance(v, bool) else v)
    return "\t".join(f"{k}={val(k, v)}" for k, v in c.items())


def parse_cell(line):
    c = {}
    for field in line.rstrip("\n").split("\t"):
        k, v = field.split("=", 1)
        if k in LISTS:
            c[k] = [int(x) for x in v.split(",")] if v else []
        elif k in ("meta", "vlmeta"):
            c[k] = dict(e.split(":", 1) for e in v.split(";")) if v else {}
        elif k in ("itemsize", "contiguous"):
            c[k] = int(v)
        else:
            c[k] = v
    return c


def write(d, only=None):
    os.makedirs(d, exist_ok=True)
    written, skipped = [], []
    for c in CELLS:
        if only and only not in c["name"]:
            continue
        name = c["name"]
        path = os.path.join(d, name + (".b2nd" if c["contiguous"] else ".dir"))
        if c["make"] in ("batch", "object"):
            kind = blosc2.BatchArray if c["make"] == "batch" else blosc2.ObjectArray
            other = kind(urlpath=path, mode="w")
            other.append([1, "two", {"three": 3}])
            other.append([4.5])
            del other
            open(os.path.join(d, name + ".bin"), "wb").close()
            written.append(dict(name=name, path=path, axis=c["axis"], contiguous=True, dtype="|u1", itemsize=1,
                                shape=[], chunks=[], blocks=[], meta={}, vlmeta={}))
            continue
        try:
            arr = make_array(c, path)
        except Exception as e:  # a plugin that is not installed, a parameter it refuses
            skipped.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        del arr
        # Read back through a fresh open: the reference is what the file holds for blosc2.
        arr = blosc2.open(path)
        ref = arr[()] if arr.ndim == 0 else arr[...]
        with open(os.path.join(d, name + ".bin"), "wb") as f:
            f.write(np.ascontiguousarray(ref).tobytes())
        meta, vl = raw_metas(arr)
        cp = arr.schunk.cparams
        written.append(dict(
            name=name, path=path, axis=c["axis"], contiguous=c["contiguous"], dtype=arr.dtype.str,
            itemsize=arr.dtype.itemsize, shape=list(arr.shape), chunks=list(arr.chunks),
            blocks=list(arr.blocks), meta=meta, vlmeta=vl,
            codec=int(cp.codec.value), filters=[int(getattr(f, "value", f)) for f in cp.filters], filters_meta=list(cp.filters_meta)))
    with open(os.path.join(d, "cells.txt"), "w") as f:
        for w in written:
            f.write(format_cell(w) + "\n")
    with open(os.path.join(d, "skipped.txt"), "w") as f:
        f.write("".join(s + "\n" for s in skipped))
    print(f"python-blosc2 {blosc2.__version__} (c-blosc2 {blosc2.blosclib_version.split()[0]}): "
          f"{len(written)} cells written, {len(skipped)} skipped")
    for s in skipped:
        print(f"  skipped {s}")


def check(d):
    bad, n, per_axis = [], 0, {}
    with open(os.path.join(d, "cells.txt")) as f:
        cells = [parse_cell(line) for line in f if line.strip()]
    for c in cells:
        name = c["name"]
        try:
            arr = blosc2.open(c["path"])
            if not isinstance(arr, blosc2.NDArray):
                raise ValueError(f"opened as {type(arr).__name__}")
            if list(arr.shape) != c["shape"]:
                raise ValueError(f"shape {arr.shape} != {c['shape']}")
            if arr.dtype.itemsize != c["itemsize"]:
                raise ValueError(f"itemsize {arr.dtype.itemsize} != {c['itemsize']}")
            want_dt = c.get("dtype")
            if want_dt and want_dt.startswith("["):  # a record dtype, as NumPy describes it
                want_dt = ast.literal_eval(want_dt)
            if want_dt and arr.dtype != np.dtype(want_dt):
                raise ValueError(f"dtype {arr.dtype} != {c['dtype']}")
            if c["shape"] and (list(arr.chunks) != c["chunks"] or list(arr.blocks) != c["blocks"]):
                raise ValueError(f"partitions {arr.chunks}/{arr.blocks} != {c['chunks']}/{c['blocks']}")
            got = (arr[()] if arr.ndim == 0 else arr[...]).tobytes()
            with open(os.path.join(d, name + ".bin"), "rb") as f:
                want = f.read()
            if got != want:
                nd = sum(a != b for a, b in zip(got, want))
                raise ValueError(f"bytes differ ({len(got)} read, {len(want)} expected, {nd} differ)")
            if arr.ndim >= 1 and arr.shape[0] > 1 and arr.size > 0:  # a slice, too
                row = arr[1:2].tobytes()
                step = len(want) // arr.shape[0]
                if row != want[step:2 * step]:
                    raise ValueError("slice [1:2] differs")
            meta, vl = raw_metas(arr)
            for k, v in c.get("vlmeta", {}).items():
                if vl.get(k) != v:
                    raise ValueError(f"vlmeta {k}: {vl.get(k)} != {v}")
                arr.schunk.vlmeta[k]  # decodes as python-blosc2 users see it
            for k, v in c.get("meta", {}).items():
                if meta.get(k) != v:
                    raise ValueError(f"metalayer {k}: {meta.get(k)} != {v}")
            n += 1
            per_axis[c.get("axis", "?")] = per_axis.get(c.get("axis", "?"), 0) + 1
        except Exception as e:
            bad.append(f"{name}: {type(e).__name__}: {e}")
            traceback.print_exc()
    print(f"python-blosc2 {blosc2.__version__} (c-blosc2 {blosc2.blosclib_version.split()[0]}): "
          f"{n} cells identical, {len(bad)} wrong")
    for axis, k in sorted(per_axis.items()):
        print(f"{axis:>8}: {k} read bit for bit")
    for b in bad:
        print(f"WRONG {b}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    mode, d = sys.argv[1:3]
    if mode == "write" and len(sys.argv) > 3:
        write(d, only=sys.argv[3])  # only the cells whose name contains this
    else:
        {"write": write, "check": check}[mode](d)
