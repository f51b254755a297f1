//! How an engine runs its scheduler: admission control and preemption, CUDA-graph padding,
//! multi-step scheduling, host time, routing across replicas and speculative decoding. Each is
//! a typed field of [`super::SimConfig`]; [`super::SimConfig::poisson`]'s defaults are the
//! simulator's plain scheduler (admit while the next first chunk fits, recompute, no padding,
//! one step per scheduling, host time serial as the clock reports it, round robin, no
//! speculation), and [`EnginePolicy::of_engine`] gives each engine's own.

use crate::engine::Engine;
use crate::error::integer_in;
use crate::error::{compact_f64, Error, Result};
use crate::scenario::Scenario;
use serde::Serialize;
use std::sync::Arc;

/// Which requests a step admits, and how much KV cache it sets aside for them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Admission {
    /// Admit first come first served while the next request's first chunk fits the free blocks;
    /// when a running sequence needs a block and none is free, preempt the most recently
    /// admitted. TensorRT-LLM's `MAX_UTILIZATION` capacity policy ("packs as many requests as
    /// possible … may need to pause requests", `CapacitySchedulerPolicy` in
    /// `tensorrt_llm/bindings/executor`, docs "The Batch Manager").
    MaxUtilization,
    /// TensorRT-LLM's default `GUARANTEED_NO_EVICT`: a request is admitted only when blocks for
    /// its whole prompt and its maximum output, `⌈(prompt + output − 1) / block⌉`, are free, and
    /// they are reserved at admission, so a running request never needs a block it does not hold:
    /// no preemption, by construction.
    GuaranteedNoEvict,
    /// vLLM's block manager: a request is admitted only when blocks for its whole context
    /// (prompt, plus the tokens it generated before a preemption) are free with
    /// `⌊watermark · blocks⌋` blocks still left over (`BlockSpaceManager.can_allocate`:
    /// `free − required ≥ watermark_blocks`, `--gpu-memory-utilization`'s companion
    /// `watermark = 0.01` in `vllm/core/block_manager.py`), and it holds them from then on. So a
    /// preempted request is not readmitted until its whole context fits. Running sequences grow
    /// into free blocks without the watermark and preempt the most recently admitted when none
    /// is free. When nothing is running the watermark is waived (vLLM refuses such a request as
    /// never fitting; here every request is checked to fit the cache before the run).
    Watermark {
        /// Fraction of the blocks kept free by admissions, `0 ≤ w < 1` (vLLM: 0.01).
        fraction: f64,
    },
    /// SGLang's `PrefillAdder`: every running request reserves `ratio · min(output left, 4096)`
    /// tokens for its future decodes, and a waiting request is admitted when its prompt plus
    /// `ratio · min(output, 4096)` fits what is free after those reservations
    /// (`python/sglang/srt/managers/schedule_policy.py`, `CLIP_MAX_NEW_TOKENS_ESTIMATION = 4096`).
    /// The ratio starts at `init` (SGLang: `default_init_new_token_ratio = 0.7`), falls by
    /// `(init − min) / 600` each step with decodes down to `min` (`0.7 × 0.14 = 0.098`,
    /// `default_min_new_token_ratio_factor` and `default_new_token_ratio_decay_steps` in
    /// `global_config.py`), and is set back to `init` when a decode runs out of cache and a
    /// request is retracted (preempted) — SGLang recomputes it from the retracted batch; here it
    /// returns to its starting value. Admission allocates the first chunk only, as SGLang's
    /// chunked prefill does.
    Sglang {
        /// Starting reservation ratio, `0 ≤ init ≤ 1`.
        init: f64,
        /// Lowest reservation ratio, `0 ≤ min ≤ init`.
        min: f64,
    },
}

/// SGLang's output-length clip in its reservation (`CLIP_MAX_NEW_TOKENS_ESTIMATION`).
pub const SGLANG_CLIP_TOKENS: u64 = 4096;
/// SGLang's steps for the reservation ratio to fall from `init` to `min`.
pub const SGLANG_DECAY_STEPS: f64 = 600.0;
/// vLLM's default free-block watermark.
pub const VLLM_WATERMARK: f64 = 0.01;

impl Admission {
    /// Accepted names.
    pub const NAMES: [&'static str; 4] = ["max-utilization", "guaranteed-no-evict", "watermark", "sglang"];

    /// SGLang's defaults: ratio 0.7 falling to 0.098.
    pub const SGLANG: Admission = Admission::Sglang { init: 0.7, min: 0.7 * 0.14 };

    /// vLLM's default: a 1 % watermark.
    pub const VLLM: Admission = Admission::Watermark { fraction: VLLM_WATERMARK };

    /// The engine's own policy: TensorRT-LLM (and NIM) guaranteed no-evict, vLLM the 1 %
    /// watermark, SGLang its reservation ratio; gpt-fast and eager have no serving scheduler of
    /// their own and take the plain one.
    pub fn of_engine(engine: Engine) -> Admission {
        match engine {
            Engine::Trtllm | Engine::TrtllmPreXqa => Admission::GuaranteedNoEvict,
            Engine::Vllm | Engine::VllmV0 => Admission::VLLM,
            Engine::Sglang => Admission::SGLANG,
            Engine::GptFast | Engine::Eager => Admission::MaxUtilization,
        }
    }

    fn validate(&self) -> Result<()> {
        match *self {
            Admission::Watermark { fraction } if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) => {
                Err(Error::invalid("watermark", compact_f64(fraction), "a fraction of the KV blocks in [0, 1)"))
            }
            Admission::Sglang { init, min }
                if !(init.is_finite()
                    && min.is_finite()
                    && (0.0..=1.0).contains(&init)
                    && (0.0..=init).contains(&min)) =>
            {
                Err(Error::invalid(
                    "new_token_ratio",
                    format!("{}..{}", compact_f64(init), compact_f64(min)),
                    "ratios with 0 ≤ min ≤ init ≤ 1",
                ))
            }
            Admission::MaxUtilization
            | Admission::GuaranteedNoEvict
            | Admission::Watermark { .. }
            | Admission::Sglang { .. } => Ok(()),
        }
    }
}

impl std::str::FromStr for Admission {
    type Err = Error;
    /// A policy by name, with its engine's parameters (`watermark`: 1 %; `sglang`: 0.7 → 0.098).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "max-utilization" | "max_utilization" => Ok(Admission::MaxUtilization),
            "guaranteed-no-evict" | "guaranteed_no_evict" | "no-evict" => Ok(Admission::GuaranteedNoEvict),
            "watermark" | "vllm" => Ok(Admission::VLLM),
            "sglang" => Ok(Admission::SGLANG),
            _ => Err(Error::unknown_for("admission", "admission policy", s, Admission::NAMES)),
        }
    }
}

/// What a preemption does with the preempted sequence's KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preemption {
    /// Free it; the sequence prefills its prompt and generated tokens again when readmitted
    /// (vLLM's default since V0.4, TensorRT-LLM's and SGLang's only mode).
    Recompute,
    /// Copy it to host memory over the GPU's PCIe link and back when readmitted (vLLM's
    /// `--preemption-mode swap`): each direction costs `α + bytes ÷ (β · link_efficiency)` per
    /// sequence on `gpu.interconnect.pcie` (the KV bytes one GPU holds,
    /// [`super::kv_bytes_per_gpu`]), one sequence after another, added to the step that preempts
    /// or readmits it. Nothing is computed again.
    Swap,
}

impl Preemption {
    /// Accepted names.
    pub const NAMES: [&'static str; 2] = ["recompute", "swap"];
}

impl std::str::FromStr for Preemption {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "recompute" => Ok(Preemption::Recompute),
            "swap" => Ok(Preemption::Swap),
            _ => Err(Error::unknown_for("preemption", "preemption mode", s, Preemption::NAMES)),
        }
    }
}

/// vLLM's captured decode batch sizes, `[1, 2, 4] + list(range(8, 513, 8))`: 1, 2, 4, 8, 16, 24,
/// …, 512 (`batch_size_capture_list` in `vllm/config.py`, up to its default largest captured
/// batch, `max_capture_size = 512`; vLLM 0.6's `_BATCH_SIZES_TO_CAPTURE` in
/// `vllm/worker/model_runner.py` is the same list with `_BATCH_SIZE_ALIGNMENT = 8`, to 256).
/// Engines that pad use this list here (TensorRT-LLM's and SGLang's captured sizes differ in
/// detail).
pub fn vllm_capture_sizes() -> Arc<[u64]> {
    [1, 2, 4].into_iter().chain((1..=64).map(|i| 8 * i)).collect()
}

/// Whether decode steps replay captured CUDA graphs, padded to a captured batch size.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudaGraphs {
    /// Every step is timed at its own batch.
    Unpadded,
    /// A step whose sequences all decode runs the graph of the smallest captured size `≥ B`
    /// and is timed at that padded batch (each padding slot a dummy decode of one cached token,
    /// on the generation kernel); a larger decode batch, and every step with a prefill chunk,
    /// runs eagerly at its own size (vLLM pads decode-only batches this way,
    /// `CUDAGraphRunner`). A batch is not padded past the scheduler's most sequences per step:
    /// the padding slots are requests of the batch, and TensorRT-LLM's PyTorch backend runs
    /// such a batch at its own size
    /// (`_get_padded_batch` in `tensorrt_llm/_torch/pyexecutor/model_engine.py`: no padding when
    /// `padding_size + batch_size > max_batch_size`). vLLM's captured sizes end at its
    /// `max_num_seqs` (V0 rounds it up to the next captured size, `_get_max_graph_batch_size`:
    /// a `--max-seqs` that is not a captured size pads slightly less here than there). Sizes
    /// ascending, each ≥ 1.
    Padded(Arc<[u64]>),
}

impl std::str::FromStr for CudaGraphs {
    type Err = Error;
    /// `off` (unpadded), `vllm` (vLLM's captured sizes, [`vllm_capture_sizes`]), or the captured
    /// batch sizes as a list, `1,2,4,8,16,32,64,128,256,384,512,1024,2048,4096,8192` (an engine
    /// configured with its own, as TensorRT-LLM's `cuda_graph_config.batch_sizes` with
    /// `enable_padding: true`); a list is checked as [`CudaGraphs::Padded`]'s sizes are.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "off" => Ok(CudaGraphs::Unpadded),
            "vllm" => Ok(CudaGraphs::vllm()),
            _ if t.starts_with(|c: char| c.is_ascii_digit()) => {
                let sizes = t
                    .split(',')
                    .map(|x| {
                        x.trim().parse::<u64>().map_err(|_| {
                            Error::invalid(
                                "cuda_graphs",
                                format!("{s:?}"),
                                "off, vllm or captured batch sizes `1,2,4,8`",
                            )
                        })
                    })
                    .collect::<Result<Arc<[u64]>>>()?;
                let graphs = CudaGraphs::Padded(sizes);
                graphs.validate().map_err(|e| e.map_field(|_| "cuda_graphs".into()))?;
                Ok(graphs)
            }
            _ => Err(Error::unknown_for("cuda_graphs", "CUDA-graph padding", s, CudaGraphs::NAMES)),
        }
    }
}

/// Most captured sizes in [`CudaGraphs::Padded`].
pub const MAX_CAPTURE_SIZES: usize = 4096;

impl CudaGraphs {
    /// Accepted names.
    pub const NAMES: [&'static str; 2] = ["off", "vllm"];

    /// vLLM's captured sizes ([`vllm_capture_sizes`]).
    pub fn vllm() -> CudaGraphs {
        CudaGraphs::Padded(vllm_capture_sizes())
    }

    /// The batch a decode-only step of `batch` sequences is timed at, when a step holds at most
    /// `max_seqs` sequences: the smallest captured size `≥ batch` if that is at most `max_seqs`,
    /// else `batch` itself.
    pub fn padded(&self, batch: u64, max_seqs: u64) -> u64 {
        match self {
            CudaGraphs::Unpadded => batch,
            CudaGraphs::Padded(sizes) => match sizes.partition_point(|&s| s < batch) {
                i if i < sizes.len() && sizes[i] <= max_seqs => sizes[i],
                _ => batch,
            },
        }
    }

    /// Each fault named by what is wrong: no sizes or too many, a size of 0, a size not above the
    /// one before it (the two sizes).
    fn validate(&self) -> Result<()> {
        let CudaGraphs::Padded(s) = self else { return Ok(()) };
        let field = "cuda_graph_sizes";
        if s.is_empty() || s.len() > MAX_CAPTURE_SIZES {
            return Err(Error::invalid(
                field,
                format!("{} sizes", s.len()),
                format!("1 to {MAX_CAPTURE_SIZES} captured batch sizes"),
            ));
        }
        if s.contains(&0) {
            return Err(Error::invalid(field, "a size of 0", "batch sizes of at least 1"));
        }
        if let Some(w) = s.windows(2).find(|w| w[0] >= w[1]) {
            return Err(Error::invalid(
                field,
                format!("{} then {}", w[0], w[1]),
                "batch sizes in strictly ascending order, each once (`1,2,4,8`)",
            ));
        }
        Ok(())
    }
}

/// Whether the host's per-step work (scheduling, input preparation, sampling: the step's `host`
/// row, [`crate::roofline::TimeModel::host_step_s`]) holds the GPU up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostTime {
    /// After the GPU's step, as the ledger's step time adds it: `gpu + host`.
    Serial,
    /// Under the GPU's step (the next step is scheduled while one runs: vLLM V1's async
    /// scheduling, SGLang's overlap scheduler, TensorRT-LLM's C++ runtime): `max(gpu, host)`.
    Overlapped,
}

impl HostTime {
    /// Accepted names.
    pub const NAMES: [&'static str; 2] = ["serial", "overlapped"];

    /// vLLM V0 serial; the others overlapped.
    pub fn of_engine(engine: Engine) -> HostTime {
        match engine {
            Engine::VllmV0 | Engine::Eager => HostTime::Serial,
            Engine::Trtllm | Engine::TrtllmPreXqa | Engine::Vllm | Engine::Sglang | Engine::GptFast => {
                HostTime::Overlapped
            }
        }
    }
}

impl std::str::FromStr for HostTime {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "serial" => Ok(HostTime::Serial),
            "overlapped" | "async" => Ok(HostTime::Overlapped),
            _ => Err(Error::unknown_for("host_time", "host time", s, HostTime::NAMES)),
        }
    }
}

/// Which replica takes an arriving request (aggregated deployments of several instances).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    /// Replicas in turn.
    RoundRobin,
    /// A uniformly random replica, from the run's seed (its own stream: deterministic).
    Random,
    /// The replica holding the fewest requests, waiting or running (the first at a tie).
    LeastOutstanding,
    /// The replica with the smallest fraction of its KV blocks in use, then the fewest
    /// requests, then the first.
    KvUsage,
}

impl Router {
    /// Accepted names.
    pub const NAMES: [&'static str; 4] = ["round-robin", "random", "least-outstanding", "kv"];
}

impl std::str::FromStr for Router {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "round-robin" | "round_robin" | "rr" => Ok(Router::RoundRobin),
            "random" => Ok(Router::Random),
            "least-outstanding" | "least_outstanding" | "lor" => Ok(Router::LeastOutstanding),
            "kv" | "kv-usage" | "kv_usage" => Ok(Router::KvUsage),
            _ => Err(Error::unknown_for("router", "router", s, Router::NAMES)),
        }
    }
}

/// Most steps of one multi-step scheduling (`num_scheduler_steps`).
pub const MAX_SCHEDULER_STEPS: u64 = crate::limits::MAX_SIM_SCHEDULER_STEPS;
/// Deepest speculation (draft tokens per step).
pub const MAX_SPEC_DEPTH: u64 = crate::limits::MAX_SIM_SPEC_DEPTH;

/// A draft model's scenario, compared by identity.
#[derive(Debug, Clone)]
pub struct DraftModel(pub Arc<Scenario>);

impl PartialEq for DraftModel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Who proposes the draft tokens, and what one draft step costs.
#[derive(Debug, Clone, PartialEq)]
pub enum Draft {
    /// Heads on the target (MTP, EAGLE, Medusa): one draft step costs `fraction` of the target's
    /// decode step of the same batch (`0 ≤ fraction ≤ 1`).
    Heads {
        /// Cost of one draft step ÷ the target's decode step.
        fraction: f64,
    },
    /// A separate draft model: one draft step is its decode step of the same batch, timed by
    /// its own scenario (its model, GPU, precisions, layout and clock).
    Model(DraftModel),
}

/// Speculative decoding: each decode step verifies `depth + 1` tokens per sequence.
///
/// A step of a decoding sequence runs `k = depth` draft steps and then the target on `k + 1`
/// new tokens (the last accepted token and the `k` drafts), timed as one step whose chunks have
/// `k + 1` new tokens on top of the cache. The target keeps the drafts up to the first it
/// rejects, plus its own next token: with each draft accepted with probability `α` independently,
/// the tokens a step yields are `1 + (accepted prefix)`, with mean `(1 − α^(k+1)) / (1 − α)`
/// (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding",
/// ICML 2023, eq. 1), drawn per sequence and step from the run's seed. Near its last token a
/// sequence drafts only what its output has left.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculation {
    /// Draft tokens per step, `k` (1..=[`MAX_SPEC_DEPTH`]).
    pub depth: u64,
    /// Probability that the target accepts a draft token, `α ∈ [0, 1]`.
    pub acceptance: f64,
    /// The drafter.
    pub draft: Draft,
}

impl Speculation {
    /// Expected tokens per step of one sequence: `(1 − α^(k+1)) / (1 − α)`, `k + 1` at `α = 1`.
    pub fn expected_tokens_per_step(&self) -> f64 {
        let (a, k) = (self.acceptance, self.depth as i32);
        if a >= 1.0 {
            (k + 1) as f64
        } else {
            (1.0 - a.powi(k + 1)) / (1.0 - a)
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        if !(1..=MAX_SPEC_DEPTH).contains(&self.depth) {
            return Err(Error::invalid("spec_depth", self.depth, integer_in(1, MAX_SPEC_DEPTH)));
        }
        if !(self.acceptance.is_finite() && (0.0..=1.0).contains(&self.acceptance)) {
            return Err(Error::invalid("spec_acceptance", compact_f64(self.acceptance), "a probability in [0, 1]"));
        }
        if let Draft::Heads { fraction } = self.draft {
            if !(fraction.is_finite() && (0.0..=1.0).contains(&fraction)) {
                return Err(Error::invalid("draft_fraction", compact_f64(fraction), "a fraction in [0, 1]"));
            }
        }
        Ok(())
    }
}

/// The limits of one engine step as an engine sets them when none are given: the most sequences
/// in a step and the most new tokens (a prompt's chunk is at most the latter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerLimits {
    /// Most sequences in one step ([`super::SimConfig::max_seqs`]).
    pub max_seqs: u64,
    /// Most new tokens in one step ([`super::SimConfig::max_batched_tokens`]).
    pub max_batched_tokens: u64,
}

/// Bytes in a GiB (the engines compare GPU memory in binary units).
const GIB_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

/// SGLang's most running requests when none is given: `min(clamp(KV tokens ÷ context length ×
/// 512, 2048, 4096), KV tokens ÷ 2)` (`ModelRunner`'s `max_num_reqs`), 2048 wherever the KV cache
/// holds at most four context lengths of tokens, as it does for the models and GPUs here; its
/// admission is then bounded by the KV cache ([`Admission::Sglang`]), not by a count.
pub const SGLANG_MAX_RUNNING_REQUESTS: u64 = 2048;

impl SchedulerLimits {
    /// The simulator's plain limits, for an engine whose own are not taken from a source here:
    /// 256 sequences and 8,192 tokens.
    pub const PLAIN: SchedulerLimits = SchedulerLimits { max_seqs: 256, max_batched_tokens: 8192 };

    /// The limits `engine` sets by default on `gpu` (its memory as the engine reads it):
    ///
    /// * **vLLM** (V1, the OpenAI server): on a GPU of at least 70 GiB that is not an A100,
    ///   `max_num_seqs` 1024 and `max_num_batched_tokens` 8192, else 256 and 2048
    ///   (`EngineArgs.get_batch_defaults` in `vllm/engine/arg_utils.py`: PR #12369 raised the
    ///   H100/H200 token budget, PR #16158 kept 1024 sequences there only, PR #17885 the A100
    ///   exception, a regression measured there);
    /// * **SGLang**: [`SGLANG_MAX_RUNNING_REQUESTS`], and a prefill chunk of
    ///   `chunked_prefill_size` by memory: 2,048 tokens below 35 GiB, 4,096 below 60 GiB, 8,192
    ///   below 160 GiB, else 16,384 (`ServerArgs._handle_gpu_memory_settings` in
    ///   `python/sglang/srt/server_args.py`; its comments: A10/4090, A100 40 GB/L40, H100/A100/
    ///   H20/H200, B200/MI300);
    /// * the others [`SchedulerLimits::PLAIN`]: vLLM V0's own are the same 256 sequences (its token
    ///   budget follows the model's context with chunked prefill off, which a run states), and
    ///   TensorRT-LLM's are not taken from a source here.
    pub fn of_engine(engine: Engine, gpu: &crate::hardware::Gpu) -> SchedulerLimits {
        let gib = gpu.memory_bytes / GIB_BYTES;
        match engine {
            Engine::Vllm => {
                let a100 = gpu.name.to_ascii_lowercase().contains("a100");
                if gib >= 70.0 && !a100 {
                    SchedulerLimits { max_seqs: 1024, max_batched_tokens: 8192 }
                } else {
                    SchedulerLimits { max_seqs: 256, max_batched_tokens: 2048 }
                }
            }
            Engine::Sglang => {
                let chunk = if gib < 35.0 {
                    2048
                } else if gib < 60.0 {
                    4096
                } else if gib < 160.0 {
                    8192
                } else {
                    16384
                };
                SchedulerLimits { max_seqs: SGLANG_MAX_RUNNING_REQUESTS, max_batched_tokens: chunk }
            }
            Engine::Trtllm | Engine::TrtllmPreXqa | Engine::VllmV0 | Engine::GptFast | Engine::Eager => {
                SchedulerLimits::PLAIN
            }
        }
    }
}

/// An engine's scheduler as the simulator runs it: the policy fields of [`super::SimConfig`].
#[derive(Debug, Clone, PartialEq)]
pub struct EnginePolicy {
    /// Admission control.
    pub admission: Admission,
    /// Host time, serial or overlapped.
    pub host: HostTime,
    /// CUDA-graph padding of decode batches.
    pub cuda_graphs: CudaGraphs,
}

impl EnginePolicy {
    /// The engine's defaults: its admission ([`Admission::of_engine`]), its host time
    /// ([`HostTime::of_engine`]), and vLLM's captured sizes for the engines that pad a decode
    /// batch up to a captured CUDA graph by default (vLLM's `CUDAGraphRunner`, SGLang's
    /// `cuda_graph_bs`). TensorRT-LLM does not (`CudaGraphConfig.enable_padding` is `False` by
    /// default; its TensorRT runtime captures each batch size it meets), and gpt-fast's
    /// `torch.compile` graphs and eager are timed unpadded too.
    pub fn of_engine(engine: Engine) -> EnginePolicy {
        let padded = matches!(engine.family(), Engine::Vllm | Engine::Sglang);
        EnginePolicy {
            admission: Admission::of_engine(engine),
            host: HostTime::of_engine(engine),
            cuda_graphs: if padded { CudaGraphs::vllm() } else { CudaGraphs::Unpadded },
        }
    }
}

/// Check the policy fields of a configuration (errors name the field).
pub(super) fn validate(cfg: &super::SimConfig) -> Result<()> {
    cfg.admission.validate()?;
    cfg.cuda_graphs.validate()?;
    if !(1..=MAX_SCHEDULER_STEPS).contains(&cfg.scheduler_steps) {
        return Err(Error::invalid("scheduler_steps", cfg.scheduler_steps, integer_in(1, MAX_SCHEDULER_STEPS)));
    }
    if let Some(s) = &cfg.speculation {
        s.validate()?;
        if cfg.scheduler_steps > 1 {
            return Err(Error::invalid(
                "scheduler_steps",
                cfg.scheduler_steps,
                "1 with speculative decoding (engines do not combine multi-step scheduling with it)",
            ));
        }
    }
    if let Some(c) = cfg.max_concurrency {
        if !(1..=super::MAX_REQUESTS).contains(&c) {
            return Err(Error::invalid("max_concurrency", c, integer_in(1, super::MAX_REQUESTS)));
        }
    }
    if cfg.warmup_requests >= cfg.offered_requests() {
        return Err(Error::invalid(
            "warmup",
            cfg.warmup_requests,
            format!("fewer requests than the run offers ({})", cfg.offered_requests()),
        ));
    }
    Ok(())
}
