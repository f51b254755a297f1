//! The resolved model: a list of decoder layers (layers may differ from each other), the
//! embedding, the final norm and the LM head. No `Option`s for things that have defaults: those
//! were resolved when the spec was built (see [`super::hf`]).
//!
//! Parameter counts follow `shared/research/architectures.md` §0.3–0.4: a Linear `[in→out]`
//! holds `in·out` weights (+`out` with bias); RMSNorm holds `dim`, LayerNorm `2·dim`; a tied LM
//! head adds no parameters.

pub use super::mixer::{CompressedAttention, Indexer, IndexerKeys, IndexerQuery, Reach, Recurrence, RecurrentMixer};
use super::quant::CheckpointQuant;
use crate::conventions;
use crate::error::{Error, Result};
use crate::limits::MAX_PARAMS;
use crate::precision::Precision;
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
    /// gpt-oss clamped SwiGLU `(clamp(up)+1)·g·σ(αg)`: silu plus two clamps and an add
    /// (MiniMax-M3's `swigluoai` is the same function).
    ClampedSwiglu,
    /// Squared ReLU (Nemotron-H's `relu2`).
    Relu2,
}

impl Activation {
    /// FLOPs per element of the activation itself, without the gate product ([`crate::conventions`]).
    pub fn flops_per_element(self) -> f64 {
        match self {
            Activation::Relu => conventions::RELU_FLOPS_PER_ELEMENT,
            Activation::Silu => conventions::SILU_FLOPS_PER_ELEMENT,
            Activation::Gelu => conventions::GELU_FLOPS_PER_ELEMENT,
            Activation::ClampedSwiglu => conventions::CLAMPED_SWIGLU_FLOPS_PER_ELEMENT,
            Activation::Relu2 => conventions::RELU2_FLOPS_PER_ELEMENT,
        }
    }

    /// Map a `hidden_act` string.
    pub fn from_hf(s: &str) -> Option<Activation> {
        let s = s.to_ascii_lowercase();
        Some(match s.as_str() {
            "silu" | "swish" | "swiglu" => Activation::Silu,
            "relu" => Activation::Relu,
            "relu2" | "relu_squared" => Activation::Relu2,
            "clamped_swiglu" | "swigluoai" => Activation::ClampedSwiglu,
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
    /// Query/key dimension per head `hd` (not necessarily hidden/heads).
    pub head_dim: u64,
    /// Value dimension per head `dv` (`v_head_dim`; `hd` unless the config sets it).
    pub v_head_dim: u64,
    /// Keys are the values (`attention_k_eq_v`, Gemma 4's full layers): no value projection —
    /// the values are the key projection's output, normalised apart from the keys — while the
    /// cache still keeps both tensors.
    pub k_eq_v: bool,
    /// Bias on q, k and v projections.
    pub qkv_bias: bool,
    /// Bias on the output projection.
    pub o_bias: bool,
    /// The checkpoint stores q, k and v as one fused matrix (phi3, falcon, gpt2).
    pub fused_qkv: bool,
    /// Q/K normalisation.
    pub qk_norm: QkNorm,
    /// Which cached positions a query reads: all, a sliding window, its chunk, an indexer's top-k.
    pub reach: Reach,
    /// The indexer that selects the positions of a sparse layer ([`Reach::TopK`]; `None` for a
    /// dense layer).
    pub indexer: Option<Indexer>,
    /// A sigmoid gate on the attention output ([`OutputGate`]).
    pub output_gate: OutputGate,
    /// Keys and values come from an earlier layer's cache (Gemma's `num_kv_shared_layers`): no
    /// k/v projections and no cache of its own.
    pub kv_shared: bool,
    /// Learned attention-sink logits, one per head (gpt-oss).
    pub sinks: bool,
    /// Rotary embedding applied to q and k (false for learned/absolute positions or ALiBi).
    pub rope: bool,
}

/// A sigmoid gate on the attention output, projected from the layer's input with the queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputGate {
    /// No gate.
    None,
    /// One gate value per output channel: q_proj is `2·nh·hd` wide (Qwen3-Next/3.5's
    /// `attn_output_gate`, MiniMax-M3's `attention_output_gate`).
    PerChannel,
    /// One gate value per head: `nh` more q_proj columns (Step's `use_head_wise_attn_gate`).
    PerHead,
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
    /// Which cached positions a query reads: all, or the top-k an indexer selects
    /// ([`Reach::TopK`]: DeepSeek Sparse Attention).
    pub reach: Reach,
    /// The lightning indexer that selects them: `None` on a sparse layer that reuses the
    /// selection of an earlier layer (GLM-5.2's `indexer_types` "shared") and on a dense one.
    pub indexer: Option<Indexer>,
    /// A sigmoid gate on the attention output, projected from the hidden state (Kimi-K3's
    /// `mla_use_output_gate`: `H·nh·dv`).
    pub output_gate: bool,
}

/// The token mixer of one layer: attention, a recurrent mixer, a plain projection, or none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attention {
    /// MHA / GQA / MQA (full, windowed, chunked or sparse).
    Standard(StandardAttention),
    /// MLA (dense or sparse).
    Latent(LatentAttention),
    /// DeepSeek-V4's compressed attention: a sliding window and pooled entries of the rest.
    Compressed(CompressedAttention),
    /// A linear-attention or state-space mixer with a constant-size state per sequence.
    Recurrent(RecurrentMixer),
    /// One `H→H` projection in place of attention (nemotron-nas `replace_with_linear`).
    Linear {
        /// The projection has a bias.
        bias: bool,
    },
    /// No token mixer: the layer is a feed-forward block alone (Nemotron-H's `-` and `E`
    /// layers, nemotron-nas `no_op` attention).
    None,
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
    /// The routed experts run in a narrower space than the hidden state.
    pub latent: Option<LatentExperts>,
}

/// Routed experts that work in a latent space narrower than the hidden state: one projection
/// `H→L` before them and one `L→H` after, shared by every expert, so each expert is `L`-wide at
/// its input and output (Nemotron 3's latent MoE, `moe_latent_size`; Kimi-K3's
/// `routed_expert_hidden_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LatentExperts {
    /// The latent width `L`.
    pub dim: u64,
    /// An RMSNorm over the latent before the experts (`latent_moe_use_norm`).
    pub norm: bool,
}

impl LatentExperts {
    /// Parameters: the two projections `2·H·L`, and the norm's `L` scales.
    pub fn params(&self, hidden: u64) -> u128 {
        2 * u128::from(hidden) * u128::from(self.dim) + if self.norm { u128::from(self.dim) } else { 0 }
    }
}

impl MoeMlp {
    /// The width routed experts read and write: the latent width, or the hidden size.
    pub fn expert_width(&self, hidden: u64) -> u64 {
        self.latent.map_or(hidden, |l| l.dim)
    }
}

/// Feed-forward block of one layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mlp {
    /// Dense MLP.
    Dense(DenseMlp),
    /// Mixture of experts.
    Moe(MoeMlp),
    /// One `H→H` projection in place of the MLP (nemotron-nas `replace_with_linear`).
    Linear {
        /// The projection has a bias.
        bias: bool,
    },
    /// No feed-forward block: the layer is a token mixer alone (Nemotron-H's `M` and `*`
    /// layers, nemotron-nas `no_op` FFNs).
    None,
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
    /// Parallel residual streams the layer reads and writes: 1 for the usual residual; `n`
    /// for hyper-connections (DeepSeek-V4's `hc_mult`), which mix `n` streams of `H` into each
    /// block's input and its output back into them.
    pub residual_streams: u64,
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
    /// The multi-token-prediction module (draft layers for speculative decoding), if the
    /// checkpoint has one.
    pub mtp: Option<Mtp>,
    /// Parameters of the vision (and audio) towers and their projectors: weights an engine
    /// loads beside the text model, which a text-only step does not read.
    pub vision_params: u64,
    layers: Vec<LayerSpec>,
    #[serde(skip)]
    groups: Vec<LayerGroup>,
}

/// A multi-token-prediction module: `layers` decoder layers that draft the token after next
/// from the hidden state and the next token's embedding (DeepSeek-V3's `num_nextn_predict_layers`,
/// Qwen3.5's `mtp_num_hidden_layers`), and the weights that join them to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mtp {
    /// Its decoder layers, in order.
    pub layers: Vec<LayerSpec>,
    /// Parameters outside its layers: the projection of `[embedding; hidden]` (`eh_proj`,
    /// `2·H·H`), its norms, and any embedding or LM head the checkpoint stores again for it.
    pub connector_params: u64,
}

impl Mtp {
    /// All its parameters.
    pub fn params(&self, hidden: u64) -> u64 {
        self.connector_params + self.layers.iter().map(|l| l.params(hidden).total).sum::<u64>()
    }
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
            mtp: None,
            vision_params: 0,
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

    /// Same shapes of the language model and its draft layers, ignoring the name and any vision
    /// tower (used to compare a preset, which describes the text model, with a parsed config).
    pub fn same_shape(&self, other: &ModelSpec) -> bool {
        self.family == other.family
            && self.hidden_size == other.hidden_size
            && self.embedding == other.embedding
            && self.tied_embeddings == other.tied_embeddings
            && self.final_norm == other.final_norm
            && self.layers == other.layers
            && self.mtp == other.mtp
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

    /// Parameters of the final norm (and, with hyper-connections, of the collapse of the
    /// residual streams before it, [`Self::hyper_head_params`]).
    pub fn final_norm_params(&self) -> u64 {
        self.final_norm.map_or(0, |n| n.params(self.hidden_size)) + self.hyper_head_params()
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

    /// Cache bytes one token adds across all layers at KV precision `kv`, ignoring windows:
    /// [`Attention::kv_bytes_per_token`] summed (KV elements at `kv`, indexer keys at their own
    /// 8 bits).
    pub fn kv_bytes_per_token(&self, kv: Precision) -> f64 {
        self.layer_groups().map(|(l, n)| n as f64 * l.attention.kv_bytes_per_token(kv)).sum()
    }

    /// Bytes one sequence holds whatever its length: the recurrent layers' states
    /// ([`Attention::state_bytes`], convolution states at `activations`). Qwen3.5-27B: 154 MB.
    pub fn state_bytes_per_sequence(&self, activations: Precision) -> f64 {
        self.layer_groups().map(|(l, n)| n as f64 * l.attention.state_bytes(activations)).sum()
    }

    /// Whether any layer keeps a state of constant size per sequence (a recurrent mixer's,
    /// DeepSeek-V4's compressors').
    pub fn has_state(&self) -> bool {
        self.layer_groups().any(|(l, _)| l.attention.state_bytes(Precision::Bf16) > 0.0)
    }

    /// Parameters of the multi-token-prediction module, which the checkpoint stores beside the
    /// model and engines load only to draft with it (0 without one).
    pub fn mtp_params(&self) -> u64 {
        self.mtp.as_ref().map_or(0, |m| m.params(self.hidden_size))
    }

    /// Parameters of the model's collapse of its residual streams before the final norm
    /// (DeepSeek-V4's `hc_head`: `n·n·H + n + 1`; 0 with one stream).
    pub fn hyper_head_params(&self) -> u64 {
        let n = self.layers.first().map_or(1, |l| l.residual_streams);
        if n <= 1 {
            0
        } else {
            n * n * self.hidden_size + n + 1
        }
    }

    /// The same model with other layers (a lever's or an input's change to its shapes), every
    /// other field kept (checkpoint formats, notes, draft layers, vision tower).
    pub fn with_layers(&self, name: impl Into<String>, layers: Vec<LayerSpec>) -> Result<ModelSpec> {
        let mut spec = ModelSpec::new(
            name,
            self.family.clone(),
            self.hidden_size,
            self.embedding.clone(),
            self.tied_embeddings,
            self.final_norm,
            layers,
        )?;
        spec.checkpoint_quant = self.checkpoint_quant.clone();
        spec.notes = self.notes.clone();
        spec.mtp = self.mtp.clone();
        spec.vision_params = self.vision_params;
        Ok(spec)
    }

    /// The model with every standard and latent attention layer reading and keeping at most
    /// `tokens` cached positions per sequence ([`Reach::limited_to`]: the evict-or-sparsify lever,
    /// the `attend` input); `None` when no layer would change (every attention layer already
    /// reads at most that many, or the model has none). Compressed and recurrent layers are
    /// bounded by their design and stay as they are.
    pub fn with_attention_limit(&self, tokens: u64) -> Option<ModelSpec> {
        let mut layers = self.layers.clone();
        let mut changed = false;
        for l in &mut layers {
            let reach = match &mut l.attention {
                Attention::Standard(a) => &mut a.reach,
                Attention::Latent(a) => &mut a.reach,
                Attention::Compressed(_) | Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => {
                    continue
                }
            };
            let limited = reach.limited_to(tokens);
            changed |= limited != *reach;
            *reach = limited;
        }
        let name = format!("{} (attends ≤ {})", self.name, crate::error::grouped(tokens));
        // The layers differ from valid ones only in their reach: rebuilding cannot fail.
        changed.then(|| self.with_layers(name, layers).ok()).flatten()
    }

    /// The kinds of layer the model is made of, in the order each first appears: its words
    /// ([`LayerSpec::kind_words`]), how many layers, and the first layer's index
    /// (Qwen3.5-27B: 48 × `Gated DeltaNet + MLP` from layer 0, 16 × `gated attention + MLP` from
    /// layer 3).
    pub fn layer_kinds(&self) -> Vec<(String, u64, usize)> {
        let mut kinds: Vec<(String, u64, usize)> = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let words = l.kind_words();
            match kinds.iter_mut().find(|(w, _, _)| *w == words) {
                Some((_, n, _)) => *n += 1,
                None => kinds.push((words, 1, i)),
            }
        }
        kinds
    }

    /// The layer kinds in words, `48 × Gated DeltaNet + MLP, 16 × gated attention + MLP`.
    pub fn layer_kinds_words(&self) -> String {
        self.layer_kinds().iter().map(|(w, n, _)| format!("{n} × {w}")).collect::<Vec<_>>().join(", ")
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
    /// Query projection width nh·hd (the attention's own queries; an output gate adds as many
    /// columns to q_proj, [`Self::q_proj_width`]).
    pub fn q_dim(&self) -> u64 {
        self.heads * self.head_dim
    }
    /// Key projection width kv·hd.
    pub fn kv_dim(&self) -> u64 {
        self.kv_heads * self.head_dim
    }
    /// Value width kv·dv: what the cache keeps and attention reads per position.
    pub fn v_dim(&self) -> u64 {
        self.kv_heads * self.v_head_dim
    }
    /// Value projection width: kv·dv, or 0 when the keys' projection gives the values or an
    /// earlier layer's cache is read.
    pub fn v_proj_width(&self) -> u64 {
        if self.k_eq_v || self.kv_shared {
            0
        } else {
            self.v_dim()
        }
    }
    /// Elements this layer caches per position: K and V (`kv·hd + kv·dv`), none when it reads an
    /// earlier layer's cache.
    pub fn kv_dim_cached(&self) -> u64 {
        if self.kv_shared {
            0
        } else {
            self.kv_dim() + self.v_dim()
        }
    }
    /// Attention output width nh·dv (the input of o_proj).
    pub fn o_dim(&self) -> u64 {
        self.heads * self.v_head_dim
    }
    /// Columns of q_proj: the queries, and the output gate's (as many again per channel, one a
    /// head).
    pub fn q_proj_width(&self) -> u64 {
        match self.output_gate {
            OutputGate::None => self.q_dim(),
            OutputGate::PerChannel => 2 * self.q_dim(),
            OutputGate::PerHead => self.q_dim() + self.heads,
        }
    }
    /// Columns of the k projection (0 when an earlier layer's cache is read).
    pub fn k_proj_width(&self) -> u64 {
        if self.kv_shared {
            0
        } else {
            self.kv_dim()
        }
    }
    /// Columns of the q, k and v projections together.
    pub fn qkv_width(&self) -> u64 {
        self.q_proj_width() + self.k_proj_width() + self.v_proj_width()
    }
    /// The matrix weights: `H·(q_proj + k + v) + o_dim·H`, and the indexer's.
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        w(hidden) * w(self.qkv_width())
            + w(self.o_dim()) * w(hidden)
            + self.indexer.map_or(0, |i| i.matrix_params(hidden))
    }
}

impl LatentAttention {
    /// Per-head query/key dimension dn + dr.
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }

    /// The matrix weights: q (`H·r_q + r_q·nh·(dn+dr)`, or `H·nh·(dn+dr)`), `kv_a` `H·(r_kv+dr)`,
    /// `kv_b` `r_kv·nh·(dn+dv)`, `o` `nh·dv·H`, an output gate `H·nh·dv`, and the indexer's.
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let (h, nh) = (w(hidden), w(self.heads));
        let q = match self.q_lora_rank.map(w) {
            Some(r) => h * r + r * nh * w(self.qk_head_dim()),
            None => h * nh * w(self.qk_head_dim()),
        };
        let gate = if self.output_gate { h * nh * w(self.v_head_dim) } else { 0 };
        q + h * w(self.kv_lora_rank + self.qk_rope_head_dim)
            + w(self.kv_lora_rank) * nh * w(self.qk_nope_head_dim + self.v_head_dim)
            + nh * w(self.v_head_dim) * h
            + gate
            + self.indexer.map_or(0, |i| i.matrix_params(hidden))
    }
}

impl Attention {
    /// KV-cache elements stored per token in this layer at the KV precision: K and V
    /// (`kv·hd + kv·dv`, one tensor when keys are the values), or r_kv + dr for MLA (the
    /// compressed latent plus the shared rotary key; architectures.md §8); 0 for a mixer with
    /// no KV cache of its own per token. An indexer's keys are cached beside at their own
    /// precision, and DeepSeek-V4 caches a fraction of an entry per token
    /// ([`Self::kv_bytes_per_token`]).
    pub fn kv_elements_per_token(&self) -> u64 {
        match self {
            Attention::Standard(a) => a.kv_dim_cached(),
            Attention::Latent(a) => a.kv_lora_rank + a.qk_rope_head_dim,
            Attention::Compressed(_) | Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => 0,
        }
    }

    /// Cache bytes one more token adds to this layer (its growth, windows ignored): its KV
    /// elements at `kv`, its indexer's keys ([`Indexer::key_bytes`]); DeepSeek-V4's
    /// compressed entries and indexer keys per token ([`CompressedAttention::bytes_per_token`]).
    pub fn kv_bytes_per_token(&self, kv: Precision) -> f64 {
        match self {
            Attention::Compressed(a) => a.bytes_per_token(kv),
            Attention::Standard(_)
            | Attention::Latent(_)
            | Attention::Recurrent(_)
            | Attention::Linear { .. }
            | Attention::None => {
                self.kv_elements_per_token() as f64 * kv.bytes() + self.indexer().map_or(0.0, |i| i.key_bytes())
            }
        }
    }

    /// Bytes one sequence holds for this layer whatever its length: a recurrent mixer's state
    /// ([`RecurrentMixer::state_bytes`], its convolution's state at `activations`), DeepSeek-V4's
    /// compressor state; 0 otherwise.
    pub fn state_bytes(&self, activations: Precision) -> f64 {
        match self {
            Attention::Recurrent(m) => m.state_bytes(activations),
            Attention::Compressed(a) => a.state_bytes(),
            Attention::Standard(_) | Attention::Latent(_) | Attention::Linear { .. } | Attention::None => 0.0,
        }
    }

    /// Cache bytes one sequence holds in this layer after `tokens` positions passed through it:
    /// its KV at `kv` for the positions its reach keeps ([`Reach::held`]: a window or a chunk at
    /// most its length) with its indexer's keys, DeepSeek-V4's window, compressed entries and
    /// compressor state ([`CompressedAttention::cache_bytes`]), and a recurrent state
    /// ([`Self::state_bytes`]).
    pub fn cache_bytes(&self, tokens: f64, kv: Precision, activations: Precision) -> f64 {
        match self {
            Attention::Compressed(a) => a.cache_bytes(tokens, kv),
            Attention::Standard(_)
            | Attention::Latent(_)
            | Attention::Recurrent(_)
            | Attention::Linear { .. }
            | Attention::None => {
                self.reach().held(tokens) * self.kv_bytes_per_token(kv) + self.state_bytes(activations)
            }
        }
    }

    /// Which cached positions a query reads ([`Reach::All`] for a mixer without a cache;
    /// DeepSeek-V4's raw window, its compressed entries aside).
    pub fn reach(&self) -> Reach {
        match self {
            Attention::Standard(a) => a.reach,
            Attention::Latent(a) => a.reach,
            Attention::Compressed(a) => Reach::Window(a.window),
            Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => Reach::All,
        }
    }

    /// Sliding window of this layer, if any.
    pub fn window(&self) -> Option<u64> {
        self.reach().window()
    }

    /// The indexer of a sparse layer.
    pub fn indexer(&self) -> Option<&Indexer> {
        match self {
            Attention::Standard(a) => a.indexer.as_ref(),
            Attention::Latent(a) => a.indexer.as_ref(),
            Attention::Compressed(a) => a.indexer.as_ref(),
            Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => None,
        }
    }

    /// Whether the layer keeps a cache that grows with the sequence (attention of any kind).
    pub fn has_kv_cache(&self) -> bool {
        match self {
            Attention::Standard(_) | Attention::Latent(_) | Attention::Compressed(_) => true,
            Attention::Recurrent(_) | Attention::Linear { .. } | Attention::None => false,
        }
    }

    /// Parameters of the attention block (projections, biases, q/k norms, sinks, gates,
    /// indexer; a recurrent mixer's [`RecurrentMixer::params`]).
    pub fn params(&self, hidden: u64) -> u64 {
        narrow(self.params_wide(hidden))
    }

    /// Of [`Self::params`], the matrix weights (stored at the attention precision; biases, norm
    /// scales, sinks and a convolution's taps stay unquantised).
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        match self {
            Attention::Standard(a) => a.matrix_params(hidden),
            Attention::Latent(a) => a.matrix_params(hidden),
            Attention::Compressed(a) => a.matrix_params(hidden),
            Attention::Recurrent(m) => m.matrix_params(hidden),
            Attention::Linear { .. } => u128::from(hidden) * u128::from(hidden),
            Attention::None => 0,
        }
    }

    /// [`Self::params`] in u128: products of three dimensions can pass 2⁶⁴.
    fn params_wide(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let h = w(hidden);
        let vectors = match self {
            Attention::Standard(a) => {
                let mut p = 0;
                if a.qkv_bias {
                    p += w(a.qkv_width());
                }
                if a.o_bias {
                    p += h;
                }
                p += match (a.qk_norm, a.kv_shared) {
                    (QkNorm::None, _) => 0,
                    (QkNorm::PerHead, false) => 2 * w(a.head_dim),
                    (QkNorm::PerHead, true) => w(a.head_dim),
                    (QkNorm::Full, false) => w(a.q_dim()) + w(a.kv_dim()),
                    (QkNorm::Full, true) => w(a.q_dim()),
                };
                if a.sinks {
                    p += w(a.heads);
                }
                p + a.indexer.map_or(0, |i| i.params(hidden) - i.matrix_params(hidden))
            }
            Attention::Latent(a) => {
                let (r_kv, dr) = (w(a.kv_lora_rank), w(a.qk_rope_head_dim));
                // q_a_norm and kv_a_norm scales, and the down-projections' biases.
                let q_norm = a.q_lora_rank.map_or(0, |r| w(r) + if a.bias { w(r) } else { 0 });
                let kv_bias = if a.bias { r_kv + dr } else { 0 };
                q_norm + r_kv + kv_bias + a.indexer.map_or(0, |i| i.params(hidden) - i.matrix_params(hidden))
            }
            Attention::Compressed(a) => return a.params(hidden),
            Attention::Recurrent(m) => return m.params(hidden),
            Attention::Linear { bias } => {
                if *bias {
                    h
                } else {
                    0
                }
            }
            Attention::None => 0,
        };
        self.matrix_params(hidden) + vectors
    }
}

impl Mlp {
    /// Parameters of the feed-forward block, `(total, active)`: a dense MLP's both; a MoE's
    /// router, shared experts and gate with all experts (total) or `k` of them (active).
    fn params_wide(&self, hidden: u64) -> (u128, u128) {
        let w = u128::from;
        match self {
            Mlp::Dense(m) => (w(m.params(hidden)), w(m.params(hidden))),
            Mlp::Moe(m) => {
                let router = w(hidden) * w(m.experts) + if m.router_bias { w(m.experts) } else { 0 };
                let shared =
                    w(m.shared.as_ref().map_or(0, |s| s.params(hidden))) + if m.shared_gate { w(hidden) } else { 0 };
                let expert = w(m.expert.params(m.expert_width(hidden)));
                let latent = m.latent.map_or(0, |l| l.params(hidden));
                let always = router + shared + latent;
                (always + w(m.experts) * expert, always + w(m.top_k) * expert)
            }
            Mlp::Linear { bias } => {
                let p = w(hidden) * w(hidden) + if *bias { w(hidden) } else { 0 };
                (p, p)
            }
            Mlp::None => (0, 0),
        }
    }
}

impl Attention {
    /// The mixer in words, for tables: `attention`, `sliding-window attention (4,096)`,
    /// `chunked attention (8,192)`, `gated attention`, `sparse MLA (top-2,048)`, `Gated DeltaNet`,
    /// `compressed attention (1:4, top-512)`, `linear layer`; empty for none.
    pub fn kind_words(&self) -> String {
        let reach = |r: Reach| match r {
            Reach::All => String::new(),
            Reach::Window(w) => format!(" (window {})", crate::error::grouped(w)),
            Reach::Chunk(c) => format!(" (chunks of {})", crate::error::grouped(c)),
            Reach::TopK(k) => format!(" (top-{})", crate::error::grouped(k)),
        };
        match self {
            Attention::Standard(a) => {
                let gated = if a.output_gate == OutputGate::None { "" } else { "gated " };
                let what = match a.reach {
                    Reach::All if a.rope => "attention",
                    Reach::All => "attention without RoPE",
                    Reach::Window(_) => "sliding-window attention",
                    Reach::Chunk(_) => "chunked attention",
                    Reach::TopK(_) => "sparse attention",
                };
                format!("{gated}{what}{}", reach(a.reach))
            }
            Attention::Latent(a) => {
                let sparse = if a.reach == Reach::All { "" } else { "sparse " };
                let shared = if a.reach != Reach::All && a.indexer.is_none() { ", shared selection" } else { "" };
                format!("{sparse}MLA{}{shared}", reach(a.reach))
            }
            Attention::Compressed(a) => match (a.ratio, a.indexer) {
                (0, _) => format!("sliding-window attention (window {})", a.window),
                (r, Some(i)) => {
                    format!("compressed attention (1:{r}, top-{}, window {})", crate::error::grouped(i.top_k), a.window)
                }
                (r, None) => format!("compressed attention (1:{r}, window {})", a.window),
            },
            Attention::Recurrent(m) => m.rule.name().to_string(),
            Attention::Linear { .. } => "linear layer".into(),
            Attention::None => String::new(),
        }
    }
}

impl Mlp {
    /// The feed-forward block in words: `MLP`, `MoE (128 experts, top-8)`, `linear layer`;
    /// empty for none.
    pub fn kind_words(&self) -> String {
        match self {
            Mlp::Dense(_) => "MLP".into(),
            Mlp::Moe(m) => format!("MoE ({} experts, top-{})", m.experts, m.top_k),
            Mlp::Linear { .. } => "linear layer".into(),
            Mlp::None => String::new(),
        }
    }
}

impl LayerSpec {
    /// What the layer is made of, in words: its mixer and its feed-forward block
    /// (`Gated DeltaNet + MLP`, `gated attention + MoE (512 experts, top-10)`, `Mamba-2`).
    pub fn kind_words(&self) -> String {
        let parts: Vec<String> =
            [self.attention.kind_words(), self.mlp.kind_words()].into_iter().filter(|s| !s.is_empty()).collect();
        if parts.is_empty() {
            "an empty layer".into()
        } else {
            parts.join(" + ")
        }
    }

    /// Parameter count of the layer, total and active.
    pub fn params(&self, hidden: u64) -> LayerParams {
        let (total, active) = self.params_wide(hidden);
        LayerParams { total: narrow(total), active: narrow(active) }
    }

    /// [`Self::params`] in u128, `(total, active)`.
    fn params_wide(&self, hidden: u64) -> (u128, u128) {
        let w = u128::from;
        let norms = w(u64::from(self.attn_norms + self.mlp_norms)) * w(self.norm.params(hidden));
        let attn = self.attention.params_wide(hidden) + norms + self.hyper_connection_params(hidden);
        let (total, active) = self.mlp.params_wide(hidden);
        (attn + total, attn + active)
    }

    /// Parameters of the layer's hyper-connections: per block (attention and MLP), a mixing
    /// projection `mix × n·H` with `mix = (2 + n)·n` outputs (the `n` pre-weights, `n`
    /// post-weights and the `n × n` combination), its `mix` biases and 3 scales, where `n` is
    /// [`Self::residual_streams`] (vLLM `DeepseekV4DecoderLayer`: `hc_{attn,ffn}_fn`, `_base`,
    /// `_scale`); 0 for a plain residual.
    pub fn hyper_connection_params(&self, hidden: u64) -> u128 {
        let n = u128::from(self.residual_streams);
        if n <= 1 {
            return 0;
        }
        let mix = (2 + n) * n;
        2 * (mix * n * u128::from(hidden) + mix + 3)
    }
}

/// A parameter count back in u64: exact for every spec [`ModelSpec::new`] accepts (at most
/// [`MAX_PARAMS`]); saturates otherwise rather than wrapping.
fn narrow(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
