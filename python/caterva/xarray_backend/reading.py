"""Reading: one array or a folder of arrays as an xarray data store, opened
lazily (metadata only), and decoded by xarray's own CF machinery
(``StoreBackendEntrypoint``, as the zarr backend does)."""

import os

import numpy as np
import xarray as xr
from xarray.backends import AbstractDataStore, BackendArray, BackendEntrypoint, StoreBackendEntrypoint
from xarray.core import indexing

from ..constructors import open as open_
from ..utils import apply_storage_options
from .layout import (ATTRS, COORDS, DATAARRAY_NAME, DIMS, EXTENSIONS, MARKER, NAME, SPARSE_INDEX, TUNING, UNNAMED,
                     VARIABLES, arrays_in, is_url, open_single, read_marker, stem)

# The vlmetalayers that are not attributes.
_LAYOUT = (DIMS, COORDS, NAME, ATTRS, VARIABLES, TUNING)


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


def _value(arr, name):
    try:
        return arr.vlmeta[name]
    except ValueError:
        # Written by C as raw bytes: given as those bytes.
        return arr.vlmeta.raw(name)


def _attrs(arr):
    attrs = {}
    if ATTRS in arr.vlmeta:
        held = arr.vlmeta[ATTRS]
        if not isinstance(held, dict):
            raise ValueError(f"vlmetalayer {ATTRS!r} of {arr.urlpath} holds a {type(held).__name__}, "
                             "not a dict of attributes")
        attrs.update(held)
    for name in arr.vlmeta:
        if name not in _LAYOUT:
            attrs[name] = _value(arr, name)
    return attrs


def _dims(arr, default):
    dims = arr.vlmeta[DIMS] if DIMS in arr.vlmeta else None
    if dims is None:
        return tuple(f"{default}{i}" for i in range(arr.ndim))
    dims = tuple(dims)
    if len(dims) != arr.ndim or not all(isinstance(d, str) for d in dims):
        raise ValueError(f"vlmetalayer {DIMS!r} of {arr.urlpath} holds {dims!r}, not {arr.ndim} dimension names")
    return dims


def _encoding(arr, dims):
    """How the array is stored: what to_caterva writes a variable with
    unless told otherwise (chunks and blocks as zarr's chunks; Dask's
    ``chunks={}`` takes the chunks), and the tuner's report if any."""
    enc = {
        "chunks": arr.chunks, "blocks": arr.blocks, "preferred_chunks": dict(zip(dims, arr.chunks)),
        "codec": arr.codec, "clevel": arr.clevel, "filters": arr.filters, "filtersmeta": list(arr.filtersmeta),
        "contiguous": arr.contiguous, "checksums": arr.checksums,
    }
    if TUNING in arr.vlmeta:
        enc["tuning"] = _value(arr, TUNING)
    return enc


def describe(arr, default_dims):
    """(name or None, Variable, {coordinate name: Variable}) of an opened
    array, its data read lazily; dims without ``_ARRAY_DIMENSIONS`` are
    `default_dims` followed by the axis."""
    dims = _dims(arr, default_dims)
    data = indexing.LazilyIndexedArray(CatervaBackendArray(arr))
    var = xr.Variable(dims, data, attrs=_attrs(arr), encoding=_encoding(arr, dims))
    coords = {}
    for cname, c in (arr.vlmeta[COORDS] if COORDS in arr.vlmeta else {}).items():
        coords[cname] = xr.Variable(tuple(c["dims"]), np.asarray(c["data"]), attrs=c.get("attrs") or {})
    name = arr.vlmeta[NAME] if NAME in arr.vlmeta else None
    return (name if isinstance(name, str) and name else None), var, coords


class CatervaStore(AbstractDataStore):
    """The arrays of one DataArray (a single array) or of a Dataset (a
    folder of arrays), opened: their variables undecoded (CF attributes as
    stored), lazily read. `coord_names`: the coordinates kept in an array's
    ``_XARRAY_COORDS``, which are coordinates whatever the CF attributes
    say; `files`: each array variable's (file name, url) in a folder."""

    def __init__(self, variables, attrs, coord_names, files, arrays):
        self.variables = variables
        self.attrs = attrs
        self.coord_names = coord_names
        self.files = files
        self.arrays = arrays

    @classmethod
    def open(cls, path, mode="r", storage_options=None):
        """The store at `path`: one array (a frame file, a sparse-frame
        directory) or a folder (or an object-store prefix) of arrays.
        `storage_options` (a URL's) hold for everything under `path`."""
        path = os.fspath(path)
        apply_storage_options(path, storage_options)
        single = open_single(path, mode)
        if single is None:
            return cls.open_folder(path, mode)
        try:
            name, var, coords = describe(single, "dim_")
        except Exception:
            single.close()
            raise
        variables = dict(coords)
        attrs = {}
        if name in coords:
            # A DataArray named as one of its coordinates (``ds.time``): as
            # xarray reads it from netCDF, under the placeholder name, its
            # own in an attribute that open_dataarray gives it back from.
            attrs[DATAARRAY_NAME] = name
            name = None
        variables[name or UNNAMED] = var
        return cls(variables, attrs, set(coords), {}, [single])

    @classmethod
    def open_folder(cls, folder, mode="r", missing_ok=False):
        """The store of the folder of arrays at `folder`; with `missing_ok`,
        None where there is nothing (to write a new one)."""
        if not is_url(folder) and not os.path.isdir(folder):
            if missing_ok and not os.path.lexists(folder):
                return None
            raise FileNotFoundError(f"{folder} is neither an array nor a folder of arrays")
        marker = read_marker(folder)
        arrays = []
        try:
            attrs = {}
            if marker is not None:
                attrs = dict(marker.vlmeta[ATTRS]) if ATTRS in marker.vlmeta else {}
            entries = arrays_in(folder, marker)
            if not entries and marker is None:
                if missing_ok:
                    return None
                raise FileNotFoundError(f"{folder} is neither an array nor a folder of arrays (nothing in it is "
                                        f"an array)")
            variables, files, coords, whence = {}, {}, {}, {}
            for file, url in entries:
                arr = open_(url, mode=mode)
                arrays.append(arr)
                # Arrays without dims share none: dims of their own, so
                # that arrays of unrelated shapes open together.
                name, var, held = describe(arr, f"{stem(file)}_dim_")
                name = name or stem(file)
                if name in variables:
                    raise ValueError(f"{folder}: {files[name][0]} and {file} both hold the variable {name!r}")
                variables[name], files[name] = var, (file, url)
                for cname, c in held.items():
                    if cname in coords and not coords[cname].identical(c):
                        raise ValueError(f"{folder}: the coordinate {cname!r} differs between {whence[cname]} "
                                         f"and {file}")
                    coords.setdefault(cname, c)
                    whence.setdefault(cname, file)
            for cname, c in coords.items():
                if cname in variables and not variables[cname].identical(c):
                    raise ValueError(f"{folder}: the coordinate {cname!r} of {whence[cname]} differs from the "
                                     f"array {files[cname][0]}")
                variables.setdefault(cname, c)
        except Exception:
            for a in arrays:
                a.close()
            raise
        finally:
            if marker is not None:
                marker.close()
        return cls(variables, attrs, set(coords), files, arrays)

    def get_variables(self):
        return self.variables

    def get_attrs(self):
        return self.attrs

    def get_dimensions(self):
        dims = {}
        for v in self.variables.values():
            dims.update(v.sizes)
        return dims

    def close(self):
        for a in self.arrays:
            a.close()
        self.arrays = []


class CatervaBackendEntrypoint(BackendEntrypoint):
    """``engine="caterva"``: registered by the package (entry point
    ``xarray.backends``). Opens one array, or a folder of arrays as a
    Dataset; decoded as xarray decodes zarr's and netCDF's variables."""

    description = "Compressed N-dimensional arrays in Caterva/Blosc2 frames, and folders of them, read lazily"
    url = "https://github.com/caterva-rs/caterva-rs"
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters", "decode_coords",
        "drop_variables", "use_cftime", "decode_timedelta", "mode", "storage_options",
    )

    def open_dataset(self, filename_or_obj, *, mask_and_scale=True, decode_times=True, concat_characters=True,
                     decode_coords=True, drop_variables=None, use_cftime=None, decode_timedelta=None, mode="r",
                     storage_options=None):
        store = CatervaStore.open(filename_or_obj, mode=mode, storage_options=storage_options)
        try:
            ds = StoreBackendEntrypoint().open_dataset(
                store, mask_and_scale=mask_and_scale, decode_times=decode_times,
                concat_characters=concat_characters, decode_coords=decode_coords, drop_variables=drop_variables,
                use_cftime=use_cftime, decode_timedelta=decode_timedelta)
            held = [n for n in store.coord_names if n in ds.data_vars]
            if held:
                ds = ds.set_coords(held)
                ds.set_close(store.close)
            return ds
        except Exception:
            store.close()
            raise

    def guess_can_open(self, filename_or_obj):
        try:
            path = str(os.fspath(filename_or_obj))
        except TypeError:
            return False
        if path.endswith(EXTENSIONS):
            return True
        # A local folder written by to_caterva, or a sparse frame.
        return not is_url(path) and (os.path.isfile(os.path.join(path, MARKER))
                                     or os.path.isfile(os.path.join(path, SPARSE_INDEX)))
