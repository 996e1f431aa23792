"""NDArray: a caterva array as python-caterva's users know it, with NumPy
dtypes and indexing, over the native array (caterva._caterva.Array)."""

import ast
import math
import operator
import os
import uuid
import warnings

import numpy as np

from . import _caterva
from .metadata import Meta, VLMeta
from .utils import Codec, Filter, _prepare, _replacing, _shape, apply_storage_options, check_durability

_NOT_WRITABLE = "the array was opened read-only (mode='r')"

# numpy.exceptions is NumPy 1.25 and later; older ones keep AxisError at the top.
_AxisError = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError


def np_dtype(dtype, itemsize):
    """The NumPy dtype a recorded dtype string means (bytes of `itemsize`
    when there is none, as python-caterva returned)."""
    if dtype is None:
        return np.dtype(f"S{itemsize}")
    try:
        d = np.dtype(ast.literal_eval(dtype)) if dtype.lstrip("<>|=").startswith(("[", "(")) else np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        return np.dtype(f"S{itemsize}")
    return d if d.itemsize == itemsize else np.dtype(f"S{itemsize}")


def dtype_str(d):
    """The string recorded in the b2nd metalayer for a NumPy dtype."""
    d = np.dtype(d)
    return str(d.descr) if d.fields is not None else d.str


def _is_array_index(k):
    """Whether `k`, one entry of an index, is an array or list of them
    (NumPy's advanced indexing), not an integer, slice, None or `...`."""
    if k is Ellipsis or isinstance(k, (slice, int, np.integer, bool, np.bool_)):
        return False
    return not (isinstance(k, np.ndarray) and k.ndim == 0)


def _selection(key, shape, orthogonal=False):
    """Per-axis selections for `key` (NumPy basic indexing, plus 1-d integer
    and boolean arrays applied per axis: orthogonal indexing). Outside
    `orthogonal` (a.oindex), a key with several index arrays is refused:
    NumPy would pair them.

    Returns (sel, out, move): sel[i] is ("int", i) / ("range", start, stop) /
    ("list", indices) for array axis i; out lists the result's axes in the
    order of the key (an array axis number, or None for a new axis); move,
    when not None, is the position in out of an index array's axis that
    NumPy puts first (its advanced indices are not next to each other).
"""
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(shape)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    items = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - used)
        else:
            items.append(k)
    if not any(k is Ellipsis for k in key):
        items += [slice(None)] * (ndim - used)
    arrays = sum(1 for k in items if k is not None and _is_array_index(k))
    if arrays > 1 and not orthogonal:
        raise IndexError(
            "several index arrays: NumPy pairs them (vectorized indexing), python-caterva's [] applied each "
            "to its own axis; say which: a.vindex[...] for NumPy's paired coordinates, a.oindex[...] for "
            "one selection per axis"
        )
    sel, out, axis = [], [], 0
    # NumPy (outside oindex): with an index array, integers are advanced
    # indices too, and when the advanced indices are not next to each other
    # the array's axis comes first in the result.
    advanced, array_out = [], None
    for p, k in enumerate(items):
        if k is not None and (_is_array_index(k) or isinstance(k, (int, np.integer)) or
                              (isinstance(k, np.ndarray) and k.ndim == 0)):
            advanced.append(p)
        if k is None:
            out.append(None)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step == 1:
                sel.append(("range", start, max(start, stop)))
            else:
                sel.append(("list", np.arange(start, stop, step, dtype=np.int64)))
            out.append(axis)
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("a boolean scalar is not a valid index here")
        elif isinstance(k, (int, np.integer)) or (
            isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"
        ):
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            sel.append(("int", i % n if n else i))
        else:
            a = np.asarray(k)
            if a.dtype == bool:
                if a.shape != (n,):
                    raise IndexError(f"boolean index of shape {a.shape} does not match axis {axis} of length {n}")
                a = np.nonzero(a)[0]
            elif a.size == 0:
                a = a.astype(np.int64)
            elif a.dtype.kind not in "iu":
                raise IndexError(f"only integers, slices, ellipsis, None and integer or boolean arrays are valid indices, not {a.dtype}")
            if a.ndim != 1:
                raise IndexError("index arrays must be 1-dimensional (they select along one axis each)")
            a = a.astype(np.int64)
            if a.size and (a.min() < -n or a.max() >= n):
                raise IndexError(f"index out of bounds for axis {axis} with size {n}")
            sel.append(("list", np.where(a < 0, a + n, a)))
            array_out = len(out)
            out.append(axis)
        axis += 1
    move = None
    if arrays == 1 and not orthogonal and advanced != list(range(advanced[0], advanced[-1] + 1)):
        move = array_out
    return sel, out, move


def _lengths(sel):
    return [1 if s[0] == "int" else (s[2] - s[1] if s[0] == "range" else len(s[1])) for s in sel]


def _result_shape(sel, out):
    lens = _lengths(sel)
    return tuple(1 if o is None else lens[o] for o in out)


# Reductions in the core, NumPy's protocols, operators (python/caterva/reductions.py).
from .reductions import Reductions  # noqa: E402


class NDArray(Reductions):
    """A compressed N-dimensional array (python-caterva's NDArray).

    Made by the module's constructors (`empty`, `zeros`, `full`,
    `from_buffer`, `asarray`, `open`, `copy`, `from_cframe`), not directly."""

    def __init__(self, _native=None, *, _mode="a", **kwargs):
        if _native is None:
            raise TypeError("make arrays with caterva.empty/zeros/full/from_buffer/asarray/open")
        self._a = _native
        self._mode = _mode
        self._dtype = np_dtype(_native.dtype, _native.itemsize)
        self._token = uuid.uuid4().hex
        url = _native.info()["urlpath"]
        self._persisted = url is not None
        # Pickles name the array by this path: a relative one would be
        # resolved against the unpickler's working directory. A URL
        # (s3://, http(s)://) names the same array everywhere.
        self._abspath = None if url is None else url if "://" in url else os.path.abspath(url)
        self.kwargs = kwargs

    # -- attributes -----------------------------------------------------

    @property
    def shape(self):
        """The shape."""
        return tuple(self._a.shape)

    @property
    def chunks(self):
        """The chunk shape."""
        return tuple(self._a.chunks)

    @property
    def blocks(self):
        """The block shape."""
        return tuple(self._a.blocks)

    @property
    def itemsize(self):
        """Bytes per item."""
        return self._a.itemsize

    @property
    def dtype(self):
        """The NumPy dtype (from the b2nd metalayer; bytes `S<itemsize>` without one)."""
        return self._dtype

    @property
    def ndim(self):
        """Number of dimensions."""
        return len(self._a.shape)

    @property
    def size(self):
        """The size in bytes of the items (python-caterva's meaning; `nitems` counts items)."""
        return self.nitems * self.itemsize

    @property
    def nbytes(self):
        """The size in bytes of the items."""
        return self.size

    @property
    def nitems(self):
        """Number of items."""
        return math.prod(self.shape)

    @property
    def cbytes(self):
        """Compressed size of the chunks."""
        return self._a.info()["cbytes"]

    @property
    def cratio(self):
        """Compression ratio: item bytes over compressed bytes."""
        cbytes = self.cbytes
        return self.size / cbytes if cbytes else math.inf

    @property
    def codec(self):
        """The codec (a :class:`Codec`)."""
        return Codec(self._a.info()["codec"])

    @property
    def clevel(self):
        """The compression level."""
        return self._a.info()["clevel"]

    @property
    def filters(self):
        """The filter pipeline, six slots (:class:`Filter`)."""
        return [Filter(f) for f in self._a.info()["filters"]]

    @property
    def filtersmeta(self):
        """The filters' meta values."""
        return self._a.info()["filtersmeta"]

    @property
    def nchunks(self):
        """Number of chunks."""
        return self._a.info()["nchunks"]

    @property
    def chunksize(self):
        """Bytes in a chunk."""
        return math.prod(self.chunks) * self.itemsize

    @property
    def blocksize(self):
        """Bytes in a block."""
        return math.prod(self.blocks) * self.itemsize

    @property
    def urlpath(self):
        """Where the array is stored (None: in memory)."""
        return self._a.info()["urlpath"]

    @property
    def contiguous(self):
        """One frame rather than a directory of chunk files."""
        return self._a.info()["contiguous"]

    @property
    def mode(self):
        """'r' (read-only) or 'a' (read and write)."""
        return self._mode

    @property
    def meta(self):
        """The fixed-size metalayers (a mapping)."""
        return Meta(self)

    @property
    def vlmeta(self):
        """The variable-length metalayers (a mutable mapping)."""
        return VLMeta(self)

    @property
    def checksums(self):
        """Whether the array keeps per-chunk checksums."""
        return self._a.has_checksums()

    @property
    def durability(self):
        """What this handle's writes survive after a crash, settable:
        'full' (the default: each write is synced to disk, and survives a
        power loss or an OS crash whole or not at all), 'normal' (writes are
        synced in batches, at most 1000 writes or 1 s, and when the handle
        is closed: a power loss never tears the array but may lose the last
        writes before it) or 'process' (no fsyncs: each write survives a
        killed process whole or not at all, but a power loss may lose or
        tear recent writes). A setting of this handle, not of the file;
        CATERVA_JOURNAL_SYNC=0 in the environment makes every handle
        'process'."""
        return self._a.durability

    @durability.setter
    def durability(self, level):
        self._a.durability = check_durability(level)

    @property
    def info(self):
        """A report of how the array is stored (print it)."""
        return _Info(self)

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self):
        if self._a.closed:
            return "<caterva.NDArray (closed)>"
        return f"<caterva.NDArray shape={self.shape} dtype={self.dtype} chunks={self.chunks} blocks={self.blocks}>"

    # -- reading and writing ----------------------------------------------

    def _check_writable(self):
        if self._mode == "r":
            raise ValueError(_NOT_WRITABLE)

    def _read(self, sel):
        lens = _lengths(sel)
        buf = np.empty(lens, dtype=self._dtype)
        if buf.size == 0:
            return buf
        flat = buf.reshape(-1).view(np.uint8)
        if all(s[0] != "list" for s in sel):
            start = [s[1] for s in sel]
            stop = [s[1] + 1 if s[0] == "int" else s[2] for s in sel]
            self._a.get_slice(start, stop, flat)
        else:
            lists = [[s[1]] if s[0] == "int" else (list(range(s[1], s[2])) if s[0] == "range" else s[1].tolist()) for s in sel]
            self._a.get_orthogonal(lists, flat)
        return buf

    def _fresh(self, read, attempts=5):
        """`read()`, which selects from the array as this handle sees it.
        If another handle (another process) changed the array since this one
        last looked (:class:`caterva.ChangedError`: nothing was read), the
        handle is refreshed and `read` made again, selecting from the array
        as it is then. Damage is never retried."""
        for attempt in range(attempts):
            try:
                return read()
            except _caterva.ChangedError:
                if self._a.closed or attempt == attempts - 1:
                    raise
                self.refresh()

    def __getitem__(self, key):
        """Items selected by `key` as a NumPy array, as NumPy selects them:
        integers, slices (any step), `...`, None, one 1-d integer or boolean
        array, and a boolean mask of the array's shape. Several index
        arrays are refused (NumPy pairs them, python-caterva did not): use
        :attr:`vindex` or :attr:`oindex`."""
        return self._fresh(lambda: self._getitem(key))

    def _getitem(self, key):
        mask = _full_mask(key, self.shape)
        if mask is not None:
            return self.vindex[np.nonzero(mask)]
        return self._get(*_selection(key, self.shape))

    def _get(self, sel, out, move=None):
        buf = self._read(sel)
        res = buf.reshape(_result_shape(sel, out))
        if move is not None:
            res = np.moveaxis(res, move, 0)
        if res.ndim == 0 and not any(o is None for o in out):
            return res[()]
        return res

    def _coerce(self, value, shape, scalar):
        """`value` as a C-order array of `shape` items of this array's dtype,
        cast and broadcast exactly as NumPy's `a[key] = value` does (the
        same errors: OverflowError, TypeError, ValueError); `scalar`: the
        key selects one item with integers only. Bytes of the item size are
        taken as they are for arrays without a dtype (python-caterva's)."""
        if isinstance(value, NDArray):
            value = value[()]
        if self._dtype.kind in "SV":
            v = np.asarray(value)
            if v.dtype != self._dtype and v.dtype.itemsize == self.itemsize and v.dtype.kind not in "SU":
                value = np.ascontiguousarray(v).view(self._dtype)
        out = np.empty(shape, dtype=self._dtype)
        if scalar:
            out[()] = value
        else:
            out[...] = value
        return out

    def __setitem__(self, key, value):
        """Write `value` to the items `key` selects, cast and broadcast as
        NumPy does (a value NumPy refuses raises the same exception, and
        nothing is written)."""
        self._check_writable()
        mask = _full_mask(key, self.shape)
        if mask is not None:
            self.vindex[np.nonzero(mask)] = value
            return
        self._set(*_selection(key, self.shape), value)

    def _set(self, sel, out, move, value):
        scalar = all(s[0] == "int" for s in sel) and not any(o is None for o in out)
        natural = _result_shape(sel, out)
        if move is None:
            v = self._coerce(value, natural, scalar)
        else:
            moved = (natural[move],) + natural[:move] + natural[move + 1 :]
            v = np.moveaxis(self._coerce(value, moved, scalar), 0, move)
        lens = _lengths(sel)
        if math.prod(lens) == 0:
            return
        flat = np.ascontiguousarray(v.reshape(lens)).reshape(-1).view(np.uint8)
        if all(s[0] != "list" for s in sel):
            start = [s[1] for s in sel]
            stop = [s[1] + 1 if s[0] == "int" else s[2] for s in sel]
            self._a.set_slice(start, stop, flat)
        else:
            lists = [[s[1]] if s[0] == "int" else (list(range(s[1], s[2])) if s[0] == "range" else s[1].tolist()) for s in sel]
            self._a.set_orthogonal(lists, flat)

    @property
    def oindex(self):
        """Orthogonal selection: each index array selects along its own axis
        (`a.oindex[[0, 2], [1, 3]]` is a 2x2 block), what python-caterva's
        `[]` did; zarr and python-blosc2 call it `oindex` too. Reads and
        writes."""
        return _OIndex(self)

    @property
    def vindex(self):
        """NumPy's vectorized (paired) selection: a tuple of one integer
        array per axis, broadcast together (`a.vindex[[0, 1], [2, 3]]` is
        the items (0, 2) and (1, 3)), or a boolean mask of the array's
        shape. Reads and writes (the last of repeated coordinates wins)."""
        return _VIndex(self)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a caterva array is compressed: NumPy cannot view it without a copy (copy=False)")
        a = self._fresh(lambda: self._read([("range", 0, n) for n in self.shape]))
        return a if dtype is None else a.astype(dtype, copy=False)

    def _item(self, to):
        """`to` (float, int, complex, bool) of the one item of a 0-d or
        one-item array, as NumPy converts it."""
        if self.nitems != 1:
            raise TypeError(f"only arrays of one item can be converted to Python scalars (this has {self.nitems})")
        return to(self[(0,) * self.ndim])

    def __float__(self):
        return self._item(float)

    def __int__(self):
        return self._item(int)

    def __complex__(self):
        return self._item(complex)

    def __bool__(self):
        if self.nitems != 1:
            raise ValueError(
                "the truth value of an array with more than one item (or none) is ambiguous; use np.asarray(a).any()"
            )
        return self._item(bool)

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def to_buffer(self, **kwargs):
        """The whole array, C order, as bytes."""
        return self._a.to_bytes()

    def tobytes(self):
        """The whole array, C order, as bytes."""
        return self._a.to_bytes()

    def to_cframe(self):
        """The array as a contiguous frame (bytes), for :func:`caterva.from_cframe`."""
        return self._a.to_cframe()

    def copy(self, **kwargs):
        """A copy, in memory or at `urlpath`, with these chunks and blocks
        unless others are given (the constructors' keyword arguments)."""
        itemsize = kwargs.pop("itemsize", None)
        if itemsize is not None:
            # python-caterva's copy took it (and could not change it).
            warnings.warn("copy() ignores 'itemsize' (python-caterva's): it is the array's", DeprecationWarning, stacklevel=2)
            if int(itemsize) != self.itemsize:
                raise ValueError(f"itemsize {itemsize} is not the array's ({self.itemsize}): copy() cannot change it")
        kwargs.setdefault("chunks", self.chunks)
        kwargs.setdefault("blocks", self.blocks)
        kw, mode = _prepare(self.shape, self.itemsize, kwargs)
        return NDArray(_replacing(kw, lambda: self._a.copy(kw)), _mode=mode, **kwargs)

    def slice(self, key, **kwargs):
        """A new array holding `self[key]`, integer indices kept as axes of
        length 1 (python-caterva's `slice`)."""
        sel, _, _ = _selection(key, self.shape)
        if all(s[0] != "list" for s in sel) and math.prod(_lengths(sel)):
            start = [s[1] for s in sel]
            stop = [s[1] + 1 if s[0] == "int" else s[2] for s in sel]
            shape = [b - a for a, b in zip(start, stop)]
            kwargs.setdefault("chunks", [min(c, s) for c, s in zip(self.chunks, shape)])
            kwargs.setdefault("blocks", [min(b, s) for b, s in zip(self.blocks, shape)])
            kw, mode = _prepare(shape, self.itemsize, kwargs)
            return NDArray(_replacing(kw, lambda: self._a.get_slice_array(start, stop, kw)), _mode=mode, **kwargs)
        return _from_numpy(self._read(sel), kwargs)

    # -- changing the shape ------------------------------------------------

    def resize(self, newshape):
        """Change the shape (new items are zeros)."""
        self._check_writable()
        self._a.resize([int(s) for s in newshape])

    def squeeze(self):
        """Remove the axes of length 1, in place."""
        self._check_writable()
        self._a.squeeze()

    def _slabs(self, values, axis):
        axis = operator.index(axis)
        if not -self.ndim <= axis < self.ndim:
            raise _AxisError(axis, self.ndim)
        axis %= self.ndim
        if isinstance(values, NDArray):
            values = values[()]
        v = self._coerce(values, np.shape(values), False)
        shape = list(self.shape)
        if v.ndim == self.ndim - 1:
            v = np.expand_dims(v, axis)
        if v.ndim != self.ndim or any(v.shape[i] != shape[i] for i in range(self.ndim) if i != axis):
            shape[axis] = "n"
            raise ValueError(f"values of shape {v.shape} are not slabs of shape {tuple(shape)}")
        return np.ascontiguousarray(v).reshape(-1).view(np.uint8), axis

    def append(self, values, axis=0):
        """Append `values` (slabs of the array's shape along `axis`) at the end of `axis`."""
        self._check_writable()
        buf, axis = self._slabs(values, axis)
        self._a.append(buf, axis)

    def insert(self, index, values, axis=0):
        """Insert `values` before `index` along `axis` (like numpy.insert)."""
        self._check_writable()
        buf, axis = self._slabs(values, axis)
        n = self.shape[axis]
        index = operator.index(index)
        if index < 0:
            index += n
        self._a.insert(buf, axis, index)

    def delete(self, index, axis=0):
        """Delete the items `index` (an int, or a slice of step 1) selects along `axis`."""
        self._check_writable()
        axis = operator.index(axis)
        if not -self.ndim <= axis < self.ndim:
            raise _AxisError(axis, self.ndim)
        axis %= self.ndim
        n = self.shape[axis]
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1:
                raise ValueError("delete takes an int or a slice of step 1")
            length = max(0, stop - start)
        else:
            start = operator.index(index)
            if not -n <= start < n:
                raise IndexError(f"index {start} is out of bounds for axis {axis} with size {n}")
            start %= n
            length = 1
        if length:
            self._a.delete(axis, start, length)

    # -- integrity, sharing, lifetime ---------------------------------------

    def enable_checksums(self):
        """Start keeping per-chunk checksums."""
        self._check_writable()
        self._a.enable_checksums()

    def verify(self):
        """Check every chunk (and the checksum table): a list of (chunk, reason)."""
        return self._a.verify()

    def remove_orphans(self, older_than=3600.0):
        """Remove what writers killed mid-write left of an array on an
        object store (``s3://``): chunk objects its index does not name, at
        least `older_than` seconds old (a writer names its new chunk objects
        moments after making them, so an hour is safe). Returns how many
        were removed; 0 elsewhere (local files, contiguous frames)."""
        return self._a.remove_orphans(float(older_than))

    def refresh(self):
        """See what other handles (other processes) committed since this one
        opened the array or last wrote; True if it changed. A read through a
        handle that another one changed raises :class:`caterva.ChangedError`
        (nothing read): refresh, then read again. Writes refresh by
        themselves."""
        changed = self._a.refresh()
        self._dtype = np_dtype(self._a.dtype, self._a.itemsize)
        return changed

    def save(self, urlpath, storage_options=None):
        """Write a copy to `urlpath` (`storage_options` as for :func:`caterva.open`)."""
        apply_storage_options(str(urlpath), storage_options)
        self._a.save(str(urlpath))

    def close(self):
        """Let the array go (its files stay); later calls raise ValueError."""
        self._a.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __reduce__(self):
        url = None if self._a.closed else self._abspath
        if url is not None:
            return (_opened, (url, self._mode, 1, self.durability))
        return (_from_cframe, (self.to_cframe(), 1))

    def __dask_tokenize__(self):
        return ("caterva.NDArray", self._token)


def _full_mask(key, shape):
    """The boolean mask `key` is, when it is one array of the array's shape
    (NumPy's `a[a > 5]`); None otherwise."""
    if isinstance(key, tuple):
        if len(key) != 1:
            return None
        key = key[0]
    if isinstance(key, (np.ndarray, list)) and not isinstance(key, (str, bytes)):
        k = np.asarray(key)
        if k.dtype == bool and k.ndim > 1:
            if k.shape != tuple(shape):
                raise IndexError(f"boolean index of shape {k.shape} does not match the array's shape {tuple(shape)}")
            return k
    return None


class _OIndex:
    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, key):
        return self.arr._fresh(lambda: self.arr._get(*_selection(key, self.arr.shape, orthogonal=True)))

    def __setitem__(self, key, value):
        self.arr._check_writable()
        self.arr._set(*_selection(key, self.arr.shape, orthogonal=True), value)


# A paired selection reads (and a paired write reads, changes and writes back)
# the box of the distinct coordinates it names on each axis when that box
# holds at most this many items, or this many per point; else point by point.
_VINDEX_BOX_ITEMS = 1 << 22
_VINDEX_BOX_PER_POINT = 8


class _VIndex:
    def __init__(self, arr):
        self.arr = arr

    def _points(self, key):
        """The coordinate arrays of `key` (broadcast, non-negative) and the
        result's shape."""
        shape = self.arr.shape
        mask = _full_mask(key, shape)
        if mask is not None:
            key = np.nonzero(mask)
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(shape):
            raise IndexError(
                f"vindex needs one integer array per axis ({len(shape)}), or a boolean mask of the array's shape"
            )
        idx = []
        for axis, (k, n) in enumerate(zip(key, shape)):
            a = np.asarray(k)
            if a.dtype == bool:
                raise IndexError("vindex takes integer arrays, or one boolean mask of the array's shape")
            if a.size == 0:
                a = a.astype(np.int64)
            if a.dtype.kind not in "iu":
                raise IndexError(f"vindex takes integer arrays, not {a.dtype}")
            a = a.astype(np.int64)
            if a.size and (a.min() < -n or a.max() >= n):
                raise IndexError(f"index out of bounds for axis {axis} with size {n}")
            idx.append(np.where(a < 0, a + n, a))
        try:
            idx = np.broadcast_arrays(*idx)
        except ValueError as e:
            raise IndexError(f"shape mismatch: the index arrays cannot be broadcast together ({e})") from None
        return [i.reshape(-1) for i in idx], idx[0].shape if idx else ()

    def _box(self, flat):
        """(per-axis distinct coordinates, each point's position in them) when
        the box they span is small enough to read whole, else None."""
        uniq, pos = [], []
        for c in flat:
            u, inv = np.unique(c, return_inverse=True)
            uniq.append(u)
            pos.append(inv)
        items = math.prod(len(u) for u in uniq)
        npoints = len(flat[0]) if flat else 0
        if items <= max(_VINDEX_BOX_ITEMS, _VINDEX_BOX_PER_POINT * npoints):
            return uniq, tuple(pos)
        return None

    def __getitem__(self, key):
        return self.arr._fresh(lambda: self._getitem(key))

    def _getitem(self, key):
        arr = self.arr
        flat, shape = self._points(key)
        npoints = len(flat[0]) if flat else 1
        if npoints == 0:
            return np.empty(shape, dtype=arr.dtype)
        box = self._box(flat)
        if box is not None:
            uniq, pos = box
            block = arr._read([("list", u) for u in uniq])
            return block[pos].reshape(shape)
        out = np.empty(npoints, dtype=arr.dtype)
        for p in range(npoints):
            out[p] = arr._read([("int", int(c[p])) for c in flat]).reshape(())
        return out.reshape(shape)

    def __setitem__(self, key, value):
        arr = self.arr
        arr._check_writable()
        flat, shape = self._points(key)
        v = arr._coerce(value, shape, False).reshape(-1)
        npoints = len(flat[0]) if flat else 1
        if npoints == 0:
            return
        box = self._box(flat)
        if box is not None:
            uniq, pos = box
            sel = [("list", u) for u in uniq]
            block = arr._read(sel)
            block[pos] = v
            lists = [u.tolist() for u in uniq]
            arr._a.set_orthogonal(lists, np.ascontiguousarray(block).reshape(-1).view(np.uint8))
            return
        for p in range(npoints):
            one = np.ascontiguousarray(v[p : p + 1])
            arr._a.set_orthogonal([[int(c[p])] for c in flat], one.view(np.uint8))


class _Info:
    def __init__(self, arr):
        self.arr = arr

    def items(self):
        a = self.arr
        return [
            ("Type", type(a).__name__),
            ("Itemsize", a.itemsize),
            ("Dtype", a.dtype),
            ("Shape", a.shape),
            ("Chunks", a.chunks),
            ("Blocks", a.blocks),
            ("Comp. codec", a.codec.name),
            ("Comp. level", a.clevel),
            ("Comp. filters", f"[{', '.join(f.name for f in a.filters if f != Filter.NOFILTER)}]"),
            ("Comp. ratio", f"{a.cratio:.2f}"),
            ("Checksums", a.checksums),
        ]

    def __repr__(self):
        items = self.items()
        w = max(len(k) for k, _ in items)
        return "".join(f"{k.ljust(w)} : {v}\n" for k, v in items)

# -- the arrays the constructors (and NDArray's own methods) make ------------


def _new(kind, shape, itemsize, dtype, kwargs, data=None):
    """A new array of `kind` ('zeros', 'full', 'buffer': `data`) made by the
    core; one made from a buffer is tuned by its data unless told
    (utils.native_kwargs), and keeps the tuner's report in the vlmetalayer
    'caterva.tuning'."""
    shape = _shape(shape)
    kw, mode = _prepare(shape, itemsize, kwargs, data if kind == "buffer" else None)
    tuning = kw.pop("tuning", None)
    a = _replacing(kw, lambda: _caterva.create(kind, shape, itemsize, dtype_str(dtype), kw, data))
    kwargs = {k: v for k, v in kwargs.items() if k != "tune"}
    arr = NDArray(a, _mode=mode, **kwargs)
    if tuning is not None:
        arr.vlmeta[_caterva.TUNING_VLMETA] = tuning
    return arr


def _from_numpy(obj, kwargs):
    """A new array holding a NumPy array (or anything np.asarray takes), with its dtype."""
    a = np.asarray(obj)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    if a.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be stored")
    data = a.reshape(-1).view(np.uint8)
    return _new("buffer", a.shape, a.dtype.itemsize, a.dtype, kwargs, data)


def _opened(urlpath, mode, nthreads, durability):
    """The persisted array at `urlpath` (caterva.open's core, and what a pickled handle reopens)."""
    kw = {"nthreads": nthreads, "durability": check_durability(durability)}
    return NDArray(_caterva.open(os.fspath(urlpath), kw), _mode="r" if mode == "r" else "a")


def _from_cframe(cframe, nthreads):
    """An in-memory array from a contiguous frame (caterva.from_cframe's core, and what a pickled one is made from)."""
    return NDArray(_caterva.from_cframe(memoryview(cframe).cast("B"), {"nthreads": nthreads}))
