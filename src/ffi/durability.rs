//! What an array handle's writes survive after a crash, from C (beyond the
//! original API; see [`crate::Durability`]).

use std::ffi::c_int;

use super::array_calls::{read_array, with_array};
use super::types::{caterva_array_t, caterva_ctx_t};
use super::{boundary, CtxBox, CATERVA_SUCCEED};
use crate::context::{Config, Context, Durability};
use crate::error::{invalid, Result};

/// `caterva_set_durability` level: every write is synced to disk (the
/// journal, then the change) and survives a power loss or an
/// operating-system crash whole or not at all; every write that returned
/// before the last one is there after it.
pub const CATERVA_DURABILITY_FULL: c_int = 0;
/// `caterva_set_durability` level: no syncs. Every write survives a killed
/// or crashed process whole or not at all; a power loss or an
/// operating-system crash may lose recent writes or tear the array.
pub const CATERVA_DURABILITY_PROCESS: c_int = 1;
/// `caterva_set_durability` level: writes are made durable in batches
/// (epochs: up to 1000 writes or 1 s, ended also by another handle's
/// write, a change of level and `caterva_free`). A power loss or an
/// operating-system crash never tears the array, but may lose the last
/// writes before it; a killed process loses nothing that had returned.
/// Like SQLite's `synchronous=NORMAL` in WAL mode. The default of a new
/// context, unless `CATERVA_DURABILITY` in the environment says otherwise
/// (`full`, `normal` or `process`).
pub const CATERVA_DURABILITY_NORMAL: c_int = 2;

/// Choose what `array`'s writes survive from its next write on:
/// `CATERVA_DURABILITY_FULL`, `CATERVA_DURABILITY_NORMAL` (the default of
/// a new context) or `CATERVA_DURABILITY_PROCESS`.
/// A setting of this handle only, not stored in the file; an array in
/// memory keeps it and has nothing to sync. The environment variable
/// `CATERVA_JOURNAL_SYNC=0` makes every handle `CATERVA_DURABILITY_PROCESS`
/// whatever this says.
///
/// Errors: `CATERVA_ERR_INVALID_ARGUMENT` for another `level`.
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; nobody else may use `array` during the call.
#[no_mangle]
pub unsafe extern "C" fn caterva_set_durability(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    level: c_int,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        with_array("caterva_set_durability", ctx, array, |a| {
            a.array.set_durability(durability_level(level)?);
            Ok(())
        })
    }
}

/// Bring `array` up to date with what other handles (in this process or
/// others) wrote since it was opened, last wrote or was refreshed: under
/// the array's lock, roll back a write whose process died and reload the
/// frame if its layout changed (its shape, and the fields of `*array`, then
/// follow). This is what a call answered with `CATERVA_ERR_CHANGED` needs
/// before it is made again. Writes through a stale handle do it themselves
/// (their items go into the array as it is then); reads do not, since the
/// shape the caller sized its buffer for may have changed. `reloaded` (may
/// be NULL) receives whether the frame was reloaded. An array in memory has
/// nothing to refresh.
///
/// Needs exclusive access to the array: no other call on it may run meanwhile.
///
/// Errors: `CATERVA_ERR_INVALID_STORAGE` if another handle keeps the array
/// locked for more than 30 s or the array has gone; as `caterva_open` if
/// what is on disk is not a sound array.
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; `reloaded` NULL or
/// writable; nobody else may use `array` during the call.
#[no_mangle]
pub unsafe extern "C" fn caterva_refresh(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    reloaded: *mut bool,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        with_array("caterva_refresh", ctx, array, |a| {
            let changed = a.array.refresh()?;
            if !reloaded.is_null() {
                // SAFETY: writable by the caller's contract.
                *reloaded = changed;
            }
            Ok(())
        })
    }
}

/// Choose what the writes of the arrays created or opened with `ctx` from
/// now on survive (`CATERVA_DURABILITY_FULL`, `CATERVA_DURABILITY_NORMAL`,
/// the default unless `CATERVA_DURABILITY` in the environment names
/// another, or `CATERVA_DURABILITY_PROCESS`), their creation included: at
/// `FULL` and `NORMAL` a new array on disk is synced before it is renamed
/// into place, at `PROCESS`
/// it is not (as b2nd, zarr or HDF5 write by default). Each handle may
/// change its own later (`caterva_set_durability`). `CATERVA_JOURNAL_SYNC=0`
/// in the environment makes every handle `PROCESS` whatever this says.
///
/// Errors: `CATERVA_ERR_INVALID_ARGUMENT` for another `level`.
/// Not thread-safe with respect to other calls using `ctx`.
///
/// # Safety
/// `ctx` must be NULL or a live context from `caterva_ctx_new`.
#[no_mangle]
pub unsafe extern "C" fn caterva_ctx_set_durability(ctx: *mut caterva_ctx_t, level: c_int) -> c_int {
    boundary("caterva_ctx_set_durability", || {
        let level = durability_level(level)?;
        // SAFETY: caller's contract; `get` checks that ctx is a live context.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: ctx is a live CtxBox (checked above) and, by the caller's
        // contract, nobody else uses it during the call.
        let b = unsafe { &mut *ctx.cast::<CtxBox>() };
        if b.ctx.config().durability != level {
            b.ctx = Context::with_prefilter(
                Config { durability: level, ..*b.ctx.config() },
                b.ctx.compression().prefilter,
            )?;
        }
        Ok(CATERVA_SUCCEED)
    })
}

/// The level of a `CATERVA_DURABILITY_*` value.
fn durability_level(level: c_int) -> Result<Durability> {
    match level {
        CATERVA_DURABILITY_FULL => Ok(Durability::Full),
        CATERVA_DURABILITY_PROCESS => Ok(Durability::Process),
        CATERVA_DURABILITY_NORMAL => Ok(Durability::Normal),
        _ => invalid!("durability level {level} is not CATERVA_DURABILITY_FULL (0), _PROCESS (1) or _NORMAL (2)"),
    }
}

/// Set `*level` to `array`'s durability level (`CATERVA_DURABILITY_FULL`,
/// `CATERVA_DURABILITY_NORMAL` or `CATERVA_DURABILITY_PROCESS`): its setting, as `caterva_set_durability`
/// left it (`CATERVA_JOURNAL_SYNC=0` does not change it).
///
/// # Safety
/// `ctx` and `array` must be NULL or live handles; `level` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn caterva_get_durability(
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    level: *mut c_int,
) -> c_int {
    // SAFETY: forwarded caller's contract.
    unsafe {
        read_array("caterva_get_durability", ctx, array, |a| {
            let out = super::out_ptr(level, "level")?;
            *out = match a.array.durability() {
                Durability::Full => CATERVA_DURABILITY_FULL,
                Durability::Process => CATERVA_DURABILITY_PROCESS,
                Durability::Normal => CATERVA_DURABILITY_NORMAL,
            };
            Ok(())
        })
    }
}
