//! A [`Scenario`] is everything one ledger needs: model, GPU, workload, weight storage,
//! efficiencies and MoE routing. [`ScenarioRequest`] holds the raw inputs as text (CLI flags and URL
//! query parameters alike) and [`ScenarioRequest::resolve`] is the one resolver both front ends use,
//! so they accept the same values and fail with the same messages.

use crate::clock::Profile;
use crate::engine::{Clock, Engine, TimeModelKind, ENGINE_NAMES, TIME_MODEL_NAMES};
use crate::error::{Error, Result};
use crate::hardware::{builtin_gpus, Gpu};
use crate::layout::{ParallelSpec, Parallelism};
use crate::model::{builtin_presets, CheckpointQuant, Mlp, ModelSpec, Preset, WeightPrecisions};
use crate::moe::{routing_probabilities, Routing};
use crate::precision::Precision;
use crate::roofline::Efficiency;
use crate::workload::{Causal, ContextBucket, Contexts, Counting, Logits, MlaForm, Phase, Workload};
use serde::Deserialize;
use std::sync::Arc;

/// Inputs of one ledger, resolved and validated.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The model.
    pub model: Arc<ModelSpec>,
    /// The GPU.
    pub gpu: Arc<Gpu>,
    /// The step's workload.
    pub workload: Workload,
    /// Weight storage per module class.
    pub weights: WeightPrecisions,
    /// Achieved fractions of peak.
    pub efficiency: Efficiency,
    /// MoE routing distribution.
    pub routing: Routing,
    /// Tensor, pipeline, expert and data parallelism (one GPU unless asked otherwise).
    pub parallel: Arc<Parallelism>,
    /// The clock: time model and engine (default: the measured model of TensorRT-LLM). Seed
    /// counting always uses the roofline ([`Scenario::effective_clock`]).
    pub clock: Clock,
    /// A calibration profile applied to the expected clock (identity unless `--profile`).
    pub profile: Profile,
}

impl Scenario {
    /// Assemble and check that the routing fits every MoE layer.
    pub fn new(
        model: Arc<ModelSpec>,
        gpu: Arc<Gpu>,
        workload: Workload,
        weights: WeightPrecisions,
        efficiency: Efficiency,
        routing: Routing,
    ) -> Result<Self> {
        if !matches!(routing, Routing::Uniform) {
            for (layer, _) in model.layer_groups() {
                if let Mlp::Moe(m) = &layer.mlp {
                    routing_probabilities(m.experts, m.top_k, &routing)?;
                }
            }
        }
        let parallel = Arc::new(Parallelism::single(&model));
        Ok(Scenario {
            model,
            gpu,
            workload,
            weights,
            efficiency,
            routing,
            parallel,
            clock: Clock::default(),
            profile: Profile::IDENTITY,
        })
    }

    /// The same scenario deployed over several GPUs (validated against its model and GPU).
    pub fn with_parallel(&self, spec: &ParallelSpec) -> Result<Scenario> {
        let parallel = Arc::new(Parallelism::new(&self.model, &self.gpu, spec)?);
        Ok(Scenario { parallel, ..self.clone() })
    }

    /// The reference calculator's default: Llama 3 8B on an H100 SXM, decode, batch 1, 2048 cached tokens, bf16.
    pub fn default_decode() -> Scenario {
        ScenarioRequest::default().resolve(&Catalog::builtin()).expect("built-in defaults resolve")
    }

    /// The same scenario timed by another clock.
    pub fn with_clock(&self, clock: Clock) -> Scenario {
        Scenario { clock, ..self.clone() }
    }

    /// The clock the operators are timed by: the scenario's, except that seed counting keeps the
    /// reference calculator's roofline so that its tables stay digit for digit.
    pub fn effective_clock(&self) -> Clock {
        if self.workload.counting == Counting::Seed {
            Clock::ROOFLINE
        } else {
            self.clock
        }
    }

    /// The same scenario with another workload.
    pub fn with_workload(&self, workload: Workload) -> Scenario {
        Scenario { workload, ..self.clone() }
    }
}

/// Built-in GPUs and presets, plus any the user added. The lists are shared until one is
/// changed (copy on write), so the built-in catalogue costs two reference counts per request.
#[derive(Debug, Clone)]
pub struct Catalog {
    gpus: Arc<Vec<Arc<Gpu>>>,
    presets: Arc<Vec<Preset>>,
}

impl Catalog {
    /// The embedded catalogue.
    pub fn builtin() -> Catalog {
        static BUILTIN: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| Catalog {
                gpus: Arc::new(builtin_gpus().to_vec()),
                presets: Arc::new(builtin_presets().to_vec()),
            })
            .clone()
    }

    /// Add GPUs (a user's file); an entry with a built-in name replaces it.
    pub fn add_gpus(&mut self, gpus: Vec<Gpu>) {
        let list = Arc::make_mut(&mut self.gpus);
        for g in gpus {
            list.retain(|x| x.name != g.name);
            list.push(Arc::new(g));
        }
    }

    /// Add presets (a user's preset file); an entry with an existing name replaces it.
    pub fn add_presets(&mut self, presets: Vec<Preset>) {
        let list = Arc::make_mut(&mut self.presets);
        for p in presets {
            list.retain(|x| x.name != p.name);
            list.push(p);
        }
    }

    /// Add a model parsed from a user's `config.json`, under its spec name.
    pub fn add_model(&mut self, spec: ModelSpec) {
        let name = spec.name.clone();
        self.add_presets(vec![Preset::unpublished(name.clone(), name, spec)]);
    }

    /// All GPUs.
    pub fn gpus(&self) -> &[Arc<Gpu>] {
        &self.gpus
    }

    /// All presets.
    pub fn presets(&self) -> &[Preset] {
        &self.presets
    }

    /// Look up a GPU by name or alias (case-insensitive); an unknown name is an error about `gpu`.
    pub fn gpu(&self, name: &str) -> Result<Arc<Gpu>> {
        let n = name.trim().to_ascii_lowercase();
        self.gpus
            .iter()
            .find(|g| g.name == n || g.aliases.contains(&n))
            .cloned()
            .ok_or_else(|| Error::unknown("GPU", name, self.gpus.iter().map(|g| g.name.as_str())).about("gpu"))
    }

    /// Look up a preset by name or alias (case-insensitive); an unknown name is an error about
    /// `model`.
    pub fn preset(&self, name: &str) -> Result<&Preset> {
        let n = name.trim().to_ascii_lowercase();
        self.presets
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(&n) || p.aliases.contains(&n))
            .ok_or_else(|| Error::unknown("model", name, self.presets.iter().map(|p| p.name.as_str())).about("model"))
    }
}

/// A model or GPU a front end loaded from a file: the request carries it, so it is used as is and
/// never looked up by name (a file in a folder named like a preset is still that file). Its name
/// (the model's `name`, the GPU's `name`) is the label reports show: the file's path.
/// Two are equal when they are the same loaded value (the same `Arc`).
#[derive(Debug, Clone)]
pub struct Loaded<T>(pub Arc<T>);

impl<T> PartialEq for Loaded<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Eq for Loaded<T> {}

/// Default model preset of a scenario.
pub const DEFAULT_MODEL: &str = "llama-3-8b";
/// Default GPU of a scenario.
pub const DEFAULT_GPU: &str = "h100-sxm";
/// Default phase of a scenario.
pub const DEFAULT_PHASE: &str = "decode";
/// Default sequences in a step.
pub const DEFAULT_BATCH: u64 = 1;
/// Default tokens per sequence: cached (decode) or prompt (prefill).
pub const DEFAULT_CTX: u64 = 2048;

/// Activation storage formats the resolver accepts (a subset of the storage formats).
pub const ACTIVATION_NAMES: &[&str] = &["fp32", "bf16", "fp16", "fp8", "int8"];

/// What a scenario input accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Accepted {
    /// A model preset of the catalogue, by name or alias.
    Model,
    /// A GPU of the catalogue, by name or alias.
    Gpu,
    /// One of these words (the first list a front end offers).
    OneOf(&'static [&'static str]),
    /// A number in this range (one of [`crate::limits::RANGES`]).
    Range(&'static crate::limits::Range),
    /// Free text of this shape (a count, a list).
    Text(&'static str),
}

/// One scenario input: a field of [`ScenarioRequest`], which is also a URL parameter of the
/// explorer, a control of its form and (with `-` for `_`) a command-line flag. The front ends'
/// help defaults and choices are built from this table, and tests check each front end against it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioInput {
    /// The field, parameter and control name.
    pub name: &'static str,
    /// The value the resolver uses when the input is absent, spelled as the input accepts it;
    /// `None` where the default depends on other inputs (the help says how).
    pub default: Option<String>,
    /// The values accepted.
    pub accepted: Accepted,
    /// One line on what the input does.
    pub help: &'static str,
}

/// Every scenario input, in [`ScenarioRequest`]'s field order (a test checks the two agree).
pub fn scenario_inputs() -> &'static [ScenarioInput] {
    use crate::layout::DEFAULT_LINK_EFFICIENCY;
    use crate::limits;
    use crate::precision::PRECISION_NAMES;
    static INPUTS: std::sync::OnceLock<Vec<ScenarioInput>> = std::sync::OnceLock::new();
    INPUTS.get_or_init(|| {
        let eff = Efficiency::default();
        let par = ParallelSpec::default();
        let input = |name, default: Option<String>, accepted, help| ScenarioInput { name, default, accepted, help };
        let count = "a positive integer";
        vec![
            input("model", Some(DEFAULT_MODEL.into()), Accepted::Model, "a preset, or upload a config.json below"),
            input("gpu", Some(DEFAULT_GPU.into()), Accepted::Gpu, "dense peaks and HBM bandwidth from the catalogue"),
            input(
                "phase",
                Some(DEFAULT_PHASE.into()),
                Accepted::OneOf(&["decode", "prefill"]),
                "decode: one new token per sequence; prefill: whole prompts",
            ),
            input("batch", Some(DEFAULT_BATCH.to_string()), Accepted::Text(count), "sequences in the step"),
            input(
                "ctx",
                Some(DEFAULT_CTX.to_string()),
                Accepted::Text("a non-negative integer"),
                "tokens per sequence: cached (decode) or prompt (prefill)",
            ),
            input(
                "contexts",
                None,
                Accepted::Text("tokens x count pairs (2048x8,32768x2) or a list of lengths"),
                "instead of batch × length: tokens x count, e.g. 2048x8,32768x2",
            ),
            input("weights", None, Accepted::OneOf(PRECISION_NAMES), "storage of the weights in HBM"),
            input(
                "kv",
                Some(Precision::Bf16.name()),
                Accepted::OneOf(PRECISION_NAMES),
                "storage of the cached keys and values",
            ),
            input(
                "activations",
                Some(Precision::Bf16.name()),
                Accepted::OneOf(ACTIVATION_NAMES),
                "storage of activations between kernels",
            ),
            input(
                "gemm_activations",
                None,
                Accepted::OneOf(PRECISION_NAMES),
                "format GEMM inputs are quantised to (W8A8); default: the checkpoint's scheme, else the activations'",
            ),
            input(
                "flash",
                Some("on".into()),
                Accepted::OneOf(&["on", "off"]),
                "fuse the attention ops (scores stay on chip)",
            ),
            input(
                "causal",
                Some("half".into()),
                Accepted::OneOf(&["half", "full"]),
                "half: the causal triangle; full: the whole score square",
            ),
            input(
                "logits",
                Some("last".into()),
                Accepted::OneOf(&["last", "all"]),
                "for the last token of each sequence, or all tokens",
            ),
            input(
                "counting",
                Some("full".into()),
                Accepted::OneOf(&["full", "seed"]),
                "full: every operator; seed: only the weight and KV reads of the projections, attention and lm_head, as the reference decode calculator counts them",
            ),
            input(
                "mla",
                Some("auto".into()),
                Accepted::OneOf(&["auto", "naive", "absorbed"]),
                "auto: absorbed in decode, naive in prefill",
            ),
            input(
                "attend",
                None,
                Accepted::Text("a positive integer (cached tokens)"),
                "evict or sparsify: each attention layer reads and keeps at most this many cached tokens per sequence (changes model behaviour)",
            ),
            input(
                "compute_efficiency",
                Some(eff.compute.to_string()),
                Accepted::Range(&limits::COMPUTE_EFFICIENCY),
                "achieved fraction of peak FLOP/s, in [0.01, 1]",
            ),
            input(
                "bandwidth_efficiency",
                Some(eff.bandwidth.to_string()),
                Accepted::Range(&limits::BANDWIDTH_EFFICIENCY),
                "achieved fraction of peak bandwidth, in [0.01, 1]",
            ),
            input(
                "time_model",
                Some(TimeModelKind::default().name().into()),
                Accepted::OneOf(TIME_MODEL_NAMES),
                "measured: expected time from measured kernel behaviour; roofline: the two efficiencies above (seed counting always uses the roofline)",
            ),
            input(
                "engine",
                Some(Engine::default().name().into()),
                Accepted::OneOf(ENGINE_NAMES),
                "inference engine the measured clock assumes (kernels, fusions, CUDA graphs)",
            ),
            input("zipf", Some("0".into()), Accepted::Range(&limits::ZIPF), "Zipf exponent; 0 = uniform routing"),
            input(
                "expert_loads",
                None,
                Accepted::Text("one non-negative load per routed expert, comma-separated"),
                "measured MoE routing: per-expert loads (any scale) instead of zipf",
            ),
            input("tp", Some(par.tp.to_string()), Accepted::Text(count), "tensor-parallel GPUs"),
            input("pp", Some(par.pp.to_string()), Accepted::Text(count), "pipeline stages"),
            input("ep", Some(par.ep.to_string()), Accepted::Text(count), "expert-parallel groups"),
            input("dp", Some(par.dp.to_string()), Accepted::Text(count), "data-parallel replicas"),
            input(
                "micro_batches",
                None,
                Accepted::Text(count),
                "pipeline micro-batches (default: the stages, at most one per sequence)",
            ),
            input(
                "interconnect",
                None,
                Accepted::OneOf(&["nvlink", "pcie"]),
                "link between GPUs (default: nvlink where the GPU has it)",
            ),
            input(
                "link_efficiency",
                Some(DEFAULT_LINK_EFFICIENCY.to_string()),
                Accepted::Range(&limits::LINK_EFFICIENCY),
                "achieved fraction of link bandwidth",
            ),
        ]
    })
}

/// The input of this name.
pub fn scenario_input(name: &str) -> Option<&'static ScenarioInput> {
    scenario_inputs().iter().find(|i| i.name == name)
}

/// Raw inputs, as text. Every field is optional; the defaults are the reference calculator's scenario.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRequest {
    /// Preset name (default: [`DEFAULT_MODEL`]; every input's default is in [`scenario_inputs`]).
    pub model: Option<String>,
    /// A model loaded from a file (a `config.json`); used instead of `model` when present.
    #[serde(skip)]
    pub model_file: Option<Loaded<ModelSpec>>,
    /// GPU name (default: [`DEFAULT_GPU`]).
    pub gpu: Option<String>,
    /// A GPU loaded from a file; used instead of `gpu` when present.
    #[serde(skip)]
    pub gpu_file: Option<Loaded<Gpu>>,
    /// A calibration profile a front end loaded from a file (`calibrate` writes them).
    #[serde(skip)]
    pub profile: Option<Loaded<Profile>>,
    /// `decode` (default) or `prefill`.
    pub phase: Option<String>,
    /// Sequences (default 1).
    pub batch: Option<String>,
    /// Cached tokens (decode) or prompt tokens (prefill) per sequence (default 2048).
    pub ctx: Option<String>,
    /// A mix of contexts instead of batch × ctx: `2048x8,32768x2` (tokens x count) or a plain
    /// per-sequence list `1000,2000,3000`.
    pub contexts: Option<String>,
    /// A mix of contexts already parsed (a histogram file); like `contexts`, exclusive with it
    /// and with batch/ctx.
    #[serde(skip)]
    pub context_mix: Option<Contexts>,
    /// Weight storage (default: the checkpoint's `quantization_config`, else bf16).
    pub weights: Option<String>,
    /// KV-cache storage (default bf16).
    pub kv: Option<String>,
    /// Activation storage (default bf16).
    pub activations: Option<String>,
    /// Format GEMM inputs are quantised to (W8A8); default: the checkpoint's scheme when the
    /// weights come from it, else the activation format.
    pub gemm_activations: Option<String>,
    /// FlashAttention `on` (default) or `off`.
    pub flash: Option<String>,
    /// Prefill causal counting `half` (default) or `full`.
    pub causal: Option<String>,
    /// Logits `last` (default) or `all`.
    pub logits: Option<String>,
    /// Counting `full` (default) or `seed`.
    pub counting: Option<String>,
    /// MLA form `auto` (default), `naive` or `absorbed`.
    pub mla: Option<String>,
    /// The most cached tokens each attention layer reads and keeps per sequence (a window or an
    /// eviction policy; [`ModelSpec::with_attention_limit`]); default: the model's own reach.
    pub attend: Option<String>,
    /// Achieved fraction of peak compute (default: [`Efficiency::default`]).
    pub compute_efficiency: Option<String>,
    /// Achieved fraction of peak bandwidth (default: [`Efficiency::default`]).
    pub bandwidth_efficiency: Option<String>,
    /// Time model `measured` (default) or `roofline`.
    pub time_model: Option<String>,
    /// Engine the measured clock assumes (default `trtllm`).
    pub engine: Option<String>,
    /// MoE routing skew as a Zipf exponent (default 0 = uniform).
    pub zipf: Option<String>,
    /// Measured MoE routing: per-expert loads, comma-separated (any scale).
    pub expert_loads: Option<String>,
    /// Measured MoE routing already parsed (a CSV file); like `expert_loads`, exclusive with it
    /// and with `zipf`.
    #[serde(skip)]
    pub expert_load_values: Option<ExpertLoads>,
    /// Tensor-parallel GPUs (default 1).
    pub tp: Option<String>,
    /// Pipeline stages (default 1).
    pub pp: Option<String>,
    /// Expert-parallel groups (default 1).
    pub ep: Option<String>,
    /// Data-parallel replicas (default 1).
    pub dp: Option<String>,
    /// Pipeline micro-batches (default: the stages, at most one per sequence).
    pub micro_batches: Option<String>,
    /// Link between GPUs: `nvlink` (default where the GPU has it) or `pcie`.
    pub interconnect: Option<String>,
    /// Achieved fraction of link bandwidth (default: [`crate::layout::DEFAULT_LINK_EFFICIENCY`]).
    pub link_efficiency: Option<String>,
}

/// Parse an integer input, naming the field on failure.
pub fn parse_u64(field: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let parsed = if t.contains('_') { t.replace('_', "").parse::<u64>() } else { t.parse::<u64>() };
    parsed.map_err(|_| Error::invalid(field, format!("{s:?}"), "a non-negative integer"))
}

pub use crate::limits::parse_f64;

/// Parse `on`/`off` (also true/false, yes/no, 1/0).
pub fn parse_switch(field: &str, s: &str) -> Result<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(Error::unknown_for(field, "value", s, ["on", "off"])),
    }
}

/// Parse a context mix: `tokens x count` pairs (`2048x8,32768x2`) or bare per-sequence lengths.
pub fn parse_contexts(s: &str) -> Result<Contexts> {
    let mut buckets = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (t, c) = match part.split_once(['x', 'X', '*']) {
            Some((t, c)) => (parse_u64("contexts", t)?, parse_u64("contexts", c)?),
            None => (parse_u64("contexts", part)?, 1),
        };
        buckets.push(ContextBucket { tokens: t, count: c });
    }
    Contexts::mix(buckets)
}

/// Parse a context histogram in CSV: `context,count` per line; a header line and `#` comments are
/// skipped. Linear in the number of lines (a 1M-line histogram parses and merges in well under a
/// second: `cargo bench -p llm-ledger-core -- histogram`).
pub fn parse_context_histogram(text: &str) -> Result<Contexts> {
    use crate::limits::MAX_HISTOGRAM_BYTES;
    if text.len() > MAX_HISTOGRAM_BYTES {
        return Err(Error::invalid(
            "histogram",
            format!("{} bytes", text.len()),
            format!("at most {} MiB", MAX_HISTOGRAM_BYTES >> 20),
        ));
    }
    let mut buckets = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split(',').map(str::trim);
        let (a, b) = (cols.next().unwrap_or(""), cols.next());
        // The first line that is not a comment may be a header (after any leading comments).
        if std::mem::take(&mut first) && a.parse::<f64>().is_err() {
            continue;
        }
        let field = || format!("histogram line {}", i + 1);
        let tokens =
            parse_u64("", a).map_err(|_| Error::invalid(field(), format!("{a:?}"), "a non-negative integer"))?;
        let count = match b {
            Some(b) => {
                parse_u64("", b).map_err(|_| Error::invalid(field(), format!("{b:?}"), "a non-negative integer"))?
            }
            None => return Err(Error::invalid(field(), format!("{line:?}"), "two columns: context,count")),
        };
        buckets.push(ContextBucket { tokens, count });
    }
    Contexts::mix(buckets)
}

/// Per-expert MoE loads, any scale (checked by [`Routing::loads`] when the scenario resolves).
/// Two are equal when their loads are bit for bit the same.
#[derive(Debug, Clone)]
pub struct ExpertLoads(pub Vec<f64>);

impl PartialEq for ExpertLoads {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for ExpertLoads {}

/// Parse per-expert loads given as text: comma-separated numbers (`ScenarioRequest::expert_loads`).
pub fn parse_expert_loads(s: &str) -> Result<ExpertLoads> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_f64("expert_loads", s))
        .collect::<Result<_>>()
        .map(ExpertLoads)
}

/// Parse per-expert loads from CSV text: `expert,load` rows (a header and `#` comments skipped) or
/// one load per line; the value `ScenarioRequest::expert_load_values` takes.
pub fn parse_expert_loads_csv(text: &str) -> Result<ExpertLoads> {
    if text.len() > crate::limits::MAX_INPUT_FILE_BYTES {
        return Err(Error::invalid("expert loads", format!("{} bytes", text.len()), "at most 4 MiB"));
    }
    let mut loads = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let last = line.rsplit(',').next().unwrap_or("").trim();
        if i == 0 && last.parse::<f64>().is_err() {
            continue; // header
        }
        loads.push(parse_f64(&format!("expert loads line {}", i + 1), last)?);
    }
    if loads.is_empty() {
        return Err(Error::invalid("expert loads", "no rows", "one load per expert"));
    }
    Ok(ExpertLoads(loads))
}

/// `model` with the `attend` input applied: at most that many cached tokens read and kept per
/// sequence by each attention layer; an error when it would change nothing.
pub fn attention_limited(model: &ModelSpec, attend: &str) -> Result<ModelSpec> {
    let tokens = parse_u64("attend", attend)?;
    if !(1..=crate::limits::MAX_CONTEXT).contains(&tokens) {
        return Err(Error::invalid("attend", tokens, crate::error::range_words(1, crate::limits::MAX_CONTEXT)));
    }
    model.with_attention_limit(tokens).ok_or_else(|| {
        Error::invalid(
            "attend",
            tokens,
            format!(
                "fewer cached tokens than {}'s attention layers read now ({}): this bound changes nothing",
                model.name,
                model.layer_kinds_words()
            ),
        )
    })
}

impl ScenarioRequest {
    /// Resolve against a catalogue.
    pub fn resolve(&self, catalog: &Catalog) -> Result<Scenario> {
        let model = match &self.model_file {
            Some(file) => file.0.clone(),
            None => catalog.preset(self.model.as_deref().unwrap_or(DEFAULT_MODEL))?.spec().clone(),
        };
        let model = match self.attend.as_deref() {
            None => model,
            Some(t) => Arc::new(attention_limited(&model, t)?),
        };
        let gpu = match &self.gpu_file {
            Some(file) => file.0.clone(),
            None => catalog.gpu(self.gpu.as_deref().unwrap_or(DEFAULT_GPU))?,
        };
        let phase: Phase =
            self.phase.as_deref().unwrap_or(DEFAULT_PHASE).parse().map_err(|e: Error| e.about("phase"))?;
        let contexts = match (&self.contexts, &self.context_mix, &self.batch, &self.ctx) {
            (Some(mix), None, None, None) => parse_contexts(mix)?,
            (None, Some(mix), None, None) => mix.clone(),
            (Some(_), Some(_), _, _) => {
                return Err(Error::invalid("contexts", "given together with a histogram", "one context mix"))
            }
            (Some(_), _, _, _) | (_, Some(_), _, _) => {
                return Err(Error::invalid(
                    "contexts",
                    "given together with batch/ctx",
                    "either contexts or batch and ctx",
                ))
            }
            (None, None, b, c) => {
                let batch = b.as_deref().map(|s| parse_u64("batch", s)).transpose()?.unwrap_or(DEFAULT_BATCH);
                let ctx = c.as_deref().map(|s| parse_u64("ctx", s)).transpose()?.unwrap_or(DEFAULT_CTX);
                Contexts::uniform(batch, ctx)?
            }
        };
        if phase == Phase::Prefill && contexts.max_tokens() == 0 {
            return Err(Error::invalid("ctx", 0, "a prompt of at least 1 token in prefill"));
        }
        let prec = |field: &str, v: &Option<String>, default: Precision| -> Result<Precision> {
            v.as_deref().map(|s| Precision::parse_field(field, s)).transpose().map(|p| p.unwrap_or(default))
        };
        let activations = prec("activations", &self.activations, Precision::Bf16)?;
        if !ACTIVATION_NAMES.contains(&activations.name().as_str()) {
            return Err(Error::unknown("activation precision", activations.name(), ACTIVATION_NAMES.iter().copied())
                .about("activations"));
        }
        let checkpoint_inputs = match (&self.weights, &model.checkpoint_quant) {
            (None, Some(CheckpointQuant::Known { gemm_activations, .. })) => *gemm_activations,
            _ => None,
        };
        let gemm_activations =
            prec("gemm_activations", &self.gemm_activations, checkpoint_inputs.unwrap_or(activations))?;
        let workload = Workload {
            phase,
            contexts,
            kv: prec("kv", &self.kv, Precision::Bf16)?,
            activations,
            gemm_activations,
            flash_attention: self.flash.as_deref().map(|s| parse_switch("flash", s)).transpose()?.unwrap_or(true),
            causal: self
                .causal
                .as_deref()
                .map(str::parse::<Causal>)
                .transpose()
                .map_err(|e| e.about("causal"))?
                .unwrap_or(Causal::Half),
            logits: self
                .logits
                .as_deref()
                .map(str::parse::<Logits>)
                .transpose()
                .map_err(|e| e.about("logits"))?
                .unwrap_or(Logits::Last),
            counting: self
                .counting
                .as_deref()
                .map(str::parse::<Counting>)
                .transpose()
                .map_err(|e| e.about("counting"))?
                .unwrap_or(Counting::Full),
            mla: self
                .mla
                .as_deref()
                .map(str::parse::<MlaForm>)
                .transpose()
                .map_err(|e| e.about("mla"))?
                .unwrap_or(MlaForm::Auto),
            chunks: None,
        };
        let weights = match (&self.weights, &model.checkpoint_quant) {
            (Some(w), _) => WeightPrecisions::uniform(Precision::parse_field("weights", w)?),
            (None, Some(CheckpointQuant::Known { weights, .. })) => *weights,
            (None, Some(CheckpointQuant::Unknown { method })) => {
                return Err(Error::Unsupported {
                    what: format!("quantization_config.quant_method `{method}` of model {}", model.name),
                    reason: format!(
                        "known: {}; set the weight precision explicitly",
                        crate::model::quant::QUANT_METHODS.join(", ")
                    ),
                })
            }
            (None, None) => WeightPrecisions::uniform(Precision::Bf16),
        };
        let f = |field: &str, v: &Option<String>, d: f64| {
            v.as_deref().map(|s| parse_f64(field, s)).transpose().map(|x| x.unwrap_or(d))
        };
        let efficiency = Efficiency::new(
            f("compute_efficiency", &self.compute_efficiency, Efficiency::default().compute)?,
            f("bandwidth_efficiency", &self.bandwidth_efficiency, Efficiency::default().bandwidth)?,
        )?;
        let routing = match (&self.zipf, &self.expert_loads, &self.expert_load_values) {
            (_, Some(_), Some(_)) => {
                return Err(Error::invalid("expert_loads", "given as text and as a file", "one list of loads"));
            }
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(Error::invalid("zipf", "given together with expert_loads", "one routing model"));
            }
            (Some(z), None, None) => Routing::zipf(parse_f64("zipf", z)?)?,
            (None, Some(l), None) => Routing::loads(parse_expert_loads(l)?.0)?,
            (None, None, Some(l)) => Routing::loads(l.0.clone())?,
            (None, None, None) => Routing::Uniform,
        };
        let mut sc = Scenario::new(model, gpu, workload, weights, efficiency, routing)?;
        let (engine, version) = self.engine.as_deref().map(Engine::with_version).transpose()?.unwrap_or_default();
        sc.clock = Clock {
            model: self.time_model.as_deref().map(str::parse).transpose()?.unwrap_or_default(),
            engine,
            version,
        };
        crate::clock::kernel_tables(sc.clock, &sc.gpu)?;
        if let Some(p) = &self.profile {
            sc.profile = *p.0;
        }
        let spec = self.parallel_spec()?;
        if spec == ParallelSpec::default() {
            return Ok(sc);
        }
        let sc = sc.with_parallel(&spec)?;
        if let Contexts::Mix(buckets) = &sc.workload.contexts {
            let m = sc.parallel.micro_batches_for(sc.workload.contexts.batch());
            if m > 1 && buckets.len() as u64 * m > crate::layout::MAX_DEALT_BUCKETS {
                return Err(Error::invalid(
                    "contexts",
                    format!("{} lengths over {m} micro-batches", buckets.len()),
                    format!("at most {} (length, micro-batch) pairs", crate::layout::MAX_DEALT_BUCKETS),
                ));
            }
        }
        Ok(sc)
    }

    /// The parallel inputs, parsed (validated against the model and GPU by
    /// [`Parallelism::new`]).
    pub fn parallel_spec(&self) -> Result<ParallelSpec> {
        let count = |field: &str, v: &Option<String>| v.as_deref().map(|s| parse_u64(field, s)).transpose();
        let d = ParallelSpec::default();
        Ok(ParallelSpec {
            tp: count("tp", &self.tp)?.unwrap_or(d.tp),
            pp: count("pp", &self.pp)?.unwrap_or(d.pp),
            ep: count("ep", &self.ep)?.unwrap_or(d.ep),
            dp: count("dp", &self.dp)?.unwrap_or(d.dp),
            micro_batches: count("micro_batches", &self.micro_batches)?,
            interconnect: self
                .interconnect
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e: Error| e.about("interconnect"))?,
            link_efficiency: match &self.link_efficiency {
                Some(s) => parse_f64("link_efficiency", s)?,
                None => d.link_efficiency,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_to_a_catalogue_leaves_the_built_in_one_alone() {
        let mut mine = Catalog::builtin();
        let mut spec = (**mine.preset("llama-3-8b").unwrap().spec()).clone();
        spec.name = "mine".into();
        mine.add_model(spec);
        mine.add_gpus(crate::hardware::parse_gpu_file(&crate::testing::minimal_gpu_toml("my-gpu")).unwrap());
        assert!(mine.preset("mine").is_ok() && mine.gpu("my-gpu").is_ok());
        let builtin = Catalog::builtin();
        assert!(builtin.preset("mine").is_err() && builtin.gpu("my-gpu").is_err());
        assert_eq!(builtin.presets().len() + 1, mine.presets().len());
    }

    fn req(pairs: &[(&str, &str)]) -> Result<Scenario> {
        let mut r = ScenarioRequest::default();
        for (k, v) in pairs {
            let v = Some(v.to_string());
            match *k {
                "model" => r.model = v,
                "gpu" => r.gpu = v,
                "phase" => r.phase = v,
                "batch" => r.batch = v,
                "ctx" => r.ctx = v,
                "contexts" => r.contexts = v,
                "weights" => r.weights = v,
                "kv" => r.kv = v,
                _ => unreachable!(),
            }
        }
        r.resolve(&Catalog::builtin())
    }

    /// The field names a `Deserialize` struct asks its deserializer for.
    fn struct_fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
        use serde::de::{self, Deserializer, Visitor};
        struct Capture<'a>(&'a mut &'static [&'static str]);
        impl<'de> Deserializer<'de> for Capture<'_> {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> std::result::Result<V::Value, Self::Error> {
                *self.0 = fields;
                Err(de::Error::custom("fields captured"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
                unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
            }
        }
        let mut fields: &'static [&'static str] = &[];
        let _ = T::deserialize(Capture(&mut fields));
        fields
    }

    /// The request with one text field set, through serde (the names are the struct's).
    fn with(name: &str, value: &str) -> ScenarioRequest {
        let pairs = serde_json::json!({ name: value });
        serde_json::from_value(pairs).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The input table describes every text field of the request, in order.
    #[test]
    fn the_input_table_is_the_request_fields() {
        let names: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
        assert_eq!(names, struct_fields::<ScenarioRequest>());
        for i in scenario_inputs() {
            assert!(!i.help.is_empty() && !i.help.contains('\n'), "{}: one line of help", i.name);
        }
    }

    /// Each table default is the resolver's: setting an input to its default
    /// gives the scenario of leaving it out.
    #[test]
    fn table_defaults_are_the_resolvers() {
        let catalog = Catalog::builtin();
        let default = format!("{:?}", ScenarioRequest::default().resolve(&catalog).unwrap());
        let mut checked = 0;
        for i in scenario_inputs() {
            if let Some(d) = &i.default {
                let sc = with(i.name, d).resolve(&catalog).unwrap_or_else(|e| panic!("{}={d}: {e}", i.name));
                assert_eq!(format!("{sc:?}"), default, "{}={d} is not the default", i.name);
                checked += 1;
            }
        }
        assert!(checked >= 18, "{checked}");
        assert_eq!(scenario_input("model").unwrap().default.as_deref(), Some("llama-3-8b"));
        assert_eq!(scenario_input("compute_efficiency").unwrap().default.as_deref(), Some("0.6"));
        assert_eq!(scenario_input("bandwidth_efficiency").unwrap().default.as_deref(), Some("0.8"));
    }

    /// Every listed value resolves, and a value outside the list is refused
    /// with the list.
    #[test]
    fn listed_values_are_the_resolvers() {
        let catalog = Catalog::builtin();
        for i in scenario_inputs() {
            let Accepted::OneOf(values) = i.accepted else { continue };
            for v in values {
                let req = ScenarioRequest { model: Some("deepseek-v3".into()), ..with(i.name, v) };
                if let Err(e) = req.resolve(&catalog) {
                    panic!("{}={v}: {e}", i.name);
                }
            }
            let bad = if i.name == "activations" { "int4" } else { "zzz" };
            let e = with(i.name, bad).resolve(&catalog).unwrap_err().to_string();
            assert!(e.contains(&values.join(", ")), "{}: {e}", i.name);
        }
    }

    /// Loads from a file reach the routing as numbers, as the same loads
    /// given as text do; both at once, or with a Zipf skew, are refused.
    #[test]
    fn expert_loads_parse_once() {
        let catalog = Catalog::builtin();
        let loads = parse_expert_loads_csv("expert,load\n0,3\n1,1.5\n2,0.25\n").unwrap();
        assert_eq!(loads, ExpertLoads(vec![3.0, 1.5, 0.25]));
        assert_eq!(loads, parse_expert_loads("3, 1.5,0.25").unwrap());
        let model = Some("mixtral-8x7b".to_string());
        let eight = ExpertLoads((1..=8).map(f64::from).collect());
        let typed =
            ScenarioRequest { model: model.clone(), expert_load_values: Some(eight.clone()), ..Default::default() };
        let text = ScenarioRequest {
            model: model.clone(),
            expert_loads: Some("1,2,3,4,5,6,7,8".into()),
            ..Default::default()
        };
        let (a, b) = (typed.resolve(&catalog).unwrap(), text.resolve(&catalog).unwrap());
        assert_eq!(format!("{:?}", a.routing), format!("{:?}", b.routing));
        assert!(matches!(a.routing, Routing::Loads(_)));
        let both = ScenarioRequest { expert_load_values: Some(eight.clone()), ..text };
        assert!(both.resolve(&catalog).unwrap_err().to_string().contains("expert_loads"));
        let skew =
            ScenarioRequest { model, zipf: Some("1".into()), expert_load_values: Some(eight), ..Default::default() };
        assert!(skew.resolve(&catalog).unwrap_err().to_string().contains("zipf"));
    }

    #[test]
    fn defaults_are_the_seed_scenario() {
        let s = Scenario::default_decode();
        assert_eq!(s.model.name, "llama-3-8b");
        assert_eq!(s.gpu.name, "h100-sxm");
        assert_eq!(s.workload.contexts, Contexts::Uniform { batch: 1, tokens: 2048 });
        assert_eq!(s.weights, WeightPrecisions::uniform(Precision::Bf16));
    }

    #[test]
    fn bad_inputs_get_one_line_naming_the_field() {
        let msg = |p: &[(&str, &str)]| req(p).unwrap_err().to_string();
        assert_eq!(msg(&[("batch", "0")]), "invalid `batch`: 0 (an integer from 1 to 1,073,741,824)");
        assert_eq!(msg(&[("batch", "-3")]), "invalid `batch`: \"-3\" (a non-negative integer)");
        assert!(msg(&[("gpu", "h900")]).starts_with("unknown GPU `h900`; did you mean `h200`? (23 accepted"));
        assert!(msg(&[("model", "llama-9")]).starts_with("unknown model `llama-9`; did you mean "));
        assert!(msg(&[("kv", "int3")])
            .starts_with("unknown precision for `kv` `int3`; did you mean `int8` or `int4`? accepted: fp32, bf16"));
        assert_eq!(msg(&[("phase", "train")]), "unknown phase `train`; accepted: decode, prefill");
        assert_eq!(
            msg(&[("phase", "prefill"), ("ctx", "0")]),
            "invalid `ctx`: 0 (a prompt of at least 1 token in prefill)"
        );
        assert!(msg(&[("contexts", "")]).contains("empty"));
        for m in [msg(&[("batch", "1e999")]), msg(&[("ctx", "99999999999999999999")])] {
            assert!(!m.contains('\n'), "{m}");
        }
    }

    #[test]
    fn aliases_and_case_resolve() {
        assert_eq!(req(&[("gpu", "H100")]).unwrap().gpu.name, "h100-sxm");
        assert_eq!(req(&[("model", "Llama-3.1-8B")]).unwrap().model.name, "llama-3-8b");
    }

    #[test]
    fn checkpoint_quantisation_is_the_default_weight_storage() {
        let s = req(&[("model", "gpt-oss-20b")]).unwrap();
        assert_eq!(s.weights.experts, Precision::MxFp4);
        assert_eq!(s.weights.attention, Precision::Bf16);
        let s = req(&[("model", "gpt-oss-20b"), ("weights", "bf16")]).unwrap();
        assert_eq!(s.weights.experts, Precision::Bf16);
    }

    #[test]
    fn context_mixes_parse() {
        let c = parse_contexts("2048x8, 32768x2").unwrap();
        assert_eq!(c.batch(), 10);
        assert_eq!(c.total_tokens(), 8.0 * 2048.0 + 2.0 * 32768.0);
        assert_eq!(parse_contexts("100,200,100").unwrap().batch(), 3);
        let h = parse_context_histogram("context,count\n# from logs\n1024,3\n4096,1\n").unwrap();
        assert_eq!(parse_context_histogram("# logs\ncontext,count\n1024,3\n4096,1\n").unwrap(), h);
        assert_eq!(h.total_tokens(), 3.0 * 1024.0 + 4096.0);
        assert!(parse_context_histogram("context,count\n").is_err());
        assert!(parse_context_histogram("1024,-1\n").unwrap_err().to_string().contains("histogram line 1"));
    }
}
