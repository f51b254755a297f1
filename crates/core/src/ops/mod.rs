//! The operators of one forward step and their FLOPs and bytes.
//!
//! Counting rules (the reference calculator rules 1–3, extended to every operator; `T` tokens in the step, `a`
//! bytes per activation element, `w` bytes per weight, `e` bytes per KV element):
//!
//! * **GEMM** `[T×K]·[K×N]`: FLOPs, weight and activation bytes as [`Gemm`] counts them; the
//!   weights are read once per step whatever `T` is, the input read and the output written once.
//! * **Attention** per layer: `2·nh·d_qk` FLOPs per (query, key) pair for QKᵀ and `2·nh·d_v` for
//!   P·V; K and V of every attended position read from the cache (`2·kv·hd·e` per position); Q
//!   read and O written. With FlashAttention the scores stay on chip; without it the score matrix
//!   is written, read by the softmax, written again as probabilities and read by P·V.
//! * **Elementwise** operators run on the vector units: FLOPs per element are the conventions of
//!   [`crate::conventions`] (RMSNorm 4, LayerNorm 7, RoPE 3, residual add 1, softmax 5, SiLU 4,
//!   GELU 8, +1 for a gate product); bytes are one read and one write per tensor element touched.
//! * **MoE** experts: FLOPs for every (token, expert) assignment; weight bytes for the expected
//!   number of distinct experts touched ([`crate::moe`]).
//!
//! Under [`Counting::Seed`] only the reference calculator's rows are produced (qkv_proj, o_proj, mlp, attention,
//! lm_head) with weight and KV-read bytes only.
//!
//! In a parallel deployment ([`crate::parallel`]) the builder hands out one GPU's share of every
//! operator and adds the communication operators (all-reduces, all-gather, all-to-all) at the
//! block boundaries; the hooks are marked `PARALLEL` below. On one GPU they are the identity.

use crate::conventions::RESIDUAL_FLOPS_PER_ELEMENT;
use crate::cost::Cost;
pub use crate::gemm::Gemm;
use crate::model::{Attention, LayerSpec, Mlp};
use crate::precision::{gemm_math, MathFormat, Precision};
use crate::scenario::Scenario;
use crate::workload::Counting;

mod attention;
mod compressed;
mod hyper;
mod minor;
mod mlp;
mod recurrent;
mod shard;
mod sparse;

pub use crate::kinds::{Block, OpKind};
pub use crate::operator::{AttentionShape, MoeShape, Op};
use mlp::DENSE_KINDS;
pub use shard::{expert_share, ExpertShare, OpShard};

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

/// Whether operators of this kind read the cached context, or depend on how a step's tokens
/// split into sequences: those [`OpBuilder::layer_context_ops`] emits (attention's core, MLA's
/// expanded up-projection, a sparse layer's indexer scores and top-k, a recurrent mixer's
/// convolution and scan, whose state traffic is per sequence).
pub fn reads_context(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Attention
            | OpKind::Softmax
            | OpKind::AttnScores
            | OpKind::AttnValues
            | OpKind::KvBProj
            | OpKind::Indexer
            | OpKind::TopK
            | OpKind::ShortConv
            | OpKind::DeltaRule
            | OpKind::SsmScan
    )
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

    /// A `[m×k]·[k×n]` GEMM on this scenario's activations (one weight matrix, no bias; see
    /// [`Gemm::with_bias`], [`Gemm::split`]).
    fn dense(&self, m: f64, n: u64, k: u64, w: Precision) -> Gemm {
        Gemm::new(m, n, k, w, self.act)
    }

    /// The operator of one GEMM ([`Gemm`]: FLOPs, weights read once per instance, inputs read and
    /// outputs written).
    fn gemm(&self, kind: OpKind, gemm: Gemm) -> Op {
        let w = gemm.weight;
        let cost = Cost {
            flops: gemm.flops(),
            weight_bytes: gemm.weight_bytes(),
            activation_bytes: if self.seed { 0.0 } else { gemm.activation_bytes() },
            activation_written_bytes: if self.seed { 0.0 } else { gemm.output_bytes() },
            ..Cost::ZERO
        };
        let math = self.math(gemm_math(w, self.sc.workload.gemm_activations));
        Op { gemm: Some(gemm), ..Op::plain(kind, cost, math) }
    }
    /// Every operator of one decoder layer, in order.
    #[inline]
    pub fn layer(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share of each operator (tensor and expert parallel) and the
        // communication at the block boundaries.
        if !self.sc.parallel.is_single() {
            let shard = shard::OpShard::layer(self.sc, layer, self.tokens);
            return self.layer_ops(layer, &mut |op| shard.emit(op, f));
        }
        self.layer_ops(layer, f)
    }

    /// The operators of one layer that read the cached context ([`reads_context`]: attention's
    /// core, and MLA's expanded up-projection of every attended position), in the order
    /// [`OpBuilder::layer`] emits them and sharded as it shards them. They are the only operators
    /// of a step whose cost depends on its chunks rather than on its sequences and new tokens
    /// ([`crate::workload::Workload::with_chunks`]: only the attention geometry reads the chunks).
    pub fn layer_context_ops(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        if !self.sc.parallel.is_single() {
            let shard = shard::OpShard::layer(self.sc, layer, self.tokens);
            return self.context_ops(layer, &mut |op| shard.emit(op, f));
        }
        self.context_ops(layer, f)
    }

    fn context_ops(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        let wl = &self.sc.workload;
        match &layer.attention {
            Attention::Standard(a) => self.standard_core(a, wl.attention_geometry(a.reach), f),
            Attention::Latent(a) => self.latent_core(a, wl.attention_geometry(a.reach), f),
            Attention::Compressed(a) => self.compressed_core(a, f),
            Attention::Recurrent(m) => self.recurrent_core(m, f),
            Attention::Linear { .. } | Attention::None => {}
        }
    }

    fn layer_ops(&self, layer: &LayerSpec, f: &mut impl FnMut(Op)) {
        let minor = !self.seed;
        let h = self.hidden;
        let t = self.tokens;
        let streams = layer.residual_streams;
        let mixer = !matches!(layer.attention, Attention::None);
        let ffn = !matches!(layer.mlp, Mlp::None);
        if mixer {
            if minor && streams > 1 {
                f(self.hyper_pre(OpKind::AttnHcPre, streams));
            }
            if minor && layer.attn_norms > 0 {
                f(self.norm(OpKind::AttnNorm, layer.norm, h, layer.attn_norms));
            }
            match &layer.attention {
                Attention::Standard(a) => self.standard_attention(a, f),
                Attention::Latent(a) => self.latent_attention(a, f),
                Attention::Compressed(a) => self.compressed_attention(a, f),
                Attention::Recurrent(m) => self.recurrent(m, f),
                Attention::Linear { bias } => {
                    let w = self.sc.weights.attention;
                    f(self.gemm(OpKind::AttnLinear, self.dense(t, h, h, w).with_bias(*bias)));
                }
                Attention::None => {}
            }
            if minor && streams > 1 {
                f(self.hyper_post(OpKind::AttnHcPost, streams));
            } else if minor && !layer.parallel {
                f(self.elementwise(OpKind::AttnResidual, t * h as f64, RESIDUAL_FLOPS_PER_ELEMENT, 3.0, 0.0));
            }
        }
        if ffn {
            if minor && streams > 1 {
                f(self.hyper_pre(OpKind::MlpHcPre, streams));
            }
            if minor && layer.mlp_norms > 0 {
                f(self.norm(OpKind::MlpNorm, layer.norm, h, layer.mlp_norms));
            }
        }
        match &layer.mlp {
            Mlp::Dense(m) => self.dense_mlp(m, self.sc.weights.mlp, DENSE_KINDS, f),
            Mlp::Moe(m) => self.moe(m, f),
            Mlp::Linear { bias } => {
                let w = self.sc.weights.mlp;
                f(self.gemm(OpKind::MlpLinear, self.dense(t, h, h, w).with_bias(*bias)));
            }
            Mlp::None => {}
        }
        if minor && ffn {
            if streams > 1 {
                f(self.hyper_post(OpKind::MlpHcPost, streams));
            } else if layer.parallel {
                // x + attn(x) + mlp(x): two adds, three reads, one write.
                f(self.elementwise(OpKind::Residual, t * h as f64, 2.0 * RESIDUAL_FLOPS_PER_ELEMENT, 4.0, 0.0));
            } else {
                f(self.elementwise(OpKind::MlpResidual, t * h as f64, RESIDUAL_FLOPS_PER_ELEMENT, 3.0, 0.0));
            }
        }
    }
}

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
