//! What a one-row write to a persisted array costs at each durability
//! level (bench/durability.sh runs it, under strace too):
//!
//!     durability_bench DIR [REPS] [ONLY]
//!
//! For a contiguous frame file and a sparse-frame directory, a row of one
//! chunk (shape 10000×100 float64, chunks 1000×100; also with checksums)
//! and a row across ten chunks (1000×1000, chunks 100×100, as in the
//! the README's C example), at `Durability::Full`, `Normal` and `Process`:
//! REPS (default 100) writes of one row, each timed; prints the median and
//! the 90th percentile in ms, and the mean of the whole run with the
//! handle's close (where `Normal` makes the last epoch durable), as a
//! markdown table. ONLY (e.g.
//! `frame/1/full`, `frame/1+xxh3/full`) runs that case alone
//! and prints `START` and `END` around its writes (for strace). The arrays
//! are made in DIR (use a directory on the disk you care about: `/tmp`
//! may be a tmpfs, where syncs cost nothing).

use std::time::Instant;

use caterva::{Array, Config, Context, Durability, Params, StorageParams};

struct Case {
    storage: &'static str,
    chunks_per_row: usize,
    checksums: bool,
    level: Durability,
}

fn array(dir: &str, c: &Case) -> Array {
    let (shape, chunks, blocks) = if c.chunks_per_row == 1 {
        (vec![10_000, 100], vec![1000, 100], vec![100, 100])
    } else {
        (vec![1000, 1000], vec![100, 100], vec![25, 25])
    };
    let url = format!("{dir}/bench-{}-{}-{}.b2nd", c.storage, c.chunks_per_row, c.checksums);
    let _ = Array::remove(&url);
    let ctx =
        Context::new(Config { durability: c.level, checksums: c.checksums, ..Config::default() }).expect("context");
    let params = Params { itemsize: 8, shape: shape.clone(), dtype: Some("<f8".into()) };
    let storage = StorageParams {
        chunkshape: chunks,
        blockshape: blocks,
        contiguous: c.storage == "frame",
        urlpath: Some(url),
        metalayers: vec![],
    };
    let n = (shape[0] * shape[1]) as usize;
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f64).to_le_bytes()).collect();
    Array::from_buffer(&ctx, &params, &storage, &data).expect("array")
}

/// Times of `reps` one-row writes, in ms, and the time of all of them
/// with the handle's close after them.
fn run(dir: &str, c: &Case, reps: usize, marked: bool) -> (Vec<f64>, f64) {
    let mut arr = array(dir, c);
    let all = Instant::now();
    let (rows, cols) = (arr.shape()[0], arr.shape()[1]);
    let mut times = Vec::with_capacity(reps);
    if marked {
        println!("START");
    }
    for i in 0..reps {
        let row = (i as i64 * 7) % rows;
        let values: Vec<u8> = (0..cols).flat_map(|j| ((i as i64 * cols + j) as f64).to_le_bytes()).collect();
        let t = Instant::now();
        arr.set_slice_buffer(&[row, 0], &[row + 1, cols], &values, &[1, cols]).expect("write");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(arr);
    if marked {
        println!("END");
    }
    (times, all.elapsed().as_secs_f64() * 1e3)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: durability_bench DIR [REPS] [ONLY]");
    let reps: usize = args.get(2).map_or(100, |r| r.parse().expect("REPS is a number"));
    let only = args.get(3);
    println!("| storage | chunks a row | durability | median ms | p90 ms | mean ms with the close |");
    println!("|---|---:|---|---:|---:|---:|");
    for storage in ["frame", "sparse"] {
        for (chunks_per_row, checksums) in [(1, false), (1, true), (10, false)] {
            for level in [Durability::Full, Durability::Normal, Durability::Process] {
                let c = Case { storage, chunks_per_row, checksums, level };
                let row = format!("{chunks_per_row}{}", if checksums { "+xxh3" } else { "" });
                let name = format!("{storage}/{row}/{level}");
                if only.is_some_and(|o| *o != name) {
                    continue;
                }
                let (mut t, all) = run(dir, &c, reps, only.is_some());
                t.sort_by(f64::total_cmp);
                let (median, p90, mean) = (quantile(&t, 0.5), quantile(&t, 0.9), all / reps as f64);
                println!("| {storage} | {row} | {level} | {median:.2} | {p90:.2} | {mean:.2} |");
            }
        }
    }
}
