//! The `zoom` report: one node of the powers-of-ten tree — its totals, its children, the breadcrumb,
//! and whether the children add up to it (and by how much and why not).
//!
//! JSON: `inputs`, `path`, `level`, `breadcrumb[]`, `node` (totals), `children[]`, `addup`
//! (parent and children FLOPs and bytes, differences, ratios — the bytes ratio is the reuse
//! factor at the tile level — and `exact`), `explanation[]` (the same sentences as the table);
//! at model level `rest[]` (the rest of the step beside the model), `step` (model + rest, the
//! ledger's total and whether they are equal) and `gap` (FLOPs per token against 2 ×
//! parameters, by part); at layer level `focus` (the block a `layer.N.attn|mlp` path named);
//! `tiles` at operator and tile levels (the whole tiling); and whether the step fits
//! ([`StepFit`]: `fits`, `memory_bytes`, `gpu_memory_bytes`, `plan_command`). Plain SI numbers
//! throughout. CSV: the children, then at model level the rest of the step.

use crate::fit::StepFit;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use crate::tile::gemm_lines;
use llm_ledger_core::kinds::Block;
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::tiling::AttentionTiling;
use llm_ledger_core::zoom::{
    block_name, AddUp, ChildView, FlopsGap, GapItem, GapKind, Level, NoTiles, NodeDetail, NodeView, OpNode, StepCheck,
    TileLevel, ZoomTree,
};
use llm_ledger_core::{Cost, Phase, Scenario};
use serde::Serialize;

/// The node, or one of its children.
#[derive(Debug, Clone, Serialize)]
pub struct ZoomRow {
    /// Name (the last path segment; tile classes by what they hold).
    pub name: String,
    /// Path to zoom into it (empty for tile classes).
    pub path: Option<String>,
    /// The block an operator sits in: `attn` or `mlp` in a layer, `embedding` or `head` in the
    /// rest of the step; empty for layers and tiles.
    pub block: Option<String>,
    /// What a layer is made of (`Gated DeltaNet + MLP`): the model level's children and the
    /// layer level's node; empty elsewhere.
    pub kind: Option<String>,
    /// How many (tiles or blocks at the tile level; 1 otherwise).
    pub count: f64,
    /// Useful FLOPs.
    pub flops: f64,
    /// Executed FLOPs (padded tiles; = `flops` at exact levels).
    pub executed_flops: f64,
    /// HBM bytes.
    pub bytes: f64,
    /// Weight bytes (exact levels).
    pub weight_bytes: Option<f64>,
    /// KV-cache bytes (exact levels).
    pub kv_bytes: Option<f64>,
    /// Per-sequence state bytes read and written (a recurrent layer's; exact levels).
    pub state_bytes: Option<f64>,
    /// Activation bytes (exact levels).
    pub activation_bytes: Option<f64>,
    /// Bytes sent over a GPU-to-GPU link (exact levels; not HBM bytes, not in `bytes`).
    pub link_bytes: Option<f64>,
    /// FLOP per byte.
    pub intensity: Option<f64>,
    /// Time by the scenario's clock (`inputs.time_model`; the tile model's at the tile level),
    /// seconds.
    pub time_s: f64,
    /// The roofline's time of the same work, seconds (= `time_s` under the roofline clock).
    pub roofline_time_s: f64,
    /// Share of the node's time (the rest of the step: of the step's).
    pub time_share: f64,
    /// `memory` or `compute` (exact levels).
    pub bound: Option<String>,
}

/// Parent against the children, with ratios.
#[derive(Debug, Clone, Serialize)]
pub struct AddUpView {
    /// The core's comparison.
    #[serde(flatten)]
    pub addup: AddUp,
    /// Children ÷ parent FLOPs.
    pub flops_ratio: f64,
    /// Children ÷ parent bytes (the reuse factor at the tile level).
    pub bytes_ratio: f64,
}

/// The zoom report.
#[derive(Debug, Clone, Serialize)]
pub struct ZoomReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The node's path.
    pub path: String,
    /// Its level.
    pub level: Level,
    /// Paths from the model down to it.
    pub breadcrumb: Vec<String>,
    /// Its totals.
    pub node: ZoomRow,
    /// Its children.
    pub children: Vec<ZoomRow>,
    /// Does it add up?
    pub addup: AddUpView,
    /// Why (or why not), in words.
    pub explanation: Vec<String>,
    /// Model level: the rest of the step beside the model (embedding, final norm, LM head, their
    /// collectives, a pipeline stage's send and wait).
    pub rest: Vec<ZoomRow>,
    /// Model level: model + rest = step, against the ledger's total.
    pub step: Option<StepCheck>,
    /// Layer level: the block the path named (`layer.0.mlp`), whose operators are marked.
    pub focus: Option<String>,
    /// Model level: FLOPs per token against 2 × parameters.
    pub gap: Option<FlopsGap>,
    /// Operator and tile levels: the whole tile model.
    pub tiles: Option<TileLevel>,
    /// Layer level: layers with the same shape (computed once).
    pub identical_layers: Option<u64>,
    /// Whether the step fits in GPU memory (the default reserve).
    #[serde(flatten)]
    pub fit: StepFit,
}

/// The clock the scenario's times come from, as a label names it: `expected` (the measured clock
/// of an engine) or `roofline`.
pub fn clock_word(sc: &Scenario) -> &'static str {
    measured_word(!sc.effective_clock().is_roofline())
}

fn measured_word(measured: bool) -> &'static str {
    if measured {
        "expected"
    } else {
        "roofline"
    }
}

fn intensity(flops: f64, bytes: f64) -> Option<f64> {
    (bytes > 0.0).then(|| flops / bytes)
}

fn child_row(c: &ChildView, parent_time: f64) -> ZoomRow {
    ZoomRow {
        name: c.name.clone(),
        path: c.path.clone(),
        block: c.block.map(|b| block_name(b).to_string()),
        kind: c.kind.clone(),
        count: c.count,
        flops: c.flops,
        executed_flops: c.executed_flops,
        bytes: c.bytes,
        weight_bytes: c.cost.map(|c| c.weight_bytes),
        kv_bytes: c.cost.map(|c| c.kv_bytes()),
        state_bytes: c.cost.map(|c| c.state_bytes()),
        activation_bytes: c.cost.map(|c| c.activation_bytes),
        link_bytes: c.cost.map(|c| c.link_bytes),
        intensity: intensity(c.executed_flops, c.bytes),
        time_s: c.time_s,
        roofline_time_s: c.roofline_s,
        time_share: if parent_time > 0.0 { c.time_s / parent_time } else { 0.0 },
        bound: None,
    }
}

/// The kinds of layer among the model level's children, each with how many and the first of
/// them (`layers: 48 × Gated DeltaNet + MLP (from layer.0), 16 × gated attention + MLP (from
/// layer.3)`); nothing when every layer is of one kind.
fn kinds_line(children: &[ChildView]) -> Option<String> {
    let kinds = layer_kinds(children.iter().map(|c| (c.kind.as_deref(), c.path.as_deref())));
    (kinds.len() > 1).then(|| {
        let each: Vec<String> = kinds.iter().map(|(k, n, first)| format!("{n} × {k} (from {first})")).collect();
        format!("layers: {}", each.join(", "))
    })
}

/// Each kind of layer among `children` in the order it first appears: its words, how many, the
/// first one's path.
fn layer_kinds<'c>(
    children: impl IntoIterator<Item = (Option<&'c str>, Option<&'c str>)>,
) -> Vec<(&'c str, usize, &'c str)> {
    let mut kinds: Vec<(&str, usize, &str)> = Vec::new();
    for (kind, path) in children {
        let (Some(k), Some(path)) = (kind, path) else { continue };
        match kinds.iter_mut().find(|(w, _, _)| *w == k) {
            Some((_, n, _)) => *n += 1,
            None => kinds.push((k, 1, path)),
        }
    }
    kinds
}

/// The column beside a child's name.
#[derive(Clone, Copy)]
enum NameColumn {
    /// An operator's block (`attn`, `mlp`), at the layer level.
    Block,
    /// A layer's kind, at the model level of a model whose layers differ.
    Kind,
}

impl NameColumn {
    fn header(self) -> &'static str {
        match self {
            NameColumn::Block => "block",
            NameColumn::Kind => "kind",
        }
    }
}

/// [`layer_kinds`] of report rows.
fn layer_kinds_of_rows(rows: &[ZoomRow]) -> Vec<(&str, usize, &str)> {
    layer_kinds(rows.iter().map(|c| (c.kind.as_deref(), c.path.as_deref())))
}

/// A count: exact with separators below a million, else with an SI prefix (`14.3 k` style).
fn count_f(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e6 {
        human::count(v as u64)
    } else {
        human::si(v, "").trim_end().to_string()
    }
}

fn signed(v: f64, unit: fn(f64) -> String) -> String {
    if v < 0.0 {
        format!("−{}", unit(-v))
    } else {
        format!("+{}", unit(v))
    }
}

fn ratio_pct(children: f64, parent: f64) -> String {
    if parent > 0.0 {
        format!("{:+.1} %", (children / parent - 1.0) * 100.0).replacen('-', "−", 1)
    } else {
        "n/a".into()
    }
}

fn exact_line(what: &str, a: &AddUp) -> String {
    if a.exact {
        format!("adds up exactly: {what} (Σ children − parent = 0 FLOP, 0 B)")
    } else {
        format!(
            "does not add up: {what} differs by {} and {}",
            signed(a.flops_difference, human::flops),
            signed(a.bytes_difference, human::bytes)
        )
    }
}

/// What a part of the FLOPs-per-token gap is, in words.
pub fn gap_part(item: &GapItem, g: &FlopsGap, sc: &Scenario) -> String {
    let m = &sc.model;
    match item.kind {
        GapKind::EmbeddingGather => format!(
            "embedding: a gather; its {} parameters are read, not multiplied",
            human::params(m.embedding_params())
        ),
        GapKind::FinalNorm => "final_norm: its FLOPs against 2 × its scale parameters".into(),
        GapKind::LmHead => format!(
            "lm_head: logits for {} of {} tokens{}",
            human::count(sc.workload.logit_tokens() as u64),
            human::count(g.tokens as u64),
            if m.tied_embeddings { " (tied: its weights are the embedding table)" } else { "" }
        ),
        GapKind::InactiveExperts if g.stack_active_params == g.stack_params => {
            "MoE experts not routed to: none, every parameter is active".into()
        }
        GapKind::InactiveExperts => format!(
            "MoE experts a token is not routed to ({} of the stack's {} parameters active)",
            human::params(g.stack_active_params),
            human::params(g.stack_params)
        ),
        GapKind::AttentionScores => "attention QKᵀ and P·V over the context: FLOPs without parameters".into(),
        GapKind::Elementwise => "norms, RoPE, activation, residual adds, softmax: vector-unit FLOPs".into(),
        GapKind::LayerWeights => {
            "layer GEMMs vs 2 × their parameters (norm scales and biases are parameters without 2 FLOPs each)".into()
        }
    }
}

fn gap_lines(g: &FlopsGap, sc: &Scenario) -> Vec<String> {
    let whole = if sc.parallel.is_single() { "" } else { ", all GPUs together" };
    let mut out = vec![format!(
        "FLOPs per token of the model (the layer stack{whole}): {} vs 2 × {} layer parameters = {}: {} ({}), made of:",
        human::flops(g.flops_per_token),
        human::params(g.stack_params),
        human::flops(g.two_params_flops),
        signed(g.gap_flops_per_token(), human::flops),
        ratio_pct(g.flops_per_token, g.two_params_flops)
    )];
    let line =
        |item: &GapItem| format!("  {:>12}  {}", signed(item.flops_per_token, human::flops), gap_part(item, g, sc));
    out.extend(g.items.iter().map(line));
    out.push(format!(
        "the rest of the step sits outside the model, excluded rather than folded in: the step's {} per token vs 2 × all {} parameters = {}: {}, the model's gap and:",
        human::flops(g.step_flops_per_token),
        human::params(g.params),
        human::flops(g.step_two_params_flops),
        signed(g.step_flops_per_token - g.step_two_params_flops, human::flops),
    ));
    out.extend(g.outside.iter().filter(|i| i.kind != GapKind::FinalNorm || sc.model.final_norm.is_some()).map(line));
    out
}

fn gemm_addup_lines(n: &OpNode, a: &AddUp, counting_note: Option<&str>, with_reasons: bool) -> Vec<String> {
    let TileLevel::Gemm { choice, shape } = &n.tiles else { return Vec::new() };
    let g = &choice.best;
    let mut out = Vec::new();
    let op_gemm = n.op.gemm.map_or(n.op.cost.flops, |x| x.flops());
    if (g.flops - n.op.cost.flops).abs() > 1e-9 * n.op.cost.flops {
        let why = if (op_gemm - n.op.cost.flops).abs() > 1e-9 * op_gemm {
            "the operation also counts work outside this GEMM".to_string()
        } else {
            format!(
                "the GEMM as tiled rounds {:.2} rows × {:.2} instances up to {} × {}",
                n.op.gemm.map_or(0.0, |x| x.m),
                n.op.gemm.map_or(0.0, |x| x.instances),
                shape.m,
                shape.batch
            )
        };
        out.push(format!(
            "the GEMM's own FLOPs are {} against the operation's {}: {why}",
            human::flops(g.flops),
            human::flops(n.op.cost.flops)
        ));
    }
    if (g.ideal_bytes - n.op.cost.bytes()).abs() > 1e-9 * g.ideal_bytes {
        out.push(format!(
            "read once, the GEMM moves {} against the operation's {}{}",
            human::bytes(g.ideal_bytes),
            human::bytes(n.op.cost.bytes()),
            counting_note.map(|c| format!(" ({c})")).unwrap_or_default()
        ));
    }
    if !with_reasons {
        return out;
    }
    let batch = if shape.batch > 1 { format!("{} × ", shape.batch) } else { String::new() };
    out.push(if g.padded_flops > g.flops {
        format!(
            "FLOPs {} ({}): tiles of {}×{}×{} run {batch}{}×{}×{} where the GEMM is {batch}{}×{}×{}; the padding is computed and thrown away",
            signed(a.flops_difference, human::flops),
            ratio_pct(a.children_flops, a.parent_flops),
            g.tile.bm,
            g.tile.bn,
            g.tile.bk,
            human::count(g.tiles_m * g.tile.bm),
            human::count(g.tiles_n * g.tile.bn),
            human::count(g.tiles_k * g.tile.bk),
            human::count(shape.m),
            human::count(shape.n),
            human::count(shape.k),
        )
    } else {
        "FLOPs add up: the tile grid divides the output and K, nothing is padded".into()
    });
    out.push(format!(
        "bytes {} (the reuse factor): each A strip ({} rows × K) is re-read by the {} of its row, each B strip (K × {} columns) by the {} of its column; {} instead of {}",
        human::ratio(a.bytes_ratio()),
        g.tile.bm,
        human::plural(g.tiles_n, "tile"),
        g.tile.bn,
        human::plural(g.tiles_m, "tile"),
        human::bytes(g.tiled_bytes),
        human::bytes(g.ideal_bytes)
    ));
    out
}

fn attention_lines(t: &AttentionTiling, fused: &Cost, unfused: &Cost, heads_note: &str) -> Vec<String> {
    let mut out = Vec::new();
    match t.phase {
        Phase::Prefill => {
            out.push(format!(
                "{} blocks of {}×{} (query × key){heads_note}: {} computed, {} skipped{}, {} partial (the diagonal, a window edge or the end of a prompt)",
                count_f(t.blocks),
                t.block_q,
                t.block_kv,
                count_f(t.blocks_computed),
                count_f(t.blocks_skipped),
                if t.causal { " above the causal diagonal or behind the window" } else { " (no causal masking)" },
                count_f(t.blocks_partial),
            ));
            out.push(format!(
                "FLOPs: {} executed for {} useful ({}): masked halves of diagonal blocks and padded edges",
                human::flops(t.executed_flops),
                human::flops(t.flops),
                ratio_pct(t.executed_flops, t.flops)
            ));
            out.push(format!(
                "bytes {}: every query block re-reads the K/V blocks it needs ({}); Q read and O written once ({}); DRAM stays at the read-once {} while a head's K/V sit in L2",
                human::ratio(t.reuse_factor),
                human::bytes(t.kv_tiled_bytes),
                human::bytes(t.query_output_bytes),
                human::bytes(t.ideal_bytes)
            ));
        }
        Phase::Decode => {
            out.push(format!(
                "CTAs = sequences × KV heads × {} query block(s) × {} split(s) = {} against {} SMs ({} slots at {} per SM): {} of the SMs busy",
                t.query_blocks,
                t.splits,
                count_f(t.ctas),
                t.sm_count,
                t.cta_slots,
                t.cta_slots / t.sm_count.max(1),
                human::percent(t.busy_fraction)
            ));
            out.push(format!(
                "FLOPs: {} executed for {} useful ({}): the query heads sharing a KV head fill a {}-row block, and the last key block of {} is padded",
                human::flops(t.executed_flops),
                human::flops(t.flops),
                ratio_pct(t.executed_flops, t.flops),
                t.block_q,
                t.block_kv
            ));
            out.push(format!(
                "bytes {}: K/V read by each query block ({}), Q and O ({}), split-KV partial outputs written and read back ({})",
                human::ratio(t.reuse_factor),
                human::bytes(t.kv_tiled_bytes),
                human::bytes(t.query_output_bytes),
                human::bytes(t.split_bytes)
            ));
        }
    }
    if unfused != fused {
        out.push(format!(
            "unfused (--flash off), scores and probabilities go through HBM: {} for attention + softmax against the fused {} ({} more)",
            human::bytes(unfused.bytes()),
            human::bytes(fused.bytes()),
            signed(unfused.bytes() - fused.bytes(), human::bytes)
        ));
    }
    out.push(format!(
        "time: {} modelled ({}-bound, math {}, memory {}, scaled by the busy SMs)",
        human::seconds(t.time_s),
        t.bound.name(),
        human::seconds(t.compute_s),
        human::seconds(t.memory_s)
    ));
    out
}

fn no_tiles_line(n: &NoTiles) -> String {
    match n {
        NoTiles::Elementwise => "a leaf: elementwise on the vector units, one pass over its tensors; nothing to tile".into(),
        NoTiles::Gather => "a leaf: the embedding copies one table row per token; no arithmetic to tile".into(),
        NoTiles::Unfused => {
            "a leaf: unfused attention, its scores and probabilities go through HBM; --flash on shows the fused kernel's blocks".into()
        }
        NoTiles::Communication => "a leaf: communication between GPUs (or a pipeline stage's wait), timed on its link; no arithmetic to tile".into(),
        NoTiles::Recurrence => "a leaf: a recurrent mixer's scan over its state (per token in decode, by chunks of small matmuls in prefill); not one GEMM to tile".into(),
        NoTiles::NotModelled(why) => format!("a leaf: the tile level is not modelled ({why})"),
    }
}

/// Explanation lines for an operator or its tiles (shared by both levels).
fn op_tile_lines(n: &OpNode, a: &AddUp, sc: &Scenario, view: &NodeView) -> Vec<String> {
    let counting = (sc.workload.counting == llm_ledger_core::workload::Counting::Seed)
        .then_some("seed (reference) counting leaves activations out of the operation");
    match &n.tiles {
        TileLevel::Gemm { choice, .. } => {
            let mut out = gemm_addup_lines(n, a, counting, view.level == Level::Op);
            let e = llm_ledger_core::tiling::GemmExploration {
                chosen: choice.best,
                forced: false,
                runner_up: choice.runner_up,
                fitting: choice.fitting,
                candidates: Vec::new(),
            };
            out.push(format!("default tile {}: {}", choice.best.tile, crate::tile::reason(&e)));
            if view.level == Level::Tiles {
                out.extend(gemm_lines(&choice.best, n.timing.roofline_s));
            } else {
                out.push(format!(
                    "time: {} modelled over {} wave(s) against the roofline's {}",
                    human::seconds(choice.best.time_s),
                    choice.best.waves,
                    human::seconds(n.timing.roofline_s)
                ));
            }
            out
        }
        TileLevel::Attention { tiling, fused, unfused } => {
            let heads = if tiling.phase == Phase::Prefill { ", over all query heads and prompts" } else { "" };
            attention_lines(tiling, fused, unfused, heads)
        }
        TileLevel::None(why) => vec![no_tiles_line(why)],
    }
}

/// A total in one phrase: `15.0 GFLOP, 14.2 GB, 5.84 ms`.
fn totals_phrase(t: &llm_ledger_core::zoom::Totals) -> String {
    format!("{}, {}, {}", human::flops(t.cost.flops), human::bytes(t.cost.bytes()), human::seconds(t.timing.time_s))
}

fn share_of(part: f64, whole: f64) -> String {
    human::percent(if whole > 0.0 { part / whole } else { 0.0 })
}

/// Which GPU the tree is, when there are several.
fn gpu_line(sc: &Scenario, tree: &ZoomTree) -> Option<String> {
    let p = &sc.parallel;
    if p.is_single() {
        return None;
    }
    let mut line = format!(
        "one GPU of {}, as the ledger shows it: each operator is its share, and the collectives are operators of their layer or of the rest of the step",
        p.describe()
    );
    if let Some(pl) = &tree.pipeline {
        line.push_str(&format!(
            "; pipeline stage {} of {} (the busiest): {} of {} layers, each operator summed over the {} micro-batch(es) it runs, with the stage's send or head and its wait in the rest of the step",
            pl.stage + 1,
            p.stages.len(),
            tree.layers_phrase(),
            tree.model_layers,
            pl.micro_batches
        ));
    }
    Some(line)
}

fn step_line(c: &StepCheck, rest_names: &[String]) -> Vec<String> {
    let rest = if rest_names.is_empty() { "nothing".to_string() } else { rest_names.join(" + ") };
    let mut out = vec![format!(
        "the rest of the step, beside the model: {rest} = {} ({} of the step's time)",
        totals_phrase(&c.rest),
        share_of(c.rest.timing.time_s, c.step.timing.time_s)
    )];
    out.push(if c.exact {
        format!(
            "step = model + rest = {}: the ledger's total, exactly (FLOPs, every byte kind, link bytes and time)",
            totals_phrase(&c.step)
        )
    } else {
        format!(
            "step = model + rest = {}; the ledger's total is {}: they differ by {} and {}",
            totals_phrase(&c.step),
            totals_phrase(&c.ledger),
            signed(c.step.cost.flops - c.ledger.cost.flops, human::flops),
            signed(c.step.timing.time_s - c.ledger.timing.time_s, human::seconds)
        )
    });
    out
}

impl ZoomReport {
    /// The report of `path` in `tree` (built from `sc`).
    pub fn new(sc: &Scenario, tree: &ZoomTree, view: &NodeView) -> Self {
        let t = &view.totals;
        let exact_level = matches!(view.level, Level::Model | Level::Layer | Level::Op);
        let cost = exact_level.then_some(t.cost);
        let node = ZoomRow {
            name: view.path.rsplit('.').next().unwrap_or(&view.path).to_string(),
            path: Some(view.path.clone()),
            block: None,
            kind: match view.detail {
                NodeDetail::Layer { detail, .. } => Some(detail.kind.clone()),
                NodeDetail::Model(_) | NodeDetail::Op(_) | NodeDetail::Tiles(_) => None,
            },
            count: 1.0,
            flops: t.cost.flops,
            executed_flops: t.cost.flops,
            bytes: t.cost.bytes(),
            weight_bytes: cost.map(|c| c.weight_bytes),
            kv_bytes: cost.map(|c| c.kv_bytes()),
            state_bytes: cost.map(|c| c.state_bytes()),
            activation_bytes: cost.map(|c| c.activation_bytes),
            link_bytes: cost.map(|c| c.link_bytes),
            intensity: intensity(t.cost.flops, t.cost.bytes()),
            time_s: t.timing.time_s,
            roofline_time_s: t.timing.roofline_s,
            time_share: 1.0,
            bound: exact_level.then(|| t.timing.bound().name().to_string()),
        };
        let a = &view.addup;
        let mut explanation = Vec::new();
        let mut gap = None;
        let mut tiles = None;
        let mut identical_layers = None;
        let mut rest = Vec::new();
        let mut step = None;
        let mut focus = None;
        match view.detail {
            NodeDetail::Model(g) => {
                let layers = tree.layers_phrase().replace(", ", " + ").replace(" … ", " + … + ");
                explanation.push(exact_line(&format!("{layers} = model, FLOPs and bytes"), a));
                explanation.extend(kinds_line(&view.children));
                let c = &tree.step;
                let names: Vec<String> = tree.rest.iter().map(|n| n.op.kind.name().to_string()).collect();
                explanation.extend(step_line(c, &names));
                explanation.extend(gpu_line(sc, tree));
                explanation.push("share: a layer's of the model's time; a part of the rest's, of the step's".into());
                explanation.extend(gap_lines(g, sc));
                rest = tree.rest_views().iter().map(|r| child_row(r, c.step.timing.time_s)).collect();
                step = Some(*c);
                gap = Some(*g);
            }
            NodeDetail::Layer { index, detail, focus: f } => {
                explanation.push(format!("layer.{index}: {}", detail.kind));
                explanation.push(exact_line(&format!("Σ of its {} operators = layer.{index}", view.children.len()), a));
                let block = |b: Block| {
                    let n = detail.ops.iter().filter(|o| o.op.kind.block() == b).count();
                    let bt = detail.block(b);
                    format!(
                        "{} block: {} operator(s), {} ({} of the layer's time)",
                        block_name(b),
                        n,
                        totals_phrase(bt),
                        share_of(bt.timing.time_s, t.timing.time_s)
                    )
                };
                explanation.push(format!("{}; {}", block(Block::Attention), block(Block::Mlp)));
                if let Some(b) = f {
                    explanation.push(format!(
                        "layer.{index}.{0} is the {0} block of layer.{index}, its operators marked ▸; a block is not a level of its own: its operators are layer.{index}.{0}.<operator>",
                        block_name(b)
                    ));
                    focus = Some(block_name(b).to_string());
                }
                if detail.count > 1 {
                    explanation.push(format!(
                        "{} layers share this shape; it is computed once and shown as each of them",
                        detail.count
                    ));
                }
                identical_layers = Some(detail.count);
            }
            NodeDetail::Op(n) => {
                if n.op.kind.block() != Block::Attention && n.op.kind.block() != Block::Mlp {
                    explanation.push("outside the model: part of the rest of the step (see --at model)".into());
                }
                if n.runs > 1 {
                    explanation.push(format!(
                        "it runs {} times per step, once per micro-batch; the tiles below are one run's ({}, {})",
                        n.runs,
                        human::flops(n.op.cost.flops),
                        human::bytes(n.op.cost.bytes())
                    ));
                }
                if n.tiles.totals().is_some() {
                    explanation.push(format!(
                        "zoomed into tiles it does not add up: FLOPs {} ({}), bytes {} ({})",
                        human::ratio(a.flops_ratio()),
                        signed(a.flops_difference, human::flops),
                        human::ratio(a.bytes_ratio()),
                        signed(a.bytes_difference, human::bytes)
                    ));
                }
                explanation.extend(op_tile_lines(n, a, sc, view));
                tiles = Some(n.tiles.clone());
            }
            NodeDetail::Tiles(n) => {
                explanation.push(exact_line("the tile classes sum to the tile level", a));
                let op_level = AddUp::between(n.op.cost.flops, n.op.cost.bytes(), t.cost.flops, t.cost.bytes());
                explanation.push(format!(
                    "against the operation above: FLOPs {} ({}), bytes {} ({})",
                    human::ratio(op_level.flops_ratio()),
                    signed(op_level.flops_difference, human::flops),
                    human::ratio(op_level.bytes_ratio()),
                    signed(op_level.bytes_difference, human::bytes)
                ));
                explanation.extend(op_tile_lines(n, &op_level, sc, view));
                tiles = Some(n.tiles.clone());
            }
        }
        ZoomReport {
            inputs: Inputs::of(sc),
            fit: StepFit::of(sc, DEFAULT_RESERVE_BYTES),
            path: view.path.clone(),
            level: view.level,
            breadcrumb: view.breadcrumb.clone(),
            node,
            children: view.children.iter().map(|c| child_row(c, t.timing.time_s)).collect(),
            addup: AddUpView { addup: *a, flops_ratio: a.flops_ratio(), bytes_ratio: a.bytes_ratio() },
            explanation,
            rest,
            step,
            focus,
            gap,
            tiles,
            identical_layers,
        }
    }

    /// The clock its times come from ([`clock_word`] of its scenario).
    pub fn clock(&self) -> &'static str {
        measured_word(self.inputs.engine.is_some())
    }

    /// The node's title line: path, level and totals (the model's says what it is).
    fn node_line(&self) -> String {
        let n = &self.node;
        let what = match self.level {
            Level::Model => " the layer stack,".to_string(),
            _ => String::new(),
        };
        format!(
            "{} ({} level):{what} {}, {}{}, {}",
            self.path,
            self.level.name(),
            human::flops(n.flops),
            human::bytes(n.bytes),
            n.intensity.map(|i| format!(", {} FLOP/B", human::intensity(Some(i)))).unwrap_or_default(),
            human::seconds(n.time_s)
        )
    }
}

impl Report for ZoomReport {
    type CsvRow = ZoomRow;

    fn csv_rows(&self) -> Vec<ZoomRow> {
        self.children.iter().chain(&self.rest).cloned().collect()
    }

    fn human(&self) -> HumanTable {
        let exact = self.children.iter().all(|c| c.weight_bytes.is_some());
        let opt_bytes = |v: Option<f64>| v.map(human::bytes).unwrap_or_default();
        // A column beside the name: the block of each operator of a layer, the kind of each layer
        // of a model whose layers differ.
        let kinds = layer_kinds_of_rows(&self.children);
        let label = match self.level {
            Level::Layer => Some(NameColumn::Block),
            Level::Model if kinds.len() > 1 => Some(NameColumn::Kind),
            Level::Model | Level::Op | Level::Tiles => None,
        };
        let with_block = label.is_some();
        // Several GPUs: the bytes each operator sends over a link, beside its HBM bytes.
        let with_link = self.inputs.parallel.is_some();
        // A hybrid's recurrent layers: the state they read and write, beside the KV.
        let with_state = self.children.iter().chain(&self.rest).any(|c| c.state_bytes.unwrap_or(0.0) > 0.0);
        let focus = self.focus.as_deref();
        let block_cell = |c: &ZoomRow| -> Vec<String> {
            match label {
                None => Vec::new(),
                Some(NameColumn::Kind) => vec![c.kind.clone().unwrap_or_default()],
                Some(NameColumn::Block) => {
                    let b = c.block.clone().unwrap_or_default();
                    vec![if focus.is_some() && focus == c.block.as_deref() { format!("▸ {b}") } else { b }]
                }
            }
        };
        let exact_row = |name: String, c: &ZoomRow| {
            let mut row = vec![name];
            row.extend(block_cell(c));
            row.extend([human::flops(c.flops), opt_bytes(c.weight_bytes), opt_bytes(c.kv_bytes)]);
            if with_state {
                row.push(opt_bytes(c.state_bytes));
            }
            row.push(opt_bytes(c.activation_bytes));
            if with_link {
                row.push(opt_bytes(c.link_bytes));
            }
            row.extend([
                human::bytes(c.bytes),
                human::intensity(c.intensity),
                human::seconds(c.time_s),
                human::percent(c.time_share),
            ]);
            row
        };
        // The optional byte columns (state, link) in every row.
        let extra_columns = usize::from(with_link) + usize::from(with_state);
        let blank = |n: usize| vec![String::new(); n];
        let (header, rows, right): (Vec<&str>, Vec<Vec<String>>, Vec<usize>) = if exact {
            let mut rows: Vec<Vec<String>> = self.children.iter().map(|c| exact_row(c.name.clone(), c)).collect();
            let a = &self.addup.addup;
            let lead = |label: &str| {
                let mut r = vec![label.to_string()];
                r.extend(blank(usize::from(with_block)));
                r
            };
            if a.leaf {
                rows.push(exact_row(format!("({} is a leaf)", self.node.name), &self.node));
            } else {
                let mut r = lead(if self.level == Level::Model { "Σ children = model" } else { "Σ children" });
                r.extend([human::flops(a.children_flops), String::new(), String::new(), String::new()]);
                r.extend(blank(extra_columns));
                r.extend([
                    human::bytes(a.children_bytes),
                    human::intensity(intensity(a.children_flops, a.children_bytes)),
                ]);
                r.extend(blank(2));
                rows.push(r);
            }
            if let Some(c) = &self.step {
                let mut r = lead("the rest of the step:");
                r.extend(blank(8 + extra_columns));
                rows.push(r);
                rows.extend(self.rest.iter().map(|c| exact_row(c.name.clone(), c)));
                let s = &c.step;
                let mut r = lead("step = model + rest");
                r.extend([
                    human::flops(s.cost.flops),
                    human::bytes(s.cost.weight_bytes),
                    human::bytes(s.cost.kv_bytes()),
                ]);
                if with_state {
                    r.push(human::bytes(s.cost.state_bytes()));
                }
                r.push(human::bytes(s.cost.activation_bytes));
                if with_link {
                    r.push(human::bytes(s.cost.link_bytes));
                }
                r.extend([
                    human::bytes(s.cost.bytes()),
                    human::intensity(s.cost.intensity()),
                    human::seconds(s.timing.time_s),
                    human::percent(1.0),
                ]);
                rows.push(r);
            }
            let mut header = vec!["child"];
            header.extend(label.map(NameColumn::header));
            header.extend(["FLOPs", "weights", "KV"]);
            if with_state {
                header.push("state");
            }
            header.push("activations");
            if with_link {
                header.push("link");
            }
            header.extend(["bytes", "FLOP/B", "time", "share"]);
            let first_num = 1 + usize::from(with_block);
            (header, rows, (first_num..first_num + 8 + extra_columns).collect())
        } else {
            let mut rows: Vec<Vec<String>> = self
                .children
                .iter()
                .map(|c| {
                    vec![
                        c.name.clone(),
                        if c.count > 0.0 { count_f(c.count) } else { String::new() },
                        human::flops(c.flops),
                        human::flops(c.executed_flops),
                        human::bytes(c.bytes),
                        if c.time_s > 0.0 { human::seconds(c.time_s) } else { String::new() },
                    ]
                })
                .collect();
            let a = &self.addup.addup;
            rows.push(vec![
                "Σ children".into(),
                String::new(),
                human::flops(self.children.iter().map(|c| c.flops).sum()),
                human::flops(a.children_flops),
                human::bytes(a.children_bytes),
                String::new(),
            ]);
            (vec!["child", "count", "useful FLOPs", "executed FLOPs", "bytes", "time"], rows, (1..=5).collect())
        };
        let mut title = vec![self.inputs.headline(), format!("zoom: {}", self.breadcrumb.join(" › "))];
        title.push(self.node_line());
        let mut footer: Vec<String> = self.explanation.clone();
        footer.extend(self.fit.footer());
        // Suggest the first layer from the model, else the child with the largest time (the first of
        // equals; in the marked block when the path named one).
        let candidates =
            self.children.iter().filter(|c| c.path.is_some() && (focus.is_none() || c.block.as_deref() == focus));
        let first_layer = (self.level == Level::Model).then(|| self.children.first()).flatten();
        let next = first_layer.or(candidates.fold(None::<&ZoomRow>, |best, c| match best {
            Some(b) if b.time_s >= c.time_s => Some(b),
            _ => Some(c),
        }));
        if kinds.len() > 1 {
            let each: Vec<String> = kinds.iter().map(|(k, _, first)| format!("--at {first} ({k})")).collect();
            footer.push(format!("zoom in: {}", each.join(", ")));
        } else if let Some(c) = next.and_then(|c| c.path.as_deref()) {
            footer.push(format!("zoom in: --at {c}"));
        }
        HumanTable {
            title,
            header: header.into_iter().map(String::from).collect(),
            rows,
            right_aligned: right,
            footer,
            ..Default::default()
        }
    }
}
