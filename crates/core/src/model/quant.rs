//! Weight storage per module class, from a `--weights` choice or from a checkpoint's
//! `quantization_config` (architectures.md §14).
//!
//! Rules: `--weights P` stores every GEMM weight (attention, MLPs, experts, LM head) at P, as the
//! reference calculator's ledger does; the embedding table and routers, which quantisers leave alone, stay at
//! `P.unquantised()` (bf16 for narrow formats). A checkpoint's `quantization_config` applies its
//! format to the linear layers it converts and leaves embedding, LM head, routers and anything in
//! `modules_to_not_convert`/`ignore` at bf16.

use crate::error::{Error, Result};
use crate::precision::Precision;
use serde::Serialize;
use serde_json::{Map, Value};

/// Storage precision of each class of weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WeightPrecisions {
    /// q/k/v/o and MLA projections.
    pub attention: Precision,
    /// Dense MLP projections.
    pub mlp: Precision,
    /// Routed experts.
    pub experts: Precision,
    /// Shared experts.
    pub shared_experts: Precision,
    /// MoE routers.
    pub router: Precision,
    /// Token (and position) embedding tables.
    pub embedding: Precision,
    /// LM head.
    pub lm_head: Precision,
}

impl WeightPrecisions {
    /// Every GEMM weight at `p`; embedding and router at `p.unquantised()`.
    pub fn uniform(p: Precision) -> Self {
        WeightPrecisions {
            attention: p,
            mlp: p,
            experts: p,
            shared_experts: p,
            router: p.unquantised(),
            embedding: p.unquantised(),
            lm_head: p,
        }
    }

    /// The classes with their precisions, in a fixed order.
    pub fn classes(&self) -> [(&'static str, Precision); 7] {
        [
            ("attention", self.attention),
            ("mlp", self.mlp),
            ("experts", self.experts),
            ("shared", self.shared_experts),
            ("router", self.router),
            ("embedding", self.embedding),
            ("lm_head", self.lm_head),
        ]
    }

    /// Short description: one name when uniform (`--weights P`), otherwise the most common format
    /// with the exceptions (`fp8-b128 (router, embedding, lm_head bf16)`).
    pub fn describe(&self) -> String {
        self.describe_with(Precision::name)
    }

    /// [`Self::describe`] with each precision named by `name` (a front end's rounded widths).
    pub fn describe_with(&self, name: impl Fn(Precision) -> String) -> String {
        if *self == Self::uniform(self.attention) {
            return name(self.attention);
        }
        let classes = self.classes();
        let common = classes
            .iter()
            .map(|(_, p)| *p)
            .max_by_key(|p| classes.iter().filter(|(_, q)| q == p).count())
            .unwrap_or(Precision::Bf16);
        let mut by_format: Vec<(Precision, Vec<&str>)> = Vec::new();
        for (name, p) in classes.iter().filter(|(_, p)| *p != common) {
            match by_format.iter_mut().find(|(q, _)| q == p) {
                Some((_, names)) => names.push(name),
                None => by_format.push((*p, vec![name])),
            }
        }
        let exceptions: Vec<String> =
            by_format.iter().map(|(p, names)| format!("{} {}", names.join(", "), name(*p))).collect();
        format!("{} ({})", name(common), exceptions.join("; "))
    }
}

/// What a checkpoint's `quantization_config` says about weight storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CheckpointQuant {
    /// A method this tool models.
    Known {
        /// `quant_method` as written.
        method: String,
        /// Resulting storage per class.
        weights: WeightPrecisions,
        /// Format the checkpoint quantises GEMM inputs to (W8A8 fp8 with an `activation_scheme`,
        /// compressed-tensors `input_activations`); `None` for weight-only schemes.
        gemm_activations: Option<Precision>,
    },
    /// A method this tool does not model; the user must pass `--weights`.
    Unknown {
        /// `quant_method` as written.
        method: String,
    },
}

/// Methods understood by [`parse_quantization_config`].
pub const QUANT_METHODS: &[&str] =
    &["fp8", "fbgemm_fp8", "mxfp4", "gptq", "awq", "compressed-tensors", "bitsandbytes", "modelopt"];

/// NVIDIA ModelOpt's `quant_algo` names and what each stores: the weights, and the format GEMM
/// inputs are quantised to (`None`: weight-only). MXFP8 (e4m3 with an e8m0 scale a 32) is
/// counted as fp8 without its scales (0.8 % of its bytes).
const MODELOPT_ALGOS: &[(&str, Precision, Option<Precision>)] = &[
    ("NVFP4", Precision::NvFp4, Some(Precision::NvFp4)),
    ("NVFP4_AWQ", Precision::NvFp4, Some(Precision::NvFp4)),
    ("W4A16_NVFP4", Precision::NvFp4, None),
    ("FP8", Precision::Fp8, Some(Precision::Fp8)),
    ("FP8_PB_WO", Precision::Fp8Block { block: 128 }, None),
    ("MXFP8", Precision::Fp8, Some(Precision::Fp8)),
    ("W4A16_AWQ", Precision::Int4Group { group: 128 }, None),
    ("INT4_AWQ", Precision::Int4Group { group: 128 }, None),
    ("W4A8_AWQ", Precision::Int4Group { group: 128 }, Some(Precision::Fp8)),
    ("INT8_SQ", Precision::Int8, Some(Precision::Int8)),
];

/// The accepted `quant_algo` names, for errors.
fn modelopt_algo_names() -> String {
    let mut names: Vec<&str> = MODELOPT_ALGOS.iter().map(|(n, _, _)| *n).collect();
    names.push("MIXED_PRECISION");
    names.join(", ")
}

/// Expected-value text for a GPTQ/AWQ/compressed-tensors integer group size.
const GROUP_SIZES: &str = "a power of two from 16 to 4,096, or -1 for one scale per output channel";

/// Where a checkpoint keeps each class of weights: transformers' module names, from the
/// family's table (`layers_module`, `attn_module`, … in `families.toml`), and which layers have
/// each class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointModules {
    /// The layer list (`model.layers`; `transformer.h` for GPT-2 and Falcon).
    pub layers: String,
    /// The attention block inside a layer (`self_attn`).
    pub attention: String,
    /// The block of a layer's recurrent mixer where it has its own name (Qwen3.5's
    /// `linear_attn`): the attention class's weights there.
    pub recurrent: Option<String>,
    /// The MLP or MoE block inside a layer (`mlp`; `block_sparse_moe` for Mixtral).
    pub mlp: String,
    /// The routed experts inside a layer (`mlp.experts`; Gemma 4's `experts` beside its MLP).
    pub experts: String,
    /// The router inside the MoE block (`gate`; `router` for gpt-oss).
    pub router: String,
    /// The shared experts inside the MoE block (`shared_expert`; `shared_experts` for DeepSeek).
    pub shared_experts: String,
    /// Decoder layers.
    pub num_layers: usize,
    /// The layers with a token mixer (attention or recurrent).
    pub mixer_layers: Vec<usize>,
    /// The layers with a dense MLP.
    pub dense_layers: Vec<usize>,
    /// The layers with routed experts.
    pub moe_layers: Vec<usize>,
}

impl CheckpointModules {
    /// The common naming (Llama, Qwen, Mistral, DeepSeek …) of `layers` layers that each have
    /// every class.
    pub fn uniform(layers: usize) -> Self {
        let all: Vec<usize> = (0..layers).collect();
        CheckpointModules {
            layers: "model.layers".into(),
            attention: "self_attn".into(),
            recurrent: None,
            mlp: "mlp".into(),
            experts: "mlp.experts".into(),
            router: "gate".into(),
            shared_experts: "shared_expert".into(),
            num_layers: layers,
            mixer_layers: all.clone(),
            dense_layers: all.clone(),
            moe_layers: all,
        }
    }
}

impl Default for CheckpointModules {
    /// The common naming of a one-layer model.
    fn default() -> Self {
        Self::uniform(1)
    }
}

/// Whether `pattern` (an entry of `modules_to_not_convert`, `ignored_layers`, `ignore` or
/// `llm_int8_skip_modules`) names `module` or one of its ancestors, as the quantisers match
/// names: whole dotted components, never a substring of one (`attention` does not name
/// `post_attention_layernorm`), `*` standing for any one component; the pattern is the module's
/// leading components (`model.layers.*.self_attn`, `lm_head`: transformers' prefix and exact
/// matches, vLLM's prefixes) or its trailing ones (`self_attn`, `mlp.gate`: transformers'
/// suffix match). A `re:` pattern (compressed-tensors) is a regular expression matched from the
/// start of the name.
pub fn names_module(pattern: &str, module: &str) -> bool {
    if let Some(re) = pattern.strip_prefix("re:") {
        return regex_lite::Regex::new(&format!("^(?:{re})")).is_ok_and(|r| r.is_match(module));
    }
    if pattern.split('.').any(|c| c.contains('*') && c != "*") {
        // ModelOpt's globs (`model.layers.0*`, `*self_attn*`): `*` matches any run of
        // characters, dots included, over the whole name or one of its ancestors.
        let mut name = module;
        loop {
            if glob(pattern.as_bytes(), name.as_bytes()) {
                return true;
            }
            match name.rfind('.') {
                Some(i) => name = &name[..i],
                None => return false,
            }
        }
    }
    let p: Vec<&str> = pattern.split('.').collect();
    let m: Vec<&str> = module.split('.').collect();
    if p.len() > m.len() {
        return false;
    }
    let same = |a: &[&str], b: &[&str]| a.iter().zip(b).all(|(x, y)| *x == "*" || x == y);
    same(&p, &m[..p.len()]) || same(&p, &m[m.len() - p.len()..])
}

/// Whether glob `p` (`*` any run of bytes) matches all of `s` (the classic two-pointer match
/// with one backtrack point: linear in practice, never exponential).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < s.len() {
        if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == s[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == b'*')
}

/// The ways checkpoints name layer `i`'s module `block`: under the family's layer list and under
/// the prefixes vision-language wrappers put before it (`model.language_model.layers`,
/// `language_model.model.layers`), which ModelOpt's and compressed-tensors' lists use.
fn layer_block_names(modules: &CheckpointModules, i: usize, block: &str) -> Vec<String> {
    let mut prefixes =
        vec![modules.layers.as_str(), "model.layers", "model.language_model.layers", "language_model.model.layers"];
    prefixes.dedup();
    let mut names: Vec<String> = prefixes.iter().map(|p| format!("{p}.{i}.{block}")).collect();
    names.sort();
    names.dedup();
    names
}

/// In how many of `layers` `patterns` leave the module `block` (relative to a layer, `self_attn`
/// or `mlp.experts`, or the recurrent block where the layer has one) unquantised: a pattern names
/// it or an ancestor.
fn layers_skipping(patterns: &[String], modules: &CheckpointModules, blocks: &[&str], layers: &[usize]) -> usize {
    layers
        .iter()
        .filter(|i| {
            blocks.iter().any(|block| {
                layer_block_names(modules, **i, block).iter().any(|name| patterns.iter().any(|p| names_module(p, name)))
            })
        })
        .count()
}

/// A JSON value for a message, cut to its first 60 characters.
fn shown(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Typed reads from one object of `quantization_config` (the top level or a compressed-tensors
/// group), naming `prefix.key` in every error. Absent and `null` read as `None`.
struct Keys<'a> {
    obj: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Keys<'a> {
    fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn invalid(&self, key: &str, v: &Value, expected: impl Into<String>) -> Error {
        Error::invalid(self.field(key), shown(v), expected)
    }

    /// An integer (`4` or `4.0`).
    fn int(&self, key: &str) -> Result<Option<i64>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        v.as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| self.invalid(key, v, "an integer"))
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.invalid(key, v, "true or false")),
        }
    }

    /// A string from a closed set (compared without case).
    fn one_of(&self, key: &str, accepted: &[&str]) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if accepted.iter().any(|a| a.eq_ignore_ascii_case(s)) => {
                Ok(Some(s.to_ascii_lowercase()))
            }
            Some(v) => Err(self.invalid(key, v, format!("one of {}", accepted.join(", ")))),
        }
    }

    /// A list of module-name patterns.
    fn names(&self, key: &str) -> Result<Vec<String>> {
        let Some(v) = self.get(key) else { return Ok(Vec::new()) };
        let list = v.as_array().ok_or_else(|| self.invalid(key, v, "a list of module names"))?;
        list.iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(|| self.invalid(key, x, "a list of module names")))
            .collect()
    }

    /// An object (a compressed-tensors scheme or group).
    fn object(&self, key: &str) -> Result<Option<Keys<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(Keys { obj: o, prefix: self.field(key) })),
            Some(v) => Err(self.invalid(key, v, "an object")),
        }
    }

    /// A square scaling block `[N, N]`, N a power of two from 16 to 4,096 (what `fp8-bN` models).
    fn square_block(&self, key: &str) -> Result<Option<u32>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        let edge = match v.as_array().map(Vec::as_slice) {
            Some([a, b]) if a == b => a.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        };
        match edge {
            Some(n) if n.is_power_of_two() && (16..=4096).contains(&n) => Ok(Some(n)),
            _ => Err(self.invalid(key, v, "two equal powers of two from 16 to 4,096, such as [128, 128]")),
        }
    }

    /// Integer group size: absent gives `default`; -1 is per output channel (`None`); otherwise a
    /// power of two in 16..=4096 (what `int4-gN` models).
    fn group_size(&self, key: &str, default: Option<u32>) -> Result<Option<u32>> {
        match self.int(key)? {
            None => Ok(default),
            Some(-1) => Ok(None),
            Some(g) => match u32::try_from(g) {
                Ok(g) if g.is_power_of_two() && (16..=4096).contains(&g) => Ok(Some(g)),
                _ => Err(self.invalid(key, &Value::from(g), GROUP_SIZES)),
            },
        }
    }
}

/// Integer weights of `bits` bits with one scale per `group` values (`None`: per output channel).
/// int8 has no grouped format here: its group scales (4/g B per weight) are left out, with a note.
fn int_weights(k: &Keys, method: &str, bits: i64, group: Option<u32>, notes: &mut Vec<String>) -> Precision {
    match (bits, group) {
        (4, Some(g)) => Precision::Int4Group { group: g },
        (4, None) => Precision::Int4,
        _ => {
            if let Some(g) = group {
                notes.push(format!(
                    "{}: {method} 8-bit weights with a scale per {g} values are counted as int8 without the scales \
                     ({:.1} % of the weight bytes left out)",
                    k.prefix,
                    400.0 / f64::from(g)
                ));
            }
            Precision::Int8
        }
    }
}

/// `bits` of GPTQ/AWQ/compressed-tensors integer weights: one of `accepted`.
fn int_bits(k: &Keys, key: &str, bits: i64, accepted: &[i64], what: &str) -> Result<i64> {
    if accepted.contains(&bits) {
        Ok(bits)
    } else {
        Err(k.invalid(key, &Value::from(bits), what))
    }
}

/// Read `quantization_config`. Returns `None` when absent or null.
///
/// Notes for settings counted by a stated fallback go to [`parse_quantization_config_with_notes`].
pub fn parse_quantization_config(q: Option<&Value>) -> Result<Option<CheckpointQuant>> {
    Ok(parse_quantization_config_with_notes(q)?.map(|(quant, _)| quant))
}

/// [`parse_quantization_config_for`] with the common module naming of a one-layer model.
pub fn parse_quantization_config_with_notes(q: Option<&Value>) -> Result<Option<(CheckpointQuant, Vec<String>)>> {
    parse_quantization_config_for(q, &CheckpointModules::default())
}

/// Read `quantization_config`, with a note for each setting that is counted by a stated fallback
/// (the notes join the model's notes and reach the ledger's output). `None` when absent or null.
///
/// Every key that changes bytes or FLOPs is modelled, refused with the accepted values, or noted:
///
/// | method | key | handling |
/// |---|---|---|
/// | all | `quant_method` | one of [`QUANT_METHODS`]; another name is recorded as [`CheckpointQuant::Unknown`] (the scenario then needs `--weights`) |
/// | all | `modules_to_not_convert`, `ignored_layers`, `ignore`, `llm_int8_skip_modules` | lists of module names; matching classes stay bf16 |
/// | `fp8`, `fbgemm_fp8` | `fmt` | `e4m3` or `e5m2` (both 1 B, the fp8 peak); else refused |
/// | | `weight_block_size` | `[N, N]`, N a power of two from 16 to 4,096 → `fp8-bN`; else refused |
/// | | `activation_scheme` | `dynamic` or `static` → W8A8 (GEMMs at the fp8 peak); else refused |
/// | `mxfp4` | `dequantize` | `true`: transformers loads the experts as bf16, counted so (noted) |
/// | | `bits`, `group_size` | if given, 4 and 32 (the MXFP4 format); else refused |
/// | `gptq` | `bits` | required; 4 or 8; else refused |
/// | `awq` | `bits` | 4 (default 4); else refused |
/// | `gptq`, `awq` | `group_size` | default 128; -1 (per channel, `int4`) or a power of two from 16 to 4,096 (`int4-gN`); else refused; 8-bit groups noted |
/// | `gptq` | `modules_in_block_to_quantize` | noted: every linear layer of a block is counted quantised |
/// | `bitsandbytes` | `load_in_4bit`, `load_in_8bit` | exactly one true; else refused |
/// | | `bnb_4bit_quant_type` | `nf4` or `fp4` (4 bits + an fp32 absmax per 64 = `int4-g64`); else refused |
/// | | `bnb_4bit_use_double_quant` | `true` noted (counted at 4.5 bits; double quantisation stores ≈4.13) |
/// | | `bnb_4bit_compute_dtype` | a 16-bit float (GEMMs at the activation format); `float32` noted; else refused |
/// | | `llm_int8_has_fp16_weight` | `true` (fp16 training weights) refused |
/// | `compressed-tensors` | `config_groups` | required; every group must give the same scheme, else refused |
/// | | `…weights.num_bits`, `.type` | 8 float (`fp8`, or `fp8-bN` with `strategy` `block`), 4 float with `group_size` 16 (`nvfp4`) or 32 (`mxfp4`), 4 or 8 int; else refused |
/// | | `…weights.group_size` | as GPTQ for int; 8-bit groups noted |
/// | | `…input_activations` | 8 float → fp8, 8 int → int8, 4 float → nvfp4 (W8A8/W4A4 math), 16 bits → weight-only; else refused |
/// | | `kv_cache_scheme` | noted: the KV cache is counted at `--kv` |
/// | | `sparsity_config` | noted: weights are counted dense |
///
/// Keys not listed (`desc_act`, `sym`, `damp_percent`, `zero_point`, `version`, `checkpoint_format`,
/// `activation_scale_ub`, `format`, …) change neither bytes nor FLOPs in this model.
///
/// The lists of modules left unquantised are matched against the checkpoint's module names
/// (`modules`) by [`names_module`]: a class of weights stays 16-bit when the lists name its block
/// (or an ancestor) in every layer; when they name it in some layers only, it is counted
/// quantised everywhere and a note says so.
pub fn parse_quantization_config_for(
    q: Option<&Value>,
    modules: &CheckpointModules,
) -> Result<Option<(CheckpointQuant, Vec<String>)>> {
    let Some(q) = q.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let obj = q.as_object().ok_or_else(|| Error::invalid("quantization_config", shown(q), "an object"))?;
    let k = Keys { obj, prefix: "quantization_config".into() };
    let method = match k.get("quant_method") {
        Some(Value::String(m)) => m.clone(),
        Some(v) => return Err(k.invalid("quant_method", v, format!("a method name: {}", QUANT_METHODS.join(", ")))),
        // ModelOpt's exports name the algorithm and their producer, not always a method.
        None if k.get("quant_algo").is_some() => "modelopt".into(),
        None => {
            return Err(Error::MissingField {
                field: "quantization_config.quant_method".into(),
                context: "a quantised checkpoint".into(),
            })
        }
    };
    let mut notes = Vec::new();
    let mut skip = Vec::new();
    for key in ["modules_to_not_convert", "ignored_layers", "ignore", "llm_int8_skip_modules", "exclude_modules"] {
        skip.extend(k.names(key)?);
    }

    let base = Precision::Bf16;
    let mut gemm_activations = None;
    let linear = match method.as_str() {
        "fp8" | "fbgemm_fp8" => {
            k.one_of("fmt", &["e4m3", "e5m2", "float8_e4m3fn", "float8_e5m2"])?;
            // `activation_scheme` (dynamic or static) means the inputs are quantised to fp8 too: W8A8.
            if k.one_of("activation_scheme", &["dynamic", "static"])?.is_some() || method == "fbgemm_fp8" {
                gemm_activations = Some(Precision::Fp8);
            }
            match k.square_block("weight_block_size")? {
                Some(n) => Precision::Fp8Block { block: n },
                None => Precision::Fp8,
            }
        }
        "mxfp4" => {
            if let Some(b) = k.int("bits")?.filter(|b| *b != 4) {
                return Err(k.invalid("bits", &Value::from(b), "4: MXFP4 stores 4-bit e2m1 values"));
            }
            if let Some(g) = k.int("group_size")?.filter(|g| *g != 32) {
                return Err(k.invalid("group_size", &Value::from(g), "32: MXFP4 shares one scale per 32 values"));
            }
            if k.bool("dequantize")? == Some(true) {
                notes.push(
                    "quantization_config.dequantize = true: transformers dequantises the MXFP4 experts when it loads them, so they are counted at bf16".into(),
                );
                skip.push("experts".into());
            }
            Precision::MxFp4
        }
        "gptq" | "awq" => {
            let bits = if method == "gptq" {
                let bits = k.int("bits")?.ok_or_else(|| Error::MissingField {
                    field: "quantization_config.bits".into(),
                    context: "quant_method gptq".into(),
                })?;
                int_bits(&k, "bits", bits, &[4, 8], "4 or 8")?
            } else {
                int_bits(&k, "bits", k.int("bits")?.unwrap_or(4), &[4], "4: AWQ stores 4-bit weights")?
            };
            // transformers' GPTQConfig and AwqConfig both default group_size to 128.
            let group = k.group_size("group_size", Some(128))?;
            if k.get("modules_in_block_to_quantize").is_some() {
                notes.push(
                    "quantization_config.modules_in_block_to_quantize is not modelled: every linear layer of a block is counted quantised".into(),
                );
            }
            int_weights(&k, &method, bits, group, &mut notes)
        }
        "bitsandbytes" => {
            if k.bool("llm_int8_has_fp16_weight")? == Some(true) {
                return Err(k.invalid(
                    "llm_int8_has_fp16_weight",
                    &Value::Bool(true),
                    "false: fp16 training weights are not modelled",
                ));
            }
            match (k.bool("load_in_4bit")?.unwrap_or(false), k.bool("load_in_8bit")?.unwrap_or(false)) {
                (false, true) => Precision::Int8,
                (true, false) => {
                    k.one_of("bnb_4bit_quant_type", &["nf4", "fp4"])?;
                    let compute = k.one_of(
                        "bnb_4bit_compute_dtype",
                        &["bfloat16", "float16", "bf16", "fp16", "float32", "fp32"],
                    )?;
                    if compute.as_deref().is_some_and(|c| c.ends_with("32")) {
                        notes.push(
                            "quantization_config.bnb_4bit_compute_dtype = float32 is not modelled: the GEMMs are counted at the activation format (`activations`, bf16 by default)".into(),
                        );
                    }
                    if k.bool("bnb_4bit_use_double_quant")? == Some(true) {
                        notes.push(
                            "quantization_config.bnb_4bit_use_double_quant: counted at 4.5 bits per weight (int4-g64, fp32 scales); double quantisation stores about 4.13"
                                .into(),
                        );
                    }
                    // NF4/FP4: 4 bits + an fp32 absmax per 64 values = 4.5 bits, the size of int4-g64.
                    Precision::Int4Group { group: 64 }
                }
                (a, b) => {
                    return Err(Error::invalid(
                        k.field("load_in_4bit"),
                        format!("{a} with load_in_8bit {b}"),
                        "exactly one of load_in_4bit and load_in_8bit true",
                    ))
                }
            }
        }
        "compressed-tensors" => match compressed_tensors_scheme(&k, &mut notes)? {
            CtScheme::One(w, inputs) => {
                gemm_activations = inputs;
                w
            }
            CtScheme::Mixed(groups) => {
                let (weights, inputs) = compressed_tensors_mixed(&groups, modules, &skip, &mut notes)?;
                return Ok(Some((CheckpointQuant::Known { method, weights, gemm_activations: inputs }, notes)));
            }
        },
        "modelopt" => {
            if let Some(kv) = k.get("kv_cache_quant_algo").and_then(Value::as_str) {
                notes.push(format!(
                    "quantization_config.kv_cache_quant_algo {kv} is not applied: the KV cache is counted at `kv` (bf16 by default); set `kv` to match the engine's cache"
                ));
            }
            let algo = k.get("quant_algo").and_then(Value::as_str).unwrap_or_default().to_ascii_uppercase();
            if algo == "MIXED_PRECISION" {
                let weights = modelopt_mixed(&k, modules, &skip, &mut notes)?;
                return Ok(Some((CheckpointQuant::Known { method, weights, gemm_activations: None }, notes)));
            }
            let (_, w, inputs) = MODELOPT_ALGOS.iter().find(|(n, _, _)| *n == algo).ok_or_else(|| {
                k.invalid("quant_algo", k.get("quant_algo").unwrap_or(&Value::Null), modelopt_algo_names())
            })?;
            gemm_activations = *inputs;
            *w
        }
        _ => return Ok(Some((CheckpointQuant::Unknown { method }, notes))),
    };
    // Each class stays 16-bit where the lists name its block in every layer that has it.
    let mut class = |name: &str, blocks: &[&str], layers: &[usize], p: Precision| -> Precision {
        let n = layers.len();
        match layers_skipping(&skip, modules, blocks, layers) {
            0 => p,
            k if k == n => base,
            k => {
                notes.push(format!(
                    "quantization_config leaves the {name} of {k} of {n} layers unquantised: counted as {p} in every layer"
                ));
                p
            }
        }
    };
    let shared = format!("{}.{}", modules.mlp, modules.shared_experts);
    let attention: Vec<&str> =
        std::iter::once(modules.attention.as_str()).chain(modules.recurrent.as_deref()).collect();
    let weights = if method == "mxfp4" {
        // gpt-oss: MXFP4 on the routed experts only; everything else stays bf16.
        WeightPrecisions {
            experts: class("experts", &[&modules.experts], &modules.moe_layers, linear),
            ..WeightPrecisions::uniform(base)
        }
    } else {
        WeightPrecisions {
            attention: class("attention", &attention, &modules.mixer_layers, linear),
            mlp: class("MLP", &[&modules.mlp], &modules.dense_layers, linear),
            experts: class("experts", &[&modules.experts], &modules.moe_layers, linear),
            shared_experts: class("shared experts", &[&shared], &modules.moe_layers, linear),
            router: base,
            embedding: base,
            lm_head: base,
        }
    };
    Ok(Some((CheckpointQuant::Known { method, weights, gemm_activations }, notes)))
}

/// The classes of weights of a ModelOpt `MIXED_PRECISION` checkpoint, each at the format most of
/// its layers' modules have: from `quantized_layers` (`{module: {quant_algo}}`) or from
/// `config_groups` whose `targets` name modules; a module listed nowhere, or excluded, stays 16-bit.
fn modelopt_mixed(
    k: &Keys,
    modules: &CheckpointModules,
    skip: &[String],
    notes: &mut Vec<String>,
) -> Result<WeightPrecisions> {
    let mut formats: Vec<(String, Precision)> = Vec::new();
    if let Some(layers) = k.object("quantized_layers")? {
        for (name, v) in layers.obj {
            let algo = v.get("quant_algo").and_then(Value::as_str).unwrap_or_default().to_ascii_uppercase();
            let (_, w, _) = MODELOPT_ALGOS
                .iter()
                .find(|(n, _, _)| *n == algo)
                .ok_or_else(|| layers.invalid(name, v, format!("a quant_algo of {}", modelopt_algo_names())))?;
            formats.push((name.clone(), *w));
        }
    } else if let Some(groups) = k.object("config_groups")? {
        for name in groups.obj.keys() {
            let g = groups.object(name)?.ok_or_else(|| groups.invalid(name, &Value::Null, "an object"))?;
            let Some(w) = g.object("weights")? else { continue };
            let p = compressed_tensors_weights(&w, notes)?;
            formats.extend(g.names("targets")?.into_iter().map(|t| (t, p)));
        }
    }
    let base = Precision::Bf16;
    let layers = modules.num_layers;
    // The class of a module of layer `i`, by the block it sits in.
    let class_of = |name: &str, i: usize| -> Option<usize> {
        let at = name.find(&format!("layers.{i}."))? + format!("layers.{i}.").len();
        let rest = &name[at..];
        let block = rest.split('.').next()?;
        let has = |part: &str| rest.contains(&format!(".{part}.")) || rest.ends_with(&format!(".{part}"));
        if has(&modules.shared_experts) {
            Some(3)
        } else if has("experts") || block == "experts" {
            Some(2)
        } else if [
            modules.attention.as_str(),
            modules.recurrent.as_deref().unwrap_or("linear_attn"),
            "self_attn",
            "attn",
        ]
        .contains(&block)
        {
            Some(0)
        } else if [modules.mlp.as_str(), "mlp", "feed_forward", "block_sparse_moe"].contains(&block) {
            Some(1)
        } else {
            None
        }
    };
    let mut counts: [Vec<(Precision, usize)>; 4] = Default::default();
    for (name, p) in &formats {
        for i in 0..layers {
            if !name.contains(&format!("layers.{i}.")) {
                continue;
            }
            if let Some(c) = class_of(name, i) {
                match counts[c].iter_mut().find(|(q, _)| q == p) {
                    Some((_, n)) => *n += 1,
                    None => counts[c].push((*p, 1)),
                }
            }
            break;
        }
    }
    let majority = |c: usize, blocks: &[&str], with: &[usize]| -> Precision {
        let p = counts[c].iter().max_by_key(|(_, n)| *n).map_or(base, |(p, _)| *p);
        if !with.is_empty() && layers_skipping(skip, modules, blocks, with) == with.len() {
            base
        } else {
            p
        }
    };
    let shared = format!("{}.{}", modules.mlp, modules.shared_experts);
    let attention: Vec<&str> =
        std::iter::once(modules.attention.as_str()).chain(modules.recurrent.as_deref()).collect();
    let weights = WeightPrecisions {
        attention: majority(0, &attention, &modules.mixer_layers),
        mlp: majority(1, &[&modules.mlp], &modules.dense_layers),
        experts: majority(2, &[&modules.experts], &modules.moe_layers),
        shared_experts: majority(3, &[&shared], &modules.moe_layers),
        router: base,
        embedding: base,
        lm_head: base,
    };
    notes.push(format!(
        "quantization_config.quant_algo MIXED_PRECISION: each class of weights counted at the format most of its modules have ({})",
        weights.describe()
    ));
    Ok(weights)
}

/// A compressed-tensors config's schemes: one for every group, or groups with schemes of their
/// own (`format: mixed-precision`: FP8 attention beside NVFP4 experts).
enum CtScheme {
    /// Every group stores weights, and quantises GEMM inputs, the same way.
    One(Precision, Option<Precision>),
    /// Groups that differ, each with the modules it targets.
    Mixed(Vec<CtGroup>),
}

/// One compressed-tensors group of a mixed config.
struct CtGroup {
    /// Its weights' format.
    weights: Precision,
    /// Its GEMM inputs' format (`None`: 16-bit, weight-only).
    inputs: Option<Precision>,
    /// The modules it targets: `Linear` (every linear layer), `re:` patterns or names.
    targets: Vec<String>,
}

/// The compressed-tensors quantisation scheme(s) of `k` ([`CtScheme`]).
fn compressed_tensors_scheme(k: &Keys, notes: &mut Vec<String>) -> Result<CtScheme> {
    let groups = k.object("config_groups")?.ok_or_else(|| Error::MissingField {
        field: "quantization_config.config_groups".into(),
        context: "quant_method compressed-tensors".into(),
    })?;
    let mut parsed: Vec<CtGroup> = Vec::new();
    for name in groups.obj.keys() {
        let g = groups.object(name)?.ok_or_else(|| groups.invalid(name, &Value::Null, "an object"))?;
        let w = g
            .object("weights")?
            .ok_or_else(|| Error::MissingField { field: g.field("weights"), context: "compressed-tensors".into() })?;
        let weights = compressed_tensors_weights(&w, notes)?;
        let inputs = match g.object("input_activations")? {
            None => None,
            Some(i) => {
                let float = i.one_of("type", &["int", "float"])?.as_deref() == Some("float");
                match (i.int("num_bits")?.unwrap_or(8), float) {
                    (8, true) => Some(Precision::Fp8),
                    (8, false) => Some(Precision::Int8),
                    (4, true) => Some(Precision::NvFp4),
                    (16, _) => None,
                    (b, _) => {
                        return Err(i.invalid(
                            "num_bits",
                            &Value::from(b),
                            "8 int or float, 4 float, or 16 for weight-only",
                        ))
                    }
                }
            }
        };
        parsed.push(CtGroup { weights, inputs, targets: g.names("targets")? });
    }
    let Some(first) = parsed.first() else {
        return Err(Error::invalid("quantization_config.config_groups", "{}", "at least one group"));
    };
    let (weights, inputs) = (first.weights, first.inputs);
    if k.get("kv_cache_scheme").is_some_and(|v| !v.is_null()) {
        notes.push(
            "quantization_config.kv_cache_scheme is not applied: the KV cache is counted at `kv` (bf16 by default); set `kv` = fp8 to match an fp8 cache".into(),
        );
    }
    if k.get("sparsity_config").is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty())) {
        notes.push("quantization_config.sparsity_config is not modelled: the weights are counted dense".into());
    }
    if parsed.iter().all(|g| (g.weights, g.inputs) == (weights, inputs)) {
        Ok(CtScheme::One(weights, inputs))
    } else {
        Ok(CtScheme::Mixed(parsed))
    }
}

/// The weights of a mixed compressed-tensors config, class by class: each class (attention,
/// dense MLP, routed experts, shared experts) takes the format of the group whose targets name
/// its modules — a `re:` pattern or a name matched against the names its modules have in the
/// checkpoints of this family and the common ones (`self_attn`/`attn`, `mlp`/`ffn`,
/// `experts.N`, `*_proj`), a group naming modules before one that targets every `Linear` —
/// and stays 16-bit where no group names it or the ignore list names all its layers. The GEMM
/// inputs of every class are quantised as the routed experts' group says (the dense MLP's
/// without experts): one input format for the step is modelled, the one of most of its FLOPs.
fn compressed_tensors_mixed(
    groups: &[CtGroup],
    modules: &CheckpointModules,
    skip: &[String],
    notes: &mut Vec<String>,
) -> Result<(WeightPrecisions, Option<Precision>)> {
    const PROJECTIONS: [&str; 18] = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "qkv_proj",
        "q_a_proj",
        "q_b_proj",
        "kv_a_proj_with_mqa",
        "kv_b_proj",
        "wq_a",
        "wq_b",
        "wkv",
        "wo_a",
        "wo_b",
        "fused_wqa_wkv",
        "in_proj",
        "out_proj",
        "dense",
    ];
    const FFN: [&str; 8] = ["gate_proj", "up_proj", "down_proj", "gate_up_proj", "w1", "w2", "w3", "fc1"];
    let layer_prefixes = [format!("{}.0", modules.layers), "model.layers.0".to_string(), "layers.0".to_string()];
    let attention_blocks: Vec<&str> = [modules.attention.as_str(), "self_attn", "attn", "attention"]
        .into_iter()
        .chain(modules.recurrent.as_deref())
        .collect();
    let mlp_blocks = [modules.mlp.as_str(), "mlp", "ffn", "feed_forward", "block_sparse_moe"];
    let names = |blocks: &[&str], middle: &[&str], leaves: &[&str]| -> Vec<String> {
        let mut out = Vec::new();
        for p in &layer_prefixes {
            for b in blocks {
                for m in middle {
                    for l in leaves {
                        out.push(
                            [p.as_str(), b, m, l]
                                .iter()
                                .filter(|s| !s.is_empty())
                                .copied()
                                .collect::<Vec<_>>()
                                .join("."),
                        );
                    }
                }
            }
        }
        out
    };
    let shared: Vec<&str> = [modules.shared_experts.as_str(), "shared_experts", "shared_expert"].into();
    let classes = [
        names(&attention_blocks, &[""], &PROJECTIONS),
        names(&mlp_blocks, &[""], &FFN),
        names(&mlp_blocks, &["experts.0"], &FFN),
        names(&mlp_blocks, &shared, &FFN),
    ];
    // The group of each class: one that names its modules first, then one that targets `Linear`.
    let group_of = |candidates: &[String]| -> Option<&CtGroup> {
        let named =
            |g: &&CtGroup| g.targets.iter().any(|t| t != "Linear" && candidates.iter().any(|c| names_module(t, c)));
        groups.iter().find(named).or_else(|| groups.iter().find(|g| g.targets.iter().any(|t| t == "Linear")))
    };
    if classes.iter().all(|c| group_of(c).is_none()) {
        let targets: Vec<String> = groups.iter().flat_map(|g| g.targets.iter().cloned()).collect();
        return Err(Error::invalid(
            "quantization_config.config_groups",
            if targets.is_empty() {
                "groups without targets".to_string()
            } else {
                format!("targets {}", targets.join(", "))
            },
            "groups whose `targets` name this model's modules (`Linear`, `re:` patterns or module names)",
        ));
    }
    let base = Precision::Bf16;
    let format = |c: usize, blocks: &[&str], layers: &[usize]| -> Precision {
        let all_skipped = !layers.is_empty() && layers_skipping(skip, modules, blocks, layers) == layers.len();
        match group_of(&classes[c]) {
            Some(g) if !all_skipped => g.weights,
            _ => base,
        }
    };
    let shared_block = format!("{}.{}", modules.mlp, modules.shared_experts);
    let attention: Vec<&str> =
        std::iter::once(modules.attention.as_str()).chain(modules.recurrent.as_deref()).collect();
    let weights = WeightPrecisions {
        attention: format(0, &attention, &modules.mixer_layers),
        mlp: format(1, &[&modules.mlp], &modules.dense_layers),
        experts: format(2, &[&modules.experts], &modules.moe_layers),
        shared_experts: format(3, &[&shared_block], &modules.moe_layers),
        router: base,
        embedding: base,
        lm_head: base,
    };
    let main = if modules.moe_layers.is_empty() { &classes[1] } else { &classes[2] };
    let inputs = group_of(main).and_then(|g| g.inputs);
    notes.push(format!(
        "quantization_config: {} groups with schemes of their own (mixed precision), each class of weights at its group's format ({}); GEMM inputs at {} throughout, the {} group's",
        groups.len(),
        weights.describe(),
        inputs.map_or("16 bits".to_string(), |p| p.name()),
        if modules.moe_layers.is_empty() { "MLP's" } else { "routed experts'" },
    ));
    Ok((weights, inputs))
}

/// The `weights` scheme of one compressed-tensors group (defaults as compressed-tensors'
/// `QuantizationArgs`: 8 bits, `int`).
fn compressed_tensors_weights(w: &Keys, notes: &mut Vec<String>) -> Result<Precision> {
    let float = w.one_of("type", &["int", "float"])?.as_deref() == Some("float");
    let bits = w.int("num_bits")?.unwrap_or(8);
    match (bits, float) {
        (8, true) => {
            if w.one_of("strategy", &["tensor", "channel", "token", "block", "group", "tensor_group"])?.as_deref()
                == Some("block")
            {
                let block = w.square_block("block_structure")?;
                let block = block.ok_or_else(|| Error::MissingField {
                    field: w.field("block_structure"),
                    context: "strategy block".into(),
                })?;
                return Ok(Precision::Fp8Block { block });
            }
            Ok(Precision::Fp8)
        }
        (4, true) => match w.int("group_size")? {
            Some(16) => Ok(Precision::NvFp4),
            Some(32) => Ok(Precision::MxFp4),
            g => Err(w.invalid(
                "group_size",
                &g.map_or(Value::Null, Value::from),
                "16 for nvfp4 or 32 for mxfp4, with 4-bit float weights",
            )),
        },
        (4 | 8, false) => {
            let group = w.group_size("group_size", None)?;
            Ok(int_weights(w, "compressed-tensors", bits, group, notes))
        }
        (b, _) => Err(w.invalid("num_bits", &Value::from(b), "4 or 8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deepseek_fp8_block_scales_apply_to_linear_layers_only() {
        let q = json!({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.attention, Precision::Fp8Block { block: 128 });
        assert_eq!(weights.experts, Precision::Fp8Block { block: 128 });
        assert_eq!(weights.lm_head, Precision::Bf16);
        assert_eq!(weights.embedding, Precision::Bf16);
        let Some(CheckpointQuant::Known { gemm_activations, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(gemm_activations, Some(Precision::Fp8), "W8A8: activation_scheme dynamic");
    }

    #[test]
    fn gpt_oss_mxfp4_is_experts_only() {
        let q = json!({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.experts, Precision::MxFp4);
        assert_eq!(weights.attention, Precision::Bf16);
    }

    #[test]
    fn module_lists_match_whole_path_components() {
        let m = "model.layers.3.self_attn";
        for p in [
            "model.layers.3.self_attn",
            "model.layers.*.self_attn",
            "self_attn",
            "layers.3.self_attn",
            "model.layers.3",
            "re:model\\.layers\\.\\d+\\.self_attn",
        ] {
            assert!(names_module(p, m), "{p}");
        }
        for p in [
            "attention",
            "attn",
            "model.layers.3.self_attn.q_proj",
            "model.layers.30",
            "post_attention_layernorm",
            "layers.3",
            "re:.*mlp",
        ] {
            assert!(!names_module(p, m), "{p}");
        }
        assert!(names_module("lm_head", "lm_head"));
        // ModelOpt's globs: `*` runs over dots, over the name or an ancestor of it.
        assert!(names_module("model.layers.0*", "model.layers.0.self_attn"));
        assert!(names_module("model.layers.10.self_attn*", "model.layers.10.self_attn"));
        assert!(!names_module("model.layers.1.*", "model.layers.10.self_attn"));
        assert!(names_module("*self_attn*", "model.layers.7.self_attn"));
        assert!(!names_module("mtp*", "model.layers.7.self_attn"));
        assert!(!names_module("model.layers.0.post_attention_layernorm", "model.layers.0.self_attn"));
    }

    #[test]
    fn a_class_listed_in_some_layers_only_is_counted_quantised_with_a_note() {
        let modules = CheckpointModules::uniform(4);
        let q = json!({"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.self_attn", "model.layers.1.self_attn"]});
        let (quant, notes) = parse_quantization_config_for(Some(&q), &modules).unwrap().unwrap();
        let CheckpointQuant::Known { weights, .. } = quant else { panic!() };
        assert_eq!(weights.attention, Precision::Fp8);
        assert!(notes.iter().any(|n| n.contains("attention of 2 of 4 layers")), "{notes:?}");
        let q = json!({"quant_method": "fp8", "modules_to_not_convert": ["model.layers.*.self_attn"]});
        let (quant, notes) = parse_quantization_config_for(Some(&q), &modules).unwrap().unwrap();
        let CheckpointQuant::Known { weights, .. } = quant else { panic!() };
        assert_eq!((weights.attention, weights.mlp), (Precision::Bf16, Precision::Fp8));
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn gptq_group_size_sets_the_scale_overhead() {
        let q = json!({"quant_method": "gptq", "bits": 4, "group_size": 128});
        let Some(CheckpointQuant::Known { weights, .. }) = parse_quantization_config(Some(&q)).unwrap() else {
            panic!()
        };
        assert_eq!(weights.mlp, Precision::Int4Group { group: 128 });
        let q = json!({"quant_method": "gptq", "bits": 3, "group_size": 128});
        assert_eq!(
            parse_quantization_config(Some(&q)).unwrap_err().to_string(),
            "invalid `quantization_config.bits`: 3 (4 or 8)"
        );
    }

    /// The weights of a config that parses, and its notes.
    fn parsed(q: Value) -> (WeightPrecisions, Option<Precision>, Vec<String>) {
        match parse_quantization_config_with_notes(Some(&q)).unwrap() {
            Some((CheckpointQuant::Known { weights, gemm_activations, .. }, notes)) => {
                (weights, gemm_activations, notes)
            }
            other => panic!("{q}: {other:?}"),
        }
    }

    fn refused(q: Value) -> String {
        parse_quantization_config(Some(&q)).unwrap_err().to_string()
    }

    #[test]
    fn gptq_and_awq_group_sizes_default_to_128_and_minus_one_is_per_channel() {
        // transformers' GPTQConfig/AwqConfig default group_size = 128.
        assert_eq!(parsed(json!({"quant_method": "awq"})).0.mlp, Precision::Int4Group { group: 128 });
        assert_eq!(parsed(json!({"quant_method": "gptq", "bits": 4})).0.mlp, Precision::Int4Group { group: 128 });
        assert_eq!(parsed(json!({"quant_method": "gptq", "bits": 4, "group_size": -1})).0.mlp, Precision::Int4);
        assert_eq!(
            parsed(json!({"quant_method": "gptq", "bits": 4.0, "group_size": 32})).0.mlp,
            Precision::Int4Group { group: 32 }
        );
    }

    #[test]
    fn odd_quantisation_settings_are_refused_naming_the_accepted_values() {
        let cases = [
            (json!({"quant_method": "gptq", "bits": 5}), "invalid `quantization_config.bits`: 5 (4 or 8)"),
            (json!({"quant_method": "gptq", "bits": "4"}), "invalid `quantization_config.bits`: \"4\" (an integer)"),
            (json!({"quant_method": "gptq"}), "missing required field `quantization_config.bits` for quant_method gptq"),
            (json!({"quant_method": "gptq", "bits": 4, "group_size": 0}), "invalid `quantization_config.group_size`: 0 (a power of two from 16 to 4,096, or -1 for one scale per output channel)"),
            (json!({"quant_method": "gptq", "bits": 4, "group_size": 7}), "invalid `quantization_config.group_size`: 7 ("),
            (json!({"quant_method": "gptq", "bits": 4, "group_size": -2}), "invalid `quantization_config.group_size`: -2 ("),
            (json!({"quant_method": "awq", "bits": 8}), "invalid `quantization_config.bits`: 8 (4: AWQ stores 4-bit weights)"),
            (json!({"quant_method": "fp8", "weight_block_size": [0, 128]}), "invalid `quantization_config.weight_block_size`: [0,128] (two equal powers of two from 16 to 4,096, such as [128, 128])"),
            (json!({"quant_method": "fp8", "weight_block_size": 128}), "invalid `quantization_config.weight_block_size`: 128 ("),
            (json!({"quant_method": "fp8", "weight_block_size": [96, 96]}), "invalid `quantization_config.weight_block_size`: [96,96] ("),
            (json!({"quant_method": "fp8", "fmt": "e3m4"}), "invalid `quantization_config.fmt`: \"e3m4\" (one of e4m3, e5m2, float8_e4m3fn, float8_e5m2)"),
            (json!({"quant_method": "fp8", "activation_scheme": "sometimes"}), "invalid `quantization_config.activation_scheme`: \"sometimes\" (one of dynamic, static)"),
            (json!({"quant_method": "fp8", "modules_to_not_convert": "lm_head"}), "invalid `quantization_config.modules_to_not_convert`: \"lm_head\" (a list of module names)"),
            (json!({"quant_method": "fp8", "ignored_layers": [3]}), "invalid `quantization_config.ignored_layers`: 3 (a list of module names)"),
            (json!({"quant_method": 4}), "invalid `quantization_config.quant_method`: 4 (a method name: fp8, "),
            (json!({"quant_method": "mxfp4", "bits": 8}), "invalid `quantization_config.bits`: 8 (4: MXFP4 stores 4-bit e2m1 values)"),
            (json!({"quant_method": "mxfp4", "group_size": 16}), "invalid `quantization_config.group_size`: 16 (32: MXFP4 shares one scale per 32 values)"),
            (json!({"quant_method": "mxfp4", "dequantize": "yes"}), "invalid `quantization_config.dequantize`: \"yes\" (true or false)"),
            (json!({"quant_method": "bitsandbytes"}), "invalid `quantization_config.load_in_4bit`: false with load_in_8bit false (exactly one of load_in_4bit and load_in_8bit true)"),
            (json!({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "int4"}), "invalid `quantization_config.bnb_4bit_quant_type`: \"int4\" (one of nf4, fp4)"),
            (json!({"quant_method": "bitsandbytes", "load_in_8bit": true, "llm_int8_has_fp16_weight": true}), "invalid `quantization_config.llm_int8_has_fp16_weight`: true ("),
            (json!({"quant_method": "compressed-tensors"}), "missing required field `quantization_config.config_groups` for quant_method compressed-tensors"),
            (json!({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 2}}}}), "invalid `quantization_config.config_groups.group_0.weights.num_bits`: 2 (4 or 8)"),
            (json!({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 64}}}}), "invalid `quantization_config.config_groups.group_0.weights.group_size`: 64 (16 for nvfp4 or 32 for mxfp4, with 4-bit float weights)"),
            (json!({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "fixed"}}}}), "invalid `quantization_config.config_groups.group_0.weights.type`: \"fixed\" (one of int, float)"),
            (json!({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8}, "input_activations": {"num_bits": 4, "type": "int"}}}}), "invalid `quantization_config.config_groups.group_0.input_activations.num_bits`: 4 ("),
            (json!({"quant_method": "compressed-tensors", "config_groups": {"a": {"weights": {"num_bits": 8, "type": "float"}}, "b": {"weights": {"num_bits": 4, "group_size": 128}}}}), "invalid `quantization_config.config_groups`: groups without targets"),
        ];
        for (q, expected) in cases {
            let got = refused(q.clone());
            assert!(got.starts_with(expected), "{q}: {got}");
        }
    }

    #[test]
    fn settings_counted_by_a_fallback_say_which() {
        let (w, _, notes) = parsed(json!({"quant_method": "gptq", "bits": 8, "group_size": 128}));
        assert_eq!(w.mlp, Precision::Int8);
        assert_eq!(notes, ["quantization_config: gptq 8-bit weights with a scale per 128 values are counted as int8 without the scales (3.1 % of the weight bytes left out)"]);
        let (w, _, notes) = parsed(json!({"quant_method": "mxfp4", "dequantize": true}));
        assert_eq!(w.experts, Precision::Bf16);
        assert!(notes[0].contains("counted at bf16"), "{notes:?}");
        let (w, _, notes) = parsed(
            json!({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true}),
        );
        assert_eq!(w.mlp, Precision::Int4Group { group: 64 });
        assert!(notes[0].contains("4.5 bits"), "{notes:?}");
        let (_, _, notes) =
            parsed(json!({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float"},
            "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}));
        assert!(notes[0].contains("set `kv` = fp8"), "{notes:?}");
        // Settings the model covers leave no note.
        assert!(parsed(json!({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})).2.is_empty());
    }

    #[test]
    fn compressed_tensors_schemes() {
        let ct = |w: Value, i: Value| {
            json!({"quant_method": "compressed-tensors", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": w, "input_activations": i}}})
        };
        let (w, a, _) = parsed(ct(
            json!({"num_bits": 4, "type": "float", "group_size": 16}),
            json!({"num_bits": 4, "type": "float"}),
        ));
        assert_eq!((w.mlp, a), (Precision::NvFp4, Some(Precision::NvFp4)));
        let (w, a, _) =
            parsed(ct(json!({"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group"}), Value::Null));
        assert_eq!((w.attention, a), (Precision::Int4Group { group: 128 }, None));
        let (w, a, _) = parsed(ct(
            json!({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}),
            json!({"num_bits": 8, "type": "float"}),
        ));
        assert_eq!((w.experts, a), (Precision::Fp8Block { block: 128 }, Some(Precision::Fp8)));
        assert_eq!(w.lm_head, Precision::Bf16);
    }

    #[test]
    fn unknown_methods_are_recorded_not_guessed() {
        let q = json!({"quant_method": "hqq"});
        assert_eq!(
            parse_quantization_config(Some(&q)).unwrap(),
            Some(CheckpointQuant::Unknown { method: "hqq".into() })
        );
        assert_eq!(parse_quantization_config(None).unwrap(), None);
    }
}
