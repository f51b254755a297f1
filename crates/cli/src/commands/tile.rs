//! `llm-ledger tile`.

use crate::cli::TileArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::tiling::GemmRequest;
use llm_ledger_report::{Format, Report, TileReport};

/// Tile one GEMM on one GPU.
pub fn run(args: &TileArgs) -> Result<String> {
    let format: Format = args.format.0;
    let req = GemmRequest {
        m: Some(args.m.clone()),
        n: Some(args.n.clone()),
        k: Some(args.k.clone()),
        gpu: None,
        tile: args.tile.clone(),
        weights: args.weights.clone(),
        activations: args.activations.clone(),
        output: args.output.clone(),
        compute_efficiency: args.compute_efficiency.clone(),
        bandwidth_efficiency: args.bandwidth_efficiency.clone(),
    };
    let g = req.resolve()?;
    let gpu = inputs::gpu(args.gpu.as_deref(), args.gpu_file.as_deref())?;
    Ok(TileReport::build(&g, &gpu)?.render(format)?)
}
