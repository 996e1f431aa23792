//! `caterva`: inspect, print, copy and check the arrays on disk (contiguous
//! frame files and sparse-frame directories) written by this library,
//! python-caterva or python-blosc2.
//!
//! Built on the library's public API only. Exit status: 0 success, 1
//! problems found in the data (or an operation that failed part-way), 2 a
//! usage error or a file that cannot be opened, 3 data that uses what this
//! build cannot decode (`verify`, `copy`).

mod blz;
mod concat;
mod copy;
mod info;
mod items;
mod ls;
mod print;
mod progress;
mod verify;

use std::io::Write;
use std::process::ExitCode;

use caterva::{Array, CParams, Config, Context};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The end of every help text.
macro_rules! exit_status {
    () => {
        "Exit status: 0 success, 1 problems found in the data (or an operation that failed\n\
         part-way), 2 a usage error or a file that cannot be opened or created, 3 (verify,\n\
         copy) data that uses what this build cannot decode (a codec or filter plugin)."
    };
}

/// How the items of `cat` and `slice` print.
macro_rules! item_format {
    () => {
        "Items print by the dtype of the 'b2nd' metalayer (or --dtype): integers,\n\
         floats in their shortest exact form, complex numbers as 1.5-2.0j, booleans as\n\
         true/false; other items (no dtype, structured or string dtypes) as 0x and their\n\
         bytes in storage order. A 0-dim array prints its one item alone."
    };
}

/// A command's help: usage first, then what it does, its arguments and the details.
const COMMAND_HELP: &str = "{usage-heading} {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

#[derive(Parser, Debug)]
#[command(
    name = "caterva",
    about = "Inspect, print, copy and check caterva / Blosc2 N-d arrays",
    subcommand_required = true,
    after_help = concat!(
        "PATH is a contiguous frame file or a sparse-frame directory, written by\n\
         caterva-rs, python-caterva or python-blosc2.\n\n\
         Run 'caterva COMMAND --help' for a command's options; 'caterva --version' for versions.\n\n",
        exit_status!()
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Show geometry, dtype, storage, compression and metalayers
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "nbytes is the size of the stored chunks uncompressed (chunks are padded to\n\
             whole blocks, so it may exceed nitems x itemsize), cbytes their compressed size;\n\
             cratio = nbytes / cbytes. Without a 'b2nd' metalayer the dtype is (none).\n\n",
            exit_status!()
        )
    )]
    Info(info::Args),
    /// Print every item, NumPy style (nested brackets, one row per line)
    #[command(help_template = COMMAND_HELP, after_help = concat!(item_format!(), "\n\n", exit_status!()))]
    Cat(print::CatArgs),
    /// Print a region, selected NumPy style: '0:2,:,5', '-3:', '::-1,2'
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "SELECTION has one entry per leading axis (missing ones select the whole axis):\n\
             START:STOP[:STEP] (as in NumPy: any may be left out; negative bounds count\n\
             from the end; bounds are clipped to the axis; a negative STEP walks backwards)\n\
             or an index (negative from the end), which drops that axis from the output.\n\n",
            item_format!(),
            "\n\n",
            exit_status!()
        )
    )]
    Slice(print::SliceArgs),
    /// Write a copy, with new partitions, compression or storage if asked
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "Unset options keep the source's settings (filters always are). When the\n\
             partitions and compression are unchanged, chunks are copied without\n\
             recompressing them. Metalayers and vlmetalayers are copied. What the source\n\
             records but this build cannot write (a codec or filter plugin such as ZFP or\n\
             INT_TRUNC, a dictionary with a codec other than zstd) is changed: the default\n\
             codec, the plugin filters left out, no dictionary; each change is said on\n\
             stderr. Chunks this build cannot decode stop the copy (exit status 3).\n\n",
            exit_status!()
        )
    )]
    Copy(copy::Args),
    /// Decompress every chunk and report the damaged ones (exit status 1 if any)
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "Prints one line per damaged chunk ('chunk N: reason'), then a summary; a frame\n\
             whose structure is damaged is reported as a whole ('PATH: damaged: reason').\n\
             Chunks that use what this build cannot decode (a codec or filter plugin such\n\
             as BYTEDELTA or ZFP, a newer c-blosc2's format) are not damage: each gets a\n\
             line ('chunk N: unsupported: reason') and the summary counts them by feature\n\
             ('unsupported: filter BYTEDELTA (4 chunks)').\n\
             With --json: one object with path, chunks (the total; null for a frame reported\n\
             as a whole), problems (a list of {chunk, kind, reason}; kind is damaged or\n\
             unsupported, chunk null for the frame as a whole), unsupported (chunks by\n\
             feature) and sound (true or false).\n\n\
             Exit status: 0 all sound, 1 damage found (whether or not some chunks are also\n\
             unsupported: damage decides), 3 chunks this build cannot decode and no damage,\n\
             2 a usage error or a file that cannot be opened."
        )
    )]
    Verify(verify::Args),
    /// Join two arrays along an axis into a new array
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "The shapes must agree off the axis, and the item sizes and dtypes must be\n\
             equal. The result takes A's partitions, compression, storage kind, dtype,\n\
             metalayers and vlmetalayers; when A is empty (a length 0 along an axis), B's\n\
             partitions and compression (an empty array's chunks may be 0 long), the rest\n\
             still A's. B is read whole into memory.\n\n",
            exit_status!()
        )
    )]
    Concat(concat::Args),
    /// Import a bcolz carray or ctable directory, or a Bloscpack (.blp) file
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "The dtype goes into the 'b2nd' metalayer, the carray's attributes and its dflt\n\
             into vlmetalayers (msgpack, as python-blosc2 reads them). A ctable becomes one\n\
             array per column in the new directory DST (DST/<column>.b2frame), with\n\
             --column the one column, with --records one array of records (a structured\n\
             dtype). Streamed: memory holds a few chunks.\n\n",
            exit_status!()
        )
    )]
    Import(blz::ImportArgs),
    /// Export arrays to a bcolz carray or ctable directory, or a Bloscpack file
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "bcolz (bcolz-zipline) and bloscpack read what this writes back exactly. Several\n\
             1-d arrays of equal length make a ctable.\n\n",
            exit_status!()
        )
    )]
    Export(blz::ExportArgs),
    /// List the arrays in a directory or under an object-store prefix
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "One line per array: its storage (contiguous or sparse), the bytes it takes and
             its URL or path. Contiguous frames are told by their first bytes, sparse frames
             by their index; what is not an array, and hidden names, are left out.

",
            exit_status!()
        )
    )]
    Ls(ls::LsArgs),
    /// Remove what writers killed mid-write left of an array on an object store
    #[command(
        help_template = COMMAND_HELP,
        after_help = concat!(
            "A writer on an object store puts new chunk objects, then the index that names
             them; one killed in between leaves chunk objects no index names. This removes
             those at least --older-than seconds old. Elsewhere nothing is left: 0.

",
            exit_status!()
        )
    )]
    Orphans(ls::OrphansArgs),
}

/// Options of every command that reads an array through a thread pool and
/// may draw a progress bar.
#[derive(clap::Args, Debug)]
pub struct RunOpts {
    /// Threads to use (default: the number of CPUs)
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Never draw a progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// No progress bar, and nothing printed beyond the essential
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("--threads must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a valid number")),
    }
}

/// Why a command did not succeed; each kind has its exit status.
#[derive(Debug)]
pub enum Failure {
    /// The command line is wrong (exit 2, reported like clap's own errors).
    Usage(String),
    /// An input or output cannot be opened or created (exit 2).
    Open(String),
    /// The data has problems, or an operation failed part-way (exit 1).
    Failed(String),
    /// The data uses what this build cannot decode (a codec or filter
    /// plugin, a newer c-blosc2's format), and nothing is found damaged
    /// (exit 3).
    Unsupported(String),
    /// Standard output was closed by its reader (`caterva cat x | head`): stop quietly (exit 0).
    Closed,
}

impl From<std::io::Error> for Failure {
    /// An error writing the output.
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::Closed
        } else {
            Failure::Failed(format!("cannot write the output: {e}"))
        }
    }
}

/// The outcome of a command.
pub type Outcome = Result<(), Failure>;

/// The command line's definition, with the versions of both libraries.
fn command() -> clap::Command {
    let version = format!("{} (caterva-rs, c-blosc2 {})", env!("CARGO_PKG_VERSION"), caterva::blosc2_version());
    Cli::command().version(version)
}

fn main() -> ExitCode {
    let parsed = command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let (name, outcome) = match &cli.command {
        Cmd::Info(a) => ("info", info::run(a)),
        Cmd::Cat(a) => ("cat", print::cat(a)),
        Cmd::Slice(a) => ("slice", print::slice(a)),
        Cmd::Copy(a) => ("copy", copy::run(a)),
        Cmd::Verify(a) => ("verify", verify::run(a)),
        Cmd::Concat(a) => ("concat", concat::run(a)),
        Cmd::Import(a) => ("import", blz::import(a)),
        Cmd::Export(a) => ("export", blz::export(a)),
        Cmd::Ls(a) => ("ls", ls::ls(a)),
        Cmd::Orphans(a) => ("orphans", ls::orphans(a)),
    };
    match outcome {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => clap_exit(&usage_error(name, &m)),
        Err(Failure::Open(m)) => {
            eprintln!("caterva: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(m)) => {
            eprintln!("caterva: {m}");
            ExitCode::from(1)
        }
        Err(Failure::Unsupported(m)) => {
            eprintln!("caterva: {m}");
            ExitCode::from(3)
        }
    }
}

/// Print clap's error, help or version and return its exit status (2 for
/// an error, 0 for help and version).
fn clap_exit(e: &clap::Error) -> ExitCode {
    // Help cut short by a closed pipe is not worth an error of its own.
    let _ = e.print();
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// A usage error found after parsing (a selection out of bounds, a block
/// shape that does not fit), dressed as clap's own: message, the command's
/// usage, and a pointer to its help.
fn usage_error(subcommand: &str, message: &str) -> clap::Error {
    let mut cmd = command();
    cmd.build();
    let sub = cmd.find_subcommand_mut(subcommand).expect("the command that ran is defined");
    sub.error(clap::error::ErrorKind::ValueValidation, message)
}

/// A context with `cparams`, `checksums` and the thread count of `--threads`
/// (default: every CPU).
///
/// # Errors
/// [`Failure::Usage`] if the library refuses the settings.
pub fn context(opts: &RunOpts, cparams: CParams, checksums: bool) -> Result<Context, Failure> {
    let nthreads = opts.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    Context::new(Config { cparams, nthreads, checksums, ..Config::default() }).map_err(|e| Failure::Usage(e.message()))
}

/// Open the array at `path` for reading.
///
/// # Errors
/// [`Failure::Open`] with the library's reason.
pub fn open(ctx: &Context, path: &str) -> Result<Array, Failure> {
    Array::open(ctx, path).map_err(|e| open_failure(path, &e))
}

/// The failure of opening `path`.
pub fn open_failure(path: &str, e: &caterva::Error) -> Failure {
    Failure::Open(format!("cannot open '{path}': {e}"))
}

/// Write `text` on stdout (a closed pipe ends the command quietly).
///
/// # Errors
/// [`Failure::Closed`] or [`Failure::Failed`] if it cannot be written.
pub fn out(text: &str) -> Outcome {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        command().debug_assert();
    }

    #[test]
    fn thread_counts() {
        assert_eq!(parse_threads("4"), Ok(4));
        assert!(parse_threads("0").unwrap_err().contains("at least 1"));
        assert!(parse_threads("x").unwrap_err().contains("not a valid number"));
    }
}
