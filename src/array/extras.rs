//! What c-blosc2 3.x's b2nd added after caterva 0.5, on this library's
//! core: chunk lists for schedulers ([`Array::slice_nchunks`],
//! [`Array::chunk_region`]), N-d buffer copies ([`copy_buffer`]),
//! [`Array::expand_dims`], [`Array::nans`], [`Array::concatenate`] and
//! [`Array::append_array`]. Arrays inside larger files (open at an offset,
//! save by appending) are in `offset.rs`.

use super::create::{kept_axes, padded_axes, NewArray};
use super::{Array, Metalayer, Params, StorageParams};
use crate::buffer;
use crate::context::Context;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{invalid, Result};
use crate::geometry::{c_strides, checked_product, Geometry, MAX_DIM};
use crate::meta;
use crate::reshape::{self, AxisMap, Mapping, Source};
use crate::store::blosc::{self, Special, Storage};
use crate::store::{overlap, overlap_error, Batch, Overlap, Store};

impl Array {
    /// The chunks that the region `start..stop` touches, by chunk number
    /// (C order of the chunk grid, as `b2nd_get_slice_nchunks` lists them),
    /// so that a thread pool, MPI ranks or Dask can split work along chunk
    /// boundaries: writes to different chunks never touch the same bytes.
    /// An empty region touches no chunk (b2nd lists the chunk holding
    /// `start`); a 0-dim array has one chunk, 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `start`/`stop` do not have `ndim`
    /// entries or the region leaves the array.
    pub fn slice_nchunks(&self, start: &[i64], stop: &[i64]) -> Result<Vec<i64>> {
        let region = self.geom.region(start, stop)?;
        let mut out = Vec::new();
        buffer::reserve(&mut out, usize::try_from(self.geom.nchunks_in(&region)).unwrap_or(0), || {
            "the chunk list".into()
        })?;
        self.geom.for_each_chunk_in(&region, |part| out.push(part.nchunk));
        Ok(out)
    }

    /// The region of the array that chunk `nchunk` holds: `(start, stop)`,
    /// `ndim` entries each, cut at the array's edge (the last chunk of an
    /// axis may hold fewer items than the chunk shape).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `nchunk` is not in `0..nchunks`.
    pub fn chunk_region(&self, nchunk: i64) -> Result<(Vec<i64>, Vec<i64>)> {
        let g = &self.geom;
        if nchunk < 0 || nchunk >= g.nchunks() {
            invalid!("chunk {nchunk} is not in 0..{}", g.nchunks());
        }
        let n = g.ndim();
        let grid = g.chunk_grid();
        let strides = c_strides(&grid[..g.dims()]);
        let (mut start, mut stop) = (vec![0i64; n], vec![0i64; n]);
        for i in 0..n {
            let c = i64::from(g.chunkshape()[i]);
            let coord = (nchunk / strides[i]) % grid[i];
            start[i] = coord * c;
            stop[i] = (start[i] + c).min(g.shape()[i]);
        }
        Ok((start, stop))
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
                    blosc::repeat_chunk(ctx.compression(), g.itemsize(), g.block_nbytes(), g.chunk_nbytes(), &value)?;
                tx.append_repeated(&chunk, g.nchunks())
            }
        })
    }

    /// A new array holding this array followed by `other` along `axis`,
    /// with the partitions, location and metalayers of `storage`,
    /// compressed with `ctx`'s parameters. The shapes must agree on every
    /// other axis; chunk boundaries need not align. The new array keeps this
    /// array's dtype, user metalayers (those in `storage` added or replacing
    /// them) and vlmetalayers. Where the partitions and compression are
    /// this array's and a chunk holds only its items, the compressed chunk
    /// is copied as it is. `other` is read whole into memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if either array is 0-dim, `axis` is not an
    /// axis, the item sizes or dtypes differ, the shapes differ off `axis`,
    /// or the partitions are invalid; [`Error::InvalidStorage`] if the path
    /// is either array's own (however spelt), lies inside or holds one, or
    /// is taken by something that is not an array; [`Error::Blosc`] if
    /// writing fails (nothing is left behind).
    pub fn concatenate(&self, ctx: &Context, other: &Array, axis: i64, storage: &StorageParams) -> Result<Array> {
        let (a, shape) = self.concat_shape(other, axis)?;
        let geom = Geometry::new(self.itemsize(), &shape, &storage.chunkshape, &storage.blockshape)?;
        let st = storage.storage();
        if let Some(target) = st.urlpath.as_deref() {
            for own in [self.store.storage().urlpath, other.store.storage().urlpath].into_iter().flatten() {
                if let Some(o) = overlap(target, &own).or_else(|| (target == own).then_some(Overlap::Same)) {
                    return Err(overlap_error(target, o));
                }
            }
        }
        let buf = other.to_vec()?;
        let axes = (0..self.ndim())
            .map(|i| {
                if i == a {
                    AxisMap::insert(self.shape()[a], self.shape()[a], other.shape()[a], Source::Buffer(0))
                } else {
                    AxisMap::slice(0, shape[i])
                }
            })
            .collect();
        let m = Mapping {
            old_geom: &self.geom,
            old: &self.store,
            axes: padded_axes(axes),
            kept: kept_axes(&(0..self.ndim()).collect::<Vec<_>>()),
            buffer: Some((&buf, other.shape().to_vec())),
        };
        let mut metas = self.user_metalayers();
        for md in &storage.metalayers {
            match metas.iter_mut().find(|o| o.name == md.name) {
                Some(o) => o.content.clone_from(&md.content),
                None => metas.push(md.clone()),
            }
        }
        let vl = self.vlmetalayers()?;
        self.build_mapped(ctx, geom, &st, &metas, &m, &vl)
    }

    /// Concatenate in place: append `other`'s items at the end of `axis`
    /// (as [`Array::append`] does with a buffer), in any storage. The
    /// shapes must agree off `axis`; `other` is read whole into memory and
    /// the change is one transaction (all or nothing).
    ///
    /// # Errors
    /// As [`Array::concatenate`] for the arguments; as [`Array::append`]
    /// otherwise. The array is unchanged.
    pub fn append_array(&mut self, other: &Array, axis: i64) -> Result<()> {
        let (a, shape) = self.concat_shape(other, axis)?;
        let buf = other.to_vec()?;
        if buf.is_empty() {
            // No items, but the axis may still grow (another axis is empty).
            self.resize(&shape, None)
        } else {
            self.append(&buf, a as i64)
        }
    }

    /// Open, read-only, the array whose contiguous frame starts at byte
    /// `offset` of the file `urlpath` (as `b2nd_open_offset` does): one of
    /// several arrays saved into one file with [`Array::save_append`], or a
    /// frame embedded in another format. The frame is checked like any
    /// other before c-blosc2 reads it; its chunks are read from the file as
    /// needed.
    ///
    /// Writes to the array ([`Array::set_slice_buffer`], reshapes,
    /// metalayer updates…) are refused with [`Error::InvalidStorage`]:
    /// c-blosc2 writes a changed frame past its end, where the file's next
    /// frame lies, and the journal and the lock protect whole files. Copy it
    /// ([`Array::copy`], [`Array::save`] to another path) to change it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative offset;
    /// [`Error::InvalidStorage`] if nothing is at `urlpath` or it is not a
    /// regular file; [`Error::InvalidFormat`] if no sound frame starts at
    /// `offset` or fits in the file, or its metalayers do not describe an
    /// array; as [`Array::open`] otherwise.
    pub fn open_offset(ctx: &Context, urlpath: &str, offset: i64) -> Result<Array> {
        Self::wrap(ctx, Store::open_offset(urlpath, offset)?)
    }

    /// Where the array's frame starts in its file, for an array opened with
    /// [`Array::open_offset`] (`None` otherwise).
    #[must_use]
    pub fn frame_offset(&self) -> Option<i64> {
        self.store.offset().and_then(|o| i64::try_from(o).ok())
    }

    /// Append the array, as a contiguous frame, to the end of the file
    /// `urlpath` (created if missing) and return the byte offset where its
    /// frame starts (as `b2nd_save_append` does): open it again with
    /// [`Array::open_offset`], or with python-blosc2's
    /// `blosc2.open(urlpath, offset=...)`. Many arrays can share one file
    /// this way. The file is synced; a failure cuts it back to its old
    /// length (or removes it if this call created it). A process killed
    /// mid-append may leave part of a frame after the file's old end;
    /// the bytes before it are never written.
    ///
    /// The file may hold anything before; if it is an array's frame file,
    /// that array becomes one of the file's frames: its handles refuse to
    /// write from then on, and it opens with [`Array::open_offset`] at 0.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is empty, a directory or a
    /// symbolic link, or another handle is writing it; [`Error::Io`] if
    /// writing fails; [`Error::Blosc`] if the frame cannot be made.
    pub fn save_append(&self, urlpath: &str) -> Result<i64> {
        self.store.append_to_file(urlpath)
    }

    /// The axis and the shape of `self` and `other` concatenated along `axis`.
    fn concat_shape(&self, other: &Array, axis: i64) -> Result<(usize, Vec<i64>)> {
        let n = self.ndim();
        if n == 0 || other.ndim() == 0 {
            invalid!("0-dim arrays cannot be concatenated");
        }
        if other.ndim() != n {
            invalid!("cannot concatenate an array of {} axes to one of {n}", other.ndim());
        }
        let a = match usize::try_from(axis) {
            Ok(a) if a < n => a,
            _ => invalid!("axis {axis} is not in 0..{n}"),
        };
        if other.itemsize() != self.itemsize() {
            invalid!("items of {} bytes cannot join items of {} bytes", other.itemsize(), self.itemsize());
        }
        if let (Some(x), Some(y)) = (self.dtype(), other.dtype()) {
            if x != y {
                invalid!("dtypes differ: '{x}' and '{y}'");
            }
        }
        if let Some(i) = (0..n).find(|&i| i != a && self.shape()[i] != other.shape()[i]) {
            invalid!(
                "shapes {:?} and {:?} differ on axis {i}, not only on the concatenation axis {a}",
                self.shape(),
                other.shape()
            );
        }
        let mut shape = self.shape().to_vec();
        shape[a] = shape[a].checked_add(other.shape()[a]).ok_or_else(|| {
            crate::error::Error::InvalidArgument(format!("axis {a} would be longer than {}", i64::MAX))
        })?;
        Ok((a, shape))
    }

    /// The vlmetalayers (the checksum table aside), in order.
    fn vlmetalayers(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let names = self.store.vlmeta_names().into_iter().filter(|n| n != crate::store::CHECKSUM_VLMETA);
        names.map(|n| self.vlmeta_get(&n).map(|c| (n, c))).collect()
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

/// Copy the box `src_start..src_stop` of `src`, a C-order buffer of
/// `src_pad_shape` items of `itemsize` bytes, into `dst`, a C-order buffer of
/// `dst_pad_shape` items, at `dst_start` (as `b2nd_copy_buffer` does). Items
/// of `dst` outside the box are left as they are. Runs of the last axis
/// are copied with one `memcpy` each, by the routine that builds chunks
/// from boxes in reshapes. A 0-dim copy moves one item.
///
/// # Errors
/// [`Error::InvalidArgument`] if the shapes and positions do not have the
/// same number of entries (at most [`MAX_DIM`]), `itemsize` is 0, a shape is
/// negative, the box does not lie inside `src_pad_shape` or, moved to
/// `dst_start`, inside `dst_pad_shape`, or a buffer is smaller than its
/// shape. Nothing is written then.
#[allow(clippy::too_many_arguments)]
pub fn copy_buffer(
    itemsize: usize,
    src: &[u8],
    src_pad_shape: &[i64],
    src_start: &[i64],
    src_stop: &[i64],
    dst: &mut [u8],
    dst_pad_shape: &[i64],
    dst_start: &[i64],
) -> Result<()> {
    let n = src_pad_shape.len();
    if n > MAX_DIM {
        invalid!("{n} dimensions; at most {MAX_DIM}");
    }
    if [src_start.len(), src_stop.len(), dst_pad_shape.len(), dst_start.len()].iter().any(|&l| l != n) {
        invalid!("src_pad_shape, src_start, src_stop, dst_pad_shape and dst_start need {n} entries each");
    }
    if itemsize == 0 {
        invalid!("itemsize is 0");
    }
    let fits = |what: &str, shape: &[i64], len: usize| -> Result<()> {
        if let Some(i) = shape.iter().position(|&s| s < 0) {
            invalid!("{what}[{i}] = {} is negative", shape[i]);
        }
        let need = checked_product(shape)
            .and_then(|p| usize::try_from(p).ok())
            .and_then(|p| p.checked_mul(itemsize))
            .ok_or_else(|| crate::error::Error::InvalidArgument(format!("{what} {shape:?} overflows")))?;
        if len < need {
            invalid!(
                "a buffer of {len} bytes is smaller than {what} {shape:?} of {itemsize}-byte items ({need} bytes)"
            );
        }
        Ok(())
    };
    fits("src_pad_shape", src_pad_shape, src.len())?;
    fits("dst_pad_shape", dst_pad_shape, dst.len())?;
    let mut shape = vec![0i64; n];
    for i in 0..n {
        if src_start[i] < 0 || src_start[i] > src_stop[i] || src_stop[i] > src_pad_shape[i] {
            invalid!("source box {}..{} on axis {i} is not inside 0..{}", src_start[i], src_stop[i], src_pad_shape[i]);
        }
        shape[i] = src_stop[i] - src_start[i];
        if dst_start[i] < 0 || dst_start[i] > dst_pad_shape[i] - shape[i] {
            invalid!(
                "{} items from {} on axis {i} do not fit in the destination's 0..{}",
                shape[i],
                dst_start[i],
                dst_pad_shape[i]
            );
        }
    }
    if n == 0 {
        dst[..itemsize].copy_from_slice(&src[..itemsize]);
        return Ok(());
    }
    if shape.contains(&0) {
        return Ok(());
    }
    let (ss, ds) = (c_strides(src_pad_shape), c_strides(dst_pad_shape));
    let soff: i64 = (0..n).map(|i| src_start[i] * ss[i]).sum();
    let doff: i64 = (0..n).map(|i| dst_start[i] * ds[i]).sum();
    let (soff, doff) = (soff as usize * itemsize, doff as usize * itemsize);
    reshape::copy_box(&src[soff..], &ss, &mut dst[doff..], &ds, &shape, itemsize);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_copy_between_padded_buffers() {
        // 2-byte items: a 2 x 3 box at (1, 1) of a 4 x 5 source, to (0, 2) of a 3 x 6 destination.
        let src: Vec<u8> = (0..40u8).collect();
        let mut dst = vec![0xFFu8; 36];
        copy_buffer(2, &src, &[4, 5], &[1, 1], &[3, 4], &mut dst, &[3, 6], &[0, 2]).unwrap();
        for r in 0..3 {
            for c in 0..6 {
                let got = &dst[(r * 6 + c) * 2..(r * 6 + c) * 2 + 2];
                if r < 2 && (2..5).contains(&c) {
                    let s = ((r + 1) * 5 + (c - 2 + 1)) * 2;
                    assert_eq!(got, &src[s..s + 2], "({r}, {c})");
                } else {
                    assert_eq!(got, &[0xFF, 0xFF], "({r}, {c})");
                }
            }
        }
        // 0-dim: one item; empty boxes copy nothing.
        let mut one = [0u8; 3];
        copy_buffer(3, &[7, 8, 9], &[], &[], &[], &mut one, &[], &[]).unwrap();
        assert_eq!(one, [7, 8, 9]);
        let mut d = [1u8; 4];
        copy_buffer(1, &[5; 4], &[4], &[2], &[2], &mut d, &[4], &[4]).unwrap();
        assert_eq!(d, [1; 4]);
    }

    #[test]
    fn bad_boxes_are_refused_and_write_nothing() {
        let src = [1u8; 16];
        let mut dst = [0u8; 16];
        // Source shape, start, stop; destination shape, start.
        type Case<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64], &'a [i64]);
        let bad: &[Case<'_>] = &[
            (&[4, 4], &[0, 0], &[5, 4], &[4, 4], &[0, 0]),  // stop past the source
            (&[4, 4], &[2, 0], &[1, 4], &[4, 4], &[0, 0]),  // start > stop
            (&[4, 4], &[0, 0], &[2, 2], &[4, 4], &[3, 0]),  // past the destination
            (&[4, 4], &[0, 0], &[2, 2], &[4, 4], &[-1, 0]), // negative
            (&[5, 4], &[0, 0], &[1, 1], &[4, 4], &[0, 0]),  // source buffer too small
            (&[4, 4], &[0, 0], &[1, 1], &[4, 5], &[0, 0]),  // destination buffer too small
            (&[4, 4], &[0], &[1, 1], &[4, 4], &[0, 0]),     // lengths differ
            (&[-4, 4], &[0, 0], &[0, 0], &[4, 4], &[0, 0]), // negative shape
        ];
        for (sp, ss, st, dp, ds) in bad {
            let e = copy_buffer(1, &src, sp, ss, st, &mut dst, dp, ds).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{sp:?} {ss:?} {st:?} {dp:?} {ds:?}");
            assert_eq!(dst, [0; 16]);
        }
        assert!(copy_buffer(0, &src, &[4], &[0], &[1], &mut dst, &[4], &[0]).is_err());
    }
}
