//! Inputs of the serving economics that are not part of the forward step: the GPU price, the
//! runtime memory reserve, the request shape (prompt and output lengths), a latency bound, and a
//! measured step time. [`ServingRequest`] holds them as text (CLI flags and URL query parameters
//! alike) and [`ServingRequest::resolve`] is the one resolver, next to
//! [`crate::ScenarioRequest`] for the step itself.
//!
//! ```
//! use llm_ledger_core::serving::{PriceSource, ServingRequest};
//! use llm_ledger_core::Scenario;
//! let sc = Scenario::default_decode();
//! let req = ServingRequest { usd_per_hour: Some("2.5".into()), reserve: Some("4 GiB".into()), ..Default::default() };
//! let s = req.resolve(&sc).unwrap();
//! assert_eq!(s.price.unwrap().usd_per_hour, 2.5);
//! assert_eq!(s.price.unwrap().source, PriceSource::User);
//! assert_eq!(s.reserve_bytes, 4.0 * 1024.0 * 1024.0 * 1024.0);
//! ```

use crate::error::integer_in;
use crate::error::{compact_f64, Error, Result};
use crate::limits::{self, MAX_CONTEXT};
use crate::scenario::{parse_u64, Scenario};
use serde::{Deserialize, Serialize};

/// Default runtime reserve: 2 GB (2 × 10⁹ bytes) of the GPU's memory kept back from weights, KV
/// cache and activation workspace, for the CUDA context, the allocator's fragmentation and the
/// communication buffers. Source: `shared/research/hardware.md` §5 pitfall 4 ("the CUDA context
/// needs 0.5–2 GB more"); the upper end is taken. Set it with `reserve`.
pub const DEFAULT_RESERVE_BYTES: f64 = 2e9;

/// Default prompt length of a request, tokens (the reference calculator's 2,048-token context).
pub const DEFAULT_PROMPT_TOKENS: u64 = 2048;

/// Default output length of a request, tokens.
pub const DEFAULT_OUTPUT_TOKENS: u64 = 256;

/// Largest accepted price, USD per GPU-hour (anything above is a typo): [`limits::USD_PER_HOUR`].
pub const MAX_USD_PER_HOUR: f64 = limits::USD_PER_HOUR.max;

/// Raw serving inputs, as text. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingRequest {
    /// Price in USD per GPU-hour (default: the catalogue's approximate price for the GPU).
    pub usd_per_hour: Option<String>,
    /// Runtime reserve: a size with a unit (`2GB`, `1.5 GiB`; see [`crate::size`]) (default 2 GB).
    pub reserve: Option<String>,
    /// Prompt tokens per request (default 2048).
    pub prompt: Option<String>,
    /// Output tokens per request (default 256).
    pub output: Option<String>,
    /// Upper bound on the time per output token, milliseconds.
    pub tpot_ms: Option<String>,
    /// Measured step time, milliseconds.
    pub step_ms: Option<String>,
    /// Measured throughput, tokens per second (decode: generated; prefill: processed).
    pub tokens_per_s: Option<String>,
}

/// Where a price comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// The GPU catalogue: an approximate on-demand price that goes stale (hardware.md §3).
    CatalogueApproximate,
    /// Given by the user.
    User,
}

/// A GPU-hour price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    /// USD per GPU-hour.
    pub usd_per_hour: f64,
    /// Where it comes from.
    pub source: PriceSource,
}

impl Price {
    /// The price of `usd_per_hour`'s text (an input of that name), else the catalogue's
    /// approximate price for the scenario's GPU, else none.
    pub fn of(usd_per_hour: Option<&str>, sc: &Scenario) -> Result<Option<Price>> {
        Ok(match usd_per_hour {
            Some(s) => Some(Price { usd_per_hour: limits::USD_PER_HOUR.parse(s)?, source: PriceSource::User }),
            None => {
                sc.gpu.usd_per_gpu_hour.map(|p| Price { usd_per_hour: p, source: PriceSource::CatalogueApproximate })
            }
        })
    }

    /// USD per GPU-second.
    pub fn usd_per_s(&self) -> f64 {
        self.usd_per_hour / 3600.0
    }
}

/// A measurement of one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measured {
    /// Step time, seconds.
    StepTime(f64),
    /// Tokens per second.
    TokensPerS(f64),
}

/// Serving inputs, resolved and validated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Serving {
    /// GPU-hour price, when one is known.
    pub price: Option<Price>,
    /// Runtime reserve, bytes.
    pub reserve_bytes: f64,
    /// Prompt tokens per request.
    pub prompt_tokens: u64,
    /// Output tokens per request (≥ 1; the first comes from prefill).
    pub output_tokens: u64,
    /// Upper bound on the time per output token, seconds.
    pub tpot_bound_s: Option<f64>,
    /// A measured step time or throughput.
    pub measured: Option<Measured>,
}

impl Default for Serving {
    fn default() -> Self {
        Serving {
            price: None,
            reserve_bytes: DEFAULT_RESERVE_BYTES,
            prompt_tokens: DEFAULT_PROMPT_TOKENS,
            output_tokens: DEFAULT_OUTPUT_TOKENS,
            tpot_bound_s: None,
            measured: None,
        }
    }
}

impl Serving {
    /// The price, or an error naming the flag that sets it.
    pub fn require_price(&self, gpu: &str) -> Result<Price> {
        self.price
            .ok_or_else(|| Error::invalid("usd_per_hour", format!("none for GPU {gpu}"), "a price in USD per GPU-hour"))
    }
}

/// The refusal of an input that shapes a step's contexts (`ctx`, `contexts`, a histogram, `phase`)
/// in a command that builds its own steps from `prompt` and `output` (`latency`, `cost`).
pub fn step_shape_refused(field: &str, command: &str) -> Error {
    Error::invalid(
        field,
        format!("given to `{command}`"),
        "it builds its steps from `prompt` and `output`: prefill, then decode with a growing context; `batch` sets the concurrent requests",
    )
}

pub use crate::size::parse_bytes;

impl ServingRequest {
    /// Resolve against the scenario (for the GPU's catalogue price and capacity).
    pub fn resolve(&self, sc: &Scenario) -> Result<Serving> {
        let price = Price::of(self.usd_per_hour.as_deref(), sc)?;
        let reserve_bytes = match &self.reserve {
            Some(s) => parse_bytes("reserve", s)?,
            None => DEFAULT_RESERVE_BYTES,
        };
        if reserve_bytes >= sc.gpu.memory_bytes {
            return Err(Error::invalid(
                "reserve",
                format!("{} bytes", compact_f64(reserve_bytes)),
                format!("less than the GPU's {} bytes", compact_f64(sc.gpu.memory_bytes)),
            ));
        }
        let tokens = |field: &str, v: &Option<String>, d: u64, min: u64| -> Result<u64> {
            let n = v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(d);
            if (min..=MAX_CONTEXT).contains(&n) {
                Ok(n)
            } else {
                Err(Error::invalid(field, n, integer_in(min, MAX_CONTEXT)))
            }
        };
        let prompt_tokens = tokens("prompt", &self.prompt, DEFAULT_PROMPT_TOKENS, 1)?;
        let output_tokens = tokens("output", &self.output, DEFAULT_OUTPUT_TOKENS, 1)?;
        if prompt_tokens + output_tokens > MAX_CONTEXT {
            return Err(Error::invalid(
                "prompt + output",
                prompt_tokens + output_tokens,
                format!("at most {MAX_CONTEXT} tokens"),
            ));
        }
        let tpot_bound_s = self.tpot_ms.as_deref().map(|s| limits::TPOT_MS.parse(s)).transpose()?.map(|ms| ms / 1e3);
        let measured = match (&self.step_ms, &self.tokens_per_s) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "step_ms",
                    "given together with tokens_per_s",
                    "one of step_ms or tokens_per_s",
                ))
            }
            (Some(ms), None) => Some(Measured::StepTime(limits::STEP_MS.parse(ms)? / 1e3)),
            (None, Some(t)) => Some(Measured::TokensPerS(limits::TOKENS_PER_S.parse(t)?)),
            (None, None) => None,
        };
        Ok(Serving { price, reserve_bytes, prompt_tokens, output_tokens, tpot_bound_s, measured })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(r: ServingRequest) -> Result<Serving> {
        r.resolve(&Scenario::default_decode())
    }

    #[test]
    fn defaults_take_the_catalogue_price_marked_approximate() {
        let s = resolve(ServingRequest::default()).unwrap();
        let p = s.price.unwrap();
        assert_eq!(p.source, PriceSource::CatalogueApproximate);
        assert_eq!(p.usd_per_hour, Scenario::default_decode().gpu.usd_per_gpu_hour.unwrap());
        assert_eq!(s.reserve_bytes, 2e9);
        assert_eq!((s.prompt_tokens, s.output_tokens), (2048, 256));
        assert_eq!(s.tpot_bound_s, None);
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let msg = |r: ServingRequest| resolve(r).unwrap_err().to_string();
        assert_eq!(
            msg(ServingRequest { usd_per_hour: Some("-2".into()), ..Default::default() }),
            "invalid `usd_per_hour`: -2 (a number in (0, 1e6])"
        );
        assert_eq!(
            msg(ServingRequest { output: Some("0".into()), ..Default::default() }),
            "invalid `output`: 0 (an integer from 1 to 1,099,511,627,776)"
        );
        assert!(
            msg(ServingRequest { reserve: Some("80GB".into()), ..Default::default() }).contains("less than the GPU")
        );
        assert!(
            msg(ServingRequest { tpot_ms: Some("0".into()), ..Default::default() }).starts_with("invalid `tpot_ms`")
        );
        assert!(msg(ServingRequest {
            step_ms: Some("1".into()),
            tokens_per_s: Some("5".into()),
            ..Default::default()
        })
        .contains("one of step_ms or tokens_per_s"));
        assert_eq!(
            resolve(ServingRequest { step_ms: Some("5.5".into()), ..Default::default() }).unwrap().measured,
            Some(Measured::StepTime(0.0055))
        );
    }
}
