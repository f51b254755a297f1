//! Work off the async threads, and every request's deadline.
//!
//! The threads that accept connections and answer requests never run a computation whose cost
//! grows with the request's parameters: those pages and endpoints ([`PageInfo::heavy`],
//! the API's sweeps, MoE, tiling, zoom, cost and latency) run on a blocking thread once one of
//! [`Limits::heavy_workers`] slots is free, so a trivial page answers in milliseconds while heavy
//! ones run. Each request has a deadline ([`Limits::request_timeout`]); work still running (or
//! still waiting for a slot) then is answered 503 with a one-line message, and the slot is held
//! until the computation really ends, so abandoned work still counts against the pool. Parameter
//! caps ([`MAX_MOE_EXPERT_POINTS`], [`MAX_POINTS`](crate::pages::parts::MAX_POINTS)) keep any one
//! computation to a fraction of a second.
//!
//! [`PageInfo::heavy`]: crate::pages::PageInfo::heavy
//! [`Limits::heavy_workers`]: crate::Limits::heavy_workers
//! [`Limits::request_timeout`]: crate::Limits::request_timeout

use crate::error::AppError;
use crate::Limits;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::Router;
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
pub struct Work {
    deadline: Instant,
    timeout: Duration,
    pool: Arc<Semaphore>,
}

impl Work {
    /// Run `f` on a blocking thread once a pool slot is free: its result, or at the deadline a
    /// 503 (the computation finishes in the background, holding its slot).
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, AppError> {
        let job = async {
            let permit = self.pool.clone().acquire_owned().await.map_err(|_| too_slow(self.timeout))?;
            let joined = tokio::task::spawn_blocking(move || {
                let _slot = permit;
                f()
            })
            .await;
            match joined {
                Ok(v) => Ok(v),
                // A panic is a bug: let the panic guard answer it as one.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => Err(too_slow(self.timeout)),
            }
        };
        tokio::time::timeout_at(self.deadline, job).await.unwrap_or_else(|_| Err(too_slow(self.timeout)))
    }
}

/// The error of a request not answered by its deadline (503).
pub fn too_slow(timeout: Duration) -> AppError {
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
pub fn layer<S: Clone + Send + Sync + 'static>(router: Router<S>, limits: &Limits) -> Router<S> {
    let pool = Arc::new(Semaphore::new(limits.heavy_workers.max(1)));
    let timeout = limits.request_timeout;
    router.layer(axum::middleware::from_fn(move |mut req: Request, next: Next| {
        let work = Work { deadline: Instant::now() + timeout, timeout, pool: pool.clone() };
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
