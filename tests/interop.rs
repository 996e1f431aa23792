//! Files move between this library and the real implementations: python-
//! caterva 0.7.3 (which embeds the original C library), python-blosc2, and
//! c-blosc2's own b2nd code. Every crossing compares bytes, not just shapes.
//!
//! The Python peers live in virtual environments that `.ci/setup` creates
//! under `target/interop/` (override with `CATERVA_INTEROP_CATERVA_PYTHON`
//! and `CATERVA_INTEROP_BLOSC2_PYTHON`); `tests/interop/peer.py` is their side.

use std::path::Path;
use std::process::Command;

use caterva::testing::{CHECKSUM_MARKER, CHECKSUM_VLMETA};
use caterva::{Array, Config, Context, Metalayer, Params, StorageParams};

mod common;
use common::{
    blosc2_include, compiler, manifest_dir, peer, profile_dir, read_specs, run, scratch_dir, write_spec, Spec, STRICT,
};

/// A msgpack str: python-blosc2 stores user metadata msgpack-encoded and
/// decodes it for its users, so this is what it reads back as a Python str.
fn msgpack_str(s: &str) -> Vec<u8> {
    assert!(s.len() < 32);
    let mut v = vec![0xa0 | s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}

fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + seed * 13 + (i >> 8)) % 251) as u8).collect()
}

/// One array we write for the peers.
struct Ours {
    name: &'static str,
    shape: &'static [i64],
    chunks: &'static [i32],
    blocks: &'static [i32],
    itemsize: usize,
    dtype: Option<&'static str>,
    /// Grow axis 0 by appends of this many slabs after creation (0: none).
    appended: i64,
}

const OURS: &[Ours] = &[
    Ours { name: "u1_1d", shape: &[10], chunks: &[4], blocks: &[3], itemsize: 1, dtype: None, appended: 0 },
    Ours {
        name: "i2_2d",
        shape: &[7, 9],
        chunks: &[4, 5],
        blocks: &[2, 3],
        itemsize: 2,
        dtype: Some("<i2"),
        appended: 0,
    },
    Ours {
        name: "u4_3d",
        shape: &[5, 6, 7],
        chunks: &[2, 3, 4],
        blocks: &[2, 2, 2],
        itemsize: 4,
        dtype: None,
        appended: 0,
    },
    Ours {
        name: "f8_2d",
        shape: &[20, 3],
        chunks: &[7, 3],
        blocks: &[3, 1],
        itemsize: 8,
        dtype: Some("<f8"),
        appended: 0,
    },
    Ours { name: "v3_2d", shape: &[6, 5], chunks: &[4, 4], blocks: &[2, 3], itemsize: 3, dtype: None, appended: 0 },
    Ours { name: "f8_0d", shape: &[], chunks: &[], blocks: &[], itemsize: 8, dtype: Some("<f8"), appended: 0 },
    Ours { name: "u8_empty", shape: &[0, 4], chunks: &[3, 4], blocks: &[2, 2], itemsize: 8, dtype: None, appended: 0 },
    Ours {
        name: "i4_grown",
        shape: &[0, 6],
        chunks: &[4, 4],
        blocks: &[2, 3],
        itemsize: 4,
        dtype: Some("<i4"),
        appended: 9,
    },
    // One-item chunk rows: each append and the final resize add several
    // chunks at once (one pass over the frame: `Tx::append_chunks`).
    Ours {
        name: "i2_grown_many",
        shape: &[0, 6],
        chunks: &[1, 2],
        blocks: &[1, 2],
        itemsize: 2,
        dtype: Some("<i2"),
        appended: 9,
    },
];

/// Write every case of [`OURS`] in each of the four storages (in-memory
/// arrays are saved to a file the peers can open) and describe them in `dir`.
fn write_ours(dir: &Path) {
    let plain = Context::new(Config { nthreads: 2, ..Config::default() }).unwrap();
    // The array built by streaming writes also keeps checksums: the peers
    // must read it as any other, and python-blosc2 decode its table.
    let summed = Context::new(Config { nthreads: 2, checksums: true, ..Config::default() }).unwrap();
    for (seed, o) in OURS.iter().enumerate() {
        let ctx = if o.appended > 0 { &summed } else { &plain };
        for (contiguous, on_disk) in [(true, true), (false, true), (true, false), (false, false)] {
            let name =
                format!("{}_{}_{}", o.name, if contiguous { "c" } else { "s" }, if on_disk { "disk" } else { "mem" });
            let path = dir.join(format!("{name}.{}", if contiguous { "b2frame" } else { "b2nd" }));
            let url = path.to_string_lossy().into_owned();
            let storage = StorageParams {
                chunkshape: o.chunks.to_vec(),
                blockshape: o.blocks.to_vec(),
                contiguous,
                urlpath: on_disk.then(|| url.clone()),
                metalayers: vec![Metalayer { name: "units".into(), content: msgpack_str(&format!("m/{name}")) }],
            };
            let params = Params { itemsize: o.itemsize, shape: o.shape.to_vec(), dtype: o.dtype.map(str::to_owned) };
            let n: i64 = o.shape.iter().product();
            let mut data = pattern(n as usize * o.itemsize, seed);
            let mut arr = Array::from_buffer(ctx, &params, &storage, &data).unwrap();
            let mut shape = o.shape.to_vec();
            if o.appended > 0 {
                // Stream rows in, then cut one off the front and grow a column at the end.
                let row = o.itemsize * shape[1] as usize;
                for k in 0..o.appended {
                    let more = pattern(row * (1 + k as usize % 2), seed + k as usize);
                    arr.append(&more, 0).unwrap();
                    data.extend_from_slice(&more);
                }
                arr.delete(0, 0, 1).unwrap();
                data.drain(..row);
                shape = arr.shape().to_vec();
                arr.resize(&[shape[0], shape[1] + 1], None).unwrap();
                data = data
                    .chunks(row)
                    .flat_map(|r| r.iter().copied().chain(std::iter::repeat(0).take(o.itemsize)).collect::<Vec<_>>())
                    .collect();
                shape = arr.shape().to_vec();
            }
            arr.vlmeta_add("history", &msgpack_str("written by caterva-rs")).unwrap();
            assert_eq!(arr.to_vec().unwrap(), data, "{name}: our own bytes");
            let mut vlmeta = vec![("history".into(), msgpack_str("written by caterva-rs"))];
            let mut meta = vec![("units".into(), msgpack_str(&format!("m/{name}")))];
            if arr.has_checksums() {
                vlmeta.push((CHECKSUM_VLMETA.into(), arr.vlmeta_get(CHECKSUM_VLMETA).unwrap()));
                // The header marker too: the peers must read past it (and
                // python-blosc2 decode it).
                meta.push((CHECKSUM_MARKER.into(), arr.meta_get(CHECKSUM_MARKER).unwrap()));
            }
            if !on_disk {
                if contiguous {
                    std::fs::write(&path, arr.to_cframe().unwrap()).unwrap();
                } else {
                    arr.save(&url).unwrap();
                }
            }
            drop(arr);
            let spec = Spec {
                path: url,
                contiguous,
                shape,
                chunks: o.chunks.to_vec(),
                blocks: o.blocks.to_vec(),
                itemsize: o.itemsize,
                dtype: Some(o.dtype.map_or_else(|| caterva::testing::default_dtype(o.itemsize), str::to_owned)),
                meta,
                vlmeta,
            };
            write_spec(dir, &name, &spec, &data);
        }
    }
}

/// Open every array described in `dir` (written by a peer) and compare.
fn check_theirs(dir: &Path, expect_dtype: bool) -> usize {
    let ctx = Context::new(Config::default()).unwrap();
    let specs = read_specs(dir);
    assert!(!specs.is_empty(), "the peer wrote nothing");
    for (name, s, data) in &specs {
        let arr = Array::open(&ctx, &s.path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(arr.shape(), s.shape.as_slice(), "{name}: shape");
        assert_eq!(arr.itemsize(), s.itemsize, "{name}: itemsize");
        if !s.shape.is_empty() {
            assert_eq!(arr.geometry().chunkshape(), s.chunks.as_slice(), "{name}: chunks");
            assert_eq!(arr.geometry().blockshape(), s.blocks.as_slice(), "{name}: blocks");
        }
        assert_eq!(arr.info().contiguous, s.contiguous, "{name}: contiguity");
        assert!(arr.to_vec().unwrap() == *data, "{name}: bytes differ");
        if expect_dtype {
            assert_eq!(arr.dtype(), s.dtype, "{name}: dtype");
        }
        for (k, v) in &s.meta {
            assert_eq!(&arr.meta_get(k).unwrap(), v, "{name}: metalayer {k}");
        }
        for (k, v) in &s.vlmeta {
            assert_eq!(&arr.vlmeta_get(k).unwrap(), v, "{name}: vlmeta {k}");
        }
        // A slice too, through the block-level reader.
        if s.shape.len() == 2 && s.shape[0] > 1 {
            let cols = s.shape[1];
            let mut row = vec![0u8; cols as usize * s.itemsize];
            arr.get_slice_buffer(&[1, 0], &[2, cols], &mut row, &[1, cols]).unwrap();
            let start = cols as usize * s.itemsize;
            assert!(row == data[start..start + row.len()], "{name}: row 1 differs");
        }
    }
    specs.len()
}

#[test]
fn python_caterva_reads_ours() {
    let dir = scratch_dir("interop-ours-caterva");
    write_ours(&dir);
    let out = peer("caterva", "check", &dir);
    assert!(out.contains(&format!("{} arrays identical", OURS.len() * 4)), "{out}");
    // Reading them left them as they were: they open here (checksum table,
    // marker and recorded metadata all sound) with the same contents.
    assert_eq!(check_theirs(&dir, true), OURS.len() * 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_blosc2_reads_ours_as_ndarrays() {
    let dir = scratch_dir("interop-ours-blosc2");
    write_ours(&dir);
    let out = peer("blosc2", "check", &dir);
    assert!(out.contains(&format!("{} arrays identical", OURS.len() * 4)), "{out}");
    // Reading them left them as they were: they open here (checksum table,
    // marker and recorded metadata all sound) with the same contents.
    assert_eq!(check_theirs(&dir, true), OURS.len() * 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn we_read_python_caterva() {
    let dir = scratch_dir("interop-theirs-caterva");
    peer("caterva", "write", &dir);
    assert!(check_theirs(&dir, false) >= 6);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn we_read_python_blosc2() {
    let dir = scratch_dir("interop-theirs-blosc2");
    peer("blosc2", "write", &dir);
    assert!(check_theirs(&dir, true) >= 6);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn c_blosc2_b2nd_reads_ours() {
    let dir = scratch_dir("interop-ours-b2nd");
    write_ours(&dir);
    let exe = dir.join("b2nd_read");
    let lib = profile_dir();
    let mut cc = compiler(false);
    cc.arg("-std=c99")
        .args(STRICT)
        .arg("-I")
        .arg(blosc2_include())
        .arg(manifest_dir().join("tests").join("interop").join("b2nd_read.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lblosc2");
    run(&mut cc, "compiling the b2nd reader");
    for (name, s, data) in read_specs(&dir) {
        let out_bin = dir.join(format!("{name}.b2nd-read"));
        let out = run(Command::new(&exe).arg(&s.path).arg(&out_bin), &format!("b2nd reading {name}"));
        let want = format!(
            "ndim {} shape{} dtype {} itemsize {}",
            s.shape.len(),
            s.shape.iter().map(|x| format!(" {x}")).collect::<String>(),
            s.dtype.as_deref().unwrap(),
            s.itemsize
        );
        assert_eq!(out.trim(), want, "{name}");
        assert!(std::fs::read(&out_bin).unwrap() == data, "{name}: b2nd read different bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
