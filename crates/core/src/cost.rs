//! [`Cost`]: FLOPs and HBM bytes of some piece of work, split by what the bytes are, plus the bytes
//! a GPU moves over its link to other GPUs in a parallel deployment. Costs add: an operator's cost
//! summed over layers is a ledger row, rows sum to the step.

use serde::Serialize;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Mul};

/// FLOPs and HBM bytes, by category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Floating-point (or integer) operations; a multiply-add counts 2.
    pub flops: f64,
    /// Weight (parameter) bytes read.
    pub weight_bytes: f64,
    /// KV-cache bytes read.
    pub kv_read_bytes: f64,
    /// KV-cache bytes written.
    pub kv_write_bytes: f64,
    /// Bytes of per-sequence state read: a recurrent mixer's state and its convolution's (a
    /// cache of constant size per sequence, beside the KV cache).
    pub state_read_bytes: f64,
    /// Bytes of per-sequence state written back.
    pub state_write_bytes: f64,
    /// Activation bytes read and written (inputs, outputs, intermediates such as attention scores).
    pub activation_bytes: f64,
    /// Of `activation_bytes`, the bytes written: the operator's output tensor (a GEMM's `M·n·a`,
    /// an elementwise operator's one output tensor, the score matrix of unfused attention); the
    /// rest is read. The tensors of the layer's dataflow are these. Not part of the serialised
    /// documents (it is inside `activation_bytes`).
    #[serde(skip)]
    pub activation_written_bytes: f64,
    /// Bytes this GPU sends over a GPU-to-GPU link (per direction) in collectives and pipeline
    /// sends ([`crate::parallel`]). Not HBM traffic: not part of [`Cost::bytes`].
    pub link_bytes: f64,
}

impl Cost {
    /// Zero cost.
    pub const ZERO: Cost = Cost {
        flops: 0.0,
        weight_bytes: 0.0,
        kv_read_bytes: 0.0,
        kv_write_bytes: 0.0,
        state_read_bytes: 0.0,
        state_write_bytes: 0.0,
        activation_bytes: 0.0,
        activation_written_bytes: 0.0,
        link_bytes: 0.0,
    };

    /// Activation bytes read: `activation_bytes − activation_written_bytes` (the operator's inputs).
    pub fn activation_read_bytes(&self) -> f64 {
        self.activation_bytes - self.activation_written_bytes
    }

    /// KV-cache bytes read and written.
    pub fn kv_bytes(&self) -> f64 {
        self.kv_read_bytes + self.kv_write_bytes
    }

    /// Per-sequence state bytes read and written.
    pub fn state_bytes(&self) -> f64 {
        self.state_read_bytes + self.state_write_bytes
    }

    /// All HBM bytes (link bytes are not HBM traffic).
    pub fn bytes(&self) -> f64 {
        self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes + self.state_bytes() + self.activation_bytes
    }

    /// Arithmetic intensity, FLOP per byte; `None` when nothing moves (a fused, on-chip operator).
    pub fn intensity(&self) -> Option<f64> {
        let b = self.bytes();
        (b > 0.0).then(|| self.flops / b)
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            flops: self.flops + o.flops,
            weight_bytes: self.weight_bytes + o.weight_bytes,
            kv_read_bytes: self.kv_read_bytes + o.kv_read_bytes,
            kv_write_bytes: self.kv_write_bytes + o.kv_write_bytes,
            state_read_bytes: self.state_read_bytes + o.state_read_bytes,
            state_write_bytes: self.state_write_bytes + o.state_write_bytes,
            activation_bytes: self.activation_bytes + o.activation_bytes,
            activation_written_bytes: self.activation_written_bytes + o.activation_written_bytes,
            link_bytes: self.link_bytes + o.link_bytes,
        }
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        *self = *self + o;
    }
}

impl Mul<f64> for Cost {
    type Output = Cost;
    fn mul(self, k: f64) -> Cost {
        Cost {
            flops: self.flops * k,
            weight_bytes: self.weight_bytes * k,
            kv_read_bytes: self.kv_read_bytes * k,
            kv_write_bytes: self.kv_write_bytes * k,
            state_read_bytes: self.state_read_bytes * k,
            state_write_bytes: self.state_write_bytes * k,
            activation_bytes: self.activation_bytes * k,
            activation_written_bytes: self.activation_written_bytes * k,
            link_bytes: self.link_bytes * k,
        }
    }
}

impl Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, Add::add)
    }
}

impl<'a> Sum<&'a Cost> for Cost {
    fn sum<I: Iterator<Item = &'a Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, |a, b| a + *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_add_field_by_field() {
        let a = Cost {
            flops: 1.0,
            weight_bytes: 2.0,
            kv_read_bytes: 3.0,
            kv_write_bytes: 4.0,
            state_read_bytes: 0.5,
            state_write_bytes: 1.5,
            activation_bytes: 5.0,
            activation_written_bytes: 2.0,
            link_bytes: 6.0,
        };
        let s: Cost = [a, a * 2.0].iter().sum();
        assert_eq!(s, a * 3.0);
        assert_eq!(s.bytes(), 3.0 * 16.0, "link bytes are not HBM bytes");
        assert_eq!(s.state_bytes(), 6.0);
        assert_eq!(s.link_bytes, 18.0);
        assert_eq!(s.kv_bytes(), 21.0);
        assert_eq!(a.intensity(), Some(1.0 / 16.0));
        assert_eq!(Cost::ZERO.intensity(), None);
    }
}
