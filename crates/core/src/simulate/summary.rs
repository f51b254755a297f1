//! What a simulation produces: its summary, its step records and its plots' data.

use super::*;

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
