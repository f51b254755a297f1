//! What do I need: which GPUs, and how many, for the scenario's model at its batch × context in
//! decode — every GPU of the catalogue with the fewest of it whose layout holds the step (the
//! app's [`NeedRequest`] over the core's `plan::fewest_gpus`: the layouts `plan` searches), its
//! time per output token, price per hour and per million tokens; the memory wall of the
//! scenario's GPU at that layout; and, given an arrival rate with TTFT and TPOT bounds, the plan
//! under load on the scenario's GPU (`plan --rate`, by simulation, within the explorer's step
//! budget). A model given by Hub id or an uploaded config.json is asked like a preset.

use super::parts::{at_both_sizes, facts, figure, num, thead};
use super::{PageCtx, PageInput};
use crate::api_deploy::{web_budget, web_max_gpus, NOT_PLAN};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_app::need::NeedRequest;
use llm_ledger_app::plan::{PlanLoadRequest, PlanRequest};
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::Catalog;
use llm_ledger_report::human::{self, usd};
use llm_ledger_report::need::NeedReport;
use llm_ledger_report::plan_serving::ServingPlanReport;
use llm_ledger_report::plot::MemoryWallChart;
use maud::{html, Markup};
use std::sync::atomic::AtomicBool;

/// The page's keys: the app's `need` inputs, then those of the plan under load it takes.
pub(super) const KEYS: &[&str] =
    &["max_gpus", "reserve", "tpot_ms", "rate", "ttft_ms", "gpus_total", "prompt", "output", "requests"];

/// The keys of the plan under load.
const LOAD_KEYS: &[&str] = &["rate", "ttft_ms", "gpus_total", "prompt", "output", "requests"];

/// Requests simulated per candidate of the plan under load when none is given: fewer than the
/// CLI's 2,000, so that a search stays within the explorer's step budget.
const WEB_REQUESTS: &str = "400";

/// The GPU budget when none is given (`plan`'s default).
const DEFAULT_MAX_GPUS: &str = "64";

/// Their text boxes.
pub(super) const INPUTS: &[PageInput] = &[
    PageInput {
        name: "max_gpus",
        label: "GPU budget",
        help: "most GPUs per replica searched (at most 64 here)",
        placeholder: DEFAULT_MAX_GPUS,
    },
    super::RESERVE,
    PageInput {
        name: "tpot_ms",
        label: "TPOT bound (ms)",
        help: "optional: the answer also meets it; required with a rate",
        placeholder: "e.g. 50",
    },
    PageInput {
        name: "rate",
        label: "Arrival rate (requests/s)",
        help: "optional: size a deployment under load on the GPU above (plan --rate)",
        placeholder: "e.g. 2",
    },
    PageInput { name: "ttft_ms", label: "p99 TTFT bound (ms)", help: "with a rate", placeholder: "e.g. 1000" },
    PageInput {
        name: "gpus_total",
        label: "GPUs in all",
        help: "with a rate: most GPUs of the deployment, every replica counted (the GPU budget bounds one replica)",
        placeholder: "1024",
    },
    PageInput { name: "prompt", label: "Prompt tokens", help: "with a rate: per request", placeholder: "2048" },
    PageInput { name: "output", label: "Output tokens", help: "with a rate: per request", placeholder: "256" },
    PageInput {
        name: "requests",
        label: "Requests per candidate",
        help: "with a rate: simulated per layout × max sequences × chunk",
        placeholder: WEB_REQUESTS,
    },
];

/// Scenario keys the page does not use: it makes its own layouts, in decode.
pub(super) const UNUSED: &[&str] = &["phase", "contexts", "tp", "pp", "ep", "dp", "micro_batches"];

/// The query without the keys the search does not take.
fn base(q: &PageQuery) -> PageQuery {
    let none: Vec<(&str, Option<&str>)> = NOT_PLAN.iter().map(|k| (*k, None)).collect();
    q.clone_with(&none)
}

/// The page's table: every GPU's answer for the query's scenario (its model, batch and context),
/// searching at most [`MAX_WEB_GPUS`](crate::api_deploy::MAX_WEB_GPUS) GPUs per replica as the
/// explorer's other searches do.
pub(crate) fn report(q: &PageQuery, catalog: &Catalog, cancel: &AtomicBool) -> Result<NeedReport, AppError> {
    let b = base(q);
    let r = b.resolve(catalog)?;
    let req: NeedRequest = q.extras_as(&["max_gpus", "reserve", "tpot_ms"])?;
    let max_gpus = req.max_gpus.unwrap_or_else(|| DEFAULT_MAX_GPUS.into());
    // Every GPU of the catalogue is searched: the explorer's cap on one answer's layouts.
    web_max_gpus(Some(&max_gpus)).map_err(|e| q.core_error(&e))?;
    let req = NeedRequest { max_gpus: Some(max_gpus), ..req };
    let report =
        req.run_within(&b.request()?, &r.catalog, &r.scenario, Some(cancel)).map_err(|e| q.command_error(&e))?;
    q.checked(report)
}

/// The plan under load: its query for `/api/plan`, and the report or why there is none.
type UnderLoad = (String, Result<ServingPlanReport, AppError>);

/// The plan under load on the scenario's GPU, when a rate is given: its query for `/api/plan`,
/// and the report or why there is none (a bad input is the page's error).
fn under_load(q: &PageQuery, catalog: &Catalog, cancel: &AtomicBool) -> Result<Option<UnderLoad>, AppError> {
    let Some(rate) = q.extra("rate") else {
        if let Some(k) = LOAD_KEYS.iter().find(|k| q.extra(k).is_some()) {
            return Err(AppError::bad_request(
                format!("invalid `{k}`: given ({k} applies only with `rate`, a plan under load)"),
                Some(k),
            ));
        }
        return Ok(None);
    };
    let b = base(q).clone_with(&[("batch", None), ("ctx", None)]);
    let sc = b.resolve(catalog)?.scenario;
    let req = PlanRequest {
        tpot_ms: q.extra("tpot_ms").map(str::to_string),
        max_gpus: Some(q.extra("max_gpus").unwrap_or(DEFAULT_MAX_GPUS).to_string()),
        reserve: q.extra("reserve").map(str::to_string),
        ..Default::default()
    };
    let mut load = PlanLoadRequest {
        rate: Some(rate.to_string()),
        ttft_ms: q.extra("ttft_ms").map(str::to_string),
        gpus_total: q.extra("gpus_total").map(str::to_string),
        requests: Some(q.extra("requests").unwrap_or(WEB_REQUESTS).to_string()),
        prompt: q.extra("prompt").map(str::to_string),
        output: q.extra("output").map(str::to_string),
        ..Default::default()
    };
    let gpus = crate::api_deploy::web_max_gpus(req.max_gpus.as_deref()).map_err(|e| q.core_error(&e))?;
    let checked = load.check(rate, false, false).map_err(|e| q.command_error(&e))?;
    web_budget(&mut load).map_err(|e| q.core_error(&e))?;
    let s = req.serving(&sc).map_err(|e| q.command_error(&e))?;
    let mut page: Vec<(&str, Option<&str>)> = vec![
        ("tpot_ms", req.tpot_ms.as_deref()),
        ("max_gpus", req.max_gpus.as_deref()),
        ("reserve", req.reserve.as_deref()),
        ("rate", Some(rate)),
        ("ttft_ms", load.ttft_ms.as_deref()),
        ("gpus_total", load.gpus_total.as_deref()),
        ("requests", load.requests.as_deref()),
        ("prompt", load.prompt.as_deref()),
        ("output", load.output.as_deref()),
        ("max_steps", load.max_steps.as_deref()),
    ];
    page.retain(|(_, v)| v.is_some());
    let api = PageQuery { extra: Vec::new(), ..b }.href_page("/api/plan", &[], &page);
    // Bounds no deployment holds, or a search past the budget, are said in the section.
    let report =
        crate::api_deploy::plan_under_load(&load, &sc, &s, checked, gpus, cancel).map_err(|e| q.command_error(&e));
    Ok(Some((api, report)))
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let r = report(q, &ctx.state.catalog, ctx.cancel)?;
    let load = under_load(q, &ctx.state.catalog, ctx.cancel)?;
    let i = &r.inputs;
    let own = r.row(&i.gpu);
    let answer = own.and_then(|row| row.answer);
    let b = base(q);
    // A GPU's row links to its ledger with the answer's layout.
    let ledger_of = |gpu: &str, p: &llm_ledger_core::plan::PlanPoint| {
        let (tp, pp, ep) = (p.tp.to_string(), p.pp.to_string(), p.ep.to_string());
        let set = |v: u64, s: &str| (v > 1).then(|| s.to_string());
        let (tp, pp, ep) = (set(p.tp, &tp), set(p.pp, &pp), set(p.ep, &ep));
        b.href("/ledger", &[("gpu", Some(gpu)), ("tp", tp.as_deref()), ("pp", pp.as_deref()), ("ep", ep.as_deref())])
    };
    let chart = MemoryWallChart::of(&r.wall, r.batch, r.ctx);
    let link = |batch: &u64| Some(ctx.self_href(&[("batch", Some(&batch.to_string()))], &[]));
    let svg = at_both_sizes(|size| chart.svg_linked(size, Some(&link)));
    let api = |format: Option<&str>| {
        let mut page: Vec<(&str, Option<&str>)> =
            ["max_gpus", "reserve", "tpot_ms"].iter().map(|k| (*k, q.extra(k))).collect();
        page.push(("format", format));
        PageQuery { extra: Vec::new(), ..b.clone() }.href_page("/api/need", &[], &page)
    };
    let with_gpus = r.rows.iter().filter(|row| row.answer.is_some()).count();
    Ok(html! {
        h1 { "What do I need" }
        p.lead {
            "Which GPUs, and how many, for this model at this batch and context: for every GPU in the catalogue the fewest "
            "whose layout (tensor, pipeline and expert parallel, as " code { "plan" } " searches them) holds the decode step on its "
            "fullest GPU, the time per output token there and what it costs. The model can be a preset, a Hugging Face Hub id "
            "or an uploaded config.json."
        }
        p.headline #headline {
            (i.model) " · decode · batch " (human::count(r.batch)) " × " (human::count(r.ctx)) " cached tokens · weights "
            (i.weights_shown()) " (" (human::bytes(r.weight_bytes)) ") · KV " (i.kv) " · at most " (r.max_gpus) " GPUs"
            @if let Some(t) = r.tpot_bound_s { " · TPOT ≤ " (human::seconds(t)) }
        }
        @match (own, answer) {
            (_, Some(p)) => {
                (facts(&[
                    ("GPUs needed", "need-gpus", Some(p.gpus as f64), format!("{} × {}", p.gpus, i.gpu),
                        format!("{}; {} of {} GPU types hold it within {}", layout_words(p.tp, p.pp, p.ep), with_gpus, r.rows.len(), r.max_gpus)),
                    ("time per output token", "need-tpot", Some(p.tpot_s), human::seconds(p.tpot_s),
                        format!("{} tokens/s per user", human::sig3(1.0 / p.tpot_s))),
                    ("memory, fullest GPU", "need-memory", Some(p.memory_bytes), human::bytes(p.memory_bytes),
                        format!("of {} after the {} reserve", human::bytes(r.wall.available_bytes), human::bytes(r.reserve_bytes))),
                    ("memory wall", "need-wall", Some(r.wall.max_batch as f64), format!("batch {}", human::count(r.wall.max_batch)),
                        format!("the largest batch that fits at {} tokens on this layout", human::count(r.ctx))),
                    ("$ per million tokens", "need-usd", own.and_then(|o| o.usd_per_million_tokens),
                        own.and_then(|o| o.usd_per_million_tokens).map(usd).unwrap_or_else(|| "—".into()),
                        own.and_then(|o| o.usd_per_hour).map(|u| format!("{} per hour for the {} GPUs", usd(u), p.gpus)).unwrap_or_else(|| "no price known".into())),
                ]))
            },
            (Some(row), None) => div.notice #need-none role="status" {
                strong { (i.gpu) ": " } (row.refusal.clone().unwrap_or_default()) ". "
                "The table below says which GPUs hold it; a larger " a href="#f-max_gpus" { "GPU budget" } " may find more."
            },
            (None, None) => {},
        }
        table.ledger #need {
            caption { "Every GPU of the catalogue, cheapest per million tokens first (the scenario's GPU is marked); a GPU opens its ledger at that layout" }
            (thead(&[("GPU", false), ("memory", true), ("GPUs", true), ("layout", false), ("TPOT", true), ("tok/s per user", true),
                ("memory/GPU", true), ("$/hour", true), ("$/M tokens", true)]))
            tbody {
                @for row in &r.rows {
                    tr data-gpu=(row.gpu) aria-current=[(row.gpu == i.gpu).then_some("true")] class=[row.answer.is_none().then_some("past-wall")] {
                        @match &row.answer {
                            Some(p) => {
                                td { a href=(ledger_of(&row.gpu, p)) { (row.gpu) } }
                                (num(row.gpu_memory_bytes, human::bytes(row.gpu_memory_bytes)))
                                (num(p.gpus as f64, human::count(p.gpus)))
                                td { (layout_words(p.tp, p.pp, p.ep)) }
                                (num(p.tpot_s, human::seconds(p.tpot_s)))
                                (num(1.0 / p.tpot_s, human::sig3(1.0 / p.tpot_s)))
                                (num(p.memory_bytes, human::bytes(p.memory_bytes)))
                                td.num data-value=[row.usd_per_hour] { (row.usd_per_hour.map(usd).unwrap_or_else(|| "—".into())) }
                                td.num data-value=[row.usd_per_million_tokens] { (row.usd_per_million_tokens.map(usd).unwrap_or_else(|| "—".into())) }
                            },
                            None => {
                                td { a href=(b.href("/ledger", &[("gpu", Some(&row.gpu))])) { (row.gpu) } }
                                (num(row.gpu_memory_bytes, human::bytes(row.gpu_memory_bytes)))
                                td.refusal colspan="7" { (row.refusal.clone().unwrap_or_default()) }
                            },
                        }
                    }
                }
            }
        }
        (figure(&svg, true, html! {
            "The memory wall on " (r.wall.gpu) " (" (layout_words(r.wall.tp, r.wall.pp, r.wall.ep)) "): the fullest GPU's memory — weights, "
            "KV cache and workspace — against the batch at " (human::count(r.ctx)) " tokens per sequence, with the GPU's memory and what "
            "the reserve leaves. Each batch opens this page at that batch."
        }))
        section.load #under-load aria-labelledby="load-h" {
            h2 #load-h { "Under load" }
            @match &load {
                None => p {
                    "Give an arrival rate with p99 TTFT and TPOT bounds to size a deployment of " (i.model) " on " (i.gpu)
                    " under load, by simulation (" code { "plan --rate" } "): for example "
                    a #load-example href=(ctx.self_href(&[], &[("rate", Some("2")), ("ttft_ms", Some("1000")), ("tpot_ms", Some("50"))])) {
                        "2 requests/s, TTFT ≤ 1 s, TPOT ≤ 50 ms"
                    } "."
                },
                Some((_, Err(e))) => {
                    div.error.notice #no-load role="status" data-field=[e.field.as_deref()] {
                        strong { "No deployment under load. " } span.message { (e.message) }
                    }
                },
                Some((api, Ok(p))) => {
                    @match p.ranked.first() {
                        Some(best) => p #load-answer data-gpus=(best.gpus) {
                            "At " (human::sig3(p.rate_per_s)) " requests/s with p99 TTFT ≤ " (human::seconds(p.ttft_bound_s)) " and TPOT ≤ "
                            (human::seconds(p.tpot_bound_s)) ": " strong { (best.replicas) " × " (layout_words(best.tp, best.pp, best.ep)) }
                            " = " strong #load-gpus data-value=(best.gpus) { (best.gpus) " " (p.inputs.gpu) } ", up to " (best.max_seqs)
                            " sequences per replica, p99 TTFT " (human::seconds(best.ttft_p99_s)) ", p99 TPOT " (human::seconds(best.tpot_p99_s))
                            ": " strong #load-cost { (usd(best.usd_per_million_input_tokens)) "/M input · " (usd(best.usd_per_million_output_tokens)) "/M output · " (usd(best.usd_per_request)) "/request" }
                            " under load, at " (usd(p.usd_per_hour)) "/GPU-hour (" (human::count(p.simulations)) " simulations of " (human::count(p.requests_per_candidate)) " requests)."
                        },
                        None => p #load-answer { "No simulated deployment holds both bounds." },
                    }
                    @if p.unassessed > 0 {
                        p.notice #load-partial role="status" {
                            "Partial: the search answered at its deadline with " (human::count((p.candidates - p.unassessed) as u64))
                            " of " (human::count(p.candidates as u64)) " candidates assessed, the fewest GPUs first; those left "
                            "(more GPUs per replica) might be cheaper. A smaller GPU budget or fewer requests per candidate "
                            "makes the search complete."
                        }
                    }
                    p.downloads.notes {
                        "The plan under load as " a href=(api) { "JSON" } " (" code { "llm-ledger plan --rate --format json" } ", within the explorer's step budget)."
                    }
                },
            }
        }
        p.note #fit-basis { (r.fit_basis.rule(i.counting)) "." }
        p.downloads.notes {
            "The GPU table as " a href=(api(None)) { "JSON" } ", " a href=(api(Some("csv"))) { "CSV" }
            " — every GPU's answer, as this page shows it."
        }
    })
}
