//! Many writers of one array on S3, as on many machines: separate
//! processes, each in its own working directory, sharing nothing but the
//! S3 endpoint (moto's server on 127.0.0.1), two threads each with its own
//! handle, every write a part of a chunk other writers write too. One more
//! writer is killed (SIGKILL) in the middle of a write, after it made its
//! new chunk objects and before it replaced the index. No update of the
//! others is lost, the killed writer's items are its values or untouched,
//! the array stays readable and sound, and what the killed writer left is
//! removed by `remove_orphans`.
//!
//! The writer role runs in this test binary's own child processes
//! (`s3_writer`, started by the test with its spec in the environment).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use caterva::testing::servers;
use caterva::{Array, Config, Context, Params, StorageOptions, StorageParams};
use common::scratch_dir;

const WRITER_ENV: &str = "CATERVA_S3_WRITER";
/// Items of the array, chunks of 40 in blocks of 8: three chunks.
const N: i64 = 120;
const WRITERS: i64 = 5;
const THREADS: i64 = 2;
/// The writer killed at its third publish (a first try or a retry).
const KILLED: i64 = WRITERS - 1;

/// What writer `w`'s thread `t` writes: the items `i` with `i % 10` its slot.
fn slot(w: i64, t: i64) -> i64 {
    w * THREADS + t
}

fn value(i: i64) -> u32 {
    (i as u32 + 1) * 7
}

fn ctx() -> Context {
    Context::new(Config { checksums: true, ..Config::default() }).unwrap()
}

/// The writer role (started by [`writers_on_s3_lose_nothing`]).
#[test]
#[ignore = "a writer process of writers_on_s3_lose_nothing, which starts it itself"]
fn s3_writer() {
    let spec = std::env::var(WRITER_ENV).expect("started by writers_on_s3_lose_nothing");
    let (url, w) = spec.split_once('\t').unwrap();
    let w: i64 = w.parse().unwrap();
    if w == KILLED {
        caterva::testing::signal_at("publish", 3, libc::SIGKILL);
    }
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let ctx = ctx();
                let mut a = Array::open(&ctx, url).unwrap();
                let slots = WRITERS * THREADS;
                for i in (slot(w, t)..N).step_by(slots as usize) {
                    a.set_slice_buffer(&[i], &[i + 1], &value(i).to_le_bytes(), &[1]).unwrap();
                }
            });
        }
    });
}

#[test]
fn writers_on_s3_lose_nothing() {
    let mut moto = servers::moto("writers");
    servers::use_s3_endpoint(&moto.url());
    let dir = scratch_dir("remote-writers");
    let url = "s3://writers/shared.b2nd";
    let ctx = ctx();
    let params = Params { itemsize: 4, shape: vec![N], dtype: None };
    let storage = StorageParams {
        chunkshape: vec![40],
        blockshape: vec![8],
        contiguous: false,
        urlpath: Some(url.to_owned()),
        metalayers: vec![],
    };
    Array::zeros(&ctx, &params, &storage).unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            // A machine of its own: its own working directory, nothing shared but S3.
            let home = dir.join(format!("machine-{w}"));
            std::fs::create_dir_all(&home).unwrap();
            let child = Command::new(std::env::current_exe().unwrap())
                .args(["s3_writer", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                .current_dir(&home)
                .env(WRITER_ENV, format!("{url}\t{w}"))
                .env("TMPDIR", &home)
                .spawn()
                .expect("start a writer");
            (w, child)
        })
        .collect();
    for (w, mut child) in children {
        let status = child.wait().unwrap();
        if w == KILLED {
            assert_eq!(status.signal(), Some(libc::SIGKILL), "writer {w}: {status}");
        } else {
            assert!(status.success(), "writer {w}: {status}");
        }
    }
    let a = Array::open(&ctx, url).unwrap();
    let items: Vec<u32> = a.to_vec().unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let slots = WRITERS * THREADS;
    for (i, &got) in items.iter().enumerate() {
        let i = i as i64;
        if i % slots / THREADS == KILLED {
            // Published before the kill, or never.
            assert!(got == value(i) || got == 0, "item {i}: {got}");
        } else {
            assert_eq!(got, value(i), "item {i}: an update was lost");
        }
    }
    assert!(a.verify(&mut |_, _| {}).unwrap().is_empty());
    // The killed writer's chunk object, made and never named: removed.
    assert!(a.remove_orphans(Duration::ZERO).unwrap() >= 1);
    assert_eq!(Array::open(&ctx, url).unwrap().to_vec().unwrap(), a.to_vec().unwrap());
    moto.kill();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A handle whose version of an array on S3 another handle replaced: its
/// reads of what the new version no longer names (chunk objects the writer
/// removed, the frame object it replaced) give the "refresh" error, never a
/// blosc2 code or "corrupt"; refreshed, it reads the new values. On a sparse
/// and a contiguous frame, with and without checksums.
#[test]
fn a_stale_handle_on_s3_is_told_to_refresh() {
    let mut moto = servers::moto("stale");
    // Its own server by storage options for its bucket: the other test of
    // this process points the AWS environment at another.
    let options = format!("endpoint_url={}; key=test; secret=test; region=us-east-1", moto.url());
    caterva::set_storage_options("s3://stale/", StorageOptions::parse(&options).unwrap()).unwrap();
    for contiguous in [false, true] {
        for checksums in [false, true] {
            let ctx = Context::new(Config { checksums, ..Config::default() }).unwrap();
            let url = format!("s3://stale/a-{contiguous}-{checksums}.b2nd");
            let params = Params { itemsize: 4, shape: vec![N], dtype: None };
            let storage = StorageParams {
                chunkshape: vec![40],
                blockshape: vec![8],
                contiguous,
                urlpath: Some(url.clone()),
                metalayers: vec![],
            };
            let all: Vec<u8> = (0..N).flat_map(|i| value(i).to_le_bytes()).collect();
            Array::from_buffer(&ctx, &params, &storage, &all).unwrap();
            let mut h1 = Array::open(&ctx, &url).unwrap();
            let mut h2 = Array::open(&ctx, &url).unwrap();
            // Every chunk rewritten through h2: the chunk objects h1's
            // version names are removed (sparse), the frame object replaced.
            let new: Vec<u8> = (0..N).flat_map(|i| (value(i) + 1).to_le_bytes()).collect();
            h2.set_slice_buffer(&[0], &[N], &new, &[N]).unwrap();
            let what = format!("contiguous {contiguous}, checksums {checksums}");
            match h1.to_vec() {
                Err(e) => assert_eq!(e.kind(), caterva::ErrorKind::Changed, "{what}: {e}"),
                // A read may still be served whole from h1's version.
                Ok(v) => assert_eq!(v, all, "{what}: a stale read mixed versions"),
            }
            let mut one = [0u8; 4];
            match h1.get_slice_buffer(&[N - 1], &[N], &mut one, &[1]) {
                Err(e) => assert_eq!(e.kind(), caterva::ErrorKind::Changed, "{what}: {e}"),
                Ok(()) => assert_eq!(one, value(N - 1).to_le_bytes(), "{what}"),
            }
            h1.refresh().unwrap();
            assert_eq!(h1.to_vec().unwrap(), new, "{what}");
            // A stale writer's write applies to the new version.
            let mut h3 = Array::open(&ctx, &url).unwrap();
            h2.set_slice_buffer(&[0], &[1], &value(0).to_le_bytes(), &[1]).unwrap();
            h3.set_slice_buffer(&[5], &[6], &value(5).to_le_bytes(), &[1]).unwrap();
            let got = Array::open(&ctx, &url).unwrap().to_vec().unwrap();
            assert_eq!(&got[..4], &value(0).to_le_bytes(), "{what}");
            assert_eq!(&got[20..24], &value(5).to_le_bytes(), "{what}");
        }
    }
    moto.kill();
}
