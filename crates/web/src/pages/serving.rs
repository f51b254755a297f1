//! Serving: one serving instance under load — the CLI's `simulate` at one arrival rate (the
//! core's [`llm_ledger_core::simulate`], reported by [`SimulateReport`] and drawn by [`ServingChart`]): TTFT, TPOT,
//! ITL and end-to-end latency, throughput, goodput under the SLAs, preemptions and KV use, with the
//! latency CDFs and the running batch and waiting queue over time.
//!
//! The page's keys are the `simulate` flags that take no file (no trace, no histogram), one rate
//! (no sweep), and at most [`MAX_WEB_REQUESTS`] requests so that one answer stays well under the
//! server's deadline. With `disagg=X:Y` (and `kv_link`) it simulates disaggregated prefill and
//! decode pools and shows them beside aggregated serving on the same GPUs. The scenario's step shape (`phase`, `ctx`, `contexts`, `batch`) is not used:
//! the simulation builds its own steps.

use super::parts::{facts, figure};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::{ServingRequest, DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS};
use llm_ledger_core::simulate::stats::Quantiles;
use llm_ledger_core::simulate::workload::{Arrivals, Lengths};
use llm_ledger_core::simulate::{simulate_within, Budget, Deployment, Disagg, SimConfig, SimSummary, Simulation};
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::human;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::simulate::SimulateReport;
use maud::{html, Markup};

/// Most requests one page answer simulates (the CLI takes up to
/// [`llm_ledger_core::simulate::MAX_REQUESTS`]): a fraction of a second in a release build.
pub const MAX_WEB_REQUESTS: u64 = 5_000;

/// Most engine steps one page answer simulates, over its runs (the CLI's default budget is
/// [`llm_ledger_core::simulate::DEFAULT_MAX_STEPS`]): 5,000 requests at the defaults take about
/// 5,000 steps; 2·10⁶ is a few seconds of one core at worst. A query estimated to need more is
/// refused before it runs ([`llm_ledger_core::simulate::Budget`]).
pub const MAX_WEB_STEPS: u64 = 2_000_000;

/// The page's keys: the `simulate` flags that take no file.
pub const KEYS: &[&str] = &[
    "rate",
    "arrivals",
    "cv",
    "concurrency",
    "requests",
    "seed",
    "prompt",
    "output",
    "max_seqs",
    "max_batched_tokens",
    "chunk",
    "schedule",
    "ttft_ms",
    "tpot_ms",
    "disagg",
    "kv_link",
    "reserve",
];

/// Scenario keys the simulation does not use (it builds its own steps).
pub const UNUSED: &[&str] = &["phase", "ctx", "contexts", "batch"];

/// Their text boxes.
pub const INPUTS: &[PageInput] = &[
    PageInput {
        name: "rate",
        label: "Arrival rate (requests/s)",
        help: "one rate, above 0 (default 10)",
        placeholder: "10",
    },
    PageInput {
        name: "arrivals",
        label: "Arrival process",
        help: "poisson, gamma (bursty, with the CV), or closed (a new request when one finishes)",
        placeholder: "poisson",
    },
    PageInput {
        name: "cv",
        label: "Burstiness (CV of gaps)",
        help: "gamma arrivals only; 1 is Poisson (default 2)",
        placeholder: "2",
    },
    PageInput {
        name: "concurrency",
        label: "Closed-loop concurrency",
        help: "closed arrivals only (default 16)",
        placeholder: "16",
    },
    PageInput {
        name: "requests",
        label: "Requests",
        help: "requests to simulate, 1 to 5,000 here (default 1,000)",
        placeholder: "1000",
    },
    PageInput { name: "seed", label: "Seed", help: "of the arrival and length draws (default 0)", placeholder: "0" },
    PageInput {
        name: "prompt",
        label: "Prompt tokens",
        help: "N, uniform:MIN..MAX or lognormal:MEDIAN:SIGMA (default 2048)",
        placeholder: "2048",
    },
    PageInput { name: "output", label: "Output tokens", help: "as the prompt (default 256)", placeholder: "256" },
    PageInput {
        name: "max_seqs",
        label: "Max sequences per step",
        help: "continuous batching (default 256)",
        placeholder: "256",
    },
    PageInput {
        name: "max_batched_tokens",
        label: "Max batched tokens per step",
        help: "new tokens per step (default 8192)",
        placeholder: "8192",
    },
    PageInput {
        name: "chunk",
        label: "Prefill chunk (tokens)",
        help: "most prompt tokens of one sequence per step (default: max batched tokens)",
        placeholder: "8192",
    },
    PageInput {
        name: "schedule",
        label: "Schedule",
        help: "decode-first or prefill-first (default decode-first)",
        placeholder: "decode-first",
    },
    PageInput {
        name: "ttft_ms",
        label: "TTFT SLA (ms)",
        help: "goodput counts requests within it",
        placeholder: "none",
    },
    PageInput {
        name: "tpot_ms",
        label: "TPOT SLA (ms)",
        help: "goodput counts requests within it",
        placeholder: "none",
    },
    PageInput {
        name: "disagg",
        label: "Disaggregated (prefill:decode)",
        help: "X:Y prefill and decode instances of this layout, compared with X + Y aggregated ones",
        placeholder: "off",
    },
    PageInput {
        name: "kv_link",
        label: "KV link",
        help: "with a split: auto, nvlink, pcie, network or ideal (default auto)",
        placeholder: "auto",
    },
    super::RESERVE,
];

/// The query without the scenario keys the simulation does not use.
pub(crate) fn without_step_shape(q: &PageQuery) -> PageQuery {
    let none: Vec<(&str, Option<&str>)> = UNUSED.iter().map(|k| (*k, None)).collect();
    q.clone_with(&none)
}

/// The simulator's configuration from the page's keys, as the CLI's `simulate` builds it from its
/// flags (same defaults), with at most [`MAX_WEB_REQUESTS`] requests. Errors name the key.
pub fn config(q: &PageQuery, sc: &Scenario) -> Result<SimConfig, Error> {
    let u = |field: &str, default: u64| -> Result<u64, Error> {
        q.extra(field).map(|s| parse_u64(field, s)).transpose().map(|v| v.unwrap_or(default))
    };
    let f = |field: &str, default: f64| -> Result<f64, Error> {
        q.extra(field).map(|s| parse_f64(field, s)).transpose().map(|v| v.unwrap_or(default))
    };
    let d = SimConfig::poisson(10.0);
    let kind = q.extra("arrivals").unwrap_or("poisson").trim().to_ascii_lowercase();
    let arrivals = match kind.as_str() {
        "poisson" => Arrivals::Poisson { rate_per_s: f("rate", 10.0)? },
        "gamma" => Arrivals::Gamma { rate_per_s: f("rate", 10.0)?, cv: f("cv", 2.0)? },
        "closed" => Arrivals::Closed { concurrency: u("concurrency", 16)? },
        other => return Err(Error::unknown("arrivals", other, ["poisson", "gamma", "closed"]).about("arrivals")),
    };
    // As the CLI: a key of another arrival process is refused, not silently ignored.
    for (field, needs) in [("cv", "gamma"), ("concurrency", "closed")] {
        if q.extra(field).is_some() && kind != needs {
            return Err(Error::invalid(field, "given", format!("it applies only to arrivals {needs}")));
        }
    }
    if q.extra("rate").is_some() && kind == "closed" {
        return Err(Error::invalid("rate", "given", "it applies only to arrivals poisson or gamma"));
    }
    arrivals.validate()?;
    let requests = u("requests", d.requests)?;
    if !(1..=MAX_WEB_REQUESTS).contains(&requests) {
        return Err(Error::invalid(
            "requests",
            requests,
            format!("an integer in 1..={MAX_WEB_REQUESTS} on the explorer (the CLI's simulate takes more)"),
        ));
    }
    let lengths = |field: &str, default: u64| -> Result<Lengths, Error> {
        q.extra(field).map(|t| Lengths::parse(field, t)).transpose().map(|v| v.unwrap_or(Lengths::Fixed(default)))
    };
    let ms = |field: &str| -> Result<Option<f64>, Error> {
        q.extra(field)
            .map(|s| TPOT_MS.parse(s).map_err(|e| e.map_field(|_| field.to_string())))
            .transpose()
            .map(|v| v.map(|ms| ms / 1e3))
    };
    let serving: ServingRequest =
        ServingRequest { reserve: q.extra("reserve").map(str::to_string), ..Default::default() };
    let max_batched_tokens = u("max_batched_tokens", d.max_batched_tokens)?;
    Ok(SimConfig {
        arrivals,
        requests,
        seed: u("seed", d.seed)?,
        prompt: lengths("prompt", DEFAULT_PROMPT_TOKENS)?,
        output: lengths("output", DEFAULT_OUTPUT_TOKENS)?,
        max_seqs: u("max_seqs", d.max_seqs)?,
        max_batched_tokens,
        chunk_tokens: u("chunk", max_batched_tokens)?,
        schedule: q
            .extra("schedule")
            .map(str::parse)
            .transpose()
            .map_err(|e: Error| e.about("schedule"))?
            .unwrap_or(d.schedule),
        ttft_slo_s: ms("ttft_ms")?,
        tpot_slo_s: ms("tpot_ms")?,
        reserve_bytes: serving.resolve(sc)?.reserve_bytes,
        ..d
    })
}

/// A query past the page's step budget, about its `requests` (the page has no budget input).
fn over_budget(e: Error, requests: u64) -> Error {
    match e {
        Error::OverBudget { need, .. } => Error::invalid(
            "requests",
            requests,
            format!(
                "{need}, over the {} one explorer answer simulates: fewer requests, shorter outputs or more sequences per step, or the CLI's simulate (its --max-steps)",
                llm_ledger_core::error::compact_f64(MAX_WEB_STEPS as f64)
            ),
        ),
        other => other,
    }
}

/// A latency row: name, id prefix, the distribution.
fn latency_row(name: &str, id: &str, d: &Quantiles) -> Markup {
    html! {
        tr {
            th scope="row" { (name) }
            @for (k, v) in [("mean", d.mean), ("p50", d.p50), ("p90", d.p90), ("p99", d.p99)] {
                td.num id=(format!("{id}-{k}")) data-value=(v) { (human::seconds(v)) }
            }
        }
    }
}

/// A row of the comparison: label, id suffix, the number, how it is shown.
type ComparisonRow = (&'static str, &'static str, fn(&SimSummary) -> f64, fn(f64) -> String);

/// The disaggregated run beside aggregated serving on the same GPUs.
fn comparison(d: &llm_ledger_report::simulate::DisaggFacts, split: &SimSummary, agg: &SimSummary) -> Markup {
    let rows: [ComparisonRow; 8] = [
        ("TTFT p50", "ttft-p50", |s| s.ttft_s.p50, human::seconds),
        ("TTFT p99", "ttft-p99", |s| s.ttft_s.p99, human::seconds),
        ("TPOT p50", "tpot-p50", |s| s.tpot_s.p50, human::seconds),
        ("TPOT p99", "tpot-p99", |s| s.tpot_s.p99, human::seconds),
        ("ITL p99", "itl-p99", |s| s.itl_s.p99, human::seconds),
        ("output tokens/s", "output-tokens-per-s", |s| s.output_tokens_per_s, human::sig3),
        ("goodput (requests/s)", "goodput", |s| s.goodput_per_s, human::sig3),
        ("KV move p99", "kv-move-p99", |s| s.kv_transfer_s.map_or(0.0, |q| q.p99), human::seconds),
    ];
    let n = d.prefill_instances + d.decode_instances;
    html! {
        table.ledger #disagg-comparison {
            caption {
                "Disaggregated " (d.prefill_instances) ":" (d.decode_instances) " (" (d.prefill_instances) " prefill and "
                (d.decode_instances) " decode instances, " (d.gpus) " GPUs) against " (n)
                " aggregated instances on the same GPUs; KV cache moved over " (d.link.name)
                "; the first token comes from the prefill instance, so TTFT excludes the move and TPOT includes it"
            }
            thead { tr { th { "" } th.num { "disaggregated" } th.num { "aggregated" } } }
            tbody {
                @for (name, id, get, show) in rows {
                    tr {
                        th scope="row" { (name) }
                        td.num id=(format!("disagg-{id}")) data-value=(get(split)) { (show(get(split))) }
                        td.num id=(format!("aggregated-{id}")) data-value=(get(agg)) { (show(get(agg))) }
                    }
                }
            }
        }
    }
}

/// The page body.
pub fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    // The whole scenario is checked (a bad batch is refused here too), then simulated without its step's shape.
    ctx.resolve()?;
    let sc = without_step_shape(q).resolve(&ctx.state.catalog)?.scenario;
    let cfg = config(q, &sc).map_err(|e| q.core_error(&e))?;
    if !llm_ledger_core::memory::Fit::step(&sc, cfg.reserve_bytes).fits() {
        return Ok(html! {
            h1 { "Serving" }
            p.lead #no-simulation { "The model does not fit on this GPU (see above), so there is nothing to serve: choose a larger GPU, fewer-bit weights or several GPUs." }
        });
    }
    let disagg = match (q.extra("disagg"), q.extra("kv_link")) {
        (Some(split), link) => Some(Disagg::of_inputs(split, link, &sc).map_err(|e| q.core_error(&e))?),
        (None, Some(_)) => {
            return Err(q.core_error(&Error::invalid("kv_link", "given", "it applies only with a disagg split X:Y")))
        }
        (None, None) => None,
    };
    let deployment = disagg.clone().map_or(Deployment::SINGLE, Deployment::Disaggregated);
    cfg.validate().map_err(|e| q.core_error(&e))?;
    let budget = Budget::new(MAX_WEB_STEPS, Some(ctx.cancel));
    let runs = if disagg.is_some() { 2 } else { 1 };
    let over = |e: Error| q.core_error(&over_budget(e, cfg.requests));
    budget.admit(std::iter::repeat_n(&cfg, runs)).map_err(over)?;
    let sim: Simulation = simulate_within(&sc, &cfg, &deployment, &budget, |_| {}).map_err(over)?;
    let report = match &disagg {
        None => SimulateReport::new(&sc, &cfg, vec![sim.summary.clone()], false),
        Some(d) => {
            let agg = simulate_within(&sc, &cfg, &deployment.aggregated_equivalent(), &budget, |_| {}).map_err(over)?;
            SimulateReport::disaggregated(&sc, &cfg, d, vec![sim.summary.clone()], vec![agg.summary], false)
        }
    };
    let report = q.checked(report)?;
    let s = &sim.summary;
    let cdfs = ServingChart::latency_cdfs(&sim, None).svg(PlotSize::default());
    let timeline = ServingChart::timeline(&sim.series, None).svg(PlotSize::default());
    let st = &report.settings;
    let slo = match (cfg.ttft_slo_s, cfg.tpot_slo_s) {
        (None, None) => "no SLA set: every completed request counts".to_string(),
        (a, b) => {
            let part = |n: &str, v: Option<f64>| v.map(|v| format!("{n} ≤ {}", human::seconds(v)));
            let both: Vec<String> = [part("TTFT", a), part("TPOT", b)].into_iter().flatten().collect();
            format!("{} met by {}", both.join(" and "), human::percent(s.slo_attainment))
        }
    };
    let items = vec![
        (
            "completed",
            "completed",
            Some(s.completed as f64),
            format!("{} of {}", human::count(s.completed), human::count(s.requests)),
            format!("in {} simulated", human::seconds(s.duration_s)),
        ),
        (
            "throughput",
            "requests-per-s",
            Some(s.requests_per_s),
            format!("{} requests/s", human::sig3(s.requests_per_s)),
            format!("arrivals {} requests/s", human::sig3(s.arrival_rate_per_s)),
        ),
        (
            "output tokens/s",
            "output-tokens-per-s",
            Some(s.output_tokens_per_s),
            human::sig3(s.output_tokens_per_s),
            format!("input {} tokens/s", human::sig3(s.input_tokens_per_s)),
        ),
        ("goodput", "goodput", Some(s.goodput_per_s), format!("{} requests/s", human::sig3(s.goodput_per_s)), slo),
        (
            "preemptions",
            "preemptions",
            Some(s.preemptions as f64),
            human::count(s.preemptions),
            format!("{} tokens recomputed", human::count(s.recomputed_tokens)),
        ),
        (
            "KV cache used",
            "kv-utilisation",
            Some(s.mean_kv_utilisation),
            human::percent(s.mean_kv_utilisation),
            format!(
                "mean; max {} of {} tokens",
                human::percent(s.max_kv_utilisation),
                human::count(s.kv_capacity_tokens)
            ),
        ),
        (
            "batch · queue",
            "mean-batch",
            Some(s.mean_batch),
            format!("{} · {}", human::sig3(s.mean_batch), human::sig3(s.mean_queue)),
            format!("mean running · waiting; max {} · {}", human::count(s.max_batch), human::count(s.max_queue)),
        ),
    ];
    let i = &report.inputs;
    Ok(html! {
        h1 { "Serving" }
        p.lead {
            "One serving instance under load, step by step: requests arrive, are admitted into a continuously batched "
            "step, have their prompts prefilled in chunks and then decode a token per step, with a paged KV cache that "
            "preempts when it runs out. Every step is timed by the ledger for its exact mix of prefill and decode."
            @if report.disagg.is_some() {
                " Here the GPUs are split into prefill and decode pools: the numbers are that deployment's, and the table "
                "below puts it beside aggregated serving on the same GPUs."
            }
        }
        p.headline #headline {
            (i.model) " on " (i.gpu) " · " (st.arrivals)
            @if let Some(r) = s.offered_rate_per_s { " at " (human::sig3(r)) " requests/s" }
            @if let Some(c) = st.concurrency { " of " (human::count(c)) }
            " · " (human::count(st.requests)) " requests of prompt " (st.prompt) " + output " (st.output)
            " · ≤ " (human::count(st.max_seqs)) " sequences, ≤ " (human::count(st.max_batched_tokens)) " tokens per step · seed " (st.seed)
        }
        @if !s.drained {
            p.error.notice #not-drained role="alert" { "Not drained: the run stopped at its step bound with requests still queued." }
        }
        @if s.queue_growth_per_s > 0.05 * s.arrival_rate_per_s {
            p.error.notice #overloaded role="alert" {
                "Overloaded: the queue was growing by " (human::sig3(s.queue_growth_per_s))
                " requests/s at the last arrival — arrivals exceed what this instance serves."
            }
        }
        (facts(&items))
        @if let (Some(d), Some(a)) = (&report.disagg, &report.aggregated) {
            (comparison(d, s, a))
        }
        table.ledger #latencies {
            caption { "Latency per request (ITL: per token)" }
            thead { tr { th { "" } th.num { "mean" } th.num { "p50" } th.num { "p90" } th.num { "p99" } } }
            tbody {
                (latency_row("TTFT", "ttft", &s.ttft_s))
                (latency_row("TPOT", "tpot", &s.tpot_s))
                (latency_row("ITL", "itl", &s.itl_s))
                (latency_row("end to end", "e2e", &s.e2e_s))
            }
        }
        (figure(&cdfs, true, html! { "Latency CDFs: the fraction of requests (of tokens, for ITL) at or below each latency." }))
        (figure(&timeline, true, html! { "The running batch and the waiting queue over simulated time." }))
        p.notes {
            "The same numbers as " code { "llm-ledger simulate --format json" } " with these inputs (the CLI also sweeps rates, "
            "reads traces and length histograms, and simulates up to a million requests)."
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AppState;
    use std::sync::atomic::AtomicBool;

    fn render_with(query: &str, cancel: bool) -> Result<Markup, AppError> {
        let state = AppState::builtin();
        let page = crate::pages::find("serving").expect("the serving page");
        let q = PageQuery::parse(Some(query), page.keys).unwrap();
        let flag = AtomicBool::new(cancel);
        render(&PageCtx { state: &state, query: &q, page, cancel: &flag })
    }

    /// Once the request's flag is set (its deadline, or its client gone), the simulation stops at
    /// its next check instead of running to its end (here about 10⁶ steps).
    #[test]
    fn a_cancelled_request_stops_its_simulation() {
        let long = "requests=2500&rate=1000000&prompt=1&output=400&max_seqs=1";
        let e = render_with(long, true).unwrap_err();
        assert_eq!(e.message, "cancelled before the end");
        assert!(render_with("requests=5&prompt=16&output=4", false).is_ok());
    }

    /// A query estimated past the page's step budget is refused before it runs, naming
    /// `requests` and the estimate.
    #[test]
    fn a_query_past_the_step_budget_is_refused_before_it_runs() {
        let e = render_with("requests=5000&rate=1000000&prompt=1&output=460000&max_seqs=1", false).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("requests"));
        assert_eq!(
            e.message,
            "invalid `requests`: 5000 (1 run of 5000 requests of 1 + 460000 tokens at ≤ 1 sequence per step needs about 2.3e9 engine steps, over the 2e6 one explorer answer simulates: fewer requests, shorter outputs or more sequences per step, or the CLI's simulate (its --max-steps))"
        );
    }
}
