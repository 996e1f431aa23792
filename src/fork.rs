//! Fork safety: what a child made by `fork()` inherits, and how it gets
//! state of its own.
//!
//! A child has one thread (the one that called `fork`), but a copy of all
//! the parent's memory: contexts whose rayon pools and cached Blosc2
//! contexts (with threads of their own) refer to threads that do not exist
//! in it, and mutexes that a vanished parent thread may have held at the
//! fork and that nobody will ever unlock. Using any of them there hangs.
//!
//! - [`pid`] is this process's id, cached in an atomic that a
//!   `pthread_atfork` child handler updates: one relaxed load per call.
//! - [`PerProcess`] holds state that belongs to the process that made it
//!   (a context's thread pool and idle workers, a super-chunk's mutex). A
//!   forked child's first use installs a fresh value (an atomic pointer swap)
//!   and *leaks* the parent's, which it never touches again: dropping a
//!   rayon pool would wait for threads that are not there, freeing a Blosc2
//!   context with threads would join them, and a mutex may be held forever.
//! - State that the child must inherit as it is (the C layer's registry of
//!   live handles) is locked by the `pthread_atfork` prepare handler, so no
//!   parent thread is in the middle of changing it at the fork, and unlocked
//!   in both processes after it.
//!
//! What this cannot fix: an array being *changed* by another thread of the
//! parent at the fork (the child's copy is then half-written; callers must
//! not do that, as with any data structure).

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Once;

/// This process's id, or 0 before [`register`] (or if `pthread_atfork` failed).
static PID: AtomicU32 = AtomicU32::new(0);

/// The id of the calling process. Cheap: a forked child's id is stored by
/// the child handler before `fork` returns in it.
#[inline]
pub(crate) fn pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => register(),
        p => p,
    }
}

/// Install the `pthread_atfork` handlers, once per process (a child
/// inherits them), and return the process id.
#[cold]
pub(crate) fn register() -> u32 {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are plain functions that live as long as the
        // library (glibc unregisters them if it is unloaded).
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if rc == 0 {
            PID.store(std::process::id(), Ordering::Relaxed);
        }
    });
    match PID.load(Ordering::Relaxed) {
        // No handlers (out of memory): ask the kernel every time.
        0 => std::process::id(),
        p => p,
    }
}

/// Before a fork, in the forking thread: let a first c-blosc2
/// initialisation finish, and take the locks whose state the child inherits.
extern "C" fn prepare() {
    crate::store::blosc::init();
    crate::ffi::before_fork();
}

/// After a fork, in the parent: release what [`prepare`] took.
extern "C" fn parent() {
    crate::ffi::after_fork();
}

/// After a fork, in the child (which has only the forking thread): record
/// the new id, then release what [`prepare`] took.
extern "C" fn child() {
    // SAFETY: getpid has no preconditions (and is async-signal-safe).
    PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
    crate::ffi::after_fork();
}

/// A value that belongs to the process that made it. In a forked child the
/// first [`PerProcess::get`] replaces it with a fresh one and leaks the
/// parent's (see the module documentation); in the process that made it,
/// `get` is an atomic load and a comparison.
pub(crate) struct PerProcess<T> {
    /// Always a live `Box<Slot<T>>`; replaced ones are leaked, never freed,
    /// so references handed out from `&self` stay valid.
    slot: AtomicPtr<Slot<T>>,
}

struct Slot<T> {
    pid: u32,
    value: T,
}

// SAFETY: a PerProcess hands out &T (shared) and moves T only on drop, like
// a OnceLock<T>.
unsafe impl<T: Send + Sync> Sync for PerProcess<T> {}
// SAFETY: as above; it owns its T.
unsafe impl<T: Send> Send for PerProcess<T> {}

impl<T> PerProcess<T> {
    /// `value`, owned by the calling process.
    pub(crate) fn new(value: T) -> Self {
        let slot = Box::new(Slot { pid: pid(), value });
        PerProcess { slot: AtomicPtr::new(Box::into_raw(slot)) }
    }

    /// This process's value: in a forked child, the first call makes it
    /// with `fresh` (and leaks the parent's).
    #[inline]
    pub(crate) fn get(&self, fresh: impl FnOnce() -> T) -> &T {
        match self.try_get(|| Ok::<T, std::convert::Infallible>(fresh())) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// [`PerProcess::get`] with a `fresh` that may fail; the failure is
    /// returned and the next call tries again.
    ///
    /// # Errors
    /// Those of `fresh`.
    #[inline]
    pub(crate) fn try_get<E>(&self, fresh: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        let cur = self.slot.load(Ordering::Acquire);
        // SAFETY: the slot is live: slots are freed only by `drop` (&mut self).
        let s = unsafe { &*cur };
        if s.pid == pid() {
            return Ok(&s.value);
        }
        self.renew(cur, fresh)
    }

    /// The value, if this process made it (without making one otherwise).
    pub(crate) fn owned_mut(&mut self) -> Option<&mut T> {
        // SAFETY: the slot is live, and `&mut self` excludes every other use.
        let s = unsafe { &mut **self.slot.get_mut() };
        (s.pid == pid()).then_some(&mut s.value)
    }

    #[cold]
    fn renew<E>(&self, stale: *mut Slot<T>, fresh: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        let new = Box::into_raw(Box::new(Slot { pid: pid(), value: fresh()? }));
        match self.slot.compare_exchange(stale, new, Ordering::AcqRel, Ordering::Acquire) {
            // The parent's slot (`stale`) is leaked on purpose.
            // SAFETY: `new` is now the live slot, freed only by `drop`.
            Ok(_) => Ok(unsafe { &(*new).value }),
            Err(winner) => {
                // Another thread of this process renewed it first: ours was never shared.
                // SAFETY: `new` came from Box::into_raw above and nobody else saw it.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: the winner is live (installed by a thread of this process).
                Ok(unsafe { &(*winner).value })
            }
        }
    }
}

impl<T> Drop for PerProcess<T> {
    /// Drop the value if this process made it; a parent's is leaked.
    fn drop(&mut self) {
        let p = *self.slot.get_mut();
        // SAFETY: the slot is live until here.
        if unsafe { (*p).pid } == pid() {
            // SAFETY: it came from Box::into_raw and is dropped once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_keeps_its_value() {
        let mut v = PerProcess::new(7);
        assert_eq!(*v.get(|| unreachable!("not forked")), 7);
        assert_eq!(v.owned_mut(), Some(&mut 7));
        assert_eq!(pid(), std::process::id());
    }

    #[test]
    fn a_foreign_value_is_replaced_once_and_leaked() {
        // Pretend the slot came from another process.
        let v = PerProcess::new(String::from("parent"));
        let old = v.slot.load(Ordering::Relaxed);
        // SAFETY: nobody else uses v yet.
        unsafe { (*old).pid = pid().wrapping_add(1) };
        // A failed renewal changes nothing; the next call tries again.
        assert_eq!(v.try_get(|| Err("no threads")), Err("no threads"));
        assert_eq!(v.slot.load(Ordering::Relaxed), old);
        assert_eq!(v.get(|| "child".into()), "child");
        assert_eq!(v.get(|| unreachable!("renewed once")), "child");
        assert_ne!(v.slot.load(Ordering::Relaxed), old);
        let mut v = v;
        assert_eq!(v.owned_mut().map(|s| s.as_str()), Some("child"));
        // `renew` leaked the stale slot; this test made it, so it frees it.
        // SAFETY: old came from Box::into_raw and nobody refers to it any more.
        drop(unsafe { Box::from_raw(old) });
    }
}
