//! Hooks for the crate's own integration tests, benches and fuzzers
//! (feature `testing`, which the crate's dev-dependency on itself turns on).
//! Not part of the API: no stability promise, hidden from the docs.

use std::path::PathBuf;

pub mod proxy;
pub mod servers;

use crate::blosc2;
use crate::error::Result;
use crate::{Array, Context};

pub use crate::meta::{decode as decode_meta, default_dtype, MetaGeometry};
/// Stop or kill the process at a named point of the store layer.
pub use crate::store::hooks::signal_at;
/// Fault plans over the file I/O of persistent arrays.
pub use crate::store::io::faults;

/// Bytes the chunk reader has read from files in this process so far
/// (chunks of arrays on disk without checksums).
#[must_use]
pub fn bytes_read_from_files() -> u64 {
    crate::store::reader::BYTES_READ.load(std::sync::atomic::Ordering::Relaxed)
}
/// The vlmetalayer holding the checksum table.
pub const CHECKSUM_VLMETA: &str = crate::store::CHECKSUM_VLMETA;
/// The metalayer marking, in the header, that the array keeps checksums.
pub const CHECKSUM_MARKER: &str = crate::store::CHECKSUM_MARKER;

/// What the super-chunk under an array records beyond [`Array::info`].
#[derive(Clone, Copy, Debug)]
pub struct SChunkFacts {
    /// Item size.
    pub typesize: i32,
    /// Uncompressed bytes of a chunk.
    pub chunksize: i32,
}

/// The facts of `arr`'s super-chunk.
#[must_use]
pub fn schunk(arr: &Array) -> SChunkFacts {
    SChunkFacts { typesize: arr.store().typesize(), chunksize: arr.store().chunksize() }
}

/// Compressed chunk `n` of `arr`, checked against its checksum.
///
/// # Errors
/// As reading the chunk.
pub fn chunk(arr: &Array, n: i64) -> Result<Vec<u8>> {
    Ok(arr.store().chunk(n)?.bytes().to_vec())
}

/// Decompress a whole chunk of `nbytes` bytes.
///
/// # Errors
/// If it does not decompress to `nbytes` bytes.
pub fn decompress(chunk: &[u8], nbytes: usize) -> Result<Vec<u8>> {
    blosc2::inflate_whole(chunk, nbytes)
}

/// The undo journal's path for an array at `urlpath`.
#[must_use]
pub fn journal_path(urlpath: &str) -> PathBuf {
    crate::store::journal_path(urlpath)
}

/// Run the frame validator on a buffer.
///
/// # Errors
/// If the frame is not sound.
pub fn check_cframe(data: &[u8]) -> Result<()> {
    crate::store::check_cframe(data)
}

/// An array over a frame in a caller's buffer, read in place
/// (`caterva_from_cframe(.., copy = false)`).
///
/// # Safety
/// `frame` must outlive the array and stay unchanged.
///
/// # Errors
/// If it is not a sound frame of an array.
pub unsafe fn from_cframe_borrowed(ctx: &Context, frame: &[u8]) -> Result<Array> {
    // SAFETY: as the caller guarantees.
    let store = unsafe { crate::store::Store::from_cframe(frame.as_ptr(), frame.len(), false)? };
    Array::wrap(ctx, store)
}

/// `(nbytes, cbytes, blocksize)` from a chunk header.
///
/// # Errors
/// If `chunk` is not a complete chunk.
pub fn chunk_sizes(chunk: &[u8]) -> Result<(usize, usize, usize)> {
    let i = blosc2::chunk_info(chunk)?;
    Ok((i.nbytes, i.cbytes, i.blocksize))
}
