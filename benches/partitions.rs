//! Chunk and block sizes against compression and read speed: the numbers
//! behind the README's "Choosing chunks and blocks" and the defaults of
//! `caterva::propose_partitions`.
//!
//! `cargo bench --bench partitions` (about four minutes on 2 cores; add
//! `-- --quick` for a smoke run of seconds, `-- --threads N` for another
//! thread count). For the two datasets of the C benchmark and
//! `bench/compare` (int64 0..n; a float64 smooth field with noisy low bits)
//! at shape {150, 373, 200} (89.5 MB), it writes an array to a file for each
//! chunk size × block size (shapes from `propose_partitions` with those
//! byte targets, `Access::Balanced`) and for each access pattern's default
//! proposal, reopens it, and measures: the compression ratio, the write, a
//! full read, a plane at the middle of each axis, 100 random 16³ boxes and
//! 200 1-item reads (the median call). ZSTD level 5 with shuffle. Every
//! full read is checked against the data. Times are medians over the
//! repetitions; the table goes to stdout and `target/bench/partitions.md`.

use std::time::{Duration, Instant};

use caterva::{propose_partitions, Access, Array, Config, Context, Params, PartitionHints, StorageParams};

/// xorshift64*: deterministic positions and noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }
}

/// The two datasets of `bench/compare`: int64 0..n, and float64
/// sin(i/37)·cos(j/53) + k/400 plus Gaussian noise (σ = 1e-3) rounded to
/// multiples of 2⁻¹⁶ (this generator's noise, not NumPy's; the same kind of data).
fn dataset(name: &str, shape: [i64; 3]) -> Vec<u8> {
    let n = shape.iter().product::<i64>();
    if name == "int" {
        return (0..n).flat_map(i64::to_le_bytes).collect();
    }
    let mut rng = Rng(20_240_614);
    let q = 2f64.powi(-16);
    let mut out = Vec::with_capacity(n as usize * 8);
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let sc = (i as f64 / 37.0).sin() * (j as f64 / 53.0).cos();
            for k in 0..shape[2] {
                let v = sc + k as f64 / 400.0 + (rng.normal() * 1e-3 / q).round() * q;
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
}

fn kib(itemsize: usize, s: &[i32]) -> String {
    let b = s.iter().map(|&x| x as usize).product::<usize>() * itemsize;
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    } else {
        format!("{} KiB", b >> 10)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let threads = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|t| t.parse().ok())
        .unwrap_or(2usize);
    let shape: [i64; 3] = if quick { [40, 75, 50] } else { [150, 373, 200] };
    let reps = if quick { 1 } else { 3 };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("partitions.b2frame");
    let url = path.to_str().unwrap().to_string();
    let ctx = Context::new(Config { nthreads: threads, ..Config::default() }).unwrap();

    // (label, hints): the byte grid with Balanced shapes, then each pattern's default.
    let mut configs: Vec<(String, PartitionHints)> = Vec::new();
    let chunk_sizes: &[usize] = if quick { &[64 << 10] } else { &[1 << 20, 8 << 20] };
    let block_sizes: &[usize] =
        if quick { &[8 << 10, 32 << 10] } else { &[8 << 10, 32 << 10, 128 << 10, 512 << 10, 2 << 20] };
    for &c in chunk_sizes {
        for &b in block_sizes.iter().filter(|&&b| b <= c) {
            let h = PartitionHints {
                chunk_bytes: Some(c),
                block_bytes: Some(b),
                threads: Some(threads),
                ..Default::default()
            };
            configs.push(("balanced".into(), h));
        }
    }
    for access in [Access::Balanced, Access::SmallReads, Access::Scans, Access::Planes { axis: 0 }] {
        let name = match access {
            Access::Balanced => "default balanced",
            Access::SmallReads => "default small-reads",
            Access::Scans => "default scans",
            Access::Planes { .. } => "default planes:0",
        };
        configs.push((name.into(), PartitionHints { access, threads: Some(threads), ..Default::default() }));
    }

    let mut rng = Rng(7);
    let boxes: Vec<[i64; 3]> = (0..100).map(|_| [0, 1, 2].map(|i| rng.below(shape[i] - 16))).collect();
    let items: Vec<[i64; 3]> = (0..200).map(|_| [0, 1, 2].map(|i| rng.below(shape[i]))).collect();

    let mut table = String::new();
    table += &format!(
        "shape {shape:?}, 8-byte items ({:.1} MB), ZSTD 5 + shuffle, {threads} threads, contiguous frame file; \
         write: one run; reads: median of {reps} (planes {})\n\n",
        (shape.iter().product::<i64>() * 8) as f64 / 1e6,
        reps * 3
    );
    table += "| data | shapes from | chunk | block | ratio | write, ms | full read, ms | plane 0 / 1 / 2, ms | 100 boxes 16³, ms | 1 item, µs |\n";
    table += "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n";
    print!("{table}");
    for ds in ["int", "float"] {
        let data = dataset(ds, shape);
        let params = Params { itemsize: 8, shape: shape.to_vec(), dtype: None };
        for (label, hints) in &configs {
            let p = propose_partitions(8, &shape, hints).unwrap();
            let storage = StorageParams {
                chunkshape: p.chunkshape.clone(),
                blockshape: p.blockshape.clone(),
                contiguous: true,
                urlpath: Some(url.clone()),
                ..Default::default()
            };
            // One write (seconds each for the float data on 2 cores).
            let _ = std::fs::remove_file(&path);
            let t = Instant::now();
            drop(Array::from_buffer(&ctx, &params, &storage, &data).unwrap());
            let write = t.elapsed();
            let size = std::fs::metadata(&path).unwrap().len();
            let arr = Array::open(&ctx, &url).unwrap();
            let mut out = vec![0u8; data.len()];
            let full = time(reps, || arr.to_buffer(&mut out).unwrap());
            assert!(out == data, "{ds} {label} {p:?}: the full read differs from the data");
            let planes: Vec<String> = (0..3)
                .map(|axis| {
                    let mut start = [0i64; 3];
                    let mut stop = shape;
                    start[axis] = shape[axis] / 2;
                    stop[axis] = start[axis] + 1;
                    let bshape: Vec<i64> = (0..3).map(|i| stop[i] - start[i]).collect();
                    let mut buf = vec![0u8; bshape.iter().product::<i64>() as usize * 8];
                    ms(time(reps * 3, || arr.get_slice_buffer(&start, &stop, &mut buf, &bshape).unwrap()))
                })
                .collect();
            let mut buf = vec![0u8; 16 * 16 * 16 * 8];
            let boxes_t = time(reps, || {
                for b in &boxes {
                    let stop = [b[0] + 16, b[1] + 16, b[2] + 16];
                    arr.get_slice_buffer(b, &stop, &mut buf, &[16, 16, 16]).unwrap();
                }
            });
            let mut one = [0u8; 8];
            let mut calls: Vec<Duration> = items
                .iter()
                .map(|x| {
                    let t = Instant::now();
                    arr.get_slice_buffer(x, &[x[0] + 1, x[1] + 1, x[2] + 1], &mut one, &[1, 1, 1]).unwrap();
                    t.elapsed()
                })
                .collect();
            calls.sort();
            let row = format!(
                "| {ds} | {label} | {:?} {} | {:?} {} | {:.1} | {} | {} | {} | {} | {:.0} |\n",
                p.chunkshape,
                kib(8, &p.chunkshape),
                p.blockshape,
                kib(8, &p.blockshape),
                data.len() as f64 / size as f64,
                ms(write),
                ms(full),
                planes.join(" / "),
                ms(boxes_t),
                calls[calls.len() / 2].as_secs_f64() * 1e6,
            );
            print!("{row}");
            table += &row;
        }
    }
    let _ = std::fs::remove_file(&path);
    let out = dir.join(if quick { "partitions-quick.md" } else { "partitions.md" });
    std::fs::write(&out, table).unwrap();
    eprintln!("written to {}", out.display());
}
