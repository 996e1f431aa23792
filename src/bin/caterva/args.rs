//! Hand-written argument parsing: `--name VALUE`, `--name=VALUE`, flags,
//! positional arguments, and `--` to end the options.

use std::str::FromStr;

/// An option a command accepts.
pub struct Opt {
    name: &'static str,
    /// The placeholder of its value (`N`, `a,b,c`), or `None` for a flag.
    value: Option<&'static str>,
    help: &'static str,
}

impl Opt {
    /// An option without a value.
    pub const fn flag(name: &'static str, help: &'static str) -> Opt {
        Opt { name, value: None, help }
    }

    /// An option with a value.
    pub const fn value(name: &'static str, placeholder: &'static str, help: &'static str) -> Opt {
        Opt { name, value: Some(placeholder), help }
    }
}

/// A parsed command line.
#[derive(Debug, Default)]
pub struct Parsed {
    positional: Vec<String>,
    values: Vec<(&'static str, String)>,
    flags: Vec<&'static str>,
}

impl Parsed {
    /// The arguments that are not options, in order.
    pub fn positional(&self) -> &[String] {
        &self.positional
    }

    /// The value given to option `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// Whether flag `name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(&name)
    }
}

/// Whether `arg` is an option rather than a value: it starts with `-` and is
/// not `-` alone nor a negative number or slice (`-1`, `-3:`).
fn is_option(arg: &str) -> bool {
    let mut chars = arg.chars();
    chars.next() == Some('-') && chars.next().is_some_and(|c| !c.is_ascii_digit() && c != ':' && c != ',')
}

/// Parse `args` against `opts` (`-h`/`--help` is always accepted).
///
/// # Errors
/// A message for an unknown or repeated option, or a missing value.
pub fn parse(args: &[String], opts: &[Opt]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            p.positional.extend(rest.by_ref().cloned());
            break;
        }
        if !is_option(arg) {
            p.positional.push(arg.clone());
            continue;
        }
        if arg == "-h" || arg == "--help" {
            p.flags.push("help");
            continue;
        }
        let (name, inline) = match arg.trim_start_matches('-').split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.trim_start_matches('-'), None),
        };
        let Some(opt) = opts.iter().find(|o| o.name == name && arg.starts_with("--")) else {
            return Err(format!("unknown option '{arg}'"));
        };
        if p.flag(opt.name) || p.value(opt.name).is_some() {
            return Err(format!("option --{} given twice", opt.name));
        }
        match (opt.value, inline) {
            (None, None) => p.flags.push(opt.name),
            (None, Some(_)) => return Err(format!("option --{} takes no value", opt.name)),
            (Some(_), Some(v)) => p.values.push((opt.name, v)),
            (Some(ph), None) => match rest.next() {
                Some(v) => p.values.push((opt.name, v.clone())),
                None => return Err(format!("option --{} needs a value ({ph})", opt.name)),
            },
        }
    }
    Ok(p)
}

/// The options section of a command's help.
pub fn describe(opts: &[Opt]) -> String {
    let mut out = String::new();
    for o in opts {
        let head = match o.value {
            Some(ph) => format!("--{} {ph}", o.name),
            None => format!("--{}", o.name),
        };
        out += &format!("  {head:<20}{}\n", o.help);
    }
    out
}

/// Parse a number given for `what`.
///
/// # Errors
/// A message naming `what`.
pub fn number<T: FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("{what}: '{s}' is not a valid number"))
}

/// Parse a comma-separated list of numbers given for `what`.
///
/// # Errors
/// A message naming `what`.
pub fn list<T: FromStr>(s: &str, what: &str) -> Result<Vec<T>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',').map(|x| number(x, what)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[Opt::value("chunks", "a,b", ""), Opt::flag("sparse", "")];

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn options_values_and_positionals() {
        let p = parse(&argv(&["a", "--chunks", "2,3", "-1:", "--sparse", "--", "--b"]), OPTS).unwrap();
        assert_eq!(p.positional(), ["a", "-1:", "--b"]);
        assert_eq!(p.value("chunks"), Some("2,3"));
        assert!(p.flag("sparse") && !p.flag("help"));
        let p = parse(&argv(&["--chunks=4", "-h"]), OPTS).unwrap();
        assert_eq!(p.value("chunks"), Some("4"));
        assert!(p.flag("help"));
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(parse(&argv(&["--nope"]), OPTS).unwrap_err().contains("unknown option '--nope'"));
        assert!(parse(&argv(&["-sparse"]), OPTS).unwrap_err().contains("unknown option"));
        assert!(parse(&argv(&["--chunks"]), OPTS).unwrap_err().contains("needs a value"));
        assert!(parse(&argv(&["--sparse=1"]), OPTS).unwrap_err().contains("takes no value"));
        assert!(parse(&argv(&["--sparse", "--sparse"]), OPTS).unwrap_err().contains("given twice"));
    }

    #[test]
    fn lists() {
        assert_eq!(list::<i32>("1, 2,3", "x").unwrap(), [1, 2, 3]);
        assert_eq!(list::<i32>("", "x").unwrap(), Vec::<i32>::new());
        assert!(list::<i32>("1,,2", "--chunks").unwrap_err().starts_with("--chunks"));
    }
}
