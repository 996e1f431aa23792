//! The journal's file: where it lies beside its array, and its records
//! (tags, encoding, checksum), written by the write side and read back by
//! recovery (see the parent module's docs).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::super::fs::sidecar;
use super::super::io;
use crate::error::{Error, Result};

/// Suffix of the journal beside an array's urlpath.
pub(super) const JOURNAL_SUFFIX: &str = ".caterva-journal";
/// Suffix of a journal being written (never valid; removed on open).
pub(super) const TMP_SUFFIX: &str = ".caterva-journal-tmp";
/// Suffix, after the journal's name, of a journal that was not applied.
const STALE_SUFFIX: &str = ".stale";
/// Suffix of the directory beside a sparse frame where its journal keeps
/// original chunk files by a second name ([`CHUNK_LINK`] records).
pub(super) const UNDO_SUFFIX: &str = ".caterva-undo";
pub(super) const MAGIC: &[u8; 8] = b"CTVJRNL1";

// Record tags.
pub(super) const TARGET: u8 = 1; // key: kind (0 file, 1 directory); payload: identity
pub(super) const LENGTH: u8 = 2; // key: original file length
pub(super) const BYTES: u8 = 3; // key: file offset; payload: original bytes
pub(super) const INDEX_COPY: u8 = 4; // payload: the original index file
pub(super) const CHUNK_IDS: u8 = 5; // payload: chunk file numbers in use (u64 LE each)
pub(super) const CHUNK_FILE: u8 = 6; // key: chunk file number; payload: its original content
pub(super) const BASE_END: u8 = 7; // end of the records written before any change
pub(super) const STATE: u8 = 8; // key: the target's mtime (ns); payload: sample hash, then (file) header_len, data_end
pub(super) const MARK: u8 = 9; // after an operation: payload: the frame's fingerprint then (not synced)
pub(super) const BEGIN: u8 = 10; // before an operation after the first (or a rollback) changes the frame
pub(super) const BOOT: u8 = 11; // payload: the system's boot id when the journal was made
pub(super) const WRITE: u8 = 12; // end of the records a later write of an epoch wrote before its first change
pub(super) const COMMIT: u8 = 13; // a write of an epoch is complete: payload: the frame's fingerprint then (not synced)
pub(super) const CHUNK_LINK: u8 = 14; // key: chunk file number; payload: the name, in the undo directory, of its original

pub(super) const KIND_FILE: u64 = 0;
pub(super) const KIND_DIR: u64 = 1;

/// A record to append: tag, key, payload.
pub(super) type Save = (u8, u64, Vec<u8>);

/// The journal path of an array at `urlpath`.
#[must_use]
pub(crate) fn journal_path(urlpath: &str) -> PathBuf {
    sidecar(urlpath, JOURNAL_SUFFIX)
}

/// The undo directory of the array at `urlpath` (see [`UNDO_SUFFIX`]).
pub(super) fn undo_folder(urlpath: &str) -> PathBuf {
    sidecar(urlpath, UNDO_SUFFIX)
}

/// Remove the undo directory of the array at `urlpath`, if there is one:
/// its journal is gone (committed, rolled back or discarded), so nothing
/// in it is needed. A failure leaves it for the next write or open.
pub(super) fn remove_undo_folder(urlpath: &str) {
    remove_undo_names(&undo_folder(urlpath), |_| true);
}

/// Remove the names in the undo directory `dir` that `doomed` picks, and
/// the directory if that empties it. Failures are left for later (a name
/// another thread removed first, a directory another write fills again).
pub(super) fn remove_undo_names(dir: &Path, doomed: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if doomed(&e.file_name().to_string_lossy()) {
            let _ = io::remove_file(&e.path());
        }
    }
    let _ = io::remove_dir(dir);
}

/// Where a journal that is not applied is kept.
pub(super) fn stale_path(journal: &Path) -> PathBuf {
    let mut s = journal.as_os_str().to_owned();
    s.push(STALE_SUFFIX);
    PathBuf::from(s)
}

pub(super) fn io_err<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(what, Some(path), &e)
}

/// Make `file`'s data (and its length) durable, if `sync`.
pub(super) fn flush(file: &io::File, sync: bool) -> std::io::Result<()> {
    if sync {
        file.sync_data()
    } else {
        Ok(())
    }
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
pub(super) fn record(tag: u8, key: u64, payload: &[u8]) -> Vec<u8> {
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
pub(super) struct Record<'a> {
    pub(super) tag: u8,
    pub(super) key: u64,
    pub(super) payload: &'a [u8],
}

pub(super) fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    bytes.get(at..at.checked_add(8)?).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// The record at `pos` and where the next one starts, if it is complete and intact.
pub(super) fn read_record(bytes: &[u8], pos: usize) -> Option<(Record<'_>, usize)> {
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
pub(super) enum Kind {
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
pub(super) fn kind_of(path: &Path, making: bool) -> Kind {
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

/// Decode a journal. The records up to [`BASE_END`] were complete before the
/// journal got its name, so they must all be intact; a save after them that
/// is cut short (killed while writing it) guarded a change that never
/// started, so it and anything after it are ignored.
pub(super) fn parse(bytes: &[u8]) -> Result<Vec<Record<'_>>> {
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
