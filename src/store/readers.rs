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
//!   read operation (`Store::read_section`: every chunk it reads, and
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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::data_file::{data_path, poll, try_flock, unlock, Stamp, WAIT};
use super::fs::sidecar;
use super::lock::{self, LOCK_SUFFIX};
use crate::error::{Error, Result};
use crate::fork::PerProcess;

/// How long a reader lets writers go first (`Store::read_section`).
const PATIENCE: Duration = Duration::from_millis(50);

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
    /// writers, `Store::lock_fresh`'s callers): the reads they make, on
    /// whatever thread, need no section.
    owners: Arc<AtomicUsize>,
}

/// The array's lock held by an operation of the handle (`Store::owning`).
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

/// An open read section ([`Gate::section`]); closed when dropped.
pub(crate) struct Section<'a>(Option<&'a Gate>);

impl Section<'_> {
    /// For a handle with no read sections (in memory, on object stores).
    pub(crate) fn none() -> Self {
        Section(None)
    }
}

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

impl Gate {
    /// Mark an operation of this handle as holding the array's lock, until
    /// the result is dropped: its reads, on whatever thread (the worker
    /// threads too), need no read section, and must not wait for one
    /// (the lock they would wait for is their own operation's).
    pub(super) fn own(&self) -> Owning {
        self.owners.fetch_add(1, Ordering::AcqRel);
        Owning(Some(self.owners.clone()))
    }

    /// Open a read section of the handle this gate is: until it is
    /// dropped, no writer (of any handle, in any process) changes the
    /// array, and the handle's view of it is current (`view_holds` says
    /// whether it is, once the data file changed; `in_place` is told of a
    /// change that left the view as it was). Sections nest and may be open in several threads of one
    /// handle at once; only the outermost takes the lock. Every read of
    /// chunks runs in one (each chunk read opens one of its own if the
    /// operation has none). A thread that holds the array's lock (a
    /// writer reading what it changes) needs none.
    ///
    /// # Errors
    /// [`Error::Changed`] if another handle changed the array since this
    /// one opened, wrote or refreshed it (`view_holds` says no); [`Error::InvalidStorage`] if a
    /// writer keeps the array for more than 30 s; [`Error::Io`] if the data
    /// file cannot be opened or locked.
    pub(super) fn section(&self, view_holds: impl FnOnce() -> bool, in_place: impl FnOnce()) -> Result<Section<'_>> {
        let gate = self;
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
            if !view_holds() {
                if let Some((f, _, _)) = &st.file {
                    unlock(f);
                }
                return Err(Error::Changed { path: url.to_owned() });
            }
            // Changed in place only: the view holds, cached blocks may not.
            in_place();
            st.stamp = Some(now);
        }
        st.depth = 1;
        Ok(Section(Some(gate)))
    }
}
