//! What an array handle's writes survive after a crash, from C (beyond the
//! original API; see [`crate::Durability`]).

use std::ffi::c_int;

use super::meta::{read_array, with_array};
use super::types::{caterva_array_t, caterva_ctx_t};
use crate::context::Durability;
use crate::error::invalid;

/// `caterva_set_durability` level: every write is synced to disk (the
/// journal, then the change) and survives a power loss or an
/// operating-system crash whole or not at all. The default.
pub const CATERVA_DURABILITY_FULL: c_int = 0;
/// `caterva_set_durability` level: no syncs. Every write survives a killed
/// or crashed process whole or not at all; a power loss or an
/// operating-system crash may lose recent writes or tear the array.
pub const CATERVA_DURABILITY_PROCESS: c_int = 1;

/// Choose what `array`'s writes survive from its next write on:
/// `CATERVA_DURABILITY_FULL` (the default) or `CATERVA_DURABILITY_PROCESS`.
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
            let level = match level {
                CATERVA_DURABILITY_FULL => Durability::Full,
                CATERVA_DURABILITY_PROCESS => Durability::Process,
                _ => invalid!("durability level {level} is not CATERVA_DURABILITY_FULL (0) or _PROCESS (1)"),
            };
            a.array.set_durability(level);
            Ok(())
        })
    }
}

/// Set `*level` to `array`'s durability level (`CATERVA_DURABILITY_FULL` or
/// `CATERVA_DURABILITY_PROCESS`): its setting, as `caterva_set_durability`
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
            };
            Ok(())
        })
    }
}
