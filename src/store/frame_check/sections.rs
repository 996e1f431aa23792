//! The frame's own sections: the fixed header, the metalayers (in the
//! header) and vlmetalayers (in the trailer), the trailer and the offsets
//! index.

use std::collections::HashSet;

use blosc2_sys as b;

#[cfg(doc)]
use super::super::frame;
#[cfg(doc)]
use super::{METADATA_FREE, METADATA_RATIO};

use super::super::frame::{
    CONTIGUOUS_TYPE, FRAME_VL_BLOCKS, HEADER_MARKERS, HEADER_MINLEN, MAGIC, POS_BLOCKSIZE, POS_CBYTES, POS_CHUNKSIZE,
    POS_FILTERS, POS_FRAME_LEN, POS_FRAME_TYPE, POS_GENERAL_FLAGS, POS_HAS_VLMETA, POS_HEADER_LEN, POS_MAGIC,
    POS_NBYTES, POS_OTHER_FLAGS, POS_TYPESIZE, SPARSE_TYPE, TRAILER_MINLEN, TRAILER_VERSION, VLMETA_MAP,
};
use super::chunk_headers::{check_blocksize, check_chunk_header, check_metadata_size, check_ratio};
use super::{Frame, Header, Section};
use crate::blosc2::chunk_header::HEADER_LEN as CHUNK_HEADER;
use crate::error::{Error, Result};

/// The newest frame format version read: c-blosc2 3.x's
/// `BLOSC2_VERSION_FRAME_FORMAT_VL_BLOCKS`, whose layout is version 2's
/// unless [`frame::FRAME_VL_BLOCKS`] is set.
const FRAME_VERSION_READ: u8 = 3;

/// The offsets index.
pub(super) enum Offsets {
    /// A special index: every chunk has this offset.
    Same(i64),
    /// The index chunk as stored: one offset per chunk (little-endian
    /// `int64`s) after its header when `plain` (a plain copy), else
    /// compressed, and decompressed a window at a time.
    Stored { chunk: Vec<u8>, plain: bool },
}

impl Frame<'_> {
    /// The fixed part of the header (`get_header_info` in frame.c, which
    /// `blosc2_schunk_open` cannot survive failing, and what it leaves unchecked).
    pub(super) fn check_fixed_header(&self, fixed: &[u8], len: u64) -> Result<Header> {
        let s = self.section(fixed, 0);
        for (at, marker, what) in HEADER_MARKERS {
            s.expect(at, marker, what)?;
        }
        if s.get(POS_MAGIC, MAGIC.len(), "magic")? != MAGIC {
            return Err(s.err(POS_MAGIC, "not a Blosc2 frame (no \"b2frame\" magic)"));
        }
        let frame_len = s.be_u64(POS_FRAME_LEN, "frame length")?;
        if frame_len != len {
            return Err(s.err(POS_FRAME_LEN, format!("the frame length field says {frame_len}, the frame has {len}")));
        }
        let header_len = s.be_i32(POS_HEADER_LEN, "header length")?;
        if header_len < HEADER_MINLEN as i32 || header_len as u64 > len {
            return Err(s.err(POS_HEADER_LEN, format!("header length {header_len} is not in {HEADER_MINLEN}..={len}")));
        }
        self.check_flags(&s)?;
        self.check_filters(&s)?;
        let header_len = header_len as u64;
        let nbytes = s.be_i64(POS_NBYTES, "nbytes")?;
        let cbytes = s.be_i64(POS_CBYTES, "cbytes")?;
        if nbytes < 0 || cbytes < 0 {
            return Err(s.err(POS_NBYTES, format!("negative sizes: nbytes {nbytes}, cbytes {cbytes}")));
        }
        let typesize = s.be_i32(POS_TYPESIZE, "typesize")?;
        if typesize <= 0 {
            return Err(s.err(POS_TYPESIZE, format!("typesize {typesize} is not positive")));
        }
        let blocksize = s.be_i32(POS_BLOCKSIZE, "blocksize")?;
        if !(0..=b::BLOSC2_MAXBLOCKSIZE as i32).contains(&blocksize) {
            return Err(s.err(POS_BLOCKSIZE, format!("block size {blocksize} is out of range")));
        }
        let chunksize = i64::from(s.be_i32(POS_CHUNKSIZE, "chunksize")?);
        let nchunks = self.nchunks(&s, nbytes, chunksize)?;
        Ok(Header { header_len, typesize: i64::from(typesize), nbytes, cbytes, chunksize, nchunks })
    }

    fn check_flags(&self, s: &Section<'_>) -> Result<()> {
        let general = s.byte(POS_GENERAL_FLAGS, "general flags")?;
        if general & FRAME_VL_BLOCKS != 0 {
            return Err(s.unsupported(
                POS_GENERAL_FLAGS,
                "variable-length blocks",
                "the frame holds chunks of variable-length blocks (frame format version 3 with the VL-blocks \
                 flag, c-blosc2 3.x), which c-blosc2 2.15 cannot decode",
            ));
        }
        // c-blosc2 3.x writes version 3 for any frame whose chunk size is
        // not fixed yet (an array without chunks: python-blosc2's empty
        // arrays), and 2 again once chunks of one size are in; without the
        // VL-blocks flag the layout is version 2's, which 2.15 reads (it
        // does not look at the version).
        if general & 0x0f > FRAME_VERSION_READ {
            return Err(s.err(POS_GENERAL_FLAGS, format!("unknown frame format version {}", general & 0x0f)));
        }
        if (general >> 4) & 0x3 != 1 {
            return Err(s.err(POS_GENERAL_FLAGS, "chunk offsets are not 64-bit (the only width c-blosc2 reads)"));
        }
        let want = if self.chunks_at.is_some() { SPARSE_TYPE } else { CONTIGUOUS_TYPE };
        let kind = s.byte(POS_FRAME_TYPE, "frame type")?;
        if kind != want {
            let expected = if want == SPARSE_TYPE { "a sparse frame" } else { "a contiguous frame" };
            return Err(s.err(POS_FRAME_TYPE, format!("frame type {kind} where {expected} is expected")));
        }
        let split = s.byte(POS_OTHER_FLAGS, "other flags")?;
        if split > 3 {
            return Err(s.err(POS_OTHER_FLAGS, format!("unknown split mode {}", u16::from(split) + 1)));
        }
        let has_vlmeta = s.byte(POS_HAS_VLMETA, "has-vlmetalayers flag")?;
        if has_vlmeta != 0xc2 && has_vlmeta != 0xc3 {
            return Err(s.err(POS_HAS_VLMETA, format!("has-vlmetalayers flag {has_vlmeta:#04x} is not a msgpack bool")));
        }
        Ok(())
    }

    /// c-blosc2 copies the first `nfilters` ids into the super-chunk and
    /// fails to create its compression context (then crashes in
    /// `blosc2_schunk_open`) for an id reserved but not defined.
    fn check_filters(&self, s: &Section<'_>) -> Result<()> {
        let nfilters = s.byte(POS_FILTERS, "filter count")?;
        if u32::from(nfilters) > b::BLOSC2_MAX_FILTERS {
            return Err(s.err(POS_FILTERS, format!("{nfilters} filters; at most {}", b::BLOSC2_MAX_FILTERS)));
        }
        for (i, &f) in s.get(POS_FILTERS + 1, usize::from(nfilters), "filters")?.iter().enumerate() {
            let f32 = u32::from(f);
            let undefined = (b::BLOSC_LAST_FILTER..=b::BLOSC2_DEFINED_FILTERS_STOP).contains(&f32)
                || (b::BLOSC_LAST_REGISTERED_FILTER + 1..=b::BLOSC2_GLOBAL_REGISTERED_FILTERS_STOP).contains(&f32);
            if undefined {
                return Err(s.err(POS_FILTERS + 1 + i, format!("filter id {f} is not defined")));
            }
        }
        Ok(())
    }

    /// The chunk count c-blosc2 derives (`get_header_info`), bounded so that
    /// its offsets fit one chunk.
    fn nchunks(&self, s: &Section<'_>, nbytes: i64, chunksize: i64) -> Result<i64> {
        if nbytes == 0 {
            if chunksize < -1 {
                return Err(s.err(POS_CHUNKSIZE, format!("chunk size {chunksize} is negative")));
            }
            return Ok(0);
        }
        if chunksize <= 0 {
            return Err(s.err(POS_CHUNKSIZE, format!("chunk size {chunksize} with {nbytes} bytes of data")));
        }
        let nchunks = nbytes / chunksize + i64::from(nbytes % chunksize != 0);
        let max = i64::from(i32::MAX) / 8;
        if nchunks > max {
            return Err(s.err(POS_NBYTES, format!("{nchunks} chunks are more than an offsets index holds ({max})")));
        }
        Ok(nchunks)
    }

    /// Where c-blosc2 reads the trailer (`get_trailer_offset`): after the
    /// header when the frame holds no data, else `trailer_len` from the end.
    pub(super) fn trailer_offset(&mut self, h: &Header, len: u64) -> Result<u64> {
        let tail = self.src.read(len - TRAILER_MINLEN as u64, TRAILER_MINLEN as u64)?.into_owned();
        let s = self.section(&tail, len - TRAILER_MINLEN as u64);
        s.expect(2, 0xce, "trailer length marker")?;
        let trailer_len = u64::from(s.be_u32(3, "trailer length")?);
        s.expect(7, 0xd8, "fingerprint marker")?;
        if trailer_len < TRAILER_MINLEN as u64 || trailer_len > len - h.header_len {
            return Err(
                s.err(3, format!("trailer length {trailer_len} is not in {TRAILER_MINLEN}..={}", len - h.header_len))
            );
        }
        let at = len - trailer_len;
        if h.nbytes == 0 && at != h.header_len {
            return Err(s.err(
                3,
                format!("a frame without data must end {trailer_len} bytes after its header, at byte {}", h.header_len),
            ));
        }
        Ok(at)
    }

    /// The trailer: its markers and the vlmetalayers, each a complete chunk.
    pub(super) fn check_trailer(&self, trailer: &[u8], at: u64) -> Result<Vec<Layer>> {
        let s = self.section(trailer, at);
        s.expect(0, 0x94, "trailer marker (fixarray of 4)")?;
        let version = s.byte(1, "trailer version")?;
        if version > TRAILER_VERSION {
            return Err(s.err(1, format!("trailer version {version} is newer than {TRAILER_VERSION}")));
        }
        let layers = check_layers(&s, VLMETA_MAP, b::BLOSC2_MAX_VLMETALAYERS, "vlmetalayer")?;
        for l in &layers {
            check_vlmeta_chunk(&s.section_at(l.content.start, l.content.len()), &l.name)?;
        }
        Ok(layers)
    }

    /// Check the offsets index, which ends before the trailer, and read it
    /// as stored (nothing is decompressed here; memory: its stored bytes).
    pub(super) fn read_offsets(&mut self, h: &Header, trailer_at: u64) -> Result<Offsets> {
        // Contiguous frames keep it after the chunks; sparse ones right after the header.
        let at = h.header_len + if self.chunks_at.is_some() { 0 } else { h.cbytes as u64 };
        if at + CHUNK_HEADER as u64 > trailer_at {
            return Err(self.err(at, "no room for the offsets index before the trailer"));
        }
        let head = self.src.read(at, CHUNK_HEADER as u64)?.into_owned();
        let (s, src) = (Section { bytes: &head, base: at, name: &self.name }, &mut self.src);
        let ch = check_chunk_header(&s, trailer_at - at, &"offsets index", &mut |o, n| src.read_owned(at + o, n))?;
        let want = h.nchunks * 8;
        if ch.nbytes != want || ch.typesize != 8 {
            return Err(s.err(
                0,
                format!(
                    "offsets index holds {} bytes of {}-byte items; {} chunks need {want} bytes of 8-byte offsets",
                    ch.nbytes, ch.typesize, h.nchunks
                ),
            ));
        }
        // Item n is read alone with blosc2_getitem, where delta coding
        // decodes against another reference than a whole decompression
        // (and a dictionary is not loaded at all).
        if ch.has_delta() {
            return Err(s.err(16, "offsets index uses delta coding"));
        }
        if ch.dict() {
            return Err(s.err(31, "offsets index carries a dictionary"));
        }
        // Every blosc2_getitem on it (one per chunk read) allocates 4 blocks.
        check_blocksize(&s, &ch, &"offsets index")?;
        match u32::from(ch.special()) {
            0 => {}
            b::BLOSC2_SPECIAL_ZERO => return Ok(Offsets::Same(0)),
            b::BLOSC2_SPECIAL_VALUE => {
                let v = self.src.read(at + CHUNK_HEADER as u64, 8)?;
                return Ok(Offsets::Same(i64::from_le_bytes(v[..].try_into().unwrap_or([0; 8]))));
            }
            _ => return Err(s.err(31, "offsets index is a run of NaNs or uninitialised values")),
        }
        // A plain copy holds exactly the header and nbytes (check_chunk_header);
        // decompressing a compressed one costs time in proportion to its size.
        if !ch.memcpyed() {
            check_ratio(&s, &ch, &"offsets index")?;
        }
        Ok(Offsets::Stored { chunk: self.src.read_owned(at, ch.cbytes as usize)?, plain: ch.memcpyed() })
    }
}

/// Check the stored content of vlmetalayer `name` (a chunk: c-blosc2
/// compresses each vlmetalayer on its own), as an open checks every
/// vlmetalayer of a frame: what a write stores must pass this before it
/// is stored ([`check_vlmetalayer`]), so that whatever a write accepts, an
/// open accepts.
///
/// The chunk must be whole (its cbytes the content's length), and decode
/// to at most [`METADATA_FREE`] bytes or [`METADATA_RATIO`] times its size
/// (`blosc2_vlmeta_get` allocates what the header claims, then
/// decompresses). A special chunk (c-blosc2 stores a value of 32 or more
/// zero bytes as a run of zeros) is fine under the same bounds, except an
/// uninitialised one, which decodes to whatever memory held.
fn check_vlmeta_chunk(content: &Section<'_>, name: &str) -> Result<()> {
    if content.bytes.len() < CHUNK_HEADER {
        return Err(content.err(0, format!("vlmetalayer '{name}' is too short to be a chunk")));
    }
    let what = format!("vlmetalayer '{name}'");
    let ch = check_chunk_header(content, content.bytes.len() as u64, &what, &mut content.reader())?;
    if u32::from(ch.special()) == b::BLOSC2_SPECIAL_UNINIT {
        return Err(content.err(31, format!("{what} is an uninitialised special chunk")));
    }
    check_metadata_size(content, &ch, &what)?;
    if ch.cbytes != content.bytes.len() as i64 {
        return Err(content
            .err(12, format!("vlmetalayer '{name}' chunk holds {} bytes, not {}", ch.cbytes, content.bytes.len())));
    }
    Ok(())
}

/// [`check_vlmeta_chunk`] on `content`, the chunk a write is about to store
/// (or has stored) as vlmetalayer `name`.
///
/// # Errors
/// [`Error::InvalidArgument`] saying why an open would refuse it.
pub(in crate::store) fn check_vlmetalayer(name: &str, content: &[u8]) -> Result<()> {
    let s = Section { bytes: content, base: 0, name: "new vlmetalayer" };
    check_vlmeta_chunk(&s, name).map_err(|e| {
        Error::InvalidArgument(format!(
            "vlmetalayer '{name}' cannot be stored: {}; no frame holding it could be opened",
            e.message()
        ))
    })
}

impl<'s> Section<'s> {
    /// Reads from this section, for [`check_chunk_header`].
    fn reader(&self) -> impl FnMut(u64, usize) -> Result<Vec<u8>> + '_ {
        |o, n| self.get(usize::try_from(o).unwrap_or(usize::MAX), n, "chunk bytes").map(<[u8]>::to_vec)
    }

    /// The sub-section `start..start + len` (already bounds-checked by the caller).
    fn section_at(&self, start: usize, len: usize) -> Section<'s> {
        let bytes = self.bytes.get(start..start + len).unwrap_or(&[]);
        Section { bytes, base: self.base + start as u64, name: self.name }
    }
}

/// One (vl)metalayer: its name and where its content lies in its section.
pub(super) struct Layer {
    name: String,
    content: std::ops::Range<usize>,
}

/// A metalayers section (README_CFRAME_FORMAT.rst): `[3-array, uint16
/// index size, map16 {name: int32 offset}, array16 of bin32 contents]`,
/// where `map_at` is the map's position and offsets count from the start
/// of `s` (the header, or the trailer). c-blosc2 checks each bound as
/// `offset + 5 + len` in 32-bit signed arithmetic, which overflows.
pub(super) fn check_layers(s: &Section<'_>, map_at: usize, max: u32, kind: &str) -> Result<Vec<Layer>> {
    s.expect(map_at - 4, 0x93, format_args!("{kind}s section marker"))?;
    s.expect(map_at - 3, 0xcd, format_args!("{kind}s index size marker"))?;
    s.expect(map_at, 0xde, format_args!("{kind}s index marker (map16)"))?;
    let n = s.be_u16(map_at + 1, format_args!("{kind} count"))?;
    // The vlmetalayer count is an int16 to c-blosc2: above 0x7fff it is negative.
    if u32::from(n) > max.min(i16::MAX as u32) {
        return Err(s.err(map_at + 1, format!("{n} {kind}s; at most {max}")));
    }
    let mut pos = map_at + 3;
    let mut layers = Vec::with_capacity(usize::from(n));
    // Names seen so far: a set, as a section may hold thousands of layers.
    let mut names = HashSet::with_capacity(usize::from(n));
    for _ in 0..n {
        let (layer, next) = check_layer(s, pos, kind)?;
        // c-blosc2 keeps names as C strings and refuses to add one twice:
        // copying a super-chunk with a repeated name fails half-way (and leaks it).
        if layer.name.contains('\0') || !names.insert(layer.name.clone()) {
            return Err(s.err(pos, format!("{kind} name '{}' holds a NUL or is repeated", layer.name.escape_debug())));
        }
        layers.push(layer);
        pos = next;
    }
    s.expect(pos, 0xdc, format_args!("{kind} contents marker (array16)"))?;
    let m = s.be_u16(pos + 1, format_args!("{kind} contents count"))?;
    if m != n {
        return Err(s.err(pos + 1, format!("{m} {kind} contents for {n} names")));
    }
    Ok(layers)
}

/// One index entry at `pos` (fixstr name, int32 offset) and the bin32
/// content it points at; returns the layer and the next entry's position.
fn check_layer(s: &Section<'_>, pos: usize, kind: &str) -> Result<(Layer, usize)> {
    let tag = s.byte(pos, format_args!("{kind} name"))?;
    if tag & 0xe0 != 0xa0 {
        return Err(s.err(pos, format!("{kind} name marker {tag:#04x} is not a fixstr")));
    }
    let name_len = usize::from(tag & 0x1f);
    let name = String::from_utf8_lossy(s.get(pos + 1, name_len, format_args!("{kind} name"))?).into_owned();
    let at = pos + 1 + name_len;
    s.expect(at, 0xd2, format_args!("{kind} '{name}' offset marker"))?;
    let offset = s.be_i32(at + 1, format_args!("{kind} '{name}' offset"))?;
    let offset =
        usize::try_from(offset).map_err(|_| s.err(at + 1, format!("{kind} '{name}' offset {offset} is negative")))?;
    s.expect(offset, 0xc6, format_args!("{kind} '{name}' content marker (bin32)"))?;
    let len = s.be_i32(offset + 1, format_args!("{kind} '{name}' length"))?;
    let len =
        usize::try_from(len).map_err(|_| s.err(offset + 1, format!("{kind} '{name}' length {len} is negative")))?;
    s.get(offset + 5, len, format_args!("{kind} '{name}' content ({len} bytes)"))?;
    Ok((Layer { name, content: offset + 5..offset + 5 + len }, at + 5))
}
