//! Exclusion between the handles of one array, in this process and others:
//! a lock file `<urlpath>.caterva-lock` beside the array, locked with
//! `flock`.
//!
//! Whoever changes or inspects an array's files as a whole holds the lock
//! exclusively for the duration: a write transaction (`Store::write`),
//! opening (recovery, then parsing the frame), creating, replacing (save,
//! squeeze's relayout) and removing. So an opener never sees a write half
//! done, nor rolls back a live one; two writers take turns.
//!
//! - The lock file exists only while someone holds it: the holder removes
//!   it before letting go. A waiter that got the lock on a file that has
//!   meanwhile been removed (or replaced) notices it (the path no longer
//!   names the file it locked) and starts again, so at most one holder has
//!   the file the path names.
//! - `flock` belongs to an open file description: each acquisition opens
//!   the file anew, so two handles of one process exclude each other like
//!   two processes do. A thread that already holds an array's lock may take
//!   it again (an inner step of the same operation, such as the new store a
//!   save writes beside its target); only the outermost release lets go.
//! - Waiting is a poll, bounded by [`WAIT`]: a writer that stopped without
//!   dying gets the others an error ("being written by another handle"),
//!   not a hang.
//! - Where no lock file can be made (a read-only directory or file system,
//!   a directory that does not exist), there is no lock: whoever cannot
//!   create a file there cannot write the array either.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::fs::{sidecar, suffixed};
use crate::error::{Error, Result};

/// Suffix of the lock file beside an array's urlpath.
pub(super) const LOCK_SUFFIX: &str = ".caterva-lock";

pub(super) use super::data_file::WAIT;

use super::data_file;
use super::identity::{self, Id};

/// The locks this process holds: by which thread ([`this_thread`]), how
/// many times. A `BTreeMap`, not a `HashMap`: its nodes are reached through
/// pointers to their starts, so a leak checker run at exit (valgrind) finds
/// the table "still reachable", where a hash table's pointer into the middle
/// of its allocation makes it "possibly lost".
static HELD: Mutex<BTreeMap<Id, Holder>> = Mutex::new(BTreeMap::new());

/// Who holds a lock of [`HELD`], how many times, and the modification time
/// its writes must leave the data file past ([`Lock::settle`]).
struct Holder {
    thread: u64,
    depth: usize,
    floor: Option<(i64, i64)>,
}

fn held<R>(f: impl FnOnce(&mut BTreeMap<Id, Holder>) -> R) -> R {
    f(&mut HELD.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Whether the calling thread holds the lock of the array at `urlpath`
/// (its reads need no read section: nobody else writes meanwhile).
pub(crate) fn held_here(urlpath: &str) -> bool {
    if held(|m| m.is_empty()) {
        return false;
    }
    let Ok(id) = identity::at(&sidecar(urlpath, LOCK_SUFFIX)) else { return false };
    let me = this_thread();
    held(|m| m.get(&id).is_some_and(|h| h.thread == me))
}

/// A number for the calling thread, never reused in the process. Not
/// `std::thread::current().id()`: on a thread that Rust did not start (a C
/// program's main thread), that allocates a `Thread` kept in a thread-local
/// through a pointer into the middle of it, which valgrind reports as
/// "possibly lost" at exit; this allocates nothing.
fn this_thread() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ME: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ME.with(|me| *me)
}

/// An array's lock, held until dropped.
pub(crate) struct Lock {
    path: PathBuf,
    id: Id,
    /// The array's urlpath.
    url: String,
    /// The locked description, in the outermost holder only.
    file: Option<File>,
    /// The array's data file, locked exclusively against readers
    /// ([`data_file::exclude`]), in the outermost holder only.
    data: Option<File>,
}

impl Lock {
    /// Mark the array as changed by the holder: its data file's
    /// modification time is left later than any a reader may have
    /// recorded before the lock was taken ([`data_file::settle`]), so that
    /// every reader sees that something changed. Call it after each write,
    /// while the lock is held.
    pub(crate) fn settle(&self) {
        let Some(floor) = held(|m| m.get(&self.id).and_then(|h| h.floor)) else { return };
        if let Some(now) = data_file::settle(&self.url, floor) {
            held(|m| {
                if let Some(h) = m.get_mut(&self.id) {
                    h.floor = Some(now);
                }
            });
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let Some(file) = self.file.take() else {
            held(|m| {
                if let Some(h) = m.get_mut(&self.id) {
                    h.depth = h.depth.saturating_sub(1);
                }
            });
            return;
        };
        drop(self.data.take());
        // Nobody else holds it: take the name away before letting go, so no
        // lock file outlives its holder (a waiter on it starts again).
        if identity::is_at(&self.path, self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
        held(|m| m.remove(&self.id));
        drop(file);
    }
}

/// What [`acquire`] got.
pub(crate) enum Got {
    /// The lock, held.
    Held(Lock),
    /// Someone holds it (and we did not wait, or waited [`WAIT`] in vain).
    Busy,
    /// No lock file can be made there.
    Unavailable,
}

/// How [`acquire`] deals with a lock that someone holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait up to [`WAIT`] for it; a lock this thread holds is taken again.
    Patiently,
    /// Try once; a lock held anywhere, this thread included, is busy.
    Never,
}

/// The lock of the array at `urlpath`.
///
/// # Errors
/// [`Error::Io`] if the lock file cannot be opened or locked for a reason
/// other than the place being read-only or missing.
pub(crate) fn acquire(urlpath: &str, wait: Wait) -> Result<Got> {
    let path = sidecar(urlpath, LOCK_SUFFIX);
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let file = match open_lock_file(&path) {
            Ok(f) => f,
            Err(e) if unavailable(&e) => return Ok(Got::Unavailable),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_ours(&path, "a symbolic link")),
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Err(not_ours(&path, "a directory")),
            Err(e) => return Err(Error::io("opening lock file", Some(&path), &e)),
        };
        let md = file.metadata().map_err(|e| Error::io("reading lock file", Some(&path), &e))?;
        // Ours are empty regular files: anything else is someone else's, neither used nor removed.
        if !md.is_file() {
            return Err(not_ours(&path, "not a regular file"));
        }
        if md.len() > 0 {
            return Err(not_ours(&path, &format!("a file of {} bytes (lock files are empty)", md.len())));
        }
        let id = identity::of(&md);
        let me = this_thread();
        let mine = held(|m| match m.get_mut(&id) {
            Some(h) if h.thread == me && wait == Wait::Patiently => {
                h.depth += 1;
                Some(true)
            }
            Some(_) => Some(false),
            None => None,
        });
        let url = urlpath.to_owned();
        match mine {
            Some(true) => return Ok(Got::Held(Lock { path, id, url, file: None, data: None })),
            Some(false) if wait == Wait::Never => return Ok(Got::Busy),
            _ => {}
        }
        if try_lock(&file).map_err(|e| Error::io("locking", Some(&path), &e))? {
            // The holder before us may have removed (and someone re-created)
            // the file: then start again, within the same deadline.
            if identity::is_at(&path, id) {
                held(|m| m.insert(id, Holder { thread: me, depth: 1, floor: None }));
                let mut lock = Lock { path, id, url, file: Some(file), data: None };
                // Then the reads in flight finish (if this fails, dropping the lock lets go).
                let Some(excluded) = data_file::exclude(urlpath, wait == Wait::Patiently)? else {
                    return Ok(Got::Busy);
                };
                if let Some((data, mtime)) = excluded {
                    lock.data = Some(data);
                    held(|m| {
                        if let Some(h) = m.get_mut(&id) {
                            h.floor = Some(mtime);
                        }
                    });
                }
                return Ok(Got::Held(lock));
            }
        }
        drop(file);
        if wait == Wait::Never || start.elapsed() >= WAIT {
            return Ok(Got::Busy);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Open (creating it if missing) the lock file at `path` itself: a
/// symbolic link there fails with `ELOOP` rather than being followed (nor
/// its target created), and a FIFO does not block the open.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// The error for something at the lock file's path that is not a lock file.
fn not_ours(path: &Path, what: &str) -> Error {
    let p = path.display();
    Error::storage(
        None,
        format!(
            "'{p}' is {what}, not a caterva lock file; the array cannot be locked while it is there \
             (it is left alone: move it away to use the array)"
        ),
    )
}

/// The lock of the array at `urlpath`, waiting for it; `None` where there
/// can be none.
///
/// # Errors
/// [`Error::InvalidStorage`] if another handle keeps it longer than [`WAIT`];
/// as [`acquire`].
pub(crate) fn wait_for(urlpath: &str) -> Result<Option<Lock>> {
    match acquire(urlpath, Wait::Patiently)? {
        Got::Held(l) => Ok(Some(l)),
        Got::Unavailable => Ok(None),
        Got::Busy => Err(Error::storage(
            Some(urlpath),
            format!(
                "'{urlpath}' is being written by another handle (its lock '{}' was held for more than {} s)",
                sidecar(urlpath, LOCK_SUFFIX).display(),
                WAIT.as_secs()
            ),
        )),
    }
}

/// Whether the lock file of the array whose sidecars start with `base`
/// (`sidecar(urlpath, "")`) is there: a handle holds the lock, or one died
/// holding it (the next holder removes it).
pub(crate) fn present(base: &Path) -> bool {
    std::fs::symlink_metadata(suffixed(base, LOCK_SUFFIX)).is_ok()
}

/// A place where no lock file can be made.
fn unavailable(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::NotFound)
        || e.raw_os_error().is_some_and(|c| c == libc::EROFS || c == libc::ENOTDIR)
}

/// Take an exclusive lock without waiting; `false` if someone holds it.
pub(super) fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == ErrorKind::WouldBlock {
        return Ok(false);
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> String {
        let d = std::env::temp_dir().join(format!("caterva-lock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("a.b2frame").to_string_lossy().into_owned()
    }

    #[test]
    fn one_holder_at_a_time_and_no_file_left() {
        let url = scratch("one");
        let lock_file = sidecar(&url, LOCK_SUFFIX);
        let Got::Held(first) = acquire(&url, Wait::Patiently).unwrap() else { panic!("not acquired") };
        assert!(lock_file.exists());
        // The same thread may take it again; a try from it is busy.
        let Got::Held(again) = acquire(&url, Wait::Patiently).unwrap() else { panic!("not re-entered") };
        assert!(matches!(acquire(&url, Wait::Never).unwrap(), Got::Busy));
        drop(again);
        assert!(lock_file.exists(), "an inner release let go");
        // Another thread waits until the holder lets go.
        let url2 = url.clone();
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            let got = acquire(&url2, Wait::Patiently).unwrap();
            (matches!(got, Got::Held(_)), t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        let (got, waited) = waiter.join().unwrap();
        assert!(got && waited >= Duration::from_millis(50), "{waited:?}");
        assert!(!lock_file.exists(), "the lock file outlived its holder");
        let _ = std::fs::remove_dir_all(Path::new(&url).parent().unwrap());
    }

    #[test]
    fn a_missing_directory_has_no_lock() {
        let url = scratch("missing").replace("a.b2frame", "nowhere/a.b2frame");
        assert!(matches!(acquire(&url, Wait::Patiently).unwrap(), Got::Unavailable));
        assert!(wait_for(&url).unwrap().is_none());
        let _ = std::fs::remove_dir_all(Path::new(&url).parent().unwrap().parent().unwrap());
    }
}
