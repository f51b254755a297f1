//! Mixture of experts: the CLI's `moe` report over a batch range — experts touched per step
//! against batch (the union problem of the reference calculator, with E as the ceiling), tokens per expert, the
//! busiest expert, and with a model the expert weight bytes each step reads.
//!
//! E and k come from the scenario's model, or from the page's `experts` and `top_k` (then the
//! model is not used, as `llm-ledger moe --experts E --top-k K` takes no model). A dense model
//! without them is not an error here: the page says so and links to MoE models.

use super::batching::{axis_error, with_axis_name};
use super::parts::{at_both_sizes, downloads, facts, figure, num, thead, MAX_POINTS};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use crate::work::MAX_MOE_EXPERT_POINTS;
use llm_ledger_app::moe::{MoeRequest, DEFAULT_BATCH_AXIS};
use llm_ledger_core::moe::moe_shape;
use llm_ledger_core::Scenario;
use llm_ledger_report::human;
use llm_ledger_report::plot::{MoeCurve, MoeCurvePoint};
use maud::{html, Markup};

/// The page's keys.
pub(super) const KEYS: &[&str] = &[super::batching::BATCHES, "experts", "top_k"];

/// Their text boxes.
pub(super) const INPUTS: &[PageInput] = &[
    PageInput {
        name: super::batching::BATCHES,
        label: "Batch sizes",
        help: "a list or ranges, as the CLI's moe --batch",
        placeholder: DEFAULT_BATCH_AXIS,
    },
    PageInput {
        name: "experts",
        label: "Experts E",
        help: "without a model: routed experts (with top-k)",
        placeholder: "the model's",
    },
    PageInput { name: "top_k", label: "Top-k", help: "without a model: experts per token", placeholder: "the model's" },
];

/// Refuse a MoE answer costing more than [`MAX_MOE_EXPERT_POINTS`] expert × batch-size
/// evaluations (a core error about `batch`, naming the batch sizes accepted with these experts).
/// Inputs that do not parse are left to [`MoeRequest::run`], which names them.
pub(crate) fn check_cost(base: &Scenario, req: &MoeRequest) -> Result<(), llm_ledger_core::Error> {
    let Ok(axis) = req.batches() else {
        return Ok(());
    };
    let experts = if req.standalone() {
        req.experts.as_deref().and_then(|e| e.trim().parse::<u64>().ok())
    } else {
        moe_shape(&base.model).map(|(e, _)| e)
    };
    match experts {
        Some(e) if e > 0 && axis.len().saturating_mul(e) > MAX_MOE_EXPERT_POINTS => Err(llm_ledger_core::Error::invalid(
            "batch",
            format!("{} batch sizes with {e} experts", axis.len()),
            format!(
                "at most {} batch sizes with {e} experts: batch sizes × experts ≤ {MAX_MOE_EXPERT_POINTS} per request here",
                MAX_MOE_EXPERT_POINTS / e
            ),
        )),
        _ => Ok(()),
    }
}

/// MoE presets offered when the model is dense.
const MOE_MODELS: &[&str] = &["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b"];

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    // The whole scenario is checked; the report takes it without its batch.
    let current = ctx.resolve()?.scenario.workload.contexts.batch();
    let base = q.clone_with(&[("batch", None)]).resolve(&ctx.state.catalog)?.scenario;
    let text = |k: &str| q.extra(k).map(str::to_string);
    let req = MoeRequest { batch: text(super::batching::BATCHES), experts: text("experts"), top_k: text("top_k") };
    let standalone = req.standalone();
    if !standalone && moe_shape(&base.model).is_none() {
        return Ok(dense(ctx, &base.model.name));
    }
    check_cost(&base, &req).map_err(|e| axis_error(q, &e))?;
    // The page does not use the model when E and k are given (it says so).
    let report = req.run(&base, false, MAX_POINTS).map_err(|e| with_axis_name(q.command_error(&e)))?;
    let report = q.checked(report)?;
    // Each batch size's marker links to this page with that batch as the scenario's.
    let link = |p: &MoeCurvePoint| Some(ctx.self_href(&[("batch", Some(&p.batch.to_string()))], &[]));
    let curve = MoeCurve::from_report(&report);
    let chart = at_both_sizes(|size| curve.svg_linked(size, Some(&link)));
    let with_model = report.model.is_some();
    let axis = req.batch.as_deref().unwrap_or(DEFAULT_BATCH_AXIS);
    let api = |format: Option<&str>| {
        let base = PageQuery { extra: Vec::new(), ..q.clone() };
        let model_out: &[(&str, Option<&str>)] =
            if standalone { &[("batch", None), ("model", None)] } else { &[("batch", None)] };
        let base = if standalone { PageQuery { config: None, ..base } } else { base };
        base.href_page(
            "/api/moe",
            model_out,
            &[
                ("batch", Some(axis)),
                ("experts", req.experts.as_deref()),
                ("top_k", req.top_k.as_deref()),
                ("format", format),
            ],
        )
    };
    let first = report.points.first();
    let last = report.points.last();
    let items = vec![
        (
            "experts E",
            "experts",
            Some(report.experts as f64),
            human::count(report.experts),
            "routed experts per MoE layer".to_string(),
        ),
        (
            "top-k",
            "top-k",
            Some(report.top_k as f64),
            human::count(report.top_k),
            "experts each token is routed to".into(),
        ),
        ("routing", "routing", None, report.routing.clone(), "uniform, or a Zipf skew (zipf under more inputs)".into()),
        (
            "experts touched",
            "touched-range",
            last.map(|p| p.union.experts_touched),
            format!(
                "{:.1} → {:.1}",
                first.map_or(0.0, |p| p.union.experts_touched),
                last.map_or(0.0, |p| p.union.experts_touched)
            ),
            format!("from batch {} to {}", first.map_or(0, |p| p.batch), last.map_or(0, |p| p.batch)),
        ),
    ];
    Ok(html! {
        h1 { "Mixture of experts" }
        p.lead {
            "A MoE layer reads the weights of every expert some token in the step is routed to. One token touches k experts; "
            "a batch touches the union of its tokens' choices, which climbs quickly toward all E — so batching stops saving "
            "weight bytes long before it does for a dense model, and each expert's GEMM gets only a few rows."
        }
        p.headline #headline {
            @match &report.model {
                Some(m) => { (m) " on " (report.gpu.as_deref().unwrap_or("")) " · " }
                None => { "E and k alone (no model) · " }
            }
            (report.phase)
            @if report.ctx > 0 { " · " (human::count(report.ctx)) " prompt tokens per sequence" }
            " · routing " (report.routing)
        }
        @if standalone && (q.get("model").is_some() || q.config.is_some()) {
            p.note { "E and k are given, so the model is not used (" code { "llm-ledger moe --experts --top-k" } " takes no model)." }
        }
        (facts(&items))
        div.two {
            (figure(&chart, false, html! { "Expected experts touched per step, Σ 1 − (1 − pᵢ)ᴺ over the experts, against batch (log₂ across); E is the ceiling." }))
            section.experiments aria-label="try this" {
                h2 { "Try this" }
                ol {
                    li { a.experiment href=(ctx.self_href(&[("zipf", Some("1.2"))], &[])) { "Skew the routing (Zipf 1.2)" } ": popular experts soak up the tokens and the union grows more slowly." }
                    li { a.experiment href=(ctx.self_href(&[("zipf", None)], &[])) { "Uniform routing" } ": the reference calculator's E·(1 − (1 − k/E)ᴺ)." }
                    li { a.experiment href=(ctx.self_href(&[], &[("experts", Some("128")), ("top_k", Some("8"))])) { "128 experts, top-8" } " (Qwen3-style), without a model." }
                    li { a.experiment href=(ctx.self_href(&[("model", Some("deepseek-v3"))], &[("experts", None), ("top_k", None)])) { "DeepSeek-V3" } ": 256 experts, top-8, with its weight bytes." }
                }
            }
        }
        table.ledger #moe {
            caption { "Per batch size (the current batch is marked)" }
            @if with_model {
                (thead(&[("batch", true), ("tokens", true), ("experts touched", true), ("of E", true), ("tokens/expert", true), ("N·k/E", true),
                    ("busiest expert", true), ("expert weights read", true), ("of all", true), ("expert FLOP/B", true), ("step", true), ("tok/s", true)]))
            } @else {
                (thead(&[("batch", true), ("tokens", true), ("experts touched", true), ("of E", true), ("tokens/expert", true), ("N·k/E", true), ("busiest expert", true)]))
            }
            tbody {
                @for p in &report.points {
                    @let u = &p.union;
                    tr data-batch=(p.batch) aria-current=[(p.batch == current).then_some("true")] {
                        td.num { (human::count(p.batch)) }
                        (num(u.tokens, human::count(u.tokens as u64)))
                        td.num.touched data-value=(u.experts_touched) { (format!("{:.1}", u.experts_touched)) }
                        (num(u.fraction_touched, human::percent(u.fraction_touched)))
                        td.num data-value=(u.tokens_per_expert) { (format!("{:.2}", u.tokens_per_expert)) }
                        td.num data-value=(u.tokens_per_expert_all_experts) { (format!("{:.2}", u.tokens_per_expert_all_experts)) }
                        td.num data-value=(u.busiest_expert_tokens) { (format!("{:.2}", u.busiest_expert_tokens)) }
                        @if let Some(m) = &p.model {
                            (num(m.expert_weight_bytes, human::bytes(m.expert_weight_bytes)))
                            (num(m.expert_weight_bytes / m.all_experts_weight_bytes, human::percent(m.expert_weight_bytes / m.all_experts_weight_bytes)))
                            td.num data-value=[m.expert_gemm_intensity] { (human::intensity(m.expert_gemm_intensity)) }
                            (num(m.step_time_s, human::seconds(m.step_time_s)))
                            (num(m.tokens_per_s, human::sig3(m.tokens_per_s)))
                        }
                    }
                }
            }
        }
        div.notes {
            p { "experts touched = Σ 1 − (1 − pᵢ)ᴺ over experts, pᵢ a token's chance of routing to expert i (uniform: E·(1 − (1 − k/E)ᴺ), the reference calculator's formula); tokens/expert = N·k ÷ experts touched (tokens per touched expert: each expert GEMM's M); N·k/E = tokens per expert over all E experts, idle ones included (the reference calculator's “about B × k / E tokens” per expert; under uniform routing also the busiest expert's load); busiest expert = N · max pᵢ." }
            @if with_model { p { "expert weights read = experts touched × one expert's weights × MoE layers: a step reads the union, not k experts." } }
            @if report.phase == "prefill" { p { "Prefill counts tokens, not sequences: N = batch × " (human::count(report.ctx)) " prompt tokens." } }
        }
        (downloads(&api(None), &api(Some("csv")), &format!("llm-ledger moe --batch {axis} --format json|csv")))
    })
}

/// The page for a dense model: what it would show, and links that give it experts.
fn dense(ctx: &PageCtx, model: &str) -> Markup {
    let catalog = ctx.catalog().ok();
    let offered: Vec<&str> =
        MOE_MODELS.iter().copied().filter(|m| catalog.as_ref().is_some_and(|c| c.preset(m).is_ok())).collect();
    html! {
        h1 { "Mixture of experts" }
        div.notice #dense role="status" {
            p { strong { code { (model) } " has no mixture-of-experts layers" } ": every token reads the same MLP, so there is no union to count." }
            p {
                "Pick a MoE model: "
                @for (i, m) in offered.iter().enumerate() {
                    @if i > 0 { ", " }
                    a.experiment href=(ctx.self_href(&[("model", Some(m))], &[])) { code { (m) } }
                }
                " — or count the union for E and k alone: "
                a.experiment href=(ctx.self_href(&[], &[("experts", Some("8")), ("top_k", Some("2"))])) { "8 experts, top-2" } ", "
                a.experiment href=(ctx.self_href(&[], &[("experts", Some("128")), ("top_k", Some("8"))])) { "128 experts, top-8" } "."
            }
        }
    }
}
