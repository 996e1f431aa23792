//! The on-disk layout facts of Blosc2 frames that more than one module
//! needs (the frame checker and the undo journal), named once. Positions
//! are those of c-blosc2's `blosc/frame.h` and `README_CFRAME_FORMAT.rst`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::io::Served;

/// Fixed part of a frame header (`FRAME_HEADER_MINLEN`).
pub(crate) const HEADER_MINLEN: usize = 87;
/// `int32` header length, big-endian (`FRAME_HEADER_LEN`); msgpack marker `0xd2` before it.
pub(crate) const POS_HEADER_LEN: usize = 11;
/// `int64` compressed bytes, big-endian (`FRAME_CBYTES`); msgpack marker `0xd3` before it.
pub(crate) const POS_CBYTES: usize = 39;
/// Offset of the compressed size (`int32`, little-endian) in a chunk header.
pub(crate) const CHUNK_POS_CBYTES: usize = 12;

/// A frame header opens with a msgpack fixarray of 14 fields, then the
/// fixstr of 8 bytes holding the magic string.
const HEADER_START: [u8; 2] = [0x9e, 0xa8];
/// The magic string (`"b2frame"` and its NUL), at byte [`POS_MAGIC`].
pub(crate) const MAGIC: &[u8; 8] = b"b2frame\0";
/// Where [`MAGIC`] starts.
pub(crate) const POS_MAGIC: usize = 2;

/// The offsets index of a sparse frame, inside its directory.
pub(crate) const SPARSE_INDEX: &str = "chunks.b2frame";

/// The file of chunk `id` in a sparse-frame directory (`%08X.chunk`).
pub(crate) fn chunk_file(dir: &Path, id: i64) -> PathBuf {
    dir.join(format!("{:08X}.chunk", id as u32))
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
    if !contiguous {
        return Ok(xxhash_rust::xxh3::xxh3_64(&std::fs::read(Path::new(urlpath).join(SPARSE_INDEX))?));
    }
    fingerprint_file(&mut File::open(urlpath)?, contiguous)
}

/// The [`fingerprint`] of the frame file (a sparse frame's index) open as `f`.
pub(crate) fn fingerprint_file(f: &mut File, contiguous: bool) -> std::io::Result<u64> {
    let len = f.metadata()?.len();
    if !contiguous {
        let whole = usize::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        return Ok(xxhash_rust::xxh3::xxh3_64(&read_at(f, 0, whole)?));
    }
    // The header in the read of the file's first page, usually.
    let first = read_at(f, 0, len.min(4096) as usize)?;
    fingerprint_of(len, |at, n| match first.get(at as usize..at as usize + n) {
        Some(b) => Ok(b.to_vec()),
        None => read_at(f, at, n),
    })
}

/// The [`fingerprint`] of a frame whose file (a sparse frame's index)
/// holds `len` bytes, from what a check read of it; `None` if that does not
/// cover what the fingerprint hashes.
pub(crate) fn fingerprint_served(served: &Served, contiguous: bool) -> Option<u64> {
    let len = usize::try_from(served.len).ok()?;
    if !contiguous {
        return Some(xxhash_rust::xxh3::xxh3_64(&served.bytes(0, len)?));
    }
    let missing = || std::io::Error::from(std::io::ErrorKind::NotFound);
    fingerprint_of(served.len, |at, n| served.bytes(at, n).ok_or_else(missing)).ok()
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

/// `len` bytes of `file` from `at`.
pub(crate) fn read_at(file: &mut File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    buf.resize(len, 0);
    // One positioned read (no seek: half the system calls).
    std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, at)?;
    Ok(buf)
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
