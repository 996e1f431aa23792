//! Where an array lives, decided once from its URL ([`Backend::resolve`]),
//! and so by which protocol its changes are made safe: the journaled one of
//! local files (`journaled.rs`: changed in place under a lock, journaled),
//! or the versioned one of object stores and web servers (`versioned.rs`:
//! objects replaced whole under conditions, never written in place).

use super::location::{Protocol, ResolvedUrl};
use crate::error::{Error, Result};

/// Where an array's URL leads: what the store's entry points resolve once
/// and hand over, instead of the URL's text.
pub(super) enum Backend {
    /// A path of this machine's file systems, as given (also one that names
    /// no file, such as `/`: the journaled operations say why).
    Journaled(String),
    /// An object store or a web server, resolved.
    Versioned(ResolvedUrl),
}

impl Backend {
    /// Resolve `urlpath`.
    ///
    /// # Errors
    /// As [`ResolvedUrl::resolve`]: a URL of a scheme no backend serves.
    pub(super) fn resolve(urlpath: &str) -> Result<Backend> {
        match ResolvedUrl::resolve(urlpath) {
            Ok(at) if at.protocol() == Protocol::Versioned => Ok(Backend::Versioned(at)),
            Ok(_) => Ok(Backend::Journaled(urlpath.to_owned())),
            Err(e) if urlpath.contains("://") && !urlpath.starts_with("file://") => Err(e),
            Err(_) => Ok(Backend::Journaled(urlpath.to_owned())),
        }
    }
}

/// Refuse to change the array at `url`, a versioned location (see `versioned.rs`).
pub(super) fn unchangeable(url: &str, what: &str) -> Error {
    Error::storage(
        Some(url),
        format!(
            "cannot {what} '{url}': arrays there are changed by new objects and conditional \
             replacements of their frame, and this build writes only items and metadata of existing arrays \
             on object stores (nothing on web servers); copy the array to a local path to do this"
        ),
    )
}
