//! Growing an array by many chunks at once (resize, append, insert): every
//! new chunk goes in through one operation of the store's transaction
//! (`Tx::append_chunks`: the chunks, one offsets index, the trailer and the
//! header written once). Checked on the three storages (in memory, a frame
//! file, a sparse-frame directory), with and without checksums: the items
//! read back, the array reopens the same and passes `verify`, and further
//! growth of the grown array works. Timings are in `bench/growth.c`.

use caterva::{Array, Config, Context, Params, StorageParams};

mod common;

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
}

/// The three storages, each at its own path under `dir`.
fn storages(dir: &std::path::Path, tag: &str) -> Vec<(String, Option<String>, bool)> {
    vec![
        ("memory".into(), None, true),
        ("frame file".into(), Some(dir.join(format!("{tag}.b2frame")).to_string_lossy().into_owned()), true),
        ("sparse dir".into(), Some(dir.join(format!("{tag}.b2sparse")).to_string_lossy().into_owned()), false),
    ]
}

fn items(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32).flat_map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()).collect()
}

fn sound(a: &Array, what: &str) {
    let problems = a.verify(&mut |_, _| {}).unwrap();
    assert!(problems.is_empty(), "{what}: {problems:?}");
}

/// The array reopened from disk (or itself, in memory) reads `want`.
fn check(ctx: &Context, a: &Array, url: Option<&str>, shape: &[i64], want: &[u8], what: &str) {
    assert_eq!(a.shape(), shape, "{what}: shape");
    assert_eq!(a.to_vec().unwrap(), want, "{what}: items");
    sound(a, what);
    if let Some(u) = url {
        let back = Array::open(ctx, u).unwrap();
        assert_eq!(back.shape(), shape, "{what}: reopened shape");
        assert_eq!(back.has_checksums(), a.has_checksums(), "{what}: reopened checksums");
        assert_eq!(back.to_vec().unwrap(), want, "{what}: reopened items");
        sound(&back, &format!("{what}, reopened"));
    }
}

#[test]
fn growing_by_many_chunks_reads_back_on_every_storage() {
    let dir = common::scratch_dir("growth-many");
    for checksums in [false, true] {
        let ctx = ctx(checksums);
        for (name, url, contiguous) in storages(&dir, if checksums { "sums" } else { "plain" }) {
            let what = format!("{name}, checksums {checksums}");
            if let Some(u) = url.as_deref() {
                let _ = Array::remove(u);
            }
            // A 1-d u32 array of chunks of 16 items (blocks of 8), one
            // chunk and a half of data to start with.
            let storage = StorageParams {
                chunkshape: vec![16],
                blockshape: vec![8],
                contiguous,
                urlpath: url.clone(),
                ..Default::default()
            };
            let params = Params { itemsize: 4, shape: vec![24], dtype: None };
            let mut want = items(24, 1);
            let mut a = Array::from_buffer(&ctx, &params, &storage, &want).unwrap();

            // Resize: 1000 chunks of zeros (special chunks) at the end.
            a.resize(&[24 + 16_000], None).unwrap();
            want.resize(want.len() + 16_000 * 4, 0);
            check(&ctx, &a, url.as_deref(), &[16_024], &want, &format!("{what}: resize +1000 chunks"));

            // Append 300 chunks of data (stored chunks: bytes in the frame
            // or new chunk files) straight after them.
            let more = items(300 * 16, 2);
            a.append(&more, 0).unwrap();
            want.extend_from_slice(&more);
            let shape = [16_024 + 4_800];
            check(&ctx, &a, url.as_deref(), &shape, &want, &format!("{what}: append +300 chunks"));

            // Insert 50 chunks of data at the front: appended, then the
            // chunk index reordered once.
            let front = items(50 * 16, 3);
            a.insert(&front, 0, 0).unwrap();
            want.splice(0..0, front.iter().copied());
            let shape = [shape[0] + 800];
            check(&ctx, &a, url.as_deref(), &shape, &want, &format!("{what}: insert +50 chunks at 0"));

            // Grow at a position that is not a chunk boundary, then shrink back
            // past the new chunks: new chunks and rebuilt ones in one write.
            a.resize(&[shape[0] + 1_000], Some(&[5])).unwrap();
            want.splice(5 * 4..5 * 4, std::iter::repeat(0).take(1_000 * 4));
            let grown = [shape[0] + 1_000];
            check(&ctx, &a, url.as_deref(), &grown, &want, &format!("{what}: resize +1000 items at 5"));
            a.resize(&shape, None).unwrap();
            want.truncate(shape[0] as usize * 4);
            check(&ctx, &a, url.as_deref(), &shape, &want, &format!("{what}: shrunk back"));
            if let Some(u) = url.as_deref() {
                drop(a);
                Array::remove(u).unwrap();
            }
        }
    }
}

#[test]
fn growing_a_2d_array_along_either_axis() {
    let dir = common::scratch_dir("growth-2d");
    let ctx = ctx(true);
    for (name, url, contiguous) in storages(&dir, "2d") {
        if let Some(u) = url.as_deref() {
            let _ = Array::remove(u);
        }
        // 2-byte items, chunks {3, 4}: 7 x 9 to start with.
        let storage = StorageParams {
            chunkshape: vec![3, 4],
            blockshape: vec![2, 2],
            contiguous,
            urlpath: url.clone(),
            ..Default::default()
        };
        let params = Params { itemsize: 2, shape: vec![7, 9], dtype: None };
        let data: Vec<u8> = (0..63u16).flat_map(|v| (v + 1).to_le_bytes()).collect();
        let mut a = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
        a.resize(&[7 + 300, 9 + 400], None).unwrap();
        let (rows, cols) = (307usize, 409usize);
        let mut want = vec![0u8; rows * cols * 2];
        for r in 0..7 {
            want[r * cols * 2..r * cols * 2 + 18].copy_from_slice(&data[r * 18..r * 18 + 18]);
        }
        check(&ctx, &a, url.as_deref(), &[307, 409], &want, &format!("{name}: 2-d resize"));
        if let Some(u) = url.as_deref() {
            drop(a);
            Array::remove(u).unwrap();
        }
    }
}
