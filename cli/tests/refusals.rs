//! Refusals that say what they are (issue 41, item 4): `verify` gives
//! chunks this build cannot decode a verdict of their own (exit status 3),
//! apart from damage (1, which wins when both are found); `copy` of an
//! array that reads always works, recompressing what it cannot write and
//! saying so (chunks it cannot decode are copied as they are, or refused
//! with exit status 3 when they must be recompressed); neither prints the
//! usage text for what is not a usage error.

use std::path::Path;

use caterva::{Array, Filter, Params, StorageParams};
use serde_json::Value as Json;

mod common;
use common::{ctx, s, scratch_dir, Run};

/// Run the tool ([`common::caterva`]), and check what no run here may do.
fn caterva(args: &[&str]) -> Run {
    let run = common::caterva(args);
    // Runtime failures are never dressed as usage errors.
    assert!(!run.stderr.contains("Usage:"), "caterva {args:?} printed the usage text:\n{}", run.stderr);
    assert!(!run.stderr.contains("blosc2 error"), "caterva {args:?}:\n{}", run.stderr);
    run
}

/// 6 chunks of 100 `<i4` items each (no checksums), values that compress
/// (no chunk is special or stored uncompressed).
fn source(path: &Path, contiguous: bool) -> Vec<u8> {
    let data: Vec<u8> = (0..600i32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    let st = StorageParams {
        chunkshape: vec![100],
        blockshape: vec![50],
        contiguous,
        urlpath: Some(s(path).to_owned()),
        ..Default::default()
    };
    Array::from_buffer(&ctx(), &Params { itemsize: 4, shape: vec![600], dtype: Some("<i4".into()) }, &st, &data)
        .unwrap();
    data
}

/// Make chunk `n` of the sparse array `dir` name filter BYTEDELTA (id 35,
/// a plugin this build lacks) in its last filter slot, where SHUFFLE is.
fn bytedelta(dir: &Path, n: i64) {
    let f = dir.join(format!("{n:08X}.chunk"));
    let mut bytes = std::fs::read(&f).unwrap();
    assert_eq!(bytes[16 + 5], 1, "SHUFFLE in the last slot of chunk {n}'s filters");
    bytes[16 + 5] = 35;
    std::fs::write(&f, bytes).unwrap();
}

/// Damage chunk `n`'s header (its uncompressed size): found at the read.
fn damage(dir: &Path, n: i64) {
    let f = dir.join(format!("{n:08X}.chunk"));
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[5] ^= 0xff;
    std::fs::write(&f, bytes).unwrap();
}

#[test]
fn verify_gives_unsupported_chunks_their_own_verdict() {
    let d = scratch_dir("cli-refusals-verify");
    let arr = d.join("a.b2nd");
    source(&arr, false);
    for n in 0..4 {
        bytedelta(&arr, n);
    }
    let r = caterva(&["verify", s(&arr), "-j", "1"]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", r.stdout);
    for (n, line) in lines[..4].iter().enumerate() {
        assert!(line.starts_with(&format!("chunk {n}: unsupported: the chunk uses filter BYTEDELTA (id 35")), "{line}");
    }
    assert_eq!(
        lines[4],
        format!("{}: unsupported: filter BYTEDELTA (4 chunks); the other 2 of 6 chunks sound", s(&arr))
    );
    assert!(!r.stdout.contains("damaged"), "{}", r.stdout);
    assert_eq!(
        r.stderr.trim(),
        format!("caterva: '{}' uses what this build cannot decode: filter BYTEDELTA (4 chunks)", s(&arr))
    );
    // As JSON: each problem has its kind, the features are counted.
    let r = caterva(&["verify", s(&arr), "--json"]);
    assert_eq!(r.code, 3);
    let j: Json = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["unsupported"], serde_json::json!({"filter BYTEDELTA": 4}));
    assert_eq!(j["problems"][0]["kind"], "unsupported");
    assert_eq!(j["sound"], false);
    // `copy` with the same partitions and compression copies the chunks as
    // they are (no decoding): the copy is as unsupported as its source.
    let r = caterva(&["copy", s(&arr), s(&d.join("same.b2frame")), "-q"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert_eq!(caterva(&["verify", s(&d.join("same.b2frame")), "-q"]).code, 3);
    // Recompressing them needs them decoded: the same verdict, exit 3.
    let r = caterva(&["copy", s(&arr), s(&d.join("copy.b2frame")), "--codec", "zlib"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("cannot copy") && r.stderr.contains("filter BYTEDELTA"), "{}", r.stderr);
    assert!(!d.join("copy.b2frame").exists());
    // Damage too: both are reported, damage decides the exit status.
    damage(&arr, 5);
    let r = caterva(&["verify", s(&arr), "-j", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("chunk 5: corrupt data"), "{}", r.stdout);
    assert!(
        r.stdout.ends_with(&format!("{}: 1 of 6 chunks damaged; unsupported: filter BYTEDELTA (4 chunks)\n", s(&arr))),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("has 1 damaged chunk(s); unsupported: filter BYTEDELTA (4 chunks)"), "{}", r.stderr);
    let j: Json = serde_json::from_str(&caterva(&["verify", s(&arr), "--json"]).stdout).unwrap();
    let kinds: Vec<&str> = j["problems"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["unsupported", "unsupported", "unsupported", "unsupported", "damaged"]);
    // A frame unsupported as a whole (c-blosc2 3.x's variable-length
    // blocks, a flag of its header): reported as such, not as damaged.
    let vl = d.join("vl.b2frame");
    source(&vl, true);
    let mut bytes = std::fs::read(&vl).unwrap();
    bytes[25] |= 0x80; // the header's general flags
    std::fs::write(&vl, bytes).unwrap();
    let r = caterva(&["verify", s(&vl)]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with(&format!("{}: unsupported: ", s(&vl))), "{}", r.stdout);
    assert!(r.stderr.contains("cannot decode: variable-length blocks"), "{}", r.stderr);
    let j: Json = serde_json::from_str(&caterva(&["verify", s(&vl), "--json"]).stdout).unwrap();
    assert_eq!((&j["chunks"], &j["unsupported"]), (&Json::Null, &serde_json::json!({"variable-length blocks": 1})));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn copy_recompresses_what_it_cannot_write() {
    let d = scratch_dir("cli-refusals-copy");
    // A frame that records filter INT_TRUNC (id 36, a plugin this build
    // lacks) in its compression parameters, while its chunks use SHUFFLE
    // alone: it reads, but the library cannot compress with its parameters.
    let src = d.join("int_trunc.b2frame");
    let data = source(&src, true);
    let mut bytes = std::fs::read(&src).unwrap();
    // The header's filter pipeline: its count at byte 70, then the six ids.
    assert_eq!((bytes[70], bytes[71]), (6, 0), "an empty first slot");
    bytes[71] = 36;
    std::fs::write(&src, bytes).unwrap();
    let recorded = Array::open(&ctx(), s(&src)).unwrap().info().cparams;
    assert_eq!(recorded.filters[0], Filter::Other(36));
    let dst = d.join("copy.b2frame");
    let r = caterva(&["copy", s(&src), s(&dst)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "caterva: copy: filter INT_TRUNC (id 36) cannot be run by this build: left out of the copy's filters"
    );
    let copy = Array::open(&ctx(), s(&dst)).unwrap();
    assert_eq!(copy.to_vec().unwrap(), data);
    let cp = copy.info().cparams;
    assert_eq!(
        cp.filters,
        [Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::Shuffle]
    );
    assert_eq!((cp.codec, cp.clevel), (recorded.codec, recorded.clevel), "everything else kept");
    assert_eq!(copy.dtype().as_deref(), Some("<i4"));
    // Asked for another codec: the same change, and the codec.
    let r = caterva(&["copy", s(&src), s(&dst), "--force", "--codec", "zlib", "-q"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("filter INT_TRUNC (id 36)"), "{}", r.stderr);
    assert_eq!(Array::open(&ctx(), s(&dst)).unwrap().info().cparams.codec, caterva::Codec::Zlib);
    // A source the library writes as it is: nothing said.
    let plain = d.join("plain.b2frame");
    source(&plain, true);
    let r = caterva(&["copy", s(&plain), s(&d.join("plain-copy.b2frame")), "-q"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let _ = std::fs::remove_dir_all(&d);
}
