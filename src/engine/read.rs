//! Reads: chunks decompressed (only the blocks a read needs) straight into
//! the caller's buffer, in parallel across chunks, or a task per block when
//! the chunks are too few for the threads.

use super::copy::{copy_block, copy_lone_block, debug_assert_distinct, Dir, UserBuf};
use super::plan::{check_user_buffer, plan};
use super::tasks::{run_tasks, Lease, Split};
use crate::blosc2::DCtx;
use crate::buffer::zeroed;
use crate::context::{kept, Codecs, Context, Worker};
use crate::error::{Error, Result};
use crate::geometry::{BlockPart, ChunkPart, Geometry, Region};
use crate::store::{Store, Want};

impl Codecs {
    /// Decompress chunk `n` into `scratch` (resized to a chunk). With `mask`,
    /// only the blocks whose entry is false are guaranteed to be filled.
    pub(crate) fn load(
        &mut self,
        scratch: &mut Vec<u8>,
        sc: &Store,
        geom: &Geometry,
        n: i64,
        mask: Option<&[bool]>,
        nthreads: usize,
    ) -> Result<()> {
        let nbytes = geom.chunk_nbytes();
        if scratch.len() != nbytes {
            zeroed(scratch, nbytes)?;
        }
        let want = Want { nbytes, typesize: geom.itemsize(), blocksize: geom.block_nbytes(), skip: mask };
        let Codecs { dctx, compressed, .. } = self;
        let mut chunk = sc.chunk_for(n, &want, compressed)?;
        if chunk.bytes().is_empty() {
            // Never initialised (sparse super-chunk): reads as zeros.
            scratch.fill(0);
            return Ok(());
        }
        // DELTA decodes every block against the first, so the first must be
        // decoded too: with it masked out, c-blosc2 2.15 decodes against
        // garbage on one thread and waits for it forever on several.
        let with_first;
        let mut mask = mask;
        if let Some(m) = mask.filter(|m| m.first() == Some(&true) && chunk.has_delta()) {
            drop(chunk);
            with_first = std::iter::once(false).chain(m[1..].iter().copied()).collect::<Vec<bool>>();
            mask = Some(&with_first);
            chunk = sc.chunk_for(n, &Want { skip: mask, ..want }, compressed)?;
        }
        let info = chunk.info()?;
        // Maskout selects Blosc blocks; it matches geometric blocks only when
        // the chunk was written with our block size.
        let mask = mask.filter(|_| info.blocksize == geom.block_nbytes() && info.nbytes == nbytes);
        kept(dctx, nthreads, || DCtx::new(nthreads))?.decompress(&chunk, scratch, mask)
    }

    /// Read one chunk's part of `region` into `user` through `scratch`,
    /// decompressing only the blocks it touches.
    ///
    /// # Safety
    /// Nobody else may touch the items of `part` in `user` during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn read_part(
        &mut self,
        scratch: &mut Vec<u8>,
        sc: &Store,
        geom: &Geometry,
        region: &Region,
        part: &ChunkPart,
        user: UserBuf,
        nthreads: usize,
    ) -> Result<()> {
        let mut mask = vec![true; geom.nblocks() as usize];
        let cache = sc.block_cache();
        let mut hits = Vec::new();
        geom.for_each_block_in(part, |b| match cache.and_then(|c| c.get(part.nchunk, b.nblock as u32)) {
            Some(bytes) => hits.push((b.nblock as usize, bytes)),
            None => mask[b.nblock as usize] = false,
        });
        if mask.contains(&false) {
            self.load(scratch, sc, geom, part.nchunk, Some(&mask), nthreads)?;
            if let Some(c) = cache {
                for (i, _) in mask.iter().enumerate().filter(|(_, skip)| !**skip) {
                    c.put(part.nchunk, i as u32, &scratch[block_range(geom, i)]);
                }
            }
        } else if scratch.len() != geom.chunk_nbytes() {
            zeroed(scratch, geom.chunk_nbytes())?;
        }
        for (i, bytes) in hits {
            scratch[block_range(geom, i)].copy_from_slice(&bytes);
        }
        geom.for_each_block_in(part, |b| {
            // SAFETY: forwarded from the caller.
            unsafe { copy_block(geom, region, part, &b, scratch, user, Dir::Read) };
        });
        Ok(())
    }

    /// Read `region` of an array into `user`, one chunk after another (for
    /// callers that are already parallel).
    ///
    /// # Safety
    /// As [`Codecs::read_part`], for the whole region.
    pub(crate) unsafe fn read_region(
        &mut self,
        scratch: &mut Vec<u8>,
        sc: &Store,
        geom: &Geometry,
        region: &Region,
        user: UserBuf,
    ) -> Result<()> {
        for part in plan(geom, region)? {
            // SAFETY: forwarded from the caller.
            unsafe { self.read_part(scratch, sc, geom, region, &part, user, 1) }?;
        }
        Ok(())
    }
}

/// Read the items of `part` (a chunk's part of the whole array) into
/// `w.bufs.stage` as a C-order box of shape `part.stop - part.start`,
/// decompressing with `nthreads` Blosc2 threads: the per-chunk input of
/// computations that visit every item once ([`crate::Array::reduce`]).
///
/// # Errors
/// As reading a chunk.
pub(crate) fn read_part_box(
    w: &mut Worker,
    sc: &Store,
    geom: &Geometry,
    part: &ChunkPart,
    nthreads: usize,
) -> Result<()> {
    let n = geom.ndim();
    let start: Vec<i64> = (0..n).map(|i| part.origin[i] + part.start[i]).collect();
    let stop: Vec<i64> = (0..n).map(|i| part.origin[i] + part.stop[i]).collect();
    let shape: Vec<i64> = (0..n).map(|i| part.stop[i] - part.start[i]).collect();
    let region = geom.region(&start, &stop)?;
    let len = usize::try_from(region.nitems()).unwrap_or(usize::MAX).saturating_mul(geom.itemsize());
    let Worker { codecs, bufs } = w;
    if bufs.stage.len() != len {
        zeroed(&mut bufs.stage, len)?;
    }
    let user = UserBuf::new_mut(&mut bufs.stage, geom, &shape);
    // SAFETY: `stage` is this worker's own buffer, borrowed mutably here and
    // holding exactly the region's box, so nobody else touches its items.
    unsafe { codecs.read_part(&mut bufs.scratch, sc, geom, &region, part, user, nthreads) }
}

/// The bytes of block `i` in a decompressed chunk of `geom`.
fn block_range(geom: &Geometry, i: usize) -> std::ops::Range<usize> {
    let b = geom.block_nbytes();
    (i * b).min(geom.chunk_nbytes())..((i + 1) * b).min(geom.chunk_nbytes())
}

/// Read `region` of the array into `dst`, a C-order buffer of shape
/// `dst_shape` (checked by [`check_user_buffer`]) whose first item receives
/// the region's first item.
pub(crate) fn read_region(
    ctx: &Context,
    sc: &Store,
    geom: &Geometry,
    region: &Region,
    dst: &mut [u8],
    dst_shape: &[i64],
) -> Result<()> {
    check_user_buffer(geom, region, dst_shape, dst.len())?;
    let parts = plan(geom, region)?;
    // Every chunk (and each block of one) from one state of the array.
    let _section = sc.read_section()?;
    let user = UserBuf::new_mut(dst, geom, dst_shape);
    debug_assert_distinct(parts.iter().map(|p| p.nchunk));
    if parts.len() < 2 || !sc.reads_remotely() {
        // SAFETY: `dst` is borrowed mutably for the whole call, so nobody
        // else touches it.
        return unsafe { read_parts(ctx, sc, geom, region, &parts, user) };
    }
    // Chunks on another machine, a round trip each: a batch of them at a
    // time (at most PREFETCH_BYTES of what they hold), fetched at once.
    let nblocks = usize::try_from(geom.nblocks()).unwrap_or(usize::MAX);
    let masks: Vec<Vec<bool>> = parts
        .iter()
        .map(|part| {
            let mut mask = vec![true; nblocks];
            geom.for_each_block_in(part, |b| mask[b.nblock as usize] = false);
            mask
        })
        .collect();
    let mut from = 0;
    while from < parts.len() {
        let (mut to, mut bytes) = (from, 0usize);
        while to < parts.len() && (to == from || bytes < PREFETCH_BYTES) {
            let wanted = masks[to].iter().filter(|&&skip| !skip).count();
            bytes += if wanted * 2 >= nblocks { geom.chunk_nbytes() } else { wanted * geom.block_nbytes() };
            to += 1;
        }
        let wants: Vec<(i64, Want<'_>)> = (from..to)
            .map(|i| {
                let want = Want {
                    nbytes: geom.chunk_nbytes(),
                    typesize: geom.itemsize(),
                    blocksize: geom.block_nbytes(),
                    skip: Some(&masks[i]),
                };
                (parts[i].nchunk, want)
            })
            .collect();
        // SAFETY: as above; the batches' parts are distinct chunks'.
        sc.prefetched(&wants, || unsafe { read_parts(ctx, sc, geom, region, &parts[from..to], user) })?;
        from = to;
    }
    Ok(())
}

/// The most bytes a batch of a remote read's chunks holds (what their
/// wanted blocks decompress to, or whole chunks where most are wanted).
const PREFETCH_BYTES: usize = 256 << 20;

/// [`read_region`] for its chunk parts `parts`.
///
/// # Safety
/// Nobody else may touch the parts' items in `user` during the call.
unsafe fn read_parts(
    ctx: &Context,
    sc: &Store,
    geom: &Geometry,
    region: &Region,
    parts: &[ChunkPart],
    user: UserBuf,
) -> Result<()> {
    let blocks = parts.iter().map(|p| geom.nblocks_in(p)).max().unwrap_or(0);
    let split = Split::of(ctx, parts.len(), usize::try_from(blocks).unwrap_or(usize::MAX));
    // Too few chunks for the threads: a task per block (Blosc's own threads
    // only where a chunk cannot be read by blocks).
    if split.blosc > 1 {
        // SAFETY: forwarded from the caller.
        if unsafe { read_blocks(ctx, sc, geom, region, parts, user) }? {
            return Ok(());
        }
    }
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<()> {
        let Worker { codecs, bufs } = w;
        // SAFETY: this part's items belong to this chunk alone, so no two
        // workers write the same bytes; nobody else touches them (the
        // caller's promise).
        unsafe { codecs.read_part(&mut bufs.scratch, sc, geom, region, part, user, split.blosc) }
    };
    run_tasks(ctx, parts, split, work).map(drop)
}

/// Read `region`, whose chunk parts are `parts`, with a task per block:
/// for reads of fewer chunks than threads, which chunk-level tasks would
/// leave idle threads to (a 16³ box touches 8 blocks of one or two chunks).
/// Each chunk is fetched once (from a file, only the blocks the region
/// needs), then the workers decompress one block each and copy its part.
/// Returns `Ok(false)`, having written nothing, if a chunk cannot be read
/// a block at a time ([`DCtx::decompress_block`]): read it by chunks then.
///
/// # Safety
/// Nobody else may touch the region's items in `user` during the call.
unsafe fn read_blocks(
    ctx: &Context,
    sc: &Store,
    geom: &Geometry,
    region: &Region,
    parts: &[ChunkPart],
    user: UserBuf,
) -> Result<bool> {
    let cache = sc.block_cache();
    let nblocks = usize::try_from(geom.nblocks()).unwrap_or(usize::MAX);
    let mut tasks: Vec<(usize, BlockPart)> = Vec::new();
    let mut skip: Vec<Vec<bool>> = Vec::with_capacity(parts.len());
    let mut hits = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let mut mask = vec![true; nblocks];
        geom.for_each_block_in(part, |b| match cache.and_then(|c| c.get(part.nchunk, b.nblock as u32)) {
            Some(bytes) => hits.push((i, b, bytes)),
            None => {
                mask[b.nblock as usize] = false;
                tasks.push((i, b));
            }
        });
        skip.push(mask);
    }
    // The chunks are fetched on the calling thread, into its worker's
    // buffers (taken out while they are borrowed, and put back).
    let mut lease = Lease::new(ctx);
    let mut fetched = std::mem::take(&mut lease.codecs.fetched);
    if fetched.len() < parts.len() {
        fetched.resize_with(parts.len(), Vec::new);
    }
    // Fetch the chunks of `tasks` (the blocks `skip` leaves) into `fetched`,
    // then decompress and copy a block per task; `fetched` goes back to
    // the worker whatever happens.
    let fetch_and_read = |fetched: &mut Vec<Vec<u8>>| -> Result<bool> {
        let want = |mask| Want {
            nbytes: geom.chunk_nbytes(),
            typesize: geom.itemsize(),
            blocksize: geom.block_nbytes(),
            skip: Some(mask),
        };
        let mut chunks = Vec::with_capacity(parts.len());
        for ((part, mask), buf) in parts.iter().zip(&skip).zip(fetched.iter_mut()) {
            if mask.contains(&false) {
                let chunk = sc.chunk_for(part.nchunk, &want(mask), buf)?;
                let nbytes = if chunk.bytes().is_empty() { geom.chunk_nbytes() } else { chunk.info()?.nbytes };
                if nbytes != geom.chunk_nbytes() {
                    return Err(Error::InvalidFormat(format!(
                        "chunk holds {nbytes} bytes, the array geometry expects {}",
                        geom.chunk_nbytes()
                    )));
                }
                if !chunk.by_blocks(geom.block_nbytes())? {
                    return Ok(false);
                }
                chunks.push(Some(chunk));
            } else {
                chunks.push(None);
            }
        }
        let work = |w: &mut Worker, (i, b): &(usize, BlockPart)| -> Result<()> {
            let Worker { codecs, bufs } = w;
            if bufs.block.len() != geom.block_nbytes() {
                zeroed(&mut bufs.block, geom.block_nbytes())?;
            }
            let chunk = chunks[*i].as_ref().expect("fetched: the chunk has blocks to read");
            if chunk.bytes().is_empty() {
                // Never initialised (sparse super-chunk): reads as zeros.
                bufs.block.fill(0);
            } else {
                kept(&mut codecs.dctx, 1, || DCtx::new(1))?.decompress_block(
                    chunk,
                    b.nblock as usize,
                    &mut bufs.block,
                )?;
            }
            if let Some(c) = cache {
                c.put(parts[*i].nchunk, b.nblock as u32, &bufs.block);
            }
            // SAFETY: tasks are distinct blocks of distinct chunks, so each
            // writes items of the region no other writes; the caller owns them.
            unsafe { copy_lone_block(geom, region, &parts[*i], b, &mut bufs.block, user) };
            Ok(())
        };
        let split = Split { lanes: ctx.nthreads().min(tasks.len()), blosc: 1 };
        run_tasks(ctx, &tasks, split, work)?;
        Ok(true)
    };
    let done = fetch_and_read(&mut fetched);
    lease.codecs.fetched = fetched;
    if done? {
        for (i, b, bytes) in hits {
            let block = &mut lease.bufs.block;
            block.clear();
            block.extend_from_slice(&bytes);
            // SAFETY: forwarded from the caller.
            unsafe { copy_lone_block(geom, region, &parts[i], &b, block, user) };
        }
        return Ok(true);
    }
    Ok(false)
}
