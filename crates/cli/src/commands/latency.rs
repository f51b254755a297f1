//! `llm-ledger latency` and `llm-ledger cost`.

use crate::cli::{CostArgs, LatencyArgs};
use crate::commands::serving::no_context_flags;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::economics::{cheapest_under_tpot, CostPoint};
use llm_ledger_core::latency::Latency;
use llm_ledger_core::memory::at_uniform;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::cost::CostReport;
use llm_ledger_report::latency::LatencyReport;
use llm_ledger_report::{Format, Inputs, Report};

/// TTFT, TPOT and end-to-end latency.
pub fn latency(args: &LatencyArgs) -> Result<String> {
    let format: Format = args.output.format.parse()?;
    no_context_flags(&args.scenario, "latency")?;
    let sc = inputs::scenario(&args.scenario)?;
    let req = ServingRequest {
        prompt: args.request.prompt.clone(),
        output: args.request.output.clone(),
        reserve: args.reserve.reserve.clone(),
        ..Default::default()
    };
    let s = req.resolve(&sc)?;
    let batch = sc.workload.contexts.batch();
    let l = Latency::of(&sc, batch, s.prompt_tokens, s.output_tokens, s.reserve_bytes)?;
    let inputs = Inputs::of(&at_uniform(&sc, batch, s.prompt_tokens));
    Ok(LatencyReport { inputs, latency: l }.render(format))
}

/// Dollars per million tokens, and the cheapest batch under a TPOT bound.
pub fn cost(args: &CostArgs) -> Result<String> {
    let format: Format = args.output.format.parse()?;
    no_context_flags(&args.scenario, "cost")?;
    let sc = inputs::scenario(&args.scenario)?;
    let req = ServingRequest {
        prompt: args.request.prompt.clone(),
        output: args.request.output.clone(),
        reserve: args.reserve.reserve.clone(),
        usd_per_hour: args.price.usd_per_hour.clone(),
        tpot_ms: args.tpot_ms.clone(),
        ..Default::default()
    };
    let s = req.resolve(&sc)?;
    let price = s.require_price(&sc.gpu.name)?;
    let batch = sc.workload.contexts.batch();
    let at = CostPoint::at(&sc, &s, price, batch)?;
    let cheapest = s.tpot_bound_s.map(|b| cheapest_under_tpot(&sc, &s, price, b).map(|c| (b, c))).transpose()?;
    let inputs = Inputs::of(&at_uniform(&sc, batch, s.prompt_tokens));
    Ok(CostReport::new(inputs, &at, cheapest.as_ref().map(|(b, c)| (*b, c))).render(format))
}
