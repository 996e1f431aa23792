//! `caterva ls`: the arrays under a directory or an object-store prefix;
//! `caterva orphans`: remove what writers killed mid-write left of an
//! array on an object store.

use caterva::{Config, Context};
use serde_json::json;

use crate::{Failure, Outcome};

/// The arguments of `caterva ls`.
#[derive(clap::Args, Debug)]
pub struct LsArgs {
    /// A directory, or a prefix on an object store (s3://bucket/dir/)
    #[arg(value_name = "DIR")]
    dir: String,
    /// Open each array and show its shape, dtype and chunk shape too
    #[arg(short, long)]
    long: bool,
    /// Print one JSON list of objects (url, name, storage, bytes; with
    /// --long also shape, dtype, chunkshape) instead of lines
    #[arg(long)]
    json: bool,
}

/// `caterva ls`.
pub fn ls(a: &LsArgs) -> Outcome {
    let found = caterva::list(&a.dir).map_err(|e| Failure::Open(format!("cannot list '{}': {e}", a.dir)))?;
    let ctx = Context::new(Config::default()).map_err(|e| Failure::Failed(e.to_string()))?;
    let mut rows = Vec::new();
    let mut text = String::new();
    for l in &found {
        let storage = if l.contiguous { "contiguous" } else { "sparse" };
        let mut row = json!({"url": l.url, "name": l.name, "storage": storage, "bytes": l.bytes});
        let mut line = format!("{storage:<10} {:>12}  {}", l.bytes, l.url);
        if a.long {
            let arr = crate::open(&ctx, &l.url)?;
            let dtype = arr.dtype().unwrap_or_else(|| format!("({} bytes)", arr.itemsize()));
            row["shape"] = json!(arr.shape());
            row["dtype"] = json!(arr.dtype());
            row["chunkshape"] = json!(arr.info().chunkshape);
            line += &format!("  shape {:?} {dtype} chunks {:?}", arr.shape(), arr.info().chunkshape);
        }
        text += &line;
        text.push('\n');
        rows.push(row);
    }
    if a.json {
        let mut out = serde_json::to_string_pretty(&rows).expect("a JSON value serialises");
        out.push('\n');
        return crate::out(&out);
    }
    crate::out(&text)
}

/// The arguments of `caterva orphans`.
#[derive(clap::Args, Debug)]
pub struct OrphansArgs {
    /// The array (a sparse frame on an object store: s3://bucket/dir/a.b2nd)
    #[arg(value_name = "URL")]
    url: String,
    /// Remove only what is at least this old, in seconds (a writer names its
    /// new chunk objects moments after it makes them: an hour is safe)
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    older_than: u64,
}

/// `caterva orphans`.
pub fn orphans(a: &OrphansArgs) -> Outcome {
    let ctx = Context::new(Config::default()).map_err(|e| Failure::Failed(e.to_string()))?;
    let arr = crate::open(&ctx, &a.url)?;
    let n = arr
        .remove_orphans(std::time::Duration::from_secs(a.older_than))
        .map_err(|e| Failure::Failed(format!("cannot remove the orphans of '{}': {e}", a.url)))?;
    crate::out(&format!("{}: {n} orphan chunk object(s) removed\n", a.url))
}
