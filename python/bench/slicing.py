#!/usr/bin/env python3
"""Slicing from Python: this package (`caterva`) against python-blosc2 and
zarr, on the same data, in the style of bench/compare (each library in its
own process and venv, every read checked against the source).

Rows: the per-call time of a 16x16x16 read at random places (the overhead
of one call), and a whole plane along each axis. Data: a float64 field of
shape SHAPE (smooth plus noise, as bench/compare's `float`), chunks
{64,64,64}, blocks {16,16,16} (zarr: chunks {64,64,64}, and a sharded
variant with inner chunks {16,16,16}), ZSTD level 5 after a byte shuffle,
2 threads, on disk. The libraries take turns, in rounds: on a shared
machine the best of the rounds is the figure least disturbed by others.

    python/bench/slicing.py [--shape 256,256,256] [--threads 2] [--reps N]

run from the pycaterva venv (target/interop/pycaterva); python-blosc2 runs
in target/interop/blosc2, zarr in target/interop/zarr if it exists (make
it with `python3 -m venv target/interop/zarr && target/interop/zarr/bin/pip
install zarr`). Times are medians over the repetitions.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from _driver import best_of_rounds, options, venv_python


def data(shape):
    i, j, k = np.ogrid[: shape[0], : shape[1], : shape[2]]
    v = np.sin(i / 37) * np.cos(j / 53) + k / 400 + np.random.default_rng(0).normal(0, 1e-3, shape)
    return np.round(v * 2**16) / 2**16


def cases(shape, reps):
    rng = np.random.default_rng(1)
    small = [tuple(slice(int(s), int(s) + 16) for s in (rng.integers(0, n - 16) for n in shape)) for _ in range(reps)]
    planes = {}
    for ax in range(3):
        planes[ax] = [tuple(int(rng.integers(0, shape[ax])) if a == ax else slice(None) for a in range(3))
                      for _ in range(max(3, reps // 100))]
    return small, planes


class Caterva:
    def __init__(self, a):
        import caterva

        self.c, self.a = caterva, a

    def version(self):
        return f"caterva (this package) {self.c.__version__}, c-blosc2 {self.c.blosc2_version}"

    def write(self, path, src):
        self.c.asarray(src, urlpath=path, contiguous=True, chunks=(64,) * 3, blocks=(16,) * 3,
                       codec=self.c.Codec.ZSTD, clevel=5, filters=[self.c.Filter.SHUFFLE],
                       nthreads=self.a.threads, mode="w").close()

    def open(self, path):
        return self.c.open(path, mode="r", nthreads=self.a.threads)


class Blosc2:
    def __init__(self, a):
        import blosc2

        self.b, self.a = blosc2, a
        blosc2.set_nthreads(a.threads)
        self.cparams = blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=5, typesize=8, nthreads=a.threads,
                                      filters=[blosc2.Filter.NOFILTER] * 5 + [blosc2.Filter.SHUFFLE])
        self.dparams = blosc2.DParams(nthreads=a.threads)

    def version(self):
        return f"python-blosc2 {self.b.__version__}"

    def write(self, path, src):
        self.b.asarray(src, urlpath=path, mode="w", chunks=(64,) * 3, blocks=(16,) * 3, cparams=self.cparams,
                       dparams=self.dparams)

    def open(self, path):
        return self.b.open(path, mode="r", dparams=self.dparams)


class Zarr:
    def __init__(self, a, sharded):
        import zarr
        from zarr.codecs import BloscCodec

        self.z, self.a, self.sharded = zarr, a, sharded
        zarr.config.set({"threading.max_workers": a.threads})
        self.codec = BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=8)

    def version(self):
        return f"zarr {self.z.__version__}" + (" (sharded: inner chunks 16^3)" if self.sharded else "")

    def write(self, path, src):
        chunks, shards = ((16,) * 3, (64,) * 3) if self.sharded else ((64,) * 3, None)
        arr = self.z.create_array(store=path, shape=src.shape, dtype=src.dtype, chunks=chunks, shards=shards,
                                  compressors=self.codec, fill_value=0, zarr_format=3, overwrite=True)
        arr[...] = src

    def open(self, path):
        return self.z.open_array(store=path, mode="r")


def child(a):
    """Run one library: write the data, time the reads, print JSON."""
    lib = {"caterva": lambda: Caterva(a), "blosc2": lambda: Blosc2(a), "zarr": lambda: Zarr(a, False),
           "zarr-sharded": lambda: Zarr(a, True)}[a.lib]()
    src = data(a.shape)
    path = os.path.join(a.dir, a.lib)
    if not os.path.exists(path):
        lib.write(path, src)
    h = lib.open(path)
    small, planes = cases(a.shape, a.reps)
    out = {"version": lib.version()}

    clock = time.process_time if a.clock == "cpu" else time.perf_counter

    def timed(keys):
        times = []
        for k in keys:
            t = clock()
            got = h[k]
            times.append(clock() - t)
            if not np.array_equal(got, src[k]):
                raise SystemExit(f"{a.lib}: wrong result for {k}")
        return float(np.median(times))

    timed(small[:20])  # warm up
    out["small"] = timed(small)
    for ax, keys in planes.items():
        out[f"plane{ax}"] = timed(keys)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="256,256,256")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds, libraries alternating; the best round counts")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the process's CPU time (all its threads), which others' load disturbs less")
    ap.add_argument("--lib")
    ap.add_argument("--dir")
    a = ap.parse_args()
    a.shape = tuple(int(s) for s in a.shape.split(","))
    if a.lib:
        return child(a)
    runs = [("caterva", sys.executable), ("blosc2", venv_python("blosc2"))]
    if venv_python("zarr"):
        runs += [("zarr", venv_python("zarr")), ("zarr-sharded", venv_python("zarr"))]
    results = best_of_rounds(__file__, runs, a.rounds, options(a, "shape", "threads", "reps", "clock"))
    mib = np.prod(a.shape) * 8 / 2**20
    print(f"shape {a.shape} float64 ({mib:.0f} MiB), chunks 64^3, blocks 16^3, ZSTD 5 + shuffle, "
          f"{a.threads} threads, contiguous frame on disk; median of {a.reps} small reads, "
          f"{max(3, a.reps // 100)} planes per axis, best of {a.rounds} rounds (libraries alternating), "
          f"{a.clock} clock; "
          f"load average {os.getloadavg()[0]:.1f}")
    for lib, r in results.items():
        print(f"- {lib}: {r['version']}")
    libs = list(results)
    print()
    print("| read | " + " | ".join(libs) + " |")
    print("|---|" + "---:|" * len(libs))
    rows = [("16x16x16, per call", "small", 1e6, "µs")] + [(f"plane along axis {ax}", f"plane{ax}", 1e3, "ms")
                                                          for ax in range(3)]
    for label, key, scale, unit in rows:
        print(f"| {label} | " + " | ".join(f"{results[l][key] * scale:.1f} {unit}" for l in libs) + " |")


if __name__ == "__main__":
    main()
