//! Every byte a persistent array puts on disk goes through here: c-blosc2's
//! frame I/O (this module is registered as a Blosc2 I/O backend and every
//! super-chunk with a path uses it) and ours (the journal, renames,
//! removals, syncs).
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
//!
//! c-blosc2 creates a sparse frame's directory (`mkdir`) and deletes its
//! chunk files (`remove`) itself, outside the I/O callbacks; those two are
//! not counted. Reads are never failed: a process that dies changes
//! nothing by reading.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use blosc2_sys as b;

use super::location::{self, Object};

/// Our Blosc2 I/O backend's id (in c-blosc2's range for registered
/// backends, 160..=255) and name. Not stored in frames: any reader opens them.
const IO_ID: u8 = 203;
const IO_NAME: &CStr = c"caterva-rs";

/// What a changing operation is, for the fault plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

fn injected(op: Op, path: &Path) -> std::io::Error {
    std::io::Error::other(format!("injected fault: {op:?} of {}", path.display()))
}

/// Ask the fault plans about `op` on `path`: `Err` if it must fail.
fn gate(op: Op, path: &Path) -> std::io::Result<()> {
    match step(op, path) {
        Step::Go => Ok(()),
        Step::Fail | Step::Tear => Err(injected(op, path)),
    }
}

thread_local! {
    /// The first write failure of this thread since [`take_failure`] last looked.
    static FAILURE: RefCell<Option<(&'static str, PathBuf, std::io::Error)>> = const { RefCell::new(None) };
}

fn note_failure(what: &'static str, path: &Path, e: std::io::Error) {
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
        gate(Op::Truncate, &self.path)?;
        self.file.set_len(len)
    }

    /// Make the file's data (and length) durable.
    pub(crate) fn sync_data(&self) -> std::io::Result<()> {
        gate(Op::Sync, &self.path)?;
        self.file.sync_data()
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

/// Write `bytes` at `at` (at the end for `None`), as the fault plans allow.
fn write_all_at(file: &std::fs::File, path: &Path, at: Option<u64>, bytes: &[u8]) -> std::io::Result<()> {
    let put = |bytes: &[u8]| -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        match at {
            Some(at) => file.write_all_at(bytes, at),
            None => {
                let mut f = file;
                f.write_all(bytes)
            }
        }
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

pub(crate) fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    gate(Op::Rename, to)?;
    std::fs::rename(from, to)
}

pub(crate) fn remove_file(path: &Path) -> std::io::Result<()> {
    gate(Op::Remove, path)?;
    std::fs::remove_file(path)
}

pub(crate) fn remove_dir(path: &Path) -> std::io::Result<()> {
    gate(Op::Remove, path)?;
    std::fs::remove_dir(path)
}

/// Make the entries of `dir` (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    gate(Op::Sync, dir)?;
    std::fs::File::open(dir)?.sync_all()
}

// ---------------------------------------------------------------------------
// The Blosc2 I/O backend.

/// A file c-blosc2 opened through us: read-only streams read the object
/// through the storage seam ([`super::location`]); streams that write hold
/// the file (arrays change in place only where the location's protocol is
/// the journaled one: local files).
struct Stream {
    /// What a read-only stream reads; a stream that is [`Served`] opens it
    /// only when c-blosc2 asks for bytes that were not served.
    object: std::cell::OnceCell<Arc<dyn Object>>,
    /// The file of a stream that writes.
    file: Option<std::fs::File>,
    path: PathBuf,
    append: bool,
    served: Option<std::rc::Rc<Served>>,
}

impl Stream {
    fn object(&self) -> std::io::Result<&Arc<dyn Object>> {
        if let Some(o) = self.object.get() {
            return Ok(o);
        }
        let o = open_object(&self.path)?;
        Ok(self.object.get_or_init(|| o))
    }
}

/// Open the object c-blosc2 names `path` (a local path or a URL) for reading.
fn open_object(path: &Path) -> std::io::Result<Arc<dyn Object>> {
    let url = path.to_str().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("'{}' is not UTF-8", path.display()))
    })?;
    location::open_stream(url)
}

/// What a frame check read of one file: its length and the pieces it read
/// (position, bytes). While [`Serving`], c-blosc2's reads of that file are
/// answered from these bytes, so that c-blosc2 parses exactly what was
/// checked, however the file changes meanwhile, and reads nothing twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Served {
    /// The file, as c-blosc2 will name it.
    pub(crate) path: PathBuf,
    /// Its length when it was checked.
    pub(crate) len: u64,
    /// What was read of it, in the order it was read.
    pub(crate) pieces: Vec<(u64, Vec<u8>)>,
}

impl Served {
    /// The `len` bytes at `at`, if what was read covers them (from one
    /// piece, or from pieces that follow one another).
    pub(crate) fn bytes(&self, at: u64, len: usize) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let pos = at + out.len() as u64;
            let (start, piece) = self.pieces.iter().find(|(p, b)| *p <= pos && pos < p + b.len() as u64)?;
            let from = (pos - start) as usize;
            let take = (piece.len() - from).min(len - out.len());
            out.extend_from_slice(&piece[from..from + take]);
        }
        Some(out)
    }
}

thread_local! {
    /// The file this thread is serving to c-blosc2, if any ([`Serving`]).
    static SERVED: RefCell<Option<std::rc::Rc<Served>>> = const { RefCell::new(None) };
}

/// While this lives, c-blosc2's read-only opens of the served file in this
/// thread read the bytes a check read ([`Served`]) rather than the file.
pub(crate) struct Serving(());

impl Serving {
    pub(crate) fn start(served: Served) -> Serving {
        SERVED.with(|s| *s.borrow_mut() = Some(std::rc::Rc::new(served)));
        Serving(())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        SERVED.with(|s| s.borrow_mut().take());
    }
}

/// Our backend's callbacks, for [`super::blosc`] to register with c-blosc2
/// (reads fill the buffer c-blosc2 allocates).
pub(super) fn callbacks() -> b::blosc2_io_cb {
    b::blosc2_io_cb {
        id: IO_ID,
        name: IO_NAME.as_ptr().cast_mut(),
        is_allocation_necessary: true,
        open: Some(cb_open),
        close: Some(cb_close),
        size: Some(cb_size),
        write: Some(cb_write),
        read: Some(cb_read),
        truncate: Some(cb_truncate),
        destroy: Some(cb_destroy),
    }
}

/// The descriptor a super-chunk's storage names our backend with.
pub(super) fn descriptor() -> b::blosc2_io {
    b::blosc2_io { id: IO_ID, name: IO_NAME.as_ptr(), params: std::ptr::null_mut() }
}

/// # Safety
/// `stream` must come from [`cb_open`] and not be closed.
unsafe fn stream<'a>(stream: *mut c_void) -> &'a Stream {
    // SAFETY: as the caller guarantees.
    unsafe { &*stream.cast::<Stream>() }
}

unsafe extern "C" fn cb_open(urlpath: *const c_char, mode: *const c_char, _params: *mut c_void) -> *mut c_void {
    use std::os::unix::ffi::OsStrExt;
    if urlpath.is_null() || mode.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: c-blosc2 passes NUL-terminated strings.
    let (path, mode) = unsafe { (CStr::from_ptr(urlpath), CStr::from_ptr(mode)) };
    let path = Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let mode = mode.to_bytes();
    let plus = mode.contains(&b'+');
    let mut o = std::fs::OpenOptions::new();
    let append = mode.first() == Some(&b'a');
    match mode.first() {
        Some(b'r') => o.read(true).write(plus),
        Some(b'w') => o.write(true).read(plus).create(true).truncate(true),
        Some(b'a') => o.append(true).read(plus).create(true),
        _ => return std::ptr::null_mut(),
    };
    if mode.first() != Some(&b'r') {
        if let Err(e) = gate(Op::Create, path) {
            note_failure("creating", path, e);
            return std::ptr::null_mut();
        }
    }
    let read_only = mode == b"rb" || mode == b"r";
    if read_only {
        let served = SERVED.with(|s| s.borrow().as_ref().filter(|s| s.path == path).cloned());
        let object = std::cell::OnceCell::new();
        if served.is_none() {
            match open_object(path) {
                Ok(o) => drop(object.set(o)),
                Err(_) => return std::ptr::null_mut(),
            }
        }
        let stream = Stream { object, file: None, path: path.to_owned(), append, served };
        return Box::into_raw(Box::new(stream)).cast();
    }
    match o.open(path) {
        Ok(file) => {
            let stream = Stream {
                object: std::cell::OnceCell::new(),
                file: Some(file),
                path: path.to_owned(),
                append,
                served: None,
            };
            Box::into_raw(Box::new(stream)).cast()
        }
        Err(e) => {
            if mode.first() != Some(&b'r') {
                note_failure("creating", path, e);
            }
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn cb_close(stream: *mut c_void) -> c_int {
    if !stream.is_null() {
        // SAFETY: made by Box::into_raw in cb_open; c-blosc2 closes it once.
        drop(unsafe { Box::from_raw(stream.cast::<Stream>()) });
    }
    0
}

unsafe extern "C" fn cb_size(s: *mut c_void) -> i64 {
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    if let Some(served) = &s.served {
        return i64::try_from(served.len).unwrap_or(-1);
    }
    let len = match &s.file {
        Some(f) => f.metadata().map(|m| m.len()),
        None => s.object().and_then(|o| o.len_now()),
    };
    len.map_or(-1, |l| i64::try_from(l).unwrap_or(-1))
}

unsafe extern "C" fn cb_write(ptr: *const c_void, size: i64, nitems: i64, position: i64, s: *mut c_void) -> i64 {
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    let (Ok(size_u), Ok(n)) = (usize::try_from(size), usize::try_from(nitems)) else { return 0 };
    let Some(len) = size_u.checked_mul(n) else { return 0 };
    if len == 0 {
        return nitems;
    }
    // SAFETY: c-blosc2 passes `size * nitems` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    let at = if s.append { None } else { u64::try_from(position).ok() };
    let Some(file) = &s.file else { return 0 };
    match write_all_at(file, &s.path, at, bytes) {
        Ok(()) => nitems,
        Err(e) => {
            note_failure("writing", &s.path, e);
            0
        }
    }
}

unsafe extern "C" fn cb_read(ptr: *mut *mut c_void, size: i64, nitems: i64, position: i64, s: *mut c_void) -> i64 {
    use std::os::unix::fs::FileExt;
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    let (Ok(size_u), Ok(n), Ok(at)) = (usize::try_from(size), usize::try_from(nitems), u64::try_from(position)) else {
        return 0;
    };
    let Some(len) = size_u.checked_mul(n) else { return 0 };
    if len == 0 || ptr.is_null() {
        return 0;
    }
    // SAFETY: with is_allocation_necessary, c-blosc2 passes a buffer of
    // `size * nitems` bytes in *ptr.
    let buf = unsafe { std::slice::from_raw_parts_mut((*ptr).cast::<u8>(), len) };
    if let Some(bytes) = s.served.as_ref().and_then(|sv| sv.bytes(at, len)) {
        buf.copy_from_slice(&bytes);
        return nitems;
    }
    let done = match &s.file {
        Some(file) => {
            let mut done = 0;
            while done < len {
                match file.read_at(&mut buf[done..], at + done as u64) {
                    Ok(0) => break,
                    Ok(k) => done += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            done
        }
        None => match s.object().and_then(|o| o.read_upto(at, buf)) {
            Ok(done) => done,
            Err(_) => return 0,
        },
    };
    (done / size_u) as i64
}

unsafe extern "C" fn cb_truncate(s: *mut c_void, size: i64) -> c_int {
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    let Ok(len) = u64::try_from(size) else { return -1 };
    let r = gate(Op::Truncate, &s.path).and_then(|()| match &s.file {
        Some(f) => f.set_len(len),
        None => Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            note_failure("truncating", &s.path, e);
            -1
        }
    }
}

unsafe extern "C" fn cb_destroy(_params: *mut c_void) -> c_int {
    0
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
