//! The `caterva` command-line tool, run as a user runs it, on arrays
//! written by this library (frame files and sparse-frame directories), by
//! python-caterva 0.7.3 and by python-blosc2 (the peers of tests/interop.rs,
//! whose virtual environments `.ci/setup` creates). The checks read the
//! arrays back through the library's public API only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use caterva::{Array, Codec, Metalayer, Params, StorageParams};
use serde_json::Value as Json;

mod common;
use common::{caterva, ctx, hex, ok, peer, read_specs, s, scratch_dir, write_spec, Spec};

/// Run the tool and expect exit status `code`; return stderr.
fn fails(args: &[&str], code: i32) -> String {
    let r = caterva(args);
    assert_eq!(r.code, code, "caterva {args:?}:\n{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.trim().is_empty(), "caterva {args:?}: no message");
    r.stderr
}

/// An array on disk and what it holds.
struct Case {
    name: String,
    spec: Spec,
    data: Vec<u8>,
}

/// Our arrays: `(name, shape, chunks, blocks, itemsize, dtype, contiguous)`.
type Ours = (&'static str, &'static [i64], &'static [i32], &'static [i32], usize, Option<&'static str>, bool);
const OURS: &[Ours] = &[
    ("ours_i8", &[4, 5], &[3, 2], &[2, 2], 8, Some("<i8"), true),
    ("ours_f8_sparse", &[3, 4, 5], &[2, 3, 2], &[1, 2, 2], 8, Some("<f8"), false),
    ("ours_v3", &[5], &[2], &[2], 3, None, true),
];

/// The items of our case `name`: signed integers, floats with a NaN and
/// infinities, or plain bytes.
fn our_data(name: &str, n: usize, itemsize: usize) -> Vec<u8> {
    match name {
        "ours_i8" => (0..n as i64).flat_map(|i| (i * 10 - 7).to_le_bytes()).collect(),
        "ours_f8_sparse" => (0..n)
            .map(|i| match i {
                7 => f64::NAN,
                8 => f64::NEG_INFINITY,
                _ => i as f64 * 0.5 - 3.25,
            })
            .flat_map(f64::to_le_bytes)
            .collect(),
        _ => (0..n * itemsize).map(|i| (i * 37 % 256) as u8).collect(),
    }
}

/// Write [`OURS`] into `dir` with their specs.
fn write_ours(dir: &Path) {
    for &(name, shape, chunks, blocks, itemsize, dtype, contiguous) in OURS {
        let path = dir.join(format!("{name}.{}", if contiguous { "b2frame" } else { "b2nd" }));
        let url = path.to_string_lossy().into_owned();
        let data = our_data(name, shape.iter().product::<i64>() as usize, itemsize);
        let params = Params { itemsize, shape: shape.to_vec(), dtype: dtype.map(str::to_owned) };
        let storage = StorageParams {
            chunkshape: chunks.to_vec(),
            blockshape: blocks.to_vec(),
            contiguous,
            urlpath: Some(url.clone()),
            metalayers: vec![Metalayer { name: "units".into(), content: b"m".to_vec() }],
        };
        let mut arr = Array::from_buffer(&ctx(), &params, &storage, &data).unwrap();
        arr.vlmeta_add("history", b"written by caterva-rs").unwrap();
        let spec = Spec {
            path: url,
            contiguous,
            shape: shape.to_vec(),
            chunks: chunks.to_vec(),
            blocks: blocks.to_vec(),
            itemsize,
            dtype: arr.dtype(),
            meta: vec![("units".into(), b"m".to_vec())],
            vlmeta: vec![("history".into(), b"written by caterva-rs".to_vec())],
        };
        write_spec(dir, name, &spec, &data);
    }
}

/// Every array the tests read: ours, python-caterva's and python-blosc2's,
/// written once per test process. Tests never change them.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let root = scratch_dir("cli-cases");
        let mut all = Vec::new();
        for who in ["ours", "caterva", "blosc2"] {
            let dir = root.join(who);
            std::fs::create_dir_all(&dir).unwrap();
            if who == "ours" {
                write_ours(&dir);
            } else {
                peer(who, "write", &dir);
            }
            let found = read_specs(&dir);
            assert!(found.len() >= 3, "{who} wrote {} arrays", found.len());
            all.extend(found.into_iter().map(|(name, spec, data)| Case { name, spec, data }));
        }
        all
    })
}

fn case(name: &str) -> &'static Case {
    cases().iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no case {name}"))
}

/// A fresh directory for one test's outputs.
fn out_dir(test: &str) -> PathBuf {
    scratch_dir(&format!("cli-{test}"))
}

/// The `key: value` lines of `caterva info`.
fn info(path: &str) -> HashMap<String, String> {
    ok(&["info", path])
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap_or_else(|| panic!("not key: value: {l}"));
            (k.to_owned(), v.trim().to_owned())
        })
        .collect()
}

/// The item tokens of `cat`/`slice` output, in order.
fn tokens(out: &str) -> Vec<&str> {
    out.split(['[', ']', ',', ' ', '\n']).filter(|t| !t.is_empty()).collect()
}

/// The bits of a printed float; every NaN alike.
fn float_bits(tok: &str, f32_: bool) -> u64 {
    if f32_ {
        let x: f32 = tok.parse().unwrap_or_else(|_| panic!("not an f32: {tok}"));
        u64::from(if x.is_nan() { f32::NAN.to_bits() } else { x.to_bits() })
    } else {
        let x: f64 = tok.parse().unwrap_or_else(|_| panic!("not an f64: {tok}"));
        if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        }
    }
}

/// The bits of a stored little-endian float; every NaN alike.
fn stored_float_bits(item: &[u8]) -> u64 {
    if item.len() == 4 {
        let x = f32::from_le_bytes(item.try_into().unwrap());
        u64::from(if x.is_nan() { f32::NAN.to_bits() } else { x.to_bits() })
    } else {
        let x = f64::from_le_bytes(item.try_into().unwrap());
        if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        }
    }
}

/// Check that printed `toks` are the items of `data` read as `dtype`
/// (little-endian numbers, complex pairs, or hex bytes without a dtype).
fn assert_items(toks: &[&str], data: &[u8], itemsize: usize, dtype: Option<&str>, what: &str) {
    assert_eq!(toks.len(), data.len() / itemsize, "{what}: item count");
    for (i, (tok, item)) in toks.iter().zip(data.chunks_exact(itemsize)).enumerate() {
        let mut le = [0u8; 16];
        le[..itemsize.min(16)].copy_from_slice(&item[..itemsize.min(16)]);
        let good = match dtype.map(|d| d.trim_start_matches(['<', '|'])) {
            Some(k) if k.starts_with('i') => {
                let shift = 128 - 8 * itemsize as u32;
                tok.parse::<i128>().ok() == Some(i128::from_le_bytes(le) << shift >> shift)
            }
            Some(k) if k.starts_with('u') => tok.parse::<u128>().ok() == Some(u128::from_le_bytes(le)),
            Some("f4" | "f8") => float_bits(tok, itemsize == 4) == stored_float_bits(item),
            Some("c16") => {
                let body = tok.strip_suffix('j').expect("complex ends in j");
                let cut = (1..body.len())
                    .rev()
                    .find(|&k| matches!(&body[k..=k], "+" | "-") && !body[..k].ends_with('e'))
                    .expect("complex has a sign between its parts");
                float_bits(&body[..cut], false) == stored_float_bits(&item[..8])
                    && float_bits(body[cut..].trim_start_matches('+'), false) == stored_float_bits(&item[8..])
            }
            _ => *tok == format!("0x{}", hex(item)),
        };
        assert!(good, "{what}: item {i} printed as {tok}, stored {item:?} ({dtype:?})");
    }
}

/// Check `caterva info` against each case's spec.
#[test]
fn info_describes_every_kind_of_file() {
    let ctx = ctx();
    for c in cases() {
        let (s, what) = (&c.spec, &c.name);
        let m = info(&s.path);
        let arr = Array::open(&ctx, &s.path).unwrap().info();
        assert_eq!(m["path"], s.path, "{what}");
        assert_eq!(m["storage"], if s.contiguous { "contiguous" } else { "sparse" }, "{what}");
        assert_eq!(m["ndim"], s.shape.len().to_string(), "{what}");
        assert_eq!(m["shape"], format!("{:?}", s.shape), "{what}");
        if !s.shape.is_empty() {
            assert_eq!(m["chunkshape"], format!("{:?}", s.chunks), "{what}");
            assert_eq!(m["blockshape"], format!("{:?}", s.blocks), "{what}");
        }
        assert_eq!(m["itemsize"], s.itemsize.to_string(), "{what}");
        assert_eq!(m["dtype"], s.dtype.clone().unwrap_or_else(|| "(none)".into()), "{what}");
        assert_eq!(m["nitems"], s.shape.iter().product::<i64>().to_string(), "{what}");
        assert_eq!(m["nchunks"], arr.nchunks.to_string(), "{what}");
        assert_eq!(m["nbytes"], arr.nbytes.to_string(), "{what}");
        assert_eq!(m["cbytes"], arr.cbytes.to_string(), "{what}");
        let ratio = arr.nbytes as f64 / arr.cbytes as f64;
        assert_eq!(m["cratio"], format!("{ratio:.2}"), "{what}");
        assert!(["zstd", "lz4", "lz4hc", "blosclz", "zlib"].contains(&m["codec"].as_str()), "{what}: {}", m["codec"]);
        assert_eq!(m["clevel"], arr.cparams.clevel.to_string(), "{what}");
        assert_eq!(m["checksums"], "no", "{what}");
        assert!(m["filters"].contains("shuffle"), "{what}: {}", m["filters"]);
        let names = |v: &str| v.split(", ").map(str::to_owned).collect::<Vec<_>>();
        for (k, _) in &s.meta {
            assert!(names(&m["metalayers"]).contains(k), "{what}: metalayers {}", m["metalayers"]);
        }
        for (k, _) in &s.vlmeta {
            assert!(names(&m["vlmetalayers"]).contains(k), "{what}: vlmetalayers {}", m["vlmetalayers"]);
        }
    }
    let ours = info(&case("ours_i8").spec.path);
    assert_eq!((ours["codec"].as_str(), ours["clevel"].as_str()), ("zstd", "5"));
    assert_eq!(ours["metalayers"], "caterva, b2nd, units");
    assert_eq!(ours["vlmetalayers"], "history");
    assert_eq!(info(&case("c2d_i2_sparse").spec.path)["vlmetalayers"], "(none)");
}

/// The JSON object printed by `caterva ARGS`.
fn json_of(args: &[&str]) -> Json {
    let out = ok(args);
    assert!(out.ends_with("}\n"), "{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("caterva {args:?}: not JSON ({e}):\n{out}"))
}

#[test]
fn info_json_has_the_same_fields() {
    let c = case("b2d_f8");
    let j = json_of(&["info", &c.spec.path, "--json"]);
    let text = info(&c.spec.path);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys[..4], ["path", "storage", "ndim", "shape"], "the order of the text output");
    assert_eq!(keys.len(), text.len(), "{keys:?}");
    assert_eq!(j["path"], c.spec.path.as_str());
    assert_eq!(j["storage"], "contiguous");
    assert_eq!(j["ndim"], 2);
    assert_eq!(j["shape"], serde_json::json!([4, 6]));
    assert_eq!(j["chunkshape"], serde_json::json!([3, 4]));
    assert_eq!(j["dtype"], "<f8");
    assert_eq!(j["filters"], serde_json::json!(["shuffle"]));
    assert_eq!(j["metalayers"], serde_json::json!(["b2nd", "units"]));
    assert_eq!(j["vlmetalayers"], serde_json::json!(["history"]));
    assert_eq!(j["checksums"], false);
    for key in ["nitems", "nchunks", "nbytes", "cbytes", "itemsize", "clevel"] {
        assert_eq!(j[key].as_i64().unwrap().to_string(), text[key], "{key}");
    }
    let cratio = j["cratio"].as_f64().unwrap();
    assert_eq!(format!("{cratio:.2}"), text["cratio"]);
    let none = json_of(&["info", "--json", &case("c1d_u1").spec.path]);
    assert_eq!(none["dtype"], Json::Null);
}

#[test]
fn cat_prints_every_item_by_dtype() {
    for c in cases() {
        let out = ok(&["cat", &c.spec.path]);
        assert_items(&tokens(&out), &c.data, c.spec.itemsize, c.spec.dtype.as_deref(), &c.name);
        // One line per innermost row; a 0-dim array is its item alone.
        let rows: i64 = c.spec.shape.iter().rev().skip(1).product();
        let blank = out.lines().filter(|l| l.is_empty()).count() as i64;
        assert_eq!(out.lines().count() as i64 - blank, rows, "{}:\n{out}", c.name);
        assert_eq!(c.spec.shape.is_empty(), !out.starts_with('['), "{}", c.name);
    }
    // The exact layout, NumPy's.
    let i8 = ok(&["cat", &case("ours_i8").spec.path]);
    assert!(i8.starts_with("[[-7, 3, 13, 23, 33],\n [43, 53, "), "{i8}");
    assert!(i8.ends_with(", 183]]\n"), "{i8}");
    let f8 = ok(&["cat", &case("ours_f8_sparse").spec.path]);
    assert!(f8.starts_with("[[[-3.25, -2.75, -2.25, -1.75, -1.25],\n  [-0.75, -0.25, NaN, -inf, 1.25],\n"), "{f8}");
    assert!(f8.contains("],\n\n [["), "a blank line between planes:\n{f8}");
    assert_eq!(ok(&["cat", &case("ours_v3").spec.path]), "[0x00254a, 0x6f94b9, 0xde0328, 0x4d7297, 0xbce106]\n");
}

#[test]
fn cat_reads_items_as_another_dtype_on_request() {
    let c = case("c2d_i8_sparse");
    let out = ok(&["cat", &c.spec.path, "--dtype", "<i8"]);
    assert_items(&tokens(&out), &c.data, 8, Some("<i8"), "c2d_i8_sparse as <i8");
    let out = ok(&["cat", "--dtype=<u8", &c.spec.path]);
    assert_items(&tokens(&out), &c.data, 8, Some("<u8"), "c2d_i8_sparse as <u8");
}

/// The items of `data` (C order, `shape`) in the box `lo..hi`.
fn sub_box(data: &[u8], shape: &[i64], itemsize: usize, lo: &[i64], hi: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let n: i64 = shape.iter().product();
    for flat in 0..n {
        let mut rest = flat;
        let mut inside = true;
        for axis in (0..shape.len()).rev() {
            let i = rest % shape[axis];
            rest /= shape[axis];
            inside &= lo[axis] <= i && i < hi[axis];
        }
        if inside {
            out.extend_from_slice(&data[flat as usize * itemsize..(flat as usize + 1) * itemsize]);
        }
    }
    out
}

#[test]
fn slice_selects_like_numpy() {
    let c = case("b3d_f4_ragged");
    assert_eq!(c.spec.shape, [5, 6, 7]);
    let want = |lo: &[i64], hi: &[i64]| sub_box(&c.data, &c.spec.shape, 4, lo, hi);
    // Ranges, an index (which drops its axis) and negative bounds.
    let out = ok(&["slice", &c.spec.path, "1:4,2,-3:"]);
    assert_items(&tokens(&out), &want(&[1, 2, 4], &[4, 3, 7]), 4, Some("<f4"), "1:4,2,-3:");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.starts_with("[[") && !out.starts_with("[[["), "{out}");
    // Missing axes select everything; bounds are clipped; an index counts from the end.
    let out = ok(&["slice", &c.spec.path, "-1,:100"]);
    assert_items(&tokens(&out), &want(&[4, 0, 0], &[5, 6, 7]), 4, Some("<f4"), "-1,:100");
    let out = ok(&["slice", &c.spec.path, "2,3,4"]);
    assert_items(&tokens(&out), &want(&[2, 3, 4], &[3, 4, 5]), 4, Some("<f4"), "2,3,4");
    assert!(!out.starts_with('['), "a single item prints bare: {out}");
    assert_eq!(ok(&["slice", &c.spec.path, "3:3"]), "[]\n");
    // Steps, forwards and backwards: [::2, 5:0:-3, -1] = rows 0, 2, 4; columns 5, 2; item 6.
    let out = ok(&["slice", &c.spec.path, "::2,5:0:-3,-1"]);
    let picked: Vec<u8> =
        [0i64, 2, 4].iter().flat_map(|&i| [5i64, 2].map(|j| want(&[i, j, 6], &[i + 1, j + 1, 7]))).flatten().collect();
    assert_items(&tokens(&out), &picked, 4, Some("<f4"), "::2,5:0:-3,-1");
    assert_eq!(out.lines().count(), 3, "{out}");
    // A sparse python-caterva array, read as another dtype.
    let c = case("c2d_i8_sparse");
    let out = ok(&["slice", &c.spec.path, "-2:", "--dtype", "<i8"]);
    assert_items(&tokens(&out), &sub_box(&c.data, &c.spec.shape, 8, &[18, 0], &[20, 3]), 8, Some("<i8"), "-2:");
    // A 0-dim array takes an empty selection.
    let c = case("b0d_f8");
    assert_items(&tokens(&ok(&["slice", &c.spec.path, ""])), &c.data, 8, Some("<f8"), "b0d_f8");
}

/// Open `path` with the library, check that it holds `c`'s items and metalayers.
fn assert_same_array(path: &Path, c: &Case) -> Array {
    let arr = Array::open(&ctx(), s(path)).unwrap();
    assert_eq!(arr.shape(), c.spec.shape.as_slice(), "{}", c.name);
    assert!(arr.to_vec().unwrap() == c.data, "{}: items differ", c.name);
    for (k, v) in &c.spec.meta {
        assert_eq!(&arr.meta_get(k).unwrap(), v, "{}: metalayer {k}", c.name);
    }
    for (k, v) in &c.spec.vlmeta {
        assert_eq!(&arr.vlmeta_get(k).unwrap(), v, "{}: vlmetalayer {k}", c.name);
    }
    arr
}

#[test]
fn copy_applies_new_partitions_codec_and_storage() {
    let dir = out_dir("copy");
    let c = case("ours_i8");
    let dst = dir.join("i8.b2nd");
    let args = ["copy", &c.spec.path, s(&dst), "--chunks", "2,3", "--blocks", "1,2"];
    let out = ok(&[&args[..], &["--codec", "lz4", "--clevel", "3", "--sparse", "--threads", "2"]].concat());
    assert!(out.contains("sparse [4, 5], chunks [2, 3], blocks [1, 2], lz4 clevel 3"), "{out}");
    let arr = assert_same_array(&dst, c);
    let i = arr.info();
    assert_eq!((i.chunkshape, i.blockshape), (vec![2, 3], vec![1, 2]));
    assert!(!i.contiguous);
    assert_eq!((i.cparams.codec, i.cparams.clevel), (Codec::Lz4, 3));
    assert_eq!(arr.dtype().as_deref(), Some("<i8"));
    assert!(dst.join("chunks.b2frame").is_file());

    // Defaults keep everything: a python-blosc2 sparse array stays one, same partitions and codec.
    let c = case("b2d_i2_sparse");
    let dst = dir.join("i2.b2nd");
    ok(&["copy", &c.spec.path, s(&dst)]);
    let arr = assert_same_array(&dst, c);
    let src = Array::open(&ctx(), &c.spec.path).unwrap().info();
    let i = arr.info();
    assert_eq!((&i.chunkshape, &i.blockshape), (&c.spec.chunks, &c.spec.blocks));
    assert!(!i.contiguous);
    assert_eq!(i.cparams.codec, src.cparams.codec);
    assert_eq!(arr.dtype(), c.spec.dtype);

    // Chunks alone: blocks are the source's, cut to fit; a python-caterva file made contiguous.
    let c = case("c3d_i4");
    let dst = dir.join("i4.b2frame");
    ok(&["copy", &c.spec.path, s(&dst), "--chunks", "1,6,7", "--contiguous", "--codec", "zlib"]);
    let i = assert_same_array(&dst, c).info();
    assert_eq!(i.blockshape, [1, 2, 2]);
    assert!(i.contiguous);
    assert_eq!(info(s(&dst))["codec"], "zlib");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn copy_replaces_only_with_force_and_never_its_source() {
    let dir = out_dir("copy-force");
    let c = case("ours_i8");
    let dst = dir.join("x.b2frame");
    ok(&["copy", &c.spec.path, s(&dst)]);
    let err = fails(&["copy", &c.spec.path, s(&dst)], 2);
    assert!(err.contains("exists; pass --force"), "{err}");
    ok(&["copy", &c.spec.path, s(&dst), "--force", "--clevel", "1"]);
    assert_eq!(info(s(&dst))["clevel"], "1");
    // The source under another name, even with --force.
    let alias = format!("{}/../{}/x.b2frame", s(&dir), dir.file_name().unwrap().to_str().unwrap());
    let err = fails(&["copy", s(&dst), &alias, "--force"], 2);
    assert!(err.contains("is the source array itself"), "{err}");
    assert_same_array(&dst, c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_accepts_sound_files() {
    for c in cases() {
        let out = ok(&["verify", &c.spec.path]);
        let n = Array::open(&ctx(), &c.spec.path).unwrap().info().nchunks;
        assert_eq!(out, format!("{}: {n} chunks, all sound\n", c.spec.path), "{}", c.name);
    }
}

/// The stored bytes of chunk `n` of `array` (a frame file): a sparse copy
/// (which copies the chunks as they are: same partitions and codec) keeps
/// each chunk in a file of its own.
fn chunk_bytes(array: &Path, n: i64) -> Vec<u8> {
    let sparse = array.with_extension(format!("chunks-{n}.b2nd"));
    ok(&["copy", s(array), s(&sparse), "--sparse", "--force"]);
    let bytes = std::fs::read(sparse.join(format!("{n:08X}.chunk"))).unwrap();
    std::fs::remove_dir_all(&sparse).unwrap();
    bytes
}

/// Flip the bits `mask` of byte `at` (negative: from the end) of chunk `n`
/// of the frame file `array`, found in the file.
fn damage_chunk(array: &Path, n: i64, at: isize, mask: u8) {
    let chunk = chunk_bytes(array, n);
    let mut bytes = std::fs::read(array).unwrap();
    let found: Vec<usize> =
        (0..bytes.len() - chunk.len() + 1).filter(|&i| bytes[i..i + chunk.len()] == chunk[..]).collect();
    assert_eq!(found.len(), 1, "chunk {n} is in {} once", array.display());
    let offset = if at < 0 { chunk.len() - at.unsigned_abs() } else { at as usize };
    bytes[found[0] + offset] ^= mask;
    std::fs::write(array, bytes).unwrap();
}

#[test]
fn verify_reports_damaged_chunks() {
    let dir = out_dir("verify");
    // A frame file with a damaged chunk header: opening leaves chunk headers
    // to the reads, so verify names the chunk (exit 1, not 2).
    let file = dir.join("damaged.b2frame");
    ok(&["copy", &case("ours_i8").spec.path, s(&file)]);
    // Byte 5 of its header: its uncompressed size.
    damage_chunk(&file, 2, 5, 0xff);
    let r = caterva(&["verify", s(&file), "--threads", "2"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // Damage a read finds in an array that opened is corrupt data (the C
    // API's BLOSC_FAILED), named by its chunk.
    assert!(r.stdout.starts_with("chunk 2: corrupt data: "), "{}", r.stdout);
    assert!(r.stdout.contains("chunk 2: chunk cbytes"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{}: 1 of 6 chunks damaged", s(&file))), "{}", r.stdout);
    // Reading it fails too: it opens, and the read that reaches chunk 2 fails.
    let err = fails(&["cat", s(&file)], 1);
    assert!(err.contains("corrupt data"), "{err}");

    // A sparse directory with checksums, damaged in the payload of chunks 0
    // and 3 (one file each): opens, and verify names both chunks.
    let sparse = dir.join("damaged.b2nd");
    ok(&["copy", &case("ours_f8_sparse").spec.path, s(&sparse), "--checksums"]);
    for n in [0, 3] {
        let f = sparse.join(format!("{n:08X}.chunk"));
        let mut bytes = std::fs::read(&f).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        std::fs::write(&f, bytes).unwrap();
    }
    let r = caterva(&["verify", s(&sparse), "--threads", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let damaged: Vec<&str> = r.stdout.lines().filter_map(|l| l.split(':').next()).collect();
    assert_eq!(damaged[..2], ["chunk 0", "chunk 3"], "{}", r.stdout);
    assert!(r.stdout.ends_with(&format!("{}: 2 of 12 chunks damaged\n", s(&sparse))), "{}", r.stdout);
    assert!(r.stderr.contains("2 damaged chunk"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_checks_checksums() {
    let dir = out_dir("verify-sums");
    // Damage at the end of a chunk (codec payload): only a checksum sees it.
    let file = dir.join("sums.b2frame");
    ok(&["copy", &case("ours_i8").spec.path, s(&file), "--checksums"]);
    assert!(Array::open(&ctx(), s(&file)).unwrap().has_checksums());
    ok(&["verify", s(&file)]);
    damage_chunk(&file, 1, -1, 0x01);
    let r = caterva(&["verify", s(&file)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("chunk 1: corrupt data: chunk 1 fails its checksum"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_reports_a_damaged_checksum_table() {
    let dir = out_dir("verify-table");
    let file = dir.join("sums.b2frame");
    ok(&["copy", &case("ours_i8").spec.path, s(&file), "--checksums"]);
    let sound = std::fs::read(&file).unwrap();
    // The table's name (its last occurrence; the first is the header's marker),
    // damaged as users found it: the file is refused at open, as damaged.
    let name = b"caterva.xxh3";
    let at = (0..sound.len() - name.len()).rev().find(|&i| &sound[i..i + name.len()] == name).unwrap();
    let mut bytes = sound.clone();
    bytes[at + 5] = 0xf6;
    std::fs::write(&file, &bytes).unwrap();
    let r = caterva(&["verify", s(&file)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with(&format!("{}: damaged: corrupt data: the array was written with checksums", s(&file))),
        "{}",
        r.stdout
    );
    let r = caterva(&["verify", "--json", s(&file)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let j: Json = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout));
    assert_eq!((&j["chunks"], &j["sound"], &j["problems"][0]["chunk"]), (&Json::Null, &Json::from(false), &Json::Null));
    assert!(j["problems"][0]["reason"].as_str().unwrap().contains("checksum table"), "{}", r.stdout);

    // --require-checksums: a sound file without checksums is reported, one with them is not.
    std::fs::write(&file, &sound).unwrap();
    ok(&["verify", "--require-checksums", s(&file)]);
    let plain = &case("ours_i8").spec.path;
    ok(&["verify", plain]);
    let r = caterva(&["verify", "--require-checksums", plain]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("keeps no checksum table"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let dir = out_dir("usage");
    let p = case("ours_i8").spec.path.as_str();
    let dst = dir.join("never.b2frame");
    let d = s(&dst);
    // clap's own errors, and the tool's (reported the same way).
    let cases: &[(&[&str], &str)] = &[
        (&[], "Usage: caterva <COMMAND>"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["--frob"], "unexpected argument '--frob' found"),
        (&["info"], "required arguments were not provided:\n  <PATH>"),
        (&["info", p, "extra"], "unexpected argument 'extra' found"),
        (&["info", p, "--bogus"], "unexpected argument '--bogus' found"),
        (&["cat", p, "--dtype"], "a value is required for '--dtype <DTYPE>'"),
        (&["cat", p, "--dtype", "<i4"], "does not describe items of 8 bytes"),
        (&["slice", p], "required arguments were not provided:\n  <SELECTION>"),
        (&["slice", p, "0:4:0"], "the step cannot be 0"),
        (&["slice", p, "4"], "index 4 is out of bounds for axis 0 with size 4"),
        (&["slice", p, "1,2,3"], "the array has 2 axes"),
        (&["slice", p, "x:"], "is not START:STOP"),
        (&["copy", p], "required arguments were not provided:\n  <DST>"),
        (&["copy", p, d, "--codec", "snappy"], "unknown codec 'snappy'"),
        (&["copy", p, d, "--clevel", "10"], "not a level from 0 to 9"),
        (&["copy", p, d, "--chunks", "2"], "--chunks needs 2 entries"),
        (&["copy", p, d, "--chunks", "2,x"], "'x' is not a valid number"),
        (&["copy", p, d, "--chunks", "2,2", "--blocks", "3,3"], "block"),
        (&["copy", p, d, "--sparse", "--contiguous"], "'--sparse' cannot be used with '--contiguous'"),
        (&["verify", p, "--threads", "0"], "at least 1"),
        (&["verify", p, "-j", "x"], "'x' is not a valid number"),
        (&["verify", p, "--sparse"], "unexpected argument '--sparse' found"),
    ];
    for (args, want) in cases {
        let err = fails(args, 2);
        assert!(err.contains(want), "caterva {args:?}: '{want}' not in\n{err}");
        // A pointer to the help (the help itself when no command is given).
        assert!(err.contains("try '--help'") || args.is_empty(), "caterva {args:?}: no hint in\n{err}");
    }
    // The usage of the command concerned, for the tool's own errors too.
    let err = fails(&["slice", p, "0:4:0"], 2);
    assert!(err.starts_with("error: '0:4:0' (axis 0): the step cannot be 0\n"), "{err}");
    assert!(err.contains("\nUsage: caterva slice [OPTIONS] <PATH> <SELECTION>\n"), "{err}");
    assert!(!dst.exists(), "a refused copy wrote nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_or_foreign_files_exit_2_cleanly() {
    let dir = out_dir("missing");
    let missing = dir.join("nothing-here.b2frame");
    for cmd in ["info", "cat", "verify"] {
        let err = fails(&[cmd, s(&missing)], 2);
        assert_eq!(err, format!("caterva: cannot open '{0}': invalid storage: '{0}' does not exist\n", s(&missing)));
    }
    let err = fails(&["copy", s(&missing), s(&dir.join("out"))], 2);
    assert!(err.contains("does not exist"), "{err}");
    // A file that is not a frame, and a directory that is not a sparse frame.
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not an array\n").unwrap();
    for path in [s(&text), s(&dir)] {
        let err = fails(&["info", path], 2);
        assert!(err.starts_with(&format!("caterva: cannot open '{path}'")), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_and_version() {
    let help = ok(&["--help"]);
    for cmd in ["info", "cat", "slice", "copy", "verify"] {
        assert!(help.contains(&format!("\n  {cmd} ")), "{cmd} missing from\n{help}");
        let own = ok(&[cmd, "--help"]);
        assert!(own.starts_with(&format!("Usage: caterva {cmd}")), "{own}");
        assert_eq!(ok(&["help", cmd]), own);
    }
    assert!(ok(&["copy", "-h"]).contains("--chunks <a,b,...>"));
    let version = ok(&["--version"]);
    assert!(version.starts_with(&format!("caterva {} (", env!("CARGO_PKG_VERSION"))), "{version}");
    assert!(version.contains("c-blosc2 2."), "{version}");
}

#[test]
fn quiet_and_short_options() {
    let dir = out_dir("quiet");
    let c = case("ours_i8");
    let dst = dir.join("q.b2frame");
    // -q: copy prints nothing (errors aside); -f replaces; -j sets the threads.
    assert_eq!(ok(&["copy", &c.spec.path, s(&dst), "-q", "-j", "2"]), "");
    assert_eq!(ok(&["copy", &c.spec.path, s(&dst), "-fq", "--clevel", "2"]), "");
    assert_eq!(info(s(&dst))["clevel"], "2");
    assert_same_array(&dst, c);
    // verify -q: nothing for a sound array (the exit status says it).
    assert_eq!(ok(&["verify", "-q", s(&dst)]), "");
    // cat and slice print the same with -q and --no-progress; -d is --dtype, -a --all.
    let all = ok(&["cat", &c.spec.path]);
    assert_eq!(ok(&["cat", "-q", "-j", "1", &c.spec.path]), all);
    assert_eq!(ok(&["slice", &c.spec.path, "-1", "--no-progress", "-q"]), ok(&["slice", &c.spec.path, "-1"]));
    let u = case("c2d_i8_sparse");
    assert_eq!(ok(&["cat", &u.spec.path, "-d", "<u8", "-a"]), ok(&["cat", &u.spec.path, "--dtype", "<u8"]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_json_and_quiet_reports() {
    // A sound array.
    let c = case("b2d_i2_sparse");
    let n = Array::open(&ctx(), &c.spec.path).unwrap().info().nchunks;
    let want = serde_json::json!({"path": c.spec.path, "chunks": n, "problems": [], "unsupported": {}, "sound": true});
    assert_eq!(json_of(&["verify", &c.spec.path, "--json"]), want);
    assert_eq!(json_of(&["verify", "-q", "--json", &c.spec.path]), want, "-q keeps the essential output");

    // Damaged chunks 0 and 3 of a sparse array: the same problems as the text output.
    let dir = out_dir("verify-json");
    let sparse = dir.join("damaged.b2nd");
    ok(&["copy", &case("ours_f8_sparse").spec.path, s(&sparse), "--checksums"]);
    for n in [0, 3] {
        let f = sparse.join(format!("{n:08X}.chunk"));
        let mut bytes = std::fs::read(&f).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        std::fs::write(&f, bytes).unwrap();
    }
    let text = caterva(&["verify", s(&sparse)]);
    let r = caterva(&["verify", s(&sparse), "--json", "-j", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let j: Json = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout));
    assert_eq!((&j["path"], &j["chunks"], &j["sound"]), (&Json::from(s(&sparse)), &Json::from(12), &Json::from(false)));
    let lines: Vec<String> = j["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("chunk {}: {}", p["chunk"].as_i64().unwrap(), p["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    assert!(lines[0].starts_with("chunk 0: ") && lines[1].starts_with("chunk 3: "), "{lines:?}");
    assert_eq!(text.stdout.lines().take(2).collect::<Vec<_>>(), lines);
    // -q: the problems without the summary; the failure still on stderr.
    let q = caterva(&["verify", "-q", s(&sparse)]);
    assert_eq!(q.code, 1);
    assert_eq!(q.stdout, format!("{}\n", lines.join("\n")));
    assert!(q.stderr.contains("2 damaged chunk"), "{}", q.stderr);

    // A frame with a damaged chunk header: the chunk is named.
    let file = dir.join("damaged.b2frame");
    ok(&["copy", &case("ours_i8").spec.path, s(&file)]);
    damage_chunk(&file, 2, 5, 0xff);
    let r = caterva(&["verify", "--json", s(&file)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let j: Json = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout));
    assert_eq!(
        (&j["chunks"], &j["sound"], &j["problems"][0]["chunk"]),
        (&Json::from(6), &Json::from(false), &Json::from(2))
    );
    assert!(j["problems"][0]["reason"].as_str().unwrap().starts_with("corrupt data: "), "{}", r.stdout);
    // A frame whose structure is damaged (its header): reported as a whole.
    ok(&["copy", &case("ours_i8").spec.path, s(&file), "--force"]);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[70] = 7; // the header's filter count
    std::fs::write(&file, bytes).unwrap();
    let r = caterva(&["verify", "--json", s(&file)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let j: Json = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout));
    assert_eq!((&j["chunks"], &j["sound"], &j["problems"][0]["chunk"]), (&Json::Null, &Json::from(false), &Json::Null));
    assert!(j["problems"][0]["reason"].as_str().unwrap().starts_with("invalid format: "), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mistyped_commands_and_options_get_suggestions() {
    for (typo, want) in [("inf", "info"), ("verfy", "verify"), ("slise", "slice"), ("cpy", "copy")] {
        let err = fails(&[typo], 2);
        assert!(err.contains(&format!("unrecognized subcommand '{typo}'")), "{err}");
        assert!(err.contains(&format!("a similar subcommand exists: '{want}'")), "{err}");
    }
    let p = case("ours_i8").spec.path.as_str();
    let err = fails(&["copy", p, "x.b2frame", "--forse"], 2);
    assert!(err.contains("a similar argument exists: '--force'"), "{err}");
    let err = fails(&["info", p, "--jsn"], 2);
    assert!(err.contains("a similar argument exists: '--json'"), "{err}");
}

/// Run `caterva ARGS` with stdout and stderr on a pseudo-terminal (util-linux
/// `script`); its exit status and what it wrote there (`\r\n` line ends), or
/// `None` where `script` cannot run.
fn in_terminal(args: &[&str]) -> Option<(i32, String)> {
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let line: Vec<String> =
        std::iter::once(env!("CARGO_BIN_EXE_caterva")).chain(args.iter().copied()).map(quote).collect();
    let out = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert!(!text.contains("panicked"), "caterva {args:?} panicked:\n{text}");
    Some((out.status.code().expect("exited"), text))
}

#[test]
fn a_terminal_gets_at_most_100000_items_without_all() {
    let dir = out_dir("terminal");
    let big = dir.join("big.b2frame");
    let n = 100_001usize;
    let params = Params { itemsize: 1, shape: vec![n as i64], dtype: Some("|u1".into()) };
    let storage = StorageParams {
        chunkshape: vec![40_000],
        blockshape: vec![10_000],
        contiguous: true,
        urlpath: Some(s(&big).to_owned()),
        metalayers: Vec::new(),
    };
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    Array::from_buffer(&ctx(), &params, &storage, &data).unwrap();
    // Redirected, everything prints (and no bar: stderr is not a terminal).
    assert_items(&tokens(&ok(&["cat", s(&big)])), &data, 1, Some("|u1"), "big, redirected");
    let Some((code, out)) = in_terminal(&["cat", s(&big)]) else {
        eprintln!("skipped: util-linux `script` cannot run here");
        return;
    };
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("the selection holds 100001 items; pass --all"), "{out}");
    let (code, out) = in_terminal(&["cat", "--all", "--no-progress", s(&big)]).unwrap();
    assert_eq!(code, 0);
    assert_items(&tokens(&out.replace('\r', "")), &data, 1, Some("|u1"), "big, --all on a terminal");
    let (code, out) = in_terminal(&["slice", s(&big), "-3:"]).unwrap();
    let want = format!("[{}, {}, {}]\r\n", data[n - 3], data[n - 2], data[n - 1]);
    assert_eq!((code, out), (0, want));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ls_lists_the_arrays_in_a_directory_and_orphans_finds_none_there() {
    let dir = out_dir("ls");
    write_ours(&dir);
    std::fs::write(dir.join("notes.txt"), vec![b'x'; 300]).unwrap();
    let out = ok(&["ls", dir.to_str().unwrap()]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), OURS.len(), "{out}");
    for &(name, _, _, _, _, _, contiguous) in OURS {
        let storage = if contiguous { "contiguous" } else { "sparse" };
        assert!(lines.iter().any(|l| l.starts_with(storage) && l.contains(name)), "{name}: {out}");
    }
    assert!(!out.contains("notes.txt"), "{out}");
    let long = ok(&["ls", "--long", "--json", dir.to_str().unwrap()]);
    let rows: serde_json::Value = serde_json::from_str(&long).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), OURS.len());
    assert!(rows[0]["shape"].is_array() && rows[0]["bytes"].as_u64().unwrap() > 0, "{long}");
    // A local array keeps no orphans.
    let first = rows[0]["url"].as_str().unwrap();
    assert!(ok(&["orphans", "--older-than", "0", first]).contains("0 orphan"));
    fails(&["ls", dir.join("missing").to_str().unwrap()], 2);
}
