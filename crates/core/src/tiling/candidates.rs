//! Thread-block tile shapes: the candidate set the default choice is made from, and the shape a
//! user forces with `BMxBNxBK[xSTAGES]`.
//!
//! The candidates are the configurations of common kernels, listed for 16-bit operands
//! (`shared/research/gemm-tiling.md` §5, §8):
//!
//! | BM×BN×BK | stages | warps | from |
//! |---|---|---|---|
//! | 256×128×64 | 3 | 8 | cuBLAS's most efficient shape (NVIDIA Matrix Multiplication Background) |
//! | 128×256×64 | 3 | 8 | CUTLASS 2.x SM80 default; Triton tutorial |
//! | 128×128×64 | 4 | 4 | CUTLASS 3.x SM90 warp-specialised BF16 tile |
//! | 64×256×32 | 4 | 4 | Triton tutorial |
//! | 128×128×32 | 4 | 4 | Triton tutorial |
//! | 128×64×32 | 4 | 4 | Triton tutorial |
//! | 64×128×32 | 4 | 4 | Triton tutorial |
//! | 128×32×32 | 4 | 4 | Triton tutorial |
//! | 64×32×32 | 5 | 2 | Triton tutorial |
//! | 32×64×32 | 5 | 2 | Triton tutorial |
//! | 64×128×64 | 5 | 4 | vLLM SM80 int8, 32 < M ≤ 128; vLLM SM90 fp8, 64 < M ≤ 128 |
//! | 64×64×64 | 4 | 4 | vLLM SM90 fp8, M ≤ 64 (decode) |
//! | 32×64×64 | 5 | 4 | vLLM SM80 int8, 16 < M ≤ 32 (decode) |
//! | 16×64×64 | 5 | 4 | vLLM SM80 int8, M ≤ 16 (decode) |
//! | 16×64×256 | 4 | 4 | vLLM fused-MoE Triton config for A100, M ≤ 16 (decode) |
//!
//! BK scales with the width of the math: ×2 for 8-bit math (Triton's FP8 list, vLLM's int8 and fp8
//! tiles use BK = 128 where 16-bit uses 64), ×4 for 4-bit, ÷2 for fp32, so that a stage holds the
//! same bytes. Shared memory per block is `stages · (BM·BK·e_A + BK·BN·e_B)` (the epilogue reuses
//! the main loop's buffers; §4, checked against vLLM's comments).
//!
//! Registers per thread are estimated as the fp32 accumulators `BM·BN / threads` plus
//! [`REGISTER_OVERHEAD_PER_THREAD`] for operand fragments, addresses and loop state; a tile that
//! needs more than 255 would spill and is not a candidate.

use crate::error::{Error, Result};
use crate::precision::MathFormat;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Registers per thread beyond the accumulators (operand fragments, addresses, loop state). The
/// CUTLASS SM80 128×256×64 kernel holds 128 accumulators per thread in about 230 registers
/// (gemm-tiling.md §4 example 1: 102 beyond them, with double-buffered mma.sync fragments);
/// Hopper's wgmma reads operands from shared memory and needs fewer. 64 is between the two.
pub const REGISTER_OVERHEAD_PER_THREAD: u64 = 64;

/// Smallest and largest BM, BN and BK accepted.
pub const TILE_DIM_RANGE: (u64, u64) = (16, 1024);
/// Most pipeline stages accepted.
pub const MAX_STAGES: u64 = 16;

/// A thread-block tile: `BM × BN` outputs, stepping through K `BK` at a time with `stages`
/// shared-memory buffers in flight, computed by `warps` warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TileConfig {
    /// Rows of the output tile (tokens).
    pub bm: u64,
    /// Columns of the output tile.
    pub bn: u64,
    /// Depth of one K step.
    pub bk: u64,
    /// Pipeline stages (shared-memory buffers).
    pub stages: u64,
    /// Warps per thread block.
    pub warps: u64,
}

/// A candidate tile and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The tile for 16-bit operands.
    pub tile: TileConfig,
    /// The kernel configuration it is modelled on.
    pub source: &'static str,
}

const fn c(bm: u64, bn: u64, bk: u64, stages: u64, warps: u64, source: &'static str) -> Candidate {
    Candidate { tile: TileConfig { bm, bn, bk, stages, warps }, source }
}

/// The candidate set (see the module table).
pub const CANDIDATES: &[Candidate] = &[
    c(256, 128, 64, 3, 8, "cuBLAS 256x128"),
    c(128, 256, 64, 3, 8, "CUTLASS SM80 default / Triton"),
    c(128, 128, 64, 4, 4, "CUTLASS SM90 BF16"),
    c(64, 256, 32, 4, 4, "Triton tutorial"),
    c(128, 128, 32, 4, 4, "Triton tutorial"),
    c(128, 64, 32, 4, 4, "Triton tutorial"),
    c(64, 128, 32, 4, 4, "Triton tutorial"),
    c(128, 32, 32, 4, 4, "Triton tutorial"),
    c(64, 32, 32, 5, 2, "Triton tutorial"),
    c(32, 64, 32, 5, 2, "Triton tutorial"),
    c(64, 128, 64, 5, 4, "vLLM M<=128"),
    c(64, 64, 64, 4, 4, "vLLM SM90 M<=64"),
    c(32, 64, 64, 5, 4, "vLLM SM80 M<=32"),
    c(16, 64, 64, 5, 4, "vLLM SM80 M<=16"),
    c(16, 64, 256, 4, 4, "vLLM fused-MoE M<=16"),
];

impl TileConfig {
    /// The same tile for another math width: BK ×2 for 8-bit, ×4 for 4-bit, ÷2 for 32-bit.
    pub fn for_math(self, math: MathFormat) -> TileConfig {
        let bk = match math.bits() {
            4 => self.bk * 4,
            8 => self.bk * 2,
            32 => (self.bk / 2).max(8),
            _ => self.bk,
        };
        TileConfig { bk, ..self }
    }

    /// Warps for a tile given without them: one per 4,096 outputs (32 fp32 accumulators per
    /// thread), at least 4 and at most 16 (128×128 → 4, 128×256 → 8).
    pub fn default_warps(bm: u64, bn: u64) -> u64 {
        (bm * bn).div_ceil(4096).clamp(4, 16)
    }

    /// Threads per block.
    pub fn threads(&self, warp_size: u64) -> u64 {
        self.warps * warp_size
    }

    /// Estimated registers per thread: accumulators plus [`REGISTER_OVERHEAD_PER_THREAD`].
    pub fn registers_per_thread(&self, warp_size: u64) -> u64 {
        (self.bm * self.bn).div_ceil(self.threads(warp_size).max(1)) + REGISTER_OVERHEAD_PER_THREAD
    }

    /// Shared memory of the main-loop buffers, bytes: `stages · (BM·BK·e_a + BK·BN·e_b)`,
    /// rounded up to whole bytes.
    pub fn smem_bytes(&self, e_a: f64, e_b: f64) -> u64 {
        let per_stage = (self.bm * self.bk) as f64 * e_a + (self.bk * self.bn) as f64 * e_b;
        (self.stages as f64 * per_stage).ceil() as u64
    }
}

impl fmt::Display for TileConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}x{}", self.bm, self.bn, self.bk, self.stages)
    }
}

/// A tile the user forces: `BMxBNxBK` or `BMxBNxBKxSTAGES`. Without stages the tile gets
/// the most stages up to 4 (BK ≤ 32) or 3 (larger BK) that fit the GPU's shared memory per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileRequest {
    /// Rows.
    pub bm: u64,
    /// Columns.
    pub bn: u64,
    /// K step.
    pub bk: u64,
    /// Pipeline stages, if given.
    pub stages: Option<u64>,
}

const TILE_EXPECTED: &str = "BMxBNxBK or BMxBNxBKxSTAGES, e.g. 128x128x64 or 128x128x64x4; BM, BN, BK multiples of 16 from 16 to 1,024, stages from 1 to 16";

impl FromStr for TileRequest {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::invalid("tile", format!("{s:?}"), TILE_EXPECTED);
        let parts: Vec<&str> = s.trim().split(['x', 'X', '×']).map(str::trim).collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(bad());
        }
        let mut v = [0u64; 4];
        for (slot, p) in v.iter_mut().zip(&parts) {
            *slot = p.parse().map_err(|_| bad())?;
        }
        let (lo, hi) = TILE_DIM_RANGE;
        if v[..3].iter().any(|d| !(lo..=hi).contains(d) || d % 16 != 0) {
            return Err(bad());
        }
        let stages = (parts.len() == 4).then_some(v[3]);
        if stages.is_some_and(|s| !(1..=MAX_STAGES).contains(&s)) {
            return Err(bad());
        }
        Ok(TileRequest { bm: v[0], bn: v[1], bk: v[2], stages })
    }
}

impl TileRequest {
    /// The tile with its stages resolved against a per-block shared-memory limit: the given
    /// count, or the default (4 for BK ≤ 32, else 3) reduced while it does not fit, down to 2.
    pub fn resolve(&self, e_a: f64, e_b: f64, smem_limit_bytes: u64) -> TileConfig {
        let warps = TileConfig::default_warps(self.bm, self.bn);
        let mut t = TileConfig { bm: self.bm, bn: self.bn, bk: self.bk, stages: 0, warps };
        t.stages = match self.stages {
            Some(s) => s,
            None => {
                let mut s = if self.bk <= 32 { 4 } else { 3 };
                while s > 2 && (TileConfig { stages: s, ..t }).smem_bytes(e_a, e_b) > smem_limit_bytes {
                    s -= 1;
                }
                s
            }
        };
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_buffers_match_vllms_comments() {
        // vLLM SM80 int8 configs (gemm-tiling.md §4): 128×128×64 × 5 stages = 81,920 B,
        // 64×128×128 × 5 = 122,880 B, 32×64×128 × 5 = 61,440 B, 16×64×128 × 5 = 51,200 B.
        let t = |bm, bn, bk| TileConfig { bm, bn, bk, stages: 5, warps: 4 };
        assert_eq!(t(128, 128, 64).smem_bytes(1.0, 1.0), 81_920);
        assert_eq!(t(64, 128, 128).smem_bytes(1.0, 1.0), 122_880);
        assert_eq!(t(32, 64, 128).smem_bytes(1.0, 1.0), 61_440);
        assert_eq!(t(16, 64, 128).smem_bytes(1.0, 1.0), 51_200);
        // The Triton table's 128×256×64 × 3 at fp16: 147,456 B.
        assert_eq!(TileConfig { bm: 128, bn: 256, bk: 64, stages: 3, warps: 8 }.smem_bytes(2.0, 2.0), 147_456);
    }

    #[test]
    fn bk_scales_with_the_math_width_so_a_stage_keeps_its_bytes() {
        let t = CANDIDATES[1].tile;
        assert_eq!(t.for_math(MathFormat::Fp8).bk, 128);
        assert_eq!(t.for_math(MathFormat::Fp4).bk, 256);
        assert_eq!(t.for_math(MathFormat::Bf16), t);
        assert_eq!(t.for_math(MathFormat::Fp8).smem_bytes(1.0, 1.0), t.smem_bytes(2.0, 2.0));
    }

    #[test]
    fn registers_are_accumulators_plus_overhead() {
        // 128×256 over 8 warps = 256 threads: 128 fp32 accumulators + 64.
        assert_eq!(CANDIDATES[1].tile.registers_per_thread(32), 192);
        // 16×64 over 4 warps: 8 + 64.
        assert_eq!(CANDIDATES[13].tile.registers_per_thread(32), 72);
        // Every candidate stays under 255 registers.
        assert!(CANDIDATES.iter().all(|c| c.tile.registers_per_thread(32) <= 255));
    }

    #[test]
    fn forced_tiles_parse_and_get_default_stages() {
        let r: TileRequest = "128x128x64".parse().unwrap();
        assert_eq!(r, TileRequest { bm: 128, bn: 128, bk: 64, stages: None });
        assert_eq!(r.resolve(2.0, 2.0, 232_448), TileConfig { bm: 128, bn: 128, bk: 64, stages: 3, warps: 4 });
        // 256×256×64 at 3 stages is 196,608 B: fits an H100 (232,448) but not an L4 (101,376),
        // where two stages (131,072 B) do not fit either; the occupancy check then refuses it.
        let big: TileRequest = "256x256x64".parse().unwrap();
        assert_eq!(big.resolve(2.0, 2.0, 232_448).stages, 3);
        assert_eq!(big.resolve(2.0, 2.0, 101_376).stages, 2);
        assert_eq!(big.resolve(2.0, 2.0, 232_448).warps, 16);
        assert_eq!("64X64x32x5".parse::<TileRequest>().unwrap().stages, Some(5));
    }

    #[test]
    fn bad_tiles_get_one_line_naming_the_field() {
        for bad in
            ["", "128", "128x128", "128x128x64x4x2", "0x128x64", "128x100x64", "128x128x64x0", "axbxc", "2048x128x64"]
        {
            let e = bad.parse::<TileRequest>().unwrap_err().to_string();
            assert!(e.starts_with("invalid `tile`: "), "{e}");
            assert!(e.contains("BMxBNxBK"), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}
