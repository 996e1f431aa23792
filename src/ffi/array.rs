//! Contexts and arrays: creation, persistence, buffers and slices.

use std::ffi::{c_char, c_int, c_void};

use blosc2_sys::blosc2_schunk;

use super::array_calls::read_array;
use super::types::{
    caterva_array_t, caterva_config_t, caterva_ctx_t, caterva_params_t, caterva_storage_t, ndim_of, params_from_c,
    storage_from_c, ArrayBox, CtxBox,
};
use super::{boundary, bytes, bytes_mut, deref, deref_mut, handles, out_ptr, slice, string, CATERVA_SUCCEED};
use crate::array::{Array, Params, StorageParams};
use crate::error::{Error, Result};
use crate::store::Store;

/// Create a context holding a copy of `cfg`.
///
/// `*ctx` receives a context to release with `caterva_ctx_free`. `cfg` is
/// checked: `alloc` and `free` must be set (`CATERVA_ERR_NULL_POINTER`); the
/// codec, the filters (Blosc2's own, or ids of registered plugins, 32 and
/// up), `complevel` (0..=9), `splitmode` and `nthreads` (at least 1) must be
/// valid (`CATERVA_ERR_INVALID_ARGUMENT`).
///
/// # Safety
/// `cfg` must point to a valid config and `ctx` to writable memory.
#[no_mangle]
pub unsafe extern "C" fn caterva_ctx_new(cfg: *mut caterva_config_t, ctx: *mut *mut caterva_ctx_t) -> c_int {
    boundary("caterva_ctx_new", || {
        // SAFETY: caller's contract.
        let cfg = unsafe { deref(cfg, "cfg") }?;
        let out = out_ptr(ctx, "ctx")?;
        let c = CtxBox::create(cfg)?;
        // SAFETY: out is non-NULL and writable (caller's contract).
        unsafe { *out = c };
        Ok(CATERVA_SUCCEED)
    })
}

/// Free a context and set `*ctx` to NULL. Arrays made with it stay valid.
/// A `*ctx` that is not a live context (freed already) gives
/// `CATERVA_ERR_INVALID_ARGUMENT` and is left alone.
///
/// Needs exclusive access to the context: no other call may use it meanwhile.
///
/// # Safety
/// `*ctx` must be NULL or a context from `caterva_ctx_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn caterva_ctx_free(ctx: *mut *mut caterva_ctx_t) -> c_int {
    boundary("caterva_ctx_free", || {
        // SAFETY: caller's contract.
        let slot = unsafe { deref_mut(ctx, "ctx") }?;
        // SAFETY: the caller gives us exclusive use of the context.
        unsafe { CtxBox::free(slot) }?;
        Ok(CATERVA_SUCCEED)
    })
}

/// Shared body of the constructors: check the pointers, convert, build, box.
///
/// # Safety
/// The pointers must be NULL or valid (caller's contract).
unsafe fn create(
    func: &str,
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
    build: impl FnOnce(&crate::Context, &Params, &StorageParams) -> Result<Array>,
) -> c_int {
    boundary(func, || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let p = params_from_c(unsafe { deref(params, "params") }?)?;
        // SAFETY: caller's contract.
        let s = unsafe { storage_from_c(deref(storage, "storage")?, p.shape.len()) }?;
        let out = out_ptr(array, "array")?;
        let arr = build(&c.ctx, &p, &s)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Create an array whose contents are unspecified.
///
/// # Safety
/// All pointers must be valid; `*array` receives an array to release with `caterva_free`.
#[no_mangle]
pub unsafe extern "C" fn caterva_uninit(
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { create("caterva_uninit", ctx, params, storage, array, Array::uninit) }
}

/// Create an array of zeros (as the original's `caterva_empty` did).
///
/// # Safety
/// As `caterva_uninit`.
#[no_mangle]
pub unsafe extern "C" fn caterva_empty(
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { create("caterva_empty", ctx, params, storage, array, Array::empty) }
}

/// Create an array of zeros, stored as special chunks (a few bytes each).
///
/// # Safety
/// As `caterva_uninit`.
#[no_mangle]
pub unsafe extern "C" fn caterva_zeros(
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { create("caterva_zeros", ctx, params, storage, array, Array::zeros) }
}

/// Create an array whose items all equal `fill_value` (`itemsize` bytes).
///
/// # Safety
/// As `caterva_uninit`; `fill_value` must point to `params->itemsize` bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_full(
    ctx: *mut caterva_ctx_t,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    fill_value: *mut c_void,
    array: *mut *mut caterva_array_t,
) -> c_int {
    let itemsize = if params.is_null() {
        0
    } else {
        // SAFETY: non-NULL params is valid (caller's contract).
        usize::from(unsafe { (*params).itemsize })
    };
    let build = |c: &crate::Context, p: &Params, s: &StorageParams| {
        // SAFETY: fill_value holds itemsize bytes (caller's contract).
        let v = unsafe { bytes(fill_value.cast::<u8>(), itemsize as i64, "fill_value") }?;
        Array::full(c, p, s, v)
    };
    // SAFETY: forwarded caller's contract.
    unsafe { create("caterva_full", ctx, params, storage, array, build) }
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

/// Create an array from `buffer`, a C-order array of `params->shape` items.
///
/// # Safety
/// As `caterva_uninit`; `buffer` must hold `buffersize` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_from_buffer(
    ctx: *mut caterva_ctx_t,
    buffer: *mut c_void,
    buffersize: i64,
    params: *mut caterva_params_t,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    let build = |c: &crate::Context, p: &Params, s: &StorageParams| {
        // SAFETY: caller's contract on buffer/buffersize.
        let buf = unsafe { bytes(buffer.cast::<u8>(), buffersize, "buffer") }?;
        Array::from_buffer(c, p, s, buf)
    };
    // SAFETY: forwarded caller's contract.
    unsafe { create("caterva_from_buffer", ctx, params, storage, array, build) }
}

/// Free an array (its data on disk stays) and set `*array` to NULL. An
/// `*array` that is not a live array (freed already) gives
/// `CATERVA_ERR_INVALID_ARGUMENT` and is left alone.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `*array` must be NULL or an array from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn caterva_free(ctx: *mut caterva_ctx_t, array: *mut *mut caterva_array_t) -> c_int {
    boundary("caterva_free", || {
        // SAFETY: caller's contract.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let slot = unsafe { deref_mut(array, "array") }?;
        // SAFETY: the caller gives us exclusive use of the array.
        unsafe { ArrayBox::free(slot) }?;
        Ok(CATERVA_SUCCEED)
    })
}

/// Wrap a super-chunk that carries a `caterva` metalayer. On success the
/// array owns `schunk` (freed by `caterva_free`); on failure it stays the
/// caller's. The super-chunk of a live array (its `arr->sc`) is refused
/// with `CATERVA_ERR_INVALID_ARGUMENT`: both arrays would free it.
///
/// # Safety
/// `schunk` must be a live super-chunk that the caller owns.
#[no_mangle]
pub unsafe extern "C" fn caterva_from_schunk(
    ctx: *mut caterva_ctx_t,
    schunk: *mut blosc2_schunk,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_from_schunk", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        let out = out_ptr(array, "array")?;
        handles::check_unowned(schunk)?;
        // SAFETY: schunk is live and owned by the caller (not by one of our
        // arrays: checked), who hands it over.
        let store = unsafe { Store::from_raw(schunk) }?;
        let arr = match Array::wrap_or_hand_back(&c.ctx, store) {
            Ok(a) => a,
            Err(failed) => {
                // Failure: ownership stays with the caller.
                let (e, store) = *failed;
                let _ = store.into_raw();
                return Err(e);
            }
        };
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Serialise an array to one contiguous frame. When `*needs_free` is true
/// the caller releases `*cframe` with `free()`; otherwise it points into the
/// array and lives as long as the array is unchanged.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// All pointers must be valid.
#[no_mangle]
pub unsafe extern "C" fn caterva_to_cframe(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    cframe: *mut *mut u8,
    cframe_len: *mut i64,
    needs_free: *mut bool,
) -> c_int {
    // SAFETY: caller's contract; the outputs are checked non-NULL before they are written.
    unsafe {
        read_array("caterva_to_cframe", ctx, array, |a| {
            let (o1, o2, o3) =
                (out_ptr(cframe, "cframe")?, out_ptr(cframe_len, "cframe_len")?, out_ptr(needs_free, "needs_free")?);
            let (p, len, nf) = a.array.store().to_cframe_raw()?;
            (*o1, *o2, *o3) = (p, len, nf);
            Ok(())
        })
    }
}

/// Create an in-memory array from a contiguous frame. With `copy` false the
/// array reads `cframe` in place: keep it alive and unchanged until `caterva_free`.
///
/// # Safety
/// `cframe` must hold `cframe_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_from_cframe(
    ctx: *mut caterva_ctx_t,
    cframe: *mut u8,
    cframe_len: i64,
    copy: bool,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_from_cframe", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let buf = unsafe { bytes(cframe, cframe_len, "cframe") }?;
        let out = out_ptr(array, "array")?;
        // SAFETY: buf is valid; with copy == false the caller keeps it alive (contract above).
        let store = unsafe { Store::from_cframe(buf.as_ptr(), buf.len(), copy) }?;
        let arr = Array::wrap(&c.ctx, store)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Open a persisted array: a frame file or a sparse-frame directory.
///
/// # Safety
/// `urlpath` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_open(
    ctx: *mut caterva_ctx_t,
    urlpath: *const c_char,
    array: *mut *mut caterva_array_t,
) -> c_int {
    boundary("caterva_open", || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let url = unsafe { string(urlpath, "urlpath") }?;
        let out = out_ptr(array, "array")?;
        let arr = Array::open(&c.ctx, url)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Write a copy of the array to `urlpath` (same partitions and contiguity),
/// beside it and renamed into place. Only an array of the same kind is
/// replaced; onto the array's own path (however spelt) nothing changes.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `urlpath` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_save(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    urlpath: *mut c_char,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe { read_array("caterva_save", ctx, array, |a| a.array.save(string(urlpath, "urlpath")?)) }
}

/// Remove an array: a Blosc2 frame file, or a sparse-frame directory (a
/// frame index and chunk files only), with what a crash left beside it. A
/// missing path is fine; anything else (another file, a directory of other
/// things, a symbolic link) is refused with `CATERVA_ERR_INVALID_STORAGE`
/// and left as it is.
///
/// # Safety
/// `urlpath` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_remove(ctx: *mut caterva_ctx_t, urlpath: *mut c_char) -> c_int {
    boundary("caterva_remove", || {
        // SAFETY: caller's contract.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let url = unsafe { string(urlpath, "urlpath") }?;
        Array::remove(url)?;
        Ok(CATERVA_SUCCEED)
    })
}

/// Copy the whole array into `buffer` in C order.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `buffer` must hold `buffersize` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_to_buffer(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    buffer: *mut c_void,
    buffersize: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_to_buffer", ctx, array, |a| {
            a.array.to_buffer(bytes_mut(buffer.cast::<u8>(), buffersize, "buffer")?)
        })
    }
}

/// `ndim` entries at `p` (NULL is accepted for a 0-dim array).
///
/// # Safety
/// A non-NULL `p` must point to `ndim` readable items.
unsafe fn coords<'a>(p: *const i64, ndim: usize, what: &str) -> Result<&'a [i64]> {
    // SAFETY: caller's contract.
    unsafe { slice(p, ndim, what) }
}

/// Copy `array[start:stop]` into `buffer`, a C-order array of shape
/// `buffershape` (each entry at least `stop - start`) and `buffersize` bytes.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `start`, `stop` and `buffershape` must hold `ndim` items; `buffer` `buffersize` bytes.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_slice_buffer(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    start: *mut i64,
    stop: *mut i64,
    buffer: *mut c_void,
    buffershape: *mut i64,
    buffersize: i64,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_get_slice_buffer", ctx, array, |a| {
            let n = a.array.ndim();
            let (start, stop, shape) =
                (coords(start, n, "start")?, coords(stop, n, "stop")?, coords(buffershape, n, "buffershape")?);
            let buf = bytes_mut(buffer.cast::<u8>(), buffersize, "buffer")?;
            a.array.get_slice_buffer(start, stop, buf, shape)
        })
    }
}

/// Write `buffer`, a C-order array of shape `buffershape`, into `array[start:stop]`.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// As `caterva_get_slice_buffer`.
#[no_mangle]
pub unsafe extern "C" fn caterva_set_slice_buffer(
    ctx: *mut caterva_ctx_t,
    buffer: *mut c_void,
    buffershape: *mut i64,
    buffersize: i64,
    start: *mut i64,
    stop: *mut i64,
    array: *mut caterva_array_t,
) -> c_int {
    boundary("caterva_set_slice_buffer", || {
        // SAFETY: caller's contract.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let a = unsafe { ArrayBox::get(array) }?;
        let n = a.array.ndim();
        // SAFETY: caller's contract.
        let (start, stop, shape) =
            unsafe { (coords(start, n, "start")?, coords(stop, n, "stop")?, coords(buffershape, n, "buffershape")?) };
        // SAFETY: caller's contract.
        let buf = unsafe { bytes(buffer.cast::<u8>(), buffersize, "buffer") }?;
        // Sync also after an error: undoing a failed write reloads the super-chunk.
        let r = a.array.set_slice_buffer(start, stop, buf, shape);
        a.sync();
        r.map(|()| CATERVA_SUCCEED)
    })
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
