//! `llm-ledger plan`: the static plan (TPOT bound), or with `--rate` the plan under load.

use super::simulate::lengths;
use crate::cli::PlanArgs;
use anyhow::Result;
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::plan::MAX_PLAN_GPUS;
use llm_ledger_core::plan_serving::{plan_serving, ServingPlanRequest, DEFAULT_SEARCH_REQUESTS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::simulate::{SimConfig, MAX_RATE_PER_S};
use llm_ledger_core::Error;
use llm_ledger_report::plan::{PlanReport, DEFAULT_MAX_GPUS};
use llm_ledger_report::plan_serving::ServingPlanReport;
use llm_ledger_report::{Format, Inputs, Report};

/// Rank the layouts that fit and meet the TPOT bound (with `--rate`: [`plan_under_load`]).
pub fn plan(args: &PlanArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    if let Some(rate) = &args.load.rate {
        let max_gpus = match &args.max_gpus {
            Some(s) => parse_u64("max_gpus", s)?,
            None => DEFAULT_MAX_GPUS,
        };
        if !(1..=MAX_PLAN_GPUS).contains(&max_gpus) {
            return Err(Error::invalid("max_gpus", max_gpus, format!("an integer in 1..={MAX_PLAN_GPUS}")).into());
        }
        return plan_under_load(args, rate, max_gpus, format);
    }
    for (flag, given) in [
        ("ttft_ms", args.load.ttft_ms.is_some()),
        ("requests", args.load.requests.is_some()),
        ("seed", args.load.seed.is_some()),
        ("prompt", args.load.prompt.is_some()),
        ("output_tokens", args.load.output_tokens.is_some()),
    ] {
        if given {
            return Err(Error::invalid(flag, "given", "it applies only with --rate (a plan under load)").into());
        }
    }
    let sc = super::scenario(&args.base(), "plan")?;
    let s = serving(args, &sc)?;
    let report = PlanReport::build(&sc, &s, args.max_gpus.as_deref(), args.shape.batch.as_deref())?;
    Ok(report.render(format)?)
}

/// `plan --rate`: the cheapest deployment holding p99 TTFT and TPOT bounds at the rate, by
/// simulation ([`llm_ledger_core::plan_serving`]).
fn plan_under_load(args: &PlanArgs, rate: &str, max_gpus: u64, format: Format) -> Result<String> {
    let l = &args.load;
    let rate_per_s = parse_f64("rate", rate)?;
    if !(rate_per_s > 0.0 && rate_per_s <= MAX_RATE_PER_S) {
        return Err(
            Error::invalid("rate", rate, format!("a rate in requests/s above 0 and at most {MAX_RATE_PER_S}")).into()
        );
    }
    for (flag, given) in [("batch", args.shape.batch.is_some()), ("ctx", args.shape.ctx.is_some())] {
        if given {
            return Err(
                Error::invalid(flag, "given with --rate", "--prompt and --output (the simulated lengths)").into()
            );
        }
    }
    let Some(ttft) = &l.ttft_ms else {
        return Err(Error::invalid("ttft_ms", "none given", "a p99 bound in milliseconds with --rate").into());
    };
    let ttft_bound_s = TPOT_MS.parse(ttft).map_err(|e| e.map_field(|_| "ttft_ms".to_string()))? / 1e3;
    let sc = super::scenario(&args.base(), "plan")?;
    let s = serving(args, &sc)?;
    let price = s.require_price(&sc.gpu.name)?;
    let Some(tpot_bound_s) = s.tpot_bound_s else {
        return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds").into());
    };
    let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
        Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
    };
    let defaults = SimConfig::poisson(rate_per_s);
    let sim = SimConfig {
        requests: u("requests", &l.requests, DEFAULT_SEARCH_REQUESTS)?,
        seed: u("seed", &l.seed, defaults.seed)?,
        prompt: lengths("prompt", l.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS)?,
        output: lengths("output", l.output_tokens.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS)?,
        reserve_bytes: s.reserve_bytes,
        ..defaults
    };
    let (requests, seed) = (sim.requests, sim.seed);
    let request = ServingPlanRequest { rate_per_s, ttft_bound_s, tpot_bound_s, max_gpus, price, sim };
    let plan = plan_serving(&sc, &request)?;
    let report = ServingPlanReport::new(
        Inputs::of(&sc),
        rate_per_s,
        ttft_bound_s,
        tpot_bound_s,
        max_gpus,
        price,
        requests,
        seed,
        plan,
    );
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
