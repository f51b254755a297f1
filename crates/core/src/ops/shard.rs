//! One GPU's share of each operator, and the communication operators at the block boundaries.
//!
//! With `t = tp` (module docs of [`crate::parallel`]):
//!
//! | operators | split | per GPU |
//! |---|---|---|
//! | q_proj, q_b_proj, gate, up, gate_up, shared gate/up, seed `mlp` | column | `N/t` output columns: FLOPs and weights `/t`, output `/t` |
//! | k_proj, v_proj | column | `N · kv_share` (one head per GPU when `t > kv`) |
//! | qkv_proj | column | `q/t + 2·kv_dim·kv_share` columns |
//! | o_proj, down, shared down, out_proj, o_b_proj, nemotron-nas's linear replacements | row | `K/t` input rows: FLOPs and weights `/t`, input `/t`, output whole (partial sums) |
//! | in_proj, KDA's gate expansions | column | `/t` (the heads of a recurrent mixer split) |
//! | short convolution, delta rule, SSM scan, gated norm, output gate | heads | `/t`, the per-sequence state with them |
//! | o_a_proj (DeepSeek-V4) | heads | its groups `/t` |
//! | indexer projections, scores and top-k, the compressor, latent MoE projections, hyper-connections | replicated | whole |
//! | attention, scores, softmax, values | heads | FLOPs, Q and O `/t`; KV read `· kv_share` (MLA and DeepSeek-V4: whole latent) |
//! | kv_write | heads | `· kv_share` (MLA and DeepSeek-V4: whole latent) |
//! | rope, q/k norm | heads | q and k elements on this GPU |
//! | q_absorb, v_up (MLA) | heads | `/t` |
//! | kv_b_proj (MLA, expanded) | column | `/t`; reads the whole cached latent |
//! | activation functions | columns | `/t` |
//! | routed experts | expert + column/row | assignments of the busiest EP group `/t`, its touched experts `/t` |
//! | lm_head | vocab | `⌈V/t⌉` of `V` columns |
//! | embedding | vocab | `1/t` of the rows gathered (each GPU reads the rows it holds) |
//! | norms, residuals, router, expert combine, q_a/kv_a (MLA) | replicated | whole |
//!
//! `kv_share = 1/min(t, kv_heads)`. Biases split with their matrices. With `ep > 1` every operator
//! outside the routed experts also sees only its group's `1/ep` of the tokens (data-parallel
//! attention); the routed experts see the assignments routed to the busiest group's experts.

use crate::cost::Cost;
use crate::kinds::{ExpertSplit, MergeGroup, Shard, Share};
use crate::model::{Attention, LayerSpec, Mlp, MoeMlp};
use crate::moe::{routing_probabilities, Routing};
use crate::ops::{Op, OpKind};
use crate::precision::MathFormat;
use crate::scenario::Scenario;
use crate::workload::Counting;
use serde::Serialize;

/// The busiest expert-parallel group's part of one MoE layer's expert work.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExpertShare {
    /// Its share of the step's (token, expert) assignments: `Σ_{i ∈ group} p_i / k`.
    pub assignments: f64,
    /// Its share of the distinct experts the step touches:
    /// `Σ_{i ∈ group} (1 − (1 − p_i)^T) / Σ_i (1 − (1 − p_i)^T)`.
    pub touched: f64,
    /// Its expected assignments ÷ the mean over groups (1 under uniform routing).
    pub imbalance: f64,
}

impl ExpertShare {
    /// No expert parallelism: all of it.
    pub const WHOLE: ExpertShare = ExpertShare { assignments: 1.0, touched: 1.0, imbalance: 1.0 };
}

/// The busiest of `ep` groups of contiguous experts for `tokens` routed tokens. Under uniform
/// routing every group gets `1/ep` of everything; under skewed routing (Zipf, measured loads) the
/// group holding the most popular experts gets more, and the step waits for it.
pub fn expert_share(m: &MoeMlp, tokens: f64, routing: &Routing, ep: u64) -> ExpertShare {
    if ep == 1 {
        return ExpertShare::WHOLE;
    }
    let per = (m.experts / ep) as usize;
    let p = match routing {
        Routing::Uniform => {
            return ExpertShare { assignments: 1.0 / ep as f64, touched: 1.0 / ep as f64, imbalance: 1.0 };
        }
        // Validated against every MoE layer when the scenario was built.
        other => routing_probabilities(m.experts, m.top_k, other).unwrap_or_else(|_| vec![1.0; m.experts as usize]),
    };
    let touched = |ps: &[f64]| ps.iter().map(|pi| 1.0 - (1.0 - pi).powf(tokens)).sum::<f64>();
    let busiest = p.chunks(per).max_by(|a, b| a.iter().sum::<f64>().total_cmp(&b.iter().sum::<f64>())).unwrap_or(&p);
    let k = m.top_k as f64;
    let load: f64 = busiest.iter().sum();
    let all = touched(&p);
    ExpertShare {
        assignments: load / k,
        touched: if all > 0.0 { touched(busiest) / all } else { 1.0 / ep as f64 },
        imbalance: load * ep as f64 / k,
    }
}

/// How the operators of one layer (or of the embedding and head) split on one GPU.
#[derive(Debug, Clone)]
pub struct OpShard {
    tp: f64,
    ep: u64,
    /// The share of the step's tokens this GPU's group serves (1/ep).
    token_share: f64,
    kv_share: f64,
    qkv_share: f64,
    qk_elem_share: f64,
    vocab_share: f64,
    experts: ExpertShare,
    attn_last: Option<OpKind>,
    mlp_last: Option<OpKind>,
    experts_last: Option<OpKind>,
    /// One all-reduce message: the group's tokens × hidden × activation bytes.
    message_bytes: f64,
    /// The group's logits: rows × vocab × activation bytes.
    logits_bytes: f64,
    /// Bytes the busiest group receives from the others in one all-to-all.
    all_to_all_bytes: f64,
}

impl OpShard {
    /// For the embedding and the head.
    pub fn outside_layers(sc: &Scenario, tokens: f64) -> OpShard {
        let p = &sc.parallel;
        let t = p.tp as f64;
        let a = sc.workload.activations.bytes();
        let token_share = 1.0 / p.ep as f64;
        let v = sc.model.embedding.vocab as f64;
        OpShard {
            tp: t,
            ep: p.ep,
            token_share,
            kv_share: 1.0 / t,
            qkv_share: 1.0 / t,
            qk_elem_share: 1.0 / t,
            vocab_share: (v / t).ceil() / v,
            experts: ExpertShare::WHOLE,
            attn_last: None,
            mlp_last: None,
            experts_last: None,
            message_bytes: tokens * token_share * sc.model.hidden_size as f64 * a,
            logits_bytes: sc.workload.logit_tokens() * token_share * v * a,
            all_to_all_bytes: 0.0,
        }
    }

    /// For the operators of `layer` in a step of `tokens` tokens.
    pub fn layer(sc: &Scenario, layer: &LayerSpec, tokens: f64) -> OpShard {
        let mut s = Self::outside_layers(sc, tokens);
        let p = &sc.parallel;
        let t = s.tp;
        match &layer.attention {
            Attention::Standard(a) => {
                s.kv_share = p.kv_head_share(a.kv_heads);
                let (q, k, v) = (a.q_proj_width() as f64, a.k_proj_width() as f64, a.v_proj_width() as f64);
                s.qkv_share = (q / t + (k + v) * s.kv_share) / (q + k + v);
                let (qe, ke) = (a.q_dim() as f64, a.kv_dim() as f64);
                s.qk_elem_share = (qe / t + ke * s.kv_share) / (qe + ke);
            }
            Attention::Latent(a) => {
                // The latent and the shared rotary key are on every GPU.
                s.kv_share = 1.0;
                let nh = a.heads as f64;
                s.qk_elem_share = (nh / t + 1.0) / (nh + 1.0);
            }
            Attention::Compressed(a) => {
                // One latent for every head (multi-query): on every GPU.
                s.kv_share = 1.0;
                let nh = a.heads as f64;
                s.qk_elem_share = (nh / t + 1.0) / (nh + 1.0);
            }
            Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => {}
        }
        let seed = sc.workload.counting == Counting::Seed;
        s.attn_last = match &layer.attention {
            Attention::Standard(_) | Attention::Latent(_) => Some(OpKind::OProj),
            Attention::Compressed(_) => Some(OpKind::OBProj),
            Attention::Recurrent(_) => Some(OpKind::OutProj),
            Attention::Linear { .. } => Some(OpKind::AttnLinear),
            Attention::None => None,
        };
        let (mlp_last, experts_last) = match &layer.mlp {
            Mlp::Dense(_) => (Some(if seed { OpKind::Mlp } else { OpKind::DownProj }), None),
            Mlp::Moe(m) => {
                let experts_last = if seed { OpKind::ExpertUp } else { OpKind::ExpertDown };
                let last = match (&m.shared, seed, m.latent.is_some()) {
                    (Some(_), false, _) => OpKind::SharedDown,
                    (Some(_), true, _) => OpKind::SharedUp,
                    (None, _, true) => OpKind::LatentUp,
                    (None, false, false) => OpKind::ExpertCombine,
                    (None, true, false) => OpKind::ExpertUp,
                };
                s.experts = expert_share(m, tokens, &sc.routing, p.ep);
                let e = p.ep as f64;
                let hidden = m.expert_width(sc.model.hidden_size) as f64 * sc.workload.activations.bytes();
                // Each GPU of the owning group needs the whole hidden vector of every token
                // routed to its experts (column-parallel input); (e−1)/e of them come from
                // other groups.
                s.all_to_all_bytes = tokens * m.top_k as f64 * s.experts.assignments * hidden * (e - 1.0) / e;
                (Some(last), Some(experts_last))
            }
            Mlp::Linear { .. } => (Some(OpKind::MlpLinear), None),
            Mlp::None => (None, None),
        };
        s.mlp_last = mlp_last;
        s.experts_last = experts_last;
        s
    }

    /// Hand `op`'s share on this GPU to `f`, followed by any communication that comes after it.
    pub fn emit(&self, op: Op, f: &mut impl FnMut(Op)) {
        let kind = op.kind;
        f(self.apply(op));
        if self.ep > 1 && kind == OpKind::Router {
            f(comm(OpKind::AllToAllDispatch, self.all_to_all_bytes));
        }
        if self.ep > 1 && Some(kind) == self.experts_last {
            f(comm(OpKind::AllToAllCombine, self.all_to_all_bytes));
        }
        if self.tp > 1.0 {
            let ring = 2.0 * (self.tp - 1.0) / self.tp;
            let after = match kind {
                OpKind::Embedding => Some((OpKind::AllReduceEmbedding, ring * self.message_bytes)),
                OpKind::LmHead => Some((OpKind::AllGatherLogits, (self.tp - 1.0) / self.tp * self.logits_bytes)),
                k if Some(k) == self.attn_last => Some((OpKind::AllReduceAttn, ring * self.message_bytes)),
                k if Some(k) == self.mlp_last => Some((OpKind::AllReduceMlp, ring * self.message_bytes)),
                _ => None,
            };
            if let Some((k, bytes)) = after {
                f(comm(k, bytes));
            }
        }
    }

    /// The fraction of a dimension split by `share` this GPU holds.
    fn share(&self, share: Share) -> f64 {
        match share {
            Share::Tensor => 1.0 / self.tp,
            Share::KvHeads => self.kv_share,
            Share::Qkv => self.qkv_share,
            Share::Vocab => self.vocab_share,
            Share::QkElements => self.qk_elem_share,
        }
    }

    /// This GPU's share of one operator (table in the module docs; each kind's rule is its
    /// [`crate::kinds::KindFacts::shard`]).
    pub fn apply(&self, mut op: Op) -> Op {
        // A routed expert's operators carry the layout that splits their layer.
        if let Some(m) = op.moe.as_mut() {
            m.tp = self.tp as u64;
            m.ep = self.ep;
        }
        use OpKind::*;
        let t = self.tp;
        // A merged GEMM's columns on this GPU: Q, K and V together are `qkv_share` of the whole;
        // gate and up are both column-parallel.
        let facts = op.kind.facts();
        op.merge_n = op.merge_n.map(|n| match facts.merged {
            Some((MergeGroup::Qkv, _)) => split_dim(n, self.qkv_share),
            Some((MergeGroup::GateUp, _)) | None => split_dim(n, 1.0 / t),
        });
        match facts.shard {
            Shard::Columns(share) => column(&mut op, self.share(share)),
            Shard::Rows => row(&mut op, 1.0 / t),
            Shard::LatentColumns => {
                // Its input is the cached latent, read whole on every GPU; output columns split.
                let kv = op.cost.kv_read_bytes;
                scale(&mut op, 1.0 / t);
                op.cost.kv_read_bytes = kv;
                if let Some(g) = op.gemm.as_mut() {
                    g.n = split_dim(g.n, 1.0 / t);
                }
            }
            Shard::HeadInstances => {
                scale(&mut op, 1.0 / t);
                if let Some(g) = op.gemm.as_mut() {
                    g.instances /= t;
                }
            }
            Shard::Elements(share) => {
                let share = self.share(share);
                scale(&mut op, share);
                // A recurrent layer's heads split as its elements do.
                op.recurrent = op.recurrent.map(|r| r.heads_scaled(share));
            }
            Shard::AttentionHeads => {
                op.cost.flops /= t;
                op.cost.activation_bytes /= t;
                op.cost.activation_written_bytes /= t;
                op.cost.kv_read_bytes *= self.kv_share;
                // The shape on this GPU: its query heads and its KV heads (the time models and
                // the tile model are keyed by them).
                if let Some(a) = op.attention.as_mut() {
                    a.heads /= t;
                    a.q_bytes_per_query /= t;
                    a.o_bytes_per_query /= t;
                    a.kv_heads *= self.kv_share;
                    a.k_bytes_per_position *= self.kv_share;
                    a.v_bytes_per_position *= self.kv_share;
                }
            }
            Shard::Experts(ExpertSplit::Columns) => self.expert(&mut op, Split::Column),
            Shard::Experts(ExpertSplit::Rows) => self.expert(&mut op, Split::Row),
            Shard::ExpertAssignments => scale(&mut op, self.experts.assignments / t),
            Shard::EmbeddingRows => op.cost.weight_bytes /= t,
            Shard::Replicated => {}
        }
        if self.token_share < 1.0 && !matches!(facts.shard, Shard::Experts(_) | Shard::ExpertAssignments) {
            let w = op.cost.weight_bytes;
            scale(&mut op, self.token_share);
            // Weights are read once whatever the tokens, except the embedding's gathered rows.
            if op.kind != Embedding {
                op.cost.weight_bytes = w;
            }
            if let Some(g) = op.gemm.as_mut() {
                g.m *= self.token_share;
            }
            if let Some(a) = op.attention.as_mut() {
                a.geometry = a.geometry.scaled(self.token_share);
            }
            op.recurrent = op.recurrent.map(|r| r.sequences_scaled(self.token_share));
        }
        op
    }

    fn expert(&self, op: &mut Op, split: Split) {
        let (a, w, t) = (self.experts.assignments, self.experts.touched, self.tp);
        let (inp, out) = io_elems(op);
        let (inp2, out2) = match split {
            Split::Column => (inp * a, out * a / t),
            Split::Row => (inp * a / t, out * a),
        };
        op.cost.flops *= a / t;
        op.cost.weight_bytes *= w / t;
        op.cost.activation_bytes *= ratio(inp2 + out2, inp + out, a / t);
        op.cost.activation_written_bytes *= ratio(out2, out, a / t);
        if let Some(g) = op.gemm.as_mut() {
            let rows = g.m * g.instances * a;
            g.instances *= w;
            g.m = rows / g.instances.max(f64::MIN_POSITIVE);
            match split {
                Split::Column => g.n = split_dim(g.n, 1.0 / t),
                Split::Row => g.k = split_dim(g.k, 1.0 / t),
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Split {
    Column,
    Row,
}

/// A communication operator moving `link_bytes` per GPU.
fn comm(kind: OpKind, link_bytes: f64) -> Op {
    Op::plain(kind, Cost { link_bytes, ..Cost::ZERO }, MathFormat::Vector)
}

/// Input and output elements of a GEMM operator (`m·instances·k`, `m·instances·n`).
fn io_elems(op: &Op) -> (f64, f64) {
    op.gemm.map_or((0.0, 0.0), |g| (g.m * g.instances * g.k as f64, g.m * g.instances * g.n as f64))
}

/// `new ÷ old`, or `fallback` when nothing was there.
fn ratio(new: f64, old: f64, fallback: f64) -> f64 {
    if old > 0.0 {
        new / old
    } else {
        fallback
    }
}

fn split_dim(n: u64, share: f64) -> u64 {
    (n as f64 * share).round() as u64
}

/// Every part of the cost times `k`.
fn scale(op: &mut Op, k: f64) {
    op.cost = op.cost * k;
}

/// Column-parallel: `c` of the output columns.
fn column(op: &mut Op, c: f64) {
    let (inp, out) = io_elems(op);
    op.cost.flops *= c;
    op.cost.weight_bytes *= c;
    op.cost.activation_bytes *= ratio(inp + out * c, inp + out, c);
    op.cost.activation_written_bytes *= c;
    if let Some(g) = op.gemm.as_mut() {
        g.n = split_dim(g.n, c);
    }
}

/// Row-parallel: `r` of the input rows; the output (partial sums) is whole.
fn row(op: &mut Op, r: f64) {
    let (inp, out) = io_elems(op);
    op.cost.flops *= r;
    op.cost.weight_bytes *= r;
    op.cost.activation_bytes *= ratio(inp * r + out, inp + out, r);
    // The output (partial sums) is whole.
    if let Some(g) = op.gemm.as_mut() {
        g.k = split_dim(g.k, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moe(experts: u64, top_k: u64) -> MoeMlp {
        use crate::model::{Activation, DenseMlp};
        let expert =
            DenseMlp { intermediate: 64, gated: true, bias: false, activation: Activation::Silu, fused_gate_up: false };
        MoeMlp { experts, top_k, expert, shared: None, shared_gate: false, router_bias: false, latent: None }
    }

    #[test]
    fn uniform_routing_splits_experts_evenly() {
        let s = expert_share(&moe(64, 4), 32.0, &Routing::Uniform, 8);
        assert_eq!(s, ExpertShare { assignments: 0.125, touched: 0.125, imbalance: 1.0 });
        assert_eq!(expert_share(&moe(64, 4), 32.0, &Routing::Uniform, 1), ExpertShare::WHOLE);
    }

    #[test]
    fn skewed_routing_loads_the_group_with_the_popular_experts() {
        // Loads 4,4,1,1 over 2 groups of 2 experts, top-1: p = 0.4, 0.4, 0.1, 0.1. Group 0 gets
        // 0.8 of the assignments, 1.6× the mean of 0.5.
        let loads = Routing::loads(vec![4.0, 4.0, 1.0, 1.0]).unwrap();
        let s = expert_share(&moe(4, 1), 1.0, &loads, 2);
        assert!((s.assignments - 0.8).abs() < 1e-12, "{s:?}");
        assert!((s.imbalance - 1.6).abs() < 1e-12, "{s:?}");
        // One token touches 0.8 of an expert in group 0 and 0.2 in group 1 in expectation.
        assert!((s.touched - 0.8).abs() < 1e-12, "{s:?}");
    }
}
