//! Which file a path or an open file is: its device and inode. Two paths
//! name one file, a lock file is still the one a holder locked, a journal
//! still belongs to the frame it was written for, all by this identity.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A file's device and inode.
pub(crate) type Id = (u64, u64);

/// The identity of the file `md` describes.
pub(crate) fn of(md: &Metadata) -> Id {
    (md.dev(), md.ino())
}

/// The identity of what is at `path` itself (a symbolic link is not followed).
pub(crate) fn at(path: &Path) -> std::io::Result<Id> {
    std::fs::symlink_metadata(path).map(|m| of(&m))
}

/// The identity of the file `path` leads to (symbolic links followed).
pub(crate) fn followed(path: &Path) -> std::io::Result<Id> {
    std::fs::metadata(path).map(|m| of(&m))
}

/// Whether what is at `path` itself is still the file `id` (a lock file
/// its holder locked, not one made again since).
pub(crate) fn is_at(path: &Path, id: Id) -> bool {
    at(path).ok() == Some(id)
}

/// Whether `file` is the file `path` leads to (it was not deleted or
/// replaced since it was opened).
pub(crate) fn still_at(file: &std::fs::File, path: &Path) -> bool {
    matches!((followed(path), file.metadata()), (Ok(a), Ok(m)) if a == of(&m))
}

/// Whether `a` and `b` lead to one file (symbolic links followed).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    matches!((followed(a), followed(b)), (Ok(x), Ok(y)) if x == y)
}

/// `id` as the journal records it: device then inode, little-endian.
pub(crate) fn to_le_bytes((dev, ino): Id) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&dev.to_le_bytes());
    out[8..].copy_from_slice(&ino.to_le_bytes());
    out
}

/// The identity [`to_le_bytes`] wrote at the start of `bytes`, if they hold one.
pub(crate) fn from_le_bytes(bytes: &[u8]) -> Option<Id> {
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    Some((u64_at(0)?, u64_at(8)?))
}
