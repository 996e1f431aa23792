//! Untrusted frames must never crash us: a corpus of corrupted variants of
//! real frames (contiguous files, sparse-frame directories and frame
//! buffers), each opened and, when it opens, read in full; targeted
//! corruptions that crash c-blosc2 2.15 unless `frame_check` stops them; and
//! the fuzzers' regression files, replayed through the fuzz targets' code.
//!
//! A crash kills the test process. Before each case the corpus test writes
//! what it is about to run to `target/tmp/corrupt-<pid>/current-case.txt`
//! (the corrupted input lies beside it); rerun just that case with
//! `CATERVA_CORRUPT_CASE=<n>`. `CATERVA_CORRUPT_SEED` and
//! `CATERVA_CORRUPT_CASES` (cases per base frame and form) explore further;
//! `CATERVA_WRITE_FUZZ_SEEDS=1` rewrites the fuzzers' seed corpora in
//! `fuzz/seeds/` from the base frames.

mod common;
#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use blosc2_sys as b;
use caterva::{Array, CParams, Codec, Config, Context, Error, Filter, Metalayer, Params, StorageParams};

/// splitmix64: a small, seedable, portable PRNG.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------------------
// Base frames: real arrays written by this library.

/// How to build one base array in a given storage.
struct Base {
    name: &'static str,
    config: Config,
    build: fn(&Context, &StorageParams) -> caterva::Result<Array>,
}

/// Compression with `codec` at `clevel` and the pipeline `filters`, right-aligned in the six slots.
fn cparams(codec: Codec, clevel: u8, filters: &[Filter]) -> CParams {
    let mut cp = CParams { codec, clevel, filters: [Filter::NoFilter; 6], ..CParams::default() };
    cp.filters[6 - filters.len()..].copy_from_slice(filters);
    cp
}

fn config(cp: CParams) -> Config {
    Config { cparams: cp, nthreads: 1, ..Config::default() }
}

/// As [`config`], keeping per-chunk checksums (their table is corrupted too).
fn summed(cp: CParams) -> Config {
    Config { checksums: true, ..config(cp) }
}

const SHUFFLE: &[Filter] = &[Filter::Shuffle];

fn bytes_of(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i / 3) as u8 ^ seed).collect()
}

fn storage(chunks: &[i32], blocks: &[i32], st: &StorageParams, metas: bool) -> StorageParams {
    let metalayers = if metas {
        vec![Metalayer { name: "user".into(), content: b"user metalayer content".to_vec() }]
    } else {
        vec![]
    };
    StorageParams { chunkshape: chunks.to_vec(), blockshape: blocks.to_vec(), metalayers, ..st.clone() }
}

fn with_vlmeta(mut a: Array) -> caterva::Result<Array> {
    a.vlmeta_add("info", b"a variable-length metalayer, long enough to compress well well well")?;
    a.vlmeta_add("tiny", b"x")?;
    Ok(a)
}

fn ragged_zstd(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 8, shape: vec![20, 10], dtype: Some("<f8".into()) };
    let a = Array::from_buffer(ctx, &p, &storage(&[7, 5], &[3, 5], st, true), &bytes_of(20 * 10 * 8, 1))?;
    with_vlmeta(a)
}

fn zeros_lz4(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 1, shape: vec![33], dtype: None };
    let mut a = Array::zeros(ctx, &p, &storage(&[10], &[4], st, false))?;
    a.set_slice_buffer(&[12], &[18], &bytes_of(6, 7), &[6])?;
    Ok(a)
}

fn full_blosclz(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 4, shape: vec![9, 7], dtype: None };
    let mut a = Array::full(ctx, &p, &storage(&[4, 4], &[2, 4], st, true), &[1, 2, 3, 4])?;
    a.set_slice_buffer(&[5, 5], &[7, 7], &bytes_of(4 * 4, 3), &[2, 2])?;
    with_vlmeta(a)
}

fn memcpyed_3d(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 2, shape: vec![5, 6, 3], dtype: None };
    Array::from_buffer(ctx, &p, &storage(&[3, 4, 3], &[2, 2, 3], st, false), &bytes_of(5 * 6 * 3 * 2, 9))
}

fn bitshuffle_zlib(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 3, shape: vec![50], dtype: None };
    Array::from_buffer(ctx, &p, &storage(&[20], &[5], st, true), &bytes_of(150, 5))
}

fn empty(ctx: &Context, st: &StorageParams) -> caterva::Result<Array> {
    let p = Params { itemsize: 2, shape: vec![0, 4], dtype: None };
    with_vlmeta(Array::zeros(ctx, &p, &storage(&[2, 2], &[1, 2], st, true))?)
}

fn bases() -> Vec<Base> {
    let zstd = config(CParams::default());
    let delta = &[Filter::Delta, Filter::Shuffle];
    vec![
        Base { name: "ragged-zstd", config: zstd, build: ragged_zstd },
        Base { name: "zeros-lz4", config: config(cparams(Codec::Lz4, 9, SHUFFLE)), build: zeros_lz4 },
        Base { name: "full-blosclz", config: summed(cparams(Codec::BloscLz, 5, delta)), build: full_blosclz },
        Base { name: "memcpyed-3d", config: summed(cparams(Codec::Zstd, 0, SHUFFLE)), build: memcpyed_3d },
        Base {
            name: "bitshuffle-zlib",
            config: config(cparams(Codec::Zlib, 6, &[Filter::BitShuffle])),
            build: bitshuffle_zlib,
        },
        Base { name: "empty", config: zstd, build: empty },
    ]
}

/// The three forms an array is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    Cframe,
    File,
    Dir,
}

/// One base array in all three forms: a frame buffer, a frame file, a
/// sparse-frame directory (both under `dir`).
struct Written {
    cframe: Vec<u8>,
    file: PathBuf,
    dir: PathBuf,
}

fn write_base(base: &Base, dir: &Path) -> Written {
    let ctx = Context::new(base.config).unwrap();
    let url = |n: &str| Some(dir.join(format!("{}.{n}", base.name)).to_string_lossy().into_owned());
    let mem = StorageParams { contiguous: true, ..Default::default() };
    let cframe = (base.build)(&ctx, &mem).unwrap().to_cframe().unwrap();
    let file = StorageParams { contiguous: true, urlpath: url("b2frame"), ..Default::default() };
    drop((base.build)(&ctx, &file).unwrap());
    let sparse = StorageParams { contiguous: false, urlpath: url("b2nd"), ..Default::default() };
    drop((base.build)(&ctx, &sparse).unwrap());
    let path = |s: &StorageParams| PathBuf::from(s.urlpath.clone().unwrap());
    Written { cframe, file: path(&file), dir: path(&sparse) }
}

// ---------------------------------------------------------------------------
// Corruptions.

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Where the interesting bytes of a frame are: its header, and the tail
/// (the offsets index and the trailer).
fn regions(frame: &[u8]) -> (usize, usize) {
    let header = (be_u32(frame, 11) as usize).min(frame.len());
    let trailer = be_u32(frame, frame.len() - 22) as usize;
    let tail = frame.len().saturating_sub(trailer + 64).max(header.min(frame.len() - 1));
    (header, tail)
}

/// A position biased towards the header and the tail.
fn biased_pos(rng: &mut Rng, frame: &[u8]) -> usize {
    let (header, tail) = regions(frame);
    match rng.below(10) {
        0..=3 => rng.below(header.max(1)),
        4..=6 => tail + rng.below(frame.len() - tail),
        _ => rng.below(frame.len()),
    }
}

/// Corrupt a frame (or index) in place; returns what was done.
fn corrupt_frame(rng: &mut Rng, frame: &mut Vec<u8>) -> String {
    match rng.below(6) {
        0 | 1 => {
            let n = 1 + rng.below(8);
            let bits: Vec<String> = (0..n)
                .map(|_| {
                    let (at, bit) = (biased_pos(rng, frame), rng.below(8));
                    frame[at] ^= 1 << bit;
                    format!("{at}.{bit}")
                })
                .collect();
            format!("flip bits {}", bits.join(","))
        }
        2 => {
            let at = rng.below(frame.len());
            frame.truncate(at);
            format!("truncate to {at}")
        }
        3 => {
            let (at, len) = (biased_pos(rng, frame), 1 + rng.below(16));
            let fill = if rng.below(2) == 0 { 0 } else { 0xff };
            let end = (at + len).min(frame.len());
            frame[at..end].fill(fill);
            format!("fill {at}..{end} with {fill:#04x}")
        }
        4 => {
            // An interesting 32-bit value over what may be a length or an offset.
            const VALUES: [u32; 8] = [0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0xffff, 32, 0x7fff_fff0];
            let at = biased_pos(rng, frame).min(frame.len().saturating_sub(4));
            let v = VALUES[rng.below(VALUES.len())];
            let end = (at + 4).min(frame.len());
            frame[at..end].copy_from_slice(&v.to_be_bytes()[..end - at]);
            format!("write {v:#x} at {at}")
        }
        _ => {
            let (at, len) = (rng.below(frame.len()), 1 + rng.below(64));
            let end = (at + len).min(frame.len());
            frame.drain(at..end);
            format!("cut {at}..{end}")
        }
    }
}

/// Corrupt a sparse-frame directory: its index or one of its chunk files.
fn corrupt_dir(rng: &mut Rng, dir: &Path) -> String {
    let index = dir.join("chunks.b2frame");
    let mut chunks: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p != &index).collect();
    chunks.sort();
    if chunks.is_empty() || rng.below(2) == 0 {
        let mut bytes = std::fs::read(&index).unwrap();
        let what = corrupt_frame(rng, &mut bytes);
        std::fs::write(&index, bytes).unwrap();
        return format!("index: {what}");
    }
    let victim = chunks[rng.below(chunks.len())].clone();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let mut bytes = std::fs::read(&victim).unwrap();
    let what = match rng.below(5) {
        0 => {
            std::fs::remove_file(&victim).unwrap();
            return format!("{name}: deleted");
        }
        1 => {
            let at = rng.below(bytes.len());
            bytes.truncate(at);
            format!("truncate to {at}")
        }
        2 => {
            bytes.extend_from_slice(&[0xab; 7]);
            "7 bytes appended".into()
        }
        3 => {
            let other = &chunks[rng.below(chunks.len())];
            bytes = std::fs::read(other).unwrap();
            format!("replaced by {}", other.file_name().unwrap().to_string_lossy())
        }
        _ => {
            // Mostly the 32-byte chunk header.
            let n = 1 + rng.below(8);
            for _ in 0..n {
                let at = if rng.below(4) == 0 { rng.below(bytes.len()) } else { rng.below(32.min(bytes.len())) };
                bytes[at] ^= 1 << rng.below(8);
            }
            format!("flip {n} bits")
        }
    };
    std::fs::write(&victim, bytes).unwrap();
    format!("{name}: {what}")
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

// ---------------------------------------------------------------------------
// Running cases.

fn kind(e: &Error) -> &'static str {
    match e {
        Error::InvalidFormat(_) => "InvalidFormat",
        Error::Blosc { .. } => "BloscFailed",
        Error::InvalidStorage { .. } => "InvalidStorage",
        Error::Io { .. } => "Io",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::InvalidIndex(_) => "InvalidIndex",
        Error::NullPointer(_) => "NullPointer",
        Error::Corrupt { .. } => "Corrupt",
        _ => "other",
    }
}

/// A frame buffer through both `from_cframe` paths: copied (the Rust API)
/// and borrowed (`caterva_from_cframe(.., copy = false)`).
fn open_cframe(ctx: &Context, bytes: &[u8]) -> (String, String) {
    let copied = harness::outcome(ctx, Array::from_cframe(ctx, bytes), |e| kind(e).to_owned());
    // SAFETY: `bytes` outlives the super-chunk and the array, dropped inside `outcome`.
    let borrowed = unsafe { caterva::testing::from_cframe_borrowed(ctx, bytes) };
    (copied, harness::outcome(ctx, borrowed, |e| kind(e).to_owned()))
}

struct Corpus {
    dir: PathBuf,
    counts: BTreeMap<(Form, String), usize>,
    only: Option<u64>,
    seed: u64,
}

impl Corpus {
    /// Record what case `n` is before running it, so that a crash leaves it behind.
    fn announce(&self, n: u64, what: &str, input: Option<&[u8]>) {
        let mut f = std::fs::File::create(self.dir.join("current-case.txt")).unwrap();
        writeln!(f, "seed {} case {n}: {what}\nrerun: CATERVA_CORRUPT_SEED={} CATERVA_CORRUPT_CASE={n} cargo test --test corrupt corpus", self.seed, self.seed).unwrap();
        if let Some(bytes) = input {
            std::fs::write(self.dir.join("current-case.cframe"), bytes).unwrap();
        }
    }

    fn count(&mut self, form: Form, what: String) {
        *self.counts.entry((form, what)).or_default() += 1;
    }

    /// Run case `n` of `form` on `base`, unless another case was asked for.
    fn case(&mut self, n: u64, base: &str, form: Form, w: &Written) {
        if self.only.is_some_and(|o| o != n) {
            return;
        }
        let mut rng = Rng(self.seed ^ n.wrapping_mul(0x2545_f491_4f6c_dd1d));
        // A fresh context per case, so that each one reproduces alone.
        let ctx = Context::new(Config::default()).unwrap();
        match form {
            Form::Cframe => {
                let mut bytes = w.cframe.clone();
                let what = corrupt_frame(&mut rng, &mut bytes);
                self.announce(n, &format!("{base} cframe: {what}"), Some(&bytes));
                let (copied, borrowed) = open_cframe(&ctx, &bytes);
                self.count(form, copied);
                self.count(form, format!("{borrowed} [borrowed]"));
            }
            Form::File => {
                let mut bytes = std::fs::read(&w.file).unwrap();
                let what = corrupt_frame(&mut rng, &mut bytes);
                let path = self.dir.join("case.b2frame");
                std::fs::write(&path, &bytes).unwrap();
                self.announce(n, &format!("{base} file {}: {what}", path.display()), None);
                let o = harness::outcome(&ctx, Array::open(&ctx, path.to_str().unwrap()), |e| kind(e).to_owned());
                self.count(form, o);
            }
            Form::Dir => {
                let path = self.dir.join("case.b2nd");
                copy_dir(&w.dir, &path);
                let what = corrupt_dir(&mut rng, &path);
                self.announce(n, &format!("{base} dir {}: {what}", path.display()), None);
                let o = harness::outcome(&ctx, Array::open(&ctx, path.to_str().unwrap()), |e| kind(e).to_owned());
                self.count(form, o);
            }
        }
    }
}

/// The base frames, intact, open and read back in full.
fn check_bases_read(ctx: &Context, written: &[(&'static str, Written)]) {
    for (name, w) in written {
        let (copied, borrowed) = open_cframe(ctx, &w.cframe);
        assert_eq!((copied.as_str(), borrowed.as_str()), ("opened, every read ok", "opened, every read ok"), "{name}");
        for p in [&w.file, &w.dir] {
            assert_eq!(
                harness::outcome(ctx, Array::open(ctx, p.to_str().unwrap()), |e| kind(e).to_owned()),
                "opened, every read ok",
                "{name} {p:?}"
            );
        }
    }
}

#[test]
fn corpus_of_corrupted_frames_never_crashes() {
    let dir = common::scratch_dir("corrupt");
    let written: Vec<_> = bases().iter().map(|base| (base.name, write_base(base, &dir))).collect();
    let ctx = Context::new(Config::default()).unwrap();
    check_bases_read(&ctx, &written);
    if std::env::var_os("CATERVA_WRITE_FUZZ_SEEDS").is_some() {
        write_fuzz_seeds(&written);
    }
    let seed = env_or("CATERVA_CORRUPT_SEED", 0x00c0_ffee);
    let per = env_or("CATERVA_CORRUPT_CASES", 150);
    let only = std::env::var("CATERVA_CORRUPT_CASE").ok().and_then(|v| v.parse().ok());
    let _ = std::io::stderr().write_all(
        format!("corrupt: each case is written to {} before it runs\n", dir.join("current-case.txt").display())
            .as_bytes(),
    );
    let mut corpus = Corpus { dir: dir.clone(), counts: BTreeMap::new(), only, seed };
    let mut n = 0u64;
    for (name, w) in &written {
        for form in [Form::Cframe, Form::File, Form::Dir] {
            for _ in 0..per {
                corpus.case(n, name, form, w);
                n += 1;
            }
        }
    }
    println!("{n} corrupted frames (seed {seed:#x}); outcomes:");
    for ((form, what), count) in &corpus.counts {
        println!("  {form:?}: {what}: {count}");
    }
    let total: usize = corpus.counts.values().sum();
    assert!(only.is_some() || total >= 1000, "only {total} outcomes");
    // Opening is the dangerous part: most corruptions must be stopped there.
    let rejected: usize = corpus.counts.iter().filter(|((_, w), _)| w.starts_with("rejected")).map(|(_, c)| c).sum();
    assert!(only.is_some() || rejected * 2 > total, "{rejected} of {total} rejected");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------
// Targeted corruptions: each one crashes (or reads out of bounds in)
// c-blosc2 2.15 when handed to it; each must come back as InvalidFormat.

fn base_written(name: &str, dir: &Path) -> Written {
    let base = bases().into_iter().find(|b| b.name == name).unwrap();
    write_base(&base, dir)
}

/// Position of the offsets index and the trailer in a contiguous frame.
fn layout(frame: &[u8]) -> (usize, usize) {
    let header = be_u32(frame, 11) as usize;
    let cbytes = u64::from_be_bytes(frame[39..47].try_into().unwrap()) as usize;
    let trailer = frame.len() - be_u32(frame, frame.len() - 22) as usize;
    (header + cbytes, trailer)
}

/// Expect an InvalidFormat error mentioning `expect`.
fn invalid<T: std::fmt::Debug>(r: caterva::Result<T>, what: &str, expect: &str) {
    match r {
        Err(Error::InvalidFormat(m)) => assert!(m.contains(expect), "{what}: {m}"),
        other => panic!("{what}: expected InvalidFormat, got {other:?}"),
    }
}

/// Damage a read finds in an array that opened: [`Error::Corrupt`] (our
/// reader: the C API's `CATERVA_ERR_BLOSC_FAILED`), or [`Error::InvalidFormat`]
/// where the whole frame check runs first (a read through c-blosc2).
fn damaged<T: std::fmt::Debug>(r: caterva::Result<T>, what: &str, expect: &str) {
    match r {
        Err(Error::Corrupt { reason: m, .. } | Error::InvalidFormat(m)) => assert!(m.contains(expect), "{what}: {m}"),
        other => panic!("{what}: expected Corrupt or InvalidFormat, got {other:?}"),
    }
}

/// An array whose damage opening a file may leave for later (a chunk's
/// header: `Chunks::Later`) must be refused by every read of it and by
/// every operation that hands its chunks to c-blosc2 (a copy, a frame, a write).
fn refused_later(opened: caterva::Result<Array>, what: &str, expect: &str) {
    let mut a = match opened {
        Ok(a) => a,
        r => return invalid(r, what, expect),
    };
    let mut buf = vec![0u8; a.nitems() as usize * a.itemsize()];
    damaged(a.to_buffer(&mut buf), &format!("{what} (read)"), expect);
    invalid(a.to_cframe(), &format!("{what} (to_cframe)"), expect);
    let copy = std::env::temp_dir().join(format!("caterva-refused-{}.b2frame", std::process::id()));
    invalid(a.save(copy.to_str().unwrap()), &format!("{what} (save)"), expect);
    assert!(!copy.exists(), "{what}: a refused save left a file");
    let (start, stop) = (vec![0; a.ndim()], vec![1; a.ndim()]);
    let one = vec![0u8; a.itemsize()];
    invalid(a.set_slice_buffer(&start, &stop, &one, &vec![1; a.ndim()]), &format!("{what} (write)"), expect);
}

/// Apply `edit` to the frame buffer and the frame file of `w`; both must be
/// refused with an InvalidFormat error mentioning `expect`: the buffer when
/// it is opened, the file when it is opened or, for a chunk's header, when
/// anything reads that chunk ([`refused_later`]).
fn refused(w: &Written, dir: &Path, what: &str, expect: &str, edit: impl Fn(&mut Vec<u8>)) {
    let ctx = Context::new(Config::default()).unwrap();
    let mut frame = w.cframe.clone();
    edit(&mut frame);
    let mut file = std::fs::read(&w.file).unwrap();
    edit(&mut file);
    let path = dir.join(format!("targeted-{}.b2frame", what.replace(' ', "-")));
    std::fs::write(&path, &file).unwrap();
    invalid(Array::from_cframe(&ctx, &frame), what, expect);
    refused_later(Array::open(&ctx, path.to_str().unwrap()), what, expect);
}

#[test]
fn targeted_corruptions_are_refused() {
    let dir = common::scratch_dir("corrupt-targeted");
    let w = base_written("ragged-zstd", &dir);
    refused(&w, &dir, "seven filters", "filters", |f| f[70] = 7);
    refused(&w, &dir, "undefined filter", "filter id 9", |f| f[71] = 9);
    refused(&w, &dir, "zero typesize", "typesize", |f| f[48..52].copy_from_slice(&0i32.to_be_bytes()));
    refused(&w, &dir, "sparse type", "frame type", |f| f[26] = 1);
    refused(&w, &dir, "short header", "header length", |f| f[11..15].copy_from_slice(&40i32.to_be_bytes()));
    // Metalayer 'caterva': its bin32 length, overflowing c-blosc2's int32 bound.
    refused(&w, &dir, "metalayer overflow", "'caterva' content", |f| {
        let off = be_u32(f, 94 + 1 + 7 + 1) as usize;
        f[off + 1..off + 5].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
    });
    refused(&w, &dir, "seventeen metalayers", "metalayers", |f| f[92..94].copy_from_slice(&17u16.to_be_bytes()));
    // The vlmetalayers: a negative count, and a content too short to be a chunk.
    refused(&w, &dir, "negative vlmeta count", "vlmetalayers", |f| {
        let t = layout(f).1;
        f[t + 7..t + 9].copy_from_slice(&0xfffeu16.to_be_bytes());
    });
    refused(&w, &dir, "short vlmeta", "too short", |f| {
        let t = layout(f).1;
        let off = t + be_u32(f, t + 9 + 1 + 4 + 1) as usize;
        f[off + 1..off + 5].copy_from_slice(&3u32.to_be_bytes());
    });
    // The offsets index (a plain copy here): its typesize, its size, and the offsets.
    refused(&w, &dir, "index typesize", "8-byte offsets", |f| {
        let at = layout(f).0 + 3;
        f[at] = 1;
    });
    refused(&w, &dir, "index size", "offsets index", |f| {
        let at = layout(f).0 + 4;
        f[at..at + 4].copy_from_slice(&800i32.to_le_bytes());
    });
    refused(&w, &dir, "offset past the data", "outside", |f| {
        let at = layout(f).0 + 32 + 8;
        f[at..at + 8].copy_from_slice(&0x7fff_0000i64.to_le_bytes());
    });
    refused(&w, &dir, "bad special offset", "special value", |f| {
        let at = layout(f).0 + 32 + 8;
        f[at..at + 8].copy_from_slice(&(0x8300_0000_0000_0000u64 as i64).to_le_bytes());
    });
    // A chunk header: cbytes beyond the frame, and the lazy flag.
    refused(&w, &dir, "chunk cbytes", "cbytes", |f| {
        let at = be_u32(f, 11) as usize + 12;
        f[at..at + 4].copy_from_slice(&0x00ff_ffffi32.to_le_bytes());
    });
    // c-blosc2 frees the previous dictionary before checking the new one, and
    // frees it again for the next dictionary chunk.
    refused(&w, &dir, "dictionary", "dictionary", |f| {
        let chunk = be_u32(f, 11) as usize;
        let le = |at: usize| u32::from_le_bytes(f[chunk + at..chunk + at + 4].try_into().unwrap()) as usize;
        let dict_at = chunk + 32 + 4 * le(4).div_ceil(le(8));
        f[chunk + 31] |= b::BLOSC2_USEDICT as u8;
        f[dict_at..dict_at + 4].copy_from_slice(&0x7fff_ffffi32.to_le_bytes());
    });
    refused(&w, &dir, "lazy chunk", "lazy", |f| {
        let at = be_u32(f, 11) as usize + 31;
        f[at] |= 0x08;
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sparse_chunk_files_must_be_there_and_whole() {
    let dir = common::scratch_dir("corrupt-sparse");
    let w = base_written("ragged-zstd", &dir);
    let ctx = Context::new(Config::default()).unwrap();
    let case = dir.join("case.b2nd");
    let url = case.to_str().unwrap();
    let expect_refused = |what: &str, expect: &str| refused_later(Array::open(&ctx, url), what, expect);
    copy_dir(&w.dir, &case);
    std::fs::remove_file(case.join("00000002.chunk")).unwrap();
    expect_refused("missing chunk file", "is missing");
    copy_dir(&w.dir, &case);
    let mut long = std::fs::read(case.join("00000001.chunk")).unwrap();
    long.push(0);
    std::fs::write(case.join("00000001.chunk"), long).unwrap();
    expect_refused("long chunk file", "the file");
    copy_dir(&w.dir, &case);
    std::fs::remove_file(case.join("00000003.chunk")).unwrap();
    std::fs::create_dir(case.join("00000003.chunk")).unwrap();
    expect_refused("chunk file is a directory", "not a regular file");
    // A FIFO would block a reader that opened it for a writer that never comes.
    copy_dir(&w.dir, &case);
    let fifo = case.join("00000001.chunk");
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    expect_refused("chunk file is a FIFO", "not a regular file");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------
// The fuzzers' seeds and regressions.

fn fuzz_dir(sub: &str, target: &str) -> PathBuf {
    common::manifest_dir().join("fuzz").join(sub).join(target)
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

/// Rewrite `fuzz/seeds/`: the base frame buffers (for `frame_check` and
/// `from_cframe`), and their geometry metalayers (for `meta_decode`).
fn write_fuzz_seeds(written: &[(&'static str, Written)]) {
    let ctx = Context::new(Config::default()).unwrap();
    for sub in ["frames", "metalayers"] {
        let d = fuzz_dir("seeds", sub);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
    }
    for (name, w) in written {
        std::fs::write(fuzz_dir("seeds", "frames").join(format!("{name}.cframe")), &w.cframe).unwrap();
        let arr = Array::from_cframe(&ctx, &w.cframe).unwrap();
        for meta in ["caterva", "b2nd"] {
            let bytes = arr.meta_get(meta).unwrap();
            std::fs::write(fuzz_dir("seeds", "metalayers").join(format!("{name}.{meta}")), bytes).unwrap();
        }
    }
}

#[test]
fn fuzz_seeds_are_valid_frames() {
    let ctx = harness::context();
    let seeds = files_in(&fuzz_dir("seeds", "frames"));
    assert!(seeds.len() >= 5, "fuzz/seeds/frames holds {} seeds", seeds.len());
    for p in seeds {
        let bytes = std::fs::read(&p).unwrap();
        let arr = Array::from_cframe(ctx, &bytes).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(harness::read_everything(ctx, &arr).failed, 0, "{p:?}");
    }
}

#[test]
fn fuzz_regressions_replay() {
    let mut replayed = 0;
    for (target, run) in harness::TARGETS {
        for p in files_in(&fuzz_dir("regressions", target)) {
            let bytes = std::fs::read(&p).unwrap();
            let _ = std::io::stderr().write_all(format!("replaying {}\n", p.display()).as_bytes());
            run(&bytes);
            replayed += 1;
        }
    }
    println!("replayed {replayed} regression inputs");
}
