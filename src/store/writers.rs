//! Who may write an array at a versioned location (an object store), and
//! on what the store's word is taken.
//!
//! The publish protocol (`store/versioned.rs`) keeps every writer's update
//! only if the server holds two conditions: a create-if-absent put is
//! refused where an object is, and a replace-if-match put is refused when
//! the object is no longer of the tag read, even when two writers race on
//! one tag. AWS S3 and moto hold them; some S3-compatible servers do not
//! (s3rver ignores both; others check them apart from storing the object,
//! so racing writers both win). There, a writer that lost a race would be
//! told it won and its update would vanish. So, by what the caller says
//! in `CATERVA_S3_WRITERS` ([`Writers`]):
//!
//! - `many` (the default): before the first write to a server and bucket
//!   in this process, [`probe`] checks both conditions (each alone, then
//!   writers racing on one tag and on one new name); a server that fails
//!   any is refused for writes with [`Error::InvalidStorage`] naming what
//!   failed. The verdict is kept for the process.
//! - `single`: the caller states that one writer at a time writes each
//!   array. That holds on any server, conditions or not, and a [`Lease`]
//!   object beside the array checks it: a writer takes it before it
//!   writes (put, wait [`SETTLE`], read back), checks it is still its own
//!   just before it replaces the frame object, reads back what it
//!   published, and leaves it after. A second writer meanwhile is refused
//!   with [`Error::InvalidStorage`] naming the holder. On a server without
//!   conditions the lease is checked, not enforced: two writers taking it
//!   within [`SETTLE`] of each other's read could both pass, and the read
//!   back after publishing is what reports a write then lost.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::location::{self, Condition, FrameSite, Generation, Location, PutError};
use crate::error::{Error, Result};

/// The variable that says how many writers write each array at an object store.
pub(crate) const WRITERS_ENV: &str = "CATERVA_S3_WRITERS";

/// How many writers write an array at once, as the caller says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writers {
    /// Any number: the server must hold the conditions ([`probe`]).
    Many,
    /// One at a time, checked by a [`Lease`].
    Single,
}

impl Writers {
    /// What `CATERVA_S3_WRITERS` says (unset or empty: [`Writers::Many`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another value.
    pub(crate) fn from_env() -> Result<Writers> {
        match std::env::var(WRITERS_ENV).unwrap_or_default().trim() {
            "" | "many" => Ok(Writers::Many),
            "single" => Ok(Writers::Single),
            other => Err(Error::InvalidArgument(format!(
                "{WRITERS_ENV}='{other}': 'many' (the default: the server's conditional writes are checked) \
                 or 'single' (one writer at a time, checked by a lease object)"
            ))),
        }
    }
}

/// What writing at `site` is allowed on: hold it for the whole write and
/// call [`Permit::before_publish`] just before replacing the frame object.
#[derive(Debug)]
pub(crate) struct Permit {
    lease: Option<Lease>,
    /// The removal of the probe's objects, under way while the write goes
    /// on (the first write to a server in this process): waited for when
    /// the permit goes, so that a process that ends after its write leaves
    /// none behind.
    cleanup: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(h) = self.cleanup.take() {
            let _ = h.join();
        }
    }
}

/// Let a write at `site` go ahead, as [`Writers::from_env`] says: the
/// server's conditions checked ([`probe`], once per process and server),
/// or the lease taken.
///
/// # Errors
/// [`Error::InvalidStorage`] when the server does not hold the conditions
/// or another writer holds the lease; as the storage fails.
pub(crate) fn admit(site: &FrameSite) -> Result<Permit> {
    let writers = match location::options::for_url(&site.url()).get("writers") {
        Some("single") => Writers::Single,
        Some(_) => Writers::Many,
        None => Writers::from_env()?,
    };
    match writers {
        Writers::Many => {
            let mut cleanup = None;
            let checked = checked(site, &mut cleanup);
            let permit = Permit { lease: None, cleanup };
            checked.map(|()| permit)
        }
        Writers::Single => Ok(Permit { lease: Some(Lease::take(site)?), cleanup: None }),
    }
}

impl Permit {
    /// Whether a writer may remove, once it published, the chunk objects
    /// its base version named and its new one does not: only where the
    /// server's conditions were checked. Under a lease they may not hold,
    /// and a second writer that slipped past the lease with the same base
    /// version can publish after this one an index that still names them
    /// (s3rver, 4 writers: an index naming a removed chunk object, the
    /// array unreadable); they are left to `Store::remove_orphans`.
    pub(crate) fn removes_superseded(&self) -> bool {
        self.lease.is_none()
    }

    /// Whether this write holds a lease ([`Writers::Single`]).
    pub(crate) fn leased(&self) -> bool {
        self.lease.is_some()
    }

    /// Just before the frame object is replaced: the lease (if any) is still this writer's.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if another writer took it.
    pub(crate) fn before_publish(&self) -> Result<()> {
        self.lease.as_ref().map_or(Ok(()), Lease::still_ours)
    }

    /// Just after the frame object `name` was replaced by `bytes`: under a
    /// lease, read it back (a server without conditions may have let a
    /// writer without the lease replace it at once).
    ///
    /// # Errors
    /// [`Error::Conflict`] when it holds something else.
    pub(crate) fn after_publish(&self, site: &FrameSite, name: &str, bytes: &[u8]) -> Result<()> {
        if self.lease.is_none() {
            return Ok(());
        }
        let url = site.url();
        let now = site.location.open(name).and_then(|o| o.read_vec(0, usize::try_from(o.len()).unwrap_or(0)));
        match now {
            Ok(now) if now == bytes => Ok(()),
            Ok(_) => Err(Error::Conflict {
                path: url.clone(),
                reason: format!(
                    "'{url}' was replaced by another writer as this one published: this write may be lost \
                     ({WRITERS_ENV}=single, and a writer without the lease wrote)"
                ),
            }),
            Err(e) => Err(Error::io("reading back", Some(std::path::Path::new(&url)), &e)),
        }
    }
}

/// The verdicts of [`probe`] in this process, by server and bucket
/// ([`Location::server`]): `Err` names what failed.
fn verdicts() -> &'static Mutex<std::collections::HashMap<String, std::result::Result<(), String>>> {
    static V: OnceLock<Mutex<std::collections::HashMap<String, std::result::Result<(), String>>>> = OnceLock::new();
    V.get_or_init(Mutex::default)
}

/// [`probe`] `site`'s server once in this process: its verdict. The
/// removal of the probe's objects is left running in `cleanup`.
fn checked(site: &FrameSite, cleanup: &mut Option<std::thread::JoinHandle<()>>) -> Result<()> {
    let loc = &*site.location;
    let server = loc.server();
    let known = verdicts().lock().unwrap_or_else(PoisonError::into_inner).get(&server).cloned();
    let verdict = match known {
        Some(v) => v,
        None => {
            let prefix = site.key.rsplit_once('/').map_or("", |(p, _)| p);
            let (v, made) = probe_leaving(loc, prefix);
            // Its objects go while the write goes on.
            let location = site.location.clone();
            *cleanup = Some(std::thread::spawn(move || remove_all(&*location, &made)));
            let v = v.map_err(|e| {
                Error::io(
                    "checking the conditional writes of the server of",
                    Some(std::path::Path::new(&site.url())),
                    &e,
                )
            })?;
            verdicts().lock().unwrap_or_else(PoisonError::into_inner).insert(server.clone(), v.clone());
            v
        }
    };
    verdict.map_err(|failed| {
        let url = site.url();
        Error::storage(
            Some(&url),
            format!(
                "cannot write '{url}': the server ({server}) does not hold the conditional writes that keep \
                 concurrent writers from losing each other's updates: {failed}. Use a server that holds them \
                 (AWS S3 does), or set {WRITERS_ENV}=single if one writer at a time writes each \
                 array (a lease object then checks it)"
            ),
        )
    })
}

/// Writers racing on one name in [`probe`].
const RACERS: usize = 6;

/// Check that `loc` holds what the publish protocol relies on, with
/// objects of its own under `prefix` (removed after): create-if-absent
/// refused where an object is; replace-if-match refused on a stale tag
/// and taken on the current one; and, with [`RACERS`] writers racing on
/// one tag (twice) and on one new name (twice), exactly one winner each
/// time (a server that checks conditions apart from storing them lets
/// several racers win in most rounds: two winners in 20 of 20 rounds were
/// reported of s3s-fs). `Ok(Err(what))` names the first that failed.
///
/// # Errors
/// As the storage fails (the verdict is then unknown).
#[cfg(test)]
pub(crate) fn probe(loc: &dyn Location, prefix: &str) -> std::io::Result<std::result::Result<(), String>> {
    let (verdict, made) = probe_leaving(loc, prefix);
    remove_all(loc, &made);
    verdict
}

/// [`probe`], leaving its objects: the verdict, and the objects to remove.
fn probe_leaving(loc: &dyn Location, prefix: &str) -> (std::io::Result<std::result::Result<(), String>>, Vec<String>) {
    let tag = format!("{:016x}", fresh_token());
    let name = |what: &str| location::join(prefix, &format!(".caterva-probe-{tag}-{what}"));
    let made = vec![name("one"), name("new-0"), name("new-1"), name("cut")];
    let verdict = probe_in(loc, &made);
    (verdict, made)
}

/// Remove `names` at `loc`, at once (what is not there is no error).
fn remove_all(loc: &dyn Location, names: &[String]) {
    std::thread::scope(|s| {
        for n in names {
            s.spawn(move || loc.remove(n, None));
        }
    });
}

/// Bytes a put cut short in [`probe`] says it sends, and sends.
const CUT_DECLARED: usize = 64 << 10;
const CUT_SENT: usize = 4 << 10;

/// The checks of [`probe`] in three rounds of requests, each round's at
/// once (a round trip each, where a check after another took seven):
///
/// 1. `one` created; writers racing to create `new-0`; a put of `cut`
///    cut short (where the backend can send one: [`Location::put_cut_short`]).
/// 2. `one` created again (refused); writers racing on `one`'s tag (one
///    wins, whose tag is now current); writers racing to create `new-1`.
/// 3. `one` replaced on its first tag, now stale (refused); writers racing
///    on its current tag (one wins); nothing at `cut`.
fn probe_in(loc: &dyn Location, names: &[String]) -> std::io::Result<std::result::Result<(), String>> {
    let (one, new0, new1, cut) = (&names[0], &names[1], &names[2], &names[3]);
    let io = |e: PutError| match e {
        PutError::Io(e) => e,
        PutError::Conflict => std::io::Error::other("a put was refused where nothing was"),
    };
    let joined = |r: std::thread::Result<std::io::Result<Vec<Generation>>>| {
        r.unwrap_or_else(|_| Err(std::io::Error::other("a racing writer failed")))
    };
    let created = |won: std::io::Result<Vec<Generation>>| -> std::io::Result<std::result::Result<(), String>> {
        Ok(match won?.len() {
            1 => Ok(()),
            0 => return Err(std::io::Error::other("no writer racing to create one object won")),
            n => Err(format!(
                "{n} of {RACERS} writers racing to create one object were told their If-None-Match put won"
            )),
        })
    };
    let replaced = |won: std::io::Result<Vec<Generation>>| -> std::io::Result<std::result::Result<Generation, String>> {
        let mut won = won?;
        Ok(match won.len() {
            1 => Ok(won.remove(0)),
            0 => return Err(std::io::Error::other("no writer racing on one entity tag won")),
            n => Err(format!("{n} of {RACERS} writers racing on one entity tag were told their If-Match put won")),
        })
    };
    // 1.
    let (first, raced, cut_sent) = std::thread::scope(|s| {
        let raced = s.spawn(|| race(|i| loc.put(new0, format!("writer {i}").as_bytes(), Condition::IfAbsent)));
        let cut_sent = s.spawn(|| loc.put_cut_short(cut, CUT_DECLARED, &[7u8; CUT_SENT]));
        let first = loc.put(one, b"first", Condition::IfAbsent);
        let cut_sent = cut_sent.join().unwrap_or_else(|_| Err(std::io::Error::other("the cut put failed")));
        (first, joined(raced.join()), cut_sent)
    });
    let first = first.map_err(io)?;
    let cut_sent = cut_sent?;
    if let Err(failed) = created(raced)? {
        return Ok(Err(failed));
    }
    // 2.
    let (again, on_tag, raced) = std::thread::scope(|s| {
        let on_tag =
            s.spawn(|| race(|i| loc.put(one, format!("writer {i}").as_bytes(), Condition::IfGeneration(&first))));
        let raced = s.spawn(|| race(|i| loc.put(new1, format!("writer {i}").as_bytes(), Condition::IfAbsent)));
        (loc.put(one, b"second", Condition::IfAbsent), joined(on_tag.join()), joined(raced.join()))
    });
    match again {
        Err(PutError::Conflict) => {}
        Ok(_) => return Ok(Err("a create-if-absent put (If-None-Match: *) replaced an existing object".into())),
        Err(PutError::Io(e)) => return Err(e),
    }
    let current = match replaced(on_tag)? {
        Ok(g) => g,
        Err(failed) => return Ok(Err(failed)),
    };
    if let Err(failed) = created(raced)? {
        return Ok(Err(failed));
    }
    // 3.
    let (stale, on_tag, at_cut) = std::thread::scope(|s| {
        let on_tag =
            s.spawn(|| race(|i| loc.put(one, format!("again {i}").as_bytes(), Condition::IfGeneration(&current))));
        let at_cut = s.spawn(|| if cut_sent { loc.stat(cut) } else { Ok(None) });
        let stale = loc.put(one, b"stale", Condition::IfGeneration(&first));
        let at_cut = at_cut.join().unwrap_or_else(|_| Err(std::io::Error::other("the look at the cut put failed")));
        (stale, joined(on_tag.join()), at_cut)
    });
    if let Some(e) = at_cut? {
        return Ok(Err(format!(
            "a PUT cut short after {CUT_SENT} of its {CUT_DECLARED} bytes left an object of {} bytes (a writer killed \
             while it writes would leave a torn index or frame)",
            e.len
        )));
    }
    match stale {
        Err(PutError::Conflict) => {}
        Ok(_) => return Ok(Err("a replace-if-match put (If-Match) was taken on a stale entity tag".into())),
        Err(PutError::Io(e)) => return Err(e),
    }
    if let Err(failed) = replaced(on_tag)? {
        return Ok(Err(failed));
    }
    Ok(Ok(()))
}

/// Run `put(i)` for `i` in `0..RACERS` at once: the generations of the
/// puts that won. A failure of the storage fails the round.
fn race(put: impl Fn(usize) -> std::result::Result<Generation, PutError> + Sync) -> std::io::Result<Vec<Generation>> {
    let start = std::sync::Barrier::new(RACERS);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..RACERS)
            .map(|i| {
                let (put, start) = (&put, &start);
                s.spawn(move || {
                    start.wait();
                    put(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(Err(PutError::Conflict))).collect()
    });
    let mut won = Vec::new();
    for r in results {
        match r {
            Ok(g) => won.push(g),
            Err(PutError::Conflict) => {}
            Err(PutError::Io(e)) => return Err(e),
        }
    }
    Ok(won)
}

/// A random 64-bit number (a lease's or a probe's token, a seed).
pub(crate) fn fresh_token() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{now} {} {:?} {}",
        std::process::id(),
        std::thread::current().id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    xxhash_rust::xxh3::xxh3_64(seed.as_bytes())
}

/// How long a writer waits between putting its lease and reading it back:
/// a second writer that read no lease before the first put its own has
/// put its own by then, and the first sees it.
pub(crate) const SETTLE: Duration = Duration::from_millis(200);

/// How long a lease holds if its writer does not leave it (killed): then
/// another writer may take it.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(60);

/// The lease object of one array's writer ([`Writers::Single`]):
/// `<array>.caterva-lease` beside the array, holding a token, the time it
/// holds until (milliseconds since the epoch) and who holds it.
#[derive(Debug)]
pub(crate) struct Lease {
    site: FrameSite,
    name: String,
    token: String,
}

/// What a lease object says.
struct Held {
    token: String,
    until_ms: u128,
    holder: String,
}

impl Held {
    fn parse(bytes: &[u8]) -> Option<Held> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        (lines.next()? == "caterva-lease 1").then_some(())?;
        let token = lines.next()?.to_owned();
        let until_ms = lines.next()?.parse().ok()?;
        let holder = lines.next().unwrap_or("").to_owned();
        Some(Held { token, until_ms, holder })
    }
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

impl Lease {
    /// The lease object's name for the array at `site`.
    pub(crate) fn name(site: &FrameSite) -> String {
        format!("{}.caterva-lease", site.key.trim_end_matches('/'))
    }

    /// Take the lease of the array at `site`.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] naming the holder if another writer holds
    /// it; as the storage fails.
    pub(crate) fn take(site: &FrameSite) -> Result<Lease> {
        let lease = Lease { site: site.clone(), name: Self::name(site), token: format!("{:016x}", fresh_token()) };
        if let Some(other) = lease.read()?.filter(|h| h.token != lease.token && h.until_ms > now_ms()) {
            return Err(lease.held(&other));
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let text = format!(
            "caterva-lease 1\n{}\n{}\nprocess {} on {}\n",
            lease.token,
            now_ms() + LEASE_TTL.as_millis(),
            std::process::id(),
            host.trim()
        );
        lease.site.location.put(&lease.name, text.as_bytes(), Condition::Always).map_err(|e| lease.error(e))?;
        std::thread::sleep(SETTLE);
        lease.still_ours()?;
        Ok(lease)
    }

    /// What the lease object says now, if it is there and sound.
    fn read(&self) -> Result<Option<Held>> {
        let loc = &*self.site.location;
        match loc.open(&self.name).and_then(|o| o.read_vec(0, usize::try_from(o.len()).unwrap_or(0).min(4096))) {
            Ok(bytes) => Ok(Held::parse(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("reading", Some(std::path::Path::new(&loc.url(&self.name))), &e)),
        }
    }

    /// Whether the lease object still names this writer.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] naming the holder if another writer took it.
    pub(crate) fn still_ours(&self) -> Result<()> {
        match self.read()? {
            Some(h) if h.token == self.token => Ok(()),
            Some(h) => Err(self.held(&h)),
            None => Err(Error::storage(
                Some(&self.site.url()),
                format!(
                    "cannot write '{}': its writer's lease '{}' was removed by another writer while this one wrote",
                    self.site.url(),
                    self.site.location.url(&self.name)
                ),
            )),
        }
    }

    fn held(&self, h: &Held) -> Error {
        let url = self.site.url();
        let secs_left = h.until_ms.saturating_sub(now_ms()) / 1000;
        Error::storage(
            Some(&url),
            format!(
                "cannot write '{url}': another writer holds its lease ({}, for {secs_left} s more) and \
                 {WRITERS_ENV}=single lets one writer at a time write it; wait, or remove '{}' if that writer is gone",
                if h.holder.is_empty() { "unknown" } else { &h.holder },
                self.site.location.url(&self.name)
            ),
        )
    }

    fn error(&self, e: PutError) -> Error {
        let url = self.site.location.url(&self.name);
        match e {
            PutError::Io(e) => Error::io("writing", Some(std::path::Path::new(&url)), &e),
            PutError::Conflict => Error::storage(Some(&url), format!("'{url}' could not be written")),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Leave it, if it is still ours (best effort: it expires anyway).
        if let Ok(o) = self.site.location.open(&self.name) {
            let ours =
                o.read_vec(0, usize::try_from(o.len()).unwrap_or(0).min(4096)).ok().and_then(|b| Held::parse(&b));
            if ours.is_some_and(|h| h.token == self.token) {
                let _ = self.site.location.remove(&self.name, Some(o.generation()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::Arc;

    use super::*;
    use crate::store::location::memory::Memory;
    use crate::store::location::{Entry, Object, Protocol};

    /// [`Memory`] with a server's faults: `ignores` every condition
    /// (s3rver), or `apart` checks a put's condition, then stores the
    /// object a moment later without holding anything in between (so
    /// racing writers both pass the check: moto's own server, s3s-fs).
    #[derive(Debug, Default)]
    struct Faulty {
        inner: Memory,
        ignores: bool,
        apart: bool,
        /// A put cut short leaves what it sent (s3rver: an object written
        /// as its body comes); else nothing.
        torn: bool,
    }

    impl Location for Faulty {
        fn url(&self, name: &str) -> String {
            self.inner.url(name)
        }
        fn protocol(&self) -> Protocol {
            Protocol::Versioned
        }
        fn open(&self, name: &str) -> io::Result<Arc<dyn Object>> {
            self.inner.open(name)
        }
        fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
            self.inner.stat(name)
        }
        fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
            self.inner.list(prefix)
        }
        fn put(&self, name: &str, bytes: &[u8], cond: Condition<'_>) -> std::result::Result<Generation, PutError> {
            if self.ignores {
                return self.inner.put(name, bytes, Condition::Always);
            }
            if self.apart {
                if !cond.holds(self.inner.stat(name)?.map(|e| e.generation).as_ref()) {
                    return Err(PutError::Conflict);
                }
                std::thread::sleep(Duration::from_millis(20));
                return self.inner.put(name, bytes, Condition::Always);
            }
            self.inner.put(name, bytes, cond)
        }
        fn remove(&self, name: &str, expected: Option<&Generation>) -> std::result::Result<(), PutError> {
            self.inner.remove(name, expected)
        }
        fn put_cut_short(&self, name: &str, _declared: usize, sent: &[u8]) -> io::Result<bool> {
            if self.torn {
                self.inner.put(name, sent, Condition::Always).map_err(|e| io::Error::other(e.to_string()))?;
            }
            Ok(true)
        }
    }

    #[test]
    fn the_probe_passes_a_server_that_holds_the_conditions_and_leaves_nothing() {
        let m = Faulty::default();
        assert_eq!(probe(&m, "dir").unwrap(), Ok(()));
        assert!(m.inner.list("").map_or(true, |l| l.is_empty()), "{:?}", m.inner.list(""));
    }

    #[test]
    fn the_probe_fails_servers_that_ignore_conditions_or_check_them_apart() {
        let ignores = Faulty { ignores: true, ..Faulty::default() };
        let failed = probe(&ignores, "").unwrap().unwrap_err();
        assert!(failed.contains("If-None-Match"), "{failed}");
        let apart = Faulty { apart: true, ..Faulty::default() };
        let failed = probe(&apart, "").unwrap().unwrap_err();
        assert!(failed.contains("racing"), "{failed}");
        assert!(apart.inner.list("").map_or(true, |l| l.is_empty()));
        let torn = Faulty { torn: true, ..Faulty::default() };
        let failed = probe(&torn, "").unwrap().unwrap_err();
        assert!(failed.contains("cut short") && failed.contains("4096 bytes"), "{failed}");
        assert!(torn.inner.list("").map_or(true, |l| l.is_empty()));
    }

    fn site(loc: Arc<dyn Location>) -> FrameSite {
        FrameSite { location: loc, key: "dir/a.b2nd".into(), contiguous: false, offset: None }
    }

    #[test]
    fn a_lease_refuses_a_second_writer_until_left_or_expired() {
        let m: Arc<dyn Location> = Arc::new(Faulty { ignores: true, ..Faulty::default() });
        let s = site(m.clone());
        let first = Lease::take(&s).unwrap();
        first.still_ours().unwrap();
        let e = Lease::take(&s).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidStorage);
        assert!(e.to_string().contains("holds its lease") && e.to_string().contains("a.b2nd.caterva-lease"), "{e}");
        drop(first);
        assert!(m.stat("dir/a.b2nd.caterva-lease").unwrap().is_none(), "left");
        let second = Lease::take(&s).unwrap();
        // Taken over by another (expired, say): this one finds out before it publishes.
        m.put("dir/a.b2nd.caterva-lease", b"caterva-lease 1\nother\n99999999999999\nsomeone\n", Condition::Always)
            .unwrap();
        let e = second.still_ours().unwrap_err();
        assert!(e.to_string().contains("someone"), "{e}");
        drop(second);
        assert!(m.stat("dir/a.b2nd.caterva-lease").unwrap().is_some(), "another's lease is not removed");
        // An expired lease is taken.
        m.put("dir/a.b2nd.caterva-lease", b"caterva-lease 1\nother\n1\nsomeone\n", Condition::Always).unwrap();
        Lease::take(&s).unwrap();
    }
}
