//! [`Array::info`]: how an array is stored and compressed, in one struct.

use crate::array::Array;
use crate::blosc2;
use crate::blosc2::CParams;

/// How an array is stored and compressed: what `caterva info` shows beyond
/// the shape and dtype ([`Array::shape`], [`Array::dtype`]…).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ArrayInfo {
    /// One frame (a file, or a buffer in memory) rather than a sparse
    /// frame (a directory with one file per chunk).
    pub contiguous: bool,
    /// The file or directory, `None` in memory.
    pub urlpath: Option<String>,
    /// The chunk shape.
    pub chunkshape: Vec<i32>,
    /// The block shape.
    pub blockshape: Vec<i32>,
    /// The compression parameters recorded with the chunks (`use_dict` is
    /// not recorded and reads `false`; a split mode the frame does not
    /// record, a number outside 1..=4, reads as the default,
    /// [`SplitMode::Auto`](crate::SplitMode::Auto)).
    pub cparams: CParams,
    /// Size of the chunks uncompressed. Chunks are padded to whole blocks,
    /// so this may exceed `nitems * itemsize`.
    pub nbytes: i64,
    /// Size of the chunks compressed.
    pub cbytes: i64,
    /// Number of chunks.
    pub nchunks: i64,
    /// Names of the fixed-size metalayers, in order (`caterva` and `b2nd`,
    /// the geometry ones, and this library's checksum marker `caterva.xxh3`,
    /// when there is one, included).
    pub metalayers: Vec<String>,
    /// Names of the variable-length metalayers, in order (this library's
    /// own checksum table, when there is one, included).
    pub vlmetalayers: Vec<String>,
    /// Whether the array keeps per-chunk checksums (see [`Array::has_checksums`]).
    pub checksums: bool,
}

impl Array {
    /// How the array is stored and compressed.
    #[must_use]
    pub fn info(&self) -> ArrayInfo {
        let sc = self.store();
        let storage = sc.storage();
        ArrayInfo {
            contiguous: storage.contiguous,
            urlpath: storage.urlpath,
            chunkshape: self.geometry().chunkshape().to_vec(),
            blockshape: self.geometry().blockshape().to_vec(),
            cparams: sc.cparams(),
            nbytes: sc.nbytes(),
            cbytes: sc.cbytes(),
            nchunks: sc.nchunks(),
            metalayers: sc.meta_names(),
            vlmetalayers: sc.vlmeta_names(),
            checksums: self.has_checksums(),
        }
    }
}

/// The version of the c-blosc2 library in use (`"2.15.2"`…).
#[must_use]
pub fn blosc2_version() -> String {
    blosc2::blosc2_version()
}

#[cfg(test)]
mod tests {
    use crate::{Array, Codec, Config, Context, Params, StorageParams};

    #[test]
    fn info_of_an_array_in_memory() {
        let ctx = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
        let params = Params { itemsize: 4, shape: vec![10, 7], dtype: None };
        let storage =
            StorageParams { chunkshape: vec![4, 4], blockshape: vec![2, 3], contiguous: true, ..Default::default() };
        let data: Vec<u8> = (0..70u32).flat_map(|v| (v * v).to_le_bytes()).collect();
        let arr = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
        let info = arr.info();
        assert!(info.contiguous);
        assert_eq!(info.urlpath, None);
        assert_eq!((info.chunkshape, info.blockshape), (vec![4, 4], vec![2, 3]));
        assert_eq!((info.cparams.codec, info.cparams.clevel), (Codec::Zstd, 5));
        assert_eq!(info.nchunks, 6);
        assert_eq!(info.nbytes, 6 * 4 * 6 * 4);
        assert!(info.cbytes > 0);
        // The geometry, then the checksum marker.
        assert_eq!(info.metalayers, ["caterva", "b2nd", "caterva.xxh3"]);
        assert_eq!(info.vlmetalayers, ["caterva.xxh3"]);
        assert!(info.checksums);
        assert!(super::blosc2_version().starts_with("2."));
    }
}
