//! Arrays inside larger files: a contiguous frame that starts at a byte
//! offset of a file (as `b2nd_open_offset` opens it), and saving an array
//! by appending its frame to a file (as `b2nd_save_append` does).
//!
//! A file may hold several frames one after the other, or a frame inside
//! another format. The frame at an offset is checked like any other
//! (`frame_check::check_path_at`: its length is the one its header
//! declares, which must fit in the file) and read through the same paths;
//! the direct chunk reader places its chunks from the frame's start.
//!
//! Such a store is read-only: c-blosc2 writes a changed frame at its end,
//! which here is where the next frame of the file begins, and the journal
//! and the lock know arrays by their path, not by a part of a file. A write
//! is refused with [`Error::InvalidStorage`]; copy the array out (`copy`,
//! `save` to another path) to change it. For the same reason a frame
//! appended to a file that holds an array makes that array's own handles
//! refuse to write (the file's tail, which their fingerprint covers, has
//! changed), and a plain open of the file then fails (the frame is no
//! longer the whole file): open it at offset 0 instead.

use std::path::Path;

use super::blosc::SChunk;
use super::frame_check::Chunks;
use super::location::{Protocol, Site};
use super::{io, journal, lock, versioned, Change, HeaderCheck, Store};
use crate::error::{Error, Result};

impl Store {
    /// Open the contiguous frame at byte `offset` of the file `urlpath`,
    /// read-only. The file's lock is held while it opens (a writer of an
    /// array at the start of that file finishes first), and a write that a
    /// crashed process left in it is rolled back first, as [`Store::open`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative offset;
    /// [`Error::InvalidStorage`] if nothing is at `urlpath` or it is not a
    /// regular file; [`Error::InvalidFormat`] if no sound frame starts at
    /// `offset`; as [`Store::open`] otherwise.
    pub(crate) fn open_offset(urlpath: &str, offset: i64) -> Result<Store> {
        let Ok(at) = u64::try_from(offset) else {
            return Err(Error::InvalidArgument(format!("offset {offset} is negative")));
        };
        if versioned::protocol(urlpath)? == Protocol::Versioned {
            // One version of the object, read-only: nothing to lock or roll back.
            let site = Site::new(urlpath, true, Some(at))?;
            let mut store = Self::adopt(SChunk::open_site(&site, Chunks::Later)?, HeaderCheck::due())?;
            store.site = Some(site);
            store.seen = store.fingerprint();
            return Ok(store);
        }
        let _lock = lock::wait_for(urlpath)?;
        journal::recover(urlpath)?;
        match std::fs::symlink_metadata(urlpath) {
            Err(_) => return Err(Error::not_found(urlpath)),
            Ok(md) if !md.is_file() => {
                return Err(Error::storage(Some(urlpath), format!("'{urlpath}' is not a regular file")))
            }
            Ok(_) => {}
        }
        let mut store = Self::adopt(SChunk::open_offset(urlpath, at, Chunks::Later)?, HeaderCheck::due())?;
        if let Some(site) = store.site.as_mut() {
            site.offset = Some(at);
        }
        store.seen = store.fingerprint();
        Ok(store)
    }

    /// Where the frame starts in its file, for a store opened by
    /// [`Store::open_offset`].
    pub(crate) fn offset(&self) -> Option<u64> {
        self.site.as_ref().and_then(|s| s.offset)
    }

    /// Whether this handle may change what it stores, and how: the one
    /// place every changing operation asks ([`Store::write`] for changes in
    /// place, [`Store::replace`] for a new store taking the old one's
    /// place). A frame inside a larger file (opened at an offset) is
    /// read-only: a change in place would write into the host file, and a
    /// replacement would replace the whole file. So is an array at a
    /// versioned location (see `store/versioned.rs`).
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] naming why the handle is read-only.
    pub(super) fn check_changeable(&self, how: Change) -> Result<()> {
        if self.is_versioned() && self.offset().is_none() {
            let url = self.storage().urlpath.unwrap_or_default();
            if self.site.as_ref().is_some_and(|s| s.location.read_only()) {
                return Err(versioned::unchangeable(&url, "change"));
            }
            let _ = how;
            return Ok(());
        }
        match self.offset() {
            Some(at) => {
                let url = self.sc.storage().urlpath.unwrap_or_default();
                let what = match how {
                    Change::InPlace => "",
                    Change::Replace => " (this operation rewrites the array, which would replace the whole file)",
                };
                Err(Error::storage(
                    Some(&url),
                    format!(
                        "the array at byte {at} of '{url}' lies inside a larger file and is read-only \
                         (opened at an offset){what}; copy or save it elsewhere to change it"
                    ),
                ))
            }
            None => Ok(()),
        }
    }

    /// Append this store's contiguous frame to the file `urlpath` (created
    /// if missing) and return the byte offset where it starts. The file is
    /// synced; on a failure it is cut back to its old length (or removed,
    /// if this call created it), so nothing half-written stays. (A process
    /// killed mid-append leaves what it wrote after the old end; nothing
    /// before it is ever written.)
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is empty, a directory or a
    /// symbolic link, or another handle keeps the file locked;
    /// [`Error::Io`] if writing fails; [`Error::Blosc`] if the frame cannot
    /// be serialised.
    pub(crate) fn append_to_file(&self, urlpath: &str) -> Result<i64> {
        if urlpath.is_empty() {
            return Err(Error::storage(None, "urlpath is empty"));
        }
        versioned::refuse_versioned(urlpath, "append a frame to")?;
        let frame = self.to_cframe()?;
        let path = Path::new(urlpath);
        let _lock = lock::wait_for(urlpath)?;
        // A write a crashed process left in an array there is rolled back first.
        journal::recover(urlpath)?;
        let created = match std::fs::symlink_metadata(path) {
            Ok(md) if md.is_file() => false,
            Ok(_) => {
                return Err(Error::storage(
                    Some(urlpath),
                    format!("'{urlpath}' is not a regular file (a directory or a link); frames are appended to files"),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(Error::io("reading", Some(path), &e)),
        };
        let file = io::OpenOptions::create().open(path).map_err(|e| Error::io("opening", Some(path), &e))?;
        let start = file.std().metadata().map_err(|e| Error::io("reading", Some(path), &e))?.len();
        let written = file.write_all_at(start, &frame).and_then(|()| file.sync_data()).and_then(|()| {
            if created {
                let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                io::sync_dir(dir)
            } else {
                Ok(())
            }
        });
        match written {
            Ok(()) => i64::try_from(start).map_err(|_| Error::storage(Some(urlpath), "the file is too long")),
            Err(e) => {
                // Nothing half-written stays: the file as it was, or none.
                if created {
                    let _ = io::remove_file(path);
                } else {
                    let _ = file.set_len(start);
                    let _ = file.sync_data();
                }
                Err(Error::io("appending a frame to", Some(path), &e))
            }
        }
    }
}
