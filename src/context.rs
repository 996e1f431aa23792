//! A context: compression settings and the thread budget, with the worker
//! pool that spends it. Cheap to clone; arrays keep a clone, so a context may
//! be dropped (or `caterva_ctx_free`d) while its arrays live on.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::schunk::CParams;

/// Settings shared by the arrays made with a context.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// How chunks are compressed.
    pub cparams: CParams,
    /// Total threads an operation may use (chunk workers × blosc threads).
    pub nthreads: usize,
    /// Keep per-chunk checksums in the arrays this context creates (see
    /// [`crate::checksum`]). Arrays that already keep them always do.
    pub checksums: bool,
}

impl Default for Config {
    /// The defaults of `CATERVA_CONFIG_DEFAULTS`: ZSTD level 5, shuffle, one thread.
    fn default() -> Self {
        Config { cparams: CParams::default(), nthreads: 1, checksums: false }
    }
}

struct Inner {
    config: Config,
    pool: rayon::ThreadPool,
    workers: crate::engine::WorkerPool,
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
    /// threads or an unknown split mode; [`Error::Io`] if no thread can be started.
    pub fn new(config: Config) -> Result<Self> {
        let cp = &config.cparams;
        if cp.clevel > 9 {
            return Err(Error::InvalidArgument(format!("complevel {} is not in 0..=9", cp.clevel)));
        }
        if !(1..=4).contains(&cp.splitmode) {
            return Err(Error::InvalidArgument(format!("splitmode {} is not a BLOSC_*_SPLIT value", cp.splitmode)));
        }
        if config.nthreads == 0 || config.nthreads > i16::MAX as usize {
            return Err(Error::InvalidArgument(format!("nthreads {} is not in 1..=32767", config.nthreads)));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.nthreads)
            .thread_name(|i| format!("caterva-{i}"))
            .build()
            .map_err(|e| Error::Io(format!("cannot start worker threads: {e}")))?;
        Ok(Context { inner: Arc::new(Inner { config, pool, workers: crate::engine::WorkerPool::default() }) })
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.inner.config
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

    /// The engine's idle workers (contexts and scratch buffers kept between calls).
    pub(crate) fn workers(&self) -> &crate::engine::WorkerPool {
        &self.inner.workers
    }

    /// Run `f` (which may use rayon's parallel iterators) on this context's pool.
    pub(crate) fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.inner.pool.install(f)
    }
}
