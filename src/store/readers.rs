//! Reads beside writers: a read never sees a chunk half written, nor a
//! chunk through an index that no longer holds.
//!
//! c-blosc2 changes a frame on disk in place (see [`super::journal`]): an
//! update of a chunk that is not larger than the old one goes over it, an
//! append writes where the offsets chunk was, and the index is rewritten.
//! A reader that read meanwhile could get part of a chunk, or follow an
//! index to bytes that are no longer that chunk. So reads and writes of a
//! persistent array on local files exclude each other, as SQLite's
//! rollback-journal mode does (a shared lock to read, an exclusive one to
//! change):
//!
//! - **The data file** (a contiguous frame's file, a sparse frame's index
//!   `chunks.b2frame`) is locked with `flock`: shared for the duration of a
//!   read operation ([`Store::read_section`]: every chunk it reads, and
//!   each block of them, comes from one state of the array), exclusive by
//!   whoever holds the array's lock (`<urlpath>.caterva-lock`, see
//!   [`super::lock`]), from taking it until letting go. Several readers, in
//!   any processes, read at once; a writer waits until the reads in flight
//!   are done, at most [`WAIT`].
//! - **Writers go first:** a reader that finds the array's lock held (a
//!   writer waiting for the reads in flight, or writing) waits until it is
//!   let go before it takes its shared lock, so a stream of readers cannot
//!   starve a writer; but for at most 50 ms, after which it takes the data
//!   file as soon as it is free, so a stream of writers cannot starve it. A lock file left by a writer that died (nobody holds
//!   it) is passed; the journal that writer left is rolled back first, under
//!   the array's lock, as an open would.
//! - **A generation:** every write (by this library) leaves the data file's
//!   modification time strictly later than it was when the writer took the
//!   lock ([`settle`]), also when the clock did not move on (its
//!   granularity is coarse) or went back. So the data file's identity,
//!   length and modification time ([`Stamp`]) change with every write. A
//!   read section compares them with what the handle last knew: unchanged,
//!   the handle's view (chunk offsets, lengths, checksums) holds; changed,
//!   the frame's [`super::frame::fingerprint`] decides: the same (a chunk
//!   rewritten in place: its offset is unchanged, and its new bytes are
//!   whole under the shared lock), the view still holds and only the
//!   handle's block cache is dropped; different, the handle is stale and
//!   the read fails with [`Error::Changed`] before it reads anything: the
//!   caller refreshes the handle ([`crate::Array::refresh`]) and reads again.
//!
//! In steady state a read operation costs four system calls more than
//! without (a `stat` of the lock file's name, `flock` and its release, a
//! `stat` of the data file). Arrays in memory, on object stores (which are
//! versioned, [`super::versioned`]) and frames inside larger files
//! (read-only) have no sections.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::fs::sidecar;
use super::lock::{self, LOCK_SUFFIX, WAIT};
use super::Store;
use crate::error::{Error, Result};
use crate::fork::PerProcess;

/// The file whose `flock` stands for the array at `urlpath` (a sparse
/// frame's index, or the frame file), if it is there.
pub(super) fn data_path(urlpath: &str) -> Option<PathBuf> {
    let p = Path::new(urlpath);
    let md = std::fs::metadata(p).ok()?;
    if md.is_dir() {
        let index = p.join(super::frame::SPARSE_INDEX);
        index.is_file().then_some(index)
    } else {
        md.is_file().then(|| p.to_path_buf())
    }
}

/// What a data file's metadata says of its state: which file, how long,
/// when last changed (to the nanosecond it records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Stamp {
    fn of(md: &std::fs::Metadata) -> Stamp {
        Stamp { dev: md.dev(), ino: md.ino(), len: md.len(), mtime: (md.mtime(), md.mtime_nsec()) }
    }

    fn at(path: &Path) -> std::io::Result<Stamp> {
        std::fs::metadata(path).map(|m| Stamp::of(&m))
    }
}

/// How long a reader lets writers go first ([`Store::read_section`]).
const PATIENCE: Duration = Duration::from_millis(50);

/// `flock` without waiting: whether it was taken.
fn try_flock(file: &File, how: libc::c_int) -> std::io::Result<bool> {
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        return Ok(false);
    }
    Err(e)
}

fn unlock(file: &File) {
    // SAFETY: as try_flock.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// Poll `ready` with a pause that grows from 1 to 8 ms, until it answers
/// or [`WAIT`] has passed (`Ok(None)`).
fn poll<T>(mut ready: impl FnMut() -> Result<Option<T>>) -> Result<Option<T>> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = ready()? {
            return Ok(Some(v));
        }
        if start.elapsed() >= WAIT {
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(8));
    }
}

/// The data file and its modification time, as [`exclude`] locked them.
pub(super) type Excluded = Option<(File, (i64, i64))>;

/// The writer's side: the data file of the array at `urlpath` locked
/// exclusively, once the reads in flight are done (`Some(None)` when there
/// is no data file yet), with its modification time then. Without
/// `patient`, `None` if a read is in flight.
///
/// # Errors
/// [`Error::InvalidStorage`] if reads keep it for more than [`WAIT`];
/// [`Error::Io`] if it cannot be locked.
pub(super) fn exclude(urlpath: &str, patient: bool) -> Result<Option<Excluded>> {
    let Some(path) = data_path(urlpath) else { return Ok(Some(None)) };
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(None)),
        Err(e) => return Err(Error::io("opening", Some(&path), &e)),
    };
    let take = || try_flock(&file, libc::LOCK_EX).map_err(|e| Error::io("locking", Some(&path), &e));
    let got = if patient { poll(|| Ok(take()?.then_some(())))? } else { take()?.then_some(()) };
    if got.is_none() && !patient {
        return Ok(None);
    }
    if got.is_none() {
        return Err(Error::storage(
            Some(urlpath),
            format!("'{urlpath}' is being read by other handles, which kept it for more than {} s", WAIT.as_secs()),
        ));
    }
    let md = file.metadata().map_err(|e| Error::io("reading", Some(&path), &e))?;
    Ok(Some(Some((file, (md.mtime(), md.mtime_nsec())))))
}

/// Leave the data file of the array at `urlpath` with a modification time
/// later than `floor` (set to one nanosecond past it if it is not), and
/// return the time it has: what a write does before letting go of the
/// array's lock, so that its [`Stamp`] differs from every one taken before.
pub(super) fn settle(urlpath: &str, floor: (i64, i64)) -> Option<(i64, i64)> {
    let path = data_path(urlpath)?;
    let md = std::fs::metadata(&path).ok()?;
    let now = (md.mtime(), md.mtime_nsec());
    if now > floor {
        return Some(now);
    }
    let next = if floor.1 >= 999_999_999 { (floor.0 + 1, 0) } else { (floor.0, floor.1 + 1) };
    let times = [
        libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT },
        libc::timespec { tv_sec: next.0 as libc::time_t, tv_nsec: next.1 as libc::c_long },
    ];
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a NUL-terminated path and two timespecs, as utimensat reads them.
    let rc = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) };
    (rc == 0).then_some(next)
}

/// A handle's side: its shared lock, while read sections are open, and
/// what it last knew of the data file.
pub(super) struct Gate {
    url: String,
    /// The array's lock file, and the start of the names beside it.
    lock_path: PathBuf,
    beside: PathBuf,
    /// Per process: a child forked while a parent's thread was in a read
    /// section starts with none open (and the parent's mutex, which that
    /// thread may hold for ever in the child, is left alone).
    state: PerProcess<Mutex<State>>,
    /// Operations of this handle now holding the array's lock (its
    /// writers, [`Store::lock_fresh`]'s callers): the reads they make, on
    /// whatever thread, need no section.
    owners: Arc<AtomicUsize>,
}

/// The array's lock held by an operation of the handle ([`Store::owning`]).
pub(crate) struct Owning(Option<Arc<AtomicUsize>>);

impl Owning {
    /// For a handle with no lock to own.
    pub(crate) fn none() -> Owning {
        Owning(None)
    }
}

impl Drop for Owning {
    fn drop(&mut self) {
        if let Some(n) = &self.0 {
            n.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[derive(Default)]
struct State {
    /// Read sections open on this handle (in any of its threads).
    depth: usize,
    /// The data file (its path and identity), kept open between sections;
    /// locked while `depth > 0`.
    file: Option<(File, PathBuf, (u64, u64))>,
    /// The data file's state when the handle's view was last found to hold.
    stamp: Option<Stamp>,
}

impl Gate {
    pub(super) fn new(url: &str) -> Gate {
        Gate {
            url: url.to_owned(),
            lock_path: sidecar(url, LOCK_SUFFIX),
            beside: sidecar(url, ""),
            state: PerProcess::new(Mutex::default()),
            owners: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.get(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forget what the handle knew of the data file (after its own write
    /// or a reload: the next section checks the fingerprint again).
    pub(super) fn forget(&mut self) {
        self.state().stamp = None;
    }
}

/// An open read section ([`Store::read_section`]); closed when dropped.
pub(crate) struct Section<'a>(Option<&'a Gate>);

impl Drop for Section<'_> {
    fn drop(&mut self) {
        let Some(gate) = self.0 else { return };
        let mut st = gate.state();
        st.depth -= 1;
        if st.depth == 0 {
            if let Some((f, _, _)) = &st.file {
                unlock(f);
            }
        }
    }
}

/// The array's lock as a reader finds it.
#[derive(PartialEq, Eq)]
enum Writer {
    /// No lock file: nobody writes.
    None,
    /// A live handle holds the lock.
    Busy,
    /// A lock file nobody holds: its holder died (maybe mid-write).
    Dead,
}

/// How the array's lock (its file at `lock_path`) is held now.
fn writer(lock_path: &Path) -> Writer {
    use std::os::unix::fs::OpenOptionsExt;
    if std::fs::symlink_metadata(lock_path).is_err() {
        return Writer::None;
    }
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(lock_path)
    else {
        return Writer::None;
    };
    match try_flock(&f, libc::LOCK_SH) {
        Ok(false) => Writer::Busy,
        Ok(true) | Err(_) => Writer::Dead,
    }
}

impl Store {
    /// Mark an operation of this handle as holding the array's lock, until
    /// the result is dropped: its reads, on whatever thread (the worker
    /// threads too), need no read section, and must not wait for one
    /// (the lock they would wait for is their own operation's).
    pub(crate) fn owning(&self) -> Owning {
        Owning(self.gate.as_ref().map(|g| {
            g.owners.fetch_add(1, Ordering::AcqRel);
            g.owners.clone()
        }))
    }

    /// Open a read section: until it is dropped, no writer (of any handle,
    /// in any process) changes the array, and this handle's view of it is
    /// current. Sections nest and may be open in several threads of one
    /// handle at once; only the outermost takes the lock. Every read of
    /// chunks runs in one (each chunk read opens one of its own if the
    /// operation has none). A thread that holds the array's lock (a
    /// writer reading what it changes) needs none.
    ///
    /// # Errors
    /// [`Error::Changed`] if another handle changed the array since this
    /// one opened, wrote or refreshed it; [`Error::InvalidStorage`] if a
    /// writer keeps the array for more than 30 s; [`Error::Io`] if the data
    /// file cannot be opened or locked.
    pub(crate) fn read_section(&self) -> Result<Section<'_>> {
        let Some(gate) = &self.gate else { return Ok(Section(None)) };
        if gate.owners.load(Ordering::Acquire) > 0 {
            return Ok(Section(None));
        }
        let mut st = gate.state();
        if st.depth > 0 {
            st.depth += 1;
            return Ok(Section(Some(gate)));
        }
        if lock::held_here(&gate.url) {
            return Ok(Section(None));
        }
        let url = gate.url.as_str();
        let (lock_path, beside) = (&gate.lock_path, &gate.beside);
        let start = Instant::now();
        let got = poll(|| {
            match writer(lock_path) {
                // Writers go first, but not for ever: past PATIENCE a reader
                // takes its turn as soon as the data file is free (between
                // two writers), and the next writer waits for it.
                Writer::Busy if start.elapsed() < PATIENCE => return Ok(None),
                Writer::Dead if super::journal::may_need_recovery(beside) => {
                    // A writer died mid-write: roll it back as an open would.
                    let _lock = lock::wait_for(url)?;
                    super::journal::recover(url)?;
                    return Ok(None);
                }
                _ => {}
            }
            if st.file.is_none() {
                let Some(path) = data_path(url) else { return Err(Error::not_found(url)) };
                let f = File::open(&path).map_err(|e| Error::io("opening", Some(&path), &e))?;
                let md = f.metadata().map_err(|e| Error::io("reading", Some(&path), &e))?;
                st.file = Some((f, path, (md.dev(), md.ino())));
            }
            let (f, path, locked) = st.file.as_ref().expect("opened above");
            if !try_flock(f, libc::LOCK_SH).map_err(|e| Error::io("locking", Some(path), &e))? {
                return Ok(None);
            }
            let now = match Stamp::at(path) {
                Ok(s) => s,
                Err(e) => {
                    unlock(f);
                    return Err(if e.kind() == std::io::ErrorKind::NotFound {
                        Error::not_found(url)
                    } else {
                        Error::io("reading", Some(path), &e)
                    });
                }
            };
            if *locked != (now.dev, now.ino) {
                // Replaced since it was opened: lock what the path names now.
                unlock(f);
                st.file = None;
                return Ok(None);
            }
            Ok(Some(now))
        })?;
        let Some(now) = got else {
            return Err(Error::storage(
                Some(url),
                format!(
                    "'{url}' is being written by another handle (its lock '{}' was held for more than {} s)",
                    lock_path.display(),
                    WAIT.as_secs()
                ),
            ));
        };
        if st.stamp != Some(now) {
            if self.seen.is_none() || self.fingerprint() != self.seen {
                if let Some((f, _, _)) = &st.file {
                    unlock(f);
                }
                return Err(Error::Changed { path: url.to_owned() });
            }
            // Changed in place only: the view holds, cached blocks may not.
            if let Some(c) = &self.cache {
                c.clear();
            }
            st.stamp = Some(now);
        }
        st.depth = 1;
        Ok(Section(Some(gate)))
    }
}
