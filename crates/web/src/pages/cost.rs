//! Cost: the CLI's `cost` and `latency` reports for a batch of identical requests (prompt, then
//! decode of the output with a growing context): dollars per million input and output tokens, the
//! latencies, the cheapest batch under a TPOT bound (or why there is none), and the same numbers
//! at powers of two up to the largest batch that fits.
//!
//! The page's own keys are those of the core's `ServingRequest` the two commands take. The
//! scenario's `phase`, `ctx` and `contexts` shape a single step, which these commands build for
//! themselves; the page leaves them out (the CLI and `/api/cost` refuse them) and keeps them for
//! the other pages.

use super::parts::{downloads, facts, num, thead};
use super::{PageCtx, PageInput, STEP_SHAPE};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_core::economics::CostPoint;
use llm_ledger_core::serving::{PriceSource, ServingRequest};
use llm_ledger_report::cost::{usd, CostReport};
use llm_ledger_report::human;
use llm_ledger_report::latency::LatencyReport;
use maud::{html, Markup};

/// The page's keys: the `cost` command's serving flags.
pub(super) const KEYS: &[&str] = &["prompt", "output", "usd_per_hour", "tpot_ms", "reserve"];

/// The keys `latency` takes.
pub(super) const LATENCY_KEYS: &[&str] = &["prompt", "output", "reserve"];

/// Their text boxes.
pub(super) const INPUTS: &[PageInput] = &[
    PageInput { name: "prompt", label: "Prompt tokens", help: "per request", placeholder: "2048" },
    PageInput { name: "output", label: "Output tokens", help: "per request", placeholder: "256" },
    PageInput {
        name: "usd_per_hour",
        label: "Price (USD per GPU-hour)",
        help: "default: the catalogue's approximate price",
        placeholder: "catalogue price",
    },
    PageInput {
        name: "tpot_ms",
        label: "TPOT bound (ms)",
        help: "find the cheapest batch whose time per output token is at most this",
        placeholder: "e.g. 50",
    },
    super::RESERVE,
];

/// The query without the scenario keys the page leaves out.
fn without_step_shape(q: &PageQuery) -> PageQuery {
    let none: Vec<(&str, Option<&str>)> = STEP_SHAPE.iter().map(|k| (*k, None)).collect();
    q.clone_with(&none)
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let q_step = without_step_shape(q);
    let sc = q_step.resolve(&ctx.state.catalog)?.scenario;
    let req: ServingRequest = q.extras_as(KEYS)?;
    let serving = req.resolve(&sc).map_err(|e| q.core_error(&e))?;
    let latency = q.checked(LatencyReport::build(&sc, &serving).map_err(|e| q.core_error(&e))?)?;
    // The cost at the batch; the bound is answered below, so a bound no batch meets is a message,
    // not a failed page.
    let unbounded = llm_ledger_core::serving::Serving { tpot_bound_s: None, ..serving };
    let cost = q.checked(CostReport::build(&sc, &unbounded).map_err(|e| q.core_error(&e))?)?;
    let bounded = serving.tpot_bound_s.map(|b| (b, CostReport::build(&sc, &serving).map_err(|e| q.core_error(&e))));
    let l = &latency.latency;
    let at = &cost.rows[0];
    let price = cost.usd_per_hour;
    let source = match cost.price_source {
        PriceSource::CatalogueApproximate => "the catalogue's approximate on-demand price (set yours below)",
        PriceSource::User => "your price",
    };
    let items = vec![
        (
            "$ per million output tokens",
            "usd-per-million-output",
            cost.usd_per_million_output_tokens,
            cost.usd_per_million_output_tokens.map(usd).unwrap_or_else(|| "—".into()),
            format!("decode: price × TPOT ÷ batch; at batch {}", human::count(at.batch)),
        ),
        (
            "$ per million input tokens",
            "usd-per-million-input",
            Some(cost.usd_per_million_input_tokens),
            usd(cost.usd_per_million_input_tokens),
            "prefill: price × TTFT ÷ (batch × prompt)".to_string(),
        ),
        (
            "$ per request",
            "usd-per-request",
            Some(cost.usd_per_request),
            usd(cost.usd_per_request),
            "price × end-to-end ÷ batch".into(),
        ),
        ("price", "usd-per-hour", Some(price), format!("{}/GPU-hour", usd(price)), source.to_string()),
        (
            "TTFT",
            "ttft",
            Some(l.ttft_s),
            human::seconds(l.ttft_s),
            format!("one prefill of {} × {} tokens", l.batch, human::count(l.prompt_tokens)),
        ),
        (
            "TPOT",
            "tpot",
            l.tpot_s,
            l.tpot_s.map(human::seconds).unwrap_or_else(|| "— (one output token)".into()),
            "mean decode step as the context grows".into(),
        ),
        (
            "end to end",
            "e2e",
            Some(l.e2e_s),
            human::seconds(l.e2e_s),
            format!("prefill and decode; {} output tokens/s over whole requests", human::sig3(l.output_tokens_per_s)),
        ),
        (
            "memory",
            "peak-memory",
            Some(l.peak_memory_bytes),
            human::bytes(l.peak_memory_bytes),
            format!(
                "{}; at most {} requests fit",
                if l.fits { "fits" } else { "does NOT fit" },
                human::count(l.max_batch)
            ),
        ),
    ];
    let rows = batch_rows(&sc, &unbounded, l.max_batch, at.batch);
    // The documents: `/api/cost` refuses a TPOT bound no batch meets (as the CLI does), so where
    // the bound is unmet they are the cost without it (the page says so).
    let unmet = matches!(bounded, Some((_, Err(_))));
    let api = |path: &str, keys: &[&str], format: Option<&str>| {
        let kept: Vec<(String, String)> =
            q.extra.iter().filter(|(k, _)| keys.contains(&k.as_str()) && !(unmet && k == "tpot_ms")).cloned().collect();
        let base = PageQuery { extra: kept, ..q_step.clone() };
        base.href_page(path, &[], &[("format", format)])
    };
    let i = &cost.inputs;
    Ok(html! {
        h1 { "Cost" }
        p.lead {
            "What a token costs: the GPU-hour price spread over the tokens the ledger's step times say it serves. "
            "Prompt tokens pay for prefill, output tokens for decode; a bigger batch shares each step, until the "
            "time per output token or the memory says stop."
        }
        p.headline #headline {
            (i.model) " on " (i.gpu) " · batch " (human::count(at.batch)) " requests of " (human::count(cost.prompt_tokens)) " prompt + "
            (human::count(cost.output_tokens)) " output tokens · weights " (i.weights_shown()) " · KV " (i.kv)
        }
        (facts(&items))
        section.tpot #tpot aria-labelledby="tpot-h" {
            h2 #tpot-h { "Cheapest batch under a latency bound" }
            @match &bounded {
                None => p {
                    "Set a TPOT bound to find the cheapest batch that meets it: "
                    @for (i, ms) in ["20", "50", "100"].iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(ctx.self_href(&[], &[("tpot_ms", Some(ms))])) { (ms) " ms" }
                    }
                    "."
                },
                Some((bound, Ok(r))) => {
                    @let c = &r.rows[1];
                    p #cheapest data-batch=(c.batch) {
                        "With TPOT ≤ " (human::seconds(*bound)) ", the cheapest batch is " strong #cheapest-batch data-value=(c.batch) { (human::count(c.batch)) }
                        ": TPOT " (c.tpot_s.map(human::seconds).unwrap_or_default()) ", "
                        strong { (c.usd_per_million_output_tokens.map(usd).unwrap_or_default()) } " per million output tokens, "
                        (usd(c.usd_per_request)) " per request. "
                        "(TPOT never falls as the batch grows and TPOT ÷ batch never rises, so the largest batch that meets the bound and fits is the cheapest.)"
                    }
                },
                Some((_, Err(e))) => div.error.notice #no-batch role="status" data-field=[e.field.as_deref()] {
                    strong { "No batch meets the bound. " }
                    span.message { (e.message) }
                },
            }
        }
        table.ledger #cost-by-batch {
            caption { "The same requests at other batch sizes (the current batch is marked)" }
            (thead(&[("batch", true), ("TTFT", true), ("TPOT", true), ("output tok/s", true), ("$/M input", true),
                ("$/M output", true), ("$/request", true), ("memory", true), ("fits", false)]))
            tbody {
                @for c in &rows {
                    @let lt = &c.latency;
                    tr data-batch=(lt.batch) aria-current=[(lt.batch == at.batch).then_some("true")] {
                        td.num { (human::count(lt.batch)) }
                        (num(lt.ttft_s, human::seconds(lt.ttft_s)))
                        td.num data-value=[lt.tpot_s] { (lt.tpot_s.map(human::seconds).unwrap_or_else(|| "—".into())) }
                        (num(lt.output_tokens_per_s, human::sig3(lt.output_tokens_per_s)))
                        (num(c.usd_per_million_input_tokens, usd(c.usd_per_million_input_tokens)))
                        td.num data-value=[c.usd_per_million_output_tokens] { (c.usd_per_million_output_tokens.map(usd).unwrap_or_else(|| "—".into())) }
                        (num(c.usd_per_request, usd(c.usd_per_request)))
                        (num(lt.peak_memory_bytes, human::bytes(lt.peak_memory_bytes)))
                        td class=(if lt.fits { "fits" } else { "nofit" }) { (if lt.fits { "yes" } else { "no" }) }
                    }
                }
            }
        }
        div.notes {
            p { "$/M input = price/3600 · TTFT ÷ (batch · prompt) · 10⁶; $/M output = price/3600 · TPOT ÷ batch · 10⁶; $/request = price/3600 · e2e ÷ batch." }
            p { (llm_ledger_report::latency::decode_sum_note(l.decode_sum)) "." }
            p #fit-basis { (l.fit_basis.rule(i.counting)) "; peak: " (llm_ledger_report::latency::peak_step(l.peak_phase)) "." }
            @if STEP_SHAPE.iter().any(|k| q.get(k).is_some()) {
                p.note { "Phase and context length are not used here: requests are a prefill of the prompt, then decode of the output with a growing context." }
            }
        }
        (downloads(&api("/api/cost", KEYS, None), &api("/api/cost", KEYS, Some("csv")), "llm-ledger cost --format json|csv"))
        @if unmet {
            p.notes #downloads-unbounded { "No batch meets the TPOT bound, so these documents are the cost without it (with it the CLI refuses, as above)." }
        }
        p.downloads.notes {
            "The latency alone: " a href=(api("/api/latency", LATENCY_KEYS, None)) { "JSON" } " (" code { "llm-ledger latency --format json" } ")."
        }
    })
}

/// The cost at batch 1, 2, 4, … up to the largest batch that fits (and the current batch).
fn batch_rows(
    sc: &llm_ledger_core::Scenario,
    serving: &llm_ledger_core::serving::Serving,
    max_batch: u64,
    current: u64,
) -> Vec<CostPoint> {
    let Some(price) = serving.price else { return Vec::new() };
    let mut batches: Vec<u64> =
        std::iter::successors(Some(1u64), |b| b.checked_mul(2)).take_while(|b| *b <= max_batch.max(1)).collect();
    if max_batch > 0 && !batches.contains(&max_batch) {
        batches.push(max_batch);
    }
    if !batches.contains(&current) {
        batches.push(current);
    }
    batches.sort_unstable();
    batches.iter().filter_map(|b| CostPoint::at(sc, serving, price, *b).ok()).collect()
}
