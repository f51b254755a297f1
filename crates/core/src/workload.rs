//! What one forward step processes: phase, the sequences and their context lengths, precisions of
//! the KV cache and activations, and the counting conventions.
//!
//! * **decode**: every sequence adds one token; `tokens` of a bucket is the number of tokens
//!   already cached for each of its sequences. The new token attends to those plus itself.
//! * **prefill**: every sequence processes its whole prompt; `tokens` is the prompt length.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::limits::{MAX_BATCH, MAX_CONTEXT, MAX_CONTEXT_BUCKETS};
use crate::model::Reach;
use crate::precision::Precision;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Inference phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Process whole prompts.
    Prefill,
    /// Generate one token per sequence.
    Decode,
}

impl FromStr for Phase {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "prefill" => Ok(Phase::Prefill),
            "decode" => Ok(Phase::Decode),
            _ => Err(Error::unknown("phase", s, ["decode", "prefill"])),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        })
    }
}

/// `count` sequences with `tokens` tokens each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ContextBucket {
    /// Cached tokens (decode) or prompt tokens (prefill) per sequence.
    pub tokens: u64,
    /// Sequences in the bucket.
    pub count: u64,
}

/// The batch: a uniform batch, or a histogram of per-sequence contexts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Contexts {
    /// `batch` sequences of `tokens` each.
    Uniform {
        /// Sequences.
        batch: u64,
        /// Tokens per sequence.
        tokens: u64,
    },
    /// A histogram (non-empty, every count ≥ 1).
    Mix(Arc<[ContextBucket]>),
}

impl Contexts {
    /// A uniform batch, validated.
    pub fn uniform(batch: u64, tokens: u64) -> Result<Self> {
        check_batch("batch", batch)?;
        check_tokens("ctx", tokens)?;
        Ok(Contexts::Uniform { batch, tokens })
    }

    /// A histogram, validated: at least one bucket, counts ≥ 1, sizes in range. Buckets with the
    /// same length are merged (through a hash map: linear in the number of buckets, then one sort).
    pub fn mix(buckets: impl IntoIterator<Item = ContextBucket>) -> Result<Self> {
        let mut merged: HashMap<u64, u64> = HashMap::new();
        for b in buckets {
            if merged.len() >= MAX_CONTEXT_BUCKETS && !merged.contains_key(&b.tokens) {
                return Err(Error::invalid("contexts", "too many buckets", format!("at most {MAX_CONTEXT_BUCKETS}")));
            }
            check_tokens("contexts", b.tokens)?;
            if b.count == 0 {
                return Err(Error::invalid(
                    "contexts",
                    format!("count 0 for context {}", b.tokens),
                    "a count of at least 1",
                ));
            }
            let count = merged.entry(b.tokens).or_insert(0);
            *count = count.saturating_add(b.count);
        }
        let mut v: Vec<ContextBucket> =
            merged.into_iter().map(|(tokens, count)| ContextBucket { tokens, count }).collect();
        if v.is_empty() {
            return Err(Error::invalid("contexts", "an empty list", "at least one sequence"));
        }
        let total: u64 = v.iter().map(|b| b.count).fold(0u64, u64::saturating_add);
        check_batch("contexts (total sequences)", total)?;
        if let [only] = v.as_slice() {
            return Ok(Contexts::Uniform { batch: only.count, tokens: only.tokens });
        }
        v.sort_unstable_by_key(|b| b.tokens);
        Ok(Contexts::Mix(v.into()))
    }

    /// Visit `(tokens, count)` of every bucket as `f64`.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(f64, f64)) {
        match self {
            Contexts::Uniform { batch, tokens } => f(*tokens as f64, *batch as f64),
            Contexts::Mix(b) => b.iter().for_each(|b| f(b.tokens as f64, b.count as f64)),
        }
    }

    /// Sum of `g(tokens) · count` over buckets.
    #[inline]
    pub fn sum(&self, g: impl Fn(f64) -> f64) -> f64 {
        let mut s = 0.0;
        self.for_each(|t, c| s += g(t) * c);
        s
    }

    /// Number of sequences.
    pub fn batch(&self) -> u64 {
        match self {
            Contexts::Uniform { batch, .. } => *batch,
            Contexts::Mix(b) => b.iter().map(|b| b.count).sum(),
        }
    }

    /// Σ tokens over sequences.
    pub fn total_tokens(&self) -> f64 {
        self.sum(|t| t)
    }

    /// Longest sequence.
    pub fn max_tokens(&self) -> u64 {
        match self {
            Contexts::Uniform { tokens, .. } => *tokens,
            Contexts::Mix(b) => b.iter().map(|b| b.tokens).max().unwrap_or(0),
        }
    }

    /// The buckets as a list (uniform is one bucket).
    pub fn buckets(&self) -> Vec<ContextBucket> {
        match self {
            Contexts::Uniform { batch, tokens } => vec![ContextBucket { tokens: *tokens, count: *batch }],
            Contexts::Mix(b) => b.to_vec(),
        }
    }
}

fn check_batch(field: &str, b: u64) -> Result<()> {
    if (1..=MAX_BATCH).contains(&b) {
        Ok(())
    } else {
        Err(Error::invalid(field, b, integer_in(1, MAX_BATCH)))
    }
}

fn check_tokens(field: &str, t: u64) -> Result<()> {
    if t <= MAX_CONTEXT {
        Ok(())
    } else {
        Err(Error::invalid(field, t, integer_in(0, MAX_CONTEXT)))
    }
}

/// How causal prefill attention is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Causal {
    /// Only the p(p+1)/2 score entries on or below the diagonal (what a causal kernel computes).
    Half,
    /// The full p² square (what a naive masked implementation computes).
    Full,
}

/// Which positions get logits from the LM head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Logits {
    /// The last position of each sequence (serving).
    Last,
    /// Every position (scoring, training-style forward).
    All,
}

/// Counting conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Counting {
    /// Every operator, with weight, KV and activation bytes.
    Full,
    /// Exactly what the reference calculator's calculator counts: weight and KV-read bytes of qkv_proj, o_proj,
    /// mlp, attention and lm_head; no minor operators, no activation bytes, no KV writes, and the
    /// new token attends to the `ctx` cached tokens only.
    Seed,
}

/// MLA execution form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MlaForm {
    /// Absorbed in decode, expanded in prefill (what vLLM and SGLang run); absorbed in prefill
    /// too on a sparse layer (their FlashMLA sparse kernels).
    Auto,
    /// Expand the latent with kv_b_proj and run MHA (the Hugging Face code).
    Naive,
    /// Fold W_UK into q and W_UV after attention; attend over the latent (FlashMLA).
    Absorbed,
}

macro_rules! parse_enum {
    ($t:ty, $what:literal, { $($s:literal => $v:expr),+ $(,)? }) => {
        impl FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($s => Ok($v),)+
                    _ => Err(Error::unknown($what, s, [$($s),+])),
                }
            }
        }
    };
}
parse_enum!(Causal, "causal counting", { "half" => Causal::Half, "full" => Causal::Full });
parse_enum!(Logits, "logits mode", { "last" => Logits::Last, "all" => Logits::All });
// `reference` names the convention; `seed` (the seed document it comes from) stays for scripts.
parse_enum!(Counting, "counting mode", { "full" => Counting::Full, "seed" => Counting::Seed, "reference" => Counting::Seed });
parse_enum!(MlaForm, "MLA form", { "auto" => MlaForm::Auto, "naive" => MlaForm::Naive, "absorbed" => MlaForm::Absorbed });

/// One forward step's workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Prefill or decode.
    pub phase: Phase,
    /// Sequences and their lengths.
    pub contexts: Contexts,
    /// KV-cache storage.
    pub kv: Precision,
    /// Activation storage and attention math.
    pub activations: Precision,
    /// Format GEMM inputs are quantised to before the matmul (W8A8: fp8 or int8); equals
    /// `activations` unless the checkpoint or the user says otherwise.
    pub gemm_activations: Precision,
    /// FlashAttention-style fused attention (scores never reach HBM).
    pub flash_attention: bool,
    /// Causal counting for prefill.
    pub causal: Causal,
    /// Logits positions.
    pub logits: Logits,
    /// Counting conventions.
    pub counting: Counting,
    /// MLA execution form.
    pub mla: MlaForm,
    /// A serving step's sequences as chunks of new tokens on top of cached ones (the
    /// continuous-batching simulator's mixed steps, [`Workload::with_chunks`]); `None` for the
    /// usual steps, where `contexts` alone says what each sequence does.
    pub chunks: Option<Arc<[Chunk]>>,
}

/// One sequence of a serving step: `new_tokens` processed on top of `cached_tokens` already in the
/// KV cache. A decode is `new_tokens = 1` at `cached_tokens = ctx`; a whole prompt is
/// `cached_tokens = 0`; a chunked-prefill chunk continues a partly processed prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Chunk {
    /// Tokens processed in this step (≥ 1).
    pub new_tokens: u64,
    /// Tokens already cached for the sequence.
    pub cached_tokens: u64,
}

impl Chunk {
    /// Attention geometry of this chunk on a layer whose queries reach `reach`.
    ///
    /// Its `c = new_tokens` queries sit at positions `k … k + c − 1` (`k = cached_tokens`, 0-based)
    /// and each attends causally to the positions its reach allows ([`Reach::pairs_of_chunk`]:
    /// `c·k + c(c+1)/2` for full attention) under [`Causal::Half`], and `c·(k + c)` under
    /// [`Causal::Full`]. K/V read: [`Reach::positions_read`] (for full attention, every
    /// position any query sees once, `k + c`); `c` positions written; an unfused kernel
    /// materialises `c·(k + c)` scores (a decode: its pairs). With `k = 0` this is
    /// [`Workload::attention_geometry`]'s prefill of a `c`-token prompt; with `c = 1` its
    /// decode at `k` cached tokens (full counting).
    pub fn geometry(&self, reach: Reach, causal: Causal) -> AttentionGeometry {
        let (c, k) = (self.new_tokens as f64, self.cached_tokens as f64);
        let pairs = match causal {
            Causal::Full => c * (k + c),
            Causal::Half => reach.pairs_of_chunk(k, c),
        };
        let read = reach.positions_read(k, c);
        // A one-token prompt with nothing cached is a prompt (the engines' prefill kernel).
        let decode = self.new_tokens == 1 && self.cached_tokens > 0;
        AttentionGeometry {
            sequences: 1.0,
            queries: c,
            pairs,
            kv_positions_read: read,
            kv_positions_written: c,
            materialised_scores: if self.new_tokens == 1 { pairs } else { c * (k + c) },
            decode_sequences: if decode { 1.0 } else { 0.0 },
            decode_pairs: if decode { pairs } else { 0.0 },
        }
    }
}

impl Chunk {
    /// Geometry over compressed entries that pool every `ratio` positions into one (DeepSeek-V4),
    /// for the chunk's queries at positions `k … k + c − 1`: the query at `i` sees the
    /// `e_i = ⌊(i + 1)/ratio⌋` entries completed before it, all of them (`reach` [`Reach::All`])
    /// or the top `K` ([`Reach::TopK`]). Pairs `Σ min(e_i, K)` ([`compressed_pairs`]); entries
    /// read: those the queries that see at most `K` share, once, and `K` gathered by each later
    /// query; entries written: those the chunk completes, `⌊(k + c)/ratio⌋ − ⌊k/ratio⌋`.
    pub fn compressed_geometry(&self, ratio: u64, reach: Reach) -> AttentionGeometry {
        let (c, k) = (self.new_tokens as f64, self.cached_tokens as f64);
        let r = ratio as f64;
        let top = match reach {
            Reach::TopK(top) => top as f64,
            Reach::All | Reach::Window(_) | Reach::Chunk(_) => f64::INFINITY,
        };
        // Queries (1-based visible counts j = k+1 … k+c) that see at most `top` entries: j < (top+1)·r.
        let dense = ((top + 1.0) * r - 1.0 - k).clamp(0.0, c);
        let gathered = if dense < c { (c - dense) * top } else { 0.0 };
        let pairs = compressed_pairs(k, dense, r) + gathered;
        let read = if dense > 0.0 { ((k + dense) / r).floor() } else { 0.0 } + gathered;
        let decode = self.new_tokens == 1 && self.cached_tokens > 0;
        AttentionGeometry {
            sequences: 1.0,
            queries: c,
            pairs,
            kv_positions_read: read,
            kv_positions_written: ((k + c) / r).floor() - (k / r).floor(),
            materialised_scores: pairs,
            decode_sequences: if decode { 1.0 } else { 0.0 },
            decode_pairs: if decode { pairs } else { 0.0 },
        }
    }
}

/// `Σ_{j = k+1}^{k+c} ⌊j / r⌋`: the compressed entries `c` queries after `k` cached positions
/// see in all, summed without a difference of large sums: `c·⌊k/r⌋ + F(a + c)` with
/// `a = k mod r` and `F(n) = Σ_{j=1}^{n} ⌊j/r⌋ = r·q(q−1)/2 + q·(s + 1)`, `n = q·r + s`.
pub fn compressed_pairs(k: f64, c: f64, r: f64) -> f64 {
    if c <= 0.0 {
        return 0.0;
    }
    let n = k % r + c;
    let (q, s) = ((n / r).floor(), n % r);
    c * (k / r).floor() + r * q * (q - 1.0) / 2.0 + q * (s + 1.0)
}

impl Reach {
    /// Positions one query attends to when `s` positions, its own included, are visible to it
    /// (it sits at 0-based position `s − 1`): all `s`; `min(s, w)` in a window or a top-`w`;
    /// `((s − 1) mod c) + 1` in a chunk of `c`.
    pub fn attended(self, s: f64) -> f64 {
        match self {
            Reach::All => s,
            Reach::Window(w) | Reach::TopK(w) => s.min(w as f64),
            Reach::Chunk(c) => {
                let c = c as f64;
                if s <= 0.0 {
                    0.0
                } else {
                    (s - 1.0) % c + 1.0
                }
            }
        }
    }

    /// (query, key) pairs of `c` queries at positions `k … k + c − 1` under causal attention:
    ///
    /// * all: `c·k + c(c+1)/2`;
    /// * window or top-`w` (a query reads `min(i + 1, w)`): `m·k + m(m+1)/2 + (c − m)·w`,
    ///   `m = clamp(w − k, 0, c)` the queries that still see everything;
    /// * chunk of `C` (a query reads `(i mod C) + 1`): the first chunk's part from `a = k mod C`,
    ///   `f·a + f(f+1)/2` with `f = min(c, C − a)`, then `⌊(c − f)/C⌋` whole chunks of
    ///   `C(C+1)/2` and a last part of `r(r+1)/2`, `r = (c − f) mod C`.
    ///
    /// Each is summed directly, never as a difference of two large sums.
    pub fn pairs_of_chunk(self, k: f64, c: f64) -> f64 {
        let tri = |n: f64| n * (n + 1.0) / 2.0;
        match self {
            Reach::All => c * k + tri(c),
            Reach::Window(w) | Reach::TopK(w) => {
                let w = w as f64;
                let m = (w - k).clamp(0.0, c);
                m * k + tri(m) + (c - m) * w
            }
            Reach::Chunk(chunk) => {
                let chunk = chunk as f64;
                let a = k % chunk;
                let f = c.min(chunk - a);
                let rest = c - f;
                f * a + tri(f) + (rest / chunk).floor() * tri(chunk) + tri(rest % chunk)
            }
        }
    }

    /// Cached positions whose K/V the `c` queries at `k … k + c − 1` read from HBM:
    ///
    /// * all: every position any of them sees, once: `k + c`;
    /// * window `w`: `min(k + c, w + c − 1)`;
    /// * chunk of `C`: from the first query's chunk start, `(k mod C) + c`;
    /// * top-`K`: the queries that still see at most `K` positions read them as dense attention
    ///   does, once (`min(k + c, K)` when `k < K`); each later query gathers its own `K`
    ///   selected positions (`K` per query: sparse kernels load the selected rows per query).
    ///   A decode reads `min(k + 1, K)`.
    pub fn positions_read(self, k: f64, c: f64) -> f64 {
        match self {
            Reach::All => k + c,
            Reach::Window(w) => (k + c).min(w as f64 + c - 1.0),
            Reach::Chunk(chunk) => k % chunk as f64 + c,
            Reach::TopK(top) => {
                let top = top as f64;
                let dense = if k < top { (k + c).min(top) } else { 0.0 };
                let sparse = (k + c - k.max(top)).max(0.0);
                dense + top * sparse
            }
        }
    }
}

impl Workload {
    /// Decode at `batch` × `ctx`, bf16 everywhere, FlashAttention, full counting.
    pub fn decode(batch: u64, ctx: u64) -> Result<Self> {
        Ok(Workload {
            phase: Phase::Decode,
            contexts: Contexts::uniform(batch, ctx)?,
            kv: Precision::Bf16,
            activations: Precision::Bf16,
            gemm_activations: Precision::Bf16,
            flash_attention: true,
            causal: Causal::Half,
            logits: Logits::Last,
            counting: Counting::Full,
            mla: MlaForm::Auto,
            chunks: None,
        })
    }

    /// Prefill of `batch` prompts of `prompt` tokens, otherwise as [`Workload::decode`].
    pub fn prefill(batch: u64, prompt: u64) -> Result<Self> {
        Ok(Workload { phase: Phase::Prefill, ..Self::decode(batch, prompt)? })
    }

    /// A serving step of `chunks` (non-empty, each with ≥ 1 new token). When every chunk is one
    /// new token the step is a decode (absorbed MLA, the decode's seed counting); otherwise it is
    /// a prefill-phase step (every new token passes through the layers; logits for each
    /// sequence's last one). `contexts` holds the same number of sequences and new tokens (at most
    /// two buckets, so the step's token count and batch are exact); attention comes from the
    /// chunks ([`Chunk::geometry`]). Only the step's time is modelled this way: memory comes from
    /// the simulator's paged cache.
    pub fn with_chunks(&self, chunks: Arc<[Chunk]>) -> Workload {
        let b = chunks.len().max(1) as u64;
        let t: u64 = chunks.iter().map(|c| c.new_tokens).sum::<u64>().max(b);
        let phase = if t == b { Phase::Decode } else { Phase::Prefill };
        let (q, r) = (t / b, t % b);
        let contexts = if r == 0 {
            Contexts::Uniform { batch: b, tokens: q }
        } else {
            Contexts::Mix(
                vec![ContextBucket { tokens: q, count: b - r }, ContextBucket { tokens: q + 1, count: r }].into(),
            )
        };
        Workload { phase, contexts, chunks: Some(chunks), ..self.clone() }
    }

    /// Tokens that pass through the layer stack in this step: B (decode) or Σ prompt (prefill).
    pub fn step_tokens(&self) -> f64 {
        match self.phase {
            Phase::Decode => self.contexts.batch() as f64,
            Phase::Prefill => self.contexts.total_tokens(),
        }
    }

    /// Tokens that get logits: B, or every prefill token with [`Logits::All`].
    pub fn logit_tokens(&self) -> f64 {
        match (self.phase, self.logits) {
            (Phase::Prefill, Logits::All) => self.contexts.total_tokens(),
            _ => self.contexts.batch() as f64,
        }
    }

    /// Attention geometry of one layer whose queries reach `reach` ([`Reach`]), summed over
    /// sequences.
    ///
    /// * decode: each sequence's query sees `S = ctx + 1` positions (`ctx` under seed counting)
    ///   and attends to [`Reach::attended`]`(S)` of them (`S`, `min(S, w)` in a window or a
    ///   top-`w`, the positions of its chunk); K/V of those positions are read; one position per
    ///   sequence is written.
    /// * prefill: pairs = Σ [`Reach::pairs_of_chunk`]`(0, p)` (causal half: `p(p+1)/2`; with a
    ///   window w < p: w(w+1)/2 + (p−w)·w) or Σ p² (full square); every prompt position is
    ///   written to the cache and read back once (K/V of one head stay on chip while its queries
    ///   run, the FlashAttention-2 DRAM model), except that a top-`K` query past the first `K`
    ///   gathers its own `K` positions ([`Reach::positions_read`]); an unfused kernel
    ///   materialises the full p² score matrix.
    pub fn attention_geometry(&self, reach: Reach) -> AttentionGeometry {
        if let Some(chunks) = &self.chunks {
            let mut g = chunks.iter().fold(AttentionGeometry::ZERO, |g, c| g.plus(c.geometry(reach, self.causal)));
            if self.phase == Phase::Decode && self.counting == Counting::Seed {
                // The reference calculator's decode: the new token attends to the cached ones only, writes nothing.
                g.pairs -= g.queries;
                g.kv_positions_read = g.pairs;
                g.kv_positions_written = 0.0;
                g.materialised_scores = g.pairs;
                g.decode_pairs = g.pairs;
            }
            return g;
        }
        match self.phase {
            Phase::Decode => {
                let extra = if self.counting == Counting::Seed { 0.0 } else { 1.0 };
                let pairs = self.contexts.sum(|c| reach.attended(c + extra));
                let b = self.contexts.batch() as f64;
                AttentionGeometry {
                    sequences: b,
                    queries: b,
                    pairs,
                    kv_positions_read: pairs,
                    kv_positions_written: if self.counting == Counting::Seed { 0.0 } else { b },
                    materialised_scores: pairs,
                    decode_sequences: b,
                    decode_pairs: pairs,
                }
            }
            Phase::Prefill => {
                let pairs = match self.causal {
                    Causal::Half => self.contexts.sum(|p| reach.pairs_of_chunk(0.0, p)),
                    Causal::Full => self.contexts.sum(|p| p * p),
                };
                let t = self.contexts.total_tokens();
                AttentionGeometry {
                    sequences: self.contexts.batch() as f64,
                    queries: t,
                    pairs,
                    kv_positions_read: self.contexts.sum(|p| reach.positions_read(0.0, p)),
                    kv_positions_written: t,
                    materialised_scores: self.contexts.sum(|p| p * p),
                    decode_sequences: 0.0,
                    decode_pairs: 0.0,
                }
            }
        }
    }
}

impl Workload {
    /// [`Chunk::compressed_geometry`] summed over the step's sequences: each serving chunk as it
    /// is; a decode at `ctx` cached tokens as a chunk of one new token (`ctx + 1` visible; its
    /// entry written once every `ratio` steps, counted `1/ratio` a step); a prefill of `p` tokens
    /// as a chunk of `p` on nothing cached.
    pub fn compressed_geometry(&self, ratio: u64, reach: Reach) -> AttentionGeometry {
        let chunk = |k: f64, c: f64| Chunk { new_tokens: c as u64, cached_tokens: k as u64 };
        if let Some(chunks) = &self.chunks {
            return chunks.iter().fold(AttentionGeometry::ZERO, |g, c| g.plus(c.compressed_geometry(ratio, reach)));
        }
        let mut g = AttentionGeometry::ZERO;
        self.contexts.for_each(|tokens, count| {
            let one = match self.phase {
                Phase::Decode => {
                    let mut one = chunk(tokens, 1.0).compressed_geometry(ratio, reach);
                    one.kv_positions_written = 1.0 / ratio as f64;
                    one.decode_sequences = 1.0;
                    one.decode_pairs = one.pairs;
                    one
                }
                Phase::Prefill => chunk(0.0, tokens).compressed_geometry(ratio, reach),
            };
            g = g.plus(one.scaled(count));
        });
        g
    }
}

/// Attention work of one layer, per head (query heads for pairs, KV heads for positions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionGeometry {
    /// Sequences (or chunks of sequences) the step attends for.
    pub sequences: f64,
    /// Query positions in the step.
    pub queries: f64,
    /// (query, key) pairs scored, per query head.
    pub pairs: f64,
    /// Cached positions whose K and V are read from HBM, per KV head.
    pub kv_positions_read: f64,
    /// Positions appended to the cache, per KV head.
    pub kv_positions_written: f64,
    /// Score-matrix entries an unfused kernel writes to HBM, per query head.
    pub materialised_scores: f64,
    /// Of [`AttentionGeometry::sequences`], those with one new token (decodes): a step of
    /// continuous batching attends for decodes and prompt chunks, which engines run as different
    /// kernels (a decode kernel and a prefill kernel).
    pub decode_sequences: f64,
    /// Of [`AttentionGeometry::pairs`], those of the decodes (per query head).
    pub decode_pairs: f64,
}

impl AttentionGeometry {
    /// No attention.
    pub const ZERO: AttentionGeometry = AttentionGeometry {
        sequences: 0.0,
        queries: 0.0,
        pairs: 0.0,
        kv_positions_read: 0.0,
        kv_positions_written: 0.0,
        materialised_scores: 0.0,
        decode_sequences: 0.0,
        decode_pairs: 0.0,
    };

    /// Every count times `f` (a GPU's share of the step's tokens).
    pub fn scaled(self, f: f64) -> AttentionGeometry {
        AttentionGeometry {
            sequences: self.sequences * f,
            queries: self.queries * f,
            pairs: self.pairs * f,
            kv_positions_read: self.kv_positions_read * f,
            kv_positions_written: self.kv_positions_written * f,
            materialised_scores: self.materialised_scores * f,
            decode_sequences: self.decode_sequences * f,
            decode_pairs: self.decode_pairs * f,
        }
    }

    /// The counts of two sets of sequences together.
    pub fn plus(self, o: AttentionGeometry) -> AttentionGeometry {
        AttentionGeometry {
            sequences: self.sequences + o.sequences,
            queries: self.queries + o.queries,
            pairs: self.pairs + o.pairs,
            kv_positions_read: self.kv_positions_read + o.kv_positions_read,
            kv_positions_written: self.kv_positions_written + o.kv_positions_written,
            materialised_scores: self.materialised_scores + o.materialised_scores,
            decode_sequences: self.decode_sequences + o.decode_sequences,
            decode_pairs: self.decode_pairs + o.decode_pairs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_geometry_counts_the_new_token_unless_seed_counting() {
        let w = Workload::decode(4, 100).unwrap();
        let g = w.attention_geometry(Reach::All);
        assert_eq!((g.queries, g.pairs, g.kv_positions_written), (4.0, 404.0, 4.0));
        let seed = Workload { counting: Counting::Seed, ..w.clone() };
        assert_eq!(seed.attention_geometry(Reach::All).pairs, 400.0);
        // A 64-token window caps each sequence at 64 positions.
        assert_eq!(w.attention_geometry(Reach::Window(64)).pairs, 256.0);
    }

    #[test]
    fn prefill_geometry_is_the_causal_triangle() {
        let w = Workload::prefill(2, 10).unwrap();
        // 2 × 10·11/2 = 110 pairs; full square 2 × 100.
        assert_eq!(w.attention_geometry(Reach::All).pairs, 110.0);
        assert_eq!(Workload { causal: Causal::Full, ..w.clone() }.attention_geometry(Reach::All).pairs, 200.0);
        // Window 4 over 10 tokens: 4·5/2 + 6·4 = 34 per sequence.
        assert_eq!(w.attention_geometry(Reach::Window(4)).pairs, 68.0);
        assert_eq!(w.attention_geometry(Reach::All).materialised_scores, 200.0);
    }

    /// Every reach's pairs and reads against a query-by-query count.
    #[test]
    fn reach_pairs_and_reads_match_a_query_by_query_count() {
        // Query at 0-based position i sees i + 1 positions: full i+1, window min(i+1, w), chunk
        // (i mod C) + 1, top-K min(i+1, K).
        let attended = |r: Reach, i: u64| match r {
            Reach::All => i + 1,
            Reach::Window(w) | Reach::TopK(w) => (i + 1).min(w),
            Reach::Chunk(c) => i % c + 1,
        };
        for r in [Reach::All, Reach::Window(5), Reach::Chunk(4), Reach::TopK(6), Reach::Chunk(1), Reach::Window(1)] {
            for k in 0..20u64 {
                for c in 1..20u64 {
                    let brute: u64 = (k..k + c).map(|i| attended(r, i)).sum();
                    assert_eq!(r.pairs_of_chunk(k as f64, c as f64), brute as f64, "{r:?} k {k} c {c}");
                    // Positions read: the union for dense reaches; a top-K query past K gathers K.
                    let read = match r {
                        Reach::TopK(top) => {
                            let dense: std::collections::BTreeSet<u64> =
                                (k..k + c).filter(|i| *i < top).flat_map(|i| 0..=i).collect();
                            dense.len() as u64 + (k..k + c).filter(|i| i + 1 > top).count() as u64 * top
                        }
                        _ => {
                            let seen: std::collections::BTreeSet<u64> = (k..k + c)
                                .flat_map(|i| {
                                    let n = attended(r, i);
                                    (i + 1 - n)..=i
                                })
                                .collect();
                            seen.len() as u64
                        }
                    };
                    assert_eq!(r.positions_read(k as f64, c as f64), read as f64, "{r:?} k {k} c {c}");
                }
                assert_eq!(r.attended(k as f64 + 1.0), attended(r, k) as f64, "{r:?} at {k}");
            }
        }
    }

    /// Compressed entries against a query-by-query count: query at 0-based `i` sees
    /// `⌊(i+1)/r⌋` entries, a top-K query at most K; dense queries share their reads, later
    /// ones gather K each.
    #[test]
    fn compressed_pairs_and_reads_match_a_query_by_query_count() {
        for r in [1u64, 4, 5, 128] {
            for top in [None, Some(3u64), Some(1)] {
                for k in 0..40u64 {
                    for c in 1..40u64 {
                        let seen = |i: u64| (i + 1) / r;
                        let capped = |i: u64| top.map_or(seen(i), |t| seen(i).min(t));
                        let pairs: u64 = (k..k + c).map(capped).sum();
                        let dense: Vec<u64> = (k..k + c).filter(|&i| top.is_none_or(|t| seen(i) <= t)).collect();
                        let read = dense.last().map_or(0, |&i| seen(i)) + (c - dense.len() as u64) * top.unwrap_or(0);
                        let reach = top.map_or(Reach::All, Reach::TopK);
                        let g = Chunk { new_tokens: c, cached_tokens: k }.compressed_geometry(r, reach);
                        assert_eq!(g.pairs, pairs as f64, "r {r} top {top:?} k {k} c {c}");
                        assert_eq!(g.kv_positions_read, read as f64, "r {r} top {top:?} k {k} c {c}");
                        assert_eq!(g.kv_positions_written, ((k + c) / r - k / r) as f64);
                    }
                }
            }
        }
        // Large contexts are exact (no difference of large sums): a decode at 2⁴⁰ sees ⌊(2⁴⁰+1)/4⌋.
        let big = (1u64 << 40) as f64;
        assert_eq!(compressed_pairs(big, 1.0, 4.0), ((big + 1.0) / 4.0).floor());
    }

    #[test]
    fn a_mix_of_equal_contexts_is_the_uniform_batch() {
        let mix = Contexts::mix([ContextBucket { tokens: 2048, count: 3 }, ContextBucket { tokens: 2048, count: 5 }])
            .unwrap();
        assert_eq!(mix, Contexts::uniform(8, 2048).unwrap());
        let e = Contexts::mix([]).unwrap_err().to_string();
        assert_eq!(e, "invalid `contexts`: an empty list (at least one sequence)");
        let e = Contexts::mix([ContextBucket { tokens: 5, count: 0 }]).unwrap_err().to_string();
        assert!(e.contains("count 0"), "{e}");
        assert!(Contexts::uniform(0, 5).is_err());
    }
}
