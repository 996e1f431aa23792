//! c-blosc2's file I/O: this module is registered as a Blosc2 I/O backend
//! (`blosc.rs` registers it; every super-chunk with a path uses it).
//!
//! - Read-only streams read objects through the storage seam
//!   ([`super::location::open_stream`]): a local file, or whatever a URL names.
//! - Streams that write hold the file, and write through [`super::io`]'s
//!   fault-gated writes; a failure c-blosc2 ignores is remembered there
//!   ([`super::io::take_failure`]).
//! - While a frame check's reads are served ([`ServingChecked`]), c-blosc2's
//!   reads of that frame are answered from the bytes the check read
//!   ([`CheckedBytes`]), so it parses exactly what was checked.
//! - Frames at locations the operating system does not reach (object stores,
//!   web servers) are given to c-blosc2 through a [`StandInPath`]: c-blosc2
//!   2.15 `stat()`s the path it opens a frame at (to tell a frame file from
//!   a sparse frame's directory) before it uses the I/O backend, so it is
//!   given a local stand-in path of the right kind, and the descriptor's
//!   parameters name the frame's real location, which every stream it then
//!   opens reads (its streams never touch the stand-in).
//! - While a versioned write is under way ([`Draft`]), the streams of a
//!   stand-in's frame read and write whole images of its objects in memory
//!   instead: c-blosc2 changes the frame as it would a local one, and the
//!   store then publishes what changed by its location's protocol
//!   (`store/versioned.rs`). Nothing reaches the location before that.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use blosc2_sys as b;

use super::io::{gate, note_failure, write_all_at, Op};
use super::location::{self, FrameSite, Location, Object, Stamp};

/// Our Blosc2 I/O backend's id (in c-blosc2's range for registered
/// backends, 160..=255) and name. Not stored in frames: any reader opens them.
const IO_ID: u8 = 203;
const IO_NAME: &CStr = c"caterva-rs";

/// A file c-blosc2 opened through us: read-only streams read the object
/// through the storage seam ([`super::location`]); streams that write hold
/// the file (arrays change in place only where the location's protocol is
/// the journaled one: local files).
struct Stream {
    /// What a read-only stream reads; a stream that is served
    /// [`CheckedBytes`] opens it only when c-blosc2 asks for bytes that were
    /// not served.
    object: std::cell::OnceCell<Arc<dyn Object>>,
    /// The file of a stream that writes.
    file: Option<std::fs::File>,
    /// The file's path, or the URL of a stream through a [`StandInPath`].
    path: PathBuf,
    /// For a stream through a [`StandInPath`]: the object's location and name,
    /// and for a sparse frame's chunk object the index version naming it.
    remote: Option<(Arc<dyn Location>, String, Option<Stamp>)>,
    append: bool,
    served: Option<std::rc::Rc<CheckedBytes>>,
    /// A stream of an object of a [`Draft`]: its bytes are the draft's image.
    draft: Option<(Arc<Mutex<Draft>>, String)>,
    /// A chunk file written under a new name, to replace the old on close.
    replacing: Option<Replacing>,
}

/// A sparse frame's chunk file that c-blosc2 (re)writes (`"wb"`: an
/// update, or a new chunk) is written to `<name>.caterva-new` and renamed
/// over `<name>` when c-blosc2 closes it, unless a write to it failed
/// (then the new file is removed and the old one stays). So the file at
/// the chunk's name is always whole: a reader in another process reads
/// the old chunk or the new one, never a truncated or half-written file,
/// and the old file's inode is never written into, which lets the undo
/// journal keep an original chunk file by a second name (a hard link)
/// instead of copying its bytes (`journal::Layout::saves`).
struct Replacing {
    /// The chunk file's name.
    path: PathBuf,
    /// Where its new content is written.
    new: PathBuf,
    failed: std::cell::Cell<bool>,
}

impl Replacing {
    /// Suffix of a chunk file being written.
    const SUFFIX: &'static str = ".caterva-new";

    /// For `path`, if it names a sparse frame's chunk file.
    fn of(path: &Path) -> Option<Replacing> {
        let name = path.file_name()?.to_str()?;
        super::frame::chunk_id(name)?;
        let new = path.with_file_name(format!("{name}{}", Self::SUFFIX));
        Some(Replacing { path: path.to_owned(), new, failed: std::cell::Cell::new(false) })
    }

    /// Put the new file in place, or drop it if its writing failed.
    fn finish(&self) -> std::io::Result<()> {
        if self.failed.get() {
            // Best effort: a leftover is removed by the next rollback too.
            let _ = std::fs::remove_file(&self.new);
            return Ok(());
        }
        super::io::rename(&self.new, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&self.new);
        })
    }
}

/// Whether `name` is that of a chunk file being written ([`Replacing`]),
/// which a writer that died may have left.
pub(super) fn is_chunk_being_written(name: &str) -> bool {
    name.strip_suffix(Replacing::SUFFIX).is_some_and(|n| super::frame::chunk_id(n).is_some())
}

impl Stream {
    fn object(&self) -> std::io::Result<&Arc<dyn Object>> {
        if let Some(o) = self.object.get() {
            return Ok(o);
        }
        let o = match &self.remote {
            Some((loc, name, by)) => location::open_named_by(&**loc, name, by.as_ref())?,
            None => open_object(&self.path)?,
        };
        Ok(self.object.get_or_init(|| o))
    }
}

/// The frame of a [`StandInPath`]: where c-blosc2's streams of its super-chunk read.
#[derive(Debug)]
struct Remote {
    location: Arc<dyn Location>,
    key: String,
    contiguous: bool,
    /// The write under way, if any ([`Draft`]).
    draft: Option<Arc<Mutex<Draft>>>,
    /// The frame object's name and the version of it the super-chunk was
    /// parsed from: c-blosc2's later reads of it (the offsets index) read
    /// that version, never a newer one that another writer published
    /// meanwhile.
    pinned: Option<(String, Arc<dyn Object>)>,
}

/// Pin the frame object `name` of the stand-in `params` names to `object`,
/// the version its super-chunk was parsed from (see [`Remote`]).
pub(super) fn pin_frame(params: *mut c_void, name: String, object: Arc<dyn Object>) {
    if let Some(r) = remotes().get_mut(&(params as usize)) {
        r.pinned = Some((name, object));
    }
}

/// The objects of a stand-in's frame as a versioned write under way has
/// them: whole images in memory, which c-blosc2's streams read and write
/// instead of the location. It starts with the frame object (the contiguous
/// frame, or a sparse frame's index) of the version the write is based on,
/// so every read of it sees that version; objects c-blosc2 opens to write
/// join it, whole (a chunk object it rewrites starts from the location's
/// bytes); the others are read from the location as usual.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    /// Objects by name in the location: their bytes as the write has them.
    pub(crate) images: HashMap<String, Vec<u8>>,
    /// The names c-blosc2 opened to write, in order.
    pub(crate) written: BTreeSet<String>,
}

impl Draft {
    /// Make the stand-in of the super-chunk whose I/O parameters are
    /// `params` hold its objects in a new draft, starting from the frame
    /// object `frame` (its name and bytes).
    ///
    /// # Errors
    /// If `params` names no stand-in, or one with a draft already.
    pub(super) fn begin(params: *mut c_void, frame: String, bytes: Vec<u8>) -> std::io::Result<()> {
        let mut remotes = remotes();
        let r = remotes
            .get_mut(&(params as usize))
            .ok_or_else(|| std::io::Error::other("the super-chunk was not opened through a stand-in"))?;
        if r.draft.is_some() {
            return Err(std::io::Error::other("a write is already under way on this super-chunk"));
        }
        let mut d = Draft::default();
        d.images.insert(frame, bytes);
        r.draft = Some(Arc::new(Mutex::new(d)));
        Ok(())
    }

    /// Take the draft of the stand-in `params` names back (its streams read
    /// the location again).
    pub(super) fn end(params: *mut c_void) -> Option<Draft> {
        let d = remotes().get_mut(&(params as usize))?.draft.take()?;
        let d = Arc::try_unwrap(d).map_or_else(
            |shared| std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner)),
            |m| m.into_inner().unwrap_or_else(PoisonError::into_inner),
        );
        Some(d)
    }

    /// The stream of `name` for an open in `mode`, if the draft has (or, to
    /// write, takes) it; `None` to read it from the location.
    fn open(
        draft: &Arc<Mutex<Draft>>,
        location: &dyn Location,
        name: &str,
        mode: &[u8],
    ) -> std::io::Result<Option<Stream>> {
        let mut d = draft.lock().unwrap_or_else(PoisonError::into_inner);
        let writes = mode != b"rb" && mode != b"r";
        if !d.images.contains_key(name) {
            if !writes {
                return Ok(None);
            }
            let start = match mode.first() {
                Some(b'w') => Vec::new(),
                _ => match location.open(name) {
                    Ok(o) => {
                        let mut buf = vec![0; usize::try_from(o.len()).map_err(std::io::Error::other)?];
                        o.read_at(0, &mut buf)?;
                        buf
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode.first() == Some(&b'a') => Vec::new(),
                    Err(e) => return Err(e),
                },
            };
            d.images.insert(name.to_owned(), start);
        }
        if writes {
            if mode.first() == Some(&b'w') {
                d.images.insert(name.to_owned(), Vec::new());
            }
            d.written.insert(name.to_owned());
        }
        Ok(Some(Stream {
            object: std::cell::OnceCell::new(),
            file: None,
            path: PathBuf::from(location.url(name)),
            remote: None,
            append: mode.first() == Some(&b'a'),
            served: None,
            draft: Some((draft.clone(), name.to_owned())),
            replacing: None,
        }))
    }
}

/// Run `f` on the image of a draft stream's object.
fn with_image<T>(draft: &(Arc<Mutex<Draft>>, String), f: impl FnOnce(&mut Vec<u8>) -> T) -> Option<T> {
    let mut d = draft.0.lock().unwrap_or_else(PoisonError::into_inner);
    d.images.get_mut(&draft.1).map(f)
}

/// The frames given to c-blosc2 through stand-ins, by the number their
/// descriptors carry as parameters; an entry goes when c-blosc2 destroys
/// the parameters (it frees the super-chunk, or fails to open it) or the
/// opening fails ([`StandInPath::forget`]).
fn remotes() -> std::sync::MutexGuard<'static, HashMap<usize, Remote>> {
    static REMOTES: OnceLock<Mutex<HashMap<usize, Remote>>> = OnceLock::new();
    REMOTES.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// A local path and a descriptor under which c-blosc2 opens a frame it
/// cannot reach by path ([`super::location::Location::local_path`] is
/// `None`). The path is an empty file (a contiguous frame) or an empty
/// directory (a sparse frame) made once per user in the temporary
/// directory, only ever `stat()`ed; the descriptor's parameters are a
/// number naming the frame's [`FrameSite`], through which every stream of the
/// super-chunk reads. Writing streams are refused: frames there change by
/// their location's own protocol, never in place.
pub(super) struct StandInPath {
    pub(super) path: CString,
    pub(super) io: b::blosc2_io,
    id: usize,
}

impl StandInPath {
    /// The stand-in of the frame at `site`.
    ///
    /// # Errors
    /// If the stand-in paths cannot be made.
    pub(super) fn new(site: &FrameSite) -> std::io::Result<StandInPath> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        let (file, dir) = stand_in_paths()?;
        let path = if site.contiguous { file } else { dir };
        let path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let remote = Remote {
            location: site.location.clone(),
            key: site.key.clone(),
            contiguous: site.contiguous,
            draft: None,
            pinned: None,
        };
        remotes().insert(id, remote);
        let mut io = descriptor();
        io.params = id as *mut c_void;
        Ok(StandInPath { path, io, id })
    }

    /// Drop the frame's entry (c-blosc2 did not take the descriptor).
    pub(super) fn forget(&self) {
        remotes().remove(&self.id);
    }
}

/// The URL of the frame of a super-chunk opened through a [`StandInPath`],
/// from its descriptor's parameters; `None` for any other.
pub(crate) fn stand_in_url(params: *mut c_void) -> Option<String> {
    remotes().get(&(params as usize)).map(|r| r.location.url(&r.key))
}

/// The stand-in file and directory ([`StandInPath`]), made at the first use:
/// `caterva-rs-stand-in-<uid>/{frame, sparse}` in the temporary directory.
fn stand_in_paths() -> std::io::Result<(&'static Path, &'static Path)> {
    static PATHS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    if let Some((f, d)) = PATHS.get() {
        return Ok((f, d));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let root = std::env::temp_dir().join(format!("caterva-rs-stand-in-{uid}"));
    let (file, dir) = (root.join("frame"), root.join("sparse"));
    std::fs::create_dir_all(&dir)?;
    if let Err(e) = std::fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    // What c-blosc2 will see there must be of the right kinds.
    if !std::fs::metadata(&file)?.is_file() || !std::fs::metadata(&dir)?.is_dir() {
        let e = format!("the stand-in paths in '{}' are not a file and a directory", root.display());
        return Err(std::io::Error::other(e));
    }
    let (f, d) = PATHS.get_or_init(|| (file, dir));
    Ok((f, d))
}

/// The location and name of what c-blosc2 opens at `path` under the
/// descriptor parameters `params`, if those name a [`StandInPath`]'s frame:
/// the frame object itself, or an object under a sparse frame's prefix.
fn remote_name(params: *mut c_void, path: &Path) -> Option<std::io::Result<StandInName>> {
    if params.is_null() {
        return None;
    }
    let remotes = remotes();
    let r = remotes.get(&(params as usize))?;
    let draft = r.draft.clone();
    let pinned = r.pinned.clone();
    let found = stand_in_paths().and_then(|(file, dir)| {
        let name = if r.contiguous {
            (path == file).then(|| r.key.clone())
        } else {
            let rest = path.strip_prefix(dir).ok().and_then(Path::to_str).filter(|s| !s.is_empty());
            rest.map(|rest| location::join(&r.key, rest))
        };
        name.ok_or_else(|| {
            let e = format!("c-blosc2 asked for '{}', outside the frame at {}", path.display(), r.location.url(&r.key));
            std::io::Error::new(std::io::ErrorKind::InvalidInput, e)
        })
    });
    Some(found.map(|name| {
        // The frame object is read as pinned; a sparse frame's other
        // objects as its pinned index names them.
        let (pinned, named_by) = match pinned {
            Some((f, o)) if f == name => (Some(o), None),
            Some((_, o)) if !r.contiguous => (None, o.stamp().cloned()),
            _ => (None, None),
        };
        StandInName { location: r.location.clone(), name, draft, pinned, named_by }
    }))
}

/// An object of a stand-in's frame: its location, its name there, the
/// stand-in's [`Draft`] if a write is under way, the version it is pinned
/// to (the frame object), or the index version that names it (a sparse
/// frame's chunk object).
struct StandInName {
    location: Arc<dyn Location>,
    name: String,
    draft: Option<Arc<Mutex<Draft>>>,
    pinned: Option<Arc<dyn Object>>,
    named_by: Option<Stamp>,
}

/// Open the object c-blosc2 names `path` (a local path or a URL) for reading.
fn open_object(path: &Path) -> std::io::Result<Arc<dyn Object>> {
    let url = path.to_str().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("'{}' is not UTF-8", path.display()))
    })?;
    location::open_stream(url)
}

/// What a frame check read of one file: its length and the pieces it read
/// (position, bytes). While they are served ([`ServingChecked`]), c-blosc2's
/// reads of that file are answered from these bytes, so that c-blosc2 parses exactly what was
/// checked, however the file changes meanwhile, and reads nothing twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CheckedBytes {
    /// The file, as c-blosc2 will name it.
    pub(crate) path: PathBuf,
    /// Its length when it was checked.
    pub(crate) len: u64,
    /// What was read of it, in the order it was read.
    pub(crate) pieces: Vec<(u64, Vec<u8>)>,
}

impl CheckedBytes {
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
    /// Whether this thread's write syncs at its commit ([`WritebackEarly`]).
    static WRITEBACK_EARLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While this lives, the chunk files c-blosc2 writes in this thread start
/// their way to the disk when c-blosc2 closes them (`sync_file_range`,
/// which does not wait), for a write that syncs them at its commit: the
/// disk writes them while the write goes on (the next chunk, the index),
/// and the commit's sync waits for less. A synced one-row write over two
/// 3.3 MiB chunk files went from 35–38 to 32–34 ms (Python, this machine).
pub(crate) struct WritebackEarly(bool);

impl WritebackEarly {
    /// Start writeback early in this thread if `on` (until dropped).
    pub(crate) fn during(on: bool) -> WritebackEarly {
        WritebackEarly(WRITEBACK_EARLY.with(|w| w.replace(on)))
    }
}

impl Drop for WritebackEarly {
    fn drop(&mut self) {
        WRITEBACK_EARLY.with(|w| w.set(self.0));
    }
}

/// Ask the kernel to start writing `file`'s dirty pages (no wait; on
/// systems without `sync_file_range`, nothing).
fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a descriptor we own, open for the call; the call only
        // starts writeback of its pages, and a failure changes nothing.
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

thread_local! {
    /// The file this thread is serving to c-blosc2, if any ([`ServingChecked`]).
    static SERVED: RefCell<Option<std::rc::Rc<CheckedBytes>>> = const { RefCell::new(None) };
}

/// While this lives, c-blosc2's read-only opens of the served file in this
/// thread read the bytes a check read ([`CheckedBytes`]) rather than the file.
pub(crate) struct ServingChecked(());

impl ServingChecked {
    pub(crate) fn start(served: CheckedBytes) -> ServingChecked {
        SERVED.with(|s| *s.borrow_mut() = Some(std::rc::Rc::new(served)));
        ServingChecked(())
    }
}

impl Drop for ServingChecked {
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

unsafe extern "C" fn cb_open(urlpath: *const c_char, mode: *const c_char, params: *mut c_void) -> *mut c_void {
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
    let remote = match remote_name(params, path) {
        Some(Ok(n)) => match &n.draft {
            Some(draft) => match Draft::open(draft, &*n.location, &n.name, mode) {
                Ok(Some(stream)) => return Box::into_raw(Box::new(stream)).cast(),
                Ok(None) => Some(n),
                Err(e) => {
                    // A missing object opened to read is c-blosc2's to report.
                    if !read_only {
                        note_failure("opening", Path::new(&n.location.url(&n.name)), e);
                    }
                    return std::ptr::null_mut();
                }
            },
            None if read_only => Some(n),
            None => {
                let e =
                    std::io::Error::new(std::io::ErrorKind::PermissionDenied, "objects there are not written in place");
                note_failure("writing", Path::new(&n.location.url(&n.name)), e);
                return std::ptr::null_mut();
            }
        },
        Some(Err(e)) => {
            note_failure("opening", path, e);
            return std::ptr::null_mut();
        }
        None => None,
    };
    if read_only {
        let path = remote.as_ref().map_or_else(|| path.to_owned(), |n| PathBuf::from(n.location.url(&n.name)));
        let served = SERVED.with(|s| s.borrow().as_ref().filter(|s| s.path == path).cloned());
        let object = std::cell::OnceCell::new();
        let remote = remote.map(|n| {
            if let Some(o) = n.pinned {
                let _ = object.set(o);
            }
            (n.location, n.name, n.named_by)
        });
        let stream = Stream { object, file: None, path, remote, append, served, draft: None, replacing: None };
        if stream.served.is_none() && stream.object().is_err() {
            return std::ptr::null_mut();
        }
        return Box::into_raw(Box::new(stream)).cast();
    }
    // A sparse frame's chunk file is never rewritten in place: see [`Replacing`].
    let replacing = (mode.first() == Some(&b'w')).then(|| Replacing::of(path)).flatten();
    let target = replacing.as_ref().map_or(path, |r| r.new.as_path());
    match o.open(target) {
        Ok(file) => {
            super::io::record!(target, super::io::faults::Change::created(target, &file, mode.first() == Some(&b'w')));
            let stream = Stream {
                object: std::cell::OnceCell::new(),
                file: Some(file),
                path: target.to_owned(),
                remote: None,
                append,
                served: None,
                draft: None,
                replacing,
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
    if stream.is_null() {
        return 0;
    }
    // SAFETY: made by Box::into_raw in cb_open; c-blosc2 closes it once.
    let mut s = unsafe { Box::from_raw(stream.cast::<Stream>()) };
    let Some(r) = s.replacing.take() else { return 0 };
    if let Some(f) = s.file.as_ref().filter(|_| WRITEBACK_EARLY.with(std::cell::Cell::get)) {
        start_writeback(f);
    }
    drop(s.file.take());
    match r.finish() {
        Ok(()) => 0,
        Err(e) => {
            note_failure("replacing", &r.path, e);
            -1
        }
    }
}

unsafe extern "C" fn cb_size(s: *mut c_void) -> i64 {
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    if let Some(served) = &s.served {
        return i64::try_from(served.len).unwrap_or(-1);
    }
    if let Some(d) = &s.draft {
        return with_image(d, |img| i64::try_from(img.len()).unwrap_or(-1)).unwrap_or(-1);
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
    if let Some(d) = &s.draft {
        let r = gate(Op::Write, &s.path).map(|()| {
            with_image(d, |img| {
                let at = at.map_or(img.len(), |a| usize::try_from(a).unwrap_or(usize::MAX));
                let end = at.checked_add(bytes.len())?;
                if img.len() < end {
                    img.resize(end, 0);
                }
                img[at..end].copy_from_slice(bytes);
                Some(())
            })
            .flatten()
        });
        return match r {
            Ok(Some(())) => nitems,
            Ok(None) => 0,
            Err(e) => {
                note_failure("writing", &s.path, e);
                0
            }
        };
    }
    let Some(file) = &s.file else { return 0 };
    match write_all_at(file, &s.path, at, bytes) {
        Ok(()) => nitems,
        Err(e) => {
            if let Some(r) = &s.replacing {
                r.failed.set(true);
            }
            note_failure("writing", &s.path, e);
            0
        }
    }
}

unsafe extern "C" fn cb_read(ptr: *mut *mut c_void, size: i64, nitems: i64, position: i64, s: *mut c_void) -> i64 {
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
    if let Some(d) = &s.draft {
        let done = with_image(d, |img| {
            let from = usize::try_from(at).unwrap_or(usize::MAX).min(img.len());
            let n = (img.len() - from).min(buf.len());
            buf[..n].copy_from_slice(&img[from..from + n]);
            n
        });
        return done.map_or(0, |n| (n / size_u) as i64);
    }
    let done = match &s.file {
        Some(file) => super::io::read_upto(file, at, buf),
        None => s.object().and_then(|o| o.read_upto(at, buf)),
    };
    let Ok(done) = done else { return 0 };
    (done / size_u) as i64
}

unsafe extern "C" fn cb_truncate(s: *mut c_void, size: i64) -> c_int {
    // SAFETY: an open stream of ours.
    let s = unsafe { stream(s) };
    let Ok(len) = u64::try_from(size) else { return -1 };
    let r = match (&s.file, &s.draft) {
        (_, Some(d)) => gate(Op::Truncate, &s.path).and_then(|()| {
            with_image(d, |img| img.resize(usize::try_from(len).unwrap_or(usize::MAX), 0))
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }),
        (Some(f), None) => super::io::set_len(f, &s.path, len),
        (None, None) => {
            gate(Op::Truncate, &s.path).and_then(|()| Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied)))
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            note_failure("truncating", &s.path, e);
            -1
        }
    }
}

unsafe extern "C" fn cb_destroy(params: *mut c_void) -> c_int {
    if !params.is_null() {
        remotes().remove(&(params as usize));
    }
    0
}
