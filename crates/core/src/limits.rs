//! Bounds on user input. Values outside them are refused with a message naming the field, so no
//! computation ever sees a size that could overflow or hang. All FLOP and byte arithmetic is done in
//! `f64`, so products of in-range sizes (a 10¹²-token context squared is 10²⁴) stay finite.

/// Largest config/GPU/histogram file accepted (real `config.json` files are under 10 KB).
pub const MAX_INPUT_FILE_BYTES: usize = 4 << 20;

/// Largest model dimension (hidden, intermediate, head_dim, LoRA ranks …): 2²⁴.
pub const MAX_DIM: u64 = 1 << 24;

/// Largest vocabulary: 2²⁴ = 16,777,216 (real vocabularies are ≤ 262,208).
pub const MAX_VOCAB: u64 = 1 << 24;

/// Largest number of decoder layers.
pub const MAX_LAYERS: u64 = 4096;

/// Largest number of attention heads.
pub const MAX_HEADS: u64 = 1 << 16;

/// Largest number of routed experts.
pub const MAX_EXPERTS: u64 = 1 << 16;

/// Largest batch (sequences in one step).
pub const MAX_BATCH: u64 = 1 << 30;

/// Largest context or prompt length, tokens (≈1.1 × 10¹²).
pub const MAX_CONTEXT: u64 = 1 << 40;

/// Most buckets in a context histogram or per-sequence list.
pub const MAX_CONTEXT_BUCKETS: usize = 1 << 20;
