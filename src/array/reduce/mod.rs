//! Reductions where the data is: [`Array::reduce`] computes `sum`, `mean`,
//! `min`, `max`, `std`, `var`, `any`, `all` and their NaN-aware variants
//! along any axes, chunk by chunk in parallel, holding a few chunks and the
//! result in memory, never the whole array.
//!
//! Each task decompresses one chunk into a C-order box (its worker's own
//! buffers) and folds it into a partial result for the output items that
//! chunk contributes to; partials are merged into the result in chunk order
//! after each batch of tasks, so a result does not depend on the thread
//! count or on which task finished first. Variances are merged with Chan's
//! parallel algorithm from (count, mean, sum of squared deviations), each
//! chunk's part computed in two passes over the box: never as the
//! difference of sums of squares.
//!
//! Result types and corner cases follow NumPy: sums of booleans and signed
//! integers are `int64` and of unsigned ones `uint64` (wrapping around);
//! means, variances and deviations of integers are `float64`, of floats
//! their own type (accumulated in `float64`); `min`/`max` keep the type and
//! propagate NaN, `nanmin`/`nanmax` skip it (an all-NaN slice gives NaN);
//! `any`/`all` give booleans; an empty `sum` is 0 and an empty `mean` NaN;
//! `min`/`max` over no items are an error.

use super::Array;
use crate::buffer;
use crate::context::Worker;
use crate::engine::{self, read_part_box, run_tasks, Split};
use crate::error::{invalid, Error, Result};
use crate::geometry::{ChunkPart, MAX_DIM};

mod numbers;
use numbers::{
    f64_to_f16, items, parse_dtype, row_sum, Dom, Num, RBool, Read, Real, C64, RC16, RC8, RF16, RF32, RF64, RI16, RI32,
    RI64, RI8, RU16, RU32, RU64, RU8,
};

/// A reduction [`Array::reduce`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// Sum (`numpy.sum`).
    Sum = 0,
    /// Arithmetic mean (`numpy.mean`).
    Mean = 1,
    /// Minimum; NaN if any item is NaN (`numpy.min`).
    Min = 2,
    /// Maximum; NaN if any item is NaN (`numpy.max`).
    Max = 3,
    /// Standard deviation with `ddof` delta degrees of freedom (`numpy.std`).
    Std = 4,
    /// Variance with `ddof` delta degrees of freedom (`numpy.var`).
    Var = 5,
    /// Whether any item is non-zero (`numpy.any`).
    Any = 6,
    /// Whether every item is non-zero (`numpy.all`).
    All = 7,
    /// Sum, NaN counting as zero (`numpy.nansum`).
    NanSum = 8,
    /// Mean of the items that are not NaN (`numpy.nanmean`).
    NanMean = 9,
    /// Minimum of the items that are not NaN (`numpy.nanmin`).
    NanMin = 10,
    /// Maximum of the items that are not NaN (`numpy.nanmax`).
    NanMax = 11,
    /// Standard deviation of the items that are not NaN (`numpy.nanstd`).
    NanStd = 12,
    /// Variance of the items that are not NaN (`numpy.nanvar`).
    NanVar = 13,
}

impl Reduce {
    /// Every reduction, in the order of their numbers.
    #[must_use]
    pub fn all() -> [Reduce; 14] {
        [
            Reduce::Sum,
            Reduce::Mean,
            Reduce::Min,
            Reduce::Max,
            Reduce::Std,
            Reduce::Var,
            Reduce::Any,
            Reduce::All,
            Reduce::NanSum,
            Reduce::NanMean,
            Reduce::NanMin,
            Reduce::NanMax,
            Reduce::NanStd,
            Reduce::NanVar,
        ]
    }

    /// NumPy's name for it (`"sum"`, `"nanmean"`…).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Mean => "mean",
            Reduce::Min => "min",
            Reduce::Max => "max",
            Reduce::Std => "std",
            Reduce::Var => "var",
            Reduce::Any => "any",
            Reduce::All => "all",
            Reduce::NanSum => "nansum",
            Reduce::NanMean => "nanmean",
            Reduce::NanMin => "nanmin",
            Reduce::NanMax => "nanmax",
            Reduce::NanStd => "nanstd",
            Reduce::NanVar => "nanvar",
        }
    }

    /// The reduction NumPy calls `name`, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Reduce> {
        Reduce::all().into_iter().find(|r| r.name() == name)
    }

    /// The reduction numbered `n` (its C constant), if any.
    #[must_use]
    pub fn from_number(n: i64) -> Option<Reduce> {
        usize::try_from(n).ok().and_then(|i| Reduce::all().get(i).copied())
    }
}

/// Options of [`Array::reduce`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReduceOptions {
    /// Delta degrees of freedom of `std`/`var` (and their NaN variants):
    /// the divisor is `n - ddof`. Ignored by the other reductions.
    pub ddof: f64,
    /// Keep the reduced axes in the result's shape, with length 1.
    pub keepdims: bool,
    /// At most this many bytes for the work: decompressed chunks, partial
    /// results and the result. Fewer chunks are read at once to stay under
    /// it; `None` reads as many as the context has threads.
    pub max_memory: Option<usize>,
}

/// The result of [`Array::reduce`]: a C-order array in native byte order.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduced {
    /// The shape: the array's without the reduced axes (or with length 1
    /// there, with [`ReduceOptions::keepdims`]).
    pub shape: Vec<i64>,
    /// NumPy's dtype string of the items (`"<f8"`, `"<i8"`, `"|b1"`…).
    pub dtype: String,
    /// The items.
    pub data: Vec<u8>,
}

/// How one chunk's box maps onto the output: its axes with runs of reduced
/// or kept axes merged (and axes of length 1 dropped), and where each kept
/// run lands in the chunk's partial result.
struct Walk {
    /// Length and whether reduced, per merged axis.
    dims: Vec<(usize, bool)>,
    /// Stride in the partial result per merged axis (0 for reduced ones).
    out_strides: Vec<usize>,
    /// Items of the partial result.
    out_len: usize,
    itemsize: usize,
}

impl Walk {
    fn new(shape: &[i64], reduced: &[bool], itemsize: usize) -> Walk {
        let mut dims: Vec<(usize, bool)> = Vec::new();
        for (&len, &red) in shape.iter().zip(reduced) {
            let len = usize::try_from(len).unwrap_or(0);
            if len == 1 {
                continue;
            }
            match dims.last_mut() {
                Some((l, r)) if *r == red => *l *= len,
                _ => dims.push((len, red)),
            }
        }
        let mut out_strides = vec![0; dims.len()];
        let mut s = 1;
        for (i, &(len, red)) in dims.iter().enumerate().rev() {
            if !red {
                out_strides[i] = s;
                s *= len;
            }
        }
        Walk { dims, out_strides, out_len: s, itemsize }
    }

    /// Fold every item into its output's partial with `step`: a row along
    /// the reduced last axis into one partial, other rows item by item.
    fn fold_items<R: Read, S: Copy>(&self, data: &[u8], part: &mut [S], step: impl Fn(S, R::D) -> S) {
        self.rows(
            data,
            part,
            |part, o, row| part[o] = items::<R>(row).fold(part[o], &step),
            |part, o, row| {
                for (s, x) in part[o..].iter_mut().zip(items::<R>(row)) {
                    *s = step(*s, x);
                }
            },
        );
    }

    /// Visit the box's rows: `reduce(o, row)` for a row whose items all go
    /// to output item `o`, `map(o, row)` for one whose `j`-th item goes to
    /// output item `o + j`.
    fn rows<S>(
        &self,
        data: &[u8],
        part: &mut [S],
        mut reduce: impl FnMut(&mut [S], usize, &[u8]),
        mut map: impl FnMut(&mut [S], usize, &[u8]),
    ) {
        let Some(&(row_len, row_red)) = self.dims.last() else {
            reduce(part, 0, &data[..self.itemsize]);
            return;
        };
        let row_bytes = row_len * self.itemsize;
        let outer = &self.dims[..self.dims.len() - 1];
        let mut idx = vec![0usize; outer.len()];
        let mut off = 0usize;
        let mut o = 0usize;
        loop {
            let row = &data[off..off + row_bytes];
            if row_red {
                reduce(part, o, row);
            } else {
                map(part, o, row);
            }
            off += row_bytes;
            // Next outer index (odometer), updating the output offset.
            let mut i = outer.len();
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                idx[i] += 1;
                o += self.out_strides[i];
                if idx[i] < outer[i].0 {
                    break;
                }
                o -= self.out_strides[i] * idx[i];
                idx[i] = 0;
            }
        }
    }
}

/// Per-element states of an operation: how a chunk fills its partial, and
/// how partials merge.
trait Fold: Sync {
    type S: Copy + Send + Sync;
    fn init(&self) -> Self::S;
    /// Fold the box `data` (shaped as `walk` says) into `part` (initialised).
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [Self::S]) -> Result<()>;
    fn merge(&self, into: &mut Self::S, other: &Self::S);
}

struct SumFold<R, const SKIP: bool>(std::marker::PhantomData<R>);
impl<R: Read, const SKIP: bool> Fold for SumFold<R, SKIP>
where
    R::D: Dom<M = R::D>,
{
    type S = R::D;
    fn init(&self) -> R::D {
        R::D::ZERO
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [R::D]) -> Result<()> {
        walk.rows(
            data,
            part,
            |part, o, row| part[o] = part[o].add(row_sum::<R, SKIP>(row).0),
            |part, o, row| {
                for (s, x) in part[o..].iter_mut().zip(items::<R>(row)) {
                    if !(SKIP && x.is_nan()) {
                        *s = s.add(x);
                    }
                }
            },
        );
        Ok(())
    }
    fn merge(&self, into: &mut R::D, other: &R::D) {
        *into = into.add(*other);
    }
}

/// Integer sums: wrapping in the item's 64-bit type, exact.
struct IntSumFold<R>(std::marker::PhantomData<R>);
impl<R: Read> Fold for IntSumFold<R> {
    type S = R::D;
    fn init(&self) -> R::D {
        R::D::ZERO
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [R::D]) -> Result<()> {
        walk.fold_items::<R, _>(data, part, Dom::add);
        Ok(())
    }
    fn merge(&self, into: &mut R::D, other: &R::D) {
        *into = into.add(*other);
    }
}

/// Sum (in the mean's type) and count: for means.
struct MeanFold<R, const SKIP: bool>(std::marker::PhantomData<R>);
impl<R: Read, const SKIP: bool> Fold for MeanFold<R, SKIP> {
    type S = (<R::D as Dom>::M, u64);
    fn init(&self) -> Self::S {
        (Dom::ZERO, 0)
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [Self::S]) -> Result<()> {
        walk.rows(
            data,
            part,
            |part, o, row| {
                let (s, n) = row_sum::<R, SKIP>(row);
                part[o] = (part[o].0.add(s), part[o].1 + n);
            },
            |part, o, row| {
                for (s, x) in part[o..].iter_mut().zip(items::<R>(row)) {
                    if !(SKIP && x.is_nan()) {
                        *s = (s.0.add(x.to_m()), s.1 + 1);
                    }
                }
            },
        );
        Ok(())
    }
    fn merge(&self, into: &mut Self::S, other: &Self::S) {
        *into = (into.0.add(other.0), into.1 + other.1);
    }
}

/// Count, mean and sum of squared deviations from it: for variances.
#[derive(Clone, Copy, Debug, Default)]
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    /// Chan, Golub and LeVeque's merge of two parts' moments.
    fn merge(&mut self, b: &Moments) {
        if b.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *b;
            return;
        }
        let n = self.n + b.n;
        let (na, nb, nf) = (self.n as f64, b.n as f64, n as f64);
        let delta = b.mean - self.mean;
        self.mean += delta * nb / nf;
        self.m2 += b.m2 + delta * delta * na * nb / nf;
        self.n = n;
    }
}

struct VarFold<R, const SKIP: bool>(std::marker::PhantomData<R>);
impl<R: Read, const SKIP: bool> Fold for VarFold<R, SKIP>
where
    R::D: Real,
{
    type S = Moments;
    fn init(&self) -> Moments {
        Moments::default()
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [Moments]) -> Result<()> {
        // Two passes over the chunk, in memory: the means, then the squared
        // deviations from them.
        let mut sums = Vec::new();
        buffer::reserve(&mut sums, part.len(), || format!("{} partial means", part.len()))?;
        sums.resize(part.len(), (0.0f64, 0u64));
        MeanFold::<R, SKIP>(std::marker::PhantomData).chunk(walk, data, &mut sums)?;
        for (m, &(s, n)) in part.iter_mut().zip(&sums) {
            *m = Moments { n, mean: if n == 0 { 0.0 } else { s / n as f64 }, m2: 0.0 };
        }
        let dev = |x: R::D, mean: f64| {
            let d = x.to_f64() - mean;
            d * d
        };
        walk.rows(
            data,
            part,
            |part, o, row| {
                let mean = part[o].mean;
                let mut acc = 0.0;
                for x in items::<R>(row) {
                    if !(SKIP && x.is_nan()) {
                        acc += dev(x, mean);
                    }
                }
                part[o].m2 += acc;
            },
            |part, o, row| {
                for (m, x) in part[o..].iter_mut().zip(items::<R>(row)) {
                    if !(SKIP && x.is_nan()) {
                        m.m2 += dev(x, m.mean);
                    }
                }
            },
        );
        Ok(())
    }
    fn merge(&self, into: &mut Moments, other: &Moments) {
        into.merge(other);
    }
}

/// Minimum (`MAX` false) or maximum; NaN propagates unless `SKIP`, where an
/// all-NaN slice stays NaN (the initial state for floats).
struct ExtremeFold<R, const MAX: bool, const SKIP: bool>(std::marker::PhantomData<R>);
impl<R: Read, const MAX: bool, const SKIP: bool> ExtremeFold<R, MAX, SKIP>
where
    R::D: Real,
{
    #[inline(always)]
    fn step(s: R::D, x: R::D) -> R::D {
        let better = if MAX { x > s } else { x < s };
        if SKIP {
            // `s` is NaN only before the first non-NaN item.
            if better || s.is_nan() {
                x
            } else {
                s
            }
        } else if better || (x.is_nan() && !s.is_nan()) {
            x
        } else {
            s
        }
    }
}
impl<R: Read, const MAX: bool, const SKIP: bool> Fold for ExtremeFold<R, MAX, SKIP>
where
    R::D: Real,
{
    type S = R::D;
    fn init(&self) -> R::D {
        match (SKIP.then(R::D::nan).flatten(), MAX) {
            (Some(nan), _) => nan,
            (None, true) => R::D::MAX_INIT,
            (None, false) => R::D::MIN_INIT,
        }
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [R::D]) -> Result<()> {
        walk.fold_items::<R, _>(data, part, Self::step);
        Ok(())
    }
    fn merge(&self, into: &mut R::D, other: &R::D) {
        *into = Self::step(*into, *other);
    }
}

/// `any` (`ALL` false) or `all`.
struct TruthFold<R, const ALL: bool>(std::marker::PhantomData<R>);
impl<R: Read, const ALL: bool> Fold for TruthFold<R, ALL> {
    type S = bool;
    fn init(&self) -> bool {
        ALL
    }
    fn chunk(&self, walk: &Walk, data: &[u8], part: &mut [bool]) -> Result<()> {
        walk.rows(
            data,
            part,
            |part, o, row| {
                if part[o] == ALL {
                    part[o] = if ALL { items::<R>(row).all(Dom::nonzero) } else { items::<R>(row).any(Dom::nonzero) };
                }
            },
            |part, o, row| {
                for (s, x) in part[o..].iter_mut().zip(items::<R>(row)) {
                    *s = if ALL { *s && x.nonzero() } else { *s || x.nonzero() };
                }
            },
        );
        Ok(())
    }
    fn merge(&self, into: &mut bool, other: &bool) {
        *into = if ALL { *into && *other } else { *into || *other };
    }
}

/// The reduction set up: which axes, the output's shape, the geometry.
struct Job<'a> {
    array: &'a Array,
    reduced: [bool; MAX_DIM],
    /// The output's shape (kept axes only).
    out_shape: Vec<i64>,
    out_len: usize,
    swap: Option<usize>,
    max_memory: Option<usize>,
}

impl Job<'_> {
    /// Run `fold` over every chunk; the merged state of every output item.
    fn run<F: Fold>(&self, fold: &F) -> Result<Vec<F::S>> {
        let a = self.array;
        let geom = &a.geom;
        let state = std::mem::size_of::<F::S>();
        let mut out = Vec::new();
        buffer::reserve(&mut out, self.out_len, || format!("a result of {} items", self.out_len))?;
        out.resize(self.out_len, fold.init());
        let region = geom.full_region();
        let parts = engine::plan(geom, &region)?;
        if parts.is_empty() {
            return Ok(out);
        }
        // Every chunk from one state of the array.
        let _section = a.store.read_section()?;
        let n = geom.ndim();
        // A chunk's partial result: its kept axes.
        let chunkshape = geom.chunkshape();
        let part_len: usize = (0..n).filter(|&i| !self.reduced[i]).map(|i| chunkshape[i].max(1) as usize).product();
        let per_lane = 2 * geom.chunk_nbytes() + 3 * part_len * state;
        let result_bytes = self.out_len * (state + 16);
        let blocks = usize::try_from(geom.nblocks()).unwrap_or(usize::MAX);
        let mut split = Split::of(&a.ctx, parts.len(), blocks);
        if let Some(max) = self.max_memory {
            let lanes = max.saturating_sub(result_bytes) / per_lane.max(1);
            if lanes == 0 {
                invalid!(
                    "max_memory of {max} bytes cannot hold the result ({result_bytes} bytes) and one chunk's work ({per_lane} bytes)"
                );
            }
            if lanes < split.lanes {
                split = Split { lanes, blosc: (a.ctx.nthreads() / lanes).max(1) };
            }
        }
        let itemsize = geom.itemsize();
        let reduced = &self.reduced;
        let swap = self.swap;
        let work = |w: &mut Worker, part: &ChunkPart| -> Result<Vec<F::S>> {
            read_part_box(w, &a.store, geom, part, split.blosc)?;
            let data = &mut w.bufs.stage;
            if let Some(h) = swap {
                for c in data.chunks_exact_mut(h) {
                    c.reverse();
                }
            }
            let shape: Vec<i64> = (0..n).map(|i| part.stop[i] - part.start[i]).collect();
            let walk = Walk::new(&shape, &reduced[..n], itemsize);
            let mut p = Vec::new();
            buffer::reserve(&mut p, walk.out_len, || format!("a partial result of {} items", walk.out_len))?;
            p.resize(walk.out_len, fold.init());
            fold.chunk(&walk, data, &mut p)?;
            Ok(p)
        };
        // Batches of a few tasks per lane, merged in chunk order.
        let batch = split.lanes * 2;
        for tasks in parts.chunks(batch.max(1)) {
            let partials = run_tasks(&a.ctx, tasks, split, work)?;
            for (part, p) in tasks.iter().zip(partials) {
                self.merge_part(fold, &mut out, part, &p);
            }
        }
        Ok(out)
    }

    /// Merge the partial result `p` of chunk `part` into `out`.
    fn merge_part<F: Fold>(&self, fold: &F, out: &mut [F::S], part: &ChunkPart, p: &[F::S]) {
        let n = self.array.geom.ndim();
        let kept: Vec<usize> = (0..n).filter(|&i| !self.reduced[i]).collect();
        let Some((&last, outer)) = kept.split_last() else {
            fold.merge(&mut out[0], &p[0]);
            return;
        };
        let gstrides = crate::geometry::c_strides(&self.out_shape);
        let pshape: Vec<i64> = kept.iter().map(|&i| part.stop[i] - part.start[i]).collect();
        let row = pshape[pshape.len() - 1] as usize;
        let lo: Vec<i64> = vec![0; outer.len()];
        let mut src = 0usize;
        let origin = |i: usize| part.origin[i] + part.start[i];
        crate::geometry::for_each_index(&lo, &pshape[..outer.len()], |idx| {
            let mut dst = origin(last) as usize;
            for (k, (&ax, &x)) in outer.iter().zip(idx).enumerate() {
                dst += ((origin(ax) + x) * gstrides[k]) as usize;
            }
            for (d, s) in out[dst..dst + row].iter_mut().zip(&p[src..src + row]) {
                fold.merge(d, s);
            }
            src += row;
        });
    }
}

/// The bytes of a result of `num` items.
struct Out {
    num: Num,
    data: Vec<u8>,
}

impl Out {
    fn new(num: Num, len: usize) -> Result<Out> {
        let size = match num {
            Num::Bool => 1,
            Num::Int(s) | Num::UInt(s) | Num::Float(s) | Num::Complex(s) => s,
        };
        let mut data = Vec::new();
        let bytes = len.checked_mul(size).ok_or_else(|| Error::InvalidArgument("the result is too large".into()))?;
        buffer::reserve(&mut data, bytes, || format!("a result of {bytes} bytes"))?;
        Ok(Out { num, data })
    }
    fn int(&mut self, v: i64) {
        match self.num {
            Num::Int(1) => self.data.extend((v as i8).to_ne_bytes()),
            Num::Int(2) => self.data.extend((v as i16).to_ne_bytes()),
            Num::Int(4) => self.data.extend((v as i32).to_ne_bytes()),
            _ => self.data.extend(v.to_ne_bytes()),
        }
    }
    fn uint(&mut self, v: u64) {
        match self.num {
            Num::Bool => self.data.push(u8::from(v != 0)),
            Num::UInt(1) => self.data.push(v as u8),
            Num::UInt(2) => self.data.extend((v as u16).to_ne_bytes()),
            Num::UInt(4) => self.data.extend((v as u32).to_ne_bytes()),
            _ => self.data.extend(v.to_ne_bytes()),
        }
    }
    fn float(&mut self, v: f64) {
        match self.num {
            Num::Float(2) => self.data.extend(f64_to_f16(v).to_ne_bytes()),
            Num::Float(4) => self.data.extend((v as f32).to_ne_bytes()),
            _ => self.data.extend(v.to_ne_bytes()),
        }
    }
    fn complex(&mut self, v: C64) {
        if self.num == Num::Complex(8) {
            self.data.extend((v.re as f32).to_ne_bytes());
            self.data.extend((v.im as f32).to_ne_bytes());
        } else {
            self.data.extend(v.re.to_ne_bytes());
            self.data.extend(v.im.to_ne_bytes());
        }
    }
    fn bool(&mut self, v: bool) {
        self.data.push(u8::from(v));
    }
}

/// Write a value of a [`Dom`] into an [`Out`].
trait Put: Dom {
    fn put(self, out: &mut Out);
}
impl Put for i64 {
    fn put(self, out: &mut Out) {
        out.int(self);
    }
}
impl Put for u64 {
    fn put(self, out: &mut Out) {
        out.uint(self);
    }
}
impl Put for f64 {
    fn put(self, out: &mut Out) {
        out.float(self);
    }
}
impl Put for C64 {
    fn put(self, out: &mut Out) {
        out.complex(self);
    }
}

/// The mean from a sum and a count (NaN for none).
trait DivCount: Dom {
    fn div(self, n: u64) -> Self;
}
impl DivCount for f64 {
    fn div(self, n: u64) -> f64 {
        self / n as f64
    }
}
impl DivCount for C64 {
    fn div(self, n: u64) -> C64 {
        C64 { re: self.re / n as f64, im: self.im / n as f64 }
    }
}

/// The result types of a reduction of `num` items, as NumPy gives them.
fn out_num(op: Reduce, num: Num) -> Num {
    match op {
        Reduce::Sum | Reduce::NanSum => match num {
            Num::Bool | Num::Int(_) => Num::Int(8),
            Num::UInt(_) => Num::UInt(8),
            n => n,
        },
        Reduce::Mean | Reduce::NanMean => match num {
            Num::Bool | Num::Int(_) | Num::UInt(_) => Num::Float(8),
            n => n,
        },
        Reduce::Std | Reduce::Var | Reduce::NanStd | Reduce::NanVar => match num {
            Num::Bool | Num::Int(_) | Num::UInt(_) => Num::Float(8),
            Num::Complex(s) => Num::Float(s / 2),
            n => n,
        },
        Reduce::Min | Reduce::Max | Reduce::NanMin | Reduce::NanMax => num,
        Reduce::Any | Reduce::All => Num::Bool,
    }
}

/// The operations every item kind supports: sums, means, any, all.
fn common<R: Read>(job: &Job, op: Reduce, out: &mut Out) -> Result<bool>
where
    R::D: Put,
    <R::D as Dom>::M: Put + DivCount,
{
    let ph = std::marker::PhantomData::<R>;
    match op {
        Reduce::Mean => finish_mean(job.run(&MeanFold::<R, false>(ph))?, out),
        Reduce::NanMean => finish_mean(job.run(&MeanFold::<R, true>(ph))?, out),
        Reduce::Any => job.run(&TruthFold::<R, false>(ph))?.into_iter().for_each(|b| out.bool(b)),
        Reduce::All => job.run(&TruthFold::<R, true>(ph))?.into_iter().for_each(|b| out.bool(b)),
        _ => return Ok(false),
    }
    Ok(true)
}

fn finish_mean<M: Put + DivCount>(states: Vec<(M, u64)>, out: &mut Out) {
    for (s, n) in states {
        s.div(n).put(out);
    }
}

/// Every reduction of real items (booleans, integers, floats).
fn real<R: Read>(job: &Job, op: Reduce, ddof: f64, out: &mut Out) -> Result<()>
where
    R::D: Real + Put,
{
    if common::<R>(job, op, out)? {
        return Ok(());
    }
    let ph = std::marker::PhantomData::<R>;
    let put_all = |v: Vec<R::D>, out: &mut Out| v.into_iter().for_each(|x| x.put(out));
    match op {
        Reduce::Sum | Reduce::NanSum if R::D::nan().is_some() => {
            // Floats sum in f64 (R::D is f64 here).
            let v = if op == Reduce::Sum {
                job.run(&MeanFold::<R, false>(ph))?
            } else {
                job.run(&MeanFold::<R, true>(ph))?
            };
            v.into_iter().for_each(|(s, _)| out.float(s));
        }
        Reduce::Sum | Reduce::NanSum => put_all(job.run(&IntSumFold::<R>(ph))?, out),
        Reduce::Min => put_all(job.run(&ExtremeFold::<R, false, false>(ph))?, out),
        Reduce::Max => put_all(job.run(&ExtremeFold::<R, true, false>(ph))?, out),
        Reduce::NanMin => put_all(job.run(&ExtremeFold::<R, false, true>(ph))?, out),
        Reduce::NanMax => put_all(job.run(&ExtremeFold::<R, true, true>(ph))?, out),
        Reduce::Var | Reduce::Std | Reduce::NanVar | Reduce::NanStd => {
            let skip = matches!(op, Reduce::NanVar | Reduce::NanStd);
            let v = if skip { job.run(&VarFold::<R, true>(ph))? } else { job.run(&VarFold::<R, false>(ph))? };
            for m in v {
                let dof = m.n as f64 - ddof;
                let var = if skip && dof <= 0.0 { f64::NAN } else { m.m2 / dof.max(0.0) };
                out.float(if matches!(op, Reduce::Std | Reduce::NanStd) { var.sqrt() } else { var });
            }
        }
        _ => unreachable!("handled by common()"),
    }
    Ok(())
}

/// The reductions of complex items: sums, means, any, all.
fn complex<R: Read<D = C64>>(job: &Job, op: Reduce, out: &mut Out) -> Result<()> {
    if common::<R>(job, op, out)? {
        return Ok(());
    }
    let ph = std::marker::PhantomData::<R>;
    match op {
        Reduce::Sum => job.run(&SumFold::<R, false>(ph))?.into_iter().for_each(|c| out.complex(c)),
        Reduce::NanSum => job.run(&SumFold::<R, true>(ph))?.into_iter().for_each(|c| out.complex(c)),
        _ => invalid!(
            "{} of complex items is not supported (only sum, mean, any, all and their NaN variants)",
            op.name()
        ),
    }
    Ok(())
}

/// The shape and item type of a reduction's result, known before reading
/// anything ([`Array::reduce_layout`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceLayout {
    /// The result's shape (as [`Reduced::shape`]).
    pub shape: Vec<i64>,
    /// NumPy's dtype string of its items (as [`Reduced::dtype`]).
    pub dtype: String,
    /// Bytes per item.
    pub itemsize: usize,
}

impl ReduceLayout {
    /// Bytes of the whole result.
    #[must_use]
    pub fn nbytes(&self) -> usize {
        self.shape.iter().map(|&d| usize::try_from(d).unwrap_or(0)).product::<usize>() * self.itemsize
    }
}

/// A reduction checked against an array.
struct Prepared {
    reduced: [bool; MAX_DIM],
    num: Num,
    swap: bool,
    out_num: Num,
    /// The output's shape without the reduced axes.
    out_shape: Vec<i64>,
    out_len: usize,
    layout: ReduceLayout,
}

impl Array {
    /// Check `op` along `axes` against the array and work out its result.
    fn prepare_reduce(&self, op: Reduce, axes: &[usize], keepdims: bool) -> Result<Prepared> {
        let n = self.ndim();
        let mut reduced = [false; MAX_DIM];
        for &ax in axes {
            if ax >= n {
                invalid!("axis {ax} is out of bounds for an array of dimension {n}");
            }
            if reduced[ax] {
                invalid!("axis {ax} is given twice");
            }
            reduced[ax] = true;
        }
        let (num, swap) = parse_dtype(self.dtype().as_deref(), self.itemsize())?;
        let out_num = out_num(op, num);
        if matches!(num, Num::Complex(_)) && !matches!(out_num, Num::Complex(_) | Num::Bool) {
            invalid!(
                "{} of complex items is not supported (only sum, mean, any, all and their NaN variants)",
                op.name()
            );
        }
        let shape = self.shape();
        let count: i64 = (0..n).filter(|&i| reduced[i]).map(|i| shape[i]).product();
        if count == 0 && matches!(op, Reduce::Min | Reduce::Max | Reduce::NanMin | Reduce::NanMax) {
            let name = match op {
                Reduce::Min => "minimum",
                Reduce::Max => "maximum",
                Reduce::NanMin => "fmin",
                _ => "fmax",
            };
            invalid!("zero-size array to reduction operation {name} which has no identity");
        }
        let out_shape: Vec<i64> = (0..n).filter(|&i| !reduced[i]).map(|i| shape[i]).collect();
        let out_len = usize::try_from(out_shape.iter().product::<i64>())
            .map_err(|_| Error::InvalidArgument("the result does not fit in memory".into()))?;
        let itemsize = match out_num {
            Num::Bool => 1,
            Num::Int(s) | Num::UInt(s) | Num::Float(s) | Num::Complex(s) => s,
        };
        let shape =
            if keepdims { (0..n).map(|i| if reduced[i] { 1 } else { shape[i] }).collect() } else { out_shape.clone() };
        let layout = ReduceLayout { shape, dtype: out_num.typestr(), itemsize };
        Ok(Prepared { reduced, num, swap, out_num, out_shape, out_len, layout })
    }

    /// The shape and dtype [`Array::reduce`] would give, without reading
    /// the array.
    ///
    /// # Errors
    /// As [`Array::reduce`], but for reading.
    pub fn reduce_layout(&self, op: Reduce, axes: &[usize], keepdims: bool) -> Result<ReduceLayout> {
        Ok(self.prepare_reduce(op, axes, keepdims)?.layout)
    }

    /// Reduce the array along `axes` (each in `0..ndim`, no repeats; empty
    /// reduces nothing, every axis reduces to one item) with `op`, reading
    /// it chunk by chunk in parallel with the context's threads: memory
    /// holds about two decompressed chunks and a partial result per thread,
    /// and the result ([`ReduceOptions::max_memory`] bounds it).
    ///
    /// The items are read as the array's dtype ([`Array::dtype`]) says:
    /// booleans, integers and floats of either byte order (`|b1`, `<i4`,
    /// `>u8`, `<f2`…) for every reduction, complex numbers (`<c8`, `<c16`)
    /// for sums, means, `any` and `all`. Result types follow NumPy: sums of
    /// booleans and signed integers are `int64`, of unsigned ones `uint64`
    /// (wrapping around); means, variances and deviations of integers are
    /// `float64`, of floats their own type; `min`/`max` keep the type;
    /// `any`/`all` are booleans.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis out of range or repeated, an
    /// array without a dtype or of another dtype (records, strings…), a
    /// reduction its items do not support, `min`/`max` (and NaN variants)
    /// over no items (NumPy's "zero-size array to reduction operation …
    /// which has no identity"), or a `max_memory` too small for one chunk;
    /// as [`Array::to_buffer`] if a chunk cannot be read.
    pub fn reduce(&self, op: Reduce, axes: &[usize], opts: &ReduceOptions) -> Result<Reduced> {
        let p = self.prepare_reduce(op, axes, opts.keepdims)?;
        let half = match p.num {
            Num::Complex(s) => s / 2,
            Num::Bool => 1,
            Num::Int(s) | Num::UInt(s) | Num::Float(s) => s,
        };
        let job = Job {
            array: self,
            reduced: p.reduced,
            out_shape: p.out_shape,
            out_len: p.out_len,
            swap: p.swap.then_some(half),
            max_memory: opts.max_memory,
        };
        let mut out = Out::new(p.out_num, p.out_len)?;
        let ddof = opts.ddof;
        match p.num {
            Num::Bool => real::<RBool>(&job, op, ddof, &mut out)?,
            Num::Int(1) => real::<RI8>(&job, op, ddof, &mut out)?,
            Num::Int(2) => real::<RI16>(&job, op, ddof, &mut out)?,
            Num::Int(4) => real::<RI32>(&job, op, ddof, &mut out)?,
            Num::Int(_) => real::<RI64>(&job, op, ddof, &mut out)?,
            Num::UInt(1) => real::<RU8>(&job, op, ddof, &mut out)?,
            Num::UInt(2) => real::<RU16>(&job, op, ddof, &mut out)?,
            Num::UInt(4) => real::<RU32>(&job, op, ddof, &mut out)?,
            Num::UInt(_) => real::<RU64>(&job, op, ddof, &mut out)?,
            Num::Float(2) => real::<RF16>(&job, op, ddof, &mut out)?,
            Num::Float(4) => real::<RF32>(&job, op, ddof, &mut out)?,
            Num::Float(_) => real::<RF64>(&job, op, ddof, &mut out)?,
            Num::Complex(8) => complex::<RC8>(&job, op, &mut out)?,
            Num::Complex(_) => complex::<RC16>(&job, op, &mut out)?,
        }
        let ReduceLayout { shape, dtype, .. } = p.layout;
        Ok(Reduced { shape, dtype, data: out.data })
    }
}

#[cfg(test)]
mod tests {
    use super::numbers::f16_to_f64;
    use super::*;

    #[test]
    fn f16_round_trips_and_rounds() {
        for h in 0u16..=0xffff {
            let v = f16_to_f64(h);
            if v.is_nan() {
                assert_eq!(f64_to_f16(v) & 0x7c00, 0x7c00);
                continue;
            }
            assert_eq!(f64_to_f16(v), h, "{h:#x} = {v}");
        }
        // Halfway between 1 and 1 + 2^-10 rounds to even (1).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(f64_to_f16(1e6), 0x7c00);
        assert_eq!(f64_to_f16(-1e-9), 0x8000);
    }

    #[test]
    fn dtypes_are_parsed_or_refused() {
        assert_eq!(parse_dtype(Some("<f8"), 8).unwrap(), (Num::Float(8), cfg!(target_endian = "big")));
        assert_eq!(parse_dtype(Some(">i4"), 4).unwrap(), (Num::Int(4), cfg!(target_endian = "little")));
        assert_eq!(parse_dtype(Some("|b1"), 1).unwrap(), (Num::Bool, false));
        assert_eq!(parse_dtype(Some("u1"), 1).unwrap(), (Num::UInt(1), false));
        for bad in ["|V3", "<U4", "[('a', '<i4')]", "<f16", "<m8", "<i8"] {
            assert!(parse_dtype(Some(bad), 3).is_err(), "{bad}");
        }
        assert!(parse_dtype(None, 8).is_err());
    }

    #[test]
    fn walks_merge_axes() {
        let w = Walk::new(&[2, 1, 3, 4], &[false, true, true, false], 1);
        assert_eq!(w.dims, vec![(2, false), (3, true), (4, false)]);
        assert_eq!(w.out_len, 8);
        let data: Vec<u8> = (0..24).collect();
        let mut got = vec![0u32; 8];
        w.rows(
            &data,
            &mut got,
            |_, _, _| unreachable!(),
            |got, o, row| {
                row.iter().enumerate().for_each(|(j, &x)| got[o + j] += u32::from(x));
            },
        );
        // out[i, k] = sum over j of data[i, j, k].
        let want: Vec<u32> =
            (0..2).flat_map(|i| (0..4).map(move |k| (0..3).map(|j| i * 12 + j * 4 + k).sum())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn chan_merge_matches_two_pass() {
        let xs: Vec<f64> = (0..1000).map(|i| 1e9 + f64::from(i % 7) * 0.5).collect();
        let moments = |s: &[f64]| {
            let mean = s.iter().sum::<f64>() / s.len() as f64;
            Moments { n: s.len() as u64, mean, m2: s.iter().map(|x| (x - mean) * (x - mean)).sum() }
        };
        let mut a = moments(&xs[..333]);
        a.merge(&moments(&xs[333..]));
        let all = moments(&xs);
        assert!((a.m2 - all.m2).abs() <= 1e-6 * all.m2, "{} vs {}", a.m2, all.m2);
        assert!((a.mean - all.mean).abs() < 1e-6);
    }
}
