//! The operators of one forward step and their FLOPs and bytes.
//!
//! Counting rules (seed 004 rules 1–3, extended to every operator; `T` tokens in the step, `a`
//! bytes per activation element, `w` bytes per weight, `e` bytes per KV element):
//!
//! * **GEMM** `[T×K]·[K×N]`: `2·T·K·N` FLOPs (+`T·N` for a bias); weights `K·N·w` read once per
//!   step whatever `T` is; activations `(T·K + T·N)·a` (input read, output written).
//! * **Attention** per layer: `2·nh·d_qk` FLOPs per (query, key) pair for QKᵀ and `2·nh·d_v` for
//!   P·V; K and V of every attended position read from the cache (`2·kv·hd·e` per position); Q
//!   read and O written. With FlashAttention the scores stay on chip; without it the score matrix
//!   is written, read by the softmax, written again as probabilities and read by P·V.
//! * **Elementwise** operators run on the vector units: FLOPs per element are conventions stated
//!   at each operator (RMSNorm 4, LayerNorm 7, RoPE 3, residual add 1, softmax 5, activations in
//!   [`crate::model::Activation`]); bytes are one read and one write per tensor element touched.
//! * **MoE** experts: FLOPs for every (token, expert) assignment; weight bytes for the expected
//!   number of distinct experts touched ([`crate::moe`]).
//!
//! Under [`Counting::Seed`] only seed 004's rows are produced (qkv_proj, o_proj, mlp, attention,
//! lm_head) with weight and KV-read bytes only.
//!
//! In a parallel deployment ([`crate::parallel`]) the builder hands out one GPU's share of every
//! operator and adds the communication operators (all-reduces, all-gather, all-to-all) at the
//! block boundaries; the hooks are marked `PARALLEL` below. On one GPU they are the identity.

use crate::cost::Cost;
pub use crate::gemm::Gemm;
use crate::model::{Attention, DenseMlp, LatentAttention, LayerSpec, Mlp, MoeMlp, NormKind, QkNorm, StandardAttention};
use crate::moe::expected_experts_touched;
use crate::precision::{gemm_math, MathFormat, Precision};
use crate::scenario::Scenario;
use crate::workload::{AttentionGeometry, Counting, MlaForm, Phase};
use serde::Serialize;

/// Operator kinds, in the order they run.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Embedding,
    AttnNorm,
    QProj,
    KProj,
    VProj,
    QkvProj,
    QAProj,
    QANorm,
    QBProj,
    KvAProj,
    KvANorm,
    QkNorm,
    Rope,
    KvWrite,
    KvBProj,
    QAbsorb,
    Attention,
    AttnScores,
    Softmax,
    AttnValues,
    VUp,
    OProj,
    AttnResidual,
    MlpNorm,
    Mlp,
    GateProj,
    UpProj,
    GateUpProj,
    Act,
    DownProj,
    Router,
    ExpertGate,
    ExpertUp,
    ExpertAct,
    ExpertDown,
    ExpertCombine,
    SharedGate,
    SharedUp,
    SharedAct,
    SharedDown,
    MlpResidual,
    Residual,
    FinalNorm,
    LmHead,
    // Communication between GPUs of a parallel deployment (crate::parallel): link bytes, no
    // FLOPs or HBM bytes.
    AllReduceEmbedding,
    AllReduceAttn,
    AllReduceMlp,
    AllToAllDispatch,
    AllToAllCombine,
    AllGatherLogits,
    PpSend,
    PipelineWait,
}

/// Where an operator sits in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// Before the layer stack.
    Embedding,
    /// Attention half of a layer.
    Attention,
    /// Feed-forward half of a layer.
    Mlp,
    /// After the layer stack.
    Head,
}

impl OpKind {
    /// snake_case name used in tables and JSON (`q_proj`).
    pub fn name(self) -> &'static str {
        use OpKind::*;
        match self {
            Embedding => "embedding",
            AttnNorm => "attn_norm",
            QProj => "q_proj",
            KProj => "k_proj",
            VProj => "v_proj",
            QkvProj => "qkv_proj",
            QAProj => "q_a_proj",
            QANorm => "q_a_norm",
            QBProj => "q_b_proj",
            KvAProj => "kv_a_proj",
            KvANorm => "kv_a_norm",
            QkNorm => "qk_norm",
            Rope => "rope",
            KvWrite => "kv_write",
            KvBProj => "kv_b_proj",
            QAbsorb => "q_absorb",
            Attention => "attention",
            AttnScores => "attn_scores",
            Softmax => "softmax",
            AttnValues => "attn_values",
            VUp => "v_up",
            OProj => "o_proj",
            AttnResidual => "attn_residual",
            MlpNorm => "mlp_norm",
            Mlp => "mlp",
            GateProj => "gate_proj",
            UpProj => "up_proj",
            GateUpProj => "gate_up_proj",
            Act => "act",
            DownProj => "down_proj",
            Router => "router",
            ExpertGate => "expert_gate",
            ExpertUp => "expert_up",
            ExpertAct => "expert_act",
            ExpertDown => "expert_down",
            ExpertCombine => "expert_combine",
            SharedGate => "shared_gate",
            SharedUp => "shared_up",
            SharedAct => "shared_act",
            SharedDown => "shared_down",
            MlpResidual => "mlp_residual",
            Residual => "residual",
            FinalNorm => "final_norm",
            LmHead => "lm_head",
            AllReduceEmbedding => "all_reduce_embedding",
            AllReduceAttn => "all_reduce_attn",
            AllReduceMlp => "all_reduce_mlp",
            AllToAllDispatch => "all_to_all_dispatch",
            AllToAllCombine => "all_to_all_combine",
            AllGatherLogits => "all_gather_logits",
            PpSend => "pp_send",
            PipelineWait => "pipeline_wait",
        }
    }

    /// Whether this is communication between GPUs (or the pipeline's wait), costed on a link
    /// rather than on the roofline ([`crate::parallel`]).
    pub fn is_comm(self) -> bool {
        use OpKind::*;
        matches!(
            self,
            AllReduceEmbedding
                | AllReduceAttn
                | AllReduceMlp
                | AllToAllDispatch
                | AllToAllCombine
                | AllGatherLogits
                | PpSend
                | PipelineWait
        )
    }

    /// Short name inside its block, used in zoom paths (`layer.0.mlp.up`): the name without the
    /// block prefix and without `_proj`.
    pub fn short(self) -> &'static str {
        use OpKind::*;
        match self {
            AttnNorm | MlpNorm => "norm",
            AttnResidual | MlpResidual => "residual",
            QProj => "q",
            KProj => "k",
            VProj => "v",
            QkvProj => "qkv",
            QAProj => "q_a",
            QBProj => "q_b",
            KvAProj => "kv_a",
            KvBProj => "kv_b",
            OProj => "o",
            GateProj => "gate",
            UpProj => "up",
            GateUpProj => "gate_up",
            DownProj => "down",
            AttnScores => "scores",
            AttnValues => "values",
            AllReduceEmbedding | AllReduceAttn | AllReduceMlp => "all_reduce",
            AllToAllDispatch => "dispatch",
            AllToAllCombine => "combine",
            AllGatherLogits => "all_gather",
            PpSend => "send",
            PipelineWait => "wait",
            other => other.name(),
        }
    }

    /// The block the operator belongs to.
    pub fn block(self) -> Block {
        use OpKind::*;
        match self {
            Embedding | AllReduceEmbedding => Block::Embedding,
            // The pipeline's send and wait come after a stage's layers.
            FinalNorm | LmHead | AllGatherLogits | PpSend | PipelineWait => Block::Head,
            AttnNorm | QProj | KProj | VProj | QkvProj | QAProj | QANorm | QBProj | KvAProj | KvANorm | QkNorm
            | Rope | KvWrite | KvBProj | QAbsorb | Attention | AttnScores | Softmax | AttnValues | VUp | OProj
            | AttnResidual | AllReduceAttn => Block::Attention,
            _ => Block::Mlp,
        }
    }

    /// Whether this is one of the minor (elementwise or gather) operators that seed 004 leaves out.
    pub fn is_minor(self) -> bool {
        use OpKind::*;
        matches!(
            self,
            Embedding
                | AttnNorm
                | QANorm
                | KvANorm
                | QkNorm
                | Rope
                | KvWrite
                | Softmax
                | AttnResidual
                | MlpNorm
                | Act
                | ExpertAct
                | ExpertCombine
                | SharedAct
                | MlpResidual
                | Residual
                | FinalNorm
        )
    }
}

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
    /// Sliding window, tokens.
    pub window: Option<u64>,
    /// HBM bytes of K for one position, all KV heads (cache and activation parts).
    pub k_bytes_per_position: f64,
    /// HBM bytes of V for one position, all KV heads (0 when the kernel reuses K's load).
    pub v_bytes_per_position: f64,
    /// Bytes of one query position's Q (all heads).
    pub q_bytes_per_query: f64,
    /// Bytes of one query position's output O (all heads).
    pub o_bytes_per_query: f64,
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
}

impl Op {
    /// An operator that is neither a GEMM nor attention and runs in a kernel of its own.
    pub fn plain(kind: OpKind, cost: Cost, math: MathFormat) -> Op {
        Op { kind, cost, math, gemm: None, attention: None, fused: false }
    }
}

/// FLOPs per element of a norm (RMSNorm: square, accumulate, normalise, scale; LayerNorm adds
/// mean, subtract and shift).
fn norm_flops(kind: NormKind) -> f64 {
    match kind {
        NormKind::Rms => 4.0,
        NormKind::Layer => 7.0,
    }
}

/// Bytes per position read from the cache (`kv`) or from activations (`act`) for one operand of
/// attention.
#[derive(Clone, Copy)]
struct Operand {
    kv: f64,
    act: f64,
}

/// Attention core parameters shared by standard attention and MLA.
struct AttnCore {
    heads: f64,
    kv_heads: f64,
    window: Option<u64>,
    qk_dim: f64,
    v_dim: f64,
    k: Operand,
    v: Operand,
    sinks: bool,
}

/// Operator generator for one scenario.
pub struct OpBuilder<'a> {
    sc: &'a Scenario,
    tokens: f64,
    act: Precision,
    a: f64,
    kv: f64,
    seed: bool,
    hidden: u64,
}

impl<'a> OpBuilder<'a> {
    /// Prepare the generator.
    pub fn new(sc: &'a Scenario) -> Self {
        let w = &sc.workload;
        let seed = w.counting == Counting::Seed;
        OpBuilder {
            sc,
            tokens: w.step_tokens(),
            act: w.activations,
            a: if seed { 0.0 } else { w.activations.bytes() },
            kv: w.kv.bytes(),
            seed,
            hidden: sc.model.hidden_size,
        }
    }

    fn math(&self, m: MathFormat) -> MathFormat {
        self.sc.gpu.supported_math(m)
    }

    /// `copies` GEMMs sharing `m_total` rows between them ([`Gemm`]: FLOPs, weights read once,
    /// inputs read and outputs written).
    #[allow(clippy::too_many_arguments)]
    fn gemm(&self, kind: OpKind, m_total: f64, k: u64, n: u64, w: Precision, bias: bool, copies: f64) -> Op {
        let gemm =
            Gemm { m: m_total / copies.max(1e-300), n, k, weight: w, activation: self.act, instances: copies, bias };
        let cost = Cost {
            flops: gemm.flops(),
            weight_bytes: gemm.weight_bytes(),
            activation_bytes: if self.seed { 0.0 } else { gemm.activation_bytes() },
            ..Cost::ZERO
        };
        let math = self.math(gemm_math(w, self.sc.workload.gemm_activations));
        Op { kind, cost, math, gemm: Some(gemm), attention: None, fused: false }
    }

    /// Elementwise over `elems` elements: `flops_per` FLOPs each, `tensors` element-sized reads and
    /// writes, plus `param_bytes` of weights.
    fn elementwise(&self, kind: OpKind, elems: f64, flops_per: f64, tensors: f64, param_bytes: f64) -> Op {
        let cost = Cost {
            flops: elems * flops_per,
            weight_bytes: param_bytes,
            activation_bytes: elems * tensors * self.a,
            ..Cost::ZERO
        };
        Op::plain(kind, cost, MathFormat::Vector)
    }

    fn norm(&self, kind: OpKind, norm: NormKind, dim: u64, copies: u32) -> Op {
        let param_bytes = norm.params(dim) as f64 * self.sc.weights.attention.unquantised().bytes();
        let mut op = self.elementwise(kind, self.tokens * dim as f64, norm_flops(norm), 2.0, param_bytes);
        op.cost = op.cost * f64::from(copies);
        op
    }

    /// The embedding gather (plus learned positions and OPT's project_in).
    #[inline]
    pub fn embedding(&self, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share (vocab-parallel table) and the all-reduce after it.
        if !self.sc.parallel.is_single() {
            let shard = crate::parallel::OpShard::outside_layers(self.sc, self.tokens);
            return self.embedding_ops(&mut |op| shard.emit(op, f));
        }
        self.embedding_ops(f)
    }

    fn embedding_ops(&self, f: &mut impl FnMut(Op)) {
        if self.seed {
            return;
        }
        let m = &self.sc.model;
        let e = &m.embedding;
        let t = self.tokens;
        let eb = self.sc.weights.embedding.bytes();
        let h = self.hidden as f64;
        let mut cost = Cost {
            flops: if e.positions > 0 { t * h } else { 0.0 },
            weight_bytes: t * e.dim as f64 * eb + if e.positions > 0 { t * h * eb } else { 0.0 },
            activation_bytes: t * h * self.a,
            ..Cost::ZERO
        };
        if e.dim != self.hidden {
            cost += self.gemm(OpKind::Embedding, t, e.dim, self.hidden, self.sc.weights.embedding, false, 1.0).cost;
        }
        f(Op::plain(OpKind::Embedding, cost, MathFormat::Vector));
    }

    /// The final norm and the LM head.
    #[inline]
    pub fn head(&self, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share (vocab-parallel LM head) and the gather of the logits.
        if !self.sc.parallel.is_single() {
            let shard = crate::parallel::OpShard::outside_layers(self.sc, self.tokens);
            return self.head_ops(&mut |op| shard.emit(op, f));
        }
        self.head_ops(f)
    }

    fn head_ops(&self, f: &mut impl FnMut(Op)) {
        let m = &self.sc.model;
        if let (Some(norm), false) = (m.final_norm, self.seed) {
            f(self.norm(OpKind::FinalNorm, norm, self.hidden, 1));
        }
        let rows = self.sc.workload.logit_tokens();
        let mut op =
            self.gemm(OpKind::LmHead, rows, m.lm_head_in(), m.embedding.vocab, self.sc.weights.lm_head, false, 1.0);
        if m.lm_head_in() != self.hidden {
            op.cost +=
                self.gemm(OpKind::LmHead, rows, self.hidden, m.lm_head_in(), self.sc.weights.lm_head, false, 1.0).cost;
        }
        f(op);
    }

    /// Every operator of one decoder layer, in order.
    #[inline]
    pub fn layer(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share of each operator (tensor and expert parallel) and the
        // communication at the block boundaries.
        if !self.sc.parallel.is_single() {
            let shard = crate::parallel::OpShard::layer(self.sc, layer, self.tokens);
            return self.layer_ops(layer, &mut |op| shard.emit(op, f));
        }
        self.layer_ops(layer, f)
    }

    fn layer_ops(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        let minor = !self.seed;
        let h = self.hidden;
        if minor && layer.attn_norms > 0 {
            f(self.norm(OpKind::AttnNorm, layer.norm, h, layer.attn_norms));
        }
        match &layer.attention {
            Attention::Standard(a) => self.standard_attention(a, f),
            Attention::Latent(a) => self.latent_attention(a, f),
        }
        if minor && !layer.parallel {
            f(self.elementwise(OpKind::AttnResidual, self.tokens * h as f64, 1.0, 3.0, 0.0));
        }
        if minor && layer.mlp_norms > 0 {
            f(self.norm(OpKind::MlpNorm, layer.norm, h, layer.mlp_norms));
        }
        match &layer.mlp {
            Mlp::Dense(m) => self.dense_mlp(m, self.sc.weights.mlp, DENSE_KINDS, f),
            Mlp::Moe(m) => self.moe(m, f),
        }
        if minor {
            if layer.parallel {
                // x + attn(x) + mlp(x): two adds, three reads, one write.
                f(self.elementwise(OpKind::Residual, self.tokens * h as f64, 2.0, 4.0, 0.0));
            } else {
                f(self.elementwise(OpKind::MlpResidual, self.tokens * h as f64, 1.0, 3.0, 0.0));
            }
        }
    }

    fn standard_attention(&self, at: &StandardAttention, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let (q, kv) = (at.q_dim(), at.kv_dim());
        if at.fused_qkv || self.seed {
            f(self.gemm(OpKind::QkvProj, t, h, q + 2 * kv, w, at.qkv_bias, 1.0));
        } else {
            f(self.gemm(OpKind::QProj, t, h, q, w, at.qkv_bias, 1.0));
            f(self.gemm(OpKind::KProj, t, h, kv, w, at.qkv_bias, 1.0));
            f(self.gemm(OpKind::VProj, t, h, kv, w, at.qkv_bias, 1.0));
        }
        let minor = !self.seed;
        let qk_elems = t * (q + kv) as f64;
        if minor && at.qk_norm != QkNorm::None {
            let params = match at.qk_norm {
                QkNorm::PerHead => 2 * at.head_dim,
                _ => q + kv,
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
            f(self.elementwise(OpKind::Rope, qk_elems, 3.0, 2.0, 0.0));
        }
        let g = self.sc.workload.attention_geometry(at.window);
        let per_pos = Operand { kv: kv as f64 * self.kv, act: 0.0 };
        self.kv_write(g, 2.0 * kv as f64, f);
        let core = AttnCore {
            heads: at.heads as f64,
            kv_heads: at.kv_heads as f64,
            window: at.window,
            qk_dim: at.head_dim as f64,
            v_dim: at.head_dim as f64,
            k: per_pos,
            v: per_pos,
            sinks: at.sinks,
        };
        self.attention_core(&core, g, f);
        f(self.gemm(OpKind::OProj, t, q, h, w, at.o_bias, 1.0));
    }

    /// Append this step's K/V (`elems_per_pos` values per position) to the cache.
    fn kv_write(&self, g: AttentionGeometry, elems_per_pos: f64, f: &mut impl FnMut(Op)) {
        if self.seed {
            return;
        }
        let elems = g.kv_positions_written * elems_per_pos;
        let cost = Cost { kv_write_bytes: elems * self.kv, activation_bytes: elems * self.a, ..Cost::ZERO };
        f(Op::plain(OpKind::KvWrite, cost, MathFormat::Vector));
    }

    /// QKᵀ, softmax and P·V, fused (FlashAttention) or as three kernels.
    fn attention_core(&self, c: &AttnCore, g: AttentionGeometry, f: &mut impl FnMut(Op)) {
        let math = self.math(self.act.native_math());
        let qk_flops = 2.0 * c.heads * c.qk_dim * g.pairs;
        let pv_flops = 2.0 * c.heads * c.v_dim * g.pairs;
        let q_bytes = g.queries * c.heads * c.qk_dim * self.a;
        let o_bytes = g.queries * c.heads * c.v_dim * self.a;
        let read = |o: Operand| (g.kv_positions_read * o.kv, g.kv_positions_read * o.act * self.a);
        let (k_kv, k_act) = read(c.k);
        let (v_kv, v_act) = read(c.v);
        // Softmax: max, subtract, exp, sum, divide = 5 FLOPs per score; sinks add one column.
        let sink_cols = if c.sinks { g.queries * c.heads } else { 0.0 };
        let shape = Some(AttentionShape {
            heads: c.heads,
            kv_heads: c.kv_heads,
            qk_dim: c.qk_dim,
            v_dim: c.v_dim,
            window: c.window,
            k_bytes_per_position: c.k.kv + c.k.act * self.a,
            v_bytes_per_position: c.v.kv + c.v.act * self.a,
            q_bytes_per_query: c.heads * c.qk_dim * self.a,
            o_bytes_per_query: c.heads * c.v_dim * self.a,
        });
        if self.sc.workload.flash_attention || self.seed {
            let cost = Cost {
                flops: qk_flops + pv_flops,
                kv_read_bytes: k_kv + v_kv,
                activation_bytes: q_bytes + k_act + v_act + o_bytes,
                ..Cost::ZERO
            };
            f(Op { kind: OpKind::Attention, cost, math, gemm: None, attention: shape, fused: false });
            if !self.seed {
                let sm = Cost { flops: 5.0 * (c.heads * g.pairs + sink_cols), ..Cost::ZERO };
                // Inside the FlashAttention kernel: charged the marginal time it adds there.
                f(Op {
                    kind: OpKind::Softmax,
                    cost: sm,
                    math: MathFormat::Vector,
                    gemm: None,
                    attention: None,
                    fused: true,
                });
            }
        } else {
            let scores = c.heads * g.materialised_scores * self.a;
            let qk =
                Cost { flops: qk_flops, kv_read_bytes: k_kv, activation_bytes: q_bytes + k_act + scores, ..Cost::ZERO };
            f(Op { kind: OpKind::AttnScores, cost: qk, math, gemm: None, attention: shape, fused: false });
            let sm = Cost {
                flops: 5.0 * (c.heads * g.materialised_scores + sink_cols),
                activation_bytes: 2.0 * scores,
                ..Cost::ZERO
            };
            f(Op {
                kind: OpKind::Softmax,
                cost: sm,
                math: MathFormat::Vector,
                gemm: None,
                attention: None,
                fused: false,
            });
            let pv =
                Cost { flops: pv_flops, kv_read_bytes: v_kv, activation_bytes: scores + v_act + o_bytes, ..Cost::ZERO };
            f(Op { kind: OpKind::AttnValues, cost: pv, math, gemm: None, attention: shape, fused: false });
        }
    }

    fn latent_attention(&self, at: &LatentAttention, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        let nh = at.heads;
        let (dn, dr, dv, r) = (at.qk_nope_head_dim, at.qk_rope_head_dim, at.v_head_dim, at.kv_lora_rank);
        match at.q_lora_rank {
            Some(rq) => {
                f(self.gemm(OpKind::QAProj, t, h, rq, w, at.bias, 1.0));
                if !self.seed {
                    f(self.norm(OpKind::QANorm, NormKind::Rms, rq, 1));
                }
                f(self.gemm(OpKind::QBProj, t, rq, nh * (dn + dr), w, false, 1.0));
            }
            None => f(self.gemm(OpKind::QProj, t, h, nh * (dn + dr), w, false, 1.0)),
        }
        f(self.gemm(OpKind::KvAProj, t, h, r + dr, w, at.bias, 1.0));
        if !self.seed {
            f(self.norm(OpKind::KvANorm, NormKind::Rms, r, 1));
            f(self.elementwise(OpKind::Rope, t * ((nh + 1) * dr) as f64, 3.0, 2.0, 0.0));
        }
        let g = self.sc.workload.attention_geometry(None);
        self.kv_write(g, (r + dr) as f64, f);
        let form = match (self.sc.workload.mla, self.sc.workload.phase) {
            (MlaForm::Auto, Phase::Decode) | (MlaForm::Absorbed, _) => MlaForm::Absorbed,
            _ => MlaForm::Naive,
        };
        let (nhf, kv) = (nh as f64, self.kv);
        if form == MlaForm::Absorbed {
            // Fold W_UK into q: per head [T×dn]·[dn×r].
            f(self.gemm(OpKind::QAbsorb, t * nhf, dn, r, w, false, nhf));
            let core = AttnCore {
                heads: nhf,
                kv_heads: 1.0,
                window: None,
                qk_dim: (r + dr) as f64,
                v_dim: r as f64,
                k: Operand { kv: (r + dr) as f64 * kv, act: 0.0 },
                // The fused kernel reads the latent once (as K); an unfused P·V reads it again.
                v: Operand { kv: if self.sc.workload.flash_attention { 0.0 } else { r as f64 * kv }, act: 0.0 },
                sinks: false,
            };
            self.attention_core(&core, g, f);
            f(self.gemm(OpKind::VUp, t * nhf, r, dv, w, false, nhf));
        } else {
            // Expand every attended position's latent into per-head k_nope and v.
            let positions = g.kv_positions_read;
            let mut expand = self.gemm(OpKind::KvBProj, positions, r, nh * (dn + dv), w, false, 1.0);
            // Its input is the cached latent: KV bytes, not activations.
            expand.cost.activation_bytes -= positions * r as f64 * self.a;
            expand.cost.kv_read_bytes += positions * r as f64 * kv;
            f(expand);
            let core = AttnCore {
                heads: nhf,
                kv_heads: nhf,
                window: None,
                qk_dim: (dn + dr) as f64,
                v_dim: dv as f64,
                k: Operand { kv: dr as f64 * kv, act: (nh * dn) as f64 },
                v: Operand { kv: 0.0, act: (nh * dv) as f64 },
                sinks: false,
            };
            self.attention_core(&core, g, f);
        }
        f(self.gemm(OpKind::OProj, t, nh * dv, h, w, false, 1.0));
    }

    fn dense_mlp(&self, m: &DenseMlp, w: Precision, kinds: MlpKinds, f: &mut impl FnMut(Op)) {
        let (t, h, i) = (self.tokens, self.hidden, m.intermediate);
        if self.seed {
            let mats = if m.gated { 3 } else { 2 };
            f(self.gemm(kinds.seed, t, h, mats * i, w, false, 1.0));
            return;
        }
        self.mlp_body(t, m, w, 1.0, kinds, f);
    }

    /// Gate/up, activation and down for `assignments` (token, MLP) pairs over `copies` weight sets.
    fn mlp_body(
        &self,
        assignments: f64,
        m: &DenseMlp,
        w: Precision,
        copies: f64,
        kinds: MlpKinds,
        f: &mut impl FnMut(Op),
    ) {
        let (h, i) = (self.hidden, m.intermediate);
        if m.gated {
            if m.fused_gate_up {
                f(self.gemm(kinds.gate_up, assignments, h, 2 * i, w, m.bias, copies));
            } else {
                f(self.gemm(kinds.gate, assignments, h, i, w, m.bias, copies));
                f(self.gemm(kinds.up, assignments, h, i, w, m.bias, copies));
            }
            let per = m.activation.flops_per_element() + 1.0;
            f(self.elementwise(kinds.act, assignments * i as f64, per, 3.0, 0.0));
        } else {
            f(self.gemm(kinds.up, assignments, h, i, w, m.bias, copies));
            f(self.elementwise(kinds.act, assignments * i as f64, m.activation.flops_per_element(), 2.0, 0.0));
        }
        f(self.gemm(kinds.down, assignments, i, h, w, m.bias, copies));
    }

    fn moe(&self, m: &MoeMlp, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let wts = &self.sc.weights;
        let mut router = self.gemm(OpKind::Router, t, h, m.experts, wts.router, m.router_bias, 1.0);
        if m.shared_gate {
            router.cost += self.gemm(OpKind::Router, t, h, 1, wts.router, false, 1.0).cost;
        }
        f(router);
        // Expected distinct experts touched by the step's tokens (prefill counts tokens). The
        // routing was checked against every MoE layer by `Scenario::new`; NaN would surface loudly.
        let touched = expected_experts_touched(m.experts, m.top_k, t, &self.sc.routing).unwrap_or(f64::NAN);
        let assignments = t * m.top_k as f64;
        let we = wts.experts;
        if self.seed {
            let mats = if m.expert.gated { 3 } else { 2 };
            f(self.gemm(OpKind::ExpertUp, assignments, h, mats * m.expert.intermediate, we, false, touched));
        } else {
            self.mlp_body(assignments, &m.expert, we, touched, EXPERT_KINDS, f);
            // Weighted sum of the k expert outputs per token.
            let cost = Cost {
                flops: 2.0 * assignments * h as f64,
                activation_bytes: (assignments + t) * h as f64 * self.a,
                ..Cost::ZERO
            };
            f(Op {
                kind: OpKind::ExpertCombine,
                cost,
                math: MathFormat::Vector,
                gemm: None,
                attention: None,
                fused: false,
            });
        }
        if let Some(shared) = &m.shared {
            self.dense_mlp(shared, wts.shared_experts, SHARED_KINDS, f);
        }
    }
}

/// Operator kinds used by one MLP flavour.
#[derive(Clone, Copy)]
struct MlpKinds {
    gate: OpKind,
    up: OpKind,
    gate_up: OpKind,
    act: OpKind,
    down: OpKind,
    seed: OpKind,
}

const DENSE_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::GateProj,
    up: OpKind::UpProj,
    gate_up: OpKind::GateUpProj,
    act: OpKind::Act,
    down: OpKind::DownProj,
    seed: OpKind::Mlp,
};
const EXPERT_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::ExpertGate,
    up: OpKind::ExpertUp,
    gate_up: OpKind::ExpertGate,
    act: OpKind::ExpertAct,
    down: OpKind::ExpertDown,
    seed: OpKind::ExpertUp,
};
const SHARED_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::SharedGate,
    up: OpKind::SharedUp,
    gate_up: OpKind::SharedGate,
    act: OpKind::SharedAct,
    down: OpKind::SharedDown,
    seed: OpKind::SharedUp,
};

/// Visit every operator of the step with its multiplicity: the embedding once, each distinct
/// layer shape once with the number of layers that have it, then the head. In a parallel
/// deployment these are one GPU's shares of every layer; [`crate::parallel::for_each_gpu_op`]
/// adds the pipeline (which layers a GPU holds, micro-batches) and the timing of communication.
pub fn for_each_op(sc: &Scenario, mut f: impl FnMut(Op, u64)) {
    let b = OpBuilder::new(sc);
    b.embedding(&mut |op| f(op, 1));
    for (layer, count) in sc.model.layer_groups() {
        b.layer(layer, &mut |op| f(op, count));
    }
    b.head(&mut |op| f(op, 1));
}
