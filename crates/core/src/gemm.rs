//! The cost of one GEMM, in one place: the ledger's operators ([`crate::ops`]) and the tile-level
//! model ([`crate::tiling::gemm`]) both count FLOPs and bytes through [`Gemm`].
//!
//! A GEMM here is `instances` independent products `[m×k]·[k×n]`, each with its own weight matrix
//! (1 for a dense projection; the experts touched for MoE; the heads for MLA's absorption).

use crate::precision::Precision;
use serde::Serialize;

/// Shape and operand precisions of a GEMM operator: `instances` independent products of
/// `[m×k]·[k×n]`, each with its own weight matrix.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Gemm {
    /// Rows (tokens) per instance; fractional for the average tokens per expert.
    pub m: f64,
    /// Output columns.
    pub n: u64,
    /// Reduction dimension.
    pub k: u64,
    /// Weight storage.
    pub weight: Precision,
    /// Activation storage.
    pub activation: Precision,
    /// Independent weight matrices.
    pub instances: f64,
    /// A bias vector is added to each output (`m·n` FLOPs and `n` parameters per instance).
    pub bias: bool,
}

impl Gemm {
    /// One `[m×k]·[k×n]` product without bias: weights in `weight`, activations in `activation`.
    pub fn new(m: f64, n: u64, k: u64, weight: Precision, activation: Precision) -> Gemm {
        Gemm { m, n, k, weight, activation, instances: 1.0, bias: false }
    }

    /// The same GEMM with (or without) a bias vector on its output.
    pub fn with_bias(self, bias: bool) -> Gemm {
        Gemm { bias, ..self }
    }

    /// The rows split evenly over `instances` independent weight matrices (the experts touched,
    /// the heads of MLA's absorption): `m` becomes rows per instance. FLOPs are unchanged;
    /// weights are read once per instance.
    pub fn split(self, instances: f64) -> Gemm {
        Gemm { m: self.m / instances.max(1e-300), instances, ..self }
    }

    /// FLOPs of the product: `instances · (2·m·n·k + m·n if bias)` — a multiply and an add per
    /// (row, column, reduction) triple, and one add per output for the bias.
    pub fn flops(&self) -> f64 {
        gemm_flops(self.m, self.n as f64, self.k as f64, self.instances, self.bias)
    }

    /// Weight bytes, each matrix read once: `instances · (k·n·w + n·w₁₆ if bias)`, `w` the weight
    /// storage and `w₁₆` its unquantised storage (biases are not quantised).
    pub fn weight_bytes(&self) -> f64 {
        let (n, k) = (self.n as f64, self.k as f64);
        let bias = if self.bias { n * self.weight.unquantised().bytes() } else { 0.0 };
        self.instances * (k * n * self.weight.bytes() + bias)
    }

    /// Activation bytes, input read and output written once: `(M·k + M·n)·a` with `M = instances·m`
    /// the rows of all instances and `a` the activation storage.
    pub fn activation_bytes(&self) -> f64 {
        self.input_bytes() + self.output_bytes()
    }

    /// The input read: `M·k·a` (`M = instances·m`).
    pub fn input_bytes(&self) -> f64 {
        self.instances * self.m * self.k as f64 * self.activation.bytes()
    }

    /// The output written: `M·n·a` (`M = instances·m`).
    pub fn output_bytes(&self) -> f64 {
        self.instances * self.m * self.n as f64 * self.activation.bytes()
    }
}

/// `instances · (2·m·n·k + m·n if bias)`: the one GEMM FLOP formula ([`Gemm::flops`]), taken on
/// `f64` sizes so that tiles (padded or partial) count with the same rule.
pub fn gemm_flops(m: f64, n: f64, k: f64, instances: f64, bias: bool) -> f64 {
    let bias = if bias { m * n } else { 0.0 };
    instances * (2.0 * m * k * n + bias)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: f64, n: u64, k: u64, instances: f64, bias: bool) -> Gemm {
        Gemm::new(m * instances, n, k, Precision::Fp8, Precision::Bf16).with_bias(bias).split(instances)
    }

    #[test]
    fn flops_and_bytes_match_hand_arithmetic() {
        // [3×5]·[5×7]: 3·7 outputs, 5 multiply-adds each = 210 FLOPs; a bias adds 21.
        assert_eq!(g(3.0, 7, 5, 1.0, false).flops(), 210.0);
        assert_eq!(g(3.0, 7, 5, 1.0, true).flops(), 231.0);
        // Four experts of 2 rows each: 4 · 2·2·7·5 = 560.
        assert_eq!(g(2.0, 7, 5, 4.0, false).flops(), 560.0);
        // fp8 weights (1 B), bf16 bias (2 B): 4 · (35 + 7·2) = 196.
        assert_eq!(g(2.0, 7, 5, 4.0, true).weight_bytes(), 196.0);
        // bf16 activations: 8 rows · (5 in + 7 out) · 2 B = 192.
        assert_eq!(g(2.0, 7, 5, 4.0, false).activation_bytes(), 192.0);
        // … of which 8 · 5 · 2 = 80 read and 8 · 7 · 2 = 112 written.
        assert_eq!((g(2.0, 7, 5, 4.0, false).input_bytes(), g(2.0, 7, 5, 4.0, false).output_bytes()), (80.0, 112.0));
        assert_eq!(gemm_flops(3.0, 7.0, 5.0, 1.0, true), 231.0);
    }
}
