//! Randomised differential test: long random sequences of operations applied
//! both to an [`Array`] and to a plain C-order reference (a `Vec<u8>` and a
//! shape), compared after every step, over random geometries (0-dim, empty
//! axes, ragged partitions), the four storages and save/open round trips.
//!
//! CI runs a fixed set of seeds. Run more by hand with
//! `CATERVA_DIFF_SEEDS=2000 CATERVA_DIFF_STEPS=200 cargo test --release --test differential`
//! (`CATERVA_DIFF_FIRST_SEED` picks where to start; a failure prints its seed and step).

mod common;

use caterva::{Array, Config, Context, Error, Params, StorageParams};
use common::Rng;

/// The reference: a C-order array.
#[derive(Clone, Debug, PartialEq)]
struct Ref {
    shape: Vec<i64>,
    item: usize,
    data: Vec<u8>,
}

fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Every index of `shape` in C order.
fn indices(shape: &[i64]) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    if shape.contains(&0) {
        return out;
    }
    let mut idx = vec![0i64; shape.len()];
    loop {
        out.push(idx.clone());
        let mut a = shape.len();
        loop {
            if a == 0 {
                return out;
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

impl Ref {
    fn nitems(&self) -> i64 {
        self.shape.iter().product()
    }
    fn offset(&self, idx: &[i64]) -> usize {
        let st = strides(&self.shape);
        idx.iter().zip(&st).map(|(i, s)| i * s).sum::<i64>() as usize * self.item
    }
    fn get(&self, idx: &[i64]) -> &[u8] {
        let o = self.offset(idx);
        &self.data[o..o + self.item]
    }
    fn set(&mut self, idx: &[i64], v: &[u8]) {
        let o = self.offset(idx);
        self.data[o..o + self.item].copy_from_slice(v);
    }
    /// A new reference of `shape` whose item at `idx` is `f(idx)` (zeros when `None`).
    fn remap(&self, shape: Vec<i64>, f: impl Fn(&[i64]) -> Option<Vec<u8>>) -> Ref {
        let n: i64 = shape.iter().product();
        let mut r = Ref { shape: shape.clone(), item: self.item, data: vec![0; n as usize * self.item] };
        for idx in indices(&shape) {
            if let Some(v) = f(&idx) {
                r.set(&idx, &v);
            }
        }
        r
    }
    fn slice(&self, start: &[i64], stop: &[i64]) -> Ref {
        let shape: Vec<i64> = start.iter().zip(stop).map(|(a, b)| b - a).collect();
        self.remap(shape, |idx| {
            let src: Vec<i64> = idx.iter().zip(start).map(|(i, s)| i + s).collect();
            Some(self.get(&src).to_vec())
        })
    }
}

/// An axis map as the library defines it: new index → old index, or new (zeros).
fn grow_or_shrink(old: i64, new: i64, at: i64, i: i64) -> Option<i64> {
    if new >= old {
        if i < at {
            Some(i)
        } else if i < at + (new - old) {
            None
        } else {
            Some(i - (new - old))
        }
    } else if i < at {
        Some(i)
    } else {
        Some(i + (old - new))
    }
}

struct Harness {
    ctx: Context,
    rng: Rng,
    dir: std::path::PathBuf,
    seed: u64,
    step: usize,
}

impl Harness {
    fn fail(&self, what: &str) -> ! {
        panic!("seed {} step {}: {what}", self.seed, self.step)
    }

    fn check(&self, arr: &Array, r: &Ref, what: &str) {
        if arr.shape() != r.shape.as_slice() {
            self.fail(&format!("{what}: shape {:?}, reference {:?}", arr.shape(), r.shape));
        }
        let got = arr.to_vec().unwrap_or_else(|e| self.fail(&format!("{what}: to_vec failed: {e}")));
        if got != r.data {
            let first = got.iter().zip(&r.data).position(|(a, b)| a != b);
            self.fail(&format!("{what}: bytes differ (first at byte {first:?}) for {arr:?}"));
        }
    }

    fn random_partitions(&mut self, shape: &[i64]) -> (Vec<i32>, Vec<i32>) {
        let mut chunks = Vec::new();
        let mut blocks = Vec::new();
        for &s in shape {
            let c = self.rng.range(1, (s + 2).clamp(1, 9)) as i32;
            chunks.push(c);
            blocks.push(self.rng.range(1, i64::from(c)) as i32);
        }
        (chunks, blocks)
    }

    fn random_storage(&mut self, shape: &[i64], tag: &str) -> StorageParams {
        let (chunkshape, blockshape) = self.random_partitions(shape);
        let kind = self.rng.range(0, 3);
        let urlpath = (kind >= 2).then(|| {
            let ext = if kind == 2 { "b2frame" } else { "b2nd" };
            self.dir.join(format!("{tag}.{ext}")).to_string_lossy().into_owned()
        });
        StorageParams { chunkshape, blockshape, contiguous: kind % 2 == 0, urlpath, metalayers: Vec::new() }
    }

    fn random_region(&mut self, shape: &[i64]) -> (Vec<i64>, Vec<i64>) {
        let start: Vec<i64> = shape.iter().map(|&s| self.rng.range(0, s)).collect();
        let stop: Vec<i64> = shape.iter().zip(&start).map(|(&s, &a)| self.rng.range(a, s)).collect();
        (start, stop)
    }

    fn random_selection(&mut self, shape: &[i64]) -> Vec<Vec<i64>> {
        shape
            .iter()
            .map(|&s| {
                let n = if s == 0 { 0 } else { self.rng.range(0, 6) };
                (0..n).map(|_| self.rng.range(0, s - 1)).collect()
            })
            .collect()
    }

    /// One random operation, applied to both; returns what it was.
    fn step(&mut self, arr: &mut Array, r: &mut Ref) -> String {
        let nd = r.shape.len();
        let op = self.rng.range(0, 13);
        let before = r.clone();
        match op {
            0 if nd > 0 => {
                // resize, at the end or at a random start
                let new_shape: Vec<i64> = r.shape.iter().map(|&s| (s + self.rng.range(-4, 4)).max(0)).collect();
                let start: Option<Vec<i64>> = self.rng.chance(50).then(|| {
                    r.shape
                        .iter()
                        .zip(&new_shape)
                        .map(|(&old, &new)| if new >= old { self.rng.range(0, old) } else { self.rng.range(0, new) })
                        .collect()
                });
                arr.resize(&new_shape, start.as_deref()).unwrap_or_else(|e| self.fail(&format!("resize: {e}")));
                let at: Vec<i64> = match &start {
                    Some(s) => s.clone(),
                    None => r.shape.iter().zip(&new_shape).map(|(&o, &n)| o.min(n)).collect(),
                };
                let old_shape = r.shape.clone();
                *r = r.remap(new_shape.clone(), |idx| {
                    let src: Option<Vec<i64>> =
                        (0..nd).map(|i| grow_or_shrink(old_shape[i], new_shape[i], at[i], idx[i])).collect();
                    src.map(|s| before.get(&s).to_vec())
                });
                format!("resize to {new_shape:?} at {start:?}")
            }
            1 | 2 if nd > 0 => {
                // insert or append whole slabs
                let axis = self.rng.range(0, nd as i64 - 1) as usize;
                let k = self.rng.range(0, 3);
                let at = if op == 2 { r.shape[axis] } else { self.rng.range(0, r.shape[axis]) };
                let mut bshape = r.shape.clone();
                bshape[axis] = k;
                let slab_items: i64 = bshape.iter().product();
                let buf = self.rng.bytes(slab_items as usize * r.item);
                let res = if op == 2 { arr.append(&buf, axis as i64) } else { arr.insert(&buf, axis as i64, at) };
                let empty_slab = r.shape.iter().enumerate().any(|(i, &s)| i != axis && s == 0);
                if empty_slab {
                    // No whole number of slabs can be told from an empty buffer: a no-op.
                    res.unwrap_or_else(|e| self.fail(&format!("insert of an empty slab: {e}")));
                    return "insert of nothing".into();
                }
                res.unwrap_or_else(|e| self.fail(&format!("insert: {e}")));
                let bref = Ref { shape: bshape, item: r.item, data: buf };
                let mut new_shape = r.shape.clone();
                new_shape[axis] += k;
                *r = r.remap(new_shape, |idx| {
                    let mut s = idx.to_vec();
                    if idx[axis] < at {
                        Some(before.get(&s).to_vec())
                    } else if idx[axis] < at + k {
                        s[axis] -= at;
                        Some(bref.get(&s).to_vec())
                    } else {
                        s[axis] -= k;
                        Some(before.get(&s).to_vec())
                    }
                });
                format!("insert {k} slabs at {at} on axis {axis}")
            }
            3 if nd > 0 => {
                let axis = self.rng.range(0, nd as i64 - 1) as usize;
                let start = self.rng.range(0, r.shape[axis]);
                let len = self.rng.range(0, r.shape[axis] - start);
                arr.delete(axis as i64, start, len).unwrap_or_else(|e| self.fail(&format!("delete: {e}")));
                let mut new_shape = r.shape.clone();
                new_shape[axis] -= len;
                *r = r.remap(new_shape, |idx| {
                    let mut s = idx.to_vec();
                    if s[axis] >= start {
                        s[axis] += len;
                    }
                    Some(before.get(&s).to_vec())
                });
                format!("delete {len} at {start} on axis {axis}")
            }
            4 if r.shape.contains(&1) => {
                let index: Vec<bool> = r.shape.iter().map(|&s| s == 1 && self.rng.chance(70)).collect();
                arr.squeeze_index(&index).unwrap_or_else(|e| self.fail(&format!("squeeze: {e}")));
                r.shape = r.shape.iter().zip(&index).filter(|(_, &f)| !f).map(|(&s, _)| s).collect();
                format!("squeeze {index:?}")
            }
            5 => {
                let (start, stop) = self.random_region(&r.shape);
                let sub = r.slice(&start, &stop);
                let data = self.rng.bytes(sub.data.len());
                let bshape = sub.shape.clone();
                arr.set_slice_buffer(&start, &stop, &data, &bshape)
                    .unwrap_or_else(|e| self.fail(&format!("set_slice_buffer: {e}")));
                let src = Ref { shape: bshape, item: r.item, data };
                for idx in indices(&src.shape) {
                    let dst: Vec<i64> = idx.iter().zip(&start).map(|(i, s)| i + s).collect();
                    r.set(&dst, src.get(&idx));
                }
                format!("set slice {start:?}..{stop:?}")
            }
            6 => {
                let sel = self.random_selection(&r.shape);
                let shape: Vec<i64> = sel.iter().map(|l| l.len() as i64).collect();
                let n: i64 = shape.iter().product();
                let data = self.rng.bytes(n as usize * r.item);
                let lists: Vec<&[i64]> = sel.iter().map(Vec::as_slice).collect();
                arr.set_orthogonal_selection(&lists, &data, &shape)
                    .unwrap_or_else(|e| self.fail(&format!("set_orthogonal_selection: {e}")));
                let src = Ref { shape: shape.clone(), item: r.item, data };
                // In C order of the buffer, so a repeated index keeps the last value.
                for idx in indices(&shape) {
                    let dst: Vec<i64> = idx.iter().enumerate().map(|(i, &j)| sel[i][j as usize]).collect();
                    r.set(&dst, src.get(&idx));
                }
                format!("set selection {sel:?}")
            }
            7 => {
                let sel = self.random_selection(&r.shape);
                let shape: Vec<i64> = sel.iter().map(|l| l.len() as i64 + self.rng.range(0, 1)).collect();
                let n: i64 = shape.iter().product();
                let mut got = vec![0xAAu8; n as usize * r.item];
                let lists: Vec<&[i64]> = sel.iter().map(Vec::as_slice).collect();
                arr.get_orthogonal_selection(&lists, &mut got, &shape)
                    .unwrap_or_else(|e| self.fail(&format!("get_orthogonal_selection: {e}")));
                let got = Ref { shape: shape.clone(), item: r.item, data: got };
                let sel_shape: Vec<i64> = sel.iter().map(|l| l.len() as i64).collect();
                for idx in indices(&sel_shape) {
                    let src: Vec<i64> = idx.iter().enumerate().map(|(i, &j)| sel[i][j as usize]).collect();
                    if got.get(&idx) != r.get(&src) {
                        self.fail(&format!("orthogonal read {sel:?} differs at {idx:?}"));
                    }
                }
                format!("get selection {sel:?}")
            }
            8 => {
                let (start, stop) = self.random_region(&r.shape);
                let tag = format!("slice-{}-{}", self.seed, self.step);
                let st = self.random_storage(&r.slice(&start, &stop).shape, &tag);
                let sub = arr
                    .get_slice(&self.ctx, &start, &stop, &st)
                    .unwrap_or_else(|e| self.fail(&format!("get_slice {start:?}..{stop:?}: {e}")));
                self.check(&sub, &r.slice(&start, &stop), "get_slice");
                let mut buf = vec![0u8; sub.to_vec().unwrap().len()];
                let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
                arr.get_slice_buffer(&start, &stop, &mut buf, &shape).unwrap();
                if buf != r.slice(&start, &stop).data {
                    self.fail("get_slice_buffer differs");
                }
                drop(sub);
                if let Some(u) = &st.urlpath {
                    Array::remove(u).unwrap();
                }
                format!("get_slice {start:?}..{stop:?}")
            }
            9 => {
                // copy to new partitions and storage, then carry on with the copy
                let tag = format!("copy-{}-{}", self.seed, self.step);
                let st = if self.rng.chance(50) {
                    self.random_storage(&r.shape, &tag)
                } else {
                    let g = arr.geometry();
                    let mut s = self.random_storage(&r.shape, &tag);
                    s.chunkshape = g.chunkshape().to_vec();
                    s.blockshape = g.blockshape().to_vec();
                    s
                };
                let copy = arr.copy(&self.ctx, &st).unwrap_or_else(|e| self.fail(&format!("copy: {e}")));
                self.check(&copy, r, "copy");
                let old = std::mem::replace(arr, copy);
                let old_path = old.info().urlpath;
                drop(old);
                if let Some(u) = old_path {
                    Array::remove(&u).unwrap();
                }
                "copy".into()
            }
            10 => {
                // persist and reopen (or a frame round trip in memory)
                match arr.info().urlpath {
                    Some(u) => {
                        let tmp = std::mem::replace(
                            arr,
                            Array::zeros(
                                &self.ctx,
                                &Params { itemsize: 1, shape: vec![], dtype: None },
                                &StorageParams::default(),
                            )
                            .unwrap(),
                        );
                        drop(tmp);
                        *arr = Array::open(&self.ctx, &u).unwrap_or_else(|e| self.fail(&format!("reopen: {e}")));
                        "reopen".into()
                    }
                    None => {
                        let frame = arr.to_cframe().unwrap();
                        *arr = Array::from_cframe(&self.ctx, &frame).unwrap();
                        "cframe round trip".into()
                    }
                }
            }
            11 => {
                // bad input: nothing changes
                let res = match self.rng.range(0, 4) {
                    0 => arr.delete(nd as i64, 0, 1),
                    1 if nd > 0 => arr.delete(0, r.shape[0], 1),
                    2 if nd > 0 => {
                        let slab = r.item as i64 * r.shape[1..].iter().product::<i64>();
                        if slab > 1 {
                            arr.insert(&vec![0u8; slab as usize + 1], 0, 0)
                        } else {
                            arr.insert(&vec![0u8; slab as usize], 0, -1)
                        }
                    }
                    3 if nd > 0 => {
                        let mut s = r.shape.clone();
                        s[0] = -1;
                        arr.resize(&s, None)
                    }
                    _ => {
                        arr.get_orthogonal_selection(&vec![&[-1i64][..]; nd.max(1)], &mut [0u8; 8], &vec![1; nd.max(1)])
                    }
                };
                match res {
                    Err(Error::InvalidArgument(_) | Error::InvalidIndex(_)) => {}
                    other => self.fail(&format!("bad input accepted or wrong error: {other:?}")),
                }
                "bad input".into()
            }
            _ => "nothing".into(),
        }
    }
}

fn run_seed(seed: u64, steps: usize, dir: &std::path::Path) {
    let mut rng = Rng(seed);
    let nthreads = [1usize, 2, 4][rng.range(0, 2) as usize];
    let ctx = Context::new(Config { nthreads, ..Config::default() }).unwrap();
    let mut h = Harness { ctx, rng, dir: dir.to_path_buf(), seed, step: 0 };
    let nd = h.rng.range(0, 4) as usize;
    let shape: Vec<i64> = (0..nd).map(|_| if h.rng.chance(10) { 0 } else { h.rng.range(1, 12) }).collect();
    let item = [1usize, 2, 3, 4, 8][h.rng.range(0, 4) as usize];
    let st = h.random_storage(&shape, &format!("arr-{seed}"));
    let n: i64 = shape.iter().product();
    let data = h.rng.bytes(n as usize * item);
    let params = Params { itemsize: item, shape: shape.clone(), dtype: None };
    let mut arr = Array::from_buffer(&h.ctx, &params, &st, &data).unwrap();
    let mut r = Ref { shape, item, data };
    let mut log = Vec::new();
    for step in 0..steps {
        h.step = step;
        let what = h.step(&mut arr, &mut r);
        if std::env::var_os("CATERVA_DIFF_VERBOSE").is_some() {
            eprintln!("seed {seed} step {step}: {what} -> {:?}", arr.geometry());
        }
        log.push(what.clone());
        let ctx_msg = format!("after {what} (history: {:?})", &log[log.len().saturating_sub(6)..]);
        h.check(&arr, &r, &ctx_msg);
        assert!(r.nitems() < 200_000, "reference grew too large");
    }
    let path = arr.info().urlpath;
    drop(arr);
    if let Some(u) = path {
        Array::remove(&u).unwrap();
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn random_operations_match_the_reference() {
    let seeds = env_or("CATERVA_DIFF_SEEDS", 60);
    let first = env_or("CATERVA_DIFF_FIRST_SEED", 1);
    let steps = env_or("CATERVA_DIFF_STEPS", 40) as usize;
    let dir = std::env::temp_dir().join(format!("caterva-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for seed in first..first + seeds {
        run_seed(seed, steps, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
