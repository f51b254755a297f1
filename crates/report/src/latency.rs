//! The `latency` report: TTFT, TPOT and end-to-end latency of a batch of identical requests.
//!
//! JSON keys (stable): `inputs`, `batch`, `prompt_tokens`, `output_tokens`, `ttft_s`, `tpot_s`
//! (`null` with one output token), `decode_s`, `e2e_s`, `output_tokens_per_s`,
//! `decode_tokens_per_s`, `peak_memory_bytes`, `peak_phase` (`prefill` or `decode`: the step of
//! the peak), `fits`, `max_batch`, `fit_basis` (`request_peak`:
//! [`llm_ledger_core::memory::FitBasis::RequestPeak`]), `decode_sum`, and as every report's
//! [`crate::fit::FitView`]: `memory_bytes` (the peak's), `gpu_memory_bytes`, `plan_command`.

use crate::facts::{facts_table, yes_no};
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::error::Result;
use llm_ledger_core::latency::{DecodeSum, Latency, EXACT_DECODE_STEPS, QUADRATURE_PANELS};
use llm_ledger_core::memory::at_uniform;
use llm_ledger_core::serving::Serving;
use llm_ledger_core::{Phase, Scenario};
use serde::Serialize;

/// The `latency` report.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    /// Inputs (precisions, GPU; batch and contexts are those of the requests).
    pub inputs: Inputs,
    /// The numbers.
    #[serde(flatten)]
    pub latency: Latency,
    /// Memory at the peak on the fullest GPU, bytes (`peak_memory_bytes`, under the name every
    /// report gives it).
    pub memory_bytes: f64,
    /// One GPU's memory, bytes.
    pub gpu_memory_bytes: f64,
    /// When the requests do not fit: the `plan` command that searches for a layout that does.
    pub plan_command: Option<String>,
}

impl LatencyReport {
    /// The `latency` command's report: a batch of `sc`'s batch size of identical requests with the
    /// prompt and output lengths of `serving`.
    pub fn build(sc: &Scenario, serving: &Serving) -> Result<LatencyReport> {
        let batch = sc.workload.contexts.batch();
        let latency = Latency::of(sc, batch, serving.prompt_tokens, serving.output_tokens, serving.reserve_bytes)?;
        Ok(LatencyReport::new(sc, latency))
    }

    /// The report of `latency`, requests on `sc`'s model and GPU.
    pub fn new(sc: &Scenario, latency: Latency) -> LatencyReport {
        LatencyReport {
            inputs: Inputs::of(&at_uniform(sc, latency.batch, latency.prompt_tokens)),
            memory_bytes: latency.peak_memory_bytes,
            gpu_memory_bytes: sc.gpu.memory_bytes,
            plan_command: (!latency.fits).then(|| crate::fit::plan_command(sc)),
            latency,
        }
    }
}

/// The step of a request's memory peak, in words.
pub fn peak_step(phase: Phase) -> &'static str {
    match phase {
        Phase::Prefill => "prefill",
        Phase::Decode => "last decode step",
    }
}

/// How the decode sum was computed, in words.
pub fn decode_sum_note(d: DecodeSum) -> String {
    match d {
        DecodeSum::Exact => format!("decode summed exactly over every step (up to {EXACT_DECODE_STEPS} steps)"),
        DecodeSum::Quadrature => format!(
            "decode summed by the trapezoid rule for sums over {QUADRATURE_PANELS} panels (exact where the step time is linear in the context)"
        ),
    }
}

impl Report for LatencyReport {
    type CsvRow = Latency;

    fn csv_rows(&self) -> Vec<Latency> {
        vec![self.latency]
    }

    fn human(&self) -> HumanTable {
        let l = &self.latency;
        let i = &self.inputs;
        let title = format!(
            "{} on {} · batch {} × (prompt {} + output {}) · weights {} · KV {}{}",
            i.model,
            i.gpu,
            human::count(l.batch),
            human::count(l.prompt_tokens),
            human::count(l.output_tokens),
            i.weights_shown(),
            i.kv,
            i.layout_suffix()
        );
        let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or("— (one output token)".to_string(), f);
        facts_table(
            vec![title],
            vec![
                ("TTFT (prefill)", human::seconds(l.ttft_s)),
                ("TPOT (mean decode step)", opt(l.tpot_s, human::seconds)),
                ("decode", human::seconds(l.decode_s)),
                ("end to end", human::seconds(l.e2e_s)),
                ("output tok/s (whole request)", human::sig3(l.output_tokens_per_s)),
                ("output tok/s (decoding)", opt(l.decode_tokens_per_s, human::sig3)),
                ("peak memory", format!("{} ({})", human::bytes(l.peak_memory_bytes), peak_step(l.peak_phase))),
                ("fits", yes_no(l.fits)),
                ("max batch", human::count(l.max_batch)),
            ],
            vec![
                "TTFT = one prefill step of batch × prompt; TPOT = Σ decode steps at prompt … prompt + output − 2 cached tokens ÷ (output − 1); e2e = TTFT + decode".into(),
                decode_sum_note(l.decode_sum),
                l.fit_basis.rule(i.counting).into(),
            ]
            .into_iter()
            .chain(self.plan_command.as_deref().map(crate::fit::hint))
            .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::{Catalog, ScenarioRequest};

    fn report(output: u64) -> LatencyReport {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let l = Latency::of(&sc, 8, 2048, output, 2e9).unwrap();
        LatencyReport::new(&sc, l)
    }

    #[test]
    fn latency_table() {
        insta::assert_snapshot!(report(256).render(Format::Table).unwrap());
    }

    #[test]
    fn latency_json_has_the_stable_keys() {
        let v: serde_json::Value = serde_json::from_str(&report(256).render(Format::Json).unwrap()).unwrap();
        for k in ["ttft_s", "tpot_s", "e2e_s"] {
            assert!(v[k].is_number(), "{k}");
        }
        let one: serde_json::Value = serde_json::from_str(&report(1).render(Format::Json).unwrap()).unwrap();
        assert!(one["tpot_s"].is_null());
    }
}
