//! The storage layer: one [`Store`] per array, over a c-blosc2 super-chunk.
//!
//! - [`blosc`] is the thin, policy-free binding (the only module that calls
//!   c-blosc2). Its super-chunk's writing methods are visible to this module
//!   alone.
//! - [`Store`] owns the super-chunk and the policies around it: the undo
//!   [`journal`] of persistent arrays, the per-chunk [`checksum`] table, and
//!   recovery of an interrupted write, which runs once, in [`Store::open`].
//! - Each entry point resolves the URL it is given once
//!   ([`backend::Backend`]), or asks the store where it lives, and hands
//!   over to that place's protocol: [`journaled`] for local files,
//!   [`versioned`] for object stores and web servers. Below the entry
//!   points, [`handle`] is the store itself (its reads, what it says of
//!   itself) and [`tx`] its transactions.
//! - Every change goes through one entry point, [`Store::write`] (or
//!   [`Store::create`] for a new store), whose [`Tx`] journals each chunk or
//!   metalayer operation before it runs and updates the checksum table after
//!   it (chunk hashes and the record of every metalayer and vlmetalayer); the
//!   table is stored and the journal committed when the closure returns
//!   `Ok`, and the changes are rolled back when it fails. Reads of chunks go
//!   through [`Store::chunk`], which checks the checksum, so no code path can
//!   skip it.
//! - Every store is adopted through [`checksum::load_checksums`], which recognises an
//!   array written with checksums even when one byte of its table, its
//!   header marker or their names is damaged, and checks the recorded
//!   metadata, refusing a damaged array as [`Error::Corrupt`] rather than
//!   reading it unchecked (see [`checksum`]).
//! - Handles of one persistent array, in one process or several, exclude
//!   each other with the array's [`lock`] while they write, open, create,
//!   replace or remove it; a handle whose array another one changed since
//!   its own last change is refused before it writes (see [`journal`]).

mod backend;
pub(crate) mod blosc_io;
mod checksum;
mod data_file;
mod durability;
mod frame;
mod frame_check;
mod fs;
mod handle;
#[cfg(feature = "testing")]
pub(crate) mod hooks;
mod identity;
pub(crate) mod io;
mod journal;
mod journaled;
pub(crate) mod listing;
pub(crate) mod location;
mod lock;
mod paths;
pub(crate) mod reader;
mod readers;
pub(crate) mod schunk;
mod tx;
mod versioned;
mod writers;

#[cfg(test)]
mod tests;

use backend::{unchangeable, Backend};
use handle::Change;
use schunk::{Layout, Storage};

use crate::error::{Error, Result};

pub(crate) use checksum::{one_off, MARKER_NAME as CHECKSUM_MARKER, VLMETA_NAME as CHECKSUM_VLMETA};
pub use durability::Durability;
pub(crate) use handle::{Replaced, Store};
pub(crate) use journaled::HeldLock;
pub(crate) use paths::{overlap, overlap_error, Overlap};
pub(crate) use reader::Want;
pub(crate) use tx::{Batch, Tx};

/// The undo journal's path of a store at `urlpath`.
#[cfg(feature = "testing")]
pub(crate) fn journal_path(urlpath: &str) -> std::path::PathBuf {
    journal::journal_path(urlpath)
}

/// Run the frame validator on a buffer (for the fuzzers).
#[cfg(feature = "testing")]
pub(crate) fn check_cframe(data: &[u8]) -> Result<()> {
    frame_check::check_cframe(data, crate::blosc2::inflate).map(drop)
}

/// The entry points: each resolves the URL it is given once
/// ([`Backend::resolve`]), or asks the store where it lives, and hands over
/// to the protocol of that place.
impl Store {
    /// A new, empty store at `storage` (replacing a frame of the same kind
    /// there, refusing anything else), filled by `fill` through an
    /// unjournaled transaction: a new store has nothing to protect.
    ///
    /// A persistent store is built beside its path and renamed into place
    /// once complete ([`write_beside`]), so a failure or a crash at any
    /// point leaves what was at the path, and never a partial array; what a
    /// killed creation left beside it is removed by the next open or create.
    /// At [`Durability::Full`] the new store is synced before it is renamed,
    /// and the rename after; the store keeps `durability` for its writes.
    pub(crate) fn create(
        storage: &Storage,
        layout: &Layout,
        checksums: bool,
        durability: Durability,
        fill: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<Store> {
        let mut store = match storage.urlpath.as_deref().map(Backend::resolve).transpose()? {
            Some(Backend::Versioned(at)) => {
                versioned::create(&at, storage.contiguous, |st| Self::build(st, layout, checksums, fill).map(drop))?
            }
            Some(Backend::Journaled(path)) if !paths::is_beside(&path) => {
                return Self::create_journaled(&path, storage.contiguous, layout, checksums, durability, fill);
            }
            // In memory, or already a copy that write_beside renames into place.
            _ => {
                let mut store = Self::build(storage, layout, checksums, fill)?;
                store.unsynced = storage.urlpath.is_some() && !durability.syncs();
                store
            }
        };
        store.durability = durability;
        Ok(store)
    }

    /// Open a persisted store: roll back a write that was interrupted (the
    /// only place recovery runs), check the frame, read the checksum table.
    /// Temporary copies that killed writers left beside it are removed.
    pub(crate) fn open(urlpath: &str) -> Result<Store> {
        match Backend::resolve(urlpath)? {
            Backend::Versioned(at) => Self::open_versioned(&at),
            Backend::Journaled(path) => Self::open_journaled(&path),
        }
    }

    /// Open the contiguous frame at byte `offset` of the file `urlpath`,
    /// read-only. The file's lock is held while it opens (a writer of an
    /// array at the start of that file finishes first), and a write that a
    /// crashed process left in it is rolled back first, as [`Store::open`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative offset;
    /// [`Error::InvalidStorage`] if nothing is at `urlpath` or it is not a
    /// regular file; [`Error::InvalidFormat`] if no sound frame starts at
    /// `offset`; as [`Store::open`] otherwise.
    pub(crate) fn open_offset(urlpath: &str, offset: i64) -> Result<Store> {
        let Ok(at) = u64::try_from(offset) else {
            return Err(Error::InvalidArgument(format!("offset {offset} is negative")));
        };
        match Backend::resolve(urlpath)? {
            Backend::Versioned(place) => Self::open_offset_versioned(&place, at),
            Backend::Journaled(path) => Self::open_offset_journaled(&path, at),
        }
    }

    /// Write a copy to `urlpath` with the same contiguity, beside the target
    /// and renamed into place. Saving a persistent store onto its own path
    /// (however spelt) changes nothing; a path inside its directory, or a
    /// directory holding it, is refused.
    pub(crate) fn save(&self, urlpath: &str, nthreads: usize) -> Result<()> {
        let st = self.storage();
        if let Some(o) = st.urlpath.as_deref().and_then(|own| overlap(urlpath, own)) {
            if self.offset().is_some() {
                // The frame is only a part of the file there: saving onto it would replace the whole file.
                return Err(overlap_error(urlpath, o));
            }
            return if o == Overlap::Same { Ok(()) } else { Err(overlap_error(urlpath, o)) };
        }
        match Backend::resolve(urlpath)? {
            Backend::Versioned(at) => {
                self.ensure_checked()?;
                versioned::save(&at, st.contiguous, |st| self.sc.copy_to(st, nthreads).map(drop))
            }
            Backend::Journaled(path) => self.save_journaled(&path, nthreads),
        }
    }

    /// Remove a persisted store and what its journal left. A path that does
    /// not exist is not an error.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if what is there is not an array (nothing is
    /// removed) or another handle keeps it locked; [`Error::Io`] if removing fails.
    pub(crate) fn remove(urlpath: &str) -> Result<()> {
        if urlpath.is_empty() {
            return Err(Error::storage(None, "urlpath is empty"));
        }
        match Backend::resolve(urlpath)? {
            Backend::Versioned(at) => versioned::remove_at(&at),
            Backend::Journaled(path) => Self::remove_journaled(&path),
        }
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
    pub(crate) fn append_to_file(&self, urlpath: &str) -> Result<i64> {
        if urlpath.is_empty() {
            return Err(Error::storage(None, "urlpath is empty"));
        }
        match Backend::resolve(urlpath)? {
            Backend::Versioned(_) => Err(unchangeable(urlpath, "append a frame to")),
            Backend::Journaled(path) => self.append_journaled(&path),
        }
    }

    // The write entry points.
    /// Run `change` as one transaction, the only way to change a store. On
    /// a persistent store every operation of `tx` is journaled before it
    /// runs, so a crash at any point leaves the store as it was before or
    /// after the transaction; the checksum table follows every operation
    /// and is stored with them. When `change` (or the commit) fails, the
    /// changes are rolled back on disk and the store reloaded; in memory,
    /// where nothing can be rolled back, the table is kept true to what was
    /// applied. A store over a caller's frame buffer is copied first: it is
    /// never written in place.
    pub(crate) fn write<T>(&mut self, change: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.check_changeable(Change::InPlace)?;
        if !self.is_versioned() {
            return self.write_journaled(change);
        }
        let r = self.write_versioned(change);
        if let Some(c) = &self.cache {
            c.clear();
        }
        r
    }

    /// Replace this store by a new one that `make` writes at the storage it
    /// is given (the same kind as this one's): for a persistent store, a
    /// temporary path beside it, renamed over it once complete
    /// ([`write_beside`]) and then opened; in memory, memory. The other way
    /// to change a store, beside [`Store::write`]; the handle must be
    /// changeable ([`Store::check_changeable`]). A store opened through a
    /// symbolic link replaces the file the link names, and is reopened
    /// through the link.
    ///
    /// # Errors
    /// As [`Store::check_changeable`], `make` and [`write_beside`]; nothing
    /// is changed then.
    pub(crate) fn replace<T>(&self, make: impl FnOnce(&Storage) -> Result<T>) -> Result<Replaced<T>> {
        self.check_changeable(Change::Replace)?;
        let storage = self.storage();
        let Some(url) = storage.urlpath.clone() else { return make(&storage).map(Replaced::InMemory) };
        if self.is_versioned() {
            let mut store = self.replace_versioned(|st| make(st).map(drop))?;
            store.durability = self.durability;
            return Ok(Replaced::OnDisk(Box::new(store)));
        }
        let store = self.replace_journaled(&url, |st| make(st).map(drop))?;
        Ok(Replaced::OnDisk(Box::new(store)))
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
    pub(crate) fn lock_fresh(&mut self) -> Result<(HeldLock, bool)> {
        let Some(url) = self.storage().urlpath else {
            return Ok((HeldLock(readers::Owning::none(), None), false));
        };
        if self.is_versioned() {
            // No lock there: one version is read at a time.
            return Ok((HeldLock(readers::Owning::none(), None), self.refresh_versioned()?));
        }
        self.lock_fresh_journaled(&url)
    }
}
