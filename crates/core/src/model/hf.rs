//! Hugging Face `config.json` → [`ModelSpec`].
//!
//! Parse raw, then resolve: [`HfConfig`] is a view over the JSON object with typed getters that
//! accept every alias a family uses (`n_embd` for `hidden_size`, …) and name the key in every
//! error; [`resolve`] applies the family's defaults from `crates/core/data/families.toml` and builds the layer
//! list. Field-by-field rules: `shared/research/architectures.md`.

use super::family::{
    self, AttentionLayout, BiasRule, DimDefault, DimRule, Family, MlpLayout, MoeLayout, Positions, WindowRule,
};
use super::quant::{parse_quantization_config_for, CheckpointQuant};
use super::spec::*;
use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::limits::{MAX_DIM, MAX_EXPERTS, MAX_HEADS, MAX_INPUT_FILE_BYTES, MAX_LAYERS, MAX_VOCAB};
use serde_json::{Map, Value};

const HIDDEN: &[&str] = &["hidden_size", "n_embd", "n_embed", "d_model"];
const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers"];
const HEADS: &[&str] = &["num_attention_heads", "n_head", "num_heads"];
const KV_HEADS: &[&str] = &["num_key_value_heads", "n_head_kv"];
const INTERMEDIATE: &[&str] = &["intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"];
const MAX_POSITIONS: &[&str] = &["max_position_embeddings", "n_positions"];
const ACTIVATION: &[&str] = &["hidden_activation", "hidden_act", "activation_function"];
const VOCAB: &[&str] = &["vocab_size"];

/// A parsed `config.json` (the text tower's object when the model nests it under `text_config`).
#[derive(Debug, Clone)]
pub struct HfConfig {
    obj: Map<String, Value>,
    model_type: Option<String>,
    architectures: Vec<String>,
    quantization: Option<Value>,
    has_vision: bool,
}

impl HfConfig {
    /// Parse `config.json` text (CRLF and a UTF-8 BOM are fine).
    pub fn from_json(text: &str) -> Result<Self> {
        if text.len() > MAX_INPUT_FILE_BYTES {
            return Err(Error::invalid(
                "config.json",
                format!("{} bytes", text.len()),
                format!("at most {MAX_INPUT_FILE_BYTES} bytes; real configs are under 10 KB"),
            ));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::Malformed { what: "config.json".into(), message: e.to_string() })?;
        Self::from_value(v)
    }

    /// Build from an already-parsed JSON value (presets arrive this way from TOML).
    pub fn from_value(v: Value) -> Result<Self> {
        let Value::Object(mut outer) = v else {
            return Err(Error::Malformed {
                what: "config.json".into(),
                message: "the top level is not a JSON object".into(),
            });
        };
        let str_list = |o: &Map<String, Value>, k: &str| -> Vec<String> {
            o.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default()
        };
        let architectures = str_list(&outer, "architectures");
        let quantization = outer.remove("quantization_config");
        let has_vision = outer.contains_key("vision_config");
        let outer_type = outer.get("model_type").and_then(Value::as_str).map(str::to_string);
        let (obj, model_type) = match outer.remove("text_config") {
            Some(Value::Object(inner)) => {
                let t = inner.get("model_type").and_then(Value::as_str).map(str::to_string).or(outer_type);
                (inner, t)
            }
            Some(other) if !other.is_null() => {
                return Err(Error::invalid("text_config", json_kind(&other), "an object"));
            }
            _ => (outer, outer_type),
        };
        let quantization = quantization.or_else(|| obj.get("quantization_config").cloned());
        Ok(HfConfig { obj, model_type, architectures, quantization, has_vision })
    }

    /// The first of `keys` present with a non-null value.
    fn get(&self, keys: &[&'static str]) -> Option<(&'static str, &Value)> {
        keys.iter().find_map(|k| self.obj.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    }

    /// Whether a key is present at all (null counts as present).
    fn has(&self, key: &str) -> bool {
        self.obj.contains_key(key)
    }

    /// A count that may be 0, no larger than `max` (accepts `4096.0`). Every integer key is read
    /// through this or [`Self::dim`], so no key reaches the arithmetic unbounded.
    fn count(&self, keys: &[&'static str], max: u64) -> Result<Option<u64>> {
        let Some((k, v)) = self.get(keys) else {
            return Ok(None);
        };
        match as_u64(v) {
            Some(n) if n <= max => Ok(Some(n)),
            _ => Err(Error::invalid(k, v, integer_in(0, max))),
        }
    }

    /// A positive integer no larger than `max`.
    fn dim(&self, keys: &[&'static str], max: u64) -> Result<Option<u64>> {
        let Some((k, v)) = self.get(keys) else {
            return Ok(None);
        };
        match as_u64(v) {
            Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
            _ => Err(Error::invalid(k, v, integer_in(1, max))),
        }
    }

    fn required_dim(&self, keys: &[&'static str], max: u64, fam: &Family) -> Result<u64> {
        self.dim(keys, max)?.ok_or_else(|| missing(keys[0], fam))
    }

    fn bool(&self, key: &'static str) -> Result<Option<bool>> {
        match self.get(&[key]) {
            None => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(*b)),
            Some((k, v)) => Err(Error::invalid(k, v, "true or false")),
        }
    }

    fn str(&self, keys: &[&'static str]) -> Result<Option<&str>> {
        match self.get(keys) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok(Some(s)),
            Some((k, v)) => Err(Error::invalid(k, v, "a string")),
        }
    }

    fn list<T>(&self, key: &'static str, item: impl Fn(&Value) -> Option<T>, expected: &str) -> Result<Option<Vec<T>>> {
        match self.get(&[key]) {
            None => Ok(None),
            Some((k, Value::Array(a))) => a
                .iter()
                .map(|v| item(v).ok_or_else(|| Error::invalid(k, v, expected.to_string())))
                .collect::<Result<Vec<T>>>()
                .map(Some),
            Some((k, v)) => Err(Error::invalid(k, v, format!("a list of {expected}"))),
        }
    }

    fn bias(&self, rule: &BiasRule) -> Result<bool> {
        match rule {
            BiasRule::Fixed(b) => Ok(*b),
            BiasRule::Key { key, default } => match self.obj.get(key.as_str()) {
                None | Some(Value::Null) => Ok(*default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(Error::invalid(key.clone(), v, "true or false")),
            },
        }
    }

    /// The family this config belongs to: `model_type`, else the first `architectures` entry.
    pub fn family(&self) -> Result<&'static Family> {
        let supported = || family::supported_names().join(", ");
        match &self.model_type {
            Some(t) => family::find(t)
                .ok_or_else(|| Error::unknown("model_type", t.clone(), family::supported_names()).about("model_type")),
            None => self.architectures.iter().find_map(|a| family::find_by_architecture(a)).ok_or_else(|| {
                Error::MissingField {
                    field: "model_type".into(),
                    context: format!(
                        "a config (architectures {:?} not recognised; supported model_type: {})",
                        self.architectures,
                        supported()
                    ),
                }
            }),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15).map(|f| f as u64))
}

fn missing(field: &str, fam: &Family) -> Error {
    Error::MissingField { field: field.into(), context: format!("model_type {}", fam.name) }
}

fn dim_default(d: DimDefault, hidden: u64, heads: u64, field: &str) -> Result<u64> {
    match d {
        DimDefault::Value(v) => Ok(v),
        DimDefault::Rule(DimRule::Heads) => Ok(heads),
        DimDefault::Rule(DimRule::FourHidden) => Ok(4 * hidden),
        DimDefault::Rule(DimRule::HiddenOverHeads) => {
            if hidden % heads == 0 {
                Ok(hidden / heads)
            } else {
                Err(Error::invalid(
                    field,
                    format!("absent, and hidden_size {hidden} is not divisible by num_attention_heads {heads}"),
                    "an explicit head_dim",
                ))
            }
        }
    }
}

/// Resolve a parsed config into a [`ModelSpec`] named `name`.
pub fn resolve(cfg: &HfConfig, name: &str) -> Result<ModelSpec> {
    let fam = cfg.family()?;
    let hidden = cfg.required_dim(HIDDEN, MAX_DIM, fam)?;
    let layers_n = cfg.required_dim(LAYERS, MAX_LAYERS, fam)?;
    let heads = cfg.required_dim(HEADS, MAX_HEADS, fam)?;
    let vocab = match cfg.dim(VOCAB, MAX_VOCAB)? {
        Some(v) => v,
        None => fam.vocab_size.ok_or_else(|| missing("vocab_size", fam))?,
    };
    let act_name = cfg.str(ACTIVATION)?.unwrap_or(&fam.hidden_act).to_string();
    let activation = Activation::from_hf(&act_name).ok_or_else(|| {
        Error::invalid(
            ACTIVATION.iter().find(|k| cfg.has(k)).copied().unwrap_or("hidden_act"),
            format!("{act_name:?}"),
            "silu, swish, gelu*, relu, clamped_swiglu",
        )
    })?;
    let norm = match fam.norm {
        family::NormName::Rms => NormKind::Rms,
        family::NormName::Layer => NormKind::Layer,
    };
    let intermediate = || -> Result<u64> {
        match cfg.dim(INTERMEDIATE, MAX_DIM)? {
            Some(v) => Ok(v),
            None => match fam.intermediate_size {
                Some(d) => dim_default(d, hidden, heads, "intermediate_size"),
                None => Err(missing("intermediate_size", fam)),
            },
        }
    };
    let mlp_bias = cfg.bias(&fam.mlp_bias)?;
    let dense = |width: u64| DenseMlp {
        intermediate: width,
        gated: fam.mlp == MlpLayout::Gated,
        bias: mlp_bias,
        activation,
        fused_gate_up: fam.fused_gate_up,
    };

    let (attn_norms, mlp_norms, parallel) = falcon_norms(cfg, fam)?;
    let windows = layer_windows(cfg, fam, layers_n)?;
    let attention_for = |window: Option<u64>| -> Result<Attention> {
        match fam.attention {
            AttentionLayout::Latent => latent_attention(cfg, fam, heads),
            AttentionLayout::Standard => standard_attention(cfg, fam, hidden, heads, window),
        }
    };
    let mlps = layer_mlps(cfg, fam, layers_n, &intermediate, &dense)?;

    let mut layers = Vec::with_capacity(layers_n as usize);
    for (window, mlp) in windows.into_iter().zip(mlps) {
        layers.push(LayerSpec { attention: attention_for(window)?, mlp, norm, attn_norms, mlp_norms, parallel });
    }

    let positions = match fam.positions {
        Positions::Rope => 0,
        Positions::Learned => cfg.required_dim(MAX_POSITIONS, MAX_DIM, fam)?,
        Positions::LearnedOffset2 => cfg.required_dim(MAX_POSITIONS, MAX_DIM, fam)? + 2,
    };
    let embed_dim = cfg.dim(&["word_embed_proj_dim"], MAX_DIM)?.unwrap_or(hidden);
    let tied = cfg.bool("tie_word_embeddings")?.unwrap_or(fam.tie_word_embeddings);
    let final_norm =
        if fam.name == "opt" && cfg.bool("do_layer_norm_before")? == Some(false) { None } else { Some(norm) };

    let mut spec = ModelSpec::new(
        name,
        fam.name.clone(),
        hidden,
        Embedding { vocab, dim: embed_dim, positions },
        tied,
        final_norm,
        layers,
    )?;
    let modules = fam.modules(spec.layers().len());
    let (quant, quant_notes) = parse_quantization_config_for(cfg.quantization.as_ref(), &modules)?.unzip();
    spec.checkpoint_quant = quant;
    spec.notes = notes(cfg, &spec)?;
    spec.notes.extend(quant_notes.into_iter().flatten());
    Ok(spec)
}

/// Norm counts and parallel flag; falcon decides them from `parallel_attn`,
/// `new_decoder_architecture` and `num_ln_in_parallel_attn` (modeling_falcon.py:552-565).
fn falcon_norms(cfg: &HfConfig, fam: &Family) -> Result<(u32, u32, bool)> {
    if fam.name != "falcon" {
        return Ok((fam.attn_norms, fam.mlp_norms, fam.parallel));
    }
    let parallel = cfg.bool("parallel_attn")?.unwrap_or(true);
    if !parallel {
        return Ok((1, 1, false));
    }
    let new_arch = cfg.bool("new_decoder_architecture")?.unwrap_or(false);
    let lns = cfg.count(&["num_ln_in_parallel_attn"], MAX_LAYERS)?.unwrap_or(if new_arch { 2 } else { 1 });
    Ok((1, if lns >= 2 { 1 } else { 0 }, true))
}

/// Per-layer sliding window (`None` = global attention).
fn layer_windows(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Vec<Option<u64>>> {
    let window_value = if cfg.has("sliding_window") {
        cfg.dim(&["sliding_window"], crate::limits::MAX_CONTEXT)?
    } else {
        fam.window_default
    };
    let types = cfg.list("layer_types", |v| v.as_str().map(str::to_string), "strings")?;
    let sliding: Vec<bool> = match types {
        Some(t) => {
            if t.len() as u64 != layers {
                return Err(Error::invalid(
                    "layer_types",
                    format!("{} entries", t.len()),
                    format!("one entry per layer ({layers})"),
                ));
            }
            t.iter()
                .map(|s| match s.as_str() {
                    "sliding_attention" | "local" | "sliding" => Ok(true),
                    "full_attention" | "global" | "full" => Ok(false),
                    other => {
                        Err(Error::invalid("layer_types", format!("{other:?}"), "sliding_attention or full_attention"))
                    }
                })
                .collect::<Result<_>>()?
        }
        None => {
            let opt_in = cfg.bool("use_sliding_window")?.unwrap_or(false);
            let first_window_layer = cfg.count(&["max_window_layers"], MAX_LAYERS)?.unwrap_or(0);
            let pattern = cfg.dim(&["sliding_window_pattern", "_sliding_window_pattern"], MAX_LAYERS)?.unwrap_or(6);
            (0..layers)
                .map(|i| match fam.window {
                    WindowRule::None => false,
                    WindowRule::All => true,
                    WindowRule::OptIn => opt_in && i >= first_window_layer,
                    WindowRule::Even => i % 2 == 0,
                    WindowRule::Pattern => (i + 1) % pattern != 0,
                })
                .collect()
        }
    };
    sliding
        .into_iter()
        .map(|s| match (s, window_value) {
            (false, _) => Ok(None),
            (true, Some(w)) => Ok(Some(w)),
            (true, None) if fam.window == WindowRule::All => Ok(None),
            (true, None) => Err(missing("sliding_window", fam)),
        })
        .collect()
}

fn standard_attention(cfg: &HfConfig, fam: &Family, hidden: u64, heads: u64, window: Option<u64>) -> Result<Attention> {
    let head_dim = match cfg.dim(&["head_dim"], MAX_DIM)? {
        Some(d) => d,
        None => dim_default(fam.head_dim, hidden, heads, "head_dim")?,
    };
    let kv_heads = if fam.name == "falcon" {
        // modeling_falcon.py:230-241: new_decoder_architecture reads num_kv_heads; multi_query
        // (the 7B default) means one KV head; otherwise MHA.
        if cfg.bool("new_decoder_architecture")?.unwrap_or(false) {
            cfg.dim(&["num_kv_heads", "n_head_kv"], MAX_HEADS)?.unwrap_or(heads)
        } else if cfg.bool("multi_query")?.unwrap_or(true) {
            1
        } else {
            heads
        }
    } else {
        match cfg.dim(KV_HEADS, MAX_HEADS)? {
            Some(k) => k,
            None => dim_default(fam.kv_heads, hidden, heads, "num_key_value_heads")?,
        }
    };
    if heads % kv_heads != 0 {
        return Err(Error::invalid(
            "num_key_value_heads",
            kv_heads,
            format!("a divisor of num_attention_heads ({heads})"),
        ));
    }
    let rope = fam.positions == Positions::Rope && !cfg.bool("alibi")?.unwrap_or(false);
    Ok(Attention::Standard(StandardAttention {
        heads,
        kv_heads,
        head_dim,
        qkv_bias: cfg.bias(&fam.qkv_bias)?,
        o_bias: cfg.bias(&fam.o_bias)?,
        fused_qkv: fam.fused_qkv,
        qk_norm: match fam.qk_norm {
            family::QkNormName::None => QkNorm::None,
            family::QkNormName::PerHead => QkNorm::PerHead,
            family::QkNormName::Full => QkNorm::Full,
        },
        window,
        sinks: fam.sinks,
        rope,
    }))
}

fn latent_attention(cfg: &HfConfig, fam: &Family, heads: u64) -> Result<Attention> {
    Ok(Attention::Latent(LatentAttention {
        heads,
        q_lora_rank: cfg.dim(&["q_lora_rank"], MAX_DIM)?,
        kv_lora_rank: cfg.required_dim(&["kv_lora_rank"], MAX_DIM, fam)?,
        qk_nope_head_dim: cfg.required_dim(&["qk_nope_head_dim"], MAX_DIM, fam)?,
        qk_rope_head_dim: cfg.required_dim(&["qk_rope_head_dim"], MAX_DIM, fam)?,
        v_head_dim: cfg.required_dim(&["v_head_dim"], MAX_DIM, fam)?,
        bias: cfg.bool("attention_bias")?.unwrap_or(false),
    }))
}

/// Per-layer MLP: dense, or MoE by the family's layout and layer-selection rule.
fn layer_mlps(
    cfg: &HfConfig,
    fam: &Family,
    layers: u64,
    intermediate: &dyn Fn() -> Result<u64>,
    dense: &dyn Fn(u64) -> DenseMlp,
) -> Result<Vec<Mlp>> {
    let experts_keys: &[&'static str] = match fam.moe {
        MoeLayout::None => return Ok(vec![Mlp::Dense(dense(intermediate()?)); layers as usize]),
        MoeLayout::Mixtral | MoeLayout::GptOss => &["num_local_experts", "num_experts"],
        MoeLayout::Qwen => &["num_experts"],
        MoeLayout::Deepseek => &["n_routed_experts"],
    };
    let experts = cfg.required_dim(experts_keys, MAX_EXPERTS, fam)?;
    let top_k = cfg.required_dim(&["num_experts_per_tok", "experts_per_token"], MAX_EXPERTS, fam)?;
    if top_k > experts {
        return Err(Error::invalid("num_experts_per_tok", top_k, format!("at most the number of experts ({experts})")));
    }
    let expert_activation = fam
        .expert_activation
        .as_deref()
        .map(|a| {
            Activation::from_hf(a)
                .ok_or_else(|| Error::invalid("families.toml expert_activation", a, "a known activation"))
        })
        .transpose()?;
    let moe = |width: u64, shared: Option<DenseMlp>, shared_gate: bool| -> Mlp {
        let mut expert = dense(width);
        if let Some(a) = expert_activation {
            expert.activation = a;
        }
        Mlp::Moe(MoeMlp { experts, top_k, expert, shared, shared_gate, router_bias: fam.router_bias })
    };
    let out = match fam.moe {
        MoeLayout::None => unreachable!("handled above"),
        MoeLayout::Mixtral | MoeLayout::GptOss => {
            vec![moe(intermediate()?, None, false); layers as usize]
        }
        MoeLayout::Qwen => {
            let width = cfg.required_dim(&["moe_intermediate_size"], MAX_DIM, fam)?;
            let only_dense = cfg
                .list("mlp_only_layers", |v| as_u64(v).filter(|i| *i < MAX_LAYERS), "layer indices below 4096")?
                .unwrap_or_default();
            let step = cfg.dim(&["decoder_sparse_step"], MAX_LAYERS)?.unwrap_or(1);
            let shared = cfg.dim(&["shared_expert_intermediate_size"], MAX_DIM)?.map(dense);
            let gate = shared.is_some();
            (0..layers)
                .map(|i| {
                    if !only_dense.contains(&i) && (i + 1) % step == 0 {
                        Ok(moe(width, shared.clone(), gate))
                    } else {
                        Ok(Mlp::Dense(dense(intermediate()?)))
                    }
                })
                .collect::<Result<Vec<_>>>()?
        }
        MoeLayout::Deepseek => {
            let width = cfg.required_dim(&["moe_intermediate_size"], MAX_DIM, fam)?;
            let n_shared = cfg.count(&["n_shared_experts"], MAX_EXPERTS)?.unwrap_or(0);
            let first_dense = cfg.count(&["first_k_dense_replace"], MAX_LAYERS)?.unwrap_or(0);
            // The shared experts run as one MLP of n_shared × moe_intermediate_size.
            let shared_width = width.checked_mul(n_shared).filter(|w| *w <= MAX_DIM).ok_or_else(|| {
                Error::invalid(
                    "n_shared_experts",
                    n_shared,
                    format!("at most {MAX_DIM} ÷ moe_intermediate_size ({width}) = {}", MAX_DIM / width),
                )
            })?;
            let shared = (n_shared > 0).then(|| dense(shared_width));
            (0..layers)
                .map(|i| {
                    if i < first_dense {
                        Ok(Mlp::Dense(dense(intermediate()?)))
                    } else {
                        Ok(moe(width, shared.clone(), false))
                    }
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    Ok(out)
}

/// Keys that change the real model but are not part of this ledger, reported rather than dropped.
fn notes(cfg: &HfConfig, spec: &ModelSpec) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    if let Some(n) = cfg.count(&["num_nextn_predict_layers"], MAX_LAYERS)?.filter(|n| *n > 0) {
        notes.push(format!(
            "num_nextn_predict_layers = {n}: the multi-token-prediction module is stored in the checkpoint but is not part of the standard forward pass and is not counted"
        ));
    }
    for key in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if cfg.get(&[key]).is_some() {
            notes.push(format!("{key}: the tanh soft-capping is an elementwise pass that is not counted"));
        }
    }
    if cfg.has_vision {
        notes.push("vision_config: only the text tower is modelled".into());
    }
    if cfg.bool("alibi")? == Some(true) {
        notes.push("alibi: the ALiBi bias add is part of the softmax row's elementwise work".into());
    }
    if let Some(CheckpointQuant::Unknown { method }) = &spec.checkpoint_quant {
        notes.push(format!(
            "quantization_config.quant_method `{method}` is not modelled (known: {}); set `weights`",
            super::quant::QUANT_METHODS.join(", ")
        ));
    }
    Ok(notes)
}

/// Parse `config.json` text and resolve it.
pub fn parse_config_json(text: &str, name: &str) -> Result<ModelSpec> {
    resolve(&HfConfig::from_json(text)?, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Small configs of each layout, with every integer key they read present.
    fn bases() -> Vec<Value> {
        let llama = json!({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
            "head_dim": 16, "word_embed_proj_dim": 64, "num_nextn_predict_layers": 0});
        let qwen = json!({"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
            "use_sliding_window": true, "sliding_window": 64, "max_window_layers": 1});
        let gemma = json!({"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
            "head_dim": 16, "sliding_window": 64, "sliding_window_pattern": 2});
        let qwen_moe = json!({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
            "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
            "decoder_sparse_step": 1, "mlp_only_layers": [0], "shared_expert_intermediate_size": 32});
        let deepseek = json!({"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "q_lora_rank": 32,
            "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
            "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "n_shared_experts": 1,
            "first_k_dense_replace": 1, "num_nextn_predict_layers": 1});
        let falcon = json!({"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 100, "new_decoder_architecture": true, "num_kv_heads": 2,
            "num_ln_in_parallel_attn": 2});
        let gpt2 = json!({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
            "n_positions": 128, "n_inner": 256});
        vec![llama, qwen, gemma, qwen_moe, deepseek, falcon, gpt2]
    }

    fn parse(v: &Value) -> Result<ModelSpec> {
        resolve(&HfConfig::from_value(v.clone())?, "t")
    }

    /// Every integer a config may hold, set to 2⁵³ (a debug build once panicked on
    /// `n_shared_experts = 2^53` and a release build wrapped it to a 0-FLOP shared expert), 2⁴¹
    /// and u64::MAX, is refused naming its key, in every layout that reads it.
    #[test]
    fn every_integer_key_rejects_absurd_values() {
        let mut checked = std::collections::BTreeSet::new();
        for base in bases() {
            parse(&base).unwrap_or_else(|e| panic!("base {} parses: {e}", base["model_type"]));
            for (key, v) in base.as_object().unwrap() {
                let list = v.is_array();
                if !(v.is_u64() || list) {
                    continue;
                }
                // 2⁴¹ is past every bound (the largest, sliding_window's, is 2⁴⁰).
                for bad in [1u64 << 53, 1 << 41, u64::MAX] {
                    let mut c = base.clone();
                    c[key] = if list { json!([bad]) } else { json!(bad) };
                    let Err(e) = parse(&c).map(|_| ()) else {
                        panic!("{key} = {bad} accepted in {}", base["model_type"]);
                    };
                    let e = e.to_string();
                    assert!(e.contains(&format!("`{key}`")), "{key} = {bad} in {}: {e}", base["model_type"]);
                }
                checked.insert(key.clone());
            }
        }
        for key in [
            "n_shared_experts",
            "first_k_dense_replace",
            "max_window_layers",
            "mlp_only_layers",
            "num_ln_in_parallel_attn",
            "num_nextn_predict_layers",
            "decoder_sparse_step",
            "sliding_window_pattern",
        ] {
            assert!(checked.contains(key), "{key} not covered");
        }
    }

    #[test]
    fn shared_experts_wider_than_a_dimension_are_refused() {
        let mut c = bases().swap_remove(4);
        c["n_shared_experts"] = json!(1 << 16);
        c["moe_intermediate_size"] = json!(1 << 12);
        let e = parse(&c).unwrap_err().to_string();
        assert!(e.starts_with("invalid `n_shared_experts`: 65536 (at most 16777216 ÷ moe_intermediate_size"), "{e}");
    }

    #[test]
    fn parameter_counts_past_the_limit_are_refused_not_wrapped() {
        // Every dimension in range, but 2²⁴ × 2²⁴ × 3 × 2¹⁶ experts × 4096 layers ≈ 2⁸⁶ parameters.
        let c = json!({"model_type": "mixtral", "hidden_size": 1 << 24, "num_hidden_layers": 4096,
            "num_attention_heads": 1 << 16, "num_key_value_heads": 1 << 16, "head_dim": 1 << 24,
            "intermediate_size": 1 << 24, "vocab_size": 1 << 24, "num_local_experts": 1 << 16,
            "num_experts_per_tok": 1});
        let e = parse(&c).unwrap_err().to_string();
        assert!(e.starts_with("invalid `model parameters`: "), "{e}");
    }
}
