//! The Blosc2 chunk header (c-blosc2's `README_CHUNK_FORMAT.rst`), parsed
//! in one place for the frame check, our chunk reader and the binding: its
//! 32 bytes, their flags, and the block starts that follow it.
//!
//! ```text
//! 0 version | 1 versionlz | 2 flags | 3 typesize | 4 nbytes (i32 LE)
//! 8 blocksize (i32 LE) | 12 cbytes (i32 LE) | 16 filters (6 bytes)
//! 22 udcompcode | 23 compcode_meta | 24 filters_meta (6 bytes) | 31 blosc2_flags
//! ```
//!
//! A Blosc1 header is the first 16 bytes only; a Blosc2 (extended) one sets
//! both shuffle bits in `flags`. A compressed chunk's header is followed by
//! one `int32` start per block (`bstarts`).

use blosc2_sys as b;

/// Bytes of a Blosc2 (extended) chunk header (`BLOSC_EXTENDED_HEADER_LENGTH`).
pub(crate) const HEADER_LEN: usize = b::BLOSC_EXTENDED_HEADER_LENGTH as usize;
/// c-blosc2 3.x's chunk format with variable-length blocks
/// (`BLOSC2_VERSION_FORMAT_VL_BLOCKS`).
pub(crate) const CHUNK_VERSION_VL_BLOCKS: u8 = 6;
/// Bytes of a Blosc1 chunk header (`BLOSC_MIN_HEADER_LENGTH`).
const MIN_HEADER_LEN: usize = b::BLOSC_MIN_HEADER_LENGTH as usize;
/// Where `cbytes` lies in the header.
pub(crate) const POS_CBYTES: usize = 12;
/// Where `blosc2_flags` lies in the header (the special kind in bits 4-6).
pub(crate) const POS_BLOSC2_FLAGS: usize = 31;

/// `flags`: both shuffles at once mark an extended (Blosc2) header.
const FLAG_EXTENDED: u8 = (b::BLOSC_DOSHUFFLE | b::BLOSC_DOBITSHUFFLE) as u8;
/// `flags`: a plain copy (no block starts; the items follow the header).
const FLAG_MEMCPYED: u8 = b::BLOSC_MEMCPYED as u8;
/// `flags` of a Blosc1 header: the DELTA filter.
const FLAG_BLOSC1_DELTA: u8 = 0x08;
/// `blosc2_flags`: the chunk carries a compression dictionary.
const BLOSC2_USEDICT: u8 = b::BLOSC2_USEDICT as u8;
/// `blosc2_flags`: a lazy chunk (only ever built in memory by c-blosc2).
const BLOSC2_LAZY: u8 = 0x08;
/// `blosc2_flags`: an instrumented codec (development only; different output).
const BLOSC2_INSTR: u8 = b::BLOSC2_INSTR_CODEC as u8;
/// `blosc2_flags`: every flag but the instrumentation bit (dictionary,
/// extensions, lazy, special kinds).
const BLOSC2_ANY_BUT_INSTR: u8 = 0x7f;

/// The largest typesize a chunk header records (one byte).
pub(crate) const CHUNK_MAX_TYPESIZE: usize = b::BLOSC_MAX_TYPESIZE as usize;

/// Whether a chunk recording `typesize` may hold `itemsize`-byte items:
/// the same size up to 255 bytes; beyond, any divisor of the item (ours
/// record `blosc::chunk_typesize`; c-blosc2 records 1 when it is given more
/// than 255, as for python-blosc2's chunks).
pub(crate) fn typesize_fits(itemsize: usize, typesize: usize) -> bool {
    if itemsize <= CHUNK_MAX_TYPESIZE {
        typesize == itemsize
    } else {
        typesize >= 1 && itemsize % typesize == 0
    }
}

/// A chunk header as stored (sizes as the signed `int32`s they are).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkHeader {
    /// Chunk format version.
    pub(crate) version: u8,
    /// `flags` (byte 2): shuffles, copy, Blosc1 DELTA.
    pub(crate) flags: u8,
    /// Item size (at most 255).
    pub(crate) typesize: u8,
    /// Uncompressed bytes.
    pub(crate) nbytes: i64,
    /// Bytes of a block.
    pub(crate) blocksize: i64,
    /// Compressed bytes, header included.
    pub(crate) cbytes: i64,
    /// The filter pipeline (zeros where the header has none).
    pub(crate) filters: [u8; 6],
    /// `blosc2_flags` (byte 31; zero where the header has none): a
    /// Blosc1 header has none, whatever byte 31 of its chunk holds, so
    /// callers that may meet one ask [`ChunkHeader::is_extended`] first.
    pub(crate) blosc2_flags: u8,
}

impl ChunkHeader {
    /// The header at the start of `bytes`: `None` if they hold less than a
    /// Blosc1 header. Fields past the bytes there are read as zero.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < MIN_HEADER_LEN {
            return None;
        }
        let i32_at =
            |at: usize| i64::from(i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]));
        let mut filters = [0u8; 6];
        if let Some(f) = bytes.get(16..22) {
            filters.copy_from_slice(f);
        }
        Some(ChunkHeader {
            version: bytes[0],
            flags: bytes[2],
            typesize: bytes[3],
            nbytes: i32_at(4),
            blocksize: i32_at(8),
            cbytes: i32_at(POS_CBYTES),
            filters,
            blosc2_flags: bytes.get(POS_BLOSC2_FLAGS).copied().unwrap_or(0),
        })
    }

    /// A Blosc2 (extended) header.
    pub(crate) fn is_extended(&self) -> bool {
        self.flags & FLAG_EXTENDED == FLAG_EXTENDED
    }

    /// A plain copy: the items follow the header, no block starts.
    pub(crate) fn memcpyed(&self) -> bool {
        self.flags & FLAG_MEMCPYED != 0
    }

    /// The chunk carries a compression dictionary (an extended header's flag).
    pub(crate) fn dict(&self) -> bool {
        self.blosc2_flags & BLOSC2_USEDICT != 0
    }

    /// A lazy or instrumented chunk (c-blosc2 never writes either to a frame).
    pub(crate) fn lazy_or_instrumented(&self) -> bool {
        self.blosc2_flags & (BLOSC2_LAZY | BLOSC2_INSTR) != 0
    }

    /// The special kind (`BLOSC2_SPECIAL_*`; 0: a regular chunk) an
    /// extended header's flags give.
    pub(crate) fn special(&self) -> u8 {
        (self.blosc2_flags >> 4) & b::BLOSC2_SPECIAL_MASK as u8
    }

    /// Whether the chunk was written with the DELTA filter, which encodes
    /// every block against the first (in the filter pipeline of an
    /// extended header, a flag of a Blosc1 one).
    pub(crate) fn has_delta(&self) -> bool {
        if self.is_extended() {
            self.filters.contains(&(b::BLOSC_DELTA as u8))
        } else {
            self.flags & FLAG_BLOSC1_DELTA != 0
        }
    }

    /// A plain chunk: an extended header, compressed blocks with starts (not
    /// a copy), no dictionary, extension, lazy or special flags (only the
    /// instrumentation bit aside). Its blocks' streams lie where
    /// [`block_starts`] says. (The DELTA filter is the caller's question:
    /// [`ChunkHeader::has_delta`].)
    pub(crate) fn is_plain(&self) -> bool {
        self.is_extended() && !self.memcpyed() && self.blosc2_flags & BLOSC2_ANY_BUT_INSTR == 0
    }
}

/// The starts of the first `nblocks` blocks of `chunk` (the `int32`s after
/// its header, read as unsigned). `chunk` must hold them.
pub(crate) fn block_starts(chunk: &[u8], nblocks: usize) -> Vec<usize> {
    (0..nblocks)
        .map(|i| {
            let at = HEADER_LEN + 4 * i;
            u32::from_le_bytes([chunk[at], chunk[at + 1], chunk[at + 2], chunk[at + 3]]) as usize
        })
        .collect()
}

/// Where the stream of the block starting at `start` ends: at the next start
/// above it among `sorted` (all the starts, sorted), or at `end` (c-blosc2
/// may write blocks out of order).
pub(crate) fn block_end(sorted: &[usize], start: usize, end: usize) -> usize {
    sorted.get(sorted.partition_point(|&x| x <= start)).copied().unwrap_or(end)
}
