//! The inputs of one GEMM as text — the `tile` command's flags and the explorer's query keys
//! alike — and their one resolver, as [`crate::ScenarioRequest`] is for a step.
//!
//! ```
//! use llm_ledger_core::tiling::GemmRequest;
//! let req = GemmRequest { m: Some("2048".into()), n: Some("14336".into()), k: Some("4096".into()), ..Default::default() };
//! let g = req.resolve().unwrap();
//! assert_eq!((g.shape.m, g.shape.n, g.shape.k), (2048, 14336, 4096));
//! assert!(g.forced.is_none());
//! ```

use super::candidates::TileRequest;
use super::gemm::GemmShape;
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::roofline::Efficiency;
use crate::scenario::{parse_f64, parse_u64};
use serde::Deserialize;

/// One GEMM `C[M×N] = A[M×K]·B[K×N]` and how to tile it, as text. The GPU is resolved by the
/// caller (a catalogue name, or a file on the CLI).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmRequest {
    /// Rows of A and C (tokens). Required.
    pub m: Option<String>,
    /// Columns of B and C (output features). Required.
    pub n: Option<String>,
    /// Reduction dimension (input features). Required.
    pub k: Option<String>,
    /// GPU name; resolved by the caller (default `h100-sxm`).
    pub gpu: Option<String>,
    /// A forced tile `BMxBNxBK[xSTAGES]` (default: the candidate with the lowest modelled time).
    pub tile: Option<String>,
    /// Storage of B, the weights (default bf16).
    pub weights: Option<String>,
    /// Storage of A, the activations (default bf16).
    pub activations: Option<String>,
    /// Storage of C, the output (default: the activations' precision).
    pub output: Option<String>,
    /// Achieved fraction of peak compute (default: [`crate::roofline::Efficiency::default`]).
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth (default: [`crate::roofline::Efficiency::default`]).
    pub bandwidth_efficiency: Option<String>,
}

/// A resolved GEMM request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmInputs {
    /// The GEMM (one instance).
    pub shape: GemmShape,
    /// The tile the user forced, if any.
    pub forced: Option<TileRequest>,
    /// Achieved fractions of peak.
    pub efficiency: Efficiency,
}

impl GemmRequest {
    /// Validate every field but the GPU; errors name the field.
    pub fn resolve(&self) -> Result<GemmInputs> {
        let prec = |field: &str, v: &Option<String>, default: Precision| -> Result<Precision> {
            Ok(v.as_deref().map(|s| Precision::parse_field(field, s)).transpose()?.unwrap_or(default))
        };
        let activations = prec("activations", &self.activations, Precision::Bf16)?;
        let weights = prec("weights", &self.weights, Precision::Bf16)?;
        let output = prec("output", &self.output, activations)?;
        let dim = |field: &str, v: &Option<String>| -> Result<u64> {
            let v = v
                .as_deref()
                .ok_or_else(|| Error::MissingField { field: field.into(), context: "a GEMM (m, n and k)".into() })?;
            parse_u64(field, v)
        };
        let (m, n, k) = (dim("m", &self.m)?, dim("n", &self.n)?, dim("k", &self.k)?);
        let shape = GemmShape::new(m, n, k, 1, activations, weights, output, false)?;
        let forced: Option<TileRequest> = self.tile.as_deref().map(str::parse).transpose()?;
        let eff = |field: &str, v: &Option<String>, d: f64| -> Result<f64> {
            Ok(v.as_deref().map(|s| parse_f64(field, s)).transpose()?.unwrap_or(d))
        };
        let d = Efficiency::default();
        let efficiency = Efficiency::new(
            eff("compute_efficiency", &self.compute_efficiency, d.compute)?,
            eff("bandwidth_efficiency", &self.bandwidth_efficiency, d.bandwidth)?,
        )?;
        Ok(GemmInputs { shape, forced, efficiency })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(pairs: &[(&str, &str)]) -> GemmRequest {
        let mut r = GemmRequest::default();
        for (k, v) in pairs {
            let v = Some(v.to_string());
            match *k {
                "m" => r.m = v,
                "n" => r.n = v,
                "k" => r.k = v,
                "tile" => r.tile = v,
                "weights" => r.weights = v,
                "activations" => r.activations = v,
                "output" => r.output = v,
                "compute_efficiency" => r.compute_efficiency = v,
                _ => panic!("{k}"),
            }
        }
        r
    }

    #[test]
    fn defaults_are_bf16_and_the_ledgers_efficiencies() {
        let g = req(&[("m", "1"), ("n", "4096"), ("k", "4096")]).resolve().unwrap();
        assert_eq!((g.shape.a, g.shape.b, g.shape.c), (Precision::Bf16, Precision::Bf16, Precision::Bf16));
        assert_eq!(g.shape.batch, 1);
        assert_eq!(g.efficiency, Efficiency::default());
        // The output follows the activations unless given.
        let g =
            req(&[("m", "1"), ("n", "8"), ("k", "8"), ("activations", "fp8"), ("weights", "int4")]).resolve().unwrap();
        assert_eq!((g.shape.a, g.shape.b, g.shape.c), (Precision::Fp8, Precision::Int4, Precision::Fp8));
        let g = req(&[("m", "1"), ("n", "8"), ("k", "8"), ("tile", "64x64x64")]).resolve().unwrap();
        assert!(g.forced.is_some());
    }

    #[test]
    fn bad_fields_are_named() {
        let msg = |p: &[(&str, &str)]| req(p).resolve().unwrap_err().to_string();
        assert_eq!(msg(&[("n", "8"), ("k", "8")]), "missing required field `m` for a GEMM (m, n and k)");
        assert_eq!(
            msg(&[("m", "0"), ("n", "8"), ("k", "8")]),
            "invalid `m`: 0 (an integer from 1 to 1,099,511,627,776)"
        );
        assert!(msg(&[("m", "1"), ("n", "8"), ("k", "8"), ("weights", "int3")])
            .starts_with("unknown precision for `weights`"));
        assert!(msg(&[("m", "1"), ("n", "8"), ("k", "8"), ("tile", "big")]).starts_with("invalid `tile`"));
        assert!(msg(&[("m", "1"), ("n", "8"), ("k", "8"), ("compute_efficiency", "2")])
            .starts_with("invalid `compute_efficiency`"));
    }
}
