//! Each layer's token mixer from its [`LayerPlan`]: standard attention (its heads and widths per
//! layer type), MLA (with DeepSeek Sparse Attention's indexer), DeepSeek-V4's compressed
//! attention, a recurrent mixer, one linear layer, or none.
//!
//! Per-type widths: MiMo-V2's sliding layers read `swa_num_attention_heads`,
//! `swa_num_key_value_heads`, `swa_head_dim`, `swa_v_head_dim`; Gemma 4's full layers
//! `global_head_dim` and, with `attention_k_eq_v`, `num_global_key_value_heads` (no value
//! projection); Step's layers of `attention_other_setting.attention_type` its
//! `num_attention_heads`, `num_attention_groups` and `head_dim`; nemotron-nas layers their own
//! KV heads. Recurrent mixers: Gated DeltaNet (`linear_num_key_heads`, `linear_num_value_heads`,
//! `linear_key_head_dim`, `linear_value_head_dim`, `linear_conv_kernel_dim`,
//! `mamba_ssm_dtype`), KDA (`linear_attn_config`: `num_heads`, `head_dim`,
//! `short_conv_kernel_size`, `use_full_rank_gate`; state fp32, vLLM's default), Mamba-2
//! (`mamba_num_heads`, `mamba_head_dim`, `n_groups`, `ssm_state_size`, `conv_kernel`,
//! `use_conv_bias`, `mamba_proj_bias`/`use_bias`, `chunk_size`, `mamba_ssm_cache_dtype`, fp32
//! unless set). Sparse attention: DSA's `index_n_heads`, `index_head_dim`, `index_topk` and which
//! layers own an indexer (`indexer_types` "full"/"shared", `index_topk_pattern`,
//! `index_topk_freq` with `index_skip_topk_offset`: GLM-5.2's IndexShare); MiniMax-M3's
//! `sparse_attention_config` (`sparse_num_index_heads`, `sparse_index_dim`,
//! `sparse_block_size`, `sparse_topk_blocks`, `sparse_local_block`, `sparse_init_block`).

use super::layers::{LayerPlan, MixerKind};
use super::{dim_default, dim_value, missing, HfConfig, KV_HEADS};
use crate::error::{Error, Result};
use crate::limits::{MAX_CONTEXT, MAX_DIM, MAX_HEADS, MAX_LAYERS};
use crate::model::family::{AttentionLayout, Family, IndexerRule, Positions, QkNormName, RecurrenceName, WindowRule};
use crate::model::spec::*;
use crate::precision::Precision;
use serde_json::Value;

/// Chunk of the delta rules' chunked prefill kernels (FLA `chunk_gated_delta_rule`,
/// `chunk_kda`: `BT = 64`; vLLM's CuTeDSL GDN kernels assert it).
pub(super) const DELTA_RULE_CHUNK: u64 = 64;

/// Chunk of Mamba-2's SSD when the config gives none (`chunk_size` of every Nemotron-H config).
pub(super) const MAMBA2_DEFAULT_CHUNK: u64 = 128;

/// The state dtypes a config may name, and their precision.
const STATE_DTYPES: &[(&str, Precision)] = &[
    ("float32", Precision::Fp32),
    ("fp32", Precision::Fp32),
    ("bfloat16", Precision::Bf16),
    ("bf16", Precision::Bf16),
    ("float16", Precision::Fp16),
    ("fp16", Precision::Fp16),
];

/// What every layer's mixer shares, read once.
pub(super) struct Mixers<'a> {
    cfg: &'a HfConfig,
    fam: &'a Family,
    hidden: u64,
    heads: u64,
    /// The recurrent mixer of the linear layers, if the family has one.
    recurrent: Option<RecurrentMixer>,
}

impl<'a> Mixers<'a> {
    pub(super) fn new(cfg: &'a HfConfig, fam: &'a Family, hidden: u64, heads: u64) -> Result<Self> {
        let recurrent = match fam.recurrence {
            RecurrenceName::None => None,
            RecurrenceName::GatedDelta => Some(gated_delta(cfg, fam)?),
            RecurrenceName::KimiDelta => Some(kimi_delta(cfg, fam)?),
            RecurrenceName::Mamba2 => Some(mamba2(cfg, fam)?),
        };
        Ok(Mixers { cfg, fam, hidden, heads, recurrent })
    }

    /// The mixer of layer `i`.
    pub(super) fn build(&self, p: &LayerPlan, i: usize) -> Result<Attention> {
        let fam = self.fam;
        match p.mixer {
            MixerKind::None => Ok(Attention::None),
            MixerKind::Projection => Ok(Attention::Linear { bias: self.cfg.bool("attention_bias")?.unwrap_or(false) }),
            MixerKind::Linear => self.recurrent.map(Attention::Recurrent).ok_or_else(|| {
                Error::invalid(
                    "layer_types",
                    "\"linear_attention\"",
                    format!("the attention kinds of model_type {} (it has no recurrent mixer)", fam.name),
                )
            }),
            MixerKind::Compressed(ratio) => self.compressed(ratio),
            MixerKind::Full | MixerKind::Sliding | MixerKind::Chunked | MixerKind::Sparse => match fam.attention {
                AttentionLayout::Latent => self.latent(p, i),
                AttentionLayout::Standard => self.standard(p),
                AttentionLayout::Compressed => self.compressed(0),
            },
        }
    }

    /// Standard attention of a layer of plan `p`.
    fn standard(&self, p: &LayerPlan) -> Result<Attention> {
        let (cfg, fam) = (self.cfg, self.fam);
        let mut heads = self.heads;
        let mut head_dim = match cfg.dim(&["head_dim", "attention_head_dim"], MAX_DIM)? {
            Some(d) => d,
            None => dim_default(fam.head_dim, self.hidden, heads, "head_dim")?,
        };
        let mut kv_heads = self.kv_heads()?;
        let mut v_head_dim = cfg.dim(&["v_head_dim"], MAX_DIM)?;
        let mut k_eq_v = false;
        let sliding = p.mixer == MixerKind::Sliding;
        if sliding && cfg.has("swa_num_attention_heads") {
            heads = cfg.required_dim(&["swa_num_attention_heads"], MAX_HEADS, fam)?;
            kv_heads = cfg.required_dim(&["swa_num_key_value_heads"], MAX_HEADS, fam)?;
            head_dim = cfg.dim(&["swa_head_dim"], MAX_DIM)?.unwrap_or(head_dim);
            v_head_dim = cfg.dim(&["swa_v_head_dim"], MAX_DIM)?.or(v_head_dim);
        }
        if p.mixer == MixerKind::Full {
            if let Some(g) = cfg.dim(&["global_head_dim"], MAX_DIM)? {
                head_dim = g;
                v_head_dim = Some(g);
                if cfg.bool("attention_k_eq_v")? == Some(true) {
                    k_eq_v = true;
                    kv_heads = cfg.dim(&["num_global_key_value_heads"], MAX_HEADS)?.unwrap_or(kv_heads);
                }
            }
        }
        if p.other_setting {
            if let Some(o) = cfg.object("attention_other_setting")? {
                let read = |k: &str, max: u64| -> Result<Option<u64>> {
                    o.get(k)
                        .filter(|v| !v.is_null())
                        .map(|v| dim_value(format!("attention_other_setting.{k}"), v, max))
                        .transpose()
                };
                heads = read("num_attention_heads", MAX_HEADS)?.unwrap_or(heads);
                kv_heads = read("num_attention_groups", MAX_HEADS)?.unwrap_or(kv_heads);
                head_dim = read("head_dim", MAX_DIM)?.unwrap_or(head_dim);
            }
        }
        kv_heads = p.kv_heads.unwrap_or(kv_heads);
        if heads % kv_heads != 0 {
            return Err(Error::invalid(
                "num_key_value_heads",
                kv_heads,
                format!("a divisor of num_attention_heads ({heads})"),
            ));
        }
        let reach = match p.mixer {
            MixerKind::Sliding => match p.window.map_or_else(|| self.window(), |w| Ok(Some(w)))? {
                Some(w) => Reach::Window(w),
                None if fam.window == WindowRule::All => Reach::All,
                None => return Err(missing("sliding_window", fam)),
            },
            MixerKind::Chunked => Reach::Chunk(cfg.required_dim(&["attention_chunk_size"], MAX_CONTEXT, fam)?),
            MixerKind::Sparse => Reach::TopK(self.minimax_indexer()?.top_k),
            MixerKind::Full
            | MixerKind::Linear
            | MixerKind::Compressed(_)
            | MixerKind::Projection
            | MixerKind::None => Reach::All,
        };
        let indexer = match p.mixer {
            MixerKind::Sparse => Some(self.minimax_indexer()?),
            MixerKind::Full
            | MixerKind::Sliding
            | MixerKind::Chunked
            | MixerKind::Linear
            | MixerKind::Compressed(_)
            | MixerKind::Projection
            | MixerKind::None => None,
        };
        let sinks = fam.sinks
            || match p.mixer {
                MixerKind::Sliding => cfg.bool("add_swa_attention_sink_bias")?.unwrap_or(false),
                MixerKind::Full => cfg.bool("add_full_attention_sink_bias")?.unwrap_or(false),
                MixerKind::Chunked
                | MixerKind::Sparse
                | MixerKind::Linear
                | MixerKind::Compressed(_)
                | MixerKind::Projection
                | MixerKind::None => false,
            };
        let output_gate = if cfg.flag(&fam.output_gate)? {
            OutputGate::PerChannel
        } else if cfg.bool("use_head_wise_attn_gate")? == Some(true) {
            OutputGate::PerHead
        } else {
            OutputGate::None
        };
        let qk_norm = match cfg.str(&["qk_norm_type"])? {
            _ if cfg.bool("use_qk_norm")? == Some(false) => QkNorm::None,
            Some("per_layer") => QkNorm::Full,
            Some("per_head") => QkNorm::PerHead,
            Some(other) => return Err(Error::invalid("qk_norm_type", format!("{other:?}"), "per_head or per_layer")),
            None => match fam.qk_norm {
                QkNormName::None => QkNorm::None,
                QkNormName::PerHead => QkNorm::PerHead,
                QkNormName::Full => QkNorm::Full,
            },
        };
        let rope = p.rope && fam.positions == Positions::Rope && !cfg.bool("alibi")?.unwrap_or(false);
        Ok(Attention::Standard(StandardAttention {
            heads,
            kv_heads,
            head_dim,
            v_head_dim: v_head_dim.unwrap_or(head_dim),
            k_eq_v,
            qkv_bias: cfg.flag(&fam.qkv_bias)?,
            o_bias: cfg.flag(&fam.o_bias)?,
            fused_qkv: fam.fused_qkv,
            qk_norm,
            reach,
            indexer,
            output_gate,
            kv_shared: p.kv_shared,
            sinks,
            rope,
        }))
    }

    /// `num_key_value_heads` (falcon: from `new_decoder_architecture`, `num_kv_heads`,
    /// `multi_query`, modeling_falcon.py:230-241), else the family's default.
    fn kv_heads(&self) -> Result<u64> {
        let (cfg, fam, heads) = (self.cfg, self.fam, self.heads);
        if fam.name == "falcon" {
            return Ok(if cfg.bool("new_decoder_architecture")?.unwrap_or(false) {
                cfg.dim(&["num_kv_heads", "n_head_kv"], MAX_HEADS)?.unwrap_or(heads)
            } else if cfg.bool("multi_query")?.unwrap_or(true) {
                1
            } else {
                heads
            });
        }
        match cfg.dim(KV_HEADS, MAX_HEADS)? {
            Some(k) => Ok(k),
            None => dim_default(fam.kv_heads, self.hidden, heads, "num_key_value_heads"),
        }
    }

    /// The sliding window: `sliding_window` (MiMo-V2's `sliding_window_size`), else the family's
    /// default when the key is absent (not when it is null).
    fn window(&self) -> Result<Option<u64>> {
        let cfg = self.cfg;
        if cfg.has("sliding_window") || cfg.has("sliding_window_size") {
            cfg.dim(&["sliding_window_size", "sliding_window"], MAX_CONTEXT)
        } else {
            Ok(self.fam.window_default)
        }
    }

    /// MiniMax-M3's block-sparse indexer (`sparse_attention_config`): `sparse_num_index_heads`
    /// heads of `sparse_index_dim` from the hidden state, one shared 16-bit key a position
    /// (vLLM's `MiniMaxM3IndexerCache` at its default `indexer_kv_dtype`), and
    /// `sparse_topk_blocks` blocks of `sparse_block_size` read per query (the local and initial
    /// blocks among them).
    fn minimax_indexer(&self) -> Result<Indexer> {
        let o =
            self.cfg.object("sparse_attention_config")?.ok_or_else(|| missing("sparse_attention_config", self.fam))?;
        let read = |k: &str, max: u64| -> Result<u64> {
            match o.get(k).filter(|v| !v.is_null()) {
                Some(v) => dim_value(format!("sparse_attention_config.{k}"), v, max),
                None => Err(Error::MissingField {
                    field: format!("sparse_attention_config.{k}"),
                    context: format!("model_type {}", self.fam.name),
                }),
            }
        };
        let block = read("sparse_block_size", MAX_CONTEXT)?;
        let blocks = read("sparse_topk_blocks", MAX_CONTEXT)?;
        let top_k = block.checked_mul(blocks).filter(|k| *k <= MAX_CONTEXT).ok_or_else(|| {
            Error::invalid(
                "sparse_attention_config.sparse_topk_blocks",
                blocks,
                format!("at most {MAX_CONTEXT} positions in all"),
            )
        })?;
        Ok(Indexer {
            heads: read("sparse_num_index_heads", MAX_HEADS)?,
            head_dim: read("sparse_index_dim", MAX_DIM)?,
            top_k,
            block,
            query: IndexerQuery::Hidden,
            keys: IndexerKeys::Bf16,
            key_proj: Some(NormKind::Rms),
            head_weights: false,
            query_norm: true,
        })
    }

    /// A top-k no longer than the context the model was trained for (`max_position_embeddings`):
    /// a selection of more positions than a sequence can hold is a config error, not sparse
    /// attention.
    fn check_top_k(&self, field: &'static str, top_k: u64) -> Result<()> {
        match self.cfg.dim(super::MAX_POSITIONS, MAX_CONTEXT)? {
            Some(context) if top_k > context => Err(Error::invalid(
                field,
                top_k,
                format!("positions a query reads, at most the context max_position_embeddings ({context})"),
            )),
            _ => Ok(()),
        }
    }

    /// DSA's indexer for a layer whose queries come from a latent of rank `q_rank` (or the
    /// hidden state): `index_n_heads` heads of `index_head_dim`, top `index_topk`, 8-bit keys;
    /// `None` when the config has no `index_n_heads`.
    fn dsa_indexer(&self, q_rank: Option<u64>, key_proj: bool) -> Result<Option<Indexer>> {
        let cfg = self.cfg;
        if self.fam.indexer != IndexerRule::Dsa || cfg.get(&["index_n_heads"]).is_none() {
            return Ok(None);
        }
        let top_k = cfg.required_dim(&["index_topk"], MAX_CONTEXT, self.fam)?;
        self.check_top_k("index_topk", top_k)?;
        Ok(Some(Indexer {
            heads: cfg.required_dim(&["index_n_heads"], MAX_HEADS, self.fam)?,
            head_dim: cfg.required_dim(&["index_head_dim"], MAX_DIM, self.fam)?,
            top_k,
            block: 1,
            query: q_rank.map_or(IndexerQuery::Hidden, IndexerQuery::QueryLatent),
            keys: IndexerKeys::Fp8Scaled,
            key_proj: key_proj.then_some(NormKind::Layer),
            head_weights: true,
            query_norm: false,
        }))
    }

    /// Whether DSA layer `i` computes its own selection (GLM-5.2's IndexShare reuses an earlier
    /// layer's on "shared" layers): `indexer_types[i]`, else `index_topk_pattern[i] != 'S'`, else
    /// `index_topk_freq` with `index_skip_topk_offset` (SGLang `dsa_layer_skips_topk`), else
    /// every layer.
    fn owns_indexer(&self, i: usize) -> Result<bool> {
        let cfg = self.cfg;
        if let Some(types) = cfg.list("indexer_types", |v| v.as_str().map(str::to_string), "\"full\" or \"shared\"")? {
            return match types.get(i).map(String::as_str) {
                Some("full") => Ok(true),
                Some("shared") => Ok(false),
                Some(other) => Err(Error::invalid("indexer_types", format!("{other:?}"), "\"full\" or \"shared\"")),
                None => Err(Error::invalid("indexer_types", format!("{} entries", types.len()), "one entry per layer")),
            };
        }
        if let Some(p) = cfg.str(&["index_topk_pattern"])? {
            return Ok(p.chars().nth(i) != Some('S'));
        }
        match cfg.dim(&["index_topk_freq"], MAX_LAYERS)? {
            Some(freq) if freq > 1 => {
                let i = i as u64;
                Ok(match cfg.count(&["index_skip_topk_offset"], MAX_LAYERS)? {
                    Some(offset) => (i + 1).saturating_sub(offset) % freq == 0,
                    None => i.saturating_sub(1) % freq == 0,
                })
            }
            _ => Ok(true),
        }
    }

    /// MLA of layer `i` (dense, or sparse with DSA).
    fn latent(&self, p: &LayerPlan, i: usize) -> Result<Attention> {
        let (cfg, fam) = (self.cfg, self.fam);
        let q_lora_rank = cfg.dim(&["q_lora_rank"], MAX_DIM)?;
        let dsa = self.dsa_indexer(q_lora_rank, true)?;
        let reach = match (dsa, p.mixer) {
            (Some(ix), _) => Reach::TopK(ix.top_k),
            (None, MixerKind::Sparse) => return Err(missing("index_n_heads", fam)),
            (None, _) => Reach::All,
        };
        let indexer = match dsa {
            Some(ix) if self.owns_indexer(i)? => Some(ix),
            _ => None,
        };
        Ok(Attention::Latent(LatentAttention {
            heads: self.heads,
            q_lora_rank,
            kv_lora_rank: cfg.required_dim(&["kv_lora_rank"], MAX_DIM, fam)?,
            qk_nope_head_dim: cfg.required_dim(&["qk_nope_head_dim"], MAX_DIM, fam)?,
            qk_rope_head_dim: cfg.required_dim(&["qk_rope_head_dim"], MAX_DIM, fam)?,
            v_head_dim: cfg.required_dim(&["v_head_dim"], MAX_DIM, fam)?,
            bias: cfg.bool("attention_bias")?.unwrap_or(false),
            reach,
            indexer,
            output_gate: cfg.flag(&fam.output_gate)?,
        }))
    }

    /// DeepSeek-V4's attention with compression `ratio` (an indexer on ratio-4 layers).
    pub(super) fn compressed(&self, ratio: u64) -> Result<Attention> {
        let (cfg, fam) = (self.cfg, self.fam);
        let q_lora_rank = cfg.required_dim(&["q_lora_rank"], MAX_DIM, fam)?;
        let indexer = if ratio == 4 { self.dsa_indexer(Some(q_lora_rank), false)? } else { None };
        let head_dim = cfg.required_dim(&["head_dim"], MAX_DIM, fam)?;
        let o_groups = cfg.dim(&["o_groups"], MAX_HEADS)?.unwrap_or(1);
        if self.heads % o_groups != 0 {
            return Err(Error::invalid(
                "o_groups",
                o_groups,
                format!("a divisor of num_attention_heads ({})", self.heads),
            ));
        }
        Ok(Attention::Compressed(CompressedAttention {
            heads: self.heads,
            head_dim,
            rope_dim: cfg.dim(&["qk_rope_head_dim"], MAX_DIM)?.unwrap_or(0).min(head_dim),
            q_lora_rank,
            o_groups,
            o_lora_rank: cfg.required_dim(&["o_lora_rank"], MAX_DIM, fam)?,
            window: cfg.required_dim(&["sliding_window"], MAX_CONTEXT, fam)?,
            ratio,
            indexer,
        }))
    }
}

/// A recurrent state's precision from a dtype key, `default` when absent.
fn state_precision(cfg: &HfConfig, keys: &[&'static str], default: Precision) -> Result<Precision> {
    match cfg.get(keys) {
        None => Ok(default),
        Some((k, Value::String(s))) => STATE_DTYPES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|(_, p)| *p)
            .ok_or_else(|| Error::invalid(k, format!("{s:?}"), "float32, bfloat16 or float16")),
        Some((k, v)) => Err(Error::invalid(k, v, "float32, bfloat16 or float16")),
    }
}

/// The model's own dtype (`torch_dtype` / `dtype`), the state's when a config names none.
fn model_dtype(cfg: &HfConfig) -> Result<Precision> {
    state_precision(cfg, &["torch_dtype", "dtype"], Precision::Bf16).or(Ok(Precision::Bf16))
}

/// Gated DeltaNet (Qwen3-Next, Qwen3.5): `linear_*` keys; the state in `mamba_ssm_dtype` (the
/// model's dtype without it, as vLLM keeps it).
fn gated_delta(cfg: &HfConfig, fam: &Family) -> Result<RecurrentMixer> {
    Ok(RecurrentMixer {
        rule: Recurrence::GatedDelta,
        key_heads: cfg.required_dim(&["linear_num_key_heads"], MAX_HEADS, fam)?,
        key_head_dim: cfg.required_dim(&["linear_key_head_dim"], MAX_DIM, fam)?,
        value_heads: cfg.required_dim(&["linear_num_value_heads"], MAX_HEADS, fam)?,
        value_head_dim: cfg.required_dim(&["linear_value_head_dim"], MAX_DIM, fam)?,
        conv_kernel: cfg.dim(&["linear_conv_kernel_dim"], 64)?.unwrap_or(4),
        conv_bias: false,
        proj_bias: false,
        state: state_precision(cfg, &["mamba_ssm_dtype"], model_dtype(cfg)?)?,
        chunk: DELTA_RULE_CHUNK,
        gate_rank: None,
    })
    .and_then(|m| check_heads(m, "linear_num_value_heads", "linear_num_key_heads"))
}

/// Kimi Delta Attention (`linear_attn_config`): as many key as value heads, the state fp32.
fn kimi_delta(cfg: &HfConfig, fam: &Family) -> Result<RecurrentMixer> {
    let o = cfg.object("linear_attn_config")?.ok_or_else(|| missing("linear_attn_config", fam))?;
    let read = |k: &str, max: u64| -> Result<Option<u64>> {
        o.get(k).filter(|v| !v.is_null()).map(|v| dim_value(format!("linear_attn_config.{k}"), v, max)).transpose()
    };
    let need = |k: &str, max: u64| -> Result<u64> {
        read(k, max)?.ok_or_else(|| Error::MissingField {
            field: format!("linear_attn_config.{k}"),
            context: format!("model_type {}", fam.name),
        })
    };
    let heads = need("num_heads", MAX_HEADS)?;
    let head_dim = need("head_dim", MAX_DIM)?;
    let full_rank = match o.get("use_full_rank_gate") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(Error::invalid("linear_attn_config.use_full_rank_gate", v, "true or false")),
    };
    Ok(RecurrentMixer {
        rule: Recurrence::KimiDelta,
        key_heads: heads,
        key_head_dim: head_dim,
        value_heads: heads,
        value_head_dim: head_dim,
        conv_kernel: read("short_conv_kernel_size", 64)?.unwrap_or(4),
        conv_bias: false,
        proj_bias: false,
        state: state_precision(cfg, &["mamba_ssm_cache_dtype"], Precision::Fp32)?,
        chunk: DELTA_RULE_CHUNK,
        gate_rank: (!full_rank).then_some(head_dim),
    })
}

/// Mamba-2 (Nemotron-H): `n_groups` groups of B and C of `ssm_state_size`, `mamba_num_heads`
/// heads of `mamba_head_dim`.
fn mamba2(cfg: &HfConfig, fam: &Family) -> Result<RecurrentMixer> {
    let heads = cfg.required_dim(&["mamba_num_heads"], MAX_HEADS, fam)?;
    let m = RecurrentMixer {
        rule: Recurrence::Mamba2,
        key_heads: cfg.dim(&["n_groups", "mamba_n_groups"], MAX_HEADS)?.unwrap_or(1),
        key_head_dim: cfg.required_dim(&["ssm_state_size"], MAX_DIM, fam)?,
        value_heads: heads,
        value_head_dim: cfg.required_dim(&["mamba_head_dim"], MAX_DIM, fam)?,
        conv_kernel: cfg.dim(&["conv_kernel", "mamba_d_conv"], 64)?.unwrap_or(4),
        conv_bias: cfg.bool("use_conv_bias")?.unwrap_or(true),
        proj_bias: cfg.bool("mamba_proj_bias")?.or(cfg.bool("use_bias")?).unwrap_or(false),
        state: state_precision(cfg, &["mamba_ssm_cache_dtype"], Precision::Fp32)?,
        chunk: cfg.dim(&["chunk_size", "mamba_chunk_size"], MAX_CONTEXT)?.unwrap_or(MAMBA2_DEFAULT_CHUNK),
        gate_rank: None,
    };
    check_heads(m, "mamba_num_heads", "n_groups")
}

/// Value heads come in whole groups per key head.
fn check_heads(m: RecurrentMixer, values: &'static str, keys: &'static str) -> Result<RecurrentMixer> {
    if m.value_heads % m.key_heads != 0 {
        return Err(Error::invalid(values, m.value_heads, format!("a multiple of {keys} ({})", m.key_heads)));
    }
    Ok(m)
}
