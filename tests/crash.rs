//! Crash safety: a writer process changes a file or directory array with a
//! long random sequence of writes and is killed with SIGKILL at random
//! moments; the array must then open and hold exactly the state after the
//! last write the writer reported, or after the one it had started.
//!
//! The writer is this test binary run again (the ignored test
//! `crash_writer`, selected by an environment variable). Its writes are a
//! function of a seed, the step number and the array's state, so the parent
//! replays them on an in-memory model to know every state. Each writer
//! continues from the state the previous one left.
//!
//! Writers take turns at the three ways to sync: the default
//! (`Durability::Full`), `CATERVA_JOURNAL_SYNC=0` in the environment, and a
//! handle set to `Durability::Process` (`Array::set_durability`): a killed
//! process must need no syncs. `CATERVA_CRASH_KILLS` sets the number of
//! kills per storage (default 40), `CATERVA_CRASH_SEED` varies the writes.

mod common;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use caterva::{Array, Config, Context, Durability, Metalayer, Params, StorageParams};
use common::Rng;

/// Selects the writer role: `<urlpath>\t<seed>\t<first step>`.
const WRITER_ENV: &str = "CATERVA_CRASH_WRITER";
/// The writer's durability level (a `Durability` name).
const LEVEL_ENV: &str = "CATERVA_CRASH_DURABILITY";
const USER_META: &str = "user";
const VLMETA: &str = "log";
const DTYPES: [&str; 3] = ["<u4", "<i4", "<f4"];
const ITEM: usize = 4;
/// The writer stops by itself after this many steps (if nobody kills it).
const MAX_STEPS_PER_WRITER: u64 = 5000;

/// The generator of writer step `step` of a run seeded with `seed`.
fn rng(seed: u64, step: u64) -> Rng {
    Rng(seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// `n` items that compress well or not at all, so chunks change size.
fn items(rng: &mut Rng, n: i64) -> Vec<u8> {
    let small = rng.next() % 3;
    (0..n)
        .flat_map(|_| {
            let v = match small {
                0 => rng.next() as u32,
                1 => (rng.next() % 4) as u32,
                _ => 7,
            };
            v.to_le_bytes()
        })
        .collect()
}

/// Arrays keep per-chunk checksums, so every read after a kill also checks
/// that the checksum table was rolled back or committed with the chunks.
fn ctx() -> Context {
    Context::new(Config { nthreads: 2, checksums: true, ..Config::default() }).unwrap()
}

fn storage(urlpath: Option<String>, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![8, 6],
        blockshape: vec![4, 3],
        contiguous,
        urlpath,
        metalayers: vec![Metalayer { name: USER_META.into(), content: vec![0; 8] }],
    }
}

/// The array every run starts from (step 0).
fn initial(ctx: &Context, urlpath: Option<String>, contiguous: bool) -> Array {
    let params = Params { itemsize: ITEM, shape: vec![30, 17], dtype: Some(DTYPES[0].into()) };
    let data = items(&mut rng(1, 0), 30 * 17);
    Array::from_buffer(ctx, &params, &storage(urlpath, contiguous), &data).unwrap()
}

/// Write step `step`: what it does depends only on the seed, the step and the array.
fn apply(arr: &mut Array, seed: u64, step: u64) {
    let mut rng = rng(seed, step);
    let (rows, cols) = (arr.shape()[0], arr.shape()[1]);
    let kind = rng.range(0, 99);
    let r = match kind {
        0..=39 => {
            let (r0, c0) = (rng.range(0, rows - 1), rng.range(0, cols - 1));
            let (r1, c1) = (rng.range(r0 + 1, rows), rng.range(c0 + 1, cols));
            let data = items(&mut rng, (r1 - r0) * (c1 - c0));
            arr.set_slice_buffer(&[r0, c0], &[r1, c1], &data, &[r1 - r0, c1 - c0])
        }
        40..=51 if rows < 120 => {
            let k = rng.range(1, 10);
            arr.append(&items(&mut rng, k * cols), 0)
        }
        52..=56 if cols < 40 => {
            let k = rng.range(1, 4);
            arr.append(&items(&mut rng, k * rows), 1)
        }
        57..=62 if rows < 120 => {
            let k = rng.range(1, 6);
            let at = rng.range(0, rows);
            arr.insert(&items(&mut rng, k * cols), 0, at)
        }
        40..=70 => {
            let (axis, len, min) = if kind % 2 == 0 { (0, rows, 8) } else { (1, cols, 4) };
            let k = rng.range(1, (len - min).clamp(1, 6));
            if len - k < min {
                arr.append(&items(&mut rng, if axis == 0 { cols } else { rows }), axis)
            } else {
                arr.delete(axis, rng.range(0, len - k), k)
            }
        }
        71..=76 => {
            let shape = [rng.range(8, 100), rng.range(4, 36)];
            let start = [rng.range(0, rows.min(shape[0])), rng.range(0, cols.min(shape[1]))];
            arr.resize(&shape, if rng.next() % 2 == 0 { Some(&start[..]) } else { None })
        }
        77..=86 => {
            let pick = |rng: &mut Rng, len: i64| -> Vec<i64> {
                let n = rng.range(1, 5);
                (0..n).map(|_| rng.range(0, len - 1)).collect()
            };
            let (a, b) = (pick(&mut rng, rows), pick(&mut rng, cols));
            let data = items(&mut rng, a.len() as i64 * b.len() as i64);
            arr.set_orthogonal_selection(&[&a, &b], &data, &[a.len() as i64, b.len() as i64])
        }
        87..=90 => arr.meta_update(USER_META, &rng.next().to_le_bytes()),
        91..=95 => {
            let n = rng.range(1, 300);
            let content: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            if arr.vlmeta_exists(VLMETA).unwrap() {
                arr.vlmeta_update(VLMETA, &content)
            } else {
                arr.vlmeta_add(VLMETA, &content)
            }
        }
        _ => arr.set_dtype(DTYPES[rng.range(0, 2) as usize]),
    };
    r.unwrap_or_else(|e| panic!("step {step} (kind {kind}) on shape {rows}x{cols}: {e}"));
}

/// Everything a reader can see of an array.
fn fingerprint(arr: &Array) -> (Vec<i64>, u64) {
    let mut h = DefaultHasher::new();
    arr.to_vec().unwrap().hash(&mut h);
    arr.dtype().hash(&mut h);
    arr.meta_get(USER_META).unwrap().hash(&mut h);
    if arr.vlmeta_exists(VLMETA).unwrap() {
        arr.vlmeta_get(VLMETA).unwrap().hash(&mut h);
    }
    (arr.shape().to_vec(), h.finish())
}

/// The writer role (run by [`crash_run`] in a child process).
#[test]
#[ignore = "the writer process of the crash tests, which start it themselves"]
fn crash_writer() {
    let spec = std::env::var(WRITER_ENV).expect("started by the crash tests");
    let mut f = spec.split('\t');
    let (url, seed, from) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
    let (seed, from): (u64, u64) = (seed.parse().unwrap(), from.parse().unwrap());
    let ctx = ctx();
    let mut arr = Array::open(&ctx, url).unwrap();
    let level: Durability = std::env::var(LEVEL_ENV).unwrap().parse().unwrap();
    arr.set_durability(level);
    println!("READY {from}");
    for step in from + 1..=from + MAX_STEPS_PER_WRITER {
        apply(&mut arr, seed, step);
        println!("DONE {step}");
    }
}

/// Start a writer from state `from`, kill it after `delay`, and return the
/// last step it reported done.
fn run_writer(url: &str, seed: u64, from: u64, delay: Duration, sync: bool, level: Durability) -> u64 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_writer", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(WRITER_ENV, format!("{url}\t{seed}\t{from}"))
        .env("CATERVA_JOURNAL_SYNC", if sync { "1" } else { "0" })
        .env(LEVEL_ENV, level.name())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        // libtest may print the test's name on the same line as ours.
        for line in BufReader::new(out).lines().map_while(std::result::Result::ok) {
            let words: Vec<&str> = line.split_whitespace().collect();
            for w in words.windows(2) {
                if let [tag @ ("READY" | "DONE"), n] = w {
                    let _ = tx.send((*tag == "READY", n.parse::<u64>().unwrap()));
                }
            }
        }
    });
    let mut last = from;
    let ready = rx.recv_timeout(Duration::from_secs(120));
    assert_eq!(ready.map(|r| r.0), Ok(true), "the writer did not start");
    std::thread::sleep(delay);
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    for (_, n) in rx.try_iter() {
        last = n;
    }
    last
}

/// States of the in-memory model, step by step.
struct Model {
    arr: Array,
    step: u64,
    seed: u64,
    states: Vec<(Vec<i64>, u64)>,
}

impl Model {
    fn new(ctx: &Context, contiguous: bool, seed: u64) -> Model {
        let arr = initial(ctx, None, contiguous);
        let states = vec![fingerprint(&arr)];
        Model { arr, step: 0, seed, states }
    }

    fn state(&mut self, step: u64) -> (Vec<i64>, u64) {
        while self.step < step {
            self.step += 1;
            apply(&mut self.arr, self.seed, self.step);
            self.states.push(fingerprint(&self.arr));
        }
        self.states[step as usize].clone()
    }
}

#[derive(Debug, Default)]
struct Outcomes {
    kills: u64,
    /// The array held the state after the last write reported done.
    before: u64,
    /// It held the state after the write in progress (done, not yet reported).
    after: u64,
    /// A journal was there: the kill interrupted a write, which was rolled back.
    rolled_back: u64,
    steps: u64,
}

fn crash_run(name: &str, contiguous: bool, seed: u64) -> Outcomes {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let kills = var("CATERVA_CRASH_KILLS").unwrap_or(40);
    let seed = var("CATERVA_CRASH_SEED").map_or(seed, |s| s ^ seed);
    let dir = common::scratch_dir(name);
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let journal = caterva::testing::journal_path(&url);
    let ctx = ctx();
    drop(initial(&ctx, Some(url.clone()), contiguous));
    let mut model = Model::new(&ctx, contiguous, seed);
    let mut rng = rng(seed, u64::MAX);
    let (mut state, mut out) = (0u64, Outcomes::default());
    for kill in 0..kills {
        // Mostly within the first few writes; sometimes at once, sometimes later.
        let ms = match rng.next() % 4 {
            0 => rng.next() % 5,
            1 | 2 => rng.next() % 100,
            _ => rng.next() % 400,
        };
        // Two writers in four skip the syncs (by the environment, by the
        // handle's level): a killed process must not need them. One in four
        // writes in epochs (`normal`): a killed one keeps what it committed.
        let (sync, level) = match kill % 4 {
            0 => (true, Durability::Full),
            1 => (false, Durability::Full),
            2 => (true, Durability::Process),
            _ => (true, Durability::Normal),
        };
        let done = run_writer(&url, seed, state, Duration::from_millis(ms), sync, level);
        out.kills += 1;
        let had_journal = journal.exists();
        let arr = Array::open(&ctx, &url)
            .unwrap_or_else(|e| panic!("kill {kill}: the array does not open after step {done}: {e}"));
        assert!(arr.has_checksums(), "kill {kill}: the checksum table is gone");
        let found = fingerprint(&arr);
        drop(arr);
        assert!(!journal.exists(), "kill {kill}: the journal is still there after opening");
        if found == model.state(done) {
            out.before += 1;
            state = done;
        } else if found == model.state(done + 1) {
            out.after += 1;
            state = done + 1;
        } else {
            panic!(
                "kill {kill}: after step {done} the array has shape {:?}, which is neither the state after \
                 step {done} ({:?}) nor after step {} ({:?}), or its content differs",
                found.0,
                model.state(done).0,
                done + 1,
                model.state(done + 1).0
            );
        }
        out.rolled_back += u64::from(had_journal);
    }
    out.steps = state;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{name}: {out:?}");
    out
}

#[test]
fn killed_writer_contiguous_file() {
    let out = crash_run("crash-file", true, 0xC0FFEE);
    assert_eq!(out.before + out.after, out.kills);
}

#[test]
fn killed_writer_sparse_directory() {
    let out = crash_run("crash-dir", false, 0xD1EC7);
    assert_eq!(out.before + out.after, out.kills);
}

/// The writer's steps replayed on a file array give the model's states
/// (so the crash tests compare like with like, whatever the storage).
#[test]
fn model_matches_persistent_arrays() {
    for contiguous in [true, false] {
        let dir = common::scratch_dir(if contiguous { "crash-model-file" } else { "crash-model-dir" });
        let url = dir.join("a.b2nd").to_string_lossy().into_owned();
        let ctx = ctx();
        let mut arr = initial(&ctx, Some(url.clone()), contiguous);
        let mut model = Model::new(&ctx, contiguous, 7);
        for step in 1..=60 {
            apply(&mut arr, 7, step);
            if step % 10 == 0 {
                drop(arr);
                arr = Array::open(&ctx, &url).unwrap();
            }
            assert_eq!(fingerprint(&arr), model.state(step), "step {step}");
        }
        assert!(!Path::new(&caterva::testing::journal_path(&url)).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
