//! Scenarios side by side: for each, the key numbers of its step — step time, tokens per second
//! (in all, per GPU, per user), memory on the fullest GPU and whether it fits, dollars per million
//! tokens, and what bounds it — each from the ledger ([`Ledger`]) and the memory model
//! ([`Fit::step`]) of that scenario, as the Ledger page shows them.
//!
//! JSON keys (stable): `reserve_bytes`, `columns[]` (each: `label`, `query` (the scenario as a
//! query string), `inputs`, `layout` (in words), `gpus` (per replica), `step_time_s`,
//! `tokens_per_s` (decode: output tokens, prefill: prompt tokens), `tokens_per_s_per_gpu`,
//! `tokens_per_s_per_user` (decode: `1 ÷ step`; `null` in prefill), `memory_bytes` (the fullest
//! GPU), `available_bytes`, `fits`, `usd_per_gpu_hour` and `usd_per_million_tokens` (`null`
//! without a price), `memory_bound_share`, `bound`), and the fit of all of them as every report's
//! [`crate::fit::FitView`] (`fits`: every column fits; `memory_bytes`: the fullest). CSV: the
//! columns, one row each.

use crate::human::{self, usd};
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::memory::Fit;
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::{Ledger, Phase, Scenario};
use serde::Serialize;

/// One scenario's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// Its label (`A`, `B` …).
    pub label: String,
    /// The scenario as a query string (`batch=8&kv=fp8`).
    pub query: String,
    /// Its inputs.
    pub inputs: Inputs,
    /// Its layout in words (`1 GPU`, `TP 2 (2 GPUs)`).
    pub layout: String,
    /// GPUs per replica.
    pub gpus: u64,
    /// The step's time, seconds.
    pub step_time_s: f64,
    /// Tokens per second: output tokens in decode, prompt tokens in prefill.
    pub tokens_per_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Output tokens per second one sequence sees (`1 ÷ step`), decode only.
    pub tokens_per_s_per_user: Option<f64>,
    /// Memory of the fullest GPU, bytes.
    pub memory_bytes: f64,
    /// Memory after the reserve, bytes.
    pub available_bytes: f64,
    /// Whether it fits.
    pub fits: bool,
    /// The catalogue's price of one GPU, USD per hour.
    pub usd_per_gpu_hour: Option<f64>,
    /// USD per million tokens (of the kind `tokens_per_s` counts): GPUs × price ÷ 3600 ÷ tokens/s × 10⁶.
    pub usd_per_million_tokens: Option<f64>,
    /// Share of the step in memory-bound operators.
    pub memory_bound_share: f64,
    /// `memory` or `compute`: what bounds most of the step.
    pub bound: &'static str,
}

/// A column as a CSV row.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Label.
    pub label: String,
    /// Scenario query.
    pub query: String,
    /// Model.
    pub model: String,
    /// GPU.
    pub gpu: String,
    /// Phase.
    pub phase: String,
    /// Sequences.
    pub batch: u64,
    /// Layout in words.
    pub layout: String,
    /// GPUs per replica.
    pub gpus: u64,
    /// Step time, seconds.
    pub step_time_s: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Per user (decode).
    pub tokens_per_s_per_user: Option<f64>,
    /// Fullest GPU's memory, bytes.
    pub memory_bytes: f64,
    /// Available memory, bytes.
    pub available_bytes: f64,
    /// Fits.
    pub fits: bool,
    /// USD per million tokens.
    pub usd_per_million_tokens: Option<f64>,
    /// Share in memory-bound operators.
    pub memory_bound_share: f64,
    /// Bound.
    pub bound: &'static str,
}

/// Scenarios side by side.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// One per scenario.
    pub columns: Vec<Column>,
    /// Every column fits; the fullest column's memory.
    #[serde(flatten)]
    pub fit: crate::fit::FitView,
}

impl Column {
    /// The numbers of `sc` (labelled `label`, written as `query`).
    pub fn of(label: &str, query: &str, sc: &Scenario, reserve_bytes: f64) -> Column {
        let ledger = Ledger::build(sc);
        let s = &ledger.summary;
        let step = s.step_time_s();
        let tokens_per_s = s.tokens_per_s();
        let gpus = sc.parallel.gpus_per_replica();
        let memory: f64 = ledger
            .rows
            .iter()
            .filter(|r| r.timing.bound() == llm_ledger_core::Bound::Memory)
            .map(|r| r.timing.time_s)
            .sum();
        let memory_bound_share = if step > 0.0 { memory / step } else { 0.0 };
        let fp = Fit::step(sc, reserve_bytes).footprint;
        let price = sc.gpu.usd_per_gpu_hour;
        let p = &sc.parallel;
        Column {
            label: label.to_string(),
            query: query.to_string(),
            inputs: Inputs::of(sc),
            layout: layout_words(p.tp, p.pp, p.ep),
            gpus,
            step_time_s: step,
            tokens_per_s,
            tokens_per_s_per_gpu: tokens_per_s / gpus as f64,
            tokens_per_s_per_user: (sc.workload.phase == Phase::Decode).then(|| 1.0 / step),
            memory_bytes: fp.memory_bytes,
            available_bytes: fp.available_bytes,
            fits: fp.fits,
            usd_per_gpu_hour: price,
            usd_per_million_tokens: price.map(|u| u * gpus as f64 / 3600.0 / tokens_per_s * 1e6),
            memory_bound_share,
            bound: if memory_bound_share >= 0.5 { "memory" } else { "compute" },
        }
    }
}

impl CompareReport {
    /// The columns of `scenarios` (label, query, scenario), at `reserve_bytes` per GPU.
    pub fn build(scenarios: &[(String, String, Scenario)], reserve_bytes: f64) -> CompareReport {
        let columns: Vec<Column> =
            scenarios.iter().map(|(label, query, sc)| Column::of(label, query, sc, reserve_bytes)).collect();
        let fullest = columns.iter().max_by(|a, b| a.memory_bytes.total_cmp(&b.memory_bytes));
        let fit = crate::fit::FitView {
            fits: columns.iter().all(|c| c.fits),
            memory_bytes: fullest.map_or(0.0, |c| c.memory_bytes),
            gpu_memory_bytes: fullest.map_or(0.0, |c| c.available_bytes + reserve_bytes),
            plan_command: None,
        };
        CompareReport { reserve_bytes, columns, fit }
    }
}

impl Report for CompareReport {
    type CsvRow = CompareRow;

    fn csv_rows(&self) -> Vec<CompareRow> {
        self.columns
            .iter()
            .map(|c| CompareRow {
                label: c.label.clone(),
                query: c.query.clone(),
                model: c.inputs.model.clone(),
                gpu: c.inputs.gpu.clone(),
                phase: c.inputs.phase.to_string(),
                batch: c.inputs.batch,
                layout: c.layout.clone(),
                gpus: c.gpus,
                step_time_s: c.step_time_s,
                tokens_per_s: c.tokens_per_s,
                tokens_per_s_per_gpu: c.tokens_per_s_per_gpu,
                tokens_per_s_per_user: c.tokens_per_s_per_user,
                memory_bytes: c.memory_bytes,
                available_bytes: c.available_bytes,
                fits: c.fits,
                usd_per_million_tokens: c.usd_per_million_tokens,
                memory_bound_share: c.memory_bound_share,
                bound: c.bound,
            })
            .collect()
    }

    fn human(&self) -> HumanTable {
        let dash = || "—".to_string();
        let rows = self
            .columns
            .iter()
            .map(|c| {
                vec![
                    c.label.clone(),
                    format!("{} on {} · {} · batch {}", c.inputs.model, c.inputs.gpu, c.inputs.phase, c.inputs.batch),
                    c.layout.clone(),
                    human::seconds(c.step_time_s),
                    human::sig3(c.tokens_per_s),
                    human::sig3(c.tokens_per_s_per_gpu),
                    c.tokens_per_s_per_user.map(human::sig3).unwrap_or_else(dash),
                    format!("{}{}", human::bytes(c.memory_bytes), if c.fits { "" } else { " (does not fit)" }),
                    c.usd_per_million_tokens.map(usd).unwrap_or_else(dash),
                    c.bound.to_string(),
                ]
            })
            .collect();
        HumanTable {
            title: vec!["Scenarios side by side".into()],
            header: ["", "scenario", "layout", "step", "tok/s", "tok/s/GPU", "tok/s/user", "memory/GPU", "$/M tokens", "bound"]
                .map(String::from)
                .to_vec(),
            rows,
            right_aligned: vec![3, 4, 5, 6, 7, 8],
            footer: vec![
                "$/M tokens = GPUs × the catalogue's price ÷ 3600 ÷ tokens/s × 10⁶ (decode: output tokens; prefill: prompt tokens)".into(),
                "cost basis: one step at its batch (no idle time, no queue) — the price under load: simulate --rate max --ttft-ms … --tpot-ms …".into(),
            ],
            priority: vec![0, 0, 1, 0, 0, 1, 1, 2, 0, 2],
        }
    }
}
