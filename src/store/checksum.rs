//! Per-chunk checksums, and the integrity record of the metadata around
//! them, kept so that no single damaged byte can switch them off.
//!
//! Blosc2 frames carry no checksum of their own (the BLZ format this one
//! descends from put one after every chunk). When a context asks for them
//! ([`crate::Config::checksums`]), an array keeps a *table* in the
//! vlmetalayer [`VLMETA_NAME`] (in the frame's trailer): the XXH3-64 hash of
//! every compressed chunk, and, since version 2, a record of the metadata.
//! Every read of a chunk checks its hash, every write through this library
//! keeps the table current, and readers that do not know the vlmetalayer
//! (python-caterva, python-blosc2, c-blosc2) ignore it.
//!
//! # Threat: one damaged byte anywhere
//!
//! A table that a damaged byte can hide is no protection: a flip in its
//! *name* (`cater\xf6a.xxh3`) used to make the array read as one without
//! checksums, returning whatever the other damage made of its chunks. So an
//! array written with checksums says so in three places that no single byte
//! can all reach, and the reader believes any of them:
//!
//! 1. **The table itself**, in the trailer, found by name.
//! 2. **A marker in the header**: a fixed-size metalayer of the same name,
//!    [`MARKER_NAME`], holding [`MARKER_CONTENT`]. The header and the
//!    trailer are far apart (the chunks lie between them in a frame file; a
//!    sparse frame's index holds the offsets between them), so one damaged
//!    byte cannot take both. A marker without a table is refused as
//!    [`Error::Corrupt`]. c-blosc2 (2.15, `blosc2_meta_add` →
//!    `frame_update_header(.., new = true)`) adds fixed-size metalayers to a
//!    frame only before its first chunk, so the marker is placed when an
//!    array is created with checksums (after the geometry and user
//!    metalayers, before the first chunk), and by
//!    [`crate::Array::enable_checksums`] only where c-blosc2 still allows
//!    it: an in-memory array that is not a frame, or one without chunks.
//!    It also takes one of the 16 metalayer slots, after `caterva`, `b2nd`
//!    and the user's; an array created with more than 13 user metalayers
//!    has no room for it. Arrays without a marker (converted later, with
//!    that many metalayers, or with a version-1 table) rely on 3 alone.
//!    Reserving a marker slot in every array, with or without checksums, was
//!    weighed and rejected: it would change every file this library writes,
//!    for users who never asked for checksums.
//! 3. **Names one byte away.** A vlmetalayer whose name differs from
//!    [`VLMETA_NAME`] in exactly one character (or a metalayer one character
//!    away from [`MARKER_NAME`]) is taken for the table (the marker) with a
//!    damaged name, and the array is refused as corrupt. Users cannot create
//!    such names through this library.
//!
//! A damaged byte inside the table is caught by the table's own checksum
//! (version 2); inside a vlmetalayer's compressed chunk, by c-blosc2 failing
//! to decode it or by that checksum. Damage elsewhere in the header, the
//! offsets index or the trailer either breaks the frame's structure (refused
//! by `frame_check`), or moves a chunk (its hash no longer matches), or
//! changes metadata, which version 2 records.
//!
//! # What version 2 records
//!
//! The content is a MessagePack `bin` (so that python-blosc2, which decodes
//! every vlmetalayer as MessagePack, shows it as bytes) holding, all
//! integers little-endian:
//!
//! ```text
//! u8  version = 2
//! u8  flags: bit 0 = the header carries the marker
//! u32 typesize of the super-chunk
//! u64 nchunks, then nchunks × u64: the hash of each chunk
//! u16 nrecords, then for each, sorted by (kind, name):
//!     u8 kind (0 metalayer, 1 vlmetalayer), u8 name length, the name,
//!     u64 XXH3-64 of the content
//! u64 XXH3-64 of everything above
//! ```
//!
//! The records cover every fixed-size metalayer (the geometry ones,
//! `caterva` and `b2nd`, and the user's) but the marker, and every
//! vlmetalayer but the table. They are checked when the array is opened: a
//! recorded layer that is missing or whose content differs makes the array
//! [`Error::Corrupt`], naming it. Layers that are not recorded (added by a
//! writer that does not keep caterva checksums) are left alone: one damaged
//! byte cannot add a layer without removing a recorded one.
//!
//! A chunk's hash is the XXH3-64 of its bytes, except for special chunks
//! (zeros, NaNs, uninitialised, a repeated value), which c-blosc2 represents
//! in more than one way: a frame stores them as a flag in the offsets index
//! and rebuilds a header of its own when they are read back (other flags,
//! filters and block size than the chunk that was written). Their hash is
//! taken over what they mean, a fixed prefix and the kind, the item size,
//! the number of bytes and, for a repeated value, the value, so that no
//! change of representation fails the check.
//!
//! # Version 1
//!
//! Tables written before version 2 hold the version byte (1) and one hash of
//! the raw chunk bytes per chunk, and nothing else. They are read and kept
//! as they are (every write to such an array keeps version 1), with none of
//! the records above; [`crate::Array::enable_checksums`] upgrades one to
//! version 2 after checking every chunk against it.

use crate::blosc2::Chunk;

use super::schunk::SChunk;
use crate::blosc2::chunk_header::{ChunkHeader, HEADER_LEN as CHUNK_HEADER};
use crate::error::{Error, Result};

/// The vlmetalayer holding the table. Reserved: users cannot add or update it.
pub(crate) const VLMETA_NAME: &str = "caterva.xxh3";
/// The fixed-size metalayer (in the header) marking that the trailer holds
/// the table. Reserved.
pub(crate) const MARKER_NAME: &str = "caterva.xxh3";
/// The marker's content: a MessagePack `bin` of one byte, the marker's format (1).
pub(crate) const MARKER_CONTENT: &[u8] = &[0xc4, 0x01, 0x01];

/// The table format of version 1: raw chunk hashes only.
const V1: u8 = 1;
/// The table format this library writes.
const V2: u8 = 2;
/// Version 2 flags: the header carries the marker.
const FLAG_MARKER: u8 = 0x01;
/// Prefix of the canonical form of a special chunk (see [`hash_v2`]).
const SPECIAL_PREFIX: &[u8] = b"caterva special chunk";

/// XXH3-64 of some bytes.
#[must_use]
pub(crate) fn xxh3(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The version-2 checksum of a compressed chunk: of its bytes, or of what
/// it means for a special chunk.
#[must_use]
pub(crate) fn hash_v2(chunk: &[u8]) -> u64 {
    match special_meaning(chunk) {
        Some(canonical) => xxh3(&canonical),
        None => xxh3(chunk),
    }
}

/// The canonical form of a special chunk (`None` for any other): the
/// prefix, the special kind, the item size, the uncompressed size and, for a
/// repeated value, the value.
fn special_meaning(chunk: &[u8]) -> Option<Vec<u8>> {
    let header = chunk.get(..CHUNK_HEADER)?;
    let h = ChunkHeader::parse(header)?;
    if !h.is_extended() {
        return None;
    }
    let kind = h.special();
    if kind == 0 {
        return None;
    }
    let typesize = h.typesize;
    let mut out = Vec::with_capacity(SPECIAL_PREFIX.len() + 6 + usize::from(typesize));
    out.extend_from_slice(SPECIAL_PREFIX);
    out.extend_from_slice(&[kind, typesize]);
    out.extend_from_slice(&header[4..8]);
    if u32::from(kind) == blosc2_sys::BLOSC2_SPECIAL_VALUE {
        // The value follows the header (all of cbytes when it is wider than
        // a header's typesize: `blosc2::wide_value`); a chunk cut short
        // hashes what it has.
        let width = usize::try_from(h.cbytes).unwrap_or(0).saturating_sub(CHUNK_HEADER).max(usize::from(typesize));
        let end = (CHUNK_HEADER + width).min(chunk.len());
        out.extend_from_slice(&chunk[CHUNK_HEADER..end]);
    }
    Some(out)
}

/// Whether `name` is `target` with exactly one character changed: the
/// target's name, damaged.
#[must_use]
pub(crate) fn one_off(name: &str, target: &str) -> bool {
    name.chars().count() == target.chars().count()
        && name.chars().zip(target.chars()).filter(|(a, b)| a != b).count() == 1
}

/// Whether `content` is a sound version-2 table (it decodes and its own
/// checksum matches): the table, whatever name it is found under.
#[must_use]
pub(crate) fn is_sound_table(content: &[u8]) -> bool {
    matches!(Table::decode(content), Ok(t) if t.version() == V2)
}

/// A kind of metadata layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layer {
    /// A fixed-size metalayer (in the header).
    Meta,
    /// A variable-length metalayer (in the trailer).
    VlMeta,
}

impl Layer {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Layer::Meta => "metalayer",
            Layer::VlMeta => "vlmetalayer",
        }
    }
}

/// A recorded metadata layer: which, and the hash of its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) layer: Layer,
    pub(crate) name: String,
    pub(crate) sum: u64,
}

/// The table of an array's chunk checksums (and, in version 2, its
/// metadata record), and whether it differs from the stored copy.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    version: u8,
    sums: Vec<u64>,
    /// Version 2: the header carries the marker.
    marker: bool,
    /// Version 2: the super-chunk's typesize.
    typesize: u32,
    /// Version 2: the metadata, sorted by (layer, name).
    records: Vec<Record>,
    dirty: bool,
}

impl Table {
    /// An empty version-2 table for a super-chunk of `typesize`-byte items, to be stored.
    pub(crate) fn new(typesize: u32) -> Self {
        Table { version: V2, sums: Vec::new(), marker: false, typesize, records: Vec::new(), dirty: true }
    }

    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    /// The checksum of a compressed chunk, as this table's version computes it.
    pub(crate) fn hash(&self, chunk: &[u8]) -> u64 {
        if self.version == V1 {
            xxh3(chunk)
        } else {
            hash_v2(chunk)
        }
    }

    /// Check chunk `n`'s bytes against the table.
    pub(crate) fn check(&self, n: i64, nchunks: i64, chunk: &[u8]) -> Result<()> {
        if self.sums.len() as i64 != nchunks {
            return Err(Error::corrupt(
                -1,
                format!(
                    "the checksum table covers {} chunks but the array has {nchunks}: it was changed by a writer \
                     that does not keep caterva checksums",
                    self.sums.len()
                ),
            ));
        }
        let want = self.sums[n as usize];
        let got = self.hash(chunk);
        if got != want {
            return Err(Error::corrupt(
                n,
                format!("chunk {n} fails its checksum (stored {want:016x}, computed {got:016x})"),
            ));
        }
        Ok(())
    }

    pub(crate) fn push(&mut self, sum: u64) {
        self.sums.push(sum);
        self.dirty = true;
    }

    pub(crate) fn set(&mut self, n: usize, sum: u64) {
        self.sums[n] = sum;
        self.dirty = true;
    }

    pub(crate) fn remove(&mut self, n: usize) {
        self.sums.remove(n);
        self.dirty = true;
    }

    /// Entry `i` becomes the one that was at `order[i]`.
    pub(crate) fn reorder(&mut self, order: &[i64]) {
        self.sums = order.iter().map(|&o| self.sums[o as usize]).collect();
        self.dirty = true;
    }

    /// Whether the header carries the marker (version 2).
    pub(crate) fn marker(&self) -> bool {
        self.marker
    }

    /// Record that the header now carries the marker.
    pub(crate) fn set_marker(&mut self) {
        self.marker = true;
        self.dirty = true;
    }

    /// The typesize recorded (version 2).
    pub(crate) fn typesize(&self) -> u32 {
        self.typesize
    }

    /// The recorded metadata (empty in version 1).
    pub(crate) fn records(&self) -> &[Record] {
        &self.records
    }

    /// Record a layer's content (version 2; version 1 records none). The
    /// marker and the table itself are never recorded.
    pub(crate) fn record(&mut self, layer: Layer, name: &str, content: &[u8]) {
        if self.version == V1 || name == VLMETA_NAME || name == MARKER_NAME {
            return;
        }
        let sum = xxh3(content);
        let key = |r: &Record| (r.layer, r.name.as_str()).cmp(&(layer, name));
        match self.records.binary_search_by(key) {
            Ok(i) if self.records[i].sum == sum => return,
            Ok(i) => self.records[i].sum = sum,
            Err(i) => self.records.insert(i, Record { layer, name: name.to_owned(), sum }),
        }
        self.dirty = true;
    }

    /// The encoded table if it changed since the last call.
    pub(crate) fn take_dirty(&mut self) -> Option<Vec<u8>> {
        std::mem::replace(&mut self.dirty, false).then(|| self.encode())
    }

    /// Mark the table as not stored (after a failed write of it).
    pub(crate) fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    fn encode(&self) -> Vec<u8> {
        let mut body = vec![self.version];
        if self.version == V2 {
            body.push(if self.marker { FLAG_MARKER } else { 0 });
            body.extend_from_slice(&self.typesize.to_le_bytes());
            body.extend_from_slice(&(self.sums.len() as u64).to_le_bytes());
        }
        for s in &self.sums {
            body.extend_from_slice(&s.to_le_bytes());
        }
        if self.version == V2 {
            body.extend_from_slice(&(self.records.len() as u16).to_le_bytes());
            for r in &self.records {
                body.push(r.layer as u8);
                body.push(r.name.len() as u8);
                body.extend_from_slice(r.name.as_bytes());
                body.extend_from_slice(&r.sum.to_le_bytes());
            }
            let digest = xxh3(&body);
            body.extend_from_slice(&digest.to_le_bytes());
        }
        let mut out = Vec::with_capacity(body.len() + 5);
        rmp::encode::write_bin_len(&mut out, body.len() as u32).expect("writing to a Vec cannot fail");
        out.extend_from_slice(&body);
        out
    }

    /// The table as decoded from a stored vlmetalayer (clean).
    ///
    /// # Errors
    /// [`Error::Corrupt`] (chunk -1) naming what is wrong with it;
    /// [`Error::InvalidFormat`] for a version this library does not know.
    pub(crate) fn decode(content: &[u8]) -> Result<Self> {
        let mut rd = content;
        let len = rmp::decode::read_bin_len(&mut rd).map_err(|_| damaged("is not a MessagePack bin"))? as usize;
        if len != rd.len() {
            return Err(damaged("has a length that does not match its content"));
        }
        let (&version, body) = rd.split_first().ok_or_else(|| damaged("is empty"))?;
        match version {
            V1 => decode_v1(body),
            V2 => decode_v2(rd),
            0 => Err(damaged("has version 0")),
            v => Err(Error::InvalidFormat(format!(
                "vlmetalayer '{VLMETA_NAME}' has version {v}; this library reads versions {V1} and {V2} (a newer \
                 writer, or damage)"
            ))),
        }
    }
}

/// The table is damaged: why.
fn damaged(why: &str) -> Error {
    Error::corrupt(-1, format!("the checksum table (vlmetalayer '{VLMETA_NAME}') {why}"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

fn decode_v1(body: &[u8]) -> Result<Table> {
    if body.len() % 8 != 0 {
        return Err(damaged("is not a whole number of 64-bit checksums"));
    }
    let sums = body.chunks_exact(8).map(le_u64).collect();
    Ok(Table { version: V1, sums, marker: false, typesize: 0, records: Vec::new(), dirty: false })
}

/// `all` starts with the version byte and ends with the digest of the rest.
fn decode_v2(all: &[u8]) -> Result<Table> {
    let Some(split) = all.len().checked_sub(8) else { return Err(damaged("is too short")) };
    let (body, digest) = all.split_at(split);
    if xxh3(body) != le_u64(digest) {
        return Err(damaged("fails its own checksum"));
    }
    let mut rd = Reader(&body[1..]);
    let flags = rd.take(1)?[0];
    if flags & !FLAG_MARKER != 0 {
        return Err(damaged(&format!("has unknown flags {flags:#04x}")));
    }
    let typesize = u32::from_le_bytes(rd.take(4)?.try_into().expect("4 bytes"));
    let nchunks = le_u64(rd.take(8)?);
    if nchunks > (rd.0.len() / 8) as u64 {
        return Err(damaged(&format!("claims {nchunks} chunks")));
    }
    let sums = rd.take(nchunks as usize * 8)?.chunks_exact(8).map(le_u64).collect();
    let nrecords = u16::from_le_bytes(rd.take(2)?.try_into().expect("2 bytes"));
    let mut records: Vec<Record> = Vec::with_capacity(usize::from(nrecords));
    for _ in 0..nrecords {
        let layer = match rd.take(1)?[0] {
            0 => Layer::Meta,
            1 => Layer::VlMeta,
            k => return Err(damaged(&format!("records a layer of unknown kind {k}"))),
        };
        let n = usize::from(rd.take(1)?[0]);
        let name = std::str::from_utf8(rd.take(n)?).map_err(|_| damaged("records a name that is not UTF-8"))?;
        let sum = le_u64(rd.take(8)?);
        if records.last().is_some_and(|p| (p.layer, p.name.as_str()) >= (layer, name)) {
            return Err(damaged("records its layers out of order"));
        }
        records.push(Record { layer, name: name.to_owned(), sum });
    }
    if !rd.0.is_empty() {
        return Err(damaged("has bytes after its records"));
    }
    Ok(Table { version: V2, sums, marker: flags & FLAG_MARKER != 0, typesize, records, dirty: false })
}

/// Bounds-checked reads from the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(damaged("ends too early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
}

// ---------------------------------------------------------------------------
// The table a store keeps: loading it, checking what it vouches for.

/// Chunk `n` of `sc`, checked against `sums`.
pub(super) fn checked_chunk<'a>(sc: &'a SChunk, sums: Option<&Table>, n: i64) -> Result<Chunk<'a>> {
    let chunk = sc.chunk(n)?;
    if let Some(t) = sums {
        t.check(n, sc.nchunks(), chunk.bytes())?;
    }
    Ok(chunk)
}

/// Chunk `n`'s checksum in table `t`, as [`SChunk::chunk`] hands it back.
pub(super) fn chunk_hash(sc: &SChunk, t: &Table, n: i64) -> Result<u64> {
    sc.chunk(n).map(|c| t.hash(c.bytes()))
}

/// The checksum table a super-chunk stores, if any, with everything it
/// vouches for checked: the header marker and the recorded metadata.
///
/// An array is taken to have been written with checksums when it has the
/// table, the marker, or a vlmetalayer (metalayer) whose name is the
/// table's (marker's) with one character changed; then anything missing,
/// damaged or different from its record is [`Error::Corrupt`], never an
/// array without checksums.
///
/// # Errors
/// [`Error::Corrupt`] (chunk -1) naming what is damaged;
/// [`Error::InvalidFormat`] for a table of a version this library does not know.
pub(super) fn load_checksums(sc: &SChunk) -> Result<Option<Table>> {
    let metas = sc.meta_names();
    let vlmetas = sc.vlmeta_names();
    let marker = sc.meta_get(MARKER_NAME);
    let content = sc.vlmeta_get(VLMETA_NAME).map_err(|e| {
        Error::corrupt(-1, format!("the checksum table (vlmetalayer '{VLMETA_NAME}') cannot be read: {}", e.message()))
    })?;
    let Some(content) = content else {
        // What says the array was written with checksums.
        let mut signs = Vec::new();
        if marker.is_some() {
            signs.push(format!("the header's metalayer '{MARKER_NAME}' says it keeps checksums"));
        }
        if let Some(n) = vlmetas.iter().find(|n| one_off(n, VLMETA_NAME)) {
            signs.push(format!("vlmetalayer '{}' is the table with a damaged name", n.escape_debug()));
        } else if let Some((n, _)) = sc.vlmeta_raw().into_iter().find(|(n, content)| {
            // A sound table under a name of the table's length (bit flips
            // keep a name's length): the table, its name damaged in more
            // than one character (arrays given checksums after they were
            // written have no header marker to tell).
            n.len() == VLMETA_NAME.len() && content.as_ref().is_ok_and(|c| is_sound_table(c))
        }) {
            signs.push(format!(
                "vlmetalayer '{}' holds a sound checksum table: the table with a damaged name",
                String::from_utf8_lossy(&n).escape_debug()
            ));
        }
        if let Some(n) = metas.iter().find(|n| one_off(n, MARKER_NAME)) {
            signs.push(format!("metalayer '{}' is the header's checksum marker with a damaged name", n.escape_debug()));
        }
        if signs.is_empty() {
            return Ok(None);
        }
        return Err(Error::corrupt(
            -1,
            format!(
                "the array was written with checksums, but its checksum table (vlmetalayer '{VLMETA_NAME}') is \
                 missing: {}",
                signs.join("; ")
            ),
        ));
    };
    let table = Table::decode(&content)?;
    if table.version() >= 2 {
        check_records(sc, &table, &metas, &vlmetas, marker.as_deref())?;
    }
    Ok(Some(table))
}

/// A version-2 table's marker, typesize and metadata records against the super-chunk.
fn check_records(sc: &SChunk, t: &Table, metas: &[String], vlmetas: &[String], marker: Option<&[u8]>) -> Result<()> {
    let corrupt = |why: String| Error::corrupt(-1, why);
    // A present name that is not recorded but one character off `name`.
    let near = |layer: Layer, name: &str| {
        let names = if layer == Layer::Meta { metas } else { vlmetas };
        let recorded = |n: &str| t.records().iter().any(|r| r.layer == layer && r.name == n);
        names.iter().find(|n| one_off(n, name) && !recorded(n)).map_or_else(String::new, |n| {
            format!(" ({} '{}' may be it, with a damaged name)", layer.noun(), n.escape_debug())
        })
    };
    if t.marker() {
        match marker {
            None => {
                return Err(corrupt(format!(
                    "the header's checksum marker (metalayer '{MARKER_NAME}') is missing{}",
                    near(Layer::Meta, MARKER_NAME)
                )))
            }
            Some(m) if m != MARKER_CONTENT => {
                return Err(corrupt(format!("the header's checksum marker (metalayer '{MARKER_NAME}') is damaged")))
            }
            Some(_) => {}
        }
    }
    if i64::from(t.typesize()) != i64::from(sc.typesize()) {
        return Err(corrupt(format!(
            "the header gives {}-byte items; the checksum table recorded {}",
            sc.typesize(),
            t.typesize()
        )));
    }
    for r in t.records() {
        let content = match r.layer {
            Layer::Meta => sc.meta_get(&r.name),
            Layer::VlMeta => sc.vlmeta_get(&r.name).map_err(|e| {
                corrupt(format!("vlmetalayer '{}' cannot be read ({}): it is damaged", r.name, e.message()))
            })?,
        };
        match content {
            None => {
                return Err(corrupt(format!(
                    "{} '{}', recorded in the checksum table, is missing{}",
                    r.layer.noun(),
                    r.name,
                    near(r.layer, &r.name)
                )))
            }
            Some(c) if xxh3(&c) != r.sum => {
                return Err(corrupt(format!(
                    "{} '{}' differs from its record in the checksum table: it is damaged, or was changed by a \
                     writer that does not keep caterva checksums",
                    r.layer.noun(),
                    r.name
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(sums: &[u64]) -> Vec<u8> {
        let mut body = vec![1u8];
        sums.iter().for_each(|s| body.extend_from_slice(&s.to_le_bytes()));
        let mut out = Vec::new();
        rmp::encode::write_bin_len(&mut out, body.len() as u32).unwrap();
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn table_round_trips_and_tracks_changes() {
        let mut t = Table::new(4);
        for s in [1, 2, 3] {
            t.push(s);
        }
        t.record(Layer::VlMeta, "note", b"x");
        t.record(Layer::Meta, "caterva", b"geometry");
        t.set_marker();
        let enc = t.take_dirty().expect("new tables are dirty");
        assert!(t.take_dirty().is_none());
        let mut d = Table::decode(&enc).unwrap();
        assert_eq!((d.version(), d.sums.clone(), d.marker(), d.typesize()), (2, vec![1, 2, 3], true, 4));
        assert_eq!(d.records(), t.records());
        assert_eq!(d.records()[0].name, "caterva", "sorted: metalayers first");
        // Recording the same content again changes nothing.
        d.record(Layer::Meta, "caterva", b"geometry");
        assert!(d.take_dirty().is_none());
        d.reorder(&[2, 0, 1]);
        d.remove(1);
        d.push(9);
        d.set(0, 7);
        assert_eq!(d.sums, vec![7, 2, 9]);
        assert!(d.take_dirty().is_some());
        // The marker and the table are never recorded.
        d.record(Layer::Meta, MARKER_NAME, b"m");
        d.record(Layer::VlMeta, VLMETA_NAME, b"t");
        assert_eq!(d.records().len(), 2);
    }

    #[test]
    fn version_1_is_read_and_written_as_before() {
        let enc = v1(&[xxh3(b"abc"), 5]);
        let mut t = Table::decode(&enc).unwrap();
        assert_eq!(t.version(), 1);
        assert!(t.check(0, 2, b"abc").is_ok());
        t.record(Layer::Meta, "m", b"ignored in version 1");
        assert!(t.records().is_empty());
        t.push(6);
        assert_eq!(t.take_dirty().unwrap(), v1(&[xxh3(b"abc"), 5, 6]));
    }

    #[test]
    fn check_reports_mismatches_and_stale_tables() {
        let mut t = Table::new(1);
        t.push(hash_v2(b"abc"));
        assert!(t.check(0, 1, b"abc").is_ok());
        assert!(matches!(t.check(0, 1, b"abd"), Err(Error::Corrupt { .. })));
        assert!(matches!(t.check(0, 2, b"abc"), Err(Error::Corrupt { .. })));
    }

    /// A special zeros chunk of 256 4-byte items, with the given flags and filters bytes.
    fn zeros_chunk(flags: u8, filters: [u8; 6], blocksize: u8) -> Vec<u8> {
        let mut c = vec![0u8; 32];
        c[..4].copy_from_slice(&[5, 1, flags, 4]);
        c[4..8].copy_from_slice(&256i32.to_le_bytes());
        c[8] = blocksize;
        c[12] = 32;
        c[16..22].copy_from_slice(&filters);
        c[31] = 0x10;
        c
    }

    #[test]
    fn special_chunks_hash_by_what_they_mean() {
        // The chunk written in memory, and the one c-blosc2 rebuilds from a frame.
        let written = zeros_chunk(0x95, [0, 0, 0, 0, 0, 1], 0x40);
        let rebuilt = zeros_chunk(0x05, [0; 6], 0x80);
        assert_ne!(xxh3(&written), xxh3(&rebuilt));
        assert_eq!(hash_v2(&written), hash_v2(&rebuilt));
        // What they mean differs: kind, item size, size, value.
        let mut nans = rebuilt.clone();
        nans[31] = 0x20;
        let mut wider = rebuilt.clone();
        wider[3] = 8;
        let mut longer = rebuilt.clone();
        longer[5] = 2;
        let mut value = rebuilt.clone();
        value[31] = 0x30;
        value.extend_from_slice(&[1, 2, 3, 4]);
        let mut other = value.clone();
        other[35] = 5;
        let all = [&rebuilt, &nans, &wider, &longer, &value, &other].map(|c| hash_v2(c));
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| a != b), "{all:x?}");
        }
        // Regular chunks hash their bytes.
        let mut plain = rebuilt.clone();
        plain[31] = 0;
        assert_eq!(hash_v2(&plain), xxh3(&plain));
        assert_eq!(hash_v2(b""), xxh3(b""));
    }

    #[test]
    fn names_one_character_off_are_recognised() {
        for name in ["cater\u{fffd}a.xxh3", "katerva.xxh3", "caterva.8xh3", "caterva.xxh2"] {
            assert!(one_off(name, VLMETA_NAME), "{name}");
        }
        for name in [VLMETA_NAME, "caterva.xxh", "caterva.xxh33", "katerva.xxh2", "history"] {
            assert!(!one_off(name, VLMETA_NAME), "{name}");
        }
    }

    #[test]
    fn garbage_tables_are_refused() {
        let corrupt =
            [&b""[..], b"\xc4\x00", b"\xc4\x02\x01\x00", b"\xc4\x01\x02", b"\x93\x01\x02\x03", b"\xc4\x09\x01"];
        for bad in corrupt {
            assert!(matches!(Table::decode(bad), Err(Error::Corrupt { chunk: -1, .. })), "{bad:?}");
        }
        assert!(matches!(Table::decode(b"\xc4\x01\x07"), Err(Error::InvalidFormat(_))));
    }

    #[test]
    fn every_damaged_byte_of_a_version_2_table_is_refused() {
        let mut t = Table::new(8);
        (0..5).for_each(|s| t.push(s * 1000));
        t.record(Layer::Meta, "b2nd", b"geometry");
        t.record(Layer::VlMeta, "history", b"written");
        t.set_marker();
        let enc = t.take_dirty().unwrap();
        for at in 0..enc.len() {
            for bit in 0..8 {
                let mut b = enc.clone();
                b[at] ^= 1 << bit;
                assert!(Table::decode(&b).is_err(), "byte {at} bit {bit}");
            }
        }
        for cut in 0..enc.len() {
            assert!(Table::decode(&enc[..cut]).is_err(), "cut at {cut}");
        }
    }
}
