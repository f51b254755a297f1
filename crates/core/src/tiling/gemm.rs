//! One GEMM `C[M×N] = A[M×K]·B[K×N]` (`batch` independent products) cut into thread-block tiles
//! on a GPU: tile and wave quantisation, occupancy, operand re-reads and a modelled time
//! (`shared/research/gemm-tiling.md` §2–§6).
//!
//! ```text
//! T_M = ⌈M/BM⌉, T_N = ⌈N/BN⌉, T_K = ⌈K/BK⌉           tiles = batch · T_M · T_N
//! padded FLOPs  = the GEMM's FLOPs (crate::gemm::Gemm) of the padded (T_M·BM, T_N·BN, T_K·BK)
//! wave size W   = SMs · CTAs_per_SM                    waves = ⌈tiles / W⌉
//! tail tiles    = tiles − (waves − 1)·W                tail utilisation = tail / W
//! ideal bytes   = batch · (e_A·M·K + e_B·K·N + e_C·M·N)          each operand read once (§1)
//! tiled bytes   = batch · (e_A·M·K·T_N + e_B·K·N·T_M + e_C·M·N)  every A strip is re-read by
//!                 each tile in its row (T_N of them), every B strip by each tile in its column
//!                 (T_M); what the SMs load when nothing is shared through L2 (§6.1)
//! reuse factor  = tiled ÷ ideal
//! DRAM bytes    = wave-panel model (§6.2): a wave of W tiles covers r = min(8, T_M, W) tile rows
//!                 (Triton's GROUP_M = 8 raster) × c = min(⌈W/r⌉, T_N) columns and reads
//!                 K·(min(r·BM, M)·e_A + min(c·BN, N)·e_B); times tiles/W waves, plus C once;
//!                 clamped to [ideal, tiled]
//! ```
//!
//! A bias adds `N` values (stored unquantised) read once per tile row, and `M·N` FLOPs.
//!
//! **Modelled time** (§3, synthesis): each wave costs the larger of its math and its memory time;
//! `time = Σ_waves max(math_w, mem_w)` with
//!
//! ```text
//! per tile  = max(2·BM·BN·(T_K·BK) / (peak · compute_efficiency / SMs),        tensor cores
//!                 2·T_K·BK·(BM·e_A + BN·e_B) / smem_bandwidth_per_SM)           shared-memory feed
//! math_w    = ⌈n_w / SMs⌉ · per tile
//! mem_w     = DRAM · (n_w / tiles) / (bandwidth · bandwidth_efficiency · min(n_w, SMs) / SMs)
//! smem_bandwidth_per_SM = bf16 peak / SMs / tensor_flops_per_smem_byte  (128 B per SM clock)
//! ```
//!
//! for a wave of `n_w` tiles: the SM with the most CTAs sets the math time (a partial tail wave
//! costs as much as a full one when every SM still holds one tile). Every K step writes the A and
//! B tiles into shared memory and the MMAs read them once, so a tile whose `BM·BN / (BM·e_A +
//! BN·e_B)` is below the GPU's tensor FLOPs per shared-memory byte is fed more slowly than its
//! tensor cores compute (small tiles on Hopper). Only the SMs holding a tile issue loads, so a wave
//! that occupies a fraction of the SMs gets that fraction of the bandwidth (an assumption; real HBM
//! saturates with somewhat fewer SMs). The efficiencies are the ledger's ([`crate::roofline::Efficiency`]), so
//! the ratio of this time to the operator's roofline time isolates what tiling adds; the
//! shared-memory feed is taken at its full rate.

use super::candidates::{Candidate, TileConfig, TileRequest, CANDIDATES};
use super::occupancy::{occupancy, BlockResources, Limiter, Occupancy, MAX_REGISTERS_PER_THREAD};
use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::gemm::{gemm_flops, Gemm};
use crate::hardware::Gpu;
use crate::limits::{MAX_DIM, MAX_EXPERTS};
use crate::precision::{gemm_math, MathFormat, Precision};
use crate::roofline::{Bound, Efficiency};
use serde::Serialize;

/// Largest M accepted (tokens in one GEMM): 2⁴⁰.
pub const MAX_M: u64 = 1 << 40;
/// Rows of tiles a wave covers before moving to the next column block (Triton's `GROUP_M`).
pub const GROUP_M: u64 = 8;
/// Relative difference below which two modelled times count as equal when choosing a tile.
const TIME_TIE: f64 = 1e-9;

/// A GEMM to tile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GemmShape {
    /// Rows of A and C (tokens).
    pub m: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Reduction dimension.
    pub k: u64,
    /// Independent products of this shape (experts, heads), each with its own B.
    pub batch: u64,
    /// Storage of A (activations).
    pub a: Precision,
    /// Storage of B (weights).
    pub b: Precision,
    /// Storage of C (output).
    pub c: Precision,
    /// A bias vector is added to every output row.
    pub bias: bool,
}

impl GemmShape {
    /// A validated shape: `m` in 1..=2⁴⁰, `n` and `k` in 1..=2²⁴, `batch` in 1..=2¹⁶.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        m: u64,
        n: u64,
        k: u64,
        batch: u64,
        a: Precision,
        b: Precision,
        c: Precision,
        bias: bool,
    ) -> Result<Self> {
        for (field, v, max) in [("m", m, MAX_M), ("n", n, MAX_DIM), ("k", k, MAX_DIM), ("batch", batch, MAX_EXPERTS)] {
            if !(1..=max).contains(&v) {
                return Err(Error::invalid(field, v, integer_in(1, max)));
            }
        }
        Ok(GemmShape { m, n, k, batch, a, b, c, bias })
    }

    /// The math format it runs in on `gpu` ([`gemm_math`] with the GPU's fallback).
    pub fn math(&self, gpu: &Gpu) -> MathFormat {
        gpu.supported_math(gemm_math(self.b, self.a))
    }

    /// The GEMM's cost as the ledger counts it ([`Gemm`], `batch` instances).
    pub fn cost(&self) -> Gemm {
        Gemm {
            m: self.m as f64,
            n: self.n,
            k: self.k,
            weight: self.b,
            activation: self.a,
            instances: self.batch as f64,
            bias: self.bias,
        }
    }

    /// FLOPs of the product, as the ledger counts them ([`Gemm::flops`] of [`GemmShape::cost`]).
    pub fn flops(&self) -> f64 {
        self.cost().flops()
    }

    fn bias_bytes(&self) -> f64 {
        if self.bias {
            self.b.unquantised().bytes()
        } else {
            0.0
        }
    }

    /// Bytes with every operand read once and C written once.
    pub fn ideal_bytes(&self) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        self.batch as f64
            * (self.a.bytes() * m * k + self.b.bytes() * k * n + self.c.bytes() * m * n + self.bias_bytes() * n)
    }
}

/// Where a tile sits in the grid, by how much of it is padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TileClassKind {
    /// Every row and column real.
    Full,
    /// The last tile column: some columns are padding (N does not divide).
    ColumnEdge,
    /// The last tile row: some rows are padding (M does not divide; all of decode's tiles).
    RowEdge,
    /// The last row and column.
    Corner,
}

impl TileClassKind {
    /// Words for tables.
    pub fn name(self) -> &'static str {
        match self {
            TileClassKind::Full => "full tiles",
            TileClassKind::ColumnEdge => "last tile column",
            TileClassKind::RowEdge => "last tile row",
            TileClassKind::Corner => "corner tile",
        }
    }
}

/// Tiles of one class: how many, how much of each is real, what they compute and load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TileClass {
    /// Which class.
    pub kind: TileClassKind,
    /// Tiles in the class (over the batch).
    pub count: u64,
    /// Real rows per tile.
    pub rows: u64,
    /// Real columns per tile.
    pub cols: u64,
    /// Useful FLOPs of the class.
    pub flops: f64,
    /// FLOPs executed (whole tiles, padded K).
    pub padded_flops: f64,
    /// Bytes the class's tiles load and store: its A and B strips and its C tile.
    pub tiled_bytes: f64,
}

/// One GEMM tiled with one tile shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GemmTiling {
    /// The GEMM.
    pub shape: GemmShape,
    /// The tile (BK already scaled to the math width).
    pub tile: TileConfig,
    /// Where the tile comes from (`forced` for a user's tile).
    pub source: &'static str,
    /// Math format.
    pub math: MathFormat,
    /// Threads per block.
    pub threads: u64,
    /// Estimated registers per thread.
    pub registers_per_thread: u64,
    /// Shared memory of the main-loop buffers, bytes.
    pub smem_bytes: u64,
    /// Occupancy on one SM.
    pub occupancy: Occupancy,
    /// Tile rows ⌈M/BM⌉.
    pub tiles_m: u64,
    /// Tile columns ⌈N/BN⌉.
    pub tiles_n: u64,
    /// K steps ⌈K/BK⌉.
    pub tiles_k: u64,
    /// Tiles (thread blocks) over the batch.
    pub tiles: u64,
    /// SMs of the GPU.
    pub sm_count: u64,
    /// Tiles resident at once: SMs × CTAs per SM.
    pub wave_size: u64,
    /// ⌈tiles / wave size⌉.
    pub waves: u64,
    /// Tiles in the last wave.
    pub tail_tiles: u64,
    /// Tail tiles ÷ wave size.
    pub tail_utilisation: f64,
    /// Tiles ÷ (waves × wave size).
    pub wave_efficiency: f64,
    /// SMs holding at least one tile in the first wave.
    pub busy_sms: u64,
    /// Useful FLOPs.
    pub flops: f64,
    /// FLOPs executed by whole tiles.
    pub padded_flops: f64,
    /// Bytes with each operand read once.
    pub ideal_bytes: f64,
    /// Bytes the tiles load and store with no reuse between tiles.
    pub tiled_bytes: f64,
    /// A's share of the tiled bytes (`e_A·M·K·T_N`).
    pub tiled_a_bytes: f64,
    /// B's share (`e_B·K·N·T_M`).
    pub tiled_b_bytes: f64,
    /// Wave-panel estimate of HBM traffic.
    pub dram_bytes: f64,
    /// Tiled ÷ ideal bytes.
    pub reuse_factor: f64,
    /// Σ over waves of the math part (the larger of tensor cores and shared-memory feed), seconds.
    pub compute_s: f64,
    /// Σ over waves of the shared-memory feed alone, seconds (0 when the GPU does not give it).
    pub smem_feed_s: f64,
    /// Σ over waves of the memory part, seconds.
    pub memory_s: f64,
    /// Modelled time, seconds.
    pub time_s: f64,
    /// Whether math or memory sets most of the time.
    pub bound: Bound,
    /// The tile classes (full, last column, last row, corner; empty ones have count 0).
    pub classes: [TileClass; 4],
}

/// Why a tile cannot run on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Rejection {
    /// Its buffers exceed the per-block shared memory.
    SharedMemory {
        /// Bytes it needs.
        needed_bytes: u64,
        /// The per-block limit.
        limit_bytes: u64,
    },
    /// It needs more registers per thread than exist (it would spill).
    Registers {
        /// Registers per thread it needs.
        needed: u64,
    },
    /// Too many tiles to count.
    TooManyTiles,
}

impl Rejection {
    fn into_error(self, tile: &TileConfig, gpu: &Gpu) -> Error {
        let expected = match self {
            Rejection::SharedMemory { needed_bytes, limit_bytes } => format!(
                "a tile whose {} stages fit in shared memory: it needs {needed_bytes} B per block, {} allows {limit_bytes} B",
                tile.stages, gpu.name
            ),
            Rejection::Registers { needed } => {
                format!("a tile that needs at most {MAX_REGISTERS_PER_THREAD} registers per thread: it needs {needed}")
            }
            Rejection::TooManyTiles => "fewer than 2^64 tiles".to_string(),
        };
        Error::invalid("tile", tile, expected)
    }
}

fn checked_tiles(s: &GemmShape, t: &TileConfig) -> Option<(u64, u64, u64, u64)> {
    let (tm, tn, tk) = (s.m.div_ceil(t.bm), s.n.div_ceil(t.bn), s.k.div_ceil(t.bk));
    let tiles = tm.checked_mul(tn)?.checked_mul(s.batch)?;
    Some((tm, tn, tk, tiles))
}

/// Tile `shape` with `tile` (BK as it will run) on `gpu`.
pub fn tile_gemm(
    shape: &GemmShape,
    tile: TileConfig,
    source: &'static str,
    gpu: &Gpu,
    eff: Efficiency,
) -> std::result::Result<GemmTiling, Rejection> {
    let chip = &gpu.onchip;
    let (e_a, e_b, e_c) = (shape.a.bytes(), shape.b.bytes(), shape.c.bytes());
    let smem = tile.smem_bytes(e_a, e_b);
    if smem > chip.smem_per_block_bytes {
        return Err(Rejection::SharedMemory { needed_bytes: smem, limit_bytes: chip.smem_per_block_bytes });
    }
    let regs = tile.registers_per_thread(chip.warp_size);
    if regs > MAX_REGISTERS_PER_THREAD {
        return Err(Rejection::Registers { needed: regs });
    }
    let threads = tile.threads(chip.warp_size);
    let occ = occupancy(chip, &BlockResources { threads, registers_per_thread: regs, smem_bytes: smem });
    if occ.ctas_per_sm == 0 {
        return Err(match occ.limiter {
            Limiter::Registers => Rejection::Registers { needed: regs },
            _ => Rejection::SharedMemory { needed_bytes: smem, limit_bytes: chip.smem_per_block_bytes },
        });
    }
    let (tm, tn, tk, tiles) = checked_tiles(shape, &tile).ok_or(Rejection::TooManyTiles)?;
    let math = shape.math(gpu);
    let (m, n, k, batch) = (shape.m as f64, shape.n as f64, shape.k as f64, shape.batch as f64);
    let (bm, bn) = (tile.bm as f64, tile.bn as f64);
    let kp = (tk * tile.bk) as f64;
    let e_bias = shape.bias_bytes();

    // Tile classes: real rows and columns of the last tile row and column.
    let rows_last = shape.m - (tm - 1) * tile.bm;
    let cols_last = shape.n - (tn - 1) * tile.bn;
    let class = |kind, count: u64, rows: u64, cols: u64| {
        let (r, c, cnt) = (rows as f64, cols as f64, count as f64);
        TileClass {
            kind,
            count,
            rows,
            cols,
            flops: gemm_flops(r, c, k, cnt, shape.bias),
            padded_flops: gemm_flops(bm, bn, kp, cnt, shape.bias),
            tiled_bytes: cnt * (r * k * e_a + k * c * e_b + r * c * e_c + c * e_bias),
        }
    };
    let (full_m, full_n) =
        (if rows_last == tile.bm { tm } else { tm - 1 }, if cols_last == tile.bn { tn } else { tn - 1 });
    let (edge_m, edge_n) = (tm - full_m, tn - full_n);
    let classes = [
        class(TileClassKind::Full, shape.batch * full_m * full_n, tile.bm, tile.bn),
        class(TileClassKind::ColumnEdge, shape.batch * full_m * edge_n, tile.bm, cols_last),
        class(TileClassKind::RowEdge, shape.batch * edge_m * full_n, rows_last, tile.bn),
        class(TileClassKind::Corner, shape.batch * edge_m * edge_n, rows_last, cols_last),
    ];

    let flops = shape.flops();
    let padded_flops = gemm_flops((tm * tile.bm) as f64, (tn * tile.bn) as f64, kp, batch, shape.bias);
    let ideal = shape.ideal_bytes();
    let tiled_a = batch * e_a * m * k * tn as f64;
    let tiled_b = batch * e_b * k * n * tm as f64;
    let out = batch * (e_c * m * n + e_bias * n * tm as f64);
    let tiled = tiled_a + tiled_b + out;

    let s = gpu.sm_count;
    let wave = s * occ.ctas_per_sm;
    let waves = tiles.div_ceil(wave);
    let tail = tiles - (waves - 1) * wave;
    // Wave-panel DRAM estimate.
    let r = GROUP_M.min(tm).min(wave);
    let c = wave.div_ceil(r).min(tn);
    let panel = k * ((r * tile.bm).min(shape.m) as f64 * e_a + (c * tile.bn).min(shape.n) as f64 * e_b);
    let dram = (tiles as f64 / wave as f64 * panel + batch * (e_c * m * n + e_bias * n)).clamp(ideal, tiled.max(ideal));

    let peak = gpu.peak(math).unwrap_or(gpu.peak_flops_per_s.vector) * eff.compute;
    let bw = gpu.memory_bandwidth_bytes_per_s * eff.bandwidth;
    let tile_flops = gemm_flops(bm, bn, kp, 1.0, shape.bias);
    let sf = s as f64;
    let smem_bw = match chip.tensor_flops_per_smem_byte {
        r if r > 0.0 => gpu.peak(MathFormat::Bf16).unwrap_or(gpu.peak_flops_per_s.bf16) / sf / r,
        _ => f64::INFINITY,
    };
    let tile_feed_s = 2.0 * kp * (bm * e_a + bn * e_b) / smem_bw;
    let tile_s = (tile_flops / (peak / sf)).max(tile_feed_s);
    let wave_parts = |n_w: u64| {
        let math_s = n_w.div_ceil(s) as f64 * tile_s;
        let mem_s = dram * (n_w as f64 / tiles as f64) / (bw * n_w.min(s) as f64 / sf);
        (math_s, mem_s)
    };
    let (full_math, full_mem) = wave_parts(wave);
    let (tail_math, tail_mem) = wave_parts(tail);
    let full = (waves - 1) as f64;
    let smem_feed_s = (full * wave.div_ceil(s) as f64 + tail.div_ceil(s) as f64) * tile_feed_s;
    let compute_s = full * full_math + tail_math;
    let memory_s = full * full_mem + tail_mem;
    let time_s = full * full_math.max(full_mem) + tail_math.max(tail_mem);

    Ok(GemmTiling {
        shape: *shape,
        tile,
        source,
        math,
        threads,
        registers_per_thread: regs,
        smem_bytes: smem,
        occupancy: occ,
        tiles_m: tm,
        tiles_n: tn,
        tiles_k: tk,
        tiles,
        sm_count: s,
        wave_size: wave,
        waves,
        tail_tiles: tail,
        tail_utilisation: tail as f64 / wave as f64,
        wave_efficiency: tiles as f64 / (waves * wave) as f64,
        busy_sms: tiles.min(s),
        flops,
        padded_flops,
        ideal_bytes: ideal,
        tiled_bytes: tiled,
        tiled_a_bytes: tiled_a,
        tiled_b_bytes: tiled_b,
        dram_bytes: dram,
        reuse_factor: tiled / ideal,
        compute_s,
        smem_feed_s,
        memory_s,
        time_s,
        bound: if compute_s > memory_s { Bound::Compute } else { Bound::Memory },
        classes,
    })
}

/// Tile `shape` with a tile the user forces; errors name the field `tile`.
pub fn tile_forced(shape: &GemmShape, req: &TileRequest, gpu: &Gpu, eff: Efficiency) -> Result<GemmTiling> {
    let tile = req.resolve(shape.a.bytes(), shape.b.bytes(), gpu.onchip.smem_per_block_bytes);
    tile_gemm(shape, tile, "forced", gpu, eff).map_err(|r| r.into_error(&tile, gpu))
}

/// One candidate's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CandidateOutcome {
    /// The candidate, BK scaled to the math width.
    pub tile: TileConfig,
    /// Where it comes from.
    pub source: &'static str,
    /// Its tiling, or why it cannot run.
    pub result: std::result::Result<GemmTiling, Rejection>,
}

/// Every candidate of [`CANDIDATES`] on this GEMM and GPU, in table order.
pub fn candidates<'a>(
    shape: &'a GemmShape,
    gpu: &'a Gpu,
    eff: Efficiency,
) -> impl Iterator<Item = CandidateOutcome> + 'a {
    let math = shape.math(gpu);
    CANDIDATES.iter().map(move |Candidate { tile, source }| {
        let tile = tile.for_math(math);
        CandidateOutcome { tile, source, result: tile_gemm(shape, tile, source, gpu, eff) }
    })
}

/// `a` is a better choice than `b`: lower modelled time; at equal time fewer padded FLOPs, then
/// fewer DRAM bytes, then fewer tiled bytes.
pub fn better(a: &GemmTiling, b: &GemmTiling) -> bool {
    let tie = TIME_TIE * a.time_s.max(b.time_s);
    if (a.time_s - b.time_s).abs() > tie {
        return a.time_s < b.time_s;
    }
    (a.padded_flops, a.dram_bytes, a.tiled_bytes) < (b.padded_flops, b.dram_bytes, b.tiled_bytes)
}

/// The default tile and the runner-up it beat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TileChoice {
    /// The chosen tiling.
    pub best: GemmTiling,
    /// The next best candidate, if any other fits.
    pub runner_up: Option<GemmTiling>,
    /// Candidates that fit the GPU.
    pub fitting: usize,
    /// Candidates considered.
    pub considered: usize,
}

/// The candidate with the lowest modelled time ([`better`] breaks ties).
pub fn choose_tile(shape: &GemmShape, gpu: &Gpu, eff: Efficiency) -> Result<TileChoice> {
    let mut best: Option<GemmTiling> = None;
    let mut runner_up: Option<GemmTiling> = None;
    let (mut fitting, mut considered) = (0, 0);
    for o in candidates(shape, gpu, eff) {
        considered += 1;
        let Ok(t) = o.result else { continue };
        fitting += 1;
        match &best {
            Some(b) if !better(&t, b) => {
                if runner_up.as_ref().is_none_or(|r| better(&t, r)) {
                    runner_up = Some(t);
                }
            }
            _ => {
                runner_up = best.take();
                best = Some(t);
            }
        }
    }
    let best = best.ok_or_else(|| Error::Unsupported {
        what: format!("GEMM {}x{}x{} on {}", shape.m, shape.n, shape.k, gpu.name),
        reason: format!(
            "no candidate tile fits its {} B of shared memory per block; force one with a tile BMxBNxBKxSTAGES",
            gpu.onchip.smem_per_block_bytes
        ),
    })?;
    Ok(TileChoice { best, runner_up, fitting, considered })
}

/// Everything the tiling explorer shows for one GEMM: the tile used (forced, or the default
/// choice), the runner-up it beat, and every candidate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmExploration {
    /// The tiling shown.
    pub chosen: GemmTiling,
    /// The user forced the tile.
    pub forced: bool,
    /// The best candidate after the chosen one (for a forced tile: the default choice).
    pub runner_up: Option<GemmTiling>,
    /// Candidates that fit.
    pub fitting: usize,
    /// Every candidate, in table order.
    pub candidates: Vec<CandidateOutcome>,
}

/// Explore one GEMM: the forced tile if given, else the default choice.
pub fn explore_gemm(
    shape: &GemmShape,
    gpu: &Gpu,
    eff: Efficiency,
    forced: Option<&TileRequest>,
) -> Result<GemmExploration> {
    let candidates: Vec<CandidateOutcome> = candidates(shape, gpu, eff).collect();
    let choice = choose_tile(shape, gpu, eff);
    let (chosen, runner_up, fitting) = match (forced, choice) {
        (Some(req), choice) => {
            let t = tile_forced(shape, req, gpu, eff)?;
            let fitting = choice.as_ref().map_or(0, |c| c.fitting);
            (t, choice.ok().map(|c| c.best), fitting)
        }
        (None, choice) => {
            let c = choice?;
            (c.best, c.runner_up, c.fitting)
        }
    };
    Ok(GemmExploration { chosen, forced: forced.is_some(), runner_up, fitting, candidates })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::builtin_gpus;

    fn gpu(name: &str) -> &'static Gpu {
        builtin_gpus().iter().find(|g| g.name == name).unwrap()
    }

    fn bf16(m: u64, n: u64, k: u64) -> GemmShape {
        GemmShape::new(m, n, k, 1, Precision::Bf16, Precision::Bf16, Precision::Bf16, false).unwrap()
    }

    fn tile(bm: u64, bn: u64, bk: u64, stages: u64, warps: u64) -> TileConfig {
        TileConfig { bm, bn, bk, stages, warps }
    }

    #[test]
    fn an_evenly_divided_gemm_has_no_padding_and_rereads_by_the_grid() {
        // 4096×14336×4096 with 128×256×64: T_M = 32, T_N = 56, T_K = 64, 1,792 tiles, no padding.
        let t =
            tile_gemm(&bf16(4096, 14336, 4096), tile(128, 256, 64, 3, 8), "t", gpu("h100-sxm"), Efficiency::default())
                .unwrap();
        assert_eq!((t.tiles_m, t.tiles_n, t.tiles_k, t.tiles), (32, 56, 64, 1792));
        assert_eq!(t.padded_flops, t.flops);
        assert_eq!(t.flops, 2.0 * 4096.0 * 14336.0 * 4096.0);
        // Ideal: 2·(4096·4096 + 4096·14336 + 4096·14336) = 268,435,456 B.
        assert_eq!(t.ideal_bytes, 2.0 * (4096.0 * 4096.0 + 2.0 * 4096.0 * 14336.0));
        // Tiled: A re-read by 56 tile columns, B by 32 tile rows, C once.
        let tiled = 2.0 * (4096.0 * 4096.0 * 56.0 + 4096.0 * 14336.0 * 32.0 + 4096.0 * 14336.0);
        assert_eq!(t.tiled_bytes, tiled);
        assert_eq!(t.reuse_factor, tiled / t.ideal_bytes);
        // One CTA per SM (147,456 B of buffers): waves of 132, ⌈1792/132⌉ = 14, tail 1792 − 13·132 = 76.
        assert_eq!((t.occupancy.ctas_per_sm, t.wave_size, t.waves, t.tail_tiles), (1, 132, 14, 76));
        assert_eq!(t.classes[0].count, 1792);
        assert!(t.classes[1..].iter().all(|c| c.count == 0));
        assert_eq!(t.bound, Bound::Compute);
        // DRAM (wave-panel) lies between ideal and tiled.
        assert!(t.ideal_bytes <= t.dram_bytes && t.dram_bytes < t.tiled_bytes);
    }

    #[test]
    fn an_uneven_gemm_pads_the_last_row_and_column() {
        // 1000×1000×1000 with 128×128×64 (4 stages): T_M = T_N = 8 (1024 covered), T_K = 16.
        let t =
            tile_gemm(&bf16(1000, 1000, 1000), tile(128, 128, 64, 4, 4), "t", gpu("h100-sxm"), Efficiency::default())
                .unwrap();
        assert_eq!((t.tiles_m, t.tiles_n, t.tiles_k, t.tiles), (8, 8, 16, 64));
        // Padded: 2·1024·1024·1024 vs 2·10⁹.
        assert_eq!(t.padded_flops, 2.0 * 1024.0f64.powi(3));
        assert_eq!(t.flops, 2e9);
        // Classes: 7·7 full; 7 in the last column with 1000 − 896 = 104 columns; 7 in the last row
        // with 104 rows; one 104×104 corner.
        let counts: Vec<(u64, u64, u64)> = t.classes.iter().map(|c| (c.count, c.rows, c.cols)).collect();
        assert_eq!(counts, vec![(49, 128, 128), (7, 128, 104), (7, 104, 128), (1, 104, 104)]);
        // Classes add up to the tile level exactly.
        let sum = |f: fn(&TileClass) -> f64| t.classes.iter().map(f).sum::<f64>();
        assert_eq!(sum(|c| c.padded_flops), t.padded_flops);
        assert!((sum(|c| c.flops) - t.flops).abs() < 1e-6 * t.flops);
        assert!((sum(|c| c.tiled_bytes) - t.tiled_bytes).abs() < 1e-9 * t.tiled_bytes);
        // Tiled bytes: 2·(10⁶·8 + 10⁶·8 + 10⁶) = 34 MB; ideal 6 MB; reuse 17/3.
        assert_eq!(t.tiled_bytes, 34e6);
        assert_eq!(t.ideal_bytes, 6e6);
        // 64 tiles on 132 SMs: one wave, 64 SMs busy.
        assert_eq!((t.waves, t.busy_sms, t.tail_tiles), (1, 64, 64));
    }

    #[test]
    fn decode_m1_is_one_real_row_per_tile() {
        // M = 1, N = 14336, K = 4096 with 64×64×64 (4 stages, 4 warps) on an H100:
        // T_M = 1, T_N = 224, 224 tiles, every one in the last (padded) row with 1 of 64 rows real.
        let t = tile_gemm(&bf16(1, 14336, 4096), tile(64, 64, 64, 4, 4), "t", gpu("h100-sxm"), Efficiency::default())
            .unwrap();
        assert_eq!((t.tiles_m, t.tiles_n, t.tiles), (1, 224, 224));
        assert_eq!(t.classes[2].count, 224);
        assert_eq!(t.classes[2].rows, 1);
        // Padded FLOPs are 64× the useful ones.
        assert_eq!(t.padded_flops, 64.0 * t.flops);
        // A (one 8 KB row) is re-read by all 224 tiles; B (the weights) once.
        assert_eq!(t.tiled_a_bytes, 2.0 * 4096.0 * 224.0);
        assert_eq!(t.tiled_b_bytes, 2.0 * 4096.0 * 14336.0);
        // smem 4·(64·64 + 64·64)·2 = 65,536 → 3 CTAs/SM; wave 396 ≥ 224: one wave, 132 SMs busy.
        assert_eq!((t.occupancy.ctas_per_sm, t.waves, t.busy_sms), (3, 1, 132));
        assert_eq!(t.bound, Bound::Memory);
        // Memory time = all DRAM bytes at 80 % of 3.35 TB/s (every SM busy).
        assert!((t.time_s - t.dram_bytes / (3.35e12 * 0.8)).abs() < 1e-15);
    }

    #[test]
    fn decode_default_tile_fills_the_sms_with_little_padding() {
        let c = choose_tile(&bf16(1, 14336, 4096), gpu("h100-sxm"), Efficiency::default()).unwrap();
        // A 16-row tile wastes least, and one wave keeps every SM loading weights.
        assert_eq!(c.best.tile.bm, 16);
        assert_eq!(c.best.busy_sms, 132);
        assert_eq!(c.best.waves, 1);
        assert!(c.runner_up.is_some());
        assert_eq!(c.considered, CANDIDATES.len());
        // A 128×256 tile leaves 76 of 132 SMs idle (56 tiles) and models slower.
        let big =
            tile_gemm(&bf16(1, 14336, 4096), tile(128, 256, 64, 3, 8), "t", gpu("h100-sxm"), Efficiency::default())
                .unwrap();
        assert_eq!((big.tiles, big.busy_sms), (56, 56));
        assert!(big.time_s > c.best.time_s * 2.0);
    }

    #[test]
    fn small_tiles_on_hopper_wait_for_shared_memory() {
        // 128×32×32 (4 stages) on 4096×14336×4096 bf16, H100: per tile, the tensor cores need
        // 2·128·32·4096 FLOP / (0.6 · 989.4 TFLOP/s / 132) = 7.46 µs; the shared-memory feed moves
        // 2·4096·(128·2 + 32·2) B = 2.62 MB at 989.4e12 / 132 / 32 = 234 GB/s = 11.2 µs.
        let h100 = gpu("h100-sxm");
        let t = tile_gemm(&bf16(4096, 14336, 4096), tile(128, 32, 32, 4, 4), "t", h100, Efficiency::default()).unwrap();
        let feed = 2.0 * 4096.0 * (128.0 * 2.0 + 32.0 * 2.0) / (989.4e12 / 132.0 / 32.0);
        let tensor = 2.0 * 128.0 * 32.0 * 4096.0 / (0.6 * 989.4e12 / 132.0);
        assert!(feed > tensor);
        // 14,336 tiles in waves of 660 (5 CTAs/SM): 21 full waves of 5 tiles per SM and a tail of
        // 476 tiles, 4 on the busiest SM.
        assert_eq!((t.occupancy.ctas_per_sm, t.waves, t.tail_tiles), (5, 22, 476));
        let rel = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        assert!(rel(t.smem_feed_s, (21.0 * 5.0 + 4.0) * feed));
        assert!(rel(t.compute_s, t.smem_feed_s));
        // 128×256 reaches 2·128·256 / (2·(128 + 256)) = 42.7 FLOP/B ≥ 32: the tensor cores set it.
        let big =
            tile_gemm(&bf16(4096, 14336, 4096), tile(128, 256, 64, 3, 8), "t", h100, Efficiency::default()).unwrap();
        assert!(big.smem_feed_s < big.compute_s);
        assert!(big.time_s < t.time_s);
    }

    #[test]
    fn tiles_never_compute_less_or_move_less_than_the_gemm() {
        for (m, n, k) in [(1, 1, 1), (7, 4096, 4096), (333, 1000, 17), (8192, 128, 8192), (1, 128256, 4096)] {
            for g in ["h100-sxm", "a100-80gb-sxm", "l4", "mi300x"] {
                for o in candidates(&bf16(m, n, k), gpu(g), Efficiency::default()) {
                    let Ok(t) = o.result else { continue };
                    assert!(t.padded_flops >= t.flops, "{m}x{n}x{k} {}", t.tile);
                    assert!(t.tiled_bytes >= t.ideal_bytes, "{m}x{n}x{k} {}", t.tile);
                    assert!(t.dram_bytes >= t.ideal_bytes && t.dram_bytes <= t.tiled_bytes);
                    assert!(t.time_s > 0.0 && t.time_s.is_finite());
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_shape_on_any_gpu_keeps_the_tile_invariants(
            m in 1u64..20_000, n in 1u64..40_000, k in 1u64..20_000, batch in 1u64..9, g in 0usize..16, fp8: bool,
        ) {
            let p = if fp8 { Precision::Fp8 } else { Precision::Bf16 };
            let shape = GemmShape::new(m, n, k, batch, p, p, Precision::Bf16, m % 2 == 0).unwrap();
            let gpus = builtin_gpus();
            let gpu = &gpus[g % gpus.len()];
            for o in candidates(&shape, gpu, Efficiency::default()) {
                let Ok(t) = o.result else { continue };
                proptest::prop_assert!(t.padded_flops >= t.flops);
                proptest::prop_assert!(t.tiled_bytes >= t.ideal_bytes);
                proptest::prop_assert!(t.ideal_bytes <= t.dram_bytes && t.dram_bytes <= t.tiled_bytes);
                proptest::prop_assert!(t.waves * t.wave_size >= t.tiles && (t.waves - 1) * t.wave_size < t.tiles);
                let count: u64 = t.classes.iter().map(|c| c.count).sum();
                proptest::prop_assert_eq!(count, t.tiles);
                let sum = |f: fn(&TileClass) -> f64| t.classes.iter().map(f).sum::<f64>();
                proptest::prop_assert!((sum(|c| c.padded_flops) - t.padded_flops).abs() <= 1e-9 * t.padded_flops);
                proptest::prop_assert!((sum(|c| c.flops) - t.flops).abs() <= 1e-9 * t.flops);
                proptest::prop_assert!((sum(|c| c.tiled_bytes) - t.tiled_bytes).abs() <= 1e-9 * t.tiled_bytes);
                proptest::prop_assert!(t.time_s.is_finite() && t.time_s > 0.0);
            }
            proptest::prop_assert!(choose_tile(&shape, gpu, Efficiency::default()).is_ok());
        }
    }

    #[test]
    fn tiles_too_big_for_the_gpu_are_refused_with_the_field_named() {
        let req: TileRequest = "256x256x128x4".parse().unwrap();
        let e =
            tile_forced(&bf16(1, 4096, 4096), &req, gpu("h100-sxm"), Efficiency::default()).unwrap_err().to_string();
        // 4·(256·128 + 128·256)·2 = 524,288 B.
        assert!(e.starts_with("invalid `tile`: 256x256x128x4"), "{e}");
        assert!(e.contains("524288 B per block") && e.contains("232448 B"), "{e}");
        // On an L4 the CUTLASS SM80 default does not launch (§4 example 3).
        let l4 = candidates(&bf16(4096, 4096, 4096), gpu("l4"), Efficiency::default()).nth(1).unwrap();
        assert_eq!(l4.result.unwrap_err(), Rejection::SharedMemory { needed_bytes: 147_456, limit_bytes: 101_376 });
    }

    #[test]
    fn bad_dimensions_name_the_field() {
        let e = |m, n, k| {
            GemmShape::new(m, n, k, 1, Precision::Bf16, Precision::Bf16, Precision::Bf16, false)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(e(0, 1, 1), "invalid `m`: 0 (an integer from 1 to 1,099,511,627,776)");
        assert_eq!(e(1, 1 << 30, 1), "invalid `n`: 1073741824 (an integer from 1 to 16,777,216)");
        assert_eq!(e(1, 1, 0), "invalid `k`: 0 (an integer from 1 to 16,777,216)");
    }

    #[test]
    fn eight_bit_weights_double_bk_and_run_at_the_fp8_peak() {
        let s = GemmShape::new(4096, 4096, 4096, 1, Precision::Fp8, Precision::Fp8, Precision::Bf16, false).unwrap();
        let c = choose_tile(&s, gpu("h100-sxm"), Efficiency::default()).unwrap();
        assert_eq!(c.best.math, MathFormat::Fp8);
        assert!(c.best.tile.bk >= 64);
    }
}
