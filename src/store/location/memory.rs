//! Objects in memory as a [`Location`] with an object store's semantics:
//! no directories (a prefix is any name followed by `/`), whole objects
//! replaced under conditions, a new entity tag for every version, nothing
//! written in place. The reference model the [`conformance`] suite is
//! checked against beside the real backends.
//!
//! [`conformance`]: super::conformance

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{check_name, Condition, Entry, Generation, Kind, Location, Object, Protocol, PutError, Range, Stamp};

/// What was asked of a bucket, as a remote store would count requests:
/// metadata requests (opens, stats, listings), rounds of range reads
/// ([`Object::read_ranges`] calls, whose ranges a remote backend sends
/// at once), the ranges and the bytes they fetched.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    pub(crate) metadata: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) ranges: AtomicU64,
    pub(crate) bytes: AtomicU64,
    /// Rounds under way now, and the most at once so far.
    pub(crate) in_flight: AtomicU64,
    pub(crate) most_in_flight: AtomicU64,
    /// Milliseconds each round takes (a distant store; 0: none).
    pub(crate) delay_ms: AtomicU64,
}

impl Requests {
    /// (metadata, rounds, ranges, bytes) so far.
    pub(crate) fn now(&self) -> [u64; 4] {
        [&self.metadata, &self.rounds, &self.ranges, &self.bytes].map(|c| c.load(Ordering::Relaxed))
    }
}

/// A bucket in memory.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    objects: Mutex<BTreeMap<String, Arc<MemObject>>>,
    /// What was asked of it.
    pub(crate) requests: Arc<Requests>,
    /// How its objects' names are spelt before their name (`mem://<bucket>/`;
    /// `memory://` for an unnamed one).
    base: String,
    /// Whether objects are dated in whole seconds, as S3's `Last-Modified`
    /// dates them (nanoseconds otherwise).
    pub(crate) seconds: AtomicBool,
}

/// The buckets `mem://<bucket>/<key>` URLs name, made at their first use:
/// the scheme this model is reached by through [`super::locate`], so that
/// tests open, read and copy arrays on it through every layer as they
/// would on a remote backend.
static BUCKETS: Mutex<BTreeMap<String, Arc<Memory>>> = Mutex::new(BTreeMap::new());

/// The bucket `name` of the `mem://` scheme.
pub(crate) fn bucket(name: &str) -> Arc<Memory> {
    let mut buckets = BUCKETS.lock().unwrap_or_else(PoisonError::into_inner);
    let made = || Arc::new(Memory { base: format!("mem://{name}/"), ..Memory::default() });
    buckets.entry(name.to_owned()).or_insert_with(made).clone()
}

/// The bucket and key a `mem://<bucket>/<key>` URL names.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] if it names no bucket or no key.
pub(crate) fn locate(url: &str) -> io::Result<(Arc<Memory>, String)> {
    let rest = url.strip_prefix("mem://").unwrap_or(url);
    match rest.split_once('/') {
        Some((b, key)) if !b.is_empty() => {
            check_name(key)?;
            Ok((bucket(b), key.to_owned()))
        }
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{url}' names no bucket and key"))),
    }
}

/// One version of an object in memory.
#[derive(Debug)]
pub(crate) struct MemObject {
    bytes: Vec<u8>,
    generation: Generation,
    requests: Arc<Requests>,
    made: std::time::SystemTime,
    stamp: Stamp,
}

impl Object for MemObject {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn generation(&self) -> &Generation {
        &self.generation
    }

    fn stamp(&self) -> Option<&Stamp> {
        Some(&self.stamp)
    }

    fn modified_ns(&self) -> Option<i128> {
        Some(self.stamp.modified_ns)
    }

    fn read_ranges(&self, ranges: &mut [Range<'_>]) -> io::Result<()> {
        let asked = ranges.iter().map(|r| r.buf.len() as u64).sum();
        self.requests.rounds.fetch_add(1, Ordering::Relaxed);
        self.requests.ranges.fetch_add(ranges.len() as u64, Ordering::Relaxed);
        self.requests.bytes.fetch_add(asked, Ordering::Relaxed);
        let now = self.requests.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.requests.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let delay = self.requests.delay_ms.load(Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        self.requests.in_flight.fetch_sub(1, Ordering::SeqCst);
        for r in ranges.iter_mut() {
            let from = usize::try_from(r.at).ok().filter(|&f| f <= self.bytes.len());
            let piece = from.and_then(|f| self.bytes.get(f..f.checked_add(r.buf.len())?));
            let Some(piece) = piece else {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a read past the end of the object"));
            };
            r.buf.copy_from_slice(piece);
        }
        Ok(())
    }
}

/// A new entity tag.
fn tag() -> String {
    static N: AtomicU64 = AtomicU64::new(1);
    format!("\"m{}\"", N.fetch_add(1, Ordering::Relaxed))
}

impl Memory {
    fn objects(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<MemObject>>> {
        self.objects.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Location for Memory {
    fn url(&self, name: &str) -> String {
        let base = if self.base.is_empty() { "memory://" } else { &self.base };
        format!("{base}{name}")
    }

    fn protocol(&self) -> Protocol {
        Protocol::Versioned
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Object>> {
        check_name(name)?;
        self.requests.metadata.fetch_add(1, Ordering::Relaxed);
        // As an object store's HEAD: a prefix is no object (telling it from
        // nothing would take a listing).
        match self.objects().get(name) {
            Some(o) => Ok(o.clone()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("no object '{name}'"))),
        }
    }

    fn open_reading(&self, name: &str, n: usize) -> io::Result<(Arc<dyn Object>, Vec<u8>)> {
        check_name(name)?;
        // As an object store's ranged GET: one round, found or not.
        let found = self.objects().get(name).cloned();
        let Some(o) = found else {
            self.requests.rounds.fetch_add(1, Ordering::Relaxed);
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no object '{name}'")));
        };
        let head = o.read_vec(0, n.min(o.bytes.len()))?;
        Ok((o, head))
    }

    fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
        check_name(name)?;
        self.requests.metadata.fetch_add(1, Ordering::Relaxed);
        let objects = self.objects();
        if let Some(o) = objects.get(name) {
            return Ok(Some(Entry {
                name: name.to_owned(),
                kind: Kind::Object,
                len: o.len(),
                generation: o.generation.clone(),
                modified: Some(o.made),
            }));
        }
        let under = format!("{name}/");
        let is_prefix = objects.range(under.clone()..).next().is_some_and(|(k, _)| k.starts_with(&under));
        Ok(is_prefix.then(|| Entry {
            name: name.to_owned(),
            kind: Kind::Prefix,
            len: 0,
            generation: Generation::Tag(String::new()),
            modified: None,
        }))
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
        self.requests.metadata.fetch_add(1, Ordering::Relaxed);
        let under = if prefix.is_empty() { String::new() } else { format!("{}/", prefix.trim_end_matches('/')) };
        let mut out: Vec<Entry> = Vec::new();
        for (k, o) in self.objects().range(under.clone()..) {
            let Some(rest) = k.strip_prefix(&under) else { break };
            match rest.split_once('/') {
                None => out.push(Entry {
                    name: k.clone(),
                    kind: Kind::Object,
                    len: o.len(),
                    generation: o.generation.clone(),
                    modified: Some(o.made),
                }),
                Some((dir, _)) => {
                    let name = format!("{under}{dir}");
                    if out.last().map(|e| &e.name) != Some(&name) {
                        out.push(Entry {
                            name,
                            kind: Kind::Prefix,
                            len: 0,
                            generation: Generation::Tag(String::new()),
                            modified: None,
                        });
                    }
                }
            }
        }
        if out.is_empty() && !prefix.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no prefix '{prefix}'")));
        }
        Ok(out)
    }

    fn put(&self, name: &str, bytes: &[u8], cond: Condition<'_>) -> Result<Generation, PutError> {
        check_name(name)?;
        let mut objects = self.objects();
        if !cond.holds(objects.get(name).map(|o| &o.generation)) {
            return Err(PutError::Conflict);
        }
        let etag = tag();
        let generation = Generation::Tag(etag.clone());
        let requests = self.requests.clone();
        let mut made = std::time::SystemTime::now();
        if self.seconds.load(Ordering::Relaxed) {
            let since = made.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            made = std::time::UNIX_EPOCH + std::time::Duration::from_secs(since.as_secs());
        }
        let ns = made.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
        let stamp = Stamp::new(name, generation.clone(), Some(&etag), ns, bytes.len() as u64);
        let object = MemObject { bytes: bytes.to_vec(), generation: generation.clone(), requests, made, stamp };
        objects.insert(name.to_owned(), Arc::new(object));
        Ok(generation)
    }

    fn remove(&self, name: &str, expected: Option<&Generation>) -> Result<(), PutError> {
        check_name(name)?;
        let mut objects = self.objects();
        if let Some(g) = expected {
            if objects.get(name).map(|o| &o.generation) != Some(g) {
                return Err(PutError::Conflict);
            }
        }
        objects.remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn conformance() {
        super::super::conformance::run(&super::Memory::default(), "");
        super::super::conformance::run(&super::Memory::default(), "arr.caterva");
    }
}

/// The suite fails a backend whose conditions do not hold.
#[cfg(test)]
mod careless {
    use super::*;

    /// [`Memory`], but every put replaces whatever is there.
    #[derive(Debug, Default)]
    struct Careless(Memory);

    impl Location for Careless {
        fn url(&self, name: &str) -> String {
            self.0.url(name)
        }
        fn protocol(&self) -> Protocol {
            self.0.protocol()
        }
        fn open(&self, name: &str) -> io::Result<Arc<dyn Object>> {
            self.0.open(name)
        }
        fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
            self.0.stat(name)
        }
        fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
            self.0.list(prefix)
        }
        fn put(&self, name: &str, bytes: &[u8], _: Condition<'_>) -> Result<Generation, PutError> {
            self.0.put(name, bytes, Condition::Always)
        }
        fn remove(&self, name: &str, expected: Option<&Generation>) -> Result<(), PutError> {
            self.0.remove(name, expected)
        }
    }

    #[test]
    fn the_suite_fails_a_backend_that_ignores_conditions() {
        let r = std::panic::catch_unwind(|| super::super::conformance::run(&Careless::default(), ""));
        assert!(r.is_err());
    }
}
