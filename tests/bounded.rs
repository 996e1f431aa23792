//! Bounded resources on hostile files (issue 13, item 5): opening a frame of
//! N bytes, and reading what opened, must fit in a fixed budget plus a
//! small multiple of N, and must finish.
//!
//! Each case runs in a forked child whose address space is limited
//! (`RLIMIT_AS`) to what it already uses plus [`BUDGET_FIXED`] +
//! [`BUDGET_PER_BYTE`] × the size of its input, with an alarm against
//! hangs. The child opens the input (a frame buffer, both ways
//! `from_cframe` takes one; a frame file; a sparse-frame directory), reads
//! everything when it opens (the fuzzers' `read_everything`), and exits 0
//! whether that succeeded or failed: only a crash, an abort ("memory
//! allocation of N bytes failed"), a signal or a hang fails a case.
//!
//! The hostile cases start from small real arrays written by this library
//! and edit their length, size and offset fields (the offsets index, the
//! number of chunks, metalayer and vlmetalayer lengths and sizes, the
//! trailer length, chunk headers), or replace an offsets index by one
//! claiming millions of chunks. The valid cases (which must open and read
//! back in full) show that the budget does not refuse legitimate arrays,
//! tiny files with 2^28 chunks and indexes of 2^24 offsets among them.
//!
//! A read is allowed what the geometry declares (a chunk of 1 GiB of zeros
//! is nothing in the frame and 1 GiB once read): one beyond the budget must
//! fail with an out-of-memory error, not abort.
//!
//! No timing is asserted: the alarm is generous and only catches hangs.
#![cfg(target_os = "linux")]

mod common;
#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};

use blosc2_sys as b;
use caterva::{Array, CParams, Codec, Config, Context, Error, Metalayer, Params, StorageParams};

/// The address space a case may add to what its child already uses, besides
/// [`BUDGET_PER_BYTE`] per byte of input.
const BUDGET_FIXED: u64 = 64 << 20;
/// Address space allowed per byte of the input (a frame buffer is copied
/// once by `from_cframe`, and a file is read by the checker and c-blosc2).
const BUDGET_PER_BYTE: u64 = 16;
/// Seconds a child may run before its alarm kills it (a hang).
const ALARM_S: u32 = 120;

// ---------------------------------------------------------------------------
// Frame layout (README_CFRAME_FORMAT.rst, README_CHUNK_FORMAT.rst).

const POS_HEADER_LEN: usize = 11;
const POS_FRAME_LEN: usize = 16;
const POS_NBYTES: usize = 30;
const POS_CBYTES: usize = 39;
const POS_BLOCKSIZE: usize = 53;
const POS_CHUNKSIZE: usize = 58;
/// Chunk header fields: little-endian `int32`s.
const CH_NBYTES: usize = 4;
const CH_BLOCKSIZE: usize = 8;
const CH_CBYTES: usize = 12;

fn be32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(f[at..at + 4].try_into().unwrap())
}
fn be64(f: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(f[at..at + 8].try_into().unwrap())
}
fn set_be32(f: &mut [u8], at: usize, v: u32) {
    f[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn set_be64(f: &mut [u8], at: usize, v: u64) {
    f[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
fn set_le32(f: &mut [u8], at: usize, v: u32) {
    f[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn header_len(f: &[u8]) -> usize {
    be32(f, POS_HEADER_LEN) as usize
}

/// Where the trailer starts.
fn trailer_at(f: &[u8]) -> usize {
    f.len() - be32(f, f.len() - 22) as usize
}

/// Where the offsets index starts: after the data of a contiguous frame,
/// right after the header of a sparse frame's index.
fn index_at(f: &[u8], sparse: bool) -> usize {
    header_len(f) + if sparse { 0 } else { be64(f, POS_CBYTES) as usize }
}

/// Replace the offsets index (everything between the data and the trailer)
/// by `index`, fixing the frame length.
fn replace_index(f: &[u8], sparse: bool, index: &[u8]) -> Vec<u8> {
    let (at, t) = (index_at(f, sparse), trailer_at(f));
    let mut out = f[..at].to_vec();
    out.extend_from_slice(index);
    out.extend_from_slice(&f[t..]);
    let len = out.len() as u64;
    set_be64(&mut out, POS_FRAME_LEN, len);
    out
}

/// Make the frame claim `nchunks` chunks of its chunk size.
fn claim_chunks(f: &mut [u8], nchunks: u64) {
    let chunksize = u64::from(be32(f, POS_CHUNKSIZE));
    set_be64(f, POS_NBYTES, nchunks * chunksize);
}

/// The offsets index as it is, padded to `cbytes` (the padding counted in
/// its cbytes, as c-blosc2 ignores what follows the last stream), made a
/// compressed chunk of `nbytes` bytes in blocks of `blocksize`.
fn forged_index(f: &[u8], sparse: bool, cbytes: usize, nbytes: u32, blocksize: u32) -> Vec<u8> {
    let (at, t) = (index_at(f, sparse), trailer_at(f));
    let mut index = f[at..t].to_vec();
    index.resize(cbytes.max(index.len()), 0);
    index[2] &= !(b::BLOSC_MEMCPYED as u8); // not a plain copy
    index[16..22].copy_from_slice(&[0, 0, 0, 0, 0, b::BLOSC_SHUFFLE as u8]);
    index[31] = 0; // not special, no dictionary
    index[3] = 8;
    set_le32(&mut index, CH_NBYTES, nbytes);
    set_le32(&mut index, CH_BLOCKSIZE, blocksize);
    let cbytes = index.len() as u32;
    set_le32(&mut index, CH_CBYTES, cbytes);
    index
}

/// A real compressed offsets index holding `offsets`, as c-blosc2 would
/// write it (shuffled 8-byte items, BloscLZ, 16 KiB blocks).
fn compressed_index(offsets: impl Iterator<Item = i64>) -> Vec<u8> {
    let raw: Vec<u8> = offsets.flat_map(i64::to_le_bytes).collect();
    // SAFETY: plain structs by value; the context is freed below; `out` has
    // the capacity passed to the compressor, which writes at most that.
    unsafe {
        b::blosc2_init();
        let mut cp = b::blosc2_get_blosc2_cparams_defaults();
        cp.typesize = 8;
        cp.blocksize = 16 * 1024;
        cp.nthreads = 1;
        let cctx = b::blosc2_create_cctx(cp);
        assert!(!cctx.is_null());
        let cap = raw.len() + b::BLOSC2_MAX_OVERHEAD as usize;
        let mut out = Vec::<u8>::with_capacity(cap);
        let n =
            b::blosc2_compress_ctx(cctx, raw.as_ptr().cast(), raw.len() as i32, out.as_mut_ptr().cast(), cap as i32);
        b::blosc2_free_ctx(cctx);
        assert!(n > 0, "compressing the index: {n}");
        out.set_len(n as usize);
        out
    }
}

/// A layer in a metalayers section: `(name, position of its bin32 marker)`.
fn layers(f: &[u8], section: usize, map_at: usize) -> Vec<(String, usize)> {
    assert_eq!(f[section + map_at], 0xde);
    let n = u16::from_be_bytes(f[section + map_at + 1..section + map_at + 3].try_into().unwrap());
    let mut pos = section + map_at + 3;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = usize::from(f[pos] & 0x1f);
        let name = String::from_utf8_lossy(&f[pos + 1..pos + 1 + len]).into_owned();
        let off = be32(f, pos + 2 + len) as usize;
        out.push((name, section + off));
        pos += 1 + len + 5;
    }
    out
}

/// Position of the bin32 marker of vlmetalayer `name`.
fn vlmeta_at(f: &[u8], name: &str) -> usize {
    let t = trailer_at(f);
    layers(f, t, 6).into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no vlmetalayer {name}")).1
}

/// Position of the bin32 marker of metalayer `name`.
fn meta_at(f: &[u8], name: &str) -> usize {
    layers(f, 0, 91).into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no metalayer {name}")).1
}

/// A trailer holding `n` copies of the vlmetalayer chunk `content`, named
/// `v0`, `v1`, …, in the layout of `frame_update_trailer`.
fn trailer_with(n: u16, content: &[u8]) -> Vec<u8> {
    let mut t = vec![0x94, 1, 0x93, 0xcd, 0, 0, 0xde];
    t.extend_from_slice(&n.to_be_bytes());
    let mut slots = Vec::new();
    for i in 0..n {
        let name = format!("v{i}");
        t.push(0xa0 + name.len() as u8);
        t.extend_from_slice(name.as_bytes());
        t.push(0xd2);
        slots.push(t.len());
        t.extend_from_slice(&[0; 4]);
    }
    let map_size = (t.len() - 3) as u16;
    t[4..6].copy_from_slice(&map_size.to_be_bytes());
    t.push(0xdc);
    t.extend_from_slice(&n.to_be_bytes());
    for s in slots {
        let here = t.len() as u32;
        set_be32(&mut t, s, here);
        t.push(0xc6);
        t.extend_from_slice(&(content.len() as u32).to_be_bytes());
        t.extend_from_slice(content);
    }
    let len = t.len() as u32 + 23;
    t.push(0xce);
    t.extend_from_slice(&len.to_be_bytes());
    t.extend_from_slice(&[0xd8, 0]);
    t.extend_from_slice(&[0; 16]);
    t
}

/// Replace the trailer of a frame (with chunks) by `trailer`.
fn replace_trailer(f: &[u8], trailer: &[u8]) -> Vec<u8> {
    let mut out = f[..trailer_at(f)].to_vec();
    out.extend_from_slice(trailer);
    let len = out.len() as u64;
    set_be64(&mut out, POS_FRAME_LEN, len);
    out
}

// ---------------------------------------------------------------------------
// Base arrays.

fn cparams(codec: Codec, clevel: u8) -> CParams {
    CParams { codec, clevel, ..CParams::default() }
}

fn context(cp: CParams, checksums: bool) -> Context {
    Context::new(Config { cparams: cp, nthreads: 1, checksums, ..Config::default() }).unwrap()
}

fn storage(chunks: &[i32], blocks: &[i32], st: &StorageParams) -> StorageParams {
    StorageParams { chunkshape: chunks.to_vec(), blockshape: blocks.to_vec(), ..st.clone() }
}

/// Half noise, half zeros: a vlmetalayer that compresses to about half.
fn noisy(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i < n / 2 {
                x as u8
            } else {
                0
            }
        })
        .collect()
}

/// A small checksummed array with a user metalayer and three vlmetalayers,
/// one of them (`big`) compressing to about 48 KiB.
fn small(st: &StorageParams) -> Array {
    let ctx = context(CParams::default(), true);
    let p = Params { itemsize: 8, shape: vec![20, 10], dtype: Some("<f8".into()) };
    let mut st = storage(&[7, 5], &[3, 5], st);
    st.metalayers = vec![Metalayer { name: "user".into(), content: b"user metalayer content".to_vec() }];
    let data: Vec<u8> = (0..20 * 10 * 8).map(|i| (i / 3) as u8).collect();
    let mut a = Array::from_buffer(&ctx, &p, &st, &data).unwrap();
    a.vlmeta_add("info", b"a variable-length metalayer, long enough to compress well well well").unwrap();
    a.vlmeta_add("tiny", b"x").unwrap();
    a.vlmeta_add("big", &noisy(96 * 1024)).unwrap();
    a
}

/// Zeros, never written: its offsets index is one special value.
fn zeros(st: &StorageParams) -> Array {
    let ctx = context(cparams(Codec::Lz4, 9), false);
    let p = Params { itemsize: 1, shape: vec![33], dtype: None };
    Array::zeros(&ctx, &p, &storage(&[10], &[4], st)).unwrap()
}

/// Zeros with one chunk written: its offsets index is a list.
fn listed(st: &StorageParams) -> Array {
    let mut a = zeros(st);
    a.set_slice_buffer(&[12], &[18], &[7; 6], &[6]).unwrap();
    a
}

/// Zeros of 268435451 chunks (the most an array may have), in a tiny file.
fn huge_special(st: &StorageParams) -> Array {
    let ctx = context(CParams::default(), false);
    let p = Params { itemsize: 2, shape: vec![268_435_451], dtype: None };
    Array::zeros(&ctx, &p, &storage(&[1], &[1], st)).unwrap()
}

/// Zeros of 2^24 chunks with one written: an offsets index of 128 MiB
/// (2^24 offsets) that compresses to a fraction of a megabyte.
fn big_list(st: &StorageParams) -> Array {
    let ctx = context(CParams::default(), false);
    let p = Params { itemsize: 2, shape: vec![1 << 24], dtype: None };
    let mut a = Array::zeros(&ctx, &p, &storage(&[1], &[1], st)).unwrap();
    a.set_slice_buffer(&[5], &[6], &[1, 2], &[1]).unwrap();
    a
}

/// Checksummed zeros of 2^20 chunks: a checksum table of 8 MiB that
/// compresses to a few kilobytes.
fn many_sums(st: &StorageParams) -> Array {
    let ctx = context(CParams::default(), true);
    let p = Params { itemsize: 32, shape: vec![1 << 20], dtype: None };
    Array::zeros(&ctx, &p, &storage(&[1], &[1], st)).unwrap()
}

/// How to build a base array in a given storage.
type Build = fn(&StorageParams) -> Array;

/// One base array in its three forms.
struct Written {
    cframe: Vec<u8>,
    file: PathBuf,
    dir: PathBuf,
}

fn write(dir: &Path, name: &str, build: Build) -> Written {
    let url = |ext: &str| dir.join(format!("{name}.{ext}")).to_string_lossy().into_owned();
    let cframe = build(&StorageParams { contiguous: true, ..Default::default() }).to_cframe().unwrap();
    let file = StorageParams { contiguous: true, urlpath: Some(url("b2frame")), ..Default::default() };
    drop(build(&file));
    let sparse = StorageParams { contiguous: false, urlpath: Some(url("b2nd")), ..Default::default() };
    drop(build(&sparse));
    Written { cframe, file: PathBuf::from(url("b2frame")), dir: PathBuf::from(url("b2nd")) }
}

fn index_of(dir: &Path) -> PathBuf {
    dir.join("chunks.b2frame")
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.metadata().unwrap().len()).sum()
}

// ---------------------------------------------------------------------------
// Running a case in a bounded child.

enum Input {
    /// A frame buffer, opened copied and borrowed.
    Cframe(Vec<u8>),
    /// A frame file or a sparse-frame directory.
    Path(PathBuf),
}

impl Input {
    fn size(&self) -> u64 {
        match self {
            Input::Cframe(b) => b.len() as u64,
            Input::Path(p) if p.is_dir() => dir_size(p),
            Input::Path(p) => std::fs::metadata(p).unwrap().len(),
        }
    }
}

fn kind(e: &Error) -> String {
    let k = match e {
        Error::InvalidFormat(_) => "InvalidFormat",
        Error::Blosc { .. } => "Blosc",
        Error::InvalidStorage { .. } => "InvalidStorage",
        Error::Io { .. } => "Io",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::Corrupt { .. } => "Corrupt",
        _ => "other",
    };
    let msg = e.to_string();
    let short: String = msg.chars().take(150).collect();
    format!("{k}: {short}")
}

/// The child's address space now, from `/proc/self/statm`.
fn address_space() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().next().and_then(|p| p.parse().ok()).expect("statm size");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page as u64
}

/// Write `s` to the raw file descriptor `fd` (no allocation, no locks).
fn write_fd(fd: i32, s: &str) {
    // SAFETY: writes the bytes of `s`.
    unsafe { libc::write(fd, s.as_ptr().cast(), s.len()) };
}

/// In the child: limit the address space to what it uses plus the budget
/// for `size` bytes of input, run `body`, report what it says.
fn child(size: u64, body: &dyn Fn(&Context) -> String, report: i32) -> ! {
    // One malloc arena: each extra one reserves 64 MiB of address space.
    // SAFETY: mallopt has no preconditions.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    // The context's worker thread exists before the limit is set.
    let ctx = context(CParams::default(), false);
    let limit = address_space() + BUDGET_FIXED + BUDGET_PER_BYTE * size;
    let rl = libc::rlimit { rlim_cur: limit, rlim_max: limit };
    // SAFETY: rl is a valid rlimit; alarm has no preconditions.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &rl), 0);
        libc::alarm(ALARM_S);
    }
    write_fd(report, &body(&ctx));
    // SAFETY: ends the child without unwinding into the test harness.
    unsafe { libc::_exit(0) }
}

/// Open `input` and read everything that opens.
fn open_and_read(ctx: &Context, input: &Input) -> String {
    match input {
        Input::Cframe(bytes) => {
            let copied = harness::outcome(ctx, Array::from_cframe(ctx, bytes), kind);
            // SAFETY: `bytes` outlives the array, dropped inside `outcome`.
            let borrowed = harness::outcome(ctx, unsafe { caterva::testing::from_cframe_borrowed(ctx, bytes) }, kind);
            format!("copied: {copied}; borrowed: {borrowed}")
        }
        Input::Path(p) => harness::outcome(ctx, Array::open(ctx, p.to_str().unwrap()), kind),
    }
}

/// Open and read `input` in a bounded child.
fn bounded(input: &Input) -> Result<String, String> {
    in_child(input.size(), &|ctx| open_and_read(ctx, input))
}

/// Run `body` in a child bounded for `size` bytes of input: `Ok(what it
/// said)` if it returned, `Err(why)` if it crashed, aborted, hung or was killed.
fn in_child(size: u64, body: &dyn Fn(&Context) -> String) -> Result<String, String> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only runs `body` with this library (fork-safe),
    // then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: the read end belongs to the parent.
        unsafe { libc::close(fds[0]) };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(size, body, fds[1])));
        if r.is_err() {
            write_fd(fds[1], "panicked");
        }
        // SAFETY: as in `child`.
        unsafe { libc::_exit(3) }
    }
    let mut text = String::new();
    // SAFETY: the write end belongs to the child; the read end is ours (and
    // closed when the File drops).
    unsafe {
        libc::close(fds[1]);
        let _ = std::fs::File::from_raw_fd(fds[0]).read_to_string(&mut text);
    }
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid out-pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let what = match sig {
            libc::SIGALRM => "hung (alarm)".to_string(),
            libc::SIGABRT => "aborted (SIGABRT: allocation failure or assertion)".to_string(),
            libc::SIGSEGV => "crashed (SIGSEGV)".to_string(),
            s => format!("killed by signal {s}"),
        };
        return Err(format!("{what}{}", if text.is_empty() { String::new() } else { format!(" after: {text}") }));
    }
    match libc::WEXITSTATUS(status) {
        0 => Ok(text),
        c => Err(format!("exited with status {c}: {text}")),
    }
}

/// The cases' inputs in the three forms a frame comes in.
struct Cases {
    dir: PathBuf,
    list: Vec<(String, Input)>,
}

impl Cases {
    fn cframe(&mut self, name: &str, bytes: Vec<u8>) {
        self.list.push((format!("{name} [cframe]"), Input::Cframe(bytes)));
    }

    fn file(&mut self, name: &str, bytes: &[u8]) {
        let p = self.dir.join(format!("case-{}.b2frame", self.list.len()));
        std::fs::write(&p, bytes).unwrap();
        self.list.push((format!("{name} [file]"), Input::Path(p)));
    }

    /// A frame edited both as a buffer and as a file.
    fn contiguous(&mut self, name: &str, w: &Written, edit: impl Fn(&[u8]) -> Vec<u8>) {
        self.cframe(name, edit(&w.cframe));
        self.file(name, &edit(&std::fs::read(&w.file).unwrap()));
    }

    /// A sparse frame whose index is edited.
    fn sparse(&mut self, name: &str, w: &Written, edit: impl Fn(&[u8]) -> Vec<u8>) {
        let d = self.dir.join(format!("case-{}.b2nd", self.list.len()));
        copy_dir(&w.dir, &d);
        let index = std::fs::read(index_of(&d)).unwrap();
        std::fs::write(index_of(&d), edit(&index)).unwrap();
        self.list.push((format!("{name} [sparse]"), Input::Path(d)));
    }

    /// A sparse frame whose chunk file `chunk` is edited.
    fn sparse_chunk(&mut self, name: &str, w: &Written, chunk: &str, edit: impl Fn(&mut Vec<u8>)) {
        let d = self.dir.join(format!("case-{}.b2nd", self.list.len()));
        copy_dir(&w.dir, &d);
        let mut bytes = std::fs::read(d.join(chunk)).unwrap();
        edit(&mut bytes);
        std::fs::write(d.join(chunk), bytes).unwrap();
        self.list.push((format!("{name} [sparse]"), Input::Path(d)));
    }

    /// Run every case, printing what each did: `(name, outcome)`.
    fn run(&self, what: &str) -> Vec<(String, Result<String, String>)> {
        let mut out = Vec::new();
        for (name, input) in &self.list {
            let r = bounded(input);
            match &r {
                Ok(text) => println!("{what} {name} ({} bytes): {text}", input.size()),
                Err(why) => println!("{what} {name} ({} bytes): FAILED: {why}", input.size()),
            }
            out.push((name.clone(), r));
        }
        out
    }
}

fn edited(f: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut f = f.to_vec();
    edit(&mut f);
    f
}

/// A data chunk header field of the first chunk of a contiguous frame.
fn first_chunk_field(at: usize, v: u32) -> impl Fn(&[u8]) -> Vec<u8> {
    move |f| {
        edited(f, |f| {
            let pos = header_len(f) + at;
            set_le32(f, pos, v);
        })
    }
}

/// What c-blosc2 allows as the largest chunk, and its largest block.
const MAX_NBYTES: u32 = 0x7fff_0000;
const MAX_BLOCK: u32 = b::BLOSC2_MAXBLOCKSIZE;
/// The offset of a special chunk of zeros.
const SPECIAL_ZEROS: i64 = (1u64 << 63 | (b::BLOSC2_SPECIAL_ZERO as u64) << 56) as i64;
/// The most chunks a frame can index (2^31 bytes of offsets).
const MAX_CHUNKS: u64 = (i32::MAX / 8) as u64;

#[test]
fn hostile_frames_stay_in_bounds() {
    let dir = common::scratch_dir("bounded");
    let small = write(&dir, "small", small);
    let zeros = write(&dir, "zeros", zeros);
    let listed = write(&dir, "listed", listed);
    let mut c = Cases { dir: dir.clone(), list: Vec::new() };

    // The offsets index claims 2^31 bytes (2^28 - 1 chunks), padded so that
    // no compression ratio gives it away: in one block, and in 4 MiB blocks.
    for (label, block) in [("one 512 MiB block", MAX_BLOCK), ("4 MiB blocks", 4 << 20)] {
        let name = format!("index of 2^28 chunks, {label}");
        let forge = |f: &[u8], sparse: bool| {
            let mut f = replace_index(f, sparse, &forged_index(f, sparse, 40_000, (MAX_CHUNKS * 8) as u32, block));
            claim_chunks(&mut f, MAX_CHUNKS);
            f
        };
        c.contiguous(&name, &small, |f| forge(f, false));
        c.sparse(&name, &small, |f| forge(f, true));
    }
    // Its uncompressed size alone, and its block size alone.
    c.contiguous("index nbytes 2^31", &small, |f| {
        edited(f, |f| {
            let pos = index_at(f, false) + CH_NBYTES;
            set_le32(f, pos, MAX_NBYTES);
        })
    });
    c.contiguous("index block size 512 MiB", &listed, |f| {
        edited(f, |f| {
            let pos = index_at(f, false) + CH_BLOCKSIZE;
            set_le32(f, pos, MAX_BLOCK);
        })
    });
    c.contiguous("index cbytes 2^31", &small, |f| {
        edited(f, |f| {
            let pos = index_at(f, false) + CH_CBYTES;
            set_le32(f, pos, MAX_NBYTES);
        })
    });
    // The header claims 2^28 - 1 chunks over a special index (whose size
    // then matches): c-blosc2 opens it, the geometry disagrees.
    let huge_claim = |f: &[u8], sparse: bool| {
        edited(f, |f| {
            claim_chunks(f, MAX_CHUNKS);
            let pos = index_at(f, sparse) + CH_NBYTES;
            set_le32(f, pos, (MAX_CHUNKS * 8) as u32);
        })
    };
    c.contiguous("2^28 chunks over a special index", &zeros, |f| huge_claim(f, false));
    c.sparse("2^28 chunks over a special index", &zeros, |f| huge_claim(f, true));
    // A real compressed index of 2^24 offsets: all pointing at the first
    // chunk (a contiguous frame), or naming 2^24 chunk files (a sparse one).
    c.contiguous("index of 2^24 copies of one offset", &listed, |f| {
        // The last chunk is special (all zeros would make a special index).
        let offsets = std::iter::repeat(0).take((1 << 24) - 1).chain([SPECIAL_ZEROS]);
        let mut f = replace_index(f, false, &compressed_index(offsets));
        claim_chunks(&mut f, 1 << 24);
        f
    });
    c.sparse("index naming 2^24 chunk files", &small, |f| {
        let mut f = replace_index(f, true, &compressed_index(0..1 << 24));
        claim_chunks(&mut f, 1 << 24);
        f
    });
    // The number of chunks alone.
    c.contiguous("frame nbytes for 2^28 chunks", &small, |f| edited(f, |f| claim_chunks(f, MAX_CHUNKS)));
    // A vlmetalayer's chunk claims 2^31 bytes (read at open: the checksum
    // table records it), in 512 MiB blocks; and 64 MiB in 4 MiB blocks.
    for (label, nbytes, block) in [("2^31 bytes", MAX_NBYTES, MAX_BLOCK), ("64 MiB", 64 << 20, 4 << 20)] {
        let forge = move |f: &[u8]| {
            edited(f, |f| {
                let chunk = vlmeta_at(f, "big") + 5;
                set_le32(f, chunk + CH_NBYTES, nbytes);
                set_le32(f, chunk + CH_BLOCKSIZE, block);
            })
        };
        c.contiguous(&format!("vlmetalayer of {label}"), &small, forge);
        c.sparse(&format!("vlmetalayer of {label}"), &small, forge);
    }
    // Lengths: a metalayer's, a vlmetalayer's, the trailer's.
    c.contiguous("metalayer length 2^31", &small, |f| {
        edited(f, |f| {
            let at = meta_at(f, "caterva") + 1;
            set_be32(f, at, 0x7fff_fff0);
        })
    });
    c.contiguous("vlmetalayer length 2^31", &small, |f| {
        edited(f, |f| {
            let at = vlmeta_at(f, "info") + 1;
            set_be32(f, at, 0x7fff_fff0);
        })
    });
    c.contiguous("trailer length 2^32 - 1", &small, |f| {
        edited(f, |f| {
            let at = f.len() - 22;
            set_be32(f, at, u32::MAX);
        })
    });
    // A data chunk's header: its sizes.
    c.contiguous("chunk nbytes 2^31", &small, first_chunk_field(CH_NBYTES, MAX_NBYTES));
    c.contiguous("chunk block size 512 MiB", &small, first_chunk_field(CH_BLOCKSIZE, MAX_BLOCK));
    c.contiguous("chunk cbytes 2^31", &small, first_chunk_field(CH_CBYTES, MAX_NBYTES));
    c.sparse_chunk("chunk nbytes 2^31", &small, "00000000.chunk", |f| set_le32(f, CH_NBYTES, MAX_NBYTES));
    c.sparse_chunk("chunk block size 512 MiB", &small, "00000000.chunk", |f| set_le32(f, CH_BLOCKSIZE, MAX_BLOCK));
    // The frame's block size, which c-blosc2 gives the special chunks it builds.
    c.contiguous("frame block size 512 MiB", &zeros, |f| edited(f, |f| set_be32(f, POS_BLOCKSIZE, MAX_BLOCK)));
    // 8192 vlmetalayers (the most c-blosc2 reads) with one content.
    c.contiguous("8192 vlmetalayers", &listed, |f| {
        let info = vlmeta_at(&small.cframe, "info");
        let len = be32(&small.cframe, info + 1) as usize;
        replace_trailer(f, &trailer_with(8192, &small.cframe[info + 5..info + 5 + len]))
    });

    let failures: Vec<String> =
        c.run("hostile").into_iter().filter_map(|(name, r)| r.err().map(|why| format!("{name}: {why}"))).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{} hostile cases broke their bounds:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn valid_arrays_fit_the_budget() {
    let dir = common::scratch_dir("bounded-valid");
    let mut c = Cases { dir: dir.clone(), list: Vec::new() };
    let bases: [(&str, Build); 6] = [
        ("small", small),
        ("zeros", zeros),
        ("listed", listed),
        ("2^28 zero chunks", huge_special),
        ("2^24 chunks, one written", big_list),
        ("2^20 checksummed zero chunks", many_sums),
    ];
    for (name, build) in bases {
        let w = write(&dir, &name.replace([' ', '^'], "_"), build);
        c.cframe(name, w.cframe.clone());
        c.list.push((format!("{name} [file]"), Input::Path(w.file.clone())));
        c.list.push((format!("{name} [sparse]"), Input::Path(w.dir.clone())));
    }
    // Every valid array must open and read back in full within the budget
    // (a frame buffer twice: copied and borrowed).
    let mut failures = Vec::new();
    for (name, r) in c.run("valid") {
        let want = if name.ends_with("[cframe]") { 2 } else { 1 };
        match r {
            Ok(text) if text.matches("opened, every read ok").count() == want => {}
            Ok(text) => failures.push(format!("{name}: {text}")),
            Err(why) => failures.push(format!("{name}: {why}")),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "valid arrays did not fit:\n{}", failures.join("\n"));
}

/// Zeros in one chunk of 1 GiB: a special chunk, nothing stored, 1 GiB once read.
fn giant_chunk(st: &StorageParams) -> Array {
    let ctx = context(CParams::default(), false);
    let p = Params { itemsize: 1, shape: vec![1 << 30], dtype: None };
    Array::zeros(&ctx, &p, &storage(&[1 << 30], &[1 << 20], st)).unwrap()
}

/// What a read gave, in short.
fn read_outcome<T>(r: caterva::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("error ({})", kind(&e)),
    }
}

#[test]
fn reads_larger_than_memory_fail_cleanly() {
    // A legitimate array whose one chunk (1 GiB of zeros) exceeds the
    // child's budget: opening it costs nothing, reading it must fail with an
    // out-of-memory error rather than abort.
    let dir = common::scratch_dir("bounded-giant");
    let w = write(&dir, "giant", giant_chunk);
    for input in [Input::Cframe(w.cframe.clone()), Input::Path(w.file.clone()), Input::Path(w.dir.clone())] {
        let r = in_child(input.size(), &|ctx| {
            let opened = match &input {
                Input::Cframe(bytes) => Array::from_cframe(ctx, bytes),
                Input::Path(p) => Array::open(ctx, p.to_str().unwrap()),
            };
            let a = match opened {
                Ok(a) => a,
                Err(e) => return format!("not opened: {}", kind(&e)),
            };
            let mut one = [0u8; 1];
            let slice = read_outcome(a.get_slice_buffer(&[0], &[1], &mut one, &[1]));
            let all = read_outcome(a.to_vec());
            format!("slice: {slice}; to_vec: {all}")
        });
        println!("1 GiB chunk ({} bytes): {r:?}", input.size());
        match r {
            Ok(text) => assert!(
                text.starts_with("slice: error (Io") && text.contains("to_vec: error (Io") && text.contains("memory"),
                "{text}"
            ),
            Err(why) => panic!("reading a 1 GiB chunk: {why}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
