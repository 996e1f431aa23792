//! c-blosc2's super-chunks as the store uses them: an owned [`SChunk`]
//! (metalayers, vlmetalayers, chunks in and out, frames), made, opened and
//! written through the store's I/O backend (`blosc_io.rs`, registered here
//! once per process) and opened only after the frame check
//! (`frame_check/`: c-blosc2 crashes on many corrupt frames). It knows
//! nothing of journals, checksums or arrays: `Store` adds those, and the
//! super-chunk's writing methods are visible to the `store` module alone,
//! so every write goes through the store's transaction. A frame borrowed
//! from a caller's buffer is flagged so that it is never written.
//!
//! Thread safety: c-blosc2 super-chunks are not safe for concurrent use (frame
//! lookups go through the super-chunk's own decompression context and index
//! cache). [`SChunk`] therefore serialises every call it makes from `&self`
//! behind a mutex; callers decompress the chunks they fetch with their own
//! [`DCtx`], outside the lock.
//!
//! Fork safety: a super-chunk's mutex is per process (see [`crate::fork`]),
//! and a child's first use of a super-chunk gives it contexts of its own
//! ([`SChunk::renew_contexts`]).

use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::{Mutex, MutexGuard, Once};

use blosc2_sys as b;

use super::blosc_io;
use super::frame_check::{self, Chunks};
use super::io;
use super::location::{FrameSite, ResolvedUrl};
use crate::blosc2::{
    self, cstring, dparams, inflate, raw_bytes, CParams, Chunk, Codec, Compression, Filter, SplitMode,
};
use crate::error::{Error, Result};
use crate::fork::{ForkHooks, PerProcess};

mod meta;
mod write;

pub(in crate::store) use meta::compress_vlmeta;

/// c-blosc2 initialised ([`blosc2::init`]) and our I/O backend registered
/// with it, once per process, before any super-chunk is made or opened.
fn init() {
    static REGISTER: Once = Once::new();
    if REGISTER.is_completed() {
        return;
    }
    // Registered before the registration starts: a fork while it runs
    // waits for it to end (a child would find it half-done forever).
    crate::fork::on_fork(&FORK_HOOKS);
    REGISTER.call_once(|| {
        blosc2::init();
        register_io();
    });
}

/// What the store's use of c-blosc2 needs around a `fork()`: before it, a
/// first registration under way in another thread finishes ([`init`]).
static FORK_HOOKS: ForkHooks = ForkHooks::prepare_only(init);

fn blosc_err(what: &str, rc: i64) -> Error {
    Error::blosc(what, rc)
}

/// Whether c-blosc2 took our I/O backend ([`io`]), registered by [`init`].
static IO_REGISTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// c-blosc2's table of I/O backends is not thread-safe: a lookup of its
/// default backend registers it on first use (`blosc2_get_io_cb`), writing
/// the table while another thread may read it (ThreadSanitizer reports it).
/// Both the default and our backend are registered here, inside `init`'s
/// `Once`, before any super-chunk is made or opened: only super-chunks'
/// frames reach the table (contexts never do).
fn register_io() {
    // SAFETY: c-blosc2 is initialised; the lookup registers the default backend.
    unsafe { b::blosc2_get_io_cb(b::BLOSC2_IO_FILESYSTEM as u8) };
    // SAFETY: c-blosc2 copies the callback table; its name is a static string.
    let rc = unsafe { b::blosc2_register_io_cb(&blosc_io::callbacks()) };
    IO_REGISTERED.store(rc >= 0, std::sync::atomic::Ordering::Release);
}

/// Run a c-blosc2 call that may write to disk. c-blosc2 ignores some of
/// its write failures; our I/O backend remembers them ([`io::take_failure`]),
/// and one met during the call becomes the call's error.
fn writing<T>(call: impl FnOnce() -> Result<T>) -> Result<T> {
    let _ = io::take_failure();
    let r = call();
    match io::take_failure() {
        Some((what, path, e)) => Err(Error::io(what, Some(&path), &e)),
        None => r,
    }
}

/// Our I/O backend ([`io`]) for a super-chunk's storage (c-blosc2 copies
/// the descriptor), registered once per process. `None` if c-blosc2 refused
/// it (another backend took its id): c-blosc2's own stdio backend serves.
fn io_backend() -> Option<*mut b::blosc2_io> {
    struct Io(b::blosc2_io);
    // SAFETY: the descriptor is immutable and points at static data only.
    unsafe impl Send for Io {}
    // SAFETY: as above.
    unsafe impl Sync for Io {}
    static IO: std::sync::OnceLock<Io> = std::sync::OnceLock::new();
    init();
    if !IO_REGISTERED.load(std::sync::atomic::Ordering::Acquire) {
        return None;
    }
    Some(ptr::from_ref(&IO.get_or_init(|| Io(blosc_io::descriptor())).0).cast_mut())
}

/// A storage descriptor for c-blosc2 with our I/O backend.
fn blosc_storage(storage: &Storage, url: Option<&CString>) -> b::blosc2_storage {
    // SAFETY: returns a plain struct by value.
    let mut st = unsafe { b::blosc2_get_blosc2_storage_defaults() };
    st.contiguous = storage.contiguous;
    st.urlpath = url.map_or(ptr::null_mut(), |u| u.as_ptr().cast_mut());
    if url.is_some() {
        if let Some(io) = io_backend() {
            st.io = io;
        }
    }
    st
}

/// How a new super-chunk's chunks are laid out and compressed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Compression of its chunks.
    pub(crate) comp: Compression,
    /// Bytes per item.
    pub(crate) typesize: usize,
    /// Bytes per Blosc block (one geometric block).
    pub(crate) blocksize: usize,
    /// Threads c-blosc2 may use on it.
    pub(crate) nthreads: usize,
}

/// Where a super-chunk lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Storage {
    /// One contiguous frame (true) or a sparse frame / separate chunks (false).
    pub(crate) contiguous: bool,
    /// A file (contiguous) or directory (sparse) path; `None` keeps it in memory.
    pub(crate) urlpath: Option<String>,
}

/// An owned c-blosc2 super-chunk.
pub(crate) struct SChunk {
    ptr: NonNull<b::blosc2_schunk>,
    /// Serialises the calls made from `&self`. Per process: in a forked
    /// child a parent's thread may hold it forever, so the child uses a
    /// fresh one (see `guard`). It holds whether the super-chunk's own
    /// Blosc2 contexts (`cctx`, `dctx`) were made by this process.
    lock: PerProcess<Mutex<bool>>,
    /// The frame lives in a caller's buffer (`from_cframe` without a copy):
    /// c-blosc2 would `realloc` it on a write, so it must not be written.
    borrowed: bool,
}

// SAFETY: the super-chunk is owned; every call made through &self holds `lock`.
unsafe impl Send for SChunk {}

// SAFETY: as above.
unsafe impl Sync for SChunk {}

impl SChunk {
    /// Own the super-chunk a c-blosc2 call just made: NULL means the call
    /// (`what`) failed.
    fn own_made(p: *mut b::blosc2_schunk, what: &str) -> Result<Self> {
        NonNull::new(p).map(Self::own).ok_or_else(|| Error::blosc(what, None))
    }

    /// Own the live super-chunk `ptr` (nobody else frees it).
    fn own(mut ptr: NonNull<b::blosc2_schunk>) -> Self {
        // SAFETY: ptr is a live super-chunk that we now own.
        let r = unsafe { ptr.as_mut() };
        // c-blosc2 2.15 builds an in-memory super-chunk from a copied frame
        // (`blosc2_schunk_from_buffer(.., copy = true)`) with a chunk table
        // of `nchunks` pointers but leaves its recorded capacity `data_len`
        // at 0; reorder_offsets then reads past the table and insert/append
        // grow it too little. Record the real capacity.
        let table = usize::try_from(r.nchunks).unwrap_or(0) * std::mem::size_of::<*mut u8>();
        if r.frame.is_null() && !r.data.is_null() && r.data_len < table {
            r.data_len = table;
        }
        SChunk { ptr, lock: PerProcess::new(Mutex::new(true)), borrowed: false }
    }

    /// The lock of the calling process. A forked child's first call gets a
    /// fresh one: a thread of the parent may have been inside one of the
    /// calls below at the fork, and it does not exist in the child. Those
    /// calls only read the super-chunk (c-blosc2 2.15 publishes the frame
    /// index it caches only once it is complete), so what such a thread
    /// left behind is consistent; at worst a buffer is leaked. The child
    /// then also gets contexts of its own ([`SChunk::renew_contexts`]).
    fn guard(&self) -> MutexGuard<'_, bool> {
        // A panic while holding the lock leaves no state behind it to repair.
        let mut g = self.lock.get(|| Mutex::new(false)).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*g {
            *g = self.renew_contexts();
        }
        g
    }

    /// In a forked child, replace the super-chunk's own compression and
    /// decompression contexts (which c-blosc2 uses to copy a super-chunk
    /// made with a prefilter, and C callers through `arr->sc`) by new ones
    /// made from the same parameters, leaking the parent's: those may own
    /// threads of the parent, and using or freeing them would wait for them
    /// forever. Called with the lock held; returns whether it succeeded.
    fn renew_contexts(&self) -> bool {
        let sc = self.ptr.as_ptr();
        // SAFETY: sc is live; its contexts are only used by c-blosc2 calls
        // made under the lock we hold, or through `&mut self`, which cannot
        // coexist with `&self`. The storage's parameters are those the
        // contexts were made from (c-blosc2 keeps them there).
        unsafe {
            let st = (*sc).storage;
            if st.is_null() || (*st).cparams.is_null() || (*st).dparams.is_null() {
                return false;
            }
            let Some((cctx, dctx)) = contexts_for(sc, *(*st).cparams, *(*st).dparams) else { return false };
            (*sc).cctx = cctx;
            (*sc).dctx = dctx;
        }
        true
    }

    fn raw(&self) -> &b::blosc2_schunk {
        // SAFETY: ptr is a live super-chunk for as long as self exists.
        unsafe { self.ptr.as_ref() }
    }

    /// Create an empty super-chunk.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot create it (unwritable path, …).
    pub(crate) fn new(storage: &Storage, layout: &Layout) -> Result<Self> {
        init();
        let Layout { comp, typesize, blocksize, nthreads } = *layout;
        let url = storage.urlpath.as_deref().map(|u| cstring(u, "urlpath")).transpose()?;
        let mut cp = comp.to_blosc(typesize, blocksize, nthreads);
        let mut dp = dparams(nthreads);
        let mut st = blosc_storage(storage, url.as_ref());
        st.cparams = &mut cp;
        st.dparams = &mut dp;
        writing(|| {
            // SAFETY: st and everything it points to live across the call; blosc2 copies them.
            let p = unsafe { b::blosc2_schunk_new(&mut st) };
            Self::own_made(p, "creating the super-chunk")
        })
    }

    /// Open a frame file or sparse-frame directory, checking the frame
    /// with [`frame_check`] before c-blosc2 parses it, the stored chunks'
    /// headers as `chunks` says (with [`Chunks::Later`] the caller checks
    /// them before c-blosc2 reads a chunk). (Rolling back an interrupted
    /// write first is the store's business.)
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if it does not exist; [`Error::InvalidFormat`]
    /// if it is not a sound frame; [`Error::Blosc`] if c-blosc2 refuses it.
    pub(crate) fn open(urlpath: &str, chunks: Chunks) -> Result<Self> {
        Self::check(urlpath, chunks)?;
        Self::parse(urlpath)
    }

    /// The check [`SChunk::open`] makes before c-blosc2 parses the frame.
    ///
    /// # Errors
    /// As [`SChunk::open`].
    pub(crate) fn check(urlpath: &str, chunks: Chunks) -> Result<frame_check::FrameSummary> {
        init();
        // c-blosc2 crashes on many corrupt frames rather than failing: check first.
        frame_check::check_path(urlpath, chunks, inflate).map_err(|e| {
            let dir = std::path::Path::new(urlpath);
            if dir.is_dir() && !super::frame::is_sparse_dir(dir) {
                // (c-blosc2 2.15 would leak a copy of the path there: frame_from_file_offset.)
                return not_a_sparse_frame(urlpath);
            }
            e
        })
    }

    /// [`SChunk::check`] of the array `at` names.
    ///
    /// # Errors
    /// As [`SChunk::open`].
    pub(crate) fn check_resolved(at: &ResolvedUrl, chunks: Chunks) -> Result<frame_check::FrameSummary> {
        init();
        frame_check::check_resolved(at, chunks, inflate)
    }

    /// c-blosc2's parse of the frame at `urlpath`, which [`SChunk::check`]
    /// has just passed (c-blosc2 reads it again, or is served what the
    /// check read: [`super::blosc_io::ServingChecked`]).
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(crate) fn parse(urlpath: &str) -> Result<Self> {
        init();
        let url = cstring(urlpath, "urlpath")?;
        let p = match io_backend() {
            // SAFETY: url is a valid C string for the call; c-blosc2 copies the descriptor.
            Some(io) => unsafe { b::blosc2_schunk_open_udio(url.as_ptr(), io) },
            // SAFETY: url is a valid C string for the call.
            None => unsafe { b::blosc2_schunk_open(url.as_ptr()) },
        };
        Self::own_made(p, &format!("opening '{urlpath}'"))
    }

    /// Open the frame at `site`, checking it first as [`SChunk::open`] and
    /// [`SChunk::open_offset`] do.
    ///
    /// # Errors
    /// As those.
    pub(crate) fn open_site(site: &FrameSite, chunks: Chunks) -> Result<Self> {
        let at = site.resolved_url();
        match site.offset {
            Some(offset) => frame_check::check_resolved_at(&at, offset, chunks, inflate).map(drop)?,
            // (A local path's check says more of a directory that holds no frame.)
            None if site.location.local_path(&site.key).is_some() => Self::check(at.url(), chunks).map(drop)?,
            None => Self::check_resolved(&at, chunks).map(drop)?,
        }
        Self::parse_site(site)
    }

    /// c-blosc2's parse of the frame at `site`, which [`SChunk::open_site`]
    /// has just passed: at its local path, or, for storage the operating
    /// system does not reach, through a stand-in path whose streams read the
    /// site's objects ([`blosc_io::StandInPath`]). Such a super-chunk cannot
    /// write in place: its location's protocol changes it.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it; [`Error::Io`] if the
    /// stand-in cannot be made.
    pub(crate) fn parse_site(site: &FrameSite) -> Result<Self> {
        init();
        if let Some(path) = site.location.local_path(&site.key) {
            let path = path.to_string_lossy();
            return match site.offset {
                Some(at) => Self::parse_offset(&path, at),
                None => Self::parse(&path),
            };
        }
        let url = site.url();
        let at = site.offset.unwrap_or(0);
        let what = format!("opening the frame at byte {at} of '{url}'");
        let at = i64::try_from(at).map_err(|_| Error::InvalidArgument(format!("offset {at} is too large")))?;
        if io_backend().is_none() {
            return Err(Error::storage(Some(&url), format!("{what}: c-blosc2 did not take our I/O backend")));
        }
        let stand_in = blosc_io::StandInPath::new(site)
            .map_err(|e| Error::io("making a stand-in path for", Some(std::path::Path::new(&url)), &e))?;
        // SAFETY: the stand-in's path is a valid C string and its descriptor
        // lives across the call; c-blosc2 copies the descriptor.
        let p = unsafe { b::blosc2_schunk_open_offset_udio(stand_in.path.as_ptr(), at, &stand_in.io) };
        if p.is_null() {
            stand_in.forget();
        }
        Self::own_made(p, &what)
    }

    /// Open the contiguous frame at byte `offset` of the file `urlpath`
    /// (a file of several frames), checking it with [`frame_check`] first
    /// (the stored chunks' headers as `chunks` says).
    ///
    /// # Errors
    /// As [`SChunk::open`].
    pub(crate) fn open_offset(urlpath: &str, offset: u64, chunks: Chunks) -> Result<Self> {
        init();
        frame_check::check_path_at(urlpath, offset, chunks, inflate)?;
        Self::parse_offset(urlpath, offset)
    }

    /// c-blosc2's parse of the frame at byte `offset` of the file `urlpath`,
    /// which [`frame_check::check_path_at`] has just passed.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    fn parse_offset(urlpath: &str, offset: u64) -> Result<Self> {
        let url = cstring(urlpath, "urlpath")?;
        let at = i64::try_from(offset).map_err(|_| Error::InvalidArgument(format!("offset {offset} is too large")))?;
        let p = match io_backend() {
            // SAFETY: url is a valid C string for the call; c-blosc2 copies the descriptor.
            Some(io) => unsafe { b::blosc2_schunk_open_offset_udio(url.as_ptr(), at, io) },
            // SAFETY: url is a valid C string for the call.
            None => unsafe { b::blosc2_schunk_open_offset(url.as_ptr(), at) },
        };
        Self::own_made(p, &format!("opening the frame at byte {offset} of '{urlpath}'"))
    }

    /// A super-chunk over a contiguous frame in memory.
    ///
    /// # Safety
    /// `cframe` must be valid for `len` bytes. With `copy == false` the
    /// super-chunk reads from it (and never frees it) for its whole life, so
    /// the caller must keep it alive and unchanged until the super-chunk is freed.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the buffer is not a sound frame (see
    /// [`frame_check`]); [`Error::Blosc`] if c-blosc2 refuses it.
    pub(crate) unsafe fn from_cframe(cframe: *const u8, len: usize, copy: bool) -> Result<Self> {
        init();
        if !copy {
            // SAFETY: as the caller guarantees.
            frame_check::check_cframe(unsafe { raw_bytes(cframe, len) }, inflate)?;
            // SAFETY: the caller guarantees cframe/len; blosc2 does not write to it
            // and, given copy = false, never frees it.
            let p = unsafe { b::blosc2_schunk_from_buffer(cframe.cast_mut(), len as i64, false) };
            let mut sc = Self::own_made(p, "reading the frame buffer")?;
            sc.borrowed = true;
            return Ok(sc);
        }
        // c-blosc2's own copy (`copy = true`) converts the frame into a chunk
        // table and, in 2.15, frees a pointer into the frame when a special
        // chunk is followed by a regular one. Copy the frame ourselves into
        // malloc'ed memory instead and hand it to the super-chunk.
        // SAFETY: malloc of len bytes (at least 1); checked for NULL.
        let own = unsafe { libc::malloc(len.max(1)) }.cast::<u8>();
        if own.is_null() {
            return Err(Error::blosc(format!("allocating {len} bytes for the frame"), None));
        }
        // SAFETY: both buffers hold len bytes and do not overlap.
        unsafe { ptr::copy_nonoverlapping(cframe, own, len) };
        // Check the copy, which nobody else can change.
        // SAFETY: own holds len initialised bytes.
        if let Err(e) = frame_check::check_cframe(unsafe { raw_bytes(own, len) }, inflate) {
            // SAFETY: own is ours and nothing refers to it.
            unsafe { libc::free(own.cast()) };
            return Err(e);
        }
        // SAFETY: own holds a copy of the frame; with copy = false blosc2 reads it in place.
        let p = unsafe { b::blosc2_schunk_from_buffer(own, len as i64, false) };
        match Self::own_made(p, "reading the frame buffer") {
            Ok(sc) => {
                // SAFETY: sc is frame-backed by `own`, which it now owns and frees.
                unsafe { b::blosc2_schunk_avoid_cframe_free(sc.ptr.as_ptr(), false) };
                Ok(sc)
            }
            Err(e) => {
                // SAFETY: blosc2 did not take `own` (copy = false never frees it).
                unsafe { libc::free(own.cast()) };
                Err(e)
            }
        }
    }

    /// Take ownership of a raw super-chunk.
    ///
    /// # Safety
    /// `p` must be a live super-chunk created by c-blosc2 that nobody else frees.
    ///
    /// # Errors
    /// [`Error::NullPointer`] if `p` is NULL.
    pub(crate) unsafe fn from_raw(p: *mut b::blosc2_schunk) -> Result<Self> {
        NonNull::new(p).map(Self::own).ok_or_else(|| Error::NullPointer("schunk is NULL".into()))
    }

    /// Whether the frame lives in a caller's buffer (see [`SChunk::from_cframe`]);
    /// such a super-chunk must be copied before it is written.
    #[must_use]
    pub(crate) fn borrows_buffer(&self) -> bool {
        self.borrowed
    }

    /// The raw pointer (for C callers who use `arr->sc` directly).
    #[must_use]
    pub(crate) fn as_ptr(&self) -> *mut b::blosc2_schunk {
        self.ptr.as_ptr()
    }

    /// Number of chunks.
    #[must_use]
    pub(crate) fn nchunks(&self) -> i64 {
        self.raw().nchunks
    }
    /// Item size recorded in the super-chunk.
    #[must_use]
    pub(crate) fn typesize(&self) -> i32 {
        self.raw().typesize
    }
    /// Uncompressed size of a chunk (0 before the first one).
    #[must_use]
    pub(crate) fn chunksize(&self) -> i32 {
        self.raw().chunksize
    }
    /// Uncompressed bytes.
    #[must_use]
    pub(crate) fn nbytes(&self) -> i64 {
        self.raw().nbytes
    }
    /// Compressed bytes.
    #[must_use]
    pub(crate) fn cbytes(&self) -> i64 {
        self.raw().cbytes
    }

    /// The storage this super-chunk lives in.
    #[must_use]
    pub(crate) fn storage(&self) -> Storage {
        let st = self.raw().storage;
        if st.is_null() {
            return Storage { contiguous: true, urlpath: None };
        }
        // SAFETY: a live super-chunk's storage is a valid struct; urlpath a C string or NULL.
        unsafe {
            let st = &*st;
            // A frame opened through a stand-in is at the URL the stand-in names.
            let remote = (!st.io.is_null()).then(|| super::blosc_io::stand_in_url((*st.io).params)).flatten();
            let urlpath = remote
                .or_else(|| (!st.urlpath.is_null()).then(|| CStr::from_ptr(st.urlpath).to_string_lossy().into_owned()));
            Storage { contiguous: st.contiguous, urlpath }
        }
    }

    /// The parameters of its storage's I/O descriptor (what names the frame
    /// of a stand-in: [`blosc_io::stand_in_url`]).
    pub(crate) fn io_params(&self) -> *mut c_void {
        let st = self.raw().storage;
        // SAFETY: a live super-chunk's storage and descriptor are valid or null.
        unsafe {
            if st.is_null() || (*st).io.is_null() {
                ptr::null_mut()
            } else {
                (*(*st).io).params
            }
        }
    }

    /// Compression parameters as recorded in the super-chunk.
    #[must_use]
    pub(crate) fn cparams(&self) -> CParams {
        let r = self.raw();
        CParams {
            codec: Codec::from_id(r.compcode),
            codec_meta: r.compcode_meta,
            clevel: r.clevel,
            use_dict: false,
            // Not every frame records it (c-blosc2 reads a number outside
            // 1..=4 then): the library default.
            splitmode: SplitMode::from_id(i32::from(r.splitmode)).unwrap_or(CParams::default().splitmode),
            filters: r.filters.map(Filter::from_id),
            filters_meta: r.filters_meta,
        }
    }

    /// Fetch compressed chunk `n` (borrowed from memory or read from disk),
    /// unchecked: `Store::chunk` checks it against its checksum.
    /// A chunk the super-chunk has never initialised comes back empty.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `n` is out of range; [`Error::Blosc`] if it cannot be read.
    pub(crate) fn chunk(&self, n: i64) -> Result<Chunk<'_>> {
        if n < 0 || n >= self.nchunks() {
            return Err(Error::InvalidArgument(format!("chunk {n} out of range")));
        }
        let (mut data, mut needs_free) = (ptr::null_mut::<u8>(), false);
        let rc = {
            let _g = self.guard();
            // SAFETY: valid super-chunk; blosc2 sets data and needs_free.
            unsafe { b::blosc2_schunk_get_chunk(self.as_ptr(), n, &mut data, &mut needs_free) }
        };
        if rc < 0 {
            if needs_free && !data.is_null() {
                // SAFETY: blosc2 handed us a malloc'ed buffer.
                unsafe { libc::free(data.cast()) };
            }
            return Err(Error::blosc(format!("reading chunk {n}"), i64::from(rc)));
        }
        let len = if data.is_null() { 0 } else { rc as usize };
        // SAFETY: c-blosc2 handed out len bytes at data, which live as long
        // as the super-chunk is not changed (a &mut borrow), or are ours to free.
        Ok(unsafe { Chunk::from_raw(data, len, needs_free) })
    }

    /// Serialise to a contiguous frame: `(pointer, length, needs_free)`. When
    /// `needs_free` is false the pointer borrows the super-chunk's own frame.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot serialise it.
    pub(crate) fn to_cframe_raw(&self) -> Result<(*mut u8, i64, bool)> {
        let r = self.raw();
        // SAFETY: storage is set for every super-chunk we hold.
        let in_memory_frame =
            !r.frame.is_null() && unsafe { (*r.storage).contiguous && (*r.storage).urlpath.is_null() };
        if !in_memory_frame {
            // c-blosc2 would copy it with blosc2_schunk_copy, which
            // recompresses the vlmetalayers badly; copy it ourselves
            // (copy_to), then hand out the copy's frame in a buffer of its own.
            let copy = self.copy_to(&Storage { contiguous: true, urlpath: None }, 1)?;
            let (p, len, needs_free) = copy.to_cframe_raw()?;
            debug_assert!(!needs_free);
            let n = usize::try_from(len).unwrap_or(0);
            // SAFETY: malloc of n bytes (at least 1), checked; the copy's frame holds n bytes at p.
            let out = unsafe {
                let out = libc::malloc(n.max(1)).cast::<u8>();
                if out.is_null() {
                    return Err(Error::blosc("allocating a frame buffer", None));
                }
                ptr::copy_nonoverlapping(p, out, n);
                out
            };
            return Ok((out, len, true));
        }
        let (mut data, mut needs_free) = (ptr::null_mut::<u8>(), false);
        let len = {
            let _g = self.guard();
            // SAFETY: valid super-chunk; blosc2 sets data and needs_free.
            unsafe { b::blosc2_schunk_to_buffer(self.as_ptr(), &mut data, &mut needs_free) }
        };
        if len < 0 || data.is_null() {
            return Err(blosc_err("serialising to a frame", len));
        }
        Ok((data, len, needs_free))
    }

    /// Copy into a new super-chunk at `storage` with the same compression
    /// parameters: chunks are copied compressed, metalayers and vlmetalayers included.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot write the copy.
    pub(crate) fn copy_to(&self, storage: &Storage, nthreads: usize) -> Result<SChunk> {
        let url = storage.urlpath.as_deref().map(|u| cstring(u, "urlpath")).transpose()?;
        let mut dp = dparams(nthreads);
        let mut st = blosc_storage(storage, url.as_ref());
        // NULL cparams: blosc2 takes the source's, so chunks are copied as they are.
        st.cparams = ptr::null_mut();
        st.dparams = &mut dp;
        let mut copy = {
            let _g = self.guard();
            writing(|| {
                // SAFETY: valid super-chunk and storage (blosc2 copies the storage).
                let p = unsafe { b::blosc2_schunk_copy(self.as_ptr(), &mut st) };
                Self::own_made(p, "copying the super-chunk")
            })?
        };
        // blosc2_schunk_copy stores each vlmetalayer again compressed for the
        // super-chunk's items: a run of zeros that is not a whole number of
        // them becomes a special chunk c-blosc2 cannot decode (33 zero bytes
        // in an array of 8-byte items). Store them as vlmeta_put does.
        let cp = self.cparams();
        for name in self.vlmeta_names() {
            let content = self.vlmeta_get(&name)?.unwrap_or_default();
            copy.vlmeta_put(&name, &content, true, &cp)?;
        }
        Ok(copy)
    }

    /// The chunk offsets of a frame-backed super-chunk, as recorded in its
    /// offsets chunk (byte offsets into the data section, chunk file numbers
    /// of a sparse frame; negative for special chunks). Empty without chunks.
    ///
    /// # Errors
    /// [`Error::Blosc`] if the offsets cannot be read.
    pub(crate) fn frame_offsets(&self) -> Result<Vec<i64>> {
        let n = usize::try_from(self.nchunks()).unwrap_or(0);
        if n == 0 || self.raw().frame.is_null() {
            return Ok(Vec::new());
        }
        let _g = self.guard();
        // SAFETY: a frame-backed super-chunk with chunks; blosc2 mallocs the result.
        let p = unsafe { b::blosc2_frame_get_offsets(self.as_ptr()) };
        if p.is_null() {
            return Err(blosc_err("reading the chunk offsets", -1));
        }
        // SAFETY: blosc2 returned nchunks offsets (stored little-endian), which we own.
        unsafe {
            let v = std::slice::from_raw_parts(p, n).iter().map(|&o| i64::from_le(o)).collect();
            libc::free(p.cast());
            Ok(v)
        }
    }

    /// Give up ownership, returning the raw pointer.
    #[must_use]
    pub(crate) fn into_raw(self) -> *mut b::blosc2_schunk {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again: its lock (the only
        // field with a destructor) is read out and dropped once, here.
        drop(unsafe { ptr::read(&this.lock) });
        this.ptr.as_ptr()
    }
}

/// A compression and a decompression context for the super-chunk `sc`,
/// made from `cp` and `dp` (their `schunk` set to it); `None` if c-blosc2
/// cannot make both (neither is left then).
///
/// # Safety
/// `sc` is a live super-chunk.
unsafe fn contexts_for(
    sc: *mut b::blosc2_schunk,
    mut cp: b::blosc2_cparams,
    mut dp: b::blosc2_dparams,
) -> Option<(*mut b::blosc2_context, *mut b::blosc2_context)> {
    cp.schunk = sc.cast();
    dp.schunk = sc.cast();
    // SAFETY: the parameters are passed by value; NULL returns are handled.
    let (cctx, dctx) = unsafe { (b::blosc2_create_cctx(cp), b::blosc2_create_dctx(dp)) };
    if cctx.is_null() || dctx.is_null() {
        for c in [cctx, dctx] {
            if !c.is_null() {
                // SAFETY: a context made just above, used by nothing.
                unsafe { b::blosc2_free_ctx(c) };
            }
        }
        return None;
    }
    Some((cctx, dctx))
}

impl Drop for SChunk {
    fn drop(&mut self) {
        let own =
            self.lock.owned_mut().is_some_and(|m| *m.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner));
        let sc = self.ptr.as_ptr();
        // SAFETY: we own the super-chunk. Contexts another process made
        // (a forked child that never renewed them) are leaked rather than
        // freed: freeing one joins its threads, which are not here; c-blosc2
        // skips NULL contexts.
        unsafe {
            if !own {
                (*sc).cctx = ptr::null_mut();
                (*sc).dctx = ptr::null_mut();
            }
            b::blosc2_schunk_free(sc);
        }
    }
}

/// Why the directory `urlpath`, which holds no sparse-frame index, does not
/// open: chunk files and nothing else are a sparse frame that lost its
/// index (damaged, as `frame::is_sparse_array` counts it); anything else is
/// no array at all (a plain folder, a zarr store, …), said as such.
fn not_a_sparse_frame(urlpath: &str) -> Error {
    let index = super::frame::SPARSE_INDEX;
    if super::frame::is_sparse_array(std::path::Path::new(urlpath)) {
        return Error::InvalidFormat(format!(
            "'{urlpath}' is a damaged sparse frame: it holds chunk files but has lost its chunks index ('{index}')"
        ));
    }
    Error::storage(
        Some(urlpath),
        format!("'{urlpath}' is not a caterva/blosc2 array: a folder without a chunks index ('{index}')"),
    )
}
