//! How durable a store's changes are: the [`Durability`] levels of a
//! handle, and the environment's say over syncing.

use crate::error::{Error, Result};

/// What a persisted array's writes survive, and what they cost: a setting
/// of each handle ([`Config::durability`](crate::context::Config::durability) for the arrays a context makes or
/// opens, [`crate::Array::set_durability`] for one handle), not stored in
/// the file. Arrays in memory have nothing to sync.
///
/// Every change is journaled at every level, so a write is all-or-nothing
/// when the process dies (killed, crashed, an I/O error): the next open
/// rolls an interrupted write back, and every write that had returned is
/// there. The levels differ in the syncs (`fdatasync`/`fsync`) that order
/// the journal and the changes on the disk itself, which a power loss or
/// an operating-system crash needs, and in how many of them a write pays.
///
/// `CATERVA_JOURNAL_SYNC=0` in the environment (read once per process)
/// makes every handle [`Durability::Process`], whatever its setting: it
/// takes precedence. Recovery at open syncs its rollback unless that
/// variable is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Durability {
    /// Survives a power loss or an operating-system crash: the journal is
    /// synced (data and directory entry) before the array changes, and the
    /// changes are synced before the journal is removed. After such a
    /// crash, every write is there whole or not at all; a write that had
    /// returned is there, except possibly the last one before the crash,
    /// which may be rolled back whole (the journal's removal is not synced:
    /// the next write's journal makes it durable). A one-row write to a
    /// contiguous frame file costs 3 syncs (the journal's data, its name,
    /// the frame); to a sparse-frame directory, 3 plus one per chunk file
    /// it writes, plus one for the directory when the write creates or
    /// removes chunk files. Creating, saving and replacing an array sync
    /// the new copy before renaming it into place. A handle set back to
    /// `Full` after writes at [`Durability::Process`] makes the whole array
    /// durable at its next write (of a sparse frame, every chunk file is
    /// synced then). The default.
    #[default]
    Full,
    /// Survives a power loss or an operating-system crash whole, but may
    /// lose the last writes before it, as SQLite's `synchronous=NORMAL`
    /// in WAL mode does: after such a crash the array opens, never torn, in
    /// the state after some write that had returned, no older than the end
    /// of the last epoch. An epoch is a run of this handle's writes under
    /// one journal, made durable together: the journal is synced when the
    /// epoch's first write begins (2 syncs) and when a write is about to
    /// overwrite a chunk the epoch started with (1), and the epoch ends (the
    /// frame synced as at [`Durability::Full`], the journal removed) after
    /// 1000 writes, 1 s, 16 MiB of journal, when another handle writes the
    /// array, when the handle's level changes, and when the handle is
    /// closed. So a run of one-row writes costs about 3 syncs per second
    /// instead of 3 per write. Creating, saving and replacing an array sync
    /// as at [`Durability::Full`]. A killed process loses nothing that had
    /// returned, as at the other levels.
    Normal,
    /// Survives a killed or crashed process, not a power loss: no syncs.
    /// Each write is still all-or-nothing against the death of the process
    /// (the kernel keeps what was written, in order, and the journal rolls
    /// an interrupted write back). After a power loss or an
    /// operating-system crash, recent writes may be lost, and the array
    /// may be torn (a mix of old and new bytes, which may not open) if the
    /// system had not written it back yet (on Linux, dirty data usually
    /// reaches the disk within about 30 s).
    Process,
}

impl Durability {
    /// The level's name: `"full"`, `"normal"` or `"process"`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Durability::Full => "full",
            Durability::Normal => "normal",
            Durability::Process => "process",
        }
    }

    /// Whether writes at this level sync to disk: [`Durability::Full`] and
    /// [`Durability::Normal`], unless `CATERVA_JOURNAL_SYNC=0` is set in
    /// the environment.
    #[must_use]
    pub fn syncs(self) -> bool {
        self != Durability::Process && env_syncs()
    }

    /// Whether writes at this level are made durable by epochs rather than
    /// one by one ([`Durability::Normal`], when it syncs at all).
    pub(crate) fn batches(self) -> bool {
        self == Durability::Normal && env_syncs()
    }
}

/// Whether the environment allows syncing: yes unless
/// `CATERVA_JOURNAL_SYNC=0` (read once).
pub(crate) fn env_syncs() -> bool {
    static SYNC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SYNC.get_or_init(|| std::env::var("CATERVA_JOURNAL_SYNC").map_or(true, |v| v != "0"))
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Durability {
    type Err = Error;

    /// `"full"`, `"normal"` or `"process"`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other name.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "full" => Ok(Durability::Full),
            "normal" => Ok(Durability::Normal),
            "process" => Ok(Durability::Process),
            _ => Err(Error::InvalidArgument(format!("durability must be 'full', 'normal' or 'process', not {s:?}"))),
        }
    }
}
