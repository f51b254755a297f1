//! One operator instance as the time models see it ([`Op`]: kind, FLOPs and bytes, math format,
//! GEMM and attention shape): a leaf below [`crate::roofline`], so that a time model can look at
//! an operator's shape ([`crate::ops`] builds them and re-exports these types).

use crate::cost::Cost;
use crate::gemm::Gemm;
use crate::kinds::OpKind;
use crate::precision::{MathFormat, Precision};
use serde::Serialize;

/// Shape of an attention core (QKᵀ, softmax, P·V) for the tile-level model
/// ([`crate::tiling::attention`]). Bytes are per position and summed over the KV heads, with the
/// same per-element sizes the operator's cost uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AttentionShape {
    /// Query heads.
    pub heads: f64,
    /// Groups that share one K/V stream (KV heads; 1 for MLA's absorbed latent, every head for
    /// MLA expanded per head).
    pub kv_heads: f64,
    /// Query/key dimension per head.
    pub qk_dim: f64,
    /// Value dimension per head.
    pub v_dim: f64,
    /// Which cached positions a query reads (all, a window, a chunk, a top-k).
    pub reach: crate::model::Reach,
    /// It also reads pooled entries of the positions outside its window (DeepSeek-V4): its
    /// geometry is the window's and the entries' together.
    pub pooled: bool,
    /// HBM bytes of K for one position, all KV heads (cache and activation parts).
    pub k_bytes_per_position: f64,
    /// HBM bytes of V for one position, all KV heads (0 when the kernel reuses K's load).
    pub v_bytes_per_position: f64,
    /// Bytes of one query position's Q (all heads).
    pub q_bytes_per_query: f64,
    /// Bytes of one query position's output O (all heads).
    pub o_bytes_per_query: f64,
    /// The step's attention work per head (sequences, queries, pairs, KV positions): what the
    /// measured attention kernels are keyed by ([`crate::clock`]).
    #[serde(skip)]
    pub geometry: crate::workload::AttentionGeometry,
}

/// The MoE layer a routed expert's operator belongs to, as the measured MoE kernels are keyed
/// ([`crate::clock`]): the model's shape, the step's tokens and the layout's split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoeShape {
    /// Width of a token into the experts (the hidden size, or a latent MoE's latent width).
    pub hidden: u64,
    /// Each expert's intermediate size (the model's, before tensor parallelism).
    pub intermediate: u64,
    /// Experts per token.
    pub top_k: u64,
    /// Routed experts (the model's).
    pub experts: u64,
    /// Gate and up projections (three GEMMs) or one up projection (two).
    pub gated: bool,
    /// Tokens of the step entering the MoE layer (all of them, before the experts' split).
    pub tokens: f64,
    /// Tensor-parallel GPUs splitting each expert.
    pub tp: u64,
    /// Expert-parallel groups splitting the experts.
    pub ep: u64,
    /// Routing is uniform (the measured kernels' `balanced` tokens); a skewed one is not.
    pub balanced: bool,
    /// The experts' weight format.
    pub weights: Precision,
    /// The math format the experts' GEMMs run in (after GPU fallback).
    pub math: MathFormat,
}

/// One operator instance in one layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Op {
    /// Kind.
    pub kind: OpKind,
    /// FLOPs and bytes.
    pub cost: Cost,
    /// Math format it runs in (after GPU fallback).
    pub math: MathFormat,
    /// GEMM shape, for GEMM operators.
    pub gemm: Option<Gemm>,
    /// Attention shape, for the attention core (fused, or its QKᵀ and P·V halves).
    pub attention: Option<AttentionShape>,
    /// Runs inside the previous operator's kernel (the softmax of FlashAttention): its roofs add to
    /// that kernel's, and its time is the marginal time it adds (see [`crate::roofline::KernelTimer`]).
    pub fused: bool,
    /// For a GEMM that an engine may run as one kernel with its siblings, their output columns
    /// side by side (Q, K and V of one layer; gate and up of one MLP or expert): the columns of
    /// that merged GEMM, per instance (`q + 2·kv`; `2·intermediate`), on this GPU. `None` for a
    /// GEMM that is always a kernel of its own (and for every other operator). Which engines
    /// merge is the time model's business ([`crate::clock::engine_join`]).
    pub merge_n: Option<u64>,
    /// For a routed expert's operators (its GEMMs, activation and combine), the MoE layer they
    /// run in; `None` for every other operator.
    pub moe: Option<MoeShape>,
}

impl Op {
    /// An operator that is neither a GEMM nor attention and runs in a kernel of its own.
    pub fn plain(kind: OpKind, cost: Cost, math: MathFormat) -> Op {
        Op { kind, cost, math, gemm: None, attention: None, fused: false, merge_n: None, moe: None }
    }

    /// This GEMM's share of the merged GEMM it belongs to ([`Op::merge_n`]): `n ÷ merge_n`, or 1.
    pub fn merge_share(&self) -> f64 {
        match (self.gemm, self.merge_n) {
            (Some(g), Some(n)) if n > 0 => g.n as f64 / n as f64,
            _ => 1.0,
        }
    }
}
