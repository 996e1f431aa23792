//! A context: compression settings and the thread budget, with the worker
//! pool that spends it. Cheap to clone; arrays keep a clone, so a context may
//! be dropped (or `caterva_ctx_free`d) while its arrays live on. A context
//! made before a `fork()` works in the child too: its threads and cached
//! Blosc2 contexts are per process ([`crate::fork`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::blosc2::{CCtx, CParams, Compression, DCtx, Filter, Prefilter};
use crate::codec::{self, filter};
use crate::error::{Error, Result};
use crate::fork::PerProcess;
use crate::geometry::Geometry;
pub use crate::store::Durability;

/// Settings shared by the arrays made with a context.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// How chunks are compressed.
    pub cparams: CParams,
    /// Total threads an operation may use (chunk workers × blosc threads).
    pub nthreads: usize,
    /// Keep per-chunk checksums in the arrays this context creates (see
    /// [`crate::Array::has_checksums`]). Arrays that already keep them always do.
    pub checksums: bool,
    /// Require integrity: an array opened or wrapped with this context
    /// ([`crate::Array::open`], [`crate::Array::from_cframe`], C's
    /// `caterva_from_schunk`…) must keep a sound checksum table, or it is
    /// refused with [`crate::Error::Corrupt`]. Arrays this context creates
    /// keep checksums, as with [`Config::checksums`].
    pub require_checksums: bool,
    /// Bytes of decompressed blocks each array handle made with this
    /// context may keep for later reads (0: none; then the environment
    /// variable `CATERVA_BLOCK_CACHE`, e.g. `256M`, decides). Repeated and
    /// neighbouring region reads (a viewer panning over a plane, a stencil)
    /// find their blocks there; a write through the handle empties it.
    pub block_cache: usize,
    /// What the writes of arrays made or opened with this context survive
    /// (see [`Durability`]); a handle may change it ([`crate::Array::set_durability`]).
    pub durability: Durability,
}

impl Config {
    /// Whether arrays created with these settings keep checksums.
    pub(crate) fn wants_checksums(&self) -> bool {
        self.checksums || self.require_checksums
    }
}

impl Default for Config {
    /// The defaults of `CATERVA_CONFIG_DEFAULTS`: ZSTD level 5, shuffle, one
    /// thread; no checksums asked for or required; [`Durability::Full`].
    fn default() -> Self {
        Config {
            cparams: CParams::default(),
            nthreads: 1,
            checksums: false,
            require_checksums: false,
            block_cache: 0,
            durability: Durability::Full,
        }
    }
}

struct Inner {
    config: Config,
    /// `config.cparams` with the C caller's prefilter, if any.
    compression: Compression,
    /// The worker threads of the process that uses the context: a forked
    /// child starts its own on first use (see [`crate::fork`]).
    threads: PerProcess<Threads>,
    /// The engine's idle workers, per process too: a parent's hold Blosc2
    /// contexts whose threads a child does not have.
    workers: PerProcess<WorkerPool>,
}

/// A rayon pool of `nthreads` workers and their threads.
struct Threads {
    /// Always `Some` until dropped.
    pool: Option<rayon::ThreadPool>,
    /// The pool's threads, joined when it goes.
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Threads {
    fn start(nthreads: usize) -> Result<Self> {
        let handles = Mutex::new(Vec::with_capacity(nthreads));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(nthreads)
            .spawn_handler(|t| {
                let name = format!("caterva-{}", t.index());
                let handle = std::thread::Builder::new().name(name).spawn(|| t.run())?;
                handles.lock().unwrap_or_else(PoisonError::into_inner).push(handle);
                Ok(())
            })
            .build()
            .map_err(|e| Error::io("starting worker threads", None, &std::io::Error::other(e.to_string())))?;
        Ok(Threads { pool: Some(pool), handles })
    }
}

impl Drop for Threads {
    /// Stop the pool and wait for its threads to end, so that no thread of
    /// a freed context outlives `caterva_ctx_free` (or the last array made
    /// with it): a library may be unloaded, or a leak checker run, next.
    /// (Only the process that started them gets here: [`PerProcess`] leaks
    /// a parent's pool in a forked child.)
    fn drop(&mut self) {
        let Some(pool) = self.pool.take() else { return };
        // The last reference dropped by one of the pool's own jobs cannot wait for itself.
        let inside = pool.current_thread_index().is_some();
        drop(pool);
        if !inside {
            let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(PoisonError::into_inner));
            for t in handles {
                // A worker that panicked has nothing left to clean up.
                let _ = t.join();
            }
            forget_joined_threads();
        }
    }
}

/// Have crossbeam-epoch free what it keeps of threads that have ended.
///
/// rayon's work-stealing deques use crossbeam-epoch, which registers each
/// thread that uses them in one process-wide list. A thread that ends only
/// marks its entry deleted, as a tag in the low bit of the link that leads
/// to the next entry: until another thread walks the list, the entries of
/// ended threads stay allocated, reached only through those tagged links,
/// which valgrind's leak check reports as "possibly lost" if the process
/// exits then (every such entry but the newest, about 2 KiB each). Walking
/// the list unlinks them and defers their release; a few pin-and-flush
/// rounds move the epoch on (which the calling thread alone being pinned
/// allows) and run the deferred frees. The calling thread gets an entry of
/// its own, kept while it lives. (Best effort: threads pinned elsewhere,
/// such as another context's busy workers, may hold the epoch back; what
/// is left is then freed by the next walk.)
fn forget_joined_threads() {
    for _ in 0..4 {
        crossbeam_epoch::pin().flush();
    }
}

/// Compression settings plus a private thread pool of `nthreads` workers
/// (never the application's global rayon pool).
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("config", &self.inner.config).finish()
    }
}

impl Context {
    /// Validate `config` and start its pool.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a compression level above 9, zero
    /// threads, or a codec or filter c-blosc2 cannot run (an id it does not
    /// ship below 32, or a plugin id nothing is registered under);
    /// [`Error::Io`] if no thread can be started.
    pub fn new(config: Config) -> Result<Self> {
        Self::with_prefilter(config, None)
    }

    /// [`Context::new`] with a C caller's Blosc2 prefilter.
    pub(crate) fn with_prefilter(config: Config, prefilter: Option<Prefilter>) -> Result<Self> {
        let cp = &config.cparams;
        check_clevel(cp.clevel)?;
        if config.nthreads == 0 || config.nthreads > i16::MAX as usize {
            return Err(Error::InvalidArgument(format!("nthreads {} is not in 1..=32767", config.nthreads)));
        }
        check_pipeline(cp)?;
        let threads = PerProcess::new(Threads::start(config.nthreads)?);
        let workers = PerProcess::new(WorkerPool::default());
        let compression = Compression { cparams: config.cparams, prefilter };
        Ok(Context { inner: Arc::new(Inner { config, compression, threads, workers }) })
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Bytes of block cache per array handle: [`Config::block_cache`], or
    /// `CATERVA_BLOCK_CACHE` when that is 0.
    pub(crate) fn block_cache_bytes(&self) -> usize {
        match self.inner.config.block_cache {
            0 => crate::cache::from_env(),
            n => n,
        }
    }

    /// Total thread budget.
    #[must_use]
    pub fn nthreads(&self) -> usize {
        self.inner.config.nthreads
    }

    /// Compression parameters.
    #[must_use]
    pub fn cparams(&self) -> &CParams {
        &self.inner.config.cparams
    }

    /// How chunks are compressed: the parameters and the prefilter.
    pub(crate) fn compression(&self) -> &Compression {
        &self.inner.compression
    }

    /// This process's idle workers of the engine (contexts and scratch
    /// buffers kept between calls).
    pub(crate) fn workers(&self) -> &WorkerPool {
        self.inner.workers.get(WorkerPool::default)
    }

    /// Run `f` on the calling thread with a scope whose spawned jobs run on
    /// this context's pool (in a forked child, on a pool of its own, started
    /// by the first call): the caller works beside the pool instead of
    /// handing all the work over and waiting.
    ///
    /// # Errors
    /// [`Error::Io`] if a forked child cannot start its threads.
    pub(crate) fn scope<'s, R>(&self, f: impl for<'a> FnOnce(&'a rayon::Scope<'s>) -> R) -> Result<R> {
        Ok(self.pool()?.in_place_scope(f))
    }

    fn pool(&self) -> Result<&rayon::ThreadPool> {
        let threads = self.inner.threads.try_get(|| Threads::start(self.inner.config.nthreads))?;
        Ok(threads.pool.as_ref().expect("the pool lives as long as its Threads"))
    }
}

/// Refuse a compression level above 9 (the first check of [`Context::new`]).
pub(crate) fn check_clevel(clevel: u8) -> Result<()> {
    if clevel > 9 {
        return Err(Error::InvalidArgument(format!("complevel {clevel} is not in 0..=9")));
    }
    Ok(())
}

/// Ids from this one up name plugins: codecs and filters registered with
/// c-blosc2 at run time (`blosc2_register_codec`, `blosc2_register_filter`).
const FIRST_PLUGIN: u8 = 32;

/// Refuse a codec or filter that c-blosc2 cannot run, when the context is
/// made rather than at the first compression: an id below
/// [`FIRST_PLUGIN`] that c-blosc2 does not ship, or a plugin id with which
/// a trial compression fails (nothing registered under it).
fn check_pipeline(cp: &CParams) -> Result<()> {
    // By id: a hand-made `Other` with a named one's id runs as that one.
    let (codec_id, filter_ids) = (cp.codec.id(), cp.filters.map(Filter::id));
    if codec_id < FIRST_PLUGIN && codec::name(codec_id).is_none() {
        return Err(Error::InvalidArgument(format!("codec {codec_id} is not a Blosc2 codec")));
    }
    if let Some(f) = filter_ids.iter().find(|&&f| f < FIRST_PLUGIN && filter::describe(f, 0).is_none()) {
        return Err(Error::InvalidArgument(format!("filter {f} is not a Blosc2 filter")));
    }
    // c-blosc2 2.15 trains dictionaries for ZSTD alone and fails any other
    // codec at the first chunk with a bare BLOSC2_ERROR_CODEC_DICT
    // (`blosc2_compress_ctx`).
    if cp.use_dict && codec_id != codec::ZSTD {
        return Err(Error::InvalidArgument(format!(
            "use_dict with codec {}: c-blosc2 {} has dictionaries for ZSTD only; choose zstd or turn use_dict off",
            cp.codec,
            crate::blosc2::blosc2_version()
        )));
    }
    let plugins = std::iter::once(codec_id).chain(filter_ids).any(|id| id >= FIRST_PLUGIN);
    if !plugins {
        return Ok(());
    }
    // Data no codec skips: not zeros (a special chunk), not too short to compress.
    let data: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 % 7).collect();
    let comp = Compression::plain(*cp);
    let tried = CCtx::new(&comp, 8, 0, 1).and_then(|mut c| c.compress(&data));
    tried.map(drop).map_err(|e| {
        Error::InvalidArgument(format!(
            "codec {} with filters {:?}: c-blosc2 cannot compress with them ({}); a plugin id (32 and up) \
             must be registered with blosc2_register_codec or blosc2_register_filter first",
            codec_id,
            filter_ids,
            e.message()
        ))
    })
}

// The engine's workers (codecs and scratch), which a context keeps idle
// between calls: here, so that the context owns them without importing the
// engine.

/// Per-worker state: codecs and scratch buffers, two objects so that a task
/// borrows a codec and a buffer at once. Workers are kept by their
/// [`Context`] between calls ([`WorkerPool`]), so a small read neither
/// creates Blosc2 contexts nor touches a fresh chunk-sized buffer.
#[derive(Default)]
pub(crate) struct Worker {
    pub(crate) codecs: Codecs,
    pub(crate) bufs: Buffers,
}

/// A worker's Blosc2 contexts, made on first use and kept while they fit.
#[derive(Default)]
pub(crate) struct Codecs {
    /// Decompression contexts by thread count, most recently used first.
    pub(crate) dctx: Vec<(usize, DCtx)>,
    /// Compression contexts, likewise.
    cctx: Vec<(CctxKey, CCtx)>,
    /// Compressed bytes read from a file
    /// ([`Store::chunk_for`](crate::store::Store::chunk_for)), kept between
    /// reads so that a read allocates and zero-fills nothing.
    pub(crate) compressed: Vec<u8>,
    /// The same for the chunks of a read done a block per task (the
    /// engine's `read_blocks`).
    pub(crate) fetched: Vec<Vec<u8>>,
}

/// A worker's scratch buffers.
#[derive(Default)]
pub(crate) struct Buffers {
    /// A decompressed chunk (block layout).
    pub(crate) scratch: Vec<u8>,
    /// A chunk being built (block layout).
    pub(crate) out: Vec<u8>,
    /// A C-order staging box.
    pub(crate) stage: Vec<u8>,
    /// One decompressed block.
    pub(crate) block: Vec<u8>,
}

/// What a compression context was made for; another array (item size,
/// block size) or thread count needs another one.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CctxKey {
    comp: Compression,
    typesize: usize,
    blocksize: usize,
    nthreads: usize,
}

impl CctxKey {
    fn new(comp: &Compression, geom: &Geometry, nthreads: usize) -> Self {
        CctxKey { comp: *comp, typesize: geom.itemsize(), blocksize: geom.block_nbytes(), nthreads }
    }
}

/// The idle [`Worker`]s of a context, in the process that uses it (a
/// forked child gets an empty one: see [`Context::workers`]).
#[derive(Default)]
pub(crate) struct WorkerPool {
    idle: std::sync::Mutex<Vec<Worker>>,
}

impl WorkerPool {
    pub(crate) fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        // A panic while holding the lock leaves a plain Vec behind: still valid.
        self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How many Blosc2 contexts of each kind a worker keeps. A context with
/// threads keeps them (idle) while it lives, and a job's
/// [`Split`](crate::engine::Split) picks one of a few thread counts, so a
/// handful covers the jobs that alternate.
const KEPT_CONTEXTS: usize = 3;

/// The context for `key` among `kept` (most recently used first), made by
/// `make` when missing; the least recently used one goes when too many.
pub(crate) fn kept<K: PartialEq + Copy, V>(
    kept: &mut Vec<(K, V)>,
    key: K,
    make: impl FnOnce() -> Result<V>,
) -> Result<&mut V> {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(i) => kept[..=i].rotate_right(1),
        None => {
            kept.insert(0, (key, make()?));
            kept.truncate(KEPT_CONTEXTS);
        }
    }
    Ok(&mut kept[0].1)
}

impl Codecs {
    pub(crate) fn cctx(&mut self, comp: &Compression, geom: &Geometry, nthreads: usize) -> Result<&mut CCtx> {
        kept(&mut self.cctx, CctxKey::new(comp, geom, nthreads), || {
            CCtx::new(comp, geom.itemsize(), geom.block_nbytes(), nthreads)
        })
    }

    /// Compress `chunk` (a whole chunk of `geom`, block layout).
    pub(crate) fn compress(
        &mut self,
        comp: &Compression,
        geom: &Geometry,
        chunk: &[u8],
        nthreads: usize,
    ) -> Result<Vec<u8>> {
        self.cctx(comp, geom, nthreads)?.compress(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blosc2::Codec;

    #[test]
    fn dictionaries_are_for_zstd_only() {
        for codec in [Codec::Lz4, Codec::Lz4hc, Codec::BloscLz, Codec::Zlib] {
            let cparams = CParams { codec, use_dict: true, ..CParams::default() };
            let e = Context::new(Config { cparams, ..Config::default() }).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{e}");
            let text = e.to_string();
            assert!(text.contains(&format!("use_dict with codec {codec}")) && text.contains("ZSTD only"), "{text}");
            assert!(!text.contains("blosc2 error"), "{text}");
        }
        let cparams = CParams { codec: Codec::Zstd, use_dict: true, ..CParams::default() };
        assert!(Context::new(Config { cparams, ..Config::default() }).is_ok());
    }
}
