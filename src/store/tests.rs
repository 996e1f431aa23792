//! The store's write path: every public write of an [`Array`] goes through
//! [`Store::write`]'s transaction, which journals it and keeps the checksum
//! table. Proved by failing each write at each of its operations in turn
//! (the fault-injection point is [`Tx::before`], run before every chunk or
//! metalayer operation) and checking what is left.

use crate::error::Result;
use crate::{Array, Config, Context, Metalayer, Params, StorageParams};

/// A fault injected into the calling thread's next transaction operations.
pub(crate) mod fault {
    use std::cell::Cell;

    use crate::error::{Error, Result};

    thread_local! {
        /// Operations to let through before failing one; `None`: no fault.
        static COUNTDOWN: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Called before every operation of a transaction.
    pub(crate) fn hit() -> Result<()> {
        COUNTDOWN.with(|c| match c.get() {
            Some(0) => {
                c.set(None);
                Err(injected())
            }
            Some(n) => {
                c.set(Some(n - 1));
                Ok(())
            }
            None => Ok(()),
        })
    }

    /// The error a fault produces.
    pub(crate) fn injected() -> Error {
        Error::blosc("injected fault", None)
    }

    /// Fail the operation after the next `ops` ones.
    pub(crate) fn arm(ops: usize) {
        COUNTDOWN.with(|c| c.set(Some(ops)));
    }

    /// Disarm; whether the fault fired.
    pub(crate) fn disarm() -> bool {
        COUNTDOWN.with(|c| c.replace(None).is_none())
    }
}

type Write = fn(&mut Array) -> Result<()>;

/// Every public write of an array, on a {1, 12, 10} array of u16 in
/// {1, 5, 4} chunks with a user metalayer "m" and a vlmetalayer "note".
const WRITES: &[(&str, Write)] = &[
    ("set_slice_buffer", |a| a.set_slice_buffer(&[0, 3, 2], &[1, 9, 8], &[7; 2 * 36], &[1, 6, 6])),
    ("set_orthogonal_selection", |a| a.set_orthogonal_selection(&[&[0], &[1, 7, 11], &[0, 9]], &[5; 12], &[1, 3, 2])),
    ("resize (grow)", |a| a.resize(&[1, 17, 13], None)),
    ("resize (shrink, inside)", |a| a.resize(&[1, 6, 10], Some(&[0, 2, 0]))),
    ("resize (grow by many chunks)", |a| a.resize(&[1, 12, 34], None)),
    ("append (many chunks)", |a| a.append(&[4; 2 * 12 * 24], 2)),
    ("insert", |a| a.insert(&[3; 2 * 20], 1, 4)),
    ("append", |a| a.append(&[4; 2 * 12], 2)),
    ("delete", |a| a.delete(1, 3, 7)),
    ("squeeze", Array::squeeze),
    ("meta_update", |a| a.meta_update("m", b"MM")),
    ("vlmeta_add", |a| a.vlmeta_add("other", b"new")),
    ("vlmeta_update", |a| a.vlmeta_update("note", b"a much longer note than before")),
    ("set_dtype", |a| a.set_dtype("<i2")),
    ("expand_dims", |a| a.expand_dims(1)),
];

/// What a reader sees of an array: shape, items, metalayer "m", vlmetalayer "note", dtype.
type Seen = (Vec<i64>, Vec<u8>, Vec<u8>, Vec<u8>, Option<String>);

fn seen(a: &Array) -> Seen {
    (a.shape().to_vec(), a.to_vec().unwrap(), a.meta_get("m").unwrap(), a.vlmeta_get("note").unwrap(), a.dtype())
}

fn make(ctx: &Context, url: Option<&str>, contiguous: bool, chunk0: i32) -> Array {
    if let Some(u) = url {
        let _ = Array::remove(u);
    }
    let params = Params { itemsize: 2, shape: vec![1, 12, 10], dtype: None };
    let storage = StorageParams {
        chunkshape: vec![chunk0, 5, 4],
        blockshape: vec![1, 2, 2],
        contiguous,
        urlpath: url.map(str::to_owned),
        metalayers: vec![Metalayer { name: "m".into(), content: b"mm".to_vec() }],
    };
    let data: Vec<u8> = (0..240u16).flat_map(|v| (v * 7).to_le_bytes()).collect();
    let mut a = Array::from_buffer(ctx, &params, &storage, &data).unwrap();
    a.vlmeta_add("note", b"first").unwrap();
    a
}

fn sound(a: &Array, what: &str) {
    let problems = a.verify(&mut |_, _| {}).unwrap();
    assert!(problems.is_empty(), "{what}: {problems:?}");
}

/// Fail `write` at every operation it makes in turn, then let it succeed.
/// Returns how many operations it made.
fn fail_everywhere(ctx: &Context, url: Option<&str>, contiguous: bool, chunk0: i32, name: &str, write: Write) -> usize {
    for k in 0.. {
        let what = format!("{name} on {url:?} failing at operation {k}");
        let mut a = make(ctx, url, contiguous, chunk0);
        let checksums = a.has_checksums();
        let before = seen(&a);
        fault::arm(k);
        let r = write(&mut a);
        if !fault::disarm() {
            // Every operation went through: the write is whole, and checked.
            r.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(a.has_checksums(), checksums || name == "enable_checksums", "{what}");
            sound(&a, &what);
            if let Some(u) = url {
                let back = Array::open(ctx, u).unwrap();
                assert_eq!(seen(&back), seen(&a), "{what}: reopened");
                sound(&back, &what);
            }
            return k;
        }
        assert_eq!(r, Err(fault::injected()), "{what}");
        // The table describes what is there: every chunk reads.
        sound(&a, &what);
        if let Some(u) = url {
            // Rolled back: in memory and on disk, as before; the journal gone.
            assert_eq!(seen(&a), before, "{what}");
            assert!(!super::journal::journal_path(u).exists(), "{what}: journal left");
            let back = Array::open(ctx, u).unwrap();
            assert_eq!(seen(&back), before, "{what}: reopened");
            assert_eq!(back.has_checksums(), checksums, "{what}");
            sound(&back, &what);
        }
    }
    unreachable!()
}

#[test]
fn every_public_write_is_journaled_and_checksummed() {
    let dir = std::env::temp_dir().join(format!("caterva-store-{}-writes", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a.b2frame").to_string_lossy().into_owned();
    let sparse = dir.join("a.b2nd").to_string_lossy().into_owned();
    let summed = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let plain = Context::new(Config::default()).unwrap();
    for (url, contiguous) in [(None, true), (Some(file.as_str()), true), (Some(sparse.as_str()), false)] {
        for &(name, write) in WRITES {
            let ops = fail_everywhere(&summed, url, contiguous, 1, name, write);
            assert!(ops > 0, "{name} on {url:?} made no operation through the store");
        }
        // A squeeze that changes the chunk layout writes a new array in its place.
        let ops = fail_everywhere(&summed, url, contiguous, 2, "squeeze (relayout)", Array::squeeze);
        assert!(ops > 0);
        let ops = fail_everywhere(&plain, url, contiguous, 1, "enable_checksums", Array::enable_checksums);
        assert!(ops > 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_borrowed_frame_is_copied_before_a_write() {
    let ctx = Context::new(Config::default()).unwrap();
    let a = make(&ctx, None, true, 1);
    let frame = a.to_cframe().unwrap();
    let keep = frame.clone();
    // SAFETY: `frame` outlives the array.
    let store = unsafe { super::Store::from_cframe(frame.as_ptr(), frame.len(), false) }.unwrap();
    let mut b = Array::wrap(&ctx, store).unwrap();
    b.set_slice_buffer(&[0, 0, 0], &[1, 1, 1], &[9; 2], &[1, 1, 1]).unwrap();
    b.append(&[1; 2 * 12], 2).unwrap();
    assert_eq!(frame, keep, "the caller's buffer was written");
    assert_eq!(b.to_vec().unwrap()[..2], [9, 9]);
    drop(b);
}
