"""The module-level constructors of python-caterva, with NumPy dtypes."""

import math
import os

import numpy as np

from . import _caterva
from .ndarray import _from_cframe, _from_numpy, _new, _opened
from .utils import _shape, apply_storage_options, default_nthreads

def _itemsize_dtype(itemsize, dtype):
    """(itemsize, dtype) from python-caterva's `itemsize` and/or our `dtype`;
    an `itemsize` that is not an int is taken as a dtype. With an itemsize
    and no dtype, items are bytes (`S<itemsize>`), as python-caterva
    returned them; with neither, float64 (NumPy's, python-blosc2's and
    zarr's default)."""
    if itemsize is not None and not isinstance(itemsize, (int, np.integer)):
        if dtype is not None:
            raise TypeError("give the dtype once")
        itemsize, dtype = None, itemsize
    if dtype is None and itemsize is None:
        dtype = np.float64
    if dtype is not None:
        d = np.dtype(dtype)
        if itemsize is not None and int(itemsize) != d.itemsize:
            raise ValueError(f"itemsize {itemsize} does not match dtype {d} ({d.itemsize} bytes)")
        if d.itemsize == 0:
            raise ValueError(f"dtype {d} has items of 0 bytes; give its length ('U10', 'S4')")
        if d.hasobject:
            raise TypeError(f"dtype {d} holds Python objects, which an array of bytes cannot store")
        return d.itemsize, d
    itemsize = int(itemsize)
    if not 1 <= itemsize <= _caterva.MAX_ITEMSIZE:
        raise ValueError(f"itemsize must be 1 to {_caterva.MAX_ITEMSIZE} bytes, not {itemsize}")
    return itemsize, np.dtype(f"S{itemsize}")


def empty(shape, itemsize=None, dtype=None, **kwargs):
    """A new array (of zeros: arrays are never uninitialised).

    Keyword arguments (all constructors): chunks, blocks, urlpath,
    contiguous, meta (a dict of name: bytes), codec, clevel, filters,
    filtersmeta, nthreads, usedict, checksums, durability ('full', the
    default: a write survives a power loss; 'normal': writes are synced in
    batches, a power loss may lose the last ones but never tears the array;
    'process': no fsyncs, a write survives a killed process; see
    NDArray.durability), and mode ('w-':
    refuse an existing path, as python-caterva did; 'w': replace it).

    Without chunks, codec, clevel or filters, the library's proposal is
    used, the same as from C and the command line: chunks and blocks from
    `propose_partitions` (for 3 or more axes, the first taken as a stack:
    blocks one item thin along it), LZ4 level 5 after a byte shuffle
    (python-caterva's was ZSTD 5: pass codec=Codec.ZSTD, clevel=5 for
    smaller, slower files). An array made from data (asarray, from_buffer)
    of 32 MiB or more is tuned by it instead: the core's tuner compresses
    whole blocks of it (about 256 KiB) with a few codecs, filters and block
    sizes and picks by `tune` ('balanced', the default; 'speed'; 'size'; False for the rule
    above), and keeps what it chose and why in arr.vlmeta['caterva.tuning']."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    return _new("zeros", shape, itemsize, dtype, kwargs)


def zeros(shape, itemsize=None, dtype=None, **kwargs):
    """A new array of zeros."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    return _new("zeros", shape, itemsize, dtype, kwargs)


def full(shape, fill_value, dtype=None, **kwargs):
    """A new array whose items are all `fill_value`: bytes of one item (as
    python-caterva took it), or a value of `dtype`."""
    if isinstance(fill_value, (bytes, bytearray, memoryview)) and dtype is None:
        value = bytes(fill_value)
        itemsize, dtype = _itemsize_dtype(len(value), None)
    else:
        d = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
        value = np.asarray(fill_value, dtype=d).tobytes()
        itemsize, dtype = d.itemsize, d
    return _new("full", shape, itemsize, dtype, kwargs, value)


def from_buffer(buffer, shape, itemsize=None, dtype=None, **kwargs):
    """A new array holding `buffer` (bytes-like, C order, of `shape`)."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    data = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
    need = math.prod(_shape(shape)) * itemsize
    if data.size != need:
        raise ValueError(f"buffer holds {data.size} bytes; shape {tuple(_shape(shape))} of {itemsize}-byte items "
                         f"needs {need}")
    return _new("buffer", shape, itemsize, dtype, kwargs, data)


def asarray(ndarray, **kwargs):
    """A new array holding a NumPy array (or anything np.asarray takes), with its dtype."""
    return _from_numpy(ndarray, kwargs)


def copy(array, **kwargs):
    """A copy of `array` (see :meth:`NDArray.copy`)."""
    return array.copy(**kwargs)


def open(urlpath, mode="a", nthreads=None, durability="full", storage_options=None):
    """Open a persisted array: a frame file or a sparse-frame directory,
    written by this package, python-caterva, python-blosc2 or C; or one on
    an S3-compatible store (``s3://bucket/key``: endpoint, region and
    credentials from the AWS environment variables and shared files; read
    and written, by many writers at once where the server holds
    conditional writes, else by one at a time with
    ``CATERVA_S3_WRITERS=single``), or, read only, on a web server
    (``http://``, ``https://``). `mode`
    'a' reads and writes, 'r' only reads (writes raise ValueError).
    `durability` ('full', 'normal' or 'process') is this handle's (see
    NDArray.durability). Many
    handles, in many processes, may have one array open: each write takes
    the array's lock and first loads what others committed; a reader sees
    others' writes after :meth:`NDArray.refresh`.

    `storage_options` (a dict, for URLs) sets the object store's endpoint,
    region, credentials, anonymous access, retries or writers for this URL,
    over the AWS environment, as zarr and fsspec name them (see
    :func:`caterva.set_storage_options`); they then hold for the URL in
    this process."""
    if mode not in ("r", "a", "r+"):
        raise ValueError(f"mode must be 'r' or 'a', not {mode!r}")
    nthreads = default_nthreads() if nthreads is None else int(nthreads)
    apply_storage_options(os.fspath(urlpath), storage_options)
    return _opened(urlpath, mode, nthreads, durability)


def from_cframe(cframe, copy=True, **kwargs):
    """An in-memory array from a contiguous frame (bytes, from :meth:`NDArray.to_cframe`)."""
    nthreads = int(kwargs.pop("nthreads", default_nthreads()))
    if kwargs:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(kwargs))}")
    return _from_cframe(cframe, nthreads)


def remove(urlpath, storage_options=None):
    """Remove a persisted array (a frame file or a sparse-frame directory);
    a path that does not exist is not an error. Only arrays are removed."""
    apply_storage_options(os.fspath(urlpath), storage_options)
    _caterva.remove(os.fspath(urlpath))
