//! Attention operators: standard (MHA/GQA/MQA, sliding windows, chunks, sinks, an output gate,
//! sparse top-k with its indexer) and multi-head latent attention (MLA, dense or sparse),
//! absorbed or expanded; the core fused (FlashAttention) or as three kernels.

use super::minor::norm_flops;
use super::{AttentionShape, Op, OpBuilder, OpKind};
use crate::conventions::{ROPE_FLOPS_PER_ELEMENT, SIGMOID_GATE_FLOPS_PER_ELEMENT, SOFTMAX_FLOPS_PER_SCORE};
use crate::cost::Cost;
use crate::model::{LatentAttention, NormKind, OutputGate, QkNorm, Reach, StandardAttention};
use crate::precision::MathFormat;
use crate::workload::{AttentionGeometry, MlaForm, Phase};

/// Bytes per position read from the cache (`kv`) or from activations (`act`) for one operand of
/// attention.
#[derive(Clone, Copy)]
pub(super) struct Operand {
    pub(super) kv: f64,
    pub(super) act: f64,
}

/// Attention core parameters shared by standard attention, MLA and DeepSeek-V4's attention.
pub(super) struct AttnCore {
    pub(super) heads: f64,
    pub(super) kv_heads: f64,
    pub(super) reach: Reach,
    /// It also reads compressed entries (DeepSeek-V4).
    pub(super) pooled: bool,
    pub(super) qk_dim: f64,
    pub(super) v_dim: f64,
    pub(super) k: Operand,
    pub(super) v: Operand,
    pub(super) sinks: bool,
}

impl OpBuilder<'_> {
    pub(super) fn standard_attention(&self, at: &StandardAttention, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let (q, k, v) = (at.q_proj_width(), at.k_proj_width(), at.v_proj_width());
        if at.fused_qkv || self.seed {
            f(self.gemm(OpKind::QkvProj, self.dense(t, at.qkv_width(), h, w).with_bias(at.qkv_bias)));
        } else {
            // One merged QKV GEMM where the engine merges them (`merge_n`).
            let merged = |op: Op| Op { merge_n: Some(at.qkv_width()), ..op };
            f(merged(self.gemm(OpKind::QProj, self.dense(t, q, h, w).with_bias(at.qkv_bias))));
            if k > 0 {
                f(merged(self.gemm(OpKind::KProj, self.dense(t, k, h, w).with_bias(at.qkv_bias))));
            }
            if v > 0 {
                f(merged(self.gemm(OpKind::VProj, self.dense(t, v, h, w).with_bias(at.qkv_bias))));
            }
        }
        if let Some(i) = &at.indexer {
            self.indexer_projections(i, 0, f);
        }
        let minor = !self.seed;
        let qk_elems = t * (at.q_dim() + at.k_proj_width()) as f64;
        if minor && at.qk_norm != QkNorm::None {
            let params = match at.qk_norm {
                QkNorm::PerHead => 2 * at.head_dim,
                _ => at.q_dim() + at.kv_dim(),
            };
            f(self.elementwise(
                OpKind::QkNorm,
                qk_elems,
                norm_flops(NormKind::Rms),
                2.0,
                params as f64 * w.unquantised().bytes(),
            ));
        }
        if minor && at.rope {
            f(self.elementwise(OpKind::Rope, qk_elems, ROPE_FLOPS_PER_ELEMENT, 2.0, 0.0));
        }
        let g = self.sc.workload.attention_geometry(at.reach);
        let key_bytes = at.indexer.map_or(0.0, |i| i.key_bytes());
        if !at.kv_shared {
            self.kv_write(g, (at.kv_dim() + at.v_dim()) as f64, key_bytes, f);
        }
        self.standard_core(at, g, f);
        if minor && at.output_gate != OutputGate::None {
            f(self.output_gate(at.o_dim()));
        }
        f(self.gemm(OpKind::OProj, self.dense(t, h, at.o_dim(), w).with_bias(at.o_bias)));
    }

    /// A sigmoid gate on the attention output, `o·σ(g)` over `width` values a token
    /// ([`SIGMOID_GATE_FLOPS_PER_ELEMENT`]): the output and the gate read, the gated output
    /// written.
    fn output_gate(&self, width: u64) -> Op {
        self.elementwise(OpKind::AttnGate, self.tokens * width as f64, SIGMOID_GATE_FLOPS_PER_ELEMENT, 3.0, 0.0)
    }

    /// Standard attention's core over geometry `g`: the operators that read the cached context
    /// (a sparse layer's indexer first).
    pub(super) fn standard_core(&self, at: &StandardAttention, g: AttentionGeometry, f: &mut impl FnMut(Op)) {
        if let Some(i) = &at.indexer {
            self.indexer_scores(i, self.sc.workload.attention_geometry(Reach::All), f);
        }
        let core = AttnCore {
            heads: at.heads as f64,
            kv_heads: at.kv_heads as f64,
            reach: at.reach,
            pooled: false,
            qk_dim: at.head_dim as f64,
            v_dim: at.v_head_dim as f64,
            k: Operand { kv: at.kv_dim() as f64 * self.kv, act: 0.0 },
            v: Operand { kv: at.v_dim() as f64 * self.kv, act: 0.0 },
            sinks: at.sinks,
        };
        self.attention_core(&core, g, f);
    }

    /// Append this step's K/V (`elems_per_pos` values per position at the KV precision, and
    /// `key_bytes` of an indexer's key per position) to the cache.
    pub(super) fn kv_write(&self, g: AttentionGeometry, elems_per_pos: f64, key_bytes: f64, f: &mut impl FnMut(Op)) {
        if self.seed {
            return;
        }
        let elems = g.kv_positions_written * elems_per_pos;
        let keys = g.kv_positions_written * key_bytes;
        let cost = Cost { kv_write_bytes: elems * self.kv + keys, activation_bytes: elems * self.a, ..Cost::ZERO };
        f(Op::plain(OpKind::KvWrite, cost, MathFormat::Vector));
    }

    /// QKᵀ, softmax and P·V, fused (FlashAttention) or as three kernels.
    pub(super) fn attention_core(&self, c: &AttnCore, g: AttentionGeometry, f: &mut impl FnMut(Op)) {
        let math = self.math(self.act.native_math());
        let qk_flops = 2.0 * c.heads * c.qk_dim * g.pairs;
        let pv_flops = 2.0 * c.heads * c.v_dim * g.pairs;
        let q_bytes = g.queries * c.heads * c.qk_dim * self.a;
        let o_bytes = g.queries * c.heads * c.v_dim * self.a;
        let read = |o: Operand| (g.kv_positions_read * o.kv, g.kv_positions_read * o.act * self.a);
        let (k_kv, k_act) = read(c.k);
        let (v_kv, v_act) = read(c.v);
        // Softmax: SOFTMAX_FLOPS_PER_SCORE per score; sinks add one column.
        let sink_cols = if c.sinks { g.queries * c.heads } else { 0.0 };
        let shape = Some(AttentionShape {
            heads: c.heads,
            kv_heads: c.kv_heads,
            qk_dim: c.qk_dim,
            v_dim: c.v_dim,
            reach: c.reach,
            pooled: c.pooled,
            k_bytes_per_position: c.k.kv + c.k.act * self.a,
            v_bytes_per_position: c.v.kv + c.v.act * self.a,
            q_bytes_per_query: c.heads * c.qk_dim * self.a,
            o_bytes_per_query: c.heads * c.v_dim * self.a,
            geometry: g,
        });
        if self.sc.workload.flash_attention || self.seed {
            let cost = Cost {
                flops: qk_flops + pv_flops,
                kv_read_bytes: k_kv + v_kv,
                activation_bytes: q_bytes + k_act + v_act + o_bytes,
                activation_written_bytes: o_bytes,
                ..Cost::ZERO
            };
            f(Op { attention: shape, ..Op::plain(OpKind::Attention, cost, math) });
            if !self.seed {
                let sm = Cost { flops: SOFTMAX_FLOPS_PER_SCORE * (c.heads * g.pairs + sink_cols), ..Cost::ZERO };
                // Inside the FlashAttention kernel: charged the marginal time it adds there.
                f(Op { fused: true, ..Op::plain(OpKind::Softmax, sm, MathFormat::Vector) });
            }
        } else {
            let scores = c.heads * g.materialised_scores * self.a;
            let qk = Cost {
                flops: qk_flops,
                kv_read_bytes: k_kv,
                activation_bytes: q_bytes + k_act + scores,
                activation_written_bytes: scores,
                ..Cost::ZERO
            };
            f(Op { attention: shape, ..Op::plain(OpKind::AttnScores, qk, math) });
            let sm = Cost {
                flops: SOFTMAX_FLOPS_PER_SCORE * (c.heads * g.materialised_scores + sink_cols),
                activation_bytes: 2.0 * scores,
                activation_written_bytes: scores,
                ..Cost::ZERO
            };
            f(Op::plain(OpKind::Softmax, sm, MathFormat::Vector));
            let pv = Cost {
                flops: pv_flops,
                kv_read_bytes: v_kv,
                activation_bytes: scores + v_act + o_bytes,
                activation_written_bytes: o_bytes,
                ..Cost::ZERO
            };
            f(Op { attention: shape, ..Op::plain(OpKind::AttnValues, pv, math) });
        }
    }

    pub(super) fn latent_attention(&self, at: &LatentAttention, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let nh = at.heads;
        let (dn, dr, dv, r) = (at.qk_nope_head_dim, at.qk_rope_head_dim, at.v_head_dim, at.kv_lora_rank);
        // An output gate is projected from the hidden state with the queries' first GEMM
        // (vLLM's `fused_qkv_a_g_proj`).
        let gate = if at.output_gate { nh * dv } else { 0 };
        match at.q_lora_rank {
            Some(rq) => {
                f(self.gemm(OpKind::QAProj, self.dense(t, rq + gate, h, w).with_bias(at.bias)));
                if !self.seed {
                    f(self.norm(OpKind::QANorm, NormKind::Rms, rq, 1));
                }
                f(self.gemm(OpKind::QBProj, self.dense(t, nh * (dn + dr), rq, w)));
            }
            None => f(self.gemm(OpKind::QProj, self.dense(t, nh * (dn + dr) + gate, h, w))),
        }
        f(self.gemm(OpKind::KvAProj, self.dense(t, r + dr, h, w).with_bias(at.bias)));
        if let Some(i) = &at.indexer {
            self.indexer_projections(i, 0, f);
        }
        if !self.seed {
            f(self.norm(OpKind::KvANorm, NormKind::Rms, r, 1));
            f(self.elementwise(OpKind::Rope, t * ((nh + 1) * dr) as f64, ROPE_FLOPS_PER_ELEMENT, 2.0, 0.0));
        }
        let g = self.sc.workload.attention_geometry(at.reach);
        self.kv_write(g, (r + dr) as f64, at.indexer.map_or(0.0, |i| i.key_bytes()), f);
        let nhf = nh as f64;
        if self.mla_form(at) == MlaForm::Absorbed {
            // Fold W_UK into q: per head [T×dn]·[dn×r].
            f(self.gemm(OpKind::QAbsorb, self.dense(t * nhf, r, dn, w).split(nhf)));
            self.latent_core(at, g, f);
            f(self.gemm(OpKind::VUp, self.dense(t * nhf, dv, r, w).split(nhf)));
        } else {
            self.latent_core(at, g, f);
        }
        if at.output_gate && !self.seed {
            f(self.output_gate(nh * dv));
        }
        f(self.gemm(OpKind::OProj, self.dense(t, h, nh * dv, w)));
    }

    /// The step's MLA form: absorbed in decode under `auto`, else as asked. A sparse layer runs
    /// absorbed in prefill too (vLLM's FlashMLA sparse kernels take the absorbed latent for
    /// both phases).
    fn mla_form(&self, at: &LatentAttention) -> MlaForm {
        let sparse = at.reach != Reach::All;
        match (self.sc.workload.mla, self.sc.workload.phase) {
            (MlaForm::Auto, Phase::Decode) | (MlaForm::Absorbed, _) => MlaForm::Absorbed,
            (MlaForm::Auto, Phase::Prefill) if sparse => MlaForm::Absorbed,
            (MlaForm::Auto | MlaForm::Naive, Phase::Prefill) | (MlaForm::Naive, Phase::Decode) => MlaForm::Naive,
        }
    }

    /// MLA's core over geometry `g`: the operators that read the cached context (a sparse
    /// layer's indexer, the expanded form's up-projection of every attended position, and
    /// attention).
    pub(super) fn latent_core(&self, at: &LatentAttention, g: AttentionGeometry, f: &mut impl FnMut(Op)) {
        if let Some(i) = &at.indexer {
            self.indexer_scores(i, self.sc.workload.attention_geometry(Reach::All), f);
        }
        let w = self.sc.weights.attention;
        let nh = at.heads;
        let (dn, dr, dv, r) = (at.qk_nope_head_dim, at.qk_rope_head_dim, at.v_head_dim, at.kv_lora_rank);
        let (nhf, kv) = (nh as f64, self.kv);
        if self.mla_form(at) == MlaForm::Absorbed {
            let core = AttnCore {
                heads: nhf,
                kv_heads: 1.0,
                reach: at.reach,
                pooled: false,
                qk_dim: (r + dr) as f64,
                v_dim: r as f64,
                k: Operand { kv: (r + dr) as f64 * kv, act: 0.0 },
                // The fused kernel reads the latent once (as K); an unfused P·V reads it again.
                v: Operand { kv: if self.sc.workload.flash_attention { 0.0 } else { r as f64 * kv }, act: 0.0 },
                sinks: false,
            };
            self.attention_core(&core, g, f);
        } else {
            // Expand every attended position's latent into per-head k_nope and v.
            let positions = g.kv_positions_read;
            let mut expand = self.gemm(OpKind::KvBProj, self.dense(positions, nh * (dn + dv), r, w));
            // Its input is the cached latent: KV bytes, not activations.
            expand.cost.activation_bytes -= positions * r as f64 * self.a;
            expand.cost.kv_read_bytes += positions * r as f64 * kv;
            f(expand);
            let core = AttnCore {
                heads: nhf,
                kv_heads: nhf,
                reach: at.reach,
                pooled: false,
                qk_dim: (dn + dr) as f64,
                v_dim: dv as f64,
                k: Operand { kv: dr as f64 * kv, act: (nh * dn) as f64 },
                v: Operand { kv: 0.0, act: (nh * dv) as f64 },
                sinks: false,
            };
            self.attention_core(&core, g, f);
        }
    }
}
