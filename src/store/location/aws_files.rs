//! The AWS shared config and credentials files, read as the AWS CLI and
//! SDKs read them, for the settings `object_store` takes from the
//! environment only: the profile `AWS_PROFILE` names (`default` without
//! it), from `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`) and
//! `~/.aws/config` (`AWS_CONFIG_FILE`).
//!
//! - The credentials file's section is `[name]`, the config file's
//!   `[profile name]` (or `[default]`).
//! - Read: `aws_access_key_id`, `aws_secret_access_key`,
//!   `aws_session_token` (the credentials file first, then the config file),
//!   `region` and `endpoint_url`, also as the `s3` sub-setting
//!   (`s3 =` followed by indented `endpoint_url = ...`), which wins.
//! - Environment variables win over both files; the key pair is taken
//!   whole from one place, never mixed.
//!
//! The files are INI files of `key = value` lines, `#` and `;` comments;
//! nothing else of them (SSO, assumed roles, `credential_process`) is
//! read: those users set the environment (e.g. `aws configure
//! export-credentials --format env`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The settings in the INI text `text` of the first of the sections
/// `sections` that is there. Sub-settings (an empty value
/// followed by indented lines) are spelt `parent.key`.
fn section(text: &str, sections: &[String]) -> Option<HashMap<String, String>> {
    let mut found: Option<(usize, HashMap<String, String>)> = None;
    let mut current: Option<usize> = None;
    let mut parent: Option<String> = None;
    for raw in text.lines() {
        let indented = raw.starts_with([' ', '\t']);
        let line = raw.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            current = sections.iter().position(|s| *s == name);
            parent = None;
            if let Some(rank) = current {
                if found.as_ref().map_or(true, |(r, _)| rank < *r) {
                    found = Some((rank, HashMap::new()));
                }
            }
            continue;
        }
        let (Some(rank), Some((key, value))) = (current, line.split_once('=')) else { continue };
        let Some((_, values)) = found.as_mut().filter(|(r, _)| *r == rank) else { continue };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim().to_owned());
        if indented {
            if let Some(p) = &parent {
                values.insert(format!("{p}.{key}"), value);
            }
        } else if value.is_empty() {
            parent = Some(key);
        } else {
            parent = None;
            values.insert(key, value);
        }
    }
    found.map(|(_, v)| v)
}

fn home_file(var: &str, env: &dyn Fn(&str) -> Option<String>, rel: &str) -> Option<PathBuf> {
    match env(var) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(rel)),
    }
}

/// The S3 settings (as `object_store`'s `AWS_*` environment keys) that
/// the shared files give and the environment `env` does not.
pub(super) fn settings(env: &dyn Fn(&str) -> Option<String>) -> Vec<(&'static str, String)> {
    let profile = env("AWS_PROFILE").filter(|p| !p.is_empty()).unwrap_or_else(|| "default".to_owned());
    let read = |p: Option<PathBuf>| p.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let creds = section(
        &read(home_file("AWS_SHARED_CREDENTIALS_FILE", env, ".aws/credentials")),
        std::slice::from_ref(&profile),
    )
    .unwrap_or_default();
    let config_sections = if profile == "default" {
        vec!["default".to_owned(), "profile default".to_owned()]
    } else {
        vec![format!("profile {profile}")]
    };
    let config = section(&read(home_file("AWS_CONFIG_FILE", env, ".aws/config")), &config_sections).unwrap_or_default();
    let set = |var: &str| env(var).is_some_and(|v| !v.is_empty());
    let mut out = Vec::new();
    if !set("AWS_ACCESS_KEY_ID") && !set("AWS_SECRET_ACCESS_KEY") {
        let pair = [&creds, &config].into_iter().find(|s| s.contains_key("aws_access_key_id"));
        if let Some(s) = pair {
            for (key, var) in [
                ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
                ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
                ("aws_session_token", "AWS_SESSION_TOKEN"),
            ] {
                if let Some(v) = s.get(key) {
                    out.push((var, v.clone()));
                }
            }
        }
    }
    if !set("AWS_REGION") && !set("AWS_DEFAULT_REGION") {
        if let Some(r) = config.get("region") {
            out.push(("AWS_REGION", r.clone()));
        }
    }
    if !set("AWS_ENDPOINT_URL") && !set("AWS_ENDPOINT") {
        if let Some(e) = config.get("s3.endpoint_url").or_else(|| config.get("endpoint_url")) {
            out.push(("AWS_ENDPOINT_URL", e.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::settings;

    #[test]
    fn profiles_come_from_the_shared_files_and_the_environment_wins() {
        let dir = std::env::temp_dir().join(format!("caterva-aws-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let creds = dir.join("credentials");
        let config = dir.join("config");
        std::fs::write(
            &creds,
            "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = secretdefault\n\n\
             [work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=secretwork\naws_session_token = tok\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[default]\nregion = eu-west-3\nendpoint_url = http://127.0.0.1:9000\n\
             [profile work]\nregion = us-west-2\ns3 =\n  endpoint_url = http://127.0.0.1:9999\n  addressing_style = path\n\
             [profile keys-in-config]\naws_access_key_id = AKIDCONF\naws_secret_access_key = secretconf\n",
        )
        .unwrap();
        let run = |vars: &[(&str, &str)]| {
            let mut env: HashMap<String, String> =
                vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            env.insert("AWS_SHARED_CREDENTIALS_FILE".into(), creds.to_string_lossy().into_owned());
            env.insert("AWS_CONFIG_FILE".into(), config.to_string_lossy().into_owned());
            let got: HashMap<&str, String> = settings(&|k| env.get(k).cloned()).into_iter().collect();
            got
        };
        let d = run(&[]);
        assert_eq!(d["AWS_ACCESS_KEY_ID"], "AKIDDEFAULT");
        assert_eq!(d["AWS_SECRET_ACCESS_KEY"], "secretdefault");
        assert_eq!(d["AWS_REGION"], "eu-west-3");
        assert_eq!(d["AWS_ENDPOINT_URL"], "http://127.0.0.1:9000");
        assert!(!d.contains_key("AWS_SESSION_TOKEN"));
        let w = run(&[("AWS_PROFILE", "work")]);
        assert_eq!(w["AWS_ACCESS_KEY_ID"], "AKIDWORK");
        assert_eq!(w["AWS_SESSION_TOKEN"], "tok");
        assert_eq!(w["AWS_REGION"], "us-west-2");
        assert_eq!(w["AWS_ENDPOINT_URL"], "http://127.0.0.1:9999", "the s3 sub-setting");
        let c = run(&[("AWS_PROFILE", "keys-in-config")]);
        assert_eq!(c["AWS_ACCESS_KEY_ID"], "AKIDCONF");
        assert!(!c.contains_key("AWS_REGION"));
        // The environment wins, and a key pair is never mixed from two places.
        let e = run(&[("AWS_ACCESS_KEY_ID", "AKIDENV"), ("AWS_REGION", "ap-south-1")]);
        assert!(!e.contains_key("AWS_ACCESS_KEY_ID") && !e.contains_key("AWS_SECRET_ACCESS_KEY"));
        assert!(!e.contains_key("AWS_REGION"));
        assert_eq!(e["AWS_ENDPOINT_URL"], "http://127.0.0.1:9000");
        // A profile that is nowhere gives nothing; so do missing files.
        assert!(run(&[("AWS_PROFILE", "nobody")]).is_empty());
        let none: HashMap<&str, String> =
            settings(&|k| (k == "HOME").then(|| dir.join("no-such-home").to_string_lossy().into_owned()))
                .into_iter()
                .collect();
        assert!(none.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
