//! Local files and directories as a [`Location`]: a directory whose files
//! are objects and whose subdirectories are prefixes.
//!
//! - Reads are `pread`s on a file opened once per [`Object`] (opened
//!   without blocking, so a FIFO at an array's name cannot hang a reader,
//!   and refused unless it is a regular file).
//! - A generation is the file's (device, inode, modification time, change
//!   time, length).
//! - A put writes a temporary file beside the name (`.<name>.caterva-put-<pid>-<n>`,
//!   never listed), makes it durable, then, holding an `flock` on the
//!   directory (which every conditional put and removal of this location
//!   takes, in any process), checks the condition and renames it over the
//!   name; the directory is synced. A reader sees the old file or the new
//!   one, never a mix; a writer killed before the rename leaves the
//!   temporary file only. Every changing step goes through `store::io`, so
//!   the fault plans of the tests reach it.
//! - Arrays here change by [`Protocol::Journaled`] writes in place; a file
//!   opened for reading then reads what is there now (its [`Object::len`]
//!   stays the length at opening).

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::{check_name, join, Condition, Entry, Generation, Kind, Location, Object, Protocol, PutError, Range};
use crate::store::io as fsio;

/// What temporary files of puts carry in their names.
const PUT_MARK: &str = ".caterva-put-";

/// A directory of the local file system.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    root: PathBuf,
}

impl Local {
    /// The location of the objects in `root` (`""`: the working directory).
    pub(crate) fn new(root: &Path) -> Local {
        Local { root: root.to_owned() }
    }

    /// The file `name` stands for.
    pub(crate) fn path(&self, name: &str) -> io::Result<PathBuf> {
        check_name(name)?;
        Ok(self.root.join(name))
    }
}

/// The generation of the file `md` describes.
pub(crate) fn generation(md: &Metadata) -> Generation {
    Generation::Local {
        dev: md.dev(),
        ino: md.ino(),
        mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
        ctime_ns: i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec()),
        len: md.len(),
    }
}

fn kind(md: &Metadata) -> Kind {
    if md.is_file() {
        Kind::Object
    } else if md.is_dir() {
        Kind::Prefix
    } else {
        Kind::Other
    }
}

fn not_an_object(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("'{}' is not a regular file", path.display()))
}

/// Open the regular file at `path` for reading, without blocking on a FIFO
/// or device (refused): the file and its metadata.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let md = file.metadata()?;
    if !md.is_file() {
        return Err(not_an_object(path));
    }
    Ok((file, md))
}

/// A local file opened for reading.
#[derive(Debug)]
pub(crate) struct LocalObject {
    file: File,
    /// Its length and generation when opened (for [`LocalObject::open_lazy`]:
    /// when first asked).
    meta: OnceLock<(u64, Generation)>,
}

impl LocalObject {
    /// The regular file at `path`, opened.
    ///
    /// # Errors
    /// As opening fails; [`io::ErrorKind::InvalidInput`] if it is not a regular file.
    pub(crate) fn open(path: &Path) -> io::Result<LocalObject> {
        let (file, md) = open_regular(path)?;
        Ok(LocalObject { file, meta: OnceLock::from((md.len(), generation(&md))) })
    }

    /// The file at `path`, opened (without blocking) but not looked at:
    /// its length and generation are read when first asked for. For
    /// c-blosc2's streams, which open a frame's file for every chunk they
    /// read and rarely ask its size: the frame was checked (regular files
    /// only) before c-blosc2 reads it.
    ///
    /// # Errors
    /// As opening fails.
    pub(crate) fn open_lazy(path: &Path) -> io::Result<LocalObject> {
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
        Ok(LocalObject { file, meta: OnceLock::new() })
    }

    fn meta(&self) -> &(u64, Generation) {
        self.meta.get_or_init(|| match self.file.metadata() {
            Ok(md) => (md.len(), generation(&md)),
            // fstat of an open file does not fail in practice; a generation
            // of zeros matches no file, so a conditional change is refused.
            Err(_) => (0, Generation::Local { dev: 0, ino: 0, mtime_ns: 0, ctime_ns: 0, len: 0 }),
        })
    }
}

impl Object for LocalObject {
    fn len(&self) -> u64 {
        self.meta().0
    }

    fn generation(&self) -> &Generation {
        &self.meta().1
    }

    fn read_ranges(&self, ranges: &mut [Range<'_>]) -> io::Result<()> {
        for r in ranges.iter_mut() {
            // One positioned read each (no seek: half the system calls).
            self.file.read_exact_at(r.buf, r.at)?;
        }
        Ok(())
    }

    /// Up to the file's end now (a journaled array's file changes in place).
    fn read_upto(&self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        fsio::read_upto(&self.file, at, buf)
    }

    fn len_now(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// An exclusive `flock` on a directory, released on drop.
struct DirLock(File);

impl DirLock {
    fn take(dir: &Path) -> io::Result<DirLock> {
        use std::os::fd::AsRawFd;
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(dir)?;
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(DirLock(f));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in `take`; closing the file would release it too.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The generation of what is at `path` now (`None`: nothing).
fn current(path: &Path) -> io::Result<Option<Generation>> {
    match std::fs::symlink_metadata(path) {
        Ok(md) => Ok(Some(generation(&md))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A name for a put's temporary file beside `path`, unique in the process.
fn temporary(path: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = N.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}{PUT_MARK}{}-{n}", std::process::id()))
}

impl Location for Local {
    fn url(&self, name: &str) -> String {
        self.root.join(name).to_string_lossy().into_owned()
    }

    fn protocol(&self) -> Protocol {
        Protocol::Journaled
    }

    fn local_path(&self, name: &str) -> Option<PathBuf> {
        self.path(name).ok()
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Object>> {
        Ok(Arc::new(LocalObject::open(&self.path(name)?)?))
    }

    fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
        let path = self.path(name)?;
        match std::fs::metadata(&path) {
            Ok(md) => Ok(Some(Entry {
                name: name.to_owned(),
                kind: kind(&md),
                len: if md.is_file() { md.len() } else { 0 },
                generation: generation(&md),
                modified: md.modified().ok(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
        let dir = if prefix.is_empty() { self.root.clone() } else { self.path(prefix.trim_end_matches('/'))? };
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            // Names that are not UTF-8 are no objects of ours; nor are puts in progress.
            let Ok(name) = e.file_name().into_string() else { continue };
            if name.contains(PUT_MARK) {
                continue;
            }
            let md = match std::fs::metadata(e.path()) {
                Ok(md) => md,
                // Gone since it was listed.
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err),
            };
            let len = if md.is_file() { md.len() } else { 0 };
            let (generation, modified) = (generation(&md), md.modified().ok());
            out.push(Entry { name: join(prefix, &name), kind: kind(&md), len, generation, modified });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn names(&self, prefix: &str) -> io::Result<Vec<String>> {
        let dir = if prefix.is_empty() { self.root.clone() } else { self.path(prefix.trim_end_matches('/'))? };
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir)? {
            if let Ok(name) = e?.file_name().into_string() {
                if !name.contains(PUT_MARK) {
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

    fn put(&self, name: &str, bytes: &[u8], cond: Condition<'_>) -> Result<Generation, PutError> {
        let path = self.path(name)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(&dir)?;
        }
        let tmp = temporary(&path);
        let out = (|| {
            let f = fsio::OpenOptions::truncate().open(&tmp)?;
            f.write_all_at(0, bytes)?;
            f.sync_data()?;
            drop(f);
            let _lock = DirLock::take(&dir)?;
            if !cond.holds(current(&path)?.as_ref()) {
                return Err(PutError::Conflict);
            }
            fsio::rename(&tmp, &path)?;
            fsio::sync_dir(&dir)?;
            Ok(generation(&std::fs::symlink_metadata(&path)?))
        })();
        if out.is_err() {
            // Gone already when the rename happened; a failure here leaves
            // a temporary file that no listing shows.
            let _ = fsio::remove_file(&tmp);
        }
        out
    }

    fn remove(&self, name: &str, expected: Option<&Generation>) -> Result<(), PutError> {
        let path = self.path(name)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let _lock = match expected {
            // No directory: nothing of that generation is there.
            Some(_) => Some(DirLock::take(&dir).map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => PutError::Conflict,
                _ => e.into(),
            })?),
            None => None,
        };
        if let Some(g) = expected {
            if current(&path)?.as_ref() != Some(g) {
                return Err(PutError::Conflict);
            }
        }
        match fsio::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound && expected.is_none() => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        fsio::sync_dir(&dir)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::io::faults::{self, Fault};
    use crate::store::location::conformance;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("caterva-location-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Objects as files at the top of a directory (the layout of contiguous frames).
    #[test]
    fn conformance_files() {
        let dir = scratch("files");
        conformance::run(&Local::new(&dir), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Objects under a prefix (the layout of sparse frames: a directory per array).
    #[test]
    fn conformance_directories() {
        let dir = scratch("dirs");
        conformance::run(&Local::new(&dir), "arr.caterva");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fifos_and_devices_are_no_objects() {
        let dir = scratch("fifo");
        let fifo = dir.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let loc = Local::new(&dir);
        assert_eq!(loc.open("pipe").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(loc.stat("pipe").unwrap().unwrap().kind, Kind::Other);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A put failed, killed or torn at each of its changing steps leaves the
    /// old object whole, or the new one whole, and no name a listing shows.
    #[test]
    fn faults_leave_old_or_new() {
        let dir = scratch("faults");
        let loc = Local::new(&dir);
        let old = vec![1u8; 10_000];
        let new = vec![2u8; 20_000];
        for fault in [Fault::Fail, Fault::Die, Fault::Tear] {
            for at in 0.. {
                let g = loc.put("obj", &old, Condition::Always).unwrap();
                let armed = faults::arm(&dir, at, fault);
                let r = loc.put("obj", &new, Condition::IfGeneration(&g));
                let fired = armed.fired();
                drop(armed);
                let now = loc.open("obj").unwrap().read_vec(0, loc.stat("obj").unwrap().unwrap().len as usize).unwrap();
                match r {
                    Ok(_) => assert_eq!(now, new, "{fault:?} at {at}"),
                    Err(PutError::Io(_)) => assert!(now == old || now == new, "{fault:?} at {at}: torn"),
                    Err(PutError::Conflict) => panic!("{fault:?} at {at}: a conflict without a rival"),
                }
                let names: Vec<_> = loc.list("").unwrap().into_iter().map(|e| e.name).collect();
                assert_eq!(names, ["obj"], "{fault:?} at {at}");
                if !fired {
                    assert!(at > 0);
                    break;
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
