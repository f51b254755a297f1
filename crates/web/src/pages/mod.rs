//! The pages. Each is an entry in [`PAGES`] (its path, its navigation label, one line on what it
//! shows) and a render function from the request to the page's body; the shared layout adds the
//! navigation, the scenario controls and any error. A page that is still to come has no render
//! function: it is listed in the navigation, marked "coming", and answers with a placeholder.
//!
//! Adding a page: write `pages/<name>.rs` with `pub fn render(ctx: &PageCtx) -> Result<Markup,
//! AppError>`, and add its [`PageInfo`] to [`PAGES`] (or give an existing "coming" entry its
//! render function). Routing, navigation and the controls follow from the entry.

mod coming;
mod gpus;
mod home;
mod ledger;
mod models;
pub(crate) mod parts;

use crate::error::AppError;
use crate::html;
use crate::query::{PageQuery, Resolved};
use crate::AppState;
use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use llm_ledger_core::Catalog;
use maud::Markup;
use std::borrow::Cow;
use std::sync::Arc;

/// What a page needs to render: the app state, its query, and itself.
pub struct PageCtx<'a> {
    /// Shared state.
    pub state: &'a AppState,
    /// The request's query.
    pub query: &'a PageQuery,
    /// The page being rendered.
    pub page: &'static PageInfo,
}

impl PageCtx<'_> {
    /// The scenario the query describes.
    pub fn resolve(&self) -> Result<Resolved<'_>, AppError> {
        self.query.resolve(&self.state.catalog)
    }

    /// The catalogue, with the uploaded model if there is one.
    pub fn catalog(&self) -> Result<Cow<'_, Catalog>, AppError> {
        self.query.catalog(&self.state.catalog)
    }
}

/// A page's body.
pub type Render = fn(&PageCtx) -> Result<Markup, AppError>;

/// Whether a page is there yet.
#[derive(Clone, Copy)]
pub enum PageKind {
    /// Rendered by its function; `controls` says whether the scenario form is shown above it.
    Ready {
        /// The body.
        render: Render,
        /// Show the scenario controls.
        controls: bool,
    },
    /// Listed and linked, with a placeholder, until the issue that builds its data lands.
    Coming {
        /// The project issue that brings it.
        issue: u32,
        /// What it will show.
        plan: &'static str,
    },
}

/// One page of the explorer.
pub struct PageInfo {
    /// URL path segment (`""` for the overview at `/`).
    pub slug: &'static str,
    /// Navigation label and heading.
    pub title: &'static str,
    /// One line on what the page shows.
    pub summary: &'static str,
    /// Query keys of the page's own (a zoom path, a selected GEMM …), beside the scenario's.
    /// The controls keep them; links to other pages drop them.
    pub keys: &'static [&'static str],
    /// Ready or coming.
    pub kind: PageKind,
}

impl PageInfo {
    /// The page's path.
    pub fn path(&self) -> String {
        format!("/{}", self.slug)
    }

    /// Whether the page is built.
    pub fn is_ready(&self) -> bool {
        matches!(self.kind, PageKind::Ready { .. })
    }
}

/// Every page, in navigation order.
pub static PAGES: &[PageInfo] = &[
    PageInfo {
        slug: "",
        title: "Overview",
        summary: "The scenario at a glance: step time, throughput, what bounds it, and where to look next.",
        keys: &[],
        kind: PageKind::Ready { render: home::render, controls: true },
    },
    PageInfo {
        slug: "powers-of-ten",
        title: "Powers of ten",
        summary: "One forward pass at four magnifications — model, layer, operator, GEMM tile — each built from the level below.",
        keys: &[],
        kind: PageKind::Coming {
            issue: 4,
            plan: "The zoom tree: a level's children with FLOPs, bytes, intensity, time and a share bar; click a child to descend, a breadcrumb to go back up, a \"Does it add up?\" panel, and seed 000's four experiments as one-click links.",
        },
    },
    PageInfo {
        slug: "ledger",
        title: "Ledger",
        summary: "Per-operator FLOPs, bytes, intensity and roofline time, with the roofline chart.",
        keys: &[],
        kind: PageKind::Ready { render: ledger::render, controls: true },
    },
    PageInfo {
        slug: "batching",
        title: "Batching",
        summary: "Step time and tokens per second against batch size, with the memory wall and the KV crossover.",
        keys: &[],
        kind: PageKind::Coming {
            issue: 3,
            plan: "The batch sweep as a curve (step time and tokens/s against batch) with the memory wall and the KV crossover drawn on it.",
        },
    },
    PageInfo {
        slug: "kv-cache",
        title: "KV cache",
        summary: "The memory decode spends its time reading: cache size per token, per sequence, and what fits.",
        keys: &[],
        kind: PageKind::Coming {
            issue: 3,
            plan: "KV-cache bytes per token and per sequence, memory left after the weights, and the largest batch that fits.",
        },
    },
    PageInfo {
        slug: "cost",
        title: "Cost",
        summary: "All of it in dollars: cost per million tokens from the step time and the GPU's hourly price.",
        keys: &[],
        kind: PageKind::Coming { issue: 3, plan: "Dollars per million tokens against batch and context, from the step time and the GPU-hour price." },
    },
    PageInfo {
        slug: "gemm-tiling",
        title: "GEMM tiling",
        summary: "One GEMM's tile grid drawn to scale: tiles coloured by wave, padding shaded, re-read traffic counted.",
        keys: &[],
        kind: PageKind::Coming {
            issue: 4,
            plan: "The tile grid of one GEMM drawn to scale, tiles coloured by wave, padding shaded; tile shapes, wave quantisation and SM occupancy.",
        },
    },
    PageInfo {
        slug: "moe",
        title: "Mixture of experts",
        summary: "Experts touched per step against batch, and what that does to the weight bytes.",
        keys: &[],
        kind: PageKind::Coming {
            issue: 3,
            plan: "Expected experts touched against batch size (uniform and skewed routing) and the weight bytes each step reads.",
        },
    },
    PageInfo {
        slug: "models",
        title: "Models",
        summary: "The model presets (and an uploaded config.json) with their computed parameter counts.",
        keys: &[],
        kind: PageKind::Ready { render: models::render, controls: false },
    },
    PageInfo {
        slug: "gpus",
        title: "GPUs",
        summary: "The GPU catalogue: peaks per math format, bandwidth, capacity and ridge points.",
        keys: &[],
        kind: PageKind::Ready { render: gpus::render, controls: false },
    },
];

/// The page at `slug`.
pub fn find(slug: &str) -> Option<&'static PageInfo> {
    PAGES.iter().find(|p| p.slug == slug)
}

/// The overview.
pub fn home() -> &'static PageInfo {
    &PAGES[0]
}

/// A route per page.
pub fn routes() -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for page in PAGES {
        router = router.route(
            &page.path(),
            get(move |State(state): State<Arc<AppState>>, RawQuery(q): RawQuery| async move {
                render(&state, page, q.as_deref())
            }),
        );
    }
    router.fallback(|State(state): State<Arc<AppState>>| async move {
        let e = AppError::bad_request("no such page", None).with_status(axum::http::StatusCode::NOT_FOUND);
        error_page(&state, home(), &PageQuery::default(), e)
    })
}

fn render(state: &AppState, page: &'static PageInfo, raw_query: Option<&str>) -> Response {
    let (query, body) = match PageQuery::parse(raw_query, page.keys) {
        Ok(q) => {
            let body = {
                let ctx = PageCtx { state, query: &q, page };
                match page.kind {
                    PageKind::Ready { render, .. } => render(&ctx),
                    PageKind::Coming { issue, plan } => {
                        // The scenario is still checked, so a coming page refuses what others refuse.
                        q.resolve(&state.catalog).map(|_| coming::render(page, issue, plan, &q))
                    }
                }
            };
            (q, body)
        }
        Err(e) => (PageQuery::default(), Err(e)),
    };
    respond(state, page, &query, body)
}

/// A page showing `error` where its body would be (status from the error).
pub fn error_page(state: &AppState, page: &'static PageInfo, query: &PageQuery, error: AppError) -> Response {
    respond(state, page, query, Err(error))
}

fn respond(state: &AppState, page: &'static PageInfo, query: &PageQuery, body: Result<Markup, AppError>) -> Response {
    let status = body.as_ref().err().map(|e| e.status).unwrap_or_default();
    let markup = html::layout(state, page, query, body);
    (status, [(header::CACHE_CONTROL, "no-cache")], Html(markup.into_string())).into_response()
}
