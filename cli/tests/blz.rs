//! `caterva import`, `caterva export` and `caterva info` on BLZ data written
//! by the real bcolz-zipline and bloscpack (tests/blz/peer.py, in the venv
//! `.ci/setup` makes); bcolz reads the exports back.

use std::path::Path;
use std::process::Command;

use caterva::{Array, Config, Context};

mod common;
use common::{caterva, ok, python, repo_root, run, scratch_dir};

fn peer(mode: &str, dir: &Path) -> String {
    let script = repo_root().join("tests").join("blz").join("peer.py");
    run(Command::new(python("bcolz")).arg(script).arg(mode).arg(dir), &format!("bcolz peer {mode}"))
}

/// The values of a .npy file written by the peer (its data after the header).
fn npy_data(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
    b[10 + hlen..].to_vec()
}

#[test]
fn import_export_info() {
    let dir = scratch_dir("cli-blz");
    peer("write", &dir);
    let d = |s: &str| dir.join(s).display().to_string();
    let ctx = Context::new(Config::default()).unwrap();

    let info = ok(&["info", &d("nd3.bcolz")]);
    assert!(info.contains("bcolz carray") && info.contains("[50,3,4]") && info.contains("float64"), "{info}");
    let info = ok(&["info", "--json", &d("blp_sha512_1.blp")]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["checksum"], "sha512");
    let info = ok(&["info", &d("table.bcolz")]);
    assert!(info.contains("bcolz ctable") && info.contains("777"), "{info}");

    // A carray, with chosen partitions and a sparse frame.
    let out = ok(&["import", "--chunks", "10,3,4", "--blocks", "5,3,4", "--sparse", &d("nd3.bcolz"), &d("nd3.b2nd")]);
    assert!(out.contains("chunks [10, 3, 4]"), "{out}");
    let a = Array::open(&ctx, &d("nd3.b2nd")).unwrap();
    assert_eq!(a.to_vec().unwrap(), npy_data(&dir.join("nd3.npy")));
    // A .blp file, then exported as a carray and a .blp for bcolz and bloscpack.
    ok(&["import", "-q", &d("blp_md5_0.blp"), &d("blp_md5_0.b2frame")]);
    ok(&["export", "-q", "--codec", "zstd", "--chunklen", "700", &d("blp_md5_0.b2frame"), &d("blp_md5_0.out.bcolz")]);
    ok(&["export", "-q", "--bloscpack", "--checksum", "sha384", &d("blp_md5_0.b2frame"), &d("blp_md5_0.out.blp")]);
    // A ctable: every column, then the columns as a ctable again.
    ok(&["import", "-q", &d("table.bcolz"), &d("cols")]);
    let cols = ["id", "price", "flag", "sym", "vol"].map(|c| d(&format!("cols/{c}.b2frame")));
    let mut args = vec!["export", "-q"];
    args.extend(cols.iter().map(String::as_str));
    let dst = d("table.out.ctable");
    args.push(&dst);
    ok(&args);
    // A ctable as records.
    let out = ok(&["import", "--records", &d("rec.bcolz"), &d("rec.b2frame")]);
    assert!(out.contains("[('a','<i4'),('b','<f8'),('c','|u1')]"), "{out}");
    let out = peer("check", &dir);
    assert!(out.contains("checked 3"), "{out}");

    // Failures: not BLZ, an existing destination, a bad option, damage.
    let r = caterva(&["import", &d("nd3.npy"), &d("x.b2frame")]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("neither a bcolz carray"), "{}", r.stderr);
    let r = caterva(&["import", &d("nd3.bcolz"), &d("nd3.b2nd")]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("exists"), "{}", r.stderr);
    let r = caterva(&["export", "--codec", "snappy", &d("blp_md5_0.b2frame"), &d("y.bcolz")]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!dir.join("y.bcolz").exists());
    std::fs::write(dir.join("nd3.bcolz").join("meta").join("sizes"), "{\"shape\": [50, 3, 4], \"nbytes\": 1}").unwrap();
    let r = caterva(&["import", &d("nd3.bcolz"), &d("z.b2frame")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("meta/sizes") && !dir.join("z.b2frame").exists(), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

fn import_peer(args: &[&str], dir: &Path) -> String {
    let script = repo_root().join("tests").join("blz").join("import_peer.py");
    run(Command::new(python("bcolz")).arg(script).args(args).arg(dir), &format!("bcolz import peer {args:?}"))
}

/// Issue 26 through the command line: a ctable with an n-d column (info,
/// every column, records, one column), the default blocks of `--chunks`
/// alone on a carray of 4-row chunks, and the peak memory of an import of
/// large chunks, bounded by bytes (measured by the peer with getrusage).
#[test]
fn ctable_with_nd_column_default_blocks_and_bounded_memory() {
    let dir = scratch_dir("cli-blz-import");
    import_peer(&["write"], &dir);
    let d = |s: &str| dir.join(s).display().to_string();
    let ctx = Context::new(Config::default()).unwrap();

    let info = ok(&["info", &d("ndcol.bcolz")]);
    assert!(info.contains("bcolz ctable") && info.contains("xyz.shape:    [1000,3]"), "{info}");
    let out = ok(&["import", &d("ndcol.bcolz"), &d("cols")]);
    assert!(out.contains("xyz.b2frame: [1000, 3] <f8"), "{out}");
    let xyz = npy_data(&dir.join("ndcol.xyz.npy"));
    assert_eq!(Array::open(&ctx, &d("cols/xyz.b2frame")).unwrap().to_vec().unwrap(), xyz);
    ok(&["import", "-q", "--column", "xyz", &d("ndcol.bcolz"), &d("xyz.b2frame")]);
    assert_eq!(Array::open(&ctx, &d("xyz.b2frame")).unwrap().to_vec().unwrap(), xyz);
    let out = ok(&["import", "--records", &d("ndcol.bcolz"), &d("rec.b2frame")]);
    assert!(out.contains("('xyz','<f8',(3,))"), "{out}");
    assert_eq!(Array::open(&ctx, &d("rec.b2frame")).unwrap().to_vec().unwrap(), npy_data(&dir.join("ndcol.npy")));

    // --chunks alone: blocks proposed inside the chunk, not the source's 4 rows.
    let out = ok(&["import", "--chunks", "20000", &d("tiny.bcolz"), &d("tiny.b2frame")]);
    let blocks: i64 = out.split("blocks [").nth(1).and_then(|s| s.split(']').next()).unwrap().parse().unwrap();
    assert!((1000..=20000).contains(&blocks), "{out}");
    let a = Array::open(&ctx, &d("tiny.b2frame")).unwrap();
    assert_eq!(a.to_vec().unwrap(), npy_data(&dir.join("tiny.npy")));
    assert!(a.info().nbytes > 5 * a.info().cbytes, "{out}");

    // 256 MB in chunks of 32 MiB, imported into chunks as large: the slab
    // holds one of them (SLAB_BYTES), not 16 (before: the whole array, and
    // a peak over 300 MiB).
    import_peer(&["big", "256", "32"], &dir);
    let script = repo_root().join("tests").join("blz").join("import_peer.py");
    let bin = env!("CARGO_BIN_EXE_caterva");
    let big = d("big.bcolz");
    let dst = d("big.b2frame");
    let cmd = [bin, "import", "-q", "--codec", "lz4", "--clevel", "1", "--chunks", "4194304", &big, &dst];
    let out = run(Command::new(python("bcolz")).arg(script).arg("rss").args(cmd), "import under getrusage");
    let kib: u64 = out.split("peak_rss_kib ").nth(1).and_then(|s| s.trim().parse().ok()).expect(&out);
    println!("peak RSS of the import: {} MiB", kib / 1024);
    assert!(kib < 160 * 1024, "the import of 256 MB in 32 MiB chunks peaked at {} MiB", kib / 1024);
    let a = Array::open(&ctx, &dst).unwrap();
    assert_eq!(a.shape(), &[32_000_000]);
    let mut first = vec![0u8; 16];
    a.get_slice_buffer(&[31_999_998], &[32_000_000], &mut first, &[2]).unwrap();
    let tail: Vec<u8> = [31_999_998f64 / 4.0, 31_999_999f64 / 4.0].iter().flat_map(|f| f.to_le_bytes()).collect();
    assert_eq!(first, tail);
    let _ = std::fs::remove_dir_all(&dir);
}
