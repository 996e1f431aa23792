//! Round trips through every storage, over the shapes of the C suite,
//! checked against a plain C-order reference.

use caterva::{Array, Config, Context, Metalayer, Params, StorageParams};

struct Case {
    shape: &'static [i64],
    chunks: &'static [i32],
    blocks: &'static [i32],
}

const CASES: &[Case] = &[
    Case { shape: &[], chunks: &[], blocks: &[] },
    Case { shape: &[5], chunks: &[3], blocks: &[2] },
    Case { shape: &[20, 0], chunks: &[7, 0], blocks: &[3, 0] },
    Case { shape: &[20, 10], chunks: &[7, 5], blocks: &[3, 5] },
    Case { shape: &[14, 10], chunks: &[8, 5], blocks: &[2, 2] },
    Case { shape: &[12, 10, 14], chunks: &[3, 5, 9], blocks: &[3, 4, 4] },
    Case { shape: &[10, 21, 20, 5], chunks: &[8, 7, 15, 3], blocks: &[5, 5, 10, 1] },
];

/// A scratch directory, removed with what it holds when dropped (a failed
/// test's too).
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every storage: in memory (a super-chunk, a frame), a frame file and a
/// sparse directory in a scratch directory that lives as long as the guard.
fn storages(tag: &str) -> (Scratch, Vec<StorageParams>) {
    let dir = std::env::temp_dir().join(format!("caterva-rt-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let storages = [(false, None), (true, None), (true, Some("a.b2frame")), (false, Some("a.b2nd"))]
        .into_iter()
        .map(|(contiguous, name)| StorageParams {
            contiguous,
            urlpath: name.map(|n| dir.join(n).to_string_lossy().into_owned()),
            ..Default::default()
        })
        .collect();
    (Scratch(dir), storages)
}

fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Linear (C-order) indices of the items of `start..stop` in an array of `shape`, in C order.
fn box_indices(shape: &[i64], start: &[i64], stop: &[i64]) -> Vec<usize> {
    let st = strides(shape);
    let n = shape.len();
    let mut out = Vec::new();
    if (0..n).any(|i| start[i] >= stop[i]) {
        return out;
    }
    let mut idx = start.to_vec();
    loop {
        out.push((0..n).map(|i| idx[i] * st[i]).sum::<i64>() as usize);
        let mut a = n;
        loop {
            if a == 0 {
                return out;
            }
            a -= 1;
            idx[a] += 1;
            if idx[a] < stop[a] {
                break;
            }
            idx[a] = start[a];
        }
    }
}

/// The reference slice of a C-order buffer.
fn ref_slice(data: &[u8], shape: &[i64], item: usize, start: &[i64], stop: &[i64]) -> Vec<u8> {
    box_indices(shape, start, stop).into_iter().flat_map(|i| data[i * item..(i + 1) * item].to_vec()).collect()
}

#[test]
fn from_buffer_to_buffer_and_slices() {
    for nthreads in [1, 3] {
        let ctx = Context::new(Config { nthreads, ..Config::default() }).unwrap();
        for item in [1usize, 2, 4, 8, 3, 255] {
            for (ci, c) in CASES.iter().enumerate() {
                let (_scratch, sts) = storages(&format!("{nthreads}-{item}-{ci}"));
                for st in sts {
                    let mut st = st;
                    st.chunkshape = c.chunks.to_vec();
                    st.blockshape = c.blocks.to_vec();
                    st.metalayers = vec![Metalayer { name: "user".into(), content: vec![1, 2, 3] }];
                    let params = Params { itemsize: item, shape: c.shape.to_vec(), dtype: None };
                    let n: i64 = c.shape.iter().product();
                    let data: Vec<u8> = (0..n as usize * item).map(|i| (i * 7 + i / 251) as u8).collect();
                    let mut arr = Array::from_buffer(&ctx, &params, &st, &data).unwrap();
                    assert_eq!(arr.to_vec().unwrap(), data);
                    // A slice starting mid-chunk.
                    let start: Vec<i64> = c.shape.iter().map(|&s| s / 3).collect();
                    let stop: Vec<i64> = c.shape.iter().map(|&s| s - s / 4).collect();
                    let sshape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
                    let mut buf = vec![0u8; sshape.iter().product::<i64>() as usize * item];
                    arr.get_slice_buffer(&start, &stop, &mut buf, &sshape).unwrap();
                    assert_eq!(buf, ref_slice(&data, c.shape, item, &start, &stop));
                    // Overwrite that slice with 0xAB and check the whole array.
                    let fill = vec![0xABu8; buf.len()];
                    arr.set_slice_buffer(&start, &stop, &fill, &sshape).unwrap();
                    let mut expect = data.clone();
                    for i in box_indices(c.shape, &start, &stop) {
                        expect[i * item..(i + 1) * item].fill(0xAB);
                    }
                    assert_eq!(arr.to_vec().unwrap(), expect, "item {item} case {ci} storage {st:?}");
                    // Persistence: reopen and compare.
                    if let Some(url) = &st.urlpath {
                        drop(arr);
                        let back = Array::open(&ctx, url).unwrap();
                        assert_eq!(back.to_vec().unwrap(), expect);
                        assert_eq!(back.meta_get("user").unwrap(), vec![1, 2, 3]);
                        Array::remove(url).unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn zeros_full_and_cframe() {
    let ctx = Context::new(Config::default()).unwrap();
    let params = Params { itemsize: 4, shape: vec![7, 9], dtype: None };
    let st = StorageParams { chunkshape: vec![4, 4], blockshape: vec![2, 3], ..Default::default() };
    let z = Array::zeros(&ctx, &params, &st).unwrap();
    assert!(z.to_vec().unwrap().iter().all(|&b| b == 0));
    let f = Array::full(&ctx, &params, &st, &[1, 2, 3, 4]).unwrap();
    assert_eq!(f.to_vec().unwrap(), [1u8, 2, 3, 4].repeat(63));
    let frame = f.to_cframe().unwrap();
    let g = Array::from_cframe(&ctx, &frame).unwrap();
    assert_eq!(g.to_vec().unwrap(), [1u8, 2, 3, 4].repeat(63));
    assert_eq!(g.shape(), &[7, 9]);
}

#[test]
fn huge_zeros_cost_almost_nothing() {
    let ctx = Context::new(Config::default()).unwrap();
    let params = Params { itemsize: 8, shape: vec![1_000_000, 1_000_000], dtype: None };
    let st = StorageParams {
        chunkshape: vec![1000, 1000],
        blockshape: vec![100, 100],
        contiguous: true,
        ..Default::default()
    };
    let z = Array::zeros(&ctx, &params, &st).unwrap();
    assert_eq!(z.geometry().nchunks(), 1_000_000);
    let frame = z.to_cframe().unwrap();
    assert!(frame.len() < 64 * 1024, "a 10^12-item zeros frame takes {} bytes", frame.len());
    let mut buf = vec![1u8; 8 * 10];
    z.get_slice_buffer(&[999_999, 5], &[1_000_000, 15], &mut buf, &[1, 10]).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
}

#[test]
fn failures_leave_no_trace() {
    let ctx = Context::new(Config::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("caterva-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = dir.join("x.b2frame").to_string_lossy().into_owned();
    let params = Params { itemsize: 4, shape: vec![10, 10], dtype: None };
    let mut st = StorageParams {
        chunkshape: vec![5, 5],
        blockshape: vec![2, 2],
        contiguous: true,
        urlpath: Some(url.clone()),
        ..Default::default()
    };
    // Too small a buffer: refused before anything is written.
    assert!(Array::from_buffer(&ctx, &params, &st, &[0u8; 399]).is_err());
    assert!(!std::path::Path::new(&url).exists());
    // An unknown codec is refused by the context, before anything is written.
    let bad = Context::new(Config {
        cparams: caterva::CParams { codec: caterva::Codec::Other(250), ..Default::default() },
        nthreads: 1,
        ..Config::default()
    });
    assert_eq!(bad.map(drop).unwrap_err().kind(), caterva::ErrorKind::InvalidArgument);
    // A failure mid-way (the third write to disk fails) removes the half-built file.
    {
        use caterva::testing::faults::{arm, Fault};
        let _armed = arm(&dir, 3, Fault::Fail);
        assert!(Array::from_buffer(&ctx, &params, &st, &[7u8; 400]).is_err());
    }
    assert!(!std::path::Path::new(&url).exists());
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "something was left beside it");
    // A directory in the way of a contiguous frame, or a plain directory in the
    // way of a sparse frame, is refused, not destroyed.
    std::fs::create_dir_all(&url).unwrap();
    std::fs::write(dir.join("x.b2frame").join("keep"), b"mine").unwrap();
    assert!(matches!(Array::zeros(&ctx, &params, &st), Err(caterva::Error::InvalidStorage { .. })));
    st.contiguous = false;
    assert!(matches!(Array::zeros(&ctx, &params, &st), Err(caterva::Error::InvalidStorage { .. })));
    assert!(dir.join("x.b2frame").join("keep").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_writes_leave_the_array_unchanged() {
    let ctx = Context::new(Config::default()).unwrap();
    let params = Params { itemsize: 1, shape: vec![8, 8], dtype: None };
    let st = StorageParams { chunkshape: vec![4, 4], blockshape: vec![2, 2], ..Default::default() };
    let data: Vec<u8> = (0..64).collect();
    let mut arr = Array::from_buffer(&ctx, &params, &st, &data).unwrap();
    assert!(arr.set_slice_buffer(&[6, 6], &[10, 10], &[1; 16], &[4, 4]).is_err());
    assert!(arr.set_slice_buffer(&[0, 0], &[4, 4], &[1; 15], &[4, 4]).is_err());
    assert!(arr.set_slice_buffer(&[0, 0], &[4, 4], &[1; 16], &[2, 2]).is_err());
    assert!(arr.set_slice_buffer(&[3, 0], &[2, 4], &[1; 16], &[4, 4]).is_err());
    assert_eq!(arr.to_vec().unwrap(), data);
    let mut out = vec![9u8; 4];
    assert!(arr.get_slice_buffer(&[0, 0], &[2, 3], &mut out, &[2, 2]).is_err());
    assert_eq!(out, vec![9; 4]);
    assert!(arr.meta_update("caterva", &[0; 28]).is_err());
    assert_eq!(arr.to_vec().unwrap(), data);
}

#[test]
fn concurrent_readers_see_every_byte() {
    let ctx = Context::new(Config { nthreads: 2, ..Config::default() }).unwrap();
    let params = Params { itemsize: 2, shape: vec![40, 30, 20], dtype: None };
    let (_scratch, sts) = storages("concurrent");
    for st in sts {
        let st = StorageParams { chunkshape: vec![10, 7, 6], blockshape: vec![4, 3, 6], ..st };
        let data: Vec<u8> = (0..24000u32).flat_map(|v| (v as u16).to_le_bytes()).collect();
        let arr = Array::from_buffer(&ctx, &params, &st, &data).unwrap();
        std::thread::scope(|s| {
            for t in 0..8i64 {
                let (arr, data) = (&arr, &data);
                s.spawn(move || {
                    for k in 0..20i64 {
                        let start = [(t * 3 + k) % 30, (k * 5) % 20, (t + k) % 10];
                        let stop = [start[0] + 10, start[1] + 9, start[2] + 10];
                        let shape = [10, 9, 10];
                        let mut buf = vec![0u8; 900 * 2];
                        arr.get_slice_buffer(&start, &stop, &mut buf, &shape).unwrap();
                        assert_eq!(buf, ref_slice(data, &[40, 30, 20], 2, &start, &stop));
                    }
                });
            }
        });
        if let Some(u) = &st.urlpath {
            drop(arr);
            Array::remove(u).unwrap();
        }
    }
}
