//! The `ledger` report: inputs echoed, one row per operator, totals and the step.
//!
//! JSON is a stable interface: `inputs`, `rows[]` (each with at least `op`, `flops`, `bytes`,
//! `weight_bytes`, `kv_bytes`, `activation_bytes`, `intensity`, `time_s`, `bound`), `total` (the
//! same fields), `step_time_s`, `tokens_per_s`, floors, notes, and whether the step fits in GPU
//! memory ([`StepFit`]: `fits`, `memory_bytes`, `gpu_memory_bytes`, `plan_command`; the default
//! reserve). Plain SI numbers throughout.

use crate::deployment::{Layout, Totals};
use crate::fit::StepFit;
use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::kernels::KernelTable;
use llm_ledger_core::model::{Attention, Reach, WeightPrecisions};
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::workload::{Causal, ContextBucket, Counting, Logits, MlaForm};
use llm_ledger_core::{Bound, Cost, Ledger, MathFormat, Phase, Precision, Row, Scenario, SlowCause, Timing};
use serde::Serialize;

/// The scenario's inputs, echoed in every report.
#[derive(Debug, Clone, Serialize)]
pub struct Inputs {
    /// Model name.
    pub model: String,
    /// GPU name.
    pub gpu: String,
    /// Phase.
    pub phase: Phase,
    /// Sequences in the batch.
    pub batch: u64,
    /// Tokens per sequence when the batch is uniform (cached in decode, prompt in prefill).
    pub ctx: Option<u64>,
    /// The batch as a histogram of (tokens, count).
    pub contexts: Vec<ContextBucket>,
    /// Σ tokens over sequences.
    pub total_context_tokens: f64,
    /// Weight storage, one name when uniform.
    pub weights: String,
    /// Weight storage per module class.
    pub weight_precisions: WeightPrecisions,
    /// KV-cache storage.
    pub kv: Precision,
    /// Activation storage.
    pub activations: Precision,
    /// Format GEMM inputs are quantised to (W8A8); equals `activations` unless set.
    pub gemm_activations: Precision,
    /// FlashAttention on.
    pub flash_attention: bool,
    /// Causal counting in prefill.
    pub causal: Causal,
    /// Logit positions.
    pub logits: Logits,
    /// Counting conventions.
    pub counting: Counting,
    /// MLA execution form.
    pub mla: MlaForm,
    /// Achieved fraction of peak compute.
    pub compute_efficiency: f64,
    /// Achieved fraction of peak bandwidth.
    pub bandwidth_efficiency: f64,
    /// Time model of the `time_s` fields: `measured` (expected time) or `roofline`.
    pub time_model: String,
    /// Engine the measured time model assumes (`null` under the roofline).
    pub engine: Option<String>,
    /// The measured kernel tables whose GEMM times the measured clock reads (GPU, engine and its
    /// version, source), or `null` where it reads none (roofline, a user's GPU file, an engine
    /// without tables).
    pub kernel_tables: Option<String>,
    /// MoE routing.
    pub routing: String,
    /// The parallel layout (absent on one GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Layout>,
}

/// The kernel tables the scenario's measured clock reads, named for a reader:
/// `h100_sxm/trtllm 1.3.0rc20 (AIConfigurator)` (GPU, engine and the engine version measured;
/// the package is `core::kernels::SOURCE`), with the version named where it was not measured
/// (`h100_sxm/vllm 0.19.0 (AIConfigurator; the nearest measured at or below vllm@0.20.0)`) and
/// the tables of the model's operators read from another version (`…; mla from 0.14.0`;
/// [`llm_ledger_core::clock::model_reads`]).
fn kernel_tables(sc: &Scenario) -> Option<String> {
    let clock = sc.effective_clock();
    if clock.is_roofline() {
        return None;
    }
    let t = llm_ledger_core::clock::kernel_tables(clock, &sc.gpu).ok().flatten()?;
    let mut notes = vec!["AIConfigurator".to_string()];
    if let Some(asked) = clock.version.filter(|v| v.to_string() != t.version) {
        notes.push(format!("the nearest measured at or below {}@{asked}", t.engine));
    }
    let elsewhere: Vec<String> = KernelTable::ALL
        .into_iter()
        .filter(|&table| table != KernelTable::Nccl && llm_ledger_core::clock::model_reads(&sc.model, table))
        .filter_map(|table| {
            t.version_of(table).filter(|v| *v != t.version).map(|v| format!("{} from {v}", table.name()))
        })
        .collect();
    if !elsewhere.is_empty() {
        notes.push(elsewhere.join(", "));
    }
    Some(format!("{}/{} {} ({})", t.gpu.dir(), t.engine, t.version, notes.join("; ")))
}

impl Inputs {
    /// Echo a scenario.
    pub fn of(sc: &Scenario) -> Inputs {
        let w = &sc.workload;
        Inputs {
            model: sc.model.name.clone(),
            gpu: sc.gpu.name.clone(),
            phase: w.phase,
            batch: w.contexts.batch(),
            ctx: match &w.contexts {
                llm_ledger_core::Contexts::Uniform { tokens, .. } => Some(*tokens),
                llm_ledger_core::Contexts::Mix(_) => None,
            },
            contexts: w.contexts.buckets(),
            total_context_tokens: w.contexts.total_tokens(),
            weights: sc.weights.describe(),
            weight_precisions: sc.weights,
            kv: w.kv,
            activations: w.activations,
            gemm_activations: w.gemm_activations,
            flash_attention: w.flash_attention,
            causal: w.causal,
            logits: w.logits,
            counting: w.counting,
            mla: w.mla,
            compute_efficiency: sc.efficiency.compute,
            bandwidth_efficiency: sc.efficiency.bandwidth,
            time_model: sc.effective_clock().model.name().to_string(),
            engine: (!sc.effective_clock().is_roofline()).then(|| sc.effective_clock().engine.name().to_string()),
            kernel_tables: kernel_tables(sc),
            routing: sc.routing.describe(),
            parallel: Layout::of(sc),
        }
    }

    /// One-line description for table titles.
    pub fn headline(&self) -> String {
        let shape = match self.ctx {
            Some(c) => format!("batch {} × {} {}", self.batch, human::count(c), ctx_word(self.phase)),
            None => format!(
                "{} sequences, {} {} in all",
                self.batch,
                human::count(self.total_context_tokens as u64),
                ctx_word(self.phase)
            ),
        };
        let gemm_inputs = if self.gemm_activations != self.activations {
            format!(" (GEMM inputs {})", self.gemm_activations)
        } else {
            String::new()
        };
        format!(
            "{} on {} · {} · {} · weights {} · KV {} · activations {}{gemm_inputs}{}",
            self.model,
            self.gpu,
            self.phase,
            shape,
            self.weights_shown(),
            self.kv,
            self.activations,
            self.layout_suffix()
        )
    }

    /// The weight storage for titles: [`Self::weights`] with measured widths rounded
    /// ([`human::weights`]: `4.84bit`, where JSON keeps `4.84375bit`).
    pub fn weights_shown(&self) -> String {
        human::weights(&self.weight_precisions)
    }

    /// ` · TP 8 × PP 2 (16 GPUs)` for a parallel deployment, empty on one GPU (for titles).
    pub fn layout_suffix(&self) -> String {
        self.parallel.as_ref().map(|p| format!(" · {}", layout_words(p))).unwrap_or_default()
    }
}

fn layout_words(p: &Layout) -> String {
    let mut s = llm_ledger_core::parallel::layout_words(p.tp, p.pp, p.ep);
    if p.dp > 1 {
        s.push_str(&format!(" × {} replicas", p.dp));
    }
    s
}

fn ctx_word(p: Phase) -> &'static str {
    match p {
        Phase::Decode => "cached tokens",
        Phase::Prefill => "prompt tokens",
    }
}

/// What the `achieved` column means, for footers.
pub const ACHIEVED_RULE: &str = "achieved = the fraction of the GPU's peak an operator reaches: HBM bytes ÷ time ÷ peak bandwidth when memory-bound (MBU), FLOPs ÷ time ÷ the peak of its math when compute-bound (MFU), link bytes ÷ time ÷ the link's peak for a collective";

/// One row (also the `total`).
#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    /// Operator name (`total` for the total).
    pub op: String,
    /// Instances summed (layers).
    pub layers: u64,
    /// FLOPs.
    pub flops: f64,
    /// All HBM bytes.
    pub bytes: f64,
    /// Weight bytes.
    pub weight_bytes: f64,
    /// KV-cache bytes read and written.
    pub kv_bytes: f64,
    /// KV-cache bytes read.
    pub kv_read_bytes: f64,
    /// KV-cache bytes written.
    pub kv_write_bytes: f64,
    /// Per-sequence state bytes read and written (a recurrent mixer's state and its
    /// convolution's; 0 elsewhere).
    pub state_bytes: f64,
    /// Per-sequence state bytes read.
    pub state_read_bytes: f64,
    /// Per-sequence state bytes written back.
    pub state_write_bytes: f64,
    /// Activation bytes.
    pub activation_bytes: f64,
    /// FLOP per byte (`null` when no bytes move).
    pub intensity: Option<f64>,
    /// Math format the row runs in (`null` for the total).
    pub math: Option<MathFormat>,
    /// Peak of that format, FLOP/s.
    pub peak_flops_per_s: Option<f64>,
    /// Ridge point of that format, FLOP per byte.
    pub ridge_flops_per_byte: Option<f64>,
    /// FLOPs at achieved peak, seconds.
    pub compute_time_s: f64,
    /// Bytes at achieved bandwidth, seconds.
    pub memory_time_s: f64,
    /// Time, seconds: the expected time under the measured time model, the roofline time under
    /// the roofline.
    pub time_s: f64,
    /// Roofline time of the same row, seconds (with the efficiency inputs).
    pub roofline_time_s: f64,
    /// The HBM bytes the clock charges the row: `bytes` less `on_chip_bytes`.
    pub hbm_bytes: f64,
    /// Counted bytes that the engine's fusions keep on chip (an epilogue's input, the shared
    /// input read of a merged GEMM's other parts): not HBM traffic under this clock; 0 under the
    /// roofline.
    pub on_chip_bytes: f64,
    /// Memory bandwidth utilisation: `hbm_bytes ÷ time_s ÷` the GPU's peak bandwidth (`null`
    /// when `time_s` is 0 or the row runs inside another kernel).
    pub mbu: Option<f64>,
    /// Model FLOPs utilisation: FLOPs ÷ `time_s` ÷ the peak of the row's math format (the total:
    /// the compute floor ÷ the step; `null` when `time_s` is 0 or the row is fused).
    pub mfu: Option<f64>,
    /// The fraction of the hardware's peak the row reaches, by its bound: `mbu` when
    /// memory-bound, `mfu` when compute-bound, link bytes ÷ time ÷ the link's peak for a
    /// collective; `null` for a fused row (its work is its kernel's) and a pipeline wait. At most
    /// 1 (every operator's time is at least its bytes and FLOPs at the peaks).
    pub achieved: Option<f64>,
    /// Why the row takes more than 3× its roofline plus its kernels' fixed costs (`null` when
    /// it does not): `measured_kernel`, `measured_slow_shape`, `dequantisation`, `tile_waste`,
    /// `attention_kernel`, `profile`, `kv_per_query_head`.
    pub slow_cause: Option<SlowCause>,
    /// Share of the step time.
    pub time_share: f64,
    /// `memory`, `compute`, `link` (communication), `wait` (pipeline), or `fused` for an operator
    /// that runs inside the previous operator's kernel, whose `time_s` is the time it adds there.
    pub bound: String,
    /// Bytes sent over a GPU-to-GPU link (communication rows; not HBM bytes).
    pub link_bytes: f64,
    /// Time on the link, seconds.
    pub link_time_s: f64,
    /// Where the row's time came from: `table:<gpu>/<engine>/<version>/<table>` (a measured
    /// kernel table), `fitted:<kernel>` (the measured clock's fitted model: `gemm`,
    /// `moe-grouped-gemm`, `attention`, `recurrence`, `indexer`, `vector`, `host`), `fused`
    /// (inside the kernel before it), `link-model`, `roofline`, or `mixed` for a row (or the total)
    /// whose parts come from different ones; `null` for a pipeline wait.
    pub time_source: Option<String>,
}

impl RowView {
    /// A row of `cost` timed `timing`; `compute_floor_s` its FLOPs at the peak of their math.
    #[allow(clippy::too_many_arguments)]
    fn new(
        op: &str,
        layers: u64,
        cost: &Cost,
        timing: &Timing,
        math: Option<MathFormat>,
        compute_floor_s: f64,
        sc: &Scenario,
        step: f64,
    ) -> Self {
        let peak = math.and_then(|m| sc.gpu.peak(m));
        let timed = timing.time_s > 0.0 && !timing.fused;
        let mbu = timed.then(|| timing.hbm_bytes / timing.time_s / sc.gpu.memory_bandwidth_bytes_per_s);
        let mfu = timed.then(|| compute_floor_s / timing.time_s);
        let bound = timing.bound();
        RowView {
            op: op.to_string(),
            layers,
            flops: cost.flops,
            bytes: cost.bytes(),
            weight_bytes: cost.weight_bytes,
            kv_bytes: cost.kv_bytes(),
            kv_read_bytes: cost.kv_read_bytes,
            kv_write_bytes: cost.kv_write_bytes,
            state_bytes: cost.state_bytes(),
            state_read_bytes: cost.state_read_bytes,
            state_write_bytes: cost.state_write_bytes,
            activation_bytes: cost.activation_bytes,
            intensity: cost.intensity(),
            math,
            peak_flops_per_s: peak,
            ridge_flops_per_byte: peak.map(|p| p / sc.gpu.memory_bandwidth_bytes_per_s),
            compute_time_s: timing.compute_s,
            memory_time_s: timing.memory_s,
            time_s: timing.time_s,
            roofline_time_s: timing.roofline_s,
            hbm_bytes: timing.hbm_bytes,
            time_source: timing.source.map(|t| t.words()),
            on_chip_bytes: (cost.bytes() - timing.hbm_bytes).max(0.0),
            mbu,
            mfu,
            achieved: match bound {
                Bound::Memory => mbu,
                Bound::Compute => mfu,
                Bound::Link | Bound::Wait | Bound::Fused => None,
            },
            slow_cause: timing.slow,
            time_share: if step > 0.0 { timing.time_s / step } else { 0.0 },
            bound: bound.name().to_string(),
            link_bytes: cost.link_bytes,
            link_time_s: timing.link_s,
        }
    }

    /// View of a ledger row (communication rows have no math format), of the GPU shown (of
    /// pipeline stage `stage`).
    pub fn of_row(r: &Row, sc: &Scenario, stage: usize, step: f64) -> Self {
        let math = (!r.op.is_comm()).then_some(r.math);
        let floor = math.map_or(0.0, |m| r.cost.flops / sc.gpu.peak(m).unwrap_or(sc.gpu.peak_flops_per_s.vector));
        let mut v = Self::new(r.op.name(), r.instances, &r.cost, &r.timing, math, floor, sc, step);
        if r.op.is_comm() {
            v.intensity = None;
            v.mbu = None;
            v.mfu = None;
            if r.op == llm_ledger_core::ops::OpKind::PipelineWait {
                v.bound = "wait".into();
            } else {
                v.bound = "link".into();
                // The link's utilisation: bytes ÷ time ÷ its per-direction peak.
                v.achieved = sc
                    .parallel
                    .link_of(r.op, stage)
                    .filter(|_| r.timing.time_s > 0.0)
                    .map(|g| r.cost.link_bytes / r.timing.time_s / g.link.bandwidth_bytes_per_s);
            }
        }
        v
    }
}

/// One kind of layer of the model: its mixer and feed-forward block in words, how many layers
/// are of it and the first one's zoom path.
#[derive(Debug, Clone, Serialize)]
pub struct LayerKind {
    /// `Gated DeltaNet + MLP`, `gated attention + MoE (512 experts, top-10)` ….
    pub kind: String,
    /// Layers of this kind.
    pub layers: u64,
    /// The first of them (`layer.3`).
    pub first: String,
}

impl LayerKind {
    /// The kinds of `sc`'s model's layers.
    pub fn of(sc: &Scenario) -> Vec<LayerKind> {
        sc.model
            .layer_kinds()
            .into_iter()
            .map(|(kind, layers, first)| LayerKind { kind, layers, first: format!("layer.{first}") })
            .collect()
    }
}

/// The whole ledger report.
#[derive(Debug, Clone, Serialize)]
pub struct LedgerReport {
    /// Inputs.
    pub inputs: Inputs,
    /// GPU peak bandwidth, bytes/s.
    pub memory_bandwidth_bytes_per_s: f64,
    /// Rows in execution order.
    pub rows: Vec<RowView>,
    /// Sum of rows.
    pub total: RowView,
    /// Step time (sum of row times), seconds.
    pub step_time_s: f64,
    /// Tokens per second (decode: generated; prefill: processed).
    pub tokens_per_s: f64,
    /// All bytes at 100 % bandwidth, seconds.
    pub memory_floor_s: f64,
    /// Each row's FLOPs at 100 % of its peak, seconds.
    pub compute_floor_s: f64,
    /// What the counting includes, in words.
    pub counting_note: String,
    /// The kinds of layer the model is made of, in the order each first appears.
    pub layer_kinds: Vec<LayerKind>,
    /// What its bounded attention layers (windows, chunks, top-k, compressed) read per query
    /// ([`bounded_reads`]); empty when every layer attends to all positions.
    pub bounded_reads: Vec<String>,
    /// Model notes (keys not costed) and other caveats.
    pub notes: Vec<String>,
    /// Whether the step fits in GPU memory (the fullest GPU of a layout), with the default reserve.
    #[serde(flatten)]
    pub fit: StepFit,
    /// A parallel deployment's totals (absent on one GPU); the rows are one GPU's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<Totals>,
    /// How the GPU shown was costed (parallel deployments).
    #[serde(skip)]
    deployment_notes: Vec<String>,
    /// Link used by each communication row, by row index (for the table).
    #[serde(skip)]
    row_links: Vec<Option<String>>,
}

impl LedgerReport {
    /// Build from a scenario and its ledger.
    pub fn new(sc: &Scenario, l: &Ledger) -> Self {
        let s = &l.summary;
        let step = s.step_time_s();
        let layers = sc.model.num_layers();
        let totals = Totals::of(sc, s);
        LedgerReport {
            inputs: Inputs::of(sc),
            memory_bandwidth_bytes_per_s: sc.gpu.memory_bandwidth_bytes_per_s,
            rows: l.rows.iter().map(|r| RowView::of_row(r, sc, s.pipeline.map_or(0, |p| p.stage), step)).collect(),
            total: RowView::new("total", layers, &s.cost, &s.timing, None, s.compute_floor_s, sc, step),
            step_time_s: step,
            tokens_per_s: s.tokens_per_s(),
            memory_floor_s: s.memory_floor_s,
            compute_floor_s: s.compute_floor_s,
            counting_note: counting_note(sc),
            layer_kinds: LayerKind::of(sc),
            bounded_reads: bounded_reads(sc),
            notes: sc.model.notes.clone(),
            fit: StepFit::of(sc, DEFAULT_RESERVE_BYTES),
            deployment: totals.clone(),
            deployment_notes: totals.as_ref().map(|t| crate::deployment::footer(sc, t)).unwrap_or_default(),
            row_links: l
                .rows
                .iter()
                .map(|r| {
                    let stage = s.pipeline.map_or(0, |p| p.stage);
                    match (r.op.is_comm(), sc.parallel.link_of(r.op, stage)) {
                        (true, Some(g)) => Some(scope_word(g.scope).to_string()),
                        (true, None) => Some("—".into()),
                        _ => None,
                    }
                })
                .collect(),
        }
    }
}

/// One footer line per cause of the rows slower than 3× their roofline: `slower than 3× the
/// roofline + launch: q_a_proj, kv_a_proj (the engine's measured kernel runs this slowly …)`.
fn slow_lines(rows: &[RowView]) -> Vec<String> {
    let mut causes: Vec<(SlowCause, Vec<&str>)> = Vec::new();
    for r in rows {
        if let Some(c) = r.slow_cause {
            match causes.iter_mut().find(|(k, _)| *k == c) {
                Some((_, ops)) => ops.push(&r.op),
                None => causes.push((c, vec![&r.op])),
            }
        }
    }
    causes
        .into_iter()
        .map(|(c, ops)| {
            format!(
                "slower than {}× the roofline + kernel launch: {} ({})",
                llm_ledger_core::roofline::SLOW_LIMIT,
                ops.join(", "),
                c.words()
            )
        })
        .collect()
}

fn scope_word(s: llm_ledger_core::parallel::LinkScope) -> &'static str {
    use llm_ledger_core::parallel::LinkScope::*;
    match s {
        ScaleUp => "nvlink",
        Pcie => "pcie",
        Network => "network",
    }
}

/// What the model's bounded attention layers read per query, against the most positions a query
/// of this step can see (its cached context and itself): a window's last `w`, a chunk's own
/// positions, a top-k's `k` selected ones (the indexer that selects them scoring every cached
/// position's key), a compressed layer's window and pooled entries. One line per kind of layer,
/// in the order each first appears; none for a model whose every layer attends to all positions.
pub fn bounded_reads(sc: &Scenario) -> Vec<String> {
    let w = &sc.workload;
    let seen = w.contexts.max_tokens() + u64::from(w.phase == Phase::Decode);
    let n = |v: u64| human::count(v);
    let mut lines: Vec<(String, u64)> = Vec::new();
    for (l, count) in sc.model.layer_groups() {
        let a = &l.attention;
        let indexer = |scored: &str| {
            a.indexer()
                .map(|i| format!("; an indexer scores every {scored}, reading its {} key", human::bytes(i.key_bytes())))
        };
        let what = match (a, a.reach()) {
            (Attention::Compressed(c), _) if c.ratio > 0 => format!(
                "read their last {} positions and {} of their 1-in-{} pooled entries{}",
                n(c.window),
                c.indexer.map_or("all".to_string(), |i| format!("the top-{}", n(i.top_k))),
                c.ratio,
                indexer("pooled entry").unwrap_or_default()
            ),
            (_, Reach::All) => continue,
            (_, Reach::Window(win)) => format!("read at most their last {} positions", n(win.min(seen))),
            (_, Reach::Chunk(c)) => format!("read at most their own chunk's {} positions", n(c.min(seen))),
            (_, Reach::TopK(k)) => format!(
                "read at most {} positions{}",
                n(k.min(seen)),
                indexer("cached position").unwrap_or_else(|| ", chosen by an earlier layer's indexer".into())
            ),
        };
        let line = format!("{} {what}", a.kind_words());
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, c)) => *c += count,
            None => lines.push((line, count)),
        }
    }
    lines
        .into_iter()
        .map(|(line, count)| {
            format!("bounded attention (a query sees up to {} positions): {count} layers of {line}", n(seen))
        })
        .collect()
}

/// The legend of the `source` column (and of `time_source` in JSON and CSV).
pub const SOURCE_LEGEND: &str = "source = where the row's time comes from: table:<t> the engine's measured kernel in that table of AIConfigurator's database (time_source names the GPU, engine and version); fitted:<k> the measured clock's fitted model of that kind of kernel (docs/fidelity.md); fused the time it adds inside the kernel before it; link-model a collective at α + bytes ÷ β; roofline the FLOPs and bytes at the efficiency inputs; mixed parts from several";

/// The short form of a time source for the table: `table:gemm` for
/// `table:h100_sxm/trtllm/1.3.0rc20/gemm`, the rest as they are.
fn short_source(words: &str) -> String {
    match words.strip_prefix("table:") {
        Some(rest) => format!("table:{}", rest.rsplit('/').next().unwrap_or(rest)),
        None => words.to_string(),
    }
}

/// What the active counting mode includes.
pub fn counting_note(sc: &Scenario) -> String {
    let w = &sc.workload;
    match w.counting {
        Counting::Seed => "counting seed (the reference calculator's): only the weight and KV reads of the projections, attention and lm_head; no minor operators, activations or KV writes".into(),
        Counting::Full => {
            let attn = if w.flash_attention { "FlashAttention (scores stay on chip)" } else { "unfused attention (scores and probabilities go through HBM)" };
            let causal = match (w.phase, w.causal) {
                (Phase::Prefill, Causal::Half) => "; causal half p(p+1)/2 of the score square",
                (Phase::Prefill, Causal::Full) => "; the full p² score square",
                _ => "; the new token attends to its cached context plus itself",
            };
            format!("counting full: every operator, weight + KV + activation bytes; {attn}{causal}")
        }
    }
}

impl Report for LedgerReport {
    type CsvRow = RowView;

    fn csv_rows(&self) -> Vec<RowView> {
        let mut v = self.rows.clone();
        v.push(self.total.clone());
        v
    }

    fn human(&self) -> HumanTable {
        let parallel = self.deployment.is_some();
        let measured = self.inputs.engine.is_some();
        // A hybrid's recurrent layers move per-sequence state: a column of its own beside KV.
        let hybrid = self.total.state_bytes > 0.0;
        // Where each row's time came from: a wide-only column (`--wide`), with its legend.
        let sources = crate::render::wide_columns();
        let cells = |r: &RowView, link: Option<&String>| {
            let mut c = vec![
                r.op.clone(),
                r.layers.to_string(),
                human::flops(r.flops),
                human::bytes(r.weight_bytes),
                human::bytes(r.kv_bytes),
                human::bytes(r.activation_bytes),
                human::bytes(r.bytes),
                match (link, r.intensity) {
                    (Some(_), _) => "—".into(),
                    (None, i) => human::intensity(i),
                },
                link.cloned().or_else(|| r.math.map(|m| m.name().to_string())).unwrap_or_default(),
                human::seconds(r.time_s),
                human::percent(r.time_share),
                r.bound.clone(),
            ];
            if measured {
                c.insert(9, human::seconds(r.roofline_time_s));
                c.insert(11, r.achieved.map(human::percent).unwrap_or_else(|| "—".into()));
            }
            if parallel {
                c.insert(6, human::bytes(r.link_bytes));
            }
            if hybrid {
                c.insert(5, human::bytes(r.state_bytes));
            }
            if sources {
                c.push(r.time_source.as_deref().map_or("—".to_string(), short_source));
            }
            c
        };
        let mut rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| cells(r, self.row_links.get(i).and_then(Option::as_ref)))
            .collect();
        rows.push(cells(&self.total, None));
        let bf16_ridge =
            self.rows.iter().find(|r| r.math == Some(MathFormat::Bf16)).and_then(|r| r.ridge_flops_per_byte);
        let mut footer = vec![format!(
            "step {} · {} tok/s · floors: memory {}, compute {}{}",
            human::seconds(self.step_time_s),
            human::sig3(self.tokens_per_s),
            human::seconds(self.memory_floor_s),
            human::seconds(self.compute_floor_s),
            bf16_ridge.map(|r| format!(" · bf16 ridge {r:.0} FLOP/B")).unwrap_or_default(),
        )];
        let roofline = format!(
            "max(FLOPs ÷ {:.0} % of peak, bytes ÷ {:.0} % of bandwidth)",
            self.inputs.compute_efficiency * 100.0,
            self.inputs.bandwidth_efficiency * 100.0,
        );
        match &self.inputs.engine {
            Some(engine) => {
                let gemms = match &self.inputs.kernel_tables {
                    Some(t) => format!("GEMMs: measured kernels {t}; "),
                    None => String::new(),
                };
                footer.push(format!(
                    "expected per operator: the measured clock for {engine} ({gemms}achievable bandwidth and peak, kernel costs, fusion; docs/fidelity.md); step = sum of rows"
                ));
                if let Ok(e) = engine.parse::<llm_ledger_core::engine::Engine>() {
                    footer.push(format!("fusion ({engine}): {}", llm_ledger_core::clock::fusion_words(e)));
                }
                if self.rows.iter().any(|r| r.op == llm_ledger_core::ops::OpKind::HostStep.name()) {
                    footer.push(format!("host ({engine}): the engine schedules, prepares the inputs and samples on the CPU between GPU steps, and the GPU waits (bound `wait`; docs/fidelity.md)"));
                }
                footer.push(format!("roofline per operator: {roofline}"));
                footer.push(ACHIEVED_RULE.into());
            }
            None => footer.push(format!("roofline per operator: {roofline}; step = sum of rows")),
        }
        footer.extend(slow_lines(&self.rows));
        footer.push(self.counting_note.clone());
        if self.layer_kinds.len() > 1 {
            let kinds: Vec<String> = self.layer_kinds.iter().map(|k| format!("{} × {}", k.layers, k.kind)).collect();
            footer.push(format!("layers: {} (each row's n counts the layers it runs in)", kinds.join(", ")));
        }
        footer.extend(self.bounded_reads.iter().cloned());
        footer.extend(self.deployment_notes.iter().cloned());
        footer.extend(self.fit.footer());
        footer.extend(self.notes.iter().map(|n| format!("note: {n}")));
        let mut header: Vec<String> =
            ["op", "n", "FLOPs", "weights", "KV", "activations", "bytes", "FLOP/B", "math", "time", "share", "bound"]
                .map(String::from)
                .to_vec();
        let mut right_aligned: Vec<usize> = (1..=10).collect();
        // On a narrow terminal the byte breakdown goes first; op, FLOPs, bytes, time and bound stay.
        let mut priority = vec![0, 2, 1, 3, 3, 3, 0, 2, 3, 0, 1, 0];
        if measured {
            header[9] = "expected".into();
            header.insert(9, "roofline".into());
            header.insert(11, "achieved".into());
            right_aligned.extend([11, 12]);
            priority.insert(9, 1);
            priority.insert(11, 1);
        }
        if parallel {
            header.insert(6, "link".into());
            header[7] = "HBM bytes".into();
            right_aligned.push(right_aligned.len() + 1);
            priority.insert(6, 1);
        }
        if hybrid {
            header.insert(5, "state".into());
            right_aligned = right_aligned.into_iter().map(|i| if i >= 5 { i + 1 } else { i }).collect();
            right_aligned.push(5);
            priority.insert(5, 3);
            footer.push("state = the recurrent layers' per-sequence state read and written back every step (and their convolutions' last inputs), whatever the context".into());
        }
        if sources {
            header.push("source".into());
            priority.push(3);
            footer.push(SOURCE_LEGEND.into());
        }
        HumanTable { title: vec![self.inputs.headline()], header, rows, right_aligned, footer, priority }
    }
}
