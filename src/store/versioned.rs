//! The store at locations whose objects are replaced whole under conditions
//! and never written in place ([`Protocol::Versioned`]: object stores, web
//! servers), beside the journaled protocol of local files (the rest of
//! `store/`: journal, lock, write beside and rename).
//!
//! [`Store`]'s entry points resolve where an array lives once
//! (`backend.rs`) and come here for such a location:
//!
//! - **Opening** needs no lock and has nothing to roll back: an opened
//!   object is one version of it ([`super::location::Object`]), so the frame
//!   check and c-blosc2's parse read the same bytes (c-blosc2 is served
//!   what the check read, and reaches the location through a stand-in path:
//!   `blosc_io::StandInPath`). A handle's view is that version; [`refresh`]
//!   reloads it when the frame's generation moved.
//! - **Writing** ([`Store::write_versioned`]) takes no lock: c-blosc2
//!   changes the handle's version with its writes held in memory
//!   (`blosc_io::Draft`), then [`publish`] makes them visible: a sparse
//!   frame's new chunks as new objects under fresh names (never written
//!   over), then its index replaced only if it is still the version read; a
//!   contiguous frame replaced whole under the same condition. A writer that
//!   loses the race gets [`Error::Conflict`] with nothing published, and the
//!   array layer makes its write again on the new version
//!   (`Array::optimistically`), so no update is lost. A writer killed at any
//!   point leaves the last published version whole; chunk objects it made
//!   and never published are removed by [`sweep`] once old enough; chunk
//!   objects a new version no longer names are removed by its writer where
//!   the server's conditions were checked, left to [`sweep`] under a lease
//!   (`writers::Permit::removes_superseded`). A removed object's number may
//!   be drawn again ([`FreshIds`]): readers of an older version check what
//!   they read is what their version named (`location::check_named_by`).
//! - **Refused** with [`Error::InvalidStorage`], before anything is
//!   written: any change on a web server (read-only), and what rewrites an
//!   array as a new one there (creating one, saving or appending a frame
//!   over one, removing one, reshapes that change the layout): copy the
//!   array to a local path for those.
//!
//! [`refresh`]: Store::refresh_versioned

use super::backend::unchangeable;
use super::blosc_io::{Draft, ServingChecked};
use super::frame;
use super::frame_check::{CheckedRead, Chunks};
use super::handle::{DeferredHeaderCheck, Store};
use super::journal::TxJournal;
use super::location::{self, Condition, FrameSite, Generation, Location, PutError, ResolvedUrl};
use super::schunk::{SChunk, Storage};
use super::tx::Tx;
use super::writers::Permit;
use crate::blosc2;
use crate::error::{Error, Result};

impl Store {
    /// Open the array `at` names, a versioned location: check the frame
    /// (one version of its object, or of a sparse frame's index), have
    /// c-blosc2 parse exactly the bytes the check read, read the checksum
    /// table. Chunks' headers are checked before c-blosc2 reads one, as on disk.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub(super) fn open_versioned(at: &ResolvedUrl) -> Result<Store> {
        // A version replaced between the open's requests fails its reads
        // (they are conditioned on it): open the new one.
        let mut tries = 0;
        loop {
            match Self::open_version(at) {
                Err(Error::Io { kind: std::io::ErrorKind::NotFound, .. }) if tries < 8 => tries += 1,
                r => return r,
            }
        }
    }

    /// [`Store::open_versioned`], once.
    fn open_version(at: &ResolvedUrl) -> Result<Store> {
        let urlpath = at.url();
        let summary = SChunk::check_resolved(at, Chunks::Later)?;
        let Some(CheckedRead { served, object }) = summary.read else {
            return Err(Error::storage(Some(urlpath), format!("'{urlpath}': the frame check kept nothing to parse")));
        };
        let site = at.frame_site(!summary.sparse, None);
        // From what the check read: no request more.
        let seen = frame::fingerprint_served(served.len, |from, n| served.bytes(from, n), site.contiguous);
        let sc = {
            let _serving = ServingChecked::start(served.clone());
            SChunk::parse_site(&site)?
        };
        // c-blosc2 reads the offsets index again later: from this version.
        super::blosc_io::pin_frame(sc.io_params(), frame::frame_object(&site), object.clone());
        let mut store = Self::adopt_at(sc, DeferredHeaderCheck::due(), site)?;
        store.seen = seen.map(|content| frame::with_generation(content, object.generation()));
        store.checked_read = Some(CheckedRead { served, object });
        Ok(store)
    }

    /// [`Store::open_offset`] at a versioned location: one version of the
    /// object, read-only: nothing to lock or roll back.
    pub(super) fn open_offset_versioned(at: &ResolvedUrl, offset: u64) -> Result<Store> {
        let site = at.frame_site(true, Some(offset));
        let sc = SChunk::open_site(&site, Chunks::Later)?;
        let mut store = Self::adopt_at(sc, DeferredHeaderCheck::due(), site)?;
        store.seen = store.fingerprint();
        Ok(store)
    }

    /// Bring a handle of an array at a versioned location up to date:
    /// reload it if its frame's generation moved since this handle read it.
    /// Returns whether it reloaded.
    ///
    /// # Errors
    /// As [`Store::open`] if reloading fails (the handle keeps its view).
    pub(super) fn refresh_versioned(&mut self) -> Result<bool> {
        if let Some(c) = &self.cache {
            c.clear();
        }
        let now = self.fingerprint();
        if now.is_some() && now == self.seen {
            return Ok(false);
        }
        self.reload_versioned()?;
        self.seen = self.fingerprint();
        self.chunk_places = std::sync::OnceLock::new();
        Ok(true)
    }
    /// Reopen this handle's array from where it lives: the version there now.
    fn reload_versioned(&mut self) -> Result<()> {
        let fresh = match &self.site {
            Some(s) if s.offset.is_none() => Self::open_versioned(&s.resolved_url())?,
            _ => self.reopened()?,
        };
        self.take_over(fresh);
        Ok(())
    }

    /// [`Store::replace`] at a versioned location: the new array `make`
    /// writes ([`build_and_publish`]) replaces this handle's version, if it
    /// is still the one there; then opened.
    ///
    /// # Errors
    /// [`Error::Conflict`] if another writer replaced it first; as `make`
    /// and the storage fail.
    pub(super) fn replace_versioned(&self, make: impl FnOnce(&Storage) -> Result<()>) -> Result<Store> {
        let site = self.site.as_ref().ok_or_else(|| Error::storage(None, "the store has no location"))?;
        let base = self.checked_read.as_ref().map(|k| k.object.generation().clone());
        build_and_publish(site, base, make)?;
        Store::open_versioned(&site.resolved_url())
    }

    /// [`sweep`] this store's sparse frame at a versioned location; 0 elsewhere.
    ///
    /// # Errors
    /// As [`sweep`].
    pub(crate) fn remove_orphans(&self, older_than: std::time::Duration) -> Result<usize> {
        match &self.site {
            Some(site) if site.location.read_only() => Err(unchangeable(&site.url(), "remove orphans of")),
            Some(site) if self.is_versioned() && !site.contiguous && site.offset.is_none() => {
                sweep(site, older_than).map(|r| r.len())
            }
            _ => Ok(0),
        }
    }

    /// [`Store::write`] at a versioned location: run `change` on this
    /// handle's version with c-blosc2's writes held in a [`Draft`], then
    /// publish them ([`publish`]): new chunk objects under new names, then
    /// the frame object (a sparse frame's index, or a contiguous frame
    /// whole) replaced only if it is still the version this handle read.
    /// The handle is then reloaded, whatever happened.
    ///
    /// # Errors
    /// [`Error::Conflict`] if another writer replaced the frame since this
    /// handle read it (nothing was published: bring the handle up to date
    /// and make the change again); as `change` and the storage fail.
    pub(super) fn write_versioned<T>(&mut self, change: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let site = self.site.clone().ok_or_else(|| Error::storage(None, "the store has no location"))?;
        let url = site.url();
        let base = self.checked_read.as_ref().map(|k| k.object.clone()).ok_or_else(|| {
            Error::storage(Some(&url), format!("'{url}': the version this handle read is not known; reopen it"))
        })?;
        self.ensure_checked()?;
        let permit = super::writers::admit(&site)?;
        // Under a lease (a server whose conditional writes may not hold),
        // the version this handle read may have been replaced before the
        // lease was taken, and the conditional replace below would not
        // catch it there: the write would undo the other writer's.
        if permit.leased() && self.replaced_since_read() {
            return Err(conflict(&url));
        }
        let frame_name = frame::frame_object(&site);
        let len = usize::try_from(base.len()).map_err(|_| Error::storage(Some(&url), "the frame is too large"))?;
        let base_bytes = base.read_vec(0, len).map_err(|e| read_error(&url, &e))?;
        let params = self.sc.io_params();
        Draft::begin(params, frame_name, base_bytes.clone())
            .map_err(|e| Error::io("starting a write of", Some(std::path::Path::new(&url)), &e))?;
        let result = {
            let mut tx = Tx { sc: &mut self.sc, sums: &mut self.sums, journal: TxJournal::Idle, marker_due: false };
            change(&mut tx).and_then(|v| tx.commit().map(|_| v))
        };
        let draft = Draft::end(params).unwrap_or_default();
        // A failure while another writer replaced the version (a chunk
        // object it named has gone) is that writer's doing.
        let result = result.map_err(|e| if self.replaced_since_read() { conflict(&url) } else { e });
        let result = result.and_then(|v| publish(&site, &permit, base.generation(), &base_bytes, draft).map(|()| v));
        // c-blosc2's view of the frame is the draft's, published or not.
        let reloaded = self.reload_versioned();
        self.seen = self.fingerprint();
        self.chunk_places = std::sync::OnceLock::new();
        let v = result?;
        reloaded?;
        Ok(v)
    }
}

/// The error for a failed read of the frame at `url`: a version that has
/// gone is a conflict (another writer replaced it).
fn read_error(url: &str, e: &std::io::Error) -> Error {
    if matches!(e.kind(), std::io::ErrorKind::NotFound) || e.to_string().contains("precondition") {
        conflict(url)
    } else {
        Error::io("reading", Some(std::path::Path::new(url)), e)
    }
}

/// Another writer replaced the array at `url` first.
fn conflict(url: &str) -> Error {
    Error::Conflict {
        path: url.to_owned(),
        reason: format!(
            "'{url}' was replaced by another writer since this handle read it; nothing was written: \
             refresh the handle and write again"
        ),
    }
}

/// Publish what a write put in `draft` for the frame at `site`, whose frame
/// object was of generation `base` (`base_bytes`):
///
/// - A contiguous frame is replaced whole, if still of generation `base`.
/// - A sparse frame's chunks that c-blosc2 wrote go to new objects, each
///   under a fresh name (created only if absent: never written over), and
///   its index is rewritten to name them; the index is then replaced if
///   still of generation `base`. If that fails, the new chunk objects are
///   removed; if it succeeds, the chunk objects the old index named and the
///   new one does not are (readers of the old version that still read them
///   then find them gone, and refresh).
///
/// A writer killed in between leaves the old version whole and readable,
/// and chunk objects no index names (see [`sweep`]).
///
/// # Errors
/// [`Error::Conflict`] if the frame object changed; as the storage fails.
fn publish(site: &FrameSite, permit: &Permit, base: &Generation, base_bytes: &[u8], draft: Draft) -> Result<()> {
    let url = site.url();
    let loc = &*site.location;
    let frame_name = frame::frame_object(site);
    let Draft { mut images, written } = draft;
    if written.is_empty() {
        return Ok(());
    }
    let put_err = |name: &str, e: PutError| match e {
        PutError::Conflict => conflict(&url),
        PutError::Io(e) => Error::io("writing", Some(std::path::Path::new(&loc.url(name))), &e),
    };
    if site.contiguous {
        let image = images.remove(&frame_name).unwrap_or_default();
        permit.before_publish()?;
        put_landed(loc, &frame_name, &image, Condition::IfGeneration(base)).map_err(|e| put_err(&frame_name, e))?;
        return permit.after_publish(site, &frame_name, &image);
    }
    let index = images.remove(&frame_name).unwrap_or_default();
    let (_, mut offsets, sections) = index_offsets(&url, &index)?;
    let (before, _, _) = index_offsets(&url, base_bytes)?;
    // The chunks c-blosc2 wrote, each to a fresh name.
    let mut chunks: Vec<(i64, Option<i64>)> = Vec::new();
    let mut by_id = std::collections::HashMap::new();
    for name in &written {
        let Some(id) = name.rsplit('/').next().and_then(frame::chunk_id) else { continue };
        if name == &frame_name || !offsets.contains(&id) || by_id.contains_key(&id) {
            continue;
        }
        by_id.insert(id, images.get(name).map_or(&[][..], Vec::as_slice));
        chunks.push((id, None));
    }
    // Chunk objects this version keeps under numbers past c-blosc2's bound
    // (the frame's `cbytes` shrank: a chunk became zeros, or smaller):
    // copied to fresh numbers, so that Blosc2 readers still open it.
    let bound = cblosc2_bound(sections.cbytes);
    let mut moved = std::collections::HashMap::new();
    for &id in offsets.iter().filter(|&&o| o > bound && !by_id.contains_key(&o)) {
        if let std::collections::hash_map::Entry::Vacant(v) = moved.entry(id) {
            let name = location::join(&site.key, &frame::chunk_name(id));
            let bytes =
                loc.open(&name).and_then(|o| o.read_vec(0, o.len() as usize)).map_err(|e| read_error(&url, &e))?;
            v.insert(bytes);
            chunks.push((id, None));
        }
    }
    let bytes_of = |id: i64| {
        Ok(std::borrow::Cow::Borrowed(match by_id.get(&id) {
            Some(b) => *b,
            None => moved.get(&id).map_or(&[][..], Vec::as_slice),
        }))
    };
    let ids = FreshIds::new(bound, before.iter().chain(&offsets).copied());
    let (made, renamed) = put_chunks(site, &chunks, ids, &bytes_of, &put_err)?;
    offsets.iter_mut().for_each(|o| *o = renamed.get(o).copied().unwrap_or(*o));
    let new_index = match rebuild_index(&index, &sections, &offsets) {
        Ok(i) => i,
        Err(e) => {
            remove_objects(loc, &made);
            return Err(e);
        }
    };
    // Where the tests kill a writer: its chunk objects made, its index not.
    #[cfg(feature = "testing")]
    super::hooks::hook("publish");
    let put = permit.before_publish().and_then(|()| {
        put_landed(loc, &frame_name, &new_index, Condition::IfGeneration(base)).map_err(|e| put_err(&frame_name, e))
    });
    if let Err(e) = put {
        remove_objects(loc, &made);
        return Err(e);
    }
    permit.after_publish(site, &frame_name, &new_index)?;
    if !permit.removes_superseded() {
        return Ok(());
    }
    // What the old version named and the new one does not.
    let now: std::collections::HashSet<i64> = offsets.iter().copied().filter(|&o| o >= 0).collect();
    for id in before.into_iter().filter(|&o| o >= 0 && !now.contains(&o)) {
        let _ = loc.remove(&location::join(&site.key, &frame::chunk_name(id)), None);
    }
    Ok(())
}

/// Remove the objects `names` (what a write that failed made), as far as
/// the storage lets: what stays is an orphan ([`Store::remove_orphans`]).
fn remove_objects(loc: &dyn Location, names: &[String]) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        while let Some(name) = names.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            let _ = loc.remove(name, None);
        }
    };
    // A request each: [`PUTTERS`] at a time.
    std::thread::scope(|s| {
        for _ in 1..names.len().min(PUTTERS) {
            s.spawn(work);
        }
        work();
    });
}

/// Chunk objects put at once by [`put_chunks`], at most.
const PUTTERS: usize = 16;

/// Put each chunk `(id, name it by first)` of `chunks` (bytes from
/// `bytes_of(id)`) as a new chunk object of the sparse frame at `site`:
/// created only where nothing is (under a fresh id when its first name, or
/// `None`, is taken), [`PUTTERS`] at a time. Returns the objects made and
/// the ids chunks were put under where not their own. On a failure, the
/// objects made are removed and the first failure returned (`put_err`
/// spells a put's).
fn put_chunks<'b>(
    site: &FrameSite,
    chunks: &[(i64, Option<i64>)],
    ids: FreshIds,
    bytes_of: &(dyn Fn(i64) -> Result<std::borrow::Cow<'b, [u8]>> + Sync),
    put_err: &(dyn Fn(&str, PutError) -> Error + Sync),
) -> Result<(Vec<String>, std::collections::HashMap<i64, i64>)> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    let loc = &*site.location;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let bound = ids.bound;
    let ids = Mutex::new(ids);
    let fresh = || {
        ids.lock().unwrap_or_else(PoisonError::into_inner).next().ok_or_else(|| {
            Error::storage(
                Some(&site.url()),
                format!(
                    "'{}': no chunk object number is free within the {} that Blosc2 readers accept",
                    site.url(),
                    bound + 1
                ),
            )
        })
    };
    let made = Mutex::new(Vec::new());
    let renamed = Mutex::new(std::collections::HashMap::new());
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let put_one = |id: i64, first: Option<i64>| -> Result<()> {
        let bytes = bytes_of(id)?;
        let mut name_id = match first {
            Some(id) => id,
            None => fresh()?,
        };
        for tries in 1.. {
            let name = location::join(&site.key, &frame::chunk_name(name_id));
            match put_landed(loc, &name, &bytes, Condition::IfAbsent) {
                Ok(()) => {
                    made.lock().unwrap_or_else(PoisonError::into_inner).push(name);
                    break;
                }
                Err(PutError::Conflict) if tries < 64 => name_id = fresh()?,
                Err(e) => return Err(put_err(&name, e)),
            }
        }
        if name_id != id {
            renamed.lock().unwrap_or_else(PoisonError::into_inner).insert(id, name_id);
        }
        Ok(())
    };
    let work = || {
        while !stop.load(Ordering::Relaxed) {
            let Some(&(id, first)) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
            if let Err(e) = put_one(id, first) {
                stop.store(true, Ordering::Relaxed);
                failed.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..chunks.len().min(PUTTERS) {
            s.spawn(work);
        }
        work();
    });
    let made = made.into_inner().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        remove_objects(loc, &made);
        return Err(e);
    }
    Ok((made, renamed.into_inner().unwrap_or_else(PoisonError::into_inner)))
}

/// Put `bytes` at `name` if `cond` holds. A put that failed may yet have
/// landed: its answer lost, the client's retry of it found its own write
/// there and failed the condition (or gave up). Then the object holds
/// exactly `bytes` (our chunk objects and indexes name fresh random chunk
/// names, so equal bytes are ours): that is a success, not a failure whose
/// clean-up would remove objects the landed write names.
///
/// # Errors
/// As [`Location::put`], when the object does not hold `bytes`.
fn put_landed(loc: &dyn Location, name: &str, bytes: &[u8], cond: Condition<'_>) -> std::result::Result<(), PutError> {
    match loc.put(name, bytes, cond) {
        Ok(_) => Ok(()),
        Err(_) if landed(loc, name, bytes) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the object `name` now holds `bytes` (a write whose answer was
/// lost may have landed).
fn landed(loc: &dyn Location, name: &str, bytes: &[u8]) -> bool {
    loc.open(name)
        .and_then(|o| if o.len() == bytes.len() as u64 { o.read_vec(0, bytes.len()) } else { Ok(Vec::new()) })
        .is_ok_and(|b| b == bytes)
}

/// A sparse frame's index: the chunk objects it names (ids; negative
/// entries are special chunks), its offsets, and its sections.
fn index_offsets(url: &str, index: &[u8]) -> Result<(Vec<i64>, Vec<i64>, frame::Sections)> {
    let bad = || Error::InvalidFormat(format!("'{url}': the index of the sparse frame is not sound"));
    let len = index.len() as u64;
    let head = index.get(..frame::HEADER_MINLEN).ok_or_else(bad)?;
    let tail = index.get(index.len().saturating_sub(frame::TRAILER_TAIL)..).ok_or_else(bad)?;
    let s = frame::Sections::read(head, tail, len).ok_or_else(bad)?;
    let chunk = index.get(s.header_len as usize..s.trailer_at as usize).ok_or_else(bad)?;
    let offsets = if chunk.is_empty() {
        Vec::new()
    } else {
        let n = blosc2::chunk_info(chunk)?.nbytes / 8;
        blosc2::inflate(chunk, 0, n)?
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect()
    };
    Ok((offsets.clone(), offsets, s))
}

/// `index` with its offsets replaced by `offsets` (compressed as c-blosc2
/// does) and its header's length updated; the trailer follows unchanged.
fn rebuild_index(index: &[u8], s: &frame::Sections, offsets: &[i64]) -> Result<Vec<u8>> {
    let chunk = blosc2::compress_offsets(offsets)?;
    let mut out = Vec::with_capacity(index.len() + 64);
    out.extend_from_slice(&index[..s.header_len as usize]);
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&index[s.trailer_at as usize..]);
    let len = out.len() as u64;
    frame::patch_header(&mut out[..s.header_len as usize], len, s.nbytes, s.cbytes);
    Ok(out)
}

/// What is at a versioned location's array name now, to be replaced by a
/// new array: nothing, or an array of the same layout whose frame object
/// is of this generation and whose sparse index names these chunk ids.
struct Present {
    generation: Option<Generation>,
    chunk_ids: Vec<i64>,
}

impl Present {
    /// Look at `site`: refuse what a new array may not replace (something
    /// that is not an array of `site`'s layout).
    fn look(site: &FrameSite) -> Result<Present> {
        let url = site.url();
        let loc = &*site.location;
        let frame_name = frame::frame_object(site);
        let io = |e: std::io::Error| Error::io("looking at", Some(std::path::Path::new(&url)), &e);
        let other = if site.contiguous { location::join(&site.key, frame::SPARSE_INDEX) } else { site.key.clone() };
        let refuse =
            |what: &str| Err(Error::storage(Some(&url), format!("'{url}' holds {what}; refusing to overwrite it")));
        // Whether an object is at each name: both at once, one round (a
        // prefix, on an object store, is no object).
        let object = |name: &str| match loc.open_reading(name, super::frame_check::REMOTE_WINDOW) {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        };
        let (theirs, ours) = std::thread::scope(|s| {
            let theirs = s.spawn(|| object(&other));
            let ours = object(&frame_name);
            (
                theirs.join().unwrap_or_else(|_| Err(Error::storage(Some(&url), "the look at what is there failed"))),
                ours,
            )
        });
        match theirs {
            Ok(Some(_)) => return refuse("an array of the other layout (contiguous or sparse)"),
            Ok(None) => {}
            // A server may fail a GET of a sparse frame's prefix in its own
            // way (s3s-fs answers 500: a directory on its disk).
            Err(_) if matches!(ours, Ok(Some(_))) && !site.contiguous => {}
            Err(e) => return Err(e),
        }
        let Some((o, mut head)) = ours? else {
            return Ok(Present { generation: None, chunk_ids: Vec::new() });
        };
        if !frame::is_frame_start(&head) || head.len() < frame::HEADER_MINLEN {
            return refuse("something that is not a Blosc2 frame");
        }
        let chunk_ids = if site.contiguous {
            Vec::new()
        } else {
            if (head.len() as u64) < o.len() {
                head = o.read_vec(0, o.len() as usize).map_err(io)?;
            }
            index_offsets(&url, &head)?.1.into_iter().filter(|&i| i >= 0).collect()
        };
        Ok(Present { generation: Some(o.generation().clone()), chunk_ids })
    }
}

/// The site of an array to be made at `url`, a versioned location that
/// can be written.
fn writable_site(at: &ResolvedUrl, contiguous: bool, what: &str) -> Result<FrameSite> {
    let site = at.frame_site(contiguous, None);
    if site.location.read_only() {
        return Err(unchangeable(at.url(), what));
    }
    Ok(site)
}

/// [`Store::create`] at `url`, a versioned location: the array `make`
/// builds, published in place of what is there ([`build_and_publish`]), then opened.
///
/// # Errors
/// As [`build_and_publish`] and [`Store::open`].
pub(super) fn create(at: &ResolvedUrl, contiguous: bool, make: impl FnOnce(&Storage) -> Result<()>) -> Result<Store> {
    let site = writable_site(at, contiguous, "create an array at")?;
    build_and_publish(&site, None, make)?;
    Store::open_versioned(at)
}

/// [`Store::save`] to `url`, a versioned location: the copy `make` writes,
/// published in place of what is there.
///
/// # Errors
/// As [`build_and_publish`].
pub(super) fn save(at: &ResolvedUrl, contiguous: bool, make: impl FnOnce(&Storage) -> Result<()>) -> Result<()> {
    let site = writable_site(at, contiguous, "save an array to")?;
    build_and_publish(&site, None, make)
}

/// [`Store::remove`] at `url`, a versioned location: the array there, of
/// either layout ([`remove`]); nothing there is not an error.
///
/// # Errors
/// As [`remove`].
pub(super) fn remove_at(at: &ResolvedUrl) -> Result<()> {
    let contiguous = {
        let site = writable_site(at, true, "remove")?;
        let io = |e: std::io::Error| Error::io("looking at", Some(std::path::Path::new(at.url())), &e);
        site.location.stat(&site.key).map_err(io)?.is_some_and(|e| e.kind == location::Kind::Object)
    };
    remove(&at.frame_site(contiguous, None))
}

/// Make a new array for the versioned location `site` and publish it
/// there: `make` writes it at a local temporary path it is given (a frame
/// file or a sparse frame's directory, as `site` says), then [`upload`]
/// publishes it in place of what is there, if that is still `expected`
/// (`None`: what [`Present::look`] finds now). Nothing is visible at
/// `site` before the frame object is replaced; the temporary copy goes.
///
/// # Errors
/// As `make`; [`Error::Conflict`] if what is there changed; as the storage fails.
fn build_and_publish(
    site: &FrameSite,
    expected: Option<Generation>,
    make: impl FnOnce(&Storage) -> Result<()>,
) -> Result<()> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("caterva-rs-publish-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("making", Some(&dir), &e))?;
    let local = dir.join(if site.contiguous { "a.b2frame" } else { "a.b2nd" });
    // The server's check (or the lease) and a look at what is there, in
    // the requests' time, while the array is built here.
    // Where nothing is there yet, a sparse array's chunk objects are put
    // as its chunk files appear (see [`Early`]).
    let built = std::sync::atomic::AtomicBool::new(false);
    let (admitted, made) = std::thread::scope(|s| {
        let admitted = s.spawn(|| {
            // (The look is a read: it need not wait for the check.)
            let (permit, present) = std::thread::scope(|s| {
                let look = s.spawn(|| Present::look(site));
                let permit = super::writers::admit(site);
                let present = look
                    .join()
                    .unwrap_or_else(|_| Err(Error::storage(Some(&site.url()), "the look at what is there failed")));
                (permit, present)
            });
            let (permit, present) = (permit?, present?);
            let early = if !site.contiguous && present.generation.is_none() && expected.is_none() {
                Early::put(site, &local, &built)
            } else {
                Early::default()
            };
            Ok((permit, present, early))
        });
        let made = make(&Storage { contiguous: site.contiguous, urlpath: Some(local.to_string_lossy().into_owned()) });
        built.store(true, std::sync::atomic::Ordering::Release);
        let admitted = admitted
            .join()
            .unwrap_or_else(|_| Err(Error::storage(Some(&site.url()), "the look at what is there failed")));
        (admitted, made)
    });
    let published = admitted.and_then(|(permit, mut present, early)| {
        let done = if expected.is_some() && present.generation != expected {
            Err(conflict(&site.url()))
        } else {
            made.and_then(|()| upload(site, &permit, &local, &mut present, &early))
        };
        if done.is_err() {
            // (upload removed those it kept; these may be left.)
            remove_objects(&*site.location, &early.names());
        }
        done
    });
    let _ = std::fs::remove_dir_all(&dir);
    published
}

/// The chunk objects of a new sparse array put while it is still being
/// built here, so that the requests overlap the compression: each chunk
/// file of the local build, as it appears, is put under its own name where
/// nothing is (create-if-absent; a name taken is left to [`upload`], which
/// draws another). A chunk file may still be written, or written again,
/// after it was put: [`upload`] compares each with what was put (its
/// length and XXH3) and puts it again where they differ, and removes the
/// objects of chunk files the finished array does not name. Nothing is put
/// before the server was admitted ([`super::writers::admit`]) and seen to
/// hold no array there.
#[derive(Default)]
struct Early {
    /// Chunk number -> (object name, length and XXH3 of the bytes put).
    put: std::collections::HashMap<i64, (String, (usize, u64))>,
}

impl Early {
    /// Put the chunk files under `local` (a sparse frame's directory) as
    /// they appear, [`PUTTERS`] at a time, until `built` is set. A failed
    /// put is left to [`upload`].
    fn put(site: &FrameSite, local: &std::path::Path, built: &std::sync::atomic::AtomicBool) -> Early {
        use std::sync::atomic::Ordering;
        use std::sync::{Mutex, PoisonError};
        struct Queue {
            seen: std::collections::HashSet<i64>,
            todo: std::collections::VecDeque<(i64, std::path::PathBuf)>,
            /// When the directory was last listed, and how long that took.
            listed: Option<(std::time::Instant, std::time::Duration)>,
        }
        let queue = Mutex::new(Queue { seen: Default::default(), todo: Default::default(), listed: None });
        let put = Mutex::new(std::collections::HashMap::new());
        let loc = &*site.location;
        // The array is built beside `local` (a directory whose name begins
        // with its own) and renamed to it once complete.
        let (parent, stem) = (local.parent().unwrap_or(local), local.file_name().unwrap_or_default().to_owned());
        let building = || -> Vec<std::path::PathBuf> {
            std::fs::read_dir(parent)
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.file_name().as_encoded_bytes().starts_with(stem.as_encoded_bytes()))
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default()
        };
        let next = |q: &mut Queue| -> Option<(i64, std::path::PathBuf)> {
            if q.todo.is_empty() {
                // Listed again after 2 ms, or ten times the last listing's
                // time (a directory of thousands of chunk files).
                let due = match q.listed {
                    None => true,
                    Some((at, took)) => at.elapsed() >= (took * 10).max(MS2),
                };
                if due {
                    let start = std::time::Instant::now();
                    for dir in building() {
                        let Ok(d) = std::fs::read_dir(&dir) else { continue };
                        for e in d.flatten() {
                            let Some(id) = frame::chunk_id(&e.file_name().to_string_lossy()) else { continue };
                            if q.seen.insert(id) {
                                q.todo.push_back((id, e.path()));
                            }
                        }
                    }
                    q.listed = Some((start, start.elapsed()));
                }
            }
            q.todo.pop_front()
        };
        const MS2: std::time::Duration = std::time::Duration::from_millis(2);
        const MS1: std::time::Duration = std::time::Duration::from_millis(1);
        let work = || loop {
            let id = next(&mut queue.lock().unwrap_or_else(PoisonError::into_inner));
            let Some((id, path)) = id else {
                if built.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(MS2);
                continue;
            };
            let Ok(bytes) = std::fs::read(&path) else { continue };
            // A chunk file still being written (shorter than the chunk its
            // header says, or without a header yet) is looked at again
            // later: put half-written, it would be put again at the end,
            // one request after another.
            if !whole_chunk(&bytes) {
                if !built.load(Ordering::Acquire) {
                    std::thread::sleep(MS1);
                    queue.lock().unwrap_or_else(PoisonError::into_inner).todo.push_back((id, path));
                }
                continue;
            }
            let name = location::join(&site.key, &frame::chunk_name(id));
            if put_landed(loc, &name, &bytes, Condition::IfAbsent).is_ok() {
                let mark = (bytes.len(), xxhash_rust::xxh3::xxh3_64(&bytes));
                put.lock().unwrap_or_else(PoisonError::into_inner).insert(id, (name, mark));
            }
        };
        std::thread::scope(|s| {
            for _ in 1..PUTTERS {
                s.spawn(work);
            }
            work();
        });
        Early { put: put.into_inner().unwrap_or_else(PoisonError::into_inner) }
    }

    /// The objects put.
    fn names(&self) -> Vec<String> {
        self.put.values().map(|(name, _)| name.clone()).collect()
    }
}

/// Whether `bytes` (a chunk file's) hold a whole chunk: as many bytes as
/// its header says it takes.
fn whole_chunk(bytes: &[u8]) -> bool {
    let pos = crate::blosc2::chunk_header::POS_CBYTES;
    bytes.get(pos..pos + 4).is_some_and(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize == bytes.len())
}

/// Publish the array at the local path `local` (of `site`'s layout) at
/// `site` in place of `present`: a contiguous frame as one object, a sparse
/// frame's chunk files as new chunk objects (under their own names where
/// nothing is there yet, fresh ones otherwise, never written over) and its
/// index last. The frame object is replaced only if it is still what
/// `present` saw; the chunk objects of the array it replaced go after.
fn upload(
    site: &FrameSite,
    permit: &Permit,
    local: &std::path::Path,
    present: &mut Present,
    early: &Early,
) -> Result<()> {
    let url = site.url();
    let loc = &*site.location;
    let frame_name = frame::frame_object(site);
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| Error::io("reading", Some(p), &e));
    let cond = match &present.generation {
        Some(g) => Condition::IfGeneration(g),
        None => Condition::IfAbsent,
    };
    let put_err = |name: &str, e: PutError| match e {
        PutError::Conflict => conflict(&url),
        PutError::Io(e) => Error::io("writing", Some(std::path::Path::new(&loc.url(name))), &e),
    };
    if site.contiguous {
        let bytes = read(local)?;
        permit.before_publish()?;
        put_landed(loc, &frame_name, &bytes, cond).map_err(|e| put_err(&frame_name, e))?;
        return permit.after_publish(site, &frame_name, &bytes);
    }
    let index = read(&local.join(frame::SPARSE_INDEX))?;
    let (_, mut offsets, sections) = index_offsets(&url, &index)?;
    let mut ours: Vec<i64> = offsets.iter().copied().filter(|&o| o >= 0).collect();
    ours.sort_unstable();
    ours.dedup();
    // Their own names if nothing is there; an array being replaced keeps
    // its objects until the new index is in place.
    let fresh = present.generation.is_some();
    let bytes_of = |id: i64| read(&local.join(frame::chunk_name(id))).map(std::borrow::Cow::<[u8]>::Owned);
    // Those put while the array was built ([`Early`]): kept if their file
    // is what was put, put again if not; those the array does not name go.
    let mut kept = Vec::new();
    let settled = (|| -> Result<Vec<i64>> {
        let mut left = Vec::new();
        for id in ours {
            let Some((name, mark)) = early.put.get(&id) else {
                left.push(id);
                continue;
            };
            let bytes = bytes_of(id)?;
            if (bytes.len(), xxhash_rust::xxh3::xxh3_64(&bytes)) != *mark {
                loc.put(name, &bytes, Condition::Always).map_err(|e| put_err(name, e))?;
            }
            kept.push(name.clone());
        }
        Ok(left)
    })();
    let named: std::collections::HashSet<&String> = kept.iter().collect();
    let unnamed: Vec<String> = early.names().into_iter().filter(|n| !named.contains(n)).collect();
    remove_objects(loc, &unnamed);
    let ours = settled?;
    let chunks: Vec<(i64, Option<i64>)> = ours.into_iter().map(|id| (id, (!fresh).then_some(id))).collect();
    let taken = present.chunk_ids.iter().chain(&offsets).copied();
    let ids = FreshIds::new(cblosc2_bound(sections.cbytes), taken);
    let (mut made, renamed) = put_chunks(site, &chunks, ids, &bytes_of, &put_err)?;
    made.extend(kept);
    let index = if renamed.is_empty() {
        index
    } else {
        offsets.iter_mut().for_each(|o| *o = renamed.get(o).copied().unwrap_or(*o));
        match rebuild_index(&index, &sections, &offsets) {
            Ok(i) => i,
            Err(e) => {
                remove_objects(loc, &made);
                return Err(e);
            }
        }
    };
    let put = permit
        .before_publish()
        .and_then(|()| put_landed(loc, &frame_name, &index, cond).map_err(|e| put_err(&frame_name, e)));
    if let Err(e) = put {
        remove_objects(loc, &made);
        return Err(e);
    }
    permit.after_publish(site, &frame_name, &index)?;
    let now: std::collections::HashSet<i64> = offsets.iter().copied().collect();
    for id in present.chunk_ids.drain(..).filter(|id| !now.contains(id)) {
        let _ = loc.remove(&location::join(&site.key, &frame::chunk_name(id)), None);
    }
    Ok(())
}

/// Remove the array at `site`, a versioned location: its frame object
/// first (the array is gone at once for every reader that opens it), then a
/// sparse frame's chunk objects. Nothing there is not an error.
///
/// # Errors
/// As [`Present::look`] (something that is not an array is not removed);
/// as the storage fails.
fn remove(site: &FrameSite) -> Result<()> {
    let url = site.url();
    let loc = &*site.location;
    let present = Present::look(site)?;
    let Some(generation) = &present.generation else { return Ok(()) };
    let permit = super::writers::admit(site)?;
    permit.before_publish()?;
    let frame_name = frame::frame_object(site);
    match loc.remove(&frame_name, Some(generation)) {
        Ok(()) => {}
        Err(PutError::Conflict) => return Err(conflict(&url)),
        Err(PutError::Io(e)) => return Err(Error::io("removing", Some(std::path::Path::new(&url)), &e)),
    }
    for id in present.chunk_ids {
        let _ = loc.remove(&location::join(&site.key, &frame::chunk_name(id)), None);
    }
    Ok(())
}

/// Chunk object numbers for new chunk objects of a sparse frame.
///
/// c-blosc2 3.x (python-blosc2 4.x) refuses to open a sparse frame whose
/// index names a chunk object numbered above the header's `cbytes` less 32
/// (`validate_offsets_chunk` in its `frame.c`: "Offset for chunk N is out
/// of bounds"; it checks a sparse frame's numbers as it checks a
/// contiguous frame's byte offsets); c-blosc2 2.x takes any number. Its
/// own writers number chunk objects densely (the largest plus one), which
/// that bound always admits. So new numbers are drawn at random in
/// `0..=bound`, that bound ([`cblosc2_bound`]), never one the index or
/// this write already names: writers racing on one array rarely try the
/// same (a name taken by another is refused by the create-if-absent put
/// and another drawn), and a name a superseded chunk had is seldom reused
/// (a reader of the old version would find it holding other bytes, which
/// a checksummed array catches). Numbers come from the bound's lower half
/// first, and [`publish`] copies a kept chunk object whose number a
/// shrinking `cbytes` left past the bound to a fresh one. The room is at least `cbytes` less 31
/// names for the chunks' few, since every stored chunk takes more than 32
/// bytes.
struct FreshIds {
    state: u64,
    /// The largest number c-blosc2 accepts in this frame.
    bound: i64,
    /// Numbers named already (by the index, or drawn).
    taken: std::collections::HashSet<i64>,
}

/// The largest chunk object number c-blosc2 3.x accepts in a sparse frame
/// whose header says `cbytes` (see [`FreshIds`]).
fn cblosc2_bound(cbytes: i64) -> i64 {
    cbytes.saturating_sub(crate::blosc2::chunk_header::HEADER_LEN as i64)
}

impl FreshIds {
    /// Numbers in `0..=bound` other than those of `taken`.
    fn new(bound: i64, taken: impl IntoIterator<Item = i64>) -> Self {
        let taken = taken.into_iter().filter(|&i| i >= 0).collect();
        FreshIds { state: super::writers::fresh_token(), bound, taken }
    }

    /// splitmix64
    fn random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number not taken yet (now taken); `None` when none is left.
    fn next(&mut self) -> Option<i64> {
        let room = u64::try_from(self.bound).ok()?.checked_add(1)?;
        if self.taken.len() as u64 >= room {
            return None;
        }
        // From the lower half first: a frame whose `cbytes` shrinks later
        // then seldom leaves a number past its bound.
        let low = room / 2 + 1;
        for _ in 0..64 {
            let id = (self.random() % low) as i64;
            if self.taken.insert(id) {
                return Some(id);
            }
        }
        // Crowded: the first free number from a random start.
        let start = self.random() % room;
        (0..room).map(|k| ((start + k) % room) as i64).find(|&id| self.taken.insert(id))
    }
}

/// Remove the chunk objects of the sparse frame at `site` that its index
/// (as it is now) does not name and that are at least `older_than` old:
/// what writers killed before publishing left. A writer's new chunk objects
/// are named by its index soon after they are made, so `older_than` must
/// be longer than any write takes (an hour is safe).
///
/// # Errors
/// As the storage fails; [`Error::InvalidFormat`] for an unsound index.
fn sweep(site: &FrameSite, older_than: std::time::Duration) -> Result<Vec<String>> {
    let url = site.url();
    let loc = &*site.location;
    let index_name = frame::frame_object(site);
    let io = |e: std::io::Error| Error::io("sweeping", Some(std::path::Path::new(&url)), &e);
    let index = loc.open(&index_name).map_err(io)?;
    let bytes = index.read_vec(0, index.len() as usize).map_err(io)?;
    let (_, offsets, _) = index_offsets(&url, &bytes)?;
    let named: std::collections::HashSet<i64> = offsets.into_iter().filter(|&o| o >= 0).collect();
    let now = std::time::SystemTime::now();
    let mut removed = Vec::new();
    for e in loc.list(&site.key).map_err(io)? {
        let Some(id) = e.name.rsplit('/').next().and_then(frame::chunk_id) else { continue };
        let old = e.modified.and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age >= older_than);
        if !named.contains(&id) && old && loc.remove(&e.name, Some(&e.generation)).is_ok() {
            removed.push(e.name);
        }
    }
    Ok(removed)
}

/// Arrays on the in-memory object-store model, reached by `mem://` URLs
/// through every layer (the array API, the store, the frame check,
/// c-blosc2 through a stand-in, the direct chunk reader): what a remote
/// backend gets by implementing the seam and a scheme in `locate`.
#[cfg(test)]
#[path = "tests/versioned.rs"]
mod tests;
