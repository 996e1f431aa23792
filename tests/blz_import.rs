//! BLZ inputs the import once refused or misread (issue 26), written by the
//! real writers, bcolz-zipline and bloscpack (`tests/blz/import_peer.py`):
//! each is imported and compared bit for bit with what bcolz or bloscpack
//! reads from it, dtype and shape included. Structured arrays go back out
//! as `.blp` files that bloscpack reads again. The default partitions of
//! an import are the library's proposal, not the source's chunks. Damage
//! near the newly accepted layouts is still refused.

use std::path::{Path, PathBuf};

use caterva::blz::{self, ExportOptions};
use caterva::{propose_partitions, Access, Array, Config, Context, ErrorKind, PartitionHints, StorageParams};

mod common;
use common::{blz_peer, npy, scratch_dir};

fn peer(args: &[&str], dir: &Path) -> String {
    blz_peer("bcolz", "import_peer.py", args, dir)
}

fn ctx() -> Context {
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

fn none(_: i64, _: i64) {}

/// `a` holds what the writer reads from `name`: dtype, shape, bytes.
fn check(name: &str, a: &Array, want: &(String, Vec<i64>, Vec<u8>)) {
    assert_eq!(a.shape(), &want.1[..], "{name}: shape");
    assert_eq!(a.dtype().unwrap_or_default().replace(' ', ""), want.0, "{name}: dtype");
    let got = a.to_vec().unwrap();
    assert_eq!(got.len(), want.2.len(), "{name}: bytes");
    assert!(got == want.2, "{name}: values differ");
}

fn imp(ctx: &Context, p: &Path) -> caterva::Result<Array> {
    blz::import(ctx, p, &StorageParams::default(), &mut none)
}

/// Every input of issue 26 item 3 that bcolz or bloscpack reads, imported
/// as they read it; the structured ones exported back to `.blp` files that
/// bloscpack reads (the dtype written as bloscpack writes it).
#[test]
fn inputs_the_writers_read_are_imported_as_they_read_them() {
    let dir = scratch_dir("blz-import");
    peer(&["write"], &dir);
    let ctx = ctx();
    let want = |n: &str| npy(&dir.join(format!("{n}.npy")));
    let export = |a: &Array, n: &str| {
        blz::export_bloscpack(a, &dir.join(format!("{n}.out.blp")), &ExportOptions::default(), &mut none)
            .unwrap_or_else(|e| panic!("{n}: export: {e}"));
    };
    // b. structured .blp files (bloscpack records `repr(dtype.descr)`), a
    // subarray field included; d. empty ones (one chunk of no bytes).
    for n in ["blp_struct", "blp_struct_small", "blp_empty", "blp_empty_nd", "blp_empty_rec"] {
        let a = imp(&ctx, &dir.join(format!("{n}.blp"))).unwrap_or_else(|e| panic!("{n}: {e}"));
        check(n, &a, &want(n));
        if n != "blp_empty_nd" {
            export(&a, n);
        }
    }
    // g. 0-dim arrays stay 0-dim, and export back to 0-dim `.blp` files
    // (a carray has rows: refused).
    for n in ["blp_0d", "blp_0d_i2"] {
        let a = imp(&ctx, &dir.join(format!("{n}.blp"))).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(a.ndim(), 0, "{n}");
        check(n, &a, &want(n));
        export(&a, n);
        let e = blz::export_carray(&a, &dir.join(format!("{n}.bcolz.out")), &ExportOptions::default(), &mut none);
        assert!(matches!(e, Err(caterva::Error::InvalidArgument(ref m)) if m.contains("0-dim")), "{e:?}");
    }
    // e. raw bytes that are not a whole number of the typesize: the bytes,
    // as `unpack_bytes_file` returns them.
    for n in ["blp_bytes", "blp_bytes_short"] {
        let a = imp(&ctx, &dir.join(format!("{n}.blp"))).unwrap_or_else(|e| panic!("{n}: {e}"));
        check(n, &a, &want(n));
    }
    // f. after `bloscpack.append` rewrote a last chunk shorter, in place.
    for n in ["blp_append", "blp_append_more"] {
        let p = dir.join(format!("{n}.blp"));
        let r = blz::bloscpack::Reader::open(&p).unwrap();
        let nchunks = r.header().nchunks;
        let a = imp(&ctx, &p).unwrap_or_else(|e| panic!("{n}: {e}"));
        check(n, &a, &want(n));
        // The rewritten chunk is shorter: bytes of the old one follow it.
        let mut r = blz::bloscpack::Reader::open(&p).unwrap();
        let mut end = 0;
        while let Some(c) = r.next_chunk().unwrap() {
            end += c.len();
        }
        assert_eq!(r.chunks_read(), nchunks);
        assert!(end > 0);
    }
    // c. an empty structured carray (no chunk tells its item size).
    let a = imp(&ctx, &dir.join("empty_rec.bcolz")).unwrap();
    check("empty_rec", &a, &want("empty_rec"));
    assert_eq!(a.itemsize(), 12);
    export(&a, "empty_rec");
    // a. a ctable with an n-d column: every column, one column, and records.
    let t = dir.join("ndcol.bcolz");
    let cols = blz::import_ctable(&ctx, &t, &mut |_| StorageParams::default(), &mut none).unwrap();
    let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["id", "xyz", "flag"]);
    for (n, a) in &cols {
        check(n, a, &want(&format!("ndcol.{n}")));
    }
    for n in ["id", "xyz"] {
        let a = blz::import_column(&ctx, &t, n, &StorageParams::default(), &mut none).unwrap();
        check(n, &a, &want(&format!("ndcol.{n}")));
    }
    let st = StorageParams { chunkshape: vec![100, 3], blockshape: vec![10, 2], ..Default::default() };
    let a = blz::import_column(&ctx, &t, "xyz", &st, &mut none).unwrap();
    check("xyz in chunks of 100x3", &a, &want("ndcol.xyz"));
    let a = blz::import_ctable_records(&ctx, &t, &StorageParams::default(), &mut none).unwrap();
    assert_eq!(a.dtype().as_deref(), Some("[('id','<i8'),('xyz','<f8',(3,)),('flag','|b1')]"));
    check("ndcol records", &a, &want("ndcol"));
    export(&a, "ndcol");
    let out = peer(&["check"], &dir);
    assert!(out.contains("checked 8"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn ratio(a: &Array) -> f64 {
    let i = a.info();
    i.nbytes as f64 / i.cbytes as f64
}

/// Issue 26 item 2: a carray of 4-row chunks imports in the library's
/// proposed partitions (not blocks of 4 items, which do not compress), and
/// chunks given alone get blocks proposed inside them.
#[test]
fn default_partitions_do_not_follow_tiny_source_chunks() {
    let dir = scratch_dir("blz-import-parts");
    peer(&["write"], &dir);
    let ctx = ctx();
    let p = dir.join("tiny.bcolz");
    let want = npy(&dir.join("tiny.npy"));
    let a = imp(&ctx, &p).unwrap();
    check("tiny", &a, &want);
    let hints = PartitionHints { access: Access::Balanced, threads: Some(2), ..Default::default() };
    let proposed = propose_partitions(8, &[50000], &hints).unwrap();
    let i = a.info();
    assert_eq!((i.chunkshape.clone(), i.blockshape.clone()), (proposed.chunkshape, proposed.blockshape));
    assert_eq!(blz::default_partitions(&[50000], 8, 2).unwrap(), (i.chunkshape.clone(), i.blockshape.clone()));
    assert!(ratio(&a) > 5.0, "ratio {}", ratio(&a));
    // --chunks alone.
    let st = StorageParams { chunkshape: vec![20000], ..Default::default() };
    let a = blz::import(&ctx, &p, &st, &mut none).unwrap();
    check("tiny, chunks 20000", &a, &want);
    let b = a.info().blockshape;
    assert!(b[0] >= 1000 && b[0] <= 20000, "blocks {b:?}");
    assert!(ratio(&a) > 5.0, "ratio {}", ratio(&a));
    // --blocks alone: the default chunks, grown to hold them.
    let st = StorageParams { blockshape: vec![30000], ..Default::default() };
    let a = blz::import(&ctx, &p, &st, &mut none).unwrap();
    check("tiny, blocks 30000", &a, &want);
    assert_eq!(a.info().blockshape, vec![30000]);
    assert!(a.info().chunkshape[0] >= 30000);
    // A ctable's records too.
    let a = blz::import_ctable_records(&ctx, &dir.join("ndcol.bcolz"), &StorageParams::default(), &mut none).unwrap();
    let proposed = propose_partitions(33, &[1000], &hints).unwrap();
    assert_eq!(a.info().chunkshape, proposed.chunkshape);
    let _ = std::fs::remove_dir_all(&dir);
}

fn refused(r: caterva::Result<Array>) -> String {
    let e = r.expect_err("damaged input must be refused");
    assert!(matches!(e.kind(), ErrorKind::InvalidFormat | ErrorKind::Corrupt), "{e}");
    e.to_string()
}

fn copy_with(dir: &Path, from: &str, to: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut b = std::fs::read(dir.join(from)).unwrap();
    edit(&mut b);
    let p = dir.join(to);
    std::fs::write(&p, b).unwrap();
    p
}

/// Issue 26 item 4: the layouts now accepted do not open the door to damage.
#[test]
fn damage_near_the_new_layouts_is_refused() {
    let dir = scratch_dir("blz-import-damage");
    peer(&["write"], &dir);
    let ctx = ctx();
    // More trailing bytes than one rewritten chunk leaves.
    let p = copy_with(&dir, "blp_append.blp", "long_tail.blp", |b| b.extend(vec![0u8; 2100]));
    assert!(refused(imp(&ctx, &p)).contains("after the last chunk"));
    // Trailing bytes in a file without an offsets table (append needs one).
    let p = copy_with(&dir, "blp_no_offsets.blp", "tail.blp", |b| {
        assert_eq!(b[5] & 1, 0);
        b.push(0);
    });
    assert!(refused(imp(&ctx, &p)).contains("1 bytes after the last chunk"));
    // A chunk count cut short (the last chunk's size and the room for
    // appends made to match): the offset of the chunk left out is still in
    // the table, so its bytes are not an append's remnant.
    let p = copy_with(&dir, "blp_append_more.blp", "cut.blp", |b| {
        let n = i64::from_le_bytes(b[16..24].try_into().unwrap());
        let room = i64::from_le_bytes(b[24..32].try_into().unwrap());
        b.copy_within(8..12, 12);
        b[16..24].copy_from_slice(&(n - 1).to_le_bytes());
        b[24..32].copy_from_slice(&(room + 1).to_le_bytes());
    });
    assert!(refused(imp(&ctx, &p)).contains("after the last chunk"));
    // Metadata that claim another size than the chunks hold: a 0-dim array
    // of a 4-byte dtype over 8 bytes, an "empty" array of one item.
    let edit = |from: &str, to: &str, old: &str, new: &str| {
        copy_with(&dir, from, to, |b| {
            let at = b.windows(old.len()).position(|w| w == old.as_bytes()).unwrap_or_else(|| panic!("{old}"));
            b[at..at + old.len()].copy_from_slice(new.as_bytes());
        })
    };
    let p = edit("blp_0d_plain.blp", "0d_f4.blp", "'<f8'", "'<f4'");
    assert!(refused(imp(&ctx, &p)).contains("does not hold"));
    let p = edit("blp_empty_plain.blp", "empty_1.blp", "\"shape\":[0]", "\"shape\":[1]");
    assert!(refused(imp(&ctx, &p)).contains("does not hold"));
    // An empty structured carray whose dtype does not parse: no item size.
    let st = dir.join("empty_rec.bcolz").join("meta").join("storage");
    let text = std::fs::read_to_string(&st).unwrap();
    assert!(text.contains("('b', '<f8')]"), "{text}");
    std::fs::write(&st, text.replace("('b', '<f8')]", "('b', '<f8']")).unwrap();
    assert!(refused(imp(&ctx, &dir.join("empty_rec.bcolz"))).contains("cannot be told"));
    let _ = std::fs::remove_dir_all(&dir);
}
