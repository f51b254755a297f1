//! `llm-ledger plan`.

use crate::cli::PlanArgs;
use anyhow::Result;
use llm_ledger_core::limits::MAX_BATCH;
use llm_ledger_core::memory::WeightFootprint;
use llm_ledger_core::plan::{plan as search, PlanRequest, MAX_PLAN_GPUS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::Error;
use llm_ledger_report::plan::{PlanContext, PlanReport};
use llm_ledger_report::{Format, Inputs, Report};

/// Default GPU budget of a plan.
pub const DEFAULT_MAX_GPUS: u64 = 64;

/// Rank the layouts that fit and meet the TPOT bound.
pub fn plan(args: &PlanArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let max_gpus = match &args.max_gpus {
        Some(s) => parse_u64("max_gpus", s)?,
        None => DEFAULT_MAX_GPUS,
    };
    if !(1..=MAX_PLAN_GPUS).contains(&max_gpus) {
        return Err(Error::invalid("max_gpus", max_gpus, format!("an integer in 1..={MAX_PLAN_GPUS}")).into());
    }
    let batches = args.shape.batch.as_deref().map(|t| Axis::parse("batch", t, 1, MAX_BATCH)).transpose()?;
    let sc = super::scenario(&args.base(), "plan")?;
    let req = ServingRequest {
        usd_per_hour: args.price.usd_per_hour.clone(),
        reserve: args.reserve.reserve.clone(),
        tpot_ms: args.tpot_ms.clone(),
        ..Default::default()
    };
    let s = req.resolve(&sc)?;
    let price = s.require_price(&sc.gpu.name)?;
    let Some(tpot_bound_s) = s.tpot_bound_s else {
        return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds").into());
    };
    let ctx = sc.workload.contexts.max_tokens();
    let request = PlanRequest { ctx, tpot_bound_s, max_gpus, price, reserve_bytes: s.reserve_bytes, batches };
    let plan = search(&sc, &request)?;
    let context = PlanContext {
        inputs: Inputs::of(&sc),
        ctx,
        tpot_bound_s,
        max_gpus,
        price,
        reserve_bytes: s.reserve_bytes,
        weight_bytes: WeightFootprint::of(&sc.model, &sc.weights).total_bytes(),
        capacity_bytes: sc.gpu.memory_bytes,
    };
    Ok(PlanReport::new(context, plan).render(format)?)
}
