//! Running the explorer: bind, print the URL, optionally open a browser, serve until Ctrl-C.
//!
//! Connections are served by hyper's HTTP/1.1 server under the [`Limits`]:
//!
//! - **Header timeout.** A request head must be complete [`Limits::header_read_timeout`] after its
//!   first byte (for a new connection: after it was accepted), or the connection is closed.
//! - **Idle timeout.** A keep-alive connection with no request in progress closes after
//!   [`Limits::idle_timeout`] without a byte.
//! - **Connection limit.** At most [`Limits::max_connections`] are open. A new connection at the
//!   limit closes the one that has waited longest without a request in progress (a stalled or
//!   idle one), so slow clients cannot lock new ones out; when every connection has a request in
//!   progress, the new one waits for one to finish.
//! - **Bounded buffers.** A request head is refused once hyper's read buffer holds
//!   [`MAX_HEAD_BYTES`] without a complete head; hyper checks before each read and one read adds
//!   at most that much again, so a connection holds under twice it however it sends (a head that
//!   completes inside that last read is served); nothing is kept per closed connection.
//! - **Security headers everywhere.** hyper answers some malformed requests itself, below the
//!   router (400, a URI over 65,534 bytes: 414, a head over [`MAX_HEAD_BYTES`] or 100 fields:
//!   431). Those answers are replaced on the way out by the same status with the headers of
//!   every response ([`crate::security::HEADERS`]) and a one-line message. An interim answer
//!   (`100 Continue`) is never taken for the final one: it passes as it is, and so does the
//!   final answer after it unless that is one of hyper's own.

use crate::{app, AppState, Limits};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt;

/// Largest request head (request line and headers), bytes: hyper's read buffer, so also what one
/// connection holds at most while a head arrives. Larger heads are answered 431.
pub(crate) const MAX_HEAD_BYTES: usize = 128 * 1024;

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind (the CLI's default is 127.0.0.1: this machine only).
    pub bind: IpAddr,
    /// Port (0 picks a free one).
    pub port: u16,
    /// Open the page in the default browser once listening.
    pub open: bool,
}

/// Serve until Ctrl-C (blocking; builds its own runtime).
pub fn serve(opts: ServeOptions, mut state: AppState) -> io::Result<()> {
    // Listening on loopback only makes sense for local pages: refuse other Host names (DNS
    // rebinding). Bound elsewhere on purpose, any Host is the user's choice.
    state.loopback_hosts_only = opts.bind.is_loopback();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let want = SocketAddr::new(opts.bind, opts.port);
        let listener = TcpListener::bind(want)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {want}: {e}")))?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}/");
        eprintln!("llm-ledger explorer: {url}  (Ctrl-C to stop)");
        if !addr.ip().is_loopback() {
            eprintln!("note: bound to {}, so other machines can reach this page", addr.ip());
        }
        if opts.open {
            open_browser(&url);
        }
        serve_listener(listener, Arc::new(state), async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    })
}

/// Serve the explorer on `listener` under `state.limits` until `shutdown` completes; then stop
/// accepting, let requests in progress finish (for at most the request timeout) and return.
pub async fn serve_listener(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let limits = state.limits.clone();
    let router = app(state);
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let open: Arc<Registry> = Arc::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    // The header and idle timeouts are this module's (hyper's one timer cannot tell an idle
    // keep-alive connection from a slow head).
    http.max_buf_size(MAX_HEAD_BYTES).header_read_timeout(None).keep_alive(true);
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of file descriptors or a connection reset before it was accepted: the
            // listener is fine, try again shortly.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                open.evict_longest_waiting();
                tokio::select! {
                    () = &mut shutdown => break,
                    slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                }
            }
        };
        let conn = open.add();
        let (router, http, limits, open, mut stop) =
            (router.clone(), http.clone(), limits.clone(), open.clone(), stop_rx.clone());
        tokio::spawn(async move {
            let _slot = slot;
            serve_connection(stream, router, &http, &limits, &conn, &mut stop).await;
            open.remove(conn.id);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Requests in progress get their deadline to finish; idle connections close at once.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(limits.request_timeout, slots.acquire_many(all)).await;
    Ok(())
}

/// One connection, until it ends, times out, is evicted, or the server stops.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    http: &hyper::server::conn::http1::Builder,
    limits: &Limits,
    conn: &Arc<Tracker>,
    stop: &mut watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let tracker = conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let request = InFlight::begin(tracker.clone());
        let router = router.clone();
        async move {
            let res = router.oneshot(req.map(axum::body::Body::new)).await;
            drop(request);
            res
        }
    });
    let io = TokioIo::new(Guarded { inner: stream, conn: conn.clone(), pending: Vec::new() });
    let served = http.serve_connection(io, service);
    tokio::pin!(served);
    let mut stopping = false;
    loop {
        if conn.evicted.load(Ordering::Acquire) {
            return;
        }
        let deadline = conn.deadline(limits);
        let expire = async move {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = served.as_mut() => return,
            () = conn.changed.notified() => {}
            () = expire => {
                if conn.deadline(limits).is_some_and(|d| d <= Instant::now()) {
                    // Dropping the connection closes it: a head too slow, or idle too long.
                    return;
                }
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
}

/// What a connection is doing, for its timeouts and for eviction.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in progress and no byte since this instant (keep-alive idle).
    Idle(Instant),
    /// A request head has been arriving since this instant (a new connection starts here).
    Head(Instant),
    /// This many requests in progress.
    Busy(usize),
}

/// One open connection's state, shared by its task, its I/O and its requests.
#[derive(Debug)]
struct Tracker {
    id: u64,
    phase: Mutex<Phase>,
    /// Woken when the phase changes or the connection is evicted.
    changed: Notify,
    evicted: AtomicBool,
}

impl Tracker {
    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *p = f(*p);
        drop(p);
        self.changed.notify_one();
    }

    /// When the connection times out in its present phase (none while a request is in progress:
    /// the request's own deadline bounds that).
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        match self.phase() {
            Phase::Idle(t) => Some(t + limits.idle_timeout),
            Phase::Head(t) => Some(t + limits.header_read_timeout),
            Phase::Busy(_) => None,
        }
    }

    /// Bytes arrived: an idle connection starts a head.
    fn on_read(&self) {
        if matches!(self.phase(), Phase::Idle(_)) {
            self.set(|p| if let Phase::Idle(_) = p { Phase::Head(Instant::now()) } else { p });
        }
    }
}

/// A request in progress on a connection (ends when dropped, also when the request is
/// abandoned).
struct InFlight(Arc<Tracker>);

impl InFlight {
    fn begin(conn: Arc<Tracker>) -> Self {
        conn.set(|p| match p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        });
        InFlight(conn)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.set(|p| match p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        });
    }
}

/// The open connections.
#[derive(Debug, Default)]
struct Registry {
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Tracker>>>,
}

impl Registry {
    fn add(&self) -> Arc<Tracker> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let t = Arc::new(Tracker {
            id,
            phase: Mutex::new(Phase::Head(Instant::now())),
            changed: Notify::new(),
            evicted: AtomicBool::new(false),
        });
        self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(id, t.clone());
        t
    }

    fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Close the connection that has waited longest without a request in progress, if any.
    fn evict_longest_waiting(&self) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let waiting = open
            .values()
            .filter(|t| !t.evicted.load(Ordering::Acquire))
            .filter_map(|t| match t.phase() {
                Phase::Idle(since) | Phase::Head(since) => Some((since, t)),
                Phase::Busy(_) => None,
            })
            .min_by_key(|(since, _)| *since);
        if let Some((_, t)) = waiting {
            t.evicted.store(true, Ordering::Release);
            t.changed.notify_one();
        }
    }
}

/// A connection's socket: notes arriving bytes for the timeouts, and gives the answers hyper
/// writes itself the security headers and a message.
struct Guarded {
    inner: TcpStream,
    conn: Arc<Tracker>,
    /// A rewritten answer not yet written.
    pending: Vec<u8>,
}

impl Guarded {
    /// Write what is pending; ready when nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Guarded {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.conn.on_read();
        }
        res
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if let Some(answer) = own_answer(buf) {
            self.pending = answer;
            // Written (or left pending for the flush hyper always calls next).
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    // One buffer per write, so a response head is always at the start of one `poll_write`.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

/// If `out` starts with a complete error response (4xx, 5xx) that lacks the security headers —
/// one hyper wrote itself: every response of the router has them — the same status with the
/// headers and a one-line message (hyper closes the connection after these). Interim answers
/// before it (`100 Continue` to `Expect: 100-continue`, any 1xx) are not the answer: they are
/// passed over to the final one, and kept in front of its replacement.
fn own_answer(out: &[u8]) -> Option<Vec<u8>> {
    let mut interim = 0;
    let (head, status) = loop {
        let rest = &out[interim..];
        if !rest.starts_with(b"HTTP/1.") {
            return None;
        }
        let head_end = rest.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = std::str::from_utf8(&rest[..head_end]).ok()?;
        let status = head.strip_prefix("HTTP/1.")?.get(2..5)?;
        if !status.starts_with('1') {
            break (head, status);
        }
        interim += head_end + 4;
    };
    if !(status.starts_with('4') || status.starts_with('5'))
        || head.to_ascii_lowercase().contains("content-security-policy:")
    {
        return None;
    }
    let code = axum::http::StatusCode::from_bytes(status.as_bytes()).ok()?;
    let message = match code.as_u16() {
        414 => format!(
            "the URL is longer than 65534 bytes; a query is at most {} bytes here",
            crate::query::MAX_QUERY_BYTES
        ),
        431 => format!("the request's headers are over {MAX_HEAD_BYTES} bytes or 100 fields"),
        400 => "malformed HTTP request".to_string(),
        _ => code.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut answer = String::from_utf8_lossy(&out[..interim]).into_owned();
    answer.push_str(&format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n",
        code.as_u16(),
        code.canonical_reason().unwrap_or(""),
        message.len() + 1
    ));
    for (name, value) in crate::security::HEADERS {
        answer.push_str(&format!("{name}: {value}\r\n"));
    }
    answer.push_str("\r\n");
    answer.push_str(&message);
    answer.push('\n');
    Some(answer.into_bytes())
}

/// Ask the desktop to open `url`; a failure is a note, not an error (the URL is printed anyway).
fn open_browser(url: &str) {
    use std::process::{Command, Stdio};
    let mut cmd = if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        Command::new("xdg-open")
    };
    if let Err(e) = cmd.arg(url).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        eprintln!("note: could not open a browser ({e}); open {url} yourself");
    }
}

#[cfg(test)]
mod tests {
    use super::own_answer;

    #[test]
    fn hypers_own_error_answers_get_the_security_headers_and_a_message() {
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let a = String::from_utf8(own_answer(hyper_431).unwrap()).unwrap();
        assert!(a.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{a}");
        assert!(a.contains("\r\ncontent-security-policy: default-src 'none';"), "{a}");
        assert!(a.contains("\r\nx-frame-options: DENY\r\n"), "{a}");
        let body = a.split("\r\n\r\n").nth(1).unwrap();
        assert!(a.contains(&format!("content-length: {}\r\n", body.len())), "{a}");
        // Not rewritten: the router's responses (they carry the headers), informational ones,
        // a head not yet complete, and body bytes.
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-security-policy: default-src 'none'\r\n\r\n";
        assert!(own_answer(ours).is_none());
        assert!(own_answer(b"HTTP/1.1 100 Continue\r\n\r\n").is_none());
        assert!(own_answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(own_answer(b"HTTP/1.1 414 URI Too Long\r\ncontent-len").is_none());
        assert!(own_answer(b"{\"error\": 1}\r\n\r\n").is_none());
    }

    /// An interim answer is not the final one: hyper's own error after a `100 Continue` (or any
    /// 1xx) in the same write still gets the headers and its message, the interim answers kept
    /// in front of it as they were.
    #[test]
    fn an_interim_1xx_answer_is_not_taken_for_the_final_one() {
        let interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n";
        let hyper_400 = format!("{interim}HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        let a = String::from_utf8(own_answer(hyper_400.as_bytes()).expect("rewritten")).unwrap();
        let last = a.strip_prefix(interim).unwrap_or_else(|| panic!("the interim answers first: {a}"));
        assert!(last.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{a}");
        assert!(last.contains("\r\ncontent-security-policy: default-src 'none';"), "{a}");
        let (head, body) = last.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, "malformed HTTP request\n");
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())), "{a}");
        // The router's own answer after an interim one is left alone, as without it.
        let ours =
            format!("{interim}HTTP/1.1 413 Payload Too Large\r\ncontent-security-policy: default-src 'none'\r\n\r\n");
        assert!(own_answer(ours.as_bytes()).is_none());
        // Only interim answers so far: nothing to rewrite.
        assert!(own_answer(interim.as_bytes()).is_none());
        assert!(own_answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 431 Request").is_none());
    }
}
