//! The storage layer: one [`Store`] per array, over a c-blosc2 super-chunk.
//!
//! - [`blosc`] is the thin, policy-free binding (the only module that calls
//!   c-blosc2). Its super-chunk's writing methods are visible to this module
//!   alone.
//! - [`Store`] owns the super-chunk and the policies around it: the undo
//!   [`journal`] of persistent arrays, the per-chunk [`checksum`] table, and
//!   recovery of an interrupted write, which runs once, in [`Store::open`].
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

pub(crate) mod blosc;
pub(crate) mod blosc_io;
mod checksum;
mod chunk_header;
mod durability;
mod frame;
mod frame_check;
mod fs;
#[cfg(feature = "testing")]
pub(crate) mod hooks;
mod identity;
pub(crate) mod io;
mod journal;
pub(crate) mod listing;
pub(crate) mod location;
mod lock;
mod offset;
mod paths;
pub(crate) mod reader;
mod readers;
mod shared;
mod versioned;
mod writers;

#[cfg(test)]
mod tests;

use blosc::{Chunk, Layout, SChunk, Special, Storage, MAX_METALAYERS};
use checksum::{checked_chunk, chunk_hash, load_checksums, Layer, Table, MARKER_CONTENT, MARKER_NAME, VLMETA_NAME};
use frame_check::Chunks;
use journal::{Epoch, Journal, Op, TxJournal};
use location::{Protocol, Site};

use crate::cache::BlockCache;

use crate::error::{Error, Result};

pub(crate) use checksum::{one_off, MARKER_NAME as CHECKSUM_MARKER, VLMETA_NAME as CHECKSUM_VLMETA};
pub(crate) use durability::env_syncs;
pub use durability::Durability;
use paths::write_beside;
pub(crate) use paths::{check_replaceable, overlap, overlap_error, Overlap};
pub(crate) use reader::Want;

/// The undo journal's path of a store at `urlpath`.
#[cfg(feature = "testing")]
pub(crate) fn journal_path(urlpath: &str) -> std::path::PathBuf {
    journal::journal_path(urlpath)
}

/// Run the frame validator on a buffer (for the fuzzers).
#[cfg(feature = "testing")]
pub(crate) fn check_cframe(data: &[u8]) -> Result<()> {
    frame_check::check_cframe(data, blosc::inflate).map(drop)
}

/// An array's super-chunk with its journal, checksums and recovery.
pub(crate) struct Store {
    sc: SChunk,
    /// Per-chunk checksums, when the store keeps them.
    sums: Option<Table>,
    /// For a persistent store, the [`frame::fingerprint`] of its frame as
    /// this handle last left or found it (under the array's lock).
    seen: Option<u64>,
    /// For a store on disk without checksums, where its chunks lie, so that
    /// reads fetch them (or the blocks they need) themselves ([`reader`]);
    /// found at the first read after an open or a write.
    placement: std::sync::OnceLock<Option<reader::Placement>>,
    /// The handle's cache of decompressed blocks, if it keeps one; emptied
    /// by every write.
    cache: Option<BlockCache>,
    /// Where a persistent store's frame lives (`None` in memory); for a
    /// frame opened at a byte offset of a larger file
    /// ([`Store::open_offset`]), where it starts: such a store is read-only.
    site: Option<Site>,
    /// Whether the headers of the stored chunks remain to be checked before
    /// c-blosc2 reads a chunk ([`Store::ensure_checked`]): opening a file
    /// checks where each chunk lies, not its header ([`Chunks::Later`]).
    headers: HeaderCheck,
    /// What this handle's writes, saves and replacements survive (whether
    /// they sync): the handle's setting, not the file's.
    durability: Durability,
    /// For a store opened at a versioned location: what its frame check
    /// read and the object version it read, from which the placement of
    /// its chunks is made without asking the storage again (and of the
    /// very version c-blosc2 parsed).
    kept: Option<frame_check::Kept>,
    /// This handle changed the store on disk without syncing (at
    /// [`Durability::Process`]) since its last synced write: the next
    /// synced write syncs all of a sparse frame's files, not only its own.
    unsynced: bool,
    /// For a store in local files: its read sections' lock and what it
    /// last knew of its data file ([`readers`]).
    gate: Option<readers::Gate>,
    /// At [`Durability::Normal`], the journal of the epoch this handle's
    /// writes are in, between two of them (see [`journal`]); ended when it
    /// is due, when the level changes, before a replacement and on drop.
    epoch: std::sync::Mutex<Epoch>,
}

/// How an operation changes a store ([`Store::check_changeable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// Its frame is changed where it is ([`Store::write`]).
    InPlace,
    /// A new store is written and takes its place ([`Store::replace`]).
    Replace,
}

/// What [`Store::replace`] made.
pub(crate) enum Replaced<T> {
    /// The store is in memory: what `make` returned, which replaces it.
    InMemory(T),
    /// The new store, written beside the old one's path, renamed over it and opened.
    OnDisk(Box<Store>),
}

/// The check of a file store's chunk headers that opening left for later.
#[derive(Debug, Default)]
struct HeaderCheck {
    /// Some check is due (a store opened from a file).
    due: bool,
    /// Set once the check has passed (a failed one runs again next time:
    /// the file may have been caught half-written by another handle).
    passed: std::sync::OnceLock<()>,
}

impl HeaderCheck {
    /// The check of a store opened from a file, not run yet.
    fn due() -> Self {
        HeaderCheck { due: true, passed: std::sync::OnceLock::new() }
    }
}

/// The ways [`Store::create`] can make a new store.
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
        if let Some(url) = storage.urlpath.as_deref() {
            if versioned::protocol(url)? == Protocol::Versioned {
                let mut store = versioned::create(url, storage.contiguous, |st| {
                    Self::build(st, layout, checksums, fill).map(drop)
                })?;
                store.durability = durability;
                return Ok(store);
            }
        }
        let url = match storage.urlpath.as_deref() {
            Some(url) if !paths::is_beside(url) => url,
            // In memory, or already a copy that write_beside renames into place.
            _ => {
                let mut store = Self::build(storage, layout, checksums, fill)?;
                store.durability = durability;
                store.unsynced = storage.urlpath.is_some() && !durability.syncs();
                return Ok(store);
            }
        };
        // What may not be replaced is refused before any work.
        check_replaceable(storage)?;
        if let Some(_lock) = lock::wait_for(url)? {
            paths::clean_temporaries(url);
        }
        let sync = durability.syncs();
        let _lock =
            write_beside(url, storage.contiguous, sync, |st| Self::build(st, layout, checksums, fill).map(drop))?;
        // Written here a moment ago, under the lock: its chunks are ours.
        let mut store = Self::adopt(SChunk::open(url, Chunks::Later)?, HeaderCheck::default())?;
        store.seen = store.fingerprint();
        store.durability = durability;
        store.unsynced = !durability.syncs();
        Ok(store)
    }

    /// [`Store::create`] at exactly `storage` (a path there is free).
    fn build(
        storage: &Storage,
        layout: &Layout,
        checksums: bool,
        fill: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<Store> {
        let sc = SChunk::new(storage, layout)?;
        let mut cleanup = paths::Cleanup::new(storage.urlpath.as_deref());
        let typesize = u32::try_from(layout.typesize).unwrap_or(0);
        let mut store = Self::assemble(sc, checksums.then(|| Table::new(typesize)), HeaderCheck::default());
        // The marker goes after the caller's metalayers, before the first chunk.
        let mut tx = Tx { sc: &mut store.sc, sums: &mut store.sums, journal: TxJournal::Idle, marker_due: checksums };
        fill(&mut tx)?;
        tx.place_marker()?;
        tx.store_checksums()?;
        if let Some(url) = storage.urlpath.as_deref() {
            paths::make_durable(url)?;
        }
        cleanup.defuse();
        Ok(store)
    }

    /// Open a persisted store: roll back a write that was interrupted (the
    /// only place recovery runs), check the frame, read the checksum table.
    /// Temporary copies that killed writers left beside it are removed.
    pub(crate) fn open(urlpath: &str) -> Result<Store> {
        if versioned::protocol(urlpath)? == Protocol::Versioned {
            return Self::open_versioned(urlpath);
        }
        if let Some(store) = Self::open_quiet(urlpath) {
            return Ok(store);
        }
        let _lock = lock::wait_for(urlpath)?;
        paths::clean_temporaries(urlpath);
        journal::recover(urlpath)?;
        if std::fs::symlink_metadata(urlpath).is_err() {
            return Err(Error::not_found(urlpath));
        }
        let mut store = Self::adopt(SChunk::open(urlpath, Chunks::Later)?, HeaderCheck::due())?;
        store.seen = store.fingerprint();
        Ok(store)
    }

    /// [`Store::open`] without taking the lock, for an array that nobody
    /// is writing and that has nothing to roll back (no lock file, no
    /// journal): `None` if that is not so, or if anything fails (the locked
    /// open then says why).
    ///
    /// The frame is checked ([`Chunks::Later`]) and c-blosc2 parses exactly
    /// the bytes the check read ([`blosc_io::Serving`]), so a write that starts
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
        let frame_check::Kept { served, object } = summary.read?;
        let contiguous = !summary.sparse;
        let checked = frame::fingerprint_served(&served, contiguous)?;
        let mut store = {
            let _serving = blosc_io::Serving::start(served);
            Self::adopt(SChunk::parse(urlpath).ok()?, HeaderCheck::due()).ok()?
        };
        let seen = frame::fingerprint_object(object.as_ref(), contiguous).ok();
        if seen != Some(checked) || lock::present(&beside) {
            return None;
        }
        store.seen = seen;
        Some(store)
    }

    /// A store over a contiguous frame in memory.
    ///
    /// # Safety
    /// As [`SChunk::from_cframe`]: with `copy == false` the caller keeps the
    /// buffer alive and unchanged for the store's life (it is copied before
    /// the first write).
    pub(crate) unsafe fn from_cframe(cframe: *const u8, len: usize, copy: bool) -> Result<Store> {
        // SAFETY: forwarded from the caller.
        Self::adopt(unsafe { SChunk::from_cframe(cframe, len, copy)? }, HeaderCheck::default())
    }

    /// Take ownership of a raw super-chunk (`caterva_from_schunk`).
    ///
    /// # Safety
    /// As [`SChunk::from_raw`].
    pub(crate) unsafe fn from_raw(p: *mut blosc2_sys::blosc2_schunk) -> Result<Store> {
        // SAFETY: forwarded from the caller.
        let sc = unsafe { SChunk::from_raw(p)? };
        // A table that cannot be read leaves the super-chunk with its caller.
        match load_checksums(&sc) {
            Ok(sums) => Ok(Self::assemble(sc, sums, HeaderCheck::default())),
            Err(e) => {
                let _ = sc.into_raw();
                Err(e)
            }
        }
    }

    /// A store over `sc` with the checksums it keeps (checked); `headers`:
    /// [`HeaderCheck::due`] for a frame file opened with [`Chunks::Later`].
    fn adopt(sc: SChunk, headers: HeaderCheck) -> Result<Store> {
        let sums = load_checksums(&sc)?;
        Ok(Self::assemble(sc, sums, headers))
    }

    /// A store over `sc` with checksums `sums`, nothing else known yet.
    fn assemble(sc: SChunk, sums: Option<Table>, headers: HeaderCheck) -> Store {
        let st = sc.storage();
        // c-blosc2 made or opened the frame at this path: it has a site.
        let site = st.urlpath.as_deref().and_then(|url| Site::new(url, st.contiguous, None).ok());
        let local = site.as_ref().is_some_and(|s| s.location.protocol() == Protocol::Journaled);
        let gate = st.urlpath.as_deref().filter(|_| local).map(readers::Gate::new);
        Store {
            sc,
            sums,
            seen: None,
            placement: Default::default(),
            cache: None,
            site,
            headers,
            durability: Durability::Full,
            unsynced: false,
            kept: None,
            gate,
            epoch: std::sync::Mutex::default(),
        }
    }

    /// Check the headers of every stored chunk of a store opened from a
    /// file, once, before c-blosc2 reads any chunk: the whole frame check
    /// that opening cut short ([`Chunks::Later`]). Our own reader checks
    /// each header it reads instead ([`reader::read_chunk`]).
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] naming the damaged chunk, as opening with
    /// [`Chunks::Now`] would have; [`Error::Io`] if the file cannot be read.
    pub(crate) fn ensure_checked(&self) -> Result<()> {
        if !self.headers.due || self.headers.passed.get().is_some() {
            return Ok(());
        }
        let url = self.sc.storage().urlpath.unwrap_or_default();
        match self.offset() {
            Some(at) => frame_check::check_path_at(&url, at, Chunks::Now, blosc::inflate),
            None => frame_check::check_path(&url, Chunks::Now, blosc::inflate),
        }?;
        let _ = self.headers.passed.set(());
        Ok(())
    }

    /// The fingerprint of the frame on disk, for a persistent store (`None`
    /// in memory, or if it cannot be read).
    fn fingerprint(&self) -> Option<u64> {
        frame::fingerprint_site(self.site.as_ref()?).ok()
    }

    /// Give up the store, returning the raw super-chunk.
    pub(crate) fn into_raw(self) -> *mut blosc2_sys::blosc2_schunk {
        self.sc.into_raw()
    }

    /// The raw super-chunk (for C callers who read `arr->sc`).
    pub(crate) fn as_ptr(&self) -> *mut blosc2_sys::blosc2_schunk {
        self.sc.as_ptr()
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
        let contiguous = st.contiguous;
        if versioned::protocol(urlpath)? == Protocol::Versioned {
            self.ensure_checked()?;
            return versioned::save(urlpath, contiguous, |st| self.sc.copy_to(st, nthreads).map(drop));
        }
        check_replaceable(&Storage { contiguous, urlpath: Some(urlpath.to_owned()) })?;
        self.ensure_checked()?;
        write_beside(urlpath, contiguous, self.durability.syncs(), |st| {
            self.sc.copy_to(st, nthreads)?;
            paths::make_durable(st.urlpath.as_deref().unwrap_or_default())
        })
        .map(drop)
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
        if versioned::protocol(urlpath)? == Protocol::Versioned {
            return versioned::remove_at(urlpath);
        }
        let _lock = lock::wait_for(urlpath)?;
        paths::remove_array(urlpath)?;
        if paths::saving(urlpath) {
            paths::clean_temporaries(urlpath);
        }
        journal::discard(urlpath)
    }

    // Reads.

    /// Compressed chunk `n`, checked against its checksum when the store keeps them.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if it fails its checksum; as [`SChunk::chunk`].
    pub(crate) fn chunk(&self, n: i64) -> Result<Chunk<'_>> {
        let _section = self.read_section()?;
        // c-blosc2 makes a special chunk from the index alone, which opening checked.
        let special = self.placement.get().and_then(Option::as_ref).is_some_and(|p| p.is_special(n));
        if !special {
            self.ensure_checked().map_err(|e| self.stale_or(e))?;
        }
        checked_chunk(&self.sc, self.sums.as_ref(), n).map_err(|e| self.stale_or(e))
    }

    /// What a failed read of this handle's version means: at a versioned
    /// location (an object store, a web server), a version another writer
    /// has replaced since this handle read it may have gone (its frame
    /// object, or chunk objects the new version no longer names), and
    /// reading it fails in c-blosc2 or with a missing object; that is
    /// [`Error::Changed`] (refresh and read again), not damage. Elsewhere,
    /// or while the version is still the one there, `e` itself. Asks the
    /// storage (one request) only after such a failure.
    fn stale_or(&self, e: Error) -> Error {
        // What a version gone looks like: a missing object, or c-blosc2
        // failing on it. Not a server that does not answer or refuses
        // (asking it would cost another deadline).
        let gone = match &e {
            Error::Io { kind, .. } => *kind == std::io::ErrorKind::NotFound,
            Error::NotFound { .. } | Error::Blosc { .. } | Error::Corrupt { .. } | Error::InvalidFormat(_) => true,
            _ => false,
        };
        if !gone || !self.replaced_since_read() {
            return e;
        }
        Error::Changed { path: self.site.as_ref().map(Site::url).unwrap_or_default() }
    }

    /// Compressed chunk `n` for a reader that wants the blocks `want` says:
    /// from a store on disk without checksums, read by [`reader`] (without
    /// the super-chunk's lock, and only those blocks when the chunk is laid
    /// out as `want` expects); otherwise as [`Store::chunk`].
    ///
    /// # Errors
    /// As [`Store::chunk`]; [`Error::Io`] or [`Error::InvalidFormat`] if the
    /// chunk cannot be read from its file.
    ///
    /// `buf` holds the bytes the reader reads (the caller keeps it between
    /// calls, so reads allocate nothing); the chunk may borrow it.
    pub(crate) fn chunk_for<'a>(&'a self, n: i64, want: &Want<'_>, buf: &'a mut Vec<u8>) -> Result<Chunk<'a>> {
        let _section = self.read_section()?;
        let placement = self.placement.get_or_init(|| self.place());
        match placement {
            Some(p) => match reader::read_chunk(p, n, want, buf).map_err(|e| self.stale_or(e))? {
                Some(len) => Ok(Chunk::from_slice(&buf[..len])),
                None => self.chunk(n),
            },
            None => self.chunk(n),
        }
    }

    /// Whether the chunks are read from another machine, a round trip
    /// each: reads of several chunks should [`Store::prefetch`] them.
    pub(crate) fn reads_remotely(&self) -> bool {
        self.placement.get_or_init(|| self.place()).as_ref().is_some_and(reader::Placement::is_remote)
    }

    /// Fetch the chunks of `wants` at once for the reads that follow (a
    /// remote store's; nothing elsewhere), and run `read`; what it did not
    /// take is forgotten then.
    pub(crate) fn prefetched<T>(&self, wants: &[(i64, Want<'_>)], read: impl FnOnce() -> T) -> T {
        let Some(p) = self.placement.get_or_init(|| self.place()).as_ref().filter(|p| p.is_remote()) else {
            return read();
        };
        reader::prefetch(p, wants);
        let out = read();
        p.unstage(wants.iter().map(|(n, _)| *n));
        out
    }

    /// The handle's cache of decompressed blocks, if it keeps one.
    pub(crate) fn block_cache(&self) -> Option<&BlockCache> {
        self.cache.as_ref()
    }

    /// Set what this handle's writes survive (see [`Durability`]). An
    /// epoch in progress ends first (if that fails, the journal stays, and
    /// the next open or write settles it).
    pub(crate) fn set_durability(&mut self, durability: Durability) {
        if durability != self.durability {
            let _ = self.end_epoch();
        }
        self.durability = durability;
    }

    /// End this handle's epoch, if one is open ([`Durability::Normal`]):
    /// under the array's lock, sync what it changed and remove its journal.
    ///
    /// # Errors
    /// As [`Epoch::end`].
    pub(crate) fn end_epoch(&self) -> Result<()> {
        self.epoch.lock().unwrap_or_else(std::sync::PoisonError::into_inner).end()
    }

    /// What this handle's writes survive ([`Store::set_durability`]).
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// Keep a cache of `bytes` of decompressed blocks (none for 0).
    pub(crate) fn set_block_cache(&mut self, bytes: usize) {
        self.cache = BlockCache::new(bytes);
    }

    /// Where the chunks of a store on disk without checksums lie (`None`
    /// otherwise, or if that cannot be found: c-blosc2 reads them then).
    /// The offsets of all chunks are kept (8 bytes each), so only for
    /// stores of up to [`reader::MAX_PLACED`] chunks: a huge, mostly empty
    /// array is read through c-blosc2, which looks offsets up one at a time.
    fn place(&self) -> Option<reader::Placement> {
        if self.sums.is_some() || self.sc.nchunks() > reader::MAX_PLACED {
            return None;
        }
        let offsets = match &self.kept {
            Some(kept) => {
                let _serving = blosc_io::Serving::start(kept.served.clone());
                self.sc.frame_offsets()
            }
            None => self.sc.frame_offsets(),
        };
        reader::Placement::new(self.site.as_ref()?, offsets.ok()?, self.kept.as_ref()).ok()
    }
    pub(crate) fn nchunks(&self) -> i64 {
        self.sc.nchunks()
    }
    pub(crate) fn typesize(&self) -> i32 {
        self.sc.typesize()
    }
    pub(crate) fn chunksize(&self) -> i32 {
        self.sc.chunksize()
    }
    pub(crate) fn nbytes(&self) -> i64 {
        self.sc.nbytes()
    }
    pub(crate) fn cbytes(&self) -> i64 {
        self.sc.cbytes()
    }
    pub(crate) fn storage(&self) -> Storage {
        self.sc.storage()
    }
    pub(crate) fn cparams(&self) -> blosc::CParams {
        self.sc.cparams()
    }
    pub(crate) fn meta_names(&self) -> Vec<String> {
        self.sc.meta_names()
    }
    pub(crate) fn meta_exists(&self, name: &str) -> bool {
        self.sc.meta_exists(name)
    }
    pub(crate) fn meta_get(&self, name: &str) -> Option<Vec<u8>> {
        self.sc.meta_get(name)
    }
    pub(crate) fn vlmeta_exists(&self, name: &str) -> Result<bool> {
        self.sc.vlmeta_exists(name)
    }
    pub(crate) fn vlmeta_get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.sc.vlmeta_get(name)
    }
    pub(crate) fn vlmeta_names(&self) -> Vec<String> {
        self.sc.vlmeta_names()
    }
    pub(crate) fn has_checksums(&self) -> bool {
        self.sums.is_some()
    }

    /// Check the super-chunk against its checksum table again, as opening
    /// it does: the table, the marker and the recorded metadata (not the
    /// chunks; [`Store::chunk`] checks those).
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming what fails.
    pub(crate) fn check_integrity(&self) -> Result<()> {
        match (load_checksums(&self.sc)?, &self.sums) {
            (None, Some(_)) => Err(Error::corrupt(-1, format!("the checksum table '{VLMETA_NAME}' has gone"))),
            _ => Ok(()),
        }
    }

    /// Serialise to a contiguous frame.
    pub(crate) fn to_cframe(&self) -> Result<Vec<u8>> {
        let (p, len, needs_free) = self.to_cframe_raw()?;
        // SAFETY: c-blosc2 returned len readable bytes at p; if it allocated
        // them, we own and free them after copying.
        unsafe {
            let v = std::slice::from_raw_parts(p, len as usize).to_vec();
            if needs_free {
                blosc::free(p.cast());
            }
            Ok(v)
        }
    }

    /// As [`Store::to_cframe`], without copying: `(pointer, length,
    /// needs_free)`; when `needs_free` is false the pointer borrows the
    /// store's own frame (C callers only).
    pub(crate) fn to_cframe_raw(&self) -> Result<(*mut u8, i64, bool)> {
        self.ensure_checked()?;
        self.sc.to_cframe_raw()
    }

    // The write entry point.

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
        if self.is_versioned() {
            let r = self.write_versioned(change);
            if let Some(c) = &self.cache {
                c.clear();
            }
            return r;
        }
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
            self.seen = self.fingerprint();
            self.placement = std::sync::OnceLock::new();
            if let Some(g) = &mut self.gate {
                g.forget();
            }
        }
        drop(owning);
        drop(lock);
        result
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
        // The link stays; what it names is replaced.
        let target = paths::link_target(&url).unwrap_or_else(|| url.clone());
        self.end_epoch()?;
        let _lock = write_beside(&target, storage.contiguous, self.durability.syncs(), |st| make(st).map(drop))?;
        let mut store = Store::open(&url)?;
        store.durability = self.durability;
        store.unsynced = self.unsynced || !self.durability.syncs();
        Ok(Replaced::OnDisk(Box::new(store)))
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
        // The handle's epoch, unless another handle ended it since.
        let epoch = self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let journal = TxJournal::armed(sync, self.unsynced, self.durability.batches(), epoch);
        let mut tx = Tx { sc: &mut self.sc, sums: &mut self.sums, journal, marker_due: false };
        match change(&mut tx).and_then(|v| tx.commit().map(|c| (v, c))) {
            Ok((v, (changed, epoch))) => {
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
                    self.reload()?;
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
    fn reload(&mut self) -> Result<()> {
        let url = self.storage().urlpath.ok_or_else(|| Error::storage(None, "the store is in memory"))?;
        let site = self.site.clone();
        let fresh = match &site {
            Some(s) if s.location.protocol() == Protocol::Versioned && s.offset.is_none() => {
                Self::open_versioned(&url)?
            }
            Some(s) => Self::adopt(SChunk::open_site(s, Chunks::Later)?, HeaderCheck::due())?,
            None => Self::adopt(SChunk::open(&url, Chunks::Later)?, HeaderCheck::due())?,
        };
        let (cache, durability, unsynced) = (self.cache.take(), self.durability, self.unsynced);
        // The handle's epoch goes on (its end needs the lock the caller may hold).
        let epoch = std::mem::take(self.epoch.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner));
        // The same gate: operations that own the lock still do (readers.rs).
        let gate = self.gate.take();
        *self = fresh;
        self.site = site;
        self.cache = cache;
        self.durability = durability;
        self.unsynced = unsynced;
        self.epoch = std::sync::Mutex::new(epoch);
        if let Some(mut g) = gate {
            g.forget();
            self.gate = Some(g);
        }
        Ok(())
    }
}

/// Chunks appended by the many: each pushed chunk waits until enough of
/// them do ([`Batch::due`]), then they go in with one [`Tx::append_chunks`]
/// (one pass over the frame). A new array's or a copy's chunks go in this
/// way, so building N chunks costs O(N).
#[derive(Default)]
pub(crate) struct Batch {
    pending: Vec<Vec<u8>>,
    bytes: usize,
    /// The chunks appended so far, for the caller to reuse ([`Batch::spent`]).
    spent: Vec<Vec<u8>>,
}

impl Batch {
    /// Compressed bytes that wait before they are appended, at most: a
    /// journaled write (each append syncs its journal at full durability).
    pub(crate) const BYTES: usize = 64 << 20;

    /// The same for a write that is not journaled (a new array, built
    /// beside its path): a few MiB, so that the chunks are written while
    /// they are still in the CPU's caches (64 MiB at a time made a
    /// one-thread write 1.5 times slower than c-blosc2's chunk by chunk).
    const UNJOURNALED_BYTES: usize = 8 << 20;

    /// Whether the pending chunks go in now: [`Batch::BYTES`] of them, or
    /// [`Batch::UNJOURNALED_BYTES`] when `tx` is not journaled, but never
    /// less than 64 times the offsets index each append rewrites, so that a
    /// huge array rewrites its index a bounded number of times per byte.
    fn due(&self, tx: &Tx<'_>) -> bool {
        let base = if tx.journaled() { Self::BYTES } else { Self::UNJOURNALED_BYTES };
        let index = usize::try_from(tx.nchunks()).unwrap_or(usize::MAX).saturating_mul(8 * 64);
        self.bytes >= base.max(index)
    }

    /// Append `chunk` after those pushed before it (now, or with later ones).
    pub(crate) fn push(&mut self, tx: &mut Tx<'_>, chunk: Vec<u8>) -> Result<()> {
        self.bytes += chunk.len();
        self.pending.push(chunk);
        if self.due(tx) {
            self.flush(tx)?;
        }
        Ok(())
    }

    /// Append what waits.
    pub(crate) fn flush(&mut self, tx: &mut Tx<'_>) -> Result<()> {
        tx.append_chunks(&self.pending)?;
        self.spent.append(&mut self.pending);
        self.bytes = 0;
        Ok(())
    }

    /// The buffers of the chunks appended since the last call.
    pub(crate) fn spent(&mut self) -> std::vec::Drain<'_, Vec<u8>> {
        self.spent.drain(..)
    }
}

/// A transaction on a [`Store`]: its operations are the only writes there
/// are. Each one is journaled (on a persistent store, inside
/// [`Store::write`]) before it runs and recorded in the checksum table after.
pub(crate) struct Tx<'s> {
    sc: &'s mut SChunk,
    sums: &'s mut Option<Table>,
    journal: TxJournal,
    /// A new store with checksums: the header marker is added before the
    /// first chunk operation (c-blosc2 adds metalayers to a frame only
    /// while it has no chunks).
    marker_due: bool,
}

impl Tx<'_> {
    /// Before an operation: the fault-injection point of the tests, then
    /// the journal's record of what `ops` may overwrite.
    fn before(&mut self, ops: &[Op]) -> Result<()> {
        #[cfg(test)]
        tests::fault::hit()?;
        #[cfg(feature = "testing")]
        hooks::hook("op");
        self.journal.before(self.sc, ops)
    }

    /// After an operation: the journal's record of the state it left, then
    /// the checksum table's. A change that cannot be recorded leaves a table
    /// that no longer matches, so reads report it instead of trusting stale sums.
    fn track(&mut self, change: impl FnOnce(&SChunk, &mut Table) -> Result<()>) -> Result<()> {
        self.journal.after()?;
        match self.sums.as_mut() {
            Some(t) => change(self.sc, t),
            None => Ok(()),
        }
    }

    /// Number of chunks.
    pub(crate) fn nchunks(&self) -> i64 {
        self.sc.nchunks()
    }

    /// Whether the changes are journaled (an array-level write of a
    /// persistent store; not a new store being built).
    fn journaled(&self) -> bool {
        !matches!(self.journal, TxJournal::Idle)
    }

    /// Whether a fixed-size metalayer exists.
    pub(crate) fn meta_exists(&self, name: &str) -> bool {
        self.sc.meta_exists(name)
    }

    /// Add the header marker if it is due (see [`Tx::marker_due`]).
    fn place_marker(&mut self) -> Result<()> {
        if std::mem::take(&mut self.marker_due) {
            self.add_marker()?;
        }
        Ok(())
    }

    /// Add the header marker to a store with a version-2 table, where
    /// c-blosc2 allows it (no frame, or no chunks yet) and a metalayer slot
    /// is free; otherwise the table records that there is none.
    fn add_marker(&mut self) -> Result<()> {
        let Some(t) = self.sums.as_ref() else { return Ok(()) };
        if t.version() < 2 || t.marker() {
            return Ok(());
        }
        if self.sc.meta_get(MARKER_NAME).as_deref() == Some(MARKER_CONTENT) {
            self.sums.as_mut().map(Table::set_marker);
            return Ok(());
        }
        if !self.sc.meta_addable() || self.sc.meta_exists(MARKER_NAME) || self.sc.meta_names().len() >= MAX_METALAYERS {
            return Ok(());
        }
        self.before(&[Op::Meta])?;
        self.sc.meta_add(MARKER_NAME, MARKER_CONTENT)?;
        self.sums.as_mut().map(Table::set_marker);
        self.journal.after()
    }

    /// Append a compressed chunk.
    pub(crate) fn append_chunk(&mut self, chunk: &[u8]) -> Result<()> {
        self.place_marker()?;
        let n = self.sc.nchunks();
        self.before(&[Op::Append])?;
        self.sc.append_chunk(chunk)?;
        self.track(|sc, t| chunk_hash(sc, t, n).map(|h| t.push(h)))
    }

    /// Append compressed chunks, in order, as one operation: journaled once,
    /// written in one pass over the frame ([`SChunk::append_chunks`]), the
    /// checksum table extended once. Growing by K chunks costs O(K) (plus
    /// one rewrite of the offsets index), where K calls of
    /// [`Tx::append_chunk`] would rewrite it K times.
    pub(crate) fn append_chunks<C: AsRef<[u8]>>(&mut self, chunks: &[C]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.place_marker()?;
        let n = self.sc.nchunks();
        self.before(&[Op::Append])?;
        let refs: Vec<&[u8]> = chunks.iter().map(AsRef::as_ref).collect();
        let done = self.sc.append_chunks(&refs);
        // In memory a failure may leave some chunks appended (nothing rolls
        // them back): the table follows what is there.
        let applied = (self.sc.nchunks() - n).clamp(0, refs.len() as i64);
        if let Some(t) = self.sums.as_mut() {
            for i in 0..applied {
                // A version-2 table hashes special chunks by meaning: the bytes
                // given hash as c-blosc2 hands them back (version 1 reads them back).
                let c = refs[i as usize];
                let h = if t.version() >= 2 {
                    t.hash(blosc::chunk_info(c).map_or(c, |info| &c[..info.cbytes]))
                } else {
                    chunk_hash(self.sc, t, n + i)?
                };
                t.push(h);
            }
        }
        done?;
        self.journal.after()
    }

    /// Append `chunk` `n` times, [`Batch::BYTES`] of them at a time (a
    /// value-filled array: one chunk, many times).
    pub(crate) fn append_repeated(&mut self, chunk: &[u8], n: i64) -> Result<()> {
        let per_batch = (Batch::BYTES / chunk.len().max(1)).max(1) as i64;
        let mut left = n;
        while left > 0 {
            let k = left.min(per_batch);
            self.append_chunks(&vec![chunk; k as usize])?;
            left -= k;
        }
        Ok(())
    }

    /// Replace several chunks, in order (journaled in one go).
    pub(crate) fn update_chunks<C: AsRef<[u8]>>(&mut self, chunks: &[(i64, C)]) -> Result<()> {
        // An unreadable header: blosc2 refuses it below, but save as if it fitted.
        let cbytes = |c: &C| blosc::chunk_info(c.as_ref()).map_or(0, |i| i.cbytes as u64);
        let ops: Vec<Op> = chunks.iter().map(|(n, c)| Op::Update { nchunk: *n, cbytes: cbytes(c) }).collect();
        self.place_marker()?;
        self.before(&ops)?;
        for (n, chunk) in chunks {
            let n = *n;
            self.sc.update_chunk(n, chunk.as_ref())?;
            if let Some(t) = self.sums.as_mut() {
                let h = chunk_hash(self.sc, t, n)?;
                t.set(n as usize, h);
            }
        }
        self.journal.after()
    }

    /// Remove chunk `n`; the chunks after it move down by one.
    pub(crate) fn delete_chunk(&mut self, n: i64) -> Result<()> {
        self.place_marker()?;
        self.before(&[Op::Delete(n)])?;
        self.sc.delete_chunk(n)?;
        self.track(|_, t| {
            t.remove(n as usize);
            Ok(())
        })
    }

    /// Permute the chunks without touching their data: chunk `i` becomes
    /// the one that was at `order[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `order` is not a permutation of the chunk indices.
    pub(crate) fn reorder(&mut self, order: &[i64]) -> Result<()> {
        let n = self.sc.nchunks();
        let mut seen = vec![false; order.len()];
        let valid = order.len() as i64 == n
            && order.iter().all(|&o| o >= 0 && o < n && !std::mem::replace(&mut seen[o as usize], true));
        if !valid {
            return Err(Error::InvalidArgument("chunk order is not a permutation".into()));
        }
        if order.iter().enumerate().all(|(i, &o)| i as i64 == o) {
            return Ok(());
        }
        self.place_marker()?;
        self.before(&[Op::Meta])?;
        self.sc.reorder(order)?;
        self.track(|_, t| {
            t.reorder(order);
            Ok(())
        })
    }

    /// Fill an empty store with `nchunks` special chunks of `chunk_nbytes` bytes.
    pub(crate) fn fill_special(&mut self, nchunks: i64, chunk_nbytes: usize, kind: Special) -> Result<()> {
        if nchunks == 0 {
            return Ok(());
        }
        self.place_marker()?;
        self.before(&[Op::Meta])?;
        self.sc.fill_special(nchunks, chunk_nbytes, kind)?;
        // Every special chunk of one kind comes back as the same bytes.
        self.track(|sc, t| {
            let sum = chunk_hash(sc, t, 0)?;
            (0..nchunks).for_each(|_| t.push(sum));
            Ok(())
        })
    }

    /// Add a fixed-size metalayer (only before the first chunk).
    pub(crate) fn meta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.before(&[Op::Meta])?;
        self.sc.meta_add(name, content)?;
        self.track_meta(name);
        self.journal.after()
    }

    /// Replace a fixed-size metalayer's content (never longer than it was).
    pub(crate) fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.before(&[Op::Meta])?;
        self.sc.meta_update(name, content)?;
        self.track_meta(name);
        self.journal.after()
    }

    /// Record a fixed-size metalayer's content as stored (padded, for an update).
    fn track_meta(&mut self, name: &str) {
        if let (Some(t), Some(content)) = (self.sums.as_mut(), self.sc.meta_get(name)) {
            t.record(Layer::Meta, name, &content);
        }
    }

    /// Add (`update == false`) or replace a variable-length metalayer.
    pub(crate) fn vlmeta_put(
        &mut self,
        name: &str,
        content: &[u8],
        update: bool,
        cparams: &blosc::CParams,
    ) -> Result<()> {
        // Stored only if an open will accept it, by the rules an open
        // applies. Up to METADATA_FREE bytes it always will; above, the
        // chunk c-blosc2 will store decides.
        if content.len() as i64 > frame_check::METADATA_FREE {
            frame_check::check_vlmetalayer(name, &blosc::compress_vlmeta(content, cparams)?)?;
        }
        self.before(&[Op::Meta])?;
        self.sc.vlmeta_put(name, content, update, cparams)?;
        // What c-blosc2 did store, by the same rules (the transaction is rolled back if not).
        if let Some(stored) = self.sc.vlmeta_stored(name) {
            frame_check::check_vlmetalayer(name, &stored)?;
        }
        if let Some(t) = self.sums.as_mut() {
            t.record(Layer::VlMeta, name, content);
        }
        self.journal.after()
    }

    /// Start keeping per-chunk checksums: hash every chunk now, record the
    /// metadata and add the header marker where c-blosc2 allows it (the
    /// table is stored when the transaction commits). A store with a
    /// version-1 table has every chunk checked against it, then gets a
    /// version-2 table; nothing happens to one with a version-2 table.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if a chunk fails its version-1 checksum; as
    /// reading chunks and metalayers.
    pub(crate) fn enable_checksums(&mut self) -> Result<()> {
        if let Some(old) = self.sums.as_ref().filter(|t| t.version() < 2) {
            for n in 0..self.sc.nchunks() {
                checked_chunk(self.sc, Some(old), n)?;
            }
        } else if self.sums.is_some() {
            return Ok(());
        }
        let mut t = Table::new(u32::try_from(self.sc.typesize()).unwrap_or(0));
        for n in 0..self.sc.nchunks() {
            let h = chunk_hash(self.sc, &t, n)?;
            t.push(h);
        }
        for name in self.sc.meta_names() {
            if let Some(content) = self.sc.meta_get(&name) {
                t.record(Layer::Meta, &name, &content);
            }
        }
        for name in self.sc.vlmeta_names() {
            if let Some(content) = self.sc.vlmeta_get(&name)? {
                t.record(Layer::VlMeta, &name, &content);
            }
        }
        *self.sums = Some(t);
        self.add_marker()
    }

    /// Store the checksum table if it changed since it was last stored.
    fn store_checksums(&mut self) -> Result<()> {
        let Some(content) = self.sums.as_mut().and_then(Table::take_dirty) else { return Ok(()) };
        // A table that a reader would refuse (the bound on metadata of
        // frame_check, which keeps hostile files from making c-blosc2
        // allocate gigabytes) is not written: the write fails instead.
        if content.len() as i64 > frame_check::METADATA_FREE {
            self.sums.as_mut().map(Table::mark_dirty);
            return Err(Error::InvalidArgument(format!(
                "an array of {} chunks is too large for a checksum table ({} bytes, {} at most); use fewer, \
                 larger chunks or no checksums",
                self.sc.nchunks(),
                content.len(),
                frame_check::METADATA_FREE
            )));
        }
        let update = self.sc.vlmeta_exists(VLMETA_NAME)?;
        let r = self.vlmeta_put(VLMETA_NAME, &content, update, &blosc::CParams::default());
        if r.is_err() {
            self.sums.as_mut().map(Table::mark_dirty);
        }
        r
    }

    /// The transaction succeeded: store the table with the changes it
    /// describes, then commit the journal.
    fn commit(&mut self) -> Result<(bool, Option<Box<Journal>>)> {
        self.store_checksums()?;
        self.journal.commit(self.sc)
    }

    /// Leave the journal on disk and stop journaling, as a process killed
    /// in the middle of the transaction would (for the recovery tests).
    #[cfg(test)]
    pub(crate) fn crash(&mut self) {
        self.journal = TxJournal::Idle;
    }
}
