//! Metadata: fixed-size metalayers, variable-length metalayers and the
//! NumPy dtype of the `b2nd` metalayer.

use super::{Array, Metalayer};
use crate::blosc2::{MAX_METALAYERS, METALAYER_NAME_MAXLEN};
use crate::error::{invalid, Error, Result};
use crate::meta::{self, B2ND_META, CATERVA_META};
use crate::store::{one_off, CHECKSUM_MARKER, CHECKSUM_VLMETA};

impl Array {
    /// The NumPy dtype string of the `b2nd` metalayer, if the array has one.
    #[must_use]
    pub fn dtype(&self) -> Option<String> {
        self.store.meta_get(B2ND_META).and_then(|b| meta::decode(&b).ok()).and_then(|(m, _)| m.dtype)
    }

    /// Record `dtype` (a NumPy dtype string for items of this size) in the
    /// `b2nd` metalayer, for python-blosc2 and c-blosc2's b2nd.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the dtype is malformed or does not match
    /// the item size, if the array has no `b2nd` metalayer (files written
    /// without one, or created with 15 user metalayers), or if it has no room
    /// for a dtype that long (Blosc2 metalayers cannot grow).
    pub fn set_dtype(&mut self, dtype: &str) -> Result<()> {
        meta::check_dtype(dtype, self.itemsize())?;
        let Some(old) = self.store.meta_get(B2ND_META) else {
            invalid!("the array has no 'b2nd' metalayer to record a dtype in");
        };
        let g = &self.geom;
        let content = meta::encode_b2nd(g.shape(), g.chunkshape(), g.blockshape(), dtype)?;
        if content.len() > old.len() {
            invalid!("dtype '{dtype}' does not fit in this array's 'b2nd' metalayer ({} bytes)", old.len());
        }
        self.store.write(|tx| tx.meta_update(B2ND_META, &content))
    }

    /// Whether a fixed-size metalayer exists.
    #[must_use]
    pub fn meta_exists(&self, name: &str) -> bool {
        self.store.meta_exists(name)
    }

    /// A fixed-size metalayer's content.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist.
    pub fn meta_get(&self, name: &str) -> Result<Vec<u8>> {
        self.store.meta_get(name).ok_or_else(|| Error::InvalidArgument(format!("metalayer '{name}' does not exist")))
    }

    /// Replace a user metalayer's content (same length; the geometry
    /// metalayers `caterva` and `b2nd` are the library's to write).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist, is reserved, or the length differs.
    pub fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        if is_reserved(name) {
            invalid!("metalayer '{name}' is the library's to write ({})", reserved_why(name));
        }
        let old = self.meta_get(name)?;
        if old.len() != content.len() {
            invalid!(
                "metalayer '{name}' holds {} bytes; an update must keep that size, not {}",
                old.len(),
                content.len()
            );
        }
        self.optimistically(|a| a.store.write(|tx| tx.meta_update(name, content)))
    }

    /// Whether a variable-length metalayer exists.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the name holds a NUL byte.
    pub fn vlmeta_exists(&self, name: &str) -> Result<bool> {
        self.store.vlmeta_exists(name)
    }

    /// A variable-length metalayer's content.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist; [`Error::Blosc`] if it cannot be read.
    pub fn vlmeta_get(&self, name: &str) -> Result<Vec<u8>> {
        self.store
            .vlmeta_get(name)?
            .ok_or_else(|| Error::InvalidArgument(format!("vlmetalayer '{name}' does not exist")))
    }

    /// Add a variable-length metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it already exists or the name is invalid.
    pub fn vlmeta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_user_vlmeta(name)?;
        let cp = self.ctx.config().cparams;
        self.optimistically(|a| a.store.write(|tx| tx.vlmeta_put(name, content, false, &cp)))
    }

    /// Replace a variable-length metalayer (any length).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist.
    pub fn vlmeta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_user_vlmeta(name)?;
        let cp = self.ctx.config().cparams;
        self.optimistically(|a| a.store.write(|tx| tx.vlmeta_put(name, content, true, &cp)))
    }

    /// The text `caterva_print_meta` prints: the geometry recorded in the
    /// `caterva` metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the metalayer is missing or corrupt.
    pub fn meta_summary(&self) -> Result<String> {
        let bytes = self
            .store
            .meta_get(CATERVA_META)
            .or_else(|| self.store.meta_get(B2ND_META))
            .ok_or_else(|| Error::InvalidFormat("the array has no geometry metalayer".into()))?;
        let (m, _) = meta::decode(&bytes)?;
        let join = |v: Vec<String>| v.join(", ");
        Ok(format!(
            "Caterva metalayer parameters:\n Ndim:       {}\n Shape:      {}\n Chunkshape: {}\n Blockshape: {}\n",
            m.shape.len(),
            join(m.shape.iter().map(ToString::to_string).collect()),
            join(m.chunkshape.iter().map(ToString::to_string).collect()),
            join(m.blockshape.iter().map(ToString::to_string).collect()),
        ))
    }

    /// The vlmetalayers (the checksum table aside), in order.
    pub(super) fn vlmetalayers(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let names = self.store.vlmeta_names().into_iter().filter(|n| n != crate::store::CHECKSUM_VLMETA);
        names.map(|n| self.vlmeta_get(&n).map(|c| (n, c))).collect()
    }
}

/// Metalayer names managed by the library itself: the geometry ones, the
/// checksum marker, and names one character off the marker's (which a
/// reader takes for the marker with a damaged name).
pub(super) fn is_reserved(name: &str) -> bool {
    name == CATERVA_META || name == B2ND_META || name == CHECKSUM_MARKER || one_off(name, CHECKSUM_MARKER)
}

/// What a reserved metalayer name is for.
fn reserved_why(name: &str) -> &'static str {
    if name == CATERVA_META || name == B2ND_META {
        "it holds the array geometry"
    } else {
        "it is, or is one character off, the header's checksum marker"
    }
}

pub(crate) fn check_user_vlmeta(name: &str) -> Result<()> {
    if name == CHECKSUM_VLMETA {
        invalid!("vlmetalayer '{name}' holds the chunk checksums and is the library's to write");
    }
    if one_off(name, CHECKSUM_VLMETA) {
        invalid!("vlmetalayer name '{name}' is one character off the checksum table's, which readers take for damage");
    }
    Ok(())
}

/// The most bytes a user's fixed-size metalayer may hold.
const MAX_METALAYER_LEN: usize = 16 << 20;

pub(super) fn check_user_metalayers(list: &[Metalayer]) -> Result<()> {
    if list.len() > MAX_METALAYERS - 1 {
        invalid!("{} metalayers given; at most {} fit beside 'caterva'", list.len(), MAX_METALAYERS - 1);
    }
    for (i, m) in list.iter().enumerate() {
        if m.name.is_empty() || m.name.len() > METALAYER_NAME_MAXLEN || m.name.contains('\0') {
            invalid!("metalayer name '{}' must have 1 to {METALAYER_NAME_MAXLEN} bytes and no NUL", m.name);
        }
        if is_reserved(&m.name) {
            invalid!("metalayer name '{}' is reserved: {}", m.name, reserved_why(&m.name));
        }
        if list[..i].iter().any(|o| o.name == m.name) {
            invalid!("metalayer '{}' given twice", m.name);
        }
        if m.content.len() > MAX_METALAYER_LEN {
            invalid!(
                "metalayer '{}' holds {} bytes; a fixed-size metalayer holds at most {MAX_METALAYER_LEN} \
                 (16 MiB: it lies in the frame's header, which every open reads whole; use a vlmetalayer)",
                m.name,
                m.content.len()
            );
        }
    }
    Ok(())
}
