//! The storage format, byte for byte: FORMAT.md's worked example and the
//! consistency checks made when a super-chunk is opened.

use caterva::schunk::DCtx;
use caterva::{Array, Config, Context, Error, Params, StorageParams};

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

/// Shape (10,10), chunks (6,6), blocks (4,4), int16 items 0..99.
fn example() -> Array {
    let params = Params { itemsize: 2, shape: vec![10, 10] };
    let st = StorageParams { chunkshape: vec![6, 6], blockshape: vec![4, 4], ..Default::default() };
    let data: Vec<u8> = (0..100i16).flat_map(i16::to_le_bytes).collect();
    Array::from_buffer(&ctx(), &params, &st, &data).unwrap()
}

fn chunk_items(arr: &Array, n: i64) -> Vec<i16> {
    let chunk = arr.schunk().chunk(n).unwrap();
    let mut out = vec![0u8; arr.geometry().chunk_nbytes()];
    DCtx::new(1).unwrap().decompress(&chunk, &mut out, None).unwrap();
    out.chunks(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()
}

#[test]
fn worked_example_chunk_layout() {
    let arr = example();
    assert_eq!(arr.schunk().nchunks(), 4);
    assert_eq!(arr.schunk().typesize(), 2);
    assert_eq!(arr.schunk().chunksize(), 128);
    let chunk = arr.schunk().chunk(0).unwrap();
    assert_eq!(chunk.info().unwrap().blocksize, 32, "Blosc2 block = one geometric block");
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
    assert_eq!(arr.schunk().meta_names(), vec!["caterva".to_string()]);
}

#[test]
fn a_super_chunk_without_geometry_is_refused() {
    let arr = example();
    let mut frame = arr.to_cframe().unwrap();
    // Rename the metalayer in the frame header: 'caterva' -> 'xaterva'.
    let pos = frame.windows(7).position(|w| w == b"caterva").unwrap();
    frame[pos] = b'x';
    match Array::from_cframe(&ctx(), &frame) {
        Err(Error::InvalidFormat(m)) => assert!(m.contains("caterva"), "{m}"),
        other => panic!("expected InvalidFormat, got {other:?}"),
    }
}

#[test]
fn geometry_contradicting_the_super_chunk_is_refused() {
    let arr = example();
    let mut frame = arr.to_cframe().unwrap();
    // Claim shape (10, 20): 6 chunks where the super-chunk holds 4.
    let meta = arr.meta_get("caterva").unwrap();
    let pos = frame.windows(meta.len()).position(|w| w == meta.as_slice()).unwrap();
    frame[pos + 21] = 20;
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
    assert!(matches!(Array::open(&ctx(), "/nonexistent/caterva/path"), Err(Error::InvalidStorage(_))));
}
