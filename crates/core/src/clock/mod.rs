//! The measured clock: each operator's *expected* time on a real GPU, beside the roofline's.
//!
//! The roofline ([`crate::roofline`]) charges an operator `max(FLOPs ÷ (peak × 60 %), bytes ÷
//! (bandwidth × 80 %))` and nothing else. Real kernels differ in ways that are known and measured
//! (`docs/fidelity.md` lists every source and how well the result matches). [`Measured`] is a
//! roofline rebuilt from measurements plus the terms a roofline lacks, each a function below with
//! its source:
//!
//! * achievable bandwidth and achievable matmul peak per GPU and format ([`Achievable`], the GPU's profile in `gpus.toml`: STREAM-like
//!   copies and the best-shape matmul searches of `measured-kernels.md` §1–2);
//! * GEMM efficiency by shape: tile padding and wave quantisation ([`gemm_shape_efficiency`]);
//! * attention efficiency by phase ([`Achievable::attention_prefill`]);
//! * a fixed cost per kernel, with CUDA graphs or launched from the host ([`kernel_fixed_s`],
//!   [`HOST_LAUNCH_S`]);
//! * fusion as each engine fuses ([`engine_join`]);
//! * weight-only quantised GEMMs paying for dequantisation ([`dequant_s`]), so W4A16 loses its
//!   edge over bf16 as the batch grows ([`w4a16_crossover_batch`] finds where);
//! * collectives: the measured all-reduce and NCCL tables inside one server (`Measured`'s
//!   `collective_table_s`), else the α + n/β model of [`crate::parallel`] (NCCL's own cost model),
//!   plus the host launch floor when launched eagerly ([`Measured`]'s `link_time`);
//! * the engine's version where it changes a kernel: TensorRT-LLM before XQA reads a GQA group's
//!   KV once per query head in decode ([`Engine::kv_read_per_query_head`]);
//! * host time per step that the GPU waits for ([`Engine::host_step_s`]: vLLM's V0 engine), a
//!   row of its own.
//!
//! Fitted constants (3, on the 62 fit rows of `docs/fidelity.md`): [`GRAPH_KERNEL_S`],
//! [`HOST_LAUNCH_S`] and [`DEQUANT_OPS_PER_WEIGHT`]; and one on three of its end-to-end rows,
//! [`crate::engine::VLLM_V0_HOST_STEP_S`]. Every other number is a published measurement, quoted
//! where it is used.
//!
//! # Where an operator's time comes from, in order
//!
//! 1. **Measured kernel tables** ([`crate::kernels`], NVIDIA AIConfigurator's per-kernel database):
//!    when the GPU is a catalogue GPU with tables ([`KernelGpu::for_gpu`]: A100-SXM, H100-SXM, H200,
//!    B200, B300, GB200, GB300, L40S, RTX PRO 6000 Server, Arc Pro B60; never a user's GPU file),
//!    the engine has measured kernels there ([`kernel_tables`]: trtllm, vllm, sglang where
//!    [`KernelGpu::engines`] lists them; never gpt-fast or eager), and the operator is a GEMM in a
//!    kernel of its own whose format has a table timed as the engine runs it ([`gemm_dtype`],
//!    [`GemmDtype::timed_in_cuda_graphs`]: vLLM's `fp8_block` tables were timed eagerly and are not
//!    read): its time is `gemm_envelope_us(gpu, engine, dtype, m, n, k) × instances` µs (the fastest
//!    measured kernel for at least m rows: never faster for a bigger batch), the whole measured
//!    kernel (launch included), and nothing is added ([`Measured::table_s`]). A layer's routed
//!    experts come from the engine's fused-MoE tables where they measured the model's exact shape,
//!    format and (TP, EP) split under uniform routing (`Measured::moe_table_s`), shared among the
//!    expert GEMM rows by weight, the activation and combine inside that kernel. Gated DeltaNet's
//!    short convolution and delta rule come from the linear-attention tables at the heads on the
//!    GPU (`Measured::linear_table_s`, the tables' bf16 state scaled to the model's state dtype by
//!    its bytes). FlashAttention
//!    likewise from the engine's attention tables (`Measured::attention_table_s`: a step's decodes
//!    on the generation kernel and its prompt chunks on the context kernel; MLA's absorbed decode
//!    from its own tables), read only inside the head groups (query heads per KV head) the tables
//!    measured; and collectives from the all-reduce / NCCL tables where the group is inside one
//!    server on the link they were measured over. A measured time is never below the operator's
//!    HBM bytes at the achievable bandwidth nor its FLOPs at the peak (a collective: its link bytes
//!    at the link's peak); one above [`TABLE_SLOW_LIMIT`] × its roofline says so
//!    ([`SlowCause::MeasuredSlowShape`]).
//! 2. **The fitted model above** for everything else, and wherever a lookup returns `None`: the
//!    operators an engine merges into the previous GEMM (K and V beside Q, up beside gate) keep
//!    their marginal roofs in the fitted model (the table's time is for the first GEMM's own
//!    shape), epilogue-fused operators their arithmetic; attention with a sliding window, MLA's
//!    expanded form (prefill), unfused attention, a head group the tables never measured and
//!    TensorRT-LLM's decodes on its per-query-head kernel (before XQA, or a head group past
//!    [`crate::engine::XQA_MAX_HEAD_GROUP`]) stay on the fitted model; routed experts whose shape,
//!    split or routing the MoE tables lack take the fitted grouped GEMM; Kimi Delta Attention's and
//!    Mamba-2's kernels, a Gated DeltaNet shard the tables never ran and TensorRT-LLM's prompt
//!    convolution stay on the fitted model; collectives across servers stay on the α + n/β model.
//!
//! The roofs (`compute_s`, `memory_s`, the bound column) are the fitted model's in every case, and
//! the roofline time is kept beside the expected time.

use crate::engine::{Clock, Engine};
use crate::error::Result;
use crate::hardware::{Achievable, Gpu};
use crate::kernels::AttentionPhase;
use crate::kernels::{self, GemmDtype, KernelGpu, Tables};
use crate::kinds::OpClass;
use crate::kinds::{Epilogue, MergeGroup, OpKind, Shard};
use crate::layout::{CollectiveCall, LinkScope};
use crate::model::Reach;
use crate::moe::uniform_experts_touched;
use crate::operator::{MoeShape, Op, RecurrentPart, RecurrentShape};
use crate::precision::{MathFormat, Precision};
use crate::roofline::{
    Efficiency, FittedKernel, Join, KernelTable, Roofline, SlowCause, TimeModel, TimeSource, Timed, Timing,
};
use crate::workload::Phase;

/// Fixed cost of one kernel in an engine that replays CUDA graphs, seconds: the launch, the ramp-up
/// and the tail between dependent kernels, which a roofline does not see. **Fitted** (one constant)
/// on the single-stream decode rows of `docs/fidelity.md` (gpt-fast and AIConfigurator batch-1
/// steps, where ~230 kernels a step take 1–2 ms beyond the bytes at achievable bandwidth);
/// consistent with CUDA-graph kernel gaps of a few µs.
pub const GRAPH_KERNEL_S: f64 = 4.5e-6;

/// Host time to dispatch one operator from PyTorch eager, seconds: without CUDA graphs a kernel
/// shorter than this leaves the GPU idle, so an eager kernel takes `max(GPU time, HOST_LAUNCH_S)`.
/// **Fitted** (one constant) on LLMCompass's per-operator A100 decode layer (small elementwise
/// kernels and all-reduces measured at 17–48 µs "regardless of size", `measured-kernels.md` §6).
pub const HOST_LAUNCH_S: f64 = 30e-6;

/// Vector operations per weight element to dequantise a weight-only quantised GEMM's weights
/// (unpack, convert, scale), done once per M tile of [`DEQUANT_TILE_M`] rows and not overlapped
/// with the weight loads (added to the kernel's time, not to a roof). **Fitted** (one constant) on gpt-fast's int8 and int4 weight-only
/// batch-1 decode rows (Llama-2-7B, Llama-2-70B, Mixtral on A100: 1069 and 863 GB/s achieved
/// against 1397 GB/s in bf16, `measured-kernels.md` §4).
pub const DEQUANT_OPS_PER_WEIGHT: f64 = 4.0;

/// Achievable fraction of HBM bandwidth of PyTorch eager's elementwise and normalisation kernels
/// (unfused, one tensor pass each): LLMCompass's A100 prefill LayerNorm moves 16,384 × 12,288 fp16
/// values in and out (805 MB) in 0.68 ms, 1.18 TB/s = 0.58 of 2.039 TB/s (derived,
/// `measured-kernels.md` §6; its softmax, 1.15 TB/s, agrees). Fused engines' kernels reach the
/// GPU's [`Achievable::bandwidth`].
pub const EAGER_VECTOR_BANDWIDTH: f64 = 1.18 / 2.039;

/// Rows of one M tile of a weight-only quantised GEMM kernel: each M tile dequantises the weights
/// again (Marlin and TensorRT-LLM's mixed-input GEMMs use M tiles of 16–64; 64 here).
pub const DEQUANT_TILE_M: f64 = 64.0;

/// A table-timed operator taking more than this many times its roofline time, plus
/// [`GRAPH_KERNEL_S`], names why the measured kernel is that slow
/// ([`SlowCause::MeasuredSlowShape`], or a kernel path with a cause of its own): the limit the
/// physics property test holds every table row to.
pub const TABLE_SLOW_LIMIT: f64 = 10.0;

/// CTA tile of the GEMM kernels for the shape efficiency: 128 columns, and 64 rows for skinny
/// GEMMs (`m ≤ 64`), 128 otherwise — the common CUTLASS/cuBLAS tiles for sm80/sm90 16-bit GEMMs,
/// the same tiles [`crate::tiling`] explores in detail.
pub const GEMM_TILE_N: f64 = 128.0;

/// Fixed cost of a kernel under `engine`, seconds (added to its roofs): [`GRAPH_KERNEL_S`] for
/// every engine, the launch gap of a dependent kernel; eager engines add the host floor
/// separately ([`kernel_time_s`]).
pub fn kernel_fixed_s(_engine: Engine) -> f64 {
    GRAPH_KERNEL_S
}

/// Time of one kernel with roofs `roof_s = max(compute, memory)` under `engine`:
/// `roof_s + GRAPH_KERNEL_S`, and at least [`HOST_LAUNCH_S`] when launched eagerly from the host.
pub fn kernel_time_s(engine: Engine, roof_s: f64) -> f64 {
    let t = roof_s + kernel_fixed_s(engine);
    if engine.cuda_graphs() {
        t
    } else {
        t.max(HOST_LAUNCH_S)
    }
}

/// How `engine` runs operator `op` (module docs of [`Engine`] say which engine fuses what;
/// sources: TensorRT-LLM's attention plugin and its layer as NVIDIA AIConfigurator composes it
/// (`aiconfigurator/sdk/models`: `add_norm` an elementwise kernel of 2h in and 2h out per token,
/// `act_gate` one of the gate/up output in and the intermediate out), vLLM's `QKVParallelLinear`,
/// `MergedColumnParallelLinear` and `fused_add_rms_norm`, Inductor's pointwise fusion in gpt-fast):
///
/// * **merged GEMMs** ([`Join::Part`]): Q, K and V in one QKV GEMM (every engine but eager), gate
///   and up in one gate/up GEMM (trtllm, vllm, sglang; gpt-fast keeps them apart), routed and
///   shared experts alike — only where the checkpoint stores them as separate matrices
///   ([`Op::merge_n`]);
/// * **add + norm** (trtllm, vllm, sglang): the residual add a kernel of its own and the RMSNorm
///   after it inside that kernel ([`Join::Fused`]: the sum stays on chip), so the kernel reads
///   the residual and the sublayer's output and writes the new residual and the normalised
///   input, `4·h` elements per token;
/// * **epilogues** ([`Join::Fused`], bytes on chip by [`fused_on_chip_bytes`]): RoPE and the
///   KV-cache append into the QKV/attention kernels (trtllm, gpt-fast); the residual add and the
///   activation into the previous kernel (gpt-fast);
/// * FlashAttention's softmax inside the attention kernel under every engine ([`Op::fused`]);
/// * everything else a kernel of its own ([`Join::Own`]): the gated activation (SwiGLU) after the
///   gate/up GEMM under trtllm, vllm and sglang, every operator under eager.
pub fn engine_join(engine: Engine, op: &Op) -> Join {
    if op.fused {
        return Join::Fused { on_chip_bytes: 0.0 };
    }
    let facts = op.kind.facts();
    let engine = engine.family();
    let merges = |group: MergeGroup| match (engine, group) {
        (Engine::Eager, _) | (Engine::GptFast, MergeGroup::GateUp) => false,
        (Engine::GptFast, MergeGroup::Qkv) => true,
        (Engine::Trtllm | Engine::TrtllmPreXqa | Engine::Vllm | Engine::VllmV0 | Engine::Sglang, _) => true,
    };
    if let (Some((group, first)), Some(_)) = (facts.merged, op.merge_n) {
        if merges(group) {
            return Join::Part { first, share: op.merge_share() };
        }
    }
    let epilogue = match (engine, facts.epilogue) {
        (_, Epilogue::None) | (Engine::Eager, _) => false,
        (Engine::GptFast, Epilogue::Residual(_) | Epilogue::Act | Epilogue::Rope | Epilogue::KvWrite) => true,
        (Engine::GptFast, Epilogue::Norm) => false,
        (Engine::Trtllm | Engine::TrtllmPreXqa, Epilogue::Norm | Epilogue::Rope | Epilogue::KvWrite) => true,
        (Engine::Trtllm | Engine::TrtllmPreXqa, Epilogue::Residual(_) | Epilogue::Act) => false,
        (Engine::Vllm | Engine::VllmV0 | Engine::Sglang, Epilogue::Norm) => true,
        (
            Engine::Vllm | Engine::VllmV0 | Engine::Sglang,
            Epilogue::Residual(_) | Epilogue::Act | Epilogue::Rope | Epilogue::KvWrite,
        ) => false,
    };
    if epilogue {
        Join::Fused { on_chip_bytes: fused_on_chip_bytes(op.kind, &op.cost) }
    } else {
        Join::Own
    }
}

/// How `engine` joins operators into kernels, in words ([`engine_join`]), for footers.
pub fn fusion_words(engine: Engine) -> &'static str {
    match engine {
        Engine::Trtllm | Engine::TrtllmPreXqa => "q/k/v run as one QKV GEMM and gate/up as one GEMM, each row charged its columns' share; each residual add and the RMSNorm after it are one kernel, SiLU × gate a kernel of its own; the norm, RoPE and the KV-cache append run inside the kernel before them (bound `fused`: the time they add there, their on-chip inputs not counted as HBM traffic)",
        Engine::Vllm | Engine::VllmV0 | Engine::Sglang => "q/k/v run as one QKV GEMM and gate/up as one GEMM, each row charged its columns' share; each residual add and the RMSNorm after it are one kernel (the norm bound `fused`: the time it adds there, its on-chip input not counted as HBM traffic)",
        Engine::GptFast => "q/k/v run as one QKV GEMM, each row charged its columns' share; the residual add, the activation, RoPE and the KV-cache append run inside the kernel before them (bound `fused`: the time they add there, their on-chip inputs not counted as HBM traffic)",
        Engine::Eager => "none: every operator is a kernel of its own, launched from the host",
    }
}

/// The counted bytes of an operator fused into the previous kernel that never reach HBM:
///
/// * a residual add reads the previous kernel's output, still on chip, and the residual stream
///   from HBM, and writes the sum: half of its reads stay on chip (a parallel layer's
///   `x + attn + mlp` reads three tensors, one of them on chip);
/// * the gated activation (SiLU × gate, or the activation alone) reads the gate/up GEMM's
///   outputs from its accumulators: all of its reads (its output is written);
/// * RoPE rotates Q and K inside the kernel that produced them: its reads and writes replace
///   that kernel's output (already counted there): all of its bytes;
/// * the KV-cache append reads the new K/V and writes the cache through HBM: none;
/// * an RMSNorm after the residual add reads the sum the add just made, on chip: all of its
///   activation reads (its output and its scale weights go through HBM).
pub fn fused_on_chip_bytes(kind: OpKind, cost: &crate::cost::Cost) -> f64 {
    match kind.facts().epilogue {
        Epilogue::Norm | Epilogue::Act => cost.activation_read_bytes(),
        Epilogue::Residual(inputs) => cost.activation_read_bytes() / f64::from(inputs),
        Epilogue::Rope => cost.activation_bytes,
        Epilogue::KvWrite | Epilogue::None => 0.0,
    }
}

/// Fraction of a GEMM's tensor-core work that is useful, from its shape: tile padding
/// `m·n ÷ (⌈m/bm⌉·bm · ⌈n/bn⌉·bn)` times wave quantisation `ctas ÷ (⌈ctas/SMs⌉ · SMs)` for
/// `ctas = ⌈m/bm⌉·⌈n/bn⌉·instances·splits` on `sm_count` SMs (one CTA per SM at a time, as the
/// large-tile kernels run; the tile model of [`crate::tiling`] derives the same two factors for any
/// tile). `bm` = 16 for `m ≤ 16` (skinny kernels on the 16-row MMA), 64 for `m ≤ 64`, else 128;
/// `bn` = [`GEMM_TILE_N`]; `splits` = the split-K factor a library picks when the tiles do not fill
/// the GPU, `min(⌊SMs ÷ tiles⌋, ⌈k ÷ 256⌉)`, at least 1. `instances` may be fractional (the
/// expected number of experts a step touches) and counts as it is: the expected CTAs, so that the
/// time grows with the expected work rather than in steps of whole experts.
pub fn gemm_shape_efficiency(m: f64, n: f64, k: f64, instances: f64, sm_count: u64) -> f64 {
    if m <= 0.0 || n <= 0.0 || sm_count == 0 {
        return 1.0;
    }
    let bm = if m <= 16.0 {
        16.0
    } else if m <= 64.0 {
        64.0
    } else {
        128.0
    };
    let (tm, tn) = ((m / bm).ceil(), (n / GEMM_TILE_N).ceil());
    let padding = m * n / (tm * bm * tn * GEMM_TILE_N);
    let tiles = tm * tn * instances.max(1.0);
    let sms = sm_count as f64;
    let splits = (sms / tiles).floor().min((k / 256.0).ceil()).max(1.0);
    let ctas = tiles * splits;
    let waves = (ctas / sms).ceil();
    padding * ctas / (waves * sms)
}

/// Dequantisation time of a weight-only quantised GEMM, seconds: `⌈m / DEQUANT_TILE_M⌉ ·
/// instances · k · n · DEQUANT_OPS_PER_WEIGHT ÷ (vector peak × achievable fraction)`. Zero for
/// 16-bit weights and for W8A8 (the tensor cores take the 8-bit operands as they are).
pub fn dequant_s(op: &Op, gpu: &Gpu, fit: &Achievable) -> f64 {
    let Some(g) = op.gemm else { return 0.0 };
    let weight_only = g.weight.bytes() < 2.0 && matches!(op.math, MathFormat::Bf16 | MathFormat::Fp16);
    if !weight_only {
        return 0.0;
    }
    let tiles = (g.m / DEQUANT_TILE_M).ceil().max(1.0);
    let weights = g.instances * g.k as f64 * g.n as f64;
    tiles * weights * DEQUANT_OPS_PER_WEIGHT / (gpu.peak_flops_per_s.vector * fit.bf16)
}

/// The measured kernel tables the measured clock reads for `engine` on `gpu`: where the GPU is a
/// catalogue GPU with tables ([`KernelGpu::for_gpu`]; never a user's GPU file) and the engine has
/// measured kernels ([`Engine::kernel_engine`]) measured on it ([`KernelGpu::engines`]); `None`
/// otherwise (the fitted model times every operator).
/// At the engine version the clock names, the nearest measured at or below it ([`Tables::at`]:
/// a version below every one measured on the GPU is refused, naming those measured); by default
/// the default version's.
pub fn kernel_tables(clock: Clock, gpu: &Gpu) -> Result<Option<&'static Tables>> {
    let (Some(kgpu), Some(kengine)) = (KernelGpu::for_gpu(gpu), clock.engine.kernel_engine()) else {
        return Ok(None);
    };
    if !kgpu.engines().contains(&kengine) {
        return Ok(None);
    }
    Tables::at(kgpu, kengine, clock.version).map(Some)
}

/// Whether a model's operators can read `table`: the dense GEMMs and the collectives always; the
/// attention tables for standard or compressed attention, MLA's for latent or compressed
/// attention, MoE's for routed experts, each recurrent table for its rule's layers, the
/// hyper-connection table for more than one residual stream (decoder layers and MTP layers).
pub fn model_reads(model: &crate::model::ModelSpec, table: KernelTable) -> bool {
    use crate::model::{Attention, Mlp};
    let layers = model.layers().iter().chain(model.mtp.iter().flat_map(|m| m.layers.iter()));
    let any = |f: &dyn Fn(&crate::model::LayerSpec) -> bool| layers.clone().any(f);
    let recurrent = |rule: crate::model::Recurrence| move |l: &crate::model::LayerSpec| matches!(&l.attention, Attention::Recurrent(m) if m.rule == rule);
    match table {
        KernelTable::Gemm | KernelTable::AllReduce | KernelTable::Nccl => true,
        KernelTable::Attention => any(&|l| matches!(l.attention, Attention::Standard(_) | Attention::Compressed(_))),
        KernelTable::Mla | KernelTable::MlaBatchedGemm => {
            any(&|l| matches!(l.attention, Attention::Latent(_) | Attention::Compressed(_)))
        }
        KernelTable::Moe => any(&|l| matches!(l.mlp, Mlp::Moe(_))),
        KernelTable::LinearAttention => any(&recurrent(crate::model::Recurrence::GatedDelta)),
        KernelTable::Kda => any(&recurrent(crate::model::Recurrence::KimiDelta)),
        KernelTable::Mamba2 => any(&recurrent(crate::model::Recurrence::Mamba2)),
        KernelTable::Mhc => any(&|l| l.residual_streams > 1),
    }
}

/// The measured GEMM table format for a GEMM with `weight` weights running in `math`: 16-bit →
/// bf16, fp8 (per tensor or 128-block scales) in fp8 math → `Fp8`/`Fp8Block`, NVFP4 → `Nvfp4`,
/// int4 and int8 weights with 16-bit math → the weight-only kernels, int8 in int8 math →
/// SmoothQuant W8A8; `None` for every other combination (the fitted model times it).
pub fn gemm_dtype(weight: Precision, math: MathFormat) -> Option<GemmDtype> {
    let wide_math = matches!(math, MathFormat::Bf16 | MathFormat::Fp16);
    match weight {
        Precision::Bf16 | Precision::Fp16 if wide_math => Some(GemmDtype::Bf16),
        Precision::Fp8 if math == MathFormat::Fp8 => Some(GemmDtype::Fp8),
        Precision::Fp8Block { block: 128 } if math == MathFormat::Fp8 => Some(GemmDtype::Fp8Block),
        Precision::NvFp4 if math == MathFormat::Fp4 => Some(GemmDtype::Nvfp4),
        Precision::Int4 | Precision::Int4Group { .. } if wide_math => Some(GemmDtype::Int4WeightOnly),
        Precision::Int8 if wide_math => Some(GemmDtype::Int8WeightOnly),
        Precision::Int8 if math == MathFormat::Int8 => Some(GemmDtype::SmoothQuant),
        _ => None,
    }
}

/// The measured MoE table format for routed experts with `weight` weights whose GEMMs run in
/// `math`: 16-bit → bf16, fp8 per tensor in fp8 math → `Fp8`, fp8 in 128-blocks → `Fp8Block`,
/// NVFP4 in fp4 math → `NvFp4`, MXFP4 with 16-bit math → `W4a16MxFp4` and with fp8 math →
/// `W4a8MxFp4` (MXFP8 activations), int4 with 16-bit math → `Int4WeightOnly`; `None` for every
/// other combination (the fitted model times it).
pub fn moe_dtype(weight: Precision, math: MathFormat) -> Option<kernels::MoeDtype> {
    use kernels::MoeDtype;
    let wide_math = matches!(math, MathFormat::Bf16 | MathFormat::Fp16);
    match weight {
        Precision::Bf16 | Precision::Fp16 if wide_math => Some(MoeDtype::Bf16),
        Precision::Fp8 if math == MathFormat::Fp8 => Some(MoeDtype::Fp8),
        Precision::Fp8Block { block: 128 } if math == MathFormat::Fp8 => Some(MoeDtype::Fp8Block),
        Precision::NvFp4 if math == MathFormat::Fp4 => Some(MoeDtype::NvFp4),
        Precision::MxFp4 if wide_math => Some(MoeDtype::W4a16MxFp4),
        Precision::MxFp4 if math == MathFormat::Fp8 => Some(MoeDtype::W4a8MxFp4),
        Precision::Int4 | Precision::Int4Group { .. } if wide_math => Some(MoeDtype::Int4WeightOnly),
        _ => None,
    }
}

/// The measured time model for one engine and phase ([`TimeModel`]): per operator, compute
/// `FLOPs ÷ (peak × achievable fraction × shape efficiency)` (+ dequantisation), memory `HBM bytes
/// ÷ (bandwidth × achievable fraction)`, time `max(compute, memory)` plus the kernel's fixed cost
/// ([`kernel_time_s`]), or the measured kernel's time ([`Measured::table_s`]); an operator joins
/// its kernel as the engine runs it ([`engine_join`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The engine.
    pub engine: Engine,
    /// The step's phase (attention efficiency differs).
    pub phase: Phase,
    /// The GPU's achievable fractions ([`Gpu::achievable`], the catalogue's measured profile).
    pub fit: Achievable,
    /// The measured kernel tables for this GPU and engine, where both have them (looked up once
    /// per step); `None`: the fitted model times every operator.
    pub tables: Option<&'static Tables>,
    /// The bandwidth a kernel streams weights from HBM at on this GPU, bytes/s: the peak × the
    /// achievable fraction ([`Achievable::bandwidth`]).
    pub achievable_bandwidth_bytes_per_s: f64,
}

impl Measured {
    /// The measured model of `clock`'s engine in `phase` on `gpu`: its [`Achievable`], and the
    /// kernel tables at the clock's engine version ([`kernel_tables`]) where the GPU is a
    /// catalogue GPU with tables and the engine has measured kernels (a version the GPU's tables
    /// do not reach, refused where a scenario is resolved, leaves the fitted model).
    pub fn new(clock: Clock, phase: Phase, gpu: &Gpu) -> Measured {
        Measured {
            engine: clock.engine,
            phase,
            fit: gpu.achievable,
            tables: kernel_tables(clock, gpu).ok().flatten(),
            achievable_bandwidth_bytes_per_s: gpu.memory_bandwidth_bytes_per_s * gpu.achievable.bandwidth,
        }
    }

    /// The measured time of GEMM `op` in a kernel of its own from the kernel tables, seconds (the
    /// module docs say when), the whole kernel launch included; `None` where there is no table
    /// for it. A GEMM of several instances is one batched kernel, not one kernel per instance:
    /// MLA's absorption (`q_absorb`, `v_up`: one matrix per head) comes from the MLA
    /// batched-matmul table by heads and tokens. The routed experts run as one grouped GEMM in
    /// the engines' fused-MoE kernels: their GEMM rows share the layer's measured MoE kernel
    /// (`Measured::moe_table_s`; a dense GEMM's measured time, launch overhead and all, is not
    /// the grouped kernel's, so never the GEMM table), else the fitted model times them: the
    /// grouped GEMM's roofs with one kernel's fixed cost. `gemm_envelope_us` is the
    /// fastest measured kernel for at least m rows: a bigger batch is never faster.
    pub fn table_s(&self, op: &Op) -> Option<f64> {
        self.table_lookup(op).map(|(t, _)| t)
    }

    /// [`Measured::table_s`] with the table it read.
    fn table_lookup(&self, op: &Op) -> Option<(f64, KernelTable)> {
        let t = self.tables?;
        if op.attention.is_some() {
            return self.attention_table_s(op);
        }
        if let Some(r) = op.recurrent {
            return self.linear_table_s(r).map(|t| (t, kernels::recurrent_table(r.rule)));
        }
        if let Some(h) = op.hyper {
            let us = kernels::mhc_us(t, h.part, h.hidden, h.streams, h.tokens)?;
            return Some((us * 1e-6, KernelTable::Mhc));
        }
        let g = op.gemm?;
        if matches!(op.kind.facts().shard, Shard::Experts(_)) {
            let m = op.moe?;
            // This GEMM's part of the layer's expert GEMMs: its weights over all of theirs.
            let matrices = if m.gated { 3.0 } else { 2.0 };
            let all = matrices * m.hidden as f64 * m.intermediate as f64 / m.tp as f64;
            let share = (g.n as f64 * g.k as f64 / all).min(1.0);
            return Some((self.moe_table_s(op)? * share, KernelTable::Moe));
        }
        if g.instances > 1.0 && op.kind.facts().shard == Shard::HeadInstances {
            let bmm = if op.kind == OpKind::QAbsorb { kernels::MlaBmm::Pre } else { kernels::MlaBmm::Post };
            let fp8 = (op.math == MathFormat::Fp8)
                .then(|| kernels::mla_bmm_us(t, bmm, kernels::AttnDtype::Fp8, g.instances, g.m))
                .flatten();
            let us = fp8.or_else(|| kernels::mla_bmm_us(t, bmm, kernels::AttnDtype::Bf16, g.instances, g.m))?;
            return Some((us * 1e-6, KernelTable::MlaBatchedGemm));
        }
        let dtype = gemm_dtype(g.weight, op.math).filter(|d| d.timed_in_cuda_graphs(t.engine))?;
        let us = kernels::gemm_envelope_us(t, dtype, g.m, g.n as f64, g.k as f64)?;
        Some((us * 1e-6 * g.instances, KernelTable::Gemm))
    }

    /// Where the time of `op` in a kernel of its own comes from: the table it was read from, or
    /// the fitted model of its kind of kernel.
    fn own_source(&self, op: &Op, table: Option<KernelTable>) -> TimeSource {
        if let (Some(t), Some(tables)) = (table, self.tables) {
            let version = tables.version_of(t).unwrap_or(tables.version);
            return TimeSource::Table { gpu: tables.gpu, engine: Some(tables.engine), version, table: t };
        }
        let kind = match (op.kind.facts().class, op.kind.facts().shard) {
            (_, Shard::Experts(_)) => FittedKernel::GroupedGemm,
            (OpClass::Gemm, _) => FittedKernel::Gemm,
            (OpClass::FusedAttention | OpClass::UnfusedAttention, _) => FittedKernel::Attention,
            (OpClass::Recurrence, _) => FittedKernel::Recurrence,
            (OpClass::Scoring, _) => FittedKernel::Scoring,
            (OpClass::Host, _) => FittedKernel::Host,
            (
                OpClass::Elementwise
                | OpClass::Gather
                | OpClass::Collective(..)
                | OpClass::PipelineSend
                | OpClass::PipelineWait,
                _,
            ) => FittedKernel::Vector,
        };
        TimeSource::Fitted(kind)
    }

    /// The measured time of a FlashAttention operator (QKᵀ, softmax and P·V in one kernel, one
    /// layer), seconds, from the engine's attention tables ([`kernels::attention_us`]): keyed by
    /// the phase, the math and KV-cache formats, the head dimension, the heads and KV heads on this
    /// GPU, the sequences `n` and a length per sequence. A step's decodes and its prompt chunks
    /// are two kernels, as the engines run them (TensorRT-LLM's attention op launches its context
    /// FMHA for the chunks and its generation kernel for the decodes; a step of one kind is one
    /// lookup):
    ///
    /// * decodes (`n_d` sequences of one new token): the generation kernel at the cached tokens
    ///   each reads, `decode_pairs ÷ n_d − 1` (its own new token is the −1; the kernel is linear in
    ///   the tokens read, so a mix of contexts reads at its mean);
    /// * prompt chunks (the other `n_p` sequences): the context kernel at the prompt length `L`
    ///   whose causal triangle `n_p·L(L+1)/2` holds their scored pairs (a mix of prompts at the
    ///   length of its mean square, which is what the kernel's work grows with; a chunk after a
    ///   cached prefix at the length with its pairs).
    ///
    /// A sliding window or a chunk (Mistral, Gemma, Llama 4's local layers, the `attend` input)
    /// is the same kernel over fewer positions: its geometry's pairs already hold only the
    /// positions each query reads, so the decode length is the tokens read and a prompt chunk's
    /// length the one whose triangle holds its pairs (the kernel's work is its pairs; TensorRT-LLM
    /// runs a window as a cyclic cache the generation kernel reads whole).
    ///
    /// MLA's absorbed decode from its own tables (`Measured::mla_table_s`). `None` — the fitted
    /// model times it — for unfused attention, MLA's expanded form, a top-k selection or pooled
    /// entries (sparse kernels gather), a KV cache in a format without a table, an engine version whose decode
    /// kernel is not today's ([`Engine::kv_read_per_query_head`]) in a step with decodes, or
    /// shapes the tables do not cover.
    fn attention_table_s(&self, op: &Op) -> Option<(f64, KernelTable)> {
        let t = self.tables?;
        let a = op.attention?;
        let dense_reach = matches!(a.reach, Reach::All | Reach::Window(_) | Reach::Chunk(_));
        if op.kind != OpKind::Attention || !dense_reach || a.pooled || a.kv_heads <= 0.0 {
            return None;
        }
        let g = a.geometry;
        let (decodes, chunks) = (g.decode_sequences, g.sequences - g.decode_sequences);
        if g.sequences < 1.0 || (decodes > 0.0 && !self.engine.decode_attention_is_todays()) {
            return None;
        }
        if a.qk_dim != a.v_dim {
            return self.mla_table_s(op).map(|t| (t, KernelTable::Mla));
        }
        let kv_element_bytes = a.k_bytes_per_position / (a.kv_heads * a.qk_dim);
        let kv_dtype = if kv_element_bytes == 2.0 {
            kernels::AttnDtype::Bf16
        } else if kv_element_bytes == 1.0 {
            kernels::AttnDtype::Fp8
        } else {
            return None;
        };
        let dtype = if op.math == MathFormat::Fp8 { kernels::AttnDtype::Fp8 } else { kernels::AttnDtype::Bf16 };
        let lookup = |phase, batch: f64, length: f64| {
            let q = kernels::AttentionQuery {
                phase,
                dtype,
                kv_dtype,
                head_dim: a.qk_dim as u32,
                heads: a.heads,
                kv_heads: a.kv_heads,
                window: 0,
                batch,
                length: length.max(1.0),
            };
            kernels::attention_us(t, &q)
        };
        // Fractions of a sequence are a GPU's share of the step's tokens (data-parallel attention).
        let decode_us = if decodes > 0.0 {
            lookup(kernels::AttentionPhase::Generation, decodes, g.decode_pairs / decodes - 1.0)?
        } else {
            0.0
        };
        let chunk_us = if chunks > 1e-9 {
            let pairs_per_sequence = (g.pairs - g.decode_pairs) / chunks;
            lookup(kernels::AttentionPhase::Context, chunks, ((1.0 + 8.0 * pairs_per_sequence).sqrt() - 1.0) / 2.0)?
        } else {
            0.0
        };
        Some(((decode_us + chunk_us) * 1e-6, KernelTable::Attention))
    }

    /// MLA's attention core in a decode step, seconds, from the engine's MLA generation tables
    /// ([`kernels::mla_us`]: trtllm and sglang): the absorbed form (one latent K/V stream,
    /// `kv_heads = 1`) at this GPU's query heads, the step's sequences and the cached tokens each
    /// reads (`decode_pairs ÷ n − 1`), its latent cache in bf16 or fp8. `None` — the fitted model
    /// — for the expanded (naive) form of prefill and of steps with prompt chunks, which the
    /// tables key by other shapes.
    fn mla_table_s(&self, op: &Op) -> Option<f64> {
        let t = self.tables?;
        let a = op.attention?;
        let g = a.geometry;
        if a.kv_heads != 1.0 || g.decode_sequences != g.sequences {
            return None;
        }
        let kv_dtype = match a.k_bytes_per_position / a.qk_dim {
            2.0 => kernels::AttnDtype::Bf16,
            1.0 => kernels::AttnDtype::Fp8,
            _ => return None,
        };
        let q = kernels::MlaQuery {
            phase: kernels::AttentionPhase::Generation,
            dtype: kernels::AttnDtype::Bf16,
            kv_dtype,
            heads: a.heads,
            batch: g.sequences,
            length: (g.decode_pairs / g.sequences - 1.0).max(1.0),
        };
        kernels::mla_us(t, &q).map(|us| us * 1e-6)
    }

    /// One layer's routed experts, seconds, from the engine's fused-MoE tables
    /// ([`kernels::moe_us`]: the gate/up GEMM with its activation, the down GEMM, the permutes
    /// and the weighted combine in the engine's MoE kernels), keyed as AIConfigurator keys them:
    /// the model's hidden and intermediate sizes, top-k and experts, the experts' format
    /// ([`moe_dtype`]), the tensor and expert parallelism that split the layer, and the tokens
    /// entering it (all of the replica's, before the expert-parallel dispatch). `None` — the
    /// fitted model — for skewed routing (the tables keep uniform routing only), a format
    /// without a table, and a shape or split the tables never measured.
    ///
    /// The tables' uniform routing is AIConfigurator's `balanced_logits` (`collector/helper.py`):
    /// token `t`'s `i`-th expert is `(t + i·⌈E/k⌉) mod E`, spread so that N tokens touch
    /// `min(N·k, E)` distinct experts — every expert once N ≥ E/k. Tokens routed independently
    /// touch fewer, `E·(1 − (1 − k/E)^N)` in expectation ([`uniform_experts_touched`]): Mixtral's
    /// 4 tokens touch all 8 experts in the table's workload and 5.5 in a step. Below the
    /// compute-bound batches each expert touched streams its weights from HBM once, so the
    /// measured time less the weights of the `(min(N·k, E) − touched) ÷ EP` experts per GPU the
    /// step does not touch, at the achievable bandwidth, is the step's (`moe_untouched_s`); the
    /// row's floor (its own bytes at that bandwidth) still holds.
    ///
    /// The layer's time goes to its GEMM rows by their weights (`n·k` over all expert
    /// matrices': a third each for gate, up and down); the activation and the combine run
    /// inside the measured kernels (`Measured::join_of`).
    fn moe_table_s(&self, op: &Op) -> Option<f64> {
        let t = self.tables?;
        let m = op.moe.filter(|m| m.balanced)?;
        let q = kernels::MoeQuery {
            dtype: moe_dtype(m.weights, m.math)?,
            hidden: m.hidden,
            intermediate: m.intermediate,
            top_k: m.top_k,
            experts: m.experts,
            tp: m.tp,
            ep: m.ep,
            tokens: m.tokens,
        };
        let measured_s = kernels::moe_us(t, &q)? * 1e-6;
        Some((measured_s - self.moe_untouched_s(&m)).max(0.0))
    }

    /// Time the measured MoE kernel spends streaming the weights of experts its balanced workload
    /// touched and independently routed tokens do not (`Measured::moe_table_s`), seconds per GPU:
    /// `(min(N·k, E) − E·(1 − (1 − k/E)^N)) ÷ EP × matrices × hidden × intermediate ÷ TP ×
    /// bytes per weight ÷ achievable bandwidth`.
    fn moe_untouched_s(&self, m: &MoeShape) -> f64 {
        let balanced = (m.tokens * m.top_k as f64).min(m.experts as f64);
        let touched = uniform_experts_touched(m.experts, m.top_k, m.tokens);
        let matrices = if m.gated { 3.0 } else { 2.0 };
        let expert_bytes = matrices * m.hidden as f64 * m.intermediate as f64 / m.tp as f64 * m.weights.bytes();
        (balanced - touched).max(0.0) / m.ep as f64 * expert_bytes / self.achievable_bandwidth_bytes_per_s
    }

    /// A recurrent layer's short convolution or delta rule, seconds, from the engine's table of
    /// its rule ([`kernels::linear_us`]: Gated DeltaNet's `linear_attention`, Kimi Delta
    /// Attention's `kda`, Mamba-2's `mamba2`): the convolution as the update kernel for the step's
    /// decodes plus the prompt kernel for its chunks; the delta rule as the recurrent kernel
    /// (decodes) or the chunked one (prompt chunks), each at the sequences and the tokens per
    /// sequence of its part of the step, the heads on this GPU. Where a shard's decode runs the
    /// convolution and the delta rule as one kernel (KDA's `kda_fused_decode`), the delta-rule row
    /// holds that kernel's time and the convolution's decode part is 0.
    ///
    /// The collectors keep the recurrent state in one dtype
    /// ([`kernels::collected_state_element_bytes`]: bf16 for Gated DeltaNet, float32 for KDA),
    /// where a model's config may declare another (Qwen3.5's `mamba_ssm_dtype: float32`). The
    /// state is read and written once per sequence, so a state of `s` bytes per element against
    /// the collected `c` adds `2 × (s − c) × h_v × d_k × d_v` bytes per sequence to the measured
    /// kernel (negative where it is smaller), at the achievable bandwidth (`state_traffic_s`).
    ///
    /// `None` — the fitted model — for Mamba-2's scan (its table holds the convolution alone), a
    /// head shape or shard the tables never ran, and TensorRT-LLM's prompt convolution, whose
    /// measurements are not the engine's call: its Gated DeltaNet `causal_conv1d_fn` rows take
    /// 110–150 µs whatever the batch and length up to 64 × 64 tokens on the H100 (vLLM's and
    /// SGLang's measurements of the same kernel: 3–26 µs), the signature of a benchmark that fell
    /// back from its CUDA graph to eager launches (`benchmark_with_power(...,
    /// allow_graph_fail=True)`); its Mamba-2 rows take 6.9 µs a sequence whatever its length up to
    /// 512 tokens (64 × 1 tokens: 440 µs, ~100× the bytes' time), timed on a padded `(batch,
    /// channels, length)` tensor (`collector/trtllm/collect_mamba2.py`) where the engine's mixer
    /// passes the step's packed tokens with their offsets: host time or padding a step's GPU work
    /// does not have.
    fn linear_table_s(&self, r: RecurrentShape) -> Option<f64> {
        let t = self.tables?;
        let lookup = |kernel, phase, batch, seq_len| self.linear_kernel_s(r, kernel, phase, batch, seq_len);
        let (decodes, chunks) = (r.decodes, r.prompt_sequences);
        let chunk_len = if chunks > 0.0 { r.prompt_tokens / chunks } else { 0.0 };
        let state_traffic_s = |sequences: f64| -> Option<f64> {
            let collected = kernels::collected_state_element_bytes(r.rule)?;
            let elements = r.value_heads * (r.key_head_dim * r.value_head_dim) as f64;
            Some(
                2.0 * (r.state_element_bytes - collected) * elements * sequences
                    / self.achievable_bandwidth_bytes_per_s,
            )
        };
        let (kernel, gen, ctx) = (kernels::LinearKernel::Conv, AttentionPhase::Generation, AttentionPhase::Context);
        let t = match r.part {
            RecurrentPart::Conv => {
                if chunks > 0.0 && t.engine == kernels::Engine::Trtllm {
                    return None;
                }
                // Where the decode's convolution runs inside the delta rule's fused kernel (KDA's
                // `kda_fused_decode`), the delta-rule row's time holds it.
                let inside = || lookup(kernels::LinearKernel::FusedDecode, gen, decodes, 1.0).map(|_| 0.0);
                let decode_s = if decodes > 0.0 { lookup(kernel, gen, decodes, 1.0).or_else(inside)? } else { 0.0 };
                let chunk_s = if chunks > 0.0 { lookup(kernel, ctx, chunks, chunk_len)? } else { 0.0 };
                decode_s + chunk_s
            }
            RecurrentPart::Decode => {
                lookup(kernels::LinearKernel::DeltaRule, gen, decodes, 1.0)? + state_traffic_s(decodes)?
            }
            RecurrentPart::Chunks => {
                lookup(kernels::LinearKernel::DeltaRule, ctx, chunks, chunk_len)? + state_traffic_s(chunks)?
            }
        };
        Some(t.max(0.0))
    }

    /// One of `r`'s kernels from its rule's table at `batch` sequences of `seq_len` tokens,
    /// seconds ([`kernels::linear_us`]); `None` without tables or outside them.
    fn linear_kernel_s(
        &self,
        r: RecurrentShape,
        kernel: kernels::LinearKernel,
        phase: AttentionPhase,
        batch: f64,
        seq_len: f64,
    ) -> Option<f64> {
        let q = kernels::LinearQuery {
            rule: r.rule,
            kernel,
            phase,
            key_heads: r.key_heads,
            value_heads: r.value_heads,
            key_head_dim: r.key_head_dim as f64,
            value_head_dim: r.value_head_dim as f64,
            batch,
            seq_len,
        };
        kernels::linear_us(self.tables?, &q).map(|us| us * 1e-6)
    }

    /// Whether `op` is a decode-only step's short convolution that runs inside the delta rule's
    /// fused decode kernel (KDA's `kda_fused_decode`, measured in place of a convolution kernel
    /// on the shards it covers): then the delta-rule row's measured time holds it.
    fn conv_inside_fused_decode(&self, op: &Op) -> bool {
        let Some(r) = op.recurrent.filter(|r| r.part == RecurrentPart::Conv && r.prompt_sequences == 0.0) else {
            return false;
        };
        let gen = AttentionPhase::Generation;
        r.decodes > 0.0
            && self.linear_kernel_s(r, kernels::LinearKernel::Conv, gen, r.decodes, 1.0).is_none()
            && self.linear_kernel_s(r, kernels::LinearKernel::FusedDecode, gen, r.decodes, 1.0).is_some()
    }

    /// How the engine runs `op` ([`engine_join`]), except that the routed experts' activation
    /// and weighted combine are inside the measured fused-MoE kernels where a table times the
    /// layer (`Measured::moe_table_s`), and a decode's short convolution inside KDA's fused decode
    /// kernel (`Measured::conv_inside_fused_decode`): [`Join::Fused`], every byte of theirs on
    /// chip (the table's time already holds their traffic).
    fn join_of(&self, op: &Op) -> Join {
        if matches!(op.kind, OpKind::ExpertAct | OpKind::ExpertCombine) && self.moe_table_s(op).is_some() {
            return Join::Fused { on_chip_bytes: op.cost.bytes() };
        }
        if self.conv_inside_fused_decode(op) {
            return Join::Fused { on_chip_bytes: op.cost.bytes() };
        }
        engine_join(self.engine, op)
    }

    /// A collective from the measured tables, seconds: an all-reduce as the engine's
    /// [`kernels::allreduce_us`] (its custom kernel or NCCL, whichever is faster: TensorRT-LLM's
    /// `AllReduceStrategy.AUTO`, vLLM's and SGLang's custom all-reduce falling back to NCCL), every
    /// other collective from NCCL's tables ([`kernels::nccl_us`]); each on its monotone envelope
    /// (a longer message is never faster). `None` without tables, outside them (more than 8
    /// GPUs), or over another link than the one they were measured on (AIConfigurator's systems:
    /// NVLink through NVSwitch on the SXM boards, PCIe on L40S servers).
    fn collective_table_s(&self, call: &CollectiveCall) -> Option<(f64, TimeSource)> {
        let tables = self.tables?;
        let kgpu = tables.gpu;
        let measured_over = if kgpu.collectives_over_pcie() { LinkScope::Pcie } else { LinkScope::ScaleUp };
        if call.scope != measured_over {
            return None;
        }
        let (us, engine, table) = match call.op {
            kernels::Collective::AllReduce => (
                kernels::allreduce_us(tables, call.gpus, call.message_bytes)?,
                Some(tables.engine),
                KernelTable::AllReduce,
            ),
            op => (kernels::nccl_us(kgpu, op, call.gpus, call.message_bytes)?, None, KernelTable::Nccl),
        };
        let version = tables.version_of(table).unwrap_or(tables.version);
        Some((us * 1e-6, TimeSource::Table { gpu: kgpu, engine, version, table }))
    }

    /// The fitted roofs of work `op` moving `hbm_bytes` through HBM, and the time it adds beyond
    /// them (dequantisation; no fixed cost): `(compute_s, memory_s, extra_s)`.
    fn roofs(&self, op: &Op, hbm_bytes: f64, gpu: &Gpu) -> (f64, f64, f64) {
        let fit = self.fit;
        let peak = gpu.peak(op.math).unwrap_or(gpu.peak_flops_per_s.vector);
        let mut eff = fit.peak_fraction(op.math);
        if let Some(g) = op.gemm {
            eff *= gemm_shape_efficiency(g.m, g.n as f64, g.k as f64, g.instances, gpu.sm_count);
        } else if op.attention.is_some() && self.phase == Phase::Prefill {
            eff = fit.attention_prefill;
        }
        let compute_s = op.cost.flops / (peak * eff);
        let bandwidth = if self.engine == Engine::Eager && op.math == MathFormat::Vector {
            EAGER_VECTOR_BANDWIDTH
        } else {
            fit.bandwidth
        };
        let memory_s = hbm_bytes / (gpu.memory_bandwidth_bytes_per_s * bandwidth);
        (compute_s, memory_s, dequant_s(op, gpu, &fit))
    }

    /// Whether the engine's decode attention reads `op`'s KV cache once per query head
    /// ([`Engine::kv_read_per_query_head`] for its head group). Only the multi-head and grouped
    /// attention kernels do (XQA, and the masked multi-head kernel it falls back to): MLA's
    /// absorbed decode (`qk_dim ≠ v_dim`) runs on the engines' MLA kernels and top-k or pooled
    /// reads on their sparse kernels, each of which loads a latent or selected entry once for all
    /// the heads that share it (FlashMLA and its sparse form, TensorRT-LLM's `trtllm-gen` MLA).
    fn reads_kv_per_query_head(&self, op: &Op) -> bool {
        op.attention.is_some_and(|a| {
            let grouped_kernel =
                a.qk_dim == a.v_dim && matches!(a.reach, Reach::All | Reach::Window(_) | Reach::Chunk(_)) && !a.pooled;
            self.phase == Phase::Decode
                && grouped_kernel
                && a.kv_heads > 0.0
                && self.engine.kv_read_per_query_head(a.heads / a.kv_heads)
        })
    }

    /// KV bytes the engine's decode attention reads beyond the ledger's once-per-KV-head count:
    /// `kv_read_bytes × (heads ÷ kv_heads − 1)` when it reads a GQA group's K and V once per
    /// query head (`Measured::reads_kv_per_query_head`), else 0.
    fn kv_reread_bytes(&self, op: &Op) -> f64 {
        match op.attention {
            Some(a) if self.reads_kv_per_query_head(op) => {
                op.cost.kv_read_bytes * (a.heads / a.kv_heads - 1.0).max(0.0)
            }
            _ => 0.0,
        }
    }

    /// Why a table-timed operator taking `time_s` is slow: its engine's decode attention reading
    /// the KV cache once per query head (the table measured that kernel); else, above
    /// [`TABLE_SLOW_LIMIT`] × its roofline plus [`GRAPH_KERNEL_S`], the measured kernel being
    /// that slow at the measured shapes around it (a lookup reads only measured points, their
    /// interpolation between head groups that were measured, and sizes beyond the grid in
    /// proportion: it never reaches such a time unless the points it reads have it); else the
    /// measured kernel.
    fn table_cause(&self, op: &Op, time_s: f64, gpu: &Gpu, eff: Efficiency) -> SlowCause {
        if self.reads_kv_per_query_head(op) {
            SlowCause::KvPerQueryHead
        } else if time_s > TABLE_SLOW_LIMIT * Timing::of(&op.cost, op.math, gpu, eff).time_s + GRAPH_KERNEL_S {
            SlowCause::MeasuredSlowShape
        } else {
            SlowCause::MeasuredKernel
        }
    }

    /// `op` in a kernel of its own: the measured kernel where there is a table for it, else the
    /// fitted roofs plus the kernel's fixed cost; and why it would be slow, in the order the
    /// causes are named: the measured kernel itself, KV read once per query head,
    /// dequantisation beyond the roofs, tile waste (shape efficiency below ½), prefill attention.
    ///
    /// A measured kernel takes at least its HBM bytes at the achievable bandwidth (its memory
    /// roof): the tables' benchmark runs one GEMM again and again on the same buffers, so
    /// operands that fit in the L2 cache are read from L2 (on the L40S's 96 MB L2 Llama 3 8B's
    /// 34 MB q_proj weights stream at 2.0 TB/s, 2.3× the card's 864 GB/s), while in a step every
    /// layer's weights come from HBM.
    fn own_kernel(&self, op: &Op, gpu: &Gpu) -> (Timing, Option<SlowCause>) {
        let lookup = self.table_lookup(op);
        let table = lookup.map(|(t, _)| t);
        // A measured kernel's re-reads are in its time (and partly served from L2): the floor
        // counts the ledger's bytes; the fitted model charges them to HBM.
        let kv_reread = if table.is_some() { 0.0 } else { self.kv_reread_bytes(op) };
        let hbm_bytes = op.cost.bytes() + kv_reread;
        let (compute_s, memory_s, extra_s) = self.roofs(op, hbm_bytes, gpu);
        let source = self.own_source(op, lookup.map(|(_, k)| k));
        let time_s = match table {
            // Never below the HBM bytes at the achievable bandwidth, nor the FLOPs at the peak.
            Some(t) => t.max(memory_s).max(op.cost.flops / gpu.peak(op.math).unwrap_or(gpu.peak_flops_per_s.vector)),
            None => kernel_time_s(self.engine, compute_s.max(memory_s) + extra_s),
        };
        let tile_waste = || {
            op.gemm.is_some_and(|g| gemm_shape_efficiency(g.m, g.n as f64, g.k as f64, g.instances, gpu.sm_count) < 0.5)
        };
        let cause = if table.is_some() {
            Some(SlowCause::MeasuredKernel)
        } else if kv_reread > 0.0 {
            Some(SlowCause::KvPerQueryHead)
        } else if extra_s > compute_s.max(memory_s) {
            Some(SlowCause::Dequantisation)
        } else if tile_waste() {
            Some(SlowCause::TileWaste)
        } else {
            (op.attention.is_some() && self.phase == Phase::Prefill).then_some(SlowCause::AttentionKernel)
        };
        (Timing { compute_s, memory_s, time_s, hbm_bytes, source: Some(source), ..Timing::default() }, cause)
    }
}

/// The whole merged GEMM that `op` is a part of ([`Join::Part`]): the part's GEMM with
/// [`Op::merge_n`] columns, its FLOPs, weights and output ÷ its share, and the same one read of
/// the shared input.
pub fn merged_gemm(op: &Op) -> Op {
    let share = op.merge_share();
    let c = op.cost;
    let written = c.activation_written_bytes / share;
    let cost = crate::cost::Cost {
        flops: c.flops / share,
        weight_bytes: c.weight_bytes / share,
        activation_bytes: c.activation_read_bytes() + written,
        activation_written_bytes: written,
        ..c
    };
    let gemm = op.gemm.map(|g| crate::gemm::Gemm { n: op.merge_n.unwrap_or(g.n), ..g });
    Op { cost, gemm, ..*op }
}

impl TimeModel for Measured {
    fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
        self.timed(op, gpu, eff).timing
    }

    /// The operator joined as [`engine_join`] says: a kernel of its own, its share of the merged
    /// GEMM ([`merged_gemm`]) it is part of, or its fitted roofs inside the open kernel (no
    /// cause: fused work is never named slow).
    fn timed(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timed {
        let join = self.join_of(op);
        let (timing, cause) = match join {
            Join::Own => self.own_kernel(op, gpu),
            Join::Part { share, .. } => {
                let (t, cause) = self.own_kernel(&merged_gemm(op), gpu);
                (t.times(share), cause)
            }
            Join::Fused { on_chip_bytes } => {
                let hbm_bytes = op.cost.bytes() - on_chip_bytes;
                let (compute_s, memory_s, extra_s) = self.roofs(op, hbm_bytes, gpu);
                let time_s = compute_s.max(memory_s) + extra_s;
                let source = Some(TimeSource::Fused);
                (Timing { compute_s, memory_s, time_s, hbm_bytes, source, ..Timing::default() }, None)
            }
        };
        // A measured kernel's cause, against this operator's own roofline (a merged GEMM's
        // part: its share of the time against its own work).
        let cause = match cause {
            Some(SlowCause::MeasuredKernel) => Some(self.table_cause(op, timing.time_s, gpu, eff)),
            c => c,
        };
        Timed { timing, join, cause }
    }

    fn join(&self, op: &Op) -> Join {
        self.join_of(op)
    }

    /// A collective: the engine's measured kernel where the tables have the GPU, the engine and
    /// the group (`Measured::collective_table_s`), never faster than its link bytes at the
    /// link's full bandwidth; else the α + n/β time. Launched eagerly, at least [`HOST_LAUNCH_S`].
    fn link_time(&self, call: Option<&CollectiveCall>, link_s: f64) -> Timing {
        let measured = call.and_then(|c| self.collective_table_s(c).map(|(t, source)| (t.max(c.floor_s), source)));
        let (t, source) = measured.unwrap_or((link_s, TimeSource::LinkModel));
        let time_s = if self.engine.cuda_graphs() { t } else { t.max(HOST_LAUNCH_S) };
        Timing { link_s: t, time_s, roofline_s: link_s, source: Some(source), ..Timing::default() }
    }

    fn kernel_fixed_s(&self) -> f64 {
        if self.engine.cuda_graphs() {
            GRAPH_KERNEL_S
        } else {
            HOST_LAUNCH_S + GRAPH_KERNEL_S
        }
    }

    fn host_step_s(&self) -> f64 {
        self.engine.host_step_s()
    }
}

/// The time model a scenario's [`Clock`] names: the roofline, or the measured model of its
/// engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Today's roofline.
    Roofline,
    /// The measured model.
    Measured(Measured),
}

impl Model {
    /// The model for `clock` in `phase` on `gpu`.
    pub fn new(clock: Clock, phase: Phase, gpu: &Gpu) -> Model {
        if clock.is_roofline() {
            Model::Roofline
        } else {
            Model::Measured(Measured::new(clock, phase, gpu))
        }
    }
}

impl TimeModel for Model {
    #[inline]
    fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
        match self {
            Model::Roofline => Roofline.op_time(op, gpu, eff),
            Model::Measured(m) => m.op_time(op, gpu, eff),
        }
    }

    #[inline]
    fn timed(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timed {
        match self {
            Model::Roofline => Roofline.timed(op, gpu, eff),
            Model::Measured(m) => m.timed(op, gpu, eff),
        }
    }

    #[inline]
    fn join(&self, op: &Op) -> Join {
        match self {
            Model::Roofline => Roofline.join(op),
            Model::Measured(m) => m.join(op),
        }
    }

    #[inline]
    fn kernel_fixed_s(&self) -> f64 {
        match self {
            Model::Roofline => 0.0,
            Model::Measured(m) => m.kernel_fixed_s(),
        }
    }

    #[inline]
    fn host_step_s(&self) -> f64 {
        match self {
            Model::Roofline => 0.0,
            Model::Measured(m) => m.host_step_s(),
        }
    }

    #[inline]
    fn is_roofline(&self) -> bool {
        matches!(self, Model::Roofline)
    }

    #[inline]
    fn link_time(&self, call: Option<&CollectiveCall>, link_s: f64) -> Timing {
        match self {
            Model::Roofline => Timing::link(link_s),
            Model::Measured(m) => m.link_time(call, link_s),
        }
    }
}

/// The smallest batch (in `1..=max_batch`) at which a weight-only quantised GEMM of `n × k`
/// weights in `weight` bytes per weight is no faster than the same GEMM with 16-bit weights under
/// the measured model on `gpu`, or `None` if it stays faster up to `max_batch` (the reference calculator: W4A16
/// loses its edge over bf16 as the batch grows). Both formats on the fitted model (no kernel
/// tables), so that the two sides are timed the same way where only one has a table.
pub fn w4a16_crossover_batch(
    gpu: &Gpu,
    engine: Engine,
    n: u64,
    k: u64,
    weight: crate::precision::Precision,
    max_batch: u64,
) -> Option<u64> {
    use crate::cost::Cost;
    use crate::gemm::Gemm;
    let model = Measured { tables: None, ..Measured::new(Clock::measured(engine), Phase::Decode, gpu) };
    let time = |m: f64, w: Precision| {
        let g = Gemm::new(m, n, k, w, Precision::Bf16);
        let cost = Cost {
            flops: g.flops(),
            weight_bytes: g.weight_bytes(),
            activation_bytes: g.activation_bytes(),
            ..Cost::ZERO
        };
        let op = Op { gemm: Some(g), ..Op::plain(OpKind::GateProj, cost, MathFormat::Bf16) };
        model.op_time(&op, gpu, Efficiency::default()).time_s
    };
    (1..=max_batch).find(|&b| time(b as f64, weight) >= time(b as f64, Precision::Bf16))
}

pub mod profile;
pub use profile::{Profile, Profiled};

#[cfg(test)]
mod tests;
