#!/usr/bin/env python3
"""The Python driver of the cross-library benchmark (bench/compare/README.md).

    python pylibs.py --lib L --data FILE --dtype i8|f4|u2... --shape A,B,C
        --chunks A,B,C --blocks A,B,C --threads N --reps R --write-reps W
        --positions FILE --box S --path PATH
        [--codec lz4|blosclz|zstd|lz4hc] [--clevel N] [--filter shuffle|bitshuffle|none]
        [--defaults] [--cold]

L is one of python-blosc2, zarr, zarr-sharded, h5py, tiledb, tensorstore.
--defaults: the library's own defaults (no codec, level, filter, chunk or
block settings given). A library that lacks the codec or filter asked for
prints {"na": "why"} and nothing else (its column says n/a). It times the
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
# one item), read_all(handle) -> ndarray, notes() -> str (settings used),
# settings(path) -> dict (the effective chunks, blocks, codec, level and
# filters of the store written at path). The constructor raises NotAvailable
# for a codec or filter the library lacks.


class NotAvailable(Exception):
    pass


class Blosc2Lib:
    def __init__(self, a):
        import blosc2

        self.b = blosc2
        self.a = a
        if a.defaults:
            return  # blosc2.asarray(data, urlpath=...) and nothing else
        blosc2.set_nthreads(a.threads)
        filt = {"shuffle": blosc2.Filter.SHUFFLE, "bitshuffle": blosc2.Filter.BITSHUFFLE,
                "none": blosc2.Filter.NOFILTER}[a.filter]
        self.cparams = blosc2.CParams(
            codec=blosc2.Codec[a.codec.upper()],
            clevel=a.clevel,
            typesize=a.np_dtype.itemsize,
            nthreads=a.threads,
            splitmode=blosc2.SplitMode.AUTO_SPLIT,
            filters=[blosc2.Filter.NOFILTER] * 5 + [filt],
        )
        self.dparams = blosc2.DParams(nthreads=a.threads)

    def version(self):
        return f"python-blosc2 {self.b.__version__} (c-blosc2 {self.b.VERSION_STRING if hasattr(self.b, 'VERSION_STRING') else '?'})"

    def notes(self):
        if self.a.defaults:
            return ("contiguous frame; `blosc2.asarray(data, urlpath=...)` with nothing else (its chunks, blocks and "
                    "cparams: see the settings), `blosc2.open(path)`")
        return f"contiguous frame; chunks and blocks as ours; nthreads {self.a.threads} (cparams, dparams)"

    def settings(self, path):
        h = self.b.open(path, mode="r")
        cp = h.cparams
        return {"chunks": list(h.chunks), "blocks": list(h.blocks), "codec": cp.codec.name.lower(),
                "clevel": cp.clevel, "filters": [f.name.lower() for f in cp.filters if f.name != "NOFILTER"],
                "nthreads": cp.nthreads, "splitmode": cp.splitmode.name}

    def write(self, path, src):
        if self.a.defaults:
            arr = self.b.asarray(src, urlpath=path)
        else:
            arr = self.b.asarray(
                src, urlpath=path, mode="w", chunks=self.a.chunks, blocks=self.a.blocks, cparams=self.cparams,
                dparams=self.dparams
            )
        del arr

    def zeros(self, path):
        if self.a.defaults:
            arr = self.b.zeros(self.a.shape, dtype=self.a.np_dtype, urlpath=path)
        else:
            arr = self.b.zeros(
                self.a.shape, dtype=self.a.np_dtype, urlpath=path, mode="w", chunks=self.a.chunks,
                blocks=self.a.blocks, cparams=self.cparams, dparams=self.dparams,
            )
        del arr

    def open(self, path):
        if self.a.defaults:
            return self.b.open(path, mode="r")
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
        shuffle = {"shuffle": "shuffle", "bitshuffle": "bitshuffle", "none": "noshuffle"}[a.filter]
        self.codec = BloscCodec(cname=a.codec, clevel=a.clevel, shuffle=shuffle, typesize=a.np_dtype.itemsize)
        if a.defaults:
            self.inner, self.shards = "auto", None
        elif sharded:
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
        a = self.a
        if a.defaults:
            return (f"zarr v3, `zarr.create_array(store, shape, dtype, chunks='auto')`, default codecs (see the "
                    f"settings); threading.max_workers {a.threads}")
        c = f"BloscCodec {a.codec} {a.clevel} {self.codec.shuffle.value}"
        if self.sharded:
            return (f"zarr v3, shards {list(self.shards)} of inner chunks {list(self.inner)} (our blocks), "
                    f"{c} on each inner chunk; threading.max_workers {a.threads}")
        return (f"zarr v3, chunks {list(self.inner)}, {c} (blosc1, automatic blocksize); "
                f"threading.max_workers {a.threads}")

    def settings(self, path):
        h = self.z.open_array(store=path, mode="r")
        comp = [c.to_dict() for c in h.compressors]
        st = {"chunks": list(h.chunks), "codecs": comp}
        if self.sharded:
            st["shards"] = list(h.shards)
        for c in comp:
            cfg = c.get("configuration", {})
            st["codec"] = cfg.get("cname", c.get("name"))
            st["clevel"] = cfg.get("clevel", cfg.get("level"))
            st["filters"] = [cfg["shuffle"]] if "shuffle" in cfg else []
        return st

    def _create(self, path):
        kw = {} if self.a.defaults else dict(shards=self.shards, compressors=self.codec, fill_value=0)
        return self.z.create_array(
            store=path, shape=self.a.shape, dtype=self.a.np_dtype, chunks=self.inner, zarr_format=3, overwrite=True,
            **kw,
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
        if a.defaults:
            self.filt = hdf5plugin.Blosc2()
            self.chunks = True
        else:
            filt = {"shuffle": hdf5plugin.Blosc2.SHUFFLE, "bitshuffle": hdf5plugin.Blosc2.BITSHUFFLE,
                    "none": hdf5plugin.Blosc2.NOFILTER}[a.filter]
            self.filt = hdf5plugin.Blosc2(cname=a.codec, clevel=a.clevel, filters=filt)
            self.chunks = tuple(a.chunks)

    def version(self):
        return f"h5py {self.h5py.__version__} (HDF5 {self.h5py.version.hdf5_version}), hdf5plugin {self.hdf5plugin.version}"

    def notes(self):
        a = self.a
        what = ("chunks=True (h5py's guess), hdf5plugin.Blosc2() defaults" if a.defaults
                else f"chunks as ours, hdf5plugin.Blosc2 {a.codec} {a.clevel} {a.filter}")
        return (f"one chunked dataset, {what} (blocks chosen by the "
                f"filter); BLOSC_NTHREADS={os.environ.get('BLOSC_NTHREADS', 'unset')}; chunk cache off (rdcc_nbytes=0)")

    def settings(self, path):
        with self.h5py.File(path, "r") as f:
            d = f["data"]
            plist = d.id.get_create_plist()
            opts = [plist.get_filter(i) for i in range(plist.get_nfilters())]
            st = {"chunks": list(d.chunks), "hdf5 filters": [[o[0], list(o[2])] for o in opts]}
        # hdf5plugin's Blosc2 cd_values: [.., .., typesize, bytes, clevel, filter, compcode]
        names = {0: "blosclz", 1: "lz4", 2: "lz4hc", 4: "zlib", 5: "zstd"}
        fnames = {0: "nofilter", 1: "shuffle", 2: "bitshuffle"}
        for fid, _, cd, _ in opts:
            if fid == 32026 and len(cd) >= 7:
                st.update(codec=names.get(cd[6], cd[6]), clevel=cd[4], filters=[fnames.get(cd[5], cd[5])])
        return st

    def write(self, path, src):
        with self.h5py.File(path, "w") as f:
            f.create_dataset("data", data=src, chunks=self.chunks, **self.filt)

    def zeros(self, path):
        with self.h5py.File(path, "w") as f:
            f.create_dataset("data", shape=tuple(self.a.shape), dtype=self.a.np_dtype, chunks=self.chunks,
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


def zstd_level(clevel):
    """The zstd level that blosc's clevel runs (c-blosc2's zstd_wrap_compress): 2*clevel-1, 9 -> 22."""
    return clevel * 2 - 1 if clevel < 9 else 22


def default_tiles(shape, itemsize, target=1 << 20):
    """Near-cubic tiles of at most `target` bytes: halve the longest extent until they fit."""
    t = list(shape)
    while int(np.prod(t)) * itemsize > target and max(t) > 1:
        i = t.index(max(t))
        t[i] = (t[i] + 1) // 2
    return tuple(t)


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
        if a.defaults:
            # TileDB has no automatic tiling for a dense array (tiledb.from_numpy
            # makes the whole array one tile): ~1 MB near-cubic tiles, and
            # ZstdFilter() at its default level.
            self.tiles = default_tiles(a.shape, a.np_dtype.itemsize)
            self.filters = [tiledb.ZstdFilter()]
            return
        self.tiles = tuple(a.chunks)
        if a.codec == "zstd":
            comp = tiledb.ZstdFilter(level=zstd_level(a.clevel))
        elif a.codec == "lz4":
            comp = tiledb.LZ4Filter()
        else:
            raise NotAvailable(f"TileDB has no {a.codec} filter (it has LZ4Filter and ZstdFilter)")
        pre = {"shuffle": [tiledb.ByteShuffleFilter()], "bitshuffle": [tiledb.BitShuffleFilter()], "none": []}
        self.filters = pre[a.filter] + [comp]

    def version(self):
        return f"tiledb-py {self.t.__version__} (TileDB {'.'.join(map(str, self.t.libtiledb.version()))})"

    def notes(self):
        a = self.a
        if a.defaults:
            return (f"dense array, tiles {list(self.tiles)} (chosen here: TileDB has no automatic dense tiling; "
                    f"near-cubic, at most 1 MiB), ZstdFilter() (TileDB's default level), no shuffle; "
                    f"sm.compute/io_concurrency_level {a.threads}")
        fl = " + ".join(f"{type(f).__name__}" + (f"(level={f.level})" if isinstance(f, self.t.ZstdFilter) else "")
                        for f in self.filters)
        return (f"dense array, tiles as our chunks, row-major, {fl}"
                + (f" (what blosc's clevel {a.clevel} runs: zstd level {zstd_level(a.clevel)})" if a.codec == "zstd"
                   else "") + f"; sm.compute/io_concurrency_level {a.threads}")

    def settings(self, path):
        sch = self.t.ArraySchema.load(path, ctx=self.ctx)
        fl = list(sch.attr(0).filters)
        comp = [f for f in fl if isinstance(f, (self.t.ZstdFilter, self.t.LZ4Filter))]
        return {"chunks": [int(sch.domain.dim(i).tile) for i in range(sch.ndim)],
                "codec": type(comp[0]).__name__ if comp else "none",
                "clevel": comp[0].level if comp else None,
                "filters": [type(f).__name__ for f in fl if f not in comp]}

    def _create(self, path):
        t = self.t
        dims = [
            t.Dim(name=f"d{i}", domain=(0, s - 1), tile=c, dtype=np.int64, ctx=self.ctx)
            for i, (s, c) in enumerate(zip(self.a.shape, self.tiles))
        ]
        attr = t.Attr(name="v", dtype=self.a.np_dtype, fill=0, filters=t.FilterList(self.filters), ctx=self.ctx)
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


class TensorStoreLib:
    """TensorStore, driver zarr3 on a local file kvstore (its blosc codec is c-blosc 1.x)."""

    def __init__(self, a):
        import tensorstore as ts

        self.ts = ts
        self.a = a
        self.ctx = ts.Context({"data_copy_concurrency": {"limit": a.threads},
                               "file_io_concurrency": {"limit": a.threads}})
        self.metadata = {"shape": list(a.shape), "data_type": a.np_dtype.name}
        if not a.defaults:
            shuffle = {"shuffle": "shuffle", "bitshuffle": "bitshuffle", "none": "noshuffle"}[a.filter]
            self.metadata.update(
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(a.chunks)}},
                codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "blosc", "configuration": {"cname": a.codec, "clevel": a.clevel, "shuffle": shuffle,
                                                            "typesize": a.np_dtype.itemsize, "blocksize": 0}}],
                fill_value=0,
            )

    def version(self):
        import importlib.metadata

        return f"tensorstore {importlib.metadata.version('tensorstore')}"

    def notes(self):
        a = self.a
        what = ("its default chunking and codecs (see the settings)" if a.defaults
                else f"chunks as ours, codecs bytes + blosc {a.codec} {a.clevel} {a.filter} (automatic blocksize)")
        return (f"zarr3 driver, file kvstore, {what}; data_copy_concurrency and file_io_concurrency limit "
                f"{a.threads}; no cache pool (the default)")

    def _spec(self, path):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}

    def _create(self, path):
        spec = dict(self._spec(path), metadata=self.metadata)
        return self.ts.open(spec, create=True, delete_existing=True, context=self.ctx).result()

    def settings(self, path):
        h = self.open(path)
        md = h.spec().to_json()["metadata"]
        st = {"chunks": md["chunk_grid"]["configuration"]["chunk_shape"], "codecs": md["codecs"]}
        for c in md["codecs"]:
            if c["name"] == "blosc":
                cf = c["configuration"]
                st.update(codec=cf["cname"], clevel=cf["clevel"], filters=[cf["shuffle"]])
            elif c["name"] in ("zstd", "gzip"):
                st.update(codec=c["name"], clevel=c.get("configuration", {}).get("level"), filters=[])
        st.setdefault("codec", "none")
        return st

    def write(self, path, src):
        h = self._create(path)
        h.write(src).result()
        del h

    def zeros(self, path):
        self._create(path)  # no chunk written: reads give the fill value

    def open(self, path):
        return self.ts.open(self._spec(path), open=True, read=True, context=self.ctx).result()

    def close(self, h):
        del h

    def read(self, h, index):
        return h[index].read().result()

    def read_all(self, h):
        return h.read().result()


LIBS = {
    "python-blosc2": lambda a: Blosc2Lib(a),
    "zarr": lambda a: ZarrLib(a, False),
    "zarr-sharded": lambda a: ZarrLib(a, True),
    "h5py": lambda a: H5pyLib(a),
    "tiledb": lambda a: TileDBLib(a),
    "tensorstore": lambda a: TensorStoreLib(a),
}


# ---------------------------------------------------------------- operations


def same(got, want):
    """Bit-for-bit equality of a read with the source region."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    u = f"u{want.dtype.itemsize}"
    if not np.array_equal(got.view(u), want.view(u)):
        return "wrong values"
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True, choices=sorted(LIBS))
    p.add_argument("--data", required=True)
    p.add_argument("--dtype", required=True, help="numpy's: i8, f8, f4, u2...")
    p.add_argument("--codec", default="zstd", choices=["lz4", "blosclz", "zstd", "lz4hc"])
    p.add_argument("--clevel", type=int, default=5)
    p.add_argument("--filter", default="shuffle", choices=["shuffle", "bitshuffle", "none"])
    p.add_argument("--defaults", action="store_true")
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
    boxes, items, pencils = [], [], [[], [], []]
    with open(a.positions) as f:
        for line in f:
            kind, *xyz = line.split()
            xyz = tuple(int(v) for v in xyz)
            if kind == "pencil":
                pencils[xyz[0]].append(xyz[1:])
            else:
                (boxes if kind == "box" else items).append(xyz)

    try:
        lib = LIBS[a.lib](a)
    except NotAvailable as e:
        emit({"na": str(e)})
        return
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
    try:
        emit({"settings": lib.settings(path)})
    except Exception as e:  # noqa: BLE001 - only a description
        emit({"settings": {"error": f"{type(e).__name__}: {e}"}})

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

    def time_pencils(h, axis):
        """Pencils along axis: every call timed, no warm-up (the first is the first such read of the
        process); checked after timing."""
        name = f"pencil{axis}"
        idxs = []
        for pos in pencils[axis]:
            it = iter(pos)
            idxs.append(tuple(slice(None) if d == axis else next(it) for d in range(3)))
        times, outs = [], []
        try:
            for idx in idxs:
                t0 = clock()
                out = lib.read(h, idx)
                times.append((clock() - t0) * 1e3)
                outs.append(out)
            err = None
            for idx, out in zip(idxs, outs):
                want = src[idx]
                err = same(np.asarray(out).reshape(want.shape), want) if np.asarray(out).size == want.size else \
                    f"{np.asarray(out).size} items, expected {want.size}"
                if err:
                    err = f"{err} in pencil {idx}"
                    break
        except Exception as e:  # noqa: BLE001
            err = f"{type(e).__name__}: {e}"
        if err:
            emit({"op": name, "fail": err})
        elif times:
            emit({"op": name, "ms": times})

    time_open("open", False)
    h = lib.open(path)
    # pencils first: their first call is the first read of the opened store
    for axis in range(3):
        time_pencils(h, axis)
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
