//! Reshaping in place: resize, insert, append, delete, squeeze. New chunks
//! are built (compressed in parallel) before the store's transaction starts;
//! the transaction then swaps them in and records the new geometry.
//! `expand_dims` changes no chunk: it copies them, compressed, under new
//! geometry metalayers.

use super::create::{kept_axes, padded_axes, Derived, NewArray};
use super::{Array, Metalayer};
use crate::context::Context;
use crate::error::{invalid, Error, Result};
use crate::geometry::{Geometry, MAX_DIM};
use crate::meta::{self, B2ND_META, CATERVA_META};
use crate::reshape::{self, AxisMap, Mapping, Source};
use crate::store::schunk::Storage;
use crate::store::{Batch, Tx};

impl Array {
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
        self.optimistically(|a| a.resize_here(new_shape, start))
    }

    /// [`Array::resize`] on this handle's view of the array.
    fn resize_here(&mut self, new_shape: &[i64], start: Option<&[i64]>) -> Result<()> {
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
        self.optimistically(|a| a.insert_here(buffer, axis, at))
    }

    /// [`Array::insert`] on this handle's view of the array.
    fn insert_here(&mut self, buffer: &[u8], axis: i64, at: i64) -> Result<()> {
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
        // At the end of the array as it is when the append is made.
        self.optimistically(|arr| {
            let end = arr.shape()[arr.check_axis(axis)?];
            arr.insert_here(buffer, axis, end)
        })
    }

    /// Remove the items `start..start + len` of `axis`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `axis` is not an axis, `start` or `len`
    /// is negative, or the range goes past the end. The array is unchanged.
    pub fn delete(&mut self, axis: i64, start: i64, len: i64) -> Result<()> {
        self.optimistically(|a| a.delete_here(axis, start, len))
    }

    /// [`Array::delete`] on this handle's view of the array.
    fn delete_here(&mut self, axis: i64, start: i64, len: i64) -> Result<()> {
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
        if same_layout {
            // Axes of one chunk row and one block row: the stored layout is the same.
            let dtype = self.dtype();
            self.store.write(|tx| write_geometry(tx, &new_geom, dtype.as_deref()))?;
            self.geom = new_geom;
            Ok(())
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

    fn check_axis(&self, axis: i64) -> Result<usize> {
        match usize::try_from(axis) {
            Ok(a) if a < self.ndim() => Ok(a),
            _ => invalid!("axis {axis} is not in 0..{}", self.ndim()),
        }
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
        let built = {
            let m = Mapping {
                old_geom: &self.geom,
                old: &self.store,
                axes: padded_axes(axes),
                kept: kept_axes(&(0..self.ndim()).collect::<Vec<_>>()),
                buffer,
            };
            reshape::build_all(&self.ctx, &new_geom, &m, true)?
        };
        let dtype = self.dtype();
        self.store.write(|tx| {
            reshape::apply_in_place(tx, built)?;
            write_geometry(tx, &new_geom, dtype.as_deref())
        })?;
        self.geom = new_geom;
        Ok(())
    }

    /// Replace the store with one laid out for `new_geom`, whose axes are
    /// the old axes `keep` (the others have length 1): a new array written
    /// beside this one (or in memory) takes its place.
    fn relayout(&mut self, new_geom: Geometry, keep: &[usize]) -> Result<()> {
        let axes: Vec<AxisMap> = keep.iter().map(|&i| AxisMap::slice(0, self.shape()[i])).collect();
        let metas = self.user_metalayers();
        let ctx = self.ctx.clone();
        self.replace_store(|a, st| {
            let d = Derived { geom: new_geom, storage: st, axes, keep, metalayers: &metas, vlmeta: true };
            a.derive(&ctx, d)
        })
    }

    /// Insert an axis of length 1 at position `axis` (`0..=ndim`), with
    /// chunk and block length 1 there.
    ///
    /// The stored layout does not change (the chunk and block grids gain an
    /// axis of one row), so no chunk is decompressed or recompressed. But
    /// c-blosc2 metalayers never grow and the geometry metalayers must, so
    /// the super-chunk is copied: chunk by chunk, compressed bytes as they
    /// are, with the user metalayers, vlmetalayers and checksums. A file or
    /// directory array is written beside its path and renamed into place
    /// (all or nothing); the handle then refers to the new one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `axis` is not in `0..=ndim` or the array
    /// already has [`MAX_DIM`] axes; [`Error::Blosc`] or [`Error::Io`] if
    /// writing fails (the array is as it was).
    pub fn expand_dims(&mut self, axis: i64) -> Result<()> {
        let n = self.ndim();
        let a = match usize::try_from(axis) {
            Ok(a) if a <= n => a,
            _ => invalid!("axis {axis} is not in 0..={n}"),
        };
        if n >= MAX_DIM {
            invalid!("the array already has {MAX_DIM} axes, the most there can be");
        }
        let g = &self.geom;
        let (mut shape, mut chunks, mut blocks) =
            (g.shape().to_vec(), g.chunkshape().to_vec(), g.blockshape().to_vec());
        shape.insert(a, 1);
        chunks.insert(a, 1);
        blocks.insert(a, 1);
        let new_geom = Geometry::new(g.itemsize(), &shape, &chunks, &blocks)?;
        self.rewrite_as(new_geom)
    }
    /// Replace the store with a copy described by `new_geom`, which has the
    /// same stored layout: the compressed chunks are copied as they are.
    fn rewrite_as(&mut self, new_geom: Geometry) -> Result<()> {
        let ctx = self.ctx.clone();
        self.replace_store(|a, st| a.copy_chunks(&ctx, new_geom, st))
    }

    /// A new array at `st` described by `geom` (the same stored layout as
    /// this one) holding this array's compressed chunks, metalayers,
    /// vlmetalayers and dtype.
    fn copy_chunks(&self, ctx: &Context, geom: Geometry, st: &Storage) -> Result<Array> {
        let metas: Vec<Metalayer> = self.user_metalayers();
        let vl = self.vlmetalayers()?;
        let dtype = self.dtype().unwrap_or_else(|| meta::default_dtype(self.itemsize()));
        let new = NewArray {
            geom,
            storage: st,
            metalayers: &metas,
            dtype: &dtype,
            checksums: ctx.config().wants_checksums() || self.store.has_checksums(),
        };
        let cparams = ctx.config().cparams;
        Array::create_with(ctx, &new, |tx, _| {
            let mut batch = Batch::default();
            for k in 0..self.store.nchunks() {
                batch.push(tx, self.store.chunk(k)?.bytes().to_vec())?;
            }
            batch.flush(tx)?;
            for (name, content) in &vl {
                tx.vlmeta_put(name, content, false, &cparams)?;
            }
            Ok(())
        })
    }
}

/// Record `geom` (same chunk layout as before) in the geometry metalayers
/// the store has: `caterva`, and `b2nd` with `dtype` when it has one.
fn write_geometry(tx: &mut Tx<'_>, geom: &Geometry, dtype: Option<&str>) -> Result<()> {
    let (shape, chunks, blocks) = (geom.shape(), geom.chunkshape(), geom.blockshape());
    if tx.meta_exists(CATERVA_META) {
        tx.meta_update(CATERVA_META, &meta::encode_caterva(shape, chunks, blocks)?)?;
    }
    if let Some(dtype) = dtype {
        tx.meta_update(B2ND_META, &meta::encode_b2nd(shape, chunks, blocks, dtype)?)?;
    }
    Ok(())
}
