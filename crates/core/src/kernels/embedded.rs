//! The embedded files (`include_bytes!`), each parsed on first use ([`OnceLock`]), and the typed
//! lookups on them.

use super::table::{to_us, Envelope, Group, GroupPlan, KernelFile, OpSpec, Q};
use super::{
    AttentionPhase, AttentionQuery, AttnDtype, Collective, Engine, GemmDtype, KernelGpu, LinearQuery, MlaBmm, MlaQuery,
    MoeQuery,
};
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::sync::OnceLock;

/// A kernel operation with its own table files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Gemm,
    ContextAttention,
    GenerationAttention,
    ContextMla,
    GenerationMla,
    MlaBmm,
    CustomAllreduce,
    Nccl,
    Moe,
    LinearAttention,
}

const ATTENTION_KEYS: &[&str] =
    &["kernel", "attn_dtype", "kv_cache_dtype", "head_dim", "window_size", "num_heads", "num_kv_heads"];
const MLA_KEYS: &[&str] = &["kernel", "mla_dtype", "kv_cache_dtype", "num_heads", "tp_size"];

static GEMM: OpSpec = OpSpec {
    name: "gemm",
    keys: &["dtype"],
    exact: 1,
    inner: None,
    outer: None,
    axes: &["m", "n", "k"],
    tie: None,
    envelope: &[0],
};
static CONTEXT_ATTENTION: OpSpec = OpSpec {
    name: "context_attention",
    keys: ATTENTION_KEYS,
    exact: 5,
    inner: Some(5),
    outer: Some(6),
    axes: &["batch_size", "isl"],
    tie: None,
    envelope: &[0, 1],
};
static GENERATION_ATTENTION: OpSpec = OpSpec {
    name: "generation_attention",
    keys: ATTENTION_KEYS,
    exact: 5,
    inner: Some(5),
    outer: Some(6),
    axes: &["batch_size", "step"],
    tie: None,
    envelope: &[0, 1],
};
// tp_size × num_heads is the model's head count (128 for DeepSeek-V3, 64 for smaller MLA models):
// the kernel's work depends on the heads per GPU, so tp_size is not matched; where both models
// were measured at one per-GPU count (a100: 2 heads at TP 32 and TP 64), the larger TP, i.e. the
// 128-head model, is kept.
static CONTEXT_MLA: OpSpec = OpSpec {
    name: "context_mla",
    keys: MLA_KEYS,
    exact: 3,
    inner: Some(3),
    outer: None,
    axes: &["batch_size", "isl"],
    tie: Some(4),
    envelope: &[0, 1],
};
static GENERATION_MLA: OpSpec = OpSpec {
    name: "generation_mla",
    keys: MLA_KEYS,
    exact: 3,
    inner: Some(3),
    outer: None,
    axes: &["batch_size", "step"],
    tie: Some(4),
    envelope: &[0, 1],
};
static MLA_BMM: OpSpec = OpSpec {
    name: "mla_bmm",
    keys: &["op_name", "kernel", "dtype", "num_heads"],
    exact: 3,
    inner: Some(3),
    outer: None,
    axes: &["num_tokens"],
    tie: None,
    envelope: &[0],
};
static CUSTOM_ALLREDUCE: OpSpec = OpSpec {
    name: "custom_allreduce",
    keys: &["op_name", "kernel", "dtype", "num_gpus"],
    exact: 3,
    inner: Some(3),
    outer: None,
    axes: &["message_size"],
    tie: None,
    envelope: &[0],
};
static NCCL: OpSpec = OpSpec {
    name: "nccl",
    keys: &["op_name", "dtype", "num_gpus"],
    exact: 2,
    inner: Some(2),
    outer: None,
    axes: &["message_size"],
    tie: None,
    envelope: &[0],
};

// The routed experts' fused MoE kernel of one layer (gate/up GEMM with its activation, down
// GEMM, the permutes and the weighted combine), keyed by the model's shape (exact: the kernel,
// format, hidden and intermediate sizes, top-k, experts) and a measured pair of tensor and expert
// parallelism, then the step's tokens. Only the
// `balanced` routing of the source tables is kept (scripts/kernel-data).
static MOE: OpSpec = OpSpec {
    name: "moe",
    keys: &["kernel", "moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"],
    exact: 6,
    inner: Some(6),
    outer: Some(7),
    axes: &["num_tokens"],
    tie: None,
    envelope: &[0],
};

// A Gated DeltaNet layer's convolution and delta-rule kernels, keyed by the kernel and head sizes
// (exact), the key heads per GPU (outer: a measured count only) and the value heads (inner), over
// sequences and tokens per sequence.
static LINEAR_ATTENTION: OpSpec = OpSpec {
    name: "linear_attention",
    keys: &["kernel", "head_k_dim", "head_v_dim", "num_k_heads", "num_v_heads"],
    exact: 3,
    inner: Some(4),
    outer: Some(3),
    axes: &["batch_size", "seq_len"],
    tie: None,
    envelope: &[0, 1],
};

impl Op {
    const COUNT: usize = 10;

    fn spec(self) -> &'static OpSpec {
        match self {
            Op::Gemm => &GEMM,
            Op::ContextAttention => &CONTEXT_ATTENTION,
            Op::GenerationAttention => &GENERATION_ATTENTION,
            Op::ContextMla => &CONTEXT_MLA,
            Op::GenerationMla => &GENERATION_MLA,
            Op::MlaBmm => &MLA_BMM,
            Op::CustomAllreduce => &CUSTOM_ALLREDUCE,
            Op::Nccl => &NCCL,
            Op::Moe => &MOE,
            Op::LinearAttention => &LINEAR_ATTENTION,
        }
    }
}

/// One embedded data file.
#[derive(Debug)]
pub struct EmbeddedFile {
    /// Path under `crates/core/data/kernels/` (`h100_sxm/trtllm/gemm.bin`).
    pub path: &'static str,
    /// The GPU it was measured on.
    pub gpu: KernelGpu,
    /// The engine; `None` for NCCL.
    pub engine: Option<Engine>,
    op: Op,
    bytes: &'static [u8],
}

/// What a parsed file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStats {
    /// `table` lines.
    pub tables: usize,
    /// Grid cells (`data N`).
    pub cells: usize,
    /// Measured cells (codes other than `0xFFFF`): the manifest's `rows`.
    pub measured: usize,
    /// File size.
    pub bytes: usize,
}

impl EmbeddedFile {
    /// The op's name as in the file path and the manifest (`gemm`, `nccl` …).
    pub fn op_name(&self) -> &'static str {
        self.op.spec().name
    }

    /// Parse the file (once; later calls reuse it) and count what it holds.
    pub fn stats(&self) -> Result<FileStats> {
        let f = parsed_file(self)?;
        f.check_axes()?;
        Ok(FileStats { tables: f.tables.len(), cells: f.cells, measured: f.measured(), bytes: self.bytes.len() })
    }
}

macro_rules! engine {
    (_) => {
        None
    };
    ($e:ident) => {
        Some(Engine::$e)
    };
}

macro_rules! files {
    ($($gpu:ident $eng:tt $op:ident $path:literal;)*) => {
        static FILES: &[EmbeddedFile] = &[$(EmbeddedFile {
            path: $path,
            gpu: KernelGpu::$gpu,
            engine: engine!($eng),
            op: Op::$op,
            bytes: include_bytes!(concat!("../../data/kernels/", $path)),
        },)*];
    };
}

files! {
    A100Sxm _ Nccl "a100_sxm/nccl.bin";
    A100Sxm Sglang ContextAttention "a100_sxm/sglang/context_attention.bin";
    A100Sxm Sglang CustomAllreduce "a100_sxm/sglang/custom_allreduce.bin";
    A100Sxm Sglang Gemm "a100_sxm/sglang/gemm.bin";
    A100Sxm Sglang GenerationAttention "a100_sxm/sglang/generation_attention.bin";
    A100Sxm Sglang LinearAttention "a100_sxm/sglang/linear_attention.bin";
    A100Sxm Sglang MlaBmm "a100_sxm/sglang/mla_bmm.bin";
    A100Sxm Sglang Moe "a100_sxm/sglang/moe.bin";
    A100Sxm Trtllm ContextAttention "a100_sxm/trtllm/context_attention.bin";
    A100Sxm Trtllm ContextMla "a100_sxm/trtllm/context_mla.bin";
    A100Sxm Trtllm CustomAllreduce "a100_sxm/trtllm/custom_allreduce.bin";
    A100Sxm Trtllm Gemm "a100_sxm/trtllm/gemm.bin";
    A100Sxm Trtllm GenerationAttention "a100_sxm/trtllm/generation_attention.bin";
    A100Sxm Trtllm GenerationMla "a100_sxm/trtllm/generation_mla.bin";
    A100Sxm Trtllm MlaBmm "a100_sxm/trtllm/mla_bmm.bin";
    A100Sxm Vllm ContextAttention "a100_sxm/vllm/context_attention.bin";
    A100Sxm Vllm ContextMla "a100_sxm/vllm/context_mla.bin";
    A100Sxm Vllm CustomAllreduce "a100_sxm/vllm/custom_allreduce.bin";
    A100Sxm Vllm Gemm "a100_sxm/vllm/gemm.bin";
    A100Sxm Vllm GenerationAttention "a100_sxm/vllm/generation_attention.bin";
    A100Sxm Vllm GenerationMla "a100_sxm/vllm/generation_mla.bin";
    B200Sxm _ Nccl "b200_sxm/nccl.bin";
    B200Sxm Sglang ContextAttention "b200_sxm/sglang/context_attention.bin";
    B200Sxm Sglang ContextMla "b200_sxm/sglang/context_mla.bin";
    B200Sxm Sglang CustomAllreduce "b200_sxm/sglang/custom_allreduce.bin";
    B200Sxm Sglang Gemm "b200_sxm/sglang/gemm.bin";
    B200Sxm Sglang GenerationAttention "b200_sxm/sglang/generation_attention.bin";
    B200Sxm Sglang GenerationMla "b200_sxm/sglang/generation_mla.bin";
    B200Sxm Sglang LinearAttention "b200_sxm/sglang/linear_attention.bin";
    B200Sxm Sglang MlaBmm "b200_sxm/sglang/mla_bmm.bin";
    B200Sxm Sglang Moe "b200_sxm/sglang/moe.bin";
    B200Sxm Trtllm ContextAttention "b200_sxm/trtllm/context_attention.bin";
    B200Sxm Trtllm ContextMla "b200_sxm/trtllm/context_mla.bin";
    B200Sxm Trtllm CustomAllreduce "b200_sxm/trtllm/custom_allreduce.bin";
    B200Sxm Trtllm Gemm "b200_sxm/trtllm/gemm.bin";
    B200Sxm Trtllm GenerationAttention "b200_sxm/trtllm/generation_attention.bin";
    B200Sxm Trtllm GenerationMla "b200_sxm/trtllm/generation_mla.bin";
    B200Sxm Trtllm LinearAttention "b200_sxm/trtllm/linear_attention.bin";
    B200Sxm Trtllm MlaBmm "b200_sxm/trtllm/mla_bmm.bin";
    B200Sxm Trtllm Moe "b200_sxm/trtllm/moe.bin";
    B200Sxm Vllm ContextAttention "b200_sxm/vllm/context_attention.bin";
    B200Sxm Vllm CustomAllreduce "b200_sxm/vllm/custom_allreduce.bin";
    B200Sxm Vllm Gemm "b200_sxm/vllm/gemm.bin";
    B200Sxm Vllm GenerationAttention "b200_sxm/vllm/generation_attention.bin";
    B200Sxm Vllm LinearAttention "b200_sxm/vllm/linear_attention.bin";
    B200Sxm Vllm MlaBmm "b200_sxm/vllm/mla_bmm.bin";
    B200Sxm Vllm Moe "b200_sxm/vllm/moe.bin";
    B300Sxm _ Nccl "b300_sxm/nccl.bin";
    B300Sxm Sglang ContextAttention "b300_sxm/sglang/context_attention.bin";
    B300Sxm Sglang ContextMla "b300_sxm/sglang/context_mla.bin";
    B300Sxm Sglang CustomAllreduce "b300_sxm/sglang/custom_allreduce.bin";
    B300Sxm Sglang Gemm "b300_sxm/sglang/gemm.bin";
    B300Sxm Sglang GenerationAttention "b300_sxm/sglang/generation_attention.bin";
    B300Sxm Sglang GenerationMla "b300_sxm/sglang/generation_mla.bin";
    B300Sxm Sglang LinearAttention "b300_sxm/sglang/linear_attention.bin";
    B300Sxm Sglang MlaBmm "b300_sxm/sglang/mla_bmm.bin";
    B300Sxm Sglang Moe "b300_sxm/sglang/moe.bin";
    B300Sxm Trtllm ContextAttention "b300_sxm/trtllm/context_attention.bin";
    B300Sxm Trtllm ContextMla "b300_sxm/trtllm/context_mla.bin";
    B300Sxm Trtllm CustomAllreduce "b300_sxm/trtllm/custom_allreduce.bin";
    B300Sxm Trtllm Gemm "b300_sxm/trtllm/gemm.bin";
    B300Sxm Trtllm GenerationAttention "b300_sxm/trtllm/generation_attention.bin";
    B300Sxm Trtllm GenerationMla "b300_sxm/trtllm/generation_mla.bin";
    B300Sxm Trtllm LinearAttention "b300_sxm/trtllm/linear_attention.bin";
    B300Sxm Trtllm MlaBmm "b300_sxm/trtllm/mla_bmm.bin";
    B300Sxm Trtllm Moe "b300_sxm/trtllm/moe.bin";
    B300Sxm Vllm ContextAttention "b300_sxm/vllm/context_attention.bin";
    B300Sxm Vllm CustomAllreduce "b300_sxm/vllm/custom_allreduce.bin";
    B300Sxm Vllm Gemm "b300_sxm/vllm/gemm.bin";
    B300Sxm Vllm GenerationAttention "b300_sxm/vllm/generation_attention.bin";
    B300Sxm Vllm LinearAttention "b300_sxm/vllm/linear_attention.bin";
    B300Sxm Vllm MlaBmm "b300_sxm/vllm/mla_bmm.bin";
    B300Sxm Vllm Moe "b300_sxm/vllm/moe.bin";
    B60 _ Nccl "b60/nccl.bin";
    B60 Vllm ContextAttention "b60/vllm/context_attention.bin";
    B60 Vllm CustomAllreduce "b60/vllm/custom_allreduce.bin";
    B60 Vllm Gemm "b60/vllm/gemm.bin";
    B60 Vllm GenerationAttention "b60/vllm/generation_attention.bin";
    Gb200 _ Nccl "gb200/nccl.bin";
    Gb200 Sglang ContextAttention "gb200/sglang/context_attention.bin";
    Gb200 Sglang ContextMla "gb200/sglang/context_mla.bin";
    Gb200 Sglang CustomAllreduce "gb200/sglang/custom_allreduce.bin";
    Gb200 Sglang Gemm "gb200/sglang/gemm.bin";
    Gb200 Sglang GenerationAttention "gb200/sglang/generation_attention.bin";
    Gb200 Sglang GenerationMla "gb200/sglang/generation_mla.bin";
    Gb200 Sglang LinearAttention "gb200/sglang/linear_attention.bin";
    Gb200 Sglang MlaBmm "gb200/sglang/mla_bmm.bin";
    Gb200 Sglang Moe "gb200/sglang/moe.bin";
    Gb200 Trtllm ContextAttention "gb200/trtllm/context_attention.bin";
    Gb200 Trtllm ContextMla "gb200/trtllm/context_mla.bin";
    Gb200 Trtllm CustomAllreduce "gb200/trtllm/custom_allreduce.bin";
    Gb200 Trtllm Gemm "gb200/trtllm/gemm.bin";
    Gb200 Trtllm GenerationAttention "gb200/trtllm/generation_attention.bin";
    Gb200 Trtllm GenerationMla "gb200/trtllm/generation_mla.bin";
    Gb200 Trtllm LinearAttention "gb200/trtllm/linear_attention.bin";
    Gb200 Trtllm MlaBmm "gb200/trtllm/mla_bmm.bin";
    Gb200 Trtllm Moe "gb200/trtllm/moe.bin";
    Gb200 Vllm ContextAttention "gb200/vllm/context_attention.bin";
    Gb200 Vllm CustomAllreduce "gb200/vllm/custom_allreduce.bin";
    Gb200 Vllm Gemm "gb200/vllm/gemm.bin";
    Gb200 Vllm GenerationAttention "gb200/vllm/generation_attention.bin";
    Gb200 Vllm LinearAttention "gb200/vllm/linear_attention.bin";
    Gb200 Vllm MlaBmm "gb200/vllm/mla_bmm.bin";
    Gb200 Vllm Moe "gb200/vllm/moe.bin";
    Gb300 _ Nccl "gb300/nccl.bin";
    Gb300 Sglang ContextAttention "gb300/sglang/context_attention.bin";
    Gb300 Sglang ContextMla "gb300/sglang/context_mla.bin";
    Gb300 Sglang CustomAllreduce "gb300/sglang/custom_allreduce.bin";
    Gb300 Sglang Gemm "gb300/sglang/gemm.bin";
    Gb300 Sglang GenerationAttention "gb300/sglang/generation_attention.bin";
    Gb300 Sglang GenerationMla "gb300/sglang/generation_mla.bin";
    Gb300 Sglang LinearAttention "gb300/sglang/linear_attention.bin";
    Gb300 Sglang MlaBmm "gb300/sglang/mla_bmm.bin";
    Gb300 Sglang Moe "gb300/sglang/moe.bin";
    Gb300 Trtllm ContextAttention "gb300/trtllm/context_attention.bin";
    Gb300 Trtllm ContextMla "gb300/trtllm/context_mla.bin";
    Gb300 Trtllm CustomAllreduce "gb300/trtllm/custom_allreduce.bin";
    Gb300 Trtllm Gemm "gb300/trtllm/gemm.bin";
    Gb300 Trtllm GenerationAttention "gb300/trtllm/generation_attention.bin";
    Gb300 Trtllm GenerationMla "gb300/trtllm/generation_mla.bin";
    Gb300 Trtllm LinearAttention "gb300/trtllm/linear_attention.bin";
    Gb300 Trtllm MlaBmm "gb300/trtllm/mla_bmm.bin";
    Gb300 Trtllm Moe "gb300/trtllm/moe.bin";
    Gb300 Vllm ContextAttention "gb300/vllm/context_attention.bin";
    Gb300 Vllm CustomAllreduce "gb300/vllm/custom_allreduce.bin";
    Gb300 Vllm Gemm "gb300/vllm/gemm.bin";
    Gb300 Vllm GenerationAttention "gb300/vllm/generation_attention.bin";
    Gb300 Vllm LinearAttention "gb300/vllm/linear_attention.bin";
    Gb300 Vllm MlaBmm "gb300/vllm/mla_bmm.bin";
    Gb300 Vllm Moe "gb300/vllm/moe.bin";
    H100Sxm _ Nccl "h100_sxm/nccl.bin";
    H100Sxm Sglang ContextAttention "h100_sxm/sglang/context_attention.bin";
    H100Sxm Sglang ContextMla "h100_sxm/sglang/context_mla.bin";
    H100Sxm Sglang CustomAllreduce "h100_sxm/sglang/custom_allreduce.bin";
    H100Sxm Sglang Gemm "h100_sxm/sglang/gemm.bin";
    H100Sxm Sglang GenerationAttention "h100_sxm/sglang/generation_attention.bin";
    H100Sxm Sglang GenerationMla "h100_sxm/sglang/generation_mla.bin";
    H100Sxm Sglang LinearAttention "h100_sxm/sglang/linear_attention.bin";
    H100Sxm Sglang MlaBmm "h100_sxm/sglang/mla_bmm.bin";
    H100Sxm Sglang Moe "h100_sxm/sglang/moe.bin";
    H100Sxm Trtllm ContextAttention "h100_sxm/trtllm/context_attention.bin";
    H100Sxm Trtllm ContextMla "h100_sxm/trtllm/context_mla.bin";
    H100Sxm Trtllm CustomAllreduce "h100_sxm/trtllm/custom_allreduce.bin";
    H100Sxm Trtllm Gemm "h100_sxm/trtllm/gemm.bin";
    H100Sxm Trtllm GenerationAttention "h100_sxm/trtllm/generation_attention.bin";
    H100Sxm Trtllm GenerationMla "h100_sxm/trtllm/generation_mla.bin";
    H100Sxm Trtllm LinearAttention "h100_sxm/trtllm/linear_attention.bin";
    H100Sxm Trtllm MlaBmm "h100_sxm/trtllm/mla_bmm.bin";
    H100Sxm Trtllm Moe "h100_sxm/trtllm/moe.bin";
    H100Sxm Vllm ContextAttention "h100_sxm/vllm/context_attention.bin";
    H100Sxm Vllm CustomAllreduce "h100_sxm/vllm/custom_allreduce.bin";
    H100Sxm Vllm Gemm "h100_sxm/vllm/gemm.bin";
    H100Sxm Vllm GenerationAttention "h100_sxm/vllm/generation_attention.bin";
    H100Sxm Vllm LinearAttention "h100_sxm/vllm/linear_attention.bin";
    H100Sxm Vllm MlaBmm "h100_sxm/vllm/mla_bmm.bin";
    H100Sxm Vllm Moe "h100_sxm/vllm/moe.bin";
    H200Sxm _ Nccl "h200_sxm/nccl.bin";
    H200Sxm Sglang ContextAttention "h200_sxm/sglang/context_attention.bin";
    H200Sxm Sglang ContextMla "h200_sxm/sglang/context_mla.bin";
    H200Sxm Sglang CustomAllreduce "h200_sxm/sglang/custom_allreduce.bin";
    H200Sxm Sglang Gemm "h200_sxm/sglang/gemm.bin";
    H200Sxm Sglang GenerationAttention "h200_sxm/sglang/generation_attention.bin";
    H200Sxm Sglang GenerationMla "h200_sxm/sglang/generation_mla.bin";
    H200Sxm Sglang LinearAttention "h200_sxm/sglang/linear_attention.bin";
    H200Sxm Sglang MlaBmm "h200_sxm/sglang/mla_bmm.bin";
    H200Sxm Sglang Moe "h200_sxm/sglang/moe.bin";
    H200Sxm Trtllm ContextAttention "h200_sxm/trtllm/context_attention.bin";
    H200Sxm Trtllm ContextMla "h200_sxm/trtllm/context_mla.bin";
    H200Sxm Trtllm CustomAllreduce "h200_sxm/trtllm/custom_allreduce.bin";
    H200Sxm Trtllm Gemm "h200_sxm/trtllm/gemm.bin";
    H200Sxm Trtllm GenerationAttention "h200_sxm/trtllm/generation_attention.bin";
    H200Sxm Trtllm GenerationMla "h200_sxm/trtllm/generation_mla.bin";
    H200Sxm Trtllm LinearAttention "h200_sxm/trtllm/linear_attention.bin";
    H200Sxm Trtllm MlaBmm "h200_sxm/trtllm/mla_bmm.bin";
    H200Sxm Trtllm Moe "h200_sxm/trtllm/moe.bin";
    H200Sxm Vllm ContextAttention "h200_sxm/vllm/context_attention.bin";
    H200Sxm Vllm CustomAllreduce "h200_sxm/vllm/custom_allreduce.bin";
    H200Sxm Vllm Gemm "h200_sxm/vllm/gemm.bin";
    H200Sxm Vllm GenerationAttention "h200_sxm/vllm/generation_attention.bin";
    H200Sxm Vllm LinearAttention "h200_sxm/vllm/linear_attention.bin";
    H200Sxm Vllm MlaBmm "h200_sxm/vllm/mla_bmm.bin";
    H200Sxm Vllm Moe "h200_sxm/vllm/moe.bin";
    L40s _ Nccl "l40s/nccl.bin";
    L40s Sglang ContextAttention "l40s/sglang/context_attention.bin";
    L40s Sglang ContextMla "l40s/sglang/context_mla.bin";
    L40s Sglang CustomAllreduce "l40s/sglang/custom_allreduce.bin";
    L40s Sglang Gemm "l40s/sglang/gemm.bin";
    L40s Sglang GenerationAttention "l40s/sglang/generation_attention.bin";
    L40s Sglang GenerationMla "l40s/sglang/generation_mla.bin";
    L40s Sglang LinearAttention "l40s/sglang/linear_attention.bin";
    L40s Sglang MlaBmm "l40s/sglang/mla_bmm.bin";
    L40s Sglang Moe "l40s/sglang/moe.bin";
    L40s Trtllm ContextAttention "l40s/trtllm/context_attention.bin";
    L40s Trtllm CustomAllreduce "l40s/trtllm/custom_allreduce.bin";
    L40s Trtllm Gemm "l40s/trtllm/gemm.bin";
    L40s Trtllm GenerationAttention "l40s/trtllm/generation_attention.bin";
    L40s Trtllm LinearAttention "l40s/trtllm/linear_attention.bin";
    L40s Trtllm MlaBmm "l40s/trtllm/mla_bmm.bin";
    L40s Trtllm Moe "l40s/trtllm/moe.bin";
    L40s Vllm ContextAttention "l40s/vllm/context_attention.bin";
    L40s Vllm Gemm "l40s/vllm/gemm.bin";
    L40s Vllm GenerationAttention "l40s/vllm/generation_attention.bin";
    L40s Vllm LinearAttention "l40s/vllm/linear_attention.bin";
    L40s Vllm Moe "l40s/vllm/moe.bin";
    RtxPro6000Server _ Nccl "rtx_pro_6000_server/nccl.bin";
    RtxPro6000Server Sglang ContextAttention "rtx_pro_6000_server/sglang/context_attention.bin";
    RtxPro6000Server Sglang ContextMla "rtx_pro_6000_server/sglang/context_mla.bin";
    RtxPro6000Server Sglang CustomAllreduce "rtx_pro_6000_server/sglang/custom_allreduce.bin";
    RtxPro6000Server Sglang Gemm "rtx_pro_6000_server/sglang/gemm.bin";
    RtxPro6000Server Sglang GenerationAttention "rtx_pro_6000_server/sglang/generation_attention.bin";
    RtxPro6000Server Sglang GenerationMla "rtx_pro_6000_server/sglang/generation_mla.bin";
    RtxPro6000Server Sglang LinearAttention "rtx_pro_6000_server/sglang/linear_attention.bin";
    RtxPro6000Server Sglang MlaBmm "rtx_pro_6000_server/sglang/mla_bmm.bin";
    RtxPro6000Server Sglang Moe "rtx_pro_6000_server/sglang/moe.bin";
    RtxPro6000Server Trtllm ContextAttention "rtx_pro_6000_server/trtllm/context_attention.bin";
    RtxPro6000Server Trtllm ContextMla "rtx_pro_6000_server/trtllm/context_mla.bin";
    RtxPro6000Server Trtllm CustomAllreduce "rtx_pro_6000_server/trtllm/custom_allreduce.bin";
    RtxPro6000Server Trtllm Gemm "rtx_pro_6000_server/trtllm/gemm.bin";
    RtxPro6000Server Trtllm GenerationAttention "rtx_pro_6000_server/trtllm/generation_attention.bin";
    RtxPro6000Server Trtllm GenerationMla "rtx_pro_6000_server/trtllm/generation_mla.bin";
    RtxPro6000Server Trtllm LinearAttention "rtx_pro_6000_server/trtllm/linear_attention.bin";
    RtxPro6000Server Trtllm MlaBmm "rtx_pro_6000_server/trtllm/mla_bmm.bin";
    RtxPro6000Server Trtllm Moe "rtx_pro_6000_server/trtllm/moe.bin";
    RtxPro6000Server Vllm ContextAttention "rtx_pro_6000_server/vllm/context_attention.bin";
    RtxPro6000Server Vllm CustomAllreduce "rtx_pro_6000_server/vllm/custom_allreduce.bin";
    RtxPro6000Server Vllm Gemm "rtx_pro_6000_server/vllm/gemm.bin";
    RtxPro6000Server Vllm GenerationAttention "rtx_pro_6000_server/vllm/generation_attention.bin";
    RtxPro6000Server Vllm LinearAttention "rtx_pro_6000_server/vllm/linear_attention.bin";
    RtxPro6000Server Vllm Moe "rtx_pro_6000_server/vllm/moe.bin";
}

/// Every embedded file, in path order.
pub fn embedded_files() -> &'static [EmbeddedFile] {
    FILES
}

const SLOTS: usize = KernelGpu::ALL.len() * 4 * Op::COUNT;

fn slot(gpu: KernelGpu, engine: Option<Engine>, op: Op) -> usize {
    let e = engine.map_or(3, |e| e as usize);
    (gpu as usize * 4 + e) * Op::COUNT + op as usize
}

/// A parsed file, or why it did not parse; `None` where no file exists.
type Slot = Option<Result<KernelFile>>;

/// The parsed file per (GPU, engine, op), filled on first use.
static PARSED: [OnceLock<Slot>; SLOTS] = [const { OnceLock::new() }; SLOTS];

fn slot_entry(gpu: KernelGpu, engine: Option<Engine>, op: Op) -> Option<&'static Result<KernelFile>> {
    PARSED[slot(gpu, engine, op)]
        .get_or_init(|| {
            let f = FILES.iter().find(|f| f.gpu == gpu && f.engine == engine && f.op == op)?;
            Some(KernelFile::open(f.path, op.spec(), f.bytes))
        })
        .as_ref()
}

fn parsed_file(f: &EmbeddedFile) -> Result<&'static KernelFile> {
    match slot_entry(f.gpu, f.engine, f.op) {
        Some(Ok(k)) => Ok(k),
        Some(Err(e)) => Err(e.clone()),
        None => Err(Error::Malformed { what: format!("kernel table {}", f.path), message: "not registered".into() }),
    }
}

/// The parsed file, or `None` where there is none or it does not parse (the tests check that
/// every embedded file parses).
fn file(gpu: KernelGpu, engine: Option<Engine>, op: Op) -> Option<&'static KernelFile> {
    slot_entry(gpu, engine, op).and_then(|r| r.as_ref().ok())
}

/// Every value positive and finite (NaN is neither).
fn positive(xs: &[f64]) -> bool {
    xs.iter().all(|&v| super::grid::positive(v))
}

/// The fastest of `candidates` (each µs) that gives a value.
fn fastest_us(candidates: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    candidates.flatten().reduce(f64::min)
}

/// The fastest of `candidates` (each `ln(ns)`) that gives a value.
fn fastest(candidates: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    candidates.flatten().reduce(f64::min)
}

pub(super) fn gemm_us(gpu: KernelGpu, engine: Engine, dtype: GemmDtype, m: f64, n: f64, k: f64) -> Option<f64> {
    if !positive(&[m, n, k]) {
        return None;
    }
    let f = file(gpu, Some(engine), Op::Gemm)?;
    let g = f.find(&[Q::S(dtype.as_str())])?;
    f.eval_ln(g.levels[0].tables[0], &[m, n, k]).map(to_us)
}

/// The file's monotone envelope ([`KernelFile::envelope`]).
fn envelope(gpu: KernelGpu, engine: Option<Engine>, op: Op) -> Option<Envelope<'static>> {
    file(gpu, engine, op).map(KernelFile::envelope)
}

pub(super) fn gemm_envelope_us(
    gpu: KernelGpu,
    engine: Engine,
    dtype: GemmDtype,
    m: f64,
    n: f64,
    k: f64,
) -> Option<f64> {
    if !positive(&[m, n, k]) {
        return None;
    }
    let key = (gpu, engine, dtype, n.to_bits(), k.to_bits());
    GEMM_CURVES.with(|c| {
        let mut curves = c.borrow_mut();
        let curves = &mut *curves;
        // The parts of a merged GEMM (Q, K, V; gate, up) ask for the same kernel one after
        // another, and every ledger of a scenario asks for its shapes again.
        if let Some(us) = curves.recent.get(&(key, m.to_bits())) {
            return us;
        }

        let at = match curves.shapes.iter().position(|c| c.key == key) {
            Some(at) => at,
            None => {
                let f = envelope(gpu, Some(engine), Op::Gemm)?;
                let table = gemm_table(gpu, engine, dtype)?;
                if curves.shapes.len() == KEPT {
                    curves.shapes.remove(0);
                }
                curves.shapes.push(GemmCurve { key, file: f, table, curve: f.curve_ln(table, &[n, k])? });
                curves.shapes.len() - 1
            }
        };
        let c = &curves.shapes[at];
        let us = c.file.eval_curve(c.table, &c.curve, m).map(to_us);
        curves.recent.put((key, m.to_bits()), us);
        us
    })
}

/// A GEMM's shape apart from m: GPU, engine, format, and n and k (as bits).
type GemmKey = (KernelGpu, Engine, GemmDtype, u64, u64);

/// Shapes kept per thread, each kind of lookup (a model has a handful of GEMM and attention
/// shapes; a new one replaces the oldest).
const KEPT: usize = 32;

/// One GEMM shape's curve in m ([`Envelope::curve_ln`]) and where it comes from.
struct GemmCurve {
    key: GemmKey,
    file: Envelope<'static>,
    table: usize,
    curve: Box<[Option<f64>]>,
}

/// The GEMM shapes looked up on one thread, and its recent answers by shape and m (as bits).
struct GemmCurves {
    shapes: Vec<GemmCurve>,
    recent: Recent<(GemmKey, u64), 16>,
}

/// The recent answers of one kind of lookup on one thread, in `N` slots chosen by a hash of the
/// query (a new answer takes its query's slot). Exact: a query is answered from a slot only when
/// it equals the one answered there, and the answer is what the lookup gave it. A model asks a
/// handful of shapes per step, and every step of a scenario (each layer kind, each call of the
/// ledger at the same batch and context) asks them again.
struct Recent<K, const N: usize> {
    slots: [Option<(K, Option<f64>)>; N],
}

impl<K: PartialEq + std::hash::Hash, const N: usize> Recent<K, N> {
    const EMPTY: Self = Recent { slots: [const { None }; N] };

    fn slot(key: &K) -> usize {
        use std::hash::BuildHasher;
        if N == 1 {
            return 0;
        }
        // Fx mixes a word's bits only upwards, and a float's low bits are mostly zero: mixed
        // again by a multiplication, whose top bits pick the slot (`⌊x · N / 2⁶⁴⌋`).
        let mixed = rustc_hash::FxBuildHasher.hash_one(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((u128::from(mixed) * N as u128) >> 64) as usize
    }

    /// The answer kept for `key`, if any.
    fn get(&self, key: &K) -> Option<Option<f64>> {
        match &self.slots[Self::slot(key)] {
            Some((k, v)) if k == key => Some(*v),
            _ => None,
        }
    }

    fn put(&mut self, key: K, value: Option<f64>) {
        let at = Self::slot(&key);
        self.slots[at] = Some((key, value));
    }
}

thread_local! {
    /// Per GEMM shape (n, k) looked up on this thread, its curve in m: a lookup is then one
    /// search along m, the rest of the table's interpolation done once per shape (exact:
    /// interpolating the curve along m is the table's own interpolation).
    static GEMM_CURVES: RefCell<GemmCurves> = const { RefCell::new(GemmCurves { shapes: Vec::new(), recent: Recent::EMPTY }) };
}

/// The GEMM table of a format in the envelope file, found once per (GPU, engine, format).
fn gemm_table(gpu: KernelGpu, engine: Engine, dtype: GemmDtype) -> Option<usize> {
    static TABLE: [OnceLock<Option<usize>>; KernelGpu::ALL.len() * 4 * GemmDtype::ALL.len()] =
        [const { OnceLock::new() }; KernelGpu::ALL.len() * 4 * GemmDtype::ALL.len()];
    let i = (gpu as usize * 4 + engine as usize) * GemmDtype::ALL.len() + dtype as usize;
    *TABLE[i].get_or_init(|| {
        let f = envelope(gpu, Some(engine), Op::Gemm)?;
        Some(f.find(&[Q::S(dtype.as_str())])?.levels[0].tables[0])
    })
}

pub(super) fn gemm_axes(gpu: KernelGpu, engine: Engine, dtype: GemmDtype) -> Option<[&'static [f64]; 3]> {
    let f = file(gpu, Some(engine), Op::Gemm)?;
    let t = f.find(&[Q::S(dtype.as_str())])?.levels[0].tables[0];
    Some([&f.axis(t, 0)?.values, &f.axis(t, 1)?.values, &f.axis(t, 2)?.values])
}

/// The engine's default attention kernel on `gpu`, where AIConfigurator's
/// `attention_lane_defaults.yaml` names one (sglang 0.5.14: sm90 → fa3, sm100 → triton).
fn default_attention_kernel(gpu: KernelGpu, engine: Engine) -> Option<&'static str> {
    match (engine, gpu.sm()) {
        (Engine::Sglang, 90) => Some("fa3"),
        (Engine::Sglang, 100 | 103) => Some("triton"),
        _ => None,
    }
}

pub(super) fn attention_us(gpu: KernelGpu, engine: Engine, q: &AttentionQuery) -> Option<f64> {
    if !positive(&[q.heads, q.kv_heads, q.batch, q.length]) {
        return None;
    }
    let op = match q.phase {
        AttentionPhase::Context => Op::ContextAttention,
        AttentionPhase::Generation => Op::GenerationAttention,
    };
    let key = AttentionKey::of(gpu, engine, q);
    if let Some(us) = RECENT_ATTENTION.with_borrow(|r| r.get(&key)) {
        return us;
    }
    let f = envelope(gpu, Some(engine), op)?;
    let us = match planned_attention_us(f, gpu, engine, q) {
        Some(us) => us,
        None => attention_lookup_us(f, gpu, engine, q),
    };
    RECENT_ATTENTION.with_borrow_mut(|r| r.put(key, us));
    us
}

/// An attention query with its numbers as bits, and where it is looked up.
#[derive(PartialEq, Eq, Hash)]
struct AttentionKey(KernelGpu, Engine, AttentionPhase, AttnDtype, AttnDtype, u32, u32, [u64; 4]);

impl AttentionKey {
    fn of(gpu: KernelGpu, engine: Engine, q: &AttentionQuery) -> Self {
        let numbers = [q.heads, q.kv_heads, q.batch, q.length].map(f64::to_bits);
        AttentionKey(gpu, engine, q.phase, q.dtype, q.kv_dtype, q.head_dim, q.window, numbers)
    }
}

thread_local! {
    /// The attention lookup answered last on this thread (a step asks one or two: more slots
    /// would cost a sweep, whose every point asks a new one, more than they save).
    static RECENT_ATTENTION: RefCell<Recent<AttentionKey, 1>> = const { RefCell::new(Recent::EMPTY) };
}

/// [`attention_us`] without a plan: every step of the lookup taken for this query.
fn attention_lookup_us(f: Envelope<'_>, gpu: KernelGpu, engine: Engine, q: &AttentionQuery) -> Option<f64> {
    let one = |kernel: &str| attention_kernel(f, kernel, q);
    if let Some(v) = default_attention_kernel(gpu, engine).and_then(one) {
        return Some(to_us(v));
    }
    fastest(f.names(0).map(one)).map(to_us)
}

/// A lookup apart from its grid axes: the thread's plans are kept per key ([`LookupPlan`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum PlanKey {
    /// GPU, engine, phase, formats, head dimension, window, and heads and KV heads (as bits).
    Attention(KernelGpu, Engine, AttentionPhase, AttnDtype, AttnDtype, u32, u32, u64, u64),
    /// GPU, engine, phase, formats and heads (as bits).
    Mla(KernelGpu, Engine, AttentionPhase, AttnDtype, AttnDtype, u64),
    /// GPU, engine, the matmul, its format and heads (as bits).
    MlaBmm(KernelGpu, Engine, MlaBmm, AttnDtype, u64),
    /// GPU, engine and GPUs of the engine's custom all-reduce.
    CustomAllReduce(KernelGpu, Engine, u32),
    /// GPU, collective and GPUs of NCCL's.
    Nccl(KernelGpu, Collective, u32),
}

/// One kernel's part of a lookup, resolved for its key ([`LookupPlan`]).
#[derive(Debug, Clone, Copy)]
enum KernelPlan {
    /// No table for the key: no value.
    Absent,
    /// The interpolation over the numeric keys (heads, KV heads) resolved ([`GroupPlan`]).
    Planned(GroupPlan<'static>),
    /// Not resolved in advance (an attention window without tables of its own, whose rule
    /// depends on the length; a step with no value unless cells are unmeasured): ask the lookup
    /// itself.
    Unplanned,
}

impl KernelPlan {
    /// The plan of group `g` of `file` (none: [`KernelPlan::Absent`]) at the numeric keys.
    fn of(file: &'static KernelFile, g: Option<&'static Group>, inner: f64, outer: f64, keep_ratio: bool) -> Self {
        match g {
            Some(g) => {
                GroupPlan::new(file, g, inner, outer, keep_ratio).map_or(KernelPlan::Unplanned, KernelPlan::Planned)
            }
            None => KernelPlan::Absent,
        }
    }
}

/// A lookup resolved for one [`PlanKey`]: the engine's default kernel where it names one, and
/// every kernel measured, as the lookup tries them (the default's value if it has one, else the
/// fastest).
#[derive(Debug)]
struct LookupPlan {
    default: Option<KernelPlan>,
    kernels: Vec<KernelPlan>,
}

thread_local! {
    /// Per key looked up on this thread, its plan: a lookup is then the grid interpolation of
    /// the one to four tables the numeric keys' interpolation reads.
    static PLANS: RefCell<Vec<(PlanKey, LookupPlan)>> = const { RefCell::new(Vec::new()) };
}

impl LookupPlan {
    /// What the lookup gives with `leaf` (a table's `ln(ns)` at the query's grid point), µs;
    /// `None` where the plan cannot tell (the lookup then runs in full).
    fn eval(&self, leaf: impl Fn(usize) -> Option<f64>) -> Option<Option<f64>> {
        let one = |k: &KernelPlan| match k {
            KernelPlan::Absent => Some(None),
            KernelPlan::Planned(p) => p.eval(&leaf).map(Some),
            KernelPlan::Unplanned => None,
        };
        if let Some(d) = &self.default {
            if let Some(v) = one(d)? {
                return Some(Some(to_us(v)));
            }
        }
        let mut best: Option<f64> = None;
        for k in &self.kernels {
            if let Some(v) = one(k)? {
                best = Some(best.map_or(v, |b| b.min(v)));
            }
        }
        Some(best.map(to_us))
    }
}

/// A lookup through the thread's plan for `key` (made by `make` on first use) with `leaf` at the
/// query's grid point; `None` where the plan cannot tell.
fn planned(
    key: PlanKey,
    make: impl FnOnce() -> LookupPlan,
    leaf: impl Fn(usize) -> Option<f64>,
) -> Option<Option<f64>> {
    PLANS.with(|c| {
        let mut plans = c.borrow_mut();
        let at = match plans.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                if plans.len() == KEPT {
                    plans.remove(0);
                }
                plans.push((key, make()));
                plans.len() - 1
            }
        };
        plans[at].1.eval(leaf)
    })
}

/// [`attention_us`] through the thread's plan for the query's key.
fn planned_attention_us(
    f: Envelope<'static>,
    gpu: KernelGpu,
    engine: Engine,
    q: &AttentionQuery,
) -> Option<Option<f64>> {
    let key = PlanKey::Attention(
        gpu,
        engine,
        q.phase,
        q.dtype,
        q.kv_dtype,
        q.head_dim,
        q.window,
        q.heads.to_bits(),
        q.kv_heads.to_bits(),
    );
    let make = || {
        let file = f.file();
        let kernel = |name: &str| {
            let key = [
                Q::S(name),
                Q::S(q.dtype.as_str()),
                Q::S(q.kv_dtype.as_str()),
                Q::N(f64::from(q.head_dim)),
                Q::N(f64::from(q.window)),
            ];
            match file.find(&key) {
                None if q.window != 0 => KernelPlan::Unplanned,
                g => KernelPlan::of(file, g.filter(|g| g.holds(q.heads, q.kv_heads, true)), q.heads, q.kv_heads, true),
            }
        };
        LookupPlan {
            default: default_attention_kernel(gpu, engine).map(kernel),
            kernels: f.names(0).map(kernel).collect(),
        }
    };
    planned(key, make, |t| f.eval_ln(t, &[q.batch, q.length]))
}

/// One kernel's attention time, `ln(ns)`: the window rule, then heads × KV heads, then batch ×
/// length.
fn attention_kernel(f: Envelope<'_>, kernel: &str, q: &AttentionQuery) -> Option<f64> {
    let key = |window: u32| {
        f.find(&[
            Q::S(kernel),
            Q::S(q.dtype.as_str()),
            Q::S(q.kv_dtype.as_str()),
            Q::N(f64::from(q.head_dim)),
            Q::N(f64::from(window)),
        ])
    };
    let w = f64::from(q.window);
    let (group, length, factor) = match key(q.window) {
        Some(g) => (g, q.length, 1.0),
        None if q.window == 0 || q.length <= w => (key(0)?, q.length, 1.0),
        // Decode reads min(length, window) cached tokens: full attention over `window` tokens.
        None if q.phase == AttentionPhase::Generation => (key(0)?, w, 1.0),
        // Prefill: the causal band of width w over L tokens, L·w − w²/2, against the triangle L²/2.
        None => {
            let r = w / q.length;
            (key(0)?, q.length, 2.0 * r - r * r)
        }
    };
    if !group.holds(q.heads, q.kv_heads, true) {
        return None;
    }
    let v = f.eval_group(group, q.heads, q.kv_heads, true, |t| f.eval_ln(t, &[q.batch, length]))?;
    Some(if factor == 1.0 { v } else { v + factor.ln() })
}

pub(super) fn mla_us(gpu: KernelGpu, engine: Engine, q: &MlaQuery) -> Option<f64> {
    if !positive(&[q.heads, q.batch, q.length]) {
        return None;
    }
    let op = match q.phase {
        AttentionPhase::Context => Op::ContextMla,
        AttentionPhase::Generation => Op::GenerationMla,
    };
    let f = envelope(gpu, Some(engine), op)?;
    let key = PlanKey::Mla(gpu, engine, q.phase, q.dtype, q.kv_dtype, q.heads.to_bits());
    let group = |kernel: &str| f.file().find(&[Q::S(kernel), Q::S(q.dtype.as_str()), Q::S(q.kv_dtype.as_str())]);
    let make = || LookupPlan {
        default: None,
        kernels: f
            .names(0)
            .map(|kernel| {
                KernelPlan::of(f.file(), group(kernel).filter(|g| g.holds(q.heads, 1.0, false)), q.heads, 1.0, false)
            })
            .collect(),
    };
    match planned(key, make, |t| f.eval_ln(t, &[q.batch, q.length])) {
        Some(us) => us,
        None => mla_lookup_us(f, q),
    }
}

/// [`mla_us`] without a plan: the fastest kernel, every step of the lookup taken.
fn mla_lookup_us(f: Envelope<'_>, q: &MlaQuery) -> Option<f64> {
    fastest(f.names(0).map(|kernel| {
        let g = f.find(&[Q::S(kernel), Q::S(q.dtype.as_str()), Q::S(q.kv_dtype.as_str())])?;
        g.holds(q.heads, 1.0, false).then_some(())?;
        f.eval_group(g, q.heads, 1.0, false, |t| f.eval_ln(t, &[q.batch, q.length]))
    }))
    .map(to_us)
}

pub(super) fn mla_bmm_us(
    gpu: KernelGpu,
    engine: Engine,
    op: MlaBmm,
    dtype: AttnDtype,
    heads: f64,
    tokens: f64,
) -> Option<f64> {
    if !positive(&[heads, tokens]) {
        return None;
    }
    let f = file(gpu, Some(engine), Op::MlaBmm)?;
    let name = match op {
        MlaBmm::Pre => "mla_gen_pre",
        MlaBmm::Post => "mla_gen_post",
    };
    let key = PlanKey::MlaBmm(gpu, engine, op, dtype, heads.to_bits());
    let group = |kernel: &str| f.find(&[Q::S(name), Q::S(kernel), Q::S(dtype.as_str())]);
    let make = || LookupPlan {
        default: None,
        kernels: f.names(1).map(|kernel| KernelPlan::of(f, group(kernel), heads, 1.0, false)).collect(),
    };
    match planned(key, make, |t| f.eval_ln(t, &[tokens])) {
        Some(us) => us,
        None => mla_bmm_lookup_us(f, name, dtype, heads, tokens),
    }
}

/// [`mla_bmm_us`] without a plan: the fastest kernel, every step of the lookup taken.
fn mla_bmm_lookup_us(f: &KernelFile, name: &str, dtype: AttnDtype, heads: f64, tokens: f64) -> Option<f64> {
    fastest(f.names(1).map(|kernel| {
        let g = f.find(&[Q::S(name), Q::S(kernel), Q::S(dtype.as_str())])?;
        f.eval_group(g, heads, 1.0, false, |t| f.eval_ln(t, &[tokens]))
    }))
    .map(to_us)
}

pub(super) fn moe_us(gpu: KernelGpu, engine: Engine, q: &MoeQuery) -> Option<f64> {
    if !positive(&[q.tokens, q.tp as f64, q.ep as f64]) {
        return None;
    }
    // A step asks one MoE layer's lookup for each of its expert GEMM rows and for the joins of
    // its activation and combine: the last answer is kept.
    let key =
        MoeKey(gpu, engine, q.dtype, [q.hidden, q.intermediate, q.top_k, q.experts, q.tp, q.ep], q.tokens.to_bits());
    if let Some(us) = RECENT_MOE.with_borrow(|r| r.get(&key)) {
        return us;
    }
    let us = moe_lookup_us(gpu, engine, q);
    RECENT_MOE.with_borrow_mut(|r| r.put(key, us));
    us
}

/// A fused-MoE query with its numbers as integers and bits, and where it is looked up.
#[derive(PartialEq, Eq, Hash)]
struct MoeKey(KernelGpu, Engine, super::MoeDtype, [u64; 6], u64);

thread_local! {
    /// The fused-MoE lookup answered last on this thread.
    static RECENT_MOE: RefCell<Recent<MoeKey, 1>> = const { RefCell::new(Recent::EMPTY) };
}

/// [`moe_us`] without the recent answer.
fn moe_lookup_us(gpu: KernelGpu, engine: Engine, q: &MoeQuery) -> Option<f64> {
    let f = envelope(gpu, Some(engine), Op::Moe)?;
    let keys = |kernel: &str| {
        let n = |v: u64| Q::N(v as f64);
        f.file().find(&[Q::S(kernel), Q::S(q.dtype.as_str()), n(q.hidden), n(q.intermediate), n(q.top_k), n(q.experts)])
    };
    let (tp, ep) = (q.tp as f64, q.ep as f64);
    // The fastest kernel measured for this shape and format at exactly this tensor and expert
    // parallelism (a split the tables never ran is not interpolated), as the engines pick one.
    fastest(f.names(0).map(|kernel| {
        let g = keys(kernel)?;
        let level = g.outer.values.iter().position(|&v| v == ep)?;
        if !g.levels[level].inner.values.contains(&tp) {
            return None;
        }
        f.eval_group(g, tp, ep, false, |t| f.eval_ln(t, &[q.tokens]))
    }))
    .map(to_us)
}

pub(super) fn linear_us(gpu: KernelGpu, engine: Engine, q: &LinearQuery) -> Option<f64> {
    if !positive(&[q.key_heads, q.value_heads, q.key_head_dim, q.value_head_dim, q.batch, q.seq_len]) {
        return None;
    }
    let f = envelope(gpu, Some(engine), Op::LinearAttention)?;
    let (dk, dv) = (Q::N(q.key_head_dim), Q::N(q.value_head_dim));
    // The fastest kernel measured for this kernel and phase, at exactly this key-head count (a
    // shard the tables never ran is not interpolated) and value heads within those measured there.
    fastest(f.names(0).filter(|name| q.kernel.is(q.phase, name)).map(|kernel| {
        let g = f.file().find(&[Q::S(kernel), dk, dv])?;
        let level = g.outer.values.iter().position(|&v| v == q.key_heads)?;
        let values = &g.levels[level].inner.values;
        let (lo, hi) = (*values.first()?, *values.last()?);
        if q.value_heads < lo || q.value_heads > hi {
            return None;
        }
        f.eval_group(g, q.value_heads, q.key_heads, false, |t| f.eval_ln(t, &[q.batch, q.seq_len]))
    }))
    .map(to_us)
}

/// Bytes per element of the 16-bit collective tables (bf16 / `half`).
const COLLECTIVE_ELEMENT_BYTES: f64 = 2.0;

pub(super) fn allreduce_us(gpu: KernelGpu, engine: Engine, gpus: u32, bytes: f64) -> Option<f64> {
    if gpus == 0 || !positive(&[bytes]) {
        return None;
    }
    if gpus == 1 {
        return Some(0.0);
    }
    let custom = envelope(gpu, Some(engine), Op::CustomAllreduce).and_then(|f| {
        // The CUDA-graph variant where there is one, else the engine's only kernel.
        let group = || {
            let kernel = f.names(1).find(|k| k.ends_with("_graph")).or_else(|| f.names(1).next())?;
            f.file().find(&[Q::S("all_reduce"), Q::S(kernel), Q::S("bfloat16")])
        };
        collective_us(f, PlanKey::CustomAllReduce(gpu, engine, gpus), group, gpus, bytes)
    });
    let nccl = nccl_us(gpu, Collective::AllReduce, gpus, bytes);
    fastest_us([custom, nccl].into_iter())
}

pub(super) fn nccl_us(gpu: KernelGpu, op: Collective, gpus: u32, bytes: f64) -> Option<f64> {
    if gpus == 0 || !positive(&[bytes]) {
        return None;
    }
    if gpus == 1 {
        return Some(0.0);
    }
    let f = envelope(gpu, None, Op::Nccl)?;
    let group = || f.file().find(&[Q::S(op.as_str()), Q::S("half")]);
    collective_us(f, PlanKey::Nccl(gpu, op, gpus), group, gpus, bytes)
}

/// A collective's time from group `group()` of `f`, µs: the GPU count interpolated, then the
/// message (elements of [`COLLECTIVE_ELEMENT_BYTES`]); through the thread's plan for `key`.
fn collective_us(
    f: Envelope<'static>,
    key: PlanKey,
    group: impl Fn() -> Option<&'static Group>,
    gpus: u32,
    bytes: f64,
) -> Option<f64> {
    let n = f64::from(gpus);
    let leaf = |t| f.eval_ln(t, &[bytes / COLLECTIVE_ELEMENT_BYTES]);
    let make = || LookupPlan { default: None, kernels: vec![KernelPlan::of(f.file(), group(), n, 1.0, false)] };
    match planned(key, make, leaf) {
        Some(us) => us,
        None => f.eval_group(group()?, n, 1.0, false, leaf).map(to_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PHASES: [AttentionPhase; 2] = [AttentionPhase::Context, AttentionPhase::Generation];

    /// Lookups answered from the recent answers are each query's own: GEMM and attention
    /// queries asked in one order and then again in the other (so that every slot has held other
    /// queries in between) give what they gave the first time.
    #[test]
    fn recent_answers_are_each_querys_own() {
        let (gpu, engine) = (KernelGpu::H100Sxm, Engine::Trtllm);
        let shapes = [(6144.0, 4096.0), (4096.0, 4096.0), (28672.0, 4096.0), (4096.0, 14336.0), (128256.0, 4096.0)];
        let gemms: Vec<(f64, f64, f64)> =
            [1.0, 3.0, 64.0, 1000.0].iter().flat_map(|&m| shapes.map(|(n, k)| (m, n, k))).collect();
        let attention = |batch, length| crate::testing::llama_attention(AttentionPhase::Generation, batch, length);
        let queries: Vec<AttentionQuery> =
            [1.0, 8.0, 64.0].iter().flat_map(|&b| [128.0, 2047.0, 8192.0].map(|l| attention(b, l))).collect();
        let gemm = |&(m, n, k): &(f64, f64, f64)| gemm_envelope_us(gpu, engine, GemmDtype::Bf16, m, n, k);
        let first: Vec<Option<f64>> = gemms.iter().map(gemm).collect();
        let first_attention: Vec<Option<f64>> = queries.iter().map(|q| attention_us(gpu, engine, q)).collect();
        assert!(first.iter().chain(&first_attention).all(Option::is_some));
        for (g, want) in gemms.iter().zip(&first).rev() {
            assert_eq!(gemm(g), *want, "{g:?}");
        }
        for (q, want) in queries.iter().zip(&first_attention).rev() {
            assert_eq!(attention_us(gpu, engine, q), *want, "{q:?}");
        }
        // Mixtral's experts at several token counts, asked again in turn: each its own answer.
        let moe: Vec<MoeQuery> = [1.0, 4.0, 24.0, 512.0].map(crate::testing::mixtral_moe).to_vec();
        let first_moe: Vec<Option<f64>> = moe.iter().map(|q| moe_us(gpu, engine, q)).collect();
        assert!(first_moe.iter().all(Option::is_some) && first_moe[0] != first_moe[3]);
        for (q, want) in moe.iter().zip(&first_moe).rev() {
            assert_eq!(moe_us(gpu, engine, q), *want, "{q:?}");
            assert_eq!(moe_lookup_us(gpu, engine, q), *want, "{q:?}");
        }
        // The shapes of one step spread over the slots (float keys differ only in high bits).
        let slots: std::collections::HashSet<usize> = shapes
            .iter()
            .map(|(n, k)| {
                Recent::<(GemmKey, u64), 16>::slot(&(
                    (gpu, engine, GemmDtype::Bf16, n.to_bits(), k.to_bits()),
                    1f64.to_bits(),
                ))
            })
            .collect();
        assert!(slots.len() >= 4, "{slots:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Collectives through their keys' plans are the lookups themselves, bit for bit: GPU
        /// counts on, between and past the measured ones, messages across the grid.
        #[test]
        fn collective_plans_give_the_lookups_themselves(
            g in 0usize..5, e in 0usize..3, op in 0usize..4, gpus in 2u32..12,
            bytes in prop_oneof![1.0f64..1e10, (0u32..34).prop_map(|p| 2f64.powi(p as i32))],
        ) {
            let (gpu, engine) = (KernelGpu::ALL[g], Engine::ALL[e]);
            let op = [Collective::AllGather, Collective::AllReduce, Collective::AllToAll, Collective::ReduceScatter][op];
            let direct = |f: Envelope<'static>, g: Option<&'static Group>| {
                f.eval_group(g?, f64::from(gpus), 1.0, false, |t| f.eval_ln(t, &[bytes / COLLECTIVE_ELEMENT_BYTES])).map(to_us)
            };
            let nccl = envelope(gpu, None, Op::Nccl).and_then(|f| direct(f, f.file().find(&[Q::S(op.as_str()), Q::S("half")])));
            let custom = envelope(gpu, Some(engine), Op::CustomAllreduce).and_then(|f| {
                let kernel = f.names(1).find(|k| k.ends_with("_graph")).or_else(|| f.names(1).next())?;
                direct(f, f.file().find(&[Q::S("all_reduce"), Q::S(kernel), Q::S("bfloat16")]))
            });
            let all_nccl = envelope(gpu, None, Op::Nccl)
                .and_then(|f| direct(f, f.file().find(&[Q::S("all_reduce"), Q::S("half")])));
            let allreduce = fastest_us([custom, all_nccl].into_iter());
            for _ in 0..2 {
                prop_assert_eq!(nccl_us(gpu, op, gpus, bytes).map(f64::to_bits), nccl.map(f64::to_bits));
                prop_assert_eq!(allreduce_us(gpu, engine, gpus, bytes).map(f64::to_bits), allreduce.map(f64::to_bits));
            }
        }

        /// MLA attention and its batched matmuls through their keys' plans are the lookups
        /// themselves, bit for bit, heads on and between the measured counts.
        #[test]
        fn mla_plans_give_the_lookups_themselves(
            g in 0usize..5, e in 0usize..3, p in 0usize..2, kv_fp8 in any::<bool>(), pre in any::<bool>(),
            heads in prop_oneof![Just(16.0f64), Just(128.0), Just(1.0), 0.5f64..200.0],
            batch in prop_oneof![1.0f64..2048.0, (0u32..12).prop_map(|p| f64::from(1u32 << p))],
            length in prop_oneof![1.0f64..300_000.0, (0u32..18).prop_map(|p| f64::from(1u32 << p))],
        ) {
            let (gpu, engine) = (KernelGpu::ALL[g], Engine::ALL[e]);
            let kv_dtype = if kv_fp8 { AttnDtype::Fp8 } else { AttnDtype::Bf16 };
            let q = MlaQuery { phase: PHASES[p], dtype: AttnDtype::Bf16, kv_dtype, heads, batch, length };
            let op = match q.phase {
                AttentionPhase::Context => Op::ContextMla,
                AttentionPhase::Generation => Op::GenerationMla,
            };
            let direct = envelope(gpu, Some(engine), op).and_then(|f| mla_lookup_us(f, &q));
            let (bmm, name) = if pre { (MlaBmm::Pre, "mla_gen_pre") } else { (MlaBmm::Post, "mla_gen_post") };
            let bmm_direct = file(gpu, Some(engine), Op::MlaBmm)
                .and_then(|f| mla_bmm_lookup_us(f, name, kv_dtype, heads, batch));
            for _ in 0..2 {
                prop_assert_eq!(mla_us(gpu, engine, &q).map(f64::to_bits), direct.map(f64::to_bits));
                prop_assert_eq!(
                    mla_bmm_us(gpu, engine, bmm, kv_dtype, heads, batch).map(f64::to_bits),
                    bmm_direct.map(f64::to_bits)
                );
            }
        }

        /// A GEMM through its shape's curve in m is the table's own interpolation, bit for bit,
        /// on and between grid points, below and above the grid.
        #[test]
        fn a_gemm_curve_gives_the_tables_interpolation(
            g in 0usize..5, e in 0usize..3, d in 0usize..7,
            m in prop_oneof![1.0f64..70_000.0, (0u32..17).prop_map(|p| f64::from(1u32 << p))],
            n in prop_oneof![16.0f64..140_000.0, Just(4096.0), Just(6144.0), Just(14336.0)],
            k in prop_oneof![16.0f64..140_000.0, Just(4096.0), Just(28672.0)],
        ) {
            let (gpu, engine, dtype) = (KernelGpu::ALL[g], Engine::ALL[e], GemmDtype::ALL[d]);
            let direct = envelope(gpu, Some(engine), Op::Gemm)
                .zip(gemm_table(gpu, engine, dtype))
                .and_then(|(f, t)| f.eval_ln(t, &[m, n, k]))
                .map(to_us);
            // Twice: the curve made, then the curve kept.
            for _ in 0..2 {
                let curve = gemm_envelope_us(gpu, engine, dtype, m, n, k);
                prop_assert_eq!(curve.map(f64::to_bits), direct.map(f64::to_bits));
            }
        }

        /// An attention lookup through its key's plan is the lookup itself, bit for bit: every
        /// GPU, engine and phase, heads on and between the measured layouts, windows with and
        /// without tables of their own.
        #[test]
        fn an_attention_plan_gives_the_lookup_itself(
            g in 0usize..5, e in 0usize..3, p in 0usize..2, fp8 in any::<bool>(), kv_fp8 in any::<bool>(),
            head_dim in prop_oneof![Just(64u32), Just(128), Just(256), Just(96)],
            kv_heads in prop_oneof![1.0f64..64.0, Just(8.0), Just(1.0), Just(4.0)],
            group in prop_oneof![Just(1.0f64), Just(4.0), Just(8.0), 1.0f64..16.0],
            window in prop_oneof![Just(0u32), Just(4096), 1u32..100_000],
            batch in prop_oneof![1.0f64..2048.0, (0u32..12).prop_map(|p| f64::from(1u32 << p))],
            length in prop_oneof![1.0f64..300_000.0, (0u32..18).prop_map(|p| f64::from(1u32 << p))],
        ) {
            let (gpu, engine) = (KernelGpu::ALL[g], Engine::ALL[e]);
            let dtype = |fp8: bool| if fp8 { AttnDtype::Fp8 } else { AttnDtype::Bf16 };
            let q = AttentionQuery {
                phase: PHASES[p],
                dtype: dtype(fp8),
                kv_dtype: dtype(kv_fp8),
                head_dim,
                heads: kv_heads * group,
                kv_heads,
                window,
                batch,
                length,
            };
            let op = match q.phase {
                AttentionPhase::Context => Op::ContextAttention,
                AttentionPhase::Generation => Op::GenerationAttention,
            };
            let direct = envelope(gpu, Some(engine), op).and_then(|f| attention_lookup_us(f, gpu, engine, &q));
            for _ in 0..2 {
                prop_assert_eq!(attention_us(gpu, engine, &q).map(f64::to_bits), direct.map(f64::to_bits));
            }
        }
    }
}
