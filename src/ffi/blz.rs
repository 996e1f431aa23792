//! The C functions of the BLZ import and export (extensions): bcolz carray
//! directories, ctable columns and Bloscpack files into caterva arrays, and
//! arrays out to carrays and Bloscpack files (`crate::blz`).

use std::ffi::{c_char, c_int};
use std::path::Path;

use super::array_calls::read_array;
use super::types::{caterva_array_t, caterva_ctx_t, caterva_storage_t, storage_from_c, ArrayBox, CtxBox};
use super::{boundary, deref, out_ptr, string, CATERVA_SUCCEED};
use crate::blz::{self, Checksum, ExportOptions};
use crate::error::{Error, Result};
use crate::StorageParams;

/// How `caterva_export_blz` compresses and writes (fill it with
/// `caterva_blz_options_defaults`, then change what you need).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct caterva_blz_options_t {
    /// Codec: "blosclz", "lz4", "lz4hc", "zlib" or "zstd" (NULL: "blosclz").
    pub cname: *const c_char,
    /// Compression level, 0..=9.
    pub clevel: u8,
    /// 0 no shuffle, 1 byte shuffle, 2 bit shuffle.
    pub shuffle: u8,
    /// Checksum after every chunk of a Bloscpack file, `CATERVA_BLZ_CHECKSUM_*`
    /// (bcolz carray chunk files have no room for one).
    pub checksum: u8,
    /// Write one Bloscpack file (`.blp`) instead of a bcolz carray directory.
    pub bloscpack: bool,
    /// Rows per chunk (0: the array's chunk length along its first axis).
    pub chunklen: i64,
}

/// No checksum.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_NONE: u8 = 0;
/// Adler-32.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_ADLER32: u8 = 1;
/// CRC-32.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_CRC32: u8 = 2;
/// MD5.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_MD5: u8 = 3;
/// SHA-1.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_SHA1: u8 = 4;
/// SHA-224.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_SHA224: u8 = 5;
/// SHA-256.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_SHA256: u8 = 6;
/// SHA-384.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_SHA384: u8 = 7;
/// SHA-512.
#[allow(dead_code)] // reaches C through the header only (the ids of Checksum::ALL)
pub const CATERVA_BLZ_CHECKSUM_SHA512: u8 = 8;

/// Fill `options` with the defaults: bcolz's (blosclz, level 5, byte
/// shuffle), the array's chunk length, a carray directory, and adler32 for
/// Bloscpack files.
///
/// # Safety
/// `options` must be NULL or point to writable memory for the struct.
#[no_mangle]
pub unsafe extern "C" fn caterva_blz_options_defaults(options: *mut caterva_blz_options_t) -> c_int {
    boundary("caterva_blz_options_defaults", || {
        let out = out_ptr(options, "options")?;
        let d = ExportOptions::default();
        // SAFETY: out is non-NULL and writable (caller's contract).
        unsafe {
            *out = caterva_blz_options_t {
                cname: std::ptr::null(),
                clevel: d.clevel,
                shuffle: d.shuffle,
                checksum: d.checksum.id(),
                bloscpack: false,
                chunklen: 0,
            }
        };
        Ok(CATERVA_SUCCEED)
    })
}

/// The storage of a C caller for an array of `ndim` axes: all-zero chunk or
/// block shapes ask for the defaults (`blz::default_partitions`).
///
/// # Safety
/// As `storage_from_c`.
unsafe fn storage_for(storage: *mut caterva_storage_t, ndim: usize) -> Result<StorageParams> {
    // SAFETY: caller's contract.
    let mut s = unsafe { storage_from_c(deref(storage, "storage")?, ndim) }?;
    if s.chunkshape.iter().all(|&c| c == 0) {
        s.chunkshape.clear();
    }
    if s.blockshape.iter().all(|&b| b == 0) {
        s.blockshape.clear();
    }
    Ok(s)
}

/// Shared body of the imports.
///
/// # Safety
/// As those functions.
unsafe fn import_with(
    func: &str,
    ctx: *mut caterva_ctx_t,
    path: *const c_char,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
    shape: impl FnOnce(&Path) -> Result<Vec<i64>>,
    build: impl FnOnce(&crate::Context, &Path, &StorageParams) -> Result<crate::Array>,
) -> c_int {
    boundary(func, || {
        // SAFETY: caller's contract.
        let c = unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let path = Path::new(unsafe { string(path, "path") }?);
        let out = out_ptr(array, "array")?;
        let ndim = shape(path)?.len();
        // SAFETY: caller's contract.
        let s = unsafe { storage_for(storage, ndim) }?;
        let arr = build(&c.ctx, path, &s)?;
        let raw = ArrayBox::into_raw(arr, c.config())?;
        // SAFETY: out is non-NULL and writable.
        unsafe { *out = raw };
        Ok(CATERVA_SUCCEED)
    })
}

/// Import a bcolz carray directory or a Bloscpack file (`.blp`) into a new
/// array with `storage` (all-zero chunk and block shapes take the
/// defaults `caterva_propose_partitions` gives for the array's shape, blocks
/// alone inside given chunks; `urlpath` NULL keeps it in memory). The dtype goes
/// into the `b2nd` metalayer (`caterva_get_dtype`), the carray's attributes
/// and `dflt` into msgpack vlmetalayers (`dflt` as `bcolz_dflt`). Streamed:
/// memory holds a few chunks whatever the size. A damaged source gives an
/// error (`CATERVA_ERR_INVALID_STORAGE` for something that is not BLZ,
/// `CATERVA_ERR_BLOSC_FAILED` for damage, a failed checksum included) and
/// leaves nothing at `urlpath`. A ctable needs `caterva_import_blz_column`.
///
/// # Safety
/// `path` must be a NUL-terminated string, `storage` as for `caterva_empty`.
#[no_mangle]
pub unsafe extern "C" fn caterva_import_blz(
    ctx: *mut caterva_ctx_t,
    path: *const c_char,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        import_with("caterva_import_blz", ctx, path, storage, array, blz::source_shape, |c, p, s| {
            blz::import(c, p, s, &mut |_, _| {})
        })
    }
}

/// Import column `column` of a bcolz ctable directory, as `caterva_import_blz`.
///
/// # Safety
/// `path` and `column` must be NUL-terminated strings, `storage` as for `caterva_empty`.
#[no_mangle]
pub unsafe extern "C" fn caterva_import_blz_column(
    ctx: *mut caterva_ctx_t,
    path: *const c_char,
    column: *const c_char,
    storage: *mut caterva_storage_t,
    array: *mut *mut caterva_array_t,
) -> c_int {
    // A column may be n-d: the storage holds one entry per axis of it.
    let shape = |p: &Path| {
        // SAFETY: caller's contract.
        let col = unsafe { string(column, "column") }?;
        let t = blz::carray::CTable::open(p)?;
        Ok(t.columns.iter().find(|(n, _)| n == col).map_or_else(|| vec![0i64], |(_, c)| c.shape.clone()))
    };
    // SAFETY: forwarded caller's contract.
    unsafe {
        import_with("caterva_import_blz_column", ctx, path, storage, array, shape, |c, p, s| {
            // SAFETY: caller's contract.
            let col = string(column, "column")?;
            blz::import_column(c, p, col, s, &mut |_, _| {})
        })
    }
}

/// Export `array` (1 to 8 dimensions, chunks cut along its first axis) to
/// a bcolz carray directory at `path`, or with `options->bloscpack` to a
/// Bloscpack file, that bcolz (bcolz-zipline) and bloscpack read back
/// exactly. The dtype, the user vlmetalayers (as attributes) and a kept
/// `dflt` go with it. `path` must not exist; the export is written beside
/// it and renamed into place, so a failure leaves nothing. `options` NULL
/// means the defaults (`caterva_blz_options_defaults`).
///
/// Only reads the array.
///
/// # Safety
/// `path` must be a NUL-terminated string, `options` NULL or valid (its
/// `cname` NULL or a NUL-terminated string).
#[no_mangle]
pub unsafe extern "C" fn caterva_export_blz(
    ctx: *mut caterva_ctx_t,
    array: *const caterva_array_t,
    path: *const c_char,
    options: *const caterva_blz_options_t,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        read_array("caterva_export_blz", ctx, array, |a| {
            // SAFETY: caller's contract.
            let path = Path::new(string(path, "path")?);
            let mut o = ExportOptions::default();
            let mut bloscpack = false;
            if !options.is_null() {
                // SAFETY: a non-NULL options is valid (caller's contract).
                let c = deref(options, "options")?;
                if !c.cname.is_null() {
                    // SAFETY: as above.
                    o.cname = string(c.cname, "options.cname")?.to_owned();
                }
                o.clevel = c.clevel;
                o.shuffle = c.shuffle;
                o.chunklen = c.chunklen;
                if o.chunklen < 0 {
                    return Err(Error::InvalidArgument(format!("options.chunklen {} is negative", o.chunklen)));
                }
                o.checksum = Checksum::from_id(c.checksum)
                    .ok_or_else(|| Error::InvalidArgument(format!("options.checksum {} is not 0..=8", c.checksum)))?;
                // Read as a byte, as C callers may leave any value in a bool.
                // SAFETY: the field is one readable byte.
                bloscpack = std::ptr::addr_of!(c.bloscpack).cast::<u8>().read() != 0;
            }
            if bloscpack {
                blz::export_bloscpack(&a.array, path, &o, &mut |_, _| {})
            } else {
                blz::export_carray(&a.array, path, &o, &mut |_, _| {})
            }
        })
    }
}
