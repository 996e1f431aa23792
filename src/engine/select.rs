//! Orthogonal selections: one list of indices per axis, read into or
//! written from the caller's buffer a chunk per task.

use super::copy::{debug_assert_distinct, UserBuf};
use super::plan::check_buffer_fits;
use super::tasks::{run_tasks, write_split, Split};
use crate::context::{Context, Worker};
use crate::error::{Error, Result};
use crate::geometry::{c_strides, for_each_index, Geometry, MAX_DIM};
use crate::store::Store;

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
    let _section = sc.read_section()?;
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
    let _section = sc.read_section()?;
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
    use super::*;
    use crate::engine::copy::tests::{locate, ITEM};

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
}
