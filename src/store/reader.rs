//! Reading the chunks of a frame on disk ourselves: positioned reads,
//! without the super-chunk's lock, and only the blocks a read needs.
//!
//! c-blosc2 fetches a whole chunk from a file under the lock that
//! serialises every call on a super-chunk, so reads of a file array from
//! many threads took turns, and a plane that needs one block in ten read
//! all ten. Here a store on disk knows where its chunks are (the offsets
//! index and, for a contiguous frame, the header length: a [`Placement`],
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
//! A store that keeps checksums reads whole chunks through c-blosc2: a
//! checksum covers every byte of a chunk. Special chunks (their offsets say
//! so) are made by c-blosc2 from the index alone.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use super::chunk_header::{block_end, block_starts, typesize_fits, ChunkHeader, HEADER_LEN as HEADER, POS_CBYTES};
use super::frame_check::Kept;
use super::location::{self, Location, Object, Range, Site};
use super::{frame, frame_check};
use crate::buffer;
use crate::error::{Error, Result};

/// The most chunks whose offsets a [`Placement`] keeps (8 MiB of them).
pub(super) const MAX_PLACED: i64 = 1 << 20;

/// Where a frame's chunks lie.
#[derive(Debug)]
pub(super) struct Placement {
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
    /// `open`. It is the object these offsets were read from; the placement
    /// is rebuilt after every write of this handle, and a handle whose
    /// array another handle changed is refused before it writes.
    frame: Option<Arc<dyn Object>>,
    /// Why the offsets cannot be right, if they cannot: every read of a
    /// stored chunk fails with it.
    damage: Option<String>,
}

impl Placement {
    /// The placement of the frame at `site` with chunk `offsets`; a
    /// contiguous frame starts at byte `site.offset` of its object (0
    /// unless it lies inside a larger one), and its chunk offsets count
    /// from its own data section.
    ///
    /// With `kept` (what the frame check read of the frame object, and that
    /// object), the frame's header comes from there and the object is that
    /// version: nothing is asked of the storage.
    pub(super) fn new(site: &Site, offsets: Vec<i64>, kept: Option<&Kept>) -> Result<Self> {
        let (location, key, contiguous) = (site.location.clone(), site.key.clone(), site.contiguous);
        let at = site.offset.unwrap_or(0);
        let urlpath = site.url();
        let mut frame = None;
        let mut data_end = 0;
        let header_len = if contiguous {
            let o = match kept {
                Some(k) => k.object.clone(),
                None => location.open(&key).map_err(|e| Error::io("opening", Some(Path::new(&urlpath)), &e))?,
            };
            let len = o.len().saturating_sub(at);
            let want = frame::HEADER_MINLEN.min(len as usize);
            let head = match kept.and_then(|k| k.served.bytes(at, want)) {
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
        Ok(Placement { location, key, frame_url: urlpath, header_len, data_end, offsets, frame, damage })
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
pub(super) fn read_chunk(p: &Placement, n: i64, want: &Want<'_>, buf: &mut Vec<u8>) -> Result<Option<usize>> {
    read_chunk_unchecked(p, n, want, buf).map_err(|e| match e {
        Error::InvalidFormat(reason) => Error::corrupt(n, reason),
        e => e,
    })
}

fn read_chunk_unchecked(p: &Placement, n: i64, want: &Want<'_>, buf: &mut Vec<u8>) -> Result<Option<usize>> {
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
            opened = open_chunk_file(p.location.as_ref(), name, path, n)?;
            (opened.as_ref(), Some(opened.len()))
        }
    };
    let nblocks = if want.blocksize == 0 { 0 } else { want.nbytes.div_ceil(want.blocksize) };
    // The header and, if the chunk is as expected, its block starts: one read.
    let head_len = HEADER + 4 * nblocks;
    grow(buf, head_len, 0, n)?;
    let got = read_upto(f, &mut buf[..head_len], at).map_err(io("reading"))?;
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
    let partial = match want.skip {
        Some(skip) if plain && nbytes == want.nbytes && blocksize == want.blocksize && skip.len() == nblocks => {
            head_len <= cbytes && got == head_len
        }
        _ => false,
    };
    // Room for the largest chunk of this size at once (no chunk is longer,
    // see above), so that reading chunk after chunk allocates once.
    let room = want.nbytes + HEADER;
    if !partial {
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
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
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

/// Open a sparse frame's chunk object `name` (spelt `url`) for chunk `n`.
/// A missing one, or one that is not a regular file, is a damaged frame:
/// the index names it.
fn open_chunk_file(location: &dyn Location, name: &str, url: &str, n: i64) -> Result<Arc<dyn Object>> {
    // Chunk objects at versioned locations are never written over.
    let opened = match location.protocol() {
        super::location::Protocol::Versioned => location.open_immutable(name),
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
    use super::super::blosc::{Chunk, DCtx};
    use super::Want;
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
