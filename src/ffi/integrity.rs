//! Per-chunk checksums from C (beyond the original API; see `store/checksum.rs`).

use std::ffi::{c_char, c_int};

use super::array_calls::{read_array, with_array};
use super::{boundary, CtxBox, CATERVA_SUCCEED};
use super::{caterva_array_t, caterva_ctx_t};
use crate::context::{Config, Context};

/// Ask (`enable` true) or stop asking (false) for per-chunk checksums in the
/// arrays created from now on with `ctx`: from_buffer, zeros, full, copy,
/// get_slice… Each array then records the XXH3-64 hash of every compressed
/// chunk in its `caterva.xxh3` vlmetalayer, checks it on every read of the
/// chunk (a mismatch is `CATERVA_ERR_BLOSC_FAILED`, never data) and keeps it
/// current on every write, with a record of the metadata and a marker in
/// the header (metalayer `caterva.xxh3`), so that damage to the table, its
/// name or the metadata is refused rather than read unchecked. Arrays that
/// already keep checksums always do. Other readers ignore both.
///
/// Not thread-safe with respect to other calls using `ctx`.
///
/// # Safety
/// `ctx` must be NULL or a live context from `caterva_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn caterva_ctx_set_checksums(ctx: *mut caterva_ctx_t, enable: bool) -> c_int {
    boundary("caterva_ctx_set_checksums", || {
        // SAFETY: caller's contract; `get` checks that ctx is a live context.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: ctx is a live CtxBox (checked above) and, by the caller's
        // contract, nobody else uses it during the call.
        let b = unsafe { &mut *ctx.cast::<CtxBox>() };
        if b.ctx.config().checksums != enable {
            b.ctx = Context::with_prefilter(
                Config { checksums: enable, ..*b.ctx.config() },
                b.ctx.compression().prefilter,
            )?;
        }
        Ok(CATERVA_SUCCEED)
    })
}

/// Require (`require` true) or stop requiring (false) integrity of the
/// arrays opened or wrapped with `ctx` from now on: `caterva_open`,
/// `caterva_from_cframe`, `caterva_from_schunk`… refuse an array that keeps
/// no checksum table with `CATERVA_ERR_BLOSC_FAILED` ("the array keeps no
/// checksum table, and the context requires checksums"; see
/// `caterva_last_error`). Arrays created with `ctx` while it requires
/// checksums keep them, as with `caterva_ctx_set_checksums`. (An array
/// written with checksums whose table, header marker or recorded metadata is
/// damaged is refused whatever this setting.)
///
/// Not thread-safe with respect to other calls using `ctx`.
///
/// # Safety
/// `ctx` must be NULL or a live context from `caterva_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn caterva_ctx_require_checksums(ctx: *mut caterva_ctx_t, require: bool) -> c_int {
    boundary("caterva_ctx_require_checksums", || {
        // SAFETY: caller's contract; `get` checks that ctx is a live context.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: ctx is a live CtxBox (checked above) and, by the caller's
        // contract, nobody else uses it during the call.
        let b = unsafe { &mut *ctx.cast::<CtxBox>() };
        if b.ctx.config().require_checksums != require {
            b.ctx = Context::with_prefilter(
                Config { require_checksums: require, ..*b.ctx.config() },
                b.ctx.compression().prefilter,
            )?;
        }
        Ok(CATERVA_SUCCEED)
    })
}

/// Start keeping per-chunk checksums in an existing array: every chunk is
/// hashed now, the metadata recorded and the table stored with the array.
/// Nothing changes if it already keeps them (a table of the older version 1
/// is checked, then upgraded).
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; nobody else may use `array` during the call.
#[no_mangle]
pub unsafe extern "C" fn caterva_enable_checksums(ctx: *mut caterva_ctx_t, array: *mut caterva_array_t) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe { with_array("caterva_enable_checksums", ctx, array, |a| a.array.enable_checksums()) }
}

/// Set `*enabled` to whether `array` keeps per-chunk checksums.
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; `enabled` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_has_checksums(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    enabled: *mut bool,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        read_array("caterva_has_checksums", ctx, array, |a| {
            let out = super::out_ptr(enabled, "enabled")?;
            *out = a.array.has_checksums();
            Ok(())
        })
    }
}

/// Remove what writers killed mid-write left of `array` on an object store
/// (beyond the original API): the chunk objects of its sparse frame that
/// its index does not name and that are at least `older_than_seconds` old
/// (a writer names its new chunk objects moments after it makes them, so
/// 3600 is safe). `*removed` is set to how many went. Elsewhere (local
/// files, contiguous frames, memory) there is nothing to remove: 0.
/// `CATERVA_ERR_INVALID_STORAGE` on a web server (nothing is written there).
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; `removed` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_remove_orphans(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    older_than_seconds: i64,
    removed: *mut i64,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        read_array("caterva_remove_orphans", ctx, array, |a| {
            let out = super::out_ptr(removed, "removed")?;
            let secs = u64::try_from(older_than_seconds).map_err(|_| {
                crate::Error::InvalidArgument(format!("older_than_seconds is {older_than_seconds}, below 0"))
            })?;
            let n = a.array.remove_orphans(std::time::Duration::from_secs(secs))?;
            *out = i64::try_from(n).unwrap_or(i64::MAX);
            Ok(())
        })
    }
}

/// Use the storage options `options` (beyond the original API) for every
/// URL under `url_prefix` (`s3://bucket/`, `s3://bucket/dir/a.b2nd`,
/// `https://host/`) in this process, over the AWS environment, until set
/// again; the longest prefix that matches a URL wins. `options` is
/// `key=value` pairs separated by `;` (an empty string removes the
/// prefix's options): `endpoint_url`, `region`, `key`, `secret`, `token`,
/// `profile`, `anon` (`true`: unsigned requests, public buckets),
/// `allow_http`, `virtual_hosted_style`, `retries`, `retry_timeout`,
/// `timeout` and `deadline` (seconds), `writers` (`many` or `single`),
/// `cache` (a directory: a read cache on this machine, shared by handles and
/// processes; `off`: none) and `cache_size` (its budget: bytes, `512M`,
/// `2G`), or any `aws_*` setting of the S3 client. An unknown key or a value the option does
/// not take is `CATERVA_ERR_INVALID_ARGUMENT`, and nothing is set.
///
/// # Safety
/// `url_prefix` and `options` must be NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn caterva_set_storage_options(url_prefix: *const c_char, options: *const c_char) -> c_int {
    boundary("caterva_set_storage_options", || {
        // SAFETY: caller's contract.
        let prefix = unsafe { super::string(url_prefix, "url_prefix") }?;
        // SAFETY: caller's contract.
        let options = crate::StorageOptions::parse(unsafe { super::string(options, "options") }?)?;
        crate::set_storage_options(prefix, options)?;
        Ok(CATERVA_SUCCEED)
    })
}
