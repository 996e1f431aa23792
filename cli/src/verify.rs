//! `caterva verify`: read every chunk back ([`caterva::Array::verify`]) and
//! list the damaged ones, and those that use what this build cannot decode
//! (a codec or filter plugin, a newer c-blosc2's format: "unsupported", a
//! verdict of its own, with exit status 3), as text or (`--json`) one JSON
//! object.
//!
//! A file that does not open because it is damaged (a broken frame, or a
//! checksum table, header marker or recorded metadata that fails its
//! check) is reported as damaged as a whole; so is, with
//! `--require-checksums`, a file that keeps no checksums. Damage decides
//! the exit status when there is both: it is the finding that needs acting
//! on, while an unsupported chunk may well be sound.

use std::collections::BTreeMap;

use caterva::{Array, CParams, ChunkProblem, Config, Context, ErrorKind};
use serde_json::json;

use crate::progress::Bar;
use crate::{Failure, Outcome, RunOpts};

/// The arguments of `caterva verify`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The array: a frame file or a sparse-frame directory
    #[arg(value_name = "PATH")]
    path: String,
    /// Print one JSON object (path, chunks, problems, sound) instead of lines
    #[arg(long)]
    json: bool,
    /// Report a file that keeps no per-chunk checksums as damaged (whose
    /// chunks could hold wrong data that no check would see)
    #[arg(long)]
    require_checksums: bool,
    #[command(flatten)]
    run: RunOpts,
}

/// `caterva verify`.
pub fn run(a: &Args) -> Outcome {
    let path = a.path.as_str();
    let ctx = crate::context(&a.run, CParams::default(), false)?;
    let ctx = if a.require_checksums {
        Context::new(Config { require_checksums: true, ..*ctx.config() }).map_err(|e| Failure::Usage(e.message()))?
    } else {
        ctx
    };
    // A frame whose structure, checksum table or metadata is damaged is
    // refused when it is opened: that is a finding of verify, not a failure
    // to run it.
    let arr = match Array::open(&ctx, path) {
        Ok(arr) => arr,
        Err(e @ caterva::Error::Unsupported { .. }) => {
            if a.json {
                let problem = json!({"chunk": null, "kind": "unsupported", "reason": e.to_string()});
                let unsupported = unsupported_json(&[&e]);
                crate::out(&report(
                    json!({"path": path, "chunks": null, "problems": [problem], "unsupported": unsupported, "sound": false}),
                ))?;
            } else {
                crate::out(&format!("{path}: {e}\n"))?;
            }
            let caterva::Error::Unsupported { feature, .. } = &e else { unreachable!("matched above") };
            return Err(Failure::Unsupported(format!("'{path}' uses what this build cannot decode: {feature}")));
        }
        Err(e) if matches!(e.kind(), ErrorKind::InvalidFormat | ErrorKind::Corrupt) => {
            if a.json {
                let problem = json!({"chunk": null, "kind": "damaged", "reason": e.to_string()});
                let whole =
                    json!({"path": path, "chunks": null, "problems": [problem], "unsupported": {}, "sound": false});
                crate::out(&report(whole))?;
            } else {
                crate::out(&format!("{path}: damaged: {e}\n"))?;
            }
            return Err(Failure::Failed(format!("'{path}' is damaged")));
        }
        Err(e) => return Err(crate::open_failure(path, &e)),
    };
    let total = arr.info().nchunks;
    let problems = {
        let mut bar = Bar::new("verify", "chunks", total as u64, a.run.wanted());
        // A chunk that could not be read says nothing of the array: the
        // storage failed (exit 2, as for an array that does not open).
        arr.verify(&mut |done, _| bar.update(done as u64))
            .map_err(|e| Failure::Open(format!("could not read '{path}' to verify it: {e}")))?
    };
    crate::out(&if a.json { json_report(path, total, &problems) } else { text_report(a, total, &problems) })?;
    let found = Found::of(&problems);
    let unsupported = found.unsupported_summary();
    let also = if unsupported.is_empty() { String::new() } else { format!("; unsupported: {unsupported}") };
    if found.table {
        Err(Failure::Failed(format!(
            "'{path}' is damaged: its checksum table or metadata, and {} chunk(s){also}",
            found.damaged
        )))
    } else if found.damaged > 0 {
        Err(Failure::Failed(format!("'{path}' has {} damaged chunk(s){also}", found.damaged)))
    } else if !unsupported.is_empty() {
        Err(Failure::Unsupported(format!("'{path}' uses what this build cannot decode: {unsupported}")))
    } else {
        Ok(())
    }
}

/// The problems counted: damage (of the table and metadata, of chunks) and
/// the chunks this build cannot decode, by feature.
struct Found<'a> {
    table: bool,
    damaged: usize,
    unsupported: BTreeMap<&'a str, usize>,
}

impl<'a> Found<'a> {
    fn of(problems: &'a [ChunkProblem]) -> Self {
        let mut found = Found { table: false, damaged: 0, unsupported: BTreeMap::new() };
        for p in problems {
            match &p.error {
                caterva::Error::Unsupported { feature, .. } => {
                    *found.unsupported.entry(feature.as_str()).or_default() += 1;
                }
                _ if p.nchunk < 0 => found.table = true,
                _ => found.damaged += 1,
            }
        }
        found
    }

    /// `filter BYTEDELTA (4 chunks), codec NDLZ (1 chunk)`; empty if none.
    fn unsupported_summary(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let parts: Vec<String> =
            self.unsupported.iter().map(|(f, &n)| format!("{f} ({n} chunk{})", plural(n))).collect();
        parts.join(", ")
    }
}

/// One line per problem, then a summary (left out with `--quiet`).
fn text_report(a: &Args, total: i64, problems: &[ChunkProblem]) -> String {
    let mut text: String = problems.iter().map(|p| format!("{p}\n")).collect();
    if !a.run.quiet {
        let found = Found::of(problems);
        let mut parts = Vec::new();
        if found.table {
            parts.push("checksum table or metadata damaged".to_owned());
        }
        if found.table || found.damaged > 0 {
            parts.push(format!("{} of {total} chunks damaged", found.damaged));
        }
        if !found.unsupported.is_empty() {
            parts.push(format!("unsupported: {}", found.unsupported_summary()));
            if found.damaged == 0 {
                let unchecked: usize = found.unsupported.values().sum();
                parts.push(format!("the other {} of {total} chunks sound", total as usize - unchecked));
            }
        }
        text += &if parts.is_empty() {
            format!("{}: {total} chunks, all sound\n", a.path)
        } else {
            format!("{}: {}\n", a.path, parts.join("; "))
        };
    }
    text
}

fn json_report(path: &str, total: i64, problems: &[ChunkProblem]) -> String {
    // The checksum table and metadata (nchunk -1) belong to no chunk.
    let chunk = |p: &ChunkProblem| if p.nchunk >= 0 { json!(p.nchunk) } else { json!(null) };
    let kind = |p: &ChunkProblem| if p.error.kind() == ErrorKind::Unsupported { "unsupported" } else { "damaged" };
    let list: Vec<_> =
        problems.iter().map(|p| json!({"chunk": chunk(p), "kind": kind(p), "reason": p.error.to_string()})).collect();
    let errors: Vec<&caterva::Error> = problems.iter().map(|p| &p.error).collect();
    let unsupported = unsupported_json(&errors);
    report(
        json!({"path": path, "chunks": total, "problems": list, "unsupported": unsupported, "sound": problems.is_empty()}),
    )
}

/// `{"filter BYTEDELTA": 4, ...}`: the chunks (or the frame, as one) each
/// feature this build cannot decode keeps from being checked.
fn unsupported_json(errors: &[&caterva::Error]) -> serde_json::Value {
    let mut by = serde_json::Map::new();
    for e in errors {
        if let caterva::Error::Unsupported { feature, .. } = e {
            let n = by.get(feature).and_then(serde_json::Value::as_u64).unwrap_or(0);
            by.insert(feature.clone(), json!(n + 1));
        }
    }
    serde_json::Value::Object(by)
}

fn report(value: serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serialises");
    text.push('\n');
    text
}
