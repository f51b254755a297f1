//! The benchmark outputs users already have, read as calibration measurements
//! (`llm-ledger calibrate run.json`).
//!
//! Three tools' result files, each a record (or JSON Lines of records, or a JSON array of them)
//! describing one serving or throughput run:
//!
//! * **vLLM's `benchmarks/benchmark_serving.py --save-result`** (vllm-project/vllm, the
//!   `result_json` written in `main` at commit 8668d7c05027b98ac66bd5540955dd2ce3a0f318; later
//!   versions add `max_concurrency`, and `--append-result` writes JSON Lines): `completed`,
//!   `total_input_tokens`, `total_output_tokens`, `mean_ttft_ms`, `mean_tpot_ms`, `mean_itl_ms`,
//!   `output_throughput`, `model_id`, `backend`, `max_concurrency`.
//! * **genai-perf's `profile_export_genai_perf.json`** (triton-inference-server/perf_analyzer,
//!   `genai-perf/genai_perf/export_data/json_exporter.py` at commit
//!   4cc7650c23bc80d16a27c1049950d87f399c9b7a: the statistics, each `{unit, avg, p50, p99, …}`
//!   with times in ms, and the arguments under `input_config`): `time_to_first_token`,
//!   `inter_token_latency`, `output_token_throughput`, `input_sequence_length`,
//!   `output_sequence_length`, `input_config.concurrency`, `input_config.model`,
//!   `input_config.backend`.
//! * **`trtllm-bench`'s report JSON** (NVIDIA/TensorRT-LLM,
//!   `tensorrt_llm/bench/dataclasses/reporting.py`, `ReportUtility.get_statistics_dict` at commit
//!   2787769cae353023784dce105d648bcd4d04f4d4): `engine.model`, `world_info.tp_size`/`pp_size`/
//!   `ep_size`, `request_info.avg_num_concurrent_requests`/`avg_input_length`/
//!   `avg_output_length`, `performance.system_output_throughput_tok_s`, and with streaming
//!   `streaming_metrics.avg_ttft_ms`/`avg_tpot_ms`.
//!
//! **What a run becomes** (approximations, stated): a serving run's decode batch is its
//! concurrency (`max_concurrency`, `input_config.concurrency`, or trtllm-bench's measured average
//! of concurrent requests, rounded), its context the mean prompt plus half the mean output (the
//! average over a request's decode steps). The mean time per output token (TPOT; ITL where the
//! file has no TPOT) is the `tpot_s` of that decode step; the output throughput is the
//! `tokens_per_s` of the same step (it also holds the prefills, so it reads a little slow); the
//! mean time to first token is the `ttft_s` of a prefill of one sequence of the mean prompt (exact
//! at concurrency 1; under load it also holds queueing and batched prefills). Means, not
//! percentiles: the clock predicts a typical step.
//!
//! Python's `json` writes `NaN` and `Infinity` for missing statistics; they are read as such and
//! refused by the field's name.

use crate::hub::{self, RepoId};
use anyhow::{bail, Result};
use llm_ledger_core::calibrate::Metric;
use llm_ledger_core::error::{compact_f64, grouped, range_words, Error, Text};
use llm_ledger_core::limits::{Range, MAX_BATCH, MAX_CONTEXT, MAX_GPUS_PER_REPLICA};
use llm_ledger_core::model::ModelSpec;
use llm_ledger_core::Catalog;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// A benchmark file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The CSV of `calibrate` (scenario columns and one measurement column).
    Csv,
    /// vLLM's `benchmark_serving.py --save-result` JSON.
    Vllm,
    /// genai-perf's `profile_export_genai_perf.json`.
    GenaiPerf,
    /// `trtllm-bench`'s report JSON.
    TrtllmBench,
}

impl Format {
    /// Every format by its `--format-in` name.
    pub const NAMES: [(&'static str, Format); 4] = [
        ("csv", Format::Csv),
        ("vllm", Format::Vllm),
        ("genai-perf", Format::GenaiPerf),
        ("trtllm-bench", Format::TrtllmBench),
    ];

    /// The format of a `--format-in` name.
    pub fn parse(name: &str) -> Result<Format> {
        match Format::NAMES.iter().find(|(n, _)| *n == name) {
            Some((_, f)) => Ok(*f),
            None => {
                let names = Format::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
                Err(Error::refused("format_in", format!("{name:?}"), &format!("one of {names}")).into())
            }
        }
    }

    /// Its `--format-in` name.
    pub fn name(self) -> &'static str {
        Format::NAMES.iter().find(|(_, f)| *f == self).map(|(n, _)| *n).expect("every format has a name")
    }

    /// The format of a file's text: a JSON one from its first record's keys, otherwise the CSV;
    /// an error naming the file for a JSON of none of the known schemas.
    ///
    /// A byte-order mark is skipped (editors on Windows write one); an empty file, or one whose
    /// whole text is a JSON `null` (or another bare JSON value), is an error naming the file and
    /// what it should hold, never read as a CSV.
    pub fn detect(file: &str, text: &str) -> Result<Format> {
        let text = without_bom(text);
        let first = text.trim_start();
        if first.is_empty() {
            bail!("invalid `{file}`: the file is empty; expected {WHAT_A_FILE_HOLDS}");
        }
        if !(first.starts_with('{') || first.starts_with('[')) {
            if let Ok(v) = serde_json::from_str::<Value>(first) {
                bail!(
                    "invalid `{file}`: the file holds the bare JSON value `{}`; expected {WHAT_A_FILE_HOLDS}",
                    shown(&v)
                );
            }
            return Ok(Format::Csv);
        }
        if let Ok(r) = records(text) {
            if r.is_empty() {
                bail!("invalid `{file}`: an empty JSON array; expected {WHAT_A_FILE_HOLDS}");
            }
        }
        let record = records(text).ok().and_then(|r| r.into_iter().next());
        match record.as_ref().and_then(json_format) {
            Some(f) => Ok(f),
            None => {
                let message = Text::default()
                    .plain(&format!(
                        "invalid `{file}` record 1: a JSON of unknown schema; expected {KNOWN_SCHEMAS}, or give "
                    ))
                    .input("format_in")
                    .plain(" vllm|genai-perf|trtllm-bench");
                Err(Error::input("format_in", message).into())
            }
        }
    }
}

/// The JSON format of one record, from its keys.
fn json_format(v: &Value) -> Option<Format> {
    let has = |k: &str| v.get(k).is_some();
    if has("performance") && has("request_info") {
        Some(Format::TrtllmBench)
    } else if has("time_to_first_token") || has("inter_token_latency") || has("output_token_throughput") {
        Some(Format::GenaiPerf)
    } else if has("total_input_tokens") || has("mean_tpot_ms") || has("mean_ttft_ms") {
        Some(Format::Vllm)
    } else {
        None
    }
}

/// `text` without a leading byte-order mark (U+FEFF), which editors on Windows write and which
/// neither the CSV nor the JSON reader skips.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// A JSON value for a message: a number compactly (`1e308`, `-3`), a text as written, anything
/// else as JSON; cut to 80 characters.
fn shown(v: &Value) -> String {
    let t = match v {
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), compact_f64),
        Value::String(s) => s.clone(),
        _ => v.to_string(),
    };
    llm_ledger_core::error::echo(&t)
}

/// What a measurement file holds, for the errors on an empty one.
const WHAT_A_FILE_HOLDS: &str = "a CSV (a header line naming scenario inputs and one measurement column such as `step_ms`, then a row per measurement) or a benchmark's JSON: a vLLM benchmark_serving result, genai-perf's profile export or trtllm-bench's report";

/// The keys that tell each JSON format, for the error on a file of none.
const KNOWN_SCHEMAS: &str = "a vLLM benchmark_serving result (`total_input_tokens`, `mean_tpot_ms`), genai-perf's profile export (`time_to_first_token`, `inter_token_latency`) or trtllm-bench's report (`performance`, `request_info`)";

/// One run of a benchmark file, as it states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// 1-based record number in the file.
    pub record: usize,
    /// The model as the file names it, and the field it came from.
    pub model: Option<(String, &'static str)>,
    /// The ledger's engine name for the engine the file names.
    pub engine: Option<&'static str>,
    /// Tensor-, pipeline- and expert-parallel degrees the file states (`None`: not stated).
    pub tp: Option<u64>,
    /// Pipeline stages.
    pub pp: Option<u64>,
    /// Expert-parallel groups.
    pub ep: Option<u64>,
    /// Concurrent sequences (`None`: not stated).
    pub concurrency: Option<f64>,
    /// The field the concurrency comes from in this format.
    pub concurrency_field: &'static str,
    /// Mean prompt tokens per request.
    pub prompt_tokens: f64,
    /// Mean output tokens per request.
    pub output_tokens: f64,
    /// The measurements: metric, value in SI units, the field read.
    pub measured: Vec<(Metric, f64, &'static str)>,
}

impl Run {
    /// The decode step the run's TPOT and throughput describe: `(batch, ctx)` with the batch
    /// its concurrency (`fallback` where the file states none) and the context the mean prompt
    /// plus half the mean output (module docs).
    pub fn decode_shape(&self, fallback: Option<u64>) -> Option<(u64, u64)> {
        let batch = fallback.or(self.concurrency.map(|c| c.round().max(1.0) as u64))?;
        Some((batch, (self.prompt_tokens + self.output_tokens / 2.0).round().max(1.0) as u64))
    }

    /// The prefill the run's TTFT describes: one sequence of the mean prompt.
    pub fn prefill_ctx(&self) -> u64 {
        self.prompt_tokens.round().max(1.0) as u64
    }
}

/// The model a benchmark run states, as the scenario may take it when `--model` is not given.
#[derive(Debug, Clone)]
pub enum StatedModel {
    /// A preset of the catalogue (by name or alias): its spec, never a file of the same name.
    Preset(Arc<ModelSpec>),
    /// A Hugging Face Hub repo id (`org/name`), in the local cache or downloadable.
    Hub(String),
}

/// The model `run` (of `file`) states, where the user gave no `--model`: a file chooses what is
/// read only within what a benchmark can mean by its model field. A preset of `catalog` (name or
/// alias) is that preset; a plain Hub repo id (`org/name`, [`RepoId::parse`]) is read from the
/// Hugging Face cache at `revision`, or downloaded unless `HF_HUB_OFFLINE` forbids it; anything
/// else — a path (`/etc/passwd`, `../config.json`), a URL, a Hub id that is also a path here, a
/// Hub id neither cached nor downloadable — is refused with one line naming the field and
/// saying to give `--model`. `None` when the run names no model.
pub fn stated_model(file: &str, run: &Run, catalog: &Catalog, revision: Option<&str>) -> Result<Option<StatedModel>> {
    let Some((name, field)) = &run.model else { return Ok(None) };
    if let Ok(preset) = catalog.preset(name) {
        return Ok(Some(StatedModel::Preset(preset.spec().clone())));
    }
    let refuse = |why: &str| -> anyhow::Error {
        let message = Text::default()
            .plain(&format!(
                "invalid `{file}` record {}: `{field}` = \"{}\" {why}; a benchmark file's model is read only as a model preset or a Hub repo id, never as a path: give `",
                run.record,
                llm_ledger_core::error::echo(name)
            ))
            .input("model")
            .plain(" NAME` (a preset, a config.json or GGUF path, or a Hub repo id)");
        Error::input("files", message).into()
    };
    let Ok(repo) = RepoId::parse(name) else {
        return Err(refuse("is not a model preset nor a Hub repo id (org/name)"));
    };
    if Path::new(name).exists() {
        return Err(refuse("names a file or folder here as well as a Hub repo id"));
    }
    let cached = hub::cache_dir().ok().and_then(|c| hub::cached_snapshot(&c, &repo, revision).ok().flatten());
    if cached.is_none() && hub_offline() {
        return Err(refuse(
            "is a Hub repo id that is not in the Hugging Face cache, and HF_HUB_OFFLINE forbids downloading it",
        ));
    }
    Ok(Some(StatedModel::Hub(repo.id())))
}

/// `HF_HUB_OFFLINE` set to 1/true/yes/on (any case): the Hub client's own test
/// ([`crate::hub`]), which downloads nothing then.
fn hub_offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// Most records in one benchmark file.
pub const MAX_RECORDS: usize = 10_000;

/// The records of a JSON text: one object, an array of them, or JSON Lines. `NaN` and
/// `Infinity` (Python's `json` writes them) become the strings `"NaN"`, `"Infinity"`,
/// `"-Infinity"`, so that the field holding one is named.
fn records(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    let text = quote_non_finite(text);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(a)) => Ok(a),
        Ok(v) => Ok(vec![v]),
        Err(e) => {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() < 2 {
                return Err(e);
            }
            lines.into_iter().map(serde_json::from_str).collect()
        }
    }
}

/// `text` with the bare tokens `NaN`, `Infinity` and `-Infinity` outside strings quoted.
fn quote_non_finite(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            out.push('"');
            out.push_str(token);
            out.push('"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Read the runs of a benchmark file `file` (its name, for errors) of `format` (JSON formats
/// only). Every error is one line naming the file, the record and the field.
pub fn runs(file: &str, text: &str, format: Format) -> Result<Vec<Run>> {
    let text = without_bom(text);
    if text.trim().is_empty() {
        bail!("invalid `{file}`: the file is empty; expected {KNOWN_SCHEMAS}");
    }
    let records = match records(text) {
        Ok(r) => r,
        Err(e) => bail!("invalid `{file}`: not JSON ({e}); expected {KNOWN_SCHEMAS}"),
    };
    if records.is_empty() {
        bail!("invalid `{file}`: no records (expected {KNOWN_SCHEMAS})");
    }
    if records.len() > MAX_RECORDS {
        bail!("invalid `{file}`: more than {MAX_RECORDS} records");
    }
    records
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let r = Record { file, record: i + 1, value: v };
            if !v.is_object() {
                bail!(
                    "invalid `{file}` record {}: `{}`, not a JSON object (expected {KNOWN_SCHEMAS})",
                    i + 1,
                    shown(v)
                );
            }
            match format {
                Format::Vllm => r.vllm(),
                Format::GenaiPerf => r.genai_perf(),
                Format::TrtllmBench => r.trtllm_bench(),
                Format::Csv => unreachable!("a CSV is read by calibrate's CSV reader"),
            }
        })
        .collect()
}

/// Most requests one benchmark record may count (`completed`): 10¹².
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// Most tokens one benchmark record may count in all (`total_input_tokens`, …): 10¹⁸.
pub const MAX_TOTAL_TOKENS: u64 = 1_000_000_000_000_000_000;

/// What a numeric field accepts: `[min, max]` (`(min, max]` when `min_open`), a whole number
/// when `whole`; `interval`: say so as an interval (`a number in [0.001, 3.6e6]`, as the flag of
/// the same quantity does), else in words with grouped digits.
#[derive(Debug, Clone, Copy)]
struct Accept {
    min: f64,
    min_open: bool,
    max: f64,
    whole: bool,
    interval: bool,
}

impl Accept {
    /// A whole number from 1 to `max`.
    fn whole(max: u64) -> Accept {
        Accept { min: 1.0, min_open: false, max: max as f64, whole: true, interval: false }
    }

    /// A mean number of tokens per request: from 1 to [`MAX_CONTEXT`].
    fn mean_tokens() -> Accept {
        Accept { min: 1.0, min_open: false, max: MAX_CONTEXT as f64, whole: false, interval: false }
    }

    /// The range of a measurement column ([`Metric::column_range`]).
    fn range(r: Range) -> Accept {
        Accept { min: r.min, min_open: r.min_open, max: r.max, whole: false, interval: true }
    }

    fn contains(self, x: f64) -> bool {
        x.is_finite()
            && x <= self.max
            && if self.min_open { x > self.min } else { x >= self.min }
            && (!self.whole || x.fract() == 0.0)
    }

    fn words(self) -> String {
        if self.interval {
            let open = if self.min_open { '(' } else { '[' };
            format!("a number in {open}{}, {}]", compact_f64(self.min), compact_f64(self.max))
        } else if self.whole {
            format!("a whole number {}", range_words(self.min as u64, self.max as u64))
        } else if self.min_open {
            format!("a number above {} and at most {}", count(self.min), count(self.max))
        } else {
            format!("a number from {} to {}", count(self.min), count(self.max))
        }
    }
}

/// A count of tokens or requests for a message: a whole one with its digits grouped
/// (`1,099,511,627,840`), any other compactly (`0.5`).
fn count(x: f64) -> String {
    if x.fract() == 0.0 && (0.0..9e15).contains(&x) {
        grouped(x as u64)
    } else {
        compact_f64(x)
    }
}

/// One record being read, for its error messages.
struct Record<'a> {
    file: &'a str,
    record: usize,
    value: &'a Value,
}

impl Record<'_> {
    /// The value at a dotted path (`request_info.avg_input_length`).
    fn at(&self, path: &str) -> Option<&Value> {
        path.split('.').try_fold(self.value, |v, k| v.get(k)).filter(|v| !v.is_null())
    }

    fn fail(&self, what: String) -> anyhow::Error {
        anyhow::anyhow!("invalid `{}` record {}: {what}", self.file, self.record)
    }

    /// A number at `path` that `accept` accepts: `None` when absent or null, otherwise an error
    /// naming the file, the record, the field, its value and what the field accepts (NaN,
    /// infinities, text, 1e-300 requests and 1e308 tokens included).
    fn number(&self, path: &str, what: &str, accept: Accept) -> Result<Option<f64>> {
        let Some(v) = self.at(path) else { return Ok(None) };
        match v.as_f64() {
            Some(x) if accept.contains(x) => Ok(Some(x)),
            _ => Err(self.fail(format!("`{path}` = {} ({what}: {})", shown(v), accept.words()))),
        }
    }

    /// A number that must be there.
    fn required(&self, path: &str, what: &str, accept: Accept, format: &str) -> Result<f64> {
        self.number(path, what, accept)?
            .ok_or_else(|| self.fail(format!("missing field `{path}` ({what}, which a {format} states)")))
    }

    /// A whole number in `[1, max]`, optional.
    fn count(&self, path: &str, what: &str, max: u64) -> Result<Option<u64>> {
        Ok(self.number(path, what, Accept::whole(max))?.map(|x| x as u64))
    }

    /// The mean prompt and output tokens per request, `prompt` and `output` (read from the
    /// fields their texts name), checked as the decode step they give: at least one token each,
    /// and a context (the prompt plus half the output) of at most [`MAX_CONTEXT`] tokens.
    fn shape(&self, prompt: (f64, &str), output: (f64, &str)) -> Result<(f64, f64)> {
        for (mean, from, what) in [(prompt.0, prompt.1, "prompt"), (output.0, output.1, "output")] {
            if !(1.0..=MAX_CONTEXT as f64).contains(&mean) {
                return Err(self.fail(format!(
                    "{from} is a mean {what} of {} tokens per request (at least 1 and at most {} tokens)",
                    count(mean),
                    grouped(MAX_CONTEXT)
                )));
            }
        }
        let ctx = prompt.0 + output.0 / 2.0;
        if ctx > MAX_CONTEXT as f64 {
            return Err(self.fail(format!(
                "{} and {} give a mean context of {} tokens (the prompt plus half the output: at most {} tokens)",
                prompt.1,
                output.1,
                count(ctx),
                grouped(MAX_CONTEXT)
            )));
        }
        Ok((prompt.0, output.0))
    }

    /// The mean prompt and output tokens per request at the fields `prompt` and `output`, each
    /// from 1 to [`MAX_CONTEXT`], checked as a decode step ([`Record::shape`]).
    fn means(&self, prompt: &str, output: &str, format: &str) -> Result<(f64, f64)> {
        let p = self.required(prompt, "mean prompt tokens", Accept::mean_tokens(), format)?;
        let o = self.required(output, "mean output tokens", Accept::mean_tokens(), format)?;
        let field = |path: &str, v: f64| format!("`{path}` = {}", count(v));
        self.shape((p, &field(prompt, p)), (o, &field(output, o)))
    }

    /// A text at `path`, or the first of a list of texts.
    fn text(&self, path: &str) -> Option<String> {
        match self.at(path)? {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        }
    }

    /// At least one measurement, or an error naming the fields looked for.
    fn measured(
        &self,
        found: Vec<(Metric, f64, &'static str)>,
        looked: &[&str],
    ) -> Result<Vec<(Metric, f64, &'static str)>> {
        if found.is_empty() {
            bail!(
                "invalid `{}` record {}: missing field `{}` (no measurement: the record needs one of {})",
                self.file,
                self.record,
                looked[0],
                looked.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(found)
    }

    /// Measurements from `(field, metric, the calibrate column of the field's unit)`, those
    /// present, each inside its column's physical range ([`Metric::column_range`]).
    fn read(&self, fields: &[(&'static str, Metric, &str)]) -> Result<Vec<(Metric, f64, &'static str)>> {
        let mut out: Vec<(Metric, f64, &'static str)> = Vec::new();
        for (field, metric, column) in fields {
            if out.iter().any(|(m, ..)| m == metric) {
                continue;
            }
            let (unit, to_si) = Metric::of_column(column).expect("a measurement column");
            debug_assert_eq!(unit, *metric);
            let range = Metric::column_range(column).expect("every column has a range");
            if let Some(v) = self.number(field, range.what, Accept::range(range))? {
                out.push((*metric, v * to_si, field));
            }
        }
        Ok(out)
    }

    /// A vLLM `benchmark_serving.py --save-result` record.
    fn vllm(&self) -> Result<Run> {
        const FORMAT: &str = "vLLM benchmark_serving result";
        let completed = self.required("completed", "requests completed", Accept::whole(MAX_REQUESTS), FORMAT)?;
        let tokens = Accept::whole(MAX_TOTAL_TOKENS);
        let input = self.required("total_input_tokens", "prompt tokens of the completed requests", tokens, FORMAT)?;
        let output = self.required("total_output_tokens", "output tokens of the completed requests", tokens, FORMAT)?;
        let per_request = |field: &str, total: f64| {
            format!("`{field}` = {} over `completed` = {} requests", count(total), count(completed))
        };
        let (prompt_tokens, output_tokens) = self.shape(
            (input / completed, &per_request("total_input_tokens", input)),
            (output / completed, &per_request("total_output_tokens", output)),
        )?;
        let fields = [
            ("mean_tpot_ms", Metric::TpotS, "tpot_ms"),
            ("mean_itl_ms", Metric::TpotS, "tpot_ms"),
            ("mean_ttft_ms", Metric::TtftS, "ttft_ms"),
            ("output_throughput", Metric::TokensPerS, "tokens_per_s"),
        ];
        let measured = self.measured(self.read(&fields)?, &["mean_tpot_ms", "mean_ttft_ms", "output_throughput"])?;
        let engine = match self.text("backend").as_deref() {
            Some("vllm") => Some("vllm"),
            _ => None,
        };
        Ok(Run {
            record: self.record,
            model: self.text("model_id").map(|m| (m, "model_id")),
            engine,
            tp: None,
            pp: None,
            ep: None,
            concurrency: self.count("max_concurrency", "concurrent requests", MAX_BATCH)?.map(|c| c as f64),
            concurrency_field: "max_concurrency",
            prompt_tokens,
            output_tokens,
            measured,
        })
    }

    /// A genai-perf profile export record.
    fn genai_perf(&self) -> Result<Run> {
        const FORMAT: &str = "genai-perf profile export";
        for field in ["time_to_first_token", "inter_token_latency"] {
            if let Some(unit) = self.at(&format!("{field}.unit")).and_then(Value::as_str).filter(|u| *u != "ms") {
                return Err(self.fail(format!("`{field}.unit` = {unit:?} (ms, as genai-perf writes times)")));
            }
        }
        let (prompt, output) = self.means("input_sequence_length.avg", "output_sequence_length.avg", FORMAT)?;
        let fields = [
            ("inter_token_latency.avg", Metric::TpotS, "tpot_ms"),
            ("time_to_first_token.avg", Metric::TtftS, "ttft_ms"),
            ("output_token_throughput.avg", Metric::TokensPerS, "tokens_per_s"),
        ];
        let measured = self.measured(
            self.read(&fields)?,
            &["inter_token_latency.avg", "time_to_first_token.avg", "output_token_throughput.avg"],
        )?;
        let engine = match self.text("input_config.backend").as_deref() {
            Some("tensorrtllm") => Some("trtllm"),
            Some("vllm") => Some("vllm"),
            _ => None,
        };
        Ok(Run {
            record: self.record,
            model: self.text("input_config.model").map(|m| (m, "input_config.model")),
            engine,
            tp: None,
            pp: None,
            ep: None,
            concurrency: self.count("input_config.concurrency", "concurrent requests", MAX_BATCH)?.map(|c| c as f64),
            concurrency_field: "input_config.concurrency",
            prompt_tokens: prompt,
            output_tokens: output,
            measured,
        })
    }

    /// A `trtllm-bench` report record.
    fn trtllm_bench(&self) -> Result<Run> {
        const FORMAT: &str = "trtllm-bench report";
        let (prompt, output) = self.means("request_info.avg_input_length", "request_info.avg_output_length", FORMAT)?;
        let concurrent = Accept { min: 0.0, min_open: true, max: MAX_BATCH as f64, whole: false, interval: false };
        let concurrency =
            self.required("request_info.avg_num_concurrent_requests", "concurrent requests", concurrent, FORMAT)?;
        let fields = [
            ("streaming_metrics.avg_tpot_ms", Metric::TpotS, "tpot_ms"),
            ("streaming_metrics.avg_ttft_ms", Metric::TtftS, "ttft_ms"),
            ("performance.system_output_throughput_tok_s", Metric::TokensPerS, "tokens_per_s"),
        ];
        let measured = self.measured(
            self.read(&fields)?,
            &["performance.system_output_throughput_tok_s", "streaming_metrics.avg_tpot_ms"],
        )?;
        Ok(Run {
            record: self.record,
            model: self.text("engine.model").map(|m| (m, "engine.model")),
            engine: Some("trtllm"),
            tp: self.count("world_info.tp_size", "tensor-parallel GPUs", MAX_GPUS_PER_REPLICA)?,
            pp: self.count("world_info.pp_size", "pipeline stages", MAX_GPUS_PER_REPLICA)?,
            ep: self.count("world_info.ep_size", "expert-parallel groups", MAX_GPUS_PER_REPLICA)?,
            concurrency: Some(concurrency),
            concurrency_field: "request_info.avg_num_concurrent_requests",
            prompt_tokens: prompt,
            output_tokens: output,
            measured,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_non_finite_numbers_are_quoted_outside_strings_only() {
        assert_eq!(
            quote_non_finite(r#"{"a": NaN, "b": "NaN \" Infinity", "c": -Infinity, "d": [Infinity]}"#),
            r#"{"a": "NaN", "b": "NaN \" Infinity", "c": "-Infinity", "d": ["Infinity"]}"#
        );
    }

    #[test]
    fn a_vllm_record_becomes_a_run_with_its_stated_shape() {
        let text = r#"{"backend": "vllm", "model_id": "meta-llama/Meta-Llama-3-8B", "completed": 100,
            "total_input_tokens": 51200, "total_output_tokens": 12800, "max_concurrency": 16,
            "mean_ttft_ms": 40.5, "mean_tpot_ms": 12.0, "mean_itl_ms": 11.0, "output_throughput": 1200.0}"#;
        assert_eq!(Format::detect("v.json", text).unwrap(), Format::Vllm);
        assert_eq!(Format::detect("m.csv", "model,step_ms\n").unwrap(), Format::Csv);
        let r = runs("v.json", text, Format::Vllm).unwrap().remove(0);
        // 512 prompt tokens + 128 / 2 output tokens: ctx 576 at batch 16.
        assert_eq!(r.decode_shape(None), Some((16, 576)));
        assert_eq!(r.prefill_ctx(), 512);
        assert_eq!(r.engine, Some("vllm"));
        assert_eq!(
            r.measured,
            vec![
                (Metric::TpotS, 12.0e-3, "mean_tpot_ms"),
                (Metric::TtftS, 40.5e-3, "mean_ttft_ms"),
                (Metric::TokensPerS, 1200.0, "output_throughput")
            ]
        );
        // JSON Lines (`--append-result`): one run per line.
        let two = format!("{}\n{}\n", text.replace('\n', " "), text.replace('\n', " "));
        assert_eq!(runs("v.jsonl", &two, Format::Vllm).unwrap().len(), 2);
    }

    #[test]
    fn bad_records_name_the_file_the_record_and_the_field() {
        let e = runs("v.json", r#"{"completed": 1, "total_input_tokens": 5, "mean_tpot_ms": 1}"#, Format::Vllm)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`v.json` record 1") && e.contains("missing field `total_output_tokens`"), "{e}");
        let e = runs(
            "v.json",
            r#"[{"completed": 1, "total_input_tokens": 5, "total_output_tokens": 5, "mean_tpot_ms": NaN}]"#,
            Format::Vllm,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("record 1: `mean_tpot_ms` = NaN"), "{e}");
        let e = Format::detect("x.json", r#"{"speed": 3}"#).unwrap_err().to_string();
        assert!(e.contains("`x.json` record 1: a JSON of unknown schema"), "{e}");
    }

    const VLLM: &str = r#"{"backend": "vllm", "model_id": "llama-3-8b", "completed": 10, "total_input_tokens": 5120,
        "total_output_tokens": 1280, "max_concurrency": 4, "mean_ttft_ms": 30.0, "mean_tpot_ms": 8.0,
        "output_throughput": 480.0}"#;

    /// A JSON file saved with a byte-order mark is still JSON (it was read as a CSV, and the error
    /// was about scenario flags); an empty file, `null` or `[]` is one line naming the file and
    /// what it should hold.
    #[test]
    fn a_byte_order_mark_is_skipped_and_empty_files_are_named() {
        let bom = format!("\u{feff}{VLLM}");
        assert_eq!(Format::detect("v.json", &bom).unwrap(), Format::Vllm);
        assert_eq!(runs("v.json", &bom, Format::Vllm).unwrap().len(), 1);
        assert_eq!(Format::detect("m.csv", "\u{feff}batch,step_ms\n1,5\n").unwrap(), Format::Csv);
        for (text, want) in [
            ("", "invalid `e.json`: the file is empty; expected a CSV (a header line"),
            ("\u{feff} \n", "invalid `e.json`: the file is empty; expected a CSV"),
            ("null\n", "invalid `e.json`: the file holds the bare JSON value `null`; expected a CSV"),
            ("[]", "invalid `e.json`: an empty JSON array; expected a CSV"),
        ] {
            let e = Format::detect("e.json", text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // Read as a named format (--format-in), the same files.
        let e = runs("e.json", "", Format::Vllm).unwrap_err().to_string();
        assert!(e.starts_with("invalid `e.json`: the file is empty; expected a vLLM"), "{e}");
        let e = runs("e.json", "null", Format::Vllm).unwrap_err().to_string();
        assert!(e.starts_with("invalid `e.json` record 1: `null`, not a JSON object"), "{e}");
    }

    /// `VLLM` with `key` set to the JSON `value`.
    fn vllm_with(key: &str, value: &str) -> String {
        let mut v: Value = serde_json::from_str(VLLM).unwrap();
        v[key] = serde_json::from_str(value).unwrap();
        v.to_string()
    }

    /// Each field is checked where it is read, and the error names it (never a field derived from
    /// it: `completed: 1e-300` once ended in "invalid `ctx`: 18446744073709551615").
    #[test]
    fn each_field_is_checked_where_it_is_read() {
        let e = |key: &str, value: &str| runs("v.json", &vllm_with(key, value), Format::Vllm).unwrap_err().to_string();
        assert_eq!(
            e("completed", "1e-300"),
            "invalid `v.json` record 1: `completed` = 1e-300 (requests completed: a whole number from 1 to 1,000,000,000,000)"
        );
        assert_eq!(
            e("completed", "2.5"),
            "invalid `v.json` record 1: `completed` = 2.5 (requests completed: a whole number from 1 to 1,000,000,000,000)"
        );
        assert_eq!(
            e("mean_tpot_ms", "1e-308"),
            "invalid `v.json` record 1: `mean_tpot_ms` = 1e-308 (a time per output token in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])"
        );
        assert_eq!(
            e("output_throughput", "1e308"),
            "invalid `v.json` record 1: `output_throughput` = 1e308 (a throughput in tokens per second: a number in [0.001, 1e15])"
        );
        assert!(
            e("mean_ttft_ms", "4e6").contains("`mean_ttft_ms` = 4e6 (a time to first token"),
            "{}",
            e("mean_ttft_ms", "4e6")
        );
        assert_eq!(
            e("max_concurrency", "1e300"),
            "invalid `v.json` record 1: `max_concurrency` = 1e300 (concurrent requests: a whole number from 1 to 1,073,741,824)"
        );
        assert_eq!(
            e("total_input_tokens", "5"),
            "invalid `v.json` record 1: `total_input_tokens` = 5 over `completed` = 10 requests is a mean prompt of 0.5 tokens per request (at least 1 and at most 1,099,511,627,776 tokens)"
        );
        assert!(e("total_output_tokens", "1e300").contains("`total_output_tokens` = 1e300 (output tokens"));
        // trtllm-bench: parallel degrees and the mean context.
        let trt = |key: &str, value: f64| {
            let mut v = serde_json::json!({
                "engine": {"model": "llama-3-8b"}, "world_info": {"tp_size": 1},
                "request_info": {"avg_input_length": 128.0, "avg_output_length": 128.0, "avg_num_concurrent_requests": 4.0},
                "performance": {"system_output_throughput_tok_s": 900.0},
            });
            let (a, b) = key.split_once('.').unwrap();
            v[a][b] = value.into();
            runs("t.json", &v.to_string(), Format::TrtllmBench).unwrap_err().to_string()
        };
        assert_eq!(
            trt("world_info.tp_size", 1e300),
            "invalid `t.json` record 1: `world_info.tp_size` = 1e300 (tensor-parallel GPUs: a whole number from 1 to 4,096)"
        );
        assert!(trt("request_info.avg_num_concurrent_requests", 0.0)
            .contains("(concurrent requests: a number above 0 and at most 1,073,741,824)"));
        assert_eq!(
            trt("request_info.avg_input_length", 1099511627776.0),
            "invalid `t.json` record 1: `request_info.avg_input_length` = 1,099,511,627,776 and `request_info.avg_output_length` = 128 give a mean context of 1,099,511,627,840 tokens (the prompt plus half the output: at most 1,099,511,627,776 tokens)"
        );
    }

    /// A file's model is a preset or a Hub repo id, never a path: `/etc/passwd` was opened as a
    /// config when the user gave no `--model`.
    #[test]
    fn a_stated_model_is_a_preset_or_a_hub_id_never_a_path() {
        let c = Catalog::builtin();
        let run = |m: &str| {
            let mut r = runs("v.json", VLLM, Format::Vllm).unwrap().remove(0);
            r.model = Some((m.to_string(), "model_id"));
            r
        };
        let preset = stated_model("v.json", &run("Llama-3-8B"), &c, None).unwrap();
        assert!(
            matches!(preset, Some(StatedModel::Preset(s)) if s.name == c.preset("llama-3-8b").unwrap().spec().name)
        );
        for path in ["/etc/passwd", "../models/config.json", "~/x", "https://huggingface.co/org/name", "a/b/c"] {
            let e = stated_model("v.json", &run(path), &c, None).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid `v.json` record 1: `model_id` = \"{path}\" is not a model preset nor a Hub repo id (org/name); a benchmark file's model is read only as a model preset or a Hub repo id, never as a path: give `model NAME` (a preset")),
                "{e}"
            );
        }
        // A Hub id that is also a folder here is not read as the folder.
        let dir = std::env::temp_dir().join(format!("llm-ledger-stated-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("org").join("name")).unwrap();
        let cwd_relative = dir.join("org").join("name");
        let e = stated_model("v.json", &run(cwd_relative.to_str().unwrap()), &c, None).unwrap_err().to_string();
        assert!(e.contains("is not a model preset nor a Hub repo id"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let mut none = run("x");
        none.model = None;
        assert!(stated_model("v.json", &none, &c, None).unwrap().is_none());
    }
}
