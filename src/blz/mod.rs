//! BLZ, the persistent format of bcolz (and of caterva's ancestor): bcolz
//! carray and ctable directories and Bloscpack files, read and written, and
//! moved into caterva arrays and back.
//!
//! - [`bloscpack`](crate::blz::bloscpack): the `blpk` file format (headers, metadata, offsets,
//!   every checksum kind), a streaming [`Reader`](crate::blz::bloscpack::Reader) and a writer;
//! - [`attrs`](crate::blz::attrs): attributes as vlmetalayers (names that cannot be one
//!   go into [`ATTRS_VLMETA`](crate::blz::ATTRS_VLMETA)), held as [`Json`](crate::blz::Json) values:
//!   Python's JSON (`NaN`, `Infinity`, ASCII output), stored as msgpack;
//! - [`carray`](crate::blz::carray): bcolz's directory layout ([`CArray`](crate::blz::carray::CArray), [`CTable`](crate::blz::carray::CTable));
//! - [`import`](mod@crate::blz::import): streamed import into caterva arrays;
//! - [`export`](mod@crate::blz::export): caterva arrays to carrays, ctables and Bloscpack files
//!   that bcolz (bcolz-zipline) and bloscpack read.
//!
//! ```no_run
//! use caterva::{Context, Config, StorageParams};
//! use caterva::blz;
//! let ctx = Context::new(Config::default()).unwrap();
//! let storage = StorageParams { urlpath: Some("prices.b2frame".into()), contiguous: true, ..Default::default() };
//! let arr = blz::import(&ctx, "prices.bcolz".as_ref(), &storage, &mut |_, _| {}).unwrap();
//! blz::export_carray(&arr, "back.bcolz".as_ref(), &blz::ExportOptions::default(), &mut |_, _| {}).unwrap();
//! ```

pub mod attrs;
pub mod bloscpack;
pub mod carray;
pub mod export;
pub mod import;
mod json;
mod msgpack;

pub use attrs::{ATTRS_VLMETA, DFLT_VLMETA};
pub use bloscpack::Checksum;
pub use export::{export_bloscpack, export_carray, export_ctable, ExportOptions};
pub use import::{
    default_partitions, detect, import, import_bloscpack, import_carray, import_column, import_ctable,
    import_ctable_records, source_shape, Kind, Progress,
};
pub use json::{Attributes, Json};
