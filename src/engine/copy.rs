//! Copies between the caller's buffer and chunk or block buffers (block
//! layout): [`UserBuf`], the view workers share, and the one copy routine
//! that serves both directions. It walks the rows a block shares with the
//! region and moves each contiguous run with one `memcpy` (one load and
//! store for the short rows of a plane across the last axis).

use crate::buffer::zeroed;
use crate::error::Result;
use crate::geometry::{c_strides, for_each_index, BlockPart, ChunkPart, Geometry, Region, MAX_DIM};

/// Which way [`copy_block`] moves bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// From the chunk buffer into the user buffer.
    Read,
    /// From the user buffer into the chunk buffer.
    Write,
}

/// A view of the caller's buffer: a C-order box whose first item is the
/// region's `start`, addressed through per-axis strides (in items), with the
/// number of bytes it may touch. Workers share it (each writes only the items
/// of its own chunk: see the SAFETY notes where it is written); every address
/// it hands out is checked against its length, so a planning bug panics (and
/// the C layer's boundary reports it) instead of writing past the buffer.
#[derive(Clone, Copy)]
pub(crate) struct UserBuf {
    ptr: *mut u8,
    /// Bytes from `ptr` that belong to the view.
    len: usize,
    strides: [i64; MAX_DIM],
}

// SAFETY: workers only touch the items of their own chunk ∩ region; chunks
// are disjoint, so no two threads access the same bytes (argued at each use).
unsafe impl Send for UserBuf {}
// SAFETY: as above.
unsafe impl Sync for UserBuf {}

impl UserBuf {
    /// A view of `buf`, a C-order buffer of shape `shape` (one entry per
    /// axis of `geom`; checked against the buffer's length by the callers).
    /// A write view (`Dir::Read` copies) must come from a `&mut [u8]`.
    pub(crate) fn new(buf: &[u8], geom: &Geometry, shape: &[i64]) -> Self {
        let mut full = [1i64; MAX_DIM];
        full[..shape.len()].copy_from_slice(shape);
        UserBuf { ptr: buf.as_ptr().cast_mut(), len: buf.len(), strides: c_strides(&full[..geom.dims()]) }
    }

    /// A view of the caller's mutable buffer (reads land in it).
    pub(crate) fn new_mut(buf: &mut [u8], geom: &Geometry, shape: &[i64]) -> Self {
        let v = Self::new(buf, geom, shape);
        UserBuf { ptr: buf.as_mut_ptr(), ..v }
    }

    #[inline]
    pub(super) fn strides(self) -> [i64; MAX_DIM] {
        self.strides
    }

    /// The address of the `n` bytes from the item at offset `off` (in
    /// items), checked to lie inside the view.
    #[inline]
    pub(super) fn at(self, off: i64, item: usize, n: usize) -> *mut u8 {
        let start = usize::try_from(off).ok().and_then(|o| o.checked_mul(item));
        let inside = start.and_then(|s| s.checked_add(n)).is_some_and(|end| end <= self.len);
        assert!(inside, "engine bug: {n} bytes at item {off} leave a view of {} bytes", self.len);
        // SAFETY: start + n <= len, and the view's len bytes from ptr are the caller's buffer.
        unsafe { self.ptr.add(start.unwrap_or(0)) }
    }

    /// A view of the bytes `at..` of `buf` with explicit strides (in
    /// items): a box inside a larger one.
    pub(crate) fn strided(buf: &mut [u8], at: usize, strides: [i64; MAX_DIM]) -> Self {
        let rest = &mut buf[at..];
        UserBuf { ptr: rest.as_mut_ptr(), len: rest.len(), strides }
    }
}

/// The invariant that lets workers share one [`UserBuf`]: the tasks are
/// distinct chunks, so the items each one writes (its chunk's part of the
/// region or selection) are disjoint. Checked in debug builds.
pub(super) fn debug_assert_distinct(chunks: impl Iterator<Item = i64>) {
    if cfg!(debug_assertions) {
        let mut seen: Vec<i64> = chunks.collect();
        seen.sort_unstable();
        let n = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), n, "engine bug: two tasks write the same chunk's items");
    }
}

/// `rows` rows of `row_items` items that a block shares with a region, the
/// first at `coff` in the chunk (block layout) and `uoff` in the user view,
/// the next ones `cstep` and `ustep` items further (offsets in items).
struct Run {
    coff: usize,
    uoff: i64,
    row_items: usize,
    rows: usize,
    cstep: usize,
    ustep: i64,
}

/// Visit the rows that `block` shares with the region starting at `rstart`,
/// a [`Run`] per row of the two innermost axes: the offsets in the chunk are
/// in block layout, the ones in the user view through `ustrides`. Rows that
/// are contiguous in both come as one row.
fn for_each_run(
    geom: &Geometry,
    rstart: &[i64; MAX_DIM],
    part: &ChunkPart,
    block: &BlockPart,
    ustrides: &[i64; MAX_DIM],
    mut f: impl FnMut(Run),
) {
    let n = geom.dims();
    let bshape = geom.blockshape_full();
    let mut bstrides = [1i64; MAX_DIM];
    for i in (0..n - 1).rev() {
        bstrides[i] = bstrides[i + 1] * i64::from(bshape[i + 1]);
    }
    let base = block.nblock * geom.block_nitems();
    let last = n - 1;
    let row_items = (block.stop[last] - block.start[last]) as usize;
    // The outer axes are walked one index at a time; the one before the
    // last is the run's axis.
    let outer = last.saturating_sub(1);
    let (rows, cstep, ustep) = if last > 0 {
        ((block.stop[outer] - block.start[outer]) as usize, bstrides[outer] as usize, ustrides[outer])
    } else {
        (1, 0, 0)
    };
    if rows == 0 || row_items == 0 {
        return;
    }
    let merged = rows > 1 && cstep == row_items && ustep == row_items as i64;
    for_each_index(&block.start[..outer], &block.stop[..outer], |idx| {
        let mut coff = base + block.start[last] * bstrides[last];
        let mut uoff = (part.origin[last] + block.origin[last] + block.start[last] - rstart[last]) * ustrides[last];
        let first = idx.iter().copied().chain((last > 0).then_some(block.start[outer]));
        for (i, x) in first.enumerate() {
            coff += x * bstrides[i];
            uoff += (part.origin[i] + block.origin[i] + x - rstart[i]) * ustrides[i];
        }
        let coff = coff as usize;
        if merged {
            f(Run { coff, uoff, row_items: row_items * rows, rows: 1, cstep, ustep });
        } else {
            f(Run { coff, uoff, row_items, rows, cstep, ustep });
        }
    });
}

/// Move the items that `block` shares with `region` between the chunk buffer
/// `chunk` (block layout) and the user buffer.
///
/// # Safety
/// `user` must be valid for the whole box it describes, and no other thread
/// may access the items of `part` ∩ `region` in it during the call.
pub(super) unsafe fn copy_block(
    geom: &Geometry,
    region: &Region,
    part: &ChunkPart,
    block: &BlockPart,
    chunk: &mut [u8],
    user: UserBuf,
    dir: Dir,
) {
    let item = geom.itemsize();
    for_each_run(geom, region.start(), part, block, &user.strides, |r| {
        let row_bytes = r.row_items * item;
        let last = r.rows - 1;
        let c = &mut chunk[r.coff * item..(r.coff + last * r.cstep) * item + row_bytes];
        // The run's user bytes, checked once: the rows lie between its first
        // and its last row (user strides are not negative).
        let span = usize::try_from(last as i64 * r.ustep).expect("engine bug: negative user stride") * item + row_bytes;
        let u = user.at(r.uoff, item, span);
        let (cstep, ustep) = (r.cstep * item, r.ustep as usize * item);
        // SAFETY: every row lies in `c` (sliced above) and in the `span`
        // bytes from `u` (checked by `at`), which belong to this part's items
        // of the user box, owned exclusively by the caller; c is a distinct
        // buffer. Constant sizes let the common one-item rows (a plane across
        // the last axis) compile to a load and a store.
        unsafe {
            match row_bytes {
                1 => copy_rows::<1>(c.as_mut_ptr(), u, r.rows, cstep, ustep, dir),
                2 => copy_rows::<2>(c.as_mut_ptr(), u, r.rows, cstep, ustep, dir),
                4 => copy_rows::<4>(c.as_mut_ptr(), u, r.rows, cstep, ustep, dir),
                8 => copy_rows::<8>(c.as_mut_ptr(), u, r.rows, cstep, ustep, dir),
                16 => copy_rows::<16>(c.as_mut_ptr(), u, r.rows, cstep, ustep, dir),
                _ => {
                    for i in 0..r.rows {
                        let (c, u) = (c.as_mut_ptr().add(i * cstep), u.add(i * ustep));
                        match dir {
                            Dir::Read => std::ptr::copy_nonoverlapping(c.cast_const(), u, row_bytes),
                            Dir::Write => std::ptr::copy_nonoverlapping(u.cast_const(), c, row_bytes),
                        }
                    }
                }
            }
        }
    });
}

/// Copy the items that block `b` of `part` shares with `region` from
/// `block`, which holds that block alone, into `user`.
///
/// # Safety
/// As [`copy_block`].
pub(super) unsafe fn copy_lone_block(
    geom: &Geometry,
    region: &Region,
    part: &ChunkPart,
    b: &BlockPart,
    block: &mut [u8],
    user: UserBuf,
) {
    // Alone in the buffer, the block's rows are offsets from 0.
    let local = BlockPart { nblock: 0, ..b.clone() };
    // SAFETY: forwarded from the caller.
    unsafe { copy_block(geom, region, part, &local, block, user, Dir::Read) };
}

/// Copy `rows` rows of `B` bytes, `cstep` and `ustep` bytes apart.
///
/// # Safety
/// Every row must lie inside the buffers behind `c` and `u`, which must not overlap.
#[inline(always)]
unsafe fn copy_rows<const B: usize>(c: *mut u8, u: *mut u8, rows: usize, cstep: usize, ustep: usize, dir: Dir) {
    for i in 0..rows {
        // SAFETY: as the caller promises.
        unsafe {
            let (c, u) = (c.add(i * cstep), u.add(i * ustep));
            match dir {
                Dir::Read => std::ptr::copy_nonoverlapping(c.cast_const(), u, B),
                Dir::Write => std::ptr::copy_nonoverlapping(u.cast_const(), c, B),
            }
        }
    }
}

/// Zero the chunk-local box `[lo, hi)` of `chunk` (block layout), padding included.
pub(crate) fn clear_box(geom: &Geometry, chunk: &mut [u8], lo: &[i64; MAX_DIM], hi: &[i64; MAX_DIM]) {
    let part = ChunkPart { nchunk: 0, origin: [0; MAX_DIM], start: *lo, stop: *hi, covers_chunk: false };
    let item = geom.itemsize();
    let zero = [0i64; MAX_DIM];
    geom.for_each_block_in(&part, |b| {
        for_each_run(geom, &zero, &part, &b, &zero, |r| {
            for i in 0..r.rows {
                let at = (r.coff + i * r.cstep) * item;
                chunk[at..at + r.row_items * item].fill(0);
            }
        });
    });
}

/// Fill `out` with a whole chunk of `geom` whose items inside `region`
/// (the chunk's part of it) come from `user`, the rest zeros.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) (out of memory) if a chunk does not fit in memory.
pub(crate) fn pack(out: &mut Vec<u8>, geom: &Geometry, region: &Region, part: &ChunkPart, user: UserBuf) -> Result<()> {
    zeroed(out, geom.chunk_nbytes())?;
    geom.for_each_block_in(part, |b| {
        // SAFETY: Dir::Write only reads `user` (every address checked by `at`).
        unsafe { copy_block(geom, region, part, &b, out, user, Dir::Write) };
    });
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    //! The index arithmetic and raw-pointer copies, without c-blosc2 (so
    //! that Miri can run them): chunks are laid out by hand here.
    use super::*;
    use crate::engine::plan::{check_user_buffer, plan};
    use crate::geometry::checked_product;

    pub(crate) const ITEM: usize = 2;

    /// The offset (in items) of chunk-local coordinates `x` in a chunk's
    /// block layout, computed independently of the engine: the block grid
    /// in C order, each block in C order.
    fn chunk_offset(g: &Geometry, x: &[i64]) -> usize {
        let n = g.dims();
        let block_strides = c_strides(&g.block_grid()[..n]);
        let bshape: Vec<i64> = g.blockshape_full()[..n].iter().map(|&b| i64::from(b)).collect();
        let in_block = c_strides(&bshape);
        let (mut nblock, mut off) = (0, 0);
        for i in 0..n {
            let x = x.get(i).copied().unwrap_or(0);
            nblock += x / bshape[i] * block_strides[i];
            off += x % bshape[i] * in_block[i];
        }
        (nblock * g.block_nitems() + off) as usize
    }

    /// Where the item at array coordinates `coords` lives: its chunk and
    /// its offset in that chunk.
    pub(crate) fn locate(g: &Geometry, coords: &[i64]) -> (i64, usize) {
        let n = g.dims();
        let cs = g.chunkshape_full();
        let chunk_strides = c_strides(&g.chunk_grid()[..n]);
        let (mut nchunk, mut x) = (0, vec![0i64; n]);
        for i in 0..n {
            let c = coords.get(i).copied().unwrap_or(0);
            nchunk += c / i64::from(cs[i]) * chunk_strides[i];
            x[i] = c % i64::from(cs[i]);
        }
        (nchunk, chunk_offset(g, &x))
    }

    /// The test value of the item at `coords`: its C-order index (+1, so that 0 means unset).
    fn value(g: &Geometry, coords: &[i64]) -> [u8; ITEM] {
        let st = c_strides(g.shape());
        (coords.iter().zip(&st).map(|(c, s)| c * s).sum::<i64>() as u16 + 1).to_le_bytes()
    }

    fn geometries() -> Vec<Geometry> {
        let cases: [(&[i64], &[i32], &[i32]); 5] = [
            (&[], &[], &[]),
            (&[9], &[4], &[3]),
            (&[7, 6], &[3, 4], &[2, 3]),
            (&[5, 1, 6], &[2, 1, 4], &[1, 1, 3]),
            (&[3, 4, 2, 3], &[2, 3, 2, 2], &[1, 2, 1, 2]),
        ];
        cases.iter().map(|(s, c, b)| Geometry::new(ITEM, s, c, b).unwrap()).collect()
    }

    /// The whole array, a box inside it, and an empty box.
    fn regions(g: &Geometry) -> Vec<Region> {
        let s = g.shape();
        let inner: (Vec<i64>, Vec<i64>) = s.iter().map(|&x| (x / 3, x - x / 4)).unzip();
        let empty: Vec<i64> = s.iter().map(|&x| x / 2).collect();
        vec![g.full_region(), g.region(&inner.0, &inner.1).unwrap(), g.region(&empty, &empty).unwrap()]
    }

    /// Chunk `nchunk` of the test array, in block layout; padding holds 0xEE.
    fn chunk_bytes(g: &Geometry, nchunk: i64) -> Vec<u8> {
        let mut chunk = vec![0xEE; g.chunk_nbytes()];
        for_each_index(&[0; MAX_DIM][..g.ndim()], g.shape(), |c| {
            let (k, off) = locate(g, c);
            if k == nchunk {
                chunk[off * ITEM..(off + 1) * ITEM].copy_from_slice(&value(g, c));
            }
        });
        chunk
    }

    #[test]
    fn reads_copy_each_block_row_to_its_place() {
        for g in geometries() {
            for region in regions(&g) {
                // A user buffer one item larger than the region on every axis.
                let shape = region.shape();
                let bshape: Vec<i64> = shape.iter().map(|&x| x + 1).collect();
                let mut user = vec![0u8; checked_product(&bshape).unwrap() as usize * ITEM];
                check_user_buffer(&g, &region, &bshape, user.len()).unwrap();
                let buf = UserBuf::new_mut(&mut user, &g, &bshape);
                for part in plan(&g, &region).unwrap() {
                    let mut chunk = chunk_bytes(&g, part.nchunk);
                    g.for_each_block_in(&part, |b| {
                        // SAFETY: `user` covers the region's box; one thread.
                        unsafe { copy_block(&g, &region, &part, &b, &mut chunk, buf, Dir::Read) };
                    });
                }
                let ust = c_strides(&bshape);
                for_each_index(&[0; MAX_DIM][..g.ndim()], &bshape, |j| {
                    let off = j.iter().zip(&ust).map(|(a, b)| a * b).sum::<i64>() as usize * ITEM;
                    let got = &user[off..off + ITEM];
                    if (0..g.ndim()).all(|i| j[i] < shape[i]) {
                        let c: Vec<i64> = (0..g.ndim()).map(|i| region.start()[i] + j[i]).collect();
                        assert_eq!(got, value(&g, &c), "{g:?}: item {c:?}");
                    } else {
                        assert_eq!(got, [0; ITEM], "{g:?}: {j:?} is outside the region");
                    }
                });
                if g.ndim() == 0 {
                    assert_eq!(user, value(&g, &[]));
                }
            }
        }
    }

    #[test]
    fn writes_pack_the_region_into_a_zeroed_chunk() {
        for g in geometries() {
            for region in regions(&g) {
                let shape = region.shape();
                // The source: each item holds the value of where it goes.
                let mut src = Vec::new();
                for_each_index(&[0; MAX_DIM][..g.ndim()], &shape, |j| {
                    let c: Vec<i64> = (0..g.ndim()).map(|i| region.start()[i] + j[i]).collect();
                    src.extend_from_slice(&value(&g, &c));
                });
                let user = UserBuf::new(&src, &g, &shape);
                let mut out = Vec::new();
                for part in plan(&g, &region).unwrap() {
                    pack(&mut out, &g, &region, &part, user).unwrap();
                    let mut want = vec![0u8; g.chunk_nbytes()];
                    let (lo, hi): (Vec<i64>, Vec<i64>) =
                        (0..g.ndim()).map(|i| (part.origin[i] + part.start[i], part.origin[i] + part.stop[i])).unzip();
                    for_each_index(&lo, &hi, |c| {
                        let (k, off) = locate(&g, c);
                        assert_eq!(k, part.nchunk);
                        want[off * ITEM..(off + 1) * ITEM].copy_from_slice(&value(&g, c));
                    });
                    assert!(out == want, "{g:?}: chunk {} of {region:?}", part.nchunk);
                }
            }
        }
    }

    #[test]
    fn clearing_a_box_zeroes_exactly_it() {
        let g = Geometry::new(ITEM, &[7, 6], &[3, 4], &[2, 3]).unwrap();
        let mut chunk = vec![0xFF; g.chunk_nbytes()];
        let (mut lo, mut hi) = ([0i64; MAX_DIM], [1i64; MAX_DIM]);
        (lo[0], hi[0], lo[1], hi[1]) = (1, 4, 2, 6);
        clear_box(&g, &mut chunk, &lo, &hi);
        // The stored chunk is 4 x 6 (3 x 4 rounded up to blocks of 2 x 3).
        for_each_index(&[0, 0], &[4, 6], |x| {
            let off = chunk_offset(&g, x);
            let inside = (1..4).contains(&x[0]) && (2..6).contains(&x[1]);
            let want = if inside { [0, 0] } else { [0xFF, 0xFF] };
            assert_eq!(chunk[off * ITEM..(off + 1) * ITEM], want, "{x:?}");
        });
    }
}
