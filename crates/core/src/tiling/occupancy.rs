//! How many thread blocks (CTAs) of one kernel fit on an SM at once: the algorithm of CUDA's
//! `cuda_occupancy.h` (`cudaOccMaxActiveBlocksPerMultiprocessor`), as restated in
//! `shared/research/gemm-tiling.md` §4.
//!
//! ```text
//! warps_per_CTA     = ⌈T / warp_size⌉
//! regs_per_warp     = ceil_to(R · warp_size, 256)              allocation unit 256 registers
//! warps_per_subpart = ⌊(registers_per_sm / 4) / regs_per_warp⌋   4 SM sub-partitions
//! CTA_lim_regs      = ⌊4 · warps_per_subpart / warps_per_CTA⌋     (0 if R > 255, or if
//!                     regs_per_warp · ceil_to(warps_per_CTA, 4) > registers_per_sm)
//! smem_per_CTA      = ceil_to(smem + reserve, 128)               reserve = 1 KiB per block on CC ≥ 8.0
//! CTA_lim_smem      = ⌊max carve-out / smem_per_CTA⌋             (0 if smem > per-block limit)
//! carve-out         = smallest supported capacity ≥ smem_per_CTA · CTAs_per_SM (reported; the
//!                     CTA count is the same as at the largest carve-out)
//! CTA_lim_warps     = ⌊max_warps_per_sm / warps_per_CTA⌋
//! CTA_lim_blocks    = max_blocks_per_sm
//! CTAs_per_SM       = min of the four; the limiting factor is the one that attains it
//! ```
//!
//! The per-block reserve is read from the GPU's table as `smem_per_sm_bytes −
//! smem_per_block_bytes` (1 KiB on NVIDIA CC 8.x–10.x, 0 on AMD CDNA). The allocation
//! granularities (256 registers, 128 B of shared memory, 4 sub-partitions) are those of CC 8.x in
//! the header, assumed unchanged for 9.x/10.x (gemm-tiling.md §4 caveat) and applied to AMD CDNA
//! as an approximation.

use crate::hardware::OnChip;
use serde::Serialize;

/// Registers are allocated to a warp in units of this many (`cudaOccRegAllocationGranularity`).
pub const REGISTER_ALLOCATION_UNIT: u64 = 256;
/// Each SM's register file is split over this many sub-partitions (one warp scheduler each).
pub const SUBPARTITIONS: u64 = 4;
/// Most registers one thread may use.
pub const MAX_REGISTERS_PER_THREAD: u64 = 255;
/// Shared memory is allocated to a block in units of this many bytes (CC 8.x).
pub const SMEM_ALLOCATION_UNIT_BYTES: u64 = 128;

/// What one thread block of a kernel needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockResources {
    /// Threads per block.
    pub threads: u64,
    /// Registers per thread.
    pub registers_per_thread: u64,
    /// Shared memory per block (static + dynamic), bytes.
    pub smem_bytes: u64,
}

/// The resource that bounds CTAs per SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// The register file.
    Registers,
    /// Shared memory.
    SharedMemory,
    /// Resident warps (threads).
    Warps,
    /// Resident block slots.
    Blocks,
}

impl Limiter {
    /// Words for tables.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Warps => "warps",
            Limiter::Blocks => "block slots",
        }
    }
}

/// Occupancy of one kernel on one SM.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Occupancy {
    /// Resident CTAs per SM (0: the block cannot launch).
    pub ctas_per_sm: u64,
    /// Warps per CTA.
    pub warps_per_cta: u64,
    /// Registers allocated per warp.
    pub registers_per_warp: u64,
    /// Shared memory allocated per CTA (with the reserve and granularity), bytes.
    pub smem_per_cta_bytes: u64,
    /// Shared-memory carve-out the SM is configured with, bytes.
    pub smem_carveout_bytes: u64,
    /// CTAs the register file allows.
    pub limit_registers: u64,
    /// CTAs shared memory allows.
    pub limit_smem: u64,
    /// CTAs the warp slots allow.
    pub limit_warps: u64,
    /// CTAs the block slots allow.
    pub limit_blocks: u64,
    /// The binding limit (the first, in the order registers, shared memory, warps, blocks, of
    /// those that attain the minimum).
    pub limiter: Limiter,
    /// Resident warps ÷ the SM's maximum.
    pub occupancy: f64,
}

fn ceil_to(x: u64, g: u64) -> u64 {
    x.div_ceil(g) * g
}

impl Occupancy {
    /// Every limit that attains the minimum (ties are reported together, as the header does).
    pub fn limiters(&self) -> impl Iterator<Item = Limiter> + '_ {
        [
            (Limiter::Registers, self.limit_registers),
            (Limiter::SharedMemory, self.limit_smem),
            (Limiter::Warps, self.limit_warps),
            (Limiter::Blocks, self.limit_blocks),
        ]
        .into_iter()
        .filter(|(_, v)| *v == self.ctas_per_sm)
        .map(|(l, _)| l)
    }
}

/// CTAs per SM of a kernel whose blocks need `b`, on an SM with limits `chip`.
pub fn occupancy(chip: &OnChip, b: &BlockResources) -> Occupancy {
    let warps = b.threads.div_ceil(chip.warp_size).max(1);
    let regs_per_warp = ceil_to(b.registers_per_thread * chip.warp_size, REGISTER_ALLOCATION_UNIT);
    let limit_registers = if b.registers_per_thread > MAX_REGISTERS_PER_THREAD
        || regs_per_warp * ceil_to(warps, SUBPARTITIONS) > chip.registers_per_sm
    {
        0
    } else {
        // Warps per sub-partition the register file holds (a kernel with no registers: no limit).
        (chip.registers_per_sm / SUBPARTITIONS)
            .checked_div(regs_per_warp)
            .map_or(chip.max_blocks_per_sm, |per_subpartition| SUBPARTITIONS * per_subpartition / warps)
    };
    let limit_warps = chip.max_warps_per_sm / warps;
    let limit_blocks = chip.max_blocks_per_sm;
    let reserve = chip.smem_per_sm_bytes.saturating_sub(chip.smem_per_block_bytes);
    let smem = ceil_to(b.smem_bytes + reserve, SMEM_ALLOCATION_UNIT_BYTES);
    // Shared memory alone, at the largest carve-out; the SM is then configured with the smallest
    // carve-out that still holds the CTAs resident (the rest of the array serves as L1).
    let limit_smem = if b.smem_bytes > chip.smem_per_block_bytes {
        0
    } else {
        chip.smem_per_sm_bytes.checked_div(smem).unwrap_or(limit_blocks)
    };
    let ctas = limit_registers.min(limit_warps).min(limit_blocks).min(limit_smem);
    let want = smem.saturating_mul(ctas.max(1));
    let carveout = chip
        .smem_carveouts_kib
        .iter()
        .map(|k| k * 1024)
        .filter(|c| *c >= want)
        .min()
        .unwrap_or(chip.smem_per_sm_bytes)
        .min(chip.smem_per_sm_bytes);
    let limiter = [
        (Limiter::Registers, limit_registers),
        (Limiter::SharedMemory, limit_smem),
        (Limiter::Warps, limit_warps),
        (Limiter::Blocks, limit_blocks),
    ]
    .into_iter()
    .find(|(_, v)| *v == ctas)
    .map_or(Limiter::Blocks, |(l, _)| l);
    Occupancy {
        ctas_per_sm: ctas,
        warps_per_cta: warps,
        registers_per_warp: regs_per_warp,
        smem_per_cta_bytes: smem,
        smem_carveout_bytes: carveout,
        limit_registers,
        limit_smem,
        limit_warps,
        limit_blocks,
        limiter,
        occupancy: (ctas * warps) as f64 / chip.max_warps_per_sm as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::builtin_gpus;

    fn chip(gpu: &str) -> OnChip {
        builtin_gpus().iter().find(|g| g.name == gpu).unwrap().onchip.clone()
    }

    #[test]
    fn triton_128x128x32_four_stages_on_h100_is_limited_by_shared_memory() {
        // gemm-tiling.md §4 example 2: smem 4·(128·32 + 32·128)·2 B = 65,536 B; + 1 KiB reserve
        // = 66,560 B (a multiple of 128). The 228 KiB carve-out holds ⌊233,472 / 66,560⌋ = 3.
        // 128 regs/thread: 128·32 = 4,096 per warp; ⌊16,384 / 4,096⌋ = 4 warps per sub-partition,
        // 16 per SM, ÷ 4 warps per CTA = 4 CTAs. Warps: 64 / 4 = 16. Blocks: 32.
        let o = occupancy(
            &chip("h100-sxm"),
            &BlockResources { threads: 128, registers_per_thread: 128, smem_bytes: 65_536 },
        );
        assert_eq!(o.smem_per_cta_bytes, 66_560);
        assert_eq!((o.limit_smem, o.limit_registers, o.limit_warps, o.limit_blocks), (3, 4, 16, 32));
        assert_eq!(o.ctas_per_sm, 3);
        assert_eq!(o.limiter, Limiter::SharedMemory);
        // Three resident CTAs need 199,680 B: the 196 KiB carve-out (200,704 B).
        assert_eq!(o.smem_carveout_bytes, 196 * 1024);
        // 3 CTAs × 4 warps of 64.
        assert_eq!(o.occupancy, 12.0 / 64.0);
    }

    #[test]
    fn a_fat_thread_block_is_limited_by_registers() {
        // 64×64×32 tile, 4 stages, 4 warps, 255 registers per thread on an H100.
        // Registers: 255·32 = 8,160 → 8,192 per warp; ⌊16,384 / 8,192⌋ = 2 warps per
        // sub-partition, 8 per SM, ÷ 4 = 2 CTAs.
        // Shared memory: 4·(64·32 + 32·64)·2 = 32,768 + 1,024 = 33,792 B: ⌊233,472 / 33,792⌋ = 6.
        // The SM is configured with the smallest carve-out ≥ 2 × 33,792 = 67,584 B: 100 KiB.
        let o = occupancy(
            &chip("h100-sxm"),
            &BlockResources { threads: 128, registers_per_thread: 255, smem_bytes: 32_768 },
        );
        assert_eq!(o.registers_per_warp, 8_192);
        assert_eq!(o.limit_registers, 2);
        assert_eq!(o.smem_carveout_bytes, 100 * 1024);
        assert_eq!(o.limit_smem, 6);
        assert_eq!((o.ctas_per_sm, o.limiter), (2, Limiter::Registers));
    }

    #[test]
    fn cutlass_sm80_default_runs_one_cta_per_sm_on_a100() {
        // gemm-tiling.md §4 example 1: 128×256×64, 3 stages, 256 threads, ≈230 registers.
        // smem 3·(128·64 + 64·256)·2 = 147,456 + 1,024 = 148,480 → ⌊167,936 / 148,480⌋ = 1.
        // regs 230·32 = 7,360 → 7,424; ⌊16,384 / 7,424⌋ = 2 per sub-partition, 8 warps = 1 CTA.
        let o = occupancy(
            &chip("a100-80gb-sxm"),
            &BlockResources { threads: 256, registers_per_thread: 230, smem_bytes: 147_456 },
        );
        assert_eq!((o.limit_smem, o.limit_registers, o.ctas_per_sm), (1, 1, 1));
        assert_eq!(o.limiters().collect::<Vec<_>>(), vec![Limiter::Registers, Limiter::SharedMemory]);
        assert_eq!(o.occupancy, 0.125);
    }

    #[test]
    fn blocks_over_the_per_block_limit_cannot_launch() {
        // §4 example 3: 147,456 B on an L4 (99 KiB per block) does not launch.
        let o =
            occupancy(&chip("l4"), &BlockResources { threads: 256, registers_per_thread: 128, smem_bytes: 147_456 });
        assert_eq!((o.ctas_per_sm, o.limiter), (0, Limiter::SharedMemory));
        let o =
            occupancy(&chip("h100-sxm"), &BlockResources { threads: 128, registers_per_thread: 256, smem_bytes: 0 });
        assert_eq!((o.ctas_per_sm, o.limiter), (0, Limiter::Registers));
    }

    #[test]
    fn tiny_blocks_run_out_of_block_slots() {
        // 32 threads, 16 registers, no shared memory: warps allow 64, blocks 32.
        let o = occupancy(&chip("h100-sxm"), &BlockResources { threads: 32, registers_per_thread: 16, smem_bytes: 0 });
        assert_eq!((o.ctas_per_sm, o.limiter), (32, Limiter::Blocks));
    }
}
