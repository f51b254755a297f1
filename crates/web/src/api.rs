//! Machine-readable endpoints. Each returns exactly what the CLI prints for the same inputs:
//!
//! | endpoint | CLI |
//! |---|---|
//! | `GET /api/ledger?<scenario>[&format=json\|csv\|md\|table]` | `llm-ledger ledger <flags> --format …` |
//! | `POST /api/ledger?<scenario>` with a `config.json` body | `llm-ledger ledger --model config.json …` |
//! | `GET /api/models[?format=…]` | `llm-ledger models --format …` |
//! | `GET /api/gpus[?format=…]` | `llm-ledger gpus --format …` |
//! | `GET /plot/roofline.svg?<scenario>` | `llm-ledger ledger <flags> --plot FILE.svg` |
//!
//! Errors are `{"error": {"message", "field"}}` with status 400 (413/414 for oversized input).

use crate::error::AppError;
use crate::query::PageQuery;
use crate::upload::{self, MAX_BODY_BYTES};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use llm_ledger_core::Ledger;
use llm_ledger_report::catalog::{GpuList, ModelList};
use llm_ledger_report::plot::{self, PlotSize, Roofline};
use llm_ledger_report::{Format, LedgerReport, Report};
use std::sync::Arc;

const FORMAT_KEY: &str = "format";

/// The API routes.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/ledger", get(ledger_get).post(ledger_post).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
        .route("/api/models", get(models))
        .route("/api/gpus", get(gpus))
        .route("/plot/roofline.svg", get(roofline_svg))
}

fn format_of(q: &PageQuery) -> Result<Format, AppError> {
    q.extra(FORMAT_KEY)
        .map(|f| f.parse::<Format>().map_err(|e| AppError::bad_request(e.to_string(), Some(FORMAT_KEY))))
        .transpose()
        .map(|f| f.unwrap_or(Format::Json))
}

fn content_type(f: Format) -> &'static str {
    match f {
        Format::Json => "application/json",
        Format::Csv => "text/csv; charset=utf-8",
        Format::Md => "text/markdown; charset=utf-8",
        Format::Table => "text/plain; charset=utf-8",
    }
}

fn rendered(report: &impl Report, format: Format) -> Response {
    ([(header::CONTENT_TYPE, content_type(format))], report.render(format)).into_response()
}

fn ledger(state: &AppState, q: &PageQuery) -> Result<Response, AppError> {
    let format = format_of(q)?;
    let r = q.resolve(&state.catalog)?;
    Ok(rendered(&LedgerReport::new(&r.scenario, &Ledger::build(&r.scenario)), format))
}

async fn ledger_get(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    ledger(&state, &PageQuery::parse(q.as_deref(), &[FORMAT_KEY])?)
}

async fn ledger_post(
    State(state): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Result<Response, AppError> {
    let mut q = PageQuery::parse(q.as_deref(), &[FORMAT_KEY])?;
    if q.config.is_some() {
        return Err(AppError::bad_request(
            "a config.json in the body and `config` in the query: give one",
            Some("config"),
        ));
    }
    let text = std::str::from_utf8(&body)
        .map_err(|_| AppError::bad_request("the request body is not UTF-8 text", Some("config")))?;
    q.config = Some(upload::encode(text)?);
    ledger(&state, &q)
}

/// A listing endpoint takes `format` and an uploaded `config`, nothing else (as the CLI's
/// listing commands take no scenario flags).
fn listing_query(q: Option<&str>) -> Result<(PageQuery, Format), AppError> {
    let q = PageQuery::parse(q, &[FORMAT_KEY])?;
    if let Some((k, _)) = q.scenario.first() {
        return Err(AppError::bad_request(format!("unknown field `{k}`, expected `format` or `config`"), Some(k)));
    }
    let f = format_of(&q)?;
    Ok((q, f))
}

async fn models(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let (q, format) = listing_query(q.as_deref())?;
    Ok(rendered(&ModelList::new(&*q.catalog(&state.catalog)?), format))
}

async fn gpus(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let (q, format) = listing_query(q.as_deref())?;
    Ok(rendered(&GpuList::new(&*q.catalog(&state.catalog)?), format))
}

async fn roofline_svg(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let q = PageQuery::parse(q.as_deref(), &[])?;
    let r = q.resolve(&state.catalog)?;
    let report = LedgerReport::new(&r.scenario, &Ledger::build(&r.scenario));
    let mut chart = Roofline::from_report(&report, &r.scenario.gpu);
    chart.title = Some(plot::title(&report.inputs));
    let svg = chart.svg(PlotSize::default()).map_err(|e| AppError::bad_request(e.to_string(), None))?;
    let headers =
        [(header::CONTENT_TYPE, "image/svg+xml"), (header::CONTENT_SECURITY_POLICY, crate::security::SVG_CSP)];
    Ok((headers, plot::standalone(&svg)).into_response())
}
