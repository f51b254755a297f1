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
use llm_ledger_core::error::{echo, Error, Result, Text};
use llm_ledger_core::expert_step::{expert_step, ExpertStep};
use llm_ledger_core::limits::{MAX_BATCH, MAX_EXPERTS};
use llm_ledger_core::memory::Fit;
use llm_ledger_core::moe::{moe_shape, routing_probabilities, union_point, UnionPoint};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Contexts, Phase, Scenario};
use serde::Serialize;

/// The batch axis when none is given.
pub const DEFAULT_BATCH_AXIS: &str = "1,2,4,8,16,32,64,128";

/// Most batch points one `moe` report computes on the CLI (each builds a ledger).
pub const MAX_POINTS: u64 = 100_000;

/// What the `moe` command takes beside the scenario, as text.
#[derive(Debug, Clone, Copy, Default)]
pub struct MoeRequest<'a> {
    /// The batch axis (lists and ranges; default [`DEFAULT_BATCH_AXIS`]).
    pub batch: Option<&'a str>,
    /// Routed experts E, without a model.
    pub experts: Option<&'a str>,
    /// Experts per token k, without a model.
    pub top_k: Option<&'a str>,
    /// A model was named (it brings its own E and k, so `experts`/`top_k` are refused with it).
    pub model_given: bool,
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
    /// The union problem over the batch axis for `base` (the scenario without a batch: phase,
    /// context, routing, and the model unless E and k are given), at most `max_points` batches.
    /// With a model each point also carries the expert numbers of its ledger ([`expert_step`]).
    pub fn build(base: &Scenario, req: &MoeRequest, max_points: u64) -> Result<MoeReport> {
        let batches = Axis::parse("batch", req.batch.unwrap_or(DEFAULT_BATCH_AXIS), 1, MAX_BATCH)?;
        if batches.len() > max_points {
            return Err(Error::invalid(
                "batch",
                format!("{} points", batches.len()),
                format!("at most {max_points} points"),
            ));
        }
        let standalone = req.experts.is_some() || req.top_k.is_some();
        if standalone && req.model_given {
            return Err(Error::refused_text(
                "experts",
                Text::template("given together with {model}"),
                Text::template("a model brings its own experts and top-k"),
            ));
        }
        let (experts, top_k) = if standalone {
            let field = |name: &str, v: Option<&str>| -> Result<u64> {
                let missing = || {
                    let message = Text::template("missing required field `").input(name).plain("` for moe without ");
                    Error::input(name, message.input("model"))
                };
                let v = v.ok_or_else(missing)?;
                let n = parse_u64(name, v)?;
                if !(1..=MAX_EXPERTS).contains(&n) {
                    return Err(Error::invalid(name, n, format!("an integer in 1..={MAX_EXPERTS}")));
                }
                Ok(n)
            };
            let (e, k) = (field("experts", req.experts)?, field("top_k", req.top_k)?);
            routing_probabilities(e, k, &base.routing)?;
            (e, k)
        } else {
            moe_shape(&base.model).ok_or_else(|| {
                let what = echo(&format!("model `{}` for moe", base.model.name));
                let message = Text::template("unsupported ").plain(&what).then(Text::template(
                    ": it has no mixture-of-experts layers; pass a MoE model (mixtral-8x7b, qwen3-30b-a3b, deepseek-v3, gpt-oss-20b …) or {experts} and {top_k}",
                ));
                Error::input("model", message)
            })?
        };
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
