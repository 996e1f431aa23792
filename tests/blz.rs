//! BLZ data written by the real writers, bcolz-zipline (carrays, ctables)
//! and bloscpack (.blp files), imported and compared value by value with
//! the NumPy arrays they were written from; exported back and read by
//! bcolz-zipline and bloscpack, which compare again (`tests/blz/peer.py`).
//! The venv is `target/interop/bcolz`, made by `.ci/setup` (override with
//! `CATERVA_INTEROP_BCOLZ_PYTHON`). Damaged inputs give clear errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use caterva::blz::{self, Checksum, ExportOptions};
use caterva::{Array, Config, Context, ErrorKind, StorageParams};

mod common;
use common::{blz_peer, npy, python, run, scratch_dir};

fn peer(mode: &str, dir: &Path) -> String {
    blz_peer("bcolz", "peer.py", &[mode], dir)
}

fn ctx() -> Context {
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

fn none(_: i64, _: i64) {}

fn check(name: &str, a: &Array, want: &(String, Vec<i64>, Vec<u8>)) {
    assert_eq!(a.shape(), &want.1[..], "{name}: shape");
    assert_eq!(a.dtype().as_deref(), Some(want.0.as_str()), "{name}: dtype");
    let got = a.to_vec().unwrap();
    if let Some(i) = got.iter().zip(&want.2).position(|(x, y)| x != y) {
        panic!("{name}: values differ from byte {i} of {} ({} bytes read)", want.2.len(), got.len());
    }
    assert_eq!(got.len(), want.2.len(), "{name}");
}

fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn real_writers_import_and_export() {
    let dir = scratch_dir("blz");
    peer("write", &dir);
    let ctx = ctx();
    let codecs = ["lz4", "blosclz", "zlib", "zstd", "lz4hc"];
    let (mut carrays, mut blps) = (0, 0);
    for (i, p) in sorted(&dir).into_iter().enumerate() {
        let file = p.file_name().unwrap().to_str().unwrap().to_owned();
        let opts = ExportOptions {
            cname: codecs[i % codecs.len()].into(),
            shuffle: (i % 3) as u8,
            clevel: (i % 10) as u8,
            checksum: Checksum::ALL[i % 9],
            chunklen: if i % 2 == 0 { 0 } else { 33 },
        };
        if let Some(name) = file.strip_suffix(".bcolz").filter(|n| *n != "table" && *n != "rec") {
            let want = npy(&dir.join(format!("{name}.npy")));
            assert_eq!(blz::detect(&p).unwrap(), blz::Kind::CArray);
            // Every third into a file, the rest in memory.
            let storage = if i % 3 == 0 {
                StorageParams {
                    urlpath: Some(dir.join(format!("{name}.b2frame")).display().to_string()),
                    contiguous: true,
                    ..Default::default()
                }
            } else {
                StorageParams::default()
            };
            let a = blz::import(&ctx, &p, &storage, &mut none).unwrap_or_else(|e| panic!("{name}: {e}"));
            check(name, &a, &want);
            if let Some(u) = &storage.urlpath {
                check(name, &Array::open(&ctx, u).unwrap(), &want);
            }
            if name == "attrs" {
                assert_eq!(a.vlmeta_get("unit").unwrap(), b"\xa3USD");
                assert_eq!(a.vlmeta_get("scale").unwrap(), vec![0xcd, 0x03, 0xe8]);
                assert_eq!(a.vlmeta_get("bcolz_dflt").unwrap(), vec![0]);
                std::fs::write(
                    dir.join("attrs.attrs.json"),
                    r#"{"unit": "USD", "scale": 1000, "ok": true, "ratio": 0.25, "list": [1, "a", null], "nested": {"k": [1, 2]}}"#,
                )
                .unwrap();
            }
            blz::export_carray(&a, &dir.join(format!("{name}.out.bcolz")), &opts, &mut none)
                .unwrap_or_else(|e| panic!("{name}: export: {e}"));
            carrays += 1;
        } else if let Some(name) = file.strip_suffix(".blp").filter(|n| !n.ends_with(".out")) {
            let want = npy(&dir.join(format!("{name}.npy")));
            assert_eq!(blz::detect(&p).unwrap(), blz::Kind::Bloscpack);
            let a =
                blz::import(&ctx, &p, &StorageParams::default(), &mut none).unwrap_or_else(|e| panic!("{name}: {e}"));
            if name == "blp_raw" {
                assert_eq!(a.to_vec().unwrap(), want.2, "{name}");
            } else {
                check(name, &a, &want);
                blz::export_bloscpack(&a, &dir.join(format!("{name}.out.blp")), &opts, &mut none).unwrap();
                // and we read our own file back
                let b = blz::import(&ctx, &dir.join(format!("{name}.out.blp")), &StorageParams::default(), &mut none)
                    .unwrap();
                check(&format!("{name} (our .blp)"), &b, &want);
            }
            blps += 1;
        }
    }
    assert!(carrays == 60 && blps == 20, "{carrays} carrays, {blps} .blp files");
    // The ctable: every column, then exported as a ctable.
    let mut n = 0;
    let cols =
        blz::import_ctable(&ctx, &dir.join("table.bcolz"), &mut |_| StorageParams::default(), &mut none).unwrap();
    for (name, a) in &cols {
        check(name, a, &npy(&dir.join(format!("table.{name}.npy"))));
        n += 1;
    }
    assert_eq!(n, 5);
    let refs: Vec<(&str, &Array)> = cols.iter().map(|(n, a)| (n.as_str(), a)).collect();
    blz::export_ctable(&refs, &dir.join("table.out.ctable"), &ExportOptions::default(), &mut none).unwrap();
    // A ctable as one array of records, which python-blosc2 reads as a structured array.
    let rec = dir.join("rec.b2frame");
    let st = StorageParams { urlpath: Some(rec.display().to_string()), contiguous: true, ..Default::default() };
    let a = blz::import_ctable_records(&ctx, &dir.join("rec.bcolz"), &st, &mut none).unwrap();
    assert_eq!(a.dtype().as_deref(), Some("[('a','<i4'),('b','<f8'),('c','|u1')]"));
    assert_eq!(a.shape(), &[1234]);
    let raw = std::fs::read(dir.join("rec.npy")).unwrap();
    let hlen = u16::from_le_bytes([raw[8], raw[9]]) as usize;
    assert!(a.to_vec().unwrap() == raw[10 + hlen..], "records differ");
    assert_eq!(a.vlmeta_get("source").unwrap(), b"\xa4test");
    let script = "import sys, blosc2, numpy as np\n\
                  a = blosc2.open(sys.argv[1])[:]\n\
                  w = np.load(sys.argv[2])\n\
                  assert a.dtype == w.dtype and (a == w).all(), (a.dtype, w.dtype)\n\
                  print('blosc2 reads the records')\n";
    let out =
        run(Command::new(python("blosc2")).arg("-c").arg(script).arg(&rec).arg(dir.join("rec.npy")), "blosc2 records");
    assert!(out.contains("blosc2 reads the records"), "{out}");
    // Five columns: a dtype description over 64 characters (refused until
    // issue 25), each field the bytes of its column.
    let t = blz::import_ctable_records(&ctx, &dir.join("table.bcolz"), &StorageParams::default(), &mut none).unwrap();
    let d = t.dtype().unwrap();
    assert!(d.len() > 64 && d.matches("('").count() == 5, "{d}");
    let (records, rows) = (t.to_vec().unwrap(), t.shape()[0] as usize);
    let mut at = 0;
    for (name, c) in &cols {
        let (col, size) = (c.to_vec().unwrap(), c.itemsize());
        assert_eq!(c.shape()[0] as usize, rows, "{name}");
        for r in 0..rows {
            let field = &records[r * t.itemsize() + at..r * t.itemsize() + at + size];
            assert!(field == &col[r * size..(r + 1) * size], "column {name}, row {r}");
        }
        at += size;
    }
    assert_eq!(at, t.itemsize());
    let out = peer("check", &dir);
    // Every carray, the ctable and every .blp file but the raw one.
    assert!(out.contains(&format!("checked {}", carrays + 1 + blps - 1)), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records whose fields carry no byte-order mark (`u1`, `S3`, `?`, as
/// `str(dtype)` writes them and bcolz records them), in arrays without
/// items: the dtype is all that tells their item size. Exported as a
/// carray and as a `.blp` file, and imported back from both (issue 41).
#[test]
fn empty_records_with_one_byte_fields_round_trip() {
    let dir = scratch_dir("blz-empty-records");
    let ctx = ctx();
    for (dtype, itemsize, shape) in [
        ("[('a', 'u1'), ('b', '<i4'), ('c', 'S3'), ('d', '?'), ('e', 'i1')]", 10, vec![0]),
        ("[('p', [('x', 'u1'), ('y', '|u1')]), ('f', '<f4', (2, 3))]", 26, vec![0, 4]),
        ("[('u', '<U3'), ('v', 'V8'), ('w', '|S3')]", 23, vec![0]),
    ] {
        let params = caterva::Params { itemsize, shape: shape.clone(), dtype: Some(dtype.into()) };
        let st =
            StorageParams { chunkshape: vec![4; shape.len()], blockshape: vec![2; shape.len()], ..Default::default() };
        let a = Array::zeros(&ctx, &params, &st).unwrap();
        let carray = dir.join("records.bcolz");
        let blp = dir.join("records.blp");
        let _ = std::fs::remove_dir_all(&carray);
        let _ = std::fs::remove_file(&blp);
        blz::export_carray(&a, &carray, &ExportOptions::default(), &mut none)
            .unwrap_or_else(|e| panic!("{dtype}: {e}"));
        blz::export_bloscpack(&a, &blp, &ExportOptions::default(), &mut none)
            .unwrap_or_else(|e| panic!("{dtype}: {e}"));
        for (what, path) in [("carray", &carray), (".blp", &blp)] {
            let b = blz::import(&ctx, path, &StorageParams::default(), &mut none)
                .unwrap_or_else(|e| panic!("{dtype} ({what}): {e}"));
            assert_eq!((b.itemsize(), b.shape()), (itemsize, &shape[..]), "{dtype} ({what})");
            assert_eq!(b.dtype().as_deref(), Some(dtype), "{what}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same written by bcolz itself, which records `str(dtype)` (no mark on
/// 1-byte fields; bcolz cannot write the default of a record with a bytes
/// field, so none here); our `.blp` export of it read by bloscpack.
#[test]
fn bcolz_empty_records_import_and_bloscpack_reads_our_export() {
    let dir = scratch_dir("blz-bcolz-empty-records");
    let carray = dir.join("rec0.bcolz");
    let script = "import sys, bcolz, numpy as np\n\
                  dt = np.dtype([('a', 'u1'), ('b', '<i4'), ('d', '?'), ('e', 'i1')])\n\
                  bcolz.carray(np.zeros(0, dtype=dt), rootdir=sys.argv[1], mode='w', chunklen=16).flush()\n\
                  print(open(sys.argv[1] + '/meta/storage').read())\n";
    let out = run(Command::new(python("bcolz")).arg("-c").arg(script).arg(&carray), "bcolz empty records");
    assert!(out.contains("('a', 'u1')"), "bcolz records no mark on 1-byte fields: {out}");
    let a = blz::import(&ctx(), &carray, &StorageParams::default(), &mut none).unwrap();
    assert_eq!((a.itemsize(), a.shape()), (7, &[0][..]));
    let blp = dir.join("rec0.blp");
    blz::export_bloscpack(&a, &blp, &ExportOptions::default(), &mut none).unwrap();
    // (bloscpack 0.15 needs collections' abstract classes where Python 3.10 dropped them: as peer.py.)
    let script = "import sys, collections, collections.abc\n\
                  for n in ('MutableMapping', 'Mapping', 'Iterable'): setattr(collections, n, getattr(collections.abc, n))\n\
                  import bloscpack\n\
                  a = bloscpack.unpack_ndarray_file(sys.argv[1])\n\
                  print('read', a.shape, a.dtype.itemsize)\n";
    let out = run(Command::new(python("bcolz")).arg("-c").arg(script).arg(&blp), "bloscpack reads our .blp");
    assert!(out.contains("read (0,) 7"), "{out}");
    let b = blz::import(&ctx(), &blp, &StorageParams::default(), &mut none).unwrap();
    assert_eq!((b.itemsize(), b.shape()), (7, &[0][..]));
    let _ = std::fs::remove_dir_all(&dir);
}

fn kind(r: caterva::Result<Array>) -> (ErrorKind, String) {
    let e = r.expect_err("damaged input must be refused");
    (e.kind(), e.to_string())
}

#[test]
fn damaged_inputs_are_refused() {
    let dir = scratch_dir("blz-damage");
    peer("write", &dir);
    let ctx = ctx();
    let imp = |p: &Path| blz::import(&ctx, p, &StorageParams::default(), &mut none);
    let count = std::cell::Cell::new(0);
    let copy = |name: &str| -> PathBuf {
        count.set(count.get() + 1);
        let to = dir.join(format!("dmg{}-{name}", count.get()));
        run(Command::new("cp").arg("-r").arg(dir.join(name)).arg(&to), "cp");
        to
    };
    // Every truncation of a checksummed .blp fails, never succeeds with other data.
    let src = std::fs::read(dir.join("blp_sha256_1.blp")).unwrap();
    let p = dir.join("trunc.blp");
    for cut in (0..src.len()).step_by(97) {
        std::fs::write(&p, &src[..cut]).unwrap();
        let (k, m) = kind(imp(&p));
        assert!(
            matches!(k, ErrorKind::InvalidFormat | ErrorKind::InvalidStorage | ErrorKind::Corrupt | ErrorKind::Io),
            "{cut}: {m}"
        );
    }
    // Every flipped byte after the header: refused (checksums), or for bytes no
    // one reads (offsets), the same values.
    let want = npy(&dir.join("blp_sha256_1.npy"));
    for at in (32..src.len()).step_by(13) {
        let mut b = src.clone();
        b[at] ^= 0x5a;
        std::fs::write(&p, &b).unwrap();
        if let Ok(a) = imp(&p) {
            assert!(a.to_vec().unwrap() == want.2, "flip at {at} read wrong data");
        }
    }
    // A flipped payload byte names the chunk.
    let mut b = src.clone();
    let n = b.len();
    b[n - 100] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let (k, m) = kind(imp(&p));
    assert_eq!(k, ErrorKind::Corrupt, "{m}");
    assert!(m.contains("chunk") && m.contains("sha256"), "{m}");
    // A missing chunk file.
    let c = copy("c_i8_lz4_1.bcolz");
    std::fs::remove_file(c.join("data").join("__3.blp")).unwrap();
    let (k, m) = kind(imp(&c));
    assert_eq!(k, ErrorKind::InvalidFormat);
    assert!(m.contains("chunk 3") && m.contains("missing"), "{m}");
    // Lying sizes: more rows, fewer rows, a wrong byte count.
    for (shape, nbytes) in [(5000, 40000), (900, 7200), (1111, 1)] {
        let c = copy("c_i8_zstd_0.bcolz");
        std::fs::write(
            c.join("meta").join("sizes"),
            format!(r#"{{"shape": [{shape}], "nbytes": {nbytes}, "cbytes": 1}}"#),
        )
        .unwrap();
        let (k, m) = kind(imp(&c));
        assert_eq!(k, ErrorKind::InvalidFormat, "{m}");
    }
    // Bad JSON, a missing field, an object dtype.
    for (file, text) in
        [("sizes", "{\"shape\": [1"), ("storage", "{}"), ("storage", r#"{"dtype": "object", "chunklen": 4}"#)]
    {
        let c = copy("c_i4_lz4_0.bcolz");
        std::fs::write(c.join("meta").join(file), text).unwrap();
        let (k, m) = kind(imp(&c));
        assert_eq!(k, ErrorKind::InvalidFormat, "{m}");
        assert!(m.contains(file) || m.contains("object"), "{m}");
    }
    // A flipped byte in a bcolz chunk (no checksums there): an error or, when
    // the damage decodes, an array of the right shape, never a crash.
    let c = copy("c_f8_zlib_1.bcolz");
    let f = c.join("data").join("__2.blp");
    let orig = std::fs::read(&f).unwrap();
    for at in 16..orig.len().min(200) {
        let mut b = orig.clone();
        b[at] ^= 0xff;
        std::fs::write(&f, &b).unwrap();
        if let Ok(a) = imp(&c) {
            assert_eq!(a.shape(), &[1333]);
        }
    }
    // Not BLZ at all.
    let (k, _) = kind(imp(&dir.join("attrs.npy")));
    assert_eq!(k, ErrorKind::InvalidStorage);
    // A failed import to a path leaves nothing there.
    let c = copy("c_u8_lz4_1.bcolz");
    std::fs::remove_file(c.join("data").join("__5.blp")).unwrap();
    let target = dir.join("never.b2frame");
    let st = StorageParams { urlpath: Some(target.display().to_string()), contiguous: true, ..Default::default() };
    assert!(blz::import(&ctx, &c, &st, &mut none).is_err());
    assert!(!target.exists());
    // Export refuses to replace anything.
    let a = imp(&dir.join("c_u8_lz4_1.bcolz")).unwrap();
    let e = blz::export_carray(&a, &dir.join("c_u8_lz4_1.bcolz"), &ExportOptions::default(), &mut none).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidStorage);
    let bad = ExportOptions { cname: "snappy".into(), ..Default::default() };
    assert_eq!(
        blz::export_carray(&a, &dir.join("x.bcolz"), &bad, &mut none).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(!dir.join("x.bcolz").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

/// The fuzz target `blz` (fuzz/src/lib.rs) on its seeds and on every
/// truncation and many byte flips of them: always returns (.ci/fuzz runs
/// the real fuzzer; this replays a fixed sample in every `cargo test`).
#[test]
fn fuzz_target_on_damaged_seeds() {
    let seeds = common::manifest_dir().join("fuzz").join("seeds").join("blz");
    let mut runs = 0;
    for p in sorted(&seeds) {
        let b = std::fs::read(&p).unwrap();
        harness::blz(&b);
        for cut in (0..b.len()).step_by(13) {
            harness::blz(&b[..cut]);
            runs += 1;
        }
        for at in (0..b.len()).step_by(9) {
            let mut d = b.clone();
            d[at] ^= 0x41 ^ (at as u8);
            harness::blz(&d);
            runs += 1;
        }
    }
    assert!(runs > 500, "{runs} runs");
    // Regression files the fuzzer found, once fixed.
    for p in sorted_if(&common::manifest_dir().join("fuzz").join("regressions").join("blz")) {
        harness::blz(&std::fs::read(&p).unwrap());
    }
}

fn sorted_if(dir: &Path) -> Vec<PathBuf> {
    if dir.is_dir() {
        sorted(dir)
    } else {
        Vec::new()
    }
}
