use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::store::frame;
use crate::store::location::{memory, Condition, Location};
use crate::{Array, Config, Context, ErrorKind, Metalayer, Params, StorageParams};

const SHAPE: [i64; 3] = [9, 14, 11];

fn items() -> Vec<u8> {
    (0..SHAPE.iter().product::<i64>()).flat_map(|v| ((v * 31 + 7) as u16).to_le_bytes()).collect()
}

/// A new bucket's name (tests run side by side).
fn bucket() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("versioned-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A local array of [`SHAPE`] u16 items in [4, 5, 4] chunks of [2, 3, 2]
/// blocks, with a metalayer and a vlmetalayer, at `dir/a.<ext>`.
fn local(ctx: &Context, dir: &Path, contiguous: bool) -> String {
    let url = dir.join(if contiguous { "a.b2frame" } else { "a.b2nd" }).to_string_lossy().into_owned();
    let _ = Array::remove(&url);
    let params = Params { itemsize: 2, shape: SHAPE.to_vec(), dtype: None };
    let storage = StorageParams {
        chunkshape: vec![4, 5, 4],
        blockshape: vec![2, 3, 2],
        contiguous,
        urlpath: Some(url.clone()),
        metalayers: vec![Metalayer { name: "m".into(), content: b"mm".to_vec() }],
    };
    let mut a = Array::from_buffer(ctx, &params, &storage, &items()).unwrap();
    a.vlmeta_add("note", b"remote").unwrap();
    url
}

/// Upload the array at the local `url` to `key` in `bucket`: its file,
/// or its directory's files under the prefix `key`, the index last.
fn upload(url: &str, bucket: &memory::Memory, key: &str) {
    let path = Path::new(url);
    if path.is_file() {
        bucket.put(key, &std::fs::read(path).unwrap(), Condition::Always).unwrap();
        return;
    }
    // The chunks before the index that names them, as a writer puts them
    // (a chunk object dated after its index costs a reader a request more).
    let mut files: Vec<_> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort_by_key(|f| f.extension().is_some_and(|x| x == "b2frame"));
    for f in files {
        let name = format!("{key}/{}", f.file_name().unwrap().to_str().unwrap());
        bucket.put(&name, &std::fs::read(&f).unwrap(), Condition::Always).unwrap();
    }
}

/// A sparse array of `n` u32 zeros in chunks of 32 (blocks of 8), made
/// in `temp_dir(what)` and uploaded to `key` in a new bucket: the
/// directory, the bucket and the array's `mem://` URL.
fn zeros_in_memory(
    ctx: &Context,
    what: &str,
    n: i64,
    key: &str,
) -> (std::path::PathBuf, std::sync::Arc<memory::Memory>, String) {
    let dir = temp_dir(what);
    let url = dir.join(format!("{key}.b2nd")).to_string_lossy().into_owned();
    let params = Params { itemsize: 4, shape: vec![n], dtype: None };
    let storage = StorageParams {
        chunkshape: vec![32],
        blockshape: vec![8],
        contiguous: false,
        urlpath: Some(url.clone()),
        metalayers: vec![],
    };
    Array::zeros(ctx, &params, &storage).unwrap();
    let name = bucket();
    let b = memory::bucket(&name);
    upload(&url, &b, key);
    (dir, b, format!("mem://{name}/{key}"))
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("caterva-versioned-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What a reader sees: items, a slice across chunks, a one-item slice,
/// the metalayer and the vlmetalayer.
type Seen = [Vec<u8>; 5];

fn seen(a: &Array) -> Seen {
    let mut part = vec![0; 2 * 3 * 7 * 5];
    a.get_slice_buffer(&[3, 2, 5], &[6, 9, 10], &mut part, &[3, 7, 5]).unwrap();
    let mut one = vec![0; 2];
    a.get_slice_buffer(&[8, 13, 10], &[9, 14, 11], &mut one, &[1, 1, 1]).unwrap();
    [a.to_vec().unwrap(), part, one, a.meta_get("m").unwrap(), a.vlmeta_get("note").unwrap()]
}

fn contexts() -> [Context; 3] {
    let plain = Context::new(Config::default()).unwrap();
    let summed = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let cached = Context::new(Config { block_cache: 1 << 20, ..Config::default() }).unwrap();
    [plain, summed, cached]
}

#[test]
fn arrays_at_a_remote_location_read_as_on_disk() {
    let dir = temp_dir("reads");
    for (i, ctx) in contexts().iter().enumerate() {
        for contiguous in [true, false] {
            let what = format!("context {i}, contiguous {contiguous}");
            let url = local(ctx, &dir, contiguous);
            let mine = Array::open(ctx, &url).unwrap();
            let name = bucket();
            let b = memory::bucket(&name);
            upload(&url, &b, "dir/a.array");
            let remote_url = format!("mem://{name}/dir/a.array");
            let remote = Array::open(ctx, &remote_url).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(remote.shape(), SHAPE, "{what}");
            assert_eq!(seen(&remote), seen(&mine), "{what}");
            assert_eq!(remote.has_checksums(), mine.has_checksums(), "{what}");
            assert!(remote.verify(&mut |_, _| {}).unwrap().is_empty(), "{what}");
            // It says where it is, by its URL.
            assert_eq!(remote.store().storage().urlpath.as_deref(), Some(remote_url.as_str()), "{what}");
            assert_eq!(remote.store().storage().contiguous, contiguous, "{what}");
            // Copies out: saved to a local path, and copied in memory.
            let back = dir.join(format!("back-{i}-{contiguous}")).to_string_lossy().into_owned();
            remote.save(&back).unwrap();
            assert_eq!(seen(&Array::open(ctx, &back).unwrap()), seen(&mine), "{what}: saved");
            let mem = remote.copy(
                ctx,
                &StorageParams { chunkshape: vec![4, 5, 4], blockshape: vec![2, 3, 2], ..Default::default() },
            );
            assert_eq!(mem.unwrap().to_vec().unwrap(), items(), "{what}: copied");
            // Nothing of it is left to the stand-in's registry once it is closed.
            let params = remote.store().sc.io_params();
            assert!(crate::store::blosc_io::stand_in_url(params).is_some(), "{what}");
            drop(remote);
            assert!(crate::store::blosc_io::stand_in_url(params).is_none(), "{what}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_frame_at_an_offset_of_a_remote_object_reads() {
    let dir = temp_dir("offset");
    let ctx = Context::new(Config::default()).unwrap();
    let url = local(&ctx, &dir, true);
    let a = Array::open(&ctx, &url).unwrap();
    let host = dir.join("host.bin").to_string_lossy().into_owned();
    std::fs::write(&host, b"not a frame, just bytes before it").unwrap();
    let at = a.save_append(&host).unwrap();
    let name = bucket();
    upload(&host, &memory::bucket(&name), "host.bin");
    let remote = Array::open_offset(&ctx, &format!("mem://{name}/host.bin"), at).unwrap();
    assert_eq!(seen(&remote), seen(&a));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn arrays_are_made_replaced_and_removed_at_a_remote_location() {
    let dir = temp_dir("rewrites");
    for ctx in contexts() {
        for contiguous in [true, false] {
            let url = local(&ctx, &dir, contiguous);
            let name = bucket();
            let b = memory::bucket(&name);
            let remote_url = format!("mem://{name}/a");
            let disk = Array::open(&ctx, &url).unwrap();
            // Saved there (nothing there before), then read as on disk.
            disk.save(&remote_url).unwrap();
            let mut remote = Array::open(&ctx, &remote_url).unwrap();
            assert_eq!(seen(&remote), seen(&disk));
            if !contiguous {
                let (objects, named) = chunk_objects(&b, "a");
                assert_eq!(objects.len(), named.len(), "the chunk objects keep their own names");
            }
            // Made there.
            let storage = StorageParams {
                chunkshape: vec![4, 5, 4],
                blockshape: vec![2, 3, 2],
                contiguous,
                urlpath: Some(format!("mem://{name}/new")),
                metalayers: vec![],
            };
            let params = Params { itemsize: 2, shape: SHAPE.to_vec(), dtype: None };
            let made = Array::from_buffer(&ctx, &params, &storage, &items()).unwrap();
            assert_eq!(made.to_vec().unwrap(), items());
            assert_eq!(Array::open(&ctx, &format!("mem://{name}/new")).unwrap().to_vec().unwrap(), items());
            // A reshape that rewrites the layout, as on disk (on a copy:
            // `disk` stays the 3-d original, read below).
            let copy = format!("{url}-copy");
            disk.save(&copy).unwrap();
            let mut on_disk = Array::open(&ctx, &copy).unwrap();
            remote.expand_dims(0).unwrap();
            on_disk.expand_dims(0).unwrap();
            assert_eq!(remote.shape(), on_disk.shape());
            assert_eq!(remote.to_vec().unwrap(), on_disk.to_vec().unwrap());
            let fresh = Array::open(&ctx, &remote_url).unwrap();
            assert_eq!(fresh.shape(), on_disk.shape());
            assert_eq!(fresh.to_vec().unwrap(), on_disk.to_vec().unwrap());
            if !contiguous {
                let (objects, named) = chunk_objects(&b, "a");
                assert_eq!(objects.len(), named.len(), "the replaced array's chunk objects went");
            }
            // Saved over by another array (3-d again): a handle of the old
            // (4-d) version loses its write's race, is brought up to date
            // and its write no longer fits: refused, nothing written.
            disk.save(&remote_url).unwrap();
            let e = remote.set_slice_buffer(&[0, 0, 0, 0], &[1, 1, 1, 1], &[1; 2], &[1, 1, 1, 1]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            assert_eq!(remote.shape(), SHAPE);
            assert_eq!(seen(&Array::open(&ctx, &remote_url).unwrap()), seen(&disk));
            // Saving a frame after another in one object stays refused.
            assert_eq!(disk.save_append(&remote_url).unwrap_err().kind(), ErrorKind::InvalidStorage);
            // Something that is not an array is not overwritten.
            b.put("text", b"notes", Condition::Always).unwrap();
            assert!(disk.save(&format!("mem://{name}/text")).is_err());
            assert_eq!(crate::store::location::Location::open(&*b, "text").unwrap().len(), 5);
            // Removed: gone for every reader, objects and all.
            Array::remove(&remote_url).unwrap();
            assert_eq!(Array::open(&ctx, &remote_url).unwrap_err().kind(), ErrorKind::InvalidStorage);
            assert!(b.list("").unwrap().iter().all(|e| e.name != "a"), "{:?}", b.list("").unwrap());
            Array::remove(&remote_url).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The chunk objects of the sparse frame `key` in `b` (name, generation)
/// and the ids its index names.
fn chunk_objects(b: &memory::Memory, key: &str) -> (Vec<(String, crate::store::location::Generation)>, Vec<i64>) {
    let objects: Vec<_> = b
        .list(key)
        .unwrap()
        .into_iter()
        .filter(|e| e.name.ends_with(".chunk"))
        .map(|e| (e.name, e.generation))
        .collect();
    let index = b.open(&format!("{key}/chunks.b2frame")).unwrap();
    let bytes = index.read_vec(0, index.len() as usize).unwrap();
    let (_, offsets, _) = super::index_offsets(key, &bytes).unwrap();
    (objects, offsets.into_iter().filter(|&o| o >= 0).collect())
}

/// The sparse frame `key` in `b` names only chunk objects that c-blosc2
/// 3.x accepts (numbers up to its header's `cbytes` less 32).
fn assert_blosc2_names(b: &memory::Memory, key: &str) {
    let index = b.open(&format!("{key}/chunks.b2frame")).unwrap();
    let bytes = index.read_vec(0, index.len() as usize).unwrap();
    let (_, offsets, s) = super::index_offsets(key, &bytes).unwrap();
    for id in offsets.into_iter().filter(|&o| o >= 0) {
        assert!(id <= s.cbytes - 32, "chunk object {id} is past c-blosc2's bound {}", s.cbytes - 32);
    }
}

#[test]
fn fresh_chunk_numbers_stay_within_the_bound_and_avoid_taken_ones() {
    let mut ids = super::FreshIds::new(9, [0, 3, 5, -7]);
    let mut got: Vec<i64> = std::iter::from_fn(|| ids.next()).collect();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 4, 6, 7, 8, 9]);
    assert!(super::FreshIds::new(-1, []).next().is_none());
    assert_eq!(super::FreshIds::new(0, []).next(), Some(0));
    // Two writers drawing from a wide room rarely meet.
    let (mut a, mut b) = (super::FreshIds::new(1 << 20, []), super::FreshIds::new(1 << 20, []));
    let a: std::collections::HashSet<i64> = (0..50).map(|_| a.next().unwrap()).collect();
    assert!((0..50).filter(|_| a.contains(&b.next().unwrap())).count() < 3);
    assert_eq!(super::cblosc2_bound(1000), 968);
}

#[test]
fn writes_at_a_remote_location_match_the_same_writes_on_disk() {
    let dir = temp_dir("writes");
    for ctx in contexts() {
        for contiguous in [true, false] {
            let url = local(&ctx, &dir, contiguous);
            let name = bucket();
            let b = memory::bucket(&name);
            upload(&url, &b, "a");
            let remote_url = format!("mem://{name}/a");
            let mut remote = Array::open(&ctx, &remote_url).unwrap();
            let mut disk = Array::open(&ctx, &url).unwrap();
            let mut before = if contiguous { None } else { Some(chunk_objects(&b, "a")) };
            type Write = fn(&mut Array) -> crate::Result<()>;
            let writes: [Write; 6] = [
                // Parts of several chunks.
                |a| a.set_slice_buffer(&[3, 2, 5], &[6, 9, 10], &[0x5A; 2 * 3 * 7 * 5], &[3, 7, 5]),
                |a| a.set_orthogonal_selection(&[&[0, 8], &[13, 1], &[10]], &[0x11; 8], &[2, 2, 1]),
                // One whole chunk (the first), then zeros over another.
                |a| a.set_slice_buffer(&[0, 0, 0], &[4, 5, 4], &[0x77; 2 * 80], &[4, 5, 4]),
                |a| a.set_slice_buffer(&[4, 5, 4], &[8, 10, 8], &[0; 2 * 80], &[4, 5, 4]),
                |a| a.vlmeta_add("added", b"by a remote write"),
                |a| a.meta_update("m", b"MM"),
            ];
            for (i, w) in writes.iter().enumerate() {
                w(&mut remote).unwrap_or_else(|e| panic!("write {i} (contiguous {contiguous}): {e}"));
                w(&mut disk).unwrap();
                assert_eq!(seen(&remote), seen(&disk), "write {i}, contiguous {contiguous}");
                let fresh = Array::open(&ctx, &remote_url).unwrap();
                assert_eq!(seen(&fresh), seen(&disk), "write {i} reopened, contiguous {contiguous}");
                assert_eq!(fresh.vlmeta_get("added").ok(), disk.vlmeta_get("added").ok());
                assert!(fresh.verify(&mut |_, _| {}).unwrap().is_empty());
                if let Some((objects, _)) = &before {
                    assert_blosc2_names(&b, "a");
                    // No chunk object was written over (a number the last
                    // version gave up may be drawn again: a new object), and
                    // no object the index does not name is left behind.
                    let (now, named) = chunk_objects(&b, "a");
                    for (n, g) in &now {
                        if let Some((_, old)) = objects.iter().find(|(o, _)| o == n) {
                            assert_eq!(g, old, "write {i}: {n} was written over");
                        }
                    }
                    let mut ids: Vec<i64> =
                        now.iter().map(|(n, _)| frame::chunk_id(n.rsplit('/').next().unwrap()).unwrap()).collect();
                    let mut named_ids = named.clone();
                    ids.sort_unstable();
                    named_ids.sort_unstable();
                    named_ids.dedup();
                    assert_eq!(ids, named_ids, "write {i}: the chunk objects are those the index names");
                    before = Some((now, named));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write that replaces a chunk removes the object the old version named,
/// and a later write may draw that number again for another chunk (the
/// numbers must stay below the frame's `cbytes`, so they are few). A
/// reader still on the old version then gets [`ErrorKind::Changed`], never
/// the other chunk's bytes; a reader of the version there reads what was
/// written; whether the store dates objects in nanoseconds or, as S3, in
/// whole seconds (then the reader asks whether its version is still there).
#[test]
fn a_reader_of_a_replaced_version_never_reads_a_chunk_under_a_reused_name() {
    let dir = temp_dir("reused");
    for (i, ctx) in contexts().iter().enumerate() {
        for seconds in [false, true] {
            let what = format!("context {i}, dated in seconds {seconds}");
            let url = local(ctx, &dir, false);
            let name = bucket();
            let b = memory::bucket(&name);
            b.seconds.store(seconds, Ordering::Relaxed);
            upload(&url, &b, "a");
            let remote_url = format!("mem://{name}/a");
            let old = Array::open(ctx, &remote_url).unwrap();
            let (_, named) = chunk_objects(&b, "a");
            let first = format!("a/{}", frame::chunk_name(named[0]));
            // The first chunk written whole: a new object, the old one removed.
            let mut writer = Array::open(ctx, &remote_url).unwrap();
            writer.set_slice_buffer(&[0, 0, 0], &[4, 5, 4], &[0x77; 2 * 80], &[4, 5, 4]).unwrap();
            assert!(b.stat(&first).unwrap().is_none(), "{what}: the replaced chunk object is removed");
            // Its number drawn again for another chunk (its bytes: the last
            // chunk's, which decode as a chunk of this array).
            let (_, now) = chunk_objects(&b, "a");
            let last = b.open(&format!("a/{}", frame::chunk_name(*now.last().unwrap()))).unwrap();
            b.put(&first, &last.read_vec(0, last.len() as usize).unwrap(), Condition::IfAbsent).unwrap();
            let mut got = vec![0; 2 * 80];
            let e = old.get_slice_buffer(&[0, 0, 0], &[4, 5, 4], &mut got, &[4, 5, 4]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Changed, "{what}: {e}");
            let fresh = Array::open(ctx, &remote_url).unwrap();
            fresh.get_slice_buffer(&[0, 0, 0], &[4, 5, 4], &mut got, &[4, 5, 4]).unwrap();
            assert_eq!(got, [0x77; 2 * 80], "{what}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn writers_racing_on_one_remote_array_lose_nothing() {
    const N: i64 = 96;
    for checksums in [false, true] {
        let ctx = Context::new(Config { checksums, ..Config::default() }).unwrap();
        let (dir, b, remote_url) = zeros_in_memory(&ctx, &format!("race-{checksums}"), N, "r");
        const WRITERS: i64 = 4;
        std::thread::scope(|s| {
            for t in 0..WRITERS {
                let (ctx, remote_url) = (&ctx, &remote_url);
                s.spawn(move || {
                    let mut a = Array::open(ctx, remote_url).unwrap();
                    // Every item of this writer, one at a time: parts of chunks others write too.
                    for i in (t..N).step_by(WRITERS as usize) {
                        let v = (i as u32 + 1) * 1000 + t as u32;
                        a.set_slice_buffer(&[i], &[i + 1], &v.to_le_bytes(), &[1]).unwrap();
                    }
                });
            }
        });
        let a = Array::open(&ctx, &remote_url).unwrap();
        let got: Vec<u32> = a.to_vec().unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let want: Vec<u32> = (0..N).map(|i| (i as u32 + 1) * 1000 + (i % WRITERS) as u32).collect();
        assert_eq!(got, want, "checksums {checksums}");
        assert!(a.verify(&mut |_, _| {}).unwrap().is_empty());
        let (objects, named) = chunk_objects(&b, "r");
        assert_eq!(objects.len(), named.len(), "no chunk object left behind");
        // What a writer killed before publishing leaves: a chunk object
        // no index names. Removed once old enough, not before.
        b.put("r/7FFFFFFE.chunk", b"orphan", Condition::IfAbsent).unwrap();
        assert_eq!(a.remove_orphans(std::time::Duration::from_secs(3600)).unwrap(), 0);
        assert_eq!(a.remove_orphans(std::time::Duration::ZERO).unwrap(), 1);
        assert!(b.stat("r/7FFFFFFE.chunk").unwrap().is_none());
        assert_eq!(a.to_vec().unwrap(), Array::open(&ctx, &remote_url).unwrap().to_vec().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A handle reads the version it opened, even through c-blosc2's own
/// reads of the offsets index (a checksummed array's chunks are read
/// that way): after another writer replaced a chunk, the handle's read
/// of it is the old values or an error, never the new chunk checked
/// against the old checksums (a false `Corrupt`), until it refreshes.
#[test]
fn a_handle_reads_its_own_version_after_another_writes() {
    let ctx = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let (dir, _, remote_url) = zeros_in_memory(&ctx, "pinned", 96, "p");
    let mut reader = Array::open(&ctx, &remote_url).unwrap();
    let mut writer = Array::open(&ctx, &remote_url).unwrap();
    let sevens: Vec<u8> = std::iter::repeat(7u32.to_le_bytes()).take(32).flatten().collect();
    writer.set_slice_buffer(&[0], &[32], &sevens, &[32]).unwrap();
    let mut got = vec![0u8; 32 * 4];
    match reader.get_slice_buffer(&[0], &[32], &mut got, &[32]) {
        Ok(()) => assert_eq!(got, vec![0u8; 32 * 4], "the old values"),
        Err(e) => assert_ne!(e.kind(), ErrorKind::Corrupt, "{e}"),
    }
    reader.get_slice_buffer(&[32], &[64], &mut got, &[32]).unwrap();
    assert_eq!(got, vec![0u8; 32 * 4], "an unchanged chunk");
    assert!(reader.refresh().unwrap());
    reader.get_slice_buffer(&[0], &[32], &mut got, &[32]).unwrap();
    assert_eq!(got, sevens);
    assert!(reader.verify(&mut |_, _| {}).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_and_damaged_remote_objects_fail_cleanly() {
    let dir = temp_dir("damaged");
    let name = bucket();
    let b = memory::bucket(&name);
    let [plain, summed, _] = contexts();
    let open = |key: &str, ctx: &Context| Array::open(ctx, &format!("mem://{name}/{key}"));
    assert_eq!(open("nothing", &plain).unwrap_err().kind(), ErrorKind::InvalidStorage);
    b.put("garbage", b"certainly not a frame", Condition::Always).unwrap();
    assert_eq!(open("garbage", &plain).unwrap_err().kind(), ErrorKind::InvalidFormat);
    let url = local(&plain, &dir, true);
    let frame = std::fs::read(&url).unwrap();
    b.put("cut", &frame[..frame.len() - 9], Condition::Always).unwrap();
    assert_eq!(open("cut", &plain).unwrap_err().kind(), ErrorKind::InvalidFormat);
    // A sparse frame missing a chunk object: reads of it fail, the rest read.
    let url = local(&plain, &dir, false);
    upload(&url, &b, "holed");
    b.remove("holed/00000001.chunk", None).unwrap();
    let holed = open("holed", &plain).unwrap();
    let mut first = vec![0; 2 * 4 * 5 * 4];
    holed.get_slice_buffer(&[0, 0, 0], &[4, 5, 4], &mut first, &[4, 5, 4]).unwrap();
    assert!(holed.to_vec().is_err());
    // A chunk object changed behind a checksummed array's back: Corrupt, not wrong values.
    let url = local(&summed, &dir, false);
    upload(&url, &b, "summed");
    let chunk = b.open("summed/00000002.chunk").unwrap();
    let mut bytes = chunk.read_vec(0, chunk.len() as usize).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    b.put("summed/00000002.chunk", &bytes, Condition::Always).unwrap();
    let summed_a = open("summed", &summed).unwrap();
    assert_eq!(summed_a.to_vec().unwrap_err().kind(), ErrorKind::Corrupt);
    // A scheme no backend serves says so.
    let e = Array::open(&plain, "ftp://host/a.b2nd").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
    assert!(e.to_string().contains("no storage backend"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a remote store is asked to open an array and read one item of
/// it: the check's two windows (header, then index and trailer) and the
/// object's metadata; the item's block span, not its chunk.
#[test]
fn remote_reads_ask_for_few_requests_and_bytes() {
    let dir = temp_dir("requests");
    let ctx = Context::new(Config::default()).unwrap();
    for contiguous in [true, false] {
        let url = dir.join(format!("big-{contiguous}")).to_string_lossy().into_owned();
        let params = Params { itemsize: 2, shape: vec![64, 64, 64], dtype: None };
        let storage = StorageParams {
            chunkshape: vec![32, 32, 32],
            blockshape: vec![8, 8, 8],
            contiguous,
            urlpath: Some(url.clone()),
            metalayers: vec![],
        };
        let data: Vec<u8> =
            (0..64 * 64 * 64u64).flat_map(|v| (((v * 2_654_435_761) >> 7) as u16).to_le_bytes()).collect();
        drop(Array::from_buffer(&ctx, &params, &storage, &data).unwrap());
        let name = bucket();
        let b = memory::bucket(&name);
        upload(&url, &b, "a");
        let since = |then: [u64; 4]| {
            let now = b.requests.now();
            [0, 1, 2, 3].map(|i| now[i] - then[i])
        };
        let start = b.requests.now();
        let a = Array::open(&ctx, &format!("mem://{name}/a")).unwrap();
        let [metadata, rounds, _, _] = since(start);
        // Both layouts are looked for at once (a ranged GET of each);
        // a sparse frame's index is small enough to come whole, a
        // contiguous frame's index and trailer take one request more.
        let most = if contiguous { 3 } else { 2 };
        assert!(metadata + rounds <= most, "contiguous {contiguous}: {metadata} metadata requests, {rounds} reads");
        let opened = b.requests.now();
        let mut one = [0u8; 2];
        a.get_slice_buffer(&[40, 50, 60], &[41, 51, 61], &mut one, &[1, 1, 1]).unwrap();
        let at = (40 * 64 + 50) * 64 + 60;
        assert_eq!(one, data[2 * at..2 * at + 2], "contiguous {contiguous}");
        let [metadata, rounds, _, bytes] = since(opened);
        let chunk = 32 * 32 * 32 * 2;
        assert!(rounds <= 2 && metadata <= 1, "contiguous {contiguous}: {metadata} metadata requests, {rounds} reads");
        assert!(bytes < chunk / 8, "contiguous {contiguous}: one item fetched {bytes} bytes of a {chunk}-byte chunk");
        // Another block of that chunk: its header and block starts were
        // kept, so one round.
        let then = b.requests.now();
        a.get_slice_buffer(&[40, 50, 33], &[41, 51, 34], &mut one, &[1, 1, 1]).unwrap();
        let at = (40 * 64 + 50) * 64 + 33;
        assert_eq!(one, data[2 * at..2 * at + 2], "contiguous {contiguous}");
        let [_, rounds, _, _] = since(then);
        assert_eq!(rounds, 1, "contiguous {contiguous}: a second item of a chunk");
        // The whole array: each chunk whole in one round, the eight of
        // them at once (each round held 40 ms here, as far away).
        b.requests.delay_ms.store(40, std::sync::atomic::Ordering::Relaxed);
        let then = b.requests.now();
        assert_eq!(a.to_vec().unwrap(), data, "contiguous {contiguous}");
        let [_, rounds, _, _] = since(then);
        assert_eq!(rounds, 8, "contiguous {contiguous}: a full read of 8 chunks");
        let most = b.requests.most_in_flight.load(std::sync::atomic::Ordering::SeqCst);
        assert!(most >= 4, "contiguous {contiguous}: at most {most} chunks fetched at once");
        // Planes along each axis: the chunks they cross fetched at once,
        // two rounds each at most (header and block starts, then the blocks).
        for axis in 0..3 {
            b.requests.most_in_flight.store(0, std::sync::atomic::Ordering::SeqCst);
            let fresh = Array::open(&ctx, &format!("mem://{name}/a")).unwrap();
            let (mut start, mut stop) = (vec![0i64; 3], vec![64i64; 3]);
            (start[axis], stop[axis]) = (37, 38);
            let mut shape = vec![64i64; 3];
            shape[axis] = 1;
            let mut plane = vec![0u8; 64 * 64 * 2];
            let then = b.requests.now();
            fresh.get_slice_buffer(&start, &stop, &mut plane, &shape).unwrap();
            let [_, rounds, _, bytes] = since(then);
            assert!(rounds <= 8, "contiguous {contiguous}, axis {axis}: {rounds} rounds for 4 chunks");
            // (Nothing fetched twice: at most the 4 chunks and their heads.)
            assert!(bytes <= 4 * (chunk + 1024), "contiguous {contiguous}, axis {axis}: {bytes} bytes");
            let most = b.requests.most_in_flight.load(std::sync::atomic::Ordering::SeqCst);
            assert!(most >= 2, "contiguous {contiguous}, axis {axis}: at most {most} chunks fetched at once");
            let want: Vec<u8> = (0..64 * 64)
                .flat_map(|k| {
                    let (u, v) = (k / 64, k % 64);
                    let [x, y, z] = match axis {
                        0 => [37, u, v],
                        1 => [u, 37, v],
                        _ => [u, v, 37],
                    };
                    let at = (x * 64 + y) * 64 + z;
                    [data[2 * at], data[2 * at + 1]]
                })
                .collect();
            assert_eq!(plane, want, "contiguous {contiguous}, axis {axis}");
        }
        b.requests.delay_ms.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
