//! [`Array`]: an N-dimensional array over a store (`crate::store::Store`).
//!
//! The methods are split by concern, one file each:
//! - `create`: making arrays (from nothing, NaNs, a buffer, a frame, a file,
//!   or another array: `get_slice`, `copy`), persisting and removing them;
//! - `io`: reading and writing regions and orthogonal selections;
//! - `reshape`: resize, insert, append, delete, squeeze, expand_dims;
//! - `concat`: joining two arrays along an axis (`concatenate`, `append_array`);
//! - `chunks`: chunk lists for schedulers (`slice_nchunks`, `chunk_region`);
//! - `offset`: arrays inside larger files (`open_offset`, `save_append`);
//! - `meta`: metalayers, vlmetalayers, dtype;
//! - `integrity`: checksums and `verify`;
//! - `shared`: handles in several processes writing one array (`refresh`,
//!   `exclusive`, `set_slice_shared`);
//! - `reduce`: sums, means, extremes, variances along axes ([`Array::reduce`]);
//! - `info`: what an array is and how it is stored ([`Array::info`]);
//! - `copy_buffer`: [`copy_buffer()`], N-d boxes between C-order buffers.
//!
//! This file holds the types they share and the geometry a store describes.
//! Every change of an array is one `Store::write` transaction: the methods
//! compute what to write first (compressing new chunks in parallel), then
//! apply it inside the transaction, and update `geom` only once it committed.

mod chunks;
mod concat;
mod copy_buffer;
mod create;
mod info;
mod integrity;
mod io;
mod meta;
mod offset;
mod reduce;
mod reshape;
mod shared;

pub use copy_buffer::copy_buffer;
pub use info::{blosc2_version, ArrayInfo};
pub use integrity::ChunkProblem;
pub(crate) use meta::check_user_vlmeta;
pub use reduce::{Reduce, ReduceLayout, ReduceOptions, Reduced};

#[cfg(doc)]
use crate::context::Config;
use crate::context::{Context, Durability};
use crate::error::{Error, Result};
use crate::geometry::{Geometry, MAX_DIM};
use crate::meta::{self as metalayer, B2ND_META, CATERVA_META};
use crate::store::schunk::Storage;
use crate::store::{Replaced, Store};

/// Element size and shape of a new array (`caterva_params_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Bytes per item, 1..=[`MAX_ITEMSIZE`](crate::MAX_ITEMSIZE) (the C ABI's: 1..=255).
    pub itemsize: usize,
    /// Shape, 0..=8 dimensions; 0 entries are allowed (empty axes).
    pub shape: Vec<i64>,
    /// NumPy dtype string recorded in the `b2nd` metalayer (`<f8`, `<i2`…),
    /// which python-blosc2 uses; `None` records the unsigned integer of the
    /// item size (`|u1`, `<u2`, `<u4`, `<u8`) or raw bytes (`|V<n>`).
    pub dtype: Option<String>,
}

/// A user metalayer: a name and opaque bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metalayer {
    /// Name (1..=31 bytes, no NUL).
    pub name: String,
    /// Content.
    pub content: Vec<u8>,
}

/// Partitions, location and initial metalayers of a new array (`caterva_storage_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageParams {
    /// Chunk shape, one entry per dimension.
    pub chunkshape: Vec<i32>,
    /// Block shape, one entry per dimension (each ≤ the chunk's).
    pub blockshape: Vec<i32>,
    /// One contiguous frame (file) or a sparse frame (directory of chunk files).
    pub contiguous: bool,
    /// Where to persist it; `None` keeps it in memory.
    pub urlpath: Option<String>,
    /// Fixed-size user metalayers, at most 15, each of at most 16 MiB.
    pub metalayers: Vec<Metalayer>,
}

impl StorageParams {
    pub(crate) fn storage(&self) -> Storage {
        Storage { contiguous: self.contiguous, urlpath: self.urlpath.clone() }
    }
}

/// An N-dimensional array of fixed-size items, compressed in chunks and
/// blocks in a Blosc2 super-chunk.
///
/// Reads take `&self` and may run from many threads at once; anything that
/// changes the array takes `&mut self`.
pub struct Array {
    geom: Geometry,
    store: Store,
    ctx: Context,
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array").field("geometry", &self.geom).field("storage", &self.store.storage()).finish()
    }
}

impl Array {
    /// The geometry: item size, shape, chunk and block shapes.
    #[must_use]
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    /// Number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.geom.ndim()
    }
    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.geom.itemsize()
    }
    /// Shape.
    #[must_use]
    pub fn shape(&self) -> &[i64] {
        self.geom.shape()
    }
    /// Number of items.
    #[must_use]
    pub fn nitems(&self) -> i64 {
        self.geom.nitems()
    }
    /// The context the array uses.
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The store (for the crate's C layer, the engine and tests).
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// [`Array::wrap`], but a failure hands the store back (to a caller that
    /// must not drop it: the C layer's `caterva_from_schunk` leaves the
    /// caller's super-chunk alive).
    pub(crate) fn wrap_or_hand_back(ctx: &Context, store: Store) -> std::result::Result<Array, Box<(Error, Store)>> {
        if ctx.config().require_checksums && !store.has_checksums() {
            let e = Error::corrupt(
                -1,
                "the array keeps no checksum table, and the context requires checksums (Config::require_checksums)",
            );
            return Err(Box::new((e, store)));
        }
        match geometry_of(&store) {
            Ok(geom) => {
                let mut store = store;
                store.set_block_cache(ctx.block_cache_bytes());
                store.set_durability(ctx.config().durability);
                Ok(Array { geom, store, ctx: ctx.clone() })
            }
            Err(e) => Err(Box::new((e, store))),
        }
    }

    /// The array a store holds: the store must carry a `caterva` and/or
    /// `b2nd` metalayer (and, when the context requires checksums, a
    /// checksum table). A failure drops the store
    /// ([`Array::wrap_or_hand_back`] returns it).
    pub(crate) fn wrap(ctx: &Context, store: Store) -> Result<Array> {
        Self::wrap_or_hand_back(ctx, store).map_err(|b| b.0)
    }

    /// Replace this array by the one `make` builds from it at the storage
    /// it is given ([`Store::replace`]: beside the path, then renamed over
    /// it, or in memory), for changes that rewrite every chunk. A handle
    /// that may not change its storage is refused before `make` runs.
    ///
    /// # Errors
    /// As [`Store::replace`]; the array is unchanged then.
    pub(crate) fn replace_store(&mut self, make: impl FnOnce(&Array, &Storage) -> Result<Array>) -> Result<()> {
        let (ctx, durability) = (self.ctx.clone(), self.durability());
        *self = match self.store.replace(|st| make(self, st))? {
            Replaced::InMemory(new) => new,
            Replaced::OnDisk(store) => Array::wrap(&ctx, *store)?,
        };
        // The handle's setting, not its context's.
        self.set_durability(durability);
        Ok(())
    }

    /// What this handle's writes survive after a crash (see
    /// [`Durability`]): [`Config::durability`] of the context the array was
    /// made or opened with, unless [`Array::set_durability`] changed it.
    /// `CATERVA_JOURNAL_SYNC=0` in the environment overrides it to
    /// [`Durability::Process`] (this returns the setting, not the override).
    #[must_use]
    pub fn durability(&self) -> Durability {
        self.store.durability()
    }

    /// Choose what this handle's writes survive, from its next write on (see
    /// [`Durability`]): [`Durability::Full`] syncs each write to disk (3
    /// syncs for a one-row write to a frame file), [`Durability::Process`]
    /// makes no syncs and survives a killed process but not a power loss.
    /// It applies to this handle only (not stored in the file; another
    /// handle of the array, in this process or another, keeps its own), to
    /// its writes, reshapes, metadata changes and [`Array::save`]. Set back
    /// to [`Durability::Full`] after writes at [`Durability::Process`], the
    /// handle makes the whole array durable at its next write. An array in
    /// memory keeps the setting and has nothing to sync.
    pub fn set_durability(&mut self, durability: Durability) {
        self.store.set_durability(durability);
    }
}

/// The geometry a super-chunk's `caterva` and/or `b2nd` metalayers
/// describe (they must agree when both are there), checked against the
/// super-chunk itself.
fn geometry_of(sc: &Store) -> Result<Geometry> {
    let read = |name: &str| -> Result<Option<metalayer::MetaGeometry>> {
        sc.meta_get(name)
            .map(|b| {
                metalayer::decode(&b)
                    .map(|(m, _)| m)
                    .map_err(|e| Error::InvalidFormat(format!("'{name}' metalayer: {}", e.message())))
            })
            .transpose()
    };
    let m = match (read(CATERVA_META)?, read(B2ND_META)?) {
        (None, None) => {
            return Err(Error::InvalidFormat("the super-chunk has neither a 'caterva' nor a 'b2nd' metalayer".into()))
        }
        (Some(c), Some(b)) if (&c.shape, &c.chunkshape, &c.blockshape) != (&b.shape, &b.chunkshape, &b.blockshape) => {
            return Err(Error::InvalidFormat(format!(
                "the 'caterva' and 'b2nd' metalayers disagree: shape {:?} / {:?}, chunks {:?} / {:?}, blocks {:?} / {:?}",
                c.shape, b.shape, c.chunkshape, b.chunkshape, c.blockshape, b.blockshape
            )))
        }
        (Some(m), _) | (None, Some(m)) => m,
    };
    let itemsize = usize::try_from(sc.typesize()).unwrap_or(0);
    let geom = Geometry::new(itemsize, &m.shape, &m.chunkshape, &m.blockshape)
        .map_err(|e| Error::InvalidFormat(format!("metalayer geometry: {}", e.message())))?;
    if sc.nchunks() != geom.nchunks() {
        return Err(Error::InvalidFormat(format!(
            "the super-chunk has {} chunks; shape {:?} with chunks {:?} needs {}",
            sc.nchunks(),
            geom.shape(),
            geom.chunkshape(),
            geom.nchunks()
        )));
    }
    if geom.nchunks() > 0 && usize::try_from(sc.chunksize()).ok() != Some(geom.chunk_nbytes()) {
        return Err(Error::InvalidFormat(format!(
            "chunks hold {} bytes; the geometry needs {}",
            sc.chunksize(),
            geom.chunk_nbytes()
        )));
    }
    // Every chunk is whole (c-blosc2 allows a shorter last one).
    if i128::from(sc.nbytes()) != i128::from(geom.nchunks()) * geom.chunk_nbytes() as i128 {
        return Err(Error::InvalidFormat(format!(
            "the super-chunk holds {} bytes; {} chunks of {} bytes are needed",
            sc.nbytes(),
            geom.nchunks(),
            geom.chunk_nbytes()
        )));
    }
    debug_assert!(geom.ndim() <= MAX_DIM);
    Ok(geom)
}
