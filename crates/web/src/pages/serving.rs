//! Serving: one serving instance under load — the CLI's `simulate` at one arrival rate (the
//! core's [`llm_ledger_core::simulate`], reported by [`SimulateReport`](llm_ledger_report::simulate::SimulateReport) and drawn by [`ServingChart`]): TTFT, TPOT,
//! ITL and end-to-end latency, throughput, goodput under the SLAs, preemptions and KV use, with the
//! latency CDFs and the running batch and waiting queue over time.
//!
//! The page's keys are the `simulate` inputs that name no file ([`llm_ledger_app::simulate::inputs`]
//! less `trace`; no `hist:` lengths), read by the app's one resolver with the CLI's messages (the
//! field spelled as the query key), one rate or a sweep of at most [`MAX_WEB_RATES`] (the knee, goodput and p99
//! latency against the rate), at most [`MAX_WEB_REQUESTS`] requests and
//! [`MAX_WEB_STEPS`] engine steps so that one answer stays well under the server's deadline. With `disagg=X:Y` (and `kv_link`) it simulates disaggregated prefill and
//! decode pools and shows them beside aggregated serving on the same GPUs. The scenario's step shape (`phase`, `ctx`, `contexts`, `batch`) is not used:
//! the simulation builds its own steps.

use super::parts::{at_both_sizes, facts, figure};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_app::simulate::{budget, Resolved, SimRequest};
use llm_ledger_app::{CommandError, Files};
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::simulate::stats::Quantiles;
use llm_ledger_core::simulate::{Budget, SimSummary, Simulation};
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::human;
use llm_ledger_report::plot::serving::ServingChart;
use maud::{html, Markup};

/// Most requests one page answer simulates (the CLI takes up to
/// [`llm_ledger_core::simulate::MAX_REQUESTS`]): a fraction of a second in a release build.
pub const MAX_WEB_REQUESTS: u64 = 5_000;

/// Most rates of one sweep on the page (the CLI sweeps up to
/// [`llm_ledger_app::simulate::MAX_RATES`]).
pub const MAX_WEB_RATES: usize = 12;

/// Most requests over the rates of one sweep on the page.
pub const MAX_WEB_SWEEP_REQUESTS: u64 = 12_000;

/// Most engine steps one page answer simulates, over its runs (the CLI's default budget is
/// [`llm_ledger_core::simulate::DEFAULT_MAX_STEPS`]): 5,000 requests at the defaults take about
/// 5,000 steps; 2·10⁶ is a few seconds of one core at worst. A query estimated to need more is
/// refused before it runs ([`llm_ledger_core::simulate::Budget`]).
pub const MAX_WEB_STEPS: u64 = 2_000_000;

/// The page's keys: the `simulate` inputs that name no file, in the app's table order (a test
/// checks them against [`llm_ledger_app::simulate::inputs`]).
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
    "block",
    "prefix_hit",
    "ttft_ms",
    "tpot_ms",
    "reserve",
    "disagg",
    "kv_link",
    "prefill_tp",
    "prefill_ep",
    "decode_tp",
    "decode_ep",
    "admission",
    "preemption",
    "host_time",
    "scheduler_steps",
    "cuda_graphs",
    "warmup",
    "max_concurrency",
    "spec_depth",
    "spec_acceptance",
    "draft_fraction",
    "draft_model",
    "prefix_cache",
    "replicas",
    "router",
    "max_steps",
    "usd_per_hour",
];

/// Scenario keys the simulation does not use (it builds its own steps).
pub const UNUSED: &[&str] = &["phase", "ctx", "contexts", "batch"];

/// Their text boxes.
pub const INPUTS: &[PageInput] = &[
    PageInput {
        name: "rate",
        label: "Arrival rate (requests/s)",
        help: "requests/s, above 0 (default 10); a list (2,4,8) or range (1..16*2) of at most 12 sweeps the rate; max finds the largest rate within the TTFT and TPOT bounds",
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
        help: "continuous batching (default: the engine's own — vLLM 1024 on 70 GiB GPUs but the A100, else 256; SGLang 2048; others 256)",
        placeholder: "engine's own",
    },
    PageInput {
        name: "max_batched_tokens",
        label: "Max batched tokens per step",
        help: "new tokens per step (default: the engine's own — vLLM 8192 on 70 GiB GPUs but the A100, else 2048; SGLang 2048 to 16384 by memory; others 8192)",
        placeholder: "engine's own",
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
        name: "block",
        label: "KV block (tokens)",
        help: "tokens per paged KV block (default 16)",
        placeholder: "16",
    },
    PageInput {
        name: "prefix_hit",
        label: "Prefix-cache hit rate",
        help: "fraction of each prompt found in the prefix cache, 0 to below 1 (default 0)",
        placeholder: "0",
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
    PageInput {
        name: "prefill_tp",
        label: "Prefill TP",
        help: "with a split: tensor-parallel GPUs of each prefill instance (default: this layout's)",
        placeholder: "tp",
    },
    PageInput {
        name: "prefill_ep",
        label: "Prefill EP",
        help: "with a split: expert-parallel groups of each prefill instance (default: this layout's)",
        placeholder: "ep",
    },
    PageInput {
        name: "decode_tp",
        label: "Decode TP",
        help: "with a split: tensor-parallel GPUs of each decode instance (default: this layout's)",
        placeholder: "tp",
    },
    PageInput {
        name: "decode_ep",
        label: "Decode EP",
        help: "with a split: expert-parallel groups of each decode instance (default: this layout's)",
        placeholder: "ep",
    },
    super::RESERVE,
    PageInput {
        name: "admission",
        label: "Admission",
        help: "engine (the engine's own: TensorRT-LLM guaranteed-no-evict, vLLM watermark, SGLang sglang), \
               max-utilization, guaranteed-no-evict, watermark or sglang",
        placeholder: "engine",
    },
    PageInput {
        name: "preemption",
        label: "Preemption",
        help: "recompute or swap (the KV cache over PCIe)",
        placeholder: "recompute",
    },
    PageInput {
        name: "host_time",
        label: "Host time",
        help: "engine (the engine's own), serial (after each GPU step) or overlapped (under it)",
        placeholder: "engine",
    },
    PageInput {
        name: "scheduler_steps",
        label: "Scheduler steps",
        help: "decode steps per scheduling (vLLM multi-step), 1 to 256",
        placeholder: "1",
    },
    PageInput {
        name: "cuda_graphs",
        label: "CUDA-graph padding",
        help: "engine (the engine's own: vllm for vLLM and SGLang, else off), off, vllm (decode batches \
               rounded up to its captured sizes) or the captured sizes, 1,2,4,8,…",
        placeholder: "engine",
    },
    PageInput {
        name: "warmup",
        label: "Warm-up requests",
        help: "the first requests, left out of every statistic",
        placeholder: "0",
    },
    PageInput {
        name: "max_concurrency",
        label: "Most in flight",
        help: "with Poisson or gamma arrivals, as benchmark_serving's --max-concurrency",
        placeholder: "none",
    },
    PageInput {
        name: "spec_depth",
        label: "Speculation depth",
        help: "draft tokens per step (draft heads), 1 to 64",
        placeholder: "off",
    },
    PageInput {
        name: "spec_acceptance",
        label: "Draft acceptance",
        help: "with a depth: a draft token's acceptance, 0 to 1",
        placeholder: "0.7",
    },
    PageInput {
        name: "draft_fraction",
        label: "Draft step cost",
        help: "with a depth: a draft step ÷ the target's decode step",
        placeholder: "0.05",
    },
    PageInput {
        name: "draft_model",
        label: "Draft model",
        help: "with a depth: a preset drafting instead of heads, on the target's GPU and layout",
        placeholder: "heads",
    },
    PageInput {
        name: "prefix_cache",
        label: "Prefix cache",
        help: "on or off: a block-level cache over the KV pool",
        placeholder: "off",
    },
    PageInput {
        name: "replicas",
        label: "Replicas",
        help: "identical instances of the layout, 1 to 64; arrivals routed among them",
        placeholder: "1",
    },
    PageInput {
        name: "router",
        label: "Router",
        help: "with replicas: round-robin, random, least-outstanding or kv",
        placeholder: "round-robin",
    },
    PageInput {
        name: "max_steps",
        label: "Most engine steps",
        help: "over the answer's runs, 1 to 2,000,000 here (default 2,000,000)",
        placeholder: "2000000",
    },
    PageInput {
        name: "usd_per_hour",
        label: "Price ($/GPU-hour)",
        help: "the cost under load is priced at it (default: the catalogue's approximate price)",
        placeholder: "catalogue",
    },
];

/// The query without the scenario keys the simulation does not use.
fn without_step_shape(q: &PageQuery) -> PageQuery {
    let none: Vec<(&str, Option<&str>)> = UNUSED.iter().map(|k| (*k, None)).collect();
    q.clone_with(&none)
}

/// The page's `simulate` inputs resolved for `sc` by the app's resolver (the CLI's, with the
/// CLI's messages), within the page's bounds: one rate, at most [`MAX_WEB_REQUESTS`] requests and
/// [`MAX_WEB_STEPS`] engine steps (the step budget, the second value). Errors name the key.
pub fn resolve(q: &PageQuery, sc: &Scenario) -> Result<(Resolved, u64), AppError> {
    let req: SimRequest = q.extras_as(KEYS)?;
    let core = |e: Error| q.core_error(&e);
    let max_steps = budget(req.max_steps.as_deref(), None).map_err(core)?.max_steps();
    if req.max_steps.is_some() && max_steps > MAX_WEB_STEPS {
        return Err(core(Error::invalid(
            MAX_STEPS_FIELD,
            max_steps,
            format!(
                "{} on the explorer (the CLI's simulate takes more)",
                llm_ledger_core::error::integer_in(1, MAX_WEB_STEPS)
            ),
        )));
    }
    let resolved = req.resolve(sc, Files::None).map_err(|e| q.command_error(&e))?;
    let rates = resolved.rates.len();
    if rates > MAX_WEB_RATES {
        return Err(core(Error::invalid(
            "rate",
            format!("{rates} rates"),
            format!("at most {MAX_WEB_RATES} rates in one sweep on the explorer (the CLI's simulate sweeps more)"),
        )));
    }
    let requests = resolved.cfg.requests;
    if resolved.sweep() && requests.saturating_mul(rates as u64) > MAX_WEB_SWEEP_REQUESTS {
        return Err(core(Error::invalid(
            "requests",
            requests,
            format!(
                "at most {} requests over a sweep's rates on the explorer, here {} at each of {rates} rates: fewer requests or rates, or the CLI's simulate",
                human::count(MAX_WEB_SWEEP_REQUESTS),
                human::count(requests)
            ),
        )));
    }
    if !(1..=MAX_WEB_REQUESTS).contains(&requests) {
        return Err(core(Error::invalid(
            "requests",
            requests,
            format!(
                "{} on the explorer (the CLI's simulate takes more)",
                llm_ledger_core::error::integer_in(1, MAX_WEB_REQUESTS)
            ),
        )));
    }
    Ok((resolved, if req.max_steps.is_some() { max_steps } else { MAX_WEB_STEPS }))
}

/// A query past the page's default step budget, about its `requests` (a budget given as
/// `max_steps` is named as the CLI names it).
fn over_budget(e: Error, requests: u64, max_steps_given: bool) -> Error {
    match e {
        Error::OverBudget { need, .. } if !max_steps_given => Error::invalid(
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
    let n = d.aggregated_instances;
    html! {
        table.ledger #disagg-comparison {
            caption {
                "Disaggregated " (d.prefill_instances) ":" (d.decode_instances) " (" (d.prefill_instances) " prefill and "
                (d.decode_instances) " decode instances, " (d.gpus) " GPUs) against " (n)
                " aggregated instances on the same GPUs; KV cache moved over " (d.link.name)
                "; the first token comes from the prefill instance, so TTFT excludes the move and TPOT includes it"
            }
            thead { tr { th { "measure" } th.num { "disaggregated" } th.num { "aggregated" } } }
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
    let (resolved, max_steps) = resolve(q, &sc)?;
    let cfg = resolved.cfg.clone();
    if !llm_ledger_core::memory::Fit::step(&sc, cfg.reserve_bytes).fits() {
        return Ok(html! {
            h1 { "Serving" }
            p.lead #no-simulation { "The model does not fit on this GPU (see above), so there is nothing to serve: choose a larger GPU, fewer-bit weights or several GPUs." }
        });
    }
    let budget = Budget::new(max_steps, Some(ctx.cancel));
    let given = q.extra(MAX_STEPS_FIELD).is_some();
    let run = resolved.run(&sc, &budget, None).map_err(|e| match e {
        CommandError::Input(e) => q.core_error(&over_budget(e, cfg.requests, given)),
        other => AppError::bad_request(other.to_string(), other.field()),
    })?;
    let report = q.checked(run.report)?;
    if let Some(points) = &report.points {
        return Ok(sweep(ctx, &report, points, &cfg));
    }
    let sim: Simulation = run.runs.into_iter().next().expect("one rate runs once");
    let s = &sim.summary;
    let cdf_chart = ServingChart::latency_cdfs(&sim, None);
    let cdfs = at_both_sizes(|size| cdf_chart.svg(size));
    let timeline_chart = ServingChart::timeline(&sim.series, None);
    let timeline = at_both_sizes(|size| timeline_chart.svg(size));
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
            thead { tr { th { "latency" } th.num { "mean" } th.num { "p50" } th.num { "p90" } th.num { "p99" } } }
            tbody {
                (latency_row("TTFT", "ttft", &s.ttft_s))
                (latency_row("TPOT", "tpot", &s.tpot_s))
                (latency_row("ITL", "itl", &s.itl_s))
                (latency_row("end to end", "e2e", &s.e2e_s))
            }
        }
        @if report.capacity.is_some() {
            dl.capacity #capacity {
                @for (name, value) in report.capacity_rows() {
                    dt { (name) } dd { (value) }
                }
            }
        }
        p #cost data-usd-per-request=[report.cost.and_then(|b| b.usd_per_request)] {
            strong { (report.cost_row().1) }
            @for line in report.cost_basis_lines() { br; (line) }
        }
        @if let Some(rate) = s.offered_rate_per_s {
            @let rates = sweep_rates(rate);
            p #sweep-link {
                a href=(ctx.self_href(&[], &[("rate", Some(&rates))])) { "Sweep the arrival rate →" }
                " " (human::count(SWEEP_POINTS as u64)) " rates from a quarter of this one to twice it ("
                (rates.replace(',', ", ")) " requests/s): goodput and p99 latency against the rate, with the SLAs and the knee."
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

/// Rates of the sweep a one-rate page links to.
const SWEEP_POINTS: usize = 7;

/// `rate` × 2^(k/2) for k = −4 … 2 (a quarter of the rate to twice it), three significant
/// figures each, as the `rate` key takes them.
fn sweep_rates(rate: f64) -> String {
    (0..SWEEP_POINTS)
        .map(|k| {
            let r = rate * 2f64.powf((k as f64 - 4.0) / 2.0);
            let digits = (2 - r.log10().floor() as i32).max(0) as usize;
            let text = format!("{r:.digits$}");
            if text.contains('.') {
                text.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                text
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The page for a sweep of rates: the knee, goodput and p99 latency against the rate (the SLAs
/// and the knee drawn), and a row per rate linking to that rate's page.
fn sweep(
    ctx: &PageCtx,
    report: &llm_ledger_report::simulate::SimulateReport,
    points: &[SimSummary],
    cfg: &llm_ledger_core::simulate::SimConfig,
) -> Markup {
    use llm_ledger_report::plot::serving::{knee, KEEPS_UP};
    let rate = |s: &SimSummary| s.offered_rate_per_s.unwrap_or(s.arrival_rate_per_s);
    let mut sorted: Vec<&SimSummary> = points.iter().collect();
    sorted.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    let knee = knee(points);
    let link = |r: f64| ctx.self_href(&[], &[("rate", Some(&r.to_string()))]);
    let mark_link = |m: &llm_ledger_report::plot::serving::LineMark| m.rate_per_s.map(link);
    let goodput_chart = ServingChart::sweep_goodput(points, None);
    let goodput = at_both_sizes(|size| goodput_chart.svg_linked(size, Some(&mark_link)));
    let latency_chart = ServingChart::sweep_latency(points, cfg.ttft_slo_s, cfg.tpot_slo_s, None);
    let latency = at_both_sizes(|size| latency_chart.svg_linked(size, Some(&mark_link)));
    let best = sorted.iter().copied().max_by(|a, b| a.goodput_per_s.total_cmp(&b.goodput_per_s));
    let slo = match (cfg.ttft_slo_s, cfg.tpot_slo_s) {
        (None, None) => "no SLA is set, so goodput counts every completed request".to_string(),
        (a, b) => {
            let part = |n: &str, v: Option<f64>| v.map(|v| format!("{n} ≤ {}", human::seconds(v)));
            let both: Vec<String> = [part("TTFT", a), part("TPOT", b)].into_iter().flatten().collect();
            format!("goodput counts the requests with {}", both.join(" and "))
        }
    };
    let i = &report.inputs;
    let st = &report.settings;
    let mut items = vec![(
        "knee",
        "knee",
        knee,
        knee.map(|k| format!("{} requests/s", human::sig3(k))).unwrap_or_else(|| "below the lowest rate".into()),
        format!("the highest rate up to which goodput stays ≥ {} of the rate", human::percent(KEEPS_UP)),
    )];
    if let Some(b) = best {
        items.push((
            "most goodput",
            "best-goodput",
            Some(b.goodput_per_s),
            format!("{} requests/s", human::sig3(b.goodput_per_s)),
            format!("at {} requests/s offered", human::sig3(rate(b))),
        ));
    }
    html! {
        h1 { "Serving" }
        p.lead {
            "The same instance at " (human::count(sorted.len() as u64)) " arrival rates, each simulated step by step. "
            "Below the knee the instance keeps up: goodput follows the offered rate and the p99 latencies stay flat. "
            "Past it the queue grows, the latencies climb and goodput falls away from the rate. " (slo) "."
        }
        p.headline #headline {
            (i.model) " on " (i.gpu) " · " (st.arrivals) " · " (human::count(st.requests)) " requests per rate of prompt "
            (st.prompt) " + output " (st.output) " · seed " (st.seed)
        }
        (facts(&items))
        (figure(&goodput, true, html! {
            "Goodput and completed requests/s against the offered rate; the grey line is the offered rate itself, "
            "what an instance that keeps up serves. Each point links to its rate."
        }))
        (figure(&latency, true, html! {
            "p99 time to first token and time per output token against the offered rate (log scale), "
            "with the SLAs given as dashed lines. Each point links to its rate."
        }))
        table.ledger #sweep {
            caption { "Per rate (each links to its own page, with the latency distributions)" }
            (super::parts::thead(&[("offered rate", true), ("completed/s", true), ("goodput/s", true), ("within SLA", true),
                ("p99 TTFT", true), ("p99 TPOT", true), ("p99 ITL", true), ("preemptions", true)]))
            tbody {
                @for s in &sorted {
                    tr data-rate=(rate(s)) class=[(knee == Some(rate(s))).then_some("knee")] {
                        td.num { a href=(link(rate(s))) { (human::sig3(rate(s))) } }
                        (super::parts::num(s.requests_per_s, human::sig3(s.requests_per_s)))
                        (super::parts::num(s.goodput_per_s, human::sig3(s.goodput_per_s)))
                        (super::parts::num(s.slo_attainment, human::percent(s.slo_attainment)))
                        (super::parts::num(s.ttft_s.p99, human::seconds(s.ttft_s.p99)))
                        (super::parts::num(s.tpot_s.p99, human::seconds(s.tpot_s.p99)))
                        (super::parts::num(s.itl_s.p99, human::seconds(s.itl_s.p99)))
                        (super::parts::num(s.preemptions as f64, human::count(s.preemptions)))
                    }
                }
            }
        }
        p.notes {
            "The same numbers as " code { "llm-ledger simulate --rate " (ctx.query.extra("rate").unwrap_or_default()) " --format json" }
            " with these inputs (the CLI sweeps up to 1,000 rates)."
        }
    }
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

    /// The page's keys are the app's `simulate` inputs that name no file, in the table's order,
    /// and each has a text box.
    #[test]
    fn the_keys_are_the_apps_simulate_inputs_without_files() {
        let app: Vec<&str> = llm_ledger_app::simulate::inputs().iter().filter(|i| !i.file).map(|i| i.name).collect();
        assert_eq!(KEYS, app.as_slice());
        let mut boxes: Vec<&str> = INPUTS.iter().map(|i| i.name).collect();
        let mut keys = KEYS.to_vec();
        boxes.sort();
        keys.sort();
        assert_eq!(boxes, keys);
    }

    /// The inputs the page lacked before it read the app's table: the KV block and the prefix
    /// cache change the run as the CLI's flags do, and a step budget past the page's is refused.
    #[test]
    fn block_prefix_hit_and_max_steps_are_read_as_the_cli_reads_them() {
        let state = AppState::builtin();
        let q = |s: &str| PageQuery::parse(Some(s), KEYS).unwrap();
        let scenario = q("").resolve(&state.catalog).unwrap().scenario;
        let (r, steps) = resolve(&q("block=32&prefix_hit=0.5&requests=10"), &scenario).unwrap();
        assert_eq!((r.cfg.block_tokens, r.cfg.prefix_hit, steps), (32, 0.5, MAX_WEB_STEPS));
        let (_, steps) = resolve(&q("max_steps=1000"), &scenario).unwrap();
        assert_eq!(steps, 1000);
        let e = resolve(&q("max_steps=2000001"), &scenario).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("max_steps"));
        let e = resolve(&q("prefix_hit=1"), &scenario).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("prefix_hit"));
        let e = resolve(&q("block=0"), &scenario).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("block"));
        // The CLI's messages, the field spelled as the query key.
        let e = resolve(&q("kv_link=nvlink"), &scenario).unwrap_err();
        assert_eq!(e.message, "invalid `kv_link`: given (it applies only with disagg X:Y)");
        let (r, _) = resolve(&q("rate=2,4"), &scenario).unwrap();
        assert!(r.sweep(), "two rates are a sweep");
        let e = resolve(&q("rate=1..13"), &scenario).unwrap_err();
        assert_eq!(
            e.message,
            "invalid `rate`: 13 rates (at most 12 rates in one sweep on the explorer (the CLI's simulate sweeps more))"
        );
        let e = resolve(&q("prompt=hist:lengths.csv"), &scenario).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("prompt"));
        assert!(
            e.message.contains("hist:FILE.csv is read by the CLI and the Python package, not here"),
            "{}",
            e.message
        );
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
