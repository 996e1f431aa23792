//! Memory for the handles given to C, at addresses that are never handed out
//! twice.
//!
//! The registry ([`super::handles`]) refuses a pointer that is not a live
//! handle without dereferencing it. With the general allocator, a freed
//! handle's address may be given to the next handle, and a stale pointer (a
//! use after free, a double free through a copy of the pointer) is then the
//! new handle as far as anyone can tell. Here every handle gets a page of
//! its own in a reserved region of address space that is never reused: a
//! freed handle's page goes back to the operating system (its memory
//! released, the page made inaccessible, so a C caller that reads a freed
//! handle's fields faults instead of reading stale data), but its address is
//! never allocated again, so the registry refuses the stale pointer for as
//! long as the process lives: a generation per address, and every address
//! has exactly one.
//!
//! Cost: a page (4 KiB) of memory per live handle, and a page of address
//! space per handle ever made (made writable [`BATCH`] at a time, so that a
//! new handle rarely costs a system call), reserved `REGION` bytes at a time (reserving
//! costs no memory). Where address space cannot be reserved (a tight
//! `RLIMIT_AS`), handles come from the allocator,
//! without this guarantee but otherwise the same.

use std::sync::{Mutex, PoisonError};

use crate::fork::{self, ForkHooks};

/// Address space reserved at a time: 1 GiB, 262,144 handles of 4 KiB pages.
const REGION: usize = 1 << 30;

/// Pages made writable at a time, ahead of the handles that will use them:
/// one `mprotect` per this many handles (the pages cost no memory until a
/// handle is written to one).
const BATCH: usize = 32;

/// The regions reserved so far and the next unused page of the last one.
struct Regions {
    /// `(base, length)` of each region, in order.
    all: Vec<(usize, usize)>,
    /// Next page to hand out, in the last region.
    next: usize,
    /// Where the pages made writable ahead end, in the last region.
    ready: usize,
}

static REGIONS: Mutex<Regions> = Mutex::new(Regions { all: Vec::new(), next: 0, ready: 0 });

/// What the regions do around a `fork()`: hold their lock across it.
static FORK_HOOKS: ForkHooks = ForkHooks { prepare: before_fork, parent: after_fork, child: after_fork };

/// Register the regions' fork hooks (once; later calls cost a few atomic
/// loads). The registry of handles ([`super::handles`]) registers them
/// before its own.
pub(super) fn register_fork_hooks() {
    fork::on_fork(&FORK_HOOKS);
}

fn regions() -> std::sync::MutexGuard<'static, Regions> {
    register_fork_hooks();
    // Plain numbers: valid after any panic.
    REGIONS.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The regions' lock, held by the forking thread across a `fork()`.
    static HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Regions>>> =
        const { std::cell::RefCell::new(None) };
}

/// Before a fork (in the forking thread): take the lock, so that the child
/// does not inherit it held by a thread it does not have. Nobody holding it
/// waits for anything else.
fn before_fork() {
    let guard = regions();
    // Without thread-local storage (a thread being torn down) the guard is
    // dropped here: the fork is then no safer than without this handler.
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(guard));
}

/// After a fork, in the parent and in the child: release the lock.
fn after_fork() {
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

fn page_size() -> usize {
    use std::sync::OnceLock;
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(4096))
}

/// A fresh, writable page that was never handed out before, or `None` if
/// address space or memory cannot be had.
fn take_page() -> Option<*mut u8> {
    let page = page_size();
    let mut r = regions();
    let exhausted = r.all.last().map_or(true, |&(_, len)| r.next + page > len);
    if exhausted {
        // SAFETY: a fresh anonymous mapping; no memory of ours is involved.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        r.all.push((base as usize, REGION));
        r.next = 0;
        r.ready = 0;
    }
    let &(base, len) = r.all.last()?;
    if r.next + page > r.ready {
        let ahead = (BATCH * page).min(len - r.next);
        // SAFETY: pages of our own reserved region that were never handed out.
        if unsafe { libc::mprotect((base + r.next) as *mut libc::c_void, ahead, libc::PROT_READ | libc::PROT_WRITE) }
            != 0
        {
            return None;
        }
        r.ready = r.next + ahead;
    }
    let p = (base + r.next) as *mut libc::c_void;
    r.next += page;
    Some(p.cast())
}

/// Whether `p` lies in one of the reserved regions.
fn in_regions(p: usize) -> bool {
    regions().all.iter().any(|&(base, len)| (base..base + len).contains(&p))
}

/// Move `value` to memory of its own at an address never used before (or,
/// failing that, to the heap), and return it.
pub(crate) fn alloc<T>(value: T) -> *mut T {
    if std::mem::size_of::<T>() <= page_size() && std::mem::align_of::<T>() <= page_size() {
        if let Some(p) = take_page() {
            let p = p.cast::<T>();
            // SAFETY: p is a fresh writable page, large and aligned enough for T.
            unsafe { p.write(value) };
            return p;
        }
    }
    Box::into_raw(Box::new(value))
}

/// Drop the value at `p` and release its memory; its address is never handed out again.
///
/// # Safety
/// `p` must come from [`alloc`] and not have been freed.
pub(crate) unsafe fn free<T>(p: *mut T) {
    if !in_regions(p as usize) {
        // SAFETY: not in a region, so `alloc` boxed it.
        drop(unsafe { Box::from_raw(p) });
        return;
    }
    // SAFETY: p holds a live T that nobody uses any more (the caller's contract).
    unsafe { std::ptr::drop_in_place(p) };
    {
        let page = page_size();
        // SAFETY: p is the start of one of our pages: give its memory back and
        // make it inaccessible. The address stays reserved, so it is never reused.
        unsafe {
            libc::madvise(p.cast(), page, libc::MADV_DONTNEED);
            libc::mprotect(p.cast(), page, libc::PROT_NONE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_never_reused() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..2000u64 {
            let p = alloc(vec![i; 8]);
            assert!(seen.insert(p as usize), "address {p:p} handed out twice");
            // SAFETY: p came from alloc and holds a Vec.
            assert_eq!(unsafe { &*p }[7], i);
            // SAFETY: p came from alloc and is freed once.
            unsafe { free(p) };
        }
    }

    #[test]
    fn large_values_go_to_the_heap() {
        let p = alloc([7u8; 1 << 16]);
        // SAFETY: p came from alloc.
        assert_eq!(unsafe { (*p)[65535] }, 7);
        // SAFETY: p came from alloc and is freed once.
        unsafe { free(p) };
    }
}
