//! Servers the remote tests start on 127.0.0.1, each killed and its
//! folder removed when dropped: nginx (HTTP with range requests, from
//! Debian's packages) and moto's S3 server (`moto[server]` from PyPI,
//! which `.ci/setup` installs in `target/interop/moto`). Nothing listens
//! beyond 127.0.0.1.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A server process and its folder.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its folder (for nginx, `www/` under it is what it serves).
    pub dir: PathBuf,
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// For nginx: the folder it serves.
    #[must_use]
    pub fn www(&self) -> PathBuf {
        self.dir.join("www")
    }

    /// Send a bare HTTP/1.1 request (no signature: moto does not check
    /// them) and return the status code.
    ///
    /// # Panics
    /// If the server cannot be reached or answers nonsense.
    #[must_use]
    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> u16 {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connecting to the test server");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes()).and_then(|()| s.write_all(body)).expect("sending to the test server");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).expect("reading the test server's answer");
        let line = String::from_utf8_lossy(&answer[..answer.len().min(64)]).into_owned();
        line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("a strange answer: {line}"))
    }

    /// Kill the server now (a fault of the tests).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh folder for a server.
fn folder(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("caterva-{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("making a server's folder");
    dir
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("finding a free port").port()
}

/// Start `cmd` and wait until it accepts connections on `port`.
fn start(mut cmd: Command, port: u16, dir: PathBuf, what: &str) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).expect("making the server's log");
    cmd.stdin(Stdio::null()).stdout(log.try_clone().expect("log")).stderr(log);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("starting {what} ({cmd:?}): {e}"));
    let mut server = Server { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            let log = std::fs::read_to_string(server.dir.join("server.log")).unwrap_or_default();
            panic!("{what} exited ({status}) before it listened:\n{log}");
        }
        assert!(Instant::now() < deadline, "{what} did not listen on port {port} within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// The first of `candidates` that exists, else `name` (looked up in `PATH`).
fn program(env: &str, candidates: &[PathBuf], name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return p.into();
    }
    candidates.iter().find(|p| p.exists()).cloned().unwrap_or_else(|| name.into())
}

/// nginx serving [`Server::www`] (static files, ranges, entity tags).
///
/// # Panics
/// If nginx is missing (`apt-get install nginx`; `.ci/setup` installs it)
/// or does not start.
#[must_use]
pub fn nginx() -> Server {
    let dir = folder("nginx");
    std::fs::create_dir_all(dir.join("www")).expect("making nginx's root");
    std::fs::create_dir_all(dir.join("tmp")).expect("making nginx's temporaries");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n  \
         fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n  \
         server {{\n    listen 127.0.0.1:{port};\n    root {d}/www;\n  }}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).expect("writing nginx.conf");
    let bin = program("CATERVA_NGINX", &[PathBuf::from("/usr/sbin/nginx")], "nginx");
    let mut cmd = Command::new(&bin);
    cmd.arg("-p").arg(&dir).arg("-c").arg(dir.join("nginx.conf")).arg("-e").arg(dir.join("error.log"));
    start(cmd, port, dir, "nginx (apt-get install nginx; .ci/setup installs it)")
}

/// Point this process's S3 clients at `endpoint` (moto's server, or a proxy
/// in front of it), with the test credentials moto accepts: the AWS
/// environment, set before the first client is made (clients are made once
/// per process and bucket).
pub fn use_s3_endpoint(endpoint: &str) {
    for (k, v) in [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ] {
        std::env::set_var(k, v);
    }
}

/// moto's S3 server, with the bucket `bucket` made.
///
/// # Panics
/// If moto is missing (`.ci/setup` installs it in `target/interop/moto`)
/// or does not start.
#[must_use]
pub fn moto(bucket: &str) -> Server {
    let dir = folder("moto");
    let port = free_port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("target/interop/moto/bin/python");
    let python = program("CATERVA_MOTO_PYTHON", &[venv], "python3");
    // moto's app with atomic conditional writes (see the script).
    let mut cmd = Command::new(&python);
    cmd.arg(root.join("tests/servers/s3_server.py")).args(["127.0.0.1", &port.to_string()]);
    let server = start(cmd, port, dir, "moto (.ci/setup installs it in target/interop/moto)");
    let status = server.request("PUT", &format!("/{bucket}"), b"");
    assert_eq!(status, 200, "making the bucket '{bucket}'");
    server
}

/// s3rver (3.7.1, from npm; `.ci/setup` installs it in
/// `target/interop/s3rver`), with the bucket `bucket` made: an S3 server
/// that ignores `If-None-Match` and `If-Match`, for the tests of writes on
/// servers without conditional writes (`store/writers.rs`). Any signature
/// is taken.
///
/// # Panics
/// If s3rver is missing or does not start.
#[must_use]
pub fn s3rver(bucket: &str) -> Server {
    let dir = folder("s3rver");
    let port = free_port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = program("CATERVA_S3RVER", &[root.join("target/interop/s3rver/node_modules/.bin/s3rver")], "s3rver");
    let mut cmd = Command::new(&bin);
    cmd.arg("-d").arg(dir.join("data")).args(["-a", "127.0.0.1", "-p", &port.to_string(), "--silent"]);
    cmd.arg("--allow-mismatched-signatures").arg("--no-vhost-buckets");
    let server = start(cmd, port, dir, "s3rver (.ci/setup installs it in target/interop/s3rver)");
    let status = server.request("PUT", &format!("/{bucket}"), b"");
    assert_eq!(status, 200, "making the bucket '{bucket}'");
    server
}

/// Azurite's Blob service (3.35, from npm; `.ci/setup` installs it in
/// `target/interop/azurite`), its well-known development account, with the
/// container `container` made (by the Azure SDK for Python in `.ci/setup`'s
/// `azure` venv). Point the Azure client at it with
/// `AZURE_STORAGE_USE_EMULATOR=true` and `AZURITE_BLOB_STORAGE_URL` = [`Server::url`].
///
/// # Panics
/// If Azurite or the SDK is missing, or it does not start.
#[must_use]
pub fn azurite(container: &str) -> Server {
    let dir = folder("azurite");
    let port = free_port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = program(
        "CATERVA_AZURITE",
        &[root.join("target/interop/azurite/node_modules/.bin/azurite-blob")],
        "azurite-blob",
    );
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        &port.to_string(),
        "--silent",
        "--skipApiVersionCheck",
        "--loose",
    ]);
    cmd.arg("--location").arg(dir.join("data"));
    let server = start(cmd, port, dir, "Azurite (.ci/setup installs it in target/interop/azurite)");
    let python = program("CATERVA_CLOUD_PYTHON", &[root.join("target/interop/azure/bin/python")], "python3");
    let make = format!(
        "from azure.storage.blob import BlobServiceClient\n\
         BlobServiceClient.from_connection_string('DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
         AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\
         BlobEndpoint={}/devstoreaccount1;').create_container('{container}')\n",
        server.url()
    );
    let out = Command::new(&python).arg("-c").arg(make).output().expect("running the Azure SDK");
    assert!(out.status.success(), "making the container '{container}': {}", String::from_utf8_lossy(&out.stderr));
    server
}
