//! Command-line definitions (clap derive). Scenario flags are plain text here and are resolved by
//! the core's `ScenarioRequest`, the same resolver the web explorer uses, so both accept the same
//! values and print the same errors.

use clap::{Args, Parser, Subcommand};
use llm_ledger_core::ScenarioRequest;

/// Where the FLOPs, the bytes and the time of an LLM forward pass go, per operator, on a given GPU.
#[derive(Debug, Parser)]
#[command(name = "llm-ledger", version, about, long_about = None)]
pub struct Cli {
    /// What to do (default: `ledger` with the seed's scenario).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands. (Parsed once per run, so the size of the scenario variants does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Per-operator FLOPs, bytes, intensity and roofline time of one forward step.
    Ledger(LedgerArgs),
    /// List the built-in model presets with their parameter counts.
    Models(ListArgs),
    /// List the GPU catalogue with peaks and ridge points.
    Gpus(ListArgs),
    /// Sweep batch and/or context (lists `1,8,32`, ranges `1..256`, `0..8192:1024`, `1..256*2`):
    /// step time, tokens/s, intensity, largest row, memory and whether it fits.
    Sweep(SweepArgs),
    /// KV bytes per token, the KV/weight crossover, where the workload sits, memory and capacity.
    Kv(StepArgs),
    /// Re-run the workload with each lever (W4A16, W8A16, fp8, bigger batch, fp8/int8 KV, fewer KV heads).
    Levers(StepArgs),
    /// Time to first token, time per output token and end-to-end latency of a batch of requests.
    Latency(LatencyArgs),
    /// Dollars per million tokens at a batch, and the cheapest batch under a TPOT bound.
    Cost(CostArgs),
    /// MBU and MFU of a measured step against the ledger, with the seed's reading.
    Measure(MeasureArgs),
    /// Below or above the crossover, memory, and the levers ranked by the cost per token they save.
    Advise(AdviseArgs),
    /// Walk one forward step from the model down to a GEMM tile: a node, its children, the
    /// breadcrumb, and whether (and why not) the children add up to it.
    Zoom(ZoomArgs),
    /// One GEMM cut into thread-block tiles on a GPU: tile and wave quantisation, occupancy,
    /// re-read traffic, a modelled time and the candidate tiles.
    Tile(TileArgs),
    /// The MoE union problem over a batch range: experts touched, tokens per expert, expert weight
    /// bytes read per step (with --model) or for --experts/--top-k alone.
    Moe(MoeArgs),
    /// Search tensor × pipeline (× expert) parallel layouts and batches that fit and meet a time per
    /// output token, ranked by dollars per million tokens, with the Pareto front.
    Plan(PlanArgs),
    /// Serve the explorer: a local web page for the ledger, with plots (Ctrl-C to stop).
    Serve(ServeArgs),
}

/// `serve` options.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Address to bind; the default keeps the page on this machine.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Open the explorer in the default browser.
    #[arg(long)]
    pub open: bool,
    /// Add the GPUs of a user GPU file to the catalogue.
    #[arg(long, value_name = "FILE")]
    pub gpu_file: Option<String>,
    /// Add the presets of a user preset file to the catalogue.
    #[arg(long, value_name = "FILE")]
    pub preset_file: Option<String>,
}

/// Output options.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
}

/// Options of the listing commands.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Add the GPUs of a user GPU file (the catalogue's TOML schema).
    #[arg(long, value_name = "FILE")]
    pub gpu_file: Option<String>,
    /// Add the presets of a user preset file (the data/models.toml schema).
    #[arg(long, value_name = "FILE")]
    pub preset_file: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The inputs of one scenario.
#[derive(Debug, Clone, Default, Args)]
pub struct ScenarioArgs {
    /// Model: a preset name, or a path to a config.json (or a directory holding one).
    #[arg(long, short = 'm', value_name = "NAME|PATH")]
    pub model: Option<String>,
    /// GPU: a catalogue name, or a path to a GPU file (its first entry).
    #[arg(long, short = 'g', value_name = "NAME|PATH")]
    pub gpu: Option<String>,
    /// Add the GPUs of a user GPU file to the catalogue.
    #[arg(long, value_name = "FILE")]
    pub gpu_file: Option<String>,
    /// Add the presets of a user preset file to the catalogue.
    #[arg(long, value_name = "FILE")]
    pub preset_file: Option<String>,
    /// Phase: decode or prefill.
    #[arg(long, short = 'p')]
    pub phase: Option<String>,
    /// Sequences in the step.
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
    /// Tokens per sequence: cached (decode) or prompt (prefill).
    #[arg(long, short = 'c', allow_hyphen_values = true)]
    pub ctx: Option<String>,
    /// A mix of contexts instead of --batch/--ctx: `2048x8,32768x2` or `1000,2000,3000`.
    #[arg(long, allow_hyphen_values = true)]
    pub contexts: Option<String>,
    /// A CSV histogram of contexts (`context,count` per line), e.g. from production logs.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<String>,
    /// Weight storage: fp32, bf16, fp16, fp8, fp8-b128, int8, int4, int4-g128, fp4, mxfp4, nvfp4
    /// (default: the checkpoint's quantization_config, else bf16).
    #[arg(long, short = 'w')]
    pub weights: Option<String>,
    /// KV-cache storage (default bf16).
    #[arg(long, short = 'k')]
    pub kv: Option<String>,
    /// Activation storage: fp32, bf16, fp16, fp8, int8 (default bf16).
    #[arg(long)]
    pub activations: Option<String>,
    /// Format GEMM inputs are quantised to, e.g. fp8 for W8A8 (default: the checkpoint's scheme, else
    /// the activation format).
    #[arg(long)]
    pub gemm_activations: Option<String>,
    /// FlashAttention: on (default) or off.
    #[arg(long)]
    pub flash: Option<String>,
    /// Prefill attention FLOPs: half (causal triangle, default) or full (the square).
    #[arg(long)]
    pub causal: Option<String>,
    /// Logits for the last token of each sequence (default) or all tokens.
    #[arg(long)]
    pub logits: Option<String>,
    /// Counting: full (default) or seed (exactly seed 004's rows: weights and KV only).
    #[arg(long)]
    pub counting: Option<String>,
    /// MLA execution form: auto (absorbed in decode, naive in prefill), naive or absorbed.
    #[arg(long)]
    pub mla: Option<String>,
    /// Achieved fraction of peak compute (default 0.6).
    #[arg(long, allow_hyphen_values = true)]
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth (default 0.8).
    #[arg(long, allow_hyphen_values = true)]
    pub bandwidth_efficiency: Option<String>,
    /// MoE routing skew as a Zipf exponent (0 = uniform, the default).
    #[arg(long, allow_hyphen_values = true)]
    pub zipf: Option<String>,
    /// Measured MoE routing: a CSV of per-expert loads (`expert,load` or one load per line).
    #[arg(long, value_name = "FILE")]
    pub expert_loads: Option<String>,
    /// Tensor-parallel GPUs: heads, q/k/v/gate/up columns and o/down rows split N ways (default 1).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub tp: Option<String>,
    /// Pipeline stages: contiguous runs of layers (default 1).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub pp: Option<String>,
    /// Expert-parallel groups: routed experts spread over them, attention data-parallel (default 1).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub ep: Option<String>,
    /// Data-parallel replicas of the whole layout (default 1).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub dp: Option<String>,
    /// Pipeline micro-batches (default: the stages, at most one per sequence).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub micro_batches: Option<String>,
    /// Link between GPUs: nvlink (default where the GPU has it) or pcie.
    #[arg(long, help_heading = "Parallel deployment")]
    pub interconnect: Option<String>,
    /// Achieved fraction of link bandwidth (default 0.8).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parallel deployment")]
    pub link_efficiency: Option<String>,
}

impl ScenarioArgs {
    /// The text inputs for the core's resolver (file-backed inputs are handled by `inputs`).
    pub fn request(&self) -> ScenarioRequest {
        ScenarioRequest {
            model: self.model.clone(),
            gpu: self.gpu.clone(),
            phase: self.phase.clone(),
            batch: self.batch.clone(),
            ctx: self.ctx.clone(),
            contexts: self.contexts.clone(),
            weights: self.weights.clone(),
            kv: self.kv.clone(),
            activations: self.activations.clone(),
            gemm_activations: self.gemm_activations.clone(),
            flash: self.flash.clone(),
            causal: self.causal.clone(),
            logits: self.logits.clone(),
            counting: self.counting.clone(),
            mla: self.mla.clone(),
            compute_efficiency: self.compute_efficiency.clone(),
            bandwidth_efficiency: self.bandwidth_efficiency.clone(),
            zipf: self.zipf.clone(),
            expert_loads: None,
            tp: self.tp.clone(),
            pp: self.pp.clone(),
            ep: self.ep.clone(),
            dp: self.dp.clone(),
            micro_batches: self.micro_batches.clone(),
            interconnect: self.interconnect.clone(),
            link_efficiency: self.link_efficiency.clone(),
        }
    }
}

/// `ledger` options.
#[derive(Debug, Clone, Default, Args)]
pub struct LedgerArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
    /// Also write the roofline chart (SVG) of the ledger to FILE.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
}

/// The runtime reserve option.
#[derive(Debug, Clone, Default, Args)]
pub struct ReserveArgs {
    /// Memory kept back for the CUDA context, allocator and buffers: a size with a unit, `2GB`,
    /// `1.5GiB`, `512MB` (default 2GB).
    #[arg(long, allow_hyphen_values = true)]
    pub reserve: Option<String>,
}

/// The request shape.
#[derive(Debug, Clone, Default, Args)]
pub struct RequestArgs {
    /// Prompt tokens per request (default 2048).
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// Output tokens per request (default 256).
    #[arg(long, allow_hyphen_values = true)]
    pub output: Option<String>,
}

/// The price option.
#[derive(Debug, Clone, Default, Args)]
pub struct PriceArgs {
    /// Price in USD per GPU-hour (default: the catalogue's approximate price).
    #[arg(long, allow_hyphen_values = true)]
    pub usd_per_hour: Option<String>,
}

/// `sweep`, `kv` and `levers` options (in `sweep`, `--batch` and `--ctx` take lists and ranges).
#[derive(Debug, Clone, Args)]
pub struct StepArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `sweep` options.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub step: StepArgs,
    /// Also write the batch curve (SVG: step time and tokens/s against batch, with the memory wall
    /// and the KV crossover) to FILE; needs one --ctx value and at most 4,096 batch sizes.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
}

/// `latency` options (`--batch` is the number of concurrent requests).
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cost` options.
#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub price: PriceArgs,
    /// Find the cheapest batch whose time per output token is at most this many milliseconds.
    #[arg(long, allow_hyphen_values = true)]
    pub tpot_ms: Option<String>,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `measure` options: one of `--step-ms` or `--tokens-per-s`.
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Measured step time, milliseconds.
    #[arg(long, allow_hyphen_values = true, required_unless_present = "tokens_per_s", conflicts_with = "tokens_per_s")]
    pub step_ms: Option<String>,
    /// Measured throughput, tokens per second (decode: generated; prefill: processed).
    #[arg(long, allow_hyphen_values = true)]
    pub tokens_per_s: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `advise` options.
#[derive(Debug, Clone, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub price: PriceArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `moe` options (`--batch` takes lists and ranges, default `1,2,4,8,16,32,64,128`).
#[derive(Debug, Clone, Args)]
pub struct MoeArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Routed experts E, without a model.
    #[arg(long, allow_hyphen_values = true)]
    pub experts: Option<String>,
    /// Experts per token k, without a model.
    #[arg(long, allow_hyphen_values = true)]
    pub top_k: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `plan` options (`--batch` takes lists and ranges: the candidate batches; default every batch).
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Upper bound on the time per output token, milliseconds.
    #[arg(long, allow_hyphen_values = true, required = true)]
    pub tpot_ms: Option<String>,
    /// Most GPUs per replica (default 64).
    #[arg(long, allow_hyphen_values = true)]
    pub max_gpus: Option<String>,
    #[command(flatten)]
    pub price: PriceArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `zoom` options.
#[derive(Debug, Clone, Default, Args)]
pub struct ZoomArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Node to show: model, embedding, layer.N, layer.N.attn, layer.N.mlp.up, layer.N.mlp.up.tiles,
    /// final_norm, lm_head, lm_head.tiles …
    #[arg(long, default_value = "model", value_name = "PATH")]
    pub at: String,
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
}

/// `tile` options.
#[derive(Debug, Clone, Default, Args)]
pub struct TileArgs {
    /// Rows of A and C (tokens: batch in decode, batch × prompt in prefill).
    #[arg(long, allow_hyphen_values = true)]
    pub m: String,
    /// Columns of B and C (output features).
    #[arg(long, allow_hyphen_values = true)]
    pub n: String,
    /// Reduction dimension (input features).
    #[arg(long, allow_hyphen_values = true)]
    pub k: String,
    /// GPU: a catalogue name, or a path to a GPU file (its first entry) (default h100-sxm).
    #[arg(long, short = 'g', value_name = "NAME|PATH")]
    pub gpu: Option<String>,
    /// Add the GPUs of a user GPU file to the catalogue.
    #[arg(long, value_name = "FILE")]
    pub gpu_file: Option<String>,
    /// Force a tile: BMxBNxBK or BMxBNxBKxSTAGES (default: the candidate with the lowest modelled time).
    #[arg(long)]
    pub tile: Option<String>,
    /// Storage of B, the weights (default bf16).
    #[arg(long, short = 'w')]
    pub weights: Option<String>,
    /// Storage of A, the activations (default bf16).
    #[arg(long)]
    pub activations: Option<String>,
    /// Storage of C, the output (default: the activations' precision).
    #[arg(long)]
    pub output: Option<String>,
    /// Achieved fraction of peak compute (default 0.6).
    #[arg(long, allow_hyphen_values = true)]
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth (default 0.8).
    #[arg(long, allow_hyphen_values = true)]
    pub bandwidth_efficiency: Option<String>,
    /// Output format: table, json, csv (the candidates) or md.
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
