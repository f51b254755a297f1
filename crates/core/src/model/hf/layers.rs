//! Which token mixer and which feed-forward block each layer has ([`LayerPlan`]).
//!
//! `layer_types`, where a config has it, names each layer's mixer (`full_attention`,
//! `sliding_attention`, `chunked_attention`, `linear_attention`, `deepseek_sparse_attention`,
//! and Nemotron-H's `mamba`, `attention`, `mlp`, `moe`); its length is `num_hidden_layers`, or
//! that plus the multi-token-prediction layers' (Step 3.x lists them too; they are left for the
//! MTP module). Without it the family's [`LayerRule`] decides:
//!
//! | rule | keys | mixer of layer `i` |
//! |---|---|---|
//! | uniform | the family's window rule | attention, full or sliding |
//! | interval | `full_attention_interval` (4) | full attention iff `(i+1) % interval == 0`, else the recurrent mixer (transformers `configuration_qwen3_5.py`) |
//! | hybrid_pattern | `layers_block_type` or `hybrid_override_pattern` | `M` Mamba-2, `*` attention, `-` an MLP alone, `E` a MoE alone (transformers `configuration_nemotron_h.py`) |
//! | linear_attn_config | `kda_layers`, `full_attn_layers` (1-based) | KDA where `i+1` is in `kda_layers`, MLA otherwise (vLLM `configs/kimi_linear.py` `is_kda_layer`) |
//! | block_configs | `block_configs[i].attention`, `.ffn` | attention (GQA of `n_heads_in_group`), one linear layer, or none; an FFN of `ffn_mult`, one linear layer, or none |
//! | no_rope_layers | `no_rope_layers`, `no_rope_layer_interval` (4) | chunked local attention where 1, global attention without RoPE where 0 (default: global every 4th; transformers `Llama4TextConfig`) |
//! | hybrid_layer_pattern | `hybrid_layer_pattern` | sliding window where 1, full where 0 (vLLM `mimo_v2_flash.py`) |
//! | compress_ratios | `compress_ratios` | DeepSeek-V4 attention with that ratio (0: the window alone) |
//! | sparse_freq | `sparse_attention_config.sparse_attention_freq` | block-sparse where 1 (with `use_sparse_attention`), full otherwise |

use super::{dim_value, list_of, missing, HfConfig, LAYERS};
use crate::error::{Error, Result};
use crate::limits::{MAX_DIM, MAX_LAYERS};
use crate::model::family::{Family, LayerRule, WindowRule};
use serde_json::Value;

/// The mixer of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MixerKind {
    /// Attention over every earlier position (MLA in an MLA family).
    Full,
    /// Sliding-window attention.
    Sliding,
    /// Chunked local attention (Llama 4).
    Chunked,
    /// The family's recurrent mixer.
    Linear,
    /// Sparse attention (an indexer's top-k).
    Sparse,
    /// DeepSeek-V4's attention with this compression ratio.
    Compressed(u64),
    /// One linear layer in place of attention.
    Projection,
    /// No mixer.
    None,
}

/// The feed-forward block of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FfnKind {
    /// Decided by the family's MoE layout.
    Family,
    /// A dense MLP of the family's width.
    Dense,
    /// A mixture of experts.
    Moe,
    /// A dense MLP of this width.
    Width(u64),
    /// One linear layer in place of the MLP.
    Projection,
    /// No feed-forward block.
    None,
}

/// What one layer is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LayerPlan {
    pub(super) mixer: MixerKind,
    pub(super) ffn: FfnKind,
    /// Rotary embeddings on this layer's q and k (Llama 4's global layers have none).
    pub(super) rope: bool,
    /// KV heads of this layer when they differ from the model's (nemotron-nas).
    pub(super) kv_heads: Option<u64>,
    /// A window of this layer when it is its own (nemotron-nas `window_length`).
    pub(super) window: Option<u64>,
    /// The layer's type is the one `attention_other_setting` describes (Step 3.x).
    pub(super) other_setting: bool,
    /// The layer reads an earlier layer's keys and values (Gemma's `num_kv_shared_layers`).
    pub(super) kv_shared: bool,
}

impl LayerPlan {
    fn of(mixer: MixerKind) -> LayerPlan {
        LayerPlan {
            mixer,
            ffn: FfnKind::Family,
            rope: true,
            kv_heads: None,
            window: None,
            other_setting: false,
            kv_shared: false,
        }
    }
}

/// The `layer_types` names and what each is (`None`: a feed-forward layer alone).
const LAYER_TYPES: &[(&str, MixerKind, FfnKind)] = &[
    ("full_attention", MixerKind::Full, FfnKind::Family),
    ("global", MixerKind::Full, FfnKind::Family),
    ("full", MixerKind::Full, FfnKind::Family),
    ("attention", MixerKind::Full, FfnKind::Family),
    ("sliding_attention", MixerKind::Sliding, FfnKind::Family),
    ("sliding", MixerKind::Sliding, FfnKind::Family),
    ("local", MixerKind::Sliding, FfnKind::Family),
    ("chunked_attention", MixerKind::Chunked, FfnKind::Family),
    ("linear_attention", MixerKind::Linear, FfnKind::Family),
    ("deepseek_sparse_attention", MixerKind::Sparse, FfnKind::Family),
    ("minimax_m3_sparse", MixerKind::Sparse, FfnKind::Family),
];

/// The accepted `layer_types` names, for errors.
fn layer_type_names() -> String {
    LAYER_TYPES.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Nemotron-H's block types, by their `layers_block_type` name and `hybrid_override_pattern`
/// letter: Mamba-2, attention, an MLP, a MoE (each a layer of one block).
const BLOCK_TYPES: &[(&str, char, MixerKind, FfnKind)] = &[
    ("mamba", 'M', MixerKind::Linear, FfnKind::None),
    ("attention", '*', MixerKind::Full, FfnKind::None),
    ("mlp", '-', MixerKind::None, FfnKind::Dense),
    ("moe", 'E', MixerKind::None, FfnKind::Moe),
];

/// Decoder layers: `num_hidden_layers`, or the length of the list that gives every layer's block
/// (Nemotron 3 Ultra omits the count; `block_configs`).
pub(super) fn count(cfg: &HfConfig, fam: &Family) -> Result<u64> {
    if let Some(n) = cfg.dim(LAYERS, MAX_LAYERS)? {
        return Ok(n);
    }
    let listed = match fam.layer_rule {
        LayerRule::HybridPattern => block_types(cfg)?.map(|b| b.len()),
        LayerRule::BlockConfigs => cfg.get(&["block_configs"]).and_then(|(_, v)| v.as_array()).map(Vec::len),
        LayerRule::Uniform
        | LayerRule::Interval
        | LayerRule::LinearAttnConfig
        | LayerRule::NoRopeLayers
        | LayerRule::HybridLayerPattern
        | LayerRule::CompressRatios
        | LayerRule::SparseFreq => None,
    };
    match listed {
        Some(n) if (1..=MAX_LAYERS as usize).contains(&n) => Ok(n as u64),
        Some(n) => Err(Error::invalid(LAYERS[0], format!("absent, and {n} blocks listed"), "1 to 4096 layers")),
        None => Err(missing(LAYERS[0], fam)),
    }
}

/// Nemotron-H's blocks: `layers_block_type` (a list of names) or `hybrid_override_pattern` (a
/// string of letters), as indices into [`BLOCK_TYPES`].
fn block_types(cfg: &HfConfig) -> Result<Option<Vec<usize>>> {
    let names = || BLOCK_TYPES.iter().map(|b| b.0).collect::<Vec<_>>().join(", ");
    if let Some(list) = cfg.list(
        "layers_block_type",
        |v| v.as_str().and_then(|s| BLOCK_TYPES.iter().position(|b| b.0 == s)),
        &format!("block names ({})", names()),
    )? {
        return Ok(Some(list));
    }
    match cfg.get(&["hybrid_override_pattern"]) {
        None => Ok(None),
        Some((k, Value::String(p))) => p
            .chars()
            .map(|c| {
                BLOCK_TYPES.iter().position(|b| b.1 == c).ok_or_else(|| {
                    Error::invalid(
                        k,
                        format!("{p:?} (letter {c:?})"),
                        "letters M (Mamba-2), * (attention), - (MLP), E (MoE)",
                    )
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some((k, v)) => Err(Error::invalid(k, v, "a string of M, *, - and E")),
    }
}

/// Every layer's plan (module docs).
pub(super) fn plan(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Vec<LayerPlan>> {
    let n = layers as usize;
    let mut out = match layer_types(cfg, fam, layers)? {
        Some(types) => types,
        None => by_rule(cfg, fam, layers)?,
    };
    // Gemma: the last `num_kv_shared_layers` layers reuse an earlier layer's keys and values.
    let shared = cfg.count(&["num_kv_shared_layers"], MAX_LAYERS)?.unwrap_or(0) as usize;
    if shared > n {
        return Err(Error::invalid("num_kv_shared_layers", shared, format!("at most num_hidden_layers ({n})")));
    }
    for p in &mut out[n - shared..] {
        p.kv_shared = true;
    }
    Ok(out)
}

/// The plans `layer_types` gives, if the config has it. Step 3.x's `attention_other_setting`
/// marks the layers of its `attention_type`.
fn layer_types(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Option<Vec<LayerPlan>>> {
    let accepted = layer_type_names();
    let Some(types) = cfg.list("layer_types", |v| v.as_str().map(str::to_string), "strings")? else {
        return Ok(None);
    };
    if fam.layer_rule == LayerRule::HybridPattern {
        // Nemotron-H's `layer_types` is its block list (transformers' attribute map).
        return Ok(None);
    }
    let mtp = cfg.count(&["num_nextn_predict_layers", "mtp_num_hidden_layers"], MAX_LAYERS)?.unwrap_or(0);
    let n = types.len() as u64;
    if n != layers && n != layers + mtp {
        let also =
            if mtp > 0 { format!(", or that plus its {mtp} multi-token-prediction layers") } else { String::new() };
        return Err(Error::invalid(
            "layer_types",
            format!("{n} entries"),
            format!("one entry per layer ({layers}{also})"),
        ));
    }
    let other = cfg
        .object("attention_other_setting")?
        .and_then(|o| o.get("attention_type"))
        .and_then(Value::as_str)
        .map(str::to_string);
    types
        .iter()
        .take(layers as usize)
        .map(|t| {
            let (_, mixer, ffn) = LAYER_TYPES
                .iter()
                .find(|(name, _, _)| name == t)
                .ok_or_else(|| Error::invalid("layer_types", format!("{t:?}"), accepted.clone()))?;
            Ok(LayerPlan { ffn: *ffn, other_setting: other.as_deref() == Some(t.as_str()), ..LayerPlan::of(*mixer) })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// A list key with one entry per layer (at least `layers`; extra entries belong to the
/// multi-token-prediction layers and are left), each an integer in `0..=max`.
fn per_layer_ints(cfg: &HfConfig, key: &'static str, layers: u64, max: u64) -> Result<Option<Vec<u64>>> {
    let Some(list) = cfg.list(key, |v| super::as_u64(v).filter(|n| *n <= max), &crate::error::integer_in(0, max))?
    else {
        return Ok(None);
    };
    if (list.len() as u64) < layers {
        return Err(Error::invalid(key, format!("{} entries", list.len()), format!("one entry per layer ({layers})")));
    }
    Ok(Some(list))
}

/// The plans of the family's rule, without `layer_types` (module docs).
fn by_rule(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Vec<LayerPlan>> {
    let n = layers as usize;
    let all = |kind: MixerKind| vec![LayerPlan::of(kind); n];
    Ok(match fam.layer_rule {
        LayerRule::Uniform => windows(cfg, fam, layers)?
            .into_iter()
            .map(|s| LayerPlan::of(if s { MixerKind::Sliding } else { MixerKind::Full }))
            .collect(),
        LayerRule::Interval => {
            let k = cfg.dim(&["full_attention_interval"], MAX_LAYERS)?.unwrap_or(4) as usize;
            (0..n).map(|i| LayerPlan::of(if (i + 1) % k == 0 { MixerKind::Full } else { MixerKind::Linear })).collect()
        }
        LayerRule::HybridPattern => {
            let blocks = block_types(cfg)?.ok_or_else(|| missing("hybrid_override_pattern", fam))?;
            if blocks.len() != n {
                return Err(Error::invalid(
                    "hybrid_override_pattern",
                    format!("{} blocks", blocks.len()),
                    format!("one block per layer ({layers})"),
                ));
            }
            blocks.iter().map(|&b| LayerPlan { ffn: BLOCK_TYPES[b].3, ..LayerPlan::of(BLOCK_TYPES[b].2) }).collect()
        }
        LayerRule::LinearAttnConfig => kimi_linear(cfg, layers)?,
        LayerRule::BlockConfigs => block_configs(cfg, fam, layers)?,
        LayerRule::NoRopeLayers => {
            let chunked = match per_layer_ints(cfg, "no_rope_layers", layers, 1)? {
                Some(l) => l.iter().take(n).map(|x| *x == 1).collect(),
                None => {
                    let k = cfg.dim(&["no_rope_layer_interval"], MAX_LAYERS)?.unwrap_or(4) as usize;
                    (0..n).map(|i| (i + 1) % k != 0).collect::<Vec<_>>()
                }
            };
            // Without a chunk size every layer is global (and keeps RoPE where it has it).
            let has_chunk = cfg.get(&["attention_chunk_size"]).is_some();
            chunked
                .into_iter()
                .map(|c| match (c, has_chunk) {
                    (true, true) => LayerPlan::of(MixerKind::Chunked),
                    (true, false) => LayerPlan::of(MixerKind::Full),
                    (false, _) => LayerPlan { rope: false, ..LayerPlan::of(MixerKind::Full) },
                })
                .collect()
        }
        LayerRule::HybridLayerPattern => match per_layer_ints(cfg, "hybrid_layer_pattern", layers, 1)? {
            Some(l) => l
                .iter()
                .take(n)
                .map(|x| LayerPlan::of(if *x == 1 { MixerKind::Sliding } else { MixerKind::Full }))
                .collect(),
            None => all(MixerKind::Full),
        },
        LayerRule::CompressRatios => {
            let ratios = per_layer_ints(cfg, "compress_ratios", layers, MAX_DIM)?
                .ok_or_else(|| missing("compress_ratios", fam))?;
            ratios
                .iter()
                .take(n)
                .map(|&r| match r {
                    1 => Err(Error::invalid("compress_ratios", r, "0 (the window alone) or a ratio of at least 2")),
                    r => Ok(LayerPlan::of(MixerKind::Compressed(r))),
                })
                .collect::<Result<Vec<_>>>()?
        }
        LayerRule::SparseFreq => {
            let sparse = match cfg.object("sparse_attention_config")? {
                Some(o) if o.get("use_sparse_attention").and_then(Value::as_bool) != Some(false) => {
                    let freq = list_of(
                        o.get("sparse_attention_freq").map(|v| ("sparse_attention_config.sparse_attention_freq", v)),
                        |v| super::as_u64(v).filter(|x| *x <= 1),
                        "0 or 1",
                    )?;
                    match freq {
                        Some(f) if (f.len() as u64) < layers => {
                            return Err(Error::invalid(
                                "sparse_attention_config.sparse_attention_freq",
                                format!("{} entries", f.len()),
                                format!("one entry per layer ({layers})"),
                            ))
                        }
                        Some(f) => f.iter().take(n).map(|x| *x == 1).collect(),
                        None => vec![true; n],
                    }
                }
                _ => vec![false; n],
            };
            sparse.into_iter().map(|s| LayerPlan::of(if s { MixerKind::Sparse } else { MixerKind::Full })).collect()
        }
    })
}

/// Kimi Linear's `linear_attn_config`: KDA on the 1-based `kda_layers`, MLA on the rest
/// (`full_attn_layers`); without the lists, MLA on every 4th layer after the first (transformers
/// `configuration_kimi_linear.py`).
fn kimi_linear(cfg: &HfConfig, layers: u64) -> Result<Vec<LayerPlan>> {
    let n = layers as usize;
    let linear = cfg.object("linear_attn_config")?;
    let kda = match linear.and_then(|o| o.get("kda_layers")) {
        Some(v) => list_of(
            Some(("linear_attn_config.kda_layers", v)),
            |x| super::as_u64(x).filter(|i| (1..=layers).contains(i)),
            &format!("1-based layer numbers from 1 to {layers}"),
        )?
        .unwrap_or_default(),
        None => (0..layers).filter(|i| !(*i > 0 && i % 4 == 0)).map(|i| i + 1).collect(),
    };
    Ok((0..n)
        .map(|i| LayerPlan::of(if kda.contains(&(i as u64 + 1)) { MixerKind::Linear } else { MixerKind::Full }))
        .collect())
}

/// nemotron-nas `block_configs`: per layer an attention block (`no_op`, `replace_with_linear`,
/// or GQA with `num_attention_heads / n_heads_in_group` KV heads and an optional
/// `window_length`) and an FFN (`no_op`, `replace_with_linear`, or SwiGLU of `intermediate_size`
/// or of `ffn_mult`: `I = ⌈⌊2·ffn_mult·H/3⌋ / 256⌉·256`, DeciLM's `_ffn_mult_to_intermediate_size`).
fn block_configs(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Vec<LayerPlan>> {
    let (key, list) = match cfg.get(&["block_configs"]) {
        Some((k, Value::Array(a))) => (k, a),
        Some((k, v)) => return Err(Error::invalid(k, super::json_kind(v), "a list of one block per layer")),
        None => return Err(missing("block_configs", fam)),
    };
    if list.len() as u64 != layers {
        return Err(Error::invalid(key, format!("{} blocks", list.len()), format!("one block per layer ({layers})")));
    }
    let hidden = cfg.required_dim(super::HIDDEN, MAX_DIM, fam)?;
    let heads = cfg.required_dim(super::HEADS, crate::limits::MAX_HEADS, fam)?;
    list.iter()
        .enumerate()
        .map(|(i, b)| {
            let field = |part: &str, k: &str| format!("block_configs[{i}].{part}.{k}");
            let part = |name: &str| -> Result<&serde_json::Map<String, Value>> {
                b.get(name)
                    .and_then(Value::as_object)
                    .ok_or_else(|| Error::invalid(format!("block_configs[{i}].{name}"), b, "an object"))
            };
            let flag = |o: &serde_json::Map<String, Value>, part: &str, k: &str| -> Result<bool> {
                match o.get(k) {
                    None | Some(Value::Null) => Ok(false),
                    Some(Value::Bool(v)) => Ok(*v),
                    Some(v) => Err(Error::invalid(field(part, k), v, "true or false")),
                }
            };
            let attn = part("attention")?;
            let ffn = part("ffn")?;
            let mut p = LayerPlan::of(MixerKind::Full);
            if flag(attn, "attention", "no_op")? {
                p.mixer = MixerKind::None;
            } else if flag(attn, "attention", "replace_with_linear")? {
                p.mixer = MixerKind::Projection;
            } else {
                if let Some(g) = attn.get("n_heads_in_group").filter(|v| !v.is_null()) {
                    let g = dim_value(field("attention", "n_heads_in_group"), g, heads)?;
                    if heads % g != 0 {
                        return Err(Error::invalid(
                            field("attention", "n_heads_in_group"),
                            g,
                            format!("a divisor of num_attention_heads ({heads})"),
                        ));
                    }
                    p.kv_heads = Some(heads / g);
                }
                if let Some(w) = attn.get("window_length").filter(|v| !v.is_null()) {
                    p.window = Some(dim_value(field("attention", "window_length"), w, crate::limits::MAX_CONTEXT)?);
                    p.mixer = MixerKind::Sliding;
                }
            }
            p.ffn = if flag(ffn, "ffn", "no_op")? {
                FfnKind::None
            } else if flag(ffn, "ffn", "replace_with_linear")? {
                FfnKind::Projection
            } else if let Some(w) = ffn.get("intermediate_size").filter(|v| !v.is_null()) {
                FfnKind::Width(dim_value(field("ffn", "intermediate_size"), w, MAX_DIM)?)
            } else {
                let mult = match ffn.get("ffn_mult") {
                    Some(v) => v.as_f64().filter(|m| *m > 0.0 && *m <= 64.0).ok_or_else(|| {
                        Error::invalid(field("ffn", "ffn_mult"), v, "a number above 0 and at most 64")
                    })?,
                    None => {
                        return Err(Error::MissingField {
                            field: field("ffn", "ffn_mult"),
                            context: "block_configs".into(),
                        })
                    }
                };
                let i = (2.0 * mult * hidden as f64 / 3.0) as u64;
                FfnKind::Width(i.div_ceil(256) * 256)
            };
            Ok(p)
        })
        .collect()
}

/// Per-layer sliding flag under the family's [`WindowRule`] (no `layer_types`).
fn windows(cfg: &HfConfig, fam: &Family, layers: u64) -> Result<Vec<bool>> {
    let opt_in = cfg.bool("use_sliding_window")?.unwrap_or(false);
    let first_window_layer = cfg.count(&["max_window_layers"], MAX_LAYERS)?.unwrap_or(0);
    let pattern = cfg.dim(&["sliding_window_pattern", "_sliding_window_pattern"], MAX_LAYERS)?.unwrap_or(6);
    Ok((0..layers)
        .map(|i| match fam.window {
            WindowRule::None => false,
            WindowRule::All => true,
            WindowRule::OptIn => opt_in && i >= first_window_layer,
            WindowRule::Even => i % 2 == 0,
            WindowRule::Pattern => (i + 1) % pattern != 0,
        })
        .collect())
}
