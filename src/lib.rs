//! # caterva
//!
//! Compressed N-dimensional arrays on Blosc2 super-chunks, with a C ABI that
//! is a drop-in replacement for the original `libcaterva` 0.5.
//!
//! An [`Array`] of up to 8 dimensions and any item size (up to 2 GiB; 255
//! bytes through the C ABI) is cut
//! into chunks, and each chunk into blocks. Reading a slice decompresses only
//! the blocks it touches, in parallel across chunks. Arrays live in memory, in
//! one file (a contiguous frame) or in a directory with one file per chunk (a
//! sparse frame). The `caterva` metalayer records the geometry, byte for byte
//! as the original library wrote it.
//!
//! ```no_run
//! # // no_run: rustdoc runs examples from /tmp, where the loader cannot find the
//! # // libblosc2.so this crate links; tests/roundtrip.rs runs the same calls.
//! use caterva::{Array, Config, Context, Params, StorageParams};
//! let ctx = Context::new(Config::default()).unwrap();
//! let params = Params { itemsize: 8, shape: vec![10, 10], dtype: None };
//! let storage = StorageParams { chunkshape: vec![6, 6], blockshape: vec![4, 4], ..Default::default() };
//! let data: Vec<u8> = (0..100u64).flat_map(|v| v.to_le_bytes()).collect();
//! let arr = Array::from_buffer(&ctx, &params, &storage, &data).unwrap();
//! let mut row = vec![0u8; 10 * 8];
//! arr.get_slice_buffer(&[3, 0], &[4, 10], &mut row, &[1, 10]).unwrap();
//! assert_eq!(&row[..8], &30u64.to_le_bytes());
//! ```

// N-d index arithmetic walks several per-axis arrays in step; indexing reads better there.
#![allow(clippy::needless_range_loop)]
// `pub` means public: an item the crate root does not reach is `pub(crate)`
// (tests/registry.rs holds the public items against tests/registry/public_api.txt).
#![warn(unreachable_pub)]

// The public API is the safe one: contexts, arrays, their parameters,
// geometry and regions, codec ids, errors. Everything else is the crate's own.
mod array;
mod blosc2;
/// BLZ/bcolz data (carrays, ctables, Bloscpack files) into caterva arrays and back.
/// (Rust types only, which include/caterva.h leaves out: the line below tells cbindgen.)
///
/// cbindgen:ignore
///
pub mod blz;
mod buffer;
mod cache;
pub mod codec;
mod context;
mod dtype;
mod engine;
mod error;
// The C ABI: its `pub` items are exported by symbol (include/caterva.h), not by path.
#[allow(unreachable_pub)]
mod ffi;
mod fork;
mod geometry;
// Its `pub` items are reached from outside through `caterva::testing` (feature `testing`) only.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
mod meta;
mod partition;
mod reshape;
mod store;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod tune;

pub use array::copy_buffer;
pub use array::{
    blosc2_version, Array, ArrayInfo, ChunkProblem, Metalayer, Params, Reduce, ReduceLayout, ReduceOptions, Reduced,
    StorageParams,
};
pub use blosc2::{CParams, Codec, Filter, SplitMode};
pub use context::{Config, Context, Durability};
pub use error::{Error, ErrorKind, Result};
pub use geometry::{for_each_index, Geometry, Region, MAX_DIM, MAX_ITEMSIZE};
pub use meta::check_dtype;
pub use partition::{propose_cparams, propose_partitions, Access, PartitionHints, Partitions};
pub use store::listing::{list, Listed};
pub use store::location::options::{set as set_storage_options, StorageOptions};
pub use tune::{tune, Candidate, Objective, Tuning, MIN_TUNED_BYTES, REPORT_VLMETA, SAMPLE_BYTES, SAMPLE_WINDOWS};
