//! The frame of the exported calls on one array: check the context and
//! array handles inside the panic boundary, run the call's body, and (for a
//! change) refresh the public fields of `caterva_array_t` after it.

use std::ffi::c_int;

use super::types::{caterva_array_t, caterva_ctx_t, ArrayBox, CtxBox};
use super::{boundary, CATERVA_SUCCEED};
use crate::error::Result;

/// The shared part of the calls that change one array: check ctx and array,
/// run `f`, then refresh the public fields (also after an error: a failure
/// inside c-blosc2, or a borrowed frame copied before a write, may have
/// changed them).
///
/// # Safety
/// `ctx` and `array` must be NULL or handles from this library; nobody else
/// may use the array during the call.
pub(crate) unsafe fn with_array(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *mut caterva_array_t,
    f: impl FnOnce(&mut ArrayBox) -> Result<()>,
) -> c_int {
    boundary(func, || {
        // SAFETY: caller's contract.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let a = unsafe { ArrayBox::get(array) }?;
        let r = f(a);
        a.sync();
        r.map(|()| CATERVA_SUCCEED)
    })
}

/// The shared part of the calls that only read one array: check ctx and
/// array and run `f` (several threads may do this on one array at once).
///
/// # Safety
/// `ctx` and `array` must be NULL or handles from this library; nobody may
/// change or free the array during the call.
pub(crate) unsafe fn read_array(
    func: &str,
    ctx: *mut caterva_ctx_t,
    array: *const caterva_array_t,
    f: impl FnOnce(&ArrayBox) -> Result<()>,
) -> c_int {
    boundary(func, || {
        // SAFETY: caller's contract.
        unsafe { CtxBox::get(ctx) }?;
        // SAFETY: caller's contract.
        let a = unsafe { ArrayBox::get_ref(array, "array") }?;
        f(a).map(|()| CATERVA_SUCCEED)
    })
}
