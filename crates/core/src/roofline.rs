//! Roofline time of one operator: `max(flops / (peak × compute_efficiency),
//! bytes / (bandwidth × bandwidth_efficiency))` (the reference calculator: "Why batching plateaus"); the step is
//! the sum over operators. The default achieved fractions, 60 % of peak compute and 80 % of peak
//! bandwidth, are the reference calculator's assumptions; measure your own and set them.

use crate::cost::Cost;
use crate::error::Result;
use crate::hardware::Gpu;
use crate::layout::CollectiveCall;
use crate::operator::Op;
use crate::precision::MathFormat;
use serde::Serialize;

/// Achieved fractions of peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Efficiency {
    /// Fraction of peak FLOP/s achieved (default: [`Efficiency::default`]).
    pub compute: f64,
    /// Fraction of peak bandwidth achieved (default: [`Efficiency::default`]).
    pub bandwidth: f64,
}

impl Default for Efficiency {
    fn default() -> Self {
        Efficiency { compute: 0.6, bandwidth: 0.8 }
    }
}

impl Efficiency {
    /// Validated constructor: each fraction in its range ([`crate::limits::COMPUTE_EFFICIENCY`],
    /// [`crate::limits::BANDWIDTH_EFFICIENCY`]: 0.01 to 1).
    pub fn new(compute: f64, bandwidth: f64) -> Result<Self> {
        use crate::limits::{BANDWIDTH_EFFICIENCY, COMPUTE_EFFICIENCY};
        Ok(Efficiency {
            compute: COMPUTE_EFFICIENCY.check(COMPUTE_EFFICIENCY.name, compute)?,
            bandwidth: BANDWIDTH_EFFICIENCY.check(BANDWIDTH_EFFICIENCY.name, bandwidth)?,
        })
    }
}

/// Which roof an operator sits under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Time set by bytes ÷ achieved bandwidth.
    Memory,
    /// Time set by FLOPs ÷ achieved peak.
    Compute,
    /// Time set by a GPU-to-GPU link: link bytes ÷ achieved link bandwidth + latency
    /// ([`crate::parallel`]).
    Link,
    /// Time a pipeline stage waits for the others ([`crate::parallel`]).
    Wait,
    /// Work that runs inside another operator's kernel (an epilogue, FlashAttention's softmax):
    /// its time is what it adds to that kernel, whose bound it shares.
    Fused,
}

impl Bound {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Link => "link",
            Bound::Wait => "wait",
            Bound::Fused => "fused",
        }
    }
}

/// The two roofs and the time of some work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Timing {
    /// FLOPs ÷ (peak × compute efficiency), seconds.
    pub compute_s: f64,
    /// Bytes ÷ (bandwidth × bandwidth efficiency), seconds.
    pub memory_s: f64,
    /// Link time of a communication operator, seconds (bytes ÷ achieved link bandwidth + latency).
    pub link_s: f64,
    /// Roofline time, seconds: `max(compute, memory)` for one operator, `link_s` for a
    /// communication operator, the wait itself for a pipeline wait (no roof); a sum of those for a
    /// total. Under the measured clock ([`crate::clock`]) this is the expected time.
    pub time_s: f64,
    /// The roofline's time of the same work (the roofline clock, with the efficiency inputs),
    /// seconds; equal to `time_s` under the roofline clock.
    pub roofline_s: f64,
    /// The HBM bytes this clock charges the work: its counted bytes less those its kernel keeps
    /// on chip ([`Join::Fused`], [`Join::Part`]). Equal to the counted bytes under the roofline.
    pub hbm_bytes: f64,
    /// Whether all of the work runs inside other operators' kernels ([`Join::Fused`]); a sum is
    /// fused only if every part is.
    pub fused: bool,
    /// Why the work takes more than [`SLOW_LIMIT`] × its roofline time plus its kernel's fixed
    /// costs, where it does ([`Timed::cause`]); a sum keeps the first.
    pub slow: Option<SlowCause>,
    /// Where its time came from ([`TimeSource`]); a sum of parts from different sources is
    /// [`TimeSource::Mixed`]. `None` for work no clock timed (a zero).
    pub source: Option<TimeSource>,
}

pub use crate::kernels::KernelTable;

/// The kind of kernel the measured clock's fitted model times where no table holds it (its
/// achievable fractions of bandwidth and peak, its cost per kernel: `docs/fidelity.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FittedKernel {
    /// A dense GEMM outside the tables (a format, shape or GPU they do not hold).
    Gemm,
    /// The routed experts' grouped GEMM where no measured MoE table holds the layer (its shape,
    /// format or split, skewed routing, or a GPU or engine without MoE tables).
    GroupedGemm,
    /// Attention outside the tables (a sparse selection, pooled entries, a head size or format
    /// they do not hold).
    Attention,
    /// A recurrent mixer's update or chunked scan.
    Recurrence,
    /// A sparse indexer's scoring.
    Scoring,
    /// Elementwise, norm and gather kernels (no table: bandwidth-bound by their bytes).
    Vector,
    /// The engine's host work per step.
    Host,
}

impl FittedKernel {
    /// Its name in [`TimeSource::words`].
    pub fn name(self) -> &'static str {
        match self {
            FittedKernel::Gemm => "gemm",
            FittedKernel::GroupedGemm => "moe-grouped-gemm",
            FittedKernel::Attention => "attention",
            FittedKernel::Recurrence => "recurrence",
            FittedKernel::Scoring => "indexer",
            FittedKernel::Vector => "vector",
            FittedKernel::Host => "host",
        }
    }
}

/// Where an operator's time came from: the question a reader asks of every number ("which
/// numbers are these?").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeSource {
    /// The roofline clock: FLOPs and bytes against the peaks at the efficiency inputs.
    Roofline,
    /// A measured kernel table: the engine's kernels on this GPU (AIConfigurator's database).
    Table {
        /// The GPU measured.
        gpu: crate::kernels::KernelGpu,
        /// The engine whose kernels were measured (`None`: NCCL).
        engine: Option<crate::kernels::Engine>,
        /// The engine version measured (for NCCL, the library's).
        version: &'static str,
        /// The table.
        table: KernelTable,
    },
    /// The measured clock's fitted model.
    Fitted(FittedKernel),
    /// Inside another operator's kernel: the time it adds there, from its roofs.
    Fused,
    /// A collective on the link model (`α + bytes ÷ β`), outside the measured tables.
    LinkModel,
    /// Parts timed from different sources (a row over layers of different kinds, a total).
    Mixed,
}

impl TimeSource {
    /// In words, for JSON, CSV and tables: `table:h100_sxm/trtllm/1.3.0rc20/gemm`,
    /// `fitted:moe-grouped-gemm`, `roofline`, `fused`, `link-model`, `mixed`.
    pub fn words(self) -> String {
        match self {
            TimeSource::Roofline => "roofline".into(),
            TimeSource::Table { gpu, engine: Some(e), version, table } => {
                format!("table:{}/{}/{}/{}", gpu.dir(), e, version, table.name())
            }
            TimeSource::Table { gpu, engine: None, table, .. } => format!("table:{}/{}", gpu.dir(), table.name()),
            TimeSource::Fitted(k) => format!("fitted:{}", k.name()),
            TimeSource::Fused => "fused".into(),
            TimeSource::LinkModel => "link-model".into(),
            TimeSource::Mixed => "mixed".into(),
        }
    }

    /// The source of a sum: one source where the parts share it, [`TimeSource::Mixed`] where
    /// they differ.
    pub fn join(a: Option<TimeSource>, b: Option<TimeSource>) -> Option<TimeSource> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) if x == y => Some(x),
            _ => Some(TimeSource::Mixed),
        }
    }
}

impl Serialize for TimeSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.words())
    }
}

/// An operator taking more than this many times its roofline time, plus the fixed costs of its
/// kernel (a launch gap; the host's launch under an eager engine), names the cause
/// ([`SlowCause`]). The measured clock's fitted model runs within about 0.7–1.9× of the
/// roofline for kernels of reasonable size (its achievable fractions of peak are 0.6–0.9 where
/// the roofline assumes 0.6 and 0.8; prefill attention at FlashAttention-2's measured
/// fraction), so anything beyond 3× has a reason of its own.
pub const SLOW_LIMIT: f64 = 3.0;

/// Why an operator takes far longer than its roofline ([`SLOW_LIMIT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowCause {
    /// The engine's own kernel, as measured (the kernel tables): it runs this slowly at this
    /// shape (a launch-bound kernel, a slow path for the format).
    MeasuredKernel,
    /// The engine's measured kernel is more than [`crate::clock::TABLE_SLOW_LIMIT`] × its
    /// roofline at the measured shapes this lookup reads: a slow path the tables recorded, not
    /// an extrapolation.
    MeasuredSlowShape,
    /// Weight-only quantised weights are dequantised inside the GEMM, once per M tile.
    Dequantisation,
    /// The GEMM's tiles are mostly padding, or too few to fill the GPU (tile and wave
    /// quantisation).
    TileWaste,
    /// Prefill attention runs at FlashAttention's measured fraction of the tensor peak.
    AttentionKernel,
    /// A calibration profile (`profile`) scales the clock's times.
    Profile,
    /// The engine's decode attention reads a GQA group's K and V once per query head
    /// (TensorRT-LLM before its XQA kernel, and its MMHA fallback for a head group past
    /// [`crate::engine::XQA_MAX_HEAD_GROUP`]).
    KvPerQueryHead,
}

impl SlowCause {
    /// The cause in words.
    pub fn words(self) -> &'static str {
        match self {
            SlowCause::MeasuredKernel => "the engine's measured kernel runs this slowly at this shape",
            SlowCause::MeasuredSlowShape => {
                "the engine's measured kernel is over 10× its roofline at the measured shapes around this one"
            }
            SlowCause::Dequantisation => "dequantising the weight-only quantised weights inside the GEMM",
            SlowCause::TileWaste => "tile padding and wave quantisation leave most of the tensor cores idle",
            SlowCause::AttentionKernel => "prefill attention at FlashAttention's measured fraction of peak",
            SlowCause::Profile => "the calibration profile scales this operator's time",
            SlowCause::KvPerQueryHead => "the engine's decode attention reads the KV cache once per query head",
        }
    }
}

impl Timing {
    /// Roofline of one operator running at `math` on `gpu`.
    #[inline]
    pub fn of(cost: &Cost, math: MathFormat, gpu: &Gpu, eff: Efficiency) -> Timing {
        let peak = gpu.peak(math).unwrap_or(gpu.peak_flops_per_s.vector);
        let compute_s = cost.flops / (peak * eff.compute);
        let memory_s = cost.bytes() / (gpu.memory_bandwidth_bytes_per_s * eff.bandwidth);
        let time_s = compute_s.max(memory_s);
        Timing {
            compute_s,
            memory_s,
            link_s: 0.0,
            time_s,
            roofline_s: time_s,
            hbm_bytes: cost.bytes(),
            fused: false,
            slow: None,
            source: Some(TimeSource::Roofline),
        }
    }

    /// A communication operator's time on a link.
    pub fn link(link_s: f64) -> Timing {
        Timing { link_s, time_s: link_s, roofline_s: link_s, ..Timing::default() }
    }

    /// Time spent waiting for other pipeline stages: time under no roof.
    pub fn wait(wait_s: f64) -> Timing {
        Timing { time_s: wait_s, roofline_s: wait_s, ..Timing::default() }
    }

    /// Time the GPU waits for the engine's host work: time under no roof, which the roofline
    /// clock does not have (its roofline time is 0).
    pub fn host(host_s: f64) -> Timing {
        Timing { time_s: host_s, ..Timing::default() }
    }

    /// Which roof dominates: the largest of the parts (compute only when strictly above memory, as
    /// a tie reads as memory-bound); a wait is time under no roof; fused work shares its kernel's.
    pub fn bound(&self) -> Bound {
        let roof = self.compute_s.max(self.memory_s);
        if self.fused {
            Bound::Fused
        } else if self.time_s > 0.0 && roof == 0.0 && self.link_s == 0.0 {
            Bound::Wait
        } else if self.link_s > roof {
            Bound::Link
        } else if self.compute_s > self.memory_s {
            Bound::Compute
        } else {
            Bound::Memory
        }
    }

    /// Scale by a count of identical instances.
    pub fn times(self, n: f64) -> Timing {
        Timing {
            compute_s: self.compute_s * n,
            memory_s: self.memory_s * n,
            link_s: self.link_s * n,
            time_s: self.time_s * n,
            roofline_s: self.roofline_s * n,
            hbm_bytes: self.hbm_bytes * n,
            fused: self.fused,
            slow: self.slow,
            source: self.source,
        }
    }
}

impl std::ops::Add for Timing {
    type Output = Timing;
    fn add(self, o: Timing) -> Timing {
        Timing {
            compute_s: self.compute_s + o.compute_s,
            memory_s: self.memory_s + o.memory_s,
            link_s: self.link_s + o.link_s,
            time_s: self.time_s + o.time_s,
            roofline_s: self.roofline_s + o.roofline_s,
            hbm_bytes: self.hbm_bytes + o.hbm_bytes,
            fused: self.fused && o.fused,
            slow: self.slow.or(o.slow),
            source: TimeSource::join(self.source, o.source),
        }
    }
}

impl std::ops::AddAssign for Timing {
    fn add_assign(&mut self, o: Timing) {
        *self = *self + o;
    }
}

/// How an operator's work joins the kernels around it under a time model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Join {
    /// A kernel of its own.
    Own,
    /// One part of a GEMM the engine runs with its siblings as one kernel, their output columns
    /// side by side (Q, K and V; gate and up: [`Op::merge_n`]). The part is charged `share` of
    /// that kernel's time and bytes (its columns' share: its weights, FLOPs and output are that
    /// share, and so is its part of the one read of the shared input). `first` opens the kernel,
    /// the others extend it.
    Part {
        /// The first part: it opens the kernel.
        first: bool,
        /// Its share of the kernel: `n ÷ merge_n`.
        share: f64,
    },
    /// Inside the open kernel (an epilogue or prologue, FlashAttention's softmax): its roofs add
    /// to that kernel's and it is charged the time it adds; `on_chip_bytes` of its counted bytes
    /// never reach HBM (an input still in the kernel's registers or shared memory).
    Fused {
        /// Counted bytes that stay on chip.
        on_chip_bytes: f64,
    },
}

impl Join {
    /// Whether the operator opens a kernel (and pays a kernel's fixed costs).
    pub fn opens_kernel(self) -> bool {
        matches!(self, Join::Own | Join::Part { first: true, .. })
    }

    /// The counted bytes of an operator of cost `cost` that stay on chip: a fused operator's
    /// `on_chip_bytes`; for a part of a merged GEMM, the read of the shared input that its
    /// siblings' columns account for, `input × (1 − share)`.
    pub fn on_chip_bytes(self, cost: &Cost) -> f64 {
        match self {
            Join::Own => 0.0,
            Join::Part { share, .. } => cost.activation_read_bytes() * (1.0 - share),
            Join::Fused { on_chip_bytes } => on_chip_bytes,
        }
    }
}

/// One operator as a time model sees it: its timing, how it joins its kernel, and why it would
/// be slow (asked once per operator: the model decides all three together, so a measured kernel
/// is looked up once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// The operator's compute and memory times, its time and the HBM bytes it moves, for the way
    /// it joins its kernel (`roofline_s` is filled in by the [`KernelTimer`]).
    pub timing: Timing,
    /// How it joins its kernel ([`TimeModel::join`]).
    pub join: Join,
    /// Why it takes more than [`SLOW_LIMIT`] × its roofline plus [`TimeModel::kernel_fixed_s`],
    /// if it does (the [`KernelTimer`] keeps it only then); `None` if the model knows no reason.
    pub cause: Option<SlowCause>,
}

/// How long one operator (one instance) takes on a GPU: the one place a time model plugs in. Every
/// operator's time (ledger, sweep, zoom, the parallel pipeline) comes from
/// [`crate::parallel::op_timing`] through a [`KernelTimer`], which asks its model; [`Roofline`] is
/// today's model and [`crate::clock::Measured`] the measured one. The model sees the whole
/// operator: its kind, its cost, its math format and its GEMM or attention shape.
pub trait TimeModel {
    /// The operator's compute and memory times, its time and the HBM bytes it moves, for the
    /// way it joins its kernel ([`TimeModel::join`]): in a kernel of its own, its part of a merged
    /// kernel, or its roofs inside the open kernel (`roofline_s` is filled in by the
    /// [`KernelTimer`]).
    fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing;

    /// The operator's time, its join and its slow cause in one ([`Timed`]); the [`KernelTimer`]
    /// asks this. Default: [`TimeModel::op_time`] and [`TimeModel::join`], no cause. A model
    /// whose time and join share work (an engine's fusion rules, a table lookup) decides them
    /// together here.
    #[inline]
    fn timed(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timed {
        Timed { timing: self.op_time(op, gpu, eff), join: self.join(op), cause: None }
    }

    /// How the operator joins its kernel under this model (default: a kernel of its own, or
    /// inside the previous kernel with no bytes on chip where the operator says so,
    /// FlashAttention's softmax). A model of an engine that fuses more (a residual into the
    /// norm, RoPE into attention, Q, K and V into one GEMM) says so here.
    #[inline]
    fn join(&self, op: &Op) -> Join {
        if op.fused {
            Join::Fused { on_chip_bytes: 0.0 }
        } else {
            Join::Own
        }
    }

    /// A communication operator's time for a link time of `link_s` seconds on the α + n/β model,
    /// and the collective it is where the measured tables can key it (default: the link time
    /// itself, [`Timing::link`]).
    #[inline]
    fn link_time(&self, _call: Option<&CollectiveCall>, link_s: f64) -> Timing {
        Timing::link(link_s)
    }

    /// Whether this model is the plain roofline (its time is the roofline time; the timer then
    /// skips computing the roofline twice).
    #[inline]
    fn is_roofline(&self) -> bool {
        false
    }

    /// The fixed costs of one kernel under this model, seconds, beyond its roofs (the launch
    /// allowance of [`SLOW_LIMIT`]; default none).
    #[inline]
    fn kernel_fixed_s(&self) -> f64 {
        0.0
    }

    /// Host time per step that the GPU waits for under this model, seconds (the step's `host`
    /// row; default none).
    #[inline]
    fn host_step_s(&self) -> f64 {
        0.0
    }
}

/// The roofline ([`Timing::of`]): `max(FLOPs ÷ (peak × compute efficiency), bytes ÷ (bandwidth ×
/// bandwidth efficiency))`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Roofline;

impl TimeModel for Roofline {
    #[inline]
    fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
        Timing::of(&op.cost, op.math, gpu, eff)
    }

    #[inline]
    fn is_roofline(&self) -> bool {
        true
    }
}

/// The kernel being timed: its roofs and its time (roofs' max plus any fixed cost per kernel).
#[derive(Debug, Clone, Copy, Default)]
struct OpenKernel(Timing);

impl OpenKernel {
    /// Add an operator timed `own` that joins as `join`; returns the time it is charged.
    ///
    /// * A kernel of its own, or the first part of a merged GEMM, opens a new kernel.
    /// * A later part of a merged GEMM extends the open kernel: roofs and time add, and the part
    ///   is charged its own (share of the) time.
    /// * A fused operator joins the open kernel: the kernel's compute and memory roofs are the
    ///   sums of its parts, and the kernel's time grows by what the roofs' max grows, `max(c₁ +
    ///   c₂, m₁ + m₂) − max(c₁, m₁)`, which the fused operator is charged. Whatever the kernel's
    ///   time holds beyond its roofs is kept: a fixed cost per kernel, or a measured kernel's
    ///   time (above or below the fitted roofs). The charge is never negative, in floating point
    ///   too (`c₁ + c₂ ≥ c₁` for `c₂ ≥ 0` under rounding).
    #[inline]
    fn next(&mut self, own: Timing, join: Join) -> Timing {
        match join {
            Join::Own | Join::Part { first: true, .. } => {
                self.0 = own;
                own
            }
            Join::Part { first: false, .. } => {
                self.0 += own;
                own
            }
            Join::Fused { .. } => {
                let before = self.0;
                let (c, m) = (before.compute_s + own.compute_s, before.memory_s + own.memory_s);
                let added_s = c.max(m) - before.compute_s.max(before.memory_s);
                self.0 = Timing { compute_s: c, memory_s: m, time_s: before.time_s + added_s, ..Timing::default() };
                Timing { time_s: added_s, fused: true, ..own }
            }
        }
    }
}

/// Times operators in execution order with a [`TimeModel`] (the [`Roofline`] by default), joining
/// each to its kernel as the model says ([`Join`]): a fused operator is part of the previous
/// operator's kernel, whose compute and memory roofs are the sums of its parts and whose time is
/// the max of the two, and is charged the time it adds, `max(c₁ + c₂, m₁ + m₂) − max(c₁, m₁)`.
/// So FlashAttention's softmax costs nothing while the kernel is memory-bound (decode) and its
/// full vector time when it is compute-bound (long prefill), and the step time is the sum of
/// kernel times either way. Beside the model's (expected) time it keeps the roofline clock, with
/// the operator's own fusion, in [`Timing::roofline_s`].
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelTimer<M: TimeModel = Roofline> {
    kernel: OpenKernel,
    roof: OpenKernel,
    model: M,
}

impl KernelTimer {
    /// A roofline timer with no kernel open.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<M: TimeModel> KernelTimer<M> {
    /// A timer with no kernel open that times each operator with `model`.
    pub fn with_model(model: M) -> Self {
        KernelTimer { kernel: OpenKernel::default(), roof: OpenKernel::default(), model }
    }

    /// Time of the next operator (one instance).
    #[inline]
    pub fn next(&mut self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
        let own = self.model.timed(op, gpu, eff);
        let t = self.kernel.next(own.timing, own.join);
        if self.model.is_roofline() {
            return Timing { roofline_s: t.time_s, ..t };
        }
        let roof = self.roof.next(Timing::of(&op.cost, op.math, gpu, eff), Roofline.join(op));
        let slow = (!t.fused && t.time_s > SLOW_LIMIT * roof.time_s + self.model.kernel_fixed_s())
            .then_some(own.cause)
            .flatten();
        Timing { roofline_s: roof.time_s, slow, ..t }
    }

    /// Host time per step under the timer's model ([`TimeModel::host_step_s`]).
    #[inline]
    pub fn host_step_s(&self) -> f64 {
        self.model.host_step_s()
    }

    /// Time of a communication operator whose link time is `link_s` on the α + n/β model (it
    /// closes the open kernel); `call` keys the measured collective tables where there are some.
    #[inline]
    pub fn link(&mut self, call: Option<&CollectiveCall>, link_s: f64) -> Timing {
        let t = self.model.link_time(call, link_s);
        self.kernel = OpenKernel(t);
        self.roof = OpenKernel(Timing::link(link_s));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::builtin_gpus;

    #[test]
    fn a_second_time_model_plugs_into_the_kernel_timer() {
        struct Twice;
        impl TimeModel for Twice {
            fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
                Roofline.op_time(op, gpu, eff).times(2.0)
            }
        }
        let gpu = &builtin_gpus()[0];
        let c = Cost { flops: 1e12, weight_bytes: 1e9, ..Cost::ZERO };
        let op = Op::plain(crate::kinds::OpKind::QProj, c, MathFormat::Bf16);
        let roof = KernelTimer::new().next(&op, gpu, Efficiency::default());
        assert_eq!(roof, Timing::of(&c, MathFormat::Bf16, gpu, Efficiency::default()));
        let twice = KernelTimer::with_model(Twice).next(&op, gpu, Efficiency::default());
        assert_eq!(twice.time_s, 2.0 * roof.time_s);
        assert_eq!(twice.roofline_s, roof.time_s, "the timer keeps the roofline clock beside the model's");
    }

    #[test]
    fn roofline_takes_the_larger_roof() {
        let h100 = builtin_gpus().iter().find(|g| g.name == "h100-sxm").unwrap();
        // 1 GB at 80 % of 3.35 TB/s = 1e9 / 2.68e12 s; 1 GFLOP at 60 % of 989.4 TF is smaller.
        let c = Cost { flops: 1e9, weight_bytes: 1e9, ..Cost::ZERO };
        let t = Timing::of(&c, MathFormat::Bf16, h100, Efficiency::default());
        assert_eq!(t.memory_s, 1e9 / 2.68e12);
        assert_eq!(t.compute_s, 1e9 / (989.4e12 * 0.6));
        assert_eq!(t.time_s, t.memory_s);
        assert_eq!(t.bound(), Bound::Memory);
    }

    #[test]
    fn a_fused_operator_is_charged_its_marginal_time() {
        let op = |cost: Cost, math: MathFormat, fused: bool| Op {
            fused,
            ..Op::plain(crate::kinds::OpKind::Act, cost, math)
        };
        let h100 = builtin_gpus().iter().find(|g| g.name == "h100-sxm").unwrap();
        let eff = Efficiency::default();
        let (vector, bw) = (66.9e12 * 0.6, 3.35e12 * 0.8);
        // A memory-bound kernel of 1 ms; a fused op with 0.5 ms of vector work adds nothing while
        // the compute roofs (0 + 0.5 ms) stay under the memory roof.
        let mut t = KernelTimer::new();
        let k = t.next(&op(Cost { weight_bytes: bw * 1e-3, ..Cost::ZERO }, MathFormat::Bf16, false), h100, eff);
        assert!((k.time_s - 1e-3).abs() < 1e-15);
        let f = t.next(&op(Cost { flops: vector * 0.5e-3, ..Cost::ZERO }, MathFormat::Vector, true), h100, eff);
        assert_eq!(f.time_s, 0.0);
        // Another 1 ms of fused vector work: compute roofs 1.5 ms against 1 ms of memory.
        let g = t.next(&op(Cost { flops: vector * 1.0e-3, ..Cost::ZERO }, MathFormat::Vector, true), h100, eff);
        assert!((g.time_s - 0.5e-3).abs() < 1e-15, "{}", g.time_s);
        // An unfused operator starts a new kernel.
        let h = t.next(&op(Cost { weight_bytes: bw * 1e-3, ..Cost::ZERO }, MathFormat::Bf16, false), h100, eff);
        assert!((h.time_s - 1e-3).abs() < 1e-15);
    }

    #[test]
    fn a_kernel_timed_below_or_above_its_roofs_keeps_the_difference_and_fused_ops_never_go_negative() {
        // A measured kernel (say a table's 0.8 ms) whose fitted roofs say 1 ms of memory: a fused
        // operator adding 0.25 ms of memory is charged 0.25 ms (not the 0.45 ms a jump back to the
        // roofs would charge), and the kernel ends at 1.05 ms. One adding only a little compute
        // under the memory roof is charged exactly 0, never a rounding error below it.
        let mut k = OpenKernel::default();
        let fused = Join::Fused { on_chip_bytes: 0.0 };
        let measured = Timing { compute_s: 0.1e-3, memory_s: 1e-3, time_s: 0.8e-3, ..Timing::default() };
        assert_eq!(k.next(measured, Join::Own).time_s, 0.8e-3);
        let more = Timing { memory_s: 0.25e-3, time_s: 0.25e-3, ..Timing::default() };
        assert!((k.next(more, fused).time_s - 0.25e-3).abs() < 1e-18);
        assert!((k.0.time_s - 1.05e-3).abs() < 1e-18);
        for c in [1e-12, 1.3592920353982303e-10, 3e-7] {
            let tiny = Timing { compute_s: c, time_s: c, ..Timing::default() };
            let t = k.next(tiny, fused);
            assert_eq!((t.time_s, t.bound()), (0.0, Bound::Fused), "compute {c}");
        }
    }

    #[test]
    fn links_and_waits_have_their_own_bound() {
        let l = Timing::link(0.25);
        assert_eq!((l.bound(), l.time_s, l.memory_s), (Bound::Link, 0.25, 0.0));
        assert_eq!(Timing::wait(0.5).bound(), Bound::Wait);
        // A sum of a memory-bound operator and a shorter link stays memory-bound.
        let m = Timing { memory_s: 0.5, time_s: 0.5, ..Timing::default() };
        assert_eq!((m + l).bound(), Bound::Memory);
        assert_eq!((m + l).time_s, 0.75);
    }

    #[test]
    fn efficiencies_must_be_fractions() {
        assert!(Efficiency::new(0.0, 0.8).is_err());
        assert!(Efficiency::new(0.6, 1.5).is_err());
        assert_eq!(
            Efficiency::new(f64::NAN, 0.8).unwrap_err().to_string(),
            "invalid `compute_efficiency`: NaN (a number in [0.01, 1])"
        );
    }
}
