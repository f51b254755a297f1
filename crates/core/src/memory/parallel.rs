//! Memory of one GPU of a deployment ([`crate::memory`] per GPU): its stage's share of the
//! stored weights, the KV cache of the sequences its group serves, and the workspace of one
//! micro-batch. The deployment fits when the fullest GPU fits.
//!
//! * **Weights** of stage `s`: its layers with attention at the share of its matrices a GPU
//!   holds (q and o `1/tp`, k and v `kv_share`; MLA's q_a/kv_a whole, the rest `1/tp`), dense
//!   MLPs and shared experts `1/tp`, routed experts `1/(ep·tp)` (every expert the GPU holds, not
//!   only those a step touches), norms and routers whole; the first stage adds the
//!   vocab-parallel embedding (`1/tp`), the last the final norm and the LM head (`⌈V/tp⌉` rows;
//!   with tied embeddings and more than one stage the last stage holds its own copy of the
//!   table). Biases and norm scales inside a block split with its matrices.
//! * **KV cache** of stage `s`: its layers' K/V (`kv_share` of the heads; MLA's latent,
//!   DeepSeek-V4's entries and every indexer's keys whole) and recurrent states (`1/tp` of the
//!   value heads, the convolution's key channels at the key heads' share) for the `1/ep` of
//!   the batch its group serves, all micro-batches together.
//! * **Workspace**: [`crate::memory::workspace_bytes_split`] with the per-token intermediates and
//!   logits split over TP, for the largest micro-batch, `1/ep` of it.

use super::{held_positions, layer_bytes, workspace_bytes_split, Footprint, WeightFootprint};
use crate::layout::Parallelism;
use crate::model::{Attention, ModelSpec};
use crate::precision::Precision;
use crate::scenario::Scenario;
use crate::workload::Counting;

/// Share of a layer's attention matrices one GPU holds.
fn attention_share(attn: &Attention, hidden: u64, p: &Parallelism) -> f64 {
    let t = p.tp as f64;
    match attn {
        Attention::Standard(a) => {
            let (q, k, v, o) =
                (a.q_proj_width() as f64, a.k_proj_width() as f64, a.v_proj_width() as f64, a.o_dim() as f64);
            let ks = p.kv_head_share(a.kv_heads);
            // q and o split over the group, k and v by the KV heads' share.
            ((q + o) / t + (k + v) * ks) / (q + o + k + v)
        }
        Attention::Latent(a) => {
            let (h, nh) = (hidden as f64, a.heads as f64);
            let (r, dr) = (a.kv_lora_rank as f64, a.qk_rope_head_dim as f64);
            let qk = a.qk_head_dim() as f64;
            let (whole, split) = match a.q_lora_rank {
                Some(rq) => (h * rq as f64 + h * (r + dr), rq as f64 * nh * qk),
                None => (h * (r + dr), h * nh * qk),
            };
            let split = split + r * nh * (a.qk_nope_head_dim + a.v_head_dim) as f64 + nh * a.v_head_dim as f64 * h;
            (whole + split / t) / (whole + split)
        }
        Attention::Compressed(a) => {
            // The down-projections, compressors and indexer on every GPU; the heads' q_b, o_a
            // and o_b split.
            let all = a.matrix_params(hidden) as f64;
            let (h, nh, d) = (hidden as f64, a.heads as f64, a.head_dim as f64);
            let split =
                a.q_lora_rank as f64 * nh * d + nh * d * a.o_lora_rank as f64 + (a.o_groups * a.o_lora_rank) as f64 * h;
            ((all - split) + split / t) / all
        }
        // Every projection split over the group (vLLM shards the heads of both).
        Attention::Recurrent(_) | Attention::Linear { .. } => 1.0 / t,
        Attention::None => 1.0,
    }
}

/// Stored weight bytes on one GPU of stage `s` (module docs).
pub fn stage_weight_bytes(sc: &Scenario, s: usize) -> f64 {
    let (p, m, w) = (&sc.parallel, &sc.model, &sc.weights);
    let (t, e) = (p.tp as f64, p.ep as f64);
    let mut bytes = 0.0;
    for &(i, n) in &p.stages[s].groups {
        let layer = &m.layers()[i];
        let f = layer_bytes(layer, m.hidden_size, w);
        let attention = f.attention_bytes * attention_share(&layer.attention, m.hidden_size, p);
        bytes += n as f64
            * (attention
                + f.norm_bytes
                + f.router_bytes
                + (f.mlp_bytes + f.shared_experts_bytes) / t
                + f.experts_bytes / (e * t));
    }
    let whole = WeightFootprint::of(m, w);
    if s == 0 && sc.workload.counting == Counting::Full {
        bytes += whole.embedding_bytes / t;
    }
    if s + 1 == p.stages.len() {
        let v = m.embedding.vocab as f64;
        let vocab_share = (v / t).ceil() / v;
        bytes += m.final_norm_params() as f64 * w.attention.unquantised().bytes();
        bytes += vocab_share * tied_head_copy(m, p, w.embedding.bytes()).unwrap_or(whole.lm_head_bytes);
    }
    bytes
}

/// With tied embeddings and more than one stage the last stage holds the table as its LM head.
fn tied_head_copy(m: &ModelSpec, p: &Parallelism, bytes_per_value: f64) -> Option<f64> {
    (m.tied_embeddings && p.stages.len() > 1).then(|| (m.embedding.vocab * m.lm_head_in()) as f64 * bytes_per_value)
}

/// Cache bytes one GPU of a TP group holds for a layer after `tokens` positions of one sequence
/// ([`Attention::cache_bytes`] at its share): standard attention's K/V at `1/min(tp, kv_heads)`
/// of the heads (one head per GPU when `tp` exceeds them) and its indexer keys whole; MLA's
/// latent and DeepSeek-V4's entries whole (every GPU reads them); a recurrent state at `1/tp`
/// of its value heads, its convolution's key channels at the key heads' share.
fn layer_cache_bytes(a: &Attention, tokens: f64, kv: Precision, act: Precision, p: &Parallelism) -> f64 {
    match a {
        Attention::Standard(x) => {
            let held = x.reach.held(tokens);
            let keys = x.indexer.map_or(0.0, |i| i.key_bytes());
            held * (x.kv_dim_cached() as f64 * kv.bytes() * p.kv_head_share(x.kv_heads) + keys)
        }
        Attention::Latent(_) | Attention::Compressed(_) => a.cache_bytes(tokens, kv, act),
        Attention::Recurrent(m) => {
            let t = p.tp as f64;
            let conv = (2.0 * m.key_dim() as f64 * p.kv_head_share(m.key_heads) + m.value_dim() as f64 / t)
                * m.conv_kernel.saturating_sub(1) as f64;
            m.state_elements() as f64 / t * m.state.bytes() + conv * act.bytes()
        }
        Attention::Linear { .. } | Attention::None => 0.0,
    }
}

/// Cache bytes on one GPU of stage `s` after the step (module docs).
pub fn stage_kv_bytes(sc: &Scenario, s: usize) -> f64 {
    let (p, m, wl) = (&sc.parallel, &sc.model, &sc.workload);
    let per_sequence = |tokens: f64| -> f64 {
        p.stages[s]
            .groups
            .iter()
            .map(|&(i, n)| n as f64 * layer_cache_bytes(&m.layers()[i].attention, tokens, wl.kv, wl.activations, p))
            .sum()
    };
    wl.contexts.sum(|t| per_sequence(held_positions(wl, t))) / p.ep as f64
}

/// Cache bytes one more cached token of the instance adds on one GPU of stage `s`, windows
/// and constant states aside: the growth of [`layer_cache_bytes`] per token, `÷ ep` (each of
/// the `ep` groups holds its own sequences). On one GPU this is
/// [`crate::memory::kv_bytes_per_token`].
pub(crate) fn stage_kv_bytes_per_token(sc: &Scenario, s: usize) -> f64 {
    let (p, m, wl) = (&sc.parallel, &sc.model, &sc.workload);
    let bytes: f64 = p.stages[s]
        .groups
        .iter()
        .map(|&(i, n)| {
            let a = &m.layers()[i].attention;
            let per = match a {
                Attention::Standard(x) => {
                    x.kv_dim_cached() as f64 * wl.kv.bytes() * p.kv_head_share(x.kv_heads)
                        + x.indexer.map_or(0.0, |i| i.key_bytes())
                }
                Attention::Latent(_)
                | Attention::Compressed(_)
                | Attention::Recurrent(_)
                | Attention::Linear { .. }
                | Attention::None => a.kv_bytes_per_token(wl.kv),
            };
            n as f64 * per
        })
        .sum();
    bytes / p.ep as f64
}

/// Constant cache bytes one sequence holds on one GPU of stage `s` (recurrent states and
/// compressor states at their shares), `÷ ep` of the sequences.
pub(crate) fn stage_state_bytes_per_sequence(sc: &Scenario, s: usize) -> f64 {
    let (p, m, wl) = (&sc.parallel, &sc.model, &sc.workload);
    let bytes: f64 = p.stages[s]
        .groups
        .iter()
        .map(|&(i, n)| {
            let a = &m.layers()[i].attention;
            let state = match a {
                Attention::Recurrent(_) => layer_cache_bytes(a, 0.0, wl.kv, wl.activations, p),
                Attention::Standard(_)
                | Attention::Latent(_)
                | Attention::Compressed(_)
                | Attention::Linear { .. }
                | Attention::None => a.state_bytes(wl.activations),
            };
            n as f64 * state
        })
        .sum();
    bytes / p.ep as f64
}

/// The fullest GPU of the deployment, with `weights` its stored weight bytes per stage.
pub(crate) fn footprint_with(sc: &Scenario, weights: &[f64], reserve_bytes: f64) -> Footprint {
    let p = &sc.parallel;
    let workspace = workspace_bytes_split(sc, p.tp as f64) * largest_micro_batch_share(sc) / p.ep as f64;
    let (w, kv, stage) = (0..p.stages.len())
        .map(|s| (weights[s], stage_kv_bytes(sc, s), s))
        .max_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)))
        .unwrap_or((0.0, 0.0, 0));
    let state = sc.workload.contexts.batch() as f64 * stage_state_bytes_per_sequence(sc, stage);
    let memory_bytes = w + kv + workspace;
    let available_bytes = sc.gpu.memory_bytes - reserve_bytes;
    Footprint {
        weight_bytes: w,
        kv_cache_bytes: kv,
        state_bytes: state,
        workspace_bytes: workspace,
        memory_bytes,
        capacity_bytes: sc.gpu.memory_bytes,
        reserve_bytes,
        available_bytes,
        fits: memory_bytes <= available_bytes,
    }
}

/// The fullest GPU of the deployment.
pub fn footprint(sc: &Scenario, reserve_bytes: f64) -> Footprint {
    let weights: Vec<f64> = (0..sc.parallel.stages.len()).map(|s| stage_weight_bytes(sc, s)).collect();
    footprint_with(sc, &weights, reserve_bytes)
}

/// Reused by the deployment's memory: the largest micro-batch's share of the batch.
pub(crate) fn largest_micro_batch_share(sc: &Scenario) -> f64 {
    let b = sc.workload.contexts.batch();
    let m = sc.parallel.micro_batches_for(b);
    b.div_ceil(m) as f64 / b as f64
}
