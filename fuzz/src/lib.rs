//! What the fuzz targets run, one function per target. `tests/corrupt.rs`
//! includes this file, so its corpus and the regression files in
//! `fuzz/regressions/<target>/` go through exactly the same code.
//!
//! Every function must return, whatever the input: a crash, a panic or a
//! hang is a bug (in this crate, or in c-blosc2 that the frame validator
//! has to keep away).

use std::sync::OnceLock;

use caterva::{Array, Config, Context, Error};

/// Arrays larger than this (in bytes) are only sampled, not read whole: a
/// tiny frame may legitimately describe a huge array of special chunks.
pub const MAX_READ_BYTES: u64 = 1 << 24;

/// A fuzz target's function.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name, with their functions.
pub const TARGETS: [(&str, Target); 5] = [
    ("meta_decode", meta_decode),
    ("frame_check", frame_check),
    ("from_cframe", from_cframe),
    ("open_file", open_file),
    ("blz", blz),
];

/// The single-threaded context every input runs in. It lives for the
/// whole process, as a real one does: its decompression contexts carry
/// state from one input to the next, which is how the fuzzer found
/// c-blosc2's dictionary double free. A crash that does not reproduce from
/// its input alone needs the inputs before it (`-runs` over the corpus).
pub fn context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::new(Config::default()).expect("the default configuration is valid"))
}

/// Target `meta_decode`: the `caterva`/`b2nd` metalayer decoder.
pub fn meta_decode(data: &[u8]) {
    let _ = caterva::testing::decode_meta(data);
}

/// Target `frame_check`: the frame validator alone.
pub fn frame_check(data: &[u8]) {
    let _ = caterva::testing::check_cframe(data);
}

/// Target `from_cframe`: an array from a frame buffer, then read everything.
pub fn from_cframe(data: &[u8]) {
    let ctx = context();
    if let Ok(arr) = Array::from_cframe(ctx, data) {
        read_everything(ctx, &arr);
    }
}

/// Target `open_file`: the input as a frame file, opened, then read
/// everything (c-blosc2 reads files differently from buffers) and serialised.
pub fn open_file(data: &[u8]) {
    let path = std::env::temp_dir().join(format!("caterva-fuzz-{}.b2frame", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let ctx = context();
    if let Ok(arr) = Array::open(ctx, &path.to_string_lossy()) {
        read_everything(ctx, &arr);
        // Opening leaves the chunk headers to the reads (ours) and to the
        // first operation that hands chunks to c-blosc2, such as this one.
        let _ = arr.to_cframe();
    }
    let _ = std::fs::remove_file(&path);
}

/// Target `blz`: the BLZ readers. The input as a Bloscpack file, imported
/// (and read back); then as the chunk file `data/__0.blp` of a bcolz carray
/// whose metadata the first two bytes choose (dtype, chunk length, one
/// chunk or a leftover), imported.
pub fn blz(data: &[u8]) {
    let ctx = context();
    let base = std::env::temp_dir().join(format!("caterva-fuzz-blz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    if std::fs::create_dir_all(base.join("c").join("data")).is_err()
        || std::fs::create_dir(base.join("c").join("meta")).is_err()
    {
        return;
    }
    let blp = base.join("f.blp");
    let mem = caterva::StorageParams::default();
    if std::fs::write(&blp, data).is_ok() {
        if let Ok(arr) = caterva::blz::import(ctx, &blp, &mem, &mut |_, _| {}) {
            read_everything(ctx, &arr);
        }
    }
    let (b0, b1) = (data.first().copied().unwrap_or(0), data.get(1).copied().unwrap_or(0));
    let (dtype, itemsize) = [("int8", 1), ("int32", 4), ("float64", 8), ("|S3", 3)][usize::from(b0 % 4)];
    let chunklen = 1 + i64::from(b1 % 64);
    let len = if b0 & 4 != 0 { chunklen } else { chunklen / 2 };
    let c = base.join("c");
    let sizes = format!(r#"{{"shape": [{len}], "nbytes": {}, "cbytes": 0}}"#, len * itemsize);
    let storage = format!(
        r#"{{"dtype": "{dtype}", "cparams": {{"clevel": 5, "shuffle": 1, "cname": "lz4"}}, "chunklen": {chunklen}, "expectedlen": 1, "dflt": 0}}"#
    );
    let ok = std::fs::write(c.join("meta").join("sizes"), sizes).is_ok()
        && std::fs::write(c.join("meta").join("storage"), storage).is_ok()
        && std::fs::write(c.join("data").join("__0.blp"), data).is_ok();
    if ok {
        if let Ok(arr) = caterva::blz::import(ctx, &c, &mem, &mut |_, _| {}) {
            read_everything(ctx, &arr);
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// What reading an opened array gave: how many calls succeeded and failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// Calls that returned `Ok`.
    pub ok: usize,
    /// Calls that returned `Err`.
    pub failed: usize,
}

impl Reads {
    fn note<T>(&mut self, r: Result<T, Error>) -> Option<T> {
        match r {
            Ok(v) => {
                self.ok += 1;
                Some(v)
            }
            Err(_) => {
                self.failed += 1;
                None
            }
        }
    }
}

/// What opening an input (or failing to, described by `kind`) and then
/// reading everything came to, as a line to tally.
pub fn outcome(ctx: &Context, opened: caterva::Result<Array>, kind: impl Fn(&Error) -> String) -> String {
    match opened {
        Err(e) => format!("rejected ({})", kind(&e)),
        Ok(arr) => {
            let r = read_everything(ctx, &arr);
            if r.failed == 0 {
                "opened, every read ok".into()
            } else {
                format!("opened, {} of {} reads failed", r.failed, r.failed + r.ok)
            }
        }
    }
}

/// Read everything an opened array offers: all of it (or a corner when it
/// is huge), a slice, the metalayers, the vlmetalayers, the summary, and a
/// round trip through a frame buffer.
pub fn read_everything(ctx: &Context, arr: &Array) -> Reads {
    let mut reads = Reads::default();
    let nbytes = (arr.nitems() as u64).saturating_mul(arr.itemsize() as u64);
    if nbytes <= MAX_READ_BYTES {
        reads.note(arr.to_vec());
    }
    // A corner slice of at most 3 items per axis (reading it decompresses a
    // whole chunk, which may be as large as the array).
    if arr.geometry().chunk_nbytes() as u64 <= MAX_READ_BYTES {
        let start = vec![0i64; arr.ndim()];
        let stop: Vec<i64> = arr.shape().iter().map(|&s| s.min(3)).collect();
        let items: i64 = stop.iter().product();
        let mut buf = vec![0u8; items as usize * arr.itemsize()];
        reads.note(arr.get_slice_buffer(&start, &stop, &mut buf, &stop));
    }
    let info = arr.info();
    for name in info.metalayers {
        reads.note(arr.meta_get(&name));
    }
    for name in info.vlmetalayers {
        reads.note(arr.vlmeta_get(&name));
    }
    let _ = arr.dtype();
    reads.note(arr.meta_summary());
    if nbytes <= MAX_READ_BYTES {
        if let Some(frame) = reads.note(arr.to_cframe()) {
            if let Some(back) = reads.note(Array::from_cframe(ctx, &frame)) {
                reads.note(back.to_vec());
            }
        }
    }
    reads
}
