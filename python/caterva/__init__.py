"""caterva: compressed N-dimensional arrays (Caterva / Blosc2 frames) for
Python, on the caterva-rs core.

python-caterva's API (``empty``, ``zeros``, ``full``, ``from_buffer``,
``asarray``, ``open``, ``copy``, ``from_cframe``, ``remove``, ``NDArray``,
``Codec``, ``Filter``) on NumPy 2, with NumPy dtypes, orthogonal indexing,
``append``/``insert``/``delete``, checksums, several processes writing one
array, Dask (``caterva.dask.to_caterva``) and xarray (``engine="caterva"``
for an array or a folder of them, ``caterva.xarray_backend.to_caterva``)."""

from importlib.metadata import PackageNotFoundError, version as _version


def _without_extension():
    """The ImportError to raise (``None``: the original one) when the
    compiled extension ``_caterva`` is not beside this file: most often
    Python was started in the source folder ``python/`` (or with it on
    ``sys.path``), whose ``caterva`` shadows the installed package and holds
    no build. Python's own message then speaks of a circular import, which
    it is not."""
    import os
    from importlib.machinery import EXTENSION_SUFFIXES

    here = os.path.dirname(os.path.abspath(__file__))
    built = any(name.startswith("_caterva") and name.endswith(tuple(EXTENSION_SUFFIXES)) for name in os.listdir(here))
    if built:
        return None  # the extension is there and fails to load: its own error says why
    source = os.path.dirname(here)
    if os.path.isfile(os.path.join(source, "pyproject.toml")) and os.path.isfile(os.path.join(source, "Cargo.toml")):
        return ImportError(
            f"'caterva' was imported from its source folder {source!r} (the current directory or sys.path "
            "puts it first), which shadows the installed package and holds no built extension (_caterva). "
            f"Run Python from another folder to use the installed package, or build the extension into the "
            f"source folder with `maturin develop --release -m {os.path.join(source, 'Cargo.toml')}`."
        )
    return ImportError(f"caterva's compiled extension (_caterva) is missing from {here!r}: reinstall caterva-rs.")


try:
    from . import _caterva
except ImportError as _e:
    _why = _without_extension()
    if _why is None:
        raise
    raise _why from _e
from ._caterva import CatervaError, ChangedError, UnsupportedError
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
    "CatervaError", "ChangedError", "UnsupportedError", "Codec", "Filter", "NDArray", "asarray", "copy", "empty", "from_buffer",
    "from_cframe", "full", "open", "remove", "zeros", "to_caterva", "blosc2_version", "__version__",
    "propose_partitions", "list_arrays", "set_storage_options", "tune",
]
