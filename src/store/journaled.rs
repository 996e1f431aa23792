//! The store on local files: the journaled protocol. A frame there is
//! changed in place by c-blosc2, so every change runs under the array's
//! [`lock`], journaled before each operation (see [`journal`]: a crash at
//! any point leaves the array as it was before or after), and readers
//! exclude writers ([`super::readers`]). What replaces an array (creating,
//! saving, a rewrite) is written beside its path and renamed into place
//! ([`write_beside`]). Recovery of an interrupted write runs where an
//! array is opened or locked afresh.
//!
//! Handles of one array in several processes that take turns writing it
//! (Python's Dask workers) take the array's lock and catch up with what
//! others wrote ([`Store::lock_fresh_journaled`]): under the lock, nobody
//! else can change the array, so a handle that holds it, has rolled back
//! what a killed writer left and reloaded the frame if its fingerprint
//! moved, sees exactly what is on disk until it lets go.
//!
//! Arrays inside larger files ([`Store::open_offset_journaled`], and
//! [`Store::append_journaled`], which appends a frame to a file) are
//! read-only: c-blosc2 writes a changed frame at its end, which there is
//! where the next frame of the file begins.

use std::path::Path;

use super::durability::Durability;
use super::frame_check::{self, Chunks};
use super::handle::{DeferredHeaderCheck, Store};
use super::journal::TxJournal;
use super::paths::{self, check_replaceable, write_beside};
use super::readers::Owning;
use super::schunk::{Layout, SChunk, Storage};
use super::tx::Tx;
use super::{blosc_io, frame, fs, io, journal, lock};
use crate::error::{Error, Result};

/// The array's lock, held by [`Store::lock_fresh`]'s caller until dropped
/// (`None` inside: a store in memory, or a place where no lock file can be
/// made, which nobody can write either).
pub(crate) struct HeldLock(#[allow(dead_code)] pub(super) Owning, #[allow(dead_code)] pub(super) Option<lock::Lock>);

impl Store {
    /// Open a persisted store: roll back a write that was interrupted (the
    /// only place recovery runs), check the frame, read the checksum table.
    /// Temporary copies that killed writers left beside it are removed.
    pub(super) fn open_journaled(urlpath: &str) -> Result<Store> {
        if let Some(store) = Self::open_quiet(urlpath) {
            return Ok(store);
        }
        let _lock = lock::wait_for(urlpath)?;
        paths::clean_temporaries(urlpath);
        journal::recover(urlpath)?;
        if std::fs::symlink_metadata(urlpath).is_err() {
            return Err(Error::not_found(urlpath));
        }
        let mut store = Self::adopt(SChunk::open(urlpath, Chunks::Later)?, DeferredHeaderCheck::due())?;
        store.seen = store.fingerprint();
        Ok(store)
    }

    /// [`Store::open`] without taking the lock, for an array that nobody
    /// is writing and that has nothing to roll back (no lock file, no
    /// journal): `None` if that is not so, or if anything fails (the locked
    /// open then says why).
    ///
    /// The frame is checked ([`Chunks::Later`]) and c-blosc2 parses exactly
    /// the bytes the check read ([`blosc_io::ServingChecked`]), so a write that starts
    /// meanwhile cannot show c-blosc2 a frame that was not checked. What
    /// was read must still be what the file holds afterwards (the
    /// [`frame::fingerprint`] of the checked bytes and of the file agree)
    /// with still no lock file: otherwise a write came in between, and the
    /// locked open waits for it. Temporaries of killed saves beside the
    /// array leave their marker ([`paths::saving`]): the locked open cleans them.
    fn open_quiet(urlpath: &str) -> Option<Store> {
        // (A lock file there now is there at the end too, or its holder
        // changed the frame meanwhile: the last two checks below see either.)
        let beside = fs::sidecar(urlpath, "");
        if journal::may_need_recovery(&beside) || paths::saving(urlpath) {
            return None;
        }
        let summary = SChunk::check(urlpath, Chunks::Later).ok()?;
        let frame_check::CheckedRead { served, object } = summary.read?;
        let contiguous = !summary.sparse;
        let checked = frame::fingerprint_served(served.len, |at, n| served.bytes(at, n), contiguous)?;
        let mut store = {
            let _serving = blosc_io::ServingChecked::start(served);
            Self::adopt(SChunk::parse(urlpath).ok()?, DeferredHeaderCheck::due()).ok()?
        };
        let seen = frame::fingerprint_object(object.as_ref(), contiguous).ok();
        if seen != Some(checked) || lock::present(&beside) {
            return None;
        }
        store.seen = seen;
        Some(store)
    }
    /// [`Store::open_offset`] of a local file: the file's lock is held
    /// while it opens, and a write a crashed process left is rolled back.
    pub(super) fn open_offset_journaled(urlpath: &str, at: u64) -> Result<Store> {
        let _lock = lock::wait_for(urlpath)?;
        journal::recover(urlpath)?;
        match std::fs::symlink_metadata(urlpath) {
            Err(_) => return Err(Error::not_found(urlpath)),
            Ok(md) if !md.is_file() => {
                return Err(Error::storage(Some(urlpath), format!("'{urlpath}' is not a regular file")))
            }
            Ok(_) => {}
        }
        let mut store = Self::adopt(SChunk::open_offset(urlpath, at, Chunks::Later)?, DeferredHeaderCheck::due())?;
        if let Some(site) = store.site.as_mut() {
            site.offset = Some(at);
        }
        store.seen = store.fingerprint();
        Ok(store)
    }
    /// [`Store::create`] at `url`, a local path (not a copy being built
    /// beside one): built beside it and renamed into place ([`write_beside`]).
    pub(super) fn create_journaled(
        url: &str,
        contiguous: bool,
        layout: &Layout,
        checksums: bool,
        durability: Durability,
        fill: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<Store> {
        // What may not be replaced is refused before any work.
        check_replaceable(&Storage { contiguous, urlpath: Some(url.to_owned()) })?;
        if let Some(_lock) = lock::wait_for(url)? {
            paths::clean_temporaries(url);
        }
        let sync = durability.syncs();
        let _lock = write_beside(url, contiguous, sync, |st| Self::build(st, layout, checksums, fill).map(drop))?;
        // Written here a moment ago, under the lock: its chunks are ours.
        let mut store = Self::adopt(SChunk::open(url, Chunks::Later)?, DeferredHeaderCheck::default())?;
        store.seen = store.fingerprint();
        store.durability = durability;
        store.unsynced = !durability.syncs();
        Ok(store)
    }

    /// [`Store::save`] to `urlpath`, a local path.
    pub(super) fn save_journaled(&self, urlpath: &str, nthreads: usize) -> Result<()> {
        let contiguous = self.storage().contiguous;
        check_replaceable(&Storage { contiguous, urlpath: Some(urlpath.to_owned()) })?;
        self.ensure_checked()?;
        write_beside(urlpath, contiguous, self.durability.syncs(), |st| {
            self.sc.copy_to(st, nthreads)?;
            paths::make_durable(st.urlpath.as_deref().unwrap_or_default())
        })
        .map(drop)
    }

    /// [`Store::remove`] of `urlpath`, a local path.
    pub(super) fn remove_journaled(urlpath: &str) -> Result<()> {
        let _lock = lock::wait_for(urlpath)?;
        paths::remove_array(urlpath)?;
        if paths::saving(urlpath) {
            paths::clean_temporaries(urlpath);
        }
        journal::discard(urlpath)
    }

    /// Append this store's contiguous frame to the file `urlpath` (created
    /// if missing) and return the byte offset where it starts. The file is
    /// synced; on a failure it is cut back to its old length (or removed,
    /// if this call created it), so nothing half-written stays. (A process
    /// killed mid-append leaves what it wrote after the old end; nothing
    /// before it is ever written.)
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is empty, a directory or a
    /// symbolic link, or another handle keeps the file locked;
    /// [`Error::Io`] if writing fails; [`Error::Blosc`] if the frame cannot
    /// be serialised.
    pub(super) fn append_journaled(&self, urlpath: &str) -> Result<i64> {
        let frame = self.to_cframe()?;
        let path = Path::new(urlpath);
        let _lock = lock::wait_for(urlpath)?;
        // A write a crashed process left in an array there is rolled back first.
        journal::recover(urlpath)?;
        let created = match std::fs::symlink_metadata(path) {
            Ok(md) if md.is_file() => false,
            Ok(_) => {
                return Err(Error::storage(
                    Some(urlpath),
                    format!("'{urlpath}' is not a regular file (a directory or a link); frames are appended to files"),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(Error::io("reading", Some(path), &e)),
        };
        let file = io::OpenOptions::create().open(path).map_err(|e| Error::io("opening", Some(path), &e))?;
        let start = file.std().metadata().map_err(|e| Error::io("reading", Some(path), &e))?.len();
        let written = file.write_all_at(start, &frame).and_then(|()| file.sync_data()).and_then(|()| {
            if created {
                let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                io::sync_dir(dir)
            } else {
                Ok(())
            }
        });
        match written {
            Ok(()) => i64::try_from(start).map_err(|_| Error::storage(Some(urlpath), "the file is too long")),
            Err(e) => {
                // Nothing half-written stays: the file as it was, or none.
                if created {
                    let _ = io::remove_file(path);
                } else {
                    let _ = file.set_len(start);
                    let _ = file.sync_data();
                }
                Err(Error::io("appending a frame to", Some(path), &e))
            }
        }
    }
    /// [`Store::write`] on local files: under the array's lock, from a
    /// view that is current, every operation of `tx` journaled before it
    /// runs (see [`journal`]), so a crash at any point leaves the store as
    /// it was before or after the transaction; the checksum table follows
    /// every operation and is stored with them. When `change` (or the
    /// commit) fails, the changes are rolled back on disk and the store
    /// reloaded; in memory, where nothing can be rolled back, the table is
    /// kept true to what was applied. A store over a caller's frame buffer
    /// is copied first: it is never written in place.
    pub(super) fn write_journaled<T>(&mut self, change: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        if self.sc.borrows_buffer() {
            let mem = Storage { contiguous: true, urlpath: None };
            self.sc = self.sc.copy_to(&mem, 1)?;
        }
        let url = self.sc.storage().urlpath;
        let lock = url.as_deref().map(lock::wait_for).transpose()?.flatten();
        let owning = self.owning();
        if let Some(u) = url.as_deref() {
            self.check_current(u)?;
        }
        // c-blosc2 reads chunks as it changes the frame (and the journal saves them).
        self.ensure_checked()?;
        let result = self.transaction(change);
        if let Some(c) = &self.cache {
            c.clear();
        }
        if url.is_some() {
            // Every reader's stamp of the data file now differs (readers.rs).
            if let Some(l) = &lock {
                l.settle();
            }
            self.written();
        }
        drop(owning);
        drop(lock);
        result
    }

    /// Refuse to write if another handle changed the frame since this one
    /// last did (or opened it): what this handle knows of it is out of date.
    fn check_current(&self, url: &str) -> Result<()> {
        match (self.seen, self.fingerprint()) {
            (Some(seen), Some(now)) if seen != now => Err(Error::Changed { path: url.to_owned() }),
            _ => Ok(()),
        }
    }

    /// [`Store::write`]'s transaction, under the array's lock.
    fn transaction<T>(&mut self, change: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let sync = self.durability.syncs();
        let _early = blosc_io::WritebackEarly::during(sync);
        // The handle's epoch, unless another handle ended it since.
        let epoch = self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let journal = TxJournal::armed(sync, self.unsynced, self.durability.batches(), epoch);
        let mut tx = Tx { sc: &mut self.sc, sums: &mut self.sums, journal, marker_due: false };
        match change(&mut tx).and_then(|v| tx.commit().map(|c| (v, c))) {
            Ok((v, (changed, epoch))) => {
                if let (true, Some(url)) = (changed, self.sc.storage().urlpath.as_deref()) {
                    self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).wrote(url);
                }
                if changed {
                    // A synced commit made the whole store durable (see
                    // journal's sync_changes); an epoch's end does.
                    self.unsynced = !sync;
                }
                match epoch {
                    // The epoch's changes are committed whatever this says.
                    Some(j) if j.due() => j.finish()?,
                    j => self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).keep(j),
                }
                Ok(v)
            }
            Err(e) => {
                let unjoined = tx.journal.unjoined();
                tx.journal.abort()?;
                if self.sc.storage().urlpath.is_some() {
                    // What is on disk is what was there before: read it back
                    // (the table in memory may describe changes that never ran).
                    self.reload_journaled()?;
                } else {
                    let mut tx =
                        Tx { sc: &mut self.sc, sums: &mut self.sums, journal: TxJournal::Idle, marker_due: false };
                    let _ = tx.store_checksums();
                }
                // An epoch the write never joined goes on.
                self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).keep(unjoined);
                Err(e)
            }
        }
    }
    /// Reopen a persistent store from disk (after a rollback).
    fn reload_journaled(&mut self) -> Result<()> {
        let fresh = self.reopened()?;
        self.take_over(fresh);
        Ok(())
    }

    /// [`Store::replace`] of a store at `url`, a local path: the new store
    /// `make` writes beside it ([`write_beside`]) is renamed over it and
    /// opened. A store opened through a symbolic link replaces the file the
    /// link names, and is reopened through the link.
    pub(super) fn replace_journaled(&self, url: &str, make: impl FnOnce(&Storage) -> Result<()>) -> Result<Store> {
        // The link stays; what it names is replaced.
        let target = paths::link_target(url).unwrap_or_else(|| url.to_owned());
        self.end_epoch()?;
        let storage = self.storage();
        let _lock = write_beside(&target, storage.contiguous, self.durability.syncs(), make)?;
        let mut store = Store::open_journaled(url)?;
        store.durability = self.durability;
        store.unsynced = self.unsynced || !self.durability.syncs();
        Ok(store)
    }

    /// Take the array's lock (waiting for another handle's write, see
    /// [`lock::wait_for`]), roll back a write whose process died, and reload
    /// the frame if another handle changed it since this one last saw it.
    /// Returns the held lock and whether the frame was reloaded (a chunk
    /// rewritten in place, where it was, needs no reload: the handle reads
    /// it from there). The block cache is emptied either way. A store in
    /// memory has nothing to refresh.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if another handle keeps the lock too long
    /// or the array has gone; as [`Store::open`] if reloading fails (the
    /// handle then keeps its old view, and its next write is refused).
    pub(super) fn lock_fresh_journaled(&mut self, url: &str) -> Result<(HeldLock, bool)> {
        let held = HeldLock(self.owning(), lock::wait_for(url)?);
        journal::recover(url)?;
        if std::fs::symlink_metadata(url).is_err() {
            return Err(Error::not_found(url));
        }
        // A write in place (a chunk of the same size, in a frame without
        // checksums) leaves the fingerprint as it was and this handle's view
        // valid, but not the blocks it cached.
        if let Some(c) = &self.cache {
            c.clear();
        }
        let now = self.fingerprint();
        if now.is_some() && now == self.seen {
            return Ok((held, false));
        }
        self.reload_journaled()?;
        self.written();
        Ok((held, true))
    }
}
