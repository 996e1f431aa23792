//! Items over 255 bytes (issue 25: NumPy `<U100`, records with sub-arrays):
//! python-blosc2 stores them with the whole item size in the frame and a
//! Blosc typesize that divides it in each chunk. Every operation keeps the
//! bytes of each item, in memory and in both file storages, with and
//! without checksums.

use std::path::Path;

use caterva::{Array, Config, Context, ErrorKind, Params, StorageParams};

mod common;
use common::{scratch_dir, Rng};

fn storage(url: Option<&Path>, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![5, 3],
        blockshape: vec![2, 2],
        contiguous,
        urlpath: url.map(|p| p.to_string_lossy().into_owned()),
        metalayers: Vec::new(),
    }
}

#[test]
fn items_over_255_bytes_keep_their_bytes_everywhere() {
    let dir = scratch_dir("wide-items");
    let mut rng = Rng(25);
    for itemsize in [256usize, 300, 400, 509, 1024] {
        for checksums in [false, true] {
            let ctx = Context::new(Config { checksums, nthreads: 2, ..Config::default() }).unwrap();
            for (url, contiguous) in
                [(None, false), (Some(dir.join("c.b2frame")), true), (Some(dir.join("s.b2nd")), false)]
            {
                if let Some(u) = &url {
                    let _ = Array::remove(&u.to_string_lossy());
                }
                let shape = [11i64, 7];
                let n = (shape[0] * shape[1]) as usize;
                let mut model: Vec<u8> = (0..n * itemsize).map(|_| rng.range(0, 6) as u8).collect();
                let params = Params { itemsize, shape: shape.to_vec(), dtype: Some(format!("|V{itemsize}")) };
                let mut a = Array::from_buffer(&ctx, &params, &storage(url.as_deref(), contiguous), &model).unwrap();
                assert_eq!(a.itemsize(), itemsize);
                // A box written, then read back with the rest.
                let patch: Vec<u8> = (0..3 * 2 * itemsize).map(|i| (i % 251) as u8).collect();
                a.set_slice_buffer(&[4, 1], &[7, 3], &patch, &[3, 2]).unwrap();
                for r in 0..3 {
                    for c in 0..2 {
                        let at = ((4 + r) * 7 + 1 + c) * itemsize;
                        let from = (r * 2 + c) * itemsize;
                        model[at..at + itemsize].copy_from_slice(&patch[from..from + itemsize]);
                    }
                }
                // Grown: new items are zeros.
                a.resize(&[13, 7], None).unwrap();
                model.resize(13 * 7 * itemsize, 0);
                let check = |a: &Array, what: &str| {
                    let mut all = vec![0u8; model.len()];
                    a.get_slice_buffer(&[0, 0], &[13, 7], &mut all, &[13, 7]).unwrap();
                    assert!(all == model, "{what}: itemsize {itemsize}, checksums {checksums}, {url:?}");
                    let mut one = vec![0u8; itemsize];
                    a.get_slice_buffer(&[5, 2], &[6, 3], &mut one, &[1, 1]).unwrap();
                    let at = (5 * 7 + 2) * itemsize;
                    assert_eq!(one, model[at..at + itemsize], "{what}: one item");
                };
                check(&a, "written");
                assert!(a.verify(&mut |_, _| {}).unwrap().is_empty());
                check(&Array::from_cframe(&ctx, &a.to_cframe().unwrap()).unwrap(), "through a cframe");
                if let Some(u) = &url {
                    drop(a);
                    let a = Array::open(&ctx, &u.to_string_lossy()).unwrap();
                    assert_eq!(a.itemsize(), itemsize);
                    check(&a, "reopened");
                }
            }
        }
    }
}

#[test]
fn full_of_a_wide_value_and_bad_sizes() {
    let ctx = Context::new(Config::default()).unwrap();
    let value: Vec<u8> = (0..400u32).map(|i| (i % 7) as u8 + 1).collect();
    let params = Params { itemsize: 400, shape: vec![23], dtype: None };
    let st = StorageParams { chunkshape: vec![10], blockshape: vec![4], ..StorageParams::default() };
    let a = Array::full(&ctx, &params, &st, &value).unwrap();
    let mut all = vec![0u8; 23 * 400];
    a.get_slice_buffer(&[0], &[23], &mut all, &[23]).unwrap();
    assert!(all.chunks(400).all(|c| c == value.as_slice()));
    let z = Array::zeros(&ctx, &params, &st).unwrap();
    z.get_slice_buffer(&[0], &[23], &mut all, &[23]).unwrap();
    assert!(all.iter().all(|&b| b == 0));
    // The dtype must describe the item; 0-byte items are refused.
    let bad = Params { dtype: Some("<U99".into()), ..params.clone() };
    assert_eq!(Array::zeros(&ctx, &bad, &st).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let ok = Params { dtype: Some("<U100".into()), ..params.clone() };
    assert_eq!(Array::zeros(&ctx, &ok, &st).unwrap().dtype().as_deref(), Some("<U100"));
    let zero = Params { itemsize: 0, ..params };
    assert_eq!(Array::zeros(&ctx, &zero, &st).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn record_dtypes_of_any_description_length() {
    let ctx = Context::new(Config::default()).unwrap();
    let fields: Vec<String> = (0..60).map(|i| format!("('a_rather_long_field_name_{i}', '<f8')")).collect();
    let dtype = format!("[{}]", fields.join(", "));
    assert!(dtype.len() > 2000);
    let params = Params { itemsize: 480, shape: vec![4], dtype: Some(dtype.clone()) };
    let st = StorageParams { chunkshape: vec![2], blockshape: vec![1], ..StorageParams::default() };
    let a = Array::zeros(&ctx, &params, &st).unwrap();
    assert_eq!(a.dtype().as_deref(), Some(dtype.as_str()));
    let b = Array::from_cframe(&ctx, &a.to_cframe().unwrap()).unwrap();
    assert_eq!(b.dtype().as_deref(), Some(dtype.as_str()));
    let ctrl = Params { dtype: Some("[('a',\n'<f8')]".into()), itemsize: 8, ..params };
    assert_eq!(Array::zeros(&ctx, &ctrl, &st).unwrap_err().kind(), ErrorKind::InvalidArgument);
}
