//! Work off the async threads, and every request's deadline.
//!
//! The threads that accept connections and answer requests never run a computation whose cost
//! grows with the request's parameters: those pages and endpoints ([`PageInfo::heavy`],
//! the API's sweeps, MoE, tiling, zoom, cost and latency) run on a thread of their own once one
//! of [`Limits::heavy_workers`] slots is free, so a trivial page answers in milliseconds while
//! heavy ones run. On Linux those threads run at a lower scheduling priority
//! ([`HEAVY_NICENESS`]): with every core busy with heavy work, the scheduler still runs the
//! threads that answer the other requests first, so cheap pages do not wait for CPU behind heavy
//! ones. Each request has a deadline ([`Limits::request_timeout`]); work still running (or
//! still waiting for a slot) then is answered 503 with a one-line message. At the deadline, or
//! when the client goes away, the work's cancellation flag is set: work that checks it (the
//! simulator, every 1,024 steps) stops and frees its slot at once; the rest is kept to a fraction
//! of a second by parameter caps ([`MAX_MOE_EXPERT_POINTS`],
//! [`MAX_POINTS`](crate::pages::parts::MAX_POINTS)) and holds its slot until it ends, so
//! abandoned work still counts against the pool.
//!
//! **Other sites.** Any web page the user visits can send a GET to `http://127.0.0.1:…` (an
//! image, a form, a link it follows). Heavy work is not run for those: a request is answered 403
//! before it takes a slot ([`from_other_site`]) when
//!
//! - the browser marks it as coming from another site (`Sec-Fetch-Site: cross-site` or
//!   `same-site`, another port or name of this machine);
//! - its `Origin` is not this server's: scheme `http`, and the host and port of the `Host` header
//!   the request was sent to (`https://…`, another port, `null` are refused);
//! - a browser without Fetch Metadata says where it comes from by its `Referer` alone (an
//!   `<img>` on another site's page), and that `Referer` is not an `http://` URL on the `Host`
//!   (unless `Sec-Fetch-Site` says `same-origin` or `none`, or the `Origin` is this server's);
//! - any of `Sec-Fetch-Site`, `Origin` or `Referer` comes more than once: which one counts would
//!   be a guess, and a browser never sends two.
//!
//! The explorer's own links, forms and script are `same-origin` (and send no `Referer`: every
//! answer says `Referrer-Policy: no-referrer`), a typed or bookmarked URL is `none`, and clients
//! that send none of these headers (curl, scripts) are served as before.
//!
//! [`PageInfo::heavy`]: crate::pages::PageInfo::heavy
//! [`Limits::heavy_workers`]: crate::Limits::heavy_workers
//! [`Limits::request_timeout`]: crate::Limits::request_timeout

use crate::error::AppError;
use crate::Limits;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::Router;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Most expert × batch-size evaluations one MoE answer computes (experts touched is a sum over
/// the E experts at every batch size): 2²² = 4,194,304, a fraction of a second. With 65,536
/// experts that is 64 batch sizes; with 2,048 experts or fewer the 2,048-point limit binds first.
pub const MAX_MOE_EXPERT_POINTS: u64 = 1 << 22;

/// A request's deadline and the server's heavy-work pool (a request extension set by
/// [`layer`]).
#[derive(Debug, Clone)]
pub(crate) struct Work {
    deadline: Instant,
    timeout: Duration,
    pool: Arc<Semaphore>,
    /// The request came from another site's page (module docs).
    cross_site: bool,
    /// Slots for reading request bodies ([`Limits::upload_slots`]).
    uploads: Arc<Semaphore>,
    /// Their number.
    upload_slots: usize,
    /// The body's deadline after the request began ([`Limits::body_read_timeout`]).
    body_timeout: Duration,
}

/// Sets the flag when dropped: the request was answered, timed out, or abandoned by its client.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Work {
    /// Run `f` on a thread of its own at a lower scheduling priority ([`HEAVY_NICENESS`]) once
    /// a pool slot is free: its result, or at the deadline a 503. `f` gets the request's
    /// cancellation flag, set at the deadline or when the client goes away: work that checks it
    /// stops and frees its slot; other work finishes in the background, holding its slot. A
    /// request from another site's page is refused (403).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&AtomicBool) -> T + Send + 'static,
    ) -> Result<T, AppError> {
        if self.cross_site {
            return Err(cross_site());
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let job = async {
            let permit = self.pool.clone().acquire_owned().await.map_err(|_| too_slow(self.timeout))?;
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("llm-ledger-heavy".into())
                .spawn(move || {
                    let _slot = permit;
                    lower_priority();
                    let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&cancel))));
                })
                .map_err(|e| cannot_start(&e))?;
            match rx.await {
                Ok(Ok(v)) => Ok(v),
                // A panic is a bug: let the panic guard answer it as one.
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(_) => Err(too_slow(self.timeout)),
            }
        };
        tokio::time::timeout_at(self.deadline, job).await.unwrap_or_else(|_| Err(too_slow(self.timeout)))
    }
}

impl Work {
    /// A whole request body of at most `max_bytes`, however it is sent (with a Content-Length,
    /// or chunked without one), on one of the upload slots:
    ///
    /// - a `Content-Length` over the limit is 413 before a byte is read (so `Expect:
    ///   100-continue` gets no `100 Continue`), and so is a chunked body the moment it passes it;
    /// - with every upload slot taken, 503 at once;
    /// - a body not complete [`Limits::body_read_timeout`] after the request began (or by its
    ///   deadline) is 408; one that breaks off is 400.
    ///
    /// Every handler that reads a body reads it here; the errors close the connection.
    pub(crate) async fn read_body(
        &self,
        headers: &HeaderMap,
        body: axum::body::Body,
        max_bytes: usize,
        too_large: impl Fn() -> AppError,
    ) -> Result<axum::body::Bytes, AppError> {
        use http_body_util::BodyExt;
        let closing = |e: AppError| e.closing();
        let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > max_bytes as u64) {
            return Err(closing(too_large()));
        }
        let Ok(_slot) = self.uploads.clone().try_acquire_owned() else {
            return Err(closing(
                AppError::bad_request(
                    format!(
                        "{} uploads are being read already, the explorer's limit: try again in a moment",
                        self.upload_slots
                    ),
                    None,
                )
                .with_status(StatusCode::SERVICE_UNAVAILABLE),
            ));
        };
        let started = self.deadline - self.timeout;
        let deadline = (started + self.body_timeout).min(self.deadline);
        let read = async {
            let mut body = body;
            let mut buf = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    if is_length_limit(&e) {
                        too_large()
                    } else {
                        AppError::bad_request(format!("cannot read the request body: {e}"), None)
                    }
                })?;
                if let Ok(data) = frame.into_data() {
                    if buf.len() + data.len() > max_bytes {
                        return Err(too_large());
                    }
                    buf.extend_from_slice(&data);
                }
            }
            Ok(axum::body::Bytes::from(buf))
        };
        match tokio::time::timeout_at(deadline, read).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(e)) => Err(closing(e)),
            Err(_) => Err(closing(
                AppError::bad_request(
                    format!(
                        "the request body did not arrive within {} s, the explorer's limit for an upload",
                        (deadline - started).as_secs_f64()
                    ),
                    None,
                )
                .with_status(StatusCode::REQUEST_TIMEOUT),
            )),
        }
    }
}

/// Whether `e` (or an error it wraps) is a body-size limit's.
fn is_length_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Niceness of the heavy-work threads (Linux): the scheduler gives a thread at niceness 10 about
/// a tenth of the CPU time of one at 0 when both want it, so the threads that accept connections
/// and answer the other requests run first, and the heavy work takes what is left.
pub(crate) const HEAVY_NICENESS: i32 = 10;

/// Lower the calling thread's scheduling priority to [`HEAVY_NICENESS`]. On Linux a thread has
/// a niceness of its own, and `setpriority` on its thread id changes that thread alone; a thread
/// cannot raise it back without privilege, so each piece of heavy work runs on a thread of its
/// own that ends with it. Elsewhere `setpriority` would change the whole process: nothing is done.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // Failing leaves the thread at the process's priority: the work is still done.
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), HEAVY_NICENESS);
    }
}

/// The error of work that could not be given a thread (503).
fn cannot_start(e: &std::io::Error) -> AppError {
    AppError::bad_request(format!("cannot start the work on a thread of its own: {e}; try again in a moment"), None)
        .with_status(StatusCode::SERVICE_UNAVAILABLE)
}

/// The error of heavy work asked for by another site's page (403).
fn cross_site() -> AppError {
    AppError::bad_request(
        "this page computes on request and is not answered to other sites' pages: open it from the explorer, or type or paste its address",
        None,
    )
    .with_status(StatusCode::FORBIDDEN)
}

/// Whether the request comes from another site's page (the rules are the module's): a
/// `Sec-Fetch-Site` of `cross-site` or `same-site`; an `Origin` that is not `http://` and the
/// request's `Host`; failing both, a `Referer` that is not an `http://` URL on the `Host`; or any
/// of these headers more than once.
pub(crate) fn from_other_site(headers: &HeaderMap) -> bool {
    let (Some(fetch_site), Some(origin), Some(referer)) =
        (only_one(headers, "sec-fetch-site"), only_one(headers, "origin"), only_one(headers, "referer"))
    else {
        return true;
    };
    let fetch_site = fetch_site.map(|v| v.as_bytes().to_ascii_lowercase());
    if fetch_site.as_deref().is_some_and(|v| v == b"cross-site" || v == b"same-site") {
        return true;
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if let Some(origin) = origin {
        // The browser names the page that sent the request: this server's, or not.
        return !is_this_server(origin, host, false);
    }
    if fetch_site.as_deref().is_some_and(|v| v == b"same-origin" || v == b"none") {
        return false;
    }
    referer.is_some_and(|r| !is_this_server(r, host, true))
}

/// The value of a header that may come at most once: `Some(None)` when absent, `None` when
/// repeated.
fn only_one<'a>(headers: &'a HeaderMap, name: &str) -> Option<Option<&'a HeaderValue>> {
    let mut all = headers.get_all(name).iter();
    match (all.next(), all.next()) {
        (first, None) => Some(first),
        _ => None,
    }
}

/// Whether `url` (an `Origin`, or with `with_path` a `Referer`) is `http://` and the request's
/// `host`, its port included (`:80` or none alike). The explorer is served over plain HTTP only,
/// so another scheme is another origin; without a `Host` nothing is this server.
fn is_this_server(url: &HeaderValue, host: Option<&str>, with_path: bool) -> bool {
    let (Ok(url), Some(host)) = (url.to_str(), host) else { return false };
    let Some(rest) = url.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &url[7..]) else {
        return false;
    };
    let authority = if with_path {
        rest.split(['/', '?', '#']).next().unwrap_or("")
    } else {
        rest.strip_suffix('/').unwrap_or(rest)
    };
    let canonical = |a: &str| {
        let a = a.to_ascii_lowercase();
        match a.strip_suffix(":80") {
            Some(without) => without.to_string(),
            None => a,
        }
    };
    !authority.is_empty() && canonical(authority) == canonical(host)
}

/// The error of a request not answered by its deadline (503).
pub(crate) fn too_slow(timeout: Duration) -> AppError {
    AppError::bad_request(
        format!(
            "no answer within {} s, the explorer's limit per request: ask for fewer points (a shorter range, fewer experts) or use the CLI",
            timeout.as_secs_f64()
        ),
        None,
    )
    .with_status(StatusCode::SERVICE_UNAVAILABLE)
}

/// Give every request a deadline and the heavy-work pool ([`Work`]), and answer 503 (one line)
/// when the request is not answered by the deadline — a handler that runs its work through
/// [`Work::run`] answers its own 503 first, in its own format.
pub(crate) fn layer<S: Clone + Send + Sync + 'static>(router: Router<S>, limits: &Limits) -> Router<S> {
    let pool = Arc::new(Semaphore::new(limits.heavy_workers.max(1)));
    let upload_slots = limits.upload_slots.clamp(1, Semaphore::MAX_PERMITS);
    let uploads = Arc::new(Semaphore::new(upload_slots));
    let (timeout, body_timeout) = (limits.request_timeout, limits.body_read_timeout);
    router.layer(axum::middleware::from_fn(move |mut req: Request, next: Next| {
        let work = Work {
            deadline: Instant::now() + timeout,
            timeout,
            pool: pool.clone(),
            cross_site: from_other_site(req.headers()),
            uploads: uploads.clone(),
            upload_slots,
            body_timeout,
        };
        async move {
            let deadline = work.deadline;
            req.extensions_mut().insert(work);
            match tokio::time::timeout_at(deadline, next.run(req)).await {
                Ok(res) => res,
                Err(_) => {
                    let e = too_slow(timeout);
                    (e.status, e.message).into_response()
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(timeout: Duration, pool: &Arc<Semaphore>) -> Work {
        Work {
            deadline: Instant::now() + timeout,
            timeout,
            pool: pool.clone(),
            cross_site: false,
            uploads: Arc::new(Semaphore::new(1)),
            upload_slots: 1,
            body_timeout: timeout,
        }
    }

    /// Work that checks its flag is stopped at the deadline and gives its slot back: the next
    /// request gets the slot instead of waiting for abandoned work.
    #[tokio::test]
    async fn work_past_its_deadline_is_cancelled_and_frees_its_slot() {
        let pool = Arc::new(Semaphore::new(1));
        let answer = work(Duration::from_millis(50), &pool)
            .run(|cancel| {
                // Runs until cancelled (a minute at most, so a missing cancel fails, not hangs).
                let end = std::time::Instant::now() + Duration::from_secs(60);
                while !cancel.load(Ordering::Relaxed) && std::time::Instant::now() < end {
                    std::thread::sleep(Duration::from_millis(1));
                }
                cancel.load(Ordering::Relaxed)
            })
            .await;
        assert_eq!(answer.unwrap_err().status, StatusCode::SERVICE_UNAVAILABLE);
        let slot = tokio::time::timeout(Duration::from_secs(30), pool.acquire()).await;
        assert!(slot.is_ok(), "the slot is still held by abandoned work");
        drop(slot);
        // Work that ends in time is not cancelled.
        let done = work(Duration::from_secs(30), &pool).run(|cancel| cancel.load(Ordering::Relaxed)).await;
        assert_eq!(done, Ok(false));
    }

    #[test]
    fn requests_from_other_sites_are_told_apart() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(*k, v.parse().unwrap());
            }
            h
        };
        const HOST: (&str, &str) = ("host", "127.0.0.1:8765");
        for other in [
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site")],
            &[HOST, ("origin", "http://evil.example")],
            &[HOST, ("origin", "http://127.0.0.1:9999")],
            &[HOST, ("origin", "null")],
            // The scheme counts: the explorer is served over http only.
            &[HOST, ("origin", "https://127.0.0.1:8765")],
            &[HOST, ("origin", "ftp://127.0.0.1:8765")],
            &[HOST, ("origin", "127.0.0.1:8765")],
            &[HOST, ("origin", "http://")],
            &[("origin", "http://127.0.0.1:8765")],
            // A browser without Fetch Metadata: the Referer alone says where it comes from.
            &[HOST, ("referer", "http://evil.example/page.html")],
            &[HOST, ("referer", "https://127.0.0.1:8765/ledger")],
            &[HOST, ("referer", "http://127.0.0.1:9999/")],
            &[HOST, ("referer", "http://127.0.0.1:8765.evil.example/")],
            &[HOST, ("referer", "http://user@127.0.0.1:8765/")],
            &[HOST, ("referer", "/ledger")],
            &[HOST, ("sec-fetch-site", "unheard-of"), ("referer", "http://evil.example/")],
            &[("referer", "http://127.0.0.1:8765/")],
            // Twice, whatever the first says.
            &[("sec-fetch-site", "same-origin"), ("sec-fetch-site", "cross-site")],
            &[("sec-fetch-site", "same-origin"), ("sec-fetch-site", "same-origin")],
            &[HOST, ("origin", "http://127.0.0.1:8765"), ("origin", "http://evil.example")],
            &[HOST, ("origin", "http://127.0.0.1:8765"), ("origin", "http://127.0.0.1:8765")],
            &[HOST, ("referer", "http://127.0.0.1:8765/"), ("referer", "http://evil.example/")],
            // An Origin of this server does not excuse a cross-site fetch.
            &[HOST, ("origin", "http://127.0.0.1:8765"), ("sec-fetch-site", "cross-site")],
        ] {
            assert!(from_other_site(&headers(other)), "{other:?}");
        }
        for own in [
            &[][..],
            &[HOST],
            &[("sec-fetch-site", "same-origin")],
            &[("sec-fetch-site", "none")],
            &[HOST, ("origin", "http://127.0.0.1:8765")],
            &[HOST, ("origin", "http://127.0.0.1:8765/")],
            &[("host", "localhost"), ("origin", "http://LOCALHOST")],
            &[("host", "localhost"), ("origin", "HTTP://localhost:80")],
            &[("host", "[::1]:8765"), ("origin", "http://[::1]:8765")],
            &[HOST, ("referer", "http://127.0.0.1:8765/ledger?batch=8#x")],
            &[HOST, ("referer", "http://127.0.0.1:8765")],
            // Fetch Metadata or the Origin outrank the Referer.
            &[HOST, ("sec-fetch-site", "same-origin"), ("referer", "http://evil.example/")],
            &[HOST, ("origin", "http://127.0.0.1:8765"), ("referer", "http://evil.example/")],
        ] {
            assert!(!from_other_site(&headers(own)), "{own:?}");
        }
    }
}
