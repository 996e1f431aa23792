//! `caterva concat`: the result's items, shape and partitions; what it
//! refuses (shapes that do not fit, an existing destination, a source as
//! the destination) and that a refusal writes nothing.

use caterva::{Array, Config, Context, Params, StorageParams};

mod common;
use common::{caterva, scratch_dir, Run};

#[test]
fn concat_joins_two_arrays_into_a_new_file() {
    let dir = scratch_dir("cli-concat");
    let ctx = Context::new(Config::default()).unwrap();
    let path = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let make = |name: &str, shape: &[i64], seed: u8| {
        let n = shape.iter().product::<i64>() as usize * 2;
        let data: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(3).wrapping_add(seed)).collect();
        let st = StorageParams {
            chunkshape: vec![3, 4],
            blockshape: vec![2, 2],
            contiguous: true,
            urlpath: Some(path(name)),
            metalayers: Vec::new(),
        };
        Array::from_buffer(&ctx, &Params { itemsize: 2, shape: shape.to_vec(), dtype: Some("<i2".into()) }, &st, &data)
            .unwrap();
        data
    };
    let a = make("a.b2frame", &[5, 6], 1);
    let b = make("b.b2frame", &[5, 2], 100);
    let Run { code, stdout: out, stderr: err } =
        caterva(&["concat", &path("a.b2frame"), &path("b.b2frame"), &path("c.b2frame"), "--axis", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[5, 8]"), "{out}");
    let c = Array::open(&ctx, &path("c.b2frame")).unwrap();
    assert_eq!(c.shape(), &[5, 8]);
    assert_eq!(c.geometry().chunkshape(), &[3, 4]);
    assert_eq!(c.dtype().as_deref(), Some("<i2"));
    let got = c.to_vec().unwrap();
    for r in 0..5 {
        assert_eq!(&got[r * 16..r * 16 + 12], &a[r * 12..r * 12 + 12]);
        assert_eq!(&got[r * 16 + 12..r * 16 + 16], &b[r * 4..r * 4 + 4]);
    }
    // Shapes that do not fit along axis 0: a usage error, nothing written.
    let Run { code, stderr: err, .. } =
        caterva(&["concat", &path("a.b2frame"), &path("b.b2frame"), &path("d.b2frame")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("differ on axis 1"), "{err}");
    assert!(!dir.join("d.b2frame").exists());
    // An existing destination needs --force; a source never is one.
    let Run { code, stderr: err, .. } =
        caterva(&["concat", &path("a.b2frame"), &path("b.b2frame"), &path("c.b2frame"), "--axis", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--force"), "{err}");
    let before = std::fs::read(dir.join("a.b2frame")).unwrap();
    let Run { code, stderr: err, .. } =
        caterva(&["concat", &path("a.b2frame"), &path("b.b2frame"), &path("a.b2frame"), "--axis", "1", "-f"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(dir.join("a.b2frame")).unwrap(), before);
    let Run { code, .. } =
        caterva(&["concat", &path("a.b2frame"), &path("b.b2frame"), &path("c.b2frame"), "--axis", "1", "-f", "-q"]);
    assert_eq!(code, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_first_array_takes_the_partitions_of_the_second() {
    let dir = scratch_dir("cli-concat-empty");
    let ctx = Context::new(Config::default()).unwrap();
    let path = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let make = |name: &str, shape: &[i64], chunks: &[i32], blocks: &[i32], contiguous: bool| {
        let n = shape.iter().product::<i64>() as usize * 2;
        let data: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(7)).collect();
        let st = StorageParams {
            chunkshape: chunks.to_vec(),
            blockshape: blocks.to_vec(),
            contiguous,
            urlpath: Some(path(name)),
            metalayers: Vec::new(),
        };
        let params = Params { itemsize: 2, shape: shape.to_vec(), dtype: Some("<i2".into()) };
        let mut arr = Array::from_buffer(&ctx, &params, &st, &data).unwrap();
        arr.vlmeta_add("from", name.as_bytes()).unwrap();
        data
    };
    // Empty, with chunks of length 0 along the empty axis (as python-blosc2
    // makes them): they could hold none of the result's items.
    make("empty.b2nd", &[0, 6], &[0, 6], &[0, 3], false);
    let b = make("b.b2frame", &[5, 6], &[2, 4], &[1, 2], true);
    let Run { code, stdout: out, stderr: err } =
        caterva(&["concat", &path("empty.b2nd"), &path("b.b2frame"), &path("c.b2nd")]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty() && out.contains("[5, 6]"), "{out}{err}");
    let c = Array::open(&ctx, &path("c.b2nd")).unwrap();
    assert_eq!(
        (c.shape(), c.geometry().chunkshape(), c.geometry().blockshape()),
        (&[5, 6][..], &[2, 4][..], &[1, 2][..])
    );
    // A's storage kind (sparse), dtype and vlmetalayers.
    assert!(!c.info().contiguous);
    assert_eq!(c.dtype().as_deref(), Some("<i2"));
    assert_eq!(c.vlmeta_get("from").unwrap(), b"empty.b2nd");
    assert_eq!(c.to_vec().unwrap(), b);
    // Both empty: the result is too, with A's partitions.
    make("empty2.b2nd", &[0, 6], &[0, 6], &[0, 3], false);
    let Run { code, stdout: out, stderr: err } =
        caterva(&["concat", &path("empty.b2nd"), &path("empty2.b2nd"), &path("d.b2nd")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[0, 6]"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
