//! Where stores live on disk: what a new store may replace or
//! `Store::remove` may delete (arrays only), whether two paths name the same
//! array ([`overlap`]), how a store is written beside its target and renamed
//! into place, and cleaning up after creations that failed or were killed.
//!
//! What counts as an array on disk: a regular file that starts like a
//! Blosc2 frame ([`frame::is_frame_file`]), or a directory holding a
//! sparse frame's index and chunk files and nothing else
//! ([`frame::is_sparse_array`]). Anything else at a path (a text file, a
//! directory of other files, a symbolic link) is never replaced nor
//! removed: the call is refused with [`Error::InvalidStorage`].
//!
//! The files beside an array (`<urlpath>.caterva-…`) are named in
//! [`super::fs`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::fs::{parent_dir, remove_frame_dir, remove_leftover, remove_own, replace_dir, sync_dir, trimmed};
use super::lock::{self, Got, Wait, LOCK_SUFFIX};
use super::schunk::Storage;
use super::{frame, identity, io, journal};
use crate::error::{Error, Result};

/// Infix of the temporary copies [`write_beside`] makes:
/// `<target>.caterva-tmp-<pid>-<n>`.
const TMP_INFIX: &str = ".caterva-tmp-";

/// Where a symbolic link at `urlpath` leads (every link followed), if it
/// is one: what a replacement of the array there replaces.
pub(super) fn link_target(urlpath: &str) -> Option<String> {
    let base = trimmed(urlpath);
    if !std::fs::symlink_metadata(base).is_ok_and(|m| m.file_type().is_symlink()) {
        return None;
    }
    std::fs::canonicalize(base).ok()?.into_os_string().into_string().ok()
}

/// Whether `storage.urlpath` is free (`Ok(false)`) or holds an array of the
/// same kind that may be replaced (`Ok(true)`). Anything else there is
/// refused rather than destroyed.
///
/// # Errors
/// [`Error::InvalidStorage`] for an empty path or one taken by something else.
pub(crate) fn check_replaceable(storage: &Storage) -> Result<bool> {
    let Some(url) = storage.urlpath.as_deref() else { return Ok(false) };
    if url.is_empty() {
        return Err(Error::storage(None, "urlpath is empty"));
    }
    let p = Path::new(url);
    if std::fs::symlink_metadata(p).is_err() {
        return Ok(false);
    }
    let replaceable = if storage.contiguous { frame::is_frame_file(p) } else { frame::is_sparse_array(p) };
    if !replaceable {
        let kind = if storage.contiguous {
            "a Blosc2 frame file"
        } else {
            "a sparse-frame directory (a frame index and chunk files only)"
        };
        return Err(Error::storage(Some(url), format!("'{url}' exists and is not {kind}; refusing to overwrite it")));
    }
    Ok(true)
}

/// How a target path relates to a source array's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// The same file or directory, however spelt (`./a`, a symbolic or hard link).
    Same,
    /// Inside the source's directory.
    Inside,
    /// A directory that holds the source.
    Holds,
}

/// How `target` relates to the array at `source`, if at all. Files are
/// compared by identity (device and inode; symbolic links followed), and
/// paths after resolving links (for a target that does not exist yet, its
/// parent directory's resolved path and its name).
pub(crate) fn overlap(target: &str, source: &str) -> Option<Overlap> {
    let src = std::fs::canonicalize(trimmed(source)).ok()?;
    let t = Path::new(trimmed(target));
    let dst = match std::fs::canonicalize(t) {
        Ok(p) => p,
        Err(_) => {
            let parent = t.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            std::fs::canonicalize(parent).ok()?.join(t.file_name()?)
        }
    };
    if dst == src || identity::same_file(&dst, &src) {
        Some(Overlap::Same)
    } else if dst.starts_with(&src) {
        Some(Overlap::Inside)
    } else if src.starts_with(&dst) {
        Some(Overlap::Holds)
    } else {
        None
    }
}

/// The error for writing a new array at `target`, which `o` relates to the source.
pub(crate) fn overlap_error(target: &str, o: Overlap) -> Error {
    let why = match o {
        Overlap::Same => "is the source array itself",
        Overlap::Inside => "lies inside the source array's directory",
        Overlap::Holds => "holds the source array",
    };
    Error::storage(Some(target), format!("'{target}' {why}; refusing to write over it"))
}

/// Remove the array at `urlpath` (whose lock the caller holds). A path
/// where nothing is is fine.
///
/// # Errors
/// [`Error::InvalidStorage`] if what is there is not an array (nothing is
/// removed); [`Error::Io`] if removing fails.
pub(super) fn remove_array(urlpath: &str) -> Result<()> {
    let p = Path::new(urlpath);
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("reading", Some(p), &e)),
        Ok(_) if frame::is_frame_file(p) => io::remove_file(p).map_err(|e| Error::io("removing", Some(p), &e)),
        Ok(_) if frame::is_sparse_array(p) => remove_frame_dir(p),
        Ok(_) => Err(Error::storage(
            Some(urlpath),
            format!(
                "'{urlpath}' is not an array (a Blosc2 frame file, or a directory holding a sparse frame and \
                 nothing else); refusing to remove it"
            ),
        )),
    }
}

/// Remove the temporary copies beside `urlpath` (`<urlpath>.caterva-tmp-…`,
/// and their lock files) that no live writer holds: what a save, squeeze or
/// other write-beside left when its process was killed, and then the
/// marker of writes beside it ([`saving`]) if none remains. Only copies
/// the marker names (or, for a marker of an earlier version, which names
/// none, copies so named) that hold what a write leaves
/// ([`super::fs::is_our_leftover`]) are removed. Best effort: what cannot be removed
/// stays for the next time.
pub(super) fn clean_temporaries(urlpath: &str) {
    let Some((dir, found)) = temporaries(urlpath) else { return };
    for tmp in found {
        let path = dir.join(&tmp);
        let Some(url) = path.to_str() else { continue };
        // Its writer holds the lock while it lives; a dead one holds nothing.
        if let Ok(Got::Held(held)) = lock::acquire(url, Wait::Never) {
            let _ = remove_leftover(&path);
            drop(held);
        }
    }
    settle_marker(urlpath);
}

/// The directory beside `urlpath` and the names of the temporary copies of
/// it that its marker ([`saving`]) names and that are there, sorted; `None`
/// if there is no marker of ours, or the directory cannot be listed.
fn temporaries(urlpath: &str) -> Option<(PathBuf, Vec<String>)> {
    let base = Path::new(trimmed(urlpath));
    let (Some(name), dir) = (base.file_name().and_then(|n| n.to_str()), base.parent()) else { return None };
    let dir = dir.filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let prefix = format!("{name}{TMP_INFIX}");
    let ours = |n: &str| n.strip_prefix(&prefix).is_some_and(is_tmp_tail);
    let mut found: Vec<String> = match marker_names(urlpath)? {
        // A copy is there while it or its lock file is.
        Some(names) => names
            .into_iter()
            .filter(|n| {
                let there = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
                ours(n) && (there(n) || there(&format!("{n}{LOCK_SUFFIX}")))
            })
            .collect(),
        // An earlier version's marker (empty): the copies by their names.
        None => std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .map(|n| n.strip_suffix(LOCK_SUFFIX).map_or(n.clone(), str::to_owned))
            .filter(|n| ours(n))
            .collect(),
    };
    found.sort();
    found.dedup();
    Some((dir.to_path_buf(), found))
}

/// Whether `tail` is what follows [`TMP_INFIX`] in a temporary copy's
/// name: `<pid>-<n>`.
fn is_tmp_tail(tail: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    tail.split_once('-').is_some_and(|(pid, n)| digits(pid) && digits(n))
}

/// Suffix of the marker that stands beside a target while copies of it are
/// written beside it ([`write_beside`]), and after its writer was killed:
/// `<target>.caterva-saving`. It names each copy on a line of its own
/// ([`MARKER_LINE`]), appended before the copy is made.
const SAVING_SUFFIX: &str = ".caterva-saving";

/// How each line of the marker starts; the copy's file name follows.
const MARKER_LINE: &str = "caterva-tmp ";

fn saving_marker(urlpath: &str) -> PathBuf {
    PathBuf::from(format!("{}{SAVING_SUFFIX}", trimmed(urlpath)))
}

/// What the marker beside `urlpath` says: `None` if there is none or it is
/// not ours (a regular file of [`MARKER_LINE`] lines, the last of which a
/// kill may have cut short), `Some(None)` for an empty one (an earlier
/// version's, or one whose first line was never written), else the copies
/// it names.
fn marker_names(urlpath: &str) -> Option<Option<Vec<String>>> {
    let marker = saving_marker(urlpath);
    if !std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20) {
        return None;
    }
    let text = std::fs::read_to_string(&marker).ok()?;
    if text.is_empty() {
        return Some(None);
    }
    let (complete, cut) = text.rsplit_once('\n').unwrap_or(("", &text));
    if !(MARKER_LINE.starts_with(cut) || cut.starts_with(MARKER_LINE)) {
        return None;
    }
    let names: Option<Vec<String>> = complete
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| l.strip_prefix(MARKER_LINE).map(str::to_owned))
        .collect();
    names.map(Some)
}

/// Whether temporary copies of `urlpath` may lie beside it (their marker is
/// there): an open that finds none need not list the directory to clean them.
pub(super) fn saving(urlpath: &str) -> bool {
    std::fs::symlink_metadata(saving_marker(urlpath)).is_ok()
}

/// Remove the marker of writes beside `urlpath` if it is ours and no
/// temporary copy it names remains (a live writer's, or one that could not
/// be removed). Best effort.
fn settle_marker(urlpath: &str) {
    if temporaries(urlpath).is_some_and(|(_, found)| found.is_empty()) {
        let _ = io::remove_file(&saving_marker(urlpath));
    }
}

/// The marker of a write beside a target, placed (with the copy's name)
/// before its temporary copy is made and settled ([`settle_marker`]) when
/// the write is over.
struct Marker<'a>(&'a str);

impl<'a> Marker<'a> {
    fn place(target: &'a str, tmp: &str) -> Result<Marker<'a>> {
        let marker = saving_marker(target);
        if std::fs::symlink_metadata(&marker).is_ok() && marker_names(target).is_none() {
            return Err(Error::storage(
                Some(target),
                format!(
                    "'{}' is in the way: it is not a caterva marker; move it away to rewrite '{target}'",
                    marker.display()
                ),
            ));
        }
        let name = Path::new(tmp).file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let line = format!("{MARKER_LINE}{name}\n");
        // One append of one line: writers of copies of one target may add theirs at once.
        let file = io::OpenOptions::append().open(&marker).map_err(|e| Error::io("creating", Some(&marker), &e))?;
        file.append(line.as_bytes()).map_err(|e| Error::io("writing", Some(&marker), &e))?;
        Ok(Marker(target))
    }
}

impl Drop for Marker<'_> {
    fn drop(&mut self) {
        settle_marker(self.0);
    }
}

thread_local! {
    /// The temporary path [`write_beside`] is writing in this thread, and
    /// whether that copy is synced before its rename.
    static BESIDE: std::cell::RefCell<Option<(String, bool)>> = const { std::cell::RefCell::new(None) };
}

/// Whether `urlpath` is the temporary copy that [`write_beside`] is
/// writing in this thread (a store created there is built in place).
pub(super) fn is_beside(urlpath: &str) -> bool {
    BESIDE.with(|b| b.borrow().as_ref().is_some_and(|(p, _)| p == urlpath))
}

/// Numbers the temporary copies of this process.
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

/// Write a frame with `write` at a temporary path beside `target`, then
/// rename it over `target`, so that a failure leaves whatever was at
/// `target` untouched. A file is replaced atomically by the rename; a
/// sparse-frame directory cannot be, so an existing one is renamed aside
/// first (and put back on open if the process dies in between).
///
/// The temporary copy is locked while it is written, so that
/// [`clean_temporaries`] leaves it alone while its writer lives; the
/// target's lock is held for the renames. What is at `target` is checked
/// (under its lock) as [`check_replaceable`] does.
///
/// `write` should leave the copy durable ([`make_durable`]) before it is
/// renamed: with `sync` ([`crate::Durability::Full`]) that syncs the copy,
/// and the rename is synced too; without, neither is. Returns the target's
/// lock, still held, so that the caller can open what it wrote before
/// anyone else changes it.
///
/// # Errors
/// [`Error::InvalidStorage`] if `target` holds something that is not an
/// array of that kind or another handle keeps it locked; as `write`;
/// [`Error::Io`] if a rename fails.
pub(crate) fn write_beside(
    target: &str,
    contiguous: bool,
    sync: bool,
    write: impl FnOnce(&Storage) -> Result<()>,
) -> Result<Option<lock::Lock>> {
    let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
    let tmp = format!("{}{TMP_INFIX}{}-{n}", trimmed(target), std::process::id());
    // Settled last (declared first): once the copy and its lock are gone.
    let _marker = Marker::place(target, &tmp)?;
    // A fresh name: only a cleaner looking at it may hold its lock, briefly.
    let _tmp_lock = lock::wait_for(&tmp)?;
    // A name of ours: whatever an earlier process of the same id left there goes.
    remove_leftover(Path::new(&tmp))?;
    let st = Storage { contiguous, urlpath: Some(tmp.clone()) };
    let mut cleanup = Cleanup::new(Some(&tmp));
    let previous = BESIDE.with(|b| b.replace(Some((tmp.clone(), sync))));
    let written = write(&st);
    BESIDE.with(|b| b.replace(previous));
    written?;
    #[cfg(feature = "testing")]
    super::hooks::hook("rename");
    let lock = lock::wait_for(target)?;
    let exists = check_replaceable(&Storage { contiguous, urlpath: Some(target.to_owned()) })?;
    if exists && !contiguous {
        replace_dir(&tmp, target, sync)?;
    } else {
        io::rename(Path::new(&tmp), Path::new(target)).map_err(|e| Error::io("renaming", Some(Path::new(&tmp)), &e))?;
        sync_dir(parent_dir(Path::new(trimmed(target))), sync)?;
    }
    cleanup.defuse();
    // A journal of what was there no longer applies.
    journal::discard(target)?;
    Ok(lock)
}

/// Make a frame written at `urlpath` durable before it is renamed into
/// place: the file, or a directory's files and entries, if the
/// [`write_beside`] writing it syncs (at [`crate::Durability::Full`],
/// unless `CATERVA_JOURNAL_SYNC=0`, see [`journal`]).
pub(super) fn make_durable(urlpath: &str) -> Result<()> {
    let sync = BESIDE.with(|b| b.borrow().as_ref().map_or(true, |(p, sync)| p != urlpath || *sync));
    if !sync || !super::durability::env_syncs() {
        return Ok(());
    }
    let p = Path::new(trimmed(urlpath));
    let sync = |f: &Path| io::File::open(f).and_then(|f| f.sync_data()).map_err(|e| Error::io("syncing", Some(f), &e));
    if p.is_dir() {
        let entries = std::fs::read_dir(p).map_err(|e| Error::io("listing", Some(p), &e))?;
        for e in entries.flatten() {
            sync(&e.path())?;
        }
        sync_dir(p, true)
    } else {
        sync(p)
    }
}

/// Removes a half-built frame from disk unless defused.
pub(super) struct Cleanup<'a>(Option<&'a str>);

impl<'a> Cleanup<'a> {
    pub(super) fn new(urlpath: Option<&'a str>) -> Self {
        Cleanup(urlpath)
    }

    /// The frame is complete: keep it.
    pub(super) fn defuse(&mut self) {
        self.0 = None;
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        // Made by this process a moment ago: ours, whatever a failure left in it.
        if let Some(p) = self.0.map(Path::new) {
            if let Ok(m) = std::fs::symlink_metadata(p) {
                let _ = remove_own(p, &m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_are_found_however_spelt() {
        let d = std::env::temp_dir().join(format!("caterva-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src.b2nd")).unwrap();
        std::fs::write(d.join("src.b2frame"), b"x").unwrap();
        let s = |p: &str| d.join(p).to_string_lossy().into_owned();
        let file = s("src.b2frame");
        assert_eq!(overlap(&s("./src.b2frame"), &file), Some(Overlap::Same));
        assert_eq!(overlap(&s("src.b2nd/../src.b2frame"), &file), Some(Overlap::Same));
        std::os::unix::fs::symlink(&file, d.join("link")).unwrap();
        std::fs::hard_link(&file, d.join("hard")).unwrap();
        assert_eq!(overlap(&s("link"), &file), Some(Overlap::Same));
        assert_eq!(overlap(&s("hard"), &file), Some(Overlap::Same));
        assert_eq!(overlap(&s("other.b2frame"), &file), None);
        assert_eq!(overlap(&s("src.b2nd/x.b2frame"), &s("src.b2nd/")), Some(Overlap::Inside));
        assert_eq!(overlap(&s(""), &file), Some(Overlap::Holds));
        assert_eq!(overlap(&s("nowhere/x"), &file), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
