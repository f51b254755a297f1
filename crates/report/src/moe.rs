//! The `moe` report: the union problem of the reference calculator over a batch range — experts touched, tokens
//! per expert, the busiest expert's load, and (with a model) the expert weight bytes each step reads,
//! the expert GEMMs' intensity and the step time.
//!
//! JSON: `{"experts", "top_k", "routing", "model", "phase", "points": [{"batch", "tokens",
//! "experts_touched", …, "fits", "memory_bytes"}], "fits", "memory_bytes", "gpu_memory_bytes",
//! "plan_command"}`: with a model, each point says whether its step fits and the top-level
//! fields (`FitView`) are the largest batch's (every smaller batch fits when it does); `null`
//! for `--experts`/`--top-k` alone.

use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::error::Result;
use llm_ledger_core::expert_step::{expert_step, ExpertStep};
use llm_ledger_core::memory::Fit;
use llm_ledger_core::moe::{union_point, UnionPoint};
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Contexts, Phase, Scenario};
use serde::Serialize;

/// The experts of a `moe` report: E and k, from the model or given alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeShape {
    /// Routed experts E.
    pub experts: u64,
    /// Experts per token k.
    pub top_k: u64,
    /// E and k were given without a model (the points carry no model numbers).
    pub standalone: bool,
}

/// One batch point.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MoePoint {
    /// Sequences.
    pub batch: u64,
    /// The union problem at this batch.
    #[serde(flatten)]
    pub union: UnionPoint,
    /// Model numbers, when a model was given.
    #[serde(flatten)]
    pub model: Option<ExpertStep>,
    /// Whether the step fits in GPU memory (with a model; the default reserve).
    pub fits: Option<bool>,
    /// Weights + KV cache + workspace on the fullest GPU, bytes (with a model).
    pub memory_bytes: Option<f64>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct MoeReport {
    /// Routed experts E.
    pub experts: u64,
    /// Experts per token k.
    pub top_k: u64,
    /// Routing model.
    pub routing: String,
    /// Model name, when given.
    pub model: Option<String>,
    /// GPU name, when a model was given.
    pub gpu: Option<String>,
    /// `decode` or `prefill`.
    pub phase: String,
    /// Prompt tokens per sequence in prefill (tokens = batch × ctx).
    pub ctx: u64,
    /// Points in batch order.
    pub points: Vec<MoePoint>,
    /// Whether the largest batch fits (with a model).
    pub fits: Option<bool>,
    /// Memory of the largest batch, bytes (with a model).
    pub memory_bytes: Option<f64>,
    /// One GPU's memory, bytes (with a model).
    pub gpu_memory_bytes: Option<f64>,
    /// When the largest batch does not fit: the `plan` command that searches for a layout that does.
    pub plan_command: Option<String>,
}

impl MoeReport {
    /// The union problem over `batches` for `base` (the scenario without a batch: phase,
    /// context, routing, and the model unless E and k are given alone, `shape`). With a model
    /// each point also carries the expert numbers of its ledger ([`expert_step`]).
    pub fn build(base: &Scenario, batches: &Axis, shape: MoeShape) -> Result<MoeReport> {
        let MoeShape { experts, top_k, standalone } = shape;
        let ctx = base.workload.contexts.max_tokens();
        let mut points = Vec::with_capacity(batches.len() as usize);
        for batch in batches.iter() {
            let mut sc = base.clone();
            sc.workload.contexts = Contexts::uniform(batch, ctx)?;
            let union = union_point(experts, top_k, sc.workload.step_tokens(), &base.routing)?;
            let model = if standalone { None } else { expert_step(&sc) };
            let fit = (!standalone).then(|| Fit::step(&sc, DEFAULT_RESERVE_BYTES));
            points.push(MoePoint {
                batch,
                union,
                model,
                fits: fit.as_ref().map(Fit::fits),
                memory_bytes: fit.as_ref().map(Fit::needed_bytes),
            });
        }
        let last = points.last().filter(|_| !standalone);
        let largest_fits = last.and_then(|p| p.fits);
        Ok(MoeReport {
            fits: largest_fits,
            memory_bytes: last.and_then(|p| p.memory_bytes),
            gpu_memory_bytes: (!standalone).then_some(base.gpu.memory_bytes),
            plan_command: (largest_fits == Some(false)).then(|| crate::fit::plan_command(base)),
            experts,
            top_k,
            routing: base.routing.describe(),
            model: (!standalone).then(|| base.model.name.clone()),
            gpu: (!standalone).then(|| base.gpu.name.clone()),
            phase: base.workload.phase.to_string(),
            ctx: if base.workload.phase == Phase::Prefill { ctx } else { 0 },
            points,
        })
    }
}

/// Flat CSV row.
#[derive(Debug, Clone, Serialize)]
pub struct MoeCsvRow {
    batch: u64,
    tokens: f64,
    experts_touched: f64,
    fraction_touched: f64,
    tokens_per_expert: f64,
    tokens_per_expert_all_experts: f64,
    busiest_expert_tokens: f64,
    expert_weight_bytes: Option<f64>,
    all_experts_weight_bytes: Option<f64>,
    expert_gemm_intensity: Option<f64>,
    step_time_s: Option<f64>,
    tokens_per_s: Option<f64>,
    fits: Option<bool>,
    memory_bytes: Option<f64>,
}

impl Report for MoeReport {
    type CsvRow = MoeCsvRow;

    fn csv_rows(&self) -> Vec<MoeCsvRow> {
        self.points
            .iter()
            .map(|p| MoeCsvRow {
                batch: p.batch,
                tokens: p.union.tokens,
                experts_touched: p.union.experts_touched,
                fraction_touched: p.union.fraction_touched,
                tokens_per_expert: p.union.tokens_per_expert,
                tokens_per_expert_all_experts: p.union.tokens_per_expert_all_experts,
                busiest_expert_tokens: p.union.busiest_expert_tokens,
                expert_weight_bytes: p.model.map(|m| m.expert_weight_bytes),
                all_experts_weight_bytes: p.model.map(|m| m.all_experts_weight_bytes),
                expert_gemm_intensity: p.model.and_then(|m| m.expert_gemm_intensity),
                step_time_s: p.model.map(|m| m.step_time_s),
                tokens_per_s: p.model.map(|m| m.tokens_per_s),
                fits: p.fits,
                memory_bytes: p.memory_bytes,
            })
            .collect()
    }

    fn human(&self) -> HumanTable {
        let with_model = self.points.first().is_some_and(|p| p.model.is_some());
        let mut header: Vec<String> =
            ["batch", "tokens", "experts touched", "of E", "tokens/expert", "N·k/E", "busiest expert"]
                .map(String::from)
                .to_vec();
        if with_model {
            header.extend(
                ["expert weights read", "of all", "expert FLOP/B", "step", "tok/s", "memory", "fits"].map(String::from),
            );
        }
        let rows = self
            .points
            .iter()
            .map(|p| {
                let u = &p.union;
                let mut r = vec![
                    human::count(p.batch),
                    human::count(u.tokens as u64),
                    format!("{:.1}", u.experts_touched),
                    human::percent(u.fraction_touched),
                    format!("{:.2}", u.tokens_per_expert),
                    format!("{:.2}", u.tokens_per_expert_all_experts),
                    format!("{:.2}", u.busiest_expert_tokens),
                ];
                if let Some(m) = p.model {
                    r.extend([
                        human::bytes(m.expert_weight_bytes),
                        human::percent(m.expert_weight_bytes / m.all_experts_weight_bytes),
                        human::intensity(m.expert_gemm_intensity),
                        human::seconds(m.step_time_s),
                        human::sig3(m.tokens_per_s),
                        p.memory_bytes.map(human::bytes).unwrap_or_default(),
                        p.fits.map(crate::facts::yes_no).unwrap_or_default(),
                    ]);
                }
                r
            })
            .collect();
        let title = match &self.model {
            Some(m) => format!(
                "{m} on {} · {} · {} experts, top-{} · routing {}",
                self.gpu.as_deref().unwrap_or(""),
                self.phase,
                self.experts,
                self.top_k,
                self.routing
            ),
            None => format!("{} experts, top-{} · routing {} · {}", self.experts, self.top_k, self.routing, self.phase),
        };
        let mut footer = vec![
            "experts touched = Σ 1 − (1 − p_i)^N over experts, p_i = a token's chance of routing to expert i (uniform: E·(1 − (1 − k/E)^N), the reference calculator's formula)".into(),
            "tokens/expert = N·k ÷ experts touched (tokens per touched expert: each expert GEMM's M); busiest expert = N · max p_i".into(),
            "N·k/E = tokens per expert over all E experts, idle ones included (the reference calculator's \"about B × k / E tokens\" per expert; under uniform routing also the busiest expert's load)".into(),
        ];
        if self.phase == "prefill" {
            footer.push(format!("prefill counts tokens, not sequences: N = batch × {} prompt tokens", self.ctx));
        }
        if with_model {
            footer.push("expert weights read = experts touched × one expert's weights × MoE layers; the step reads the union, not k experts".into());
            footer.push(format!(
                "memory = weights + KV cache + workspace; fits = memory ≤ {} − {} reserve",
                self.gpu_memory_bytes.map(human::bytes).unwrap_or_default(),
                human::bytes(DEFAULT_RESERVE_BYTES)
            ));
            footer.extend(self.plan_command.as_deref().map(crate::fit::hint));
        }
        // On a narrow terminal the batch, the experts touched and the step time stay longest.
        let priority = header
            .iter()
            .map(|h| match h.as_str() {
                "batch" | "experts touched" | "step" | "fits" => 0,
                "tokens/expert" | "expert weights read" | "tok/s" => 1,
                "of all" | "expert FLOP/B" | "memory" => 3,
                _ => 2,
            })
            .collect();
        let right_aligned = (0..header.len()).filter(|i| header[*i] != "fits").collect();
        HumanTable { title: vec![title], right_aligned, header, rows, footer, priority }
    }
}
