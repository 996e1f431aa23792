//! Crash consistency under injected I/O faults: every changing file
//! operation of a write (ours and c-blosc2's, through the I/O layer's fault
//! plans, `caterva::testing::faults`) is made, in turn, to
//!
//! - fail and let the process go on (`Fail`: a full disk, a transient error):
//!   the write must report an error and leave the array as it was, in
//!   memory and on disk, or succeed;
//! - fail with every later operation (`Die`: the process died there), or
//!   write half of its bytes first (`Tear`: power cut in the middle of a
//!   write): reopened, the array must be in the state before the write or
//!   after it, its checksums valid, with nothing left beside it.
//!
//! Over the writes that change arrays (create over an array and at a free
//! path, set_slice, append, insert, delete, resize, metalayer and
//! vlmetalayer updates, enabling checksums, save over an array) on
//! contiguous and sparse arrays. The test prints how many injection points
//! it covered. Syncs are on (as by default), so they are injection points too.

mod common;

use std::path::Path;

use caterva::testing::faults::{self, Change, Fault, Op};
use caterva::{Array, Config, Context, Durability, Metalayer, Params, StorageParams};

const SHAPE: [i64; 2] = [30, 17];
const ITEM: usize = 4;

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
}

fn ctx_at(checksums: bool, durability: Durability) -> Context {
    Context::new(Config { nthreads: 2, checksums, durability, ..Config::default() }).unwrap()
}

fn items(n: i64, seed: u32) -> Vec<u8> {
    (0..n as u32).flat_map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()).collect()
}

fn storage(urlpath: &Path, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![8, 6],
        blockshape: vec![4, 3],
        contiguous,
        urlpath: Some(urlpath.to_string_lossy().into_owned()),
        metalayers: vec![Metalayer { name: "user".into(), content: vec![1; 8] }],
    }
}

fn params(shape: &[i64]) -> Params {
    Params { itemsize: ITEM, shape: shape.to_vec(), dtype: Some("<u4".into()) }
}

/// Everything a reader can see of an array.
#[derive(Clone, PartialEq)]
enum State {
    Absent,
    Array { shape: Vec<i64>, data: Vec<u8>, user: Vec<u8>, log: Option<Vec<u8>>, checksums: bool },
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::hash::{Hash, Hasher};
        match self {
            State::Absent => write!(f, "no array"),
            State::Array { shape, data, user, log, checksums } => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                data.hash(&mut h);
                let log = log.as_ref().map(Vec::len);
                write!(
                    f,
                    "shape {shape:?}, data #{:x}, user {user:?}, log of {log:?} bytes, checksums {checksums}",
                    h.finish()
                )
            }
        }
    }
}

fn state_of(arr: &Array) -> State {
    try_state_of(arr).unwrap_or_else(|e| panic!("{e}"))
}

fn try_state_of(arr: &Array) -> Result<State, String> {
    let problems = arr.verify(&mut |_, _| {}).map_err(|e| format!("verifying: {e}"))?;
    if !problems.is_empty() {
        return Err(format!("the array fails verification: {problems:?}"));
    }
    Ok(State::Array {
        shape: arr.shape().to_vec(),
        data: arr.to_vec().map_err(|e| format!("reading: {e}"))?,
        user: arr.meta_get("user").map_err(|e| format!("reading the metalayer: {e}"))?,
        log: arr.vlmeta_get("log").ok(),
        checksums: arr.has_checksums(),
    })
}

fn reopened(path: &Path) -> State {
    // Opening also clears what a killed writer left beside the path.
    let opened = Array::open(&ctx(false), path.to_str().unwrap());
    if std::fs::symlink_metadata(path).is_err() {
        assert!(opened.is_err(), "an array opens at an empty path");
        return State::Absent;
    }
    state_of(&opened.unwrap_or_else(|e| panic!("reopening: {e}")))
}

fn copy_tree(from: &Path, to: &Path) {
    remove_tree(to);
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

fn remove_tree(p: &Path) {
    if p.is_dir() {
        std::fs::remove_dir_all(p).unwrap();
    } else if p.exists() {
        std::fs::remove_file(p).unwrap();
    }
}

/// What is in `dir` besides `keep` and lock files.
fn leftovers(dir: &Path, keep: &[&Path]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| !keep.iter().any(|k| e.path() == *k))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".caterva-lock"))
        .collect()
}

/// A write to test: it runs on the array at `path` (opened unless the
/// write makes it), with the other path of the case free for it to use.
struct Write {
    name: &'static str,
    /// The array it starts from keeps checksums.
    checksums: bool,
    /// Whether an array is at the path before the write.
    existing: bool,
    run: fn(&Context, &Path, bool, Option<&mut Array>) -> caterva::Result<()>,
}

fn on(arr: Option<&mut Array>) -> &mut Array {
    arr.expect("an opened array")
}

fn writes() -> Vec<Write> {
    vec![
        Write {
            name: "create over an array",
            checksums: true,
            existing: true,
            run: |ctx, p, c, _| Array::from_buffer(ctx, &params(&[12, 20]), &storage(p, c), &items(240, 7)).map(drop),
        },
        Write {
            name: "create at a free path",
            checksums: true,
            existing: false,
            run: |ctx, p, c, _| Array::from_buffer(ctx, &params(&SHAPE), &storage(p, c), &items(510, 9)).map(drop),
        },
        Write {
            name: "save over an array",
            checksums: true,
            existing: true,
            run: |ctx, p, c, _| {
                let st = StorageParams { urlpath: None, ..storage(p, c) };
                let mem = Array::from_buffer(ctx, &params(&[9, 9]), &st, &items(81, 3))?;
                mem.save(p.to_str().unwrap())
            },
        },
        Write {
            name: "set_slice",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).set_slice_buffer(&[2, 3], &[20, 15], &items(18 * 12, 5), &[18, 12]),
        },
        Write {
            name: "append",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).append(&items(5 * 17, 11), 0),
        },
        Write {
            name: "insert",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).insert(&items(30 * 4, 13), 1, 5),
        },
        Write { name: "delete", checksums: true, existing: true, run: |_, _, _, a| on(a).delete(1, 4, 6) },
        Write {
            name: "resize (grow)",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).resize(&[41, 20], None),
        },
        Write {
            name: "resize (grow by 80 chunks of zeros)",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).resize(&[30, 17 + 6 * 20], None),
        },
        Write {
            name: "append (18 chunks of data)",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).append(&items(48 * 17, 17), 0),
        },
        Write {
            name: "resize (shrink)",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).resize(&[13, 10], None),
        },
        Write {
            name: "metalayer update",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).meta_update("user", &[2; 8]),
        },
        Write {
            name: "vlmetalayer update",
            checksums: true,
            existing: true,
            run: |_, _, _, a| on(a).vlmeta_update("log", &[5; 3000]),
        },
        Write {
            name: "enable checksums",
            checksums: false,
            existing: true,
            run: |_, _, _, a| on(a).enable_checksums(),
        },
    ]
}

/// The array a write starts from, written to `path`.
fn base(path: &Path, contiguous: bool, checksums: bool) {
    let mut arr =
        Array::from_buffer(&ctx(checksums), &params(&SHAPE), &storage(path, contiguous), &items(510, 1)).unwrap();
    arr.vlmeta_add("log", b"first").unwrap();
}

#[derive(Default)]
struct Tally {
    /// Operations, by kind.
    kinds: std::collections::BTreeMap<String, usize>,
    points: usize,
    old: usize,
    new: usize,
}

/// Run `w` with `plan` armed (if any) on a fresh copy of `pristine` at
/// `path`, and return its result and the array handle it used.
fn attempt(
    w: &Write,
    dir: &Path,
    pristine: &Path,
    path: &Path,
    contiguous: bool,
    plan: Option<(u64, Fault)>,
) -> (caterva::Result<()>, Option<faults::Armed>, Option<Array>) {
    remove_tree(path);
    if w.existing {
        copy_tree(pristine, path);
    }
    let ctx = ctx(w.checksums);
    let (r, arr) = run_write(w, &ctx, path, contiguous, || plan.map(|(at, fault)| faults::arm(dir, at, fault)));
    (r.0, r.1, arr)
}

/// Open the array at `path` if `w` needs a handle, call `arm`, then run `w`.
fn run_write<T>(
    w: &Write,
    ctx: &Context,
    path: &Path,
    contiguous: bool,
    arm: impl FnOnce() -> T,
) -> ((caterva::Result<()>, T), Option<Array>) {
    let mut arr = if w.existing && w.name != "create over an array" && w.name != "save over an array" {
        Some(Array::open(ctx, path.to_str().unwrap()).unwrap())
    } else {
        None
    };
    let armed = arm();
    let r = (w.run)(ctx, path, contiguous, arr.as_mut());
    ((r, armed), arr)
}

/// The places of a case of `w`: its directory (`root/<prefix><write>-<storage>`),
/// the array's extension, the array the write starts from (made once per
/// root), and the array's path in the directory.
fn case(
    w: &Write,
    contiguous: bool,
    root: &Path,
    prefix: &str,
) -> (std::path::PathBuf, &'static str, std::path::PathBuf, std::path::PathBuf) {
    let storage = if contiguous { "file" } else { "dir" };
    let dir = root.join(format!("{prefix}{}-{storage}", w.name.replace([' ', '(', ')'], "_")));
    std::fs::create_dir_all(&dir).unwrap();
    let ext = if contiguous { "b2frame" } else { "b2nd" };
    let pristine = root.join(format!("pristine-{}-{}.{ext}", w.checksums, contiguous));
    if !pristine.exists() {
        base(&pristine, contiguous, w.checksums);
    }
    let path = dir.join(format!("a.{ext}"));
    (dir, ext, pristine, path)
}

fn check_write(w: &Write, contiguous: bool, root: &Path) -> Tally {
    let (dir, ext, pristine, path) = case(w, contiguous, root, "");
    let old = if w.existing { reopened(&pristine) } else { State::Absent };

    // A dry run counts the operations and gives the state after.
    let (r, armed, arr) = attempt(w, &dir, &pristine, &path, contiguous, Some((u64::MAX, Fault::Fail)));
    r.unwrap_or_else(|e| panic!("{}: the write fails without faults: {e}", w.name));
    drop(arr);
    let ops = armed.unwrap().seen();
    let new = reopened(&path);
    assert_ne!(old, new, "{}: the write changes nothing", w.name);
    assert!(!ops.is_empty(), "{}: no I/O went through the fault layer", w.name);

    let mut t = Tally::default();
    for at in 0..ops.len() as u64 {
        let kind = ops[at as usize];
        *t.kinds.entry(format!("{kind:?}")).or_default() += 1;
        // Tearing differs from dying only in a write.
        let modes: &[Fault] =
            if kind == Op::Write { &[Fault::Fail, Fault::Die, Fault::Tear] } else { &[Fault::Fail, Fault::Die] };
        for &fault in modes {
            let what =
                format!("{} ({}), {fault:?} at operation {at} of {} ({:?})", w.name, ext, ops.len(), ops[at as usize]);
            let (r, armed, arr) = attempt(w, &dir, &pristine, &path, contiguous, Some((at, fault)));
            let armed = armed.unwrap();
            assert!(armed.fired() || r.is_ok(), "{what}: the fault did not fire");
            // A handle that lived through a transient failure shows what is on disk.
            let shown = match (fault, arr.as_ref()) {
                (Fault::Fail, Some(a)) => Some(try_state_of(a).unwrap_or_else(|e| panic!("{what}: the handle: {e}"))),
                _ => None,
            };
            drop(arr);
            drop(armed);
            let after = reopened(&path);
            match &r {
                Ok(()) => assert_eq!(after, new, "{what}: a write that succeeded is not there"),
                Err(_) => assert!(after == old || after == new, "{what}: reopened in neither state: {after:?}"),
            }
            if let Some(shown) = shown {
                assert_eq!(shown, after, "{what}: the handle shows another state than the array reopened");
            }
            if after == old {
                t.old += 1;
            } else {
                t.new += 1;
            }
            let left = leftovers(&dir, &[&path]);
            assert!(left.is_empty(), "{what}: left beside the array: {left:?}");
            t.points += 1;
        }
    }
    t
}

#[test]
fn every_injected_io_fault_leaves_the_old_or_the_new_state() {
    let root = std::env::temp_dir().join(format!("caterva-faults-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let (mut total, mut kinds) = (0, std::collections::BTreeMap::<String, usize>::new());
    println!("{:<24} {:>7} {:>9} {:>9} {:>9}", "write", "storage", "points", "old", "new");
    for contiguous in [true, false] {
        for w in writes() {
            let t = check_write(&w, contiguous, &root);
            println!(
                "{:<24} {:>7} {:>9} {:>9} {:>9}",
                w.name,
                if contiguous { "file" } else { "sparse" },
                t.points,
                t.old,
                t.new
            );
            total += t.points;
            for (k, n) in t.kinds {
                *kinds.entry(k).or_default() += n;
            }
        }
    }
    println!("{total} injection points: each changing I/O operation of each write failed, died at, and (writes) torn");
    println!("operations by kind: {kinds:?}");
    std::fs::remove_dir_all(&root).unwrap();
}

// ---------------------------------------------------------------------------
// Power loss.
//
// A power cut keeps what was synced and any part of what was not. The I/O
// layer's recorder (`faults::record`) gives every change a write made, in
// order: creations, writes (with their bytes), truncations, renames,
// hard links, removals, and the syncs of files (`fdatasync`) and directories (`fsync`).
// From the files as they were before the writes (all durable) and that
// list, `crash_states` builds the disks a power cut at each point of the
// list may leave, as a file system that keeps only what POSIX promises
// does:
//
// - a change to a file's data or length is kept if the file (under the name
//   it has then, renames followed) was synced after it and before the cut;
// - a creation, rename or removal is kept if its directory was synced after
//   it (a new file's entry needs its directory synced; a rename, the
//   directories on both sides);
// - every other change made before the cut may be kept or lost, in any
//   combination, independently of its order, and a write may be torn (its
//   first half kept): the states tried are none and all of them, all but
//   one and only one of them (each), every prefix in order, every prefix
//   ended by a torn write, and random subsets. A change to a file whose
//   creation was lost is lost with it.
//
// Not modelled: c-blosc2's own `mkdir` of a new sparse frame's directory and
// its own removals of chunk files (outside the I/O layer; a directory made
// is taken as kept, a removal as lost), and torn directory operations.

/// A disk as the model sees it: names (relative to the case's directory)
/// of inodes, and the inodes' content.
#[derive(Clone, Default, Hash)]
struct Disk {
    names: std::collections::BTreeMap<std::path::PathBuf, u64>,
    data: std::collections::BTreeMap<u64, Vec<u8>>,
}

/// The files under `dir`, each also hard-linked into `keep` as `<inode>`.
fn snapshot(dir: &Path, keep: &Path) -> Disk {
    fn walk(root: &Path, at: &Path, keep: &Path, out: &mut Disk) {
        for e in std::fs::read_dir(at).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, keep, out);
            } else {
                use std::os::unix::fs::MetadataExt;
                let ino = e.metadata().unwrap().ino();
                let link = keep.join(ino.to_string());
                if !link.exists() {
                    std::fs::hard_link(&p, link).unwrap();
                }
                out.names.insert(p.strip_prefix(root).unwrap().to_owned(), ino);
                out.data.insert(ino, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = Disk::default();
    walk(dir, dir, keep, &mut out);
    out
}

/// Put `disk` together in `dir` from the inodes kept in `keep`: each file
/// is the inode it was when written, as after a real power cut (journals
/// name the inode of the file they belong to).
fn materialize(disk: &Disk, dir: &Path, keep: &Path) {
    remove_tree(dir);
    std::fs::create_dir_all(dir).unwrap();
    for (rel, ino) in &disk.names {
        let inode = keep.join(ino.to_string());
        std::fs::write(&inode, disk.data.get(ino).map_or(&[][..], Vec::as_slice)).unwrap();
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::hard_link(&inode, p).unwrap();
    }
}

fn parent(p: &Path) -> &Path {
    p.parent().unwrap_or(Path::new(""))
}

/// Apply `c` (paths under `base`) to `disk`; `torn` keeps half of a write.
fn apply(disk: &mut Disk, base: &Path, c: &Change, torn: bool) {
    let rel =
        |p: &Path| p.strip_prefix(base).unwrap_or_else(|_| panic!("{} is outside the case", p.display())).to_owned();
    match c {
        Change::Create { path, ino, truncate } => {
            disk.names.insert(rel(path), *ino);
            let f = disk.data.entry(*ino).or_default();
            if *truncate {
                f.clear();
            }
        }
        Change::Write { ino, at, bytes, .. } => {
            let f = disk.data.entry(*ino).or_default();
            let bytes = if torn { &bytes[..bytes.len() / 2] } else { &bytes[..] };
            let at = *at as usize;
            if f.len() < at + bytes.len() {
                f.resize(at + bytes.len(), 0);
            }
            f[at..at + bytes.len()].copy_from_slice(bytes);
        }
        Change::Truncate { ino, len, .. } => disk.data.entry(*ino).or_default().resize(*len as usize, 0),
        Change::Rename { from, to } => {
            let (from, to) = (rel(from), rel(to));
            if let Some(ino) = disk.names.remove(&from) {
                disk.names.insert(to, ino);
            } else {
                // A directory: what was at `to` goes (renames replace only
                // empty ones, or ones renamed away before).
                disk.names.retain(|k, _| !k.starts_with(&to));
                let moved: Vec<_> = disk.names.keys().filter(|k| k.starts_with(&from)).cloned().collect();
                for k in moved {
                    let ino = disk.names.remove(&k).unwrap();
                    disk.names.insert(to.join(k.strip_prefix(&from).unwrap()), ino);
                }
            }
        }
        Change::Remove(path) => {
            let p = rel(path);
            disk.names.retain(|k, _| !k.starts_with(&p));
        }
        Change::Link { from, to } => {
            if let Some(&ino) = disk.names.get(&rel(from)) {
                disk.names.insert(rel(to), ino);
            }
        }
        Change::SyncFile { .. } | Change::SyncDir(_) => {}
    }
}

fn is_sync(c: &Change) -> bool {
    matches!(c, Change::SyncFile { .. } | Change::SyncDir(_))
}

/// Which of the first `p` changes a power cut after them must keep:
/// data by a later sync of the inode, names by a later sync of their
/// directory (a truncation on creation of a file that was there, by a sync
/// of the file).
fn kept_for_sure(changes: &[Change], p: usize, existed: &[bool]) -> Vec<bool> {
    let dir_synced =
        |dir: &Path, i: usize| changes[i + 1..p].iter().any(|c| matches!(c, Change::SyncDir(d) if d == dir));
    let file_synced = |ino: u64, i: usize| {
        changes[i + 1..p].iter().any(|c| matches!(c, Change::SyncFile { ino: n, .. } if *n == ino))
    };
    (0..p)
        .map(|i| match &changes[i] {
            Change::Create { path, ino, .. } => {
                if existed[i] {
                    file_synced(*ino, i)
                } else {
                    dir_synced(parent(path), i)
                }
            }
            Change::Write { ino, .. } | Change::Truncate { ino, .. } => file_synced(*ino, i),
            Change::Rename { from, to } => {
                dir_synced(parent(to), i) && (parent(from) == parent(to) || dir_synced(parent(from), i))
            }
            Change::Remove(path) | Change::Link { to: path, .. } => dir_synced(parent(path), i),
            Change::SyncFile { .. } | Change::SyncDir(_) => true,
        })
        .collect()
}

/// The disks a power cut after the first `p` changes may leave, each with
/// how it was made.
fn crash_states(d0: &Disk, base: &Path, changes: &[Change], p: usize, seed: &mut u64) -> Vec<(String, Disk)> {
    // Whether the file a creation names was there (under that name) before it.
    let mut existed = Vec::with_capacity(changes.len());
    let mut disk = d0.clone();
    for c in changes {
        existed.push(match c {
            Change::Create { path, ino, .. } => disk.names.get(path.strip_prefix(base).unwrap()) == Some(ino),
            _ => true,
        });
        apply(&mut disk, base, c, false);
    }
    let sure = kept_for_sure(changes, p, &existed);
    let free: Vec<usize> = (0..p).filter(|&i| !sure[i] && !is_sync(&changes[i])).collect();
    let build = |keep: &dyn Fn(usize) -> bool, torn: Option<usize>| -> Disk {
        let mut d = d0.clone();
        for (i, c) in changes[..p].iter().enumerate() {
            if !is_sync(c) && (sure[i] || keep(i) || torn == Some(i)) {
                apply(&mut d, base, c, torn == Some(i));
            }
        }
        d
    };
    // Which free changes to drop or keep alone, where to end an in-order
    // prefix, which write to tear: the last few (the cut falls in the middle
    // of what was being written) and a few at random, to bound the states
    // per point.
    let mut next = || {
        *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        *seed >> 33
    };
    let mut some = |from: &[usize], k: usize| -> Vec<usize> {
        let mut picked: Vec<usize> = from.iter().rev().take(k / 2).copied().collect();
        while picked.len() < k.min(from.len()) {
            let f = from[next() as usize % from.len()];
            if !picked.contains(&f) {
                picked.push(f);
            }
        }
        picked
    };
    let mut out = vec![("none of the unsynced changes".to_owned(), build(&|_| false, None))];
    out.push(("all of them".to_owned(), build(&|_| true, None)));
    for f in some(&free, 4) {
        out.push((format!("all but change {f}"), build(&|i| i != f, None)));
        out.push((format!("only change {f}"), build(&|i| i == f, None)));
    }
    let ends: Vec<usize> = (1..free.len()).collect();
    for k in some(&ends, 4) {
        out.push((format!("the first {k} in order"), build(&|i| free[..k].contains(&i), None)));
    }
    let writes: Vec<usize> = (0..free.len()).filter(|&k| matches!(changes[free[k]], Change::Write { .. })).collect();
    for k in some(&writes, 4) {
        let f = free[k];
        out.push((
            format!("the first {k} in order, then change {f} torn"),
            build(&|i| free[..k].contains(&i), Some(f)),
        ));
    }
    for r in 0..3 {
        let pick: std::collections::BTreeSet<usize> = free.iter().copied().filter(|_| next() & 1 == 1).collect();
        out.push((format!("random subset {r}: {pick:?}"), build(&|i| pick.contains(&i), None)));
    }
    out
}

/// What an array at `path` opens to, or why it does not.
fn observe(path: &Path) -> Result<State, String> {
    match Array::open(&ctx(false), path.to_str().unwrap()) {
        Ok(a) => try_state_of(&a),
        Err(_) if std::fs::symlink_metadata(path).is_err() => Ok(State::Absent),
        Err(e) => Err(format!("opening: {e}")),
    }
}

#[derive(Default)]
struct Cut {
    points: usize,
    states: usize,
    before: usize,
    after: usize,
    /// Opened, whole, to neither.
    other: usize,
    /// Failed to open, to read or to verify.
    broken: usize,
    /// Distinct disks opened.
    opened: usize,
}

/// Power cuts over `w` followed by a one-item write (W2) through another
/// handle, at `durability`; at `Normal`, through the same handle if `w` had
/// one, so that both are writes of one epoch, which ends when the handle
/// is dropped.
fn power_cuts(w: &Write, contiguous: bool, durability: Durability, root: &Path) -> Cut {
    let level = format!("{durability:?}").to_lowercase();
    let storage = if contiguous { "file" } else { "dir" };
    let (dir, ext, pristine, path) = case(w, contiguous, root, &format!("{level}-"));
    remove_tree(&path);
    if w.existing {
        copy_tree(&pristine, &path);
    }
    let s0 = if w.existing { reopened(&pristine) } else { State::Absent };
    let keep = root.join(format!("keep-{}", dir.file_name().unwrap().to_string_lossy()));
    remove_tree(&keep);
    std::fs::create_dir_all(&keep).unwrap();
    let d0 = snapshot(&dir, &keep);
    let ctx = ctx_at(w.checksums, durability);
    let ((r, rec), arr) = run_write(w, &ctx, &path, contiguous, || faults::record(&dir, Some(&keep)));
    r.unwrap_or_else(|e| panic!("{}: {e}", w.name));
    let epoch = arr.filter(|_| durability == Durability::Normal);
    let b = rec.changes().len();
    let s1 = reopened(&path);
    let mut h = epoch.unwrap_or_else(|| Array::open(&ctx, path.to_str().unwrap()).unwrap());
    h.set_slice_buffer(&[0, 0], &[1, 1], &0xdead_beef_u32.to_le_bytes(), &[1, 1]).unwrap();
    drop(h);
    let changes = rec.changes();
    drop(rec);
    let s2 = reopened(&path);
    let what = format!("{} ({storage}, {level})", w.name);
    assert!(b > 0 && changes.len() > b, "{what}: nothing recorded");

    // The recorder saw everything that matters: the model's disk after all
    // changes opens as the real one does.
    let mut all = d0.clone();
    for c in &changes {
        apply(&mut all, &dir, c, false);
    }
    let check = root.join("model-check");
    materialize(&all, &check, &keep);
    assert_eq!(
        observe(&check.join(format!("a.{ext}"))),
        Ok(s2.clone()),
        "{what}: the model of the changes differs from the disk"
    );

    let mut cut = Cut::default();
    let mut seen = std::collections::HashMap::<u64, Result<State, String>>::new();
    let mut seed = 0x5eed_u64;
    let crash = root.join("crash");
    let _restart = faults::pretend_restarted(&crash);
    // Every third point, and every point around the end of each write, unless
    // CATERVA_POWER_CUTS=all (every point: 3 times the time).
    let every = std::env::var("CATERVA_POWER_CUTS").is_ok_and(|v| v == "all");
    let n = changes.len();
    for p in (0..=n).filter(|&p| every || p % 3 == 0 || p + 6 >= n || p.abs_diff(b) <= 3) {
        cut.points += 1;
        // Allowed: before or after the last returned write, or the one in flight;
        // once W2 synced, W1 must be there (every returned write but the last).
        // W1's journal is removed unsynced; W2's first sync of the directory
        // holding it makes that durable (not a sync of another directory:
        // the undo folder's, before W2's journal is named).
        let synced_in_w2 = changes[b..p.max(b)].iter().any(|c| matches!(c, Change::SyncDir(d) if *d == dir));
        // At `Normal`, any state after a returned write of the epoch, or before it.
        let allowed: Vec<&State> = if durability == Durability::Normal {
            vec![&s0, &s1, &s2]
        } else if p <= b {
            vec![&s0, &s1]
        } else if synced_in_w2 {
            vec![&s1, &s2]
        } else {
            vec![&s0, &s1, &s2]
        };
        for (how, disk) in crash_states(&d0, &dir, &changes, p, &mut seed) {
            use std::hash::{Hash, Hasher};
            let mut hsh = std::collections::hash_map::DefaultHasher::new();
            disk.hash(&mut hsh);
            let got = seen
                .entry(hsh.finish())
                .or_insert_with(|| {
                    cut.opened += 1;
                    materialize(&disk, &crash, &keep);
                    observe(&crash.join(format!("a.{ext}")))
                })
                .clone();
            cut.states += 1;
            match &got {
                Ok(s) if allowed.contains(&s) => {
                    if *s == s0 {
                        cut.before += 1;
                    } else {
                        cut.after += 1;
                    }
                }
                Ok(s) => {
                    cut.other += 1;
                    if durability != Durability::Process {
                        panic!("{what}: a power cut after change {p} of {} ({how}) leaves {s:?}, none of {allowed:?}\nchanges: {}", changes.len(), describe(&changes));
                    }
                }
                Err(e) => {
                    cut.broken += 1;
                    if durability != Durability::Process {
                        panic!(
                            "{what}: a power cut after change {p} of {} ({how}) leaves an array that {e}\nchanges: {}",
                            changes.len(),
                            describe(&changes)
                        );
                    }
                }
            }
        }
    }
    remove_tree(&dir);
    remove_tree(&keep);
    cut
}

fn describe(changes: &[Change]) -> String {
    changes
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            Change::Write { path, ino, at, bytes } => {
                format!("\n  {i}: write {} bytes at {at} of {} (inode {ino})", bytes.len(), path.display())
            }
            c => format!("\n  {i}: {c:?}"),
        })
        .collect()
}

#[test]
fn every_power_cut_leaves_a_write_boundary_at_full_durability() {
    let root = std::env::temp_dir().join(format!("caterva-power-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    println!(
        "{:<36} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "write (then W2)", "storage", "level", "cuts", "states", "before", "after", "other", "broken"
    );
    let mut totals = [0usize; 3];
    for (i, durability) in [Durability::Full, Durability::Normal, Durability::Process].into_iter().enumerate() {
        let mut level = Cut::default();
        for contiguous in [true, false] {
            // Without syncs, a few kinds of write show what a power cut does.
            let some = ["create over an array", "set_slice", "append", "resize (shrink)", "vlmetalayer update"];
            for w in writes().into_iter().filter(|w| durability != Durability::Process || some.contains(&w.name)) {
                let c = power_cuts(&w, contiguous, durability, &root);
                println!(
                    "{:<36} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
                    w.name,
                    if contiguous { "file" } else { "sparse" },
                    format!("{durability:?}").to_lowercase(),
                    c.points,
                    c.states,
                    c.before,
                    c.after,
                    c.other,
                    c.broken
                );
                level.points += c.points;
                level.states += c.states;
                level.other += c.other;
                level.broken += c.broken;
                level.opened += c.opened;
            }
        }
        println!(
            "{durability:?}: {} power cuts, {} crash states ({} distinct disks): {} opened whole to neither side, {} did not open or read",
            level.points, level.states, level.opened, level.other, level.broken
        );
        totals[i] = level.other + level.broken;
    }
    // The model has teeth: without syncs (`process`), power cuts do leave
    // arrays that are neither side of a write, or do not open.
    assert_eq!(totals[..2], [0, 0]);
    assert!(totals[2] > 0, "no power cut harms an array written without syncs: the model keeps too much");
    std::fs::remove_dir_all(&root).unwrap();
}
