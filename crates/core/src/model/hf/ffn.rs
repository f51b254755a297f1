//! Each layer's feed-forward block: the plan's when it says (an MLP, a MoE, one linear layer,
//! none), else the family's MoE layout ([`MoeLayout`]):
//!
//! | layout | which layers are MoE | experts | shared experts | dense layers |
//! |---|---|---|---|---|
//! | mixtral, gpt_oss | all | `num_local_experts` of `intermediate_size` | `shared_intermediate_size` (MiniMax-M2; 0: none) | — |
//! | qwen | `(i+1) % decoder_sparse_step == 0`, not in `mlp_only_layers` | `num_experts` of `moe_intermediate_size` | `shared_expert_intermediate_size` (0: none) with a sigmoid gate | `intermediate_size` |
//! | deepseek | `i ≥ first_k_dense_replace` and `i % moe_layer_freq == 0`, or `moe_layer_freq[i] == 1`, or `mlp_layer_types[i] == "sparse"` | `n_routed_experts` (`num_experts`) of `moe_intermediate_size`, in a latent of `routed_expert_hidden_size` if set | `n_shared_experts × moe_intermediate_size` | `intermediate_size` |
//! | nemotron | the `E` layers | `n_routed_experts` of `moe_intermediate_size`, in a latent of `moe_latent_size` if set | `n_shared_experts × moe_shared_expert_intermediate_size` | the `-` layers: `intermediate_size` (or its entry for that MLP) |
//! | llama4 | `moe_layers`, or `(i+1) % interleave_moe_layer_step == 0` | `num_local_experts` of `intermediate_size` | one of `intermediate_size` | `intermediate_size_mlp` |
//! | gemma4 | every layer with `enable_moe_block` | `num_experts` (`top_k_experts`) of `moe_intermediate_size` | the dense MLP of `intermediate_size` beside them | `intermediate_size` |
//! | minimax | `moe_layer_freq[i] == 1` | `num_local_experts` of `intermediate_size` | `shared_intermediate_size × n_shared_experts` | `dense_intermediate_size` |
//! | step | `moe_layers_enum`, else `i ≥ first_k_dense_replace` | `num_experts` (`moe_num_experts`) of `moe_intermediate_size` | `share_expert_dim` | `intermediate_size` |

use super::layers::{FfnKind, LayerPlan};
use super::{as_u64, dim_default, list_of, missing, HfConfig, INTERMEDIATE};
use crate::error::{Error, Result};
use crate::limits::{MAX_DIM, MAX_EXPERTS, MAX_LAYERS};
use crate::model::family::{Family, MlpLayout, MoeLayout};
use crate::model::spec::*;
use serde_json::Value;

/// Norms a Gemma 4 MoE layer adds to its MLP half (`post_feedforward_layernorm_1/_2`,
/// `pre_feedforward_layernorm_2`: transformers `Gemma4TextDecoderLayer`).
const GEMMA4_MOE_NORMS: u32 = 3;

/// What one family's feed-forward blocks share, read once.
struct Ffn<'a> {
    cfg: &'a HfConfig,
    fam: &'a Family,
    hidden: u64,
    heads: u64,
    activation: Activation,
    bias: bool,
}

impl Ffn<'_> {
    /// A dense MLP of `width` in the family's layout.
    fn dense(&self, width: u64) -> DenseMlp {
        DenseMlp {
            intermediate: width,
            gated: self.fam.mlp == MlpLayout::Gated,
            bias: self.bias,
            activation: self.activation,
            fused_gate_up: self.fam.fused_gate_up,
        }
    }

    /// `intermediate_size`, else the family's default (required otherwise).
    fn intermediate(&self) -> Result<u64> {
        match self.cfg.dim(INTERMEDIATE, MAX_DIM)? {
            Some(v) => Ok(v),
            None => match self.fam.intermediate_size {
                Some(d) => dim_default(d, self.hidden, self.heads, "intermediate_size"),
                None => Err(missing("intermediate_size", self.fam)),
            },
        }
    }

    /// A width that a config may give as 0 for "none" (`shared_expert_intermediate_size: 0`,
    /// Qwen3-Coder).
    fn optional_width(&self, keys: &[&'static str]) -> Result<Option<u64>> {
        Ok(self.cfg.count(keys, MAX_DIM)?.filter(|w| *w > 0))
    }

    /// A MoE block: `experts` of `width`, top-k from `num_experts_per_tok` (or an alias).
    fn moe(
        &self,
        experts_keys: &[&'static str],
        width: u64,
        shared: Option<DenseMlp>,
        shared_gate: bool,
    ) -> Result<Mlp> {
        let fam = self.fam;
        let experts = self.cfg.required_dim(experts_keys, MAX_EXPERTS, fam)?;
        let top_k = self.cfg.required_dim(
            &["num_experts_per_tok", "experts_per_token", "num_experts_per_token", "top_k_experts", "moe_top_k"],
            MAX_EXPERTS,
            fam,
        )?;
        if top_k > experts {
            return Err(Error::invalid(
                "num_experts_per_tok",
                top_k,
                format!("at most the number of experts ({experts})"),
            ));
        }
        let mut expert = self.dense(width);
        if let Some(a) = &fam.expert_activation {
            expert.activation = Activation::from_hf(a)
                .ok_or_else(|| Error::invalid("families.toml expert_activation", a, "a known activation"))?;
        }
        Ok(Mlp::Moe(MoeMlp { experts, top_k, expert, shared, shared_gate, router_bias: fam.router_bias, latent: None }))
    }

    /// `n × width` (`width_key`'s) as one shared MLP (DeepSeek's shared experts run as one), none
    /// for 0.
    fn shared(
        &self,
        count_keys: &[&'static str],
        width_key: &str,
        width: u64,
        default_count: u64,
    ) -> Result<Option<DenseMlp>> {
        let n = self.cfg.count(count_keys, MAX_EXPERTS)?.unwrap_or(default_count);
        if n == 0 {
            return Ok(None);
        }
        let total = width.checked_mul(n).filter(|w| *w <= MAX_DIM).ok_or_else(|| {
            Error::invalid(count_keys[0], n, format!("at most {MAX_DIM} ÷ {width_key} ({width}) = {}", MAX_DIM / width))
        })?;
        Ok(Some(self.dense(total)))
    }

    /// A list of 0/1 per layer (`moe_layer_freq` as a list); `None` when the key is a number or
    /// absent.
    fn per_layer_flags(&self, key: &'static str, layers: usize) -> Result<Option<Vec<bool>>> {
        let Some((k, v)) = self.cfg.get(&[key]) else { return Ok(None) };
        if !v.is_array() {
            return Ok(None);
        }
        let list = list_of(Some((k, v)), |x| as_u64(x).filter(|n| *n <= 1), "0 or 1")?.unwrap_or_default();
        if list.len() < layers {
            return Err(Error::invalid(
                k,
                format!("{} entries", list.len()),
                format!("one entry per layer ({layers})"),
            ));
        }
        Ok(Some(list.iter().map(|x| *x == 1).collect()))
    }
}

/// Every layer's feed-forward block and the norms it adds beyond the family's (module docs).
pub(super) fn layer_ffns(
    cfg: &HfConfig,
    fam: &Family,
    plan: &[LayerPlan],
    hidden: u64,
    heads: u64,
    activation: Activation,
) -> Result<Vec<(Mlp, u32)>> {
    let f = Ffn { cfg, fam, hidden, heads, activation, bias: cfg.flag(&fam.mlp_bias)? };
    let n = plan.len();
    let is_moe = moe_layers(&f, n)?;
    // Nemotron-H's MLP widths may be a list, one per `-` layer in order.
    let mlp_widths = match cfg.get(&["intermediate_size"]) {
        Some((k, v @ Value::Array(_))) => {
            list_of(Some((k, v)), |x| as_u64(x).filter(|w| (1..=MAX_DIM).contains(w)), "widths")?
        }
        _ => None,
    };
    let mut mlp_ordinal = 0usize;
    let mut dense_width = || -> Result<u64> {
        let w = match &mlp_widths {
            Some(list) => list.get(mlp_ordinal).copied().ok_or_else(|| {
                Error::invalid("intermediate_size", format!("{} widths", list.len()), "one width per MLP layer")
            })?,
            None => f.dense_width()?,
        };
        mlp_ordinal += 1;
        Ok(w)
    };
    plan.iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(match p.ffn {
                FfnKind::None => (Mlp::None, 0),
                FfnKind::Projection => (Mlp::Linear { bias: f.bias }, 0),
                FfnKind::Width(w) => (Mlp::Dense(f.dense(w)), 0),
                FfnKind::Dense => (Mlp::Dense(f.dense(dense_width()?)), 0),
                FfnKind::Moe => (f.moe_block()?, 0),
                FfnKind::Family if is_moe[i] => {
                    let norms = if fam.moe == MoeLayout::Gemma4 { GEMMA4_MOE_NORMS } else { 0 };
                    (f.moe_block()?, norms)
                }
                FfnKind::Family => (Mlp::Dense(f.dense(f.dense_width()?)), 0),
            })
        })
        .collect()
}

impl Ffn<'_> {
    /// The width of the family's dense layers.
    fn dense_width(&self) -> Result<u64> {
        match self.fam.moe {
            MoeLayout::Llama4 => {
                self.cfg.dim(&["intermediate_size_mlp"], MAX_DIM)?.map_or_else(|| self.intermediate(), Ok)
            }
            MoeLayout::Minimax => {
                self.cfg.dim(&["dense_intermediate_size"], MAX_DIM)?.map_or_else(|| self.intermediate(), Ok)
            }
            MoeLayout::None
            | MoeLayout::Mixtral
            | MoeLayout::Qwen
            | MoeLayout::Deepseek
            | MoeLayout::GptOss
            | MoeLayout::Nemotron
            | MoeLayout::Gemma4
            | MoeLayout::Step => self.intermediate(),
        }
    }

    /// The family's MoE block (module docs' table).
    fn moe_block(&self) -> Result<Mlp> {
        let cfg = self.cfg;
        let fam = self.fam;
        let required = |keys: &[&'static str]| cfg.required_dim(keys, MAX_DIM, fam);
        match fam.moe {
            MoeLayout::None => Err(Error::invalid(
                "layer_types",
                "a MoE layer",
                format!("the layers of model_type {} (it has no experts)", fam.name),
            )),
            MoeLayout::Mixtral | MoeLayout::GptOss => {
                let shared = self.optional_width(&["shared_intermediate_size"])?.map(|w| self.dense(w));
                self.moe(&["num_local_experts", "num_experts"], self.intermediate()?, shared, false)
            }
            MoeLayout::Qwen => {
                let shared = self.optional_width(&["shared_expert_intermediate_size"])?.map(|w| self.dense(w));
                let gate = shared.is_some();
                self.moe(&["num_experts"], required(&["moe_intermediate_size"])?, shared, gate)
            }
            MoeLayout::Deepseek => {
                let width = required(&["moe_intermediate_size"])?;
                let shared =
                    self.shared(&["n_shared_experts", "num_shared_experts"], "moe_intermediate_size", width, 0)?;
                let mut moe =
                    self.moe(&["n_routed_experts", "num_experts", "num_local_experts"], width, shared, false)?;
                if let (Mlp::Moe(m), Some(dim)) = (&mut moe, cfg.dim(&["routed_expert_hidden_size"], MAX_DIM)?) {
                    m.latent = Some(LatentExperts { dim, norm: cfg.bool("latent_moe_use_norm")?.unwrap_or(false) });
                }
                Ok(moe)
            }
            MoeLayout::Nemotron => {
                let shared_width = self.optional_width(&["moe_shared_expert_intermediate_size"])?;
                let shared = match shared_width {
                    Some(w) => self.shared(&["n_shared_experts"], "moe_shared_expert_intermediate_size", w, 1)?,
                    None => None,
                };
                let mut moe = self.moe(
                    &["n_routed_experts", "num_local_experts"],
                    required(&["moe_intermediate_size"])?,
                    shared,
                    false,
                )?;
                if let (Mlp::Moe(m), Some(dim)) = (&mut moe, cfg.dim(&["moe_latent_size"], MAX_DIM)?) {
                    m.latent = Some(LatentExperts { dim, norm: false });
                }
                Ok(moe)
            }
            MoeLayout::Llama4 => {
                let width = self.intermediate()?;
                self.moe(&["num_local_experts"], width, Some(self.dense(width)), false)
            }
            MoeLayout::Gemma4 => {
                let shared = Some(self.dense(self.intermediate()?));
                self.moe(&["num_experts"], required(&["moe_intermediate_size"])?, shared, false)
            }
            MoeLayout::Minimax => {
                let width = cfg.dim(&["moe_intermediate_size"], MAX_DIM)?.map_or_else(|| self.intermediate(), Ok)?;
                let shared = self.optional_width(&["shared_intermediate_size"])?.map(|w| self.dense(w));
                self.moe(&["num_local_experts", "num_experts"], width, shared, false)
            }
            MoeLayout::Step => {
                let shared = match self.optional_width(&["share_expert_dim"])? {
                    Some(w) => self.shared(&["n_shared_experts"], "share_expert_dim", w, 1)?,
                    None => None,
                };
                self.moe(&["num_experts", "moe_num_experts"], required(&["moe_intermediate_size"])?, shared, false)
            }
        }
    }
}

/// Which layers are MoE under the family's layout (module docs' table).
fn moe_layers(f: &Ffn, n: usize) -> Result<Vec<bool>> {
    let cfg = f.cfg;
    let first_dense =
        || -> Result<usize> { Ok(cfg.count(&["first_k_dense_replace"], MAX_LAYERS)?.unwrap_or(0) as usize) };
    Ok(match f.fam.moe {
        MoeLayout::None | MoeLayout::Nemotron => vec![false; n],
        MoeLayout::Qwen => {
            let only_dense = cfg
                .list("mlp_only_layers", |v| as_u64(v).filter(|i| *i < MAX_LAYERS), "layer indices below 4096")?
                .unwrap_or_default();
            let step = cfg.dim(&["decoder_sparse_step"], MAX_LAYERS)?.unwrap_or(1) as usize;
            (0..n).map(|i| !only_dense.contains(&(i as u64)) && (i + 1) % step == 0).collect()
        }
        MoeLayout::Deepseek => {
            if let Some(types) =
                cfg.list("mlp_layer_types", |v| v.as_str().map(str::to_string), "\"dense\" or \"sparse\"")?
            {
                if types.len() < n {
                    return Err(Error::invalid(
                        "mlp_layer_types",
                        format!("{} entries", types.len()),
                        format!("one entry per layer ({n})"),
                    ));
                }
                types
                    .iter()
                    .take(n)
                    .map(|t| match t.as_str() {
                        "sparse" | "moe" => Ok(true),
                        "dense" | "mlp" => Ok(false),
                        other => {
                            Err(Error::invalid("mlp_layer_types", format!("{other:?}"), "\"dense\" or \"sparse\""))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?
            } else if let Some(flags) = f.per_layer_flags("moe_layer_freq", n)? {
                flags.into_iter().take(n).collect()
            } else {
                let first = first_dense()?;
                let freq = cfg.dim(&["moe_layer_freq"], MAX_LAYERS)?.unwrap_or(1) as usize;
                (0..n).map(|i| i >= first && i % freq == 0).collect()
            }
        }
        MoeLayout::Mixtral | MoeLayout::GptOss => vec![true; n],
        MoeLayout::Llama4 => {
            match cfg.list("moe_layers", |v| as_u64(v).filter(|i| *i < MAX_LAYERS), "layer indices below 4096")? {
                Some(list) => (0..n).map(|i| list.contains(&(i as u64))).collect(),
                None => {
                    let step = cfg.dim(&["interleave_moe_layer_step"], MAX_LAYERS)?.unwrap_or(1) as usize;
                    (0..n).map(|i| (i + 1) % step == 0).collect()
                }
            }
        }
        MoeLayout::Gemma4 => vec![cfg.bool("enable_moe_block")?.unwrap_or(false); n],
        MoeLayout::Minimax => match f.per_layer_flags("moe_layer_freq", n)? {
            Some(flags) => flags.into_iter().take(n).collect(),
            None => {
                let first = first_dense()?;
                (0..n).map(|i| i >= first).collect()
            }
        },
        MoeLayout::Step => match cfg.str(&["moe_layers_enum"])? {
            Some(list) => {
                let layers = list
                    .split(',')
                    .map(|x| {
                        x.trim().parse::<usize>().ok().filter(|i| *i < n).ok_or_else(|| {
                            Error::invalid(
                                "moe_layers_enum",
                                format!("{list:?}"),
                                format!("comma-separated layer indices below {n}"),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                (0..n).map(|i| layers.contains(&i)).collect()
            }
            None => match cfg.count(&["first_k_dense_replace"], MAX_LAYERS)? {
                Some(first) => (0..n).map(|i| i as u64 >= first).collect(),
                None => (0..n).map(|i| i >= 1).collect(),
            },
        },
    })
}
