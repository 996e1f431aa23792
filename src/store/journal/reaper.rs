//! What committed journals of sparse frames leave in the undo folder (the
//! original chunk files kept by a second name, [`super::records::CHUNK_LINK`]),
//! removed off the writer's path.
//!
//! Removing the last name of a chunk file that a write replaced frees it:
//! its blocks and its cached pages. On ext4 that took 1.3–1.8 ms per 3 MiB
//! chunk file, more than all the syncs of a synced one-row write together;
//! and the names may go only once the journal's removal is durable, which
//! with `sync` cost a sync of its directory of its own. So a commit removes
//! nothing ([`left`]): its names stay until the journal's removal is durable
//! anyway, by the next write's naming of its own journal (sync 2 of the
//! module docs, the same directory), after which that write has them
//! removed by a thread of their own ([`after_naming`]). When a handle is
//! dropped, what its process's commits left since is made durable and
//! removed ([`settle`]), and the threads still at it are waited for: a
//! closed array has no undo folder beside it. A process that ends without
//! that (killed, or never dropping its handles) leaves the names to the
//! array's next open or write, which removes them after a sync.
//!
//! While a test watches the I/O layer (a fault plan, a change recorder:
//! `io::observed`), the removal runs on the writer's thread, where it would
//! start: what is counted or recorded is then the same every run, in an
//! order the thread could have taken.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;

use super::records::{journal_path, remove_undo_names, undo_folder};
use crate::fork::PerProcess;
use crate::store::fs::{parent_dir, sync_dir};
use crate::store::io;

/// A committed journal whose kept chunk files may still be in the undo folder.
struct Left {
    url: String,
    /// The journal's own prefix of the names it made.
    token: String,
    /// Whether its removal must be synced before they go.
    sync: bool,
}

#[derive(Default)]
struct State {
    left: Vec<Left>,
    /// Threads removing names, oldest first.
    running: Vec<JoinHandle<()>>,
}

/// At most this many removals run at once; a write that would start one
/// more waits for the oldest (a loop of tiny writes cannot pile up threads).
const MAX_RUNNING: usize = 2;

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<PerProcess<Mutex<State>>> = OnceLock::new();
    STATE
        .get_or_init(|| PerProcess::new(Mutex::default()))
        .get(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The journal of the array at `url` whose names start with `token` was
/// removed (the commit): its names go once that is durable.
pub(super) fn left(url: &str, token: &str, sync: bool) {
    state().left.push(Left { url: url.to_owned(), token: token.to_owned(), sync });
}

/// A write of the array at `url` (under its lock) has made its journal's
/// name durable (or, without `sync`, made it): every journal removed before
/// is now durably removed, so the names they kept go, except the write's
/// own (those that start with `own`). On another thread, unless a change
/// recorder is on.
pub(super) fn after_naming(url: &str, own: Option<&str>) {
    let dir = undo_folder(url);
    let mut st = state();
    st.left.retain(|l| l.url != url);
    if std::fs::symlink_metadata(&dir).is_err() {
        return;
    }
    let own = own.map(|t| format!("{t}."));
    if io::observed() {
        drop(st);
        remove_others(&dir, own.as_deref());
        return;
    }
    st.running.retain(|h| !h.is_finished());
    if st.running.len() >= MAX_RUNNING {
        let _ = st.running.remove(0).join();
    }
    let (d, o) = (dir.clone(), own.clone());
    match std::thread::Builder::new().name("caterva-undo".into()).spawn(move || remove_others(&d, o.as_deref())) {
        Ok(h) => st.running.push(h),
        // No thread to be had: here, then.
        Err(_) => {
            drop(st);
            remove_others(&dir, own.as_deref());
        }
    }
}

/// Remove from the undo folder `dir` every name that does not start with `own`.
fn remove_others(dir: &Path, own: Option<&str>) {
    remove_undo_names(dir, |name| own.map_or(true, |t| !name.starts_with(t)));
}

/// Make the removals of the journals this process committed to the array
/// at `url` since its last write durable, remove the names they kept, and
/// wait for the removals under way. Nothing to report: what is left goes
/// at the array's next open or write.
pub(super) fn settle(url: &str) {
    let (left, running) = {
        let mut st = state();
        let (mine, others) = std::mem::take(&mut st.left).into_iter().partition(|l| l.url == url);
        st.left = others;
        (mine, std::mem::take(&mut st.running))
    };
    for h in running {
        let _ = h.join();
    }
    let dir = undo_folder(url);
    let prefixes: Vec<String> = left.iter().map(|l| format!("{}.", l.token)).collect();
    let has_names = std::fs::read_dir(&dir)
        .is_ok_and(|d| d.flatten().any(|e| prefixes.iter().any(|p| e.file_name().to_string_lossy().starts_with(p))));
    let sync = left.iter().any(|l| l.sync);
    if has_names && sync_dir(parent_dir(&journal_path(url)), sync).is_ok() {
        remove_undo_names(&dir, |name| prefixes.iter().any(|p| name.starts_with(p)));
    }
}
