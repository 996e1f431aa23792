#!/usr/bin/env python3
"""Share a caterva context and arrays with forked worker processes.

    python multiprocessing_fork.py [PATH/TO/libcaterva.so]

(default: $CATERVA_LIB, else the loader's search path). The parent creates a
context with 4 threads and a float64 array twice (in memory and in a file),
reads them, then starts a multiprocessing Pool of 4 workers with the *fork*
start method while one of its own threads keeps reading. Each worker reads
different slices through the context and array handles it inherited (plain
pointers, as valid in the child as in the parent) and returns their sums; the
parent compares them with NumPy's, then writes and reads the arrays again.
Exits non-zero on any failure, or if the workers do not finish in time.

The ctypes declarations come from numpy_ctypes.py, beside this file.
"""

import ctypes
import ctypes.util
import multiprocessing as mp
import os
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_ctypes import (  # noqa: E402
    Params,
    Storage,
    array_p,
    check,
    get_slice,
    int64s,
    load,
    new_context,
)

SHAPE = (240, 180)
CHUNKS, BLOCKS = (64, 90), (16, 30)
NTASKS = 16
TIMEOUT_S = 120

# Set by the parent before the pool forks; the workers inherit them.
LIB = None
CTX = None
ARRAYS = []


def expected_array():
    y, x = np.mgrid[0 : SHAPE[0], 0 : SHAPE[1]]
    return np.ascontiguousarray(np.sin(y / 9.0) + np.cos(x / 13.0) * 0.5, dtype="<f8")


def tasks():
    """(array index, start, stop): row bands and column bands, a different slice each."""
    out = []
    for t in range(NTASKS):
        if t % 2 == 0:
            lo = t * SHAPE[0] // NTASKS
            start, stop = [lo, 0], [lo + SHAPE[0] // NTASKS + 7, SHAPE[1]]
        else:
            lo = t * SHAPE[1] // NTASKS
            start, stop = [0, lo], [SHAPE[0], min(lo + 23, SHAPE[1])]
        stop = [min(s, n) for s, n in zip(stop, SHAPE)]
        out.append((t % len(ARRAYS), start, stop))
    return out


def slice_sum(task):
    """In a worker: read one slice through the inherited context and array."""
    which, start, stop = task
    part = get_slice(LIB, CTX, ARRAYS[which], start, stop)
    return os.getpid(), float(part.sum())


def make_array(lib, ctx, data, urlpath):
    params = Params(itemsize=8, ndim=2)
    storage = Storage(contiguous=True, urlpath=urlpath)
    for d in range(2):
        params.shape[d], storage.chunkshape[d], storage.blockshape[d] = SHAPE[d], CHUNKS[d], BLOCKS[d]
    arr = array_p()
    check(lib.caterva_zeros(ctx, ctypes.byref(params), ctypes.byref(storage), ctypes.byref(arr)), "caterva_zeros")
    rc = lib.caterva_set_slice_buffer(
        ctx, data.ctypes.data, int64s(data.shape), data.nbytes, int64s([0, 0]), int64s(SHAPE), arr
    )
    check(rc, "caterva_set_slice_buffer")
    return arr


def read_whole(lib, ctx, arr):
    whole = np.empty(SHAPE, dtype="<f8")
    check(lib.caterva_to_buffer(ctx, arr, whole.ctypes.data, whole.nbytes), "caterva_to_buffer")
    return whole


def main():
    global LIB, CTX
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CATERVA_LIB") or ctypes.util.find_library("caterva")
    if not path:
        sys.exit("libcaterva not found: pass its path")
    LIB = lib = load(path)
    CTX = ctx = new_context(lib, nthreads=4)

    failures = []
    expected = expected_array()
    with tempfile.TemporaryDirectory() as tmp:
        urlpath = os.path.join(tmp, "shared.b2frame").encode()
        ARRAYS.append(make_array(lib, ctx, expected, None))
        ARRAYS.append(make_array(lib, ctx, expected, urlpath))
        # Use them before forking: the context's threads and Blosc2's are running.
        for arr in ARRAYS:
            if not np.array_equal(read_whole(lib, ctx, arr), expected):
                failures.append("the parent's first read differs")

        # A thread of the parent keeps reading while the workers are forked.
        stop = threading.Event()
        background_errors = []

        def keep_reading():
            while not stop.is_set():
                for arr in ARRAYS:
                    if not np.array_equal(get_slice(lib, ctx, arr, [5, 7], [130, 170]), expected[5:130, 7:170]):
                        background_errors.append("background read differs")

        reader = threading.Thread(target=keep_reading)
        reader.start()
        work = tasks()
        pool = mp.get_context("fork").Pool(4)
        try:
            results = pool.map_async(slice_sum, work, chunksize=1).get(timeout=TIMEOUT_S)
        except mp.TimeoutError:
            sys.exit(f"multiprocessing_fork: the workers did not finish in {TIMEOUT_S} s (hung)")
        finally:
            pool.terminate()
            pool.join()
            stop.set()
            reader.join()
        failures += background_errors[:1]

        pids = {pid for pid, _ in results}
        if os.getpid() in pids:
            failures.append("a slice was read in the parent, not in a worker")
        for (which, start, stop_), (_, got) in zip(work, results):
            want = float(expected[start[0] : stop_[0], start[1] : stop_[1]].sum())
            if got != want:
                failures.append(f"array {which}, slice {start}..{stop_}: sum {got}, expected {want}")

        # The parent goes on with the same context and arrays: write, read back.
        patch = np.full((40, 50), -1.5, dtype="<f8")
        for arr in ARRAYS:
            rc = lib.caterva_set_slice_buffer(
                ctx, patch.ctypes.data, int64s(patch.shape), patch.nbytes, int64s([100, 60]), int64s([140, 110]), arr
            )
            check(rc, "caterva_set_slice_buffer")
        expected[100:140, 60:110] = patch
        for arr in ARRAYS:
            if not np.array_equal(read_whole(lib, ctx, arr), expected):
                failures.append("the parent's read after the pool differs")
            check(lib.caterva_free(ctx, ctypes.byref(arr)), "caterva_free")
        check(lib.caterva_remove(ctx, urlpath), "caterva_remove")
    check(lib.caterva_ctx_free(ctypes.byref(ctx)), "caterva_ctx_free")

    if failures:
        sys.exit("multiprocessing_fork: " + "; ".join(failures))
    print(
        f"multiprocessing_fork ok: {len(work)} slices of a {SHAPE} float64 array (in memory and in a file) "
        f"read by {len(pids)} forked workers through the parent's context, sums match NumPy"
    )


if __name__ == "__main__":
    main()
