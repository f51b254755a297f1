//! The embedded files (`include_bytes!`), each parsed on first use ([`OnceLock`]), and the typed
//! lookups on them.

use super::table::{to_us, Envelope, Group, GroupPlan, KernelFile, OpSpec, Q};
use super::{
    AttentionPhase, AttentionQuery, AttnDtype, Collective, Engine, EngineVersion, GemmDtype, KernelGpu, KernelTable,
    LinearQuery, MlaBmm, MlaQuery, MoeQuery,
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
    Kda,
    Mamba2,
    Mhc,
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

// A recurrent layer's own kernels (Gated DeltaNet's, Kimi Delta Attention's, Mamba-2's
// convolution), keyed by the kernel and head sizes (exact), the key heads per GPU (outer: a
// measured count only) and the value heads (inner), over sequences and tokens per sequence.
// Mamba-2's columns are renamed to these keys by `scripts/kernel-data` (d_state, head_dim,
// n_groups, nheads), as [`crate::operator::RecurrentShape`] maps them.
const RECURRENT_KEYS: &[&str] = &["kernel", "head_k_dim", "head_v_dim", "num_k_heads", "num_v_heads"];

/// The spec of a recurrent layer's table named `name`.
const fn recurrent(name: &'static str) -> OpSpec {
    OpSpec {
        name,
        keys: RECURRENT_KEYS,
        exact: 3,
        inner: Some(4),
        outer: Some(3),
        axes: &["batch_size", "seq_len"],
        tie: None,
        envelope: &[0, 1],
    }
}
static LINEAR_ATTENTION: OpSpec = recurrent("linear_attention");
static KDA: OpSpec = recurrent("kda");
static MAMBA2: OpSpec = recurrent("mamba2");

// A hyper-connection site's mixing kernel (DeepSeek-V4's mHC `pre` or `post`), keyed by the half,
// the kernel, the hidden size and the streams (exact), over tokens; one site's time.
static MHC: OpSpec = OpSpec {
    name: "mhc",
    keys: &["op_name", "kernel", "hidden_size", "hc_mult"],
    exact: 4,
    inner: None,
    outer: None,
    axes: &["num_tokens"],
    tie: None,
    envelope: &[0],
};

impl Op {
    const COUNT: usize = 13;
    /// Every operation (the tests check each is in one table family).
    #[cfg(test)]
    const ALL: [Op; Op::COUNT] = [
        Op::Gemm,
        Op::ContextAttention,
        Op::GenerationAttention,
        Op::ContextMla,
        Op::GenerationMla,
        Op::MlaBmm,
        Op::CustomAllreduce,
        Op::Nccl,
        Op::Moe,
        Op::LinearAttention,
        Op::Kda,
        Op::Mamba2,
        Op::Mhc,
    ];

    /// The operations of a table family (whose times are reported under its name: both attention
    /// phases are `attention`).
    fn of_table(table: KernelTable) -> &'static [Op] {
        match table {
            KernelTable::Gemm => &[Op::Gemm],
            KernelTable::Attention => &[Op::GenerationAttention, Op::ContextAttention],
            KernelTable::Mla => &[Op::GenerationMla, Op::ContextMla],
            KernelTable::MlaBatchedGemm => &[Op::MlaBmm],
            KernelTable::AllReduce => &[Op::CustomAllreduce],
            KernelTable::Nccl => &[Op::Nccl],
            KernelTable::Moe => &[Op::Moe],
            KernelTable::LinearAttention => &[Op::LinearAttention],
            KernelTable::Kda => &[Op::Kda],
            KernelTable::Mamba2 => &[Op::Mamba2],
            KernelTable::Mhc => &[Op::Mhc],
        }
    }

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
            Op::Kda => &KDA,
            Op::Mamba2 => &MAMBA2,
            Op::Mhc => &MHC,
        }
    }
}

/// One embedded data file.
#[derive(Debug)]
pub struct EmbeddedFile {
    /// Path under `crates/core/data/kernels/` of the file as `scripts/kernel-data` writes it
    /// (`h100_sxm/trtllm/gemm.bin`; another version than the default's: `h100_sxm/vllm@0.19.0/…`).
    /// It is stored packed, as `<path>.zst` (unpacked on first use: `scripts/kernel-data/README.md`, "Packing").
    pub path: &'static str,
    /// The GPU it was measured on.
    pub gpu: KernelGpu,
    /// The engine; `None` for NCCL.
    pub engine: Option<Engine>,
    /// The engine version measured (for NCCL, the library's version).
    pub version: &'static str,
    /// Whether it is the version read when none is named (the collector's default runtime where
    /// the GPU has tables at it, else the newest: the manifest's `[engine_versions]`).
    pub default: bool,
    op: Op,
    stored: &'static [u8],
}

/// A table a version shares with another (the version's `reuse.yaml` in AIConfigurator's data:
/// `table`, `from_version`), followed by `scripts/kernel-data` to the version whose file holds it.
#[derive(Debug)]
struct Reuse {
    gpu: KernelGpu,
    engine: Engine,
    op: Op,
    version: &'static str,
    from_version: &'static str,
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
    /// File size, unpacked (the manifest's `bytes`).
    pub bytes: usize,
    /// Size as embedded, packed (the manifest's `stored_bytes`).
    pub stored_bytes: usize,
}

impl EmbeddedFile {
    /// The op's name as in the file path and the manifest (`gemm`, `nccl` …).
    pub fn op_name(&self) -> &'static str {
        self.op.spec().name
    }

    /// Parse the file (once; later calls reuse it) and count what it holds.
    pub fn stats(&self) -> Result<FileStats> {
        let id = FileId(FILES.iter().position(|f| std::ptr::eq(f, self)).expect("an embedded file") as u16);
        let u = parsed(id).as_ref().map_err(Clone::clone)?;
        let f = &u.file;
        f.check_axes()?;
        Ok(FileStats {
            tables: f.tables.len(),
            cells: f.cells,
            measured: f.measured(),
            bytes: u.bytes,
            stored_bytes: self.stored.len(),
        })
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

macro_rules! which {
    (default) => {
        true
    };
    (other) => {
        false
    };
}

macro_rules! files {
    ($($gpu:ident $eng:tt $op:ident $version:literal $which:ident $path:literal;)*) => {
        static FILES: &[EmbeddedFile] = &[$(EmbeddedFile {
            path: $path,
            gpu: KernelGpu::$gpu,
            engine: engine!($eng),
            version: $version,
            default: which!($which),
            op: Op::$op,
            stored: include_bytes!(concat!("../../data/kernels/", $path, ".zst")),
        },)*];
        const FILE_COUNT: usize = [$($path),*].len();
    };
}

macro_rules! reuse {
    ($($gpu:ident $eng:ident $op:ident $version:literal $from:literal;)*) => {
        static REUSE: &[Reuse] = &[$(Reuse {
            gpu: KernelGpu::$gpu,
            engine: Engine::$eng,
            op: Op::$op,
            version: $version,
            from_version: $from,
        },)*];
    };
}

include!("../../data/kernels/index.rs");

/// Every embedded file, in path order.
pub fn embedded_files() -> &'static [EmbeddedFile] {
    FILES
}

/// An embedded file: its place in [`FILES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FileId(u16);

impl FileId {
    fn file(self) -> &'static EmbeddedFile {
        &FILES[usize::from(self.0)]
    }
}

/// The file of `op` measured on `gpu` with `engine` at `version`.
fn find_file(gpu: KernelGpu, engine: Option<Engine>, op: Op, version: &str) -> Option<FileId> {
    FILES
        .iter()
        .position(|f| f.gpu == gpu && f.engine == engine && f.op == op && f.version == version)
        .map(|i| FileId(i as u16))
}

/// The file of `op` read by default on `gpu` with `engine` (`None`: the collectives library's).
fn default_file(gpu: KernelGpu, engine: Option<Engine>, op: Op) -> Option<FileId> {
    FILES.iter().position(|f| f.gpu == gpu && f.engine == engine && f.op == op && f.default).map(|i| FileId(i as u16))
}

/// The file that holds `op` at `version`: the version's own, else the one its reuse names.
fn file_at(gpu: KernelGpu, engine: Engine, op: Op, version: &str) -> Option<FileId> {
    find_file(gpu, Some(engine), op, version).or_else(|| {
        let r = REUSE.iter().find(|r| r.gpu == gpu && r.engine == engine && r.op == op && r.version == version)?;
        find_file(gpu, Some(engine), op, r.from_version)
    })
}

/// A file's bytes as `scripts/kernel-data` wrote them, from the packed form it is embedded in
/// (`fetch.py`'s `pack`, the manifest's `stored_encoding`): zstd of the header through the
/// `data N` line followed by the codes as differences from the code before (mod 2¹⁶, the first
/// from 0), all low bytes then all high bytes. Unpacked once per process and kept, as the parsed
/// file refers to it for as long as the process runs.
fn unpack(f: &EmbeddedFile) -> Result<&'static [u8]> {
    let malformed = |message: String| Error::Malformed { what: format!("kernel table {}", f.path), message };
    // The frame states its size (`fetch.py` writes it): one allocation, one call.
    let size = zstd::zstd_safe::get_frame_content_size(f.stored)
        .ok()
        .flatten()
        .filter(|&n| n <= MAX_UNPACKED_BYTES)
        .ok_or_else(|| malformed(format!("not a zstd frame of at most {MAX_UNPACKED_BYTES} bytes")))?;
    let mut raw = zstd::bulk::decompress(f.stored, size as usize).map_err(|e| malformed(format!("not zstd: {e}")))?;
    let data_line = if raw.starts_with(b"data ") {
        0
    } else {
        memchr::memmem::find(&raw, b"\ndata ").ok_or_else(|| malformed("no `data` line".into()))? + 1
    };
    let start = data_line + memchr::memchr(b'\n', &raw[data_line..]).ok_or_else(|| malformed("no data".into()))? + 1;
    let codes = &mut raw[start..];
    if codes.len() % 2 != 0 {
        return Err(malformed(format!("{} code bytes, not whole 16-bit codes", codes.len())));
    }
    let shuffled = codes.to_vec();
    let (low, high) = shuffled.split_at(codes.len() / 2);
    let mut code = 0u16;
    for (out, (&l, &h)) in codes.chunks_exact_mut(2).zip(low.iter().zip(high)) {
        code = code.wrapping_add(u16::from_le_bytes([l, h]));
        out.copy_from_slice(&code.to_le_bytes());
    }
    Ok(Box::leak(raw.into_boxed_slice()))
}

/// The largest file unpacked, bytes (the largest written is 2.5 MB).
const MAX_UNPACKED_BYTES: u64 = 64 << 20;

/// The parsed file per embedded file, filled on first use.
static PARSED: [OnceLock<Result<Unpacked>>; FILE_COUNT] = [const { OnceLock::new() }; FILE_COUNT];

/// A parsed file and its size unpacked.
#[derive(Debug)]
struct Unpacked {
    file: KernelFile,
    bytes: usize,
}

fn parsed(id: FileId) -> &'static Result<Unpacked> {
    PARSED[usize::from(id.0)].get_or_init(|| {
        let f = id.file();
        let bytes = unpack(f)?;
        Ok(Unpacked { file: KernelFile::open(f.path, f.op.spec(), bytes)?, bytes: bytes.len() })
    })
}

/// The parsed file, or `None` where it does not parse (the tests check that every embedded
/// file parses).
fn file(id: FileId) -> Option<&'static KernelFile> {
    parsed(id).as_ref().ok().map(|u| &u.file)
}

/// The kernel tables one clock reads: a GPU, an engine, the engine version they stand for and,
/// per operation, the file that answers it at that version.
///
/// The version is the nearest measured at or below the one asked for ([`Tables::at`]; the
/// default version when none is named); each table family (GEMM, attention, MLA, MLA's batched
/// matmuls, the all-reduce, MoE, linear attention) is read from that version's file or the one
/// its reuse entry names, so both attention phases, or both MLA phases, come from one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tables {
    /// The GPU measured.
    pub gpu: KernelGpu,
    /// The engine measured.
    pub engine: Engine,
    /// The engine version the tables stand for: the default version, or the nearest measured at
    /// or below the one asked for.
    pub version: &'static str,
    files: [Option<FileId>; Op::COUNT],
    nccl: Option<FileId>,
}

impl Tables {
    /// The default version's tables of `engine` on `gpu` (every file `None` where the engine was
    /// not measured there).
    pub fn newest(gpu: KernelGpu, engine: Engine) -> &'static Tables {
        static NEWEST: [OnceLock<Tables>; KernelGpu::ALL.len() * Engine::ALL.len()] =
            [const { OnceLock::new() }; KernelGpu::ALL.len() * Engine::ALL.len()];
        NEWEST[gpu as usize * Engine::ALL.len() + engine as usize].get_or_init(|| {
            let default = FILES.iter().find(|f| f.gpu == gpu && f.engine == Some(engine) && f.default);
            let version = default.map_or("", |f| f.version);
            match EngineVersion::parse(version) {
                Some(asked) => Tables::resolve(gpu, engine, version, asked),
                None => {
                    Tables { gpu, engine, version, files: [None; Op::COUNT], nccl: default_file(gpu, None, Op::Nccl) }
                }
            }
        })
    }

    /// The tables of `engine` on `gpu` at the version `asked` (`None`: [`Tables::newest`]):
    /// those of the nearest version measured at or below it ([`Tables::held_versions`]). A
    /// version below every one measured there is refused, naming those measured.
    /// The tables are kept for the process (one per GPU, engine and version asked), so that a
    /// clock holds a reference: a step's clock is made per step.
    pub fn at(gpu: KernelGpu, engine: Engine, asked: Option<EngineVersion>) -> Result<&'static Tables> {
        let Some(asked) = asked else { return Ok(Tables::newest(gpu, engine)) };
        thread_local! {
            static LAST: std::cell::Cell<Option<(KernelGpu, Engine, EngineVersion, &'static Tables)>> =
                const { std::cell::Cell::new(None) };
        }
        if let Some((g, e, v, t)) = LAST.get() {
            if (g, e, v) == (gpu, engine, asked) {
                return Ok(t);
            }
        }
        let held = Tables::held_versions(gpu, engine);
        let Some(version) = held.iter().copied().rfind(|v| EngineVersion::parse(v).is_some_and(|v| v <= asked)) else {
            let what = format!("{engine}@{asked}");
            return Err(if held.is_empty() {
                Error::invalid("engine", what, format!("an engine measured on {} (no {engine} tables)", gpu.dir()))
            } else {
                Error::invalid(
                    "engine",
                    what,
                    format!("a version of {engine} measured on {} ({}) or a later one", gpu.dir(), held.join(", ")),
                )
            });
        };
        let t = Tables::interned(Tables::resolve(gpu, engine, version, asked));
        LAST.set(Some((gpu, engine, asked, t)));
        Ok(t)
    }

    /// The one kept copy of `t` (at most one per GPU, engine and version measured).
    fn interned(t: Tables) -> &'static Tables {
        static KEPT: std::sync::Mutex<Vec<&'static Tables>> = std::sync::Mutex::new(Vec::new());
        let mut kept = KEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&k) = kept.iter().find(|k| ***k == t) {
            return k;
        }
        let k: &'static Tables = Box::leak(Box::new(t));
        kept.push(k);
        k
    }

    /// The tables at `version`, a version held, for a user asking for `asked` (at or above it):
    /// each table family read from, in this order,
    /// 1. the newest version from `version` to `asked` that holds it: `version`'s own file or the
    ///    one its reuse entry names (AIConfigurator's `reuse.yaml`: a table a version shares with
    ///    another), or a later version's up to the one asked (the collector's per-family runs:
    ///    SGLang 0.5.16's MoE and Kimi Delta Attention are read at `sglang@0.5.16`);
    /// 2. where no version at or below `asked` holds the family at all, the oldest version above
    ///    it that does: the first release the collector measured those kernels with (SGLang's
    ///    Kimi Delta Attention is measured at 0.5.16 alone, a kernel the default 0.5.14's tables
    ///    lack);
    /// 3. else none: the fitted model times it. An older version's table of a family `version`
    ///    lacks is not read, as it may be another kernel (vLLM 0.14.0's MLA core is
    ///    `vllm_flash_attn_mla`; 0.24.0 measured MLA as whole modules, which are not read).
    fn resolve(gpu: KernelGpu, engine: Engine, version: &'static str, asked: EngineVersion) -> Tables {
        let base = EngineVersion::parse(version);
        let mut versions: Vec<(EngineVersion, &'static str)> = FILES
            .iter()
            .filter(|f| f.gpu == gpu && f.engine == Some(engine))
            .map(|f| f.version)
            .chain(REUSE.iter().filter(|r| r.gpu == gpu && r.engine == engine).map(|r| r.version))
            .filter_map(|v| Some((EngineVersion::parse(v)?, v)))
            .collect();
        versions.sort();
        versions.dedup();
        let mut files = [None; Op::COUNT];
        for table in KernelTable::ALL {
            let ops = Op::of_table(table);
            if ops.contains(&Op::Nccl) {
                continue;
            }
            let holds = |v: &str| ops.iter().any(|&op| file_at(gpu, engine, op, v).is_some());
            let held: Vec<&(EngineVersion, &'static str)> = versions.iter().filter(|(_, v)| holds(v)).collect();
            let within = held.iter().rev().find(|(n, _)| Some(*n) >= base && *n <= asked);
            let first_above = || held.first().filter(|(oldest, _)| *oldest > asked);
            if let Some((_, v)) = within.or_else(first_above) {
                for &op in ops {
                    files[op as usize] = file_at(gpu, engine, op, v);
                }
            }
        }
        Tables { gpu, engine, version, files, nccl: default_file(gpu, None, Op::Nccl) }
    }

    /// Every version of `engine` measured on `gpu`: those holding GEMM and attention tables (a
    /// file of their own or a reuse entry), oldest first, in AIConfigurator's order
    /// ([`EngineVersion`]). A version that holds one family alone (the collector's per-family
    /// runs: sglang 0.5.16's MoE, trtllm 1.3.0rc23's DeepSeek-V4 MoE) is not a version of the
    /// engine's kernels: a version named at or above it reads the complete one below.
    pub fn held_versions(gpu: KernelGpu, engine: Engine) -> Vec<&'static str> {
        let own = FILES.iter().filter(|f| f.gpu == gpu && f.engine == Some(engine)).map(|f| f.version);
        let shared = REUSE.iter().filter(|r| r.gpu == gpu && r.engine == engine).map(|r| r.version);
        let mut v: Vec<&'static str> = own
            .chain(shared)
            .filter(|v| {
                let holds = |op| file_at(gpu, engine, op, v).is_some();
                holds(Op::Gemm) && (holds(Op::ContextAttention) || holds(Op::GenerationAttention))
            })
            .collect();
        v.sort_by_key(|s| EngineVersion::parse(s));
        v.dedup();
        v
    }

    /// The version whose file answers `table` (`None` where no file does); no allocation: every
    /// timed row asks it.
    pub fn version_of(&self, table: KernelTable) -> Option<&'static str> {
        Op::of_table(table).iter().find_map(|&op| self.file(op)).map(|id| id.file().version)
    }

    /// The distinct versions whose files answer the operations of `table` (one at most: a
    /// family is read at one version).
    pub fn versions_of(&self, table: KernelTable) -> Vec<&'static str> {
        let mut v: Vec<&'static str> =
            Op::of_table(table).iter().filter_map(|&op| self.file(op)).map(|id| id.file().version).collect();
        v.dedup();
        v
    }

    /// The file answering `op`.
    fn file(&self, op: Op) -> Option<FileId> {
        if op == Op::Nccl {
            self.nccl
        } else {
            self.files[op as usize]
        }
    }

    /// Whether any table is there.
    pub fn any(&self) -> bool {
        self.files.iter().any(Option::is_some)
    }
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

pub(super) fn gemm_us(t: &Tables, dtype: GemmDtype, m: f64, n: f64, k: f64) -> Option<f64> {
    if !positive(&[m, n, k]) {
        return None;
    }
    let f = file(t.file(Op::Gemm)?)?;
    let g = f.find(&[Q::S(dtype.as_str())])?;
    f.eval_ln(g.levels[0].tables[0], &[m, n, k]).map(to_us)
}

/// The file's monotone envelope ([`KernelFile::envelope`]).
fn envelope(id: FileId) -> Option<Envelope<'static>> {
    file(id).map(KernelFile::envelope)
}

pub(super) fn gemm_envelope_us(t: &Tables, dtype: GemmDtype, m: f64, n: f64, k: f64) -> Option<f64> {
    if !positive(&[m, n, k]) {
        return None;
    }
    let id = t.file(Op::Gemm)?;
    let key = (id, dtype, n.to_bits(), k.to_bits());
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
                let f = envelope(id)?;
                let table = gemm_table(id, dtype)?;
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

/// A GEMM's shape apart from m: the file, format, and n and k (as bits).
type GemmKey = (FileId, GemmDtype, u64, u64);

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

/// The GEMM table of a format in the envelope file, found once per (file, format).
fn gemm_table(id: FileId, dtype: GemmDtype) -> Option<usize> {
    static TABLE: [OnceLock<Option<usize>>; FILE_COUNT * GemmDtype::ALL.len()] =
        [const { OnceLock::new() }; FILE_COUNT * GemmDtype::ALL.len()];
    let i = usize::from(id.0) * GemmDtype::ALL.len() + dtype as usize;
    *TABLE[i].get_or_init(|| {
        let f = envelope(id)?;
        Some(f.find(&[Q::S(dtype.as_str())])?.levels[0].tables[0])
    })
}

pub(super) fn gemm_axes(t: &Tables, dtype: GemmDtype) -> Option<[&'static [f64]; 3]> {
    let f = file(t.file(Op::Gemm)?)?;
    let table = f.find(&[Q::S(dtype.as_str())])?.levels[0].tables[0];
    Some([&f.axis(table, 0)?.values, &f.axis(table, 1)?.values, &f.axis(table, 2)?.values])
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

pub(super) fn attention_us(t: &Tables, q: &AttentionQuery) -> Option<f64> {
    if !positive(&[q.heads, q.kv_heads, q.batch, q.length]) {
        return None;
    }
    let op = match q.phase {
        AttentionPhase::Context => Op::ContextAttention,
        AttentionPhase::Generation => Op::GenerationAttention,
    };
    let id = t.file(op)?;
    let key = AttentionKey::of(id, q);
    if let Some(us) = RECENT_ATTENTION.with_borrow(|r| r.get(&key)) {
        return us;
    }
    let f = envelope(id)?;
    let us = match planned_attention_us(f, id, t, q) {
        Some(us) => us,
        None => attention_lookup_us(f, t, q),
    };
    RECENT_ATTENTION.with_borrow_mut(|r| r.put(key, us));
    us
}

/// An attention query with its numbers as bits, and where it is looked up.
#[derive(PartialEq, Eq, Hash)]
struct AttentionKey(FileId, AttentionPhase, AttnDtype, AttnDtype, u32, u32, [u64; 4]);

impl AttentionKey {
    fn of(id: FileId, q: &AttentionQuery) -> Self {
        let numbers = [q.heads, q.kv_heads, q.batch, q.length].map(f64::to_bits);
        AttentionKey(id, q.phase, q.dtype, q.kv_dtype, q.head_dim, q.window, numbers)
    }
}

thread_local! {
    /// The attention lookup answered last on this thread (a step asks one or two: more slots
    /// would cost a sweep, whose every point asks a new one, more than they save).
    static RECENT_ATTENTION: RefCell<Recent<AttentionKey, 1>> = const { RefCell::new(Recent::EMPTY) };
}

/// [`attention_us`] without a plan: every step of the lookup taken for this query.
fn attention_lookup_us(f: Envelope<'_>, t: &Tables, q: &AttentionQuery) -> Option<f64> {
    let one = |kernel: &str| attention_kernel(f, kernel, q);
    if let Some(v) = default_attention_kernel(t.gpu, t.engine).and_then(one) {
        return Some(to_us(v));
    }
    fastest(f.names(0).map(one)).map(to_us)
}

/// A lookup apart from its grid axes: the thread's plans are kept per key ([`LookupPlan`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum PlanKey {
    /// The file, phase, formats, head dimension, window, and heads and KV heads (as bits).
    Attention(FileId, AttentionPhase, AttnDtype, AttnDtype, u32, u32, u64, u64),
    /// The file, phase, formats and heads (as bits).
    Mla(FileId, AttentionPhase, AttnDtype, AttnDtype, u64),
    /// The file, the matmul, its format and heads (as bits).
    MlaBmm(FileId, MlaBmm, AttnDtype, u64),
    /// The file and GPUs of the engine's custom all-reduce.
    CustomAllReduce(FileId, u32),
    /// The file, collective and GPUs of NCCL's.
    Nccl(FileId, Collective, u32),
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
fn planned_attention_us(f: Envelope<'static>, id: FileId, t: &Tables, q: &AttentionQuery) -> Option<Option<f64>> {
    let key = PlanKey::Attention(
        id,
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
            default: default_attention_kernel(t.gpu, t.engine).map(kernel),
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

pub(super) fn mla_us(t: &Tables, q: &MlaQuery) -> Option<f64> {
    if !positive(&[q.heads, q.batch, q.length]) {
        return None;
    }
    let op = match q.phase {
        AttentionPhase::Context => Op::ContextMla,
        AttentionPhase::Generation => Op::GenerationMla,
    };
    let id = t.file(op)?;
    let f = envelope(id)?;
    let key = PlanKey::Mla(id, q.phase, q.dtype, q.kv_dtype, q.heads.to_bits());
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

pub(super) fn mla_bmm_us(t: &Tables, op: MlaBmm, dtype: AttnDtype, heads: f64, tokens: f64) -> Option<f64> {
    if !positive(&[heads, tokens]) {
        return None;
    }
    let id = t.file(Op::MlaBmm)?;
    let f = envelope(id)?;
    let name = match op {
        MlaBmm::Pre => "mla_gen_pre",
        MlaBmm::Post => "mla_gen_post",
    };
    let key = PlanKey::MlaBmm(id, op, dtype, heads.to_bits());
    let group = |kernel: &str| f.file().find(&[Q::S(name), Q::S(kernel), Q::S(dtype.as_str())]);
    let make = || LookupPlan {
        default: None,
        kernels: f.names(1).map(|kernel| KernelPlan::of(f.file(), group(kernel), heads, 1.0, false)).collect(),
    };
    match planned(key, make, |t| f.eval_ln(t, &[tokens])) {
        Some(us) => us,
        None => mla_bmm_lookup_us(f, name, dtype, heads, tokens),
    }
}

/// [`mla_bmm_us`] without a plan: the fastest kernel, every step of the lookup taken.
fn mla_bmm_lookup_us(f: Envelope<'_>, name: &str, dtype: AttnDtype, heads: f64, tokens: f64) -> Option<f64> {
    fastest(f.names(1).map(|kernel| {
        let g = f.find(&[Q::S(name), Q::S(kernel), Q::S(dtype.as_str())])?;
        f.eval_group(g, heads, 1.0, false, |t| f.eval_ln(t, &[tokens]))
    }))
    .map(to_us)
}

pub(super) fn moe_us(t: &Tables, q: &MoeQuery) -> Option<f64> {
    if !positive(&[q.tokens, q.tp as f64, q.ep as f64]) {
        return None;
    }
    // A step asks one MoE layer's lookup for each of its expert GEMM rows and for the joins of
    // its activation and combine: the last answer is kept.
    let id = t.file(Op::Moe)?;
    let key = MoeKey(id, q.dtype, [q.hidden, q.intermediate, q.top_k, q.experts, q.tp, q.ep], q.tokens.to_bits());
    if let Some(us) = RECENT_MOE.with_borrow(|r| r.get(&key)) {
        return us;
    }
    let us = moe_lookup_us(id, q);
    RECENT_MOE.with_borrow_mut(|r| r.put(key, us));
    us
}

/// A fused-MoE query with its numbers as integers and bits, and where it is looked up.
#[derive(PartialEq, Eq, Hash)]
struct MoeKey(FileId, super::MoeDtype, [u64; 6], u64);

thread_local! {
    /// The fused-MoE lookup answered last on this thread.
    static RECENT_MOE: RefCell<Recent<MoeKey, 1>> = const { RefCell::new(Recent::EMPTY) };
}

/// [`moe_us`] without the recent answer.
fn moe_lookup_us(id: FileId, q: &MoeQuery) -> Option<f64> {
    let f = envelope(id)?;
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

pub(super) fn linear_us(t: &Tables, q: &LinearQuery) -> Option<f64> {
    if !positive(&[q.key_heads, q.value_heads, q.key_head_dim, q.value_head_dim, q.batch, q.seq_len]) {
        return None;
    }
    let op = Op::of_table(super::recurrent_table(q.rule))[0];
    let f = envelope(t.file(op)?)?;
    let (dk, dv) = (Q::N(q.key_head_dim), Q::N(q.value_head_dim));
    // The fastest kernel measured for this kernel and phase, at exactly this key-head count (a
    // shard the tables never ran is not interpolated) and value heads within those measured there.
    fastest(f.names(0).filter(|name| q.kernel.is(q.rule, q.phase, name)).map(|kernel| {
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

pub(super) fn mhc_us(t: &Tables, part: super::HyperPart, hidden: u64, streams: u64, tokens: f64) -> Option<f64> {
    if !positive(&[tokens]) {
        return None;
    }
    let f = envelope(t.file(Op::Mhc)?)?;
    let half = match part {
        super::HyperPart::Pre => "pre",
        super::HyperPart::Post => "post",
    };
    // The fastest kernel measured for this half and shape, as the engine picks one.
    fastest(f.names(1).map(|kernel| {
        let g = f.file().find(&[Q::S(half), Q::S(kernel), Q::N(hidden as f64), Q::N(streams as f64)])?;
        f.eval_ln(g.levels[0].tables[0], &[tokens])
    }))
    .map(to_us)
}

/// Bytes per element of the 16-bit collective tables (bf16 / `half`).
const COLLECTIVE_ELEMENT_BYTES: f64 = 2.0;

pub(super) fn allreduce_us(t: &Tables, gpus: u32, bytes: f64) -> Option<f64> {
    if gpus == 0 || !positive(&[bytes]) {
        return None;
    }
    if gpus == 1 {
        return Some(0.0);
    }
    let custom = t.file(Op::CustomAllreduce).and_then(|id| {
        let f = envelope(id)?;
        // The CUDA-graph variant where there is one, else the engine's only kernel.
        let group = || {
            let kernel = f.names(1).find(|k| k.ends_with("_graph")).or_else(|| f.names(1).next())?;
            f.file().find(&[Q::S("all_reduce"), Q::S(kernel), Q::S("bfloat16")])
        };
        collective_us(f, PlanKey::CustomAllReduce(id, gpus), group, gpus, bytes)
    });
    let nccl = nccl_us(t.gpu, Collective::AllReduce, gpus, bytes);
    fastest_us([custom, nccl].into_iter())
}

pub(super) fn nccl_us(gpu: KernelGpu, op: Collective, gpus: u32, bytes: f64) -> Option<f64> {
    if gpus == 0 || !positive(&[bytes]) {
        return None;
    }
    if gpus == 1 {
        return Some(0.0);
    }
    let id = default_file(gpu, None, Op::Nccl)?;
    let f = envelope(id)?;
    let group = || f.file().find(&[Q::S(op.as_str()), Q::S("half")]);
    collective_us(f, PlanKey::Nccl(id, op, gpus), group, gpus, bytes)
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

    /// The tables of GPU `g` and engine `e` at their `v`-th measured version (counting past the
    /// last: the default version's).
    fn tables(g: usize, e: usize, v: usize) -> &'static Tables {
        let (gpu, engine) = (KernelGpu::ALL[g], Engine::ALL[e]);
        let held = Tables::held_versions(gpu, engine);
        match held.get(v) {
            Some(version) => Tables::at(gpu, engine, EngineVersion::parse(version)).expect("a held version"),
            None => Tables::newest(gpu, engine),
        }
    }

    /// Every operation but NCCL's is in one table family, NCCL's in its own.
    #[test]
    fn every_op_is_in_one_table_family() {
        for op in Op::ALL {
            let families: Vec<KernelTable> =
                KernelTable::ALL.into_iter().filter(|t| Op::of_table(*t).contains(&op)).collect();
            assert_eq!(families.len(), 1, "{op:?}: {families:?}");
        }
    }

    /// Lookups answered from the recent answers are each query's own: GEMM and attention
    /// queries asked in one order and then again in the other (so that every slot has held other
    /// queries in between) give what they gave the first time.
    #[test]
    fn recent_answers_are_each_querys_own() {
        let t = Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm);
        let shapes = [(6144.0, 4096.0), (4096.0, 4096.0), (28672.0, 4096.0), (4096.0, 14336.0), (128256.0, 4096.0)];
        let gemms: Vec<(f64, f64, f64)> =
            [1.0, 3.0, 64.0, 1000.0].iter().flat_map(|&m| shapes.map(|(n, k)| (m, n, k))).collect();
        let attention = |batch, length| crate::testing::llama_attention(AttentionPhase::Generation, batch, length);
        let queries: Vec<AttentionQuery> =
            [1.0, 8.0, 64.0].iter().flat_map(|&b| [128.0, 2047.0, 8192.0].map(|l| attention(b, l))).collect();
        let gemm = |&(m, n, k): &(f64, f64, f64)| gemm_envelope_us(t, GemmDtype::Bf16, m, n, k);
        let first: Vec<Option<f64>> = gemms.iter().map(gemm).collect();
        let first_attention: Vec<Option<f64>> = queries.iter().map(|q| attention_us(t, q)).collect();
        assert!(first.iter().chain(&first_attention).all(Option::is_some));
        for (g, want) in gemms.iter().zip(&first).rev() {
            assert_eq!(gemm(g), *want, "{g:?}");
        }
        for (q, want) in queries.iter().zip(&first_attention).rev() {
            assert_eq!(attention_us(t, q), *want, "{q:?}");
        }
        // Mixtral's experts at several token counts, asked again in turn: each its own answer.
        let moe: Vec<MoeQuery> = [1.0, 4.0, 24.0, 512.0].map(crate::testing::mixtral_moe).to_vec();
        let first_moe: Vec<Option<f64>> = moe.iter().map(|q| moe_us(t, q)).collect();
        assert!(first_moe.iter().all(Option::is_some) && first_moe[0] != first_moe[3]);
        for (q, want) in moe.iter().zip(&first_moe).rev() {
            assert_eq!(moe_us(t, q), *want, "{q:?}");
            assert_eq!(moe_lookup_us(t.file(Op::Moe).unwrap(), q), *want, "{q:?}");
        }
        // The shapes of one step spread over the slots (float keys differ only in high bits).
        let slots: std::collections::HashSet<usize> = shapes
            .iter()
            .map(|(n, k)| {
                Recent::<(GemmKey, u64), 16>::slot(&(
                    (t.file(Op::Gemm).unwrap(), GemmDtype::Bf16, n.to_bits(), k.to_bits()),
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
            g in 0usize..10, e in 0usize..3, v in 0usize..6, op in 0usize..4, gpus in 2u32..12,
            bytes in prop_oneof![1.0f64..1e10, (0u32..34).prop_map(|p| 2f64.powi(p as i32))],
        ) {
            let t = tables(g, e, v);
            let gpu = t.gpu;
            let op = [Collective::AllGather, Collective::AllReduce, Collective::AllToAll, Collective::ReduceScatter][op];
            let direct = |f: Envelope<'static>, g: Option<&'static Group>| {
                f.eval_group(g?, f64::from(gpus), 1.0, false, |t| f.eval_ln(t, &[bytes / COLLECTIVE_ELEMENT_BYTES])).map(to_us)
            };
            let nccl_file = || t.file(Op::Nccl).and_then(envelope);
            let nccl = nccl_file().and_then(|f| direct(f, f.file().find(&[Q::S(op.as_str()), Q::S("half")])));
            let custom = t.file(Op::CustomAllreduce).and_then(envelope).and_then(|f| {
                let kernel = f.names(1).find(|k| k.ends_with("_graph")).or_else(|| f.names(1).next())?;
                direct(f, f.file().find(&[Q::S("all_reduce"), Q::S(kernel), Q::S("bfloat16")]))
            });
            let all_nccl = nccl_file()
                .and_then(|f| direct(f, f.file().find(&[Q::S("all_reduce"), Q::S("half")])));
            let allreduce = fastest_us([custom, all_nccl].into_iter());
            for _ in 0..2 {
                prop_assert_eq!(nccl_us(gpu, op, gpus, bytes).map(f64::to_bits), nccl.map(f64::to_bits));
                prop_assert_eq!(allreduce_us(t, gpus, bytes).map(f64::to_bits), allreduce.map(f64::to_bits));
            }
        }

        /// MLA attention and its batched matmuls through their keys' plans are the lookups
        /// themselves, bit for bit, heads on and between the measured counts.
        #[test]
        fn mla_plans_give_the_lookups_themselves(
            g in 0usize..10, e in 0usize..3, v in 0usize..6, p in 0usize..2, kv_fp8 in any::<bool>(), pre in any::<bool>(),
            heads in prop_oneof![Just(16.0f64), Just(128.0), Just(1.0), 0.5f64..200.0],
            batch in prop_oneof![1.0f64..2048.0, (0u32..12).prop_map(|p| f64::from(1u32 << p))],
            length in prop_oneof![1.0f64..300_000.0, (0u32..18).prop_map(|p| f64::from(1u32 << p))],
        ) {
            let t = tables(g, e, v);
            let kv_dtype = if kv_fp8 { AttnDtype::Fp8 } else { AttnDtype::Bf16 };
            let q = MlaQuery { phase: PHASES[p], dtype: AttnDtype::Bf16, kv_dtype, heads, batch, length };
            let op = match q.phase {
                AttentionPhase::Context => Op::ContextMla,
                AttentionPhase::Generation => Op::GenerationMla,
            };
            let direct = t.file(op).and_then(envelope).and_then(|f| mla_lookup_us(f, &q));
            let (bmm, name) = if pre { (MlaBmm::Pre, "mla_gen_pre") } else { (MlaBmm::Post, "mla_gen_post") };
            let bmm_direct = t.file(Op::MlaBmm).and_then(envelope)
                .and_then(|f| mla_bmm_lookup_us(f, name, kv_dtype, heads, batch));
            for _ in 0..2 {
                prop_assert_eq!(mla_us(t, &q).map(f64::to_bits), direct.map(f64::to_bits));
                prop_assert_eq!(
                    mla_bmm_us(t, bmm, kv_dtype, heads, batch).map(f64::to_bits),
                    bmm_direct.map(f64::to_bits)
                );
            }
        }

        /// A GEMM through its shape's curve in m is the table's own interpolation, bit for bit,
        /// on and between grid points, below and above the grid.
        #[test]
        fn a_gemm_curve_gives_the_tables_interpolation(
            g in 0usize..10, e in 0usize..3, v in 0usize..6, d in 0usize..7,
            m in prop_oneof![1.0f64..70_000.0, (0u32..17).prop_map(|p| f64::from(1u32 << p))],
            n in prop_oneof![16.0f64..140_000.0, Just(4096.0), Just(6144.0), Just(14336.0)],
            k in prop_oneof![16.0f64..140_000.0, Just(4096.0), Just(28672.0)],
        ) {
            let (t, dtype) = (tables(g, e, v), GemmDtype::ALL[d]);
            let id = t.file(Op::Gemm);
            let direct = id.and_then(envelope)
                .zip(id.and_then(|id| gemm_table(id, dtype)))
                .and_then(|(f, table)| f.eval_ln(table, &[m, n, k]))
                .map(to_us);
            // Twice: the curve made, then the curve kept.
            for _ in 0..2 {
                let curve = gemm_envelope_us(t, dtype, m, n, k);
                prop_assert_eq!(curve.map(f64::to_bits), direct.map(f64::to_bits));
            }
        }

        /// An attention lookup through its key's plan is the lookup itself, bit for bit: every
        /// GPU, engine and phase, heads on and between the measured layouts, windows with and
        /// without tables of their own.
        #[test]
        fn an_attention_plan_gives_the_lookup_itself(
            g in 0usize..10, e in 0usize..3, v in 0usize..6, p in 0usize..2, fp8 in any::<bool>(), kv_fp8 in any::<bool>(),
            head_dim in prop_oneof![Just(64u32), Just(128), Just(256), Just(96)],
            kv_heads in prop_oneof![1.0f64..64.0, Just(8.0), Just(1.0), Just(4.0)],
            group in prop_oneof![Just(1.0f64), Just(4.0), Just(8.0), 1.0f64..16.0],
            window in prop_oneof![Just(0u32), Just(4096), 1u32..100_000],
            batch in prop_oneof![1.0f64..2048.0, (0u32..12).prop_map(|p| f64::from(1u32 << p))],
            length in prop_oneof![1.0f64..300_000.0, (0u32..18).prop_map(|p| f64::from(1u32 << p))],
        ) {
            let t = tables(g, e, v);
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
            let direct = t.file(op).and_then(envelope).and_then(|f| attention_lookup_us(f, t, &q));
            for _ in 0..2 {
                prop_assert_eq!(attention_us(t, &q).map(f64::to_bits), direct.map(f64::to_bits));
            }
        }
    }
}
