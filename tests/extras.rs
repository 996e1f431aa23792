//! What c-blosc2 3.x's b2nd added after caterva (issue 16): chunk lists for
//! schedulers, N-d buffer copies, expand_dims, nans, concatenate, and arrays
//! inside larger files. python-blosc2 (which embeds c-blosc2 3.x's b2nd) is
//! the reference: `tests/interop/extras.py` runs the same inputs through it,
//! and reads the files we write.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use caterva::{copy_buffer, Array, Config, Context, ErrorKind, Metalayer, Params, StorageParams};

mod common;
use common::{python, repo_root, run, scratch_dir, Rng};

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

fn checksummed() -> Context {
    Context::new(Config { checksums: true, ..Config::default() }).unwrap()
}

/// Where an array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Memory,
    File,
    Dir,
}

const KINDS: [Kind; 3] = [Kind::Memory, Kind::File, Kind::Dir];

fn storage(chunks: &[i32], blocks: &[i32], kind: Kind, dir: &Path, name: &str) -> StorageParams {
    StorageParams {
        chunkshape: chunks.to_vec(),
        blockshape: blocks.to_vec(),
        contiguous: kind != Kind::Dir,
        urlpath: (kind != Kind::Memory).then(|| dir.join(name).to_string_lossy().into_owned()),
        metalayers: Vec::new(),
    }
}

fn params(itemsize: usize, shape: &[i64], dtype: Option<&str>) -> Params {
    Params { itemsize, shape: shape.to_vec(), dtype: dtype.map(str::to_owned) }
}

fn iota(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8 + 1).collect()
}

/// `"1,2,3"`, or `"-"` for no entries (the helper's tuples).
fn tup<T: ToString>(v: &[T]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
    }
}

fn untup(s: &str) -> Vec<i64> {
    if s == "-" {
        Vec::new()
    } else {
        s.split(',').map(|x| x.parse().unwrap()).collect()
    }
}

/// Run `cases` (lines of `tests/interop/extras.py`) through python-blosc2;
/// name → key → value.
fn reference(dir: &Path, cases: &[String]) -> HashMap<String, HashMap<String, String>> {
    std::fs::write(dir.join("cases"), cases.join("\n") + "\n").unwrap();
    let script = repo_root().join("tests").join("interop").join("extras.py");
    run(Command::new(python("blosc2")).arg(script).arg(dir), "python-blosc2 (extras.py)");
    std::fs::read_to_string(dir.join("results"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next().unwrap().to_owned();
            let kv = it.map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).unwrap()).collect();
            (name, kv)
        })
        .collect()
}

fn kind_of(e: &caterva::Error) -> ErrorKind {
    e.kind()
}

// --- 5. Chunk lists for schedulers -------------------------------------------

/// Shapes, chunks and blocks for the chunk-list cases: ragged edges, several
/// dimensions, one chunk, an empty axis.
const GEOMS: &[(&[i64], &[i32], &[i32])] = &[
    (&[10], &[4], &[2]),
    (&[6, 10], &[4, 4], &[2, 2]),
    (&[7, 5, 9], &[3, 5, 4], &[2, 2, 3]),
    (&[5, 4, 3, 6], &[2, 3, 3, 4], &[1, 2, 2, 2]),
    (&[8, 8], &[8, 8], &[4, 4]),
    (&[3, 1, 17], &[2, 1, 5], &[1, 1, 5]),
];

#[test]
fn chunk_lists_match_b2nd_and_chunk_regions_tile_the_array() {
    let dir = scratch_dir("extras-nchunks");
    let ctx = ctx();
    let mut rng = Rng(0x5eed);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (g, &(shape, chunks, blocks)) in GEOMS.iter().enumerate() {
        let n: i64 = shape.iter().product();
        let a = Array::from_buffer(
            &ctx,
            &params(4, shape, Some("<i4")),
            &storage(chunks, blocks, Kind::Memory, &dir, ""),
            &iota(n as usize * 4),
        )
        .unwrap();
        // Every chunk's region lies inside the array, and the chunks tile it.
        let mut covered = 0;
        for k in 0..a.geometry().nchunks() {
            let (lo, hi) = a.chunk_region(k).unwrap();
            for i in 0..shape.len() {
                assert!(0 <= lo[i] && lo[i] < hi[i] && hi[i] <= shape[i], "chunk {k}: {lo:?}..{hi:?}");
                assert_eq!(lo[i] % i64::from(chunks[i]), 0);
            }
            assert_eq!(a.slice_nchunks(&lo, &hi).unwrap(), vec![k], "chunk {k}'s own region touches only it");
            covered += lo.iter().zip(&hi).map(|(l, h)| h - l).product::<i64>();
        }
        assert_eq!(covered, n);
        assert_eq!(a.chunk_region(a.geometry().nchunks()).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(a.chunk_region(-1).unwrap_err().kind(), ErrorKind::InvalidArgument);
        for r in 0..12 {
            let (mut start, mut stop) = (Vec::new(), Vec::new());
            for &s in shape {
                let x = rng.range(0, s - 1);
                let y = rng.range(x + 1, s);
                start.push(x);
                stop.push(if r == 0 { s } else { y });
            }
            if r == 0 {
                start.iter_mut().for_each(|x| *x = 0);
            }
            let list = a.slice_nchunks(&start, &stop).unwrap();
            // Exactly the chunks whose regions meet the region.
            for k in 0..a.geometry().nchunks() {
                let (lo, hi) = a.chunk_region(k).unwrap();
                let meets = (0..shape.len()).all(|i| lo[i] < stop[i] && start[i] < hi[i]);
                assert_eq!(list.contains(&k), meets, "chunk {k} and {start:?}..{stop:?}");
            }
            let name = format!("g{g}r{r}");
            cases.push(format!(
                "nchunks {name} <i4 {} {} {} {} {}",
                tup(shape),
                tup(chunks),
                tup(blocks),
                tup(&start),
                tup(&stop)
            ));
            ours.push((name, list));
        }
    }
    let theirs = reference(&dir, &cases);
    for (name, list) in ours {
        assert_eq!(untup(&theirs[&name]["chunks"]), list, "{name}: b2nd_get_slice_nchunks differs");
    }
    // An empty region touches no chunk (as python-blosc2 4 says too); a
    // 0-dim array has chunk 0; a region outside the array is refused.
    let a = Array::zeros(&ctx, &params(4, &[6, 10], None), &storage(&[4, 4], &[2, 2], Kind::Memory, &dir, "")).unwrap();
    assert!(a.slice_nchunks(&[2, 3], &[2, 9]).unwrap().is_empty());
    for (start, stop) in [([0, 0], [7, 10]), ([3, 0], [2, 10]), ([-1, 0], [1, 1])] {
        assert_eq!(a.slice_nchunks(&start, &stop).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(a.slice_nchunks(&[0], &[1]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let z = Array::zeros(&ctx, &params(8, &[], None), &storage(&[], &[], Kind::Memory, &dir, "")).unwrap();
    assert_eq!(z.slice_nchunks(&[], &[]).unwrap(), vec![0]);
    assert_eq!(z.chunk_region(0).unwrap(), (vec![], vec![]));
    let e = Array::zeros(&ctx, &params(4, &[0, 5], None), &storage(&[2, 5], &[1, 5], Kind::Memory, &dir, "")).unwrap();
    assert!(e.slice_nchunks(&[0, 0], &[0, 5]).unwrap().is_empty());
    assert!(e.chunk_region(0).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

// --- 6. copy_buffer ------------------------------------------------------------

#[test]
fn copy_buffer_moves_boxes_between_padded_buffers_as_a_naive_copy_does() {
    let mut rng = Rng(0xb0c5);
    for case in 0..300 {
        let ndim = rng.range(0, 4) as usize;
        let itemsize = [1usize, 2, 3, 8][rng.range(0, 3) as usize];
        let spad: Vec<i64> = (0..ndim).map(|_| rng.range(0, 5)).collect();
        let dpad: Vec<i64> = spad.iter().map(|&s| s + rng.range(0, 2)).collect();
        let sstart: Vec<i64> = spad.iter().map(|&s| rng.range(0, s)).collect();
        let sstop: Vec<i64> = sstart.iter().zip(&spad).map(|(&a, &s)| rng.range(a, s)).collect();
        let dstart: Vec<i64> = (0..ndim).map(|i| rng.range(0, dpad[i] - (sstop[i] - sstart[i]))).collect();
        let sn: i64 = spad.iter().product();
        let dn: i64 = dpad.iter().product();
        let src = rng.bytes(sn as usize * itemsize);
        let before = rng.bytes(dn as usize * itemsize);
        let mut dst = before.clone();
        copy_buffer(itemsize, &src, &spad, &sstart, &sstop, &mut dst, &dpad, &dstart).unwrap();
        // The naive copy: item by item.
        let mut want = before.clone();
        let shape: Vec<i64> = (0..ndim).map(|i| sstop[i] - sstart[i]).collect();
        caterva::for_each_index(&vec![0; ndim], &shape, |idx| {
            let (mut s, mut d) = (0i64, 0i64);
            for i in 0..ndim {
                s = s * spad[i] + sstart[i] + idx[i];
                d = d * dpad[i] + dstart[i] + idx[i];
            }
            let (s, d) = (s as usize * itemsize, d as usize * itemsize);
            want[d..d + itemsize].copy_from_slice(&src[s..s + itemsize]);
        });
        assert_eq!(dst, want, "case {case}: {spad:?} {sstart:?}..{sstop:?} -> {dpad:?} at {dstart:?}");
    }
}

// --- 2. expand_dims ------------------------------------------------------------

#[test]
fn expand_dims_inserts_an_axis_in_every_storage_and_matches_b2nd() {
    let dir = scratch_dir("extras-expand");
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    let geoms: &[(&[i64], &[i32], &[i32])] =
        &[(&[], &[], &[]), (&[10], &[4], &[3]), (&[7, 9], &[4, 5], &[2, 3]), (&[0, 4], &[3, 4], &[2, 2])];
    for (ci, c) in [ctx(), checksummed()].iter().enumerate() {
        for kind in KINDS {
            for (g, &(shape, chunks, blocks)) in geoms.iter().enumerate() {
                for axis in 0..=shape.len() as i64 {
                    let name = format!("c{ci}{kind:?}g{g}a{axis}");
                    let n: i64 = shape.iter().product();
                    let data = iota(n as usize * 8);
                    let mut st = storage(chunks, blocks, kind, &dir, &format!("{name}.b2nd"));
                    st.metalayers.push(Metalayer { name: "user".into(), content: vec![1, 2, 3] });
                    let mut a = Array::from_buffer(c, &params(8, shape, Some("<f8")), &st, &data).unwrap();
                    a.vlmeta_add("note", b"kept").unwrap();
                    a.expand_dims(axis).unwrap();
                    let mut want = shape.to_vec();
                    want.insert(axis as usize, 1);
                    assert_eq!(a.shape(), &want[..]);
                    assert_eq!(a.geometry().chunkshape()[axis as usize], 1);
                    assert_eq!(a.to_vec().unwrap(), data, "{name}");
                    assert_eq!(a.dtype().as_deref(), Some("<f8"));
                    assert_eq!(a.meta_get("user").unwrap(), vec![1, 2, 3]);
                    assert_eq!(a.vlmeta_get("note").unwrap(), b"kept");
                    assert_eq!(a.has_checksums(), ci == 1);
                    // The new geometry persists, and the array keeps working.
                    if let Some(url) = st.urlpath.as_deref() {
                        let mut r = Array::open(c, url).unwrap();
                        assert_eq!(r.shape(), &want[..]);
                        assert_eq!(r.to_vec().unwrap(), data);
                        if n > 0 {
                            let one = vec![0u8; 8];
                            let start = vec![0i64; want.len()];
                            let stop = vec![1i64; want.len()];
                            r.set_slice_buffer(&start, &stop, &one, &vec![1; want.len()]).unwrap();
                            assert_eq!(&r.to_vec().unwrap()[..8], &one[..]);
                        }
                        if kind == Kind::File && ci == 0 {
                            cases.push(format!("open {name}.ours {url} 0"));
                            ours.push((format!("{name}.ours"), want.clone(), r.to_vec().unwrap()));
                        }
                    }
                    if kind == Kind::Memory && ci == 0 {
                        std::fs::write(dir.join(format!("{name}.in.bin")), &data).unwrap();
                        cases.push(format!(
                            "expand {name} <f8 {} {} {} {axis}",
                            tup(shape),
                            tup(if n == 0 { &[3, 4][..] } else { chunks }),
                            tup(if n == 0 { &[2, 2][..] } else { blocks })
                        ));
                        ours.push((name, want, data));
                    }
                }
            }
        }
    }
    let theirs = reference(&dir, &cases);
    for (name, shape, data) in ours {
        let t = &theirs[&name];
        assert!(!t.contains_key("error"), "{name}: python-blosc2 failed: {t:?}");
        assert_eq!(untup(&t["shape"]), shape, "{name}: shape");
        assert_eq!(std::fs::read(dir.join(format!("{name}.out.bin"))).unwrap(), data, "{name}: values");
        if let Some(d) = t.get("dtype") {
            assert_eq!(d, "<f8", "{name}: dtype");
        }
    }
    // Refused, and the array is unchanged: an axis out of range, a ninth axis.
    let c = ctx();
    let mut a =
        Array::from_buffer(&c, &params(1, &[4], None), &storage(&[2], &[1], Kind::File, &dir, "bad.b2nd"), &iota(4))
            .unwrap();
    let before = std::fs::read(dir.join("bad.b2nd")).unwrap();
    for axis in [-1, 2, 100] {
        assert_eq!(a.expand_dims(axis).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(std::fs::read(dir.join("bad.b2nd")).unwrap(), before);
    let mut b =
        Array::zeros(&c, &params(1, &[1; 8], None), &storage(&[1; 8], &[1; 8], Kind::Memory, &dir, "")).unwrap();
    assert_eq!(b.expand_dims(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(b.ndim(), 8);
    // Up to 8: seven expansions of a 1-d array.
    for _ in 0..7 {
        a.expand_dims(1).unwrap();
    }
    assert_eq!(a.shape(), &[4, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(a.to_vec().unwrap(), iota(4));
    let _ = std::fs::remove_dir_all(&dir);
}

// --- 3. nans -------------------------------------------------------------------

fn is_nan(bytes: &[u8], dtype: &str) -> bool {
    let big = dtype.starts_with('>');
    match dtype.as_bytes()[2] {
        b'2' => {
            let v =
                if big { u16::from_be_bytes([bytes[0], bytes[1]]) } else { u16::from_le_bytes([bytes[0], bytes[1]]) };
            v & 0x7c00 == 0x7c00 && v & 0x03ff != 0
        }
        b'4' => {
            let b: [u8; 4] = bytes.try_into().unwrap();
            (if big { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) }).is_nan()
        }
        _ => {
            let b: [u8; 8] = bytes.try_into().unwrap();
            (if big { f64::from_be_bytes(b) } else { f64::from_le_bytes(b) }).is_nan()
        }
    }
}

#[test]
fn nans_are_nans_in_every_float_dtype_and_storage_and_cost_no_data() {
    let dir = scratch_dir("extras-nans");
    let c = ctx();
    let mut cases = Vec::new();
    let mut names = Vec::new();
    for dtype in ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8"] {
        let size = usize::from(dtype.as_bytes()[2] - b'0');
        for kind in KINDS {
            for (g, &(shape, chunks, blocks)) in
                [(&[7, 5][..], &[3, 2][..], &[2, 1][..]), (&[], &[], &[]), (&[0, 3], &[2, 3], &[1, 3])]
                    .iter()
                    .enumerate()
            {
                let name = format!("{}{kind:?}{g}", dtype.replace('<', "l").replace('>', "b"));
                let st = storage(chunks, blocks, kind, &dir, &format!("{name}.b2nd"));
                let a = Array::nans(&c, &params(size, shape, Some(dtype)), &st).unwrap();
                assert_eq!(a.dtype().as_deref(), Some(dtype));
                let v = a.to_vec().unwrap();
                assert_eq!(v.len(), a.nitems() as usize * size);
                assert!(v.chunks(size).all(|x| is_nan(x, dtype)), "{name}: {:?}", &v[..v.len().min(16)]);
                assert!(a.verify(&mut |_, _| {}).unwrap().is_empty());
                if let Some(url) = st.urlpath.as_deref() {
                    let r = Array::open(&c, url).unwrap();
                    assert!(r.to_vec().unwrap().chunks(size).all(|x| is_nan(x, dtype)));
                    if kind == Kind::File && g == 0 {
                        cases.push(format!("open {name} {url} 0"));
                        names.push((name.clone(), dtype, v.clone()));
                    }
                }
            }
        }
        cases.push(format!("nans ref{} {dtype} 7,5 3,2 2,1", dtype.replace('<', "l").replace('>', "b")));
    }
    // Little-endian f4/f8 are special chunks: a million items cost a header each.
    let st = storage(&[1000, 100], &[100, 100], Kind::File, &dir, "big.b2nd");
    let big = Array::nans(&c, &params(8, &[10_000, 1000], None), &st).unwrap();
    assert_eq!(big.dtype().as_deref(), Some("<f8"));
    let size = std::fs::metadata(dir.join("big.b2nd")).unwrap().len();
    assert!(size < 4096, "10^7 NaNs take {size} bytes");
    let mut one = [0u8; 8];
    big.get_slice_buffer(&[9999, 999], &[10_000, 1000], &mut one, &[1, 1]).unwrap();
    assert!(f64::from_le_bytes(one).is_nan());
    // With checksums: special and repeated-value chunks alike are checked.
    for dtype in ["<f8", ">f8", "<f2"] {
        let size = usize::from(dtype.as_bytes()[2] - b'0');
        let st = storage(&[4, 3], &[2, 2], Kind::File, &dir, "summed.b2nd");
        let a = Array::nans(&checksummed(), &params(size, &[9, 5], Some(dtype)), &st).unwrap();
        assert!(a.has_checksums());
        let r = Array::open(&checksummed(), st.urlpath.as_deref().unwrap()).unwrap();
        assert!(r.verify(&mut |_, _| {}).unwrap().is_empty(), "{dtype}");
        assert!(r.to_vec().unwrap().chunks(size).all(|x| is_nan(x, dtype)), "{dtype}");
    }
    // Refused: not a float, a size that does not match, no float of that size.
    for (itemsize, dtype) in [(4, Some("<i4")), (4, Some("<f8")), (3, None), (8, Some("f8")), (16, Some("<f16"))] {
        let e = Array::nans(&c, &params(itemsize, &[3], dtype), &storage(&[2], &[1], Kind::File, &dir, "no.b2nd"));
        assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument, "{dtype:?}");
        assert!(!dir.join("no.b2nd").exists());
    }
    let theirs = reference(&dir, &cases);
    for (name, dtype, v) in names {
        let t = &theirs[&name];
        assert_eq!(t.get("dtype").map(String::as_str), Some(dtype), "{name}: python-blosc2 reads {t:?}");
        assert_eq!(std::fs::read(dir.join(format!("{name}.out.bin"))).unwrap(), v, "{name}");
    }
    // b2nd's little-endian nans are NaNs too (its big-endian ones are not:
    // it stores the machine's NaN under a big-endian dtype; f2 it refuses).
    assert_eq!(theirs["reflf4"].get("allnan").map(String::as_str), Some("1"));
    assert_eq!(theirs["reflf8"].get("allnan").map(String::as_str), Some("1"));
    let _ = std::fs::remove_dir_all(&dir);
}

// --- 1. concatenate ------------------------------------------------------------

/// C-order concatenation of two buffers along `axis`.
fn concat_naive(a: &[u8], sa: &[i64], b: &[u8], sb: &[i64], axis: usize, item: usize) -> Vec<u8> {
    let outer: i64 = sa[..axis].iter().product();
    let ra = (sa[axis..].iter().product::<i64>() as usize) * item;
    let rb = (sb[axis..].iter().product::<i64>() as usize) * item;
    let mut out = Vec::new();
    for o in 0..outer as usize {
        out.extend_from_slice(&a[o * ra..(o + 1) * ra]);
        out.extend_from_slice(&b[o * rb..(o + 1) * rb]);
    }
    out
}

/// Shape a, shape b, axis, chunks, blocks.
type Combo = (&'static [i64], &'static [i64], usize, &'static [i32], &'static [i32]);

#[test]
fn concatenate_into_new_arrays_and_in_place_in_every_storage_matches_b2nd() {
    let dir = scratch_dir("extras-concat");
    let c = ctx();
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    // (shape a, shape b, axis, chunks, blocks): aligned and unaligned chunk
    // boundaries, empty parts.
    let combos: &[Combo] = &[
        (&[10], &[7], 0, &[4], &[2]),
        (&[8], &[8], 0, &[4], &[2]),
        (&[5, 6], &[3, 6], 0, &[2, 4], &[1, 2]),
        (&[5, 6], &[5, 1], 1, &[3, 4], &[2, 2]),
        (&[3, 4, 5], &[3, 2, 5], 1, &[2, 3, 2], &[1, 2, 2]),
        (&[0, 4], &[3, 4], 0, &[2, 4], &[1, 2]),
        (&[3, 4], &[0, 4], 0, &[2, 4], &[1, 2]),
    ];
    for (i, &(sa, sb, axis, chunks, blocks)) in combos.iter().enumerate() {
        let na: i64 = sa.iter().product();
        let nb: i64 = sb.iter().product();
        let (da, db) = (iota(na as usize * 4), iota(nb as usize * 4).iter().map(|x| x ^ 0x55).collect::<Vec<u8>>());
        let want = concat_naive(&da, sa, &db, sb, axis, 4);
        let mut shape = sa.to_vec();
        shape[axis] += sb[axis];
        for ka in KINDS {
            let a = Array::from_buffer(
                &c,
                &params(4, sa, Some("<i4")),
                &storage(chunks, blocks, ka, &dir, &format!("a{i}{ka:?}")),
                &da,
            )
            .unwrap();
            let b = Array::from_buffer(
                &c,
                &params(4, sb, Some("<i4")),
                &storage(&[3; 3][..sb.len()], &[1; 3][..sb.len()], Kind::Memory, &dir, ""),
                &db,
            )
            .unwrap();
            for kt in KINDS {
                // Other partitions for the result: chunk boundaries that do not align.
                let tchunks: Vec<i32> = chunks.iter().map(|&x| x + 1).collect();
                let st = storage(&tchunks, blocks, kt, &dir, &format!("c{i}{ka:?}{kt:?}.b2nd"));
                let r = a.concatenate(&c, &b, axis as i64, &st).unwrap();
                assert_eq!(r.shape(), &shape[..]);
                assert_eq!(r.to_vec().unwrap(), want, "case {i}, {ka:?} -> {kt:?}");
                assert_eq!(r.dtype().as_deref(), Some("<i4"));
                if kt == Kind::File && ka == Kind::Memory {
                    let url = st.urlpath.unwrap();
                    cases.push(format!("open c{i}ours {url} 0"));
                    ours.push((format!("c{i}ours"), shape.clone(), want.clone()));
                }
            }
            // In place: the second array appended to the first.
            let mut a = a;
            a.append_array(&b, axis as i64).unwrap();
            assert_eq!(a.shape(), &shape[..]);
            assert_eq!(a.to_vec().unwrap(), want, "case {i} in place, {ka:?}");
            if ka != Kind::Memory {
                let r = Array::open(&c, &dir.join(format!("a{i}{ka:?}")).to_string_lossy()).unwrap();
                assert_eq!(r.to_vec().unwrap(), want);
            }
        }
        std::fs::write(dir.join(format!("k{i}.a.bin")), &da).unwrap();
        std::fs::write(dir.join(format!("k{i}.b.bin")), &db).unwrap();
        cases.push(format!("concat k{i} <i4 {} {} {axis} {} {}", tup(sa), tup(sb), tup(chunks), tup(blocks)));
        ours.push((format!("k{i}"), shape, want));
    }
    let theirs = reference(&dir, &cases);
    for (name, shape, want) in ours {
        let t = &theirs[&name];
        assert!(!t.contains_key("error"), "{name}: python-blosc2 failed: {t:?}");
        assert_eq!(untup(&t["shape"]), shape, "{name}");
        assert_eq!(t["dtype"], "<i4", "{name}");
        assert_eq!(std::fs::read(dir.join(format!("{name}.out.bin"))).unwrap(), want, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concatenate_refuses_what_does_not_fit_and_changes_nothing() {
    let dir = scratch_dir("extras-concat-bad");
    let c = ctx();
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let mut a = Array::from_buffer(
        &c,
        &params(4, &[4, 6], Some("<i4")),
        &storage(&[3, 4], &[2, 2], Kind::File, &dir, "a.b2nd"),
        &iota(96),
    )
    .unwrap();
    let before = std::fs::read(&url).unwrap();
    let mem = |shape: &[i64], item: usize, dtype: Option<&str>| {
        let n: i64 = shape.iter().product();
        let chunks: Vec<i32> = shape.iter().map(|&s| s.max(1) as i32).collect();
        Array::from_buffer(
            &c,
            &params(item, shape, dtype),
            &storage(&chunks, &chunks, Kind::Memory, &dir, ""),
            &iota(n as usize * item),
        )
        .unwrap()
    };
    let bad: Vec<(Array, i64)> = vec![
        (mem(&[4, 5], 4, Some("<i4")), 0),  // off-axis shapes differ
        (mem(&[4], 4, Some("<i4")), 0),     // ndim differs
        (mem(&[2, 6], 2, Some("<i2")), 0),  // item size differs
        (mem(&[2, 6], 4, Some("<f4")), 0),  // dtype differs
        (mem(&[2, 6], 4, Some("<i4")), 2),  // no such axis
        (mem(&[2, 6], 4, Some("<i4")), -1), // no such axis
        (mem(&[], 4, Some("<i4")), 0),      // 0-dim
    ];
    for (b, axis) in &bad {
        let st = storage(&[2, 2], &[1, 1], Kind::File, &dir, "out.b2nd");
        assert_eq!(kind_of(&a.concatenate(&c, b, *axis, &st).unwrap_err()), ErrorKind::InvalidArgument);
        assert!(!dir.join("out.b2nd").exists());
        assert_eq!(kind_of(&a.append_array(b, *axis).unwrap_err()), ErrorKind::InvalidArgument);
        assert_eq!(std::fs::read(&url).unwrap(), before);
    }
    // Writing the result over either source is refused.
    let b = mem(&[2, 6], 4, Some("<i4"));
    let own = StorageParams {
        urlpath: Some(format!("{}/./a.b2nd", dir.display())),
        ..storage(&[2, 2], &[1, 1], Kind::File, &dir, "")
    };
    assert_eq!(a.concatenate(&c, &b, 0, &own).unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(b.concatenate(&c, &a, 0, &own).unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(std::fs::read(&url).unwrap(), before);
    // A 0-dim array cannot be concatenated to either.
    let z = mem(&[], 4, Some("<i4"));
    assert_eq!(
        z.concatenate(&c, &z, 0, &storage(&[], &[], Kind::Memory, &dir, "")).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // An array concatenated with itself.
    let twice = a.concatenate(&c, &a, 1, &storage(&[2, 5], &[1, 2], Kind::Memory, &dir, "")).unwrap();
    assert_eq!(twice.to_vec().unwrap(), concat_naive(&iota(96), &[4, 6], &iota(96), &[4, 6], 1, 4));
    let copy = a.copy(&c, &storage(&[3, 4], &[2, 2], Kind::Memory, &dir, "")).unwrap();
    a.append_array(&copy, 1).unwrap();
    assert_eq!(a.to_vec().unwrap(), twice.to_vec().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

// --- 4. Arrays inside larger files ---------------------------------------------

#[test]
fn arrays_saved_into_one_file_open_at_their_offsets_here_and_in_python_blosc2() {
    let dir = scratch_dir("extras-offset");
    let pack = dir.join("pack.bin");
    let pack_s = pack.to_string_lossy().into_owned();
    // Something that is not a frame first: arrays may live inside other formats.
    std::fs::write(&pack, b"header of some other format\n").unwrap();
    let plain = ctx();
    let sums = checksummed();
    let mut cases = Vec::new();
    let mut saved = Vec::new();
    let mut expected_offset = std::fs::metadata(&pack).unwrap().len() as i64;
    for (i, kind) in KINDS.iter().enumerate() {
        for (j, c) in [&plain, &sums].iter().enumerate() {
            let shape = [9i64 + i as i64, 7];
            let data = iota(shape.iter().product::<i64>() as usize * 8);
            let a = Array::from_buffer(
                c,
                &params(8, &shape, Some("<f8")),
                &storage(&[4, 3], &[2, 2], *kind, &dir, &format!("src{i}{j}")),
                &data,
            )
            .unwrap();
            let off = a.save_append(&pack_s).unwrap();
            assert_eq!(off, expected_offset, "frames follow one another");
            expected_offset = std::fs::metadata(&pack).unwrap().len() as i64;
            saved.push((off, shape, data, j == 1));
        }
    }
    let z = Array::nans(&plain, &params(4, &[3, 3], Some("<f4")), &storage(&[2, 2], &[1, 1], Kind::Memory, &dir, ""))
        .unwrap();
    let zoff = z.save_append(&pack_s).unwrap();
    for (k, (off, shape, data, checked)) in saved.iter().enumerate() {
        // Read through the direct chunk reader (no checksums) and c-blosc2
        // (checksums), whole and in slices.
        let r = Array::open_offset(&plain, &pack_s, *off).unwrap();
        assert_eq!(r.frame_offset(), Some(*off));
        assert_eq!(r.shape(), shape);
        assert_eq!(r.has_checksums(), *checked);
        assert_eq!(r.to_vec().unwrap(), *data);
        let mut row = vec![0u8; 7 * 8];
        r.get_slice_buffer(&[5, 0], &[6, 7], &mut row, &[1, 7]).unwrap();
        assert_eq!(row, data[5 * 56..6 * 56]);
        assert!(r.verify(&mut |_, _| {}).unwrap().is_empty());
        // Copies out of the file are ordinary arrays.
        let out = dir.join(format!("out{k}.b2nd")).to_string_lossy().into_owned();
        r.save(&out).unwrap();
        assert_eq!(Array::open(&plain, &out).unwrap().to_vec().unwrap(), *data);
        cases.push(format!("open p{k} {pack_s} {off}"));
    }
    cases.push(format!("open pz {pack_s} {zoff}"));
    let theirs = reference(&dir, &cases);
    for (k, (_, shape, data, _)) in saved.iter().enumerate() {
        let t = &theirs[&format!("p{k}")];
        assert!(!t.contains_key("error"), "python-blosc2 cannot open frame {k}: {t:?}");
        assert_eq!(t["dtype"], "<f8");
        assert_eq!(untup(&t["shape"]), shape.to_vec());
        assert_eq!(std::fs::read(dir.join(format!("p{k}.out.bin"))).unwrap(), *data, "frame {k}");
    }
    assert_eq!(theirs["pz"]["dtype"], "<f4");
    assert!(std::fs::read(dir.join("pz.out.bin"))
        .unwrap()
        .chunks(4)
        .all(|x| f32::from_le_bytes(x.try_into().unwrap()).is_nan()));

    // Read-only: every write is refused, and the file does not change.
    let before = std::fs::read(&pack).unwrap();
    let mut r = Array::open_offset(&plain, &pack_s, saved[0].0).unwrap();
    let e = r.set_slice_buffer(&[0, 0], &[1, 1], &[0u8; 8], &[1, 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert_eq!(r.append(&[0u8; 56], 0).unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(r.vlmeta_add("x", b"y").unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(r.expand_dims(0).unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(r.save(&pack_s).unwrap_err().kind(), ErrorKind::InvalidStorage);
    assert_eq!(std::fs::read(&pack).unwrap(), before);
    assert_eq!(r.to_vec().unwrap(), saved[0].2);
    // Brought up to date, it is still the frame at its offset (it once
    // reloaded the whole file as one frame, and failed).
    assert!(!r.refresh().unwrap(), "nothing changed");
    assert_eq!((r.frame_offset(), r.to_vec().unwrap()), (Some(saved[0].0), saved[0].2.clone()));

    // Offsets where no frame starts.
    let end = before.len() as i64;
    for off in [0, saved[0].0 + 1, saved[1].0 - 10, end - 10, end, end + 100] {
        let e = Array::open_offset(&plain, &pack_s, off).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidFormat, "offset {off}: {e}");
    }
    assert_eq!(Array::open_offset(&plain, &pack_s, -1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let missing = dir.join("missing").to_string_lossy().into_owned();
    assert_eq!(Array::open_offset(&plain, &missing, 0).unwrap_err().kind(), ErrorKind::NotFound);
    // A file cut inside its last frame: that frame is refused, the others open.
    let cut = dir.join("cut.bin");
    std::fs::write(&cut, &before[..before.len() - 5]).unwrap();
    let cut_s = cut.to_string_lossy().into_owned();
    assert_eq!(Array::open_offset(&plain, &cut_s, zoff).unwrap_err().kind(), ErrorKind::InvalidFormat);
    assert_eq!(Array::open_offset(&plain, &cut_s, saved[2].0).unwrap().to_vec().unwrap(), saved[2].2);
    // Appending to a directory is refused.
    let src = Array::open_offset(&plain, &pack_s, saved[0].0).unwrap();
    assert_eq!(src.save_append(&dir.to_string_lossy()).unwrap_err().kind(), ErrorKind::InvalidStorage);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn appending_to_an_array_file_makes_it_one_frame_of_many() {
    let dir = scratch_dir("extras-offset-array");
    let c = ctx();
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let data = iota(20 * 8);
    let mut a =
        Array::from_buffer(&c, &params(8, &[20], None), &storage(&[6], &[3], Kind::File, &dir, "a.b2nd"), &data)
            .unwrap();
    let b = Array::from_buffer(&c, &params(8, &[5], None), &storage(&[5], &[5], Kind::Memory, &dir, ""), &iota(40))
        .unwrap();
    let off = b.save_append(&url).unwrap();
    let len = std::fs::metadata(&url).unwrap().len();
    // The first array's handle no longer writes (that would overwrite the
    // frame after it): out of date, it is refreshed first, and the file is
    // no longer one array's frame (refused as a plain open refuses it).
    let e = a.set_slice_buffer(&[0], &[1], &[0u8; 8], &[1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidFormat, "{e}");
    assert_eq!(Array::open(&c, &url).unwrap_err().kind(), ErrorKind::InvalidFormat);
    assert_eq!(std::fs::metadata(&url).unwrap().len(), len);
    // A plain open refuses the file (the frame is not all of it); at offset 0 it opens.
    assert!(Array::open(&c, &url).is_err());
    assert_eq!(Array::open_offset(&c, &url, 0).unwrap().to_vec().unwrap(), data);
    assert_eq!(Array::open_offset(&c, &url, off).unwrap().to_vec().unwrap(), iota(40));
    // Appending into a new file creates it; the first frame is at 0.
    let fresh = dir.join("fresh.bin").to_string_lossy().into_owned();
    assert_eq!(b.save_append(&fresh).unwrap(), 0);
    assert_eq!(Array::open(&c, &fresh).unwrap().to_vec().unwrap(), iota(40));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn arrays_saved_at_offsets_open_in_c_blosc2_b2nd_open_offset() {
    let dir = scratch_dir("extras-offset-b2nd");
    let c = ctx();
    let pack = dir.join("pack.bin").to_string_lossy().into_owned();
    std::fs::write(&pack, b"prefix").unwrap();
    let mut saved = Vec::new();
    for (i, kind) in KINDS.iter().enumerate() {
        let shape = [5 + i as i64, 6];
        let data = iota(shape.iter().product::<i64>() as usize * 4);
        let a = Array::from_buffer(
            &c,
            &params(4, &shape, Some("<i4")),
            &storage(&[2, 4], &[1, 2], *kind, &dir, &format!("s{i}")),
            &data,
        )
        .unwrap();
        saved.push((a.save_append(&pack).unwrap(), shape, data));
    }
    let exe = dir.join("b2nd_read");
    let lib = common::profile_dir();
    let mut cc = common::compiler(false);
    cc.arg("-std=c99")
        .args(common::STRICT)
        .arg("-I")
        .arg(common::blosc2_include())
        .arg(repo_root().join("tests").join("interop").join("b2nd_read.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lblosc2");
    run(&mut cc, "compiling the b2nd reader");
    for (k, (off, shape, data)) in saved.iter().enumerate() {
        let out_bin = dir.join(format!("{k}.bin"));
        let out =
            run(Command::new(&exe).arg(&pack).arg(&out_bin).arg(off.to_string()), &format!("b2nd reading frame {k}"));
        assert_eq!(out.trim(), format!("ndim 2 shape {} {} dtype <i4 itemsize 4", shape[0], shape[1]));
        assert_eq!(std::fs::read(&out_bin).unwrap(), *data, "frame {k}: b2nd read other bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_append_leaves_the_file_as_it_was() {
    use caterva::testing::faults::{self, Fault};
    let dir = scratch_dir("extras-offset-faults");
    let c = ctx();
    let a = Array::from_buffer(&c, &params(8, &[40], None), &storage(&[16], &[4], Kind::Memory, &dir, ""), &iota(320))
        .unwrap();
    let pack = dir.join("pack.bin");
    let pack_s = pack.to_string_lossy().into_owned();
    for existing in [true, false] {
        // A dry run counts the operations.
        let reset = || {
            let _ = std::fs::remove_file(&pack);
            if existing {
                std::fs::write(&pack, b"earlier contents").unwrap();
            }
        };
        reset();
        let before = std::fs::read(&pack).ok();
        let counted = faults::arm(&dir, u64::MAX, Fault::Fail);
        let off = a.save_append(&pack_s).unwrap();
        let ops = counted.seen();
        drop(counted);
        assert!(!ops.is_empty(), "the append made no operation through the I/O layer");
        assert_eq!(Array::open_offset(&c, &pack_s, off).unwrap().to_vec().unwrap(), iota(320));
        for at in 0..ops.len() as u64 {
            for fault in [Fault::Fail, Fault::Die, Fault::Tear] {
                reset();
                let armed = faults::arm(&dir, at, fault);
                let r = a.save_append(&pack_s);
                assert!(armed.fired(), "{fault:?} at {at} did not fire");
                drop(armed);
                let e = r.expect_err("a failed operation fails the append");
                assert_eq!(e.kind(), ErrorKind::Io, "{fault:?} at {at} ({:?}): {e}", ops[at as usize]);
                let now = std::fs::read(&pack).ok();
                if fault == Fault::Fail {
                    // Undone: the file as it was, or none.
                    assert_eq!(now, before, "{fault:?} at {at} ({:?})", ops[at as usize]);
                } else if let (Some(b), Some(n)) = (&before, &now) {
                    // A process that died mid-append: what was there is intact.
                    assert_eq!(&n[..b.len()], &b[..], "{fault:?} at {at}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
