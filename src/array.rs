//! [`Array`]: an N-dimensional array stored in a Blosc2 super-chunk.

use std::path::Path;

use crate::checksum;
use crate::context::Context;
use crate::engine;
use crate::error::{invalid, Error, Result};
use crate::geometry::{Geometry, MAX_DIM};
use crate::journal;
use crate::meta::{self, B2ND_META, CATERVA_META};
use crate::reshape::{self, AxisMap, Built, Mapping, Source};
use crate::schunk::{self, SChunk, Special, Storage, MAX_METALAYERS, METALAYER_NAME_MAXLEN};

/// Element size and shape of a new array (`caterva_params_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Bytes per item, 1..=255.
    pub itemsize: usize,
    /// Shape, 0..=8 dimensions; 0 entries are allowed (empty axes).
    pub shape: Vec<i64>,
    /// NumPy dtype string recorded in the `b2nd` metalayer (`<f8`, `<i2`…),
    /// which python-blosc2 uses; `None` records the unsigned integer of the
    /// item size (`|u1`, `<u2`, `<u4`, `<u8`) or raw bytes (`|V<n>`).
    pub dtype: Option<String>,
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

fn check_user_vlmeta(name: &str) -> Result<()> {
    if name == checksum::VLMETA_NAME {
        invalid!("vlmetalayer '{name}' holds the chunk checksums and is the library's to write");
    }
    Ok(())
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
        return Err(Error::storage(None, "urlpath is empty"));
    }
    let p = Path::new(url);
    let Ok(md) = std::fs::symlink_metadata(p) else { return Ok(false) };
    let replaceable = if storage.contiguous { md.is_file() } else { md.is_dir() && p.join("chunks.b2frame").is_file() };
    if !replaceable {
        let kind = if storage.contiguous { "a frame file" } else { "a sparse-frame directory" };
        return Err(Error::storage(Some(url), format!("'{url}' exists and is not {kind}; refusing to overwrite it")));
    }
    Ok(true)
}

/// Make room for a new frame at `storage.urlpath`, replacing an existing
/// frame of the same kind as creating a file would.
fn prepare_path(storage: &Storage) -> Result<()> {
    match storage.urlpath.as_deref() {
        Some(url) if check_replaceable(storage)? => {
            schunk::remove_urlpath(url)?;
            journal::discard(url)
        }
        _ => Ok(()),
    }
}

/// Write a frame with `write` at a temporary path beside `target`, then
/// rename it over `target`, so that a failure leaves whatever was at
/// `target` untouched. A file is replaced atomically by the rename; a
/// sparse-frame directory cannot be, so an existing one is renamed aside
/// first (and put back on open if the process dies in between).
fn write_beside(
    target: &str,
    contiguous: bool,
    exists: bool,
    write: impl FnOnce(&Storage) -> Result<()>,
) -> Result<()> {
    let tmp = format!("{target}.caterva-tmp-{}", std::process::id());
    let st = Storage { contiguous, urlpath: Some(tmp.clone()) };
    prepare_path(&st)?;
    let mut cleanup = Cleanup(Some(&tmp));
    write(&st)?;
    if exists && !contiguous {
        journal::replace_dir(&tmp, target)?;
    } else {
        std::fs::rename(&tmp, target)?;
    }
    cleanup.0 = None;
    // A journal of what was there no longer applies.
    journal::discard(target)
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
        let dtype = match &params.dtype {
            Some(d) => {
                meta::check_dtype(d, geom.itemsize())?;
                d.clone()
            }
            None => meta::default_dtype(geom.itemsize()),
        };
        Self::create_with(ctx, geom, &storage.storage(), &storage.metalayers, &dtype, |arr| arr.fill(fill))
    }

    /// Create an empty super-chunk for `geom` at `st` with the geometry
    /// metalayers and `metalayers`, and let `fill` put its chunks in. On any
    /// error nothing is left on disk.
    ///
    /// `caterva` always comes first, as the original wrote it; `b2nd` (with
    /// `dtype`) follows when the caller's metalayers leave a slot for it, so
    /// the original's guarantee of 15 user metalayers holds.
    fn create_with(
        ctx: &Context,
        geom: Geometry,
        st: &Storage,
        metalayers: &[Metalayer],
        dtype: &str,
        fill: impl FnOnce(&mut Array) -> Result<()>,
    ) -> Result<Array> {
        check_user_metalayers(metalayers)?;
        prepare_path(st)?;
        let mut sc = SChunk::new(st, ctx.cparams(), geom.itemsize(), geom.block_nbytes(), ctx.nthreads())?;
        let mut cleanup = Cleanup(st.urlpath.as_deref());
        sc.meta_add(CATERVA_META, &meta::encode_caterva(geom.shape(), geom.chunkshape(), geom.blockshape())?)?;
        if metalayers.len() + 2 <= MAX_METALAYERS {
            let b2nd = meta::encode_b2nd_reserved(geom.shape(), geom.chunkshape(), geom.blockshape(), dtype)?;
            sc.meta_add(B2ND_META, &b2nd)?;
        }
        for m in metalayers {
            sc.meta_add(&m.name, &m.content)?;
        }
        if ctx.config().checksums {
            sc.enable_checksums()?;
        }
        let mut arr = Array { geom, sc, ctx: ctx.clone() };
        fill(&mut arr)?;
        arr.sc.flush_checksums()?;
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
    /// [`Error::Blosc`] if the super-chunk cannot be written.
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
    #[allow(clippy::result_large_err)]
    pub fn try_from_schunk(ctx: &Context, sc: SChunk) -> std::result::Result<Array, (Error, SChunk)> {
        match geometry_of(&sc) {
            Ok(geom) => Ok(Array { geom, sc, ctx: ctx.clone() }),
            Err(e) => Err((e, sc)),
        }
    }

    /// Open a persisted array (a frame file or a sparse-frame directory). A
    /// write that was interrupted (the process died) is rolled back first.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if nothing is at `urlpath`; [`Error::Blosc`]
    /// if it is not a frame; as [`journal::recover`] and [`Array::from_schunk`] otherwise.
    pub fn open(ctx: &Context, urlpath: &str) -> Result<Array> {
        journal::recover(urlpath)?;
        if std::fs::metadata(urlpath).is_err() {
            return Err(Error::storage(Some(urlpath), format!("'{urlpath}' does not exist")));
        }
        Self::from_schunk(ctx, SChunk::open(urlpath)?)
    }

    /// An in-memory array from a contiguous frame (the bytes are copied).
    ///
    /// # Errors
    /// [`Error::Blosc`] if it is not a frame; as [`Array::from_schunk`] otherwise.
    pub fn from_cframe(ctx: &Context, cframe: &[u8]) -> Result<Array> {
        // SAFETY: the slice is valid for its length and copied (copy = true).
        let sc = unsafe { SChunk::from_cframe(cframe.as_ptr(), cframe.len(), true)? };
        Self::from_schunk(ctx, sc)
    }

    /// Serialise to a contiguous frame.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot serialise it.
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
    /// not a frame of that kind; [`Error::Blosc`] if writing fails.
    pub fn save(&self, urlpath: &str) -> Result<()> {
        let contiguous = self.sc.storage().contiguous;
        let exists = check_replaceable(&Storage { contiguous, urlpath: Some(urlpath.to_owned()) })?;
        write_beside(urlpath, contiguous, exists, |st| self.sc.copy_to(st, self.ctx.nthreads()).map(drop))
    }

    /// Remove a persisted array (frame file or sparse-frame directory). A
    /// path that does not exist is not an error.
    ///
    /// # Errors
    /// [`Error::Blosc`] if it exists and cannot be removed.
    pub fn remove(urlpath: &str) -> Result<()> {
        schunk::remove_urlpath(urlpath)?;
        journal::discard(urlpath)
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
    /// [`Error::Blosc`] if a chunk cannot be read.
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
    /// fit the buffer; [`Error::Blosc`] if a chunk cannot be read.
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
        self.transaction(|a| a.sc.update_chunks(&built))
    }

    /// Read the outer product of one index list per axis into `buffer`, a
    /// C-order array of shape `buffershape` (each entry at least the length
    /// of its list): item `(j0, j1, …)` receives `array[sel[0][j0], sel[1][j1], …]`.
    /// Lists may be unsorted and hold repeats. Only the chunks and blocks the
    /// selection touches are decompressed.
    ///
    /// # Errors
    /// [`Error::InvalidIndex`] if an index leaves its axis;
    /// [`Error::InvalidArgument`] if there is not one list per axis or the
    /// buffer cannot hold the selection; [`Error::Blosc`] if a chunk
    /// cannot be read.
    pub fn get_orthogonal_selection(&self, selection: &[&[i64]], buffer: &mut [u8], buffershape: &[i64]) -> Result<()> {
        let sel = engine::Selection::new(&self.geom, selection, false)?;
        engine::read_selection(&self.ctx, &self.sc, &self.geom, &sel, buffer, buffershape)
    }

    /// Write `buffer` (as read by [`Array::get_orthogonal_selection`]) into
    /// the selected items. Where an index repeats, the last position given
    /// wins. Either every touched chunk is written or none is.
    ///
    /// # Errors
    /// As [`Array::get_orthogonal_selection`].
    pub fn set_orthogonal_selection(&mut self, selection: &[&[i64]], buffer: &[u8], buffershape: &[i64]) -> Result<()> {
        let sel = engine::Selection::new(&self.geom, selection, true)?;
        let cparams = *self.ctx.cparams();
        let built = engine::build_selection(&self.ctx, &cparams, &self.sc, &self.geom, &sel, buffer, buffershape)?;
        self.detach()?;
        self.transaction(|a| a.sc.update_chunks(&built))
    }

    /// Change the shape. On each axis whose length grows, the new items go in
    /// at `start[axis]` (at the end when `start` is `None`); on each axis that
    /// shrinks, the items `start[axis]..start[axis] + (old - new)` go (the
    /// last ones when `start` is `None`). Any position and length work.
    ///
    /// New items read as zeros, except those a grow at the end puts inside an
    /// existing chunk: they read what that chunk's padding holds (zeros, or
    /// the fill value of an array made by [`Array::full`]). Items a shrink
    /// cuts off are cleared, so they never come back. Chunks the change does
    /// not touch are neither decompressed nor rewritten.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a shape or start of the wrong length, a
    /// negative length, a start outside the axis, a shrink past the end, or
    /// a growing axis created with a zero chunk length. The array is unchanged.
    pub fn resize(&mut self, new_shape: &[i64], start: Option<&[i64]>) -> Result<()> {
        let ndim = self.ndim();
        if new_shape.len() != ndim || start.is_some_and(|s| s.len() != ndim) {
            invalid!("new shape and start need {ndim} entries");
        }
        let shape = self.geom.shape_full();
        let mut axes = Vec::with_capacity(ndim);
        for i in 0..ndim {
            let (old, new) = (shape[i], new_shape[i]);
            if new < 0 {
                invalid!("new shape[{i}] = {new} is negative");
            }
            if let Some(s) = start {
                if s[i] < 0 || s[i] > old {
                    invalid!("start[{i}] = {} is not in 0..={old}", s[i]);
                }
            }
            axes.push(if new > old {
                AxisMap::insert(old, start.map_or(old, |s| s[i]), new - old, Source::Fill)
            } else if new < old {
                let at = start.map_or(new, |s| s[i]);
                if at + (old - new) > old {
                    invalid!("removing {} items from {at} on axis {i} goes past its end ({old})", old - new);
                }
                AxisMap::delete(old, at, old - new)
            } else {
                AxisMap::slice(0, old)
            });
        }
        let new_geom = self.geom.with_shape(new_shape)?;
        self.reshape_in_place(new_geom, axes, None)
    }

    /// Insert `buffer`, whole slabs of the array along `axis` (C order, the
    /// array's shape on the other axes), at index `at` of that axis. An
    /// empty buffer changes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `axis` is not an axis, `at` is outside
    /// `0..=shape[axis]`, or the buffer is not a whole number of slabs. The
    /// array is unchanged.
    pub fn insert(&mut self, buffer: &[u8], axis: i64, at: i64) -> Result<()> {
        let a = self.check_axis(axis)?;
        let shape = self.shape().to_vec();
        if at < 0 || at > shape[a] {
            invalid!("insert position {at} is not in 0..={} (axis {a})", shape[a]);
        }
        let slab = shape
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != a)
            .try_fold(self.itemsize() as i64, |acc, (_, &d)| acc.checked_mul(d))
            .ok_or_else(|| Error::InvalidArgument("slab size overflows".into()))?;
        if buffer.is_empty() {
            return Ok(());
        }
        if slab == 0 || buffer.len() as i64 % slab != 0 {
            invalid!(
                "a buffer of {} bytes is not a whole number of slabs of {slab} bytes along axis {a}",
                buffer.len()
            );
        }
        let k = buffer.len() as i64 / slab;
        let mut new_shape = shape.clone();
        new_shape[a] = shape[a].checked_add(k).ok_or_else(|| Error::InvalidArgument("shape overflows".into()))?;
        let new_geom = self.geom.with_shape(&new_shape)?;
        let axes =
            (0..self.ndim())
                .map(|i| {
                    if i == a {
                        AxisMap::insert(shape[a], at, k, Source::Buffer(0))
                    } else {
                        AxisMap::slice(0, shape[i])
                    }
                })
                .collect();
        let mut bshape = shape;
        bshape[a] = k;
        self.reshape_in_place(new_geom, axes, Some((buffer, bshape)))
    }

    /// Append `buffer` (whole slabs) at the end of `axis`; see [`Array::insert`].
    /// An axis of length 0 created with a real chunk length grows this way.
    ///
    /// # Errors
    /// As [`Array::insert`].
    pub fn append(&mut self, buffer: &[u8], axis: i64) -> Result<()> {
        let a = self.check_axis(axis)?;
        let end = self.shape()[a];
        self.insert(buffer, axis, end)
    }

    /// Remove the items `start..start + len` of `axis`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `axis` is not an axis, `start` or `len`
    /// is negative, or the range goes past the end. The array is unchanged.
    pub fn delete(&mut self, axis: i64, start: i64, len: i64) -> Result<()> {
        let a = self.check_axis(axis)?;
        let shape = self.shape().to_vec();
        if start < 0 || len < 0 || start.checked_add(len).map_or(true, |end| end > shape[a]) {
            invalid!("cannot delete {len} items from {start} on axis {a} of length {}", shape[a]);
        }
        let mut new_shape = shape.clone();
        new_shape[a] -= len;
        let new_geom = self.geom.with_shape(&new_shape)?;
        let axes = (0..self.ndim())
            .map(|i| if i == a { AxisMap::delete(shape[a], start, len) } else { AxisMap::slice(0, shape[i]) })
            .collect();
        self.reshape_in_place(new_geom, axes, None)
    }

    /// Remove the axes flagged in `index` (one flag per axis), each of which
    /// must have length 1. Where a removed axis had a chunk or block length
    /// above 1, the chunks are rewritten for the new partitions.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `index` has the wrong length;
    /// [`Error::InvalidIndex`] if a flagged axis does not have length 1.
    pub fn squeeze_index(&mut self, index: &[bool]) -> Result<()> {
        let ndim = self.ndim();
        if index.len() != ndim {
            invalid!("squeeze index has {} entries, ndim is {ndim}", index.len());
        }
        if let Some(i) = (0..ndim).find(|&i| index[i] && self.shape()[i] != 1) {
            return Err(Error::InvalidIndex(format!(
                "axis {i} has length {}, only axes of length 1 can be squeezed",
                self.shape()[i]
            )));
        }
        let keep: Vec<usize> = (0..ndim).filter(|&i| !index[i]).collect();
        if keep.len() == ndim {
            return Ok(());
        }
        let g = &self.geom;
        let new_geom = Geometry::new(
            g.itemsize(),
            &keep.iter().map(|&i| g.shape()[i]).collect::<Vec<_>>(),
            &keep.iter().map(|&i| g.chunkshape()[i]).collect::<Vec<_>>(),
            &keep.iter().map(|&i| g.blockshape()[i]).collect::<Vec<_>>(),
        )?;
        let same_layout = (0..ndim).all(|i| !index[i] || g.chunkshape()[i] == 1);
        self.detach()?;
        if same_layout {
            // Axes of one chunk row and one block row: the stored layout is the same.
            self.transaction(|a| a.write_geometry(new_geom))
        } else {
            self.relayout(new_geom, &keep)
        }
    }

    /// Remove every axis of length 1.
    ///
    /// # Errors
    /// As [`Array::squeeze_index`].
    pub fn squeeze(&mut self) -> Result<()> {
        let index: Vec<bool> = self.shape().iter().map(|&s| s == 1).collect();
        self.squeeze_index(&index)
    }

    /// A new array holding `self[start..stop]`, with the partitions,
    /// location and metalayers of `storage`, compressed with `ctx`'s
    /// parameters. Vlmetalayers are not copied.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a region outside the array or invalid
    /// partitions; [`Error::InvalidStorage`] if the path is this array's own
    /// or is taken by something that is not a frame; [`Error::Blosc`]
    /// if writing fails (nothing is left behind).
    pub fn get_slice(&self, ctx: &Context, start: &[i64], stop: &[i64], storage: &StorageParams) -> Result<Array> {
        let region = self.geom.region(start, stop)?;
        let geom = Geometry::new(self.itemsize(), &region.shape(), &storage.chunkshape, &storage.blockshape)?;
        let axes = (0..self.ndim()).map(|i| AxisMap::slice(start[i], stop[i] - start[i])).collect();
        self.derive(ctx, geom, storage, axes, &storage.metalayers, false)
    }

    /// A copy with the partitions and location of `storage`, compressed with
    /// `ctx`'s parameters, with this array's user metalayers (those in
    /// `storage` added or replacing them) and vlmetalayers. When the
    /// partitions and compression parameters are unchanged, the compressed
    /// chunks are copied without recompressing them.
    ///
    /// # Errors
    /// As [`Array::get_slice`].
    pub fn copy(&self, ctx: &Context, storage: &StorageParams) -> Result<Array> {
        let geom = Geometry::new(self.itemsize(), self.shape(), &storage.chunkshape, &storage.blockshape)?;
        let mut metas = self.user_metalayers();
        for m in &storage.metalayers {
            match metas.iter_mut().find(|o| o.name == m.name) {
                Some(o) => o.content.clone_from(&m.content),
                None => metas.push(m.clone()),
            }
        }
        let axes = self.shape().iter().map(|&s| AxisMap::slice(0, s)).collect();
        self.derive(ctx, geom, storage, axes, &metas, true)
    }

    fn check_axis(&self, axis: i64) -> Result<usize> {
        match usize::try_from(axis) {
            Ok(a) if a < self.ndim() => Ok(a),
            _ => invalid!("axis {axis} is not in 0..{}", self.ndim()),
        }
    }

    /// The user metalayers (all but the geometry ones), in order.
    fn user_metalayers(&self) -> Vec<Metalayer> {
        self.sc
            .meta_names()
            .into_iter()
            .filter(|n| !is_reserved(n))
            .filter_map(|name| self.sc.meta_get(&name).map(|content| Metalayer { name, content }))
            .collect()
    }

    /// A super-chunk in a caller's frame buffer is copied before the first
    /// write (c-blosc2 would reallocate the caller's memory).
    fn detach(&mut self) -> Result<()> {
        if self.sc.borrows_buffer() {
            let mem = Storage { contiguous: true, urlpath: None };
            self.sc = self.sc.copy_to(&mem, self.ctx.nthreads())?;
        }
        Ok(())
    }

    /// Whether this array keeps per-chunk checksums (see [`crate::checksum`]).
    #[must_use]
    pub fn has_checksums(&self) -> bool {
        self.sc.has_checksums()
    }

    /// Start keeping per-chunk checksums: hash every chunk now, store the
    /// table, and keep it current on every later write through this library.
    ///
    /// # Errors
    /// [`Error::Blosc`] if a chunk cannot be read or the table cannot be stored.
    pub fn enable_checksums(&mut self) -> Result<()> {
        self.detach()?;
        self.transaction(|a| a.sc.enable_checksums())
    }

    /// Record a new geometry (same chunk layout) in the geometry metalayers
    /// present and in the struct.
    fn write_geometry(&mut self, geom: Geometry) -> Result<()> {
        let (shape, chunks, blocks) = (geom.shape(), geom.chunkshape(), geom.blockshape());
        if self.sc.meta_exists(CATERVA_META) {
            self.sc.meta_update(CATERVA_META, &meta::encode_caterva(shape, chunks, blocks)?)?;
        }
        if let Some(dtype) = self.dtype() {
            self.sc.meta_update(B2ND_META, &meta::encode_b2nd(shape, chunks, blocks, &dtype)?)?;
        }
        self.geom = geom;
        Ok(())
    }

    /// The NumPy dtype string of the `b2nd` metalayer, if the array has one.
    #[must_use]
    pub fn dtype(&self) -> Option<String> {
        self.sc.meta_get(B2ND_META).and_then(|b| meta::decode(&b).ok()).and_then(|(m, _)| m.dtype)
    }

    /// Record `dtype` (a NumPy dtype string for items of this size) in the
    /// `b2nd` metalayer, for python-blosc2 and c-blosc2's b2nd.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the dtype is malformed or does not match
    /// the item size, if the array has no `b2nd` metalayer (files written
    /// without one, or created with 15 user metalayers), or if it has no room
    /// for a dtype that long (Blosc2 metalayers cannot grow).
    pub fn set_dtype(&mut self, dtype: &str) -> Result<()> {
        meta::check_dtype(dtype, self.itemsize())?;
        let Some(old) = self.sc.meta_get(B2ND_META) else {
            invalid!("the array has no 'b2nd' metalayer to record a dtype in");
        };
        let g = &self.geom;
        let content = meta::encode_b2nd(g.shape(), g.chunkshape(), g.blockshape(), dtype)?;
        if content.len() > old.len() {
            invalid!("dtype '{dtype}' does not fit in this array's 'b2nd' metalayer ({} bytes)", old.len());
        }
        self.detach()?;
        self.transaction(|a| a.sc.meta_update(B2ND_META, &content))
    }

    /// Rebuild the chunk list for `new_geom` (same partitions) from the
    /// current one through `axes`, then store it in place: every new chunk
    /// is compressed before the first change is made.
    fn reshape_in_place(
        &mut self,
        new_geom: Geometry,
        axes: Vec<AxisMap>,
        buffer: Option<(&[u8], Vec<i64>)>,
    ) -> Result<()> {
        if new_geom == self.geom {
            return Ok(());
        }
        let parts = reshape::chunk_parts(&new_geom);
        let cparams = *self.ctx.cparams();
        let built = {
            let m = Mapping {
                old_geom: &self.geom,
                old_sc: &self.sc,
                axes: padded_axes(axes),
                kept: kept_axes(&(0..self.ndim()).collect::<Vec<_>>()),
                buffer,
            };
            reshape::build(&self.ctx, &cparams, &new_geom, &m, &parts, true)?
        };
        self.detach()?;
        self.transaction(|a| {
            reshape::apply_in_place(&mut a.sc, built)?;
            a.write_geometry(new_geom)
        })
    }

    /// Run `write`, a change of this array, as one transaction: on a file or
    /// directory array its changes on disk are journaled (see [`journal`]),
    /// so that a crash at any point leaves the array as it was before or
    /// after it, and an error undoes them (the super-chunk is reloaded).
    fn transaction<T>(&mut self, write: impl FnOnce(&mut Array) -> Result<T>) -> Result<T> {
        if !self.sc.journal_arm() {
            return write(self);
        }
        // The checksum table is stored with the change it describes.
        let result = write(self)
            .and_then(|v| self.sc.flush_checksums().map(|()| v))
            .and_then(|v| self.sc.journal_commit().map(|()| v));
        if result.is_err() {
            if self.sc.journal_abort()? {
                self.reload()?;
            } else {
                // Nothing to undo (in memory): keep the table true to what was applied.
                let _ = self.sc.flush_checksums();
            }
        }
        result
    }

    /// Reopen the super-chunk of a persistent array from disk.
    fn reload(&mut self) -> Result<()> {
        let url = self.sc.storage().urlpath.ok_or_else(|| Error::storage(None, "the array is in memory"))?;
        let sc = SChunk::open(&url)?;
        self.geom = geometry_of(&sc)?;
        self.sc = sc;
        Ok(())
    }

    /// Replace the super-chunk with one laid out for `new_geom`, whose axes
    /// are the old axes `keep` (the others have length 1).
    fn relayout(&mut self, new_geom: Geometry, keep: &[usize]) -> Result<()> {
        let storage = self.sc.storage();
        let axes: Vec<AxisMap> = keep.iter().map(|&i| AxisMap::slice(0, self.shape()[i])).collect();
        let metas = self.user_metalayers();
        let ctx = self.ctx.clone();
        match storage.urlpath.clone() {
            Some(target) => {
                write_beside(&target, storage.contiguous, true, |st| {
                    self.derive_to(&ctx, new_geom, st, axes, keep, &metas, true).map(drop)
                })?;
                let reopened = SChunk::open(&target)?;
                self.geom = geometry_of(&reopened)?;
                self.sc = reopened;
            }
            None => {
                let fresh = self.derive_to(&ctx, new_geom, &storage, axes, keep, &metas, true)?;
                self.geom = fresh.geom;
                self.sc = fresh.sc;
            }
        }
        Ok(())
    }

    /// A new array of `geom` at `storage` whose items come from this one
    /// through `axes` (same axes), with `metalayers` and, with `vlmeta`,
    /// this array's vlmetalayers.
    fn derive(
        &self,
        ctx: &Context,
        geom: Geometry,
        storage: &StorageParams,
        axes: Vec<AxisMap>,
        metalayers: &[Metalayer],
        vlmeta: bool,
    ) -> Result<Array> {
        let keep: Vec<usize> = (0..self.ndim()).collect();
        self.derive_to(ctx, geom, &storage.storage(), axes, &keep, metalayers, vlmeta)
    }

    /// [`Array::derive`] with the new axes reading the old axes `keep`.
    #[allow(clippy::too_many_arguments)]
    fn derive_to(
        &self,
        ctx: &Context,
        geom: Geometry,
        st: &Storage,
        axes: Vec<AxisMap>,
        keep: &[usize],
        metalayers: &[Metalayer],
        vlmeta: bool,
    ) -> Result<Array> {
        if st.urlpath.is_some() && st.urlpath == self.sc.storage().urlpath {
            let url = st.urlpath.as_deref();
            return Err(Error::storage(url, format!("'{}' is the source array's own path", url.unwrap_or_default())));
        }
        let vl: Vec<(String, Vec<u8>)> = if vlmeta {
            let names = self.sc.vlmeta_names().into_iter().filter(|n| n != checksum::VLMETA_NAME);
            names.map(|n| self.vlmeta_get(&n).map(|c| (n, c))).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let m = Mapping {
            old_geom: &self.geom,
            old_sc: &self.sc,
            axes: padded_axes(axes),
            kept: kept_axes(keep),
            buffer: None,
        };
        let reuse = ctx.cparams().same_encoding(&self.sc.cparams());
        let dtype = self.dtype().unwrap_or_else(|| meta::default_dtype(self.itemsize()));
        Array::create_with(ctx, geom, st, metalayers, &dtype, |arr| {
            if self.sc.has_checksums() {
                arr.sc.enable_checksums()?;
            }
            let parts = reshape::chunk_parts(&arr.geom);
            let batch = (ctx.nthreads() * 4).max(16);
            for group in parts.chunks(batch) {
                for b in reshape::build(ctx, ctx.cparams(), &arr.geom, &m, group, reuse)? {
                    match b {
                        Built::Data(bytes) => arr.sc.append_chunk(&bytes)?,
                        Built::Reuse(k) => {
                            let chunk = self.sc.chunk(k)?;
                            arr.sc.append_chunk(chunk.bytes())?;
                        }
                    }
                }
            }
            for (name, content) in &vl {
                arr.vlmeta_add(name, content)?;
            }
            Ok(())
        })
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
        self.detach()?;
        self.transaction(|a| a.sc.meta_update(name, content))
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
    /// [`Error::InvalidArgument`] if it does not exist; [`Error::Blosc`] if it cannot be read.
    pub fn vlmeta_get(&self, name: &str) -> Result<Vec<u8>> {
        self.sc.vlmeta_get(name)?.ok_or_else(|| Error::InvalidArgument(format!("vlmetalayer '{name}' does not exist")))
    }

    /// Add a variable-length metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it already exists or the name is invalid.
    pub fn vlmeta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_user_vlmeta(name)?;
        let cp = *self.ctx.cparams();
        self.detach()?;
        self.transaction(|a| a.sc.vlmeta_put(name, content, false, &cp))
    }

    /// Replace a variable-length metalayer (any length).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist.
    pub fn vlmeta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_user_vlmeta(name)?;
        let cp = *self.ctx.cparams();
        self.detach()?;
        self.transaction(|a| a.sc.vlmeta_put(name, content, true, &cp))
    }

    /// The text `caterva_print_meta` prints: the geometry recorded in the
    /// `caterva` metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the metalayer is missing or corrupt.
    pub fn meta_summary(&self) -> Result<String> {
        let bytes = self
            .sc
            .meta_get(CATERVA_META)
            .or_else(|| self.sc.meta_get(B2ND_META))
            .ok_or_else(|| Error::InvalidFormat("the array has no geometry metalayer".into()))?;
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

/// The geometry a super-chunk's `caterva` and/or `b2nd` metalayers
/// describe (they must agree when both are there), checked against the
/// super-chunk itself.
fn geometry_of(sc: &SChunk) -> Result<Geometry> {
    let read = |name: &str| -> Result<Option<meta::MetaGeometry>> {
        sc.meta_get(name)
            .map(|b| {
                meta::decode(&b)
                    .map(|(m, _)| m)
                    .map_err(|e| Error::InvalidFormat(format!("'{name}' metalayer: {}", e.message())))
            })
            .transpose()
    };
    let m = match (read(CATERVA_META)?, read(B2ND_META)?) {
        (None, None) => {
            return Err(Error::InvalidFormat("the super-chunk has neither a 'caterva' nor a 'b2nd' metalayer".into()))
        }
        (Some(c), Some(b)) if (&c.shape, &c.chunkshape, &c.blockshape) != (&b.shape, &b.chunkshape, &b.blockshape) => {
            return Err(Error::InvalidFormat(format!(
                "the 'caterva' and 'b2nd' metalayers disagree: shape {:?} / {:?}, chunks {:?} / {:?}, blocks {:?} / {:?}",
                c.shape, b.shape, c.chunkshape, b.chunkshape, c.blockshape, b.blockshape
            )))
        }
        (Some(m), _) | (None, Some(m)) => m,
    };
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
    // Every chunk is whole (c-blosc2 allows a shorter last one).
    if i128::from(sc.nbytes()) != i128::from(geom.nchunks()) * geom.chunk_nbytes() as i128 {
        return Err(Error::InvalidFormat(format!(
            "the super-chunk holds {} bytes; {} chunks of {} bytes are needed",
            sc.nbytes(),
            geom.nchunks(),
            geom.chunk_nbytes()
        )));
    }
    debug_assert!(geom.ndim() <= MAX_DIM);
    Ok(geom)
}

/// Axis maps for a geometry's `dims()` axes: a 0-dim array reads as one axis of length 1.
fn padded_axes(axes: Vec<AxisMap>) -> Vec<AxisMap> {
    if axes.is_empty() {
        vec![AxisMap::slice(0, 1)]
    } else {
        axes
    }
}

/// The old axis each new axis reads, padded like [`padded_axes`].
fn kept_axes(keep: &[usize]) -> Vec<Option<usize>> {
    if keep.is_empty() {
        vec![None]
    } else {
        keep.iter().map(|&k| Some(k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    /// A write that fails after changing the array on disk is undone, on
    /// disk and in memory; a write inside it joins it.
    #[test]
    fn a_failed_write_is_undone() {
        let dir = std::env::temp_dir().join(format!("caterva-array-{}-undo", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, contiguous) in [("a.b2frame", true), ("a.b2nd", false)] {
            let url = dir.join(name).to_string_lossy().into_owned();
            let ctx = Context::new(Config::default()).unwrap();
            let params = Params { itemsize: 2, shape: vec![10, 10], dtype: None };
            let storage = StorageParams {
                chunkshape: vec![4, 4],
                blockshape: vec![2, 2],
                contiguous,
                urlpath: Some(url.clone()),
                ..Default::default()
            };
            let data: Vec<u8> = (0..200u8).collect();
            let mut arr = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
            let r = arr.transaction(|a| {
                a.resize(&[12, 10], None)?;
                let chunk = a.sc.chunk(0)?.bytes().to_vec();
                a.sc.update_chunk(1, &chunk)?;
                Err::<(), _>(Error::blosc("injected", None))
            });
            assert_eq!(r, Err(Error::blosc("injected", None)));
            assert_eq!(arr.shape(), &[10, 10]);
            assert_eq!(arr.to_vec().unwrap(), data);
            assert!(!journal::journal_path(&url).exists());
            arr.set_slice_buffer(&[1; 8], &[2, 2], &[0, 0], &[2, 2]).unwrap();
            drop(arr);
            let back = Array::open(&ctx, &url).unwrap();
            assert_eq!(back.shape(), &[10, 10]);
            assert_eq!(back.to_vec().unwrap()[..6], [1, 1, 1, 1, 4, 5]);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
