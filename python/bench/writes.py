#!/usr/bin/env python3
"""Writing from Python, and reading beside writers: this package (`caterva`)
against python-blosc2, on the same data, in the style of slicing.py (each
library in its own process and venv, every result checked).

Rows:
- a one-row write `a[i, :] = row` at random rows of a persisted float64
  array (it touches one row of chunks: each is read, changed and written
  back), on a contiguous frame and on a sparse one (a folder), at this
  package's default durability ('full': each write synced to disk) and at
  'process' (no fsyncs, which is all python-blosc2 ever does);
- four reader threads and two writer threads on one handle: each reader
  reads R random 256x256 windows, each writer writes W random rows (its
  own rows, so every read is checked against what the writers may have
  left there: the old or the new row, never a mix inside one row); the
  wall time of the whole.

Data: SHAPE float64 (smooth plus noise), chunks 256x2048, blocks 32x512,
ZSTD 1 after a byte shuffle (python-blosc2's defaults), 2 threads per
call. The libraries take turns, in rounds; the best round counts.

    python/bench/writes.py [--shape 4096,4096] [--reps 30] [--rounds 3]

run from the pycaterva venv (target/interop/pycaterva); python-blosc2
runs in target/interop/blosc2.
"""

import argparse
import json
import os
import sys
import threading
import time

import numpy as np

from _driver import best_of_rounds, options, venv_python

CHUNKS = (256, 2048)
BLOCKS = (32, 512)
WINDOW = 256


def data(shape):
    i, j = np.ogrid[: shape[0], : shape[1]]
    return np.sin(i / 37) * np.cos(j / 53) + np.random.default_rng(0).normal(0, 1e-3, shape)


class Caterva:
    def __init__(self, a):
        import caterva

        self.c, self.a = caterva, a

    def version(self):
        return f"caterva (this package) {self.c.__version__}, c-blosc2 {self.c.blosc2_version}"

    def write(self, path, src, contiguous):
        self.c.asarray(src, urlpath=path, contiguous=contiguous, chunks=CHUNKS, blocks=BLOCKS,
                       codec=self.c.Codec.ZSTD, clevel=1, filters=[self.c.Filter.SHUFFLE],
                       nthreads=self.a.threads, mode="w", tune=False).close()

    def open(self, path, durability):
        return self.c.open(path, mode="a", nthreads=self.a.threads, durability=durability)


class Blosc2:
    def __init__(self, a):
        import blosc2

        self.b, self.a = blosc2, a
        blosc2.set_nthreads(a.threads)
        self.cparams = blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=1, typesize=8, nthreads=a.threads,
                                      filters=[blosc2.Filter.NOFILTER] * 5 + [blosc2.Filter.SHUFFLE])
        self.dparams = blosc2.DParams(nthreads=a.threads)

    def version(self):
        return f"python-blosc2 {self.b.__version__}"

    def write(self, path, src, contiguous):
        self.b.asarray(src, urlpath=path, contiguous=contiguous, mode="w", chunks=CHUNKS, blocks=BLOCKS,
                       cparams=self.cparams, dparams=self.dparams)

    def open(self, path, durability):
        return self.b.open(path, mode="a", dparams=self.dparams)


def child(a):
    """Run one library: write the arrays, time the writes and the threads, print JSON."""
    lib = {"caterva": lambda: Caterva(a), "blosc2": lambda: Blosc2(a)}[a.lib]()
    src = data(a.shape)
    rng = np.random.default_rng(2)
    out = {"version": lib.version()}
    for contiguous in (True, False):
        layout = "contiguous" if contiguous else "sparse"
        path = os.path.join(a.dir, f"{a.lib}-{layout}" + (".b2nd" if contiguous else ""))
        lib.write(path, src, contiguous)
        expect = src.copy()
        levels = ("full", "process") if a.lib == "caterva" else ("process",)
        for level in levels:
            h = lib.open(path, level)
            times = []
            for _ in range(a.reps):
                i = int(rng.integers(0, a.shape[0]))
                row = rng.normal(size=a.shape[1])
                t = time.perf_counter()
                h[i, :] = row
                times.append(time.perf_counter() - t)
                expect[i] = row
            del h
            got = lib.open(path, level)[...]
            if not np.array_equal(got, expect):
                raise SystemExit(f"{a.lib}: {layout} array differs after the row writes")
            out[f"row-{layout}-{level}"] = float(np.median(times))
        if contiguous:
            out["threads"] = threads(a, lib, path, expect)
    print(json.dumps(out))


def threads(a, lib, path, expect):
    """4 readers and 2 writers on one handle; the wall time of the whole."""
    h = lib.open(path, "process")
    rows, cols = a.shape
    failures = []
    # Each writer owns alternate rows; it writes rows of one value, so that
    # a read row is either what it was or one value throughout.
    def writer(w):
        rng = np.random.default_rng(10 + w)
        for _ in range(a.writes):
            i = int(rng.integers(0, rows // 2)) * 2 + w
            h[i, :] = np.full(cols, float(i))

    def reader(r):
        rng = np.random.default_rng(20 + r)
        for _ in range(a.reads):
            i, j = int(rng.integers(0, rows - WINDOW)), int(rng.integers(0, cols - WINDOW))
            got = h[i:i + WINDOW, j:j + WINDOW]
            old = expect[i:i + WINDOW, j:j + WINDOW]
            for k in range(WINDOW):
                if not (np.array_equal(got[k], old[k]) or (got[k] == float(i + k)).all()):
                    failures.append((i + k, j))
                    return

    ts = [threading.Thread(target=reader, args=(r,)) for r in range(4)]
    ts += [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    t = time.perf_counter()
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    wall = time.perf_counter() - t
    if failures:
        raise SystemExit(f"{a.lib}: a read beside the writers saw a torn row at {failures[0]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="4096,4096")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30, help="row writes per layout and durability")
    ap.add_argument("--reads", type=int, default=60, help="windows per reader thread")
    ap.add_argument("--writes", type=int, default=20, help="rows per writer thread")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, libraries alternating; the best round counts")
    ap.add_argument("--lib")
    ap.add_argument("--dir")
    a = ap.parse_args()
    a.shape = tuple(int(s) for s in a.shape.split(","))
    if a.lib:
        return child(a)
    runs = [("caterva", sys.executable), ("blosc2", venv_python("blosc2"))]
    results = best_of_rounds(__file__, runs, a.rounds, options(a, "shape", "threads", "reps", "reads", "writes"))
    mib = np.prod(a.shape) * 8 / 2**20
    print(f"shape {a.shape} float64 ({mib:.0f} MiB), chunks {CHUNKS}, blocks {BLOCKS}, ZSTD 1 + shuffle, "
          f"{a.threads} threads per call, on disk; median of {a.reps} row writes, "
          f"4 readers x {a.reads} windows + 2 writers x {a.writes} rows; best of {a.rounds} rounds "
          f"(libraries alternating); load average {os.getloadavg()[0]:.1f}")
    for lib, r in results.items():
        print(f"- {lib}: {r['version']}")
    libs = list(results)
    print()
    print("| operation | " + " | ".join(libs) + " |")
    print("|---|" + "---:|" * len(libs))
    rows = [(f"one-row write, {layout}, durability {level}", f"row-{layout}-{level}", 1e3, "ms")
            for layout in ("contiguous", "sparse") for level in ("full", "process")]
    rows.append(("4 readers + 2 writers, one handle (wall)", "threads", 1, "s"))
    for label, key, scale, unit in rows:
        cells = [f"{results[l][key] * scale:.1f} {unit}" if key in results[l] else "-" for l in libs]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
