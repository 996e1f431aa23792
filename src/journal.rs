//! Crash safety for persistent arrays: an undo journal.
//!
//! c-blosc2 changes frames on disk in place (`blosc/frame.c`, 2.15):
//!
//! - In a contiguous frame file, an append or an update that does not fit
//!   writes the chunk where the offsets chunk starts (`header_len + cbytes`),
//!   then the new offsets chunk and trailer after it, and truncates the file;
//!   a delete, a reorder or a vlmetalayer change rewrites offsets and trailer
//!   from the same place. Every change then rewrites the header (its first
//!   `header_len` bytes: lengths, counters, metalayers). The only write into
//!   the data section before `header_len + cbytes` is an update whose new
//!   chunk is not larger than the old one: it goes over the old chunk, at
//!   that chunk's offset.
//! - In a sparse frame (a directory), the index `chunks.b2frame` (header,
//!   offsets, trailer) is rewritten in place; an append writes a new chunk
//!   file `%08X.chunk` numbered one past the largest offset; an update
//!   rewrites the chunk's own file (a special chunk truncates it), or a new
//!   file numbered as for an append if the chunk was special; a delete
//!   removes the chunk's file.
//!
//! So before the first change of an array-level write (`Array` arms its
//! super-chunk's journal around each write), `<urlpath>.caterva-journal` is
//! written (to a temporary name, synced, renamed, directory synced) with
//! what those writes may destroy: for a file its length, header and
//! everything from the offsets chunk to the end; for a directory the index
//! and the numbers of the chunk files it uses. Before each later change that
//! reaches further (an update in place of an original chunk; an update,
//! delete or new file number hitting a chunk file of the original index) the
//! old bytes are appended to the journal and synced. When the write is
//! done, the frame is synced and the journal deleted: that is the commit.
//! Opening a frame that has a journal ([`recover`]) rolls the write back,
//! newest record first, and removes chunk files the original index did not
//! use. So an array whose writer died opens in the state before the write
//! it was in, or after it if the journal was already gone.
//!
//! The journal stays locked (`flock`) while its write runs, so a second
//! handle opening the array meanwhile gets an error instead of rolling back
//! a live write. Records carry a checksum; a record cut short at the end is
//! one whose change never started and is ignored; a journal that is
//! otherwise damaged is refused rather than guessed at.
//!
//! The syncs guard against power failures and operating-system crashes; a
//! killed process is covered without them (the kernel keeps what it was
//! given, in order). `CATERVA_JOURNAL_SYNC=0` in the environment turns them
//! off, for speed.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::schunk::{self, SChunk};

/// Suffix of the journal beside an array's urlpath.
const JOURNAL_SUFFIX: &str = ".caterva-journal";
/// Suffix of a journal being written (never valid; removed on open).
const TMP_SUFFIX: &str = ".caterva-journal-tmp";
/// Suffix of a sparse-frame directory being replaced by [`replace_dir`].
const OLD_SUFFIX: &str = ".caterva-old";
const MAGIC: &[u8; 8] = b"CTVJRNL1";
/// The sparse-frame index file.
const INDEX: &str = "chunks.b2frame";

// Record tags.
const TARGET: u8 = 1; // key: kind (0 file, 1 directory); payload: identity
const LENGTH: u8 = 2; // key: original file length
const BYTES: u8 = 3; // key: file offset; payload: original bytes
const INDEX_COPY: u8 = 4; // payload: the original index file
const CHUNK_IDS: u8 = 5; // payload: chunk file numbers in use (u64 LE each)
const CHUNK_FILE: u8 = 6; // key: chunk file number; payload: its original content
const BASE_END: u8 = 7; // end of the records written before any change

const KIND_FILE: u64 = 0;
const KIND_DIR: u64 = 1;

// Frame header fields (c-blosc2 frame.h): msgpack markers and big-endian values.
const HEADER_LEN_AT: usize = 11; // int32, marker 0xd2 before it
const CBYTES_AT: usize = 39; // int64, marker 0xd3 before it
const HEADER_MINLEN: u64 = 87;
/// Offset of the compressed size in a chunk header (little-endian int32).
const CHUNK_CBYTES_AT: usize = 12;

/// A change an [`SChunk`] is about to make, as far as the journal cares.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// Header, offsets, trailer or index only (reorder, metalayers, …).
    Meta,
    /// A chunk appended at the end.
    Append,
    /// Chunk `nchunk` replaced by one of `cbytes` compressed bytes.
    Update {
        /// Which chunk.
        nchunk: i64,
        /// Compressed size of the new chunk.
        cbytes: u64,
    },
    /// Chunk `nchunk` removed.
    Delete(i64),
}

/// A super-chunk's journal state.
#[derive(Default)]
pub(crate) enum Slot {
    /// Writes are not journaled (in memory, or outside an array-level write).
    #[default]
    Idle,
    /// An array-level write has started; the journal is made at its first change.
    Armed,
    /// The journal exists and covers the changes made so far.
    Open(Box<Journal>),
}

impl Slot {
    /// Start an array-level write; `false` if one is already running (the
    /// caller then joins it, and the outer write commits or aborts).
    pub(crate) fn arm(&mut self) -> bool {
        let idle = matches!(self, Slot::Idle);
        if idle {
            *self = Slot::Armed;
        }
        idle
    }

    /// Record what `ops` (about to run, in order) on `sc` may overwrite,
    /// making the journal first if they are the write's first changes.
    ///
    /// # Errors
    /// [`Error::Io`] if the journal cannot be written (then `ops` must not run).
    pub(crate) fn before(&mut self, sc: &SChunk, ops: &[Op]) -> Result<()> {
        match self {
            Slot::Idle => Ok(()),
            Slot::Armed => {
                *self = match sc.storage().urlpath {
                    Some(url) => Slot::Open(Box::new(Journal::begin(sc, &url, ops)?)),
                    None => Slot::Idle,
                };
                Ok(())
            }
            Slot::Open(j) => j.before(sc, ops),
        }
    }

    /// The write is complete: sync `sc`'s frame and delete the journal.
    ///
    /// # Errors
    /// [`Error::Io`] if syncing or deleting fails (the journal then stays
    /// open: [`Slot::abort`] rolls the write back).
    pub(crate) fn commit(&mut self, sc: &SChunk) -> Result<()> {
        if let Slot::Open(j) = self {
            // On an error the journal stays open, for abort to roll back.
            j.commit(sc)?;
        }
        *self = Slot::Idle;
        Ok(())
    }

    /// The write failed: undo its changes on disk. Returns whether anything
    /// was undone (the caller must then reload the super-chunk).
    ///
    /// # Errors
    /// As [`recover`]; the journal then stays for the next open.
    pub(crate) fn abort(&mut self) -> Result<bool> {
        match std::mem::take(self) {
            Slot::Open(mut j) => {
                rollback(&mut j.file, &j.path, &j.url)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// A record to append: tag, key, payload.
type Save = (u8, u64, Vec<u8>);

/// What the journal protects, and what it has saved so far.
enum Layout {
    File {
        path: PathBuf,
        header_len: u64,
        /// `header_len + cbytes` when the journal was made: original chunks lie before it.
        data_end: u64,
        /// Offsets of the original chunks already saved.
        saved: BTreeSet<u64>,
    },
    Dir {
        dir: PathBuf,
        /// Chunk files the original index uses.
        in_use: BTreeSet<i64>,
        saved: BTreeSet<i64>,
    },
}

impl Layout {
    /// The original bytes `ops` may overwrite that no record holds yet.
    ///
    /// In a file, only an update of an original chunk by one that fits
    /// overwrites data. In a directory, only an update or delete of a chunk
    /// whose file the original index uses: a new chunk file gets a number
    /// past every number in use, and an original number that high has left
    /// the index during this write, by such an update or delete, which saved it.
    fn saves(&mut self, sc: &SChunk, ops: &[Op]) -> Result<Vec<Save>> {
        let chunks: Vec<(i64, u64)> = ops
            .iter()
            .filter_map(|op| match *op {
                Op::Update { nchunk, cbytes } => Some((nchunk, cbytes)),
                Op::Delete(nchunk) if matches!(self, Layout::Dir { .. }) => Some((nchunk, 0)),
                _ => None,
            })
            .collect();
        if chunks.is_empty() {
            return Ok(Vec::new());
        }
        // Updates and deletes of other chunks do not move a chunk's data.
        let offsets = sc.frame_offsets()?;
        let mut out = Vec::new();
        for (nchunk, cbytes) in chunks {
            // Special chunks (offset with the top bit set) have no bytes.
            let Some(&off) = offsets.get(nchunk as usize).filter(|&&o| o >= 0) else { continue };
            out.extend(match self {
                Layout::File { path, header_len, data_end, saved } => {
                    Self::save_chunk_bytes(path, *header_len + off as u64, *data_end, cbytes, saved)?
                }
                Layout::Dir { dir, in_use, saved } => {
                    if !in_use.contains(&off) || !saved.insert(off) {
                        continue;
                    }
                    let p = chunk_file(dir, off);
                    Some((CHUNK_FILE, off as u64, std::fs::read(&p).map_err(io_err("reading", &p))?))
                }
            });
        }
        Ok(out)
    }

    /// The bytes of the original chunk at `at` in `path`, if an update by
    /// one of `cbytes` bytes would overwrite them (and they are not saved yet).
    fn save_chunk_bytes(
        path: &Path,
        at: u64,
        data_end: u64,
        cbytes: u64,
        saved: &mut BTreeSet<u64>,
    ) -> Result<Option<Save>> {
        // Chunks written by this write lie past data_end.
        if at >= data_end || saved.contains(&at) {
            return Ok(None);
        }
        let mut f = File::open(path).map_err(io_err("opening", path))?;
        let head = read_at(&mut f, at, 16).map_err(io_err("reading", path))?;
        let old = u64::from(u32::from_le_bytes(head[CHUNK_CBYTES_AT..16].try_into().unwrap_or_default()));
        // c-blosc2 writes over the old chunk only when the new one fits.
        if cbytes > old {
            return Ok(None);
        }
        let bytes = read_at(&mut f, at, old.min(data_end - at) as usize).map_err(io_err("reading", path))?;
        saved.insert(at);
        Ok(Some((BYTES, at, bytes)))
    }
}

/// An open journal, locked for the duration of one array-level write.
pub(crate) struct Journal {
    path: PathBuf,
    url: String,
    file: File,
    layout: Layout,
}

/// The journal path of an array at `urlpath`.
#[must_use]
pub fn journal_path(urlpath: &str) -> PathBuf {
    PathBuf::from(format!("{}{JOURNAL_SUFFIX}", trimmed(urlpath)))
}

fn trimmed(urlpath: &str) -> &str {
    let t = urlpath.trim_end_matches('/');
    if t.is_empty() {
        urlpath
    } else {
        t
    }
}

fn sibling(urlpath: &str, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", trimmed(urlpath)))
}

fn io_err<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(what, Some(path), &e)
}

fn chunk_file(dir: &Path, id: i64) -> PathBuf {
    dir.join(format!("{:08X}.chunk", id as u32))
}

/// The chunk file number of a `%08X.chunk` name.
fn chunk_id(name: &str) -> Option<i64> {
    let hex = name.strip_suffix(".chunk")?;
    let ok = hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
    ok.then(|| i64::from_str_radix(hex, 16).ok()).flatten()
}

fn identity(path: &Path) -> std::io::Result<[u64; 2]> {
    let md = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok([md.dev(), md.ino()])
    }
    #[cfg(not(unix))]
    {
        let _ = md;
        Ok([0, 0])
    }
}

/// Take an exclusive lock without waiting; `false` if someone holds it.
fn try_lock(file: &File) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() == ErrorKind::WouldBlock {
            return Ok(false);
        }
        Err(e)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(true)
    }
}

/// Whether journaling syncs to disk: yes unless `CATERVA_JOURNAL_SYNC=0`.
/// Without the syncs a killed process still leaves a consistent array
/// (the kernel keeps what was written); the syncs add safety against
/// power failures and operating-system crashes, at a few syncs per write.
fn syncs() -> bool {
    static SYNC: OnceLock<bool> = OnceLock::new();
    *SYNC.get_or_init(|| std::env::var("CATERVA_JOURNAL_SYNC").map_or(true, |v| v != "0"))
}

/// Make `file`'s data (and its length) durable.
fn flush(file: &File) -> std::io::Result<()> {
    if syncs() {
        file.sync_data()
    } else {
        Ok(())
    }
}

/// Make the entries of `dir` (created, renamed, removed files) durable.
fn sync_dir(dir: &Path) -> Result<()> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    if !syncs() {
        return Ok(());
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err("syncing directory", dir))
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

fn busy(urlpath: &str) -> Error {
    Error::storage(Some(urlpath), format!("'{urlpath}' is being written by another handle (its journal is locked)"))
}

/// A 64-bit check value over a record (torn or stale records fail it).
fn checksum(tag: u8, key: u64, payload: &[u8]) -> u64 {
    let mix = |h: u64| {
        let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 32)
    };
    let mut h = mix(0x243F_6A88_85A3_08D3 ^ u64::from(tag)) ^ key;
    h = mix(h) ^ payload.len() as u64;
    let mut words = payload.chunks_exact(8);
    for w in &mut words {
        h = mix(h ^ u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(mix(h ^ u64::from_le_bytes(last)))
}

/// Encode one record: tag, key, payload length, payload, check value.
fn record(tag: u8, key: u64, payload: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(payload.len() + 25);
    r.push(tag);
    r.extend_from_slice(&key.to_le_bytes());
    r.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    r.extend_from_slice(payload);
    r.extend_from_slice(&checksum(tag, key, payload).to_le_bytes());
    r
}

/// A decoded record.
#[derive(Debug)]
struct Record<'a> {
    tag: u8,
    key: u64,
    payload: &'a [u8],
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    bytes.get(at..at.checked_add(8)?).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// The record at `pos` and where the next one starts, if it is complete and intact.
fn read_record(bytes: &[u8], pos: usize) -> Option<(Record<'_>, usize)> {
    let tag = *bytes.get(pos)?;
    let key = u64_at(bytes, pos + 1)?;
    let len = usize::try_from(u64_at(bytes, pos + 9)?).ok()?;
    let start = pos + 17;
    let end = start.checked_add(len)?;
    let payload = bytes.get(start..end)?;
    (u64_at(bytes, end)? == checksum(tag, key, payload)).then_some((Record { tag, key, payload }, end + 8))
}

/// Decode a journal. The records up to [`BASE_END`] were complete before the
/// journal got its name, so they must all be intact; a save after them that
/// is cut short (killed while writing it) guarded a change that never
/// started, so it and anything after it are ignored.
fn parse(bytes: &[u8]) -> Result<Vec<Record<'_>>> {
    let corrupt = || Error::InvalidFormat("the undo journal is corrupt; the array cannot be rolled back".into());
    if !bytes.starts_with(MAGIC) {
        return Err(corrupt());
    }
    let (mut pos, mut base_done, mut out) = (MAGIC.len(), false, Vec::new());
    while pos < bytes.len() {
        match read_record(bytes, pos) {
            Some((r, next)) => {
                base_done |= r.tag == BASE_END;
                out.push(r);
                pos = next;
            }
            None if base_done => break,
            None => return Err(corrupt()),
        }
    }
    if !base_done || out.first().map(|r| r.tag) != Some(TARGET) {
        return Err(corrupt());
    }
    Ok(out)
}

fn read_at(file: &mut File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

fn write_at(file: &mut File, at: u64, bytes: &[u8]) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(at))?;
    file.write_all(bytes)
}

/// `header_len` and `header_len + cbytes` of a contiguous frame of `len`
/// bytes, if its header is readable and consistent.
fn frame_layout(head: &[u8], len: u64) -> Option<(u64, u64)> {
    let be32 = head.get(HEADER_LEN_AT..HEADER_LEN_AT + 4)?;
    let be64 = head.get(CBYTES_AT..CBYTES_AT + 8)?;
    if head[HEADER_LEN_AT - 1] != 0xd2 || head[CBYTES_AT - 1] != 0xd3 {
        return None;
    }
    let header_len = u64::try_from(i32::from_be_bytes(be32.try_into().ok()?)).ok()?;
    let cbytes = u64::try_from(i64::from_be_bytes(be64.try_into().ok()?)).ok()?;
    let data_end = header_len.checked_add(cbytes)?;
    (header_len >= HEADER_MINLEN && data_end <= len).then_some((header_len, data_end))
}

impl Journal {
    /// Write the journal for the array at `url` before its first changes, `ops`.
    fn begin(sc: &SChunk, url: &str, ops: &[Op]) -> Result<Journal> {
        let path = journal_path(url);
        if path.exists() {
            return Err(Error::storage(
                Some(url),
                format!("'{url}' has an unfinished write from another handle; reopen the array"),
            ));
        }
        let (mut base, mut layout) =
            if sc.storage().contiguous { Self::base_file(url)? } else { Self::base_dir(sc, url)? };
        // What the first changes need saved goes in at once (one sync less).
        for (tag, key, bytes) in layout.saves(sc, ops)? {
            base.extend(record(tag, key, &bytes));
        }
        base.extend(record(BASE_END, 0, &[]));
        let tmp = sibling(url, TMP_SUFFIX);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&tmp)
            .map_err(io_err("creating journal", &tmp))?;
        if !try_lock(&file).map_err(io_err("locking journal", &tmp))? {
            return Err(busy(url));
        }
        let write = |f: &mut File| -> std::io::Result<()> {
            // Only a leftover needs emptying (on ext4, truncating to 0 also
            // makes close() start writeback).
            if f.metadata()?.len() > 0 {
                f.set_len(0)?;
            }
            f.write_all(&base)?;
            flush(f)
        };
        write(&mut file).map_err(io_err("writing journal", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err("naming journal", &path))?;
        sync_dir(parent(&path))?;
        Ok(Journal { path, url: url.to_owned(), file, layout })
    }

    /// Base records of a contiguous frame file: its length, header and tail.
    fn base_file(url: &str) -> Result<(Vec<u8>, Layout)> {
        let path = PathBuf::from(url);
        let mut f = File::open(&path).map_err(io_err("opening", &path))?;
        let len = f.metadata().map_err(io_err("reading", &path))?.len();
        let head = read_at(&mut f, 0, len.min(HEADER_MINLEN) as usize).map_err(io_err("reading", &path))?;
        // An unreadable header: keep the whole file.
        let (header_len, data_end) = frame_layout(&head, len).unwrap_or((0, 0));
        let id = identity(&path).map_err(io_err("reading", &path))?;
        let mut base = MAGIC.to_vec();
        base.extend(record(TARGET, KIND_FILE, &[id[0].to_le_bytes(), id[1].to_le_bytes()].concat()));
        base.extend(record(LENGTH, len, &[]));
        let header = read_at(&mut f, 0, header_len as usize).map_err(io_err("reading", &path))?;
        base.extend(record(BYTES, 0, &header));
        let tail = read_at(&mut f, data_end, (len - data_end) as usize).map_err(io_err("reading", &path))?;
        base.extend(record(BYTES, data_end, &tail));
        Ok((base, Layout::File { path, header_len, data_end, saved: BTreeSet::new() }))
    }

    /// Base records of a sparse frame: its index and the chunk files it uses.
    fn base_dir(sc: &SChunk, url: &str) -> Result<(Vec<u8>, Layout)> {
        let dir = PathBuf::from(url);
        let index = dir.join(INDEX);
        let content = std::fs::read(&index).map_err(io_err("reading", &index))?;
        let id = identity(&index).map_err(io_err("reading", &index))?;
        let in_use: BTreeSet<i64> = sc.frame_offsets()?.into_iter().filter(|&o| o >= 0).collect();
        let ids: Vec<u8> = in_use.iter().flat_map(|&i| (i as u64).to_le_bytes()).collect();
        let mut base = MAGIC.to_vec();
        base.extend(record(TARGET, KIND_DIR, &[id[0].to_le_bytes(), id[1].to_le_bytes()].concat()));
        base.extend(record(INDEX_COPY, 0, &content));
        base.extend(record(CHUNK_IDS, 0, &ids));
        let layout = Layout::Dir { dir, in_use, saved: BTreeSet::new() };
        Ok((base, layout))
    }

    /// Append save records and sync them before the changes they guard.
    fn append(&mut self, saves: &[Save]) -> Result<()> {
        if saves.is_empty() {
            return Ok(());
        }
        let r: Vec<u8> = saves.iter().flat_map(|(tag, key, bytes)| record(*tag, *key, bytes)).collect();
        let write = |f: &mut File| -> std::io::Result<()> {
            f.seek(SeekFrom::End(0))?;
            f.write_all(&r)?;
            flush(f)
        };
        write(&mut self.file).map_err(io_err("writing journal", &self.path))
    }

    fn before(&mut self, sc: &SChunk, ops: &[Op]) -> Result<()> {
        let saves = self.layout.saves(sc, ops)?;
        self.append(&saves)
    }

    /// Sync what the write changed, then delete the journal.
    fn commit(&self, sc: &SChunk) -> Result<()> {
        if syncs() {
            self.sync_changes(sc)?;
        }
        // Deleting the journal is the commit. If this is lost in a power
        // failure, the next open rolls back: the state before, also valid.
        std::fs::remove_file(&self.path).map_err(io_err("removing journal", &self.path))
    }

    /// Sync the frame: the file, or the index and every chunk file written
    /// (rewritten originals, which were saved, and files the original index
    /// did not use) and the directory.
    fn sync_changes(&self, sc: &SChunk) -> Result<()> {
        let sync = |p: &Path| File::open(p).and_then(|f| flush(&f)).map_err(io_err("syncing", p));
        match &self.layout {
            Layout::File { path, .. } => sync(path),
            Layout::Dir { dir, in_use, saved } => {
                sync(&dir.join(INDEX))?;
                let offsets = sc.frame_offsets()?;
                let new = offsets.into_iter().filter(|o| *o >= 0 && !in_use.contains(o));
                for p in saved.iter().copied().chain(new).map(|id| chunk_file(dir, id)).filter(|p| p.exists()) {
                    sync(&p)?;
                }
                sync_dir(dir)
            }
        }
    }
}

/// Undo a write from its journal `file` (locked by the caller), then delete
/// the journal. Running it again after an interruption does the same.
fn rollback(file: &mut File, path: &Path, url: &str) -> Result<()> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io_err("reading journal", path))?;
    let records = parse(&bytes).map_err(|e| Error::InvalidFormat(format!("'{url}': {}", e.message())))?;
    let target = &records[0];
    let dir = target.key == KIND_DIR;
    let id_path = if dir { Path::new(url).join(INDEX) } else { PathBuf::from(url) };
    let stored: Vec<u64> = (0..2).filter_map(|i| u64_at(target.payload, 8 * i)).collect();
    match identity(&id_path) {
        // The frame it was written for is still there: undo.
        Ok(id) if id[..] == stored[..] => {
            if dir {
                undo_dir(Path::new(url), &records)?;
            } else {
                undo_file(&id_path, &records)?;
            }
        }
        // Replaced or removed since: the journal is stale.
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("reading", &id_path)(e)),
    }
    std::fs::remove_file(path).map_err(io_err("removing journal", path))?;
    sync_dir(parent(path))
}

fn undo_file(path: &Path, records: &[Record<'_>]) -> Result<()> {
    let mut f = OpenOptions::new().write(true).open(path).map_err(io_err("opening for rollback", path))?;
    let mut restore = || -> std::io::Result<()> {
        for r in records.iter().rev().filter(|r| r.tag == BYTES) {
            write_at(&mut f, r.key, r.payload)?;
        }
        if let Some(len) = records.iter().find(|r| r.tag == LENGTH) {
            f.set_len(len.key)?;
        }
        flush(&f)
    };
    restore().map_err(io_err("rolling back", path))
}

fn undo_dir(dir: &Path, records: &[Record<'_>]) -> Result<()> {
    let write = |p: &Path, bytes: &[u8]| -> Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
            .map_err(io_err("opening for rollback", p))?;
        f.write_all(bytes).and_then(|()| flush(&f)).map_err(io_err("rolling back", p))
    };
    let mut in_use = BTreeSet::new();
    for r in records.iter().rev() {
        match r.tag {
            INDEX_COPY => write(&dir.join(INDEX), r.payload)?,
            CHUNK_FILE => write(&chunk_file(dir, r.key as i64), r.payload)?,
            CHUNK_IDS => in_use.extend(r.payload.chunks_exact(8).filter_map(|b| u64_at(b, 0)).map(|i| i as i64)),
            _ => {}
        }
    }
    // Chunk files the original index does not use (new ones) go.
    for e in std::fs::read_dir(dir).map_err(io_err("listing", dir))?.flatten() {
        let name = e.file_name();
        if chunk_id(&name.to_string_lossy()).is_some_and(|id| !in_use.contains(&id)) {
            std::fs::remove_file(e.path()).map_err(io_err("removing", &e.path()))?;
        }
    }
    sync_dir(dir)
}

/// What [`open_locked`] found at a journal path.
enum Found {
    Nothing,
    /// A live writer holds it.
    Busy,
    /// It cannot be opened for writing.
    Unwritable(std::io::Error),
    /// Open and locked by us.
    Locked(File),
}

/// Open and lock the journal at `path`.
fn open_locked(path: &Path) -> Result<Found> {
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Ok(Found::Unwritable(e)),
    };
    if !try_lock(&file).map_err(io_err("locking journal", path))? {
        return Ok(Found::Busy);
    }
    // Its writer may have committed (deleted it) between our open and lock.
    let same = match (identity(path), file.metadata()) {
        (Ok(a), Ok(m)) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                a == [m.dev(), m.ino()]
            }
            #[cfg(not(unix))]
            {
                let _ = (a, m);
                true
            }
        }
        _ => false,
    };
    Ok(if same { Found::Locked(file) } else { Found::Nothing })
}

/// Bring the array at `urlpath` to a consistent state before it is opened:
/// finish or undo an interrupted directory replacement, remove a journal
/// that was never completed, and roll back an interrupted write.
///
/// # Errors
/// [`Error::InvalidStorage`] if another handle is writing the array or the
/// rollback has no write access; [`Error::InvalidFormat`] if the journal is
/// corrupt; [`Error::Io`] if restoring fails. The journal then stays.
pub fn recover(urlpath: &str) -> Result<()> {
    finish_replace(urlpath)?;
    // A journal that never got its name guards no change: remove it if we
    // can (a read-only one is left), unless its writer is still at it.
    let tmp = sibling(urlpath, TMP_SUFFIX);
    match open_locked(&tmp)? {
        Found::Locked(f) => {
            drop(f);
            std::fs::remove_file(&tmp).map_err(io_err("removing", &tmp))?;
        }
        Found::Busy => return Err(busy(urlpath)),
        Found::Nothing | Found::Unwritable(_) => {}
    }
    let path = journal_path(urlpath);
    match open_locked(&path)? {
        Found::Nothing => Ok(()),
        Found::Busy => Err(busy(urlpath)),
        Found::Unwritable(e) => Err(Error::storage(
            Some(urlpath),
            format!(
                "'{urlpath}' has an unfinished write to roll back, but its journal '{}' cannot be opened for writing: {e}",
                path.display()
            ),
        )),
        Found::Locked(mut f) => rollback(&mut f, &path, urlpath),
    }
}

/// Forget any journal of `urlpath` (its array is being removed or replaced).
///
/// # Errors
/// [`Error::Io`] if one exists and cannot be removed.
pub(crate) fn discard(urlpath: &str) -> Result<()> {
    for p in [journal_path(urlpath), sibling(urlpath, TMP_SUFFIX)] {
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(io_err("removing", &p)(e)),
            _ => {}
        }
    }
    let old = sibling(urlpath, OLD_SUFFIX);
    if old.exists() {
        schunk::remove_urlpath(&old.to_string_lossy())?;
    }
    Ok(())
}

/// Replace the sparse-frame directory `target` by `fresh`. A directory
/// cannot be renamed over another, so `target` is first renamed aside;
/// [`recover`] puts it back if the process dies before `fresh` takes its place.
///
/// # Errors
/// [`Error::Io`] if a rename fails; [`Error::Blosc`] if the old
/// directory cannot be removed.
pub(crate) fn replace_dir(fresh: &str, target: &str) -> Result<()> {
    let old = sibling(target, OLD_SUFFIX);
    if old.exists() {
        schunk::remove_urlpath(&old.to_string_lossy())?;
    }
    std::fs::rename(target, &old).map_err(io_err("renaming", Path::new(target)))?;
    std::fs::rename(fresh, target).map_err(io_err("renaming", Path::new(fresh)))?;
    sync_dir(parent(Path::new(trimmed(target))))?;
    schunk::remove_urlpath(&old.to_string_lossy())
}

/// Complete a [`replace_dir`] that was interrupted.
fn finish_replace(urlpath: &str) -> Result<()> {
    let old = sibling(urlpath, OLD_SUFFIX);
    if !old.exists() {
        return Ok(());
    }
    if Path::new(urlpath).exists() {
        schunk::remove_urlpath(&old.to_string_lossy())
    } else {
        std::fs::rename(&old, urlpath).map_err(io_err("restoring", &old))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::schunk::{repeat_chunk, CCtx, CParams};
    use crate::{Array, Config, Context, Params, StorageParams};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("caterva-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn ctx() -> Context {
        Context::new(Config::default()).unwrap()
    }

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// A 20x10 array of 4-byte items in 8x6 chunks, with a vlmetalayer.
    fn make(url: &str, contiguous: bool, seed: u64) -> Array {
        let params = Params { itemsize: 4, shape: vec![20, 10], dtype: None };
        let storage = StorageParams {
            chunkshape: vec![8, 6],
            blockshape: vec![4, 3],
            contiguous,
            urlpath: Some(url.to_owned()),
            ..Default::default()
        };
        let mut a = Array::from_buffer(&ctx(), &params, &storage, &noise(800, seed)).unwrap();
        a.vlmeta_add("note", b"first").unwrap();
        a
    }

    /// Every byte an array has on disk, by file.
    fn snapshot(url: &str) -> BTreeMap<String, Vec<u8>> {
        let p = Path::new(url);
        if p.is_file() {
            return BTreeMap::from([(String::new(), std::fs::read(p).unwrap())]);
        }
        std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect()
    }

    /// Start a write with every kind of change and die in the middle: the
    /// super-chunk is dropped with its journal open, as a killed process leaves it.
    fn crash_mid_write(url: &str) {
        let arr = Array::open(&ctx(), url).unwrap();
        let (chunk_nbytes, block_nbytes) = (arr.geometry().chunk_nbytes(), arr.geometry().block_nbytes());
        let mut sc = arr.into_schunk();
        let small = repeat_chunk(&CParams::default(), 4, block_nbytes, chunk_nbytes, &[1, 2, 3, 4]).unwrap();
        let big =
            CCtx::new(&CParams::default(), 4, block_nbytes, 1).unwrap().compress(&noise(chunk_nbytes, 9)).unwrap();
        sc.journal_arm();
        sc.update_chunk(0, &small).unwrap(); // fits: written over the old chunk
        sc.update_chunk(2, &big).unwrap();
        sc.append_chunk(&big).unwrap();
        sc.delete_chunk(1).unwrap();
        sc.reorder(&[4, 0, 1, 2, 3, 5]).unwrap();
        sc.vlmeta_put("note", b"a longer note than before", true, &CParams::default()).unwrap();
        drop(sc);
    }

    fn both(name: &str, test: impl Fn(&str, bool)) {
        let dir = scratch(name);
        for (file, contiguous) in [("a.b2frame", true), ("a.b2nd", false)] {
            test(&dir.join(file).to_string_lossy(), contiguous);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// What a reader sees of an array.
    fn content(url: &str) -> (Vec<u8>, Vec<u8>) {
        let a = Array::open(&ctx(), url).unwrap();
        (a.to_vec().unwrap(), a.vlmeta_get("note").unwrap())
    }

    #[test]
    fn rollback_restores_every_byte() {
        both("rollback", |url, contiguous| {
            make(url, contiguous, 1);
            let (before, seen) = (snapshot(url), content(url));
            crash_mid_write(url);
            assert_ne!(snapshot(url), before, "the write changed nothing");
            let journal = std::fs::read(journal_path(url)).unwrap();
            let records = parse(&journal).unwrap();
            // Contiguous: header, tail, and chunks 0 and 2, overwritten in place
            // (the new ones fit); sparse: the files of chunks 0, 2 and 1. The
            // first change's save goes in with the base records.
            let saves = |tag| records.iter().filter(|r| r.tag == tag).count();
            assert_eq!((saves(BYTES), saves(CHUNK_FILE)), if contiguous { (4, 0) } else { (0, 3) });
            let base_end = records.iter().position(|r| r.tag == BASE_END).unwrap();
            assert_eq!(records.len() - base_end - 1, if contiguous { 1 } else { 2 });
            recover(url).unwrap();
            assert_eq!(snapshot(url), before);
            assert!(!journal_path(url).exists());
            assert_eq!(content(url), seen);
        });
    }

    #[test]
    fn a_save_cut_short_is_ignored() {
        both("torn", |url, contiguous| {
            make(url, contiguous, 2);
            let before = snapshot(url);
            crash_mid_write(url);
            let cut = record(CHUNK_FILE, 3, &[7u8; 100]);
            let mut f = OpenOptions::new().append(true).open(journal_path(url)).unwrap();
            f.write_all(&cut[..60]).unwrap();
            drop(f);
            recover(url).unwrap();
            assert_eq!(snapshot(url), before);
        });
    }

    #[test]
    fn a_corrupt_journal_is_refused() {
        both("corrupt", |url, contiguous| {
            make(url, contiguous, 3);
            crash_mid_write(url);
            let path = journal_path(url);
            let good = std::fs::read(&path).unwrap();
            let mut bad = good.clone();
            bad[MAGIC.len() + 20] ^= 0x55;
            std::fs::write(&path, &bad).unwrap();
            let changed = snapshot(url);
            let e = recover(url).unwrap_err();
            assert!(matches!(e, Error::InvalidFormat(_)), "{e}");
            assert!(Array::open(&ctx(), url).is_err());
            assert_eq!(snapshot(url), changed, "a refused rollback must change nothing");
            std::fs::write(&path, &good).unwrap();
            recover(url).unwrap();
            assert!(Array::open(&ctx(), url).is_ok());
        });
    }

    #[test]
    fn a_leftover_temporary_journal_is_removed() {
        both("tmp", |url, contiguous| {
            make(url, contiguous, 3);
            let before = snapshot(url);
            let tmp = sibling(url, TMP_SUFFIX);
            std::fs::write(&tmp, b"CTVJRNL1 half written").unwrap();
            let a = Array::open(&ctx(), url).unwrap();
            assert!(!tmp.exists());
            assert_eq!(a.vlmeta_get("note").unwrap(), b"first");
            drop(a);
            assert_eq!(snapshot(url), before);
        });
    }

    #[test]
    fn a_journal_of_a_replaced_array_is_dropped() {
        both("stale", |url, contiguous| {
            make(url, contiguous, 4);
            crash_mid_write(url);
            let kept = std::fs::read(journal_path(url)).unwrap();
            // A new array takes the path (made beside it first, so it gets other inodes).
            let other = format!("{url}.new");
            make(&other, contiguous, 5);
            Array::remove(url).unwrap();
            std::fs::rename(&other, url).unwrap();
            let fresh = snapshot(url);
            std::fs::write(journal_path(url), kept).unwrap();
            recover(url).unwrap();
            assert!(!journal_path(url).exists());
            assert_eq!(snapshot(url), fresh);
        });
    }

    #[test]
    fn a_live_write_keeps_other_handles_out() {
        both("busy", |url, contiguous| {
            make(url, contiguous, 6);
            let mut sc = SChunk::open(url).unwrap();
            sc.journal_arm();
            sc.vlmeta_put("note", b"second", true, &CParams::default()).unwrap();
            let e = Array::open(&ctx(), url).unwrap_err();
            assert!(matches!(e, Error::InvalidStorage { reason: ref m, .. } if m.contains("another handle")), "{e}");
            sc.journal_commit().unwrap();
            drop(sc);
            assert_eq!(Array::open(&ctx(), url).unwrap().vlmeta_get("note").unwrap(), b"second");
        });
    }

    #[test]
    fn abort_undoes_a_failed_write() {
        both("abort", |url, contiguous| {
            let arr = make(url, contiguous, 7);
            let before = snapshot(url);
            let mut sc = arr.into_schunk();
            sc.journal_arm();
            let first = sc.chunk(0).unwrap().bytes().to_vec();
            sc.append_chunk(&first).unwrap();
            sc.update_chunk(1, &first).unwrap();
            assert!(sc.journal_abort().unwrap());
            assert!(!sc.journal_abort().unwrap(), "nothing left to undo");
            drop(sc);
            assert_eq!(snapshot(url), before);
        });
    }

    #[test]
    fn an_unreadable_journal_is_a_clear_error() {
        both("unreadable", |url, contiguous| {
            make(url, contiguous, 8);
            std::fs::create_dir(journal_path(url)).unwrap();
            let e = recover(url).unwrap_err();
            assert!(
                matches!(e, Error::InvalidStorage { reason: ref m, .. } if m.contains("cannot be opened for writing")),
                "{e}"
            );
            std::fs::remove_dir(journal_path(url)).unwrap();
        });
    }

    #[test]
    fn an_interrupted_directory_replace_is_completed() {
        let dir = scratch("replace");
        let url = dir.join("a.b2nd").to_string_lossy().into_owned();
        let old = sibling(&url, OLD_SUFFIX);
        make(&url, false, 9);
        let before = snapshot(&url);
        // Killed after moving the old directory aside, before the new one took its place.
        std::fs::rename(&url, &old).unwrap();
        recover(&url).unwrap();
        assert_eq!(snapshot(&url), before);
        assert!(!old.exists());
        // Killed after the new one took its place, before the old one was removed.
        make(old.to_str().unwrap(), false, 10);
        recover(&url).unwrap();
        assert_eq!(snapshot(&url), before);
        assert!(!old.exists());
        // The whole replacement, as save() and squeeze() use it.
        let fresh = dir.join("fresh.b2nd").to_string_lossy().into_owned();
        make(&fresh, false, 11);
        let new = snapshot(&fresh);
        replace_dir(&fresh, &url).unwrap();
        assert_eq!(snapshot(&url), new);
        assert!(!old.exists() && !Path::new(&fresh).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn checksums_catch_changes() {
        let r = record(BYTES, 5, b"0123456789abcdef!");
        let (ok, next) = read_record(&r, 0).unwrap();
        assert_eq!((ok.tag, ok.key, ok.payload, next), (BYTES, 5, &b"0123456789abcdef!"[..], r.len()));
        for i in 0..r.len() {
            let mut bad = r.clone();
            bad[i] ^= 1;
            assert!(read_record(&bad, 0).is_none(), "flipping byte {i} went unnoticed");
        }
        assert!(read_record(&r[..r.len() - 1], 0).is_none());
    }
}
