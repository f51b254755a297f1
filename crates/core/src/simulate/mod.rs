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
mod clock;
mod config;
pub mod disagg;
mod instance;
pub mod policy;
pub mod prefix;
pub mod rng;
mod run;
pub mod stats;
mod summary;
pub mod workload;

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::ledger::{summarise, StepParts};
use crate::scenario::Scenario;
use crate::workload::{Chunk, Contexts, Phase, Workload};
pub use budget::{Budget, DEFAULT_MAX_STEPS};
pub use clock::{StepClock, DECODE_MEMO_ENTRIES};
pub use config::{Pass, Schedule, SimConfig};
pub use disagg::{Deployment, Disagg, KvLink, KvLinkChoice, PoolLayout, Pools};
use instance::{Instance, Req, Role};
pub use policy::{
    Admission, CudaGraphs, Draft, DraftModel, EnginePolicy, HostTime, Preemption, Router, SchedulerLimits, Speculation,
};
pub use prefix::PromptPrefix;
use run::{Capacity, Pool, Run};
use rustc_hash::FxHashMap;
use serde::Serialize;
use stats::{Quantiles, Series, SeriesPoint, Sketch, TimeAverage};
use std::borrow::Cow;
use std::collections::VecDeque;
pub use summary::{SimSummary, Simulation, StepRecord};
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
        Arrivals::Poisson { .. } | Arrivals::Gamma { .. } | Arrivals::Closed { .. } => {
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
    let mut e = Run {
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
            Some(Draft::Heads { .. }) | None => None,
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
