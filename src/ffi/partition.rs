//! Proposing chunk and block shapes from C (beyond the original API; see
//! [`crate::propose_partitions`]).

use std::ffi::{c_char, c_int, c_void};

use super::{boundary, bytes, deref, deref_mut, malloc_cstr, CATERVA_MAX_DIM, CATERVA_SUCCEED};
use super::{caterva_config_t, caterva_params_t, caterva_storage_t};
use crate::error::{invalid, Result};
use crate::partition::{propose_partitions, Access, PartitionHints};
use crate::tune::{tune, Objective};

/// Access pattern for `caterva_propose_partitions`: none in particular (the
/// default of the Python package and the command line). For 3 or more axes
/// the first is a stack: blocks of about 16 KiB one item thin along it and
/// near-square across, chunks of about 2 MiB a few items thick; for 1 or 2
/// axes, near-cubic chunks and blocks.
pub const CATERVA_ACCESS_BALANCED: c_int = 0;
/// Access pattern: many small reads (single items, small boxes) at random
/// places (chunks of about 1 MiB, near-cubic blocks of about 16 KiB).
pub const CATERVA_ACCESS_SMALL_READS: c_int = 1;
/// Access pattern: whole-array or large contiguous reads and writes
/// (chunks of about 16 MiB, blocks of about 512 KiB spanning the last axes).
pub const CATERVA_ACCESS_SCANS: c_int = 2;
/// Access pattern: planes at a fixed index along one axis (the `axis`
/// argument): blocks one item thin along it, wide across it.
pub const CATERVA_ACCESS_PLANES: c_int = 3;

/// Propose a chunk shape and a block shape for an array of `params`
/// (itemsize, ndim, shape) read mostly as `access` says
/// (`CATERVA_ACCESS_*`; `axis` is the planes' axis for
/// `CATERVA_ACCESS_PLANES`, ignored otherwise), and write them into
/// `storage->chunkshape` and `storage->blockshape` (the first `ndim`
/// entries; nothing else in `storage` changes). `chunk_bytes` and
/// `block_bytes` override the pattern's target sizes (uncompressed bytes;
/// 0 keeps the pattern's), and `nthreads` is the number of threads that will
/// read the array (0: the machine's CPUs): an array smaller than `nthreads`
/// chunks gets smaller chunks. The shapes are valid for `params` (an axis of
/// length 0 gets a real chunk length, so the array can grow along it), and
/// evened out to need little padding.
///
/// Returns `CATERVA_ERR_INVALID_ARGUMENT` for an itemsize of 0, an ndim
/// outside 0..=8, a negative length, an unknown `access`, an `axis` that is
/// not an axis of the array, a negative size or thread count, or an array
/// too large for any partition; `CATERVA_ERR_NULL_POINTER` when `params`
/// or `storage` is NULL. `storage` is written only on success.
///
/// # Safety
/// `params` must be NULL or point to a valid `caterva_params_t`; `storage`
/// NULL or to a writable `caterva_storage_t`.
#[no_mangle]
pub unsafe extern "C" fn caterva_propose_partitions(
    params: *const caterva_params_t,
    access: c_int,
    axis: c_int,
    chunk_bytes: i64,
    block_bytes: i64,
    nthreads: c_int,
    storage: *mut caterva_storage_t,
) -> c_int {
    boundary("caterva_propose_partitions", || {
        // SAFETY: caller's contract.
        let params = unsafe { deref(params, "params") }?;
        // SAFETY: caller's contract.
        let storage = unsafe { deref_mut(storage, "storage") }?;
        let ndim = ndim_of(params)?;
        let access = match access {
            CATERVA_ACCESS_BALANCED => Access::Balanced,
            CATERVA_ACCESS_SMALL_READS => Access::SmallReads,
            CATERVA_ACCESS_SCANS => Access::Scans,
            CATERVA_ACCESS_PLANES => match usize::try_from(axis) {
                Ok(axis) => Access::Planes { axis },
                Err(_) => invalid!("the planes' axis {axis} is negative"),
            },
            other => invalid!("access {other} is not a CATERVA_ACCESS_* value"),
        };
        let hints = PartitionHints {
            access,
            chunk_bytes: size(chunk_bytes, "chunk_bytes")?,
            block_bytes: size(block_bytes, "block_bytes")?,
            threads: size(nthreads.into(), "nthreads")?,
        };
        let p = propose_partitions(params.itemsize.into(), &params.shape[..ndim], &hints)?;
        storage.chunkshape[..ndim].copy_from_slice(&p.chunkshape);
        storage.blockshape[..ndim].copy_from_slice(&p.blockshape);
        Ok(CATERVA_SUCCEED)
    })
}

/// The number of axes of `params`, checked.
fn ndim_of(params: &caterva_params_t) -> Result<usize> {
    match usize::try_from(params.ndim).ok().filter(|&n| n <= CATERVA_MAX_DIM) {
        Some(ndim) => Ok(ndim),
        None => invalid!("ndim {} is not in 0..={CATERVA_MAX_DIM}", params.ndim),
    }
}

/// Objective of `caterva_tune`: the fastest reads and writes (LZ4, 16 KiB
/// blocks, the filter that compresses best).
pub const CATERVA_TUNE_SPEED: c_int = 0;
/// Objective of `caterva_tune`: size and speed together (the Python
/// package's default).
pub const CATERVA_TUNE_BALANCED: c_int = 1;
/// Objective of `caterva_tune`: the smallest file.
pub const CATERVA_TUNE_SIZE: c_int = 2;

/// Choose the compression and the chunk and block shapes of an array of
/// `params` from its data, as the Python package does by default (beyond
/// the original API; see `caterva::tune`): `data` holds `nbytes` bytes of
/// its items in C order (all of them, or the first ones). A sample of at
/// most 256 KiB is compressed with LZ4 5, BloscLZ 5, ZSTD 1 (and ZSTD 5 for
/// `CATERVA_TUNE_SIZE`), each after a byte shuffle, a bit shuffle, or a
/// delta and a byte shuffle, at a few block sizes, and the best by
/// `objective` (`CATERVA_TUNE_*`) is written into `cfg`'s compression
/// fields (those `caterva_propose_config` writes) and `storage->chunkshape`
/// and `storage->blockshape` (as `caterva_propose_partitions` with
/// `CATERVA_ACCESS_BALANCED` and `nthreads`, 0: the machine's CPUs). The
/// choice is deterministic (sizes are measured, costs are fixed) and takes
/// a few milliseconds. Arrays with less than 32 MiB of data get the
/// default proposal (the tuning would cost more than 5% of their write).
/// `CATERVA_CONFIG_DEFAULTS` itself stays caterva 0.5's ZSTD 5, which
/// writes a float field about 9 times slower than b2nd's BloscLZ default
/// at one thread: call this (or `caterva_propose_config`) for speed.
///
/// With `report` non-NULL, `*report` receives what was chosen and why, one
/// line (malloc'ed, for the caller to `free`); programs may keep it in the
/// array's vlmetalayer `caterva.tuning` as the Python package does.
///
/// Returns `CATERVA_ERR_INVALID_ARGUMENT` for a negative `nbytes`, one that
/// is not a whole number of items, an unknown objective, or what
/// `caterva_propose_partitions` refuses; `CATERVA_ERR_NULL_POINTER` when
/// `data`, `params`, `cfg` or `storage` is NULL. Nothing is written on failure.
///
/// # Safety
/// `data` must point to `nbytes` readable bytes; `params` to a valid
/// `caterva_params_t`; `cfg` and `storage` to writable structs; `report`
/// NULL or to a writable pointer.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn caterva_tune(
    data: *const c_void,
    nbytes: i64,
    params: *const caterva_params_t,
    objective: c_int,
    nthreads: c_int,
    cfg: *mut caterva_config_t,
    storage: *mut caterva_storage_t,
    report: *mut *mut c_char,
) -> c_int {
    boundary("caterva_tune", || {
        // SAFETY: caller's contract.
        let data = unsafe { bytes(data.cast::<u8>(), nbytes, "data") }?;
        // SAFETY: caller's contract.
        let params = unsafe { deref(params, "params") }?;
        // SAFETY: caller's contract.
        let cfg = unsafe { deref_mut(cfg, "cfg") }?;
        // SAFETY: caller's contract.
        let storage = unsafe { deref_mut(storage, "storage") }?;
        let ndim = ndim_of(params)?;
        let objective = match objective {
            CATERVA_TUNE_SPEED => Objective::Speed,
            CATERVA_TUNE_BALANCED => Objective::Balanced,
            CATERVA_TUNE_SIZE => Objective::Size,
            other => invalid!("objective {other} is not a CATERVA_TUNE_* value"),
        };
        let hints = PartitionHints { threads: size(nthreads.into(), "nthreads")?, ..PartitionHints::default() };
        let t = tune(data, params.itemsize.into(), &params.shape[..ndim], &hints, objective)?;
        let text = if report.is_null() { None } else { Some(malloc_cstr(&t.report())?) };
        set_compression(cfg, &t.cparams);
        storage.chunkshape[..ndim].copy_from_slice(&t.partitions.chunkshape);
        storage.blockshape[..ndim].copy_from_slice(&t.partitions.blockshape);
        if let Some(text) = text {
            // SAFETY: caller's contract: a non-NULL `report` is writable.
            unsafe { *report = text };
        }
        Ok(CATERVA_SUCCEED)
    })
}

/// A C size argument: 0 is "the default" (`None`), negative is an error.
fn size(v: i64, what: &str) -> Result<Option<usize>> {
    match v {
        0 => Ok(None),
        v => match usize::try_from(v) {
            Ok(n) => Ok(Some(n)),
            Err(_) => invalid!("{what} {v} is negative"),
        },
    }
}

/// Set the compression of `cfg` to the library's proposal for arrays whose
/// caller names none (`caterva::propose_cparams`: LZ4 at level 5 after a
/// byte shuffle, automatic split, no dictionary): `compcodec`, `compmeta`,
/// `complevel`, `splitmode`, `usedict`, `filters` and `filtersmeta`. The
/// allocator, thread count and prefilter are left as they are.
/// `CATERVA_CONFIG_DEFAULTS` keeps caterva 0.5's ZSTD 5; together with
/// `caterva_propose_partitions(..., CATERVA_ACCESS_BALANCED, ...)` this is
/// what the Python package and the command line use by default.
///
/// Returns `CATERVA_ERR_NULL_POINTER` when `cfg` is NULL (nothing is
/// written then).
///
/// # Safety
/// `cfg` must be NULL or point to a writable `caterva_config_t`.
#[no_mangle]
pub unsafe extern "C" fn caterva_propose_config(cfg: *mut caterva_config_t) -> c_int {
    boundary("caterva_propose_config", || {
        // SAFETY: caller's contract.
        let cfg = unsafe { deref_mut(cfg, "cfg") }?;
        set_compression(cfg, &crate::partition::propose_cparams());
        Ok(CATERVA_SUCCEED)
    })
}

/// Write `cp` into `cfg`'s compression fields (the allocator, thread count
/// and prefilter are left as they are).
fn set_compression(cfg: &mut caterva_config_t, cp: &crate::CParams) {
    cfg.compcodec = cp.codec.id();
    cfg.compmeta = cp.codec_meta;
    cfg.complevel = cp.clevel;
    cfg.splitmode = cp.splitmode.id();
    cfg.usedict = c_int::from(cp.use_dict);
    cfg.filters = cp.filters.map(crate::Filter::id);
    cfg.filtersmeta = cp.filters_meta;
}
