//! The compatibility matrix against today's Blosc2 writers: arrays written by
//! python-blosc2 4.x (c-blosc2 3.x inside its wheel) over every codec,
//! filter and filter meta, dtype, shape, special chunk, storage and
//! compression parameter it offers, each either read bit for bit (and
//! found sound by `verify`) or refused with an error that names the
//! feature; and the other way, what we write, read by python-blosc2.
//!
//! `tests/interop/matrix.py` is the Python side (run with the python-blosc2
//! environment that `.ci/setup` makes under `target/interop/blosc2`). The
//! refusals are an explicit table ([`REFUSED`]): a cell that starts or stops
//! being read fails the test, so a change in either direction is seen.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use caterva::codec;
use caterva::{Array, CParams, Codec, Config, Context, Error, Filter, Metalayer, Params, SplitMode, StorageParams};

mod common;
use common::{hex, python, repo_root, run, scratch_dir, unhex};

/// The cells we refuse, and the words the error must contain: it names the
/// feature (and, for a chunk, which one). Every other cell must read bit
/// for bit.
const REFUSED: &[(&str, &str)] = &[
    ("codec_ndlz_4", "codec NDLZ (id 32"),
    ("codec_ndlz_8", "codec NDLZ (id 32"),
    ("codec_zfp_acc_f4", "codec ZFP_ACC (id 33"),
    ("codec_zfp_acc_f8", "codec ZFP_ACC (id 33"),
    ("codec_zfp_prec_f4", "codec ZFP_PREC (id 34"),
    ("codec_zfp_prec_f8", "codec ZFP_PREC (id 34"),
    ("codec_zfp_rate_f4", "codec ZFP_RATE (id 35"),
    ("codec_zfp_rate_f8", "codec ZFP_RATE (id 35"),
    // Written only where their Python plugins are installed (not in CI: skipped).
    ("codec_openhtj2k", "codec OPENHTJ2K (id 36"),
    ("codec_grok", "codec GROK (id 37"),
    ("codec_openzl", "codec OPENZL (id 38"),
    ("codec_j2k", "codec J2K (id 39"),
    ("codec_htj2k", "codec HTJ2K (id 40"),
    ("filter_bytedelta", "filter BYTEDELTA (id 35"),
    ("filter_bytedelta_meta0", "filter BYTEDELTA (id 35"),
    ("filter_int_trunc", "filter INT_TRUNC (id 36"),
    ("filter_ndcell", "filter NDCELL (id 32"),
    ("filter_ndcell_2d", "filter NDCELL (id 32"),
    ("filter_ndmean", "filter NDMEAN (id 33"),
    ("shape_9d", "ndim 9 is larger than 8"),
    ("frame_vl_blocks_batcharray", "variable-length blocks (frame format version 3 with the VL-blocks flag"),
    ("frame_objectarray", "neither a 'caterva' nor a 'b2nd' metalayer"),
    ("cparams_dict_lz4", "dictionary with codec LZ4/LZ4HC"),
    ("cparams_dict_lz4hc", "dictionary with codec LZ4/LZ4HC"),
];

/// One line of `cells.txt`: `key=value` fields.
struct Cell(BTreeMap<String, String>);

impl Cell {
    fn get(&self, k: &str) -> &str {
        self.0.get(k).map_or("", String::as_str)
    }
    fn list(&self, k: &str) -> Vec<i64> {
        let v = self.get(k);
        if v.is_empty() {
            Vec::new()
        } else {
            v.split(',').map(|x| x.parse().unwrap()).collect()
        }
    }
    fn map(&self, k: &str) -> Vec<(String, Vec<u8>)> {
        let v = self.get(k);
        if v.is_empty() {
            return Vec::new();
        }
        v.split(';')
            .map(|e| {
                let (n, h) = e.split_once(':').unwrap();
                (n.to_owned(), unhex(h))
            })
            .collect()
    }
    fn name(&self) -> &str {
        self.get("name")
    }
}

fn read_cells(dir: &Path) -> Vec<Cell> {
    let text = std::fs::read_to_string(dir.join("cells.txt")).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| Cell(l.split('\t').map(|f| f.split_once('=').unwrap()).map(|(k, v)| (k.into(), v.into())).collect()))
        .collect()
}

fn matrix_py(mode: &str, dir: &Path) -> String {
    matrix_py_only(mode, dir, None)
}

/// `matrix.py MODE DIR [ONLY]`: with `only`, just the cells whose name contains it.
fn matrix_py_only(mode: &str, dir: &Path, only: Option<&str>) -> String {
    let script = repo_root().join("tests").join("interop").join("matrix.py");
    let mut cmd = Command::new(python("blosc2"));
    cmd.arg(script).arg(mode).arg(dir).args(only);
    let out = run(&mut cmd, &format!("matrix.py {mode}"));
    println!("{out}");
    out
}

/// Why a cell was not read: refused (an error from us) or read wrong (a
/// value differs from python-blosc2's, or `verify` disagrees).
enum Outcome {
    Read,
    Refused(Error),
    Wrong(String),
}

/// Read cell `c` every way we can and compare with `want` (python-blosc2's bytes).
fn read_cell(ctx: &Context, c: &Cell, want: &[u8]) -> Outcome {
    let arr = match Array::open(ctx, c.get("path")) {
        Ok(a) => a,
        Err(e) => return Outcome::Refused(e),
    };
    let shape = c.list("shape");
    if arr.shape() != shape.as_slice() {
        return Outcome::Wrong(format!("shape {:?} != {shape:?}", arr.shape()));
    }
    if arr.itemsize() != c.get("itemsize").parse::<usize>().unwrap() {
        return Outcome::Wrong(format!("itemsize {}", arr.itemsize()));
    }
    if !shape.is_empty() {
        let ch: Vec<i32> = c.list("chunks").into_iter().map(|x| x as i32).collect();
        let bl: Vec<i32> = c.list("blocks").into_iter().map(|x| x as i32).collect();
        if arr.geometry().chunkshape() != ch.as_slice() || arr.geometry().blockshape() != bl.as_slice() {
            return Outcome::Wrong(format!(
                "partitions {:?}/{:?}",
                arr.geometry().chunkshape(),
                arr.geometry().blockshape()
            ));
        }
    }
    match arr.dtype() {
        Some(d) if d == c.get("dtype") || d.starts_with('[') => {}
        other => return Outcome::Wrong(format!("dtype {other:?} != {}", c.get("dtype"))),
    }
    for (k, v) in c.map("meta") {
        if arr.meta_get(&k).ok().as_ref() != Some(&v) {
            return Outcome::Wrong(format!("metalayer {k}"));
        }
    }
    for (k, v) in c.map("vlmeta") {
        if arr.vlmeta_get(&k).ok().as_ref() != Some(&v) {
            return Outcome::Wrong(format!("vlmeta {k}"));
        }
    }
    let problems = match arr.verify(&mut |_, _| {}) {
        Ok(p) => p,
        Err(e) => return Outcome::Wrong(format!("verify failed: {e}")),
    };
    let got = match arr.to_vec() {
        Ok(v) => v,
        Err(e) => {
            // Chunks we cannot decode: verify must not call any of them
            // sound, and every chunk it calls sound reads right.
            if problems.is_empty() {
                return Outcome::Wrong(format!("verify calls sound an array that does not read: {e}"));
            }
            if let Some(why) = sound_chunks_read_right(&arr, &problems, want) {
                return Outcome::Wrong(why);
            }
            return Outcome::Refused(e);
        }
    };
    if got != want {
        let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
        return Outcome::Wrong(format!("bytes differ ({} read, {} expected, {n} differ)", got.len(), want.len()));
    }
    if let Some(p) = problems.first() {
        return Outcome::Wrong(format!("reads right, but verify reports {p}"));
    }
    // A slice through the block-level reader: the second row (or item).
    if !shape.is_empty() && shape[0] > 1 && shape.iter().all(|&s| s > 0) {
        let mut start = vec![0i64; shape.len()];
        let mut stop = shape.clone();
        start[0] = 1;
        stop[0] = 2;
        let bshape: Vec<i64> = stop.iter().zip(&start).map(|(a, b)| a - b).collect();
        let step = want.len() / shape[0] as usize;
        let mut row = vec![0u8; step];
        if let Err(e) = arr.get_slice_buffer(&start, &stop, &mut row, &bshape) {
            return Outcome::Wrong(format!("reads whole, but a slice fails: {e}"));
        }
        if row != want[step..2 * step] {
            return Outcome::Wrong("slice [1:2] differs".into());
        }
    }
    Outcome::Read
}

/// The items of `want` (C order, `shape`) in `start..stop`, C order.
fn region_bytes(want: &[u8], shape: &[i64], itemsize: usize, start: &[i64], stop: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut idx = start.to_vec();
    if start.iter().zip(stop).any(|(a, b)| a >= b) {
        return out;
    }
    loop {
        let flat = idx.iter().zip(shape).fold(0i64, |acc, (&i, &s)| acc * s + i) as usize;
        out.extend_from_slice(&want[flat * itemsize..(flat + 1) * itemsize]);
        let mut d = idx.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < stop[d] {
                break;
            }
            idx[d] = start[d];
        }
    }
}

/// Every chunk `verify` does not report reads (by itself, through a slice
/// of its region) what python-blosc2 reads there; `Some(why)` if not.
fn sound_chunks_read_right(arr: &Array, problems: &[caterva::ChunkProblem], want: &[u8]) -> Option<String> {
    let shape = arr.shape().to_vec();
    let chunks: Vec<i64> = arr.geometry().chunkshape().iter().map(|&c| i64::from(c)).collect();
    let grid: Vec<i64> = shape.iter().zip(&chunks).map(|(s, c)| (s + c - 1) / c).collect();
    let nchunks: i64 = grid.iter().product();
    for n in 0..nchunks {
        if problems.iter().any(|p| p.nchunk == n) {
            continue;
        }
        let mut rest = n;
        let mut start = vec![0i64; shape.len()];
        for d in (0..shape.len()).rev() {
            start[d] = rest % grid[d] * chunks[d];
            rest /= grid[d];
        }
        let stop: Vec<i64> = start.iter().zip(&chunks).zip(&shape).map(|((a, c), s)| (a + c).min(*s)).collect();
        let bshape: Vec<i64> = stop.iter().zip(&start).map(|(a, b)| a - b).collect();
        let expect = region_bytes(want, &shape, arr.itemsize(), &start, &stop);
        let mut got = vec![0u8; expect.len()];
        match arr.get_slice_buffer(&start, &stop, &mut got, &bshape) {
            Ok(()) if got == expect => {}
            Ok(()) => return Some(format!("verify calls chunk {n} sound, but it reads other values")),
            Err(e) => return Some(format!("verify calls chunk {n} sound, but it does not read: {e}")),
        }
    }
    None
}

#[test]
fn we_read_what_python_blosc2_writes() {
    let dir = scratch_dir("matrix-theirs");
    matrix_py("write", &dir);
    let ctx = Context::new(Config { nthreads: 2, ..Config::default() }).unwrap();
    let cells = read_cells(&dir);
    assert!(cells.len() > 100, "matrix.py wrote {} cells", cells.len());
    let mut wrong = Vec::new();
    let mut table: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in &cells {
        let want = std::fs::read(dir.join(format!("{}.bin", c.name()))).unwrap();
        let expected = REFUSED.iter().find(|(n, _)| *n == c.name()).map(|(_, w)| *w);
        let row = table.entry(c.get("axis").to_owned()).or_default();
        match (read_cell(&ctx, c, &want), expected) {
            (Outcome::Read, None) => row.0 += 1,
            (Outcome::Read, Some(w)) => wrong.push(format!("{}: reads, but the table says refused ({w})", c.name())),
            (Outcome::Refused(e), Some(w)) if e.to_string().contains(w) => {
                println!("refused {}: {e}", c.name());
                row.1 += 1;
            }
            (Outcome::Refused(e), _) => wrong.push(format!("{}: refused unexpectedly: {e}", c.name())),
            (Outcome::Wrong(why), _) => wrong.push(format!("{}: WRONG: {why}", c.name())),
        }
    }
    for (axis, (read, refused)) in &table {
        println!("{axis:>8}: {read} read bit for bit, {refused} refused by name");
    }
    assert!(wrong.is_empty(), "{} of {} cells:\n{}", wrong.len(), cells.len(), wrong.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// One array we write for python-blosc2.
struct Ours {
    name: String,
    dtype: &'static str,
    itemsize: usize,
    shape: Vec<i64>,
    chunks: Vec<i32>,
    blocks: Vec<i32>,
    cparams: CParams,
    /// "data", "zeros" or "full".
    make: &'static str,
    contiguous: bool,
    checksums: bool,
    /// What is done to it after creation: "" (nothing), "inserted",
    /// "deleted", "resized", "set", "appended".
    history: &'static str,
}

fn ours(name: &str, dtype: &'static str, itemsize: usize, shape: &[i64], chunks: &[i32], blocks: &[i32]) -> Ours {
    Ours {
        name: name.to_owned(),
        dtype,
        itemsize,
        shape: shape.to_vec(),
        chunks: chunks.to_vec(),
        blocks: blocks.to_vec(),
        cparams: CParams::default(),
        make: "data",
        contiguous: true,
        checksums: false,
        history: "",
    }
}

fn cp(codec: Codec, clevel: u8, filters: &[(Filter, u8)]) -> CParams {
    let mut c = CParams { codec, clevel, ..CParams::default() };
    c.filters = [Filter::NoFilter; 6];
    c.filters_meta = [0; 6];
    for (i, &(f, m)) in filters.iter().enumerate() {
        c.filters[6 - filters.len() + i] = f;
        c.filters_meta[6 - filters.len() + i] = m;
    }
    c
}

/// A filter cell: name, dtype, itemsize, the pipeline's (filter, meta).
type FilterCell = (&'static str, &'static str, usize, &'static [(Filter, u8)]);
/// A shape cell: name, shape, chunk shape, block shape.
type ShapeCell = (&'static str, &'static [i64], &'static [i32], &'static [i32]);

/// The cells of the reverse matrix: each axis we write.
fn our_cells() -> Vec<(&'static str, Ours)> {
    const S2: &[i64] = &[37, 29];
    const C2: &[i32] = &[16, 12];
    const B2: &[i32] = &[8, 5];
    let mut v = Vec::new();
    for (id, name) in codec::ALL {
        for (dt, size) in [("<i4", 4), ("<f8", 8)] {
            let mut o = ours(&format!("codec_{name}_{}", &dt[1..]), dt, size, S2, C2, B2);
            o.cparams = cp(Codec::from_id(id), 5, &[(Filter::Shuffle, 0)]);
            v.push(("codec", o));
        }
    }
    for clevel in [0, 1, 9] {
        let mut o = ours(&format!("codec_zstd_clevel{clevel}"), "<i8", 8, S2, C2, B2);
        o.cparams = cp(Codec::Zstd, clevel, &[(Filter::Shuffle, 0)]);
        v.push(("codec", o));
    }
    let filters: [FilterCell; 10] = [
        ("nofilter", "<i4", 4, &[(Filter::NoFilter, 0)]),
        ("shuffle", "<i4", 4, &[(Filter::Shuffle, 0)]),
        ("shuffle_meta2", "<i8", 8, &[(Filter::Shuffle, 2)]),
        ("bitshuffle", "<f8", 8, &[(Filter::BitShuffle, 0)]),
        ("delta", "<i4", 4, &[(Filter::Delta, 0)]),
        ("trunc_prec_f4", "<f4", 4, &[(Filter::TruncPrec, 10)]),
        ("trunc_prec_f8", "<f8", 8, &[(Filter::TruncPrec, 20)]),
        ("delta_shuffle", "<i8", 8, &[(Filter::Delta, 0), (Filter::Shuffle, 0)]),
        ("trunc_bitshuffle", "<f8", 8, &[(Filter::TruncPrec, 30), (Filter::BitShuffle, 0)]),
        ("shuffle_shuffle", "<i2", 2, &[(Filter::Shuffle, 0), (Filter::Shuffle, 0)]),
    ];
    for (name, dt, size, f) in filters {
        let mut o = ours(&format!("filter_{name}"), dt, size, S2, C2, B2);
        o.cparams = cp(Codec::Zstd, 5, f);
        v.push(("filter", o));
    }
    let dtypes: [(&'static str, usize); 24] = [
        ("|b1", 1),
        ("|i1", 1),
        ("<i2", 2),
        ("<i4", 4),
        ("<i8", 8),
        ("|u1", 1),
        ("<u2", 2),
        ("<u4", 4),
        ("<u8", 8),
        ("<f2", 2),
        ("<f4", 4),
        ("<f8", 8),
        ("<c8", 8),
        ("<c16", 16),
        (">i4", 4),
        ("<M8[ns]", 8),
        ("<U1", 4),
        ("<U5", 20),
        ("|S7", 7),
        ("|V3", 3),
        ("|V300", 300),
        ("|S1000", 1000),
        ("[('a', '<i4'), ('b', '<f8'), ('c', 'S3')]", 15),
        ("[('p', [('x', '<f4'), ('y', '<f4')]), ('tag', '<U2'), ('n', '<u2')]", 18),
    ];
    for (i, (dt, size)) in dtypes.into_iter().enumerate() {
        let big = size >= 300;
        let (s, c, b): (&[i64], &[i32], &[i32]) = if big { (&[9, 7], &[4, 4], &[2, 3]) } else { (S2, C2, B2) };
        v.push(("dtype", ours(&format!("dtype_{i:02}_{size}"), dt, size, s, c, b)));
    }
    let shapes: [ShapeCell; 9] = [
        ("0d", &[], &[], &[]),
        ("empty_first", &[0, 5], &[3, 5], &[2, 2]),
        ("empty_last", &[6, 0], &[4, 3], &[2, 2]),
        ("1d", &[101], &[30], &[7]),
        ("2d", S2, C2, B2),
        ("3d", &[9, 11, 13], &[4, 5, 6], &[2, 3, 4]),
        ("4d", &[5, 4, 3, 6], &[3, 3, 2, 4], &[2, 2, 1, 3]),
        ("8d", &[2, 3, 2, 3, 2, 3, 2, 3], &[2; 8], &[1, 2, 1, 2, 1, 2, 1, 2]),
        ("one_chunk", &[10], &[10], &[10]),
    ];
    for (name, s, c, b) in shapes {
        v.push(("shape", ours(&format!("shape_{name}"), "<f8", 8, s, c, b)));
        let mut o = ours(&format!("shape_{name}_sparse"), "<i2", 2, s, c, b);
        o.contiguous = false;
        v.push(("shape", o));
    }
    for make in ["zeros", "full"] {
        for (dt, size) in [("<f8", 8), ("<i4", 4), ("|V300", 300)] {
            let mut o = ours(&format!("special_{make}_{size}"), dt, size, S2, C2, B2);
            o.make = make;
            v.push(("special", o.clone_sparse()));
            v.push(("special", o));
        }
    }
    for (name, c) in [
        ("zstd", cp(Codec::Zstd, 5, &[(Filter::Shuffle, 0)])),
        ("lz4_bitshuffle", cp(Codec::Lz4, 5, &[(Filter::BitShuffle, 0)])),
    ] {
        let mut o = ours(&format!("storage_{name}"), "<i4", 4, S2, C2, B2);
        o.cparams = c;
        v.push(("storage", o.clone_sparse()));
        v.push(("storage", o));
    }
    let mut o = ours("storage_checksums", "<f8", 8, S2, C2, B2);
    o.checksums = true;
    v.push(("storage", o.clone_sparse()));
    v.push(("storage", o));
    for (name, split) in [
        ("always", SplitMode::Always),
        ("never", SplitMode::Never),
        ("auto", SplitMode::Auto),
        ("forward_compat", SplitMode::ForwardCompat),
    ] {
        let mut o = ours(&format!("cparams_split_{name}"), "<f8", 8, S2, C2, B2);
        o.cparams.splitmode = split;
        v.push(("cparams", o));
    }
    for history in ["inserted", "deleted", "resized", "set", "appended"] {
        let mut o = ours(&format!("history_{history}"), "<i4", 4, S2, C2, B2);
        o.history = history;
        o.checksums = history == "appended";
        v.push(("history", o.clone_sparse()));
        v.push(("history", o));
    }
    let mut o = ours("special_nans_f4", "<f4", 4, S2, C2, B2);
    o.make = "nans";
    v.push(("special", o.clone_sparse()));
    v.push(("special", o));
    // c-blosc2 2.15 has dictionaries for ZSTD only (LZ4 with use_dict fails to compress).
    for (id, name) in [(Codec::Zstd, "zstd"), (Codec::Zstd, "zstd_clevel9")] {
        let mut o = ours(&format!("cparams_dict_{name}"), "<i4", 4, &[200, 100], &[100, 100], &[10, 100]);
        let clevel = if name.ends_with('9') { 9 } else { 5 };
        o.cparams = CParams { use_dict: true, ..cp(id, clevel, &[(Filter::Shuffle, 0)]) };
        v.push(("cparams", o));
    }
    v
}

impl Ours {
    fn clone_sparse(&self) -> Ours {
        Ours {
            name: format!("{}_sparse", self.name),
            shape: self.shape.clone(),
            chunks: self.chunks.clone(),
            blocks: self.blocks.clone(),
            contiguous: false,
            ..*self
        }
    }
}

fn pattern(n: usize, itemsize: usize, seed: usize) -> Vec<u8> {
    let mut r = common::Rng(seed as u64 + 1);
    let mut b: Vec<u8> = (0..n * itemsize).map(|i| ((i / 3 * 7 + seed) % 251) as u8 ^ (r.next() as u8 & 3)).collect();
    // A run: the first quarter repeats one item (blocks of one value).
    for i in 0..n / 4 {
        b[i * itemsize..(i + 1) * itemsize].copy_from_slice(&vec![0x11; itemsize]);
    }
    b
}

/// Write every cell of [`our_cells`] into `dir` and describe it in cells.txt.
fn write_ours(dir: &Path) -> usize {
    let mut lines = String::new();
    let cells = our_cells();
    for (seed, (axis, o)) in cells.iter().enumerate() {
        let ctx = Context::new(Config { cparams: o.cparams, nthreads: 2, checksums: o.checksums, ..Config::default() })
            .unwrap();
        let path = dir.join(format!("{}.{}", o.name, if o.contiguous { "b2nd" } else { "dir" }));
        let url = path.to_string_lossy().into_owned();
        let storage = StorageParams {
            chunkshape: o.chunks.clone(),
            blockshape: o.blocks.clone(),
            contiguous: o.contiguous,
            urlpath: Some(url.clone()),
            metalayers: vec![Metalayer { name: "units".into(), content: b"\xa3m/s".to_vec() }],
        };
        let params = Params { itemsize: o.itemsize, shape: o.shape.clone(), dtype: Some(o.dtype.to_owned()) };
        let n = o.shape.iter().product::<i64>() as usize;
        let mut arr = match o.make {
            "zeros" => Array::zeros(&ctx, &params, &storage),
            "full" => Array::full(&ctx, &params, &storage, &pattern(1, o.itemsize, seed + 5)),
            "nans" => Array::nans(&ctx, &params, &storage),
            _ => Array::from_buffer(&ctx, &params, &storage, &pattern(n, o.itemsize, seed)),
        }
        .unwrap_or_else(|e| panic!("{}: {e}", o.name));
        let row = |rows: i64| pattern((rows * o.shape[1]) as usize, o.itemsize, seed + 7);
        match o.history {
            "inserted" => arr.insert(&row(3), 0, 5).unwrap(),
            "deleted" => arr.delete(1, 2, 9).unwrap(),
            "resized" => arr.resize(&[o.shape[0] + 20, o.shape[1] + 3], Some(&[4, 0])).unwrap(),
            "set" => arr.set_slice_buffer(&[11, 3], &[13, 10], &row(2)[..2 * 7 * o.itemsize], &[2, 7]).unwrap(),
            "appended" => {
                for k in 1..4 {
                    arr.append(&row(k), 0).unwrap();
                }
            }
            _ => {}
        }
        let shape = arr.shape().to_vec();
        let lossless = !o.cparams.filters.contains(&Filter::TruncPrec);
        if lossless && o.make == "data" && o.history.is_empty() {
            assert!(arr.to_vec().unwrap() == pattern(n, o.itemsize, seed), "{}: our own bytes", o.name);
        }
        arr.vlmeta_add("history", b"\xb5written by caterva-rs").unwrap();
        arr.vlmeta_add("blob", &[&b"\xc5\x02\x58"[..], &[7u8; 600]].concat()).unwrap();
        let data = arr.to_vec().unwrap();
        let metas =
            |v: &[(String, Vec<u8>)]| v.iter().map(|(k, b)| format!("{k}:{}", hex(b))).collect::<Vec<_>>().join(";");
        let meta = vec![("units".to_owned(), arr.meta_get("units").unwrap())];
        let vlmeta: Vec<(String, Vec<u8>)> =
            ["history", "blob"].iter().map(|k| ((*k).to_owned(), arr.vlmeta_get(k).unwrap())).collect();
        drop(arr);
        std::fs::write(dir.join(format!("{}.bin", o.name)), &data).unwrap();
        let list = |v: &[i64]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let ints = |v: &[i32]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        lines += &format!(
            "name={}\tpath={url}\tcontiguous={}\taxis={axis}\tdtype={}\titemsize={}\tshape={}\tchunks={}\tblocks={}\tmeta={}\tvlmeta={}\n",
            o.name,
            u8::from(o.contiguous),
            o.dtype,
            o.itemsize,
            list(&shape),
            ints(&o.chunks),
            ints(&o.blocks),
            metas(&meta),
            metas(&vlmeta)
        );
    }
    std::fs::write(dir.join("cells.txt"), lines).unwrap();
    cells.len()
}

#[test]
fn python_blosc2_reads_what_we_write() {
    let dir = scratch_dir("matrix-ours");
    let n = write_ours(&dir);
    let out = matrix_py("check", &dir);
    assert!(out.contains(&format!("{n} cells identical, 0 wrong")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// python-blosc2's empty arrays (frame format version 3, which c-blosc2
/// 2.15 rewrites when it updates the frame) take our updates, and
/// python-blosc2 still reads them.
#[test]
fn python_blosc2_reads_its_empty_arrays_after_our_updates() {
    const TOUCHED: &[u8] = b"\xa7caterva"; // msgpack "caterva"
    let dir = scratch_dir("matrix-empty");
    matrix_py_only("write", &dir, Some("empty_v3"));
    let ctx = Context::new(Config::default()).unwrap();
    let cells = read_cells(&dir);
    assert_eq!(cells.len(), 8);
    let mut lines = String::new();
    for c in &cells {
        let mut arr = Array::open(&ctx, c.get("path")).unwrap_or_else(|e| panic!("{}: {e}", c.name()));
        arr.vlmeta_add("touched", TOUCHED).unwrap();
        drop(arr);
        let arr = Array::open(&ctx, c.get("path")).unwrap();
        assert!(arr.verify(&mut |_, _| {}).unwrap().is_empty(), "{}", c.name());
        assert_eq!(arr.to_vec().unwrap(), Vec::<u8>::new(), "{}", c.name());
        let line: Vec<String> =
            c.0.iter()
                .map(|(k, v)| match k.as_str() {
                    "vlmeta" if v.is_empty() => format!("vlmeta=touched:{}", hex(TOUCHED)),
                    "vlmeta" => format!("vlmeta={v};touched:{}", hex(TOUCHED)),
                    _ => format!("{k}={v}"),
                })
                .collect();
        lines += &(line.join("\t") + "\n");
    }
    std::fs::write(dir.join("cells.txt"), lines).unwrap();
    let out = matrix_py("check", &dir);
    assert!(out.contains("8 cells identical, 0 wrong"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
