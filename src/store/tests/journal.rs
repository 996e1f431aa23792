use std::collections::BTreeMap;

use super::records::{parse, read_record, stale_path, undo_folder};
use super::*;
use crate::blosc2::{repeat_chunk, CCtx, CParams, Compression};
use crate::store::fs::OLD_SUFFIX;
use crate::store::Store;
use crate::{Array, Config, Context, Params, StorageParams};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("caterva-journal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A 20x10 array of 4-byte items in 8x6 chunks, with a vlmetalayer.
fn make(url: &str, contiguous: bool, seed: u64) -> Array {
    let params = Params { itemsize: 4, shape: vec![20, 10], dtype: None };
    let storage = StorageParams {
        chunkshape: vec![8, 6],
        blockshape: vec![4, 3],
        contiguous,
        urlpath: Some(url.to_owned()),
        ..Default::default()
    };
    let mut a = Array::from_buffer(&ctx(), &params, &storage, &noise(800, seed)).unwrap();
    a.vlmeta_add("note", b"first").unwrap();
    a
}

/// Every byte an array has on disk, by file.
fn snapshot(url: &str) -> BTreeMap<String, Vec<u8>> {
    let p = Path::new(url);
    if p.is_file() {
        return BTreeMap::from([(String::new(), std::fs::read(p).unwrap())]);
    }
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// Start a write with every kind of change and die in the middle: the
/// super-chunk is dropped with its journal open, as a killed process leaves it.
fn crash_mid_write(url: &str) {
    let arr = Array::open(&ctx(), url).unwrap();
    let (chunk_nbytes, block_nbytes) = (arr.geometry().chunk_nbytes(), arr.geometry().block_nbytes());
    drop(arr);
    let comp = Compression::default();
    let small = repeat_chunk(&comp, 4, block_nbytes, chunk_nbytes, &[1, 2, 3, 4]).unwrap();
    let big = CCtx::new(&comp, 4, block_nbytes, 1).unwrap().compress(&noise(chunk_nbytes, 9)).unwrap();
    let mut store = Store::open(url).unwrap();
    let r = store.write(|tx| {
        tx.update_chunks(&[(0, &small)])?; // fits: written over the old chunk
        tx.update_chunks(&[(2, &big)])?;
        tx.append_chunk(&big)?;
        tx.delete_chunk(1)?;
        tx.reorder(&[4, 0, 1, 2, 3, 5])?;
        tx.vlmeta_put("note", b"a longer note than before", true, &CParams::default())?;
        tx.crash();
        Err::<(), _>(Error::blosc("killed", None))
    });
    assert!(r.is_err());
}

fn both(name: &str, test: impl Fn(&str, bool)) {
    let dir = scratch(name);
    for (file, contiguous) in [("a.b2frame", true), ("a.b2nd", false)] {
        test(&dir.join(file).to_string_lossy(), contiguous);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a reader sees of an array: its items and its vlmetalayer.
type Content = (Vec<u8>, Vec<u8>);

fn content(url: &str) -> Content {
    let a = Array::open(&ctx(), url).unwrap();
    (a.to_vec().unwrap(), a.vlmeta_get("note").unwrap())
}

#[test]
fn rollback_restores_every_byte() {
    both("rollback", |url, contiguous| {
        make(url, contiguous, 1);
        let (before, seen) = (snapshot(url), content(url));
        crash_mid_write(url);
        assert_ne!(snapshot(url), before, "the write changed nothing");
        let journal = std::fs::read(journal_path(url)).unwrap();
        let records = parse(&journal).unwrap();
        // Contiguous: header, tail, and chunks 0 and 2, overwritten in place
        // (the new ones fit); sparse: the files of chunks 0, 2 and 1, kept
        // by a second name (not copied). The first change's save goes in
        // with the base records.
        let saves = |tag| records.iter().filter(|r| r.tag == tag).count();
        assert_eq!(
            (saves(BYTES), saves(CHUNK_FILE), saves(CHUNK_LINK)),
            if contiguous { (4, 0, 0) } else { (0, 0, 3) }
        );
        let base_end = records.iter().position(|r| r.tag == BASE_END).unwrap();
        let later = |tag| records[base_end..].iter().filter(|r| r.tag == tag).count();
        assert_eq!(later(BYTES) + later(CHUNK_LINK), if contiguous { 1 } else { 2 });
        // Each later operation is announced, and each one that ran leaves the frame's state.
        assert_eq!((later(BEGIN), later(MARK)), (5, 6));
        recover(url).unwrap();
        assert_eq!(snapshot(url), before);
        assert!(!journal_path(url).exists());
        assert_eq!(content(url), seen);
    });
}

#[test]
fn a_save_cut_short_is_ignored() {
    both("torn", |url, contiguous| {
        make(url, contiguous, 2);
        let before = snapshot(url);
        crash_mid_write(url);
        let cut = record(CHUNK_FILE, 3, &[7u8; 100]);
        let mut f = std::fs::OpenOptions::new().append(true).open(journal_path(url)).unwrap();
        f.write_all(&cut[..60]).unwrap();
        drop(f);
        recover(url).unwrap();
        assert_eq!(snapshot(url), before);
    });
}

#[test]
fn a_corrupt_journal_is_refused() {
    both("corrupt", |url, contiguous| {
        make(url, contiguous, 3);
        crash_mid_write(url);
        let path = journal_path(url);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        bad[MAGIC.len() + 20] ^= 0x55;
        std::fs::write(&path, &bad).unwrap();
        let changed = snapshot(url);
        let e = recover(url).unwrap_err();
        assert!(matches!(e, Error::InvalidFormat(_)), "{e}");
        assert!(Array::open(&ctx(), url).is_err());
        assert_eq!(snapshot(url), changed, "a refused rollback must change nothing");
        std::fs::write(&path, &good).unwrap();
        recover(url).unwrap();
        assert!(Array::open(&ctx(), url).is_ok());
    });
}

#[test]
fn a_leftover_temporary_journal_is_removed() {
    both("tmp", |url, contiguous| {
        make(url, contiguous, 3);
        let before = snapshot(url);
        let tmp = sidecar(url, TMP_SUFFIX);
        std::fs::write(&tmp, b"CTVJRNL1 half written").unwrap();
        let a = Array::open(&ctx(), url).unwrap();
        assert!(!tmp.exists());
        assert_eq!(a.vlmeta_get("note").unwrap(), b"first");
        drop(a);
        assert_eq!(snapshot(url), before);
    });
}

#[test]
fn a_journal_of_a_replaced_array_is_dropped() {
    both("stale", |url, contiguous| {
        make(url, contiguous, 4);
        crash_mid_write(url);
        let kept = std::fs::read(journal_path(url)).unwrap();
        // A new array takes the path (made beside it first, so it gets other inodes).
        let other = format!("{url}.new");
        make(&other, contiguous, 5);
        Array::remove(url).unwrap();
        std::fs::rename(&other, url).unwrap();
        let fresh = snapshot(url);
        std::fs::write(journal_path(url), kept).unwrap();
        recover(url).unwrap();
        assert!(!journal_path(url).exists());
        assert_eq!(snapshot(url), fresh);
    });
}

#[test]
fn a_journal_is_not_applied_to_a_copy_restored_over_its_array() {
    both("restored", |url, contiguous| {
        make(url, contiguous, 12);
        let backup = snapshot(url);
        // A committed write, then one that dies; then the backup is copied back in place.
        let mut a = Array::open(&ctx(), url).unwrap();
        a.vlmeta_update("note", b"second").unwrap();
        drop(a);
        crash_mid_write(url);
        for (name, bytes) in &backup {
            let p = if name.is_empty() { PathBuf::from(url) } else { Path::new(url).join(name) };
            let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(p).unwrap();
            f.write_all(bytes).unwrap();
        }
        recover(url).unwrap();
        assert!(!journal_path(url).exists());
        assert!(stale_path(&journal_path(url)).exists(), "the journal was not kept aside");
        assert_eq!(content(url).1, b"first", "the journal was applied to the restored copy");
        // Removing the array removes the journal kept aside too.
        Array::remove(url).unwrap();
        assert!(!stale_path(&journal_path(url)).exists());
    });
}

#[test]
fn an_interrupted_rollback_is_finished() {
    both("rerun", |url, contiguous| {
        make(url, contiguous, 13);
        let before = snapshot(url);
        crash_mid_write(url);
        let journal = std::fs::read(journal_path(url)).unwrap();
        assert_eq!(parse(&journal).unwrap().last().map(|r| r.tag), Some(MARK));
        // The chunk files it kept by a second name (a sparse frame), which
        // go after the journal.
        let undo = undo_folder(url);
        let kept: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&undo)
            .map(|d| d.flatten().map(|e| (e.path(), std::fs::read(e.path()).unwrap())).collect())
            .unwrap_or_default();
        assert_eq!(kept.is_empty(), contiguous);
        let put_back = || {
            std::fs::create_dir_all(&undo).unwrap();
            for (p, bytes) in &kept {
                std::fs::write(p, bytes).unwrap();
            }
        };
        recover(url).unwrap();
        assert!(!undo.exists(), "the undo folder outlived its journal");
        // Killed at the end of that rollback: the frame is restored, the
        // journal (with the rollback announced) still there.
        let mut announced = journal.clone();
        announced.extend(record(BEGIN, 0, &[]));
        std::fs::write(journal_path(url), &announced).unwrap();
        put_back();
        recover(url).unwrap();
        assert!(!journal_path(url).exists() && !stale_path(&journal_path(url)).exists());
        assert_eq!(snapshot(url), before);
        // Unannounced, the restored frame would not be the last operation's state.
        std::fs::write(journal_path(url), &journal).unwrap();
        put_back();
        recover(url).unwrap();
        assert!(stale_path(&journal_path(url)).exists());
        assert_eq!(snapshot(url), before);
    });
}

#[test]
fn a_live_write_keeps_other_handles_out() {
    both("busy", |url, contiguous| {
        make(url, contiguous, 6);
        let mut store = Store::open(url).unwrap();
        store
            .write(|tx| {
                tx.vlmeta_put("note", b"second", true, &CParams::default())?;
                let e = Array::open(&ctx(), url).unwrap_err();
                assert!(
                    matches!(e, Error::InvalidStorage { reason: ref m, .. } if m.contains("another handle")),
                    "{e}"
                );
                Ok(())
            })
            .unwrap();
        drop(store);
        assert_eq!(Array::open(&ctx(), url).unwrap().vlmeta_get("note").unwrap(), b"second");
    });
}

#[test]
fn abort_undoes_a_failed_write() {
    both("abort", |url, contiguous| {
        drop(make(url, contiguous, 7));
        let before = snapshot(url);
        let mut store = Store::open(url).unwrap();
        let first = store.chunk(0).unwrap().bytes().to_vec();
        let r = store.write(|tx| {
            tx.append_chunk(&first)?;
            tx.update_chunks(&[(1, &first)])?;
            assert!(journal_path(url).exists());
            Err::<(), _>(Error::blosc("injected", None))
        });
        assert_eq!(r, Err(Error::blosc("injected", None)));
        assert!(!journal_path(url).exists());
        assert_eq!(store.nchunks(), 6, "the store was reloaded as it was");
        drop(store);
        assert_eq!(snapshot(url), before);
    });
}

#[test]
fn a_directory_at_the_journal_path_is_not_a_journal() {
    both("unreadable", |url, contiguous| {
        make(url, contiguous, 8);
        std::fs::create_dir(journal_path(url)).unwrap();
        // Not ours: nothing to roll back, and it stays.
        recover(url).unwrap();
        assert!(journal_path(url).is_dir());
        // A write says what is in the way, and changes nothing.
        let mut a = Array::open(&ctx(), url).unwrap();
        let before = a.to_vec().unwrap();
        let e = a.set_slice_buffer(&[0, 0], &[1, 1], &[0u8; 4], &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("in the way"), "{e}");
        assert_eq!(a.to_vec().unwrap(), before);
        std::fs::remove_dir(journal_path(url)).unwrap();
    });
}

#[test]
fn an_interrupted_directory_replace_is_completed() {
    let dir = scratch("replace");
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let old = sidecar(&url, OLD_SUFFIX);
    make(&url, false, 9);
    let before = snapshot(&url);
    // Killed after moving the old directory aside, before the new one took its place.
    std::fs::rename(&url, &old).unwrap();
    recover(&url).unwrap();
    assert_eq!(snapshot(&url), before);
    assert!(!old.exists());
    // Killed after the new one took its place, before the old one was removed.
    make(old.to_str().unwrap(), false, 10);
    recover(&url).unwrap();
    assert_eq!(snapshot(&url), before);
    assert!(!old.exists());
    // The whole replacement, as save() and squeeze() use it.
    let fresh = dir.join("fresh.b2nd").to_string_lossy().into_owned();
    make(&fresh, false, 11);
    let new = snapshot(&fresh);
    crate::store::fs::replace_dir(&fresh, &url, true).unwrap();
    assert_eq!(snapshot(&url), new);
    assert!(!old.exists() && !Path::new(&fresh).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn checksums_catch_changes() {
    let r = record(BYTES, 5, b"0123456789abcdef!");
    let (ok, next) = read_record(&r, 0).unwrap();
    assert_eq!((ok.tag, ok.key, ok.payload, next), (BYTES, 5, &b"0123456789abcdef!"[..], r.len()));
    for i in 0..r.len() {
        let mut bad = r.clone();
        bad[i] ^= 1;
        assert!(read_record(&bad, 0).is_none(), "flipping byte {i} went unnoticed");
    }
    assert!(read_record(&r[..r.len() - 1], 0).is_none());
}

// Epochs (Durability::Normal).

/// Four writes of one epoch through a store at `Normal`; returns what a
/// reader sees before and after each, and the store (its epoch open).
fn epoch_of_writes(url: &str) -> (Vec<Content>, Store) {
    let arr = Array::open(&ctx(), url).unwrap();
    let (chunk_nbytes, block_nbytes) = (arr.geometry().chunk_nbytes(), arr.geometry().block_nbytes());
    drop(arr);
    let comp = Compression::default();
    let small = |v: u8| repeat_chunk(&comp, 4, block_nbytes, chunk_nbytes, &[v, 2, 3, 4]).unwrap();
    let big = CCtx::new(&comp, 4, block_nbytes, 1).unwrap().compress(&noise(chunk_nbytes, 9)).unwrap();
    let mut store = Store::open(url).unwrap();
    store.set_durability(crate::Durability::Normal);
    let mut seen = vec![content(url)];
    store.write(|tx| tx.update_chunks(&[(0, &small(1))])).unwrap(); // in place: an original chunk, saved and synced
    seen.push(content(url));
    store.write(|tx| tx.update_chunks(&[(3, &big)])).unwrap(); // does not fit: goes past the end
    seen.push(content(url));
    store
        .write(|tx| {
            tx.update_chunks(&[(0, &small(5))])?; // in place again: saved for this write only
            tx.vlmeta_put("note", b"a longer note than before", true, &CParams::default())
        })
        .unwrap();
    seen.push(content(url));
    store
        .write(|tx| {
            tx.update_chunks(&[(2, &big)])?;
            tx.delete_chunk(1)?;
            tx.append_chunk(&small(7)).map(drop)
        })
        .unwrap();
    seen.push(content(url));
    assert!(journal_path(url).exists(), "the epoch ended early");
    (seen, store)
}

#[test]
fn an_epoch_keeps_what_it_committed_when_its_process_dies() {
    both("epoch-killed", |url, contiguous| {
        make(url, contiguous, 20);
        let (seen, mut store) = epoch_of_writes(url);
        let records = parse(&std::fs::read(journal_path(url)).unwrap()).unwrap().len();
        assert!(records > 10, "{records} records");
        store.epoch.get_mut().unwrap().abandon();
        drop(store);
        assert_eq!(content(url), seen[4]);
        assert!(!journal_path(url).exists());
    });
}

#[test]
fn an_epoch_undoes_only_the_write_in_flight() {
    both("epoch-mid", |url, contiguous| {
        make(url, contiguous, 21);
        let (seen, mut store) = epoch_of_writes(url);
        let before = snapshot(url);
        let (chunk_nbytes, block_nbytes) = (4 * 8 * 6, 4 * 4 * 3);
        let small = repeat_chunk(&Compression::default(), 4, block_nbytes, chunk_nbytes, &[9, 9, 9, 9]).unwrap();
        let r = store.write(|tx| {
            tx.update_chunks(&[(0, &small), (4, &small)])?; // in place, over chunks saved before or not
            tx.vlmeta_put("note", b"lost", true, &CParams::default())?;
            tx.crash();
            Err::<(), _>(Error::blosc("killed", None))
        });
        assert!(r.is_err());
        drop(store);
        recover(url).unwrap();
        assert_eq!(snapshot(url), before);
        assert_eq!(content(url), seen[4]);
    });
}

#[test]
fn an_epoch_is_rolled_back_whole_after_a_restart() {
    both("epoch-restart", |url, contiguous| {
        make(url, contiguous, 22);
        let before = snapshot(url);
        let (seen, mut store) = epoch_of_writes(url);
        assert_ne!(seen[0], seen[4]);
        store.epoch.get_mut().unwrap().abandon();
        drop(store);
        let _restart = crate::store::io::faults::pretend_restarted(Path::new(url).parent().unwrap());
        recover(url).unwrap();
        assert_eq!(snapshot(url), before);
        assert_eq!(content(url), seen[0]);
    });
}

#[test]
fn an_epoch_ends_at_drop_and_at_another_handles_write() {
    both("epoch-end", |url, contiguous| {
        make(url, contiguous, 23);
        let (seen, store) = epoch_of_writes(url);
        drop(store);
        assert!(!journal_path(url).exists());
        assert_eq!(content(url), seen[4]);
        // Another handle's write (at full) ends a live epoch, which the
        // first handle's next write does not find: it starts another.
        let (_, mut a) = epoch_of_writes(url);
        let mut b = Store::open(url).unwrap();
        b.write(|tx| tx.vlmeta_put("note", b"from b", true, &CParams::default())).unwrap();
        assert!(!journal_path(url).exists());
        a.lock_fresh().unwrap();
        a.write(|tx| tx.vlmeta_put("note", b"from a", true, &CParams::default())).unwrap();
        assert!(journal_path(url).exists());
        drop(b);
        assert_eq!(content(url).1, b"from a");
        drop(a);
        assert!(!journal_path(url).exists());
    });
}

#[test]
fn what_a_committed_journal_left_in_its_undo_folder_goes_at_the_next_open() {
    let dir = scratch("undo-left");
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    make(&url, false, 3);
    // A writer that died after removing its journal, before its links.
    let undo = undo_folder(&url);
    std::fs::create_dir_all(&undo).unwrap();
    std::fs::write(undo.join("1-2.00000000.0"), b"an original").unwrap();
    let before = content(&url);
    assert!(!undo.exists(), "opening left the undo folder of a committed journal");
    // Again, with a handle that then writes.
    std::fs::create_dir_all(&undo).unwrap();
    std::fs::write(undo.join("1-2.00000000.0"), b"an original").unwrap();
    let mut a = Array::open(&ctx(), &url).unwrap();
    a.vlmeta_update("note", b"second").unwrap();
    drop(a);
    assert!(!undo.exists());
    assert_eq!(content(&url).0, before.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The chunk files a sparse frame's write keeps by a second name stay
/// after its commit, go once the next write's journal is named (on a
/// thread of their own) or when the handle is dropped; two handles
/// writing in turn (their removals racing the other's links) read back
/// every item, and no undo folder outlives them.
#[test]
fn kept_originals_go_after_the_next_write_or_with_the_handle() {
    let dir = scratch("kept");
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    drop(make(&url, false, 5));
    let undo = undo_folder(&url);
    let names = || -> Vec<String> {
        std::fs::read_dir(&undo)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    };
    let row = |a: &mut Array, r: i64, seed: u64| {
        a.set_slice_buffer(&[r, 0], &[r + 1, 10], &noise(40, seed), &[1, 10]).unwrap();
    };
    let mut a = Array::open(&ctx(), &url).unwrap();
    row(&mut a, 3, 1);
    let first = names();
    assert!(!first.is_empty(), "the write kept no original (a hard link)");
    row(&mut a, 17, 2);
    drop(a);
    assert!(!undo.exists(), "the undo folder outlived the handle: {:?}", names());
    // Two handles in turn, checked against a model.
    let mut model = Array::open(&ctx(), &url).unwrap().to_vec().unwrap();
    let (mut a, mut b) = (Array::open(&ctx(), &url).unwrap(), Array::open(&ctx(), &url).unwrap());
    for i in 0..40u64 {
        let r = (i * 7 % 20) as i64;
        let h = if i % 2 == 0 { &mut a } else { &mut b };
        h.refresh().unwrap();
        row(h, r, 100 + i);
        model[r as usize * 40..(r as usize + 1) * 40].copy_from_slice(&noise(40, 100 + i));
        // Only this write's originals may be there, and those of the writes
        // before it whose removal is under way.
        assert!(names().len() <= 3 * 2, "names pile up: {:?}", names());
    }
    drop(a);
    assert_eq!(b.to_vec().unwrap(), model);
    drop(b);
    assert!(!undo.exists(), "the undo folder outlived the handles: {:?}", names());
    assert_eq!(Array::open(&ctx(), &url).unwrap().to_vec().unwrap(), model);
    let _ = std::fs::remove_dir_all(&dir);
}
