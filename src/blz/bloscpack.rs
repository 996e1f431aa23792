//! Bloscpack files (`blpk`): the chunk files of bcolz carrays (format
//! version 1, a 16-byte header) and standalone `.blp` files written by the
//! `bloscpack` package (format versions 2 and 3, a 32-byte header, optional
//! JSON metadata, an offsets table and a checksum after every chunk).
//!
//! Layout of a version 3 file, all integers little-endian:
//!
//! ```text
//! 0   "blpk"  version:u8  options:u8 (bit 0 offsets, bit 1 metadata)  checksum:u8  typesize:u8
//! 8   chunk_size:i32  last_chunk:i32  nchunks:i64  max_app_chunks:i64
//! 32  [metadata header (32 bytes): magic "JSON", options, checksum, codec (0 none, 1 zlib),
//!      level, meta_size:u32, max_meta_size:u32, meta_comp_size:u32, user codec (8)]
//!     [metadata (meta_comp_size bytes), zero padding up to max_meta_size, its digest]
//!     [offsets: (nchunks + max_app_chunks) × i64, -1 where unknown]
//!     chunk 0 (a Blosc chunk: its header gives its length), its digest, chunk 1, …
//! ```
//!
//! The reader streams: it holds one compressed chunk at a time, checks every
//! length against the file before it allocates, and verifies every digest.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::json::Json;
use crate::error::{Error, Result};

/// The magic at the start of every Bloscpack file.
pub const MAGIC: &[u8; 4] = b"blpk";
/// Bytes of a Blosc chunk header (Blosc1 layout).
const BLOSC_HEADER: usize = 16;
/// Bytes of the bcolz (format version 1) header.
const V1_HEADER: usize = 16;
/// Bytes of the Bloscpack (format versions 2, 3) header.
const V3_HEADER: usize = 32;
/// Bytes of the metadata header.
const META_HEADER: usize = 32;
/// Largest metadata section read (JSON of a few fields; 64 MiB is generous).
const MAX_META: u64 = 64 << 20;

/// The checksum kinds a Bloscpack file may name (byte 6 of its header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// No checksum.
    None,
    /// Adler-32 (zlib), 4 bytes little-endian.
    Adler32,
    /// CRC-32 (zlib), 4 bytes little-endian.
    Crc32,
    /// MD5, 16 bytes.
    Md5,
    /// SHA-1, 20 bytes.
    Sha1,
    /// SHA-224, 28 bytes.
    Sha224,
    /// SHA-256, 32 bytes.
    Sha256,
    /// SHA-384, 48 bytes.
    Sha384,
    /// SHA-512, 64 bytes.
    Sha512,
}

impl Checksum {
    /// Every kind, in the order of their ids.
    pub const ALL: [Checksum; 9] = [
        Checksum::None,
        Checksum::Adler32,
        Checksum::Crc32,
        Checksum::Md5,
        Checksum::Sha1,
        Checksum::Sha224,
        Checksum::Sha256,
        Checksum::Sha384,
        Checksum::Sha512,
    ];

    /// The kind of id `id` (the header byte), if any.
    #[must_use]
    pub fn from_id(id: u8) -> Option<Checksum> {
        Self::ALL.get(usize::from(id)).copied()
    }

    /// The header byte.
    #[must_use]
    pub fn id(self) -> u8 {
        Self::ALL.iter().position(|&c| c == self).unwrap_or(0) as u8
    }

    /// The name Bloscpack uses (`None`, `adler32`, …, `sha512`).
    #[must_use]
    pub fn name(self) -> &'static str {
        ["None", "adler32", "crc32", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"][usize::from(self.id())]
    }

    /// The kind named `name` (case-insensitive; `none` too).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Checksum> {
        Self::ALL.iter().copied().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// Bytes of the digest.
    #[must_use]
    pub fn size(self) -> usize {
        [0, 4, 4, 16, 20, 28, 32, 48, 64][usize::from(self.id())]
    }

    /// The digest of `data`, as Bloscpack writes it.
    #[must_use]
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Checksum::None => Vec::new(),
            Checksum::Adler32 => adler2::adler32_slice(data).to_le_bytes().to_vec(),
            Checksum::Crc32 => crc32fast::hash(data).to_le_bytes().to_vec(),
            Checksum::Md5 => md5::Md5::digest(data).to_vec(),
            Checksum::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Checksum::Sha224 => sha2::Sha224::digest(data).to_vec(),
            Checksum::Sha256 => sha2::Sha256::digest(data).to_vec(),
            Checksum::Sha384 => sha2::Sha384::digest(data).to_vec(),
            Checksum::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
    }
}

/// The header of a Bloscpack file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version: 1 (bcolz chunk files), 2 or 3 (bloscpack).
    pub version: u8,
    /// Whether an offsets table follows the metadata.
    pub offsets: bool,
    /// Whether a metadata section follows the header.
    pub metadata: bool,
    /// The checksum after every chunk.
    pub checksum: Checksum,
    /// Item size the chunks were compressed with (0: not recorded).
    pub typesize: u8,
    /// Uncompressed bytes of every chunk but the last (-1: not recorded).
    pub chunk_size: i32,
    /// Uncompressed bytes of the last chunk (-1: not recorded).
    pub last_chunk: i32,
    /// Number of chunks (-1: unknown, read to the end of the file).
    pub nchunks: i64,
    /// Room reserved in the offsets table for appended chunks.
    pub max_app_chunks: i64,
}

impl Header {
    /// The header of a bcolz chunk file (version 1) of `nchunks` chunks:
    /// no offsets, metadata or checksums; sizes are the chunks' own.
    #[must_use]
    pub fn v1(nchunks: i64) -> Header {
        Header {
            version: 1,
            offsets: false,
            metadata: false,
            checksum: Checksum::None,
            typesize: 0,
            chunk_size: -1,
            last_chunk: -1,
            nchunks,
            max_app_chunks: 0,
        }
    }

    /// Bytes of the header on disk.
    #[must_use]
    pub fn len(&self) -> usize {
        if self.version == 1 {
            V1_HEADER
        } else {
            V3_HEADER
        }
    }

    /// Never true: a header has bytes (for clippy's `len` convention).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Decode the header at the start of `b` (at least 16 bytes; 32 for
    /// versions 2 and 3). `what` names the file in errors.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] on a missing magic, an unknown version,
    /// option or checksum, or inconsistent sizes.
    pub fn decode(b: &[u8], what: &str) -> Result<Header> {
        let bad = |m: String| Error::InvalidFormat(format!("{what}: {m}"));
        if b.len() < V1_HEADER || &b[..4] != MAGIC {
            return Err(bad("not a Bloscpack file (no 'blpk' magic)".into()));
        }
        let version = b[4];
        let i64_at = |at: usize| i64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let i32_at = |at: usize| i32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
        let h = match version {
            1 => Header::v1(i64_at(8)),
            2 | 3 => {
                if b.len() < V3_HEADER {
                    return Err(bad(format!("header of {} bytes, a version {version} header has 32", b.len())));
                }
                let options = b[5];
                if options & !0b11 != 0 {
                    return Err(bad(format!("unknown header options 0b{options:08b}")));
                }
                let checksum = Checksum::from_id(b[6]).ok_or_else(|| bad(format!("unknown checksum id {}", b[6])))?;
                Header {
                    version,
                    offsets: options & 1 != 0,
                    metadata: options & 2 != 0,
                    checksum,
                    typesize: b[7],
                    chunk_size: i32_at(8),
                    last_chunk: i32_at(12),
                    nchunks: i64_at(16),
                    max_app_chunks: i64_at(24),
                }
            }
            v => return Err(bad(format!("unknown Bloscpack format version {v}"))),
        };
        if h.nchunks < -1 || h.max_app_chunks < 0 || h.chunk_size < -1 || h.last_chunk < -1 {
            return Err(bad(format!(
                "negative sizes in the header (nchunks {}, max_app_chunks {}, chunk_size {}, last_chunk {})",
                h.nchunks, h.max_app_chunks, h.chunk_size, h.last_chunk
            )));
        }
        if h.chunk_size >= 0 && h.last_chunk > h.chunk_size {
            return Err(bad(format!("last chunk of {} bytes exceeds the chunk size {}", h.last_chunk, h.chunk_size)));
        }
        if h.offsets && h.nchunks < 0 {
            return Err(bad("an offsets table needs a chunk count".into()));
        }
        Ok(h)
    }

    /// Encode a version 3 (or, for `version == 1`, a bcolz) header.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.push(self.version);
        if self.version == 1 {
            v.extend_from_slice(&[0, 0, 0]);
            v.extend_from_slice(&self.nchunks.to_le_bytes());
            return v;
        }
        v.push(u8::from(self.offsets) | u8::from(self.metadata) << 1);
        v.push(self.checksum.id());
        v.push(self.typesize);
        v.extend_from_slice(&self.chunk_size.to_le_bytes());
        v.extend_from_slice(&self.last_chunk.to_le_bytes());
        v.extend_from_slice(&self.nchunks.to_le_bytes());
        v.extend_from_slice(&self.max_app_chunks.to_le_bytes());
        v
    }
}

/// The sizes in a Blosc chunk header: (uncompressed, compressed, block size).
///
/// # Errors
/// [`Error::InvalidFormat`] if the header is impossible.
pub(crate) fn blosc_sizes(h: &[u8], what: &dyn Fn() -> String) -> Result<(usize, usize, usize)> {
    let bad = |m: String| Error::InvalidFormat(format!("{}: {m}", what()));
    if h.len() < BLOSC_HEADER {
        return Err(bad(format!("truncated Blosc header ({} of 16 bytes)", h.len())));
    }
    let u = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().unwrap_or([0; 4])) as usize;
    let (version, flags, typesize) = (h[0], h[2], h[3]);
    let (nbytes, blocksize, cbytes) = (u(4), u(8), u(12));
    // Bloscpack and bcolz hold Blosc1 chunks: format 1 or 2 (c-blosc 1.x),
    // never Blosc2's extended header (both shuffle bits set) or its special chunks.
    if version == 0 || version > 2 {
        return Err(bad(format!("Blosc header version {version} is not a Blosc1 chunk's (1 or 2)")));
    }
    if flags & 5 == 5 {
        return Err(bad("Blosc header has both shuffle flags (a Blosc2 extended header)".into()));
    }
    if typesize == 0 {
        return Err(bad("Blosc header has item size 0".into()));
    }
    if nbytes > i32::MAX as usize || cbytes < BLOSC_HEADER || cbytes > nbytes + 32 {
        return Err(bad(format!("Blosc header sizes are impossible: {nbytes} bytes in {cbytes}")));
    }
    let memcpyed = flags & 2 != 0;
    if memcpyed && cbytes != nbytes + BLOSC_HEADER {
        return Err(bad(format!("a copied Blosc chunk of {nbytes} bytes takes {cbytes}, not {}", nbytes + 16)));
    }
    if nbytes > 0 && !memcpyed && (blocksize == 0 || blocksize > nbytes.max(1) + 64) {
        return Err(bad(format!("Blosc block size {blocksize} is impossible for {nbytes} bytes")));
    }
    Ok((nbytes, cbytes, blocksize))
}

/// A Bloscpack file open for reading, one chunk at a time.
pub struct Reader {
    path: PathBuf,
    file: BufReader<File>,
    len: u64,
    pos: u64,
    header: Header,
    metadata: Option<serde_json::Value>,
    metadata_json: Option<Json>,
    offsets: Vec<i64>,
    /// Whether the offsets table has room for appended chunks that is all
    /// unused (-1): the file may end in what `bloscpack.append` left.
    appendable: bool,
    next: i64,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("path", &self.path).field("header", &self.header).finish()
    }
}

impl Reader {
    /// Open `path` and read its header, metadata and offsets.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read; [`Error::InvalidFormat`] for a
    /// malformed or truncated file, bad metadata JSON; [`Error::Corrupt`]
    /// if the metadata fails its checksum.
    pub fn open(path: &Path) -> Result<Reader> {
        let f = File::open(path).map_err(|e| Error::io("opening", Some(path), &e))?;
        let len = f.metadata().map_err(|e| Error::io("reading the size of", Some(path), &e))?.len();
        let mut r = Reader {
            path: path.to_owned(),
            file: BufReader::with_capacity(1 << 16, f),
            len,
            pos: 0,
            header: Header::v1(0),
            metadata: None,
            metadata_json: None,
            offsets: Vec::new(),
            appendable: false,
            next: 0,
        };
        let first = r.read_exact_vec(V1_HEADER.min(len as usize), "the header")?;
        let mut head = first;
        if head.len() >= 5 && head[..4] == *MAGIC && head[4] != 1 && len >= V3_HEADER as u64 {
            head.extend(r.read_exact_vec(V3_HEADER - V1_HEADER, "the header")?);
        }
        r.header = Header::decode(&head, &r.what())?;
        if r.header.metadata {
            r.read_metadata()?;
        }
        if r.header.offsets {
            let total = r.header.nchunks.saturating_add(r.header.max_app_chunks);
            let bytes = u64::try_from(total).unwrap_or(u64::MAX).saturating_mul(8);
            if bytes > len.saturating_sub(r.pos) {
                return Err(r.bad(format!("an offsets table of {total} entries does not fit in the file")));
            }
            let raw = r.read_exact_vec(bytes as usize, "the offsets table")?;
            r.appendable = raw.chunks_exact(8).skip(r.header.nchunks as usize).all(|c| c == [0xff; 8]);
            r.offsets = raw
                .chunks_exact(8)
                .take(r.header.nchunks as usize)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
        }
        if r.header.nchunks > 0 && (r.header.nchunks as u64).saturating_mul(BLOSC_HEADER as u64) > len - r.pos {
            return Err(r.bad(format!("{} chunks do not fit in the rest of the file", r.header.nchunks)));
        }
        Ok(r)
    }

    fn what(&self) -> String {
        format!("Bloscpack file '{}'", self.path.display())
    }

    fn bad(&self, m: String) -> Error {
        Error::InvalidFormat(format!("{}: {m}", self.what()))
    }

    fn read_exact_vec(&mut self, n: usize, what: &str) -> Result<Vec<u8>> {
        if (n as u64) > self.len.saturating_sub(self.pos) {
            return Err(self.bad(format!("truncated in {what} (at byte {}, {n} bytes needed)", self.pos)));
        }
        let mut v = vec![0u8; n];
        self.file.read_exact(&mut v).map_err(|e| Error::io(&format!("reading {what} of"), Some(&self.path), &e))?;
        self.pos += n as u64;
        Ok(v)
    }

    fn read_metadata(&mut self) -> Result<()> {
        let h = self.read_exact_vec(META_HEADER, "the metadata header")?;
        let u = |at: usize| u64::from(u32::from_le_bytes(h[at..at + 4].try_into().unwrap_or([0; 4])));
        let magic: Vec<u8> = h[..8].iter().copied().take_while(|&c| c != 0).collect();
        if magic != b"JSON" {
            return Err(self.bad(format!("metadata serializer '{}' is not JSON", String::from_utf8_lossy(&magic))));
        }
        let checksum =
            Checksum::from_id(h[9]).ok_or_else(|| self.bad(format!("unknown metadata checksum {}", h[9])))?;
        let codec = h[10];
        let (size, max_size, comp_size) = (u(12), u(16), u(20));
        if codec > 1 {
            return Err(self.bad(format!("unknown metadata codec {codec}")));
        }
        if comp_size > MAX_META || size > MAX_META || max_size > MAX_META || comp_size > max_size.max(comp_size) {
            return Err(self.bad(format!("metadata sizes are impossible ({size}, {comp_size} of {max_size})")));
        }
        let raw = self.read_exact_vec(comp_size as usize, "the metadata")?;
        let pad = max_size.saturating_sub(comp_size) as usize;
        self.read_exact_vec(pad, "the metadata padding")?;
        let digest = self.read_exact_vec(checksum.size(), "the metadata checksum")?;
        if checksum.digest(&raw) != digest {
            return Err(Error::corrupt(
                -1,
                format!("{}: the metadata fails its {} checksum", self.what(), checksum.name()),
            ));
        }
        let json = if codec == 1 {
            miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&raw, size as usize)
                .map_err(|e| self.bad(format!("the zlib metadata does not decompress ({:?})", e.status)))?
        } else {
            raw
        };
        // bloscpack writes it with Python's json: NaN and Infinity may be there.
        let v =
            super::json::parse(&json).map_err(|e| self.bad(format!("the metadata is not JSON: {}", e.message())))?;
        self.metadata = Some(v.to_value_lossy());
        self.metadata_json = Some(v);
        Ok(())
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata, when the file has some, as a [`serde_json::Value`]
    /// (non-finite floats as strings: see [`Json::to_value_lossy`]).
    #[must_use]
    pub fn metadata(&self) -> Option<&serde_json::Value> {
        self.metadata.as_ref()
    }

    /// The metadata exactly as Python's `json` reads it (`NaN` a float).
    #[must_use]
    pub fn metadata_json(&self) -> Option<&Json> {
        self.metadata_json.as_ref()
    }

    /// The path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next compressed chunk (a complete Blosc chunk, its checksum
    /// verified), or `None` after the last one.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for a truncated file, an impossible chunk
    /// header, an offset that does not match, bytes after the last chunk;
    /// [`Error::Corrupt`] (naming the chunk) for a checksum mismatch.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let n = self.next;
        if self.header.nchunks >= 0 && n >= self.header.nchunks {
            let slack = self.len - self.pos;
            // `bloscpack.append` rewrites the last chunk in place and never
            // truncates the file: a last chunk that compresses shorter than the
            // one it replaced leaves that one's tail behind (bloscpack reads
            // `nchunks` chunks and ignores it). Up to one chunk and its digest
            // is that; a chunk count cut short would leave offsets in the table.
            let remnant = i64::from(self.header.chunk_size.max(0)) + 32 + self.header.checksum.size() as i64;
            if self.header.version != 1 && slack > 0 && !(self.appendable && slack <= remnant as u64) {
                return Err(self.bad(format!("{slack} bytes after the last chunk")));
            }
            return Ok(None);
        }
        if self.header.nchunks < 0 && self.pos == self.len {
            return Ok(None);
        }
        if let Some(&off) = self.offsets.get(n as usize) {
            if off != -1 && off as u64 != self.pos {
                return Err(self.bad(format!("the offsets table puts chunk {n} at byte {off}; it is at {}", self.pos)));
            }
        }
        let at = self.pos;
        let head = self.read_exact_vec(BLOSC_HEADER, &format!("chunk {n}"))?;
        let path = self.path.clone();
        let (nbytes, cbytes, _) =
            blosc_sizes(&head, &|| format!("Bloscpack file '{}', chunk {n} at byte {at}", path.display()))?;
        let mut chunk = head;
        chunk.extend(self.read_exact_vec(cbytes - BLOSC_HEADER, &format!("chunk {n}"))?);
        let sum = self.header.checksum;
        let digest = self.read_exact_vec(sum.size(), &format!("the checksum of chunk {n}"))?;
        if sum.digest(&chunk) != digest {
            return Err(Error::corrupt(n, format!("{}: chunk {n} fails its {} checksum", self.what(), sum.name())));
        }
        let last = self.header.nchunks >= 0 && n == self.header.nchunks - 1;
        let want = if last { self.header.last_chunk } else { self.header.chunk_size };
        if self.header.version != 1 && want >= 0 && nbytes != want as usize {
            return Err(self.bad(format!("chunk {n} holds {nbytes} bytes; the header says {want}")));
        }
        self.next += 1;
        Ok(Some(chunk))
    }

    /// The chunks read so far.
    #[must_use]
    pub fn chunks_read(&self) -> i64 {
        self.next
    }
}

/// Write a version 3 Bloscpack file at `path`: `chunks` (complete Blosc
/// chunks, `header.nchunks` of them, of `header.chunk_size` bytes each but
/// the last, of `header.last_chunk`), with an offsets table, the checksum
/// `header.checksum` after every chunk and, when given, `metadata`
/// (uncompressed JSON, no checksum). The other fields of `header` are
/// ignored. The file is written beside `path` and renamed into place.
///
/// # Errors
/// [`Error::Io`] on a failed write; [`Error::InvalidArgument`] if the
/// chunks are not `header.nchunks`; the first error `chunks` yields.
pub fn write_file(
    path: &Path,
    header: &Header,
    metadata: Option<&serde_json::Value>,
    chunks: &mut dyn Iterator<Item = Result<Vec<u8>>>,
) -> Result<()> {
    let nchunks = header.nchunks;
    let tmp = path.with_extension(format!("blp.caterva-tmp-{}", std::process::id()));
    let result = (|| -> Result<()> {
        let io = |op: &str, e: std::io::Error| Error::io(op, Some(path), &e);
        let mut f = std::io::BufWriter::new(File::create(&tmp).map_err(|e| io("creating", e))?);
        let checksum = header.checksum;
        let h = Header { version: 3, offsets: true, metadata: metadata.is_some(), max_app_chunks: 0, ..header.clone() };
        let mut bytes = h.encode();
        if let Some(m) = metadata {
            let json = serde_json::to_vec(m).map_err(|e| Error::InvalidArgument(format!("metadata: {e}")))?;
            bytes.extend_from_slice(b"JSON\0\0\0\0");
            bytes.extend_from_slice(&[0, 0, 0, 0]);
            let n = u32::try_from(json.len()).map_err(|_| Error::InvalidArgument("metadata too large".into()))?;
            for _ in 0..3 {
                bytes.extend_from_slice(&n.to_le_bytes());
            }
            bytes.extend_from_slice(&[0; 8]);
            bytes.extend_from_slice(&json);
        }
        let table_at = bytes.len() as u64;
        bytes.extend(std::iter::repeat(0xffu8).take(8 * nchunks.max(0) as usize));
        f.write_all(&bytes).map_err(|e| io("writing", e))?;
        let mut offsets = Vec::with_capacity(nchunks.max(0) as usize);
        let mut pos = bytes.len() as u64;
        for c in chunks {
            let c = c?;
            offsets.push(pos as i64);
            f.write_all(&c).map_err(|e| io("writing", e))?;
            let d = checksum.digest(&c);
            f.write_all(&d).map_err(|e| io("writing", e))?;
            pos += (c.len() + d.len()) as u64;
        }
        if offsets.len() as i64 != nchunks {
            return Err(Error::InvalidArgument(format!("{} chunks written, {nchunks} announced", offsets.len())));
        }
        let mut f = f.into_inner().map_err(|e| io("writing", e.into_error()))?;
        f.seek(SeekFrom::Start(table_at)).map_err(|e| io("writing", e))?;
        let table: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        f.write_all(&table).map_err(|e| io("writing", e))?;
        f.sync_all().map_err(|e| io("syncing", e))?;
        std::fs::rename(&tmp, path).map_err(|e| io("renaming into", e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
