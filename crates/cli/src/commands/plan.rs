//! `llm-ledger plan`: the static plan (TPOT bound), or with `--rate` the plan under load.

use crate::cli::PlanArgs;
use anyhow::Result;
use llm_ledger_app::plan::max_gpus;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::plan::PlanReport;
use llm_ledger_report::{Format, Report};

/// Rank the layouts that fit and meet the TPOT bound (with `--rate`: the plan under load, by
/// simulation, [`llm_ledger_app::plan::PlanLoadRequest::report`]).
pub fn plan(args: &PlanArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let load = args.load.text();
    if let Some(rate) = &args.load.rate {
        let max_gpus = max_gpus(args.max_gpus.as_deref())?;
        let checked = load.check(rate, args.shape.batch.is_some(), args.shape.ctx.is_some())?;
        let sc = super::scenario(&args.base(), "plan")?;
        let s = serving(args, &sc)?;
        let files = super::simulate::FILES;
        return Ok(load.report(&sc, &s, checked, max_gpus, files, Some(crate::interrupt::flag()))?.render(format)?);
    }
    load.check_static()?;
    let sc = super::scenario(&args.base(), "plan")?;
    let s = serving(args, &sc)?;
    let report = PlanReport::build(&sc, &s, args.max_gpus.as_deref(), args.shape.batch.as_deref())?;
    Ok(report.render(format)?)
}

/// The plan's price, reserve and TPOT bound, resolved for `sc` (both kinds of plan).
fn serving(args: &PlanArgs, sc: &llm_ledger_core::Scenario) -> Result<llm_ledger_core::serving::Serving> {
    let req = ServingRequest {
        usd_per_hour: args.price.usd_per_hour.clone(),
        reserve: args.reserve.reserve.clone(),
        tpot_ms: args.tpot_ms.clone(),
        ..Default::default()
    };
    Ok(req.resolve(sc)?)
}
