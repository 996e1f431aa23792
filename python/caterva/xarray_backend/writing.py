"""Writing: a DataArray as one array, a Dataset as a folder of arrays,
CF-encoded as xarray encodes for zarr (times as numbers with units,
``scale_factor``/``add_offset``/``_FillValue`` packing, ``coordinates``
attributes), so that reading decodes them back."""

import os

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.common import ensure_dtype_not_object
from xarray.coding import strings

from .. import _caterva
from ..constructors import asarray, open as open_
from ..metadata import packb
from ..utils import Codec, apply_storage_options
from .layout import (ATTRS, COORDS, DIMS, LAYERS, MARKER, NAME, RESERVED, UNNAMED, VARIABLES, file_name, is_url,
                     join, open_single)
from .reading import CatervaStore

# Encoding keys that ask for an array's layout and compression (the
# constructors' keyword arguments); the CF ones (dtype, scale_factor,
# add_offset, _FillValue, missing_value, units, calendar) are xarray's.
_ARRAY_KEYS = {"chunks", "blocks", "codec", "clevel", "filters", "filtersmeta", "contiguous", "checksums",
               "usedict", "nthreads", "durability", "tune"}
# Encoding keys the reader sets that describe what was read, taken back
# without effect (a variable's encoding as read may be given to write it).
_READ_KEYS = {"preferred_chunks", "tuning"}
_MODES = ("w-", "w", "a")


def encode_variable(var, name):
    """`var` as stored: CF-encoded with xarray's coders (those of the zarr
    and netCDF backends), objects given a dtype, and strings of fixed
    width (an array's items have one size)."""
    var = conventions.encode_cf_variable(var, name=name)
    var = ensure_dtype_not_object(var, name=name)
    var = strings.EncodedStringCoder(allows_unicode=True).encode(var, name=name)
    var = strings.ensure_fixed_length_bytes(var)
    if strings.check_vlen_dtype(var.dtype) is str:
        var = xr.Variable(var.dims, np.asarray(var.values, dtype=str), var.attrs, var.encoding)
    return var


def _array_kwargs(name, var, kwargs, explicit):
    """The constructors' keyword arguments for variable `name` (encoded):
    its own encoding's (from where it was read: chunks and blocks, cut to
    its shape, from any backend that names them so, as zarr does; the
    compression only from caterva's reader, whose codec is a Codec: other
    backends' ``filters`` are not ours), then `kwargs` (for every array),
    then those of `encoding=` (`explicit`), each over the one before. An
    explicit key that is neither the constructors' nor CF's (left after
    encoding) is an error."""
    left = set(var.encoding) - _ARRAY_KEYS - _READ_KEYS
    if explicit and left:
        raise ValueError(f"unexpected encoding for variable {name!r}: {sorted(left)} (the array's are "
                         f"{sorted(_ARRAY_KEYS)}, besides xarray's CF encodings)")
    keys = _ARRAY_KEYS if isinstance(var.encoding.get("codec"), Codec) else {"chunks", "blocks"}
    own = {} if explicit else {k: v for k, v in var.encoding.items() if k in keys}
    chunks = own.get("chunks")
    if not _lengths(chunks, var.ndim) or not _lengths(own.get("blocks", chunks), var.ndim):
        own.pop("chunks", None)
        own.pop("blocks", None)
    else:
        # A variable sliced since it was read keeps its source's encoding.
        own["chunks"] = tuple(min(int(c), s) if s else int(c) for c, s in zip(chunks, var.shape))
        blocks = own.get("blocks")
        if blocks is not None:
            own["blocks"] = tuple(min(int(b), c) for b, c in zip(blocks, own["chunks"]))
    out = {**own, **kwargs}
    if explicit:
        out.update((k, v) for k, v in var.encoding.items() if k in _ARRAY_KEYS)
    return out


def _lengths(x, ndim):
    """Whether `x` is `ndim` positive ints (a chunk shape of ours, not one
    of chunk sizes per axis)."""
    return (isinstance(x, (tuple, list)) and len(x) == ndim
            and all(isinstance(c, (int, np.integer)) and c > 0 for c in x))


def _layers(name, var, coords=None):
    """The vlmetalayers describing `var` (encoded): dims, coordinates kept
    in the vlmeta, name, attributes (one layer each while they fit, else
    all in one), each checked to encode."""
    attrs = {str(k): v for k, v in var.attrs.items()}
    reserved = set(RESERVED) & set(attrs)
    if reserved:
        raise ValueError(f"attribute names {sorted(reserved)} of {name!r} are the backend's own")
    meta = {DIMS: [str(d) for d in var.dims]}
    if coords:
        meta[COORDS] = {str(k): {"dims": [str(d) for d in c.dims], "data": np.asarray(c.values), "attrs": dict(c.attrs)}
                        for k, c in coords.items()}
    if name is not None:
        meta[NAME] = str(name)
    if len(meta) + len(attrs) <= LAYERS:
        meta.update(attrs)
    else:
        meta[ATTRS] = attrs
    for k, v in attrs.items():
        _check_packs(v, f"attribute {k!r} of {name!r}")
    for k in (DIMS, COORDS, NAME):
        if k in meta:
            _check_packs(meta[k], f"vlmetalayer {k!r} of {name!r}")
    return meta


def _check_packs(value, what):
    try:
        packb(value)
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None


def _make(data, url, kwargs, meta):
    """A new array at `url` holding `data` (NumPy, or Dask: written by its
    workers), described by `meta`; nothing is left at `url` if it fails."""
    if hasattr(data, "dask"):
        from ..dask import to_caterva as dask_to_caterva

        kwargs = dict(kwargs)
        kwargs.pop("tune", None)  # nothing to tune by: the data is not at hand
        arr = dask_to_caterva(data, url, kwargs.pop("chunks", None), kwargs.pop("blocks", None), **kwargs)
    else:
        arr = asarray(np.asarray(data), urlpath=url, **kwargs)
    try:
        for k, v in meta.items():
            arr.vlmeta[k] = v
    except BaseException:
        arr.close()
        _caterva.remove(url)
        raise
    return arr


def to_caterva(obj, path, mode=None, *, encoding=None, append_dim=None, storage_options=None, **kwargs):
    """Store `obj`, an ``xarray.DataArray`` or ``xarray.Dataset``, at `path`
    for ``xr.open_dataarray(path, engine="caterva")`` or
    ``xr.open_dataset(path, engine="caterva")``; variables are CF-encoded
    as for zarr (times, ``scale_factor``, ``_FillValue``...: give them in
    `encoding` or the variables' ``.encoding``) and decoded back when read.

    A DataArray is one array (its coordinates in its vlmeta: they should
    be small). Returns the array.

    A Dataset is a folder (a directory, or a prefix on an object store:
    ``s3://bucket/ds``) with one array per variable, coordinates included,
    and a ``.xarray.b2frame`` holding the dataset's attributes and the
    variables' order. Returns None.

    `mode`: ``"w-"`` (the default) refuses a path where something is;
    ``"w"`` replaces it (only arrays are removed); ``"a"`` (Datasets)
    adds the variables to the folder, replacing those of the same name,
    and with `append_dim` appends the variables that have that dimension
    to theirs (encoded with the stored variables' encoding, as zarr
    does). `encoding`: a dict of variable name to a dict of CF keys and
    the constructors' keyword arguments (``chunks``, ``blocks``,
    ``codec``, ``clevel``, ``filters``, ``contiguous``, ``checksums``,
    ``tune``...); for a DataArray, that dict itself. Other keyword
    arguments are the constructors' for every array (``contiguous=True``,
    ``codec=``...): a variable's `encoding` wins over them, and they over
    its own ``.encoding`` (chunks and blocks from where it was read).
    `storage_options` as for :func:`caterva.open`."""
    if isinstance(obj, xr.DataArray):
        if append_dim is not None:
            raise ValueError("append_dim is for Datasets (a folder of arrays)")
        return _dataarray(obj, os.fspath(path), mode or "w-", encoding, storage_options, kwargs)
    if isinstance(obj, xr.Dataset):
        _dataset(obj, os.fspath(path), mode or ("a" if append_dim is not None else "w-"), encoding or {},
                 append_dim, storage_options, kwargs)
        return None
    raise TypeError(f"to_caterva writes xarray DataArrays and Datasets, not {type(obj).__name__}")


def _dataarray(da, path, mode, encoding, storage_options, kwargs):
    if mode not in ("w-", "w"):
        raise ValueError(f"mode must be 'w-' or 'w' for a DataArray (one array), not {mode!r}")
    # As xarray writes a DataArray to netCDF: a Dataset of it under a
    # placeholder name (its own name may be one of its coordinates').
    var = da.variable.copy(deep=False)
    if encoding is not None:
        var.encoding = dict(encoding)
    ds = xr.Dataset({UNNAMED: var}, coords=da.coords)
    variables, _ = conventions.encode_dataset_coordinates(ds)
    var = encode_variable(variables[UNNAMED], da.name)
    coords = {k: encode_variable(variables[k], k) for k in da.coords}
    meta = _layers(da.name, var, coords)
    kw = _array_kwargs(da.name, var, kwargs, encoding is not None)
    kw.update(mode=mode, storage_options=storage_options)
    return _make(var.data, path, kw, meta)


def _dataset(ds, folder, mode, encoding, append_dim, storage_options, kwargs):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES} for a Dataset, not {mode!r}")
    if append_dim is not None and mode != "a":
        raise ValueError(f"append_dim needs mode='a', not {mode!r}")
    for k in ("chunks", "blocks"):
        if k in kwargs:
            raise ValueError(f"{k} differ by variable: give them in encoding={{name: {{{k!r}: ...}}}}")
    for k in ("mode", "urlpath"):
        if k in kwargs:
            raise TypeError(f"unexpected keyword argument {k!r}")
    unknown = set(encoding) - set(ds.variables)
    if unknown:
        raise ValueError(f"encoding names variables the Dataset does not have: {sorted(map(str, unknown))}")
    for name in ds.variables:
        file_name(name, ())  # a name that cannot be written is refused before anything is
    apply_storage_options(folder, storage_options)
    single, store = _existing(folder, mode)
    try:
        plan, order, attrs = _plan(ds, store if mode == "a" else None, encoding, append_dim, kwargs)
    finally:
        if store is not None:
            store.close()
    # What mode 'w' replaces goes only now: a Dataset refused leaves it as it was.
    if single:
        _caterva.remove(folder)
    if store is not None and mode == "w":
        for _, url in store.files.values():
            _caterva.remove(url)
        _caterva.remove(join(folder, MARKER))
    if not is_url(folder):
        os.makedirs(folder, exist_ok=True)
    for name, kind, var, kw, meta, file in plan:
        url = join(folder, file)
        if kind == "append":
            with open_(url, mode="a") as arr:
                arr.append(np.asarray(var.values), var.dims.index(append_dim))
            continue
        if kind == "replace":
            _caterva.remove(url)
        _make(var.data, url, {**kw, "mode": "w"}, meta).close()
    _write_marker(folder, order, attrs, store is not None and mode == "a")


def _existing(folder, mode):
    """(whether `folder` is one array, which mode 'w' replaces; the folder
    of arrays there, opened, or None), refused where `mode` does not allow
    what is there."""
    if not is_url(folder) and not os.path.lexists(folder):
        return False, None
    if not is_url(folder) and not os.path.isdir(folder):
        try:
            open_(folder, mode="r").close()
        except (OSError, _caterva.CatervaError):
            raise FileExistsError(f"{folder} is a file, not a folder of arrays") from None
        single = True
    else:
        arr = open_single(folder, "r")
        single = arr is not None
        if single:
            arr.close()
    if single:
        if mode != "w":
            raise FileExistsError(f"{folder} is an array, not a folder of arrays (mode='w' replaces it)")
        return True, None
    store = CatervaStore.open_folder(folder, "r", missing_ok=True)
    if store is not None and mode == "w-":
        store.close()
        raise FileExistsError(f"{folder} holds a dataset already (mode='w' replaces it, mode='a' adds to it)")
    return False, store


def _plan(ds, store, encoding, append_dim, kwargs):
    """What writing `ds` does, all checked before anything is written:
    [(name, 'new' | 'replace' | 'append', encoded variable, constructor
    kwargs, vlmetalayers, file name)], the folder's variables afterwards
    [(name, file)] in order, and the dataset's attributes."""
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    files = dict(store.files) if store is not None else {}
    taken = {f.lower() for f, _ in files.values()}
    if append_dim is not None and append_dim not in ds.dims:
        raise ValueError(f"append_dim {append_dim!r} is not a dimension of the Dataset {tuple(ds.dims)}")
    if append_dim is not None and (store is None or append_dim not in store.get_dimensions()):
        raise ValueError(f"append_dim {append_dim!r} is not a dimension of the dataset stored there")
    plan, sizes = [], {}
    for name, var in variables.items():
        if name in encoding:
            var = var.copy(deep=False)
            var.encoding = dict(encoding[name])
        if store is not None and name in store.coord_names and name not in files:
            raise ValueError(f"{name!r} is a coordinate kept in the vlmeta of the arrays there, which cannot "
                             "be changed in place: write the Dataset with mode='w'")
        if append_dim is not None and name in files and append_dim in var.dims:
            enc = _appended(name, var, store.variables[name], append_dim)
            size = dict(store.variables[name].sizes)
            size[append_dim] += enc.sizes[append_dim]
            plan.append((name, "append", enc, None, None, files[name][0]))
        else:
            enc = encode_variable(var, name)
            kw = _array_kwargs(name, enc, kwargs, name in encoding)
            meta = _layers(name, enc)
            if name in files:
                plan.append((name, "replace", enc, kw, meta, files[name][0]))
            else:
                file = file_name(name, taken)
                taken.add(file.lower())
                files[name] = (file, None)
                plan.append((name, "new", enc, kw, meta, file))
            size = enc.sizes
        _agree(sizes, size, name)
    written = {p[0] for p in plan}
    for name in files:
        if name not in written:
            _agree(sizes, store.variables[name].sizes, name)
    attrs = {str(k): v for k, v in attrs.items()}
    for k, v in attrs.items():
        _check_packs(v, f"dataset attribute {k!r}")
    return plan, [[n, f] for n, (f, _) in files.items()], attrs


def _agree(sizes, size, name):
    for d, n in size.items():
        if sizes.setdefault(d, (n, name))[0] != n:
            raise ValueError(f"dimension {d!r} would have {sizes[d][0]} items in {sizes[d][1]!r} and {n} in {name!r}")


def _appended(name, var, stored, append_dim):
    """`var` encoded as the stored variable is (its units, dtype, scale and
    fill value: the same numbers mean the same values), its dims in the
    stored order."""
    existing, _, _ = conventions.decode_cf_variables({name: stored}, {})
    var = var.copy(deep=False)
    var.encoding = dict(existing[name].encoding)
    if stored.dtype.kind in "US":
        # The stored width as the dtype to encode to would cut longer
        # strings short: they are refused below instead.
        var.encoding.pop("dtype", None)
    enc = encode_variable(var, name)
    if set(enc.dims) != set(stored.dims):
        raise ValueError(f"variable {name!r} has dims {enc.dims}, the stored one {stored.dims}")
    enc = enc.transpose(*stored.dims)
    for d in stored.dims:
        if d != append_dim and enc.sizes[d] != stored.sizes[d]:
            raise ValueError(f"variable {name!r}: {enc.sizes[d]} items along {d!r} cannot be appended to the "
                             f"stored {stored.sizes[d]}")
    if enc.dtype != stored.dtype:
        narrower = enc.dtype.kind == stored.dtype.kind and enc.dtype.itemsize <= stored.dtype.itemsize
        if narrower and enc.dtype.kind in "US":
            enc = enc.astype(stored.dtype)
        else:
            raise ValueError(f"variable {name!r}: values of {enc.dtype} cannot be appended to its array of "
                             f"{stored.dtype}")
    return enc


def _write_marker(folder, order, attrs, exists):
    """The folder's dataset attributes and variables, written last: a
    reader that finds the marker finds every variable it names."""
    url = join(folder, MARKER)
    marker = None
    if exists:
        try:
            marker = open_(url, mode="a")
        except (OSError, _caterva.CatervaError):
            marker = None
    if marker is None:
        marker = asarray(np.zeros(0, dtype="u1"), urlpath=url, contiguous=True, mode="w")
    with marker:
        marker.vlmeta[ATTRS] = attrs
        marker.vlmeta[VARIABLES] = order
