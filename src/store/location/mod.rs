//! Where an array's bytes live: the seam between the store and its storage.
//!
//! A [`Location`] is a namespace of named objects (a directory of files, a
//! bucket's prefix, a web server's path); an array is a key in it: one
//! object for a contiguous frame (`x.b2frame`), a prefix holding the index
//! and one object per chunk for a sparse frame (`x.caterva/chunks.b2frame`,
//! `x.caterva/00000000.chunk`). Names use `/` and are relative to the
//! location; [`check_name`] refuses `..`, empty segments and absolute names.
//!
//! What every backend gives:
//!
//! - **Positioned reads of byte ranges** of an opened [`Object`]: many in
//!   one call ([`Object::read_ranges`]), which a remote backend coalesces
//!   and runs concurrently, and a local one serves with `pread`. An opened
//!   object is one version: its [`Generation`] and length are those it had
//!   when opened.
//! - **Length and generation** without reading ([`Location::stat`]): what
//!   changes whenever the object changes: (device, inode, modification
//!   time, length) for a local file, an entity tag remotely.
//! - **Listing** the objects directly under a prefix ([`Location::list`]).
//! - **Conditional writes** of whole objects ([`Location::put`]): create if
//!   absent, replace if the generation is still the one read, or
//!   unconditionally; a write is all or nothing (readers never see half of
//!   it). Two writers racing on one condition: exactly one wins, the other
//!   gets [`PutError::Conflict`] and may re-read and retry.
//! - **Removal**, unconditional or if the generation is still the one read.
//!
//! How a change of an array is made durable depends on what the storage
//! can do, so each location names its [`Protocol`]: local files and
//! directories use today's undo journal, lock file and write-beside-then-
//! rename ([`Protocol::Journaled`], `store/journal/`, `store/lock.rs`,
//! `store/paths.rs`), which rely on in-place writes, `flock` and `rename`;
//! storage without them (object stores) replaces whole objects under
//! conditions ([`Protocol::Versioned`], `store/versioned.rs`, which the
//! store's entry points choose by the protocol).
//!
//! # Adding a backend
//! A module beside [`local`] implementing [`Location`] and [`Object`], a
//! scheme in [`locate`], and a run of [`conformance`] over it in its tests.
//! A location that is not a local path ([`Location::local_path`] is `None`)
//! reaches c-blosc2 through a stand-in (`store/blosc_io.rs`); the in-memory
//! model ([`memory`], `mem://` URLs in test builds) is opened through every
//! layer that way by `store/versioned.rs`'s tests.

#[cfg(feature = "remote")]
mod aws_files;
pub(crate) mod local;
#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod options;
#[cfg(feature = "remote")]
pub(crate) mod read_cache;
#[cfg(feature = "remote")]
pub(crate) mod remote;

#[cfg(test)]
pub(crate) mod conformance;

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::error::{Error, Result};

/// What an object was when it was read: it differs after any change.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Generation {
    /// A local file: its device, inode, modification and status-change
    /// times (nanoseconds) and length.
    Local { dev: u64, ino: u64, mtime_ns: i128, ctime_ns: i128, len: u64 },
    /// An opaque tag the storage gives each version (an HTTP entity tag).
    /// Only remote backends (feature `remote`) and the test model make one.
    #[cfg_attr(not(any(test, feature = "remote")), allow(dead_code))]
    Tag(String),
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Generation::Local { dev, ino, mtime_ns, len, .. } => {
                write!(f, "file {dev}:{ino}, {len} bytes, modified at {mtime_ns} ns")
            }
            Generation::Tag(t) => write!(f, "version {t}"),
        }
    }
}

/// One version of an object as the server described it: what names it in
/// a read cache (`read_cache.rs`: its entity tag, modification time in ns
/// since the epoch, and length) and what tells whether it is still the one
/// there (its name and [`Generation`]). A sparse frame's index version
/// stamps the chunk objects read under it ([`check_named_by`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) text: String,
    pub(crate) modified_ns: i128,
    /// The object's name in its location.
    pub(crate) name: String,
    pub(crate) generation: Generation,
}

impl Stamp {
    #[cfg_attr(not(any(test, feature = "remote")), allow(dead_code))]
    pub(crate) fn new(name: &str, generation: Generation, etag: Option<&str>, modified_ns: i128, len: u64) -> Stamp {
        Stamp {
            text: format!("{}|{modified_ns}|{len}", etag.unwrap_or("")),
            modified_ns,
            name: name.to_owned(),
            generation,
        }
    }
}

/// Check that the chunk object `object`, last modified at `modified_ns`
/// (where the server says), is the one the index version `by` named, and
/// not a later object under the same name.
///
/// A sparse frame's chunk objects are never written over, but the name of
/// one that a newer version no longer names is removed and may be drawn
/// again for a new chunk (`store/versioned.rs`: the numbers must stay
/// below the frame's `cbytes` for Blosc2 readers, so they are few). A
/// reader still on the older version would then read another chunk's
/// bytes. Every object the version named was made before its index was
/// put, so one modified before the index is it; one modified at the same
/// time or later (servers give seconds) is it only while that version is
/// still the one there, which one request tells. Otherwise it is reported
/// as gone ([`io::ErrorKind::NotFound`]): the store then finds the version
/// replaced and says [`Error::Changed`].
///
/// `current` asks the storage for the generation of the object at
/// `by.name` now (`None`: nothing there).
///
/// # Errors
/// [`io::ErrorKind::NotFound`] as above; as `current` fails.
pub(crate) fn check_named_by(
    by: &Stamp,
    object: &str,
    modified_ns: Option<i128>,
    current: impl FnOnce(&str) -> io::Result<Option<Generation>>,
) -> io::Result<()> {
    match modified_ns {
        // What the storage does not date cannot be told apart.
        None => Ok(()),
        Some(m) if m < by.modified_ns => Ok(()),
        Some(_) if current(&by.name)?.as_ref() == Some(&by.generation) => Ok(()),
        Some(_) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "'{object}' is newer than the version of '{}' that names it, which has been replaced since: \
                 the object it named was removed and its name used again",
                by.name
            ),
        )),
    }
}

/// What is at a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An object, readable with [`Location::open`].
    Object,
    /// A prefix of other names (a directory).
    Prefix,
    /// Something else (a device, a pipe, a socket): never read.
    Other,
}

/// An object's or prefix's name, kind, length and generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its name in the location (with the listed prefix).
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// Bytes of an object; 0 for the rest.
    pub(crate) len: u64,
    pub(crate) generation: Generation,
    /// When an object was last written, where the storage says.
    pub(crate) modified: Option<std::time::SystemTime>,
}

/// When a [`Location::put`] may happen.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Condition<'g> {
    /// Whatever is there. (No write of an array is unconditional: the
    /// conformance suite and tests' uploads use it.)
    #[cfg_attr(not(test), allow(dead_code))]
    Always,
    /// Only if nothing is at the name.
    IfAbsent,
    /// Only if the object at the name is still of this generation.
    IfGeneration(&'g Generation),
}

impl Condition<'_> {
    /// Whether it holds where the object's generation is `now` (`None`: nothing there).
    pub(crate) fn holds(&self, now: Option<&Generation>) -> bool {
        match self {
            Condition::Always => true,
            Condition::IfAbsent => now.is_none(),
            Condition::IfGeneration(g) => now == Some(*g),
        }
    }
}

/// Why a conditional change did not happen.
#[derive(Debug)]
pub(crate) enum PutError {
    /// The condition did not hold: something is there (create-if-absent),
    /// or the object changed or went since it was read.
    Conflict,
    /// The storage failed; nothing changed that a reader can see.
    Io(io::Error),
}

impl From<io::Error> for PutError {
    fn from(e: io::Error) -> Self {
        PutError::Io(e)
    }
}

impl fmt::Display for PutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PutError::Conflict => f.write_str("it was changed by another writer"),
            PutError::Io(e) => e.fmt(f),
        }
    }
}

/// How changes of an array are made durable at a location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// In-place writes under an undo journal and a lock file; new arrays
    /// built beside their name and renamed over it (local file systems).
    Journaled,
    /// Whole objects replaced under conditions on their generation; never
    /// written in place (object stores).
    Versioned,
}

/// One read of [`Object::read_ranges`]: fill `buf` from byte `at`.
#[derive(Debug)]
pub(crate) struct Range<'b> {
    pub(crate) at: u64,
    pub(crate) buf: &'b mut [u8],
}

/// An opened object: one version of it, read by positioned byte ranges.
pub(crate) trait Object: Send + Sync + fmt::Debug {
    /// Its bytes (when it was opened).
    fn len(&self) -> u64;

    /// Its generation (when it was opened).
    fn generation(&self) -> &Generation;

    /// This version as the server described it, where it did: the chunk
    /// objects a sparse frame's index names are read (and cached) as of
    /// the index's version ([`Location::open_immutable`]).
    fn stamp(&self) -> Option<&Stamp> {
        None
    }

    /// When this version was made (ns since the epoch), where the storage
    /// says and it was asked when the object was opened.
    fn modified_ns(&self) -> Option<i128> {
        None
    }

    /// Fill every range's buffer from its position. A range that runs
    /// past the object's end fails ([`io::ErrorKind::UnexpectedEof`]) and
    /// the buffers' contents are then unspecified.
    ///
    /// # Errors
    /// As the storage fails.
    fn read_ranges(&self, ranges: &mut [Range<'_>]) -> io::Result<()>;

    /// Fill `buf` from byte `at`.
    ///
    /// # Errors
    /// As [`Object::read_ranges`].
    fn read_at(&self, at: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read_ranges(&mut [Range { at, buf }])
    }

    /// Up to `buf.len()` bytes from `at`, fewer at the object's end: how
    /// many were read.
    ///
    /// # Errors
    /// As [`Object::read_ranges`].
    fn read_upto(&self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.len().saturating_sub(at)).map_or(buf.len(), |left| left.min(buf.len()));
        self.read_at(at, &mut buf[..n])?;
        Ok(n)
    }

    /// Its length now: [`Object::len`] unless the storage changes objects
    /// in place ([`Protocol::Journaled`]), where the file may have grown or
    /// shrunk since it was opened.
    ///
    /// # Errors
    /// As the storage fails.
    fn len_now(&self) -> io::Result<u64> {
        Ok(self.len())
    }

    /// `n` bytes from `at`, in a vector allocated fallibly.
    ///
    /// # Errors
    /// As [`Object::read_ranges`]; [`io::ErrorKind::OutOfMemory`] when no
    /// buffer of `n` bytes can be had.
    fn read_vec(&self, at: u64, n: usize) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(n).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        buf.resize(n, 0);
        self.read_at(at, &mut buf)?;
        Ok(buf)
    }
}

/// A namespace of objects: where arrays live.
pub(crate) trait Location: Send + Sync + fmt::Debug {
    /// How an object's name is spelt for users and messages (a path or a URL).
    fn url(&self, name: &str) -> String;

    /// How changes are made durable here.
    fn protocol(&self) -> Protocol;

    /// The server and bucket (or file system) this location is on, as
    /// users name it: what holds or fails the same write conditions for
    /// every location on it (`store/writers.rs` checks them once per
    /// process for each).
    fn server(&self) -> String {
        self.url("")
    }

    /// Whether nothing can be written here (a web server).
    fn read_only(&self) -> bool {
        false
    }

    /// The path of `name` on this machine's file system, for storage the
    /// operating system reaches (c-blosc2 looks at such paths itself before
    /// it opens them); `None` for storage reached otherwise, whose frames
    /// c-blosc2 is given through a stand-in path (`store/blosc_io.rs`).
    fn local_path(&self, _name: &str) -> Option<std::path::PathBuf> {
        None
    }

    /// Open the object at `name` for reading.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if no object is there (a prefix may be:
    /// on an object store, telling a prefix from nothing takes a listing);
    /// [`io::ErrorKind::InvalidInput`] if what is there is known not to be
    /// an object (a directory, a device); as the storage fails.
    fn open(&self, name: &str) -> io::Result<Arc<dyn Object>>;

    /// [`Location::open`], and the object's first `n` bytes (all of it if
    /// shorter): one request where the storage can (a ranged `GET` tells
    /// the length and entity tag a `HEAD` would).
    ///
    /// # Errors
    /// As [`Location::open`] and [`Object::read_ranges`].
    fn open_reading(&self, name: &str, n: usize) -> io::Result<(Arc<dyn Object>, Vec<u8>)> {
        let o = self.open(name)?;
        let n = usize::try_from(o.len()).map_or(n, |len| len.min(n));
        let head = o.read_vec(0, n)?;
        Ok((o, head))
    }

    /// Open `name` for reading where it is known never to be written over
    /// once made (a sparse frame's chunk object at a versioned location):
    /// there is no version to pin, so a backend may skip asking for its
    /// length and generation and make no request before the first read.
    /// Such an object's [`Object::len`] may then be `u64::MAX` (unknown),
    /// and a read past its end fails rather than stopping short.
    ///
    /// `within` is the version of the object that names it (a sparse
    /// frame's index: [`Object::stamp`]): what is read is checked to be the
    /// object that version named ([`check_named_by`]: a name removed and
    /// used again reads as missing), and a read cache keeps its bytes as of
    /// that version.
    ///
    /// # Errors
    /// As [`Location::open`] (a backend that skips the request reports a
    /// missing object, or one made after `within`, at the first read).
    fn open_immutable(&self, name: &str, within: Option<&Stamp>) -> io::Result<Arc<dyn Object>> {
        open_named_by(self, name, within)
    }

    /// What is at `name`, if anything.
    ///
    /// # Errors
    /// As the storage fails.
    fn stat(&self, name: &str) -> io::Result<Option<Entry>>;

    /// What lies directly under `prefix` (`""`: the location's top), sorted
    /// by name; [`io::ErrorKind::NotFound`] if `prefix` is not a prefix.
    ///
    /// # Errors
    /// [`io::ErrorKind::Unsupported`] where nothing can be listed (a web
    /// server); as the storage fails.
    fn list(&self, prefix: &str) -> io::Result<Vec<Entry>>;

    /// The names directly under `prefix`, without it (`00000000.chunk`),
    /// unsorted: [`Location::list`] without what it costs to say more of
    /// each (a local file's metadata).
    ///
    /// # Errors
    /// As [`Location::list`].
    fn names(&self, prefix: &str) -> io::Result<Vec<String>> {
        let under = if prefix.is_empty() { String::new() } else { format!("{}/", prefix.trim_end_matches('/')) };
        let list = self.list(prefix)?;
        Ok(list.into_iter().map(|e| e.name.strip_prefix(&under).map(str::to_owned).unwrap_or(e.name)).collect())
    }

    /// Store `bytes` as the object `name` if `cond` holds, all or nothing;
    /// the new object's generation.
    ///
    /// # Errors
    /// [`PutError::Conflict`] if `cond` did not hold; [`PutError::Io`] if
    /// the storage failed (the object is then as it was).
    fn put(&self, name: &str, bytes: &[u8], cond: Condition<'_>) -> std::result::Result<Generation, PutError>;

    /// Start a put of `declared` bytes at `name`, send only `sent` (fewer)
    /// and drop the connection: a writer killed in the middle of a put.
    /// `Ok(false)` where this backend cannot make one (its puts are not
    /// sent as a stream it can cut, or only over TLS). The publish protocol
    /// needs such a put never to leave part of an object visible
    /// (`store/writers.rs` checks it).
    ///
    /// # Errors
    /// As the storage fails.
    fn put_cut_short(&self, _name: &str, _declared: usize, _sent: &[u8]) -> io::Result<bool> {
        Ok(false)
    }

    /// Remove the object `name`; with `expected`, only if it is still of
    /// that generation. Removing what is not there succeeds unless a
    /// generation was expected.
    ///
    /// # Errors
    /// [`PutError::Conflict`] if the object changed or went; [`PutError::Io`]
    /// if the storage failed.
    fn remove(&self, name: &str, expected: Option<&Generation>) -> std::result::Result<(), PutError>;
}

/// [`Location::open`] of `name`, a chunk object that the index version
/// `by` names: checked to be the object that version named
/// ([`check_named_by`]).
///
/// # Errors
/// As [`Location::open`] and [`check_named_by`].
pub(crate) fn open_named_by<L: Location + ?Sized>(
    loc: &L,
    name: &str,
    by: Option<&Stamp>,
) -> io::Result<Arc<dyn Object>> {
    let o = loc.open(name)?;
    if let Some(by) = by {
        check_named_by(by, &loc.url(name), o.modified_ns(), |index| Ok(loc.stat(index)?.map(|e| e.generation)))?;
    }
    Ok(o)
}

/// Refuse a name that could leave its location or name nothing: absolute,
/// empty, with an empty, `.` or `..` segment, or with a NUL byte.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`], naming the name.
pub(crate) fn check_name(name: &str) -> io::Result<()> {
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.contains('\0')
        || name.split('/').any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not an object name")));
    }
    Ok(())
}

/// `name` under `prefix` (`""`: the top).
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{}/{name}", prefix.trim_end_matches('/'))
    }
}

/// The location a urlpath names and the array's key in it: for a local
/// path, the directory holding it and its last component (c-blosc2's
/// `file:///` prefix dropped as c-blosc2 drops it).
///
/// # Errors
/// [`Error::InvalidStorage`] for a URL of a scheme no backend serves, or a
/// path with no last component (`/`, `..`).
pub(crate) fn locate(urlpath: &str) -> Result<(Arc<dyn Location>, String)> {
    if let Some((scheme, _)) = urlpath.split_once("://").filter(|(s, _)| is_scheme(s)) {
        #[cfg(test)]
        if scheme == "mem" {
            let (bucket, key) =
                memory::locate(urlpath).map_err(|e| Error::storage(Some(urlpath), format!("'{urlpath}': {e}")))?;
            return Ok((bucket, key));
        }
        #[cfg(feature = "remote")]
        if matches!(scheme, "s3" | "http" | "https" | "az" | "azure" | "gs" | "gcs") {
            let (remote, key) =
                remote::locate(urlpath).map_err(|e| Error::storage(Some(urlpath), format!("'{urlpath}': {e}")))?;
            return Ok((remote, key));
        }
        if scheme != "file" {
            return Err(Error::storage(
                Some(urlpath),
                format!("'{urlpath}': no storage backend serves '{scheme}://' URLs in this build"),
            ));
        }
    }
    let given = std::path::Path::new(urlpath.strip_prefix("file:///").unwrap_or(urlpath));
    // A path ending in `.` or `..` names a directory by the way to it: by its own name then.
    let resolved;
    let path = if given.file_name().is_some() && !urlpath.ends_with("/.") {
        given
    } else {
        resolved = std::fs::canonicalize(given)
            .map_err(|e| Error::storage(Some(urlpath), format!("cannot open '{urlpath}': {e}")))?;
        resolved.as_path()
    };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(Error::storage(Some(urlpath), format!("'{urlpath}' names no file or directory")));
    };
    Ok((Arc::new(local::Local::new(dir)), name.to_owned()))
}

/// An array's URL resolved once ([`ResolvedUrl::resolve`]): the location that
/// serves it and its key there. The store's entry points resolve the URL
/// they are given, and what they call takes this value, not the text.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedUrl {
    pub(crate) location: Arc<dyn Location>,
    pub(crate) key: String,
    /// The URL as it was given (messages name it so).
    given: String,
}

impl ResolvedUrl {
    /// Resolve `urlpath` (as [`locate`]).
    ///
    /// # Errors
    /// As [`locate`].
    pub(crate) fn resolve(urlpath: &str) -> Result<ResolvedUrl> {
        let (location, key) = locate(urlpath)?;
        Ok(ResolvedUrl { location, key, given: urlpath.to_owned() })
    }

    /// The array's site, laid out as `contiguous` says, its frame at byte
    /// `offset` of the object where one is given.
    pub(crate) fn frame_site(&self, contiguous: bool, offset: Option<u64>) -> FrameSite {
        FrameSite { location: self.location.clone(), key: self.key.clone(), contiguous, offset }
    }

    /// The URL as it was given.
    pub(crate) fn url(&self) -> &str {
        &self.given
    }

    /// How changes to arrays there are made safe.
    pub(crate) fn protocol(&self) -> Protocol {
        self.location.protocol()
    }
}

/// Where one array's frame lives: its location, its key there, its layout
/// and, for a frame inside a larger object, where the frame starts.
#[derive(Clone, Debug)]
pub(crate) struct FrameSite {
    pub(crate) location: Arc<dyn Location>,
    /// The frame object (contiguous) or the prefix of a sparse frame's index and chunks.
    pub(crate) key: String,
    pub(crate) contiguous: bool,
    /// For a frame inside a larger object: the byte where it starts.
    pub(crate) offset: Option<u64>,
}

impl FrameSite {
    /// The site of the array at `urlpath`.
    ///
    /// # Errors
    /// As [`locate`].
    pub(crate) fn new(urlpath: &str, contiguous: bool, offset: Option<u64>) -> Result<FrameSite> {
        Ok(ResolvedUrl::resolve(urlpath)?.frame_site(contiguous, offset))
    }

    /// Where the site is, without its layout.
    pub(crate) fn resolved_url(&self) -> ResolvedUrl {
        ResolvedUrl { location: self.location.clone(), key: self.key.clone(), given: self.url() }
    }

    /// How the array's name is spelt.
    pub(crate) fn url(&self) -> String {
        self.location.url(&self.key)
    }
}

/// Open the object `urlpath` names for reading, as c-blosc2's streams
/// do for every chunk they read: a local file without looking at it first
/// ([`local::LocalObject::open_lazy`]), anything else through its location.
///
/// # Errors
/// As [`locate`] and [`Location::open`].
pub(crate) fn open_stream(urlpath: &str) -> io::Result<Arc<dyn Object>> {
    if !urlpath.contains("://") || urlpath.starts_with("file://") {
        let path = std::path::Path::new(urlpath.strip_prefix("file:///").unwrap_or(urlpath));
        return Ok(Arc::new(local::LocalObject::open_lazy(path)?));
    }
    let (loc, key) = locate(urlpath).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    loc.open(&key)
}

/// Whether `s` is a URL scheme (RFC 3986: a letter, then letters, digits, `+-.`).
fn is_scheme(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|ch| ch.is_ascii_alphanumeric() || "+-.".contains(ch))
        && s.len() > 1
}

/// An object inside another (a frame at an offset of a larger file): bytes
/// `base..base + len` of `inner`, read as a whole object.
#[derive(Debug)]
pub(crate) struct Slice {
    inner: Arc<dyn Object>,
    base: u64,
    len: u64,
}

impl Slice {
    /// Bytes `base..base + len` of `inner`; `None` if they are not inside it.
    pub(crate) fn new(inner: Arc<dyn Object>, base: u64, len: u64) -> Option<Slice> {
        (base.checked_add(len)? <= inner.len()).then_some(Slice { inner, base, len })
    }
}

impl Object for Slice {
    fn len(&self) -> u64 {
        self.len
    }
    fn generation(&self) -> &Generation {
        self.inner.generation()
    }
    fn read_ranges(&self, ranges: &mut [Range<'_>]) -> io::Result<()> {
        for r in ranges.iter_mut() {
            let end = r.at.checked_add(r.buf.len() as u64).filter(|&e| e <= self.len);
            if end.is_none() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a read past the end of the frame"));
            }
            r.at += self.base;
        }
        let out = self.inner.read_ranges(ranges);
        for r in ranges.iter_mut() {
            r.at -= self.base;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside() {
        for bad in ["", "/a", "a//b", "a/./b", "../a", "a/..", "a\0b", "a/"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "a.b2frame", "x.caterva/chunks.b2frame", "a/b/c..d"] {
            check_name(good).unwrap();
        }
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("p/", "a"), "p/a");
    }

    #[test]
    fn locate_splits_paths_and_refuses_unknown_schemes() {
        let (loc, key) = locate("/tmp/x/a.b2frame").unwrap();
        assert_eq!(key, "a.b2frame");
        assert_eq!(loc.url(&key), "/tmp/x/a.b2frame");
        let (loc, key) = locate("a.b2frame").unwrap();
        assert_eq!(loc.url(&key), "a.b2frame");
        assert_eq!(loc.protocol(), Protocol::Journaled);
        let e = locate("ftp://bucket/a.b2frame").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidStorage, "{e}");
        assert!(e.to_string().contains("ftp://"), "{e}");
        assert!(locate("/").is_err());
        // `.` and `..` resolve to the directory they lead to.
        let here = std::env::current_dir().unwrap();
        let (loc, key) = locate(".").unwrap();
        assert_eq!(std::path::PathBuf::from(loc.url(&key)), here);
        let (loc, key) = locate("src/..").unwrap();
        assert_eq!(std::path::PathBuf::from(loc.url(&key)), here);
        // A colon in a local name is not a scheme.
        assert_eq!(locate("dir/a:b").unwrap().1, "a:b");
    }

    #[test]
    fn slices_read_inside_their_window_only() {
        let m = memory::Memory::default();
        m.put("f", b"0123456789", Condition::Always).unwrap();
        let s = Slice::new(m.open("f").unwrap(), 3, 4).unwrap();
        assert_eq!(s.read_vec(0, 4).unwrap(), b"3456");
        assert_eq!(s.read_upto(2, &mut [0; 8]).unwrap(), 2);
        assert_eq!(s.read_vec(1, 4).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert!(Slice::new(m.open("f").unwrap(), 8, 3).is_none());
    }
}
