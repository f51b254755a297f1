//! `llm-ledger latency` and `llm-ledger cost`.

use crate::cli::{CostArgs, LatencyArgs};
use anyhow::Result;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::cost::CostReport;
use llm_ledger_report::latency::LatencyReport;
use llm_ledger_report::{Format, Report};

/// TTFT, TPOT and end-to-end latency.
pub fn latency(args: &LatencyArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "latency")?;
    let req = ServingRequest {
        prompt: args.request.prompt.clone(),
        output: args.request.output.clone(),
        reserve: args.reserve.reserve.clone(),
        ..Default::default()
    };
    Ok(LatencyReport::build(&sc, &req.resolve(&sc)?)?.render(format)?)
}

/// Dollars per million tokens, and the cheapest batch under a TPOT bound.
pub fn cost(args: &CostArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "cost")?;
    let req = ServingRequest {
        prompt: args.request.prompt.clone(),
        output: args.request.output.clone(),
        reserve: args.reserve.reserve.clone(),
        usd_per_hour: args.price.usd_per_hour.clone(),
        tpot_ms: args.tpot_ms.clone(),
        ..Default::default()
    };
    Ok(CostReport::build(&sc, &req.resolve(&sc)?)?.render(format)?)
}
