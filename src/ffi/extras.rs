//! Extensions from c-blosc2 3.x's b2nd: chunk lists for schedulers
//! (`caterva_get_slice_nchunks`, `caterva_get_chunk_region`), N-d buffer
//! copies (`caterva_copy_buffer`), `caterva_expand_dims`, `caterva_nans`,
//! `caterva_concatenate` and `caterva_append_array`, and arrays inside
//! larger files (`caterva_open_offset`, `caterva_save_append`).
//!
//! Every function checks all its pointers and arguments before it changes
//! anything: on an error the arrays, their files and the outputs are as
//! they were.

use std::ffi::{c_char, c_int, c_void};

use super::meta::{read_array, with_array};
use super::types::{
    caterva_array_t, caterva_ctx_t, caterva_params_t, caterva_storage_t, ndim_of, params_from_c, storage_from_c,
    ArrayBox, CtxBox,
};
use super::{boundary, bytes, bytes_mut, deref, out_ptr, slice, string, CATERVA_SUCCEED};
use crate::array::{Array, StorageParams};
use crate::error::Error;

/// The chunks that the region `start..stop` (`ndim` entries each) touches:
/// `*chunks_idx` receives their numbers in C order of the chunk grid and
/// `*nchunks` how many there are (as `b2nd_get_slice_nchunks` lists them),
/// so that a parallel runtime can give each worker whole chunks. An empty
/// region touches none; a 0-dim array has one chunk, 0.
///
/// Ownership: `*chunks_idx` is a `malloc`ed array the caller releases with
/// `free()`; it is NULL when `*nchunks` is 0.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer (`start`/`stop`
/// may be NULL for a 0-dim array); `CATERVA_ERR_INVALID_ARGUMENT` for a
/// region outside the array. The outputs are written only on success.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `start` and `stop` must hold `ndim` items; `chunks_idx` and `nchunks`
/// must be writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_slice_nchunks(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    start: *const i64,
    stop: *const i64,
    chunks_idx: *mut *mut i64,
    nchunks: *mut i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_get_slice_nchunks", ctx, array, |a| {
            let n = a.array.ndim();
            let (start, stop) = (slice(start, n, "start")?, slice(stop, n, "stop")?);
            let (out, count) = (out_ptr(chunks_idx, "chunks_idx")?, out_ptr(nchunks, "nchunks")?);
            let list = a.array.slice_nchunks(start, stop)?;
            let p = if list.is_empty() {
                std::ptr::null_mut()
            } else {
                let bytes: Vec<u8> = list.iter().flat_map(|c| c.to_ne_bytes()).collect();
                super::malloc_copy(&bytes)?.cast::<i64>()
            };
            *out = p;
            *count = list.len() as i64;
            Ok(())
        })
    }
}

/// The region chunk `nchunk` holds: `start` and `stop` (`ndim` entries
/// each, written by the call) receive its first and one-past-last indices,
/// cut at the array's edge.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer (`start`/`stop`
/// may be NULL for a 0-dim array); `CATERVA_ERR_INVALID_ARGUMENT` if
/// `nchunk` is not in `0..nchunks`. Nothing is written then.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `start` and `stop` must have room for `ndim` items.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_chunk_region(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    nchunk: i64,
    start: *mut i64,
    stop: *mut i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_get_chunk_region", ctx, array, |a| {
            let n = a.array.ndim();
            if n > 0 {
                out_ptr(start, "start")?;
                out_ptr(stop, "stop")?;
            }
            let (lo, hi) = a.array.chunk_region(nchunk)?;
            if n > 0 {
                std::ptr::copy_nonoverlapping(lo.as_ptr(), start, n);
                std::ptr::copy_nonoverlapping(hi.as_ptr(), stop, n);
            }
            Ok(())
        })
    }
}

/// Copy the box `src_start..src_stop` of `src`, a C-order buffer of
/// `src_pad_shape` items of `itemsize` bytes (`srcsize` bytes in all), into
/// `dst`, a C-order buffer of `dst_pad_shape` items (`dstsize` bytes), at
/// `dst_start` (as `b2nd_copy_buffer` does, with the buffer sizes added so
/// that they can be checked). Items of `dst` outside the box are left as
/// they are; a 0-dim copy (`ndim` 0, the shape pointers may be NULL) moves
/// one item. No context is needed.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer;
/// `CATERVA_ERR_INVALID_ARGUMENT` for `ndim` outside 0..=8, `itemsize` 0,
/// a negative size or shape, a box outside `src_pad_shape` or, moved to
/// `dst_start`, outside `dst_pad_shape`, a buffer smaller than its shape, or
/// overlapping buffers. Nothing is written then.
///
/// # Safety
/// `src` must hold `srcsize` readable bytes and `dst` `dstsize` writable
/// ones; each shape and position pointer must hold `ndim` items.
#[no_mangle]
pub unsafe extern "C" fn caterva_copy_buffer(
    ndim: i8,
    itemsize: u8,
    src: *const c_void,
    srcsize: i64,
    src_pad_shape: *const i64,
    src_start: *const i64,
    src_stop: *const i64,
    dst: *mut c_void,
    dstsize: i64,
    dst_pad_shape: *const i64,
    dst_start: *const i64,
) -> c_int {
    boundary("caterva_copy_buffer", || {
        let n = ndim_of(ndim)?;
        // SAFETY: caller's contract.
        let (sp, ss, st, dp, ds) = unsafe {
            (
                slice(src_pad_shape, n, "src_pad_shape")?,
                slice(src_start, n, "src_start")?,
                slice(src_stop, n, "src_stop")?,
                slice(dst_pad_shape, n, "dst_pad_shape")?,
                slice(dst_start, n, "dst_start")?,
            )
        };
        // SAFETY: caller's contract.
        let s = unsafe { bytes(src.cast::<u8>(), srcsize, "src") }?;
        let (d0, dn) = (dst as usize, usize::try_from(dstsize).unwrap_or(0));
        let (s0, sn) = (s.as_ptr() as usize, s.len());
        if !dst.is_null() && s0 < d0.saturating_add(dn) && d0 < s0.saturating_add(sn) {
            return Err(Error::InvalidArgument("src and dst overlap".into()));
        }
        // SAFETY: caller's contract; dst does not overlap src (checked).
        let d = unsafe { bytes_mut(dst.cast::<u8>(), dstsize, "dst") }?;
        crate::copy_buffer(usize::from(itemsize), s, sp, ss, st, d, dp, ds)?;
        Ok(CATERVA_SUCCEED)
    })
}

/// Insert an axis of length 1 (chunk and block length 1) at position `axis`
/// (`0..=ndim`). No chunk is recompressed, but c-blosc2 metalayers cannot
/// grow, so the array is copied (compressed chunks as they are, with its
/// metalayers, vlmetalayers and checksums); a file or directory array is
/// written beside its path and renamed into place. `arr->ndim`, the shapes
/// and `arr->sc` (a new super-chunk) are updated.
///
/// Errors: `CATERVA_ERR_INVALID_ARGUMENT` for an axis out of range or an
/// array of 8 axes; `CATERVA_ERR_INVALID_STORAGE` for an array opened with
/// `caterva_open_offset` (read-only); `CATERVA_ERR_BLOSC_FAILED` if writing
/// fails. The array is unchanged then.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// The pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_expand_dims(ctx: *mut caterva_ctx_t, array: *mut caterva_array_t, axis: i8) -> c_int {
    // SAFETY: caller's contract.
    unsafe { with_array("caterva_expand_dims", ctx, array, |a| a.array.expand_dims(i64::from(axis))) }
}

/// Create an array in which every item is NaN. `dtype` is `"<f2"`, `">f2"`,
/// `"<f4"`, `">f4"`, `"<f8"` or `">f8"` (`=` for the machine's order), and
/// must match `params->itemsize`; NULL takes the little-endian float of
/// that size. Little-endian f4 and f8 are stored as Blosc2 NaN special
/// chunks (no data); the others as one repeated-value chunk per chunk. The
/// dtype is recorded in the `b2nd` metalayer.
///
/// Ownership: `*array` receives an array to release with `caterva_free`.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer (but `dtype`);
/// `CATERVA_ERR_INVALID_ARGUMENT` for another dtype, a dtype of another
/// size, or as `caterva_zeros`; `CATERVA_ERR_INVALID_STORAGE` if the path is
/// taken by something that is not an array. Nothing is created then.
///
/// # Safety
/// As `caterva_zeros`; a non-NULL `dtype` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_nans(
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    dtype: *const c_char,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_nans", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let mut p = params_from_c(unsafe { deref(params, "params") }?)?;
        // SAFETY: caller's contract.
        let s = unsafe { storage_from_c(deref(storage, "storage")?, p.shape.len()) }?;
        if !dtype.is_null() {
            // SAFETY: caller's contract.
            p.dtype = Some(unsafe { string(dtype, "dtype") }?.to_owned());
        }
        let out = out_ptr(array, "array")?;
        let arr = Array::nans(&c.ctx, &p, &s)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

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

/// Open, read-only, the array whose contiguous frame starts at byte
/// `offset` of the file `urlpath` (as `b2nd_open_offset` does): one of
/// several arrays saved into one file with `caterva_save_append`, or a
/// frame inside another format. The frame is checked before c-blosc2
/// reads it. Calls that would change the array fail with
/// `CATERVA_ERR_INVALID_STORAGE` (c-blosc2 would write past the frame's
/// end, over the file's next frame); copy it to change it.
///
/// Ownership: `*array` receives an array to release with `caterva_free`.
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer;
/// `CATERVA_ERR_INVALID_ARGUMENT` for a negative offset, or if no sound
/// frame of an array starts at `offset`; `CATERVA_ERR_INVALID_STORAGE` if
/// nothing is at `urlpath` or it is not a regular file.
///
/// # Safety
/// `urlpath` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_open_offset(
    ctx: *mut caterva_ctx_t,
    urlpath: *const c_char,
    offset: i64,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_open_offset", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let url = unsafe { string(urlpath, "urlpath") }?;
        let out = out_ptr(array, "array")?;
        let arr = Array::open_offset(&c.ctx, url, offset)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Append the array, as a contiguous frame, to the end of the file
/// `urlpath` (created if missing) and write to `*offset` the byte offset
/// where its frame starts (as `b2nd_save_append` does); open it again with
/// `caterva_open_offset` or python-blosc2's `blosc2.open(urlpath,
/// offset=...)`. The file is synced; a failure cuts it back to its old
/// length (or removes it if this call created it); a process killed
/// mid-append may leave part of a frame after the old end, never a change
/// before it. A frame appended to an
/// array's own file makes that array read-only for its handles and
/// reopenable only with `caterva_open_offset` (at 0).
///
/// Errors: `CATERVA_ERR_NULL_POINTER` for a NULL pointer;
/// `CATERVA_ERR_INVALID_STORAGE` if `urlpath` is empty, a directory or a
/// symbolic link, or another handle is writing it;
/// `CATERVA_ERR_BLOSC_FAILED` if writing fails. `*offset` is written only
/// on success.
///
/// Only reads the array: several threads may read it meanwhile.
///
/// # Safety
/// `urlpath` must be a NUL-terminated string; `offset` must be writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_save_append(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    urlpath: *const c_char,
    offset: *mut i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_save_append", ctx, array, |a| {
            let url = string(urlpath, "urlpath")?;
            let out = out_ptr(offset, "offset")?;
            *out = a.array.save_append(url)?;
            Ok(())
        })
    }
}
