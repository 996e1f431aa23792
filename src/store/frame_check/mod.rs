//! Structural validation of Blosc2 frames, in pure Rust, before any byte of
//! them reaches c-blosc2's frame parser.
//!
//! c-blosc2 2.15 trusts much of what a frame says about itself, and a
//! corrupt frame makes it crash rather than fail:
//!
//! - `blosc2_schunk_open` dereferences the super-chunk that its own parser
//!   (`frame_to_schunk`) failed to build, so *every* parse error of a frame
//!   file or sparse-frame directory (bad frame type, header length, typesize,
//!   filter count or id, metalayer section) is a NULL-pointer crash;
//! - metalayer and vlmetalayer bounds are checked as `offset + 5 + len` in
//!   signed 32-bit arithmetic, which overflows into a huge `memcpy`;
//! - a negative vlmetalayer count (an `int16`) is accepted and later used as
//!   an array index when a vlmetalayer is added;
//! - a vlmetalayer content shorter than a chunk header is read past its end,
//!   and a corrupt one is `malloc`ed with a size taken from it;
//! - chunk offsets are only compared with the frame length, so a chunk
//!   header is read past the end of an in-memory frame and a chunk `cbytes`
//!   past it is handed to the decompressor;
//! - the offsets index is read with `blosc2_getitem`, which trusts its
//!   typesize (writing past an 8-byte offset) and, for a plain copy, its
//!   uncompressed size; a special index of NaNs or uninitialised values
//!   yields garbage offsets;
//! - a sparse frame's chunk files are read whole, whatever their length;
//! - a chunk flagged as carrying a dictionary makes the decompressor free
//!   the previous chunk's dictionary *before* checking the new one's size,
//!   leaving a dangling pointer that the next dictionary chunk (or freeing
//!   the context) frees again;
//! - copying a super-chunk (saving, `to_cframe` of a file) stops half-way,
//!   leaking the copy, on a repeated metalayer name, and then reads an
//!   uninitialised pointer when a vlmetalayer cannot be read.
//!
//! This module checks, for a contiguous frame (a buffer or a file) and a
//! sparse frame (a directory holding the index `chunks.b2frame` and one file
//! per chunk), every field c-blosc2 later relies on: the header (magic,
//! lengths against the real size, flags, typesize, chunk and block sizes,
//! sizes, filters), both metalayer sections (markers, bounds, unique names),
//! the trailer, the offsets index and every distinct chunk header it points
//! at (version, flags, sizes, special values, dictionary, whole in the frame
//! or its file), refusing what c-blosc2 itself never writes (lazy chunks,
//! Blosc1 chunks, impossible compression ratios). The layouts are those of c-blosc2's
//! `README_CFRAME_FORMAT.rst`, `README_SFRAME_FORMAT.rst` and
//! `README_CHUNK_FORMAT.rst`; positions are those of `blosc/frame.h`.
//!
//! The offsets index is itself a Blosc2 chunk: its header is checked here,
//! then the caller's `inflate` decompresses it a window of offsets at a
//! time (in this crate `blosc2::inflate`: c-blosc2's `blosc2_getitem`, which
//! is safe on a chunk whose header holds, and is how c-blosc2 reads the
//! index itself). Chunk payloads are not decompressed here; c-blosc2's
//! decoder checks them against the (now sound) headers.
//!
//! # Bounded resources
//!
//! A frame of N bytes must not make its reader allocate more than it can
//! justify, nor work longer than in proportion to it. The policy:
//!
//! - **Opening** (this check, c-blosc2's parser, the checksum table, the
//!   geometry) allocates O(N) plus a fixed amount. A size the frame
//!   declares for itself is refused unless the frame bounds it: the header,
//!   the metalayers and the trailer lie within it (c-blosc2 copies each);
//!   the offsets index is held as stored and decompressed here
//!   [`INDEX_WINDOW`] bytes at a time, never whole, so that an index of
//!   2^28 offsets (2 GiB, c-blosc2's limit, and legitimate: a few hundred
//!   kilobytes hold it for an array of mostly special chunks) costs one
//!   window; the positions of stored chunks, kept to check each one once,
//!   number at most one per [`CHUNK_HEADER`] bytes of the data section (one
//!   per chunk file of a sparse frame): an index naming more is refused.
//! - **Metadata read whole**: c-blosc2 allocates what a vlmetalayer's header
//!   claims, then decompresses it (the checksum table and the layers it
//!   records are read at open). A vlmetalayer may expand to
//!   [`METADATA_FREE`] bytes, or to [`METADATA_RATIO`] times its compressed
//!   size beyond that. A checksum table over more than about two million
//!   chunks that compresses better than that (a checksummed array of that
//!   many mostly identical chunks, zeros say) is refused, although this
//!   library writes one: its in-memory table is 8 bytes per chunk, which no
//!   file bounds.
//! - **Blocks of metadata**: c-blosc2 allocates four blocks of scratch to
//!   decompress a chunk, or to read one item of it (every chunk access reads
//!   one offset of the index that way): the offsets index and vlmetalayers
//!   must have blocks of at most [`MAX_AUTO_BLOCKSIZE`], the largest
//!   c-blosc2's tuning makes (it writes offsets in 16 KiB blocks).
//! - **Reading a chunk** allocates the chunk size the geometry declares,
//!   c-blosc2's scratch of at most four such blocks, and a fixed amount; no
//!   more. A chunk is legitimately as large as its geometry says, whatever
//!   it takes in the frame (a special chunk of zeros is 32 bytes, or none at
//!   all, and 2 GiB once read): that is the price of the array, not of the
//!   file, and a reader sees it in the geometry before reading. So the
//!   geometry (the `caterva` metalayer) must agree with the frame's chunk
//!   size (`Array::from_store`), every chunk header here, and every special
//!   chunk c-blosc2 builds from the frame's sizes, holds exactly that many
//!   bytes in blocks no larger, and the buffers this crate sizes from a
//!   geometry are allocated fallibly (an out-of-memory error, not an abort).
//! - **Time**: the check is linear in N. Each offset is looked at once (a
//!   compressed index cannot claim more than [`MAX_RATIO`] times its size;
//!   a special one is not scanned), each distinct stored chunk's header is
//!   read once after a sort of their positions, and layer names are checked
//!   with a set (a trailer may hold 8192 vlmetalayers).
//!
//! # When chunk headers are checked
//!
//! A frame in memory is checked whole. A frame file opened by `Store::open`
//! is checked with [`Chunks::Later`]: everything but its stored chunks'
//! headers (where each chunk lies is checked), so that opening reads the
//! file's two ends only. The reader checks each chunk header it fetches
//! ([`check_read_chunk`]), and the store runs the whole check
//! ([`Chunks::Now`]) once before the first operation that lets c-blosc2
//! read a chunk.
//!
//! Out of scope: a file changed after the check (c-blosc2 reads frame files
//! again on every access).

mod chunk_headers;
mod sections;

pub(in crate::store) use chunk_headers::check_read_chunk;
pub(in crate::store) use sections::check_vlmetalayer;

use std::borrow::Cow;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use blosc2_sys as b;

use super::blosc_io::CheckedBytes;
use super::frame::{self, chunk_name, HEADER_MINLEN, META_MAP, POS_FRAME_LEN, POS_TYPESIZE, SPARSE_INDEX};
use super::location::{self, Kind, Location, Object, Slice};
use crate::blosc2::chunk_header::HEADER_LEN as CHUNK_HEADER;
use crate::error::{Error, Result};
use chunk_headers::{check_chunk_header, check_special_offset, expect_nbytes};
use sections::{check_layers, Offsets};

/// No built-in codec expands a stream more than this (zstd, the most,
/// needs 4 bytes for a 128 KiB block): an offsets index claiming more is
/// corrupt (decompressing it takes time in proportion to its size).
const MAX_RATIO: i64 = 1 << 16;

/// The largest block c-blosc2's automatic tuning chooses (`stune.c` clamps
/// split blocks to 4 MiB; others are at most 1 MiB), and the largest this
/// checker accepts in metadata: an offsets index (c-blosc2 writes it in
/// 16 KiB blocks, or tuned ones) or a vlmetalayer (tuned). Decompressing a
/// chunk, or reading one item of it, allocates four blocks of scratch.
const MAX_AUTO_BLOCKSIZE: i64 = 4 << 20;

/// Bytes of offsets the checker decompresses at a time.
const INDEX_WINDOW: usize = 4 << 20;

/// A vlmetalayer may decompress to this many bytes whatever its compressed
/// size (a checksum table of two million chunks)…
pub(super) const METADATA_FREE: i64 = 16 << 20;
/// … and to this many times its compressed size beyond that.
const METADATA_RATIO: i64 = 4;

/// What a frame holds, once it has passed the checks.
#[derive(Debug)]
pub(crate) struct FrameSummary {
    /// A sparse frame (a directory) rather than a contiguous one.
    pub(crate) sparse: bool,
    /// For a frame file (or a sparse frame's index) checked with
    /// [`Chunks::Later`]: everything the check read of it, which is all
    /// c-blosc2 reads to open it (see [`super::blosc_io::ServingChecked`]),
    /// and the file.
    pub(crate) read: Option<CheckedRead>,
}

/// What [`check_path`] with [`Chunks::Later`] read of a frame file, and the file, still open.
#[derive(Debug)]
pub(crate) struct CheckedRead {
    pub(crate) served: CheckedBytes,
    pub(crate) object: Arc<dyn Object>,
}

/// When a check reads the headers of a frame file's stored chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chunks {
    /// Now: every distinct stored chunk's header (and, in a sparse frame,
    /// every chunk file) is read and checked.
    Now,
    /// Later: only where each chunk lies is checked (inside the data
    /// section, or a special value); its header is checked before anything
    /// reads the chunk: [`check_read_chunk`] by our reader, which reads the
    /// header anyway, and the whole check with [`Chunks::Now`] before the
    /// first operation that lets c-blosc2 read a chunk (`Store::ensure_checked`).
    /// Opening a file then reads its header, trailer and index only.
    Later,
}

/// Check a contiguous frame held in memory (what `blosc2_schunk_from_buffer` reads).
///
/// `inflate(chunk, start, nitems)` must decompress items `start..start +
/// nitems` of a chunk whose header has been checked into exactly `nitems`
/// items of its typesize (see `blosc2::inflate`).
///
/// # Errors
/// [`Error::InvalidFormat`] naming the first problem and its byte offset.
pub(crate) fn check_cframe(
    buf: &[u8],
    inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
) -> Result<FrameSummary> {
    let mut frame = Frame { name: "frame buffer".into(), src: Src::Mem(buf), chunks_at: None, chunks: Chunks::Now };
    frame.check(inflate)
}

/// Check a frame file or a sparse-frame directory (what `blosc2_schunk_open`
/// reads), with `inflate` as in [`check_cframe`], reading the stored chunks'
/// headers as `chunks` says.
///
/// # Errors
/// [`Error::InvalidStorage`] if nothing is at `urlpath`; [`Error::Io`] if it
/// cannot be read; [`Error::InvalidFormat`] naming the first problem and where.
pub(crate) fn check_path(
    urlpath: &str,
    chunks: Chunks,
    inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
) -> Result<FrameSummary> {
    check_resolved(&location::ResolvedUrl::resolve(urlpath)?, chunks, inflate)
}

/// [`check_path`] of the array `at` names.
///
/// # Errors
/// As [`check_path`].
pub(crate) fn check_resolved(
    at: &location::ResolvedUrl,
    chunks: Chunks,
    inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
) -> Result<FrameSummary> {
    let (loc, key) = (at.location.clone(), at.key.clone());
    let urlpath = at.url();
    use std::io::ErrorKind::{InvalidInput, NotFound, PermissionDenied};
    let cannot = |e: std::io::Error| Error::storage(Some(urlpath), format!("cannot open '{urlpath}': {e}"));
    // A frame file, usually: one open. Else a sparse frame's prefix: the
    // open of its index tells (no listing, which an object store would need
    // to tell a prefix from nothing).
    let index = location::join(&key, SPARSE_INDEX);
    // Where each request is a round trip: both opens at once, each reading
    // the object's first window (a small frame whole), so that a sparse
    // frame opens in one round and a contiguous one in two.
    let remote = loc.local_path(&key).is_none();
    let mut heads: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut index_opened = None;
    let opened = if remote {
        let (opened, other) = std::thread::scope(|s| {
            let other = s.spawn(|| loc.open_reading(&index, REMOTE_WINDOW));
            (loc.open_reading(&key, REMOTE_WINDOW), other.join())
        });
        index_opened = Some(other.unwrap_or_else(|_| Err(std::io::Error::other("opening the index panicked"))));
        opened.map(|(object, head)| {
            heads.push((0, head));
            object
        })
    } else {
        loc.open(&key)
    };
    // A server may fail a GET of a sparse frame's prefix in its own way
    // (s3s-fs answers 500: a directory on its disk) while its index answers.
    let index_there = matches!(&index_opened, Some(Ok(_)));
    let (mut frame, read_name) = match opened {
        Ok(object) => {
            let name = format!("frame file '{urlpath}'");
            (Frame { src: Src::Object(object, None), name, chunks_at: None, chunks }, key)
        }
        // (A web server may refuse a directory: 403.)
        Err(e) if index_there || matches!(e.kind(), InvalidInput | NotFound | PermissionDenied) => {
            let name = format!("sparse frame index '{}'", loc.url(&index));
            let index_opened = index_opened.map(|r| {
                r.map(|(object, head)| {
                    heads.push((0, head));
                    object
                })
            });
            let object = match index_opened.unwrap_or_else(|| loc.open(&index)) {
                Ok(object) => object,
                Err(_) if e.kind() != InvalidInput => return Err(cannot(e)),
                Err(_) => {
                    // Something that is not an object: a directory without an index, or no array at all.
                    let kind = loc.stat(&key).map_err(cannot)?.map(|e| e.kind);
                    if kind != Some(Kind::Prefix) {
                        return Err(Error::InvalidFormat(format!("frame file '{urlpath}' is not a regular file")));
                    }
                    open_object(loc.as_ref(), &index, &name)?
                }
            };
            (Frame { src: Src::Object(object, None), name, chunks_at: Some((loc.clone(), key)), chunks }, index)
        }
        Err(e) => return Err(cannot(e)),
    };
    if chunks == Chunks::Later {
        if let Src::Object(object, seen) = &mut frame.src {
            let path = PathBuf::from(loc.url(&read_name));
            *seen = Some(CheckedBytes { path, len: object.len(), pieces: heads });
        }
    }
    let mut summary = frame.check(inflate)?;
    if let Src::Object(object, Some(served)) = frame.src {
        summary.read = Some(CheckedRead { served, object });
    }
    Ok(summary)
}

/// Check the contiguous frame that starts at byte `offset` of the file
/// `urlpath` (what `blosc2_schunk_open_offset` reads), with `chunks` as in
/// [`check_path`] and `inflate` as in [`check_cframe`]. The frame is as long as its header says, which must
/// fit in the file; what follows it (other frames) is not looked at.
/// Positions in errors count from the frame's start.
///
/// # Errors
/// [`Error::InvalidStorage`] if nothing is at `urlpath`; [`Error::Io`] if it
/// cannot be read; [`Error::InvalidFormat`] if it is not a regular file, no
/// frame header fits at `offset`, the frame runs past the file's end, or
/// the frame is not sound.
pub(crate) fn check_path_at(
    urlpath: &str,
    offset: u64,
    chunks: Chunks,
    inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
) -> Result<FrameSummary> {
    check_resolved_at(&location::ResolvedUrl::resolve(urlpath)?, offset, chunks, inflate)
}

/// [`check_path_at`] of the object `at` names.
///
/// # Errors
/// As [`check_path_at`].
pub(crate) fn check_resolved_at(
    at: &location::ResolvedUrl,
    offset: u64,
    chunks: Chunks,
    inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
) -> Result<FrameSummary> {
    let (loc, key) = (at.location.clone(), at.key.clone());
    let urlpath = at.url();
    if let Err(e) | Ok(Err(e)) =
        loc.stat(&key).map(|st| st.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)))
    {
        return Err(Error::storage(Some(urlpath), format!("cannot open '{urlpath}': {e}")));
    }
    let name = format!("frame at byte {offset} of '{urlpath}'");
    let file = open_object(loc.as_ref(), &key, &name)?;
    let file_len = file.len();
    let room = file_len.saturating_sub(offset);
    if room < HEADER_MINLEN as u64 {
        return Err(Error::InvalidFormat(format!(
            "{name}: the file holds {file_len} bytes, too few for a frame header ({HEADER_MINLEN}) there"
        )));
    }
    let head = file.read_vec(offset, HEADER_MINLEN).map_err(|e| Error::io("reading", Some(Path::new(&name)), &e))?;
    let frame_len = u64::from_be_bytes(head[POS_FRAME_LEN..POS_FRAME_LEN + 8].try_into().unwrap_or([0xff; 8]));
    let slice = Slice::new(file, offset, frame_len).filter(|_| head[POS_FRAME_LEN - 1] == 0xcf);
    let Some(slice) = slice else {
        return Err(Error::InvalidFormat(format!(
            "{name}: no frame of at most the {room} bytes that follow starts there (its length field says {frame_len})"
        )));
    };
    let mut frame = Frame { src: Src::Object(Arc::new(slice), None), name, chunks_at: None, chunks };
    frame.check(inflate)
}

/// Open the object `key` of `loc` for reading, as the frame part `name`:
/// only a regular file (never a FIFO or device, which c-blosc2 would block
/// on or read forever).
fn open_object(loc: &dyn Location, key: &str, name: &str) -> Result<Arc<dyn Object>> {
    loc.open(key).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => Error::InvalidFormat(format!("{name} is not a regular file")),
        _ => Error::io("reading", Some(Path::new(&loc.url(key))), &e),
    })
}

/// Bytes read at a time at either end of a frame file whose reads are kept.
const READ_AHEAD: u64 = 4096;

/// What opening a remote frame object reads of it at once: a sparse frame's
/// index whole, unless it indexes some thousands of chunks.
pub(super) const REMOTE_WINDOW: usize = 64 << 10;

/// Where a frame's bytes come from.
enum Src<'a> {
    /// An in-memory frame.
    Mem(&'a [u8]),
    /// A stored frame (a frame file, a sparse frame's index, a frame inside
    /// a larger file), and what was read of it (when kept).
    Object(Arc<dyn Object>, Option<CheckedBytes>),
}

impl Src<'_> {
    fn len(&self) -> u64 {
        match self {
            Src::Mem(b) => b.len() as u64,
            Src::Object(o, _) => o.len(),
        }
    }

    /// As [`Src::read`], into a vector.
    fn read_owned(&mut self, pos: u64, n: usize) -> Result<Vec<u8>> {
        self.read(pos, n as u64).map(Cow::into_owned)
    }

    /// The `n` bytes at `pos` (the caller has checked they are inside).
    fn read(&mut self, pos: u64, n: u64) -> Result<Cow<'_, [u8]>> {
        let end = pos.checked_add(n).filter(|&e| e <= self.len());
        let (Some(end), Ok(n)) = (end, usize::try_from(n)) else {
            return Err(Error::InvalidFormat(format!("bytes {pos}+{n} lie past the end of the frame")));
        };
        match self {
            Src::Mem(b) => Ok(Cow::Borrowed(&b[pos as usize..end as usize])),
            Src::Object(o, None) => read_at(o.as_ref(), pos, n).map(Cow::Owned),
            Src::Object(o, Some(seen)) => {
                // Kept reads come a window at a time at either end of the
                // file (header and metalayers; index, trailer and its
                // length), so that a frame takes two reads, not six.
                if let Some(bytes) = seen.bytes(pos, n) {
                    return Ok(Cow::Owned(bytes));
                }
                let len = o.len();
                let (from, to) = if pos < READ_AHEAD {
                    (0, end.max(READ_AHEAD.min(len)))
                } else if end + READ_AHEAD > len {
                    (pos.min(len.saturating_sub(READ_AHEAD)), len)
                } else {
                    (pos, end)
                };
                let window = read_at(o.as_ref(), from, (to - from) as usize)?;
                let off = (pos - from) as usize;
                let bytes = window[off..off + n].to_vec();
                seen.pieces.push((from, window));
                Ok(Cow::Owned(bytes))
            }
        }
    }
}

fn read_at(o: &dyn Object, pos: u64, n: usize) -> Result<Vec<u8>> {
    o.read_vec(pos, n).map_err(|e| Error::io("reading", None, &e))
}

/// Bounds-checked reads from one section of a frame (header, trailer, chunk
/// header), with errors that name the frame and the absolute byte offset.
struct Section<'s> {
    bytes: &'s [u8],
    /// Offset of `bytes[0]` in the frame or file.
    base: u64,
    name: &'s str,
}

impl<'s> Section<'s> {
    fn err(&self, at: usize, msg: impl Display) -> Error {
        Error::InvalidFormat(format!("{}: {msg} (at byte {})", self.name, self.base + at as u64))
    }

    /// [`Error::Unsupported`]: what c-blosc2 2.15 cannot decode, at byte `at`.
    fn unsupported(&self, at: usize, feature: &str, msg: impl Display) -> Error {
        Error::unsupported(feature, format!("{}: {msg} (at byte {})", self.name, self.base + at as u64))
    }

    fn get(&self, at: usize, n: usize, what: impl Display + Copy) -> Result<&'s [u8]> {
        let bytes = self.bytes;
        at.checked_add(n)
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| self.err(at, format!("{what} lies past the end of its section ({} bytes)", bytes.len())))
    }

    fn byte(&self, at: usize, what: impl Display + Copy) -> Result<u8> {
        Ok(self.get(at, 1, what)?[0])
    }

    fn expect(&self, at: usize, marker: u8, what: impl Display + Copy) -> Result<()> {
        let got = self.byte(at, what)?;
        if got != marker {
            return Err(self.err(at, format!("{what}: expected {marker:#04x}, found {got:#04x}")));
        }
        Ok(())
    }

    fn array<const N: usize>(&self, at: usize, what: impl Display + Copy) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.get(at, N, what)?);
        Ok(a)
    }

    fn be_u16(&self, at: usize, what: impl Display + Copy) -> Result<u16> {
        self.array(at, what).map(u16::from_be_bytes)
    }
    fn be_i32(&self, at: usize, what: impl Display + Copy) -> Result<i32> {
        self.array(at, what).map(i32::from_be_bytes)
    }
    fn be_u32(&self, at: usize, what: impl Display + Copy) -> Result<u32> {
        self.array(at, what).map(u32::from_be_bytes)
    }
    fn be_i64(&self, at: usize, what: impl Display + Copy) -> Result<i64> {
        self.array(at, what).map(i64::from_be_bytes)
    }
    fn be_u64(&self, at: usize, what: impl Display + Copy) -> Result<u64> {
        self.array(at, what).map(u64::from_be_bytes)
    }
}

/// The header fields the rest of the checks use.
struct Header {
    header_len: u64,
    typesize: i64,
    nbytes: i64,
    cbytes: i64,
    chunksize: i64,
    nchunks: i64,
}

impl Header {
    /// Uncompressed size of chunk `i` (the last one may be shorter).
    fn chunk_nbytes(&self, i: i64) -> i64 {
        if i == self.nchunks - 1 {
            self.nbytes - (self.nchunks - 1) * self.chunksize
        } else {
            self.chunksize
        }
    }
}

struct Frame<'a> {
    name: String,
    src: Src<'a>,
    /// Where a sparse frame's chunk files are: its location and prefix.
    chunks_at: Option<(Arc<dyn Location>, String)>,
    /// Whether the stored chunks' headers are read now.
    chunks: Chunks,
}

impl Frame<'_> {
    fn section<'s>(&'s self, bytes: &'s [u8], base: u64) -> Section<'s> {
        Section { bytes, base, name: &self.name }
    }

    fn err(&self, at: u64, msg: impl Display) -> Error {
        Error::InvalidFormat(format!("{}: {msg} (at byte {at})", self.name))
    }

    fn check(&mut self, inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>) -> Result<FrameSummary> {
        let len = self.src.len();
        if len < HEADER_MINLEN as u64 {
            return Err(self.err(0, format!("{len} bytes are too few for a frame header ({HEADER_MINLEN})")));
        }
        let fixed = self.src.read(0, HEADER_MINLEN as u64)?.into_owned();
        let h = self.check_fixed_header(&fixed, len)?;
        let header = self.src.read(0, h.header_len)?.into_owned();
        check_layers(&self.section(&header, 0), META_MAP, b::BLOSC2_MAX_METALAYERS, "metalayer")?;
        let trailer_at = self.trailer_offset(&h, len)?;
        let trailer = self.src.read(trailer_at, len - trailer_at)?.into_owned();
        self.check_trailer(&trailer, trailer_at)?;
        if h.nchunks > 0 {
            let offsets = self.read_offsets(&h, trailer_at)?;
            self.check_chunks(&h, offsets, inflate)?;
        }
        Ok(FrameSummary { sparse: self.chunks_at.is_some(), read: None })
    }

    /// Every chunk the offsets point at, each distinct one once, with the
    /// size it must have: the last may be shorter, the others hold
    /// `chunksize` bytes. Memory: the stored index, one window of
    /// [`INDEX_WINDOW`] decompressed offsets, and the positions of the
    /// stored chunks, which are refused beyond what the frame can hold (one
    /// per [`CHUNK_HEADER`] bytes of a contiguous frame's data section, one
    /// per chunk file of a sparse frame). Time: linear in the number of
    /// chunks, plus a sort of the stored ones.
    fn check_chunks(
        &mut self,
        h: &Header,
        offsets: Offsets,
        mut inflate: impl FnMut(&[u8], usize, usize) -> Result<Vec<u8>>,
    ) -> Result<()> {
        let last = h.nchunks - 1;
        let (chunk, plain) = match offsets {
            Offsets::Same(o) => {
                self.check_chunk(h, o, h.chunk_nbytes(last), Some(last))?;
                return if last > 0 { self.check_chunk(h, o, h.chunksize, Some(0)) } else { Ok(()) };
            }
            Offsets::Stored { chunk, plain } => (chunk, plain),
        };
        let index_at = h.header_len + if self.chunks_at.is_some() { 0 } else { h.cbytes as u64 };
        let per_window = INDEX_WINDOW / 8;
        // The stored chunks named so far, and how many the frame has room for.
        let (mut stored, mut room) = (0u64, None);
        let mut positions = Vec::new();
        let mut first = 0usize;
        while (first as i64) < h.nchunks {
            let n = per_window.min((h.nchunks - first as i64) as usize);
            let window = if plain {
                let at = CHUNK_HEADER + first * 8;
                Cow::Borrowed(chunk.get(at..at + n * 8).unwrap_or(&[]))
            } else {
                let window = inflate(&chunk, first, n);
                Cow::Owned(window.map_err(|e| self.err(index_at, format!("offsets index: {}", e.message())))?)
            };
            if window.len() != n * 8 {
                let got = window.len();
                return Err(self.err(index_at, format!("offsets {first}.. decompressed to {got} bytes, not {}", n * 8)));
            }
            for (k, item) in window.chunks_exact(8).enumerate() {
                let i = (first + k) as i64;
                let o = i64::from_le_bytes(item.try_into().unwrap_or([0; 8]));
                // A sparse frame's chunk files are counted (a directory listing)
                // only to bound the positions kept to check them now.
                if o >= 0 && !(self.chunks == Chunks::Later && self.chunks_at.is_some()) {
                    stored += 1;
                    let room = match room {
                        Some(r) => r,
                        None => *room.insert(self.room_for_chunks(h)?),
                    };
                    if stored > room {
                        // Name the chunk that is not there, if one is not.
                        if i == last {
                            self.check_chunk(h, o, h.chunk_nbytes(last), Some(last))?;
                        } else {
                            positions.push(o);
                        }
                        self.check_positions(h, std::mem::take(&mut positions))?;
                        let holds = if self.chunks_at.is_some() { "chunk files" } else { "stored chunks" };
                        return Err(self.err(
                            index_at,
                            format!("the offsets index names more than the {room} {holds} the frame has room for"),
                        ));
                    }
                }
                if i == last {
                    self.check_chunk(h, o, h.chunk_nbytes(last), Some(last))?;
                } else if o >= 0 && self.chunks == Chunks::Later {
                    // Where it lies only: no read, so nothing to sort or keep.
                    self.check_chunk(h, o, h.chunksize, Some(i))?;
                } else if o >= 0 {
                    positions.push(o);
                } else if check_special_offset(o).is_err() || h.chunksize % h.typesize != 0 {
                    // (A special chunk is only ever refused for these; the call says why.)
                    self.check_chunk(h, o, h.chunksize, Some(i))?;
                }
            }
            first += n;
        }
        self.check_positions(h, positions)
    }

    /// The stored chunks at `positions` (of full size), each distinct one once.
    fn check_positions(&mut self, h: &Header, mut positions: Vec<i64>) -> Result<()> {
        positions.sort_unstable();
        if let Some(o) = first_repeated(&positions) {
            let what = ChunkName { n: None, offset: o, sparse: self.chunks_at.is_some() };
            return Err(self.err(h.header_len, format!("two chunks of the offsets index are {what}")));
        }
        positions.into_iter().try_for_each(|o| self.check_chunk(h, o, h.chunksize, None))
    }

    /// How many stored chunks the frame has room for: one per chunk header
    /// in a contiguous frame's data section, one per chunk file (a file
    /// named as one) in a sparse frame's directory; unbounded where the
    /// directory cannot be listed (a web server: the first chunk file that
    /// is not there is then named by its own check).
    fn room_for_chunks(&self, h: &Header) -> Result<u64> {
        let Some((loc, prefix)) = self.chunks_at.as_ref() else { return Ok(h.cbytes as u64 / CHUNK_HEADER as u64) };
        let names = match loc.names(prefix) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return Ok(u64::MAX),
            Err(e) => return Err(Error::io("listing", Some(Path::new(&loc.url(prefix))), &e)),
        };
        Ok(names.iter().filter(|n| frame::chunk_id(n).is_some()).count() as u64)
    }

    /// The chunk at `offset` (a position, a chunk file number, or a special
    /// value) must hold `nbytes` bytes; `n` is its number, when known.
    fn check_chunk(&mut self, h: &Header, offset: i64, nbytes: i64, n: Option<i64>) -> Result<()> {
        let what = &ChunkName { n, offset, sparse: self.chunks_at.is_some() };
        if offset < 0 {
            // c-blosc2 builds the chunk from the frame's typesize and sizes.
            check_special_offset(offset).map_err(|m| self.err(h.header_len, format!("{what}: {m}")))?;
            if nbytes % h.typesize != 0 {
                return Err(
                    self.err(POS_TYPESIZE as u64, format!("{what}: {nbytes} bytes of {}-byte items", h.typesize))
                );
            }
            Ok(())
        } else if self.chunks == Chunks::Later {
            self.check_chunk_place(h, offset, what)
        } else if self.chunks_at.is_some() {
            self.check_chunk_file(h, offset, nbytes, what)
        } else {
            self.check_frame_chunk(h, offset, nbytes, what)
        }
    }

    /// Where a stored chunk lies, without reading it: a contiguous frame's
    /// chunk header inside the data section; a sparse frame's chunk file
    /// number one that names a file.
    fn check_chunk_place(&self, h: &Header, offset: i64, what: &ChunkName) -> Result<()> {
        if self.chunks_at.is_some() {
            if offset > i64::from(u32::MAX) {
                return Err(self.err(0, format!("{what}: file number {offset} does not fit a chunk file name")));
            }
        } else if offset > h.cbytes - CHUNK_HEADER as i64 {
            return Err(self.err(
                h.header_len + offset as u64,
                format!("{what} at offset {offset} lies outside the {}-byte data section", h.cbytes),
            ));
        }
        Ok(())
    }

    /// A chunk inside a contiguous frame: wholly in the data section.
    fn check_frame_chunk(&mut self, h: &Header, offset: i64, nbytes: i64, what: &ChunkName) -> Result<()> {
        self.check_chunk_place(h, offset, what)?;
        let at = h.header_len + offset as u64;
        let head = self.src.read(at, CHUNK_HEADER as u64)?.into_owned();
        let (s, src) = (Section { bytes: &head, base: at, name: &self.name }, &mut self.src);
        let avail = (h.cbytes - offset) as u64;
        let ch = check_chunk_header(&s, avail, what, &mut |o, n| src.read_owned(at + o, n))?;
        expect_nbytes(&s, &ch, nbytes, h.typesize, what)
    }

    /// A sparse frame's chunk file: present, a chunk, and exactly as long as its header says.
    fn check_chunk_file(&self, h: &Header, id: i64, nbytes: i64, what: &ChunkName) -> Result<()> {
        let Some((loc, prefix)) = self.chunks_at.as_ref() else { return Ok(()) };
        self.check_chunk_place(h, id, what)?;
        let key = location::join(prefix, &chunk_name(id));
        let name = format!("chunk file '{}'", loc.url(&key));
        // A chunk file that is not there is damage; one the storage could
        // not tell about (a server gone) is the storage's failure.
        let file = open_object(loc.as_ref(), &key, &name).map_err(|e| match e {
            Error::Io { kind, .. } if kind != std::io::ErrorKind::NotFound => e,
            e => Error::InvalidFormat(format!("{}: {what} is missing ({})", self.name, e.message())),
        })?;
        let len = file.len();
        if len < CHUNK_HEADER as u64 || len > i32::MAX as u64 {
            return Err(Error::InvalidFormat(format!("{name}: {len} bytes cannot be a chunk")));
        }
        let head = read_at(file.as_ref(), 0, CHUNK_HEADER)?;
        let s = Section { bytes: &head, base: 0, name: &name };
        let ch = check_chunk_header(&s, len, what, &mut |o, n| read_at(file.as_ref(), o, n))?;
        if ch.cbytes as u64 != len {
            return Err(s.err(12, format!("{what}: the chunk holds {} bytes, the file {len}", ch.cbytes)));
        }
        expect_nbytes(&s, &ch, nbytes, h.typesize, what)
    }
}

/// The first value that `sorted` holds twice. c-blosc2 stores every chunk
/// of a frame apart (an update or an append writes a new one, a sparse
/// frame a new file), so two entries of an offsets index naming one chunk
/// is damage: one of them was flipped onto the other.
pub(super) fn first_repeated(sorted: &[i64]) -> Option<i64> {
    sorted.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// How errors name a chunk: by number when known, else by where it lies
/// (formatted only when an error is made: a frame has many chunks).
struct ChunkName {
    n: Option<i64>,
    offset: i64,
    sparse: bool,
}

impl Display for ChunkName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.n, self.sparse) {
            (Some(n), _) => write!(f, "chunk {n}"),
            (None, true) => write!(f, "chunk file number {}", self.offset),
            (None, false) => write!(f, "the chunk at offset {}", self.offset),
        }
    }
}
