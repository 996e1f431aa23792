//! N-dimensional geometry: shapes, the two-level partition (chunks, blocks),
//! extended shapes, strides, and regions with their intersections with the
//! chunk and block grids.
//!
//! Every shape-like array is stored with [`MAX_DIM`] entries; those past
//! `ndim` hold 1. A 0-dim array (one item) therefore behaves, for every
//! computation here, like a 1-dim array of shape `[1]`, which is why the
//! iteration helpers work over [`Geometry::dims`] = `max(ndim, 1)` axes.

use crate::error::{invalid, Result};

/// Maximum number of dimensions of an array (`CATERVA_MAX_DIM`).
pub const MAX_DIM: usize = 8;

/// Largest uncompressed chunk c-blosc2 accepts (`BLOSC2_MAX_BUFFERSIZE`).
pub(crate) const MAX_CHUNK_BYTES: i64 = i32::MAX as i64 - 32;

/// The most chunks an array may have: c-blosc2 keeps a frame's chunk
/// offsets (8 bytes each) in one chunk, itself at most [`MAX_CHUNK_BYTES`].
pub(crate) const MAX_CHUNKS: i64 = MAX_CHUNK_BYTES / 8;

/// The largest item, in bytes: one item per chunk, at most
/// `MAX_CHUNK_BYTES` (2 GiB less 32 bytes). Items over 255 bytes (NumPy `<U100`, records with
/// sub-arrays) are compressed with a typesize that divides them, as
/// python-blosc2 stores them; the C ABI's `itemsize` (a `uint8_t`) holds
/// only up to 255.
pub const MAX_ITEMSIZE: usize = MAX_CHUNK_BYTES as usize;

/// `ceil(x / m)` for `x >= 0`, `m > 0`.
#[must_use]
pub(crate) fn div_ceil(x: i64, m: i64) -> i64 {
    x / m + i64::from(x % m != 0)
}

/// Round `x` up to a multiple of `m` (`m == 0` gives 0).
fn round_up(x: i64, m: i64) -> i64 {
    if m == 0 {
        0
    } else {
        div_ceil(x, m).saturating_mul(m)
    }
}

/// C-order (row-major) strides, in items, of an array of shape `dims`.
/// Entries past `dims.len()` are 0.
#[must_use]
pub(crate) fn c_strides(dims: &[i64]) -> [i64; MAX_DIM] {
    let mut s = [0i64; MAX_DIM];
    let mut acc = 1i64;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc = acc.saturating_mul(dims[i]);
    }
    s
}

/// Product of `dims`, or `None` on overflow.
#[must_use]
pub(crate) fn checked_product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d))
}

/// Visit every index of the box `[lo, hi)` in C order. Nothing is visited
/// when the box is empty; one index when `lo` is empty (0 axes).
pub fn for_each_index(lo: &[i64], hi: &[i64], mut f: impl FnMut(&[i64])) {
    let n = lo.len();
    if (0..n).any(|i| lo[i] >= hi[i]) {
        return;
    }
    let mut idx = [0i64; MAX_DIM];
    idx[..n].copy_from_slice(lo);
    loop {
        f(&idx[..n]);
        let mut axis = n;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < hi[axis] {
                break;
            }
            idx[axis] = lo[axis];
        }
    }
}

/// The shape and the two-level partition of an array, validated.
///
/// Invariants (checked by [`Geometry::new`]): `ndim <= 8`, `1 <= itemsize <=
/// MAX_ITEMSIZE`, `shape[i] >= 0`; on a non-empty axis `1 <= blockshape[i] <=
/// chunkshape[i]`; on an empty axis either both partitions are 0 or they obey
/// the same rule (a real chunkshape lets the axis grow later); one chunk fits
/// in a Blosc2 chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    itemsize: usize,
    ndim: usize,
    shape: [i64; MAX_DIM],
    chunkshape: [i32; MAX_DIM],
    blockshape: [i32; MAX_DIM],
}

impl Geometry {
    /// Validate and build a geometry. `shape`, `chunkshape` and `blockshape`
    /// must all have length `ndim`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when any invariant above is broken.
    pub fn new(itemsize: usize, shape: &[i64], chunkshape: &[i32], blockshape: &[i32]) -> Result<Self> {
        let ndim = shape.len();
        if ndim > MAX_DIM {
            invalid!("ndim {ndim} is larger than {MAX_DIM}");
        }
        if chunkshape.len() != ndim || blockshape.len() != ndim {
            invalid!("shape, chunkshape and blockshape must have the same length");
        }
        if itemsize == 0 || itemsize > MAX_ITEMSIZE {
            invalid!("itemsize {itemsize} is not in 1..={MAX_ITEMSIZE}");
        }
        for i in 0..ndim {
            let (s, c, b) = (shape[i], chunkshape[i], blockshape[i]);
            if s < 0 {
                invalid!("shape[{i}] = {s} is negative");
            }
            if c < 0 || b < 0 {
                invalid!("chunkshape[{i}] = {c} and blockshape[{i}] = {b} must not be negative");
            }
            let zero_partition = c == 0 && b == 0;
            if s > 0 || !zero_partition {
                if b == 0 || c == 0 {
                    invalid!(
                        "chunkshape[{i}] = {c} and blockshape[{i}] = {b} must be at least 1 on an axis of length {s}"
                    );
                }
                if b > c {
                    invalid!("blockshape[{i}] = {b} is larger than chunkshape[{i}] = {c}");
                }
            }
        }
        let mut g =
            Geometry { itemsize, ndim, shape: [1; MAX_DIM], chunkshape: [1; MAX_DIM], blockshape: [1; MAX_DIM] };
        g.shape[..ndim].copy_from_slice(shape);
        g.chunkshape[..ndim].copy_from_slice(chunkshape);
        g.blockshape[..ndim].copy_from_slice(blockshape);
        let chunk_items = checked_product(&g.ext_chunkshape_internal()[..ndim]);
        match chunk_items.and_then(|n| n.checked_mul(itemsize as i64)) {
            Some(bytes) if bytes <= MAX_CHUNK_BYTES => {}
            _ => {
                invalid!("a chunk of {chunkshape:?} items (blocks {blockshape:?}) exceeds the 2 GiB Blosc2 chunk limit")
            }
        }
        if checked_product(&g.extshape()[..ndim]).and_then(|n| n.checked_mul(itemsize as i64)).is_none() {
            invalid!("shape {shape:?} is too large: its size in bytes overflows 64 bits");
        }
        if g.nchunks() > MAX_CHUNKS {
            invalid!(
                "shape {shape:?} in chunks of {chunkshape:?} needs {} chunks; a Blosc2 super-chunk indexes at most {MAX_CHUNKS}",
                g.nchunks()
            );
        }
        Ok(g)
    }

    /// The same partitions with another shape.
    ///
    /// # Errors
    /// As [`Geometry::new`].
    pub fn with_shape(&self, shape: &[i64]) -> Result<Self> {
        Geometry::new(self.itemsize, shape, self.chunkshape(), self.blockshape())
    }

    /// Number of dimensions (0..=8).
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.ndim
    }
    /// Axes the engine iterates over: `max(ndim, 1)`; a 0-dim array is a 1-dim array of one item.
    #[must_use]
    pub fn dims(&self) -> usize {
        self.ndim.max(1)
    }
    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.itemsize
    }
    /// The shape (`ndim` entries).
    #[must_use]
    pub fn shape(&self) -> &[i64] {
        &self.shape[..self.ndim]
    }
    /// The chunk shape (`ndim` entries).
    #[must_use]
    pub fn chunkshape(&self) -> &[i32] {
        &self.chunkshape[..self.ndim]
    }
    /// The block shape (`ndim` entries).
    #[must_use]
    pub fn blockshape(&self) -> &[i32] {
        &self.blockshape[..self.ndim]
    }
    /// Shape padded with 1s to [`MAX_DIM`].
    #[must_use]
    pub fn shape_full(&self) -> [i64; MAX_DIM] {
        self.shape
    }
    /// Chunk shape padded with 1s to [`MAX_DIM`].
    #[must_use]
    pub fn chunkshape_full(&self) -> [i32; MAX_DIM] {
        self.chunkshape
    }
    /// Block shape padded with 1s to [`MAX_DIM`].
    #[must_use]
    pub fn blockshape_full(&self) -> [i32; MAX_DIM] {
        self.blockshape
    }

    /// Whether some axis has length 0 (then the array has no items and no chunks).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.shape().contains(&0)
    }

    /// Shape rounded up to a multiple of the chunk shape (0 on empty axes), padded with 1s.
    #[must_use]
    pub fn extshape(&self) -> [i64; MAX_DIM] {
        let mut e = [1i64; MAX_DIM];
        for i in 0..self.ndim {
            e[i] = round_up(self.shape[i], i64::from(self.chunkshape[i]));
        }
        e
    }

    /// Chunk shape rounded up to a multiple of the block shape, as the caterva
    /// 0.5 struct reports it: 0 on empty axes, padded with 1s.
    #[must_use]
    pub fn extchunkshape(&self) -> [i64; MAX_DIM] {
        let mut e = self.ext_chunkshape_internal();
        for i in 0..self.ndim {
            if self.shape[i] == 0 {
                e[i] = 0;
            }
        }
        e
    }

    /// Chunk shape rounded up to the block shape on every axis, padded with
    /// 1s: the layout of a stored chunk, also for an empty axis.
    #[must_use]
    pub fn stored_chunkshape(&self) -> [i64; MAX_DIM] {
        self.ext_chunkshape_internal()
    }

    /// Chunk shape rounded up to the block shape, on every axis (the layout
    /// of a stored chunk, also for an empty axis with a real partition).
    fn ext_chunkshape_internal(&self) -> [i64; MAX_DIM] {
        let mut e = [1i64; MAX_DIM];
        for i in 0..self.ndim {
            e[i] = round_up(i64::from(self.chunkshape[i]), i64::from(self.blockshape[i]));
        }
        e
    }

    /// Items in the array.
    #[must_use]
    pub fn nitems(&self) -> i64 {
        self.shape().iter().product()
    }
    /// Items in the extended array (`prod(extshape)`).
    #[must_use]
    pub fn extnitems(&self) -> i64 {
        self.extshape().iter().product()
    }
    /// Items in a chunk, padding to the block grid excluded (`prod(chunkshape)`).
    #[must_use]
    pub fn chunk_nitems(&self) -> i64 {
        self.chunkshape().iter().map(|&c| i64::from(c)).product()
    }
    /// Items in a stored chunk (`prod(extchunkshape)`), also when an axis is empty.
    #[must_use]
    pub fn chunk_stored_nitems(&self) -> i64 {
        self.ext_chunkshape_internal().iter().product()
    }
    /// Items in a block.
    #[must_use]
    pub fn block_nitems(&self) -> i64 {
        self.blockshape().iter().map(|&b| i64::from(b)).product()
    }
    /// Uncompressed bytes of a stored chunk.
    #[must_use]
    pub fn chunk_nbytes(&self) -> usize {
        self.chunk_stored_nitems() as usize * self.itemsize
    }
    /// Uncompressed bytes of a block (the Blosc2 blocksize).
    #[must_use]
    pub fn block_nbytes(&self) -> usize {
        self.block_nitems() as usize * self.itemsize
    }

    /// Chunks along each axis (padded with 1s); 0 on empty axes.
    #[must_use]
    pub fn chunk_grid(&self) -> [i64; MAX_DIM] {
        let mut g = [1i64; MAX_DIM];
        for i in 0..self.ndim {
            let c = i64::from(self.chunkshape[i]);
            g[i] = if c == 0 { 0 } else { div_ceil(self.shape[i], c) };
        }
        g
    }

    /// Blocks along each axis of a chunk (padded with 1s).
    #[must_use]
    pub fn block_grid(&self) -> [i64; MAX_DIM] {
        let e = self.ext_chunkshape_internal();
        let mut g = [1i64; MAX_DIM];
        for i in 0..self.ndim {
            let b = i64::from(self.blockshape[i]);
            g[i] = if b == 0 { 0 } else { e[i] / b };
        }
        g
    }

    /// Number of chunks in the super-chunk: 0 if an axis is empty, 1 for 0-dim.
    #[must_use]
    pub fn nchunks(&self) -> i64 {
        if self.is_empty() {
            0
        } else {
            self.chunk_grid().iter().product()
        }
    }

    /// Number of blocks in a chunk.
    #[must_use]
    pub fn nblocks(&self) -> i64 {
        self.block_grid().iter().product()
    }

    /// The number of blocks that `part` touches in its chunk.
    #[must_use]
    pub fn nblocks_in(&self, part: &ChunkPart) -> i64 {
        (0..self.dims())
            .map(|i| {
                let b = i64::from(self.blockshape[i]);
                div_ceil(part.stop[i], b) - part.start[i] / b
            })
            .product()
    }

    /// The region covering the whole array.
    #[must_use]
    pub fn full_region(&self) -> Region {
        Region { ndim: self.ndim, start: [0; MAX_DIM], stop: self.shape }
    }

    /// Check `start`/`stop` against the shape and build a region.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if lengths differ from `ndim`, `start > stop`,
    /// or the region leaves the array.
    pub fn region(&self, start: &[i64], stop: &[i64]) -> Result<Region> {
        if start.len() != self.ndim || stop.len() != self.ndim {
            invalid!("start and stop need {} entries", self.ndim);
        }
        let mut r = self.full_region();
        for i in 0..self.ndim {
            if start[i] < 0 || start[i] > stop[i] || stop[i] > self.shape[i] {
                invalid!(
                    "slice {}..{} on axis {i} is not inside 0..{} (or start > stop)",
                    start[i],
                    stop[i],
                    self.shape[i]
                );
            }
            r.start[i] = start[i];
            r.stop[i] = stop[i];
        }
        Ok(r)
    }

    /// Number of chunks that intersect `region`.
    #[must_use]
    pub fn nchunks_in(&self, region: &Region) -> i64 {
        if self.is_empty() || region.is_empty() {
            return 0;
        }
        (0..self.dims())
            .map(|i| {
                let c = i64::from(self.chunkshape[i]);
                div_ceil(region.stop[i], c) - region.start[i] / c
            })
            .product()
    }

    /// Visit the chunks that intersect `region`, in C order of the chunk grid.
    pub fn for_each_chunk_in(&self, region: &Region, mut f: impl FnMut(ChunkPart)) {
        let n = self.dims();
        if self.is_empty() || region.is_empty() {
            return;
        }
        let (mut lo, mut hi) = ([0i64; MAX_DIM], [0i64; MAX_DIM]);
        for i in 0..n {
            let c = i64::from(self.chunkshape[i]);
            lo[i] = region.start[i] / c;
            hi[i] = div_ceil(region.stop[i], c);
        }
        let grid_strides = c_strides(&self.chunk_grid()[..n]);
        for_each_index(&lo[..n], &hi[..n], |coord| {
            let mut part = ChunkPart {
                nchunk: 0,
                origin: [0; MAX_DIM],
                start: [0; MAX_DIM],
                stop: [0; MAX_DIM],
                covers_chunk: true,
            };
            for i in 0..n {
                let c = i64::from(self.chunkshape[i]);
                part.nchunk += coord[i] * grid_strides[i];
                part.origin[i] = coord[i] * c;
                let chunk_end = (part.origin[i] + c).min(self.shape[i]);
                part.start[i] = region.start[i].max(part.origin[i]) - part.origin[i];
                part.stop[i] = region.stop[i].min(chunk_end) - part.origin[i];
                if part.start[i] != 0 || part.stop[i] != chunk_end - part.origin[i] {
                    part.covers_chunk = false;
                }
            }
            f(part);
        });
    }

    /// Whether `part` covers every item of its chunk's block layout: the
    /// chunk lies wholly inside the array, its blocks tile it exactly, and
    /// the part covers it. A write of such a part overwrites every byte of
    /// the decompressed chunk (no padding is left).
    #[must_use]
    pub(crate) fn fills_chunk(&self, part: &ChunkPart) -> bool {
        part.covers_chunk
            && (0..self.dims()).all(|i| {
                let (c, b) = (i64::from(self.chunkshape[i]), i64::from(self.blockshape[i]));
                part.stop[i] - part.start[i] == c && c % b == 0
            })
    }

    /// Visit the blocks of one chunk that intersect the chunk-local box
    /// `[part.start, part.stop)`, in C order of the block grid.
    pub fn for_each_block_in(&self, part: &ChunkPart, mut f: impl FnMut(BlockPart)) {
        let n = self.dims();
        let (mut lo, mut hi) = ([0i64; MAX_DIM], [0i64; MAX_DIM]);
        for i in 0..n {
            let b = i64::from(self.blockshape[i]);
            lo[i] = part.start[i] / b;
            hi[i] = div_ceil(part.stop[i], b);
        }
        let grid_strides = c_strides(&self.block_grid()[..n]);
        for_each_index(&lo[..n], &hi[..n], |coord| {
            let mut bp = BlockPart { nblock: 0, origin: [0; MAX_DIM], start: [0; MAX_DIM], stop: [0; MAX_DIM] };
            for i in 0..n {
                let b = i64::from(self.blockshape[i]);
                bp.nblock += coord[i] * grid_strides[i];
                bp.origin[i] = coord[i] * b;
                bp.start[i] = part.start[i].max(bp.origin[i]) - bp.origin[i];
                bp.stop[i] = part.stop[i].min(bp.origin[i] + b) - bp.origin[i];
            }
            f(bp);
        });
    }
}

/// A box `[start, stop)` inside an array. Built by [`Geometry::region`], so
/// it always lies inside the array it was checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    ndim: usize,
    start: [i64; MAX_DIM],
    stop: [i64; MAX_DIM],
}

impl Region {
    /// First index on each axis (padded with 0).
    #[must_use]
    pub fn start(&self) -> &[i64; MAX_DIM] {
        &self.start
    }
    /// One past the last index on each axis (padded with 1).
    #[must_use]
    pub fn stop(&self) -> &[i64; MAX_DIM] {
        &self.stop
    }
    /// The region's shape (`ndim` entries).
    #[must_use]
    pub fn shape(&self) -> Vec<i64> {
        (0..self.ndim).map(|i| self.stop[i] - self.start[i]).collect()
    }
    /// Items in the region.
    #[must_use]
    pub fn nitems(&self) -> i64 {
        self.shape().iter().product()
    }
    /// Whether the region holds no item.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        (0..self.ndim).any(|i| self.start[i] >= self.stop[i])
    }
}

/// The part of one chunk that a region covers, in chunk-local coordinates.
#[derive(Clone, Debug)]
pub struct ChunkPart {
    /// Index of the chunk in the super-chunk.
    pub nchunk: i64,
    /// Array coordinates of the chunk's first item.
    pub origin: [i64; MAX_DIM],
    /// First covered index, relative to `origin`.
    pub start: [i64; MAX_DIM],
    /// One past the last covered index, relative to `origin`.
    pub stop: [i64; MAX_DIM],
    /// Whether the region covers every item of the chunk that lies inside the array.
    pub covers_chunk: bool,
}

/// The part of one block that a region covers, in block-local coordinates.
#[derive(Clone, Debug)]
pub struct BlockPart {
    /// Index of the block inside its chunk (the Blosc2 block number).
    pub nblock: i64,
    /// Chunk-local coordinates of the block's first item.
    pub origin: [i64; MAX_DIM],
    /// First covered index, relative to `origin`.
    pub start: [i64; MAX_DIM],
    /// One past the last covered index, relative to `origin`.
    pub stop: [i64; MAX_DIM],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_example() {
        let g = Geometry::new(2, &[10, 10], &[6, 6], &[4, 4]).unwrap();
        assert_eq!(&g.extshape()[..2], &[12, 12]);
        assert_eq!(&g.extchunkshape()[..2], &[8, 8]);
        assert_eq!(g.nchunks(), 4);
        assert_eq!(g.nblocks(), 4);
        assert_eq!(g.chunk_stored_nitems(), 64);
        assert_eq!(g.block_nitems(), 16);
        assert_eq!(g.chunk_nbytes(), 128);
        assert_eq!(g.extshape()[2], 1);
    }

    #[test]
    fn zero_dim_is_one_item() {
        let g = Geometry::new(8, &[], &[], &[]).unwrap();
        assert_eq!(g.nitems(), 1);
        assert_eq!(g.nchunks(), 1);
        assert_eq!(g.dims(), 1);
        let mut n = 0;
        g.for_each_chunk_in(&g.full_region(), |p| {
            assert_eq!(p.nchunk, 0);
            assert!(p.covers_chunk);
            g.for_each_block_in(&p, |b| {
                assert_eq!(b.nblock, 0);
                assert_eq!((b.start[0], b.stop[0]), (0, 1));
                n += 1;
            });
        });
        assert_eq!(n, 1);
    }

    #[test]
    fn empty_axis() {
        let g = Geometry::new(4, &[0, 5], &[0, 5], &[0, 2]).unwrap();
        assert!(g.is_empty());
        assert_eq!(g.nchunks(), 0);
        assert_eq!(g.nitems(), 0);
        assert_eq!(&g.extchunkshape()[..2], &[0, 6]);
        let g = Geometry::new(4, &[0, 5], &[3, 5], &[2, 2]).unwrap();
        assert_eq!(g.chunk_stored_nitems(), 4 * 6);
        assert_eq!(g.nchunks(), 0);
    }

    #[test]
    fn rejects_bad_partitions() {
        assert!(Geometry::new(0, &[1], &[1], &[1]).is_err());
        assert!(Geometry::new(256, &[1], &[1], &[1]).is_ok());
        assert!(Geometry::new(MAX_ITEMSIZE + 1, &[1], &[1], &[1]).is_err());
        assert!(Geometry::new(MAX_ITEMSIZE, &[2], &[2], &[1]).is_err()); // a chunk over 2 GiB
        assert!(Geometry::new(1, &[-1], &[1], &[1]).is_err());
        assert!(Geometry::new(1, &[4], &[2], &[3]).is_err());
        assert!(Geometry::new(1, &[4], &[0], &[0]).is_err());
        assert!(Geometry::new(1, &[4], &[2], &[0]).is_err());
        assert!(Geometry::new(1, &[0], &[2], &[0]).is_err());
        assert!(Geometry::new(1, &[4, 4], &[2], &[2]).is_err());
        assert!(Geometry::new(1, &[1; 9], &[1; 9], &[1; 9]).is_err());
        assert!(Geometry::new(8, &[1 << 40], &[1 << 28], &[1 << 20]).is_err());
        assert!(Geometry::new(8, &[i64::MAX, 2], &[1, 1], &[1, 1]).is_err());
    }

    #[test]
    fn regions_are_checked() {
        let g = Geometry::new(1, &[10, 10], &[6, 6], &[4, 4]).unwrap();
        assert!(g.region(&[0, 0], &[10, 10]).is_ok());
        assert!(g.region(&[0, 0], &[11, 10]).is_err());
        assert!(g.region(&[5, 0], &[4, 10]).is_err());
        assert!(g.region(&[-1, 0], &[4, 10]).is_err());
        assert!(g.region(&[0], &[4]).is_err());
        assert!(g.region(&[3, 3], &[3, 3]).unwrap().is_empty());
    }

    #[test]
    fn chunk_and_block_intersections() {
        let g = Geometry::new(1, &[10, 10], &[6, 6], &[4, 4]).unwrap();
        let r = g.region(&[5, 2], &[7, 10]).unwrap();
        let mut chunks = vec![];
        g.for_each_chunk_in(&r, |p| {
            chunks.push((p.nchunk, p.start[..2].to_vec(), p.stop[..2].to_vec(), p.covers_chunk))
        });
        assert_eq!(
            chunks,
            vec![
                (0, vec![5, 2], vec![6, 6], false),
                (1, vec![5, 0], vec![6, 4], false),
                (2, vec![0, 2], vec![1, 6], false),
                (3, vec![0, 0], vec![1, 4], false),
            ]
        );
        // The edge chunk (rows 6..10, cols 6..10) is covered by the region 6..10 x 6..10.
        let r = g.region(&[6, 6], &[10, 10]).unwrap();
        g.for_each_chunk_in(&r, |p| {
            assert_eq!(p.nchunk, 3);
            assert!(p.covers_chunk);
            let mut blocks = vec![];
            g.for_each_block_in(&p, |b| blocks.push((b.nblock, b.start[..2].to_vec(), b.stop[..2].to_vec())));
            assert_eq!(blocks, vec![(0, vec![0, 0], vec![4, 4])]);
        });
        // Blocks of chunk 0 touched by rows 3..5, cols 3..5.
        let r = g.region(&[3, 3], &[5, 5]).unwrap();
        let mut blocks = vec![];
        g.for_each_chunk_in(&r, |p| g.for_each_block_in(&p, |b| blocks.push(b.nblock)));
        assert_eq!(blocks, vec![0, 1, 2, 3]);
    }

    #[test]
    fn strides_and_iteration() {
        assert_eq!(&c_strides(&[3, 4, 5])[..3], &[20, 5, 1]);
        let mut seen = vec![];
        for_each_index(&[0, 1], &[2, 3], |i| seen.push(i.to_vec()));
        assert_eq!(seen, vec![vec![0, 1], vec![0, 2], vec![1, 1], vec![1, 2]]);
        let mut count = 0;
        for_each_index(&[], &[], |_| count += 1);
        assert_eq!(count, 1);
        for_each_index(&[0, 0], &[0, 3], |_| count += 1);
        assert_eq!(count, 1);
    }

    /// Small geometries over 0 to 4 dims: ragged edges, length-1 and empty
    /// axes, blocks equal to chunks.
    fn sample_geometries() -> Vec<Geometry> {
        let cases: [(&[i64], &[i32], &[i32]); 7] = [
            (&[], &[], &[]),
            (&[9], &[4], &[3]),
            (&[10, 10], &[6, 6], &[4, 4]),
            (&[7, 1, 5], &[3, 1, 5], &[2, 1, 2]),
            (&[5, 0], &[2, 3], &[1, 2]),
            (&[4, 3, 2, 5], &[2, 3, 1, 4], &[1, 2, 1, 3]),
            (&[3, 4], &[3, 4], &[3, 4]),
        ];
        cases.iter().map(|(s, c, b)| Geometry::new(2, s, c, b).unwrap()).collect()
    }

    #[test]
    fn chunks_and_blocks_partition_every_region() {
        // Each item of a region is visited exactly once, through the chunk
        // and block that hold it; no item outside the region is visited.
        for g in sample_geometries() {
            let n = g.ndim();
            let shape = g.shape().to_vec();
            let regions = [
                (vec![0; n], shape.clone()),
                (shape.iter().map(|&s| s / 3).collect(), shape.iter().map(|&s| s - s / 4).collect()),
            ];
            for (start, stop) in regions {
                let r = g.region(&start, &stop).unwrap();
                let mut seen = std::collections::BTreeMap::new();
                let cs = g.chunkshape_full();
                let bs = g.blockshape_full();
                g.for_each_chunk_in(&r, |p| {
                    g.for_each_block_in(&p, |b| {
                        assert!(b.nblock < g.nblocks());
                        let lo: Vec<i64> = (0..g.dims()).map(|i| p.origin[i] + b.origin[i] + b.start[i]).collect();
                        let hi: Vec<i64> = (0..g.dims()).map(|i| p.origin[i] + b.origin[i] + b.stop[i]).collect();
                        for i in 0..g.dims() {
                            assert!(b.stop[i] <= i64::from(bs[i]) && p.stop[i] <= i64::from(cs[i]));
                        }
                        for_each_index(&lo, &hi, |idx| *seen.entry(idx.to_vec()).or_insert(0) += 1);
                    });
                });
                let mut want = 0;
                for_each_index(&r.start()[..g.dims()], &r.stop()[..g.dims()], |idx| {
                    want += 1;
                    assert_eq!(seen.get(idx), Some(&1), "{g:?}: item {idx:?} of {start:?}..{stop:?}");
                });
                assert_eq!(seen.len(), want, "{g:?}: items outside {start:?}..{stop:?} visited");
                assert_eq!(want as i64, if n == 0 { 1 } else { r.nitems() });
            }
        }
    }

    #[test]
    fn derived_sizes_agree() {
        for g in sample_geometries() {
            let n = g.ndim();
            assert_eq!(g.nitems(), g.shape().iter().product::<i64>());
            assert_eq!(g.chunk_nbytes(), g.chunk_stored_nitems() as usize * g.itemsize());
            assert_eq!(g.block_nbytes(), g.block_nitems() as usize * g.itemsize());
            assert_eq!(g.nblocks() * g.block_nitems(), g.chunk_stored_nitems());
            let full = g.full_region();
            let mut parts = 0;
            g.for_each_chunk_in(&full, |p| {
                assert!(p.covers_chunk);
                assert_eq!(p.nchunk, parts);
                parts += 1;
            });
            assert_eq!(parts, g.nchunks());
            for i in 0..n {
                assert!(g.extshape()[i] >= g.shape()[i]);
                assert_eq!(g.extshape()[i] % i64::from(g.chunkshape()[i].max(1)), 0);
            }
            for i in n..MAX_DIM {
                assert_eq!((g.shape_full()[i], g.chunkshape_full()[i], g.blockshape_full()[i]), (1, 1, 1));
            }
        }
    }

    #[test]
    fn fills_chunk_only_when_every_byte_is_written() {
        // Chunks of 4×6 in blocks of 2×3 tile exactly; the last chunk row is cut by the shape.
        let g = Geometry::new(1, &[10, 12], &[4, 6], &[2, 3]).unwrap();
        let parts = |start: &[i64], stop: &[i64]| {
            let mut v = Vec::new();
            g.for_each_chunk_in(&g.region(start, stop).unwrap(), |p| v.push(p));
            v
        };
        let whole = parts(&[0, 0], &[10, 12]);
        let filled: Vec<bool> = whole.iter().map(|p| g.fills_chunk(p)).collect();
        // Chunk rows 0 and 1 are whole; row 2 (items 8..10 of 4) leaves padding.
        assert_eq!(filled, vec![true, true, true, true, false, false]);
        // A part of a chunk is not a fill.
        assert!(parts(&[0, 0], &[4, 5]).iter().all(|p| !g.fills_chunk(p)));
        // Blocks that do not tile the chunk leave padding in it, covered or not.
        let h = Geometry::new(1, &[8, 8], &[4, 4], &[3, 3]).unwrap();
        let mut all = Vec::new();
        h.for_each_chunk_in(&h.full_region(), |p| all.push(p));
        assert!(all.iter().all(|p| p.covers_chunk && !h.fills_chunk(p)));
    }

    #[test]
    fn arithmetic_helpers_at_the_edges() {
        assert_eq!(div_ceil(0, 3), 0);
        assert_eq!(div_ceil(7, 7), 1);
        assert_eq!(div_ceil(i64::MAX, 1), i64::MAX);
        assert_eq!(div_ceil(i64::MAX, 2), i64::MAX / 2 + 1);
        assert_eq!(round_up(5, 0), 0);
        assert_eq!(round_up(i64::MAX, 2), i64::MAX);
        assert_eq!(checked_product(&[]), Some(1));
        assert_eq!(checked_product(&[i64::MAX, 2]), None);
        assert_eq!(c_strides(&[i64::MAX, 3, 4])[0], 12);
        assert_eq!(c_strides(&[]), [0; MAX_DIM]);
        // Saturates rather than wrapping.
        assert_eq!(c_strides(&[2, i64::MAX, 4])[0], i64::MAX);
    }

    #[test]
    fn regions_refuse_every_bad_bound() {
        let g = Geometry::new(1, &[4, 5], &[2, 2], &[1, 1]).unwrap();
        for (start, stop) in [
            ([0, 0], [5, 5]),
            ([0, -1], [4, 5]),
            ([i64::MIN, 0], [4, 5]),
            ([0, 0], [4, i64::MAX]),
            ([3, 0], [2, 5]),
            ([5, 0], [5, 5]),
        ] {
            assert!(g.region(&start, &stop).is_err(), "{start:?}..{stop:?}");
        }
        assert!(g.region(&[4, 5], &[4, 5]).unwrap().is_empty());
        assert!(g.region(&[0, 0, 0], &[1, 1, 1]).is_err());
        let z = Geometry::new(1, &[], &[], &[]).unwrap();
        assert!(z.region(&[], &[]).is_ok());
        assert!(z.region(&[0], &[1]).is_err());
    }
}
