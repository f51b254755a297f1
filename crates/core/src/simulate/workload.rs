//! The requests a simulation serves: when they arrive and how long they are.

use super::prefix::PromptPrefix;
use super::rng::Pcg32;
use crate::error::integer_in;
use crate::error::{compact_f64, Error, Result};
use serde::Serialize;
use std::sync::Arc;

/// Smallest coefficient of variation of gamma gaps: shape `k = 1/cv²` up to
/// [`MAX_GAMMA_SHAPE`]. The sampler (Marsaglia and Tsang, [`Pcg32::gamma`]) accepts a draw when
/// `ln u < x²/2 + d − d·v + d·ln v` with `d = k − 1/3`: three terms of size `d` that cancel to
/// about `x²/2`, each rounded by `d·2⁻⁵³`. Up to `k = 10⁸` the test is exact to `4·10⁻⁸`; past
/// about `10¹⁶` it is rounding noise, and once `1/cv²` overflows (`cv < 10⁻¹⁵⁴`) it is `NaN` and
/// never accepts — the sampler would loop forever.
pub const MIN_CV: f64 = crate::limits::CV.min;
/// Largest coefficient of variation of gamma gaps: shape down to [`MIN_GAMMA_SHAPE`], where the
/// gap's scale `1/(rate·k)` stays a finite number at every rate from
/// [`super::MIN_RATE_PER_S`] (the boost `U^{1/k}` for `k < 1` is then at most `U^{10⁴}`).
pub const MAX_CV: f64 = crate::limits::CV.max;
/// Largest gamma shape the sampler takes, `1/MIN_CV²`.
pub const MAX_GAMMA_SHAPE: f64 = 1e8;
/// Smallest gamma shape the sampler takes, `1/MAX_CV²`.
pub const MIN_GAMMA_SHAPE: f64 = 1e-4;

/// An arrival rate for `field` in requests per second, in [`crate::limits::RATE`] (from
/// [`super::MIN_RATE_PER_S`] to [`super::MAX_RATE_PER_S`]; `NaN` and infinities are refused).
/// The one check of every rate input (`simulate`, the plan under load, the explorer).
pub fn check_rate(field: &str, rate_per_s: f64) -> Result<f64> {
    crate::limits::RATE.check(field, rate_per_s)
}

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceRequest {
    /// Arrival time, seconds from the start.
    pub arrival_s: f64,
    /// Prompt tokens (≥ 1).
    pub prompt_tokens: u64,
    /// Output tokens (≥ 1).
    pub output_tokens: u64,
    /// The shared token sequences its prompt starts with, for the prefix cache
    /// ([`super::SimConfig::prefix_cache`]); none: nothing shared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PromptPrefix>,
}

/// How requests arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// A Poisson process: exponential gaps with mean `1/rate`.
    Poisson {
        /// Requests per second (> 0).
        rate_per_s: f64,
    },
    /// A renewal process with gamma gaps of mean `1/rate` and coefficient of variation `cv`
    /// (shape `1/cv²`): `cv = 1` is Poisson, `cv > 1` bursty, `cv < 1` smoother.
    Gamma {
        /// Requests per second (> 0).
        rate_per_s: f64,
        /// Coefficient of variation of the gaps (> 0).
        cv: f64,
    },
    /// A closed loop: `concurrency` requests at time 0 and a new one whenever one finishes.
    Closed {
        /// Requests in the system at every moment (≥ 1).
        concurrency: u64,
    },
    /// Given arrival times and lengths (sorted by time); the length distributions are not used.
    Trace(Arc<[TraceRequest]>),
}

impl Arrivals {
    /// The offered rate in requests per second (open loops only).
    pub fn rate_per_s(&self) -> Option<f64> {
        match self {
            Arrivals::Poisson { rate_per_s } | Arrivals::Gamma { rate_per_s, .. } => Some(*rate_per_s),
            Arrivals::Closed { .. } | Arrivals::Trace(_) => None,
        }
    }

    /// Check the parameters (errors name `rate`, `cv`, `concurrency` or `trace`).
    pub fn validate(&self) -> Result<()> {
        match self {
            Arrivals::Poisson { rate_per_s } => check_rate("rate", *rate_per_s).map(|_| ()),
            Arrivals::Gamma { rate_per_s, cv } => {
                check_rate("rate", *rate_per_s)?;
                crate::limits::CV.check("cv", *cv).map(|_| ())
            }
            Arrivals::Closed { concurrency } => {
                if (1..=super::MAX_REQUESTS).contains(concurrency) {
                    Ok(())
                } else {
                    Err(Error::invalid("concurrency", concurrency, integer_in(1, super::MAX_REQUESTS)))
                }
            }
            Arrivals::Trace(t) => {
                if t.is_empty() {
                    return Err(Error::invalid("trace", "an empty trace", "at least one request"));
                }
                if t.len() as u64 > super::MAX_REQUESTS {
                    return Err(Error::invalid("trace", t.len(), format!("at most {} requests", super::MAX_REQUESTS)));
                }
                let mut last = 0.0;
                for (i, r) in t.iter().enumerate() {
                    let row = i + 1;
                    if !r.arrival_s.is_finite() || r.arrival_s < 0.0 {
                        return Err(Error::invalid(
                            "trace",
                            format!("arrival {} s in request {row}", compact_f64(r.arrival_s)),
                            "a time in seconds ≥ 0",
                        ));
                    }
                    if r.arrival_s < last {
                        return Err(Error::invalid(
                            "trace",
                            format!(
                                "request {row} arrives at {} s, before request {} at {} s",
                                compact_f64(r.arrival_s),
                                row - 1,
                                compact_f64(last)
                            ),
                            "arrival times sorted ascending",
                        ));
                    }
                    if let Some(p) = &r.prefix {
                        let root = p.root.map_or(0, |(_, t)| t);
                        if p.tokens > r.prompt_tokens || root > p.tokens {
                            return Err(Error::invalid(
                                "trace",
                                format!(
                                    "request {row} has a prefix of {} tokens (root {root}) in a prompt of {}",
                                    p.tokens, r.prompt_tokens
                                ),
                                "root tokens ≤ prefix tokens ≤ prompt tokens",
                            ));
                        }
                    }
                    if r.prompt_tokens == 0 || r.output_tokens == 0 {
                        return Err(Error::invalid(
                            "trace",
                            format!(
                                "request {row} has {} prompt and {} output tokens",
                                r.prompt_tokens, r.output_tokens
                            ),
                            "at least 1 of each",
                        ));
                    }
                    last = r.arrival_s;
                }
                Ok(())
            }
        }
    }
}

/// A distribution of token counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Lengths {
    /// Always this many (≥ 1).
    Fixed(u64),
    /// Uniform integers in `min..=max`.
    Uniform {
        /// Smallest (≥ 1).
        min: u64,
        /// Largest (≥ min).
        max: u64,
    },
    /// `round(median · e^{σ·Z})` with `Z` standard normal, at least 1.
    LogNormal {
        /// Median tokens (≥ 1).
        median: f64,
        /// Standard deviation of the logarithm (≥ 0).
        sigma: f64,
    },
    /// A histogram: each length drawn with probability proportional to its weight.
    Histogram(Arc<[(u64, f64)]>),
}

impl Lengths {
    /// Check the parameters; `field` names the input.
    pub fn validate(&self, field: &str) -> Result<()> {
        let max = super::MAX_REQUEST_TOKENS;
        let tokens = |v: u64| {
            if (1..=max).contains(&v) {
                Ok(())
            } else {
                Err(Error::invalid(field, v, format!("a token count {}", crate::error::range_words(1, max))))
            }
        };
        match self {
            Lengths::Fixed(v) => tokens(*v),
            Lengths::Uniform { min, max } => {
                tokens(*min)?;
                tokens(*max)?;
                if min > max {
                    return Err(Error::invalid(field, format!("uniform:{min}..{max}"), "a range with min ≤ max"));
                }
                Ok(())
            }
            Lengths::LogNormal { median, sigma } => {
                if !(median.is_finite() && *median >= 1.0 && *median <= max as f64) {
                    return Err(Error::invalid(
                        field,
                        median,
                        format!("a lognormal median {} tokens", crate::error::range_words(1, max)),
                    ));
                }
                if !(sigma.is_finite() && (0.0..=4.0).contains(sigma)) {
                    return Err(Error::invalid(field, sigma, "a lognormal sigma in [0, 4]"));
                }
                Ok(())
            }
            Lengths::Histogram(h) => {
                if h.is_empty() {
                    return Err(Error::invalid(field, "an empty histogram", "at least one row of tokens,weight"));
                }
                for (t, w) in h.iter() {
                    tokens(*t)?;
                    if !(w.is_finite() && *w >= 0.0) {
                        return Err(Error::invalid(field, w, "a weight ≥ 0"));
                    }
                }
                if h.iter().map(|(_, w)| w).sum::<f64>() <= 0.0 {
                    return Err(Error::invalid(field, "weights summing to 0", "at least one weight above 0"));
                }
                Ok(())
            }
        }
    }

    /// The mean length, tokens: `(min + max)/2` of a uniform, `median·e^{σ²/2}` of a lognormal,
    /// the weighted mean of a histogram.
    pub fn mean_tokens(&self) -> f64 {
        match self {
            Lengths::Fixed(v) => *v as f64,
            Lengths::Uniform { min, max } => (*min + *max) as f64 / 2.0,
            Lengths::LogNormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
            Lengths::Histogram(h) => {
                let w: f64 = h.iter().map(|(_, w)| w).sum();
                h.iter().map(|(t, w)| *t as f64 * w).sum::<f64>() / w
            }
        }
    }

    /// The largest length it can draw (a lognormal: none).
    pub fn max_tokens(&self) -> Option<u64> {
        match self {
            Lengths::Fixed(v) => Some(*v),
            Lengths::Uniform { max, .. } => Some(*max),
            Lengths::LogNormal { .. } => None,
            Lengths::Histogram(h) => h.iter().filter(|(_, w)| *w > 0.0).map(|(t, _)| *t).max(),
        }
    }

    /// Draw one length.
    pub fn draw(&self, rng: &mut Pcg32) -> u64 {
        match self {
            Lengths::Fixed(v) => *v,
            Lengths::Uniform { min, max } => rng.range(*min, *max),
            Lengths::LogNormal { median, sigma } => {
                let x = median * (sigma * rng.normal()).exp();
                x.round().clamp(1.0, u64::MAX as f64) as u64
            }
            Lengths::Histogram(h) => {
                let total: f64 = h.iter().map(|(_, w)| w).sum();
                let mut u = rng.uniform() * total;
                for (t, w) in h.iter() {
                    if u < *w {
                        return *t;
                    }
                    u -= w;
                }
                h.iter().rev().find(|(_, w)| *w > 0.0).map_or(1, |(t, _)| *t)
            }
        }
    }
}

/// The source of requests: arrival times and lengths, drawn lazily (memory does not grow with
/// the number of requests).
#[derive(Debug, Clone)]
pub(super) struct Source {
    arrivals: Arrivals,
    prompt: Lengths,
    output: Lengths,
    requests: u64,
    issued: u64,
    /// The last open-loop arrival, on the engine's clock.
    clock_s: f64,
    /// Where the engine's clock has its zero, seconds (trace times are absolute).
    origin_s: f64,
    gaps: Pcg32,
    lengths: Pcg32,
}

/// A request as it arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Arrival {
    /// On the engine's clock.
    pub arrival_s: f64,
    /// From the start of the run (a trace's own time).
    pub absolute_s: f64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub prefix: Option<PromptPrefix>,
}

impl Source {
    /// A source of `requests` requests ([`super::SimConfig::offered_requests`]).
    pub(super) fn new(arrivals: Arrivals, prompt: Lengths, output: Lengths, requests: u64, seed: u64) -> Source {
        Source {
            arrivals,
            prompt,
            output,
            requests,
            issued: 0,
            clock_s: 0.0,
            origin_s: 0.0,
            gaps: Pcg32::new(seed, 1),
            lengths: Pcg32::new(seed, 2),
        }
    }

    /// Requests this source issues in all.
    pub(super) fn total(&self) -> u64 {
        self.requests
    }

    /// Requests issued so far.
    pub(super) fn issued(&self) -> u64 {
        self.issued
    }

    /// The engine's clock moved its zero to `origin_s` (absolute), `shift_s` after the old one.
    pub(super) fn rebase(&mut self, origin_s: f64, shift_s: f64) {
        self.origin_s = origin_s;
        self.clock_s -= shift_s;
    }

    /// The next open-loop arrival on the engine's clock (none for a closed loop, or when all
    /// have been issued).
    pub(super) fn next_open(&mut self) -> Option<Arrival> {
        if self.issued >= self.requests {
            return None;
        }
        let gap = match &self.arrivals {
            Arrivals::Closed { .. } => return None,
            Arrivals::Trace(t) => {
                let r = t[self.issued as usize];
                self.issued += 1;
                return Some(Arrival {
                    arrival_s: r.arrival_s - self.origin_s,
                    absolute_s: r.arrival_s,
                    prompt_tokens: r.prompt_tokens,
                    output_tokens: r.output_tokens,
                    prefix: r.prefix,
                });
            }
            // The first request arrives at time 0; the gaps follow.
            _ if self.issued == 0 => 0.0,
            Arrivals::Poisson { rate_per_s } => self.gaps.exponential(*rate_per_s),
            Arrivals::Gamma { rate_per_s, cv } => {
                let shape = 1.0 / (cv * cv);
                self.gaps.gamma(shape, 1.0 / (rate_per_s * shape))
            }
        };
        self.clock_s += gap;
        Some(self.draw(self.clock_s))
    }

    /// A closed-loop arrival at `at_s` (none when all have been issued).
    pub(super) fn next_closed(&mut self, at_s: f64) -> Option<Arrival> {
        (self.issued < self.requests).then(|| self.draw(at_s))
    }

    fn draw(&mut self, at_s: f64) -> Arrival {
        self.issued += 1;
        let prompt_tokens = self.prompt.draw(&mut self.lengths);
        let output_tokens = self.output.draw(&mut self.lengths);
        Arrival { arrival_s: at_s, absolute_s: self.origin_s + at_s, prompt_tokens, output_tokens, prefix: None }
    }
}

/// Rows of a small CSV: comma-separated numbers, `#` comments and blank lines skipped, a first
/// line that does not start with a number taken as a header. `row` turns a line's fields (and
/// its 1-based line number) into a value.
fn csv_rows<T>(
    field: &str,
    text: &str,
    columns: usize,
    mut row: impl FnMut(&[&str], usize) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let header = first && cells[0].parse::<f64>().is_err();
        first = false;
        if header {
            continue;
        }
        if cells.len() != columns {
            let accepted = if field == "trace" {
                format!(
                    "{TRACE_COLUMNS} comma-separated numbers (arrival_s,prompt_tokens,output_tokens), or {PREFIXED_TRACE_COLUMNS} with prefix_id,prefix_tokens for the prefix cache, as many on every row ({columns} on the first)"
                )
            } else {
                format!("{columns} comma-separated numbers")
            };
            return Err(Error::invalid(field, format!("line {}: {} fields", i + 1, cells.len()), accepted));
        }
        if out.len() as u64 >= super::MAX_REQUESTS {
            return Err(Error::invalid(field, "too many rows", format!("at most {}", super::MAX_REQUESTS)));
        }
        out.push(row(&cells, i + 1)?);
    }
    Ok(out)
}

fn number<T: std::str::FromStr>(field: &str, cell: &str, line: usize, what: &str) -> Result<T> {
    cell.parse::<T>().map_err(|_| Error::invalid(field, format!("line {line}: {cell:?}"), what.to_string()))
}

/// Parse a trace CSV: `arrival_s,prompt_tokens,output_tokens` per line, or with the two columns
/// of the prefix cache, `prefix_id,prefix_tokens` ([`parse_prefixed_trace_csv`]); the first
/// row that is not a header decides, and every row has as many. An optional header first.
/// Order and values are checked by [`Arrivals::validate`].
pub fn parse_trace_csv(text: &str) -> Result<Vec<TraceRequest>> {
    let first_row = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .find(|l| l.split(',').next().is_some_and(|c| c.trim().parse::<f64>().is_ok()));
    let prefixed = first_row.is_some_and(|l| l.split(',').count() == PREFIXED_TRACE_COLUMNS);
    trace_csv(text, prefixed)
}

/// Columns of a trace row without and with a prompt prefix.
const TRACE_COLUMNS: usize = 3;
const PREFIXED_TRACE_COLUMNS: usize = 5;

/// Parse a trace CSV for the prefix cache: `arrival_s,prompt_tokens,output_tokens,prefix_id,
/// prefix_tokens` per line (the prompt's first `prefix_tokens` tokens are the sequence
/// `prefix_id`, shared with the other rows naming it: [`PromptPrefix`]), an optional header
/// first.
pub fn parse_prefixed_trace_csv(text: &str) -> Result<Vec<TraceRequest>> {
    trace_csv(text, true)
}

fn trace_csv(text: &str, prefixed: bool) -> Result<Vec<TraceRequest>> {
    let columns = if prefixed { PREFIXED_TRACE_COLUMNS } else { TRACE_COLUMNS };
    csv_rows("trace", text, columns, |c, line| {
        let prefix = if prefixed {
            Some(PromptPrefix {
                id: number("trace", c[3], line, "a whole-number prefix id")?,
                tokens: number("trace", c[4], line, "a whole number of prefix tokens")?,
                root: None,
            })
        } else {
            None
        };
        Ok(TraceRequest {
            arrival_s: number("trace", c[0], line, "an arrival time in seconds")?,
            prompt_tokens: number("trace", c[1], line, "a whole number of prompt tokens")?,
            output_tokens: number("trace", c[2], line, "a whole number of output tokens")?,
            prefix,
        })
    })
}

/// Multi-turn conversations behind one system prompt, as a trace for the prefix cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversations {
    /// Conversations (≥ 1); they start as a Poisson process.
    pub conversations: u64,
    /// Conversation starts per second.
    pub rate_per_s: f64,
    /// Turns per conversation (≥ 1).
    pub turns: u64,
    /// Seconds from one turn's arrival to the next's (the user reading and typing).
    pub think_s: f64,
    /// Tokens of the system prompt every conversation starts with.
    pub system_tokens: u64,
    /// Tokens of each user message.
    pub user_tokens: u64,
    /// Tokens of each answer.
    pub output_tokens: u64,
}

impl Conversations {
    /// The trace, sorted by arrival: conversation `c` (from 0) starts at a Poisson time `T_c`
    /// drawn from `seed`, and its turn `t` (from 0) arrives at `T_c + t · think_s` with the
    /// prompt `S + t·(U + O) + U` (system prompt, earlier turns, new message), whose first
    /// `S + t·(U + O)` tokens are the conversation's history (prefix id `c + 1`) and whose first
    /// `S` are the system prompt (root id 1). Errors name `conversations`, `turns` or the
    /// lengths.
    pub fn trace(&self, seed: u64) -> Result<Vec<TraceRequest>> {
        let rows = self.conversations.saturating_mul(self.turns);
        if self.conversations == 0 || self.turns == 0 || rows > super::MAX_REQUESTS {
            return Err(Error::invalid(
                "conversations",
                format!("{} × {} turns", self.conversations, self.turns),
                format!("at least 1 conversation of at least 1 turn, at most {} requests", super::MAX_REQUESTS),
            ));
        }
        check_rate("rate", self.rate_per_s)?;
        if !(self.think_s.is_finite() && self.think_s >= 0.0) {
            return Err(Error::invalid("think_s", compact_f64(self.think_s), "a time in seconds ≥ 0"));
        }
        let (s, u, o) = (self.system_tokens, self.user_tokens, self.output_tokens);
        let longest = s as f64 + self.turns as f64 * (u + o) as f64;
        if u == 0 || o == 0 || longest > super::MAX_REQUEST_TOKENS as f64 {
            return Err(Error::invalid(
                "user_tokens",
                format!("{s} + {} × ({u} + {o}) tokens", self.turns),
                format!("user and output tokens ≥ 1, a last turn of at most {} tokens", super::MAX_REQUEST_TOKENS),
            ));
        }
        let mut gaps = Pcg32::new(seed, 1);
        let mut start = 0.0;
        let mut out = Vec::with_capacity(rows as usize);
        for c in 0..self.conversations {
            if c > 0 {
                start += gaps.exponential(self.rate_per_s);
            }
            for t in 0..self.turns {
                let history = s + t * (u + o);
                out.push(TraceRequest {
                    arrival_s: start + t as f64 * self.think_s,
                    prompt_tokens: history + u,
                    output_tokens: o,
                    prefix: Some(PromptPrefix { id: c + 1, tokens: history, root: Some((1, s)) }),
                });
            }
        }
        out.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
        Ok(out)
    }
}

/// The rows of `trace` a run serves when the `requests` input is given with it: the first
/// `requests` rows (all of them when it is absent). Asking for more rows than the trace holds is
/// refused, naming `requests`, rather than silently serving fewer.
pub fn trace_rows(trace: Arc<[TraceRequest]>, requests: Option<u64>) -> Result<Arc<[TraceRequest]>> {
    match requests {
        None => Ok(trace),
        Some(n) if n == trace.len() as u64 => Ok(trace),
        Some(n) if (1..trace.len() as u64).contains(&n) => Ok(trace[..n as usize].into()),
        Some(n) => Err(Error::invalid(
            "requests",
            n,
            format!("at most the trace's {} requests (or leave it out to serve them all)", trace.len()),
        )),
    }
}

impl Lengths {
    /// Parse a length for `field`: `N` (fixed), `uniform:MIN..MAX`, or `lognormal:MEDIAN:SIGMA`
    /// (a histogram comes from [`Lengths::parse_histogram`]). Validated.
    pub fn parse(field: &str, text: &str) -> Result<Lengths> {
        let t = text.trim();
        let syntax = "a token count, uniform:MIN..MAX, lognormal:MEDIAN:SIGMA or hist:FILE.csv";
        let bad = || Error::invalid(field, format!("{t:?}"), syntax);
        let l = if let Some(r) = t.strip_prefix("uniform:") {
            let (a, b) = r.split_once("..").ok_or_else(bad)?;
            Lengths::Uniform { min: a.trim().parse().map_err(|_| bad())?, max: b.trim().parse().map_err(|_| bad())? }
        } else if let Some(r) = t.strip_prefix("lognormal:") {
            let (a, b) = r.split_once(':').ok_or_else(bad)?;
            Lengths::LogNormal {
                median: a.trim().parse().map_err(|_| bad())?,
                sigma: b.trim().parse().map_err(|_| bad())?,
            }
        } else {
            Lengths::Fixed(t.parse().map_err(|_| bad())?)
        };
        l.validate(field)?;
        Ok(l)
    }

    /// Parse a histogram CSV for `field`: `tokens,weight` per line (an optional header first).
    pub fn parse_histogram(field: &str, text: &str) -> Result<Lengths> {
        let rows = csv_rows(field, text, 2, |c, line| {
            Ok((number(field, c[0], line, "a whole number of tokens")?, number(field, c[1], line, "a weight ≥ 0")?))
        })?;
        let l = Lengths::Histogram(rows.into());
        l.validate(field)?;
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_traces_parse() {
        assert_eq!(Lengths::parse("prompt", "512").unwrap(), Lengths::Fixed(512));
        assert_eq!(Lengths::parse("prompt", "uniform:10..20").unwrap(), Lengths::Uniform { min: 10, max: 20 });
        assert_eq!(
            Lengths::parse("prompt", "lognormal:800:0.5").unwrap(),
            Lengths::LogNormal { median: 800.0, sigma: 0.5 }
        );
        assert!(Lengths::parse("prompt", "uniform:20..10").is_err());
        assert!(Lengths::parse("prompt", "0").is_err());
        assert!(Lengths::parse("output", "zipf:3").unwrap_err().to_string().contains("lognormal:MEDIAN:SIGMA"));
        let h = Lengths::parse_histogram("prompt", "tokens,weight\n100,1\n# comment\n200,3\n").unwrap();
        assert_eq!(h.max_tokens(), Some(200));
        let mut r = Pcg32::new(1, 1);
        let n200 = (0..4000).filter(|_| h.draw(&mut r) == 200).count();
        assert!((2800..3200).contains(&n200), "{n200}");
        let t = parse_trace_csv("arrival_s,prompt_tokens,output_tokens\n0,10,5\n0.5,20,6\n").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1], TraceRequest { arrival_s: 0.5, prompt_tokens: 20, output_tokens: 6, prefix: None });
        let t = parse_prefixed_trace_csv("arrival_s,prompt,output,prefix_id,prefix_tokens\n0,100,5,7,64\n").unwrap();
        assert_eq!(t[0].prefix, Some(PromptPrefix { id: 7, tokens: 64, root: None }));
        let e = parse_prefixed_trace_csv("0,100,5,x,64\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("prefix id"), "{e}");
        let e = parse_prefixed_trace_csv("0,100,5\n").unwrap_err().to_string();
        assert!(e.contains("line 1: 3 fields") && e.contains("or 5 with prefix_id"), "{e}");
        // A 5-column trace names prefixes; 4 columns is neither.
        assert_eq!(
            parse_trace_csv("0,100,5,7,64\n").unwrap()[0].prefix,
            Some(PromptPrefix { id: 7, tokens: 64, root: None })
        );
        assert!(parse_trace_csv("0,100,5,7\n").unwrap_err().to_string().contains("or 5 with prefix_id"));
        assert!(parse_trace_csv("0,100,5\n0,100,5,7,64\n").unwrap_err().to_string().contains("line 2: 5 fields"));
        let e = parse_trace_csv("0,10\n").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        assert!(parse_trace_csv("0,x,5\n").unwrap_err().to_string().contains("prompt tokens"));
    }
}
