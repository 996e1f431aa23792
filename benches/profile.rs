//! A profiling driver, not a benchmark: runs one operation of the issue's
//! workload (3-D int64, chunks {50, 150, 100}, blocks {13, 21, 30}, ZSTD 5 +
//! shuffle, 2 threads or `PROFILE_THREADS`) a few times, for a profiler to look at:
//!
//! ```sh
//! CARGO_PROFILE_BENCH_DEBUG=true cargo bench --bench profile --no-run
//! valgrind --tool=callgrind target/release/deps/profile-* to_buffer 60
//! ```
//!
//! The first run of a given size caches the array as a frame in the temp
//! directory. Arguments: the operation (`to_buffer`, `floor`, `planes`, `boxes`,
//! `items`, `from_buffer`, `append`, `set_plane`, `open`) and the length of
//! axis 0 (default 300; the other axes are the issue's 745 × 400). Prefixed
//! with `file:` (`file:boxes`), a read runs on the array opened from that
//! frame file, as the cross-library benchmark reads it, rather than in memory;
//! with `dir:` from a copy in a sparse frame (`dir:open` times opening it).

// A bench target is a binary: nothing here is public API.
#![allow(missing_docs)]

use caterva::{Array, Config, Context, Params, StorageParams};

const CHUNKS: [i32; 3] = [50, 150, 100];
const BLOCKS: [i32; 3] = [13, 21, 30];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let op = args.first().map_or("to_buffer", String::as_str);
    let len0: i64 = args.get(1).map_or(300, |s| s.parse().expect("axis-0 length"));
    let shape = vec![len0, 745, 400];
    let n: i64 = shape.iter().product();
    let data = || -> Vec<u8> { (0..n).flat_map(i64::to_le_bytes).collect() };
    let nthreads = std::env::var("PROFILE_THREADS").map_or(2, |t| t.parse().expect("PROFILE_THREADS"));
    let ctx = Context::new(Config { nthreads, ..Config::default() }).unwrap();
    let params = Params { itemsize: 8, shape: shape.clone(), dtype: None };
    let storage = StorageParams { chunkshape: CHUNKS.to_vec(), blockshape: BLOCKS.to_vec(), ..Default::default() };
    // The array comes from a frame cached on disk, so that a profile of a
    // read is not drowned in the compression that built it.
    let cache = std::env::temp_dir().join(format!("caterva-profile-{len0}.b2frame"));
    let mut arr = match std::fs::read(&cache) {
        Ok(frame) => Array::from_cframe(&ctx, &frame).unwrap(),
        Err(_) => {
            let arr = Array::from_buffer(&ctx, &params, &storage, &data()).unwrap();
            std::fs::write(&cache, arr.to_cframe().unwrap()).unwrap();
            arr
        }
    };
    // `dir:OP`: the same, from a sparse frame (a directory, one file per chunk).
    let (op, path) = if let Some(op) = op.strip_prefix("dir:") {
        let dir = cache.with_extension("b2dir");
        if !dir.exists() {
            let st =
                StorageParams { contiguous: false, urlpath: Some(dir.to_str().unwrap().into()), ..storage.clone() };
            drop(arr.copy(&ctx, &st).unwrap());
        }
        (op, Some(dir))
    } else if let Some(op) = op.strip_prefix("file:") {
        (op, Some(cache.clone()))
    } else {
        (op, (op == "open").then(|| cache.clone()))
    };
    let path = path.map(|p| p.to_str().unwrap().to_owned());
    if let Some(path) = &path {
        arr = Array::open(&ctx, path).unwrap();
    }
    let mut out = vec![0u8; if op == "open" { 0 } else { n as usize * 8 }];
    let data = if matches!(op, "from_buffer" | "append" | "set_plane") { data() } else { Vec::new() };
    let t0 = std::time::Instant::now();
    match op {
        "open" => {
            for _ in 0..1000 {
                drop(Array::open(&ctx, path.as_deref().unwrap()).unwrap());
            }
        }
        "items" => {
            let mut x = 0x5eed_cafe_f00d_u64;
            for _ in 0..1000 {
                let start: Vec<i64> = shape
                    .iter()
                    .map(|&s| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % s as u64) as i64
                    })
                    .collect();
                let stop: Vec<i64> = start.iter().map(|s| s + 1).collect();
                arr.get_slice_buffer(&start, &stop, &mut out[..8], &[1, 1, 1]).unwrap();
            }
        }
        "to_buffer" => arr.to_buffer(&mut out).unwrap(),
        "floor" => {
            for k in 0..arr.info().nchunks {
                let chunk = caterva::testing::chunk(&arr, k).unwrap();
                caterva::testing::decompress(&chunk, arr.geometry().chunk_nbytes()).unwrap();
            }
        }
        "planes" => {
            for axis in 0..3 {
                let mut start = vec![0i64; 3];
                let mut stop = shape.clone();
                start[axis] = shape[axis] / 2;
                stop[axis] = start[axis] + 1;
                let bshape: Vec<i64> = (0..3).map(|i| stop[i] - start[i]).collect();
                let len = bshape.iter().product::<i64>() as usize * 8;
                arr.get_slice_buffer(&start, &stop, &mut out[..len], &bshape).unwrap();
            }
        }
        "boxes" => {
            let mut x = 0x5eed_cafe_f00d_u64;
            for _ in 0..300 {
                let start: Vec<i64> = shape
                    .iter()
                    .map(|&s| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % (s as u64 - 15)) as i64
                    })
                    .collect();
                let stop: Vec<i64> = start.iter().map(|s| s + 16).collect();
                arr.get_slice_buffer(&start, &stop, &mut out[..16 * 16 * 16 * 8], &[16, 16, 16]).unwrap();
            }
        }
        "from_buffer" => drop(Array::from_buffer(&ctx, &params, &storage, &data).unwrap()),
        "append" => {
            let slab = 50 * 745 * 400 * 8;
            let first = Params { shape: vec![50, 745, 400], ..params.clone() };
            let mut a = Array::from_buffer(&ctx, &first, &storage, &data[..slab]).unwrap();
            for s in 1..(len0 / 50) as usize {
                a.append(&data[s * slab..(s + 1) * slab], 0).unwrap();
            }
        }
        "set_plane" => {
            let plane = 745 * 400 * 8;
            let (start, stop) = (vec![len0 / 2, 0, 0], vec![len0 / 2 + 1, 745, 400]);
            arr.set_slice_buffer(&start, &stop, &data[..plane], &[1, 745, 400]).unwrap();
        }
        other => panic!("unknown operation {other}"),
    }
    eprintln!("{op}: {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
}
