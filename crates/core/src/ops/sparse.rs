//! Sparse attention's indexer: its projections, its scoring of every cached position (or
//! compressed entry) against each query, and the top-k selection that tells the attention after
//! it which positions to read.
//!
//! * **Projections** (per token): queries `r_q → h_I·d_I` (DeepSeek Sparse Attention reads the
//!   query latent; MiniMax-M3 the hidden state); keys `H → d_I` and the per-head weights
//!   `H → h_I` as one GEMM from the hidden state. GEMMs run whole on every GPU (vLLM's
//!   `ReplicatedLinear` indexer).
//! * **Scores** (per (query, cached position) pair of full causal attention, `pairs`):
//!   `2·h_I·d_I` FLOPs for the dot products and `3·h_I` for `Σ_h w_h·ReLU(·)` (DeepSeek-V3.2-Exp
//!   `inference/kernel.py` `fp8_index`; MiniMax-M3's block max is one compare a pair and head).
//!   Bytes: every scored position's key read once per sequence at the indexer's own precision
//!   ([`crate::model::Indexer::key_bytes`]), the queries read, and one fp32 score per
//!   (query, position) — per (query, block, head) for a block-sparse indexer — written for the
//!   top-k to read. DSA's scores run in fp8 on the tensor cores (DeepGEMM's `fp8_mqa_logits`).
//! * **Top-k**: a selection over each query's scores ([`TOP_K_FLOPS_PER_SCORE`]); the scores
//!   read, `top_k / block` int32 indices written per query.

use super::{Op, OpBuilder, OpKind};
use crate::conventions::TOP_K_FLOPS_PER_SCORE;
use crate::cost::Cost;
use crate::model::{Indexer, IndexerKeys, IndexerQuery};
use crate::precision::MathFormat;
use crate::workload::AttentionGeometry;

/// Bytes of one score or index the indexer writes (fp32, int32).
const SCORE_BYTES: f64 = 4.0;

/// FLOPs per (query, position, head) beyond the dot product: ReLU, weight, sum.
const SCORE_COMBINE_FLOPS: f64 = 3.0;

impl OpBuilder<'_> {
    /// The indexer's query projection and its key (and head-weight) projection.
    pub(super) fn indexer_projections(&self, i: &Indexer, extra_key_width: u64, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let q_in = match i.query {
            IndexerQuery::QueryLatent(r) => r,
            IndexerQuery::Hidden => h,
        };
        f(self.gemm(OpKind::IndexerQProj, self.dense(t, i.heads * i.head_dim, q_in, w)));
        let keys = if i.key_proj.is_some() { i.head_dim } else { 0 } + if i.head_weights { i.heads } else { 0 };
        if keys + extra_key_width > 0 {
            f(self.gemm(OpKind::IndexerKProj, self.dense(t, keys + extra_key_width, h, w)));
        }
    }

    /// The indexer's scores over `g` (the positions or entries it scores: full causal attention's
    /// pairs and reads) and the top-k selection after them (module docs).
    pub(super) fn indexer_scores(&self, i: &Indexer, g: AttentionGeometry, f: &mut impl FnMut(Op)) {
        let heads = i.heads as f64;
        let block = i.block.max(1) as f64;
        // One score per pair (heads summed) for a token indexer; per block and head for a
        // block-sparse one.
        let scores = if i.block > 1 { heads * g.pairs / block } else { g.pairs };
        let math = match i.keys {
            IndexerKeys::Fp8Scaled => self.math(MathFormat::Fp8),
            IndexerKeys::Bf16 => self.math(self.act.native_math()),
        };
        let queries = g.queries * heads * i.head_dim as f64 * self.a;
        let written = scores * SCORE_BYTES;
        let cost = Cost {
            flops: g.pairs * heads * (2.0 * i.head_dim as f64 + SCORE_COMBINE_FLOPS),
            kv_read_bytes: g.kv_positions_read * i.key_bytes(),
            activation_bytes: queries + written,
            activation_written_bytes: written,
            ..Cost::ZERO
        };
        f(Op::plain(OpKind::Indexer, cost, math));
        if self.seed {
            return;
        }
        let index_heads = if i.block > 1 { heads } else { 1.0 };
        let indices = g.queries * index_heads * (i.top_k as f64 / block) * SCORE_BYTES;
        let select = Cost {
            flops: TOP_K_FLOPS_PER_SCORE * scores,
            activation_bytes: written + indices,
            activation_written_bytes: indices,
            ..Cost::ZERO
        };
        f(Op::plain(OpKind::TopK, select, MathFormat::Vector));
    }
}
