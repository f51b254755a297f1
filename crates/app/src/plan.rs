//! `plan`: the static plan's GPU budget, and the plan under load (`plan --rate`): its inputs as
//! text into the core's [`ServingPlanRequest`], run under a step budget, as its report. One
//! definition for every front end.

use crate::simulate::{budget, lengths};
use crate::{CommandError, Files, Input};
use llm_ledger_core::error::Text;
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::plan::MAX_PLAN_GPUS;
use llm_ledger_core::plan_serving::{plan_serving_within, ServingPlanRequest, DEFAULT_SEARCH_REQUESTS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::Serving;
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::simulate::workload::check_rate;
use llm_ledger_core::simulate::SimConfig;
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::plan::DEFAULT_MAX_GPUS;
use llm_ledger_report::plan_serving::ServingPlanReport;
use llm_ledger_report::Inputs;
use serde::Deserialize;
use std::sync::atomic::AtomicBool;

type Result<T, E = CommandError> = std::result::Result<T, E>;

/// The inputs of `plan --rate` (the plan under load), as text, named as [`load_inputs`] names
/// them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanLoadRequest {
    /// Arrival rate, requests/s (Poisson).
    pub rate: Option<String>,
    /// Bound on the p99 TTFT, milliseconds.
    pub ttft_ms: Option<String>,
    /// Requests simulated per candidate.
    pub requests: Option<String>,
    /// Seed of the draws.
    pub seed: Option<String>,
    /// Prompt lengths, as `simulate`'s.
    pub prompt: Option<String>,
    /// Output lengths, as `simulate`'s.
    pub output: Option<String>,
    /// Engine steps over every simulation of the search (the step budget).
    pub max_steps: Option<String>,
}

impl PlanLoadRequest {
    /// Refuse an input of the plan under load given without `rate` (the static plan).
    pub fn check_static(&self) -> Result<()> {
        for (flag, given) in [
            ("ttft_ms", self.ttft_ms.is_some()),
            ("requests", self.requests.is_some()),
            ("seed", self.seed.is_some()),
            ("prompt", self.prompt.is_some()),
            ("output", self.output.is_some()),
            (MAX_STEPS_FIELD, self.max_steps.is_some()),
        ] {
            if given {
                return Err(Error::refused(flag, "given", "it applies only with {rate} (a plan under load)").into());
            }
        }
        Ok(())
    }

    /// The rate (`rate`, the text of [`PlanLoadRequest::rate`]) and the TTFT bound in seconds,
    /// checked, and refusals of `batch` and `ctx` (the simulated lengths replace them); run
    /// before the scenario is resolved.
    pub fn check(&self, rate: &str, batch_given: bool, ctx_given: bool) -> Result<(f64, f64)> {
        let rate_per_s = check_rate("rate", parse_f64("rate", rate)?)?;
        for (flag, given) in [("batch", batch_given), ("ctx", ctx_given)] {
            if given {
                let value = Text::template("given with {rate}");
                let expected = Text::template("{prompt} and {output} (the simulated lengths)");
                return Err(Error::refused_text(flag, value, expected).into());
            }
        }
        let Some(ttft) = &self.ttft_ms else {
            return Err(Error::refused("ttft_ms", "none given", "a p99 bound in milliseconds with {rate}").into());
        };
        let ttft_bound_s = TPOT_MS.parse(ttft).map_err(|e| e.map_field(|_| "ttft_ms".to_string()))? / 1e3;
        Ok((rate_per_s, ttft_bound_s))
    }

    /// The cheapest deployment of `sc` holding the p99 TTFT and TPOT bounds at the rate, by
    /// simulation (`plan_serving`), as its report: `checked` is [`PlanLoadRequest::check`]'s rate
    /// and TTFT bound; `s` holds the price, the reserve and the TPOT bound. The search runs
    /// under the step budget of `max_steps` and stops once `cancel` becomes true.
    pub fn report(
        &self,
        sc: &Scenario,
        s: &Serving,
        checked: (f64, f64),
        max_gpus: u64,
        files: Files<'_>,
        cancel: Option<&AtomicBool>,
    ) -> Result<ServingPlanReport> {
        let (rate_per_s, ttft_bound_s) = checked;
        let budget = budget(self.max_steps.as_deref(), cancel)?;
        let price = s.require_price(&sc.gpu.name)?;
        let Some(tpot_bound_s) = s.tpot_bound_s else {
            return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds").into());
        };
        let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
            Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
        };
        let defaults = SimConfig::poisson(rate_per_s);
        let sim = SimConfig {
            requests: u("requests", &self.requests, DEFAULT_SEARCH_REQUESTS)?,
            seed: u("seed", &self.seed, defaults.seed)?,
            prompt: lengths("prompt", self.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS, files)?,
            output: lengths("output", self.output.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS, files)?,
            reserve_bytes: s.reserve_bytes,
            ..defaults
        };
        let (requests, seed) = (sim.requests, sim.seed);
        let request = ServingPlanRequest { rate_per_s, ttft_bound_s, tpot_bound_s, max_gpus, price, sim };
        let plan = plan_serving_within(sc, &request, &budget)?;
        Ok(ServingPlanReport::new(
            Inputs::of(sc),
            rate_per_s,
            ttft_bound_s,
            tpot_bound_s,
            max_gpus,
            price,
            requests,
            seed,
            plan,
        ))
    }
}

/// `max_gpus` of a plan, static or under load (default [`DEFAULT_MAX_GPUS`]), in 1..=[`MAX_PLAN_GPUS`].
pub fn max_gpus(text: Option<&str>) -> Result<u64, Error> {
    let max_gpus = match text {
        Some(s) => parse_u64("max_gpus", s)?,
        None => DEFAULT_MAX_GPUS,
    };
    if !(1..=MAX_PLAN_GPUS).contains(&max_gpus) {
        return Err(Error::invalid("max_gpus", max_gpus, format!("an integer in 1..={MAX_PLAN_GPUS}")));
    }
    Ok(max_gpus)
}

/// `plan --rate`'s inputs (the plan under load), in [`PlanLoadRequest`]'s field order.
pub fn load_inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("rate", None, "requests/s, a number > 0", "arrival rate of a plan under load (Poisson)"),
        Input::text("ttft_ms", None, "milliseconds", "bound on the p99 time to first token"),
        Input::text("requests", Some("2000"), "a positive integer", "requests simulated per candidate"),
        Input::text("seed", Some("0"), "an integer", "seed of the arrival and length draws"),
        Input::text("prompt", Some("2048"), "as simulate's prompt", "prompt tokens"),
        Input::text("output", Some("256"), "as simulate's output", "output tokens"),
        Input::text(MAX_STEPS_FIELD, Some("100000000"), "a positive integer", "most engine steps over the search"),
    ];
    INPUTS
}
