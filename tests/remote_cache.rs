//! The read cache of remote arrays (storage option `cache`,
//! `src/store/location/read_cache.rs`) on moto's S3 server behind the
//! counting proxy: a second handle's reads are served from the cache (no
//! chunk requests, a fraction of the bytes), a version another writer
//! published is read as it is (never the cached older one), checksummed
//! arrays and both layouts alike, and the directory stays within its
//! budget. Every value is checked against what was written.

use std::path::Path;

use caterva::testing::proxy::Proxy;
use caterva::testing::servers;
use caterva::{Array, Config, Context, Params, StorageOptions, StorageParams};

mod common;
use common::scratch_dir;

const SHAPE: [i64; 3] = [72, 40, 36];

fn items(salt: u32) -> Vec<u32> {
    (0..SHAPE.iter().product::<i64>() as u32).map(|v| v.wrapping_mul(2_654_435_761).rotate_left(salt) ^ salt).collect()
}

fn bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read(a: &Array) -> Vec<u32> {
    a.to_vec().unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Bytes of the files under `dir`.
fn du(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                du(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

#[test]
fn a_second_handle_reads_from_the_cache_and_never_an_older_version() {
    let moto = servers::moto("cache");
    let proxy = Proxy::start(moto.port);
    servers::use_s3_endpoint(&proxy.url());
    let scratch = scratch_dir("remote-cache");
    let dir = scratch.join("cache");
    caterva::set_storage_options("s3://cache/", StorageOptions::parse(&format!("cache={}", dir.display())).unwrap())
        .unwrap();
    for checksums in [false, true] {
        let ctx = Context::new(Config { checksums, ..Config::default() }).unwrap();
        for contiguous in [false, true] {
            let what = format!("contiguous {contiguous}, checksums {checksums}");
            let url = format!("s3://cache/a-{contiguous}-{checksums}.b2nd");
            let params = Params { itemsize: 4, shape: SHAPE.to_vec(), dtype: Some("<u4".into()) };
            let storage = StorageParams {
                chunkshape: vec![12, 20, 18],
                blockshape: vec![6, 10, 9],
                contiguous,
                urlpath: Some(url.clone()),
                metalayers: vec![],
            };
            let first = items(3);
            drop(Array::from_buffer(&ctx, &params, &storage, &bytes(&first)).unwrap());

            // A cold read, then the same read by a new handle.
            proxy.plan(|_, _| caterva::testing::proxy::Action::Pass);
            proxy.take_bytes();
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), first, "{what}");
            let (cold, cold_bytes) = (proxy.requests(), proxy.take_bytes());
            proxy.plan(|_, _| caterva::testing::proxy::Action::Pass);
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), first, "{what}");
            let (warm, warm_bytes) = (proxy.requests(), proxy.take_bytes());
            eprintln!("{what}: cold {cold} requests, {cold_bytes} bytes; warm {warm} requests, {warm_bytes} bytes");
            // Warm: the open's one request for the frame's (or index's)
            // version and first 64 KiB, nothing for the chunks.
            // (A checksummed frame is read by c-blosc2, which opens a
            // sparse frame's chunk objects after a HEAD each, and opens the
            // frame again for its checksum table: those requests remain.)
            if !checksums {
                assert!(warm <= 2 && warm < cold, "{what}: {warm} requests warm, {cold} cold");
                assert!(warm_bytes <= (64 << 10) + 4096, "{what}: {warm_bytes} bytes warm");
            }
            assert!(warm_bytes * 2 < cold_bytes, "{what}: {warm_bytes} bytes warm, {cold_bytes} cold");
            assert!(du(&dir) > 0);

            // Another writer publishes a new version: a new handle reads it,
            // not the pages cached of the old one.
            let mut writer = Array::open(&ctx, &url).unwrap();
            let mut second = first.clone();
            let plane: Vec<u32> = (0..40 * 36).map(|v| v ^ 0xdead_beef).collect();
            writer.set_slice_buffer(&[5, 0, 0], &[6, 40, 36], &bytes(&plane), &[1, 40, 36]).unwrap();
            second[5 * 40 * 36..6 * 40 * 36].copy_from_slice(&plane);
            drop(writer);
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), second, "{what}: after a write");
            // And again from the cache.
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), second, "{what}: after a write, warm");
            // The whole array replaced by another of the same shape.
            let third = items(11);
            drop(Array::from_buffer(&ctx, &params, &storage, &bytes(&third)).unwrap());
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), third, "{what}: replaced");
        }
    }

    // Chunks of 1 MiB compressed to much less (their objects' length is
    // not asked for: the read's first request is cut at their end).
    let ctx = Context::new(Config::default()).unwrap();
    for contiguous in [false, true] {
        let url = format!("s3://cache/big-{contiguous}.b2nd");
        let params = Params { itemsize: 4, shape: vec![1024, 512], dtype: Some("<u4".into()) };
        let storage = StorageParams {
            chunkshape: vec![512, 512],
            blockshape: vec![128, 512],
            contiguous,
            urlpath: Some(url.clone()),
            metalayers: vec![],
        };
        let smooth: Vec<u32> = (0..1024 * 512).map(|v| v / 1000).collect();
        drop(Array::from_buffer(&ctx, &params, &storage, &bytes(&smooth)).unwrap());
        for _ in 0..2 {
            let a = Array::open(&ctx, &url).unwrap();
            assert_eq!(read(&a), smooth, "contiguous {contiguous}");
            // A box inside one block.
            let mut out = vec![0u8; 4 * 4];
            a.get_slice_buffer(&[130, 7], &[132, 9], &mut out, &[2, 2]).unwrap();
            assert_eq!(
                out,
                bytes(&[smooth[130 * 512 + 7], smooth[130 * 512 + 8], smooth[131 * 512 + 7], smooth[131 * 512 + 8]])
            );
        }
    }

    // A small budget holds: 1 MiB, with more than that read.
    let small = scratch.join("small");
    caterva::set_storage_options(
        "s3://cache/",
        StorageOptions::parse(&format!("cache={}; cache_size=1M", small.display())).unwrap(),
    )
    .unwrap();
    let ctx = Context::new(Config::default()).unwrap();
    for contiguous in [false, true] {
        let url = format!("s3://cache/a-{contiguous}-false.b2nd");
        for _ in 0..2 {
            assert_eq!(read(&Array::open(&ctx, &url).unwrap()), items(11));
            assert!(du(&small) <= 1 << 20, "{} bytes in the cache", du(&small));
        }
    }
    // Off for a prefix.
    caterva::set_storage_options("s3://cache/", StorageOptions::parse("cache=off").unwrap()).unwrap();
    proxy.plan(|_, _| caterva::testing::proxy::Action::Pass);
    assert_eq!(read(&Array::open(&ctx, "s3://cache/a-true-false.b2nd").unwrap()), items(11));
    let off = proxy.requests();
    proxy.plan(|_, _| caterva::testing::proxy::Action::Pass);
    assert_eq!(read(&Array::open(&ctx, "s3://cache/a-true-false.b2nd").unwrap()), items(11));
    assert_eq!(proxy.requests(), off, "no cache: the same requests again");
    caterva::set_storage_options("s3://cache/", StorageOptions::new()).unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
}
