//! Reductions along axes (`caterva_reduce`, `caterva_reduce_layout`):
//! `Array::reduce` for C callers, with the result's shape and dtype
//! described in a `caterva_reduce_result_t`.

use std::ffi::{c_char, c_int, c_void};

use super::array_calls::read_array;
use super::types::caterva_array_t;
use super::types::caterva_ctx_t;
use super::{bytes_mut, slice, CATERVA_MAX_DIM};
use crate::array::{Reduce, ReduceLayout, ReduceOptions};
use crate::error::{Error, Result};

/// `caterva_reduce` op: sum (NumPy's `sum`).
pub const CATERVA_REDUCE_SUM: c_int = 0;
/// `caterva_reduce` op: arithmetic mean.
pub const CATERVA_REDUCE_MEAN: c_int = 1;
/// `caterva_reduce` op: minimum (NaN if any item is NaN).
pub const CATERVA_REDUCE_MIN: c_int = 2;
/// `caterva_reduce` op: maximum (NaN if any item is NaN).
pub const CATERVA_REDUCE_MAX: c_int = 3;
/// `caterva_reduce` op: standard deviation (`ddof` delta degrees of freedom).
pub const CATERVA_REDUCE_STD: c_int = 4;
/// `caterva_reduce` op: variance (`ddof` delta degrees of freedom).
pub const CATERVA_REDUCE_VAR: c_int = 5;
/// `caterva_reduce` op: whether any item is non-zero.
pub const CATERVA_REDUCE_ANY: c_int = 6;
/// `caterva_reduce` op: whether every item is non-zero.
pub const CATERVA_REDUCE_ALL: c_int = 7;
/// `caterva_reduce` op: sum, NaN counting as zero.
pub const CATERVA_REDUCE_NANSUM: c_int = 8;
/// `caterva_reduce` op: mean of the items that are not NaN.
pub const CATERVA_REDUCE_NANMEAN: c_int = 9;
/// `caterva_reduce` op: minimum of the items that are not NaN.
pub const CATERVA_REDUCE_NANMIN: c_int = 10;
/// `caterva_reduce` op: maximum of the items that are not NaN.
pub const CATERVA_REDUCE_NANMAX: c_int = 11;
/// `caterva_reduce` op: standard deviation of the items that are not NaN.
pub const CATERVA_REDUCE_NANSTD: c_int = 12;
/// `caterva_reduce` op: variance of the items that are not NaN.
pub const CATERVA_REDUCE_NANVAR: c_int = 13;

/// The reduction a `CATERVA_REDUCE_*` constant names.
fn op_of(op: c_int) -> Option<Reduce> {
    Some(match op {
        CATERVA_REDUCE_SUM => Reduce::Sum,
        CATERVA_REDUCE_MEAN => Reduce::Mean,
        CATERVA_REDUCE_MIN => Reduce::Min,
        CATERVA_REDUCE_MAX => Reduce::Max,
        CATERVA_REDUCE_STD => Reduce::Std,
        CATERVA_REDUCE_VAR => Reduce::Var,
        CATERVA_REDUCE_ANY => Reduce::Any,
        CATERVA_REDUCE_ALL => Reduce::All,
        CATERVA_REDUCE_NANSUM => Reduce::NanSum,
        CATERVA_REDUCE_NANMEAN => Reduce::NanMean,
        CATERVA_REDUCE_NANMIN => Reduce::NanMin,
        CATERVA_REDUCE_NANMAX => Reduce::NanMax,
        CATERVA_REDUCE_NANSTD => Reduce::NanStd,
        CATERVA_REDUCE_NANVAR => Reduce::NanVar,
        _ => return None,
    })
}

/// The result of a reduction: its shape and item type.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types)]
pub struct caterva_reduce_result_t {
    /// Number of dimensions: the array's less the reduced axes.
    pub ndim: i8,
    /// The shape (`ndim` entries; the rest 1).
    pub shape: [i64; CATERVA_MAX_DIM],
    /// NumPy's dtype string of the items, NUL-terminated: `"<f8"`, `"<i8"`,
    /// `"<u8"`, `"|b1"`… (native byte order).
    pub dtype: [c_char; 8],
    /// Bytes per item.
    pub itemsize: i32,
    /// Bytes of the whole result, C order.
    pub nbytes: i64,
}

/// The reduction and axes a C caller names, checked.
///
/// # Safety
/// A non-NULL `axes` must hold `naxes` items.
unsafe fn args(op: c_int, axes: *const i8, naxes: i8) -> Result<(Reduce, Vec<usize>)> {
    let op = op_of(op).ok_or_else(|| Error::InvalidArgument(format!("op {op} is not a CATERVA_REDUCE_* constant")))?;
    let n = usize::try_from(naxes).map_err(|_| Error::InvalidArgument(format!("naxes {naxes} is negative")))?;
    // SAFETY: caller's contract.
    let list = unsafe { slice(axes, n, "axes") }?;
    let axes = list
        .iter()
        .map(|&a| usize::try_from(a).map_err(|_| Error::InvalidArgument(format!("axis {a} is negative"))))
        .collect::<Result<Vec<usize>>>()?;
    Ok((op, axes))
}

fn describe(layout: &ReduceLayout) -> caterva_reduce_result_t {
    let mut r = caterva_reduce_result_t {
        ndim: layout.shape.len() as i8,
        shape: [1; CATERVA_MAX_DIM],
        dtype: [0; 8],
        itemsize: layout.itemsize as i32,
        nbytes: layout.nbytes() as i64,
    };
    r.shape[..layout.shape.len()].copy_from_slice(&layout.shape);
    for (o, &b) in r.dtype.iter_mut().zip(layout.dtype.as_bytes().iter().take(7)) {
        *o = b as c_char;
    }
    r
}

/// Describe, in `*result`, what `caterva_reduce` with these arguments
/// gives (shape, dtype, size), without reading the array: to size the
/// output buffer first.
///
/// Errors: as `caterva_reduce` (but for reading); `*result` is written only
/// on success.
///
/// # Safety
/// `axes` must hold `naxes` items (it may be NULL when `naxes` is 0);
/// `result` must be writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_reduce_layout(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    op: c_int,
    axes: *const i8,
    naxes: i8,
    result: *mut caterva_reduce_result_t,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_reduce_layout", ctx, array, |a| {
            let (op, axes) = args(op, axes, naxes)?;
            let out = super::out_ptr(result, "result")?;
            let layout = a.array.reduce_layout(op, &axes, false)?;
            *out = describe(&layout);
            Ok(())
        })
    }
}

/// Reduce `array` along `axes` (`naxes` distinct axes in `0..ndim`; none
/// reduces nothing; all of them reduce to one item) with `op`, one of the
/// `CATERVA_REDUCE_*` constants, into `out`, a buffer of `outsize` bytes
/// that receives the result in C order and native byte order; `*result`,
/// unless `result` is NULL, receives its shape and dtype
/// (`caterva_reduce_layout` tells them beforehand).
///
/// The items are read as the array's dtype (`caterva_get_dtype`) says:
/// booleans, integers and floats of either byte order (`|b1`, `<i4`, `>u8`,
/// `<f2`…) for every op, complex (`<c8`, `<c16`) for sums, means, any and
/// all. Results follow NumPy's types: sums of booleans and signed integers
/// are `<i8`, of unsigned ones `<u8` (wrapping around); means, variances
/// and deviations of integers `<f8`, of floats their own type; min and max
/// keep the type; any and all give `|b1`. `ddof` is the delta degrees of
/// freedom of the (nan)std and (nan)var ops, ignored by the others. The
/// array is read chunk by chunk with its context's threads; `max_memory`,
/// unless 0, bounds the bytes the work holds (fewer chunks at once).
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL `ctx`, `array` or `out`
/// (or `axes` with `naxes` > 0); `CATERVA_ERR_INVALID_ARGUMENT` for an op
/// that is not a constant, an axis out of range, negative or repeated, an
/// array without a dtype or of a dtype that is not a number, an op its
/// items do not support, min/max over no items, an `outsize` smaller than
/// the result, or a `max_memory` too small for one chunk;
/// `CATERVA_ERR_BLOSC_FAILED` if a chunk cannot be read. Nothing is written
/// then.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `axes` must hold `naxes` items; `out` must have `outsize` writable
/// bytes; a non-NULL `result` must be writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn caterva_reduce(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    op: c_int,
    axes: *const i8,
    naxes: i8,
    ddof: f64,
    max_memory: i64,
    out: *mut c_void,
    outsize: i64,
    result: *mut caterva_reduce_result_t,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_reduce", ctx, array, |a| {
            let (op, axes) = args(op, axes, naxes)?;
            let buf = bytes_mut(out.cast::<u8>(), outsize, "out")?;
            let max_memory = match max_memory {
                0 => None,
                m => Some(
                    usize::try_from(m).map_err(|_| Error::InvalidArgument(format!("max_memory {m} is negative")))?,
                ),
            };
            if !ddof.is_finite() {
                return Err(Error::InvalidArgument(format!("ddof {ddof} is not a finite number")));
            }
            let layout = a.array.reduce_layout(op, &axes, false)?;
            if buf.len() < layout.nbytes() {
                return Err(Error::InvalidArgument(format!(
                    "out holds {} bytes; the result needs {}",
                    buf.len(),
                    layout.nbytes()
                )));
            }
            let r = a.array.reduce(op, &axes, &ReduceOptions { ddof, keepdims: false, max_memory })?;
            buf[..r.data.len()].copy_from_slice(&r.data);
            if !result.is_null() {
                *result = describe(&layout);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_the_core_numbers() {
        for c in -2..20 {
            assert_eq!(op_of(c), Reduce::from_number(i64::from(c)), "{c}");
        }
    }
}
