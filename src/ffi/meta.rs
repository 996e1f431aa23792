//! Metalayers, variable-length metalayers and the metalayer codec.

use std::ffi::{c_char, c_int};

use super::array_calls::{read_array, with_array};
use super::types::{caterva_array_t, caterva_ctx_t, caterva_metalayer_t, checked_ndim, ArrayBox};
use super::{boundary, deref, malloc_copy, malloc_cstr, out_ptr, slice, string, CATERVA_SUCCEED};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::meta;

/// The name and content of a caller's metalayer.
///
/// # Safety
/// The fields must be valid for their declared sizes.
unsafe fn read_metalayer<'a>(m: *const caterva_metalayer_t, what: &str) -> Result<(&'a str, &'a [u8])> {
    // SAFETY: caller's contract.
    let m = unsafe { deref(m, what) }?;
    // SAFETY: caller's contract.
    let name = unsafe { string(m.name, &format!("{what}->name")) }?;
    let size =
        usize::try_from(m.size).map_err(|_| Error::InvalidArgument(format!("{what}->size {} is negative", m.size)))?;
    // SAFETY: caller's contract.
    let data = unsafe { slice(m.sdata, size, &format!("{what}->sdata")) }?;
    Ok((name, data))
}

/// Fill `out` with malloc'ed copies of `name` and `data` (the caller frees both).
///
/// # Safety
/// `out` must be writable.
unsafe fn write_metalayer(out: *mut caterva_metalayer_t, name: &str, data: &[u8]) -> Result<()> {
    let size = i32::try_from(data.len()).map_err(|_| Error::InvalidArgument("metalayer larger than 2 GiB".into()))?;
    let n = malloc_cstr(name)?;
    let d = match malloc_copy(data) {
        Ok(d) => d,
        Err(e) => {
            // SAFETY: n was just malloc'ed and is not handed out.
            unsafe { libc::free(n.cast()) };
            return Err(e);
        }
    };
    // SAFETY: out is non-NULL and writable (caller's contract).
    unsafe { *out = caterva_metalayer_t { name: n, sdata: d, size } };
    Ok(())
}

/// Shared body of `caterva_vlmeta_add`, `caterva_vlmeta_update` and `caterva_meta_update`.
///
/// # Safety
/// As those functions.
unsafe fn put_from(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    m: *const caterva_metalayer_t,
    put: fn(&mut Array, &str, &[u8]) -> Result<()>,
) -> c_int {
    let f = |a: &mut ArrayBox| {
        // SAFETY: caller's contract.
        let (name, data) = unsafe { read_metalayer(m, "metalayer") }?;
        put(&mut a.array, name, data)
    };
    // SAFETY: forwarded caller's contract.
    unsafe { with_array(func, ctx, array, f) }
}

/// Shared body of `caterva_meta_get` and `caterva_vlmeta_get`.
///
/// # Safety
/// As those functions.
unsafe fn get_into(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    out: *mut caterva_metalayer_t,
    get: fn(&Array, &str) -> Result<Vec<u8>>,
) -> c_int {
    let f = |a: &ArrayBox| {
        // SAFETY: caller's contract.
        let name = unsafe { string(name, "name") }?;
        let out = out_ptr(out, "output metalayer")?;
        let data = get(&a.array, name)?;
        // SAFETY: out is non-NULL and writable.
        unsafe { write_metalayer(out, name, &data) }
    };
    // SAFETY: forwarded caller's contract.
    unsafe { read_array(func, ctx, array, f) }
}

/// Shared body of `caterva_meta_exists` and `caterva_vlmeta_exists`.
///
/// # Safety
/// As those functions.
unsafe fn exists_into(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    out: *mut bool,
    exists: fn(&Array, &str) -> Result<bool>,
) -> c_int {
    let f = |a: &ArrayBox| {
        // SAFETY: caller's contract.
        let name = unsafe { string(name, "name") }?;
        let out = out_ptr(out, "exists")?;
        let e = exists(&a.array, name)?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = e };
        Ok(())
    };
    // SAFETY: forwarded caller's contract.
    unsafe { read_array(func, ctx, array, f) }
}

/// Add a variable-length metalayer (`vlmeta->name`, `vlmeta->size` bytes at `vlmeta->sdata`).
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `vlmeta` must be a valid metalayer.
#[no_mangle]
pub unsafe extern "C" fn caterva_vlmeta_add(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    vlmeta: *mut caterva_metalayer_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { put_from("caterva_vlmeta_add", ctx, array, vlmeta, Array::vlmeta_add) }
}

/// Replace a variable-length metalayer's content (any length).
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// As `caterva_vlmeta_add`.
#[no_mangle]
pub unsafe extern "C" fn caterva_vlmeta_update(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    vlmeta: *mut caterva_metalayer_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { put_from("caterva_vlmeta_update", ctx, array, vlmeta, Array::vlmeta_update) }
}

/// Fetch a variable-length metalayer. `vlmeta->name` and `vlmeta->sdata`
/// are malloc'ed; the caller frees both with `free()`.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `name` must be a NUL-terminated string and `vlmeta` writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_vlmeta_get(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    vlmeta: *mut caterva_metalayer_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { get_into("caterva_vlmeta_get", ctx, array, name, vlmeta, Array::vlmeta_get) }
}

/// Whether a variable-length metalayer exists.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `name` must be a NUL-terminated string and `exists` writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_vlmeta_exists(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    exists: *mut bool,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { exists_into("caterva_vlmeta_exists", ctx, array, name, exists, Array::vlmeta_exists) }
}

/// Fetch a fixed-size metalayer. `meta->name` and `meta->sdata` are
/// malloc'ed; the caller frees both with `free()`.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `name` must be a NUL-terminated string and `meta` writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_meta_get(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    meta: *mut caterva_metalayer_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { get_into("caterva_meta_get", ctx, array, name, meta, Array::meta_get) }
}

/// Whether a fixed-size metalayer exists.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `name` must be a NUL-terminated string and `exists` writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_meta_exists(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    name: *const c_char,
    exists: *mut bool,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { exists_into("caterva_meta_exists", ctx, array, name, exists, |a, n| Ok(a.meta_exists(n))) }
}

/// Replace a user metalayer's content; the size must not change.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `meta` must be a valid metalayer.
#[no_mangle]
pub unsafe extern "C" fn caterva_meta_update(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    meta: *mut caterva_metalayer_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { put_from("caterva_meta_update", ctx, array, meta, Array::meta_update) }
}

/// Print the geometry recorded in the `caterva` metalayer to stdout.
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `array` must be NULL or a valid array.
#[no_mangle]
pub unsafe extern "C" fn caterva_print_meta(array: *mut caterva_array_t) -> c_int {
    boundary("caterva_print_meta", || {
        // SAFETY: caller's contract.
        let a = unsafe { ArrayBox::get_ref(array, "array") }?;
        let text =
            std::ffi::CString::new(a.array.meta_summary()?).map_err(|_| Error::InvalidFormat("NUL in text".into()))?;
        // Through C's stdout, so the text stays in order with the caller's printf output.
        // SAFETY: a constant format and a valid C string.
        unsafe { libc::printf(c"%s".as_ptr(), text.as_ptr()) };
        Ok(CATERVA_SUCCEED)
    })
}

/// Encode a `caterva` metalayer into `*smeta` (malloc'ed; free it with
/// `free()`). Returns its length, or a negative `CATERVA_ERR_*` code.
///
/// # Safety
/// `shape`, `chunkshape` and `blockshape` must hold `ndim` items; `smeta` must be writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_serialize_meta(
    ndim: i8,
    shape: *mut i64,
    chunkshape: *const i32,
    blockshape: *const i32,
    smeta: *mut *mut u8,
) -> i32 {
    let mut len = 0;
    let rc = boundary("caterva_serialize_meta", || {
        let n = checked_ndim(ndim)?;
        // SAFETY: caller's contract.
        let (s, c, b) = unsafe {
            (slice(shape, n, "shape")?, slice(chunkshape, n, "chunkshape")?, slice(blockshape, n, "blockshape")?)
        };
        let out = out_ptr(smeta, "smeta")?;
        let bytes = meta::encode_caterva(s, c, b)?;
        let p = malloc_copy(&bytes)?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = p };
        len = bytes.len() as i32;
        Ok(CATERVA_SUCCEED)
    });
    if rc == CATERVA_SUCCEED {
        len
    } else {
        -rc
    }
}

/// Decode a `caterva` metalayer of `smeta_len` bytes. Returns the bytes read,
/// or a negative `CATERVA_ERR_*` code (outputs untouched).
///
/// # Safety
/// `smeta` must hold `smeta_len` bytes; the outputs must hold 8 items each.
#[no_mangle]
pub unsafe extern "C" fn caterva_deserialize_meta(
    smeta: *mut u8,
    smeta_len: i32,
    ndim: *mut i8,
    shape: *mut i64,
    chunkshape: *mut i32,
    blockshape: *mut i32,
) -> i32 {
    let mut used = 0;
    let rc = boundary("caterva_deserialize_meta", || {
        // SAFETY: caller's contract.
        let bytes = unsafe { super::bytes(smeta, i64::from(smeta_len), "smeta") }?;
        let outs = (
            out_ptr(ndim, "ndim")?,
            out_ptr(shape, "shape")?,
            out_ptr(chunkshape, "chunkshape")?,
            out_ptr(blockshape, "blockshape")?,
        );
        let (m, n) = meta::decode(bytes)?;
        let d = m.shape.len();
        // SAFETY: outputs are non-NULL and hold CATERVA_MAX_DIM >= d items (caller's contract).
        unsafe {
            *outs.0 = d as i8;
            for i in 0..d {
                *outs.1.add(i) = m.shape[i];
                *outs.2.add(i) = m.chunkshape[i];
                *outs.3.add(i) = m.blockshape[i];
            }
        }
        used = n as i32;
        Ok(CATERVA_SUCCEED)
    });
    if rc == CATERVA_SUCCEED {
        used
    } else {
        -rc
    }
}

/// Longest dtype string `caterva_set_dtype` accepts on an array made with a
/// dtype no longer than this (the room every new array keeps).
pub const CATERVA_DTYPE_MAXLEN: usize = 64;
const _: () = assert!(CATERVA_DTYPE_MAXLEN == meta::DTYPE_RESERVE);

/// Record `dtype`, a NumPy dtype string such as `"<f8"` or `"<i2"` that
/// matches the item size, in the array's `b2nd` metalayer, so that
/// python-blosc2 and c-blosc2's b2nd see the right type (an extension: the
/// original library had no dtype). Without it arrays record the unsigned
/// integer of their item size (`|u1`, `<u2`, `<u4`, `<u8`) or raw bytes (`|V<n>`).
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// # Safety
/// `dtype` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn caterva_set_dtype(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    dtype: *const c_char,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        with_array("caterva_set_dtype", ctx, array, |a| {
            let d = string(dtype, "dtype")?;
            a.array.set_dtype(d)
        })
    }
}

/// Fetch the dtype string of the array's `b2nd` metalayer into `*dtype`
/// (malloc'ed, for the caller to `free`), or NULL when the array has no
/// `b2nd` metalayer (files written by the original library).
///
/// Only reads the array: several threads may call this on one array at once.
///
/// # Safety
/// `dtype` must point to writable memory.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_dtype(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    dtype: *mut *mut c_char,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        read_array("caterva_get_dtype", ctx, array, |a| {
            let out = out_ptr(dtype, "dtype")?;
            let value = match a.array.dtype() {
                Some(d) => malloc_cstr(&d)?,
                None => std::ptr::null_mut(),
            };
            *out = value;
            Ok(())
        })
    }
}
