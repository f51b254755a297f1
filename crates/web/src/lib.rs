//! # llm-ledger explorer
//!
//! A local web page for the ledger, served by `llm-ledger serve` from the same binary: no files
//! are read at run time (CSS and JavaScript are embedded), nothing is fetched from the network,
//! and nothing a request says reaches the file system.
//!
//! - **State lives in the URL.** Every page takes the scenario as query parameters with the CLI's
//!   flag names (`/ledger?model=llama-3-8b&batch=64`), parsed by the core's
//!   [`ScenarioRequest`](llm_ledger_core::ScenarioRequest) exactly as the CLI's flags are, so both
//!   accept the same values and fail with the same one-line messages (here: status 400 and the
//!   message on the page). An uploaded `config.json` travels in the URL too (`config=`, base64url),
//!   so a page with an uploaded model can be bookmarked; the server keeps nothing per user.
//! - **Pages** are server-rendered HTML ([`pages`]); a small script swaps the page body without a
//!   full reload and keeps the back button working, and with JavaScript off the same controls
//!   are a plain GET form.
//! - **JSON** endpoints return the CLI's documents byte for byte (`/api/ledger` is
//!   `llm-ledger ledger --format json`).
//!
//! ```
//! use llm_ledger_web::{app, AppState};
//! use std::sync::Arc;
//! let router = app(Arc::new(AppState::builtin()));
//! # let _ = router;
//! ```

mod api;
mod api_deploy;
mod assets;
mod cache;
mod error;
mod fit;
mod form;
mod html;
mod page_routes;
pub mod pages;
mod query;
mod security;
mod server;
mod upload;
mod work;

pub use error::AppError;
pub use server::{serve, serve_listener, ServeOptions};
pub use work::MAX_MOE_EXPERT_POINTS;

use axum::Router;
use llm_ledger_core::Catalog;
use std::sync::Arc;
use std::time::Duration;

/// How long a server waits for clients, how many it holds, and how much work one request may
/// take. The defaults ([`Limits::default`]) are the documented ones (docs/explorer.md); tests
/// shorten them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A request head (request line and headers) must be complete this long after its first
    /// byte arrives, or the connection is closed (default 10 s).
    pub header_read_timeout: Duration,
    /// A connection with no request in progress and no byte received for this long is closed
    /// (keep-alive idle; default 30 s).
    pub idle_timeout: Duration,
    /// Open connections at most (default 256). At the limit a new connection closes the one
    /// that has waited longest without a request in progress; if every connection is busy
    /// with a request, it waits for one to finish.
    pub max_connections: usize,
    /// Requests whose work grows with their parameters (sweeps, MoE, tiling, zoom, cost) run on
    /// at most this many threads at once, off the threads that accept and answer requests and
    /// (on Linux) at a lower scheduling priority than those (default: the number of CPU cores).
    pub heavy_workers: usize,
    /// Every request is answered within this time (default 10 s): work still running at the
    /// deadline is answered 503 with a one-line message.
    pub request_timeout: Duration,
    /// A request body (an upload) must have arrived this long after its request began, or the
    /// request is answered 408 and the connection closed (default 5 s; at most the request
    /// deadline).
    pub body_read_timeout: Duration,
    /// Request bodies read at once, at most (default 16), apart from the heavy-work pool: one
    /// more is answered 503 at once and its connection closed, so stalled uploads hold at most
    /// this many connections.
    pub upload_slots: usize,
    /// Bytes of recent answers kept to answer the same request again (default 16 MiB; 0 keeps
    /// none): an answer is a function of its URI and `Accept-Encoding`, so a page asked for
    /// again (the back button, a slider dragged back) is sent without being made again.
    pub response_cache_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_connections: 256,
            heavy_workers: std::thread::available_parallelism().map_or(4, |n| n.get()),
            request_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(5),
            upload_slots: 16,
            response_cache_bytes: 16 << 20,
        }
    }
}

/// Read-only state shared by all requests.
#[derive(Debug, Clone)]
pub struct AppState {
    /// GPUs and model presets (built-in plus any files given to `serve`).
    pub catalog: Catalog,
    /// Answer only requests whose `Host` is a loopback name (`localhost`, `127.0.0.1`, `[::1]`),
    /// the guard against DNS rebinding when the server listens on loopback (the default).
    pub loopback_hosts_only: bool,
    /// Timeouts, the connection limit and the heavy-work pool's size.
    pub limits: Limits,
}

impl AppState {
    /// `catalog` with the default limits, answering loopback host names only.
    pub fn new(catalog: Catalog) -> Self {
        AppState { catalog, loopback_hosts_only: true, limits: Limits::default() }
    }

    /// The built-in catalogue.
    pub fn builtin() -> Self {
        AppState::new(Catalog::builtin())
    }
}

/// The whole explorer as an axum router: pages, JSON endpoints, assets, and the security and
/// deadline layers (bodies are limited where they are read). Each call has its own heavy-work pool
/// ([`Limits::heavy_workers`] threads).
pub fn app(state: Arc<AppState>) -> Router {
    let router = page_routes::routes()
        .merge(api::routes())
        .merge(api_deploy::routes())
        .merge(upload::routes())
        .merge(assets::routes());
    security::layers(router, state.clone()).with_state(state)
}
