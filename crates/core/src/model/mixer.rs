//! The token mixers of 2025–2026 beside softmax attention: which cached positions a query reads
//! ([`Reach`]: windows, chunks, an indexer's top-k), the lightning indexer of sparse attention
//! ([`Indexer`]), and the recurrent mixers that keep a constant-size state per sequence instead
//! of a KV cache that grows ([`RecurrentMixer`]: Gated DeltaNet, Kimi Delta Attention, Mamba-2).
//!
//! Parameter counts follow the checkpoints' tensors (a Linear `[in→out]` holds `in·out`
//! weights, `+out` with a bias); state sizes follow the engines' caches (vLLM's
//! `MambaStateShapeCalculator`, `vllm/model_executor/layers/mamba/mamba_utils.py`).

use crate::precision::Precision;
use serde::Serialize;

/// Which cached positions one query attends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "tokens", rename_all = "snake_case")]
pub enum Reach {
    /// Every earlier position and its own (full causal attention).
    All,
    /// The last `w` positions, its own included (sliding-window attention).
    Window(u64),
    /// The positions of its own chunk of `c`: the query at position `p` attends to
    /// `⌊p/c⌋·c … p` (Llama 4's chunked local attention, `attention_chunk_size`).
    Chunk(u64),
    /// The `k` positions an indexer selects from every cached one (sparse attention), or all of
    /// them while fewer are cached.
    TopK(u64),
}

impl Reach {
    /// Positions a sequence keeps cached for this layer when `tokens` have passed through it:
    /// a window or a chunk keeps at most its length (engines free the blocks behind it: vLLM's
    /// `SlidingWindowSpec` and `ChunkedLocalAttentionSpec`), full and sparse attention keep every
    /// position (an indexer selects from all of them).
    pub fn held(self, tokens: f64) -> f64 {
        match self {
            Reach::All | Reach::TopK(_) => tokens,
            Reach::Window(w) | Reach::Chunk(w) => tokens.min(w as f64),
        }
    }

    /// The sliding window, if this is one.
    pub fn window(self) -> Option<u64> {
        match self {
            Reach::Window(w) => Some(w),
            Reach::All | Reach::Chunk(_) | Reach::TopK(_) => None,
        }
    }

    /// Whether a query reads fewer positions than every earlier one (a window, a chunk, a
    /// top-k).
    pub fn is_bounded(self) -> bool {
        !matches!(self, Reach::All)
    }

    /// This reach held to at most `n` cached positions per query (the evict-or-sparsify lever):
    /// full attention becomes a window of `n` (an eviction policy keeps and reads `n` positions
    /// per sequence, as a sliding window does), a wider window or top-k narrows to `n`, and a
    /// chunk wider than `n` becomes a window of `n` (an upper bound: a query early in its chunk
    /// reads fewer). A reach already within `n` is unchanged.
    pub fn limited_to(self, n: u64) -> Reach {
        match self {
            Reach::All => Reach::Window(n),
            Reach::Window(w) => Reach::Window(w.min(n)),
            Reach::Chunk(c) if c <= n => Reach::Chunk(c),
            Reach::Chunk(_) => Reach::Window(n),
            Reach::TopK(k) => Reach::TopK(k.min(n)),
        }
    }

    /// In words, for tables: `full`, `window 4,096`, `chunk 8,192`, `top-2,048`.
    pub fn words(self) -> String {
        let n = |v: u64| crate::error::grouped(v);
        match self {
            Reach::All => "full".into(),
            Reach::Window(w) => format!("window {}", n(w)),
            Reach::Chunk(c) => format!("chunk {}", n(c)),
            Reach::TopK(k) => format!("top-{}", n(k)),
        }
    }
}

/// Where a sparse-attention indexer's queries come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexerQuery {
    /// Projected from the layer's query latent of this rank (DeepSeek Sparse Attention: `wq_b`
    /// reads MLA's normalised `q_a` output).
    QueryLatent(u64),
    /// Projected from the layer's normalised input (hidden size).
    Hidden,
}

/// How an indexer stores the key of each cached position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexerKeys {
    /// 8-bit values with one fp32 scale per 128 (DeepSeek Sparse Attention; vLLM's
    /// `DeepseekV32IndexerCache` and SGLang's `index_k_with_scale_buffer`: `d + ⌈d/128⌉·4` bytes).
    Fp8Scaled,
    /// 16-bit values (MiniMax-M3's index-key cache at vLLM's default `indexer_kv_dtype`: `2·d`).
    Bf16,
}

/// A lightning indexer: a few small heads score every cached position against each query, and
/// the attention that follows reads only the `top_k` best (DeepSeek Sparse Attention,
/// DeepSeek-V3.2-Exp technical report §2.1: scores `Σ_h w_h·ReLU(q_h·k)`; MiniMax-M3's
/// block-sparse attention, whose per-position scores are max-pooled over blocks of `block`
/// positions before the top blocks are chosen). Its keys are a cache of their own
/// ([`IndexerKeys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Indexer {
    /// Indexer heads `h_I` (`index_n_heads`, `sparse_num_index_heads`).
    pub heads: u64,
    /// Indexer head dimension `d_I` (`index_head_dim`, `sparse_index_dim`).
    pub head_dim: u64,
    /// Positions the attention reads per query, at most (`index_topk`; a block-sparse indexer's
    /// `sparse_topk_blocks × sparse_block_size`).
    pub top_k: u64,
    /// Positions per selected unit: 1 (DSA selects tokens) or the block a block-sparse indexer
    /// selects whole.
    pub block: u64,
    /// Where its queries come from.
    pub query: IndexerQuery,
    /// How its keys are cached.
    pub keys: IndexerKeys,
    /// Its key projection `H→d_I` and the norm after it (DSA: `wk` and a LayerNorm; MiniMax-M3:
    /// `index_k_proj` and an RMSNorm); `None` when its keys come from elsewhere (DeepSeek-V4's
    /// indexer compresses its own, [`CompressedAttention`]).
    pub key_proj: Option<super::NormKind>,
    /// Per-head weights of the scores projected from the hidden state (`weights_proj`, `H·h_I`).
    pub head_weights: bool,
    /// An RMSNorm over each index query head (MiniMax-M3's `index_q_norm`, `d_I`).
    pub query_norm: bool,
}

/// Bytes of one fp32 scale of an 8-bit indexer key.
const INDEXER_SCALE_BYTES: f64 = 4.0;
/// Values sharing one scale in an 8-bit indexer key.
const INDEXER_SCALE_GROUP: u64 = 128;

impl Indexer {
    /// Parameters: the query projection `r_q·h_I·d_I` (or `H·h_I·d_I`), the key projection
    /// `H·d_I` with its norm, the per-head weights `H·h_I`, the query norm `d_I`
    /// (DeepSeek-V3.2-Exp `inference/model.py` `Indexer`: `wq_b`, `wk`, `k_norm`,
    /// `weights_proj`; MiniMax-M3: `index_q_proj`, `index_k_proj`, `index_q_norm`,
    /// `index_k_norm`).
    pub fn params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let norms = self.key_proj.map_or(0, |n| w(n.params(self.head_dim)))
            + if self.query_norm { w(self.head_dim) } else { 0 };
        self.matrix_params(hidden) + norms
    }

    /// Of [`Self::params`], the matrix weights (the rest are its norms' vectors).
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let q_in = match self.query {
            IndexerQuery::QueryLatent(r) => r,
            IndexerQuery::Hidden => hidden,
        };
        let keys = if self.key_proj.is_some() { w(hidden) * w(self.head_dim) } else { 0 };
        let weights = if self.head_weights { w(hidden) * w(self.heads) } else { 0 };
        w(q_in) * w(self.heads) * w(self.head_dim) + keys + weights
    }

    /// Cache bytes of one indexer key ([`IndexerKeys`]): `d_I + ⌈d_I/128⌉·4` at 8 bits with
    /// their scales, `2·d_I` at 16 bits.
    pub fn key_bytes(&self) -> f64 {
        match self.keys {
            IndexerKeys::Fp8Scaled => {
                self.head_dim as f64 + self.head_dim.div_ceil(INDEXER_SCALE_GROUP) as f64 * INDEXER_SCALE_BYTES
            }
            IndexerKeys::Bf16 => 2.0 * self.head_dim as f64,
        }
    }
}

/// DeepSeek-V4's attention: one 512-wide latent per position that is both key and value
/// (multi-query, `num_key_value_heads` 1), read from three places — the last `window` raw
/// positions (every layer), and compressed entries that pool every `ratio` positions into one
/// (`compress_ratios`): all of them on a heavily compressed layer (ratio 128, HCA), the
/// indexer's top-k of them on a compressed sparse layer (ratio 4, CSA, overlapping windows);
/// ratio 0 is the window alone. Queries come through a low-rank `q_a`/`q_b`, the output through
/// a grouped low-rank `o_a` (per group of heads) and `o_b` (DeepSeek-V4 model card; vLLM
/// `DeepseekV4Attention`, `DeepseekCompressor`, `DeepseekV4Indexer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CompressedAttention {
    /// Query heads `n_h`.
    pub heads: u64,
    /// Width of the shared key/value latent per position (`head_dim`, 512).
    pub head_dim: u64,
    /// Of it, the rotary part (`qk_rope_head_dim`).
    pub rope_dim: u64,
    /// Rank of the query down-projection (`q_lora_rank`).
    pub q_lora_rank: u64,
    /// Groups of heads of the output's low-rank first stage (`o_groups`).
    pub o_groups: u64,
    /// Rank of each group's output projection (`o_lora_rank`).
    pub o_lora_rank: u64,
    /// Raw positions every query reads (`sliding_window`).
    pub window: u64,
    /// Positions pooled into one compressed entry; 0: the window alone.
    pub ratio: u64,
    /// The indexer that selects compressed entries (ratio-4 layers).
    pub indexer: Option<Indexer>,
}

/// fp32 bytes of a compressor's pooling state per value.
const COMPRESSOR_STATE_BYTES: f64 = 4.0;

impl CompressedAttention {
    /// Overlapping windows: a ratio-4 compressor pools two windows of candidates per entry
    /// (`coff = 2`), a ratio-128 one does not (vLLM `DeepseekCompressor`).
    pub fn overlap(&self) -> u64 {
        if self.ratio == 4 {
            2
        } else {
            1
        }
    }

    /// Columns of the compressor's projections from the hidden state (`wkv` and `wgate`,
    /// `2·coff·d` each … together), 0 without compression.
    pub fn compressor_width(&self) -> u64 {
        if self.ratio == 0 {
            0
        } else {
            2 * self.overlap() * self.head_dim
        }
    }

    /// Columns of the indexer's compressor (`wkv` and `wgate` of `2·d_I` each, ratio 4).
    pub fn indexer_compressor_width(&self) -> u64 {
        self.indexer.map_or(0, |i| 4 * i.head_dim)
    }

    /// The matrix weights: `wq_a` `H·r_q`, `wkv` `H·d`, `wq_b` `r_q·n_h·d`, `wo_a` `n_h·d·r_o`
    /// (one `n_h·d/G × r_o` matrix per group), `wo_b` `G·r_o·H`, the compressors
    /// `H·compressor_width` and the indexer's `wq_b` and `weights_proj` (vLLM
    /// `DeepseekV4Attention`; DeepSeek-V4 parameters as the research notes count them).
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let h = w(hidden);
        let (nh, d) = (w(self.heads), w(self.head_dim));
        h * w(self.q_lora_rank)
            + h * d
            + w(self.q_lora_rank) * nh * d
            + nh * d * w(self.o_lora_rank)
            + w(self.o_groups) * w(self.o_lora_rank) * h
            + h * w(self.compressor_width() + self.indexer_compressor_width())
            + self.indexer.map_or(0, |i| i.matrix_params(hidden))
    }

    /// Every parameter: the matrices, the q and kv norms (`r_q + d`), the sinks (`n_h`), each
    /// compressor's positional bias `ratio × coff·d` and norm `d` (the indexer's `4 × 2·d_I` and
    /// `d_I`).
    pub fn params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let compressor =
            if self.ratio == 0 { 0 } else { w(self.ratio) * w(self.overlap() * self.head_dim) + w(self.head_dim) };
        let indexer = self.indexer.map_or(0, |i| 4 * 2 * w(i.head_dim) + w(i.head_dim));
        self.matrix_params(hidden) + w(self.q_lora_rank) + w(self.head_dim) + w(self.heads) + compressor + indexer
    }

    /// Cache bytes a sequence of `tokens` positions holds in this layer: the window's raw
    /// entries `min(tokens, window)·d`, the compressed entries `⌊tokens/ratio⌋·d` (both at
    /// `kv`), the indexer's keys of every 4 positions, and the compressors' fp32 pooling state
    /// (`coff·ratio` rows of `2·coff·d` values; the indexer's `8` rows of `4·d_I`).
    pub fn cache_bytes(&self, tokens: f64, kv: crate::precision::Precision) -> f64 {
        let d = self.head_dim as f64;
        let window = tokens.min(self.window as f64) * d * kv.bytes();
        window + self.growing_bytes(tokens, kv) + self.state_bytes()
    }

    /// The part of [`Self::cache_bytes`] that grows with the sequence: compressed entries and
    /// indexer keys.
    fn growing_bytes(&self, tokens: f64, kv: crate::precision::Precision) -> f64 {
        if self.ratio == 0 {
            return 0.0;
        }
        let entries = (tokens / self.ratio as f64).floor() * self.head_dim as f64 * kv.bytes();
        let keys = self.indexer.map_or(0.0, |i| (tokens / 4.0).floor() * i.key_bytes());
        entries + keys
    }

    /// Bytes one more position adds to the cache, on average: `d·kv/ratio` and the indexer's key
    /// every 4 positions (0 for a window-only layer).
    pub fn bytes_per_token(&self, kv: crate::precision::Precision) -> f64 {
        if self.ratio == 0 {
            return 0.0;
        }
        self.head_dim as f64 * kv.bytes() / self.ratio as f64 + self.indexer.map_or(0.0, |i| i.key_bytes() / 4.0)
    }

    /// The compressors' fp32 pooling state per sequence, bytes.
    pub fn state_bytes(&self) -> f64 {
        if self.ratio == 0 {
            return 0.0;
        }
        let coff = self.overlap() as f64;
        let main = coff * self.ratio as f64 * 2.0 * coff * self.head_dim as f64;
        let indexer = self.indexer.map_or(0.0, |i| 8.0 * 4.0 * i.head_dim as f64);
        (main + indexer) * COMPRESSOR_STATE_BYTES
    }
}

/// The update rule of a recurrent mixer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recurrence {
    /// Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024): a scalar decay per head and the delta
    /// rule, `S ← α·S − β·(α·S·k − v)·kᵀ` (Qwen3-Next, Qwen3.5/3.6).
    GatedDelta,
    /// Kimi Delta Attention (Kimi Linear, Moonshot 2025): the delta rule with a decay per key
    /// channel and a low-rank output gate.
    KimiDelta,
    /// Mamba-2's state-space duality (Dao & Gu 2024): `h ← exp(Δ·A)·h + Δ·x·Bᵀ`, `y = h·C + D·x`
    /// (Nemotron-H, Nemotron 3).
    Mamba2,
}

impl Recurrence {
    /// The rule's name, for tables and notes.
    pub fn name(self) -> &'static str {
        match self {
            Recurrence::GatedDelta => "Gated DeltaNet",
            Recurrence::KimiDelta => "Kimi Delta Attention",
            Recurrence::Mamba2 => "Mamba-2",
        }
    }
}

/// A recurrent (linear-attention or state-space) token mixer: a constant-size state per
/// sequence instead of a KV cache. Gated DeltaNet, KDA and Mamba-2 share one shape: queries and
/// keys on `key_heads` heads of `key_head_dim` (Mamba-2: C and B on `n_groups` groups of
/// `ssm_state_size`), values on `value_heads` heads of `value_head_dim` (Mamba-2: x on
/// `mamba_num_heads` heads of `mamba_head_dim`), and a state of `key_head_dim × value_head_dim`
/// per value head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct RecurrentMixer {
    /// The update rule.
    pub rule: Recurrence,
    /// Query/key heads `h_k` (Mamba-2: groups of B and C).
    pub key_heads: u64,
    /// Key dimension per head `d_k` (Mamba-2: the state size `N`).
    pub key_head_dim: u64,
    /// Value heads `h_v` = state heads (KDA: as many as key heads).
    pub value_heads: u64,
    /// Value dimension per head `d_v` (Mamba-2: the head dimension `P`).
    pub value_head_dim: u64,
    /// Taps of the short causal convolution `K` (`linear_conv_kernel_dim`, `conv_kernel`,
    /// `short_conv_kernel_size`).
    pub conv_kernel: u64,
    /// The convolution has a bias (Mamba-2's `use_conv_bias`).
    pub conv_bias: bool,
    /// The input and output projections have biases (Mamba-2's `mamba_proj_bias` / `use_bias`).
    pub proj_bias: bool,
    /// Storage of the recurrent state in the engine's cache (`mamba_ssm_dtype`,
    /// `mamba_ssm_cache_dtype`; fp32 unless the config says otherwise).
    pub state: Precision,
    /// Tokens per chunk of the chunked prefill algorithm (FLA's 64 for the delta rules,
    /// Mamba-2's `chunk_size`).
    pub chunk: u64,
    /// KDA's output gate through a bottleneck of this rank (Kimi Linear's `g_a_proj`,
    /// `g_b_proj`); `None`: full rank, projected with the inputs (Kimi-K3's
    /// `use_full_rank_gate`, and the other rules' gates).
    pub gate_rank: Option<u64>,
}

impl RecurrentMixer {
    /// Width of all query/key heads `h_k·d_k`.
    pub fn key_dim(&self) -> u64 {
        self.key_heads * self.key_head_dim
    }

    /// Width of all value heads `h_v·d_v` (Mamba-2's `d_inner`).
    pub fn value_dim(&self) -> u64 {
        self.value_heads * self.value_head_dim
    }

    /// Channels of the short convolution: q, k and v (`2·h_k·d_k + h_v·d_v`; Mamba-2: x, B and C).
    pub fn conv_channels(&self) -> u64 {
        2 * self.key_dim() + self.value_dim()
    }

    /// Output columns of the input projection from the hidden state (the engines fuse the
    /// checkpoint's projections of the same input into one GEMM):
    ///
    /// * Gated DeltaNet: q, k, v, the output gate z (`h_v·d_v`), and β and α per value head
    ///   (`in_proj_qkvz` + `in_proj_ba`): `2·h_k·d_k + 2·h_v·d_v + 2·h_v`;
    /// * KDA: q, k, v (`q_proj`, `k_proj`, `v_proj`), β per head (`b_proj`), the decay's
    ///   bottleneck `f_a` (`d_k`) and the output gate (`g_proj`, `h·d_v`) or its bottleneck
    ///   (`g_a`, rank `r`): `2·h·d_k + h·d_v + h + d_k + (h·d_v | r)` (vLLM's
    ///   `in_proj_qkvgfab`);
    /// * Mamba-2: z, x, B, C and Δ per head (`in_proj`): `2·h_v·d_v + 2·h_k·d_k + h_v`.
    pub fn in_proj_width(&self) -> u64 {
        match self.rule {
            Recurrence::GatedDelta => 2 * self.key_dim() + 2 * self.value_dim() + 2 * self.value_heads,
            Recurrence::KimiDelta => {
                2 * self.key_dim()
                    + self.value_dim()
                    + self.value_heads
                    + self.key_head_dim
                    + self.gate_rank.unwrap_or(self.value_dim())
            }
            Recurrence::Mamba2 => 2 * self.value_dim() + 2 * self.key_dim() + self.value_heads,
        }
    }

    /// KDA's expansions out of its bottlenecks, as `(rank, output width)` GEMMs: the
    /// per-channel decay `f_b: d_k → h·d_k`, and a low-rank output gate `g_b: r → h·d_v` (Kimi
    /// Linear, `modeling_kimi.py` `KimiDeltaAttention`). None for the other rules (their gates
    /// come out of `in_proj`).
    pub fn gate_expansions(&self) -> Vec<(u64, u64)> {
        match self.rule {
            Recurrence::KimiDelta => {
                let mut v = vec![(self.key_head_dim, self.key_dim())];
                v.extend(self.gate_rank.map(|r| (r, self.value_dim())));
                v
            }
            Recurrence::GatedDelta | Recurrence::Mamba2 => Vec::new(),
        }
    }

    /// Parameters of the mixer:
    ///
    /// * the input projection `H·in_proj_width` (+ its bias), and KDA's gate expansions
    ///   `Σ rank·width`;
    /// * the depthwise convolution `conv_channels·K` (+ `conv_channels` with a bias);
    /// * per-head vectors: Gated DeltaNet `A_log`, `dt_bias` (`2·h_v`); KDA `A_log` per head and
    ///   `dt_bias` per key channel (`h + h·d_k`); Mamba-2 `A_log`, `dt_bias`, `D` (`3·h_v`);
    /// * the gated output norm: one scale per value channel of a head (`d_v`) for the delta rules,
    ///   over all of `d_inner` for Mamba-2 (`h_v·d_v`);
    /// * the output projection `h_v·d_v·H` (+ `H` with a bias).
    pub fn params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let h = w(hidden);
        let bias = |on: bool, n: u128| if on { n } else { 0 };
        let in_proj = h * w(self.in_proj_width()) + bias(self.proj_bias, w(self.in_proj_width()));
        let gates: u128 = self.gate_expansions().iter().map(|&(r, out)| w(r) * w(out)).sum();
        let conv = w(self.conv_channels()) * w(self.conv_kernel) + bias(self.conv_bias, w(self.conv_channels()));
        let vectors = match self.rule {
            Recurrence::GatedDelta => 2 * w(self.value_heads),
            Recurrence::KimiDelta => w(self.value_heads) + w(self.key_dim()),
            Recurrence::Mamba2 => 3 * w(self.value_heads),
        };
        let norm = match self.rule {
            Recurrence::GatedDelta | Recurrence::KimiDelta => w(self.value_head_dim),
            Recurrence::Mamba2 => w(self.value_dim()),
        };
        let out = w(self.value_dim()) * h + bias(self.proj_bias, h);
        in_proj + gates + conv + vectors + norm + out
    }

    /// Of [`Self::params`], the matrix weights (the projections; the rest are vectors, the
    /// convolution's taps and biases, kept at the unquantised precision).
    pub fn matrix_params(&self, hidden: u64) -> u128 {
        let w = u128::from;
        let h = w(hidden);
        let gates: u128 = self.gate_expansions().iter().map(|&(r, out)| w(r) * w(out)).sum();
        h * w(self.in_proj_width()) + gates + w(self.value_dim()) * h
    }

    /// Elements of the recurrent state one sequence holds: `h_v · d_k · d_v` (Mamba-2:
    /// `heads · head_dim · state_size`).
    pub fn state_elements(&self) -> u64 {
        self.value_heads * self.key_head_dim * self.value_head_dim
    }

    /// Elements of the convolution's state one sequence holds: the last `K − 1` inputs of
    /// every channel, `conv_channels · (K − 1)`.
    pub fn conv_state_elements(&self) -> u64 {
        self.conv_channels() * self.conv_kernel.saturating_sub(1)
    }

    /// Bytes one sequence holds for this layer, however long it is: the recurrent state at its
    /// precision plus the convolution's state at the activation precision `conv` (vLLM keeps the
    /// conv state in the model's dtype and the SSM state in `mamba_ssm_cache_dtype`). Qwen3.5-27B:
    /// `48 · 16,384 · 4 + 10,240 · 3 · 2` = 3.21 MB a layer, 154 MB over its 48 linear layers.
    pub fn state_bytes(&self, conv: Precision) -> f64 {
        self.state_elements() as f64 * self.state.bytes() + self.conv_state_elements() as f64 * conv.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen3.5-27B's Gated DeltaNet layer (config.json: 16 key heads and 48 value heads of 128,
    /// kernel 4, `mamba_ssm_dtype` float32).
    fn qwen35_27b() -> RecurrentMixer {
        RecurrentMixer {
            rule: Recurrence::GatedDelta,
            key_heads: 16,
            key_head_dim: 128,
            value_heads: 48,
            value_head_dim: 128,
            conv_kernel: 4,
            conv_bias: false,
            proj_bias: false,
            state: Precision::Fp32,
            chunk: 64,
            gate_rank: None,
        }
    }

    #[test]
    fn gated_deltanet_state_is_the_issue_s_154_mb_over_48_layers() {
        let m = qwen35_27b();
        // 48 heads × 128 × 128 fp32 = 3,145,728 B; conv 10,240 channels × 3 taps × 2 B = 61,440 B.
        assert_eq!(m.state_elements(), 48 * 128 * 128);
        assert_eq!(m.conv_channels(), 2 * 16 * 128 + 48 * 128);
        assert_eq!(m.state_bytes(Precision::Bf16), 3_145_728.0 + 61_440.0);
        let all = 48.0 * m.state_bytes(Precision::Bf16);
        assert!((all / 1e6 - 154.0).abs() < 0.5, "{all}");
    }

    #[test]
    fn gated_deltanet_parameters_by_tensor() {
        // in_proj_qkv 5120×10240, in_proj_z 5120×6144, in_proj_b/a 5120×48 each, conv1d
        // 10240×4, A_log and dt_bias 48 each, norm 128, out_proj 6144×5120.
        let h = 5120u128;
        let expected = h * 10240 + h * 6144 + 2 * h * 48 + 10240 * 4 + 2 * 48 + 128 + 6144 * h;
        assert_eq!(qwen35_27b().params(5120), expected);
        assert_eq!(qwen35_27b().matrix_params(5120), h * 10240 + h * 6144 + 2 * h * 48 + 6144 * h);
    }

    #[test]
    fn a_window_or_chunk_holds_at_most_its_length_and_top_k_holds_everything() {
        assert_eq!(Reach::Window(4096).held(10_000.0), 4096.0);
        assert_eq!(Reach::Chunk(8192).held(100.0), 100.0);
        assert_eq!(Reach::TopK(2048).held(65_536.0), 65_536.0);
        assert_eq!(Reach::All.held(7.0), 7.0);
        assert_eq!(Reach::Window(4).window(), Some(4));
        assert_eq!(Reach::TopK(4).window(), None);
    }

    #[test]
    fn dsa_indexer_keys_are_132_bytes_a_token() {
        let i = Indexer {
            heads: 64,
            head_dim: 128,
            top_k: 2048,
            block: 1,
            query: IndexerQuery::QueryLatent(1536),
            keys: IndexerKeys::Fp8Scaled,
            key_proj: Some(super::super::NormKind::Layer),
            head_weights: true,
            query_norm: false,
        };
        assert_eq!(i.key_bytes(), 132.0);
        // wq_b 1536×8192, wk 7168×128 + k_norm 256, weights_proj 7168×64.
        assert_eq!(i.params(7168), 1536 * 64 * 128 + 7168 * 128 + 256 + 7168 * 64);
        // MiniMax-M3's: 4 heads of 128 from the hidden state, one 128-wide key, bf16 keys.
        let m3 = Indexer {
            heads: 4,
            query: IndexerQuery::Hidden,
            keys: IndexerKeys::Bf16,
            key_proj: Some(super::super::NormKind::Rms),
            head_weights: false,
            query_norm: true,
            block: 128,
            ..i
        };
        assert_eq!(m3.key_bytes(), 256.0);
        assert_eq!(m3.params(6144), 6144 * 4 * 128 + 6144 * 128 + 128 + 128);
    }
}
