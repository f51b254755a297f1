//! The routes of the pages of the registry ([`crate::pages::PAGES`]): each page rendered (on the
//! heavy-work pool when its work grows with its parameters) inside the shared layout
//! ([`crate::html::layout`]), or an error page.

use crate::error::AppError;
use crate::html;
use crate::pages::{home, PageCtx, PageInfo, PAGES};
use crate::query::PageQuery;
use crate::work::Work;
use crate::AppState;
use axum::extract::{Extension, RawQuery, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::Markup;
use std::sync::Arc;

/// A route per page.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for page in PAGES {
        router = router.route(
            &page.path(),
            get(move |State(state): State<Arc<AppState>>, Extension(work): Extension<Work>, RawQuery(q): RawQuery| {
                answer(state, work, page, q)
            }),
        );
    }
    router.fallback(|State(state): State<Arc<AppState>>| async move {
        let e = AppError::bad_request("no such page", None).with_status(axum::http::StatusCode::NOT_FOUND);
        error_page(&state, home(), &PageQuery::default(), e)
    })
}

/// A page: rendered here, or on the heavy-work pool when its work grows with its parameters
/// (then a 503 page past the request's deadline).
async fn answer(state: Arc<AppState>, work: Work, page: &'static PageInfo, q: Option<String>) -> Response {
    if !page.heavy {
        return render(&state, page, q.as_deref(), &std::sync::atomic::AtomicBool::new(false));
    }
    let (st, raw) = (state.clone(), q.clone());
    match work.run(move |cancel| render(&st, page, raw.as_deref(), cancel)).await {
        Ok(res) => res,
        Err(e) => error_page(&state, page, &PageQuery::parse(q.as_deref(), page.keys).unwrap_or_default(), e),
    }
}

fn render(
    state: &AppState,
    page: &'static PageInfo,
    raw_query: Option<&str>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Response {
    let (query, body) = match PageQuery::parse(raw_query, page.keys) {
        Ok(q) => {
            let body = (page.render)(&PageCtx { state, query: &q, page, cancel });
            (q, body)
        }
        Err(e) => (PageQuery::default(), Err(e)),
    };
    respond(state, page, &query, body)
}

/// A page showing `error` where its body would be (status from the error).
pub(crate) fn error_page(state: &AppState, page: &'static PageInfo, query: &PageQuery, error: AppError) -> Response {
    respond(state, page, query, Err(error))
}

fn respond(state: &AppState, page: &'static PageInfo, query: &PageQuery, body: Result<Markup, AppError>) -> Response {
    let status = body.as_ref().err().map(|e| e.status).unwrap_or_default();
    let close = body.as_ref().err().is_some_and(|e| e.close);
    let markup = html::layout(state, page, query, body);
    let mut res = (status, [(header::CACHE_CONTROL, "no-cache")], Html(markup.into_string())).into_response();
    if close {
        res.headers_mut().insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    }
    res
}
