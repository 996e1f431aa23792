#!/usr/bin/env python3
"""The Python driver of the cross-library benchmark (bench/compare/README.md).

    python pylibs.py --lib L --data FILE --dtype i8|f8 --shape A,B,C
        --chunks A,B,C --blocks A,B,C --threads N --reps R --write-reps W
        --positions FILE --box S --path PATH [--cold]

L is one of python-blosc2, zarr, zarr-sharded, h5py, tiledb. It times the
operations that native.c times for the C libraries, through each library's
ordinary Python API (reads return new NumPy arrays), on an array stored at
PATH, and prints one JSON object per line with the raw times of every
repetition (run.py takes the medians). Every read is checked, bit for bit,
against the source; a wrong result or an exception makes the operation a
failure ({"op": ..., "fail": "why"}), not a time. PATH is removed at the end.
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np


def emit(obj):
    print(json.dumps(obj), flush=True)


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def rm_rf(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def path_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total


# ---------------------------------------------------------------- libraries
#
# Each adapter: version() -> str, write(path, src) (create, write, close),
# zeros(path) (an array of the same schema holding zeros, nothing written
# where the library allows), open(path) -> handle, close(handle),
# read(handle, index) -> ndarray (index: a tuple of slices, or of ints for
# one item), read_all(handle) -> ndarray, notes() -> str (settings used).


class Blosc2Lib:
    def __init__(self, a):
        import blosc2

        self.b = blosc2
        self.a = a
        blosc2.set_nthreads(a.threads)
        self.cparams = blosc2.CParams(
            codec=blosc2.Codec.ZSTD,
            clevel=5,
            typesize=8,
            nthreads=a.threads,
            splitmode=blosc2.SplitMode.AUTO_SPLIT,
            filters=[blosc2.Filter.NOFILTER] * 5 + [blosc2.Filter.SHUFFLE],
        )
        self.dparams = blosc2.DParams(nthreads=a.threads)

    def version(self):
        return f"python-blosc2 {self.b.__version__} (c-blosc2 {self.b.VERSION_STRING if hasattr(self.b, 'VERSION_STRING') else '?'})"

    def notes(self):
        return f"contiguous frame; chunks and blocks as ours; nthreads {self.a.threads} (cparams, dparams)"

    def write(self, path, src):
        arr = self.b.asarray(
            src, urlpath=path, mode="w", chunks=self.a.chunks, blocks=self.a.blocks, cparams=self.cparams, dparams=self.dparams
        )
        del arr

    def zeros(self, path):
        arr = self.b.zeros(
            self.a.shape, dtype=self.a.np_dtype, urlpath=path, mode="w", chunks=self.a.chunks, blocks=self.a.blocks,
            cparams=self.cparams, dparams=self.dparams,
        )
        del arr

    def open(self, path):
        return self.b.open(path, mode="r", dparams=self.dparams)

    def close(self, h):
        del h

    def read(self, h, index):
        return h[index]

    def read_all(self, h):
        return h[...]


class ZarrLib:
    def __init__(self, a, sharded):
        import numcodecs
        import zarr
        from zarr.codecs import BloscCodec

        self.z = zarr
        self.numcodecs = numcodecs
        self.a = a
        self.sharded = sharded
        zarr.config.set({"threading.max_workers": a.threads})
        self.codec = BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=8)
        if sharded:
            # zarr needs a shard shape that is a multiple of the inner chunks:
            # the multiple of our block nearest to our chunk along each axis.
            self.inner = tuple(a.blocks)
            self.shards = tuple(max(1, round(c / b)) * b for c, b in zip(a.chunks, a.blocks))
        else:
            self.inner = tuple(a.chunks)
            self.shards = None

    def version(self):
        return f"zarr {self.z.__version__} (numcodecs {self.numcodecs.__version__}, its c-blosc {self.numcodecs.blosc.VERSION_STRING})"

    def notes(self):
        if self.sharded:
            return (f"zarr v3, shards {list(self.shards)} of inner chunks {list(self.inner)} (our blocks), "
                    f"BloscCodec zstd 5 shuffle on each inner chunk; threading.max_workers {self.a.threads}")
        return (f"zarr v3, chunks {list(self.inner)}, BloscCodec zstd 5 shuffle (blosc1, automatic blocksize); "
                f"threading.max_workers {self.a.threads}")

    def _create(self, path):
        return self.z.create_array(
            store=path, shape=self.a.shape, dtype=self.a.np_dtype, chunks=self.inner, shards=self.shards,
            compressors=self.codec, fill_value=0, zarr_format=3, overwrite=True,
        )

    def write(self, path, src):
        arr = self._create(path)
        arr[...] = src

    def zeros(self, path):
        self._create(path)  # no chunk written: reads give the fill value

    def open(self, path):
        return self.z.open_array(store=path, mode="r")

    def close(self, h):
        del h

    def read(self, h, index):
        return h[index]

    def read_all(self, h):
        return h[...]


class H5pyLib:
    def __init__(self, a):
        # hdf5plugin's Blosc2 filter has no thread setting; its c-blosc2 reads
        # BLOSC_NTHREADS when it makes a context (run.py sets it for this process).
        import h5py
        import hdf5plugin

        self.h5py = h5py
        self.hdf5plugin = hdf5plugin
        self.a = a
        self.filt = hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)

    def version(self):
        return f"h5py {self.h5py.__version__} (HDF5 {self.h5py.version.hdf5_version}), hdf5plugin {self.hdf5plugin.version}"

    def notes(self):
        return (f"one chunked dataset, chunks as ours, hdf5plugin.Blosc2 zstd 5 shuffle (blocks chosen by the "
                f"filter); BLOSC_NTHREADS={os.environ.get('BLOSC_NTHREADS', 'unset')}; chunk cache off (rdcc_nbytes=0)")

    def write(self, path, src):
        with self.h5py.File(path, "w") as f:
            f.create_dataset("data", data=src, chunks=tuple(self.a.chunks), **self.filt)

    def zeros(self, path):
        with self.h5py.File(path, "w") as f:
            f.create_dataset("data", shape=tuple(self.a.shape), dtype=self.a.np_dtype, chunks=tuple(self.a.chunks),
                             fillvalue=0, **self.filt)

    def open(self, path):
        # No chunk cache: HDF5's default one (1 MiB) cannot hold the full run's
        # 6 MB chunks anyway; off, it cannot serve --quick's small chunks from
        # memory either, so every read decompresses what it needs.
        f = self.h5py.File(path, "r", rdcc_nbytes=0)
        return f, f["data"]

    def close(self, h):
        h[0].close()

    def read(self, h, index):
        return h[1][index]

    def read_all(self, h):
        return h[1][()]


# Blosc's clevel 5 (every other library here) runs zstd at level 2*5-1 = 9
# (c-blosc and c-blosc2's zstd_wrap_compress); TileDB takes zstd's own level.
ZSTD_LEVEL = 9


class TileDBLib:
    def __init__(self, a):
        import tiledb

        self.t = tiledb
        self.a = a
        self.cfg = {
            "sm.compute_concurrency_level": str(a.threads),
            "sm.io_concurrency_level": str(a.threads),
        }
        self.ctx = tiledb.Ctx(tiledb.Config(self.cfg))

    def version(self):
        return f"tiledb-py {self.t.__version__} (TileDB {'.'.join(map(str, self.t.libtiledb.version()))})"

    def notes(self):
        return (f"dense array, tiles as our chunks, row-major, ByteShuffleFilter + ZstdFilter(level=9) (what blosc's "
                f"clevel 5 runs: zstd level 2*5-1); "
                f"sm.compute/io_concurrency_level {self.a.threads}")

    def _create(self, path):
        t = self.t
        dims = [
            t.Dim(name=f"d{i}", domain=(0, s - 1), tile=c, dtype=np.int64, ctx=self.ctx)
            for i, (s, c) in enumerate(zip(self.a.shape, self.a.chunks))
        ]
        attr = t.Attr(
            name="v", dtype=self.a.np_dtype, fill=0,
            filters=t.FilterList([t.ByteShuffleFilter(), t.ZstdFilter(level=ZSTD_LEVEL)]), ctx=self.ctx,
        )
        schema = t.ArraySchema(
            domain=t.Domain(*dims, ctx=self.ctx), attrs=[attr], sparse=False, cell_order="row-major",
            tile_order="row-major", ctx=self.ctx,
        )
        t.Array.create(path, schema, ctx=self.ctx)

    def write(self, path, src):
        self._create(path)
        with self.t.open(path, "w", ctx=self.ctx) as arr:
            arr[:] = src

    def zeros(self, path):
        self._create(path)  # no fragment: reads give the fill value

    def open(self, path):
        return self.t.open(path, "r", ctx=self.ctx)

    def close(self, h):
        h.close()

    def read(self, h, index):
        return h.query(attrs=["v"])[index]["v"]

    def read_all(self, h):
        return h.query(attrs=["v"])[:]["v"]


LIBS = {
    "python-blosc2": lambda a: Blosc2Lib(a),
    "zarr": lambda a: ZarrLib(a, False),
    "zarr-sharded": lambda a: ZarrLib(a, True),
    "h5py": lambda a: H5pyLib(a),
    "tiledb": lambda a: TileDBLib(a),
}


# ---------------------------------------------------------------- operations


def same(got, want):
    """Bit-for-bit equality of a read with the source region."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if not np.array_equal(got.view(np.int64), want.view(np.int64)):
        return "wrong values"
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True, choices=sorted(LIBS))
    p.add_argument("--data", required=True)
    p.add_argument("--dtype", required=True, choices=["i8", "f8"])
    p.add_argument("--shape", required=True)
    p.add_argument("--chunks", required=True)
    p.add_argument("--blocks", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--write-reps", type=int, default=3)
    p.add_argument("--positions", required=True)
    p.add_argument("--box", type=int, default=16)
    p.add_argument("--path", required=True)
    p.add_argument("--cold", action="store_true")
    a = p.parse_args()
    a.shape = tuple(int(x) for x in a.shape.split(","))
    a.chunks = tuple(int(x) for x in a.chunks.split(","))
    a.blocks = tuple(int(x) for x in a.blocks.split(","))
    a.np_dtype = np.dtype("<" + a.dtype)

    src = np.fromfile(a.data, dtype=a.np_dtype)
    src = src.reshape(a.shape)
    boxes, items = [], []
    with open(a.positions) as f:
        for line in f:
            kind, *xyz = line.split()
            (boxes if kind == "box" else items).append(tuple(int(v) for v in xyz))

    lib = LIBS[a.lib](a)
    emit({"version": lib.version()})
    emit({"notes": lib.notes()})
    path = a.path
    clock = time.perf_counter

    # write: from the array in memory to the store, closed
    times = []
    for _ in range(a.write_reps):
        rm_rf(path)
        t0 = clock()
        try:
            lib.write(path, src)
        except Exception as e:  # noqa: BLE001 - any failure is reported
            emit({"op": "write", "fail": f"{type(e).__name__}: {e}"})
            return
        times.append((clock() - t0) * 1e3)
    emit({"op": "write", "ms": times})
    emit({"op": "file_bytes", "value": path_bytes(path)})

    def time_open(name, cold):
        times = []
        for _ in range(a.reps):
            if cold:
                drop_caches()
            t0 = clock()
            try:
                h = lib.open(path)
            except Exception as e:  # noqa: BLE001
                emit({"op": name, "fail": f"{type(e).__name__}: {e}"})
                return
            times.append((clock() - t0) * 1e3)
            lib.close(h)
        emit({"op": name, "ms": times})

    full_sl = (slice(None),) * 3
    plane_idx = []
    for axis in range(3):
        idx = [slice(None)] * 3
        k = a.shape[axis] // 2
        idx[axis] = slice(k, k + 1)
        plane_idx.append(tuple(idx))
    box_idx = [tuple(slice(x, x + a.box) for x in b) for b in boxes]

    def run_read(h, kind, idx):
        if kind == "full":
            return [lib.read_all(h)]
        if kind == "region":
            return [lib.read(h, idx)]
        return [lib.read(h, bi) for bi in box_idx]

    def check_read(out, kind, idx):
        if kind == "full":
            return same(out[0], src)
        if kind == "region":
            return same(out[0], src[idx])
        for o, bi in zip(out, box_idx):
            err = same(o, src[bi])
            if err:
                return f"{err} in box {bi}"
        return None

    def time_read(h, name, kind, idx, cold):
        times = []
        for rep in range(0 if cold else -1, a.reps):
            use = h
            if cold:
                drop_caches()
                use = lib.open(path)
            try:
                t0 = clock()
                out = run_read(use, kind, idx)
                t = (clock() - t0) * 1e3
                err = check_read(out, kind, idx)
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {e}"
            if cold:
                lib.close(use)
            if err:
                emit({"op": name, "fail": err})
                return
            if rep >= 0:
                times.append(t)
            del out
        emit({"op": name, "ms": times})

    def time_items(h, name, p, zeros, cold):
        times = []
        n = a.reps if cold else len(items)
        for i in range(n):
            it = items[i % len(items)]
            use = h
            if cold:
                drop_caches()
                use = lib.open(p)
            try:
                t0 = clock()
                v = lib.read(use, it)
                t = (clock() - t0) * 1e3
                want = np.zeros((), a.np_dtype) if zeros else src[it]
                err = same(np.asarray(v).reshape(()), np.asarray(want))
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {e}"
            if cold:
                lib.close(use)
            if err:
                emit({"op": name, "fail": f"item {it}: {err}"})
                return
            times.append(t)
        emit({"op": name, "ms": times})

    ops = [("full", "full", full_sl)] + [(f"plane{d}", "region", plane_idx[d]) for d in range(3)]
    ops.append(("boxes", "boxes", None))

    time_open("open", False)
    h = lib.open(path)
    for name, kind, idx in ops:
        time_read(h, name, kind, idx, False)
    time_items(h, "item", path, False, False)
    lib.close(h)

    if a.cold:
        if not drop_caches():
            emit({"cold": "unavailable: cannot write /proc/sys/vm/drop_caches"})
        else:
            time_open("open_cold", True)
            for name, kind, idx in ops:
                time_read(None, name + "_cold", kind, idx, True)
            time_items(None, "item_cold", path, False, True)

    # per-call overhead: 1-item reads from an array of the same schema that
    # holds only zeros (no chunk stored, or c-blosc2's special-value chunks)
    zpath = path + ".zeros"
    rm_rf(zpath)
    try:
        lib.zeros(zpath)
        h = lib.open(zpath)
        time_items(h, "overhead", zpath, True, False)
        lib.close(h)
    except Exception as e:  # noqa: BLE001
        emit({"op": "overhead", "fail": f"{type(e).__name__}: {e}"})
    rm_rf(zpath)
    rm_rf(path)


if __name__ == "__main__":
    sys.exit(main())
