//! Several handles, in several processes, writing one persisted array:
//! [`Array::refresh`] and [`Array::exclusive`].

use std::time::{Duration, Instant};

use super::{geometry_of, Array};
use crate::engine;
use crate::error::{Error, Result};

/// How long [`Array::optimistically`] keeps trying a write that other
/// writers keep getting in first.
const CONTENDED_FOR: Duration = Duration::from_secs(120);

impl Array {
    /// Bring this handle up to date with what other handles (in this
    /// process or others) wrote since it opened the array or last wrote:
    /// under the array's lock, roll back a write whose process died and
    /// reload the frame if its layout changed, emptying the block cache.
    /// Returns whether it was reloaded (a chunk another handle rewrote in
    /// place needs no reload to be seen). An array in memory has nothing to
    /// refresh.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if another handle keeps the array locked
    /// for more than 30 s or the array has gone; [`Error::InvalidFormat`]
    /// or [`Error::Corrupt`] if what is on disk is not a sound array.
    pub fn refresh(&mut self) -> Result<bool> {
        self.exclusive(|_| Ok(())).map(|((), changed)| changed)
    }

    /// Run `f` on this handle while holding the array's lock, brought up to
    /// date first as by [`Array::refresh`]: nobody else changes the array
    /// meanwhile, so a write of part of a chunk (which reads the rest of
    /// it) cannot lose another handle's write. This is how writers in
    /// several processes share an array: each write through `exclusive`
    /// sees every write committed before it. Returns `f`'s result and
    /// whether the handle was reloaded.
    ///
    /// # Errors
    /// As [`Array::refresh`], or `f`'s error.
    pub fn exclusive<T>(&mut self, f: impl FnOnce(&mut Array) -> Result<T>) -> Result<(T, bool)> {
        let (held, changed) = self.store.lock_fresh()?;
        if changed {
            self.geom = geometry_of(&self.store)?;
        }
        let result = f(self);
        drop(held);
        result.map(|v| (v, changed))
    }

    /// [`Array::set_slice_buffer`] as one of several handles writing the
    /// array, as [`Array::exclusive`] does it, but with the compression
    /// outside the lock when it can be: a region made of whole chunks
    /// (those on the array's edge end where the array ends) is compressed
    /// first, from `buffer` alone, and only applied under the lock, after
    /// bringing the handle up to date. Other regions read the rest of their
    /// chunks, so they are built under the lock. Writers of whole chunks
    /// thus compress in parallel and take turns only to commit.
    ///
    /// # Errors
    /// As [`Array::set_slice_buffer`] and [`Array::refresh`].
    pub fn set_slice_shared(&mut self, start: &[i64], stop: &[i64], buffer: &[u8], buffershape: &[i64]) -> Result<()> {
        if self.store.is_versioned() {
            // No lock to share: every write is optimistic there.
            return self.set_slice_buffer(start, stop, buffer, buffershape);
        }
        let region = self.geom.region(start, stop)?;
        engine::check_user_buffer(&self.geom, &region, buffershape, buffer.len())?;
        let parts = engine::plan(&self.geom, &region)?;
        if !parts.iter().all(|p| p.covers_chunk) {
            return self.exclusive(|a| a.set_slice_buffer(start, stop, buffer, buffershape)).map(|((), _)| ());
        }
        let geom = self.geom.clone();
        let built = engine::build_chunks(&self.ctx, None, &geom, &region, &parts, buffer, buffershape, None)?;
        let (held, changed) = self.store.lock_fresh()?;
        if changed {
            self.geom = geometry_of(&self.store)?;
        }
        let result = if self.geom == geom {
            self.store.write(|tx| tx.update_chunks(&built))
        } else {
            // Another handle reshaped the array meanwhile: start again on what it is now.
            self.set_slice_buffer(start, stop, buffer, buffershape)
        };
        drop(held);
        result
    }

    /// Remove what writers killed mid-write left of an array on an object
    /// store: chunk objects of its sparse frame that its index does not
    /// name and that are at least `older_than` old (a writer names its new
    /// chunk objects in the index moments after it makes them, so an hour
    /// is safe). Returns how many were removed. Elsewhere (local files,
    /// contiguous frames, memory) there is nothing to remove: 0.
    ///
    /// # Errors
    /// As the storage fails; [`Error::InvalidFormat`] for an unsound index.
    pub fn remove_orphans(&self, older_than: Duration) -> Result<usize> {
        self.store.remove_orphans(older_than)
    }

    /// Run `write` (which builds what it writes from this handle's view, and
    /// writes it) until it is not beaten by another writer: on an object
    /// store a write is published only if the array is still the version
    /// the handle read ([`Error::Conflict`] otherwise, with nothing
    /// written), so after a conflict, or a failure while the array was
    /// being replaced (a chunk the handle's version named has gone), the
    /// handle is brought up to date and `write` runs again, after a random
    /// pause that doubles each time, for up to two minutes. Elsewhere
    /// `write` runs once, or, refused because another handle changed the
    /// array since this one last saw it ([`Error::Changed`]), once more
    /// under the array's lock after bringing the handle up to date.
    pub(crate) fn optimistically<T>(&mut self, mut write: impl FnMut(&mut Array) -> Result<T>) -> Result<T> {
        if !self.store.is_versioned() {
            return match write(self) {
                // Stale: brought up to date under the lock and made again
                // there, so that nobody changes it in between.
                Err(Error::Changed { .. }) => self.exclusive(write).map(|(v, _)| v),
                r => r,
            };
        }
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            let e = match write(self) {
                // Lost the race, or read a version that has gone meanwhile
                // (the refresh error): on the version there now, again.
                Err(e @ (Error::Conflict { .. } | Error::Changed { .. })) => e,
                Err(e) if self.store.replaced_since_read() => e,
                r => return r,
            };
            if start.elapsed() > CONTENDED_FOR {
                return Err(e);
            }
            std::thread::sleep(jitter(pause));
            pause = (pause * 2).min(Duration::from_millis(500));
            self.store.lock_fresh()?;
            self.geom = geometry_of(&self.store)?;
        }
    }
}

/// A pause between half of `d` and `d`, so that writers that collided do
/// not collide again in step.
fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |t| t.subsec_nanos());
    let frac = f64::from(nanos % 1000) / 2000.0 + 0.5;
    d.mul_f64(frac)
}
