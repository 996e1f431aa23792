//! Objects on S3-compatible object stores (`s3://bucket/key`) and web
//! servers (`http://`, `https://`, read-only), through the `object_store`
//! crate (its S3 and HTTP clients, their retries with backoff and their
//! timeouts), as a [`Location`].
//!
//! - An array's URL names its key; the location is everything before its
//!   last segment (`s3://bucket/dir/` for `s3://bucket/dir/a.b2nd`).
//! - S3 endpoint, region and credentials come from the standard AWS
//!   environment variables, read as `object_store`'s `from_env` reads them
//!   (`AWS_ENDPOINT_URL`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
//!   `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//!   `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint...). A plain `http://`
//!   server is always allowed.
//! - An opened object is one version: a `HEAD` gives its length and entity
//!   tag, and every range read is conditioned on that tag (`If-Match`), so a
//!   replaced object fails the read rather than mixing two versions.
//! - [`Object::read_ranges`] coalesces ranges less than [`COALESCE`] apart
//!   and sends the requests at once, at most [`IN_FLIGHT`] at a time.
//! - Conditional puts are S3's `If-None-Match: *` and `If-Match: <tag>`.
//!   Web servers are read-only: their puts and removals fail with
//!   [`io::ErrorKind::PermissionDenied`].
//! - The requests run on a small runtime of this library's own, started at
//!   the first remote request (a forked child starts its own); the calling
//!   thread waits for them, whatever runtime it may itself run in.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::ops::Range as Span;
use std::sync::{Arc, Mutex, OnceLock};

use futures::stream::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use super::options::{self, StorageOptions};
use super::read_cache::{ReadCache, Scope, PAGE};
use super::{check_name, Condition, Entry, Generation, Kind, Location, Object, Protocol, PutError, Range, Stamp};
use crate::fork::PerProcess;

/// Ranges closer than this are fetched as one request. The requests of a
/// read are sent at once, so a range more costs a request, not a round
/// trip: only small gaps are worth fetching (32 KiB, two or three
/// compressed blocks of 16 KiB; a gap of 256 KiB made a box read fetch
/// three times the bytes of sharded zarr's).
pub(crate) const COALESCE: u64 = 32 << 10;

/// Requests of one [`Object::read_ranges`] call in flight at once, at most.
pub(crate) const IN_FLIGHT: usize = 16;

/// Retries of a failed request (5xx answers, dropped connections,
/// timeouts), with exponential backoff, for at most 30 s in all: long
/// enough for a server restart, short enough that a dead one is reported.
fn retry() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 5,
        retry_timeout: std::time::Duration::from_secs(30),
        ..object_store::RetryConfig::default()
    }
}

/// The most one request may take, its tries and retries together (the
/// storage option `deadline` changes it): a server that accepts a
/// connection and never answers is reported after it, whatever the retry
/// settings. An operation that makes requests one after another (an open:
/// the frame's first bytes, then its index) takes at most this per request.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// The deadline of one request, as the storage option `deadline` sets it.
fn deadline(options: &StorageOptions) -> std::time::Duration {
    options.seconds("deadline").unwrap_or(DEADLINE)
}

/// `request` given [`deadline`] at most: past it, an error naming it (an
/// I/O error of kind `TimedOut` through [`io_error`]).
async fn within<T>(
    deadline: std::time::Duration,
    request: impl std::future::Future<Output = object_store::Result<T>>,
) -> object_store::Result<T> {
    match tokio::time::timeout(deadline, request).await {
        Ok(r) => r,
        Err(_) => Err(object_store::Error::Generic {
            store: DEADLINE_PASSED,
            source: format!(
                "no answer within {} s, the deadline of one request with its retries (storage option 'deadline')",
                deadline.as_secs_f64()
            )
            .into(),
        }),
    }
}

/// The `store` of [`within`]'s error.
const DEADLINE_PASSED: &str = "deadline";

/// [`retry`], and a try's time limit (30 s), as the storage options
/// `retries`, `retry_timeout` and `timeout` change them.
fn retry_and_timeout(options: &StorageOptions) -> (object_store::RetryConfig, std::time::Duration) {
    let mut r = retry();
    if let Some(n) = options.get("retries").and_then(|v| v.parse().ok()) {
        r.max_retries = n;
    }
    if let Some(t) = options.seconds("retry_timeout") {
        r.retry_timeout = t;
    }
    (r, options.seconds("timeout").unwrap_or(std::time::Duration::from_secs(30)))
}

/// The name of the runtime's threads.
const THREAD_NAME: &str = "caterva-remote";

/// The runtime remote requests run on (two worker threads).
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    fn build() -> io::Result<tokio::runtime::Runtime> {
        quiet_panics();
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name(THREAD_NAME).enable_all().build()
    }
    static RT: OnceLock<PerProcess<tokio::runtime::Runtime>> = OnceLock::new();
    if let Some(rt) = RT.get() {
        return rt.try_get(build);
    }
    let made = build()?;
    RT.get_or_init(|| PerProcess::new(made)).try_get(build)
}

/// A panic on the runtime's threads (in the client: object_store panicked on
/// URLs of 64 KiB) is the waiting call's error ([`wait`]), never text on the
/// host program's stderr: the process's panic hook, kept for every other
/// thread, is not called for them. Set once, before the runtime starts.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let host = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some(THREAD_NAME) {
                host(info);
            }
        }));
    });
}

/// Run `fut` on the [`runtime`] and wait for it here.
fn wait<T: Send + 'static>(fut: impl std::future::Future<Output = T> + Send + 'static) -> io::Result<T> {
    use futures::FutureExt;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        // A panic in the client is this call's error, not the runtime thread's end.
        let _ = tx.send(std::panic::AssertUnwindSafe(fut).catch_unwind().await);
    });
    match rx.recv() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(panic)) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Err(io::Error::other(format!("the remote client failed: {why}")))
        }
        Err(_) => Err(io::Error::other("the remote request was dropped")),
    }
}

/// An `object_store` error as an I/O error of the kind callers test.
fn io_error(e: object_store::Error) -> io::Error {
    use object_store::Error as E;
    let kind = match &e {
        E::Generic { store: DEADLINE_PASSED, source } => {
            return io::Error::new(io::ErrorKind::TimedOut, source.to_string())
        }
        E::NotFound { .. } => io::ErrorKind::NotFound,
        E::Precondition { .. } | E::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
        E::NotSupported { .. } | E::NotImplemented { .. } => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    let mut text = e.to_string();
    if kind == io::ErrorKind::Other {
        // The causes object_store's message leaves out, which say why a
        // request could not be sent: a refused connection, a failed TLS
        // handshake, an untrusted certificate.
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            let said = c.to_string();
            if !text.contains(&said) {
                text = format!("{text}: {said}");
            }
            cause = c.source();
        }
    }
    io::Error::new(kind, text)
}

/// A bucket's prefix or a web server's directory.
pub(crate) struct Remote {
    store: Arc<dyn ObjectStore>,
    /// The path of the location in the store, without slashes at its ends
    /// (`""`: the top).
    root: String,
    /// The URL of the location, ending with `/`.
    base: String,
    /// Whether objects can be written (not on web servers).
    writable: bool,
    /// The server and bucket, as [`Location::server`] spells them.
    server: String,
    /// The [`deadline`] of each request.
    deadline: std::time::Duration,
    /// The read cache on this machine, if the options ask for one.
    cache: Option<Arc<ReadCache>>,
    /// The S3 client, which signs URLs ([`Location::put_cut_short`]).
    signer: Option<Arc<object_store::aws::AmazonS3>>,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote").field("base", &self.base).field("writable", &self.writable).finish()
    }
}

/// The location and key a `s3://`, `http://` or `https://` URL names.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] for a URL with no key, or one the
/// client refuses (a malformed host, S3 settings that do not hold).
pub(crate) fn locate(url: &str) -> io::Result<(Arc<Remote>, String)> {
    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, format!("'{url}': {why}"));
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL".into()))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.trim_end_matches('/');
    let (root, key) = match path.rsplit_once('/') {
        Some((root, key)) => (root, key),
        None => ("", path),
    };
    if authority.is_empty() || key.is_empty() {
        return Err(bad("names no bucket or server and object".into()));
    }
    if !root.is_empty() {
        check_name(root)?;
    }
    check_name(key)?;
    // Object keys (S3, Azure, GCS) are at most 1,024 bytes; web servers
    // refuse request lines of more than a few KiB (and the HTTP client
    // cannot send 64 KiB).
    let keyed = !matches!(scheme, "http" | "https");
    let most = if keyed { S3_KEY_MAX } else { URL_MAX };
    let spelt = if keyed { path.len() } else { url.len() };
    if spelt > most {
        let what = if keyed { "its object key" } else { "it" };
        return Err(bad(format!(
            "{what} is {spelt} bytes long; at most {most} are taken (room kept for the names under an array)"
        )));
    }
    if authority.chars().any(|c| c.is_control() || c.is_whitespace() || "\\\"<>^`{|}".contains(c)) {
        return Err(bad(format!("'{authority}' is not a bucket or server name")));
    }
    let options = options::for_url(url);
    let mut signer: Option<Arc<object_store::aws::AmazonS3>> = None;
    let (store, writable, server): (Arc<dyn ObjectStore>, bool, String) = match scheme {
        "s3" => {
            // The environment, with the storage options set for this URL over it.
            let mut env: HashMap<String, String> = std::env::vars().collect();
            if options.aws().any(|(k, _)| k == "AWS_ACCESS_KEY_ID") {
                // A key pair is never mixed from two places.
                env.remove("AWS_SECRET_ACCESS_KEY");
                env.remove("AWS_SESSION_TOKEN");
            }
            env.extend(options.aws().map(|(k, v)| (k.to_owned(), v.to_owned())));
            let mut vars = s3_settings(&env, authority).map_err(bad)?;
            let endpoint = vars
                .iter()
                .find(|(k, v)| (k == "AWS_ENDPOINT_URL" || k == "AWS_ENDPOINT") && !v.is_empty())
                .map(|(_, v)| v.clone());
            if let Some(e) = &endpoint {
                check_endpoint(e).map_err(bad)?;
                // An endpoint given as plain HTTP is meant (as the AWS CLI takes it).
                if e.starts_with("http://") && !vars.iter().any(|(k, _)| k == "AWS_ALLOW_HTTP") {
                    vars.push(("AWS_ALLOW_HTTP".into(), "true".into()));
                    vars.sort();
                }
            }
            let server = format!("bucket '{authority}' at {}", endpoint.as_deref().unwrap_or("AWS S3"));
            let key = format!("s3://{authority}\n{vars:?}\n{options:?}");
            let s3: Arc<object_store::aws::AmazonS3> =
                client(key, || Ok(Arc::new(build_s3(&vars, authority, &options).map_err(|e| bad(e.to_string()))?)))?;
            signer = Some(s3.clone());
            (s3, true, server)
        }
        "http" | "https" => client(format!("{scheme}://{authority}\n{options:?}"), || {
            let (retry, timeout) = retry_and_timeout(&options);
            let client_options = object_store::ClientOptions::new()
                .with_allow_http(true)
                .with_connect_timeout(std::time::Duration::from_secs(5))
                .with_timeout(timeout);
            let http = object_store::http::HttpBuilder::new()
                .with_url(format!("{scheme}://{authority}"))
                .with_client_options(client_options)
                .with_retry(retry)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            Ok(Arc::new(http) as Arc<dyn ObjectStore>)
        })
        .map(|http| (http, false, format!("{scheme}://{authority}")))?,
        "az" | "azure" | "gs" | "gcs" => {
            let azure = matches!(scheme, "az" | "azure");
            let (store, server) = cloud(azure, authority, &options).map_err(bad)?;
            (store, true, server)
        }
        _ => return Err(bad(format!("no remote backend serves '{scheme}://'"))),
    };
    let base =
        if root.is_empty() { format!("{scheme}://{authority}/") } else { format!("{scheme}://{authority}/{root}/") };
    let cache = options.read_cache().map_err(|e| bad(e.to_string()))?;
    let remote =
        Remote { store, root: root.to_owned(), base, writable, server, deadline: deadline(&options), cache, signer };
    Ok((Arc::new(remote), key.to_owned()))
}

/// The longest S3 object key of an array taken: S3's limit (1,024 bytes)
/// less room for the names under a sparse array (`/00000000.chunk`) and
/// its lease (`.caterva-lease`).
const S3_KEY_MAX: usize = 1024 - 32;

/// The longest `http(s)://` URL of an array taken (web servers commonly
/// refuse request lines past 8 KiB).
const URL_MAX: usize = 8 << 10;

/// Refuse an S3 endpoint setting that is not an `http(s)://` URL of a
/// host (the client would fail later, or panic, with no word of why).
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let why = match url::Url::parse(endpoint) {
        Ok(u) if !matches!(u.scheme(), "http" | "https") => "its scheme is not http or https".to_owned(),
        Ok(u) if u.host_str().map_or(true, str::is_empty) => "it names no host".to_owned(),
        Ok(u) if u.query().is_some() || u.fragment().is_some() => "it has a query or a fragment".to_owned(),
        Ok(_) => return Ok(()),
        Err(e) => e.to_string(),
    };
    Err(format!("the S3 endpoint '{endpoint}' (AWS_ENDPOINT_URL, or endpoint_url in ~/.aws/config) is not an http(s) URL: {why}"))
}

/// A client of Azure Blob Storage's container (`azure`) or Google Cloud
/// Storage's bucket `name`: the environment's settings as `object_store`'s
/// `from_env` reads them (`AZURE_*`, `GOOGLE_*`), the storage options'
/// over them (`endpoint_url` and `anon` spelt for each), made once per
/// process and settings; and the server's name.
fn cloud(azure: bool, name: &str, options: &StorageOptions) -> Result<(Arc<dyn ObjectStore>, String), String> {
    let prefix = if azure { "azure_" } else { "google_" };
    let mut settings: Vec<(String, String)> =
        options.starting(prefix).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    let (endpoint_key, unsigned_key) = if azure {
        ("azure_storage_endpoint", "azure_skip_signature")
    } else {
        ("google_base_url", "google_skip_signature")
    };
    if let Some(e) = options.get("AWS_ENDPOINT_URL") {
        check_endpoint(e)?;
        settings.push((endpoint_key.to_owned(), e.to_owned()));
    }
    if let Some(v) = options.get("AWS_SKIP_SIGNATURE") {
        settings.push((unsigned_key.to_owned(), v.to_owned()));
    }
    let env: Vec<(String, String)> =
        std::env::vars().filter(|(k, _)| k.starts_with(if azure { "AZURE_" } else { "GOOGLE_" })).collect();
    let key = format!("{}://{name}\n{env:?}\n{settings:?}\n{options:?}", if azure { "az" } else { "gs" });
    let (retry, timeout) = retry_and_timeout(options);
    let client_options = object_store::ClientOptions::new().with_timeout(timeout).with_allow_http(true);
    let store = client(key, || {
        let built: object_store::Result<Arc<dyn ObjectStore>> = if azure {
            let mut b = object_store::azure::MicrosoftAzureBuilder::from_env();
            for (k, v) in &settings {
                let k = k
                    .parse()
                    .map_err(|e: object_store::Error| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                b = b.with_config(k, v);
            }
            b.with_container_name(name)
                .with_retry(retry)
                .with_client_options(client_options)
                .build()
                .map(|s| Arc::new(s) as _)
        } else {
            let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env();
            for (k, v) in &settings {
                let k = k
                    .parse()
                    .map_err(|e: object_store::Error| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                b = b.with_config(k, v);
            }
            b.with_bucket_name(name)
                .with_retry(retry)
                .with_client_options(client_options)
                .build()
                .map(|s| Arc::new(s) as _)
        };
        built.map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
    })
    .map_err(|e| e.to_string())?;
    let what = if azure { "Azure container" } else { "GCS bucket" };
    let at = settings.iter().find(|(k, _)| k == endpoint_key).map_or_else(String::new, |(_, v)| format!(" at {v}"));
    Ok((store, format!("{what} '{name}'{at}")))
}

/// The S3 client's settings (`AWS_*` names and values, sorted) from the
/// environment variables `env` and the AWS shared files
/// ([`super::aws_files`]): the environment's `AWS_*` variables as
/// `object_store`'s `from_env` reads them, over the files' profile.
///
/// # Errors
/// Why no request could be signed: no credentials in either, none to be
/// had from a web identity or a container, and the instance metadata
/// service ruled out (`AWS_EC2_METADATA_DISABLED=true`; without it the
/// client asks that service, as on EC2). `AWS_SKIP_SIGNATURE=true` asks
/// for unsigned requests (public buckets).
fn s3_settings(env: &HashMap<String, String>, bucket: &str) -> Result<Vec<(String, String)>, String> {
    // The files' settings, then the environment's over them.
    let mut vars: Vec<(String, String)> =
        super::aws_files::settings(&|k| env.get(k).cloned()).into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    vars.extend(env.iter().filter(|(k, _)| k.starts_with("AWS_")).map(|(k, v)| (k.clone(), v.clone())));
    let set = |var: &str| vars.iter().any(|(k, v)| k == var && !v.is_empty());
    let yes = |var: &str| vars.iter().any(|(k, v)| k == var && v.eq_ignore_ascii_case("true"));
    let signed_somehow = set("AWS_ACCESS_KEY_ID")
        || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || yes("AWS_SKIP_SIGNATURE");
    if !signed_somehow && yes("AWS_EC2_METADATA_DISABLED") {
        return Err(format!(
            "no AWS credentials to reach bucket '{bucket}': set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
             a profile in ~/.aws/credentials (AWS_PROFILE), or AWS_SKIP_SIGNATURE=true for a public bucket"
        ));
    }
    // (Sorted: the client cache's key.)
    let mut settled: Vec<(String, String)> = Vec::with_capacity(vars.len());
    for (k, v) in vars {
        settled.retain(|(had, _)| *had != k);
        settled.push((k, v));
    }
    // Unsigned requests (a public bucket) carry no credentials at all.
    if settled.iter().any(|(k, v)| k == "AWS_SKIP_SIGNATURE" && v.eq_ignore_ascii_case("true")) {
        settled.retain(|(k, _)| {
            !matches!(k.as_str(), "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" | "AWS_SESSION_TOKEN")
        });
    }
    settled.sort();
    Ok(settled)
}

/// An S3 client of `bucket` with `settings` ([`s3_settings`]).
fn build_s3(
    settings: &[(String, String)],
    bucket: &str,
    options: &StorageOptions,
) -> object_store::Result<object_store::aws::AmazonS3> {
    let mut builder = AmazonS3Builder::new();
    for (k, v) in settings {
        if let Ok(key) = k.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(key, v);
        }
    }
    let (retry, timeout) = retry_and_timeout(options);
    let client = object_store::ClientOptions::new().with_timeout(timeout);
    // (The client options' HTTP setting follows the settings' AWS_ALLOW_HTTP.)
    let client = if settings.iter().any(|(k, v)| k == "AWS_ALLOW_HTTP" && v.eq_ignore_ascii_case("true")) {
        client.with_allow_http(true)
    } else {
        client
    };
    builder.with_bucket_name(bucket).with_retry(retry).with_client_options(client).build()
}

/// The client `key` names (its scheme, server or bucket and settings),
/// made by `build` at its first use in this process: a client keeps its
/// connections, and making one costs more than a request (its TLS roots
/// are loaded). A forked child makes its own.
fn client<C: ?Sized + Send + Sync + 'static>(
    key: String,
    build: impl FnOnce() -> io::Result<Arc<C>>,
) -> io::Result<Arc<C>> {
    type Clients = std::sync::Mutex<HashMap<String, Box<dyn std::any::Any + Send + Sync>>>;
    static CLIENTS: OnceLock<PerProcess<Clients>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(|| PerProcess::new(Clients::default())).get(Clients::default);
    let mut clients = clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(c) = clients.get(&key).and_then(|c| c.downcast_ref::<Arc<C>>()) {
        return Ok(c.clone());
    }
    tls_provider();
    let c = build()?;
    clients.insert(key, Box::new(c.clone()));
    Ok(c)
}

/// Makes *ring* rustls's process-wide cryptography provider, unless the host
/// program installed one first (then its own serves). reqwest, built without
/// a provider of its own (Cargo.toml: aws-lc-rs, its default, is not
/// compiled), takes that default when a client is made, and panics without
/// one; so every client is made after this.
fn tls_provider() {
    // (An error only says that a provider was already installed.)
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Remote {
    /// `name`'s path in the store.
    fn path(&self, name: &str) -> io::Result<ObjectPath> {
        check_name(name)?;
        let full = if self.root.is_empty() { name.to_owned() } else { format!("{}/{name}", self.root) };
        ObjectPath::parse(&full).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
    }

    /// A listing's name relative to the location.
    fn relative(&self, p: &ObjectPath) -> String {
        let s = p.as_ref();
        match s.strip_prefix(&self.root) {
            Some(rest) if !self.root.is_empty() => rest.trim_start_matches('/').to_owned(),
            _ => s.to_owned(),
        }
    }

    /// The version `meta` describes of the object at `path`.
    fn version(&self, path: ObjectPath, meta: object_store::ObjectMeta) -> RemoteObject {
        let generation = generation_of(&meta);
        let name = self.relative(&path);
        let stamp = Stamp::new(&name, generation.clone(), meta.e_tag.as_deref(), modified_ns(&meta), meta.size);
        let scope = self.cache.as_ref().map(|c| c.scope(&self.url(&name), &stamp));
        RemoteObject {
            store: self.store.clone(),
            deadline: self.deadline,
            path,
            len: meta.size,
            etag: meta.e_tag,
            generation,
            stamp: Some(stamp),
            named_by: None,
            scope,
        }
    }

    fn read_only(&self) -> PutError {
        PutError::Io(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is read-only (a web server)", self.base),
        ))
    }
}

/// When `meta`'s version was made, in ns since the epoch.
fn modified_ns(meta: &object_store::ObjectMeta) -> i128 {
    i128::from(meta.last_modified.timestamp()) * 1_000_000_000 + i128::from(meta.last_modified.timestamp_subsec_nanos())
}

/// A version's generation: its entity tag, else its modification time and size.
fn generation_of(meta: &object_store::ObjectMeta) -> Generation {
    match &meta.e_tag {
        Some(t) => Generation::Tag(t.clone()),
        None => Generation::Tag(format!("{}-{}", meta.last_modified.timestamp_nanos_opt().unwrap_or(0), meta.size)),
    }
}

impl Location for Remote {
    fn url(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    fn protocol(&self) -> Protocol {
        Protocol::Versioned
    }

    fn server(&self) -> String {
        self.server.clone()
    }

    fn read_only(&self) -> bool {
        !self.writable
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Object>> {
        let path = self.path(name)?;
        let store = self.store.clone();
        let p = path.clone();
        let d = self.deadline;
        let meta = wait(async move { within(d, store.head(&p)).await })?.map_err(io_error)?;
        let object = self.version(path, meta);
        Ok(Arc::new(object))
    }

    fn open_reading(&self, name: &str, n: usize) -> io::Result<(Arc<dyn Object>, Vec<u8>)> {
        if n == 0 {
            return self.open(name).map(|o| (o, Vec::new()));
        }
        let path = self.path(name)?;
        let (store, p) = (self.store.clone(), path.clone());
        let options = GetOptions { range: Some(GetRange::Bounded(0..n as u64)), ..GetOptions::default() };
        let d = self.deadline;
        let got = wait(async move {
            within(d, async {
                let got = store.get_opts(&p, options).await?;
                let meta = got.meta.clone();
                Ok((meta, got.bytes().await?))
            })
            .await
        })?;
        let (meta, bytes) = match got {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(io::Error::new(io::ErrorKind::NotFound, format!("no object '{}'", self.url(name))));
            }
            // (An empty object has no first byte to range over: a HEAD tells.)
            Err(e) => match self.open(name) {
                Ok(o) if o.len() == 0 => return Ok((o, Vec::new())),
                _ => return Err(io_error(e)),
            },
        };
        let object = self.version(path, meta);
        Ok((Arc::new(object), bytes.to_vec()))
    }

    fn open_immutable(&self, name: &str, within: Option<&Stamp>) -> io::Result<Arc<dyn Object>> {
        // Never written over: no HEAD for a length or a tag to read against.
        // Each answer is checked to be the object `within` named.
        let path = self.path(name)?;
        let scope = self.cache.as_ref().zip(within).map(|(c, w)| c.scope(&self.url(name), w));
        let named_by = match within {
            Some(w) => Some(NamedBy { stamp: w.clone(), index: self.path(&w.name)?, checked: Mutex::default() }),
            None => None,
        };
        let object = RemoteObject {
            store: self.store.clone(),
            deadline: self.deadline,
            path,
            len: u64::MAX,
            etag: None,
            generation: Generation::Tag(String::new()),
            stamp: None,
            named_by,
            scope,
        };
        Ok(Arc::new(object))
    }

    fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
        let path = self.path(name)?;
        let store = self.store.clone();
        let p = path.clone();
        let d = self.deadline;
        match wait(async move { within(d, store.head(&p)).await })? {
            Ok(meta) => {
                let generation = generation_of(&meta);
                let modified = Some(meta.last_modified.into());
                return Ok(Some(Entry {
                    name: name.to_owned(),
                    kind: Kind::Object,
                    len: meta.size,
                    generation,
                    modified,
                }));
            }
            // A web server lists nothing: what it does not serve is not there.
            Err(object_store::Error::NotFound { .. }) if !self.writable => return Ok(None),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(io_error(e)),
        }
        match self.list(name) {
            Ok(_) => Ok(Some(Entry {
                name: name.to_owned(),
                kind: Kind::Prefix,
                len: 0,
                generation: Generation::Tag(String::new()),
                modified: None,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
        if !self.writable {
            let e = format!("{} is a web server: it lists nothing", self.base);
            return Err(io::Error::new(io::ErrorKind::Unsupported, e));
        }
        let under = if prefix.is_empty() {
            (!self.root.is_empty()).then(|| ObjectPath::from(self.root.as_str()))
        } else {
            Some(self.path(prefix.trim_end_matches('/'))?)
        };
        let store = self.store.clone();
        let d = self.deadline;
        let listed =
            wait(async move { within(d, store.list_with_delimiter(under.as_ref())).await })?.map_err(io_error)?;
        let mut out: Vec<Entry> = listed
            .common_prefixes
            .iter()
            .map(|p| Entry {
                name: self.relative(p),
                kind: Kind::Prefix,
                len: 0,
                generation: Generation::Tag(String::new()),
                modified: None,
            })
            .chain(listed.objects.iter().map(|m| Entry {
                name: self.relative(&m.location),
                kind: Kind::Object,
                len: m.size,
                generation: generation_of(m),
                modified: Some(m.last_modified.into()),
            }))
            .collect();
        if out.is_empty() && !prefix.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no prefix '{}'", self.url(prefix))));
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn put(&self, name: &str, bytes: &[u8], cond: Condition<'_>) -> Result<Generation, PutError> {
        if !self.writable {
            return Err(self.read_only());
        }
        let path = self.path(name)?;
        let mode = match cond {
            Condition::Always => PutMode::Overwrite,
            Condition::IfAbsent => PutMode::Create,
            Condition::IfGeneration(Generation::Tag(t)) => {
                PutMode::Update(UpdateVersion { e_tag: Some(t.clone()), version: None })
            }
            // Not a generation of this store: it cannot be the current one.
            Condition::IfGeneration(Generation::Local { .. }) => return Err(PutError::Conflict),
        };
        let store = self.store.clone();
        let payload = PutPayload::from(bytes.to_vec());
        let opts = PutOptions { mode, ..PutOptions::default() };
        let d = self.deadline;
        match wait(async move { within(d, store.put_opts(&path, payload, opts)).await })? {
            Ok(r) => Ok(match r.e_tag {
                Some(t) => Generation::Tag(t),
                // (A store that gives no tag: the next stat tells.)
                None => self.stat(name)?.map_or(Generation::Tag(String::new()), |e| e.generation),
            }),
            Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => {
                Err(PutError::Conflict)
            }
            Err(e) => Err(PutError::Io(io_error(e))),
        }
    }

    fn put_cut_short(&self, name: &str, declared: usize, sent: &[u8]) -> io::Result<bool> {
        // A PUT by a signed URL (query-string authentication), sent by
        // hand over plain HTTP: no client sends half a body on purpose.
        // Over HTTPS (AWS S3 itself, which documents that it never stores
        // part of an object) it is not tried.
        use object_store::signer::Signer;
        let Some(signer) = self.signer.clone() else { return Ok(false) };
        let path = self.path(name)?;
        let d = self.deadline;
        let signed =
            wait(async move { within(d, signer.signed_url("PUT".parse().unwrap_or_default(), &path, d)).await })?;
        let Ok(url) = signed else { return Ok(false) };
        if url.scheme() != "http" {
            return Ok(false);
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else { return Ok(false) };
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        // The Host header as the URL was signed for (no default port).
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        let send = || -> io::Result<()> {
            use std::io::Write;
            use std::net::ToSocketAddrs;
            let addr = (host, port).to_socket_addrs()?.next().ok_or_else(|| io::Error::other("no address"))?;
            let mut conn = std::net::TcpStream::connect_timeout(&addr, d)?;
            conn.set_write_timeout(Some(d))?;
            let head = format!(
                "PUT {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {declared}\r\n\
                 Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
            );
            conn.write_all(head.as_bytes())?;
            conn.write_all(&sent[..sent.len().min(declared)])?;
            conn.flush()?;
            // The rest never comes: the connection ends.
            let _ = conn.shutdown(std::net::Shutdown::Both);
            Ok(())
        };
        // Where it cannot be sent as the client's requests are (a host only
        // the client's own resolution finds), the check goes without it:
        // the other requests of the check tell whether the server is there.
        if send().is_err() {
            return Ok(false);
        }
        Ok(true)
    }

    fn remove(&self, name: &str, expected: Option<&Generation>) -> Result<(), PutError> {
        if !self.writable {
            return Err(self.read_only());
        }
        let path = self.path(name)?;
        if let Some(g) = expected {
            // S3 has no conditional delete: the check and the removal are two requests.
            if self.stat(name)?.map(|e| e.generation).as_ref() != Some(g) {
                return Err(PutError::Conflict);
            }
        }
        let store = self.store.clone();
        let d = self.deadline;
        match wait(async move { within(d, store.delete(&path)).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(PutError::Io(io_error(e))),
        }
    }
}

/// The index version that names a chunk object, and the chunk object's
/// entity tag once an answer passed the check against it.
struct NamedBy {
    stamp: Stamp,
    /// The index object's path.
    index: ObjectPath,
    checked: Mutex<Option<String>>,
}

/// One version of a remote object.
struct RemoteObject {
    store: Arc<dyn ObjectStore>,
    /// The [`deadline`] of each request.
    deadline: std::time::Duration,
    path: ObjectPath,
    /// [`u64::MAX`] for an object opened without a request
    /// ([`Location::open_immutable`]).
    len: u64,
    etag: Option<String>,
    generation: Generation,
    /// This version as the server described it (opened with a request).
    stamp: Option<Stamp>,
    /// For a chunk object opened without a request: the index version
    /// that names it, which every answer is checked against.
    named_by: Option<NamedBy>,
    /// Its pages in the read cache, if one serves the location.
    scope: Option<Scope>,
}

impl fmt::Debug for RemoteObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteObject").field("path", &self.path).field("len", &self.len).finish()
    }
}

/// The requests that fetch `spans` (sorted by start): spans closer than
/// [`COALESCE`] merged.
fn coalesce(spans: &[Span<u64>]) -> Vec<Span<u64>> {
    let mut out: Vec<Span<u64>> = Vec::new();
    for s in spans {
        match out.last_mut() {
            Some(last) if s.start <= last.end.saturating_add(COALESCE) => last.end = last.end.max(s.end),
            _ => out.push(s.clone()),
        }
    }
    out
}

impl RemoteObject {
    /// Fetch `requests` (byte spans, sorted) at once, at most [`IN_FLIGHT`]
    /// at a time and each within its deadline (conditioned on the version's
    /// tag where it has one), and give `each` every span's bytes with what
    /// the answer said of the object.
    fn fetch(
        &self,
        requests: Vec<Span<u64>>,
        mut each: impl FnMut(Span<u64>, &[u8], &object_store::ObjectMeta) -> io::Result<()>,
    ) -> io::Result<()> {
        let (store, path, etag, d) = (self.store.clone(), self.path.clone(), self.etag.clone(), self.deadline);
        let fetched = wait(async move {
            futures::stream::iter(requests.into_iter().map(|span| {
                let (store, path) = (store.clone(), path.clone());
                let options = GetOptions {
                    range: Some(GetRange::Bounded(span.clone())),
                    if_match: etag.clone(),
                    ..GetOptions::default()
                };
                // Each request its own deadline, from when it is sent.
                within(d, async move {
                    let got = store.get_opts(&path, options).await?;
                    let meta = got.meta.clone();
                    Ok((span, got.bytes().await?, meta))
                })
            }))
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<_>>()
            .await
        })?
        .map_err(|e| match e {
            object_store::Error::Precondition { .. } => {
                io::Error::new(io::ErrorKind::NotFound, format!("'{}' was replaced since it was opened", self.path))
            }
            e => io_error(e),
        })?;
        for (span, bytes, meta) in fetched {
            if let Some(by) = &self.named_by {
                self.check_named_by(by, &meta)?;
            }
            each(span, &bytes, &meta)?;
        }
        Ok(())
    }

    /// Check that an answer (`meta`) for this chunk object came from the
    /// object the index version `by` names ([`super::check_named_by`]).
    /// An entity tag that passed is not checked again.
    fn check_named_by(&self, by: &NamedBy, meta: &object_store::ObjectMeta) -> io::Result<()> {
        let checked = || by.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if meta.e_tag.is_some() && *checked() == meta.e_tag {
            return Ok(());
        }
        super::check_named_by(&by.stamp, self.path.as_ref(), Some(modified_ns(meta)), |_| {
            let (store, index, d) = (self.store.clone(), by.index.clone(), self.deadline);
            match wait(async move { within(d, store.head(&index)).await })? {
                Ok(m) => Ok(Some(generation_of(&m))),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(io_error(e)),
            }
        })?;
        *checked() = meta.e_tag.clone();
        Ok(())
    }

    /// The pages of the read cache `scope` that cover `spans` (sorted),
    /// those it lacks fetched (and kept when whole and of this version).
    fn pages(&self, scope: &Scope, spans: &[Span<u64>]) -> io::Result<HashMap<u64, Vec<u8>>> {
        let mut wanted: Vec<u64> = spans.iter().flat_map(|s| s.start / PAGE..s.end.div_ceil(PAGE)).collect();
        wanted.dedup();
        // The object's length: known, or told by a cached page (an object
        // opened without a request).
        let mut len = (self.len != u64::MAX).then_some(self.len);
        let mut pages = HashMap::new();
        let mut lacking = Vec::new();
        for page in wanted {
            match scope.get(page) {
                Some((bytes, object_len)) => {
                    len = Some(object_len);
                    pages.insert(page, bytes);
                }
                None => lacking.push(page),
            }
        }
        // Pages past the end are not there to fetch.
        lacking.retain(|&p| len.map_or(true, |len| p * PAGE < len));
        if lacking.is_empty() {
            return Ok(pages);
        }
        // Another thread of this process may be fetching some: wait for it, look again.
        let _held = scope.lock(lacking.iter().copied());
        lacking.retain(|&page| {
            let Some((bytes, _)) = scope.get(page) else { return true };
            pages.insert(page, bytes);
            false
        });
        let missing: Vec<Span<u64>> = match len {
            Some(len) => {
                let mut missing: Vec<Span<u64>> = Vec::new();
                for &page in &lacking {
                    let span = page * PAGE..((page + 1) * PAGE).min(len);
                    match missing.last_mut() {
                        Some(m) if m.end == span.start => m.end = span.end,
                        _ => missing.push(span),
                    }
                }
                missing
            }
            // Length unknown: one request from the first page wanted (where
            // the read starts, inside the object), which the server cuts at
            // the object's end, as a read without the cache asks.
            None => match (lacking.first(), lacking.last()) {
                (Some(&first), Some(&last)) => std::iter::once(first * PAGE..(last + 1) * PAGE).collect(),
                _ => Vec::new(),
            },
        };
        self.fetch(missing, |span, bytes, meta| {
            // An object opened without a request (a chunk object) is kept
            // only if it is not newer than the index version naming it.
            let keep = self.len != u64::MAX || scope.keeps(Some(modified_ns(meta)));
            // Its length, from the answer's range when it was not known.
            let len = if self.len == u64::MAX { meta.size } else { self.len };
            for (i, piece) in bytes.chunks(PAGE as usize).enumerate() {
                let page = span.start / PAGE + i as u64;
                if keep {
                    scope.put(page, piece, len);
                }
                pages.insert(page, piece.to_vec());
            }
            Ok(())
        })?;
        Ok(pages)
    }

    /// Fill `buf` from `at` out of `pages`: how many bytes they hold there
    /// (fewer at the object's end).
    fn from_pages(pages: &HashMap<u64, Vec<u8>>, at: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            let pos = at + done as u64;
            let Some(page) = pages.get(&(pos / PAGE)) else { break };
            let from = (pos % PAGE) as usize;
            let n = page.len().saturating_sub(from).min(buf.len() - done);
            if n == 0 {
                break;
            }
            buf[done..done + n].copy_from_slice(&page[from..from + n]);
            done += n;
        }
        done
    }
}

impl Object for RemoteObject {
    fn len(&self) -> u64 {
        self.len
    }

    fn generation(&self) -> &Generation {
        &self.generation
    }

    fn stamp(&self) -> Option<&Stamp> {
        self.stamp.as_ref()
    }

    fn modified_ns(&self) -> Option<i128> {
        self.stamp.as_ref().map(|s| s.modified_ns)
    }

    fn read_upto(&self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        if self.len != u64::MAX {
            let n = usize::try_from(self.len.saturating_sub(at)).map_or(buf.len(), |left| left.min(buf.len()));
            self.read_at(at, &mut buf[..n])?;
            return Ok(n);
        }
        // Opened without learning its length ([`Location::open_immutable`]):
        // one request for the whole buffer, which the server answers with
        // what there is (a range past the end is cut at the end).
        if buf.is_empty() {
            return Ok(0);
        }
        let span = at..at.saturating_add(buf.len() as u64);
        if let Some(scope) = &self.scope {
            let pages = self.pages(scope, &[span])?;
            return Ok(Self::from_pages(&pages, at, buf));
        }
        let mut n = 0;
        self.fetch(vec![span], |_, bytes, _| {
            n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(())
        })?;
        Ok(n)
    }

    fn read_ranges(&self, ranges: &mut [Range<'_>]) -> io::Result<()> {
        let mut spans = Vec::with_capacity(ranges.len());
        for r in ranges.iter() {
            let end = r.at.checked_add(r.buf.len() as u64).filter(|&e| e <= self.len);
            let Some(end) = end else {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a read past the end of the object"));
            };
            if end > r.at {
                spans.push(r.at..end);
            }
        }
        if spans.is_empty() {
            return Ok(());
        }
        spans.sort_by_key(|s| s.start);
        let short =
            || io::Error::new(io::ErrorKind::UnexpectedEof, format!("'{}' answered fewer bytes than asked", self.path));
        if let Some(scope) = &self.scope {
            let pages = self.pages(scope, &spans)?;
            for r in ranges.iter_mut() {
                if Self::from_pages(&pages, r.at, r.buf) < r.buf.len() {
                    return Err(short());
                }
            }
            return Ok(());
        }
        // Each answer fills the ranges its span covers (every range is in one).
        self.fetch(coalesce(&spans), |span, bytes, _| {
            for r in ranges.iter_mut().filter(|r| span.start <= r.at && r.at + r.buf.len() as u64 <= span.end) {
                let from = (r.at - span.start) as usize;
                let piece = bytes.get(from..from + r.buf.len()).ok_or_else(short)?;
                r.buf.copy_from_slice(piece);
            }
            Ok(())
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::{coalesce, Remote};
    use crate::store::location::{conformance, Condition, Location, PutError};
    use crate::testing::servers;

    /// A panic in the client is the waiting call's error, and nothing of it
    /// reaches stderr: checked in a child process (this test again, with
    /// `CATERVA_PANIC_CHILD` set), whose stderr the parent reads.
    #[test]
    fn a_panic_on_the_runtime_is_an_error_and_prints_nothing() {
        if std::env::var_os("CATERVA_PANIC_CHILD").is_some() {
            let e = super::wait(async { panic!("the client fell over") }).unwrap_err();
            println!("error: {e}");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "store::location::remote::tests::a_panic_on_the_runtime_is_an_error_and_prints_nothing"])
            .arg("--nocapture")
            .env("CATERVA_PANIC_CHILD", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("error: the remote client failed: the client fell over"), "{stdout}");
        assert!(!stderr.contains("panicked") && !stderr.contains("fell over"), "{stderr}");
    }

    #[test]
    fn malformed_endpoints_and_overlong_keys_are_refused_before_any_client() {
        for bad in ["not-a-url", "ftp://host", "http://", "http://h:1/?q=1", "http://a b"] {
            let e = super::check_endpoint(bad).unwrap_err();
            assert!(e.contains("is not an http(s) URL") && e.contains(bad), "{e}");
        }
        super::check_endpoint("http://127.0.0.1:9000").unwrap();
        super::check_endpoint("https://s3.eu-west-1.amazonaws.com/").unwrap();
        let long = format!("s3://bucket/{}", "k".repeat(super::S3_KEY_MAX + 1));
        let e = super::locate(&long).map(drop).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("at most"), "{e}");
        let long = format!("http://host/{}", "u".repeat(100 << 10));
        assert!(super::locate(&long).map(drop).unwrap_err().to_string().contains("at most"));
        assert!(super::locate("s3://bu<cket/a.b2nd").is_err());
    }

    #[test]
    fn near_ranges_coalesce_far_ones_do_not() {
        let c = super::COALESCE;
        assert_eq!(coalesce(&[0..10, 10..20, 30..40]), vec![0..40]);
        assert_eq!(coalesce(&[0..10, 10 + c + 1..10 + c + 5]), vec![0..10, 10 + c + 1..10 + c + 5]);
        assert_eq!(coalesce(&[0..100, 5..10]), vec![0..100]);
    }

    /// The S3 location `root` of `bucket` at `endpoint`, configured here
    /// rather than from the environment (tests run side by side).
    fn s3(endpoint: &str, bucket: &str, root: &str) -> Remote {
        s3_as(endpoint, bucket, root, "test")
    }

    /// [`s3`] with the key pair (`key`, `key`).
    fn s3_as(endpoint: &str, bucket: &str, root: &str, key: &str) -> Remote {
        super::tls_provider();
        let s3 = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id(key)
            .with_secret_access_key(key)
            .with_allow_http(true)
            .with_retry(super::retry())
            .build()
            .unwrap();
        let base = format!("s3://{bucket}/{root}/");
        let s3 = Arc::new(s3);
        Remote {
            store: s3.clone(),
            root: root.to_owned(),
            base,
            writable: true,
            server: endpoint.to_owned(),
            deadline: super::DEADLINE,
            cache: None,
            signer: Some(s3),
        }
    }

    /// Credentials and the endpoint from the AWS shared files reach a real
    /// server; none anywhere (the instance metadata service ruled out) is
    /// a clear error before any request.
    #[test]
    fn the_shared_files_configure_the_client_and_no_credentials_is_an_error() {
        let moto = servers::moto("files");
        let dir = std::env::temp_dir().join(format!("caterva-s3-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("credentials"), "[bench]\naws_access_key_id = test\naws_secret_access_key = test\n")
            .unwrap();
        std::fs::write(
            dir.join("config"),
            format!("[profile bench]\nregion = us-east-1\ns3 =\n  endpoint_url = {}\n", moto.url()),
        )
        .unwrap();
        let env: HashMap<String, String> = [
            ("HOME", dir.to_string_lossy().into_owned()),
            ("AWS_SHARED_CREDENTIALS_FILE", dir.join("credentials").to_string_lossy().into_owned()),
            ("AWS_CONFIG_FILE", dir.join("config").to_string_lossy().into_owned()),
            ("AWS_PROFILE", "bench".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let s3 = super::build_s3(&super::s3_settings(&env, "files").unwrap(), "files", &Default::default()).unwrap();
        let remote = Remote {
            store: Arc::new(s3),
            root: "cfg".into(),
            base: "s3://files/cfg/".into(),
            writable: true,
            server: "files".into(),
            deadline: super::DEADLINE,
            cache: None,
            signer: None,
        };
        remote.put("x", b"from the shared files", Condition::Always).unwrap();
        assert_eq!(remote.open("x").unwrap().read_vec(0, 8).unwrap(), b"from the");
        // No credentials anywhere.
        let bare: HashMap<String, String> =
            [("HOME", dir.join("nowhere")), ("AWS_EC2_METADATA_DISABLED", "true".into())]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_string_lossy().into_owned()))
                .collect();
        let e = super::s3_settings(&bare, "files").map(drop).unwrap_err();
        assert!(e.contains("no AWS credentials") && e.contains("'files'"), "{e}");
        // Unsigned requests asked for, or the metadata service not ruled out: no error here.
        let mut public = bare.clone();
        public.insert("AWS_SKIP_SIGNATURE".into(), "true".into());
        assert!(super::s3_settings(&public, "files").is_ok());
        let mut ec2 = bare;
        ec2.remove("AWS_EC2_METADATA_DISABLED");
        assert!(super::s3_settings(&ec2, "files").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_suite_passes_on_an_s3_server() {
        let moto = servers::moto("suite");
        conformance::run(&s3(&moto.url(), "suite", "top"), "");
        conformance::run(&s3(&moto.url(), "suite", "deeper/arr.caterva"), "");
    }

    /// A PUT cut short (a writer killed in the middle of one): moto (as
    /// AWS S3 documents of itself) stores nothing; s3rver empties the
    /// object it was replacing and makes an empty one at a new name (the
    /// probe would refuse it for that too, had its conditions held).
    #[test]
    fn a_put_cut_short_leaves_nothing_on_moto_and_part_of_it_on_s3rver() {
        let moto = servers::moto("cut");
        let s3rver = servers::s3rver("cut");
        for (server, whole_or_nothing, key) in [(&moto, true, "test"), (&s3rver, false, "S3RVER")] {
            let r = s3_as(&server.url(), "cut", "top", key);
            // Over an object, and where nothing is.
            r.put("there", b"before", Condition::Always).unwrap();
            for name in ["there", "new"] {
                assert!(r.put_cut_short(name, 64 << 10, &[7u8; 4096]).unwrap());
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let there = r.open("there").unwrap();
            let there = there.read_vec(0, there.len() as usize).unwrap();
            let new = r.stat("new").unwrap();
            eprintln!("{}: 'there' holds {} bytes, 'new' {:?}", server.url(), there.len(), new.as_ref().map(|e| e.len));
            if whole_or_nothing {
                assert_eq!(there, b"before");
                assert!(new.is_none(), "{new:?}");
            } else {
                assert!(there != b"before" || new.is_some(), "s3rver kept nothing of a cut put");
            }
        }
    }

    #[test]
    fn reads_pass_on_a_web_server_which_is_read_only() {
        let nginx = servers::nginx();
        let dir = nginx.www().join("dir");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("sample"), conformance::sample()).unwrap();
        let (loc, key) = super::locate(&format!("{}/dir/sample", nginx.url())).unwrap();
        assert_eq!(key, "sample");
        assert_eq!(loc.url("sample"), format!("{}/dir/sample", nginx.url()));
        let g = loc.stat("sample").unwrap().unwrap().generation;
        conformance::reads(loc.as_ref(), "sample", &g);
        for r in [loc.put("new", b"x", Condition::Always).map(drop), loc.remove("sample", None)] {
            match r {
                Err(PutError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied),
                other => panic!("a web server took a write: {other:?}"),
            }
        }
        // A file replaced after it was opened: its reads fail, never mix versions.
        let o = loc.open("sample").unwrap();
        std::fs::write(dir.join("sample"), b"another file, of another length").unwrap();
        assert!(o.read_vec(0, 16).is_err());
        assert_eq!(loc.open("sample").unwrap().read_vec(0, 7).unwrap(), b"another");
    }

    /// `https://` goes through rustls with *ring* (Cargo.toml: aws-lc-rs is
    /// not built): the client is made (reqwest, built without a provider,
    /// panicked there before one was installed), its request opens with a
    /// TLS handshake, and a server that answers in plain HTTP fails it with
    /// rustls's error, not a panic nor a plain-HTTP exchange.
    #[test]
    fn https_requests_start_a_tls_handshake() {
        let nginx = servers::nginx();
        std::fs::write(nginx.www().join("sample"), conformance::sample()).unwrap();
        let base = nginx.url().replacen("http://", "https://", 1);
        let once = crate::store::location::options::StorageOptions::new().set("retries", "0").unwrap();
        crate::store::location::options::set(&base, once).unwrap();
        let (loc, _) = super::locate(&format!("{base}/sample")).unwrap();
        // (io_error: the message carries the causes, the TLS error among them.)
        let e = loc.stat("sample").unwrap_err().to_string();
        assert!(e.contains("InvalidContentType"), "not rustls's error on a plain-HTTP answer: {e}");
        // (The same server and object over plain HTTP.)
        let (plain, _) = super::locate(&format!("{}/sample", nginx.url())).unwrap();
        assert!(plain.stat("sample").unwrap().is_some());
    }
}
