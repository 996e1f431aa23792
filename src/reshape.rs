//! New chunk lists from old ones: every operation that makes an array's
//! chunks out of another array's (resize, insert, append, delete, squeeze,
//! get_slice, copy) is described as a [`Mapping`] (per new axis, where each
//! run of indices comes from), planned chunk by chunk, built in parallel and
//! then either applied in place or appended to a new super-chunk.
//!
//! A new chunk is, in order of preference:
//! - a zero chunk, when one of its axes holds only new items;
//! - the old chunk's compressed bytes, when it holds the same items at the
//!   same places (chunk-aligned shifts, same extent, or a grow into the old
//!   chunk's padding, which then keeps what the padding held);
//! - the old chunk decompressed, with the items a shrink cut off cleared, and
//!   recompressed (cut-off items never come back);
//! - otherwise built item by item: old regions read block-wise, buffer rows
//!   copied, the rest zeros.

use std::sync::Arc;

use crate::blosc2::repeat_chunk;
use crate::buffer;
use crate::context::Context;
use crate::context::{Buffers, Worker};
use crate::engine::{self, UserBuf};
use crate::error::Result;
use crate::geometry::{c_strides, for_each_index, ChunkPart, Geometry, MAX_DIM};
use crate::store::{Store, Tx};

/// Where a run of new indices on one axis comes from. The index is that of
/// the run's first item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The old array, from this old index on.
    Old(i64),
    /// New items: zeros, or an old chunk's padding when they grow into it.
    Fill,
    /// The caller's buffer, from this index on (on the other axes, a
    /// buffer index equals the old index).
    Buffer(i64),
}

impl Source {
    fn shifted(self, by: i64) -> Self {
        match self {
            Source::Old(f) => Source::Old(f + by),
            Source::Buffer(f) => Source::Buffer(f + by),
            Source::Fill => Source::Fill,
        }
    }
}

/// A run `[lo, hi)` of new indices and where its first item comes from.
#[derive(Clone, Copy, Debug)]
struct Seg {
    lo: i64,
    hi: i64,
    src: Source,
}

/// One new axis: runs covering `0..len` in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct AxisMap {
    segs: Vec<Seg>,
    len: i64,
}

impl AxisMap {
    fn push(mut self, n: i64, src: Source) -> Self {
        if n > 0 {
            self.segs.push(Seg { lo: self.len, hi: self.len + n, src });
            self.len += n;
        }
        self
    }

    /// New index `i` is old index `start + i`, for `len` indices.
    pub(crate) fn slice(start: i64, len: i64) -> Self {
        AxisMap::default().push(len, Source::Old(start))
    }

    /// An old axis of length `old` with `n` items from `src` put in at `at`.
    pub(crate) fn insert(old: i64, at: i64, n: i64, src: Source) -> Self {
        AxisMap::default().push(at, Source::Old(0)).push(n, src).push(old - at, Source::Old(at))
    }

    /// An old axis of length `old` without the items `[at, at + n)`.
    pub(crate) fn delete(old: i64, at: i64, n: i64) -> Self {
        AxisMap::default().push(at, Source::Old(0)).push(old - at - n, Source::Old(at + n))
    }

    /// The runs intersecting `[lo, hi)`, clipped to it: `(lo, hi, source)`.
    fn pieces(&self, lo: i64, hi: i64) -> Vec<(i64, i64, Source)> {
        self.pieces_iter(lo, hi).collect()
    }

    /// [`AxisMap::pieces`], one at a time.
    fn pieces_iter(&self, lo: i64, hi: i64) -> impl Iterator<Item = (i64, i64, Source)> + '_ {
        self.segs.iter().filter(move |s| s.lo < hi && s.hi > lo).map(move |s| {
            let a = s.lo.max(lo);
            (a, s.hi.min(hi), s.src.shifted(a - s.lo))
        })
    }
}

/// How a new array's items come from an old array (and a buffer).
pub(crate) struct Mapping<'a> {
    /// The old array.
    pub(crate) old_geom: &'a Geometry,
    /// Its super-chunk.
    pub(crate) old: &'a Store,
    /// One map per new axis (`dims()` of the new geometry: a 0-dim array
    /// has one axis of length 1).
    pub(crate) axes: Vec<AxisMap>,
    /// The old axis each new axis reads; old axes no new axis reads have
    /// length 1 and are read at index 0 (squeezed away). `None` for the
    /// axis of a 0-dim new array.
    pub(crate) kept: Vec<Option<usize>>,
    /// The buffer for [`Source::Buffer`] runs: C order, with the old shape
    /// except on the run's axis.
    pub(crate) buffer: Option<(&'a [u8], Vec<i64>)>,
}

/// What happens to one new chunk.
enum Plan {
    /// Every item is new: a zero chunk.
    Zeros,
    /// The old chunk, unchanged.
    Reuse(i64),
    /// The old chunk with these chunk-local boxes (cut off by a shrink) cleared.
    Patch(i64, Vec<([i64; MAX_DIM], [i64; MAX_DIM])>),
    /// Assembled item by item.
    Build,
}

/// A new chunk: an old one kept as it is, or new compressed bytes.
pub(crate) enum Built {
    /// Old chunk number.
    Reuse(i64),
    /// Compressed bytes.
    Data(Vec<u8>),
    /// The zero chunk (a special chunk), shared by every new chunk of zeros.
    Zeros(Arc<[u8]>),
}

/// What one axis of a new chunk is, for [`classify`].
enum AxisFate {
    /// Only new items.
    AllFill,
    /// The same items as old chunk row `k`, nothing cut off or added.
    Same(i64),
    /// Old chunk row `k`, of which the items from `new` to `old` were cut off.
    Shrunk(i64, i64, i64),
    /// Anything else.
    Mixed,
}

fn axis_fate(map: &AxisMap, o: i64, valid: i64, c: i64, old_len: i64) -> AxisFate {
    // (No allocation: this runs once per axis of every chunk of the new array.)
    if map.pieces_iter(o, o + valid).all(|p| p.2 == Source::Fill) {
        return AxisFate::AllFill;
    }
    let mut pieces = map.pieces_iter(o, o + valid);
    let Some((lo, hi, Source::Old(p))) = pieces.next() else { return AxisFate::Mixed };
    if lo != o || p % c != 0 {
        return AxisFate::Mixed;
    }
    let old_valid = c.min(old_len - p);
    match (pieces.next(), pieces.next()) {
        (None, _) if old_valid == valid => AxisFate::Same(p / c),
        (None, _) => AxisFate::Shrunk(p / c, valid, old_valid),
        // The old chunk ended where the new items start: they grow into its
        // padding and read what it holds, as the original library did.
        (Some((_, _, Source::Fill)), None) if hi - lo == old_valid => AxisFate::Same(p / c),
        _ => AxisFate::Mixed,
    }
}

/// Decide what new chunk `part` (a part covering its chunk) is.
fn classify(new_geom: &Geometry, m: &Mapping<'_>, same_layout: bool, part: &ChunkPart) -> Plan {
    let n = new_geom.dims();
    let chunkshape = new_geom.chunkshape_full();
    let old_shape = m.old_geom.shape_full();
    let old_grid = c_strides(&m.old_geom.chunk_grid()[..n]);
    let ext = m.old_geom.stored_chunkshape();
    let mut old = 0;
    let mut clear = Vec::new();
    let mut mixed = false;
    for i in 0..n {
        let c = i64::from(chunkshape[i]);
        match axis_fate(&m.axes[i], part.origin[i], part.stop[i], c, old_shape[i]) {
            AxisFate::AllFill => return Plan::Zeros,
            _ if !same_layout => mixed = true,
            AxisFate::Same(k) => old += k * old_grid[i],
            AxisFate::Shrunk(k, new, was) => {
                old += k * old_grid[i];
                let (mut lo, mut hi) = ([0; MAX_DIM], ext);
                lo[i] = new;
                hi[i] = was;
                clear.push((lo, hi));
            }
            AxisFate::Mixed => mixed = true,
        }
    }
    if mixed {
        Plan::Build
    } else if clear.is_empty() {
        Plan::Reuse(old)
    } else {
        Plan::Patch(old, clear)
    }
}

/// Assemble new chunk `part` item by item into `w.out`.
fn assemble(w: &mut Worker, new_geom: &Geometry, m: &Mapping<'_>, part: &ChunkPart) -> Result<()> {
    let n = new_geom.dims();
    let item = new_geom.itemsize();
    let (mut lo, mut hi) = ([0i64; MAX_DIM], [1i64; MAX_DIM]);
    for i in 0..n {
        lo[i] = part.origin[i];
        hi[i] = part.origin[i] + part.stop[i];
    }
    let box_shape: Vec<i64> = (0..n).map(|i| hi[i] - lo[i]).collect();
    let sstrides = c_strides(&box_shape);
    let nitems: i64 = box_shape.iter().product();
    let Worker { codecs, bufs } = w;
    let Buffers { scratch, out, stage, .. } = bufs;
    let pieces: Vec<Vec<(i64, i64, Source)>> = (0..n).map(|i| m.axes[i].pieces(lo[i], hi[i])).collect();
    if let Some(view) = whole_from_buffer(m, new_geom, &pieces, &lo[..n], &hi[..n]) {
        // A chunk made of the caller's items only (an appended slab): packed
        // straight from the buffer, without staging a copy of it.
        let region = new_geom.region(&lo[..new_geom.ndim()], &hi[..new_geom.ndim()])?;
        return engine::pack(out, new_geom, &region, part, view);
    }
    buffer::zeroed(stage, nitems as usize * item)?;
    let counts: Vec<i64> = pieces.iter().map(|p| p.len() as i64).collect();
    let old_n = m.old_geom.ndim();
    let mut result = Ok(());
    for_each_index(&[0; MAX_DIM][..n], &counts, |idx| {
        if result.is_err() {
            return;
        }
        let sel: Vec<(i64, i64, Source)> = (0..n).map(|i| pieces[i][idx[i] as usize]).collect();
        if sel.iter().any(|p| p.2 == Source::Fill) {
            return;
        }
        let dst_off = (0..n).map(|i| (sel[i].0 - lo[i]) * sstrides[i]).sum::<i64>() as usize * item;
        let shape: Vec<i64> = sel.iter().map(|p| p.1 - p.0).collect();
        if sel.iter().any(|p| matches!(p.2, Source::Buffer(_))) {
            let (buf, bshape) = m.buffer.as_ref().expect("a Buffer run comes with its buffer");
            let bstrides = c_strides(bshape);
            let src_off: i64 = sel
                .iter()
                .enumerate()
                .map(|(i, p)| match p.2 {
                    Source::Old(f) | Source::Buffer(f) => f * bstrides[i],
                    Source::Fill => 0,
                })
                .sum();
            copy_box(&buf[src_off as usize * item..], &bstrides, &mut stage[dst_off..], &sstrides, &shape, item);
        } else {
            let (mut ostart, mut ostop) = (vec![0i64; old_n], vec![1i64; old_n]);
            let mut ostrides = [0i64; MAX_DIM];
            for i in 0..n {
                if let (Some(a), Source::Old(f)) = (m.kept[i], sel[i].2) {
                    ostart[a] = f;
                    ostop[a] = f + shape[i];
                    ostrides[a] = sstrides[i];
                }
            }
            result = m.old_geom.region(&ostart, &ostop).and_then(|region| {
                // SAFETY: the strides address the piece's box inside the stage,
                // which this worker owns.
                unsafe {
                    codecs.read_region(scratch, m.old, m.old_geom, &region, UserBuf::strided(stage, dst_off, ostrides))
                }
            });
        }
    });
    let region = new_geom.region(&lo[..new_geom.ndim()], &hi[..new_geom.ndim()]);
    result
        .and(region)
        .and_then(|region| engine::pack(out, new_geom, &region, part, UserBuf::new(stage, new_geom, &box_shape)))
}

/// When every item of the box `lo..hi` comes from the caller's buffer (on
/// each axis one run, none a fill, one from the buffer), a view of the
/// buffer whose first item is the box's.
fn whole_from_buffer(
    m: &Mapping<'_>,
    new_geom: &Geometry,
    pieces: &[Vec<(i64, i64, Source)>],
    lo: &[i64],
    hi: &[i64],
) -> Option<UserBuf> {
    let (buf, bshape) = m.buffer.as_ref()?;
    let mut from = [0i64; MAX_DIM];
    let mut buffered = false;
    for (i, p) in pieces.iter().enumerate() {
        let [(a, b, src)] = p.as_slice() else { return None };
        if (*a, *b) != (lo[i], hi[i]) {
            return None;
        }
        from[i] = match *src {
            Source::Buffer(f) => {
                buffered = true;
                f
            }
            Source::Old(f) => f,
            Source::Fill => return None,
        };
    }
    if !buffered {
        return None;
    }
    let bstrides = c_strides(bshape);
    let off: i64 = (0..pieces.len()).map(|i| from[i] * bstrides[i]).sum();
    let at = usize::try_from(off).ok()?.checked_mul(new_geom.itemsize())?;
    Some(UserBuf::new(buf.get(at..)?, new_geom, bshape))
}

/// Copy a C-order box of `shape` items between two strided buffers.
pub(crate) fn copy_box(
    src: &[u8],
    sstrides: &[i64; MAX_DIM],
    dst: &mut [u8],
    dstrides: &[i64; MAX_DIM],
    shape: &[i64],
    item: usize,
) {
    let n = shape.len();
    let row = shape[n - 1] as usize * item;
    for_each_index(&[0; MAX_DIM][..n - 1], &shape[..n - 1], |idx| {
        let s: i64 = (0..n - 1).map(|i| idx[i] * sstrides[i]).sum();
        let d: i64 = (0..n - 1).map(|i| idx[i] * dstrides[i]).sum();
        let (s, d) = (s as usize * item, d as usize * item);
        dst[d..d + row].copy_from_slice(&src[s..s + row]);
    });
}

/// Plan and build the new chunks `parts` (each covering its chunk) of an
/// array of `new_geom`. With `reuse`, old chunks that stay as they are come
/// back as [`Built::Reuse`]; without it they are recompressed with the context's parameters.
pub(crate) fn build(
    ctx: &Context,
    new_geom: &Geometry,
    m: &Mapping<'_>,
    parts: &[ChunkPart],
    reuse: bool,
) -> Result<Vec<Built>> {
    build_with(ctx, new_geom, m, reuse, parts.len(), |f| parts.iter().cloned().for_each(f))
}

/// [`build`] of every chunk of `new_geom`, in order, planned one at a time:
/// only the chunks with work to do are kept with their part (a plan of every
/// part of a million chunks would take hundreds of megabytes).
pub(crate) fn build_all(ctx: &Context, new_geom: &Geometry, m: &Mapping<'_>, reuse: bool) -> Result<Vec<Built>> {
    let region = new_geom.full_region();
    let count = usize::try_from(new_geom.nchunks_in(&region)).unwrap_or(usize::MAX);
    build_with(ctx, new_geom, m, reuse, count, |f| new_geom.for_each_chunk_in(&region, f))
}

/// [`build`] of the `count` parts `each` hands out, in order.
fn build_with(
    ctx: &Context,
    new_geom: &Geometry,
    m: &Mapping<'_>,
    reuse: bool,
    count: usize,
    each: impl FnOnce(&mut dyn FnMut(ChunkPart)),
) -> Result<Vec<Built>> {
    let same_layout = new_geom.chunkshape_full() == m.old_geom.chunkshape_full()
        && new_geom.blockshape_full() == m.old_geom.blockshape_full()
        && new_geom.ndim() == m.old_geom.ndim()
        && m.kept.iter().enumerate().all(|(i, &k)| k == Some(i) || m.old_geom.ndim() == 0);
    let comp = ctx.compression();
    let zeros: Arc<[u8]> = repeat_chunk(
        comp,
        new_geom.itemsize(),
        new_geom.block_nbytes(),
        new_geom.chunk_nbytes(),
        &vec![0u8; new_geom.itemsize()],
    )?
    .into();
    // Plan every chunk first (cheap), so that only the chunks with work to
    // do are spread over the threads.
    let mut out: Vec<Option<Built>> = Vec::new();
    buffer::reserve(&mut out, count, || format!("the plan of {count} chunks"))?;
    let mut todo = Vec::new();
    each(&mut |part: ChunkPart| match classify(new_geom, m, same_layout, &part) {
        Plan::Zeros => out.push(Some(Built::Zeros(zeros.clone()))),
        Plan::Reuse(k) if reuse => out.push(Some(Built::Reuse(k))),
        Plan::Reuse(k) => {
            todo.push((out.len(), Plan::Patch(k, Vec::new()), part));
            out.push(None);
        }
        plan => {
            todo.push((out.len(), plan, part));
            out.push(None);
        }
    });
    let split = engine::write_split(ctx, new_geom, todo.len());
    let nthreads = split.blosc;
    let work = |w: &mut Worker, (i, plan, part): &(usize, Plan, ChunkPart)| -> Result<(usize, Vec<u8>)> {
        let compressed = match plan {
            Plan::Patch(k, clear) => {
                let Worker { codecs, bufs } = w;
                codecs.load(&mut bufs.scratch, m.old, m.old_geom, *k, None, nthreads)?;
                for (lo, hi) in clear {
                    engine::clear_box(new_geom, &mut bufs.scratch, lo, hi);
                }
                codecs.compress(comp, new_geom, &bufs.scratch, nthreads)
            }
            _ => {
                assemble(w, new_geom, m, part)?;
                let Worker { codecs, bufs } = w;
                codecs.compress(comp, new_geom, &bufs.out, nthreads)
            }
        };
        Ok((*i, compressed?))
    };
    for (i, bytes) in engine::run_tasks(ctx, &todo, split, work)? {
        out[i] = Some(Built::Data(bytes));
    }
    Ok(out.into_iter().map(|b| b.expect("every chunk planned or built")).collect())
}

/// Make the store's chunks the `new` list (in order), inside transaction
/// `tx`, keeping the reused old chunks where they are stored: free old slots
/// take new data, the rest is appended (in one operation, whatever their
/// number: [`Tx::append_chunks`]) or deleted, and one reorder of the chunk
/// index puts them in place.
pub(crate) fn apply_in_place(tx: &mut Tx<'_>, new: Vec<Built>) -> Result<()> {
    let n_old = tx.nchunks();
    let mut reused = vec![false; n_old as usize];
    for b in &new {
        if let Built::Reuse(k) = b {
            reused[*k as usize] = true;
        }
    }
    let mut free = (0..n_old).filter(|&k| !reused[k as usize]);
    let mut slot_of = Vec::with_capacity(new.len());
    let mut appended: Vec<&[u8]> = Vec::new();
    for b in &new {
        let bytes: &[u8] = match b {
            Built::Reuse(k) => {
                slot_of.push(*k);
                continue;
            }
            Built::Data(d) => d,
            Built::Zeros(z) => z,
        };
        match free.next() {
            Some(slot) => {
                tx.update_chunks(&[(slot, bytes)])?;
                slot_of.push(slot);
            }
            None => {
                slot_of.push(n_old + appended.len() as i64);
                appended.push(bytes);
            }
        }
    }
    tx.append_chunks(&appended)?;
    let unused: Vec<i64> = free.collect();
    for &slot in unused.iter().rev() {
        tx.delete_chunk(slot)?;
        for s in &mut slot_of {
            if *s > slot {
                *s -= 1;
            }
        }
    }
    tx.reorder(&slot_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(m: &AxisMap, lo: i64, hi: i64) -> Vec<(i64, i64, Source)> {
        m.pieces(lo, hi)
    }

    #[test]
    fn axis_maps_cover_the_new_axis_in_order() {
        let m = AxisMap::insert(10, 3, 2, Source::Buffer(0));
        assert_eq!(m.len, 12);
        assert_eq!(pieces(&m, 0, 12), vec![(0, 3, Source::Old(0)), (3, 5, Source::Buffer(0)), (5, 12, Source::Old(3))]);
        // Clipped runs start at the right source index.
        assert_eq!(pieces(&m, 4, 7), vec![(4, 5, Source::Buffer(1)), (5, 7, Source::Old(3))]);
        assert_eq!(pieces(&m, 11, 12), vec![(11, 12, Source::Old(9))]);
        assert!(pieces(&m, 12, 20).is_empty());
        assert!(pieces(&m, 5, 5).is_empty());

        let d = AxisMap::delete(10, 2, 3);
        assert_eq!(d.len, 7);
        assert_eq!(pieces(&d, 0, 7), vec![(0, 2, Source::Old(0)), (2, 7, Source::Old(5))]);
        // Deleting everything, or nothing, at either end.
        assert_eq!(AxisMap::delete(4, 0, 4).len, 0);
        assert_eq!(pieces(&AxisMap::delete(4, 4, 0), 0, 4), vec![(0, 4, Source::Old(0))]);
        // Inserting at the ends, and nothing.
        assert_eq!(
            pieces(&AxisMap::insert(3, 0, 2, Source::Fill), 0, 5),
            vec![(0, 2, Source::Fill), (2, 5, Source::Old(0))]
        );
        assert_eq!(
            pieces(&AxisMap::insert(3, 3, 2, Source::Fill), 0, 5),
            vec![(0, 3, Source::Old(0)), (3, 5, Source::Fill)]
        );
        assert_eq!(AxisMap::insert(3, 1, 0, Source::Fill).segs.len(), 2);
        assert_eq!(pieces(&AxisMap::slice(4, 3), 1, 3), vec![(1, 3, Source::Old(5))]);
        assert!(AxisMap::slice(4, 0).segs.is_empty());
    }

    fn fate(m: &AxisMap, o: i64, valid: i64, c: i64, old_len: i64) -> String {
        match axis_fate(m, o, valid, c, old_len) {
            AxisFate::AllFill => "fill".into(),
            AxisFate::Same(k) => format!("same {k}"),
            AxisFate::Shrunk(k, new, was) => format!("shrunk {k} {new} {was}"),
            AxisFate::Mixed => "mixed".into(),
        }
    }

    #[test]
    fn chunk_axes_are_classified() {
        // Chunks of 4 on an old axis of 10 (chunks 0..4, 4..8, 8..10).
        let same = AxisMap::slice(0, 10);
        assert_eq!(fate(&same, 4, 4, 4, 10), "same 1");
        assert_eq!(fate(&same, 8, 2, 4, 10), "same 2");
        // Grow at the end: the last old chunk grows into its padding.
        let grow = AxisMap::insert(10, 10, 3, Source::Fill);
        assert_eq!(fate(&grow, 8, 4, 4, 10), "same 2");
        assert_eq!(fate(&grow, 12, 1, 4, 10), "fill");
        // Shrink: the chunk at 4 keeps 2 of its 4 items.
        let shrink = AxisMap::delete(10, 6, 4);
        assert_eq!(fate(&shrink, 4, 2, 4, 10), "shrunk 1 2 4");
        assert_eq!(fate(&shrink, 0, 4, 4, 10), "same 0");
        // Chunk-aligned shift: the new first chunk is the old second one.
        assert_eq!(fate(&AxisMap::delete(12, 0, 4), 0, 4, 4, 12), "same 1");
        // Unaligned shifts, buffer data and new items in the middle are built.
        assert_eq!(fate(&AxisMap::delete(10, 1, 1), 0, 4, 4, 10), "mixed");
        assert_eq!(fate(&AxisMap::slice(1, 8), 0, 4, 4, 10), "mixed");
        assert_eq!(fate(&AxisMap::insert(8, 4, 4, Source::Buffer(0)), 4, 4, 4, 8), "mixed");
        assert_eq!(fate(&AxisMap::insert(8, 4, 4, Source::Fill), 4, 4, 4, 8), "fill");
        assert_eq!(fate(&AxisMap::insert(8, 2, 4, Source::Fill), 0, 4, 4, 8), "mixed");
    }

    #[test]
    fn boxes_are_copied_between_strided_buffers() {
        // A 3 x 4 box of 2-byte items from a 5 x 6 source (at row 1, col 2)
        // into a 5 x 7 destination (at row 2, col 1).
        let item = 2;
        let src: Vec<u8> = (0..(5 * 6 * item) as u16).map(|v| v as u8).collect();
        let mut dst = vec![0xEEu8; 5 * 7 * item];
        let (mut ss, mut ds) = ([0i64; MAX_DIM], [0i64; MAX_DIM]);
        (ss[0], ss[1], ds[0], ds[1]) = (6, 1, 7, 1);
        let at = |r: usize, c: usize, width: usize| (r * width + c) * item;
        copy_box(&src[at(1, 2, 6)..], &ss, &mut dst[at(2, 1, 7)..], &ds, &[3, 4], item);
        for r in 0..5 {
            for c in 0..7 {
                let got = &dst[at(r, c, 7)..at(r, c, 7) + item];
                if (2..5).contains(&r) && (1..5).contains(&c) {
                    let s = at(r - 2 + 1, c - 1 + 2, 6);
                    assert_eq!(got, &src[s..s + item], "({r}, {c})");
                } else {
                    assert_eq!(got, &[0xEE, 0xEE], "({r}, {c}) outside the box");
                }
            }
        }
    }
}
