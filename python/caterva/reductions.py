"""Reductions where the data is, and NumPy's protocols, for NDArray.

``a.sum(axis=0)``, ``a.mean()``, ``a.std(axis=(0, 2), ddof=1)``, ``a.nanmax()``…
(sum, mean, min, max, std, var, any, all and nansum, nanmean, nanmin,
nanmax, nanstd, nanvar) run in the Rust core: the array is decompressed
chunk by chunk, in parallel, and each chunk folded into the result, so
memory holds a few chunks and the result, never the whole array
(``max_memory=`` bounds it). Variances merge per-chunk moments with Chan's
parallel algorithm. Results follow NumPy: the same dtypes (sums of ints are
int64, means of ints float64…), NaN rules, errors (``ValueError`` for
``min`` of nothing, ``AxisError`` for a bad axis) and warnings.

``np.sum(a, axis=0)``, ``np.nanmean(a)`` and the other reductions reach
these methods through ``__array_function__``; every other NumPy function
sees the array as NumPy always did (its values, read through ``__array__``).

Elementwise work (``a + 1``, ``a == 1``, ``np.sin(a)``) goes through
NumPy's protocols (``__array_ufunc__``, the operator methods): the values
are read into memory and NumPy computes the result, a NumPy array.
Out-of-core elementwise work is Dask's (``caterva.dask``,
``dask.array.from_array(a, chunks=a.chunks)``).

What the core does not cover falls back to NumPy on the values read into
memory, with NumPy's exact semantics: dtypes other than booleans, integers,
floats (and complex numbers for sums, means, any and all), a ``dtype=``
other than the natural result's, ``out=``, ``where=``, ``initial=``.
"""

import operator
import warnings

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

# numpy.exceptions is NumPy 1.25 and later; older ones keep AxisError at the top.
_AxisError = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError
_NoValue = getattr(np, "_NoValue", None)

# What the core reads: kind -> item sizes.
_CORE_KINDS = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16)}
_COMPLEX_OPS = {"sum", "mean", "any", "all", "nansum", "nanmean"}
# The NumPy function of each reduction, and the arguments it takes.
_WITH_DTYPE = {"sum", "mean", "std", "var", "nansum", "nanmean", "nanstd", "nanvar"}
_WITH_DDOF = {"std", "var", "nanstd", "nanvar"}


def _given(v):
    return v is not _NoValue and v is not None


def _normalize_axes(axis, ndim):
    """`axis` (None, an int, a tuple of ints) as a sorted tuple of axes in
    range(ndim), with NumPy's errors."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise _AxisError(ax, ndim)
        out.append(ax % ndim if ndim else ax)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


class Reductions(NDArrayOperatorsMixin):
    """The reductions of NDArray, its ``__array_function__`` and
    ``__array_ufunc__`` (and through NumPy's mixin, the operators)."""

    # Elementwise comparisons make == elementwise; arrays stay hashable by
    # identity, as they were before (dicts and sets of arrays keep working).
    __hash__ = object.__hash__

    # -- the core ---------------------------------------------------------

    def _core_can(self, name):
        rec = self._a.dtype
        d = self.dtype
        if rec is None or d.fields is not None or d.subdtype is not None:
            return False
        if d.itemsize not in _CORE_KINDS.get(d.kind, ()):
            return False
        return d.kind != "c" or name in _COMPLEX_OPS

    def _numpy(self, name, axis, dtype, out, keepdims, ddof, extra):
        """`np.<name>` of the values read into memory."""
        kw = {"axis": axis, "out": out, "keepdims": keepdims}
        if name in _WITH_DTYPE:
            kw["dtype"] = dtype
        if name in _WITH_DDOF:
            kw["ddof"] = ddof
        kw.update(extra)
        return getattr(np, name)(np.asarray(self), **kw)

    def _reduce(self, name, axis=None, dtype=None, out=None, keepdims=False, ddof=0, max_memory=None, **extra):
        keepdims = bool(keepdims) if keepdims is not _NoValue else False
        extra = {k: v for k, v in extra.items() if v is not _NoValue}
        if "where" in extra and extra["where"] is True:
            del extra["where"]
        axes = _normalize_axes(axis, self.ndim)
        if out is not None or extra or not self._core_can(name):
            return self._numpy(name, axis, dtype, out, keepdims, ddof, extra)
        if dtype is not None and name in _WITH_DTYPE:
            # Only the natural result dtype is the core's (NumPy accumulates
            # in the dtype asked for): NumPy's own answer on two items.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                natural = getattr(np, name)(np.zeros(2, dtype=self.dtype)).dtype
            if np.dtype(dtype) != natural:
                return self._numpy(name, axis, dtype, out, keepdims, ddof, extra)
        shape, dts, data = self._a.reduce(name, list(axes), float(ddof), max_memory)
        res = np.frombuffer(data, dtype=np.dtype(dts)).reshape(shape).copy()
        self._warn(name, axes, res, ddof)
        if keepdims:
            res = res.reshape(tuple(1 if i in axes else n for i, n in enumerate(self.shape)))
        return res[()] if res.ndim == 0 else res

    def _warn(self, name, axes, res, ddof):
        """NumPy's RuntimeWarnings for empty and all-NaN slices."""
        count = 1
        for ax in axes:
            count *= self.shape[ax]
        if name in ("mean", "nanmean") and count == 0 and res.size:
            warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=4)
        elif name in ("std", "var") and count - ddof <= 0 and res.size:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
        elif res.dtype.kind == "f" and name in ("nanmin", "nanmax", "nanmean") and np.isnan(res).any():
            warnings.warn("All-NaN slice encountered" if name != "nanmean" else "Mean of empty slice",
                          RuntimeWarning, stacklevel=4)

    # -- the reductions, with ndarray's (and np.nan*'s) signatures ---------

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue, max_memory=None):
        """Sum along `axis` (None: all). Integers and booleans sum in int64
        (unsigned in uint64, wrapping around), floats in float64, rounded to
        their type at the end. `max_memory`: bytes the work may hold."""
        return self._reduce("sum", axis, dtype, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=_NoValue, max_memory=None):
        """Arithmetic mean along `axis`; float64 for integers."""
        return self._reduce("mean", axis, dtype, out, keepdims, max_memory=max_memory, where=where)

    def min(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue, max_memory=None):
        """Minimum along `axis`; NaN if a NaN is among the items. ValueError
        over no items."""
        return self._reduce("min", axis, None, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def max(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue, max_memory=None):
        """Maximum along `axis`; NaN if a NaN is among the items. ValueError
        over no items."""
        return self._reduce("max", axis, None, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue, mean=_NoValue,
            correction=_NoValue, max_memory=None):
        """Standard deviation along `axis`, dividing by ``n - ddof``."""
        return self._reduce("std", axis, dtype, out, keepdims, ddof, max_memory, where=where, mean=mean,
                            correction=correction)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue, mean=_NoValue,
            correction=_NoValue, max_memory=None):
        """Variance along `axis`, dividing by ``n - ddof``."""
        return self._reduce("var", axis, dtype, out, keepdims, ddof, max_memory, where=where, mean=mean,
                            correction=correction)

    def any(self, axis=None, out=None, keepdims=False, *, where=_NoValue, max_memory=None):
        """Whether any item along `axis` is non-zero (NaN is)."""
        return self._reduce("any", axis, None, out, keepdims, max_memory=max_memory, where=where)

    def all(self, axis=None, out=None, keepdims=False, *, where=_NoValue, max_memory=None):
        """Whether every item along `axis` is non-zero (NaN is)."""
        return self._reduce("all", axis, None, out, keepdims, max_memory=max_memory, where=where)

    def nansum(self, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue,
               max_memory=None):
        """Sum along `axis`, NaN counting as zero."""
        return self._reduce("nansum", axis, dtype, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def nanmean(self, axis=None, dtype=None, out=None, keepdims=_NoValue, *, where=_NoValue, max_memory=None):
        """Mean of the items along `axis` that are not NaN (NaN for none,
        with a RuntimeWarning)."""
        return self._reduce("nanmean", axis, dtype, out, keepdims, max_memory=max_memory, where=where)

    def nanmin(self, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue, max_memory=None):
        """Minimum of the items along `axis` that are not NaN (NaN for an
        all-NaN slice, with a RuntimeWarning)."""
        return self._reduce("nanmin", axis, None, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def nanmax(self, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue, max_memory=None):
        """Maximum of the items along `axis` that are not NaN (NaN for an
        all-NaN slice, with a RuntimeWarning)."""
        return self._reduce("nanmax", axis, None, out, keepdims, max_memory=max_memory, initial=initial, where=where)

    def nanstd(self, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue, mean=_NoValue,
               correction=_NoValue, max_memory=None):
        """Standard deviation of the items along `axis` that are not NaN
        (NaN where ``n - ddof <= 0``)."""
        return self._reduce("nanstd", axis, dtype, out, keepdims, ddof, max_memory, where=where, mean=mean,
                            correction=correction)

    def nanvar(self, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue, mean=_NoValue,
               correction=_NoValue, max_memory=None):
        """Variance of the items along `axis` that are not NaN (NaN where
        ``n - ddof <= 0``)."""
        return self._reduce("nanvar", axis, dtype, out, keepdims, ddof, max_memory, where=where, mean=mean,
                            correction=correction)

    # -- NumPy's protocols ------------------------------------------------

    def __array_function__(self, func, types, args, kwargs):
        name = _FUNCTIONS.get(func)
        if name is not None and args and args[0] is self:
            return getattr(self, name)(*args[1:], **kwargs)
        # Everything else as without this method: NumPy's implementation,
        # which reads the values through __array__.
        impl = getattr(func, "_implementation", None)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        """Elementwise work in memory: the values are read and NumPy
        computes (out-of-core elementwise work is Dask's)."""
        inputs = tuple(np.asarray(x) if isinstance(x, Reductions) else x for x in inputs)
        if out is not None and any(isinstance(o, Reductions) for o in out):
            res = getattr(ufunc, method)(*inputs, **kwargs)
            results = res if isinstance(res, tuple) else (res,)
            for o, r in zip(out, results):
                o[...] = r
            return out[0] if len(out) == 1 else out
        if out is not None:
            kwargs["out"] = out
        return getattr(ufunc, method)(*inputs, **kwargs)


_FUNCTIONS = {}
for _name in ("sum", "mean", "std", "var", "any", "all", "nansum", "nanmean", "nanmin", "nanmax", "nanstd",
              "nanvar", "min", "max"):
    _FUNCTIONS[getattr(np, _name)] = _name
for _alias, _name in (("amin", "min"), ("amax", "max")):
    if hasattr(np, _alias):
        _FUNCTIONS[getattr(np, _alias)] = _name
del _name, _alias
