//! Batching: step time and tokens per second against batch size at the scenario's context length
//! (the CLI's `sweep --batch <axis> --ctx <ctx>`), drawn as the batch curve with the memory wall and
//! the KV crossover, and the points as a table.

use super::parts::{at_both_sizes, downloads, figure, num, thead, MAX_POINTS};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_app::sweep::SweepRequest;
use llm_ledger_core::sweep::mix_refused;
use llm_ledger_report::human;
use llm_ledger_report::sweep::SweepPlan;
use maud::{html, Markup};

/// The page key of the batch axis.
pub(super) const BATCHES: &str = "batches";

/// The batch axis when none is given: powers of two up to 1,024.
pub(super) const DEFAULT_BATCHES: &str = "1..1024*2";

/// Its text box.
pub(super) const BATCHES_INPUT: PageInput = PageInput {
    name: BATCHES,
    label: "Batch sizes",
    help: "a list or ranges, as the CLI's sweep --batch: 1,8,32 or 1..256 or 1..1024*2",
    placeholder: DEFAULT_BATCHES,
};

/// The sweep the page shows: the query's scenario without its batch, over the `batches` axis at
/// its context length, with the reserve. Errors about the axis name `batches`.
pub(crate) fn plan(q: &PageQuery, catalog: &llm_ledger_core::Catalog) -> Result<(SweepPlan, u64), AppError> {
    let current = q.resolve(catalog)?.scenario;
    if q.get("contexts").is_some() {
        return Err(q.core_error(&mix_refused()));
    }
    let base = q.clone_with(&[("batch", None), ("ctx", None)]).resolve(catalog)?.scenario;
    let req = SweepRequest {
        batch: Some(q.extra(BATCHES).unwrap_or(DEFAULT_BATCHES).to_string()),
        ctx: q.get("ctx").map(str::to_string),
        reserve: q.extra("reserve").map(str::to_string),
    };
    let plan = req.plan(base).map_err(|e| with_axis_name(q.command_error(&e)))?;
    Ok((plan, current.workload.contexts.batch()))
}

/// A core error, with the batch axis's field named as this page names it.
pub(crate) fn axis_error(q: &PageQuery, e: &llm_ledger_core::Error) -> AppError {
    with_axis_name(q.core_error(e))
}

/// The error with the batch axis's field named as this page names it.
pub(crate) fn with_axis_name(err: AppError) -> AppError {
    if err.field.as_deref() == Some("batch") {
        err.with_field(BATCHES)
    } else {
        err
    }
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let (plan, current) = plan(q, &ctx.state.catalog)?;
    let points = q.checked(plan.points(MAX_POINTS).map_err(|e| axis_error(q, &e))?)?;
    let curve = plan.batch_curve(&points).map_err(|e| q.core_error(&e))?;
    // Each mark links to this page at the batch it stands for (its table row is then marked).
    let link = |b: &u64| Some(ctx.self_href(&[("batch", Some(&b.to_string()))], &[]));
    let chart = at_both_sizes(|size| curve.svg_linked(size, Some(&link)));
    let h = &plan.head;
    let ctx_tokens = plan.ctx.min();
    let best = points.iter().filter(|p| p.fits).max_by(|a, b| a.tokens_per_s.total_cmp(&b.tokens_per_s));
    let api_query = |path: &str, format: Option<&str>| {
        let base = PageQuery { extra: Vec::new(), ..q.clone() };
        base.href_page(
            path,
            &[("batch", None), ("ctx", None)],
            &[
                ("batch", Some(&h.batch_axis)),
                ("ctx", Some(&h.ctx_axis)),
                ("reserve", q.extra("reserve")),
                ("format", format),
            ],
        )
    };
    let unit = if h.inputs.phase == llm_ledger_core::Phase::Decode { "tokens generated" } else { "prompt tokens" };
    Ok(html! {
        h1 { "Batching" }
        p.lead {
            "The same step at every batch size: the weights are read once per step whatever the batch, so until the "
            "KV cache and the arithmetic catch up, more sequences cost almost nothing. Past the KV crossover every "
            "extra sequence is paid in full; past the memory wall it no longer fits."
        }
        p.headline #headline {
            (h.inputs.model) " on " (h.inputs.gpu) " · " (h.inputs.phase) " · " (human::count(ctx_tokens)) " tokens per sequence · weights "
            (h.inputs.weights_shown()) " · KV " (h.inputs.kv) " · batch " (h.batch_axis) " (" (human::count(h.point_count)) " points)"
        }
        dl.summary {
            div {
                dt { "memory wall" }
                dd #memory-wall data-value=[curve.memory_wall_batch] {
                    @match curve.memory_wall_batch { Some(b) => { "batch " (human::quantity(b)) }, None => "none" }
                }
                dd.sub { "first batch that does not fit " (human::bytes(h.capacity_bytes)) " less " (human::bytes(h.reserve_bytes)) " reserve" }
            }
            div {
                dt { "KV crossover" }
                dd #kv-crossover data-value=[curve.kv_crossover_batch] {
                    @match curve.kv_crossover_batch { Some(b) => { "batch " (human::quantity(b)) }, None => "none" }
                }
                dd.sub { "KV bytes read per step pass the weight bytes" }
            }
            @if let Some(b) = best {
                div {
                    dt { "most " (unit) "/s that fits" }
                    dd #best-tokens-per-s data-value=(b.tokens_per_s) { (human::sig3(b.tokens_per_s)) }
                    dd.sub { "at batch " (human::count(b.batch)) ", step " (human::seconds(b.step_time_s)) }
                }
            }
        }
        (figure(&chart, true, html! {
                "Step time (left axis) and tokens per second (right axis) against batch, log₂ across. "
                "The shaded region is past the memory wall. "
                a href=(api_query("/plot/batch-curve.svg", None)) download="batch-curve.svg" { "SVG" }
        }))
        table.ledger #sweep {
            caption { "Every batch size of the sweep (the current batch is marked)" }
            (thead(&[("batch", true), ("step", true), (unit, true), ("FLOP/B", true), ("largest row", false),
                ("memory", true), ("KV cache", true), ("fits", false)]))
            tbody {
                @for p in &points {
                    tr data-batch=(p.batch) aria-current=[(p.batch == current).then_some("true")] class=[(!p.fits).then_some("past-wall")] {
                        td.num { (human::count(p.batch)) }
                        (num(p.step_time_s, human::seconds(p.step_time_s)))
                        (num(p.tokens_per_s, human::sig3(p.tokens_per_s)))
                        (num(p.intensity, human::intensity(Some(p.intensity))))
                        td { code { (p.largest_op.name()) } " " (human::percent(p.largest_op_time_s / p.step_time_s)) }
                        (num(p.memory_bytes, human::bytes(p.memory_bytes)))
                        (num(p.kv_cache_bytes, human::bytes(p.kv_cache_bytes)))
                        td class=(if p.fits { "fits" } else { "nofit" }) { (if p.fits { "yes" } else { "no" }) }
                    }
                }
            }
        }
        p.note #fit-basis { (h.fit_basis.rule(h.inputs.counting)) "." }
        (downloads(&api_query("/api/sweep", None), &api_query("/api/sweep", Some("csv")),
            &format!("llm-ledger sweep --batch {} --ctx {} --format json|csv", h.batch_axis, h.ctx_axis)))
    })
}
