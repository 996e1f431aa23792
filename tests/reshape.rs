//! Reshaping and new arrays from old: the properties the differential test
//! cannot see (what stays on disk, padding values, metalayers, buffers
//! owned by the caller).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use caterva::{Array, Config, Context, Error, Metalayer, Params, StorageParams};

/// A call that must fail without changing anything.
type BadCall = dyn Fn(&mut Array) -> caterva::Result<()>;

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("caterva-reshape-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn storage(chunks: &[i32], blocks: &[i32], contiguous: bool, url: Option<&Path>) -> StorageParams {
    StorageParams {
        chunkshape: chunks.to_vec(),
        blockshape: blocks.to_vec(),
        contiguous,
        urlpath: url.map(|p| p.to_string_lossy().into_owned()),
        metalayers: Vec::new(),
    }
}

fn iota(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 + 1).collect()
}

/// Name → (content, modification time) of the chunk files of a sparse frame.
fn chunk_files(dir: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".chunk"))
        .map(|e| {
            let p = e.path();
            (
                e.file_name().to_string_lossy().into_owned(),
                (std::fs::read(&p).unwrap(), e.metadata().unwrap().modified().unwrap()),
            )
        })
        .collect()
}

#[test]
fn reshaping_a_sparse_frame_leaves_untouched_chunk_files_alone() {
    let ctx = ctx();
    let dir = scratch("sparse");
    let url = dir.join("a.b2nd");
    let mut a = Array::from_buffer(
        &ctx,
        &Params { itemsize: 1, shape: vec![8, 6], dtype: None },
        &storage(&[4, 3], &[2, 3], false, Some(&url)),
        &iota(48),
    )
    .unwrap();
    let before = chunk_files(&url);
    assert_eq!(before.len(), 4);
    std::thread::sleep(std::time::Duration::from_millis(20));

    // Appending whole chunk rows along axis 0 adds files and touches no old one.
    a.append(&iota(4 * 6), 0).unwrap();
    let after = chunk_files(&url);
    assert_eq!(after.len(), 6);
    for (name, v) in &before {
        assert_eq!(after.get(name), Some(v), "{name} was rewritten by append");
    }

    // A chunk-aligned delete at the start removes files and moves the rest
    // by reordering the index, without rewriting them.
    a.delete(0, 0, 4).unwrap();
    let after_delete = chunk_files(&url);
    assert_eq!(after_delete.len(), 4);
    for (name, v) in &after_delete {
        assert_eq!(after.get(name), Some(v), "{name} was rewritten by delete");
    }
    drop(a);
    let a = Array::open(&ctx, url.to_str().unwrap()).unwrap();
    assert_eq!(a.shape(), &[8, 6]);
    let mut expect = iota(48)[24..].to_vec();
    expect.extend(iota(24));
    assert_eq!(a.to_vec().unwrap(), expect);
    drop(a);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_reshapes_leave_the_file_byte_for_byte() {
    let ctx = ctx();
    let dir = scratch("failed");
    for contiguous in [true, false] {
        let url = dir.join(if contiguous { "a.b2frame" } else { "a.b2nd" });
        let mut a = Array::from_buffer(
            &ctx,
            &Params { itemsize: 2, shape: vec![7, 5], dtype: None },
            &storage(&[3, 2], &[2, 2], contiguous, Some(&url)),
            &iota(70),
        )
        .unwrap();
        let snapshot = |p: &Path| -> Vec<(String, Vec<u8>)> {
            if p.is_file() {
                vec![(String::new(), std::fs::read(p).unwrap())]
            } else {
                let mut v: Vec<_> = std::fs::read_dir(p)
                    .unwrap()
                    .flatten()
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
                    .collect();
                v.sort();
                v
            }
        };
        let before = snapshot(&url);
        let bad: Vec<Box<BadCall>> = vec![
            Box::new(|a| a.resize(&[7, -1], None)),
            Box::new(|a| a.resize(&[7, 3], Some(&[0, 4]))),
            Box::new(|a| a.resize(&[7], None)),
            Box::new(|a| a.insert(&[0u8; 7], 0, 0)),
            Box::new(|a| a.insert(&[0u8; 10], 0, 8)),
            Box::new(|a| a.insert(&[0u8; 10], 2, 0)),
            Box::new(|a| a.append(&[0u8; 10], -1)),
            Box::new(|a| a.delete(1, 3, 3)),
            Box::new(|a| a.delete(0, -1, 1)),
            Box::new(|a| a.delete(0, 0, -1)),
            Box::new(|a| a.squeeze_index(&[true, false])),
            Box::new(|a| a.squeeze_index(&[true])),
            Box::new(|a| a.set_orthogonal_selection(&[&[0, 7], &[1]], &[0u8; 4], &[2, 1])),
            Box::new(|a| a.set_orthogonal_selection(&[&[0, 1], &[1]], &[0u8; 3], &[2, 1])),
        ];
        for (i, f) in bad.iter().enumerate() {
            match f(&mut a) {
                Err(Error::InvalidArgument(_) | Error::InvalidIndex(_)) => {}
                other => panic!("bad call {i} gave {other:?}"),
            }
            assert_eq!(a.shape(), &[7, 5]);
            assert_eq!(a.to_vec().unwrap(), iota(70));
            assert!(snapshot(&url) == before, "bad call {i} changed the file");
        }
        drop(a);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn grow_reads_padding_and_shrink_clears_it() {
    let ctx = ctx();
    let st = storage(&[4], &[2], true, None);
    let mut a = Array::full(&ctx, &Params { itemsize: 1, shape: vec![10], dtype: None }, &st, &[7]).unwrap();
    // Inside the last chunk the new items are its padding (the fill value);
    // a new chunk is zeros.
    a.resize(&[16], None).unwrap();
    assert_eq!(a.to_vec().unwrap(), [vec![7u8; 12], vec![0u8; 4]].concat());
    // A shrink clears what it cuts off; a grow does not bring it back.
    a.resize(&[9], None).unwrap();
    a.resize(&[12], None).unwrap();
    assert_eq!(a.to_vec().unwrap(), [vec![7u8; 9], vec![0u8; 3]].concat());
    // Growing in the middle inserts zeros.
    a.resize(&[14], Some(&[2])).unwrap();
    assert_eq!(a.to_vec().unwrap(), [vec![7u8; 2], vec![0u8; 2], vec![7u8; 7], vec![0u8; 3]].concat());
}

#[test]
fn append_grows_an_empty_axis_and_survives_reopening() {
    let ctx = ctx();
    let dir = scratch("stream");
    for contiguous in [true, false] {
        let url = dir.join(if contiguous { "rows.b2frame" } else { "rows.b2nd" });
        let st = storage(&[7, 5], &[3, 5], contiguous, Some(&url));
        let a = Array::zeros(&ctx, &Params { itemsize: 8, shape: vec![0, 10], dtype: None }, &st).unwrap();
        drop(a);
        let mut expect = Vec::new();
        for round in 0..6u8 {
            let mut a = Array::open(&ctx, url.to_str().unwrap()).unwrap();
            let rows = usize::from(round % 3) + 1;
            let data: Vec<u8> = (0..rows * 10 * 8).map(|i| (i as u8).wrapping_add(round)).collect();
            a.append(&data, 0).unwrap();
            expect.extend_from_slice(&data);
        }
        let a = Array::open(&ctx, url.to_str().unwrap()).unwrap();
        assert_eq!(a.shape(), &[12, 10]);
        assert_eq!(a.to_vec().unwrap(), expect);
        drop(a);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn squeeze_rewrites_chunks_only_when_the_layout_changes() {
    let ctx = ctx();
    let dir = scratch("squeeze");
    let url = dir.join("s.b2frame");
    // Axis 1 has length 1 but chunk length 3: its chunks must be rebuilt.
    let st = storage(&[4, 3, 5], &[2, 2, 5], true, Some(&url));
    let mut st2 = st.clone();
    st2.metalayers = vec![Metalayer { name: "unit".into(), content: b"m".to_vec() }];
    let mut a =
        Array::from_buffer(&ctx, &Params { itemsize: 4, shape: vec![6, 1, 5], dtype: None }, &st2, &iota(120)).unwrap();
    a.vlmeta_add("note", b"kept").unwrap();
    a.squeeze().unwrap();
    assert_eq!(a.shape(), &[6, 5]);
    assert_eq!(a.geometry().chunkshape(), &[4, 5]);
    assert_eq!(a.to_vec().unwrap(), iota(120));
    drop(a);
    let a = Array::open(&ctx, url.to_str().unwrap()).unwrap();
    assert_eq!(a.shape(), &[6, 5]);
    assert_eq!(a.to_vec().unwrap(), iota(120));
    assert_eq!(a.meta_get("unit").unwrap(), b"m");
    assert_eq!(a.vlmeta_get("note").unwrap(), b"kept");
    assert!(!dir.read_dir().unwrap().flatten().any(|e| e.file_name().to_string_lossy().contains("tmp")));
    drop(a);

    // Down to 0 dims.
    let mut b = Array::from_buffer(
        &ctx,
        &Params { itemsize: 2, shape: vec![1, 1], dtype: None },
        &storage(&[1, 1], &[1, 1], false, None),
        &[5, 6],
    )
    .unwrap();
    b.squeeze().unwrap();
    assert_eq!(b.ndim(), 0);
    assert_eq!(b.to_vec().unwrap(), [5, 6]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn copy_and_get_slice_carry_the_right_metadata() {
    let ctx = ctx();
    let dir = scratch("copy");
    let mut st = storage(&[4, 4], &[2, 2], false, None);
    st.metalayers = vec![Metalayer { name: "units".into(), content: b"m/s".to_vec() }];
    let mut a =
        Array::from_buffer(&ctx, &Params { itemsize: 4, shape: vec![9, 7], dtype: None }, &st, &iota(252)).unwrap();
    a.vlmeta_add("history", b"made here").unwrap();

    // Same partitions and codec: the compressed chunks are copied as they are.
    let url = dir.join("c.b2frame");
    let c = a.copy(&ctx, &storage(&[4, 4], &[2, 2], true, Some(&url))).unwrap();
    assert_eq!(c.to_vec().unwrap(), iota(252));
    assert_eq!(c.meta_get("units").unwrap(), b"m/s");
    assert_eq!(c.vlmeta_get("history").unwrap(), b"made here");
    for n in 0..a.info().nchunks {
        assert_eq!(caterva::testing::chunk(&a, n).unwrap(), caterva::testing::chunk(&c, n).unwrap());
    }
    // Its own path is refused rather than destroyed.
    assert!(matches!(c.copy(&ctx, &storage(&[4, 4], &[2, 2], true, Some(&url))), Err(Error::InvalidStorage { .. })));
    assert_eq!(c.to_vec().unwrap(), iota(252));
    drop(c);

    // New partitions.
    let d = a.copy(&ctx, &storage(&[5, 3], &[5, 1], false, None)).unwrap();
    assert_eq!(d.to_vec().unwrap(), iota(252));
    assert_eq!(d.geometry().chunkshape(), &[5, 3]);

    // get_slice: the storage's metalayers, no vlmetalayers.
    let mut sst = storage(&[2, 2], &[1, 2], true, None);
    sst.metalayers = vec![Metalayer { name: "origin".into(), content: vec![1, 2] }];
    let s = a.get_slice(&ctx, &[2, 1], &[6, 4], &sst).unwrap();
    assert_eq!(s.shape(), &[4, 3]);
    assert!(!s.meta_exists("units"));
    assert_eq!(s.meta_get("origin").unwrap(), [1, 2]);
    assert!(!s.vlmeta_exists("history").unwrap());
    let mut want = Vec::new();
    for r in 2..6 {
        want.extend_from_slice(&iota(252)[(r * 7 + 1) * 4..(r * 7 + 4) * 4]);
    }
    assert_eq!(s.to_vec().unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writes_never_touch_a_borrowed_frame_buffer() {
    let ctx = ctx();
    let a = Array::from_buffer(
        &ctx,
        &Params { itemsize: 1, shape: vec![10], dtype: None },
        &storage(&[4], &[2], true, None),
        &iota(10),
    )
    .unwrap();
    let frame = a.to_cframe().unwrap();
    let keep = frame.clone();
    // SAFETY: `frame` outlives the super-chunk built over it.
    let mut b = unsafe { caterva::testing::from_cframe_borrowed(&ctx, &frame) }.unwrap();
    b.append(&[9, 9, 9], 0).unwrap();
    b.set_slice_buffer(&[0], &[1], &[0], &[1]).unwrap();
    b.resize(&[20], None).unwrap();
    assert_eq!(&b.to_vec().unwrap()[..13], &[0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 9, 9, 9]);
    drop(b);
    assert_eq!(frame, keep);
}
