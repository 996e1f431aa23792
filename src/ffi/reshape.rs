//! Reshaping (resize, insert, append, delete, squeeze, expand_dims), new arrays from old
//! (get_slice, copy) and orthogonal selections.
//!
//! Every function here checks all its pointers and arguments before it
//! changes anything: on an error the array, its file and the outputs are as
//! they were.

use std::ffi::{c_int, c_void};

use super::array_calls::{read_array, with_array};
use super::types::{caterva_array_t, caterva_ctx_t, caterva_storage_t, storage_from_c, ArrayBox, CtxBox};
use super::{boundary, bytes, bytes_mut, deref, out_ptr, slice, CATERVA_SUCCEED};
use crate::error::{Error, Result};

/// Run `f` on the array behind `array`; see [`with_array`].
///
/// # Safety
/// The pointers must be NULL or valid (caller's contract).
unsafe fn change(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    f: impl FnOnce(&mut crate::Array) -> Result<()>,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { with_array(func, ctx, array, |a| f(&mut a.array)) }
}

/// Change the shape to `new_shape` (`ndim` entries). Where an axis grows, the
/// new items go in at `start[axis]`; where it shrinks, the items from
/// `start[axis]` on go. A NULL `start` means at the end of every axis. Any
/// position and length work (the original library required chunk-aligned
/// changes away from the end).
///
/// New items read as zeros, except those a grow at the end puts inside an
/// existing chunk, which read that chunk's padding (the fill value of an
/// array made by `caterva_full`). Items cut off by a shrink are cleared and
/// never come back.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `new_shape` (and a non-NULL `start`) must hold `ndim` items.
#[no_mangle]
pub unsafe extern "C" fn caterva_resize(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    new_shape: *const i64,
    start: *const i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        change("caterva_resize", ctx, array, |a| {
            let n = a.ndim();
            let shape = slice(new_shape, n, "new_shape")?;
            let start = if start.is_null() { None } else { Some(slice(start, n, "start")?) };
            a.resize(shape, start)
        })
    }
}

/// Insert `buffer` (`buffersize` bytes: whole slabs of the array along
/// `axis`, in C order) at index `insert_start` of `axis`.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `buffer` must hold `buffersize` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_insert(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    buffer: *mut c_void,
    buffersize: i64,
    axis: i8,
    insert_start: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        change("caterva_insert", ctx, array, |a| {
            let buf = bytes(buffer.cast::<u8>(), buffersize, "buffer")?;
            a.insert(buf, i64::from(axis), insert_start)
        })
    }
}

/// Append `buffer` (whole slabs, as for `caterva_insert`) at the end of
/// `axis`. An axis of length 0 created with a real chunk length grows this way.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// As `caterva_insert`.
#[no_mangle]
pub unsafe extern "C" fn caterva_append(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    buffer: *mut c_void,
    buffersize: i64,
    axis: i8,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        change("caterva_append", ctx, array, |a| {
            let buf = bytes(buffer.cast::<u8>(), buffersize, "buffer")?;
            a.append(buf, i64::from(axis))
        })
    }
}

/// Remove `delete_len` items of `axis` from `delete_start` on.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// The pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_delete(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    axis: i8,
    delete_start: i64,
    delete_len: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe { change("caterva_delete", ctx, array, |a| a.delete(i64::from(axis), delete_start, delete_len)) }
}

/// Remove the axes flagged in `index` (`ndim` flags); each must have length 1
/// (`CATERVA_ERR_INVALID_INDEX` otherwise).
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `index` must hold `ndim` bools.
#[no_mangle]
pub unsafe extern "C" fn caterva_squeeze_index(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    index: *const bool,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        change("caterva_squeeze_index", ctx, array, |a| {
            // Read as bytes: any byte other than 0 means true, as in C (a
            // Rust bool may only hold 0 or 1).
            let flags: Vec<bool> = slice(index.cast::<u8>(), a.ndim(), "index")?.iter().map(|&b| b != 0).collect();
            a.squeeze_index(&flags)
        })
    }
}

/// Remove every axis of length 1.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// The pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_squeeze(ctx: *mut caterva_ctx_t, array: *mut caterva_array_t) -> c_int {
    // SAFETY: caller's contract.
    unsafe { change("caterva_squeeze", ctx, array, crate::Array::squeeze) }
}

/// Shared body of `caterva_get_slice` and `caterva_copy`: check the
/// pointers, convert the storage for `src`'s ndim, build, box.
///
/// # Safety
/// The pointers must be NULL or valid (caller's contract).
unsafe fn derive(
    func: &str,
    ctx: *mut caterva_ctx_t,
    src: *mut caterva_array_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
    build: impl FnOnce(&crate::Context, &crate::Array, &crate::StorageParams) -> Result<crate::Array>,
) -> c_int {
    boundary(func, || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract (src is only read).
        let s = unsafe { ArrayBox::get_ref(src, "src") }?;
        // SAFETY: caller's contract.
        let st = unsafe { storage_from_c(deref(storage, "storage")?, s.array.ndim()) }?;
        let out = out_ptr(array, "array")?;
        let arr = build(&c.ctx, &s.array, &st)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// A new array holding `src[start:stop]`, with the partitions, location and
/// metalayers of `storage`; `src`'s vlmetalayers are not copied. `*array`
/// receives an array to release with `caterva_free`.
///
/// Only reads `src`: several threads may call this on one array at once.
///
/// # Safety
/// `start` and `stop` must hold `ndim` items; `storage` must be valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_slice(
    ctx: *mut caterva_ctx_t,
    src: *mut caterva_array_t,
    start: *const i64,
    stop: *const i64,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        derive("caterva_get_slice", ctx, src, storage, array, |c, s, st| {
            let n = s.ndim();
            let (start, stop) = (slice(start, n, "start")?, slice(stop, n, "stop")?);
            s.get_slice(c, start, stop, st)
        })
    }
}

/// A copy of `src` with the partitions and location of `storage`, keeping
/// `src`'s user metalayers (those in `storage` are added or replace them) and
/// vlmetalayers. With unchanged partitions and compression parameters the
/// compressed chunks are copied as they are. `*array` receives an array to
/// release with `caterva_free`.
///
/// Only reads `src`: several threads may call this on one array at once.
///
/// # Safety
/// `storage` must be valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_copy(
    ctx: *mut caterva_ctx_t,
    src: *mut caterva_array_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe { derive("caterva_copy", ctx, src, storage, array, |c, s, st| s.copy(c, st)) }
}

/// The `ndim` index lists of a selection.
///
/// # Safety
/// `selection` must hold `ndim` pointers, each to `selection_size[i]` items.
unsafe fn lists<'a>(selection: *const *mut i64, sizes: *const i64, ndim: usize) -> Result<Vec<&'a [i64]>> {
    // SAFETY: caller's contract.
    let (ptrs, sizes) = unsafe { (slice(selection, ndim, "selection")?, slice(sizes, ndim, "selection_size")?) };
    ptrs.iter()
        .zip(sizes)
        .enumerate()
        .map(|(i, (&p, &n))| {
            let n = usize::try_from(n)
                .map_err(|_| Error::InvalidArgument(format!("selection_size[{i}] = {n} is negative")))?;
            // SAFETY: caller's contract.
            unsafe { slice(p.cast_const(), n, &format!("selection[{i}]")) }
        })
        .collect()
}

/// Read the outer product of one index list per axis into `buffer` (C order,
/// shape `buffershape`, each entry at least `selection_size[i]`): item
/// `(j0, j1, …)` receives `array[selection[0][j0], selection[1][j1], …]`.
/// Lists may be unsorted and hold repeats. An index outside its axis gives
/// `CATERVA_ERR_INVALID_INDEX`.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `selection` must hold `ndim` pointers to `selection_size[i]` items each;
/// `buffershape` `ndim` items; `buffer` `buffersize` bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_orthogonal_selection(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    selection: *mut *mut i64,
    selection_size: *mut i64,
    buffer: *mut c_void,
    buffershape: *mut i64,
    buffersize: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_get_orthogonal_selection", ctx, array, |a| {
            let n = a.array.ndim();
            let (sel, shape) = (lists(selection, selection_size, n)?, slice(buffershape, n, "buffershape")?);
            let buf = bytes_mut(buffer.cast::<u8>(), buffersize, "buffer")?;
            a.array.get_orthogonal_selection(&sel, buf, shape)
        })
    }
}

/// Write `buffer` (laid out as for `caterva_get_orthogonal_selection`) into
/// the selected items; where an index repeats, the last position wins.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// As `caterva_get_orthogonal_selection`.
#[no_mangle]
pub unsafe extern "C" fn caterva_set_orthogonal_selection(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    selection: *mut *mut i64,
    selection_size: *mut i64,
    buffer: *mut c_void,
    buffershape: *mut i64,
    buffersize: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        change("caterva_set_orthogonal_selection", ctx, array, |a| {
            let n = a.ndim();
            let (sel, shape) = (lists(selection, selection_size, n)?, slice(buffershape, n, "buffershape")?);
            let buf = bytes(buffer.cast::<u8>(), buffersize, "buffer")?;
            a.set_orthogonal_selection(&sel, buf, shape)
        })
    }
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
