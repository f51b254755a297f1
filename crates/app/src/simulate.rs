//! `simulate`: its inputs as text (the CLI's flags, the explorer's query keys, the Python
//! package's keywords) into the core's [`SimConfig`], the files they name (`trace`, `hist:FILE`
//! lengths) read through the front end's [`Files`]; the runs of a rate sweep; the report. One
//! definition for every front end, so the same text gives the same numbers and the same messages.

use crate::{CommandError, Files, Input};
use llm_ledger_core::capacity::{self, Bounds};
use llm_ledger_core::error::integer_in;
use llm_ledger_core::error::Text;
use llm_ledger_core::limits::MAX_GPUS_PER_REPLICA;
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::{Price, ServingRequest};
use llm_ledger_core::simulate::budget::{MAX_STEPS_FIELD, MAX_STEPS_LIMIT};
use llm_ledger_core::simulate::workload::{check_rate, parse_trace_csv, Arrivals, Lengths};
use llm_ledger_core::simulate::{
    simulate_within, Budget, Deployment, Disagg, Draft, DraftModel, PoolLayout, SimConfig, Simulation, Speculation,
    StepRecord, DEFAULT_MAX_STEPS, MAX_RATE_PER_S,
};
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::simulate::SimulateReport;
use llm_ledger_report::Inputs;
use serde::Deserialize;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

type Result<T, E = CommandError> = std::result::Result<T, E>;

/// The word `rate` takes for a capacity search ([`capacity::find`]).
pub const RATE_MAX: &str = "max";

/// Most rates in one sweep.
pub const MAX_RATES: usize = 1000;

/// Most requests over all the rates of one sweep (each run is bounded; this bounds their sum).
pub const MAX_SWEEP_REQUESTS: u64 = 10_000_000;

/// The rates of `rate`: the sweep syntax for whole numbers (`2,4,8`, `1..40`, `1..64*2`), or a
/// list of decimals (`0.5,1.5`).
pub fn parse_rates(text: &str) -> Result<Vec<f64>, Error> {
    if let Ok(axis) = Axis::parse("rate", text, 1, MAX_RATE_PER_S as u64) {
        if axis.len() as usize > MAX_RATES {
            return Err(Error::invalid("rate", format!("{} rates", axis.len()), format!("at most {MAX_RATES}")));
        }
        return Ok(axis.iter().map(|v| v as f64).collect());
    }
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.is_empty() || items.len() > MAX_RATES {
        return Err(Error::invalid(
            "rate",
            format!("{text:?}"),
            "requests/s: a value, a list `2,4,8` or a range `1..40`",
        ));
    }
    items.iter().map(|s| check_rate("rate", parse_f64("rate", s)?)).collect()
}

/// The step budget of one command over all its runs: `max_steps` (an integer ≥ 1; default
/// [`DEFAULT_MAX_STEPS`]), cancelled when `cancel` becomes true.
pub fn budget<'a>(max_steps: Option<&str>, cancel: Option<&'a AtomicBool>) -> Result<Budget<'a>, Error> {
    let steps = match max_steps {
        Some(s) => parse_u64(MAX_STEPS_FIELD, s)?,
        None => DEFAULT_MAX_STEPS,
    };
    if !(1..=MAX_STEPS_LIMIT).contains(&steps) {
        return Err(Error::invalid(
            MAX_STEPS_FIELD,
            steps,
            format!("engine steps over every run, {}", llm_ledger_core::error::range_words(1, MAX_STEPS_LIMIT)),
        ));
    }
    Ok(Budget::new(steps, cancel))
}

/// Prompt or output lengths from an input's text (`hist:FILE` read through `files`), or
/// `default` tokens.
pub fn lengths(field: &'static str, text: Option<&str>, default: u64, files: Files<'_>) -> Result<Lengths> {
    let Some(t) = text else { return Ok(Lengths::Fixed(default)) };
    let Some(path) = t.trim().strip_prefix("hist:") else { return Ok(Lengths::parse(field, t)?) };
    let Files::Read(read) = files else {
        return Err(Error::invalid(
            field,
            format!("{:?}", t.trim()),
            "a token count, uniform:MIN..MAX or lognormal:MEDIAN:SIGMA (hist:FILE.csv is read by the CLI and the Python package, not here)",
        )
        .into());
    };
    let file = |error: anyhow::Error| CommandError::File { field, error };
    let text = read(Path::new(path), "histogram").map_err(file)?;
    Lengths::parse_histogram(field, &text)
        .map_err(|e| file(anyhow::Error::new(e).context(format!("in histogram `{path}`"))))
}

/// The inputs of `simulate` besides the scenario, as text (`None` = the default): the CLI's
/// flags, the explorer's query keys and the Python keywords, each named as [`inputs`] names it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimRequest {
    /// Requests/s: a value, a list or a range (a sweep).
    pub rate: Option<String>,
    /// poisson, gamma, closed or trace.
    pub arrivals: Option<String>,
    /// Coefficient of variation of gamma gaps.
    pub cv: Option<String>,
    /// Closed-loop concurrency.
    pub concurrency: Option<String>,
    /// A trace CSV file (path).
    pub trace: Option<String>,
    /// Requests per run.
    pub requests: Option<String>,
    /// Seed of the draws.
    pub seed: Option<String>,
    /// Prompt lengths (N, uniform:, lognormal:, hist:FILE).
    pub prompt: Option<String>,
    /// Output lengths, as `prompt`.
    pub output: Option<String>,
    /// Most sequences per step.
    pub max_seqs: Option<String>,
    /// Most new tokens per step.
    pub max_batched_tokens: Option<String>,
    /// Most prompt tokens of one sequence per step.
    pub chunk: Option<String>,
    /// prefill-first or decode-first.
    pub schedule: Option<String>,
    /// Tokens per KV block.
    pub block: Option<String>,
    /// Prefix-cache hit rate.
    pub prefix_hit: Option<String>,
    /// Goodput TTFT bound, milliseconds.
    pub ttft_ms: Option<String>,
    /// Goodput TPOT bound, milliseconds.
    pub tpot_ms: Option<String>,
    /// Memory reserve (e.g. `2GB`).
    pub reserve: Option<String>,
    /// Disaggregated pools `PREFILL:DECODE` (instances).
    pub disagg: Option<String>,
    /// The link a disaggregated run moves KV caches over.
    pub kv_link: Option<String>,
    /// Tensor-parallel GPUs of each prefill instance (default: the scenario's `tp`).
    pub prefill_tp: Option<String>,
    /// Expert-parallel groups of each prefill instance (default: the scenario's `ep`).
    pub prefill_ep: Option<String>,
    /// Tensor-parallel GPUs of each decode instance (default: the scenario's `tp`).
    pub decode_tp: Option<String>,
    /// Expert-parallel groups of each decode instance (default: the scenario's `ep`).
    pub decode_ep: Option<String>,
    /// Admission policy.
    pub admission: Option<String>,
    /// What a preemption does with the KV cache.
    pub preemption: Option<String>,
    /// Host time per step: serial or overlapped.
    pub host_time: Option<String>,
    /// Decode steps per scheduling.
    pub scheduler_steps: Option<String>,
    /// CUDA-graph padding of decode batches.
    pub cuda_graphs: Option<String>,
    /// Requests left out of the statistics (a warm-up).
    pub warmup: Option<String>,
    /// Most requests in flight for an open loop or a trace.
    pub max_concurrency: Option<String>,
    /// Speculative decoding: draft tokens per step.
    pub spec_depth: Option<String>,
    /// Speculative decoding: acceptance rate of a draft token.
    pub spec_acceptance: Option<String>,
    /// Speculative decoding: one draft step's cost ÷ the target's decode step.
    pub draft_fraction: Option<String>,
    /// Speculative decoding: a draft model (a preset) instead of draft heads.
    pub draft_model: Option<String>,
    /// A block-level prefix cache over the KV pool.
    pub prefix_cache: Option<String>,
    /// Identical replicas of the layout, arrivals routed among them.
    pub replicas: Option<String>,
    /// Which replica takes an arrival.
    pub router: Option<String>,
    /// Engine steps over every run of the command (the step budget).
    pub max_steps: Option<String>,
    /// Price per GPU-hour (default: the catalogue's).
    pub usd_per_hour: Option<String>,
}

/// `simulate`'s inputs besides the scenario, in [`SimRequest`]'s field order (a test checks the
/// two agree, and each front end is checked against this table).
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text(
            "rate",
            Some("10"),
            "requests/s: a value, a list `2,4,8`, a range `1..40` (a sweep), or `max`: the largest rate that \
             holds the p99 bounds ttft_ms and tpot_ms (capacity), with the saturation rate and the knee",
            "arrival rate",
        ),
        Input::text("arrivals", Some("poisson"), "poisson, gamma, closed or trace", "arrival process"),
        Input::text(
            "cv",
            Some("2"),
            "a number > 0 (1 is Poisson)",
            "coefficient of variation of the gaps between gamma arrivals",
        ),
        Input::text(
            "concurrency",
            Some("16"),
            "a positive integer",
            "requests in the system at every moment, closed loop",
        ),
        Input::file(
            "trace",
            "a CSV file: arrival_s,prompt_tokens,output_tokens per line",
            "arrivals and lengths of a trace",
        ),
        Input::text(
            "requests",
            Some("1000"),
            "a positive integer (with a trace: at most its rows)",
            "requests to simulate (with a trace: its first N rows)",
        ),
        Input::text("seed", Some("0"), "an integer", "seed of the arrival and length draws"),
        Input::text(
            "prompt",
            Some("2048"),
            "N, uniform:MIN..MAX, lognormal:MEDIAN:SIGMA or hist:FILE.csv",
            "prompt tokens",
        ),
        Input::text("output", Some("256"), "as prompt", "output tokens"),
        Input::text(
            "max_seqs",
            None,
            "a positive integer (default: the engine's own on the GPU)",
            "most sequences per step",
        ),
        Input::text(
            "max_batched_tokens",
            None,
            "a positive integer (default: the engine's own on the GPU)",
            "most new tokens per step",
        ),
        Input::text(
            "chunk",
            None,
            "a positive integer (default: max_batched_tokens)",
            "most prompt tokens of one sequence per step",
        ),
        Input::text(
            "schedule",
            Some("decode-first"),
            "decode-first or prefill-first",
            "which phase a step serves first",
        ),
        Input::text("block", Some("16"), "a positive integer", "tokens per KV block"),
        Input::text(
            "prefix_hit",
            Some("0"),
            "a fraction, 0 to below 1",
            "fraction of each prompt found in the prefix cache",
        ),
        Input::text("ttft_ms", None, "milliseconds", "TTFT bound of the goodput"),
        Input::text("tpot_ms", None, "milliseconds", "TPOT bound of the goodput"),
        Input::text("reserve", Some("0"), "bytes (`2GB`, `512MiB`)", "memory kept free of weights and KV cache"),
        Input::text("disagg", None, "PREFILL:DECODE instances", "disaggregated serving"),
        Input::text(
            "kv_link",
            Some("auto"),
            "auto, nvlink, pcie, network or ideal",
            "the link the KV cache crosses with disagg",
        ),
        Input::text(
            "prefill_tp",
            None,
            "an integer from 1 to 4,096 (default: tp)",
            "tensor-parallel GPUs of each prefill instance, with disagg",
        ),
        Input::text(
            "prefill_ep",
            None,
            "an integer from 1 to 4,096 (default: ep)",
            "expert-parallel groups of each prefill instance, with disagg",
        ),
        Input::text(
            "decode_tp",
            None,
            "an integer from 1 to 4,096 (default: tp)",
            "tensor-parallel GPUs of each decode instance, with disagg",
        ),
        Input::text(
            "decode_ep",
            None,
            "an integer from 1 to 4,096 (default: ep)",
            "expert-parallel groups of each decode instance, with disagg",
        ),
        Input::text(
            "admission",
            Some(ENGINE_OWN),
            "engine (its own: TensorRT-LLM guaranteed-no-evict, vLLM watermark, SGLang sglang, \
             others max-utilization), max-utilization, guaranteed-no-evict, watermark (1 %) or sglang",
            "which requests a step admits",
        ),
        Input::text(
            "preemption",
            Some("recompute"),
            "recompute or swap (KV over PCIe)",
            "what a preemption does with the KV cache",
        ),
        Input::text(
            "host_time",
            Some(ENGINE_OWN),
            "engine (its own: serial for vllm@0.6 and eager, else overlapped), serial or overlapped",
            "host time per step, after the GPU's or under it",
        ),
        Input::text(
            "scheduler_steps",
            Some("1"),
            "an integer from 1 to 256",
            "decode steps per scheduling (vLLM multi-step)",
        ),
        Input::text(
            "cuda_graphs",
            Some(ENGINE_OWN),
            "engine (its own: vllm for vLLM and SGLang, else off), off, vllm (its captured batch sizes) \
             or the captured sizes `1,2,4,8,…`",
            "decode batches padded to captured sizes",
        ),
        Input::text("warmup", Some("0"), "requests, below requests", "first requests left out of every statistic"),
        Input::text("max_concurrency", None, "a positive integer", "most requests in flight, open loop or trace"),
        Input::text("spec_depth", None, "an integer from 1 to 64", "speculative decoding: draft tokens per step"),
        Input::text(
            "spec_acceptance",
            Some("0.7"),
            "a fraction in [0, 1]",
            "speculative decoding: a draft token's acceptance",
        ),
        Input::text(
            "draft_fraction",
            Some("0.05"),
            "a fraction in [0, 1]",
            "speculative decoding: a draft step's cost ÷ the target's decode step (MTP/EAGLE heads)",
        ),
        Input::text(
            "draft_model",
            None,
            "a preset with the target's vocabulary (llm-ledger models)",
            "speculative decoding: a draft model, timed on the target's GPU, precisions and layout",
        ),
        Input::text("prefix_cache", Some("off"), "on or off", "a block-level prefix cache over the KV pool"),
        Input::text(
            "replicas",
            Some("1"),
            "an integer from 1 to 64",
            "identical replicas of the layout, each a serving instance; arrivals routed among them",
        ),
        Input::text(
            "router",
            Some("round-robin"),
            "round-robin, random, least-outstanding or kv",
            "which replica takes an arrival (with replicas)",
        ),
        Input::text(
            MAX_STEPS_FIELD,
            Some("100000000"),
            "an integer from 1 to 10,000,000,000",
            "most engine steps over every run",
        ),
        Input::text("usd_per_hour", None, "a number > 0 (default: the catalogue's price)", "price per GPU-hour"),
    ];
    INPUTS
}

/// The word a policy input takes for the engine's own policy
/// ([`llm_ledger_core::simulate::EnginePolicy::of_engine`]).
pub const ENGINE_OWN: &str = "engine";

/// A policy input: `engine`, or none given, is the engine's own (`own`); another word is parsed,
/// and an unknown one is refused listing `engine` with the policy's names.
fn policy<T: std::str::FromStr<Err = Error>>(field: &str, v: &Option<String>, own: T) -> Result<T> {
    match v.as_deref() {
        None => Ok(own),
        Some(s) if s.trim().eq_ignore_ascii_case(ENGINE_OWN) => Ok(own),
        Some(s) => s.parse::<T>().map_err(|mut e| {
            if let Error::UnknownName { accepted, .. } = &mut e {
                accepted.insert(0, ENGINE_OWN.to_string());
            }
            e.about(field).into()
        }),
    }
}

/// The simulator's configuration from the text inputs (the rate is set per run), the files they
/// name read through `files`.
pub fn config(args: &SimRequest, sc: &Scenario, files: Files<'_>) -> Result<SimConfig> {
    let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
        Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
    };
    let f = |field: &str, v: &Option<String>, default: f64| -> Result<f64> {
        Ok(v.as_deref().map(|s| parse_f64(field, s)).transpose()?.unwrap_or(default))
    };
    // The engine the clock times is the engine whose scheduler runs: its admission, host time and
    // CUDA-graph padding are the defaults.
    let d = SimConfig::poisson(10.0).for_engine(sc.clock.engine, &sc.gpu);
    let kind = args.arrivals.as_deref().unwrap_or(if args.trace.is_some() { "trace" } else { "poisson" });
    let arrivals = match (kind.trim().to_ascii_lowercase().as_str(), files) {
        ("poisson", _) => d.arrivals.clone(),
        ("gamma", _) => Arrivals::Gamma { rate_per_s: 10.0, cv: f("cv", &args.cv, 2.0)? },
        ("closed", _) => Arrivals::Closed { concurrency: u("concurrency", &args.concurrency, 16)? },
        ("trace", Files::Read(read)) => {
            let Some(path) = &args.trace else {
                return Err(Error::refused("arrivals", "trace", "{trace} FILE with trace arrivals").into());
            };
            let file = |error: anyhow::Error| CommandError::File { field: "trace", error };
            let text = read(Path::new(path), "trace").map_err(file)?;
            let mut trace = parse_trace_csv(&text)
                .map_err(|e| file(anyhow::Error::new(e).context(format!("in trace `{path}`"))))?;
            // `requests` replays the trace's first rows, as a benchmark replays a dataset's first N.
            if let Some(n) = args.requests.as_deref().map(|s| parse_u64("requests", s)).transpose()? {
                if n > trace.len() as u64 {
                    return Err(Error::invalid(
                        "requests",
                        n,
                        format!(
                            "at most the trace's {} requests (`{path}`): the first N rows are replayed",
                            trace.len()
                        ),
                    )
                    .into());
                }
                trace.truncate(n as usize);
            }
            Arrivals::Trace(trace.into())
        }
        (other, _) => {
            // A front end that reads no files replays no trace.
            let kinds: &[&str] = match files {
                Files::Read(_) => &["poisson", "gamma", "closed", "trace"],
                Files::None => &["poisson", "gamma", "closed"],
            };
            return Err(Error::unknown("arrivals", other, kinds).about("arrivals").into());
        }
    };
    let unused = |field: &str, given: bool, needs: &str| -> Result<()> {
        if given {
            let expected = Text::template("it applies only to {arrivals} ").plain(needs);
            return Err(Error::refused_text(field, Text::default().plain("given"), expected).into());
        }
        Ok(())
    };
    unused("cv", args.cv.is_some() && kind != "gamma", "gamma")?;
    unused("concurrency", args.concurrency.is_some() && kind != "closed", "closed")?;
    unused("trace", args.trace.is_some() && kind != "trace", "trace")?;
    unused("rate", args.rate.is_some() && matches!(kind, "closed" | "trace"), "poisson or gamma")?;
    let serving = ServingRequest { reserve: args.reserve.clone(), ..Default::default() }.resolve(sc)?;
    let max_batched_tokens = u("max_batched_tokens", &args.max_batched_tokens, d.max_batched_tokens)?;
    let ms = |field: &str, v: &Option<String>| -> Result<Option<f64>> {
        Ok(v.as_deref()
            .map(|s| TPOT_MS.parse(s).map_err(|e| e.map_field(|_| field.to_string())))
            .transpose()?
            .map(|ms| ms / 1e3))
    };
    let requests = match &arrivals {
        Arrivals::Trace(t) => t.len() as u64,
        _ => u("requests", &args.requests, d.requests)?,
    };
    fn parsed<T: std::str::FromStr<Err = Error>>(field: &str, v: &Option<String>) -> Result<Option<T>> {
        v.as_deref().map(|s| s.parse::<T>().map_err(|e| e.about(field))).transpose().map_err(Into::into)
    }
    let speculating = args.spec_depth.is_some();
    for (field, given) in [
        ("spec_acceptance", &args.spec_acceptance),
        ("draft_fraction", &args.draft_fraction),
        ("draft_model", &args.draft_model),
    ] {
        if given.is_some() && !speculating {
            let expected = Text::template("it applies only with {spec_depth} N").plain("");
            return Err(Error::refused_text(field, Text::default().plain("given"), expected).into());
        }
    }
    let cfg = SimConfig {
        arrivals,
        requests,
        seed: u("seed", &args.seed, d.seed)?,
        prompt: lengths("prompt", args.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS, files)?,
        output: lengths("output", args.output.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS, files)?,
        max_seqs: u("max_seqs", &args.max_seqs, d.max_seqs)?,
        max_batched_tokens,
        chunk_tokens: u("chunk", &args.chunk, max_batched_tokens)?,
        schedule: args
            .schedule
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: Error| e.about("schedule"))?
            .unwrap_or(d.schedule),
        block_tokens: u("block", &args.block, d.block_tokens)?,
        prefix_hit: f("prefix_hit", &args.prefix_hit, d.prefix_hit)?,
        ttft_slo_s: ms("ttft_ms", &args.ttft_ms)?,
        tpot_slo_s: ms("tpot_ms", &args.tpot_ms)?,
        reserve_bytes: serving.reserve_bytes,
        admission: policy("admission", &args.admission, d.admission)?,
        preemption: parsed("preemption", &args.preemption)?.unwrap_or(d.preemption),
        host: policy("host_time", &args.host_time, d.host)?,
        scheduler_steps: u("scheduler_steps", &args.scheduler_steps, d.scheduler_steps)?,
        cuda_graphs: policy("cuda_graphs", &args.cuda_graphs, d.cuda_graphs)?,
        warmup_requests: u("warmup", &args.warmup, d.warmup_requests)?,
        max_concurrency: args.max_concurrency.as_deref().map(|s| parse_u64("max_concurrency", s)).transpose()?,
        speculation: match &args.spec_depth {
            None => None,
            Some(depth) => Some(Speculation {
                depth: parse_u64("spec_depth", depth)?,
                acceptance: f("spec_acceptance", &args.spec_acceptance, 0.7)?,
                draft: match &args.draft_model {
                    None => Draft::Heads { fraction: f("draft_fraction", &args.draft_fraction, 0.05)? },
                    Some(_) if args.draft_fraction.is_some() => {
                        let expected = Text::template(
                            "a draft model's own step times it: give {draft_fraction} or {draft_model}, not both",
                        );
                        return Err(
                            Error::refused_text("draft_fraction", Text::default().plain("given"), expected).into()
                        );
                    }
                    Some(name) => Draft::Model(draft_model(sc, name)?),
                },
            }),
        },
        router: parsed("router", &args.router)?.unwrap_or(d.router),
        prefix_cache: match args.prefix_cache.as_deref().map(|s| s.trim().to_ascii_lowercase()) {
            None => d.prefix_cache,
            Some(s) if s == "on" => true,
            Some(s) if s == "off" => false,
            Some(s) => return Err(Error::unknown("prefix_cache", s, ["on", "off"]).about("prefix_cache").into()),
        },
    };
    // The cache's hits come from prompts that share a prefix: only a trace's rows name one.
    let prefixed = matches!(&cfg.arrivals, Arrivals::Trace(t) if t.iter().any(|r| r.prefix.is_some()));
    if cfg.prefix_cache && !prefixed {
        let expected = Text::template(
            "on with {trace} rows that name shared prompt prefixes (columns arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens): without them no prompt can hit the cache",
        );
        return Err(Error::refused_text("prefix_cache", Text::default().plain("on"), expected).into());
    }
    // Every range first, so that a bad value is named before the step budget is estimated.
    cfg.validate()?;
    Ok(cfg)
}

/// A draft model for `sc`: the built-in preset `name` on the target's GPU, precisions, layout and
/// clock. Speculative decoding needs the target's tokenizer, so its vocabulary must be the
/// target's.
fn draft_model(sc: &Scenario, name: &str) -> Result<DraftModel> {
    let catalog = llm_ledger_core::Catalog::builtin();
    let preset = catalog.preset(name).map_err(|_| {
        Error::unknown("draft model", name, catalog.presets().iter().map(|p| p.name.as_str())).about("draft_model")
    })?;
    let spec = preset.spec().clone();
    if spec.embedding.vocab != sc.model.embedding.vocab {
        let expected = format!(
            "a model with the target's vocabulary ({} tokens, {}): speculative decoding shares its tokenizer",
            sc.model.embedding.vocab, sc.model.name
        );
        return Err(Error::invalid("draft_model", format!("{name} ({} tokens)", spec.embedding.vocab), expected).into());
    }
    Ok(DraftModel(Arc::new(Scenario { model: spec, ..sc.clone() })))
}

/// The rates to run: `rate`'s list for open loops (10/s when not given), one run (NaN: the
/// configuration's own arrivals) for a closed loop or a trace; at most [`MAX_SWEEP_REQUESTS`]
/// requests over a sweep.
pub fn rates(rate: Option<&str>, cfg: &SimConfig) -> Result<Vec<f64>, Error> {
    let rates = match (rate, cfg.arrivals.rate_per_s()) {
        (Some(r), Some(_)) => parse_rates(r)?,
        (None, Some(_)) => vec![10.0],
        _ => vec![f64::NAN],
    };
    if rates.len() > 1 {
        check_sweep_requests(cfg, rates.len(), 1, "")?;
    }
    Ok(rates)
}

/// At most [`MAX_SWEEP_REQUESTS`] requests over `rates × runs_per_rate` runs of `cfg` (`what`
/// says why a rate runs more than once).
pub fn check_sweep_requests(cfg: &SimConfig, rates: usize, runs_per_rate: u64, what: &str) -> Result<(), Error> {
    if cfg.requests.saturating_mul(rates as u64).saturating_mul(runs_per_rate) > MAX_SWEEP_REQUESTS {
        return Err(Error::invalid(
            "requests",
            format!("{} requests at each of {rates} rates{what}", cfg.requests),
            format!("at most {MAX_SWEEP_REQUESTS} requests in all"),
        ));
    }
    Ok(())
}

/// One run per rate of [`rates`], in parallel; each is deterministic, so the order of work does
/// not change a number.
pub fn run_rates(sc: &Scenario, cfg: &SimConfig, rates: &[f64], budget: &Budget) -> Result<Vec<Simulation>, Error> {
    run_deployments(sc, cfg, rates, &[Deployment::SINGLE], budget)
}

/// One run per deployment and rate (deployment-major: every rate of the first deployment, then
/// of the next), in parallel, under one step budget: estimated before any starts
/// ([`Budget::admit`]), charged as they go.
pub fn run_deployments(
    sc: &Scenario,
    cfg: &SimConfig,
    rates: &[f64],
    deployments: &[Deployment],
    budget: &Budget,
) -> Result<Vec<Simulation>, Error> {
    use rayon::prelude::*;
    let jobs: Vec<(f64, &Deployment)> = deployments.iter().flat_map(|d| rates.iter().map(move |&r| (r, d))).collect();
    budget.admit(std::iter::repeat_n(cfg, jobs.len()))?;
    jobs.par_iter()
        .map(|&(rate, d)| {
            let c = if rate.is_nan() { cfg.clone() } else { cfg.at_rate(rate) };
            simulate_within(sc, &c, d, budget, |_| {})
        })
        .collect()
}

/// The disaggregated deployment of `disagg` (`X:Y`), `kv_link` and the pools' layouts
/// (`prefill_tp`, `prefill_ep`, `decode_tp`, `decode_ep`; each default the scenario's), if asked
/// for.
pub fn disagg(args: &SimRequest, sc: &Scenario) -> Result<Option<Disagg>, Error> {
    let pool_inputs = [
        ("kv_link", &args.kv_link),
        ("prefill_tp", &args.prefill_tp),
        ("prefill_ep", &args.prefill_ep),
        ("decode_tp", &args.decode_tp),
        ("decode_ep", &args.decode_ep),
    ];
    let Some(split) = &args.disagg else {
        if let Some((field, _)) = pool_inputs.iter().find(|(_, v)| v.is_some()) {
            return Err(Error::refused(field, "given", "it applies only with {disagg} X:Y"));
        }
        return Ok(None);
    };
    let degree = |field: &str, v: &Option<String>, own: u64| -> Result<u64, Error> {
        let Some(text) = v else { return Ok(own) };
        let n = parse_u64(field, text)?;
        if !(1..=MAX_GPUS_PER_REPLICA).contains(&n) {
            return Err(Error::invalid(field, n, integer_in(1, MAX_GPUS_PER_REPLICA)));
        }
        Ok(n)
    };
    let p = &sc.parallel;
    let layout = |tp: (&str, &Option<String>), ep: (&str, &Option<String>)| -> Result<Option<PoolLayout>, Error> {
        if tp.1.is_none() && ep.1.is_none() {
            return Ok(None);
        }
        Ok(Some(PoolLayout { tp: degree(tp.0, tp.1, p.tp)?, ep: degree(ep.0, ep.1, p.ep)? }))
    };
    let prefill = layout(("prefill_tp", &args.prefill_tp), ("prefill_ep", &args.prefill_ep))?;
    let decode = layout(("decode_tp", &args.decode_tp), ("decode_ep", &args.decode_ep))?;
    Disagg::with_pools(split, args.kv_link.as_deref(), sc, prefill, decode).map(Some)
}

/// The replicas of `replicas` (default 1), checked against `disagg` (its pools are their own
/// instances) and `router` (it routes among replicas).
pub fn replicas(args: &SimRequest) -> Result<u64, Error> {
    let replicas = args.replicas.as_deref().map(|s| parse_u64("replicas", s)).transpose()?.unwrap_or(1);
    Deployment::Aggregated { replicas }.validate()?;
    if replicas > 1 && args.disagg.is_some() {
        return Err(Error::refused(
            "replicas",
            "given",
            "it applies without {disagg} (each pool is its own instances)",
        ));
    }
    if args.router.is_some() && replicas == 1 {
        return Err(Error::refused("router", "given", "it applies only with {replicas} above 1"));
    }
    Ok(replicas)
}

/// A `simulate` run as every front end shows it: the report, and the runs behind it (one per
/// rate; the disaggregated ones with `disagg`).
pub struct SimRun {
    /// The report (table, JSON, CSV, Markdown).
    pub report: SimulateReport,
    /// One run per rate (the disaggregated deployment's with `disagg`).
    pub runs: Vec<Simulation>,
}

impl SimRun {
    /// The plot `--plot` draws: latency CDFs of one rate, or throughput against p99 latency over
    /// a sweep.
    pub fn chart(&self) -> ServingChart {
        let title = chart_title(&self.report.inputs);
        match &self.report.points {
            Some(points) => ServingChart::throughput_latency(points, title),
            None => ServingChart::latency_cdfs(&self.runs[0], title),
        }
    }
}

/// Where a single run's steps go as it takes them (the CLI's step trace), with the input that asks
/// for it (named in the refusal when a sweep, `disagg` or replicas are asked for too). The front
/// end owns what the sink writes to.
pub type StepSink<'a> = (&'a str, &'a mut dyn FnMut(&StepRecord));

/// `simulate`'s inputs resolved for a scenario: the configuration, the rates, the
/// disaggregated deployment and the step budget; [`Resolved::run`] runs them.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The configuration at the single rate (a sweep's runs each set their own).
    pub cfg: SimConfig,
    /// The rates to run (NaN: the configuration's own arrivals, a closed loop or a trace).
    pub rates: Vec<f64>,
    /// The disaggregated deployment of `disagg`, if asked for.
    pub disagg: Option<Disagg>,
    /// Identical replicas of the layout (1: one instance).
    pub replicas: u64,
    /// `rate` `max`: search the largest rate that holds these p99 bounds ([`capacity::find`]).
    pub capacity: Option<Bounds>,
    /// The GPU-hour price the costs are at (`usd_per_hour`, else the catalogue's; none: no cost).
    pub price: Option<Price>,
}

impl SimRequest {
    /// Resolve these inputs for `sc`, in the order the CLI has always checked them: the
    /// configuration, the rates, the disaggregated deployment and the requests of a sweep run
    /// both ways (the step budget, [`budget`], is the caller's: checked first).
    pub fn resolve(&self, sc: &Scenario, files: Files<'_>) -> Result<Resolved> {
        let cfg = config(self, sc, files)?;
        let price = Price::of(self.usd_per_hour.as_deref(), sc)?;
        let capacity = self
            .rate
            .as_deref()
            .is_some_and(|r| r.trim().eq_ignore_ascii_case(RATE_MAX))
            .then_some(Bounds { ttft_s: cfg.ttft_slo_s, tpot_s: cfg.tpot_slo_s });
        let rates = match capacity {
            Some(_) => vec![cfg.arrivals.rate_per_s().unwrap_or(f64::NAN)],
            None => rates(self.rate.as_deref(), &cfg)?,
        };
        let disagg = disagg(self, sc)?;
        let replicas = replicas(self)?;
        // With disagg every rate runs twice: disaggregated and aggregated.
        if rates.len() > 1 && disagg.is_some() {
            check_sweep_requests(&cfg, rates.len(), 2, ", run disaggregated and aggregated")?;
        }
        let cfg = if rates.len() == 1 && !rates[0].is_nan() { cfg.at_rate(rates[0]) } else { cfg };
        Ok(Resolved { cfg, rates, disagg, replicas, capacity, price })
    }
}

/// Resolve `args` for `sc` and run `simulate`: one run per rate, in parallel, and with
/// `disagg` the same rates aggregated on as many instances beside the disaggregated pools.
/// `sink` takes every step of a single run of one instance (the CLI's step trace); it is
/// refused with a sweep, `disagg` or replicas (its field names the input). Every run is under the
/// step budget of `max_steps` and stops once `cancel` becomes true ([`Error::Cancelled`]).
pub fn run(
    sc: &Scenario,
    args: &SimRequest,
    files: Files<'_>,
    sink: Option<StepSink<'_>>,
    cancel: Option<&AtomicBool>,
) -> Result<SimRun> {
    let budget = budget(args.max_steps.as_deref(), cancel)?;
    args.resolve(sc, files)?.run(sc, &budget, sink)
}

impl Resolved {
    /// Whether these inputs ask for a sweep of rates.
    pub fn sweep(&self) -> bool {
        self.rates.len() > 1
    }

    /// Refuse a step sink (its input `field`) where the runs are not one run of one instance: a
    /// capacity search, a sweep of rates, `disagg` or replicas.
    pub fn refuse_sink(&self, field: &str) -> Result<()> {
        if self.capacity.is_some() {
            return Err(Error::refused(field, "given", "a run at one {rate}, not {rate} max").into());
        }
        if self.sweep() {
            return Err(Error::invalid(field, "given with a sweep of rates", "one rate").into());
        }
        if self.disagg.is_some() || self.replicas > 1 {
            let with = if self.disagg.is_some() { "given with {disagg}" } else { "given with {replicas}" };
            return Err(
                Error::refused_text(field, Text::template(with), Text::template("a run of one instance")).into()
            );
        }
        Ok(())
    }

    /// Run the simulations under `budget` (see [`run`]).
    pub fn run(self, sc: &Scenario, budget: &Budget, sink: Option<StepSink<'_>>) -> Result<SimRun> {
        if let Some((field, _)) = &sink {
            self.refuse_sink(field)?;
        }
        let Resolved { cfg, rates, disagg, replicas, capacity, price } = self;
        if let Some(bounds) = capacity {
            let deployment = match &disagg {
                None => Deployment::Aggregated { replicas },
                Some(d) => Deployment::Disaggregated(d.clone()),
            };
            let found = capacity::find(sc, &cfg, &deployment, bounds, budget)?;
            let report = SimulateReport::new(sc, &cfg, vec![found.at.summary.clone()], false)
                .replicated(replicas, cfg.router)
                .priced(price)
                .with_capacity(found.facts, &deployment);
            return Ok(SimRun { report, runs: vec![found.at] });
        }
        let sweep = rates.len() > 1;
        let runs = match sink {
            Some((_, on_step)) => {
                budget.admit([&cfg])?;
                vec![simulate_within(sc, &cfg, &Deployment::SINGLE, budget, on_step)?]
            }
            None => {
                let deployments: Vec<Deployment> = match &disagg {
                    None => vec![Deployment::Aggregated { replicas }],
                    Some(d) => {
                        let d = Deployment::Disaggregated(d.clone());
                        vec![d.aggregated_equivalent(), d]
                    }
                };
                run_deployments(sc, &cfg, &rates, &deployments, budget)?
            }
        };
        // With disagg the runs are the aggregated ones, then the disaggregated ones.
        let (aggregated, runs) = match &disagg {
            Some(_) => {
                let mut runs = runs;
                let disaggregated = runs.split_off(rates.len());
                (runs, disaggregated)
            }
            None => (Vec::new(), runs),
        };
        let summaries = runs.iter().map(|r| r.summary.clone()).collect();
        let report = match &disagg {
            None => SimulateReport::new(sc, &cfg, summaries, sweep).replicated(replicas, cfg.router),
            Some(d) => SimulateReport::disaggregated(
                sc,
                &cfg,
                d,
                summaries,
                aggregated.iter().map(|r| r.summary.clone()).collect(),
                sweep,
            ),
        };
        Ok(SimRun { report: report.priced(price), runs })
    }
}

/// The title of `simulate`'s plots: the first part of the report's title (model and GPU; the
/// ledger title's phase and batch are not a serving run's).
pub fn chart_title(inputs: &Inputs) -> Option<String> {
    Some(llm_ledger_report::plot::title(inputs).split(" · ").take(1).collect::<Vec<_>>().join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request's fields are the input table's names, in its order: serde's refusal of an
    /// unknown key lists the fields it takes.
    #[test]
    fn the_request_takes_the_input_tables_fields_in_order() {
        let req: SimRequest = crate::table_checks::assert_request_is_table(inputs());
        assert_eq!((req.rate.as_deref(), req.max_steps.as_deref()), (Some("1"), Some("1")));
    }

    /// A refusal names the inputs it is about, so each front end spells them: the canonical
    /// name (the explorer's key, the Python keyword) or the CLI's flag.
    #[test]
    fn refusals_name_other_inputs_for_the_front_end_to_spell() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req = SimRequest { cv: Some("3".into()), ..Default::default() };
        let CommandError::Input(e) = config(&req, &sc, Files::None).unwrap_err() else { panic!("an input error") };
        assert_eq!(e.to_string(), "invalid `cv`: given (it applies only to arrivals gamma)");
        let flag = |f: &str| format!("--{}", f.replace('_', "-"));
        assert_eq!(e.map_field(flag).to_string(), "invalid `--cv`: given (it applies only to --arrivals gamma)");
        let req = SimRequest { arrivals: Some("trace".into()), ..Default::default() };
        let e = config(&req, &sc, Files::None).unwrap_err();
        assert_eq!(e.field(), Some("arrivals"));
        assert!(e.to_string().ends_with("accepted: poisson, gamma, closed"), "{e}");
    }

    /// `replicas` runs that many instances with the router's rule (every request served once,
    /// the report naming the deployment), and is refused with `disagg`, at 0 or past 64; `router`
    /// without replicas is refused.
    #[test]
    fn replicas_run_as_several_instances_and_bad_ones_are_refused() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req = |replicas: Option<&str>, router: Option<&str>| SimRequest {
            rate: Some("16".into()),
            requests: Some("300".into()),
            prompt: Some("512".into()),
            output: Some("32".into()),
            replicas: replicas.map(Into::into),
            router: router.map(Into::into),
            ..Default::default()
        };
        let one = run(&sc, &req(None, None), Files::None, None, None).unwrap();
        let two = run(&sc, &req(Some("2"), Some("least-outstanding")), Files::None, None, None).unwrap();
        let (s1, s2) = (one.report.summary.as_ref().unwrap(), two.report.summary.as_ref().unwrap());
        assert_eq!((s1.completed, s2.completed), (300, 300));
        // Half the arrivals each: smaller batches, so faster decode steps.
        assert!(s2.tpot_s.mean < s1.tpot_s.mean, "{} vs {}", s2.tpot_s.mean, s1.tpot_s.mean);
        assert_eq!(one.report.replicas, None);
        let facts = two.report.replicas.unwrap();
        assert_eq!((facts.replicas, facts.router), (2, llm_ledger_core::simulate::Router::LeastOutstanding));
        let refused =
            |r: SimRequest| run(&sc, &r, Files::None, None, None).err().and_then(|e| e.field().map(String::from));
        assert_eq!(refused(req(Some("0"), None)).as_deref(), Some("replicas"));
        assert_eq!(refused(req(Some("65"), None)).as_deref(), Some("replicas"));
        assert_eq!(refused(req(Some("two"), None)).as_deref(), Some("replicas"));
        assert_eq!(refused(req(None, Some("kv"))).as_deref(), Some("router"));
        assert_eq!(refused(req(Some("2"), Some("fastest"))).as_deref(), Some("router"));
        let with_disagg = SimRequest { disagg: Some("1:1".into()), ..req(Some("2"), None) };
        assert_eq!(refused(with_disagg).as_deref(), Some("replicas"));
    }

    /// A file an input names is read through the front end's reader, and its error names the
    /// input.
    #[test]
    fn files_are_read_through_the_front_ends_reader() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let read = |p: &Path, what: &str| -> anyhow::Result<String> {
            match p.to_str() {
                Some("lengths.csv") => Ok("tokens,weight
100,1
300,1
"
                .into()),
                _ => anyhow::bail!("cannot read {what} `{}`", p.display()),
            }
        };
        let req = SimRequest { prompt: Some("hist:lengths.csv".into()), ..Default::default() };
        let cfg = config(&req, &sc, Files::Read(&read)).unwrap();
        assert!(matches!(cfg.prompt, Lengths::Histogram(_)));
        let req = SimRequest { trace: Some("missing.csv".into()), ..Default::default() };
        let e = config(&req, &sc, Files::Read(&read)).unwrap_err();
        assert_eq!(e.field(), Some("trace"));
        assert_eq!(e.to_string(), "cannot read trace `missing.csv`");
    }

    #[test]
    fn rates_take_the_sweep_syntax_and_decimals() {
        assert_eq!(parse_rates("2,4,8").unwrap(), [2.0, 4.0, 8.0]);
        assert_eq!(parse_rates("1..4").unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(parse_rates("0.5,1.5").unwrap(), [0.5, 1.5]);
        assert_eq!(parse_rates("0").unwrap_err().field(), Some("rate"));
        assert!(parse_rates("-2").unwrap_err().to_string().contains("a number in [1e-300, 1e6]"));
        assert_eq!(
            parse_rates("5e-324").unwrap_err().to_string(),
            "invalid `rate`: 5e-324 (a number in [1e-300, 1e6])"
        );
        assert!(parse_rates("1..100000").unwrap_err().to_string().contains("at most 1000"));
    }
}
