//! The check the `simulate_inputs` fuzz target runs on each input (`fuzz/`), shared with the
//! regression test that replays the saved inputs (`tests/fuzz_regressions/simulate_inputs/`): the
//! input is read by the app's one parser of `simulate`'s inputs ([`llm_ledger_app::simulate`]), as
//! the CLI, the explorer and Python read theirs. It returns normally for any input: parsing may
//! fail with an error naming its field, but must not panic, hang or produce non-finite numbers.

#![allow(dead_code)]

use llm_ledger_app::simulate::{self, SimRequest};
use llm_ledger_app::{CommandError, Files};
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::simulate::stats::Quantiles;
use llm_ledger_core::simulate::SimSummary;
use llm_ledger_core::{Catalog, Error, ScenarioRequest};
use std::path::Path;

/// Engine steps one `simulate_inputs` case may take (a fuzzer explores the inputs, not long runs).
pub(crate) const SIMULATE_STEPS: u64 = 4_000;

/// The defaults of a case, smaller than `simulate`'s so that a case runs within
/// [`SIMULATE_STEPS`]: used where the input does not give the key.
const SMALL: [(&str, &str); 4] = [("requests", "20"), ("prompt", "256"), ("output", "16"), ("concurrency", "4")];

/// `simulate`'s own keys ([`simulate::inputs`]); the rest go to the scenario.
pub(crate) fn simulate_keys() -> Vec<&'static str> {
    simulate::inputs().iter().map(|i| i.name).collect()
}

/// `simulate`'s inputs: a URL query of `simulate`'s keys (the explorer's and the CLI's names;
/// `trace` and `hist:` lengths inline CSV, rows split by `;`) and any scenario keys. Either an
/// error that names its field, or runs to their end within [`SIMULATE_STEPS`] whose every number
/// is finite. Never a panic, a hang or a NaN.
pub(crate) fn check_simulate_inputs(data: &[u8]) {
    let Ok(pairs) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(data) else { return };
    match run_simulate_inputs(&pairs) {
        Ok(summaries) => summaries.iter().for_each(assert_finite_summary),
        Err(e) => assert!(e.field().is_some(), "an error about no field: {e}"),
    }
}

/// A "file" of the input: its name is its text, rows split by `;`.
fn inline(path: &Path, _what: &str) -> anyhow::Result<String> {
    Ok(path.to_string_lossy().replace(';', "\n"))
}

fn run_simulate_inputs(pairs: &[(String, String)]) -> Result<Vec<SimSummary>, CommandError> {
    let keys = simulate_keys();
    // Later pairs win, for the simulator's keys and the scenario's alike.
    let mut own: Vec<(&str, &str)> = SMALL.to_vec();
    let mut scenario: Vec<(&str, &str)> = Vec::new();
    for (k, v) in pairs {
        let list = if keys.contains(&k.as_str()) { &mut own } else { &mut scenario };
        list.retain(|(key, _)| key != k);
        list.push((k, v));
    }
    // A step budget given above the case's is the case's; any other text is parsed as given.
    let steps = SIMULATE_STEPS.to_string();
    match own.iter_mut().find(|(k, _)| *k == MAX_STEPS_FIELD) {
        Some((_, v)) if v.trim().parse::<u64>().is_ok_and(|n| n > SIMULATE_STEPS) => *v = &steps,
        Some(_) => {}
        None => own.push((MAX_STEPS_FIELD, &steps)),
    }
    let req: SimRequest = from_pairs(own).map_err(|e| Error::invalid("query", e.to_string(), "simulate's keys"))?;
    let scenario: ScenarioRequest =
        from_pairs(scenario).map_err(|e| Error::invalid("query", e.to_string(), "scenario keys"))?;
    let sc = scenario.resolve(&Catalog::builtin())?;
    let budget = simulate::budget(req.max_steps.as_deref(), None)?;
    let run = req.resolve(&sc, Files::Read(&inline))?.run(&sc, &budget, None)?;
    assert!(budget.used_steps() <= SIMULATE_STEPS, "{} steps", budget.used_steps());
    let mut summaries: Vec<SimSummary> = run.runs.into_iter().map(|r| r.summary).collect();
    // With `disagg`, the aggregated runs beside the disaggregated ones.
    summaries.extend(run.report.aggregated.iter().cloned());
    summaries.extend(run.report.aggregated_points.iter().flatten().cloned());
    Ok(summaries)
}

fn assert_finite_summary(s: &SimSummary) {
    let q = |q: &Quantiles| [q.mean, q.p50, q.p90, q.p99, q.max];
    let values = [
        s.arrival_rate_per_s,
        s.duration_s,
        s.mean_in_system,
        s.mean_latency_s,
        s.requests_per_s,
        s.input_tokens_per_s,
        s.output_tokens_per_s,
        s.goodput_per_s,
        s.slo_attainment,
        s.mean_batch,
        s.mean_queue,
        s.queue_growth_per_s,
        s.mean_kv_utilisation,
        s.max_kv_utilisation,
    ];
    let all = values.into_iter().chain(q(&s.ttft_s)).chain(q(&s.tpot_s)).chain(q(&s.itl_s)).chain(q(&s.e2e_s));
    for v in all {
        assert!(v.is_finite() && v >= 0.0, "a non-finite or negative number {v} in {s:?}");
    }
    assert!(s.completed <= s.requests);
}
