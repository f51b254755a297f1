//! FLOPs per element of the operators that run on the vector units: the counting conventions every
//! operator ([`crate::ops`]) and every activation ([`crate::model::Activation`]) uses, stated once.
//! A leaf: it imports nothing.
//!
//! These are conventions, not measurements: one FLOP per arithmetic step on an element, an
//! exponential or reciprocal counted as one. They matter only for the small elementwise rows; the
//! GEMM and attention FLOPs are exact counts ([`crate::gemm::Gemm::flops`]).

/// RMSNorm: square, accumulate, normalise, scale = 4 FLOPs per element.
pub const RMSNORM_FLOPS_PER_ELEMENT: f64 = 4.0;

/// LayerNorm: RMSNorm's 4 plus the mean, the subtraction and the shift = 7 FLOPs per element.
pub const LAYERNORM_FLOPS_PER_ELEMENT: f64 = 7.0;

/// Rotary position embedding: two multiplies and an add per rotated element = 3 FLOPs.
pub const ROPE_FLOPS_PER_ELEMENT: f64 = 3.0;

/// Residual add (and learned position add): 1 FLOP per element.
pub const RESIDUAL_FLOPS_PER_ELEMENT: f64 = 1.0;

/// Softmax: max, subtract, exp, sum, divide = 5 FLOPs per score.
pub const SOFTMAX_FLOPS_PER_SCORE: f64 = 5.0;

/// MoE combine: multiply by the routing weight and add = 2 FLOPs per (assignment, hidden element).
pub const EXPERT_COMBINE_FLOPS_PER_ELEMENT: f64 = 2.0;

/// Gated MLP: the product of the activated gate with the up projection = 1 FLOP per element, on
/// top of the activation's own.
pub const GATE_PRODUCT_FLOPS_PER_ELEMENT: f64 = 1.0;

/// ReLU: one compare = 1 FLOP per element.
pub const RELU_FLOPS_PER_ELEMENT: f64 = 1.0;

/// SiLU `x·σ(x)`: negate, exp, add, divide = 4 FLOPs per element.
pub const SILU_FLOPS_PER_ELEMENT: f64 = 4.0;

/// GELU (tanh approximation): cube, multiply-adds, tanh, scale = 8 FLOPs per element.
pub const GELU_FLOPS_PER_ELEMENT: f64 = 8.0;

/// Clamped SwiGLU (gpt-oss): SiLU-like with a scaled sigmoid, clamps and the `+1` on the up
/// branch = 7 FLOPs per element.
pub const CLAMPED_SWIGLU_FLOPS_PER_ELEMENT: f64 = 7.0;

/// Sigmoid gate on an output, `o·σ(g)`: the sigmoid's 4 and the product's 1 = 5 FLOPs per element
/// (Qwen3.5's gated attention, DeepSeek-V4's and Kimi's output gates).
pub const SIGMOID_GATE_FLOPS_PER_ELEMENT: f64 = 5.0;

/// Squared ReLU (Nemotron-H's `relu2`): the compare and the square = 2 FLOPs per element.
pub const RELU2_FLOPS_PER_ELEMENT: f64 = 2.0;

/// A gate derived per head or channel of a recurrent mixer (Gated DeltaNet's decay
/// `−exp(A)·softplus(a + dt_bias)` and `β = σ(b)`; Mamba-2's `Δ = softplus(dt + bias)` and
/// `exp(Δ·A)`): the exponentials, logs and products = 8 FLOPs per gate value.
pub const RECURRENT_GATE_FLOPS: f64 = 8.0;

/// The gated RMSNorm after a recurrent mixer, `RMSNorm(o)·SiLU(z)`: RMSNorm's 4, SiLU's 4 and
/// the product's 1 = 9 FLOPs per element.
pub const GATED_NORM_FLOPS_PER_ELEMENT: f64 = 9.0;

/// Top-k selection over a row of scores (a radix select: a few passes of compare-and-count) =
/// 2 FLOPs per score.
pub const TOP_K_FLOPS_PER_SCORE: f64 = 2.0;
