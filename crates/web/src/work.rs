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
//! image, a form, a link it follows). Heavy work is not run for those: a request that the browser
//! marks as coming from another site (`Sec-Fetch-Site: cross-site` or `same-site`), or whose
//! `Origin` is not the `Host` it was sent to, is answered 403 before it takes a slot. The
//! explorer's own links, forms and script are `same-origin`, a typed or bookmarked URL is `none`,
//! and clients that send neither header (curl, scripts) are served as before.
//!
//! [`PageInfo::heavy`]: crate::pages::PageInfo::heavy
//! [`Limits::heavy_workers`]: crate::Limits::heavy_workers
//! [`Limits::request_timeout`]: crate::Limits::request_timeout

use crate::error::AppError;
use crate::Limits;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::{header, HeaderMap};
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

/// Whether the browser says the request comes from another site's page: `Sec-Fetch-Site` of
/// `cross-site` or `same-site` (another port or name of this machine), or an `Origin` whose
/// host and port are not the request's `Host`.
pub(crate) fn from_other_site(headers: &HeaderMap) -> bool {
    let fetch_site = headers.get("sec-fetch-site").map(|v| v.as_bytes().to_ascii_lowercase());
    if fetch_site.is_some_and(|v| v == b"cross-site" || v == b"same-site") {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return false };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_ascii_lowercase);
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest.trim_end_matches('/').to_ascii_lowercase());
    match (origin_host, host) {
        (Some(o), Some(h)) => o != h,
        // `Origin: null` (a sandboxed frame, a file) or one that is not a URL.
        _ => true,
    }
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
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        for other in [
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site")],
            &[("host", "127.0.0.1:8765"), ("origin", "http://evil.example")],
            &[("host", "127.0.0.1:8765"), ("origin", "http://127.0.0.1:9999")],
            &[("host", "127.0.0.1:8765"), ("origin", "null")],
        ] {
            assert!(from_other_site(&headers(other)), "{other:?}");
        }
        for own in [
            &[][..],
            &[("sec-fetch-site", "same-origin")],
            &[("sec-fetch-site", "none")],
            &[("host", "127.0.0.1:8765"), ("origin", "http://127.0.0.1:8765")],
            &[("host", "localhost"), ("origin", "http://LOCALHOST")],
        ] {
            assert!(!from_other_site(&headers(own)), "{own:?}");
        }
    }
}
