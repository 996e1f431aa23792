//! A loopback HTTP proxy that injects faults between a client and a test
//! server (moto, nginx): the remote tests' "slow and dropped connections,
//! 5xx answers, a server gone mid-write", and the remote benchmark's added
//! latency. Each request gets its own upstream connection (the proxy
//! asks for `Connection: close` both ways), so a fault applies to exactly
//! the request the plan names. Nothing listens beyond 127.0.0.1.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What the proxy does with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward it and relay the answer.
    Pass,
    /// Answer `503 Service Unavailable` without forwarding it.
    Unavailable,
    /// Close the connection without forwarding it or answering.
    Drop,
    /// Forward it, then close the connection without relaying the answer:
    /// the request took effect and the client does not know.
    LoseAnswer,
    /// Answer `403 Forbidden` (S3's `AccessDenied`) without forwarding it:
    /// credentials the server refuses.
    Forbidden,
    /// Answer `500 Internal Server Error` (S3's `InternalError`) without
    /// forwarding it: what s3s-fs answers for a GET of a key that is a
    /// directory on its disk (a sparse array's prefix).
    ServerError,
    /// Take the request and never answer it (the connection held open
    /// until the client gives up): a server that hangs.
    Silent,
}

/// Decides each request's [`Action`] from its number (from 1) and its
/// method and target (`GET /bucket/key?query`).
pub type Plan = Box<dyn Fn(u64, &str) -> Action + Send + Sync>;

/// The proxy; stopped (its port closed) when dropped or [`Proxy::stop`]ped.
pub struct Proxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    state: Arc<State>,
}

struct State {
    upstream: u16,
    plan: Mutex<Plan>,
    /// Added before each request is forwarded.
    delay: Mutex<Duration>,
    requests: AtomicU64,
    /// Bytes of answers relayed to clients.
    bytes: AtomicU64,
    stopped: AtomicBool,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("port", &self.port).finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy to `127.0.0.1:upstream`, passing every request.
    ///
    /// # Panics
    /// If no port can be had.
    #[must_use]
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("a port for the proxy");
        let port = listener.local_addr().expect("the proxy's port").port();
        let state = Arc::new(State {
            upstream,
            plan: Mutex::new(Box::new(|_, _| Action::Pass)),
            delay: Mutex::new(Duration::ZERO),
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let s = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(&s, conn));
            }
        });
        Proxy { port, state }
    }

    /// `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Decide requests from now on by `plan` (numbers count from 1 again).
    pub fn plan(&self, plan: impl Fn(u64, &str) -> Action + Send + Sync + 'static) {
        *self.state.plan.lock().unwrap_or_else(PoisonError::into_inner) = Box::new(plan);
        self.state.requests.store(0, Ordering::SeqCst);
    }

    /// Wait `d` before forwarding each request (a slow or distant server).
    pub fn delay(&self, d: Duration) {
        *self.state.delay.lock().unwrap_or_else(PoisonError::into_inner) = d;
    }

    /// Requests seen since the last [`Proxy::plan`] (or the start).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Bytes of answers relayed so far, and reset the count.
    pub fn take_bytes(&self) -> u64 {
        self.state.bytes.swap(0, Ordering::SeqCst)
    }

    /// Close the port: new connections are refused (a server gone).
    pub fn stop(&self) {
        if !self.state.stopped.swap(true, Ordering::SeqCst) {
            // Wake the accepting thread so that it sees the flag and closes the listener.
            let _ = TcpStream::connect(("127.0.0.1", self.port));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One client connection: read a request, act on it, close.
fn serve(s: &State, mut client: TcpStream) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    let Some((head, body)) = read_request(&mut client) else { return };
    if s.stopped.load(Ordering::SeqCst) {
        return;
    }
    let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let line = head.lines().next().unwrap_or("");
    let request = line.strip_suffix(" HTTP/1.1").unwrap_or(line).to_owned();
    let action = (s.plan.lock().unwrap_or_else(PoisonError::into_inner))(n, &request);
    let delay = *s.delay.lock().unwrap_or_else(PoisonError::into_inner);
    if !delay.is_zero() {
        std::thread::sleep(delay);
    }
    match action {
        Action::Drop => {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Action::Unavailable => {
            let _ =
                client.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            return;
        }
        Action::Forbidden => {
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\
                        <Message>Access Denied</Message></Error>";
            let answer = format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client.write_all(answer.as_bytes());
            return;
        }
        Action::ServerError => {
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code>\
                        <Message>Is a directory</Message></Error>";
            let answer = format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client.write_all(answer.as_bytes());
            return;
        }
        Action::Silent => {
            // Until the client closes (or the read timeout above).
            let mut sink = [0u8; 512];
            while matches!(client.read(&mut sink), Ok(n) if n > 0) {}
            return;
        }
        Action::Pass | Action::LoseAnswer => {}
    }
    let Ok(mut up) = TcpStream::connect(("127.0.0.1", s.upstream)) else { return };
    if up.write_all(&close_connection(&head)).and_then(|()| up.write_all(&body)).is_err() {
        return;
    }
    let mut answer = Vec::new();
    if up.read_to_end(&mut answer).is_err() || action == Action::LoseAnswer {
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    s.bytes.fetch_add(answer.len() as u64, Ordering::SeqCst);
    let _ = client.write_all(&answer);
}

/// The request's head (through the blank line) and body (by its
/// `Content-Length`), or `None` if the client went away.
fn read_request(c: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut byte).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf[end..].to_vec();
    while body.len() < len {
        let n = c.read(&mut byte).ok().filter(|&n| n > 0)?;
        body.extend_from_slice(&byte[..n]);
    }
    Some((head, body))
}

/// The request head with `Connection: close` in place of any connection header.
fn close_connection(head: &str) -> Vec<u8> {
    let mut out = String::new();
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}
