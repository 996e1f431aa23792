//! Faults between a writer and S3 (moto's server on 127.0.0.1, behind the
//! fault proxy of `caterva::testing::proxy`): 503 answers, connections
//! dropped before an answer, answers of writes lost after the write took
//! effect, a slow server, and the server gone in the middle of writes. Each
//! ends in a retried success (every value checked against the writes made)
//! or a clear error, never in a corrupt or unreadable array.

mod common;

use std::time::{Duration, Instant};

use caterva::testing::proxy::{Action, Proxy};
use caterva::testing::servers;
use caterva::{Array, Config, Context, Params, StorageParams};

const SIDE: i64 = 48;

fn items(a: &Array) -> Vec<u32> {
    a.to_vec().unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Write `v` over rows `r`, columns `c` of `a` and of `want`.
fn write(a: &mut Array, r: (i64, i64), c: (i64, i64), v: u32) -> caterva::Result<()> {
    let n = ((r.1 - r.0) * (c.1 - c.0)) as usize;
    let buf: Vec<u8> = std::iter::repeat(v.to_le_bytes()).take(n).flatten().collect();
    a.set_slice_buffer(&[r.0, c.0], &[r.1, c.1], &buf, &[r.1 - r.0, c.1 - c.0])
}

fn apply(want: &mut [u32], r: (i64, i64), c: (i64, i64), v: u32) {
    for i in r.0..r.1 {
        for j in c.0..c.1 {
            want[(i * SIDE + j) as usize] = v;
        }
    }
}

#[test]
fn faults_end_in_retried_successes_or_clear_errors() {
    let moto = servers::moto("faults");
    let proxy = Proxy::start(moto.port);
    servers::use_s3_endpoint(&proxy.url());
    let ctx = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let url = "s3://faults/a.b2nd";
    let params = Params { itemsize: 4, shape: vec![SIDE, SIDE], dtype: None };
    let storage = StorageParams {
        chunkshape: vec![16, 16],
        blockshape: vec![8, 8],
        contiguous: false,
        urlpath: Some(url.to_owned()),
        metalayers: vec![],
    };
    let mut a = Array::zeros(&ctx, &params, &storage).unwrap();
    let mut want = vec![0u32; (SIDE * SIDE) as usize];
    type Plan = fn(u64, &str) -> Action;
    let plans: [(&str, Plan); 4] = [
        ("503 on every third request", |n, _| if n % 3 == 0 { Action::Unavailable } else { Action::Pass }),
        ("every fourth connection dropped unanswered", |n, _| if n % 4 == 0 { Action::Drop } else { Action::Pass }),
        ("the answer of every third write lost after it took effect", |n, m| {
            if n % 3 == 0 && m.starts_with("PUT ") {
                Action::LoseAnswer
            } else {
                Action::Pass
            }
        }),
        ("a slow server", |_, _| Action::Pass),
    ];
    let mut v = 0;
    for (what, plan) in plans {
        proxy.plan(plan);
        proxy.delay(if what == "a slow server" { Duration::from_millis(120) } else { Duration::ZERO });
        for k in 0..3 {
            v += 1;
            // Parts of several chunks each time.
            let (r, c) = ((k * 11, k * 11 + 20), (k * 7 + 3, k * 7 + 30));
            write(&mut a, r, c, v).unwrap_or_else(|e| panic!("{what}: write {k}: {e}"));
            apply(&mut want, r, c, v);
        }
        assert_eq!(items(&a), want, "{what}");
        assert!(proxy.requests() > 0);
        proxy.plan(|_, _| Action::Pass);
        proxy.delay(Duration::ZERO);
        let fresh = Array::open(&ctx, url).unwrap();
        assert_eq!(items(&fresh), want, "{what}: reopened");
        assert!(fresh.verify(&mut |_, _| {}).unwrap().is_empty(), "{what}");
    }
    // The server gone in the middle of writes: each write ends, in a
    // bounded time, in success or an error; once it is back, the array
    // reads as the writes that succeeded left it (a write whose answer
    // never came may have landed as a whole).
    let gone_after = proxy.requests() + 3;
    proxy.plan(move |n, _| if n > gone_after { Action::Drop } else { Action::Pass });
    let mut failed = None;
    for k in 0..6 {
        v += 1;
        let (r, c) = ((k * 5, k * 5 + 9), (2, 40));
        let t = Instant::now();
        match write(&mut a, r, c, v) {
            Ok(()) => apply(&mut want, r, c, v),
            Err(e) => {
                assert!(t.elapsed() < Duration::from_secs(90), "an error, not a hang: {:?}", t.elapsed());
                // The request that failed is an I/O error (a chunk object
                // or the index written); a read that c-blosc2 made for the
                // write fails as the storage it could not read.
                let kind = e.kind();
                assert!(matches!(kind, caterva::ErrorKind::Io | caterva::ErrorKind::InvalidStorage), "{kind:?}: {e}");
                assert!(e.to_string().contains("s3://faults/a.b2nd"), "the error names the array: {e}");
                failed = Some((r, c, v));
                break;
            }
        }
    }
    let (r, c, v) = failed.expect("writes fail while the server is gone");
    proxy.plan(|_, _| Action::Pass);
    let back = Array::open(&ctx, url).unwrap();
    let got = items(&back);
    let mut landed = want.clone();
    apply(&mut landed, r, c, v);
    assert!(got == want || got == landed, "the array is the writes that succeeded (and maybe the last, whole)");
    assert!(back.verify(&mut |_, _| {}).unwrap().is_empty());
    // And it is written again.
    let mut back = back;
    write(&mut back, (0, SIDE), (0, 1), 99).unwrap();
    let mut now = got;
    apply(&mut now, (0, SIDE), (0, 1), 99);
    assert_eq!(items(&Array::open(&ctx, url).unwrap()), now);
    // Credentials the server refuses (403 Forbidden): opens, reads and
    // writes fail at once (nothing retried) with the server's refusal,
    // and change nothing.
    proxy.plan(|_, _| Action::Forbidden);
    let t = Instant::now();
    let e = Array::open(&ctx, url).unwrap_err();
    assert_eq!(e.kind(), caterva::ErrorKind::InvalidStorage, "{e}");
    assert!(e.to_string().contains(url) && e.to_string().contains("403 Forbidden"), "{e}");
    let e = back.to_vec().unwrap_err();
    assert!(e.to_string().contains("403 Forbidden"), "a read: {e}");
    let e = write(&mut back, (0, 1), (0, SIDE), 7).unwrap_err();
    assert!(e.to_string().contains("403 Forbidden"), "a write: {e}");
    assert!(t.elapsed() < Duration::from_secs(20), "refusals are not retried: {:?}", t.elapsed());
    proxy.plan(|_, _| Action::Pass);
    assert_eq!(items(&Array::open(&ctx, url).unwrap()), now);
    // A server that answers 500 for a GET of the sparse array's own key
    // (s3s-fs: a directory on its disk) while its index answers: it opens.
    static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    proxy.plan(|_, r| {
        if r == "GET /faults/a.b2nd" {
            REFUSED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Action::ServerError
        } else {
            Action::Pass
        }
    });
    let t = Instant::now();
    assert_eq!(items(&Array::open(&ctx, url).unwrap()), now);
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(REFUSED.load(std::sync::atomic::Ordering::SeqCst) > 0, "the plan answered no GET of the prefix");
    // Chunk objects that cannot be had (the server gone after the open):
    // `verify` says it could not read the array (exit 2), in bounded
    // time, rather than calling its chunks damaged (exit 1).
    proxy.plan(|_, r| if r.ends_with(".chunk") { Action::Drop } else { Action::Pass });
    let fresh = Array::open(&ctx, url).unwrap();
    let t = Instant::now();
    let e = fresh.verify(&mut |_, _| {}).unwrap_err();
    assert!(matches!(e.kind(), caterva::ErrorKind::Io | caterva::ErrorKind::InvalidStorage), "{e}");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    let t = Instant::now();
    let out = std::process::Command::new(common::profile_dir().join("caterva")).args(["verify", url]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("could not read") && !stderr.contains("damaged"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    proxy.plan(|_, _| Action::Pass);
}

/// A server that takes every request and never answers: each operation
/// ends in an error naming the deadline, after one deadline per request it
/// makes in sequence (here 2 s, set as a storage option; 30 s by default,
/// as the object-store guide says, docs/src/guides/object-stores.md), and the array reads again once the server answers.
#[test]
fn a_server_that_never_answers_is_reported_after_the_deadline() {
    let moto = servers::moto("silent");
    let proxy = Proxy::start(moto.port);
    let endpoint = proxy.url();
    let options = caterva::StorageOptions::new()
        .set("endpoint_url", &endpoint)
        .and_then(|o| o.set("key", "test"))
        .and_then(|o| o.set("secret", "test"))
        .and_then(|o| o.set("region", "us-east-1"))
        .and_then(|o| o.set("deadline", "2"))
        .unwrap();
    caterva::set_storage_options("s3://silent/", options).unwrap();
    let ctx = Context::new(Config::default()).unwrap();
    let params = Params { itemsize: 4, shape: vec![SIDE, SIDE], dtype: None };
    let mut arrays = Vec::new();
    for (name, contiguous) in [("frame.b2nd", true), ("dir.b2nd", false)] {
        let url = format!("s3://silent/{name}");
        let storage = StorageParams {
            chunkshape: vec![16, 16],
            blockshape: vec![8, 8],
            contiguous,
            urlpath: Some(url.clone()),
            metalayers: vec![],
        };
        let mut a = Array::zeros(&ctx, &params, &storage).unwrap();
        write(&mut a, (0, SIDE), (3, 9), 5).unwrap();
        drop(a);
        arrays.push((url.clone(), Array::open(&ctx, &url).unwrap()));
    }
    proxy.plan(|_, _| Action::Silent);
    let deadline = Duration::from_secs(2);
    for (url, a) in &mut arrays {
        let check = |what: &str, t: Instant, e: caterva::Error, requests: u32| {
            let took = t.elapsed();
            println!("{url}: {what}: {took:?}: {e}");
            assert!(e.to_string().contains("no answer within 2 s"), "{url}: {what}: {e}");
            assert!(took >= deadline, "{url}: {what}: {took:?}");
            // (The object-store guide's figures, docs/src/guides/object-stores.md: 60 s for an open or a read, 90 s for a write.)
            assert!(took < deadline * requests + Duration::from_millis(1500), "{url}: {what}: {took:?}, {requests}");
        };
        let t = Instant::now();
        check("open", t, Array::open(&ctx, url).unwrap_err(), 2);
        let t = Instant::now();
        check("read", t, a.to_vec().unwrap_err(), 2);
        let t = Instant::now();
        check("write", t, write(a, (0, 1), (0, SIDE), 7).unwrap_err(), 3);
    }
    proxy.plan(|_, _| Action::Pass);
    for (url, _) in &arrays {
        let got = items(&Array::open(&ctx, url).unwrap());
        assert!(got.iter().enumerate().all(|(i, &v)| v == if (3..9).contains(&(i as i64 % SIDE)) { 5 } else { 0 }));
    }
}
