//! Weight storage per module class, from a `--weights` choice or from a checkpoint's
//! `quantization_config` (architectures.md §14).
//!
//! Rules: `--weights P` stores every GEMM weight (attention, MLPs, experts, LM head) at P, as the
//! seed's ledger does; the embedding table and routers, which quantisers leave alone, stay at
//! `P.unquantised()` (bf16 for narrow formats). A checkpoint's `quantization_config` applies its
//! format to the linear layers it converts and leaves embedding, LM head, routers and anything in
//! `modules_to_not_convert`/`ignore` at bf16.

use crate::error::{Error, Result};
use crate::precision::Precision;
use serde::Serialize;
use serde_json::Value;

/// Storage precision of each class of weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WeightPrecisions {
    /// q/k/v/o and MLA projections.
    pub attention: Precision,
    /// Dense MLP projections.
    pub mlp: Precision,
    /// Routed experts.
    pub experts: Precision,
    /// Shared experts.
    pub shared_experts: Precision,
    /// MoE routers.
    pub router: Precision,
    /// Token (and position) embedding tables.
    pub embedding: Precision,
    /// LM head.
    pub lm_head: Precision,
}

impl WeightPrecisions {
    /// Every GEMM weight at `p`; embedding and router at `p.unquantised()`.
    pub fn uniform(p: Precision) -> Self {
        WeightPrecisions {
            attention: p,
            mlp: p,
            experts: p,
            shared_experts: p,
            router: p.unquantised(),
            embedding: p.unquantised(),
            lm_head: p,
        }
    }

    /// The classes with their precisions, in a fixed order.
    pub fn classes(&self) -> [(&'static str, Precision); 7] {
        [
            ("attention", self.attention),
            ("mlp", self.mlp),
            ("experts", self.experts),
            ("shared", self.shared_experts),
            ("router", self.router),
            ("embedding", self.embedding),
            ("lm_head", self.lm_head),
        ]
    }

    /// Short description: one name when uniform (`--weights P`), otherwise the most common format
    /// with the exceptions (`fp8-b128 (router, embedding, lm_head bf16)`).
    pub fn describe(&self) -> String {
        if *self == Self::uniform(self.attention) {
            return self.attention.name();
        }
        let classes = self.classes();
        let common = classes
            .iter()
            .map(|(_, p)| *p)
            .max_by_key(|p| classes.iter().filter(|(_, q)| q == p).count())
            .unwrap_or(Precision::Bf16);
        let mut by_format: Vec<(Precision, Vec<&str>)> = Vec::new();
        for (name, p) in classes.iter().filter(|(_, p)| *p != common) {
            match by_format.iter_mut().find(|(q, _)| q == p) {
                Some((_, names)) => names.push(name),
                None => by_format.push((*p, vec![name])),
            }
        }
        let exceptions: Vec<String> = by_format.iter().map(|(p, names)| format!("{} {p}", names.join(", "))).collect();
        format!("{common} ({})", exceptions.join("; "))
    }
}

/// What a checkpoint's `quantization_config` says about weight storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CheckpointQuant {
    /// A method this tool models.
    Known {
        /// `quant_method` as written.
        method: String,
        /// Resulting storage per class.
        weights: WeightPrecisions,
        /// Format the checkpoint quantises GEMM inputs to (W8A8 fp8 with an `activation_scheme`,
        /// compressed-tensors `input_activations`); `None` for weight-only schemes.
        gemm_activations: Option<Precision>,
    },
    /// A method this tool does not model; the user must pass `--weights`.
    Unknown {
        /// `quant_method` as written.
        method: String,
    },
}

/// Methods understood by [`parse_quantization_config`].
pub const QUANT_METHODS: &[&str] = &["fp8", "fbgemm_fp8", "mxfp4", "gptq", "awq", "compressed-tensors", "bitsandbytes"];

fn excluded(patterns: &[String], needles: &[&str]) -> bool {
    patterns.iter().any(|p| needles.iter().any(|n| p.contains(n)))
}

fn int4_or_8(field: &str, bits: u64, group: Option<i64>) -> Result<Precision> {
    match (bits, group) {
        (8, _) => Ok(Precision::Int8),
        (4, Some(g)) if g > 0 => format!("int4-g{g}").parse().map_err(|_| {
            Error::invalid(format!("quantization_config.{field}"), g, "a power of two in 16..=4096, or -1")
        }),
        (4, _) => Ok(Precision::Int4),
        (b, _) => Err(Error::invalid("quantization_config.bits", b, "4 or 8")),
    }
}

/// Read `quantization_config`. Returns `None` when absent or null.
pub fn parse_quantization_config(q: Option<&Value>) -> Result<Option<CheckpointQuant>> {
    let Some(q) = q.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let obj = q.as_object().ok_or_else(|| Error::invalid("quantization_config", "non-object", "an object"))?;
    let method = obj
        .get("quant_method")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::MissingField {
            field: "quantization_config.quant_method".into(),
            context: "a quantised checkpoint".into(),
        })?
        .to_string();
    let strings = |key: &str| -> Vec<String> {
        obj.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let mut skip = strings("modules_to_not_convert");
    skip.extend(strings("ignored_layers"));
    skip.extend(strings("ignore"));
    let u = |key: &str| obj.get(key).and_then(Value::as_i64);

    let base = Precision::Bf16;
    let mut gemm_activations = None;
    let linear = match method.as_str() {
        "fp8" | "fbgemm_fp8" => {
            // `activation_scheme` (dynamic or static) means the inputs are quantised to fp8 too: W8A8.
            if obj.get("activation_scheme").is_some_and(|v| !v.is_null()) || method == "fbgemm_fp8" {
                gemm_activations = Some(Precision::Fp8);
            }
            match obj.get("weight_block_size").and_then(Value::as_array) {
                Some(b) => {
                    let dims: Vec<i64> = b.iter().filter_map(Value::as_i64).collect();
                    match dims.as_slice() {
                        [a, c] if a == c => format!("fp8-b{a}").parse().map_err(|_| {
                            Error::invalid(
                                "quantization_config.weight_block_size",
                                format!("{dims:?}"),
                                "a square power-of-two block, 16..=4096",
                            )
                        })?,
                        _ => {
                            return Err(Error::invalid(
                                "quantization_config.weight_block_size",
                                format!("{dims:?}"),
                                "two equal integers such as [128, 128]",
                            ))
                        }
                    }
                }
                None => Precision::Fp8,
            }
        }
        "mxfp4" => Precision::MxFp4,
        "gptq" | "awq" => {
            let bits = u("bits").unwrap_or(4);
            int4_or_8("group_size", bits.max(0) as u64, u("group_size"))?
        }
        "bitsandbytes" => {
            if obj.get("load_in_8bit").and_then(Value::as_bool) == Some(true) {
                Precision::Int8
            } else {
                // NF4: 4 bits + an fp32 absmax per 64 values = 4.5 bits, the size of int4-g64.
                Precision::Int4Group { group: 64 }
            }
        }
        "compressed-tensors" => {
            let w = obj
                .get("config_groups")
                .and_then(Value::as_object)
                .and_then(|g| g.values().next())
                .and_then(|g| g.get("weights"))
                .ok_or_else(|| Error::MissingField {
                    field: "quantization_config.config_groups.*.weights".into(),
                    context: "compressed-tensors".into(),
                })?;
            let bits = w.get("num_bits").and_then(Value::as_u64).unwrap_or(8);
            let float = w.get("type").and_then(Value::as_str) == Some("float");
            let inputs = obj
                .get("config_groups")
                .and_then(Value::as_object)
                .and_then(|g| g.values().next())
                .and_then(|g| g.get("input_activations"))
                .filter(|v| !v.is_null());
            if let Some(i) = inputs {
                let ibits = i.get("num_bits").and_then(Value::as_u64).unwrap_or(16);
                let ifloat = i.get("type").and_then(Value::as_str) == Some("float");
                gemm_activations = match (ibits, ifloat) {
                    (8, true) => Some(Precision::Fp8),
                    (8, false) => Some(Precision::Int8),
                    (4, true) => Some(Precision::NvFp4),
                    _ => None,
                };
            }
            match (bits, float) {
                (8, true) => Precision::Fp8,
                (4, true) => Precision::NvFp4,
                (b, _) => {
                    int4_or_8("config_groups.*.weights.group_size", b, w.get("group_size").and_then(Value::as_i64))?
                }
            }
        }
        _ => return Ok(Some(CheckpointQuant::Unknown { method })),
    };
    let pick = |is_skipped: bool, p: Precision| if is_skipped { base } else { p };
    let weights = if method == "mxfp4" {
        // gpt-oss: MXFP4 on the routed experts only; everything else stays bf16.
        WeightPrecisions { experts: linear, ..WeightPrecisions::uniform(base) }
    } else {
        let attn = excluded(&skip, &["self_attn", ".attn", "attention"]);
        let mlp = skip.iter().any(|p| p.ends_with(".mlp") || p.ends_with("mlp.*"));
        WeightPrecisions {
            attention: pick(attn, linear),
            mlp: pick(mlp, linear),
            experts: pick(mlp || excluded(&skip, &["experts"]), linear),
            shared_experts: pick(mlp || excluded(&skip, &["shared_expert"]), linear),
            router: base,
            embedding: base,
            lm_head: base,
        }
    };
    Ok(Some(CheckpointQuant::Known { method, weights, gemm_activations }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deepseek_fp8_block_scales_apply_to_linear_layers_only() {
        let q = json!({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.attention, Precision::Fp8Block { block: 128 });
        assert_eq!(weights.experts, Precision::Fp8Block { block: 128 });
        assert_eq!(weights.lm_head, Precision::Bf16);
        assert_eq!(weights.embedding, Precision::Bf16);
        let Some(CheckpointQuant::Known { gemm_activations, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(gemm_activations, Some(Precision::Fp8), "W8A8: activation_scheme dynamic");
    }

    #[test]
    fn gpt_oss_mxfp4_is_experts_only() {
        let q = json!({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.experts, Precision::MxFp4);
        assert_eq!(weights.attention, Precision::Bf16);
    }

    #[test]
    fn gptq_group_size_sets_the_scale_overhead() {
        let q = json!({"quant_method": "gptq", "bits": 4, "group_size": 128});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.mlp, Precision::Int4Group { group: 128 });
        let q = json!({"quant_method": "awq", "bits": 3, "group_size": 128});
        assert_eq!(
            parse_quantization_config(Some(&q)).unwrap_err().to_string(),
            "invalid `quantization_config.bits`: 3 (4 or 8)"
        );
    }

    #[test]
    fn unknown_methods_are_recorded_not_guessed() {
        let q = json!({"quant_method": "hqq"});
        assert_eq!(
            parse_quantization_config(Some(&q)).unwrap(),
            Some(CheckpointQuant::Unknown { method: "hqq".into() })
        );
        assert_eq!(parse_quantization_config(None).unwrap(), None);
    }
}
