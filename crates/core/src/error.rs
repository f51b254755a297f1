//! Typed errors of the core. Every variant renders as one line that names the offending field or
//! input and, where there is a closed set, the accepted values.

use thiserror::Error;

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Longest echo of user input in a message, characters; longer input is cut to this many and
/// followed by `…(N bytes)` ([`echo`]).
pub const MAX_ECHO_CHARS: usize = 80;

/// Text with every control character (C0, DEL, C1) and every bidirectional-override character
/// written as its escape (`\u{1b}`), so that echoed input cannot drive the terminal (colours, a
/// cleared screen, a rewritten line) or reorder what a reader sees; everything else is unchanged.
/// Idempotent. The one escape of every message that quotes input: [`echo`] applies it, and the
/// front ends apply it to the whole line they print.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// User input as it appears in a message: control characters escaped ([`escape_controls`]), at
/// most [`MAX_ECHO_CHARS`] characters, then `…(N bytes)` with the input's full length; a long
/// plain number (`1e308` printed as 309 digits) is shown compactly ([`compact_f64`]) instead.
/// Every variant of [`enum@Error`] echoes input through this.
pub fn echo(s: &str) -> String {
    let bytes = s.len();
    let escaped = escape_controls(s);
    let s: &str = &escaped;
    // A number, possibly quoted as the parsers quote what they could not read.
    let (quote, bare) = match s.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(t) => ("\"", t),
        None => ("", s),
    };
    if bare.len() > 24 && bare.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) {
        if let Some(v) = bare.parse::<f64>().ok().filter(|v| v.is_finite()) {
            return format!("{quote}{}{quote}", compact_f64(v));
        }
    }
    match s.char_indices().nth(MAX_ECHO_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…({bytes} bytes)", &s[..cut]),
    }
}

/// A count with thousands separators (`8,030,261,248`): the one way counts are written, in
/// messages and notes here and in every table (`llm_ledger_report::human::count`).
pub fn grouped(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An inclusive range of whole numbers in words, with thousands separators: `from 1 to 4,096`
/// (messages and help never show a programming language's range syntax).
pub fn range_words(min: impl std::fmt::Display, max: impl std::fmt::Display) -> String {
    format!("from {} to {}", grouped_text(&min.to_string()), grouped_text(&max.to_string()))
}

/// What an integer input accepts: `an integer from 1 to 4,096` ([`range_words`]).
pub fn integer_in(min: impl std::fmt::Display, max: impl std::fmt::Display) -> String {
    format!("an integer {}", range_words(min, max))
}

/// [`grouped`] for a number's text: the digits of a whole number grouped, anything else as it is.
fn grouped_text(s: &str) -> String {
    match s.parse::<u64>() {
        Ok(v) if v.to_string() == s => grouped(v),
        _ => s.to_string(),
    }
}

/// A number for a message, compactly: plain decimal between 10⁻³ and 10⁶ (`0.01`, `2048`,
/// `3.35`), otherwise scientific with the shortest exact mantissa (`1e308`, `5e-324`, `3.6e6`);
/// `NaN` and `inf` as such. The one formatter for floats in messages.
pub fn compact_f64(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() || a == 0.0 || (1e-3..1e6).contains(&a) {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// A message that names inputs: plain text and input names ([`Part::Input`], each an input's
/// canonical name, `arrivals`, `max_steps`), so that every front end spells the inputs it names its
/// own way ([`Error::map_field`]: the CLI's `--arrivals`, the explorer's `?arrivals=`, the Python
/// keyword `arrivals=`) and no front end rewrites another's message text. Its [`std::fmt::Display`]
/// writes each input by its canonical name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Text(Vec<Part>);

/// A piece of [`Text`].
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text as written.
    Plain(String),
    /// An input, by its canonical name, spelled by the front end.
    Input(String),
}

impl Text {
    /// Text from a template whose `{name}` marks the input `name` (`"it applies only to
    /// {arrivals} gamma"`); everything else is plain. Templates are the code's own strings: user
    /// input goes in through [`Text::plain`].
    pub fn template(template: &str) -> Text {
        let mut text = Text::default();
        let mut rest = template;
        while let Some((before, after)) = rest.split_once('{') {
            let Some((name, tail)) = after.split_once('}') else { break };
            text = text.plain(before).input(name);
            rest = tail;
        }
        text.plain(rest)
    }

    /// This text followed by `s`, as written.
    #[must_use]
    pub fn plain(mut self, s: &str) -> Text {
        if !s.is_empty() {
            match self.0.last_mut() {
                Some(Part::Plain(p)) => p.push_str(s),
                _ => self.0.push(Part::Plain(s.to_string())),
            }
        }
        self
    }

    /// This text followed by the input `name`.
    #[must_use]
    pub fn input(mut self, name: &str) -> Text {
        self.0.push(Part::Input(name.to_string()));
        self
    }

    /// This text followed by `other`.
    #[must_use]
    pub fn then(mut self, other: Text) -> Text {
        for part in other.0 {
            self = match part {
                Part::Plain(p) => self.plain(&p),
                Part::Input(i) => self.input(&i),
            };
        }
        self
    }

    /// The inputs this text names, in order.
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|p| match p {
            Part::Input(i) => Some(i.as_str()),
            Part::Plain(_) => None,
        })
    }

    /// The text with every input spelled by `name_of`.
    pub fn spell(&self, name_of: &dyn Fn(&str) -> String) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Plain(s) => s.clone(),
                Part::Input(i) => name_of(i),
            })
            .collect()
    }

    /// Every input renamed by `name_of` (a front end's spelling).
    #[must_use]
    pub fn map_inputs(self, name_of: &dyn Fn(&str) -> String) -> Text {
        Text(
            self.0
                .into_iter()
                .map(|p| match p {
                    Part::Input(i) => Part::Input(name_of(&i)),
                    plain => plain,
                })
                .collect(),
        )
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.spell(&str::to_string))
    }
}

/// Everything that can go wrong when turning user input into a ledger.
///
/// Each variant carries its data as fields, never only inside the message: the input field it is
/// about ([`Error::field`]), the offending value and, for a closed set, the accepted values
/// ([`Error::accepted`]). Front ends name a field their own way ([`Error::map_field`]: the CLI's
/// `--tpot-ms` for `tpot_ms`) and the web marks the form control [`Error::field`] names.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A field holds a value of the wrong type or out of range.
    #[error("invalid `{}`: {} ({})", echo(field), echo(value), escape_controls(expected))]
    InvalidField {
        /// Field name as the user wrote it (config key, flag or query parameter).
        field: String,
        /// The offending value, rendered for the message.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A field that the model family needs is absent.
    #[error("missing required field `{}` for {}", echo(field), escape_controls(context))]
    MissingField {
        /// Field name.
        field: String,
        /// Where it was needed (e.g. "model_type llama").
        context: String,
    },
    /// A name that is not in a closed set (GPU, preset, precision, family …). The message offers
    /// the closest accepted names ([`suggestions`]) and lists the accepted ones when they are
    /// few ([`LISTED_NAMES`]); a longer list is counted, not printed (`accepted` holds it).
    #[error("unknown {what}{} `{}`; {}", for_field(field, *field_in_message), echo(name), escape_controls(&unknown_tail(name, accepted)))]
    UnknownName {
        /// What kind of name it is ("GPU", "model", "precision" …).
        what: String,
        /// The name given.
        name: String,
        /// The accepted values, in the order the message lists them.
        accepted: Vec<String>,
        /// The input field the name was given for (`gpu`, `kv`), when known.
        field: Option<String>,
        /// Whether the message names the field (`unknown precision for `kv``) or only the kind
        /// (`unknown GPU`, whose field `gpu` the kind makes plain).
        field_in_message: bool,
    },
    /// The input text is not valid JSON/TOML.
    #[error("malformed {what}: {}", echo_message(message))]
    Malformed {
        /// What was being parsed ("config.json", "GPU file" …).
        what: String,
        /// The parser's message, with line and column where known.
        message: String,
    },
    /// The input is structurally fine but describes something this tool does not model.
    #[error("unsupported {}: {}", echo(what), escape_controls(reason))]
    Unsupported {
        /// What is unsupported.
        what: String,
        /// Why, and what is supported instead.
        reason: String,
    },
    /// An input refused with a message that names it and other inputs ([`Text`]), each spelled
    /// by the front end ([`Error::map_field`]): `invalid `cv`: given (it applies only to arrivals
    /// gamma)`, the CLI's `invalid `--cv`: given (it applies only to --arrivals gamma)`.
    #[error("{}", escape_controls(&message.to_string()))]
    Input {
        /// The input it is about (a canonical name, or as the front end spelled it).
        field: String,
        /// The whole message.
        message: Text,
    },
    /// A plan ranked no layout: the quantities of why ([`crate::plan_refusal::PlanRefused`]); a front end
    /// words it in full (`llm_ledger_report::plan::refusal_message`). This message is the short
    /// form, about [`crate::plan_refusal::PlanRefused::field`].
    #[error("invalid `{}`: {} ({})", .0.field(), plan_value(.0), plan_short(.0))]
    NoPlan(Box<crate::plan_refusal::PlanRefused>),
    /// A plan under load found no deployment holding both p99 SLAs: the closest one's p99s
    /// ([`crate::plan_refusal::ServingRefused`]); a front end words it in full
    /// (`llm_ledger_report::plan_serving::refusal_message`).
    #[error("invalid `{}`: no deployment holds p99 TTFT ≤ {:.3} ms and p99 TPOT ≤ {:.3} ms at {} requests/s", .0.field(), .0.ttft_bound_s * 1e3, .0.tpot_bound_s * 1e3, compact_f64(.0.rate_per_s))]
    NoServingPlan(Box<crate::plan_refusal::ServingRefused>),
    /// A long computation stopped before its end because another thread asked it to (Ctrl-C, a
    /// request's deadline; [`crate::simulate::Budget`]): there is no result, and nothing is wrong
    /// with the input.
    #[error("cancelled before the end")]
    Cancelled,
    /// Simulations that need, or took, more engine steps than their budget allows
    /// ([`crate::simulate::Budget`]).
    #[error("invalid `{}`: {} engine steps ({need}; raise it, or ask for fewer requests or shorter outputs)", echo(field), compact_f64(*max_steps as f64))]
    OverBudget {
        /// The input that sets the budget (`max_steps`).
        field: String,
        /// The budget, engine steps over every run of one command.
        max_steps: u64,
        /// What needs more: the estimate before the start, or the steps taken.
        need: String,
    },
    /// A report holds a NaN or an infinity: a bug (every input is range-checked), caught before
    /// anything is printed.
    #[error("internal error: non-finite value in {path}; please report this with the command line")]
    NonFinite {
        /// Where in the report's serde form (`rows[3].time_s`).
        path: String,
    },
}

/// The refused input's value: the TPOT bound in ms, or the GPU budget.
fn plan_value(p: &crate::plan_refusal::PlanRefused) -> String {
    match p.refusal {
        crate::plan_refusal::PlanRefusal::TooSlow { .. } => format!("{:.3} ms", p.tpot_bound_s * 1e3),
        crate::plan_refusal::PlanRefusal::NoGivenBatch { given, .. } => given.to_string(),
        _ => p.max_gpus.to_string(),
    }
}

/// The short form of a plan refusal: what no layout within the budget does.
fn plan_short(p: &crate::plan_refusal::PlanRefused) -> String {
    use crate::plan_refusal::PlanRefusal::*;
    let gpus = if p.max_gpus == 1 { "1 GPU".to_string() } else { format!("{} GPUs", p.max_gpus) };
    match &p.refusal {
        TooSlow { fastest, .. } => {
            format!("no layout within {gpus} meets it; the fastest takes {:.3} ms", fastest.tpot_s * 1e3)
        }
        NoGivenBatch { max_batch, .. } => {
            format!("no layout within {gpus} holds it; the largest batch any holds is {max_batch}")
        }
        NoLayout => format!("{} cannot be split over at most {gpus}", p.model),
        DoesNotFit { .. } => format!("no layout of at most {gpus} fits {} on {}", p.model, p.gpu),
    }
}

/// Most accepted names a message lists; a longer list is counted and only the closest names are
/// offered.
pub const LISTED_NAMES: usize = 20;

/// Most names a "did you mean" offers.
const MAX_SUGGESTIONS: usize = 3;

/// Least similarity (0 to 1) of a name worth offering.
const MIN_SIMILARITY: f64 = 0.5;

/// How alike a mistyped `given` is to an accepted `name`, 0 (nothing alike) to 1 (equal but for
/// case and separators): the normalised Damerau–Levenshtein similarity of the two in lower case
/// with `_`, `.` and `-` as one separator, and at least 0.9 when one holds the other (`h100` in
/// `h100-sxm`, `llama-3-8b-instruct` around `llama-3-8b`).
pub fn similarity(given: &str, name: &str) -> f64 {
    let norm = |s: &str| s.trim().to_lowercase().replace(['_', '.'], "-");
    let (g, n) = (norm(given), norm(name));
    if g.is_empty() || n.is_empty() {
        return 0.0;
    }
    let edit = strsim::normalized_damerau_levenshtein(&g, &n);
    let held = n.contains(&g) || g.contains(&n);
    if held && g.len().min(n.len()) >= 2 {
        edit.max(0.9)
    } else {
        edit
    }
}

/// The accepted names closest to `given`, most alike first (the first of equals in `accepted`
/// order): at most `MAX_SUGGESTIONS`, each at least `MIN_SIMILARITY` alike ([`similarity`]),
/// and only the best when one is far better than the rest. A prefix every accepted name shares
/// (`layer.0.mlp.` of a zoom level's children) is left out of the comparison when `given` has it
/// too. The one "did you mean" of every closed list of names (presets, GPUs, engines, precisions,
/// flags).
pub fn suggestions<'a, S: AsRef<str>>(given: &str, accepted: &'a [S]) -> Vec<&'a str> {
    let shared = match accepted {
        [first, rest @ ..] if !rest.is_empty() => rest.iter().fold(first.as_ref(), |p, a| {
            let same = p.char_indices().zip(a.as_ref().chars()).take_while(|((_, x), y)| x == y).count();
            p.char_indices().nth(same).map_or(p, |(at, _)| &p[..at])
        }),
        _ => "",
    };
    let (given, skip) = match given.strip_prefix(shared) {
        Some(rest) if !rest.is_empty() => (rest, shared.len()),
        _ => (given, 0),
    };
    let mut scored: Vec<(f64, usize, &str)> = accepted
        .iter()
        .enumerate()
        .map(|(i, a)| (similarity(given, &a.as_ref()[skip..]), i, a.as_ref()))
        .filter(|(s, _, a)| *s >= MIN_SIMILARITY && !a.is_empty())
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let best = scored.first().map_or(0.0, |s| s.0);
    scored.into_iter().take_while(|(s, ..)| best - s < 0.1).take(MAX_SUGGESTIONS).map(|(_, _, a)| a).collect()
}

/// The rest of an unknown-name message: the closest names, then the accepted names when they are
/// few ([`LISTED_NAMES`]), else how many there are.
fn unknown_tail(name: &str, accepted: &[String]) -> String {
    let close = suggestions(name, accepted);
    let mean = match close.as_slice() {
        [] => String::new(),
        [one] => format!("did you mean `{one}`? "),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(|n| format!("`{n}`")).collect();
            format!("did you mean {} or `{last}`? ", first.join(", "))
        }
    };
    if accepted.len() <= LISTED_NAMES {
        format!("{mean}accepted: {}", accepted.join(", "))
    } else if close.is_empty() {
        format!("none of the {} accepted names is close", accepted.len())
    } else {
        format!("{mean}({} accepted)", accepted.len())
    }
}

/// ` for `field`` when the message names the field.
fn for_field(field: &Option<String>, in_message: bool) -> String {
    match field {
        Some(f) if in_message => format!(" for `{}`", echo(f)),
        _ => String::new(),
    }
}

/// A parser's message may quote the input: keep its head and its tail (the `(line N)`).
fn echo_message(m: &str) -> String {
    const KEEP: usize = 3 * MAX_ECHO_CHARS;
    let escaped = escape_controls(m);
    let m: &str = &escaped;
    if m.chars().count() <= KEEP {
        return m.to_string();
    }
    let head: String = m.chars().take(2 * MAX_ECHO_CHARS).collect();
    let tail: String = m.chars().rev().take(16).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{head}…({} bytes)…{tail}", m.len())
}

impl Error {
    /// Shorthand for [`Error::InvalidField`]. Pass numbers through [`compact_f64`]; the message
    /// cuts long values ([`echo`]) whatever they are.
    pub fn invalid(field: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> Self {
        Error::InvalidField { field: field.into(), value: value.to_string(), expected: expected.into() }
    }

    /// Shorthand for [`Error::UnknownName`], joining the accepted names with ", ".
    pub fn unknown<S: AsRef<str>>(
        what: impl Into<String>,
        name: impl Into<String>,
        accepted: impl IntoIterator<Item = S>,
    ) -> Self {
        let accepted = accepted.into_iter().map(|s| s.as_ref().to_string()).collect();
        Error::UnknownName { what: what.into(), name: name.into(), accepted, field: None, field_in_message: false }
    }

    /// [`Error::unknown`] for an input field the message names: `unknown precision for `kv`
    /// `int3`; accepted: …` from `unknown_for("kv", "precision", "int3", …)`.
    pub fn unknown_for<S: AsRef<str>>(
        field: impl Into<String>,
        what: impl Into<String>,
        name: impl Into<String>,
        accepted: impl IntoIterator<Item = S>,
    ) -> Self {
        match Error::unknown(what, name, accepted) {
            Error::UnknownName { what, name, accepted, .. } => {
                Error::UnknownName { what, name, accepted, field: Some(field.into()), field_in_message: true }
            }
            other => other,
        }
    }

    /// [`Error::Input`] in the form of [`Error::InvalidField`]: `invalid `FIELD`: VALUE
    /// (EXPECTED)`, the value echoed ([`echo`]) and `expected` a template naming other inputs
    /// (`{arrivals}`, [`Text::template`]).
    pub fn refused(field: &str, value: impl ToString, expected: &str) -> Self {
        Error::refused_text(field, Text::default().plain(&echo(&value.to_string())), Text::template(expected))
    }

    /// [`Error::refused`] with the value and the expected text as [`Text`] (a value that names
    /// inputs: `given with {rate}`).
    pub fn refused_text(field: &str, value: Text, expected: Text) -> Self {
        let message =
            Text::template("invalid `").input(field).plain("`: ").then(value).plain(" (").then(expected).plain(")");
        Error::Input { field: field.to_string(), message }
    }

    /// [`Error::Input`] about `field` with the whole message (naming inputs).
    pub fn input(field: &str, message: Text) -> Self {
        Error::Input { field: field.to_string(), message }
    }

    /// The same error about the input `field`, where it names none yet (a GPU name looked up for
    /// the field `gpu`); the message is unchanged.
    #[must_use]
    pub fn about(mut self, field: &str) -> Self {
        if let Error::UnknownName { field: f @ None, .. } = &mut self {
            *f = Some(field.to_string());
        }
        self
    }

    /// The same error with its field renamed by `name_of` wherever the message names it: a front
    /// end's own name for an input (the CLI's `--flash` for `flash`).
    #[must_use]
    pub fn map_field(mut self, name_of: impl Fn(&str) -> String) -> Self {
        match &mut self {
            Error::InvalidField { field, .. } | Error::MissingField { field, .. } | Error::OverBudget { field, .. } => {
                *field = name_of(field)
            }
            Error::UnknownName { field: Some(field), .. } => *field = name_of(field),
            Error::Input { field, message } => {
                *field = name_of(field);
                *message = std::mem::take(message).map_inputs(&name_of);
            }
            _ => {}
        }
        self
    }

    /// The accepted values, for a name outside a closed set.
    pub fn accepted(&self) -> Option<&[String]> {
        match self {
            Error::UnknownName { accepted, .. } => Some(accepted),
            _ => None,
        }
    }

    /// A TOML parse error as one line: the parser's message and the line it points at.
    pub fn toml(what: &str, text: &str, e: &toml::de::Error) -> Self {
        let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        Error::Malformed {
            what: what.into(),
            message: match line {
                Some(l) => format!("{message} (line {l})"),
                None => message,
            },
        }
    }

    /// The input field the error is about, when there is one: the web marks that form control,
    /// the CLI names its flag. A malformed or unsupported file and a non-finite report value are
    /// about no single field.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidField { field, .. }
            | Error::MissingField { field, .. }
            | Error::OverBudget { field, .. }
            | Error::Input { field, .. } => Some(field),
            Error::UnknownName { field, .. } => field.as_deref(),
            Error::NoPlan(p) => Some(p.field()),
            Error::NoServingPlan(p) => Some(p.field()),
            Error::Malformed { .. } | Error::Unsupported { .. } | Error::NonFinite { .. } | Error::Cancelled => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_its_inputs_as_each_front_end_spells_them() {
        let e = Error::refused("cv", "given", "it applies only to {arrivals} gamma");
        assert_eq!(e.to_string(), "invalid `cv`: given (it applies only to arrivals gamma)");
        assert_eq!(e.field(), Some("cv"));
        // A front end's spelling (here a made-up one: the CLI's `--flag` is tested in its crate).
        let spell = |f: &str| format!("<{}>", f.replace('_', "-"));
        let other = e.clone().map_field(spell);
        assert_eq!(other.to_string(), "invalid `<cv>`: given (it applies only to <arrivals> gamma)");
        assert_eq!(other.field(), Some("<cv>"));
        let m = Error::refused_text(
            "max_steps",
            Text::template("given with {rate}"),
            Text::template("{prompt} and {output}"),
        );
        assert_eq!(m.map_field(spell).to_string(), "invalid `<max-steps>`: given with <rate> (<prompt> and <output>)");
        // Braces that close nothing stay text.
        assert_eq!(Text::template("a {b").to_string(), "a {b");
        assert_eq!(Error::refused("x", "\u{1b}[2J", "y").to_string(), "invalid `x`: \\u{1b}[2J (y)");
    }

    #[test]
    fn echoed_input_is_cut_and_numbers_are_compact() {
        let long = "7".repeat(3_000_000) + "x";
        let m = Error::invalid("contexts", format!("{long:?}"), "tokens x count").to_string();
        assert!(m.len() < 200, "{}", m.len());
        assert!(m.contains("…(3000003 bytes)"), "{m}");
        assert_eq!(Error::invalid("usd", 1e308, "x").to_string(), "invalid `usd`: 1e308 (x)");
        assert_eq!(echo(&format!("1{}", "0".repeat(308))), "1e308");
        assert_eq!(compact_f64(1e6), "1e6");
        assert_eq!(compact_f64(0.01), "0.01");
        assert_eq!(compact_f64(5e-324), "5e-324");
        assert_eq!(compact_f64(2048.0), "2048");
        let u = Error::unknown("GPU", "é".repeat(100), ["a"]).to_string();
        assert!(u.contains(&format!("{}…(200 bytes)", "é".repeat(80))), "{u}");
    }

    #[test]
    fn the_closest_names_are_offered_and_a_long_list_is_counted() {
        let presets = ["llama-3-8b", "llama-3.1-70b", "llama-3.1-405b", "gpt-oss-20b", "gpt-oss-120b", "mistral-7b"];
        assert_eq!(suggestions("lama-3-8b", &presets), ["llama-3-8b"]);
        assert_eq!(suggestions("LLAMA_3_8B", &presets), ["llama-3-8b"]);
        assert_eq!(suggestions("gpt-oss", &presets), ["gpt-oss-20b", "gpt-oss-120b"]);
        assert!(suggestions("bert", &presets).is_empty());
        assert_eq!(suggestions("h100", &["a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200"]), ["h100-sxm", "h100-pcie"]);
        assert_eq!(suggestions("rtx4090", &["rtx-4090", "rtx-3090"]), ["rtx-4090"]);
        // The shared prefix of a zoom level's children is not what was mistyped.
        let children = ["layer.0.mlp.norm", "layer.0.mlp.gate", "layer.0.mlp.up", "layer.0.mlp.down"];
        assert_eq!(suggestions("layer.0.mlp.upp", &children), ["layer.0.mlp.up"]);
        assert!(suggestions("layer.0.mlp.xyz", &children).is_empty());
        assert!((similarity("llama-3-8b", "Llama_3_8B") - 1.0).abs() < 1e-12);
        let many: Vec<String> = (0..30).map(|i| format!("gpu-{i}")).collect();
        let e = Error::unknown("GPU", "gpu-31", &many).to_string();
        assert!(e.starts_with("unknown GPU `gpu-31`; did you mean `gpu-"), "{e}");
        assert!(e.ends_with("? (30 accepted)"), "{e}");
        assert_eq!(
            Error::unknown("GPU", "zzz", &many).to_string(),
            "unknown GPU `zzz`; none of the 30 accepted names is close"
        );
        assert_eq!(
            Error::unknown_for("engine", "engine", "vlm", ["trtllm", "vllm"]).to_string(),
            "unknown engine for `engine` `vlm`; did you mean `vllm`? accepted: trtllm, vllm"
        );
    }

    #[test]
    fn every_error_carries_its_field_and_accepted_values_as_data() {
        use crate::{Catalog, ScenarioRequest};
        let resolve = |r: ScenarioRequest| r.resolve(&Catalog::builtin()).unwrap_err();
        let cases = [
            (resolve(ScenarioRequest { gpu: Some("h900".into()), ..Default::default() }), "gpu"),
            (resolve(ScenarioRequest { model: Some("llama-9".into()), ..Default::default() }), "model"),
            (resolve(ScenarioRequest { kv: Some("int3".into()), ..Default::default() }), "kv"),
            (resolve(ScenarioRequest { phase: Some("train".into()), ..Default::default() }), "phase"),
            (resolve(ScenarioRequest { flash: Some("maybe".into()), ..Default::default() }), "flash"),
            (resolve(ScenarioRequest { causal: Some("x".into()), ..Default::default() }), "causal"),
            (resolve(ScenarioRequest { activations: Some("int4".into()), ..Default::default() }), "activations"),
            (resolve(ScenarioRequest { interconnect: Some("x".into()), ..Default::default() }), "interconnect"),
            (resolve(ScenarioRequest { batch: Some("0".into()), ..Default::default() }), "batch"),
        ];
        for (e, field) in &cases {
            assert_eq!(e.field(), Some(*field), "{e}");
        }
        let flash = &cases[4].0;
        assert_eq!(flash.accepted(), Some(&["on".to_string(), "off".to_string()][..]));
        // A front end renames the field where the message names it, and only there.
        assert_eq!(
            flash.clone().map_field(|f| f.to_uppercase()).to_string(),
            "unknown value for `FLASH` `maybe`; accepted: on, off"
        );
        let gpu = cases[0].0.clone().map_field(|f| f.to_uppercase());
        assert!(gpu.to_string().starts_with("unknown GPU `h900`; did you mean `h200`? (23 accepted"), "{gpu}");
        assert_eq!(gpu.field(), Some("GPU"));
        assert_eq!(Error::NonFinite { path: "x".into() }.field(), None);
    }

    /// Core messages name inputs (`flash` = on), never a front end's syntax (`--flash on`): each
    /// front end maps a field to its flag or form label. Checked over every string literal line.
    #[test]
    fn core_strings_name_inputs_not_cli_flags() {
        fn walk(dir: &std::path::Path, bad: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, bad);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for (n, line) in text.lines().enumerate() {
                        let code = line.trim_start();
                        if code.starts_with("//") || !code.contains('"') {
                            continue;
                        }
                        let flag = code.match_indices("--").any(|(i, _)| {
                            code[i + 2..].starts_with(|c: char| c.is_ascii_lowercase())
                                && (i == 0 || !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric()))
                        });
                        if flag {
                            bad.push(format!("{}:{}: {code}", path.display(), n + 1));
                        }
                    }
                }
            }
        }
        let mut bad = Vec::new();
        walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut bad);
        assert!(bad.is_empty(), "CLI syntax in core strings:\n{}", bad.join("\n"));
    }
}
