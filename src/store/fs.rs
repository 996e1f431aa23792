//! The file-system primitives of the store layer, beneath the lock, the
//! journal and the paths of stores: the names beside an array
//! (`<urlpath>.caterva-…`, [`sidecar`]), syncs of directories, what one of
//! our writes leaves behind ([`is_our_leftover`]) and its removal, and the
//! replacement of a sparse-frame directory by another ([`replace_dir`]).
//!
//! The files beside an array are named after the file a symbolic link at
//! `urlpath` points to ([`sidecar`]), so every spelling of an array's path
//! finds the same journal and lock.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{frame, io};
use crate::error::{Error, Result};

/// Suffix of a sparse-frame directory put aside while [`replace_dir`]
/// replaces it: `<urlpath>.caterva-old`.
pub(super) const OLD_SUFFIX: &str = ".caterva-old";

/// `urlpath` without trailing slashes (unless that leaves nothing).
pub(super) fn trimmed(urlpath: &str) -> &str {
    let t = urlpath.trim_end_matches('/');
    if t.is_empty() {
        urlpath
    } else {
        t
    }
}

/// `base` (a [`sidecar`] with an empty suffix) with `suffix` appended:
/// the sidecars of one array without looking at its path again.
pub(super) fn suffixed(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file beside the array at `urlpath` named with `suffix`. When
/// `urlpath` is a symbolic link, the name is that of the file it points to.
pub(super) fn sidecar(urlpath: &str, suffix: &str) -> PathBuf {
    let base = trimmed(urlpath);
    if std::fs::symlink_metadata(base).is_ok_and(|m| m.file_type().is_symlink()) {
        if let Ok(real) = std::fs::canonicalize(base) {
            let mut s = real.into_os_string();
            s.push(suffix);
            return PathBuf::from(s);
        }
    }
    PathBuf::from(format!("{base}{suffix}"))
}

/// Whether what is at `path`, a name of ours beside an array, holds what
/// one of our writes leaves there, at any point of it: a file that starts
/// as a frame does (or is empty), or a directory of files named as a sparse
/// frame's index and chunk files (or empty). Anything else there (a user's
/// file that happens to have the name, a link) is not ours, and is neither
/// used nor removed.
pub(super) fn is_our_leftover(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            let mut head = Vec::with_capacity(16);
            std::fs::File::open(path).and_then(|f| f.take(16).read_to_end(&mut head)).is_ok()
                && frame::is_frame_start(&head)
        }
        Ok(m) if m.is_dir() => std::fs::read_dir(path).is_ok_and(|entries| {
            entries.into_iter().all(|e| {
                e.is_ok_and(|e| {
                    let name = e.file_name();
                    let ours = name.to_str().is_some_and(|n| n == frame::SPARSE_INDEX || frame::chunk_id(n).is_some());
                    ours && e.file_type().is_ok_and(|t| t.is_file())
                })
            })
        }),
        _ => false,
    }
}

/// Remove what one of our writes left at `path` (a name of ours: a
/// temporary copy, a directory put aside): a file, or a directory's frame
/// files and the directory. Nothing there is fine.
///
/// # Errors
/// [`Error::InvalidStorage`] if what is there is not ours
/// ([`is_our_leftover`]): it stays; [`Error::Io`] if removing fails.
pub(super) fn remove_leftover(path: &Path) -> Result<()> {
    let Ok(m) = std::fs::symlink_metadata(path) else { return Ok(()) };
    if !is_our_leftover(path) {
        let p = path.display();
        return Err(Error::storage(
            None,
            format!(
                "'{p}' has a name caterva uses beside an array, but is not something caterva left there; \
                 refusing to remove it (move it away)"
            ),
        ));
    }
    remove_own(path, &m)
}

/// Remove what this process made at `path` (a file or link, or a frame
/// directory), whatever it holds now.
pub(super) fn remove_own(path: &Path, m: &std::fs::Metadata) -> Result<()> {
    if m.is_dir() {
        remove_frame_dir(path)
    } else {
        io::remove_file(path).map_err(|e| Error::io("removing", Some(path), &e))
    }
}

/// Remove a sparse frame's files (its index and chunks) and then the
/// directory, which fails if anything else is in it.
pub(super) fn remove_frame_dir(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", Some(dir), &e))?;
    for e in entries.flatten() {
        let name = e.file_name();
        let ours = name.to_str().is_some_and(|n| n == frame::SPARSE_INDEX || frame::chunk_id(n).is_some());
        if ours {
            io::remove_file(&e.path()).map_err(|err| Error::io("removing", Some(&e.path()), &err))?;
        }
    }
    io::remove_dir(dir).map_err(|e| Error::io("removing", Some(dir), &e))
}

/// The directory holding `path` (`.` for a bare name).
pub(super) fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Make the entries of `dir` (created, renamed, removed files) durable, if `sync`.
pub(super) fn sync_dir(dir: &Path, sync: bool) -> Result<()> {
    if !sync {
        return Ok(());
    }
    io::sync_dir(dir).map_err(|e| Error::io("syncing directory", Some(dir), &e))
}

/// Replace the sparse-frame directory `target` by `fresh`. A directory
/// cannot be renamed over another, so `target` is first renamed aside;
/// [`super::journal::recover`] puts it back if the process dies before `fresh` takes its
/// place. With `sync`, the renames are made durable before the old
/// directory is removed.
///
/// # Errors
/// [`Error::Io`] if a rename fails; [`Error::Blosc`] if the old
/// directory cannot be removed.
pub(super) fn replace_dir(fresh: &str, target: &str, sync: bool) -> Result<()> {
    let old = sidecar(target, OLD_SUFFIX);
    if old.exists() {
        remove_leftover(&old)?;
    }
    io::rename(Path::new(target), &old).map_err(|e| Error::io("renaming", Some(Path::new(target)), &e))?;
    io::rename(Path::new(fresh), Path::new(target)).map_err(|e| Error::io("renaming", Some(Path::new(fresh)), &e))?;
    sync_dir(parent_dir(Path::new(trimmed(target))), sync)?;
    remove_leftover(&old)
}

/// Complete a [`replace_dir`] that was interrupted (on recovery).
pub(super) fn finish_replace(urlpath: &str) -> Result<()> {
    let old = sidecar(urlpath, OLD_SUFFIX);
    // Nothing put aside, or something of that name that is not ours: left alone.
    if !is_our_leftover(&old) {
        return Ok(());
    }
    if Path::new(urlpath).exists() {
        remove_leftover(&old)
    } else {
        io::rename(&old, Path::new(urlpath)).map_err(|e| Error::io("restoring", Some(&old), &e))
    }
}

/// `len` bytes of `file` from `at`, in a buffer allocated fallibly.
pub(crate) fn read_at(file: &mut std::fs::File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    buf.resize(len, 0);
    // One positioned read (no seek: half the system calls).
    std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, at)?;
    Ok(buf)
}
