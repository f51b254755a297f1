//! `llm-ledger plan`: the static plan (TPOT bound), its deployments and Pareto front (`--pareto`),
//! or with `--rate` the plan under load.

use crate::cli::PlanArgs;
use anyhow::Result;
use llm_ledger_app::plan::max_gpus;
use llm_ledger_report::{Format, Report};

/// Rank the layouts that fit and meet the TPOT bound ([`llm_ledger_app::plan::PlanRequest::run`];
/// with `--rate`: the plan under load, by simulation,
/// [`llm_ledger_app::plan::PlanLoadRequest::report`]).
pub fn plan(args: &PlanArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let req = args.request();
    let load = args.load.text();
    if let Some(rate) = &load.rate {
        req.check_load()?;
        let max_gpus = max_gpus(req.max_gpus.as_deref())?;
        let checked = load.check(rate, req.batch.is_some(), args.shape.ctx.is_some())?;
        let sc = super::scenario(&args.base(), "plan")?;
        let s = req.serving(&sc)?;
        let files = super::simulate::FILES;
        let budget = llm_ledger_app::simulate::budget(load.max_steps.as_deref(), Some(crate::interrupt::flag()))?;
        let report =
            crate::progress::steps(&budget, || load.report_within(&sc, &s, checked, max_gpus, files, &budget))?;
        return Ok(report.render(format)?);
    }
    let mut base = args.base();
    if let Some(ctx) = load.check_static(args.shape.ctx.is_some())? {
        base.ctx = Some(ctx.to_string());
    }
    let sc = super::scenario(&base, "plan")?;
    // Ctrl-C stops the search at its next step evaluation.
    let cancel = Some(crate::interrupt::flag());
    if req.pareto()? {
        return Ok(req.frontier_within(&sc, cancel)?.render(format)?);
    }
    Ok(req.run_within(&sc, cancel)?.render(format)?)
}
