//! The storage format, byte for byte: FORMAT.md's worked example and the
//! consistency checks made when a super-chunk is opened.

use caterva::{Array, Config, Context, Error, Params, StorageParams};

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

/// Shape (10,10), chunks (6,6), blocks (4,4), int16 items 0..99.
fn example() -> Array {
    let params = Params { itemsize: 2, shape: vec![10, 10], dtype: None };
    let st = StorageParams { chunkshape: vec![6, 6], blockshape: vec![4, 4], ..Default::default() };
    let data: Vec<u8> = (0..100i16).flat_map(i16::to_le_bytes).collect();
    Array::from_buffer(&ctx(), &params, &st, &data).unwrap()
}

fn chunk_items(arr: &Array, n: i64) -> Vec<i16> {
    let chunk = caterva::testing::chunk(arr, n).unwrap();
    let out = caterva::testing::decompress(&chunk, arr.geometry().chunk_nbytes()).unwrap();
    out.chunks(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()
}

#[test]
fn worked_example_chunk_layout() {
    let arr = example();
    assert_eq!(arr.info().nchunks, 4);
    assert_eq!(caterva::testing::schunk(&arr).typesize, 2);
    assert_eq!(caterva::testing::schunk(&arr).chunksize, 128);
    let chunk = caterva::testing::chunk(&arr, 0).unwrap();
    assert_eq!(caterva::testing::chunk_sizes(&chunk).unwrap().2, 32, "Blosc2 block = one geometric block");
    #[rustfmt::skip]
    let expect: Vec<i16> = vec![
        0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33,
        4, 5, 0, 0, 14, 15, 0, 0, 24, 25, 0, 0, 34, 35, 0, 0,
        40, 41, 42, 43, 50, 51, 52, 53, 0, 0, 0, 0, 0, 0, 0, 0,
        44, 45, 0, 0, 54, 55, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(chunk_items(&arr, 0), expect);
    // The last chunk holds rows 6..10, cols 6..10 in its first block; the rest is padding.
    let last = chunk_items(&arr, 3);
    assert_eq!(&last[..16], &[66, 67, 68, 69, 76, 77, 78, 79, 86, 87, 88, 89, 96, 97, 98, 99]);
    assert!(last[16..].iter().all(|&v| v == 0));
}

#[test]
fn worked_example_metalayer_bytes() {
    let arr = example();
    let expect: [u8; 44] = [
        0x95, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0x92, 0xd2, 0, 0, 0,
        6, 0xd2, 0, 0, 0, 6, 0x92, 0xd2, 0, 0, 0, 4, 0xd2, 0, 0, 0, 4,
    ];
    assert_eq!(arr.meta_get("caterva").unwrap(), expect);
    // b2nd: the same sections in a fixarray of 7, dtype format 0 and the
    // dtype as str32, zero-padded to leave room for a longer dtype.
    let b2nd = arr.meta_get("b2nd").unwrap();
    assert_eq!(b2nd[0], 0x97);
    assert_eq!(&b2nd[1..44], &expect[1..]);
    assert_eq!(&b2nd[44..53], &[0, 0xdb, 0, 0, 0, 3, b'<', b'u', b'2']);
    assert!(b2nd[53..].iter().all(|&b| b == 0));
    assert_eq!(arr.info().metalayers, vec!["caterva".to_string(), "b2nd".to_string()]);
    assert_eq!(arr.dtype().as_deref(), Some("<u2"));
}

/// Replace every occurrence of `from` in `frame` by `to` (same length).
fn patch_all(frame: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    let mut n = 0;
    for i in 0..frame.len().saturating_sub(from.len() - 1) {
        if &frame[i..i + from.len()] == from {
            frame[i..i + to.len()].copy_from_slice(to);
            n += 1;
        }
    }
    n
}

#[test]
fn either_geometry_metalayer_is_enough_and_they_must_agree() {
    let arr = example();
    let data = arr.to_vec().unwrap();
    let frame = arr.to_cframe().unwrap();
    // Only b2nd (as python-blosc2 writes): readable, dtype kept.
    let mut only_b2nd = frame.clone();
    assert_eq!(patch_all(&mut only_b2nd, b"caterva", b"xaterva"), 1);
    let a = Array::from_cframe(&ctx(), &only_b2nd).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    assert_eq!(a.dtype().as_deref(), Some("<u2"));
    // Only caterva (as the original wrote): readable, no dtype.
    let mut only_caterva = frame.clone();
    assert_eq!(patch_all(&mut only_caterva, b"b2nd", b"x2nd"), 1);
    let a = Array::from_cframe(&ctx(), &only_caterva).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    assert_eq!(a.dtype(), None);
    // Both, disagreeing on the shape: refused.
    let b2nd = arr.meta_get("b2nd").unwrap();
    let mut disagree = frame.clone();
    let pos = disagree.windows(b2nd.len()).position(|w| w == b2nd.as_slice()).unwrap();
    disagree[pos + 12] = 9;
    match Array::from_cframe(&ctx(), &disagree) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("disagree"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
}

#[test]
fn a_super_chunk_without_geometry_is_refused() {
    let arr = example();
    let mut frame = arr.to_cframe().unwrap();
    // Rename the metalayers in the frame header: 'caterva' -> 'xaterva', 'b2nd' -> 'x2nd'.
    assert_eq!(patch_all(&mut frame, b"caterva", b"xaterva"), 1);
    assert_eq!(patch_all(&mut frame, b"b2nd", b"x2nd"), 1);
    match Array::from_cframe(&ctx(), &frame) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("neither"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
}

#[test]
fn geometry_contradicting_the_super_chunk_is_refused() {
    let arr = example();
    let mut frame = arr.to_cframe().unwrap();
    // Claim shape (10, 20) in both metalayers: 6 chunks where the super-chunk holds 4.
    for name in ["caterva", "b2nd"] {
        let meta = arr.meta_get(name).unwrap();
        let pos = frame.windows(meta.len()).position(|w| w == meta.as_slice()).unwrap();
        frame[pos + 21] = 20;
    }
    match Array::from_cframe(&ctx(), &frame) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("chunks"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
}

#[test]
fn garbage_is_not_a_frame() {
    assert!(Array::from_cframe(&ctx(), &[0u8; 10]).is_err());
    assert!(Array::from_cframe(&ctx(), b"this is not a blosc2 frame at all, not even close to one").is_err());
    let dir = std::env::temp_dir().join(format!("caterva-garbage-{}", std::process::id()));
    std::fs::write(&dir, b"garbage garbage garbage garbage garbage garbage garbage").unwrap();
    assert!(Array::open(&ctx(), dir.to_str().unwrap()).is_err());
    std::fs::remove_file(&dir).unwrap();
    assert!(matches!(Array::open(&ctx(), "/nonexistent/caterva/path"), Err(Error::NotFound { .. })));
}

#[test]
fn a_folder_that_is_no_array_is_said_to_be_none() {
    let dir = std::env::temp_dir().join(format!("caterva-not-an-array-{}", std::process::id()));
    let path = dir.to_str().unwrap();
    // Empty, then holding something else (a zarr store, say).
    std::fs::create_dir_all(&dir).unwrap();
    for extra in [None, Some(".zarray")] {
        if let Some(name) = extra {
            std::fs::write(dir.join(name), b"{}").unwrap();
        }
        let e = Array::open(&ctx(), path).unwrap_err();
        assert!(matches!(e, Error::InvalidStorage { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("invalid storage: '{path}' is not a caterva/blosc2 array: a folder without a chunks index ('chunks.b2frame')")
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // A sparse frame that lost its index is damaged, and said to be.
    let st = StorageParams {
        chunkshape: vec![4],
        blockshape: vec![2],
        contiguous: false,
        urlpath: Some(path.to_owned()),
        ..Default::default()
    };
    Array::from_buffer(&ctx(), &Params { itemsize: 1, shape: vec![10], dtype: None }, &st, &[7u8; 10]).unwrap();
    std::fs::remove_file(dir.join("chunks.b2frame")).unwrap();
    let e = Array::open(&ctx(), path).unwrap_err();
    assert!(
        matches!(e, Error::InvalidFormat(ref m) if m.contains("damaged sparse frame") && m.contains("lost its chunks index")),
        "{e:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dtype_is_recorded_kept_and_checked() {
    let ctx = ctx();
    let storage = StorageParams { chunkshape: vec![3, 1], blockshape: vec![2, 1], ..Default::default() };
    let params = Params { itemsize: 8, shape: vec![5, 1], dtype: Some("<f8".into()) };
    let mut a = Array::zeros(&ctx, &params, &storage).unwrap();
    assert_eq!(a.dtype().as_deref(), Some("<f8"));
    a.append(&[0u8; 16], 0).unwrap();
    a.squeeze().unwrap();
    assert_eq!(a.dtype().as_deref(), Some("<f8"));
    let (m, _) = caterva::testing::decode_meta(&a.meta_get("b2nd").unwrap()).unwrap();
    assert_eq!(m.shape, vec![7]);
    let copy = a.copy(&ctx, &StorageParams { chunkshape: vec![4], blockshape: vec![2], ..Default::default() }).unwrap();
    assert_eq!(copy.dtype().as_deref(), Some("<f8"));
    let back = Array::from_cframe(&ctx, &copy.to_cframe().unwrap()).unwrap();
    assert_eq!(back.dtype().as_deref(), Some("<f8"));
    // Set later, checked against the item size and the room kept for it.
    a.set_dtype("<i8").unwrap();
    assert_eq!(a.dtype().as_deref(), Some("<i8"));
    assert!(matches!(a.set_dtype("<f4"), Err(Error::InvalidArgument(_))));
    a.set_dtype("|V8").unwrap();
    // Longer than the room the metalayer keeps (64 characters, and what the
    // squeeze freed): refused, though a new array may be made with it.
    let long = format!("[{}]", "('a', '<f8'), ".repeat(10));
    assert!(matches!(a.set_dtype(&long), Err(Error::InvalidArgument(ref m)) if m.contains("does not fit")));
    assert!(matches!(
        Array::zeros(&ctx, &Params { itemsize: 8, shape: vec![2], dtype: Some("<f4".into()) }, &storage_1d()),
        Err(Error::InvalidArgument(_))
    ));
    // 15 user metalayers leave no slot for b2nd: the caterva guarantee wins.
    let mut st = storage_1d();
    st.metalayers = (0..15).map(|i| caterva::Metalayer { name: format!("m{i}"), content: vec![i as u8] }).collect();
    let full = Array::zeros(&ctx, &Params { itemsize: 8, shape: vec![2], dtype: None }, &st).unwrap();
    assert_eq!(full.dtype(), None);
    assert_eq!(full.info().metalayers.len(), 16);
    // Default dtypes.
    for (item, d) in [(1, "|u1"), (2, "<u2"), (4, "<u4"), (8, "<u8"), (3, "|V3")] {
        let a = Array::zeros(&ctx, &Params { itemsize: item, shape: vec![2], dtype: None }, &storage_1d()).unwrap();
        assert_eq!(a.dtype().as_deref(), Some(d));
    }
}

fn storage_1d() -> StorageParams {
    StorageParams { chunkshape: vec![2], blockshape: vec![1], ..Default::default() }
}

#[test]
fn undecodable_or_contradicting_metalayers_are_refused() {
    let arr = example();
    let frame = arr.to_cframe().unwrap();
    let b2nd = arr.meta_get("b2nd").unwrap();
    let caterva = arr.meta_get("caterva").unwrap();
    let find = |f: &[u8], m: &[u8]| f.windows(m.len()).position(|w| w == m).unwrap();
    // A b2nd metalayer that does not decode (5 fields claimed, then garbage).
    let mut bad = frame.clone();
    let pos = find(&bad, &b2nd);
    bad[pos] = 0x9f;
    match Array::from_cframe(&ctx(), &bad) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("b2nd"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
    // Blocks of 3 instead of 4 in both: same chunk count, but chunks of 6x6
    // items where the super-chunk stores 8x8.
    let mut bad = frame.clone();
    for m in [&caterva, &b2nd] {
        let pos = find(&bad, m);
        bad[pos + 38] = 3;
        bad[pos + 43] = 3;
    }
    match Array::from_cframe(&ctx(), &bad) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("bytes"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
}
