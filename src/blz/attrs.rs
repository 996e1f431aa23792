//! bcolz attributes (a JSON object) as vlmetalayers (msgpack), and back.
//!
//! An attribute becomes the vlmetalayer of its name, its value msgpack as
//! python-blosc2 writes it (`arr.vlmeta["unit"]`). A name no vlmetalayer
//! can have (empty, over 31 bytes, with a NUL, the checksum table's
//! `caterva.xxh3` or one character off it) or one of the names this
//! module keeps for itself ([`DFLT_VLMETA`], [`ATTRS_VLMETA`]) does not:
//! those attributes go, name and value, into one msgpack map, the
//! vlmetalayer [`ATTRS_VLMETA`]. An export puts every one back, so no
//! attribute is lost or renamed, and a user's `bcolz_dflt` never becomes
//! the carray's `dflt`.

use super::json::{Attributes, Json};
use super::msgpack;
use crate::array::{check_user_vlmeta, Array};
use crate::error::{Error, Result};
use crate::store::CHECKSUM_VLMETA;

/// The vlmetalayer that keeps a carray's `dflt` (msgpack, as python-blosc2 reads it).
pub const DFLT_VLMETA: &str = "bcolz_dflt";

/// The vlmetalayer holding, as a msgpack map of name to value, the
/// attributes whose names cannot be vlmetalayer names of their own.
pub const ATTRS_VLMETA: &str = "bcolz_attrs";

/// Longest vlmetalayer name, in bytes (c-blosc2's `BLOSC2_METALAYER_NAME_MAXLEN`).
const NAME_MAXLEN: usize = 31;

/// Whether attribute `name` can be a vlmetalayer of its own.
fn own_vlmeta(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAXLEN
        && !name.contains('\0')
        && name != DFLT_VLMETA
        && name != ATTRS_VLMETA
        && check_user_vlmeta(name).is_ok()
}

/// The vlmetalayers for `attrs` and a `dflt` (`Null`: none), `what` (the
/// source) named in errors.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the attribute for a value msgpack
/// cannot hold (an integer beyond 64 bits).
pub(crate) fn to_vlmeta(attrs: &[(String, Json)], dflt: &Json, what: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let encode = |k: &str, v: &Json| {
        msgpack::encode(v).map_err(|e| Error::InvalidArgument(format!("attribute '{k}' of {what}: {}", e.message())))
    };
    let mut out = Vec::new();
    let mut rest = Vec::new();
    for (k, v) in attrs {
        if own_vlmeta(k) {
            out.push((k.clone(), encode(k, v)?));
        } else {
            encode(k, v)?;
            rest.push((k.clone(), v.clone()));
        }
    }
    if !rest.is_empty() {
        out.push((ATTRS_VLMETA.to_owned(), encode(ATTRS_VLMETA, &Json::Object(rest))?));
    }
    if !dflt.is_null() {
        out.push((DFLT_VLMETA.to_owned(), encode("dflt", dflt)?));
    }
    Ok(out)
}

/// The attributes and the `dflt` the vlmetalayers of `array` hold (the
/// inverse of [`to_vlmeta`]).
///
/// # Errors
/// [`Error::InvalidFormat`] naming the vlmetalayer for one that is not
/// msgpack JSON can hold (bytes, for one), an [`ATTRS_VLMETA`] that is not
/// a map, or an attribute both there and in a vlmetalayer of its own.
pub(crate) fn from_vlmeta(array: &Array) -> Result<(Attributes, Option<Json>)> {
    let mut attrs = Attributes::new();
    let mut dflt = None;
    let mut rest = Vec::new();
    for name in array.store().vlmeta_names() {
        if name == CHECKSUM_VLMETA {
            continue;
        }
        let raw = array.vlmeta_get(&name)?;
        let v = msgpack::decode(&raw).map_err(|e| {
            Error::InvalidFormat(format!(
                "vlmetalayer '{name}' is not a value a bcolz attribute (JSON) can hold: {}",
                e.message()
            ))
        })?;
        match (name.as_str(), v) {
            (DFLT_VLMETA, v) => dflt = Some(v),
            (ATTRS_VLMETA, Json::Object(m)) => rest = m,
            (ATTRS_VLMETA, _) => {
                return Err(Error::InvalidFormat(format!(
                    "vlmetalayer '{ATTRS_VLMETA}' must be a msgpack map of attribute names to values"
                )))
            }
            (_, v) => attrs.push((name, v)),
        }
    }
    for (k, v) in rest {
        if attrs.iter().any(|(n, _)| *n == k) {
            return Err(Error::InvalidFormat(format!(
                "attribute '{k}' is both a vlmetalayer and an entry of '{ATTRS_VLMETA}'"
            )));
        }
        attrs.push((k, v));
    }
    Ok((attrs, dflt))
}
