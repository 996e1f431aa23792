//! The store's handle: [`Store`], an array's super-chunk with what this
//! handle knows of it (checksums, where its chunks lie, the version it
//! read), its reads, and what it says of itself. Changing it and opening
//! it are the business of the store's entry points (`store/mod.rs`), by the
//! protocol of where it lives (`journaled.rs`, `versioned.rs`).

use super::backend::unchangeable;
use super::blosc_io;
use super::checksum::{checked_chunk, load_checksums, Table, VLMETA_NAME};
use super::durability::Durability;
use super::frame;
use super::frame_check::{self, Chunks};
use super::journal::{Epoch, TxJournal};
use super::location::{FrameSite, Protocol};
use super::paths;
use super::reader::{self, Want};
use super::readers::{self, Owning, Section};
use super::schunk::{Layout, SChunk, Storage};
use super::tx::Tx;
use crate::blosc2;
use crate::blosc2::Chunk;
use crate::cache::BlockCache;
use crate::error::{Error, Result};

/// An array's super-chunk with its journal, checksums and recovery.
pub(crate) struct Store {
    pub(super) sc: SChunk,
    /// Per-chunk checksums, when the store keeps them.
    pub(super) sums: Option<Table>,
    /// For a persistent store, the [`frame::fingerprint`] of its frame as
    /// this handle last left or found it (under the array's lock).
    pub(super) seen: Option<u64>,
    /// For a store on disk without checksums, where its chunks lie, so that
    /// reads fetch them (or the blocks they need) themselves ([`reader`]);
    /// found at the first read after an open or a write.
    pub(super) chunk_places: std::sync::OnceLock<Option<reader::ChunkPlaces>>,
    /// The handle's cache of decompressed blocks, if it keeps one; emptied
    /// by every write.
    pub(super) cache: Option<BlockCache>,
    /// Where a persistent store's frame lives (`None` in memory); for a
    /// frame opened at a byte offset of a larger file
    /// ([`Store::open_offset`]), where it starts: such a store is read-only.
    pub(super) site: Option<FrameSite>,
    /// Whether the headers of the stored chunks remain to be checked before
    /// c-blosc2 reads a chunk ([`Store::ensure_checked`]): opening a file
    /// checks where each chunk lies, not its header ([`Chunks::Later`]).
    pub(super) headers: DeferredHeaderCheck,
    /// What this handle's writes, saves and replacements survive (whether
    /// they sync): the handle's setting, not the file's.
    pub(super) durability: Durability,
    /// For a store opened at a versioned location: what its frame check
    /// read and the object version it read, from which the places of its
    /// chunks ([`reader::ChunkPlaces`]) are found without asking the
    /// storage again (and of the very version c-blosc2 parsed).
    pub(super) checked_read: Option<frame_check::CheckedRead>,
    /// This handle changed the store on disk without syncing (at
    /// [`Durability::Process`]) since its last synced write: the next
    /// synced write syncs all of a sparse frame's files, not only its own.
    pub(super) unsynced: bool,
    /// For a store in local files: its read sections' lock and what it
    /// last knew of its data file ([`readers`]).
    pub(super) gate: Option<readers::Gate>,
    /// At [`Durability::Normal`], the journal of the epoch this handle's
    /// writes are in, between two of them (see [`journal`]); ended when it
    /// is due, when the level changes, before a replacement and on drop.
    pub(super) epoch: std::sync::Mutex<Epoch>,
}

/// How an operation changes a store ([`Store::check_changeable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
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
pub(super) struct DeferredHeaderCheck {
    /// Some check is due (a store opened from a file).
    pub(super) due: bool,
    /// Set once the check has passed (a failed one runs again next time:
    /// the file may have been caught half-written by another handle).
    pub(super) passed: std::sync::OnceLock<()>,
}

impl DeferredHeaderCheck {
    /// The check of a store opened from a file, not run yet.
    pub(super) fn due() -> Self {
        DeferredHeaderCheck { due: true, passed: std::sync::OnceLock::new() }
    }
}

/// Making one, reading it, and what it says of itself.
impl Store {
    /// [`Store::create`] at exactly `storage` (a path there is free).
    pub(super) fn build(
        storage: &Storage,
        layout: &Layout,
        checksums: bool,
        fill: impl FnOnce(&mut Tx<'_>) -> Result<()>,
    ) -> Result<Store> {
        let sc = SChunk::new(storage, layout)?;
        let mut cleanup = paths::Cleanup::new(storage.urlpath.as_deref());
        let typesize = u32::try_from(layout.typesize).unwrap_or(0);
        let mut store = Self::assemble(sc, checksums.then(|| Table::new(typesize)), DeferredHeaderCheck::default());
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

    /// A store over a contiguous frame in memory.
    ///
    /// # Safety
    /// As [`SChunk::from_cframe`]: with `copy == false` the caller keeps the
    /// buffer alive and unchanged for the store's life (it is copied before
    /// the first write).
    pub(crate) unsafe fn from_cframe(cframe: *const u8, len: usize, copy: bool) -> Result<Store> {
        // SAFETY: forwarded from the caller.
        Self::adopt(unsafe { SChunk::from_cframe(cframe, len, copy)? }, DeferredHeaderCheck::default())
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
            Ok(sums) => Ok(Self::assemble(sc, sums, DeferredHeaderCheck::default())),
            Err(e) => {
                let _ = sc.into_raw();
                Err(e)
            }
        }
    }

    /// A store over `sc` with the checksums it keeps (checked); `headers`:
    /// [`DeferredHeaderCheck::due`] for a frame file opened with [`Chunks::Later`].
    pub(super) fn adopt(sc: SChunk, headers: DeferredHeaderCheck) -> Result<Store> {
        let sums = load_checksums(&sc)?;
        Ok(Self::assemble(sc, sums, headers))
    }

    /// [`Store::adopt`] of a super-chunk opened at `site` (resolved by the
    /// caller: c-blosc2's path for it may be a stand-in).
    ///
    /// # Errors
    /// As [`Store::adopt`].
    pub(super) fn adopt_at(sc: SChunk, headers: DeferredHeaderCheck, site: FrameSite) -> Result<Store> {
        let sums = load_checksums(&sc)?;
        Ok(Self::assemble_at(sc, sums, headers, Some(site)))
    }

    /// A store over `sc` with checksums `sums`, nothing else known yet.
    pub(super) fn assemble(sc: SChunk, sums: Option<Table>, headers: DeferredHeaderCheck) -> Store {
        let st = sc.storage();
        // c-blosc2 made or opened the frame at this path: it has a site.
        let site = st.urlpath.as_deref().and_then(|url| FrameSite::new(url, st.contiguous, None).ok());
        Self::assemble_at(sc, sums, headers, site)
    }

    /// [`Store::assemble`] where the frame lives at `site`.
    fn assemble_at(sc: SChunk, sums: Option<Table>, headers: DeferredHeaderCheck, site: Option<FrameSite>) -> Store {
        let st = sc.storage();
        let local = site.as_ref().is_some_and(|s| s.location.protocol() == Protocol::Journaled);
        let gate = st.urlpath.as_deref().filter(|_| local).map(readers::Gate::new);
        Store {
            sc,
            sums,
            seen: None,
            chunk_places: Default::default(),
            cache: None,
            site,
            headers,
            durability: Durability::Full,
            unsynced: false,
            checked_read: None,
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
            Some(at) => frame_check::check_path_at(&url, at, Chunks::Now, blosc2::inflate),
            None => frame_check::check_path(&url, Chunks::Now, blosc2::inflate),
        }?;
        let _ = self.headers.passed.set(());
        Ok(())
    }

    /// The fingerprint of the frame on disk, for a persistent store (`None`
    /// in memory, or if it cannot be read).
    pub(super) fn fingerprint(&self) -> Option<u64> {
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

    // Reads.
    /// Compressed chunk `n`, checked against its checksum when the store keeps them.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if it fails its checksum; as [`SChunk::chunk`].
    pub(crate) fn chunk(&self, n: i64) -> Result<Chunk<'_>> {
        let _section = self.read_section()?;
        // c-blosc2 makes a special chunk from the index alone, which opening checked.
        let special = self.chunk_places.get().and_then(Option::as_ref).is_some_and(|p| p.is_special(n));
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
        Error::Changed { path: self.site.as_ref().map(FrameSite::url).unwrap_or_default() }
    }

    /// Whether the frame object this handle read (at a versioned location)
    /// has been replaced or removed since, as far as the storage can say now.
    pub(crate) fn replaced_since_read(&self) -> bool {
        let (Some(site), Some(checked_read)) = (&self.site, &self.checked_read) else { return false };
        match site.location.stat(&frame::frame_object(site)) {
            Ok(Some(e)) => e.generation != *checked_read.object.generation(),
            Ok(None) => true,
            Err(_) => false,
        }
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
        let chunk_places = self.chunk_places.get_or_init(|| self.place());
        match chunk_places {
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
        self.chunk_places.get_or_init(|| self.place()).as_ref().is_some_and(reader::ChunkPlaces::is_remote)
    }

    /// Fetch the chunks of `wants` at once for the reads that follow (a
    /// remote store's; nothing elsewhere), and run `read`; what it did not
    /// take is forgotten then.
    pub(crate) fn prefetched<T>(&self, wants: &[(i64, Want<'_>)], read: impl FnOnce() -> T) -> T {
        let Some(p) = self.chunk_places.get_or_init(|| self.place()).as_ref().filter(|p| p.is_remote()) else {
            return read();
        };
        reader::prefetch(p, wants);
        let out = read();
        p.unstage(wants.iter().map(|(n, _)| *n));
        out
    }
    /// Mark an operation of this handle as holding the array's lock, until
    /// the result is dropped (see [`readers::Gate::own`]).
    pub(crate) fn owning(&self) -> Owning {
        self.gate.as_ref().map_or_else(Owning::none, readers::Gate::own)
    }

    /// Open a read section (see [`readers`]): until it is dropped, no
    /// writer (of any handle, in any process) changes the array, and this
    /// handle's view of it is current. Every read of chunks runs in one.
    ///
    /// # Errors
    /// [`Error::Changed`] if another handle changed the array since this
    /// one opened, wrote or refreshed it; as [`readers::Gate::section`].
    pub(crate) fn read_section(&self) -> Result<Section<'_>> {
        let Some(gate) = &self.gate else { return Ok(Section::none()) };
        let view_holds = || self.seen.is_some() && self.fingerprint() == self.seen;
        // Changed in place only: the view holds, cached blocks may not.
        let in_place = || {
            if let Some(c) = &self.cache {
                c.clear();
            }
        };
        gate.section(view_holds, in_place)
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
    fn place(&self) -> Option<reader::ChunkPlaces> {
        if self.sums.is_some() || self.sc.nchunks() > reader::MAX_PLACED {
            return None;
        }
        let offsets = match &self.checked_read {
            Some(checked_read) => {
                let _serving = blosc_io::ServingChecked::start(checked_read.served.clone());
                self.sc.frame_offsets()
            }
            None => self.sc.frame_offsets(),
        };
        reader::ChunkPlaces::new(self.site.as_ref()?, offsets.ok()?, self.checked_read.as_ref()).ok()
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
    pub(crate) fn cparams(&self) -> blosc2::CParams {
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
                blosc2::free(p.cast());
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

    // Where it lives, and what may change it.
    /// Where the frame starts in its file, for a store opened by
    /// [`Store::open_offset`].
    pub(crate) fn offset(&self) -> Option<u64> {
        self.site.as_ref().and_then(|s| s.offset)
    }

    /// Whether this store's frame lives at a versioned location.
    pub(crate) fn is_versioned(&self) -> bool {
        self.site.as_ref().is_some_and(|s| s.location.protocol() == Protocol::Versioned)
    }

    /// Whether this handle may change what it stores, and how: the one
    /// place every changing operation asks ([`Store::write`] for changes in
    /// place, [`Store::replace`] for a new store taking the old one's
    /// place). A frame inside a larger file (opened at an offset) is
    /// read-only: a change in place would write into the host file, and a
    /// replacement would replace the whole file. So is an array at a
    /// versioned location (see `store/versioned.rs`).
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] naming why the handle is read-only.
    pub(super) fn check_changeable(&self, how: Change) -> Result<()> {
        if self.is_versioned() && self.offset().is_none() {
            let url = self.storage().urlpath.unwrap_or_default();
            if self.site.as_ref().is_some_and(|s| s.location.read_only()) {
                return Err(unchangeable(&url, "change"));
            }
            let _ = how;
            return Ok(());
        }
        match self.offset() {
            Some(at) => {
                let url = self.sc.storage().urlpath.unwrap_or_default();
                let what = match how {
                    Change::InPlace => "",
                    Change::Replace => " (this operation rewrites the array, which would replace the whole file)",
                };
                Err(Error::storage(
                    Some(&url),
                    format!(
                        "the array at byte {at} of '{url}' lies inside a larger file and is read-only \
                         (opened at an offset){what}; copy or save it elsewhere to change it"
                    ),
                ))
            }
            None => Ok(()),
        }
    }

    /// Take `fresh`'s view of the frame (a reload: after a rollback, or
    /// to catch up with other writers), keeping this handle's own: its
    /// site, block cache, durability, epoch and read gate.
    pub(super) fn take_over(&mut self, fresh: Store) {
        let site = self.site.clone();
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
    }

    /// This store's frame opened again from where it lives (checked, as
    /// every open), for [`Store::take_over`].
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] for a store in memory; as [`SChunk::open`].
    pub(super) fn reopened(&self) -> Result<Store> {
        let url = self.storage().urlpath.ok_or_else(|| Error::storage(None, "the store is in memory"))?;
        match &self.site {
            Some(s) => Self::adopt(SChunk::open_site(s, Chunks::Later)?, DeferredHeaderCheck::due()),
            None => Self::adopt(SChunk::open(&url, Chunks::Later)?, DeferredHeaderCheck::due()),
        }
    }

    /// After a write of this handle's: what it knows of the frame is what
    /// it left (its fingerprint), and where the chunks lie is found again.
    pub(super) fn written(&mut self) {
        self.seen = self.fingerprint();
        self.chunk_places = std::sync::OnceLock::new();
        if let Some(g) = &mut self.gate {
            g.forget();
        }
    }
}
