//! The `advise` report: the advice in sentences, and the levers ranked by the cost per token
//! they save.
//!
//! JSON keys (stable): `inputs`, `lines[]` (the sentences), `crossover` (as `kv`), `footprint`,
//! `max_batch`, `fit_basis` (`step`: `footprint.fits` and `max_batch` are this step's),
//! `price`, `usd_per_million_tokens`, `baseline`, `levers[]` (ranked; lever fields as in `levers`
//! plus `usd_per_million_tokens`), `skipped[]`, `experts_touched`, and whether the step fits
//! ([`FitView`]: `fits`, `memory_bytes`, `gpu_memory_bytes`, `plan_command`).

use crate::fit::FitView;
use crate::ledger::Inputs;
use crate::levers::{lever_table, LeverRow};
use crate::render::{HumanTable, Report};
use llm_ledger_core::advise::Advice;
use llm_ledger_core::crossover::Side;
use llm_ledger_core::levers::LeverOutcome;
use llm_ledger_core::workload::Phase;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// The `advise` report.
#[derive(Debug, Clone, Serialize)]
pub struct AdviseReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The advice.
    #[serde(flatten)]
    pub advice: Advice,
    /// The advice, one sentence per line.
    pub lines: Vec<String>,
    /// Whether the step fits in GPU memory (the advice's footprint).
    #[serde(flatten)]
    pub fit: FitView,
}

impl AdviseReport {
    /// The report of `advice` on `sc`, with its sentences.
    pub fn new(sc: &Scenario, advice: Advice) -> Self {
        let lines = sentences(&advice);
        let fit = FitView::of_footprint(sc, &advice.footprint);
        AdviseReport { inputs: Inputs::of(sc), advice, lines, fit }
    }
}

use crate::human::{bytes as gb, seconds as ms, usd};

/// A non-negative quantity rounded to a whole number, with thousands separators.
fn thousands(v: f64) -> String {
    crate::human::count(v.round() as u64)
}

/// The advice in sentences, one per line: where the step sits against the crossover, memory, the
/// step now, each lever that saves, the MoE experts touched and the reminder to measure.
fn sentences(a: &Advice) -> Vec<String> {
    let c = &a.crossover;
    let mut out = Vec::new();
    if a.phase == Phase::Prefill {
        out.push(
            "This is a prefill step; the crossover and the levers below are decode notions, read them with care."
                .into(),
        );
    }
    let side = match c.side {
        Side::Below => format!(
            "Below the crossover: {} cached tokens per step against {} ({} of weights ÷ {} B of KV per token); KV reads are {} the weight reads, so weight-side levers pay: quantised weights, bigger batches, speculative decoding.",
            thousands(c.cached_tokens),
            thousands(c.crossover_tokens),
            gb(c.weight_bytes),
            thousands(c.kv_bytes_per_token),
            crate::human::ratio(c.kv_to_weight_ratio)
        ),
        Side::Above => format!(
            "Above the crossover: {} cached tokens per step against {} ({} of weights ÷ {} B of KV per token); KV reads are {} the weight reads, so cache-side levers pay: an FP8 KV cache, prefix sharing, shorter retained context, admission limits on total cached tokens.",
            thousands(c.cached_tokens),
            thousands(c.crossover_tokens),
            gb(c.weight_bytes),
            thousands(c.kv_bytes_per_token),
            crate::human::ratio(c.kv_to_weight_ratio)
        ),
    };
    out.push(side);
    let f = &a.footprint;
    let fit = if f.fits { "fits" } else { "does NOT fit" };
    let mut mem = format!(
        "Memory: {} (weights {}, KV cache {}, workspace {}) of {} available after a {} reserve: it {fit}.",
        gb(f.memory_bytes),
        gb(f.weight_bytes),
        gb(f.kv_cache_bytes),
        gb(f.workspace_bytes),
        gb(f.available_bytes),
        gb(f.reserve_bytes)
    );
    if let Some(b) = a.max_batch {
        mem.push_str(&format!(" The largest batch that fits at this context is {b}."));
    }
    out.push(mem);
    let base = &a.baseline;
    let price_note = |dollars: Option<f64>| dollars.map(|u| format!(", {} per M tokens", usd(u))).unwrap_or_default();
    out.push(format!(
        "Now: {} per step, {} tokens/s{}.",
        ms(base.step_time_s),
        thousands(base.tokens_per_s),
        price_note(a.usd_per_million_tokens)
    ));
    for (i, r) in a.levers.iter().filter(|r| r.lever.cost_saving > 0.0).enumerate() {
        let l = &r.lever;
        let fits = if l.outcome.fits { "" } else { " (does NOT fit)" };
        out.push(format!(
            "{}. {} — {}: {} → {} per step at batch {}, {} tokens/s, {:.0} % less per token{}{fits}; quality: {}.",
            i + 1,
            l.name,
            l.description,
            ms(base.step_time_s),
            ms(l.outcome.step_time_s),
            l.outcome.batch,
            thousands(l.outcome.tokens_per_s),
            l.cost_saving * 100.0,
            price_note(r.usd_per_million_tokens),
            l.quality
        ));
    }
    if let Some(e) = &a.experts_touched {
        out.push(format!(
            "MoE: a step of {} tokens touches {:.1} of {} experts per layer on average (top-{}, {} routing); weight bytes follow the experts touched, not the active parameter count.",
            thousands(e.tokens),
            e.touched,
            e.experts,
            e.top_k,
            a.routing.describe()
        ));
    }
    out.push("Measure one step and run `llm-ledger measure --step-ms T`: below ~60 % MBU, look for launches, unfused kernels and communication before buying hardware.".into());
    out
}

impl Report for AdviseReport {
    type CsvRow = LeverRow;

    fn csv_rows(&self) -> Vec<LeverRow> {
        self.advice.levers.iter().map(|r| LeverRow::of(&r.lever)).collect()
    }

    fn human(&self) -> HumanTable {
        let a = &self.advice;
        let ranked: Vec<&LeverOutcome> = a.levers.iter().map(|r| &r.lever).collect();
        let (header, rows, mut footer) = lever_table(&a.baseline, &ranked, &a.skipped, self.inputs.engine.is_some());
        footer.push(a.fit_basis.rule(self.inputs.counting).into());
        footer.extend(self.fit.hint());
        let mut title = vec![self.inputs.headline(), String::new()];
        title.extend(self.lines.iter().cloned());
        title.push(String::new());
        title.push("Levers, ranked by cost per token saved:".into());
        let priority = crate::levers::lever_priority(&header);
        HumanTable { title, header, rows, right_aligned: (2..=8).collect(), footer, priority }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::serving::ServingRequest;
    use llm_ledger_core::testing::scenario;

    fn report(batch: &str, ctx: &str) -> AdviseReport {
        let sc = scenario(&[("counting", "seed"), ("batch", batch), ("ctx", ctx)]);
        let s = ServingRequest { usd_per_hour: Some("3".into()), ..Default::default() }.resolve(&sc).unwrap();
        AdviseReport::new(&sc, Advice::of(&sc, &s))
    }

    #[test]
    fn advise_table_above_the_crossover() {
        insta::assert_snapshot!(report("8", "32768").render(Format::Table).unwrap());
    }

    #[test]
    fn advise_json_carries_the_sentences_and_ranked_levers() {
        let v: serde_json::Value = serde_json::from_str(&report("1", "2048").render(Format::Json).unwrap()).unwrap();
        assert!(v["lines"][0].as_str().unwrap().starts_with("Below the crossover"));
        assert_eq!(v["crossover"]["side"], "below");
        assert_eq!(v["levers"][0]["name"], "batch");
        assert!(v["levers"][0]["usd_per_million_tokens"].is_number());
    }

    #[test]
    fn sentences_carry_the_crossover_the_levers_and_the_experts_touched() {
        let lines = |model: &str, batch: &str, ctx: &str| {
            let sc = scenario(&[("model", model), ("counting", "seed"), ("batch", batch), ("ctx", ctx)]);
            let s = ServingRequest::default().resolve(&sc).unwrap();
            AdviseReport::new(&sc, Advice::of(&sc, &s)).lines
        };
        let below = lines("llama-3-8b", "1", "2048");
        assert!(
            below[0].starts_with("Below the crossover: 2,048 cached tokens per step against 114,512"),
            "{}",
            below[0]
        );
        assert!(
            below.iter().any(|l| l.starts_with("2. w4a16 — 4-bit weights, 16-bit math (W4A16): 5.70 ms → 1.5")),
            "{below:#?}"
        );
        assert!(lines("llama-3-8b", "8", "32768")[0].contains("cache-side levers pay"));
        let moe = lines("mixtral-8x7b", "8", "2048");
        assert!(moe.iter().any(|l| l.starts_with("MoE: a step of 8 tokens touches 7.2 of 8 experts")), "{moe:#?}");
    }
}
