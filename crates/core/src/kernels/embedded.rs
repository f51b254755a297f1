//! The embedded files (`include_bytes!`), each parsed on first use ([`OnceLock`]), and the typed
//! lookups on them.

use super::table::{to_us, Envelope, KernelFile, OpSpec, Q};
use super::{AttentionPhase, AttentionQuery, AttnDtype, Collective, Engine, GemmDtype, KernelGpu, MlaBmm, MlaQuery};
use crate::error::{Error, Result};
use std::cell::Cell;
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

impl Op {
    const COUNT: usize = 8;

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
    A100Sxm Sglang MlaBmm "a100_sxm/sglang/mla_bmm.bin";
    A100Sxm Trtllm ContextAttention "a100_sxm/trtllm/context_attention.bin";
    A100Sxm Trtllm ContextMla "a100_sxm/trtllm/context_mla.bin";
    A100Sxm Trtllm CustomAllreduce "a100_sxm/trtllm/custom_allreduce.bin";
    A100Sxm Trtllm Gemm "a100_sxm/trtllm/gemm.bin";
    A100Sxm Trtllm GenerationAttention "a100_sxm/trtllm/generation_attention.bin";
    A100Sxm Trtllm GenerationMla "a100_sxm/trtllm/generation_mla.bin";
    A100Sxm Trtllm MlaBmm "a100_sxm/trtllm/mla_bmm.bin";
    A100Sxm Vllm ContextAttention "a100_sxm/vllm/context_attention.bin";
    A100Sxm Vllm CustomAllreduce "a100_sxm/vllm/custom_allreduce.bin";
    A100Sxm Vllm Gemm "a100_sxm/vllm/gemm.bin";
    A100Sxm Vllm GenerationAttention "a100_sxm/vllm/generation_attention.bin";
    B200Sxm _ Nccl "b200_sxm/nccl.bin";
    B200Sxm Sglang ContextAttention "b200_sxm/sglang/context_attention.bin";
    B200Sxm Sglang ContextMla "b200_sxm/sglang/context_mla.bin";
    B200Sxm Sglang CustomAllreduce "b200_sxm/sglang/custom_allreduce.bin";
    B200Sxm Sglang Gemm "b200_sxm/sglang/gemm.bin";
    B200Sxm Sglang GenerationAttention "b200_sxm/sglang/generation_attention.bin";
    B200Sxm Sglang GenerationMla "b200_sxm/sglang/generation_mla.bin";
    B200Sxm Sglang MlaBmm "b200_sxm/sglang/mla_bmm.bin";
    B200Sxm Trtllm ContextAttention "b200_sxm/trtllm/context_attention.bin";
    B200Sxm Trtllm ContextMla "b200_sxm/trtllm/context_mla.bin";
    B200Sxm Trtllm CustomAllreduce "b200_sxm/trtllm/custom_allreduce.bin";
    B200Sxm Trtllm Gemm "b200_sxm/trtllm/gemm.bin";
    B200Sxm Trtllm GenerationAttention "b200_sxm/trtllm/generation_attention.bin";
    B200Sxm Trtllm GenerationMla "b200_sxm/trtllm/generation_mla.bin";
    B200Sxm Trtllm MlaBmm "b200_sxm/trtllm/mla_bmm.bin";
    B200Sxm Vllm ContextAttention "b200_sxm/vllm/context_attention.bin";
    B200Sxm Vllm CustomAllreduce "b200_sxm/vllm/custom_allreduce.bin";
    B200Sxm Vllm Gemm "b200_sxm/vllm/gemm.bin";
    B200Sxm Vllm GenerationAttention "b200_sxm/vllm/generation_attention.bin";
    B200Sxm Vllm MlaBmm "b200_sxm/vllm/mla_bmm.bin";
    H100Sxm _ Nccl "h100_sxm/nccl.bin";
    H100Sxm Sglang ContextAttention "h100_sxm/sglang/context_attention.bin";
    H100Sxm Sglang ContextMla "h100_sxm/sglang/context_mla.bin";
    H100Sxm Sglang CustomAllreduce "h100_sxm/sglang/custom_allreduce.bin";
    H100Sxm Sglang Gemm "h100_sxm/sglang/gemm.bin";
    H100Sxm Sglang GenerationAttention "h100_sxm/sglang/generation_attention.bin";
    H100Sxm Sglang GenerationMla "h100_sxm/sglang/generation_mla.bin";
    H100Sxm Sglang MlaBmm "h100_sxm/sglang/mla_bmm.bin";
    H100Sxm Trtllm ContextAttention "h100_sxm/trtllm/context_attention.bin";
    H100Sxm Trtllm ContextMla "h100_sxm/trtllm/context_mla.bin";
    H100Sxm Trtllm CustomAllreduce "h100_sxm/trtllm/custom_allreduce.bin";
    H100Sxm Trtllm Gemm "h100_sxm/trtllm/gemm.bin";
    H100Sxm Trtllm GenerationAttention "h100_sxm/trtllm/generation_attention.bin";
    H100Sxm Trtllm GenerationMla "h100_sxm/trtllm/generation_mla.bin";
    H100Sxm Trtllm MlaBmm "h100_sxm/trtllm/mla_bmm.bin";
    H100Sxm Vllm ContextAttention "h100_sxm/vllm/context_attention.bin";
    H100Sxm Vllm CustomAllreduce "h100_sxm/vllm/custom_allreduce.bin";
    H100Sxm Vllm Gemm "h100_sxm/vllm/gemm.bin";
    H100Sxm Vllm GenerationAttention "h100_sxm/vllm/generation_attention.bin";
    H100Sxm Vllm MlaBmm "h100_sxm/vllm/mla_bmm.bin";
    H200Sxm _ Nccl "h200_sxm/nccl.bin";
    H200Sxm Sglang ContextAttention "h200_sxm/sglang/context_attention.bin";
    H200Sxm Sglang ContextMla "h200_sxm/sglang/context_mla.bin";
    H200Sxm Sglang CustomAllreduce "h200_sxm/sglang/custom_allreduce.bin";
    H200Sxm Sglang Gemm "h200_sxm/sglang/gemm.bin";
    H200Sxm Sglang GenerationAttention "h200_sxm/sglang/generation_attention.bin";
    H200Sxm Sglang GenerationMla "h200_sxm/sglang/generation_mla.bin";
    H200Sxm Sglang MlaBmm "h200_sxm/sglang/mla_bmm.bin";
    H200Sxm Trtllm ContextAttention "h200_sxm/trtllm/context_attention.bin";
    H200Sxm Trtllm ContextMla "h200_sxm/trtllm/context_mla.bin";
    H200Sxm Trtllm CustomAllreduce "h200_sxm/trtllm/custom_allreduce.bin";
    H200Sxm Trtllm Gemm "h200_sxm/trtllm/gemm.bin";
    H200Sxm Trtllm GenerationAttention "h200_sxm/trtllm/generation_attention.bin";
    H200Sxm Trtllm GenerationMla "h200_sxm/trtllm/generation_mla.bin";
    H200Sxm Trtllm MlaBmm "h200_sxm/trtllm/mla_bmm.bin";
    H200Sxm Vllm ContextAttention "h200_sxm/vllm/context_attention.bin";
    H200Sxm Vllm CustomAllreduce "h200_sxm/vllm/custom_allreduce.bin";
    H200Sxm Vllm Gemm "h200_sxm/vllm/gemm.bin";
    H200Sxm Vllm GenerationAttention "h200_sxm/vllm/generation_attention.bin";
    H200Sxm Vllm MlaBmm "h200_sxm/vllm/mla_bmm.bin";
    L40s _ Nccl "l40s/nccl.bin";
    L40s Sglang ContextAttention "l40s/sglang/context_attention.bin";
    L40s Sglang ContextMla "l40s/sglang/context_mla.bin";
    L40s Sglang CustomAllreduce "l40s/sglang/custom_allreduce.bin";
    L40s Sglang Gemm "l40s/sglang/gemm.bin";
    L40s Sglang GenerationAttention "l40s/sglang/generation_attention.bin";
    L40s Sglang GenerationMla "l40s/sglang/generation_mla.bin";
    L40s Sglang MlaBmm "l40s/sglang/mla_bmm.bin";
    L40s Trtllm ContextAttention "l40s/trtllm/context_attention.bin";
    L40s Trtllm CustomAllreduce "l40s/trtllm/custom_allreduce.bin";
    L40s Trtllm Gemm "l40s/trtllm/gemm.bin";
    L40s Trtllm GenerationAttention "l40s/trtllm/generation_attention.bin";
    L40s Trtllm MlaBmm "l40s/trtllm/mla_bmm.bin";
    L40s Vllm ContextAttention "l40s/vllm/context_attention.bin";
    L40s Vllm Gemm "l40s/vllm/gemm.bin";
    L40s Vllm GenerationAttention "l40s/vllm/generation_attention.bin";
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

fn positive(xs: &[f64]) -> bool {
    xs.iter().all(|v| v.is_finite() && *v > 0.0)
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
    let key = (gpu, engine, dtype, m.to_bits(), n.to_bits(), k.to_bits());
    // The parts of a merged GEMM (Q, K, V; gate, up) look up the same kernel one after another.
    if let Some((last, us)) = LAST_GEMM.with(Cell::get) {
        if last == key {
            return us;
        }
    }
    let f = envelope(gpu, Some(engine), Op::Gemm)?;
    let us = gemm_table(gpu, engine, dtype).and_then(|t| f.eval_ln(t, &[m, n, k])).map(to_us);
    LAST_GEMM.with(|c| c.set(Some((key, us))));
    us
}

type GemmKey = (KernelGpu, Engine, GemmDtype, u64, u64, u64);

thread_local! {
    /// The last GEMM looked up on this thread and its time.
    static LAST_GEMM: Cell<Option<(GemmKey, Option<f64>)>> = const { Cell::new(None) };
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
        (Engine::Sglang, 100) => Some("triton"),
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
    let f = envelope(gpu, Some(engine), op)?;
    let one = |kernel: &str| attention_kernel(f, kernel, q);
    if let Some(v) = default_attention_kernel(gpu, engine).and_then(one) {
        return Some(to_us(v));
    }
    fastest(f.names(0).map(one)).map(to_us)
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
    fastest(f.names(0).map(|kernel| {
        let g = f.find(&[Q::S(kernel), Q::S(q.dtype.as_str()), Q::S(q.kv_dtype.as_str())])?;
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
    fastest(f.names(1).map(|kernel| {
        let g = f.find(&[Q::S(name), Q::S(kernel), Q::S(dtype.as_str())])?;
        f.eval_group(g, heads, 1.0, false, |t| f.eval_ln(t, &[tokens]))
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
        let kernel = f.names(1).find(|k| k.ends_with("_graph")).or_else(|| f.names(1).next())?;
        let g = f.find(&[Q::S("all_reduce"), Q::S(kernel), Q::S("bfloat16")])?;
        f.eval_group(g, f64::from(gpus), 1.0, false, |t| f.eval_ln(t, &[bytes / COLLECTIVE_ELEMENT_BYTES]))
    });
    let custom = custom.map(to_us);
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
    let g = f.find(&[Q::S(op.as_str()), Q::S("half")])?;
    f.eval_group(g, f64::from(gpus), 1.0, false, |t| f.eval_ln(t, &[bytes / COLLECTIVE_ELEMENT_BYTES])).map(to_us)
}
