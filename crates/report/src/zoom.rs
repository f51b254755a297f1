//! The `zoom` report: one node of the powers-of-ten tree — its totals, its children, the breadcrumb,
//! and whether the children add up to it (and by how much and why not).
//!
//! JSON: `inputs`, `path`, `level`, `breadcrumb[]`, `node` (totals), `children[]`, `addup`
//! (parent and children FLOPs and bytes, differences, ratios — the bytes ratio is the reuse
//! factor at the tile level — and `exact`), `explanation[]` (the same sentences as the table),
//! `gap` at model level (FLOPs per token against 2 × parameters, by part) and `tiles` at operator
//! and tile levels (the whole tiling), and whether the step fits ([`StepFit`]: `fits`,
//! `memory_bytes`, `gpu_memory_bytes`, `plan_command`). Plain SI numbers throughout.

use crate::fit::StepFit;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use crate::tile::gemm_lines;
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::tiling::AttentionTiling;
use llm_ledger_core::zoom::{
    AddUp, ChildView, FlopsGap, GapKind, Level, NoTiles, NodeDetail, NodeView, OpNode, TileLevel, ZoomTree,
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
    /// Activation bytes (exact levels).
    pub activation_bytes: Option<f64>,
    /// FLOP per byte.
    pub intensity: Option<f64>,
    /// Time, seconds.
    pub time_s: f64,
    /// Share of the node's time.
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

fn intensity(flops: f64, bytes: f64) -> Option<f64> {
    (bytes > 0.0).then(|| flops / bytes)
}

fn child_row(c: &ChildView, parent_time: f64) -> ZoomRow {
    ZoomRow {
        name: c.name.clone(),
        path: c.path.clone(),
        count: c.count,
        flops: c.flops,
        executed_flops: c.executed_flops,
        bytes: c.bytes,
        weight_bytes: c.cost.map(|c| c.weight_bytes),
        kv_bytes: c.cost.map(|c| c.kv_bytes()),
        activation_bytes: c.cost.map(|c| c.activation_bytes),
        intensity: intensity(c.executed_flops, c.bytes),
        time_s: c.time_s,
        time_share: if parent_time > 0.0 { c.time_s / parent_time } else { 0.0 },
        bound: None,
    }
}

/// A count: exact with separators below a million, else with an SI prefix (`14.3 k` style).
fn count_f(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e6 {
        human::count(v as u64)
    } else {
        human::si(v, "").trim_end().to_string()
    }
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Model => "model",
        Level::Layer => "layer",
        Level::Block => "block",
        Level::Op => "operator",
        Level::Tiles => "tile",
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

fn gap_lines(g: &FlopsGap, sc: &Scenario) -> Vec<String> {
    let d = g.gap_flops_per_token();
    let mut out = vec![format!(
        "FLOPs per token: {} vs 2 × {} parameters = {}: {} ({}), made of:",
        human::flops(g.flops_per_token),
        human::params(g.params),
        human::flops(g.two_params_flops),
        signed(d, human::flops),
        ratio_pct(g.flops_per_token, g.two_params_flops)
    )];
    let m = &sc.model;
    let t = g.tokens;
    let logit_rows = sc.workload.logit_tokens();
    for item in &g.items {
        let what = match item.kind {
            GapKind::EmbeddingGather => format!(
                "embedding: a gather; its {} parameters are read, not multiplied",
                human::params(m.embedding_params())
            ),
            GapKind::LmHead => format!(
                "lm_head: logits for {} of {} tokens{}",
                human::count(logit_rows as u64),
                human::count(t as u64),
                if m.tied_embeddings { " (tied: its weights are the embedding table)" } else { "" }
            ),
            GapKind::InactiveExperts if g.active_params == g.params => "MoE experts not routed to: none, every parameter is active".into(),
            GapKind::InactiveExperts => format!(
                "MoE experts a token is not routed to ({} of {} parameters active)",
                human::params(g.active_params),
                human::params(g.params)
            ),
            GapKind::AttentionScores => "attention QKᵀ and P·V over the context: FLOPs without parameters".into(),
            GapKind::Elementwise => "norms, RoPE, activation, residual adds, softmax: vector-unit FLOPs".into(),
            GapKind::LayerWeights => {
                "layer GEMMs vs 2 × the remaining parameters (norm scales and biases are parameters without 2 FLOPs each)".into()
            }
        };
        out.push(format!("  {:>12}  {what}", signed(item.flops_per_token, human::flops)));
    }
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
        crate::tile::plural(g.tiles_n, "tile"),
        g.tile.bn,
        crate::tile::plural(g.tiles_m, "tile"),
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

impl ZoomReport {
    /// The report of `path` in `tree` (built from `sc`).
    pub fn new(sc: &Scenario, tree: &ZoomTree, view: &NodeView) -> Self {
        let t = &view.totals;
        let exact_level = matches!(view.level, Level::Model | Level::Layer | Level::Block | Level::Op);
        let cost = exact_level.then_some(t.cost);
        let node = ZoomRow {
            name: view.path.rsplit('.').next().unwrap_or(&view.path).to_string(),
            path: Some(view.path.clone()),
            count: 1.0,
            flops: t.cost.flops,
            executed_flops: t.cost.flops,
            bytes: t.cost.bytes(),
            weight_bytes: cost.map(|c| c.weight_bytes),
            kv_bytes: cost.map(|c| c.kv_bytes()),
            activation_bytes: cost.map(|c| c.activation_bytes),
            intensity: intensity(t.cost.flops, t.cost.bytes()),
            time_s: t.timing.time_s,
            time_share: 1.0,
            bound: exact_level.then(|| t.timing.bound().name().to_string()),
        };
        let a = &view.addup;
        let mut explanation = Vec::new();
        let mut gap = None;
        let mut tiles = None;
        let mut identical_layers = None;
        match view.detail {
            NodeDetail::Model(g) => {
                explanation.push(exact_line(
                    &format!("embedding + {} layers + final_norm + lm_head = model, FLOPs and bytes", tree.num_layers),
                    a,
                ));
                explanation.push(format!(
                    "the layer stack is {} and {} ({} of the step's time); the embedding and lm_head sit beside it",
                    human::flops(tree.stack.cost.flops),
                    human::bytes(tree.stack.cost.bytes()),
                    human::percent(tree.stack.timing.time_s / t.timing.time_s.max(f64::MIN_POSITIVE))
                ));
                explanation.extend(gap_lines(g, sc));
                gap = Some(*g);
            }
            NodeDetail::Layer { index, detail } => {
                explanation.push(exact_line(&format!("attn + mlp = layer.{index}"), a));
                if detail.count > 1 {
                    explanation.push(format!(
                        "{} layers share this shape; it is computed once and shown as each of them",
                        detail.count
                    ));
                }
                identical_layers = Some(detail.count);
            }
            NodeDetail::Block(_) => {
                explanation.push(exact_line(&format!("Σ of its {} operators = {}", view.children.len(), view.path), a));
            }
            NodeDetail::Op(n) => {
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
                let op_level = llm_ledger_core::zoom::AddUp {
                    parent_flops: n.op.cost.flops,
                    children_flops: t.cost.flops,
                    parent_bytes: n.op.cost.bytes(),
                    children_bytes: t.cost.bytes(),
                    flops_difference: t.cost.flops - n.op.cost.flops,
                    bytes_difference: t.cost.bytes() - n.op.cost.bytes(),
                    exact: false,
                    leaf: false,
                };
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
            gap,
            tiles,
            identical_layers,
        }
    }
}

impl Report for ZoomReport {
    type CsvRow = ZoomRow;

    fn csv_rows(&self) -> Vec<ZoomRow> {
        self.children.clone()
    }

    fn human(&self) -> HumanTable {
        let exact = self.children.iter().all(|c| c.weight_bytes.is_some());
        let opt_bytes = |v: Option<f64>| v.map(human::bytes).unwrap_or_default();
        let leaf_row = || {
            vec![
                format!("({} is a leaf)", self.node.name),
                human::flops(self.node.flops),
                opt_bytes(self.node.weight_bytes),
                opt_bytes(self.node.kv_bytes),
                opt_bytes(self.node.activation_bytes),
                human::bytes(self.node.bytes),
                human::intensity(self.node.intensity),
                human::seconds(self.node.time_s),
                human::percent(1.0),
            ]
        };
        let (header, rows, right): (Vec<&str>, Vec<Vec<String>>, Vec<usize>) = if exact {
            let mut rows: Vec<Vec<String>> = self
                .children
                .iter()
                .map(|c| {
                    vec![
                        c.name.clone(),
                        human::flops(c.flops),
                        opt_bytes(c.weight_bytes),
                        opt_bytes(c.kv_bytes),
                        opt_bytes(c.activation_bytes),
                        human::bytes(c.bytes),
                        human::intensity(c.intensity),
                        human::seconds(c.time_s),
                        human::percent(c.time_share),
                    ]
                })
                .collect();
            let a = &self.addup.addup;
            if a.leaf {
                rows.push(leaf_row());
            } else {
                rows.push(vec![
                    "Σ children".into(),
                    human::flops(a.children_flops),
                    String::new(),
                    String::new(),
                    String::new(),
                    human::bytes(a.children_bytes),
                    human::intensity(intensity(a.children_flops, a.children_bytes)),
                    String::new(),
                    String::new(),
                ]);
            }
            (
                vec!["child", "FLOPs", "weights", "KV", "activations", "bytes", "FLOP/B", "time", "share"],
                rows,
                (1..=8).collect(),
            )
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
        let n = &self.node;
        let mut title = vec![self.inputs.headline(), format!("zoom: {}", self.breadcrumb.join(" › "))];
        title.push(format!(
            "{} ({} level): {}, {}{}, {}",
            self.path,
            level_name(self.level),
            human::flops(n.flops),
            human::bytes(n.bytes),
            n.intensity.map(|i| format!(", {} FLOP/B", human::intensity(Some(i)))).unwrap_or_default(),
            human::seconds(n.time_s)
        ));
        let mut footer: Vec<String> = self.explanation.clone();
        footer.extend(self.fit.footer());
        // Suggest the first layer from the model, else the child with the largest time (the first of
        // equals).
        let candidates = self.children.iter().filter(|c| c.path.is_some());
        let layer0 = self.children.iter().find(|c| c.path.as_deref() == Some("layer.0"));
        let next = layer0.or(candidates.fold(None::<&ZoomRow>, |best, c| match best {
            Some(b) if b.time_s >= c.time_s => Some(b),
            _ => Some(c),
        }));
        if let Some(c) = next.and_then(|c| c.path.as_deref()) {
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
