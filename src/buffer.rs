//! Fallible buffers: room for items sized from a geometry, a caller or a
//! file (an error, never an abort, when it does not fit), and fresh zeroed
//! allocations. Below the store and the engine, which both size buffers so.

use crate::error::{Error, Result};

/// Make room for `n` more items in `v`, or fail with [`Error::Io`] (out of
/// memory) naming `what`: sizes that come from the caller or a file never abort.
pub(crate) fn reserve<T>(v: &mut Vec<T>, n: usize, what: impl FnOnce() -> String) -> Result<()> {
    v.try_reserve_exact(n).map_err(|_| {
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        Error::io(&format!("allocating {}", what()), None, &oom)
    })
}

/// `buf` emptied and then `len` zero bytes long, as [`reserve`] allows.
///
/// A buffer that must grow is replaced by a fresh zeroed allocation
/// ([`zeroed_vec`]) rather than grown and filled: the allocator hands out
/// large ones as untouched zero pages, so a read that decompresses a few
/// blocks of a chunk-sized buffer faults in only those pages. Filling a
/// fresh multi-megabyte buffer byte by byte made each worker's first read
/// of an array cost milliseconds more than the next ones.
pub(crate) fn zeroed(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.capacity() < len {
        *buf = Vec::new();
        *buf = zeroed_vec(len)?;
    } else {
        buf.clear();
        buf.resize(len, 0);
    }
    Ok(())
}

/// `buf` `len` bytes long, its bytes left as they are when it already is
/// (for a buffer the caller overwrites whole), otherwise as [`zeroed`].
pub(crate) fn sized(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.len() == len {
        return Ok(());
    }
    zeroed(buf, len)
}

/// A vector of `len` zero bytes from the allocator's zeroed allocation
/// (`calloc`), or [`Error::Io`] (out of memory) when it does not fit.
pub(crate) fn zeroed_vec(len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let oom = || {
        let e = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        Error::io(&format!("allocating a buffer of {len} bytes"), None, &e)
    };
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| oom())?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(oom());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `len` bytes (capacity `len`), and all `len` bytes are initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}
