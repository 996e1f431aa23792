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
//! - An append of many chunks at once (`Tx::append_chunks`, written by
//!   `super::schunk::append_on_disk` rather than by c-blosc2) writes the same places
//!   as that many appends: the new chunks from `header_len + cbytes` on (new
//!   chunk files numbered past every number in use), then the offsets chunk
//!   and trailer after them, the truncation, the header. It is one
//!   operation ([`Op::Append`]) for the journal.
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
//! Records carry a checksum; a record cut short at the end is one whose
//! change never started and is ignored; a journal that is otherwise damaged
//! is refused rather than guessed at.
//!
//! # Who may write, who may recover
//!
//! Every handle of an array, in any process, takes the array's lock
//! (`<urlpath>.caterva-lock`, see [`super::lock`]) for each transaction
//! (`Store::write`: from before its first change until the journal
//! is committed or rolled back), and for opening ([`recover`], then parsing
//! the frame), creating, replacing and removing. So:
//!
//! - an opener waits for a write in progress to finish, then sees the state
//!   after it; it never sees the journal or the frame of a live write, and
//!   a journal it does see was left by a writer that is gone, which it
//!   rolls back;
//! - two writers take turns. Each handle also remembers what the frame's
//!   header and tail (or sparse index) looked like after its own last
//!   change ([`super::frame::fingerprint`]); a handle whose array another
//!   handle changed since is refused with [`Error::InvalidStorage`] ("was
//!   changed by another handle") before it changes anything, since what it
//!   knows of the frame (chunk offsets, lengths) is out of date: it must
//!   reopen the array.
//!
//! The journal file is also locked (`flock`) while its write runs, and a
//! journal still being made (`…caterva-journal-tmp`) is left alone while
//! locked: this keeps a process that does not take the array's lock (an
//! earlier version) from rolling back a live write.
//!
//! # A journal belongs to one state of its array
//!
//! A journal undoes a write by putting back bytes saved from the state it
//! was written against; applied to anything else (a backup copied over the
//! array since: `cp` keeps the inode), it would turn that into a mix.
//! Recovery therefore applies a journal only if the array is consistent
//! with being that state part-way through the write. The write rewrites the
//! header and everything past the data section (offsets, trailer, chunks it
//! appends), and overwrites chunks inside the data section (a file) or
//! chunk files (a directory) only after saving them; it leaves the rest
//! alone. The checks, each of which a real interrupted write passes:
//!
//! - always: the file (for a directory, its index) is the same one (device
//!   and inode); for a file, sampled bytes of the data section
//!   `[header_len, data_end)` as of the journal's making (all of it up to
//!   64 KiB, else 16 windows of 4 KiB from its start to its end) read now,
//!   with the original bytes of the chunks the journal saved put back, hash
//!   as they did then (so the file also still reaches `data_end`); for a
//!   directory, the same over up to 16 of the chunk files the index used
//!   (number, length, first 4 KiB; the journal's copy for those it saved),
//!   each of which must still be there. The data sampled was on disk before
//!   the write began, so this holds after a power failure too.
//! - if the system has not restarted since the journal was made (Linux's
//!   boot id is recorded), the kernel kept every write of the dead writer,
//!   in order and with its time, so also: the file's (index's) modification
//!   time is not older than it was then (2 s allowed for clock steps: a
//!   copy restored with its timestamps is older); and the journal records
//!   the frame's fingerprint (header and tail, or index:
//!   [`super::frame::fingerprint`]) after each operation and announces
//!   each operation (and a rollback) before it changes anything, so when
//!   its last record is such a fingerprint, the writer died between two
//!   operations and the frame must match it exactly. After a restart these
//!   are not used: what the system had not yet put on disk may be lost.
//!
//! A journal that fails a check is not applied: it is renamed
//! `<urlpath>.caterva-journal.stale` (replacing an older one), a warning
//! goes to stderr, and the array opens as it is. The checks are sound but
//! not complete: a copy restored over an array whose writer died inside an
//! operation (or before a restart), which differs from the journaled state
//! only outside the sample (for a directory: whose sampled chunk files the
//! write had all saved), is still taken for the interrupted write and
//! rolled "back". A copy equal to the journaled state is harmless either
//! way (the rollback writes back what is there). To restore a backup
//! safely, open the array once first (which rolls back and removes the
//! journal), or remove `<urlpath>.caterva-journal`.
//!
//! The syncs guard against power failures and operating-system crashes; a
//! killed process is covered without them (the kernel keeps what it was
//! given, in order). A handle at [`Durability::Process`] makes none, and
//! `CATERVA_JOURNAL_SYNC=0` in the environment turns them off for every
//! handle (and for recovery).
//!
//! # What each sync is for ([`Durability::Full`])
//!
//! A one-row write (one operation, nothing saved beyond the base records)
//! makes these, in order:
//!
//! 1. the journal's data, before it gets its name: a named journal whose
//!    base records did not reach the disk would be refused as corrupt, and
//!    the array could not be opened;
//! 2. the directory holding the journal, after the rename: the journal's
//!    name must be on disk before the frame changes in place, or a power
//!    loss could keep part of the change and lose the journal that undoes it;
//! 3. at the commit, the frame: the file, or a sparse frame's index and
//!    each chunk file the write wrote (these cannot be merged: each is its
//!    own file), before the journal is removed;
//! 4. a sparse frame's directory, at the commit, only when the write
//!    created or removed chunk files (an append, a delete, a special chunk
//!    made real): a chunk file rewritten in place changes no entry.
//!
//! A handle that wrote without syncing before ([`Durability::Process`])
//! syncs, at its first synced commit, every chunk file of a sparse frame
//! and its directory (steps 3 and 4 for the whole frame), since the index
//! it syncs names files those writes made.
//!
//! A later operation of the same write syncs the journal again only when
//! it appends saved bytes (the old content of an original chunk it is about
//! to overwrite): its bare announcement ([`BEGIN`]), like the [`MARK`]
//! after each operation, is read only when the system has not restarted
//! since (see below), when the kernel kept it without a sync. The journal's
//! removal is not synced: if a power loss undoes it, the next open rolls
//! back that last write whole, which leaves the state before it (the
//! next write's journal, step 2, makes the removal durable).

//!
//! # Epochs ([`Durability::Normal`])
//!
//! At `Normal` a handle's writes share one journal, an epoch, made durable
//! together, as SQLite's WAL `NORMAL` makes its commits durable at the
//! checkpoint. The epoch's first write makes the journal as above (syncs 1
//! and 2). Each later write, before its first change, appends what undoes
//! it alone (the frame's length, header and tail, or the index and the
//! chunk file numbers, as they are then) and a [`WRITE`] record, unsynced;
//! the saves of its operations follow as above, but only those of chunks
//! the epoch started with, saved for the first time in the epoch, are
//! synced (the epoch's start can always be restored: its bytes reached the
//! disk before they were overwritten). A write's commit is a [`COMMIT`]
//! record with the frame's fingerprint, unsynced; the journal stays, and
//! its file stays locked by the handle. The epoch ends after
//! [`EPOCH_WRITES`] writes, [`EPOCH_AGE`] or [`EPOCH_BYTES`] of journal (at
//! the end of a write), when the handle's level changes, before it replaces
//! the array, and when it is dropped: the frame is synced as at a commit
//! (sync 3 and 4, over everything the epoch wrote), and the journal removed.
//!
//! Another handle finds such a journal locked, its last record a commit:
//! the array is in the state its owner's last write left. An opener opens
//! it as it is; a writer (holding the array's lock, so the owner is between
//! writes) ends the epoch itself: it syncs the whole frame and removes the
//! journal, and the owner, finding it gone at its next write, starts
//! another. A journal left by a handle that is gone is recovered: if the
//! system has not restarted since, the kernel kept every write, and only
//! the write after the last commit (if it began: a [`WRITE`] record, or no
//! commit at all) is undone; after a restart, what was not synced may be
//! lost, and the whole epoch is rolled back to its start. Either way the
//! whole frame is synced before the journal is removed. So after a power
//! loss the array is at a commit no older than the epoch's start, and
//! never torn; a killed process loses nothing that returned.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[cfg(doc)]
use super::durability::Durability;

use super::frame::{self, chunk_file, chunk_id, HEADER_MINLEN, SPARSE_INDEX};
use super::fs::read_at;
use super::fs::{
    finish_replace, is_our_leftover, parent_dir, remove_leftover, sidecar, suffixed, sync_dir, OLD_SUFFIX,
};
use super::identity;
use super::io::{self, OpenOptions};
use super::lock::try_lock;
use super::schunk::SChunk;
use crate::blosc2::chunk_header::POS_CBYTES as CHUNK_POS_CBYTES;
use crate::error::{Error, Result};

/// Suffix of the journal beside an array's urlpath.
const JOURNAL_SUFFIX: &str = ".caterva-journal";
/// Suffix of a journal being written (never valid; removed on open).
const TMP_SUFFIX: &str = ".caterva-journal-tmp";
/// Suffix, after the journal's name, of a journal that was not applied.
const STALE_SUFFIX: &str = ".stale";
const MAGIC: &[u8; 8] = b"CTVJRNL1";

// Record tags.
const TARGET: u8 = 1; // key: kind (0 file, 1 directory); payload: identity
const LENGTH: u8 = 2; // key: original file length
const BYTES: u8 = 3; // key: file offset; payload: original bytes
const INDEX_COPY: u8 = 4; // payload: the original index file
const CHUNK_IDS: u8 = 5; // payload: chunk file numbers in use (u64 LE each)
const CHUNK_FILE: u8 = 6; // key: chunk file number; payload: its original content
const BASE_END: u8 = 7; // end of the records written before any change
const STATE: u8 = 8; // key: the target's mtime (ns); payload: sample hash, then (file) header_len, data_end
const MARK: u8 = 9; // after an operation: payload: the frame's fingerprint then (not synced)
const BEGIN: u8 = 10; // before an operation after the first (or a rollback) changes the frame
const BOOT: u8 = 11; // payload: the system's boot id when the journal was made
const WRITE: u8 = 12; // end of the records a later write of an epoch wrote before its first change
const COMMIT: u8 = 13; // a write of an epoch is complete: payload: the frame's fingerprint then (not synced)

/// An epoch ([`Durability::Normal`]) ends after this many writes,
const EPOCH_WRITES: u32 = 1000;
/// or once it is this old at the end of a write,
const EPOCH_AGE: std::time::Duration = std::time::Duration::from_secs(1);
/// or once its journal is this long.
const EPOCH_BYTES: u64 = 16 << 20;

/// Modification times a clock step may put this far back are not taken as a sign of a restored copy.
const MTIME_SLACK_NS: u64 = 2_000_000_000;

/// A data section up to this long is sampled whole.
const SAMPLE_WHOLE: u64 = 64 * 1024;
/// Otherwise this many windows of [`SAMPLE_WINDOW`] bytes, spread over it.
const SAMPLE_WINDOWS: u64 = 16;
const SAMPLE_WINDOW: u64 = 4096;
/// How many of a sparse frame's chunk files are sampled (length and first [`SAMPLE_WINDOW`] bytes).
const SAMPLE_FILES: usize = 16;

const KIND_FILE: u64 = 0;
const KIND_DIR: u64 = 1;

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

/// The journal of one transaction (a `Tx`): idle, armed (made at
/// the first change), or open.
#[derive(Default)]
pub(crate) enum TxJournal {
    /// Writes are not journaled (in memory, or outside an array-level write).
    #[default]
    Idle,
    /// An array-level write has started; the journal is made at its first
    /// change. Whether it syncs ([`Durability::syncs`]), and whether its
    /// commit syncs the whole frame rather than what it changed.
    Armed {
        /// The journal and the changes are synced.
        sync: bool,
        /// The commit syncs every file of a sparse frame (earlier writes
        /// of the handle did not sync theirs).
        whole: bool,
        /// The write is one of an epoch ([`Durability::Normal`]): its
        /// commit leaves the journal, for the epoch's next write.
        batch: bool,
        /// The handle's epoch, if one is open: the write joins it.
        epoch: Option<Box<Journal>>,
    },
    /// The journal exists and covers the changes made so far.
    Open(Box<Journal>),
}

impl TxJournal {
    /// The slot of a transaction that starts now: the journal is made at
    /// its first change, if the super-chunk is persistent. With `sync`,
    /// the journal and the changes are synced to disk in order
    /// ([`Durability::Full`]); without, nothing is. With `whole` too, the
    /// commit syncs all of a sparse frame's files, not only those the write
    /// changed.
    ///
    /// With `batch` ([`Durability::Normal`]), the write is one of an epoch:
    /// it joins `epoch` (the handle's, still current) or starts one, and
    /// its commit hands the journal back ([`TxJournal::commit`]).
    pub(crate) fn armed(sync: bool, whole: bool, batch: bool, epoch: Option<Box<Journal>>) -> Self {
        TxJournal::Armed { sync, whole, batch, epoch }
    }

    /// Record what `ops` (about to run, in order) on `sc` may overwrite,
    /// making the journal first if they are the write's first changes.
    ///
    /// # Errors
    /// [`Error::Io`] if the journal cannot be written (then `ops` must not run).
    pub(crate) fn before(&mut self, sc: &SChunk, ops: &[Op]) -> Result<()> {
        match self {
            TxJournal::Idle => Ok(()),
            TxJournal::Armed { sync, whole, batch, epoch } => {
                *self = match (epoch.take(), sc.storage().urlpath) {
                    (Some(mut j), _) => {
                        j.begin_write(sc, ops)?;
                        TxJournal::Open(j)
                    }
                    (None, Some(url)) => {
                        TxJournal::Open(Box::new(Journal::begin(sc, &url, ops, *sync, *whole, *batch)?))
                    }
                    (None, None) => TxJournal::Idle,
                };
                Ok(())
            }
            TxJournal::Open(j) => j.before(sc, ops),
        }
    }

    /// An operation on `sc` that [`TxJournal::before`] announced has run: record
    /// the frame's state, so that recovery can tell it from another one.
    ///
    /// # Errors
    /// [`Error::Io`] if the frame cannot be read or the record written.
    pub(crate) fn after(&mut self) -> Result<()> {
        match self {
            TxJournal::Open(j) => j.mark(),
            _ => Ok(()),
        }
    }

    /// The write is complete: sync `sc`'s frame and delete the journal,
    /// or, in an epoch, record the commit in the journal and hand it back
    /// (second value). Returns whether a journal was committed (the write
    /// changed the frame). A write of an epoch that changed nothing hands
    /// back the epoch it was given.
    ///
    /// # Errors
    /// [`Error::Io`] if syncing, recording or deleting fails (the journal
    /// then stays open: [`TxJournal::abort`] rolls the write back).
    pub(crate) fn commit(&mut self, sc: &SChunk) -> Result<(bool, Option<Box<Journal>>)> {
        let out = match self {
            // On an error the journal stays open, for abort to roll back.
            TxJournal::Open(j) if j.batch => {
                j.commit_write(sc)?;
                true
            }
            TxJournal::Open(j) => {
                j.commit(sc)?;
                false
            }
            _ => false,
        };
        Ok(match std::mem::take(self) {
            TxJournal::Open(j) => (true, out.then_some(j)),
            TxJournal::Armed { epoch, .. } => (false, epoch),
            TxJournal::Idle => (false, None),
        })
    }

    /// The write failed: undo its changes on disk. Returns whether anything
    /// was undone (the caller must then reload the super-chunk).
    ///
    /// # Errors
    /// As [`recover`]; the journal then stays for the next open.
    pub(crate) fn abort(&mut self) -> Result<bool> {
        match std::mem::take(self) {
            TxJournal::Open(mut j) => {
                // In an epoch, only this write is undone; the epoch ends.
                rollback(&mut j.file, &j.path, &j.url, false, j.sync)?;
                Ok(true)
            }
            // An epoch this write never joined stays ([`TxJournal::unjoined`]).
            other => {
                *self = other;
                Ok(false)
            }
        }
    }

    /// The epoch a write was given and never joined (it changed nothing).
    pub(crate) fn unjoined(&mut self) -> Option<Box<Journal>> {
        match self {
            TxJournal::Armed { epoch, .. } => epoch.take(),
            _ => None,
        }
    }
}

/// A record to append: tag, key, payload.
type Save = (u8, u64, Vec<u8>);

/// What the journal protects, and what it has saved so far: of the state
/// the journal was made against (the original: of an epoch, its start),
/// and of the state the write in progress started from (the same, but for
/// the later writes of an epoch).
enum Layout {
    File {
        path: PathBuf,
        header_len: u64,
        /// `header_len + cbytes` when the journal was made: original chunks lie before it.
        data_end: u64,
        /// Offsets of the original chunks already saved.
        saved: BTreeSet<u64>,
        /// `data_end` when the write in progress began.
        w_data_end: u64,
        /// Offsets of the chunks the write in progress saved.
        w_saved: BTreeSet<u64>,
    },
    Dir {
        dir: PathBuf,
        /// Chunk files the original index uses.
        in_use: BTreeSet<i64>,
        saved: BTreeSet<i64>,
        /// A chunk was deleted (c-blosc2 removed its file): the directory's
        /// entries changed.
        removed: bool,
        /// Chunk files the index used when the write in progress began.
        w_in_use: BTreeSet<i64>,
        /// Those it saved.
        w_saved: BTreeSet<i64>,
        /// Of an epoch, the chunk file numbers its committed writes left in
        /// use that the original index did not use.
        made: BTreeSet<i64>,
    },
}

impl Layout {
    /// The bytes `ops` may overwrite that no record of the write in
    /// progress holds yet, and whether any of them are original bytes
    /// saved for the first time (which must be on disk, synced, before they
    /// are overwritten; the others only undo a write whose process died,
    /// when the kernel kept them anyway).
    ///
    /// In a file, only an update of a chunk by one that fits overwrites
    /// data. In a directory, only an update or delete of a chunk whose file
    /// the index uses: a new chunk file gets a number past every number in
    /// use, and a number that high that was in use has left the index
    /// since, by such an update or delete, which saved it.
    fn saves(&mut self, sc: &SChunk, ops: &[Op]) -> Result<(Vec<Save>, bool)> {
        if let Layout::Dir { removed, .. } = self {
            *removed |= ops.iter().any(|op| matches!(op, Op::Delete(_)));
        }
        let chunks: Vec<(i64, u64)> = ops
            .iter()
            .filter_map(|op| match *op {
                Op::Update { nchunk, cbytes } => Some((nchunk, cbytes)),
                Op::Delete(nchunk) if matches!(self, Layout::Dir { .. }) => Some((nchunk, 0)),
                _ => None,
            })
            .collect();
        if chunks.is_empty() {
            return Ok((Vec::new(), false));
        }
        // Updates and deletes of other chunks do not move a chunk's data.
        let offsets = sc.frame_offsets()?;
        let (mut out, mut durable) = (Vec::new(), false);
        for (nchunk, cbytes) in chunks {
            // Special chunks (offset with the top bit set) have no bytes.
            let Some(&off) = offsets.get(nchunk as usize).filter(|&&o| o >= 0) else { continue };
            // A chunk the epoch has not overwritten yet is original: what
            // the write saves of it is what the epoch must.
            match self {
                Layout::File { path, header_len, data_end, saved, w_data_end, w_saved } => {
                    let at = *header_len + off as u64;
                    if let Some(save) = Self::save_chunk_bytes(path, at, *w_data_end, cbytes, w_saved)? {
                        durable |= at < *data_end && saved.insert(at);
                        out.push(save);
                    }
                }
                Layout::Dir { dir, in_use, saved, w_in_use, w_saved, .. } => {
                    if !w_in_use.contains(&off) || !w_saved.insert(off) {
                        continue;
                    }
                    durable |= in_use.contains(&off) && saved.insert(off);
                    let p = chunk_file(dir, off);
                    out.push((CHUNK_FILE, off as u64, std::fs::read(&p).map_err(io_err("reading", &p))?));
                }
            }
        }
        Ok((out, durable))
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
        let old =
            u64::from(u32::from_le_bytes(head[CHUNK_POS_CBYTES..CHUNK_POS_CBYTES + 4].try_into().unwrap_or_default()));
        // c-blosc2 writes over the old chunk only when the new one fits.
        if cbytes > old {
            return Ok(None);
        }
        let bytes = read_at(&mut f, at, old.min(data_end - at) as usize).map_err(io_err("reading", path))?;
        saved.insert(at);
        Ok(Some((BYTES, at, bytes)))
    }
}

/// A handle's epoch between two of its writes ([`Durability::Normal`]):
/// its journal, which the next write joins; ended (under the array's lock)
/// when dropped.
#[derive(Default)]
pub(crate) struct Epoch(Option<Box<Journal>>);

impl Epoch {
    /// The journal, for a write to join, unless another handle ended the
    /// epoch since (by writing the array), or this is a child process
    /// forked since the epoch began: the epoch stays the parent's (the
    /// child's next write ends it, as another handle's would).
    pub(crate) fn take(&mut self) -> Option<Box<Journal>> {
        self.0.take().filter(|j| j.pid == std::process::id() && j.still_current())
    }

    /// Keep `journal` (an epoch's, after a write) for the next write.
    pub(crate) fn keep(&mut self, journal: Option<Box<Journal>>) {
        self.0 = journal;
    }

    /// End the epoch, if one is open: under the array's lock, sync what
    /// it changed and remove its journal.
    ///
    /// # Errors
    /// As [`super::lock::wait_for`] and [`Journal::finish`]; the journal
    /// then stays, and the next open or write of the array settles it.
    pub(crate) fn end(&mut self) -> Result<()> {
        match self.0.take() {
            Some(j) if j.pid == std::process::id() => j.end(),
            // A forked child's copy: its descriptor closes, the parent's lock stays.
            _ => Ok(()),
        }
    }
}

impl Epoch {
    /// Let the journal go as a killed process would: closed (unlocked),
    /// the epoch not ended (for the recovery tests).
    #[cfg(test)]
    pub(crate) fn abandon(&mut self) {
        drop(self.0.take());
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// An open journal, locked for the duration of one array-level write (of
/// an epoch: from its first write until it ends).
pub(crate) struct Journal {
    path: PathBuf,
    url: String,
    file: io::File,
    layout: Layout,
    /// Whether it syncs ([`Durability::Full`]).
    sync: bool,
    /// Whether the commit syncs all of a sparse frame's files.
    whole: bool,
    /// An epoch's journal ([`Durability::Normal`]): it stays from one write
    /// to the next, each write's commit a [`COMMIT`] record in it.
    batch: bool,
    /// The writes the epoch committed so far.
    writes: u32,
    /// When the epoch began.
    started: std::time::Instant,
    /// The journal's length.
    len: u64,
    /// The process that made it (a forked child does not join its epoch).
    pid: u32,
}

/// The journal path of an array at `urlpath`.
#[must_use]
pub(crate) fn journal_path(urlpath: &str) -> PathBuf {
    sidecar(urlpath, JOURNAL_SUFFIX)
}

/// Where a journal that is not applied is kept.
fn stale_path(journal: &Path) -> PathBuf {
    let mut s = journal.as_os_str().to_owned();
    s.push(STALE_SUFFIX);
    PathBuf::from(s)
}

fn io_err<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(what, Some(path), &e)
}

/// Whether recovery syncs what it restores: yes unless
/// `CATERVA_JOURNAL_SYNC=0` (it runs for no handle, so at the level of none).
fn recovery_syncs() -> bool {
    super::durability::env_syncs()
}

/// Make `file`'s data (and its length) durable, if `sync`.
fn flush(file: &io::File, sync: bool) -> std::io::Result<()> {
    if sync {
        file.sync_data()
    } else {
        Ok(())
    }
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

/// What is at the path of a journal (or of one being made).
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Absent,
    /// One of ours.
    Ours,
    /// Something else with that name (a user's file, a link): neither
    /// applied nor removed; a write refuses to replace it.
    Foreign(&'static str),
}

/// Bytes of a journal's start that tell it is one: [`MAGIC`] and its
/// first record, the target's identity (two u64).
const HEAD: usize = MAGIC.len() + 25 + 16;

/// Whether `path` holds a journal of ours, recognised by its content: a
/// named journal starts with [`MAGIC`] or (its magic damaged) with an
/// intact [`TARGET`] record after it; one being made (`making`) is empty
/// or starts as one does.
fn kind_of(path: &Path, making: bool) -> Kind {
    let md = match std::fs::symlink_metadata(path) {
        Err(_) => return Kind::Absent,
        Ok(m) => m,
    };
    if !md.is_file() {
        return Kind::Foreign("not a regular file");
    }
    let mut head = Vec::with_capacity(HEAD);
    if File::open(path).and_then(|f| f.take(HEAD as u64).read_to_end(&mut head)).is_err() {
        return Kind::Foreign("unreadable");
    }
    let ours = if making {
        head.starts_with(MAGIC) || MAGIC.starts_with(&head)
    } else {
        head.starts_with(MAGIC) || read_record(&head, MAGIC.len()).is_some_and(|(r, _)| r.tag == TARGET)
    };
    if ours {
        Kind::Ours
    } else {
        Kind::Foreign("not a caterva journal")
    }
}

/// The error for a write that finds `path` taken by something not ours.
fn in_the_way(url: &str, path: &Path, why: &str) -> Error {
    Error::storage(
        Some(url),
        format!(
            "'{}' is in the way of the journal of '{url}': it is {why}; it is left alone, and the array cannot be \
             changed until it is moved away",
            path.display()
        ),
    )
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

/// What undoes changes to the frame file `f` (at `path`) as it is now:
/// its length, header and tail (from `header_len + cbytes` on); with
/// `header_len` and `header_len + cbytes`.
fn file_undo(f: &mut File, path: &Path) -> Result<(u64, u64, Vec<Save>)> {
    let len = f.metadata().map_err(io_err("reading", path))?.len();
    let head = read_at(f, 0, len.min(HEADER_MINLEN as u64) as usize).map_err(io_err("reading", path))?;
    // An unreadable header: keep the whole file.
    let (header_len, data_end) = frame::data_section(&head, len).unwrap_or((0, 0));
    let header = read_at(f, 0, header_len as usize).map_err(io_err("reading", path))?;
    let tail = read_at(f, data_end, (len - data_end) as usize).map_err(io_err("reading", path))?;
    Ok((header_len, data_end, vec![(LENGTH, len, Vec::new()), (BYTES, 0, header), (BYTES, data_end, tail)]))
}

/// The chunk file numbers the sparse frame `sc` uses.
fn in_use_of(sc: &SChunk) -> Result<BTreeSet<i64>> {
    Ok(sc.frame_offsets()?.into_iter().filter(|&o| o >= 0).collect())
}

/// What undoes changes to the sparse frame `sc` in `dir` as it is now:
/// its index and the numbers of the chunk files it uses (also returned).
fn dir_undo(sc: &SChunk, dir: &Path) -> Result<(BTreeSet<i64>, Vec<Save>)> {
    let index = dir.join(SPARSE_INDEX);
    let content = std::fs::read(&index).map_err(io_err("reading", &index))?;
    let in_use = in_use_of(sc)?;
    let ids: Vec<u8> = in_use.iter().flat_map(|&i| (i as u64).to_le_bytes()).collect();
    Ok((in_use, vec![(INDEX_COPY, 0, content), (CHUNK_IDS, 0, ids)]))
}

impl Journal {
    /// Write the journal for the array at `url` before its first changes,
    /// `ops`; with `sync`, make it durable (data, then name) first.
    fn begin(sc: &SChunk, url: &str, ops: &[Op], sync: bool, whole: bool, batch: bool) -> Result<Journal> {
        let path = journal_path(url);
        match kind_of(&path, false) {
            Kind::Absent => {}
            // Another handle's epoch, between two of its writes, ends here.
            Kind::Ours if end_epoch_of_another(url, &path, sc.storage().contiguous)? => {}
            Kind::Ours => {
                return Err(Error::storage(
                    Some(url),
                    format!("'{url}' has an unfinished write from another handle; reopen the array"),
                ))
            }
            Kind::Foreign(why) => return Err(in_the_way(url, &path, why)),
        }
        let tmp = sidecar(url, TMP_SUFFIX);
        if let Kind::Foreign(why) = kind_of(&tmp, true) {
            return Err(in_the_way(url, &tmp, why));
        }
        let (mut base, mut layout) =
            if sc.storage().contiguous { Self::base_file(url)? } else { Self::base_dir(sc, url)? };
        // What the first changes need saved goes in at once (one sync less).
        for (tag, key, bytes) in layout.saves(sc, ops)?.0 {
            base.extend(record(tag, key, &bytes));
        }
        base.extend(record(BASE_END, 0, &[]));
        let mut file = OpenOptions::create().open(&tmp).map_err(io_err("creating journal", &tmp))?;
        if !try_lock(file.std()).map_err(io_err("locking journal", &tmp))? {
            return Err(busy(url));
        }
        let write = |f: &mut io::File| -> std::io::Result<()> {
            // Only a leftover needs emptying (on ext4, truncating to 0 also
            // makes close() start writeback).
            if f.std().metadata()?.len() > 0 {
                f.set_len(0)?;
            }
            f.write_all(&base)?;
            // Sync 1 (module docs): the records before the name.
            flush(f, sync)
        };
        write(&mut file).map_err(io_err("writing journal", &tmp))?;
        io::rename(&tmp, &path).map_err(io_err("naming journal", &path))?;
        // Sync 2: the name before the first change.
        sync_dir(parent_dir(&path), sync)?;
        let len = base.len() as u64;
        let started = std::time::Instant::now();
        let pid = std::process::id();
        Ok(Journal { path, url: url.to_owned(), file, layout, sync, whole, batch, writes: 0, started, len, pid })
    }

    /// Base records of a contiguous frame file: its length, header and tail.
    fn base_file(url: &str) -> Result<(Vec<u8>, Layout)> {
        let path = PathBuf::from(url);
        let mut f = File::open(&path).map_err(io_err("opening", &path))?;
        let id = identity::followed(&path).map_err(io_err("reading", &path))?;
        let (header_len, data_end, undo) = file_undo(&mut f, &path)?;
        let mut base = MAGIC.to_vec();
        base.extend(record(TARGET, KIND_FILE, &identity::to_le_bytes(id)));
        base.extend(record(BOOT, 0, boot_id().as_bytes()));
        // What the write will not touch, to know this state again at recovery.
        let mtime = mtime_ns(&path);
        let sample = file_sample(&mut f, header_len, data_end, &[]).map_err(io_err("reading", &path))?.unwrap_or(0);
        let state = [sample, header_len, data_end].map(u64::to_le_bytes).concat();
        base.extend(record(STATE, mtime, &state));
        for (tag, key, bytes) in undo {
            base.extend(record(tag, key, &bytes));
        }
        let (saved, w_saved) = (BTreeSet::new(), BTreeSet::new());
        Ok((base, Layout::File { path, header_len, data_end, saved, w_data_end: data_end, w_saved }))
    }

    /// Base records of a sparse frame: its index and the chunk files it uses.
    fn base_dir(sc: &SChunk, url: &str) -> Result<(Vec<u8>, Layout)> {
        let dir = PathBuf::from(url);
        let index = dir.join(SPARSE_INDEX);
        let id = identity::followed(&index).map_err(io_err("reading", &index))?;
        let (in_use, undo) = dir_undo(sc, &dir)?;
        let mut base = MAGIC.to_vec();
        base.extend(record(TARGET, KIND_DIR, &identity::to_le_bytes(id)));
        base.extend(record(BOOT, 0, boot_id().as_bytes()));
        let sample = dir_sample(&dir, &in_use, &[]).map_err(io_err("reading", &dir))?.unwrap_or(0);
        base.extend(record(STATE, mtime_ns(&index), &sample.to_le_bytes()));
        for (tag, key, bytes) in undo {
            base.extend(record(tag, key, &bytes));
        }
        let (saved, w_saved, w_in_use) = (BTreeSet::new(), BTreeSet::new(), in_use.clone());
        let made = BTreeSet::new();
        let layout = Layout::Dir { dir, in_use, saved, removed: false, w_in_use, w_saved, made };
        Ok((base, layout))
    }

    /// Append records; with `durable`, sync them before the changes they guard.
    fn append(&mut self, records: &[Save], durable: bool) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let r: Vec<u8> = records.iter().flat_map(|(tag, key, bytes)| record(*tag, *key, bytes)).collect();
        let sync = durable && self.sync;
        let write = |f: &mut io::File| -> std::io::Result<()> {
            f.seek(SeekFrom::End(0))?;
            f.write_all(&r)?;
            flush(f, sync)
        };
        write(&mut self.file).map_err(io_err("writing journal", &self.path))?;
        self.len += r.len() as u64;
        Ok(())
    }

    fn before(&mut self, sc: &SChunk, ops: &[Op]) -> Result<()> {
        let (mut saves, durable) = self.layout.saves(sc, ops)?;
        // Original bytes must be on disk before they are overwritten. The
        // announcement alone is not synced: like a MARK, recovery reads it
        // only without a restart since, when the kernel kept it anyway
        // (before, it cost a sync per operation after the first: a
        // checksummed write's table update, each step of a reshape).
        saves.push((BEGIN, 0, Vec::new()));
        self.append(&saves, durable)
    }

    /// A later write of the epoch begins with `ops`: record what undoes it
    /// alone (length, header and tail, or index and chunk file numbers, as
    /// now), and what `ops` overwrite. Only original bytes are synced: the
    /// rest speaks for a process killed since, whose writes the kernel
    /// kept; after a restart the whole epoch is rolled back.
    fn begin_write(&mut self, sc: &SChunk, ops: &[Op]) -> Result<()> {
        let mut group = match &mut self.layout {
            Layout::File { path, w_data_end, w_saved, .. } => {
                let mut f = File::open(&*path).map_err(io_err("opening", path))?;
                let (_, data_end, undo) = file_undo(&mut f, path)?;
                (*w_data_end, *w_saved) = (data_end, BTreeSet::new());
                undo
            }
            Layout::Dir { dir, w_in_use, w_saved, .. } => {
                let (in_use, undo) = dir_undo(sc, dir)?;
                (*w_in_use, *w_saved) = (in_use, BTreeSet::new());
                undo
            }
        };
        let (saves, durable) = self.layout.saves(sc, ops)?;
        group.extend(saves);
        group.push((WRITE, 0, Vec::new()));
        self.append(&group, durable)
    }

    /// Record the frame's state after an operation (not synced: it only
    /// speaks for a process killed since, whose writes the kernel kept).
    fn mark(&mut self) -> Result<()> {
        self.state(MARK)
    }

    /// A write of the epoch is complete: record it with the frame's state
    /// (not synced: after a restart the whole epoch is rolled back).
    fn commit_write(&mut self, sc: &SChunk) -> Result<()> {
        if let Layout::Dir { in_use, made, .. } = &mut self.layout {
            made.extend(in_use_of(sc)?.difference(in_use));
        }
        self.state(COMMIT)?;
        self.writes += 1;
        Ok(())
    }

    /// Append a `tag` record of the frame's fingerprint.
    fn state(&mut self, tag: u8) -> Result<()> {
        let contiguous = matches!(self.layout, Layout::File { .. });
        let fp = frame::fingerprint(&self.url, contiguous).map_err(io_err("reading", Path::new(&self.url)))?;
        let r = record(tag, 0, &fp.to_le_bytes());
        let write = |f: &mut io::File| -> std::io::Result<()> {
            f.seek(SeekFrom::End(0))?;
            f.write_all(&r)
        };
        write(&mut self.file).map_err(io_err("writing journal", &self.path))?;
        self.len += r.len() as u64;
        Ok(())
    }

    /// Whether the epoch is to end now ([`EPOCH_WRITES`], [`EPOCH_AGE`], [`EPOCH_BYTES`]).
    pub(crate) fn due(&self) -> bool {
        self.writes >= EPOCH_WRITES || self.len >= EPOCH_BYTES || self.started.elapsed() >= EPOCH_AGE
    }

    /// Whether the journal is still there: another handle that wrote the
    /// array since ended the epoch (it removed the journal).
    pub(crate) fn still_current(&self) -> bool {
        identity::still_at(self.file.std(), &self.path)
    }

    /// End the epoch: sync what it changed, then delete the journal. The
    /// caller holds the array's lock.
    ///
    /// # Errors
    /// [`Error::Io`] if syncing or deleting fails; the journal then stays,
    /// and the next open or write settles it.
    pub(crate) fn finish(&self) -> Result<()> {
        if self.sync {
            let current = match &self.layout {
                Layout::Dir { in_use, made, .. } => in_use.union(made).copied().collect(),
                Layout::File { .. } => BTreeSet::new(),
            };
            self.sync_changes(&current)?;
        }
        io::remove_file(&self.path).map_err(io_err("removing journal", &self.path))
    }

    /// [`Journal::finish`], under the array's lock, if the journal is
    /// still there.
    fn end(&self) -> Result<()> {
        // Gone (another handle ended the epoch, or the array was removed):
        // nothing to lock for.
        if !self.still_current() {
            return Ok(());
        }
        let _lock = super::lock::wait_for(&self.url)?;
        if self.still_current() {
            self.finish()?;
        }
        Ok(())
    }

    /// Sync what the write changed, then delete the journal.
    fn commit(&self, sc: &SChunk) -> Result<()> {
        if self.sync {
            let current = if matches!(self.layout, Layout::Dir { .. }) { in_use_of(sc)? } else { BTreeSet::new() };
            self.sync_changes(&current)?;
        }
        // Deleting the journal is the commit. If this is lost in a power
        // failure, the next open rolls back: the state before, also valid.
        io::remove_file(&self.path).map_err(io_err("removing journal", &self.path))
    }

    /// Sync the frame (syncs 3 and 4 of the module docs): the file, or the
    /// index and every chunk file written (rewritten originals, which were
    /// saved, and files the original index did not use) and, if the write
    /// created or removed chunk files, the directory. With `whole` (the
    /// handle wrote without syncing before: [`Durability::Process`], then
    /// [`Durability::Full`]), every chunk file the index uses and the
    /// directory, so that the index synced now names no file that is not
    /// on disk. (A frame file is synced whole anyway, and its directory
    /// by the journal's name, sync 2.)
    ///
    /// `current`: the chunk file numbers the index uses now (of an epoch,
    /// every number one of its writes left in use).
    fn sync_changes(&self, current: &BTreeSet<i64>) -> Result<()> {
        let sync = |p: &Path| io::File::open(p).and_then(|f| flush(&f, true)).map_err(io_err("syncing", p));
        match &self.layout {
            Layout::File { path, .. } => sync(path),
            Layout::Dir { dir, in_use, saved, removed, .. } => {
                sync(&dir.join(SPARSE_INDEX))?;
                if self.whole {
                    let all: BTreeSet<i64> = current.iter().chain(saved).copied().collect();
                    for p in all.iter().map(|&id| chunk_file(dir, id)).filter(|p| p.exists()) {
                        sync(&p)?;
                    }
                    return sync_dir(dir, true);
                }
                let new: Vec<i64> = current.difference(in_use).copied().collect();
                for p in saved.iter().chain(&new).map(|&id| chunk_file(dir, id)).filter(|p| p.exists()) {
                    sync(&p)?;
                }
                // A chunk file gets a new entry only under a number the
                // original index did not use (c-blosc2 numbers new files
                // past every number in use; an original number comes back
                // only after a delete removed its file), and loses one only
                // by a delete. A file rewritten in place (an update of a
                // chunk that had a file, or one made special, which
                // truncates it) keeps its entry: the directory has nothing
                // to sync then (before, every write synced it).
                sync_dir(dir, *removed || !new.is_empty())
            }
        }
    }
}

/// Undo a write from its journal `file` (locked by the caller), then delete
/// the journal. Running it again after an interruption does the same.
///
/// With `check` (recovery, where the write's process is gone), the journal
/// must first be shown to belong to what is there ([`stale`]); one that
/// does not is not applied but kept aside, with a warning on stderr.
///
/// An epoch's journal ([`Durability::Normal`]: it has [`COMMIT`] records)
/// undoes only the write after its last commit, if one had begun, when the
/// kernel kept the writes (a killed process, or [`TxJournal::abort`]), and
/// the whole epoch after a restart, when what was not synced may be lost
/// (its original bytes were synced before they were overwritten). Either
/// way the frame is synced whole before the journal goes, since the
/// epoch's committed writes were not.
fn rollback(file: &mut io::File, path: &Path, url: &str, check: bool, sync: bool) -> Result<()> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io_err("reading journal", path))?;
    let records = parse(&bytes).map_err(|e| Error::InvalidFormat(format!("'{url}': {}", e.message())))?;
    let dir = records[0].key == KIND_DIR;
    let why = if check { stale(url, &records)? } else { None };
    if let Some(why) = why {
        let aside = stale_path(path);
        if let Kind::Foreign(what) = kind_of(&aside, false) {
            // Renaming would destroy it: the journal stays, unapplied.
            eprintln!(
                "caterva: warning: the undo journal of '{url}' was not applied: {why}. The array is opened as it \
                 is; the journal stays where it is, since '{}' ({what}) is in the way.",
                aside.display()
            );
            return Ok(());
        }
        io::rename(path, &aside).map_err(io_err("renaming journal", path))?;
        sync_dir(parent_dir(path), sync)?;
        eprintln!(
            "caterva: warning: the undo journal of '{url}' was not applied: {why}. The array is opened as it is; \
             the journal is kept as '{}'.",
            aside.display()
        );
        return Ok(());
    }
    let epoch = records.iter().rposition(|r| r.tag == COMMIT).filter(|_| kernel_kept(url, &records));
    let undo = match epoch {
        // Records after the last commit undo a write only once it began.
        Some(c) if records[c + 1..].iter().any(|r| r.tag == WRITE) => &records[c + 1..],
        Some(_) => &[][..],
        None => &records[..],
    };
    // The rollback changes the frame: a recovery after it is interrupted
    // must not expect the state of the last operation. (What follows the
    // last intact record, a save cut short, goes first, or it would hide
    // the announcement.)
    if let Some(last) = records.last().filter(|r| r.tag == MARK) {
        let end = (last.payload.as_ptr() as usize - bytes.as_ptr() as usize + last.payload.len() + 8) as u64;
        let r = record(BEGIN, 0, &[]);
        file.set_len(end)
            .and_then(|()| file.seek(SeekFrom::End(0)))
            .and_then(|_| file.write_all(&r))
            .and_then(|()| flush(file, sync))
            .map_err(io_err("writing journal", path))?;
    }
    // (Nothing to undo: an epoch that died between two writes.)
    if !undo.is_empty() {
        if dir {
            undo_dir(Path::new(url), undo, sync)?;
        } else {
            undo_file(Path::new(url), undo, sync)?;
        }
    }
    if sync && records.iter().any(|r| r.tag == COMMIT) {
        sync_whole(url, !dir)?;
    }
    io::remove_file(path).map_err(io_err("removing journal", path))?;
    sync_dir(parent_dir(path), sync)
}

/// Sync all of the frame at `url`: the file, or a sparse frame's index,
/// every chunk file in its directory and the directory.
fn sync_whole(url: &str, contiguous: bool) -> Result<()> {
    let sync = |p: &Path| io::File::open(p).and_then(|f| flush(&f, true)).map_err(io_err("syncing", p));
    let dir = Path::new(url);
    if contiguous {
        return sync(dir);
    }
    sync(&dir.join(SPARSE_INDEX))?;
    for e in std::fs::read_dir(dir).map_err(io_err("listing", dir))?.flatten() {
        if chunk_id(&e.file_name().to_string_lossy()).is_some() {
            sync(&e.path())?;
        }
    }
    sync_dir(dir, true)
}

/// Whether the journal at `path` is an epoch's between two writes (its
/// last record a [`COMMIT`]): the array is in the state its last write left.
fn between_writes(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| parse(&b).is_ok_and(|r| r.last().is_some_and(|r| r.tag == COMMIT)))
}

/// End, for a write of this handle to the array at `url` (whose lock it
/// holds), the epoch of another handle whose journal is at `path`: if that
/// handle is between two writes (alive, or gone in this boot), its changes
/// are synced and its journal removed (that handle starts a new epoch at
/// its next write). `false` if the journal is not such an epoch's.
fn end_epoch_of_another(url: &str, path: &Path, contiguous: bool) -> Result<bool> {
    let file = match open_locked(path)? {
        Found::Busy if between_writes(path) => None,
        Found::Locked(f) if between_writes(path) && kernel_kept_at(url, path) => Some(f),
        Found::Nothing => return Ok(true),
        _ => return Ok(false),
    };
    if recovery_syncs() {
        sync_whole(url, contiguous)?;
    }
    io::remove_file(path).map_err(io_err("removing journal", path))?;
    drop(file);
    Ok(true)
}

/// Why the journal `records` does not belong to the array at `url` as it
/// is now, if it does not (see the module docs).
fn stale(url: &str, records: &[Record<'_>]) -> Result<Option<String>> {
    let dir = records[0].key == KIND_DIR;
    let id_path = if dir { Path::new(url).join(SPARSE_INDEX) } else { PathBuf::from(url) };
    let stored = identity::from_le_bytes(records[0].payload);
    match identity::followed(&id_path) {
        Ok(id) if Some(id) == stored => {}
        Ok(_) => return Ok(Some(format!("'{}' was replaced since it was written", id_path.display()))),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Ok(Some(format!("'{}' was removed since it was written", id_path.display())))
        }
        Err(e) => return Err(io_err("reading", &id_path)(e)),
    }
    // Journals of earlier versions have no state record: identity is all they bind to.
    let Some(state) = records.iter().find(|r| r.tag == STATE) else { return Ok(None) };
    let sample = if dir {
        // The numbers in use when the journal was made (an epoch's later
        // writes record theirs too).
        let in_use: BTreeSet<i64> = records
            .iter()
            .find(|r| r.tag == CHUNK_IDS)
            .into_iter()
            .flat_map(|r| r.payload.chunks_exact(8).filter_map(|b| u64_at(b, 0)).map(|i| i as i64))
            .collect();
        dir_sample(Path::new(url), &in_use, records).map_err(io_err("reading", Path::new(url)))?
    } else {
        let (Some(header_len), Some(data_end)) = (u64_at(state.payload, 8), u64_at(state.payload, 16)) else {
            return Ok(None);
        };
        File::open(url)
            .and_then(|mut f| file_sample(&mut f, header_len, data_end, records))
            .map_err(io_err("reading", Path::new(url)))?
    };
    if sample != u64_at(state.payload, 0) {
        return Ok(Some(format!(
            "the data of '{url}' is not that of the state the journal was written against (restored from a copy?)"
        )));
    }
    // Without a restart since, the kernel kept every write of the killed
    // process, in order, with the times it made them.
    if !kernel_kept(url, records) {
        return Ok(None);
    }
    let (then, now) = (state.key, mtime_ns(&id_path));
    if then != 0 && now != 0 && now.saturating_add(MTIME_SLACK_NS) < then {
        return Ok(Some(format!(
            "'{}' is older than the state the journal was written against (restored from a copy?)",
            id_path.display()
        )));
    }
    if let Some(mark) = records.last().filter(|r| r.tag == MARK || r.tag == COMMIT) {
        let now = frame::fingerprint(url, !dir).map_err(io_err("reading", Path::new(url)))?;
        if Some(now) != u64_at(mark.payload, 0) {
            return Ok(Some(format!(
                "'{url}' changed since the interrupted write stopped between two of its operations (restored \
                 from a copy?)"
            )));
        }
    }
    Ok(None)
}

/// Whether the system has not restarted since the journal `records` of
/// the array at `url` was made: the kernel kept every write of its writer.
fn kernel_kept(url: &str, records: &[Record<'_>]) -> bool {
    let dir = records.first().is_some_and(|r| r.key == KIND_DIR);
    let id_path = if dir { Path::new(url).join(SPARSE_INDEX) } else { PathBuf::from(url) };
    let boot = records.iter().find(|r| r.tag == BOOT).map(|r| r.payload);
    boot.is_some_and(|b| !b.is_empty() && b == boot_id().as_bytes()) && !restarted_since(&id_path)
}

/// [`kernel_kept`] for the journal at `path`.
fn kernel_kept_at(url: &str, path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| parse(&b).is_ok_and(|r| kernel_kept(url, &r)))
}

/// Whether a test's power-loss model put this array together as a restart
/// would leave it (`faults::pretend_restarted`): the journals it finds were
/// written in this boot, but the kernel did not keep their writers' writes.
#[cfg(any(test, feature = "testing"))]
fn restarted_since(path: &Path) -> bool {
    super::io::faults::restarted(path)
}

#[cfg(not(any(test, feature = "testing")))]
fn restarted_since(_path: &Path) -> bool {
    false
}

/// This boot of the system (Linux's `boot_id`); empty where unknown.
fn boot_id() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned()).unwrap_or_default()
    })
    .clone()
}

/// Modification time of `path` in nanoseconds since the epoch; 0 if unknown.
fn mtime_ns(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The windows of `[header_len, data_end)` that [`file_sample`] hashes:
/// all of it when short, else [`SAMPLE_WINDOWS`] spread from start to end.
fn windows(header_len: u64, data_end: u64) -> Vec<(u64, u64)> {
    let d = data_end.saturating_sub(header_len);
    if d <= SAMPLE_WHOLE {
        return vec![(header_len, d)];
    }
    let span = u128::from(d - SAMPLE_WINDOW);
    (0..SAMPLE_WINDOWS)
        .map(|i| (header_len + (span * u128::from(i) / u128::from(SAMPLE_WINDOWS - 1)) as u64, SAMPLE_WINDOW))
        .collect()
}

/// A hash of sampled bytes of a frame file's data section, as they were
/// before the write: the bytes there now, with the original bytes of the
/// chunks `records` saved put back. `None` if the file is too short.
fn file_sample(f: &mut File, header_len: u64, data_end: u64, records: &[Record<'_>]) -> std::io::Result<Option<u64>> {
    // Newest first, so that the original bytes (an epoch saves a chunk
    // again for each write that overwrites it) are put back last.
    let saved: Vec<&Record<'_>> =
        records.iter().rev().filter(|r| r.tag == BYTES && r.key >= header_len && r.key < data_end).collect();
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for (at, len) in windows(header_len, data_end) {
        let mut buf = match read_at(f, at, len as usize) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        };
        for r in &saved {
            let (lo, hi) = (r.key.max(at), (r.key + r.payload.len() as u64).min(at + len));
            if lo < hi {
                buf[(lo - at) as usize..(hi - at) as usize]
                    .copy_from_slice(&r.payload[(lo - r.key) as usize..(hi - r.key) as usize]);
            }
        }
        h.update(&at.to_le_bytes());
        h.update(&buf);
    }
    Ok(Some(h.digest()))
}

/// A hash of up to [`SAMPLE_FILES`] of the chunk files `in_use` (their
/// numbers, lengths and first bytes) as they were before the write: the
/// journal's copy for those `records` saved, else the file. `None` if one
/// is missing.
fn dir_sample(dir: &Path, in_use: &BTreeSet<i64>, records: &[Record<'_>]) -> std::io::Result<Option<u64>> {
    let ids: Vec<i64> = in_use.iter().copied().collect();
    let n = ids.len();
    let picked: BTreeSet<i64> = if n <= SAMPLE_FILES {
        ids.into_iter().collect()
    } else {
        (0..SAMPLE_FILES).map(|i| ids[i * (n - 1) / (SAMPLE_FILES - 1)]).collect()
    };
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for id in picked {
        let saved = records.iter().find(|r| r.tag == CHUNK_FILE && r.key as i64 == id);
        let (len, head) = match saved {
            Some(r) => (r.payload.len() as u64, r.payload[..r.payload.len().min(SAMPLE_WINDOW as usize)].to_vec()),
            None => {
                let mut f = match File::open(chunk_file(dir, id)) {
                    Ok(f) => f,
                    Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e),
                };
                let len = f.metadata()?.len();
                (len, read_at(&mut f, 0, len.min(SAMPLE_WINDOW) as usize)?)
            }
        };
        h.update(&id.to_le_bytes());
        h.update(&len.to_le_bytes());
        h.update(&head);
    }
    Ok(Some(h.digest()))
}

fn undo_file(path: &Path, records: &[Record<'_>], sync: bool) -> Result<()> {
    let f = OpenOptions::write().open(path).map_err(io_err("opening for rollback", path))?;
    let restore = || -> std::io::Result<()> {
        for r in records.iter().rev().filter(|r| r.tag == BYTES) {
            f.write_all_at(r.key, r.payload)?;
        }
        if let Some(len) = records.iter().find(|r| r.tag == LENGTH) {
            f.set_len(len.key)?;
        }
        flush(&f, sync)
    };
    restore().map_err(io_err("rolling back", path))
}

fn undo_dir(dir: &Path, records: &[Record<'_>], sync: bool) -> Result<()> {
    let write = |p: &Path, bytes: &[u8]| -> Result<()> {
        let mut f = OpenOptions::truncate().open(p).map_err(io_err("opening for rollback", p))?;
        f.write_all(bytes).and_then(|()| flush(&f, sync)).map_err(io_err("rolling back", p))
    };
    for r in records.iter().rev() {
        match r.tag {
            INDEX_COPY => write(&dir.join(SPARSE_INDEX), r.payload)?,
            CHUNK_FILE => write(&chunk_file(dir, r.key as i64), r.payload)?,
            _ => {}
        }
    }
    // Chunk files the original index does not use (new ones) go. (Of an
    // epoch, each write records the numbers in use as it began: the first
    // record is the state undone to.)
    let Some(ids) = records.iter().find(|r| r.tag == CHUNK_IDS) else { return sync_dir(dir, sync) };
    let in_use: BTreeSet<i64> = ids.payload.chunks_exact(8).filter_map(|b| u64_at(b, 0)).map(|i| i as i64).collect();
    for e in std::fs::read_dir(dir).map_err(io_err("listing", dir))?.flatten() {
        let name = e.file_name();
        if chunk_id(&name.to_string_lossy()).is_some_and(|id| !in_use.contains(&id)) {
            io::remove_file(&e.path()).map_err(io_err("removing", &e.path()))?;
        }
    }
    sync_dir(dir, sync)
}

/// What [`open_locked`] found at a journal path.
enum Found {
    Nothing,
    /// A live writer holds it.
    Busy,
    /// It cannot be opened for writing.
    Unwritable(std::io::Error),
    /// Open and locked by us.
    Locked(io::File),
}

/// Open and lock the journal at `path`.
fn open_locked(path: &Path) -> Result<Found> {
    let file = match OpenOptions::write().open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Ok(Found::Unwritable(e)),
    };
    if !try_lock(file.std()).map_err(io_err("locking journal", path))? {
        return Ok(Found::Busy);
    }
    // Its writer may have committed (deleted it) between our open and lock.
    Ok(if identity::still_at(file.std(), path) { Found::Locked(file) } else { Found::Nothing })
}

/// Whether [`recover`] may have something to do for the array whose
/// sidecars start with `base` (`sidecar(urlpath, "")`): a journal, a
/// journal that never got its name, or a directory put aside by an
/// unfinished replacement is there.
pub(crate) fn may_need_recovery(base: &Path) -> bool {
    [JOURNAL_SUFFIX, TMP_SUFFIX, OLD_SUFFIX]
        .iter()
        .any(|suffix| std::fs::symlink_metadata(suffixed(base, suffix)).is_ok())
}

/// Bring the array at `urlpath` to a consistent state before it is opened:
/// finish or undo an interrupted directory replacement, remove a journal
/// that was never completed, and roll back an interrupted write.
///
/// # Errors
/// [`Error::InvalidStorage`] if another handle is writing the array or the
/// rollback has no write access; [`Error::InvalidFormat`] if the journal is
/// corrupt; [`Error::Io`] if restoring fails. The journal then stays.
pub(crate) fn recover(urlpath: &str) -> Result<()> {
    finish_replace(urlpath)?;
    // A journal that never got its name guards no change: remove it if we
    // can (a read-only one is left), unless its writer is still at it.
    let tmp = sidecar(urlpath, TMP_SUFFIX);
    if kind_of(&tmp, true) == Kind::Ours {
        match open_locked(&tmp)? {
            Found::Locked(f) => {
                drop(f);
                io::remove_file(&tmp).map_err(io_err("removing", &tmp))?;
            }
            Found::Busy => return Err(busy(urlpath)),
            Found::Nothing | Found::Unwritable(_) => {}
        }
    }
    let path = journal_path(urlpath);
    // Something else of the journal's name is not a write to undo.
    if kind_of(&path, false) != Kind::Ours {
        return Ok(());
    }
    match open_locked(&path)? {
        Found::Nothing => Ok(()),
        // A live handle's epoch between two of its writes: the array is in
        // the state its last write left, and the journal stays its own.
        Found::Busy if between_writes(&path) => Ok(()),
        Found::Busy => Err(busy(urlpath)),
        Found::Unwritable(e) => Err(Error::storage(
            Some(urlpath),
            format!(
                "'{urlpath}' has an unfinished write to roll back, but its journal '{}' cannot be opened for writing: {e}",
                path.display()
            ),
        )),
        Found::Locked(mut f) => rollback(&mut f, &path, urlpath, true, recovery_syncs()),
    }
}

/// Forget any journal of `urlpath` (its array is being removed or replaced).
///
/// # Errors
/// [`Error::Io`] if one exists and cannot be removed.
pub(crate) fn discard(urlpath: &str) -> Result<()> {
    let journal = journal_path(urlpath);
    let tmp = sidecar(urlpath, TMP_SUFFIX);
    for (p, making) in [(stale_path(&journal), false), (journal, false), (tmp, true)] {
        // Only journals of ours: a file of someone else's that has the name stays.
        if kind_of(&p, making) != Kind::Ours {
            continue;
        }
        match io::remove_file(&p) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(io_err("removing", &p)(e)),
            _ => {}
        }
    }
    // A directory put aside, if ours (anything else of that name stays).
    let old = sidecar(urlpath, OLD_SUFFIX);
    if is_our_leftover(&old) {
        remove_leftover(&old)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "tests/journal.rs"]
mod tests;
