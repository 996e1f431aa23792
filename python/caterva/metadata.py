"""User metadata of an array: the fixed-size metalayers (`a.meta`, bytes)
and the variable-length ones (`a.vlmeta`, any msgpack-able value, encoded
as python-blosc2 encodes them, so that files exchange their metadata both
ways)."""

import struct
from collections.abc import Mapping, MutableMapping

import msgpack
import numpy as np

# python-blosc2's msgpack extension codes (blosc2/msgpack_utils.py); the
# ones for values, not for Blosc2 objects, are read and written here.
_COMPLEX_EXT = 44
_SET_EXT = 45
_NDARRAY_EXT = 46


def _bytes_like(value, what):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes (or bytearray, memoryview), not {type(value).__name__}; "
                    "store other values in vlmeta, which encodes them with msgpack")


def meta_content(name, value):
    """The bytes of a fixed-size metalayer given at creation or in an
    update: bytes-like only (an int is not a size; a str is not bytes)."""
    return _bytes_like(value, f"metalayer {name!r}")


def _dtype_value(dtype):
    return {"descr": dtype.descr} if dtype.fields is not None else {"str": dtype.str}


def _tuples(x):
    return tuple(_tuples(e) for e in x) if isinstance(x, list) else x


def _dtype_from_value(value):
    if "str" in value:
        return np.dtype(value["str"])
    return np.dtype([_tuples(field) for field in value["descr"]])


def _encode(obj):
    """msgpack's `default`: what python-blosc2 encodes beyond msgpack's own
    types, the same way."""
    if isinstance(obj, tuple):
        return ["__tuple__", *obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, (complex, np.complexfloating)):
        return msgpack.ExtType(_COMPLEX_EXT, struct.pack(">dd", float(obj.real), float(obj.imag)))
    if isinstance(obj, (set, frozenset)):
        return msgpack.ExtType(_SET_EXT, packb(list(obj)))
    if isinstance(obj, (bytes, np.bytes_)):
        return bytes(obj)
    if isinstance(obj, (str, np.str_)):
        return str(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            payload = {"values": obj.ravel().tolist(), "shape": list(obj.shape)}
        else:
            payload = {"dtype": _dtype_value(obj.dtype), "shape": list(obj.shape), "data": obj.tobytes()}
        return msgpack.ExtType(_NDARRAY_EXT, packb(payload))
    raise TypeError(f"a vlmeta value must be msgpack-able (None, bool, int, float, complex, str, bytes, "
                    f"list, tuple, dict, set, NumPy scalars and arrays), not {type(obj).__name__}")


def packb(value):
    """`value` as python-blosc2 stores a vlmeta value."""
    return msgpack.packb(value, default=_encode, strict_types=True, use_bin_type=True)


def _decode_ext(code, data):
    if code == _COMPLEX_EXT:
        real, imag = struct.unpack(">dd", data)
        return complex(real, imag)
    if code == _SET_EXT:
        return set(unpackb(data))
    if code == _NDARRAY_EXT:
        payload = unpackb(data)
        shape = tuple(payload["shape"])
        if "values" in payload:
            out = np.empty(shape, dtype=object)
            out.reshape(-1)[:] = payload["values"]
            return out
        return np.frombuffer(payload["data"], dtype=_dtype_from_value(payload["dtype"])).reshape(shape).copy()
    # Blosc2 objects (cframes, references) are python-blosc2's to rebuild.
    return msgpack.ExtType(code, data)


def _list_hook(obj):
    if obj and isinstance(obj[0], str) and obj[0] == "__tuple__":
        return tuple(obj[1:])
    return obj


def unpackb(raw):
    """The value of a vlmeta content; `ValueError` if it is not exactly one
    msgpack value."""
    return msgpack.unpackb(raw, list_hook=_list_hook, ext_hook=_decode_ext)


class Meta(Mapping):
    """The fixed-size metalayers of an array, as python-caterva exposed them
    (`arr.meta`): contents are bytes; updates keep their length."""

    def __init__(self, ndarray):
        self.arr = ndarray

    def __contains__(self, key):
        return isinstance(key, str) and self.arr._a.meta_exists(key)

    def __getitem__(self, key):
        if key not in self:
            raise KeyError(key)
        return self.arr._a.meta_get(key)

    def __setitem__(self, key, value):
        self.arr._check_writable()
        self.arr._a.meta_update(key, meta_content(key, value))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def keys(self):
        return self.arr._a.meta_names()

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())


class VLMeta(MutableMapping):
    """The variable-length metalayers of an array (`arr.vlmeta`): any
    msgpack-able value (str, int, float, bool, None, bytes, list, tuple,
    dict, complex, set, NumPy scalars and arrays), stored as python-blosc2
    stores them and read back as the same value. `raw(name)` and
    `set_raw(name, b)` give the stored bytes themselves (what C code writes
    with caterva_vlmeta_add). They cannot be deleted."""

    def __init__(self, ndarray):
        self.arr = ndarray

    def __contains__(self, key):
        return isinstance(key, str) and self.arr._a.vlmeta_exists(key)

    def raw(self, key):
        """The stored bytes of vlmetalayer `key`."""
        if key not in self:
            raise KeyError(key)
        return self.arr._a.vlmeta_get(key)

    def set_raw(self, key, value):
        """Store `value` (bytes) as vlmetalayer `key`, unencoded."""
        self.arr._check_writable()
        self.arr._a.vlmeta_set(key, _bytes_like(value, f"vlmetalayer {key!r}"))

    def __getitem__(self, key):
        raw = self.raw(key)
        try:
            return unpackb(raw)
        except (ValueError, TypeError, KeyError, struct.error) as e:
            raise ValueError(f"vlmetalayer {key!r} does not hold one msgpack value ({e}); it was written "
                             f"as raw bytes (by C code, or by an earlier caterva-rs): read it with "
                             f"a.vlmeta.raw({key!r})") from None

    def __setitem__(self, key, value):
        self.arr._check_writable()
        if not isinstance(key, str):
            raise TypeError(f"vlmetalayer names are str, not {type(key).__name__}")
        self.arr._a.vlmeta_set(key, packb(value))

    def __delitem__(self, key):
        raise TypeError("vlmetalayers cannot be deleted")

    def getall(self):
        """Every vlmetalayer as a dict (python-blosc2's `vlmeta.getall()`)."""
        return {k: self[k] for k in self}

    def __iter__(self):
        return iter(self.arr._a.vlmeta_names())

    def __len__(self):
        return len(self.arr._a.vlmeta_names())
