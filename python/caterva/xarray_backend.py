"""xarray: caterva arrays opened lazily (``xr.open_dataarray(path,
engine="caterva")``) and written with their dims, coordinates and attrs
(:func:`to_caterva`).

An array's xarray description lives in its vlmeta, msgpack-encoded as
every vlmeta value (so python-blosc2 reads it too):

- ``_ARRAY_DIMENSIONS``: the dimension names (zarr's name for the same
  thing); without it, dims are ``dim_0``, ``dim_1``…;
- ``_XARRAY_COORDS``: coordinates, ``{name: {"dims": [...], "data":
  ndarray, "attrs": {...}}}`` (kept in the vlmeta, so they must be small:
  an index per dimension, not a second array of the data's size);
- ``_XARRAY_NAME``: the DataArray's name;
- every other vlmetalayer is an attribute (one written by C as raw bytes
  is given as those bytes).

Reads are lazy: opening reads the metadata only, and each selection
(``isel``, ``sel``, a Dask chunk) decompresses only the blocks it touches,
through ``a.oindex`` (xarray's outer indexing)."""

import os

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from .constructors import asarray, open as open_
from .metadata import packb

DIMS = "_ARRAY_DIMENSIONS"
COORDS = "_XARRAY_COORDS"
NAME = "_XARRAY_NAME"
# xarray's name for the variable of a DataArray written without a name.
_UNNAMED = "__xarray_dataarray_variable__"
_EXTENSIONS = (".b2nd", ".b2frame", ".caterva", ".cat")


class CatervaBackendArray(BackendArray):
    """A caterva array as xarray's lazily indexed backend array. Reads
    need no lock: the core's reads are thread-safe."""

    def __init__(self, arr):
        self.arr = arr
        self.shape = arr.shape
        self.dtype = arr.dtype

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._read)

    def _read(self, key):
        return np.asarray(self.arr.oindex[key])


def _attrs(arr):
    attrs = {}
    for name in arr.vlmeta:
        if name in (DIMS, COORDS, NAME):
            continue
        try:
            attrs[name] = arr.vlmeta[name]
        except ValueError:
            attrs[name] = arr.vlmeta.raw(name)
    return attrs


def _dims(arr):
    dims = arr.vlmeta[DIMS] if DIMS in arr.vlmeta else None
    if dims is None:
        return tuple(f"dim_{i}" for i in range(arr.ndim))
    dims = tuple(dims)
    if len(dims) != arr.ndim or not all(isinstance(d, str) for d in dims):
        raise ValueError(f"vlmetalayer {DIMS!r} holds {dims!r}, not {arr.ndim} dimension names")
    return dims


def open_dataarray_variable(path, mode="r"):
    """(name, Variable, coordinates) of the array at `path`, lazily read."""
    arr = open_(path, mode=mode)
    data = indexing.LazilyIndexedArray(CatervaBackendArray(arr))
    var = xr.Variable(_dims(arr), data, attrs=_attrs(arr))
    coords = {}
    for cname, c in (arr.vlmeta[COORDS] if COORDS in arr.vlmeta else {}).items():
        coords[cname] = xr.Variable(tuple(c["dims"]), np.asarray(c["data"]), attrs=c.get("attrs") or {})
    name = arr.vlmeta[NAME] if NAME in arr.vlmeta else None
    return name, var, coords


class CatervaBackendEntrypoint(BackendEntrypoint):
    """``engine="caterva"``: registered by the package (entry point
    ``xarray.backends``)."""

    description = "Compressed N-dimensional arrays in Caterva/Blosc2 frames, read lazily"
    url = "https://github.com/caterva-rs/caterva-rs"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mode")

    def open_dataset(self, filename_or_obj, *, drop_variables=None, mode="r"):
        name, var, coords = open_dataarray_variable(os.fspath(filename_or_obj), mode=mode)
        vname = name if isinstance(name, str) and name else _UNNAMED
        drop = set(drop_variables or ())
        variables = {k: v for k, v in coords.items() if k not in drop}
        if vname not in drop:
            variables[vname] = var
        return xr.Dataset(variables).set_coords([k for k in coords if k not in drop])

    def guess_can_open(self, filename_or_obj):
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return str(path).endswith(_EXTENSIONS)


def to_caterva(dataarray, urlpath, **kwargs):
    """Store `dataarray` (an ``xarray.DataArray``) at `urlpath` as a caterva
    array with its dims, name, attrs and coordinates (in the vlmeta), for
    ``xr.open_dataarray(urlpath, engine="caterva")``. Keyword arguments are
    those of :func:`caterva.asarray` (``chunks``, ``blocks``, ``mode``…).
    Returns the array."""
    da = dataarray
    reserved = {DIMS, COORDS, NAME} & set(map(str, da.attrs))
    if reserved:
        raise ValueError(f"attribute names {sorted(reserved)} are the backend's own")
    meta = {DIMS: [str(d) for d in da.dims]}
    coords = {str(k): {"dims": [str(d) for d in c.dims], "data": np.asarray(c.values), "attrs": dict(c.attrs)}
              for k, c in da.coords.items()}
    if coords:
        meta[COORDS] = coords
    if da.name is not None:
        meta[NAME] = str(da.name)
    meta.update((str(k), v) for k, v in da.attrs.items())
    # Everything is checked before the array is made: no array half described.
    if len(meta) > 16:
        raise ValueError(f"{len(meta)} vlmetalayers needed (dims, coordinates, name, {len(da.attrs)} attributes); "
                         "an array holds at most 16")
    for v in meta.values():
        packb(v)
    arr = asarray(np.asarray(da.values), urlpath=os.fspath(urlpath), **kwargs)
    for k, v in meta.items():
        arr.vlmeta[k] = v
    return arr
