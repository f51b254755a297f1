//! What a checkpoint holds beside its decoder layers, and the notes a config earns:
//!
//! * **Multi-token prediction** (`num_nextn_predict_layers`, `mtp_num_hidden_layers`): each
//!   module is a decoder layer plus the projection of `[embedding; hidden]` (`eh_proj`, `2·H²`)
//!   and three norms (`3·H`); it shares the model's embedding and LM head. Its layer is the
//!   model's last, but a full-attention layer where the model's last is recurrent (Qwen3.5's MTP
//!   layers are full attention, vLLM `qwen3_5_mtp.py`), the attention and MoE blocks of
//!   `mtp_hybrid_override_pattern` (`*E`) for Nemotron-H (`nemotron_h_mtp.py`), and the window
//!   alone for DeepSeek-V4 (`deepseek_v4_mtp.py`); Step's is a sliding-window layer with the
//!   dense MLP and an LM head and norm of its own (`V·H + H`, `step3p5_mtp.py`). Engines load
//!   it only to draft with it.
//! * **Vision towers** (`vision_config`, unless `language_model_only`): Qwen's ViT
//!   (transformers `Qwen3VLVisionModel`: a Conv3d patch embedding `3·t·p²·d + d`, learned
//!   positions `n·d`, per block two LayerNorms `4d`, `qkv` `3d² + 3d`, `proj` `d² + d`, an MLP
//!   `2·d·I + I + d`; the merger `2d + m² + m + m·o + o` with `m = d·s²`, and one more per
//!   DeepStack layer with a LayerNorm over `m`); other towers estimated as a plain ViT
//!   (`layers · (4d² + 2·d·I + 6d + I)` + the patch embedding `3·p²·d` + a projector `2·d·H`).
//! * **Expert precision** (`expert_dtype: fp4`, DeepSeek-V4): the routed experts in MXFP4.

use super::mixers::Mixers;
use super::{dim_value, HfConfig};
use crate::error::{Error, Result};
use crate::limits::{MAX_DIM, MAX_LAYERS};
use crate::model::family::{AttentionLayout, Family, MtpLayout, RecurrenceName, VisionRule};
use crate::model::quant::{CheckpointQuant, WeightPrecisions};
use crate::model::spec::*;
use crate::precision::Precision;
use serde_json::{Map, Value};

/// The multi-token-prediction module, if the config has one (module docs).
pub(super) fn mtp(cfg: &HfConfig, fam: &Family, spec: &ModelSpec, mixers: &Mixers) -> Result<Option<Mtp>> {
    let n = cfg.count(&["num_nextn_predict_layers", "mtp_num_hidden_layers"], MAX_LAYERS)?.unwrap_or(0);
    let Some(last) = spec.layers().last() else { return Ok(None) };
    if n == 0 {
        return Ok(None);
    }
    let h = spec.hidden_size;
    let attention_layer =
        || spec.layers().iter().find(|l| matches!(l.attention, Attention::Standard(_) | Attention::Latent(_)));
    let mut connector = 2 * h * h + 3 * h;
    let one: Vec<LayerSpec> = match (fam.mtp, fam.recurrence, fam.attention) {
        (MtpLayout::WindowDenseHead, _, _) => {
            let window = spec.layers().iter().find(|l| l.attention.window().is_some()).unwrap_or(last);
            let dense = spec.layers().iter().find(|l| matches!(l.mlp, Mlp::Dense(_))).unwrap_or(last);
            connector += spec.embedding.vocab * h + h;
            vec![LayerSpec { mlp: dense.mlp.clone(), ..window.clone() }]
        }
        (MtpLayout::Last, RecurrenceName::Mamba2, _) => {
            // `*E`: an attention block and a MoE block, as the model's own.
            let attn = attention_layer().cloned();
            let moe = spec.layers().iter().find(|l| matches!(l.mlp, Mlp::Moe(_))).cloned();
            attn.into_iter().chain(moe).collect()
        }
        (MtpLayout::Last, RecurrenceName::GatedDelta | RecurrenceName::KimiDelta, _) => match attention_layer() {
            Some(a) => vec![LayerSpec { mlp: last.mlp.clone(), ..a.clone() }],
            None => vec![last.clone()],
        },
        (MtpLayout::Last, RecurrenceName::None, AttentionLayout::Compressed) => {
            vec![LayerSpec { attention: mixers.compressed(0)?, ..last.clone() }]
        }
        (MtpLayout::Last, RecurrenceName::None, AttentionLayout::Standard | AttentionLayout::Latent) => {
            vec![last.clone()]
        }
    };
    let layers: Vec<LayerSpec> = (0..n).flat_map(|_| one.iter().cloned()).collect();
    Ok(Some(Mtp { layers, connector_params: n * connector }))
}

/// Reads of one vision key, naming `vision_config.key`.
struct Vision<'a>(&'a Map<String, Value>);

impl Vision<'_> {
    fn get(&self, keys: &[&str], max: u64) -> Result<Option<u64>> {
        keys.iter()
            .find_map(|k| self.0.get(*k).filter(|v| !v.is_null()).map(|v| (k, v)))
            .map(|(k, v)| dim_value(format!("vision_config.{k}"), v, max))
            .transpose()
    }

    fn need(&self, keys: &[&str], max: u64) -> Result<u64> {
        self.get(keys, max)?.ok_or_else(|| Error::MissingField {
            field: format!("vision_config.{}", keys[0]),
            context: "a vision tower".into(),
        })
    }
}

/// Parameters of the vision tower and its projector (module docs); 0 without one.
pub(super) fn vision_params(cfg: &HfConfig, fam: &Family, text_hidden: u64) -> Result<u64> {
    let Some(v) = &cfg.vision else { return Ok(0) };
    if cfg.outer.get("language_model_only").and_then(Value::as_bool) == Some(true) {
        return Ok(0);
    }
    let v = Vision(v);
    let w = u128::from;
    let params = match fam.vision {
        VisionRule::Qwen => {
            let d = w(v.need(&["hidden_size", "embed_dim"], MAX_DIM)?);
            let depth = w(v.need(&["depth", "num_hidden_layers"], MAX_LAYERS)?);
            let inter = w(v.need(&["intermediate_size"], MAX_DIM)?);
            let p = w(v.get(&["patch_size"], 1024)?.unwrap_or(16));
            let t = w(v.get(&["temporal_patch_size"], 64)?.unwrap_or(2));
            let c = w(v.get(&["in_channels", "in_chans"], 64)?.unwrap_or(3));
            let positions = w(v.get(&["num_position_embeddings"], MAX_DIM)?.unwrap_or(0));
            let s = w(v.get(&["spatial_merge_size"], 64)?.unwrap_or(2));
            let out = w(v.get(&["out_hidden_size"], MAX_DIM)?.unwrap_or(text_hidden));
            let deepstack =
                v.0.get("deepstack_visual_indexes").and_then(Value::as_array).map_or(0, |a| a.len()) as u128;
            let m = d * s * s;
            let block = 4 * d * d + 2 * d * inter + 9 * d + inter;
            let merger = m * m + m + m * out + out;
            c * t * p * p * d + d + positions * d + depth * block + 2 * d + merger + deepstack * (2 * m + merger)
        }
        VisionRule::Generic => {
            let d = w(v.need(&["hidden_size", "vt_hidden_size", "embed_dim", "width"], MAX_DIM)?);
            let depth = w(v.need(&["num_hidden_layers", "vt_num_hidden_layers", "depth", "num_layers"], MAX_LAYERS)?);
            let inter = match v.get(&["intermediate_size", "vt_intermediate_size", "mlp_dim"], MAX_DIM)? {
                Some(i) => w(i),
                None => 4 * d,
            };
            let p = w(v.get(&["patch_size"], 1024)?.unwrap_or(14));
            depth * (4 * d * d + 2 * d * inter + 6 * d + inter) + 3 * p * p * d + 2 * d * w(text_hidden)
        }
    };
    u64::try_from(params).map_err(|_| Error::invalid("vision_config", "its dimensions", "a tower under 2⁶⁴ parameters"))
}

/// DeepSeek-V4's `expert_dtype: fp4`: the routed experts in MXFP4 (e2m1 values, an e8m0 scale a
/// 32), the rest as the quantisation config says — DeepSeek's own release, whose `fp8`
/// quantisation config covers the other classes. A checkpoint quantised again by a tool that
/// names every class's format (compressed-tensors, ModelOpt) keeps the key from the original
/// config, but its own quantisation config says what the experts are.
pub(super) fn expert_dtype(cfg: &HfConfig, quant: Option<CheckpointQuant>) -> Result<Option<CheckpointQuant>> {
    let requantised = matches!(&quant, Some(CheckpointQuant::Known { method, .. }) if method == "compressed-tensors" || method == "modelopt");
    match cfg.str(&["expert_dtype"])? {
        None => Ok(quant),
        Some("fp4" | "mxfp4") if requantised => Ok(quant),
        Some("fp4" | "mxfp4") => Ok(Some(match quant {
            Some(CheckpointQuant::Known { method, weights, gemm_activations }) => CheckpointQuant::Known {
                method,
                weights: WeightPrecisions { experts: Precision::MxFp4, ..weights },
                gemm_activations,
            },
            Some(unknown @ CheckpointQuant::Unknown { .. }) => unknown,
            None => CheckpointQuant::Known {
                method: "expert_dtype".into(),
                weights: WeightPrecisions { experts: Precision::MxFp4, ..WeightPrecisions::uniform(Precision::Bf16) },
                gemm_activations: None,
            },
        })),
        Some("bf16" | "bfloat16" | "fp8") => Ok(quant),
        Some(other) => Err(Error::invalid("expert_dtype", format!("{other:?}"), "fp4, mxfp4, fp8 or bf16")),
    }
}

/// Keys that change the real model but are not part of this ledger, reported rather than dropped.
pub(super) fn notes(cfg: &HfConfig, spec: &ModelSpec) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    if let Some(m) = &spec.mtp {
        notes.push(format!(
            "multi-token prediction: {} draft layer{} ({} parameters) stored beside the model; engines load them only to draft with them (speculative decoding), so they are in neither the step nor its weights",
            m.layers.len(),
            if m.layers.len() == 1 { "" } else { "s" },
            crate::error::grouped(spec.mtp_params())
        ));
    }
    for key in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if cfg.get(&[key]).is_some() {
            notes.push(format!("{key}: the tanh soft-capping is an elementwise pass that is not counted"));
        }
    }
    if spec.vision_params > 0 {
        notes.push(format!(
            "vision_config: the vision tower's {} parameters are held in memory beside the text model; the step is text-only",
            crate::error::grouped(spec.vision_params)
        ));
    }
    if cfg.bool("alibi")? == Some(true) {
        notes.push("alibi: the ALiBi bias add is part of the softmax row's elementwise work".into());
    }
    if cfg.get(&["num_hash_layers"]).is_some() {
        notes.push("num_hash_layers: the first layers route tokens by a hash table; counted with the router's GEMM, as vLLM runs it".into());
    }
    if cfg.get(&["attn_res_block_size"]).is_some() {
        notes.push(
            "attn_res_block_size: the block attention residuals' small mixing (a few vectors a layer) is not counted"
                .into(),
        );
    }
    if let Some(CheckpointQuant::Unknown { method }) = &spec.checkpoint_quant {
        notes.push(format!(
            "quantization_config.quant_method `{method}` is not modelled (known: {}); set `weights`",
            crate::model::quant::QUANT_METHODS.join(", ")
        ));
    }
    Ok(notes)
}
