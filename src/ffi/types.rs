//! The user-visible structs, laid out exactly as caterva 0.5's (ABI.md), and
//! their conversions to the Rust core's types.

use std::ffi::{c_char, c_int, c_void};

use blosc2_sys::{blosc2_prefilter_fn, blosc2_prefilter_params, blosc2_schunk};

use super::{handles, slice, slots, string, CATERVA_MAX_DIM, CATERVA_MAX_METALAYERS};
use crate::array::{Array, Metalayer, Params, StorageParams};
use crate::blosc2::{split_mode, CParams, Codec, Filter, Prefilter};
use crate::context::{check_clevel, Config, Context, Durability};
use crate::error::{invalid, Error, Result};
use crate::geometry::{c_strides, MAX_DIM};

/// Configuration of a context (`CATERVA_CONFIG_DEFAULTS` gives the defaults).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct caterva_config_t {
    /// Allocator for buffers handed to the user (kept for compatibility; the
    /// library's own outputs use `malloc`, to be released with `free`).
    pub alloc: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    /// The matching free.
    pub free: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Blosc codec (`BLOSC_ZSTD`, …).
    pub compcodec: u8,
    /// Codec meta.
    pub compmeta: u8,
    /// Compression level, 0..=9.
    pub complevel: u8,
    /// Split mode (`BLOSC_*_SPLIT`).
    pub splitmode: i32,
    /// Use a dictionary (non-zero).
    pub usedict: c_int,
    /// Total threads an operation may use.
    pub nthreads: i16,
    /// Filter pipeline.
    pub filters: [u8; 6],
    /// Filter metas.
    pub filtersmeta: [u8; 6],
    /// Blosc2 prefilter.
    pub prefilter: blosc2_prefilter_fn,
    /// Prefilter parameters.
    pub pparams: *mut blosc2_prefilter_params,
    /// Formerly `blosc2_btune *`; unused.
    pub udbtune: *mut c_void,
}

/// A context: holds a copy of the configuration.
#[repr(C)]
pub struct caterva_ctx_t {
    /// The configuration (owned by the context).
    pub cfg: *mut caterva_config_t,
}

/// A metalayer: a name and its bytes.
#[repr(C)]
pub struct caterva_metalayer_t {
    /// NUL-terminated name.
    pub name: *mut c_char,
    /// Content.
    pub sdata: *mut u8,
    /// Content length in bytes.
    pub size: i32,
}

/// Partitions and location of a new array.
#[repr(C)]
pub struct caterva_storage_t {
    /// Chunk shape (first `ndim` entries used).
    pub chunkshape: [i32; CATERVA_MAX_DIM],
    /// Block shape (first `ndim` entries used).
    pub blockshape: [i32; CATERVA_MAX_DIM],
    /// Contiguous frame (true) or sparse frame (false).
    pub contiguous: bool,
    /// File or directory path; NULL keeps the array in memory.
    pub urlpath: *mut c_char,
    /// User metalayers added at creation.
    pub metalayers: [caterva_metalayer_t; CATERVA_MAX_METALAYERS],
    /// How many entries of `metalayers` are used.
    pub nmetalayers: i32,
}

/// Item size and shape of a new array.
#[repr(C)]
pub struct caterva_params_t {
    /// Bytes per item.
    pub itemsize: u8,
    /// Shape (first `ndim` entries used).
    pub shape: [i64; CATERVA_MAX_DIM],
    /// Number of dimensions, 0..=8.
    pub ndim: i8,
}

/// Kept for layout compatibility: the original's single-chunk read cache
/// (never used by this library; `data` is NULL and `nchunk` -1).
#[repr(C)]
pub struct chunk_cache_s {
    /// Always NULL.
    pub data: *mut u8,
    /// Always -1.
    pub nchunk: i64,
}

/// An array. Allocated only by the library; the fields are read-only for
/// users and always describe the array's current state.
#[repr(C)]
pub struct caterva_array_t {
    /// The array's configuration.
    pub cfg: *mut caterva_config_t,
    /// The Blosc2 super-chunk holding the data (owned by the array).
    pub sc: *mut blosc2_schunk,
    /// Shape (1 past `ndim`).
    pub shape: [i64; CATERVA_MAX_DIM],
    /// Chunk shape.
    pub chunkshape: [i32; CATERVA_MAX_DIM],
    /// Shape rounded up to whole chunks.
    pub extshape: [i64; CATERVA_MAX_DIM],
    /// Block shape.
    pub blockshape: [i32; CATERVA_MAX_DIM],
    /// Chunk shape rounded up to whole blocks.
    pub extchunkshape: [i64; CATERVA_MAX_DIM],
    /// Items in the array.
    pub nitems: i64,
    /// Items in a chunk.
    pub chunknitems: i32,
    /// Items in the extended array.
    pub extnitems: i64,
    /// Items in a block.
    pub blocknitems: i32,
    /// Items in an extended chunk.
    pub extchunknitems: i64,
    /// Number of dimensions.
    pub ndim: i8,
    /// Bytes per item.
    pub itemsize: u8,
    /// Number of chunks.
    pub nchunks: i64,
    /// Unused (layout compatibility).
    pub chunk_cache: chunk_cache_s,
    /// C-order strides of the array, in items.
    pub item_array_strides: [i64; CATERVA_MAX_DIM],
    /// C-order strides of a chunk, in items.
    pub item_chunk_strides: [i64; CATERVA_MAX_DIM],
    /// C-order strides of an extended chunk, in items.
    pub item_extchunk_strides: [i64; CATERVA_MAX_DIM],
    /// C-order strides of a block, in items.
    pub item_block_strides: [i64; CATERVA_MAX_DIM],
    /// Strides of the block grid inside a chunk, in blocks.
    pub block_chunk_strides: [i64; CATERVA_MAX_DIM],
    /// Strides of the chunk grid, in chunks.
    pub chunk_array_strides: [i64; CATERVA_MAX_DIM],
}

/// The allocation behind a `caterva_ctx_t *`: the public struct first.
#[repr(C)]
pub(crate) struct CtxBox {
    pub(crate) public: caterva_ctx_t,
    cfg: caterva_config_t,
    pub(crate) ctx: Context,
}

impl CtxBox {
    pub(crate) fn create(cfg: &caterva_config_t) -> Result<*mut caterva_ctx_t> {
        let (config, prefilter) = config_from_c(cfg)?;
        let ctx = Context::with_prefilter(config, prefilter)?;
        let b = slots::alloc(CtxBox { public: caterva_ctx_t { cfg: std::ptr::null_mut() }, cfg: *cfg, ctx });
        // SAFETY: b was just allocated; pointing the public field at the box's
        // own cfg is fine because the box never moves.
        unsafe { (*b).public.cfg = &mut (*b).cfg };
        handles::add_ctx(b);
        Ok(b.cast())
    }

    /// The context behind `p`, checked: NULL, a pointer that is not a live
    /// context (freed, or a struct the caller made) and a NULL `ctx->cfg`
    /// are errors.
    ///
    /// # Safety
    /// A live context must not be freed by another thread during the call.
    pub(crate) unsafe fn get<'a>(p: *const caterva_ctx_t) -> Result<&'a CtxBox> {
        handles::check_ctx(p, "ctx")?;
        // SAFETY: p is a live CtxBox (registry); the public struct is its first field.
        let c = unsafe { &*p.cast::<CtxBox>() };
        if c.public.cfg.is_null() {
            return Err(Error::NullPointer("ctx->cfg is NULL".into()));
        }
        Ok(c)
    }

    /// The configuration `ctx->cfg` points at (the context's own copy unless
    /// the caller pointed it elsewhere).
    pub(crate) fn config(&self) -> &caterva_config_t {
        // SAFETY: checked non-NULL by `get`, the only way to a &CtxBox; it
        // points at the box's own cfg or at a config of the caller's.
        unsafe { &*self.public.cfg }
    }

    /// Free the context in `*slot` (nothing if it is NULL) and set it to NULL.
    ///
    /// # Errors
    /// `InvalidArgument` if `*slot` is not a live context (a double free);
    /// `*slot` is then left alone.
    ///
    /// # Safety
    /// No other thread may use the context during the call.
    pub(crate) unsafe fn free(slot: &mut *mut caterva_ctx_t) -> Result<()> {
        if slot.is_null() {
            return Ok(());
        }
        handles::remove_ctx(*slot, "*ctx")?;
        // SAFETY: *slot was live, so it came from slots::alloc in `create`.
        unsafe { slots::free(slot.cast::<CtxBox>()) };
        *slot = std::ptr::null_mut();
        Ok(())
    }
}

/// The allocation behind a `caterva_array_t *`: the public struct first, the
/// Rust array after it.
#[repr(C)]
pub(crate) struct ArrayBox {
    pub(crate) public: caterva_array_t,
    cfg: caterva_config_t,
    pub(crate) array: Array,
}

impl ArrayBox {
    /// Box an array for C; `cfg` is the configuration its context was made from.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for items of more than 255 bytes (python-blosc2
    /// writes them; the Rust and Python APIs read them), which
    /// `caterva_array_t.itemsize` (a `uint8_t`) cannot describe.
    pub(crate) fn into_raw(array: Array, cfg: &caterva_config_t) -> Result<*mut caterva_array_t> {
        if array.itemsize() > usize::from(u8::MAX) {
            return Err(Error::InvalidArgument(format!(
                "the array's items have {} bytes; caterva_array_t.itemsize (uint8_t) holds at most 255: \
                 read it with the Rust or Python API",
                array.itemsize()
            )));
        }
        // SAFETY: all-zero is a valid caterva_array_t (integers, NULL pointers).
        let public: caterva_array_t = unsafe { std::mem::zeroed() };
        let b = slots::alloc(ArrayBox { public, cfg: *cfg, array });
        // SAFETY: b was just allocated and is exclusively ours.
        unsafe {
            (*b).public.cfg = &mut (*b).cfg;
            (*b).sync();
        }
        Ok(b.cast())
    }

    /// The array behind `p`, for a call that changes it: NULL and pointers
    /// that are not live arrays are errors.
    ///
    /// # Safety
    /// No other thread may use the array during the call (writers need
    /// exclusive access).
    pub(crate) unsafe fn get<'a>(p: *mut caterva_array_t) -> Result<&'a mut ArrayBox> {
        handles::check_array(p, "array")?;
        // SAFETY: p is a live ArrayBox (registry), the public struct is its
        // first field, and the caller has exclusive access.
        Ok(unsafe { &mut *p.cast::<ArrayBox>() })
    }

    /// The array behind `p`, for a call that only reads it (any number of
    /// threads may read one array at once).
    ///
    /// # Safety
    /// No other thread may change or free the array during the call.
    pub(crate) unsafe fn get_ref<'a>(p: *const caterva_array_t, what: &str) -> Result<&'a ArrayBox> {
        handles::check_array(p, what)?;
        // SAFETY: p is a live ArrayBox (registry); nobody changes it meanwhile.
        Ok(unsafe { &*p.cast::<ArrayBox>() })
    }

    /// Free the array in `*slot` (nothing if it is NULL) and set it to NULL.
    ///
    /// # Errors
    /// `InvalidArgument` if `*slot` is not a live array (a double free);
    /// `*slot` is then left alone.
    ///
    /// # Safety
    /// No other thread may use the array during the call.
    pub(crate) unsafe fn free(slot: &mut *mut caterva_array_t) -> Result<()> {
        if slot.is_null() {
            return Ok(());
        }
        handles::remove_array(*slot, "*array")?;
        // SAFETY: *slot was live, so it came from slots::alloc in `into_raw`.
        unsafe { slots::free(slot.cast::<ArrayBox>()) };
        *slot = std::ptr::null_mut();
        Ok(())
    }

    /// Refresh every public field from the core. Called after each change.
    pub(crate) fn sync(&mut self) {
        let g = self.array.geometry();
        let n = g.ndim();
        handles::set_array(&self.public, self.array.store().as_ptr());
        let p = &mut self.public;
        p.sc = self.array.store().as_ptr();
        p.shape = g.shape_full();
        p.chunkshape = g.chunkshape_full();
        p.blockshape = g.blockshape_full();
        p.extshape = g.extshape();
        p.extchunkshape = g.extchunkshape();
        p.nitems = g.nitems();
        p.chunknitems = g.chunk_nitems() as i32;
        p.extnitems = g.extnitems();
        p.blocknitems = g.block_nitems() as i32;
        p.extchunknitems = p.extchunkshape[..n].iter().product();
        p.ndim = n as i8;
        p.itemsize = g.itemsize() as u8;
        p.nchunks = g.nchunks();
        p.chunk_cache = chunk_cache_s { data: std::ptr::null_mut(), nchunk: -1 };
        let widen = |v: &[i32]| -> [i64; MAX_DIM] {
            let mut o = [1i64; MAX_DIM];
            for (o, &x) in o.iter_mut().zip(v) {
                *o = i64::from(x);
            }
            o
        };
        let ratio = |a: &[i64; MAX_DIM], b: &[i64; MAX_DIM]| -> [i64; MAX_DIM] {
            let mut o = [0i64; MAX_DIM];
            for i in 0..MAX_DIM {
                o[i] = if b[i] == 0 { 0 } else { a[i] / b[i] };
            }
            o
        };
        let chunk = widen(&p.chunkshape);
        let block = widen(&p.blockshape);
        p.item_array_strides = c_strides(&p.shape[..n]);
        p.item_chunk_strides = c_strides(&chunk[..n]);
        p.item_extchunk_strides = c_strides(&p.extchunkshape[..n]);
        p.item_block_strides = c_strides(&block[..n]);
        p.block_chunk_strides = c_strides(&ratio(&p.extchunkshape, &block)[..n]);
        p.chunk_array_strides = c_strides(&ratio(&p.extshape, &chunk)[..n]);
    }
}

/// The Rust configuration of a C one, checked: `alloc` and `free` must be
/// set (callers use `ctx->cfg->alloc` and `free`), `nthreads` must be
/// positive and `splitmode` a `BLOSC_*_SPLIT` value, the one number a
/// [`CParams`] cannot hold otherwise (the level, codec and filters are
/// checked by [`Context::new`]).
pub(crate) fn config_from_c(cfg: &caterva_config_t) -> Result<(Config, Option<Prefilter>)> {
    if cfg.alloc.is_none() || cfg.free.is_none() {
        return Err(Error::NullPointer("cfg->alloc and cfg->free must both be set".into()));
    }
    if cfg.nthreads < 1 {
        invalid!("nthreads {} must be at least 1", cfg.nthreads);
    }
    let splitmode = match split_mode(cfg.splitmode) {
        Ok(mode) => mode,
        Err(e) => {
            // Context::new checks the level first, then the rest: the level's
            // error wins, as it did while Context::new checked the split mode.
            check_clevel(cfg.complevel)?;
            return Err(e);
        }
    };
    let config = Config {
        cparams: CParams {
            codec: Codec::from_id(cfg.compcodec),
            codec_meta: cfg.compmeta,
            clevel: cfg.complevel,
            use_dict: cfg.usedict != 0,
            splitmode,
            filters: cfg.filters.map(Filter::from_id),
            filters_meta: cfg.filtersmeta,
        },
        nthreads: cfg.nthreads as usize,
        checksums: false,
        require_checksums: false,
        block_cache: 0,
        durability: c_default()?,
    };
    let prefilter = cfg.prefilter.is_some().then_some(Prefilter { func: cfg.prefilter, params: cfg.pparams });
    Ok((config, prefilter))
}

/// The environment variable that sets the level of the arrays a new C
/// context makes and opens.
const DEFAULT_ENV: &str = "CATERVA_DURABILITY";

/// The level of the arrays a new C context (`caterva_ctx_new`) makes and
/// opens: `CATERVA_DURABILITY` from the environment (`full`, `normal` or
/// `process`), else [`Durability::Normal`]: never torn by a power loss,
/// at a small part of [`Durability::Full`]'s syncs (the original library
/// made none; README, "Durability").
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the variable if it holds
/// another value.
pub(crate) fn c_default() -> Result<Durability> {
    match std::env::var(DEFAULT_ENV) {
        Ok(v) => v.parse().map_err(|e: Error| {
            Error::InvalidArgument(format!("{DEFAULT_ENV}={v:?} in the environment: {}", e.message()))
        }),
        Err(_) => Ok(Durability::Normal),
    }
}

/// `ndim` as a checked count.
pub(crate) fn ndim_of(ndim: i8) -> Result<usize> {
    match usize::try_from(ndim) {
        Ok(n) if n <= CATERVA_MAX_DIM => Ok(n),
        _ => Err(Error::InvalidArgument(format!("ndim {ndim} is not in 0..={CATERVA_MAX_DIM}"))),
    }
}

/// An `ndim` value given by C, checked, as an [`Error::InvalidArgument`]
/// (used by the metalayer codec functions).
pub(crate) fn checked_ndim(ndim: i8) -> Result<usize> {
    ndim_of(ndim).map_err(|e| Error::InvalidArgument(e.message()))
}

/// The Rust parameters of a C `caterva_params_t`.
pub(crate) fn params_from_c(p: &caterva_params_t) -> Result<Params> {
    let n = ndim_of(p.ndim)?;
    if p.itemsize == 0 {
        invalid!("itemsize must be at least 1");
    }
    Ok(Params { itemsize: usize::from(p.itemsize), shape: p.shape[..n].to_vec(), dtype: None })
}

/// The Rust storage of a C `caterva_storage_t`, for an array of `ndim` dimensions.
///
/// # Safety
/// The metalayer names and contents must be valid for their declared sizes.
pub(crate) unsafe fn storage_from_c(s: &caterva_storage_t, ndim: usize) -> Result<StorageParams> {
    let nmeta = usize::try_from(s.nmetalayers).ok().filter(|&n| n <= CATERVA_MAX_METALAYERS).ok_or_else(|| {
        Error::InvalidArgument(format!("nmetalayers {} is not in 0..={CATERVA_MAX_METALAYERS}", s.nmetalayers))
    })?;
    let urlpath = if s.urlpath.is_null() {
        None
    } else {
        // SAFETY: a non-NULL urlpath is a C string (caller's contract).
        Some(unsafe { string(s.urlpath, "storage.urlpath") }?.to_owned())
    };
    let mut metalayers = Vec::with_capacity(nmeta);
    for (i, m) in s.metalayers[..nmeta].iter().enumerate() {
        // SAFETY: caller's contract on the metalayer fields.
        let name = unsafe { string(m.name, &format!("storage.metalayers[{i}].name")) }?;
        let size = usize::try_from(m.size)
            .map_err(|_| Error::InvalidArgument(format!("storage.metalayers[{i}].size {} is negative", m.size)))?;
        // SAFETY: as above.
        let content = unsafe { slice(m.sdata, size, &format!("storage.metalayers[{i}].sdata")) }?;
        if metalayers.iter().any(|o: &Metalayer| o.name == name) {
            invalid!("storage.metalayers: '{name}' is given twice");
        }
        metalayers.push(Metalayer { name: name.to_owned(), content: content.to_vec() });
    }
    Ok(StorageParams {
        chunkshape: s.chunkshape[..ndim].to_vec(),
        blockshape: s.blockshape[..ndim].to_vec(),
        // Read as a byte: a C caller may leave any value in a bool field (memset),
        // and any byte other than 0 means true, as in C.
        // SAFETY: the field is one readable byte.
        contiguous: unsafe { std::ptr::addr_of!(s.contiguous).cast::<u8>().read() } != 0,
        urlpath,
        metalayers,
    })
}

#[cfg(test)]
mod tests {
    use super::ArrayBox;
    use crate::{Array, Config, Context, ErrorKind, Params, StorageParams};

    /// `caterva_array_t.itemsize` is a `uint8_t`: an array of larger items
    /// (python-blosc2 writes them) is refused at the C boundary, never
    /// handed over with a truncated item size.
    #[test]
    fn items_over_255_bytes_are_refused_at_the_c_boundary() {
        let ctx = Context::new(Config::default()).unwrap();
        let st = StorageParams { chunkshape: vec![4], blockshape: vec![2], ..StorageParams::default() };
        // SAFETY: all-zero is a valid caterva_config_t.
        let cfg = unsafe { std::mem::zeroed() };
        let wide = Array::zeros(&ctx, &Params { itemsize: 256, shape: vec![8], dtype: None }, &st).unwrap();
        let e = ArrayBox::into_raw(wide, &cfg).unwrap_err();
        assert!(e.kind() == ErrorKind::InvalidArgument && e.to_string().contains("256 bytes"), "{e}");
        let narrow = Array::zeros(&ctx, &Params { itemsize: 255, shape: vec![8], dtype: None }, &st).unwrap();
        let p = ArrayBox::into_raw(narrow, &cfg).unwrap();
        // SAFETY: p is a live array from into_raw.
        assert_eq!(unsafe { (*p).itemsize }, 255);
        let mut p = p;
        // SAFETY: p is a live array, ours alone.
        unsafe { ArrayBox::free(&mut p) }.unwrap();
        assert!(p.is_null());
    }

    /// A C configuration's numbers become the typed parameters, every
    /// codec and filter id as it was; a split mode outside 1..=4 is refused
    /// with the message `Context::new` gave, after a bad level as before.
    #[test]
    fn c_numbers_become_typed_cparams() {
        use super::{caterva_config_t, config_from_c};
        use crate::{Codec, Filter, SplitMode};
        // SAFETY: all-zero is a valid caterva_config_t.
        let mut cfg: caterva_config_t = unsafe { std::mem::zeroed() };
        cfg.alloc = Some(libc::malloc);
        cfg.free = Some(libc::free);
        (cfg.compcodec, cfg.complevel, cfg.splitmode, cfg.nthreads) = (200, 5, 4, 1);
        cfg.filters = [0, 1, 2, 3, 4, 40];
        let (config, _) = config_from_c(&cfg).unwrap_or_else(|e| panic!("{e}"));
        let cp = config.cparams;
        assert_eq!((cp.codec, cp.splitmode), (Codec::Other(200), SplitMode::ForwardCompat));
        use Filter::*;
        assert_eq!(cp.filters, [NoFilter, Shuffle, BitShuffle, Delta, TruncPrec, Other(40)]);
        let refused = |cfg: &caterva_config_t| config_from_c(cfg).map(drop).unwrap_err();
        for bad in [0, 5, -1] {
            cfg.splitmode = bad;
            let e = refused(&cfg);
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert_eq!(e.message(), format!("splitmode {bad} is not a BLOSC_*_SPLIT value"));
        }
        cfg.complevel = 10;
        assert_eq!(refused(&cfg).message(), "complevel 10 is not in 0..=9");
    }
}
