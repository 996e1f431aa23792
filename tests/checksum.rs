//! Per-chunk checksums: kept current by every write, carried by reopen,
//! copies and frames, and a flipped bit is reported, never returned as data.

mod common;

use caterva::testing::CHECKSUM_VLMETA;
use caterva::{Array, Config, Context, Error, Params, StorageParams};

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
}

/// Items of 4 bytes that compress a little, so chunks are mostly payload.
fn items(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((i as u32 / 3) ^ (x as u32 & 0xff)).to_le_bytes()
        })
        .collect()
}

fn storage(url: Option<String>, contiguous: bool) -> StorageParams {
    StorageParams { chunkshape: vec![8, 7], blockshape: vec![3, 4], contiguous, urlpath: url, ..Default::default() }
}

fn storages(tag: &str) -> Vec<StorageParams> {
    let dir = common::scratch_dir(&format!("checksum-{tag}"));
    let path = |n: &str| Some(dir.join(n).to_string_lossy().into_owned());
    vec![storage(None, false), storage(None, true), storage(path("a.b2frame"), true), storage(path("a.b2nd"), false)]
}

/// Apply the same writes to `arr` and to `reference` (an array without
/// checksums), comparing contents and the stored table after each.
fn same_writes(arr: &mut Array, reference: &mut Array) {
    let check = |arr: &Array, reference: &Array, what: &str| {
        assert_eq!(arr.to_vec().unwrap(), reference.to_vec().unwrap(), "{what}");
        assert!(arr.has_checksums(), "{what}");
        assert!(arr.vlmeta_exists(CHECKSUM_VLMETA).unwrap(), "{what}");
    };
    check(arr, reference, "created");
    let patch = items(5 * 9, 7);
    for a in [&mut *arr, &mut *reference] {
        a.set_slice_buffer(&patch, &[5, 9], &[3, 4], &[8, 13]).unwrap();
    }
    check(arr, reference, "set_slice_buffer");
    let slab = items(3 * 20, 8);
    for a in [&mut *arr, &mut *reference] {
        a.append(&slab, 0).unwrap();
    }
    check(arr, reference, "append");
    let col = items(33 * 2, 9);
    for a in [&mut *arr, &mut *reference] {
        a.insert(&col, 1, 5).unwrap();
    }
    check(arr, reference, "insert");
    for a in [&mut *arr, &mut *reference] {
        a.delete(0, 2, 9).unwrap();
    }
    check(arr, reference, "delete");
    for a in [&mut *arr, &mut *reference] {
        a.resize(&[40, 15], None).unwrap();
    }
    check(arr, reference, "resize");
    let sel: [&[i64]; 2] = [&[39, 0, 17], &[14, 3]];
    let vals = items(6, 10);
    for a in [&mut *arr, &mut *reference] {
        a.set_orthogonal_selection(&sel, &vals, &[3, 2]).unwrap();
    }
    check(arr, reference, "set_orthogonal_selection");
}

#[test]
fn checksums_follow_every_write_and_travel_with_the_array() {
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 1);
    for st in storages("writes") {
        let mut arr = Array::from_buffer(&ctx(true), &params, &st, &data).unwrap();
        let mut reference = Array::from_buffer(&ctx(false), &params, &storage(None, false), &data).unwrap();
        assert!(!reference.has_checksums());
        same_writes(&mut arr, &mut reference);
        let want = reference.to_vec().unwrap();

        let again = match &st.urlpath {
            Some(url) => {
                drop(arr);
                Array::open(&ctx(false), url).unwrap()
            }
            None => Array::from_cframe(&ctx(false), &arr.to_cframe().unwrap()).unwrap(),
        };
        assert!(again.has_checksums(), "{st:?}");
        assert_eq!(again.to_vec().unwrap(), want, "{st:?}");

        // Copies keep them (recompressed or not), even with a context that does not ask.
        let same = StorageParams { chunkshape: vec![8, 7], blockshape: vec![3, 4], ..Default::default() };
        let other = StorageParams { chunkshape: vec![5, 5], blockshape: vec![5, 2], ..Default::default() };
        for target in [same, other] {
            let c = again.copy(&ctx(false), &target).unwrap();
            assert!(c.has_checksums());
            assert_eq!(c.to_vec().unwrap(), want);
        }
        let s = again.get_slice(&ctx(false), &[1, 1], &[20, 9], &storage(None, true)).unwrap();
        assert!(s.has_checksums());
    }
}

#[test]
fn checksums_can_be_added_to_an_existing_array_and_are_reserved() {
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let dir = common::scratch_dir("checksum-enable");
    let url = dir.join("a.b2frame").to_string_lossy().into_owned();
    let data = items(600, 2);
    let mut arr = Array::from_buffer(&ctx(false), &params, &storage(Some(url.clone()), true), &data).unwrap();
    assert!(!arr.has_checksums());
    arr.enable_checksums().unwrap();
    drop(arr);
    let mut arr = Array::open(&ctx(false), &url).unwrap();
    assert!(arr.has_checksums());
    assert_eq!(arr.to_vec().unwrap(), data);
    for r in [arr.vlmeta_add(CHECKSUM_VLMETA, b"x"), arr.vlmeta_update(CHECKSUM_VLMETA, b"x")] {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }
}

/// Where `needle` sits in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).expect("chunk bytes are in the file")
}

/// Flip one bit at each of `n` positions of chunk 0's payload in a copy of
/// the file, and read the copy: (errors, right data, wrong data).
fn flip_chunk_bits(src: &str, dir: &std::path::Path, checksums: bool, n: usize) -> (usize, usize, usize) {
    let c = ctx(checksums);
    let orig = Array::open(&c, src).unwrap();
    let want = orig.to_vec().unwrap();
    let chunk = caterva::testing::chunk(&orig, 0).unwrap();
    drop(orig);
    let bytes = std::fs::read(src).unwrap();
    let at = find(&bytes, &chunk);
    // The last half of the chunk: codec payload, which c-blosc2 itself never checks.
    let payload = chunk.len() / 2..chunk.len();
    let (mut errors, mut right, mut wrong) = (0, 0, 0);
    for k in 0..n {
        let pos = at + payload.start + (k * 7919) % payload.len();
        let mut b = bytes.clone();
        b[pos] ^= 1 << (k % 8);
        let path = dir.join(format!("flip-{checksums}-{k}.b2frame"));
        std::fs::write(&path, &b).unwrap();
        match Array::open(&c, path.to_str().unwrap()).and_then(|a| a.to_vec()) {
            Err(_) => errors += 1,
            Ok(v) if v == want => right += 1,
            Ok(_) => wrong += 1,
        }
        std::fs::remove_file(&path).unwrap();
    }
    (errors, right, wrong)
}

#[test]
fn flipped_bits_are_reported_not_returned() {
    let dir = common::scratch_dir("checksum-flip");
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 3);
    let mut outcomes = Vec::new();
    for checksums in [false, true] {
        let url = dir.join(format!("src-{checksums}.b2frame")).to_string_lossy().into_owned();
        let st = storage(Some(url.clone()), true);
        let c = Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap();
        Array::from_buffer(&c, &params, &st, &data).unwrap();
        outcomes.push(flip_chunk_bits(&url, &dir, checksums, 200));
    }
    let (without, with) = (outcomes[0], outcomes[1]);
    eprintln!("flips (errors, right data, wrong data): without checksums {without:?}, with {with:?}");
    // The flips do corrupt data when nothing checks them...
    assert!(without.2 > 0, "{without:?}");
    // ...and never get through when checksums are on.
    assert_eq!(with.2, 0, "{with:?}");
    assert_eq!(with.0 + with.1, 200);
}

#[test]
fn a_bad_sum_names_the_chunk() {
    let dir = common::scratch_dir("checksum-name");
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 4);
    Array::from_buffer(&ctx(true), &params, &storage(Some(url.clone()), false), &data).unwrap();
    // Chunk 5 of a sparse frame is the file 00000005.chunk.
    let f = std::path::Path::new(&url).join("00000005.chunk");
    let mut b = std::fs::read(&f).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0x10;
    std::fs::write(&f, b).unwrap();
    let arr = Array::open(&ctx(false), &url).unwrap();
    let e = arr.to_vec().unwrap_err();
    assert!(matches!(&e, Error::Corrupt { chunk: 5, .. }), "{e}");
    assert_eq!(e.kind(), caterva::ErrorKind::Corrupt);
    // A region away from chunk 5 still reads.
    let mut row = vec![0u8; 20 * 4];
    arr.get_slice_buffer(&[0, 0], &[1, 20], &mut row, &[1, 20]).unwrap();
    assert_eq!(row, data[..80]);
}
