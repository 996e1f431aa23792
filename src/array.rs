//! [`Array`]: an N-dimensional array stored in a Blosc2 super-chunk.

use std::path::Path;

use crate::context::Context;
use crate::engine;
use crate::error::{invalid, Error, Result};
use crate::geometry::{Geometry, MAX_DIM};
use crate::meta::{self, B2ND_META, CATERVA_META};
use crate::schunk::{self, SChunk, Special, Storage, MAX_METALAYERS, METALAYER_NAME_MAXLEN};

/// Element size and shape of a new array (`caterva_params_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Bytes per item, 1..=255.
    pub itemsize: usize,
    /// Shape, 0..=8 dimensions; 0 entries are allowed (empty axes).
    pub shape: Vec<i64>,
}

/// A user metalayer: a name and opaque bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metalayer {
    /// Name (1..=31 bytes, no NUL).
    pub name: String,
    /// Content.
    pub content: Vec<u8>,
}

/// Partitions, location and initial metalayers of a new array (`caterva_storage_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageParams {
    /// Chunk shape, one entry per dimension.
    pub chunkshape: Vec<i32>,
    /// Block shape, one entry per dimension (each ≤ the chunk's).
    pub blockshape: Vec<i32>,
    /// One contiguous frame (file) or a sparse frame (directory of chunk files).
    pub contiguous: bool,
    /// Where to persist it; `None` keeps it in memory.
    pub urlpath: Option<String>,
    /// Fixed-size user metalayers, at most 15.
    pub metalayers: Vec<Metalayer>,
}

impl StorageParams {
    fn storage(&self) -> Storage {
        Storage { contiguous: self.contiguous, urlpath: self.urlpath.clone() }
    }
}

/// How a new array's chunks are initialised.
enum Fill<'a> {
    Special(Special),
    Value(&'a [u8]),
    Buffer(&'a [u8]),
}

/// An N-dimensional array of fixed-size items, compressed in chunks and
/// blocks in a Blosc2 super-chunk.
///
/// Reads take `&self` and may run from many threads at once; anything that
/// changes the array takes `&mut self`.
pub struct Array {
    geom: Geometry,
    sc: SChunk,
    ctx: Context,
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array").field("geometry", &self.geom).field("storage", &self.sc.storage()).finish()
    }
}

/// Names that hold geometry and are managed by the library itself.
fn is_reserved(name: &str) -> bool {
    name == CATERVA_META || name == B2ND_META
}

fn check_user_metalayers(list: &[Metalayer]) -> Result<()> {
    if list.len() > MAX_METALAYERS - 1 {
        invalid!("{} metalayers given; at most {} fit beside 'caterva'", list.len(), MAX_METALAYERS - 1);
    }
    for (i, m) in list.iter().enumerate() {
        if m.name.is_empty() || m.name.len() > METALAYER_NAME_MAXLEN || m.name.contains('\0') {
            invalid!("metalayer name '{}' must have 1 to {METALAYER_NAME_MAXLEN} bytes and no NUL", m.name);
        }
        if is_reserved(&m.name) {
            invalid!("metalayer name '{}' is reserved for the array geometry", m.name);
        }
        if list[..i].iter().any(|o| o.name == m.name) {
            invalid!("metalayer '{}' given twice", m.name);
        }
        if i32::try_from(m.content.len()).is_err() {
            invalid!("metalayer '{}' is larger than 2 GiB", m.name);
        }
    }
    Ok(())
}

/// Whether `storage.urlpath` is free (`Ok(false)`) or holds a frame of the
/// same kind that may be replaced (`Ok(true)`). Anything else there is
/// refused rather than destroyed.
fn check_replaceable(storage: &Storage) -> Result<bool> {
    let Some(url) = storage.urlpath.as_deref() else { return Ok(false) };
    if url.is_empty() {
        return Err(Error::InvalidStorage("urlpath is empty".into()));
    }
    let p = Path::new(url);
    let Ok(md) = std::fs::symlink_metadata(p) else { return Ok(false) };
    let replaceable = if storage.contiguous { md.is_file() } else { md.is_dir() && p.join("chunks.b2frame").is_file() };
    if !replaceable {
        let kind = if storage.contiguous { "a frame file" } else { "a sparse-frame directory" };
        return Err(Error::InvalidStorage(format!("'{url}' exists and is not {kind}; refusing to overwrite it")));
    }
    Ok(true)
}

/// Make room for a new frame at `storage.urlpath`, replacing an existing
/// frame of the same kind as creating a file would.
fn prepare_path(storage: &Storage) -> Result<()> {
    match storage.urlpath.as_deref() {
        Some(url) if check_replaceable(storage)? => schunk::remove_urlpath(url),
        _ => Ok(()),
    }
}

/// Removes a half-built frame from disk unless defused.
struct Cleanup<'a>(Option<&'a str>);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(u) = self.0 {
            let _ = schunk::remove_urlpath(u);
        }
    }
}

impl Array {
    fn create(ctx: &Context, params: &Params, storage: &StorageParams, fill: Fill<'_>) -> Result<Array> {
        let geom = Geometry::new(params.itemsize, &params.shape, &storage.chunkshape, &storage.blockshape)?;
        check_user_metalayers(&storage.metalayers)?;
        match fill {
            Fill::Value(v) if v.len() != geom.itemsize() => {
                invalid!("fill value has {} bytes, itemsize is {}", v.len(), geom.itemsize())
            }
            Fill::Buffer(b) if (b.len() as u128) < geom.nitems() as u128 * geom.itemsize() as u128 => {
                invalid!(
                    "buffer of {} bytes is smaller than the array ({} items of {} bytes)",
                    b.len(),
                    geom.nitems(),
                    geom.itemsize()
                )
            }
            _ => {}
        }
        let st = storage.storage();
        prepare_path(&st)?;
        let mut sc = SChunk::new(&st, ctx.cparams(), geom.itemsize(), geom.block_nbytes(), ctx.nthreads())?;
        let mut cleanup = Cleanup(st.urlpath.as_deref());
        sc.meta_add(CATERVA_META, &meta::encode_caterva(geom.shape(), geom.chunkshape(), geom.blockshape())?)?;
        for m in &storage.metalayers {
            sc.meta_add(&m.name, &m.content)?;
        }
        let mut arr = Array { geom, sc, ctx: ctx.clone() };
        arr.fill(fill)?;
        cleanup.0 = None;
        Ok(arr)
    }

    fn fill(&mut self, fill: Fill<'_>) -> Result<()> {
        let g = &self.geom;
        let nchunks = g.nchunks();
        match fill {
            Fill::Special(kind) => self.sc.fill_special(nchunks, g.chunk_nbytes(), kind),
            Fill::Value(v) if v.iter().all(|&b| b == 0) => {
                self.sc.fill_special(nchunks, g.chunk_nbytes(), Special::Zeros)
            }
            Fill::Value(v) => {
                let chunk =
                    schunk::repeat_chunk(self.ctx.cparams(), g.itemsize(), g.block_nbytes(), g.chunk_nbytes(), v)?;
                for _ in 0..nchunks {
                    self.sc.append_chunk(&chunk)?;
                }
                Ok(())
            }
            Fill::Buffer(buf) => {
                let region = g.full_region();
                let parts = engine::plan(g, &region);
                // Bounded batches keep at most a few compressed chunks per worker in memory.
                let batch = (self.ctx.nthreads() * 4).max(16);
                for group in parts.chunks(batch) {
                    let built =
                        engine::build_chunks(&self.ctx, self.ctx.cparams(), None, g, &region, group, buf, g.shape())?;
                    for (_, chunk) in built {
                        self.sc.append_chunk(&chunk)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// A new array whose contents are unspecified (Blosc2 uninit special chunks).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid geometry or metalayers,
    /// [`Error::InvalidStorage`] if the path is taken by something else,
    /// [`Error::BloscFailed`] if the super-chunk cannot be written.
    pub fn uninit(ctx: &Context, params: &Params, storage: &StorageParams) -> Result<Array> {
        Self::create(ctx, params, storage, Fill::Special(Special::Uninit))
    }

    /// A new array of zeros (like the original's `caterva_empty`).
    ///
    /// # Errors
    /// As [`Array::uninit`].
    pub fn empty(ctx: &Context, params: &Params, storage: &StorageParams) -> Result<Array> {
        Self::zeros(ctx, params, storage)
    }

    /// A new array of zeros, stored as special chunks (a header each).
    ///
    /// # Errors
    /// As [`Array::uninit`].
    pub fn zeros(ctx: &Context, params: &Params, storage: &StorageParams) -> Result<Array> {
        Self::create(ctx, params, storage, Fill::Special(Special::Zeros))
    }

    /// A new array in which every item is `value` (`itemsize` bytes).
    ///
    /// # Errors
    /// As [`Array::uninit`]; also if `value` is not `itemsize` bytes long.
    pub fn full(ctx: &Context, params: &Params, storage: &StorageParams, value: &[u8]) -> Result<Array> {
        Self::create(ctx, params, storage, Fill::Value(value))
    }

    /// A new array holding `buffer`, a C-order array of `params.shape`.
    ///
    /// # Errors
    /// As [`Array::uninit`]; also if `buffer` is too small.
    pub fn from_buffer(ctx: &Context, params: &Params, storage: &StorageParams, buffer: &[u8]) -> Result<Array> {
        Self::create(ctx, params, storage, Fill::Buffer(buffer))
    }

    /// Wrap a super-chunk that carries a `caterva` metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the metalayer is missing, does not decode,
    /// or contradicts the super-chunk (item size, chunk size, chunk count).
    pub fn from_schunk(ctx: &Context, sc: SChunk) -> Result<Array> {
        Self::try_from_schunk(ctx, sc).map_err(|(e, _)| e)
    }

    /// As [`Array::from_schunk`], but a failure hands the super-chunk back.
    ///
    /// # Errors
    /// As [`Array::from_schunk`].
    pub fn try_from_schunk(ctx: &Context, sc: SChunk) -> std::result::Result<Array, (Error, SChunk)> {
        match geometry_of(&sc) {
            Ok(geom) => Ok(Array { geom, sc, ctx: ctx.clone() }),
            Err(e) => Err((e, sc)),
        }
    }

    /// Open a persisted array (a frame file or a sparse-frame directory).
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if nothing is at `urlpath`; [`Error::BloscFailed`]
    /// if it is not a frame; as [`Array::from_schunk`] otherwise.
    pub fn open(ctx: &Context, urlpath: &str) -> Result<Array> {
        if std::fs::metadata(urlpath).is_err() {
            return Err(Error::InvalidStorage(format!("'{urlpath}' does not exist")));
        }
        Self::from_schunk(ctx, SChunk::open(urlpath)?)
    }

    /// An in-memory array from a contiguous frame (the bytes are copied).
    ///
    /// # Errors
    /// [`Error::BloscFailed`] if it is not a frame; as [`Array::from_schunk`] otherwise.
    pub fn from_cframe(ctx: &Context, cframe: &[u8]) -> Result<Array> {
        // SAFETY: the slice is valid for its length and copied (copy = true).
        let sc = unsafe { SChunk::from_cframe(cframe.as_ptr(), cframe.len(), true)? };
        Self::from_schunk(ctx, sc)
    }

    /// Serialise to a contiguous frame.
    ///
    /// # Errors
    /// [`Error::BloscFailed`] if c-blosc2 cannot serialise it.
    pub fn to_cframe(&self) -> Result<Vec<u8>> {
        let (p, len, needs_free) = self.sc.to_cframe_raw()?;
        // SAFETY: c-blosc2 returned len readable bytes at p; if it allocated
        // them, we own and free them after copying.
        unsafe {
            let v = std::slice::from_raw_parts(p, len as usize).to_vec();
            if needs_free {
                schunk::free(p.cast());
            }
            Ok(v)
        }
    }

    /// Write a copy to `urlpath`, with the same partitions and contiguity.
    /// The copy is written beside the target and renamed into place, so a
    /// failure leaves whatever was at `urlpath` untouched.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is taken by something that is
    /// not a frame of that kind; [`Error::BloscFailed`] if writing fails.
    pub fn save(&self, urlpath: &str) -> Result<()> {
        let contiguous = self.sc.storage().contiguous;
        let target = Storage { contiguous, urlpath: Some(urlpath.to_owned()) };
        let exists = check_replaceable(&target)?;
        let tmp = format!("{urlpath}.caterva-tmp-{}", std::process::id());
        let tmp_storage = Storage { contiguous, urlpath: Some(tmp.clone()) };
        prepare_path(&tmp_storage)?;
        let mut cleanup = Cleanup(Some(&tmp));
        drop(self.sc.copy_to(&tmp_storage, self.ctx.nthreads())?);
        // A file is replaced atomically by the rename; a directory cannot be,
        // so the old one goes first.
        if exists && !contiguous {
            schunk::remove_urlpath(urlpath)?;
        }
        std::fs::rename(&tmp, urlpath)?;
        cleanup.0 = None;
        Ok(())
    }

    /// Remove a persisted array (frame file or sparse-frame directory). A
    /// path that does not exist is not an error.
    ///
    /// # Errors
    /// [`Error::BloscFailed`] if it exists and cannot be removed.
    pub fn remove(urlpath: &str) -> Result<()> {
        schunk::remove_urlpath(urlpath)
    }

    /// The geometry.
    #[must_use]
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    /// Number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.geom.ndim()
    }
    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.geom.itemsize()
    }
    /// Shape.
    #[must_use]
    pub fn shape(&self) -> &[i64] {
        self.geom.shape()
    }
    /// Number of items.
    #[must_use]
    pub fn nitems(&self) -> i64 {
        self.geom.nitems()
    }
    /// The super-chunk.
    #[must_use]
    pub fn schunk(&self) -> &SChunk {
        &self.sc
    }
    /// The context the array uses.
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Give up the array, keeping its super-chunk.
    #[must_use]
    pub fn into_schunk(self) -> SChunk {
        self.sc
    }

    /// Copy the whole array into `buffer` (C order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `buffer` is too small;
    /// [`Error::BloscFailed`] if a chunk cannot be read.
    pub fn to_buffer(&self, buffer: &mut [u8]) -> Result<()> {
        let region = self.geom.full_region();
        engine::read_region(&self.ctx, &self.sc, &self.geom, &region, buffer, self.geom.shape())
    }

    /// The whole array as a new C-order vector.
    ///
    /// # Errors
    /// As [`Array::to_buffer`].
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.geom.nitems() as usize * self.geom.itemsize()];
        self.to_buffer(&mut v)?;
        Ok(v)
    }

    /// Copy `array[start..stop]` into `buffer`, a C-order array of shape
    /// `buffershape` (each entry at least `stop - start`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the slice leaves the array or does not
    /// fit the buffer; [`Error::BloscFailed`] if a chunk cannot be read.
    pub fn get_slice_buffer(&self, start: &[i64], stop: &[i64], buffer: &mut [u8], buffershape: &[i64]) -> Result<()> {
        let region = self.geom.region(start, stop)?;
        engine::read_region(&self.ctx, &self.sc, &self.geom, &region, buffer, buffershape)
    }

    /// Write `buffer`, a C-order array of shape `buffershape`, into
    /// `array[start..stop]`. Either every touched chunk is written or, on an
    /// error while preparing them, none is.
    ///
    /// # Errors
    /// As [`Array::get_slice_buffer`].
    pub fn set_slice_buffer(&mut self, buffer: &[u8], buffershape: &[i64], start: &[i64], stop: &[i64]) -> Result<()> {
        let region = self.geom.region(start, stop)?;
        engine::check_user_buffer(&self.geom, &region, buffershape, buffer.len())?;
        let parts = engine::plan(&self.geom, &region);
        let cparams = *self.ctx.cparams();
        let built = engine::build_chunks(
            &self.ctx,
            &cparams,
            Some(&self.sc),
            &self.geom,
            &region,
            &parts,
            buffer,
            buffershape,
        )?;
        for (n, chunk) in built {
            self.sc.update_chunk(n, &chunk)?;
        }
        Ok(())
    }

    /// Whether a fixed-size metalayer exists.
    #[must_use]
    pub fn meta_exists(&self, name: &str) -> bool {
        self.sc.meta_exists(name)
    }

    /// A fixed-size metalayer's content.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist.
    pub fn meta_get(&self, name: &str) -> Result<Vec<u8>> {
        self.sc.meta_get(name).ok_or_else(|| Error::InvalidArgument(format!("metalayer '{name}' does not exist")))
    }

    /// Replace a user metalayer's content (same length; the geometry
    /// metalayers `caterva` and `b2nd` are the library's to write).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist, is reserved, or the length differs.
    pub fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        if is_reserved(name) {
            invalid!("metalayer '{name}' holds the array geometry and cannot be updated by hand");
        }
        let old = self.meta_get(name)?;
        if old.len() != content.len() {
            invalid!(
                "metalayer '{name}' holds {} bytes; an update must keep that size, not {}",
                old.len(),
                content.len()
            );
        }
        self.sc.meta_update(name, content)
    }

    /// Whether a variable-length metalayer exists.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the name holds a NUL byte.
    pub fn vlmeta_exists(&self, name: &str) -> Result<bool> {
        self.sc.vlmeta_exists(name)
    }

    /// A variable-length metalayer's content.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist; [`Error::BloscFailed`] if it cannot be read.
    pub fn vlmeta_get(&self, name: &str) -> Result<Vec<u8>> {
        self.sc.vlmeta_get(name)?.ok_or_else(|| Error::InvalidArgument(format!("vlmetalayer '{name}' does not exist")))
    }

    /// Add a variable-length metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it already exists or the name is invalid.
    pub fn vlmeta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        let cp = *self.ctx.cparams();
        self.sc.vlmeta_put(name, content, false, &cp)
    }

    /// Replace a variable-length metalayer (any length).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist.
    pub fn vlmeta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        let cp = *self.ctx.cparams();
        self.sc.vlmeta_put(name, content, true, &cp)
    }

    /// The text `caterva_print_meta` prints: the geometry recorded in the
    /// `caterva` metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the metalayer is missing or corrupt.
    pub fn meta_summary(&self) -> Result<String> {
        let bytes = self.meta_get(CATERVA_META).map_err(|e| Error::InvalidFormat(e.message().to_owned()))?;
        let (m, _) = meta::decode(&bytes)?;
        let join = |v: Vec<String>| v.join(", ");
        Ok(format!(
            "Caterva metalayer parameters:\n Ndim:       {}\n Shape:      {}\n Chunkshape: {}\n Blockshape: {}\n",
            m.shape.len(),
            join(m.shape.iter().map(ToString::to_string).collect()),
            join(m.chunkshape.iter().map(ToString::to_string).collect()),
            join(m.blockshape.iter().map(ToString::to_string).collect()),
        ))
    }
}

/// The geometry a super-chunk's `caterva` metalayer describes, checked
/// against the super-chunk itself.
fn geometry_of(sc: &SChunk) -> Result<Geometry> {
    let bytes = sc
        .meta_get(CATERVA_META)
        .ok_or_else(|| Error::InvalidFormat("the super-chunk has no 'caterva' metalayer".into()))?;
    let (m, _) = meta::decode(&bytes)?;
    let itemsize = usize::try_from(sc.typesize()).unwrap_or(0);
    let geom = Geometry::new(itemsize, &m.shape, &m.chunkshape, &m.blockshape)
        .map_err(|e| Error::InvalidFormat(format!("metalayer geometry: {}", e.message())))?;
    if sc.nchunks() != geom.nchunks() {
        return Err(Error::InvalidFormat(format!(
            "the super-chunk has {} chunks; shape {:?} with chunks {:?} needs {}",
            sc.nchunks(),
            geom.shape(),
            geom.chunkshape(),
            geom.nchunks()
        )));
    }
    if geom.nchunks() > 0 && usize::try_from(sc.chunksize()).ok() != Some(geom.chunk_nbytes()) {
        return Err(Error::InvalidFormat(format!(
            "chunks hold {} bytes; the geometry needs {}",
            sc.chunksize(),
            geom.chunk_nbytes()
        )));
    }
    debug_assert!(geom.ndim() <= MAX_DIM);
    Ok(geom)
}
