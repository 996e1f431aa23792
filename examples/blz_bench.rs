//! The BLZ import benchmark's Rust half (bench/blz/run.sh runs it):
//!
//!     blz_bench CARRAY RAW OUTDIR NTHREADS
//!
//! times `blz::import_carray` of CARRAY into a frame file, and compressing
//! the same values (RAW, read into memory first, untimed) into a frame file
//! of the same partitions with `Array::from_buffer`: the baseline's second
//! half. Each is run REPS times (default 3), alternating; prints the
//! fastest: `import SECONDS` and `compress SECONDS` (the machine may be shared).

use std::path::Path;
use std::time::Instant;

use caterva::{blz, Array, Config, Context, Params, StorageParams};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: blz_bench CARRAY RAW OUTDIR NTHREADS");
        std::process::exit(2);
    }
    let (carray, raw, out) = (Path::new(&args[1]), Path::new(&args[2]), Path::new(&args[3]));
    let nthreads: usize = args[4].parse().expect("NTHREADS is a number");
    let ctx = Context::new(Config { nthreads, ..Config::default() }).expect("context");
    let target = |name: &str| {
        let p = out.join(name);
        let _ = Array::remove(&p.display().to_string());
        StorageParams { contiguous: true, urlpath: Some(p.display().to_string()), ..Default::default() }
    };

    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let data = std::fs::read(raw).expect("the raw values");
    let (mut import_s, mut compress_s) = (f64::MAX, f64::MAX);
    let (mut imported, mut compressed) = (None, None);
    for _ in 0..reps {
        drop(imported.take());
        let t = Instant::now();
        let a = blz::import_carray(&ctx, carray, &target("import.b2frame"), &mut |_, _| {}).expect("import");
        import_s = import_s.min(t.elapsed().as_secs_f64());
        let info = a.info();
        let params = Params { itemsize: a.itemsize(), shape: a.shape().to_vec(), dtype: a.dtype() };
        let storage = StorageParams {
            chunkshape: info.chunkshape.clone(),
            blockshape: info.blockshape.clone(),
            ..target("compress.b2frame")
        };
        imported = Some(a);
        drop(compressed.take());
        let t = Instant::now();
        let c = Array::from_buffer(&ctx, &params, &storage, &data).expect("compress");
        compress_s = compress_s.min(t.elapsed().as_secs_f64());
        compressed = Some(c);
    }
    drop(data);
    let (imported, compressed) = (imported.expect("a run"), compressed.expect("a run"));
    let info = imported.info();
    assert!(imported.to_vec().expect("read") == compressed.to_vec().expect("read"), "import and compress differ");
    println!("import {import_s:.3}");
    println!("compress {compress_s:.3}");
    println!("chunks {:?} blocks {:?} {} -> {} bytes", info.chunkshape, info.blockshape, info.nbytes, info.cbytes);
}
