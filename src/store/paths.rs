//! Where stores live on disk: what a new store may replace, how a store is
//! written beside its target and renamed into place, and cleaning up after
//! a creation that failed.

use std::path::Path;

use super::blosc::{self, Storage};
use super::{frame, journal};
use crate::error::{Error, Result};

/// Whether `storage.urlpath` is free (`Ok(false)`) or holds a frame of the
/// same kind that may be replaced (`Ok(true)`). Anything else there is
/// refused rather than destroyed.
pub(crate) fn check_replaceable(storage: &Storage) -> Result<bool> {
    let Some(url) = storage.urlpath.as_deref() else { return Ok(false) };
    if url.is_empty() {
        return Err(Error::storage(None, "urlpath is empty"));
    }
    let p = Path::new(url);
    let Ok(md) = std::fs::symlink_metadata(p) else { return Ok(false) };
    let replaceable = if storage.contiguous { md.is_file() } else { frame::is_sparse_dir(p) };
    if !replaceable {
        let kind = if storage.contiguous { "a frame file" } else { "a sparse-frame directory" };
        return Err(Error::storage(Some(url), format!("'{url}' exists and is not {kind}; refusing to overwrite it")));
    }
    Ok(true)
}

/// Make room for a new frame at `storage.urlpath`, replacing an existing
/// frame of the same kind as creating a file would.
pub(super) fn prepare(storage: &Storage) -> Result<()> {
    match storage.urlpath.as_deref() {
        Some(url) if check_replaceable(storage)? => {
            blosc::remove_urlpath(url)?;
            journal::discard(url)
        }
        _ => Ok(()),
    }
}

/// Write a frame with `write` at a temporary path beside `target`, then
/// rename it over `target`, so that a failure leaves whatever was at
/// `target` untouched. A file is replaced atomically by the rename; a
/// sparse-frame directory cannot be, so an existing one is renamed aside
/// first (and put back on open if the process dies in between).
pub(crate) fn write_beside(
    target: &str,
    contiguous: bool,
    exists: bool,
    write: impl FnOnce(&Storage) -> Result<()>,
) -> Result<()> {
    let tmp = format!("{target}.caterva-tmp-{}", std::process::id());
    let st = Storage { contiguous, urlpath: Some(tmp.clone()) };
    prepare(&st)?;
    let mut cleanup = Cleanup::new(Some(&tmp));
    write(&st)?;
    #[cfg(feature = "testing")]
    crate::testing::hook("rename");
    if exists && !contiguous {
        journal::replace_dir(&tmp, target)?;
    } else {
        std::fs::rename(&tmp, target).map_err(|e| Error::io("renaming", Some(Path::new(&tmp)), &e))?;
    }
    cleanup.defuse();
    // A journal of what was there no longer applies.
    journal::discard(target)
}

/// Removes a half-built frame from disk unless defused.
pub(super) struct Cleanup<'a>(Option<&'a str>);

impl<'a> Cleanup<'a> {
    pub(super) fn new(urlpath: Option<&'a str>) -> Self {
        Cleanup(urlpath)
    }

    /// The frame is complete: keep it.
    pub(super) fn defuse(&mut self) {
        self.0 = None;
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(u) = self.0 {
            let _ = blosc::remove_urlpath(u);
        }
    }
}
