//! Handles that share one persisted array ([`Array::refresh`],
//! [`Array::exclusive`]): two handles of one array exclude each other like
//! two processes do (each takes the lock file anew), so the protocol the
//! Python package's Dask writers use is tested here with two handles.

use caterva::{Array, Config, Context, ErrorKind, Params, StorageParams};

const SHAPE: [i64; 2] = [40, 30];

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 1, checksums, ..Config::default() }).unwrap()
}

fn create(dir: &std::path::Path, contiguous: bool, checksums: bool) -> String {
    let url = dir.join(if contiguous { "a.b2frame" } else { "a.b2nd" }).to_str().unwrap().to_owned();
    let params = Params { itemsize: 4, shape: SHAPE.to_vec(), dtype: Some("<i4".into()) };
    let storage = StorageParams {
        chunkshape: vec![20, 10],
        blockshape: vec![10, 5],
        contiguous,
        urlpath: Some(url.clone()),
        ..Default::default()
    };
    Array::zeros(&ctx(checksums), &params, &storage).unwrap();
    url
}

fn fill(arr: &mut Array, start: [i64; 2], stop: [i64; 2], v: i32) -> caterva::Result<()> {
    let n = ((stop[0] - start[0]) * (stop[1] - start[1])) as usize;
    let buf: Vec<u8> = std::iter::repeat(v.to_le_bytes()).take(n).flatten().collect();
    arr.set_slice_buffer(&start, &stop, &buf, &[stop[0] - start[0], stop[1] - start[1]])
}

fn values(arr: &Array) -> Vec<i32> {
    arr.to_vec().unwrap().chunks(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect()
}

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("caterva-shared-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn exclusive_writes_see_each_other() {
    for contiguous in [false, true] {
        for checksums in [false, true] {
            let d = dir(&format!("ex-{contiguous}-{checksums}"));
            let url = create(&d, contiguous, checksums);
            let mut a = Array::open(&ctx(checksums), &url).unwrap();
            let mut b = Array::open(&ctx(checksums), &url).unwrap();
            // b writes; a, out of date, reads nothing from its old view…
            let ((), changed) = b.exclusive(|b| fill(b, [0, 0], [20, 10], 1)).unwrap();
            assert!(!changed);
            let e = a.to_vec().unwrap_err();
            assert_eq!(e.kind(), caterva::ErrorKind::Changed, "{e}");
            // …and a plain write through it is made on the array as it is
            // now (brought up to date under the lock), keeping b's write.
            fill(&mut a, [39, 29], [40, 30], 6).unwrap();
            let ((), changed) = a.exclusive(|a| fill(a, [20, 10], [40, 20], 2)).unwrap();
            assert!(!changed, "the plain write brought it up to date");
            // Halves of one chunk from each handle: read-modify-write of the
            // chunk under the lock loses neither.
            b.exclusive(|b| fill(b, [0, 20], [10, 30], 3)).unwrap();
            a.exclusive(|a| fill(a, [10, 20], [20, 30], 4)).unwrap();
            // A reader sees it all after a refresh, and nothing changes on a second one.
            let mut r = Array::open(&ctx(checksums), &url).unwrap();
            b.exclusive(|b| fill(b, [39, 0], [40, 10], 5)).unwrap();
            assert!(r.refresh().unwrap());
            assert!(!r.refresh().unwrap());
            let v = values(&r);
            for i in 0..40 {
                for j in 0..30 {
                    let want = match (i, j) {
                        (0..=19, 0..=9) => 1,
                        (20..=38, 10..=19) => 2,
                        (0..=9, 20..=29) => 3,
                        (10..=19, 20..=29) => 4,
                        (39, 0..=9) => 5,
                        (39, 10..=19) => 2,
                        (39, 29) => 6,
                        _ => 0,
                    };
                    assert_eq!(v[(i * 30 + j) as usize], want, "({i}, {j}) contiguous {contiguous}");
                }
            }
            assert_eq!(values(&Array::open(&ctx(checksums), &url).unwrap()), v);
            drop((a, b, r));
            std::fs::remove_dir_all(&d).unwrap();
        }
    }
}

#[test]
fn refresh_follows_a_resize_and_reports_a_removed_array() {
    let d = dir("resize");
    let url = create(&d, false, true);
    let mut a = Array::open(&ctx(true), &url).unwrap();
    let mut b = Array::open(&ctx(true), &url).unwrap();
    b.resize(&[60, 30], None).unwrap();
    assert!(a.refresh().unwrap());
    assert_eq!(a.shape(), &[60, 30]);
    a.exclusive(|a| fill(a, [40, 0], [60, 30], 7)).unwrap();
    assert!(b.refresh().unwrap());
    assert_eq!(values(&b)[40 * 30..], vec![7; 600][..]);
    Array::remove(&url).unwrap();
    let e = a.refresh().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("does not exist"), "{e}");
    // An array in memory has nothing to refresh.
    let params = Params { itemsize: 1, shape: vec![4], dtype: None };
    let st = StorageParams { chunkshape: vec![2], blockshape: vec![2], ..Default::default() };
    let mut m = Array::zeros(&ctx(false), &params, &st).unwrap();
    assert!(!m.refresh().unwrap());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn shared_slice_writes_compress_outside_the_lock() {
    for contiguous in [false, true] {
        let d = dir(&format!("sh-{contiguous}"));
        let url = create(&d, contiguous, true);
        let mut a = Array::open(&ctx(true), &url).unwrap();
        let mut b = Array::open(&ctx(true), &url).unwrap();
        let chunk = |v: i32, n: usize| -> Vec<u8> { std::iter::repeat(v.to_le_bytes()).take(n).flatten().collect() };
        // Whole chunks (the last row of chunks ends with the array) from two
        // handles, each out of date when the other has written.
        b.set_slice_shared(&[0, 0], &[20, 10], &chunk(1, 200), &[20, 10]).unwrap();
        a.set_slice_shared(&[20, 10], &[40, 30], &chunk(2, 400), &[20, 20]).unwrap();
        b.set_slice_shared(&[20, 0], &[40, 10], &chunk(3, 200), &[20, 10]).unwrap();
        // A part of a chunk: built under the lock from the current chunk.
        a.set_slice_shared(&[0, 5], &[1, 10], &chunk(4, 5), &[1, 5]).unwrap();
        // A reshape by another handle between two writes: the write starts again on the new shape.
        b.exclusive(|b| b.resize(&[60, 30], None)).unwrap();
        a.set_slice_shared(&[0, 10], &[20, 20], &chunk(5, 200), &[20, 10]).unwrap();
        assert_eq!(a.shape(), &[60, 30]);
        let v = values(&Array::open(&ctx(true), &url).unwrap());
        for i in 0..60 {
            for j in 0..30 {
                let want = match (i, j) {
                    (0, 5..=9) => 4,
                    (0..=19, 0..=9) => 1,
                    (0..=19, 10..=19) => 5,
                    (20..=39, 0..=9) => 3,
                    (20..=39, 10..=29) => 2,
                    _ => 0,
                };
                assert_eq!(v[i * 30 + j], want, "({i}, {j}) contiguous {contiguous}");
            }
        }
        // Bad arguments are refused before anything is built or locked.
        assert_eq!(
            a.set_slice_shared(&[0, 0], &[20, 10], &chunk(1, 10), &[20, 10]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert!(a.set_slice_shared(&[50, 0], &[70, 10], &chunk(1, 200), &[20, 10]).is_err());
        assert!(!a.refresh().unwrap());
        drop((a, b));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
