//! `caterva`: inspect, print, copy and check the arrays on disk (contiguous
//! frame files and sparse-frame directories) written by this library,
//! python-caterva or python-blosc2.
//!
//! Exit status: 0 success, 1 problems found in the data (or an operation
//! that failed part-way), 2 a usage error or a file that cannot be opened.

mod args;
mod copy;
mod info;
mod items;
mod print;
mod progress;
mod verify;

use std::process::ExitCode;

use args::{Opt, Parsed};

/// Why a command did not succeed; each kind has its exit status.
#[derive(Debug)]
pub enum Failure {
    /// The command line is wrong (exit 2, with a pointer to the help).
    Usage(String),
    /// An input or output cannot be opened or created (exit 2).
    Open(String),
    /// The data has problems, or an operation failed part-way (exit 1).
    Failed(String),
    /// Standard output was closed by its reader (`caterva cat x | head`): stop quietly (exit 0).
    Closed,
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) | Failure::Open(_) => 2,
            Failure::Failed(_) => 1,
            Failure::Closed => 0,
        }
    }
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

/// A subcommand: its name, usage line, summary, options and entry point.
pub struct Command {
    name: &'static str,
    usage: &'static str,
    summary: &'static str,
    details: &'static str,
    opts: &'static [Opt],
    run: fn(&Parsed) -> Outcome,
}

/// Options of every command that reads an array.
pub const THREADS: Opt = Opt::value("threads", "N", "threads to use (default: the number of CPUs)");
/// Turns the progress bar off.
pub const NO_PROGRESS: Opt = Opt::flag("no-progress", "never draw a progress bar");

const COMMANDS: &[Command] = &[info::COMMAND, print::CAT, print::SLICE, copy::COMMAND, verify::COMMAND];

const EXIT_STATUS: &str = "Exit status: 0 success, 1 problems found in the data (or an operation that failed\n\
part-way), 2 a usage error or a file that cannot be opened or created.";

fn main() -> ExitCode {
    let outcome = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().map_err(|a| Failure::Usage(format!("argument {a:?} is not valid UTF-8"))))
        .collect::<Result<Vec<String>, Failure>>()
        .and_then(|argv| dispatch(&argv));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            report(&f);
            ExitCode::from(f.exit_code())
        }
    }
}

/// Print a failure on stderr.
fn report(f: &Failure) {
    match f {
        Failure::Usage(m) | Failure::Open(m) | Failure::Failed(m) => eprintln!("caterva: {m}"),
        Failure::Closed => {}
    }
}

/// Run the command line `argv` (without the program name).
fn dispatch(argv: &[String]) -> Outcome {
    let Some(first) = argv.first() else {
        return Err(with_hint(Failure::Usage("no command given".into()), None));
    };
    match first.as_str() {
        "-h" | "--help" => print_help(),
        "-V" | "--version" => print_version(),
        "help" => match argv.get(1) {
            None => print_help(),
            Some(name) => print_command_help(find(name).map_err(|f| with_hint(f, None))?),
        },
        name => {
            let cmd = find(name).map_err(|f| with_hint(f, None))?;
            run_command(cmd, &argv[1..]).map_err(|f| with_hint(f, Some(cmd.name)))
        }
    }
}

/// Parse `args` for `cmd` and run it.
fn run_command(cmd: &Command, args: &[String]) -> Outcome {
    let parsed = args::parse(args, cmd.opts).map_err(Failure::Usage)?;
    if parsed.flag("help") {
        return print_command_help(cmd);
    }
    (cmd.run)(&parsed)
}

/// Prefix a usage error with its command and point at the right help.
fn with_hint(f: Failure, cmd: Option<&str>) -> Failure {
    match (f, cmd) {
        (Failure::Usage(m), Some(c)) => Failure::Usage(format!("{c}: {m}\nRun 'caterva {c} --help' for usage.")),
        (Failure::Usage(m), None) => Failure::Usage(format!("{m}\nRun 'caterva --help' for usage.")),
        (other, _) => other,
    }
}

fn find(name: &str) -> Result<&'static Command, Failure> {
    if name.starts_with('-') {
        return Err(Failure::Usage(format!("unknown option '{name}' (options follow the command)")));
    }
    COMMANDS.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        Failure::Usage(format!("unknown command '{name}' (commands: {})", names.join(", ")))
    })
}

fn print_version() -> Outcome {
    println!("caterva {} (caterva-rs, c-blosc2 {})", env!("CARGO_PKG_VERSION"), caterva::schunk::blosc2_version());
    Ok(())
}

fn print_help() -> Outcome {
    println!("caterva {}: inspect, print, copy and check caterva / Blosc2 N-d arrays\n", env!("CARGO_PKG_VERSION"));
    println!("Usage: caterva COMMAND [ARGS] [OPTIONS]\n\nCommands:");
    for c in COMMANDS {
        println!("  {:<8}{}", c.name, c.summary);
    }
    println!("\nPATH is a contiguous frame file or a sparse-frame directory, written by");
    println!("caterva-rs, python-caterva or python-blosc2.\n");
    println!("Run 'caterva COMMAND --help' for a command's options; 'caterva --version' for versions.\n");
    println!("{EXIT_STATUS}");
    Ok(())
}

fn print_command_help(c: &Command) -> Outcome {
    println!("Usage: caterva {}\n\n{}\n", c.usage, c.summary);
    if !c.details.is_empty() {
        println!("{}\n", c.details);
    }
    println!("Options:\n{}  -h, --help          this help\n\n{EXIT_STATUS}", args::describe(c.opts));
    Ok(())
}

/// A context with the thread count of `--threads` (default: every CPU).
///
/// # Errors
/// [`Failure::Usage`] for a bad thread count.
pub fn context(p: &Parsed, cparams: caterva::CParams) -> Result<caterva::Context, Failure> {
    let nthreads = match p.value("threads") {
        None => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        Some(v) => match args::number::<usize>(v, "--threads").map_err(Failure::Usage)? {
            0 => return Err(Failure::Usage("--threads must be at least 1".into())),
            n => n,
        },
    };
    caterva::Context::new(caterva::Config { cparams, nthreads, checksums: false })
        .map_err(|e| Failure::Usage(e.message()))
}

/// Open the array at `path` for reading.
///
/// # Errors
/// [`Failure::Open`] with the library's reason.
pub fn open(ctx: &caterva::Context, path: &str) -> Result<caterva::Array, Failure> {
    caterva::Array::open(ctx, path).map_err(|e| Failure::Open(format!("cannot open '{path}': {e}")))
}

/// The positional arguments, one per entry of `names` (for the message).
///
/// # Errors
/// [`Failure::Usage`] if the count differs.
pub fn positionals<'a>(p: &'a Parsed, names: &[&str]) -> Result<Vec<&'a str>, Failure> {
    let got = p.positional();
    if got.len() != names.len() {
        let want = names.join(" ");
        return Err(Failure::Usage(format!("expected {want}, got {} argument(s)", got.len())));
    }
    Ok(got.iter().map(String::as_str).collect())
}
