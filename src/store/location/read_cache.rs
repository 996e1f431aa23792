//! A read cache of remote objects on this machine's disk, shared by every
//! handle and every process that names the same directory (fsspec's
//! `simplecache`, TensorStore's cache pool): repeated reads of an array on
//! an object store or web server are served from local files instead of the
//! network.
//!
//! Off unless asked for: the storage option `cache` (a directory; also
//! spelt `cache_storage`, fsspec's name) or the environment variable
//! `CATERVA_REMOTE_CACHE`, with `cache_size` / `CATERVA_REMOTE_CACHE_SIZE`
//! its budget (bytes, with an optional `K`, `M` or `G` suffix; 1 GiB by
//! default). `cache=off` turns it off under a prefix where the environment
//! turned it on.
//!
//! **What is cached.** Pages of [`PAGE`] bytes of one *version* of an
//! object, keyed by the object's URL and what names that version
//! ([`Stamp`]: its entity tag, modification time and length, as the
//! server gave them when the handle opened it). A newer version of the
//! object (another writer, another process, another machine) has another
//! tag and so other entries: a handle never reads a version other than the
//! one it opened, cached or not, and old versions' pages age out. A sparse
//! frame's chunk objects are never written over and are opened without a
//! request ([`super::Location::open_immutable`]): their pages are keyed by
//! the version of the index that names them, and a page is kept only if
//! the chunk object is not newer than that index version (a chunk number
//! reused after the index's version was replaced is not this version's
//! chunk: its bytes are read, as without a cache, and not kept).
//!
//! **Bounded.** Whoever adds a page past the budget removes the least
//! recently used pages (by modification time, which a hit renews) until
//! three quarters of it are used. Processes count what is there when they
//! first use the directory, and again when they evict.
//!
//! **Never a wrong byte.** Each page file holds a header (its key, page
//! number, length and XXH3 of its bytes) and is made beside its name and
//! renamed there, so readers see whole files; a file that does not check
//! (a torn write after a power loss, a stranger's file) is a miss and is
//! removed. Failing to write the cache (a full disk, no permission) only
//! loses the page: the read is served from the network.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use super::Stamp;
use crate::error::{Error, Result};

/// Bytes of an object per cache entry: a miss fetches the pages that
/// cover the bytes asked for.
pub(crate) const PAGE: u64 = 256 << 10;

/// The budget when none is set: 1 GiB.
pub(crate) const DEFAULT_BUDGET: u64 = 1 << 30;

const MAGIC: &[u8; 8] = b"CTVCPAG1";
/// Magic, key (16), page (8), the object's length (8), the page's length
/// (8), XXH3 of the page's bytes (8).
const HEADER: usize = 8 + 16 + 8 + 8 + 8 + 8;

/// Temporary files older than this are left by a process that died while
/// writing one: eviction removes them.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// A cache directory, one per process and directory.
#[derive(Debug)]
pub(crate) struct ReadCache {
    dir: PathBuf,
    budget: u64,
    /// Bytes in the directory as last counted, with those added since.
    bytes: AtomicU64,
    /// One eviction at a time in this process.
    evicting: Mutex<()>,
    /// Names of this process's temporary files.
    serial: AtomicU64,
    /// Locks of pages being fetched, by a hash of the page: threads of
    /// this process wanting one page fetch it once ([`Scope::lock`]).
    fetching: Vec<Mutex<()>>,
}

/// Stripes of [`ReadCache::fetching`].
const STRIPES: usize = 256;

/// A cache budget: a size of at least one page.
pub(crate) fn parse_budget(v: &str) -> Option<u64> {
    crate::cache::parse_size(v).map(|b| b as u64).filter(|&b| b >= PAGE)
}

impl ReadCache {
    /// The bytes it may keep.
    #[cfg(test)]
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// The cache in `dir` (made if missing) with `budget` bytes: one
    /// instance per directory and budget in a process.
    ///
    /// # Errors
    /// [`Error::Io`] if the directory cannot be made.
    pub(crate) fn at(dir: &Path, budget: u64) -> Result<Arc<ReadCache>> {
        type ByDirAndBudget = HashMap<(PathBuf, u64), Arc<ReadCache>>;
        static CACHES: OnceLock<Mutex<ByDirAndBudget>> = OnceLock::new();
        fs::create_dir_all(dir).map_err(|e| Error::io("making the remote cache directory", Some(dir), &e))?;
        let dir = fs::canonicalize(dir).map_err(|e| Error::io("opening the remote cache directory", Some(dir), &e))?;
        let mut caches = CACHES.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
        let cache = caches.entry((dir.clone(), budget)).or_insert_with(|| {
            let c = ReadCache {
                dir,
                budget,
                bytes: AtomicU64::new(0),
                evicting: Mutex::new(()),
                serial: AtomicU64::new(0),
                fetching: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            };
            c.bytes.store(c.scan().iter().map(|f| f.len).sum(), Ordering::Relaxed);
            Arc::new(c)
        });
        Ok(cache.clone())
    }

    /// The entries of the version `tag` names of the object at `url`.
    pub(crate) fn scope(self: &Arc<Self>, url: &str, tag: &Stamp) -> Scope {
        let key = xxhash_rust::xxh3::xxh3_128(format!("{url}\n{}", tag.text).as_bytes());
        Scope { cache: self.clone(), key, modified_ns: tag.modified_ns }
    }

    fn file(&self, key: u128, page: u64) -> PathBuf {
        let hex = format!("{key:032x}");
        self.dir.join(&hex[..2]).join(format!("{hex}-{page}"))
    }

    /// The cache's files (temporary ones too), with their lengths and
    /// modification times.
    fn scan(&self) -> Vec<Found> {
        let mut out = Vec::new();
        let Ok(top) = fs::read_dir(&self.dir) else { return out };
        for sub in top.flatten() {
            let name = sub.file_name();
            let name = name.to_string_lossy();
            // Only this cache's two-hex-digit subdirectories.
            if name.len() != 2 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let Ok(files) = fs::read_dir(sub.path()) else { continue };
            for f in files.flatten() {
                let Ok(meta) = f.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let temp = f.file_name().to_string_lossy().starts_with('.');
                out.push(Found { path: f.path(), len: meta.len(), modified, temp });
            }
        }
        out
    }

    /// Remove the least recently used pages until three quarters of the
    /// budget are used, and temporary files left by dead writers.
    fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else { return };
        let mut found = self.scan();
        let now = SystemTime::now();
        found.retain(|f| {
            let stale = f.temp && now.duration_since(f.modified).unwrap_or_default() > STALE_TEMP;
            if stale {
                let _ = fs::remove_file(&f.path);
            }
            !stale
        });
        let mut total: u64 = found.iter().map(|f| f.len).sum();
        if total > self.budget {
            found.sort_by_key(|f| f.modified);
            let target = self.budget / 4 * 3;
            for f in found.iter().filter(|f| !f.temp) {
                if total <= target {
                    break;
                }
                if fs::remove_file(&f.path).is_ok() {
                    total -= f.len;
                }
            }
        }
        self.bytes.store(total, Ordering::Relaxed);
    }
}

struct Found {
    path: PathBuf,
    len: u64,
    modified: SystemTime,
    temp: bool,
}

/// The pages of one version of one object in a [`ReadCache`].
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    cache: Arc<ReadCache>,
    key: u128,
    /// The version's modification time: a chunk object newer than the
    /// index version naming it is not kept ([`Scope::keeps`]).
    modified_ns: i128,
}

impl Scope {
    /// Page `page`, if cached whole and checked, with the object's length.
    pub(crate) fn get(&self, page: u64) -> Option<(Vec<u8>, u64)> {
        let path = self.cache.file(self.key, page);
        let file = fs::read(&path).ok()?;
        match self.check(&file, page) {
            Some(object_len) => {
                // Recently used: last to go.
                if let Ok(f) = fs::File::options().write(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                let mut file = file;
                file.drain(..HEADER);
                Some((file, object_len))
            }
            None => {
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// The object's length if `file` is page `page` of this scope, whole.
    fn check(&self, file: &[u8], page: u64) -> Option<u64> {
        let (head, body) = (file.get(..HEADER)?, &file[HEADER..]);
        let field = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap_or_default());
        let object_len = field(32);
        let ok = &head[..8] == MAGIC
            && head[8..24] == self.key.to_le_bytes()
            && field(24) == page
            && field(40) == body.len() as u64
            && body.len() as u64 == PAGE.min(object_len.saturating_sub(page * PAGE))
            && field(48) == xxhash_rust::xxh3::xxh3_64(body);
        ok.then_some(object_len)
    }

    /// Hold `pages` for fetching: another thread of this process fetching
    /// one of them is waited for (then [`Scope::get`] finds it). The locks
    /// are taken in one order, so threads holding some never wait for each
    /// other in a circle.
    pub(crate) fn lock(&self, pages: impl Iterator<Item = u64>) -> Vec<std::sync::MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = pages
            .map(|p| (xxhash_rust::xxh3::xxh3_64_with_seed(&p.to_le_bytes(), self.key as u64) as usize) % STRIPES)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|i| self.cache.fetching[i].lock().unwrap_or_else(PoisonError::into_inner)).collect()
    }

    /// Whether a chunk object read under this version, last modified at
    /// `modified_ns`, may be kept: not newer than the version.
    pub(crate) fn keeps(&self, modified_ns: Option<i128>) -> bool {
        modified_ns.is_some_and(|m| m <= self.modified_ns)
    }

    /// Keep `bytes` as page `page` of an object of `object_len` bytes
    /// (best effort: a failure loses the page). Only a whole page is kept.
    pub(crate) fn put(&self, page: u64, bytes: &[u8], object_len: u64) {
        if bytes.len() as u64 != PAGE.min(object_len.saturating_sub(page * PAGE)) {
            return;
        }
        let c = &self.cache;
        let len = (HEADER + bytes.len()) as u64;
        if len > c.budget {
            return;
        }
        let path = c.file(self.key, page);
        let Some(parent) = path.parent() else { return };
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { return };
        let temp = parent.join(format!(".{name}.{}.{}", std::process::id(), c.serial.fetch_add(1, Ordering::Relaxed)));
        let write = || -> io::Result<()> {
            fs::create_dir_all(parent)?;
            let mut f = fs::File::create(&temp)?;
            let mut head = Vec::with_capacity(HEADER);
            head.extend_from_slice(MAGIC);
            head.extend_from_slice(&self.key.to_le_bytes());
            head.extend_from_slice(&page.to_le_bytes());
            head.extend_from_slice(&object_len.to_le_bytes());
            head.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            head.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(bytes).to_le_bytes());
            f.write_all(&head)?;
            f.write_all(bytes)?;
            fs::rename(&temp, &path)
        };
        if write().is_err() {
            let _ = fs::remove_file(&temp);
            return;
        }
        if c.bytes.fetch_add(len, Ordering::Relaxed) + len > c.budget {
            c.evict();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(etag: &str, modified_ns: i128) -> Stamp {
        Stamp::new("x", super::super::Generation::Tag(etag.to_owned()), Some(etag), modified_ns, 10)
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("caterva-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn pages_are_kept_per_version_and_checked() {
        let d = dir("versions");
        let c = ReadCache::at(&d, DEFAULT_BUDGET).unwrap();
        let (v1, v2) = (stamp("\"a\"", 1), stamp("\"b\"", 2));
        let (s1, s2) = (c.scope("s3://b/x", &v1), c.scope("s3://b/x", &v2));
        assert_eq!(s1.get(0), None);
        s1.put(0, b"version one", 11);
        assert_eq!(s1.get(0), Some((b"version one".to_vec(), 11)));
        // Not whole: not kept.
        s1.put(1, b"x", PAGE + 2);
        assert_eq!(s1.get(1), None);
        // Another version, another object, another page: nothing.
        assert_eq!(s2.get(0), None);
        assert_eq!(c.scope("s3://b/y", &v1).get(0), None);
        assert_eq!(s1.get(1), None);
        // Another process's instance of the directory sees it.
        let other = ReadCache::at(&d, DEFAULT_BUDGET / 2).unwrap();
        assert_eq!(other.scope("s3://b/x", &v1).get(0), Some((b"version one".to_vec(), 11)));
        // A torn or changed file is a miss, and goes.
        let file = c.file(s1.key, 0);
        let mut bytes = fs::read(&file).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(&file, &bytes).unwrap();
        assert_eq!(s1.get(0), None);
        assert!(!file.exists());
        fs::write(&file, &bytes[..HEADER - 1]).unwrap();
        assert_eq!(s1.get(0), None);
        // A chunk object newer than the index version naming it is not kept.
        assert!(s1.keeps(Some(1)) && s1.keeps(Some(0)));
        assert!(!s1.keeps(Some(2)) && !s1.keeps(None));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_least_recently_used_pages_go_past_the_budget() {
        let d = dir("budget");
        // Ten pages' room.
        let c = ReadCache::at(&d, 10 * (PAGE + HEADER as u64)).unwrap();
        let s = c.scope("s3://b/x", &stamp("t", 0));
        let page = vec![7u8; PAGE as usize];
        for p in 0..10 {
            s.put(p, &page, 100 * PAGE);
            // Distinct modification times, oldest first.
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + p);
            fs::File::options().write(true).open(c.file(s.key, p)).unwrap().set_modified(t).unwrap();
        }
        // Page 0 used again: the newest.
        assert!(s.get(0).is_some());
        s.put(10, &page, 100 * PAGE);
        let kept: Vec<u64> = (0..11).filter(|&p| c.file(s.key, p).exists()).collect();
        // Down to three quarters (7 pages): the oldest unused ones went.
        assert_eq!(kept, vec![0, 5, 6, 7, 8, 9, 10]);
        assert!(c.bytes.load(Ordering::Relaxed) <= c.budget / 4 * 3);
        // A temporary file left long ago by a dead writer goes at the next eviction.
        let temp = c.file(s.key, 0).with_file_name(".left.1.1");
        fs::write(&temp, b"x").unwrap();
        fs::File::options().write(true).open(&temp).unwrap().set_modified(SystemTime::UNIX_EPOCH).unwrap();
        for p in 11..15 {
            s.put(p, &page, 100 * PAGE);
        }
        assert!(!temp.exists());
        fs::remove_dir_all(&d).unwrap();
    }
}
