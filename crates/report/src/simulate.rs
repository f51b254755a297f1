//! The `simulate` report: one serving instance under load, at one arrival rate or a sweep of
//! them.
//!
//! JSON keys (stable): `inputs` (model, GPU, precisions, layout; its phase, batch and context
//! are the step that sizes the KV cache, a prefill of `max_batched_tokens` tokens), `settings`
//! (the simulator's knobs: `max_seqs`, `max_batched_tokens`, `chunk_tokens`, …), and `summary` (one rate) or
//! `points[]` (a sweep of rates), each a [`SimSummary`]: `completed`, `requests`,
//! `offered_rate_per_s`, `arrival_rate_per_s`, `duration_s`, `mean_in_system`, `mean_latency_s`,
//! `requests_per_s`, `input_tokens_per_s`, `output_tokens_per_s`, `ttft_s`, `tpot_s`, `itl_s`,
//! `e2e_s` (each `{count, mean, p50, p90, p99, max}`), `goodput_per_s`, `slo_attainment`,
//! `preemptions`, `recomputed_tokens`, `prefix_hit_tokens`, `processed_tokens`,
//! `output_tokens`, `prompt_tokens`, `steps`, `mean_batch`, `max_batch`, `mean_queue`,
//! `max_queue`, `queue_growth_per_s`, `mean_kv_utilisation`, `max_kv_utilisation`,
//! `kv_capacity_tokens`, `drained`; and whether an instance fits ([`StepFit`]: `fits`,
//! `memory_bytes`, `gpu_memory_bytes`, `plan_command`: the step that sizes the KV cache, with the
//! simulator's reserve, on the fullest GPU of the layout); `cost` (one rate) or `costs[]` (a
//! sweep), each a [`Bill`] under load (`basis`, `price`, `gpus`, `usd_per_million_input_tokens`,
//! `usd_per_million_output_tokens`, `usd_per_request`), absent without a price; `deployment`; and
//! with `rate` `max`, `capacity` ([`CapacityFacts`]). CSV: one row per rate with the
//! distributions flattened (`ttft_p99_s`, …) and the three prices.
//!
//! With `--disagg X:Y` the `summary`/`points` are the disaggregated deployment's (each with
//! `kv_transfer_s`), `aggregated`/`aggregated_points` the same GPUs serving aggregated (`X + Y`
//! instances, arrivals round robin), and `disagg` the split (`prefill_instances`,
//! `decode_instances`, `gpus_per_instance` (absent when the pools have layouts of their own),
//! `gpus`, `prefill_layout` and `decode_layout` (each `{tp, ep, gpus_per_instance}`),
//! `aggregated_instances`, `aggregated_gpus`, `aggregated_layout`, `link`). With pools of their own layouts the
//! aggregated deployment is `aggregated_instances` instances of the scenario's layout on the
//! same GPUs (the most of them they fill). The table puts the two side by side,
//! one row each per rate; CSV rows carry a `deployment` column.

use crate::bill;
use crate::fit::StepFit;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::capacity::{CapacityFacts, KNEE_FACTOR, LIGHT_LOAD, RATE_PRECISION};
use llm_ledger_core::economics::Bill;
use llm_ledger_core::error::compact_f64;
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::serving::Price;
use llm_ledger_core::simulate::stats::{Quantiles, RELATIVE_ACCURACY};
use llm_ledger_core::simulate::workload::{Arrivals, Lengths};
use llm_ledger_core::simulate::{Deployment, Disagg, KvLink, Router, Schedule, SimConfig, SimSummary};
use llm_ledger_core::Scenario;
use serde::Serialize;

/// The simulator's settings, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// `poisson`, `gamma`, `closed` or `trace`.
    pub arrivals: String,
    /// Coefficient of variation of gamma gaps.
    pub cv: Option<f64>,
    /// Closed-loop concurrency.
    pub concurrency: Option<u64>,
    /// Requests per run.
    pub requests: u64,
    /// Seed.
    pub seed: u64,
    /// Prompt length distribution, in words.
    pub prompt: String,
    /// Output length distribution, in words.
    pub output: String,
    /// Most sequences per step.
    pub max_seqs: u64,
    /// Most new tokens per step.
    pub max_batched_tokens: u64,
    /// Most prompt tokens of one sequence per step.
    pub chunk_tokens: u64,
    /// `prefill-first` or `decode-first`.
    pub schedule: Schedule,
    /// Tokens per KV block.
    pub block_tokens: u64,
    /// Prefix-cache hit rate.
    pub prefix_hit: f64,
    /// TTFT SLA, seconds.
    pub ttft_slo_s: Option<f64>,
    /// TPOT SLA, seconds.
    pub tpot_slo_s: Option<f64>,
    /// Reserve, bytes.
    pub reserve_bytes: f64,
    /// The scheduler's policies that differ from the plain defaults ([`policy_words`]), for the
    /// table's footer.
    #[serde(skip)]
    pub policies: Vec<String>,
    /// What a preemption does with the KV cache, in words (`recompute`, `swap over PCIe`).
    #[serde(skip)]
    pub preemption: &'static str,
}

/// The scheduler's policies of `cfg` that differ from [`SimConfig::poisson`]'s (the plain
/// scheduler: max-utilization admission, serial host time, unpadded steps, one scheduling per
/// step, no speculation, no warm-up, no concurrency cap, no prefix cache), each in words.
pub fn policy_words(cfg: &SimConfig) -> Vec<String> {
    use llm_ledger_core::simulate::{Admission, CudaGraphs, Draft, HostTime};
    let plain = SimConfig::poisson(1.0);
    let mut words = Vec::new();
    if cfg.admission != plain.admission {
        words.push(match cfg.admission {
            Admission::MaxUtilization => "admission max-utilization".to_string(),
            Admission::GuaranteedNoEvict => {
                "admission guaranteed-no-evict (blocks for the whole prompt + output reserved at admission)".into()
            }
            Admission::Watermark { fraction } => {
                format!("admission with a {} free-block watermark (vLLM)", human::percent(fraction))
            }
            Admission::Sglang { init, min } => {
                format!("admission by SGLang's new-token ratio {} → {}", compact_f64(init), compact_f64(min))
            }
        });
    }
    if cfg.host != plain.host {
        words.push(match cfg.host {
            HostTime::Serial => "host time after each GPU step".into(),
            HostTime::Overlapped => "host time overlapped with the GPU step".into(),
        });
    }
    if cfg.scheduler_steps > 1 {
        words.push(format!("{} decode steps per scheduling", cfg.scheduler_steps));
    }
    if let CudaGraphs::Padded(sizes) = &cfg.cuda_graphs {
        words.push(format!("decode-only batches padded to {} CUDA-graph sizes", sizes.len()));
    }
    if let Some(sp) = &cfg.speculation {
        let draft = match &sp.draft {
            Draft::Heads { fraction } => format!("draft heads at {} of a decode step", human::percent(*fraction)),
            Draft::Model(m) => format!("draft model {}", m.0.model.name),
        };
        words.push(format!(
            "speculative decoding: {} draft tokens at acceptance {} ({} tokens per step expected), {draft}",
            sp.depth,
            compact_f64(sp.acceptance),
            human::sig3(sp.expected_tokens_per_step())
        ));
    }
    if cfg.prefix_cache {
        words.push("a block-level prefix cache over the KV pool".into());
    }
    if cfg.warmup_requests > 0 {
        words.push(format!(
            "the first {} requests a warm-up, left out of the statistics",
            human::count(cfg.warmup_requests)
        ));
    }
    if let Some(c) = cfg.max_concurrency {
        words.push(format!("at most {} requests in flight", human::count(c)));
    }
    words
}

/// A length distribution in words.
pub fn lengths_words(l: &Lengths) -> String {
    match l {
        Lengths::Fixed(v) => format!("{v}"),
        Lengths::Uniform { min, max } => format!("uniform {min}..{max}"),
        Lengths::LogNormal { median, sigma } => {
            format!("lognormal median {} sigma {}", compact_f64(*median), compact_f64(*sigma))
        }
        Lengths::Histogram(h) => format!("histogram of {} lengths", h.len()),
    }
}

impl Settings {
    /// The settings of `cfg`.
    pub fn of(cfg: &SimConfig) -> Settings {
        let (arrivals, cv, concurrency) = match &cfg.arrivals {
            Arrivals::Poisson { .. } => ("poisson", None, None),
            Arrivals::Gamma { cv, .. } => ("gamma", Some(*cv), None),
            Arrivals::Closed { concurrency } => ("closed", None, Some(*concurrency)),
            Arrivals::Trace(_) => ("trace", None, None),
        };
        let trace = matches!(cfg.arrivals, Arrivals::Trace(_));
        Settings {
            arrivals: arrivals.into(),
            cv,
            concurrency,
            requests: cfg.offered_requests(),
            seed: cfg.seed,
            prompt: if trace { "from the trace".into() } else { lengths_words(&cfg.prompt) },
            output: if trace { "from the trace".into() } else { lengths_words(&cfg.output) },
            max_seqs: cfg.max_seqs,
            max_batched_tokens: cfg.max_batched_tokens,
            chunk_tokens: cfg.chunk_tokens,
            schedule: cfg.schedule,
            block_tokens: cfg.block_tokens,
            prefix_hit: cfg.prefix_hit,
            ttft_slo_s: cfg.ttft_slo_s,
            tpot_slo_s: cfg.tpot_slo_s,
            reserve_bytes: cfg.reserve_bytes,
            policies: policy_words(cfg),
            preemption: match cfg.preemption {
                llm_ledger_core::simulate::Preemption::Recompute => "recompute",
                llm_ledger_core::simulate::Preemption::Swap => "swap over PCIe",
            },
        }
    }
}

/// The `simulate` report.
#[derive(Debug, Clone, Serialize)]
pub struct SimulateReport {
    /// Model, GPU, precisions, layout.
    pub inputs: Inputs,
    /// The simulator's settings.
    pub settings: Settings,
    /// One rate's summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<SimSummary>,
    /// A sweep's summaries, one per rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub points: Option<Vec<SimSummary>>,
    /// The disaggregated split, when `summary`/`points` are a disaggregated deployment's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagg: Option<DisaggFacts>,
    /// One rate: aggregated serving on the same GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<SimSummary>,
    /// A sweep: aggregated serving on the same GPUs, one per rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregated_points: Option<Vec<SimSummary>>,
    /// Several replicas of the layout: how many, and how arrivals were routed among them (the
    /// summaries are the whole deployment's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaFacts>,
    /// One rate's price under load ([`Bill::under_load`]); absent without a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Bill>,
    /// A sweep's prices, one per rate (as `points`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub costs: Option<Vec<Bill>>,
    /// `rate` `max`: the capacity search (the `summary` is the run at the capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityFacts>,
    /// The deployment in words (`TP 8 (8 GPUs)`, `4 replicas of TP 2 (8 GPUs)`).
    pub deployment: String,
    /// The price the costs are at (none: unpriced); in JSON within `cost`/`costs`.
    #[serde(skip)]
    pub price: Option<Price>,
    /// Whether an instance holds the weights and the step that sizes its KV cache.
    #[serde(flatten)]
    pub fit: StepFit,
}

/// An aggregated deployment of several identical instances, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReplicaFacts {
    /// Instances of the layout.
    pub replicas: u64,
    /// Which instance takes an arrival.
    pub router: Router,
}

/// A disaggregated deployment, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DisaggFacts {
    /// Prefill instances.
    pub prefill_instances: u64,
    /// Decode instances.
    pub decode_instances: u64,
    /// GPUs of one instance (`tp × pp × ep`) when both pools take the scenario's layout (absent
    /// when they have their own: `prefill_layout`, `decode_layout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_per_instance: Option<u64>,
    /// GPUs of the deployment: `prefill_instances × prefill GPUs + decode_instances × decode GPUs`.
    pub gpus: u64,
    /// Each prefill instance's layout (TP, EP) and GPUs.
    pub prefill_layout: PoolFacts,
    /// Each decode instance's layout and GPUs.
    pub decode_layout: PoolFacts,
    /// Aggregated instances of the scenario's layout it is compared with: the most the
    /// deployment's GPUs hold (`⌊gpus ÷ GPUs per aggregated instance⌋`; `prefill_instances +
    /// decode_instances` when the pools take the scenario's layout).
    pub aggregated_instances: u64,
    /// GPUs of the aggregated deployment (`gpus` when the scenario's instance size divides it).
    pub aggregated_gpus: u64,
    /// Each aggregated instance's layout: the scenario's.
    pub aggregated_layout: PoolFacts,
    /// The link the KV cache crosses.
    pub link: KvLink,
}

/// One pool's instances, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PoolFacts {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// GPUs of one instance (`tp × ep`, or the scenario's `tp × pp × ep`).
    pub gpus_per_instance: u64,
}

impl DisaggFacts {
    /// The facts of `d` on the scenario's layout.
    pub fn of(sc: &Scenario, d: &Disagg) -> DisaggFacts {
        let p = &sc.parallel;
        let per = p.gpus_per_replica();
        let (prefill, decode) = d.layouts(sc);
        let pool = |l: llm_ledger_core::simulate::PoolLayout| PoolFacts {
            tp: l.tp,
            ep: l.ep,
            gpus_per_instance: if d.pools.is_some() { l.gpus() } else { per },
        };
        let aggregated_instances = Deployment::Disaggregated(d.clone()).aggregated_equivalent().instances();
        DisaggFacts {
            prefill_instances: d.prefill,
            decode_instances: d.decode,
            gpus_per_instance: d.pools.is_none().then_some(per),
            gpus: d.gpus(sc),
            prefill_layout: pool(prefill),
            decode_layout: pool(decode),
            aggregated_instances,
            aggregated_gpus: aggregated_instances * per,
            aggregated_layout: PoolFacts { tp: p.tp, ep: p.ep, gpus_per_instance: per },
            link: d.link.clone(),
        }
    }

    fn label(&self) -> String {
        format!("disagg {}:{}", self.prefill_instances, self.decode_instances)
    }

    fn aggregated_label(&self) -> String {
        format!("aggregated ×{}", self.aggregated_instances)
    }
}

/// A deployment of instances of `layout` (`TP 8 (8 GPUs)`) in words: the layout itself, `4
/// replicas of TP 2 (2 GPUs)`, or `disagg 1:3 (prefill:decode instances)`.
fn deployment_words(d: &Deployment, layout: &str) -> String {
    match d {
        Deployment::Aggregated { replicas: 1 } => layout.to_string(),
        Deployment::Aggregated { replicas } => format!("{replicas} replicas of {layout}"),
        Deployment::Disaggregated(d) => format!("disagg {}:{} (prefill:decode instances)", d.prefill, d.decode),
    }
}

impl SimulateReport {
    /// A report of one run (`summaries` of length 1 and `sweep` false) or a sweep.
    pub fn new(sc: &Scenario, cfg: &SimConfig, summaries: Vec<SimSummary>, sweep: bool) -> SimulateReport {
        let (summary, points) = if sweep { (None, Some(summaries)) } else { (summaries.into_iter().next(), None) };
        // The scenario's own batch and context are not what the simulator runs: the inputs
        // describe the step that sizes the KV cache (the scheduler's limits are in `settings`).
        // It cannot fail for a configuration a simulation has validated.
        let step = llm_ledger_core::simulate::sizing_step(sc, cfg).unwrap_or_else(|_| sc.clone());
        SimulateReport {
            inputs: Inputs::of(&step),
            fit: StepFit::of(&step, cfg.reserve_bytes),
            settings: Settings::of(cfg),
            summary,
            points,
            disagg: None,
            aggregated: None,
            aggregated_points: None,
            replicas: None,
            cost: None,
            costs: None,
            capacity: None,
            deployment: layout_words(sc.parallel.tp, sc.parallel.pp, sc.parallel.ep),
            price: None,
        }
    }

    /// This report with its runs priced at `price` (none: unpriced), on the one cost model
    /// under load ([`Bill::under_load`]).
    pub fn priced(mut self, price: Option<Price>) -> SimulateReport {
        self.price = price;
        let Some(price) = price else { return self };
        self.cost = self.summary.as_ref().map(|s| Bill::under_load(s, price));
        self.costs = self.points.as_ref().map(|ps| ps.iter().map(|s| Bill::under_load(s, price)).collect());
        self
    }

    /// This report as the answer of a capacity search (`rate` `max`) on `deployment`: the
    /// summary is the run at the capacity.
    pub fn with_capacity(mut self, facts: CapacityFacts, deployment: &Deployment) -> SimulateReport {
        self.capacity = Some(facts);
        self.deployment = deployment_words(deployment, &self.deployment);
        self
    }

    /// The cost row of a single run.
    pub fn cost_row(&self) -> (&'static str, String) {
        match &self.cost {
            Some(b) => ("cost", bill::figures(b)),
            None => ("cost", "no price for this GPU: set one with --usd-per-hour".into()),
        }
    }

    /// The footer lines that say what a single run's cost was computed on.
    pub fn cost_basis_lines(&self) -> Vec<String> {
        let (Some(b), Some(s)) = (&self.cost, &self.summary) else { return Vec::new() };
        let lengths = format!("{} + {}", self.settings.prompt, self.settings.output);
        let deployment = format!("{} of {}", self.deployment, self.inputs.gpu);
        vec![
            format!("cost basis: {}", bill::under_load_basis(b, s, &lengths, &deployment)),
            bill::UNDER_LOAD_FORMULA.to_string(),
        ]
    }

    /// The capacity search's rows.
    pub fn capacity_rows(&self) -> Vec<(&'static str, String)> {
        let Some(c) = &self.capacity else { return Vec::new() };
        let bounds: Vec<String> = [("TTFT", c.bounds.ttft_s), ("TPOT", c.bounds.tpot_s)]
            .into_iter()
            .filter_map(|(n, b)| b.map(|b| format!("p99 {n} ≤ {}", human::seconds(b))))
            .collect();
        let bounds = bounds.join(" and ");
        vec![
            (
                "capacity",
                match c.capacity_per_s {
                    Some(r) => format!(
                        "{} requests/s within {bounds} (the largest rate found, to {})",
                        human::sig3(r),
                        human::percent(RATE_PRECISION)
                    ),
                    None => format!(
                        "none: even {} requests/s ({} of saturation) misses {bounds}",
                        human::sig3(c.light_rate_per_s),
                        human::percent(LIGHT_LOAD)
                    ),
                },
            ),
            (
                "saturation",
                format!(
                    "{} requests/s completed with {} always in flight",
                    human::sig3(c.saturation_per_s),
                    human::count(c.saturating_concurrency)
                ),
            ),
            (
                "knee",
                format!(
                    "{} requests/s (p99 e2e within {}× the light load's {})",
                    human::sig3(c.knee_per_s),
                    compact_f64(KNEE_FACTOR),
                    human::seconds(c.light_e2e_p99_s)
                ),
            ),
            ("search", format!("{} simulations", c.runs.len())),
        ]
    }

    /// A disaggregated run (`summaries`) beside aggregated serving on the same GPUs (`aggregated`,
    /// one per rate, in the same order).
    pub fn disaggregated(
        sc: &Scenario,
        cfg: &SimConfig,
        d: &Disagg,
        summaries: Vec<SimSummary>,
        aggregated: Vec<SimSummary>,
        sweep: bool,
    ) -> SimulateReport {
        let mut r = SimulateReport::new(sc, cfg, summaries, sweep);
        r.disagg = Some(DisaggFacts::of(sc, d));
        r.deployment = deployment_words(&Deployment::Disaggregated(d.clone()), &r.deployment);
        if sweep {
            r.aggregated_points = Some(aggregated);
        } else {
            r.aggregated = aggregated.into_iter().next();
        }
        r
    }

    /// This report as the runs of `replicas` identical instances with arrivals routed by
    /// `router` (one instance: unchanged).
    pub fn replicated(mut self, replicas: u64, router: Router) -> SimulateReport {
        self.replicas = (replicas > 1).then_some(ReplicaFacts { replicas, router });
        if replicas > 1 {
            self.deployment = deployment_words(&Deployment::Aggregated { replicas }, &self.deployment);
        }
        self
    }

    /// Pairs of (disaggregated, aggregated) summaries, one per rate.
    fn pairs(&self) -> Vec<(&SimSummary, &SimSummary)> {
        let agg: Vec<&SimSummary> = self.aggregated.iter().chain(self.aggregated_points.iter().flatten()).collect();
        self.summaries().into_iter().zip(agg).collect()
    }

    fn summaries(&self) -> Vec<&SimSummary> {
        self.summary.iter().chain(self.points.iter().flatten()).collect()
    }
}

/// One CSV row: a summary with its distributions flattened.
#[derive(Debug, Clone, Serialize)]
pub struct SimulateRow {
    /// Configured rate (open loops).
    pub offered_rate_per_s: Option<f64>,
    /// Measured arrival rate.
    pub arrival_rate_per_s: f64,
    /// Requests finished.
    pub completed: u64,
    /// Seconds simulated.
    pub duration_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Prompt tokens per second.
    pub input_tokens_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Mean TTFT.
    pub ttft_mean_s: f64,
    /// Median TTFT.
    pub ttft_p50_s: f64,
    /// p90 TTFT.
    pub ttft_p90_s: f64,
    /// p99 TTFT.
    pub ttft_p99_s: f64,
    /// Mean TPOT.
    pub tpot_mean_s: f64,
    /// Median TPOT.
    pub tpot_p50_s: f64,
    /// p90 TPOT.
    pub tpot_p90_s: f64,
    /// p99 TPOT.
    pub tpot_p99_s: f64,
    /// Mean ITL.
    pub itl_mean_s: f64,
    /// p99 ITL.
    pub itl_p99_s: f64,
    /// Mean end to end.
    pub e2e_mean_s: f64,
    /// p99 end to end.
    pub e2e_p99_s: f64,
    /// Requests per second within the SLAs.
    pub goodput_per_s: f64,
    /// Time-average requests in the system.
    pub mean_in_system: f64,
    /// Time-average sequences per step.
    pub mean_batch: f64,
    /// Time-average queue.
    pub mean_queue: f64,
    /// Queue growth at the last arrival, requests per second.
    pub queue_growth_per_s: f64,
    /// Time-average KV use.
    pub mean_kv_utilisation: f64,
    /// Preemptions.
    pub preemptions: u64,
    /// All requests finished.
    pub drained: bool,
    /// Which deployment: `aggregated ×N` (N instances, arrivals round robin) or
    /// `disagg X:Y` (X prefill and Y decode instances).
    pub deployment: String,
    /// Disaggregated: p99 of the time from first token to KV cache at the decode pool.
    pub kv_transfer_p99_s: Option<f64>,
    /// USD per million prompt tokens under load (empty without a price).
    pub usd_per_million_input_tokens: Option<f64>,
    /// USD per million output tokens under load.
    pub usd_per_million_output_tokens: Option<f64>,
    /// USD per request under load.
    pub usd_per_request: Option<f64>,
}

impl SimulateRow {
    /// The row of `s` with its price under load at `price`.
    fn priced(s: &SimSummary, price: Option<Price>) -> SimulateRow {
        let bill = price.map(|p| Bill::under_load(s, p));
        SimulateRow {
            usd_per_million_input_tokens: bill.and_then(|b| b.usd_per_million_input_tokens),
            usd_per_million_output_tokens: bill.and_then(|b| b.usd_per_million_output_tokens),
            usd_per_request: bill.and_then(|b| b.usd_per_request),
            ..SimulateRow::from(s)
        }
    }
}

impl From<&SimSummary> for SimulateRow {
    fn from(s: &SimSummary) -> Self {
        SimulateRow {
            offered_rate_per_s: s.offered_rate_per_s,
            arrival_rate_per_s: s.arrival_rate_per_s,
            completed: s.completed,
            duration_s: s.duration_s,
            requests_per_s: s.requests_per_s,
            input_tokens_per_s: s.input_tokens_per_s,
            output_tokens_per_s: s.output_tokens_per_s,
            ttft_mean_s: s.ttft_s.mean,
            ttft_p50_s: s.ttft_s.p50,
            ttft_p90_s: s.ttft_s.p90,
            ttft_p99_s: s.ttft_s.p99,
            tpot_mean_s: s.tpot_s.mean,
            tpot_p50_s: s.tpot_s.p50,
            tpot_p90_s: s.tpot_s.p90,
            tpot_p99_s: s.tpot_s.p99,
            itl_mean_s: s.itl_s.mean,
            itl_p99_s: s.itl_s.p99,
            e2e_mean_s: s.e2e_s.mean,
            e2e_p99_s: s.e2e_s.p99,
            goodput_per_s: s.goodput_per_s,
            mean_in_system: s.mean_in_system,
            mean_batch: s.mean_batch,
            mean_queue: s.mean_queue,
            queue_growth_per_s: s.queue_growth_per_s,
            mean_kv_utilisation: s.mean_kv_utilisation,
            preemptions: s.preemptions,
            drained: s.drained,
            deployment: "aggregated ×1".into(),
            kv_transfer_p99_s: s.kv_transfer_s.map(|q| q.p99),
            usd_per_million_input_tokens: None,
            usd_per_million_output_tokens: None,
            usd_per_request: None,
        }
    }
}

fn dist(q: &Quantiles) -> String {
    if q.count == 0 {
        return "—".into();
    }
    format!(
        "{} · {} · {} · {}",
        human::seconds(q.mean),
        human::seconds(q.p50),
        human::seconds(q.p90),
        human::seconds(q.p99)
    )
}

impl SimulateReport {
    fn title(&self) -> String {
        let i = &self.inputs;
        let s = &self.settings;
        let arrivals = match s.arrivals.as_str() {
            "gamma" => format!("gamma arrivals (cv {})", compact_f64(s.cv.unwrap_or(1.0))),
            "closed" => format!("closed loop of {}", s.concurrency.unwrap_or(0)),
            "trace" => "trace arrivals".into(),
            _ => "Poisson arrivals".into(),
        };
        format!(
            "{} on {} · {arrivals} · {} requests of prompt {} + output {} · weights {} · KV {}{}",
            i.model,
            i.gpu,
            human::count(s.requests),
            s.prompt,
            s.output,
            i.weights_shown(),
            i.kv,
            i.layout_suffix()
        )
    }

    fn footer(&self) -> Vec<String> {
        let s = &self.settings;
        let mut f = vec![format!(
            "continuous batching: ≤ {} sequences and ≤ {} tokens per step, prefill chunks ≤ {} tokens, {}, KV blocks of {} tokens{}; preemption by {}",
            human::count(s.max_seqs),
            human::count(s.max_batched_tokens),
            human::count(s.chunk_tokens),
            match s.schedule {
                Schedule::DecodeFirst => "decode first",
                Schedule::PrefillFirst => "prefill first",
            },
            s.block_tokens,
            if s.prefix_hit > 0.0 { format!(", prefix-cache hits {}", human::percent(s.prefix_hit)) } else { String::new() },
            s.preemption,
        )];
        if !s.policies.is_empty() {
            f.push(format!("scheduler: {}", s.policies.join("; ")));
        }
        if let Some(r) = &self.replicas {
            f.push(format!(
                "{} replicas of the layout, each arrival routed {}: the figures are the whole deployment's",
                r.replicas,
                match r.router {
                    Router::RoundRobin => "round robin",
                    Router::Random => "to a random replica",
                    Router::LeastOutstanding => "to the replica with the fewest requests",
                    Router::KvUsage => "to the replica with the least KV cache in use",
                }
            ));
        }
        f.push(format!(
            "each step timed by the ledger for its exact batch (prefill chunks and decodes at their own contexts); quantiles within ±{} (streamed sketch), means exact",
            human::percent(RELATIVE_ACCURACY)
        ));
        if self.summaries().iter().any(|p| !p.drained) {
            f.push("NOT DRAINED: the run stopped at its step bound with requests still queued".into());
        }
        if let Some(p) = self.summaries().iter().find(|p| p.queue_growth_per_s > 0.05 * p.arrival_rate_per_s) {
            f.push(format!(
                "overloaded: the queue was growing by {} requests/s at the last arrival — arrivals exceed what the instance serves",
                human::sig3(p.queue_growth_per_s)
            ));
        }
        let fp = &self.fit.footprint;
        f.push(format!(
            "memory{}: weights {} + the workspace of a {}-token step {} of {} available ({} − {} reserve): {}",
            if self.fit.parallel { " on the fullest GPU" } else { "" },
            human::bytes(fp.weight_bytes),
            human::count(self.settings.max_batched_tokens),
            human::bytes(fp.workspace_bytes),
            human::bytes(fp.available_bytes),
            human::bytes(fp.capacity_bytes),
            human::bytes(fp.reserve_bytes),
            if self.fit.view.fits {
                "fits; the paged KV cache takes the rest"
            } else {
                "such a step and its KV cache do NOT fit"
            },
        ));
        f.extend(self.fit.view.hint());
        f
    }
}

impl SimulateReport {
    /// The disaggregated deployment and aggregated serving on the same GPUs, side by side: two
    /// rows per rate.
    fn comparison(&self, d: &DisaggFacts) -> HumanTable {
        let header = [
            "rate/s",
            "serving",
            "done/s",
            "out tok/s",
            "TTFT p50",
            "TTFT p99",
            "TPOT p50",
            "TPOT p99",
            "ITL p99",
            "e2e p99",
            "KV move p99",
            "goodput/s",
            "preempt",
        ];
        let row = |label: String, s: &SimSummary| {
            vec![
                human::sig3(s.offered_rate_per_s.unwrap_or(s.arrival_rate_per_s)),
                label,
                human::sig3(s.requests_per_s),
                human::sig3(s.output_tokens_per_s),
                human::seconds(s.ttft_s.p50),
                human::seconds(s.ttft_s.p99),
                human::seconds(s.tpot_s.p50),
                human::seconds(s.tpot_s.p99),
                human::seconds(s.itl_s.p99),
                human::seconds(s.e2e_s.p99),
                s.kv_transfer_s.map_or("—".into(), |q| human::seconds(q.p99)),
                human::sig3(s.goodput_per_s),
                human::count(s.preemptions),
            ]
        };
        let rows =
            self.pairs().into_iter().flat_map(|(a, b)| [row(d.label(), a), row(d.aggregated_label(), b)]).collect();
        let mut footer = self.footer();
        let plural = human::plural;
        let deployment = match d.gpus_per_instance {
            Some(per) => format!(
                "{}: {} and {} of {} each ({} in all); aggregated ×{}: as many instances serving both, arrivals dealt round robin",
                d.label(),
                plural(d.prefill_instances, "prefill instance"),
                plural(d.decode_instances, "decode instance"),
                plural(per, "GPU"),
                plural(d.gpus, "GPU"),
                d.aggregated_instances
            ),
            None => {
                let pool = |n: u64, what: &str, l: &PoolFacts| {
                    let layout = layout_words(l.tp, 1, l.ep);
                    format!("{} of {layout}", plural(n, what))
                };
                let a = &d.aggregated_layout;
                let same = if d.aggregated_gpus == d.gpus {
                    format!("on the same {}", plural(d.gpus, "GPU"))
                } else {
                    format!("on {} of its {} (the most they fill)", d.aggregated_gpus, plural(d.gpus, "GPU"))
                };
                format!(
                    "{}: {} and {} ({} in all); aggregated ×{}: instances of the scenario's {} {same}, serving both, arrivals dealt round robin",
                    d.label(),
                    pool(d.prefill_instances, "prefill instance", &d.prefill_layout),
                    pool(d.decode_instances, "decode instance", &d.decode_layout),
                    plural(d.gpus, "GPU"),
                    d.aggregated_instances,
                    layout_words(a.tp, 1, a.ep),
                )
            }
        };
        footer.insert(0, deployment);
        footer.insert(1, match d.link.bandwidth_bytes_per_s {
            None => {
                "KV cache moved at no cost (ideal link); first token from the prefill instance: TTFT excludes the move, TPOT includes it".to_string()
            }
            Some(b) => format!(
                "KV cache moved over {}: {} + {} ÷ {}/s; first token from the prefill instance: TTFT excludes the move, TPOT includes it",
                d.link.name,
                human::seconds(d.link.latency_s),
                if d.gpus_per_instance.is_some() {
                    "bytes per GPU"
                } else {
                    "the larger of the bytes each prefill GPU sends and each decode GPU receives"
                },
                human::bytes(b)
            ),
        });
        HumanTable {
            title: vec![self.title()],
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
            right_aligned: (0..header.len()).filter(|&i| i != 1).collect(),
            footer,
            priority: vec![0, 0, 2, 1, 1, 0, 1, 0, 1, 2, 1, 1, 2],
        }
    }
}

impl Report for SimulateReport {
    type CsvRow = SimulateRow;

    fn csv_rows(&self) -> Vec<SimulateRow> {
        let row = |s: &SimSummary| SimulateRow::priced(s, self.price);
        match &self.disagg {
            None => self.summaries().into_iter().map(row).collect(),
            Some(d) => self
                .pairs()
                .into_iter()
                .flat_map(|(a, b)| {
                    [
                        SimulateRow { deployment: d.label(), ..row(a) },
                        SimulateRow { deployment: d.aggregated_label(), ..row(b) },
                    ]
                })
                .collect(),
        }
    }

    fn human(&self) -> HumanTable {
        if let Some(d) = &self.disagg {
            return self.comparison(d);
        }
        if let Some(s) = &self.summary {
            let slo = match (self.settings.ttft_slo_s, self.settings.tpot_slo_s) {
                (None, None) => "no SLA set: every completed request".to_string(),
                (a, b) => {
                    let part = |n: &str, v: Option<f64>| v.map(|v| format!("{n} ≤ {}", human::seconds(v)));
                    let both: Vec<String> = [part("TTFT", a), part("TPOT", b)].into_iter().flatten().collect();
                    format!("{} met by {}", both.join(" and "), human::percent(s.slo_attainment))
                }
            };
            let mut rows = self.capacity_rows();
            rows.extend([
                ("completed", format!("{} of {}", human::count(s.completed), human::count(s.requests))),
                ("arrival rate", format!("{} requests/s", human::sig3(s.arrival_rate_per_s))),
                ("duration", human::seconds(s.duration_s)),
                ("throughput", format!("{} requests/s", human::sig3(s.requests_per_s))),
                ("input tok/s", human::sig3(s.input_tokens_per_s)),
                ("output tok/s", human::sig3(s.output_tokens_per_s)),
                ("TTFT mean · p50 · p90 · p99", dist(&s.ttft_s)),
                ("TPOT mean · p50 · p90 · p99", dist(&s.tpot_s)),
                ("ITL mean · p50 · p90 · p99", dist(&s.itl_s)),
                ("e2e mean · p50 · p90 · p99", dist(&s.e2e_s)),
                ("goodput", format!("{} requests/s ({slo})", human::sig3(s.goodput_per_s))),
                ("in system (mean)", human::sig3(s.mean_in_system)),
                ("batch (mean · max)", format!("{} · {}", human::sig3(s.mean_batch), human::count(s.max_batch))),
                ("queue (mean · max)", format!("{} · {}", human::sig3(s.mean_queue), human::count(s.max_queue))),
                (
                    "KV cache (mean · max used)",
                    format!(
                        "{} · {} of {} tokens",
                        human::percent(s.mean_kv_utilisation),
                        human::percent(s.max_kv_utilisation),
                        human::count(s.kv_capacity_tokens)
                    ),
                ),
                (
                    "preemptions",
                    format!(
                        "{} ({} tokens recomputed)",
                        human::count(s.preemptions),
                        human::count(s.recomputed_tokens)
                    ),
                ),
                ("steps", human::count(s.steps)),
            ]);
            rows.push(self.cost_row());
            let mut footer = self.cost_basis_lines();
            footer.extend(self.footer());
            return crate::facts::facts_table(vec![self.title()], rows, footer);
        }
        let header = [
            "rate/s",
            "done/s",
            "out tok/s",
            "TTFT p50",
            "TTFT p99",
            "TPOT p50",
            "TPOT p99",
            "ITL p99",
            "e2e p99",
            "goodput/s",
            "batch",
            "queue",
            "preempt",
            "$/M in",
            "$/M out",
        ];
        let costs = self.costs.clone().unwrap_or_default();
        let rows = self
            .summaries()
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let cost = |f: fn(&Bill) -> Option<f64>| costs.get(i).and_then(f).map_or("—".into(), human::usd);
                vec![
                    human::sig3(s.offered_rate_per_s.unwrap_or(s.arrival_rate_per_s)),
                    human::sig3(s.requests_per_s),
                    human::sig3(s.output_tokens_per_s),
                    human::seconds(s.ttft_s.p50),
                    human::seconds(s.ttft_s.p99),
                    human::seconds(s.tpot_s.p50),
                    human::seconds(s.tpot_s.p99),
                    human::seconds(s.itl_s.p99),
                    human::seconds(s.e2e_s.p99),
                    human::sig3(s.goodput_per_s),
                    human::sig3(s.mean_batch),
                    human::sig3(s.mean_queue),
                    human::count(s.preemptions),
                    cost(|b| b.usd_per_million_input_tokens),
                    cost(|b| b.usd_per_million_output_tokens),
                ]
            })
            .collect();
        HumanTable {
            title: vec![self.title()],
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
            right_aligned: (0..header.len()).collect(),
            footer: self.footer(),
            priority: vec![0, 2, 1, 1, 0, 1, 0, 2, 2, 1, 2, 2, 2, 1, 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::simulate::simulate;
    use llm_ledger_core::{Catalog, ScenarioRequest};

    fn report(rates: &[f64]) -> SimulateReport {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let cfg = SimConfig { requests: 200, ..SimConfig::poisson(1.0) };
        let runs = rates
            .iter()
            .map(|&r| {
                let c = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: r }, ..cfg.clone() };
                simulate(&sc, &c, |_| {}).unwrap().summary
            })
            .collect();
        SimulateReport::new(&sc, &cfg, runs, rates.len() > 1).priced(Price::of(None, &sc).unwrap())
    }

    #[test]
    fn the_footer_names_the_policies_the_run_used() {
        use llm_ledger_core::simulate::{Admission, Draft, HostTime, Preemption, Speculation};
        let footer = |cfg: &SimConfig| {
            let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
            SimulateReport::new(&sc, cfg, vec![], false).footer().join("\n")
        };
        let plain = SimConfig::poisson(1.0);
        let f = footer(&plain);
        assert!(f.contains("preemption by recompute") && !f.contains("scheduler:"), "{f}");
        let chosen = SimConfig {
            admission: Admission::GuaranteedNoEvict,
            preemption: Preemption::Swap,
            host: HostTime::Overlapped,
            scheduler_steps: 8,
            speculation: Some(Speculation { depth: 3, acceptance: 1.0, draft: Draft::Heads { fraction: 0.1 } }),
            warmup_requests: 50,
            max_concurrency: Some(32),
            ..plain
        };
        let f = footer(&chosen);
        for words in [
            "preemption by swap over PCIe",
            "admission guaranteed-no-evict",
            "host time overlapped",
            "8 decode steps per scheduling",
            // Acceptance 1 at depth 3: every draft kept, 3 + 1 tokens a step.
            "3 draft tokens at acceptance 1 (4.00 tokens per step expected)",
            "first 50 requests a warm-up",
            "at most 32 requests in flight",
        ] {
            assert!(f.contains(words), "`{words}` missing from: {f}");
        }
        // The JSON's settings are unchanged by the footer's words.
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let json = SimulateReport::new(&sc, &chosen, vec![], false).render(Format::Json).unwrap();
        assert!(!json.contains("policies") && !json.contains("swap over"), "{json}");
    }

    #[test]
    fn simulate_table() {
        insta::assert_snapshot!(report(&[4.0]).render(Format::Table).unwrap());
    }

    #[test]
    fn simulate_sweep_table() {
        insta::assert_snapshot!(report(&[2.0, 8.0, 32.0]).render(Format::Table).unwrap());
    }

    #[test]
    fn simulate_json_has_the_summary_keys() {
        let v: serde_json::Value = serde_json::from_str(&report(&[4.0]).render(Format::Json).unwrap()).unwrap();
        let s = &v["summary"];
        for k in [
            "completed",
            "arrival_rate_per_s",
            "duration_s",
            "mean_in_system",
            "mean_latency_s",
            "output_tokens_per_s",
            "input_tokens_per_s",
            "goodput_per_s",
            "preemptions",
            "mean_kv_utilisation",
            "mean_batch",
            "mean_queue",
        ] {
            assert!(s[k].is_number(), "{k}");
        }
        for d in ["ttft_s", "tpot_s", "itl_s", "e2e_s"] {
            for q in ["mean", "p50", "p90", "p99"] {
                assert!(s[d][q].is_number(), "{d}.{q}");
            }
        }
        let sweep: serde_json::Value =
            serde_json::from_str(&report(&[2.0, 8.0]).render(Format::Json).unwrap()).unwrap();
        assert_eq!(sweep["points"].as_array().unwrap().len(), 2);
        assert!(sweep.get("summary").is_none());
        let csv = report(&[2.0, 8.0]).render(Format::Csv).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().next().unwrap().contains("ttft_p99_s"));
    }
}
