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

/// Which half of a hyper-connection an operator is ([`crate::ops`]' `hyper.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HyperPart {
    /// The streams mixed into a block's input.
    Pre,
    /// The block's output mixed back into the streams.
    Post,
}

/// A hyper-connection site's mixing, as the measured mHC kernels are keyed ([`crate::clock`]):
/// the half, the residual streams, the hidden size of one, and the step's tokens on this GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HyperShape {
    /// Which half.
    pub part: HyperPart,
    /// Residual streams (`hc_mult`).
    pub streams: u64,
    /// Hidden size of one stream.
    pub hidden: u64,
    /// Tokens of the step on this GPU.
    pub tokens: f64,
}

/// Which of a recurrent layer's own kernels an operator is, and the work the step gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum RecurrentPart {
    /// The short convolution over the step's decodes and its prompt chunks together.
    Conv,
    /// The recurrent update of the step's decodes, one token each.
    Decode,
    /// The chunked algorithm over the step's prompt chunks.
    Chunks,
}

/// The recurrent layer a short convolution or a scan belongs to, as the measured linear-attention
/// kernels are keyed ([`crate::clock`]): the rule, the heads on this GPU and their sizes, the
/// state's bytes per element, and the step's decodes and prompt chunks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RecurrentShape {
    /// The update rule.
    pub rule: crate::model::Recurrence,
    /// Which kernel.
    pub part: RecurrentPart,
    /// Query/key heads on this GPU.
    pub key_heads: f64,
    /// Value heads on this GPU.
    pub value_heads: f64,
    /// Query/key head size.
    pub key_head_dim: u64,
    /// Value head size.
    pub value_head_dim: u64,
    /// Bytes per element of the recurrent state (the config's state dtype).
    pub state_element_bytes: f64,
    /// Sequences decoding one token.
    pub decodes: f64,
    /// Sequences with a prompt chunk.
    pub prompt_sequences: f64,
    /// Tokens of those chunks.
    pub prompt_tokens: f64,
}

impl RecurrentShape {
    /// The shape on a GPU holding `share` of the heads.
    pub fn heads_scaled(self, share: f64) -> RecurrentShape {
        RecurrentShape { key_heads: self.key_heads * share, value_heads: self.value_heads * share, ..self }
    }

    /// The shape with `share` of the step's sequences.
    pub fn sequences_scaled(self, share: f64) -> RecurrentShape {
        RecurrentShape {
            decodes: self.decodes * share,
            prompt_sequences: self.prompt_sequences * share,
            prompt_tokens: self.prompt_tokens * share,
            ..self
        }
    }
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
    /// For a recurrent layer's short convolution and scans, the layer and the step's work;
    /// `None` for every other operator.
    pub recurrent: Option<RecurrentShape>,
    /// For a hyper-connection's mixing, its site; `None` for every other operator.
    pub hyper: Option<HyperShape>,
}

impl Op {
    /// An operator that is neither a GEMM nor attention and runs in a kernel of its own.
    pub fn plain(kind: OpKind, cost: Cost, math: MathFormat) -> Op {
        Op {
            kind,
            cost,
            math,
            gemm: None,
            attention: None,
            fused: false,
            merge_n: None,
            moe: None,
            recurrent: None,
            hyper: None,
        }
    }

    /// This GEMM's share of the merged GEMM it belongs to ([`Op::merge_n`]): `n ÷ merge_n`, or 1.
    pub fn merge_share(&self) -> f64 {
        match (self.gemm, self.merge_n) {
            (Some(g), Some(n)) if n > 0 => g.n as f64 / n as f64,
            _ => 1.0,
        }
    }
}
