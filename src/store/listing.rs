//! The arrays directly under a directory, bucket prefix or web-server
//! folder (`caterva ls`, [`crate::list`]): contiguous frames (objects that
//! start with a Blosc2 frame header) and sparse frames (prefixes holding a
//! `chunks.b2frame` index).

use super::frame;
use super::location::{self, Kind, Location};
use crate::error::{Error, Result};

/// One array found by [`crate::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its URL or path, to open it by.
    pub url: String,
    /// Its name under the listed prefix.
    pub name: String,
    /// Whether it is a contiguous frame (one object) rather than a sparse one.
    pub contiguous: bool,
    /// Bytes it takes in storage (a sparse frame's index and chunk objects).
    pub bytes: u64,
}

/// Objects and prefixes looked at once, at most.
const LOOKERS: usize = 16;

/// The arrays directly under `url`: a local directory, or a prefix on an
/// object store (`s3://bucket/dir/`; a trailing `/` may be left out),
/// sorted by name. Contiguous frames are told by their first bytes, sparse
/// frames by their index; what is not an array, and hidden names (starting
/// with `.`: this library's lease and probe objects), are left out.
///
/// # Errors
/// [`Error::InvalidStorage`] for a URL of a scheme no backend serves, or a
/// web server (which lists nothing); [`Error::Io`] as the storage fails.
pub fn list(url: &str) -> Result<Vec<Listed>> {
    // The location and prefix of a name under `url`.
    let (loc, key) = location::locate(&format!("{}/_", url.trim_end_matches('/')))?;
    let prefix = key.rsplit_once('/').map_or("", |(p, _)| p);
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::Unsupported => Error::storage(Some(url), format!("cannot list '{url}': {e}")),
        _ => Error::io("listing", Some(std::path::Path::new(url)), &e),
    };
    let under = |name: &str| -> String {
        let n = if prefix.is_empty() { name } else { name.strip_prefix(prefix).unwrap_or(name) };
        n.trim_start_matches('/').to_owned()
    };
    let entries: Vec<_> =
        loc.list(prefix).map_err(io)?.into_iter().filter(|e| !under(&e.name).starts_with('.')).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    let failed = std::sync::Mutex::new(None);
    let look = || loop {
        let Some(e) = entries.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) else { return };
        match array_at(&*loc, &e.name, e.kind, e.len) {
            Ok(Some((contiguous, bytes))) => {
                let listed = Listed { url: loc.url(&e.name), name: under(&e.name), contiguous, bytes };
                found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(listed);
            }
            Ok(None) => {}
            Err(err) => {
                failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(err);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..entries.len().min(LOOKERS) {
            s.spawn(look);
        }
        look();
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(io(e));
    }
    let mut found = found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// Whether `name` (of `kind`, `len` bytes) is an array: `Some((contiguous,
/// bytes in storage))`.
fn array_at(loc: &dyn Location, name: &str, kind: Kind, len: u64) -> std::io::Result<Option<(bool, u64)>> {
    match kind {
        Kind::Object if len >= frame::HEADER_MINLEN as u64 => match loc.open_reading(name, frame::HEADER_MINLEN) {
            Ok((_, head)) => Ok(frame::is_frame_start(&head).then_some((true, len))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        },
        Kind::Prefix => {
            let index = location::join(name, frame::SPARSE_INDEX);
            if !loc.stat(&index)?.is_some_and(|e| e.kind == Kind::Object) {
                return Ok(None);
            }
            let bytes = loc.list(name)?.iter().filter(|e| e.kind == Kind::Object).map(|e| e.len).sum();
            Ok(Some((false, bytes)))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use crate::store::location::{memory, Condition, Location};
    use crate::{Array, Context, Params, StorageParams};

    #[test]
    fn arrays_of_both_layouts_are_listed_and_the_rest_left_out() {
        let dir = std::env::temp_dir().join(format!("caterva-listing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let ctx = Context::new(crate::Config::default()).unwrap();
        let params = Params { itemsize: 4, shape: vec![100], dtype: None };
        for (name, contiguous) in [("a.b2frame", true), ("b.b2nd", false)] {
            let storage = StorageParams {
                chunkshape: vec![40],
                blockshape: vec![8],
                contiguous,
                urlpath: Some(dir.join(name).to_string_lossy().into_owned()),
                metalayers: vec![],
            };
            Array::zeros(&ctx, &params, &storage).unwrap();
        }
        std::fs::write(dir.join("notes.txt"), vec![b'x'; 200]).unwrap();
        std::fs::write(dir.join(".hidden"), b"").unwrap();
        let got = super::list(&dir.to_string_lossy()).unwrap();
        let names: Vec<_> = got.iter().map(|l| (l.name.as_str(), l.contiguous)).collect();
        assert_eq!(names, [("a.b2frame", true), ("b.b2nd", false)]);
        assert!(got.iter().all(|l| l.bytes > 0));
        assert_eq!(super::list(&format!("{}/", dir.to_string_lossy())).unwrap(), got);
        for l in &got {
            Array::open(&ctx, &l.url).unwrap();
        }
        // On an object store (the model), where a prefix is only names.
        let name = format!("listing-{}", std::process::id());
        let b = memory::bucket(&name);
        b.put("top/a.b2frame", &std::fs::read(dir.join("a.b2frame")).unwrap(), Condition::Always).unwrap();
        for e in std::fs::read_dir(dir.join("b.b2nd")).unwrap() {
            let e = e.unwrap();
            let key = format!("top/b.b2nd/{}", e.file_name().to_string_lossy());
            b.put(&key, &std::fs::read(e.path()).unwrap(), Condition::Always).unwrap();
        }
        b.put("top/b.b2nd.caterva-lease", b"caterva-lease 1\n", Condition::Always).unwrap();
        b.put("top/other/x", b"not an array", Condition::Always).unwrap();
        let remote = super::list(&format!("mem://{name}/top")).unwrap();
        let names: Vec<_> = remote.iter().map(|l| (l.name.as_str(), l.contiguous)).collect();
        assert_eq!(names, [("a.b2frame", true), ("b.b2nd", false)]);
        assert_eq!(remote[0].url, format!("mem://{name}/top/a.b2frame"));
        assert_eq!(Array::open(&ctx, &remote[1].url).unwrap().to_vec().unwrap(), vec![0; 400]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
