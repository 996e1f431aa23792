//! `caterva import`, `caterva export` and `caterva info` on BLZ data written
//! by the real bcolz-zipline and bloscpack (tests/blz/peer.py, in the venv
//! `.ci/setup` makes); bcolz reads the exports back.

use std::path::Path;
use std::process::Command;

use caterva::{Array, Config, Context};

#[path = "../../tests/common/peers.rs"]
mod common;
use common::{python, repo_root, run, scratch_dir};

fn caterva(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_caterva")).args(args).output().expect("the binary runs");
    let r = (
        out.status.code().expect("exited"),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8(out.stderr).expect("UTF-8"),
    );
    assert!(!r.2.contains("panicked"), "caterva {args:?} panicked: {}", r.2);
    r
}

fn ok(args: &[&str]) -> String {
    let r = caterva(args);
    assert_eq!(r.0, 0, "caterva {args:?}: {}", r.2);
    assert!(r.2.is_empty(), "caterva {args:?} wrote on stderr: {}", r.2);
    r.1
}

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
    assert_eq!(r.0, 2, "{}", r.2);
    assert!(r.2.contains("neither a bcolz carray"), "{}", r.2);
    let r = caterva(&["import", &d("nd3.bcolz"), &d("nd3.b2nd")]);
    assert_eq!(r.0, 2);
    assert!(r.2.contains("exists"), "{}", r.2);
    let r = caterva(&["export", "--codec", "snappy", &d("blp_md5_0.b2frame"), &d("y.bcolz")]);
    assert_eq!(r.0, 2, "{}", r.2);
    assert!(!dir.join("y.bcolz").exists());
    std::fs::write(dir.join("nd3.bcolz").join("meta").join("sizes"), "{\"shape\": [50, 3, 4], \"nbytes\": 1}").unwrap();
    let r = caterva(&["import", &d("nd3.bcolz"), &d("z.b2frame")]);
    assert_eq!(r.0, 1, "{}", r.2);
    assert!(r.2.contains("meta/sizes") && !dir.join("z.b2frame").exists(), "{}", r.2);
    let _ = std::fs::remove_dir_all(&dir);
}
