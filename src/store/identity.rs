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
