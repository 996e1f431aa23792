#!/usr/bin/env python3
"""Use an installed libcaterva.so from Python with ctypes and NumPy.

    python numpy_ctypes.py [PATH/TO/libcaterva.so]

(default: $CATERVA_LIB, else the loader's search path). Creates a float64
array of zeros in a file, writes a NumPy array into part of it, records the
NumPy dtype, reopens the file and reads a slice and the whole array back into
NumPy arrays, comparing them with the same operations done in NumPy. Exits
non-zero on any failure.
"""

import ctypes
import ctypes.util
import os
import sys
import tempfile

import numpy as np

MAX_DIM = 8
MAX_METALAYERS = 15
BLOSC_SHUFFLE, BLOSC_ZSTD, BLOSC_AUTO_SPLIT = 1, 5, 3  # from blosc2.h
i64_p = ctypes.POINTER(ctypes.c_int64)


class Config(ctypes.Structure):
    """caterva_config_t."""

    _fields_ = [
        ("alloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
        ("compcodec", ctypes.c_uint8),
        ("compmeta", ctypes.c_uint8),
        ("complevel", ctypes.c_uint8),
        ("splitmode", ctypes.c_int32),
        ("usedict", ctypes.c_int),
        ("nthreads", ctypes.c_int16),
        ("filters", ctypes.c_uint8 * 6),
        ("filtersmeta", ctypes.c_uint8 * 6),
        ("prefilter", ctypes.c_void_p),
        ("pparams", ctypes.c_void_p),
        ("udbtune", ctypes.c_void_p),
    ]


class Params(ctypes.Structure):
    """caterva_params_t."""

    _fields_ = [("itemsize", ctypes.c_uint8), ("shape", ctypes.c_int64 * MAX_DIM), ("ndim", ctypes.c_int8)]


class Metalayer(ctypes.Structure):
    """caterva_metalayer_t."""

    _fields_ = [("name", ctypes.c_char_p), ("sdata", ctypes.POINTER(ctypes.c_uint8)), ("size", ctypes.c_int32)]


class Storage(ctypes.Structure):
    """caterva_storage_t."""

    _fields_ = [
        ("chunkshape", ctypes.c_int32 * MAX_DIM),
        ("blockshape", ctypes.c_int32 * MAX_DIM),
        ("contiguous", ctypes.c_bool),
        ("urlpath", ctypes.c_char_p),
        ("metalayers", Metalayer * MAX_METALAYERS),
        ("nmetalayers", ctypes.c_int32),
    ]


class ArrayHead(ctypes.Structure):
    """The leading fields of caterva_array_t (only read, never allocated here)."""

    _fields_ = [
        ("cfg", ctypes.c_void_p),
        ("sc", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * MAX_DIM),
        ("chunkshape", ctypes.c_int32 * MAX_DIM),
        ("extshape", ctypes.c_int64 * MAX_DIM),
        ("blockshape", ctypes.c_int32 * MAX_DIM),
        ("extchunkshape", ctypes.c_int64 * MAX_DIM),
        ("nitems", ctypes.c_int64),
        ("chunknitems", ctypes.c_int32),
        ("extnitems", ctypes.c_int64),
        ("blocknitems", ctypes.c_int32),
        ("extchunknitems", ctypes.c_int64),
        ("ndim", ctypes.c_int8),
        ("itemsize", ctypes.c_uint8),
    ]


array_p = ctypes.POINTER(ArrayHead)


def load(path):
    """Load libcaterva and declare the signatures used here."""
    lib = ctypes.CDLL(path)
    vp, cp, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64
    signatures = {
        "caterva_ctx_new": [ctypes.POINTER(Config), ctypes.POINTER(vp)],
        "caterva_ctx_free": [ctypes.POINTER(vp)],
        "caterva_zeros": [vp, ctypes.POINTER(Params), ctypes.POINTER(Storage), ctypes.POINTER(array_p)],
        "caterva_open": [vp, cp, ctypes.POINTER(array_p)],
        "caterva_free": [vp, ctypes.POINTER(array_p)],
        "caterva_remove": [vp, cp],
        "caterva_set_slice_buffer": [vp, vp, i64_p, i64, i64_p, i64_p, array_p],
        "caterva_get_slice_buffer": [vp, array_p, i64_p, i64_p, vp, i64_p, i64],
        "caterva_to_buffer": [vp, array_p, vp, i64],
        "caterva_set_dtype": [vp, array_p, cp],
        "caterva_get_dtype": [vp, array_p, ctypes.POINTER(vp)],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
    return lib


def check(rc, call):
    """Raise on a caterva error code."""
    if rc != 0:
        raise RuntimeError(f"{call} failed with caterva error {rc}")


def new_context(lib, nthreads):
    """A context (ZSTD level 5, shuffle) using libc's malloc and free."""
    libc = ctypes.CDLL(None)
    cfg = Config(
        alloc=ctypes.cast(libc.malloc, ctypes.c_void_p).value,
        free=ctypes.cast(libc.free, ctypes.c_void_p).value,
        compcodec=BLOSC_ZSTD,
        complevel=5,
        splitmode=BLOSC_AUTO_SPLIT,
        nthreads=nthreads,
    )
    cfg.filters[5] = BLOSC_SHUFFLE
    ctx = ctypes.c_void_p()
    check(lib.caterva_ctx_new(ctypes.byref(cfg), ctypes.byref(ctx)), "caterva_ctx_new")
    return ctx


def int64s(values):
    """A C int64_t[] holding values."""
    return (ctypes.c_int64 * len(values))(*values)


def get_slice(lib, ctx, arr, start, stop):
    """Read arr[start:stop] into a new float64 NumPy array."""
    shape = [b - a for a, b in zip(start, stop)]
    out = np.empty(shape, dtype="<f8")
    rc = lib.caterva_get_slice_buffer(
        ctx, arr, int64s(start), int64s(stop), out.ctypes.data, int64s(shape), out.nbytes
    )
    check(rc, "caterva_get_slice_buffer")
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CATERVA_LIB") or ctypes.util.find_library("caterva")
    if not path:
        sys.exit("libcaterva not found: pass its path")
    lib = load(path)
    libc = ctypes.CDLL(None)
    ctx = new_context(lib, nthreads=2)

    shape = (200, 300)
    with tempfile.TemporaryDirectory() as tmp:
        urlpath = os.path.join(tmp, "field.b2frame").encode()
        params = Params(itemsize=8, ndim=2)
        storage = Storage(contiguous=True, urlpath=urlpath)
        for d, (n, c, b) in enumerate(zip(shape, (64, 100), (16, 25))):
            params.shape[d], storage.chunkshape[d], storage.blockshape[d] = n, c, b
        arr = array_p()
        check(lib.caterva_zeros(ctx, ctypes.byref(params), ctypes.byref(storage), ctypes.byref(arr)), "caterva_zeros")

        # Write a NumPy array into [20:150, 30:280], and do the same in NumPy.
        y, x = np.mgrid[20:150, 30:280]
        patch = np.ascontiguousarray(np.sin(y / 7.0) * np.cos(x / 11.0), dtype="<f8")
        rc = lib.caterva_set_slice_buffer(
            ctx, patch.ctypes.data, int64s(patch.shape), patch.nbytes, int64s([20, 30]), int64s([150, 280]), arr
        )
        check(rc, "caterva_set_slice_buffer")
        check(lib.caterva_set_dtype(ctx, arr, patch.dtype.str.encode()), "caterva_set_dtype")
        check(lib.caterva_free(ctx, ctypes.byref(arr)), "caterva_free")
        expected = np.zeros(shape, dtype="<f8")
        expected[20:150, 30:280] = patch

        # Reopen the file: shape and dtype as written, a slice and the whole array as NumPy has them.
        check(lib.caterva_open(ctx, urlpath, ctypes.byref(arr)), "caterva_open")
        got_shape = tuple(arr.contents.shape[: arr.contents.ndim])
        dtype = ctypes.c_void_p()
        check(lib.caterva_get_dtype(ctx, arr, ctypes.byref(dtype)), "caterva_get_dtype")
        dtype_str = ctypes.string_at(dtype).decode()
        libc.free(dtype)
        window = get_slice(lib, ctx, arr, [10, 0], [160, 300])
        whole = np.empty(shape, dtype=dtype_str)
        check(lib.caterva_to_buffer(ctx, arr, whole.ctypes.data, whole.nbytes), "caterva_to_buffer")
        check(lib.caterva_free(ctx, ctypes.byref(arr)), "caterva_free")
        check(lib.caterva_remove(ctx, urlpath), "caterva_remove")
    check(lib.caterva_ctx_free(ctypes.byref(ctx)), "caterva_ctx_free")

    failures = []
    if got_shape != shape:
        failures.append(f"shape {got_shape}, expected {shape}")
    if dtype_str != "<f8":
        failures.append(f"dtype {dtype_str!r}, expected '<f8'")
    if not np.array_equal(window, expected[10:160, :]):
        failures.append("the slice [10:160, :] differs from NumPy's")
    if not np.array_equal(whole, expected):
        failures.append("the whole array differs from NumPy's")
    if failures:
        sys.exit("numpy_ctypes: " + "; ".join(failures))
    print(f"numpy_ctypes ok: {shape} float64, slice [10:160, :] sum {window.sum():.6f} matches NumPy")


if __name__ == "__main__":
    main()
