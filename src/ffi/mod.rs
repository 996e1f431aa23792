//! The caterva 0.5 C ABI over the Rust core.
//!
//! Conventions, for every exported function:
//! - it runs inside a panic boundary (`boundary`); a panic becomes
//!   `CATERVA_ERR_BLOSC_FAILED` instead of unwinding into C;
//! - every pointer is checked: NULL gives `CATERVA_ERR_NULL_POINTER`;
//! - outputs are written only on success;
//! - on failure, `function: reason` becomes the calling thread's last error
//!   (`caterva_last_error`, see `last_error`), and is also printed on stderr
//!   when the environment variable `CATERVA_TRACE` is set;
//! - handles are checked against the registry of live ones (`handles`): a
//!   freed context or array (a double free, a use after free) or one the
//!   caller made itself gives `CATERVA_ERR_INVALID_ARGUMENT`, never a crash.
//!
//! Threads: any number of threads may read one array at once
//! (`caterva_to_buffer`, `caterva_get_slice_buffer`,
//! `caterva_get_orthogonal_selection`, `caterva_get_slice`, `caterva_copy`,
//! `caterva_save`, `caterva_to_cframe`, the metalayer getters). A call that
//! changes an array (the setters, `caterva_resize`, `caterva_insert`,
//! `caterva_append`, `caterva_delete`, the squeezes, `caterva_set_dtype`,
//! the metalayer adders and updaters) and `caterva_free` need exclusive
//! access: no other call on that array may run meanwhile. A context may be
//! used by many threads at once, except by `caterva_ctx_free`.
//!
//! Fork: contexts and arrays made before a `fork()` keep working in the
//! child and in the parent (see `crate::fork`), even when other threads of
//! the parent were reading at the fork; an array another thread was
//! *changing* at the fork is, in the child, in whatever state it had.

#![allow(non_camel_case_types, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result};

mod array;
mod array_calls;
mod blz;
mod chunks;
mod concat;
mod durability;
mod handles;
mod integrity;
mod last_error;
mod meta;
mod offset;
mod partition;
mod reduce;
mod reshape;
mod slots;
mod types;

#[cfg(test)]
use last_error::{caterva_clear_last_error, caterva_last_error};
pub(crate) use types::*;

/// Major version of the caterva API this library implements.
#[allow(dead_code)] // reaches C through the header only
pub const CATERVA_VERSION_MAJOR: c_int = 0;
/// Minor version of the caterva API this library implements.
#[allow(dead_code)] // reaches C through the header only
pub const CATERVA_VERSION_MINOR: c_int = 5;
/// Release of the caterva API this library implements.
#[allow(dead_code)] // reaches C through the header only
pub const CATERVA_VERSION_RELEASE: c_int = 1;

/// Version of the `caterva` metalayer written.
#[allow(dead_code)] // reaches C through the header only
pub const CATERVA_METALAYER_VERSION: c_int = 0;
/// Maximum number of dimensions.
pub const CATERVA_MAX_DIM: usize = 8;
/// Maximum number of user metalayers (`BLOSC2_MAX_METALAYERS - 1`).
pub const CATERVA_MAX_METALAYERS: usize = 15;

/// Success.
pub const CATERVA_SUCCEED: c_int = 0;
/// An argument is invalid (shape, partition, slice, buffer size, name…).
pub const CATERVA_ERR_INVALID_ARGUMENT: c_int = 1;
/// c-blosc2 failed, or an I/O error occurred.
pub const CATERVA_ERR_BLOSC_FAILED: c_int = 2;
/// Kept for compatibility; never returned.
#[allow(dead_code)] // reaches C through the header only
pub const CATERVA_ERR_CONTAINER_FILLED: c_int = 3;
/// The storage is invalid (bad path, something else in the way).
pub const CATERVA_ERR_INVALID_STORAGE: c_int = 4;
/// A required pointer is NULL.
pub const CATERVA_ERR_NULL_POINTER: c_int = 5;
/// An index is invalid (same value as `CATERVA_ERR_NULL_POINTER`, as in the original).
pub const CATERVA_ERR_INVALID_INDEX: c_int = 5;
/// Another handle or process changed the array since this handle opened,
/// wrote or refreshed it, and what the handle knows of it is out of date:
/// nothing was read or written. Call `caterva_refresh` and try again (not
/// in the original, which had no such check; never a sign of damage).
pub const CATERVA_ERR_CHANGED: c_int = 6;

/// Whether `CATERVA_TRACE` is set (read on every error, so it can be toggled at run time).
fn tracing() -> bool {
    std::env::var_os("CATERVA_TRACE").is_some()
}

/// Run `f` behind a panic boundary and turn its outcome into a C return value.
///
/// Every failure, an `Err` or a caught panic, is recorded as the thread's
/// last error (`caterva_last_error`) and traced under `CATERVA_TRACE`, as
/// `func: reason`. Every exported function that can fail goes through here.
pub(crate) fn boundary(func: &str, f: impl FnOnce() -> Result<c_int>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(rc)) => rc,
        Ok(Err(e)) => {
            last_error::record(func, format_args!("{e}"));
            code(&e)
        }
        Err(p) => {
            let why = p
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("unknown panic");
            last_error::record(func, format_args!("internal error (panic): {why}"));
            CATERVA_ERR_BLOSC_FAILED
        }
    }
}

/// `p` as a shared reference, or a NULL-pointer error naming `what`.
///
/// # Safety
/// A non-NULL `p` must point to a valid `T` for `'a`.
pub(crate) unsafe fn deref<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: as the caller guarantees.
    unsafe { p.as_ref() }.ok_or_else(|| Error::NullPointer(format!("{what} is NULL")))
}

/// `p` as a mutable reference, or a NULL-pointer error naming `what`.
///
/// # Safety
/// A non-NULL `p` must point to a valid, unaliased `T` for `'a`.
pub(crate) unsafe fn deref_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as the caller guarantees.
    unsafe { p.as_mut() }.ok_or_else(|| Error::NullPointer(format!("{what} is NULL")))
}

/// Check that an output pointer is non-NULL (it is written later, on success).
pub(crate) fn out_ptr<T>(p: *mut T, what: &str) -> Result<*mut T> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    Ok(p)
}

/// `n` items at `p`; NULL is accepted only when `n == 0`.
///
/// # Safety
/// A non-NULL `p` must point to `n` valid items for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    // SAFETY: as the caller guarantees.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A byte buffer of `len` bytes (`len` from C, checked to be non-negative).
///
/// # Safety
/// A non-NULL `p` must point to `len` valid bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const u8, len: i64, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    let n = usize::try_from(len).map_err(|_| Error::InvalidArgument(format!("{what} size {len} is negative")))?;
    // SAFETY: as the caller guarantees.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A mutable byte buffer of `len` bytes.
///
/// # Safety
/// A non-NULL `p` must point to `len` valid, unaliased bytes for `'a`.
pub(crate) unsafe fn bytes_mut<'a>(p: *mut u8, len: i64, what: &str) -> Result<&'a mut [u8]> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    let n = usize::try_from(len).map_err(|_| Error::InvalidArgument(format!("{what} size {len} is negative")))?;
    // SAFETY: as the caller guarantees.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A C string as UTF-8.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string.
pub(crate) unsafe fn string<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    // SAFETY: as the caller guarantees.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// Copy `data` into a new `malloc` buffer the caller frees with `free()`.
pub(crate) fn malloc_copy(data: &[u8]) -> Result<*mut u8> {
    // SAFETY: malloc of at least one byte; NULL is handled.
    let p = unsafe { libc::malloc(data.len().max(1)) }.cast::<u8>();
    if p.is_null() {
        return Err(Error::blosc("allocating memory", None));
    }
    // SAFETY: p has data.len() writable bytes and does not overlap data.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    Ok(p)
}

/// Copy `s` into a new NUL-terminated `malloc` string.
pub(crate) fn malloc_cstr(s: &str) -> Result<*mut c_char> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    malloc_copy(&v).map(<*mut u8>::cast)
}

/// The caterva 0.5 code (`CATERVA_ERR_*`) of an error: the one place where
/// the core's errors meet the C ABI's codes (caterva 0.5's five and `CATERVA_ERR_CHANGED`).
pub(crate) fn code(e: &Error) -> c_int {
    use crate::error::ErrorKind as K;
    match e.kind() {
        K::InvalidArgument | K::InvalidFormat | K::Unsupported => CATERVA_ERR_INVALID_ARGUMENT,
        K::InvalidStorage | K::NotFound => CATERVA_ERR_INVALID_STORAGE,
        K::NullPointer => CATERVA_ERR_NULL_POINTER,
        K::InvalidIndex => CATERVA_ERR_INVALID_INDEX,
        K::Changed => CATERVA_ERR_CHANGED,
        // Blosc, Io, Corrupt, and any class added later.
        _ => CATERVA_ERR_BLOSC_FAILED,
    }
}

#[cfg(test)]
mod tests {
    /// The calling thread's last error as a Rust string.
    fn last() -> String {
        // SAFETY: caterva_last_error returns a valid NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(super::caterva_last_error()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn panics_become_error_codes() {
        std::thread::spawn(|| {
            let rc = super::boundary("test", || panic!("boom"));
            assert_eq!(rc, super::CATERVA_ERR_BLOSC_FAILED);
            assert_eq!(last(), "test: internal error (panic): boom");
            let rc = super::boundary("test2", || std::panic::panic_any(42_u8));
            assert_eq!(rc, super::CATERVA_ERR_BLOSC_FAILED);
            assert_eq!(last(), "test2: internal error (panic): unknown panic");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn errors_are_recorded_and_successes_keep_them() {
        std::thread::spawn(|| {
            assert_eq!(last(), "");
            let e = crate::Error::storage(Some("/x"), "'/x' does not exist");
            let rc = super::boundary("caterva_open", || Err(e));
            assert_eq!(rc, super::CATERVA_ERR_INVALID_STORAGE);
            assert_eq!(last(), "caterva_open: invalid storage: '/x' does not exist");
            let p = super::caterva_last_error();
            assert_eq!(super::boundary("caterva_free", || Ok(super::CATERVA_SUCCEED)), super::CATERVA_SUCCEED);
            assert_eq!(super::caterva_last_error(), p);
            assert_eq!(last(), "caterva_open: invalid storage: '/x' does not exist");
            let rc = super::boundary("caterva_x", || Err(crate::Error::InvalidArgument("a\0b".into())));
            assert_eq!(rc, super::CATERVA_ERR_INVALID_ARGUMENT);
            assert_eq!(last(), "caterva_x: invalid argument: a\\0b");
            super::caterva_clear_last_error();
            assert_eq!(last(), "");
        })
        .join()
        .unwrap();
    }
}
