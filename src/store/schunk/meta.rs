//! A super-chunk's metalayers (fixed-size, in the frame's header) and
//! vlmetalayers (variable-length, compressed, after its chunks): read by
//! anyone, written only by the store's transaction.

use std::ffi::{CStr, CString};
use std::ptr;

use blosc2_sys as b;

use super::{blosc_err, writing, SChunk};
use crate::blosc2::{
    cstring, CCtx, CParams, Codec, Compression, Filter, SplitMode, FRAME_VLMETALAYERS, MAX_METALAYERS,
    MAX_VLMETALAYERS, METALAYER_NAME_MAXLEN,
};
use crate::error::{Error, Result};

impl SChunk {
    pub(super) fn meta_index(&self, name: &str) -> Option<usize> {
        let r = self.raw();
        (0..usize::from(r.nmetalayers).min(MAX_METALAYERS)).find(|&i| {
            let m = r.metalayers[i];
            // SAFETY: the first nmetalayers entries are live metalayers with C-string names.
            !m.is_null() && unsafe { CStr::from_ptr((*m).name) }.to_bytes() == name.as_bytes()
        })
    }

    /// Names of the fixed-size metalayers, in order.
    #[must_use]
    pub(crate) fn meta_names(&self) -> Vec<String> {
        let r = self.raw();
        (0..usize::from(r.nmetalayers).min(MAX_METALAYERS))
            .filter_map(|i| {
                let m = r.metalayers[i];
                // SAFETY: as in meta_index.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// Whether a fixed-size metalayer exists.
    #[must_use]
    pub(crate) fn meta_exists(&self, name: &str) -> bool {
        self.meta_index(name).is_some()
    }

    /// The content of a fixed-size metalayer.
    #[must_use]
    pub(crate) fn meta_get(&self, name: &str) -> Option<Vec<u8>> {
        let i = self.meta_index(name)?;
        let m = self.raw().metalayers[i];
        // SAFETY: a live metalayer's content holds content_len bytes.
        unsafe {
            let len = usize::try_from((*m).content_len).ok()?;
            if len == 0 {
                return Some(Vec::new());
            }
            Some(std::slice::from_raw_parts((*m).content, len).to_vec())
        }
    }

    /// Add a fixed-size metalayer (only before the first chunk).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it exists, the name is too long, or all
    /// slots are taken; [`Error::Blosc`] if c-blosc2 cannot write it.
    pub(in crate::store) fn meta_add(&mut self, name: &str, content: &[u8]) -> Result<()> {
        writing(|| {
            check_meta_name(name)?;
            if self.meta_exists(name) {
                return Err(Error::InvalidArgument(format!("metalayer '{name}' already exists")));
            }
            if usize::from(self.raw().nmetalayers) >= MAX_METALAYERS {
                return Err(Error::InvalidArgument(format!(
                    "no room for metalayer '{name}' ({MAX_METALAYERS} at most)"
                )));
            }
            // c-blosc2 would fail *after* adding it to the super-chunk in memory.
            if !self.meta_addable() {
                return Err(Error::InvalidArgument(format!(
                    "metalayer '{name}' cannot be added: a frame takes new metalayers only before its first chunk"
                )));
            }
            let len = i32::try_from(content.len()).map_err(|_| Error::InvalidArgument("metalayer too large".into()))?;
            let n = cstring(name, "metalayer name")?;
            // SAFETY: valid super-chunk, C string and content buffer; blosc2 copies both.
            let rc = unsafe { b::blosc2_meta_add(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len) };
            if rc < 0 {
                return Err(blosc_err(&format!("adding metalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Whether c-blosc2 can add a fixed-size metalayer now: always to a
    /// super-chunk that is not a frame, to a frame only before its first
    /// chunk (`frame_update_header(.., new = true)` refuses once `cbytes > 0`).
    #[must_use]
    pub(crate) fn meta_addable(&self) -> bool {
        let r = self.raw();
        r.frame.is_null() || r.cbytes <= 0
    }

    /// Replace a fixed-size metalayer's content; `content` must not be longer
    /// than the stored one (c-blosc2 metalayers never grow).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it does not exist or would grow.
    pub(in crate::store) fn meta_update(&mut self, name: &str, content: &[u8]) -> Result<()> {
        writing(|| {
            let Some(old) = self.meta_get(name) else {
                return Err(Error::InvalidArgument(format!("metalayer '{name}' does not exist")));
            };
            if content.len() > old.len() {
                return Err(Error::InvalidArgument(format!(
                    "metalayer '{name}' holds {} bytes; cannot store {}",
                    old.len(),
                    content.len()
                )));
            }
            // A shorter content is zero-padded to the stored length, so no stale
            // bytes of the old content stay behind it.
            let mut padded = content.to_vec();
            padded.resize(old.len(), 0);
            let n = cstring(name, "metalayer name")?;
            // SAFETY: valid super-chunk, C string and content; blosc2 copies content.
            let rc =
                unsafe { b::blosc2_meta_update(self.as_ptr(), n.as_ptr(), padded.as_mut_ptr(), padded.len() as i32) };
            if rc < 0 {
                return Err(blosc_err(&format!("updating metalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Whether a variable-length metalayer exists.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the name holds a NUL byte.
    pub(crate) fn vlmeta_exists(&self, name: &str) -> Result<bool> {
        let n = cstring(name, "vlmetalayer name")?;
        let _g = self.guard();
        // SAFETY: valid super-chunk and C string.
        Ok(unsafe { b::blosc2_vlmeta_exists(self.as_ptr(), n.as_ptr()) } >= 0)
    }

    /// The content of a variable-length metalayer, if it exists.
    ///
    /// # Errors
    /// [`Error::Blosc`] if it exists but cannot be decompressed.
    pub(crate) fn vlmeta_get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        if !self.vlmeta_exists(name)? {
            return Ok(None);
        }
        let n = cstring(name, "vlmetalayer name")?;
        self.vlmeta_content(&n, name).map(Some)
    }

    /// Every variable-length metalayer's name as stored (which may not be
    /// UTF-8, in a damaged frame) and its content, or why that cannot be read.
    pub(crate) fn vlmeta_raw(&self) -> Vec<(Vec<u8>, Result<Vec<u8>>)> {
        let r = self.raw();
        let names: Vec<CString> = (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS))
            .filter_map(|i| {
                let m = r.vlmetalayers[i];
                // SAFETY: the first nvlmetalayers entries are live, with C-string names.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_owned())
            })
            .collect();
        names
            .into_iter()
            .map(|n| {
                let shown = n.to_string_lossy().into_owned();
                let content = self.vlmeta_content(&n, &shown);
                (n.into_bytes(), content)
            })
            .collect()
    }

    /// The content of the vlmetalayer named `n` (`shown` in errors).
    pub(super) fn vlmeta_content(&self, n: &CStr, shown: &str) -> Result<Vec<u8>> {
        let name = shown;
        let (mut content, mut len) = (ptr::null_mut::<u8>(), 0i32);
        let rc = {
            let _g = self.guard();
            // SAFETY: valid super-chunk and C string; blosc2 mallocs content.
            unsafe { b::blosc2_vlmeta_get(self.as_ptr(), n.as_ptr(), &mut content, &mut len) }
        };
        if rc < 0 || content.is_null() || len < 0 {
            // c-blosc2 allocates the content before it finds a corrupt one.
            // SAFETY: a non-NULL content is a malloc'ed buffer we own.
            unsafe { libc::free(content.cast()) };
            return Err(blosc_err(&format!("reading vlmetalayer '{name}'"), i64::from(rc)));
        }
        // SAFETY: blosc2 returned a malloc'ed buffer of len bytes, which we own.
        let v = unsafe {
            let v = std::slice::from_raw_parts(content, len as usize).to_vec();
            libc::free(content.cast());
            v
        };
        Ok(v)
    }

    /// The stored (compressed) content of vlmetalayer `name`, if there is one.
    pub(in crate::store) fn vlmeta_stored(&self, name: &str) -> Option<Vec<u8>> {
        let r = self.raw();
        (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS)).find_map(|i| {
            let m = r.vlmetalayers[i];
            // SAFETY: the first nvlmetalayers entries are live, with C-string
            // names and content_len bytes of content.
            unsafe {
                if m.is_null() || CStr::from_ptr((*m).name).to_bytes() != name.as_bytes() || (*m).content.is_null() {
                    return None;
                }
                let len = usize::try_from((*m).content_len).ok()?;
                Some(std::slice::from_raw_parts((*m).content, len).to_vec())
            }
        })
    }

    /// Add (`update == false`) or replace a variable-length metalayer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it exists (add) or does not (update);
    /// [`Error::Blosc`] if c-blosc2 cannot store it.
    pub(in crate::store) fn vlmeta_put(
        &mut self,
        name: &str,
        content: &[u8],
        update: bool,
        cparams: &CParams,
    ) -> Result<()> {
        writing(|| {
            check_meta_name(name)?;
            let exists = self.vlmeta_exists(name)?;
            if exists != update {
                let why = if update { "does not exist" } else { "already exists" };
                return Err(Error::InvalidArgument(format!("vlmetalayer '{name}' {why}")));
            }
            let count = usize::try_from(self.raw().nvlmetalayers).unwrap_or(0);
            if count + usize::from(!update) > FRAME_VLMETALAYERS {
                return Err(Error::InvalidArgument(format!(
                    "no room for vlmetalayer '{name}': the array has {count}, and c-blosc2 writes at most \
                     {FRAME_VLMETALAYERS} into a frame"
                )));
            }
            let len =
                i32::try_from(content.len()).map_err(|_| Error::InvalidArgument("vlmetalayer too large".into()))?;
            let n = cstring(name, "vlmetalayer name")?;
            let mut cp = vlmeta_cparams(cparams);
            // SAFETY: valid super-chunk, name, content and cparams; blosc2 copies what it keeps.
            let rc = unsafe {
                if update {
                    b::blosc2_vlmeta_update(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len, &mut cp)
                } else {
                    b::blosc2_vlmeta_add(self.as_ptr(), n.as_ptr(), content.as_ptr().cast_mut(), len, &mut cp)
                }
            };
            if rc < 0 {
                return Err(blosc_err(&format!("storing vlmetalayer '{name}'"), i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Names of the variable-length metalayers.
    #[must_use]
    pub(crate) fn vlmeta_names(&self) -> Vec<String> {
        let r = self.raw();
        (0..usize::try_from(r.nvlmetalayers).unwrap_or(0).min(MAX_VLMETALAYERS))
            .filter_map(|i| {
                let m = r.vlmetalayers[i];
                // SAFETY: the first nvlmetalayers entries are live, with C-string names.
                (!m.is_null()).then(|| unsafe { CStr::from_ptr((*m).name) }.to_string_lossy().into_owned())
            })
            .collect()
    }
}

pub(super) fn check_meta_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > METALAYER_NAME_MAXLEN {
        return Err(Error::InvalidArgument(format!(
            "metalayer name '{name}' must have 1 to {METALAYER_NAME_MAXLEN} bytes"
        )));
    }
    Ok(())
}

/// The compression parameters a vlmetalayer is compressed with: the
/// codec and level of `cparams`, as bytes (typesize 1), with a byte
/// shuffle (a no-op at that size) and nothing else. So that compressing
/// metadata cannot fail: c-blosc2 2.15's `blosc2_vlmeta_update` frees the
/// old content before it compresses the new and leaves the pointer
/// dangling when that fails (a double free when the super-chunk goes).
/// Filters that need whole items (`trunc_prec` wants 4 or 8 bytes), a
/// dictionary, a codec c-blosc2 does not ship (a plugin, or garbage in a
/// damaged frame's header, which a copy starts from) and a level past 9
/// are left out or replaced (ZSTD; 9).
fn vlmeta_cparams(cparams: &CParams) -> b::blosc2_cparams {
    let mut c = *cparams;
    if crate::codec::name(c.codec.id()).is_none() {
        c.codec = Codec::Zstd;
    }
    c.codec_meta = 0;
    c.clevel = c.clevel.min(9);
    c.use_dict = false;
    c.splitmode = SplitMode::ForwardCompat;
    c.filters =
        [Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::Shuffle];
    c.filters_meta = [0; 6];
    Compression::plain(c).to_blosc(1, 0, 1)
}

/// `content` compressed as [`SChunk::vlmeta_put`] stores it: what an open
/// will find in the frame.
///
/// # Errors
/// [`Error::Blosc`] if compression fails.
pub(in crate::store) fn compress_vlmeta(content: &[u8], cparams: &CParams) -> Result<Vec<u8>> {
    CCtx::with_blosc_cparams(vlmeta_cparams(cparams))?.compress(content)
}
