//! `Array::reduce` against a naive reference: every reduction over random
//! shapes, partitions, axes and dtypes (both byte orders), NaN, empty axes,
//! 0-dim arrays, arrays in files, several thread counts and memory bounds.

use caterva::{Array, Config, Context, ErrorKind, Metalayer, Params, Reduce, ReduceOptions, Reduced, StorageParams};

mod common;
use common::Rng;

fn ctx(nthreads: usize) -> Context {
    Context::new(Config { nthreads, ..Config::default() }).unwrap()
}

/// An item as the reference sees it.
#[derive(Clone, Copy, Debug)]
enum V {
    I(i128),
    F(f64),
    C(f64, f64),
}

/// What a dtype string describes: kind, size, big-endian.
fn parse(dtype: &str) -> (char, usize, bool) {
    let big = dtype.starts_with('>');
    let body = dtype.trim_start_matches(['<', '>', '|']);
    (body.chars().next().unwrap(), body[1..].parse().unwrap(), big)
}

fn f16_bits(v: f64) -> u16 {
    // Test values are small multiples of 1/8, exact in half precision.
    if v.is_nan() {
        return 0x7e00;
    }
    if v == 0.0 {
        return if v.is_sign_negative() { 0x8000 } else { 0 };
    }
    let sign = if v < 0.0 { 0x8000 } else { 0 };
    let a = v.abs();
    let e = a.log2().floor() as i32;
    let m = (a / 2f64.powi(e) * 1024.0).round() as u16 - 1024;
    sign | (((e + 15) as u16) << 10) | m
}

fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        0x1f if frac == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Bytes of `v` as `dtype`.
fn encode(dtype: &str, v: V) -> Vec<u8> {
    let (kind, size, big) = parse(dtype);
    let mut b: Vec<u8> = match (kind, v) {
        ('b', V::I(x)) => vec![u8::from(x != 0)],
        ('i' | 'u', V::I(x)) => (x as u128).to_le_bytes()[..size].to_vec(),
        ('f', V::F(x)) => match size {
            2 => f16_bits(x).to_le_bytes().to_vec(),
            4 => (x as f32).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        },
        ('c', V::C(re, im)) if size == 8 => [(re as f32).to_le_bytes(), (im as f32).to_le_bytes()].concat(),
        ('c', V::C(re, im)) => [re.to_le_bytes(), im.to_le_bytes()].concat(),
        _ => unreachable!("{dtype} {v:?}"),
    };
    if big {
        let h = if kind == 'c' { size / 2 } else { size };
        b.chunks_mut(h).for_each(<[u8]>::reverse);
    }
    b
}

/// The item of `dtype` in `b` (the result's bytes are native: little-endian here).
fn decode(dtype: &str, b: &[u8]) -> V {
    let (kind, size, big) = parse(dtype);
    let mut b = b[..size].to_vec();
    if big {
        let h = if kind == 'c' { size / 2 } else { size };
        b.chunks_mut(h).for_each(<[u8]>::reverse);
    }
    let mut wide = [0u8; 16];
    wide[..size].copy_from_slice(&b);
    match kind {
        'b' => V::I(i128::from(b[0] != 0)),
        'u' => V::I(u128::from_le_bytes(wide) as i128),
        'i' => {
            let shift = 128 - 8 * size as u32;
            V::I((u128::from_le_bytes(wide) as i128) << shift >> shift)
        }
        'f' => V::F(match size {
            2 => f16_value(u16::from_le_bytes([b[0], b[1]])),
            4 => f64::from(f32::from_le_bytes(b[..4].try_into().unwrap())),
            _ => f64::from_le_bytes(b[..8].try_into().unwrap()),
        }),
        'c' if size == 8 => V::C(
            f64::from(f32::from_le_bytes(b[..4].try_into().unwrap())),
            f64::from(f32::from_le_bytes(b[4..8].try_into().unwrap())),
        ),
        'c' => V::C(f64::from_le_bytes(b[..8].try_into().unwrap()), f64::from_le_bytes(b[8..16].try_into().unwrap())),
        _ => unreachable!(),
    }
}

/// A random item of `dtype`: full-range integers (sums wrap), small
/// multiples of 1/8 for floats (exact in every float size), NaN now and then.
fn random_value(rng: &mut Rng, dtype: &str, nan: bool) -> V {
    let (kind, size, _) = parse(dtype);
    let float = |rng: &mut Rng| {
        if nan && rng.chance(8) {
            f64::NAN
        } else {
            rng.range(-800, 800) as f64 / 8.0
        }
    };
    match kind {
        'b' => V::I(i128::from(rng.chance(60))),
        'u' => V::I(if size == 8 { i128::from(rng.next()) } else { i128::from(rng.next() % (1u64 << (8 * size))) }),
        'i' => {
            let bits = 8 * size as u32;
            V::I((i128::from(rng.next()) << (128 - bits)) >> (128 - bits))
        }
        'f' => V::F(float(rng)),
        'c' => V::C(float(rng), float(rng)),
        _ => unreachable!(),
    }
}

/// NumPy's result dtype (on a little-endian machine).
fn result_dtype(op: Reduce, dtype: &str) -> String {
    let (kind, size, _) = parse(dtype);
    let native = |k: char, s: usize| if s == 1 { format!("|{k}{s}") } else { format!("<{k}{s}") };
    match op {
        Reduce::Sum | Reduce::NanSum => match kind {
            'b' | 'i' => "<i8".into(),
            'u' => "<u8".into(),
            k => native(k, size),
        },
        Reduce::Mean | Reduce::NanMean => match kind {
            'b' | 'i' | 'u' => "<f8".into(),
            k => native(k, size),
        },
        Reduce::Std | Reduce::Var | Reduce::NanStd | Reduce::NanVar => match kind {
            'b' | 'i' | 'u' => "<f8".into(),
            'c' => native('f', size / 2),
            k => native(k, size),
        },
        Reduce::Any | Reduce::All => "|b1".into(),
        _ => native(kind, size),
    }
}

/// The reduction of one output item's inputs, naively.
fn reference(op: Reduce, dtype: &str, xs: &[V], ddof: f64) -> V {
    let (kind, _, _) = parse(dtype);
    let isnan = |v: &V| match v {
        V::F(x) => x.is_nan(),
        V::C(a, b) => a.is_nan() || b.is_nan(),
        V::I(_) => false,
    };
    let nonzero = |v: &V| match *v {
        V::F(x) => x != 0.0,
        V::C(a, b) => a != 0.0 || b != 0.0,
        V::I(x) => x != 0,
    };
    let f = |v: &V| match *v {
        V::F(x) => x,
        V::I(x) => x as f64,
        V::C(..) => unreachable!(),
    };
    let skip = matches!(
        op,
        Reduce::NanSum | Reduce::NanMean | Reduce::NanMin | Reduce::NanMax | Reduce::NanStd | Reduce::NanVar
    );
    let kept: Vec<V> = xs.iter().copied().filter(|v| !(skip && isnan(v))).collect();
    let csum =
        |vs: &[V]| vs.iter().fold((0.0, 0.0), |(a, b), v| if let V::C(x, y) = v { (a + x, b + y) } else { (a, b) });
    match op {
        Reduce::Any => V::I(i128::from(xs.iter().any(nonzero))),
        Reduce::All => V::I(i128::from(xs.iter().all(nonzero))),
        Reduce::Sum | Reduce::NanSum => match kind {
            'c' => {
                let (a, b) = csum(&kept);
                V::C(a, b)
            }
            'f' => V::F(kept.iter().map(f).sum()),
            'u' => {
                V::I(kept.iter().map(|v| if let V::I(x) = v { *x as u128 } else { 0 }).fold(0u128, u128::wrapping_add)
                    as u64 as i128)
            }
            _ => V::I(i128::from(
                kept.iter().map(|v| if let V::I(x) = v { *x as i64 } else { 0 }).fold(0i64, i64::wrapping_add),
            )),
        },
        Reduce::Mean | Reduce::NanMean => {
            let n = kept.len() as f64;
            if kind == 'c' {
                let (a, b) = csum(&kept);
                V::C(a / n, b / n)
            } else {
                V::F(kept.iter().map(f).sum::<f64>() / n)
            }
        }
        Reduce::Var | Reduce::Std | Reduce::NanVar | Reduce::NanStd => {
            let n = kept.len() as f64;
            let mean = kept.iter().map(f).sum::<f64>() / n;
            let m2: f64 = kept.iter().map(|v| (f(v) - mean) * (f(v) - mean)).sum();
            let m2 = if kept.is_empty() { 0.0 } else { m2 };
            let dof = n - ddof;
            let var = if skip && dof <= 0.0 { f64::NAN } else { m2 / dof.max(0.0) };
            V::F(if matches!(op, Reduce::Std | Reduce::NanStd) { var.sqrt() } else { var })
        }
        Reduce::Min | Reduce::Max | Reduce::NanMin | Reduce::NanMax => {
            let max = matches!(op, Reduce::Max | Reduce::NanMax);
            if kind == 'f' {
                if kept.is_empty() || (!skip && kept.iter().any(isnan)) {
                    return V::F(f64::NAN);
                }
                let it = kept.iter().map(f);
                V::F(if max { it.fold(f64::NEG_INFINITY, f64::max) } else { it.fold(f64::INFINITY, f64::min) })
            } else {
                let it = kept.iter().map(|v| if let V::I(x) = v { *x } else { 0 });
                V::I(if max { it.max().unwrap() } else { it.min().unwrap() })
            }
        }
    }
}

fn close(got: V, want: V, tol: f64, scale: f64) -> bool {
    let fclose = |g: f64, w: f64| (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * scale.max(1.0);
    match (got, want) {
        (V::I(g), V::I(w)) => g == w,
        (V::F(g), V::F(w)) => fclose(g, w),
        (V::C(a, b), V::C(c, d)) => fclose(a, c) && fclose(b, d),
        _ => false,
    }
}

/// Reduce `arr` (whose items are `vals`, C order) and check against the reference.
fn check(arr: &Array, vals: &[V], dtype: &str, op: Reduce, axes: &[usize], opts: &ReduceOptions) {
    let shape = arr.shape().to_vec();
    let n = shape.len();
    let red: Vec<bool> = (0..n).map(|i| axes.contains(&i)).collect();
    let count: i64 = (0..n).filter(|&i| red[i]).map(|i| shape[i]).product();
    let what = format!("{} {dtype} shape {shape:?} axes {axes:?}", op.name());
    let got = arr.reduce(op, axes, opts);
    if count == 0 && matches!(op, Reduce::Min | Reduce::Max | Reduce::NanMin | Reduce::NanMax) {
        let e = got.expect_err(&what);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{what}");
        assert!(e.to_string().contains("zero-size array"), "{what}: {e}");
        return;
    }
    let Reduced { shape: rshape, dtype: rdtype, data } = got.unwrap_or_else(|e| panic!("{what}: {e}"));
    let want_shape: Vec<i64> =
        (0..n).filter_map(|i| if red[i] { opts.keepdims.then_some(1) } else { Some(shape[i]) }).collect();
    assert_eq!(rshape, want_shape, "{what}");
    assert_eq!(rdtype, result_dtype(op, dtype), "{what}");
    let kept: Vec<usize> = (0..n).filter(|&i| !red[i]).collect();
    let out_len: usize = kept.iter().map(|&i| shape[i] as usize).product();
    let (_, osize, _) = parse(&rdtype);
    assert_eq!(data.len(), out_len * osize, "{what}");
    // Group the items by output position.
    let mut groups: Vec<Vec<V>> = vec![Vec::new(); out_len];
    let strides: Vec<usize> = (0..n).map(|i| shape[i + 1..].iter().product::<i64>() as usize).collect();
    for (flat, v) in vals.iter().enumerate() {
        let mut o = 0usize;
        for &k in &kept {
            o = o * shape[k] as usize + (flat / strides[k]) % shape[k] as usize;
        }
        groups[o].push(*v);
    }
    let tol = match parse(&rdtype) {
        ('f' | 'c', 2, _) => 2e-3,
        ('f', 4, _) | ('c', 8, _) => 1e-6,
        _ => 1e-12,
    };
    for (o, g) in groups.iter().enumerate() {
        let want = reference(op, dtype, g, opts.ddof);
        let got = decode(&rdtype, &data[o * osize..]);
        let scale = g
            .iter()
            .map(|v| match *v {
                V::F(x) if !x.is_nan() => x.abs(),
                V::C(a, b) => a.abs() + b.abs(),
                V::I(x) => x.unsigned_abs() as f64,
                V::F(_) => 0.0,
            })
            .filter(|x| !x.is_nan())
            .sum::<f64>()
            .max(g.len() as f64);
        let scale = if matches!(op, Reduce::Var | Reduce::NanVar) { scale * scale } else { scale };
        assert!(close(got, want, tol, scale), "{what}: item {o}: got {got:?}, want {want:?} from {g:?}");
    }
}

const REAL: [&str; 20] = [
    "|b1", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "|u1", "<u2", ">u2", "<u4", ">u4", "<u8", ">u8", "<f2",
    ">f2", "<f4", ">f4", "<f8",
];
const MORE: [&str; 5] = [">f8", "<c8", ">c8", "<c16", ">c16"];

fn supported(op: Reduce, dtype: &str) -> bool {
    !dtype.contains('c')
        || matches!(op, Reduce::Sum | Reduce::Mean | Reduce::Any | Reduce::All | Reduce::NanSum | Reduce::NanMean)
}

/// A random array of `dtype` and the items it holds.
fn random_array(rng: &mut Rng, ctx: &Context, dtype: &str, storage_path: Option<String>) -> (Array, Vec<V>) {
    let (_, size, _) = parse(dtype);
    let ndim = rng.range(0, 4) as usize;
    let shape: Vec<i64> = (0..ndim).map(|_| if rng.chance(5) { 0 } else { rng.range(1, 9) }).collect();
    let chunks: Vec<i32> = shape.iter().map(|&s| rng.range(1, s.max(1)) as i32).collect();
    let blocks: Vec<i32> = chunks.iter().map(|&c| rng.range(1, i64::from(c)) as i32).collect();
    let nitems: i64 = shape.iter().product();
    let nan = rng.chance(50);
    let vals: Vec<V> = (0..nitems).map(|_| random_value(rng, dtype, nan)).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|&v| encode(dtype, v)).collect();
    let params = Params { itemsize: size, shape, dtype: Some(dtype.into()) };
    let storage = StorageParams {
        chunkshape: chunks,
        blockshape: blocks,
        contiguous: true,
        urlpath: storage_path,
        metalayers: Vec::new(),
    };
    if let Some(p) = &storage.urlpath {
        let _ = std::fs::remove_file(p);
    }
    let arr = Array::from_buffer(ctx, &params, &storage, &bytes).unwrap();
    // Values as stored: a float16 or float32 array holds the rounded values.
    let vals = vals.iter().map(|&v| decode(dtype, &encode(dtype, v))).collect();
    (arr, vals)
}

fn random_axes(rng: &mut Rng, ndim: usize) -> Vec<usize> {
    if rng.chance(25) {
        return (0..ndim).collect();
    }
    let mut axes: Vec<usize> = (0..ndim).filter(|_| rng.chance(50)).collect();
    // Any order.
    if axes.len() > 1 && rng.chance(50) {
        axes.reverse();
    }
    axes
}

#[test]
fn every_reduction_matches_the_reference() {
    let mut rng = Rng(0x5eed_0025);
    let ctxs = [ctx(1), ctx(3)];
    for dtype in REAL.iter().chain(&MORE) {
        for round in 0..12 {
            let c = &ctxs[round % 2];
            let (arr, vals) = random_array(&mut rng, c, dtype, None);
            for op in Reduce::all() {
                if !supported(op, dtype) {
                    continue;
                }
                let axes = random_axes(&mut rng, arr.ndim());
                let opts = ReduceOptions {
                    ddof: if rng.chance(30) { rng.range(0, 2) as f64 } else { 0.0 },
                    keepdims: rng.chance(30),
                    max_memory: None,
                };
                check(&arr, &vals, dtype, op, &axes, &opts);
            }
        }
    }
}

#[test]
fn complex_items_refuse_what_they_do_not_support() {
    let c = ctx(1);
    let mut rng = Rng(7);
    let (arr, _) = random_array(&mut rng, &c, "<c16", None);
    for op in [
        Reduce::Min,
        Reduce::Max,
        Reduce::Var,
        Reduce::Std,
        Reduce::NanMin,
        Reduce::NanMax,
        Reduce::NanVar,
        Reduce::NanStd,
    ] {
        let e = arr.reduce(op, &[], &ReduceOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("complex"), "{e}");
    }
}

#[test]
fn arrays_in_files_reduce_like_in_memory() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("reduce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0xf11e);
    let c = ctx(2);
    for (i, dtype) in ["<f8", ">i4", "<f4", "|b1"].iter().enumerate() {
        let path = dir.join(format!("a{i}.b2nd")).to_string_lossy().into_owned();
        let (arr, vals) = random_array(&mut rng, &c, dtype, Some(path.clone()));
        drop(arr);
        let arr = Array::open(&c, &path).unwrap();
        for op in Reduce::all() {
            let axes = random_axes(&mut rng, arr.ndim());
            check(&arr, &vals, dtype, op, &axes, &ReduceOptions::default());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn f64_array(c: &Context, shape: &[i64], chunks: &[i32], blocks: &[i32], vals: &[f64]) -> Array {
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let params = Params { itemsize: 8, shape: shape.to_vec(), dtype: Some("<f8".into()) };
    let storage =
        StorageParams { chunkshape: chunks.to_vec(), blockshape: blocks.to_vec(), ..StorageParams::default() };
    Array::from_buffer(c, &params, &storage, &bytes).unwrap()
}

fn f64s(r: &Reduced) -> Vec<f64> {
    assert_eq!(r.dtype, "<f8");
    r.data.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

#[test]
fn results_do_not_depend_on_threads_or_memory_bounds() {
    let shape = [60i64, 50, 7];
    let vals: Vec<f64> = (0..21000).map(|i| (f64::from(i) * 0.37).sin() * 1e3 + 1e6).collect();
    let base = f64_array(&ctx(1), &shape, &[7, 9, 4], &[3, 4, 2], &vals);
    for op in [Reduce::Sum, Reduce::Mean, Reduce::Var, Reduce::Max] {
        for axes in [vec![0usize], vec![1], vec![0, 2], vec![0, 1, 2]] {
            let want = base.reduce(op, &axes, &ReduceOptions::default()).unwrap();
            for threads in [2, 4] {
                let c = ctx(threads);
                let a = f64_array(&c, &shape, &[7, 9, 4], &[3, 4, 2], &vals);
                for max_memory in [None, Some(40_000), Some(200_000)] {
                    let opts = ReduceOptions { max_memory, ..ReduceOptions::default() };
                    let got = a.reduce(op, &axes, &opts).unwrap();
                    assert_eq!(got, want, "{op:?} {axes:?} {threads} threads, {max_memory:?}");
                }
            }
        }
    }
    // A bound that cannot hold one chunk's work is an error, not a crash.
    let e = base.reduce(Reduce::Sum, &[0], &ReduceOptions { max_memory: Some(100), ..ReduceOptions::default() });
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn variance_is_numerically_sound() {
    // Values 1e9 + {0, 1, 2, 3}: the naive sum of squares loses every digit.
    let vals: Vec<f64> = (0..4000).map(|i| 1e9 + f64::from(i % 4)).collect();
    let a = f64_array(&ctx(2), &[4000], &[333], &[50], &vals);
    let var = f64s(&a.reduce(Reduce::Var, &[0], &ReduceOptions::default()).unwrap())[0];
    assert!((var - 1.25).abs() < 1e-9, "{var}");
    let std = f64s(&a.reduce(Reduce::Std, &[0], &ReduceOptions { ddof: 1.0, ..ReduceOptions::default() }).unwrap())[0];
    assert!((std - (1.25f64 * 4000.0 / 3999.0).sqrt()).abs() < 1e-9, "{std}");
}

#[test]
fn nan_rules_follow_numpy() {
    let n = f64::NAN;
    let vals = [1.0, n, 3.0, n, n, n, 5.0, 2.0];
    let a = f64_array(&ctx(1), &[4, 2], &[3, 1], &[2, 1], &vals);
    let r = |op, axes: &[usize]| f64s(&a.reduce(op, axes, &ReduceOptions::default()).unwrap());
    let same = |g: Vec<f64>, w: &[f64]| {
        assert_eq!(g.len(), w.len());
        assert!(g.iter().zip(w).all(|(g, w)| g == w || (g.is_nan() && w.is_nan())), "{g:?} vs {w:?}");
    };
    same(r(Reduce::Max, &[0]), &[n, n]);
    same(r(Reduce::NanMax, &[0]), &[5.0, 2.0]);
    same(r(Reduce::NanMin, &[1]), &[1.0, 3.0, n, 2.0]);
    same(r(Reduce::NanSum, &[1]), &[1.0, 3.0, 0.0, 7.0]);
    same(r(Reduce::NanMean, &[1]), &[1.0, 3.0, n, 3.5]);
    same(r(Reduce::Sum, &[1]), &[n, n, n, 7.0]);
    same(r(Reduce::NanVar, &[1]), &[0.0, 0.0, n, 2.25]);
    // nanvar with no degrees of freedom left is NaN, var's is inf.
    let one = |op| f64s(&a.reduce(op, &[1], &ReduceOptions { ddof: 2.0, ..ReduceOptions::default() }).unwrap())[3];
    assert!(one(Reduce::NanVar).is_nan());
    assert_eq!(one(Reduce::Var), f64::INFINITY);
}

#[test]
fn empty_reductions_follow_numpy() {
    let c = ctx(2);
    let a = f64_array(&c, &[3, 0], &[2, 1], &[1, 1], &[]);
    let ok = |op, axes: &[usize]| a.reduce(op, axes, &ReduceOptions::default()).unwrap();
    assert_eq!(f64s(&ok(Reduce::Sum, &[1])), vec![0.0; 3]);
    assert!(f64s(&ok(Reduce::Mean, &[1])).iter().all(|x| x.is_nan()));
    assert!(f64s(&ok(Reduce::Var, &[0, 1])).iter().all(|x| x.is_nan()));
    assert_eq!(ok(Reduce::Any, &[1]).data, vec![0; 3]);
    assert_eq!(ok(Reduce::All, &[1]).data, vec![1; 3]);
    // An empty output with items to reduce is fine; no items to reduce is not.
    assert_eq!(ok(Reduce::Max, &[0]).shape, vec![0]);
    for op in [Reduce::Min, Reduce::Max, Reduce::NanMin, Reduce::NanMax] {
        let e = a.reduce(op, &[1], &ReduceOptions::default()).unwrap_err();
        assert!(e.to_string().contains("zero-size array"), "{e}");
    }
    // A 0-dim array: one item.
    let z = f64_array(&c, &[], &[], &[], &[2.5]);
    assert_eq!(f64s(&z.reduce(Reduce::Sum, &[], &ReduceOptions::default()).unwrap()), vec![2.5]);
    assert_eq!(
        z.reduce(Reduce::Max, &[], &ReduceOptions { keepdims: true, ..ReduceOptions::default() }).unwrap().shape,
        Vec::<i64>::new()
    );
}

#[test]
fn bad_input_is_an_error() {
    let c = ctx(1);
    let a = f64_array(&c, &[4, 5], &[2, 2], &[1, 2], &[0.0; 20]);
    let opts = ReduceOptions::default();
    for axes in [vec![2usize], vec![0, 0], vec![1, 5, 0]] {
        let e = a.reduce(Reduce::Sum, &axes, &opts).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{axes:?}");
    }
    // Items that are not numbers.
    let params = Params { itemsize: 3, shape: vec![4], dtype: None };
    let storage = StorageParams { chunkshape: vec![2], blockshape: vec![1], ..StorageParams::default() };
    let raw = Array::zeros(&c, &params, &storage).unwrap();
    let e = raw.reduce(Reduce::Sum, &[0], &opts).unwrap_err();
    assert!(e.to_string().contains("cannot be reduced"), "{e}");
    let params = Params { itemsize: 4, shape: vec![4], dtype: Some("<U1".into()) };
    let s = Array::zeros(&c, &params, &storage).unwrap();
    assert_eq!(s.reduce(Reduce::Max, &[0], &opts).unwrap_err().kind(), ErrorKind::InvalidArgument);
    // No dtype at all: 15 user metalayers leave no room for the b2nd one.
    let metalayers = (0..15).map(|i| Metalayer { name: format!("m{i}"), content: vec![1] }).collect();
    let params = Params { itemsize: 8, shape: vec![4], dtype: None };
    let storage = StorageParams { chunkshape: vec![2], blockshape: vec![1], metalayers, ..StorageParams::default() };
    let bare = Array::zeros(&c, &params, &storage).unwrap();
    assert!(bare.dtype().is_none());
    let e = bare.reduce(Reduce::Sum, &[0], &opts).unwrap_err();
    assert!(e.to_string().contains("no dtype"), "{e}");
    assert_eq!(Reduce::from_name("nanstd"), Some(Reduce::NanStd));
    assert_eq!(Reduce::from_number(14), None);
    assert_eq!(Reduce::from_number(-1), None);
    assert_eq!(Reduce::from_number(5), Some(Reduce::Var));
}
