//! `llm-ledger kv` and `llm-ledger levers`.

use crate::cli::StepArgs;
use anyhow::Result;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::kv::KvReport;
use llm_ledger_report::levers::LeverReport;
use llm_ledger_report::{Format, Report};

/// KV bytes, the crossover, memory and capacity.
pub fn kv(args: &StepArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "kv")?;
    let s = ServingRequest { reserve: args.reserve.reserve.clone(), ..Default::default() }.resolve(&sc)?;
    Ok(KvReport::new(&sc, s.reserve_bytes).render(format)?)
}

/// Every lever against the workload.
pub fn levers(args: &StepArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "levers")?;
    let s = ServingRequest { reserve: args.reserve.reserve.clone(), ..Default::default() }.resolve(&sc)?;
    Ok(LeverReport::new(&sc, s.reserve_bytes).render(format)?)
}
