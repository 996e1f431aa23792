//! Contexts and arrays made before `fork()` keep working in the child and in
//! the parent: after heavy use with 1 and 4 threads, in memory and on disk,
//! 20 forks (two of whose children fork again), both sides reading, writing
//! and creating arrays (on every storage in turn); forks taken while other threads of the parent are in
//! the middle of reads of the same arrays; and Python's multiprocessing
//! (fork start method) over the C library, `examples/python/multiprocessing_fork.py`.
//!
//! A child reports through its exit status, and the parent waits for it with
//! a deadline (the child also sets an alarm), so a hang fails the test.
//!
//! Children only read the parent's persisted arrays: a write to a file that
//! the parent also has open would leave the parent's copy of its index
//! stale (as two processes writing one file always would). They write the
//! inherited in-memory arrays (their own copies) and arrays they create.
#![cfg(unix)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use caterva::{Array, Config, Context, Params, StorageParams};

mod common;
use common::{check_library_is_current, profile_dir, repo_root, run, scratch_dir};

const SHAPE: [i64; 3] = [40, 30, 20];
/// 3 × 3 × 2 chunks of 24 blocks each: a read inside one chunk gives all
/// the threads to Blosc2 (whose contexts then own threads), a read across
/// chunks to the pool.
const CHUNKS: [i32; 3] = [16, 12, 10];
const BLOCKS: [i32; 3] = [4, 4, 5];
const ITEM: usize = 4;
const FORKS: usize = 20;
/// How long a child may take (its alarm) and how long the parent waits.
const CHILD_ALARM_S: u32 = 60;
const DEADLINE: Duration = Duration::from_secs(90);

type Res<T = ()> = Result<T, String>;

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn params() -> Params {
    Params { itemsize: ITEM, shape: SHAPE.to_vec(), dtype: None }
}

fn storage(contiguous: bool, urlpath: Option<String>) -> StorageParams {
    StorageParams {
        chunkshape: CHUNKS.to_vec(),
        blockshape: BLOCKS.to_vec(),
        contiguous,
        urlpath,
        metalayers: Vec::new(),
    }
}

fn nitems() -> usize {
    SHAPE.iter().product::<i64>() as usize
}

fn linear(idx: &[i64]) -> usize {
    ((idx[0] * SHAPE[1] + idx[1]) * SHAPE[2] + idx[2]) as usize
}

/// Item `i` of a reference filled with `salt`.
fn value(i: usize, salt: u32) -> [u8; ITEM] {
    (i as u32).wrapping_mul(2_654_435_761).wrapping_add(salt).to_le_bytes()
}

fn filled(salt: u32) -> Vec<u8> {
    (0..nitems()).flat_map(|i| value(i, salt)).collect()
}

/// The box `start..stop` of a C-order reference.
fn cut(reference: &[u8], start: &[i64; 3], stop: &[i64; 3]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in start[0]..stop[0] {
        for j in start[1]..stop[1] {
            let a = linear(&[i, j, start[2]]) * ITEM;
            let b = linear(&[i, j, stop[2] - 1]) * ITEM + ITEM;
            out.extend_from_slice(&reference[a..b]);
        }
    }
    out
}

/// Regions: inside one chunk (many blocks), across all chunks, and a thin one.
const REGIONS: [([i64; 3], [i64; 3]); 3] =
    [([1, 2, 0], [15, 11, 9]), ([3, 5, 2], [37, 28, 19]), ([0, 13, 0], [40, 14, 20])];

fn shape_of(start: &[i64; 3], stop: &[i64; 3]) -> [i64; 3] {
    [stop[0] - start[0], stop[1] - start[1], stop[2] - start[2]]
}

/// Read the whole array and every region, comparing with `reference`.
fn check_reads(arr: &Array, reference: &[u8], what: &str) -> Res {
    let whole = arr.to_vec().map_err(err(what))?;
    if whole != reference {
        return Err(format!("{what}: the whole array differs from its reference"));
    }
    for (start, stop) in &REGIONS {
        let shape = shape_of(start, stop);
        let mut buf = vec![0u8; shape.iter().product::<i64>() as usize * ITEM];
        arr.get_slice_buffer(start, stop, &mut buf, &shape).map_err(err(what))?;
        if buf != cut(reference, start, stop) {
            return Err(format!("{what}: region {start:?}..{stop:?} differs"));
        }
    }
    Ok(())
}

/// Write `salt`'s values into two regions (one inside a chunk, one across
/// chunks) of `arr` and of `reference`, then read everything back.
fn write_and_check(arr: &mut Array, reference: &mut [u8], salt: u32, what: &str) -> Res {
    let source = filled(salt);
    for (start, stop) in &REGIONS[..2] {
        let data = cut(&source, start, stop);
        arr.set_slice_buffer(start, stop, &data, &shape_of(start, stop)).map_err(err(what))?;
        for i in start[0]..stop[0] {
            for j in start[1]..stop[1] {
                for k in start[2]..stop[2] {
                    let l = linear(&[i, j, k]);
                    reference[l * ITEM..(l + 1) * ITEM].copy_from_slice(&source[l * ITEM..(l + 1) * ITEM]);
                }
            }
        }
    }
    check_reads(arr, reference, what)
}

/// Create an array (in memory or on disk at a path of this process,
/// contiguous or sparse: the storage turns with `salt`), fill, rewrite and
/// read it, and for a persisted one reopen, read and remove it.
fn create_new(ctx: &Context, dir: &std::path::Path, salt: u32) -> Res {
    let pid = std::process::id();
    let (contiguous, persistent) = (salt % 2 == 0, salt % 4 >= 2);
    let path = persistent.then(|| dir.join(format!("new-{pid}-{salt}")).display().to_string());
    let what = format!("new array (contiguous {contiguous}, path {path:?}) in {pid}");
    let mut reference = filled(salt);
    let mut arr =
        Array::from_buffer(ctx, &params(), &storage(contiguous, path.clone()), &reference).map_err(err(&what))?;
    write_and_check(&mut arr, &mut reference, salt ^ 0x5555, &what)?;
    drop(arr);
    if let Some(p) = &path {
        let reopened = Array::open(ctx, p).map_err(err(&what))?;
        check_reads(&reopened, &reference, &what)?;
        drop(reopened);
        Array::remove(p).map_err(err(&what))?;
    }
    Ok(())
}

/// A context and one array per storage, each with its reference.
struct Fixture {
    /// `None` once a child has freed it.
    ctx: Option<Context>,
    arrays: Vec<(Array, Vec<u8>, bool)>,
}

impl Fixture {
    fn new(nthreads: usize, dir: &std::path::Path) -> Fixture {
        let ctx = Context::new(Config { nthreads, ..Config::default() }).expect("context");
        let mut arrays = Vec::new();
        for contiguous in [true, false] {
            for persistent in [false, true] {
                let path = persistent.then(|| dir.join(format!("fx-{nthreads}-{contiguous}")).display().to_string());
                let reference = filled(1);
                let arr = Array::from_buffer(&ctx, &params(), &storage(contiguous, path), &reference).expect("array");
                arrays.push((arr, reference, persistent));
            }
        }
        let mut fx = Fixture { ctx: Some(ctx), arrays };
        // Heavy use before any fork: every kind of read and write, so the
        // pool has run and idle workers keep Blosc2 contexts (with threads
        // when nthreads > 1).
        fx.work(true, 2, "parent before forking").expect("use before forking");
        fx
    }

    fn ctx(&self) -> &Context {
        self.ctx.as_ref().expect("not freed yet")
    }

    /// Read everything, and write the arrays it may write (`persistent`:
    /// the persisted ones too), with `salt`.
    fn work(&mut self, persistent: bool, salt: u32, who: &str) -> Res {
        for (n, (arr, reference, on_disk)) in self.arrays.iter_mut().enumerate() {
            let what = format!("{who}, array {n}");
            check_reads(arr, reference, &what)?;
            if persistent || !*on_disk {
                write_and_check(arr, reference, salt.wrapping_add(n as u32), &what)?;
            }
        }
        Ok(())
    }
}

/// Run `body` in a forked child, which exits 0 on success and 1 (with a
/// message on stderr) otherwise. Returns the child's pid.
fn spawn_child(body: impl FnOnce() -> Res) -> libc::pid_t {
    // SAFETY: fork has no preconditions; the child only runs `body` (this
    // library, std and the allocator, which are fork-safe) and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid > 0 {
        return pid;
    }
    // SAFETY: alarm has no preconditions; a hang kills the child with SIGALRM.
    unsafe { libc::alarm(CHILD_ALARM_S) };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    let msg = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(_) => Some("panicked".to_string()),
    };
    if let Some(m) = &msg {
        let line = format!("child {}: {m}\n", std::process::id());
        // SAFETY: writes the bytes of `line` to stderr; nothing else is touched.
        unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    }
    // SAFETY: ends the child without running the parent's exit handlers or
    // unwinding into the test harness.
    unsafe { libc::_exit(i32::from(msg.is_some())) }
}

/// Wait for child `pid` until the deadline; kill it then.
fn wait_child(pid: libc::pid_t, what: &str) -> Res {
    let end = Instant::now() + DEADLINE;
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out-pointer; pid is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                return Ok(());
            }
            if libc::WIFSIGNALED(status) {
                return Err(format!(
                    "{what}: child {pid} killed by signal {} (SIGALRM = hung)",
                    libc::WTERMSIG(status)
                ));
            }
            return Err(format!("{what}: child {pid} failed (exit status {})", libc::WEXITSTATUS(status)));
        }
        if rc < 0 {
            return Err(format!("{what}: waitpid: {}", std::io::Error::last_os_error()));
        }
        if Instant::now() > end {
            // SAFETY: pid is our child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("{what}: child {pid} still running after {DEADLINE:?}: hung"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a child does with the inherited fixture: read all, write the
/// in-memory arrays, create new ones; `nested`: fork a grandchild that does
/// the same and wait for it.
fn child_work(fx: &mut Fixture, dir: &std::path::Path, round: u32, nested: bool) -> Res {
    let who = format!("child {} (round {round})", std::process::id());
    fx.work(false, 1000 + round, &who)?;
    create_new(fx.ctx(), dir, round)?;
    if nested {
        let grandchild = spawn_child(|| {
            let who = format!("grandchild {} (round {round})", std::process::id());
            fx.work(false, 2000 + round, &who)?;
            create_new(fx.ctx(), dir, round + 100)
        });
        wait_child(grandchild, "grandchild")?;
        // The child goes on after its own child.
        fx.work(false, 3000 + round, &who)?;
    }
    // Free what can be freed: the arrays, then the context (whose threads
    // in this process, if any, are joined; the parent's are left alone).
    fx.arrays.clear();
    fx.ctx = None;
    Ok(())
}

fn forks_after_heavy_use(nthreads: usize) {
    let dir = scratch_dir(&format!("fork-{nthreads}"));
    let mut fx = Fixture::new(nthreads, &dir);
    for round in 0..FORKS as u32 {
        let nested = round % 10 == 3;
        let pid = spawn_child(|| child_work(&mut fx, &dir, round, nested));
        // Meanwhile the parent reads everything and writes its in-memory arrays.
        fx.work(false, 4000 + round, "parent while a child runs").unwrap();
        wait_child(pid, &format!("round {round}")).unwrap();
        // Then the persisted ones, so the next child inherits new contents.
        fx.work(true, 5000 + round, "parent after the child").unwrap();
    }
    create_new(fx.ctx(), &dir, 9999).unwrap();
    drop(fx);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn forks_after_heavy_use_one_thread() {
    forks_after_heavy_use(1);
}

#[test]
fn forks_after_heavy_use_four_threads() {
    forks_after_heavy_use(4);
}

/// Fork again and again while two other threads read the same arrays
/// (regions inside one chunk and across chunks, the whole array): a child
/// may inherit a super-chunk lock, a worker pool lock or the thread pool in
/// the middle of a job. The child uses the arrays and the context.
#[test]
fn forks_during_reads_in_other_threads() {
    let dir = scratch_dir("fork-readers");
    let fx = Fixture::new(4, &dir);
    let stop = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|t| {
                let (fx, stop, reads) = (&fx, &stop, &reads);
                s.spawn(move || -> Res {
                    while !stop.load(Ordering::Relaxed) {
                        for (n, (arr, reference, _)) in fx.arrays.iter().enumerate() {
                            if t == 0 {
                                let (start, stop) = &REGIONS[n % 2];
                                let shape = shape_of(start, stop);
                                let mut buf = vec![0u8; shape.iter().product::<i64>() as usize * ITEM];
                                arr.get_slice_buffer(start, stop, &mut buf, &shape).map_err(err("reader"))?;
                                if buf != cut(reference, start, stop) {
                                    return Err(format!("reader: array {n} region differs"));
                                }
                            } else if arr.to_vec().map_err(err("reader"))? != *reference {
                                return Err(format!("reader: array {n} differs"));
                            }
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for round in 0..FORKS as u32 {
            // Let the readers get going (and back into the library).
            let before = reads.load(Ordering::Relaxed);
            while reads.load(Ordering::Relaxed) < before + 2 && !readers.iter().any(|r| r.is_finished()) {
                std::thread::yield_now();
            }
            let pid = spawn_child(|| {
                let who = format!("child {} of a reading parent", std::process::id());
                for (n, (arr, reference, _)) in fx.arrays.iter().enumerate() {
                    check_reads(arr, reference, &format!("{who}, array {n}"))?;
                }
                // One array per round (they take turns): copied, written, sliced.
                let n = round as usize % fx.arrays.len();
                let (arr, reference, _) = &fx.arrays[n];
                let what = format!("{who}, array {n}");
                // A copy in memory, written: the inherited array is shared with the readers.
                let mut mine = arr.copy(fx.ctx(), &storage(round % 2 == 0, None)).map_err(err(&what))?;
                let mut mine_ref = reference.clone();
                write_and_check(&mut mine, &mut mine_ref, 6000 + round, &what)?;
                let sliced = arr.get_slice(fx.ctx(), &[0, 0, 0], &SHAPE, &storage(false, None));
                check_reads(&sliced.map_err(err(&what))?, reference, &what)?;
                create_new(fx.ctx(), &dir, 7000 + round)
            });
            wait_child(pid, &format!("fork {round} during reads")).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().expect("reader thread").unwrap();
        }
    });
    assert!(reads.load(Ordering::Relaxed) > FORKS);
    drop(fx);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Python example: a multiprocessing Pool of 4 forked workers reading
/// through the parent's context and array (ctypes on libcaterva.so).
#[test]
fn python_multiprocessing_fork() {
    let var = "CATERVA_INTEROP_BLOSC2_PYTHON";
    let python = std::env::var_os(var).map_or_else(
        || repo_root().join("target").join("interop").join("blosc2").join("bin").join("python"),
        PathBuf::from,
    );
    if !python.exists() {
        println!(
            "SKIPPED python_multiprocessing_fork: {} is missing (run `bash .ci/setup`, or set {var})",
            python.display()
        );
        return;
    }
    let lib = profile_dir();
    check_library_is_current(&lib);
    let script = repo_root().join("examples").join("python").join("multiprocessing_fork.py");
    let out = run(
        Command::new(&python).arg(&script).arg(lib.join("libcaterva.so")).env_remove("LD_LIBRARY_PATH"),
        "examples/python/multiprocessing_fork.py",
    );
    println!("{out}");
    assert!(out.contains("multiprocessing_fork ok"), "{out}");
}
