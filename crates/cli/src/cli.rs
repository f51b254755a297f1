//! Command-line definitions (clap derive). Scenario flags are plain text here and are resolved by
//! the core's `ScenarioRequest`, the same resolver the web explorer uses, so both accept the same
//! values and print the same errors.

use clap::{Args, Parser, Subcommand};
use llm_ledger_core::ScenarioRequest;
use llm_ledger_report::render::Format;

/// Where the FLOPs, the bytes and the time of an LLM forward pass go, per operator, on a given GPU.
#[derive(Debug, Parser)]
#[command(name = "llm-ledger", version, about, long_about = None)]
pub struct Cli {
    /// What to do (default: `ledger` with the default scenario).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Tables: every column, however wide.
    ///
    /// Tables: every column, however wide (the default when stdout is not a terminal).
    #[arg(long, global = true)]
    pub wide: bool,
    /// Tables: fit this many columns, hiding the less important ones.
    ///
    /// Tables: fit this many columns, hiding the less important ones (default: the terminal's
    /// width, or $COLUMNS, when stdout is a terminal).
    #[arg(long, global = true, value_name = "COLUMNS", conflicts_with = "wide")]
    pub width: Option<usize>,
}

/// Subcommands. (Parsed once per run, so the size of the scenario variants does not matter.)
///
/// Each subcommand's flags are made when it is parsed (`defer`): a run builds its own command's
/// flags, not every command's (building them all was about 1.2 M instructions, more than half of
/// `--version`). Code that reads the flags of other commands builds the tree first
/// ([`command`], [`built`]).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Per-operator FLOPs, bytes, intensity and roofline time of one forward step.
    Ledger(LedgerArgs),
    /// List the built-in model presets with their parameter counts.
    Models(ListArgs),
    /// List the GPU catalogue with peaks and ridge points.
    Gpus(ListArgs),
    /// Sweep batch and context up to and past the memory wall.
    ///
    /// Sweep batch and/or context (lists `1,8,32`, ranges `1..256`, `0..8192:1024`, `1..256*2`):
    /// step time, tokens/s, intensity, largest row, memory and whether it fits; lists in `--gpu`,
    /// `--weights` and `--kv` compare them as series.
    Sweep(SweepArgs),
    /// KV bytes per token, the KV/weight crossover, memory and capacity.
    ///
    /// KV bytes per token, the KV/weight crossover, where the workload sits, memory and capacity.
    Kv(StepArgs),
    /// Re-run the workload with each lever (quantisation, batch, KV).
    ///
    /// Re-run the workload with each lever (W4A16, W8A16, fp8, bigger batch, fp8/int8 KV, fewer KV heads).
    Levers(StepArgs),
    /// TTFT, TPOT and end-to-end latency of a batch of requests.
    ///
    /// Time to first token, time per output token and end-to-end latency of a batch of requests.
    Latency(LatencyArgs),
    /// Dollars per million tokens at a batch, and the cheapest batch under a TPOT bound.
    Cost(CostArgs),
    /// MBU and MFU of a measured step against the ledger.
    ///
    /// MBU and MFU of a measured step against the ledger, and what they mean for the next step.
    Measure(MeasureArgs),
    /// The crossover, memory and the levers ranked by what they save.
    ///
    /// Below or above the crossover, memory, and the levers ranked by the cost per token they save.
    Advise(AdviseArgs),
    /// Fit the expected clock to your own measurements (CSV, benchmark JSON).
    ///
    /// Fit the expected clock to your own measurements (a CSV of scenario columns and one of
    /// step_ms, step_s, tokens_per_s, tpot_ms, ttft_ms, op_us; or the JSON of vLLM's
    /// benchmark_serving, genai-perf or trtllm-bench): each row before and after, the four fitted
    /// constants with their uncertainty, and a profile file for --profile.
    Calibrate(CalibrateArgs),
    /// Walk one forward step from the model down to a GEMM tile.
    ///
    /// Walk one forward step from the model down to a GEMM tile: a node, its children, the
    /// breadcrumb, and whether (and why not) the children add up to it.
    Zoom(ZoomArgs),
    /// One GEMM cut into thread-block tiles: occupancy, waves, re-reads, time.
    ///
    /// One GEMM cut into thread-block tiles on a GPU: tile and wave quantisation, occupancy,
    /// re-read traffic, a modelled time and the candidate tiles.
    Tile(TileArgs),
    /// The MoE union problem: experts touched and expert bytes over a batch range.
    ///
    /// The MoE union problem over a batch range: experts touched, tokens per expert, expert weight
    /// bytes read per step (with --model) or for --experts/--top-k alone.
    Moe(MoeArgs),
    /// Find the multi-GPU layouts that fit and meet a time per token, cheapest first.
    ///
    /// Search tensor × pipeline (× expert) parallel layouts and batches that fit and meet a time per
    /// output token, ranked by dollars per million tokens, with the Pareto front; with --rate, the
    /// cheapest deployment that holds p99 SLAs under load (simulated).
    Plan(PlanArgs),
    /// Serving under load: continuous batching simulated, TTFT/TPOT/ITL percentiles.
    ///
    /// Serve requests under load: a continuous-batching simulation (arrivals, chunked prefill, paged
    /// KV with preemption) timed step by step by the ledger; TTFT, TPOT, ITL, throughput, goodput;
    /// `--rate 1..40` sweeps the arrival rate.
    Simulate(SimulateArgs),
    /// Serve the explorer: a local web page for the ledger (Ctrl-C to stop).
    ///
    /// Serve the explorer: a local web page for the ledger, with plots (Ctrl-C to stop).
    Serve(ServeArgs),
}

/// `serve` options.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8765, value_parser = port)]
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

/// `--port`: a TCP port, with the range in words when it is not one.
fn port(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .map_err(|_| format!("`{s}` is not a port: {}", llm_ledger_core::error::integer_in(0, 65535)))
}

/// `--format`: the report crate's [`Format`] as a clap value (any case; `md` also as `markdown`),
/// so a bad value is a usage error listing the formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FormatArg(pub Format);

impl clap::ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[FormatArg(Format::Table), FormatArg(Format::Json), FormatArg(Format::Csv), FormatArg(Format::Md)]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue;
        Some(match self.0 {
            Format::Table => PossibleValue::new("table"),
            Format::Json => PossibleValue::new("json"),
            Format::Csv => PossibleValue::new("csv"),
            Format::Md => PossibleValue::new("md").alias("markdown"),
        })
    }
}

/// Output options.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table", ignore_case = true, hide_possible_values = true, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
}

/// Options of the listing commands.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Add the GPUs of a user GPU file (the catalogue's TOML schema).
    #[arg(long, value_name = "FILE")]
    pub gpu_file: Option<String>,
    /// Add the presets of a user preset file (the crates/core/data/models.toml schema).
    #[arg(long, value_name = "FILE")]
    pub preset_file: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The inputs of one scenario, gathered from a command's flag groups for the resolver
/// (`inputs::scenario`). A command fills only the fields of the groups it accepts.
#[derive(Debug, Clone, Default)]
pub struct ScenarioArgs {
    pub model: Option<String>,
    pub revision: Option<String>,
    pub gpu: Option<String>,
    pub gpu_file: Option<String>,
    pub preset_file: Option<String>,
    pub phase: Option<String>,
    pub batch: Option<String>,
    pub ctx: Option<String>,
    pub contexts: Option<String>,
    pub histogram: Option<String>,
    pub weights: Option<String>,
    pub kv: Option<String>,
    pub activations: Option<String>,
    pub gemm_activations: Option<String>,
    pub flash: Option<String>,
    pub causal: Option<String>,
    pub logits: Option<String>,
    pub counting: Option<String>,
    pub mla: Option<String>,
    pub attend: Option<String>,
    pub compute_efficiency: Option<String>,
    pub bandwidth_efficiency: Option<String>,
    pub time_model: Option<String>,
    pub engine: Option<String>,
    pub profile: Option<String>,
    pub zipf: Option<String>,
    pub expert_loads: Option<String>,
    pub tp: Option<String>,
    pub pp: Option<String>,
    pub ep: Option<String>,
    pub dp: Option<String>,
    pub micro_batches: Option<String>,
    pub interconnect: Option<String>,
    pub link_efficiency: Option<String>,
}

/// Help headings: a command's flags are grouped under these in `--help` and `-h`.
pub mod heading {
    /// The model and the GPU, and the files that add to the catalogue.
    pub const MODEL: &str = "Model and GPU";
    /// Storage and math formats.
    pub const PRECISION: &str = "Precision";
    /// What is counted.
    pub const COUNTING: &str = "Counting";
    /// How time is computed.
    pub const CLOCK: &str = "Clock";
    /// MoE routing.
    pub const ROUTING: &str = "MoE routing";
    /// The shape of the step (or the axes of a sweep).
    pub const STEP: &str = "Step";
    /// A deployment over several GPUs.
    pub const PARALLEL: &str = "Parallel deployment";
    /// Memory, requests and price.
    pub const SERVING: &str = "Requests, memory and price";
    /// Output format and files.
    pub const OUTPUT: &str = "Output";
}

/// The model, the GPU and how the step is computed: every scenario command takes these.
#[derive(Debug, Clone, Default, Args)]
pub struct SetupArgs {
    /// Model: a preset, a config.json, a GGUF file or a Hub id.
    ///
    /// A preset name (`llm-ledger models`), a path to a config.json (or a directory holding one,
    /// with any *.safetensors headers), a GGUF file, or a Hugging Face Hub repo id org/name, also
    /// as org/name@REV or a pasted `https://huggingface.co/org/name` URL (local cache first, then a
    /// download unless HF_HUB_OFFLINE=1).
    #[arg(long, short = 'm', value_name = "NAME|PATH|ORG/NAME", help_heading = heading::MODEL)]
    pub model: Option<String>,
    /// Hub revision for an org/name --model: a branch, tag or commit hash (default main).
    #[arg(long, value_name = "REV", help_heading = heading::MODEL)]
    pub revision: Option<String>,
    /// GPU: a catalogue name, or a path to a GPU file (its first entry).
    ///
    /// A name of `llm-ledger gpus`, or a path to a GPU file in the catalogue's TOML schema (its
    /// first entry).
    #[arg(long, short = 'g', value_name = "NAME|PATH", help_heading = heading::MODEL)]
    pub gpu: Option<String>,
    /// Add the GPUs of a user GPU file to the catalogue.
    #[arg(long, value_name = "FILE", help_heading = heading::MODEL)]
    pub gpu_file: Option<String>,
    /// Add the presets of a user preset file to the catalogue.
    #[arg(long, value_name = "FILE", help_heading = heading::MODEL)]
    pub preset_file: Option<String>,
    /// Weight storage (default: the checkpoint's, else bf16).
    ///
    /// Weight storage: fp32, bf16, fp16, fp8, fp8-b128, int8, int4, int4-g128, fp4, mxfp4, nvfp4
    /// (default: the checkpoint's quantization_config, else bf16).
    #[arg(long, short = 'w', value_name = "FORMAT", help_heading = heading::PRECISION)]
    pub weights: Option<String>,
    /// KV-cache storage (default bf16).
    ///
    /// KV-cache storage, as --weights (default bf16).
    #[arg(long, short = 'k', value_name = "FORMAT", help_heading = heading::PRECISION)]
    pub kv: Option<String>,
    /// Activation storage (default bf16).
    ///
    /// Activation storage: fp32, bf16, fp16, fp8, int8 (default bf16).
    #[arg(long, value_name = "FORMAT", help_heading = heading::PRECISION)]
    pub activations: Option<String>,
    /// Format GEMM inputs are quantised to (W8A8: fp8).
    ///
    /// Format GEMM inputs are quantised to, e.g. fp8 for W8A8 (default: the checkpoint's scheme, else
    /// the activation format).
    #[arg(long, value_name = "FORMAT", help_heading = heading::PRECISION)]
    pub gemm_activations: Option<String>,
    /// FlashAttention: on (default) or off.
    #[arg(long, value_name = "on|off", help_heading = heading::COUNTING)]
    pub flash: Option<String>,
    /// Prefill attention FLOPs: half (default) or full.
    ///
    /// Prefill attention FLOPs: half (the causal triangle, default) or full (the square).
    #[arg(long, value_name = "half|full", help_heading = heading::COUNTING)]
    pub causal: Option<String>,
    /// Logits for the last token of each sequence (default) or all.
    #[arg(long, value_name = "last|all", help_heading = heading::COUNTING)]
    pub logits: Option<String>,
    /// Counting: full (default) or seed (the reference calculator's).
    ///
    /// Counting: full (default: every operator) or seed (also `reference`): only the weight and KV
    /// reads of the q/k/v/o and MLP projections, attention and lm_head, as the reference decode
    /// calculator counts them (README, "The reference calculator").
    #[arg(long, value_name = "full|seed", help_heading = heading::COUNTING)]
    pub counting: Option<String>,
    /// MLA execution form: auto, naive or absorbed.
    ///
    /// MLA execution form: auto (absorbed in decode, naive in prefill), naive or absorbed.
    #[arg(long, value_name = "FORM", help_heading = heading::COUNTING)]
    pub mla: Option<String>,
    /// Evict or sparsify: at most this many cached tokens read per sequence by each attention layer.
    ///
    /// Evict or sparsify the KV cache: each attention layer reads and keeps at most this many cached
    /// tokens per sequence (a sliding window or an eviction policy; sparse attention reads as few).
    /// It changes model behaviour. Default: the model's own attention.
    #[arg(long, value_name = "TOKENS", help_heading = heading::COUNTING)]
    pub attend: Option<String>,
    /// Achieved fraction of peak compute.
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION", help_heading = heading::CLOCK)]
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth.
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION", help_heading = heading::CLOCK)]
    pub bandwidth_efficiency: Option<String>,
    /// Time model: measured or roofline.
    ///
    /// Time model: measured (the expected time from measured kernel behaviour) or roofline (the two
    /// efficiencies above); --counting seed always uses the roofline.
    #[arg(long, value_name = "MODEL", help_heading = heading::CLOCK)]
    pub time_model: Option<String>,
    /// Engine the measured clock assumes.
    ///
    /// Inference engine the measured clock assumes: trtllm, vllm, sglang, gpt-fast or eager.
    #[arg(long, value_name = "ENGINE", help_heading = heading::CLOCK)]
    pub engine: Option<String>,
    /// A calibration profile that adjusts the measured clock.
    ///
    /// A calibration profile (`llm-ledger calibrate` writes one) that adjusts the measured clock.
    #[arg(long, value_name = "FILE", help_heading = heading::CLOCK)]
    pub profile: Option<String>,
    /// MoE routing skew as a Zipf exponent (0 = uniform, the default).
    #[arg(long, allow_hyphen_values = true, value_name = "S", help_heading = heading::ROUTING)]
    pub zipf: Option<String>,
    /// Measured MoE routing: a CSV of per-expert loads.
    ///
    /// Measured MoE routing: a CSV of per-expert loads (`expert,load` or one load per line).
    #[arg(long, value_name = "FILE", help_heading = heading::ROUTING)]
    pub expert_loads: Option<String>,
}

/// The shape of one step: its phase and its sequences.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::STEP)]
pub struct StepShapeArgs {
    /// Phase: decode or prefill.
    #[arg(long, short = 'p')]
    pub phase: Option<String>,
    /// Sequences in the step.
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
    /// Tokens per sequence: cached (decode) or prompt (prefill).
    #[arg(long, short = 'c', allow_hyphen_values = true)]
    pub ctx: Option<String>,
    /// A mix of contexts instead of --batch/--ctx.
    ///
    /// A mix of contexts instead of --batch/--ctx: `2048x8,32768x2` or `1000,2000,3000`.
    #[arg(long, allow_hyphen_values = true, value_name = "MIX")]
    pub contexts: Option<String>,
    /// A CSV histogram of contexts (`context,count` per line).
    ///
    /// A CSV histogram of contexts (`context,count` per line), e.g. from production logs.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<String>,
}

/// The axes of a sweep (lists `1,8,32`, ranges `1..256`, `0..8192:1024`, `1..256*2`).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::STEP)]
pub struct SweepShapeArgs {
    /// Phase: decode or prefill.
    #[arg(long, short = 'p')]
    pub phase: Option<String>,
    /// Sequences per step: a value, a list or a range.
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
    /// Tokens per sequence, cached (decode) or prompt (prefill): a value, a list or a range.
    #[arg(long, short = 'c', allow_hyphen_values = true)]
    pub ctx: Option<String>,
}

/// Link flags of a deployment over several GPUs.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::PARALLEL)]
pub struct LinkArgs {
    /// Link between GPUs: nvlink (default where the GPU has it) or pcie.
    #[arg(long, value_name = "LINK")]
    pub interconnect: Option<String>,
    /// Achieved fraction of link bandwidth.
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION")]
    pub link_efficiency: Option<String>,
}

/// A deployment over several GPUs.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::PARALLEL)]
pub struct ParallelArgs {
    /// Tensor-parallel GPUs.
    ///
    /// Tensor-parallel GPUs: heads, q/k/v/gate/up columns and o/down rows split N ways.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub tp: Option<String>,
    /// Pipeline stages: contiguous runs of layers.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub pp: Option<String>,
    /// Expert-parallel groups.
    ///
    /// Expert-parallel groups: routed experts spread over them, attention data-parallel.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub ep: Option<String>,
    /// Data-parallel replicas of the whole layout.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub dp: Option<String>,
    /// Pipeline micro-batches (default: the stages).
    ///
    /// Pipeline micro-batches (default: the stages, at most one per sequence).
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub micro_batches: Option<String>,
    #[command(flatten)]
    pub link: LinkArgs,
}

impl SetupArgs {
    /// The scenario of these flags alone (the step shape and the layout at their defaults).
    pub fn scenario(&self) -> ScenarioArgs {
        let s = self.clone();
        ScenarioArgs {
            model: s.model,
            revision: s.revision,
            gpu: s.gpu,
            gpu_file: s.gpu_file,
            preset_file: s.preset_file,
            weights: s.weights,
            kv: s.kv,
            activations: s.activations,
            gemm_activations: s.gemm_activations,
            flash: s.flash,
            causal: s.causal,
            logits: s.logits,
            counting: s.counting,
            mla: s.mla,
            attend: s.attend,
            compute_efficiency: s.compute_efficiency,
            bandwidth_efficiency: s.bandwidth_efficiency,
            time_model: s.time_model,
            engine: s.engine,
            profile: s.profile,
            zipf: s.zipf,
            expert_loads: s.expert_loads,
            ..Default::default()
        }
    }
}

impl ScenarioArgs {
    /// With a step's shape.
    pub fn with_shape(self, a: &StepShapeArgs) -> ScenarioArgs {
        let a = a.clone();
        ScenarioArgs {
            phase: a.phase,
            batch: a.batch,
            ctx: a.ctx,
            contexts: a.contexts,
            histogram: a.histogram,
            ..self
        }
    }

    /// With a deployment over several GPUs.
    pub fn with_parallel(self, a: &ParallelArgs) -> ScenarioArgs {
        let a = a.clone();
        ScenarioArgs {
            tp: a.tp,
            pp: a.pp,
            ep: a.ep,
            dp: a.dp,
            micro_batches: a.micro_batches,
            ..self.with_link(&a.link)
        }
    }

    /// With the link flags alone.
    pub fn with_link(self, a: &LinkArgs) -> ScenarioArgs {
        let a = a.clone();
        ScenarioArgs { interconnect: a.interconnect, link_efficiency: a.link_efficiency, ..self }
    }

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
            attend: self.attend.clone(),
            compute_efficiency: self.compute_efficiency.clone(),
            bandwidth_efficiency: self.bandwidth_efficiency.clone(),
            time_model: self.time_model.clone(),
            engine: self.engine.clone(),
            zipf: self.zipf.clone(),
            expert_loads: None,
            tp: self.tp.clone(),
            pp: self.pp.clone(),
            ep: self.ep.clone(),
            dp: self.dp.clone(),
            micro_batches: self.micro_batches.clone(),
            interconnect: self.interconnect.clone(),
            link_efficiency: self.link_efficiency.clone(),
            ..Default::default()
        }
    }
}

/// `ledger` options.
#[derive(Debug, Clone, Default, Args)]
pub struct LedgerArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: StepShapeArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table", ignore_case = true, hide_possible_values = true, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
    /// Also write the roofline chart (SVG) of the ledger to FILE.
    #[arg(long, value_name = "FILE.svg", help_heading = heading::OUTPUT)]
    pub plot: Option<String>,
}

/// The runtime reserve option.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::SERVING)]
pub struct ReserveArgs {
    /// Memory kept back for the CUDA context, allocator and buffers: a size with a unit, `2GB`,
    /// `1.5GiB`, `512MB`.
    #[arg(long, allow_hyphen_values = true)]
    pub reserve: Option<String>,
}

/// The request shape.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::SERVING)]
pub struct RequestArgs {
    /// Prompt tokens per request.
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// Output tokens per request.
    #[arg(long, allow_hyphen_values = true)]
    pub output: Option<String>,
}

/// The price option.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::SERVING)]
pub struct PriceArgs {
    /// Price in USD per GPU-hour (default: the catalogue's approximate price).
    #[arg(long, allow_hyphen_values = true)]
    pub usd_per_hour: Option<String>,
}

/// `kv` and `levers` options: one step on one GPU.
#[derive(Debug, Clone, Args)]
pub struct StepArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: StepShapeArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `sweep` options (`--gpu`, `--weights` and `--kv` may list several values: one series each).
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: SweepShapeArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also write the batch curve (SVG: step time and tokens/s against batch, with the memory wall
    /// and the KV crossover) to FILE; needs one --ctx value and at most 4,096 batch sizes.
    #[arg(long, value_name = "FILE.svg", help_heading = heading::OUTPUT)]
    pub plot: Option<String>,
}

/// The concurrency of the economics commands.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::SERVING)]
pub struct ConcurrencyArgs {
    /// Concurrent requests, decoded together.
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
}

/// `latency` options (the steps come from --prompt and --output).
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cost` options (the steps come from --prompt and --output).
#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub price: PriceArgs,
    /// Find the cheapest batch whose time per output token is at most this many milliseconds.
    #[arg(long, allow_hyphen_values = true, help_heading = heading::SERVING)]
    pub tpot_ms: Option<String>,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `simulate` options.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Arrival rate, requests/s: a value, a list `2,4,8` or a range `1..40` (a sweep) (default
    /// 10); or `max`: the largest rate that holds the p99 bounds --ttft-ms and --tpot-ms (the
    /// deployment's capacity), with its saturation rate, its knee and the cost at the capacity.
    #[arg(long, allow_hyphen_values = true, help_heading = "Arrivals")]
    pub rate: Option<String>,
    /// Arrival process: poisson, gamma (bursty, with --cv), closed (a new request when one
    /// finishes, with --concurrency) or trace (with --trace) (default poisson).
    #[arg(long, help_heading = "Arrivals")]
    pub arrivals: Option<String>,
    /// Coefficient of variation of the gaps between gamma arrivals (1 is Poisson) (default 2).
    #[arg(long, allow_hyphen_values = true, help_heading = "Arrivals")]
    pub cv: Option<String>,
    /// Requests in the system at every moment, closed loop (default 16).
    #[arg(long, allow_hyphen_values = true, help_heading = "Arrivals")]
    pub concurrency: Option<String>,
    /// Trace CSV: arrival_s,prompt_tokens,output_tokens per line, sorted by time.
    #[arg(long, value_name = "FILE", help_heading = "Arrivals")]
    pub trace: Option<String>,
    /// Requests to simulate (default 1000); with --trace, its first N rows (at most all of them).
    #[arg(long, allow_hyphen_values = true, help_heading = "Arrivals")]
    pub requests: Option<String>,
    /// Seed of the arrival and length draws (default 0).
    #[arg(long, allow_hyphen_values = true, help_heading = "Arrivals")]
    pub seed: Option<String>,
    /// Prompt tokens: N, uniform:MIN..MAX, lognormal:MEDIAN:SIGMA or hist:FILE.csv (tokens,weight)
    /// (default 2048).
    #[arg(long, allow_hyphen_values = true, help_heading = "Requests")]
    pub prompt: Option<String>,
    /// Output tokens, as --prompt (default 256).
    #[arg(long, allow_hyphen_values = true, help_heading = "Requests")]
    pub output: Option<String>,
    /// Most sequences per step (default: the engine's own on the GPU: vLLM 1024 on GPUs of 70 GiB
    /// or more but the A100, else 256; SGLang 2048; others 256).
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub max_seqs: Option<String>,
    /// Most new tokens per step (default: the engine's own on the GPU: vLLM 8192 on GPUs of 70
    /// GiB or more but the A100, else 2048; SGLang its prefill chunk by memory, 2048 to 16384;
    /// others 8192).
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub max_batched_tokens: Option<String>,
    /// Most prompt tokens of one sequence per step, chunked prefill (default: --max-batched-tokens).
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub chunk: Option<String>,
    /// prefill-first or decode-first (default decode-first).
    #[arg(long, help_heading = "Scheduler")]
    pub schedule: Option<String>,
    /// Tokens per KV block (default 16).
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub block: Option<String>,
    /// Fraction of each prompt found in the prefix cache, 0 to below 1 (default 0).
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub prefix_hit: Option<String>,
    /// TTFT bound of the goodput, milliseconds.
    #[arg(long, allow_hyphen_values = true, help_heading = "Goodput")]
    pub ttft_ms: Option<String>,
    /// TPOT bound of the goodput, milliseconds.
    #[arg(long, allow_hyphen_values = true, help_heading = "Goodput")]
    pub tpot_ms: Option<String>,
    /// Disaggregated serving, PREFILL:DECODE instances (each of the --tp/--ep layout, or the
    /// pool's own: --prefill-tp, --decode-tp …), the KV cache moved after each prefill; compared
    /// with aggregated instances of --tp/--ep on the same GPUs.
    #[arg(long, allow_hyphen_values = true, value_name = "X:Y", help_heading = "Disaggregated")]
    pub disagg: Option<String>,
    /// Link the KV cache crosses with --disagg: auto (NVLink when one domain holds both pools,
    /// else the network), nvlink, pcie, network or ideal (no cost) (default auto).
    #[arg(long, help_heading = "Disaggregated")]
    pub kv_link: Option<String>,
    /// Tensor-parallel GPUs of each prefill instance with --disagg (default --tp).
    #[arg(long, allow_hyphen_values = true, value_name = "N", help_heading = "Disaggregated")]
    pub prefill_tp: Option<String>,
    /// Expert-parallel groups of each prefill instance with --disagg (default --ep).
    #[arg(long, allow_hyphen_values = true, value_name = "N", help_heading = "Disaggregated")]
    pub prefill_ep: Option<String>,
    /// Tensor-parallel GPUs of each decode instance with --disagg (default --tp).
    #[arg(long, allow_hyphen_values = true, value_name = "N", help_heading = "Disaggregated")]
    pub decode_tp: Option<String>,
    /// Expert-parallel groups of each decode instance with --disagg (default --ep).
    #[arg(long, allow_hyphen_values = true, value_name = "N", help_heading = "Disaggregated")]
    pub decode_ep: Option<String>,
    /// Which requests a step admits: max-utilization (admit while blocks last, preempt when
    /// they run out), guaranteed-no-evict (TensorRT-LLM: a request's whole prompt and output
    /// reserved at admission), watermark (vLLM: 1 % of blocks kept free, a preempted request
    /// re-admitted only when its whole context fits) or sglang (its new-token reservation
    /// ratio), or engine: the --engine's own (TensorRT-LLM guaranteed-no-evict, vLLM watermark,
    /// SGLang sglang, gpt-fast and eager max-utilization) (default engine).
    #[arg(long, help_heading = "Engine")]
    pub admission: Option<String>,
    /// What a preemption does with the KV cache: recompute (drop it, prefill again) or swap (to
    /// host memory and back over PCIe) (default recompute).
    #[arg(long, help_heading = "Engine")]
    pub preemption: Option<String>,
    /// Host time per step (the clock's `host` row): serial (after the GPU step) or overlapped
    /// (under it: a step takes the longer of the two), or engine: the --engine's own (serial for
    /// vllm@0.6 and eager, else overlapped) (default engine).
    #[arg(long, help_heading = "Engine")]
    pub host_time: Option<String>,
    /// Decode steps per scheduling, vLLM's --num-scheduler-steps, 1 to 256 (default 1); a run's
    /// tokens stream as one chunk after its last step (ITL: the gap between chunks).
    #[arg(long, allow_hyphen_values = true, help_heading = "Engine")]
    pub scheduler_steps: Option<String>,
    /// CUDA-graph padding of decode-only batches: off, or vllm (rounded up to vLLM's captured
    /// sizes 1, 2, 4, 8, 16, 24 … 512), or the captured sizes as a list (`1,2,4,8,16,32,64,128`,
    /// an engine's own configuration), or engine: the --engine's own (vllm for vLLM and SGLang,
    /// off for TensorRT-LLM, gpt-fast and eager) (default engine).
    #[arg(long, help_heading = "Engine")]
    pub cuda_graphs: Option<String>,
    /// Requests left out of every statistic, the first to arrive (a benchmark's warm-up)
    /// (default 0).
    #[arg(long, allow_hyphen_values = true, help_heading = "Benchmark")]
    pub warmup: Option<String>,
    /// Most requests in flight with Poisson, gamma or trace arrivals, as benchmark_serving.py
    /// --max-concurrency: an arrival that finds them all busy is sent when one finishes.
    #[arg(long, allow_hyphen_values = true, help_heading = "Benchmark")]
    pub max_concurrency: Option<String>,
    /// Speculative decoding with draft heads (MTP, EAGLE): draft tokens per step, 1 to 64; each
    /// step verifies depth + 1 tokens at the target's cost.
    #[arg(long, allow_hyphen_values = true, help_heading = "Speculative decoding")]
    pub spec_depth: Option<String>,
    /// Probability that the target accepts a draft token, 0 to 1 (default 0.7).
    #[arg(long, allow_hyphen_values = true, help_heading = "Speculative decoding")]
    pub spec_acceptance: Option<String>,
    /// Cost of one draft step ÷ the target's decode step of the same batch (default 0.05).
    #[arg(long, allow_hyphen_values = true, help_heading = "Speculative decoding")]
    pub draft_fraction: Option<String>,
    /// A draft model instead of draft heads: a preset with the target's vocabulary, each draft
    /// step its decode step on the target's GPU, precisions and layout (its weights and KV cache
    /// taken from the target's KV pool).
    #[arg(long, help_heading = "Speculative decoding")]
    pub draft_model: Option<String>,
    /// A block-level prefix cache over the KV pool, on or off (default off): prompts that share
    /// a prefix (a trace's prefix_id,prefix_tokens columns) find its cached blocks.
    #[arg(long, help_heading = "Scheduler")]
    pub prefix_cache: Option<String>,
    /// Identical replicas of the layout, 1 to 64 (default 1), each a serving instance with its own
    /// KV cache; arrivals are routed among them by --router and the summary is the whole
    /// deployment's.
    #[arg(long, allow_hyphen_values = true, help_heading = "Deployment")]
    pub replicas: Option<String>,
    /// Which replica takes an arrival: round-robin (default), random, least-outstanding (fewest
    /// requests waiting or running) or kv (least KV cache in use).
    #[arg(long, help_heading = "Deployment")]
    pub router: Option<String>,
    /// Most engine steps over every run of this command (default 100000000): runs estimated to
    /// need more are refused before they start, and runs that take more stop with an error.
    #[arg(long, allow_hyphen_values = true, help_heading = "Scheduler")]
    pub max_steps: Option<String>,
    #[command(flatten)]
    pub price: PriceArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output_format: OutputArgs,
    /// Write every step (time, sequences, tokens, queue, KV blocks, preemptions) as CSV to FILE
    /// (one rate only).
    #[arg(long, value_name = "FILE.csv", help_heading = heading::OUTPUT)]
    pub trace_out: Option<String>,
    /// Also write a plot to FILE: latency CDFs (one rate) or output tokens/s against p99 TTFT and
    /// TPOT (a sweep).
    #[arg(long, value_name = "FILE.svg", help_heading = heading::OUTPUT)]
    pub plot: Option<String>,
    /// Also write the running batch and the waiting queue over time to FILE (one rate).
    #[arg(long, value_name = "FILE.svg", help_heading = heading::OUTPUT)]
    pub plot_timeline: Option<String>,
}

/// `measure` options: one of `--step-ms` or `--tokens-per-s`.
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: StepShapeArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Measured step time, milliseconds.
    #[arg(
        long,
        allow_hyphen_values = true,
        required_unless_present = "tokens_per_s",
        conflicts_with = "tokens_per_s",
        help_heading = "Measurement"
    )]
    pub step_ms: Option<String>,
    /// Measured throughput, tokens per second (decode: generated; prefill: processed).
    #[arg(long, allow_hyphen_values = true, help_heading = "Measurement")]
    pub tokens_per_s: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `calibrate` options.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Measurements: CSVs and benchmark outputs (vLLM, genai-perf, trtllm-bench JSON).
    ///
    /// Measurement files, of mixed formats: a CSV whose header names scenario inputs (model, gpu,
    /// phase, batch, ctx, weights, kv, tp, engine, …, as the flags without `--`) and one
    /// measurement column; the JSON of vLLM's benchmark_serving.py --save-result (or its JSON
    /// Lines); genai-perf's profile_export_genai_perf.json; trtllm-bench's report JSON. The format
    /// comes from the file's keys, or from --format-in.
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<String>,
    /// Read every file as this format: csv, vllm, genai-perf or trtllm-bench (default: detected).
    #[arg(long, value_name = "FORMAT")]
    pub format_in: Option<String>,
    /// A benchmark run's concurrency (its decode batch) where its file does not state one.
    ///
    /// The decode batch of a benchmark file's runs: their concurrency, for files that do not state
    /// it (vLLM without --max-concurrency, genai-perf without --concurrency); given, it wins over
    /// what a file states.
    #[arg(long, value_name = "N")]
    pub batch: Option<String>,
    /// Write the fitted profile (TOML) to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<String>,
    // The scenario flags describe the runs of the benchmark files (a CSV states each row's
    // scenario in its columns): what a flag gives wins over what a file states.
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `advise` options.
#[derive(Debug, Clone, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: StepShapeArgs,
    #[command(flatten)]
    pub price: PriceArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The batch axis of `moe`, with the rest of its step.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::STEP)]
pub struct MoeShapeArgs {
    /// Phase: decode or prefill.
    #[arg(long, short = 'p')]
    pub phase: Option<String>,
    /// Sequences per step: a list or a range (default 1,2,4,8,16,32,64,128).
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
    /// Tokens per sequence: cached (decode) or prompt (prefill).
    #[arg(long, short = 'c', allow_hyphen_values = true)]
    pub ctx: Option<String>,
}

/// `moe` options.
#[derive(Debug, Clone, Args)]
pub struct MoeArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: MoeShapeArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Routed experts E, without a model.
    #[arg(long, allow_hyphen_values = true, help_heading = heading::ROUTING)]
    pub experts: Option<String>,
    /// Experts per token k, without a model.
    #[arg(long, allow_hyphen_values = true, help_heading = heading::ROUTING)]
    pub top_k: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The decode step a plan sizes.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::STEP)]
pub struct PlanShapeArgs {
    /// The candidate batches: a list or a range (default every batch that fits).
    #[arg(long, short = 'b', allow_hyphen_values = true)]
    pub batch: Option<String>,
    /// Cached tokens per sequence.
    #[arg(long, short = 'c', allow_hyphen_values = true)]
    pub ctx: Option<String>,
}

/// `plan` options (it searches the layouts itself: only the link flags of a deployment apply).
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: PlanShapeArgs,
    #[command(flatten)]
    pub link: LinkArgs,
    /// Upper bound on the time per output token, milliseconds.
    #[arg(long, allow_hyphen_values = true, required_unless_present = "pareto", help_heading = "Search")]
    pub tpot_ms: Option<String>,
    /// Most GPUs per replica.
    #[arg(long, allow_hyphen_values = true, help_heading = "Search")]
    pub max_gpus: Option<String>,
    #[command(flatten)]
    pub price: PriceArgs,
    #[command(flatten)]
    pub reserve: ReserveArgs,
    /// Every layout × batch that fits and the Pareto front of tokens/s per GPU against tokens/s
    /// per user, instead of the ranking (no --tpot-ms needed; with it, each says whether it meets
    /// it). `--pareto` alone is `--pareto on`.
    #[arg(long, num_args = 0..=1, default_missing_value = "on", value_name = "on|off", help_heading = "Search")]
    pub pareto: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: PlanLoadArgs,
}

/// `plan --rate`: plan under load by simulation (`simulate`), for p99 SLAs.
#[derive(Debug, Clone, Default, Args)]
pub struct PlanLoadArgs {
    /// Arrival rate, requests/s (Poisson): plan the cheapest deployment (layout, max sequences,
    /// chunk, replicas) whose simulated p99 TTFT and p99 TPOT hold --ttft-ms and --tpot-ms.
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub rate: Option<String>,
    /// With --rate: bound on the p99 time to first token, milliseconds.
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub ttft_ms: Option<String>,
    /// With --rate: most GPUs of a deployment in all, every replica and both pools (default
    /// 1024); --max-gpus bounds one replica.
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub gpus_total: Option<String>,
    /// With --rate: requests simulated per candidate (default 2000).
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub requests: Option<String>,
    /// With --rate: seed of the arrival and length draws (default 0).
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub seed: Option<String>,
    /// Prompt tokens (default 2048): with --rate as `simulate --prompt`; without, a number whose
    /// requests' mean decode context, prompt + output ÷ 2, is the plan's context (not with a
    /// context given).
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub prompt: Option<String>,
    /// Output tokens (default 256): with --rate as `simulate --output`; without, as --prompt.
    #[arg(long = "output", allow_hyphen_values = true, help_heading = "Under load")]
    pub output_tokens: Option<String>,
    /// With --rate: most engine steps over every simulation of the search (default
    /// 100000000); a search estimated to need more is refused before it starts.
    #[arg(long, allow_hyphen_values = true, help_heading = "Under load")]
    pub max_steps: Option<String>,
}

/// `zoom` options.
#[derive(Debug, Clone, Default, Args)]
pub struct ZoomArgs {
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub shape: StepShapeArgs,
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Node to show: model, embedding, layer.N, layer.N.attn, layer.N.mlp.up, layer.N.mlp.up.tiles,
    /// final_norm, lm_head, lm_head.tiles …
    #[arg(long, default_value = "model", value_name = "PATH", help_heading = heading::OUTPUT)]
    pub at: String,
    /// Output format: table, json, csv or md.
    #[arg(long, short = 'f', default_value = "table", ignore_case = true, hide_possible_values = true, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
    /// Also write the dataflow diagram (SVG: operators as boxes sized by time, tensors as arrows
    /// labelled with their bytes) of the layer or block at --at (layer.N, layer.N.attn, layer.N.mlp).
    #[arg(long, value_name = "FILE.svg", help_heading = heading::OUTPUT)]
    pub plot: Option<String>,
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
    /// GPU: a catalogue name, or a path to a GPU file (its first entry).
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
    /// Achieved fraction of peak compute.
    #[arg(long, allow_hyphen_values = true)]
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth.
    #[arg(long, allow_hyphen_values = true)]
    pub bandwidth_efficiency: Option<String>,
    /// Output format: table, json, csv (the candidates) or md.
    #[arg(long, short = 'f', default_value = "table", ignore_case = true, hide_possible_values = true, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
}

/// The defaults the core applies to a subcommand's flags, shown in `--help` as `[default: …]`.
/// The scenario inputs' come from the core's input table (the values the resolver uses), the
/// others from the constants their resolvers use, so each default is written once; a flag whose
/// help already states its own default (`moe --batch`, `--kv`) keeps it.
fn help_defaults(subcommand: &str) -> Vec<(&'static str, String)> {
    use llm_ledger_app::sweep::{DEFAULT_BATCH_AXIS, DEFAULT_CTX_AXIS};
    use llm_ledger_core::scenario::scenario_input;
    use llm_ledger_core::serving::{DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS, DEFAULT_RESERVE_BYTES};
    let input = |name: &'static str| {
        let default = scenario_input(name).and_then(|i| i.default.clone()).expect("a scenario input with a default");
        (name, default)
    };
    let mut defaults: Vec<(&'static str, String)> = SHOWN_INPUT_DEFAULTS.iter().map(|name| input(name)).collect();
    if subcommand == "sweep" {
        for (name, axis) in [("batch", DEFAULT_BATCH_AXIS), ("ctx", DEFAULT_CTX_AXIS)] {
            defaults.retain(|(n, _)| *n != name);
            defaults.push((name, axis.to_string()));
        }
    }
    defaults.extend([
        ("reserve", format!("{}GB", DEFAULT_RESERVE_BYTES / 1e9)),
        ("prompt", DEFAULT_PROMPT_TOKENS.to_string()),
        ("output", DEFAULT_OUTPUT_TOKENS.to_string()),
        ("max_gpus", llm_ledger_app::plan::DEFAULT_MAX_GPUS.to_string()),
    ]);
    defaults
}

/// The scenario inputs whose help gets a `[default: …]` from the core's table (the others state
/// their default, or what it depends on, in words).
const SHOWN_INPUT_DEFAULTS: &[&str] = &[
    "model",
    "gpu",
    "phase",
    "batch",
    "ctx",
    "compute_efficiency",
    "bandwidth_efficiency",
    "time_model",
    "engine",
    "link_efficiency",
    "tp",
    "pp",
    "ep",
    "dp",
];

/// The whole command-line definition, every subcommand's flags made ([`Command`] defers them).
/// Building runs each flags struct's own setup, whose doc comment would replace the command's
/// description; each command keeps its variant's words, as help showed them before the flags
/// were deferred.
pub fn built() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let words: Vec<_> = cmd
        .get_subcommands()
        .map(|s| (s.get_name().to_string(), s.get_about().cloned(), s.get_long_about().cloned()))
        .collect();
    cmd.build();
    // In place: a built command's flags and subcommands are found by their positions. (Building
    // added clap's own `help` command, which keeps its words.)
    cmd.mut_subcommands(|sub| match words.iter().find(|(name, _, _)| name == sub.get_name()) {
        Some((_, about, long_about)) => {
            let sub = match about {
                Some(a) => sub.about(a.clone()),
                None => sub,
            };
            match long_about {
                Some(l) => sub.long_about(l.clone()),
                None => sub.long_about(None),
            }
        }
        None => sub,
    })
}

/// The command-line definition with the core's defaults written into the help.
pub fn command() -> clap::Command {
    built().mut_subcommands(|sub| {
        let defaults = help_defaults(sub.get_name());
        // `-h` shows the summary and `--help` the explanation: both carry the default, unless the
        // help already states one.
        sub.mut_args(|a| {
            let Some((_, default)) = defaults.iter().find(|(id, _)| a.get_id() == *id) else { return a };
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            let long = a.get_long_help().map(|h| h.to_string());
            if help.contains("default") || long.as_deref().is_some_and(|l| l.contains("default")) {
                return a;
            }
            let a = a.help(format!("{help} [default: {default}]"));
            match &long {
                Some(l) => a.long_help(format!("{l} [default: {default}]")),
                None => a,
            }
        })
    })
}

impl Cli {
    /// What no arguments parse to: the default ledger, tables as wide as the terminal. Made
    /// without clap, whose command tree is about a sixth of a bare run's instructions; a test
    /// checks that clap parses no arguments to the same.
    pub fn bare() -> Cli {
        Cli { command: None, wide: false, width: None }
    }
}

/// The command-line definition for parsing `args` (the program's name first): [`command`] where
/// they ask for help (`-h`, `--help`, `help`), else the definition without the defaults written
/// into its help texts, which only help shows, and with only the parsed subcommand's flags made
/// (writing the defaults needs every command's flags, most of clap's share of a run's start-up).
pub fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    use clap::CommandFactory;
    if args.iter().skip(1).any(|a| a == "-h" || a == "--help" || a == "help") {
        command()
    } else {
        Cli::command()
    }
}

/// The flag a field name of the core's errors is typed as (`tpot_ms` → `--tpot-ms`), from the
/// command-line definition itself: the field names are the flags' ids. `None` for names that are
/// not flags (config.json keys such as `hidden_size`).
pub fn flag_of(field: &str) -> Option<String> {
    let cmd = built();
    let long = cmd
        .get_subcommands()
        .flat_map(|s| s.get_arguments())
        .find(|a| a.get_id() == field)
        .and_then(|a| a.get_long())
        .map(|l| format!("--{l}"));
    long
}

impl LedgerArgs {
    /// The scenario these flags describe.
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_shape(&self.shape).with_parallel(&self.parallel)
    }
}

impl StepArgs {
    /// The scenario these flags describe (one GPU).
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_shape(&self.shape)
    }
}

impl SweepArgs {
    /// The scenario of the sweep's series flags, without the axes (`--batch`, `--ctx`).
    pub fn base(&self) -> ScenarioArgs {
        ScenarioArgs { phase: self.shape.phase.clone(), ..self.setup.scenario().with_parallel(&self.parallel) }
    }

    /// The axes and the reserve as text, for the shared resolver.
    pub fn request(&self) -> llm_ledger_app::sweep::SweepRequest {
        llm_ledger_app::sweep::SweepRequest {
            batch: self.shape.batch.clone(),
            ctx: self.shape.ctx.clone(),
            reserve: self.reserve.reserve.clone(),
        }
    }
}

impl LatencyArgs {
    /// The scenario these flags describe (its steps come from the request shape).
    pub fn scenario(&self) -> ScenarioArgs {
        ScenarioArgs { batch: self.concurrency.batch.clone(), ..self.setup.scenario().with_parallel(&self.parallel) }
    }
}

impl SimulateArgs {
    /// The scenario these flags describe (its steps come from the simulation).
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_parallel(&self.parallel)
    }

    /// The simulator's inputs as text, for the shared resolver.
    pub fn sim(&self) -> llm_ledger_app::simulate::SimRequest {
        let a = self.clone();
        llm_ledger_app::simulate::SimRequest {
            rate: a.rate,
            arrivals: a.arrivals,
            cv: a.cv,
            concurrency: a.concurrency,
            trace: a.trace,
            requests: a.requests,
            seed: a.seed,
            prompt: a.prompt,
            output: a.output,
            max_seqs: a.max_seqs,
            max_batched_tokens: a.max_batched_tokens,
            chunk: a.chunk,
            schedule: a.schedule,
            block: a.block,
            prefix_hit: a.prefix_hit,
            ttft_ms: a.ttft_ms,
            tpot_ms: a.tpot_ms,
            reserve: a.reserve.reserve,
            disagg: a.disagg,
            kv_link: a.kv_link,
            prefill_tp: a.prefill_tp,
            prefill_ep: a.prefill_ep,
            decode_tp: a.decode_tp,
            decode_ep: a.decode_ep,
            admission: a.admission,
            preemption: a.preemption,
            host_time: a.host_time,
            scheduler_steps: a.scheduler_steps,
            cuda_graphs: a.cuda_graphs,
            warmup: a.warmup,
            max_concurrency: a.max_concurrency,
            spec_depth: a.spec_depth,
            spec_acceptance: a.spec_acceptance,
            draft_fraction: a.draft_fraction,
            draft_model: a.draft_model,
            prefix_cache: a.prefix_cache,
            replicas: a.replicas,
            router: a.router,
            max_steps: a.max_steps,
            usd_per_hour: a.price.usd_per_hour,
        }
    }
}

impl PlanLoadArgs {
    /// The plan-under-load inputs as text, for the shared resolver.
    pub fn text(&self) -> llm_ledger_app::plan::PlanLoadRequest {
        let a = self.clone();
        llm_ledger_app::plan::PlanLoadRequest {
            rate: a.rate,
            ttft_ms: a.ttft_ms,
            gpus_total: a.gpus_total,
            requests: a.requests,
            seed: a.seed,
            prompt: a.prompt,
            output: a.output_tokens,
            max_steps: a.max_steps,
        }
    }
}

impl CostArgs {
    /// The scenario these flags describe (its steps come from the request shape).
    pub fn scenario(&self) -> ScenarioArgs {
        ScenarioArgs { batch: self.concurrency.batch.clone(), ..self.setup.scenario().with_parallel(&self.parallel) }
    }
}

impl MeasureArgs {
    /// The scenario these flags describe.
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_shape(&self.shape).with_parallel(&self.parallel)
    }
}

impl AdviseArgs {
    /// The scenario these flags describe (one GPU).
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_shape(&self.shape)
    }
}

impl MoeArgs {
    /// The scenario of the rest of the step, without the batch axis.
    pub fn base(&self) -> ScenarioArgs {
        let sh = self.shape.clone();
        ScenarioArgs { phase: sh.phase, ctx: sh.ctx, ..self.setup.scenario().with_parallel(&self.parallel) }
    }
}

impl PlanArgs {
    /// The scenario of the plan, without the batch candidates (`--batch`).
    pub fn base(&self) -> ScenarioArgs {
        ScenarioArgs { ctx: self.shape.ctx.clone(), ..self.setup.scenario().with_link(&self.link) }
    }

    /// The inputs of every plan as text, for the shared resolver.
    pub fn request(&self) -> llm_ledger_app::plan::PlanRequest {
        llm_ledger_app::plan::PlanRequest {
            batch: self.shape.batch.clone(),
            tpot_ms: self.tpot_ms.clone(),
            max_gpus: self.max_gpus.clone(),
            usd_per_hour: self.price.usd_per_hour.clone(),
            reserve: self.reserve.reserve.clone(),
            pareto: self.pareto.clone(),
        }
    }
}

impl ZoomArgs {
    /// The scenario these flags describe.
    pub fn scenario(&self) -> ScenarioArgs {
        self.setup.scenario().with_shape(&self.shape).with_parallel(&self.parallel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, CommandFactory};

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    /// A run makes only its own command's flags; the whole tree, made for help and for the
    /// error tips, describes each command in its variant's words, not its flags struct's.
    #[test]
    fn flags_are_made_per_command_and_help_keeps_each_commands_words() {
        let lazy = Cli::command();
        let ledger = lazy.find_subcommand("ledger").unwrap();
        assert_eq!(ledger.get_arguments().count(), 0, "the ledger's flags are made when it is parsed");
        let whole = built();
        assert!(whole.find_subcommand("ledger").unwrap().get_arguments().any(|a| a.get_id() == "batch"));
        for (before, after) in lazy.get_subcommands().zip(whole.get_subcommands()) {
            assert_eq!(before.get_name(), after.get_name());
            assert_eq!(before.get_about().map(ToString::to_string), after.get_about().map(ToString::to_string));
            assert_eq!(
                before.get_long_about().map(ToString::to_string),
                after.get_long_about().map(ToString::to_string),
                "{}",
                before.get_name()
            );
        }
        let help = command().find_subcommand_mut("ledger").unwrap().render_help().to_string();
        assert!(help.starts_with("Per-operator FLOPs, bytes, intensity and roofline time"), "{help}");
    }

    #[test]
    fn no_arguments_parse_to_the_bare_cli() {
        use clap::FromArgMatches;
        let args = ["llm-ledger"];
        let parsed = Cli::from_arg_matches(&command_for(&args.map(Into::into)).get_matches_from(args)).unwrap();
        assert_eq!(format!("{parsed:?}"), format!("{:?}", Cli::bare()));
    }

    #[test]
    fn help_is_written_with_the_defaults_however_it_is_asked_for() {
        for args in [
            &["llm-ledger", "ledger", "--help"][..],
            &["llm-ledger", "help", "ledger"],
            &["llm-ledger", "ledger", "-h"],
        ] {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            let help = command_for(&args).try_get_matches_from(&args).unwrap_err().render().to_string();
            assert!(help.contains("[default: 2048]"), "{args:?}: {help}");
        }
    }

    #[test]
    fn help_states_the_core_defaults_once() {
        let mut cmd = command();
        let ledger = cmd.find_subcommand_mut("ledger").unwrap().render_long_help().to_string();
        assert!(ledger.contains("Sequences in the step [default: 1]"), "{ledger}");
        for shown in ["[default: llama-3-8b]", "[default: h100-sxm]", "[default: 2048]", "[default: 0.6]"] {
            assert_eq!(ledger.matches(shown).count(), 1, "{shown}\n{ledger}");
        }
        let cost = cmd.find_subcommand_mut("cost").unwrap().render_long_help().to_string();
        assert!(cost.contains("[default: 2GB]") && cost.contains("[default: 256]"), "{cost}");
        let moe = cmd.find_subcommand_mut("moe").unwrap().render_long_help().to_string();
        assert!(moe.contains("(default 1,2,4,8,16,32,64,128)") && !moe.contains("128) [default"), "{moe}");
    }

    /// Scenario flags that are not inputs of the core's table: files the CLI reads and hands to
    /// the resolver as values (`--histogram` becomes a context mix) or adds to the catalogue, and
    /// the Hub revision the CLI fetches `--model org/name` at.
    const FILE_FLAGS: &[&str] = &["gpu_file", "preset_file", "histogram", "revision", "profile"];

    /// The ids of the scenario flag groups.
    fn scenario_flag_ids() -> Vec<String> {
        let mut cmd = clap::Command::new("scenario");
        cmd = SetupArgs::augment_args(cmd);
        cmd = StepShapeArgs::augment_args(cmd);
        cmd = ParallelArgs::augment_args(cmd);
        cmd.get_arguments().map(|a| a.get_id().to_string()).collect()
    }

    /// Every scenario input of the core's table is a flag, and every scenario
    /// flag is an input (or one of the files the CLI reads).
    #[test]
    fn every_scenario_input_is_a_flag_and_back() {
        use llm_ledger_core::scenario::scenario_inputs;
        let flags = scenario_flag_ids();
        for i in scenario_inputs() {
            assert!(flags.iter().any(|f| f == i.name), "scenario input `{}` has no flag", i.name);
        }
        for f in &flags {
            assert!(
                scenario_inputs().iter().any(|i| i.name == f) || FILE_FLAGS.contains(&f.as_str()),
                "flag `{f}` is not a scenario input"
            );
        }
    }

    /// A default the help shows is the core table's: `[default: X]` is the
    /// table's value, and a help that states its default in words names the table's value.
    #[test]
    fn help_defaults_are_the_tables() {
        use llm_ledger_core::scenario::scenario_input;
        let cmd = command();
        let mut shown = 0;
        for sub in cmd.get_subcommands() {
            // The axes of these commands are lists with their own defaults.
            let axes: &[&str] = match sub.get_name() {
                "sweep" | "moe" | "plan" => &["batch", "ctx"],
                _ => &[],
            };
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                let Some(default) = scenario_input(id).and_then(|i| i.default.as_deref()) else { continue };
                if axes.contains(&id) {
                    continue;
                }
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if let Some(at) = help.find("[default: ") {
                    let value = &help[at + 10..help[at..].find(']').unwrap() + at];
                    assert_eq!(value, default, "{} --{id}", sub.get_name());
                    shown += 1;
                } else if help.contains("default") {
                    assert!(help.contains(default), "{} --{id}: {help}", sub.get_name());
                }
            }
        }
        assert!(shown > 50, "{shown}");
    }

    /// `--format` is a clap value enum whose names are the report crate's.
    #[test]
    fn format_is_a_value_enum_of_the_report_formats() {
        use clap::ValueEnum;
        for f in FormatArg::value_variants() {
            let name = f.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, f.0.to_string());
            assert_eq!(name.parse::<Format>().unwrap(), f.0);
        }
        let parse = |v: &str| Cli::try_parse_from(["llm-ledger", "ledger", "--format", v]);
        for (v, f) in [("MARKDOWN", Format::Md), ("md", Format::Md), ("Json", Format::Json)] {
            match parse(v).unwrap().command {
                Some(Command::Ledger(a)) => assert_eq!(a.format.0, f),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(parse("xml").unwrap_err().kind(), clap::error::ErrorKind::InvalidValue);
    }

    /// A command's own flags (its long names with `_` for `-`, in definition order): those of
    /// `sub` that are not scenario or output flags, nor clap's `--help` or the global table flags.
    fn own_flags(sub: &str, outputs: &[&str]) -> Vec<String> {
        let cmd = command();
        let scenario = scenario_flag_ids();
        let c = cmd.find_subcommand(sub).unwrap();
        c.get_arguments()
            .filter(|a| !a.is_global_set() && a.get_id() != "help")
            .filter(|a| !scenario.contains(&a.get_id().to_string()) && a.get_id() != "format")
            .filter_map(|a| {
                a.get_long().map(|l| l.replace('-', "_")).or_else(|| a.is_positional().then(|| a.get_id().to_string()))
            })
            .filter(|l| !outputs.contains(&l.as_str()))
            .collect()
    }

    /// A command's own flags are its app input tables, no more and no fewer (a table's input
    /// named as a scenario flag, a sweep's `batch` axis, is that flag of the command), and each
    /// field an app error names is spelled as the flag: a flag added to one but not the other
    /// fails here.
    fn assert_flags_are_tables(sub: &str, outputs: &[&str], tables: &[&[llm_ledger_app::Input]]) {
        let scenario = scenario_flag_ids();
        let inputs: Vec<&llm_ledger_app::Input> = tables.iter().flat_map(|t| t.iter()).collect();
        let mut own = own_flags(sub, outputs);
        own.sort();
        let mut names: Vec<String> =
            inputs.iter().map(|i| i.name.to_string()).filter(|n| !scenario.contains(n)).collect();
        names.sort();
        assert_eq!(own, names, "{sub}");
        let cmd = command();
        let c = cmd.find_subcommand(sub).unwrap();
        for i in &inputs {
            // A positional argument (`calibrate`'s files) is named by its id.
            if c.get_arguments().any(|a| a.is_positional() && a.get_id() == i.name) {
                continue;
            }
            let long = |a: &clap::Arg| a.get_long().map(|l| l.replace('-', "_"));
            assert!(c.get_arguments().any(|a| long(a).as_deref() == Some(i.name)), "{sub} has no flag `{}`", i.name);
            assert_eq!(flag_of(i.name), Some(format!("--{}", i.name.replace('_', "-"))), "{}", i.name);
        }
    }

    #[test]
    fn the_command_flags_are_the_app_input_tables() {
        use llm_ledger_app::{calibrate, moe, plan, serving, simulate, sweep, zoom};
        assert_flags_are_tables("simulate", &["trace_out", "plot", "plot_timeline"], &[simulate::inputs()]);
        assert_flags_are_tables("plan", &[], &[plan::inputs(), plan::load_inputs()]);
        assert_flags_are_tables("sweep", &["plot"], &[sweep::inputs()]);
        assert_flags_are_tables("moe", &[], &[moe::inputs()]);
        assert_flags_are_tables("calibrate", &["out"], &[calibrate::inputs()]);
        assert_flags_are_tables("zoom", &["plot"], &[zoom::inputs()]);
        for sub in ["kv", "levers", "latency", "cost"] {
            let table: Vec<llm_ledger_app::Input> = serving::inputs_of(sub).into_iter().copied().collect();
            assert_flags_are_tables(sub, &["plot"], &[&table]);
        }
        // A flag's default is its table's.
        let cmd = command();
        let at = cmd.find_subcommand("zoom").unwrap().get_arguments().find(|a| a.get_id() == "at").unwrap();
        assert_eq!(at.get_default_values(), [zoom::DEFAULT_AT]);
    }

    #[test]
    fn core_field_names_map_to_the_flags_as_typed() {
        assert_eq!(flag_of("tpot_ms").as_deref(), Some("--tpot-ms"));
        assert_eq!(flag_of("compute_efficiency").as_deref(), Some("--compute-efficiency"));
        assert_eq!(flag_of("batch").as_deref(), Some("--batch"));
        assert_eq!(flag_of("hidden_size"), None);
    }
}
