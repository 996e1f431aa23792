//! Reading the chunks of a frame on disk ourselves: positioned reads,
//! without the super-chunk's lock, and only the blocks a read needs.
//!
//! c-blosc2 fetches a whole chunk from a file under the lock that
//! serialises every call on a super-chunk, so reads of a file array from
//! many threads took turns, and a plane that needs one block in ten read
//! all ten. Here a store on disk knows where its chunks are (the offsets
//! index and, for a contiguous frame, the header length: a [`ChunkPlaces`],
//! read once after each open or write), and a read of chunk `n`
//!
//! 1. reads the chunk's 32-byte header and its block starts (`bstarts`) in
//!    one positioned read;
//! 2. when the chunk is a plain one (no dictionary, no memcpy, not special
//!    or lazy) made of the blocks the caller expects, reads only the
//!    compressed spans of the blocks the caller wants (a block's span runs
//!    from its start to the next start above it, or to the chunk's end:
//!    c-blosc2 may write blocks out of order), merging neighbours into one
//!    read, into a buffer of the chunk's size whose other bytes stay zero;
//!    Blosc's decompression with a mask (`maskout`) then reads those blocks
//!    only;
//! 3. otherwise reads the whole chunk.
//!
//! Where the chunks live on another machine (an object store, a web
//! server: each read is a round trip), a read of several chunks fetches
//! them at once ([`prefetch`]); a read of most of a chunk's blocks fetches
//! the whole chunk in one request instead of step 1 then 2; the header and
//! block starts of step 1 are kept per [`ChunkPlaces`], so that a later read of
//! the chunk is one request; and a chunk's spans are merged more eagerly
//! ([`NEAR`], [`MAX_RANGES`]).
//!
//! A store that keeps checksums reads whole chunks through c-blosc2: a
//! checksum covers every byte of a chunk. Special chunks (their offsets say
//! so) are made by c-blosc2 from the index alone.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::frame_check::CheckedRead;
use super::location::{self, FrameSite, Location, Object, Range, Stamp};
use super::{frame, frame_check};
use crate::blosc2::chunk_header::{
    block_end, block_starts, typesize_fits, ChunkHeader, HEADER_LEN as HEADER, POS_CBYTES,
};
use crate::buffer;
use crate::error::{Error, Result};

/// The most chunks whose offsets a [`ChunkPlaces`] keeps (8 MiB of them).
pub(super) const MAX_PLACED: i64 = 1 << 20;

/// The most bytes of chunk headers and block starts remote [`ChunkPlaces`]
/// keep ([`ChunkPlaces::heads`]): 16 MiB, those of 58 000 chunks of 64 blocks.
const MAX_HEADS: usize = 16 << 20;

/// Ranges of a remote chunk closer than this are fetched as one (two or
/// three compressed blocks of 16 KiB).
const NEAR: usize = 32 << 10;

/// The most ranges of a remote chunk a read fetches; more (after merging
/// those [`NEAR`] one another) are fetched as one.
const MAX_RANGES: usize = 2;

/// Chunks of a remote frame fetched at once by [`prefetch`], at most.
pub(crate) const FETCHERS: usize = 32;

/// Where a frame's chunks lie.
#[derive(Debug)]
pub(super) struct ChunkPlaces {
    /// Where the frame lives, and its key there: the frame object
    /// (contiguous) or the prefix of the index and chunk objects (sparse).
    location: Arc<dyn Location>,
    key: String,
    /// How the frame object is spelt in messages (contiguous frames).
    frame_url: String,
    /// For a contiguous frame, where its data section starts (chunk offsets count from there).
    header_len: Option<u64>,
    /// For a contiguous frame, where its data section ends: no chunk runs past it.
    data_end: u64,
    /// Per chunk: its offset (contiguous) or chunk file number (sparse);
    /// negative for special chunks.
    offsets: Vec<i64>,
    /// The frame object, opened once (contiguous frames): a read costs no
    /// `open`. It is the object these offsets were read from; the chunk places
    /// are rebuilt after every write of this handle, and a handle whose
    /// array another handle changed is refused before it writes.
    frame: Option<Arc<dyn Object>>,
    /// Why the offsets cannot be right, if they cannot: every read of a
    /// stored chunk fails with it.
    damage: Option<String>,
    /// Whether the chunks live on another machine (no path on this one):
    /// each read is a round trip there. A read of most of a chunk's blocks
    /// then fetches the whole chunk in one request, the header and block
    /// starts read are kept in `heads`, and a read of several chunks
    /// fetches them at once ([`prefetch`]).
    remote: bool,
    /// Per chunk read, its header and block starts (remote chunk places, up
    /// to [`MAX_HEADS`] bytes): a later read of some of its blocks is one
    /// request, not two. Chunk places are of one version of the frame.
    heads: Mutex<Heads>,
    /// Chunks [`prefetch`] fetched for the read under way, which
    /// [`read_chunk`] takes.
    staged: Mutex<HashMap<i64, Staged>>,
    /// The version of a sparse frame's index these offsets were read from,
    /// as a read cache names it: chunk objects are cached as of it.
    within: Option<Stamp>,
}

#[derive(Debug, Default)]
struct Heads {
    by_chunk: HashMap<i64, Box<[u8]>>,
    bytes: usize,
}

/// A chunk fetched ahead: `bytes[..len]`, holding the blocks `skip` leaves
/// (all of them for `None`).
#[derive(Debug)]
struct Staged {
    skip: Option<Vec<bool>>,
    bytes: Vec<u8>,
    len: usize,
}

impl Staged {
    /// Whether it holds every block `want` asks for.
    fn covers(&self, want: &Want<'_>) -> bool {
        match (&self.skip, want.skip) {
            (None, _) => true,
            (Some(have), None) => !have.contains(&true),
            (Some(have), Some(want)) => have.len() == want.len() && have.iter().zip(want).all(|(h, w)| !h || *w),
        }
    }
}

impl ChunkPlaces {
    /// The chunk places of the frame at `site` with chunk `offsets`; a
    /// contiguous frame starts at byte `site.offset` of its object (0
    /// unless it lies inside a larger one), and its chunk offsets count
    /// from its own data section.
    ///
    /// With `checked_read` (what the frame check read of the frame object, and that
    /// object), the frame's header comes from there and the object is that
    /// version: nothing is asked of the storage.
    pub(super) fn new(site: &FrameSite, offsets: Vec<i64>, checked_read: Option<&CheckedRead>) -> Result<Self> {
        let (location, key, contiguous) = (site.location.clone(), site.key.clone(), site.contiguous);
        let at = site.offset.unwrap_or(0);
        let urlpath = site.url();
        let mut frame = None;
        let mut data_end = 0;
        let header_len = if contiguous {
            let o = match checked_read {
                Some(k) => k.object.clone(),
                None => location.open(&key).map_err(|e| Error::io("opening", Some(Path::new(&urlpath)), &e))?,
            };
            let len = o.len().saturating_sub(at);
            let want = frame::HEADER_MINLEN.min(len as usize);
            let head = match checked_read.and_then(|k| k.served.bytes(at, want)) {
                Some(head) => head,
                None => o.read_vec(at, want).map_err(|e| Error::io("reading", Some(Path::new(&urlpath)), &e))?,
            };
            let (header_len, end) = frame::data_section(&head, len)
                .ok_or_else(|| Error::InvalidFormat(format!("'{urlpath}': the frame header is damaged")))?;
            frame = Some(o);
            data_end = at + end;
            Some(at + header_len)
        } else {
            None
        };
        let mut stored: Vec<i64> = offsets.iter().copied().filter(|&o| o >= 0).collect();
        // Usually in order already (appends go at the end): then no sort is needed.
        if !stored.windows(2).all(|w| w[0] < w[1]) {
            stored.sort_unstable();
        }
        let damage = frame_check::first_repeated(&stored).map(|o| {
            let kind = if contiguous { "offset" } else { "chunk file number" };
            format!("'{urlpath}': two chunks of the offsets index have {kind} {o}; the index is damaged")
        });
        let remote = location.local_path(&key).is_none();
        let within = if contiguous { None } else { checked_read.and_then(|k| k.object.stamp().cloned()) };
        Ok(ChunkPlaces {
            location,
            key,
            frame_url: urlpath,
            header_len,
            data_end,
            offsets,
            frame,
            damage,
            remote,
            heads: Mutex::default(),
            staged: Mutex::default(),
            within,
        })
    }

    /// Whether each read is a round trip to another machine.
    pub(super) fn is_remote(&self) -> bool {
        self.remote
    }

    /// The kept header and block starts of chunk `n`, if `head_len` long.
    fn head(&self, n: i64, head_len: usize) -> Option<Box<[u8]>> {
        let heads = self.heads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        heads.by_chunk.get(&n).filter(|h| h.len() == head_len).cloned()
    }

    /// Keep `head` as chunk `n`'s header and block starts, room allowing.
    fn keep_head(&self, n: i64, head: &[u8]) {
        let mut heads = self.heads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if heads.bytes + head.len() <= MAX_HEADS && !heads.by_chunk.contains_key(&n) {
            heads.bytes += head.len();
            heads.by_chunk.insert(n, head.into());
        }
    }

    /// Take chunk `n` as [`prefetch`] fetched it, if it holds what `want` asks.
    fn take_staged(&self, n: i64, want: &Want<'_>) -> Option<Staged> {
        let mut staged = self.staged.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !staged.get(&n)?.covers(want) {
            return None;
        }
        staged.remove(&n)
    }

    /// Forget what [`prefetch`] fetched of `chunks` and no read took.
    pub(super) fn unstage(&self, chunks: impl Iterator<Item = i64>) {
        let mut staged = self.staged.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for n in chunks {
            staged.remove(&n);
        }
    }

    /// Whether chunk `n` is a special one (c-blosc2 makes it from the index).
    pub(super) fn is_special(&self, n: i64) -> bool {
        usize::try_from(n).ok().and_then(|i| self.offsets.get(i)).is_some_and(|&o| o < 0)
    }

    /// Where chunk `n` lies: the name of its object (`None`: the frame
    /// object) and the offset there; `None` for a special chunk.
    fn locate(&self, n: i64) -> Option<(Option<String>, u64)> {
        let off = *self.offsets.get(usize::try_from(n).ok()?)?;
        if off < 0 {
            return None;
        }
        Some(match self.header_len {
            Some(h) => (None, h + off as u64),
            None => (Some(location::join(&self.key, &frame::chunk_name(off))), 0),
        })
    }
}

/// What a reader expects of a chunk, and which blocks it wants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Want<'m> {
    /// Uncompressed bytes of a chunk of the array.
    pub(crate) nbytes: usize,
    /// Bytes of an item (the super-chunk's typesize).
    pub(crate) typesize: usize,
    /// Bytes of a block of the array.
    pub(crate) blocksize: usize,
    /// Per block, whether it may be skipped (Blosc's `maskout`); `None`: all.
    pub(crate) skip: Option<&'m [bool]>,
}

/// Read chunk `n` as placed by `p` into `buf`, with at least the blocks
/// `want` asks for, and return its length (the chunk is `buf[..len]`);
/// `Ok(None)` for a special chunk (c-blosc2 makes those).
///
/// `buf` is the caller's to keep between reads: it only grows (zero-filled
/// when it does), so a read touches no fresh memory and fills only what it
/// reads. Bytes of skipped blocks are left as an earlier read put them:
/// Blosc's `maskout` never reads them.
///
/// # Errors
/// [`Error::Corrupt`] naming chunk `n` if its bytes are not a sound chunk
/// (its file missing, cut short or not a regular file, its header damaged):
/// the array opened, so this is damage found by a read, which the C API
/// reports as `CATERVA_ERR_BLOSC_FAILED` as the original did for a chunk
/// c-blosc2 could not read. [`Error::Io`] if the file cannot be read.
pub(super) fn read_chunk(p: &ChunkPlaces, n: i64, want: &Want<'_>, buf: &mut Vec<u8>) -> Result<Option<usize>> {
    if p.remote {
        if let Some(s) = p.take_staged(n, want) {
            *buf = s.bytes;
            return Ok(Some(s.len));
        }
    }
    read_chunk_unchecked(p, n, want, buf).map_err(|e| match e {
        Error::InvalidFormat(reason) => Error::corrupt(n, reason),
        e => e,
    })
}

fn read_chunk_unchecked(p: &ChunkPlaces, n: i64, want: &Want<'_>, buf: &mut Vec<u8>) -> Result<Option<usize>> {
    let Some((name, at)) = p.locate(n) else { return Ok(None) };
    if let Some(why) = &p.damage {
        return Err(Error::InvalidFormat(why.clone()));
    }
    let url = match &name {
        Some(name) => Cow::Owned(p.location.url(name)),
        None => Cow::Borrowed(p.frame_url.as_str()),
    };
    let path = url.as_ref();
    let io = |what: &'static str| move |e: std::io::Error| Error::io(what, Some(Path::new(path)), &e);
    // A chunk file holds exactly its chunk: its length is the chunk's room.
    let opened;
    let (f, file_len): (&dyn Object, _) = match &p.frame {
        Some(f) if p.header_len.is_some() => (f.as_ref(), None),
        _ => {
            let name = name.as_deref().unwrap_or(&p.key);
            opened = open_chunk_file(p.location.as_ref(), name, path, n, p.within.as_ref())?;
            (opened.as_ref(), Some(opened.len()))
        }
    };
    let nblocks = if want.blocksize == 0 { 0 } else { want.nbytes.div_ceil(want.blocksize) };
    // The header and, if the chunk is as expected, its block starts: one
    // read. Where a read is a round trip and most blocks are wanted, the
    // whole chunk at once instead: every chunk is at most `room` long.
    let head_len = HEADER + 4 * nblocks;
    let room = want.nbytes + HEADER;
    let most = want.skip.map_or(true, |s| s.iter().filter(|&&k| !k).count() * 2 >= s.len());
    let kept_head = if p.remote && !most { p.head(n, head_len) } else { None };
    let first = if p.remote && most {
        let avail = file_len.unwrap_or_else(|| p.data_end.saturating_sub(at));
        room.max(head_len).min(usize::try_from(avail).unwrap_or(usize::MAX))
    } else {
        head_len
    };
    grow(buf, first, 0, n)?;
    let got = match &kept_head {
        Some(head) => {
            buf[..head_len].copy_from_slice(head);
            head_len
        }
        None => read_upto(f, &mut buf[..first], at).map_err(io("reading"))?,
    };
    if got < HEADER {
        return Err(corrupt(path, n, "is cut short"));
    }
    // Opening did not read the chunk headers (frame_check::Chunks::Later):
    // this header is checked here, before anything decompresses the chunk.
    let avail = file_len.unwrap_or_else(|| p.data_end.saturating_sub(at));
    let mut more = |o: u64, k: usize| {
        let mut v = vec![0u8; k];
        let got = read_upto(f, &mut v, at + o).map_err(io("reading"))?;
        v.truncate(got);
        Ok(v)
    };
    frame_check::check_read_chunk(path, n, &buf[..HEADER], at, avail, &mut more)?;
    // Checked: an extended header of non-negative sizes.
    let ch = ChunkHeader::parse(&buf[..HEADER]).ok_or_else(|| corrupt(path, n, "is cut short"))?;
    let (nbytes, blocksize, cbytes) = (ch.nbytes as usize, ch.blocksize as usize, ch.cbytes as usize);
    // (An object opened without learning its length, `u64::MAX`, is not
    // measured: a chunk that claims more than it holds fails its reads.)
    if file_len.is_some_and(|l| l != u64::MAX && l != cbytes as u64) {
        return Err(corrupt(path, n, &format!("holds {cbytes} bytes, the file {}", file_len.unwrap_or(0))));
    }
    // A chunk object read whole: its length is known now.
    if name.is_some() && first > head_len && got > cbytes {
        return Err(corrupt(path, n, &format!("holds {cbytes} bytes, the file more")));
    }
    // Blosc stores a chunk that would not compress as a copy: no chunk
    // is longer than its items plus the header. A longer one, or one of
    // another size or item size than the array's chunks, is damaged (and
    // allocates nothing here).
    if cbytes < HEADER || cbytes > nbytes + HEADER {
        return Err(corrupt(path, n, "has a damaged header"));
    }
    if nbytes != want.nbytes || !typesize_fits(want.typesize, usize::from(ch.typesize)) {
        let (typesize, want_nbytes, want_typesize) = (ch.typesize, want.nbytes, want.typesize);
        return Err(corrupt(
            path,
            n,
            &format!(
                "holds {nbytes} bytes of {typesize}-byte items; the array's chunks hold {want_nbytes} of \
                 {want_typesize}-byte items"
            ),
        ));
    }
    // Plain chunk: blocks with starts (`ChunkHeader::is_plain`).
    let plain = ch.is_plain();
    let as_expected = plain && nbytes == want.nbytes && blocksize == want.blocksize && head_len <= cbytes;
    if p.remote && kept_head.is_none() && as_expected && got >= head_len {
        p.keep_head(n, &buf[..head_len]);
    }
    let partial = match want.skip {
        Some(skip) if as_expected && skip.len() == nblocks => got == head_len && first == head_len,
        _ => false,
    };
    if !partial {
        // Room for the largest chunk of this size at once (no chunk is
        // longer, see above), so that reading chunk after chunk allocates once.
        if got >= cbytes {
            return Ok(Some(cbytes));
        }
        grow(buf, room, 0, n)?;
        let got = read_upto(f, &mut buf[..cbytes], at).map_err(io("reading"))?;
        if got < cbytes {
            return Err(corrupt(path, n, "is cut short"));
        }
        return Ok(Some(cbytes));
    }
    let skip = want.skip.unwrap_or_default();
    let starts = block_starts(&buf[..head_len], nblocks);
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        if skip[i] {
            continue;
        }
        if s < head_len || s > cbytes {
            return Err(corrupt(path, n, &format!("has a block start ({s}) outside the chunk")));
        }
        let end = block_end(&sorted, s, cbytes).min(cbytes);
        spans.push((s, end));
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    // Where each range is a request: ranges less than NEAR apart merged,
    // and a chunk wanting more than MAX_RANGES of them fetched as one range
    // over them: a request costs more than the bytes between (a plane
    // across a chunk's blocks may want one run of blocks in four).
    let near = if p.remote { NEAR } else { 0 };
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 + near => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    if p.remote && merged.len() > MAX_RANGES {
        let (first, last) = (merged[0].0, merged[merged.len() - 1].1);
        merged = vec![(first, last)];
    }
    // The wanted blocks' streams are packed one after another behind the
    // header and block starts, whose entries move with them (those of the
    // skipped blocks become 0, a start c-blosc2 refuses should it ever read
    // one), and the header gives the chunk's packed length: the buffer holds
    // only what the read needs, so a small read of a chunk faults in no
    // fresh pages beyond those (a chunk-sized buffer would, read after read).
    let packed = head_len + merged.iter().map(|(s, e)| e - s).sum::<usize>();
    grow(buf, packed, head_len, n)?;
    // Every span in one request: a backend may fetch them together.
    let mut moved = Vec::with_capacity(merged.len());
    let mut to = head_len;
    for &(s, e) in &merged {
        moved.push((s, e, to));
        to += e - s;
    }
    let mut rest = &mut buf[head_len..packed];
    let mut ranges = Vec::with_capacity(merged.len());
    for &(s, e) in &merged {
        let (piece, tail) = rest.split_at_mut(e - s);
        ranges.push(Range { at: at + s as u64, buf: piece });
        rest = tail;
    }
    count_read((packed - head_len) as u64);
    f.read_ranges(&mut ranges).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => corrupt(path, n, "is cut short"),
        _ => Error::io("reading", Some(Path::new(path)), &e),
    })?;
    for (i, &s) in starts.iter().enumerate() {
        let new = if skip[i] {
            0
        } else {
            // Every wanted start lies in one of the merged spans.
            let k = moved.partition_point(|&(ms, _, _)| ms <= s) - 1;
            let (ms, me, mt) = moved[k];
            debug_assert!(ms <= s && s <= me);
            u32::try_from(mt + (s - ms)).map_err(|_| corrupt(path, n, "is too large"))?
        };
        buf[HEADER + 4 * i..HEADER + 4 * i + 4].copy_from_slice(&new.to_le_bytes());
    }
    let len = u32::try_from(packed).map_err(|_| corrupt(path, n, "is too large"))?;
    buf[POS_CBYTES..POS_CBYTES + 4].copy_from_slice(&len.to_le_bytes());
    Ok(Some(packed))
}

/// Fetch the chunks `wants` names (each with the blocks its [`Want`] asks
/// for) from remote chunk places, [`FETCHERS`] at a time, for the reads
/// that follow: [`read_chunk`] takes what it finds fetched. A read of many
/// chunks then waits a round trip or two, not two per chunk. A chunk that
/// fails is left for its read to fail on, and report.
pub(super) fn prefetch(p: &ChunkPlaces, wants: &[(i64, Want<'_>)]) {
    if !p.remote || wants.len() < 2 {
        return;
    }
    let next = AtomicUsize::new(0);
    let fetch = || loop {
        let Some((n, want)) = wants.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
        let mut bytes = Vec::new();
        if let Ok(Some(len)) = read_chunk_unchecked(p, *n, want, &mut bytes) {
            let staged = Staged { skip: want.skip.map(<[bool]>::to_vec), bytes, len };
            p.staged.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(*n, staged);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..wants.len().min(FETCHERS) {
            s.spawn(fetch);
        }
        fetch();
    });
}

/// Open a sparse frame's chunk object `name` (spelt `url`) for chunk `n`,
/// named by the index version `within`. A missing one, or one that is not
/// a regular file, is a damaged frame: the index names it.
fn open_chunk_file(
    location: &dyn Location,
    name: &str,
    url: &str,
    n: i64,
    within: Option<&Stamp>,
) -> Result<Arc<dyn Object>> {
    // Chunk objects at versioned locations are never written over.
    let opened = match location.protocol() {
        super::location::Protocol::Versioned => location.open_immutable(name, within),
        super::location::Protocol::Journaled => location.open(name),
    };
    opened.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => corrupt(url, n, "is missing"),
        std::io::ErrorKind::InvalidInput => corrupt(url, n, "is not a regular file"),
        _ => Error::io("opening", Some(Path::new(url)), &e),
    })
}

/// Make `buf` at least `len` bytes long (new bytes zero), or fail with
/// [`Error::Io`] (out of memory) naming chunk `n`.
///
/// Only the first `keep` bytes are kept when `buf` must be reallocated: a
/// new buffer comes zeroed from the allocator ([`buffer::zeroed_vec`]), so
/// a partial read faults in only the pages of the blocks it reads.
fn grow(buf: &mut Vec<u8>, len: usize, keep: usize, n: i64) -> Result<()> {
    if buf.len() >= len {
        return Ok(());
    }
    if buf.capacity() >= len {
        buf.resize(len, 0);
        return Ok(());
    }
    let mut v = buffer::zeroed_vec(len).map_err(|_| {
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        Error::io(&format!("allocating chunk {n} ({len} bytes)"), None, &oom)
    })?;
    let keep = keep.min(buf.len());
    v[..keep].copy_from_slice(&buf[..keep]);
    *buf = v;
    Ok(())
}

fn corrupt(url: &str, n: i64, what: &str) -> Error {
    Error::InvalidFormat(format!("chunk {n} in '{url}' {what}"))
}

/// Bytes read from files by [`read_chunk`] (for the tests).
#[cfg(any(test, feature = "testing"))]
pub(crate) static BYTES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Count `n` bytes read from storage (for the tests).
#[inline]
fn count_read(_n: u64) {
    #[cfg(any(test, feature = "testing"))]
    BYTES_READ.fetch_add(_n, std::sync::atomic::Ordering::Relaxed);
}

/// Fill `buf` from `at`, stopping early only at the end of the object.
fn read_upto(f: &dyn Object, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    count_read(buf.len() as u64);
    f.read_upto(at, buf)
}

#[cfg(test)]
mod tests {
    use super::Want;
    use crate::blosc2::{Chunk, DCtx};
    use crate::{Array, Config, Context, Params, StorageParams};

    /// A partial read packs the wanted blocks behind the header: fewer bytes
    /// than the stored chunk, and the wanted blocks decode to the same bytes
    /// as from the whole chunk (the blocks' starts were moved with them).
    #[test]
    fn partial_reads_pack_the_wanted_blocks() {
        let dir = std::env::temp_dir().join(format!("caterva-reader-pack-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let ctx = Context::new(Config::default()).unwrap();
        let n = 40 * 40 * 40usize;
        let data: Vec<u8> =
            (0..n).flat_map(|i| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40).to_le_bytes()).collect();
        let params = Params { itemsize: 8, shape: vec![40, 40, 40], dtype: None };
        let storage = StorageParams {
            chunkshape: vec![20, 20, 20],
            blockshape: vec![5, 10, 10],
            contiguous: true,
            urlpath: Some(dir.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let arr = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
        let (nbytes, blocksize) = (20 * 20 * 20 * 8, 5 * 10 * 10 * 8);
        let nblocks = nbytes / blocksize;
        // Blocks 1, 2 and 9 of chunk 3: two of them adjacent.
        let skip: Vec<bool> = (0..nblocks).map(|i| ![1, 2, 9].contains(&i)).collect();
        let (mut whole_buf, mut part_buf) = (Vec::new(), Vec::new());
        let all = Want { nbytes, typesize: 8, blocksize, skip: None };
        let whole = arr.store().chunk_for(3, &all, &mut whole_buf).unwrap().bytes().to_vec();
        let some = Want { skip: Some(&skip), ..all };
        let part = arr.store().chunk_for(3, &some, &mut part_buf).unwrap().bytes().to_vec();
        assert!(part.len() < whole.len() / 2, "{} of {} bytes", part.len(), whole.len());
        let (mut a, mut b) = (vec![0u8; nbytes], vec![0xa5u8; nbytes]);
        let mut dctx = DCtx::new(1).unwrap();
        dctx.decompress(&Chunk::from_slice(&whole), &mut a, None).unwrap();
        dctx.decompress(&Chunk::from_slice(&part), &mut b, Some(&skip)).unwrap();
        for i in [1, 2, 9] {
            assert_eq!(a[i * blocksize..(i + 1) * blocksize], b[i * blocksize..(i + 1) * blocksize], "block {i}");
        }
        // A skipped block is not in the packed chunk: decoding it fails, never reads other bytes.
        let mut c = vec![0u8; nbytes];
        assert!(dctx.decompress(&Chunk::from_slice(&part), &mut c, None).is_err());
        drop(arr);
        let _ = std::fs::remove_file(&dir);
    }
}
