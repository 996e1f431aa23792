//! Writes on an S3 server that does not hold the conditional writes the
//! publish protocol relies on (s3rver: it ignores `If-None-Match` and
//! `If-Match`), beside moto, which holds them: by default such a server
//! is refused for writes with an error that says why, before anything is
//! written; with `CATERVA_S3_WRITERS=single` one writer at a time writes,
//! checked by a lease, and no write that reported success is lost.
//!
//! One test, in its own process: it sets the AWS environment and
//! `CATERVA_S3_WRITERS` as it goes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use caterva::testing::servers;
use caterva::{Array, Config, Context, ErrorKind, Params, StorageParams};

const N: i64 = 64;

fn storage(url: &str) -> StorageParams {
    StorageParams {
        chunkshape: vec![32],
        blockshape: vec![8],
        contiguous: false,
        urlpath: Some(url.to_owned()),
        metalayers: vec![],
    }
}

fn items(a: &Array) -> Vec<u32> {
    a.to_vec().unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `threads` writers, each with its own handle, writing item `i` = `1000 *
/// (t + 1) + i` for their share of `0..N` (every chunk shared): what each
/// write returned, by item.
fn write_at_once(ctx: &Context, url: &str, threads: i64) -> BTreeMap<i64, Result<u32, caterva::Error>> {
    let out = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for t in 0..threads {
            let out = &out;
            s.spawn(move || {
                let mut a = Array::open(ctx, url).unwrap();
                for i in (t..N).step_by(threads as usize) {
                    let v = 1000 * (t as u32 + 1) + i as u32;
                    let r = a.set_slice_buffer(&[i], &[i + 1], &v.to_le_bytes(), &[1]).map(|()| v);
                    out.lock().unwrap().insert(i, r);
                }
            });
        }
    });
    out.into_inner().unwrap()
}

#[test]
fn a_server_without_conditional_writes_is_refused_or_written_by_one_writer_at_a_time() {
    let ctx = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let params = Params { itemsize: 4, shape: vec![N], dtype: None };
    let s3rver = servers::s3rver("loose");
    servers::use_s3_endpoint(&s3rver.url());
    // s3rver's own keys.
    std::env::set_var("AWS_ACCESS_KEY_ID", "S3RVER");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "S3RVER");
    let url = "s3://loose/a.b2nd";

    // By default: refused, naming what failed, nothing made.
    std::env::remove_var("CATERVA_S3_WRITERS");
    let e = Array::zeros(&ctx, &params, &storage(url)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
    let msg = e.to_string();
    println!("refused: {msg}");
    assert!(msg.contains("conditional writes") && msg.contains("CATERVA_S3_WRITERS=single"), "{msg}");
    assert!(msg.contains("If-None-Match") || msg.contains("If-Match"), "{msg}");
    assert!(Array::open(&ctx, url).is_err(), "a refused write made an array");

    // One writer, stated: made and written; every write lands.
    std::env::set_var("CATERVA_S3_WRITERS", "single");
    let mut a = Array::zeros(&ctx, &params, &storage(url)).unwrap();
    for i in 0..32 {
        a.set_slice_buffer(&[i * 2], &[i * 2 + 1], &(i as u32 + 1).to_le_bytes(), &[1]).unwrap();
    }
    let got = items(&Array::open(&ctx, url).unwrap());
    let lost = (0..32).filter(|&i| got[i * 2] != i as u32 + 1).count();
    assert_eq!(lost, 0, "{lost} of 32 writes of the single writer lost");

    // Many writers at once on the default: every one refused, nothing changed.
    std::env::remove_var("CATERVA_S3_WRITERS");
    let results = write_at_once(&ctx, url, 4);
    for (i, r) in &results {
        let e = r.as_ref().expect_err("a write on a server without conditions");
        assert!(e.to_string().contains("conditional writes"), "item {i}: {e}");
    }
    assert_eq!(items(&Array::open(&ctx, url).unwrap()), got, "a refused writer changed the array");

    // Many writers at once, each claiming to be the only one: the lease
    // refuses those that find another writing; no write that said it
    // landed is lost.
    std::env::set_var("CATERVA_S3_WRITERS", "single");
    let results = write_at_once(&ctx, url, 4);
    let now = items(&Array::open(&ctx, url).unwrap());
    let mut landed = 0;
    for (i, r) in &results {
        match r {
            Ok(v) => {
                landed += 1;
                assert_eq!(now[*i as usize], *v, "item {i}: a write that reported success was lost");
            }
            Err(e) => assert!(
                e.to_string().contains("lease") || e.to_string().contains("another writer"),
                "item {i}: refused for another reason: {e}"
            ),
        }
    }
    assert!(landed > 0, "no writer got the lease");
    println!("4 writers stating to be the only one: {landed} of {N} writes landed, the rest refused, 0 lost");
    assert!(Array::open(&ctx, url).unwrap().verify(&mut |_, _| {}).unwrap().is_empty());
    std::env::remove_var("CATERVA_S3_WRITERS");
}
