"""The module-level constructors of python-caterva, with NumPy dtypes."""

import math
import os

import numpy as np

from . import _caterva
from .ndarray import NDArray, dtype_str, np_dtype
from .utils import apply_storage_options, check_durability, default_nthreads, native_kwargs

_MODES = ("w-", "w")


def _prepare(shape, itemsize, kwargs):
    """Native keyword arguments, and the mode of the new array. A path that
    exists is refused, as python-caterva did, unless ``mode='w'``."""
    kwargs = dict(kwargs)
    mode = kwargs.pop("mode", "w-")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES} for a new array, not {mode!r}")
    kwargs.pop("memframe", None)
    storage_options = kwargs.pop("storage_options", None)
    kw = native_kwargs(shape, itemsize, kwargs)
    url = kw.get("urlpath")
    apply_storage_options(url, storage_options)
    if url is not None and "://" in url:
        # A URL: what is there is known by opening it (nothing to stat).
        # With mode 'w', not asked (a round trip): the core replaces an
        # array of the same layout, and refuses one of the other, which
        # _replacing removes then.
        if mode == "w-":
            try:
                open(url, mode="r")
            except OSError:
                pass
            else:
                raise FileExistsError(f"Can not create the array {url}. It already exists!")
        return kw, "a"
    if url is not None and mode == "w-" and os.path.lexists(url):
        raise FileExistsError(f"Can not create the file {url}. It already exists!")
    if url is not None and mode == "w" and os.path.lexists(url) and os.path.isdir(url) == kw["contiguous"]:
        # An array of the other storage kind (a frame file where a directory
        # is asked for, or the reverse): the core replaces arrays of one kind
        # only, so it goes first (the core removes only arrays).
        _caterva.remove(url)
    return kw, "a"


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


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return [int(s) for s in shape]


def _replacing(kw, make):
    """make(): the new native array. At a URL holding an array of the other
    layout (contiguous or sparse), which the core refuses to overwrite, that
    one is removed first (a local path's is removed by _prepare)."""
    try:
        return make()
    except OSError as e:
        url = kw.get("urlpath")
        if url is None or "://" not in url or "an array of the other layout" not in str(e):
            raise
    _caterva.remove(url)
    return make()


def _make(kind, shape, itemsize, dtype, kwargs, data=None):
    shape = _shape(shape)
    kw, mode = _prepare(shape, itemsize, kwargs)
    a = _replacing(kw, lambda: _caterva.create(kind, shape, itemsize, dtype_str(dtype), kw, data))
    return NDArray(a, _mode=mode, **kwargs)


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
    smaller, slower files)."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    return _make("zeros", shape, itemsize, dtype, kwargs)


def zeros(shape, itemsize=None, dtype=None, **kwargs):
    """A new array of zeros."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    return _make("zeros", shape, itemsize, dtype, kwargs)


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
    return _make("full", shape, itemsize, dtype, kwargs, value)


def from_buffer(buffer, shape, itemsize=None, dtype=None, **kwargs):
    """A new array holding `buffer` (bytes-like, C order, of `shape`)."""
    itemsize, dtype = _itemsize_dtype(itemsize, dtype)
    data = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
    need = math.prod(_shape(shape)) * itemsize
    if data.size != need:
        raise ValueError(f"buffer holds {data.size} bytes; shape {tuple(_shape(shape))} of {itemsize}-byte items "
                         f"needs {need}")
    return _make("buffer", shape, itemsize, dtype, kwargs, data)


def asarray(ndarray, **kwargs):
    """A new array holding a NumPy array (or anything np.asarray takes), with its dtype."""
    a = np.asarray(ndarray)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    if a.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be stored")
    data = a.reshape(-1).view(np.uint8)
    return _make("buffer", a.shape, a.dtype.itemsize, a.dtype, kwargs, data)


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
    kw = {"nthreads": nthreads, "durability": check_durability(durability)}
    apply_storage_options(os.fspath(urlpath), storage_options)
    a = _caterva.open(os.fspath(urlpath), kw)
    return NDArray(a, _mode="r" if mode == "r" else "a")


def from_cframe(cframe, copy=True, **kwargs):
    """An in-memory array from a contiguous frame (bytes, from :meth:`NDArray.to_cframe`)."""
    nthreads = int(kwargs.pop("nthreads", default_nthreads()))
    if kwargs:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(kwargs))}")
    a = _caterva.from_cframe(memoryview(cframe).cast("B"), {"nthreads": nthreads})
    return NDArray(a)


def remove(urlpath, storage_options=None):
    """Remove a persisted array (a frame file or a sparse-frame directory);
    a path that does not exist is not an error. Only arrays are removed."""
    apply_storage_options(os.fspath(urlpath), storage_options)
    _caterva.remove(os.fspath(urlpath))
