//! Model families as data: `crates/core/data/families.toml` (embedded) gives each Hugging Face `model_type`
//! its defaults and layout switches. The schema is documented at the top of that file.

#[cfg(test)]
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The embedded family table, as written (the source of truth; the tests read it).
#[cfg(test)]
pub(crate) const FAMILIES_TOML: &str = include_str!("../../data/families.toml");
/// The same table as JSON, written by `build.rs` at build time, which a run reads.
const FAMILIES_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/families.json"));

/// A default for a dimension that the config may omit.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum DimDefault {
    /// A fixed number.
    Value(u64),
    /// A rule: `"heads"`, `"hidden/heads"` or `"4*hidden"`.
    Rule(DimRule),
}

/// Derived defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum DimRule {
    /// Equal to `num_attention_heads` (MHA).
    #[serde(rename = "heads")]
    Heads,
    /// `hidden_size / num_attention_heads`.
    #[serde(rename = "hidden/heads")]
    HiddenOverHeads,
    /// `4 · hidden_size`.
    #[serde(rename = "4*hidden")]
    FourHidden,
}

/// A yes/no property of a layer (a bias, an output gate): fixed by the modeling file, or read
/// from a config key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum FlagRule {
    /// Hard-coded in the modeling file.
    Fixed(bool),
    /// Read from `key`, with `default` when absent.
    Key {
        /// Config key.
        key: String,
        /// Value when the key is absent or null.
        default: bool,
    },
}

/// Layer-selection rule for sliding-window attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowRule {
    /// No sliding window.
    None,
    /// `sliding_window` applies to every layer (mistral, phi3).
    All,
    /// Only with `use_sliding_window: true`, on layers `i ≥ max_window_layers` (qwen).
    OptIn,
    /// Even (0-based) layers slide, odd ones are global (gemma2, gpt-oss).
    Even,
    /// Layer i is global iff `(i+1) % sliding_window_pattern == 0` (gemma3, default 6).
    Pattern,
}

/// Which keys define the experts of a MoE family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoeLayout {
    /// Dense family.
    None,
    /// `num_local_experts`, width `intermediate_size`, every layer sparse (MiniMax-M2 too, whose
    /// `shared_intermediate_size` may add a shared expert).
    Mixtral,
    /// `num_experts`, `moe_intermediate_size`, `mlp_only_layers`, `decoder_sparse_step`, optional shared expert.
    Qwen,
    /// `n_routed_experts` (`num_experts`), `moe_intermediate_size`, `n_shared_experts`,
    /// `first_k_dense_replace`, `moe_layer_freq` (a step or a list), `mlp_layer_types`,
    /// `routed_expert_hidden_size` (a latent MoE).
    Deepseek,
    /// `num_local_experts`, width `intermediate_size`, biased experts and router, clamped SwiGLU.
    GptOss,
    /// Nemotron-H: `n_routed_experts`, `moe_intermediate_size`,
    /// `moe_shared_expert_intermediate_size`, `moe_latent_size`; non-gated experts.
    Nemotron,
    /// Llama 4: `num_local_experts`; experts and a shared expert of `intermediate_size`; dense
    /// layers of `intermediate_size_mlp`; `moe_layers` or `interleave_moe_layer_step`.
    Llama4,
    /// Gemma 4: the dense MLP of `intermediate_size` on every layer, and with
    /// `enable_moe_block` `num_experts` experts of `moe_intermediate_size` beside it.
    Gemma4,
    /// MiniMax-M3: `moe_layer_freq` (a list), `dense_intermediate_size`, `num_local_experts`
    /// of `intermediate_size`, `shared_intermediate_size × n_shared_experts`.
    Minimax,
    /// Step 3.x: `moe_layers_enum` or `first_k_dense_replace`, `num_experts`
    /// (`moe_num_experts`) of `moe_intermediate_size`, `share_expert_dim`.
    Step,
}

/// How a family decides each layer's token mixer when `layer_types` does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerRule {
    /// Attention on every layer, windowed by the family's [`WindowRule`].
    Uniform,
    /// Full attention on every `full_attention_interval`-th layer, the family's recurrent mixer
    /// elsewhere (Qwen3-Next, Qwen3.5).
    Interval,
    /// One letter a layer in `hybrid_override_pattern` (`M` Mamba-2, `*` attention, `-` MLP,
    /// `E` MoE), or `layers_block_type` (Nemotron-H).
    HybridPattern,
    /// `linear_attn_config`'s 1-based `kda_layers` and `full_attn_layers` (Kimi Linear).
    LinearAttnConfig,
    /// `block_configs`, one a layer: attention and FFN each present, skipped or one linear layer
    /// (nemotron-nas).
    BlockConfigs,
    /// `no_rope_layers` (1: chunked local attention, 0: global), else every
    /// `no_rope_layer_interval`-th layer global (Llama 4).
    NoRopeLayers,
    /// `hybrid_layer_pattern` (1: sliding window, 0: full; MiMo-V2).
    HybridLayerPattern,
    /// `compress_ratios` per layer (DeepSeek-V4).
    CompressRatios,
    /// `sparse_attention_config.sparse_attention_freq` (1: sparse; MiniMax-M3).
    SparseFreq,
}

/// The recurrent mixer of a family's linear-attention layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecurrenceName {
    /// None.
    None,
    /// Gated DeltaNet (`linear_num_key_heads`, `linear_num_value_heads`, …).
    GatedDelta,
    /// Kimi Delta Attention (`linear_attn_config`).
    KimiDelta,
    /// Mamba-2 (`mamba_num_heads`, `n_groups`, `ssm_state_size`, …).
    Mamba2,
}

/// What a family's multi-token-prediction layers are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MtpLayout {
    /// The model's last layer (DeepSeek-V3's `num_nextn_predict_layers`), with the adjustments
    /// of hybrids and compressed attention (`hf::extras::mtp`).
    Last,
    /// A sliding-window attention layer with the dense MLP of `intermediate_size`, and an LM head
    /// and its norm of its own (Step 3.5/3.7: vLLM `step3p5_mtp.py`,
    /// `Step3p5AMultiTokenPredictorLayer`'s `shared_head`).
    WindowDenseHead,
}

/// The indexer of a family's sparse-attention layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexerRule {
    /// None.
    None,
    /// DeepSeek Sparse Attention, when the config has `index_n_heads` (`index_head_dim`,
    /// `index_topk`, and which layers own one: `indexer_types`, `index_topk_freq`).
    Dsa,
    /// MiniMax-M3's block-sparse attention (`sparse_attention_config`).
    Minimax,
}

/// How a family's vision tower is counted from `vision_config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VisionRule {
    /// Qwen's vision transformer and merger (`depth`, `hidden_size`, `intermediate_size`,
    /// `patch_size`, `temporal_patch_size`, `spatial_merge_size`, `out_hidden_size`,
    /// `num_position_embeddings`, `deepstack_visual_indexes`).
    Qwen,
    /// A plain vision transformer from the common keys, estimated.
    Generic,
}

/// Position encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Positions {
    /// Rotary embeddings on q and k (no parameters).
    Rope,
    /// A learned table of `max_position_embeddings` rows.
    Learned,
    /// A learned table of `max_position_embeddings + 2` rows (OPT).
    LearnedOffset2,
}

/// Attention layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionLayout {
    /// MHA/GQA/MQA.
    Standard,
    /// DeepSeek MLA.
    Latent,
    /// DeepSeek-V4's compressed attention.
    Compressed,
}

/// Norm type (mirrors [`super::spec::NormKind`] in the data file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormName {
    /// RMSNorm.
    Rms,
    /// LayerNorm.
    Layer,
}

/// Q/K norm (mirrors [`super::spec::QkNorm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QkNormName {
    /// None.
    None,
    /// Over head_dim.
    PerHead,
    /// Over the full projection.
    Full,
}

/// MLP layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MlpLayout {
    /// gate, up, down.
    Gated,
    /// up, down.
    Plain,
}

/// One family, with every key resolved against `[default]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    /// Family key (`llama`).
    #[serde(skip)]
    pub name: String,
    /// Other `model_type` strings for this family.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `architectures` classes of this family, for a config whose `model_type` is no family's.
    #[serde(default)]
    pub architectures: Vec<String>,
    /// Default of `num_key_value_heads`.
    pub kv_heads: DimDefault,
    /// Default of `head_dim`.
    pub head_dim: DimDefault,
    /// Default of `intermediate_size` (none: required).
    #[serde(default)]
    pub intermediate_size: Option<DimDefault>,
    /// Default of `vocab_size` (none: required).
    #[serde(default)]
    pub vocab_size: Option<u64>,
    /// Default of `tie_word_embeddings`.
    pub tie_word_embeddings: bool,
    /// Bias on q/k/v.
    pub qkv_bias: FlagRule,
    /// Bias on o.
    pub o_bias: FlagRule,
    /// Bias on MLP projections.
    pub mlp_bias: FlagRule,
    /// A sigmoid gate on the attention output, projected with the queries.
    pub output_gate: FlagRule,
    /// MLP layout.
    pub mlp: MlpLayout,
    /// Default activation name.
    pub hidden_act: String,
    /// Fused qkv storage.
    pub fused_qkv: bool,
    /// Fused gate/up storage.
    pub fused_gate_up: bool,
    /// Norm type.
    pub norm: NormName,
    /// Norms in the attention half.
    pub attn_norms: u32,
    /// Norms in the MLP half.
    pub mlp_norms: u32,
    /// Parallel attention and MLP.
    pub parallel: bool,
    /// Q/K norm.
    pub qk_norm: QkNormName,
    /// Position encoding.
    pub positions: Positions,
    /// Sliding-window rule.
    pub window: WindowRule,
    /// `sliding_window` when the key is absent.
    #[serde(default)]
    pub window_default: Option<u64>,
    /// Attention layout.
    pub attention: AttentionLayout,
    /// How each layer's mixer is decided when `layer_types` does not say.
    pub layer_rule: LayerRule,
    /// The recurrent mixer of its linear-attention layers.
    pub recurrence: RecurrenceName,
    /// The indexer of its sparse layers.
    pub indexer: IndexerRule,
    /// How its vision tower is counted.
    pub vision: VisionRule,
    /// MoE layout.
    pub moe: MoeLayout,
    /// What its multi-token-prediction layers are made of.
    pub mtp: MtpLayout,
    /// Attention sinks.
    pub sinks: bool,
    /// MoE router bias.
    pub router_bias: bool,
    /// Activation of routed experts when it differs from `hidden_act`.
    #[serde(default)]
    pub expert_activation: Option<String>,
    /// The checkpoint's layer list (`model.layers`).
    pub layers_module: String,
    /// The attention block inside a layer (`self_attn`).
    pub attn_module: String,
    /// The MLP or MoE block inside a layer (`mlp`).
    pub mlp_module: String,
    /// The router inside the MoE block (`gate`).
    pub router_module: String,
    /// The shared experts inside the MoE block (`shared_expert`).
    pub shared_experts_module: String,
    /// The routed experts inside a layer, when they are not `{mlp_module}.experts` (Gemma 4).
    #[serde(default)]
    pub experts_module: Option<String>,
    /// A recurrent mixer's block inside a layer, when it is not the attention's (Qwen3.5's
    /// `linear_attn`).
    #[serde(default)]
    pub recurrent_module: Option<String>,
}

impl Family {
    /// Where this family's checkpoints keep each class of weights, for a model of these layers.
    pub fn modules(&self, layers: &[super::spec::LayerSpec]) -> super::quant::CheckpointModules {
        use super::spec::{Attention, Mlp};
        let which = |f: &dyn Fn(&super::spec::LayerSpec) -> bool| -> Vec<usize> {
            layers.iter().enumerate().filter(|(_, l)| f(l)).map(|(i, _)| i).collect()
        };
        super::quant::CheckpointModules {
            layers: self.layers_module.clone(),
            attention: self.attn_module.clone(),
            recurrent: self.recurrent_module.clone(),
            mlp: self.mlp_module.clone(),
            experts: self.experts_module.clone().unwrap_or_else(|| format!("{}.experts", self.mlp_module)),
            router: self.router_module.clone(),
            shared_experts: self.shared_experts_module.clone(),
            num_layers: layers.len(),
            mixer_layers: which(&|l| !matches!(l.attention, Attention::None)),
            dense_layers: which(&|l| matches!(l.mlp, Mlp::Dense(_) | Mlp::Linear { .. })),
            moe_layers: which(&|l| matches!(l.mlp, Mlp::Moe(_))),
        }
    }
}

/// One family of the embedded table, deserialised the first time it is asked for (a run reads
/// one family, not the whole table).
struct Entry {
    name: &'static str,
    json: &'static serde_json::value::RawValue,
    family: OnceLock<Family>,
}

impl Entry {
    fn family(&self) -> &Family {
        self.family.get_or_init(|| {
            let mut fam: Family = serde_json::from_str(self.json.get())
                .expect("build.rs writes families.json from valid TOML (checked by tests)");
            fam.name = self.name.to_string();
            fam
        })
    }
}

/// The embedded family table, keyed by name, each entry already merged over `[default]` by
/// `build.rs`.
fn table() -> &'static BTreeMap<&'static str, Entry> {
    static T: OnceLock<BTreeMap<&'static str, Entry>> = OnceLock::new();
    T.get_or_init(|| {
        let raw: BTreeMap<&'static str, &'static serde_json::value::RawValue> =
            serde_json::from_str(FAMILIES_JSON).expect("build.rs writes families.json as a JSON table");
        raw.into_iter().map(|(name, json)| (name, Entry { name, json, family: OnceLock::new() })).collect()
    })
}

/// All families, keyed by name (every entry deserialised).
#[cfg(test)]
fn families() -> BTreeMap<String, Family> {
    table().values().map(|e| (e.name.to_string(), e.family().clone())).collect()
}

/// The families of the TOML table: each entry over the `[default]` entry's fields.
#[cfg(test)]
fn families_of(table: toml::Table) -> Result<BTreeMap<String, Family>> {
    let malformed = |e: toml::de::Error| Error::Malformed {
        what: "families.toml".into(),
        message: e.message().split_whitespace().collect::<Vec<_>>().join(" "),
    };
    let merged = super::family_merge::merged(&table)
        .map_err(|field| Error::MissingField { field: field.into(), context: "families.toml".into() })?;
    let mut out = BTreeMap::new();
    for (name, merged) in merged {
        let mut fam: Family = toml::Value::Table(merged).try_into().map_err(malformed)?;
        fam.name.clone_from(&name);
        out.insert(name, fam);
    }
    Ok(out)
}

/// Find a family by `model_type` (or alias).
pub fn find(model_type: &str) -> Option<&'static Family> {
    // A name that is no family's own is looked for among every family's aliases (which reads
    // every family, once).
    let t = table();
    t.get(model_type)
        .map(Entry::family)
        .or_else(|| t.values().map(Entry::family).find(|fam| fam.aliases.iter().any(|a| a == model_type)))
}

/// Find a family from an `architectures` entry (`LlamaForCausalLM` → `llama`), for configs that
/// lack `model_type` (e.g. the 2019 gpt2 revision).
pub fn find_by_architecture(arch: &str) -> Option<&'static Family> {
    if let Some(fam) = table().values().map(Entry::family).find(|f| f.architectures.iter().any(|a| a == arch)) {
        return Some(fam);
    }
    let stem = ["ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "Model"]
        .iter()
        .find_map(|suffix| arch.strip_suffix(suffix))
        .unwrap_or(arch)
        .to_ascii_lowercase();
    table().values().find(|e| e.name.replace('_', "") == stem).map(Entry::family)
}

/// Supported `model_type` names, for error messages.
pub fn supported_names() -> Vec<String> {
    table().keys().map(|name| name.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_time_json_is_the_toml_family_table() {
        let from_toml = families_of(toml::from_str(FAMILIES_TOML).unwrap()).unwrap();
        assert_eq!(from_toml, families());
    }

    #[test]
    fn embedded_family_table_parses_and_inherits_defaults() {
        let llama = find("llama").unwrap();
        assert_eq!(llama.kv_heads, DimDefault::Rule(DimRule::Heads));
        assert_eq!(llama.window, WindowRule::None);
        let mistral = find("mistral").unwrap();
        assert_eq!(mistral.kv_heads, DimDefault::Value(8));
        assert_eq!(mistral.window_default, Some(4096));
        assert_eq!(find("gemma3_text").unwrap().name, "gemma3");
        assert_eq!(find("gpt2").unwrap().intermediate_size, Some(DimDefault::Rule(DimRule::FourHidden)));
    }

    #[test]
    fn architectures_map_to_families() {
        assert_eq!(find_by_architecture("GPT2LMHeadModel").unwrap().name, "gpt2");
        assert_eq!(find_by_architecture("Qwen3MoeForCausalLM").unwrap().name, "qwen3_moe");
        assert_eq!(find_by_architecture("DeepseekV3ForCausalLM").unwrap().name, "deepseek_v3");
        assert_eq!(find_by_architecture("OPTForCausalLM").unwrap().name, "opt");
        assert!(find_by_architecture("BertModel").is_none());
    }
}
