//! The slicing engine: plans which chunks and blocks a region touches, reads
//! them in parallel straight into the caller's buffer (decompressing only the
//! touched blocks), and builds compressed chunks in parallel for writes.
//!
//! One copy routine serves both directions: it walks the rows a block shares
//! with the region and moves each contiguous run with one `memcpy` (one load
//! and store for the short rows of a plane across the last axis).

use crate::context::Context;
use crate::error::{Error, Result};
use crate::geometry::{c_strides, for_each_index, BlockPart, ChunkPart, Geometry, Region, MAX_DIM};
use crate::store::blosc::{self, CCtx, Compression, DCtx};
use crate::store::{Store, Want};

/// Which way [`copy_block`] moves bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
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

    fn strides(self) -> [i64; MAX_DIM] {
        self.strides
    }

    /// The address of the `n` bytes from the item at offset `off` (in
    /// items), checked to lie inside the view.
    fn at(self, off: i64, item: usize, n: usize) -> *mut u8 {
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
fn debug_assert_distinct(chunks: impl Iterator<Item = i64>) {
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
unsafe fn copy_block(
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

/// Per-worker state: codecs and scratch buffers, two objects so that a task
/// borrows a codec and a buffer at once. Workers are kept by their
/// [`Context`] between calls ([`WorkerPool`]), so a small read neither
/// creates Blosc2 contexts nor touches a fresh chunk-sized buffer.
#[derive(Default)]
pub(crate) struct Worker {
    pub(crate) codecs: Codecs,
    pub(crate) bufs: Buffers,
}

/// A worker's Blosc2 contexts, made on first use and kept while they fit.
#[derive(Default)]
pub(crate) struct Codecs {
    /// Decompression contexts by thread count, most recently used first.
    dctx: Vec<(usize, DCtx)>,
    /// Compression contexts, likewise.
    cctx: Vec<(CctxKey, CCtx)>,
    /// Compressed bytes read from a file ([`Store::chunk_for`]), kept
    /// between reads so that a read allocates and zero-fills nothing.
    compressed: Vec<u8>,
    /// The same for the chunks of a read done a block per task ([`read_blocks`]).
    fetched: Vec<Vec<u8>>,
}

/// A worker's scratch buffers.
#[derive(Default)]
pub(crate) struct Buffers {
    /// A decompressed chunk (block layout).
    pub(crate) scratch: Vec<u8>,
    /// A chunk being built (block layout).
    pub(crate) out: Vec<u8>,
    /// A C-order staging box.
    pub(crate) stage: Vec<u8>,
    /// One decompressed block.
    block: Vec<u8>,
}

/// What a compression context was made for; another array (item size,
/// block size) or thread count needs another one.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CctxKey {
    comp: Compression,
    typesize: usize,
    blocksize: usize,
    nthreads: usize,
}

impl CctxKey {
    fn new(comp: &Compression, geom: &Geometry, nthreads: usize) -> Self {
        CctxKey { comp: *comp, typesize: geom.itemsize(), blocksize: geom.block_nbytes(), nthreads }
    }
}

/// The idle [`Worker`]s of a context, in the process that uses it (a
/// forked child gets an empty one: see [`Context::workers`]).
#[derive(Default)]
pub(crate) struct WorkerPool {
    idle: std::sync::Mutex<Vec<Worker>>,
}

impl WorkerPool {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        // A panic while holding the lock leaves a plain Vec behind: still valid.
        self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A worker taken from a context's pool for one task; it goes back on drop.
pub(crate) struct Lease<'a> {
    pool: &'a WorkerPool,
    /// How many idle workers the pool keeps.
    keep: usize,
    /// The process that took it (see `drop`).
    pid: u32,
    worker: Option<Worker>,
}

impl Lease<'_> {
    pub(crate) fn new(ctx: &Context) -> Lease<'_> {
        let pool = ctx.workers();
        let worker = pool.idle().pop().unwrap_or_default();
        // Enough for every pool thread plus the calling thread.
        Lease { pool, keep: ctx.nthreads() + 1, pid: crate::fork::pid(), worker: Some(worker) }
    }
}

impl std::ops::Deref for Lease<'_> {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Worker {
        self.worker.as_mut().expect("present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(w) = self.worker.take() else { return };
        if crate::fork::pid() != self.pid {
            // Taken before a fork, dropped in the child: the pool is the
            // parent's (its lock may be held by a thread the child does not
            // have) and the worker's Blosc2 contexts may own such threads.
            std::mem::forget(w);
            return;
        }
        let mut idle = self.pool.idle();
        if idle.len() < self.keep {
            idle.push(w);
        }
    }
}

/// How many Blosc2 contexts of each kind a worker keeps. A context with
/// threads keeps them (idle) while it lives, and a job's [`Split`] picks one
/// of a few thread counts, so a handful covers the jobs that alternate.
const KEPT_CONTEXTS: usize = 3;

/// The context for `key` among `kept` (most recently used first), made by
/// `make` when missing; the least recently used one goes when too many.
fn kept<K: PartialEq + Copy, V>(kept: &mut Vec<(K, V)>, key: K, make: impl FnOnce() -> Result<V>) -> Result<&mut V> {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(i) => kept[..=i].rotate_right(1),
        None => {
            kept.insert(0, (key, make()?));
            kept.truncate(KEPT_CONTEXTS);
        }
    }
    Ok(&mut kept[0].1)
}

impl Codecs {
    fn cctx(&mut self, comp: &Compression, geom: &Geometry, nthreads: usize) -> Result<&mut CCtx> {
        kept(&mut self.cctx, CctxKey::new(comp, geom, nthreads), || {
            CCtx::new(comp, geom.itemsize(), geom.block_nbytes(), nthreads)
        })
    }

    /// Compress `chunk` (a whole chunk of `geom`, block layout).
    pub(crate) fn compress(
        &mut self,
        comp: &Compression,
        geom: &Geometry,
        chunk: &[u8],
        nthreads: usize,
    ) -> Result<Vec<u8>> {
        self.cctx(comp, geom, nthreads)?.compress(chunk)
    }

    /// [`Codecs::compress`] into a buffer from `spares`, if any.
    fn compress_reusing(
        &mut self,
        comp: &Compression,
        geom: &Geometry,
        chunk: &[u8],
        nthreads: usize,
        spares: Option<&Spares>,
    ) -> Result<Vec<u8>> {
        let out = spares.map(Spares::take).unwrap_or_default();
        self.cctx(comp, geom, nthreads)?.compress_into(chunk, out)
    }

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

/// Fill `out` with a whole chunk of `geom` whose items inside `region`
/// (the chunk's part of it) come from `user`, the rest zeros.
///
/// # Errors
/// [`Error::Io`] (out of memory) if a chunk does not fit in memory.
pub(crate) fn pack(out: &mut Vec<u8>, geom: &Geometry, region: &Region, part: &ChunkPart, user: UserBuf) -> Result<()> {
    zeroed(out, geom.chunk_nbytes())?;
    geom.for_each_block_in(part, |b| {
        // SAFETY: Dir::Write only reads `user` (every address checked by `at`).
        unsafe { copy_block(geom, region, part, &b, out, user, Dir::Write) };
    });
    Ok(())
}

/// The bytes of block `i` in a decompressed chunk of `geom`.
fn block_range(geom: &Geometry, i: usize) -> std::ops::Range<usize> {
    let b = geom.block_nbytes();
    (i * b).min(geom.chunk_nbytes())..((i + 1) * b).min(geom.chunk_nbytes())
}

/// How a job of chunk tasks shares the context's threads: `lanes` tasks run
/// at once, each (de)compressing with `blosc` threads inside its chunk.
///
/// Chunk-level lanes cost no synchronisation, Blosc's threads share one
/// chunk's blocks; a job of few chunks needs both (zarrs splits its outer
/// and inner concurrency the same way). The 20 chunks of a plane on 16
/// threads take two rounds of chunks one thread each (the second round
/// leaves 12 threads idle), but five rounds of 4 chunks with 4 threads each
/// take 5/8 of that time; a 16³ box in 2 chunks of 4 blocks each is done in
/// one block's time with 4 threads per chunk, in four blocks' with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// Tasks that run at once.
    pub(crate) lanes: usize,
    /// Blosc2 threads inside each task.
    pub(crate) blosc: usize,
}

impl Split {
    /// The split of `nthreads` threads for `ntasks` tasks of about `blocks`
    /// blocks each that finishes first if every block costs the same:
    /// rounds of tasks × blocks per thread inside a task. Blosc's threads
    /// must win by 10% to be used (waking them and waiting for the slowest
    /// has a cost: 120 chunks on 16 threads stay one thread each, though
    /// the last of 8 rounds is half empty), and they come in
    /// powers of two or all the threads, so a worker keeps few contexts.
    pub(crate) fn new(nthreads: usize, ntasks: usize, blocks: usize) -> Split {
        let (n, tasks, blocks) = (nthreads.max(1), ntasks.max(1), blocks.max(1));
        let lanes = |t: usize| (n / t).max(1);
        let cost = |t: usize| tasks.div_ceil(lanes(t)) * blocks.div_ceil(t);
        let candidates = std::iter::successors(Some(2usize), |t| t.checked_mul(2)).take_while(|&t| t < n).chain([n]);
        let mut best = 1;
        for t in candidates {
            if cost(t) * 10 < cost(best) * 9 {
                best = t;
            }
        }
        Split { lanes: lanes(best).min(tasks), blosc: best }
    }

    /// The split of `ctx`'s threads for `ntasks` tasks of `blocks` blocks.
    pub(crate) fn of(ctx: &Context, ntasks: usize, blocks: usize) -> Split {
        Split::new(ctx.nthreads(), ntasks, blocks)
    }
}

/// Run `work` on every task, `split.lanes` at a time, each lane on a worker
/// of `ctx`'s pool pulling the next task until none is left or one failed
/// (a slow task holds up no other lane). The results come in task order.
/// One lane runs on the calling thread, with no hand-off to the pool.
///
/// # Errors
/// The first error of a task (the others stop taking tasks).
pub(crate) fn run_tasks<T: Sync, R: Send>(
    ctx: &Context,
    tasks: &[T],
    split: Split,
    work: impl Fn(&mut Worker, &T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    if split.lanes <= 1 || tasks.len() <= 1 {
        let mut w = Lease::new(ctx);
        return tasks.iter().map(|t| work(&mut w, t)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let lane = || -> Result<Vec<(usize, R)>> {
        let mut w = Lease::new(ctx);
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(task) = tasks.get(i) else { return Ok(done) };
            match work(&mut w, task) {
                Ok(r) => done.push((i, r)),
                Err(e) => {
                    next.store(tasks.len(), std::sync::atomic::Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    };
    // The calling thread runs a lane itself: one hand-off fewer (tens of
    // microseconds, which a small read notices).
    let done = std::sync::Mutex::new(Vec::with_capacity(split.lanes));
    let finish = |r| done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(r);
    ctx.scope(|s| {
        for _ in 1..split.lanes {
            s.spawn(|_| finish(lane()));
        }
        finish(lane());
    })?;
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(tasks.len()).collect();
    let lanes = done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (i, r) in lanes.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten() {
        out[i] = Some(r);
    }
    Ok(out.into_iter().map(|r| r.expect("every task ran: none failed")).collect())
}

/// How many chunk tasks one round of a long job hands the workers: a few
/// per thread keeps them busy while bounding the compressed chunks held in
/// memory and keeping progress reports fine-grained.
pub(crate) fn batch_len(ctx: &Context) -> usize {
    (ctx.nthreads() * 4).max(16)
}

/// The parts of the chunks that `region` touches, in chunk order: the plan
/// of every read and write.
///
/// # Errors
/// [`Error::Io`] (out of memory) if the plan does not fit in memory: a huge
/// region is an error, not an abort.
pub(crate) fn plan(geom: &Geometry, region: &Region) -> Result<Vec<ChunkPart>> {
    let count = usize::try_from(geom.nchunks_in(region)).unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    reserve(&mut parts, count, || format!("the plan of {count} chunks"))?;
    geom.for_each_chunk_in(region, |p| parts.push(p));
    Ok(parts)
}

/// Make room for `n` more items in `v`, or fail with [`Error::Io`] (out of
/// memory) naming `what`: sizes that come from the caller or a file never abort.
pub(crate) fn reserve<T>(v: &mut Vec<T>, n: usize, what: impl FnOnce() -> String) -> Result<()> {
    v.try_reserve_exact(n).map_err(|_| {
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        Error::io(&format!("allocating {}", what()), None, &oom)
    })
}

/// `buf` emptied and then `len` zero bytes long, as [`reserve`] allows.
///
/// A buffer that must grow is replaced by a fresh zeroed allocation
/// ([`zeroed_vec`]) rather than grown and filled: the allocator hands out
/// large ones as untouched zero pages, so a read that decompresses a few
/// blocks of a chunk-sized buffer faults in only those pages. Filling a
/// fresh multi-megabyte buffer byte by byte made each worker's first read
/// of an array cost milliseconds more than the next ones.
pub(crate) fn zeroed(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.capacity() < len {
        *buf = Vec::new();
        *buf = zeroed_vec(len)?;
    } else {
        buf.clear();
        buf.resize(len, 0);
    }
    Ok(())
}

/// `buf` `len` bytes long, its bytes left as they are when it already is
/// (for a buffer the caller overwrites whole), otherwise as [`zeroed`].
pub(crate) fn sized(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.len() == len {
        return Ok(());
    }
    zeroed(buf, len)
}

/// A vector of `len` zero bytes from the allocator's zeroed allocation
/// (`calloc`), or [`Error::Io`] (out of memory) when it does not fit.
pub(crate) fn zeroed_vec(len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let oom = || {
        let e = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        Error::io(&format!("allocating a buffer of {len} bytes"), None, &e)
    };
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| oom())?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(oom());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `len` bytes (capacity `len`), and all `len` bytes are initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Check that a user buffer of `len` bytes and shape `shape` can hold `region`.
///
/// # Errors
/// [`Error::InvalidArgument`] otherwise.
pub(crate) fn check_user_buffer(geom: &Geometry, region: &Region, shape: &[i64], len: usize) -> Result<()> {
    check_buffer_fits(geom, &region.shape(), "slice", shape, len)
}

/// Check that a user buffer of `len` bytes and shape `shape` can hold a box
/// of shape `need` (a slice or a selection).
fn check_buffer_fits(geom: &Geometry, need: &[i64], what: &str, shape: &[i64], len: usize) -> Result<()> {
    if shape.len() != geom.ndim() {
        return Err(Error::InvalidArgument(format!(
            "buffer shape has {} entries, ndim is {}",
            shape.len(),
            geom.ndim()
        )));
    }
    if (0..shape.len()).any(|i| shape[i] < need[i]) {
        return Err(Error::InvalidArgument(format!("buffer shape {shape:?} cannot hold a {what} of shape {need:?}")));
    }
    let bytes = crate::geometry::checked_product(shape)
        .and_then(|n| n.checked_mul(geom.itemsize() as i64))
        .ok_or_else(|| Error::InvalidArgument("buffer shape overflows".into()))?;
    if (len as u128) < bytes as u128 {
        return Err(Error::InvalidArgument(format!(
            "buffer of {len} bytes is smaller than the {bytes} its shape needs"
        )));
    }
    Ok(())
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
    let user = UserBuf::new_mut(dst, geom, dst_shape);
    debug_assert_distinct(parts.iter().map(|p| p.nchunk));
    let blocks = parts.iter().map(|p| geom.nblocks_in(p)).max().unwrap_or(0);
    let split = Split::of(ctx, parts.len(), usize::try_from(blocks).unwrap_or(usize::MAX));
    // Too few chunks for the threads: a task per block (Blosc's own threads
    // only where a chunk cannot be read by blocks).
    if split.blosc > 1 {
        // SAFETY: `dst` is borrowed mutably for the whole call, so nobody
        // else touches it.
        if unsafe { read_blocks(ctx, sc, geom, region, &parts, user) }? {
            return Ok(());
        }
    }
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<()> {
        let Worker { codecs, bufs } = w;
        // SAFETY: this part's items belong to this chunk alone, so no two
        // workers write the same bytes; `dst` is borrowed mutably for the
        // whole call, so nobody else touches it.
        unsafe { codecs.read_part(&mut bufs.scratch, sc, geom, region, part, user, split.blosc) }
    };
    run_tasks(ctx, &parts, split, work).map(drop)
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

/// Copy the items that block `b` of `part` shares with `region` from
/// `block`, which holds that block alone, into `user`.
///
/// # Safety
/// As [`copy_block`].
unsafe fn copy_lone_block(
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

/// The split of `ctx`'s threads for compressing `ntasks` whole chunks of `geom`.
pub(crate) fn write_split(ctx: &Context, geom: &Geometry, ntasks: usize) -> Split {
    Split::of(ctx, ntasks, usize::try_from(geom.nblocks()).unwrap_or(usize::MAX))
}

/// Build the compressed chunks for writing `src` (shape `src_shape`) into
/// `region`: chunks the region covers are built from `src` alone, the others
/// are read from `sc` and patched. Returns `(nchunk, compressed)` in order.
///
/// With `spares`, chunks are compressed into the buffers of chunks already
/// stored ([`Spares`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_chunks(
    ctx: &Context,
    sc: Option<&Store>,
    geom: &Geometry,
    region: &Region,
    parts: &[ChunkPart],
    src: &[u8],
    src_shape: &[i64],
    spares: Option<&Spares>,
) -> Result<Vec<(i64, Vec<u8>)>> {
    check_user_buffer(geom, region, src_shape, src.len())?;
    // The copy routine takes a *mut for both directions; in Write direction
    // it only reads through it.
    let user = UserBuf::new(src, geom, src_shape);
    // Chunks patched block by block ([`patch_blocks`]) compress one block
    // at a time: Blosc's threads have nothing to share there.
    let patched = sc.is_some() && parts.iter().any(|p| !p.covers_chunk);
    let split = if patched {
        Split { lanes: ctx.nthreads().min(parts.len()).max(1), blosc: 1 }
    } else {
        write_split(ctx, geom, parts.len())
    };
    let nthreads = split.blosc;
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<(i64, Vec<u8>)> {
        let Worker { codecs, bufs } = w;
        if let Some(sc) = sc.filter(|_| !part.covers_chunk) {
            if let Some(c) = patch_blocks(codecs, &mut bufs.block, sc, ctx.compression(), geom, region, part, user)? {
                return Ok((part.nchunk, c));
            }
        }
        let scratch = &mut bufs.scratch;
        match sc {
            Some(sc) if !part.covers_chunk => codecs.load(scratch, sc, geom, part.nchunk, None, nthreads)?,
            // Every byte of a chunk the write fills is overwritten.
            _ if geom.fills_chunk(part) => sized(scratch, geom.chunk_nbytes())?,
            _ => zeroed(scratch, geom.chunk_nbytes())?,
        }
        geom.for_each_block_in(part, |b| {
            // SAFETY: Dir::Write only reads the user buffer (borrowed
            // immutably for the call; every address checked by `at`).
            unsafe { copy_block(geom, region, part, &b, scratch, user, Dir::Write) };
        });
        Ok((part.nchunk, codecs.compress_reusing(ctx.compression(), geom, scratch, nthreads, spares)?))
    };
    run_tasks(ctx, parts, split, work)
}

/// The buffers of compressed chunks that an operation has stored, for its
/// next chunks to be compressed into ([`build_chunks`]): a write of many
/// chunks then touches the pages of a few batches of them, not fresh ones
/// for every chunk (a fresh page costs a fault and its zeroing). Dropped
/// with the operation.
#[derive(Default)]
pub(crate) struct Spares(std::sync::Mutex<Vec<Vec<u8>>>);

impl Spares {
    /// A buffer (empty, possibly with room), or a new one.
    fn take(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop().unwrap_or_default()
    }

    /// Keep `bufs` for later chunks.
    pub(crate) fn give(&self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(bufs);
    }
}

/// Chunk `part.nchunk` of `sc` with the items of `part` written from
/// `user`, recompressing only the blocks the region touches and keeping
/// the others' compressed streams ([`blosc::splice`]): a plane across a
/// chunk of 4 block layers recompresses a quarter of it. `Ok(None)` when
/// the chunk cannot be patched so (see [`blosc::block_spans`]) or every
/// block is touched: the caller rebuilds the whole chunk then.
///
/// # Errors
/// As reading, decompressing and compressing a chunk.
#[allow(clippy::too_many_arguments)]
fn patch_blocks(
    codecs: &mut Codecs,
    block: &mut Vec<u8>,
    sc: &Store,
    comp: &Compression,
    geom: &Geometry,
    region: &Region,
    part: &ChunkPart,
    user: UserBuf,
) -> Result<Option<Vec<u8>>> {
    let chunk = sc.chunk(part.nchunk)?;
    let Some(spans) = blosc::block_spans(chunk.bytes(), geom.chunk_nbytes(), geom.block_nbytes())? else {
        return Ok(None);
    };
    let mut touched = Vec::new();
    geom.for_each_block_in(part, |b| touched.push(b));
    if touched.len() >= spans.len() {
        return Ok(None);
    }
    let bshape = geom.blockshape_full();
    let mut new: Vec<Option<Vec<u8>>> = vec![None; spans.len()];
    for b in touched {
        if block.len() != geom.block_nbytes() {
            zeroed(block, geom.block_nbytes())?;
        }
        let whole = (0..geom.dims()).all(|i| b.start[i] == 0 && b.stop[i] == i64::from(bshape[i]));
        if whole {
            // Every item is overwritten: nothing to decompress.
            block.fill(0);
        } else {
            kept(&mut codecs.dctx, 1, || DCtx::new(1))?.decompress_block(&chunk, b.nblock as usize, block)?;
        }
        let local = BlockPart { nblock: 0, ..b.clone() };
        // SAFETY: Dir::Write only reads the user buffer (every address
        // checked by `at`), which the caller lends for the call.
        unsafe { copy_block(geom, region, part, &local, block, user, Dir::Write) };
        new[b.nblock as usize] = Some(codecs.compress(comp, geom, block, 1)?);
    }
    Ok(blosc::splice(chunk.bytes(), &spans, &new))
}

/// One axis of an orthogonal selection: `(index, position in the caller's
/// list)` sorted by index then position, and the runs that fall in each chunk.
struct AxisSel {
    entries: Vec<(i64, i64)>,
    /// `(chunk coordinate, range of entries)`, in chunk order.
    chunks: Vec<(i64, std::ops::Range<usize>)>,
}

/// One chunk's share of a selection (see [`Selection::chunk_plan`]).
type ChunkPlan = (i64, Vec<bool>, Vec<Vec<(i64, i64)>>);

/// A validated orthogonal selection: one list of indices per axis, unsorted
/// and possibly with repeats; it selects their outer product.
pub(crate) struct Selection {
    axes: Vec<AxisSel>,
    counts: Vec<i64>,
}

impl Selection {
    /// Check every index against `geom` and group the lists by chunk. With
    /// `last_wins`, only the last position of a repeated index is kept (a
    /// write of repeated indices stores the last value given).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is not one list per axis;
    /// [`Error::InvalidIndex`] if an index leaves its axis.
    pub(crate) fn new(geom: &Geometry, lists: &[&[i64]], last_wins: bool) -> Result<Self> {
        if lists.len() != geom.ndim() {
            return Err(Error::InvalidArgument(format!(
                "{} selection lists given, ndim is {}",
                lists.len(),
                geom.ndim()
            )));
        }
        let shape = geom.shape_full();
        let chunkshape = geom.chunkshape_full();
        let counts: Vec<i64> = lists.iter().map(|l| l.len() as i64).collect();
        // A 0-dim array has one item, selected by the empty product.
        let zero_dim = [0i64];
        let lists: Vec<&[i64]> = if geom.ndim() == 0 { vec![&zero_dim] } else { lists.to_vec() };
        let mut axes = Vec::with_capacity(lists.len());
        for (axis, list) in lists.iter().enumerate() {
            if let Some(&bad) = list.iter().find(|&&v| v < 0 || v >= shape[axis]) {
                return Err(Error::InvalidIndex(format!(
                    "selection index {bad} on axis {axis} is not in 0..{}",
                    shape[axis]
                )));
            }
            let mut entries: Vec<(i64, i64)> = list.iter().enumerate().map(|(p, &v)| (v, p as i64)).collect();
            entries.sort_unstable();
            if last_wins {
                let mut kept: Vec<(i64, i64)> = Vec::with_capacity(entries.len());
                for e in entries {
                    match kept.last_mut() {
                        Some(last) if last.0 == e.0 => *last = e,
                        _ => kept.push(e),
                    }
                }
                entries = kept;
            }
            let c = i64::from(chunkshape[axis]);
            let mut chunks: Vec<(i64, std::ops::Range<usize>)> = Vec::new();
            for (i, &(v, _)) in entries.iter().enumerate() {
                match chunks.last_mut() {
                    Some((k, r)) if *k == v / c => r.end = i + 1,
                    _ => chunks.push((v / c, i..i + 1)),
                }
            }
            axes.push(AxisSel { entries, chunks });
        }
        Ok(Selection { axes, counts })
    }

    /// The shape of the selection (`ndim` entries).
    pub(crate) fn shape(&self) -> &[i64] {
        &self.counts
    }

    /// The chunks the selection touches, as per-axis indices into `chunks`.
    fn jobs(&self) -> Vec<[usize; MAX_DIM]> {
        let n = self.axes.len();
        let hi: Vec<i64> = self.axes.iter().map(|a| a.chunks.len() as i64).collect();
        let mut jobs = Vec::new();
        for_each_index(&[0; MAX_DIM][..n], &hi, |idx| {
            let mut j = [0usize; MAX_DIM];
            for i in 0..n {
                j[i] = idx[i] as usize;
            }
            jobs.push(j);
        });
        jobs
    }

    /// The number of the chunk a job reads.
    fn chunk_of(&self, geom: &Geometry, job: &[usize; MAX_DIM]) -> i64 {
        let n = self.axes.len();
        let grid_strides = c_strides(&geom.chunk_grid()[..n]);
        (0..n).map(|i| self.axes[i].chunks[job[i]].0 * grid_strides[i]).sum()
    }

    /// For one chunk: its number, the block mask (true = not needed), and
    /// per axis the `(chunk offset contribution, user position)` of each
    /// selected index. A chunk offset (block layout) is the sum of the
    /// per-axis contributions.
    fn chunk_plan(&self, geom: &Geometry, job: &[usize; MAX_DIM]) -> ChunkPlan {
        let n = self.axes.len();
        let chunkshape = geom.chunkshape_full();
        let blockshape = geom.blockshape_full();
        let bgrid = geom.block_grid();
        let bgrid_strides = c_strides(&bgrid[..n]);
        let bshape64: Vec<i64> = blockshape[..n].iter().map(|&b| i64::from(b)).collect();
        let bstrides = c_strides(&bshape64);
        let grid_strides = c_strides(&geom.chunk_grid()[..n]);
        let block_items = geom.block_nitems();
        let mut nchunk = 0;
        let mut touched: Vec<Vec<bool>> = Vec::with_capacity(n);
        let mut contrib = Vec::with_capacity(n);
        for i in 0..n {
            let (k, range) = &self.axes[i].chunks[job[i]];
            nchunk += k * grid_strides[i];
            let origin = k * i64::from(chunkshape[i]);
            let b = bshape64[i];
            let mut t = vec![false; bgrid[i] as usize];
            let mut c = Vec::with_capacity(range.len());
            for &(v, pos) in &self.axes[i].entries[range.clone()] {
                let x = v - origin;
                t[(x / b) as usize] = true;
                c.push(((x / b) * bgrid_strides[i] * block_items + (x % b) * bstrides[i], pos));
            }
            touched.push(t);
            contrib.push(c);
        }
        let mut mask = vec![true; geom.nblocks() as usize];
        let mut nb = 0usize;
        for_each_index(&[0; MAX_DIM][..n], &bgrid[..n], |idx| {
            mask[nb] = !(0..n).all(|i| touched[i][idx[i] as usize]);
            nb += 1;
        });
        (nchunk, mask, contrib)
    }
}

/// Visit the outer product of per-axis `(offset, position)` lists:
/// `f(chunk offset, user offset)` in items.
fn for_each_selected(contrib: &[Vec<(i64, i64)>], ustrides: &[i64; MAX_DIM], mut f: impl FnMut(usize, i64)) {
    let n = contrib.len();
    let hi: Vec<i64> = contrib.iter().map(|c| c.len() as i64).collect();
    for_each_index(&[0; MAX_DIM][..n], &hi, |idx| {
        let (mut coff, mut uoff) = (0i64, 0i64);
        for i in 0..n {
            let (c, p) = contrib[i][idx[i] as usize];
            coff += c;
            uoff += p * ustrides[i];
        }
        f(coff as usize, uoff);
    });
}

/// Read the items of `sel` into `dst`, a C-order buffer of shape `dst_shape`
/// whose item `(j0, j1, …)` receives `array[sel0[j0], sel1[j1], …]`.
pub(crate) fn read_selection(
    ctx: &Context,
    sc: &Store,
    geom: &Geometry,
    sel: &Selection,
    dst: &mut [u8],
    dst_shape: &[i64],
) -> Result<()> {
    check_buffer_fits(geom, sel.shape(), "selection", dst_shape, dst.len())?;
    if sel.shape().contains(&0) {
        return Ok(());
    }
    let user = UserBuf::new_mut(dst, geom, dst_shape);
    let jobs = sel.jobs();
    debug_assert_distinct(jobs.iter().map(|j| sel.chunk_of(geom, j)));
    let plans: Vec<_> = jobs.iter().map(|job| sel.chunk_plan(geom, job)).collect();
    let blocks = plans.iter().map(|(_, mask, _)| mask.iter().filter(|skip| !**skip).count()).max();
    let split = Split::of(ctx, plans.len(), blocks.unwrap_or(0));
    let nthreads = split.blosc;
    let item = geom.itemsize();
    let work = |w: &mut Worker, (nchunk, mask, contrib): &ChunkPlan| -> Result<()> {
        let Worker { codecs, bufs } = w;
        codecs.load(&mut bufs.scratch, sc, geom, *nchunk, Some(mask), nthreads)?;
        let scratch = &bufs.scratch;
        for_each_selected(contrib, &user.strides(), |coff, uoff| {
            let src = &scratch[coff * item..(coff + 1) * item];
            // SAFETY: `at` checked the item lies in the user buffer; positions
            // of different chunks are different (each position holds one
            // index per axis), so no two workers write the same item, and
            // `dst` is borrowed mutably for the call.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), user.at(uoff, item, item), item) }
        });
        Ok(())
    };
    run_tasks(ctx, &plans, split, work).map(drop)
}

/// Build the compressed chunks for writing `src` (shape `src_shape`) into
/// the items of `sel` (built with `last_wins`). Returns `(nchunk, compressed)`.
pub(crate) fn build_selection(
    ctx: &Context,
    sc: &Store,
    geom: &Geometry,
    sel: &Selection,
    src: &[u8],
    src_shape: &[i64],
) -> Result<Vec<(i64, Vec<u8>)>> {
    check_buffer_fits(geom, sel.shape(), "selection", src_shape, src.len())?;
    if sel.shape().contains(&0) {
        return Ok(Vec::new());
    }
    let user = UserBuf::new(src, geom, src_shape);
    let jobs = sel.jobs();
    let split = write_split(ctx, geom, jobs.len());
    let nthreads = split.blosc;
    let item = geom.itemsize();
    let work = |w: &mut Worker, job: &[usize; MAX_DIM]| -> Result<(i64, Vec<u8>)> {
        let (nchunk, _, contrib) = sel.chunk_plan(geom, job);
        let Worker { codecs, bufs } = w;
        let scratch = &mut bufs.scratch;
        codecs.load(scratch, sc, geom, nchunk, None, nthreads)?;
        for_each_selected(&contrib, &user.strides(), |coff, uoff| {
            let dst = &mut scratch[coff * item..(coff + 1) * item];
            // SAFETY: `at` checked the item lies in the user buffer, which is
            // only read (borrowed immutably for the call).
            unsafe { std::ptr::copy_nonoverlapping(user.at(uoff, item, item).cast_const(), dst.as_mut_ptr(), item) }
        });
        Ok((nchunk, codecs.compress(ctx.compression(), geom, scratch, nthreads)?))
    };
    run_tasks(ctx, &jobs, split, work)
}

#[cfg(test)]
mod tests {
    //! The index arithmetic and raw-pointer copies, without c-blosc2 (so
    //! that Miri can run them): chunks are laid out by hand here.
    use super::*;
    use crate::geometry::checked_product;

    const ITEM: usize = 2;

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
    fn locate(g: &Geometry, coords: &[i64]) -> (i64, usize) {
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

    #[test]
    fn selections_map_every_position_to_its_chunk_offset() {
        let g = Geometry::new(ITEM, &[7, 6, 5], &[3, 4, 2], &[2, 3, 1]).unwrap();
        let lists: [&[i64]; 3] = [&[6, 0, 3, 3, 5], &[5], &[4, 0, 1, 4]];
        let sel = Selection::new(&g, &lists, false).unwrap();
        assert_eq!(sel.shape(), &[5, 1, 4]);
        let ust = c_strides(sel.shape());
        let mut visits = std::collections::BTreeMap::new();
        for job in sel.jobs() {
            let (nchunk, mask, contrib) = sel.chunk_plan(&g, &job);
            assert_eq!(mask.len() as i64, g.nblocks());
            for_each_selected(&contrib, &ust, |coff, uoff| {
                let j = [uoff / ust[0], uoff % ust[0] / ust[1], uoff % ust[1]];
                let c: Vec<i64> = (0..3).map(|i| lists[i][j[i] as usize]).collect();
                assert_eq!(locate(&g, &c), (nchunk, coff), "position {j:?} = item {c:?}");
                assert!(!mask[coff / g.block_nitems() as usize], "the block of {c:?} is masked out");
                *visits.entry(uoff).or_insert(0) += 1;
            });
        }
        assert_eq!(visits.len(), 20);
        assert!(visits.values().all(|&v| v == 1));
        // With last_wins, a repeated index keeps its last position only.
        let sel = Selection::new(&g, &lists, true).unwrap();
        let kept: usize = sel.axes[0].entries.len();
        assert_eq!((kept, sel.axes[0].entries[1]), (4, (3, 3)));
        // Out of range, and the wrong number of lists.
        assert!(matches!(Selection::new(&g, &[&[7], &[0], &[0]], false), Err(Error::InvalidIndex(_))));
        assert!(matches!(Selection::new(&g, &[&[0], &[-1], &[0]], false), Err(Error::InvalidIndex(_))));
        assert!(matches!(Selection::new(&g, &[&[0], &[0]], false), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn splits_give_blosc_threads_only_where_chunks_are_too_few() {
        let s = |n, tasks, blocks| {
            let s = Split::new(n, tasks, blocks);
            (s.lanes, s.blosc)
        };
        // As many chunks as threads, or more: one thread per chunk.
        assert_eq!(s(16, 120, 128), (16, 1));
        assert_eq!(s(2, 2, 128), (2, 1));
        // A plane's 20 chunks on 16 threads: 4 lanes of 4 threads.
        assert_eq!(s(16, 20, 128), (4, 4));
        // One chunk: its blocks share the threads, no more threads than blocks.
        assert_eq!(s(16, 1, 8), (1, 8));
        assert_eq!(s(16, 1, 128), (1, 16));
        assert_eq!(s(6, 1, 128), (1, 6));
        // A one-block read runs on one thread; so does everything on one thread.
        assert_eq!(s(16, 1, 1), (1, 1));
        assert_eq!(s(1, 20, 128), (1, 1));
        // A 16³ box across 2 chunks of 4 blocks: 2 lanes of 4 threads.
        assert_eq!(s(16, 2, 4), (2, 4));
        // Nothing to do, or a zero budget, still gives a usable split.
        assert_eq!(s(0, 0, 0), (1, 1));
        for n in 1..=64 {
            for tasks in [1, 2, 3, 5, 20, 120] {
                for blocks in [1, 4, 32, 128] {
                    let (lanes, blosc) = s(n, tasks, blocks);
                    assert!(lanes >= 1 && blosc >= 1 && lanes <= tasks, "{n} {tasks} {blocks}");
                    assert!(lanes * blosc <= n.max(1), "{n} threads oversubscribed: {lanes} × {blosc}");
                    assert!(blosc == n || blosc.is_power_of_two());
                }
            }
        }
    }

    #[test]
    // Threads (rayon's pool, crossbeam's epochs) are TSan's to check: Miri
    // rejects crossbeam's pointer casts under strict provenance.
    #[cfg_attr(miri, ignore)]
    fn tasks_run_in_lanes_and_come_back_in_order() {
        let ctx = Context::new(crate::Config { nthreads: 4, ..crate::Config::default() }).unwrap();
        let tasks: Vec<usize> = (0..100).collect();
        for lanes in [1, 2, 4] {
            let split = Split { lanes, blosc: 1 };
            let threads = std::sync::Mutex::new(std::collections::HashSet::new());
            let out = run_tasks(&ctx, &tasks, split, |_, &t| {
                threads.lock().unwrap().insert(std::thread::current().id());
                Ok(t * 2)
            })
            .unwrap();
            assert_eq!(out, tasks.iter().map(|t| t * 2).collect::<Vec<_>>());
            assert!(threads.lock().unwrap().len() <= lanes);
        }
        // A failing task stops the job with its error; later tasks are not all run.
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let err = run_tasks(&ctx, &tasks, Split { lanes: 2, blosc: 1 }, |_, &t| {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if t == 10 {
                Err(Error::InvalidArgument("task 10".into()))
            } else {
                Ok(t)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("task 10"), "{err}");
        assert!(ran.load(std::sync::atomic::Ordering::Relaxed) < tasks.len());
    }

    #[test]
    fn buffer_checks() {
        let g = Geometry::new(4, &[6, 5], &[3, 5], &[3, 5]).unwrap();
        let r = g.region(&[1, 0], &[3, 5]).unwrap();
        assert!(check_user_buffer(&g, &r, &[2, 5], 40).is_ok());
        assert!(check_user_buffer(&g, &r, &[3, 6], 72).is_ok());
        assert!(check_user_buffer(&g, &r, &[2, 5], 39).is_err());
        assert!(check_user_buffer(&g, &r, &[1, 5], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[2, -5], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[2], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[i64::MAX, 5], usize::MAX).is_err());
    }
}
