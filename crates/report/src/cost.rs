//! The `cost` report: dollars per million tokens at a batch, and the cheapest batch under a
//! TPOT bound.
//!
//! JSON keys (stable): `inputs`, `usd_per_hour`, `price_source`, `prompt_tokens`,
//! `output_tokens`, `usd_per_million_output_tokens`, `usd_per_million_input_tokens`,
//! `usd_per_request` (all at the given batch), `tpot_bound_s`, `rows[]` (the given batch, then the
//! cheapest batch under the bound when one is asked for; each with `label`, `batch`, `ttft_s`,
//! `tpot_s`, `e2e_s`, `output_tokens_per_s`, `usd_per_million_input_tokens`,
//! `usd_per_million_output_tokens`, `usd_per_request`, `peak_memory_bytes`, `peak_phase`, `fits`,
//! `fit_basis` (`request_peak`: [`llm_ledger_core::memory::FitBasis::RequestPeak`])), and whether
//! the given batch fits, as every report's [`FitView`]: `fits`, `memory_bytes` (its peak),
//! `gpu_memory_bytes`, `plan_command`.

use crate::fit::FitView;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::economics::{cheapest_under_tpot, CostPoint};
use llm_ledger_core::error::Result;
use llm_ledger_core::memory::at_uniform;
use llm_ledger_core::memory::FitBasis;
use llm_ledger_core::serving::{PriceSource, Serving};
use llm_ledger_core::{Phase, Scenario};
use serde::Serialize;

/// One batch's cost.
#[derive(Debug, Clone, Serialize)]
pub struct CostRow {
    /// `batch` (as given) or `cheapest` (under the TPOT bound).
    pub label: &'static str,
    /// Requests in the batch.
    pub batch: u64,
    /// Time to first token, seconds.
    pub ttft_s: f64,
    /// Time per output token, seconds.
    pub tpot_s: Option<f64>,
    /// End-to-end latency, seconds.
    pub e2e_s: f64,
    /// Output tokens per second over whole requests.
    pub output_tokens_per_s: f64,
    /// USD per million prompt tokens.
    pub usd_per_million_input_tokens: f64,
    /// USD per million output tokens.
    pub usd_per_million_output_tokens: Option<f64>,
    /// USD per request.
    pub usd_per_request: f64,
    /// Peak memory, bytes.
    pub peak_memory_bytes: f64,
    /// The step of the peak: `prefill` or `decode` (the last decode step).
    pub peak_phase: Phase,
    /// Fits the GPU after the reserve.
    pub fits: bool,
    /// The basis of `fits`: the requests' peak.
    pub fit_basis: FitBasis,
}

impl CostRow {
    fn of(label: &'static str, c: &CostPoint) -> CostRow {
        let l = &c.latency;
        CostRow {
            label,
            batch: l.batch,
            ttft_s: l.ttft_s,
            tpot_s: l.tpot_s,
            e2e_s: l.e2e_s,
            output_tokens_per_s: l.output_tokens_per_s,
            usd_per_million_input_tokens: c.usd_per_million_input_tokens,
            usd_per_million_output_tokens: c.usd_per_million_output_tokens,
            usd_per_request: c.usd_per_request,
            peak_memory_bytes: l.peak_memory_bytes,
            peak_phase: l.peak_phase,
            fits: l.fits,
            fit_basis: l.fit_basis,
        }
    }
}

/// The `cost` report.
#[derive(Debug, Clone, Serialize)]
pub struct CostReport {
    /// Inputs.
    pub inputs: Inputs,
    /// Price, USD per GPU-hour.
    pub usd_per_hour: f64,
    /// Where the price comes from.
    pub price_source: PriceSource,
    /// Prompt tokens per request.
    pub prompt_tokens: u64,
    /// Output tokens per request.
    pub output_tokens: u64,
    /// USD per million output tokens at the given batch.
    pub usd_per_million_output_tokens: Option<f64>,
    /// USD per million input tokens at the given batch.
    pub usd_per_million_input_tokens: f64,
    /// USD per request at the given batch.
    pub usd_per_request: f64,
    /// The TPOT bound, seconds, when one was given.
    pub tpot_bound_s: Option<f64>,
    /// The given batch, then the cheapest under the bound.
    pub rows: Vec<CostRow>,
    /// Whether the given batch fits (its requests' peak).
    #[serde(flatten)]
    pub fit: FitView,
}

impl CostReport {
    /// The `cost` command's report for a scenario (its batch is the number of concurrent requests)
    /// and resolved serving inputs: the cost at the batch and, when `serving` has a TPOT bound, the
    /// cheapest batch under it (an error naming `tpot_ms` when no batch meets it).
    pub fn build(sc: &Scenario, serving: &Serving) -> Result<CostReport> {
        let price = serving.require_price(&sc.gpu.name)?;
        let batch = sc.workload.contexts.batch();
        let at = CostPoint::at(sc, serving, price, batch)?;
        let cheapest =
            serving.tpot_bound_s.map(|b| cheapest_under_tpot(sc, serving, price, b).map(|c| (b, c))).transpose()?;
        Ok(CostReport::new(sc, &at, cheapest.as_ref().map(|(b, c)| (*b, c))))
    }

    /// Build from the cost at the given batch on `sc` and, optionally, the cheapest under `bound_s`.
    pub fn new(sc: &Scenario, at: &CostPoint, cheapest: Option<(f64, &CostPoint)>) -> CostReport {
        let l = &at.latency;
        let inputs = Inputs::of(&at_uniform(sc, l.batch, l.prompt_tokens));
        let fit = FitView {
            fits: l.fits,
            memory_bytes: l.peak_memory_bytes,
            gpu_memory_bytes: sc.gpu.memory_bytes,
            plan_command: (!l.fits).then(|| crate::fit::plan_command(sc)),
        };
        let mut rows = vec![CostRow::of("batch", at)];
        if let Some((_, c)) = cheapest {
            rows.push(CostRow::of("cheapest", c));
        }
        CostReport {
            inputs,
            usd_per_hour: at.price.usd_per_hour,
            price_source: at.price.source,
            prompt_tokens: at.latency.prompt_tokens,
            output_tokens: at.latency.output_tokens,
            usd_per_million_output_tokens: at.usd_per_million_output_tokens,
            usd_per_million_input_tokens: at.usd_per_million_input_tokens,
            usd_per_request: at.usd_per_request,
            tpot_bound_s: cheapest.map(|(b, _)| b),
            rows,
            fit,
        }
    }
}

pub use crate::human::usd;

impl Report for CostReport {
    type CsvRow = CostRow;

    fn csv_rows(&self) -> Vec<CostRow> {
        self.rows.clone()
    }

    fn human(&self) -> HumanTable {
        let i = &self.inputs;
        let label = |r: &CostRow| match (r.label, self.tpot_bound_s) {
            ("cheapest", Some(b)) => format!("cheapest, TPOT ≤ {}", human::seconds(b)),
            (l, _) => l.to_string(),
        };
        let rows = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    label(r),
                    human::count(r.batch),
                    human::seconds(r.ttft_s),
                    r.tpot_s.map_or("—".into(), human::seconds),
                    human::count(r.output_tokens_per_s.round() as u64),
                    usd(r.usd_per_million_input_tokens),
                    r.usd_per_million_output_tokens.map_or("—".into(), usd),
                    usd(r.usd_per_request),
                    human::bytes(r.peak_memory_bytes),
                    crate::facts::yes_no(r.fits),
                ]
            })
            .collect();
        let source = match self.price_source {
            PriceSource::CatalogueApproximate => {
                "catalogue price, approximate and volatile; set yours with --usd-per-hour"
            }
            PriceSource::User => "price given",
        };
        let mut footer = vec![
            crate::bill::basis_line(llm_ledger_core::economics::CostBasis::StaticBatch),
            format!("${}/GPU-hour: {source}", self.usd_per_hour),
            "$/M input = price/3600 · TTFT ÷ (batch · prompt) · 10⁶; $/M output = price/3600 · TPOT ÷ batch · 10⁶; $/request = price/3600 · e2e ÷ batch".into(),
            "the cheapest batch under a TPOT bound is the largest batch that meets it and fits (TPOT ÷ batch never rises with the batch)".into(),
        ];
        footer.extend(self.rows.first().map(|r| r.fit_basis.rule(i.counting).to_string()));
        footer.extend(self.fit.hint());
        HumanTable {
            title: vec![format!(
                "{} on {} · requests of {} prompt + {} output tokens · weights {} · KV {}{} · ${}/GPU-hour",
                i.model,
                i.gpu,
                human::count(self.prompt_tokens),
                human::count(self.output_tokens),
                i.weights_shown(),
                i.kv,
                i.layout_suffix(),
                self.usd_per_hour
            )],
            header: [
                "",
                "batch",
                "TTFT",
                "TPOT",
                "out tok/s",
                "$/M input",
                "$/M output",
                "$/request",
                "memory",
                "fits",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            right_aligned: (1..=8).collect(),
            // Hidden first on a narrow terminal: memory, then the dollar columns, then TTFT and tok/s.
            priority: vec![0, 0, 1, 0, 1, 2, 2, 2, 3, 0],
            footer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::economics::cheapest_under_tpot;
    use llm_ledger_core::serving::ServingRequest;
    use llm_ledger_core::{Catalog, ScenarioRequest};

    fn report() -> CostReport {
        let sc =
            ScenarioRequest { batch: Some("16".into()), ..Default::default() }.resolve(&Catalog::builtin()).unwrap();
        let s = ServingRequest { usd_per_hour: Some("3".into()), tpot_ms: Some("20".into()), ..Default::default() }
            .resolve(&sc)
            .unwrap();
        let price = s.price.unwrap();
        let at = CostPoint::at(&sc, &s, price, 16).unwrap();
        let best = cheapest_under_tpot(&sc, &s, price, 0.020).unwrap();
        CostReport::new(&sc, &at, Some((0.020, &best)))
    }

    #[test]
    fn cost_table() {
        insta::assert_snapshot!(report().render(Format::Table).unwrap());
    }

    #[test]
    fn cost_json_has_the_stable_keys() {
        let v: serde_json::Value = serde_json::from_str(&report().render(Format::Json).unwrap()).unwrap();
        assert!(v["usd_per_million_output_tokens"].is_number());
        assert_eq!(v["price_source"], "user");
        assert_eq!(v["rows"].as_array().unwrap().len(), 2);
        assert!(v["rows"][1]["tpot_s"].as_f64().unwrap() <= 0.020);
    }
}
