"""xarray: caterva arrays opened lazily, one as a DataArray
(``xr.open_dataarray(path, engine="caterva")``) and a folder of them as a
Dataset (``xr.open_dataset(folder, engine="caterva")``), and written with
their dims, coordinates and attrs by :func:`to_caterva` (or
``ds.caterva.to(path)``, an accessor registered when this module is
imported, as xarray imports it to list its engines).

An array's xarray description lives in its vlmeta, msgpack-encoded as
every vlmeta value (so python-blosc2 reads it too):

- ``_ARRAY_DIMENSIONS``: the dimension names (zarr's name for the same
  thing); without it, dims are ``dim_0``, ``dim_1``… for a lone array and
  ``<name>_dim_0``… in a folder (an undescribed array shares no dims);
- ``_XARRAY_COORDS``: a DataArray's coordinates, ``{name: {"dims": [...],
  "data": ndarray, "attrs": {...}}}`` (kept in the vlmeta, so they must be
  small: an index per dimension, not a second array of the data's size);
- ``_XARRAY_NAME``: the variable's name;
- every other vlmetalayer is an attribute (one written by C as raw bytes
  is given as those bytes), or, when they do not fit one a layer (a frame
  holds 16 vlmetalayers; to_caterva leaves one for the tuner's report),
  they are all in one, ``_XARRAY_ATTRS``, a dict. ``caterva.tuning``, the
  tuner's report, is in the variable's encoding (``"tuning"``).

A Dataset is a folder, a directory or an object-store prefix
(``s3://bucket/ds``), with one array per variable, coordinates included
(``<name>.b2nd``, the name made a plain file name; the name itself is in
``_XARRAY_NAME``). Coordinates are arrays of their own there, small ones
too: one copy serves every variable, a coordinate may be as large as the
data, and one along ``append_dim`` grows with it. Every array directly in it is a variable; subfolders
that are not arrays are not looked into, and a directory holding
``chunks.b2frame`` is one array (a sparse frame), not a folder of them.
Coordinates are told as xarray tells them in netCDF and zarr: a variable
named as its dimension, the CF ``coordinates`` attributes, and those in an
array's ``_XARRAY_COORDS`` (a folder of DataArray files; the same
coordinate in several must be the same). The dataset's attributes are in
``.xarray.b2frame``, an empty array of the folder's (hidden: the listing
leaves names with a leading dot out), as ``_XARRAY_ATTRS``, with
``_XARRAY_VARIABLES``, the ``[name, file]`` of each variable in order: the
order of the variables when read, and what is read on a web server, which
lists nothing. A folder without it opens too (no attributes; variables by
file name).

Values are stored CF-encoded, with xarray's coders, as the zarr backend
stores them: times as numbers with ``units`` and ``calendar``, packed
integers with ``scale_factor``/``add_offset``/``_FillValue`` (from the
variables' ``encoding``), booleans as int8 with ``dtype: "bool"``,
strings of fixed width. Reading decodes them with xarray's decoders,
which ``xr.open_dataset``'s ``mask_and_scale``, ``decode_times``,
``decode_coords``, ``decode_timedelta``, ``use_cftime``,
``concat_characters`` and ``drop_variables`` control.

Reads are lazy: opening reads the metadata only, and each selection
(``isel``, ``sel``, a Dask chunk with ``chunks={}``: the arrays' chunks)
decompresses only the blocks it touches, through ``a.oindex`` (xarray's
outer indexing)."""

import xarray as xr

from .layout import ATTRS, COORDS, DIMS, MARKER, NAME, VARIABLES
from .reading import CatervaBackendArray, CatervaBackendEntrypoint, CatervaStore
from .writing import to_caterva

__all__ = [
    "ATTRS", "COORDS", "DIMS", "MARKER", "NAME", "VARIABLES", "CatervaBackendArray", "CatervaBackendEntrypoint",
    "CatervaStore", "to_caterva",
]


class _Accessor:
    """``obj.caterva``: :func:`to_caterva` as a method, as ``to_zarr`` is
    one of xarray's (a method on xarray's own classes would be a monkeypatch;
    an accessor is xarray's way for other packages)."""

    def __init__(self, obj):
        self._obj = obj

    def to(self, path, mode=None, **kwargs):
        """``to_caterva(obj, path, mode, **kwargs)``: see :func:`to_caterva`."""
        return to_caterva(self._obj, path, mode, **kwargs)


xr.register_dataset_accessor("caterva")(_Accessor)
xr.register_dataarray_accessor("caterva")(_Accessor)
