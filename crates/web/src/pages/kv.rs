//! KV cache: the CLI's `kv` report — KV bytes per token, per sequence and for the batch, the KV
//! crossover and which side of it the workload is on, the memory the step needs and the cached
//! tokens that fit — with the KV and weight lines against cached tokens.

use super::parts::{at_both_sizes, downloads, facts, figure};
use super::PageCtx;
use crate::error::AppError;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::human;
use llm_ledger_report::kv::KvReport;
use llm_ledger_report::plot::{KvChart, KvMark};
use maud::{html, Markup};

/// Whether the chart draws the memory wall inside its frame (the one rule is the chart's own).
fn chart_shows_wall(r: &KvReport) -> bool {
    KvChart::from_report(r).wall_in_frame()
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let r = ctx.resolve()?;
    let sc = &r.scenario;
    let serving: ServingRequest = q.extras_as(&["reserve"])?;
    let serving = serving.resolve(sc).map_err(|e| q.core_error(&e))?;
    let report = q.checked(KvReport::new(sc, serving.reserve_bytes))?;
    let k = &report.row;
    // Whole batches, the first past the crossover and the largest that fits link to this page at
    // that batch; the workload is the page itself.
    let link = |m: &KvMark| match m {
        KvMark::Batch(b) => Some(ctx.self_href(&[("batch", Some(&b.to_string()))], &[])),
        KvMark::Workload => None,
    };
    let kv_chart = KvChart::from_report(&report);
    let chart = at_both_sizes(|size| kv_chart.svg_linked(size, Some(&link)));
    let tokens = |v: f64| human::count(v.round() as u64);
    let mut items = vec![
        (
            "KV per token",
            "kv-per-token",
            Some(k.kv_bytes_per_token),
            human::bytes(k.kv_bytes_per_token),
            format!("{} B across all layers at {}", human::count(k.kv_bytes_per_token as u64), report.inputs.kv),
        ),
        (
            "KV per sequence",
            "kv-per-sequence",
            k.kv_bytes_per_sequence,
            k.kv_bytes_per_sequence.map(human::bytes).unwrap_or_else(|| "—".into()),
            match report.inputs.ctx {
                Some(c) => format!("at {} tokens (windows applied)", human::count(c)),
                None => "a mix of contexts: see the batch".into(),
            },
        ),
        (
            "KV cache of the batch",
            "kv-cache",
            Some(k.kv_cache_bytes),
            human::bytes(k.kv_cache_bytes),
            format!("{} cached tokens", tokens(k.cached_tokens)),
        ),
        (
            "crossover",
            "crossover-tokens",
            Some(k.crossover_tokens),
            format!("{} tokens", tokens(k.crossover_tokens)),
            format!(
                "{} of weights ÷ {} of KV per token",
                human::bytes(k.weight_bytes),
                human::bytes(k.kv_bytes_per_token)
            ),
        ),
        (
            "this workload",
            "side",
            Some(k.kv_to_weight_ratio),
            format!("{} the crossover", k.side),
            format!("KV reads {} the weight reads", human::ratio(k.kv_to_weight_ratio)),
        ),
        (
            "memory",
            "memory",
            Some(k.memory_bytes),
            human::bytes(k.memory_bytes),
            format!(
                "weights {} + KV {} + workspace {}; {}",
                human::bytes(k.weight_memory_bytes),
                human::bytes(k.kv_cache_bytes),
                human::bytes(k.workspace_bytes),
                if k.fits { "fits" } else { "does NOT fit" }
            ),
        ),
        (
            "capacity",
            "max-cached-tokens",
            Some(k.max_cached_tokens as f64),
            format!("{} tokens", human::count(k.max_cached_tokens)),
            format!(
                "cached tokens that fit in {} − {} reserve next to the weights",
                human::bytes(k.capacity_bytes),
                human::bytes(k.reserve_bytes)
            ),
        ),
    ];
    if let (Some(b), Some(c)) = (k.max_batch, report.inputs.ctx) {
        items.push((
            "max batch",
            "max-batch",
            Some(b as f64),
            human::count(b),
            format!("sequences of {} tokens", human::count(c)),
        ));
    }
    let here = report.inputs.kv.name();
    let api = |format: Option<&str>| q.href_page("/api/kv", &[], &[("format", format)]);
    Ok(html! {
        h1 { "KV cache" }
        p.lead {
            "Decode reads every cached key and value once per step, next to the weights. Weight bytes are paid once per "
            "step whatever the batch; KV bytes grow with every cached token, and past the crossover they dominate."
        }
        p.headline #headline { (report.inputs.headline()) }
        (facts(&items))
        div.two {
            (figure(&chart, false, html! {
                    "KV bytes a step reads grow with the tokens cached across the batch (windows ignored on the line, applied at "
                    "the point); the weight bytes it reads do not. "
                    @if chart_shows_wall(&report) {
                        "Past the red dashed line (" (tokens(k.max_cached_tokens as f64)) " tokens) the cache no longer fits."
                    } @else {
                        "The cache fits up to " (tokens(k.max_cached_tokens as f64)) " tokens, beyond the right edge of the chart."
                    }
            }))
            section.experiments aria-label="try this" {
                h2 { "Try this" }
                ol {
                    @if here != "fp8" {
                        li { a.experiment href=(ctx.self_href(&[("kv", Some("fp8"))], &[])) { "Store the cache in FP8" } ": half the bytes per token, twice the capacity, the crossover twice as far." }
                    }
                    li { a.experiment href=(ctx.self_href(&[("batch", Some("64")), ("contexts", None)], &[])) { "Batch 64 sequences" } ": where does the workload sit against the crossover?" }
                    li { a.experiment href=(ctx.self_href(&[("ctx", Some("32768")), ("contexts", None)], &[])) { "Long contexts (32,768 tokens)" } ": a few sequences fill the cache." }
                    li { a href=(q.href("/batching", &[])) { "See the whole batch range" } " with the crossover and the memory wall marked." }
                }
            }
        }
        div.notes {
            p { "crossover = weight bytes read per step ÷ KV bytes per token (the reference calculator's rule); capacity = (capacity − reserve − weights − workspace) ÷ KV bytes per token." }
            p #fit-basis { (k.fit_basis.rule(report.inputs.counting)) "." }
        }
        (downloads(&api(None), &api(Some("csv")), "llm-ledger kv --format json|csv"))
    })
}
