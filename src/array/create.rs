//! Making arrays: from nothing (zeros, a fill value, NaNs), a buffer, a
//! frame, a file, or another array (`get_slice`, `copy`, and the relayouts
//! of `squeeze`); persisting and removing them.

use super::{Array, Metalayer, Params, StorageParams};
use crate::blosc2;
use crate::blosc2::{Special, MAX_METALAYERS};
use crate::context::Context;
use crate::engine;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{invalid, Result};
use crate::geometry::Geometry;
use crate::meta::{self, B2ND_META, CATERVA_META};
use crate::reshape::{self, AxisMap, Built, Mapping};
use crate::store::schunk::{Layout, Storage};
use crate::store::{overlap, overlap_error, Batch, Overlap, Store, Tx};

/// How a new array's chunks are initialised.
enum Fill<'a> {
    Special(Special),
    Value(&'a [u8]),
    Buffer(&'a [u8]),
}

/// What a new array is: its geometry, where it lives, its user metalayers
/// and dtype, and whether it keeps checksums.
pub(super) struct NewArray<'a> {
    pub(super) geom: Geometry,
    pub(super) storage: &'a Storage,
    pub(super) metalayers: &'a [Metalayer],
    pub(super) dtype: &'a str,
    pub(super) checksums: bool,
}

/// A new array made from an existing one: new axis `i` reads old axis
/// `keep[i]` through `axes[i]`.
pub(super) struct Derived<'a> {
    pub(super) geom: Geometry,
    pub(super) storage: &'a Storage,
    pub(super) axes: Vec<AxisMap>,
    pub(super) keep: &'a [usize],
    pub(super) metalayers: &'a [Metalayer],
    /// Copy the source's vlmetalayers too.
    pub(super) vlmeta: bool,
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
        Self::create_streamed(ctx, params, storage, |tx, g| fill_chunks(ctx, tx, g, fill))
    }

    /// Create a store for `new` with the geometry metalayers and the user
    /// metalayers, and let `fill` put its chunks in. On any error nothing is
    /// left on disk.
    ///
    /// `caterva` always comes first, as the original wrote it; `b2nd` (with
    /// the dtype) follows when the caller's metalayers leave a slot for it,
    /// so the original's guarantee of 15 user metalayers holds.
    pub(super) fn create_with(
        ctx: &Context,
        new: &NewArray<'_>,
        fill: impl FnOnce(&mut Tx<'_>, &Geometry) -> Result<()>,
    ) -> Result<Array> {
        super::meta::check_user_metalayers(new.metalayers)?;
        let g = &new.geom;
        let layout = Layout {
            comp: *ctx.compression(),
            typesize: g.itemsize(),
            blocksize: g.block_nbytes(),
            nthreads: ctx.nthreads(),
        };
        let store = Store::create(new.storage, &layout, new.checksums, ctx.config().durability, |tx| {
            tx.meta_add(CATERVA_META, &meta::encode_caterva(g.shape(), g.chunkshape(), g.blockshape())?)?;
            if new.metalayers.len() + 2 <= MAX_METALAYERS {
                let b2nd = meta::encode_b2nd_reserved(g.shape(), g.chunkshape(), g.blockshape(), new.dtype)?;
                tx.meta_add(B2ND_META, &b2nd)?;
            }
            for m in new.metalayers {
                tx.meta_add(&m.name, &m.content)?;
            }
            fill(tx, g)
        })?;
        let mut store = store;
        store.set_block_cache(ctx.block_cache_bytes());
        Ok(Array { geom: new.geom.clone(), store, ctx: ctx.clone() })
    }

    /// A new array of `params` and `storage` whose chunks `fill` appends in
    /// order, in the creating transaction (the BLZ import streams its
    /// chunks in this way): nothing is left on disk if it fails.
    ///
    /// # Errors
    /// As [`Array::empty`], and whatever `fill` returns.
    pub(crate) fn create_streamed(
        ctx: &Context,
        params: &Params,
        storage: &StorageParams,
        fill: impl FnOnce(&mut Tx<'_>, &Geometry) -> Result<()>,
    ) -> Result<Array> {
        let geom = Geometry::new(params.itemsize, &params.shape, &storage.chunkshape, &storage.blockshape)?;
        let dtype = match &params.dtype {
            Some(d) => {
                meta::check_dtype(d, geom.itemsize())?;
                d.clone()
            }
            None => meta::default_dtype(geom.itemsize()),
        };
        let st = storage.storage();
        let new = NewArray {
            geom,
            storage: &st,
            metalayers: &storage.metalayers,
            dtype: &dtype,
            checksums: ctx.config().wants_checksums(),
        };
        Self::create_with(ctx, &new, fill)
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

    /// Open a persisted array (a frame file or a sparse-frame directory). A
    /// write that was interrupted (the process died) is rolled back first.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if nothing is at `urlpath` or another handle
    /// is writing it; [`Error::InvalidFormat`] if it is not a sound frame or
    /// its metalayers do not describe it; [`Error::Corrupt`] if it was written
    /// with checksums and its checksum table, header marker or recorded
    /// metadata is damaged, or if the context requires checksums
    /// ([`crate::Config::require_checksums`]) and it keeps none;
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub fn open(ctx: &Context, urlpath: &str) -> Result<Array> {
        Self::wrap(ctx, Store::open(urlpath)?)
    }

    /// An in-memory array from a contiguous frame (the bytes are copied).
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if it is not a sound frame; as [`Array::open`] otherwise
    /// ([`Error::Corrupt`] for damaged or required checksums).
    pub fn from_cframe(ctx: &Context, cframe: &[u8]) -> Result<Array> {
        // SAFETY: the slice is valid for its length and copied (copy = true).
        let store = unsafe { Store::from_cframe(cframe.as_ptr(), cframe.len(), true)? };
        Self::wrap(ctx, store)
    }

    /// Serialise to a contiguous frame.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot serialise it.
    pub fn to_cframe(&self) -> Result<Vec<u8>> {
        self.store.to_cframe()
    }

    /// Write a copy to `urlpath`, with the same partitions and contiguity.
    /// The copy is written beside the target and renamed into place, so a
    /// failure leaves whatever was at `urlpath` untouched. Saving an array
    /// onto its own path (however spelt) changes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is taken by something that is
    /// not an array of that kind, lies inside this array's directory or
    /// holds this array; [`Error::Blosc`] or [`Error::Io`] if writing fails.
    pub fn save(&self, urlpath: &str) -> Result<()> {
        self.store.save(urlpath, self.ctx.nthreads())
    }

    /// Remove a persisted array (frame file or sparse-frame directory), with
    /// what a crash left beside it (journal, half-replaced directory). A
    /// path that does not exist is not an error. Only arrays are removed: a
    /// Blosc2 frame file, or a directory holding a sparse frame's index and
    /// chunk files and nothing else.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if something else is at `urlpath` (a
    /// symbolic link included): nothing is removed; [`Error::Io`] if it
    /// cannot be removed.
    pub fn remove(urlpath: &str) -> Result<()> {
        Store::remove(urlpath)
    }

    /// A new array holding `self[start..stop]`, with the partitions,
    /// location and metalayers of `storage`, compressed with `ctx`'s
    /// parameters. Vlmetalayers are not copied.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a region outside the array or invalid
    /// partitions; [`Error::InvalidStorage`] if the path is this array's own
    /// (however spelt: `./a`, a link), lies inside or holds it, or is taken
    /// by something that is not an array; [`Error::Blosc`] if writing fails
    /// (nothing is left behind).
    pub fn get_slice(&self, ctx: &Context, start: &[i64], stop: &[i64], storage: &StorageParams) -> Result<Array> {
        let region = self.geom.region(start, stop)?;
        let geom = Geometry::new(self.itemsize(), &region.shape(), &storage.chunkshape, &storage.blockshape)?;
        let axes = (0..self.ndim()).map(|i| AxisMap::slice(start[i], stop[i] - start[i])).collect();
        let keep: Vec<usize> = (0..self.ndim()).collect();
        let st = storage.storage();
        let d = Derived { geom, storage: &st, axes, keep: &keep, metalayers: &storage.metalayers, vlmeta: false };
        self.derive(ctx, d)
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
        let keep: Vec<usize> = (0..self.ndim()).collect();
        let st = storage.storage();
        self.derive(ctx, Derived { geom, storage: &st, axes, keep: &keep, metalayers: &metas, vlmeta: true })
    }

    /// A new array made of this one's items as `d` maps them. Checksums are
    /// kept when the context asks for them or this array has them.
    pub(super) fn derive(&self, ctx: &Context, d: Derived<'_>) -> Result<Array> {
        // The source's own file or directory, however spelt, or a path
        // inside or around it: writing there would destroy the source.
        if let (Some(target), Some(own)) = (d.storage.urlpath.as_deref(), self.store.storage().urlpath) {
            if let Some(o) = overlap(target, &own).or_else(|| (target == own).then_some(Overlap::Same)) {
                return Err(overlap_error(target, o));
            }
        }
        let vl: Vec<(String, Vec<u8>)> = if d.vlmeta {
            let names = self.store.vlmeta_names().into_iter().filter(|n| n != crate::store::CHECKSUM_VLMETA);
            names.map(|n| self.vlmeta_get(&n).map(|c| (n, c))).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let m = Mapping {
            old_geom: &self.geom,
            old: &self.store,
            axes: padded_axes(d.axes),
            kept: kept_axes(d.keep),
            buffer: None,
        };
        self.build_mapped(ctx, d.geom, d.storage, d.metalayers, &m, &vl)
    }

    /// A new array of `geom` at `storage`, with this array's dtype, the
    /// metalayers `metalayers` and the vlmetalayers `vl`, whose chunks `m`
    /// maps from this array (and its buffer). Compressed chunks are copied
    /// as they are where the encodings agree and a chunk is an old one.
    /// Checksums are kept when the context asks for them or this array has them.
    pub(super) fn build_mapped(
        &self,
        ctx: &Context,
        geom: Geometry,
        storage: &Storage,
        metalayers: &[Metalayer],
        m: &Mapping<'_>,
        vl: &[(String, Vec<u8>)],
    ) -> Result<Array> {
        let reuse = ctx.compression().same_encoding(&self.store.cparams());
        let dtype = self.dtype().unwrap_or_else(|| meta::default_dtype(self.itemsize()));
        let new = NewArray {
            geom,
            storage,
            metalayers,
            dtype: &dtype,
            checksums: ctx.config().wants_checksums() || self.store.has_checksums(),
        };
        let cparams = ctx.config().cparams;
        Array::create_with(ctx, &new, |tx, g| {
            let parts = engine::plan(g, &g.full_region())?;
            let mut batch = Batch::default();
            for group in parts.chunks(engine::batch_len(ctx)) {
                for b in reshape::build(ctx, g, m, group, reuse)? {
                    let chunk = match b {
                        Built::Data(chunk) => chunk,
                        Built::Zeros(chunk) => chunk.to_vec(),
                        Built::Reuse(k) => self.store.chunk(k)?.bytes().to_vec(),
                    };
                    batch.push(tx, chunk)?;
                }
            }
            batch.flush(tx)?;
            for (name, content) in vl {
                tx.vlmeta_put(name, content, false, &cparams)?;
            }
            Ok(())
        })
    }

    /// The user metalayers (all but the geometry ones), in order.
    pub(super) fn user_metalayers(&self) -> Vec<Metalayer> {
        self.store
            .meta_names()
            .into_iter()
            .filter(|n| !super::meta::is_reserved(n))
            .filter_map(|name| self.store.meta_get(&name).map(|content| Metalayer { name, content }))
            .collect()
    }

    /// A new array in which every item is NaN, for the float dtypes `f2`,
    /// `f4` and `f8` in either byte order (`params.dtype`; `None` takes the
    /// little-endian float of `params.itemsize`). Little-endian `f4` and
    /// `f8` are stored as Blosc2 NaN special chunks (a header each, no
    /// data); the others as one repeated-value chunk per chunk (c-blosc2
    /// makes NaN chunks only of the machine's floats of 4 and 8 bytes).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dtype that is not one of those floats
    /// or does not match the item size, and as [`Array::zeros`].
    pub fn nans(ctx: &Context, params: &Params, storage: &StorageParams) -> Result<Array> {
        let dtype = match &params.dtype {
            Some(d) => d.clone(),
            None => match params.itemsize {
                2 | 4 | 8 => format!("<f{}", params.itemsize),
                n => invalid!("nans needs a float dtype; no float has {n} bytes"),
            },
        };
        let (big, size) = match dtype.as_bytes() {
            [o @ (b'<' | b'>' | b'='), b'f', d @ (b'2' | b'4' | b'8')] => {
                let big = *o == b'>' || (*o == b'=' && cfg!(target_endian = "big"));
                (big, usize::from(d - b'0'))
            }
            _ => invalid!("nans needs the dtype of a float of 2, 4 or 8 bytes (<f2, >f4, <f8…), not '{dtype}'"),
        };
        if size != params.itemsize {
            invalid!("dtype '{dtype}' does not describe items of {} bytes", params.itemsize);
        }
        let bits: u64 = match size {
            2 => 0x7e00,
            4 => u64::from(f32::NAN.to_bits()),
            _ => f64::NAN.to_bits(),
        };
        let value: Vec<u8> =
            if big { bits.to_be_bytes()[8 - size..].to_vec() } else { bits.to_le_bytes()[..size].to_vec() };
        let special = size != 2 && big == cfg!(target_endian = "big");
        let params = Params { dtype: Some(dtype), ..params.clone() };
        Self::create_streamed(ctx, &params, storage, |tx, g| {
            if special {
                tx.fill_special(g.nchunks(), g.chunk_nbytes(), Special::Nan)
            } else {
                let chunk =
                    blosc2::repeat_chunk(ctx.compression(), g.itemsize(), g.block_nbytes(), g.chunk_nbytes(), &value)?;
                tx.append_repeated(&chunk, g.nchunks())
            }
        })
    }
}

/// Put a new array's chunks in, as `fill` says.
fn fill_chunks(ctx: &Context, tx: &mut Tx<'_>, g: &Geometry, fill: Fill<'_>) -> Result<()> {
    let nchunks = g.nchunks();
    match fill {
        Fill::Special(kind) => tx.fill_special(nchunks, g.chunk_nbytes(), kind),
        Fill::Value(v) if v.iter().all(|&b| b == 0) => tx.fill_special(nchunks, g.chunk_nbytes(), Special::Zeros),
        Fill::Value(v) => {
            let chunk = blosc2::repeat_chunk(ctx.compression(), g.itemsize(), g.block_nbytes(), g.chunk_nbytes(), v)?;
            tx.append_repeated(&chunk, nchunks)
        }
        Fill::Buffer(buf) => {
            let region = g.full_region();
            let parts = engine::plan(g, &region)?;
            let mut batch = Batch::default();
            let spares = engine::Spares::default();
            // Chunks are built a bounded group at a time (a few per worker), and
            // appended by the many; the next ones reuse the buffers of those stored.
            for group in parts.chunks(engine::batch_len(ctx)) {
                for (_, chunk) in engine::build_chunks(ctx, None, g, &region, group, buf, g.shape(), Some(&spares))? {
                    batch.push(tx, chunk)?;
                }
                spares.give(batch.spent());
            }
            batch.flush(tx)
        }
    }
}

/// Axis maps for a geometry's `dims()` axes: a 0-dim array reads as one axis of length 1.
pub(super) fn padded_axes(axes: Vec<AxisMap>) -> Vec<AxisMap> {
    if axes.is_empty() {
        vec![AxisMap::slice(0, 1)]
    } else {
        axes
    }
}

/// The old axis each new axis reads, padded like [`padded_axes`].
pub(super) fn kept_axes(keep: &[usize]) -> Vec<Option<usize>> {
    if keep.is_empty() {
        vec![None]
    } else {
        keep.iter().map(|&k| Some(k)).collect()
    }
}
