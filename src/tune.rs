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
//! - on a sample of at most [`SAMPLE_BYTES`]: [`SAMPLE_WINDOWS`] evenly
//!   spaced runs of the caller's data (all of it if smaller), compressed
//!   with one thread. That bounds the work: 3 (speed), 18 (balanced) or
//!   36 (size) compressions of 256 KiB, 0.5 to 25 ms on this project's
//!   test data; [`Tuning::micros`] reports it per array.
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

/// How many evenly spaced runs of the data make the sample.
pub const SAMPLE_WINDOWS: usize = 4;

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
    /// Bytes of the sample.
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

/// Up to [`SAMPLE_BYTES`] of `data`: [`SAMPLE_WINDOWS`] evenly spaced runs,
/// each a whole number of items.
fn sample(data: &[u8], itemsize: usize) -> Vec<u8> {
    if data.len() <= SAMPLE_BYTES {
        return data.to_vec();
    }
    let run = (SAMPLE_BYTES / SAMPLE_WINDOWS / itemsize).max(1) * itemsize;
    let items = data.len() / itemsize;
    let mut out = Vec::with_capacity(run * SAMPLE_WINDOWS);
    for w in 0..SAMPLE_WINDOWS {
        let start = (items - run / itemsize) * w / (SAMPLE_WINDOWS - 1).max(1) * itemsize;
        out.extend_from_slice(&data[start..start + run]);
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
    let sample = sample(data, itemsize);
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
    for &block_bytes in blocks {
        // Whole items per block, as the partitions will make them.
        let blocksize = (block_bytes / itemsize).max(1) * itemsize;
        for &(codec, clevel) in codecs {
            for filters in pipelines() {
                let cparams = CParams { codec, clevel, filters, ..propose_cparams() };
                let mut cctx = CCtx::new(&Compression::plain(cparams), typesize, blocksize.min(sample.len()), 1)?;
                let cbytes = cctx.compress(&sample)?.len();
                let cost = codec_cost(codec, clevel) + filters_cost(&filters);
                let score = match objective {
                    Objective::Size => cbytes as f64 + cost * 1e-6,
                    Objective::Speed => cbytes as f64,
                    Objective::Balanced => cbytes as f64 * cost.sqrt() * block_penalty(block_bytes),
                };
                candidates.push(Candidate { cparams, block_bytes, cbytes, cost, score });
            }
        }
    }
    // Deterministic: by score, then by the order tried.
    candidates.sort_by(|a, b| a.score.total_cmp(&b.score));
    let best = &candidates[0];
    let hints = PartitionHints { block_bytes: Some(best.block_bytes), ..*hints };
    let partitions = propose_partitions(itemsize, shape, &hints)?;
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok(Tuning { objective, cparams: best.cparams, partitions, sample_bytes: sample.len(), candidates, micros })
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
        let ratio = |c: &Candidate| self.sample_bytes as f64 / c.cbytes.max(1) as f64;
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
            "; {} candidates on a {} KiB sample in {:.1} ms",
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
