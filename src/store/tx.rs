//! Changing a store: a transaction ([`Tx`]), whose operations are the
//! only writes there are, and [`Batch`], chunks appended by the many.

use crate::blosc2;

use super::schunk::SChunk;

use super::checksum::{checked_chunk, chunk_hash, Layer, Table, MARKER_CONTENT, MARKER_NAME, VLMETA_NAME};
use super::frame_check;
use super::journal::{Journal, Op, TxJournal};
use crate::blosc2::{Special, MAX_METALAYERS};
use crate::error::{Error, Result};

/// Chunks appended by the many: each pushed chunk waits until enough of
/// them do ([`Batch::due`]), then they go in with one [`Tx::append_chunks`]
/// (one pass over the frame). A new array's or a copy's chunks go in this
/// way, so building N chunks costs O(N).
#[derive(Default)]
pub(crate) struct Batch {
    pending: Vec<Vec<u8>>,
    bytes: usize,
    /// The chunks appended so far, for the caller to reuse ([`Batch::spent`]).
    spent: Vec<Vec<u8>>,
}

impl Batch {
    /// Compressed bytes that wait before they are appended, at most: a
    /// journaled write (each append syncs its journal at full durability).
    pub(crate) const BYTES: usize = 64 << 20;

    /// The same for a write that is not journaled (a new array, built
    /// beside its path): a few MiB, so that the chunks are written while
    /// they are still in the CPU's caches (64 MiB at a time made a
    /// one-thread write 1.5 times slower than c-blosc2's chunk by chunk).
    const UNJOURNALED_BYTES: usize = 8 << 20;

    /// Whether the pending chunks go in now: [`Batch::BYTES`] of them, or
    /// [`Batch::UNJOURNALED_BYTES`] when `tx` is not journaled, but never
    /// less than 64 times the offsets index each append rewrites, so that a
    /// huge array rewrites its index a bounded number of times per byte.
    fn due(&self, tx: &Tx<'_>) -> bool {
        let base = if tx.journaled() { Self::BYTES } else { Self::UNJOURNALED_BYTES };
        let index = usize::try_from(tx.nchunks()).unwrap_or(usize::MAX).saturating_mul(8 * 64);
        self.bytes >= base.max(index)
    }

    /// Append `chunk` after those pushed before it (now, or with later ones).
    pub(crate) fn push(&mut self, tx: &mut Tx<'_>, chunk: Vec<u8>) -> Result<()> {
        self.bytes += chunk.len();
        self.pending.push(chunk);
        if self.due(tx) {
            self.flush(tx)?;
        }
        Ok(())
    }

    /// Append what waits.
    pub(crate) fn flush(&mut self, tx: &mut Tx<'_>) -> Result<()> {
        tx.append_chunks(&self.pending)?;
        self.spent.append(&mut self.pending);
        self.bytes = 0;
        Ok(())
    }

    /// The buffers of the chunks appended since the last call.
    pub(crate) fn spent(&mut self) -> std::vec::Drain<'_, Vec<u8>> {
        self.spent.drain(..)
    }
}

/// A transaction on a [`Store`]: its operations are the only writes there
/// are. Each one is journaled (on a persistent store, inside
/// [`Store::write`]) before it runs and recorded in the checksum table after.
pub(crate) struct Tx<'s> {
    pub(super) sc: &'s mut SChunk,
    pub(super) sums: &'s mut Option<Table>,
    pub(super) journal: TxJournal,
    /// A new store with checksums: the header marker is added before the
    /// first chunk operation (c-blosc2 adds metalayers to a frame only
    /// while it has no chunks).
    pub(super) marker_due: bool,
}

impl Tx<'_> {
    /// Before an operation: the fault-injection point of the tests, then
    /// the journal's record of what `ops` may overwrite.
    fn before(&mut self, ops: &[Op]) -> Result<()> {
        #[cfg(test)]
        super::tests::fault::hit()?;
        #[cfg(feature = "testing")]
        super::hooks::hook("op");
        self.journal.before(self.sc, ops)
    }

    /// After an operation: the journal's record of the state it left, then
    /// the checksum table's. A change that cannot be recorded leaves a table
    /// that no longer matches, so reads report it instead of trusting stale sums.
    fn track(&mut self, change: impl FnOnce(&SChunk, &mut Table) -> Result<()>) -> Result<()> {
        self.journal.after()?;
        match self.sums.as_mut() {
            Some(t) => change(self.sc, t),
            None => Ok(()),
        }
    }

    /// Number of chunks.
    pub(crate) fn nchunks(&self) -> i64 {
        self.sc.nchunks()
    }

    /// Whether the changes are journaled (an array-level write of a
    /// persistent store; not a new store being built).
    fn journaled(&self) -> bool {
        !matches!(self.journal, TxJournal::Idle)
    }

    /// Whether a fixed-size metalayer exists.
    pub(crate) fn meta_exists(&self, name: &str) -> bool {
        self.sc.meta_exists(name)
    }

    /// Add the header marker if it is due (see [`Tx::marker_due`]).
    pub(super) fn place_marker(&mut self) -> Result<()> {
        if std::mem::take(&mut self.marker_due) {
            self.add_marker()?;
        }
        Ok(())
    }

    /// Add the header marker to a store with a version-2 table, where
    /// c-blosc2 allows it (no frame, or no chunks yet) and a metalayer slot
    /// is free; otherwise the table records that there is none.
    fn add_marker(&mut self) -> Result<()> {
        let Some(t) = self.sums.as_ref() else { return Ok(()) };
        if t.version() < 2 || t.marker() {
            return Ok(());
        }
        if self.sc.meta_get(MARKER_NAME).as_deref() == Some(MARKER_CONTENT) {
            self.sums.as_mut().map(Table::set_marker);
            return Ok(());
        }
        if !self.sc.meta_addable() || self.sc.meta_exists(MARKER_NAME) || self.sc.meta_names().len() >= MAX_METALAYERS {
            return Ok(());
        }
        self.before(&[Op::Meta])?;
        self.sc.meta_add(MARKER_NAME, MARKER_CONTENT)?;
        self.sums.as_mut().map(Table::set_marker);
        self.journal.after()
    }

    /// Append a compressed chunk.
    pub(crate) fn append_chunk(&mut self, chunk: &[u8]) -> Result<()> {
        self.place_marker()?;
        let n = self.sc.nchunks();
        self.before(&[Op::Append])?;
        self.sc.append_chunk(chunk)?;
        self.track(|sc, t| chunk_hash(sc, t, n).map(|h| t.push(h)))
    }

    /// Append compressed chunks, in order, as one operation: journaled once,
    /// written in one pass over the frame ([`SChunk::append_chunks`]), the
    /// checksum table extended once. Growing by K chunks costs O(K) (plus
    /// one rewrite of the offsets index), where K calls of
    /// [`Tx::append_chunk`] would rewrite it K times.
    pub(crate) fn append_chunks<C: AsRef<[u8]>>(&mut self, chunks: &[C]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.place_marker()?;
        let n = self.sc.nchunks();
        self.before(&[Op::Append])?;
        let refs: Vec<&[u8]> = chunks.iter().map(AsRef::as_ref).collect();
        let done = self.sc.append_chunks(&refs);
        // In memory a failure may leave some chunks appended (nothing rolls
        // them back): the table follows what is there.
        let applied = (self.sc.nchunks() - n).clamp(0, refs.len() as i64);
        if let Some(t) = self.sums.as_mut() {
            for i in 0..applied {
                // A version-2 table hashes special chunks by meaning: the bytes
                // given hash as c-blosc2 hands them back (version 1 reads them back).
                let c = refs[i as usize];
                let h = if t.version() >= 2 {
                    t.hash(blosc2::chunk_info(c).map_or(c, |info| &c[..info.cbytes]))
                } else {
                    chunk_hash(self.sc, t, n + i)?
                };
                t.push(h);
            }
        }
        done?;
        self.journal.after()
    }

    /// Append `chunk` `n` times, [`Batch::BYTES`] of them at a time (a
    /// value-filled array: one chunk, many times).
    pub(crate) fn append_repeated(&mut self, chunk: &[u8], n: i64) -> Result<()> {
        let per_batch = (Batch::BYTES / chunk.len().max(1)).max(1) as i64;
        let mut left = n;
        while left > 0 {
            let k = left.min(per_batch);
            self.append_chunks(&vec![chunk; k as usize])?;
            left -= k;
        }
        Ok(())
    }

    /// Replace several chunks, in order (journaled in one go).
    pub(crate) fn update_chunks<C: AsRef<[u8]>>(&mut self, chunks: &[(i64, C)]) -> Result<()> {
        // An unreadable header: blosc2 refuses it below, but save as if it fitted.
        let cbytes = |c: &C| blosc2::chunk_info(c.as_ref()).map_or(0, |i| i.cbytes as u64);
        let ops: Vec<Op> = chunks.iter().map(|(n, c)| Op::Update { nchunk: *n, cbytes: cbytes(c) }).collect();
        self.place_marker()?;
        self.before(&ops)?;
        for (n, chunk) in chunks {
            let n = *n;
            self.sc.update_chunk(n, chunk.as_ref())?;
            if let Some(t) = self.sums.as_mut() {
                let h = chunk_hash(self.sc, t, n)?;
                t.set(n as usize, h);
            }
        }
        self.journal.after()
    }

    /// Remove chunk `n`; the chunks after it move down by one.
    pub(crate) fn delete_chunk(&mut self, n: i64) -> Result<()> {
        self.place_marker()?;
        self.before(&[Op::Delete(n)])?;
        self.sc.delete_chunk(n)?;
        self.track(|_, t| {
            t.remove(n as usize);
            Ok(())
        })
    }

    /// Permute the chunks without touching their data: chunk `i` becomes
    /// the one that was at `order[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `order` is not a permutation of the chunk indices.
    pub(crate) fn reorder(&mut self, order: &[i64]) -> Result<()> {
        let n = self.sc.nchunks();
        let mut seen = vec![false; order.len()];
        let valid = order.len() as i64 == n
            && order.iter().all(|&o| o >= 0 && o < n && !std::mem::replace(&mut seen[o as usize], true));
        if !valid {
            return Err(Error::InvalidArgument("chunk order is not a permutation".into()));
        }
        if order.iter().enumerate().all(|(i, &o)| i as i64 == o) {
            return Ok(());
        }
        self.place_marker()?;
        self.before(&[Op::Meta])?;
        self.sc.reorder(order)?;
        self.track(|_, t| {
            t.reorder(order);
            Ok(())
        })
    }

    /// Fill an empty store with `nchunks` special chunks of `chunk_nbytes` bytes.
    pub(crate) fn fill_special(&mut self, nchunks: i64, chunk_nbytes: usize, kind: Special) -> Result<()> {
        if nchunks == 0 {
            return Ok(());
        }
        self.place_marker()?;
        self.before(&[Op::Meta])?;
        self.sc.fill_special(nchunks, chunk_nbytes, kind)?;
        // Every special chunk of one kind comes back as the same bytes.
        self.track(|sc, t| {
            let sum = chunk_hash(sc, t, 0)?;
            (0..nchunks).for_each(|_| t.push(sum));
            Ok(())
        })
    }

    /// Add a fixed-size metalayer (only before the first chunk).
    pub(crate) fn meta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.before(&[Op::Meta])?;
        self.sc.meta_add(name, content)?;
        self.track_meta(name);
        self.journal.after()
    }

    /// Replace a fixed-size metalayer's content (never longer than it was).
    pub(crate) fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.before(&[Op::Meta])?;
        self.sc.meta_update(name, content)?;
        self.track_meta(name);
        self.journal.after()
    }

    /// Record a fixed-size metalayer's content as stored (padded, for an update).
    fn track_meta(&mut self, name: &str) {
        if let (Some(t), Some(content)) = (self.sums.as_mut(), self.sc.meta_get(name)) {
            t.record(Layer::Meta, name, &content);
        }
    }

    /// Add (`update == false`) or replace a variable-length metalayer.
    pub(crate) fn vlmeta_put(
        &mut self,
        name: &str,
        content: &[u8],
        update: bool,
        cparams: &blosc2::CParams,
    ) -> Result<()> {
        // Stored only if an open will accept it, by the rules an open
        // applies. Up to METADATA_FREE bytes it always will; above, the
        // chunk c-blosc2 will store decides.
        if content.len() as i64 > frame_check::METADATA_FREE {
            frame_check::check_vlmetalayer(name, &super::schunk::compress_vlmeta(content, cparams)?)?;
        }
        self.before(&[Op::Meta])?;
        self.sc.vlmeta_put(name, content, update, cparams)?;
        // What c-blosc2 did store, by the same rules (the transaction is rolled back if not).
        if let Some(stored) = self.sc.vlmeta_stored(name) {
            frame_check::check_vlmetalayer(name, &stored)?;
        }
        if let Some(t) = self.sums.as_mut() {
            t.record(Layer::VlMeta, name, content);
        }
        self.journal.after()
    }

    /// Start keeping per-chunk checksums: hash every chunk now, record the
    /// metadata and add the header marker where c-blosc2 allows it (the
    /// table is stored when the transaction commits). A store with a
    /// version-1 table has every chunk checked against it, then gets a
    /// version-2 table; nothing happens to one with a version-2 table.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if a chunk fails its version-1 checksum; as
    /// reading chunks and metalayers.
    pub(crate) fn enable_checksums(&mut self) -> Result<()> {
        if let Some(old) = self.sums.as_ref().filter(|t| t.version() < 2) {
            for n in 0..self.sc.nchunks() {
                checked_chunk(self.sc, Some(old), n)?;
            }
        } else if self.sums.is_some() {
            return Ok(());
        }
        let mut t = Table::new(u32::try_from(self.sc.typesize()).unwrap_or(0));
        for n in 0..self.sc.nchunks() {
            let h = chunk_hash(self.sc, &t, n)?;
            t.push(h);
        }
        for name in self.sc.meta_names() {
            if let Some(content) = self.sc.meta_get(&name) {
                t.record(Layer::Meta, &name, &content);
            }
        }
        for name in self.sc.vlmeta_names() {
            if let Some(content) = self.sc.vlmeta_get(&name)? {
                t.record(Layer::VlMeta, &name, &content);
            }
        }
        *self.sums = Some(t);
        self.add_marker()
    }

    /// Store the checksum table if it changed since it was last stored.
    pub(super) fn store_checksums(&mut self) -> Result<()> {
        let Some(content) = self.sums.as_mut().and_then(Table::take_dirty) else { return Ok(()) };
        // A table that a reader would refuse (the bound on metadata of
        // frame_check, which keeps hostile files from making c-blosc2
        // allocate gigabytes) is not written: the write fails instead.
        if content.len() as i64 > frame_check::METADATA_FREE {
            self.sums.as_mut().map(Table::mark_dirty);
            return Err(Error::InvalidArgument(format!(
                "an array of {} chunks is too large for a checksum table ({} bytes, {} at most); use fewer, \
                 larger chunks or no checksums",
                self.sc.nchunks(),
                content.len(),
                frame_check::METADATA_FREE
            )));
        }
        let update = self.sc.vlmeta_exists(VLMETA_NAME)?;
        let r = self.vlmeta_put(VLMETA_NAME, &content, update, &blosc2::CParams::default());
        if r.is_err() {
            self.sums.as_mut().map(Table::mark_dirty);
        }
        r
    }

    /// The transaction succeeded: store the table with the changes it
    /// describes, then commit the journal.
    pub(super) fn commit(&mut self) -> Result<(bool, Option<Box<Journal>>)> {
        self.store_checksums()?;
        self.journal.commit(self.sc)
    }

    /// Leave the journal on disk and stop journaling, as a process killed
    /// in the middle of the transaction would (for the recovery tests).
    #[cfg(test)]
    pub(crate) fn crash(&mut self) {
        self.journal = TxJournal::Idle;
    }
}
