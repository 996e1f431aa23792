//! Arrays shared between processes, and what killed processes leave beside
//! an array: real child processes (this test binary run again, the ignored
//! test `paths_child`, selected by an environment variable) write, read,
//! save and die while the parent watches.
//!
//! - A journal left by a killed writer is not applied to a file that was
//!   restored from a backup since (`cp backup a.b2frame` keeps the inode):
//!   it is kept aside as `<path>.caterva-journal.stale`.
//! - A process that only opens and frees an array never makes a writer's
//!   call fail, and always opens it; two processes writing one array never
//!   corrupt it (the second is refused with a clear error, or waits).
//! - The temporary copy a killed save or squeeze left beside its target is
//!   removed by the next open or create of that path, unless its writer is
//!   still alive.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use caterva::{Array, Config, Context, ErrorKind, Params, StorageParams};

/// Selects the child role: fields separated by tabs, the role first.
const CHILD_ENV: &str = "CATERVA_PATHS_CHILD";
const SHAPE: [i64; 2] = [60, 50];
const ITEM: usize = 4;

fn ctx() -> Context {
    Context::new(Config { nthreads: 1, checksums: true, ..Config::default() }).unwrap()
}

fn storage(url: &str, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![20, 10],
        blockshape: vec![10, 5],
        contiguous,
        urlpath: Some(url.to_owned()),
        ..Default::default()
    }
}

fn nitems() -> usize {
    (SHAPE[0] * SHAPE[1]) as usize
}

/// Items that do not compress (a chunk of them is larger than one of `uniform`).
fn noise(seed: u64) -> Vec<u8> {
    let mut rng = common::Rng(seed);
    rng.bytes(nitems() * ITEM)
}

/// Every item `v`.
fn uniform(v: u32) -> Vec<u8> {
    (0..nitems()).flat_map(|_| v.to_le_bytes()).collect()
}

/// Item `i` is `i`: chunks that compress, each different.
fn ramp() -> Vec<u8> {
    (0..nitems() as u32).flat_map(u32::to_le_bytes).collect()
}

fn write_all(arr: &mut Array, data: &[u8]) -> caterva::Result<()> {
    arr.set_slice_buffer(&[0, 0], &SHAPE, data, &SHAPE)
}

/// The child roles (started by the tests below).
#[test]
#[ignore = "the child process of the path tests, which start it themselves"]
fn paths_child() {
    let spec = std::env::var(CHILD_ENV).expect("started by the path tests");
    let f: Vec<&str> = spec.split('\t').collect();
    let ctx = ctx();
    match f[0] {
        // Die (SIGKILL) in the middle of a write: before its second operation.
        "die-mid-write" => {
            let mut arr = Array::open(&ctx, f[1]).unwrap();
            caterva::testing::signal_at("op", 2, libc::SIGKILL);
            write_all(&mut arr, &noise(f[2].parse().unwrap())).unwrap();
            panic!("the write did not reach its second operation");
        }
        // Write the whole array with uniform values for `ms` milliseconds.
        // A refusal because another handle writes it is counted and the
        // array reopened; any other error fails.
        "writer" => {
            let (url, id, ms): (&str, u32, u64) = (f[1], f[2].parse().unwrap(), f[3].parse().unwrap());
            let until = Instant::now() + Duration::from_millis(ms);
            let mut arr = Array::open(&ctx, url).unwrap();
            let (mut done, mut refused, mut i) = (0u64, 0u64, 0u32);
            while Instant::now() < until {
                i += 1;
                match write_all(&mut arr, &uniform(id << 24 | i)) {
                    Ok(()) => done += 1,
                    Err(e) if e.kind() == ErrorKind::InvalidStorage && e.message().contains("another handle") => {
                        refused += 1;
                        arr = Array::open(&ctx, url).unwrap();
                    }
                    Err(e) => panic!("writer {id}, write {i}: {e}"),
                }
            }
            println!("WRITER {done} {refused}");
        }
        // Open and free the array for `ms` milliseconds, counting the opens
        // that work and those that fail.
        "reader" => {
            let (url, ms): (&str, u64) = (f[1], f[2].parse().unwrap());
            let until = Instant::now() + Duration::from_millis(ms);
            let (mut opened, mut failed) = (0u64, 0u64);
            while Instant::now() < until {
                match Array::open(&ctx, url) {
                    Ok(arr) => {
                        assert_eq!(arr.shape(), &SHAPE);
                        opened += 1;
                    }
                    Err(e) => {
                        if failed == 0 {
                            eprintln!("reader: open {}: {e}", opened + failed);
                        }
                        failed += 1;
                    }
                }
            }
            println!("READER {opened} {failed}");
        }
        // Save `src` to `dst`, raising signal f[3] just before the rename.
        "save" => {
            let arr = Array::open(&ctx, f[1]).unwrap();
            caterva::testing::signal_at("rename", 1, f[3].parse().unwrap());
            arr.save(f[2]).unwrap();
        }
        // Squeeze the array (a relayout written beside it), killed at its third chunk.
        "squeeze" => {
            let mut arr = Array::open(&ctx, f[1]).unwrap();
            caterva::testing::signal_at("op", 3, libc::SIGKILL);
            arr.squeeze().unwrap();
        }
        role => panic!("unknown role {role}"),
    }
}

/// A child process, killed if the test gives up on it.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn child(fields: &[&str]) -> Kid {
    let c = Command::new(std::env::current_exe().unwrap())
        .args(["paths_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, fields.join("\t"))
        .env("CATERVA_JOURNAL_SYNC", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the child");
    Kid(c)
}

/// Wait for a child and return its status and what it printed.
fn finish(mut c: Kid) -> (std::process::ExitStatus, String) {
    let mut out = String::new();
    if let Some(stdout) = c.0.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    (c.0.wait().unwrap(), out)
}

/// The numbers after `tag` in a child's output.
fn report(out: &str, tag: &str) -> Vec<u64> {
    let words: Vec<&str> = out.split_whitespace().collect();
    let at = words.iter().position(|w| *w == tag).unwrap_or_else(|| panic!("no {tag} in {out:?}"));
    words[at + 1..].iter().map_while(|w| w.parse().ok()).collect()
}

fn killed(status: std::process::ExitStatus, signal: i32) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(signal)
}

/// Copy a file or a directory's files over `to`, in place (existing files
/// keep their inodes), as `cp` and `cp -r from/. to/` do.
fn copy_over(from: &Path, to: &Path) {
    if from.is_file() {
        std::fs::copy(from, to).unwrap();
        return;
    }
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn both(name: &str, test: impl Fn(&Path, &str, bool)) {
    for (file, contiguous) in [("a.b2frame", true), ("a.b2nd", false)] {
        let dir = common::scratch_dir(&format!("{name}-{}", if contiguous { "file" } else { "dir" }));
        test(&dir, &dir.join(file).to_string_lossy(), contiguous);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn content(url: &str) -> Vec<u8> {
    let arr = Array::open(&ctx(), url).unwrap_or_else(|e| panic!("opening {url}: {e}"));
    assert!(arr.verify(&mut |_, _| {}).unwrap().is_empty(), "{url} fails its checksums");
    arr.to_vec().unwrap()
}

fn inode(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let p = if p.is_dir() { p.join("chunks.b2frame") } else { p.to_path_buf() };
    std::fs::metadata(p).unwrap().ino()
}

/// Finding 4: a journal is bound to the state of the file it was written
/// against; a backup copied over the file since is not rolled "back".
#[test]
fn a_stale_journal_is_not_applied_to_a_restored_backup() {
    both("stale-journal", |dir, url, contiguous| {
        let journal = caterva::testing::journal_path(url);
        let stale = PathBuf::from(format!("{}.stale", journal.display()));
        let params = Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None };
        drop(Array::from_buffer(&ctx(), &params, &storage(url, contiguous), &ramp()).unwrap());
        let backup = dir.join("backup");
        copy_over(Path::new(url), &backup);
        let mut arr = Array::open(&ctx(), url).unwrap();
        write_all(&mut arr, &noise(1)).unwrap();
        drop(arr);

        // A writer killed mid-write: the next open rolls its write back.
        let (status, _) = finish(child(&["die-mid-write", url, "2"]));
        assert!(killed(status, libc::SIGKILL), "the writer was not killed mid-write: {status}");
        assert!(journal.exists(), "the killed writer left no journal");
        assert!(content(url) == noise(1), "the interrupted write was not rolled back");
        assert!(!journal.exists() && !stale.exists());

        // Killed again; then the user restores the backup in place.
        let (status, _) = finish(child(&["die-mid-write", url, "3"]));
        assert!(killed(status, libc::SIGKILL));
        assert!(journal.exists());
        let ino = inode(Path::new(url));
        copy_over(&backup, Path::new(url));
        assert_eq!(inode(Path::new(url)), ino, "the restore was meant to keep the inode");
        assert!(content(url) == ramp(), "the stale journal was applied to the restored backup");
        assert!(!journal.exists(), "the stale journal is still in the way");
        assert!(stale.exists(), "the stale journal was not kept aside");
    });
}

/// Finding 5: readers that open and free an array while a writer writes it
/// make none of its writes fail, and each of their opens succeeds.
#[test]
fn readers_never_disturb_a_writer() {
    both("readers", |_, url, contiguous| {
        let params = Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None };
        drop(Array::from_buffer(&ctx(), &params, &storage(url, contiguous), &uniform(0)).unwrap());
        let writer = child(&["writer", url, "1", "2500"]);
        let readers: Vec<Kid> = (0..2).map(|_| child(&["reader", url, "2000"])).collect();
        let reads: Vec<(std::process::ExitStatus, String)> = readers.into_iter().map(finish).collect();
        let (status, out) = finish(writer);
        assert!(status.success(), "the writer failed: {status}\n{out}");
        let [done, refused] = report(&out, "WRITER")[..] else { panic!("{out}") };
        eprintln!("the writer: {done} writes, {refused} refused");
        assert_eq!(refused, 0, "readers made {refused} of the writer's calls fail ({done} succeeded)");
        assert!(done > 0);
        for (status, out) in reads {
            assert!(status.success(), "a reader failed: {status}\n{out}");
            let [opened, failed] = report(&out, "READER")[..] else { panic!("{out}") };
            assert_eq!(failed, 0, "{failed} of a reader's opens failed ({opened} worked) while the writer wrote");
            assert!(opened > 0);
        }
        let data = content(url);
        assert!(data.chunks(ITEM).all(|x| x == &data[..ITEM]), "the array is not one write's state");
    });
}

/// Finding 5: two processes writing one array never corrupt it.
#[test]
fn two_writers_never_corrupt_an_array() {
    both("writers", |_, url, contiguous| {
        let params = Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None };
        drop(Array::from_buffer(&ctx(), &params, &storage(url, contiguous), &uniform(0)).unwrap());
        let writers: Vec<Kid> = (1..=2).map(|id| child(&["writer", url, &id.to_string(), "2500"])).collect();
        let mut total = 0;
        for w in writers {
            let (status, out) = finish(w);
            assert!(status.success(), "a writer failed: {status}\n{out}");
            let r = report(&out, "WRITER");
            eprintln!("a writer: {} writes, {} refused because the other wrote", r[0], r[1]);
            total += r[0];
        }
        assert!(total > 0);
        let data = content(url);
        assert!(data.chunks(ITEM).all(|x| x == &data[..ITEM]), "the array mixes writes: it was corrupted");
    });
}

/// The temporaries beside `target` (`<target>.caterva-tmp-…`).
fn temporaries(target: &str) -> Vec<PathBuf> {
    let t = Path::new(target);
    let prefix = format!("{}.caterva-tmp-", t.file_name().unwrap().to_string_lossy());
    let mut v: Vec<PathBuf> = std::fs::read_dir(t.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&prefix) && !n.ends_with(".caterva-lock")
        })
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// Finding 6: what a killed save or squeeze left beside its target goes at
/// the next open or create of the target, but not while its writer lives.
#[test]
fn temporaries_of_killed_writers_are_cleaned() {
    both("temporaries", |dir, url, contiguous| {
        let params = Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None };
        drop(Array::from_buffer(&ctx(), &params, &storage(url, contiguous), &noise(4)).unwrap());
        let dst = dir.join(if contiguous { "b.b2frame" } else { "b.b2nd" }).to_string_lossy().into_owned();

        // A save that stands still before its rename: its temporary is live.
        let mut c = child(&["save", url, &dst, &libc::SIGSTOP.to_string()]);
        let mut lines = BufReader::new(c.0.stdout.take().unwrap()).lines();
        assert!(lines.any(|l| l.is_ok_and(|l| l.contains("HOOK rename"))), "the save did not reach its rename");
        assert_eq!(temporaries(&dst).len(), 1, "{:?}", temporaries(&dst));
        let zeros = |p: &str| Array::zeros(&ctx(), &params, &storage(p, contiguous)).map(drop);
        zeros(&dst).unwrap();
        assert_eq!(temporaries(&dst).len(), 1, "a live save's temporary was removed");
        // Killed there: the next create of the target removes it.
        drop(c);
        zeros(&dst).unwrap();
        assert_eq!(temporaries(&dst), Vec::<PathBuf>::new(), "a dead save's temporary was left");

        // A squeeze killed while writing its relayout: the next open removes it.
        let url3 = dir.join(if contiguous { "c.b2frame" } else { "c.b2nd" }).to_string_lossy().into_owned();
        let p3 = Params { itemsize: ITEM, shape: vec![1, 60, 50], dtype: None };
        let s3 = StorageParams {
            chunkshape: vec![2, 20, 10],
            blockshape: vec![1, 10, 5],
            contiguous,
            urlpath: Some(url3.clone()),
            ..Default::default()
        };
        drop(Array::from_buffer(&ctx(), &p3, &s3, &noise(5)).unwrap());
        let (status, _) = finish(child(&["squeeze", &url3]));
        assert!(killed(status, libc::SIGKILL), "the squeeze was not killed: {status}");
        assert_eq!(temporaries(&url3).len(), 1, "{:?}", temporaries(&url3));
        let arr = Array::open(&ctx(), &url3).unwrap();
        assert_eq!(arr.shape(), &[1, 60, 50]);
        assert!(arr.to_vec().unwrap() == noise(5), "the squeezed array lost its data");
        assert_eq!(temporaries(&url3), Vec::<PathBuf>::new(), "a dead squeeze's temporary was left");
    });
}
