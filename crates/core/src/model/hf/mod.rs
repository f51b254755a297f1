//! Hugging Face `config.json` → [`ModelSpec`].
//!
//! Parse raw, then resolve: [`HfConfig`] is a view over the JSON object with typed getters that
//! accept every alias a family uses (`n_embd` for `hidden_size`, …) and name the key in every
//! error; [`resolve`] applies the family's defaults from `crates/core/data/families.toml` and builds the layer
//! list. Field-by-field rules: `shared/research/architectures.md` (the families of 2025–2026:
//! the module docs of `layers`, `mixers`, `ffn` and `extras`).
//!
//! A vision-language config keeps its text model under `text_config` (Qwen3-VL, Qwen3.5,
//! Llama 4, Gemma 4, Kimi-K2.5, MiniMax-M3-VL); the family is the text model's `model_type`,
//! else the wrapper's, else the first `architectures` class a family claims (a new `model_type`
//! for a known architecture: `kimi_k2` is `DeepseekV3ForCausalLM`). Python's `json` writes
//! `Infinity` and `NaN` for non-finite floats (Nemotron-H's `time_step_limit`): they are read as
//! strings, so a key the model needs with such a value is refused by name and any other is
//! ignored.

mod extras;
mod ffn;
mod layers;
mod mixers;

use super::family::{self, DimDefault, DimRule, Family, FlagRule, Positions};
use super::quant::parse_quantization_config_for;
use super::spec::*;
use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::limits::{MAX_DIM, MAX_HEADS, MAX_INPUT_FILE_BYTES, MAX_LAYERS, MAX_VOCAB};
use serde_json::{Map, Value};

const HIDDEN: &[&str] = &["hidden_size", "n_embd", "n_embed", "d_model"];
const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers"];
const HEADS: &[&str] = &["num_attention_heads", "n_head", "num_heads"];
const KV_HEADS: &[&str] = &["num_key_value_heads", "n_head_kv", "num_attention_groups"];
const INTERMEDIATE: &[&str] = &["intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"];
const MAX_POSITIONS: &[&str] = &["max_position_embeddings", "n_positions"];
const ACTIVATION: &[&str] = &["hidden_activation", "hidden_act", "activation_function", "mlp_hidden_act"];
const VOCAB: &[&str] = &["vocab_size"];

/// Activation names [`Activation::from_hf`] reads, for errors.
const ACTIVATIONS: &str = "silu, swish, swiglu, gelu*, relu, relu2, clamped_swiglu, swigluoai, situ";

/// A parsed `config.json` (the text tower's object when the model nests it under `text_config`).
#[derive(Debug, Clone)]
pub struct HfConfig {
    obj: Map<String, Value>,
    /// The wrapper's own keys (`tie_word_embeddings`, `language_model_only`), or the same object
    /// for a flat config.
    outer: Map<String, Value>,
    model_type: Option<String>,
    outer_model_type: Option<String>,
    architectures: Vec<String>,
    quantization: Option<Value>,
    vision: Option<Map<String, Value>>,
    /// Things said while reading the file (non-finite literals).
    read_notes: Vec<String>,
}

/// The literal Python's `json` writes for a non-finite float, outside strings, as the JSON
/// string of the same word (`Infinity` → `"Infinity"`); `None` when the text has none.
fn quote_non_finite(text: &str) -> Option<String> {
    const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if let Some(w) = WORDS.iter().find(|w| bytes[i..].starts_with(w.as_bytes())) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            o.push_str(&text[copied..i]);
            o.push('"');
            o.push_str(w);
            o.push('"');
            i += w.len();
            copied = i;
            continue;
        }
        i += 1;
    }
    out.map(|mut o| {
        o.push_str(&text[copied..]);
        o
    })
}

impl HfConfig {
    /// Parse `config.json` text (CRLF, a UTF-8 BOM and Python's `Infinity`/`NaN` are fine).
    pub fn from_json(text: &str) -> Result<Self> {
        if text.len() > MAX_INPUT_FILE_BYTES {
            return Err(Error::invalid(
                "config.json",
                format!("{} bytes", text.len()),
                format!("at most {MAX_INPUT_FILE_BYTES} bytes; real configs are under 10 KB"),
            ));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let quoted = quote_non_finite(text);
        let v: Value = serde_json::from_str(quoted.as_deref().unwrap_or(text))
            .map_err(|e| Error::Malformed { what: "config.json".into(), message: e.to_string() })?;
        let mut cfg = Self::from_value(v)?;
        if quoted.is_some() {
            cfg.read_notes.push(
                "config.json holds Python's non-finite literals (Infinity, NaN): read as strings; no key this model reads has one".into(),
            );
        }
        Ok(cfg)
    }

    /// Take ModelOpt's `hf_quant_config.json` as the quantization config where the config has
    /// none ([`parse_config_json_with_quant`]).
    fn adopt_quant_sidecar(&mut self, text: &str) -> Result<()> {
        const FILE: &str = "hf_quant_config.json";
        if text.len() > MAX_INPUT_FILE_BYTES {
            return Err(Error::invalid(
                FILE,
                format!("{} bytes", text.len()),
                format!("at most {MAX_INPUT_FILE_BYTES} bytes"),
            ));
        }
        let v: Value = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text))
            .map_err(|e| Error::Malformed { what: FILE.into(), message: e.to_string() })?;
        if self.quantization.is_some() {
            self.read_notes
                .push(format!("{FILE} beside config.json not read: the config's own quantization_config applies"));
            return Ok(());
        }
        let mut q = match v.get("quantization") {
            Some(Value::Object(q)) => q.clone(),
            Some(other) => return Err(Error::invalid(format!("{FILE}: quantization"), json_kind(other), "an object")),
            None => {
                return Err(Error::invalid(format!("{FILE}: quantization"), "missing", "an object with quant_algo"))
            }
        };
        q.entry("quant_method").or_insert_with(|| Value::String("modelopt".into()));
        self.quantization = Some(Value::Object(q));
        self.read_notes.push(format!("weight formats from {FILE} (NVIDIA ModelOpt)"));
        Ok(())
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
        let quantization = outer.remove("quantization_config");
        let vision = match outer.get("vision_config") {
            Some(Value::Object(v)) => Some(v.clone()),
            _ => None,
        };
        let outer_type = outer.get("model_type").and_then(Value::as_str).map(str::to_string);
        let outer_archs = str_list(&outer, "architectures");
        let (obj, model_type, architectures) = match outer.get("text_config") {
            Some(Value::Object(inner)) => {
                let mut inner = inner.clone();
                let t = inner.get("model_type").and_then(Value::as_str).map(str::to_string);
                let mut archs = str_list(&inner, "architectures");
                archs.extend(outer_archs);
                let q = inner.remove("quantization_config");
                let quantization = quantization.clone().or(q);
                outer.remove("text_config");
                return Ok(HfConfig {
                    obj: inner,
                    outer,
                    model_type: t,
                    outer_model_type: outer_type,
                    architectures: archs,
                    quantization,
                    vision,
                    read_notes: Vec::new(),
                });
            }
            Some(other) if !other.is_null() => {
                return Err(Error::invalid("text_config", json_kind(other), "an object"));
            }
            _ => (outer.clone(), outer_type.clone(), outer_archs),
        };
        let quantization = quantization.or_else(|| obj.get("quantization_config").cloned());
        Ok(HfConfig {
            obj,
            outer,
            model_type,
            outer_model_type: None,
            architectures,
            quantization,
            vision,
            read_notes: Vec::new(),
        })
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
        dim_value(k, v, max).map(Some)
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
        list_of(self.get(&[key]), item, expected)
    }

    /// An object-valued key (`linear_attn_config`, `sparse_attention_config`).
    fn object(&self, key: &'static str) -> Result<Option<&Map<String, Value>>> {
        match self.get(&[key]) {
            None => Ok(None),
            Some((_, Value::Object(o))) => Ok(Some(o)),
            Some((k, v)) => Err(Error::invalid(k, json_kind(v), "an object")),
        }
    }

    fn flag(&self, rule: &FlagRule) -> Result<bool> {
        match rule {
            FlagRule::Fixed(b) => Ok(*b),
            FlagRule::Key { key, default } => match self.obj.get(key.as_str()) {
                None | Some(Value::Null) => Ok(*default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(Error::invalid(key.clone(), v, "true or false")),
            },
        }
    }

    /// The family this config belongs to: the text model's `model_type`, else the wrapper's,
    /// else the first `architectures` class a family claims; and a note when it took the
    /// class to find it.
    pub fn family(&self) -> Result<&'static Family> {
        self.family_and_note().map(|(f, _)| f)
    }

    fn family_and_note(&self) -> Result<(&'static Family, Option<String>)> {
        for t in [&self.model_type, &self.outer_model_type].into_iter().flatten() {
            if let Some(f) = family::find(t) {
                return Ok((f, None));
            }
        }
        if let Some(f) = self.architectures.iter().find_map(|a| family::find_by_architecture(a)) {
            let note = self.model_type.as_ref().or(self.outer_model_type.as_ref()).map(|t| {
                format!(
                    "model_type `{t}` is read as `{}` from its architectures ({})",
                    f.name,
                    self.architectures.join(", ")
                )
            });
            return Ok((f, note));
        }
        match self.model_type.as_ref().or(self.outer_model_type.as_ref()) {
            Some(t) => Err(Error::invalid(
                "model_type",
                format!("{t:?}"),
                format!(
                    "a family — {} — or a config whose architectures name one's class",
                    family::supported_names().join(", ")
                ),
            )),
            None => Err(Error::MissingField {
                field: "model_type".into(),
                context: format!(
                    "a config (architectures {:?} not recognised; supported model_type: {})",
                    self.architectures,
                    family::supported_names().join(", ")
                ),
            }),
        }
    }
}

/// A list value of `item`s, naming `key` and the expected items in an error.
fn list_of<T>(
    got: Option<(&'static str, &Value)>,
    item: impl Fn(&Value) -> Option<T>,
    expected: &str,
) -> Result<Option<Vec<T>>> {
    match got {
        None => Ok(None),
        Some((k, Value::Array(a))) => a
            .iter()
            .map(|v| item(v).ok_or_else(|| Error::invalid(k, v, expected.to_string())))
            .collect::<Result<Vec<T>>>()
            .map(Some),
        Some((k, v)) => Err(Error::invalid(k, v, format!("a list of {expected}"))),
    }
}

/// A positive integer no larger than `max`, naming `key`.
fn dim_value(key: impl Into<String>, v: &Value, max: u64) -> Result<u64> {
    match as_u64(v) {
        Some(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(Error::invalid(key, v, integer_in(1, max))),
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

/// The model's activation: the config's (`hidden_act` …) or the family's.
fn activation(cfg: &HfConfig, fam: &Family) -> Result<(Activation, Option<String>)> {
    let name = cfg.str(ACTIVATION)?.unwrap_or(&fam.hidden_act).to_string();
    if name.eq_ignore_ascii_case("situ") {
        // Kimi-K3's SiTU is a sigmoid-gated unit of the SiLU family.
        return Ok((
            Activation::Silu,
            Some("hidden_act situ: counted as SiLU (4 FLOPs an element; the elementwise rows only)".into()),
        ));
    }
    let a = Activation::from_hf(&name).ok_or_else(|| {
        Error::invalid(
            ACTIVATION.iter().find(|k| cfg.has(k)).copied().unwrap_or("hidden_act"),
            format!("{name:?}"),
            ACTIVATIONS,
        )
    })?;
    Ok((a, None))
}

/// Resolve a parsed config into a [`ModelSpec`] named `name`.
pub fn resolve(cfg: &HfConfig, name: &str) -> Result<ModelSpec> {
    let (fam, family_note) = cfg.family_and_note()?;
    let hidden = cfg.required_dim(HIDDEN, MAX_DIM, fam)?;
    let layers_n = layers::count(cfg, fam)?;
    let heads = cfg.required_dim(HEADS, MAX_HEADS, fam)?;
    let vocab = match cfg.dim(VOCAB, MAX_VOCAB)? {
        Some(v) => v,
        None => fam.vocab_size.ok_or_else(|| missing("vocab_size", fam))?,
    };
    let (act, act_note) = activation(cfg, fam)?;
    let norm = match fam.norm {
        family::NormName::Rms => NormKind::Rms,
        family::NormName::Layer => NormKind::Layer,
    };
    let plan = layers::plan(cfg, fam, layers_n)?;
    let mixers = mixers::Mixers::new(cfg, fam, hidden, heads)?;
    let ffns = ffn::layer_ffns(cfg, fam, &plan, hidden, heads, act)?;
    let (attn_norms, mlp_norms, parallel) = falcon_norms(cfg, fam)?;
    let streams = cfg.dim(&["hc_mult"], 64)?.unwrap_or(1);
    let mut layer_specs = Vec::with_capacity(plan.len());
    for (i, (p, (mlp, extra_norms))) in plan.iter().zip(ffns).enumerate() {
        let attention = mixers.build(p, i)?;
        let has_mixer = !matches!(attention, Attention::None);
        let has_ffn = !matches!(mlp, Mlp::None);
        layer_specs.push(LayerSpec {
            attention,
            mlp,
            norm,
            attn_norms: if has_mixer { attn_norms } else { 0 },
            mlp_norms: if has_ffn { mlp_norms + extra_norms } else { 0 },
            parallel,
            residual_streams: streams,
        });
    }

    let positions = match fam.positions {
        Positions::Rope => 0,
        Positions::Learned => cfg.required_dim(MAX_POSITIONS, MAX_DIM, fam)?,
        Positions::LearnedOffset2 => cfg.required_dim(MAX_POSITIONS, MAX_DIM, fam)? + 2,
    };
    let embed_dim = cfg.dim(&["word_embed_proj_dim"], MAX_DIM)?.unwrap_or(hidden);
    let tied = match cfg.bool("tie_word_embeddings")? {
        Some(t) => t,
        // A wrapper keeps the flag beside text_config (Qwen3-VL).
        None => match cfg.outer.get("tie_word_embeddings") {
            Some(Value::Bool(b)) => *b,
            _ => fam.tie_word_embeddings,
        },
    };
    let final_norm =
        if fam.name == "opt" && cfg.bool("do_layer_norm_before")? == Some(false) { None } else { Some(norm) };

    let mut spec = ModelSpec::new(
        name,
        fam.name.clone(),
        hidden,
        Embedding { vocab, dim: embed_dim, positions },
        tied,
        final_norm,
        layer_specs,
    )?;
    spec.mtp = extras::mtp(cfg, fam, &spec, &mixers)?;
    spec.vision_params = extras::vision_params(cfg, fam, hidden)?;
    let modules = fam.modules(spec.layers());
    let (quant, quant_notes) = parse_quantization_config_for(cfg.quantization.as_ref(), &modules)?.unzip();
    spec.checkpoint_quant = extras::expert_dtype(cfg, quant)?;
    spec.notes = cfg.read_notes.clone();
    spec.notes.extend(family_note);
    spec.notes.extend(act_note);
    spec.notes.extend(extras::notes(cfg, &spec)?);
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

/// Parse `config.json` text and resolve it.
pub fn parse_config_json(text: &str, name: &str) -> Result<ModelSpec> {
    resolve(&HfConfig::from_json(text)?, name)
}

/// [`parse_config_json`] with the `hf_quant_config.json` NVIDIA ModelOpt writes beside a
/// checkpoint's `config.json` (`{"producer": {"name": "modelopt"}, "quantization": {"quant_algo":
/// "NVFP4", "exclude_modules": […], …}}`): its `quantization` object is read as the config's
/// `quantization_config` with `quant_method` `modelopt`, where the config has none of its own
/// (a config that has one wins, as in the engines' loaders: TensorRT-LLM and vLLM read the
/// sidecar only for ModelOpt checkpoints without it).
pub fn parse_config_json_with_quant(text: &str, quant_sidecar: Option<&str>, name: &str) -> Result<ModelSpec> {
    let mut cfg = HfConfig::from_json(text)?;
    if let Some(sidecar) = quant_sidecar {
        cfg.adopt_quant_sidecar(sidecar)?;
    }
    resolve(&cfg, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CheckpointQuant;
    use serde_json::json;

    #[test]
    fn a_modelopt_quant_file_stands_for_a_missing_quantization_config() {
        let config = r#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100}"#;
        let sidecar = r#"{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}"#;
        let m = parse_config_json_with_quant(config, Some(sidecar), "x").unwrap();
        let Some(CheckpointQuant::Known { method, weights, .. }) = &m.checkpoint_quant else { panic!("{m:?}") };
        assert_eq!(method, "modelopt");
        assert_eq!(weights.describe(), "fp8 (router, embedding, lm_head bf16)");
        // The config's own quantization_config wins.
        let own = config.replace(
            "\"vocab_size\": 100",
            "\"vocab_size\": 100, \"quantization_config\": {\"quant_method\": \"mxfp4\"}",
        );
        let m = parse_config_json_with_quant(&own, Some(sidecar), "x").unwrap();
        assert!(matches!(&m.checkpoint_quant, Some(CheckpointQuant::Known { method, .. }) if method == "mxfp4"));
        assert!(
            m.notes.iter().any(|n| n.contains("hf_quant_config.json beside config.json not read")),
            "{:?}",
            m.notes
        );
        // Not JSON, or no quantization object: named.
        assert!(parse_config_json_with_quant(config, Some("{"), "x")
            .unwrap_err()
            .to_string()
            .contains("hf_quant_config.json"));
        let e = parse_config_json_with_quant(config, Some("{}"), "x").unwrap_err().to_string();
        assert!(e.contains("hf_quant_config.json: quantization"), "{e}");
    }

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
