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
//! 4. a sparse frame's directory, at the commit, when the write created,
//!    rewrote or removed chunk files (an append, an update, a delete, a
//!    special chunk made real): a chunk file is rewritten as a new file
//!    renamed over the old one (see below).
//!
//! # Sparse frames: originals kept by a second name
//!
//! c-blosc2 writes a sparse frame's chunk file whole, and our I/O backend
//! writes it under a new name renamed over the old one when it is complete
//! (`blosc_io::Replacing`): the old file's inode is never written into, and
//! a reader in another process finds the old chunk or the new one, never a
//! cut one. So the journal saves an original chunk file by giving it a
//! second name (a hard link) in the array's undo folder,
//! `<urlpath>.caterva-undo`, recorded as [`CHUNK_LINK`], instead of
//! copying its bytes into the journal: a one-row write that rewrites a
//! 4 MiB chunk no longer reads it, writes it to the journal and syncs that.
//! With `sync` the undo folder is synced before the record that names the
//! link (sync 0, before sync 1 for the first change), and the links go
//! only once the journal's removal is durable: a power cut must never bring
//! a journal back without the originals it restores from. A commit leaves
//! them; the array's next write, once its own journal's naming (sync 2, in
//! the same directory) has made that removal durable, has them removed on
//! a thread of their own, and dropping the handle syncs and removes what
//! its process's commits left since (see `reaper`: freeing a replaced chunk
//! file cost more than the write's syncs). A rollback puts an original back by linking it to a new
//! name renamed over the chunk file, so an interrupted rollback can run
//! again; only the first save of each chunk file counts (later saves of an
//! epoch's writes only undo a write whose process died, when the kernel
//! kept them). Names carry the journal's own token (process and time), so
//! no journal finds another's file under its names. What a process that
//! ended without dropping its handle left in the folder goes at the array's
//! next write or open.
//! Where hard links cannot be made (the undo folder on another file
//! system, one without hard links) the bytes are copied as before
//! ([`CHUNK_FILE`]).
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

mod reaper;
mod records;
mod recovery;

pub(crate) use records::journal_path;
pub(crate) use recovery::{discard, may_need_recovery, recover};

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

#[cfg(doc)]
use super::durability::Durability;

use super::frame::{self, chunk_file, HEADER_MINLEN, SPARSE_INDEX};
use super::fs::read_at;
use super::fs::{parent_dir, sidecar, sync_dir};
use super::identity;
use super::io::{self, OpenOptions};
use super::lock::try_lock;
use super::schunk::SChunk;
use crate::blosc2::chunk_header::POS_CBYTES as CHUNK_POS_CBYTES;
use crate::error::{Error, Result};
use records::{
    flush, io_err, kind_of, record, remove_undo_folder, undo_folder, Kind, Save, BASE_END, BEGIN, BOOT, BYTES,
    CHUNK_FILE, CHUNK_IDS, CHUNK_LINK, COMMIT, INDEX_COPY, KIND_DIR, KIND_FILE, LENGTH, MAGIC, MARK, STATE, TARGET,
    TMP_SUFFIX, WRITE,
};
use recovery::{boot_id, busy, dir_sample, end_epoch_of_another, file_sample, mtime_ns, rollback};

/// An epoch ([`Durability::Normal`]) ends after this many writes,
const EPOCH_WRITES: u32 = 1000;
/// or once it is this old at the end of a write,
const EPOCH_AGE: std::time::Duration = std::time::Duration::from_secs(1);
/// or once its journal is this long.
const EPOCH_BYTES: u64 = 16 << 20;

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
        /// Where chunk files are kept by a second name ([`CHUNK_LINK`]),
        /// under names that start with `token` (this journal's own: see
        /// [`Journal::remove_links`]), and how many have been.
        undo: PathBuf,
        token: String,
        links: u64,
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
    /// The prefix of the names this journal gives the chunk files it keeps
    /// (a sparse frame's).
    fn token(&self) -> Option<&str> {
        match self {
            Layout::Dir { token, .. } => Some(token),
            Layout::File { .. } => None,
        }
    }

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
    ///
    /// A chunk file is saved by a second name in the undo directory (a
    /// hard link, [`CHUNK_LINK`]) rather than by its bytes: c-blosc2's
    /// rewrite of it goes to a new file renamed over the name (see
    /// `blosc_io::Replacing`), so the original inode stays as it was. With
    /// `sync`, the link is made durable before the record that names it
    /// (`dir_synced`: whether the undo directory's own entry will be synced
    /// anyway, by the journal's naming). Where links cannot be made (another
    /// file system under the array, one without hard links) the bytes are
    /// copied, as before.
    fn saves(&mut self, sc: &SChunk, ops: &[Op], sync: bool, dir_synced: bool) -> Result<(Vec<Save>, bool)> {
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
                Layout::Dir { dir, undo, token, links, in_use, saved, w_in_use, w_saved, .. } => {
                    if !w_in_use.contains(&off) || !w_saved.insert(off) {
                        continue;
                    }
                    durable |= in_use.contains(&off) && saved.insert(off);
                    let p = chunk_file(dir, off);
                    match Self::link(&p, undo, token, off, links, sync && !dir_synced)? {
                        Some(name) => out.push((CHUNK_LINK, off as u64, name.into_bytes())),
                        None => out.push((CHUNK_FILE, off as u64, std::fs::read(&p).map_err(io_err("reading", &p))?)),
                    }
                }
            }
        }
        if let Layout::Dir { undo, .. } = self {
            if sync && durable && out.iter().any(|(tag, ..)| *tag == CHUNK_LINK) {
                sync_dir(undo, true)?;
            }
        }
        Ok((out, durable))
    }

    /// Keep the chunk file `path` (number `id`) by a second name in `undo`
    /// (made if missing; with `sync_parent`, its entry made durable):
    /// that name, or `None` if links cannot be made there.
    fn link(
        path: &Path,
        undo: &Path,
        token: &str,
        id: i64,
        links: &mut u64,
        sync_parent: bool,
    ) -> Result<Option<String>> {
        let name = format!("{token}.{:08X}.{links}", id as u32);
        let to = undo.join(&name);
        let mut tries = 0;
        let linked = loop {
            match std::fs::create_dir(undo) {
                Ok(()) => sync_dir(parent_dir(undo), sync_parent)?,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err("creating", undo)(e)),
            }
            match io::hard_link(path, &to) {
                // The folder was empty, and a removal of names journals
                // left (`reaper`, maybe in another process) removed it
                // between the two: again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 && path.exists() => tries += 1,
                other => break other,
            }
        };
        match linked {
            Ok(()) => {
                *links += 1;
                Ok(Some(name))
            }
            // Another file system, or one without hard links (or too many).
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EXDEV | libc::EPERM | libc::EMLINK | libc::EOPNOTSUPP | libc::ENOSYS)
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(io_err("linking", &to)(e)),
        }
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
/// when dropped. And the array the handle wrote, if it did: what its
/// commits left in the undo folder goes then too (`reaper::settle`).
#[derive(Default)]
pub(crate) struct Epoch(Option<Box<Journal>>, Option<String>);

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

    /// The handle committed a write to the array at `url`.
    pub(crate) fn wrote(&mut self, url: &str) {
        if self.1.as_deref() != Some(url) {
            self.1 = Some(url.to_owned());
        }
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
        if let Some(url) = &self.1 {
            reaper::settle(url);
        }
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
            // What journals removed before left in the undo folder goes
            // once this one is named (`reaper::after_naming`).
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
        // (The journal's naming syncs the undo directory's entry.)
        for (tag, key, bytes) in layout.saves(sc, ops, sync, true)?.0 {
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
        // Sync 2: the name before the first change. (It makes the removal
        // of every journal removed before durable too.)
        sync_dir(parent_dir(&path), sync)?;
        reaper::after_naming(url, layout.token());
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
        let undo = undo_folder(url);
        // Names no other journal of this array used: one a power cut brought
        // back must never find another journal's saved file under its names.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let token = format!("{:x}-{nanos:x}", std::process::id());
        let layout = Layout::Dir { dir, undo, token, links: 0, in_use, saved, removed: false, w_in_use, w_saved, made };
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
        let (mut saves, durable) = self.layout.saves(sc, ops, self.sync, false)?;
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
        let (saves, durable) = self.layout.saves(sc, ops, self.sync, false)?;
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
        io::remove_file(&self.path).map_err(io_err("removing journal", &self.path))?;
        self.remove_links();
        Ok(())
    }

    /// After the journal's removal at an epoch's end: remove the chunk
    /// files it kept by a second name, if it kept any (a single write's
    /// commit leaves them to `reaper`). Not before the removal is durable
    /// (with `sync`): a power cut that lost it would bring the journal back
    /// without the originals it restores from. (Without `sync`, a killed
    /// process is covered: the kernel keeps the order.) What is left if
    /// this does not finish goes at the array's next write or open.
    ///
    /// Nothing to report: the write is committed (a failed sync leaves the
    /// journal's removal as durable as a write without links leaves it,
    /// until the array's next write, and the links stay until then).
    fn remove_links(&self) {
        if let Layout::Dir { links: 1.., .. } = self.layout {
            if sync_dir(parent_dir(&self.path), self.sync).is_ok() {
                remove_undo_folder(&self.url);
            }
        }
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
        io::remove_file(&self.path).map_err(io_err("removing journal", &self.path))?;
        // The chunk files it kept go once that is durable (`reaper`).
        if let Layout::Dir { token, links: 1.., .. } = &self.layout {
            reaper::left(&self.url, token, self.sync);
        }
        Ok(())
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
                // A chunk file gets a new entry under a number the original
                // index did not use (c-blosc2 numbers new files past every
                // number in use; an original number comes back only after a
                // delete removed its file), or when it is rewritten (saved
                // first): the rewrite is a new file renamed over it
                // (`blosc_io::Replacing`). It loses one by a delete. Other
                // writes (an index change alone) leave the directory as it
                // was: nothing to sync then.
                sync_dir(dir, *removed || !new.is_empty() || !saved.is_empty())
            }
        }
    }
}

#[cfg(test)]
#[path = "../tests/journal.rs"]
mod tests;
