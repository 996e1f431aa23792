//! Compression chosen by the data: [`tune`] compresses a small sample of
//! an array's data with a few candidate codecs, filter pipelines and block
//! sizes, and picks one by a stated [`Objective`].
//!
//! Anchor: Blosc's BTune, which trains a model on many datasets and picks
//! by measured speed. This tuner is open and deterministic instead: the
//! same data gives the same choice on every machine and run, because it
//! scores each candidate by its *measured* compressed size and a *fixed*
//! relative cost per codec and filter (below, from `benches/codecs.rs`-style
//! measurements on this project's datasets), never by a timing taken while
//! tuning. The choice and its reason are readable: [`Tuning::report`]
//! (what `caterva info` prints, and what the bindings keep in the array's
//! vlmetalayer [`REPORT_VLMETA`]).
//!
//! What is tried:
//!
//! - codecs LZ4 5, BloscLZ 5 and ZSTD 1 (and ZSTD 5 for [`Objective::Size`]);
//!   the filters byte shuffle,
//!   bit shuffle, and delta then byte shuffle (all decodable by every
//!   Caterva and Blosc2 reader, python-caterva 0.7.3's included; bytedelta
//!   is left out for that reason);
//! - blocks of 16 KiB (the default rule's), and for [`Objective::Balanced`]
//!   also 64 KiB, for [`Objective::Size`] also 64 and 256 KiB (larger blocks
//!   compress better and make small reads decompress more);
//! - for each block size, the blocks the array would get (the partitions
//!   [`propose_partitions`] makes for it), on a sample of whole blocks of
//!   the caller's data, about [`SAMPLE_BYTES`] of them (at least
//!   [`SAMPLE_WINDOWS`]), evenly spaced over the data, each compressed on
//!   its own as a chunk's blocks are, with one thread. (A sample of runs of
//!   items in C order, as before, misses the jumps between the rows of an
//!   N-d block: it put the int64 0..n dataset of `bench/compare` at ratio
//!   192 where its blocks compress 40 times.)
//! - every codec and filter at the first block size, and the three that
//!   did best there at the larger ones. That bounds the work: 3 (speed), 12
//!   (balanced) or 15 (size) compressions of about 256 KiB, 3.4 to 12 ms
//!   on `bench/compare`'s datasets; [`Tuning::micros`] reports it per array.
//!
//! Arrays with less data than [`MIN_TUNED_BYTES`] are not tuned (the
//! default rule serves them: the tuning would cost more than 5% of their
//! write).

use std::time::Instant;

use crate::blosc2::{CCtx, CParams, Codec, Compression, Filter};
use crate::error::{invalid, Result};
use crate::partition::{propose_cparams, propose_partitions, PartitionHints, Partitions};

/// The most bytes of the caller's data a tuning compresses per candidate.
pub const SAMPLE_BYTES: usize = 256 << 10;

/// The fewest blocks a sample holds (of blocks larger than a quarter of
/// [`SAMPLE_BYTES`]).
pub const SAMPLE_WINDOWS: usize = 2;

/// Arrays with less data are not tuned: [`tune`] returns the default rule.
/// A tuning takes 2 to 25 ms (one thread); an array of this size takes
/// about 0.2 s to write at one thread, so the tuning stays near or under
/// 5% of the write.
pub const MIN_TUNED_BYTES: usize = 32 << 20;

/// The vlmetalayer where the bindings keep [`Tuning::report`] of a tuned array.
pub const REPORT_VLMETA: &str = "caterva.tuning";

/// What a tuning favours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Objective {
    /// The fastest reads and writes: LZ4 only, 16 KiB blocks, the filter
    /// that compresses best.
    Speed,
    /// Size and speed together (the default): the smallest
    /// `compressed bytes × √cost × block penalty`.
    #[default]
    Balanced,
    /// The smallest file: the smallest compressed sample, ties to the cheaper.
    Size,
}

impl Objective {
    /// `speed`, `balanced` or `size`.
    #[must_use]
    pub fn by_name(name: &str) -> Option<Objective> {
        match name.trim() {
            "speed" => Some(Objective::Speed),
            "balanced" => Some(Objective::Balanced),
            "size" => Some(Objective::Size),
            _ => None,
        }
    }

    /// Its name, as [`Objective::by_name`] takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Objective::Speed => "speed",
            Objective::Balanced => "balanced",
            Objective::Size => "size",
        }
    }
}

/// One candidate and what its sample compressed to.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Codec, level and filters.
    pub cparams: CParams,
    /// Block size aimed at, in bytes.
    pub block_bytes: usize,
    /// The sample's compressed bytes with these settings.
    pub cbytes: usize,
    /// The bytes of its sample (whole blocks of its size).
    pub sample_bytes: usize,
    /// The fixed relative cost of the codec and filters (LZ4 with a byte
    /// shuffle is 1).
    pub cost: f64,
    /// The objective's score (lower is better).
    pub score: f64,
}

/// What [`tune`] chose, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    /// The objective.
    pub objective: Objective,
    /// The compression chosen.
    pub cparams: CParams,
    /// The chunk and block shapes for the chosen block size.
    pub partitions: Partitions,
    /// Every candidate tried, the chosen one first (empty when the array
    /// was too small to tune: the default rule then).
    pub candidates: Vec<Candidate>,
    /// Bytes of the largest sample (each block size has its own).
    pub sample_bytes: usize,
    /// Microseconds the tuning took.
    pub micros: u64,
}

/// The fixed relative cost (time per byte, compressing and decompressing)
/// of a codec at a level: LZ4 is 1.
fn codec_cost(codec: Codec, clevel: u8) -> f64 {
    match (codec, clevel) {
        (Codec::Lz4, _) => 1.0,
        (Codec::BloscLz, _) => 1.2,
        (Codec::Zstd, 0..=2) => 2.5,
        (Codec::Zstd, _) => 4.0,
        _ => 3.0,
    }
}

/// The fixed relative cost a filter pipeline adds.
fn filters_cost(filters: &[Filter; 6]) -> f64 {
    filters
        .iter()
        .map(|f| match f {
            Filter::Shuffle | Filter::Delta => 0.1,
            Filter::BitShuffle => 0.35,
            _ => 0.0,
        })
        .sum()
}

/// The penalty of a block size for small reads: 1 at 16 KiB, growing with
/// the fourth root of the size.
fn block_penalty(block_bytes: usize) -> f64 {
    (block_bytes as f64 / f64::from(16 << 10)).max(1.0).powf(0.25)
}

/// How many codec and filter choices of the first block size are tried
/// at the larger ones.
const KEPT_PAST_FIRST: usize = 3;

/// Whole blocks of `blockshape` from `data` (the array's first items, C
/// order, of `shape`: whole leading rows are used), laid one after
/// another as a chunk holds them: [`SAMPLE_BYTES`] of them, at least
/// [`SAMPLE_WINDOWS`], evenly spaced over the grid of blocks that the
/// data covers. A block is compressed on its own, so the sample compresses
/// as the array's chunks will: with the same jumps between rows in a
/// block, which a run of items in C order does not have. (Where the data
/// covers no whole block along an axis, the block is cut there and padded
/// with zeros, as an array's edge blocks are.)
fn sample_blocks(data: &[u8], itemsize: usize, shape: &[i64], blockshape: &[i32]) -> Vec<u8> {
    let bshape: Vec<usize> = blockshape.iter().map(|&b| b.max(1) as usize).collect();
    let block_items: usize = bshape.iter().product();
    let block_bytes = block_items * itemsize;
    let dims: Vec<usize> = shape.iter().map(|&n| n.max(0) as usize).collect();
    let row: usize = dims.iter().skip(1).product::<usize>() * itemsize;
    if dims.is_empty() || block_bytes == 0 || row == 0 {
        return data.to_vec();
    }
    // What the data covers: whole leading rows.
    let mut have = dims.clone();
    have[0] = have[0].min(data.len() / row);
    if have[0] == 0 {
        return data.to_vec();
    }
    let grid: Vec<usize> = have.iter().zip(&bshape).map(|(&n, &b)| (n / b).max(1)).collect();
    let total: usize = grid.iter().product();
    let wanted = (SAMPLE_BYTES / block_bytes).max(SAMPLE_WINDOWS).min(total);
    let mut out = vec![0u8; wanted * block_bytes];
    // Strides (in items) of the data.
    let mut strides = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    let last = dims.len() - 1;
    for (k, dst) in out.chunks_exact_mut(block_bytes).enumerate() {
        // The block's place in the grid (evenly spaced, the middle of each share).
        let mut lin = (2 * k + 1) * total / (2 * wanted);
        let mut origin = vec![0usize; dims.len()];
        for i in (0..dims.len()).rev() {
            origin[i] = (lin % grid[i]) * bshape[i];
            lin /= grid[i];
        }
        // Each run along the last axis of the block.
        let runs = block_items / bshape[last];
        for r in 0..runs {
            let (mut rest, mut at, mut inside) = (r, 0usize, true);
            for i in (0..last).rev() {
                let pos = origin[i] + rest % bshape[i];
                rest /= bshape[i];
                inside &= pos < have[i];
                at += pos * strides[i];
            }
            let n = bshape[last].min(have[last].saturating_sub(origin[last]));
            if inside && n > 0 {
                let from = (at + origin[last]) * itemsize;
                let to = r * bshape[last] * itemsize;
                dst[to..to + n * itemsize].copy_from_slice(&data[from..from + n * itemsize]);
            }
        }
    }
    out
}

/// The filter pipelines tried: byte shuffle, bit shuffle, delta then byte shuffle.
fn pipelines() -> [[Filter; 6]; 3] {
    use Filter::{BitShuffle, Delta, NoFilter as N, Shuffle};
    [[N, N, N, N, N, Shuffle], [N, N, N, N, N, BitShuffle], [N, N, N, N, Delta, Shuffle]]
}

/// Choose the compression and the block size of an array of `shape` with
/// items of `itemsize` bytes from `data`, its items in C order (all of
/// them, or the first ones: at least a chunk's worth tells best), for the
/// access pattern and sizes of `hints` and the `objective`.
///
/// An array with less than [`MIN_TUNED_BYTES`] of data gets the default
/// rule ([`propose_cparams`], [`propose_partitions`]) and no candidates. A
/// block size in `hints` is kept (only codecs and filters are tried).
///
/// # Errors
/// As [`propose_partitions`]; [`Error::InvalidArgument`](crate::Error)
/// when `data` is not a whole number of items; c-blosc2's failures.
pub fn tune(
    data: &[u8],
    itemsize: usize,
    shape: &[i64],
    hints: &PartitionHints,
    objective: Objective,
) -> Result<Tuning> {
    let started = Instant::now();
    if itemsize == 0 || data.len() % itemsize != 0 {
        invalid!("{} bytes of data are not a whole number of {itemsize}-byte items", data.len());
    }
    let default_rule = || -> Result<Tuning> {
        Ok(Tuning {
            objective,
            cparams: propose_cparams(),
            partitions: propose_partitions(itemsize, shape, hints)?,
            candidates: Vec::new(),
            sample_bytes: 0,
            micros: 0,
        })
    };
    if data.len() < MIN_TUNED_BYTES {
        return default_rule();
    }
    let blocks: &[usize] = match (hints.block_bytes, objective) {
        (Some(b), _) => &[b],
        (None, Objective::Speed) => &[16 << 10],
        (None, Objective::Balanced) => &[16 << 10, 64 << 10],
        (None, Objective::Size) => &[16 << 10, 64 << 10, 256 << 10],
    };
    let codecs: &[(Codec, u8)] = match objective {
        Objective::Speed => &[(Codec::Lz4, 5)],
        Objective::Balanced => &[(Codec::Lz4, 5), (Codec::BloscLz, 5), (Codec::Zstd, 1)],
        Objective::Size => &[(Codec::Lz4, 5), (Codec::BloscLz, 5), (Codec::Zstd, 1), (Codec::Zstd, 5)],
    };
    let typesize = crate::blosc2::chunk_typesize(itemsize);
    let mut candidates = Vec::new();
    let mut sampled = 0;
    let mut tried: Vec<Vec<i32>> = Vec::new();
    for &block_bytes in blocks {
        // The blocks the array would get, sampled as its chunks hold them.
        let parts = propose_partitions(itemsize, shape, &PartitionHints { block_bytes: Some(block_bytes), ..*hints })?;
        if tried.contains(&parts.blockshape) {
            continue;
        }
        tried.push(parts.blockshape.clone());
        let sample = sample_blocks(data, itemsize, shape, &parts.blockshape);
        let blocksize = parts.blockshape.iter().map(|&b| b.max(1) as usize).product::<usize>() * itemsize;
        sampled = sampled.max(sample.len());
        // Past the first block size, only the codecs and filters that did
        // best at the first (the ranking rarely changes with the block
        // size; the time of the tuning does).
        let all = codecs.len() * pipelines().len();
        let combos: Vec<(Codec, u8, [Filter; 6])> = if candidates.is_empty() {
            codecs.iter().flat_map(|&(c, l)| pipelines().into_iter().map(move |f| (c, l, f))).collect()
        } else {
            let mut first: Vec<&Candidate> = candidates[..all].iter().collect();
            first.sort_by(|a, b| a.score.total_cmp(&b.score));
            first.iter().take(KEPT_PAST_FIRST).map(|c| (c.cparams.codec, c.cparams.clevel, c.cparams.filters)).collect()
        };
        for (codec, clevel, filters) in combos {
            {
                let cparams = CParams { codec, clevel, filters, ..propose_cparams() };
                let mut cctx = CCtx::new(&Compression::plain(cparams), typesize, blocksize.min(sample.len()), 1)?;
                // Per byte of data, as the samples differ in size.
                let cbytes = cctx.compress(&sample)?.len();
                let per = cbytes as f64 / sample.len().max(1) as f64;
                let cost = codec_cost(codec, clevel) + filters_cost(&filters);
                let score = match objective {
                    Objective::Size => per + cost * 1e-9,
                    Objective::Speed => per,
                    Objective::Balanced => per * cost.sqrt() * block_penalty(blocksize),
                };
                candidates.push(Candidate { cparams, block_bytes, cbytes, sample_bytes: sample.len(), cost, score });
            }
        }
    }
    // Deterministic: by score, then by the order tried.
    candidates.sort_by(|a, b| a.score.total_cmp(&b.score));
    let best = &candidates[0];
    let hints = PartitionHints { block_bytes: Some(best.block_bytes), ..*hints };
    let partitions = propose_partitions(itemsize, shape, &hints)?;
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok(Tuning { objective, cparams: best.cparams, partitions, sample_bytes: sampled, candidates, micros })
}

/// The name of a candidate's settings: `lz4 5 + bitshuffle, 16 KiB blocks`.
fn describe(cparams: &CParams, block_bytes: usize) -> String {
    let filters: Vec<String> =
        cparams.filters.iter().filter(|f| **f != Filter::NoFilter).map(ToString::to_string).collect();
    format!("{} {} + {}, {} KiB blocks", cparams.codec, cparams.clevel, filters.join(" + "), block_bytes >> 10)
}

impl Tuning {
    /// [`Tuning::report`] as the content of the vlmetalayer
    /// [`REPORT_VLMETA`] where a tuned array keeps it (a MessagePack
    /// string, as python-blosc2 and our Python package read vlmetalayers):
    /// `array.vlmeta_add(REPORT_VLMETA, &tuning.recorded())`.
    #[must_use]
    pub fn recorded(&self) -> Vec<u8> {
        let text = self.report();
        let mut packed = Vec::with_capacity(text.len() + 5);
        // Writing into a Vec cannot fail.
        let _ = rmp::encode::write_str(&mut packed, &text);
        packed
    }

    /// The report in `content`, the vlmetalayer [`REPORT_VLMETA`] of a tuned
    /// array ([`Tuning::recorded`]); `None` if it does not hold one.
    #[must_use]
    pub fn report_in(content: &[u8]) -> Option<String> {
        let mut rd = content;
        let len = rmp::decode::read_str_len(&mut rd).ok()?;
        rd.get(..len as usize).map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// What was chosen and why, in one line: the objective, the choice,
    /// its sample ratio and cost, the runner-up, the sample and the time.
    /// The default rule says so.
    #[must_use]
    pub fn report(&self) -> String {
        let Some(best) = self.candidates.first() else {
            return format!(
                "{}: the default rule (arrays with less than {} KiB of data are not tuned)",
                self.objective.name(),
                MIN_TUNED_BYTES >> 10
            );
        };
        let ratio = |c: &Candidate| c.sample_bytes as f64 / c.cbytes.max(1) as f64;
        let mut line = format!(
            "{}: {} (sample ratio {:.2}, relative cost {:.2})",
            self.objective.name(),
            describe(&best.cparams, best.block_bytes),
            ratio(best),
            best.cost
        );
        if let Some(next) = self.candidates.get(1) {
            line.push_str(&format!(
                "; next {} (ratio {:.2}, cost {:.2})",
                describe(&next.cparams, next.block_bytes),
                ratio(next),
                next.cost
            ));
        }
        line.push_str(&format!(
            "; {} candidates on samples of whole blocks (up to {} KiB) in {:.1} ms",
            self.candidates.len(),
            self.sample_bytes >> 10,
            self.micros as f64 / 1000.0
        ));
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Access;

    fn hints() -> PartitionHints {
        PartitionHints { access: Access::Balanced, threads: Some(2), ..PartitionHints::default() }
    }

    /// Int64 labels with large constant regions, a smooth float field,
    /// and noise: each gets its own choice, the same every time.
    #[test]
    fn the_choice_follows_the_data_and_is_the_same_every_time() {
        let n = 128 * 128 * 256;
        let labels: Vec<u8> = (0..n as i64).flat_map(|i| (i / 5000).to_le_bytes()).collect();
        let smooth: Vec<u8> =
            (0..n).flat_map(|i| (f64::from(i as u32) * 1e-3).sin().mul_add(100.0, 300.0).to_le_bytes()).collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..n * 8)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let shape = [256, 128, 128];
        for objective in [Objective::Speed, Objective::Balanced, Objective::Size] {
            for data in [&labels, &smooth, &noise] {
                let a = tune(data, 8, &shape, &hints(), objective).unwrap();
                let b = tune(data, 8, &shape, &hints(), objective).unwrap();
                println!("{}", a.report());
                assert_eq!((a.cparams, &a.partitions), (b.cparams, &b.partitions), "{}", a.report());
                assert!(!a.candidates.is_empty());
                assert_eq!(a.sample_bytes, SAMPLE_BYTES);
                // The chosen one scores best, and its block size made the partitions.
                assert!(a.candidates.iter().all(|c| c.score >= a.candidates[0].score));
                let block: i64 = a.partitions.blockshape.iter().map(|&b| i64::from(b)).product::<i64>() * 8;
                assert!(block <= a.candidates[0].block_bytes as i64 * 2, "{block} for {}", a.report());
                if objective == Objective::Speed {
                    assert_eq!(a.cparams.codec, Codec::Lz4);
                }
                if objective == Objective::Size {
                    let smallest = a.candidates.iter().map(|c| c.cbytes).min().unwrap();
                    assert_eq!(a.candidates[0].cbytes, smallest);
                }
                assert!(a.report().starts_with(objective.name()), "{}", a.report());
            }
        }
        // Size finds the labels far smaller than the default rule's settings do.
        let tuned = tune(&labels, 8, &shape, &hints(), Objective::Size).unwrap();
        let default = tuned.candidates.iter().find(|c| c.cparams == propose_cparams() && c.block_bytes == 16 << 10);
        assert!(tuned.candidates[0].cbytes <= default.unwrap().cbytes);
    }

    #[test]
    fn small_arrays_keep_the_default_rule_and_bad_data_is_refused() {
        let t = tune(&[0u8; 4096], 4, &[1024], &hints(), Objective::Balanced).unwrap();
        assert!(t.candidates.is_empty());
        assert_eq!(t.cparams, propose_cparams());
        assert_eq!(t.partitions, propose_partitions(4, &[1024], &hints()).unwrap());
        assert!(t.report().contains("default rule"), "{}", t.report());
        assert!(tune(&[0u8; 7], 4, &[2], &hints(), Objective::Balanced).is_err());
        assert_eq!(Tuning::report_in(&t.recorded()), Some(t.report()));
        assert_eq!(Tuning::report_in(b"\x01"), None);
        assert_eq!(Objective::by_name("size"), Some(Objective::Size));
        assert_eq!(Objective::by_name("fast"), None);
    }
}
