"""caterva: compressed N-dimensional arrays (Caterva / Blosc2 frames) for
Python, on the caterva-rs core.

python-caterva's API (``empty``, ``zeros``, ``full``, ``from_buffer``,
``asarray``, ``open``, ``copy``, ``from_cframe``, ``remove``, ``NDArray``,
``Codec``, ``Filter``) on NumPy 2, with NumPy dtypes, orthogonal indexing,
``append``/``insert``/``delete``, checksums, several processes writing one
array, Dask (``caterva.dask.to_caterva``) and xarray (``engine="caterva"``
for an array or a folder of them, ``caterva.xarray_backend.to_caterva``)."""

from importlib.metadata import PackageNotFoundError, version as _version

from . import _caterva
from ._caterva import CatervaError, ChangedError
from . import dask
from .constructors import asarray, copy, empty, from_buffer, from_cframe, full, open, remove, zeros
from .ndarray import NDArray
from .dask import to_caterva
from .utils import Codec, Filter, list_arrays, propose_partitions, set_storage_options, tune

try:
    __version__ = _version("caterva-rs")  # the distribution; `caterva` on PyPI is python-caterva
except PackageNotFoundError:  # pragma: no cover - running from the source tree
    __version__ = "0.8.0"

blosc2_version = _caterva.blosc2_version()

__all__ = [
    "CatervaError", "ChangedError", "Codec", "Filter", "NDArray", "asarray", "copy", "empty", "from_buffer",
    "from_cframe", "full", "open", "remove", "zeros", "to_caterva", "blosc2_version", "__version__",
    "propose_partitions", "list_arrays", "set_storage_options", "tune",
]
