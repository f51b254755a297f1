//! The bottom of the zoom: operators cut into thread-block tiles on a GPU.
//!
//! * [`gemm`]: one GEMM's tile grid, tile and wave quantisation, operand re-reads, a modelled time,
//!   and the default tile (lowest modelled time over [`candidates::CANDIDATES`]).
//! * [`mod@occupancy`]: CTAs per SM, CUDA's occupancy calculator.
//! * [`candidates`]: the candidate tile shapes and the `BMxBNxBK[xSTAGES]` syntax.
//! * [`request`]: one GEMM's inputs as text (the `tile` flags, the explorer's query) and their resolver.
//! * [`attention`]: FlashAttention's query × key/value blocks, causal skipping, decode split-KV.
//!
//! Formulas and sources: `shared/research/gemm-tiling.md`, cited section by section in each module.

pub mod attention;
pub mod candidates;
pub mod gemm;
pub mod occupancy;
pub mod request;

pub use attention::{tile_attention, AttentionTiling};
pub use candidates::{TileConfig, TileRequest, CANDIDATES};
pub use gemm::{choose_tile, explore_gemm, tile_forced, tile_gemm, GemmExploration, GemmShape, GemmTiling, TileChoice};
pub use occupancy::{occupancy, BlockResources, Limiter, Occupancy};
pub use request::{GemmInputs, GemmRequest};
