//! Proposing chunk and block shapes for an array and the way it will be read.
//!
//! [`propose_partitions`] turns an item size, a shape and an [`Access`]
//! pattern into a chunk shape and a block shape that the library accepts.
//! The sizes it aims at come from `benches/partitions.rs` (the table is in
//! the README's "Choosing chunks and blocks"):
//!
//! - a read decompresses whole blocks, so the block size sets the cost of
//!   small reads (a 1-item read decompresses one block); larger blocks
//!   compress better and read whole arrays faster;
//! - a chunk is the unit of work of a thread and of a write (each worker
//!   holds one decompressed chunk), so chunks should be large enough that
//!   per-chunk costs vanish, small enough to bound memory, and numerous
//!   enough to keep the threads busy.
//!
//! Shapes are also evened out: along each axis, chunks split the shape into
//! near-equal parts and blocks split the chunk into near-equal parts, so
//! that little padding is stored or decompressed.

use crate::blosc2::{CParams, Codec};
use crate::error::{invalid, Result};
use crate::geometry::{div_ceil, Geometry, MAX_CHUNKS, MAX_CHUNK_BYTES, MAX_DIM, MAX_ITEMSIZE};

/// How an array will mostly be read; it decides the sizes and the shapes of
/// the chunks and blocks that [`propose_partitions`] proposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Access {
    /// No particular pattern (the default): every kind of read within a
    /// small factor of the layout made for it. For 3 or more axes, the
    /// first axis is taken as a stack (time steps, image planes): blocks
    /// one item thin along it and near-square across the others, so a
    /// plane `a[k]` decompresses only itself, while small blocks keep
    /// pencils, items and boxes cheap; chunks a few items thick along it
    /// (as many chunks cross a plane as line a pencil along it). For 1 or
    /// 2 axes, near-cubic chunks and blocks. Sizes: [`Access::default_sizes`].
    #[default]
    Balanced,
    /// Many small reads (single items, small boxes) at random places:
    /// near-cubic small blocks, so a read decompresses few bytes.
    SmallReads,
    /// Whole-array or large contiguous reads and writes: large chunks and
    /// blocks that span the last axes (long contiguous runs in C order),
    /// for the best compression and throughput.
    Scans,
    /// Planes at a fixed index along `axis` (`a[.., k, ..]`): blocks one
    /// item thin along `axis` and as wide as possible across it, so a plane
    /// decompresses little more than itself; chunks wide across `axis` too.
    Planes {
        /// The axis whose index a plane fixes (0-based).
        axis: usize,
    },
}

impl Access {
    /// The default (chunk, block) sizes in bytes of this pattern, from the
    /// measurements in the README: `Balanced` 2 MiB and 16 KiB, `Planes`
    /// 2 MiB and 64 KiB, `SmallReads` 1 MiB and 16 KiB, `Scans` 16 MiB and
    /// 512 KiB.
    #[must_use]
    pub fn default_sizes(self) -> (usize, usize) {
        match self {
            Access::Balanced => (2 << 20, 16 << 10),
            Access::Planes { .. } => (2 << 20, 64 << 10),
            Access::SmallReads => (1 << 20, 16 << 10),
            Access::Scans => (16 << 20, 512 << 10),
        }
    }

    /// The pattern named `name`: `balanced`, `small-reads`, `scans`, or
    /// `planes:AXIS` (`planes` alone is `planes:0`).
    #[must_use]
    pub fn by_name(name: &str) -> Option<Access> {
        match name.trim() {
            "balanced" => Some(Access::Balanced),
            "small-reads" => Some(Access::SmallReads),
            "scans" => Some(Access::Scans),
            "planes" => Some(Access::Planes { axis: 0 }),
            other => other.strip_prefix("planes:")?.trim().parse().ok().map(|axis| Access::Planes { axis }),
        }
    }
}

/// The compression the library proposes when the caller names none (the
/// C `caterva_propose_config`, the Python package, the command line's
/// `import`): LZ4 at level 5 after a byte shuffle, c-blosc2's automatic
/// split. Measured on realistic floats and integers (README, "Defaults"):
/// it compresses within a few percent of BLOSCLZ (b2nd's default) and
/// writes and reads faster; ZSTD 1 makes files 10 to 25% smaller and
/// reads 2 to 3 times slower. (`CParams::default()` stays caterva 0.5's
/// `CATERVA_CONFIG_DEFAULTS`, ZSTD 5, for the programs written against it.)
#[must_use]
pub fn propose_cparams() -> CParams {
    CParams { codec: Codec::Lz4, clevel: 5, ..CParams::default() }
}

/// What [`propose_partitions`] aims for: the access pattern and, when
/// given, the sizes and thread count that override its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PartitionHints {
    /// How the array will be read.
    pub access: Access,
    /// Uncompressed bytes per chunk to aim for (default: the pattern's,
    /// see [`Access::default_sizes`]). Each reading or writing thread holds
    /// one decompressed chunk.
    pub chunk_bytes: Option<usize>,
    /// Uncompressed bytes per block to aim for (default: the pattern's);
    /// never more than the chunk.
    pub block_bytes: Option<usize>,
    /// Threads that will read the array (default: the machine's CPUs).
    /// An array smaller than `threads` chunks of the target size gets
    /// smaller chunks (not below a block), one or more per thread.
    pub threads: Option<usize>,
}

/// A chunk shape and a block shape (one entry per axis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitions {
    /// The chunk shape.
    pub chunkshape: Vec<i32>,
    /// The block shape.
    pub blockshape: Vec<i32>,
}

/// Propose a chunk shape and a block shape for an array of `shape` with
/// items of `itemsize` bytes, for the access pattern and sizes of `hints`.
///
/// The result is valid for the library ([`Geometry::new`] accepts it): on
/// every axis `1 <= block <= chunk`, and `chunk <= shape` on non-empty
/// axes; the padded chunk fits a Blosc2 chunk and the array has at most
/// 268,435,451 chunks (chunks grow past the target when a huge array would
/// need more). An axis of length 0 gets a real chunk length, so that the
/// array can grow along it ([`crate::Array::append`]). A 0-dim array gets
/// empty shapes.
///
/// ```
/// use caterva::{propose_partitions, Access, PartitionHints};
/// let hints = PartitionHints { access: Access::Planes { axis: 0 }, ..Default::default() };
/// let p = propose_partitions(8, &[300, 745, 400], &hints).unwrap();
/// assert_eq!(p.blockshape[0], 1); // thin along axis 0
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `itemsize`
/// is not in 1..=[`MAX_ITEMSIZE`](crate::geometry::MAX_ITEMSIZE), `shape` has more than 8 axes or a negative length,
/// `Planes`' axis is not an axis of the array, a size hint or the thread
/// count is 0, or the array is too large for any partition (its size in
/// bytes overflows 64 bits, or it would need chunks over 2 GiB).
pub fn propose_partitions(itemsize: usize, shape: &[i64], hints: &PartitionHints) -> Result<Partitions> {
    let ndim = shape.len();
    if ndim > MAX_DIM {
        invalid!("ndim {ndim} is larger than {MAX_DIM}");
    }
    if itemsize == 0 || itemsize > MAX_ITEMSIZE {
        invalid!("itemsize {itemsize} is not in 1..={MAX_ITEMSIZE}");
    }
    if let Some(i) = shape.iter().position(|&s| s < 0) {
        invalid!("shape[{i}] = {} is negative", shape[i]);
    }
    if let Access::Planes { axis } = hints.access {
        if axis >= ndim {
            invalid!("the planes' axis {axis} is not an axis of a {ndim}-dim array");
        }
    }
    if hints.chunk_bytes == Some(0) || hints.block_bytes == Some(0) {
        invalid!("chunk and block sizes must be at least 1 byte");
    }
    if hints.threads == Some(0) {
        invalid!("the thread count must be at least 1");
    }
    let total = shape.iter().try_fold(itemsize as i64, |acc, &s| acc.checked_mul(s));
    let Some(total) = total else {
        invalid!("shape {shape:?} is too large: its size in bytes overflows 64 bits");
    };
    if ndim == 0 {
        return Ok(Partitions { chunkshape: Vec::new(), blockshape: Vec::new() });
    }
    let (default_chunk, default_block) = hints.access.default_sizes();
    // Targets in items; chunks asked for stay under 1 GiB so that padding fits
    // too; only a huge array's chunks grow past that, up to the 2 GiB limit.
    let max_chunk = MAX_CHUNK_BYTES as u64 / itemsize as u64;
    let items = |bytes: usize| (bytes as u64 / itemsize as u64).clamp(1, max_chunk / 2);
    let mut chunk_items = items(hints.chunk_bytes.unwrap_or(default_chunk));
    let block_items = items(hints.block_bytes.unwrap_or(default_block));
    let empty = shape.contains(&0);
    if !empty {
        // Enough chunks for the threads, when the array is small.
        let threads = hints.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let per_thread = div_ceil(total / itemsize as i64, threads as i64) as u64;
        chunk_items = chunk_items.min(per_thread.max(block_items));
        // Few enough chunks for a super-chunk: larger chunks for a huge array.
        let need = div_ceil(total / itemsize as i64, MAX_CHUNKS) as u64;
        chunk_items = chunk_items.max(need);
    }
    // An empty axis may grow: let the target decide its chunk length.
    let bound: Vec<i64> =
        shape.iter().map(|&s| if s == 0 { i64::from(i32::MAX) } else { s.min(i32::MAX.into()) }).collect();
    // Rounding can leave a huge array a few too many chunks, and padding can
    // push a chunk near 2 GiB over the limit: grow or shrink, and try again.
    for _ in 0..64 {
        chunk_items = chunk_items.min(max_chunk);
        let (chunk, block) = shapes(hints.access, &bound, shape, chunk_items, block_items.min(chunk_items));
        let padded = block.iter().zip(&chunk).map(|(&b, &c)| div_ceil(c, b) * b).product::<i64>();
        let nchunks = if empty { 0 } else { shape.iter().zip(&chunk).map(|(&s, &c)| div_ceil(s, c)).product() };
        if nchunks > MAX_CHUNKS {
            if chunk_items == max_chunk {
                break;
            }
            chunk_items += chunk_items / 4 + 1;
        } else if padded.saturating_mul(itemsize as i64) > MAX_CHUNK_BYTES {
            chunk_items /= 2;
        } else {
            let chunkshape: Vec<i32> = chunk.iter().map(|&c| c as i32).collect();
            let blockshape: Vec<i32> = block.iter().map(|&b| b as i32).collect();
            // The shapes obey every rule by construction; the library's own check says so.
            Geometry::new(itemsize, shape, &chunkshape, &blockshape)?;
            return Ok(Partitions { chunkshape, blockshape });
        }
    }
    invalid!("shape {shape:?} is too large: it needs chunks over {} bytes", max_chunk * itemsize as u64)
}

/// The chunk and block shapes of `access` for targets in items, inside
/// `bound` (the shape, with empty axes unbounded), evened out over `shape`.
fn shapes(access: Access, bound: &[i64], shape: &[i64], chunk_items: u64, block_items: u64) -> (Vec<i64>, Vec<i64>) {
    let all = vec![true; bound.len()];
    // The first axis of 3 or more is a stack ([`Access::Balanced`]).
    let stacked = access == Access::Balanced && bound.len() >= 3;
    let chunk = match access {
        _ if stacked => stack(bound, chunk_items),
        Access::Balanced | Access::SmallReads => balanced(bound, &all, chunk_items),
        Access::Scans => c_order(bound, chunk_items),
        Access::Planes { axis } => across(bound, axis, chunk_items),
    };
    let chunk = even(&chunk, shape);
    let thin = |axis: usize| {
        let mut free = all.clone();
        free[axis] = false;
        balanced(&chunk, &free, block_items)
    };
    let block = match access {
        _ if stacked => thin(0),
        Access::Balanced | Access::SmallReads => balanced(&chunk, &all, block_items),
        Access::Scans => c_order(&chunk, block_items),
        Access::Planes { axis } => thin(axis),
    };
    let block = even(&block, &chunk);
    (chunk, block)
}

/// A near-cubic box of about `target` items inside `bound` (every entry at
/// least 1), extending only along the axes marked `free` (1 on the others):
/// axes shorter than the cube's side are taken whole, the rest share what
/// is left evenly.
fn balanced(bound: &[i64], free: &[bool], target: u64) -> Vec<i64> {
    let mut out = vec![1i64; bound.len()];
    let mut open: Vec<usize> = (0..bound.len()).filter(|&i| free[i] && bound[i] > 1).collect();
    let mut budget = target.max(1) as f64;
    while !open.is_empty() {
        let side = budget.powf(1.0 / open.len() as f64);
        let (whole, rest): (Vec<usize>, Vec<usize>) = open.iter().partition(|&&i| bound[i] as f64 <= side);
        if whole.is_empty() {
            // Round, but keep the product at most the budget (up to rounding of the root).
            let s = (side + 1e-9).floor().max(1.0) as i64;
            for &i in &rest {
                out[i] = s.min(bound[i]);
            }
            // Floors leave part of the budget: add 1 to axes while it fits.
            let mut used: f64 = rest.iter().map(|&i| out[i] as f64).product();
            for &i in rest.iter().rev() {
                let grown = used / out[i] as f64 * (out[i] + 1) as f64;
                if out[i] < bound[i] && grown <= budget + 1e-9 {
                    used = grown;
                    out[i] += 1;
                }
            }
            break;
        }
        for &i in &whole {
            out[i] = bound[i];
            budget /= bound[i] as f64;
        }
        open = rest;
    }
    out
}

/// A box of about `target` items inside `bound` (3 or more axes) for an
/// array that is a stack along its first axis: near-square across the
/// other axes, and `t` items thick along the first, where `t` makes a
/// plane across the stack cross as many chunks as a line along it does
/// (`shape[0] / t = face / (target / t)`, so `t = sqrt(shape[0] * target /
/// face)`, `face` the product of the other axes). A face smaller than the
/// box is taken whole, and the rest of the budget goes to the thickness.
/// A stack that may grow from empty (an unbounded first axis) is as thick
/// as a cube of `target` items is wide.
fn stack(bound: &[i64], target: u64) -> Vec<i64> {
    let n0 = bound[0].max(1) as f64;
    let face: f64 = bound[1..].iter().map(|&b| b.max(1) as f64).product();
    let ideal = if bound[0] >= i64::from(i32::MAX) {
        (target as f64).powf(1.0 / bound.len() as f64)
    } else {
        (n0 * target as f64 / face).sqrt()
    };
    let t = ideal.round().clamp(1.0, n0.min(target as f64)) as i64;
    let mut free = vec![true; bound.len()];
    free[0] = false;
    let mut out = balanced(bound, &free, (target / t as u64).max(1));
    let across: u64 = out[1..].iter().map(|&x| x as u64).product();
    out[0] = ((target / across.max(1)).max(1) as i64).min(bound[0].max(1)).max(t.min(bound[0].max(1)));
    out
}

/// A box of about `target` items inside `bound` that is contiguous in C
/// order: the last axes whole, then part of one axis, 1 on the leading ones.
fn c_order(bound: &[i64], target: u64) -> Vec<i64> {
    let mut out = vec![1i64; bound.len()];
    let mut budget = target.max(1);
    for i in (0..bound.len()).rev() {
        let b = bound[i].max(1) as u64;
        out[i] = b.min(budget) as i64;
        budget /= out[i] as u64;
    }
    out
}

/// A box of about `target` items inside `bound`, as wide as possible across
/// `axis` (near-cubic there), then as thick along `axis` as the rest of the
/// budget allows.
fn across(bound: &[i64], axis: usize, target: u64) -> Vec<i64> {
    let mut free = vec![true; bound.len()];
    free[axis] = false;
    let mut out = balanced(bound, &free, target);
    let face: u64 = out.iter().map(|&x| x as u64).product();
    out[axis] = ((target / face.max(1)).max(1) as i64).min(bound[axis].max(1));
    out
}

/// `part` evened out over `whole`: on every axis where `whole` is not empty,
/// `n` parts of near-equal length (`ceil(whole / n)`), so the last part is
/// not a sliver and padding is at most `n - 1`. `n` is `ceil(whole / part)`
/// or `floor(whole / part)`, whichever gives a length nearer `part` (by
/// ratio). Entries stay in `1..=whole`.
fn even(part: &[i64], whole: &[i64]) -> Vec<i64> {
    part.iter()
        .zip(whole)
        .map(|(&p, &w)| {
            if w <= 0 {
                return p;
            }
            let up = div_ceil(w, div_ceil(w, p));
            let down = div_ceil(w, (w / p).max(1));
            if (down as f64 / p as f64) < (p as f64 / up as f64) {
                down
            } else {
                up
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(itemsize: usize, shape: &[i32]) -> u64 {
        shape.iter().map(|&x| x as u64).product::<u64>() * itemsize as u64
    }

    /// A small xorshift generator: deterministic shapes without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn hints(access: Access) -> PartitionHints {
        PartitionHints { access, threads: Some(2), ..Default::default() }
    }

    #[test]
    fn valid_for_many_random_shapes() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..4000 {
            let ndim = rng.below(9) as usize;
            let itemsize = 1 + rng.below(255) as usize;
            let shape: Vec<i64> = (0..ndim)
                .map(|_| match rng.below(10) {
                    0 => 0,
                    1 => 1,
                    2 => 1 + rng.below(1 << 20) as i64,
                    3 => rng.below(1 << 40) as i64,
                    _ => 1 + rng.below(300) as i64,
                })
                .collect();
            let access = match rng.below(4) {
                0 => Access::Balanced,
                1 => Access::SmallReads,
                2 => Access::Scans,
                _ if ndim > 0 => Access::Planes { axis: rng.below(ndim as u64) as usize },
                _ => Access::Balanced,
            };
            let size = |rng: &mut Rng| match rng.below(3) {
                0 => None,
                1 => Some(1 + rng.below(1 << 12) as usize),
                _ => Some(1 + rng.below(1 << 34) as usize),
            };
            let h = PartitionHints {
                access,
                chunk_bytes: size(&mut rng),
                block_bytes: size(&mut rng),
                threads: Some(1 + rng.below(64) as usize),
            };
            let r = propose_partitions(itemsize, &shape, &h);
            let total = shape.iter().try_fold(itemsize as i64, |a, &s| a.checked_mul(s));
            match r {
                Ok(p) => {
                    assert_eq!(p.chunkshape.len(), ndim);
                    let g = Geometry::new(itemsize, &shape, &p.chunkshape, &p.blockshape)
                        .unwrap_or_else(|e| panic!("case {case}: {itemsize} {shape:?} {h:?} -> {p:?}: {e}"));
                    for i in 0..ndim {
                        assert!(1 <= p.blockshape[i] && p.blockshape[i] <= p.chunkshape[i], "case {case}");
                        assert!(shape[i] == 0 || i64::from(p.chunkshape[i]) <= shape[i], "case {case}");
                    }
                    assert!(g.nchunks() <= MAX_CHUNKS);
                }
                Err(e) => {
                    // Only arrays too large for any partition are refused.
                    assert!(e.message().contains("too large"), "case {case}: {itemsize} {shape:?} {h:?}: {e}");
                    let huge = total.map_or(true, |t| t / MAX_CHUNKS > MAX_CHUNK_BYTES / 4);
                    assert!(huge, "case {case}: {itemsize} {shape:?} {h:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn sizes_follow_the_targets() {
        for access in [Access::Balanced, Access::SmallReads, Access::Scans, Access::Planes { axis: 1 }] {
            let p = propose_partitions(8, &[300, 745, 400], &hints(access)).unwrap();
            let (c, b) = access.default_sizes();
            let (cb, bb) = (bytes(8, &p.chunkshape), bytes(8, &p.blockshape));
            // Evening out and rounding keep sizes within a factor of 2 of the targets.
            assert!(cb as usize <= c * 2 && cb as usize >= c / 2, "{access:?}: chunk {cb} for {c}");
            assert!(bb as usize <= b * 2 && bb as usize >= b / 2, "{access:?}: block {bb} for {b}");
        }
        let h = PartitionHints { chunk_bytes: Some(1 << 20), block_bytes: Some(8 << 10), ..hints(Access::Balanced) };
        let p = propose_partitions(4, &[1000, 1000], &h).unwrap();
        assert_eq!(p.chunkshape, vec![500, 500]);
        assert_eq!(p.blockshape, vec![46, 46]);
    }

    #[test]
    fn each_pattern_does_what_it_says() {
        let shape = [300, 745, 400];
        let bal = propose_partitions(8, &shape, &hints(Access::Balanced)).unwrap();
        let small = propose_partitions(8, &shape, &hints(Access::SmallReads)).unwrap();
        let scans = propose_partitions(8, &shape, &hints(Access::Scans)).unwrap();
        let near_cubic = |s: &[i32]| {
            let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
            assert!(*hi as f64 <= *lo as f64 * 1.25, "{s:?} is not near-cubic");
        };
        // Balanced, 3 axes or more: a stack along axis 0. Blocks one item
        // thin along it, near-square across; chunks thinner along it than
        // across, as many crossing a plane as lining a line along axis 0.
        assert_eq!(bal.blockshape[0], 1, "{bal:?}");
        near_cubic(&bal.blockshape[1..]);
        near_cubic(&bal.chunkshape[1..]);
        let g = Geometry::new(8, &shape, &bal.chunkshape, &bal.blockshape).unwrap().chunk_grid();
        let (plane, line) = (g[1] * g[2], g[0]);
        assert!(plane <= 2 * line && line <= 2 * plane, "{bal:?}: {plane} chunks cross a plane, {line} a line");
        // Balanced, 1 or 2 axes: near-cubic chunks and blocks.
        let flat = propose_partitions(8, &[3000, 2000], &hints(Access::Balanced)).unwrap();
        near_cubic(&flat.chunkshape);
        near_cubic(&flat.blockshape);
        // SmallReads: near-cubic blocks, no larger than Balanced's; Scans larger.
        near_cubic(&small.blockshape);
        assert!(bytes(8, &small.blockshape) <= 2 * bytes(8, &bal.blockshape));
        assert!(bytes(8, &small.chunkshape) < bytes(8, &bal.chunkshape));
        assert!(bytes(8, &scans.blockshape) > bytes(8, &bal.blockshape));
        assert!(bytes(8, &scans.chunkshape) > bytes(8, &bal.chunkshape));
        // Scans: the last axis whole in blocks and chunks (contiguous runs).
        assert_eq!(scans.blockshape[2], 400);
        assert_eq!(scans.chunkshape[2], 400);
        assert_eq!(scans.chunkshape[1], 745);
        for axis in 0..3 {
            let p = propose_partitions(8, &shape, &hints(Access::Planes { axis })).unwrap();
            assert_eq!(p.blockshape[axis], 1, "axis {axis}: {p:?}");
            for i in (0..3).filter(|&i| i != axis) {
                assert!(p.blockshape[i] >= 64, "axis {axis}: {p:?}");
                assert!(p.chunkshape[i] >= p.chunkshape[axis], "axis {axis}: {p:?}");
            }
        }
    }

    #[test]
    fn stacks_of_common_shapes() {
        let p = |itemsize: usize, shape: &[i64]| {
            let p = propose_partitions(itemsize, shape, &hints(Access::Balanced)).unwrap();
            (p.chunkshape, p.blockshape)
        };
        // A year of hourly global fields, a microscopy stack, a video.
        let (c, b) = p(4, &[240, 721, 1440]);
        assert_eq!(b[0], 1);
        assert!((8..=16).contains(&c[0]), "{c:?}");
        let (c, b) = p(2, &[128, 1024, 1024]);
        assert_eq!(b[0], 1);
        assert!((8..=16).contains(&c[0]), "{c:?}");
        let (c, b) = p(1, &[1000, 1080, 1920, 3]);
        assert_eq!(b[0], 1);
        assert!(c[0] > 1, "{c:?}");
        // A stack that grows from empty: chunks as thick as a cube is wide.
        let (c, b) = p(4, &[0, 721, 1440]);
        assert_eq!(b[0], 1);
        assert!((40..=120).contains(&c[0]), "{c:?}");
        // A face smaller than a chunk: the thickness takes the budget.
        let (c, _) = p(8, &[1 << 20, 2, 3]);
        let items: i64 = c.iter().map(|&x| i64::from(x)).product();
        assert!(items >= 100_000, "{c:?}");
    }

    #[test]
    fn enough_chunks_for_the_threads() {
        // 8 MB: one chunk of the Scans target, but 4 threads get 4 chunks.
        let h = PartitionHints { threads: Some(4), ..hints(Access::Scans) };
        let p = propose_partitions(8, &[1000, 1000], &h).unwrap();
        let g = Geometry::new(8, &[1000, 1000], &p.chunkshape, &p.blockshape).unwrap();
        assert_eq!(g.nchunks(), 4);
        let h = PartitionHints { threads: Some(1), ..hints(Access::Scans) };
        let p = propose_partitions(8, &[1000, 1000], &h).unwrap();
        assert_eq!(p.chunkshape, vec![1000, 1000]);
        // Never below a block, however many threads.
        let h = PartitionHints { threads: Some(1000), ..hints(Access::Balanced) };
        let p = propose_partitions(8, &[1000, 1000], &h).unwrap();
        assert!(bytes(8, &p.chunkshape) >= (Access::Balanced.default_sizes().1 / 2) as u64);
    }

    #[test]
    fn edge_shapes() {
        let h = hints(Access::Balanced);
        assert_eq!(propose_partitions(8, &[], &h).unwrap(), Partitions { chunkshape: vec![], blockshape: vec![] });
        // An empty axis gets a real chunk length (the array can grow along it).
        let p = propose_partitions(8, &[0, 1000], &h).unwrap();
        assert!(p.chunkshape[0] > 1 && p.chunkshape[1] <= 1000 && p.blockshape[0] >= 1);
        let p = propose_partitions(1, &[1, 1, 1, 1, 1, 1, 1, 1], &h).unwrap();
        assert_eq!(p.chunkshape, vec![1; 8]);
        // Items larger than the block target: one item per block.
        let hb = PartitionHints { block_bytes: Some(10), chunk_bytes: Some(100), ..h };
        let p = propose_partitions(255, &[7, 9], &hb).unwrap();
        assert_eq!(p.blockshape, vec![1, 1]);
        assert_eq!(p.chunkshape, vec![1, 1]);
        // A huge array gets larger chunks than asked for, to stay under the chunk count limit.
        let p = propose_partitions(1, &[1 << 45], &hb).unwrap();
        assert!(i64::from(p.chunkshape[0]) * MAX_CHUNKS >= 1 << 45);
    }

    #[test]
    fn bad_input_is_refused() {
        let h = hints(Access::Balanced);
        let msg = |r: Result<Partitions>| r.unwrap_err().message();
        assert!(msg(propose_partitions(0, &[10], &h)).contains("itemsize 0 is not in 1..="));
        assert!(msg(propose_partitions(MAX_ITEMSIZE + 1, &[10], &h)).contains("is not in 1..="));
        assert!(propose_partitions(400, &[10], &h).is_ok());
        assert!(msg(propose_partitions(8, &[1; 9], &h)).contains("ndim 9"));
        assert!(msg(propose_partitions(8, &[10, -1], &h)).contains("shape[1] = -1 is negative"));
        assert!(msg(propose_partitions(8, &[10, 10], &hints(Access::Planes { axis: 2 }))).contains("axis 2"));
        let z = PartitionHints { block_bytes: Some(0), ..h };
        assert!(msg(propose_partitions(8, &[10], &z)).contains("at least 1 byte"));
        let t = PartitionHints { threads: Some(0), ..h };
        assert!(msg(propose_partitions(8, &[10], &t)).contains("thread count"));
        assert!(msg(propose_partitions(8, &[i64::MAX / 4, 5], &h)).contains("overflows 64 bits"));
        assert!(msg(propose_partitions(255, &[1 << 54], &h)).contains("too large"));
    }

    #[test]
    fn access_names() {
        assert_eq!(Access::by_name("balanced"), Some(Access::Balanced));
        assert_eq!(Access::by_name("small-reads"), Some(Access::SmallReads));
        assert_eq!(Access::by_name("scans"), Some(Access::Scans));
        assert_eq!(Access::by_name("planes"), Some(Access::Planes { axis: 0 }));
        assert_eq!(Access::by_name("planes:2"), Some(Access::Planes { axis: 2 }));
        assert_eq!(Access::by_name("planes:x"), None);
        assert_eq!(Access::by_name("rows"), None);
    }
}
