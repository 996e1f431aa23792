//! Attributes, defaults and names between bcolz and caterva, against the
//! real peers (`tests/blz/attrs_peer.py`): bcolz-zipline writes carrays and
//! a ctable with `NaN` defaults and attributes, non-ASCII names and values,
//! attribute names no vlmetalayer can have (and ours, `bcolz_dflt`); the
//! import keeps every one of them where python-blosc2 reads it, and the
//! export gives bcolz-zipline back exactly what it wrote. python-blosc2
//! writes what bcolz cannot take as it is (a `V8` dtype, a bytes vlmeta).

use std::path::Path;

use caterva::blz::{self, ExportOptions};
use caterva::{Array, Config, Context, ErrorKind, StorageParams};

mod common;
use common::{blz_peer, scratch_dir};

/// Run `attrs_peer.py MODE DIR` with the Python of `venv` ("bcolz" or "blosc2").
fn peer(venv: &str, mode: &str, dir: &Path) -> String {
    blz_peer(venv, "attrs_peer.py", &[mode], dir)
}

fn ctx() -> Context {
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

fn none(_: i64, _: i64) {}

fn frame(dir: &Path, name: &str) -> StorageParams {
    StorageParams {
        urlpath: Some(dir.join(format!("{name}.b2frame")).display().to_string()),
        contiguous: true,
        ..Default::default()
    }
}

/// Import carray `name` into `<name>.b2frame` and export it to `<name>.out.bcolz`.
fn round_trip(ctx: &Context, dir: &Path, name: &str) -> Array {
    let a = blz::import(ctx, &dir.join(format!("{name}.bcolz")), &frame(dir, name), &mut none)
        .unwrap_or_else(|e| panic!("{name}: import: {e}"));
    blz::export_carray(&a, &dir.join(format!("{name}.out.bcolz")), &ExportOptions::default(), &mut none)
        .unwrap_or_else(|e| panic!("{name}: export: {e}"));
    a
}

/// Issue 26: `NaN`, `Infinity` and `-Infinity` (Python's JSON) in
/// `meta/storage` (`dflt=np.nan`) and `__attrs__` made the import fail
/// ("not valid JSON"); now they are msgpack floats python-blosc2 reads as
/// `nan`/`inf`, and the export writes them back for bcolz. Non-ASCII
/// attribute names and values were written raw, and bcolz (which decodes
/// ASCII) could not open the export ("Attribute file is not readable").
#[test]
fn nan_infinity_and_non_ascii_attributes_round_trip() {
    let dir = scratch_dir("blz-attrs-nan");
    peer("bcolz", "write", &dir);
    let ctx = ctx();
    let a = round_trip(&ctx, &dir, "nan");
    // msgpack float64 NaN, as python-blosc2 packs float('nan').
    assert_eq!(a.vlmeta_get("bcolz_dflt").unwrap(), [0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]);
    assert_eq!(a.vlmeta_get("inf").unwrap(), [0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(a.vlmeta_get("text").unwrap()[1..], *b"NaN, Infinity: not numbers");
    let e = round_trip(&ctx, &dir, "euro");
    assert_eq!(e.vlmeta_get("unit").unwrap(), [&[0xa3][..], "€".as_bytes()].concat());
    assert!(e.vlmeta_get("café").is_ok());
    drop((a, e));
    let out = peer("blosc2", "b2check", &dir);
    assert!(out.contains("b2checked 2"), "{out}");
    let out = peer("bcolz", "check", &dir);
    assert!(out.contains("checked 2"), "{out}");
    let storage = std::fs::read_to_string(dir.join("nan.out.bcolz").join("meta").join("storage")).unwrap();
    assert!(storage.contains("\"dflt\": NaN"), "{storage}");
    for f in ["nan.out.bcolz/__attrs__", "euro.out.bcolz/__attrs__"] {
        let text = std::fs::read(dir.join(f)).unwrap();
        assert!(text.is_ascii(), "{f}: {}", String::from_utf8_lossy(&text));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 26: an attribute named over 31 bytes, empty, or like the
/// checksum table aborted the whole import; one named `bcolz_dflt`
/// vanished and became the export's `dflt`. Now those go into the
/// vlmetalayer `bcolz_attrs` (a msgpack map), `bcolz_dflt` stays the
/// carray's default, and bcolz reads back every attribute and the default.
#[test]
fn attribute_names_no_vlmetalayer_can_have_survive() {
    let dir = scratch_dir("blz-attrs-names");
    peer("bcolz", "write", &dir);
    let ctx = ctx();
    let a = round_trip(&ctx, &dir, "names");
    // float64 -1.5, the carray's own dflt, not the user's attribute of that name
    assert_eq!(a.vlmeta_get("bcolz_dflt").unwrap(), [0xcb, 0xbf, 0xf8, 0, 0, 0, 0, 0, 0]);
    assert_eq!(a.vlmeta_get("short").unwrap(), [2]);
    let rest = a.vlmeta_get(blz::ATTRS_VLMETA).unwrap();
    assert_eq!(rest[0], 0x86, "a map of the six other attributes");
    drop(a);
    let out = peer("blosc2", "b2check", &dir);
    assert!(out.contains("b2checked 1"), "{out}");
    let out = peer("bcolz", "check", &dir);
    assert!(out.contains("checked 1"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 26: a ctable with non-ASCII column names (`café`, `naïve`:
/// Python identifiers, so bcolz allows them) was refused as records, and
/// exported as a `__rootdirs__` bcolz could not decode. Now python-blosc2
/// reads the records under those field names, and bcolz the exported
/// ctable's columns.
#[test]
fn non_ascii_column_names() {
    let dir = scratch_dir("blz-attrs-cols");
    peer("bcolz", "write", &dir);
    let ctx = ctx();
    let t = dir.join("table.bcolz");
    let rec = blz::import_ctable_records(&ctx, &t, &frame(&dir, "table"), &mut none).unwrap();
    assert_eq!(rec.dtype().as_deref(), Some("[('café','<i8'),('naïve','<f8'),('x','|u1')]"));
    drop(rec);
    let cols = blz::import_ctable(&ctx, &t, &mut |_| StorageParams::default(), &mut none).unwrap();
    let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["café", "naïve", "x"]);
    let refs: Vec<(&str, &Array)> = cols.iter().map(|(n, a)| (n.as_str(), a)).collect();
    blz::export_ctable(&refs, &dir.join("table.out.bcolz"), &ExportOptions::default(), &mut none).unwrap();
    let out = peer("blosc2", "b2check", &dir);
    assert!(out.contains("b2checked 1"), "{out}");
    let out = peer("bcolz", "check", &dir);
    assert!(out.contains("checked 1"), "{out}");
    let roots = std::fs::read_to_string(dir.join("table.out.bcolz").join("__rootdirs__")).unwrap();
    assert!(roots.contains(r#""caf\u00e9""#), "{roots}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 26 (the same for Bloscpack files): bloscpack writes its metadata
/// with Python's json, `NaN` included, which made the import fail; a
/// metadata name over 31 bytes was dropped silently. Now python-blosc2
/// reads `nan` and finds the long name in `bcolz_attrs`.
#[test]
fn bloscpack_metadata_nan_and_long_names() {
    let dir = scratch_dir("blz-attrs-blp");
    peer("bcolz", "write", &dir);
    let ctx = ctx();
    let a = blz::import(&ctx, &dir.join("meta.blp"), &frame(&dir, "meta"), &mut none).unwrap();
    assert_eq!(a.vlmeta_get("nan").unwrap(), [0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]);
    drop(a);
    let out = peer("blosc2", "b2check", &dir);
    assert!(out.contains("b2checked 1"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 26: values one side holds and the other cannot were changed
/// silently. An integer attribute beyond 64 bits (msgpack has none) became
/// a float: now the import refuses, naming it. python-blosc2's `V8` (its
/// b2nd dtype `[('f0', 'V8')]`) was exported verbatim, which bcolz cannot
/// parse: now `|V8`. A bytes vlmetalayer became a list of ints: now the
/// export refuses, naming it (bcolz attributes are JSON, which has no bytes).
#[test]
fn values_the_other_side_cannot_hold() {
    let dir = scratch_dir("blz-attrs-values");
    peer("bcolz", "write", &dir);
    peer("blosc2", "b2write", &dir);
    let ctx = ctx();
    let e = blz::import(&ctx, &dir.join("big.bcolz"), &frame(&dir, "big"), &mut none).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("'huge'") && e.to_string().contains("1180591620717411303424"), "{e}");
    assert!(!dir.join("big.b2frame").exists());

    let v = Array::open(&ctx, &dir.join("void.b2nd").display().to_string()).unwrap();
    assert_eq!(v.itemsize(), 8);
    blz::export_carray(&v, &dir.join("void.out.bcolz"), &ExportOptions::default(), &mut none).unwrap();

    let b = Array::open(&ctx, &dir.join("bin.b2nd").display().to_string()).unwrap();
    let e = blz::export_carray(&b, &dir.join("bin.out.bcolz"), &ExportOptions::default(), &mut none).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidFormat, "{e}");
    assert!(e.to_string().contains("'raw'") && e.to_string().contains("bytes"), "{e}");
    assert!(!dir.join("bin.out.bcolz").exists());
    let out = peer("bcolz", "check", &dir);
    assert!(out.contains("checked 1"), "{out}");
    let storage = std::fs::read_to_string(dir.join("void.out.bcolz").join("meta").join("storage")).unwrap();
    assert!(storage.contains(r#""dtype": "|V8""#), "{storage}");
    let _ = std::fs::remove_dir_all(&dir);
}
