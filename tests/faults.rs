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

use caterva::testing::faults::{self, Fault, Op};
use caterva::{Array, Config, Context, Metalayer, Params, StorageParams};

const SHAPE: [i64; 2] = [30, 17];
const ITEM: usize = 4;

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
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
#[derive(PartialEq)]
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
    assert!(arr.verify(&mut |_, _| {}).unwrap().is_empty(), "the array fails verification");
    State::Array {
        shape: arr.shape().to_vec(),
        data: arr.to_vec().unwrap(),
        user: arr.meta_get("user").unwrap(),
        log: arr.vlmeta_get("log").ok(),
        checksums: arr.has_checksums(),
    }
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
            run: |_, _, _, a| on(a).set_slice_buffer(&items(18 * 12, 5), &[18, 12], &[2, 3], &[20, 15]),
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
    let mut arr = if w.existing && w.name != "create over an array" && w.name != "save over an array" {
        Some(Array::open(&ctx, path.to_str().unwrap()).unwrap())
    } else {
        None
    };
    let armed = plan.map(|(at, fault)| faults::arm(dir, at, fault));
    let r = (w.run)(&ctx, path, contiguous, arr.as_mut());
    (r, armed, arr)
}

fn check_write(w: &Write, contiguous: bool, root: &Path) -> Tally {
    let dir =
        root.join(format!("{}-{}", w.name.replace([' ', '(', ')'], "_"), if contiguous { "file" } else { "dir" }));
    std::fs::create_dir_all(&dir).unwrap();
    let ext = if contiguous { "b2frame" } else { "b2nd" };
    let pristine = root.join(format!("pristine-{}-{}.{ext}", w.checksums, contiguous));
    if !pristine.exists() {
        base(&pristine, contiguous, w.checksums);
    }
    let path = dir.join(format!("a.{ext}"));
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
                (Fault::Fail, Some(a)) => Some(state_of(a)),
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
