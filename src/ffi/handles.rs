//! The handles this library has given to C and not yet freed: contexts, and
//! arrays with the super-chunk each one owns.
//!
//! A handle that is not in this registry is never dereferenced: a freed
//! pointer (a double free, a use after free), a struct the caller made
//! itself or a stray pointer gives `CATERVA_ERR_INVALID_ARGUMENT` instead of a
//! crash, and a super-chunk that an array owns cannot be adopted by a second
//! array (which would free it twice). Handles live at addresses that are
//! never handed out twice ([`super::slots`]), so a freed handle stays refused
//! after any number of new handles have been made.
//!
//! A forked child inherits the registry (its handles are live there too):
//! the fork hooks this module registers ([`crate::fork::on_fork`]) hold the
//! lock across the fork, so that no other thread of the parent is half-way
//! through a change and the child does not find it locked by a thread it
//! does not have. They are registered after those of [`super::slots`], so
//! this lock is taken before the slots' one and released after it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::slots;
use crate::error::{Error, Result};
use crate::fork::{self, ForkHooks};

/// The live handles, by address.
struct Live {
    /// Contexts.
    ctxs: BTreeSet<usize>,
    /// Arrays, each with the address of the super-chunk it owns.
    arrays: BTreeMap<usize, usize>,
}

static LIVE: Mutex<Live> = Mutex::new(Live { ctxs: BTreeSet::new(), arrays: BTreeMap::new() });

/// What the registry does around a `fork()`: hold its lock across it.
static FORK_HOOKS: ForkHooks = ForkHooks { prepare: before_fork, parent: after_fork, child: after_fork };

fn live() -> MutexGuard<'static, Live> {
    // Handles exist only once the fork hooks do (a few atomic loads): the
    // slots' first, so that a fork takes this lock before theirs.
    slots::register_fork_hooks();
    fork::on_fork(&FORK_HOOKS);
    // The registry is two plain collections, valid after any panic.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The registry's lock, held by the forking thread across a `fork()`.
    static HELD: RefCell<Option<MutexGuard<'static, Live>>> = const { RefCell::new(None) };
}

/// Before a fork (in the forking thread): take the lock, waiting for any
/// change in progress to end. No thread holding it waits for anything
/// else, so this cannot deadlock.
fn before_fork() {
    let guard = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    // Without thread-local storage (a thread being torn down) the guard is
    // dropped here: the fork is then no safer than without this handler.
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(guard));
}

/// After a fork, in the parent and in the child (the same thread as
/// [`before_fork`]): release the lock.
fn after_fork() {
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// The error for a handle that is NULL (`NullPointer`) or not live (`InvalidArgument`).
fn refuse<T>(p: *const T, what: &str, kind: &str) -> Error {
    if p.is_null() {
        Error::NullPointer(format!("{what} is NULL"))
    } else {
        Error::InvalidArgument(format!(
            "{what} ({p:p}) is not a live {kind}: already freed, or not made by this library"
        ))
    }
}

/// Record a new context.
pub(crate) fn add_ctx<T>(p: *const T) {
    live().ctxs.insert(p as usize);
}

/// Check that `p` is a live context.
///
/// # Errors
/// `NullPointer` for NULL, `InvalidArgument` for anything else not live.
pub(crate) fn check_ctx<T>(p: *const T, what: &str) -> Result<()> {
    if live().ctxs.contains(&(p as usize)) {
        Ok(())
    } else {
        Err(refuse(p, what, "context"))
    }
}

/// Forget a context that is about to be freed.
///
/// # Errors
/// As [`check_ctx`]; then nothing is forgotten.
pub(crate) fn remove_ctx<T>(p: *const T, what: &str) -> Result<()> {
    if live().ctxs.remove(&(p as usize)) {
        Ok(())
    } else {
        Err(refuse(p, what, "context"))
    }
}

/// Record a new array owning the super-chunk at `sc` (or record that it now owns `sc`).
pub(crate) fn set_array<T, S>(p: *const T, sc: *const S) {
    live().arrays.insert(p as usize, sc as usize);
}

/// Check that `p` is a live array.
///
/// # Errors
/// `NullPointer` for NULL, `InvalidArgument` for anything else not live.
pub(crate) fn check_array<T>(p: *const T, what: &str) -> Result<()> {
    if live().arrays.contains_key(&(p as usize)) {
        Ok(())
    } else {
        Err(refuse(p, what, "array"))
    }
}

/// Forget an array that is about to be freed.
///
/// # Errors
/// As [`check_array`]; then nothing is forgotten.
pub(crate) fn remove_array<T>(p: *const T, what: &str) -> Result<()> {
    if live().arrays.remove(&(p as usize)).is_some() {
        Ok(())
    } else {
        Err(refuse(p, what, "array"))
    }
}

/// Check that no live array owns the super-chunk at `sc`.
///
/// # Errors
/// `InvalidArgument` if one does.
pub(crate) fn check_unowned<S>(sc: *const S) -> Result<()> {
    if live().arrays.values().any(|&owned| owned == sc as usize) {
        return Err(Error::InvalidArgument(format!(
            "schunk ({sc:p}) belongs to a live array (its arr->sc); adopting it again would free it twice"
        )));
    }
    Ok(())
}
