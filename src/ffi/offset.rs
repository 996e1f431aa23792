//! Arrays inside larger files: `caterva_open_offset` (open, read-only, the
//! frame at a byte offset of a file) and `caterva_save_append` (append an
//! array's frame to a file).
//!
//! Every function checks all its pointers and arguments before it changes
//! anything: on an error the arrays, their files and the outputs are as
//! they were.

use std::ffi::{c_char, c_int};

use super::array_calls::read_array;
use super::types::{caterva_array_t, caterva_ctx_t, ArrayBox, CtxBox};
use super::{boundary, out_ptr, string, CATERVA_SUCCEED};
use crate::array::Array;

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
