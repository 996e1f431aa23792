//! The data file of an array on local files (a contiguous frame's file, a
//! sparse frame's index `chunks.b2frame`) as readers and writers lock it
//! with `flock` (see [`super::readers`] for the protocol): its state
//! ([`Stamp`]), the writer's exclusive lock ([`exclude`]) and the
//! modification time a write leaves ([`settle`]).

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long a call waits for another handle's operation to finish.
pub(super) const WAIT: Duration = Duration::from_secs(30);

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
    pub(super) dev: u64,
    pub(super) ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Stamp {
    pub(super) fn of(md: &std::fs::Metadata) -> Stamp {
        Stamp { dev: md.dev(), ino: md.ino(), len: md.len(), mtime: (md.mtime(), md.mtime_nsec()) }
    }

    pub(super) fn at(path: &Path) -> std::io::Result<Stamp> {
        std::fs::metadata(path).map(|m| Stamp::of(&m))
    }
}

/// `flock` without waiting: whether it was taken.
pub(super) fn try_flock(file: &File, how: libc::c_int) -> std::io::Result<bool> {
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

pub(super) fn unlock(file: &File) {
    // SAFETY: as try_flock.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// Poll `ready` with a pause that grows from 1 to 8 ms, until it answers
/// or [`WAIT`] has passed (`Ok(None)`).
pub(super) fn poll<T>(mut ready: impl FnMut() -> Result<Option<T>>) -> Result<Option<T>> {
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
