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

use anyhow::{bail, Result};
use llm_ledger_core::calibrate::Metric;
use llm_ledger_core::error::{Error, Text};
use serde_json::Value;

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
    pub fn detect(file: &str, text: &str) -> Result<Format> {
        let first = text.trim_start();
        if !(first.starts_with('{') || first.starts_with('[')) {
            return Ok(Format::Csv);
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
                bail!("invalid `{file}` record {}: not a JSON object (expected {KNOWN_SCHEMAS})", i + 1);
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

    /// A number at `path`: `None` when absent or null, an error naming the field when it is not a
    /// finite number above `min` (exclusive), NaN and infinities included.
    fn number(&self, path: &str, what: &str) -> Result<Option<f64>> {
        let Some(v) = self.at(path) else { return Ok(None) };
        match v.as_f64() {
            Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
            _ => {
                let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                Err(anyhow::anyhow!(
                    "invalid `{}` record {}: `{path}` = {shown} ({what}: a positive finite number)",
                    self.file,
                    self.record
                ))
            }
        }
    }

    /// A number that must be there.
    fn required(&self, path: &str, what: &str, format: &str) -> Result<f64> {
        self.number(path, what)?.ok_or_else(|| {
            anyhow::anyhow!(
                "invalid `{}` record {}: missing field `{path}` ({what}, which a {format} states)",
                self.file,
                self.record
            )
        })
    }

    /// A whole number ≥ 1, optional.
    fn count(&self, path: &str, what: &str) -> Result<Option<u64>> {
        match self.number(path, what)? {
            Some(x) if x.fract() == 0.0 => Ok(Some(x as u64)),
            Some(x) => bail!("invalid `{}` record {}: `{path}` = {x} ({what}: a whole number)", self.file, self.record),
            None => Ok(None),
        }
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

    /// Measurements from `(field, metric, factor to SI)`, those present.
    fn read(&self, fields: &[(&'static str, Metric, f64)]) -> Result<Vec<(Metric, f64, &'static str)>> {
        let mut out: Vec<(Metric, f64, &'static str)> = Vec::new();
        for (field, metric, to_si) in fields {
            let what = match metric {
                Metric::TokensPerS => "tokens per second",
                _ => "milliseconds",
            };
            if out.iter().any(|(m, ..)| m == metric) {
                continue;
            }
            if let Some(v) = self.number(field, what)? {
                out.push((*metric, v * to_si, field));
            }
        }
        Ok(out)
    }

    /// A vLLM `benchmark_serving.py --save-result` record.
    fn vllm(&self) -> Result<Run> {
        const FORMAT: &str = "vLLM benchmark_serving result";
        let completed = self.required("completed", "requests completed", FORMAT)?;
        let input = self.required("total_input_tokens", "prompt tokens of the completed requests", FORMAT)?;
        let output = self.required("total_output_tokens", "output tokens of the completed requests", FORMAT)?;
        let fields = [
            ("mean_tpot_ms", Metric::TpotS, 1e-3),
            ("mean_itl_ms", Metric::TpotS, 1e-3),
            ("mean_ttft_ms", Metric::TtftS, 1e-3),
            ("output_throughput", Metric::TokensPerS, 1.0),
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
            concurrency: self.number("max_concurrency", "concurrent requests")?,
            concurrency_field: "max_concurrency",
            prompt_tokens: input / completed,
            output_tokens: output / completed,
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
        let prompt = self.required("input_sequence_length.avg", "mean prompt tokens", FORMAT)?;
        let output = self.required("output_sequence_length.avg", "mean output tokens", FORMAT)?;
        let fields = [
            ("inter_token_latency.avg", Metric::TpotS, 1e-3),
            ("time_to_first_token.avg", Metric::TtftS, 1e-3),
            ("output_token_throughput.avg", Metric::TokensPerS, 1.0),
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
            concurrency: self.number("input_config.concurrency", "concurrent requests")?,
            concurrency_field: "input_config.concurrency",
            prompt_tokens: prompt,
            output_tokens: output,
            measured,
        })
    }

    /// A `trtllm-bench` report record.
    fn trtllm_bench(&self) -> Result<Run> {
        const FORMAT: &str = "trtllm-bench report";
        let prompt = self.required("request_info.avg_input_length", "mean prompt tokens", FORMAT)?;
        let output = self.required("request_info.avg_output_length", "mean output tokens", FORMAT)?;
        let concurrency = self.required("request_info.avg_num_concurrent_requests", "concurrent requests", FORMAT)?;
        let fields = [
            ("streaming_metrics.avg_tpot_ms", Metric::TpotS, 1e-3),
            ("streaming_metrics.avg_ttft_ms", Metric::TtftS, 1e-3),
            ("performance.system_output_throughput_tok_s", Metric::TokensPerS, 1.0),
        ];
        let measured = self.measured(
            self.read(&fields)?,
            &["performance.system_output_throughput_tok_s", "streaming_metrics.avg_tpot_ms"],
        )?;
        Ok(Run {
            record: self.record,
            model: self.text("engine.model").map(|m| (m, "engine.model")),
            engine: Some("trtllm"),
            tp: self.count("world_info.tp_size", "tensor-parallel GPUs")?,
            pp: self.count("world_info.pp_size", "pipeline stages")?,
            ep: self.count("world_info.ep_size", "expert-parallel groups")?,
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
}
