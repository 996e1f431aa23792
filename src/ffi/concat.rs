//! Joining arrays along an axis: `caterva_concatenate` (into a new array)
//! and `caterva_append_array` (in place).
//!
//! Every function checks all its pointers and arguments before it changes
//! anything: on an error the arrays, their files and the outputs are as
//! they were.

use std::ffi::c_int;

use super::array_calls::with_array;
use super::types::{caterva_array_t, caterva_ctx_t, caterva_storage_t, storage_from_c, ArrayBox, CtxBox};
use super::{boundary, deref, out_ptr, CATERVA_SUCCEED};
use crate::array::StorageParams;
use crate::error::Error;

/// A new array holding `src1` followed by `src2` along `axis`, with the
/// partitions, location and metalayers of `storage` (as
/// `b2nd_concatenate` with `copy`). The shapes must agree off `axis`; the
/// item sizes and dtypes must be equal; chunk boundaries need not align.
/// The result keeps `src1`'s dtype, user metalayers and vlmetalayers.
/// `src2` is read whole into memory. `src1` and `src2` may be the same array.
///
/// Ownership: `*array` receives an array to release with `caterva_free`.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer;
/// `CATERVA_ERR_INVALID_ARGUMENT` for 0-dim arrays, an axis out of range,
/// different item sizes, dtypes or off-axis shapes, or invalid partitions;
/// `CATERVA_ERR_INVALID_STORAGE` if the path is either source's own,
/// inside or around one, or taken by something that is not an array;
/// `CATERVA_ERR_BLOSC_FAILED` if writing fails. Nothing is created then.
///
/// Only reads the sources: several threads may read them meanwhile.
///
/// # Safety
/// The pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_concatenate(
    ctx: *mut caterva_ctx_t,
    src1: *mut caterva_array_t,
    src2: *mut caterva_array_t,
    axis: i8,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_concatenate", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract (the sources are only read).
        let (a, b) = unsafe { (ArrayBox::get_ref(src1, "src1")?, ArrayBox::get_ref(src2, "src2")?) };
        // SAFETY: caller's contract.
        let st = unsafe { storage_from_c(deref(storage, "storage")?, a.array.ndim()) }?;
        let out = out_ptr(array, "array")?;
        let arr = a.array.concatenate(&c.ctx, &b.array, i64::from(axis), &st)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Concatenate in place: append `other`'s items at the end of `axis` of
/// `array` (as `b2nd_concatenate` without `copy`), in any storage. The
/// shapes must agree off `axis`. `other` is read whole into memory and the
/// change is one journaled write (all or nothing). `other` may be `array`
/// itself (its items are then doubled along `axis`).
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer; as
/// `caterva_concatenate` for the arguments; `CATERVA_ERR_INVALID_STORAGE`
/// for an array opened with `caterva_open_offset`; as `caterva_append`
/// otherwise. `array` is unchanged then.
///
/// Needs exclusive access to `array`; `other` is only read.
///
/// # Safety
/// The pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_append_array(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    other: *mut caterva_array_t,
    axis: i8,
) -> c_int {
    // The array with itself is appended from a copy: `other` is then never
    // dereferenced beside the exclusive reference to `array`.
    let o = if std::ptr::eq(array, other) { None } else { Some(other) };
    // SAFETY: caller's contract.
    unsafe {
        with_array("caterva_append_array", ctx, array, |a| {
            if other.is_null() {
                return Err(Error::NullPointer("other is NULL".into()));
            }
            match o {
                Some(p) => {
                    let b = ArrayBox::get_ref(p, "other")?;
                    a.array.append_array(&b.array, i64::from(axis))
                }
                None => {
                    // The array with itself: a copy in memory (compressed chunks as they are) is appended.
                    let g = a.array.geometry();
                    let mem = StorageParams {
                        chunkshape: g.chunkshape().to_vec(),
                        blockshape: g.blockshape().to_vec(),
                        ..StorageParams::default()
                    };
                    let ctx = a.array.context().clone();
                    let copy = a.array.copy(&ctx, &mem)?;
                    a.array.append_array(&copy, i64::from(axis))
                }
            }
        })
    }
}
