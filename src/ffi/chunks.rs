//! Chunk lists for schedulers (as c-blosc2's b2nd has them):
//! `caterva_get_slice_nchunks` (the chunks a region touches) and
//! `caterva_get_chunk_region` (the region a chunk holds).

use std::ffi::c_int;

use super::array_calls::read_array;
use super::types::{caterva_array_t, caterva_ctx_t};
use super::{out_ptr, slice};

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
