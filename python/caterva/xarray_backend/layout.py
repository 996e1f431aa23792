"""Where the pieces of a DataArray or a Dataset live: the vlmetalayer
names, the file name of each variable in a folder, the folder's
``.xarray.b2frame``, and whether a path is one array or a folder of them
(the package docstring describes the layout)."""

import os
import re

from .. import _caterva
from ..constructors import open as open_
from ..utils import list_arrays

DIMS = "_ARRAY_DIMENSIONS"
COORDS = "_XARRAY_COORDS"
NAME = "_XARRAY_NAME"
ATTRS = "_XARRAY_ATTRS"
VARIABLES = "_XARRAY_VARIABLES"
# The tuner's report (caterva.tuning), written by the constructors: how the
# array is compressed, not an attribute of its data.
TUNING = _caterva.TUNING_VLMETA
# Names an attribute may not take: the layout's own and the tuner's.
RESERVED = (DIMS, COORDS, NAME, ATTRS, VARIABLES, TUNING)
# A frame holds 16 vlmetalayers; attributes take one each while they fit in
# 15, leaving one for the tuner's report (written when the array is made
# from 32 MiB or more), else all of them go into the one layer ATTRS.
LAYERS = 15
# xarray's names (xarray.backends.api) for the variable of a DataArray
# written without a name, and for the attribute holding a DataArray's name
# where it cannot be the variable's.
UNNAMED = "__xarray_dataarray_variable__"
DATAARRAY_NAME = "__xarray_dataarray_name__"
EXTENSIONS = (".b2nd", ".b2frame", ".caterva", ".cat")
# A folder's dataset attributes and variable order, in the vlmeta of an
# empty array: a file of the package's own format, so it is read and written
# wherever arrays are (S3, web servers). Hidden (a leading dot), so listing
# the folder (caterva.list_arrays, `caterva ls`) shows the variables only.
MARKER = ".xarray.b2frame"
# What makes a directory one array rather than a folder of them.
SPARSE_INDEX = "chunks.b2frame"
# Open failures that mean "no array there".
NOT_AN_ARRAY = (OSError, _caterva.CatervaError)


def is_url(path):
    return "://" in path


def is_web(path):
    """A web server: arrays are read there, but nothing is listed."""
    return path.startswith(("http://", "https://"))


def join(folder, name):
    if is_url(folder):
        return folder.rstrip("/") + "/" + name
    return os.path.join(folder, name)


def file_name(name, taken):
    """The file of variable `name` in a folder: the name where it is a
    plain ASCII file name, else with ``_`` for each other character (and
    for a leading dot); ``-2``, ``-3``... after it where that file is in
    `taken` (lower-cased names: one folder may be on a file system that
    ignores case). Only characters that URLs keep as they are, so the same
    name serves on object stores; the name read back is the vlmeta's."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"variable names must be non-empty str to be written, not {name!r}")
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:200]
    if base.startswith("."):
        base = "_" + base[1:]
    file, n = base + ".b2nd", 2
    while file.lower() in taken:
        file, n = f"{base}-{n}.b2nd", n + 1
    return file


def stem(name):
    """The variable name of an array file without a name in its vlmeta."""
    for ext in EXTENSIONS:
        if name.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def open_single(path, mode):
    """The array at `path` when `path` is one array (a frame file, a
    sparse-frame directory, or such an object or prefix at a URL), else
    None: `path` is then a folder of arrays, or nothing."""
    if not is_url(path):
        if os.path.isdir(path) and not os.path.exists(os.path.join(path, SPARSE_INDEX)):
            return None
        return open_(path, mode=mode)
    try:
        return open_(path, mode=mode)
    except NOT_AN_ARRAY:
        return None


def read_marker(folder, mode="r"):
    """The folder's marker array, or None where it has none."""
    url = join(folder, MARKER)
    if not is_url(folder):
        return open_(url, mode=mode) if os.path.exists(url) else None
    try:
        return open_(url, mode=mode)
    except OSError as e:
        # The core's word for a missing object; any other failure (the
        # network, permissions) is not taken for a folder without one.
        if "no object" in str(e):
            return None
        raise


def arrays_in(folder, marker):
    """(file name, url) of the arrays in `folder`, in the marker's order,
    then by name. A web server lists nothing: there, the marker names them."""
    order = [f for _, f in (marker.vlmeta[VARIABLES] if marker is not None and VARIABLES in marker.vlmeta else [])]
    if is_web(folder):
        if marker is None:
            raise FileNotFoundError(f"{folder} is neither an array nor a folder of arrays with a {MARKER} "
                                    "(a web server lists nothing: a folder is read there through the "
                                    "variables its marker names, which to_caterva writes)")
        return [(f, join(folder, f)) for f in order]
    listed = {a["name"]: a["url"] for a in list_arrays(folder)}
    rank = {f: i for i, f in enumerate(order)}
    return [(f, listed[f]) for f in sorted(listed, key=lambda f: (rank.get(f, len(rank)), f))]
