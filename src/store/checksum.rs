//! Per-chunk checksums, kept in a variable-length metalayer.
//!
//! Blosc2 frames carry no checksum of their own (the BLZ format this one
//! descends from put one after every chunk). When a context asks for them
//! ([`crate::Config::checksums`]), an array records the XXH3-64 hash of each
//! compressed chunk, exactly as c-blosc2 hands the chunk back, in the
//! vlmetalayer [`VLMETA_NAME`]. Every read of a chunk checks its hash, and
//! every write through this library keeps the table current. Readers that do
//! not know the vlmetalayer (python-caterva, python-blosc2, c-blosc2) ignore it.
//!
//! The content is a MessagePack `bin` (so that python-blosc2, which decodes
//! every vlmetalayer as MessagePack, shows it as bytes) holding a version byte
//! (1) followed by one little-endian `u64` per chunk.

use crate::error::{Error, Result};

/// The vlmetalayer holding the table. Reserved: users cannot add or update it.
pub const VLMETA_NAME: &str = "caterva.xxh3";

const VERSION: u8 = 1;

/// The checksum of one compressed chunk.
#[must_use]
pub fn hash(chunk: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(chunk)
}

/// The table of an array's chunk checksums, and whether it differs from
/// the stored copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    sums: Vec<u64>,
    dirty: bool,
}

impl Table {
    /// A table for a super-chunk whose chunks hash to `sums`, to be stored.
    pub(crate) fn new(sums: Vec<u64>) -> Self {
        Table { sums, dirty: true }
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
        let got = hash(chunk);
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

    /// The encoded table if it changed since the last call.
    pub(crate) fn take_dirty(&mut self) -> Option<Vec<u8>> {
        std::mem::replace(&mut self.dirty, false).then(|| encode(&self.sums))
    }

    /// Mark the table as not stored (after a failed write of it).
    pub(crate) fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The table as decoded from a stored vlmetalayer (clean).
    pub(crate) fn decode(content: &[u8]) -> Result<Self> {
        let bad = |why: &str| Error::InvalidFormat(format!("vlmetalayer '{VLMETA_NAME}' {why}"));
        let mut rd = content;
        let len = rmp::decode::read_bin_len(&mut rd).map_err(|_| bad("is not a MessagePack bin"))? as usize;
        if len != rd.len() {
            return Err(bad("has a length that does not match its content"));
        }
        let (&version, body) = rd.split_first().ok_or_else(|| bad("is empty"))?;
        if version != VERSION {
            return Err(bad(&format!("has version {version}; this library reads version {VERSION}")));
        }
        if body.len() % 8 != 0 {
            return Err(bad("is not a whole number of 64-bit checksums"));
        }
        let sums = body.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        Ok(Table { sums, dirty: false })
    }
}

fn encode(sums: &[u64]) -> Vec<u8> {
    let body = 1 + 8 * sums.len();
    let mut out = Vec::with_capacity(body + 5);
    rmp::encode::write_bin_len(&mut out, body as u32).expect("writing to a Vec cannot fail");
    out.push(VERSION);
    for s in sums {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_round_trips_and_tracks_changes() {
        let mut t = Table::new(vec![1, 2, 3]);
        let enc = t.take_dirty().expect("new tables are dirty");
        assert!(t.take_dirty().is_none());
        let mut d = Table::decode(&enc).unwrap();
        assert_eq!(d.sums, vec![1, 2, 3]);
        d.reorder(&[2, 0, 1]);
        d.remove(1);
        d.push(9);
        d.set(0, 7);
        assert_eq!(d.sums, vec![7, 2, 9]);
        assert!(d.take_dirty().is_some());
    }

    #[test]
    fn check_reports_mismatches_and_stale_tables() {
        let t = Table::new(vec![hash(b"abc")]);
        assert!(t.check(0, 1, b"abc").is_ok());
        assert!(matches!(t.check(0, 1, b"abd"), Err(Error::Corrupt { .. })));
        assert!(matches!(t.check(0, 2, b"abc"), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn garbage_tables_are_refused() {
        for bad in [&b""[..], b"\xc4\x00", b"\xc4\x02\x01\x00", b"\xc4\x01\x02", b"\x93\x01\x02\x03", b"\xc4\x09\x01"] {
            assert!(matches!(Table::decode(bad), Err(Error::InvalidFormat(_))), "{bad:?}");
        }
    }
}
