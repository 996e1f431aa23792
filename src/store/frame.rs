//! The on-disk layout facts of Blosc2 frames that more than one module
//! needs (the frame checker and the undo journal), named once. Positions
//! are those of c-blosc2's `blosc/frame.h` and `README_CFRAME_FORMAT.rst`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Fixed part of a frame header (`FRAME_HEADER_MINLEN`).
pub(crate) const HEADER_MINLEN: usize = 87;
/// `int32` header length, big-endian (`FRAME_HEADER_LEN`); msgpack marker `0xd2` before it.
pub(crate) const POS_HEADER_LEN: usize = 11;
/// `int64` compressed bytes, big-endian (`FRAME_CBYTES`); msgpack marker `0xd3` before it.
pub(crate) const POS_CBYTES: usize = 39;
/// Offset of the compressed size (`int32`, little-endian) in a chunk header.
pub(crate) const CHUNK_POS_CBYTES: usize = 12;

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

/// `len` bytes of `file` from `at`.
pub(crate) fn read_at(file: &mut File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut buf)?;
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
    fn chunk_file_names_round_trip() {
        let p = chunk_file(Path::new("d"), 0x1A);
        assert_eq!(p, Path::new("d/0000001A.chunk"));
        assert_eq!(chunk_id("0000001A.chunk"), Some(0x1A));
        assert_eq!(chunk_id("0000001a.chunk"), None);
        assert_eq!(chunk_id("1A.chunk"), None);
    }
}
