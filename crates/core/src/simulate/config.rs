//! The simulator's configuration: the arrivals, lengths, scheduler limits and engine policies
//! of one run, and their ranges.

use super::*;

/// Which work a step serves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Prefill chunks and admissions first; decodes take the budget that is left.
    PrefillFirst,
    /// Running decodes first, then prefill chunks and admissions (vLLM V1, SGLang default).
    DecodeFirst,
}

/// One pass of a scheduling over the engine's sequences ([`Schedule::passes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The running sequences that decode, each one token, in admission order.
    RunningDecodes,
    /// The running sequences still in prefill, each a chunk, in admission order.
    RunningPrefills,
    /// Waiting requests admitted first come first served, while the admission policy lets the
    /// next in and the step has room.
    Admissions,
}

impl Schedule {
    /// Every schedule, in the order [`Schedule::NAMES`] names them.
    pub const ALL: [Schedule; 2] = [Schedule::PrefillFirst, Schedule::DecodeFirst];
    /// The accepted names (what [`std::str::FromStr`] takes and serde writes).
    pub const NAMES: [&'static str; 2] = ["prefill-first", "decode-first"];

    /// The schedule's name.
    pub fn name(self) -> &'static str {
        Schedule::NAMES[self as usize]
    }

    /// The passes of one scheduling, in order: decodes first, or prefills (running, then new)
    /// first with decodes given what budget is left.
    pub fn passes(self) -> [Pass; 3] {
        match self {
            Schedule::DecodeFirst => [Pass::RunningDecodes, Pass::RunningPrefills, Pass::Admissions],
            Schedule::PrefillFirst => [Pass::RunningPrefills, Pass::Admissions, Pass::RunningDecodes],
        }
    }
}

impl std::str::FromStr for Schedule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        Schedule::ALL.into_iter().find(|k| k.name() == t).ok_or_else(|| Error::unknown("schedule", s, Schedule::NAMES))
    }
}

/// Everything a simulation takes besides the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// How requests arrive.
    pub arrivals: Arrivals,
    /// Requests to serve (a trace: its length).
    pub requests: u64,
    /// Seed of the arrival and length draws.
    pub seed: u64,
    /// Prompt lengths.
    pub prompt: Lengths,
    /// Output lengths (the first output token comes from the prefill).
    pub output: Lengths,
    /// Most sequences in one step.
    pub max_seqs: u64,
    /// Most new tokens in one step.
    pub max_batched_tokens: u64,
    /// Most prompt tokens of one sequence in one step.
    pub chunk_tokens: u64,
    /// Which work a step serves first.
    pub schedule: Schedule,
    /// Tokens per KV block.
    pub block_tokens: u64,
    /// Fraction of each prompt found in the prefix cache, `0 ≤ h < 1`.
    pub prefix_hit: f64,
    /// TTFT bound for goodput, seconds.
    pub ttft_slo_s: Option<f64>,
    /// TPOT bound for goodput, seconds.
    pub tpot_slo_s: Option<f64>,
    /// Memory kept back from weights, KV and workspace, bytes.
    pub reserve_bytes: f64,
    /// Which requests a step admits ([`Admission`]).
    pub admission: Admission,
    /// What a preemption does with the KV cache ([`Preemption`]).
    pub preemption: Preemption,
    /// CUDA-graph padding of decode-only steps ([`CudaGraphs`]).
    pub cuda_graphs: CudaGraphs,
    /// Decode steps per scheduling (vLLM's `--num-scheduler-steps`): after a scheduling whose
    /// step only decodes, the same sequences decode this many steps in a row (their blocks
    /// reserved for all of them), finished ones dropping out; nothing is admitted or preempted
    /// until the last, and the host's time is paid once, in the first. The run's tokens stream to
    /// the client together after its last step (or a sequence's own last token): vLLM processes
    /// the outputs of a multi-step run after its last forward when the GPU runs ahead of the CPU
    /// (RFC vllm-project/vllm#6854, "Multi-Step Scheduling", and its author's answer on streaming),
    /// so the inter-token latency is one sample per chunk, the gap between chunks, while the time
    /// per output token is unchanged.
    pub scheduler_steps: u64,
    /// Whether host time per step is serial or overlapped with the GPU ([`HostTime`]).
    pub host: HostTime,
    /// Requests arriving first whose numbers every summary statistic leaves out (a benchmark's
    /// warm-up): latencies, goodput, completions and token rates count the later ones only, and
    /// rates are over the window from the first of those to the end. Time averages (batch, queue,
    /// KV use, requests in the system), steps and processed tokens are over the whole run.
    pub warmup_requests: u64,
    /// Most requests in the system at once for an open loop or a trace (`benchmark_serving.py
    /// --max-concurrency C --request-rate R`): an arrival that finds `C` in flight is sent, and
    /// its latencies start, when one finishes.
    pub max_concurrency: Option<u64>,
    /// Which replica takes an arrival ([`Router`]).
    pub router: Router,
    /// Speculative decoding ([`Speculation`]); none by default.
    pub speculation: Option<Speculation>,
    /// Keep a block-level prefix cache over the KV pool ([`prefix`]): requests whose trace rows
    /// name a [`PromptPrefix`] find its cached blocks. Off by default; not with `prefix_hit`
    /// (the fixed hit rate of every prompt).
    pub prefix_cache: bool,
}

impl SimConfig {
    /// Defaults as vLLM V1 ships them on a large GPU: 256 sequences, 8,192 batched tokens,
    /// chunks of up to 8,192, decode first, 16-token blocks, no prefix cache; 1,000 requests of
    /// 2,048 + 256 tokens, Poisson at `rate_per_s`, seed 0.
    pub fn poisson(rate_per_s: f64) -> SimConfig {
        SimConfig {
            arrivals: Arrivals::Poisson { rate_per_s },
            requests: 1000,
            seed: 0,
            prompt: Lengths::Fixed(2048),
            output: Lengths::Fixed(256),
            max_seqs: SchedulerLimits::PLAIN.max_seqs,
            max_batched_tokens: SchedulerLimits::PLAIN.max_batched_tokens,
            chunk_tokens: SchedulerLimits::PLAIN.max_batched_tokens,
            schedule: Schedule::DecodeFirst,
            block_tokens: 16,
            prefix_hit: 0.0,
            ttft_slo_s: None,
            tpot_slo_s: None,
            reserve_bytes: crate::serving::DEFAULT_RESERVE_BYTES,
            admission: Admission::MaxUtilization,
            preemption: Preemption::Recompute,
            cuda_graphs: CudaGraphs::Unpadded,
            scheduler_steps: 1,
            host: HostTime::Serial,
            warmup_requests: 0,
            max_concurrency: None,
            router: Router::RoundRobin,
            speculation: None,
            prefix_cache: false,
        }
    }

    /// This configuration with `engine`'s own scheduler on `gpu` ([`EnginePolicy::of_engine`])
    /// and its own step limits there ([`SchedulerLimits::of_engine`]; a prompt's chunk up to the
    /// step's tokens).
    pub fn for_engine(self, engine: crate::engine::Engine, gpu: &crate::hardware::Gpu) -> SimConfig {
        let p = EnginePolicy::of_engine(engine);
        let limits = SchedulerLimits::of_engine(engine, gpu);
        SimConfig {
            admission: p.admission,
            host: p.host,
            cuda_graphs: p.cuda_graphs,
            max_seqs: limits.max_seqs,
            max_batched_tokens: limits.max_batched_tokens,
            chunk_tokens: limits.max_batched_tokens,
            ..self
        }
    }

    /// This configuration at another arrival rate (open loops; a closed loop or a trace is
    /// unchanged).
    pub fn at_rate(&self, rate_per_s: f64) -> SimConfig {
        let arrivals = match &self.arrivals {
            Arrivals::Poisson { .. } => Arrivals::Poisson { rate_per_s },
            Arrivals::Gamma { cv, .. } => Arrivals::Gamma { rate_per_s, cv: *cv },
            other => other.clone(),
        };
        SimConfig { arrivals, ..self.clone() }
    }

    /// The requests a run offers: a trace's length, else [`SimConfig::requests`].
    pub fn offered_requests(&self) -> u64 {
        match &self.arrivals {
            Arrivals::Trace(t) => t.len() as u64,
            Arrivals::Poisson { .. } | Arrivals::Gamma { .. } | Arrivals::Closed { .. } => self.requests,
        }
    }

    /// Check every field's range (the errors name the field).
    pub fn validate(&self) -> Result<()> {
        self.arrivals.validate()?;
        if !matches!(self.arrivals, Arrivals::Trace(_)) && !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(Error::invalid("requests", self.requests, integer_in(1, MAX_REQUESTS)));
        }
        self.prompt.validate("prompt")?;
        self.output.validate("output")?;
        for (field, v) in [
            ("max_seqs", self.max_seqs),
            ("max_batched_tokens", self.max_batched_tokens),
            ("chunk", self.chunk_tokens),
            ("block", self.block_tokens),
        ] {
            if !(1..=MAX_STEP_SIZE).contains(&v) {
                return Err(Error::invalid(field, v, integer_in(1, MAX_STEP_SIZE)));
            }
        }
        if !(self.prefix_hit.is_finite() && (0.0..1.0).contains(&self.prefix_hit)) {
            return Err(Error::invalid("prefix_hit", self.prefix_hit, "a fraction in [0, 1)"));
        }
        if self.prefix_cache && self.prefix_hit > 0.0 {
            return Err(Error::invalid(
                "prefix_hit",
                self.prefix_hit,
                "0 with the prefix cache (its hits come from the prompts' shared prefixes)",
            ));
        }
        for (field, v) in [("ttft_ms", self.ttft_slo_s), ("tpot_ms", self.tpot_slo_s)] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::invalid(field, v * 1e3, "a time in milliseconds above 0"));
                }
            }
        }
        policy::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schedule parses from its name and serialises as it; an unknown name lists them all.
    #[test]
    fn a_schedule_goes_by_one_name() {
        for k in Schedule::ALL {
            assert_eq!(k.name().parse::<Schedule>().unwrap(), k);
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        let e = "lifo".parse::<Schedule>().unwrap_err().to_string();
        assert!(e.contains("prefill-first, decode-first"), "{e}");
        assert_eq!(Schedule::DecodeFirst.passes()[0], Pass::RunningDecodes);
        assert_eq!(Schedule::PrefillFirst.passes()[2], Pass::RunningDecodes);
    }
}
