"""Codec and filter enums, and the keyword arguments shared by the constructors."""

import os
import warnings
from enum import Enum

import numpy as np

from . import _caterva
from .metadata import meta_content


class Codec(Enum):
    """Available codecs (values as in c-blosc2 and python-caterva)."""

    BLOSCLZ = 0
    LZ4 = 1
    LZ4HC = 2
    ZLIB = 4
    ZSTD = 5


class Filter(Enum):
    """Available filters (values as in c-blosc2 and python-caterva)."""

    NOFILTER = 0
    SHUFFLE = 1
    BITSHUFFLE = 2
    DELTA = 3
    TRUNC_PREC = 4


# python-caterva's keyword arguments, and ours.
_KWARGS = {
    "chunks", "blocks", "urlpath", "contiguous", "memframe", "meta", "codec", "clevel",
    "filters", "filtersmeta", "nthreads", "usedict", "checksums", "mode", "durability", "tune",
}

# What the tuner may choose; a caller who names any of them is not tuned.
_TUNED = {"chunks", "blocks", "codec", "clevel", "filters", "filtersmeta"}

# What a handle's writes survive after a crash (see NDArray.durability).
DURABILITY = ("full", "normal", "process")


def check_durability(level):
    """`level` if it names a durability level, else ValueError."""
    if not (isinstance(level, str) and level in DURABILITY):
        raise ValueError(f"durability must be one of {DURABILITY}, not {level!r}")
    return level


# python-caterva 0.7.3's names for three of them (it read options with
# kwargs.get, so its scripts pass these): taken, with a DeprecationWarning.
_ALIASES = {"cname": "codec", "complevel": "clevel", "use_dict": "usedict"}


def rename_aliases(kwargs):
    """`kwargs` with python-caterva's names of options replaced by ours
    (a DeprecationWarning says which); giving both is an error."""
    if not any(k in kwargs for k in _ALIASES):
        return kwargs
    kwargs = dict(kwargs)
    for old, new in _ALIASES.items():
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f"give {new!r} or python-caterva's {old!r}, not both")
            warnings.warn(f"{old!r} is python-caterva's name: use {new!r}", DeprecationWarning, stacklevel=4)
            kwargs[new] = kwargs.pop(old)
    return kwargs


def _value(x):
    return x.value if isinstance(x, Enum) else int(x)


def native_kwargs(shape, itemsize, kwargs, data=None):
    """The dict the native layer takes: python-caterva's keyword arguments
    checked, enums turned into numbers, default partitions filled in. With
    `data` (the items of an array made from a buffer) and none of chunks,
    blocks, codec, clevel, filters, filtersmeta named, the core's tuner
    chooses them (`tune`: 'balanced' by default, 'speed', 'size', or
    False for the default rule); its report is under the key 'tuning'."""
    kwargs = rename_aliases(kwargs)
    unknown = set(kwargs) - _KWARGS
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    kw = {}
    shape = tuple(int(s) for s in shape)
    nthreads = int(kwargs.get("nthreads", default_nthreads()))
    objective = kwargs.pop("tune", "balanced")
    if objective and data is not None and not (_TUNED & set(kwargs)):
        tuned = _caterva.tune(data, int(itemsize), list(shape), str(objective), nthreads=nthreads)
        if tuned["tuned"]:
            kwargs.update({k: tuned[k] for k in _TUNED})
            kw["tuning"] = tuned["report"]
    elif objective not in (None, False, "speed", "balanced", "size"):
        raise ValueError(f"tune must be 'speed', 'balanced', 'size' or False, not {objective!r}")
    chunks = kwargs.get("chunks")
    blocks = kwargs.get("blocks")
    if chunks is None and blocks is not None:
        raise ValueError("blocks were given without chunks")
    if chunks is None:
        chunks, blocks = _caterva.propose_partitions(itemsize, list(shape), nthreads=nthreads)
    elif blocks is None:
        chunks, blocks = _caterva.propose_partitions(itemsize, list(shape), chunks=[int(c) for c in chunks])
    kw["chunks"] = list(chunks)
    kw["blocks"] = [int(b) for b in blocks]
    kw["urlpath"] = kwargs.get("urlpath")
    if kw["urlpath"] is not None:
        kw["urlpath"] = str(kw["urlpath"])
    contiguous = kwargs.get("contiguous")
    # python-caterva: None stores sparsely.
    kw["contiguous"] = bool(contiguous) if contiguous is not None else False
    if "codec" in kwargs:
        kw["codec"] = _value(kwargs["codec"])
    if "clevel" in kwargs:
        kw["clevel"] = int(kwargs["clevel"])
    if "filters" in kwargs:
        kw["filters"] = [_value(f) for f in kwargs["filters"]]
    if "filtersmeta" in kwargs:
        kw["filtersmeta"] = [int(m) for m in kwargs["filtersmeta"]]
    kw["nthreads"] = nthreads
    kw["usedict"] = bool(kwargs.get("usedict", False))
    kw["checksums"] = bool(kwargs.get("checksums", False))
    kw["durability"] = check_durability(kwargs.get("durability", "full"))
    meta = kwargs.get("meta")
    if meta:
        kw["meta"] = [(n, meta_content(n, v)) for n, v in ((k.decode() if isinstance(k, bytes) else str(k), v)
                                                           for k, v in meta.items())]
    return kw


def thread_kwargs(kwargs):
    """Only the compression and thread settings of `kwargs`."""
    kw = {}
    if "nthreads" in kwargs:
        kw["nthreads"] = int(kwargs["nthreads"])
    return kw


def default_nthreads():
    """Threads an array uses unless told: the CPUs this process may run on
    (python-blosc2's default too; python-caterva's was 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def propose_partitions(shape, itemsize=None, dtype=None, access="balanced", nthreads=None):
    """The chunks and blocks the library proposes for an array of `shape`
    (items of `itemsize` bytes, or of NumPy `dtype`) read mostly as `access`
    says: 'balanced' (the default the constructors use: for 3 or more axes
    the first is a stack, blocks one item thin along it), 'small-reads',
    'scans' (large blocks along the last axes) or 'planes:AXIS' (blocks one
    item thin along AXIS, chunks wide across it). Returns (chunks, blocks),
    to pass as the constructors' `chunks=` and `blocks=`; the same as C's
    caterva_propose_partitions."""
    if itemsize is None:
        if dtype is None:
            raise TypeError("propose_partitions needs itemsize or dtype")
        itemsize = np.dtype(dtype).itemsize
    if isinstance(shape, int):
        shape = (shape,)
    nthreads = default_nthreads() if nthreads is None else int(nthreads)
    chunks, blocks = _caterva.propose_partitions(int(itemsize), [int(s) for s in shape], access=str(access),
                                                 nthreads=nthreads)
    return tuple(chunks), tuple(blocks)


def apply_storage_options(url, storage_options):
    """Use `storage_options` (a dict, as zarr and fsspec take them:
    ``endpoint_url``, ``region``, ``key``, ``secret``, ``token``, ``profile``,
    ``anon``, ``allow_http``, ``virtual_hosted_style``, ``retries``,
    ``retry_timeout``, ``timeout``, ``deadline``, ``writers``, ``cache`` (a directory: a
    read cache shared by handles and processes) and ``cache_size``, any ``aws_*`` setting; s3fs's
    ``client_kwargs`` with ``endpoint_url`` and ``region_name`` too) for every
    URL under `url` in this process. None or ``{}`` changes nothing."""
    if not storage_options:
        return
    if url is None or "://" not in str(url):
        raise ValueError("storage_options are for URLs (s3://..., https://...), not local paths")
    flat = dict(storage_options)
    flat.update(flat.pop("client_kwargs", None) or {})
    pairs = []
    for k, v in flat.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        pairs.append((str(k), str(v)))
    _caterva.set_storage_options(str(url), pairs)


def set_storage_options(prefix, storage_options):
    """Use `storage_options` (see :func:`caterva.open`) for every URL under
    `prefix` (``s3://bucket/``, ``s3://bucket/dir/a.b2nd``) in this process,
    until set again; ``{}`` removes them. The longest prefix set wins."""
    if storage_options:
        apply_storage_options(prefix, storage_options)
    else:
        _caterva.set_storage_options(str(prefix), [])


def list_arrays(url, storage_options=None):
    """The arrays directly under `url` (a directory, or a prefix on an object
    store: ``s3://bucket/dir/``), sorted by name: a list of dicts with
    ``url``, ``name``, ``contiguous`` and ``bytes``. What is not an array is
    left out."""
    url = os.fspath(url)
    apply_storage_options(url, storage_options)
    return [
        {"url": u, "name": n, "contiguous": c, "bytes": b} for (u, n, c, b) in _caterva.list_arrays(url)
    ]


_MODES = ("w-", "w")


def _prepare(shape, itemsize, kwargs, data=None):
    """Native keyword arguments, and the mode of the new array. A path that
    exists is refused, as python-caterva did, unless ``mode='w'``. `data`:
    the items of an array made from a buffer (see native_kwargs)."""
    kwargs = dict(kwargs)
    mode = kwargs.pop("mode", "w-")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES} for a new array, not {mode!r}")
    kwargs.pop("memframe", None)
    storage_options = kwargs.pop("storage_options", None)
    kw = native_kwargs(shape, itemsize, kwargs, data)
    url = kw.get("urlpath")
    apply_storage_options(url, storage_options)
    if url is not None and "://" in url:
        # A URL: what is there is known by opening it (nothing to stat).
        # With mode 'w', not asked (a round trip): the core replaces an
        # array of the same layout, and refuses one of the other, which
        # _replacing removes then.
        if mode == "w-":
            try:
                _caterva.open(url, {"nthreads": 1, "durability": check_durability("full")})
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


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return [int(s) for s in shape]


def tune(data, objective="balanced", nthreads=None):
    """What the core's tuner chooses for an array holding `data` (a NumPy
    array, or anything np.asarray takes): a dict of the keyword arguments
    chunks, blocks, codec, clevel, filters, filtersmeta, and 'report' (what
    was chosen and why). `objective`: 'balanced' (the default), 'speed' or
    'size'. The constructors do this themselves for data of 32 MiB or more
    (see asarray); smaller data gets the default proposal, and the report
    says so."""
    a = np.ascontiguousarray(np.asarray(data))
    if a.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be stored")
    t = _caterva.tune(a.reshape(-1).view(np.uint8), a.dtype.itemsize, list(a.shape), str(objective),
                      nthreads=nthreads if nthreads is None else int(nthreads))
    return {
        "chunks": tuple(t["chunks"]), "blocks": tuple(t["blocks"]), "codec": Codec(t["codec"]),
        "clevel": t["clevel"], "filters": [Filter(f) for f in t["filters"]], "filtersmeta": list(t["filtersmeta"]),
        "report": t["report"],
    }
