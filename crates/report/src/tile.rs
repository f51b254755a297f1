//! The `tile` report: one GEMM on one GPU cut into thread-block tiles — the tile used (forced or
//! the default choice, with the reason), its occupancy, tile and wave quantisation, re-read traffic
//! and modelled time, and every candidate tile ranked.
//!
//! JSON is a stable interface: top-level `tiles`, `waves`, `ctas_per_sm`, `flops`, `padded_flops`,
//! `ideal_bytes`, `tiled_bytes`, `reuse_factor`, `tile_m`, `tile_n`, `tile_k` (and the rest of the
//! chosen tiling), `reason`, and `candidates[]`. Plain SI numbers throughout.
//!
//! The descriptive lines for one tiling ([`gemm_lines`]) are shared with the zoom report's tile
//! level.

use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::error::Result;
use llm_ledger_core::roofline::Efficiency;
use llm_ledger_core::tiling::gemm::{explore_gemm, GemmExploration, GemmTiling, Rejection, GROUP_M};
use llm_ledger_core::tiling::GemmInputs;
use llm_ledger_core::Gpu;
use serde::Serialize;

/// One candidate tile, ranked.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateRow {
    /// `BMxBNxBKxSTAGES` (BK scaled to the math width).
    pub tile: String,
    /// Where it comes from.
    pub source: String,
    /// It is the tile shown.
    pub chosen: bool,
    /// It can run on this GPU.
    pub fits: bool,
    /// Why not, when it cannot.
    pub rejection: Option<String>,
    /// Warps per CTA.
    pub warps: u64,
    /// Shared memory of its buffers, bytes.
    pub smem_bytes: Option<u64>,
    /// CTAs per SM.
    pub ctas_per_sm: Option<u64>,
    /// The binding occupancy limit.
    pub limiter: Option<String>,
    /// Tiles.
    pub tiles: Option<u64>,
    /// Waves.
    pub waves: Option<u64>,
    /// Tail wave utilisation.
    pub tail_utilisation: Option<f64>,
    /// SMs busy in the first wave.
    pub busy_sms: Option<u64>,
    /// Padded FLOPs.
    pub padded_flops: Option<f64>,
    /// Tiled bytes.
    pub tiled_bytes: Option<f64>,
    /// Wave-panel DRAM bytes.
    pub dram_bytes: Option<f64>,
    /// Modelled time, seconds.
    pub time_s: Option<f64>,
}

/// The `tile` report: the tiling shown, flattened to the top level (`tiles`, `waves`, `flops`,
/// `padded_flops`, `ideal_bytes`, `tiled_bytes`, `reuse_factor`, `time_s`, …, with `shape`,
/// `tile`, `occupancy` and `classes` as objects), plus the tile and occupancy keys callers read
/// most, the roofline comparison, the reason and the candidates.
#[derive(Debug, Clone, Serialize)]
pub struct TileReport {
    /// GPU name.
    pub gpu: String,
    /// The tile was forced.
    pub forced: bool,
    /// BM.
    pub tile_m: u64,
    /// BN.
    pub tile_n: u64,
    /// BK.
    pub tile_k: u64,
    /// Pipeline stages.
    pub stages: u64,
    /// CTAs per SM.
    pub ctas_per_sm: u64,
    /// The binding occupancy limits (ties joined with `+`).
    pub limiter: String,
    /// The operator roofline's time for the same GEMM (ideal bytes, no tiles), seconds.
    pub roofline_time_s: f64,
    /// Why this tile.
    pub reason: String,
    /// The tiling shown.
    #[serde(flatten)]
    pub tiling: GemmTiling,
    /// Every candidate.
    pub candidates: Vec<CandidateRow>,
}

/// The roofline time of a GEMM with its ideal bytes: `max(FLOPs ÷ (peak·eff), bytes ÷ (BW·eff))`.
pub fn roofline_s(g: &GemmTiling, gpu: &Gpu, eff: Efficiency) -> f64 {
    let peak = gpu.peak(g.math).unwrap_or(gpu.peak_flops_per_s.vector);
    (g.flops / (peak * eff.compute)).max(g.ideal_bytes / (gpu.memory_bandwidth_bytes_per_s * eff.bandwidth))
}

fn limiters(o: &llm_ledger_core::tiling::Occupancy) -> String {
    o.limiters().map(|l| l.name()).collect::<Vec<_>>().join(" + ")
}

fn rejection_text(r: &Rejection) -> String {
    match r {
        Rejection::SharedMemory { needed_bytes, limit_bytes } => {
            format!(
                "needs {} of shared memory, {} per block",
                human::bytes(*needed_bytes as f64),
                human::bytes(*limit_bytes as f64)
            )
        }
        Rejection::Registers { needed } => format!("needs {needed} registers per thread"),
        Rejection::TooManyTiles => "too many tiles".into(),
    }
}

fn pct_more(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:+.1} %", (a / b - 1.0) * 100.0)
    } else {
        String::new()
    }
}

/// Why the chosen tile: the lowest modelled time, and how it differs from the runner-up.
pub fn reason(e: &GemmExploration) -> String {
    let c = &e.chosen;
    if e.forced {
        return match &e.runner_up {
            Some(d) => format!(
                "forced; it models {}, {} against the default {} ({}) at {}",
                human::seconds(c.time_s),
                pct_more(c.time_s, d.time_s),
                d.tile,
                d.source,
                human::seconds(d.time_s)
            ),
            None => "forced; no candidate fits this GPU".into(),
        };
    }
    let mut s = format!("lowest modelled time of {} candidates that fit", e.fitting);
    if let Some(r) = &e.runner_up {
        // Differences worth naming (more than 0.1 %).
        let differs = |a: f64, b: f64| (a - b).abs() > 1e-3 * a.abs().max(b.abs());
        let mut diffs = Vec::new();
        if c.busy_sms != r.busy_sms {
            diffs.push(format!("{} vs {} SMs busy", c.busy_sms, r.busy_sms));
        }
        if c.waves != r.waves {
            diffs.push(format!("{} vs {} waves", c.waves, r.waves));
        }
        if differs(c.smem_feed_s, r.smem_feed_s) && (c.smem_feed_s >= c.compute_s || r.smem_feed_s >= r.compute_s) {
            diffs.push(format!(
                "shared-memory feed {} vs {}",
                human::seconds(c.smem_feed_s),
                human::seconds(r.smem_feed_s)
            ));
        }
        if differs(c.padded_flops, r.padded_flops) {
            diffs.push(format!("{} vs {} executed", human::flops(c.padded_flops), human::flops(r.padded_flops)));
        }
        if differs(c.dram_bytes, r.dram_bytes) {
            diffs.push(format!("{} vs {} DRAM", human::bytes(c.dram_bytes), human::bytes(r.dram_bytes)));
        }
        let tie = if (c.time_s - r.time_s).abs() <= 1e-9 * r.time_s { "ties on time with" } else { "beats" };
        s.push_str(&format!(
            "; {tie} {} ({}, {}{})",
            r.tile,
            r.source,
            human::seconds(r.time_s),
            if diffs.is_empty() { String::new() } else { format!(": {}", diffs.join(", ")) }
        ));
    }
    s
}

/// Lines describing one tiling: the tile and its resources, occupancy, grid and waves, padding,
/// traffic, and time against the roofline's.
pub fn gemm_lines(g: &GemmTiling, roofline_time_s: f64) -> Vec<String> {
    let t = &g.tile;
    let o = &g.occupancy;
    let s = &g.shape;
    let batch = if s.batch > 1 { format!(" × {} instances", s.batch) } else { String::new() };
    let (mp, np, kp) = (g.tiles_m * t.bm, g.tiles_n * t.bn, g.tiles_k * t.bk);
    let padding = if g.padded_flops > g.flops {
        let dims: Vec<String> = [("M", s.m, mp), ("N", s.n, np), ("K", s.k, kp)]
            .iter()
            .filter(|(_, a, b)| a != b)
            .map(|(d, a, b)| format!("{d} {} → {}", human::count(*a), human::count(*b)))
            .collect();
        format!(
            "FLOPs: {} executed for {} useful ({}): padding, {}",
            human::flops(g.padded_flops),
            human::flops(g.flops),
            pct_more(g.padded_flops, g.flops),
            dims.join(", ")
        )
    } else {
        format!("FLOPs: {} — the tile divides M, N and K: no padding", human::flops(g.flops))
    };
    vec![
        format!(
            "tile {}×{}×{}, {} stages, {} warps ({} threads), from {}: {} of shared memory, ≈{} registers/thread",
            t.bm,
            t.bn,
            t.bk,
            t.stages,
            t.warps,
            g.threads,
            g.source,
            human::bytes(g.smem_bytes as f64),
            g.registers_per_thread
        ),
        format!(
            "occupancy: {} CTA/SM, limited by {} (registers allow {}, shared memory {}, warps {}, block slots {}); {} carve-out",
            o.ctas_per_sm,
            limiters(o),
            o.limit_registers,
            o.limit_smem,
            o.limit_warps,
            o.limit_blocks,
            human::bytes(o.smem_carveout_bytes as f64),
        ),
        format!(
            "grid: {} × {} tiles{batch} = {}, {} K steps; waves of {} ({} SMs × {}): {} wave{}, the last holding {} ({} of a wave); {} of {} SMs busy",
            human::count(g.tiles_m),
            human::count(g.tiles_n),
            human::count(g.tiles),
            human::count(g.tiles_k),
            g.wave_size,
            g.sm_count,
            o.ctas_per_sm,
            g.waves,
            if g.waves == 1 { "" } else { "s" },
            human::plural(g.tail_tiles, "tile"),
            human::percent(g.tail_utilisation),
            g.busy_sms,
            g.sm_count
        ),
        padding,
        format!(
            "bytes: read once {}; as tiled {} = A re-read by {} {} + B re-read by {} {} + C: reuse factor {}",
            human::bytes(g.ideal_bytes),
            human::bytes(g.tiled_bytes),
            human::plural(g.tiles_n, "tile column"),
            human::bytes(g.tiled_a_bytes),
            human::plural(g.tiles_m, "tile row"),
            human::bytes(g.tiled_b_bytes),
            human::ratio(g.reuse_factor)
        ),
        format!(
            "DRAM with L2 sharing within a wave (panels of {GROUP_M} tile rows): ≈{} ({} read-once)",
            human::bytes(g.dram_bytes),
            human::ratio(g.dram_bytes / g.ideal_bytes)
        ),
        format!(
            "time: {} modelled, {}-bound (math {} of which shared-memory feed {}, memory {}) vs the roofline's {} ({})",
            human::seconds(g.time_s),
            g.bound.name(),
            human::seconds(g.compute_s),
            human::seconds(g.smem_feed_s),
            human::seconds(g.memory_s),
            human::seconds(roofline_time_s),
            pct_more(g.time_s, roofline_time_s)
        ),
    ]
}

impl TileReport {
    /// The `tile` command's report: explore the GEMM of `inputs` on `gpu` (the forced tile, or
    /// the default choice among the candidates).
    pub fn build(inputs: &GemmInputs, gpu: &Gpu) -> Result<TileReport> {
        let e = explore_gemm(&inputs.shape, gpu, inputs.efficiency, inputs.forced.as_ref())?;
        Ok(TileReport::new(&e, gpu, inputs.efficiency))
    }

    /// Build from an exploration.
    pub fn new(e: &GemmExploration, gpu: &Gpu, eff: Efficiency) -> Self {
        let g = &e.chosen;
        let candidates = e
            .candidates
            .iter()
            .map(|c| {
                let ok = c.result.as_ref().ok();
                CandidateRow {
                    tile: c.tile.to_string(),
                    source: c.source.to_string(),
                    chosen: ok.is_some_and(|t| t.tile == g.tile),
                    fits: ok.is_some(),
                    rejection: c.result.as_ref().err().map(rejection_text),
                    warps: c.tile.warps,
                    smem_bytes: ok.map(|t| t.smem_bytes),
                    ctas_per_sm: ok.map(|t| t.occupancy.ctas_per_sm),
                    limiter: ok.map(|t| limiters(&t.occupancy)),
                    tiles: ok.map(|t| t.tiles),
                    waves: ok.map(|t| t.waves),
                    tail_utilisation: ok.map(|t| t.tail_utilisation),
                    busy_sms: ok.map(|t| t.busy_sms),
                    padded_flops: ok.map(|t| t.padded_flops),
                    tiled_bytes: ok.map(|t| t.tiled_bytes),
                    dram_bytes: ok.map(|t| t.dram_bytes),
                    time_s: ok.map(|t| t.time_s),
                }
            })
            .collect();
        TileReport {
            gpu: gpu.name.clone(),
            forced: e.forced,
            tile_m: g.tile.bm,
            tile_n: g.tile.bn,
            tile_k: g.tile.bk,
            stages: g.tile.stages,
            ctas_per_sm: g.occupancy.ctas_per_sm,
            limiter: limiters(&g.occupancy),
            roofline_time_s: roofline_s(g, gpu, eff),
            reason: reason(e),
            tiling: *g,
            candidates,
        }
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_default()
}

impl Report for TileReport {
    type CsvRow = CandidateRow;

    fn csv_rows(&self) -> Vec<CandidateRow> {
        self.candidates.clone()
    }

    fn human(&self) -> HumanTable {
        let rows = self
            .candidates
            .iter()
            .map(|c| {
                vec![
                    format!("{}{}", if c.chosen { "* " } else { "  " }, c.tile),
                    c.source.clone(),
                    opt(c.ctas_per_sm, |v| v.to_string()),
                    c.limiter.clone().or_else(|| c.rejection.clone()).unwrap_or_default(),
                    opt(c.tiles, human::count),
                    opt(c.waves, |v| v.to_string()),
                    opt(c.tail_utilisation, human::percent),
                    opt(c.busy_sms, |v| v.to_string()),
                    opt(c.padded_flops, human::flops),
                    opt(c.tiled_bytes, human::bytes),
                    opt(c.dram_bytes, human::bytes),
                    opt(c.time_s, human::seconds),
                ]
            })
            .collect();
        let (t, sh) = (&self.tiling, &self.tiling.shape);
        let mut title = vec![format!(
            "GEMM {} × {} × {} (A {} · B {} → C {}, {} math) on {} ({} SMs)",
            human::count(sh.m),
            human::count(sh.n),
            human::count(sh.k),
            sh.a,
            sh.b,
            sh.c,
            t.math,
            self.gpu,
            t.sm_count
        )];
        title.push(format!(
            "{} tile {}×{}×{}×{}: {}",
            if self.forced { "forced" } else { "default" },
            self.tile_m,
            self.tile_n,
            self.tile_k,
            self.stages,
            self.reason
        ));
        title.extend(gemm_lines(&self.tiling, self.roofline_time_s).into_iter().map(|l| format!("  {l}")));
        HumanTable {
            title,
            header: ["tile", "from", "CTA/SM", "limit", "tiles", "waves", "tail", "SMs", "executed", "tiled", "DRAM", "time"]
                .map(String::from)
                .to_vec(),
            rows,
            right_aligned: vec![2, 4, 5, 6, 7, 8, 9, 10, 11],
            // The tile and its time stay; the byte and FLOP detail goes first on a narrow terminal.
            priority: vec![0, 3, 2, 2, 1, 1, 1, 3, 3, 3, 2, 0],
            footer: vec![
                "candidates: tiles of CUTLASS, Triton, cuBLAS and vLLM configurations for 16-bit operands; BK scales with the math width (* = shown)".into(),
                "time per wave = max(math of the busiest SM: tensor cores or shared-memory feed, its share of DRAM at the bandwidth of the busy SMs); efficiencies as the ledger's".into(),
            ],
        }
    }
}
