//! Criterion benches of the Rust API on a mid-sized 3-D int64 array (the C
//! bench in `bench/` runs the full-size workload against c-blosc2's b2nd).
//!
//! `cargo bench --bench api` (add `-- <filter>` to pick some).

// criterion_group! defines an undocumented public function.
#![allow(missing_docs)]

use caterva::{Array, Config, Context, Params, StorageParams};
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const SHAPE: [i64; 3] = [100, 149, 80];

fn ctx() -> Context {
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

fn storage() -> StorageParams {
    StorageParams { chunkshape: vec![50, 50, 40], blockshape: vec![13, 21, 20], ..Default::default() }
}

fn data() -> Vec<u8> {
    let n: i64 = SHAPE.iter().product();
    (0..n).flat_map(i64::to_le_bytes).collect()
}

fn array(ctx: &Context) -> Array {
    Array::from_buffer(ctx, &Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None }, &storage(), &data()).unwrap()
}

fn whole(c: &mut Criterion) {
    let ctx = ctx();
    let buf = data();
    let mut g = c.benchmark_group("whole");
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("from_buffer", |b| {
        let params = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
        b.iter(|| Array::from_buffer(&ctx, &params, &storage(), black_box(&buf)).unwrap());
    });
    let arr = array(&ctx);
    let mut out = vec![0u8; buf.len()];
    g.bench_function("to_buffer", |b| b.iter(|| arr.to_buffer(black_box(&mut out)).unwrap()));
    g.finish();
}

fn slices(c: &mut Criterion) {
    let ctx = ctx();
    let arr = array(&ctx);
    let mut g = c.benchmark_group("slices");
    for axis in 0..3 {
        let mut start = vec![0i64; 3];
        let mut stop = SHAPE.to_vec();
        start[axis] = SHAPE[axis] / 2;
        stop[axis] = start[axis] + 1;
        let shape: Vec<i64> = (0..3).map(|i| stop[i] - start[i]).collect();
        let mut out = vec![0u8; shape.iter().product::<i64>() as usize * 8];
        g.bench_function(format!("plane_axis{axis}"), |b| {
            b.iter(|| arr.get_slice_buffer(&start, &stop, black_box(&mut out), &shape).unwrap());
        });
    }
    let mut out = vec![0u8; 16 * 16 * 16 * 8];
    let mut seed = 1u64;
    g.bench_function("random_16cubed", |b| {
        b.iter(|| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let start: Vec<i64> = (0..3).map(|i| ((seed >> (16 * i)) % (SHAPE[i] as u64 - 16)) as i64).collect();
            let stop: Vec<i64> = start.iter().map(|s| s + 16).collect();
            arr.get_slice_buffer(&start, &stop, black_box(&mut out), &[16, 16, 16]).unwrap();
        });
    });
    let sel: Vec<Vec<i64>> = (0..3).map(|i| (0..32).map(|j| (j * 37 + i as i64) % SHAPE[i]).collect()).collect();
    let lists: Vec<&[i64]> = sel.iter().map(Vec::as_slice).collect();
    let mut out = vec![0u8; 32 * 32 * 32 * 8];
    g.bench_function("orthogonal_32cubed", |b| {
        b.iter(|| arr.get_orthogonal_selection(&lists, black_box(&mut out), &[32, 32, 32]).unwrap());
    });
    g.finish();
}

fn writes(c: &mut Criterion) {
    let ctx = ctx();
    let base = array(&ctx);
    let mut g = c.benchmark_group("writes");
    g.sample_size(20);
    let plane = vec![7u8; (SHAPE[1] * SHAPE[2] * 8) as usize];
    g.bench_function("overwrite_plane_axis0", |b| {
        b.iter_batched(
            || base.copy(&ctx, &storage()).unwrap(),
            |mut a| {
                a.set_slice_buffer(&[40, 0, 0], &[41, SHAPE[1], SHAPE[2]], &plane, &[1, SHAPE[1], SHAPE[2]]).unwrap()
            },
            BatchSize::LargeInput,
        );
    });
    let slab = vec![3u8; (50 * SHAPE[1] * SHAPE[2] * 8) as usize];
    g.bench_function("append_50_rows", |b| {
        b.iter_batched(
            || base.copy(&ctx, &storage()).unwrap(),
            |mut a| a.append(&slab, 0).unwrap(),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("delete_7_rows_unaligned", |b| {
        b.iter_batched(
            || base.copy(&ctx, &storage()).unwrap(),
            |mut a| a.delete(0, 3, 7).unwrap(),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("copy_new_partitions", |b| {
        let st = StorageParams { chunkshape: vec![40, 60, 80], blockshape: vec![10, 20, 20], ..Default::default() };
        b.iter(|| base.copy(&ctx, &st).unwrap());
    });
    g.finish();
}

/// A viewer panning a 48 x 48 window over the plane [50, :, :] of a
/// smooth float64 field, 4 items a step along each axis in turn (the
/// neighbouring windows share most of their blocks): without the block
/// cache, and with one (`Config::block_cache`) that holds the plane's blocks.
fn block_cache(c: &mut Criterion) {
    let n: i64 = SHAPE.iter().product();
    let field: Vec<u8> = (0..n)
        .flat_map(|i| {
            let (x, y, z) = (i / (SHAPE[1] * SHAPE[2]), i / SHAPE[2] % SHAPE[1], i % SHAPE[2]);
            ((x as f64 / 37.0).sin() * (y as f64 / 53.0).cos() + z as f64 / 400.0).to_le_bytes()
        })
        .collect();
    let params = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let mut windows = Vec::new();
    for y in (0..=SHAPE[1] - 48).step_by(4) {
        for x in (0..=SHAPE[2] - 48).step_by(4) {
            windows.push(([50, y, x], [51, y + 48, x + 48]));
        }
    }
    let mut g = c.benchmark_group("block_cache");
    g.throughput(Throughput::Elements(windows.len() as u64));
    for (name, bytes) in [("pan/off", 0), ("pan/on", 256 << 20)] {
        let ctx = Context::new(Config { nthreads: 2, block_cache: bytes, ..Config::default() }).unwrap();
        let arr = Array::from_buffer(&ctx, &params, &storage(), &field).unwrap();
        let mut buf = vec![0u8; 48 * 48 * 8];
        g.bench_function(name, |b| {
            b.iter(|| {
                for (s, e) in &windows {
                    arr.get_slice_buffer(s, e, &mut buf, &[1, 48, 48]).unwrap();
                }
                black_box(&buf);
            });
        });
    }
    g.finish();
}

criterion_group!(benches, whole, slices, writes, block_cache);
criterion_main!(benches);
