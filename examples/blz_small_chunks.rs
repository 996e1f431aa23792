//! The BLZ import of carrays with small chunks (bench/blz/small_chunks.sh
//! runs it, issue 26):
//!
//!     blz_small_chunks CARRAY OUTDIR NTHREADS
//!
//! imports CARRAY into a frame file with the default partitions and, as
//! the import did before issue 26, with chunks and blocks of the carray's
//! chunk length; then reads each back whole (`Array::to_vec`). Each is run
//! REPS times (default 5); prints the medians and the compression ratios:
//! `LABEL chunks BLOCKS ratio R import S read S`.

use std::path::Path;
use std::time::Instant;

use caterva::blz::carray::CArray;
use caterva::{blz, Array, Config, Context, StorageParams};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: blz_small_chunks CARRAY OUTDIR NTHREADS");
        std::process::exit(2);
    }
    let (carray, out) = (Path::new(&args[1]), Path::new(&args[2]));
    let nthreads: usize = args[3].parse().expect("NTHREADS is a number");
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let ctx = Context::new(Config { nthreads, ..Config::default() }).expect("context");
    let chunklen = CArray::open(carray).expect("a carray").chunklen as i32;
    for (label, chunks) in [("default", Vec::new()), ("source-chunks", vec![chunklen])] {
        let p = out.join(format!("{label}.b2frame")).display().to_string();
        let storage = StorageParams {
            contiguous: true,
            urlpath: Some(p.clone()),
            chunkshape: chunks.clone(),
            blockshape: chunks,
            ..Default::default()
        };
        let (mut import, mut read) = (Vec::new(), Vec::new());
        let mut info = None;
        for _ in 0..reps {
            let _ = Array::remove(&p);
            let t = Instant::now();
            let a = blz::import_carray(&ctx, carray, &storage, &mut |_, _| {}).expect("import");
            import.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let v = a.to_vec().expect("read");
            read.push(t.elapsed().as_secs_f64());
            assert_eq!(v.len() as i64, a.nitems() * a.itemsize() as i64);
            info = Some((a.info(), v.len()));
        }
        let (i, raw) = info.expect("a run");
        println!(
            "{label} chunks {:?} blocks {:?} ratio {:.2} import {:.4} read {:.4}",
            i.chunkshape,
            i.blockshape,
            raw as f64 / i.cbytes as f64,
            median(import),
            median(read)
        );
        let _ = Array::remove(&p);
    }
}
