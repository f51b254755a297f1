//! Measured kernel times: the tables derived from NVIDIA AIConfigurator's per-kernel database
//! (its git repository at commit 095f58a5, Apache-2.0; ten GPUs, one engine version each;
//! `crates/core/data/kernels/`, written by `scripts/kernel-data/fetch.py`, format in
//! `scripts/kernel-data/README.md`), embedded with
//! `include_bytes!` and read lazily: a file is parsed the first time a lookup needs it (one
//! [`std::sync::OnceLock`] per file), so code that never asks pays nothing.
//!
//! Every lookup returns **microseconds per kernel call** (`_us`), or `None` where there is no
//! measured data to stand on (a GPU or engine without tables, a key never measured, a
//! non-positive or non-finite query): the caller falls back to its roofline. Nothing is invented
//! silently; the rules below are the only way a number is made from the measured ones.
//!
//! # Interpolation (one rule for every table)
//!
//! Every grid axis (GEMM m, n, k; attention batch and length; collective message size) and every
//! numeric key (attention heads and KV heads, MLA heads, GPU count) is interpolated the same way:
//!
//! * **Log space.** Between the two bracketing measured values `x₀ ≤ x ≤ x₁` with latencies
//!   `t₀`, `t₁`: `ln t = ln t₀ + (ln x − ln x₀)/(ln x₁ − ln x₀) · (ln t₁ − ln t₀)`, i.e.
//!   `t = t₀^(1−w) · t₁^w`. Several axes nest (multilinear in `(ln x, ln t)`), outermost axis
//!   first.
//! * **Exact at measured points.** A query that lands on a measured grid point returns that
//!   point's decoded value bit for bit (`0.001 · exp(code / 2048)` µs), whatever its neighbours.
//! * **Below the smallest measured value: clamp.** The smallest point's latency (a kernel never
//!   gets faster than its smallest measured size: launch and latency floors).
//! * **Above the largest: scale** from the largest measured point by `(x / x_max)^p`, with the
//!   axis's power `p` ([`AXIS_POWERS`]): `p = 1` where time is linear in the size once the GPU is
//!   full (GEMM m, n, k; batch; decode length; message size; heads), `p = 2` for the prompt
//!   length of prefill attention (causal attention FLOPs grow with isl²). GPU count is not
//!   extrapolated (beyond 8 GPUs a collective leaves the node): `None`.
//! * **Unmeasured cells** (code `0xFFFF`, e.g. large batch × length corners of attention): the
//!   nearest measured cells along that axis stand in: between two measured neighbours it
//!   interpolates, beyond the last measured one it scales as above, below the first it clamps.
//!   A line with no measured cell at all gives `None` for that line, and the next axis out looks
//!   further in turn.
//!
//! # Which kernel, where several were measured
//!
//! * Attention: the engine's default kernel where AIConfigurator's `attention_lane_defaults.yaml`
//!   names one and it was measured for the key (sglang: `fa3` on H100/H200, `triton` on B200);
//!   otherwise the fastest of the kernels measured for the key, at the query point.
//! * Custom all-reduce: the CUDA-graph variant where the engine has eager and graph variants (the
//!   engines capture decode in CUDA graphs); trtllm has one kernel.
//! * MLA batched matmuls: the fastest kernel measured for (op, dtype).
//! * Fused MoE: the uniform-routing (`balanced`) tables only, at the model's exact hidden and
//!   intermediate sizes, top-k, experts and (TP, EP) split, interpolated in tokens alone
//!   ([`moe_us`]); skewed-routing tables are not kept.
//! * Attention and MLA tables are read only inside the head groups (query heads per KV head)
//!   they measured: a numeric key interpolates between measured values, but a group the tables
//!   never held is not reached.
//! * Gated DeltaNet (`linear_attention`): the fastest kernel of the phase's kind ([`LinearKernel`]),
//!   at a measured key-head count only, value heads between those measured there ([`linear_us`]).
//! * MLA cores are keyed by heads per GPU (`tp_size` × heads is the model's head count); where a
//!   64-head and a 128-head model were measured at one per-GPU count (a100), the 128-head
//!   model's table (DeepSeek-V3) is used.
//!
//! # Cost
//!
//! A lookup is a few binary searches over sorted axes and at most 2^d cells read per table, in
//! log space (`ln` of the latency is the stored code ÷ 2048, so one `exp` per lookup): no
//! allocation. About 0.1 µs for a GEMM and 0.15–0.35 µs for attention on one core
//! (`cargo bench -p llm-ledger-core --bench kernels`).

mod embedded;
mod grid;
mod table;
mod version;

use crate::error::{Error, Result};
use crate::hardware::{builtin_gpus, Gpu};
use crate::model::Recurrence;
pub use crate::operator::HyperPart;
use std::fmt;
use std::str::FromStr;

pub use embedded::{embedded_files, EmbeddedFile, FileStats, Tables};
pub use table::decode_us;
pub use version::EngineVersion;

/// Where the tables come from (recorded in every file's header and in `manifest.toml`).
pub const SOURCE: &str = "NVIDIA AIConfigurator, github.com/ai-dynamo/aiconfigurator at commit 095f58a5 (Apache-2.0)";

/// Extrapolation power per axis name, above the largest measured value: latency scales by
/// `(x / x_max)^p`. Axes not listed (and `num_gpus`) are not extrapolated upwards.
pub const AXIS_POWERS: &[(&str, f64)] = &[
    ("m", 1.0),
    ("n", 1.0),
    ("k", 1.0),
    ("batch_size", 1.0),
    ("isl", 2.0),
    ("step", 1.0),
    ("num_tokens", 1.0),
    ("message_size", 1.0),
    ("num_heads", 1.0),
    ("num_kv_heads", 1.0),
    ("seq_len", 1.0),
    ("num_k_heads", 1.0),
    ("num_v_heads", 1.0),
];

/// A GPU with measured kernel tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelGpu {
    /// NVIDIA A100-SXM4-80GB (catalogue `a100-80gb-sxm`).
    A100Sxm,
    /// NVIDIA H100 80GB HBM3 SXM (catalogue `h100-sxm`).
    H100Sxm,
    /// NVIDIA H200 SXM (catalogue `h200`).
    H200Sxm,
    /// NVIDIA B200 SXM (catalogue `b200`).
    B200Sxm,
    /// NVIDIA L40S (catalogue `l40s`).
    L40s,
    /// NVIDIA B300 SXM (catalogue `b300`).
    B300Sxm,
    /// NVIDIA GB200 (catalogue `gb200`).
    Gb200,
    /// NVIDIA GB300 (catalogue `gb300`).
    Gb300,
    /// NVIDIA RTX PRO 6000 Blackwell Server Edition (catalogue `rtx-pro-6000`).
    RtxPro6000Server,
    /// Intel Arc Pro B60 (catalogue `b60`; vLLM's kernels only, oneCCL's collectives).
    B60,
}

impl KernelGpu {
    /// Every GPU with tables.
    pub const ALL: [KernelGpu; 10] = [
        KernelGpu::A100Sxm,
        KernelGpu::H100Sxm,
        KernelGpu::H200Sxm,
        KernelGpu::B200Sxm,
        KernelGpu::L40s,
        KernelGpu::B300Sxm,
        KernelGpu::Gb200,
        KernelGpu::Gb300,
        KernelGpu::RtxPro6000Server,
        KernelGpu::B60,
    ];

    /// The data folder's name (`h100_sxm`), AIConfigurator's system name.
    pub fn dir(self) -> &'static str {
        match self {
            KernelGpu::A100Sxm => "a100_sxm",
            KernelGpu::H100Sxm => "h100_sxm",
            KernelGpu::H200Sxm => "h200_sxm",
            KernelGpu::B200Sxm => "b200_sxm",
            KernelGpu::L40s => "l40s",
            KernelGpu::B300Sxm => "b300_sxm",
            KernelGpu::Gb200 => "gb200",
            KernelGpu::Gb300 => "gb300",
            KernelGpu::RtxPro6000Server => "rtx_pro_6000_server",
            KernelGpu::B60 => "b60",
        }
    }

    /// The GPU with tables in the folder `dir` (`h100_sxm`); `None` for any other name.
    pub fn from_dir(dir: &str) -> Option<KernelGpu> {
        KernelGpu::ALL.into_iter().find(|g| g.dir() == dir)
    }

    /// The measured GPU for a resolved [`Gpu`]: its catalogue entry's `kernel_tables`, and
    /// `Some` only when it *is* the catalogue's entry (same numbers), so a user's GPU, even one
    /// reusing a catalogue name with other figures, gets `None`.
    pub fn for_gpu(gpu: &Gpu) -> Option<KernelGpu> {
        let k = KernelGpu::from_dir(gpu.kernel_tables.as_deref()?)?;
        // The catalogue's own entry is usually this very value (scenarios share it); else equal
        // figures, compared field by field.
        builtin_gpus().iter().any(|b| std::ptr::eq(&**b, gpu) || (b.name == gpu.name && **b == *gpu)).then_some(k)
    }

    /// The SM generation (compute capability × 10; the engine's default attention kernel
    /// depends on it); 0 for a GPU that is not NVIDIA's.
    fn sm(self) -> u32 {
        match self {
            KernelGpu::A100Sxm => 80,
            KernelGpu::H100Sxm | KernelGpu::H200Sxm => 90,
            KernelGpu::B200Sxm | KernelGpu::Gb200 => 100,
            KernelGpu::B300Sxm | KernelGpu::Gb300 => 103,
            KernelGpu::L40s => 89,
            KernelGpu::RtxPro6000Server => 120,
            KernelGpu::B60 => 0,
        }
    }

    /// The engines whose kernels were measured on it: the three, or vLLM alone on the Arc Pro
    /// B60 (AIConfigurator's only XPU collector).
    pub fn engines(self) -> &'static [Engine] {
        match self {
            KernelGpu::B60 => &[Engine::Vllm],
            KernelGpu::A100Sxm
            | KernelGpu::H100Sxm
            | KernelGpu::H200Sxm
            | KernelGpu::B200Sxm
            | KernelGpu::L40s
            | KernelGpu::B300Sxm
            | KernelGpu::Gb200
            | KernelGpu::Gb300
            | KernelGpu::RtxPro6000Server => &Engine::ALL,
        }
    }

    /// Whether its collectives were measured over PCIe (no NVLink between its GPUs: the L40S,
    /// RTX PRO 6000 and Arc Pro B60 servers) rather than NVLink.
    pub fn collectives_over_pcie(self) -> bool {
        match self {
            KernelGpu::L40s | KernelGpu::RtxPro6000Server | KernelGpu::B60 => true,
            KernelGpu::A100Sxm
            | KernelGpu::H100Sxm
            | KernelGpu::H200Sxm
            | KernelGpu::B200Sxm
            | KernelGpu::B300Sxm
            | KernelGpu::Gb200
            | KernelGpu::Gb300 => false,
        }
    }
}

/// The measured kernel table an operator's time was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelTable {
    /// Dense GEMMs (`gemm`).
    Gemm,
    /// Attention: prefill (context) or decode (generation) kernels.
    Attention,
    /// Multi-head latent attention's core.
    Mla,
    /// MLA's batched absorption GEMMs (`mla_bmm`).
    MlaBatchedGemm,
    /// The engine's custom all-reduce.
    AllReduce,
    /// NCCL's collectives.
    Nccl,
    /// The routed experts' fused-MoE kernel of one layer (`moe`).
    Moe,
    /// A Gated DeltaNet layer's short convolution and delta-rule kernels (`linear_attention`).
    LinearAttention,
    /// A Kimi Delta Attention layer's short convolutions and delta-rule kernels (`kda`).
    Kda,
    /// A Mamba-2 layer's short convolution (`mamba2`; the tables hold no scan kernel).
    Mamba2,
    /// A hyper-connection site's mixing kernels (`mhc`: DeepSeek-V4's `pre` and `post`).
    Mhc,
}

impl KernelTable {
    /// Every table family.
    pub const ALL: [KernelTable; 11] = [
        KernelTable::Gemm,
        KernelTable::Attention,
        KernelTable::Mla,
        KernelTable::MlaBatchedGemm,
        KernelTable::AllReduce,
        KernelTable::Nccl,
        KernelTable::Moe,
        KernelTable::LinearAttention,
        KernelTable::Kda,
        KernelTable::Mamba2,
        KernelTable::Mhc,
    ];

    /// The table's name, as its data file is named.
    pub fn name(self) -> &'static str {
        match self {
            KernelTable::Gemm => "gemm",
            KernelTable::Attention => "attention",
            KernelTable::Mla => "mla",
            KernelTable::MlaBatchedGemm => "mla_bmm",
            KernelTable::AllReduce => "custom_allreduce",
            KernelTable::Nccl => "nccl",
            KernelTable::Moe => "moe",
            KernelTable::LinearAttention => "linear_attention",
            KernelTable::Kda => "kda",
            KernelTable::Mamba2 => "mamba2",
            KernelTable::Mhc => "mhc",
        }
    }
}

/// An inference engine whose kernels were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// NVIDIA TensorRT-LLM.
    Trtllm,
    /// vLLM.
    Vllm,
    /// SGLang.
    Sglang,
}

impl Engine {
    /// Every engine, in the order the accepted names are listed.
    pub const ALL: [Engine; 3] = [Engine::Trtllm, Engine::Vllm, Engine::Sglang];

    /// The accepted names (what [`Engine::from_str`] takes and [`fmt::Display`] prints).
    pub const NAMES: [&'static str; 3] = ["trtllm", "vllm", "sglang"];

    /// The lower-case name (`trtllm`), also the data folder's name.
    pub fn as_str(self) -> &'static str {
        Engine::NAMES[self as usize]
    }
}

impl FromStr for Engine {
    type Err = Error;
    /// Case-insensitive; `tensorrt-llm` and `trt-llm` are accepted for `trtllm`.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "trtllm" | "trt-llm" | "tensorrt-llm" | "tensorrt_llm" => Ok(Engine::Trtllm),
            "vllm" => Ok(Engine::Vllm),
            "sglang" => Ok(Engine::Sglang),
            _ => Err(Error::unknown("engine", s, Engine::NAMES).about("engine")),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The number format of a measured GEMM (the tables' `dtype` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GemmDtype {
    /// bf16 × bf16 (`bfloat16`): every GPU and engine.
    Bf16,
    /// fp8 per-tensor scaled (`fp8`): every GPU but A100.
    Fp8,
    /// fp8 with DeepSeek-style 128-block scales (`fp8_block`): Hopper and Blackwell, the L40S
    /// (TensorRT-LLM, vLLM) and the RTX PRO 6000 (TensorRT-LLM, vLLM).
    Fp8Block,
    /// NVFP4 (`nvfp4`): B200, B300, GB200, GB300 and the RTX PRO 6000.
    Nvfp4,
    /// int4 weights, bf16 activations, W4A16 (`int4_wo`): A100 trtllm only.
    Int4WeightOnly,
    /// int8 weights, bf16 activations, W8A16 (`int8_wo`): A100 trtllm only.
    Int8WeightOnly,
    /// SmoothQuant W8A8 (`sq`): A100 trtllm only.
    SmoothQuant,
}

impl GemmDtype {
    /// Every GEMM format with tables somewhere.
    pub const ALL: [GemmDtype; 7] = [
        GemmDtype::Bf16,
        GemmDtype::Fp8,
        GemmDtype::Fp8Block,
        GemmDtype::Nvfp4,
        GemmDtype::Int4WeightOnly,
        GemmDtype::Int8WeightOnly,
        GemmDtype::SmoothQuant,
    ];

    /// Whether `engine`'s GEMM table for this format was timed inside a CUDA graph, as the
    /// engines run their decode steps. vLLM's collector times its `fp8_block` GEMMs eagerly
    /// (AIConfigurator `collector/vllm/collect_gemm.py`: `use_cuda_graph=gemm_type !=
    /// "fp8_block"`), so each of their times holds the host's dispatch of the Python layer and
    /// its activation-quantisation launches: 150–290 µs for a 1 × 32 × 32 GEMM on H100, H200,
    /// B200, B300, L40S and the RTX PRO 6000, 420–640 µs on GB200 and GB300, where TensorRT-LLM's
    /// and SGLang's fp8_block kernels take 3–12 µs. A clock of a CUDA-graph engine does not read
    /// such a table.
    pub fn timed_in_cuda_graphs(self, engine: Engine) -> bool {
        !(engine == Engine::Vllm && self == GemmDtype::Fp8Block)
    }

    /// The tables' name (`bfloat16`, `fp8_block`, `int4_wo` …).
    pub fn as_str(self) -> &'static str {
        match self {
            GemmDtype::Bf16 => "bfloat16",
            GemmDtype::Fp8 => "fp8",
            GemmDtype::Fp8Block => "fp8_block",
            GemmDtype::Nvfp4 => "nvfp4",
            GemmDtype::Int4WeightOnly => "int4_wo",
            GemmDtype::Int8WeightOnly => "int8_wo",
            GemmDtype::SmoothQuant => "sq",
        }
    }
}

/// The number format of attention math or of the KV cache (the tables' `attn_dtype`,
/// `kv_cache_dtype`, `mla_dtype` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttnDtype {
    /// `bfloat16`.
    Bf16,
    /// `fp8`.
    Fp8,
}

impl AttnDtype {
    /// The tables' name.
    pub fn as_str(self) -> &'static str {
        match self {
            AttnDtype::Bf16 => "bfloat16",
            AttnDtype::Fp8 => "fp8",
        }
    }
}

/// Prefill (context) or decode (generation) attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionPhase {
    /// Whole prompts, no cached prefix: `length` = prompt tokens per sequence (`isl`).
    Context,
    /// One new token per sequence: `length` = tokens already in the KV cache (`step`).
    Generation,
}

/// One attention kernel call: one layer, the whole batch, heads per GPU (after tensor
/// parallelism). Does not include the QKV and output projections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionQuery {
    /// Prefill or decode.
    pub phase: AttentionPhase,
    /// Math format of the attention (the tables' `attn_dtype`).
    pub dtype: AttnDtype,
    /// Format of the KV cache.
    pub kv_dtype: AttnDtype,
    /// Head dimension (64, 128, 192, 256, 512 measured); matched exactly.
    pub head_dim: u32,
    /// Query heads per GPU.
    pub heads: f64,
    /// KV heads per GPU.
    pub kv_heads: f64,
    /// Sliding window in tokens; 0 = full attention.
    pub window: u32,
    /// Sequences in the batch.
    pub batch: f64,
    /// Context: prompt tokens per sequence; generation: tokens already cached per sequence.
    pub length: f64,
}

/// One MLA attention core call (DeepSeek-style latent attention; one layer, the whole batch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MlaQuery {
    /// Prefill or decode.
    pub phase: AttentionPhase,
    /// Math format (`mla_dtype`; bf16 measured).
    pub dtype: AttnDtype,
    /// KV cache format.
    pub kv_dtype: AttnDtype,
    /// Query heads per GPU (128 / TP for DeepSeek-V3).
    pub heads: f64,
    /// Sequences in the batch.
    pub batch: f64,
    /// As in [`AttentionQuery::length`].
    pub length: f64,
}

/// The batched matmul around MLA decode (the tables' `op_name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlaBmm {
    /// `mla_gen_pre`: q_nope × W_UK (the absorption before attention).
    Pre,
    /// `mla_gen_post`: attention output × W_UV (after attention).
    Post,
}

/// The number format of a measured fused-MoE kernel (the tables' `moe_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoeDtype {
    /// 16-bit weights and math (`bfloat16`).
    Bf16,
    /// fp8 weights and activations, per-tensor scales (`fp8`).
    Fp8,
    /// fp8 weights in 128 × 128 blocks (`fp8_block`).
    Fp8Block,
    /// NVFP4 weights and activations (`nvfp4`).
    NvFp4,
    /// MXFP4 weights, 16-bit activations (`w4a16_mxfp4`).
    W4a16MxFp4,
    /// MXFP4 weights, MXFP8 activations (`w4a8_mxfp4_mxfp8`).
    W4a8MxFp4,
    /// int4 weight-only (`int4_wo`).
    Int4WeightOnly,
}

impl MoeDtype {
    /// The tables' name.
    pub fn as_str(self) -> &'static str {
        match self {
            MoeDtype::Bf16 => "bfloat16",
            MoeDtype::Fp8 => "fp8",
            MoeDtype::Fp8Block => "fp8_block",
            MoeDtype::NvFp4 => "nvfp4",
            MoeDtype::W4a16MxFp4 => "w4a16_mxfp4",
            MoeDtype::W4a8MxFp4 => "w4a8_mxfp4_mxfp8",
            MoeDtype::Int4WeightOnly => "int4_wo",
        }
    }
}

/// One fused-MoE kernel call: one layer's routed experts for the whole step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeQuery {
    /// Weight and math format.
    pub dtype: MoeDtype,
    /// Token width into the experts.
    pub hidden: u64,
    /// Each expert's intermediate size (the model's).
    pub intermediate: u64,
    /// Experts per token.
    pub top_k: u64,
    /// Routed experts (the model's).
    pub experts: u64,
    /// Tensor-parallel GPUs splitting each expert.
    pub tp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// Tokens entering the layer.
    pub tokens: f64,
}

/// One of a recurrent layer's own kernels (its projections are GEMMs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinearKernel {
    /// The depthwise causal convolution over the mixer's inputs (`causal_conv1d_fn*` over a
    /// prompt, `causal_conv1d_update` for one decode token).
    Conv,
    /// The delta rule over the state (Gated DeltaNet: `chunk_gated_delta_rule*` over a prompt,
    /// `fused_recurrent_gated_delta_rule*` for one decode token; Kimi Delta Attention:
    /// `chunk_kda`, and `kda_fused_decode` or `fused_recurrent_kda_packed_decode`). Mamba-2's
    /// scan was not measured (AIConfigurator times it from its bytes).
    DeltaRule,
    /// One decode step's convolution and delta rule as one kernel: SGLang's `kda_fused_decode`,
    /// measured in place of the two on the shards it covers (Kimi-K3's 12-head shard:
    /// `collector/sglang/collect_kda.py`, `_fused_decode_module`). Kimi Delta Attention only.
    FusedDecode,
}

impl LinearKernel {
    /// Whether the measured kernel named `name` is this one of `rule` in `phase`, by the names
    /// the collectors record (`collector/<engine>/collect_gdn.py`, `collect_kda.py`,
    /// `collector/trtllm/collect_mamba2.py`).
    fn is(self, rule: Recurrence, phase: AttentionPhase, name: &str) -> bool {
        match (self, phase) {
            (LinearKernel::Conv, AttentionPhase::Context) => match rule {
                Recurrence::GatedDelta | Recurrence::Mamba2 => name == "causal_conv1d_fn",
                // q, k and v convolved by three calls, timed as one row.
                Recurrence::KimiDelta => name == "causal_conv1d_fn_qkv3",
            },
            (LinearKernel::Conv, AttentionPhase::Generation) => name == "causal_conv1d_update",
            (LinearKernel::DeltaRule, AttentionPhase::Context) => match rule {
                Recurrence::GatedDelta => name.starts_with("chunk_gated_delta_rule"),
                Recurrence::KimiDelta => name == "chunk_kda",
                Recurrence::Mamba2 => false,
            },
            (LinearKernel::DeltaRule, AttentionPhase::Generation) => match rule {
                Recurrence::GatedDelta => name.starts_with("fused_recurrent_gated_delta_rule"),
                Recurrence::KimiDelta => name == "kda_fused_decode" || name == "fused_recurrent_kda_packed_decode",
                Recurrence::Mamba2 => false,
            },
            (LinearKernel::FusedDecode, AttentionPhase::Generation) => {
                rule == Recurrence::KimiDelta && name == "kda_fused_decode"
            }
            (LinearKernel::FusedDecode, AttentionPhase::Context) => false,
        }
    }
}

/// The table family holding `rule`'s measured kernels.
pub fn recurrent_table(rule: Recurrence) -> KernelTable {
    match rule {
        Recurrence::GatedDelta => KernelTable::LinearAttention,
        Recurrence::KimiDelta => KernelTable::Kda,
        Recurrence::Mamba2 => KernelTable::Mamba2,
    }
}

/// Bytes per element of the recurrent state in `rule`'s measured delta-rule kernels: bf16 for
/// Gated DeltaNet (`collector/<engine>/collect_gdn.py`: `gdn_state` of `torch.bfloat16`),
/// float32 for Kimi Delta Attention (`collector/sglang/collect_kda.py`: `recurrent_state` of
/// `torch.float32`); Mamba-2's scan was not measured (`None`).
pub fn collected_state_element_bytes(rule: Recurrence) -> Option<f64> {
    match rule {
        Recurrence::GatedDelta => Some(2.0),
        Recurrence::KimiDelta => Some(4.0),
        Recurrence::Mamba2 => None,
    }
}

/// One recurrent-layer kernel call: one layer, a batch of sequences, heads per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearQuery {
    /// The update rule, whose table answers.
    pub rule: Recurrence,
    /// Which kernel.
    pub kernel: LinearKernel,
    /// A prompt (`Context`, `seq_len` its tokens) or one decode token (`Generation`, `seq_len` 1).
    pub phase: AttentionPhase,
    /// Query/key heads per GPU (Mamba-2: B and C groups).
    pub key_heads: f64,
    /// Value heads per GPU (Mamba-2: x heads).
    pub value_heads: f64,
    /// Query/key head size (Mamba-2: the state size).
    pub key_head_dim: f64,
    /// Value head size.
    pub value_head_dim: f64,
    /// Sequences.
    pub batch: f64,
    /// Tokens per sequence.
    pub seq_len: f64,
}

/// A collective operation measured with NCCL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    /// `all_gather`.
    AllGather,
    /// `all_reduce`.
    AllReduce,
    /// `alltoall`.
    AllToAll,
    /// `reduce_scatter`.
    ReduceScatter,
}

impl Collective {
    /// The tables' `op_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            Collective::AllGather => "all_gather",
            Collective::AllReduce => "all_reduce",
            Collective::AllToAll => "alltoall",
            Collective::ReduceScatter => "reduce_scatter",
        }
    }
}

/// Time of one (m × k) · (k × n) matmul in `dtype` on `gpu` with `engine`'s kernels, µs.
/// m = tokens (rows of the activation), n = output features, k = input features. Grid: m 1…32768
/// (74 values, tile-boundary pairs like 256/257), n and k 32…65536; outside it the module's
/// rules apply (clamp below, linear in m, n, k above). `None` where the GPU/engine has no table
/// for `dtype` (e.g. fp8 on A100, nvfp4 off B200) or a size is not positive and finite.
pub fn gemm_us(t: &Tables, dtype: GemmDtype, m: f64, n: f64, k: f64) -> Option<f64> {
    embedded::gemm_us(t, dtype, m, n, k)
}

/// The fastest measured time for a GEMM of **at least** `m` rows, µs: `min over m' ≥ m` of
/// [`gemm_us`]`(m', n, k)` on the measured grid, interpolated by the same rules. A GEMM of m rows
/// can always run as one of m' ≥ m rows (pad the activation), so this is an achievable time, and
/// it is non-decreasing in m: the raw tables are not, at launch-bound shapes the run-to-run noise
/// exceeds the change with m (H200 trtllm bf16, n 768, k 2048: 7.65 µs at m = 1, 5.42 µs at
/// m = 16). It equals [`gemm_us`] at every measured point where the table already grows with m.
/// The clock uses this one, so that a bigger batch is never faster.
pub fn gemm_envelope_us(t: &Tables, dtype: GemmDtype, m: f64, n: f64, k: f64) -> Option<f64> {
    embedded::gemm_envelope_us(t, dtype, m, n, k)
}

/// The measured grid of [`gemm_us`]: the m, n and k values (sorted), or `None` where there is no
/// table.
pub fn gemm_axes(t: &Tables, dtype: GemmDtype) -> Option<[&'static [f64]; 3]> {
    embedded::gemm_axes(t, dtype)
}

/// Time of one attention kernel call (one layer), µs. Keys: the kernel (module docs), `dtype`,
/// `kv_dtype`, `head_dim` (exact), `window` (exact where measured; a window at least as long as
/// the sequence is full attention; otherwise decode reads `min(length, window)` cached tokens, so
/// it is full attention at `length = window`, and prefill is full attention scaled by
/// `2w/L − (w/L)²`, the causal band's share of the triangle), then heads and KV heads
/// interpolated in log space keeping the group size `heads / kv_heads` (KV heads outer), then
/// batch × length on the grid, on the tables' monotone envelope over batch and length (more or
/// longer sequences are never faster: the fastest measured time for at least this batch and
/// length).
pub fn attention_us(t: &Tables, q: &AttentionQuery) -> Option<f64> {
    embedded::attention_us(t, q)
}

/// Time of one MLA attention core call (one layer), µs: trtllm and sglang (vllm has only module
/// tables, not kept). Heads interpolated in log space, then batch × length on the grid.
pub fn mla_us(t: &Tables, q: &MlaQuery) -> Option<f64> {
    embedded::mla_us(t, q)
}

/// Time of one MLA batched matmul around decode attention, µs, for `heads` heads per GPU and
/// `tokens` tokens (the fastest measured kernel for the op and dtype), on the table's monotone
/// envelope over tokens (more tokens are never faster: GB200's TensorRT-LLM table is 1 % faster
/// at 9 tokens than at 6 for some head counts, measurement noise).
pub fn mla_bmm_us(t: &Tables, op: MlaBmm, dtype: AttnDtype, heads: f64, tokens: f64) -> Option<f64> {
    embedded::mla_bmm_us(t, op, dtype, heads, tokens)
}

/// Time of one layer's fused-MoE kernel (its routed experts' GEMMs, activation, permutes and
/// combine) under uniform routing, µs: the fastest kernel measured for the model's exact shape
/// and format at exactly this tensor and expert parallelism, the step's tokens interpolated in
/// log space on its monotone envelope (more tokens are never faster; below the first measured
/// count the first, above the last grown in proportion to the tokens). `None` where no kernel was
/// measured for the shape, the format or the split: a model or a split the tables never held is
/// timed by the fitted model.
pub fn moe_us(t: &Tables, q: &MoeQuery) -> Option<f64> {
    embedded::moe_us(t, q)
}

/// Time of one recurrent-layer kernel of one layer, µs, as `engine` runs it (the collectors'
/// states, [`collected_state_element_bytes`]), from the table of its rule: the fastest kernel measured for the query's kernel and phase, at exactly its key
/// heads per GPU and head sizes, its value heads within those measured at that count
/// (interpolated between them), batch and length interpolated and scaled as every table is.
/// `None` where no such kernel, key-head count or value-head range was measured.
pub fn linear_us(t: &Tables, q: &LinearQuery) -> Option<f64> {
    embedded::linear_us(t, q)
}

/// Time of one hyper-connection site's `part` (DeepSeek-V4's mHC `pre` or `post`) over `tokens`
/// tokens of `streams` residual streams of `hidden`, µs, as `engine` runs it: the fastest kernel
/// measured at exactly this hidden size and stream count, the tokens interpolated on the monotone
/// envelope (more tokens never faster). The source times a decoder layer's sites in one row and
/// `scripts/kernel-data` divides it by their number. `None` where the shape was not measured.
pub fn mhc_us(t: &Tables, part: HyperPart, hidden: u64, streams: u64, tokens: f64) -> Option<f64> {
    embedded::mhc_us(t, part, hidden, streams, tokens)
}

/// Time of one all-reduce of `bytes` bytes of bf16 (2 bytes per element) over `gpus` GPUs of
/// one node, µs, as `engine` runs it: the faster of its custom all-reduce kernel where it has one
/// measured for `gpus` (CUDA-graph variant) and NCCL ([`nccl_us`]), as the engines choose
/// between them; each on its monotone envelope over the message size. `gpus = 1` costs 0; `gpus` between
/// measured counts (2, 4, 8) interpolates in log space; above 8, `None`.
pub fn allreduce_us(t: &Tables, gpus: u32, bytes: f64) -> Option<f64> {
    embedded::allreduce_us(t, gpus, bytes)
}

/// Time of one NCCL collective moving `bytes` bytes (the per-GPU message) over `gpus` GPUs of one
/// node, µs, from the 16-bit (`half`) table: NCCL's message_size counts *elements*, so
/// `elements = bytes / 2`; on its monotone envelope over the message size (the fastest measured
/// time for at least this message). `gpus = 1` costs 0; above 8, `None`.
pub fn nccl_us(gpu: KernelGpu, op: Collective, gpus: u32, bytes: f64) -> Option<f64> {
    embedded::nccl_us(gpu, op, gpus, bytes)
}
