//! The store at locations whose objects are replaced whole under conditions
//! and never written in place ([`Protocol::Versioned`]: object stores, web
//! servers), beside the journaled protocol of local files (the rest of
//! `store/`: journal, lock, write beside and rename).
//!
//! [`Store`]'s entry points ask [`protocol`] where an array lives and come
//! here for such a location:
//!
//! - **Opening** needs no lock and has nothing to roll back: an opened
//!   object is one version of it ([`super::location::Object`]), so the frame
//!   check and c-blosc2's parse read the same bytes (c-blosc2 is served
//!   what the check read, and reaches the location through a stand-in path:
//!   `blosc_io::StandIn`). A handle's view is that version; [`refresh`]
//!   reloads it when the frame's generation moved.
//! - **Changing** an array there (writes, creation, saving onto it, removal,
//!   appending a frame) is refused with [`Error::InvalidStorage`] naming the
//!   location: a write there has to be new chunk objects and a conditional
//!   replacement of the index, which this module does not make; copy the
//!   array to a local path to change it. Nothing is written before the refusal.
//!
//! [`refresh`]: Store::refresh_versioned

use super::blosc::SChunk;
use super::blosc_io::Serving;
use super::frame_check::{Chunks, Kept};
use super::location::{self, Protocol, Site};
use super::{frame, HeaderCheck, Store};
use crate::error::{Error, Result};

/// How changes are made durable where `urlpath` lives (local paths: the
/// journaled protocol).
///
/// # Errors
/// As [`location::locate`]: a URL of a scheme no backend serves.
pub(super) fn protocol(urlpath: &str) -> Result<Protocol> {
    match location::locate(urlpath) {
        Ok((loc, _)) => Ok(loc.protocol()),
        Err(e) if urlpath.contains("://") && !urlpath.starts_with("file://") => Err(e),
        // A local path that names no file (`/`): the journaled operations say why.
        Err(_) => Ok(Protocol::Journaled),
    }
}

/// Refuse to change the array at `url`, a versioned location (see the module docs).
pub(super) fn unchangeable(url: &str, what: &str) -> Error {
    Error::storage(
        Some(url),
        format!(
            "cannot {what} '{url}': arrays there are replaced by whole objects under conditions, \
             not written in place, and this build only reads them; copy the array to a local path to change it"
        ),
    )
}

/// [`unchangeable`] if `urlpath` is at a versioned location.
///
/// # Errors
/// As [`protocol`] and [`unchangeable`].
pub(super) fn refuse_versioned(urlpath: &str, what: &str) -> Result<()> {
    match protocol(urlpath)? {
        Protocol::Journaled => Ok(()),
        Protocol::Versioned => Err(unchangeable(urlpath, what)),
    }
}

impl Store {
    /// Open the array at `urlpath`, a versioned location: check the frame
    /// (one version of its object, or of a sparse frame's index), have
    /// c-blosc2 parse exactly the bytes the check read, read the checksum
    /// table. Chunks' headers are checked before c-blosc2 reads one, as on disk.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub(super) fn open_versioned(urlpath: &str) -> Result<Store> {
        let summary = SChunk::check(urlpath, Chunks::Later)?;
        let Some(Kept { served, object }) = summary.read else {
            return Err(Error::storage(Some(urlpath), format!("'{urlpath}': the frame check kept nothing to parse")));
        };
        let site = Site::new(urlpath, !summary.sparse, None)?;
        // From what the check read: no request more.
        let seen = frame::fingerprint_served(&served, site.contiguous);
        let sc = {
            let _serving = Serving::start(served.clone());
            SChunk::parse_site(&site)?
        };
        let mut store = Self::adopt(sc, HeaderCheck::due())?;
        store.seen = seen.map(|content| frame::with_generation(content, object.generation()));
        store.site = Some(site);
        store.kept = Some(Kept { served, object });
        Ok(store)
    }

    /// Bring a handle of an array at a versioned location up to date:
    /// reload it if its frame's generation moved since this handle read it.
    /// Returns whether it reloaded.
    ///
    /// # Errors
    /// As [`Store::open`] if reloading fails (the handle keeps its view).
    pub(super) fn refresh_versioned(&mut self) -> Result<bool> {
        if let Some(c) = &self.cache {
            c.clear();
        }
        let now = self.fingerprint();
        if now.is_some() && now == self.seen {
            return Ok(false);
        }
        self.reload()?;
        self.seen = self.fingerprint();
        self.placement = std::sync::OnceLock::new();
        Ok(true)
    }

    /// Whether this store's frame lives at a versioned location.
    pub(super) fn is_versioned(&self) -> bool {
        self.site.as_ref().is_some_and(|s| s.location.protocol() == Protocol::Versioned)
    }
}

/// Arrays on the in-memory object-store model, reached by `mem://` URLs
/// through every layer (the array API, the store, the frame check,
/// c-blosc2 through a stand-in, the direct chunk reader): what a remote
/// backend gets by implementing the seam and a scheme in `locate`.
#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// or its directory's files under the prefix `key`.
    fn upload(url: &str, bucket: &memory::Memory, key: &str) {
        let path = Path::new(url);
        if path.is_file() {
            bucket.put(key, &std::fs::read(path).unwrap(), Condition::Always).unwrap();
            return;
        }
        for e in std::fs::read_dir(path).unwrap() {
            let e = e.unwrap();
            let name = format!("{key}/{}", e.file_name().to_str().unwrap());
            bucket.put(&name, &std::fs::read(e.path()).unwrap(), Condition::Always).unwrap();
        }
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
    fn changes_at_a_remote_location_are_refused_and_write_nothing() {
        let dir = temp_dir("refused");
        let ctx = Context::new(Config::default()).unwrap();
        for contiguous in [true, false] {
            let url = local(&ctx, &dir, contiguous);
            let name = bucket();
            let b = memory::bucket(&name);
            upload(&url, &b, "a");
            let before = b.list("").unwrap();
            let prefix_before = if contiguous { Vec::new() } else { b.list("a").unwrap() };
            let remote_url = format!("mem://{name}/a");
            let mut remote = Array::open(&ctx, &remote_url).unwrap();
            let refused = |e: crate::Error| {
                assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
                assert!(e.to_string().contains(&remote_url) || e.to_string().contains("mem://"), "{e}");
            };
            refused(remote.set_slice_buffer(&[0; 2], &[1, 1, 1], &[0, 0, 0], &[1, 1, 1]).unwrap_err());
            refused(remote.vlmeta_add("x", b"y").unwrap_err());
            refused(remote.resize(&[10, 14, 11], None).unwrap_err());
            refused(remote.set_dtype("<i2").unwrap_err());
            refused(remote.enable_checksums().unwrap_err());
            refused(Array::remove(&remote_url).unwrap_err());
            let other = Array::open(&ctx, &url).unwrap();
            refused(other.save(&remote_url).unwrap_err());
            refused(other.save_append(&remote_url).unwrap_err());
            let storage = StorageParams {
                chunkshape: vec![4, 5, 4],
                blockshape: vec![2, 3, 2],
                contiguous,
                urlpath: Some(format!("mem://{name}/new")),
                metalayers: vec![],
            };
            let params = Params { itemsize: 2, shape: SHAPE.to_vec(), dtype: None };
            refused(Array::from_buffer(&ctx, &params, &storage, &items()).unwrap_err());
            // Nothing was written, and the handle still reads what it read.
            assert_eq!(b.list("").unwrap(), before);
            if !contiguous {
                assert_eq!(b.list("a").unwrap(), prefix_before);
            }
            assert_eq!(seen(&remote), seen(&other));
            // A new version of the array there: refresh sees it.
            assert!(!remote.refresh().unwrap());
            let mut changed = Array::open(&ctx, &url).unwrap();
            changed.set_slice_buffer(&[0xAB; 2], &[1, 1, 1], &[0, 0, 0], &[1, 1, 1]).unwrap();
            if contiguous {
                upload(&url, &b, "a");
            } else {
                // A sparse frame's changed objects: the index and chunk 0.
                let url_dir = Path::new(&url);
                for f in ["chunks.b2frame", "00000000.chunk"] {
                    let bytes = std::fs::read(url_dir.join(f)).unwrap();
                    b.put(&format!("a/{f}"), &bytes, Condition::Always).unwrap();
                }
            }
            assert!(remote.refresh().unwrap());
            assert_eq!(seen(&remote), seen(&changed));
            assert_eq!(remote.to_vec().unwrap()[..2], [0xAB, 0xAB]);
        }
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
            // (A sparse frame's prefix is found by a second metadata request.)
            let most = if contiguous { 3 } else { 4 };
            assert!(metadata + rounds <= most, "contiguous {contiguous}: {metadata} metadata requests, {rounds} reads");
            let opened = b.requests.now();
            let mut one = [0u8; 2];
            a.get_slice_buffer(&[40, 50, 60], &[41, 51, 61], &mut one, &[1, 1, 1]).unwrap();
            let at = (40 * 64 + 50) * 64 + 60;
            assert_eq!(one, data[2 * at..2 * at + 2], "contiguous {contiguous}");
            let [metadata, rounds, _, bytes] = since(opened);
            let chunk = 32 * 32 * 32 * 2;
            assert!(
                rounds <= 2 && metadata <= 1,
                "contiguous {contiguous}: {metadata} metadata requests, {rounds} reads"
            );
            assert!(
                bytes < chunk / 8,
                "contiguous {contiguous}: one item fetched {bytes} bytes of a {chunk}-byte chunk"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
