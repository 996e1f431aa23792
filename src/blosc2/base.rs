//! What every use of c-blosc2 needs first: its initialisation (once per
//! process, fork-safe), its limits, and the helpers of every call (C
//! strings, errors, freeing what it allocated).

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Once;

use blosc2_sys as b;

use crate::error::{Error, Result};
use crate::fork::ForkHooks;

/// Maximum number of metalayers of a super-chunk (`BLOSC2_MAX_METALAYERS`).
pub(crate) const MAX_METALAYERS: usize = b::BLOSC2_MAX_METALAYERS as usize;

/// Maximum number of variable-length metalayers (`BLOSC2_MAX_VLMETALAYERS`).
pub(crate) const MAX_VLMETALAYERS: usize = b::BLOSC2_MAX_VLMETALAYERS as usize;

/// The most vlmetalayers c-blosc2 writes into a frame's trailer
/// (`frame_update_trailer` refuses more than `BLOSC2_MAX_METALAYERS`, though
/// a super-chunk in memory holds up to [`MAX_VLMETALAYERS`]). Every array is
/// held to it, so that one in memory can still be saved or serialised; the
/// checksum table, when kept, is one of them.
pub(crate) const FRAME_VLMETALAYERS: usize = b::BLOSC2_MAX_METALAYERS as usize;

/// Bytes c-blosc2 may add to a compressed buffer (`BLOSC2_MAX_OVERHEAD`).
pub(crate) const MAX_OVERHEAD: usize = b::BLOSC2_MAX_OVERHEAD as usize;

/// Longest metalayer name c-blosc2 accepts (`BLOSC2_METALAYER_NAME_MAXLEN`).
pub(crate) const METALAYER_NAME_MAXLEN: usize = 31;

/// Initialise c-blosc2 once per process. Never torn down: other code in the
/// process (and `arr->sc` users) may still rely on it.
pub(crate) fn init() {
    static INIT: Once = Once::new();
    if INIT.is_completed() {
        return;
    }
    // Registered before the initialisation starts: a fork while it runs
    // waits for it to end (a child would find it half-done forever).
    crate::fork::on_fork(&FORK_HOOKS);
    INIT.call_once(|| {
        // SAFETY: blosc2_init has no preconditions; Once makes it run once.
        unsafe { b::blosc2_init() };
        warm_up_shuffle();
    });
}

/// What c-blosc2 needs around a `fork()`: before it, a first
/// initialisation under way in another thread finishes ([`init`]).
static FORK_HOOKS: ForkHooks = ForkHooks::prepare_only(init);

/// c-blosc2 picks its shuffle routines (SSE2, AVX2…) on the first shuffle,
/// writing global function pointers without synchronisation
/// (`init_shuffle_implementation` in `blosc/shuffle.c`): two first shuffles
/// on two threads at once race (ThreadSanitizer reports it, `.ci/tsan`).
/// One shuffle here, inside `init`'s `Once`, makes that choice before any
/// other thread can shuffle.
pub(crate) fn warm_up_shuffle() {
    let src = [0u8; 64];
    let mut dst = [0u8; 64 + MAX_OVERHEAD];
    // SAFETY: returns a plain struct by value.
    let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
    cp.typesize = 8;
    cp.nthreads = 1;
    cp.filters[b::BLOSC2_MAX_FILTERS as usize - 1] = b::BLOSC_SHUFFLE as u8;
    // SAFETY: the parameters are passed by value; a NULL context is handled.
    let ctx = unsafe { b::blosc2_create_cctx(cp) };
    if ctx.is_null() {
        return;
    }
    // SAFETY: src and dst are valid for the sizes given; the result only
    // matters for its side effect (a failure leaves the race as it was).
    unsafe {
        b::blosc2_compress_ctx(ctx, src.as_ptr().cast(), 64, dst.as_mut_ptr().cast(), dst.len() as i32);
        b::blosc2_free_ctx(ctx);
    }
}

pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::InvalidArgument(format!("{what} contains a NUL byte")))
}

pub(crate) fn blosc_err(what: &str, rc: i64) -> Error {
    // c-blosc2's compressors return 0, no error code, when the output does
    // not fit its buffer.
    if rc == 0 {
        return Error::blosc(format!("{what} (the output did not fit its buffer)"), None);
    }
    Error::blosc(what, rc)
}

/// `len` bytes at `p` as a slice (empty for `len == 0`, whatever `p`).
///
/// # Safety
/// For `len > 0`, `p` must be valid for reading `len` bytes while the slice lives.
pub(crate) unsafe fn raw_bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: as the caller guarantees.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// Free a buffer that c-blosc2 (or this library) allocated with malloc.
///
/// # Safety
/// `p` must come from malloc and not be used again.
pub(crate) unsafe fn free(p: *mut c_void) {
    // SAFETY: as the caller guarantees.
    unsafe { libc::free(p) }
}

/// The c-blosc2 version string.
#[must_use]
pub(crate) fn blosc2_version() -> String {
    // SAFETY: returns a static C string.
    unsafe { CStr::from_ptr(b::blosc2_get_version_string() as *const c_char) }.to_string_lossy().into_owned()
}
