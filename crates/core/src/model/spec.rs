//! The resolved model: a list of decoder layers (layers may differ from each other), the
//! embedding, the final norm and the LM head. No `Option`s for things that have defaults: those
//! were resolved when the spec was built (see [`super::hf`]).
//!
//! Parameter counts follow `shared/research/architectures.md` §0.3–0.4: a Linear `[in→out]`
//! holds `in·out` weights (+`out` with bias); RMSNorm holds `dim`, LayerNorm `2·dim`; a tied LM
//! head adds no parameters.

use super::quant::CheckpointQuant;
use crate::conventions;
use crate::error::{Error, Result};
use crate::limits::MAX_PARAMS;
use serde::Serialize;

/// Normalisation layer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NormKind {
    /// RMSNorm: one scale vector.
    Rms,
    /// LayerNorm: scale and bias vectors.
    Layer,
}

impl NormKind {
    /// Parameters of one norm over `dim` features.
    pub fn params(self, dim: u64) -> u64 {
        match self {
            NormKind::Rms => dim,
            NormKind::Layer => 2 * dim,
        }
    }
}

/// Query/key normalisation inside attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QkNorm {
    /// None (llama, mistral, qwen2, …).
    None,
    /// RMSNorm over `head_dim`, shared by all heads (qwen3, gemma3): 2·hd parameters.
    PerHead,
    /// RMSNorm over the full projection (olmo2): (nh + kv)·hd parameters.
    Full,
}

/// Activation function of the MLP. FLOPs per element are a convention (transcendentals count 1):
/// relu 1, silu `x·σ(x)` 4, gelu (tanh form) 8; a gated MLP adds 1 for the product with `up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// SiLU / swish.
    Silu,
    /// GELU (erf or tanh form).
    Gelu,
    /// ReLU.
    Relu,
    /// gpt-oss clamped SwiGLU `(clamp(up)+1)·g·σ(αg)`: silu plus two clamps and an add.
    ClampedSwiglu,
}

impl Activation {
    /// FLOPs per element of the activation itself, without the gate product ([`crate::conventions`]).
    pub fn flops_per_element(self) -> f64 {
        match self {
            Activation::Relu => conventions::RELU_FLOPS_PER_ELEMENT,
            Activation::Silu => conventions::SILU_FLOPS_PER_ELEMENT,
            Activation::Gelu => conventions::GELU_FLOPS_PER_ELEMENT,
            Activation::ClampedSwiglu => conventions::CLAMPED_SWIGLU_FLOPS_PER_ELEMENT,
        }
    }

    /// Map a `hidden_act` string.
    pub fn from_hf(s: &str) -> Option<Activation> {
        let s = s.to_ascii_lowercase();
        Some(match s.as_str() {
            "silu" | "swish" | "swiglu" => Activation::Silu,
            "relu" => Activation::Relu,
            "clamped_swiglu" => Activation::ClampedSwiglu,
            _ if s.starts_with("gelu") => Activation::Gelu,
            _ => return None,
        })
    }
}

/// Standard multi-head attention with grouped (or multi-query) K/V heads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct StandardAttention {
    /// Query heads `nh`.
    pub heads: u64,
    /// Key/value heads `kv` (= nh for MHA, 1 for MQA).
    pub kv_heads: u64,
    /// Head dimension `hd` (not necessarily hidden/heads).
    pub head_dim: u64,
    /// Bias on q, k and v projections.
    pub qkv_bias: bool,
    /// Bias on the output projection.
    pub o_bias: bool,
    /// The checkpoint stores q, k and v as one fused matrix (phi3, falcon, gpt2).
    pub fused_qkv: bool,
    /// Q/K normalisation.
    pub qk_norm: QkNorm,
    /// Sliding window in tokens (`None` = full attention).
    pub window: Option<u64>,
    /// Learned attention-sink logits, one per head (gpt-oss).
    pub sinks: bool,
    /// Rotary embedding applied to q and k (false for learned/absolute positions or ALiBi).
    pub rope: bool,
}

/// DeepSeek multi-head latent attention (MLA).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct LatentAttention {
    /// Query heads.
    pub heads: u64,
    /// Rank of the query down-projection (`None`: q is a plain projection, as in V2-Lite).
    pub q_lora_rank: Option<u64>,
    /// Rank of the compressed KV latent `r_kv`.
    pub kv_lora_rank: u64,
    /// Per-head query/key dimension without rotary part `dn`.
    pub qk_nope_head_dim: u64,
    /// Rotary part `dr` (shared single-head key).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension `dv`.
    pub v_head_dim: u64,
    /// Bias on the q/kv down-projections (`attention_bias`).
    pub bias: bool,
}

/// Attention of one layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attention {
    /// MHA / GQA / MQA.
    Standard(StandardAttention),
    /// MLA.
    Latent(LatentAttention),
}

/// A dense feed-forward block.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct DenseMlp {
    /// Intermediate width `I`.
    pub intermediate: u64,
    /// Gated (gate, up, down: SwiGLU/GeGLU) or plain (up, down).
    pub gated: bool,
    /// Biases on the projections.
    pub bias: bool,
    /// Activation function.
    pub activation: Activation,
    /// The checkpoint stores gate and up fused (phi3).
    pub fused_gate_up: bool,
}

/// A mixture-of-experts feed-forward block.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct MoeMlp {
    /// Routed experts `E`.
    pub experts: u64,
    /// Experts per token `k`.
    pub top_k: u64,
    /// Shape of one routed expert.
    pub expert: DenseMlp,
    /// Always-on shared expert(s), fused into one MLP.
    pub shared: Option<DenseMlp>,
    /// A sigmoid gate `Linear(H→1)` scales the shared expert (qwen2_moe).
    pub shared_gate: bool,
    /// The router Linear has a bias (gpt-oss).
    pub router_bias: bool,
}

/// Feed-forward block of one layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mlp {
    /// Dense MLP.
    Dense(DenseMlp),
    /// Mixture of experts.
    Moe(MoeMlp),
}

/// One decoder layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct LayerSpec {
    /// Attention.
    pub attention: Attention,
    /// Feed-forward.
    pub mlp: Mlp,
    /// Norm type used by this layer's hidden-size norms.
    pub norm: NormKind,
    /// Hidden-size norms in the attention half (llama 1, gemma 2, falcon-7b parallel 1).
    pub attn_norms: u32,
    /// Hidden-size norms in the MLP half (llama 1, gemma 2, falcon-7b parallel 0).
    pub mlp_norms: u32,
    /// Attention and MLP read the same input and share one residual add (falcon, gpt-j).
    pub parallel: bool,
}

/// The token embedding and position tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Embedding {
    /// Rows of the token table (vocabulary size).
    pub vocab: u64,
    /// Width of the token table (`word_embed_proj_dim` for OPT-350m, otherwise hidden).
    pub dim: u64,
    /// Rows of a learned absolute position table (gpt2 `n_positions`, OPT `max_pos + 2`), else 0.
    pub positions: u64,
}

/// A fully resolved model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    /// Name shown in output (preset name or the path it came from).
    pub name: String,
    /// Family key (`llama`, `qwen3_moe`, …).
    pub family: String,
    /// Hidden size `H`.
    pub hidden_size: u64,
    /// Token and position tables.
    pub embedding: Embedding,
    /// The LM head shares the token table.
    pub tied_embeddings: bool,
    /// Norm applied before the LM head (absent in post-LN OPT-350m).
    pub final_norm: Option<NormKind>,
    /// Weight storage the checkpoint declares in `quantization_config`, if any.
    pub checkpoint_quant: Option<CheckpointQuant>,
    /// Config keys that matter to the real model but are not costed here, in words.
    pub notes: Vec<String>,
    layers: Vec<LayerSpec>,
    #[serde(skip)]
    groups: Vec<LayerGroup>,
}

/// Identical layers, grouped so that per-layer math runs once per distinct layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerGroup {
    /// Index of the first layer of this shape.
    pub first: usize,
    /// How many layers have this shape.
    pub count: u64,
}

impl ModelSpec {
    /// Build and validate a spec.
    pub fn new(
        name: impl Into<String>,
        family: impl Into<String>,
        hidden_size: u64,
        embedding: Embedding,
        tied_embeddings: bool,
        final_norm: Option<NormKind>,
        layers: Vec<LayerSpec>,
    ) -> Result<Self> {
        if layers.is_empty() {
            return Err(Error::invalid("num_hidden_layers", 0, "at least 1 layer"));
        }
        let mut groups: Vec<LayerGroup> = Vec::new();
        for (i, layer) in layers.iter().enumerate() {
            match groups.iter_mut().find(|g| layers[g.first] == *layer) {
                Some(g) => g.count += 1,
                None => groups.push(LayerGroup { first: i, count: 1 }),
            }
        }
        let spec = ModelSpec {
            name: name.into(),
            family: family.into(),
            hidden_size,
            embedding,
            tied_embeddings,
            final_norm,
            checkpoint_quant: None,
            notes: Vec::new(),
            layers,
            groups,
        };
        // Every parameter count below is exact in u64 once the total is at most MAX_PARAMS; the
        // total itself is summed in u128, where no in-range dimensions can overflow.
        let total = spec.total_params_wide();
        if total > u128::from(MAX_PARAMS) {
            return Err(Error::invalid(
                "model parameters",
                crate::error::compact_f64(total as f64),
                format!("at most {MAX_PARAMS} (2⁵⁰): check the dimension fields of the config"),
            ));
        }
        Ok(spec)
    }

    /// [`Self::total_params`] in u128 (no overflow for any dimensions within [`crate::limits`]).
    fn total_params_wide(&self) -> u128 {
        let layers: u128 = self.layer_groups().map(|(l, n)| u128::from(n) * l.params_wide(self.hidden_size).0).sum();
        u128::from(self.embedding_params())
            + u128::from(self.final_norm_params())
            + u128::from(self.lm_head_params())
            + layers
    }

    /// The decoder layers in order.
    pub fn layers(&self) -> &[LayerSpec] {
        &self.layers
    }

    /// Distinct layer shapes with their multiplicity (sums to the layer count).
    pub fn layer_groups(&self) -> impl Iterator<Item = (&LayerSpec, u64)> {
        self.groups.iter().map(|g| (&self.layers[g.first], g.count))
    }

    /// [`ModelSpec::layer_groups`] as (index of the group's first layer, count).
    pub fn layer_group_indices(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.groups.iter().map(|g| (g.first, g.count))
    }

    /// Number of decoder layers.
    pub fn num_layers(&self) -> u64 {
        self.layers.len() as u64
    }

    /// Same shapes, ignoring the name (used to compare a preset with a parsed config).
    pub fn same_shape(&self, other: &ModelSpec) -> bool {
        self.family == other.family
            && self.hidden_size == other.hidden_size
            && self.embedding == other.embedding
            && self.tied_embeddings == other.tied_embeddings
            && self.final_norm == other.final_norm
            && self.layers == other.layers
    }

    /// Input width of the LM head (the token-table width).
    pub fn lm_head_in(&self) -> u64 {
        self.embedding.dim
    }

    /// Parameters of the embedding tables, plus the OPT project_in/out matrices when the table
    /// is narrower than the hidden size.
    pub fn embedding_params(&self) -> u64 {
        let e = &self.embedding;
        let proj = if e.dim != self.hidden_size { 2 * e.dim * self.hidden_size } else { 0 };
        e.vocab * e.dim + e.positions * self.hidden_size + proj
    }

    /// Parameters of the LM head that are not shared with the embedding (0 when tied).
    pub fn lm_head_params(&self) -> u64 {
        if self.tied_embeddings {
            0
        } else {
            self.embedding.vocab * self.lm_head_in()
        }
    }

    /// Parameters of the final norm.
    pub fn final_norm_params(&self) -> u64 {
        self.final_norm.map_or(0, |n| n.params(self.hidden_size))
    }

    /// Total parameters: embedding + layers + final norm + untied LM head.
    pub fn total_params(&self) -> u64 {
        self.embedding_params()
            + self.final_norm_params()
            + self.lm_head_params()
            + self.layer_groups().map(|(l, n)| n * l.params(self.hidden_size).total).sum::<u64>()
    }

    /// Parameters touched by one token: the embedding and LM head, and in MoE layers only the
    /// router, `k` routed experts and the shared experts (DeepSeek's "activated" convention).
    pub fn active_params(&self) -> u64 {
        self.embedding_params()
            + self.final_norm_params()
            + self.lm_head_params()
            + self.layer_groups().map(|(l, n)| n * l.params(self.hidden_size).active).sum::<u64>()
    }

    /// KV-cache elements per token summed over layers, ignoring sliding windows (Llama 3 8B:
    /// 32 · 2 · 8 · 128 = 65,536, i.e. 131,072 bytes at bf16, the reference calculator).
    pub fn kv_elements_per_token(&self) -> u64 {
        self.layer_groups().map(|(l, n)| n * l.attention.kv_elements_per_token()).sum()
    }

    /// Whether any layer is a mixture of experts.
    pub fn is_moe(&self) -> bool {
        self.layers.iter().any(|l| matches!(l.mlp, Mlp::Moe(_)))
    }
}

/// Parameter count of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerParams {
    /// All parameters.
    pub total: u64,
    /// Parameters touched by one token.
    pub active: u64,
}

impl DenseMlp {
    /// Parameters: gated 3·H·I, plain 2·H·I; biases I per up/gate and H for down.
    pub fn params(&self, hidden: u64) -> u64 {
        let mats = if self.gated { 3 } else { 2 };
        let bias = if self.bias { (mats - 1) * self.intermediate + hidden } else { 0 };
        mats * hidden * self.intermediate + bias
    }
}

impl StandardAttention {
    /// Query projection width nh·hd.
    pub fn q_dim(&self) -> u64 {
        self.heads * self.head_dim
    }
    /// Key (or value) projection width kv·hd.
    pub fn kv_dim(&self) -> u64 {
        self.kv_heads * self.head_dim
    }
}

impl LatentAttention {
    /// Per-head query/key dimension dn + dr.
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }
}

impl Attention {
    /// KV-cache elements stored per token in this layer: 2·kv·hd (K and V), or r_kv + dr for MLA
    /// (the compressed latent plus the shared rotary key; architectures.md §8).
    pub fn kv_elements_per_token(&self) -> u64 {
        match self {
            Attention::Standard(a) => 2 * a.kv_dim(),
            Attention::Latent(a) => a.kv_lora_rank + a.qk_rope_head_dim,
        }
    }

    /// Sliding window of this layer, if any.
    pub fn window(&self) -> Option<u64> {
        match self {
            Attention::Standard(a) => a.window,
            Attention::Latent(_) => None,
        }
    }

    /// Parameters of the attention block (projections, biases, q/k norms, sinks).
    pub fn params(&self, hidden: u64) -> u64 {
        narrow(self.params_wide(hidden))
    }

    /// [`Self::params`] in u128: products of three dimensions can pass 2⁶⁴.
    fn params_wide(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let hidden = w(hidden);
        match self {
            Attention::Standard(a) => {
                let (q, kv) = (w(a.q_dim()), w(a.kv_dim()));
                let mut p = hidden * (q + 2 * kv) + q * hidden;
                if a.qkv_bias {
                    p += q + 2 * kv;
                }
                if a.o_bias {
                    p += hidden;
                }
                p += match a.qk_norm {
                    QkNorm::None => 0,
                    QkNorm::PerHead => 2 * w(a.head_dim),
                    QkNorm::Full => q + kv,
                };
                if a.sinks {
                    p += w(a.heads);
                }
                p
            }
            Attention::Latent(a) => {
                let nh = w(a.heads);
                let (r_kv, dr) = (w(a.kv_lora_rank), w(a.qk_rope_head_dim));
                let q = match a.q_lora_rank.map(w) {
                    Some(r) => hidden * r + r + r * nh * w(a.qk_head_dim()) + if a.bias { r } else { 0 },
                    None => hidden * nh * w(a.qk_head_dim()),
                };
                let kv_a = hidden * (r_kv + dr) + if a.bias { r_kv + dr } else { 0 };
                let kv_norm = r_kv;
                let kv_b = r_kv * nh * w(a.qk_nope_head_dim + a.v_head_dim);
                let o = nh * w(a.v_head_dim) * hidden;
                q + kv_a + kv_norm + kv_b + o
            }
        }
    }
}

impl LayerSpec {
    /// Parameter count of the layer, total and active.
    pub fn params(&self, hidden: u64) -> LayerParams {
        let (total, active) = self.params_wide(hidden);
        LayerParams { total: narrow(total), active: narrow(active) }
    }

    /// [`Self::params`] in u128, `(total, active)`.
    fn params_wide(&self, hidden: u64) -> (u128, u128) {
        let w = u128::from;
        let norms = w(u64::from(self.attn_norms + self.mlp_norms)) * w(self.norm.params(hidden));
        let attn = self.attention.params_wide(hidden) + norms;
        match &self.mlp {
            Mlp::Dense(m) => {
                let p = attn + w(m.params(hidden));
                (p, p)
            }
            Mlp::Moe(m) => {
                let router = w(hidden) * w(m.experts) + if m.router_bias { w(m.experts) } else { 0 };
                let shared =
                    w(m.shared.as_ref().map_or(0, |s| s.params(hidden))) + if m.shared_gate { w(hidden) } else { 0 };
                let expert = w(m.expert.params(hidden));
                (attn + router + shared + w(m.experts) * expert, attn + router + shared + w(m.top_k) * expert)
            }
        }
    }
}

/// A parameter count back in u64: exact for every spec [`ModelSpec::new`] accepts (at most
/// [`MAX_PARAMS`]); saturates otherwise rather than wrapping.
fn narrow(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
