//! Machine-readable endpoints. Each returns exactly what the CLI prints for the same inputs:
//!
//! | endpoint | CLI |
//! |---|---|
//! | `GET /api/ledger?<scenario>[&format=json\|csv\|md\|table]` | `llm-ledger ledger <flags> --format …` |
//! | `POST /api/ledger?<scenario>` with a `config.json` body | `llm-ledger ledger --model config.json …` |
//! | `GET /api/models[?format=…]` | `llm-ledger models --format …` |
//! | `GET /api/gpus[?format=…]` | `llm-ledger gpus --format …` |
//! | `GET /plot/roofline.svg?<scenario>` | `llm-ledger ledger <flags> --plot FILE.svg` |
//! | `GET /api/zoom?<scenario>&at=PATH` | `llm-ledger zoom <flags> --at PATH` |
//! | `GET /api/sweep?<scenario>&batch=AXIS&ctx=AXIS[&reserve=]` | `llm-ledger sweep <flags>` |
//! | `GET /plot/batch-curve.svg?<as /api/sweep>` | `llm-ledger sweep <flags> --plot FILE.svg` |
//! | `GET /api/kv?<scenario>[&reserve=]` | `llm-ledger kv <flags>` |
//! | `GET /api/cost?<scenario>[&usd_per_hour=&reserve=&prompt=&output=&tpot_ms=]` | `llm-ledger cost <flags>` |
//! | `GET /api/latency?<scenario>[&reserve=&prompt=&output=]` | `llm-ledger latency <flags>` |
//! | `GET /api/tile?m=&n=&k=[&gpu=&tile=&weights=&activations=&output=&…_efficiency=]` | `llm-ledger tile <flags>` |
//! | `GET /api/moe?<scenario>&batch=AXIS[&experts=&top_k=]` | `llm-ledger moe <flags>` |
//!
//! Every endpoint takes `format=json|csv|md|table` (default json). The command's own flags are
//! query keys of the same names; anything else is the scenario's, refused by its resolver when
//! unknown. Sweeps and MoE ranges are limited to [`MAX_POINTS`] points here, and a MoE answer to
//! [`MAX_MOE_EXPERT_POINTS`](crate::MAX_MOE_EXPERT_POINTS) batch sizes × experts (the CLI takes
//! more). The endpoints whose work grows with their parameters run on the heavy-work pool
//! ([`crate::work`]).
//!
//! Errors are `{"error": {"message", "field"}}` with status 400 (413/414 for oversized input, 503
//! past the request deadline).

use crate::error::AppError;
use crate::pages::parts::MAX_POINTS;
use crate::query::PageQuery;
use crate::upload::{self, MAX_BODY_BYTES};
use crate::work::Work;
use crate::AppState;
use axum::extract::{DefaultBodyLimit, Extension, RawQuery, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use axum::Router;
use llm_ledger_app::moe::MoeRequest;
use llm_ledger_app::sweep::SweepRequest;
use llm_ledger_app::zoom::ZoomRequest;
use llm_ledger_core::serving::{step_shape_refused, ServingRequest};
use llm_ledger_core::sweep::mix_refused;
use llm_ledger_core::tiling::GemmRequest;
use llm_ledger_core::Ledger;
use llm_ledger_report::catalog::{GpuList, ModelList};
use llm_ledger_report::cost::CostReport;
use llm_ledger_report::kv::KvReport;
use llm_ledger_report::latency::LatencyReport;
use llm_ledger_report::plot::{self, PlotSize, Roofline};
use llm_ledger_report::sweep::SweepPlan;
use llm_ledger_report::{Format, LedgerReport, Report, TileReport};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const FORMAT_KEY: &str = "format";

/// The API routes.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/ledger", get(ledger_get).post(ledger_post).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
        .route("/api/models", get(models))
        .route("/api/gpus", get(gpus))
        .route("/plot/roofline.svg", get(roofline_svg))
        .route("/api/zoom", heavy(zoom))
        .route("/api/sweep", heavy(sweep))
        .route("/plot/batch-curve.svg", heavy(batch_curve_svg))
        .route("/api/kv", get(kv))
        .route("/api/cost", heavy(cost))
        .route("/api/latency", heavy(latency))
        .route("/api/tile", heavy(tile))
        .route("/api/moe", heavy(moe))
}

/// A GET endpoint whose work grows with its parameters: `f` runs on the heavy-work pool
/// ([`crate::work`]), and a request past its deadline is answered 503.
/// A route whose work runs off the async threads ([`Work::run`]), handed the request's
/// cancellation flag: searches that check it stop, and free their slot, once the request's
/// deadline passes or its client goes away.
pub(crate) fn heavy(
    f: fn(&AppState, Option<&str>, &AtomicBool) -> Result<Response, AppError>,
) -> MethodRouter<Arc<AppState>> {
    get(move |State(state): State<Arc<AppState>>, Extension(work): Extension<Work>, RawQuery(q): RawQuery| async move {
        work.run(move |cancel| f(&state, q.as_deref(), cancel)).await.and_then(|r| r)
    })
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

pub(crate) fn rendered(report: &impl Report, format: Format) -> Result<Response, AppError> {
    let text = report.render(format).map_err(|e| AppError::from_core(&e))?;
    Ok(([(header::CONTENT_TYPE, content_type(format))], text).into_response())
}

fn ledger(state: &AppState, q: &PageQuery) -> Result<Response, AppError> {
    let format = format_of(q)?;
    let r = q.resolve(&state.catalog)?;
    rendered(&LedgerReport::new(&r.scenario, &Ledger::build(&r.scenario)), format)
}

async fn ledger_get(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    ledger(&state, &PageQuery::parse(q.as_deref(), &[FORMAT_KEY])?)
}

async fn ledger_post(
    State(state): State<Arc<AppState>>,
    Extension(work): Extension<Work>,
    req: Request,
) -> Result<Response, AppError> {
    let mut q = PageQuery::parse(req.uri().query(), &[FORMAT_KEY])?;
    if q.config.is_some() {
        return Err(AppError::bad_request(
            "a config.json in the body and `config` in the query: give one",
            Some("config"),
        ));
    }
    let (parts, body) = req.into_parts();
    let body = upload::read_body(&work, &parts.headers, body).await?;
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
    rendered(&ModelList::new(&*q.catalog(&state.catalog)?), format)
}

async fn gpus(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let (q, format) = listing_query(q.as_deref())?;
    rendered(&GpuList::new(&*q.catalog(&state.catalog)?), format)
}

/// A command's query: its own keys (and `format`) beside the scenario's.
pub(crate) fn command(raw: Option<&str>, keys: &[&str]) -> Result<(PageQuery, Format), AppError> {
    let mut all = keys.to_vec();
    all.push(FORMAT_KEY);
    let q = PageQuery::parse(raw, &all)?;
    let f = format_of(&q)?;
    Ok((q, f))
}

/// The key of a plot's size: `size=narrow` draws it for a phone ([`PlotSize::NARROW`], its legend
/// below the plot); without it, at the page's size.
const SIZE_KEY: &str = "size";

/// The plot size a query asks for.
fn plot_size(q: &PageQuery) -> Result<PlotSize, AppError> {
    match q.extra(SIZE_KEY) {
        None | Some("wide") => Ok(PlotSize::default()),
        Some("narrow") => Ok(PlotSize::NARROW),
        Some(other) => Err(AppError::bad_request(
            format!("invalid `{SIZE_KEY}`: {other:?} is not `wide` or `narrow`"),
            Some(SIZE_KEY),
        )),
    }
}

fn svg_response(svg: &str) -> Response {
    let headers =
        [(header::CONTENT_TYPE, "image/svg+xml"), (header::CONTENT_SECURITY_POLICY, crate::security::SVG_CSP)];
    (headers, plot::standalone(svg)).into_response()
}

/// `zoom`'s inputs (the app's table: a test checks them).
const ZOOM_KEYS: &[&str] = &["at"];

fn zoom(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let (q, format) = command(q, ZOOM_KEYS)?;
    let r = q.resolve(&state.catalog)?;
    let req: ZoomRequest = q.extras_as(ZOOM_KEYS)?;
    // A program reads this: a path this scenario lacks is an error, not the page's fallback.
    let (report, _) = req.run(&r.scenario, false).map_err(|e| q.command_error(&e))?;
    rendered(&report, format)
}

/// `sweep`'s inputs (the app's table: a test checks them).
const SWEEP_KEYS: &[&str] = &["batch", "ctx", "reserve"];

/// The sweep of `llm-ledger sweep`: the scenario without batch and context, over the axes.
fn sweep_plan(state: &AppState, q: &PageQuery) -> Result<SweepPlan, AppError> {
    if q.get("contexts").is_some() {
        return Err(q.core_error(&mix_refused()));
    }
    let base = q.resolve(&state.catalog)?.scenario;
    let req: SweepRequest = q.extras_as(SWEEP_KEYS)?;
    req.plan(base).map_err(|e| q.command_error(&e))
}

fn sweep(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let (q, format) = command(q, SWEEP_KEYS)?;
    let plan = sweep_plan(state, &q)?;
    let text = plan.render(format, MAX_POINTS).map_err(|e| q.core_error(&e))?;
    Ok(([(header::CONTENT_TYPE, content_type(format))], text).into_response())
}

fn batch_curve_svg(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let q = PageQuery::parse(q, &[SWEEP_KEYS, &[SIZE_KEY]].concat())?;
    let size = plot_size(&q)?;
    let plan = sweep_plan(state, &q)?;
    let points = plan.points(MAX_POINTS).map_err(|e| q.core_error(&e))?;
    let curve = plan.batch_curve(&points).map_err(|e| q.core_error(&e))?;
    let svg = curve.svg(size).map_err(|e| AppError::bad_request(e.to_string(), None))?;
    Ok(svg_response(&svg))
}

async fn kv(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let (q, format) = command(q.as_deref(), &["reserve"])?;
    let sc = q.resolve(&state.catalog)?.scenario;
    let serving: ServingRequest = q.extras_as(&["reserve"])?;
    let serving = serving.resolve(&sc).map_err(|e| q.core_error(&e))?;
    rendered(&KvReport::new(&sc, serving.reserve_bytes), format)
}

/// The scenario and serving inputs of `cost` and `latency`, which refuse the step-shaping keys
/// as the CLI does.
fn serving_inputs(
    state: &AppState,
    q: &PageQuery,
    keys: &[&str],
    command: &str,
) -> Result<(llm_ledger_core::Scenario, llm_ledger_core::serving::Serving), AppError> {
    if let Some(k) = ["ctx", "contexts", "phase"].into_iter().find(|k| q.get(k).is_some()) {
        return Err(q.core_error(&step_shape_refused(k, command)));
    }
    let sc = q.resolve(&state.catalog)?.scenario;
    let req: ServingRequest = q.extras_as(keys)?;
    let serving = req.resolve(&sc).map_err(|e| q.core_error(&e))?;
    Ok((sc, serving))
}

const COST_KEYS: &[&str] = &["usd_per_hour", "reserve", "prompt", "output", "tpot_ms"];
const LATENCY_KEYS: &[&str] = &["reserve", "prompt", "output"];

fn cost(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let (q, format) = command(q, COST_KEYS)?;
    let (sc, serving) = serving_inputs(state, &q, COST_KEYS, "cost")?;
    rendered(&CostReport::build(&sc, &serving).map_err(|e| q.core_error(&e))?, format)
}

fn latency(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let (q, format) = command(q, LATENCY_KEYS)?;
    let (sc, serving) = serving_inputs(state, &q, LATENCY_KEYS, "latency")?;
    rendered(&LatencyReport::build(&sc, &serving).map_err(|e| q.core_error(&e))?, format)
}

/// `llm-ledger tile`: the query is the command's flags (no scenario).
fn tile(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let q = PageQuery::parse(q, &[FORMAT_KEY])?;
    if q.config.is_some() {
        return Err(AppError::bad_request("unknown field `config`: `tile` takes no model", Some("config")));
    }
    let format = format_of(&q)?;
    let as_extra = PageQuery { extra: q.scenario.clone(), ..PageQuery::default() };
    let keys: Vec<&str> = q.scenario.iter().map(|(k, _)| k.as_str()).collect();
    let req: GemmRequest = as_extra.extras_as(&keys)?;
    let inputs = req.resolve().map_err(|e| as_extra.core_error(&e))?;
    let gpu = state
        .catalog
        .gpu(req.gpu.as_deref().unwrap_or(llm_ledger_core::scenario::DEFAULT_GPU))
        .map_err(|e| as_extra.core_error(&e))?;
    rendered(&TileReport::build(&inputs, &gpu).map_err(|e| as_extra.core_error(&e))?, format)
}

/// `moe`'s inputs (the app's table: a test checks them).
const MOE_KEYS: &[&str] = &["batch", "experts", "top_k"];

fn moe(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<Response, AppError> {
    let (q, format) = command(q, MOE_KEYS)?;
    let base = q.resolve(&state.catalog)?.scenario;
    let req: MoeRequest = q.extras_as(MOE_KEYS)?;
    let model_given = q.get("model").is_some() || q.config.is_some();
    crate::pages::moe_check_cost(&base, &req).map_err(|e| q.core_error(&e))?;
    rendered(&req.run(&base, model_given, MAX_POINTS).map_err(|e| q.command_error(&e))?, format)
}

async fn roofline_svg(State(state): State<Arc<AppState>>, RawQuery(q): RawQuery) -> Result<Response, AppError> {
    let q = PageQuery::parse(q.as_deref(), &[SIZE_KEY])?;
    let size = plot_size(&q)?;
    let r = q.resolve(&state.catalog)?;
    let report = LedgerReport::new(&r.scenario, &Ledger::build(&r.scenario));
    let mut chart = Roofline::from_report(&report, &r.scenario.gpu);
    chart.title = Some(plot::title(&report.inputs));
    let svg = chart.svg(size).map_err(|e| AppError::bad_request(e.to_string(), None))?;
    Ok(svg_response(&svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The endpoints' own keys are the app's input tables of their commands, in order.
    #[test]
    fn the_command_keys_are_the_apps_input_tables() {
        let names = |t: &[llm_ledger_app::Input]| t.iter().map(|i| i.name).collect::<Vec<_>>();
        assert_eq!(SWEEP_KEYS, names(llm_ledger_app::sweep::inputs()));
        assert_eq!(MOE_KEYS, names(llm_ledger_app::moe::inputs()));
        assert_eq!(ZOOM_KEYS, names(llm_ledger_app::zoom::inputs()));
    }
}
