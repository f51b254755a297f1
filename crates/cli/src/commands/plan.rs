//! `llm-ledger plan`.

use crate::cli::PlanArgs;
use anyhow::Result;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::plan::PlanReport;
use llm_ledger_report::{Format, Report};

/// Rank the layouts that fit and meet the TPOT bound.
pub fn plan(args: &PlanArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.base(), "plan")?;
    let req = ServingRequest {
        usd_per_hour: args.price.usd_per_hour.clone(),
        reserve: args.reserve.reserve.clone(),
        tpot_ms: args.tpot_ms.clone(),
        ..Default::default()
    };
    let s = req.resolve(&sc)?;
    let report = PlanReport::build(&sc, &s, args.max_gpus.as_deref(), args.shape.batch.as_deref())?;
    Ok(report.render(format)?)
}
