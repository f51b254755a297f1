//! Compare: up to four saved scenarios side by side (the report crate's [`CompareReport`]: each
//! one's ledger and memory), each number marked where it differs from the first column and where
//! it is the best of the row; and the Pareto front of the scenario above (the app's `plan
//! --pareto`: every layout within the GPU budget at every batch up to its memory wall, tokens/s
//! per GPU against tokens/s per user), each point a link to its scenario.
//!
//! Saved scenarios travel in the URL (`s1` … `s4`, each a scenario's query string, `default` for
//! the defaults); the page's script also keeps them in the browser (the "Save for comparison"
//! button of every page), and the navigation's link to this page then carries them.

use super::parts::{at_both_sizes, downloads, facts, figure, num, thead, Trend};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_app::plan::PlanRequest;
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan::Deployment;
use llm_ledger_core::serving::{parse_bytes, DEFAULT_RESERVE_BYTES};
use llm_ledger_core::{Catalog, Scenario};
use llm_ledger_report::compare::{Column, CompareReport};
use llm_ledger_report::frontier::FrontierReport;
use llm_ledger_report::human::{self, usd};
use llm_ledger_report::plot::ParetoPlot;
use maud::{html, Markup};

/// The keys of the saved scenarios, in column order.
pub(crate) const SAVED_KEYS: &[&str] = &["s1", "s2", "s3", "s4"];

/// The GPU budget of the page's front when none is given: one server.
pub(crate) const DEFAULT_MAX_GPUS: &str = "8";

/// The page's keys: the saved scenarios, then the front's inputs (the app's `plan` inputs it takes).
pub(super) const KEYS: &[&str] = &["s1", "s2", "s3", "s4", "max_gpus", "usd_per_hour", "reserve", "tpot_ms"];

/// Their text boxes (the saved scenarios travel as hidden fields).
pub(super) const INPUTS: &[PageInput] = &[
    PageInput {
        name: "max_gpus",
        label: "GPU budget of the front",
        help: "most GPUs per replica (plan's max_gpus; at most 64 here)",
        placeholder: DEFAULT_MAX_GPUS,
    },
    PageInput {
        name: "usd_per_hour",
        label: "Price (USD per GPU-hour)",
        help: "of the front's GPU; default: the catalogue's approximate price",
        placeholder: "catalogue price",
    },
    super::RESERVE,
    PageInput {
        name: "tpot_ms",
        label: "TPOT bound (ms)",
        help: "optional: marks the deployments that meet it",
        placeholder: "e.g. 50",
    },
];

/// Scenario keys the front does not use: it makes its own layouts and batches, in decode.
const NOT_FRONT: &[&str] = &["batch", "phase", "contexts", "tp", "pp", "ep", "dp", "micro_batches"];

/// A saved scenario: its label, its query and the scenario.
pub(crate) type Saved = (String, String, Scenario);

/// The saved scenarios of `q` (label, query, scenario) and the reserve; a saved scenario that does
/// not resolve is an error about its key, quoting it.
pub(crate) fn saved_scenarios(q: &PageQuery, catalog: &Catalog) -> Result<(Vec<Saved>, f64), AppError> {
    let reserve_bytes = match q.extra("reserve") {
        Some(r) => parse_bytes("reserve", r).map_err(|e| q.core_error(&e))?,
        None => DEFAULT_RESERVE_BYTES,
    };
    let mut out = Vec::new();
    for (i, key) in SAVED_KEYS.iter().enumerate() {
        let Some(text) = q.extra(key) else { continue };
        let query = if text.trim() == "default" { "" } else { text.trim().trim_start_matches('?') };
        let label = ((b'A' + i as u8) as char).to_string();
        let about = |e: AppError| {
            AppError::bad_request(format!("saved scenario {label} (`{key}` = `{text}`): {}", e.message), Some(key))
                .with_status(e.status)
        };
        let saved = PageQuery::parse(Some(query), &[]).map_err(about)?;
        let sc = saved.resolve(catalog).map_err(about)?.scenario;
        out.push((label, crate::query::without_controls(query).into_owned(), sc));
    }
    Ok((out, reserve_bytes))
}

/// The controls' scenario as a saved scenario's value (`default` for none).
fn here(q: &PageQuery) -> String {
    let s = q.state_query(&[]);
    match s.strip_prefix('?') {
        Some(s) => s.to_string(),
        None => "default".to_string(),
    }
}

/// What makes a number better, for the row's best.
#[derive(Clone, Copy)]
enum Better {
    Higher,
    Lower,
    Neither,
}

/// One row of the comparison: label, id, value of each column, its text, and which way is better.
struct Metric<'a> {
    label: &'a str,
    id: &'a str,
    better: Better,
    value: &'a dyn Fn(&Column) -> Option<f64>,
    text: &'a dyn Fn(&Column) -> String,
}

fn metric_row(m: &Metric, cols: &[Column]) -> Markup {
    let values: Vec<Option<f64>> = cols.iter().map(|c| (m.value)(c)).collect();
    let first = values.first().copied().flatten();
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    let best = match m.better {
        Better::Higher => known.iter().copied().reduce(f64::max),
        Better::Lower => known.iter().copied().reduce(f64::min),
        Better::Neither => None,
    };
    // A best only where the column differs: four equal numbers have none.
    let spread = known.iter().any(|v| Some(Trend::of(known[0], *v)) != Some(Trend::Flat));
    html! {
        tr #(m.id) {
            th scope="row" { (m.label) }
            @for (c, v) in cols.iter().zip(&values) {
                @let differs = matches!((first, v), (Some(a), Some(b)) if Trend::of(a, *b) != Trend::Flat);
                @let is_best = spread && best.is_some_and(|b| v.is_some_and(|x| Trend::of(b, x) == Trend::Flat));
                td.num.differs[differs].best[is_best] data-value=[*v] data-col=(c.label) {
                    (( m.text)(c))
                    @if differs {
                        @if let (Some(a), Some(b)) = (first, v) {
                            " " small.vs { (super::parts::ratio(a, *b)) }
                        }
                    }
                    @if is_best { " " span.best-mark { "best" } }
                }
            }
        }
    }
}

/// The saved scenarios' table.
fn saved_table(ctx: &PageCtx, report: &CompareReport, keys: &[String]) -> Markup {
    let cols = &report.columns;
    let dash = || "—".to_string();
    let metrics: [Metric; 9] = [
        Metric {
            label: "step time",
            id: "m-step",
            better: Better::Lower,
            value: &|c| Some(c.step_time_s),
            text: &|c| human::seconds(c.step_time_s),
        },
        Metric {
            label: "tokens/s",
            id: "m-tokens",
            better: Better::Higher,
            value: &|c| Some(c.tokens_per_s),
            text: &|c| human::sig3(c.tokens_per_s),
        },
        Metric {
            label: "tokens/s per GPU",
            id: "m-per-gpu",
            better: Better::Higher,
            value: &|c| Some(c.tokens_per_s_per_gpu),
            text: &|c| human::sig3(c.tokens_per_s_per_gpu),
        },
        Metric {
            label: "tokens/s per user",
            id: "m-per-user",
            better: Better::Higher,
            value: &|c| c.tokens_per_s_per_user,
            text: &|c| c.tokens_per_s_per_user.map(human::sig3).unwrap_or_else(|| "— (prefill)".into()),
        },
        Metric {
            label: "GPUs",
            id: "m-gpus",
            better: Better::Neither,
            value: &|c| Some(c.gpus as f64),
            text: &|c| c.layout.clone(),
        },
        Metric {
            label: "memory, fullest GPU",
            id: "m-memory",
            better: Better::Lower,
            value: &|c| Some(c.memory_bytes),
            text: &|c| format!("{} of {}", human::bytes(c.memory_bytes), human::bytes(c.available_bytes)),
        },
        Metric {
            label: "fits",
            id: "m-fits",
            better: Better::Neither,
            value: &|c| Some(if c.fits { 1.0 } else { 0.0 }),
            text: &|c| if c.fits { "yes".into() } else { "no".into() },
        },
        Metric {
            label: "$ per million tokens",
            id: "m-usd",
            better: Better::Lower,
            value: &|c| c.usd_per_million_tokens,
            text: &|c| c.usd_per_million_tokens.map(usd).unwrap_or_else(dash),
        },
        Metric {
            label: "bound by",
            id: "m-bound",
            better: Better::Neither,
            value: &|c| Some(c.memory_bound_share),
            text: &|c| format!("{} ({} memory-bound)", c.bound, human::percent(c.memory_bound_share)),
        },
    ];
    // The link that removes column `i`: the others, renumbered.
    let without = |i: usize| -> String {
        let rest: Vec<&String> = keys.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, k)| k).collect();
        let page: Vec<(&str, Option<&str>)> =
            SAVED_KEYS.iter().enumerate().map(|(j, k)| (*k, rest.get(j).map(|s| s.as_str()))).collect();
        ctx.self_href(&[], &page)
    };
    html! {
        table.ledger.compare #compare data-columns=(cols.len()) {
            caption { "The saved scenarios: a number that differs from " strong { "A" } "'s shows the ratio to it; the best of a row is marked" }
            thead {
                tr {
                    th scope="col" { span.visually-hidden { "number" } }
                    @for (i, c) in cols.iter().enumerate() {
                        th scope="col" data-col=(c.label) {
                            span.col-label { (c.label) }
                            " " span.col-what {
                                (c.inputs.model) " on " (c.inputs.gpu) " · " (c.inputs.phase) " · batch " (human::count(c.inputs.batch))
                                @if let Some(t) = c.inputs.ctx { " × " (human::count(t)) }
                                " · weights " (c.inputs.weights_shown()) " · KV " (c.inputs.kv)
                            }
                            span.col-links {
                                a href={ "/ledger" @if !c.query.is_empty() { "?" (c.query) } } { "Ledger" }
                                " · "
                                a.remove data-sync="1" href=(without(i)) aria-label={ "Remove " (c.label) " from the comparison" } { "remove" }
                            }
                        }
                    }
                }
            }
            tbody {
                @for m in &metrics { (metric_row(m, cols)) }
            }
        }
    }
}

/// The front of the controls' scenario, or why it has none (a search refusal, in words).
fn front(ctx: &PageCtx) -> Result<(PageQuery, Result<FrontierReport, AppError>), AppError> {
    let q = ctx.query;
    let none: Vec<(&str, Option<&str>)> = NOT_FRONT.iter().map(|k| (*k, None)).collect();
    let base_q = q.clone_with(&none);
    let sc = base_q.resolve(&ctx.state.catalog)?.scenario;
    let req = PlanRequest {
        max_gpus: Some(q.extra("max_gpus").unwrap_or(DEFAULT_MAX_GPUS).to_string()),
        usd_per_hour: q.extra("usd_per_hour").map(str::to_string),
        reserve: q.extra("reserve").map(str::to_string),
        tpot_ms: q.extra("tpot_ms").map(str::to_string),
        pareto: Some("on".into()),
        batch: None,
    };
    // Bad inputs are the page's errors; a search that finds nothing is said in its section.
    req.serving(&sc).map_err(|e| q.command_error(&e))?;
    crate::api_deploy::web_max_gpus(req.max_gpus.as_deref()).map_err(|e| q.core_error(&e))?;
    let found = req.frontier_within(&sc, Some(ctx.cancel)).map_err(|e| q.command_error(&e)).and_then(|r| q.checked(r));
    Ok((base_q, found))
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    // The scenario above is checked whole, as on every page (the front takes part of it).
    ctx.resolve()?;
    let (saved, reserve_bytes) = saved_scenarios(q, &ctx.state.catalog)?;
    let keys: Vec<String> =
        saved.iter().map(|(_, query, _)| if query.is_empty() { "default".into() } else { query.clone() }).collect();
    let report = q.checked(CompareReport::build(&saved, reserve_bytes))?;
    let (base_q, found) = front(ctx)?;
    let now = here(q);
    let already = keys.iter().position(|k| *k == now);
    let add = (keys.len() < SAVED_KEYS.len() && already.is_none()).then(|| {
        let key = SAVED_KEYS[keys.len()];
        ctx.self_href(&[], &[(key, Some(now.as_str()))])
    });
    let clear: Vec<(&str, Option<&str>)> = SAVED_KEYS.iter().map(|k| (*k, None)).collect();
    let saved_only = |format: Option<&str>| {
        let mut page: Vec<(&str, Option<&str>)> = SAVED_KEYS.iter().map(|k| (*k, q.extra(k))).collect();
        page.push(("reserve", q.extra("reserve")));
        page.push(("format", format));
        PageQuery::default().href_page("/api/compare", &[], &page)
    };
    // A deployment's scenario: the controls' with its layout and batch.
    let deployment_query = |d: &Deployment| -> Vec<(String, String)> {
        let p = &d.point;
        let mut o = vec![("batch".to_string(), p.batch.to_string())];
        for (k, v) in [("tp", p.tp), ("pp", p.pp), ("ep", p.ep)] {
            if v > 1 {
                o.push((k.to_string(), v.to_string()));
            }
        }
        o
    };
    let ledger_of = |d: &Deployment| -> String {
        let o = deployment_query(d);
        let refs: Vec<(&str, Option<&str>)> = o.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
        base_q.href("/ledger", &refs)
    };
    let compare_of = |d: &Deployment| -> Option<String> {
        if keys.len() >= SAVED_KEYS.len() {
            return None;
        }
        let o = deployment_query(d);
        let refs: Vec<(&str, Option<&str>)> = o.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
        let query = base_q.state_query(&refs);
        let value = query.trim_start_matches('?').to_string();
        (!keys.contains(&value)).then(|| ctx.self_href(&[], &[(SAVED_KEYS[keys.len()], Some(value.as_str()))]))
    };
    let link = |d: &Deployment| Some(ledger_of(d));
    Ok(html! {
        h1 { "Compare" }
        p.lead {
            "Saved scenarios side by side, and every deployment of this model on this GPU — each layout within the "
            "budget at each batch up to its memory wall — as throughput per GPU against the speed each user sees. "
            "A faster answer per user costs throughput per GPU; the front is where nothing is given up for nothing."
        }
        section.saved #saved aria-labelledby="saved-h" {
            h2 #saved-h { "Saved scenarios (" (report.columns.len()) " of " (SAVED_KEYS.len()) ")" }
            @if report.columns.is_empty() {
                p #no-saved {
                    "Nothing to compare yet. Save scenarios with " strong { "Save for comparison" }
                    " at the top of any page (they are kept in this browser and carried here by the link to this page), "
                    "or add the scenario set in the controls above, change it and add it again."
                }
            } @else {
                (saved_table(ctx, &report, &keys))
                @if report.columns.len() == 1 { p.note { "Add another scenario to see the differences." } }
            }
            p.actions-line {
                @if let Some(h) = &add {
                    a #add-here href=(h) { "Add the scenario set above" } " (" code { (now) } ")"
                } @else if let Some(i) = already {
                    "The scenario set above is " strong { ((b'A' + i as u8) as char) } "."
                } @else {
                    "Four scenarios are the most; remove one to add another."
                }
                @if !report.columns.is_empty() {
                    " · " a #clear data-sync="1" href=(ctx.self_href(&[], &clear)) { "Clear the comparison" }
                }
            }
            @if !report.columns.is_empty() {
                p.downloads.notes {
                    "These columns as " a href=(saved_only(None)) { "JSON" } ", " a href=(saved_only(Some("csv"))) { "CSV" }
                    " — each scenario's ledger and memory, as its Ledger page shows them."
                }
            }
        }
        section.pareto #pareto aria-labelledby="pareto-h" {
            h2 #pareto-h { "Throughput per GPU against speed per user" }
            @match &found {
                Err(e) => div.error.notice #no-front role="status" data-field=[e.field.as_deref()] {
                    strong { "No deployment to draw. " }
                    span.message { (e.message) }
                },
                Ok(f) => {
                    @let plot = ParetoPlot::from_report(f);
                    @let chart = at_both_sizes(|size| plot.svg_linked(size, Some(&link)));
                    @let i = &f.inputs;
                    p.headline #front-headline {
                        (i.model) " on " (i.gpu) " · decode at " (human::count(f.ctx)) " cached tokens · weights " (i.weights_shown())
                        " · KV " (i.kv) " · at most " (f.max_gpus) " GPUs · $" (f.usd_per_hour) "/GPU-hour"
                    }
                    (facts(&[
                        ("deployments", "deployments", Some(f.deployments.len() as f64), human::count(f.deployments.len() as u64),
                            format!("{} layouts that fit of {} tried, each at batches up to its wall", f.layouts - f.refused.len(), f.layouts)),
                        ("on the front", "front-count", Some(f.front.len() as f64), human::count(f.front.len() as u64),
                            "none beats another on both axes".into()),
                        ("fastest per user", "fastest-user", f.front.first().map(|d| d.tokens_per_s_per_user),
                            f.front.first().map(|d| format!("{} tok/s", human::sig3(d.tokens_per_s_per_user))).unwrap_or_default(),
                            f.front.first().map(|d| format!("{} at batch {}", layout_words(d.point.tp, d.point.pp, d.point.ep), human::count(d.point.batch))).unwrap_or_default()),
                        ("most per GPU", "most-per-gpu", f.front.last().map(|d| d.point.tokens_per_s_per_gpu),
                            f.front.last().map(|d| format!("{} tok/s", human::sig3(d.point.tokens_per_s_per_gpu))).unwrap_or_default(),
                            f.front.last().map(|d| format!("{} at batch {}", layout_words(d.point.tp, d.point.pp, d.point.ep), human::count(d.point.batch))).unwrap_or_default()),
                    ]))
                    (figure(&chart, true, html! {
                        "Every deployment: tokens per second per user (1 ÷ TPOT) across, per GPU (batch ÷ TPOT ÷ GPUs) up, "
                        "both log scales, coloured by GPUs per replica; the front joined in red. Each point opens its scenario in the Ledger."
                    }))
                    table.ledger #front {
                        caption { "The Pareto front, fastest per user first" }
                        (thead(&[("layout", false), ("batch", true), ("TPOT", true), ("tok/s per user", true), ("tok/s per GPU", true),
                            ("tok/s", true), ("$/M tokens", true), ("memory/GPU", true), ("compare", false)]))
                        tbody {
                            @for d in &f.front {
                                @let p = &d.point;
                                tr data-tp=(p.tp) data-pp=(p.pp) data-ep=(p.ep) data-batch=(p.batch) class=[(!p.meets_bound).then_some("rejected")] {
                                    td { a href=(ledger_of(d)) { (layout_words(p.tp, p.pp, p.ep)) } }
                                    td.num { (human::count(p.batch)) }
                                    (num(p.tpot_s, human::seconds(p.tpot_s)))
                                    (num(d.tokens_per_s_per_user, human::sig3(d.tokens_per_s_per_user)))
                                    (num(p.tokens_per_s_per_gpu, human::sig3(p.tokens_per_s_per_gpu)))
                                    (num(p.tokens_per_s, human::sig3(p.tokens_per_s)))
                                    (num(p.usd_per_million_tokens, usd(p.usd_per_million_tokens)))
                                    (num(p.memory_bytes, human::bytes(p.memory_bytes)))
                                    td {
                                        @if let Some(h) = compare_of(d) {
                                            a.add-deployment href=(h) aria-label={ "Compare " (layout_words(p.tp, p.pp, p.ep)) " at batch " (p.batch) } { "compare" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    @if let Some(b) = f.tpot_bound_s {
                        p.note { "Rows in grey miss the TPOT bound of " (human::seconds(b)) "." }
                    }
                    p.note #fit-basis { (f.fit_basis.rule(i.counting)) "; the front's search takes the model, GPU, context and precisions above, not their batch or layout." }
                    @let api = |format: Option<&str>| {
                        let mut page: Vec<(&str, Option<&str>)> = vec![("pareto", Some("on")), ("max_gpus", Some(q.extra("max_gpus").unwrap_or(DEFAULT_MAX_GPUS)))];
                        for k in ["usd_per_hour", "reserve", "tpot_ms"] { page.push((k, q.extra(k))); }
                        page.push(("format", format));
                        PageQuery { extra: Vec::new(), ..base_q.clone() }.href_page("/api/plan", &[], &page)
                    };
                    (downloads(&api(None), &api(Some("csv")), "llm-ledger plan --pareto --format json|csv"))
                },
            }
        }
    })
}
