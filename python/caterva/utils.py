"""Codec and filter enums, and the keyword arguments shared by the constructors."""

import math
import warnings
from enum import Enum

import numpy as np

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
    "filters", "filtersmeta", "nthreads", "usedict", "checksums", "mode", "durability",
}

# What a handle's writes survive after a crash (see NDArray.durability).
DURABILITY = ("full", "process")


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


def native_kwargs(shape, itemsize, kwargs):
    """The dict the native layer takes: python-caterva's keyword arguments
    checked, enums turned into numbers, default partitions filled in."""
    kwargs = rename_aliases(kwargs)
    unknown = set(kwargs) - _KWARGS
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    kw = {}
    shape = tuple(int(s) for s in shape)
    chunks = kwargs.get("chunks")
    blocks = kwargs.get("blocks")
    if chunks is None:
        chunks = default_chunks(shape, itemsize)
    chunks = tuple(int(c) for c in chunks)
    if blocks is None:
        blocks = default_blocks(chunks, itemsize)
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
    kw["nthreads"] = int(kwargs.get("nthreads", 1))
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


def default_chunks(shape, itemsize, target=4 * 2**20):
    """Chunks of about `target` bytes: halve the longest axis until they fit."""
    chunks = [max(1, s) for s in shape]
    while math.prod(chunks) * itemsize > target and max(chunks) > 1:
        i = int(np.argmax(chunks))
        chunks[i] = (chunks[i] + 1) // 2
    return tuple(chunks)


def default_blocks(chunks, itemsize, target=64 * 2**10):
    """Blocks of about `target` bytes inside `chunks`."""
    blocks = [max(1, c) for c in chunks]
    while math.prod(blocks) * itemsize > target and max(blocks) > 1:
        i = int(np.argmax(blocks))
        blocks[i] = (blocks[i] + 1) // 2
    return tuple(blocks)
