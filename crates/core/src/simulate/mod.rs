//! Serving under load: a discrete-event simulation of one serving instance with continuous
//! batching, chunked prefill and a paged KV cache, timed step by step by the ledger.
//!
//! ## The model
//!
//! * **Requests** arrive from a [`workload::Arrivals`] process with prompt and output lengths
//!   from [`workload::Lengths`] (or a trace), deterministically for a seed.
//! * **Scheduler** (one engine step at a time, as vLLM's and SGLang's schedulers run):
//!   a step holds at most `max_seqs` sequences and `max_batched_tokens` new tokens. A running
//!   sequence that has its prompt cached decodes one token; one still in prefill gets a chunk of
//!   at most `chunk_tokens` prompt tokens. [`Schedule::DecodeFirst`] serves the running decodes,
//!   then running prefills, then admits waiting requests first-come first-served;
//!   [`Schedule::PrefillFirst`] serves running prefills and admissions first and gives decodes
//!   what budget is left.
//! * **Paged KV cache**: blocks of `block_tokens` tokens (a hybrid model's sequence also holds
//!   the blocks of its recurrent state, [`crate::memory::state_tokens_per_sequence`], as vLLM's
//!   hybrid KV-cache manager keeps it); the number of blocks is the KV capacity
//!   the memory model leaves next to the weights and the workspace of a `max_batched_tokens`
//!   step ([`crate::memory::max_cached_tokens`], minus the reserve). A sequence holds
//!   `⌈cached tokens / block⌉` blocks (and its state's). When a running sequence needs a block and none is free,
//!   the most recently admitted running sequence is **preempted by recompute** (vLLM's default):
//!   its blocks are freed and it goes back to the front of the queue; when readmitted it
//!   prefills its prompt and the tokens it has generated again (counted in
//!   [`SimSummary::recomputed_tokens`]). Admission stops when the next request's first chunk
//!   does not fit.
//! * **Engine policies** ([`policy`], fields of [`SimConfig`]; the defaults are the scheduler
//!   above, [`SimConfig::for_engine`] gives an engine's own): admission control
//!   ([`Admission`]: TensorRT-LLM's guaranteed no-evict, vLLM's free-block watermark, SGLang's
//!   reservation ratio), preemption by recompute or by swap over PCIe ([`Preemption`]),
//!   CUDA-graph padding of decode-only steps ([`CudaGraphs`]), multi-step scheduling
//!   ([`SimConfig::scheduler_steps`]), host time serial or overlapped ([`HostTime`]), and
//!   speculative decoding ([`Speculation`]).
//! * **Prefix cache**: a hit rate `h` marks the first `⌊h · prompt⌋` tokens of every prompt as
//!   already cached: they hold blocks but are not computed.
//! * **Step time**: the ledger's step time ([`crate::ledger::summarise`]) of that step's exact
//!   batch, each sequence a [`Chunk`] of new tokens on top of its cached ones
//!   ([`crate::workload::Workload::with_chunks`]), on the scenario's model, GPU, precisions,
//!   layout and clock.
//! * A request's **TTFT** ends with the step that completes its prompt; every later step that
//!   decodes it adds one token (**ITL** is the gap between a request's consecutive tokens);
//!   **TPOT** = (last token − first token) ÷ (output − 1); **end to end** = last token − arrival.
//!
//! * **Benchmark shapes**: a warm-up left out of the summary ([`SimConfig::warmup_requests`]), a
//!   cap on the requests in flight for open loops and traces ([`SimConfig::max_concurrency`]).
//! * **Deployments** ([`simulate_deployment`]): one instance ([`simulate`]), `N` aggregated
//!   instances taking arrivals from a [`Router`] (round robin by default), or disaggregated prefill and decode pools with each
//!   request's KV cache moved between them over a link ([`disagg`]). Every instance runs the
//!   scheduler above on its own queue, batch and KV cache; one clock per layout times every step
//!   (pools can have layouts of their own, [`disagg::Pools`]).
//!
//! ## Bounds
//!
//! Memory is bounded by the requests in flight: arrivals and lengths are drawn lazily,
//! per-request state lives only while a request is in the system (plus the waiting queue), and
//! the statistics are streamed ([`stats::Sketch`], quantiles within
//! [`stats::RELATIVE_ACCURACY`]). A run stops after [`MAX_STEPS`] steps even if requests are
//! still queued (`drained: false`); arrivals above capacity show as a growing queue
//! ([`SimSummary::queue_growth_per_s`]). The front ends also give every command a step budget
//! over all its runs, estimated before they start and charged as they go, and a cancellation
//! flag ([`budget`]).
//!
//! ## The clock
//!
//! Every per-request duration (TTFT, ITL, TPOT, end to end) is a difference of two times on the
//! engine's clock, so the clock keeps its origin near the times it measures: whenever a request
//! arrives at an empty system (no request waiting, running or moving), the clock's zero moves to
//! that arrival. A busy period is at most [`MAX_STEPS`] steps long, so the times within it stay
//! small and a duration keeps the precision of the step times it adds up, however late the
//! arrival (a trace at 10³⁰⁰ s, or one request every 10¹⁵ s) — where an absolute clock would
//! lose it (an `f64` near 10¹⁵ s has a 0.125 s step). Absolute times (step records, the time
//! series, the duration) are the origin plus the clock.

pub mod budget;
pub mod disagg;
pub mod policy;
pub mod prefix;
pub mod rng;
pub mod stats;
pub mod workload;

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::ledger::{summarise, StepParts};
use crate::scenario::Scenario;
use crate::workload::{Chunk, Contexts, Phase, Workload};
pub use budget::{Budget, DEFAULT_MAX_STEPS};
pub use disagg::{Deployment, Disagg, KvLink, KvLinkChoice, PoolLayout, Pools};
pub use policy::{Admission, CudaGraphs, Draft, DraftModel, EnginePolicy, HostTime, Preemption, Router, Speculation};
pub use prefix::PromptPrefix;
use rustc_hash::FxHashMap;
use serde::Serialize;
use stats::{Quantiles, Series, SeriesPoint, Sketch, TimeAverage};
use std::borrow::Cow;
use std::collections::VecDeque;
use workload::{Arrival, Arrivals, Lengths, Source};

/// Most requests in one simulation.
pub const MAX_REQUESTS: u64 = crate::limits::MAX_SIM_REQUESTS;
/// Most tokens in one request's prompt or output.
pub const MAX_REQUEST_TOKENS: u64 = crate::limits::MAX_SIM_REQUEST_TOKENS;
/// Highest arrival rate, requests per second.
pub const MAX_RATE_PER_S: f64 = crate::limits::RATE.max;
/// Lowest arrival rate, requests per second: the gamma sampler's scale `1/(rate·shape)` must be
/// a finite number for every shape it takes (down to [`workload::MIN_GAMMA_SHAPE`] = 10⁻⁴), and
/// `10⁻³⁰⁰ × 10⁻⁴` is still a normal `f64`, where `5·10⁻³²⁴` makes every gap infinite.
pub const MIN_RATE_PER_S: f64 = crate::limits::RATE.min;
/// Most sequences per step, and most tokens per step.
pub const MAX_STEP_SIZE: u64 = crate::limits::MAX_SIM_STEP_SIZE;
/// Steps after which a run stops, drained or not.
pub const MAX_STEPS: u64 = 20_000_000;

/// Which work a step serves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Prefill chunks and admissions first; decodes take the budget that is left.
    PrefillFirst,
    /// Running decodes first, then prefill chunks and admissions (vLLM V1, SGLang default).
    DecodeFirst,
}

impl std::str::FromStr for Schedule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "prefill-first" => Ok(Schedule::PrefillFirst),
            "decode-first" => Ok(Schedule::DecodeFirst),
            _ => Err(Error::unknown("schedule", s, ["prefill-first", "decode-first"])),
        }
    }
}

/// Everything a simulation takes besides the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// How requests arrive.
    pub arrivals: Arrivals,
    /// Requests to serve (a trace: its length).
    pub requests: u64,
    /// Seed of the arrival and length draws.
    pub seed: u64,
    /// Prompt lengths.
    pub prompt: Lengths,
    /// Output lengths (the first output token comes from the prefill).
    pub output: Lengths,
    /// Most sequences in one step.
    pub max_seqs: u64,
    /// Most new tokens in one step.
    pub max_batched_tokens: u64,
    /// Most prompt tokens of one sequence in one step.
    pub chunk_tokens: u64,
    /// Which work a step serves first.
    pub schedule: Schedule,
    /// Tokens per KV block.
    pub block_tokens: u64,
    /// Fraction of each prompt found in the prefix cache, `0 ≤ h < 1`.
    pub prefix_hit: f64,
    /// TTFT bound for goodput, seconds.
    pub ttft_slo_s: Option<f64>,
    /// TPOT bound for goodput, seconds.
    pub tpot_slo_s: Option<f64>,
    /// Memory kept back from weights, KV and workspace, bytes.
    pub reserve_bytes: f64,
    /// Which requests a step admits ([`Admission`]).
    pub admission: Admission,
    /// What a preemption does with the KV cache ([`Preemption`]).
    pub preemption: Preemption,
    /// CUDA-graph padding of decode-only steps ([`CudaGraphs`]).
    pub cuda_graphs: CudaGraphs,
    /// Decode steps per scheduling (vLLM's `--num-scheduler-steps`): after a scheduling whose
    /// step only decodes, the same sequences decode this many steps in a row (their blocks
    /// reserved for all of them), finished ones dropping out; nothing is admitted or preempted
    /// until the last, and the host's time is paid once, in the first. The run's tokens stream to
    /// the client together after its last step (or a sequence's own last token): vLLM processes
    /// the outputs of a multi-step run after its last forward when the GPU runs ahead of the CPU
    /// (RFC vllm-project/vllm#6854, "Multi-Step Scheduling", and its author's answer on streaming),
    /// so the inter-token latency is one sample per chunk, the gap between chunks, while the time
    /// per output token is unchanged.
    pub scheduler_steps: u64,
    /// Whether host time per step is serial or overlapped with the GPU ([`HostTime`]).
    pub host: HostTime,
    /// Requests arriving first whose numbers every summary statistic leaves out (a benchmark's
    /// warm-up): latencies, goodput, completions and token rates count the later ones only, and
    /// rates are over the window from the first of those to the end. Time averages (batch, queue,
    /// KV use, requests in the system), steps and processed tokens are over the whole run.
    pub warmup_requests: u64,
    /// Most requests in the system at once for an open loop or a trace (`benchmark_serving.py
    /// --max-concurrency C --request-rate R`): an arrival that finds `C` in flight is sent, and
    /// its latencies start, when one finishes.
    pub max_concurrency: Option<u64>,
    /// Which replica takes an arrival ([`Router`]).
    pub router: Router,
    /// Speculative decoding ([`Speculation`]); none by default.
    pub speculation: Option<Speculation>,
    /// Keep a block-level prefix cache over the KV pool ([`prefix`]): requests whose trace rows
    /// name a [`PromptPrefix`] find its cached blocks. Off by default; not with `prefix_hit`
    /// (the fixed hit rate of every prompt).
    pub prefix_cache: bool,
}

impl SimConfig {
    /// Defaults as vLLM V1 ships them on a large GPU: 256 sequences, 8,192 batched tokens,
    /// chunks of up to 8,192, decode first, 16-token blocks, no prefix cache; 1,000 requests of
    /// 2,048 + 256 tokens, Poisson at `rate_per_s`, seed 0.
    pub fn poisson(rate_per_s: f64) -> SimConfig {
        SimConfig {
            arrivals: Arrivals::Poisson { rate_per_s },
            requests: 1000,
            seed: 0,
            prompt: Lengths::Fixed(2048),
            output: Lengths::Fixed(256),
            max_seqs: 256,
            max_batched_tokens: 8192,
            chunk_tokens: 8192,
            schedule: Schedule::DecodeFirst,
            block_tokens: 16,
            prefix_hit: 0.0,
            ttft_slo_s: None,
            tpot_slo_s: None,
            reserve_bytes: crate::serving::DEFAULT_RESERVE_BYTES,
            admission: Admission::MaxUtilization,
            preemption: Preemption::Recompute,
            cuda_graphs: CudaGraphs::Unpadded,
            scheduler_steps: 1,
            host: HostTime::Serial,
            warmup_requests: 0,
            max_concurrency: None,
            router: Router::RoundRobin,
            speculation: None,
            prefix_cache: false,
        }
    }

    /// This configuration with `engine`'s own scheduler ([`EnginePolicy::of_engine`]).
    pub fn for_engine(self, engine: crate::engine::Engine) -> SimConfig {
        let p = EnginePolicy::of_engine(engine);
        SimConfig { admission: p.admission, host: p.host, cuda_graphs: p.cuda_graphs, ..self }
    }

    /// This configuration at another arrival rate (open loops; a closed loop or a trace is
    /// unchanged).
    pub fn at_rate(&self, rate_per_s: f64) -> SimConfig {
        let arrivals = match &self.arrivals {
            Arrivals::Poisson { .. } => Arrivals::Poisson { rate_per_s },
            Arrivals::Gamma { cv, .. } => Arrivals::Gamma { rate_per_s, cv: *cv },
            other => other.clone(),
        };
        SimConfig { arrivals, ..self.clone() }
    }

    /// The requests a run offers: a trace's length, else [`SimConfig::requests`].
    pub fn offered_requests(&self) -> u64 {
        match &self.arrivals {
            Arrivals::Trace(t) => t.len() as u64,
            _ => self.requests,
        }
    }

    /// Check every field's range (the errors name the field).
    pub fn validate(&self) -> Result<()> {
        self.arrivals.validate()?;
        if !matches!(self.arrivals, Arrivals::Trace(_)) && !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(Error::invalid("requests", self.requests, integer_in(1, MAX_REQUESTS)));
        }
        self.prompt.validate("prompt")?;
        self.output.validate("output")?;
        for (field, v) in [
            ("max_seqs", self.max_seqs),
            ("max_batched_tokens", self.max_batched_tokens),
            ("chunk", self.chunk_tokens),
            ("block", self.block_tokens),
        ] {
            if !(1..=MAX_STEP_SIZE).contains(&v) {
                return Err(Error::invalid(field, v, integer_in(1, MAX_STEP_SIZE)));
            }
        }
        if !(self.prefix_hit.is_finite() && (0.0..1.0).contains(&self.prefix_hit)) {
            return Err(Error::invalid("prefix_hit", self.prefix_hit, "a fraction in [0, 1)"));
        }
        if self.prefix_cache && self.prefix_hit > 0.0 {
            return Err(Error::invalid(
                "prefix_hit",
                self.prefix_hit,
                "0 with the prefix cache (its hits come from the prompts' shared prefixes)",
            ));
        }
        for (field, v) in [("ttft_ms", self.ttft_slo_s), ("tpot_ms", self.tpot_slo_s)] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::invalid(field, v * 1e3, "a time in milliseconds above 0"));
                }
            }
        }
        policy::validate(self)
    }
}

/// The result of one simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimSummary {
    /// Requests that finished.
    pub completed: u64,
    /// Requests offered.
    pub requests: u64,
    /// The configured arrival rate (open loops), requests per second.
    pub offered_rate_per_s: Option<f64>,
    /// Arrivals per second as they came: `(arrivals − 1) ÷ last arrival time` (a closed loop,
    /// or arrivals all at time 0: completed ÷ duration).
    pub arrival_rate_per_s: f64,
    /// First arrival (after the warm-up, [`SimConfig::warmup_requests`]) to last finish, seconds.
    pub duration_s: f64,
    /// Time-average number of requests in the system (arrived, not finished).
    pub mean_in_system: f64,
    /// Mean end-to-end latency, seconds.
    pub mean_latency_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Prompt tokens of completed requests per second.
    pub input_tokens_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Time to first token, seconds.
    pub ttft_s: Quantiles,
    /// Time per output token after the first (requests with ≥ 2 output tokens), seconds.
    pub tpot_s: Quantiles,
    /// Gaps between consecutive tokens of a request, seconds.
    pub itl_s: Quantiles,
    /// End-to-end latency, seconds.
    pub e2e_s: Quantiles,
    /// Requests per second that met both SLAs (all completed ones when none is set).
    pub goodput_per_s: f64,
    /// Fraction of completed requests that met both SLAs.
    pub slo_attainment: f64,
    /// Preemptions (a request can be preempted more than once).
    pub preemptions: u64,
    /// Cached tokens thrown away by preemptions and computed again.
    pub recomputed_tokens: u64,
    /// Prompt tokens served from the prefix cache.
    pub prefix_hit_tokens: u64,
    /// Tokens processed by all steps (prefill chunks and decodes, recomputation included).
    pub processed_tokens: u64,
    /// Output tokens generated.
    pub output_tokens: u64,
    /// Prompt tokens of completed requests.
    pub prompt_tokens: u64,
    /// Engine steps.
    pub steps: u64,
    /// Time-average sequences per step.
    pub mean_batch: f64,
    /// Largest step, sequences.
    pub max_batch: u64,
    /// Time-average of the waiting queue.
    pub mean_queue: f64,
    /// Longest waiting queue.
    pub max_queue: u64,
    /// Waiting requests at the last arrival ÷ time of the last arrival: near 0 when the
    /// instance keeps up, about `arrival rate − service rate` when it does not.
    pub queue_growth_per_s: f64,
    /// Time-average fraction of KV blocks in use.
    pub mean_kv_utilisation: f64,
    /// Largest fraction of KV blocks in use.
    pub max_kv_utilisation: f64,
    /// KV capacity of one instance, tokens (blocks × block size); of a decode instance when the
    /// pools of a disaggregated deployment have layouts of their own.
    pub kv_capacity_tokens: u64,
    /// Every request finished (false: stopped at [`MAX_STEPS`]).
    pub drained: bool,
    /// GPUs of the deployment: every instance's `tp × pp × ep`, summed.
    pub gpus: u64,
    /// GPU-seconds of steps spent on prompt tokens: each step's time × its instance's GPUs,
    /// shared among the step's new tokens equally, the prompt chunks' share (a recomputation
    /// after a preemption counts as prompt). The whole run, warm-up included.
    pub prompt_busy_gpu_s: f64,
    /// GPU-seconds of steps spent on output tokens (the decodes' share of each step, as
    /// `prompt_busy_gpu_s`).
    pub output_busy_gpu_s: f64,
    /// The prefix cache ([`SimConfig::prefix_cache`]): prompt tokens found in it ÷ prompt tokens
    /// looked up at admissions. Absent without the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hit_rate: Option<f64>,
    /// KV blocks the prefix cache evicted to make room. Absent without the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_evicted_blocks: Option<u64>,
    /// Disaggregated serving: from a request's first token to its KV cache at the decode pool
    /// (waiting for the prefill instance's link, then `α + bytes ÷ β`), seconds. Absent for
    /// aggregated serving.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_transfer_s: Option<Quantiles>,
    /// Speculative decoding: mean tokens a decoding sequence gained per step (`1` to
    /// `depth + 1`). Absent without speculation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_tokens_per_step: Option<f64>,
}

impl SimSummary {
    /// Whether the run held p99 bounds (seconds) on TTFT and TPOT with every request finished:
    /// what a deployment search ([`crate::plan_serving`]) and a capacity search
    /// ([`crate::capacity`]) ask of a run. A bound of `None` is not checked.
    pub fn holds_p99(&self, ttft_bound_s: Option<f64>, tpot_bound_s: Option<f64>) -> bool {
        self.drained
            && ttft_bound_s.is_none_or(|b| self.ttft_s.p99 <= b)
            && tpot_bound_s.is_none_or(|b| self.tpot_s.count == 0 || self.tpot_s.p99 <= b)
    }
}

/// One engine step, for a trace (`--trace-out`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepRecord {
    /// Step number from 0.
    pub step: u64,
    /// Start of the step, seconds.
    pub start_s: f64,
    /// Duration, seconds.
    pub time_s: f64,
    /// Sequences decoding one token.
    pub decodes: u64,
    /// Sequences with a prefill chunk.
    pub prefills: u64,
    /// New tokens in the step.
    pub tokens: u64,
    /// Requests waiting after the step.
    pub waiting: u64,
    /// KV blocks in use after the step.
    pub kv_blocks_used: u64,
    /// Preemptions in the step.
    pub preemptions: u64,
}

/// A simulation's summary with what its plots need.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The numbers.
    pub summary: SimSummary,
    /// Most sequences running at once on one instance: below [`SimConfig::max_seqs`], that limit
    /// never held a request back, so any larger limit runs the same simulation.
    pub peak_running: u64,
    /// Running batch, queue and KV use over time (decimated).
    pub series: Vec<SeriesPoint>,
    /// TTFT distribution, `(seconds, fraction ≤)`.
    pub ttft_cdf: Vec<(f64, f64)>,
    /// TPOT distribution.
    pub tpot_cdf: Vec<(f64, f64)>,
    /// ITL distribution.
    pub itl_cdf: Vec<(f64, f64)>,
    /// End-to-end distribution.
    pub e2e_cdf: Vec<(f64, f64)>,
}

/// Decode steps remembered by a [`StepClock`] before its memo is cleared.
pub const DECODE_MEMO_ENTRIES: usize = 1 << 20;

/// The time of a serving step: the ledger's step time of that step's batch of chunks.
///
/// Every step goes through the ledger ([`summarise`]'s operators and timings), so whatever clock
/// the scenario carries times it. What does not change is not timed again:
///
/// * In a step of `B` sequences and `T` new tokens (decodes and prompt chunks), every operator
///   but attention's core (the attention kernel and the softmax inside it, or unfused
///   attention's three kernels) and MLA's expanded up-projection ([`crate::ops::reads_context`]) is a
///   function of `B` and `T` alone: the step's tokens, the
///   experts they touch, the logits, the collectives ([`crate::workload::Workload::with_chunks`]:
///   only attention reads the chunks). The clock keeps, per `(B, T)`, the step's operators
///   ([`StepParts`]), and for new chunks builds and times only those that read the context and
///   sums the step in the ledger's order, so the time is the ledger's to the last bit (a test
///   checks steps of every kind of model, engine and layout against it).
/// * On a model whose every attention layer reads its whole context (no window, chunk, top-k or
///   pooled entries), a step of `B` decodes at contexts `k₁ … k_B` has attention pairs and K/V
///   reads `Σ (kᵢ + 1)` (a recurrent layer's work does not depend on them), so its time is a
///   function of `(B, Σ kᵢ)` and is memoised on that key too.
#[derive(Debug, Clone)]
pub struct StepClock {
    sc: Scenario,
    decode_memo: Option<FxHashMap<(u64, u64), f64>>,
    /// Per step of `B` sequences and `T` new tokens: its operators as the ledger sums them.
    parts: FxHashMap<(u64, u64), StepParts>,
    host_s: f64,
}

impl StepClock {
    /// A clock on the scenario's model, GPU, precisions, layout and efficiencies.
    pub fn new(sc: &Scenario) -> StepClock {
        // Windows, chunks, top-k and pooled entries make a step's cost other than a function of
        // its summed contexts.
        let windowed = sc.model.layers().iter().any(|l| l.attention.reach().is_bounded());
        let host_s = crate::parallel::pipeline::kernel_timer(sc).host_step_s();
        StepClock {
            sc: sc.clone(),
            decode_memo: (!windowed).then(FxHashMap::default),
            parts: FxHashMap::default(),
            host_s,
        }
    }

    /// The host time each step's time includes, seconds (the ledger's `host` row,
    /// [`crate::roofline::TimeModel::host_step_s`]).
    pub fn host_s(&self) -> f64 {
        self.host_s
    }

    /// Seconds for one step of `chunks` (non-empty).
    pub fn step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let decodes = chunks.iter().all(|c| c.new_tokens == 1);
        let key = match &self.decode_memo {
            Some(_) if decodes => Some((chunks.len() as u64, chunks.iter().map(|c| c.cached_tokens).sum::<u64>())),
            _ => None,
        };
        if let (Some(k), Some(memo)) = (key, &self.decode_memo) {
            if let Some(t) = memo.get(&k) {
                return *t;
            }
        }
        let t = self.parts_step_s(chunks);
        if let (Some(k), Some(memo)) = (key, &mut self.decode_memo) {
            if memo.len() >= DECODE_MEMO_ENTRIES {
                memo.clear();
            }
            memo.insert(k, t);
        }
        t
    }

    /// A step from the operators kept for its sequences and new tokens, the context-reading ones
    /// built and timed for these chunks (the type's docs).
    fn parts_step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let key = (chunks.len() as u64, chunks.iter().map(|c| c.new_tokens).sum::<u64>());
        let w = self.sc.workload.with_chunks(chunks.into());
        let base = std::mem::replace(&mut self.sc.workload, w);
        let kept = self.parts.get_mut(&key).and_then(|p| p.summarise_each(&self.sc, |_, _, _| {}));
        let t = match kept {
            Some(s) => s.step_time_s(),
            None => match StepParts::new(&self.sc, |_, _, _| {}) {
                Some((parts, s)) => {
                    if self.parts.len() >= DECODE_MEMO_ENTRIES {
                        self.parts.clear();
                    }
                    self.parts.insert(key, parts);
                    s.step_time_s()
                }
                None => summarise(&self.sc).step_time_s(),
            },
        };
        self.sc.workload = base;
        t
    }

    /// The ledger's step time of `chunks`, never memoised.
    pub fn ledger_step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let w = self.sc.workload.with_chunks(chunks.into());
        let base = std::mem::replace(&mut self.sc.workload, w);
        let t = summarise(&self.sc).step_time_s();
        self.sc.workload = base;
        t
    }
}

/// A request in the system.
#[derive(Debug, Clone)]
struct Req {
    arrival_s: f64,
    prompt: u64,
    output: u64,
    hit: u64,
    /// Tokens in the KV cache when it is next admitted, without computing them: its prefix-cache
    /// hit, or the prompt whose cache was moved to it from a prefill instance.
    present: u64,
    /// Its cache came over the link (its prefix hits were counted where it was prefilled).
    transferred: bool,
    /// Tokens in the KV cache (computed, or found in the prefix cache).
    cached: u64,
    /// Output tokens generated.
    generated: u64,
    first_token_s: f64,
    last_token_s: f64,
    /// When its tokens last reached the client: the end of the step that produced them, or of
    /// the multi-step run they were produced in ([`SimConfig::scheduler_steps`]).
    streamed_s: f64,
    blocks: u64,
    /// Scheduled in the step being built.
    in_step: bool,
    /// Its cache is in host memory (swapped out by a preemption).
    swapped: bool,
    /// Counted in the summary's statistics (arrived after the warm-up).
    measured: bool,
    /// The shared sequences its prompt starts with (with the prefix cache on; boxed, so that
    /// requests without one stay small to move).
    prefix: Option<Box<PromptPrefix>>,
    /// Blocks it uses from the prefix cache (the rest of its cache is its own, `blocks`).
    shared: u64,
    /// It pins its prefix's ids in the cache.
    pinned: bool,
}

impl Req {
    /// Tokens to prefill before the next token: the prompt and every token generated so far.
    fn prefill_target(&self) -> u64 {
        self.prompt + self.generated
    }
    fn in_prefill(&self) -> bool {
        self.cached < self.prefill_target()
    }
    /// Its next step decodes one token: it has a first token and only the last token's KV to
    /// compute (a sequence recomputing after a preemption is in prefill until then).
    fn decoding(&self) -> bool {
        self.generated > 0 && self.cached + 1 == self.prefill_target()
    }
}

/// What an instance does with a request once its first token is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Keeps it and decodes it (aggregated serving, and the decode pool).
    Keep,
    /// Hands it to the decode pool over the link (the prefill pool).
    HandOff,
}

/// One serving instance: its queue, its running batch, its paged KV cache and the step in flight.
/// Every instance of every deployment runs the same scheduler ([`Instance::schedule`]).
struct Instance<'a> {
    cfg: &'a SimConfig,
    role: Role,
    /// Its layout's [`Pool`] (index in the engine's pools).
    pool: usize,
    waiting: VecDeque<Req>,
    running: Vec<Req>,
    total_blocks: u64,
    free_blocks: u64,
    /// Blocks each running sequence holds for its recurrent state, however long it is
    /// ([`crate::memory::state_tokens_per_sequence`]).
    state_blocks: u64,
    /// End of the step in flight (none: idle).
    busy_until_s: Option<f64>,
    /// The step in flight: (index in `running`, new tokens).
    plan: Vec<(usize, u64)>,
    step_start_s: f64,
    step_record: StepRecord,
    batch: TimeAverage,
    queue: TimeAverage,
    kv: TimeAverage,
    preemptions: u64,
    recomputed: u64,
    hit_tokens: u64,
    /// Cached tokens of each sequence swapped out, and in, while building the step.
    swap_out: Vec<u64>,
    swap_in: Vec<u64>,
    /// SGLang's reservation ratio ([`Admission::Sglang`]).
    new_token_ratio: f64,
    /// Steps left of a multi-step scheduling ([`SimConfig::scheduler_steps`]).
    multi_left: u64,
    /// The prefix cache ([`SimConfig::prefix_cache`]).
    cache: prefix::PrefixCache,
    /// Prompt tokens looked up in the prefix cache at admissions.
    looked_up_tokens: u64,
    /// Most sequences running at once (admitted: in prefill or decoding), after any step's
    /// admissions.
    peak_running: u64,
}

impl<'a> Instance<'a> {
    fn new(cfg: &'a SimConfig, role: Role, pool: usize, total_blocks: u64, state_blocks: u64) -> Instance<'a> {
        Instance {
            cfg,
            role,
            pool,
            waiting: VecDeque::new(),
            running: Vec::new(),
            total_blocks,
            free_blocks: total_blocks,
            state_blocks,
            busy_until_s: None,
            plan: Vec::new(),
            step_start_s: 0.0,
            step_record: StepRecord {
                step: 0,
                start_s: 0.0,
                time_s: 0.0,
                decodes: 0,
                prefills: 0,
                tokens: 0,
                waiting: 0,
                kv_blocks_used: 0,
                preemptions: 0,
            },
            batch: TimeAverage::default(),
            queue: TimeAverage::default(),
            kv: TimeAverage::default(),
            preemptions: 0,
            recomputed: 0,
            hit_tokens: 0,
            swap_out: Vec::new(),
            swap_in: Vec::new(),
            new_token_ratio: match cfg.admission {
                Admission::Sglang { init, .. } => init,
                _ => 0.0,
            },
            multi_left: 0,
            cache: prefix::PrefixCache::default(),
            looked_up_tokens: 0,
            peak_running: 0,
        }
    }

    /// Blocks an allocation can have: the free ones and the prefix cache's evictable ones.
    fn available(&self) -> u64 {
        self.free_blocks + self.cache.evictable
    }

    /// Take `n` blocks (at most [`Instance::available`]), evicting from the prefix cache what
    /// the free ones lack.
    fn take(&mut self, n: u64) {
        if n > self.free_blocks {
            self.free_blocks += self.cache.evict(n - self.free_blocks);
        }
        self.free_blocks -= n;
    }

    /// `r` leaves the running batch: its own blocks are freed, its prefix unpinned.
    fn release(&mut self, r: &mut Req) {
        self.free_blocks += r.blocks;
        r.blocks = 0;
        if r.pinned {
            let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
            self.cache.unpin(&p, r.prompt, self.cfg.block_tokens);
            r.pinned = false;
        }
        r.shared = 0;
    }

    /// Blocks `r` lacks to hold `tokens` cached positions.
    fn blocks_short(&self, r: &Req, tokens: u64) -> u64 {
        self.blocks_for(tokens).saturating_sub(r.blocks + r.shared)
    }

    fn has_work(&self) -> bool {
        !(self.running.is_empty() && self.waiting.is_empty())
    }

    /// Requests held (waiting or running).
    fn load(&self) -> usize {
        self.running.len() + self.waiting.len()
    }

    fn used_blocks(&self) -> u64 {
        self.total_blocks - self.free_blocks
    }

    /// Blocks a sequence holding `tokens` cached positions takes: its KV's, and its state's.
    fn blocks_for(&self, tokens: u64) -> u64 {
        tokens.div_ceil(self.cfg.block_tokens) + self.state_blocks
    }

    /// Preempt running request `j` (by recompute or swap, [`Preemption`]): free its blocks, send
    /// it to the front of the queue; plan indices above `j` shift down.
    fn preempt(&mut self, j: usize, plan: &mut [(usize, u64)]) {
        let mut r = self.running.remove(j);
        self.release(&mut r);
        self.preemptions += 1;
        match self.cfg.preemption {
            Preemption::Recompute => {
                self.recomputed += r.cached - r.hit;
                r.present = r.hit;
                r.transferred = false;
            }
            Preemption::Swap => {
                self.swap_out.push(r.cached);
                r.present = r.cached;
                r.swapped = true;
            }
        }
        if let Admission::Sglang { init, .. } = self.cfg.admission {
            self.new_token_ratio = init;
        }
        r.blocks = 0;
        r.cached = 0;
        r.in_step = false;
        self.waiting.push_front(r);
        for (i, _) in plan.iter_mut() {
            if *i > j {
                *i -= 1;
            }
        }
    }

    /// Reserve blocks for running request `*i` to hold `tokens`, preempting the most recently
    /// admitted request not in the step while none is free. False when only `*i` itself is left
    /// to preempt.
    fn reserve(&mut self, plan: &mut [(usize, u64)], i: &mut usize, tokens: u64) -> bool {
        loop {
            let need = self.blocks_short(&self.running[*i], tokens);
            if need <= self.available() {
                self.take(need);
                self.running[*i].blocks += need;
                return true;
            }
            let Some(v) = (0..self.running.len()).rev().find(|&j| j != *i && !self.running[j].in_step) else {
                return false;
            };
            self.preempt(v, plan);
            if v < *i {
                *i -= 1;
            }
        }
    }

    /// New tokens of a decoding sequence's step: 1, or with speculation the last token and as
    /// many drafts as its output has left, up to the depth.
    fn decode_tokens(&self, r: &Req) -> u64 {
        match &self.cfg.speculation {
            None => 1,
            Some(s) => 1 + s.depth.min(r.output - r.generated - 1),
        }
    }

    /// SGLang's reservation for `r`'s future decodes, tokens: `ratio · min(output left, clip)`
    /// (0 under the other policies).
    fn sglang_reservation(&self, r: &Req) -> f64 {
        match self.cfg.admission {
            Admission::Sglang { .. } => {
                self.new_token_ratio * (r.output - r.generated).min(policy::SGLANG_CLIP_TOKENS) as f64
            }
            _ => 0.0,
        }
    }

    /// SGLang's reservations of every running sequence, tokens.
    fn sglang_reserved_tokens(&self) -> f64 {
        match self.cfg.admission {
            Admission::Sglang { .. } => self.running.iter().map(|r| self.sglang_reservation(r)).sum(),
            _ => 0.0,
        }
    }

    /// The step of a multi-step scheduling after its first: the sequences of the first that
    /// are still running, one token each (their blocks were reserved by [`Instance::reserve_ahead`]).
    fn continue_steps(&mut self, plan: &mut Vec<(usize, u64)>) {
        plan.clear();
        plan.extend(self.running.iter().enumerate().filter(|(_, r)| r.in_step).map(|(i, _)| (i, 1)));
    }

    /// After a scheduling whose step only decodes: reserve blocks for `steps` tokens of each of
    /// its sequences, if free, so that they decode `steps` steps without scheduling. Whether
    /// they were.
    fn reserve_ahead(&mut self, plan: &[(usize, u64)], steps: u64) -> bool {
        let mut need = 0;
        for &(i, _) in plan {
            let r = &self.running[i];
            need += self.blocks_short(r, r.cached + steps);
        }
        if need > self.available() {
            return false;
        }
        for &(i, _) in plan {
            let more = self.blocks_short(&self.running[i], self.running[i].cached + steps);
            self.running[i].blocks += more;
        }
        self.take(need);
        true
    }

    /// Build the step's plan: (index in `running`, new tokens).
    fn schedule(&mut self, plan: &mut Vec<(usize, u64)>) {
        plan.clear();
        for r in self.running.iter_mut() {
            r.in_step = false;
        }
        let mut budget = self.cfg.max_batched_tokens;
        let order: [u8; 3] = match self.cfg.schedule {
            Schedule::DecodeFirst => [0, 1, 2],
            Schedule::PrefillFirst => [1, 2, 0],
        };
        for pass in order {
            if pass < 2 {
                // Running decodes (pass 0) or running prefills (pass 1), in admission order.
                let mut i = 0;
                while i < self.running.len() && (plan.len() as u64) < self.cfg.max_seqs && budget > 0 {
                    let r = &self.running[i];
                    let decoding = r.decoding();
                    if r.in_step || decoding != (pass == 0) {
                        i += 1;
                        continue;
                    }
                    let n = if decoding {
                        self.decode_tokens(r)
                    } else {
                        (r.prefill_target() - r.cached).min(self.cfg.chunk_tokens).min(budget)
                    };
                    let tokens = r.cached + n;
                    let mut at = i;
                    if self.reserve(plan, &mut at, tokens) {
                        self.running[at].in_step = true;
                        plan.push((at, n));
                        budget -= n;
                        i = at + 1;
                    } else {
                        // Nothing left to preempt but itself: it yields its blocks and waits.
                        self.preempt(at, plan);
                        i = at;
                    }
                }
            } else {
                // Admissions, first come first served, while the admission policy lets the next in.
                let mut reserved_tokens = self.sglang_reserved_tokens();
                while (plan.len() as u64) < self.cfg.max_seqs
                    && budget > 0
                    && (self.running.len() as u64) < self.cfg.max_seqs
                {
                    let Some(r) = self.waiting.front() else { break };
                    let block = self.cfg.block_tokens;
                    // The prefix cache's blocks of its prompt, pinned while it is considered.
                    let cached_prefix = r.prefix.as_deref().copied().filter(|_| !r.swapped && !r.transferred);
                    let shared = cached_prefix.map_or(0, |p| self.cache.lookup(&p, r.prompt, block));
                    let start = if cached_prefix.is_some() { shared * block } else { r.present };
                    let (prompt, target, most) = (r.prompt, r.prefill_target(), r.prompt + r.output - 1);
                    if let Some(p) = &cached_prefix {
                        self.cache.pin(p, prompt, block);
                    }
                    let r = self.waiting.front().expect("front exists");
                    let n = (target - start).min(self.cfg.chunk_tokens).min(budget);
                    let own = |tokens: u64| self.blocks_for(tokens) - shared;
                    let first = own(start + n);
                    let idle = self.running.is_empty();
                    let (need, room) = match self.cfg.admission {
                        Admission::MaxUtilization | Admission::Sglang { .. } => (first, self.available()),
                        Admission::GuaranteedNoEvict => {
                            let most = if self.role == Role::HandOff { prompt } else { most };
                            (own(most).max(first), self.available())
                        }
                        Admission::Watermark { fraction } => {
                            let keep = if idle { 0 } else { (fraction * self.total_blocks as f64) as u64 };
                            (own(target).max(first), self.available().saturating_sub(keep))
                        }
                    };
                    let mut admit = need <= room;
                    let future = self.sglang_reservation(r);
                    if let (true, Admission::Sglang { .. }) = (admit, self.cfg.admission) {
                        let free_tokens = (self.available() * block) as f64;
                        let want = (target - start) as f64 + future;
                        admit = idle || want <= free_tokens - reserved_tokens;
                    }
                    if !admit {
                        if let Some(p) = &cached_prefix {
                            self.cache.unpin(p, prompt, block);
                        }
                        break;
                    }
                    reserved_tokens += future;
                    let mut r = self.waiting.pop_front().expect("front exists");
                    r.cached = start;
                    if r.swapped {
                        self.swap_in.push(start);
                        r.swapped = false;
                    } else if !r.transferred {
                        self.hit_tokens += start;
                    }
                    if cached_prefix.is_some() {
                        r.hit = start;
                        r.shared = shared;
                        r.pinned = true;
                        self.looked_up_tokens += prompt;
                    }
                    r.blocks = need;
                    r.in_step = true;
                    self.take(need);
                    self.running.push(r);
                    plan.push((self.running.len() - 1, n));
                    budget -= n;
                }
            }
        }
    }
}

/// A KV cache on its way from a prefill instance to the decode pool.
struct Transfer {
    ready_s: f64,
    req: Req,
}

/// The next thing that happens (ties resolved in this order).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    /// An open-loop arrival.
    Arrival,
    /// A KV transfer completes (index in `transfers`).
    KvArrives(usize),
    /// An instance's step ends.
    StepEnds(usize),
}

/// The instances of one layout: its scenario, the clock of its steps and its per-GPU KV bytes.
struct Pool<'a> {
    sc: Cow<'a, Scenario>,
    clock: StepClock,
    kv_bytes_memo: FxHashMap<u64, f64>,
}

impl<'a> Pool<'a> {
    fn new(sc: Cow<'a, Scenario>) -> Pool<'a> {
        let clock = StepClock::new(&sc);
        Pool { sc, clock, kv_bytes_memo: FxHashMap::default() }
    }
}

/// The KV capacities a request must fit, tokens.
#[derive(Debug, Clone, Copy)]
struct Capacity {
    /// Of an instance that keeps a request to its last token (aggregated, or the decode pool):
    /// its whole cache, `prompt + output − 1`.
    whole: u64,
    /// Of a prefill instance (disaggregated): its prompt.
    prompt: Option<u64>,
}

struct Engine<'a> {
    cfg: &'a SimConfig,
    /// One per layout: the aggregated instances' or both pools', or the prefill pool's then the
    /// decode pool's.
    pools: Vec<Pool<'a>>,
    /// The decode pool's (a disaggregated deployment).
    decode_pool: usize,
    source: Source,
    pending: Option<Arrival>,
    instances: Vec<Instance<'a>>,
    /// Instances that take arrivals (round robin): all of an aggregated deployment, the prefill
    /// pool of a disaggregated one. The rest are the decode pool.
    front: usize,
    next_front: usize,
    link: Option<KvLink>,
    /// When each front instance's link is free again.
    link_free_s: Vec<f64>,
    transfers: Vec<Transfer>,
    /// Where the clock has its zero, seconds from the start (module docs, "The clock").
    origin_s: f64,
    /// Now, on the clock.
    now_s: f64,
    /// The last arrival, seconds from the start.
    last_arrival_s: f64,
    waiting_at_last_arrival: u64,
    // Statistics.
    ttft: Sketch,
    tpot: Sketch,
    itl: Sketch,
    e2e: Sketch,
    transfer: Sketch,
    in_system: u64,
    in_system_avg: TimeAverage,
    last_event_s: f64,
    series: Series,
    completed: u64,
    good: u64,
    processed: u64,
    output_tokens: u64,
    prompt_tokens: u64,
    steps: u64,
    /// Steps charged to the budget so far.
    charged: u64,
    /// The router's draws ([`Router::Random`]).
    route_rng: rng::Pcg32,
    /// Speculation's acceptance draws.
    spec_rng: rng::Pcg32,
    /// A draft model's clock ([`Draft::Model`]).
    draft_clock: Option<StepClock>,
    /// Draft chunks of a speculative step (reused).
    draft_chunks: Vec<Chunk>,
    /// Decoding sequence-steps and the tokens they gained, under speculation.
    spec_steps: u64,
    spec_tokens: u64,
    /// The host link that swapped caches cross ([`Preemption::Swap`]).
    swap_link: Option<KvLink>,
    /// Completed requests counted in the summary (after the warm-up).
    measured_completed: u64,
    /// GPU-seconds of steps on prompt and on output tokens ([`SimSummary::prompt_busy_gpu_s`]).
    prompt_busy_gpu_s: f64,
    output_busy_gpu_s: f64,
    /// Arrival of the first request after the warm-up, seconds from the start.
    window_start_s: f64,
}

/// Check that a request can be served at all: its longest cache fits the KV capacity of an
/// instance that keeps it, and its prompt that of a prefill instance.
fn check_request(prompt: u64, output: u64, capacity: Capacity, field: &str) -> Result<()> {
    let capacity_tokens = capacity.whole;
    let held = prompt + output - 1;
    if held > crate::limits::MAX_CONTEXT {
        return Err(Error::invalid(field, held, format!("at most {} tokens per request", crate::limits::MAX_CONTEXT)));
    }
    if held > capacity_tokens {
        return Err(Error::invalid(
            field,
            format!("a request of {prompt} prompt + {output} output tokens"),
            format!(
                "requests whose cache (prompt + output − 1 = {held} tokens) fits the KV capacity of {capacity_tokens} tokens left next to the weights"
            ),
        ));
    }
    if let Some(prefill_tokens) = capacity.prompt.filter(|&c| prompt > c) {
        return Err(Error::invalid(
            field,
            format!("a request of {prompt} prompt tokens"),
            format!(
                "prompts that fit the prefill pool's KV capacity of {prefill_tokens} tokens left next to the weights"
            ),
        ));
    }
    Ok(())
}

/// Why no KV block fits, naming the input to change: the step's token budget when a one-token
/// step would leave room (its activations take the rest), else the reserve when the weights
/// alone would, else the model.
fn no_kv_room(sc: &Scenario, cfg: &SimConfig) -> Error {
    let blocks = |c: &SimConfig| kv_capacity_blocks(sc, c).unwrap_or(0);
    // Room for some tokens, but not one block of them: the block is too large.
    let tokens = blocks(&SimConfig { block_tokens: 1, ..cfg.clone() });
    if cfg.block_tokens > 1 && tokens > 0 {
        return Error::invalid(
            "block",
            cfg.block_tokens,
            format!(
                "tokens per KV block, at most the {} tokens the KV cache holds on the {} (engines use 16 to 256)",
                crate::error::grouped(tokens),
                sc.gpu.name
            ),
        );
    }
    if cfg.max_batched_tokens > 1 && blocks(&SimConfig { max_batched_tokens: 1, ..cfg.clone() }) > 0 {
        return Error::invalid(
            "max_batched_tokens",
            cfg.max_batched_tokens,
            format!(
                "a token budget per step whose activations leave room for KV cache next to the weights on the {} (at {} none is left)",
                sc.gpu.name, cfg.max_batched_tokens
            ),
        );
    }
    if cfg.reserve_bytes > 0.0 && blocks(&SimConfig { max_batched_tokens: 1, reserve_bytes: 0.0, ..cfg.clone() }) > 0 {
        return Error::invalid(
            "reserve",
            crate::error::compact_f64(cfg.reserve_bytes),
            format!("a reserve that leaves room for KV cache next to the weights on the {}", sc.gpu.name),
        );
    }
    Error::invalid(
        "model",
        &sc.model.name,
        format!("a model whose weights leave room for KV cache on the {} (none is left)", sc.gpu.name),
    )
}

/// The step that sizes an instance's KV cache: the largest the scheduler runs, a prefill of
/// `max_batched_tokens` tokens (its workspace is kept free next to the weights).
pub fn sizing_step(sc: &Scenario, cfg: &SimConfig) -> Result<Scenario> {
    Ok(sc.with_workload(Workload {
        phase: Phase::Prefill,
        contexts: Contexts::uniform(1, cfg.max_batched_tokens)?,
        chunks: None,
        ..sc.workload.clone()
    }))
}

/// KV blocks of `block_tokens` each that fit next to the weights and the workspace of a step of
/// `max_batched_tokens` prompt tokens ([`sizing_step`]; the memory model's [`crate::memory::max_cached_tokens`]),
/// and beside a draft model's weights and KV cache when speculation uses one
/// ([`crate::memory::max_cached_tokens_beside`]).
pub fn kv_capacity_blocks(sc: &Scenario, cfg: &SimConfig) -> Result<u64> {
    let draft = match cfg.speculation.as_ref().map(|s| &s.draft) {
        Some(Draft::Model(m)) => Some(&*m.0),
        Some(Draft::Heads { .. }) | None => None,
    };
    let tokens = crate::memory::max_cached_tokens_beside(&sizing_step(sc, cfg)?, cfg.reserve_bytes, draft);
    Ok(tokens / cfg.block_tokens)
}

/// KV-cache bytes one GPU of an instance holds for a sequence of `tokens` cached positions: the
/// memory model's per-GPU count (`memory::parallel::stage_kv_bytes`, first stage) at the KV
/// precision, with the layout's KV-head shares and the model's windows.
pub fn kv_bytes_per_gpu(sc: &Scenario, tokens: u64) -> Result<f64> {
    let one = sc.with_workload(Workload {
        phase: Phase::Prefill,
        contexts: Contexts::uniform(1, tokens)?,
        chunks: None,
        ..sc.workload.clone()
    });
    Ok(crate::memory::parallel::stage_kv_bytes(&one, 0))
}

/// Run one simulation of one serving instance; `on_step` sees every step as it happens (a trace
/// writer, or nothing).
pub fn simulate(sc: &Scenario, cfg: &SimConfig, on_step: impl FnMut(&StepRecord)) -> Result<Simulation> {
    simulate_within(sc, cfg, &Deployment::SINGLE, &Budget::unlimited(), on_step)
}

/// Run one simulation of `deployment`: aggregated replicas or disaggregated pools, every
/// instance of the scenario's layout (or of its pool's own, [`disagg::Pools`]) with the
/// scheduler `cfg` describes (module docs of [`disagg`]). `on_step` sees every step of every
/// instance, in order of their ends.
pub fn simulate_deployment(
    sc: &Scenario,
    cfg: &SimConfig,
    deployment: &Deployment,
    on_step: impl FnMut(&StepRecord),
) -> Result<Simulation> {
    simulate_within(sc, cfg, deployment, &Budget::unlimited(), on_step)
}

/// [`simulate_deployment`] under `budget`: its steps are charged to the budget as they are
/// taken, and the run stops with [`Error::OverBudget`] past it or [`Error::Cancelled`] once the
/// budget's flag is set (checked every [`budget::CHECK_STEPS`] steps). Estimate the runs with
/// [`Budget::admit`] before starting them.
pub fn simulate_within(
    sc: &Scenario,
    cfg: &SimConfig,
    deployment: &Deployment,
    budget: &Budget,
    mut on_step: impl FnMut(&StepRecord),
) -> Result<Simulation> {
    cfg.validate()?;
    deployment.validate()?;
    if sc.parallel.pp > 1 {
        return Err(Error::invalid(
            "pp",
            sc.parallel.pp,
            "pp = 1: the simulator does not model pipeline micro-batches (use tp or ep)",
        ));
    }
    // The layouts: the scenario's, or each pool's own ([`disagg::Pools`]): the prefill pool's
    // first, then the decode pool's unless it is the same.
    let mut pools = vec![Pool::new(Cow::Borrowed(sc))];
    let (front_pool, mut decode_pool) = (0, 0);
    if let Deployment::Disaggregated(Disagg { pools: Some(p), .. }) = deployment {
        if matches!(cfg.speculation.as_ref().map(|s| &s.draft), Some(Draft::Model(_))) {
            return Err(Error::refused(
                "draft_model",
                "given",
                "pools of the scenario's layout, without {prefill_tp}, {prefill_ep}, {decode_tp} or {decode_ep}: the draft model is laid out as the scenario",
            ));
        }
        pools = vec![Pool::new(p.prefill.scenario(sc, "prefill")?)];
        if p.decode != p.prefill {
            pools.push(Pool::new(p.decode.scenario(sc, "decode")?));
            decode_pool = 1;
        }
    }
    let mut blocks = Vec::with_capacity(pools.len());
    let mut state_blocks = Vec::with_capacity(pools.len());
    for pool in &pools {
        let b = kv_capacity_blocks(&pool.sc, cfg)?;
        let state = crate::memory::state_tokens_per_sequence(&pool.sc).div_ceil(cfg.block_tokens);
        if b <= state {
            return Err(no_kv_room(&pool.sc, cfg));
        }
        blocks.push(b);
        state_blocks.push(state);
    }
    // A request's tokens fit beside one sequence's state.
    let tokens = |pool: usize| (blocks[pool] - state_blocks[pool]) * cfg.block_tokens;
    let capacity = Capacity {
        whole: tokens(decode_pool),
        prompt: matches!(deployment, Deployment::Disaggregated(_)).then(|| tokens(front_pool)),
    };
    // Requests whose lengths are known in advance are checked before the run.
    match &cfg.arrivals {
        Arrivals::Trace(t) => {
            for r in t.iter() {
                check_request(r.prompt_tokens, r.output_tokens, capacity, "trace")?;
            }
        }
        _ => {
            if let (Some(p), Some(o)) = (cfg.prompt.max_tokens(), cfg.output.max_tokens()) {
                check_request(p, o, capacity, "prompt")?;
            }
        }
    }
    let (instances, front, link) = match deployment {
        Deployment::Aggregated { replicas } => (
            (0..*replicas).map(|_| Instance::new(cfg, Role::Keep, 0, blocks[0], state_blocks[0])).collect::<Vec<_>>(),
            *replicas,
            None,
        ),
        Deployment::Disaggregated(d) => {
            let mut v: Vec<Instance> = (0..d.prefill)
                .map(|_| Instance::new(cfg, Role::HandOff, front_pool, blocks[front_pool], state_blocks[front_pool]))
                .collect();
            v.extend(
                (0..d.decode).map(|_| {
                    Instance::new(cfg, Role::Keep, decode_pool, blocks[decode_pool], state_blocks[decode_pool])
                }),
            );
            (v, d.prefill, Some(d.link.clone()))
        }
    };
    let front = front as usize;
    let swap_link = match cfg.preemption {
        Preemption::Recompute => None,
        Preemption::Swap => Some(
            KvLink::resolve(KvLinkChoice::Pcie, &sc.gpu, &sc.parallel, 1)
                .map_err(|e| e.map_field(|_| "preemption".into()))?,
        ),
    };
    let mut e = Engine {
        cfg,
        pools,
        decode_pool,
        source: Source::new(
            cfg.arrivals.clone(),
            cfg.prompt.clone(),
            cfg.output.clone(),
            cfg.offered_requests(),
            cfg.seed,
        ),
        pending: None,
        instances,
        front,
        next_front: 0,
        link,
        link_free_s: vec![0.0; front],
        transfers: Vec::new(),
        origin_s: 0.0,
        now_s: 0.0,
        last_arrival_s: 0.0,
        waiting_at_last_arrival: 0,
        ttft: Sketch::default(),
        tpot: Sketch::default(),
        itl: Sketch::default(),
        e2e: Sketch::default(),
        transfer: Sketch::default(),
        in_system: 0,
        in_system_avg: TimeAverage::default(),
        last_event_s: 0.0,
        series: Series::default(),
        completed: 0,
        good: 0,
        processed: 0,
        output_tokens: 0,
        prompt_tokens: 0,
        steps: 0,
        charged: 0,
        route_rng: rng::Pcg32::new(cfg.seed, 3),
        spec_rng: rng::Pcg32::new(cfg.seed, 4),
        draft_clock: match cfg.speculation.as_ref().map(|s| &s.draft) {
            Some(Draft::Model(m)) => Some(StepClock::new(&m.0)),
            _ => None,
        },
        draft_chunks: Vec::new(),
        spec_steps: 0,
        spec_tokens: 0,
        swap_link,
        measured_completed: 0,
        window_start_s: 0.0,
        prompt_busy_gpu_s: 0.0,
        output_busy_gpu_s: 0.0,
    };
    e.run(capacity, budget, &mut on_step)?;
    Ok(e.finish(capacity))
}

impl Engine<'_> {
    /// Advance the in-system integral to `t_s`.
    fn mark(&mut self, t_s: f64) {
        let dt = t_s - self.last_event_s;
        if dt > 0.0 {
            self.in_system_avg.hold(self.in_system as f64, dt);
            self.last_event_s = t_s;
        }
    }

    fn waiting(&self) -> u64 {
        self.instances.iter().map(|i| i.waiting.len() as u64).sum()
    }

    /// The front instance the router sends the next arrival to ([`Router`]).
    fn route(&mut self) -> usize {
        let front = &self.instances[..self.front];
        match self.cfg.router {
            Router::RoundRobin => {
                let to = self.next_front % self.front;
                self.next_front = (self.next_front + 1) % self.front;
                to
            }
            Router::Random => self.route_rng.range(0, self.front as u64 - 1) as usize,
            Router::LeastOutstanding => (0..self.front).min_by_key(|&j| front[j].load()).expect("a front instance"),
            Router::KvUsage => (0..self.front)
                .min_by(|&a, &b| {
                    let (x, y) = (&front[a], &front[b]);
                    let ux = x.used_blocks() as f64 / x.total_blocks as f64;
                    let uy = y.used_blocks() as f64 / y.total_blocks as f64;
                    ux.total_cmp(&uy).then(x.load().cmp(&y.load()))
                })
                .expect("a front instance"),
        }
    }

    /// A new request joins the queue of the front instance the router picks.
    fn enqueue(&mut self, a: Arrival, capacity: Capacity) -> Result<()> {
        check_request(a.prompt_tokens, a.output_tokens, capacity, "prompt")?;
        if !a.absolute_s.is_finite() {
            // Only open loops draw times; a trace's are checked finite.
            let rate = self.cfg.arrivals.rate_per_s().unwrap_or(f64::NAN);
            return Err(Error::invalid(
                "rate",
                crate::error::compact_f64(rate),
                format!(
                    "a rate at which {} requests arrive within {} s, the longest time a number holds",
                    self.source.total(),
                    crate::error::compact_f64(f64::MAX)
                ),
            ));
        }
        self.mark(a.arrival_s);
        self.in_system += 1;
        let hit = ((self.cfg.prefix_hit * a.prompt_tokens as f64).floor() as u64).min(a.prompt_tokens - 1);
        let to = self.route();
        let measured = self.source.issued() > self.cfg.warmup_requests;
        if measured && self.source.issued() == self.cfg.warmup_requests + 1 {
            self.window_start_s = a.absolute_s;
        }
        self.instances[to].waiting.push_back(Req {
            arrival_s: a.arrival_s,
            prompt: a.prompt_tokens,
            output: a.output_tokens,
            hit,
            present: hit,
            transferred: false,
            cached: 0,
            generated: 0,
            first_token_s: 0.0,
            last_token_s: 0.0,
            streamed_s: 0.0,
            blocks: 0,
            in_step: false,
            swapped: false,
            measured,
            prefix: if self.cfg.prefix_cache { a.prefix.map(Box::new) } else { None },
            shared: 0,
            pinned: false,
        });
        self.last_arrival_s = a.absolute_s;
        if self.source.issued() == self.source.total() {
            self.waiting_at_last_arrival = self.waiting();
        }
        Ok(())
    }

    /// The next event and its time: arrivals first, then KV arrivals, then step ends, at a tie.
    fn next_event(&mut self) -> Option<(f64, Event)> {
        if self.pending.is_none() {
            self.pending = self.source.next_open();
        }
        let capped = self.cfg.max_concurrency.is_some_and(|c| self.in_system >= c);
        let mut best: Option<(f64, Event)> = self.pending.filter(|_| !capped).map(|a| (a.arrival_s, Event::Arrival));
        let mut offer = |t: f64, ev: Event| {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, ev));
            }
        };
        for (k, x) in self.transfers.iter().enumerate() {
            offer(x.ready_s, Event::KvArrives(k));
        }
        for (k, inst) in self.instances.iter().enumerate() {
            if let Some(t) = inst.busy_until_s {
                offer(t, Event::StepEnds(k));
            }
        }
        best
    }

    /// Move the clock's zero to `t_s`, where a request arrives at an empty system, `absolute_s`
    /// from the start (module docs, "The clock").
    fn rebase(&mut self, t_s: f64, absolute_s: f64) {
        self.mark(t_s);
        self.origin_s = absolute_s;
        self.now_s = 0.0;
        self.last_event_s = 0.0;
        for free in &mut self.link_free_s {
            *free -= t_s;
        }
        if let Some(a) = &mut self.pending {
            a.arrival_s -= t_s;
        }
        self.source.rebase(absolute_s, t_s);
    }

    /// Serve every request (or stop at [`MAX_STEPS`]), charging the steps to `budget`.
    fn run(&mut self, capacity: Capacity, budget: &Budget, on_step: &mut impl FnMut(&StepRecord)) -> Result<()> {
        self.serve(capacity, budget, on_step)?;
        budget.charge(self.steps - self.charged)
    }

    fn serve(&mut self, capacity: Capacity, budget: &Budget, on_step: &mut impl FnMut(&StepRecord)) -> Result<()> {
        if let Arrivals::Closed { concurrency } = self.cfg.arrivals {
            for _ in 0..concurrency {
                if let Some(a) = self.source.next_closed(0.0) {
                    self.enqueue(a, capacity)?;
                }
            }
        }
        let mut chunks: Vec<Chunk> = Vec::new();
        while self.steps < MAX_STEPS {
            if self.steps - self.charged >= budget::CHECK_STEPS {
                budget.charge(self.steps - self.charged)?;
                self.charged = self.steps;
            }
            let next = self.next_event();
            if next.is_none_or(|(t, _)| t > self.now_s) {
                // Nothing else happens now: every idle instance with work starts a step.
                let mut started = false;
                for k in 0..self.instances.len() {
                    if self.instances[k].busy_until_s.is_none() && self.instances[k].has_work() {
                        self.start_step(k, &mut chunks)?;
                        started = true;
                    }
                }
                if started {
                    continue;
                }
            }
            let Some((mut t, event)) = next else { return Ok(()) };
            if event == Event::Arrival && self.in_system == 0 && t != 0.0 {
                let absolute_s = self.pending.map_or(t, |a| a.absolute_s);
                self.rebase(t, absolute_s);
                t = 0.0;
            }
            self.now_s = self.now_s.max(t);
            match event {
                Event::Arrival => {
                    let mut a = self.pending.take().expect("a pending arrival");
                    if self.cfg.max_concurrency.is_some() && a.arrival_s < self.now_s {
                        // Held back by the concurrency cap: sent now.
                        a.absolute_s = self.origin_s + self.now_s;
                        a.arrival_s = self.now_s;
                    }
                    self.enqueue(a, capacity)?;
                }
                Event::KvArrives(k) => {
                    let x = self.transfers.swap_remove(k);
                    // The decode instance holding the fewest requests takes it (the first at a tie).
                    let to = (self.front..self.instances.len())
                        .min_by_key(|&j| self.instances[j].load())
                        .expect("a decode pool");
                    self.instances[to].waiting.push_back(x.req);
                }
                Event::StepEnds(k) => self.end_step(k, capacity, on_step)?,
            }
        }
        Ok(())
    }

    /// Schedule and time a step of instance `k` starting now.
    fn start_step(&mut self, k: usize, chunks: &mut Vec<Chunk>) -> Result<()> {
        let inst = &mut self.instances[k];
        let preempted_before = inst.preemptions;
        let mut plan = std::mem::take(&mut inst.plan);
        let mut inner = false;
        inst.swap_out.clear();
        inst.swap_in.clear();
        if inst.multi_left > 0 {
            inst.continue_steps(&mut plan);
            inst.multi_left -= 1;
            inner = !plan.is_empty();
        }
        if !inner {
            inst.multi_left = 0;
            inst.schedule(&mut plan);
            let steps = self.cfg.scheduler_steps;
            if steps > 1
                && !plan.is_empty()
                && plan.iter().all(|&(i, _)| inst.running[i].decoding())
                && inst.reserve_ahead(&plan, steps)
            {
                inst.multi_left = steps - 1;
            }
        }
        if plan.is_empty() {
            // Nothing fits even an empty cache: cannot happen for checked requests.
            return Err(Error::invalid("block", self.cfg.block_tokens, "a block size the KV capacity can hold"));
        }
        chunks.clear();
        let (mut decodes, mut prefills, mut tokens, mut prompt_tokens) = (0, 0, 0, 0);
        for &(i, n) in &plan {
            let r = &inst.running[i];
            chunks.push(Chunk { new_tokens: n, cached_tokens: r.cached });
            if r.decoding() {
                decodes += 1;
            } else {
                prefills += 1;
                prompt_tokens += n;
            }
            tokens += n;
        }
        if decodes == plan.len() as u64 {
            let padded = self.cfg.cuda_graphs.padded(decodes, self.cfg.max_seqs);
            // A padding slot is a dummy generation request holding one cached token
            // (TensorRT-LLM's `add_dummy_requests(..., is_gen=True)`, vLLM's padded decode
            // entries): it runs the decode graph's generation-phase attention. With nothing
            // cached it would be a one-token prompt, timed on the context kernel.
            let pad = Chunk { new_tokens: chunks[0].new_tokens, cached_tokens: 1 };
            chunks.extend(std::iter::repeat_n(pad, (padded - decodes) as usize));
        }
        let clock = &mut self.pools[self.instances[k].pool].clock;
        let full_s = clock.step_s(chunks);
        let host_s = clock.host_s();
        let mut dt = match (inner, self.cfg.host) {
            (true, _) => full_s - host_s,
            (false, HostTime::Serial) => full_s,
            (false, HostTime::Overlapped) => (full_s - host_s).max(host_s),
        };
        dt += self.draft_s(k, &plan, chunks);
        dt += self.swap_s(k)?;
        let gpu_s = dt * self.pools[self.instances[k].pool].sc.parallel.gpus_per_replica() as f64;
        let prompt_share = prompt_tokens as f64 / tokens as f64;
        self.prompt_busy_gpu_s += gpu_s * prompt_share;
        self.output_busy_gpu_s += gpu_s * (1.0 - prompt_share);
        let inst = &mut self.instances[k];
        inst.peak_running = inst.peak_running.max(inst.running.len() as u64);
        inst.batch.hold(plan.len() as f64, dt);
        inst.queue.hold(inst.waiting.len() as f64, dt);
        inst.kv.hold(inst.used_blocks() as f64 / inst.total_blocks as f64, dt);
        inst.step_start_s = self.now_s;
        inst.busy_until_s = Some(self.now_s + dt);
        inst.step_record = StepRecord {
            step: self.steps,
            start_s: self.origin_s + self.now_s,
            time_s: dt,
            decodes,
            prefills,
            tokens,
            waiting: 0,
            kv_blocks_used: 0,
            preemptions: inst.preemptions - preempted_before,
        };
        if decodes > 0 {
            if let Admission::Sglang { init, min } = self.cfg.admission {
                inst.new_token_ratio = (inst.new_token_ratio - (init - min) / policy::SGLANG_DECAY_STEPS).max(min);
            }
        }
        inst.plan = plan;
        self.steps += 1;
        self.processed += tokens;
        Ok(())
    }

    /// Seconds of the draft steps in instance `k`'s step of `chunks` under speculation: `k`
    /// draft steps of its decoding sequences, each a decode step of those sequences on the
    /// draft model, or a fraction of the target's ([`Draft`]).
    fn draft_s(&mut self, k: usize, plan: &[(usize, u64)], chunks: &[Chunk]) -> f64 {
        let Some(spec) = &self.cfg.speculation else { return 0.0 };
        let inst = &self.instances[k];
        self.draft_chunks.clear();
        let mut depth = 0;
        for (&(i, n), c) in plan.iter().zip(chunks) {
            if inst.running[i].decoding() {
                self.draft_chunks.push(Chunk { new_tokens: 1, cached_tokens: c.cached_tokens });
                depth = depth.max(n - 1);
            }
        }
        if depth == 0 {
            return 0.0;
        }
        let one = match &spec.draft {
            Draft::Heads { fraction } => fraction * self.pools[inst.pool].clock.step_s(&self.draft_chunks),
            Draft::Model(_) => self.draft_clock.as_mut().expect("a draft clock").step_s(&self.draft_chunks),
        };
        depth as f64 * one
    }

    /// Seconds instance `k`'s step spends swapping caches out and in over the host link:
    /// `α + bytes ÷ β` per sequence ([`Preemption::Swap`]).
    fn swap_s(&mut self, k: usize) -> Result<f64> {
        let Some(link) = self.swap_link.clone() else { return Ok(0.0) };
        let mut total = 0.0;
        for j in 0..self.instances[k].swap_out.len() + self.instances[k].swap_in.len() {
            let inst = &self.instances[k];
            let tokens = if j < inst.swap_out.len() { inst.swap_out[j] } else { inst.swap_in[j - inst.swap_out.len()] };
            if tokens > 0 {
                total += link.transfer_s(self.kv_bytes(self.instances[k].pool, tokens)?);
            }
        }
        Ok(total)
    }

    /// KV bytes one GPU of an instance of `pool` holds for `tokens` cached positions
    /// ([`kv_bytes_per_gpu`] on the pool's layout, memoised).
    fn kv_bytes(&mut self, pool: usize, tokens: u64) -> Result<f64> {
        let pool = &mut self.pools[pool];
        if let Some(b) = pool.kv_bytes_memo.get(&tokens) {
            return Ok(*b);
        }
        let b = kv_bytes_per_gpu(&pool.sc, tokens)?;
        pool.kv_bytes_memo.insert(tokens, b);
        Ok(b)
    }

    /// Apply the progress of instance `k`'s step, ending now: tokens, finishes, hand-offs,
    /// closed-loop arrivals.
    fn end_step(&mut self, k: usize, capacity: Capacity, on_step: &mut impl FnMut(&StepRecord)) -> Result<()> {
        let now = self.now_s;
        self.mark(now);
        let plan = std::mem::take(&mut self.instances[k].plan);
        // (index in `running`, finished: else handed off).
        let mut leaving: Vec<(usize, bool)> = Vec::new();
        let inst = &mut self.instances[k];
        let acceptance = self.cfg.speculation.as_ref().map_or(0.0, |s| s.acceptance);
        // The step's tokens stream to the client now unless more steps of a multi-step run follow.
        let run_ends = inst.multi_left == 0;
        for &(i, n) in &plan {
            let r = &mut inst.running[i];
            let produced = if n > 1 && r.decoding() {
                // Speculation: the last token and the drafts up to the first rejected.
                let mut m = 1;
                while m < n && self.spec_rng.uniform() < acceptance {
                    m += 1;
                }
                r.cached += m;
                self.spec_steps += 1;
                self.spec_tokens += m;
                m
            } else {
                let was_prefill = r.in_prefill();
                r.cached += n;
                if was_prefill && r.in_prefill() {
                    continue; // a chunk that did not complete the prompt
                }
                1
            };
            // This step produced `produced` tokens.
            let first = r.generated == 0;
            r.generated += produced;
            if first {
                if r.pinned {
                    // Its prompt is computed: the cache takes the prefix blocks it lacks.
                    let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
                    let moved = inst.cache.insert(&p, r.prompt, self.cfg.block_tokens, None);
                    r.blocks -= moved;
                    r.shared += moved;
                }
                r.first_token_s = now;
                r.streamed_s = now;
                if r.measured {
                    self.ttft.add(now - r.arrival_s);
                }
            } else if run_ends || r.generated == r.output {
                // One inter-token sample per chunk streamed: the gap since the last chunk (a
                // benchmark's ITL is the time between the stream's messages).
                if r.measured {
                    self.itl.add(now - r.streamed_s);
                }
                r.streamed_s = now;
            }
            r.last_token_s = now;
            if r.generated == r.output {
                leaving.push((i, true));
            } else if inst.role == Role::HandOff {
                leaving.push((i, false));
            }
        }
        leaving.sort_unstable();
        let mut finished = 0;
        for &(i, done) in leaving.iter().rev() {
            let inst = &mut self.instances[k];
            let mut r = inst.running.remove(i);
            if done && r.pinned {
                let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
                let block = self.cfg.block_tokens;
                r.blocks -= inst.cache.insert(&p, r.prompt, block, Some(r.cached / block));
            }
            inst.release(&mut r);
            if done {
                finished += 1;
                self.finish_request(&r, now);
            } else {
                self.hand_off(k, &mut r, now)?;
            }
        }
        if let Arrivals::Closed { .. } = self.cfg.arrivals {
            for _ in 0..finished {
                if let Some(a) = self.source.next_closed(now) {
                    self.enqueue(a, capacity)?;
                }
            }
        }
        let waiting = self.waiting();
        let (used, total) = self.instances.iter().fold((0, 0), |(u, t), i| (u + i.used_blocks(), t + i.total_blocks));
        let running: u64 = self
            .instances
            .iter()
            .enumerate()
            .map(|(j, i)| {
                if j == k {
                    plan.len() as u64
                } else if i.busy_until_s.is_some() {
                    i.plan.len() as u64
                } else {
                    0
                }
            })
            .sum();
        let t_s = self.origin_s + now;
        self.series.offer(SeriesPoint { t_s, running, waiting, kv_utilisation: used as f64 / total as f64 });
        let inst = &mut self.instances[k];
        inst.busy_until_s = None;
        inst.plan = plan;
        let kv_blocks_used = if self.instances.len() == 1 { used } else { self.instances[k].used_blocks() };
        on_step(&StepRecord {
            waiting: if self.instances.len() == 1 { waiting } else { self.instances[k].waiting.len() as u64 },
            kv_blocks_used,
            ..self.instances[k].step_record
        });
        Ok(())
    }

    /// A request that produced its last token at `now`.
    fn finish_request(&mut self, r: &Req, now: f64) {
        self.completed += 1;
        self.in_system -= 1;
        if !r.measured {
            return;
        }
        let e2e = now - r.arrival_s;
        let ttft = r.first_token_s - r.arrival_s;
        let tpot = (r.output > 1).then(|| (r.last_token_s - r.first_token_s) / (r.output - 1) as f64);
        self.e2e.add(e2e);
        if let Some(t) = tpot {
            self.tpot.add(t);
        }
        let ok = self.cfg.ttft_slo_s.is_none_or(|b| ttft <= b)
            && self.cfg.tpot_slo_s.is_none_or(|b| tpot.is_none_or(|t| t <= b));
        self.good += u64::from(ok);
        self.measured_completed += 1;
        self.output_tokens += r.output;
        self.prompt_tokens += r.prompt;
    }

    /// Send the cache of `r`, whose first token prefill instance `k` produced at `now`, to the
    /// decode pool: it queues behind earlier transfers on `k`'s links, and takes the slower of
    /// each prefill GPU sending its share and each decode GPU receiving its share
    /// ([`KvLink::transfer_between_s`]).
    fn hand_off(&mut self, k: usize, r: &mut Req, now: f64) -> Result<()> {
        let tokens = r.cached;
        let sent_bytes_per_prefill_gpu = self.kv_bytes(self.instances[k].pool, tokens)?;
        let received_bytes_per_decode_gpu = self.kv_bytes(self.decode_pool, tokens)?;
        let link = self.link.as_ref().expect("a disaggregated deployment has a link");
        let start = now.max(self.link_free_s[k]);
        let ready_s = start + link.transfer_between_s(sent_bytes_per_prefill_gpu, received_bytes_per_decode_gpu);
        self.link_free_s[k] = ready_s;
        self.transfer.add(ready_s - now);
        r.present = tokens;
        r.transferred = true;
        r.cached = 0;
        r.blocks = 0;
        r.in_step = false;
        self.transfers.push(Transfer { ready_s, req: r.clone() });
        Ok(())
    }

    fn finish(mut self, capacity: Capacity) -> Simulation {
        self.mark(self.now_s);
        let duration_s = if self.cfg.warmup_requests > 0 {
            self.origin_s + self.now_s - self.window_start_s
        } else {
            self.origin_s + self.now_s
        };
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        let issued = self.source.issued();
        let arrival_rate_per_s = if self.last_arrival_s > 0.0 && issued > 1 {
            (issued - 1) as f64 / self.last_arrival_s
        } else {
            per_s(self.measured_completed as f64)
        };
        let merged = |f: fn(&Instance) -> TimeAverage| {
            self.instances.iter().fold(TimeAverage::default(), |mut acc, i| {
                acc.merge(&f(i));
                acc
            })
        };
        let (batch, queue, kv) = (merged(|i| i.batch), merged(|i| i.queue), merged(|i| i.kv));
        let sum = |f: fn(&Instance) -> u64| self.instances.iter().map(f).sum::<u64>();
        let measured = self.measured_completed;
        let summary = SimSummary {
            completed: measured,
            requests: self.source.total() - self.cfg.warmup_requests,
            offered_rate_per_s: self.cfg.arrivals.rate_per_s(),
            arrival_rate_per_s,
            duration_s,
            mean_in_system: self.in_system_avg.mean(),
            mean_latency_s: self.e2e.mean(),
            requests_per_s: per_s(measured as f64),
            input_tokens_per_s: per_s(self.prompt_tokens as f64),
            output_tokens_per_s: per_s(self.output_tokens as f64),
            ttft_s: self.ttft.quantiles(),
            tpot_s: self.tpot.quantiles(),
            itl_s: self.itl.quantiles(),
            e2e_s: self.e2e.quantiles(),
            goodput_per_s: per_s(self.good as f64),
            slo_attainment: if measured > 0 { self.good as f64 / measured as f64 } else { 0.0 },
            preemptions: sum(|i| i.preemptions),
            recomputed_tokens: sum(|i| i.recomputed),
            prefix_hit_tokens: sum(|i| i.hit_tokens),
            processed_tokens: self.processed,
            output_tokens: self.output_tokens,
            prompt_tokens: self.prompt_tokens,
            steps: self.steps,
            mean_batch: batch.mean(),
            max_batch: batch.max() as u64,
            mean_queue: queue.mean(),
            max_queue: queue.max() as u64,
            queue_growth_per_s: if self.last_arrival_s > 0.0 {
                self.waiting_at_last_arrival as f64 / self.last_arrival_s
            } else {
                0.0
            },
            mean_kv_utilisation: kv.mean(),
            max_kv_utilisation: kv.max(),
            kv_capacity_tokens: capacity.whole,
            drained: self.completed == self.source.total(),
            gpus: self.instances.iter().map(|i| self.pools[i.pool].sc.parallel.gpus_per_replica()).sum(),
            prompt_busy_gpu_s: self.prompt_busy_gpu_s,
            output_busy_gpu_s: self.output_busy_gpu_s,
            kv_transfer_s: self.link.is_some().then(|| self.transfer.quantiles()),
            prefix_cache_hit_rate: self.cfg.prefix_cache.then(|| {
                let looked = sum(|i| i.looked_up_tokens);
                let hit = sum(|i| i.hit_tokens);
                if looked > 0 {
                    hit as f64 / looked as f64
                } else {
                    0.0
                }
            }),
            prefix_evicted_blocks: self.cfg.prefix_cache.then(|| sum(|i| i.cache.evicted)),
            spec_tokens_per_step: self.cfg.speculation.is_some().then(|| {
                if self.spec_steps > 0 {
                    self.spec_tokens as f64 / self.spec_steps as f64
                } else {
                    0.0
                }
            }),
        };
        Simulation {
            summary,
            peak_running: self.instances.iter().map(|i| i.peak_running).max().unwrap_or(0),
            series: self.series.points().to_vec(),
            ttft_cdf: self.ttft.cdf(),
            tpot_cdf: self.tpot.cdf(),
            itl_cdf: self.itl.cdf(),
            e2e_cdf: self.e2e.cdf(),
        }
    }
}
