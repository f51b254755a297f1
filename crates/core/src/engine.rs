//! Which clock times the operators: the time model ([`TimeModelKind`]: `measured`, the default,
//! or `roofline`) and the inference engine whose kernels, fusions and launch behaviour the measured
//! model assumes ([`Engine`]). A leaf: the scenario holds a [`Clock`]; [`crate::clock`] implements
//! it.

use crate::error::{Error, Result};
use serde::Serialize;
use std::str::FromStr;

/// The inference engine (kernels, fusions, CUDA graphs) the measured clock assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// TensorRT-LLM: CUDA graphs; QKV and gate/up GEMMs merged; residual fused into the norm,
    /// SiLU×gate into the gate/up GEMM, RoPE and the KV-cache append into the attention kernel.
    /// The default: it is the engine NVIDIA's AIConfigurator measures on every GPU it covers, and
    /// the engine of most of the whole-step rows this clock is validated on (docs/fidelity.md).
    #[default]
    Trtllm,
    /// vLLM: CUDA graphs in decode; QKV and gate/up merged; residual fused into the norm
    /// (`fused_add_rms_norm`); SiLU×gate, RoPE and the cache append are kernels of their own.
    Vllm,
    /// SGLang: as vLLM (same fusions in its default model code).
    Sglang,
    /// gpt-fast (PyTorch `torch.compile` + CUDA graphs): Inductor fuses every elementwise operator
    /// into its neighbours; the GEMMs stay cuBLAS kernels.
    GptFast,
    /// PyTorch eager without CUDA graphs: every operator a kernel of its own, launched from the
    /// host (the setup of LLMCompass's per-operator measurements).
    Eager,
}

/// Engine names as the `engine` input accepts them.
pub const ENGINE_NAMES: &[&str] = &["trtllm", "vllm", "sglang", "gpt-fast", "eager"];

impl Engine {
    /// Every engine, in [`ENGINE_NAMES`] order.
    pub const ALL: [Engine; 5] = [Engine::Trtllm, Engine::Vllm, Engine::Sglang, Engine::GptFast, Engine::Eager];

    /// Name as accepted by the `engine` input.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Trtllm => "trtllm",
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::GptFast => "gpt-fast",
            Engine::Eager => "eager",
        }
    }

    /// Whether the engine replays a step from a CUDA graph (no host launch per kernel).
    pub fn cuda_graphs(self) -> bool {
        !matches!(self, Engine::Eager)
    }

    /// The engine whose kernels were measured in [`crate::kernels`]: trtllm, vllm and sglang;
    /// `None` for gpt-fast and eager (no tables: the fitted model times them).
    pub fn kernel_engine(self) -> Option<crate::kernels::Engine> {
        match self {
            Engine::Trtllm => Some(crate::kernels::Engine::Trtllm),
            Engine::Vllm => Some(crate::kernels::Engine::Vllm),
            Engine::Sglang => Some(crate::kernels::Engine::Sglang),
            Engine::GptFast | Engine::Eager => None,
        }
    }
}

impl FromStr for Engine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Engine> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "trt-llm" | "tensorrt-llm" => return Ok(Engine::Trtllm),
            "gptfast" | "gpt_fast" => return Ok(Engine::GptFast),
            _ => {}
        }
        Engine::ALL
            .into_iter()
            .find(|e| e.name() == t)
            .ok_or_else(|| Error::unknown_for("engine", "engine", s, ENGINE_NAMES))
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

/// The clock of a scenario: the time model and the engine it assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Clock {
    /// Time model.
    pub model: TimeModelKind,
    /// Engine (used by the measured model only).
    pub engine: Engine,
}

impl Clock {
    /// Today's roofline, whatever the engine.
    pub const ROOFLINE: Clock = Clock { model: TimeModelKind::Roofline, engine: Engine::Trtllm };

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
        let err = "tgi".parse::<Engine>().unwrap_err().to_string();
        assert!(err.contains("engine") && err.contains("trtllm") && err.contains("eager"), "{err}");
        assert!("slow".parse::<TimeModelKind>().unwrap_err().to_string().contains("time_model"));
    }
}
