//! Handles of one array in several processes that take turns writing it
//! (Python's Dask workers): [`Store::lock_fresh`] takes the array's lock
//! and brings this handle up to date with what other handles wrote.
//!
//! A handle knows where the chunks lie as of its own last open or write
//! ([`Store::write`] refuses to write from an out-of-date view). Under the
//! lock, nobody else can change the array: so a handle that holds it, has
//! rolled back what a killed writer left (the journal) and reloaded the
//! frame if its fingerprint moved, sees exactly what is on disk until it
//! lets go. A read-modify-write of a part of a chunk done there is atomic
//! with respect to every other handle that writes the same way.

use super::readers::Owning;
use super::{journal, lock, Store};
use crate::error::{Error, Result};

/// The array's lock, held by [`Store::lock_fresh`]'s caller until dropped
/// (`None` inside: a store in memory, or a place where no lock file can be
/// made, which nobody can write either).
pub(crate) struct Held(#[allow(dead_code)] Owning, #[allow(dead_code)] Option<lock::Lock>);

impl Store {
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
    pub(crate) fn lock_fresh(&mut self) -> Result<(Held, bool)> {
        let Some(url) = self.storage().urlpath else {
            return Ok((Held(Owning::none(), None), false));
        };
        if self.is_versioned() {
            // No lock there: one version is read at a time.
            return Ok((Held(Owning::none(), None), self.refresh_versioned()?));
        }
        let held = Held(self.owning(), lock::wait_for(&url)?);
        journal::recover(&url)?;
        if std::fs::symlink_metadata(&url).is_err() {
            return Err(Error::not_found(&url));
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
        self.reload()?;
        self.seen = self.fingerprint();
        self.placement = std::sync::OnceLock::new();
        if let Some(g) = &mut self.gate {
            g.forget();
        }
        Ok((held, true))
    }
}
