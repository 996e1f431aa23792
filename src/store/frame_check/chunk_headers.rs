//! Checks of Blosc2 chunk headers (README_CHUNK_FORMAT.rst): of a frame's
//! stored chunks, and of the offsets index and the vlmetalayers, which are
//! chunks too.

use std::fmt::Display;

use blosc2_sys as b;

#[cfg(doc)]
use super::{check_path, Chunks};
#[cfg(doc)]
use crate::error::Error;

use super::super::frame::SPECIAL_OFFSET;
use super::{ChunkName, Section, MAX_AUTO_BLOCKSIZE, MAX_RATIO, METADATA_FREE, METADATA_RATIO};
use crate::blosc2::chunk_header::{typesize_fits, ChunkHeader, CHUNK_VERSION_VL_BLOCKS, HEADER_LEN as CHUNK_HEADER};
use crate::error::Result;

/// Check the header of stored chunk `n` of `name` for a reader of a frame
/// opened with [`Chunks::Later`], before anything decompresses the chunk:
/// `head` holds its first bytes (at least the header), read from byte `at`,
/// with `avail` bytes of room for the chunk there; `more` reads further
/// bytes of it (a dictionary's size). The reader checks the sizes against
/// the array's chunks itself.
///
/// # Errors
/// [`Error::InvalidFormat`] as [`check_path`] with [`Chunks::Now`] reports it.
pub(in crate::store) fn check_read_chunk(
    name: &str,
    n: i64,
    head: &[u8],
    at: u64,
    avail: u64,
    more: &mut ReadChunk<'_>,
) -> Result<()> {
    let s = Section { bytes: head.get(..CHUNK_HEADER).unwrap_or(head), base: at, name };
    check_chunk_header(&s, avail, &ChunkName { n: Some(n), offset: 0, sparse: false }, more).map(drop)
}

/// A compressed chunk's size must be one its codec could produce.
pub(super) fn check_ratio(s: &Section<'_>, ch: &ChunkHeader, what: &dyn Display) -> Result<()> {
    if ch.nbytes > ch.cbytes.saturating_mul(MAX_RATIO) {
        return Err(s.err(4, format!("{what}: {} bytes cannot come out of {} compressed ones", ch.nbytes, ch.cbytes)));
    }
    Ok(())
}

/// c-blosc2 allocates four blocks of scratch whenever it decompresses (or
/// reads an item of) a chunk: for metadata, the block must be one its
/// automatic tuning could have chosen.
pub(super) fn check_blocksize(s: &Section<'_>, ch: &ChunkHeader, what: &dyn Display) -> Result<()> {
    if ch.blocksize > MAX_AUTO_BLOCKSIZE {
        return Err(s.err(
            8,
            format!("{what}: blocks of {} bytes; c-blosc2 makes them at most {MAX_AUTO_BLOCKSIZE}", ch.blocksize),
        ));
    }
    Ok(())
}

/// A vlmetalayer is decompressed whole whenever it is read (at open, for
/// the checksum table and the layers it records): its size must be bounded
/// by the bytes that hold it ([`METADATA_RATIO`]) or small ([`METADATA_FREE`]).
pub(super) fn check_metadata_size(s: &Section<'_>, ch: &ChunkHeader, what: &dyn Display) -> Result<()> {
    check_blocksize(s, ch, what)?;
    let allowed = METADATA_FREE.max(ch.cbytes.saturating_mul(METADATA_RATIO));
    if ch.nbytes > allowed {
        return Err(s.err(
            4,
            format!(
                "{what}: {} bytes from {} compressed ones; metadata may expand to {allowed} bytes at most",
                ch.nbytes, ch.cbytes
            ),
        ));
    }
    Ok(())
}

pub(super) fn expect_nbytes(
    s: &Section<'_>,
    ch: &ChunkHeader,
    nbytes: i64,
    typesize: i64,
    what: &dyn Display,
) -> Result<()> {
    if ch.nbytes != nbytes {
        return Err(s.err(4, format!("{what} holds {} bytes; the frame's sizes need {nbytes}", ch.nbytes)));
    }
    // c-blosc2 compresses every chunk of a super-chunk with its typesize
    // (or, for items over 255 bytes, one that divides it).
    if !usize::try_from(typesize).is_ok_and(|t| typesize_fits(t, usize::from(ch.typesize))) {
        return Err(s.err(3, format!("{what} has items of {} bytes; the frame's are of {typesize}", ch.typesize)));
    }
    Ok(())
}

/// The special offsets c-blosc2 writes: the top bit, and one special value
/// (zeros, NaNs, uninitialised) in the top byte, nothing else.
pub(super) fn check_special_offset(offset: i64) -> std::result::Result<(), String> {
    let bits = offset as u64;
    let ok = [b::BLOSC2_SPECIAL_ZERO, b::BLOSC2_SPECIAL_NAN, b::BLOSC2_SPECIAL_UNINIT]
        .iter()
        .any(|&k| bits == SPECIAL_OFFSET | (u64::from(k) << 56));
    if ok {
        Ok(())
    } else {
        Err(format!("offset {bits:#018x} is neither a position nor a special value"))
    }
}

/// A Blosc2 chunk header (README_CHUNK_FORMAT.rst) whose chunk has `avail`
/// bytes of room: everything `blosc2_getitem` and the decompressor take on
/// trust, and what c-blosc2 never writes to a frame (lazy, instrumented,
/// Blosc1 chunks).
pub(super) fn check_chunk_header(
    s: &Section<'_>,
    avail: u64,
    what: &dyn Display,
    more: &mut ReadChunk<'_>,
) -> Result<ChunkHeader> {
    let ch = ChunkHeader::parse(s.get(0, CHUNK_HEADER, "chunk header")?).expect("a whole header");
    let version = ch.version;
    if version == CHUNK_VERSION_VL_BLOCKS {
        return Err(s.unsupported(
            0,
            "variable-length blocks",
            format!(
                "{what}: chunk format version {version} (variable-length blocks, c-blosc2 3.x), which c-blosc2 \
                 2.15 cannot decode"
            ),
        ));
    }
    if !(b::BLOSC2_VERSION_FORMAT_ALPHA as u8..=b::BLOSC2_VERSION_FORMAT as u8).contains(&version) {
        return Err(s.err(0, format!("{what}: chunk format version {version} is not a Blosc2 one")));
    }
    if !ch.is_extended() {
        return Err(s.err(2, format!("{what}: chunk has no Blosc2 extended header")));
    }
    let (typesize, nbytes, blocksize, cbytes) = (ch.typesize, ch.nbytes, ch.blocksize, ch.cbytes);
    if typesize == 0 || nbytes < 0 {
        return Err(s.err(3, format!("{what}: chunk typesize {typesize} / nbytes {nbytes} are invalid")));
    }
    if blocksize <= 0 || blocksize > i64::from(b::BLOSC2_MAXBLOCKSIZE) || (nbytes > 0 && blocksize > nbytes) {
        return Err(s.err(8, format!("{what}: chunk block size {blocksize} does not fit {nbytes} bytes")));
    }
    if cbytes < CHUNK_HEADER as i64 || cbytes as u64 > avail {
        return Err(s.err(12, format!("{what}: chunk cbytes {cbytes} is not in {CHUNK_HEADER}..={avail}")));
    }
    if ch.lazy_or_instrumented() {
        let blosc2_flags = ch.blosc2_flags;
        return Err(s.err(31, format!("{what}: chunk flags {blosc2_flags:#04x} mark a lazy or instrumented chunk")));
    }
    let special = ch.special();
    let need = match u32::from(special) {
        0 if ch.memcpyed() => Some(nbytes + CHUNK_HEADER as i64),
        0 => None,
        // c-blosc2 3.x stores a value wider than a header's typesize (more
        // than 255 bytes) whole, its width given by cbytes alone
        // (`blosc2::wide_value`): any multiple of the typesize that divides the chunk.
        b::BLOSC2_SPECIAL_VALUE => {
            let width = cbytes - CHUNK_HEADER as i64;
            let wide = width > i64::from(typesize) && width % i64::from(typesize) == 0 && nbytes % width == 0;
            Some(CHUNK_HEADER as i64 + if wide { width } else { i64::from(typesize) })
        }
        k if k <= b::BLOSC2_SPECIAL_LASTID => Some(CHUNK_HEADER as i64),
        _ => return Err(s.err(31, format!("{what}: unknown special value kind {special}"))),
    };
    // (c-blosc2 cannot decode one: it fails with BLOSC2_ERROR_READ_BUFFER.)
    if special != 0 && nbytes % i64::from(typesize) != 0 {
        return Err(s.err(4, format!("{what}: special chunk of {nbytes} bytes is not made of {typesize}-byte items")));
    }
    // A compressed chunk starts with one 32-bit offset per block.
    let nblocks = nbytes / blocksize + i64::from(nbytes % blocksize != 0);
    let starts_end = CHUNK_HEADER as i64 + if need.is_none() { 4 * nblocks } else { 0 };
    match need {
        Some(need) if cbytes != need => {
            return Err(s.err(12, format!("{what}: chunk cbytes {cbytes}; its kind needs exactly {need}")));
        }
        None if cbytes < starts_end => {
            return Err(s.err(12, format!("{what}: chunk cbytes {cbytes} cannot hold the starts of {nblocks} blocks")));
        }
        _ => {}
    }
    let empty = nbytes == 0 && cbytes == CHUNK_HEADER as i64 && special == 0;
    if ch.dict() && !empty {
        check_dict(s, what, cbytes, starts_end, more)?;
    }
    Ok(ch)
}

/// Reads `n` bytes at an offset from the start of the chunk being checked
/// (inside its `cbytes`).
pub(in crate::store) type ReadChunk<'a> = dyn FnMut(u64, usize) -> Result<Vec<u8>> + 'a;

/// The dictionary of a chunk flagged as using one: an `int32` size after
/// the block starts, then the dictionary. c-blosc2 frees the context's
/// previous dictionary *before* it checks these, and leaves the freed
/// pointer behind on failure: the next dictionary chunk, or freeing the
/// context, frees it again.
fn check_dict(s: &Section<'_>, what: &dyn Display, cbytes: i64, at: i64, more: &mut ReadChunk<'_>) -> Result<()> {
    let size = if at + 4 <= cbytes {
        let b = more(at as u64, 4)?;
        i64::from(i32::from_le_bytes(b.get(..4).and_then(|b| b.try_into().ok()).unwrap_or([0; 4])))
    } else {
        -1
    };
    if size <= 0 || size > i64::from(b::BLOSC2_MAXDICTSIZE) || at + 4 + size > cbytes {
        return Err(s.err(31, format!("{what}: the chunk's dictionary ({size} bytes at chunk byte {at}) is invalid")));
    }
    Ok(())
}
