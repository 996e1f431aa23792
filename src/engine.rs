//! The slicing engine: plans which chunks and blocks a region touches, reads
//! them in parallel straight into the caller's buffer (decompressing only the
//! touched blocks), and builds compressed chunks in parallel for writes.
//!
//! One copy routine serves both directions: it walks the rows a block shares
//! with the region and moves each contiguous run with one `memcpy`.

use rayon::prelude::*;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::geometry::{c_strides, for_each_index, BlockPart, ChunkPart, Geometry, Region, MAX_DIM};
use crate::schunk::{CCtx, CParams, DCtx, SChunk};

/// Which way [`copy_block`] moves bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// From the chunk buffer into the user buffer.
    Read,
    /// From the user buffer into the chunk buffer.
    Write,
}

/// A user buffer holding a C-order box of shape `shape` whose first item is
/// the region's `start`. Raw so that workers can share it; see the SAFETY
/// notes where it is written.
#[derive(Clone, Copy)]
struct UserBuf {
    ptr: *mut u8,
    strides: [i64; MAX_DIM],
}

// SAFETY: workers only touch the items of their own chunk ∩ region; chunks
// are disjoint, so no two threads access the same bytes (argued at each use).
unsafe impl Send for UserBuf {}
// SAFETY: as above.
unsafe impl Sync for UserBuf {}

impl UserBuf {
    fn new(ptr: *mut u8, geom: &Geometry, shape: &[i64]) -> Self {
        let mut full = [1i64; MAX_DIM];
        full[..shape.len()].copy_from_slice(shape);
        UserBuf { ptr, strides: c_strides(&full[..geom.dims()]) }
    }
}

/// Move the items that `block` shares with `region` between the chunk buffer
/// `chunk` (block layout) and the user buffer.
///
/// # Safety
/// `user` must be valid for the whole box it describes, and no other thread
/// may access the items of `part` ∩ `region` in it during the call.
unsafe fn copy_block(
    geom: &Geometry,
    region: &Region,
    part: &ChunkPart,
    block: &BlockPart,
    chunk: &mut [u8],
    user: UserBuf,
    dir: Dir,
) {
    let n = geom.dims();
    let item = geom.itemsize();
    let bshape = geom.blockshape_full();
    let bshape64: Vec<i64> = bshape[..n].iter().map(|&b| i64::from(b)).collect();
    let bstrides = c_strides(&bshape64);
    let base = block.nblock * geom.block_nitems();
    let last = n - 1;
    let row_items = block.stop[last] - block.start[last];
    let row_bytes = row_items as usize * item;
    let rstart = region.start();
    for_each_index(&block.start[..last], &block.stop[..last], |idx| {
        let mut coff = base + block.start[last] * bstrides[last];
        let mut uoff = (part.origin[last] + block.origin[last] + block.start[last] - rstart[last]) * user.strides[last];
        for i in 0..last {
            coff += idx[i] * bstrides[i];
            uoff += (part.origin[i] + block.origin[i] + idx[i] - rstart[i]) * user.strides[i];
        }
        let c = &mut chunk[coff as usize * item..coff as usize * item + row_bytes];
        // SAFETY: uoff addresses a row of the region inside the user box (the
        // block part lies inside the region), which the caller owns exclusively.
        unsafe {
            let u = user.ptr.add(uoff as usize * item);
            match dir {
                Dir::Read => std::ptr::copy_nonoverlapping(c.as_ptr(), u, row_bytes),
                Dir::Write => std::ptr::copy_nonoverlapping(u.cast_const(), c.as_mut_ptr(), row_bytes),
            }
        }
    });
}

/// Per-worker state, reused across the chunks a worker handles.
struct Worker {
    dctx: Option<DCtx>,
    cctx: Option<CCtx>,
    scratch: Vec<u8>,
}

impl Worker {
    fn new() -> Self {
        Worker { dctx: None, cctx: None, scratch: Vec::new() }
    }

    fn dctx(&mut self, nthreads: usize) -> Result<&mut DCtx> {
        if self.dctx.is_none() {
            self.dctx = Some(DCtx::new(nthreads)?);
        }
        Ok(self.dctx.as_mut().expect("just set"))
    }

    fn cctx(&mut self, cparams: &CParams, geom: &Geometry, nthreads: usize) -> Result<&mut CCtx> {
        if self.cctx.is_none() {
            self.cctx = Some(CCtx::new(cparams, geom.itemsize(), geom.block_nbytes(), nthreads)?);
        }
        Ok(self.cctx.as_mut().expect("just set"))
    }

    /// Decompress chunk `n` into `scratch` (resized to a chunk). With `mask`,
    /// only the blocks whose entry is false are guaranteed to be filled.
    fn load(&mut self, sc: &SChunk, geom: &Geometry, n: i64, mask: Option<&[bool]>, nthreads: usize) -> Result<()> {
        let nbytes = geom.chunk_nbytes();
        self.scratch.resize(nbytes, 0);
        let chunk = sc.chunk(n)?;
        if chunk.bytes().is_empty() {
            // Never initialised (sparse super-chunk): reads as zeros.
            self.scratch.fill(0);
            return Ok(());
        }
        let info = chunk.info()?;
        // Maskout selects Blosc blocks; it matches geometric blocks only when
        // the chunk was written with our block size.
        let mask = mask.filter(|_| info.blocksize == geom.block_nbytes() && info.nbytes == nbytes);
        let mut scratch = std::mem::take(&mut self.scratch);
        let r = self.dctx(nthreads)?.decompress(&chunk, &mut scratch, mask);
        self.scratch = scratch;
        r
    }
}

/// Split the thread budget: chunk-level workers when there are several
/// chunks, blosc's own threads inside a single chunk otherwise.
fn blosc_threads(ctx: &Context, nparts: usize) -> usize {
    if nparts > 1 {
        1
    } else {
        ctx.nthreads()
    }
}

fn collect_parts(geom: &Geometry, region: &Region) -> Vec<ChunkPart> {
    let mut parts = Vec::new();
    geom.for_each_chunk_in(region, |p| parts.push(p));
    parts
}

/// Check that a user buffer of `len` bytes and shape `shape` can hold `region`.
///
/// # Errors
/// [`Error::InvalidArgument`] otherwise.
pub(crate) fn check_user_buffer(geom: &Geometry, region: &Region, shape: &[i64], len: usize) -> Result<()> {
    if shape.len() != geom.ndim() {
        return Err(Error::InvalidArgument(format!(
            "buffer shape has {} entries, ndim is {}",
            shape.len(),
            geom.ndim()
        )));
    }
    let rshape = region.shape();
    for i in 0..shape.len() {
        if shape[i] < rshape[i] {
            return Err(Error::InvalidArgument(format!(
                "buffer shape {shape:?} cannot hold a slice of shape {rshape:?}"
            )));
        }
    }
    let need = crate::geometry::checked_product(shape)
        .and_then(|n| n.checked_mul(geom.itemsize() as i64))
        .ok_or_else(|| Error::InvalidArgument("buffer shape overflows".into()))?;
    if (len as u128) < need as u128 {
        return Err(Error::InvalidArgument(format!(
            "buffer of {len} bytes is smaller than the {need} its shape needs"
        )));
    }
    Ok(())
}

/// Read `region` of the array into `dst`, a C-order buffer of shape
/// `dst_shape` (checked by [`check_user_buffer`]) whose first item receives
/// the region's first item.
pub(crate) fn read_region(
    ctx: &Context,
    sc: &SChunk,
    geom: &Geometry,
    region: &Region,
    dst: &mut [u8],
    dst_shape: &[i64],
) -> Result<()> {
    check_user_buffer(geom, region, dst_shape, dst.len())?;
    let parts = collect_parts(geom, region);
    let user = UserBuf::new(dst.as_mut_ptr(), geom, dst_shape);
    let nthreads = blosc_threads(ctx, parts.len());
    let nblocks = geom.nblocks() as usize;
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<()> {
        let mut mask = vec![true; nblocks];
        geom.for_each_block_in(part, |b| mask[b.nblock as usize] = false);
        w.load(sc, geom, part.nchunk, Some(&mask), nthreads)?;
        let scratch = &mut w.scratch;
        geom.for_each_block_in(part, |b| {
            // SAFETY: `user` covers the region (checked above) and this part's
            // items belong to this chunk alone; `dst` is borrowed mutably for
            // the whole call, so nobody else touches it.
            unsafe { copy_block(geom, region, part, &b, scratch, user, Dir::Read) };
        });
        Ok(())
    };
    ctx.run(|| parts.par_iter().try_for_each_init(Worker::new, work))
}

/// Build the compressed chunks for writing `src` (shape `src_shape`) into
/// `region`: chunks the region covers are built from `src` alone, the others
/// are read from `sc` and patched. Returns `(nchunk, compressed)` in order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_chunks(
    ctx: &Context,
    cparams: &CParams,
    sc: Option<&SChunk>,
    geom: &Geometry,
    region: &Region,
    parts: &[ChunkPart],
    src: &[u8],
    src_shape: &[i64],
) -> Result<Vec<(i64, Vec<u8>)>> {
    check_user_buffer(geom, region, src_shape, src.len())?;
    // The copy routine takes a *mut for both directions; in Write direction
    // it only reads through it.
    let user = UserBuf::new(src.as_ptr().cast_mut(), geom, src_shape);
    let nthreads = blosc_threads(ctx, parts.len());
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<(i64, Vec<u8>)> {
        match sc {
            Some(sc) if !part.covers_chunk => w.load(sc, geom, part.nchunk, None, nthreads)?,
            _ => {
                w.scratch.clear();
                w.scratch.resize(geom.chunk_nbytes(), 0);
            }
        }
        let mut scratch = std::mem::take(&mut w.scratch);
        geom.for_each_block_in(part, |b| {
            // SAFETY: Dir::Write only reads the user buffer, which covers the
            // region (checked above) and is borrowed immutably for the call.
            unsafe { copy_block(geom, region, part, &b, &mut scratch, user, Dir::Write) };
        });
        let compressed = w.cctx(cparams, geom, nthreads)?.compress(&scratch);
        w.scratch = scratch;
        Ok((part.nchunk, compressed?))
    };
    ctx.run(|| parts.par_iter().map_init(Worker::new, work).collect())
}

/// The chunk parts of `region`, for callers of [`build_chunks`].
pub(crate) fn plan(geom: &Geometry, region: &Region) -> Vec<ChunkPart> {
    collect_parts(geom, region)
}
