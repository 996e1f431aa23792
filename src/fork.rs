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
//!   live handles, the memory of its handles) is locked before the fork, so
//!   no parent thread is in the middle of changing it, and unlocked in both
//!   processes after it; c-blosc2's first initialisation, if under way,
//!   finishes before the fork. The modules that own that state say so
//!   themselves: each registers its [`ForkHooks`] with [`on_fork`], and the
//!   one `pthread_atfork` handler set of this module runs them. This module
//!   knows nothing above it.
//!
//! What this cannot fix: an array being *changed* by another thread of the
//! parent at the fork (the child's copy is then half-written; callers must
//! not do that, as with any data structure).

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Once;

/// This process's id, or 0 before [`install_handlers`] (or if `pthread_atfork` failed).
static PID: AtomicU32 = AtomicU32::new(0);

/// The id of the calling process. Cheap: a forked child's id is stored by
/// the child handler before `fork` returns in it.
#[inline]
pub(crate) fn pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => install_handlers(),
        p => p,
    }
}

/// Install the `pthread_atfork` handlers, once per process (a child
/// inherits them), and return the process id.
#[cold]
fn install_handlers() -> u32 {
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

/// What a module does around a `fork()` for the state it owns, registered
/// with [`on_fork`]. As with `pthread_atfork`, the `prepare` hooks run in
/// the reverse order of registration and the `parent` and `child` hooks in
/// the order of registration, so a module registered after another one
/// (that it relies on) is prepared first and released last.
pub(crate) struct ForkHooks {
    /// Before the fork, in the forking thread.
    pub(crate) prepare: fn(),
    /// After the fork, in the parent (the forking thread).
    pub(crate) parent: fn(),
    /// After the fork, in the child (which has only the forking thread),
    /// after [`pid`] has learnt the child's id.
    pub(crate) child: fn(),
}

impl ForkHooks {
    /// Hooks that only prepare (nothing to do after the fork).
    pub(crate) const fn prepare_only(prepare: fn()) -> Self {
        ForkHooks { prepare, parent: || {}, child: || {} }
    }
}

/// Most hooks there can be (this crate registers three; the tests two more).
const MAX_HOOKS: usize = 8;

/// The registered hooks, in order of registration. A slot is filled only
/// after every slot before it, and never emptied, so the filled slots are
/// always a prefix; the handlers read them without a lock (a lock here
/// could be held by a vanished thread in the child).
static HOOKS: [AtomicPtr<ForkHooks>; MAX_HOOKS] = [const { AtomicPtr::new(ptr::null_mut()) }; MAX_HOOKS];

thread_local! {
    /// How many hooks this thread's last [`prepare`] ran: [`parent`] and
    /// [`child`] release exactly those (a hook registered during the fork
    /// was not prepared).
    static PREPARED: Cell<usize> = const { Cell::new(0) };
}

/// Run `hooks` around every `fork()` of this process from now on (see
/// [`ForkHooks`] for the order). Registering the same `static` again does
/// nothing, so owners may call this on every use of their state: it costs a
/// few atomic loads. Also installs the `pthread_atfork` handlers.
///
/// # Panics
/// If more than [`MAX_HOOKS`] different hooks are registered (a bug).
pub(crate) fn on_fork(hooks: &'static ForkHooks) {
    pid();
    let ours = ptr::from_ref(hooks).cast_mut();
    for slot in &HOOKS {
        let cur = slot.load(Ordering::Acquire);
        if cur == ours {
            return;
        }
        if cur.is_null() {
            match slot.compare_exchange(ptr::null_mut(), ours, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(winner) if winner == ours => return,
                // Another module took this slot first: try the next.
                Err(_) => {}
            }
        }
    }
    panic!("more than {MAX_HOOKS} fork hooks registered");
}

/// The first `n` registered hooks, in order of registration.
fn registered(n: usize) -> impl DoubleEndedIterator<Item = &'static ForkHooks> {
    HOOKS[..n.min(MAX_HOOKS)].iter().filter_map(|slot| {
        // SAFETY: a non-null slot holds a `&'static ForkHooks` (`on_fork`).
        unsafe { slot.load(Ordering::Acquire).as_ref() }
    })
}

/// How many hooks are registered now.
fn registered_now() -> usize {
    HOOKS.iter().take_while(|slot| !slot.load(Ordering::Acquire).is_null()).count()
}

/// How many hooks this thread's [`prepare`] ran (all registered ones, if
/// thread-local storage is gone: a thread being torn down).
fn prepared() -> usize {
    PREPARED.try_with(Cell::get).unwrap_or_else(|_| registered_now())
}

/// Before a fork, in the forking thread: the registered `prepare` hooks,
/// last registered first.
extern "C" fn prepare() {
    let n = registered_now();
    let _ = PREPARED.try_with(|p| p.set(n));
    for h in registered(n).rev() {
        (h.prepare)();
    }
}

/// After a fork, in the parent: the `parent` hooks of what [`prepare`]
/// prepared, in order of registration.
extern "C" fn parent() {
    for h in registered(prepared()) {
        (h.parent)();
    }
}

/// After a fork, in the child (which has only the forking thread): record
/// the new id, then the `child` hooks of what [`prepare`] prepared, in
/// order of registration.
extern "C" fn child() {
    // SAFETY: getpid has no preconditions (and is async-signal-safe).
    PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
    for h in registered(prepared()) {
        (h.child)();
    }
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
    fn hooks_run_in_the_order_pthread_atfork_runs_handlers() {
        use std::sync::Mutex;
        static SEEN: Mutex<Vec<&str>> = Mutex::new(Vec::new());
        fn note(what: &'static str) {
            SEEN.lock().unwrap().push(what);
        }
        static A: ForkHooks = ForkHooks { prepare: || note("prepare a"), parent: || note("parent a"), child: || {} };
        static B: ForkHooks = ForkHooks { prepare: || note("prepare b"), parent: || note("parent b"), child: || {} };
        on_fork(&A);
        on_fork(&B);
        let n = registered_now();
        on_fork(&A);
        assert_eq!(registered_now(), n, "a second registration adds nothing");
        // As around a fork (the crate's own hooks run too: they lock and unlock).
        prepare();
        parent();
        assert_eq!(*SEEN.lock().unwrap(), ["prepare b", "prepare a", "parent a", "parent b"]);
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
