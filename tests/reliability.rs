//! Issue 24's defects, each reproduced: a read-only handle that could
//! replace the file it lies in, metadata a write accepted and an open then
//! refused, a lock file that made opens spin, names beside an array that
//! were trusted or deleted though not ours, and ids of codecs and filters
//! nobody registered. Each test fails without its fix.

use std::path::Path;
use std::time::{Duration, Instant};

use caterva::{Array, Config, Context, ErrorKind, Params, StorageParams};

mod common;
use common::{scratch_dir, Rng};

fn ctx() -> Context {
    Context::new(Config::default()).unwrap()
}

fn checksummed() -> Context {
    Context::new(Config { checksums: true, ..Config::default() }).unwrap()
}

fn params(n: i64) -> Params {
    Params { itemsize: 8, shape: vec![n], dtype: None }
}

fn storage(url: Option<&Path>, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![7],
        blockshape: vec![3],
        contiguous,
        urlpath: url.map(|p| p.to_string_lossy().into_owned()),
        metalayers: Vec::new(),
    }
}

fn values(n: i64) -> Vec<u8> {
    (0..n).flat_map(|i| (i * 3 - 40).to_le_bytes()).collect()
}

/// A new array of 30 items at `url` (in memory for `None`).
fn make(ctx: &Context, url: Option<&Path>, contiguous: bool) -> Array {
    if let Some(u) = url {
        let _ = Array::remove(&u.to_string_lossy());
    }
    Array::from_buffer(ctx, &params(30), &storage(url, contiguous), &values(30)).unwrap()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Every way an array is persisted or moved: the array after `f` reopened
/// from its file, and through `to_cframe`/`from_cframe` and `save`.
fn reopened_everywhere(dir: &Path, ctx: &Context, tag: &str, f: impl Fn(&mut Array)) {
    for contiguous in [true, false] {
        let url = dir.join(format!("{tag}-{contiguous}.b2nd"));
        let mut a = make(ctx, Some(&url), contiguous);
        f(&mut a);
        drop(a);
        let a = Array::open(ctx, &s(&url)).unwrap_or_else(|e| panic!("{tag}: reopen: {e}"));
        assert_eq!(a.to_vec().unwrap(), values(30));
        let copy = dir.join(format!("{tag}-{contiguous}-saved.b2nd"));
        let _ = Array::remove(&s(&copy));
        a.save(&s(&copy)).unwrap();
        Array::open(ctx, &s(&copy)).unwrap_or_else(|e| panic!("{tag}: open the saved copy: {e}"));
    }
    let mut mem = make(ctx, None, true);
    f(&mut mem);
    let frame = mem.to_cframe().unwrap();
    let back = Array::from_cframe(ctx, &frame).unwrap_or_else(|e| panic!("{tag}: from_cframe: {e}"));
    assert_eq!(back.to_vec().unwrap(), values(30));
}

#[test]
fn vlmetalayers_of_zeros_reopen() {
    let dir = scratch_dir("rel_vlmeta_zeros");
    for (ctx, tag) in [(ctx(), "plain"), (checksummed(), "sums")] {
        // c-blosc2 stores 32 or more zero bytes as a special chunk of zeros
        // (33: not a whole number of the array's 8-byte items, which its
        // own copy of a super-chunk got wrong).
        for n in [32usize, 33, 40, 4095, 1 << 20] {
            reopened_everywhere(&dir, &ctx, &format!("z{n}-{tag}"), |a| {
                a.vlmeta_add("z", &vec![0u8; n]).unwrap();
                a.vlmeta_add("other", b"kept").unwrap();
            });
        }
        reopened_everywhere(&dir, &ctx, &format!("update-{tag}"), |a| {
            a.vlmeta_add("z", b"first").unwrap();
            a.vlmeta_update("z", &[0u8; 64]).unwrap();
        });
        let url = dir.join(format!("read-{tag}.b2frame"));
        let mut a = make(&ctx, Some(&url), true);
        a.vlmeta_add("z", &[0u8; 100]).unwrap();
        drop(a);
        let a = Array::open(&ctx, &s(&url)).unwrap();
        assert_eq!(a.vlmeta_get("z").unwrap(), vec![0u8; 100]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metadata_that_would_not_reopen_is_refused_at_write() {
    let dir = scratch_dir("rel_vlmeta_big");
    for contiguous in [true, false] {
        let url = dir.join(format!("big-{contiguous}.b2nd"));
        let mut a = make(&ctx(), Some(&url), contiguous);
        // 17 MiB of zeros: a 32-byte special chunk that claims 17 MiB.
        let e = a.vlmeta_add("huge", &vec![0u8; 17 << 20]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("huge"), "{e}");
        // 20 MiB that compress far more than 4 to 1.
        let e = a.vlmeta_add("big", &vec![7u8; 20 << 20]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(!a.vlmeta_exists("huge").unwrap() && !a.vlmeta_exists("big").unwrap());
        drop(a);
        let a = Array::open(&ctx(), &s(&url)).unwrap();
        assert!(!a.vlmeta_exists("huge").unwrap());
        assert_eq!(a.to_vec().unwrap(), values(30));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Anything a write of metadata accepts, an open accepts: random names and
/// contents (zeros, runs, noise, of every size around c-blosc2's limits).
#[test]
fn whatever_a_metadata_write_accepts_an_open_accepts() {
    let dir = scratch_dir("rel_vlmeta_prop");
    let mut rng = Rng(0x5eed_2400);
    for round in 0..24 {
        let ctx = if round % 2 == 0 { ctx() } else { checksummed() };
        let contiguous = round % 3 != 0;
        let url = dir.join(format!("p{round}.b2nd"));
        let mut a = make(&ctx, Some(&url), contiguous);
        let mut kept = Vec::new();
        for k in 0..rng.range(1, 6) {
            let name_len = rng.range(1, 31) as usize;
            let name: String = (0..name_len).map(|_| (b'a' + rng.range(0, 25) as u8) as char).collect();
            let len = [0, 1, 31, 32, 33, 1000, 70_000, 1 << 20][rng.range(0, 7) as usize];
            let content: Vec<u8> = match rng.range(0, 2) {
                0 => vec![0u8; len],
                1 => vec![rng.range(1, 255) as u8; len],
                _ => rng.bytes(len),
            };
            let r = if k > 0 && rng.chance(30) && !kept.is_empty() {
                let (n, _): &(String, Vec<u8>) = &kept[0];
                let n = n.clone();
                a.vlmeta_update(&n, &content).map(|()| {
                    kept[0].1 = content.clone();
                })
            } else {
                a.vlmeta_add(&name, &content).map(|()| kept.push((name.clone(), content.clone())))
            };
            if let Err(e) = r {
                // Refused (a repeated name): the array still opens below.
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            }
        }
        let frame = a.to_cframe().unwrap();
        drop(a);
        let a = Array::open(&ctx, &s(&url)).unwrap_or_else(|e| panic!("round {round}: {e}"));
        for (n, c) in &kept {
            assert_eq!(&a.vlmeta_get(n).unwrap(), c, "round {round}: vlmetalayer {n}");
        }
        Array::from_cframe(&ctx, &frame).unwrap_or_else(|e| panic!("round {round}: from_cframe: {e}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_read_only_handle_never_replaces_its_file() {
    let dir = scratch_dir("rel_offset");
    let pack = dir.join("pack.bin");
    let _ = std::fs::remove_file(&pack);
    let a = make(&ctx(), None, true);
    let b = Array::zeros(&ctx(), &Params { itemsize: 8, shape: vec![1, 30], dtype: None }, &{
        let mut st = storage(None, true);
        st.chunkshape = vec![2, 7];
        st.blockshape = vec![1, 3];
        st
    })
    .unwrap();
    // The first frame starts the file, so the file looks like a frame file.
    let oa = a.save_append(&s(&pack)).unwrap();
    let ob = b.save_append(&s(&pack)).unwrap();
    assert_eq!(oa, 0);
    let before = std::fs::read(&pack).unwrap();
    for at in [oa, ob] {
        let mut ro = Array::open_offset(&ctx(), &s(&pack), at).unwrap();
        let ndim = ro.ndim();
        let e = ro.expand_dims(0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
        assert!(e.to_string().contains("read-only"), "{e}");
        assert_eq!(ro.ndim(), ndim);
        if ndim == 2 {
            // A squeeze that rewrites the chunks (chunk length 2 on the axis of length 1).
            let e = ro.squeeze().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
        }
        assert_eq!(std::fs::read(&pack).unwrap(), before, "the file changed");
    }
    let a2 = Array::open_offset(&ctx(), &s(&pack), ob).unwrap();
    assert_eq!(a2.shape(), &[1, 30]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rewrites_through_a_symbolic_link_replace_what_it_names() {
    let dir = scratch_dir("rel_symlink");
    for contiguous in [true, false] {
        let real = dir.join(format!("real-{contiguous}.b2nd"));
        let link = dir.join(format!("link-{contiguous}.b2nd"));
        let _ = std::fs::remove_file(&link);
        let mut a = make(&ctx(), Some(&real), contiguous);
        a.vlmeta_add("note", b"kept").unwrap();
        drop(a);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut a = Array::open(&ctx(), &s(&link)).unwrap();
        a.expand_dims(0).unwrap();
        assert_eq!(a.shape(), &[1, 30]);
        assert_eq!(a.to_vec().unwrap(), values(30));
        // squeeze of an axis of length 1 and chunk length 1 is the in-place kind; expand, then squeeze.
        a.squeeze().unwrap();
        assert_eq!(a.shape(), &[30]);
        drop(a);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
        let a = Array::open(&ctx(), &s(&real)).unwrap();
        assert_eq!(a.shape(), &[30]);
        assert_eq!(a.vlmeta_get("note").unwrap(), b"kept");
        assert_eq!(a.to_vec().unwrap(), values(30));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Something other than a lock file where the lock file goes: a clear
/// error at once, nothing created or removed, no spinning.
#[test]
fn foreign_lock_files_are_refused_not_spun_on() {
    let dir = scratch_dir("rel_lock");
    let url = dir.join("a.b2frame");
    let lock = dir.join("a.b2frame.caterva-lock");
    let target = dir.join("elsewhere");
    type Setup = fn(&Path, &Path);
    let cases: [(&str, Setup); 5] = [
        ("dangling symlink", |lock, target| std::os::unix::fs::symlink(target, lock).unwrap()),
        ("symlink to a file", |lock, target| {
            std::fs::write(target, b"").unwrap();
            std::os::unix::fs::symlink(target, lock).unwrap();
        }),
        ("directory", |lock, _| std::fs::create_dir(lock).unwrap()),
        ("fifo", |lock, _| {
            let c = std::ffi::CString::new(lock.to_string_lossy().as_bytes()).unwrap();
            // SAFETY: a valid C string.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
        ("file with content", |lock, _| std::fs::write(lock, b"my notes").unwrap()),
    ];
    for (what, setup) in cases {
        drop(make(&ctx(), Some(&url), true));
        let _ = std::fs::remove_file(&target);
        setup(&lock, &target);
        let snapshot = std::fs::symlink_metadata(&lock).unwrap();
        // (Before the fix, a symlink made this open spin forever: wait for it in a thread.)
        let (tx, rx) = std::sync::mpsc::channel();
        let u = s(&url);
        let t = Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(Array::open(&ctx(), &u).map(drop));
        });
        let e = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what}: open hung")).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{what}: took {:?}", t.elapsed());
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{what}: {e}");
        assert!(e.to_string().contains("not a caterva lock file"), "{what}: {e}");
        let after = std::fs::symlink_metadata(&lock).expect("the thing at the lock's path was removed");
        assert_eq!(after.file_type(), snapshot.file_type(), "{what}");
        if what == "dangling symlink" {
            assert!(std::fs::symlink_metadata(&target).is_err(), "the link's target was created");
        }
        // Writes are refused the same way.
        let e = Array::remove(&s(&url)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{what}: {e}");
        if after.is_dir() {
            std::fs::remove_dir(&lock).unwrap();
        } else {
            std::fs::remove_file(&lock).unwrap();
        }
        assert_eq!(Array::open(&ctx(), &s(&url)).unwrap().to_vec().unwrap(), values(30), "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files of a user's that happen to carry the names caterva uses beside an
/// array are neither trusted nor deleted.
#[test]
fn names_beside_an_array_are_ours_only_by_content() {
    let dir = scratch_dir("rel_sidecars");
    for contiguous in [true, false] {
        let url = dir.join(format!("a-{contiguous}.b2nd"));
        let side = |suffix: &str| dir.join(format!("a-{contiguous}.b2nd{suffix}"));
        drop(make(&ctx(), Some(&url), contiguous));

        // A stray journal that is not one: the array opens, reads, and a
        // write says what is in the way; the file stays.
        std::fs::write(side(".caterva-journal"), b"not a journal, just notes\n").unwrap();
        let mut a = Array::open(&ctx(), &s(&url)).expect("opens despite a stray journal");
        assert_eq!(a.to_vec().unwrap(), values(30));
        let e = a.set_slice_buffer(&[0], &[1], &7i64.to_le_bytes(), &[1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
        assert!(e.to_string().contains("in the way"), "{e}");
        assert_eq!(a.to_vec().unwrap(), values(30));
        drop(a);
        assert_eq!(std::fs::read(side(".caterva-journal")).unwrap(), b"not a journal, just notes\n");
        std::fs::remove_file(side(".caterva-journal")).unwrap();

        // A stray journal-in-the-making and directory put aside: left alone.
        std::fs::write(side(".caterva-journal-tmp"), b"mine").unwrap();
        std::fs::write(side(".caterva-old"), b"also mine").unwrap();
        let mut a = Array::open(&ctx(), &s(&url)).unwrap();
        assert_eq!(a.to_vec().unwrap(), values(30));
        let e = a.set_slice_buffer(&[0], &[1], &7i64.to_le_bytes(), &[1]).unwrap_err();
        assert!(e.to_string().contains("in the way"), "{e}");
        drop(a);
        assert_eq!(std::fs::read(side(".caterva-journal-tmp")).unwrap(), b"mine");
        assert_eq!(std::fs::read(side(".caterva-old")).unwrap(), b"also mine");
        std::fs::remove_file(side(".caterva-journal-tmp")).unwrap();
        std::fs::remove_file(side(".caterva-old")).unwrap();

        // A user's file named like a temporary copy, with a marker of ours
        // (that names other copies) or an empty marker of an earlier version.
        let user = side(".caterva-tmp-123-4");
        std::fs::write(&user, b"user data").unwrap();
        for marker in [&b""[..], &b"caterva-tmp other.caterva-tmp-1-2\n"[..]] {
            std::fs::write(side(".caterva-saving"), marker).unwrap();
            drop(Array::open(&ctx(), &s(&url)).unwrap());
            assert_eq!(std::fs::read(&user).unwrap(), b"user data", "a user's file was deleted");
        }
        // A marker that is not ours: neither trusted nor removed; a
        // rewrite (expand_dims) says what is in the way.
        std::fs::write(side(".caterva-saving"), b"a user's file\n").unwrap();
        let mut a = Array::open(&ctx(), &s(&url)).unwrap();
        let e = a.expand_dims(0).unwrap_err();
        assert!(e.to_string().contains("in the way"), "{e}");
        drop(a);
        assert_eq!(std::fs::read(side(".caterva-saving")).unwrap(), b"a user's file\n");
        assert_eq!(std::fs::read(&user).unwrap(), b"user data");
        std::fs::remove_file(side(".caterva-saving")).unwrap();
        // With nothing in the way, rewrites work and leave nothing behind.
        let mut a = Array::open(&ctx(), &s(&url)).unwrap();
        a.expand_dims(0).unwrap();
        drop(a);
        assert!(std::fs::symlink_metadata(side(".caterva-saving")).is_err());
        assert_eq!(std::fs::read(&user).unwrap(), b"user data");
        std::fs::remove_file(&user).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A killed rewrite's temporary copy is still cleaned up by the next open:
/// the marker names it.
#[test]
fn a_killed_rewrites_copy_is_cleaned_by_name_and_content() {
    let dir = scratch_dir("rel_killed_copy");
    let url = dir.join("a.b2frame");
    drop(make(&ctx(), Some(&url), true));
    // What a writer killed after writing its copy leaves: the marker naming it, and the copy.
    let copy = dir.join("a.b2frame.caterva-tmp-99999-0");
    std::fs::copy(&url, &copy).unwrap();
    std::fs::write(dir.join("a.b2frame.caterva-saving"), b"caterva-tmp a.b2frame.caterva-tmp-99999-0\n").unwrap();
    drop(Array::open(&ctx(), &s(&url)).unwrap());
    assert!(std::fs::symlink_metadata(&copy).is_err(), "the killed writer's copy stayed");
    assert!(std::fs::symlink_metadata(dir.join("a.b2frame.caterva-saving")).is_err(), "the marker stayed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unregistered_codec_and_filter_ids_are_refused_by_the_context() {
    let base = Config::default();
    let with = |codec: u8, filter: u8| {
        let mut c = base;
        c.cparams.codec = caterva::Codec::from_id(codec);
        c.cparams.filters[5] = caterva::Filter::from_id(filter);
        Context::new(c)
    };
    for (codec, filter) in [(99u8, 1u8), (32, 1), (7, 1), (255, 1), (5, 99), (5, 7), (5, 255)] {
        let e = with(codec, filter).map(drop).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "codec {codec} filter {filter}: {e}");
    }
    for codec in [0u8, 1, 2, 4, 5] {
        with(codec, 1).unwrap_or_else(|e| panic!("codec {codec}: {e}"));
    }
    for filter in [0u8, 1, 2, 3, 4] {
        with(5, filter).unwrap_or_else(|e| panic!("filter {filter}: {e}"));
    }
}

/// What damage to an array without checksums is now caught cheaply:
/// every single-bit flip of the offsets index (a frame file's, a sparse
/// directory's) and of the chunk headers' item size, uncompressed and
/// compressed sizes either fails to open or read, or reads exactly the
/// original. (Chunks of incompressible data of one size are the worst
/// case: every chunk offset is a multiple of one length, so a flip often
/// lands on another chunk's start, which read as that chunk's data before.)
#[test]
fn flips_of_the_index_and_chunk_sizes_never_read_as_other_data() {
    let dir = scratch_dir("rel_flips");
    let mut rng = Rng(0xf11b_5eed);
    let n = 8 * 16;
    let random: Vec<u8> = rng.bytes(n * 8);
    let ramp: Vec<u8> = (0..n as i64).flat_map(|i| (i / 3).to_le_bytes()).collect();
    let be = |b: &[u8], at: usize, k: usize| b[at..at + k].iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
    let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let mut silent = Vec::new();
    let mut flips = 0;
    for (tag, data) in [("random", &random), ("ramp", &ramp)] {
        for contiguous in [true, false] {
            let url = dir.join(format!("{tag}-{contiguous}.b2nd"));
            let _ = Array::remove(&s(&url));
            let st = StorageParams {
                chunkshape: vec![16],
                blockshape: vec![4],
                contiguous,
                urlpath: Some(s(&url)),
                metalayers: Vec::new(),
            };
            drop(
                Array::from_buffer(&ctx(), &Params { itemsize: 8, shape: vec![n as i64], dtype: None }, &st, data)
                    .unwrap(),
            );
            // (file, byte ranges to flip) pairs.
            let mut targets: Vec<(std::path::PathBuf, Vec<std::ops::Range<usize>>)> = Vec::new();
            let index_file = if contiguous { url.clone() } else { url.join("chunks.b2frame") };
            let frame = std::fs::read(&index_file).unwrap();
            let header_len = be(&frame, 11, 4) as usize;
            let cbytes = if contiguous { be(&frame, 39, 8) as usize } else { 0 };
            let index_at = header_len + cbytes;
            let index_len = le32(&frame, index_at + 12);
            let mut ranges = Vec::new();
            ranges.push(index_at..index_at + index_len);
            if contiguous {
                // The chunk headers in the data section: walk them.
                let mut at = header_len;
                while at < header_len + cbytes {
                    ranges.push(at + 3..at + 8);
                    ranges.push(at + 12..at + 16);
                    at += le32(&frame, at + 12);
                }
            }
            targets.push((index_file.clone(), ranges));
            if !contiguous {
                for e in std::fs::read_dir(&url).unwrap().flatten() {
                    if e.file_name().to_string_lossy().ends_with(".chunk") {
                        targets.push((e.path(), vec![3..8, 12..16]));
                    }
                }
            }
            for (file, ranges) in targets {
                let original = std::fs::read(&file).unwrap();
                for r in ranges {
                    for byte in r {
                        for bit in 0..8 {
                            let mut damaged = original.clone();
                            damaged[byte] ^= 1 << bit;
                            std::fs::write(&file, &damaged).unwrap();
                            flips += 1;
                            let read = Array::open(&ctx(), &s(&url)).and_then(|a| a.to_vec());
                            if let Ok(v) = read {
                                if &v != data {
                                    silent.push(format!("{tag} {}: byte {byte} bit {bit}", file.display()));
                                }
                            }
                        }
                    }
                }
                std::fs::write(&file, &original).unwrap();
            }
            assert_eq!(&Array::open(&ctx(), &s(&url)).unwrap().to_vec().unwrap(), data);
        }
    }
    assert!(silent.is_empty(), "{} of {flips} flips read as other data:\n{}", silent.len(), silent.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An array whose context has a filter that needs whole items (trunc_prec)
/// updates and copies its metadata, which is compressed as bytes.
#[test]
fn metadata_of_arrays_with_item_filters_updates_and_copies() {
    let dir = scratch_dir("rel_vlmeta_trunc");
    let mut cfg = Config::default();
    use caterva::Filter::{NoFilter, Shuffle, TruncPrec};
    cfg.cparams.filters = [NoFilter, NoFilter, NoFilter, NoFilter, TruncPrec, Shuffle];
    cfg.cparams.filters_meta = [0, 0, 0, 0, 20, 0];
    let ctx = Context::new(cfg).unwrap();
    for contiguous in [true, false] {
        let url = dir.join(format!("t-{contiguous}.b2nd"));
        let _ = Array::remove(&s(&url));
        let st = storage(Some(&url), contiguous);
        let params = Params { itemsize: 4, shape: vec![30], dtype: Some("<f4".into()) };
        let data: Vec<u8> = (0..30).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
        let mut a = Array::from_buffer(&ctx, &params, &st, &data).unwrap();
        a.vlmeta_add("note", b"first").unwrap();
        for k in 0..3 {
            a.vlmeta_update("note", format!("value {k}").as_bytes()).unwrap();
        }
        let frame = a.to_cframe().unwrap();
        drop(a);
        let a = Array::open(&ctx, &s(&url)).unwrap();
        assert_eq!(a.vlmeta_get("note").unwrap(), b"value 2");
        let b = Array::from_cframe(&ctx, &frame).unwrap();
        assert_eq!(b.vlmeta_get("note").unwrap(), b"value 2");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A frame whose header names filters nobody registered (255, as the
/// fuzzer made it): copying it (`to_cframe` of a file array, `save`) stores
/// its metadata again, which must not use those filters (c-blosc2's failed
/// update then freed the old value twice).
#[test]
fn copies_of_frames_with_unusable_parameters_keep_their_metadata() {
    let dir = scratch_dir("rel_bad_params");
    let src = common::manifest_dir().join("fuzz/regressions/open_file/vlmeta-copy-compression-fails-double-free");
    let url = dir.join("f.b2frame");
    std::fs::copy(&src, &url).unwrap();
    let a = Array::open(&ctx(), &s(&url)).unwrap();
    let frame = a.to_cframe().unwrap();
    let b = Array::from_cframe(&ctx(), &frame).unwrap();
    for name in ["info", "tiny"] {
        assert_eq!(b.vlmeta_get(name).unwrap(), a.vlmeta_get(name).unwrap(), "{name}");
    }
    let copy = dir.join("copy.b2frame");
    a.save(&s(&copy)).unwrap();
    assert_eq!(Array::open(&ctx(), &s(&copy)).unwrap().vlmeta_get("tiny").unwrap(), a.vlmeta_get("tiny").unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 25: c-blosc2 writes at most 16 vlmetalayers into a frame; the 17th
/// failed inside c-blosc2 for files, and for arrays in memory only later,
/// when they were saved or serialised. It is refused up front everywhere,
/// with the array unchanged. A fixed-size metalayer holds at most 16 MiB.
#[test]
fn the_seventeenth_vlmetalayer_and_oversized_metalayers_are_refused() {
    let dir = scratch_dir("vlmeta-count");
    for (ctx, room) in [(ctx(), 16), (checksummed(), 15)] {
        for (url, contiguous) in [(None, false), (Some(dir.join("c.b2frame")), true), (Some(dir.join("s.b2nd")), false)]
        {
            let mut a = make(&ctx, url.as_deref(), contiguous);
            for i in 0..room {
                a.vlmeta_add(&format!("k{i}"), &[i as u8; 3]).unwrap();
            }
            let e = a.vlmeta_add("extra", b"x").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.to_string().contains("no room for vlmetalayer 'extra'"), "{e}");
            a.vlmeta_update("k0", b"longer content").unwrap();
            let b = Array::from_cframe(&ctx, &a.to_cframe().unwrap()).unwrap();
            assert_eq!(b.vlmeta_get("k0").unwrap(), b"longer content");
            if let Some(u) = &url {
                drop(a);
                let a = Array::open(&ctx, &s(u)).unwrap();
                assert!(!a.vlmeta_exists("extra").unwrap());
                assert_eq!(a.vlmeta_get(&format!("k{}", room - 1)).unwrap(), [(room - 1) as u8; 3]);
            }
        }
    }
    let mut st = storage(None, false);
    st.metalayers = vec![caterva::Metalayer { name: "m".into(), content: vec![0; (16 << 20) + 1] }];
    let e = Array::zeros(&ctx(), &params(10), &st).unwrap_err();
    assert!(e.kind() == ErrorKind::InvalidArgument && e.to_string().contains("at most 16777216"), "{e}");
    st.metalayers[0].content.pop();
    assert_eq!(Array::zeros(&ctx(), &params(10), &st).unwrap().meta_get("m").unwrap().len(), 16 << 20);
}
