//! [`Array::verify`]: check the array's checksum table and recorded metadata
//! again, then read every chunk back and report the ones that cannot be
//! read, one [`ChunkProblem`] each.
//!
//! The table, its header marker and the metadata it records are checked
//! when an array is opened (a damaged one does not open: see
//! `store/checksum.rs`); `verify` checks them once more, in case the
//! super-chunk changed underneath (C callers reach it through `arr->sc`),
//! and reports a failure as a problem of chunk -1.
//!
//! The check of the chunks is a per-chunk loop (`Array::check_chunk`): each chunk is
//! fetched from its storage, checked against its checksum when the array
//! keeps them (see [`Array::has_checksums`]; a flipped bit in the codec's payload
//! is caught only this way), and decompressed in full into a worker's
//! scratch buffer. Chunks are checked in parallel on the array's context pool, in
//! batches, so that progress is reported from the calling thread.

use crate::array::Array;
use crate::context::Worker;
use crate::engine;
use crate::error::{Error, Result};

/// A chunk that failed a check, or (`nchunk == -1`) the array's checksum
/// table and metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkProblem {
    /// Index of the chunk in the super-chunk; -1 for the checksum table
    /// and the metadata it records.
    pub nchunk: i64,
    /// What is wrong with it.
    pub error: Error,
}

impl std::fmt::Display for ChunkProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nchunk < 0 {
            write!(f, "checksum table and metadata: {}", self.error)
        } else {
            write!(f, "chunk {}: {}", self.nchunk, self.error)
        }
    }
}

impl Array {
    /// Whether this array keeps per-chunk checksums: the XXH3-64 of every
    /// compressed chunk, in the vlmetalayer `caterva.xxh3` (with a record of
    /// the metadata, checked on opening), checked on every read (a mismatch
    /// is [`Error::Corrupt`]).
    #[must_use]
    pub fn has_checksums(&self) -> bool {
        self.store.has_checksums()
    }

    /// Start keeping per-chunk checksums: hash every chunk now, record the
    /// metadata, store the table, and keep it current on every later write
    /// through this library. The header marker that lets a reader recognise
    /// the array even if the table's name is damaged is added only where
    /// c-blosc2 can still add a metalayer: an in-memory array that is not a
    /// contiguous frame, or one without chunks; other arrays converted
    /// later are recognised by the table's name, even with one character
    /// of it damaged. An array with a table of version 1 (written before
    /// the metadata was recorded) has every chunk checked against it and
    /// gets a table of version 2; nothing happens to one with version 2.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if a chunk fails its version-1 checksum;
    /// [`Error::Blosc`] if a chunk cannot be read or the table cannot be stored.
    pub fn enable_checksums(&mut self) -> Result<()> {
        self.store.write(|tx| tx.enable_checksums())
    }

    /// Read and decompress every chunk, returning the problems found (an
    /// empty list when the array is sound). `progress(done, total)` is
    /// called on the calling thread as chunks complete, first with
    /// `done == 0` and last with `done == total`.
    ///
    /// Chunks are checked in parallel with the context's threads. A chunk
    /// the super-chunk never initialised (sparse frames) reads as zeros and
    /// is sound.
    ///
    /// The checksum table, its header marker and the metadata it records
    /// are checked first (they are when the array is opened, too); a failure
    /// there is a problem with `nchunk == -1`.
    ///
    /// # Errors
    /// Every failure that belongs to a chunk or the table (damage) is
    /// reported in the list, not here. Here: a chunk that could not be
    /// read at all ([`crate::Error::Io`], or [`crate::Error::InvalidStorage`]:
    /// the storage failed, a server went away or refused), which says
    /// nothing of the array; verifying stops at the first batch that has
    /// one. [`crate::Error::Io`] if the context's threads cannot be started
    /// (in a forked child, which starts its own on first use).
    pub fn verify(&self, progress: &mut dyn FnMut(i64, i64)) -> Result<Vec<ChunkProblem>> {
        let total = self.store.nchunks();
        let ctx = self.context();
        let batch = engine::batch_len(ctx) as i64;
        let mut problems = Vec::new();
        if let Err(error) = self.store.check_integrity() {
            problems.push(ChunkProblem { nchunk: -1, error });
        }
        progress(0, total);
        let mut done = 0;
        while done < total {
            let end = (done + batch).min(total);
            let chunks: Vec<i64> = (done..end).collect();
            let split = engine::write_split(ctx, self.geometry(), chunks.len());
            // After a chunk the storage could not give, the others of the
            // batch are not asked for (each would wait out its retries).
            let gave_up = std::sync::atomic::AtomicBool::new(false);
            let found = engine::run_tasks(ctx, &chunks, split, |w, &n| {
                if gave_up.load(std::sync::atomic::Ordering::Relaxed) {
                    return Ok(None);
                }
                let problem = self.check_chunk(w, n, split.blosc).err().map(|error| ChunkProblem { nchunk: n, error });
                if problem.as_ref().is_some_and(|p| unreadable(&p.error)) {
                    gave_up.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(problem)
            })?;
            let mut found: Vec<ChunkProblem> = found.into_iter().flatten().collect();
            if let Some(at) = found.iter().position(|p| unreadable(&p.error)) {
                return Err(found.swap_remove(at).error);
            }
            problems.extend(found);
            done = end;
            progress(done, total);
        }
        Ok(problems)
    }

    /// Every check of chunk `n`, in order; the first failure is its problem.
    fn check_chunk(&self, w: &mut Worker, n: i64, nthreads: usize) -> Result<()> {
        // The chunk is fetched (which checks its checksum, if it has one) and
        // decompresses to a whole chunk of the geometry (leaving it in
        // `w.bufs.scratch` for any check that follows).
        w.codecs.load(&mut w.bufs.scratch, &self.store, self.geometry(), n, None, nthreads)?;
        Ok(())
    }
}

/// Whether `e`, a chunk's failure, says the storage could not be read
/// (rather than that what it read is damaged).
fn unreadable(e: &crate::error::Error) -> bool {
    matches!(e.kind(), crate::error::ErrorKind::Io | crate::error::ErrorKind::InvalidStorage)
}

#[cfg(test)]
mod tests {
    use crate::{Array, Config, Context, Params, StorageParams};

    fn array() -> (Context, Array) {
        let ctx = Context::new(Config { nthreads: 2, checksums: true, ..Config::default() }).unwrap();
        let params = Params { itemsize: 8, shape: vec![10, 10], dtype: None };
        let storage = StorageParams { chunkshape: vec![4, 4], blockshape: vec![2, 2], ..Default::default() };
        let data: Vec<u8> = (0..100u64).flat_map(|v| (v * v).to_le_bytes()).collect();
        let arr = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
        (ctx, arr)
    }

    #[test]
    fn a_sound_array_has_no_problems_and_progress_counts_up() {
        let (_, arr) = array();
        let mut calls = Vec::new();
        assert!(arr.verify(&mut |done, total| calls.push((done, total))).unwrap().is_empty());
        assert_eq!(calls.first(), Some(&(0, 9)));
        assert_eq!(calls.last(), Some(&(9, 9)));
        assert!(calls.windows(2).all(|w| w[0].0 < w[1].0), "{calls:?}");
    }

    #[test]
    fn a_damaged_chunk_is_reported_alone() {
        let (ctx, arr) = array();
        let chunk = arr.store().chunk(4).unwrap().bytes().to_vec();
        let mut frame = arr.to_cframe().unwrap();
        let at = (0..frame.len() - chunk.len()).find(|&i| frame[i..i + chunk.len()] == chunk[..]).unwrap();
        // The last byte of the codec's payload: only the checksum sees it (a
        // damaged header is refused when the frame is opened).
        frame[at + chunk.len() - 1] ^= 0x01;
        let damaged = Array::from_cframe(&ctx, &frame).unwrap();
        let problems = damaged.verify(&mut |_, _| {}).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].nchunk, 4);
        assert!(problems[0].to_string().starts_with("chunk 4: corrupt data"), "{}", problems[0]);
    }
}
