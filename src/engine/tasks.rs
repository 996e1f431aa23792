//! How a job runs on a context's threads: the split of the threads between
//! chunk tasks and Blosc2 ([`Split`]), the workers leased from the
//! context's pool ([`Lease`]), and [`run_tasks`].

use crate::context::{Context, Worker, WorkerPool};
use crate::error::Result;
use crate::geometry::Geometry;

/// A worker taken from a context's pool for one task; it goes back on drop.
pub(crate) struct Lease<'a> {
    pool: &'a WorkerPool,
    /// How many idle workers the pool keeps.
    keep: usize,
    /// The process that took it (see `drop`).
    pid: u32,
    worker: Option<Worker>,
}

impl Lease<'_> {
    pub(crate) fn new(ctx: &Context) -> Lease<'_> {
        let pool = ctx.workers();
        let worker = pool.idle().pop().unwrap_or_default();
        // Enough for every pool thread plus the calling thread.
        Lease { pool, keep: ctx.nthreads() + 1, pid: crate::fork::pid(), worker: Some(worker) }
    }
}

impl std::ops::Deref for Lease<'_> {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Worker {
        self.worker.as_mut().expect("present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(w) = self.worker.take() else { return };
        if crate::fork::pid() != self.pid {
            // Taken before a fork, dropped in the child: the pool is the
            // parent's (its lock may be held by a thread the child does not
            // have) and the worker's Blosc2 contexts may own such threads.
            std::mem::forget(w);
            return;
        }
        let mut idle = self.pool.idle();
        if idle.len() < self.keep {
            idle.push(w);
        }
    }
}

/// How a job of chunk tasks shares the context's threads: `lanes` tasks run
/// at once, each (de)compressing with `blosc` threads inside its chunk.
///
/// Chunk-level lanes cost no synchronisation, Blosc's threads share one
/// chunk's blocks; a job of few chunks needs both (zarrs splits its outer
/// and inner concurrency the same way). The 20 chunks of a plane on 16
/// threads take two rounds of chunks one thread each (the second round
/// leaves 12 threads idle), but five rounds of 4 chunks with 4 threads each
/// take 5/8 of that time; a 16³ box in 2 chunks of 4 blocks each is done in
/// one block's time with 4 threads per chunk, in four blocks' with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// Tasks that run at once.
    pub(crate) lanes: usize,
    /// Blosc2 threads inside each task.
    pub(crate) blosc: usize,
}

impl Split {
    /// The split of `nthreads` threads for `ntasks` tasks of about `blocks`
    /// blocks each that finishes first if every block costs the same:
    /// rounds of tasks × blocks per thread inside a task. Blosc's threads
    /// must win by 10% to be used (waking them and waiting for the slowest
    /// has a cost: 120 chunks on 16 threads stay one thread each, though
    /// the last of 8 rounds is half empty), and they come in
    /// powers of two or all the threads, so a worker keeps few contexts.
    pub(crate) fn new(nthreads: usize, ntasks: usize, blocks: usize) -> Split {
        let (n, tasks, blocks) = (nthreads.max(1), ntasks.max(1), blocks.max(1));
        let lanes = |t: usize| (n / t).max(1);
        let cost = |t: usize| tasks.div_ceil(lanes(t)) * blocks.div_ceil(t);
        let candidates = std::iter::successors(Some(2usize), |t| t.checked_mul(2)).take_while(|&t| t < n).chain([n]);
        let mut best = 1;
        for t in candidates {
            if cost(t) * 10 < cost(best) * 9 {
                best = t;
            }
        }
        Split { lanes: lanes(best).min(tasks), blosc: best }
    }

    /// The split of `ctx`'s threads for `ntasks` tasks of `blocks` blocks.
    pub(crate) fn of(ctx: &Context, ntasks: usize, blocks: usize) -> Split {
        Split::new(ctx.nthreads(), ntasks, blocks)
    }
}

/// Run `work` on every task, `split.lanes` at a time, each lane on a worker
/// of `ctx`'s pool pulling the next task until none is left or one failed
/// (a slow task holds up no other lane). The results come in task order.
/// One lane runs on the calling thread, with no hand-off to the pool.
///
/// # Errors
/// The first error of a task (the others stop taking tasks).
pub(crate) fn run_tasks<T: Sync, R: Send>(
    ctx: &Context,
    tasks: &[T],
    split: Split,
    work: impl Fn(&mut Worker, &T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    if split.lanes <= 1 || tasks.len() <= 1 {
        let mut w = Lease::new(ctx);
        return tasks.iter().map(|t| work(&mut w, t)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let lane = || -> Result<Vec<(usize, R)>> {
        let mut w = Lease::new(ctx);
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(task) = tasks.get(i) else { return Ok(done) };
            match work(&mut w, task) {
                Ok(r) => done.push((i, r)),
                Err(e) => {
                    next.store(tasks.len(), std::sync::atomic::Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    };
    // The calling thread runs a lane itself: one hand-off fewer (tens of
    // microseconds, which a small read notices).
    let done = std::sync::Mutex::new(Vec::with_capacity(split.lanes));
    let finish = |r| done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(r);
    ctx.scope(|s| {
        for _ in 1..split.lanes {
            s.spawn(|_| finish(lane()));
        }
        finish(lane());
    })?;
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(tasks.len()).collect();
    let lanes = done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (i, r) in lanes.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten() {
        out[i] = Some(r);
    }
    Ok(out.into_iter().map(|r| r.expect("every task ran: none failed")).collect())
}

/// The split of `ctx`'s threads for compressing `ntasks` whole chunks of `geom`.
pub(crate) fn write_split(ctx: &Context, geom: &Geometry, ntasks: usize) -> Split {
    Split::of(ctx, ntasks, usize::try_from(geom.nblocks()).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn splits_give_blosc_threads_only_where_chunks_are_too_few() {
        let s = |n, tasks, blocks| {
            let s = Split::new(n, tasks, blocks);
            (s.lanes, s.blosc)
        };
        // As many chunks as threads, or more: one thread per chunk.
        assert_eq!(s(16, 120, 128), (16, 1));
        assert_eq!(s(2, 2, 128), (2, 1));
        // A plane's 20 chunks on 16 threads: 4 lanes of 4 threads.
        assert_eq!(s(16, 20, 128), (4, 4));
        // One chunk: its blocks share the threads, no more threads than blocks.
        assert_eq!(s(16, 1, 8), (1, 8));
        assert_eq!(s(16, 1, 128), (1, 16));
        assert_eq!(s(6, 1, 128), (1, 6));
        // A one-block read runs on one thread; so does everything on one thread.
        assert_eq!(s(16, 1, 1), (1, 1));
        assert_eq!(s(1, 20, 128), (1, 1));
        // A 16³ box across 2 chunks of 4 blocks: 2 lanes of 4 threads.
        assert_eq!(s(16, 2, 4), (2, 4));
        // Nothing to do, or a zero budget, still gives a usable split.
        assert_eq!(s(0, 0, 0), (1, 1));
        for n in 1..=64 {
            for tasks in [1, 2, 3, 5, 20, 120] {
                for blocks in [1, 4, 32, 128] {
                    let (lanes, blosc) = s(n, tasks, blocks);
                    assert!(lanes >= 1 && blosc >= 1 && lanes <= tasks, "{n} {tasks} {blocks}");
                    assert!(lanes * blosc <= n.max(1), "{n} threads oversubscribed: {lanes} × {blosc}");
                    assert!(blosc == n || blosc.is_power_of_two());
                }
            }
        }
    }

    #[test]
    // Threads (rayon's pool, crossbeam's epochs) are TSan's to check: Miri
    // rejects crossbeam's pointer casts under strict provenance.
    #[cfg_attr(miri, ignore)]
    fn tasks_run_in_lanes_and_come_back_in_order() {
        let ctx = Context::new(crate::Config { nthreads: 4, ..crate::Config::default() }).unwrap();
        let tasks: Vec<usize> = (0..100).collect();
        for lanes in [1, 2, 4] {
            let split = Split { lanes, blosc: 1 };
            let threads = std::sync::Mutex::new(std::collections::HashSet::new());
            let out = run_tasks(&ctx, &tasks, split, |_, &t| {
                threads.lock().unwrap().insert(std::thread::current().id());
                Ok(t * 2)
            })
            .unwrap();
            assert_eq!(out, tasks.iter().map(|t| t * 2).collect::<Vec<_>>());
            assert!(threads.lock().unwrap().len() <= lanes);
        }
        // A failing task stops the job with its error; later tasks are not all run.
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let err = run_tasks(&ctx, &tasks, Split { lanes: 2, blosc: 1 }, |_, &t| {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if t == 10 {
                Err(Error::InvalidArgument("task 10".into()))
            } else {
                Ok(t)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("task 10"), "{err}");
        assert!(ran.load(std::sync::atomic::Ordering::Relaxed) < tasks.len());
    }
}
