//! DeepSeek-V4's attention ([`CompressedAttention`]): a low-rank query, one 512-wide latent per
//! position that is both key and value, a sliding window of raw positions, pooled entries of
//! the rest (all of them, or an indexer's top-k), and a grouped low-rank output.
//!
//! Per token (`H` hidden, `n_h` heads, `d` the latent, `r_q` the query rank, `G` groups of
//! rank `r_o`): `q_a` `H → r_q` and the latent `H → d` (`kv_a`, vLLM fuses `wq_a` and `wkv`),
//! `q_b` `r_q → n_h·d`, the compressor's `wkv`/`wgate` `H → 2·coff·d` (ratio > 0), the
//! indexer's projections on ratio-4 layers, RoPE on `(n_h + 1)·d_rope` values, the cache append
//! (one raw entry a token into the window, one compressed entry every `ratio` tokens, an indexer
//! key every 4), `o_a` as `G` GEMMs of `n_h·d/G → r_o`, and `o_b` `G·r_o → H` (vLLM
//! `DeepseekV4Attention`).
//!
//! The core attends with `n_h` query heads to one shared latent (multi-query, `4·n_h·d` FLOPs a
//! pair): to its window's raw positions ([`Reach::Window`]) and to compressed entries
//! ([`crate::workload::Workload::compressed_geometry`]); the two geometries add. Sinks add one
//! logit a head. The indexer scores every compressed entry of ratio 4.

use super::attention::AttnCore;
use super::{Op, OpBuilder, OpKind};
use crate::conventions::ROPE_FLOPS_PER_ELEMENT;
use crate::model::{CompressedAttention, NormKind, Reach};

impl OpBuilder<'_> {
    /// Every operator of DeepSeek-V4's attention, in order (module docs).
    pub(super) fn compressed_attention(&self, at: &CompressedAttention, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let (nh, d, rq) = (at.heads, at.head_dim, at.q_lora_rank);
        f(self.gemm(OpKind::QAProj, self.dense(t, rq, h, w)));
        f(self.gemm(OpKind::KvAProj, self.dense(t, d, h, w)));
        if !self.seed {
            f(self.norm(OpKind::QANorm, NormKind::Rms, rq, 1));
            f(self.norm(OpKind::KvANorm, NormKind::Rms, d, 1));
        }
        f(self.gemm(OpKind::QBProj, self.dense(t, nh * d, rq, w)));
        if at.ratio > 0 {
            f(self.gemm(OpKind::Compressor, self.dense(t, at.compressor_width(), h, w)));
        }
        if let Some(i) = &at.indexer {
            self.indexer_projections(i, at.indexer_compressor_width(), f);
        }
        if !self.seed {
            f(self.elementwise(OpKind::Rope, t * ((nh + 1) * at.rope_dim) as f64, ROPE_FLOPS_PER_ELEMENT, 2.0, 0.0));
        }
        self.compressed_cache_write(at, f);
        self.compressed_core(at, f);
        let groups = at.o_groups.max(1);
        let per_group = nh * d / groups;
        let g = groups as f64;
        f(self.gemm(OpKind::OAProj, self.dense(t * g, at.o_lora_rank, per_group, w).split(g)));
        f(self.gemm(OpKind::OBProj, self.dense(t, h, groups * at.o_lora_rank, w)));
    }

    /// The cache append: a raw entry a new position into the window, the compressed entries and
    /// indexer keys the step completes.
    fn compressed_cache_write(&self, at: &CompressedAttention, f: &mut impl FnMut(Op)) {
        let window = self.sc.workload.attention_geometry(Reach::Window(at.window));
        let d = at.head_dim as f64;
        let mut ops = Vec::with_capacity(2);
        self.kv_write(window, d, 0.0, &mut |op| ops.push(op));
        if at.ratio > 0 {
            let entries = self.sc.workload.compressed_geometry(at.ratio, Reach::All);
            self.kv_write(entries, d, 0.0, &mut |op| ops.push(op));
        }
        if let Some(i) = &at.indexer {
            let keys = self.sc.workload.compressed_geometry(4, Reach::All);
            self.kv_write(keys, 0.0, i.key_bytes(), &mut |op| ops.push(op));
        }
        if let Some(first) = ops.first().copied() {
            let cost = ops.iter().map(|o| o.cost).sum();
            f(Op { cost, ..first });
        }
    }

    /// The operators that read the cached context: the indexer's scores over the ratio-4
    /// entries, and attention over the window and the compressed entries.
    pub(super) fn compressed_core(&self, at: &CompressedAttention, f: &mut impl FnMut(Op)) {
        let wl = &self.sc.workload;
        if let Some(i) = &at.indexer {
            self.indexer_scores(i, wl.compressed_geometry(4, Reach::All), f);
        }
        let window = wl.attention_geometry(Reach::Window(at.window));
        let pooled = match (at.ratio, at.indexer) {
            (0, _) => None,
            (r, Some(i)) => Some(wl.compressed_geometry(r, Reach::TopK(i.top_k))),
            (r, None) => Some(wl.compressed_geometry(r, Reach::All)),
        };
        let mut g = window;
        if let Some(p) = pooled {
            g = g.plus(p);
            // Entries written are the cache append's; the core counts what it reads.
            g.kv_positions_written = window.kv_positions_written;
            g.sequences = window.sequences;
            g.queries = window.queries;
            g.decode_sequences = window.decode_sequences;
        }
        let d = at.head_dim as f64;
        let core = AttnCore {
            heads: at.heads as f64,
            kv_heads: 1.0,
            reach: Reach::Window(at.window),
            pooled: pooled.is_some(),
            qk_dim: d,
            v_dim: d,
            k: super::attention::Operand { kv: d * self.kv, act: 0.0 },
            // The fused kernel reads the shared latent once (as K); unfused P·V reads it again.
            v: super::attention::Operand { kv: if wl.flash_attention { 0.0 } else { d * self.kv }, act: 0.0 },
            sinks: true,
        };
        self.attention_core(&core, g, f);
    }
}
