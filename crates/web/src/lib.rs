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
mod assets;
mod error;
mod form;
mod html;
pub mod pages;
mod query;
mod security;
mod server;
mod upload;

pub use error::AppError;
pub use server::{serve, ServeOptions};

use axum::Router;
use llm_ledger_core::Catalog;
use std::sync::Arc;

/// Read-only state shared by all requests.
#[derive(Debug, Clone)]
pub struct AppState {
    /// GPUs and model presets (built-in plus any files given to `serve`).
    pub catalog: Catalog,
    /// Answer only requests whose `Host` is a loopback name (`localhost`, `127.0.0.1`, `[::1]`),
    /// the guard against DNS rebinding when the server listens on loopback (the default).
    pub loopback_hosts_only: bool,
}

impl AppState {
    /// The built-in catalogue.
    pub fn builtin() -> Self {
        AppState { catalog: Catalog::builtin(), loopback_hosts_only: true }
    }
}

/// The whole explorer as an axum router: pages, JSON endpoints, assets, and the security,
/// size-limit and timeout layers.
pub fn app(state: Arc<AppState>) -> Router {
    let router = pages::routes().merge(api::routes()).merge(upload::routes()).merge(assets::routes());
    security::layers(router, state.clone()).with_state(state)
}
