//! The on-disk layout facts of Blosc2 frames (header positions and
//! markers, magic, trailer, special offsets), named once for the frame
//! checker, the undo journal and the binding. Positions
//! are those of c-blosc2's `blosc/frame.h` and `README_CFRAME_FORMAT.rst`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::location::{self, FrameSite, Generation, Object, Protocol, Slice};
use crate::blosc2::chunk_header::{ChunkHeader, HEADER_LEN};

/// Fixed part of a frame header (`FRAME_HEADER_MINLEN`).
pub(crate) const HEADER_MINLEN: usize = 87;
/// `int32` header length, big-endian (`FRAME_HEADER_LEN`); msgpack marker `0xd2` before it.
pub(crate) const POS_HEADER_LEN: usize = 11;
/// `int64` compressed bytes, big-endian (`FRAME_CBYTES`); msgpack marker `0xd3` before it.
pub(crate) const POS_CBYTES: usize = 39;

/// A frame header opens with a msgpack fixarray of 14 fields, then the
/// fixstr of 8 bytes holding the magic string.
const HEADER_START: [u8; 2] = [0x9e, 0xa8];
/// The magic string (`"b2frame"` and its NUL), at byte [`POS_MAGIC`].
pub(crate) const MAGIC: &[u8; 8] = b"b2frame\0";
/// Where [`MAGIC`] starts.
pub(crate) const POS_MAGIC: usize = 2;

/// The offsets index of a sparse frame, inside its directory.
pub(crate) const SPARSE_INDEX: &str = "chunks.b2frame";

/// `uint64` frame length, big-endian (`FRAME_LEN`); msgpack marker `0xcf` before it.
pub(crate) const POS_FRAME_LEN: usize = 16;
/// `int64` uncompressed bytes, big-endian (`FRAME_NBYTES`); marker `0xd3` before it.
pub(crate) const POS_NBYTES: usize = 30;
/// `int32` chunk size, big-endian (`FRAME_CHUNKSIZE`); marker `0xd2` before it.
pub(crate) const POS_CHUNKSIZE: usize = 58;
/// The end of every trailer: `0xce`, its `uint32` length (big-endian), then
/// the fingerprint's `fixext 16` (`0xd8`, type, 16 bytes).
pub(crate) const TRAILER_TAIL: usize = 23;
/// An offsets entry of a special chunk: the top bit, and its kind in the top byte.
pub(crate) const SPECIAL_OFFSET: u64 = 1 << 63;
/// General flags: format version and offset width (`FRAME_FLAGS`).
pub(crate) const POS_GENERAL_FLAGS: usize = 25;
/// General flag of c-blosc2 3.x: the chunks have variable-length blocks
/// (`FRAME_VL_BLOCKS`), a chunk format 2.15 does not decode.
pub(crate) const FRAME_VL_BLOCKS: u8 = 0x80;
/// Frame type: contiguous or sparse (`FRAME_TYPE`).
pub(crate) const POS_FRAME_TYPE: usize = 26;
/// Split mode minus one (`FRAME_OTHER_FLAGS`).
pub(crate) const POS_OTHER_FLAGS: usize = 28;
/// `int32` typesize (`FRAME_TYPESIZE`).
pub(crate) const POS_TYPESIZE: usize = 48;
/// `int32` block size (`FRAME_BLOCKSIZE`).
pub(crate) const POS_BLOCKSIZE: usize = 53;
/// Filter count, then the filters (`FRAME_FILTER_PIPELINE`).
pub(crate) const POS_FILTERS: usize = 70;
/// The msgpack markers c-blosc2 writes at fixed header positions.
pub(crate) const HEADER_MARKERS: [(usize, u8, &str); 13] = [
    (0, 0x9e, "fixarray of 14 fields"),
    (1, 0xa8, "magic string marker"),
    (10, 0xd2, "header length marker"),
    (15, 0xcf, "frame length marker"),
    (24, 0xa4, "flags marker"),
    (29, 0xd3, "nbytes marker"),
    (38, 0xd3, "cbytes marker"),
    (47, 0xd2, "typesize marker"),
    (52, 0xd2, "blocksize marker"),
    (57, 0xd2, "chunksize marker"),
    (62, 0xd1, "compression threads marker"),
    (65, 0xd1, "decompression threads marker"),
    (69, 0xd8, "filter pipeline marker"),
];
/// `map16` of the metalayers index, in the header.
pub(crate) const META_MAP: usize = 91;
/// `has_vlmetalayers`: msgpack false or true.
pub(crate) const POS_HAS_VLMETA: usize = 68;
/// Bytes at the end of every trailer: `uint32` length and fingerprint (`FRAME_TRAILER_MINLEN`).
pub(crate) const TRAILER_MINLEN: usize = 25;
/// `map16` of the vlmetalayers index, in the trailer.
pub(crate) const VLMETA_MAP: usize = 6;
/// Newest trailer version (`FRAME_TRAILER_VERSION`).
pub(crate) const TRAILER_VERSION: u8 = 1;
/// Frame types (`FRAME_CONTIGUOUS_TYPE`, `FRAME_DIRECTORY_TYPE`).
pub(crate) const CONTIGUOUS_TYPE: u8 = 0;
pub(crate) const SPARSE_TYPE: u8 = 1;

/// The file of chunk `id` in a sparse-frame directory (`%08X.chunk`).
pub(crate) fn chunk_file(dir: &Path, id: i64) -> PathBuf {
    dir.join(chunk_name(id))
}

/// The name of chunk file `id` in its sparse frame (`%08X.chunk`).
pub(crate) fn chunk_name(id: i64) -> String {
    format!("{:08X}.chunk", id as u32)
}

/// The chunk number of a `%08X.chunk` file name.
pub(crate) fn chunk_id(name: &str) -> Option<i64> {
    let hex = name.strip_suffix(".chunk")?;
    let ok = hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
    ok.then(|| i64::from_str_radix(hex, 16).ok()).flatten()
}

/// Whether `path` is a sparse-frame directory (a directory holding an index).
pub(crate) fn is_sparse_dir(path: &Path) -> bool {
    path.is_dir() && path.join(SPARSE_INDEX).is_file()
}

/// Whether `head`, the first bytes of a file, start a Blosc2 frame header
/// (the fixarray and fixstr markers, then [`MAGIC`]).
pub(crate) fn has_magic(head: &[u8]) -> bool {
    head.starts_with(&HEADER_START) && head.get(POS_MAGIC..POS_MAGIC + MAGIC.len()) == Some(&MAGIC[..])
}

/// Whether `head`, the first bytes of a file (fewer than a header's, for
/// a file cut short), are what a Blosc2 frame's first bytes are: a file
/// being written as a frame, at any point (an empty one too).
pub(crate) fn is_frame_start(head: &[u8]) -> bool {
    let mut start = [0u8; POS_MAGIC + MAGIC.len()];
    start[..POS_MAGIC].copy_from_slice(&HEADER_START);
    start[POS_MAGIC..].copy_from_slice(MAGIC);
    let n = head.len().min(start.len());
    head[..n] == start[..n]
}

/// Whether `path` itself (a symbolic link is not followed) is a regular
/// file that starts like a Blosc2 frame: what may be taken for a frame
/// file, to replace or remove. A damaged frame still counts; a text file,
/// an empty file or a link does not.
pub(crate) fn is_frame_file(path: &Path) -> bool {
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    let mut head = [0u8; POS_MAGIC + MAGIC.len()];
    regular && File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && has_magic(&head)
}

/// Whether `path` itself (not a link) is a directory that holds a sparse
/// frame and nothing else: regular files named as chunks ([`chunk_id`]) and
/// an index [`SPARSE_INDEX`] that starts like a frame. A directory of other
/// things with a stray index is not an array to replace or remove, nor is
/// an empty one; one whose index alone is lost (chunk files only) still is.
pub(crate) fn is_sparse_array(path: &Path) -> bool {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    let mut any = false;
    for e in entries {
        let Ok(e) = e else { return false };
        let Ok(md) = e.metadata() else { return false };
        let name = e.file_name();
        let Some(name) = name.to_str() else { return false };
        let ok = if name == SPARSE_INDEX { is_frame_file(&e.path()) } else { md.is_file() && chunk_id(name).is_some() };
        if !ok {
            return false;
        }
        any = true;
    }
    any
}

/// A check value over what every change of a stored frame rewrites: for a
/// file, its length, header and everything from the end of its data
/// section (offsets and trailer); for a sparse frame, its index. Two
/// handles on one array compare it to tell whether the other changed it.
///
/// # Errors
/// If the frame cannot be read.
pub(crate) fn fingerprint(urlpath: &str, contiguous: bool) -> std::io::Result<u64> {
    let site = FrameSite::new(urlpath, contiguous, None)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    fingerprint_site(&site)
}

/// The [`fingerprint`] of the frame at `site` (a frame inside a larger
/// object: of the frame alone).
pub(crate) fn fingerprint_site(site: &FrameSite) -> std::io::Result<u64> {
    let object = site.location.open(&frame_object(site))?;
    match site.offset {
        None if site.location.protocol() == Protocol::Versioned => {
            fingerprint_version(object.as_ref(), site.contiguous)
        }
        None => fingerprint_object(object.as_ref(), site.contiguous),
        Some(at) => {
            let head = object.read_vec(at, HEADER_MINLEN)?;
            let len = u64::from_be_bytes(head[POS_FRAME_LEN..POS_FRAME_LEN + 8].try_into().unwrap_or([0xff; 8]));
            let slice =
                Slice::new(object, at, len).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
            fingerprint_object(&slice, true)
        }
    }
}

/// The object that holds the frame at `site`: the frame file, or a sparse frame's index.
pub(crate) fn frame_object(site: &FrameSite) -> String {
    if site.contiguous {
        site.key.clone()
    } else {
        location::join(&site.key, SPARSE_INDEX)
    }
}

/// The [`fingerprint`] of the frame object (a sparse frame's index) `o`, as it is now.
pub(crate) fn fingerprint_object(o: &dyn Object, contiguous: bool) -> std::io::Result<u64> {
    let len = o.len_now()?;
    if !contiguous {
        let whole = usize::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        return Ok(xxhash_rust::xxh3::xxh3_64(&o.read_vec(0, whole)?));
    }
    // The header in the read of the file's first page, usually.
    let first = o.read_vec(0, len.min(4096) as usize)?;
    fingerprint_of(len, |at, n| match first.get(at as usize..at as usize + n) {
        Some(b) => Ok(b.to_vec()),
        None => o.read_vec(at, n),
    })
}

/// The [`fingerprint`] of the frame object `o` at a versioned location,
/// where an object changes by new versions, not in place: its content's
/// and its generation's, so that a version with the same index and
/// trailer (a chunk rewritten at the same size) differs too.
pub(crate) fn fingerprint_version(o: &dyn Object, contiguous: bool) -> std::io::Result<u64> {
    Ok(with_generation(fingerprint_object(o, contiguous)?, o.generation()))
}

/// A frame's content fingerprint ([`fingerprint_object`], [`fingerprint_served`])
/// made that of one version ([`fingerprint_version`]).
pub(crate) fn with_generation(content: u64, generation: &Generation) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&content.to_le_bytes());
    h.update(generation.to_string().as_bytes());
    h.digest()
}

/// The [`fingerprint`] of a frame whose file (a sparse frame's index)
/// holds `len` bytes, from what a check read of it (`served(at, n)`: the
/// bytes it read there, `blosc_io::CheckedBytes::bytes`); `None` if that
/// does not cover what the fingerprint hashes.
pub(crate) fn fingerprint_served(
    len: u64,
    served: impl Fn(u64, usize) -> Option<Vec<u8>>,
    contiguous: bool,
) -> Option<u64> {
    if !contiguous {
        return Some(xxhash_rust::xxh3::xxh3_64(&served(0, usize::try_from(len).ok()?)?));
    }
    let missing = || std::io::Error::from(std::io::ErrorKind::NotFound);
    fingerprint_of(len, |at, n| served(at, n).ok_or_else(missing)).ok()
}

/// The fingerprint of a contiguous frame of `len` bytes, read by `read(at, n)`.
fn fingerprint_of(len: u64, mut read: impl FnMut(u64, usize) -> std::io::Result<Vec<u8>>) -> std::io::Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let head = read(0, len.min(HEADER_MINLEN as u64) as usize)?;
    h.update(&len.to_le_bytes());
    match data_section(&head, len) {
        Some((header_len, data_end)) => {
            h.update(&read(0, header_len as usize)?);
            h.update(&read(data_end, (len - data_end) as usize)?);
        }
        None => h.update(&head),
    }
    Ok(h.digest())
}

/// The header length and the end of the data section (`header_len +
/// cbytes`) of a contiguous frame of `len` bytes, from its first
/// [`HEADER_MINLEN`] bytes; `None` unless both are sound.
pub(crate) fn data_section(head: &[u8], len: u64) -> Option<(u64, u64)> {
    let be32 = head.get(POS_HEADER_LEN..POS_HEADER_LEN + 4)?;
    let be64 = head.get(POS_CBYTES..POS_CBYTES + 8)?;
    if head[POS_HEADER_LEN - 1] != 0xd2 || head[POS_CBYTES - 1] != 0xd3 {
        return None;
    }
    let header_len = u64::try_from(i32::from_be_bytes(be32.try_into().ok()?)).ok()?;
    let cbytes = u64::try_from(i64::from_be_bytes(be64.try_into().ok()?)).ok()?;
    let data_end = header_len.checked_add(cbytes)?;
    (header_len >= HEADER_MINLEN as u64 && data_end <= len).then_some((header_len, data_end))
}

/// Where the sections of a frame (a sparse frame's index) lie, from its
/// header and the end of its trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sections {
    /// Header length: the data section (or, sparse, the offsets chunk) starts here.
    pub(crate) header_len: u64,
    /// Uncompressed bytes of all chunks (the header's `nbytes`).
    pub(crate) nbytes: i64,
    /// Compressed bytes of the stored chunks (the header's `cbytes`).
    pub(crate) cbytes: i64,
    /// The chunk size the header gives.
    pub(crate) chunksize: i32,
    /// Where the trailer starts (the offsets chunk ends).
    pub(crate) trailer_at: u64,
    /// The frame's length (the file's, or the index's).
    pub(crate) len: u64,
}

impl Sections {
    /// The sections of a frame of `len` bytes whose first [`HEADER_MINLEN`]
    /// bytes are `head` and last [`TRAILER_TAIL`] bytes `tail`; `None`
    /// unless the markers are where c-blosc2 writes them and the lengths fit.
    pub(crate) fn read(head: &[u8], tail: &[u8], len: u64) -> Option<Sections> {
        let be = |at: usize, n: usize| head.get(at..at + n);
        let markers = [
            (POS_HEADER_LEN, 0xd2),
            (POS_FRAME_LEN, 0xcf),
            (POS_NBYTES, 0xd3),
            (POS_CBYTES, 0xd3),
            (POS_CHUNKSIZE, 0xd2),
        ];
        if !has_magic(head) || markers.iter().any(|&(at, m)| head.get(at - 1) != Some(&m)) {
            return None;
        }
        let header_len = u64::try_from(i32::from_be_bytes(be(POS_HEADER_LEN, 4)?.try_into().ok()?)).ok()?;
        let stated = u64::from_be_bytes(be(POS_FRAME_LEN, 8)?.try_into().ok()?);
        let nbytes = i64::from_be_bytes(be(POS_NBYTES, 8)?.try_into().ok()?);
        let cbytes = i64::from_be_bytes(be(POS_CBYTES, 8)?.try_into().ok()?);
        let chunksize = i32::from_be_bytes(be(POS_CHUNKSIZE, 4)?.try_into().ok()?);
        if tail.len() != TRAILER_TAIL || tail[0] != 0xce || tail[5] != 0xd8 || stated != len {
            return None;
        }
        let trailer_len = u64::from(u32::from_be_bytes(tail[1..5].try_into().ok()?));
        let trailer_at = len.checked_sub(trailer_len)?;
        (header_len >= HEADER_MINLEN as u64 && trailer_at >= header_len && nbytes >= 0 && cbytes >= 0)
            .then_some(Sections { header_len, nbytes, cbytes, chunksize, trailer_at, len })
    }
}

/// Write a frame's new length and sizes into its header.
pub(crate) fn patch_header(header: &mut [u8], len: u64, nbytes: i64, cbytes: i64) {
    header[POS_FRAME_LEN..POS_FRAME_LEN + 8].copy_from_slice(&len.to_be_bytes());
    header[POS_NBYTES..POS_NBYTES + 8].copy_from_slice(&nbytes.to_be_bytes());
    header[POS_CBYTES..POS_CBYTES + 8].copy_from_slice(&cbytes.to_be_bytes());
}

/// Chunks to append to a frame, as c-blosc2's `frame_append_chunk` would
/// store them one by one.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Appended {
    /// The whole new offsets index (the old entries, then one per new chunk).
    pub(crate) offsets: Vec<i64>,
    /// The new chunks that are stored (not special), in order: their index
    /// among the new chunks and where they go (the byte offset in the data
    /// section of a contiguous frame, the chunk file number of a sparse one).
    pub(crate) stored: Vec<(usize, i64)>,
    /// Compressed bytes the stored chunks add.
    pub(crate) cbytes: i64,
}

/// Plan appending `chunks` (each its `cbytes` bytes, `cbytes[i]`) to a frame
/// whose offsets index is `old` and data section holds `data_len` bytes. A
/// chunk of zeros, NaNs or uninitialised items is stored in its index entry
/// alone; the others go at the end of the data section (contiguous) or in
/// new chunk files numbered past the largest in use (sparse).
pub(crate) fn plan_append(old: &[i64], sparse: bool, data_len: i64, chunks: &[&[u8]]) -> Appended {
    let mut offsets = Vec::with_capacity(old.len() + chunks.len());
    offsets.extend_from_slice(old);
    let mut next_id = old.iter().copied().max().unwrap_or(-1).max(-1) + 1;
    let mut at = data_len;
    let mut stored = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let kind = c.get(..HEADER_LEN).and_then(ChunkHeader::parse).map_or(0, |h| h.special());
        let special =
            [blosc2_sys::BLOSC2_SPECIAL_ZERO, blosc2_sys::BLOSC2_SPECIAL_NAN, blosc2_sys::BLOSC2_SPECIAL_UNINIT];
        if special.contains(&u32::from(kind)) {
            offsets.push((SPECIAL_OFFSET | u64::from(kind) << 56) as i64);
        } else if sparse {
            offsets.push(next_id);
            stored.push((i, next_id));
            next_id += 1;
        } else {
            offsets.push(at);
            stored.push((i, at));
            at += c.len() as i64;
        }
    }
    let cbytes = stored.iter().map(|&(i, _)| chunks[i].len() as i64).sum();
    Appended { offsets, stored, cbytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_start_is_recognised_at_any_length() {
        let mut start = HEADER_START.to_vec();
        start.extend_from_slice(MAGIC);
        start.extend_from_slice(b"anything after");
        for n in 0..start.len() {
            assert!(is_frame_start(&start[..n]), "{n} bytes");
        }
        assert!(!is_frame_start(b"a user's notes"));
        assert!(!is_frame_start(&[0x9e, 0xa8, b'x']));
    }

    #[test]
    fn chunk_file_names_round_trip() {
        let p = chunk_file(Path::new("d"), 0x1A);
        assert_eq!(p, Path::new("d/0000001A.chunk"));
        assert_eq!(chunk_id("0000001A.chunk"), Some(0x1A));
        assert_eq!(chunk_id("0000001a.chunk"), None);
        assert_eq!(chunk_id("1A.chunk"), None);
    }

    /// A chunk header whose special kind is `kind`, of `len` bytes.
    fn chunk(kind: u8, len: usize) -> Vec<u8> {
        let mut c = vec![0u8; len];
        c[crate::blosc2::chunk_header::POS_BLOSC2_FLAGS] = kind << 4;
        c
    }

    #[test]
    fn appends_are_planned_as_c_blosc2_stores_them() {
        let zero = chunk(blosc2_sys::BLOSC2_SPECIAL_ZERO as u8, 32);
        let nan = chunk(blosc2_sys::BLOSC2_SPECIAL_NAN as u8, 32);
        let value = chunk(blosc2_sys::BLOSC2_SPECIAL_VALUE as u8, 40);
        let data = chunk(0, 100);
        let new: Vec<&[u8]> = vec![&data, &zero, &value, &nan, &data];
        let special = |kind: u32| (SPECIAL_OFFSET | u64::from(kind) << 56) as i64;
        // Contiguous: stored chunks follow the data section's 500 bytes.
        let p = plan_append(&[0, 250], false, 500, &new);
        assert_eq!(
            p.offsets,
            vec![
                0,
                250,
                500,
                special(blosc2_sys::BLOSC2_SPECIAL_ZERO),
                600,
                special(blosc2_sys::BLOSC2_SPECIAL_NAN),
                640
            ]
        );
        assert_eq!(p.stored, vec![(0, 500), (2, 600), (4, 640)]);
        assert_eq!(p.cbytes, 240);
        // Sparse: new chunk files numbered past the largest in use (specials do not count).
        let p = plan_append(&[3, special(1), 7], true, 0, &new);
        assert_eq!(&p.offsets[3..], &[8, special(1), 9, special(2), 10]);
        assert_eq!(p.stored, vec![(0, 8), (2, 9), (4, 10)]);
        let p = plan_append(&[special(1)], true, 0, &new[..1]);
        assert_eq!(p.offsets, vec![special(1), 0]);
    }

    #[test]
    fn sections_come_from_header_and_trailer_end() {
        let mut head = vec![0u8; HEADER_MINLEN];
        head[..2].copy_from_slice(&HEADER_START);
        head[POS_MAGIC..POS_MAGIC + 8].copy_from_slice(MAGIC);
        for (at, m) in [
            (POS_HEADER_LEN, 0xd2),
            (POS_FRAME_LEN, 0xcf),
            (POS_NBYTES, 0xd3),
            (POS_CBYTES, 0xd3),
            (POS_CHUNKSIZE, 0xd2),
        ] {
            head[at - 1] = m;
        }
        head[POS_HEADER_LEN..POS_HEADER_LEN + 4].copy_from_slice(&120i32.to_be_bytes());
        head[POS_CHUNKSIZE..POS_CHUNKSIZE + 4].copy_from_slice(&64i32.to_be_bytes());
        patch_header(&mut head, 1000, 6400, 700);
        let mut tail = vec![0u8; TRAILER_TAIL];
        tail[0] = 0xce;
        tail[1..5].copy_from_slice(&60u32.to_be_bytes());
        tail[5] = 0xd8;
        let s = Sections::read(&head, &tail, 1000).unwrap();
        assert_eq!(
            s,
            Sections { header_len: 120, nbytes: 6400, cbytes: 700, chunksize: 64, trailer_at: 940, len: 1000 }
        );
        // A length the header does not state, a damaged marker: not read.
        assert!(Sections::read(&head, &tail, 999).is_none());
        tail[5] = 0;
        assert!(Sections::read(&head, &tail, 1000).is_none());
    }

    #[test]
    fn magic() {
        let mut head = vec![0x9e, 0xa8];
        head.extend_from_slice(MAGIC);
        assert!(has_magic(&head));
        assert!(!has_magic(&head[..9]));
        head[0] = 0x9f;
        assert!(!has_magic(&head));
        assert!(!has_magic(b"shopping list"));
    }
}
