//! What every [`Location`] must do, as one suite each backend's tests run:
//! ranges, lengths, generations, conditional writes (and writers racing on
//! them), listing, removal, names that would leave the location.
//!
//! `run(loc, prefix)` works under `prefix` (`""`: the top), which must be
//! empty or absent; it leaves it empty.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{join, Condition, Generation, Kind, Location, PutError, Range};

/// Run the whole suite on `loc`, under `prefix`.
pub(crate) fn run(loc: &dyn Location, prefix: &str) {
    let name = |n: &str| join(prefix, n);
    absent(loc, &name("absent"));
    ranges(loc, &name("ranges"));
    versions(loc, &name("versions"));
    conditions(loc, &name("cond"));
    racing_creators(loc, &name("race-create"));
    no_lost_update(loc, &name("counter"));
    listing(loc, prefix);
    removal(loc, &name("removal"));
    names(loc);
    for e in loc.list(prefix).unwrap_or_default() {
        if e.kind == Kind::Object {
            loc.remove(&e.name, None).unwrap();
        }
    }
}

fn is_conflict<T: std::fmt::Debug>(r: Result<T, PutError>) -> bool {
    matches!(r, Err(PutError::Conflict))
}

fn read_all(loc: &dyn Location, name: &str) -> Vec<u8> {
    let o = loc.open(name).unwrap();
    o.read_vec(0, usize::try_from(o.len()).unwrap()).unwrap()
}

fn absent(loc: &dyn Location, n: &str) {
    assert_eq!(loc.open(n).unwrap_err().kind(), io::ErrorKind::NotFound, "{n}");
    assert!(loc.stat(n).unwrap().is_none(), "{n}");
    loc.remove(n, None).unwrap();
    let someone = Generation::Tag("nothing".into());
    assert!(is_conflict(loc.remove(n, Some(&someone))), "{n}");
    assert!(is_conflict(loc.put(n, b"x", Condition::IfGeneration(&someone))), "{n}");
    assert!(loc.stat(n).unwrap().is_none(), "{n}");
}

/// The bytes of the object [`reads`] reads.
pub(crate) fn sample() -> Vec<u8> {
    (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn ranges(loc: &dyn Location, n: &str) {
    let data = sample();
    let g = loc.put(n, &data, Condition::Always).unwrap();
    reads(loc, n, &g);
    // An empty object.
    let e = loc.put(&format!("{n}-empty"), b"", Condition::Always).unwrap();
    let eo = loc.open(&format!("{n}-empty")).unwrap();
    assert_eq!((eo.len(), eo.generation()), (0, &e));
    eo.read_at(0, &mut []).unwrap();
}

/// The read half of the suite, for a location that cannot be written
/// through (a web server): `n` holds [`sample`] at generation `g`; reads
/// of it by ranges, its length and generation, and a name with nothing
/// there (`n` + `-absent`).
pub(crate) fn reads(loc: &dyn Location, n: &str, g: &Generation) {
    let data = sample();
    let absent = format!("{n}-absent");
    assert_eq!(loc.open(&absent).unwrap_err().kind(), io::ErrorKind::NotFound, "{absent}");
    assert!(loc.stat(&absent).unwrap().is_none(), "{absent}");
    let o = loc.open(n).unwrap();
    assert_eq!(o.len(), data.len() as u64);
    assert_eq!(o.generation(), g);
    let st = loc.stat(n).unwrap().unwrap();
    assert_eq!((st.kind, st.len, &st.generation), (Kind::Object, data.len() as u64, g));
    // Many ranges in one call: scattered, overlapping, empty, at both ends.
    let spans = [(0usize, 32usize), (99_968, 32), (5_000, 0), (4_000, 10_000), (4_096, 8), (100_000, 0), (51_234, 17)];
    let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, l)| vec![0xee; l]).collect();
    let mut reads: Vec<Range<'_>> =
        spans.iter().zip(bufs.iter_mut()).map(|(&(at, _), buf)| Range { at: at as u64, buf }).collect();
    o.read_ranges(&mut reads).unwrap();
    for (&(at, l), b) in spans.iter().zip(&bufs) {
        assert_eq!(b[..], data[at..at + l], "range {at}+{l}");
    }
    assert_eq!(o.read_vec(99_990, 11).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(o.read_vec(200_000, 1).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    let mut tail = [0u8; 64];
    assert_eq!(o.read_upto(99_980, &mut tail).unwrap(), 20);
    assert_eq!(tail[..20], data[99_980..]);
}

fn versions(loc: &dyn Location, n: &str) {
    let g1 = loc.put(n, b"first version", Condition::Always).unwrap();
    let old = loc.open(n).unwrap();
    let g2 = loc.put(n, b"the second version", Condition::Always).unwrap();
    assert_ne!(g1, g2, "a new version, a new generation");
    assert_eq!(loc.stat(n).unwrap().unwrap().generation, g2);
    assert_eq!(read_all(loc, n), b"the second version");
    // An object opened before reads its own version, or fails: never the new bytes.
    let mut buf = vec![0u8; 13];
    if old.read_at(0, &mut buf).is_ok() {
        assert_eq!(buf, b"first version");
    }
    assert_eq!(old.generation(), &g1);
    // The same bytes again: a new generation, or the same one where
    // generations name the bytes (S3's entity tag is their MD5), which is
    // as safe for conditions: versions with equal bytes are not told apart.
    let g3 = loc.put(n, b"the second version", Condition::Always).unwrap();
    assert!(loc.put(n, b"the second version", Condition::IfGeneration(&g3)).is_ok());
    assert!(is_conflict(loc.put(n, b"x", Condition::IfGeneration(&g1))));
}

fn conditions(loc: &dyn Location, n: &str) {
    let g = loc.put(n, b"one", Condition::IfAbsent).unwrap();
    assert!(is_conflict(loc.put(n, b"two", Condition::IfAbsent)));
    assert_eq!(read_all(loc, n), b"one");
    let g2 = loc.put(n, b"two", Condition::IfGeneration(&g)).unwrap();
    assert!(is_conflict(loc.put(n, b"three", Condition::IfGeneration(&g))), "a stale generation");
    assert_eq!(read_all(loc, n), b"two");
    assert_eq!(loc.stat(n).unwrap().unwrap().generation, g2);
}

fn racing_creators(loc: &dyn Location, n: &str) {
    let won = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..8u8 {
            let won = &won;
            s.spawn(move || match loc.put(n, &[t; 1000], Condition::IfAbsent) {
                Ok(_) => {
                    won.fetch_add(1, Ordering::SeqCst);
                }
                Err(PutError::Conflict) => {}
                Err(PutError::Io(e)) => panic!("{e}"),
            });
        }
    });
    assert_eq!(won.load(Ordering::SeqCst), 1, "exactly one creator wins");
    let b = read_all(loc, n);
    assert!(b.len() == 1000 && b.iter().all(|&x| x == b[0]), "one writer's bytes, whole");
}

/// Writers that re-read and retry when they lose lose no update.
fn no_lost_update(loc: &dyn Location, n: &str) {
    const THREADS: u64 = 6;
    const EACH: u64 = 20;
    loc.put(n, &0u64.to_le_bytes(), Condition::Always).unwrap();
    let conflicts = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let conflicts = &conflicts;
            s.spawn(move || {
                for _ in 0..EACH {
                    loop {
                        let o = loc.open(n).unwrap();
                        // A version replaced between the open and the read may fail the read: retry.
                        let Ok(bytes) = o.read_vec(0, 8) else {
                            conflicts.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        let v = u64::from_le_bytes(bytes.try_into().unwrap());
                        match loc.put(n, &(v + 1).to_le_bytes(), Condition::IfGeneration(o.generation())) {
                            Ok(_) => break,
                            Err(PutError::Conflict) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(PutError::Io(e)) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    let v = u64::from_le_bytes(read_all(loc, n).try_into().unwrap());
    assert_eq!(v, THREADS * EACH, "no update lost ({} conflicts retried)", conflicts.load(Ordering::Relaxed));
}

fn listing(loc: &dyn Location, prefix: &str) {
    let sub = join(prefix, "sub");
    for k in ["b", "a", "c"] {
        loc.put(&join(&sub, k), k.as_bytes(), Condition::Always).unwrap();
    }
    loc.put(&join(&sub, "deeper/x"), b"x", Condition::Always).unwrap();
    let names: Vec<(String, Kind, u64)> =
        loc.list(&sub).unwrap().into_iter().map(|e| (e.name, e.kind, e.len)).collect();
    let want = [("a", Kind::Object, 1), ("b", Kind::Object, 1), ("c", Kind::Object, 1), ("deeper", Kind::Prefix, 0)];
    let want: Vec<(String, Kind, u64)> = want.iter().map(|&(k, kind, l)| (join(&sub, k), kind, l)).collect();
    assert_eq!(names, want);
    let mut short = loc.names(&sub).unwrap();
    short.sort();
    assert_eq!(short, ["a", "b", "c", "deeper"]);
    assert_eq!(loc.stat(&sub).unwrap().unwrap().kind, Kind::Prefix);
    // (Object stores may not tell a prefix from nothing without a listing.)
    let kind = loc.open(&sub).unwrap_err().kind();
    assert!(matches!(kind, io::ErrorKind::InvalidInput | io::ErrorKind::NotFound), "a prefix is not an object: {kind}");
    let top: Vec<String> = loc.list(prefix).unwrap().into_iter().map(|e| e.name).collect();
    assert!(top.contains(&sub) && top.contains(&join(prefix, "ranges")), "{top:?}");
    assert!(top.windows(2).all(|w| w[0] < w[1]), "sorted: {top:?}");
    assert_eq!(loc.list(&join(prefix, "no-such-prefix")).unwrap_err().kind(), io::ErrorKind::NotFound);
    for k in ["a", "b", "c", "deeper/x"] {
        loc.remove(&join(&sub, k), None).unwrap();
    }
}

fn removal(loc: &dyn Location, n: &str) {
    let g = loc.put(n, b"v1", Condition::Always).unwrap();
    let g2 = loc.put(n, b"v2", Condition::Always).unwrap();
    assert!(is_conflict(loc.remove(n, Some(&g))), "a stale generation");
    assert_eq!(read_all(loc, n), b"v2");
    loc.remove(n, Some(&g2)).unwrap();
    assert!(loc.stat(n).unwrap().is_none());
    assert!(is_conflict(loc.remove(n, Some(&g2))), "gone already");
    loc.remove(n, None).unwrap();
}

fn names(loc: &dyn Location) {
    for bad in ["../escape", "/etc/passwd", "a//b", "", "a/../../b"] {
        assert_eq!(loc.open(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        match loc.put(bad, b"x", Condition::Always) {
            Err(PutError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}
