//! The `plan` report: layouts ranked by dollars per million output tokens under a TPOT bound,
//! and the Pareto front of throughput per GPU against TPOT.
//!
//! JSON keys (stable): `inputs`, `ctx`, `tpot_bound_s`, `max_gpus`, `usd_per_hour`,
//! `price_source`, `reserve_bytes`, `weight_bytes` (the whole model), `available_bytes` (per GPU),
//! `min_gpus_for_weights`, `fit_basis` (`step`: the decode step at `ctx`),
//! `layouts`, `ranked[]` and `pareto[]` (each with `tp`, `pp`, `ep`, `gpus`, `batch`, `tpot_s`,
//! `tokens_per_s`, `tokens_per_s_per_gpu`, `usd_per_million_tokens`, `memory_bytes`,
//! `weight_bytes`, `max_batch`, `link_share`, `meets_bound`, `replicas`), `refused[]` (`tp`, `pp`,
//! `ep`, `reason`: `does_not_fit` with `memory_bytes`, `available_bytes`; `too_slow` with
//! `tpot_s` at `batch`, its smallest; or `no_given_batch` with `max_batch`), and the answer's fit as every report's [`crate::fit::FitView`] (`fits`: whether
//! the cheapest layout fits, which a ranked layout always does; `memory_bytes` on its fullest GPU;
//! `gpu_memory_bytes`; `plan_command` always `null`). CSV: the ranked layouts.

use crate::human;
use crate::ledger::Inputs;
use crate::render::{to_csv, to_json, to_markdown, to_table, Format, HumanTable, Report};
use llm_ledger_core::error::{Error, Result};
use llm_ledger_core::memory::WeightFootprint;
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan::{plan_within as search, PlanRequest};
use llm_ledger_core::plan::{Layout, Plan, PlanPoint, PlanRefusal, PlanRefused, Refusal, Refused};
use llm_ledger_core::serving::{PriceSource, Serving};
use llm_ledger_core::stop::Stop;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// Ranked layouts shown in the table (all are in JSON).
pub const SHOWN: usize = 10;

/// The `plan` report.
#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    /// Inputs (model, GPU, precisions).
    pub inputs: Inputs,
    /// Cached tokens per sequence.
    pub ctx: u64,
    /// The TPOT bound, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// Price, USD per GPU-hour.
    pub usd_per_hour: f64,
    /// Where the price comes from.
    pub price_source: PriceSource,
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// All stored weights of the model, bytes.
    pub weight_bytes: f64,
    /// Memory per GPU after the reserve, bytes.
    pub available_bytes: f64,
    /// GPUs needed just to hold the weights: `⌈weights ÷ (capacity − reserve)⌉`.
    pub min_gpus_for_weights: u64,
    /// Layouts the model can take within the budget.
    pub layouts: usize,
    /// The cheapest batch of each layout that meets the bound, cheapest first.
    pub ranked: Vec<PlanPoint>,
    /// Throughput per GPU against TPOT.
    pub pareto: Vec<PlanPoint>,
    /// Layouts refused, and why.
    pub refused: Vec<llm_ledger_core::plan::Refused>,
    /// The basis of every fit.
    pub fit_basis: llm_ledger_core::memory::FitBasis,
    /// Whether the answer (the cheapest layout) fits.
    #[serde(flatten)]
    pub fit: crate::fit::FitView,
}

/// Everything the report echoes besides the plan.
#[derive(Debug, Clone)]
pub struct PlanContext {
    /// Inputs.
    pub inputs: Inputs,
    /// Cached tokens per sequence.
    pub ctx: u64,
    /// The bound, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs.
    pub max_gpus: u64,
    /// Price.
    pub price: llm_ledger_core::serving::Price,
    /// Reserve, bytes.
    pub reserve_bytes: f64,
    /// The model's weights, bytes.
    pub weight_bytes: f64,
    /// GPU memory, bytes.
    pub capacity_bytes: f64,
}

impl PlanReport {
    /// Search the layouts of `sc` (its context is the plan's) within `max_gpus` GPUs and build
    /// the report: the one plan builder of every front end. `batches` are the batches to try
    /// (default: the search's own); `serving` must hold a TPOT bound and a price.
    pub fn build(sc: &Scenario, serving: &Serving, max_gpus: u64, batches: Option<Axis>) -> Result<PlanReport> {
        Self::build_within(sc, serving, max_gpus, batches, Stop::NEVER)
    }

    /// [`PlanReport::build`], stopped when `stop` is set while the search runs.
    pub fn build_within(
        sc: &Scenario,
        serving: &Serving,
        max_gpus: u64,
        batches: Option<Axis>,
        stop: Stop<'_>,
    ) -> Result<PlanReport> {
        let price = serving.require_price(&sc.gpu.name)?;
        let Some(tpot_bound_s) = serving.tpot_bound_s else {
            return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds"));
        };
        let ctx = sc.workload.contexts.max_tokens();
        let reserve_bytes = serving.reserve_bytes;
        let request = PlanRequest { ctx, tpot_bound_s, max_gpus, price, reserve_bytes, batches };
        let plan = search(sc, &request, stop)?;
        let context = PlanContext {
            inputs: Inputs::of(sc),
            ctx,
            tpot_bound_s,
            max_gpus,
            price,
            reserve_bytes,
            weight_bytes: WeightFootprint::of(&sc.model, &sc.weights).total_bytes(),
            capacity_bytes: sc.gpu.memory_bytes,
        };
        Ok(PlanReport::new(context, plan))
    }

    /// Build from a plan.
    pub fn new(c: PlanContext, plan: Plan) -> PlanReport {
        let available = c.capacity_bytes - c.reserve_bytes;
        let answer = plan.ranked.first();
        let fit = crate::fit::FitView {
            fits: answer.is_some_and(|p| p.memory_bytes <= available),
            memory_bytes: answer.map_or(0.0, |p| p.memory_bytes),
            gpu_memory_bytes: c.capacity_bytes,
            plan_command: None,
        };
        PlanReport {
            inputs: c.inputs,
            ctx: c.ctx,
            tpot_bound_s: c.tpot_bound_s,
            max_gpus: c.max_gpus,
            usd_per_hour: c.price.usd_per_hour,
            price_source: c.price.source,
            reserve_bytes: c.reserve_bytes,
            weight_bytes: c.weight_bytes,
            available_bytes: available,
            min_gpus_for_weights: (c.weight_bytes / available).ceil() as u64,
            layouts: plan.layouts,
            ranked: plan.ranked,
            pareto: plan.pareto,
            fit,
            refused: plan.refused,
            fit_basis: plan.fit_basis,
        }
    }

    fn table(&self, title: Vec<String>, points: &[PlanPoint], rank: bool, footer: Vec<String>) -> HumanTable {
        let rows = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = vec![
                    layout_words(p.tp, p.pp, p.ep),
                    human::count(p.batch),
                    human::seconds(p.tpot_s),
                    human::count(p.tokens_per_s.round() as u64),
                    human::sig3(p.tokens_per_s_per_gpu),
                    usd(p.usd_per_million_tokens),
                    human::bytes(p.memory_bytes),
                    human::percent(p.link_share),
                    if p.meets_bound { "yes" } else { "no" }.into(),
                ];
                if rank {
                    r.insert(0, (i + 1).to_string());
                }
                r
            })
            .collect();
        let mut header: Vec<String> =
            ["layout", "batch", "TPOT", "tok/s", "tok/s/GPU", "$/M tokens", "memory/GPU", "on links", "meets"]
                .map(String::from)
                .to_vec();
        let mut right_aligned: Vec<usize> = (1..=7).collect();
        // Layout, batch, TPOT, cost and whether it meets the bound stay on a narrow terminal.
        let mut priority = vec![0, 0, 0, 2, 1, 0, 2, 3, 0];
        if rank {
            header.insert(0, "#".into());
            right_aligned = (0..=8).filter(|i| *i != 1).collect();
            priority.insert(0, 1);
        }
        HumanTable { title, header, rows, right_aligned, footer, priority }
    }

    fn ranked_table(&self) -> HumanTable {
        let i = &self.inputs;
        let title = vec![format!(
            "{} on {} · decode at {} cached tokens · weights {} · KV {} · TPOT ≤ {} · at most {} GPUs · ${}/GPU-hour",
            i.model,
            i.gpu,
            human::count(self.ctx),
            i.weights_shown(),
            i.kv,
            human::seconds(self.tpot_bound_s),
            self.max_gpus,
            self.usd_per_hour
        )];
        let shown: Vec<PlanPoint> = self.ranked.iter().take(SHOWN).copied().collect();
        let mut footer = Vec::new();
        if let Some(best) = self.ranked.first() {
            footer.push(format!(
                "answer: {} at batch {}: {} per output token, {} tok/s, ${:.3} per million output tokens{}",
                layout_words(best.tp, best.pp, best.ep),
                human::count(best.batch),
                human::seconds(best.tpot_s),
                human::count(best.tokens_per_s.round() as u64),
                best.usd_per_million_tokens,
                if best.replicas > 1 {
                    format!(
                        "; {} replicas fit in {} GPUs ({} tok/s)",
                        best.replicas,
                        self.max_gpus,
                        human::count((best.tokens_per_s * best.replicas as f64).round() as u64)
                    )
                } else {
                    String::new()
                }
            ));
            footer.push(format!(
                "why: the weights are {} ({}), at least {} GPUs of {} after the {} reserve; {} holds {} of weights per GPU and fits {} sequences at {} tokens; {} of its step is on links",
                human::bytes(self.weight_bytes),
                i.weights_shown(),
                self.min_gpus_for_weights,
                human::bytes(self.available_bytes),
                human::bytes(self.reserve_bytes),
                layout_words(best.tp, best.pp, best.ep),
                human::bytes(best.weight_bytes),
                human::count(best.max_batch),
                human::count(self.ctx),
                human::percent(best.link_share)
            ));
        }
        match self.ranked.len().saturating_sub(SHOWN) {
            0 => {}
            1 => footer.push("1 more layout meets the bound (--format json lists all)".into()),
            n => footer.push(format!("{n} more layouts meet the bound (--format json lists all)")),
        }
        footer.push(self.refusals());
        footer.push(crate::bill::basis_line(llm_ledger_core::economics::CostBasis::DecodeStep));
        footer.push(format!(
            "$/M tokens = GPUs × ${}/3600 × TPOT ÷ batch × 10⁶ ({}); the largest batch that fits and meets the bound is each layout's cheapest",
            self.usd_per_hour,
            match self.price_source {
                PriceSource::CatalogueApproximate => "catalogue price, approximate: set yours with --usd-per-hour",
                PriceSource::User => "price given",
            }
        ));
        footer.push("TPOT = the decode step (with pipeline stages, the cycle of its micro-batches); memory/GPU = the fullest GPU; on links = the busiest GPU's share of the step in collectives and stage sends".into());
        footer.push(self.fit_basis.rule(self.inputs.counting).into());
        self.table(title, &shown, true, footer)
    }

    fn refusals(&self) -> String {
        /// Each kind of refusal in words, in the order they are listed.
        const KINDS: [&str; 3] = [
            "do not fit one sequence",
            "miss the bound even at their smallest batch",
            "hold none of the batches asked for",
        ];
        let kind = |r: &Refused| match r.refusal {
            Refusal::DoesNotFit { .. } => 0,
            Refusal::TooSlow { .. } => 1,
            Refusal::NoGivenBatch { .. } => 2,
        };
        let example = |r: &Refused| {
            let layout = layout_words(r.tp, r.pp, r.ep);
            match r.refusal {
                Refusal::DoesNotFit { memory_bytes, available_bytes } => format!(
                    "{layout}: {} on its fullest GPU of {}",
                    human::bytes(memory_bytes),
                    human::bytes(available_bytes)
                ),
                Refusal::TooSlow { tpot_s, batch } => {
                    format!("{layout}: {} at batch {}", human::seconds(tpot_s), human::count(batch))
                }
                Refusal::NoGivenBatch { max_batch } => format!("{layout}: at most {}", human::count(max_batch)),
            }
        };
        let mut parts = vec![format!("{} layouts tried", self.layouts)];
        for (k, what) in KINDS.iter().enumerate() {
            let mut of_kind = self.refused.iter().filter(|r| kind(r) == k);
            if let Some(first) = of_kind.next() {
                parts.push(format!("{} {what} (e.g. {})", 1 + of_kind.count(), example(first)));
            }
        }
        format!("refused: {}", parts.join("; "))
    }

    fn pareto_table(&self) -> HumanTable {
        let title =
            vec!["Pareto front: throughput per GPU against time per output token (every layout and batch that fits)"
                .into()];
        let footer =
            vec!["each point beats every other on TPOT or on tokens/s per GPU; lower TPOT costs throughput per GPU"
                .into()];
        self.table(title, &self.pareto, false, footer)
    }
}

use crate::human::usd;

impl Report for PlanReport {
    type CsvRow = PlanPoint;

    fn csv_rows(&self) -> Vec<PlanPoint> {
        self.ranked.clone()
    }

    fn human(&self) -> HumanTable {
        self.ranked_table()
    }

    fn layout(&self, format: Format) -> String {
        match format {
            Format::Table => format!("{}\n{}", to_table(&self.ranked_table()), to_table(&self.pareto_table())),
            Format::Md => format!("{}\n{}", to_markdown(&self.ranked_table()), to_markdown(&self.pareto_table())),
            Format::Json => to_json(self),
            Format::Csv => to_csv(&self.csv_rows()),
        }
    }
}

/// A plan refusal in words, one line, naming inputs through `name_of` (the CLI's `--max-gpus`
/// for `max_gpus`; the explorer keeps the field names): what no layout within the budget does,
/// and the smallest change that would rank one.
pub fn refusal_message(r: &PlanRefused, name_of: &dyn Fn(&str) -> String) -> String {
    let name = format!("{} on {}", r.model, r.gpu);
    let field = name_of(r.field());
    let words = |l: &Layout| layout_words(l.tp, l.pp, l.ep);
    let (value, why) = match &r.refusal {
        PlanRefusal::TooSlow { fastest, batch } => (
            format!("{:.3} ms", r.tpot_bound_s * 1e3),
            format!(
                "a bound some layout meets: the fastest within {} GPUs, {}, takes {:.3} ms per output token at batch {batch} for {name}",
                r.max_gpus,
                words(&fastest.layout),
                fastest.tpot_s * 1e3,
            ),
        ),
        PlanRefusal::NoGivenBatch { given, largest, max_batch } => (
            given.to_string(),
            format!(
                "a batch some layout holds: within {} GPUs at {} cached tokens the largest is {max_batch}, on {}, for {name}{}",
                r.max_gpus,
                r.ctx,
                words(largest),
                if largest.ep > 1 { format!(" (expert parallel: a multiple of its {} groups)", largest.ep) } else { String::new() }
            ),
        ),
        PlanRefusal::NoLayout => (
            r.max_gpus.to_string(),
            format!("a budget in which {} can be split: no layout of at most {} GPUs", r.model, r.max_gpus),
        ),
        PlanRefusal::DoesNotFit { closest: None, .. } => (r.max_gpus.to_string(), "a budget with a layout that fits".into()),
        PlanRefusal::DoesNotFit { closest: Some((layout, need, avail)), smallest_fitting, smallest_meeting } => {
            let weights = name_of("weights");
            let fewer_bits = format!("or store the weights in fewer bits (`{weights}` = fp8, int4)");
            let raise = |l: &Layout| format!("raise `{field}` to {}", l.gpus());
            let fix = match (smallest_meeting, smallest_fitting) {
                (Some(m), Some(f)) if m.layout.gpus() == f.layout.gpus() => {
                    format!("the smallest layout that fits is {}: {}, {fewer_bits}", words(&m.layout), raise(&m.layout))
                }
                (Some(m), fitting) => format!(
                    "the smallest layout that fits and meets the bound is {} ({:.1} ms per token at batch 1): {}{}, {fewer_bits}",
                    words(&m.layout),
                    m.tpot_s * 1e3,
                    raise(&m.layout),
                    fitting
                        .map(|f| format!(" (the smallest that fits at all, {}, takes {:.1} ms)", words(&f.layout), f.tpot_s * 1e3))
                        .unwrap_or_default()
                ),
                (None, Some(f)) => format!(
                    "the smallest layout that fits is {} ({:.1} ms per token at batch 1, above the bound): {}, {fewer_bits}",
                    words(&f.layout),
                    f.tpot_s * 1e3,
                    raise(&f.layout)
                ),
                (None, None) => format!(
                    "no layout of up to {} GPUs fits: store the weights in fewer bits (`{weights}` = fp8, int4)",
                    r.search_limit_gpus
                ),
            };
            (
                r.max_gpus.to_string(),
                format!(
                    "enough GPUs for {name} at {} cached tokens: with at most {} the fullest GPU still needs {:.1} GB of the {:.1} GB available ({}); {fix}",
                    r.ctx,
                    if r.max_gpus == 1 { "1 GPU".to_string() } else { format!("{} GPUs", r.max_gpus) },
                    need / 1e9,
                    avail / 1e9,
                    words(layout)
                ),
            )
        }
    };
    format!("invalid `{field}`: {value} ({why})")
}
