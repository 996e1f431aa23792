//! Proposing chunk and block shapes from C (beyond the original API; see
//! [`crate::propose_partitions`]).

use std::ffi::c_int;

use super::{boundary, deref, deref_mut, CATERVA_MAX_DIM, CATERVA_SUCCEED};
use super::{caterva_config_t, caterva_params_t, caterva_storage_t};
use crate::error::{invalid, Result};
use crate::partition::{propose_partitions, Access, PartitionHints};

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
        let ndim = usize::try_from(params.ndim).ok().filter(|&n| n <= CATERVA_MAX_DIM);
        let Some(ndim) = ndim else {
            invalid!("ndim {} is not in 0..={CATERVA_MAX_DIM}", params.ndim);
        };
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
        let cp = crate::partition::propose_cparams();
        cfg.compcodec = cp.codec.id();
        cfg.compmeta = cp.codec_meta;
        cfg.complevel = cp.clevel;
        cfg.splitmode = cp.splitmode.id();
        cfg.usedict = c_int::from(cp.use_dict);
        cfg.filters = cp.filters.map(crate::Filter::id);
        cfg.filtersmeta = cp.filters_meta;
        Ok(CATERVA_SUCCEED)
    })
}
