//! Many threads reading one shared [`Array`] at once: regions, the whole
//! array, slices into new arrays and orthogonal selections, on every
//! storage, each result compared byte for byte with a plain reference.
//!
//! Reads take `&self`; this checks that they are really free of shared
//! mutable state (the super-chunk's frame index and file handles, the
//! context's worker pool and thread pool).

use caterva::{Array, Config, Context, Params, StorageParams};

const SHAPE: [i64; 3] = [23, 17, 11];
const CHUNKS: [i32; 3] = [7, 5, 4];
const BLOCKS: [i32; 3] = [3, 2, 3];
const ITEM: usize = 4;
const THREADS: usize = 8;
const READS_PER_THREAD: usize = 64;
/// What a read leaves in buffer bytes outside its region.
const SENTINEL: u8 = 0xA5;

/// A small deterministic generator (xorshift64*), one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..hi` (`lo < hi`).
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
}

/// C-order strides of `shape`, in items.
fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The bytes of the item at `coords` of the reference array: its C-order index.
fn item_at(coords: &[i64]) -> [u8; ITEM] {
    let linear: i64 = coords.iter().zip(strides(&SHAPE)).map(|(c, s)| c * s).sum();
    (linear as u32).to_le_bytes()
}

/// Visit every index of the box of `shape` (C order).
fn for_each(shape: &[i64], mut f: impl FnMut(&[i64])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0i64; shape.len()];
    loop {
        f(&idx);
        let mut a = shape.len();
        loop {
            if a == 0 {
                return;
            }
            a -= 1;
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

fn reference() -> Vec<u8> {
    let mut v = Vec::new();
    for_each(&SHAPE, |idx| v.extend_from_slice(&item_at(idx)));
    v
}

/// Check `buf`, a C-order buffer of shape `bshape` whose item `j` should
/// hold the reference item at `source(j)`; items where `source` is `None`
/// must still hold the sentinel.
fn check(buf: &[u8], bshape: &[i64], source: impl Fn(&[i64]) -> Option<Vec<i64>>, what: &str) {
    let bstrides = strides(bshape);
    for_each(bshape, |j| {
        let off = j.iter().zip(&bstrides).map(|(a, b)| a * b).sum::<i64>() as usize * ITEM;
        let got = &buf[off..off + ITEM];
        match source(j) {
            Some(c) => assert_eq!(got, item_at(&c), "{what}: item {j:?} should be array{c:?}"),
            None => assert!(got.iter().all(|&b| b == SENTINEL), "{what}: item {j:?} outside the result was written"),
        }
    });
}

/// A random region: `(start, stop)`, possibly empty on an axis.
fn region(rng: &mut Rng) -> (Vec<i64>, Vec<i64>) {
    SHAPE
        .iter()
        .map(|&s| {
            let a = rng.range(0, s + 1);
            let b = rng.range(0, s + 1);
            (a.min(b), a.max(b))
        })
        .unzip()
}

fn read_region(arr: &Array, rng: &mut Rng) {
    let (start, stop) = region(rng);
    // A buffer up to 2 items larger than the region on each axis.
    let bshape: Vec<i64> = (0..3).map(|i| stop[i] - start[i] + rng.range(0, 3)).collect();
    let mut buf = vec![SENTINEL; bshape.iter().product::<i64>() as usize * ITEM];
    arr.get_slice_buffer(&start, &stop, &mut buf, &bshape).unwrap();
    let source =
        |j: &[i64]| (0..3).all(|i| j[i] < stop[i] - start[i]).then(|| (0..3).map(|i| start[i] + j[i]).collect());
    check(&buf, &bshape, source, &format!("get_slice_buffer {start:?}..{stop:?}"));
}

fn read_whole(arr: &Array, want: &[u8]) {
    let mut buf = vec![SENTINEL; want.len()];
    arr.to_buffer(&mut buf).unwrap();
    assert!(buf == want, "to_buffer differs from the reference");
}

fn read_selection(arr: &Array, rng: &mut Rng) {
    // Unsorted lists with repeats, possibly empty.
    let lists: Vec<Vec<i64>> = SHAPE.iter().map(|&s| (0..rng.range(0, 6)).map(|_| rng.range(0, s)).collect()).collect();
    let sel: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
    let bshape: Vec<i64> = lists.iter().map(|l| l.len() as i64).collect();
    let mut buf = vec![SENTINEL; bshape.iter().product::<i64>() as usize * ITEM];
    arr.get_orthogonal_selection(&sel, &mut buf, &bshape).unwrap();
    check(&buf, &bshape, |j| Some((0..3).map(|i| lists[i][j[i] as usize]).collect()), "orthogonal selection");
}

fn read_slice(arr: &Array, ctx: &Context, rng: &mut Rng) {
    let (start, stop) = region(rng);
    let chunkshape: Vec<i32> = (0..3).map(|_| rng.range(1, 9) as i32).collect();
    let blockshape: Vec<i32> = chunkshape.iter().map(|&c| rng.range(1, i64::from(c) + 1) as i32).collect();
    let storage = StorageParams { chunkshape, blockshape, ..Default::default() };
    let part = arr.get_slice(ctx, &start, &stop, &storage).unwrap();
    let shape: Vec<i64> = (0..3).map(|i| stop[i] - start[i]).collect();
    assert_eq!(part.shape(), &shape[..]);
    let buf = part.to_vec().unwrap();
    check(&buf, &shape, |j| Some((0..3).map(|i| start[i] + j[i]).collect()), "get_slice");
}

/// Eight threads, each doing a random mix of reads on `arr`.
fn hammer(arr: &Array, ctx: &Context, want: &[u8]) {
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
                for _ in 0..READS_PER_THREAD {
                    match rng.range(0, 8) {
                        0 => read_whole(arr, want),
                        1 | 2 => read_selection(arr, &mut rng),
                        3 => read_slice(arr, ctx, &mut rng),
                        _ => read_region(arr, &mut rng),
                    }
                }
            });
        }
    });
}

fn context() -> Context {
    // Two threads per call: reads also run on the context's own pool, which
    // all the callers share.
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

fn params() -> Params {
    Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None }
}

fn storage(contiguous: bool, urlpath: Option<String>) -> StorageParams {
    StorageParams { chunkshape: CHUNKS.to_vec(), blockshape: BLOCKS.to_vec(), contiguous, urlpath, metalayers: vec![] }
}

/// A scratch directory for one test of this process.
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("caterva-concurrency-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_on(contiguous: bool, urlpath: Option<String>) {
    let ctx = context();
    let want = reference();
    let arr = Array::from_buffer(&ctx, &params(), &storage(contiguous, urlpath.clone()), &want).unwrap();
    hammer(&arr, &ctx, &want);
    drop(arr);
    if let Some(p) = urlpath {
        // Reopened from disk: the reads go through a freshly opened frame.
        let arr = Array::open(&ctx, &p).unwrap();
        hammer(&arr, &ctx, &want);
        drop(arr);
        Array::remove(&p).unwrap();
    }
}

#[test]
fn array_is_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<Array>();
    shared::<Context>();
}

#[test]
fn memory_sparse() {
    run_on(false, None);
}

#[test]
fn memory_contiguous_frame() {
    run_on(true, None);
}

#[test]
fn cframe_backed() {
    let ctx = context();
    let want = reference();
    let src = Array::from_buffer(&ctx, &params(), &storage(false, None), &want).unwrap();
    let arr = Array::from_cframe(&ctx, &src.to_cframe().unwrap()).unwrap();
    drop(src);
    hammer(&arr, &ctx, &want);
}

#[test]
fn contiguous_file() {
    let dir = scratch("file");
    run_on(true, Some(dir.join("shared.b2frame").to_string_lossy().into_owned()));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sparse_directory() {
    let dir = scratch("dir");
    run_on(false, Some(dir.join("shared.b2nd").to_string_lossy().into_owned()));
    std::fs::remove_dir_all(dir).unwrap();
}
