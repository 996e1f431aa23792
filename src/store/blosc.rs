//! The only module that calls c-blosc2: a thin, policy-free safe binding.
//! An RAII super-chunk, compression and decompression contexts, special
//! chunks, (vl)metalayers and frames. It knows nothing of journals,
//! checksums or arrays: `Store` adds those, and the super-chunk's
//! writing methods are visible to the `store` module alone, so every write
//! goes through the store's transaction.
//!
//! It is *safe* in the Rust sense: frames are checked by
//! [`super::frame_check`] before c-blosc2 parses them (c-blosc2 crashes on
//! many corrupt frames), and a frame borrowed from a caller's buffer is
//! flagged so that it is never written.
//!
//! Thread safety: c-blosc2 super-chunks are not safe for concurrent use (frame
//! lookups go through the super-chunk's own decompression context and index
//! cache). [`SChunk`] therefore serialises every call it makes from `&self`
//! behind a mutex; callers decompress the chunks they fetch with their own
//! [`DCtx`], outside the lock.
//!
//! Fork safety: c-blosc2 contexts that have started threads must never be
//! used or freed in a forked child, where those threads do not exist. The
//! engine keeps its [`CCtx`]/[`DCtx`] per process; a super-chunk's mutex is
//! per process (see [`crate::fork`]), and a child's first use of a
//! super-chunk gives it contexts of its own ([`SChunk::renew_contexts`]).
//! c-blosc2's global context and its mutex are only used by
//! `blosc1_*`/`blosc2_compress`-style calls, which this module makes in one
//! place only: [`compress_blosc1`], the BLZ export's compressor (one global
//! thread, so no threads a forked child would lack).

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::{Mutex, MutexGuard, Once};

use blosc2_sys as b;

use super::blosc_io;
use super::chunk_header::{block_end, block_starts, ChunkHeader, CHUNK_MAX_TYPESIZE, HEADER_LEN, POS_BLOSC2_FLAGS};
use super::frame;
use super::frame_check::{self, Chunks};
use super::io;
use super::location::local::LocalObject;
use super::location::Object;
use super::location::{Located, Site};
use crate::error::{Error, Result};
use crate::fork::{ForkHooks, PerProcess};

/// Maximum number of metalayers of a super-chunk (`BLOSC2_MAX_METALAYERS`).
pub(crate) const MAX_METALAYERS: usize = b::BLOSC2_MAX_METALAYERS as usize;
/// Maximum number of variable-length metalayers (`BLOSC2_MAX_VLMETALAYERS`).
pub(crate) const MAX_VLMETALAYERS: usize = b::BLOSC2_MAX_VLMETALAYERS as usize;
/// The most vlmetalayers c-blosc2 writes into a frame's trailer
/// (`frame_update_trailer` refuses more than `BLOSC2_MAX_METALAYERS`, though
/// a super-chunk in memory holds up to [`MAX_VLMETALAYERS`]). Every array is
/// held to it, so that one in memory can still be saved or serialised; the
/// checksum table, when kept, is one of them.
pub(crate) const FRAME_VLMETALAYERS: usize = b::BLOSC2_MAX_METALAYERS as usize;
/// Bytes c-blosc2 may add to a compressed buffer (`BLOSC2_MAX_OVERHEAD`).
pub(crate) const MAX_OVERHEAD: usize = b::BLOSC2_MAX_OVERHEAD as usize;

/// The typesize chunks of `itemsize`-byte items are compressed with, and
/// record: the item size up to 255 bytes; beyond, the largest divisor of
/// the item that a chunk can record, so that shuffling still groups the
/// bytes of each field or character (a `<U100` item of 400 bytes: 200).
/// The super-chunk (the frame's header) records the whole item size, as
/// python-blosc2 writes it.
pub(crate) fn chunk_typesize(itemsize: usize) -> usize {
    if itemsize <= CHUNK_MAX_TYPESIZE {
        return itemsize.max(1);
    }
    (1..=CHUNK_MAX_TYPESIZE).rev().find(|d| itemsize % d == 0).unwrap_or(1)
}

/// Longest metalayer name c-blosc2 accepts (`BLOSC2_METALAYER_NAME_MAXLEN`).
pub(crate) const METALAYER_NAME_MAXLEN: usize = 31;

/// Initialise c-blosc2 once per process. Never torn down: other code in the
/// process (and `arr->sc` users) may still rely on it.
pub(crate) fn init() {
    static INIT: Once = Once::new();
    if INIT.is_completed() {
        return;
    }
    // Registered before the initialisation starts: a fork while it runs
    // waits for it to end (a child would find it half-done forever).
    crate::fork::on_fork(&FORK_HOOKS);
    INIT.call_once(|| {
        // SAFETY: blosc2_init has no preconditions; Once makes it run once.
        unsafe { b::blosc2_init() };
        warm_up_shuffle();
        register_io();
    });
}

/// What c-blosc2 needs around a `fork()`: before it, a first
/// initialisation under way in another thread finishes ([`init`]).
static FORK_HOOKS: ForkHooks = ForkHooks::prepare_only(init);

/// Whether c-blosc2 took our I/O backend ([`io`]), registered by [`init`].
static IO_REGISTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// c-blosc2's table of I/O backends is not thread-safe: a lookup of its
/// default backend registers it on first use (`blosc2_get_io_cb`), writing
/// the table while another thread may read it (ThreadSanitizer reports it).
/// Both the default and our backend are registered here, inside `init`'s
/// `Once`, before any other thread can reach c-blosc2 through us.
fn register_io() {
    // SAFETY: c-blosc2 is initialised; the lookup registers the default backend.
    unsafe { b::blosc2_get_io_cb(b::BLOSC2_IO_FILESYSTEM as u8) };
    // SAFETY: c-blosc2 copies the callback table; its name is a static string.
    let rc = unsafe { b::blosc2_register_io_cb(&blosc_io::callbacks()) };
    IO_REGISTERED.store(rc >= 0, std::sync::atomic::Ordering::Release);
}

/// c-blosc2 picks its shuffle routines (SSE2, AVX2…) on the first shuffle,
/// writing global function pointers without synchronisation
/// (`init_shuffle_implementation` in `blosc/shuffle.c`): two first shuffles
/// on two threads at once race (ThreadSanitizer reports it, `.ci/tsan`).
/// One shuffle here, inside `init`'s `Once`, makes that choice before any
/// other thread can shuffle.
fn warm_up_shuffle() {
    let src = [0u8; 64];
    let mut dst = [0u8; 64 + MAX_OVERHEAD];
    // SAFETY: returns a plain struct by value.
    let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
    cp.typesize = 8;
    cp.nthreads = 1;
    cp.filters[b::BLOSC2_MAX_FILTERS as usize - 1] = b::BLOSC_SHUFFLE as u8;
    // SAFETY: the parameters are passed by value; a NULL context is handled.
    let ctx = unsafe { b::blosc2_create_cctx(cp) };
    if ctx.is_null() {
        return;
    }
    // SAFETY: src and dst are valid for the sizes given; the result only
    // matters for its side effect (a failure leaves the race as it was).
    unsafe {
        b::blosc2_compress_ctx(ctx, src.as_ptr().cast(), 64, dst.as_mut_ptr().cast(), dst.len() as i32);
        b::blosc2_free_ctx(ctx);
    }
}

fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::InvalidArgument(format!("{what} contains a NUL byte")))
}

fn blosc_err(what: &str, rc: i64) -> Error {
    Error::blosc(what, rc)
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

/// Compression parameters of an array's chunks. Codec and filter ids are
/// those of c-blosc2 (`BLOSC_ZSTD`, `BLOSC_SHUFFLE`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CParams {
    /// Codec (`BLOSC_ZSTD`, …).
    pub codec: u8,
    /// Codec meta.
    pub codec_meta: u8,
    /// Compression level 0..=9.
    pub clevel: u8,
    /// Whether to use a dictionary.
    pub use_dict: bool,
    /// Split mode (`BLOSC_*_SPLIT`).
    pub splitmode: i32,
    /// Filter pipeline.
    pub filters: [u8; 6],
    /// Filter metas.
    pub filters_meta: [u8; 6],
}

/// A Blosc2 prefilter that a C caller set in `caterva_config_t` (C callers only).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prefilter {
    /// The function.
    pub(crate) func: b::blosc2_prefilter_fn,
    /// Its parameter block, which we never dereference.
    pub(crate) params: *mut b::blosc2_prefilter_params,
}

// SAFETY: the only raw pointer is a prefilter parameter block that the C
// caller hands us for use from blosc2's (already multi-threaded) compressor;
// we never dereference it.
unsafe impl Send for Prefilter {}
// SAFETY: as above; shared references only copy the pointer.
unsafe impl Sync for Prefilter {}

impl PartialEq for Prefilter {
    /// The same function and parameter block (by address: a compressor
    /// made for one serves the other).
    fn eq(&self, other: &Self) -> bool {
        self.func.map(|f| f as usize) == other.func.map(|f| f as usize) && self.params == other.params
    }
}

impl Eq for Prefilter {}

/// Everything that decides how chunks are compressed: the parameters and,
/// for C callers, a prefilter. The one type every compressor is made from;
/// it becomes c-blosc2's `blosc2_cparams` in one place ([`Compression::to_blosc`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Compression {
    /// Codec, level, filters.
    pub(crate) cparams: CParams,
    /// A C caller's prefilter.
    pub(crate) prefilter: Option<Prefilter>,
}

impl Default for CParams {
    fn default() -> Self {
        CParams {
            codec: b::BLOSC_ZSTD as u8,
            codec_meta: 0,
            clevel: 5,
            use_dict: false,
            splitmode: b::BLOSC_AUTO_SPLIT as i32,
            filters: [0, 0, 0, 0, 0, b::BLOSC_SHUFFLE as u8],
            filters_meta: [0; 6],
        }
    }
}

impl Compression {
    /// Plain parameters, no prefilter.
    pub(crate) fn plain(cparams: CParams) -> Self {
        Compression { cparams, prefilter: None }
    }

    /// Whether chunks compressed with `self` and chunks a super-chunk
    /// records as compressed with `stored` are the same bytes for the same
    /// data (so a compressed chunk can be copied as is).
    pub(crate) fn same_encoding(&self, stored: &CParams) -> bool {
        let (a, b) = (&self.cparams, stored);
        self.prefilter.is_none()
            && (a.codec, a.codec_meta, a.clevel, a.use_dict, a.filters, a.filters_meta)
                == (b.codec, b.codec_meta, b.clevel, b.use_dict, b.filters, b.filters_meta)
    }

    fn to_blosc(self, typesize: usize, blocksize: usize, nthreads: usize) -> b::blosc2_cparams {
        let c = self.cparams;
        // SAFETY: returns a plain struct by value.
        let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
        cp.compcode = c.codec;
        cp.compcode_meta = c.codec_meta;
        cp.clevel = c.clevel;
        cp.use_dict = i32::from(c.use_dict);
        cp.typesize = typesize as i32;
        cp.blocksize = blocksize as i32;
        cp.splitmode = c.splitmode;
        cp.nthreads = nthreads.clamp(1, i16::MAX as usize) as i16;
        cp.filters = c.filters;
        cp.filters_meta = c.filters_meta;
        // c-blosc2 2.15 shuffles by the typesize whatever SHUFFLE's meta
        // says, and records the meta; newer readers shuffle by a non-zero
        // meta ([`grouped_shuffle`]). Record what was done.
        for (f, m) in cp.filters.iter().zip(cp.filters_meta.iter_mut()) {
            if *f == b::BLOSC_SHUFFLE as u8 {
                *m = 0;
            }
        }
        if let Some(p) = self.prefilter {
            cp.prefilter = p.func;
            cp.preparams = p.params;
        }
        cp
    }
}

fn dparams(nthreads: usize) -> b::blosc2_dparams {
    // SAFETY: returns a plain struct by value.
    let mut dp = unsafe { b::blosc2_get_blosc2_dparams_defaults() };
    dp.nthreads = nthreads.clamp(1, i16::MAX as usize) as i16;
    dp
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

/// A compression context (one per worker; not shared between threads).
pub(crate) struct CCtx(NonNull<b::blosc2_context>);

// SAFETY: a blosc2 context may move between threads; it is never shared.
unsafe impl Send for CCtx {}

impl CCtx {
    /// New context for chunks of `typesize`-byte items and `blocksize`-byte blocks.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 rejects the parameters.
    pub(crate) fn new(comp: &Compression, typesize: usize, blocksize: usize, nthreads: usize) -> Result<Self> {
        init();
        // SAFETY: the parameters are passed by value; a NULL return is handled.
        let p = unsafe { b::blosc2_create_cctx(comp.to_blosc(chunk_typesize(typesize), blocksize, nthreads)) };
        NonNull::new(p).map(CCtx).ok_or_else(|| Error::blosc("creating a compression context", None))
    }

    /// Compress `src` into a new chunk.
    ///
    /// # Errors
    /// [`Error::Blosc`] if compression fails (bad codec, filter…).
    pub(crate) fn compress(&mut self, src: &[u8]) -> Result<Vec<u8>> {
        self.compress_into(src, Vec::new())
    }

    /// [`CCtx::compress`] into `out` (emptied first), whose allocation is
    /// reused when it is large enough: a buffer that held a chunk already
    /// stored costs no fresh pages.
    pub(crate) fn compress_into(&mut self, src: &[u8], mut out: Vec<u8>) -> Result<Vec<u8>> {
        let cap = src.len() + MAX_OVERHEAD;
        out.clear();
        if out.capacity() < cap {
            out = Vec::with_capacity(cap);
        }
        // SAFETY: src is valid for src.len() bytes, out has cap writable bytes;
        // blosc2 writes at most destsize bytes and returns how many.
        let rc = unsafe {
            b::blosc2_compress_ctx(
                self.0.as_ptr(),
                src.as_ptr().cast(),
                src.len() as i32,
                out.as_mut_ptr().cast(),
                cap as i32,
            )
        };
        if rc <= 0 {
            return Err(blosc_err("compression", i64::from(rc)));
        }
        // SAFETY: blosc2 initialised the first rc bytes.
        unsafe { out.set_len(rc as usize) };
        drop_stale_dict_flag(&mut out);
        Ok(out)
    }
}

/// Clear the dictionary flag of a chunk that holds no dictionary. With
/// `use_dict`, c-blosc2 2.15 falls back to a plain copy for data it cannot
/// compress (or writes a special chunk) and leaves the flag set: c-blosc2
/// 3.x (python-blosc2) then looks for a dictionary in the copied bytes and
/// fails, and our frame check refuses the chunk as one with an invalid
/// dictionary. Without the flag the chunk is what it is, a copy.
pub(crate) fn drop_stale_dict_flag(chunk: &mut [u8]) {
    let Some(h) = chunk.get(..HEADER_LEN).and_then(ChunkHeader::parse) else {
        return;
    };
    if h.is_extended() && (h.memcpyed() || h.special() != 0) && h.dict() {
        chunk[POS_BLOSC2_FLAGS] = h.blosc2_flags & !(b::BLOSC2_USEDICT as u8);
    }
}

impl Drop for CCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context.
        unsafe { b::blosc2_free_ctx(self.0.as_ptr()) }
    }
}

/// A decompression context (one per worker; not shared between threads).
pub(crate) struct DCtx(NonNull<b::blosc2_context>);

// SAFETY: a blosc2 context may move between threads; it is never shared.
unsafe impl Send for DCtx {}

impl DCtx {
    /// New context using `nthreads` blosc threads.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot create it.
    pub(crate) fn new(nthreads: usize) -> Result<Self> {
        init();
        // SAFETY: the parameters are passed by value; a NULL return is handled.
        let p = unsafe { b::blosc2_create_dctx(dparams(nthreads)) };
        NonNull::new(p).map(DCtx).ok_or_else(|| Error::blosc("creating a decompression context", None))
    }

    /// Decompress `chunk` into `dst`, which must be exactly the chunk's
    /// uncompressed size. With `mask`, only blocks whose entry is `false` are
    /// decompressed (c-blosc2's maskout); `mask.len()` must be the chunk's
    /// block count.
    ///
    /// # Errors
    /// [`Error::Blosc`] on a corrupt chunk or a size mismatch;
    /// [`Error::InvalidFormat`] for a chunk [`check_decodable`] refuses.
    pub(crate) fn decompress(&mut self, chunk: &Chunk<'_>, dst: &mut [u8], mask: Option<&[bool]>) -> Result<()> {
        check_decodable(chunk.bytes())?;
        let info = chunk.info()?;
        if info.nbytes != dst.len() {
            return Err(Error::InvalidFormat(format!(
                "chunk holds {} bytes, the array geometry expects {}",
                info.nbytes,
                dst.len()
            )));
        }
        if let Some(value) = wide_value(chunk.bytes())? {
            let blocksize = info.blocksize.max(1);
            for (i, block) in dst.chunks_mut(blocksize).enumerate() {
                if mask.map_or(true, |m| !m.get(i).copied().unwrap_or(true)) {
                    fill_repeated(value, i * blocksize, block);
                }
            }
            return Ok(());
        }
        if let Some(mask) = mask {
            // SAFETY: mask is valid for mask.len() bools; blosc2 copies what it needs
            // (it only reads it during the next decompression).
            let rc = unsafe { b::blosc2_set_maskout(self.0.as_ptr(), mask.as_ptr().cast_mut(), mask.len() as i32) };
            if rc < 0 {
                return Err(blosc_err("setting the block mask", i64::from(rc)));
            }
        }
        // SAFETY: chunk.bytes() is a complete chunk (its header says cbytes <=
        // the slice), dst has exactly nbytes writable bytes.
        let rc = unsafe {
            b::blosc2_decompress_ctx(
                self.0.as_ptr(),
                chunk.bytes().as_ptr().cast(),
                chunk.bytes().len() as i32,
                dst.as_mut_ptr().cast(),
                dst.len() as i32,
            )
        };
        if rc < 0 {
            return Err(blosc_err("decompression", i64::from(rc)));
        }
        if let Some((typesize, group)) = grouped_shuffle(chunk.bytes())? {
            let blocksize = info.blocksize.max(1);
            let mut scratch = Vec::new();
            for (i, block) in dst.chunks_mut(blocksize).enumerate() {
                if mask.map_or(true, |m| !m.get(i).copied().unwrap_or(true)) {
                    regroup(block, typesize, group, &mut scratch);
                }
            }
        }
        Ok(())
    }
}

/// The names python-blosc2 gives the codec plugins (`blosc2.Codec`), by id
/// (c-blosc2's `codecs-registry.h`).
const PLUGIN_CODECS: [(u8, &str); 9] = [
    (32, "NDLZ"),
    (33, "ZFP_ACC"),
    (34, "ZFP_PREC"),
    (35, "ZFP_RATE"),
    (36, "OPENHTJ2K"),
    (37, "GROK"),
    (38, "OPENZL"),
    (39, "J2K"),
    (40, "HTJ2K"),
];

/// The names python-blosc2 gives the filter plugins (`blosc2.Filter`), by id
/// (c-blosc2's `filters-registry.h`).
const PLUGIN_FILTERS: [(u8, &str); 5] =
    [(32, "NDCELL"), (33, "NDMEAN"), (34, "BYTEDELTA_BUGGY"), (35, "BYTEDELTA"), (36, "INT_TRUNC")];

/// Refuse, by name, a chunk that uses what the c-blosc2 we link cannot
/// decode: a codec or filter plugin (blosc2-sys builds c-blosc2 without
/// them), a dictionary with LZ4/LZ4HC (c-blosc2 3.x; 2.15 has dictionaries
/// for ZSTD only) or a chunk format newer than 2.15's (3.x's
/// variable-length blocks). c-blosc2 itself would fail on them with a bare
/// code (or, for an unknown id it ignores, give other bytes); naming the
/// feature tells the user what to convert. Special chunks (zeros, NaNs, a
/// repeated value, uninitialised) carry no codec and always decode.
///
/// # Errors
/// [`Error::InvalidFormat`] naming the feature.
pub(crate) fn check_decodable(bytes: &[u8]) -> Result<()> {
    let (Some(&version), Some(&flags)) = (bytes.first(), bytes.get(2)) else {
        return Ok(());
    };
    let refuse = |what: String| {
        Err(Error::InvalidFormat(format!(
            "unsupported: the chunk uses {what}, which c-blosc2 {} as built here cannot decode",
            blosc2_version()
        )))
    };
    if version > b::BLOSC2_VERSION_FORMAT as u8 {
        let what = if version == 6 { " (variable-length blocks, c-blosc2 3.x)" } else { "" };
        return refuse(format!("chunk format version {version}{what}"));
    }
    let extended = flags & 0x05 == 0x05;
    let Some(&flags2) = bytes.get(31).filter(|_| extended) else {
        return Ok(());
    };
    if (flags2 >> 4) & b::BLOSC2_SPECIAL_MASK as u8 != 0 {
        return Ok(());
    }
    let (Some(filters), Some(&udcodec)) = (bytes.get(16..22), bytes.get(22)) else {
        return Ok(());
    };
    if flags & b::BLOSC_MEMCPYED as u8 == 0 {
        let format = flags >> 5;
        let codec = if format == b::BLOSC_UDCODEC_FORMAT as u8 { udcodec } else { format };
        let known = [b::BLOSC_BLOSCLZ, b::BLOSC_LZ4, b::BLOSC_LZ4HC, b::BLOSC_ZLIB, b::BLOSC_ZSTD];
        let builtin = if format == b::BLOSC_UDCODEC_FORMAT as u8 {
            known.iter().any(|&k| u32::from(codec) == k)
        } else {
            // The format enumeration: BloscLZ, LZ4 (and LZ4HC), zlib, zstd.
            [0, 1, 3, 4].contains(&format)
        };
        if !builtin && !registered_codec(codec) {
            return refuse(match PLUGIN_CODECS.iter().find(|(id, _)| *id == codec) {
                Some((id, name)) => format!("codec {name} (id {id}, a c-blosc2 plugin)"),
                None => format!("codec id {codec}"),
            });
        }
        let lz4 = format == b::BLOSC_LZ4_FORMAT as u8
            || (format == b::BLOSC_UDCODEC_FORMAT as u8 && [b::BLOSC_LZ4, b::BLOSC_LZ4HC].contains(&u32::from(codec)));
        if lz4 && flags2 & b::BLOSC2_USEDICT as u8 != 0 {
            return refuse("a dictionary with codec LZ4/LZ4HC (use_dict, written by c-blosc2 3.x)".into());
        }
    }
    // Ids from 160 up are the caller's own filters (`blosc2_register_filter`):
    // c-blosc2 runs one registered in this process and fails cleanly on one
    // that is not ("not found"). Below that, c-blosc2's: the plugins it was
    // built without.
    let user = b::BLOSC2_USER_REGISTERED_FILTERS_START as u8;
    if let Some(&f) = filters.iter().find(|&&f| f > b::BLOSC_TRUNC_PREC as u8 && f < user) {
        return refuse(match PLUGIN_FILTERS.iter().find(|(id, _)| *id == f) {
            Some((id, name)) => format!("filter {name} (id {id}, a c-blosc2 plugin)"),
            None => format!("filter id {f}"),
        });
    }
    Ok(())
}

/// Whether codec id `codec` (a plugin id, 32 and up) is registered in this
/// process: a caller's own codec (`blosc2_register_codec`) decodes.
fn registered_codec(codec: u8) -> bool {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: name is a valid out-pointer; c-blosc2 only stores a static or
    // registry string into it.
    unsafe { b::blosc2_compcode_to_compname(i32::from(codec), &mut name) };
    codec >= b::BLOSC_LAST_CODEC as u8 && !name.is_null()
}

/// The value of a repeated-value special chunk whose items are wider than
/// a chunk header can say (more than 255 bytes): c-blosc2 3.x
/// (python-blosc2's `full` of such items) stores the whole value after the
/// header, gives the width by `cbytes` alone and writes a typesize of 1.
/// c-blosc2 2.15 repeats `typesize` bytes of it, other values: such chunks
/// are filled here ([`fill_repeated`]). `None` for any other chunk.
///
/// # Errors
/// [`Error::InvalidFormat`] if the value does not divide the chunk.
pub(crate) fn wide_value(bytes: &[u8]) -> Result<Option<&[u8]>> {
    let Some(h) = bytes.get(..HEADER_LEN).and_then(ChunkHeader::parse) else {
        return Ok(None);
    };
    if !h.is_extended() || u32::from(h.special()) != b::BLOSC2_SPECIAL_VALUE {
        return Ok(None);
    }
    let header = HEADER_LEN;
    let cbytes = usize::try_from(h.cbytes).unwrap_or(0);
    let width = cbytes.saturating_sub(header);
    if width <= usize::from(h.typesize) {
        return Ok(None);
    }
    let nbytes = chunk_info(bytes)?.nbytes;
    match bytes.get(header..cbytes) {
        Some(value) if nbytes % width == 0 => Ok(Some(value)),
        _ => Err(Error::InvalidFormat(format!(
            "a repeated-value chunk of {nbytes} bytes holds a {width}-byte value that does not divide it"
        ))),
    }
}

/// Bytes `offset..offset + dst.len()` of a chunk in which `value` repeats.
fn fill_repeated(value: &[u8], offset: usize, dst: &mut [u8]) {
    let mut phase = offset % value.len();
    let mut out = &mut dst[..];
    while !out.is_empty() {
        let n = (value.len() - phase).min(out.len());
        out[..n].copy_from_slice(&value[phase..phase + n]);
        out = &mut out[n..];
        phase = 0;
    }
}

/// The shuffle a chunk records that c-blosc2 2.15 does not perform: newer
/// c-blosc2 (python-blosc2 4.x, for `<U` arrays) shuffles by SHUFFLE's
/// `filters_meta` bytes when it is not 0, not by the typesize; 2.15 ignores
/// the meta and unshuffles by the typesize, which gives other bytes.
/// `Some((typesize, group))` for such a chunk: its blocks, decoded by
/// c-blosc2 2.15, are put right by [`regroup`].
///
/// # Errors
/// [`Error::InvalidFormat`] when that shuffle comes with other filters:
/// undoing it after them would not give the items back.
pub(crate) fn grouped_shuffle(bytes: &[u8]) -> Result<Option<(usize, usize)>> {
    let (Some(&flags), Some(&flags2)) = (bytes.get(2), bytes.get(31)) else {
        return Ok(None);
    };
    let extended = flags & 0x05 == 0x05;
    let special = (flags2 >> 4) & b::BLOSC2_SPECIAL_MASK as u8 != 0;
    if !extended || special || flags & b::BLOSC_MEMCPYED as u8 != 0 {
        return Ok(None);
    }
    let (Some(filters), Some(metas)) = (bytes.get(16..22), bytes.get(24..30)) else {
        return Ok(None);
    };
    let typesize = usize::from(bytes[3]).max(1);
    let shuffle = b::BLOSC_SHUFFLE as u8;
    let Some(i) =
        (0..filters.len()).find(|&i| filters[i] == shuffle && metas[i] != 0 && usize::from(metas[i]) != typesize)
    else {
        return Ok(None);
    };
    if filters.iter().enumerate().any(|(j, &f)| j != i && f != b::BLOSC_NOFILTER as u8) {
        return Err(Error::InvalidFormat(format!(
            "a chunk shuffles by {}-byte groups (SHUFFLE with filters_meta {}, written by c-blosc2 2.16 or \
             later) together with other filters {filters:?}, which c-blosc2 {} cannot decode",
            metas[i],
            metas[i],
            blosc2_version()
        )));
    }
    Ok(Some((typesize, usize::from(metas[i]))))
}

/// Put right a block that c-blosc2 2.15 unshuffled by `typesize` though it
/// was shuffled by `group` bytes ([`grouped_shuffle`]): shuffle it back by
/// `typesize`, then unshuffle it by `group` (c-blosc2's `shuffle_generic`
/// and `unshuffle_generic`: the tail past the last whole group is as is).
fn regroup(block: &mut [u8], typesize: usize, group: usize, scratch: &mut Vec<u8>) {
    if typesize > 1 {
        let n = block.len() / typesize;
        transpose(block, scratch, n, typesize); // shuffle: n items of typesize bytes
    }
    let n = block.len() / group;
    transpose(block, scratch, group, n); // unshuffle: group streams of n bytes
}

/// `block`'s first `rows * cols` bytes, read as a `rows` x `cols` matrix,
/// transposed in place (through `scratch`); the tail stays as is.
fn transpose(block: &mut [u8], scratch: &mut Vec<u8>, rows: usize, cols: usize) {
    let whole = rows * cols;
    scratch.clear();
    scratch.extend_from_slice(&block[..whole]);
    for r in 0..rows {
        for c in 0..cols {
            block[c * rows + r] = scratch[r * cols + c];
        }
    }
}

impl Chunk<'_> {
    /// Whether [`DCtx::decompress_block`] can read this chunk's blocks of
    /// `blocksize` bytes one at a time: not when its blocks have another
    /// size, it has a dictionary (c-blosc2 only loads one for whole
    /// chunks) or the DELTA filter. A special chunk (zeros, NaNs, a repeated value) reads any
    /// items; an empty one (never written) has no blocks to read.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the header is damaged.
    pub(crate) fn by_blocks(&self, blocksize: usize) -> Result<bool> {
        let bytes = self.bytes();
        if bytes.is_empty() {
            return Ok(true);
        }
        let info = self.info()?;
        let h = ChunkHeader::parse(bytes).ok_or_else(|| Error::InvalidFormat("chunk header is corrupt".into()))?;
        let typesize = usize::from(h.typesize).max(1);
        // A Blosc1 header has no Blosc2 flags (dictionary, special kinds).
        let (dict, special) = if h.is_extended() { (h.dict(), h.special() != 0) } else { (false, false) };
        // DELTA encodes every block against the first, which a lone block
        // read does not decode.
        Ok((info.blocksize == blocksize || special)
            && blocksize > 0
            && blocksize % typesize == 0
            && !dict
            && !h.has_delta())
    }

    /// Whether the chunk was written with the DELTA filter, which encodes
    /// every block against the first.
    pub(crate) fn has_delta(&self) -> bool {
        ChunkHeader::parse(self.bytes()).is_some_and(|h| h.has_delta())
    }
}

impl DCtx {
    /// Decompress block `nblock` of `chunk` into `dst` (one block long),
    /// reading only that block (`blosc2_getitem_ctx` decodes a whole,
    /// aligned block straight into `dst`). The chunk must pass
    /// [`Chunk::by_blocks`] for `dst.len()`.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the chunk header is damaged, the chunk
    /// cannot be read by blocks or the block is not in it, or
    /// [`check_decodable`] refuses it; [`Error::Blosc`] if it does not
    /// decompress.
    pub(crate) fn decompress_block(&mut self, chunk: &Chunk<'_>, nblock: usize, dst: &mut [u8]) -> Result<()> {
        check_decodable(chunk.bytes())?;
        if !chunk.by_blocks(dst.len())? || chunk.bytes().is_empty() {
            return Err(Error::InvalidFormat(format!("chunk cannot be read in blocks of {} bytes", dst.len())));
        }
        let bytes = chunk.bytes();
        let info = chunk.info()?;
        let typesize = usize::from(bytes[3]).max(1);
        let start = nblock.checked_mul(dst.len()).filter(|&s| s + dst.len() <= info.nbytes);
        let (Some(start), Ok(srcsize), Ok(dstsize)) = (start, i32::try_from(bytes.len()), i32::try_from(dst.len()))
        else {
            return Err(Error::InvalidFormat(format!("block {nblock} is not in a chunk of {} bytes", info.nbytes)));
        };
        if let Some(value) = wide_value(bytes)? {
            fill_repeated(value, start, dst);
            return Ok(());
        }
        let (first, n) = ((start / typesize) as i32, (dst.len() / typesize) as i32);
        // SAFETY: bytes is a complete chunk (its header says so: `info`),
        // dst has dstsize writable bytes and blosc2 writes at most that.
        let rc = unsafe {
            b::blosc2_getitem_ctx(
                self.0.as_ptr(),
                bytes.as_ptr().cast(),
                srcsize,
                first,
                n,
                dst.as_mut_ptr().cast(),
                dstsize,
            )
        };
        if rc < 0 {
            return Err(blosc_err("decompressing a block", i64::from(rc)));
        }
        if rc != dstsize {
            return Err(Error::InvalidFormat(format!("block {nblock} decompressed to {rc} bytes, not {dstsize}")));
        }
        if let Some((typesize, group)) = grouped_shuffle(bytes)? {
            regroup(dst, typesize, group, &mut Vec::new());
        }
        Ok(())
    }
}

impl Drop for DCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context.
        unsafe { b::blosc2_free_ctx(self.0.as_ptr()) }
    }
}

/// Items `start..start + nitems` of the chunk `src`, decompressed with
/// `blosc2_getitem` (as c-blosc2 reads a frame's offsets index): the
/// decoder [`frame_check`] reads an offsets index with, a window at a time,
/// so that checking one never holds more than a window of it.
///
/// # Errors
/// [`Error::InvalidFormat`] if `src` is not a chunk or the window is not in
/// it; [`Error::Io`] if the window does not fit in memory; [`Error::Blosc`]
/// if it does not decompress.
pub(crate) fn inflate(src: &[u8], start: usize, nitems: usize) -> Result<Vec<u8>> {
    init();
    let typesize = usize::from(src.get(3).copied().unwrap_or(0));
    let len = nitems.saturating_mul(typesize);
    let (Ok(srcsize), Ok(start), Ok(n), Ok(len32)) =
        (i32::try_from(src.len()), i32::try_from(start), i32::try_from(nitems), i32::try_from(len))
    else {
        return Err(Error::InvalidFormat(format!("items {start}+{nitems} lie outside a chunk")));
    };
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        return Err(Error::io(&format!("allocating {len} bytes of a chunk"), None, &oom));
    }
    out.resize(len, 0);
    // SAFETY: src is valid for srcsize bytes, out for len32 writable ones;
    // blosc2 writes at most destsize bytes.
    let rc = unsafe { b::blosc2_getitem(src.as_ptr().cast(), srcsize, start, n, out.as_mut_ptr().cast(), len32) };
    if rc < 0 {
        return Err(blosc_err("decompressing items", i64::from(rc)));
    }
    if rc != len32 {
        return Err(Error::InvalidFormat(format!("items {start}+{n} decompressed to {rc} bytes, not {len}")));
    }
    Ok(out)
}

/// Decompress the whole chunk `src` into a new vector of exactly `nbytes` bytes.
///
/// # Errors
/// [`Error::InvalidFormat`] if the chunk does not hold `nbytes` bytes;
/// [`Error::Blosc`] if it does not decompress.
#[cfg(feature = "testing")]
pub(crate) fn inflate_whole(src: &[u8], nbytes: usize) -> Result<Vec<u8>> {
    let chunk = Chunk { data: src.as_ptr(), len: src.len(), needs_free: false, _owner: std::marker::PhantomData };
    let mut out = vec![0u8; nbytes];
    DCtx::new(1)?.decompress(&chunk, &mut out, None)?;
    Ok(out)
}

/// `len` bytes at `p` as a slice (empty for `len == 0`, whatever `p`).
///
/// # Safety
/// For `len > 0`, `p` must be valid for reading `len` bytes while the slice lives.
unsafe fn raw_bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: as the caller guarantees.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// Sizes read from a chunk header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkInfo {
    /// Uncompressed bytes.
    pub(crate) nbytes: usize,
    /// Compressed bytes.
    pub(crate) cbytes: usize,
    /// Blosc block size in bytes.
    pub(crate) blocksize: usize,
}

/// A compressed chunk fetched from a super-chunk (owned or borrowed).
pub(crate) struct Chunk<'a> {
    data: *const u8,
    len: usize,
    needs_free: bool,
    /// The super-chunk, or the caller's buffer, the bytes belong to.
    _owner: std::marker::PhantomData<&'a [u8]>,
}

// SAFETY: the chunk bytes are immutable while borrowed (the super-chunk can
// only change through &mut), and owned ones are freed by whoever drops it.
unsafe impl Send for Chunk<'_> {}
// SAFETY: shared access only reads the bytes (see `bytes`); only the owner's
// drop frees them.
unsafe impl Sync for Chunk<'_> {}

impl<'a> Chunk<'a> {
    /// A chunk of bytes read from a file into the caller's buffer.
    pub(crate) fn from_slice(bytes: &'a [u8]) -> Chunk<'a> {
        Chunk { data: bytes.as_ptr(), len: bytes.len(), needs_free: false, _owner: std::marker::PhantomData }
    }

    /// The compressed bytes.
    #[must_use]
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: data points to len readable bytes for the chunk's lifetime.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// Decode the header.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the header is too short or inconsistent.
    pub(crate) fn info(&self) -> Result<ChunkInfo> {
        chunk_info(self.bytes())
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        if self.needs_free {
            // SAFETY: c-blosc2 allocated it with malloc and handed ownership to us.
            unsafe { libc::free(self.data.cast_mut().cast()) }
        }
    }
}

/// Where each block's compressed stream lies in `old`, a chunk of `nbytes`
/// bytes in blocks of `blocksize`, if its blocks can be replaced one at a
/// time ([`splice`]): a plain chunk (extended header; not a copy, special,
/// lazy or with a dictionary) without the DELTA filter, which encodes every
/// block against the first. `Ok(None)` otherwise.
///
/// # Errors
/// [`Error::InvalidFormat`] if the header or a block start is damaged.
pub(crate) fn block_spans(old: &[u8], nbytes: usize, blocksize: usize) -> Result<Option<Vec<(usize, usize)>>> {
    let hlen = HEADER_LEN;
    let Some(h) = old.get(..hlen).and_then(ChunkHeader::parse).filter(|_| blocksize != 0) else {
        return Ok(None);
    };
    let info = chunk_info(old)?;
    if !h.is_plain() || h.has_delta() || info.nbytes != nbytes || info.blocksize != blocksize || nbytes % blocksize != 0
    {
        return Ok(None);
    }
    let n = nbytes / blocksize;
    let (first, end) = (hlen + 4 * n, info.cbytes);
    if end < first {
        return Err(Error::InvalidFormat("chunk is shorter than its block starts".into()));
    }
    let starts = block_starts(old, n);
    if let Some(bad) = starts.iter().find(|&&s| s < first || s >= end) {
        return Err(Error::InvalidFormat(format!("chunk has a block start ({bad}) outside it")));
    }
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    Ok(Some(starts.iter().map(|&s| (s, block_end(&sorted, s, end))).collect()))
}

/// `old` with some blocks replaced: `new[i]`, when given, is block `i`
/// compressed alone (a one-block chunk made with the same parameters),
/// and the other blocks keep their streams (`spans`, from [`block_spans`]).
/// Blosc2 compresses each block on its own, so a block's stream does not
/// depend on its neighbours. `None` if a new block was encoded otherwise
/// than `old` (its header differs: it did not compress and was copied,
/// another codec or filter): the caller compresses the whole chunk then.
pub(crate) fn splice(old: &[u8], spans: &[(usize, usize)], new: &[Option<Vec<u8>>]) -> Option<Vec<u8>> {
    let hlen = HEADER_LEN;
    let same = |c: &[u8]| c.len() >= hlen + 4 && c[..4] == old[..4] && c[16..hlen] == old[16..hlen];
    fn stream(c: &[u8], hlen: usize) -> Option<&[u8]> {
        let start = u32::from_le_bytes(c[hlen..hlen + 4].try_into().expect("4 bytes")) as usize;
        let end = chunk_info(c).ok()?.cbytes;
        c.get(start..end).filter(|_| start >= hlen + 4)
    }
    let first = hlen + 4 * spans.len();
    let mut out = Vec::with_capacity(old.len());
    out.extend_from_slice(&old[..first]);
    for (i, &(s, e)) in spans.iter().enumerate() {
        let at = u32::try_from(out.len()).ok()?;
        out[hlen + 4 * i..hlen + 4 * i + 4].copy_from_slice(&at.to_le_bytes());
        match new.get(i).and_then(Option::as_deref) {
            Some(c) if same(c) => out.extend_from_slice(stream(c, hlen)?),
            Some(_) => return None,
            None => out.extend_from_slice(&old[s..e]),
        }
    }
    let cbytes = i32::try_from(out.len()).ok()?;
    out[12..16].copy_from_slice(&cbytes.to_le_bytes());
    Some(out)
}

/// Decode the sizes in a chunk header, checking them against the buffer.
///
/// # Errors
/// [`Error::InvalidFormat`] if `bytes` is not a complete chunk.
pub(crate) fn chunk_info(bytes: &[u8]) -> Result<ChunkInfo> {
    if bytes.len() < b::BLOSC_MIN_HEADER_LENGTH as usize {
        return Err(Error::InvalidFormat(format!("chunk of {} bytes is shorter than a header", bytes.len())));
    }
    let (mut nbytes, mut cbytes, mut blocksize) = (0i32, 0i32, 0i32);
    // SAFETY: bytes holds at least a minimal header, which is all this reads.
    let rc = unsafe { b::blosc2_cbuffer_sizes(bytes.as_ptr().cast(), &mut nbytes, &mut cbytes, &mut blocksize) };
    if rc < 0 || nbytes < 0 || cbytes < 0 || blocksize < 0 || cbytes as usize > bytes.len() {
        return Err(Error::InvalidFormat("chunk header is corrupt".into()));
    }
    Ok(ChunkInfo { nbytes: nbytes as usize, cbytes: cbytes as usize, blocksize: blocksize as usize })
}

/// A special chunk of `nbytes` bytes in which every `typesize`-byte item is `value`.
///
/// # Errors
/// [`Error::Blosc`] if c-blosc2 refuses.
pub(crate) fn repeat_chunk(
    comp: &Compression,
    typesize: usize,
    blocksize: usize,
    nbytes: usize,
    value: &[u8],
) -> Result<Vec<u8>> {
    init();
    if typesize > CHUNK_MAX_TYPESIZE && value.iter().any(|&x| x != 0) {
        // A chunk repeats a value of at most 255 bytes: larger items are
        // compressed like any chunk (they repeat, so they shrink well).
        let items = value.repeat(nbytes / typesize.max(1));
        let mut cctx = CCtx::new(comp, typesize, blocksize, 1)?;
        return cctx.compress(&items);
    }
    let cap = MAX_OVERHEAD + typesize;
    let mut out = vec![0u8; cap];
    let cp = comp.to_blosc(chunk_typesize(typesize), blocksize, 1);
    // SAFETY: out has cap bytes; value has typesize bytes (checked by callers).
    let rc = unsafe {
        if value.iter().all(|&x| x == 0) {
            b::blosc2_chunk_zeros(cp, nbytes as i32, out.as_mut_ptr().cast(), cap as i32)
        } else {
            b::blosc2_chunk_repeatval(cp, nbytes as i32, out.as_mut_ptr().cast(), cap as i32, value.as_ptr().cast())
        }
    };
    if rc < 0 {
        return Err(blosc_err("creating a special chunk", i64::from(rc)));
    }
    out.truncate(rc as usize);
    drop_stale_dict_flag(&mut out);
    Ok(out)
}

/// Compress a frame's offsets index as c-blosc2 does (`frame_append_chunk`:
/// BloscLZ, 8-byte items, 16 KiB blocks, never split), with one thread.
pub(crate) fn compress_offsets(offsets: &[i64]) -> Result<Vec<u8>> {
    init();
    let bytes: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    // SAFETY: returns a plain struct by value.
    let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
    cp.splitmode = b::BLOSC_NEVER_SPLIT as i32;
    cp.typesize = 8;
    cp.blocksize = 16 * 1024;
    cp.nthreads = 1;
    cp.compcode = b::BLOSC_BLOSCLZ as u8;
    // SAFETY: the parameters are passed by value; a NULL return is handled.
    let ctx = NonNull::new(unsafe { b::blosc2_create_cctx(cp) })
        .map(CCtx)
        .ok_or_else(|| Error::blosc("creating a compression context", None))?;
    let mut ctx = ctx;
    ctx.compress(&bytes)
}

/// The error for a frame whose sections cannot be found where c-blosc2 put them.
fn unreadable(path: Option<&str>) -> Error {
    Error::InvalidFormat(format!(
        "{}: the header or trailer is not where c-blosc2 writes them",
        path.map_or_else(|| "the frame in memory".to_owned(), |p| format!("'{p}'"))
    ))
}

/// [`SChunk::append_chunks`] on a frame on disk (`url`, a file or a sparse
/// frame's directory), through [`io`]: the new chunks after the data
/// section (into new chunk files), the new offsets index, the old trailer,
/// the file cut to its new length, then the header with the new sizes.
fn append_on_disk(url: &str, contiguous: bool, offsets: &[i64], chunks: &[&[u8]], nbytes: i64) -> Result<()> {
    let dir = std::path::Path::new(url);
    let path = if contiguous { dir.to_path_buf() } else { dir.join(frame::SPARSE_INDEX) };
    let io_err = |what: &'static str, p: &std::path::Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| Error::io(what, Some(&p), &e)
    };
    let f = io::OpenOptions::write().open(&path).map_err(io_err("opening", &path))?;
    let len = f.std().metadata().map_err(io_err("reading", &path))?.len();
    let rf = LocalObject::open(&path).map_err(io_err("opening", &path))?;
    let head = rf.read_vec(0, len.min(frame::HEADER_MINLEN as u64) as usize).map_err(io_err("reading", &path))?;
    let tail = rf
        .read_vec(len.saturating_sub(frame::TRAILER_TAIL as u64), frame::TRAILER_TAIL.min(len as usize))
        .map_err(io_err("reading", &path))?;
    let s = frame::Sections::read(&head, &tail, len).ok_or_else(|| unreadable(Some(url)))?;
    let mut header = rf.read_vec(0, s.header_len as usize).map_err(io_err("reading", &path))?;
    let trailer = rf.read_vec(s.trailer_at, (len - s.trailer_at) as usize).map_err(io_err("reading", &path))?;
    let plan = frame::plan_append(offsets, !contiguous, s.cbytes, chunks);
    let index = compress_offsets(&plan.offsets)?;
    let mut at = s.header_len;
    if contiguous {
        // The chunks one after the other, written in pieces of a few MiB.
        at += s.cbytes as u64;
        let mut buf = Vec::new();
        for &(i, _) in &plan.stored {
            buf.extend_from_slice(chunks[i]);
            if buf.len() >= 4 << 20 {
                f.write_all_at(at, &buf).map_err(io_err("writing", &path))?;
                at += buf.len() as u64;
                buf.clear();
            }
        }
        f.write_all_at(at, &buf).map_err(io_err("writing", &path))?;
        at += buf.len() as u64;
    } else {
        for &(i, id) in &plan.stored {
            let p = frame::chunk_file(dir, id);
            let c = io::OpenOptions::truncate().open(&p).map_err(io_err("creating", &p))?;
            c.write_all_at(0, chunks[i]).map_err(io_err("writing", &p))?;
        }
    }
    f.write_all_at(at, &index).map_err(io_err("writing", &path))?;
    at += index.len() as u64;
    f.write_all_at(at, &trailer).map_err(io_err("writing", &path))?;
    at += trailer.len() as u64;
    if at < len {
        f.set_len(at).map_err(io_err("truncating", &path))?;
    }
    frame::patch_header(&mut header, at, s.nbytes + nbytes, s.cbytes + plan.cbytes);
    f.write_all_at(0, &header).map_err(io_err("writing", &path))
}

/// The kind of special chunk to fill a fresh super-chunk with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// All zeros.
    Zeros,
    /// Unspecified contents (read back as zeros by c-blosc2).
    Uninit,
    /// NaNs of the native float of the item size (4 or 8 bytes; c-blosc2
    /// writes them in the machine's byte order).
    Nan,
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
            let mut cp = *(*st).cparams;
            cp.schunk = sc.cast();
            let mut dp = *(*st).dparams;
            dp.schunk = sc.cast();
            let cctx = b::blosc2_create_cctx(cp);
            let dctx = b::blosc2_create_dctx(dp);
            if cctx.is_null() || dctx.is_null() {
                for c in [cctx, dctx] {
                    if !c.is_null() {
                        b::blosc2_free_ctx(c);
                    }
                }
                return false;
            }
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
                return Error::blosc(format!("opening '{urlpath}' (no sparse-frame index in it)"), None);
            }
            e
        })
    }

    /// [`SChunk::check`] of the array `at` names.
    ///
    /// # Errors
    /// As [`SChunk::open`].
    pub(crate) fn check_located(at: &Located, chunks: Chunks) -> Result<frame_check::FrameSummary> {
        init();
        frame_check::check_located(at, chunks, inflate)
    }

    /// c-blosc2's parse of the frame at `urlpath`, which [`SChunk::check`]
    /// has just passed (c-blosc2 reads it again, or is served what the
    /// check read: [`super::blosc_io::Serving`]).
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
    pub(crate) fn open_site(site: &Site, chunks: Chunks) -> Result<Self> {
        let url = site.url();
        match site.offset {
            Some(at) => frame_check::check_path_at(&url, at, chunks, inflate).map(drop)?,
            None => Self::check(&url, chunks).map(drop)?,
        }
        Self::parse_site(site)
    }

    /// c-blosc2's parse of the frame at `site`, which [`SChunk::open_site`]
    /// has just passed: at its local path, or, for storage the operating
    /// system does not reach, through a stand-in path whose streams read the
    /// site's objects ([`blosc_io::StandIn`]). Such a super-chunk cannot
    /// write in place: its location's protocol changes it.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it; [`Error::Io`] if the
    /// stand-in cannot be made.
    pub(crate) fn parse_site(site: &Site) -> Result<Self> {
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
        let stand_in = blosc_io::StandIn::new(site)
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
            codec: r.compcode,
            codec_meta: r.compcode_meta,
            clevel: r.clevel,
            use_dict: false,
            splitmode: i32::from(r.splitmode),
            filters: r.filters,
            filters_meta: r.filters_meta,
        }
    }

    fn meta_index(&self, name: &str) -> Option<usize> {
        let r = self.raw();
        (0..usize::from(r.nmetalayers).min(MAX_METALAYERS)).find(|&i| {
            let m = r.metalayers[i];
            // SAFETY: the first nmetalayers entries are live metalayers with C-string names.
            !m.is_null() && unsafe { CStr::from_ptr((*m).name) }.to_bytes() == name.as_bytes()
        })
    }

    /// Names of the fixed-size metalayers, in order.
    #[must_use]
    pub(crate) fn meta_names(&self) -> Vec<String> {
        let r = self.raw();
        (0..usize::from(r.nmetalayers).min(MAX_METALAYERS))
            .filter_map(|i| {
                let m = r.metalayers[i];
                // SAFETY: as in meta_index.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// Whether a fixed-size metalayer exists.
    #[must_use]
    pub(crate) fn meta_exists(&self, name: &str) -> bool {
        self.meta_index(name).is_some()
    }

    /// The content of a fixed-size metalayer.
    #[must_use]
    pub(crate) fn meta_get(&self, name: &str) -> Option<Vec<u8>> {
        let i = self.meta_index(name)?;
        let m = self.raw().metalayers[i];
        // SAFETY: a live metalayer's content holds content_len bytes.
        unsafe {
            let len = usize::try_from((*m).content_len).ok()?;
            if len == 0 {
                return Some(Vec::new());
            }
            Some(std::slice::from_raw_parts((*m).content, len).to_vec())
        }
    }

    /// Add a fixed-size metalayer (only before the first chunk).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it exists, the name is too long, or all
    /// slots are taken; [`Error::Blosc`] if c-blosc2 cannot write it.
    pub(super) fn meta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        writing(|| {
            check_meta_name(name)?;
            if self.meta_exists(name) {
                return Err(Error::InvalidArgument(format!("metalayer '{name}' already exists")));
            }
            if usize::from(self.raw().nmetalayers) >= MAX_METALAYERS {
                return Err(Error::InvalidArgument(format!(
                    "no room for metalayer '{name}' ({MAX_METALAYERS} at most)"
                )));
            }
            // c-blosc2 would fail *after* adding it to the super-chunk in memory.
            if !self.meta_addable() {
                return Err(Error::InvalidArgument(format!(
                    "metalayer '{name}' cannot be added: a frame takes new metalayers only before its first chunk"
                )));
            }
            let len = i32::try_from(content.len()).map_err(|_| Error::InvalidArgument("metalayer too large".into()))?;
            let n = cstring(name, "metalayer name")?;
            // SAFETY: valid super-chunk, C string and content buffer; blosc2 copies both.
            let rc = unsafe { b::blosc2_meta_add(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len) };
            if rc < 0 {
                return Err(blosc_err(&format!("adding metalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Whether c-blosc2 can add a fixed-size metalayer now: always to a
    /// super-chunk that is not a frame, to a frame only before its first
    /// chunk (`frame_update_header(.., new = true)` refuses once `cbytes > 0`).
    #[must_use]
    pub(crate) fn meta_addable(&self) -> bool {
        let r = self.raw();
        r.frame.is_null() || r.cbytes <= 0
    }

    /// Replace a fixed-size metalayer's content; `content` must not be longer
    /// than the stored one (c-blosc2 metalayers never grow).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist or would grow.
    pub(super) fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        writing(|| {
            let Some(old) = self.meta_get(name) else {
                return Err(Error::InvalidArgument(format!("metalayer '{name}' does not exist")));
            };
            if content.len() > old.len() {
                return Err(Error::InvalidArgument(format!(
                    "metalayer '{name}' holds {} bytes; cannot store {}",
                    old.len(),
                    content.len()
                )));
            }
            // A shorter content is zero-padded to the stored length, so no stale
            // bytes of the old content stay behind it.
            let mut padded = content.to_vec();
            padded.resize(old.len(), 0);
            let n = cstring(name, "metalayer name")?;
            // SAFETY: valid super-chunk, C string and content; blosc2 copies content.
            let rc =
                unsafe { b::blosc2_meta_update(self.as_ptr(), n.as_ptr(), padded.as_mut_ptr(), padded.len() as i32) };
            if rc < 0 {
                return Err(blosc_err(&format!("updating metalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Whether a variable-length metalayer exists.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the name holds a NUL byte.
    pub(crate) fn vlmeta_exists(&self, name: &str) -> Result<bool> {
        let n = cstring(name, "vlmetalayer name")?;
        let _g = self.guard();
        // SAFETY: valid super-chunk and C string.
        Ok(unsafe { b::blosc2_vlmeta_exists(self.as_ptr(), n.as_ptr()) } >= 0)
    }

    /// The content of a variable-length metalayer, if it exists.
    ///
    /// # Errors
    /// [`Error::Blosc`] if it exists but cannot be decompressed.
    pub(crate) fn vlmeta_get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        if !self.vlmeta_exists(name)? {
            return Ok(None);
        }
        let n = cstring(name, "vlmetalayer name")?;
        self.vlmeta_content(&n, name).map(Some)
    }

    /// Every variable-length metalayer's name as stored (which may not be
    /// UTF-8, in a damaged frame) and its content, or why that cannot be read.
    pub(crate) fn vlmeta_raw(&self) -> Vec<(Vec<u8>, Result<Vec<u8>>)> {
        let r = self.raw();
        let names: Vec<CString> = (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS))
            .filter_map(|i| {
                let m = r.vlmetalayers[i];
                // SAFETY: the first nvlmetalayers entries are live, with C-string names.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_owned())
            })
            .collect();
        names
            .into_iter()
            .map(|n| {
                let shown = n.to_string_lossy().into_owned();
                let content = self.vlmeta_content(&n, &shown);
                (n.into_bytes(), content)
            })
            .collect()
    }

    /// The content of the vlmetalayer named `n` (`shown` in errors).
    fn vlmeta_content(&self, n: &CStr, shown: &str) -> Result<Vec<u8>> {
        let name = shown;
        let (mut content, mut len) = (ptr::null_mut::<u8>(), 0i32);
        let rc = {
            let _g = self.guard();
            // SAFETY: valid super-chunk and C string; blosc2 mallocs content.
            unsafe { b::blosc2_vlmeta_get(self.as_ptr(), n.as_ptr(), &mut content, &mut len) }
        };
        if rc < 0 || content.is_null() || len < 0 {
            // c-blosc2 allocates the content before it finds a corrupt one.
            // SAFETY: a non-NULL content is a malloc'ed buffer we own.
            unsafe { libc::free(content.cast()) };
            return Err(blosc_err(&format!("reading vlmetalayer '{name}'"), i64::from(rc)));
        }
        // SAFETY: blosc2 returned a malloc'ed buffer of len bytes, which we own.
        let v = unsafe {
            let v = std::slice::from_raw_parts(content, len as usize).to_vec();
            libc::free(content.cast());
            v
        };
        Ok(v)
    }

    /// The stored (compressed) content of vlmetalayer `name`, if there is one.
    pub(super) fn vlmeta_stored(&self, name: &str) -> Option<Vec<u8>> {
        let r = self.raw();
        (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS)).find_map(|i| {
            let m = r.vlmetalayers[i];
            // SAFETY: the first nvlmetalayers entries are live, with C-string
            // names and content_len bytes of content.
            unsafe {
                if m.is_null() || CStr::from_ptr((*m).name).to_bytes() != name.as_bytes() || (*m).content.is_null() {
                    return None;
                }
                let len = usize::try_from((*m).content_len).ok()?;
                Some(std::slice::from_raw_parts((*m).content, len).to_vec())
            }
        })
    }

    /// Add (`update == false`) or replace a variable-length metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it exists (add) or does not (update);
    /// [`Error::Blosc`] if c-blosc2 cannot store it.
    pub(super) fn vlmeta_put(&mut self, name: &str, content: &[u8], update: bool, cparams: &CParams) -> Result<()> {
        writing(|| {
            check_meta_name(name)?;
            let exists = self.vlmeta_exists(name)?;
            if exists != update {
                let why = if update { "does not exist" } else { "already exists" };
                return Err(Error::InvalidArgument(format!("vlmetalayer '{name}' {why}")));
            }
            let count = usize::try_from(self.raw().nvlmetalayers).unwrap_or(0);
            if count + usize::from(!update) > FRAME_VLMETALAYERS {
                return Err(Error::InvalidArgument(format!(
                    "no room for vlmetalayer '{name}': the array has {count}, and c-blosc2 writes at most \
                     {FRAME_VLMETALAYERS} into a frame"
                )));
            }
            let len =
                i32::try_from(content.len()).map_err(|_| Error::InvalidArgument("vlmetalayer too large".into()))?;
            let n = cstring(name, "vlmetalayer name")?;
            let mut cp = vlmeta_cparams(cparams);
            // SAFETY: valid super-chunk, name, content and cparams; blosc2 copies what it keeps.
            let rc = unsafe {
                if update {
                    b::blosc2_vlmeta_update(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len, &mut cp)
                } else {
                    b::blosc2_vlmeta_add(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len, &mut cp)
                }
            };
            if rc < 0 {
                return Err(blosc_err(&format!("storing vlmetalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Names of the variable-length metalayers.
    #[must_use]
    pub(crate) fn vlmeta_names(&self) -> Vec<String> {
        let r = self.raw();
        (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS))
            .filter_map(|i| {
                let m = r.vlmetalayers[i];
                // SAFETY: the first nvlmetalayers entries are live, with C-string names.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_string_lossy().into_owned())
            })
            .collect()
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
        Ok(Chunk { data, len, needs_free, _owner: std::marker::PhantomData })
    }

    /// Append a compressed chunk.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it (size mismatch, I/O).
    pub(super) fn append_chunk(&mut self, chunk: &[u8]) -> Result<()> {
        writing(|| {
            let before = self.nchunks();
            // SAFETY: chunk is a complete compressed chunk; copy=true so blosc2 copies it.
            let rc = unsafe { b::blosc2_schunk_append_chunk(self.as_ptr(), chunk.as_ptr().cast_mut(), true) };
            if rc != before + 1 {
                return Err(Error::blosc("appending a chunk", rc));
            }
            Ok(())
        })
    }

    /// Append compressed chunks, in order: as many [`SChunk::append_chunk`]
    /// calls would, in one pass over the frame. c-blosc2 rewrites a frame's
    /// whole offsets index, trailer and header at each append (and makes
    /// and drops contexts with threads to do so); here a frame-backed
    /// super-chunk gets its new chunks written after its data section (a
    /// sparse frame: into new chunk files), then one new offsets index, the
    /// trailer as it was and the header with the new sizes, and is then read
    /// back. Chunks of zeros, NaNs or uninitialised items are stored in the
    /// index alone, as c-blosc2 stores them.
    ///
    /// The first chunk of an empty super-chunk (which sets its chunk size),
    /// a super-chunk without a frame (where an append costs no more than
    /// storing the chunk) and chunks of another size than the super-chunk's
    /// go through c-blosc2's own append.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for a chunk that is not a complete chunk;
    /// [`Error::Blosc`] if c-blosc2 refuses one or cannot read the frame
    /// back; [`Error::Io`] if the frame cannot be written. On an error some
    /// of the chunks may have been appended (in memory) or the frame on disk
    /// may be part-written: the caller's journal rolls that back.
    pub(super) fn append_chunks(&mut self, chunks: &[&[u8]]) -> Result<()> {
        let mut rest = chunks;
        if self.nchunks() == 0 {
            let Some((first, tail)) = rest.split_first() else { return Ok(()) };
            self.append_chunk(first)?;
            rest = tail;
        }
        let mut stored = Vec::with_capacity(rest.len());
        let mut nbytes = 0i64;
        for c in rest {
            let info = chunk_info(c)?;
            if info.nbytes != usize::try_from(self.chunksize()).unwrap_or(0) {
                stored.clear();
                break;
            }
            nbytes += info.nbytes as i64;
            stored.push(&c[..info.cbytes]);
        }
        if rest.is_empty() || stored.len() != rest.len() || self.raw().frame.is_null() || self.borrowed {
            return rest.iter().try_for_each(|c| self.append_chunk(c));
        }
        let offsets = self.frame_offsets()?;
        let st = self.storage();
        let mut next = match st.urlpath.as_deref() {
            None => self.append_in_memory(&offsets, &stored, nbytes)?,
            Some(url) => {
                writing(|| append_on_disk(url, st.contiguous, &offsets, &stored, nbytes))?;
                Self::open(url, Chunks::Later)?
            }
        };
        next.carry_settings(self);
        *self = next;
        Ok(())
    }

    /// [`SChunk::append_chunks`] on a frame in memory: the frame's buffer
    /// grown in place (`realloc`, as c-blosc2 grows it: no copy of the data
    /// section when the allocator can extend it) and handed to a new
    /// super-chunk, which is returned. This one must then be dropped
    /// (without it, its frame is gone); on an error it is left as it was.
    fn append_in_memory(&mut self, offsets: &[i64], chunks: &[&[u8]], nbytes: i64) -> Result<SChunk> {
        let (p, len, needs_free) = self.to_cframe_raw()?;
        if needs_free {
            // SAFETY: a copy c-blosc2 allocated for us (not expected for a contiguous frame in memory).
            unsafe { free(p.cast()) };
            return Err(Error::blosc("growing a frame in memory that the super-chunk does not hold", None));
        }
        let len = len as usize;
        // SAFETY: the super-chunk's own frame: len bytes, alive while self is.
        let old = unsafe { raw_bytes(p, len) };
        let tail = &old[len.saturating_sub(frame::TRAILER_TAIL)..];
        let s = frame::Sections::read(old, tail, len as u64).ok_or_else(|| unreadable(None))?;
        let plan = frame::plan_append(offsets, false, s.cbytes, chunks);
        let index = compress_offsets(&plan.offsets)?;
        let data_end = (s.header_len + s.cbytes as u64) as usize;
        let trailer = old[s.trailer_at as usize..].to_vec();
        // What the append overwrites, to put back if the result cannot be read.
        let (old_tail, old_head) = (old[data_end..].to_vec(), old[..frame::HEADER_MINLEN].to_vec());
        let new_len = data_end + plan.cbytes as usize + index.len() + trailer.len();
        // SAFETY: the frame's buffer is malloc'ed by c-blosc2 (or by from_cframe) and owned by the super-chunk,
        // which from now on does not free it; realloc keeps it valid when it fails.
        let q = unsafe {
            b::blosc2_schunk_avoid_cframe_free(self.as_ptr(), true);
            let q = libc::realloc(p.cast(), new_len).cast::<u8>();
            if q.is_null() {
                b::blosc2_schunk_avoid_cframe_free(self.as_ptr(), false);
                return Err(Error::blosc(format!("allocating {new_len} bytes for the frame"), None));
            }
            q
        };
        // SAFETY: q holds new_len bytes, the first len of them the old frame's; nothing else refers to them
        // (self's frame pointer is stale now and never read again: self is dropped or replaced below).
        let buf = unsafe { std::slice::from_raw_parts_mut(q, new_len) };
        let mut at = data_end;
        for &(i, _) in &plan.stored {
            buf[at..at + chunks[i].len()].copy_from_slice(chunks[i]);
            at += chunks[i].len();
        }
        buf[at..at + index.len()].copy_from_slice(&index);
        buf[at + index.len()..].copy_from_slice(&trailer);
        frame::patch_header(
            &mut buf[..s.header_len as usize],
            new_len as u64,
            s.nbytes + nbytes,
            s.cbytes + plan.cbytes,
        );
        // SAFETY: q is a malloc'ed buffer of new_len bytes that nothing else owns.
        match unsafe { Self::own_frame(q, new_len, true) } {
            Ok(sc) => Ok(sc),
            Err(e) => {
                // Put the old frame back and read it again in place of self.
                buf[data_end..len].copy_from_slice(&old_tail);
                buf[..frame::HEADER_MINLEN].copy_from_slice(&old_head);
                // SAFETY: as above; a failed shrink leaves q (larger than len) valid.
                let back = unsafe {
                    let r = libc::realloc(q.cast(), len).cast::<u8>();
                    Self::own_frame(if r.is_null() { q } else { r }, len, false)
                };
                match back {
                    Ok(mut back) => {
                        back.carry_settings(self);
                        *self = back;
                        Err(e)
                    }
                    // The frame that was sound a moment ago: nothing left to hold the array.
                    Err(_) => std::process::abort(),
                }
            }
        }
    }

    /// A super-chunk over the malloc'ed contiguous frame `p` of `len` bytes,
    /// which it then owns (and frees), checked with [`frame_check`] first
    /// when `check` says so.
    ///
    /// # Safety
    /// `p` is a `malloc`'ed buffer of `len` initialised bytes that nothing else owns or uses.
    unsafe fn own_frame(p: *mut u8, len: usize, check: bool) -> Result<Self> {
        if check {
            // SAFETY: as the caller guarantees.
            frame_check::check_cframe(unsafe { raw_bytes(p, len) }, inflate)?;
        }
        // SAFETY: as the caller guarantees; with copy = false blosc2 reads the buffer in place.
        let sc =
            Self::own_made(unsafe { b::blosc2_schunk_from_buffer(p, len as i64, false) }, "reading the frame buffer")?;
        // SAFETY: sc is frame-backed by p, which it now owns and frees.
        unsafe { b::blosc2_schunk_avoid_cframe_free(sc.ptr.as_ptr(), false) };
        Ok(sc)
    }

    /// Give this super-chunk (just read back from a frame) the compression
    /// and decompression settings of `old` that a frame does not record
    /// (threads, a C caller's prefilter), with new contexts made from them.
    fn carry_settings(&mut self, old: &SChunk) {
        let sc = self.ptr.as_ptr();
        // SAFETY: both super-chunks are live; their storages' parameter blocks are c-blosc2's own copies,
        // which it reads when it makes contexts. The contexts replaced were made by this process (the
        // super-chunk is new) and nothing else refers to them.
        unsafe {
            let (from, to) = (old.raw().storage, (*sc).storage);
            if from.is_null() || to.is_null() || (*from).cparams.is_null() || (*to).cparams.is_null() {
                return;
            }
            if (*from).dparams.is_null() || (*to).dparams.is_null() {
                return;
            }
            let mut cp = *(*to).cparams;
            cp.nthreads = (*(*from).cparams).nthreads;
            cp.prefilter = (*(*from).cparams).prefilter;
            cp.preparams = (*(*from).cparams).preparams;
            cp.schunk = sc.cast();
            let mut dp = *(*to).dparams;
            dp.nthreads = (*(*from).dparams).nthreads;
            dp.schunk = sc.cast();
            let cctx = b::blosc2_create_cctx(cp);
            let dctx = b::blosc2_create_dctx(dp);
            if cctx.is_null() || dctx.is_null() {
                for c in [cctx, dctx] {
                    if !c.is_null() {
                        b::blosc2_free_ctx(c);
                    }
                }
                return;
            }
            *(*to).cparams = cp;
            *(*to).dparams = dp;
            for c in [(*sc).cctx, (*sc).dctx] {
                if !c.is_null() {
                    b::blosc2_free_ctx(c);
                }
            }
            (*sc).cctx = cctx;
            (*sc).dctx = dctx;
        }
    }

    /// Replace chunk `n`.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(super) fn update_chunk(&mut self, n: i64, chunk: &[u8]) -> Result<()> {
        writing(|| {
            // SAFETY: chunk is a complete compressed chunk; copy=true so blosc2 copies it.
            let rc = unsafe { b::blosc2_schunk_update_chunk(self.as_ptr(), n, chunk.as_ptr().cast_mut(), true) };
            if rc < 0 {
                return Err(Error::blosc(format!("updating chunk {n}"), rc));
            }
            Ok(())
        })
    }

    /// Remove chunk `n`; the chunks after it move down by one.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(super) fn delete_chunk(&mut self, n: i64) -> Result<()> {
        writing(|| {
            if n < 0 || n >= self.nchunks() {
                return Err(Error::InvalidArgument(format!("chunk {n} out of range")));
            }
            // SAFETY: valid super-chunk and chunk index.
            let rc = unsafe { b::blosc2_schunk_delete_chunk(self.as_ptr(), n) };
            if rc < 0 {
                return Err(Error::blosc(format!("deleting chunk {n}"), rc));
            }
            Ok(())
        })
    }

    /// Permute the chunks without touching their data: chunk `i` becomes the
    /// one that was at `order[i]` (a permutation, checked by the caller).
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(super) fn reorder(&mut self, order: &[i64]) -> Result<()> {
        writing(|| {
            let mut order = order.to_vec();
            // SAFETY: valid super-chunk; order holds nchunks entries (checked by the caller).
            let rc = unsafe { b::blosc2_schunk_reorder_offsets(self.as_ptr(), order.as_mut_ptr()) };
            if rc < 0 {
                return Err(Error::blosc("reordering chunks", i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Fill an empty super-chunk with `nchunks` special chunks of `chunk_nbytes` bytes.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses (too many chunks, I/O).
    pub(super) fn fill_special(&mut self, nchunks: i64, chunk_nbytes: usize, kind: Special) -> Result<()> {
        writing(|| {
            let typesize = self.typesize().max(1) as i64;
            let nitems = nchunks
                .checked_mul(chunk_nbytes as i64 / typesize)
                .ok_or_else(|| Error::InvalidArgument("too many items".into()))?;
            let value = match kind {
                Special::Zeros => b::BLOSC2_SPECIAL_ZERO,
                Special::Uninit => b::BLOSC2_SPECIAL_UNINIT,
                Special::Nan => b::BLOSC2_SPECIAL_NAN,
            } as i32;
            // SAFETY: valid, empty super-chunk.
            let rc = unsafe { b::blosc2_schunk_fill_special(self.as_ptr(), nitems, value, chunk_nbytes as i32) };
            if rc < 0 || self.nchunks() != nchunks {
                return Err(Error::blosc("filling with special chunks", rc));
            }
            Ok(())
        })
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

fn check_meta_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > METALAYER_NAME_MAXLEN {
        return Err(Error::InvalidArgument(format!(
            "metalayer name '{name}' must have 1 to {METALAYER_NAME_MAXLEN} bytes"
        )));
    }
    Ok(())
}

/// The compression parameters a vlmetalayer is compressed with: the
/// codec and level of `cparams`, as bytes (typesize 1), with a byte
/// shuffle (a no-op at that size) and nothing else. So that compressing
/// metadata cannot fail: c-blosc2 2.15's `blosc2_vlmeta_update` frees the
/// old content before it compresses the new and leaves the pointer
/// dangling when that fails (a double free when the super-chunk goes).
/// Filters that need whole items (`trunc_prec` wants 4 or 8 bytes), a
/// dictionary, a codec c-blosc2 does not ship (a plugin, or garbage in a
/// damaged frame's header, which a copy starts from) and a level past 9
/// are left out or replaced (ZSTD; 9).
fn vlmeta_cparams(cparams: &CParams) -> b::blosc2_cparams {
    let mut c = *cparams;
    if crate::codec::name(c.codec).is_none() {
        c.codec = crate::codec::ZSTD;
    }
    c.codec_meta = 0;
    c.clevel = c.clevel.min(9);
    c.use_dict = false;
    c.splitmode = b::BLOSC_FORWARD_COMPAT_SPLIT as i32;
    c.filters = [0, 0, 0, 0, 0, crate::codec::filter::SHUFFLE];
    c.filters_meta = [0; 6];
    Compression::plain(c).to_blosc(1, 0, 1)
}

/// `content` compressed as [`SChunk::vlmeta_put`] stores it: what an open
/// will find in the frame.
///
/// # Errors
/// [`Error::Blosc`] if compression fails.
pub(super) fn compress_vlmeta(content: &[u8], cparams: &CParams) -> Result<Vec<u8>> {
    init();
    // SAFETY: the parameters are passed by value; a NULL return is handled.
    let p = unsafe { b::blosc2_create_cctx(vlmeta_cparams(cparams)) };
    let mut ctx = CCtx(NonNull::new(p).ok_or_else(|| Error::blosc("creating a compression context", None))?);
    ctx.compress(content)
}

/// Free a buffer that c-blosc2 (or this library) allocated with malloc.
///
/// # Safety
/// `p` must come from malloc and not be used again.
pub(crate) unsafe fn free(p: *mut c_void) {
    // SAFETY: as the caller guarantees.
    unsafe { libc::free(p) }
}

/// The c-blosc2 version string.
#[must_use]
pub(crate) fn blosc2_version() -> String {
    // SAFETY: returns a static C string.
    unsafe { CStr::from_ptr(b::blosc2_get_version_string() as *const c_char) }.to_string_lossy().into_owned()
}

/// The Blosc format version c-blosc 1.x writes and the newest it reads
/// (`BLOSC_VERSION_FORMAT` of c-blosc 1.21). c-blosc 1.x refuses a chunk
/// whose first byte is higher ("not a Blosc buffer").
pub(crate) const BLOSC1_VERSION_FORMAT: u8 = 2;

/// Compress `src` into a chunk that c-blosc 1.x (bcolz, python-blosc 1.x)
/// decompresses: codec `cname` (`blosclz`, `lz4`, `lz4hc`, `zlib`, `zstd`),
/// `shuffle` 0 (none), 1 (byte) or 2 (bit), items of `typesize` bytes.
///
/// c-blosc2 writes such a chunk only through `blosc1_compress` with the
/// environment variable `BLOSC_BLOSC1_COMPAT` set: a 16-byte header without
/// the Blosc2 extended header, block starts and streams as c-blosc 1.x lays
/// them out (no run-length or special encodings, which need the extended
/// header), and the Blosc2 format version (5) in its first byte. That byte
/// is rewritten to [`BLOSC1_VERSION_FORMAT`], the version c-blosc 1.x
/// accepts; nothing else differs (tests/blz.rs has bcolz-zipline read every
/// codec and shuffle back). The variable is set once per process, before the
/// first call, and kept; `blosc1_compress` runs under c-blosc2's global
/// lock and ours (the compressor is global state).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown codec; [`Error::Blosc`] if
/// compression fails or the environment (`BLOSC_NOLOCK`) made c-blosc2
/// write a Blosc2 header.
pub(crate) fn compress_blosc1(cname: &str, clevel: u8, shuffle: u8, typesize: usize, src: &[u8]) -> Result<Vec<u8>> {
    static COMPAT: Once = Once::new();
    static GLOBAL: Mutex<()> = Mutex::new(());
    init();
    COMPAT.call_once(|| std::env::set_var("BLOSC_BLOSC1_COMPAT", "1"));
    let name = CString::new(cname).map_err(|_| Error::InvalidArgument(format!("codec '{cname}'")))?;
    let Ok(nbytes) = i32::try_from(src.len()) else {
        return Err(Error::InvalidArgument(format!("a chunk of {} bytes is too large for Blosc", src.len())));
    };
    let cap = src.len() + MAX_OVERHEAD;
    let mut out: Vec<u8> = Vec::with_capacity(cap);
    let _guard = GLOBAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // c-blosc2 splits a block into one stream per byte of the item from 32
    // items a block on, c-blosc 1.x from 128: chunks split in between do not
    // decode there. Unsplit blocks (the flag c-blosc 1.x writes for zstd and
    // zlib) decode in both.
    // SAFETY: sets a global of c-blosc2's, under our lock.
    unsafe { b::blosc1_set_splitmode(b::BLOSC_NEVER_SPLIT as i32) };
    // SAFETY: name is a NUL-terminated string that c-blosc2 only reads.
    if unsafe { b::blosc1_set_compressor(name.as_ptr()) } < 0 {
        return Err(Error::InvalidArgument(format!("codec '{cname}' is not one c-blosc 1.x knows")));
    }
    // SAFETY: src is valid for nbytes bytes, out has cap writable bytes;
    // c-blosc2 writes at most destsize bytes and returns how many.
    let rc = unsafe {
        b::blosc1_compress(
            i32::from(clevel),
            i32::from(shuffle),
            typesize.clamp(1, 255),
            src.len(),
            src.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            cap,
        )
    };
    drop(_guard);
    if rc <= 0 {
        return Err(blosc_err("compression", i64::from(rc)));
    }
    // SAFETY: c-blosc2 initialised the first rc bytes.
    unsafe { out.set_len(rc as usize) };
    let flags = out.get(2).copied().unwrap_or(0);
    let extended = flags & (b::BLOSC_DOSHUFFLE as u8 | b::BLOSC_DOBITSHUFFLE as u8)
        == (b::BLOSC_DOSHUFFLE as u8 | b::BLOSC_DOBITSHUFFLE as u8);
    if out.len() < b::BLOSC_MIN_HEADER_LENGTH as usize || extended || out[0] != b::BLOSC2_VERSION_FORMAT as u8 {
        return Err(Error::blosc(
            format!(
                "compressing a Blosc1 chunk of {nbytes} bytes (c-blosc2 wrote a Blosc2 header: is BLOSC_NOLOCK set?)"
            ),
            None,
        ));
    }
    // Bit-shuffle of a block whose item count is not a multiple of 8 changed
    // in format 3: c-blosc 1.x would unshuffle such a chunk differently.
    // Those chunks are made again with byte shuffle (same values, another filter).
    let blocksize = u32::from_le_bytes([out[8], out[9], out[10], out[11]]) as usize;
    let ts = usize::from(out[3]).max(1);
    let bit = flags & b::BLOSC_DOBITSHUFFLE as u8 != 0 && flags & b::BLOSC_MEMCPYED as u8 == 0;
    if bit && blocksize > 0 && ((blocksize / ts) % 8 != 0 || ((src.len() % blocksize) / ts) % 8 != 0) {
        return compress_blosc1(cname, clevel, 1, typesize, src);
    }
    out[0] = BLOSC1_VERSION_FORMAT;
    Ok(out)
}

/// Decompress the complete Blosc (1 or 2) chunk `src` into `dst`, which
/// must be exactly its uncompressed size, with `nthreads` threads.
///
/// # Errors
/// [`Error::InvalidFormat`] if the header disagrees with `dst` or the
/// buffer; [`Error::Blosc`] if it does not decompress.
pub(crate) fn decompress_into(dctx: &mut DCtx, src: &[u8], dst: &mut [u8]) -> Result<()> {
    dctx.decompress(&Chunk::from_slice(src), dst, None)
}

#[cfg(test)]
mod tests {
    use super::{check_decodable, chunk_typesize, inflate_whole, regroup, CCtx, CParams, Compression};
    use crate::codec::{self, filter};
    use crate::store::chunk_header::typesize_fits;

    fn shuffle(ts: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / ts;
        let mut out = src.to_vec();
        for j in 0..ts {
            for i in 0..n {
                out[j * n + i] = src[i * ts + j];
            }
        }
        out
    }

    fn unshuffle(ts: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / ts;
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..ts {
                out[i * ts + j] = src[j * n + i];
            }
        }
        out
    }

    /// A block shuffled by `group` bytes (newer c-blosc2), unshuffled by
    /// the typesize (c-blosc2 2.15), comes back whole after `regroup`,
    /// tails past the last whole group included.
    #[test]
    fn regroup_undoes_a_shuffle_by_groups() {
        for (typesize, group, len) in [(1, 4, 400), (20, 4, 200), (20, 4, 213), (28, 4, 1000), (8, 2, 77), (3, 5, 64)] {
            let block: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let mut got = unshuffle(typesize, &shuffle(group, &block));
            regroup(&mut got, typesize, group, &mut Vec::new());
            assert_eq!(got, block, "typesize {typesize}, group {group}, {len} bytes");
        }
    }

    /// c-blosc2 2.15 stores data it cannot compress as a copy and, with
    /// `use_dict`, left the dictionary flag set: python-blosc2 (c-blosc2
    /// 3.x) then fails on the chunk, and our frame check refused it.
    #[test]
    fn a_copied_chunk_carries_no_dictionary_flag() {
        let cp = CParams { codec: codec::ZSTD, use_dict: true, ..CParams::default() };
        let mut cctx = CCtx::new(&Compression::plain(cp), 4, 4000, 1).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..40_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let chunk = cctx.compress(&noise).unwrap();
        assert_ne!(chunk[2] & 0x02, 0, "incompressible data is stored as a copy");
        assert_eq!(chunk[31] & 0x01, 0, "a copy has no dictionary");
        assert_eq!(inflate_whole(&chunk, noise.len()).unwrap(), noise);
        // Data it compresses keeps its dictionary.
        let smooth: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 7).to_le_bytes()).take(40_000).collect();
        let chunk = cctx.compress(&smooth).unwrap();
        assert_eq!(chunk[31] & 0x01, 0x01);
        assert_eq!(inflate_whole(&chunk, smooth.len()).unwrap(), smooth);
    }

    /// A chunk header with codec `format`/`udcodec`, `filters` and Blosc2 flags `flags2`.
    fn header(format: u8, udcodec: u8, filters: [u8; 6], flags2: u8) -> Vec<u8> {
        let mut h = vec![0u8; 32];
        h[0] = 5;
        h[2] = 0x05 | (format << 5);
        h[16..22].copy_from_slice(&filters);
        h[22] = udcodec;
        h[31] = flags2;
        h
    }

    /// c-blosc2 3.x's repeated value wider than a header's typesize: the
    /// whole value follows the header, cbytes gives its width, typesize
    /// says 1. c-blosc2 2.15 would repeat its first byte.
    #[test]
    fn a_wide_repeated_value_fills_the_chunk() {
        let value: Vec<u8> = (1..=6).collect();
        let mut chunk = vec![0u8; 32];
        chunk[..4].copy_from_slice(&[5, 1, 0x05, 1]);
        chunk[4..8].copy_from_slice(&24i32.to_le_bytes()); // nbytes: 4 items
        chunk[8..12].copy_from_slice(&12i32.to_le_bytes()); // blocksize: 2 items
        chunk[12..16].copy_from_slice(&38i32.to_le_bytes()); // cbytes: header + value
        chunk[31] = (blosc2_sys::BLOSC2_SPECIAL_VALUE as u8) << 4;
        chunk.extend_from_slice(&value);
        assert_eq!(inflate_whole(&chunk, 24).unwrap(), value.repeat(4));
        let mut block = vec![0u8; 12];
        let mut dctx = super::DCtx::new(1).unwrap();
        dctx.decompress_block(&super::Chunk::from_slice(&chunk), 1, &mut block).unwrap();
        assert_eq!(block, value.repeat(2));
        // A value that does not divide the chunk is refused.
        chunk[12..16].copy_from_slice(&37i32.to_le_bytes());
        chunk.pop();
        assert!(inflate_whole(&chunk, 24).is_err());
    }

    #[test]
    fn undecodable_features_are_named() {
        let refused = |h: &[u8]| check_decodable(h).unwrap_err().to_string();
        let shuffle = [0, 0, 0, 0, 0, filter::SHUFFLE];
        assert!(check_decodable(&header(4, 5, shuffle, 0)).is_ok());
        assert!(check_decodable(&header(6, codec::ZSTD, shuffle, 1)).is_ok());
        assert!(refused(&header(6, 32, shuffle, 0)).contains("codec NDLZ (id 32"));
        assert!(refused(&header(6, 35, shuffle, 0)).contains("codec ZFP_RATE (id 35"));
        assert!(refused(&header(6, 99, shuffle, 0)).contains("codec id 99"));
        assert!(refused(&header(0, 0, [1, 35, 0, 0, 0, 0], 0)).contains("filter BYTEDELTA (id 35"));
        assert!(refused(&header(0, 0, [0, 0, 0, 0, 0, 100], 0)).contains("filter id 100"));
        // The caller's own filters (160 and up) are c-blosc2's to run or to
        // fail on ("not found"); its own codecs decode once registered
        // (ctests/test_hardening.c round-trips through both), an
        // unregistered one is refused.
        assert!(check_decodable(&header(0, 0, [0, 0, 0, 0, 0, 200], 0)).is_ok());
        assert!(refused(&header(6, 200, shuffle, 0)).contains("codec id 200"));
        assert!(refused(&header(1, 1, shuffle, 1)).contains("dictionary with codec LZ4/LZ4HC"));
        assert!(refused(&header(6, codec::LZ4HC, shuffle, 1)).contains("dictionary with codec LZ4/LZ4HC"));
        // A special chunk (zeros) decodes whatever its codec fields say.
        assert!(check_decodable(&header(6, 32, shuffle, 0x10)).is_ok());
        let mut v6 = header(4, 5, shuffle, 0);
        v6[0] = 6;
        assert!(refused(&v6).contains("chunk format version 6 (variable-length blocks"));
    }

    #[test]
    fn chunk_typesizes_divide_the_item() {
        for itemsize in [1, 8, 255, 256, 300, 400, 509, 1021 * 3, 1 << 20] {
            let t = chunk_typesize(itemsize);
            assert!((1..=255).contains(&t) && itemsize % t == 0 && typesize_fits(itemsize, t), "{itemsize}: {t}");
        }
        assert_eq!(chunk_typesize(400), 200);
        assert!(typesize_fits(400, 1) && !typesize_fits(400, 3) && !typesize_fits(8, 1) && typesize_fits(8, 8));
    }
}
