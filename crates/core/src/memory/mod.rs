//! What one step needs in GPU memory, and how much fits.
//!
//! `memory = weights + KV cache + activation workspace`; it fits when
//! `memory ≤ capacity − reserve` (capacity: the GPU's `memory_bytes`; reserve: a runtime reserve,
//! [`crate::serving::DEFAULT_RESERVE_BYTES`] unless the user sets one).
//!
//! * **Weights** ([`WeightFootprint`]): every stored parameter at its class's precision
//!   ([`WeightPrecisions`]): matrices at the class precision, biases, norm scales and sinks at
//!   its unquantised form, the embedding table(s) at the embedding precision, an untied LM head at
//!   the head precision, all routed experts (not only those a step touches).
//! * **KV cache**: per token and layer, `Attention::kv_elements_per_token()` elements (2·kv·hd;
//!   the latent r_kv + d_r for MLA) at the KV precision; a sliding-window layer holds at most
//!   `window` tokens. A decode step at `ctx` cached tokens holds `ctx + 1` after appending the new
//!   token (`ctx` under seed counting, as the reference calculator's "84 GB at batch 256" does); prefill holds the
//!   prompt.
//! * **Activation workspace** ([`workspace_bytes`]): an estimate of the live activations of one
//!   step, documented there.
//!
//! Under [`Counting::Seed`] the reference calculator's "weights plus cache" is reproduced: the weights without the
//! embedding table ("15.0 GB (excluding the embedding table)") and no workspace.
//!
//! In a parallel deployment every footprint is one GPU's, the fullest
//! ([`crate::parallel::footprint`]).
//!
//! **Does it fit** ([`Fit`]) is answered in one place, on one of two bases ([`FitBasis`]) that
//! every output names (`fit_basis`):
//!
//! * [`FitBasis::Step`] — one step as given (`kv`, `sweep`, `levers`, `advise`, `plan`): the
//!   step's own cache after it runs (a decode step at `ctx` cached tokens holds `ctx + 1`, the
//!   token it writes; a prefill step holds its prompt) plus its workspace;
//! * [`FitBasis::RequestPeak`] — a static batch of requests of prompt `P` and output `O`
//!   (`latency`, `cost`): the fuller of its prefill step (`P` held, the workspace of the whole
//!   prompt) and its last decode step (at `P + O − 2` cached tokens, holding `P + O − 1` after
//!   writing its token; the last output token is never written to the cache). The cache only
//!   grows between the two and the decode workspace does not shrink, so no step of the request
//!   needs more. The same requests fit exactly when both steps fit on the step basis.
//!
//! Either way `fits = memory ≤ capacity − reserve`, and the largest batch is [`max_batch`] of each
//! step covered (the smaller one for a request).

pub(crate) mod parallel;

use crate::limits::MAX_BATCH;
use crate::model::{Attention, LayerSpec, Mlp, ModelSpec, WeightPrecisions};
use crate::precision::Precision;
use crate::scenario::Scenario;
use crate::workload::{Contexts, Counting, Phase, Workload};
use serde::Serialize;

/// Stored weight bytes per module class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct WeightFootprint {
    /// Token (and position) tables, plus OPT's project_in/out.
    pub embedding_bytes: f64,
    /// Attention projections with their biases, q/k norms and sinks.
    pub attention_bytes: f64,
    /// Dense MLP projections and biases.
    pub mlp_bytes: f64,
    /// All routed experts.
    pub experts_bytes: f64,
    /// Shared experts (and their gate).
    pub shared_experts_bytes: f64,
    /// MoE routers.
    pub router_bytes: f64,
    /// Hidden-size norms of the layers and the final norm.
    pub norm_bytes: f64,
    /// An untied LM head (0 when tied to the embedding).
    pub lm_head_bytes: f64,
    /// Vision (and audio) towers with their projectors, at the embedding's precision (loaded
    /// beside the text model; a text step does not read them).
    pub vision_bytes: f64,
}

impl WeightFootprint {
    /// Stored bytes of every parameter of `model` under `w`.
    pub fn of(model: &ModelSpec, w: &WeightPrecisions) -> WeightFootprint {
        let h = model.hidden_size;
        let small = w.attention.unquantised().bytes();
        let mut f = WeightFootprint {
            embedding_bytes: model.embedding_params() as f64 * w.embedding.bytes(),
            lm_head_bytes: model.lm_head_params() as f64 * w.lm_head.bytes(),
            norm_bytes: model.final_norm_params() as f64 * small,
            vision_bytes: model.vision_params as f64 * w.embedding.bytes(),
            ..WeightFootprint::default()
        };
        for (layer, n) in model.layer_groups() {
            let n = n as f64;
            let l = layer_bytes(layer, h, w);
            f.attention_bytes += n * l.attention_bytes;
            f.mlp_bytes += n * l.mlp_bytes;
            f.experts_bytes += n * l.experts_bytes;
            f.shared_experts_bytes += n * l.shared_experts_bytes;
            f.router_bytes += n * l.router_bytes;
            f.norm_bytes += n * l.norm_bytes;
        }
        f
    }

    /// All stored weight bytes.
    pub fn total_bytes(&self) -> f64 {
        self.embedding_bytes
            + self.attention_bytes
            + self.mlp_bytes
            + self.experts_bytes
            + self.shared_experts_bytes
            + self.router_bytes
            + self.norm_bytes
            + self.lm_head_bytes
            + self.vision_bytes
    }

    /// Weight bytes that count toward memory under `counting`: all of them, or without the
    /// embedding table under seed counting (the reference calculator's 15.0 GB for Llama 3 8B).
    pub fn counted_bytes(&self, counting: Counting) -> f64 {
        match counting {
            Counting::Full => self.total_bytes(),
            Counting::Seed => self.total_bytes() - self.embedding_bytes,
        }
    }
}

/// Parameters of a matrix block split into matrix weights and small vectors.
fn split(total: u64, matrices: u64, p: Precision) -> f64 {
    matrices as f64 * p.bytes() + (total - matrices) as f64 * p.unquantised().bytes()
}

/// Bytes of a hyper-connection parameter: the mixing weights stay fp32 in the checkpoint
/// (vLLM `DeepseekV4DecoderLayer`).
const HYPER_CONNECTION_BYTES: f64 = 4.0;

pub(crate) fn layer_bytes(layer: &LayerSpec, h: u64, w: &WeightPrecisions) -> WeightFootprint {
    let attn_params = layer.attention.params(h);
    // Every count here is at most MAX_PARAMS (checked when the spec was built).
    let attn_matrices = layer.attention.matrix_params(h) as u64;
    let norms = u64::from(layer.attn_norms + layer.mlp_norms) * layer.norm.params(h);
    let mut f = WeightFootprint {
        attention_bytes: split(attn_params, attn_matrices, w.attention),
        norm_bytes: norms as f64 * w.attention.unquantised().bytes()
            + layer.hyper_connection_params(h) as f64 * HYPER_CONNECTION_BYTES,
        ..WeightFootprint::default()
    };
    let dense = |m: &crate::model::DenseMlp, width: u64, p: Precision| {
        let mats = if m.gated { 3 } else { 2 };
        split(m.params(width), mats * width * m.intermediate, p)
    };
    match &layer.mlp {
        Mlp::Dense(m) => f.mlp_bytes = dense(m, h, w.mlp),
        Mlp::Moe(m) => {
            let router = h * m.experts + if m.router_bias { m.experts } else { 0 };
            let gate = if m.shared_gate { h } else { 0 };
            f.router_bytes = (router + gate) as f64 * w.router.bytes();
            f.experts_bytes = m.experts as f64 * dense(&m.expert, m.expert_width(h), w.experts);
            let latent = m.latent.map_or(0.0, |l| split(l.params(h) as u64, 2 * h * l.dim, w.shared_experts));
            f.shared_experts_bytes = m.shared.as_ref().map_or(0.0, |s| dense(s, h, w.shared_experts)) + latent;
        }
        Mlp::Linear { bias } => f.mlp_bytes = split(h * h + if *bias { h } else { 0 }, h * h, w.mlp),
        Mlp::None => {}
    }
    f
}

/// KV-cache bytes one token adds across all layers, ignoring windows (Llama 3 8B at bf16:
/// 32 · 2 · 8 · 128 · 2 = 131,072 bytes, the reference calculator): [`ModelSpec::kv_bytes_per_token`]
/// (indexer keys at their own precision; a recurrent layer adds none).
pub fn kv_bytes_per_token(model: &ModelSpec, kv: Precision) -> f64 {
    model.kv_bytes_per_token(kv)
}

/// Cache bytes one sequence holds with `tokens` positions cached: Σ over layers of
/// [`Attention::cache_bytes`] — the KV of the positions each layer keeps
/// (`elements_per_token · min(tokens, window) · bytes`; a chunk keeps at most its length), its
/// indexer keys, DeepSeek-V4's compressed entries, and any state of constant size (a recurrent
/// layer's state at its precision, its convolution's at `activations`).
pub fn kv_bytes_per_sequence(model: &ModelSpec, kv: Precision, activations: Precision, tokens: f64) -> f64 {
    model.layer_groups().map(|(l, n)| n as f64 * l.attention.cache_bytes(tokens, kv, activations)).sum::<f64>()
}

/// Positions a sequence holds in the cache after the step: decode appends the new token
/// (`ctx + 1`; `ctx` under seed counting), prefill caches the prompt.
pub(crate) fn held_positions(w: &Workload, tokens: f64) -> f64 {
    match (w.phase, w.counting) {
        (Phase::Decode, Counting::Full) => tokens + 1.0,
        _ => tokens,
    }
}

/// KV-cache bytes of the whole batch after the step.
pub fn kv_cache_bytes(sc: &Scenario) -> f64 {
    let w = &sc.workload;
    w.contexts.sum(|t| kv_bytes_per_sequence(&sc.model, w.kv, w.activations, held_positions(w, t)))
}

/// Bytes of fp32 logits per vocabulary entry.
const LOGIT_BYTES: f64 = 4.0;

/// Estimated activation workspace of one step (0 under seed counting).
///
/// `T·(2H + X)·a + [unfused attention] nh·S·a + L·V·4`, where `T` is the tokens in the step, `H`
/// the hidden size, `a` the activation bytes; `X` the widest per-token intermediate of any layer:
/// attention `q + 2·kv + q` (projections and output, a gate's columns with q; MLA:
/// `nh·(dn+dr) + r + dr + nh·max(r, dn+dv) + nh·dv`; DeepSeek-V4: `r_q + d + 2·nh·d + G·r_o`; a
/// recurrent mixer its input projection, convolution and read-out `in + conv + 2·h_v·d_v`) or
/// MLP `3·I` gated / `2·I` plain (MoE: `top_k` experts plus shared experts plus the router's `E`
/// logits), plus `(n − 1)·H` for `n` hyper-connection streams; `2H` is the residual stream
/// and the normed input. Without
/// FlashAttention one layer's score matrix, `nh · S` entries (`S` the materialised scores per
/// head), is live. `L` logit rows of `V` entries are kept in fp32. Buffers are assumed to be
/// reused from layer to layer (what inference engines do); allocator slack belongs in the reserve.
pub fn workspace_bytes(sc: &Scenario) -> f64 {
    workspace_bytes_split(sc, 1.0)
}

/// [`workspace_bytes`] on one GPU of a tensor-parallel group of `tp`: the intermediates `X`, the
/// score matrix and the logits split over the group; the residual stream `2H` does not.
pub(crate) fn workspace_bytes_split(sc: &Scenario, tp: f64) -> f64 {
    let w = &sc.workload;
    if w.counting == Counting::Seed {
        return 0.0;
    }
    let m = &sc.model;
    let a = w.activations.bytes();
    let (mut widest, mut heads) = (0u64, 0u64);
    for (l, _) in m.layer_groups() {
        let attn = match &l.attention {
            Attention::Standard(x) => {
                heads = heads.max(x.heads);
                x.qkv_width() + x.o_dim()
            }
            Attention::Latent(x) => {
                heads = heads.max(x.heads);
                let nh = x.heads;
                nh * x.qk_head_dim()
                    + x.kv_lora_rank
                    + x.qk_rope_head_dim
                    + nh * x.kv_lora_rank.max(x.qk_nope_head_dim + x.v_head_dim)
                    + nh * x.v_head_dim
            }
            Attention::Compressed(x) => {
                heads = heads.max(x.heads);
                x.q_lora_rank + x.head_dim + 2 * x.heads * x.head_dim + x.o_groups * x.o_lora_rank
            }
            // The input projection's outputs, the convolution's and the read-out, side by side.
            Attention::Recurrent(x) => x.in_proj_width() + x.conv_channels() + 2 * x.value_dim(),
            Attention::Linear { .. } => m.hidden_size,
            Attention::None => 0,
        };
        let width = |d: &crate::model::DenseMlp| if d.gated { 3 } else { 2 } * d.intermediate;
        let mlp = match &l.mlp {
            Mlp::Dense(d) => width(d),
            Mlp::Moe(x) => x.top_k * width(&x.expert) + x.shared.as_ref().map_or(0, width) + x.experts,
            Mlp::Linear { .. } => m.hidden_size,
            Mlp::None => 0,
        };
        // Hyper-connections keep `n` residual streams live beside the block's input.
        let streams = l.residual_streams.saturating_sub(1) * m.hidden_size;
        widest = widest.max(attn + streams).max(mlp + streams);
    }
    let t = w.step_tokens();
    let scores = if w.flash_attention {
        0.0
    } else {
        heads as f64 * w.attention_geometry(crate::model::Reach::All).materialised_scores * a
    };
    let split = widest as f64 * t * a + scores + w.logit_tokens() * m.embedding.vocab as f64 * LOGIT_BYTES;
    t * (2 * m.hidden_size) as f64 * a + split / tp
}

/// Weight bytes one GPU holds, computed once for many batches: one figure per pipeline stage
/// (one on a single GPU, [`WeightFootprint::counted_bytes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuWeights(Vec<f64>);

impl GpuWeights {
    /// The weights of `sc`'s model on each stage's GPUs.
    pub fn of(sc: &Scenario) -> GpuWeights {
        if sc.parallel.is_single() {
            GpuWeights(vec![WeightFootprint::of(&sc.model, &sc.weights).counted_bytes(sc.workload.counting)])
        } else {
            GpuWeights((0..sc.parallel.stages.len()).map(|s| parallel::stage_weight_bytes(sc, s)).collect())
        }
    }

    /// Weight bytes per stage.
    pub fn per_stage(&self) -> &[f64] {
        &self.0
    }
}

/// Memory of one step against the GPU's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Footprint {
    /// Weights that count (see [`WeightFootprint::counted_bytes`]).
    pub weight_bytes: f64,
    /// KV cache of the batch after the step (its sequences' recurrent states included).
    pub kv_cache_bytes: f64,
    /// Of `kv_cache_bytes`, the states each sequence holds however long it is (recurrent and
    /// compressor states; 0 for a model without them).
    pub state_bytes: f64,
    /// Activation workspace estimate.
    pub workspace_bytes: f64,
    /// weights + KV cache + workspace.
    pub memory_bytes: f64,
    /// GPU capacity (vendor label).
    pub capacity_bytes: f64,
    /// Runtime reserve.
    pub reserve_bytes: f64,
    /// capacity − reserve.
    pub available_bytes: f64,
    /// memory ≤ available.
    pub fits: bool,
}

impl Footprint {
    /// The footprint of a scenario with `reserve_bytes` held back (the fullest GPU's in a
    /// parallel deployment).
    pub fn of(sc: &Scenario, reserve_bytes: f64) -> Footprint {
        Self::with_weights(sc, &GpuWeights::of(sc), reserve_bytes)
    }

    /// As [`Footprint::of`] with the weight bytes already known (the sweep computes them once).
    pub fn with_weights(sc: &Scenario, weights: &GpuWeights, reserve_bytes: f64) -> Footprint {
        if !sc.parallel.is_single() {
            return parallel::footprint_with(sc, weights.per_stage(), reserve_bytes);
        }
        let weight_bytes = weights.0[0];
        let kv = kv_cache_bytes(sc);
        let ws = workspace_bytes(sc);
        let memory_bytes = weight_bytes + kv + ws;
        let available_bytes = sc.gpu.memory_bytes - reserve_bytes;
        Footprint {
            weight_bytes,
            kv_cache_bytes: kv,
            state_bytes: sc.workload.contexts.batch() as f64
                * sc.model.state_bytes_per_sequence(sc.workload.activations),
            workspace_bytes: ws,
            memory_bytes,
            capacity_bytes: sc.gpu.memory_bytes,
            reserve_bytes,
            available_bytes,
            fits: memory_bytes <= available_bytes,
        }
    }
}

/// The scenario with a uniform batch of `batch` × `tokens` (same phase and precisions).
pub fn at_uniform(sc: &Scenario, batch: u64, tokens: u64) -> Scenario {
    let mut s = sc.clone();
    s.workload.contexts = Contexts::Uniform { batch, tokens };
    s
}

/// Largest batch of sequences with `tokens` tokens each that fits (0 when not even one does).
///
/// On one GPU memory is affine in the batch (`f(b) = f₀ + b·s`: KV and workspace scale with the
/// sequences, weights do not), so the candidate is `⌊(available − f₀) / s⌋`. Across pipeline
/// stages it is the largest of affine functions, and with micro-batches the workspace steps
/// with `⌈b / m⌉`: the candidate is then only a start. Memory never falls as the batch grows,
/// so the answer is found from the candidate by `bisect::largest_true` (steps of 1, 2, 4 … away
/// from it, then halving): checked against the footprint itself at `b` and `b + 1`, so "exactly
/// fits" and "one more does not" hold to the byte, in O(log `MAX_BATCH`) footprints whatever the
/// candidate's error.
pub fn max_batch(sc: &Scenario, tokens: u64, reserve_bytes: f64) -> u64 {
    let weights = GpuWeights::of(sc);
    let fp = |b: u64| Footprint::with_weights(&at_uniform(sc, b, tokens), &weights, reserve_bytes);
    let (f1, f2) = (fp(1), fp(2));
    if !f1.fits {
        return 0;
    }
    let per_seq = f2.memory_bytes - f1.memory_bytes;
    let guess = if per_seq <= 0.0 {
        MAX_BATCH
    } else {
        let base = f1.memory_bytes - per_seq;
        ((f1.available_bytes - base) / per_seq).floor().clamp(1.0, MAX_BATCH as f64) as u64
    };
    crate::bisect::largest_true(guess, MAX_BATCH, |b| fp(b).fits)
}

/// The memory wall: the first batch of `tokens`-token sequences that does not fit (`max_batch + 1`:
/// 1 when not even one sequence fits), or `None` when every batch up to [`MAX_BATCH`] fits.
pub fn memory_wall_batch(sc: &Scenario, tokens: u64, reserve_bytes: f64) -> Option<u64> {
    Some(max_batch(sc, tokens, reserve_bytes) + 1).filter(|b| *b <= MAX_BATCH)
}

/// Cached tokens of the whole instance that fit next to the weights and the workload's
/// workspace, counted at the KV bytes a token adds on each GPU
/// (`parallel::stage_kv_bytes_per_token`: under tensor parallelism each GPU holds its share of
/// the KV heads, so TP `N` holds up to `N×` the cache of one GPU's free memory; a sliding-window
/// model can hold more once sequences outgrow the window): the least over pipeline stages of
/// `⌊(capacity − reserve − weights − workspace) ÷ bytes per token⌋`.
pub fn max_cached_tokens(sc: &Scenario, reserve_bytes: f64) -> u64 {
    max_cached_tokens_beside(sc, reserve_bytes, None)
}

/// [`max_cached_tokens`] with a draft model on the same GPUs (speculative decoding): its
/// weights (its own layout's first stage, on every GPU of each stage) come off the free memory
/// and each cached token also holds the draft's KV bytes on a GPU (the draft keeps a cache of
/// every sequence the target does): `⌊(capacity − reserve − weights − workspace − draft weights)
/// ÷ (bytes per token + draft bytes per token)⌋`. The draft's step workspace is not counted (a
/// decode step of the draft is far smaller than the target's sizing prefill).
pub fn max_cached_tokens_beside(sc: &Scenario, reserve_bytes: f64, draft: Option<&Scenario>) -> u64 {
    let fp = Footprint::of(sc, reserve_bytes);
    let weights = GpuWeights::of(sc);
    let (draft_weight_bytes, draft_per_token_bytes) = draft
        .map(|d| (GpuWeights::of(d).per_stage()[0], parallel::stage_kv_bytes_per_token(d, 0)))
        .unwrap_or((0.0, 0.0));
    (0..sc.parallel.stages.len())
        .map(|s| {
            let free = fp.available_bytes - weights.per_stage()[s] - fp.workspace_bytes - draft_weight_bytes;
            let per = parallel::stage_kv_bytes_per_token(sc, s) + draft_per_token_bytes;
            if free <= 0.0 || per <= 0.0 {
                0
            } else {
                (free / per).floor().min(u64::MAX as f64) as u64
            }
        })
        .min()
        .unwrap_or(0)
}

/// Cache bytes each sequence holds however long it is (recurrent and compressor states), in
/// tokens of the KV cache beside it on each GPU: `⌈state ÷ KV bytes per token⌉`, the most over
/// pipeline stages; 0 without such state. vLLM's hybrid KV-cache manager keeps each sequence's
/// state in blocks of the same pool (`MambaSpec` beside the attention layers' pages), so a
/// sequence of `t` tokens takes `⌈t / block⌉` blocks plus the blocks of this many tokens
/// (Qwen3.5-27B: 154 MB of state over 65,536 B a token = 2,349 tokens). A model whose every
/// layer is recurrent has no KV to count in: its state alone (one token's worth per byte of
/// state is not a unit), and 0 here.
pub fn state_tokens_per_sequence(sc: &Scenario) -> u64 {
    (0..sc.parallel.stages.len())
        .map(|s| {
            let state = parallel::stage_state_bytes_per_sequence(sc, s);
            let per = parallel::stage_kv_bytes_per_token(sc, s);
            if state > 0.0 && per > 0.0 {
                (state / per).ceil().min(u64::MAX as f64) as u64
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0)
}

/// Which steps a "does it fit" answer covers (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitBasis {
    /// One step as given: its cache after it runs and its workspace.
    Step,
    /// A static batch of requests: the fuller of its prefill step and its last decode step.
    RequestPeak,
}

impl FitBasis {
    /// The rule in one line, for footers (`fit basis: …`).
    pub fn rule(self, counting: Counting) -> &'static str {
        match (self, counting) {
            (FitBasis::Step, Counting::Full) => {
                "fit basis: this step — each sequence's cache after it (decode: ctx cached + the token it writes; prefill: the prompt) plus the step's workspace"
            }
            (FitBasis::Step, Counting::Seed) => {
                "fit basis: this step, seed counting — each sequence's ctx cached tokens and the weights without the embedding table, no workspace"
            }
            (FitBasis::RequestPeak, Counting::Full) => {
                "fit basis: the requests' peak — the fuller of the prefill step (the prompt, with its workspace) and the last decode step (prompt + output − 1 tokens held)"
            }
            (FitBasis::RequestPeak, Counting::Seed) => {
                "fit basis: the requests' peak, seed counting — the fuller of the prefill step (the prompt) and the last decode step (prompt + output − 2 cached tokens), weights without the embedding table, no workspace"
            }
        }
    }
}

/// One step a [`Fit`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FitStep {
    /// Its phase.
    pub phase: Phase,
    /// Positions each sequence holds in the cache after the step (uniform batches only).
    pub held_tokens: Option<u64>,
    /// Its memory against the GPU.
    pub footprint: Footprint,
}

/// A batch of identical requests: `batch` sequences, each a prompt of `prompt_tokens` and
/// `output_tokens` generated tokens (the first from the prefill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Requests {
    /// Requests in the batch.
    pub batch: u64,
    /// Prompt tokens per request.
    pub prompt_tokens: u64,
    /// Output tokens per request (≥ 1).
    pub output_tokens: u64,
}

impl Requests {
    /// The prefill step of the requests (`sc`'s model, GPU and precisions; its phase and contexts
    /// replaced).
    pub fn prefill(&self, sc: &Scenario) -> crate::error::Result<Scenario> {
        self.step(sc, Phase::Prefill, self.prompt_tokens)
    }

    /// The decode step at `ctx` cached tokens per sequence.
    pub fn decode(&self, sc: &Scenario, ctx: u64) -> crate::error::Result<Scenario> {
        self.step(sc, Phase::Decode, ctx)
    }

    /// Cached tokens per sequence at the last decode step: `P + O − 2` (none when `O = 1`).
    pub fn last_decode_ctx(&self) -> Option<u64> {
        (self.output_tokens >= 2).then(|| self.prompt_tokens + self.output_tokens - 2)
    }

    fn step(&self, sc: &Scenario, phase: Phase, tokens: u64) -> crate::error::Result<Scenario> {
        Ok(sc.with_workload(Workload {
            phase,
            contexts: Contexts::uniform(self.batch, tokens)?,
            ..sc.workload.clone()
        }))
    }
}

/// "Does it fit": the one answer every command gives (module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Which steps it covers.
    pub basis: FitBasis,
    /// The steps covered: the step, or the prefill and the last decode step of the requests.
    pub steps: Vec<FitStep>,
    /// The footprint of the fullest step covered, which decides.
    pub footprint: Footprint,
    /// The phase of that step.
    pub deciding_phase: Phase,
    /// Largest batch that fits on the same basis (`None` for a mix of contexts).
    pub max_batch: Option<u64>,
}

impl Fit {
    /// One step as given ([`FitBasis::Step`]).
    pub fn step(sc: &Scenario, reserve_bytes: f64) -> Fit {
        Fit::over(FitBasis::Step, std::slice::from_ref(sc), reserve_bytes)
    }

    /// A static batch of requests ([`FitBasis::RequestPeak`]) on `sc`'s model, GPU and precisions.
    pub fn requests(sc: &Scenario, r: &Requests, reserve_bytes: f64) -> crate::error::Result<Fit> {
        let mut steps = vec![r.prefill(sc)?];
        if let Some(ctx) = r.last_decode_ctx() {
            steps.push(r.decode(sc, ctx)?);
        }
        Ok(Fit::over(FitBasis::RequestPeak, &steps, reserve_bytes))
    }

    /// The definition: every step's footprint; the fullest decides; the largest batch is the
    /// smallest [`max_batch`] over the steps.
    fn over(basis: FitBasis, steps: &[Scenario], reserve_bytes: f64) -> Fit {
        let covered: Vec<FitStep> = steps
            .iter()
            .map(|s| FitStep {
                phase: s.workload.phase,
                held_tokens: uniform_tokens(s).map(|t| held_positions(&s.workload, t as f64) as u64),
                footprint: Footprint::of(s, reserve_bytes),
            })
            .collect();
        // The fullest step decides; the first of equals (the prefill, for a request).
        let deciding = (1..covered.len()).fold(0, |best, i| {
            if covered[i].footprint.memory_bytes > covered[best].footprint.memory_bytes {
                i
            } else {
                best
            }
        });
        let max_batch = steps
            .iter()
            .map(|s| uniform_tokens(s).map(|t| max_batch(s, t, reserve_bytes)))
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| v.into_iter().min());
        Fit {
            basis,
            footprint: covered[deciding].footprint,
            deciding_phase: covered[deciding].phase,
            steps: covered,
            max_batch,
        }
    }

    /// Whether it fits: the fullest step's memory ≤ capacity − reserve.
    pub fn fits(&self) -> bool {
        self.footprint.fits
    }

    /// Memory the fullest step needs, bytes.
    pub fn needed_bytes(&self) -> f64 {
        self.footprint.memory_bytes
    }

    /// Capacity − reserve, bytes.
    pub fn available_bytes(&self) -> f64 {
        self.footprint.available_bytes
    }
}

/// Tokens per sequence of a uniform batch.
fn uniform_tokens(sc: &Scenario) -> Option<u64> {
    match sc.workload.contexts {
        Contexts::Uniform { tokens, .. } => Some(tokens),
        Contexts::Mix(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ContextBucket;
    use std::sync::Arc;

    fn sc(pairs: &[(&str, &str)]) -> Scenario {
        crate::testing::scenario(pairs)
    }

    #[test]
    fn llama3_8b_weights_are_its_parameters_at_two_bytes() {
        let s = sc(&[]);
        let w = WeightFootprint::of(&s.model, &s.weights);
        // 8,030,261,248 parameters × 2 bytes.
        assert_eq!(w.total_bytes(), 16_060_522_496.0);
        // Embedding 128,256 × 4,096 × 2 = 1,050,673,152; untied head the same.
        assert_eq!(w.embedding_bytes, 1_050_673_152.0);
        assert_eq!(w.lm_head_bytes, 1_050_673_152.0);
        // Seed: the 15,009,316,864 GEMM bytes + 65 norms × 4,096 × 2 = 532,480.
        assert_eq!(w.counted_bytes(Counting::Seed), 15_009_316_864.0 + 532_480.0);
    }

    #[test]
    fn quantised_weights_keep_small_vectors_wide() {
        let s = sc(&[("weights", "int4")]);
        let w = WeightFootprint::of(&s.model, &s.weights);
        // Matrices at 0.5 B; embedding stays bf16; norms stay bf16.
        let layer_mats = 32.0 * (4096.0 * 6144.0 + 4096.0 * 4096.0 + 3.0 * 4096.0 * 14336.0);
        assert_eq!(w.attention_bytes + w.mlp_bytes, layer_mats * 0.5);
        assert_eq!(w.embedding_bytes, 1_050_673_152.0);
        assert_eq!(w.lm_head_bytes, 1_050_673_152.0 / 4.0);
        assert_eq!(w.norm_bytes, 65.0 * 4096.0 * 2.0);
    }

    #[test]
    fn tied_heads_and_moe_experts() {
        let s = sc(&[("model", "llama-3.2-1b")]);
        assert_eq!(WeightFootprint::of(&s.model, &s.weights).lm_head_bytes, 0.0);
        assert_eq!(WeightFootprint::of(&s.model, &s.weights).total_bytes(), s.model.total_params() as f64 * 2.0);
        // Every routed expert is stored, so memory follows total (not active) parameters.
        let m = sc(&[("model", "mixtral-8x7b")]);
        let w = WeightFootprint::of(&m.model, &m.weights);
        assert_eq!(w.total_bytes(), m.model.total_params() as f64 * 2.0);
        assert!(w.experts_bytes > 0.9 * w.total_bytes() - w.embedding_bytes - w.lm_head_bytes - w.attention_bytes);
    }

    #[test]
    fn kv_per_token_is_the_seeds_128_kib() {
        let s = sc(&[]);
        assert_eq!(kv_bytes_per_token(&s.model, Precision::Bf16), 131_072.0);
        assert_eq!(kv_bytes_per_token(&s.model, Precision::Fp8), 65_536.0);
        // One sequence of 2,048 positions: 2,048 × 131,072 = 268,435,456.
        assert_eq!(kv_bytes_per_sequence(&s.model, Precision::Bf16, Precision::Bf16, 2048.0), 268_435_456.0);
        // Full counting holds the new token too.
        let full = sc(&[("batch", "4"), ("ctx", "100")]);
        assert_eq!(kv_cache_bytes(&full), 4.0 * 101.0 * 131_072.0);
        let seed = sc(&[("batch", "4"), ("ctx", "100"), ("counting", "seed")]);
        assert_eq!(kv_cache_bytes(&seed), 4.0 * 100.0 * 131_072.0);
    }

    #[test]
    fn sliding_window_layers_hold_at_most_the_window() {
        // Gemma 2 9B: 42 layers alternating 4,096-token windows and global attention,
        // 8 KV heads × 256 = 2·8·256 = 4,096 elements per token per layer.
        let s = sc(&[("model", "gemma-2-9b")]);
        let per_layer = 4096.0 * 2.0;
        assert_eq!(kv_bytes_per_token(&s.model, Precision::Bf16), 42.0 * per_layer);
        assert_eq!(
            kv_bytes_per_sequence(&s.model, Precision::Bf16, Precision::Bf16, 1000.0),
            42.0 * per_layer * 1000.0
        );
        // At 10,000 tokens: 21 global layers hold 10,000, 21 windowed layers hold 4,096.
        assert_eq!(
            kv_bytes_per_sequence(&s.model, Precision::Bf16, Precision::Bf16, 10_000.0),
            21.0 * per_layer * (10_000.0 + 4096.0)
        );
    }

    #[test]
    fn mla_caches_the_latent() {
        // DeepSeek-V3: 61 layers × (512 + 64) elements × 2 bytes = 70,272 bytes per token.
        let s = sc(&[("model", "deepseek-v3"), ("kv", "bf16")]);
        assert_eq!(kv_bytes_per_token(&s.model, Precision::Bf16), 61.0 * 576.0 * 2.0);
    }

    #[test]
    fn seed_batch_256_needs_about_84_gb_and_does_not_fit() {
        // "Batch 256 at this context would need about 84 GB for weights plus cache".
        let s = sc(&[("counting", "seed"), ("batch", "256"), ("ctx", "2048")]);
        let fp = Footprint::of(&s, 2e9);
        // 15,009,849,344 + 256 × 2,048 × 131,072 = 83,729,326,080 bytes.
        assert_eq!(fp.memory_bytes, 83_729_326_080.0);
        assert_eq!(format!("{:.0}", fp.memory_bytes / 1e9), "84");
        assert!(!fp.fits);
        assert!(!Footprint::of(&s, 0.0).fits, "does not fit an 80 GB card even with no reserve");
        let s128 = at_uniform(&s, 128, 2048);
        assert!(Footprint::of(&s128, 2e9).fits);
        // 8 × 32k holds as many tokens as 128 × 2k: the same cache.
        assert_eq!(kv_cache_bytes(&at_uniform(&s, 8, 32768)), kv_cache_bytes(&s128));
    }

    fn with_capacity(mut s: Scenario, bytes: f64) -> Scenario {
        let mut g = (*s.gpu).clone();
        g.memory_bytes = bytes;
        s.gpu = Arc::new(g);
        s
    }

    #[test]
    fn max_batch_exactly_fits_and_one_more_does_not() {
        // Seed counting: weights 15,009,849,344 B, 2,048 × 131,072 = 268,435,456 B per sequence.
        let exact = 15_009_849_344.0 + 8.0 * 268_435_456.0;
        let s = with_capacity(sc(&[("counting", "seed")]), exact);
        assert_eq!(max_batch(&s, 2048, 0.0), 8);
        assert!(Footprint::of(&at_uniform(&s, 8, 2048), 0.0).fits);
        assert!(!Footprint::of(&at_uniform(&s, 9, 2048), 0.0).fits);
        let short = with_capacity(s.clone(), exact - 1.0);
        assert_eq!(max_batch(&short, 2048, 0.0), 7);
        // The reserve comes off the capacity.
        assert_eq!(max_batch(&s, 2048, 268_435_456.0), 7);
        // Not even the weights fit.
        assert_eq!(max_batch(&with_capacity(s.clone(), 1e9), 2048, 0.0), 0);
        // The wall is the first batch past it: 9 on the exact card, 1 when nothing fits.
        assert_eq!(memory_wall_batch(&s, 2048, 0.0), Some(9));
        assert_eq!(memory_wall_batch(&with_capacity(s.clone(), 1e9), 2048, 0.0), Some(1));
        assert_eq!(memory_wall_batch(&with_capacity(s.clone(), 1e30), 2048, 0.0), None);
        // Full counting on the real H100: the answer is checked against the footprint itself.
        let full = sc(&[]);
        let b = max_batch(&full, 4096, 2e9);
        assert!(Footprint::of(&at_uniform(&full, b, 4096), 2e9).fits);
        assert!(!Footprint::of(&at_uniform(&full, b + 1, 4096), 2e9).fits);
    }

    /// Under pipeline parallelism the footprint is the fullest stage's, not affine in the batch:
    /// the answer is still the footprint's own, found in few footprints.
    #[test]
    fn max_batch_under_pipeline_stages_is_the_footprints_own() {
        for pairs in [&[("pp", "4"), ("micro_batches", "3")][..], &[("pp", "3")], &[("tp", "2"), ("pp", "2")]] {
            let s = sc(pairs);
            let b = max_batch(&s, 4096, 2e9);
            assert!(b > 1, "{pairs:?}");
            assert!(Footprint::of(&at_uniform(&s, b, 4096), 2e9).fits, "{pairs:?}");
            assert!(!Footprint::of(&at_uniform(&s, b + 1, 4096), 2e9).fits, "{pairs:?}");
        }
    }

    #[test]
    fn cached_token_capacity() {
        // (80e9 − 15,009,849,344) / 131,072 = 495,835.5 → 495,835 tokens with no reserve.
        let s = sc(&[("counting", "seed")]);
        assert_eq!(max_cached_tokens(&s, 0.0), 495_835);
        // fp8 KV doubles it.
        let f8 = sc(&[("counting", "seed"), ("kv", "fp8")]);
        assert_eq!(max_cached_tokens(&f8, 0.0), 991_671);
    }

    #[test]
    fn workspace_is_counted_in_full_and_grows_without_flash() {
        // Decode batch 1, bf16: T·(2H + 3I)·2 + 128,256 × 4 = (8,192 + 43,008)·2 + 513,024.
        let s = sc(&[]);
        assert_eq!(workspace_bytes(&s), (8192.0 + 43008.0) * 2.0 + 513_024.0);
        let pre = sc(&[("phase", "prefill"), ("ctx", "1024")]);
        let unfused = sc(&[("phase", "prefill"), ("ctx", "1024"), ("flash", "off")]);
        // 32 heads × 1,024² scores × 2 bytes.
        assert_eq!(workspace_bytes(&unfused) - workspace_bytes(&pre), 32.0 * 1024.0 * 1024.0 * 2.0);
        assert_eq!(workspace_bytes(&sc(&[("counting", "seed")])), 0.0);
    }

    #[test]
    fn a_step_fit_is_the_step_footprint_and_its_max_batch() {
        let s = sc(&[("batch", "4"), ("ctx", "1000")]);
        let f = Fit::step(&s, 2e9);
        assert_eq!((f.basis, f.deciding_phase), (FitBasis::Step, Phase::Decode));
        assert_eq!(f.footprint, Footprint::of(&s, 2e9));
        assert_eq!(f.max_batch, Some(max_batch(&s, 1000, 2e9)));
        // A decode step at 1,000 cached tokens holds 1,001 (the token it writes); seed counting 1,000.
        assert_eq!(f.steps[0].held_tokens, Some(1001));
        let seed = Fit::step(&sc(&[("batch", "4"), ("ctx", "1000"), ("counting", "seed")]), 2e9);
        assert_eq!(seed.steps[0].held_tokens, Some(1000));
        // A mix has no single largest batch.
        assert_eq!(Fit::step(&sc(&[("contexts", "2048x8,32768x2")]), 2e9).max_batch, None);
    }

    #[test]
    fn a_request_fit_covers_its_prefill_and_its_last_decode_step() {
        let s = sc(&[]);
        let r = Requests { batch: 8, prompt_tokens: 2048, output_tokens: 256 };
        let f = Fit::requests(&s, &r, 2e9).unwrap();
        assert_eq!(f.basis, FitBasis::RequestPeak);
        let phases: Vec<(Phase, Option<u64>)> = f.steps.iter().map(|x| (x.phase, x.held_tokens)).collect();
        // The last decode step runs at 2,048 + 256 − 2 cached tokens and holds 2,048 + 256 − 1.
        assert_eq!(phases, [(Phase::Prefill, Some(2048)), (Phase::Decode, Some(2303))]);
        let pre = Footprint::of(&r.prefill(&s).unwrap(), 2e9);
        let last = Footprint::of(&r.decode(&s, 2302).unwrap(), 2e9);
        // Llama 3 8B: the prefill of 8 × 2,048 tokens needs more (its workspace) than the cache grows.
        assert!(pre.memory_bytes > last.memory_bytes);
        assert_eq!((f.footprint, f.deciding_phase), (pre, Phase::Prefill));
        let most =
            max_batch(&r.prefill(&s).unwrap(), 2048, 2e9).min(max_batch(&r.decode(&s, 2302).unwrap(), 2302, 2e9));
        assert_eq!(f.max_batch, Some(most));
        // Long outputs: the last decode step decides.
        let long = Requests { batch: 8, prompt_tokens: 128, output_tokens: 60_000 };
        let f = Fit::requests(&s, &long, 2e9).unwrap();
        assert_eq!((f.deciding_phase, f.steps[1].held_tokens), (Phase::Decode, Some(128 + 60_000 - 1)));
        // One output token: the prefill alone.
        let one = Fit::requests(&s, &Requests { output_tokens: 1, ..r }, 2e9).unwrap();
        assert_eq!(one.steps.len(), 1);
    }

    #[test]
    fn a_mix_is_the_sum_of_its_sequences() {
        let mix = sc(&[("contexts", "2048x8,32768x2")]);
        let parts = [ContextBucket { tokens: 2048, count: 8 }, ContextBucket { tokens: 32768, count: 2 }];
        let expect: f64 = parts.iter().map(|b| b.count as f64 * 131_072.0 * (b.tokens as f64 + 1.0)).sum();
        assert_eq!(kv_cache_bytes(&mix), expect);
    }
}
