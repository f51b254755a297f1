//! Which clock times the operators: the time model ([`TimeModelKind`]: `measured`, the default,
//! or `roofline`) and the inference engine whose kernels, fusions and launch behaviour the measured
//! model assumes ([`Engine`]). A leaf: the scenario holds a [`Clock`]; [`crate::clock`] implements
//! it.

use crate::error::{Error, Result};
use crate::kernels::EngineVersion;
use serde::Serialize;
use std::str::FromStr;

/// The inference engine (kernels, fusions, CUDA graphs, host time) the measured clock assumes.
/// An engine name may carry a version (`trtllm@0.6`, `vllm@0.6.3`): the versions whose kernels or
/// host loop differ from today's are variants of their own; any other version is today's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(into = "&'static str")]
pub enum Engine {
    /// TensorRT-LLM: CUDA graphs; QKV and gate/up GEMMs merged; RoPE and the KV-cache append in
    /// the attention kernel; the residual add and the next RMSNorm one kernel; SwiGLU a kernel of
    /// its own after the gate/up GEMM. The default: it is the engine NVIDIA's AIConfigurator
    /// measures on every GPU it covers, and the engine of most of the whole-step rows this clock
    /// is validated on (docs/fidelity.md).
    #[default]
    Trtllm,
    /// TensorRT-LLM before v0.7 (`trtllm@0.6`): as [`Engine::Trtllm`], but its decode attention
    /// (masked multi-head attention) reads the KV cache once per *query* head of a GQA/MQA
    /// group; the grouped read came with the XQA kernel (TensorRT-LLM v0.7/v0.8 release notes,
    /// NVIDIA's XQA blog).
    TrtllmPreXqa,
    /// vLLM (the V1 engine, default since v0.8): CUDA graphs in decode; QKV and gate/up merged;
    /// the residual add and the next RMSNorm one kernel (`fused_add_rms_norm`); SiLU×gate, RoPE
    /// and the cache append kernels of their own; the host's scheduling overlapped with the GPU.
    Vllm,
    /// vLLM's V0 engine (`vllm@0.6`, versions before 0.8): the same kernels, but the host
    /// schedules, prepares the inputs and samples between GPU steps, serially
    /// ([`Engine::host_step_s`]).
    VllmV0,
    /// SGLang: as vLLM (same fusions in its default model code; its scheduler overlaps the GPU).
    Sglang,
    /// gpt-fast (PyTorch `torch.compile` + CUDA graphs): Inductor fuses every elementwise operator
    /// into its neighbours; the GEMMs stay cuBLAS kernels.
    GptFast,
    /// PyTorch eager without CUDA graphs: every operator a kernel of its own, launched from the
    /// host (the setup of LLMCompass's per-operator measurements).
    Eager,
}

/// Engine names as the `engine` input accepts them (a version may follow `@`).
pub const ENGINE_NAMES: &[&str] = &["trtllm", "trtllm@0.6", "vllm", "vllm@0.6", "sglang", "gpt-fast", "eager"];

/// The largest head group (query heads per KV head) TensorRT-LLM's XQA decode kernels take:
/// `supportConfigHMMA` and `supportConfigQGMMA` (TensorRT-LLM
/// `cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQAImplJIT/kernelUtils.cpp`)
/// refuse `head_grp_size × beam_width > 32`, and the masked multi-head attention kernel decodes
/// those groups. AIConfigurator's H100 tables (TensorRT-LLM 1.3.0rc20) show the step: a batch of
/// 256 decodes with one cached token each, head size 64, one KV head, takes 16.8 µs with 32
/// query heads and 151.6 µs with 64.
pub const XQA_MAX_HEAD_GROUP: f64 = 32.0;

/// Host time per step of vLLM's V0 engine, seconds: scheduling, preparing the model inputs and
/// sampling run on the CPU between GPU steps (its CUDA graphs cover the decode forward only;
/// vLLM's V1 announcement, January 2025, names this serial host work as what V1 removed).
/// **Fitted**: the median of the gaps between measured and modelled mean end-to-end latency of
/// vLLM's performance-benchmark CI (build 9515, H200, batch 8, 32 in / 128 out: Llama-3.1-8B TP 1
/// 1.5 ms, Llama-3-70B TP 4 2.9 ms, Mixtral-8x7B TP 2 2.2 ms per step), divided over its 128
/// steps. One constant for every model and layout; the spread (1.5–2.9 ms) is its uncertainty.
pub const VLLM_V0_HOST_STEP_S: f64 = 2.2e-3;

impl Engine {
    /// Every engine, in [`ENGINE_NAMES`] order.
    pub const ALL: [Engine; 7] = [
        Engine::Trtllm,
        Engine::TrtllmPreXqa,
        Engine::Vllm,
        Engine::VllmV0,
        Engine::Sglang,
        Engine::GptFast,
        Engine::Eager,
    ];

    /// Name as accepted by the `engine` input.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Trtllm => "trtllm",
            Engine::TrtllmPreXqa => "trtllm@0.6",
            Engine::Vllm => "vllm",
            Engine::VllmV0 => "vllm@0.6",
            Engine::Sglang => "sglang",
            Engine::GptFast => "gpt-fast",
            Engine::Eager => "eager",
        }
    }

    /// The engine without its version: what it fuses and which kernel tables it has.
    pub fn family(self) -> Engine {
        match self {
            Engine::TrtllmPreXqa => Engine::Trtllm,
            Engine::VllmV0 => Engine::Vllm,
            e => e,
        }
    }

    /// Whether the engine replays a step from a CUDA graph (no host launch per kernel).
    pub fn cuda_graphs(self) -> bool {
        !matches!(self, Engine::Eager)
    }

    /// Whether its decode attention reads a GQA group's K and V once per query head rather than
    /// once per KV head, for a group of `group` query heads per KV head: always before XQA
    /// ([`Engine::TrtllmPreXqa`]); in today's TensorRT-LLM for groups above
    /// [`XQA_MAX_HEAD_GROUP`], which its XQA kernels refuse, so that the masked multi-head
    /// attention kernel decodes them; never in the other engines.
    pub fn kv_read_per_query_head(self, group: f64) -> bool {
        match self {
            Engine::TrtllmPreXqa => true,
            Engine::Trtllm => group > XQA_MAX_HEAD_GROUP,
            Engine::Vllm | Engine::VllmV0 | Engine::Sglang | Engine::GptFast | Engine::Eager => false,
        }
    }

    /// Whether its decode attention is the kernel the measured tables hold: every engine but
    /// TensorRT-LLM before XQA ([`Engine::TrtllmPreXqa`]), whose tables are today's.
    pub fn decode_attention_is_todays(self) -> bool {
        self != Engine::TrtllmPreXqa
    }

    /// Host time per step that the GPU waits for, seconds: [`VLLM_V0_HOST_STEP_S`] for vLLM's V0
    /// engine; 0 for the others, whose host work overlaps the GPU (TensorRT-LLM's C++ runtime
    /// and NIM enqueue the next step while one runs; vLLM V1 and SGLang schedule ahead) or is
    /// counted per kernel (eager's launches, [`crate::clock::HOST_LAUNCH_S`]).
    pub fn host_step_s(self) -> f64 {
        match self {
            Engine::VllmV0 => VLLM_V0_HOST_STEP_S,
            _ => 0.0,
        }
    }

    /// The engine whose kernels were measured in [`crate::kernels`]: trtllm, vllm and sglang;
    /// `None` for gpt-fast and eager (no tables: the fitted model times them). The tables are
    /// today's kernels: an older version's GEMMs read them too (a GEMM is a cuBLAS/CUTLASS kernel
    /// in every version).
    pub fn kernel_engine(self) -> Option<crate::kernels::Engine> {
        match self.family() {
            Engine::Trtllm => Some(crate::kernels::Engine::Trtllm),
            Engine::Vllm => Some(crate::kernels::Engine::Vllm),
            Engine::Sglang => Some(crate::kernels::Engine::Sglang),
            _ => None,
        }
    }
}

impl From<Engine> for &'static str {
    fn from(e: Engine) -> &'static str {
        e.name()
    }
}

impl FromStr for Engine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Engine> {
        Engine::with_version(s).map(|(engine, _)| engine)
    }
}

impl Engine {
    /// The engine an `engine` input names, and the version after `@` that its kernel tables are
    /// read at: `vllm@0.19` is vLLM's V1 engine timed from the tables measured at 0.19.0 (the
    /// nearest at or below, per GPU: [`crate::kernels::Tables::at`]); the versions that are
    /// engines of their own (`trtllm@0.6`: [`Engine::TrtllmPreXqa`], `vllm@0.6`:
    /// [`Engine::VllmV0`], older than every table) read the default version's tables; gpt-fast
    /// and eager take no version.
    pub fn with_version(s: &str) -> Result<(Engine, Option<EngineVersion>)> {
        let t = s.trim().to_ascii_lowercase();
        let (name, version) = match t.split_once('@') {
            Some((n, v)) => (n, Some(v)),
            None => (t.as_str(), None),
        };
        let family = match name {
            "trt-llm" | "tensorrt-llm" | "trtllm" | "nim" => Engine::Trtllm,
            "gptfast" | "gpt_fast" | "gpt-fast" => Engine::GptFast,
            "vllm" => Engine::Vllm,
            "sglang" => Engine::Sglang,
            "eager" => Engine::Eager,
            _ => return Err(Error::unknown_for("engine", "engine", s, ENGINE_NAMES)),
        };
        let Some(version) = version else { return Ok((family, None)) };
        let bad = || {
            Error::invalid(
                "engine",
                format!("{s:?}"),
                "a version as major.minor[.patch] after @ (trtllm@1.2, vllm@0.19, sglang@0.5.9) for trtllm, vllm or sglang",
            )
        };
        let v = EngineVersion::parse(version).ok_or_else(bad)?;
        let legacy = |major_minor: (u64, u64)| {
            v < EngineVersion::parse(&format!("{}.{}", major_minor.0, major_minor.1)).expect("a version")
        };
        match family {
            Engine::Trtllm if legacy((0, 7)) => Ok((Engine::TrtllmPreXqa, None)),
            Engine::Vllm if legacy((0, 8)) => Ok((Engine::VllmV0, None)),
            Engine::Trtllm | Engine::Vllm | Engine::Sglang => Ok((family, Some(v))),
            Engine::TrtllmPreXqa | Engine::VllmV0 | Engine::GptFast | Engine::Eager => Err(bad()),
        }
    }
}

/// Which time model gives an operator its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeModelKind {
    /// Measured kernel behaviour ([`crate::clock`]): the expected time on a real GPU.
    #[default]
    Measured,
    /// The roofline with the two efficiency inputs ([`crate::roofline::Roofline`]), today's model.
    Roofline,
}

/// Names accepted by the `time_model` input.
pub const TIME_MODEL_NAMES: &[&str] = &["measured", "roofline"];

impl TimeModelKind {
    /// Name as accepted by the `time_model` input.
    pub fn name(self) -> &'static str {
        match self {
            TimeModelKind::Measured => "measured",
            TimeModelKind::Roofline => "roofline",
        }
    }
}

impl FromStr for TimeModelKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<TimeModelKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "measured" | "expected" => Ok(TimeModelKind::Measured),
            "roofline" => Ok(TimeModelKind::Roofline),
            _ => Err(Error::unknown_for("time_model", "time model", s, TIME_MODEL_NAMES)),
        }
    }
}

/// The clock of a scenario: the time model, the engine it assumes and the engine version its
/// kernel tables are read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Clock {
    /// Time model.
    pub model: TimeModelKind,
    /// Engine (used by the measured model only).
    pub engine: Engine,
    /// The engine version named (`vllm@0.19`), whose kernel tables the measured model reads
    /// (the nearest measured at or below it); `None`: the default version's.
    pub version: Option<EngineVersion>,
}

impl Clock {
    /// Today's roofline, whatever the engine.
    pub const ROOFLINE: Clock = Clock { model: TimeModelKind::Roofline, engine: Engine::Trtllm, version: None };

    /// The measured model of `engine`, at the default version's tables.
    pub const fn measured(engine: Engine) -> Clock {
        Clock { model: TimeModelKind::Measured, engine, version: None }
    }

    /// Whether operators are timed by the plain roofline (expected time = roofline time).
    pub fn is_roofline(&self) -> bool {
        self.model == TimeModelKind::Roofline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_accepted() {
        for e in Engine::ALL {
            assert_eq!(e.name().parse::<Engine>().unwrap(), e);
        }
        assert_eq!(ENGINE_NAMES, Engine::ALL.map(Engine::name));
        for (name, e) in [
            ("trtllm@0.5.0", Engine::TrtllmPreXqa),
            ("TensorRT-LLM@v0.6.1", Engine::TrtllmPreXqa),
            ("trtllm@0.7", Engine::Trtllm),
            ("trtllm@1.0.0", Engine::Trtllm),
            ("vllm@0.6.3", Engine::VllmV0),
            ("vllm@0.7", Engine::VllmV0),
            ("vllm@0.8", Engine::Vllm),
            ("nim", Engine::Trtllm),
        ] {
            assert_eq!(name.parse::<Engine>().unwrap(), e, "{name}");
        }
        for bad in ["trtllm@", "trtllm@x.y", "eager@1", "gpt-fast@0.1", "vllm@1"] {
            let err = bad.parse::<Engine>().unwrap_err().to_string();
            assert!(err.starts_with("invalid `engine`") && err.contains("major.minor"), "{err}");
        }
        // A version its kernel tables are read at; the versions that are engines of their own
        // read the default version's.
        let v = |s: &str| EngineVersion::parse(s);
        for (name, engine, version) in [
            ("vllm@0.19", Engine::Vllm, v("0.19.0")),
            ("sglang@0.5.9", Engine::Sglang, v("0.5.9")),
            ("trtllm@1.3.0rc10", Engine::Trtllm, v("1.3.0rc10")),
            ("trtllm@0.6", Engine::TrtllmPreXqa, None),
            ("vllm@0.7.3", Engine::VllmV0, None),
            ("vllm", Engine::Vllm, None),
        ] {
            assert_eq!(Engine::with_version(name).unwrap(), (engine, version), "{name}");
        }
        let err = "tgi".parse::<Engine>().unwrap_err().to_string();
        assert!(err.contains("engine") && err.contains("trtllm") && err.contains("eager"), "{err}");
        assert!("slow".parse::<TimeModelKind>().unwrap_err().to_string().contains("time_model"));
    }
}
