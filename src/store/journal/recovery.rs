//! Recovery: rolling back a write whose writer is gone (or failed), once
//! the journal is shown to belong to the array as it is, and the other
//! handle's epoch a write or an open finds (see the parent module's docs).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[cfg(doc)]
use super::super::durability::Durability;

use super::super::blosc_io::is_chunk_being_written;
use super::super::frame::{self, chunk_file, chunk_id, SPARSE_INDEX};
use super::super::fs::read_at;
use super::super::fs::{
    finish_replace, is_our_leftover, parent_dir, remove_leftover, sidecar, suffixed, sync_dir, OLD_SUFFIX,
};
use super::super::identity;
use super::super::io::{self, OpenOptions};
use super::super::lock::try_lock;
use super::records::{
    flush, io_err, journal_path, kind_of, parse, record, remove_undo_folder, stale_path, u64_at, undo_folder, Kind,
    Record, BEGIN, BOOT, BYTES, CHUNK_FILE, CHUNK_IDS, CHUNK_LINK, COMMIT, INDEX_COPY, JOURNAL_SUFFIX, KIND_DIR,
    LENGTH, MARK, STATE, TMP_SUFFIX, UNDO_SUFFIX, WRITE,
};
use crate::error::{Error, Result};

/// Modification times a clock step may put this far back are not taken as a sign of a restored copy.
const MTIME_SLACK_NS: u64 = 2_000_000_000;

/// A data section up to this long is sampled whole.
const SAMPLE_WHOLE: u64 = 64 * 1024;
/// Otherwise this many windows of [`SAMPLE_WINDOW`] bytes, spread over it.
const SAMPLE_WINDOWS: u64 = 16;
const SAMPLE_WINDOW: u64 = 4096;
/// How many of a sparse frame's chunk files are sampled (length and first [`SAMPLE_WINDOW`] bytes).
const SAMPLE_FILES: usize = 16;

/// Whether recovery syncs what it restores: yes unless
/// `CATERVA_JOURNAL_SYNC=0` (it runs for no handle, so at the level of none).
fn recovery_syncs() -> bool {
    super::super::durability::env_syncs()
}

pub(super) fn busy(urlpath: &str) -> Error {
    Error::storage(Some(urlpath), format!("'{urlpath}' is being written by another handle (its journal is locked)"))
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
/// kernel kept the writes (a killed process, or [`TxJournal::abort`](super::TxJournal::abort)), and
/// the whole epoch after a restart, when what was not synced may be lost
/// (its original bytes were synced before they were overwritten). Either
/// way the frame is synced whole before the journal goes, since the
/// epoch's committed writes were not.
pub(super) fn rollback(file: &mut io::File, path: &Path, url: &str, check: bool, sync: bool) -> Result<()> {
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
    sync_dir(parent_dir(path), sync)?;
    // Only now (`Journal::remove_links`).
    remove_undo_folder(url);
    Ok(())
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
pub(super) fn end_epoch_of_another(url: &str, path: &Path, contiguous: bool) -> Result<bool> {
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
    // The journal's removal durable before the originals it names go (`Journal::remove_links`).
    if std::fs::symlink_metadata(undo_folder(url)).is_ok() && sync_dir(parent_dir(path), recovery_syncs()).is_ok() {
        remove_undo_folder(url);
    }
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
    super::super::io::faults::restarted(path)
}

#[cfg(not(any(test, feature = "testing")))]
fn restarted_since(_path: &Path) -> bool {
    false
}

/// This boot of the system (Linux's `boot_id`); empty where unknown.
pub(super) fn boot_id() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned()).unwrap_or_default()
    })
    .clone()
}

/// Modification time of `path` in nanoseconds since the epoch; 0 if unknown.
pub(super) fn mtime_ns(path: &Path) -> u64 {
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
pub(super) fn file_sample(
    f: &mut File,
    header_len: u64,
    data_end: u64,
    records: &[Record<'_>],
) -> std::io::Result<Option<u64>> {
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
pub(super) fn dir_sample(dir: &Path, in_use: &BTreeSet<i64>, records: &[Record<'_>]) -> std::io::Result<Option<u64>> {
    let ids: Vec<i64> = in_use.iter().copied().collect();
    let n = ids.len();
    let picked: BTreeSet<i64> = if n <= SAMPLE_FILES {
        ids.into_iter().collect()
    } else {
        (0..SAMPLE_FILES).map(|i| ids[i * (n - 1) / (SAMPLE_FILES - 1)]).collect()
    };
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for id in picked {
        let saved = records.iter().find(|r| (r.tag == CHUNK_FILE || r.tag == CHUNK_LINK) && r.key as i64 == id);
        let (len, head) = match saved {
            Some(r) if r.tag == CHUNK_FILE => {
                (r.payload.len() as u64, r.payload[..r.payload.len().min(SAMPLE_WINDOW as usize)].to_vec())
            }
            // The original, by its second name (the file there, or its replacement).
            _ => {
                let path = match saved {
                    Some(r) => linked_original(dir, r.payload)?,
                    None => chunk_file(dir, id),
                };
                let mut f = match File::open(path) {
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

/// The path of the original chunk file a [`CHUNK_LINK`] record of the
/// sparse frame `dir` names (`payload`).
fn linked_original(dir: &Path, payload: &[u8]) -> std::io::Result<PathBuf> {
    let name = std::str::from_utf8(payload)
        .ok()
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "." && *n != "..")
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidData, "a saved chunk file's name is not one"))?;
    let url = dir.to_str().ok_or_else(|| std::io::Error::from(ErrorKind::InvalidInput))?;
    Ok(undo_folder(url).join(name))
}

/// Put the original chunk file that `payload` (a [`CHUNK_LINK`] record's)
/// names back at `path`: linked to a new name, which is renamed over
/// `path`. The original keeps its second name, so a rollback that is
/// interrupted can be run again.
fn restore_linked(dir: &Path, path: &Path, payload: &[u8]) -> Result<()> {
    let original = linked_original(dir, payload).map_err(io_err("reading journal", path))?;
    if std::fs::symlink_metadata(&original).is_err() {
        return Err(Error::InvalidFormat(format!(
            "the original of '{}', which the undo journal keeps as '{}', is missing: the array cannot be rolled back",
            path.display(),
            original.display()
        )));
    }
    let mut new = path.as_os_str().to_owned();
    new.push(".caterva-restore");
    let new = PathBuf::from(new);
    let _ = std::fs::remove_file(&new);
    io::hard_link(&original, &new).map_err(io_err("rolling back", path))?;
    io::rename(&new, path).map_err(io_err("rolling back", path))
}

fn undo_dir(dir: &Path, records: &[Record<'_>], sync: bool) -> Result<()> {
    let write = |p: &Path, bytes: &[u8]| -> Result<()> {
        let mut f = OpenOptions::truncate().open(p).map_err(io_err("opening for rollback", p))?;
        f.write_all(bytes).and_then(|()| flush(&f, sync)).map_err(io_err("rolling back", p))
    };
    if let Some(index) = records.iter().find(|r| r.tag == INDEX_COPY) {
        write(&dir.join(SPARSE_INDEX), index.payload)?;
    }
    // A chunk file saved more than once (by later writes of an epoch) is
    // put back as the first save has it: later saves only undo a write
    // whose process died (and their files, kept by a second name without a
    // sync, may be gone after a power cut, when the first is what counts).
    let mut done = BTreeSet::new();
    for r in records.iter().filter(|r| matches!(r.tag, CHUNK_FILE | CHUNK_LINK)) {
        if !done.insert(r.key) {
            continue;
        }
        let path = chunk_file(dir, r.key as i64);
        if r.tag == CHUNK_FILE {
            write(&path, r.payload)?;
        } else {
            restore_linked(dir, &path, r.payload)?;
        }
    }
    // Chunk files the original index does not use (new ones) go. (Of an
    // epoch, each write records the numbers in use as it began: the first
    // record is the state undone to.)
    let Some(ids) = records.iter().find(|r| r.tag == CHUNK_IDS) else { return sync_dir(dir, sync) };
    let in_use: BTreeSet<i64> = ids.payload.chunks_exact(8).filter_map(|b| u64_at(b, 0)).map(|i| i as i64).collect();
    for e in std::fs::read_dir(dir).map_err(io_err("listing", dir))?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        // And chunk files a writer was writing (`blosc_io::Replacing`).
        if chunk_id(&name).is_some_and(|id| !in_use.contains(&id)) || is_chunk_being_written(&name) {
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
    [JOURNAL_SUFFIX, TMP_SUFFIX, OLD_SUFFIX, UNDO_SUFFIX]
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
    match kind_of(&path, false) {
        Kind::Ours => {}
        // What a committed journal left of its undo directory goes.
        Kind::Absent => {
            remove_undo_folder(urlpath);
            return Ok(());
        }
        Kind::Foreign(_) => return Ok(()),
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
    remove_undo_folder(urlpath);
    // A directory put aside, if ours (anything else of that name stays).
    let old = sidecar(urlpath, OLD_SUFFIX);
    if is_our_leftover(&old) {
        remove_leftover(&old)?;
    }
    Ok(())
}
