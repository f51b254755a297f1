//! Endpoints of deployments and comparisons, on the heavy-work pool:
//!
//! | endpoint | what |
//! |---|---|
//! | `GET /api/plan?<scenario>&tpot_ms=…[&batch=AXIS&max_gpus=&usd_per_hour=&reserve=]` | `llm-ledger plan <flags>` |
//! | `GET /api/plan?<scenario>&pareto=on[&…]` | `llm-ledger plan --pareto <flags>` |
//! | `GET /api/plan?<scenario>&rate=…&ttft_ms=…&tpot_ms=…[&requests=&seed=&prompt=&output=&max_steps=]` | `llm-ledger plan --rate <flags>`, within the explorer's step budget |
//! | `GET /api/compare?s1=QUERY&s2=QUERY…[&reserve=]` | the Compare page's columns |
//! | `GET /api/need?<scenario>[&max_gpus=&reserve=&tpot_ms=]` | the What do I need page's table |
//!
//! Every endpoint takes `format=json|csv|md|table` (default json). As the CLI's `plan` has no
//! flags for them, `/api/plan` refuses the scenario's layout (`tp`, `pp`, `ep`, `dp`,
//! `micro_batches`), `phase` and `contexts`: the search makes its own layouts, in decode, at
//! `ctx`; its `batch` is the candidate batches.

use crate::api::{command, heavy, rendered};
use crate::error::AppError;
use crate::pages::compare::{saved_scenarios, SAVED_KEYS};
use crate::query::PageQuery;
use crate::AppState;
use axum::Router;
use llm_ledger_app::plan::{max_gpus, PlanLoadRequest, PlanRequest};
use llm_ledger_app::simulate::budget;
use llm_ledger_app::{CommandError, Files};
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::Error;
use llm_ledger_report::compare::CompareReport;
use llm_ledger_report::plan_serving::ServingPlanReport;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The routes.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/api/plan", heavy(plan)).route("/api/compare", heavy(compare)).route("/api/need", heavy(need))
}

/// `plan`'s inputs and `plan --rate`'s, the app's tables in order (a test checks them).
pub(crate) const PLAN_KEYS: &[&str] = &[
    "batch",
    "tpot_ms",
    "max_gpus",
    "usd_per_hour",
    "reserve",
    "pareto",
    "rate",
    "ttft_ms",
    "gpus_total",
    "requests",
    "seed",
    "prompt",
    "output",
    "max_steps",
];

/// Scenario keys `plan` does not take: it searches the layouts itself, in decode.
pub(crate) const NOT_PLAN: &[&str] = &["tp", "pp", "ep", "dp", "micro_batches", "phase", "contexts"];

/// The static plan's keys and the plan under load's, as the app's requests.
fn plan_requests(q: &PageQuery) -> Result<(PlanRequest, PlanLoadRequest), AppError> {
    let n = llm_ledger_app::plan::inputs().len();
    Ok((q.extras_as(&PLAN_KEYS[..n])?, q.extras_as(&PLAN_KEYS[n..])?))
}

/// Most GPUs per replica one explorer answer searches (`plan` takes up to
/// [`llm_ledger_core::plan::MAX_PLAN_GPUS`]): the search costs every layout within the budget at
/// every candidate batch, and at 64 GPUs an MoE model's front is a few thousand deployments.
pub(crate) const MAX_WEB_GPUS: u64 = 64;

/// `max_gpus` as `plan` reads it, at most [`MAX_WEB_GPUS`].
pub(crate) fn web_max_gpus(text: Option<&str>) -> Result<u64, Error> {
    let n = max_gpus(text)?;
    if n > MAX_WEB_GPUS {
        return Err(Error::invalid(
            "max_gpus",
            n,
            format!(
                "at most {MAX_WEB_GPUS} GPUs per replica in one explorer answer (`llm-ledger plan` takes up to 1,024)"
            ),
        ));
    }
    Ok(n)
}

/// Engine steps one plan under load on the explorer may take (and takes when none is given):
/// its time is bounded by [`WEB_SEARCH`] rather than by steps, so this only stops a search whose
/// steps are all cheap (memoised) from running on past what any answer needs.
pub(crate) const MAX_WEB_PLAN_STEPS: u64 = 50_000_000;

/// How long a plan under load searches before it answers with the candidates it has assessed,
/// the fewest GPUs first ([`llm_ledger_app::plan::LoadSearch::report_fewest_first`]): well inside the request's
/// 10 s deadline, so a large model's search answers partially rather than not at all.
pub(crate) const WEB_SEARCH: Duration = Duration::from_secs(6);

/// A plan under load is held to the explorer's step budget: `max_steps` at most
/// [`MAX_WEB_PLAN_STEPS`], and that budget when none is given.
pub(crate) fn web_budget(load: &mut PlanLoadRequest) -> Result<(), Error> {
    let asked = match &load.max_steps {
        Some(t) => llm_ledger_core::scenario::parse_u64(MAX_STEPS_FIELD, t)?,
        None => MAX_WEB_PLAN_STEPS,
    };
    if asked > MAX_WEB_PLAN_STEPS {
        return Err(Error::invalid(
            MAX_STEPS_FIELD,
            asked,
            format!(
                "at most {MAX_WEB_PLAN_STEPS} engine steps in one explorer answer (`llm-ledger plan --rate` takes more)"
            ),
        ));
    }
    load.max_steps = Some(asked.to_string());
    Ok(())
}

/// The plan under load of `load` on the explorer: the fewest GPUs first, stopped at
/// [`WEB_SEARCH`] (or when the request is cancelled) with what it has assessed.
pub(crate) fn plan_under_load(
    load: &PlanLoadRequest,
    sc: &llm_ledger_core::Scenario,
    s: &llm_ledger_core::serving::Serving,
    checked: (f64, f64),
    max_gpus: u64,
    cancel: &AtomicBool,
) -> Result<ServingPlanReport, CommandError> {
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let end = Instant::now() + WEB_SEARCH;
            while !done.load(Ordering::Relaxed) {
                if cancel.load(Ordering::Relaxed) || Instant::now() >= end {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let answer = budget(load.max_steps.as_deref(), Some(&stop))
            .map_err(CommandError::from)
            .and_then(|b| load.search(sc, s, checked, max_gpus, Files::None)?.report_fewest_first(&b));
        done.store(true, Ordering::Relaxed);
        answer
    })
}

fn plan(state: &AppState, q: Option<&str>, cancel: &AtomicBool) -> Result<axum::response::Response, AppError> {
    let (q, format) = command(q, PLAN_KEYS)?;
    if let Some(k) = NOT_PLAN.iter().find(|k| q.get(k).is_some()) {
        return Err(AppError::bad_request(
            format!("unknown field `{k}`: `plan` searches the layouts itself, in decode, at `ctx`"),
            Some(k),
        ));
    }
    let (req, mut load) = plan_requests(&q)?;
    let gpus = web_max_gpus(req.max_gpus.as_deref()).map_err(|e| q.core_error(&e))?;
    if let Some(rate) = load.rate.clone() {
        req.check_load().map_err(|e| q.command_error(&e))?;
        let max_gpus = gpus;
        let checked =
            load.check(&rate, req.batch.is_some(), q.get("ctx").is_some()).map_err(|e| q.command_error(&e))?;
        web_budget(&mut load).map_err(|e| q.core_error(&e))?;
        let sc = q.resolve(&state.catalog)?.scenario;
        let s = req.serving(&sc).map_err(|e| q.command_error(&e))?;
        let report = plan_under_load(&load, &sc, &s, checked, max_gpus, cancel).map_err(|e| q.command_error(&e))?;
        return rendered(&report, format);
    }
    let q = match load.check_static(q.get("ctx").is_some()).map_err(|e| q.command_error(&e))? {
        Some(ctx) => q.with_scenario("ctx", &ctx.to_string()),
        None => q.clone(),
    };
    let sc = q.resolve(&state.catalog)?.scenario;
    if req.pareto().map_err(|e| q.command_error(&e))? {
        return rendered(&req.frontier_within(&sc, Some(cancel)).map_err(|e| q.command_error(&e))?, format);
    }
    rendered(&req.run_within(&sc, Some(cancel)).map_err(|e| q.command_error(&e))?, format)
}

fn compare(state: &AppState, q: Option<&str>, _cancel: &AtomicBool) -> Result<axum::response::Response, AppError> {
    let mut keys = SAVED_KEYS.to_vec();
    keys.push("reserve");
    let (q, format) = command(q, &keys)?;
    if let Some((k, _)) = q.scenario.first() {
        return Err(AppError::bad_request(
            format!("unknown field `{k}`: the scenarios are `s1` … `s4`, each a query string"),
            Some(k),
        ));
    }
    let (saved, reserve_bytes) = saved_scenarios(&q, &state.catalog)?;
    rendered(&CompareReport::build(&saved, reserve_bytes), format)
}

/// The What do I need page's keys (the app's table).
pub(crate) const NEED_KEYS: &[&str] = &["max_gpus", "reserve", "tpot_ms"];

fn need(state: &AppState, q: Option<&str>, cancel: &AtomicBool) -> Result<axum::response::Response, AppError> {
    let (q, format) = command(q, NEED_KEYS)?;
    let r = crate::pages::need::report(&q, &state.catalog, cancel)?;
    rendered(&r, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_the_apps_input_tables() {
        let names = |t: &[llm_ledger_app::Input]| t.iter().map(|i| i.name).collect::<Vec<_>>();
        let plan: Vec<&str> = names(llm_ledger_app::plan::inputs())
            .into_iter()
            .chain(names(llm_ledger_app::plan::load_inputs()))
            .collect();
        assert_eq!(PLAN_KEYS, plan);
        assert_eq!(NEED_KEYS, names(llm_ledger_app::need::inputs()));
    }
}
