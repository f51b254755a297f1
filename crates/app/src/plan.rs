//! `plan`: the static plan (layouts ranked under a TPOT bound, [`PlanRequest`]) and the plan
//! under load (`plan --rate`, [`PlanLoadRequest`]): their inputs as text into the core's searches
//! ([`llm_ledger_core::plan::plan`], [`ServingPlanRequest`], the latter under a step budget), as
//! their reports. One definition for every front end.

use crate::simulate::{budget, lengths};
use crate::{CommandError, Files, Input};
use llm_ledger_core::error::integer_in;
use llm_ledger_core::error::Text;
use llm_ledger_core::limits::MAX_BATCH;
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::plan::MAX_PLAN_GPUS;
use llm_ledger_core::plan_serving::{
    Assessed, ServingPlanRequest, ServingSearch, DEFAULT_SEARCH_REQUESTS, MAX_SERVING_GPUS,
};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::{Serving, ServingRequest};
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::simulate::workload::check_rate;
use llm_ledger_core::simulate::{Budget, SimConfig};
use llm_ledger_core::stop::Stop;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::frontier::FrontierReport;
use llm_ledger_report::plan::PlanReport;
use llm_ledger_report::plan_serving::ServingPlanReport;
use llm_ledger_report::Inputs;
use rayon::prelude::*;
use serde::Deserialize;
use std::sync::atomic::AtomicBool;

type Result<T, E = CommandError> = std::result::Result<T, E>;

/// Default GPU budget of a plan (`max_gpus`).
pub const DEFAULT_MAX_GPUS: u64 = 64;

/// The inputs of every plan, static or under load, besides the scenario, as text, named as
/// [`inputs`] names them (`batch` is the static plan's axis of candidate batches, not the
/// scenario's batch).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// The candidate batches: a list or a range (default: every batch that fits).
    pub batch: Option<String>,
    /// Bound on the time per output token, milliseconds.
    pub tpot_ms: Option<String>,
    /// Most GPUs per replica.
    pub max_gpus: Option<String>,
    /// Price, USD per GPU-hour.
    pub usd_per_hour: Option<String>,
    /// Memory reserve per GPU (e.g. `2GB`).
    pub reserve: Option<String>,
    /// `on`: every deployment and the Pareto front of tokens/s per GPU against tokens/s per
    /// user instead of the ranking (no TPOT bound needed).
    pub pareto: Option<String>,
}

impl PlanRequest {
    /// The plan's price, reserve and TPOT bound, resolved for `sc` (both kinds of plan).
    pub fn serving(&self, sc: &Scenario) -> Result<Serving> {
        let req = ServingRequest {
            usd_per_hour: self.usd_per_hour.clone(),
            reserve: self.reserve.clone(),
            tpot_ms: self.tpot_ms.clone(),
            ..Default::default()
        };
        Ok(req.resolve(sc)?)
    }

    /// The static plan of `sc` (its context is the plan's): the layouts within `max_gpus` that
    /// fit and meet the TPOT bound, over the candidate batches, cheapest first, as its report.
    /// Checked in this order: the price, reserve and bound ([`PlanRequest::serving`]), `max_gpus`
    /// ([`max_gpus`]), `batch`, then the price and the bound are required.
    pub fn run(&self, sc: &Scenario) -> Result<PlanReport> {
        self.run_within(sc, None)
    }

    /// [`PlanRequest::run`], stopped once `cancel` becomes true (Ctrl-C, a request's deadline).
    pub fn run_within(&self, sc: &Scenario, cancel: Option<&AtomicBool>) -> Result<PlanReport> {
        let serving = self.serving(sc)?;
        let max_gpus = max_gpus(self.max_gpus.as_deref())?;
        let batches = self.batch.as_deref().map(|t| Axis::parse("batch", t, 1, MAX_BATCH)).transpose()?;
        Ok(PlanReport::build_within(sc, &serving, max_gpus, batches, Stop::maybe(cancel))?)
    }

    /// Whether `pareto` asks for the front (`on`; `off` and none: the ranking).
    pub fn pareto(&self) -> Result<bool> {
        match self.pareto.as_deref().map(|s| s.trim().to_ascii_lowercase()) {
            None => Ok(false),
            Some(s) if s == "on" => Ok(true),
            Some(s) if s == "off" => Ok(false),
            Some(s) => Err(Error::unknown("pareto", s, ["on", "off"]).about("pareto").into()),
        }
    }

    /// `pareto` refused beside `rate`: the plan under load has a front of its own (cost against
    /// p99 latency).
    pub fn check_load(&self) -> Result<()> {
        if self.pareto()? {
            return Err(Error::refused(
                "pareto",
                "on",
                "the static plan (without {rate}): a plan under load prints its own Pareto front",
            )
            .into());
        }
        Ok(())
    }

    /// Every deployment of the static plan's search and their Pareto front of tokens/s per GPU
    /// against tokens/s per user (`pareto` on), as its report: the layouts within `max_gpus`
    /// that fit, at the candidate batches up to the memory wall, at `sc`'s context. A TPOT bound
    /// is optional (each deployment says whether it meets it). Checked in [`PlanRequest::run`]'s
    /// order; then a price is required.
    pub fn frontier(&self, sc: &Scenario) -> Result<FrontierReport> {
        self.frontier_within(sc, None)
    }

    /// [`PlanRequest::frontier`], stopped once `cancel` becomes true.
    pub fn frontier_within(&self, sc: &Scenario, cancel: Option<&AtomicBool>) -> Result<FrontierReport> {
        let serving = self.serving(sc)?;
        let max_gpus = max_gpus(self.max_gpus.as_deref())?;
        let batches = self.batch.as_deref().map(|t| Axis::parse("batch", t, 1, MAX_BATCH)).transpose()?;
        let price = serving.require_price(&sc.gpu.name)?;
        let (reserve, bound) = (serving.reserve_bytes, serving.tpot_bound_s);
        Ok(FrontierReport::build_within(sc, price, reserve, bound, max_gpus, batches, Stop::maybe(cancel))?)
    }
}

/// The plan's inputs besides the scenario, in [`PlanRequest`]'s field order; `plan --rate` adds
/// [`load_inputs`].
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("batch", None, "a list or a range (default: every batch that fits)", "the candidate batches"),
        Input::text("tpot_ms", None, "milliseconds (required)", "upper bound on the time per output token"),
        Input::text("max_gpus", Some("64"), "an integer from 1 to 1,024", "most GPUs per replica"),
        Input::text("usd_per_hour", None, "a number > 0 (default: the catalogue's price)", "price per GPU-hour"),
        Input::text("reserve", Some("2GB"), "bytes (`2GB`, `512MiB`)", "memory kept free per GPU"),
        Input::text(
            "pareto",
            Some("off"),
            "on or off",
            "every layout × batch that fits and the Pareto front of tokens/s per GPU against tokens/s per user, instead of the ranking (no TPOT bound needed)",
        ),
    ];
    INPUTS
}

/// The inputs of `plan --rate` (the plan under load), as text, named as [`load_inputs`] names
/// them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanLoadRequest {
    /// Arrival rate, requests/s (Poisson).
    pub rate: Option<String>,
    /// Bound on the p99 TTFT, milliseconds.
    pub ttft_ms: Option<String>,
    /// Most GPUs of a deployment in all.
    pub gpus_total: Option<String>,
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
    /// Refuse an input of the plan under load given without `rate` (the static plan), and the
    /// static plan's context from `prompt` and `output` (`prompt + ⌊output ÷ 2⌋`), which
    /// the front end sets as the scenario's `ctx`.
    #[must_use = "the context from prompt and output replaces the scenario's ctx"]
    pub fn check_static(&self, ctx_given: bool) -> Result<Option<u64>> {
        for (flag, given) in [
            ("ttft_ms", self.ttft_ms.is_some()),
            ("gpus_total", self.gpus_total.is_some()),
            ("requests", self.requests.is_some()),
            ("seed", self.seed.is_some()),
            (MAX_STEPS_FIELD, self.max_steps.is_some()),
        ] {
            if given {
                return Err(Error::refused(flag, "given", "it applies only with {rate} (a plan under load)").into());
            }
        }
        self.static_ctx(ctx_given)
    }

    /// The static plan's context from `prompt` and `output` where either is given: the mean
    /// context of a request's decode steps, `prompt + ⌊output ÷ 2⌋` tokens (its first decode step
    /// reads the prompt, its last the prompt and every output token but one); `None` where neither
    /// is. Fixed counts only (the static plan times one context; a distribution needs `rate`), and
    /// not with `ctx` (one or the other). The static plan prices the decode steps alone (its basis
    /// line says so); `rate` simulates the prefill too.
    fn static_ctx(&self, ctx_given: bool) -> Result<Option<u64>> {
        if self.prompt.is_none() && self.output.is_none() {
            return Ok(None);
        }
        if ctx_given {
            let value = Text::template("given with {prompt} or {output}");
            return Err(Error::refused_text("ctx", value, Text::template("one or the other")).into());
        }
        let fixed = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
            let Some(text) = v.as_deref() else { return Ok(default) };
            text.trim().parse::<u64>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                Error::invalid(
                    field,
                    text.trim(),
                    "a number of tokens, at least 1 (a distribution needs --rate: the static plan times one context)",
                )
                .into()
            })
        };
        let prompt = fixed("prompt", &self.prompt, llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS)?;
        let output = fixed("output", &self.output, llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS)?;
        Ok(Some(prompt.saturating_add(output / 2)))
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
    /// under the step budget of `max_steps` and stops once `cancel` becomes true; its
    /// candidates are assessed on this machine's cores.
    pub fn report(
        &self,
        sc: &Scenario,
        s: &Serving,
        checked: (f64, f64),
        max_gpus: u64,
        files: Files<'_>,
        cancel: Option<&AtomicBool>,
    ) -> Result<ServingPlanReport> {
        let budget = budget(self.max_steps.as_deref(), cancel)?;
        self.report_within(sc, s, checked, max_gpus, files, &budget)
    }

    /// [`PlanLoadRequest::report`] under a budget the caller made from `max_steps`
    /// ([`budget`]) and holds, to watch its steps as the simulations take them.
    pub fn report_within(
        &self,
        sc: &Scenario,
        s: &Serving,
        checked: (f64, f64),
        max_gpus: u64,
        files: Files<'_>,
        budget: &Budget,
    ) -> Result<ServingPlanReport> {
        let search = self.search(sc, s, checked, max_gpus, files)?;
        search.search.admit(budget)?;
        let assessed = (0..search.search.len())
            .into_par_iter()
            .map(|j| search.search.assess(j, budget))
            .collect::<Result<Vec<_>, Error>>()?;
        search.report(assessed)
    }

    /// The search of [`PlanLoadRequest::report`] laid out, before any simulation, with what
    /// its report names: candidate `j` can then be assessed anywhere that builds the same search
    /// from the same inputs ([`LoadSearch::assess_json`]) and the assessments gathered here
    /// ([`LoadSearch::report`]).
    pub fn search(
        &self,
        sc: &Scenario,
        s: &Serving,
        checked: (f64, f64),
        max_gpus: u64,
        files: Files<'_>,
    ) -> Result<LoadSearch> {
        let (rate_per_s, ttft_bound_s) = checked;
        budget(self.max_steps.as_deref(), None)?;
        let price = s.require_price(&sc.gpu.name)?;
        let Some(tpot_bound_s) = s.tpot_bound_s else {
            return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds").into());
        };
        let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
            Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
        };
        // Each candidate is served by the engine's own scheduler (as `simulate` runs it).
        let defaults = SimConfig::poisson(rate_per_s).for_engine(sc.clock.engine, &sc.gpu);
        let sim = SimConfig {
            requests: u("requests", &self.requests, DEFAULT_SEARCH_REQUESTS)?,
            seed: u("seed", &self.seed, defaults.seed)?,
            prompt: lengths("prompt", self.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS, files)?,
            output: lengths("output", self.output.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS, files)?,
            reserve_bytes: s.reserve_bytes,
            ..defaults
        };
        let (requests, seed) = (sim.requests, sim.seed);
        let gpus_total = u("gpus_total", &self.gpus_total, MAX_SERVING_GPUS)?;
        let request = ServingPlanRequest { rate_per_s, ttft_bound_s, tpot_bound_s, max_gpus, gpus_total, price, sim };
        let search = ServingSearch::new(sc, &request)?;
        Ok(LoadSearch { search, inputs: Inputs::of(sc), request, requests, seed, max_steps: self.max_steps.clone() })
    }
}

/// A plan under load laid out ([`PlanLoadRequest::search`]): the core's search and what the
/// report names.
#[derive(Debug, Clone)]
pub struct LoadSearch {
    /// The candidates.
    pub search: ServingSearch,
    inputs: Inputs,
    request: ServingPlanRequest,
    requests: u64,
    seed: u64,
    max_steps: Option<String>,
}

impl LoadSearch {
    /// Refuse the whole search before any candidate runs when its estimated steps exceed the
    /// request's `max_steps` (the check [`PlanLoadRequest::report`] makes).
    pub fn admit(&self) -> Result<()> {
        Ok(self.search.admit(&budget(self.max_steps.as_deref(), None)?)?)
    }

    /// Assess candidate `j` under a step budget of its own (the request's `max_steps`; a
    /// search spread over workers, admitted whole by [`LoadSearch::admit`], bounds each
    /// candidate's simulations by it), as JSON: the text a worker sends back for
    /// [`LoadSearch::report_from_json`].
    pub fn assess_json(&self, j: usize) -> Result<String> {
        let budget = budget(self.max_steps.as_deref(), None)?;
        let assessed = self.search.assess(j, &budget)?;
        Ok(serde_json::to_string(&assessed).expect("an assessment is JSON"))
    }

    /// The report from every candidate's assessment as [`LoadSearch::assess_json`] wrote it,
    /// in candidate order.
    pub fn report_from_json<S: AsRef<str>>(&self, parts: &[S]) -> Result<ServingPlanReport> {
        let assessed = parts
            .iter()
            .enumerate()
            .map(|(j, text)| {
                serde_json::from_str::<Assessed>(text.as_ref()).map_err(|e| {
                    CommandError::from(Error::Malformed {
                        what: format!("assessment of candidate {j}"),
                        message: e.to_string(),
                    })
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.report(assessed)
    }

    /// The report of a search that may stop before its end (the explorer's, held to a deadline
    /// by `budget`'s cancellation): no estimate refuses it up front; the candidates are assessed
    /// the fewest GPUs first ([`ServingSearch::fewest_gpus_first`]), as many at once as there are
    /// cores, and once the budget is spent or cancelled the plan is the one of those assessed,
    /// saying how many were not ([`llm_ledger_core::plan_serving::ServingPlan::unassessed`]).
    pub fn report_fewest_first(&self, budget: &Budget) -> Result<ServingPlanReport> {
        let mut assessed: Vec<Option<Assessed>> = vec![None; self.search.len()];
        let order = self.search.fewest_gpus_first();
        for wave in order.chunks(rayon::current_num_threads().max(1)) {
            let done = wave
                .par_iter()
                .map(|&j| match self.search.assess(j, budget) {
                    Ok(a) => Ok((j, Some(a))),
                    Err(Error::Cancelled | Error::OverBudget { .. }) => Ok((j, None)),
                    Err(e) => Err(e),
                })
                .collect::<Result<Vec<_>, Error>>()?;
            let stopped = done.iter().any(|(_, a)| a.is_none());
            for (j, a) in done {
                assessed[j] = a;
            }
            if stopped {
                break;
            }
        }
        self.report_partial(assessed)
    }

    /// The report from every candidate's assessment, in candidate order.
    pub fn report(&self, assessed: Vec<Assessed>) -> Result<ServingPlanReport> {
        self.report_partial(assessed.into_iter().map(Some).collect())
    }

    /// The report from the candidates assessed (`None`: not assessed), in candidate order.
    pub fn report_partial(&self, assessed: Vec<Option<Assessed>>) -> Result<ServingPlanReport> {
        let plan = self.search.gather_partial(assessed)?;
        let r = &self.request;
        Ok(ServingPlanReport::new(
            self.inputs.clone(),
            r.rate_per_s,
            r.ttft_bound_s,
            r.tpot_bound_s,
            r.max_gpus,
            r.price,
            format!(
                "{} + {}",
                llm_ledger_report::simulate::lengths_words(&r.sim.prompt),
                llm_ledger_report::simulate::lengths_words(&r.sim.output)
            ),
            self.requests,
            self.seed,
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
        return Err(Error::invalid("max_gpus", max_gpus, integer_in(1, MAX_PLAN_GPUS)));
    }
    Ok(max_gpus)
}

/// `plan --rate`'s inputs (the plan under load), in [`PlanLoadRequest`]'s field order.
pub fn load_inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("rate", None, "requests/s, a number > 0", "arrival rate of a plan under load (Poisson)"),
        Input::text("ttft_ms", None, "milliseconds", "bound on the p99 time to first token"),
        Input::text(
            "gpus_total",
            Some("1024"),
            "an integer from 1 to 1,024",
            "most GPUs of a deployment in all (every replica, both pools; max_gpus bounds one replica)",
        ),
        Input::text("requests", Some("2000"), "a positive integer", "requests simulated per candidate"),
        Input::text("seed", Some("0"), "an integer", "seed of the arrival and length draws"),
        Input::text("prompt", Some("2048"), "as simulate's prompt", "prompt tokens"),
        Input::text("output", Some("256"), "as simulate's output", "output tokens"),
        Input::text(
            MAX_STEPS_FIELD,
            Some("100000000"),
            "an integer from 1 to 10,000,000,000",
            "most engine steps over the search",
        ),
    ];
    INPUTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_checks::assert_request_is_table;

    #[test]
    fn the_requests_take_the_input_tables_fields_in_order() {
        let req: PlanRequest = assert_request_is_table(inputs());
        assert_eq!((req.batch.as_deref(), req.reserve.as_deref()), (Some("1"), Some("1")));
        let load: PlanLoadRequest = assert_request_is_table(load_inputs());
        assert_eq!(load.max_steps.as_deref(), Some("1"));
    }

    /// Every candidate, the disaggregated ones too, assessed on a search of its own and sent
    /// back as JSON (as an executor's worker does), gathers into the plan made in one process,
    /// number for number.
    #[test]
    fn assessments_sent_as_json_gather_into_the_plan_made_here() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req = PlanRequest { tpot_ms: Some("50".into()), max_gpus: Some("2".into()), ..Default::default() };
        let load = PlanLoadRequest {
            rate: Some("4".into()),
            ttft_ms: Some("500".into()),
            requests: Some("100".into()),
            prompt: Some("256".into()),
            output: Some("16".into()),
            seed: Some("3".into()),
            ..Default::default()
        };
        let s = req.serving(&sc).unwrap();
        let checked = load.check("4", false, false).unwrap();
        let here = load.report(&sc, &s, checked, 2, Files::None, None).unwrap();
        let search = || load.search(&sc, &s, checked, 2, Files::None).unwrap();
        let n = search().search.len();
        let parts: Vec<String> = (0..n).map(|j| search().assess_json(j).unwrap()).collect();
        let spread = search().report_from_json(&parts).unwrap();
        assert!(here.disaggregated_candidates > 0 && here.candidates == n);
        assert_eq!(serde_json::to_string(&spread).unwrap(), serde_json::to_string(&here).unwrap());
    }

    /// The table's default and range of `max_gpus` are the ones [`max_gpus`] applies.
    #[test]
    fn max_gpus_is_parsed_once_with_the_tables_default_and_range() {
        let row = inputs().iter().find(|i| i.name == "max_gpus").unwrap();
        assert_eq!(row.default, Some("64"));
        assert_eq!(max_gpus(None).unwrap(), DEFAULT_MAX_GPUS);
        assert!(row.accepted.contains(&llm_ledger_core::error::range_words(1, MAX_PLAN_GPUS)), "{}", row.accepted);
        assert_eq!(max_gpus(Some("1024")).unwrap(), 1024);
        assert_eq!(max_gpus(Some("0")).unwrap_err().to_string(), "invalid `max_gpus`: 0 (an integer from 1 to 1,024)");
        assert_eq!(max_gpus(Some("x")).unwrap_err().field(), Some("max_gpus"));
    }

    /// The static plan checks its inputs in the CLI's order: the price, reserve and bound, then
    /// `max_gpus`, then the candidate batches.
    #[test]
    fn the_static_plan_checks_its_inputs_in_order() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req =
            |pairs: &[(&str, &str)]| -> PlanRequest { llm_ledger_core::pairs::from_pairs(pairs.to_vec()).unwrap() };
        let field = |r: PlanRequest| r.run(&sc).err().and_then(|e| e.field().map(str::to_string));
        assert_eq!(field(req(&[("tpot_ms", "x"), ("max_gpus", "0"), ("batch", "0")])).as_deref(), Some("tpot_ms"));
        assert_eq!(field(req(&[("tpot_ms", "50"), ("max_gpus", "0"), ("batch", "0")])).as_deref(), Some("max_gpus"));
        assert_eq!(field(req(&[("tpot_ms", "50"), ("batch", "0")])).as_deref(), Some("batch"));
        assert_eq!(field(req(&[])).as_deref(), Some("tpot_ms"));
        assert_eq!(req(&[("pareto", "maybe")]).pareto().unwrap_err().field(), Some("pareto"));
        let report = req(&[("tpot_ms", "50"), ("max_gpus", "2"), ("batch", "1,8")]).run(&sc).unwrap();
        assert_eq!(report.max_gpus, 2);
        assert!(report.ranked.iter().all(|p| [1, 8].contains(&p.batch) && p.tp * p.pp * p.ep <= 2));
    }

    /// `pareto` on: every deployment with its tokens/s per user (1 ÷ TPOT) and per GPU (batch ÷
    /// TPOT ÷ GPUs), the front among them, without a TPOT bound; refused beside a rate.
    #[test]
    fn the_pareto_front_needs_no_bound() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req =
            |pairs: &[(&str, &str)]| -> PlanRequest { llm_ledger_core::pairs::from_pairs(pairs.to_vec()).unwrap() };
        let r = req(&[("pareto", "on"), ("max_gpus", "2")]);
        assert!(r.pareto().unwrap());
        let f = r.frontier(&sc).unwrap();
        assert_eq!(f.max_gpus, 2);
        assert!(f.tpot_bound_s.is_none());
        for d in &f.deployments {
            let p = &d.point;
            assert!((p.tokens_per_s_per_gpu * p.gpus as f64 * p.tpot_s - p.batch as f64).abs() < 1e-9 * p.batch as f64);
            assert!((d.tokens_per_s_per_user * p.tpot_s - 1.0).abs() < 1e-12);
        }
        assert!(!f.front.is_empty() && f.front.iter().all(|d| d.front));
        assert_eq!(r.check_load().unwrap_err().field(), Some("pareto"));
        assert!(req(&[("pareto", "off")]).check_load().is_ok());
        assert_eq!(req(&[("pareto", "on"), ("max_gpus", "0")]).frontier(&sc).unwrap_err().field(), Some("max_gpus"));
    }
}
