//! Storage options: settings of the remote storage under a URL prefix
//! (endpoint, region, credentials, anonymous access, retries, writers),
//! given by the caller rather than the environment.
//!
//! Options are set for a URL prefix ([`set`]: `s3://bucket/`,
//! `s3://bucket/dir/a.b2nd`, `https://host/`) and hold, in this process,
//! for every URL under it until set again; the longest prefix that
//! matches a URL wins, and what it leaves unset comes from the
//! environment (the AWS variables and shared files). A client is made per
//! server and settings, so two prefixes of one bucket may use two sets of
//! credentials.
//!
//! Names (those of zarr/fsspec's `storage_options`, or the `AWS_*`
//! variable names, in any case):
//!
//! | option | what | as |
//! |---|---|---|
//! | `endpoint_url` (`endpoint`) | S3-compatible server | `AWS_ENDPOINT_URL` |
//! | `region` (`region_name`) | region | `AWS_REGION` |
//! | `key` (`access_key_id`) | access key | `AWS_ACCESS_KEY_ID` |
//! | `secret` (`secret_access_key`) | secret key | `AWS_SECRET_ACCESS_KEY` |
//! | `token` (`session_token`) | session token | `AWS_SESSION_TOKEN` |
//! | `profile` | profile of the shared files | `AWS_PROFILE` |
//! | `anon` (`anonymous`) | unsigned requests (public buckets) | `AWS_SKIP_SIGNATURE` |
//! | `allow_http` | plain-HTTP endpoint | `AWS_ALLOW_HTTP` |
//! | `virtual_hosted_style` | `bucket.host` addressing | `AWS_VIRTUAL_HOSTED_STYLE_REQUEST` |
//! | `retries` | retries of a failed request (5) | |
//! | `retry_timeout` | seconds after the first try a retry may start (30) | |
//! | `timeout` | seconds a try may take (30) | |
//! | `deadline` | seconds a request may take, its tries and retries together (30) | |
//! | `writers` | `many` or `single` | `CATERVA_S3_WRITERS` |
//! | `cache` (`cache_storage`) | directory of a read cache shared by handles and processes (`off`: none) | `CATERVA_REMOTE_CACHE` |
//! | `cache_size` | the read cache's budget (bytes, `512M`, `2G`; 1 GiB) | `CATERVA_REMOTE_CACHE_SIZE` |
//! | `aws_*` | any other setting of the S3 client | `AWS_*` |
//! | `account_name`, `account_key`, `sas_token`, `use_emulator`, `azure_*` | Azure Blob Storage (`az://`) | `AZURE_*` |
//! | `service_account`, `service_account_key`, `google_*` | Google Cloud Storage (`gs://`) | `GOOGLE_*` |
//!
//! On `az://` and `gs://` URLs, `endpoint_url` and `anon` mean the
//! client's endpoint (`azure_storage_endpoint`, `google_base_url`) and
//! unsigned requests.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

#[cfg(feature = "remote")]
use std::sync::Arc;

#[cfg(feature = "remote")]
use super::read_cache::{self, ReadCache};
use crate::error::{Error, Result};

/// Settings of the remote storage under a URL prefix (see the module docs
/// of their names). Build with [`StorageOptions::set`] or parse from
/// `key=value;key=value` text ([`StorageOptions::parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageOptions {
    /// Canonical names (lowercase, as in the table) and values.
    values: BTreeMap<String, String>,
}

/// What one name means: an `AWS_*` variable, or a setting of our own.
fn canonical(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "endpoint_url" | "endpoint" | "aws_endpoint_url" | "aws_endpoint" => "AWS_ENDPOINT_URL",
        "region" | "region_name" | "aws_region" | "aws_default_region" => "AWS_REGION",
        "key" | "access_key_id" | "aws_access_key_id" => "AWS_ACCESS_KEY_ID",
        "secret" | "secret_access_key" | "aws_secret_access_key" => "AWS_SECRET_ACCESS_KEY",
        "token" | "session_token" | "aws_session_token" => "AWS_SESSION_TOKEN",
        "profile" | "aws_profile" => "AWS_PROFILE",
        "anon" | "anonymous" | "skip_signature" | "aws_skip_signature" => "AWS_SKIP_SIGNATURE",
        "allow_http" | "aws_allow_http" => "AWS_ALLOW_HTTP",
        "virtual_hosted_style" | "virtual_hosted_style_request" | "aws_virtual_hosted_style_request" => {
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"
        }
        "retries" | "max_retries" => "retries",
        "retry_timeout" => "retry_timeout",
        "timeout" => "timeout",
        "deadline" => "deadline",
        "writers" => "writers",
        "cache" | "cache_storage" | "cache_dir" => "cache",
        "cache_size" => "cache_size",
        // Azure (adlfs's names) and Google Cloud Storage (gcsfs's).
        "account_name" => "azure_storage_account_name",
        "account_key" => "azure_storage_account_key",
        "sas_token" => "azure_storage_sas_token",
        "use_emulator" => "azure_storage_use_emulator",
        "service_account" | "service_account_path" => "google_service_account",
        "service_account_key" => "google_service_account_key",
        _ => return None,
    })
}

impl StorageOptions {
    /// The cache the storage options (over the environment) ask for, if any.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a budget that is not a size;
    /// [`Error::Io`] for a directory that cannot be made.
    #[cfg(feature = "remote")]
    pub(crate) fn read_cache(&self) -> Result<Option<Arc<ReadCache>>> {
        let dir = match self.get("cache") {
            Some(d) => d.to_owned(),
            None => match std::env::var("CATERVA_REMOTE_CACHE") {
                Ok(d) if !d.trim().is_empty() => d.trim().to_owned(),
                _ => return Ok(None),
            },
        };
        if dir.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let budget = match self
            .get("cache_size")
            .map(str::to_owned)
            .or_else(|| std::env::var("CATERVA_REMOTE_CACHE_SIZE").ok().filter(|v| !v.trim().is_empty()))
        {
            Some(v) => read_cache::parse_budget(&v).ok_or_else(|| {
                Error::InvalidArgument(format!("remote cache size '{v}' is not a size (bytes, or 512M, 2G...)"))
            })?,
            None => read_cache::DEFAULT_BUDGET,
        };
        ReadCache::at(std::path::Path::new(&dir), budget).map(Some)
    }

    /// No options: everything from the environment.
    #[must_use]
    pub fn new() -> Self {
        StorageOptions::default()
    }

    /// These options with `name` set to `value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name no option has, or a value the
    /// option does not take (a number, a boolean, `many`/`single`).
    pub fn set(mut self, name: &str, value: &str) -> Result<Self> {
        let lower = name.trim().to_ascii_lowercase();
        let key = match canonical(&lower) {
            Some(k) => k.to_owned(),
            // Other settings of the S3 client, by their variable's name.
            None if lower.starts_with("aws_") && lower.len() > 4 => lower.to_ascii_uppercase(),
            // Settings of the Azure and GCS clients, by their names there.
            None if (lower.starts_with("azure_") && lower.len() > 6)
                || (lower.starts_with("google_") && lower.len() > 7) =>
            {
                lower.clone()
            }
            None => {
                return Err(Error::InvalidArgument(format!(
                    "'{name}' is not a storage option (endpoint_url, region, key, secret, token, profile, anon, \
                     allow_http, virtual_hosted_style, retries, retry_timeout, timeout, deadline, writers, cache, cache_size, account_name, \
                     account_key, sas_token, service_account, aws_*, azure_*, google_*)"
                )))
            }
        };
        let value = value.trim();
        let bad = |what: &str| Err(Error::InvalidArgument(format!("storage option {name}='{value}': {what}")));
        match key.as_str() {
            "AWS_SKIP_SIGNATURE"
            | "AWS_ALLOW_HTTP"
            | "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"
            | "azure_storage_use_emulator"
            | "azure_skip_signature"
            | "google_skip_signature" => {
                let v = match value.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" | "on" => "true",
                    "false" | "0" | "no" | "off" => "false",
                    _ => return bad("not true or false"),
                };
                self.values.insert(key, v.to_owned());
                return Ok(self);
            }
            "retries" if value.parse::<u16>().is_err() => return bad("not a count of retries (0 to 65535)"),
            "retry_timeout" | "timeout" | "deadline"
                if !value.parse::<f64>().is_ok_and(|s| s.is_finite() && s > 0.0) =>
            {
                return bad("not a positive number of seconds")
            }
            "writers" if !matches!(value, "many" | "single") => return bad("'many' or 'single'"),
            "cache" if value.is_empty() => return bad("not a directory (or 'off')"),
            #[cfg(feature = "remote")]
            "cache_size" if read_cache::parse_budget(value).is_none() => {
                return bad("not a size of at least 256K (bytes, or 512M, 2G...)")
            }
            _ => {}
        }
        self.values.insert(key, value.to_owned());
        Ok(self)
    }

    /// Options from `key=value` pairs separated by `;`, `,` or new lines
    /// (the C API's form): `endpoint_url=http://127.0.0.1:9000; anon=true`.
    ///
    /// # Errors
    /// As [`StorageOptions::set`]; [`Error::InvalidArgument`] for a pair without `=`.
    pub fn parse(text: &str) -> Result<Self> {
        let mut o = StorageOptions::new();
        for pair in text.split([';', ',', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| Error::InvalidArgument(format!("storage option '{pair}' is not a key=value pair")))?;
            o = o.set(k, v)?;
        }
        Ok(o)
    }

    /// The value of the option `name` (a canonical name: `AWS_REGION`, `retries`...).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The `AWS_*` settings among these options.
    pub(crate) fn aws(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().filter(|(k, _)| k.starts_with("AWS_")).map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The settings among these options whose names start with `prefix`
    /// (`azure_`, `google_`).
    pub(crate) fn starting(&self, prefix: &str) -> impl Iterator<Item = (&str, &str)> {
        let prefix = prefix.to_owned();
        self.values.iter().filter(move |(k, _)| k.starts_with(&prefix)).map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A number of seconds set as `name`.
    pub(crate) fn seconds(&self, name: &str) -> Option<std::time::Duration> {
        self.get(name).and_then(|v| v.parse::<f64>().ok()).map(std::time::Duration::from_secs_f64)
    }

    /// Whether no option is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The options set for URL prefixes in this process.
static SET: Mutex<Vec<(String, StorageOptions)>> = Mutex::new(Vec::new());

/// Use `options` (endpoint, region, credentials, anonymous reads, retries,
/// writers: see [`StorageOptions`]) for every URL under `prefix`
/// (`s3://bucket/`, `s3://bucket/dir/a.b2nd`, `https://host/`) in this
/// process, over the environment, until set again; the longest prefix
/// that matches a URL wins. Empty options remove those of `prefix`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a prefix that is not a URL (`scheme://...`).
pub fn set(prefix: &str, options: StorageOptions) -> Result<()> {
    if !prefix.split_once("://").is_some_and(|(s, rest)| !s.is_empty() && !rest.is_empty()) {
        return Err(Error::InvalidArgument(format!(
            "storage options are set for a URL prefix (s3://bucket/...), not '{prefix}'"
        )));
    }
    let mut set = SET.lock().unwrap_or_else(PoisonError::into_inner);
    set.retain(|(p, _)| p != prefix);
    if !options.is_empty() {
        set.push((prefix.to_owned(), options));
    }
    Ok(())
}

/// The options for `url`: those of the longest prefix set that it starts with.
pub(crate) fn for_url(url: &str) -> StorageOptions {
    let set = SET.lock().unwrap_or_else(PoisonError::into_inner);
    set.iter()
        .filter(|(p, _)| url.starts_with(p.as_str()))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, o)| o.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_zarr_and_of_aws_are_taken_and_checked() {
        let o = StorageOptions::parse("endpoint_url=http://h:9000; anon=yes, region_name=eu\nAWS_REQUEST_PAYER=true")
            .unwrap();
        assert_eq!(o.get("AWS_ENDPOINT_URL"), Some("http://h:9000"));
        assert_eq!(o.get("AWS_SKIP_SIGNATURE"), Some("true"));
        assert_eq!(o.get("AWS_REGION"), Some("eu"));
        assert_eq!(o.get("AWS_REQUEST_PAYER"), Some("true"));
        for bad in ["colour=red", "anon=maybe", "retries=-1", "timeout=0", "writers=two", "novalue"] {
            let e = StorageOptions::parse(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{bad}: {e}");
        }
        let o = StorageOptions::new().set("Retries", "2").unwrap().set("retry_timeout", "1.5").unwrap();
        assert_eq!(o.get("retries"), Some("2"));
        assert_eq!(o.seconds("retry_timeout"), Some(std::time::Duration::from_millis(1500)));
    }

    #[test]
    fn the_longest_prefix_set_wins() {
        let id = std::process::id();
        let (a, b) = (format!("s3://opts-{id}/"), format!("s3://opts-{id}/dir/"));
        set(&a, StorageOptions::parse("region=one").unwrap()).unwrap();
        set(&b, StorageOptions::parse("region=two").unwrap()).unwrap();
        assert_eq!(for_url(&format!("{a}x.b2nd")).get("AWS_REGION"), Some("one"));
        assert_eq!(for_url(&format!("{b}x.b2nd")).get("AWS_REGION"), Some("two"));
        assert!(for_url("s3://elsewhere/x").is_empty());
        set(&b, StorageOptions::new()).unwrap();
        assert_eq!(for_url(&format!("{b}x.b2nd")).get("AWS_REGION"), Some("one"));
        assert!(set("/local/path", StorageOptions::new()).is_err());
        set(&a, StorageOptions::new()).unwrap();
    }

    #[cfg(feature = "remote")]
    #[test]
    fn settings_come_from_options_then_the_environment() {
        let d = std::env::temp_dir().join(format!("caterva-cache-options-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let o = StorageOptions::parse(&format!("cache={}; cache_size=2M", d.display())).unwrap();
        let c = o.read_cache().unwrap().unwrap();
        assert_eq!(c.budget(), 2 << 20);
        assert!(d.is_dir());
        assert!(StorageOptions::parse("cache=off").unwrap().read_cache().unwrap().is_none());
        assert!(StorageOptions::parse("cache_size=lots").is_err());
        assert!(StorageOptions::parse("cache_size=1K").is_err(), "less than a page");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
