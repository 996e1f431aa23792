//! Every byte a persistent array puts on disk goes through here: c-blosc2's
//! frame writes (through its I/O backend, [`super::blosc_io`]) and ours
//! (the journal, renames, removals, syncs, the local backend's puts).
//!
//! Two things come of the one path:
//!
//! - **Write failures are never lost.** c-blosc2 2.15 ignores the result
//!   of several of its writes (`frame_to_file`, the header rewrites of
//!   `frame_update_header`): a full disk there left a frame that no longer
//!   matched what the super-chunk believed, and the call "succeeded". Every
//!   failed or short write and truncation is remembered for the thread that
//!   made it, and the binding ([`super::blosc`]) turns one that happened
//!   during a call into that call's error ([`take_failure`]), so the
//!   transaction rolls back.
//! - **Tests can fail or tear any write.** With the `testing` feature (and
//!   in unit tests) a fault plan armed over a directory ([`faults::arm`])
//!   counts the changing operations under it (writes, truncations,
//!   creations, syncs, renames, removals) and makes the n-th fail, or
//!   write half of its bytes and then fail with every later change
//!   (a power cut mid-write). Outside tests the hook compiles to nothing.
//! - **Tests can replay a power loss.** A recorder ([`faults::record`])
//!   keeps every change that succeeded, with its bytes and the inode it went
//!   to, so that a model of the file system can build the disks a power cut
//!   may leave (`tests/faults.rs`). Outside tests, nothing either.
//!
//! c-blosc2 creates a sparse frame's directory (`mkdir`) and deletes its
//! chunk files (`remove`) itself, outside the I/O callbacks; those two are
//! not counted. Reads are never failed: a process that dies changes
//! nothing by reading.

use std::cell::RefCell;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What a changing operation is, for the fault plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Reached from outside through `caterva::testing` (feature `testing`) only.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub enum Op {
    /// Bytes written to a file.
    Write,
    /// A file cut or extended to a length.
    Truncate,
    /// A file created or emptied on opening.
    Create,
    /// Data or a directory's entries made durable.
    Sync,
    /// A rename.
    Rename,
    /// A file or empty directory removed.
    Remove,
}

/// What a fault plan says of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
enum Step {
    Go,
    Fail,
    /// Write half of the bytes, then fail.
    Tear,
}

#[cfg(not(any(test, feature = "testing")))]
#[inline(always)]
fn step(_op: Op, _path: &Path) -> Step {
    Step::Go
}

#[cfg(any(test, feature = "testing"))]
fn step(op: Op, path: &Path) -> Step {
    faults::step(op, path)
}

/// Whether a test watches the I/O layer (a fault plan armed, a recorder on):
/// work that would run on a thread of its own then runs where it starts,
/// so that what is counted or recorded is the same every run.
#[cfg(not(any(test, feature = "testing")))]
#[inline(always)]
pub(crate) fn observed() -> bool {
    false
}

#[cfg(any(test, feature = "testing"))]
pub(crate) fn observed() -> bool {
    faults::watched()
}

fn injected(op: Op, path: &Path) -> std::io::Error {
    std::io::Error::other(format!("injected fault: {op:?} of {}", path.display()))
}

/// Tell the power-loss recorders ([`faults::record`]) of a change that was
/// made: `$change` (a [`faults::Change`]) is built only while one records.
/// Outside tests, nothing.
macro_rules! record {
    ($path:expr, $change:expr) => {
        #[cfg(any(test, feature = "testing"))]
        if $crate::store::io::faults::recording() {
            $crate::store::io::faults::note($path, $change);
        }
    };
}
pub(super) use record;

/// Ask the fault plans about `op` on `path`: `Err` if it must fail.
pub(super) fn gate(op: Op, path: &Path) -> std::io::Result<()> {
    match step(op, path) {
        Step::Go => Ok(()),
        Step::Fail | Step::Tear => Err(injected(op, path)),
    }
}

thread_local! {
    /// The first write failure of this thread since [`take_failure`] last looked.
    static FAILURE: RefCell<Option<(&'static str, PathBuf, std::io::Error)>> = const { RefCell::new(None) };
}

pub(super) fn note_failure(what: &'static str, path: &Path, e: std::io::Error) {
    FAILURE.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            *f = Some((what, path.to_owned(), e));
        }
    });
}

/// The first write failure that c-blosc2 met in this thread since the last
/// call, if any (and forget it): what it was doing, to which file, and why.
pub(crate) fn take_failure() -> Option<(&'static str, PathBuf, std::io::Error)> {
    FAILURE.with(|f| f.borrow_mut().take())
}

// ---------------------------------------------------------------------------
// Our own file operations.

/// A file opened through this module: its changes go through the fault
/// plans. Reads pass straight through.
#[derive(Debug)]
pub(crate) struct File {
    file: std::fs::File,
    path: PathBuf,
}

/// How to open a [`File`] (the parts of `std::fs::OpenOptions` we use).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpenOptions {
    write: bool,
    create: bool,
    truncate: bool,
    append: bool,
}

impl OpenOptions {
    /// Read and write an existing file.
    pub(crate) fn write() -> Self {
        OpenOptions { write: true, ..Self::default() }
    }
    /// Read and write, creating the file if it is not there.
    pub(crate) fn create() -> Self {
        OpenOptions { write: true, create: true, ..Self::default() }
    }
    /// Create the file, or empty it.
    pub(crate) fn truncate() -> Self {
        OpenOptions { write: true, create: true, truncate: true, ..Self::default() }
    }
    /// Append to the file ([`File::append`]), creating it if it is not there.
    pub(crate) fn append() -> Self {
        OpenOptions { write: true, create: true, append: true, ..Self::default() }
    }

    pub(crate) fn open(self, path: &Path) -> std::io::Result<File> {
        if self.create || self.truncate {
            gate(Op::Create, path)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(self.write)
            .create(self.create)
            .truncate(self.truncate)
            .append(self.append)
            .open(path)?;
        if self.create || self.truncate {
            record!(path, faults::Change::created(path, &file, self.truncate));
        }
        Ok(File { file, path: path.to_owned() })
    }
}

impl File {
    /// Open for reading.
    pub(crate) fn open(path: &Path) -> std::io::Result<File> {
        Ok(File { file: std::fs::File::open(path)?, path: path.to_owned() })
    }

    /// The open file, for what does not change its content (locks, metadata).
    pub(crate) fn std(&self) -> &std::fs::File {
        &self.file
    }

    pub(crate) fn set_len(&self, len: u64) -> std::io::Result<()> {
        set_len(&self.file, &self.path, len)
    }

    /// Make the file's data (and length) durable.
    pub(crate) fn sync_data(&self) -> std::io::Result<()> {
        gate(Op::Sync, &self.path)?;
        self.file.sync_data()?;
        record!(&self.path, faults::Change::SyncFile { path: self.path.clone(), ino: faults::ino(&self.file) });
        Ok(())
    }

    /// Write all of `bytes` at `at`.
    pub(crate) fn write_all_at(&self, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        write_all_at(&self.file, &self.path, Some(at), bytes)
    }

    /// Write all of `bytes` at the end of a file opened with
    /// [`OpenOptions::append`]: one `write`, which several writers may make
    /// at once without mixing their bytes.
    pub(crate) fn append(&self, bytes: &[u8]) -> std::io::Result<()> {
        write_all_at(&self.file, &self.path, None, bytes)
    }
}

/// Cut or extend `file` (at `path`) to `len` bytes, as the fault plans allow.
pub(super) fn set_len(file: &std::fs::File, path: &Path, len: u64) -> std::io::Result<()> {
    gate(Op::Truncate, path)?;
    file.set_len(len)?;
    record!(path, faults::Change::Truncate { path: path.to_owned(), ino: faults::ino(file), len });
    Ok(())
}

/// Write `bytes` at `at` (at the end for `None`), as the fault plans allow.
pub(super) fn write_all_at(file: &std::fs::File, path: &Path, at: Option<u64>, bytes: &[u8]) -> std::io::Result<()> {
    let put = |bytes: &[u8]| -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        // Where an append lands, for the power-loss recorders.
        #[cfg(any(test, feature = "testing"))]
        let end = match at {
            None if faults::recording() => file.metadata()?.len(),
            _ => 0,
        };
        match at {
            Some(at) => file.write_all_at(bytes, at)?,
            None => {
                let mut f = file;
                f.write_all(bytes)?;
            }
        }
        record!(
            path,
            faults::Change::Write {
                path: path.to_owned(),
                ino: faults::ino(file),
                at: at.unwrap_or(end),
                bytes: bytes.to_vec()
            }
        );
        Ok(())
    };
    match step(Op::Write, path) {
        Step::Go => put(bytes),
        Step::Fail => Err(injected(Op::Write, path)),
        Step::Tear => {
            put(&bytes[..bytes.len() / 2])?;
            Err(injected(Op::Write, path))
        }
    }
}

impl Read for File {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for File {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

impl Write for File {
    /// Writes at the file position (every call is one operation for the fault plans).
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let at = self.file.stream_position()?;
        write_all_at(&self.file, &self.path, Some(at), buf)?;
        self.file.seek(SeekFrom::Current(buf.len() as i64))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Up to `buf.len()` bytes of `file` from `at` by positioned reads (fewer
/// at the file's end): how many were read. Reads are not gated: a fault
/// plan fails changes, and reads fail by themselves.
pub(crate) fn read_upto(file: &std::fs::File, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(k) => done += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

pub(crate) fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    gate(Op::Rename, to)?;
    std::fs::rename(from, to)?;
    record!(to, faults::Change::Rename { from: from.to_owned(), to: to.to_owned() });
    Ok(())
}

/// Give the file at `from` a second name, `to` (a hard link: one inode,
/// two names; writing through either changes both, replacing either by a
/// rename does not touch the other).
pub(crate) fn hard_link(from: &Path, to: &Path) -> std::io::Result<()> {
    gate(Op::Create, to)?;
    std::fs::hard_link(from, to)?;
    record!(to, faults::Change::Link { from: from.to_owned(), to: to.to_owned() });
    Ok(())
}

pub(crate) fn remove_file(path: &Path) -> std::io::Result<()> {
    gate(Op::Remove, path)?;
    std::fs::remove_file(path)?;
    record!(path, faults::Change::Remove(path.to_owned()));
    Ok(())
}

pub(crate) fn remove_dir(path: &Path) -> std::io::Result<()> {
    gate(Op::Remove, path)?;
    std::fs::remove_dir(path)?;
    record!(path, faults::Change::Remove(path.to_owned()));
    Ok(())
}

/// Make the entries of `dir` (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    gate(Op::Sync, dir)?;
    std::fs::File::open(dir)?.sync_all()?;
    record!(dir, faults::Change::SyncDir(dir.to_owned()));
    Ok(())
}

/// Fault plans for the tests: make the n-th changing operation under a
/// directory fail, or tear (see the module docs).
#[cfg(any(test, feature = "testing"))]
pub mod faults {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    pub use super::Op;

    /// What happens at the chosen operation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Fault {
        /// It fails; later operations go on (a transient error, a full disk freed again).
        Fail,
        /// It fails, and so does every later one (the process died there).
        Die,
        /// A write puts half of its bytes on disk, then as `Die` (power cut mid-write).
        /// On an operation that is not a write, as `Die`.
        Tear,
    }

    #[derive(Debug)]
    struct Plan {
        under: PathBuf,
        at: u64,
        fault: Fault,
        seen: Vec<Op>,
        dead: bool,
    }

    static ARMED: AtomicUsize = AtomicUsize::new(0);
    static PLANS: Mutex<Vec<Arc<Mutex<Plan>>>> = Mutex::new(Vec::new());

    /// A change made to the file system, as a power-loss model needs it:
    /// what was asked of the kernel, in order, once it succeeded.
    /// (c-blosc2's `mkdir` of a new sparse frame and its own removals of
    /// chunk files bypass the I/O layer and are not seen.)
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Change {
        /// A file opened with creation; emptied too if `truncate`.
        Create {
            /// The file.
            path: PathBuf,
            /// Its inode number.
            ino: u64,
            /// It was emptied if it was there.
            truncate: bool,
        },
        /// Bytes written.
        Write {
            /// The file, by the name it was opened with.
            path: PathBuf,
            /// Its inode number.
            ino: u64,
            /// Where (an append's position resolved).
            at: u64,
            /// What.
            bytes: Vec<u8>,
        },
        /// A file cut or extended.
        Truncate {
            /// The file, by the name it was opened with.
            path: PathBuf,
            /// Its inode number.
            ino: u64,
            /// Its new length.
            len: u64,
        },
        /// `fdatasync` of a file: its data and length are durable.
        SyncFile {
            /// The file, by the name it was opened with.
            path: PathBuf,
            /// Its inode number.
            ino: u64,
        },
        /// `fsync` of a directory: its entries are durable.
        SyncDir(PathBuf),
        /// A file or directory renamed (over what was at `to`).
        Rename {
            /// The old name.
            from: PathBuf,
            /// The new name.
            to: PathBuf,
        },
        /// A file or empty directory removed.
        Remove(PathBuf),
        /// A second name, `to`, for the file at `from` (a hard link).
        Link {
            /// The file's name.
            from: PathBuf,
            /// Its new, second name.
            to: PathBuf,
        },
    }

    impl Change {
        pub(crate) fn created(path: &Path, file: &std::fs::File, truncate: bool) -> Change {
            Change::Create { path: path.to_owned(), ino: ino(file), truncate }
        }
    }

    /// The inode number of an open file (0 if it cannot be had).
    pub(crate) fn ino(file: &std::fs::File) -> u64 {
        use std::os::unix::fs::MetadataExt;
        file.metadata().map_or(0, |m| m.ino())
    }

    #[derive(Debug)]
    struct Rec {
        under: PathBuf,
        changes: Vec<Change>,
        /// Where each file created is hard-linked as `<ino>`, so that its
        /// inode outlives renames and removals.
        keep: Option<PathBuf>,
    }

    static RECORDING: AtomicUsize = AtomicUsize::new(0);
    static RECORDERS: Mutex<Vec<Arc<Mutex<Rec>>>> = Mutex::new(Vec::new());

    /// A recorder of the changes under a directory; dropping it stops it.
    #[derive(Debug)]
    pub struct Recording(Arc<Mutex<Rec>>);

    /// Record every change made through the I/O layer to paths under
    /// `under` (as spelt, no resolving), in the order they were made.
    ///
    /// With `keep`, every file created is also hard-linked into that
    /// directory (on the same file system) as `<inode number>` when it is
    /// created: a model of the disk can then put a crash state together from
    /// the very inodes the write used (journals name the inode of the file
    /// they belong to).
    #[must_use]
    pub fn record(under: &Path, keep: Option<&Path>) -> Recording {
        let rec =
            Arc::new(Mutex::new(Rec { under: under.to_owned(), changes: Vec::new(), keep: keep.map(Path::to_owned) }));
        RECORDERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(rec.clone());
        RECORDING.fetch_add(1, Ordering::SeqCst);
        Recording(rec)
    }

    impl Recording {
        /// The changes recorded so far.
        #[must_use]
        pub fn changes(&self) -> Vec<Change> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).changes.clone()
        }
    }

    impl Drop for Recording {
        fn drop(&mut self) {
            RECORDERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|r| !Arc::ptr_eq(r, &self.0));
            RECORDING.fetch_sub(1, Ordering::SeqCst);
        }
    }

    static RESTARTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// While the guard lives, arrays under `under` are recovered as after
    /// a restart of the system (their journals' boot is not this one), as
    /// the disk states a power-loss model puts together there must be.
    #[must_use]
    pub fn pretend_restarted(under: &Path) -> Restarted {
        RESTARTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(under.to_owned());
        Restarted(under.to_owned())
    }

    /// See [`pretend_restarted`].
    #[derive(Debug)]
    pub struct Restarted(PathBuf);

    impl Drop for Restarted {
        fn drop(&mut self) {
            let mut r = RESTARTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(i) = r.iter().position(|p| *p == self.0) {
                r.remove(i);
            }
        }
    }

    pub(crate) fn restarted(path: &Path) -> bool {
        RESTARTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().any(|u| path.starts_with(u))
    }

    /// Whether a fault plan is armed or a recorder on.
    pub(crate) fn watched() -> bool {
        ARMED.load(Ordering::Relaxed) != 0 || recording()
    }

    /// Whether a recorder is on (the I/O layer builds changes only then).
    pub(crate) fn recording() -> bool {
        RECORDING.load(Ordering::Relaxed) != 0
    }

    pub(crate) fn note(path: &Path, change: Change) {
        let recs = RECORDERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for rec in recs.iter() {
            let mut r = rec.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let involved = match &change {
                Change::Rename { from, .. } | Change::Link { from, .. } => {
                    path.starts_with(&r.under) || from.starts_with(&r.under)
                }
                _ => path.starts_with(&r.under),
            };
            if involved {
                if let (Change::Create { path, ino, .. }, Some(keep)) = (&change, &r.keep) {
                    let link = keep.join(ino.to_string());
                    if !link.exists() {
                        std::fs::hard_link(path, &link).expect("a hard link to a file created");
                    }
                }
                r.changes.push(change.clone());
            }
        }
    }

    /// An armed plan; dropping it disarms it.
    #[derive(Debug)]
    pub struct Armed(Arc<Mutex<Plan>>);

    /// Count the changing operations on paths under `under` (as spelt, no
    /// resolving) and apply `fault` at operation number `at` (from 0).
    /// `u64::MAX` only counts.
    #[must_use]
    pub fn arm(under: &Path, at: u64, fault: Fault) -> Armed {
        let plan = Arc::new(Mutex::new(Plan { under: under.to_owned(), at, fault, seen: Vec::new(), dead: false }));
        PLANS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(plan.clone());
        ARMED.fetch_add(1, Ordering::SeqCst);
        Armed(plan)
    }

    impl Armed {
        /// The operations seen so far, in order.
        #[must_use]
        pub fn seen(&self) -> Vec<Op> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).seen.clone()
        }
        /// Whether the fault was applied.
        #[must_use]
        pub fn fired(&self) -> bool {
            let p = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            p.seen.len() as u64 > p.at
        }
    }

    impl Drop for Armed {
        fn drop(&mut self) {
            PLANS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|p| !Arc::ptr_eq(p, &self.0));
            ARMED.fetch_sub(1, Ordering::SeqCst);
        }
    }

    pub(super) fn step(op: Op, path: &Path) -> super::Step {
        use super::Step;
        if ARMED.load(Ordering::Relaxed) == 0 {
            return Step::Go;
        }
        let plans = PLANS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for plan in plans.iter() {
            let mut p = plan.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !path.starts_with(&p.under) {
                continue;
            }
            if p.dead {
                return Step::Fail;
            }
            let n = p.seen.len() as u64;
            p.seen.push(op);
            if n != p.at {
                return Step::Go;
            }
            return match p.fault {
                Fault::Fail => Step::Fail,
                Fault::Die => {
                    p.dead = true;
                    Step::Fail
                }
                Fault::Tear => {
                    p.dead = true;
                    if op == Op::Write {
                        Step::Tear
                    } else {
                        Step::Fail
                    }
                }
            };
        }
        Step::Go
    }
}
