//! `llm-ledger tile`.

use crate::cli::TileArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::scenario::{parse_f64, parse_u64};
use llm_ledger_core::tiling::{explore_gemm, GemmShape, TileRequest};
use llm_ledger_core::{Efficiency, Precision};
use llm_ledger_report::{Format, Report, TileReport};

/// Tile one GEMM on one GPU.
pub fn run(args: &TileArgs) -> Result<String> {
    let format: Format = args.format.parse()?;
    let prec = |field: &str, v: &Option<String>, default: Precision| -> Result<Precision> {
        Ok(v.as_deref().map(|s| Precision::parse_field(field, s)).transpose()?.unwrap_or(default))
    };
    let activations = prec("activations", &args.activations, Precision::Bf16)?;
    let weights = prec("weights", &args.weights, Precision::Bf16)?;
    let output = prec("output", &args.output, activations)?;
    let (m, n, k) = (parse_u64("m", &args.m)?, parse_u64("n", &args.n)?, parse_u64("k", &args.k)?);
    let shape = GemmShape::new(m, n, k, 1, activations, weights, output, false)?;
    let forced: Option<TileRequest> = args.tile.as_deref().map(str::parse).transpose()?;
    let eff = |field: &str, v: &Option<String>, d: f64| -> Result<f64> {
        Ok(v.as_deref().map(|s| parse_f64(field, s)).transpose()?.unwrap_or(d))
    };
    let eff = Efficiency::new(
        eff("compute_efficiency", &args.compute_efficiency, 0.6)?,
        eff("bandwidth_efficiency", &args.bandwidth_efficiency, 0.8)?,
    )?;
    let gpu = inputs::gpu(args.gpu.as_deref(), args.gpu_file.as_deref())?;
    let e = explore_gemm(&shape, &gpu, eff, forced.as_ref())?;
    Ok(TileReport::new(&e, &gpu, eff).render(format))
}
