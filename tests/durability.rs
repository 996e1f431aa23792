//! Durability levels (`caterva::Durability`): the syncs each level makes,
//! counted through the I/O layer's fault plans (every sync of a persistent
//! array goes through it), and the all-or-nothing of a write at each level
//! under injected faults (each changing operation of the write failed,
//! died at, torn).

use std::path::{Path, PathBuf};

use caterva::testing::faults::{self, Fault, Op};
use caterva::{Array, Config, Context, Durability, Params, StorageParams};

const SHAPE: [i64; 2] = [40, 50];
const ITEM: usize = 8;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("caterva-durability-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ctx(checksums: bool, durability: Durability) -> Context {
    Context::new(Config { nthreads: 2, checksums, durability, ..Config::default() }).unwrap()
}

fn items(n: i64, seed: u64) -> Vec<u8> {
    (0..n as u64).flat_map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed).to_le_bytes()).collect()
}

fn storage(path: &Path, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![10, 50],
        blockshape: vec![5, 50],
        contiguous,
        urlpath: Some(path.to_string_lossy().into_owned()),
        metalayers: vec![],
    }
}

fn params() -> Params {
    Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: Some("<u8".into()) }
}

fn make(c: &Context, path: &Path, contiguous: bool) -> Array {
    Array::from_buffer(c, &params(), &storage(path, contiguous), &items(SHAPE[0] * SHAPE[1], 1)).unwrap()
}

/// Row `row` set to `seed`'s items (one chunk of the array is rewritten).
fn write_row(arr: &mut Array, row: i64, seed: u64) -> caterva::Result<()> {
    arr.set_slice_buffer(&[row, 0], &[row + 1, SHAPE[1]], &items(SHAPE[1], seed), &[1, SHAPE[1]])
}

/// The syncs (data or directory) and writes that `f` makes under `dir`.
fn count(dir: &Path, f: impl FnOnce()) -> (usize, usize) {
    let armed = faults::arm(dir, u64::MAX, Fault::Fail);
    f();
    let seen = armed.seen();
    (seen.iter().filter(|&&o| o == Op::Sync).count(), seen.iter().filter(|&&o| o == Op::Write).count())
}

#[test]
fn names_parse_and_the_default_is_full() {
    assert_eq!(Config::default().durability, Durability::Full);
    assert_eq!(Durability::default(), Durability::Full);
    for d in [Durability::Full, Durability::Normal, Durability::Process] {
        assert_eq!(d.name().parse::<Durability>().unwrap(), d);
        assert_eq!(d.to_string(), d.name());
    }
    let e = "flush".parse::<Durability>().unwrap_err();
    assert_eq!(e.kind(), caterva::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("'full', 'normal' or 'process'"), "{e}");
    assert!(!Durability::Process.syncs());
    assert_eq!(Durability::Normal.syncs(), Durability::Full.syncs());
}

/// A one-row write syncs the journal's data and name and the frame at
/// `Full`, nothing at `Process`; the data written is the same. A sparse
/// frame: the undo folder (where the journal keeps the chunk file it
/// rewrites, by a second name, instead of copying its bytes), the
/// journal's data and name, the index, the new chunk file and the
/// directory (the new file is renamed over the old). The original kept
/// for the journal goes once the journal's removal is durable: when the
/// handle is dropped (one sync more, then) or after the next write's
/// journal is named (which makes it so).
#[test]
fn syncs_of_a_one_row_write_per_level() {
    let dir = scratch("count");
    for contiguous in [true, false] {
        for checksums in [false, true] {
            for (level, want) in [(Durability::Full, if contiguous { 3 } else { 6 }), (Durability::Process, 0)] {
                let what = format!("contiguous {contiguous}, checksums {checksums}, {level}");
                let path = dir.join(format!("a-{contiguous}-{checksums}-{level}.b2nd"));
                drop(make(&ctx(checksums, Durability::Full), &path, contiguous));
                let mut arr = Array::open(&ctx(checksums, level), path.to_str().unwrap()).unwrap();
                assert_eq!(arr.durability(), level);
                let (syncs, writes) = count(&dir, || write_row(&mut arr, 13, 7).unwrap());
                assert!(writes > 0, "{what}: the write wrote nothing through the I/O layer");
                if Durability::Full.syncs() {
                    assert_eq!(syncs, want, "{what}: syncs of a one-row write");
                } else {
                    // CATERVA_JOURNAL_SYNC=0 is set: no level syncs.
                    assert_eq!(syncs, 0, "{what}: CATERVA_JOURNAL_SYNC=0 is set");
                }
                let undo = dir.join(format!("a-{contiguous}-{checksums}-{level}.b2nd.caterva-undo"));
                assert_eq!(
                    undo.exists(),
                    !contiguous,
                    "{what}: the original kept until the journal's removal is durable"
                );
                let (syncs, _) = count(&dir, || drop(arr));
                let want = usize::from(!contiguous && level == Durability::Full && Durability::Full.syncs());
                assert_eq!(syncs, want, "{what}: syncs when the handle is dropped");
                assert!(!undo.exists(), "{what}: the undo folder outlived the handle");
                let back = Array::open(&ctx(false, Durability::Full), path.to_str().unwrap()).unwrap();
                let mut row = vec![0u8; SHAPE[1] as usize * ITEM];
                back.get_slice_buffer(&[13, 0], &[14, SHAPE[1]], &mut row, &[1, SHAPE[1]]).unwrap();
                assert_eq!(row, items(SHAPE[1], 7), "{what}: the row written");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// At `Normal`, a run of one-row writes is one epoch: its first write
/// syncs the journal (data and name), a write that overwrites a chunk the
/// epoch started with syncs the journal once more, and the frame is synced
/// once, when the epoch ends (here: when the handle is dropped). Each write
/// is in the array, also as another handle sees it meanwhile.
#[test]
fn normal_syncs_a_run_of_writes_once() {
    if !Durability::Full.syncs() {
        return;
    }
    let dir = scratch("normal");
    for contiguous in [true, false] {
        let path = dir.join(format!("a-{contiguous}.b2nd"));
        drop(make(&ctx(false, Durability::Full), &path, contiguous));
        let mut arr = Array::open(&ctx(false, Durability::Normal), path.to_str().unwrap()).unwrap();
        let (syncs, _) = count(&dir, || {
            for i in 0..20 {
                write_row(&mut arr, i % 4, 100 + i as u64).unwrap();
            }
        });
        // 2 for the journal, and one more for each chunk saved (rows 0..4 lie in one chunk).
        assert!((2..=3).contains(&syncs), "contiguous {contiguous}: 20 writes made {syncs} syncs");
        assert!(caterva::testing::journal_path(path.to_str().unwrap()).exists());
        let other = Array::open(&ctx(false, Durability::Full), path.to_str().unwrap()).unwrap();
        let mut row = vec![0u8; SHAPE[1] as usize * ITEM];
        other.get_slice_buffer(&[3, 0], &[4, SHAPE[1]], &mut row, &[1, SHAPE[1]]).unwrap();
        assert_eq!(row, items(SHAPE[1], 119));
        drop(other);
        let (syncs, _) = count(&dir, || drop(arr));
        assert!(syncs >= 1, "contiguous {contiguous}: the epoch's end synced nothing");
        assert!(!caterva::testing::journal_path(path.to_str().unwrap()).exists());
        let back = Array::open(&ctx(false, Durability::Full), path.to_str().unwrap()).unwrap();
        back.get_slice_buffer(&[3, 0], &[4, SHAPE[1]], &mut row, &[1, SHAPE[1]]).unwrap();
        assert_eq!(row, items(SHAPE[1], 119));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes that create chunk files in a sparse frame sync its directory;
/// creation syncs at `Full` (the copy, then its rename) and not at `Process`.
#[test]
fn new_chunk_files_and_creation_sync_at_full_only() {
    if !Durability::Full.syncs() {
        return; // CATERVA_JOURNAL_SYNC=0: nothing syncs; the test above checks that.
    }
    let dir = scratch("files");
    let path = dir.join("a.b2nd");
    let mut arr = make(&ctx(false, Durability::Full), &path, false);
    // journal data and name; index, the new chunk file, the directory.
    let (syncs, _) = count(&dir, || arr.append(&items(10 * SHAPE[1], 3), 0).unwrap());
    assert_eq!(syncs, 5, "an append to a sparse frame");
    // A delete removes a chunk file: the directory again; the file is kept
    // by a second name until the journal's removal is durable.
    let (syncs, _) = count(&dir, || arr.delete(0, 40, 10).unwrap());
    assert_eq!(
        syncs, 5,
        "a delete of a chunk from a sparse frame (undo folder, journal data and name, index, directory)"
    );
    arr.set_durability(Durability::Process);
    let (syncs, writes) = count(&dir, || arr.append(&items(10 * SHAPE[1], 4), 0).unwrap());
    assert_eq!((syncs, writes > 0), (0, true), "an append at Process");
    drop(arr);
    for (level, synced) in [(Durability::Full, true), (Durability::Process, false)] {
        for contiguous in [true, false] {
            let p = dir.join(format!("new-{level}-{contiguous}.b2nd"));
            let (syncs, _) = count(&dir, || drop(make(&ctx(false, level), &p, contiguous)));
            assert_eq!(syncs > 0, synced, "creating at {level} (contiguous {contiguous}): {syncs} syncs");
            let a = Array::open(&ctx(false, Durability::Full), p.to_str().unwrap()).unwrap();
            assert_eq!(a.to_vec().unwrap(), items(SHAPE[0] * SHAPE[1], 1));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A handle that wrote without syncing and then syncs again makes the
/// whole array durable at its first synced write: a sparse frame's index
/// names files that earlier writes made, so all of them are synced then
/// (the journal's data and name, the index, each chunk file, the
/// directory), and only what it wrote from the next write on.
#[test]
fn the_first_full_write_after_process_ones_syncs_the_whole_directory() {
    if !Durability::Full.syncs() {
        return; // CATERVA_JOURNAL_SYNC=0: nothing syncs.
    }
    let dir = scratch("switch");
    let path = dir.join("a.b2nd");
    // Four chunk files, made without syncs, and a fifth appended so.
    let mut arr = make(&ctx(false, Durability::Process), &path, false);
    let (syncs, _) = count(&dir, || arr.append(&items(10 * SHAPE[1], 3), 0).unwrap());
    assert_eq!(syncs, 0);
    arr.set_durability(Durability::Full);
    let (syncs, _) = count(&dir, || write_row(&mut arr, 3, 4).unwrap());
    // (The undo folder, the journal, the index, each chunk file, the
    // directory.)
    assert_eq!(syncs, 1 + 2 + 1 + 5 + 1, "the first write at Full after writes at Process");
    let (syncs, _) = count(&dir, || write_row(&mut arr, 4, 5).unwrap());
    assert_eq!(syncs, 6, "the next one");
    // A frame file is synced whole by every write at Full anyway.
    let file = dir.join("f.b2frame");
    let mut f = make(&ctx(false, Durability::Process), &file, true);
    f.set_durability(Durability::Full);
    let (syncs, _) = count(&dir, || write_row(&mut f, 3, 4).unwrap());
    assert_eq!(syncs, 3, "a frame file");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The level is the handle's: set, kept across a reload (another handle
/// changed the array) and a replacement (a relayout), not stored in the file.
#[test]
fn the_level_belongs_to_the_handle() {
    let dir = scratch("handle");
    let path = dir.join("a.b2nd");
    let url = path.to_str().unwrap();
    let mut a = make(&ctx(false, Durability::Process), &path, true);
    assert_eq!(a.durability(), Durability::Process);
    a.set_durability(Durability::Full);
    assert_eq!(a.durability(), Durability::Full);
    // Another handle opens at its context's level.
    let mut b = Array::open(&ctx(false, Durability::Process), url).unwrap();
    assert_eq!(b.durability(), Durability::Process);
    assert_eq!(Array::open(&ctx(false, Durability::Full), url).unwrap().durability(), Durability::Full);
    b.append(&items(10 * SHAPE[1], 5), 0).unwrap();
    // `a` reloads what `b` did, and keeps its own level.
    assert!(a.refresh().unwrap());
    assert_eq!(a.durability(), Durability::Full);
    // A relayout writes a new array beside the path and takes its place.
    a.set_durability(Durability::Process);
    let mut c = Array::from_buffer(
        &ctx(false, Durability::Full),
        &Params { itemsize: ITEM, shape: vec![1, 50], dtype: None },
        &StorageParams { chunkshape: vec![1, 10], blockshape: vec![1, 5], ..storage(&dir.join("c.b2nd"), true) },
        &items(50, 6),
    )
    .unwrap();
    c.set_durability(Durability::Process);
    let (syncs, _) = count(&dir, || c.squeeze().unwrap());
    assert_eq!(c.shape(), &[50]);
    assert_eq!(c.durability(), Durability::Process, "after a relayout");
    assert_eq!(syncs, 0, "a relayout at Process");
    let _ = std::fs::remove_dir_all(&dir);
}

/// At both levels, every changing operation of a one-row write to a
/// checksummed array, failed, died at or torn, leaves the array in the
/// state before or after.
#[test]
fn a_write_is_all_or_nothing_under_faults_at_both_levels() {
    let dir = scratch("faults");
    let mut points = 0;
    for level in [Durability::Full, Durability::Process] {
        for contiguous in [true, false] {
            let pristine = dir.join(format!("pristine-{contiguous}.b2nd"));
            if !pristine.exists() {
                drop(make(&ctx(true, Durability::Full), &pristine, contiguous));
            }
            let path = dir.join(format!("a-{contiguous}.b2nd"));
            let state = |p: &Path| {
                let a = Array::open(&ctx(true, Durability::Full), p.to_str().unwrap()).unwrap();
                assert!(a.verify(&mut |_, _| {}).unwrap().is_empty(), "the array fails verification");
                (a.shape().to_vec(), a.to_vec().unwrap())
            };
            // One transaction of two journaled operations (the row's chunk,
            // then the checksum table): the second is announced unsynced.
            let write = |arr: &mut Array| write_row(arr, 21, 9);
            let attempt = |plan: Option<(u64, Fault)>| {
                copy_tree(&pristine, &path);
                let mut arr = Array::open(&ctx(true, level), path.to_str().unwrap()).unwrap();
                let armed = plan.map(|(at, f)| faults::arm(&dir, at, f));
                let r = write(&mut arr);
                drop(arr);
                (r, armed)
            };
            let old = state(&pristine);
            let (r, armed) = attempt(Some((u64::MAX, Fault::Fail)));
            r.unwrap();
            let ops = armed.unwrap().seen();
            let new = state(&path);
            assert_ne!(old, new);
            for (at, &op) in ops.iter().enumerate() {
                let modes: &[Fault] =
                    if op == Op::Write { &[Fault::Fail, Fault::Die, Fault::Tear] } else { &[Fault::Fail, Fault::Die] };
                for &fault in modes {
                    let what = format!("{level}, contiguous {contiguous}: {fault:?} at {at} of {} ({op:?})", ops.len());
                    let (r, armed) = attempt(Some((at as u64, fault)));
                    let armed = armed.unwrap();
                    assert!(armed.fired() || r.is_ok(), "{what}: the fault did not fire");
                    drop(armed);
                    let after = state(&path);
                    match r {
                        Ok(()) => assert!(after == new, "{what}: a write that succeeded is not there"),
                        Err(_) => assert!(after == old || after == new, "{what}: neither the old nor the new state"),
                    }
                    assert!(
                        !caterva::testing::journal_path(path.to_str().unwrap()).exists(),
                        "{what}: a journal is left after reopening"
                    );
                    points += 1;
                }
            }
        }
    }
    println!("{points} injection points");
    assert!(points > 40, "{points} injection points");
    let _ = std::fs::remove_dir_all(&dir);
}

fn copy_tree(from: &Path, to: &Path) {
    if to.is_dir() {
        std::fs::remove_dir_all(to).unwrap();
    } else if to.exists() {
        std::fs::remove_file(to).unwrap();
    }
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}
