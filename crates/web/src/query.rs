//! The URL query: the scenario (the core's `ScenarioRequest`, same names as the CLI flags), an
//! uploaded model (`config`), and a page's own keys.
//!
//! Parsing: the query is split into pairs, every key with a value (a key without `=` is refused,
//! naming it); `config` and the page's keys are taken out; pairs with an empty value are dropped
//! (an HTML form sends every field, and an empty field means "the default", as leaving the flag
//! out does on the CLI); everything else is deserialised into `ScenarioRequest` from the query
//! string, so an unknown or repeated parameter is refused by serde (`deny_unknown_fields`) with
//! its name, and the values go through the CLI's own resolver.

use crate::error::{shown, AppError};
use crate::upload;
use axum::http::StatusCode;
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::scenario_inputs;
use llm_ledger_core::{Catalog, Scenario, ScenarioRequest};
use std::borrow::Cow;
use std::sync::OnceLock;

/// Longest query accepted, bytes: room for an uploaded config (base64url of at most
/// [`upload::MAX_MINIFIED_CONFIG_BYTES`]) plus the scenario, and below the 65,534-byte URI limit
/// of the `http` crate.
pub(crate) const MAX_QUERY_BYTES: usize = 60 * 1024;

/// The parameter that carries an uploaded `config.json`.
pub(crate) const CONFIG_KEY: &str = "config";

/// The parameters of the core's `ScenarioRequest`, in declaration order: the names of the core's
/// scenario input table (a core test checks it against the struct, so a field the core adds
/// appears in the form without a change here).
pub(crate) fn scenario_fields() -> &'static [&'static str] {
    static FIELDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    FIELDS.get_or_init(|| scenario_inputs().iter().map(|i| i.name).collect())
}

/// A page's query, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageQuery {
    /// Scenario pairs with a value, in URL order (unknown keys included, for serde to refuse).
    pub scenario: Vec<(String, String)>,
    /// The uploaded config, as it travels (base64url).
    pub config: Option<String>,
    /// The page's own keys.
    pub extra: Vec<(String, String)>,
}

/// A resolved scenario and the catalogue it was resolved against (with any uploaded model).
pub struct Resolved<'a> {
    /// The catalogue.
    pub catalog: Cow<'a, Catalog>,
    /// The scenario.
    pub scenario: Scenario,
}

impl PageQuery {
    /// Split a raw query. Fails only on a query that is too long, not valid form encoding, or
    /// repeats a non-scenario key.
    pub fn parse(raw: Option<&str>, page_keys: &[&str]) -> Result<PageQuery, AppError> {
        let raw = raw.unwrap_or("");
        if raw.len() > MAX_QUERY_BYTES {
            return Err(AppError::bad_request(
                format!("the query is {} bytes; at most {MAX_QUERY_BYTES} are accepted", raw.len()),
                None,
            )
            .with_status(StatusCode::URI_TOO_LONG));
        }
        Self::from_pairs(pairs(raw)?, page_keys)
    }

    /// Split already-decoded pairs (form fields).
    pub fn from_pairs(pairs: Vec<(String, String)>, page_keys: &[&str]) -> Result<PageQuery, AppError> {
        let mut q = PageQuery::default();
        for (k, v) in pairs {
            if k == CONFIG_KEY {
                if q.config.is_some() {
                    return Err(AppError::bad_request(format!("duplicate field `{CONFIG_KEY}`"), Some(CONFIG_KEY)));
                }
                q.config = Some(v).filter(|v| !v.is_empty());
            } else if page_keys.contains(&k.as_str()) {
                if q.extra.iter().any(|(e, _)| *e == k) {
                    return Err(AppError::bad_request(format!("duplicate field `{k}`"), Some(&k)));
                }
                // As for the scenario, an empty field means the default.
                if !v.trim().is_empty() {
                    q.extra.push((k, v));
                }
            } else if !v.trim().is_empty() {
                q.scenario.push((k, v));
            }
        }
        Ok(q)
    }

    /// A scenario parameter's raw value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.scenario.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The same query with scenario parameter `key` set to `value`.
    pub fn with_scenario(&self, key: &str, value: &str) -> PageQuery {
        let mut q = self.clone();
        q.scenario.retain(|(k, _)| k != key);
        q.scenario.push((key.to_string(), value.to_string()));
        q
    }

    /// A page key's raw value.
    pub fn extra(&self, key: &str) -> Option<&str> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The scenario as the core's request, deserialised from the query string. With an uploaded
    /// model and no `model`, the uploaded model is the one used.
    pub fn request(&self) -> Result<ScenarioRequest, AppError> {
        let mut req: ScenarioRequest = deserialize_pairs(&self.scenario)?;
        if self.config.is_some() && req.model.is_none() {
            req.model = Some(upload::UPLOAD_NAME.to_string());
        }
        Ok(req)
    }

    /// The catalogue with the uploaded model added, if there is one.
    pub fn catalog<'a>(&self, base: &'a Catalog) -> Result<Cow<'a, Catalog>, AppError> {
        match &self.config {
            None => Ok(Cow::Borrowed(base)),
            Some(c) => {
                let mut cat = base.clone();
                cat.add_presets(vec![upload::preset(&upload::decode(c)?)?]);
                Ok(Cow::Owned(cat))
            }
        }
    }

    /// Resolve the scenario with the core's resolver.
    pub fn resolve<'a>(&self, base: &'a Catalog) -> Result<Resolved<'a>, AppError> {
        let req = self.request()?;
        let catalog = self.catalog(base)?;
        let scenario = req.resolve(&catalog).map_err(|e| self.core_error(&e))?;
        Ok(Resolved { catalog, scenario })
    }

    /// `value` itself when every number in its serde form is finite; otherwise the internal error
    /// (500) that [`llm_ledger_report::finite::check`] names: a page never shows `NaN` or `inf`.
    pub fn checked<T: serde::Serialize>(&self, value: T) -> Result<T, AppError> {
        llm_ledger_report::finite::check("", &value).map_err(|e| self.core_error(&e))?;
        Ok(value)
    }

    /// A core error about this query, about the parameter the core names as its field.
    pub fn core_error(&self, e: &llm_ledger_core::Error) -> AppError {
        AppError::from_core(e)
    }

    /// A command's error (the app's): an input's as [`PageQuery::core_error`], any other with its
    /// message and the input it is about.
    pub fn command_error(&self, e: &llm_ledger_app::CommandError) -> AppError {
        match e {
            llm_ledger_app::CommandError::Input(e) => self.core_error(e),
            other => AppError::bad_request(other.to_string(), other.field()),
        }
    }

    /// The page keys as a struct the core (or the report crate) deserialises, such as
    /// `ServingRequest`: the keys in `keys` only, so the struct's own unknown-field check applies
    /// to nothing else.
    pub fn extras_as<T: serde::de::DeserializeOwned>(&self, keys: &[&str]) -> Result<T, AppError> {
        let pairs: Vec<(String, String)> =
            self.extra.iter().filter(|(k, _)| keys.contains(&k.as_str())).cloned().collect();
        deserialize_pairs(&pairs)
    }

    /// The state as a query string (`?…`, or empty), with some scenario keys replaced (`Some`) or
    /// removed (`None`). Page keys are not carried: they belong to the page that set them.
    pub fn state_query(&self, overrides: &[(&str, Option<&str>)]) -> String {
        let mut pairs: Vec<(&str, &str)> = self
            .scenario
            .iter()
            .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // Overrides go where the scenario fields are declared, so links read in a stable order.
        for (k, v) in overrides {
            if let Some(v) = v {
                let rank = |key: &str| scenario_fields().iter().position(|f| *f == key).unwrap_or(usize::MAX);
                let at = pairs.iter().position(|(p, _)| rank(p) > rank(k)).unwrap_or(pairs.len());
                pairs.insert(at, (k, v));
            }
        }
        if let Some(c) = &self.config {
            pairs.push((CONFIG_KEY, c));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", serde_urlencoded::to_string(&pairs).unwrap_or_default())
        }
    }

    /// A link to `path` carrying the state.
    pub fn href(&self, path: &str, overrides: &[(&str, Option<&str>)]) -> String {
        format!("{path}{}", self.state_query(overrides))
    }

    /// A link to `path` carrying the state and the page keys, with scenario keys and page keys
    /// replaced (`Some`) or removed (`None`). Page keys follow the scenario, in their order.
    pub fn href_page(&self, path: &str, scenario: &[(&str, Option<&str>)], page: &[(&str, Option<&str>)]) -> String {
        let state = self.state_query(scenario);
        let mut extra: Vec<(&str, &str)> = self
            .extra
            .iter()
            .filter(|(k, _)| !page.iter().any(|(o, _)| o == k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        extra.extend(page.iter().filter_map(|(k, v)| v.map(|v| (*k, v))));
        let extra = serde_urlencoded::to_string(&extra).unwrap_or_default();
        match (state.is_empty(), extra.is_empty()) {
            (_, true) => format!("{path}{state}"),
            (true, false) => format!("{path}?{extra}"),
            (false, false) => format!("{path}{state}&{extra}"),
        }
    }

    /// The query as a page shows it (the form's boxes and hidden fields, the scenario bar): keys and
    /// values with their control characters escaped ([`shown`]), so what a page echoes never
    /// carries one raw. Borrowed when there is none, as in every query the explorer writes itself.
    pub fn shown(&self) -> Cow<'_, PageQuery> {
        let has = |s: &str| matches!(shown(s), Cow::Owned(_));
        let pairs_have = |p: &[(String, String)]| p.iter().any(|(k, v)| has(k) || has(v));
        if !pairs_have(&self.scenario) && !pairs_have(&self.extra) && !self.config.as_deref().is_some_and(has) {
            return Cow::Borrowed(self);
        }
        let pairs =
            |p: &[(String, String)]| p.iter().map(|(k, v)| (shown(k).into_owned(), shown(v).into_owned())).collect();
        Cow::Owned(PageQuery {
            scenario: pairs(&self.scenario),
            config: self.config.as_deref().map(|c| shown(c).into_owned()),
            extra: pairs(&self.extra),
        })
    }

    /// Only the uploaded model (for endpoints that take no scenario).
    pub fn config_only(&self) -> PageQuery {
        PageQuery { config: self.config.clone(), ..PageQuery::default() }
    }

    /// A link to `path` carrying the state and some of the target's own keys (`format=csv`).
    pub fn href_with(&self, path: &str, page_keys: &[(&str, &str)]) -> String {
        self.hrefs_to(path).with(page_keys)
    }

    /// Links to `path` carrying the state, for many links that differ only in the target's own
    /// keys: the state is written once ([`Hrefs::with`] is [`PageQuery::href_with`]).
    pub fn hrefs_to(&self, path: &str) -> Hrefs {
        let state = self.state_query(&[]);
        Hrefs { has_query: !state.is_empty(), base: format!("{path}{state}") }
    }
}

/// Links to one path with the state of a query ([`PageQuery::hrefs_to`]).
#[derive(Debug, Clone)]
pub struct Hrefs {
    /// The path and the state's query string.
    base: String,
    /// The state is not empty (the base has a `?`).
    has_query: bool,
}

impl Hrefs {
    /// The link with some of the target's own keys (`at=layer.0`).
    pub fn with(&self, page_keys: &[(&str, &str)]) -> String {
        let extra = serde_urlencoded::to_string(page_keys).unwrap_or_default();
        match (self.has_query, extra.is_empty()) {
            (_, true) => self.base.clone(),
            (false, false) => format!("{}?{extra}", self.base),
            (true, false) => format!("{}&{extra}", self.base),
        }
    }
}

/// The decoded pairs of a raw query. Every key takes a value: a word without `=` (`?batch`) is
/// refused, naming it, rather than read as an empty value (the default) as form decoding would;
/// none of the explorer's keys is a flag. Empty segments (`?&batch=8&`) are nothing.
pub(crate) fn pairs(raw: &str) -> Result<Vec<(String, String)>, AppError> {
    let malformed =
        |e: serde_urlencoded::de::Error| AppError::bad_request(format!("malformed query string: {e}"), None);
    if let Some(word) = raw.split('&').find(|s| !s.is_empty() && !s.contains('=')) {
        // Decoded as form encoding decodes a key (`+` a space, `%XX` a byte).
        let key = serde_urlencoded::from_str::<Vec<(String, String)>>(&format!("{word}="))
            .map_err(malformed)?
            .pop()
            .map_or_else(|| word.to_string(), |(k, _)| k);
        let shown = llm_ledger_core::error::echo(&key);
        return Err(AppError::bad_request(
            format!("`{shown}` needs `=value` (every key of the explorer takes a value)"),
            Some(&key),
        ));
    }
    serde_urlencoded::from_str(raw).map_err(malformed)
}

/// A raw query string (a saved scenario's) with its control characters percent-encoded: the same
/// query once decoded, and safe to show or to write into a link.
pub(crate) fn without_controls(query: &str) -> Cow<'_, str> {
    if !query.chars().any(char::is_control) {
        return Cow::Borrowed(query);
    }
    let mut out = String::with_capacity(query.len() + 8);
    for c in query.chars() {
        if c.is_control() {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `T` (a request struct of optional text fields) from query pairs. A refusal is about the pair
/// that `T` refuses: a repeated key, or the first key `T` refuses on its own (an unknown field);
/// the field is found from the pairs, never read back out of the message.
fn deserialize_pairs<T: serde::de::DeserializeOwned>(pairs: &[(String, String)]) -> Result<T, AppError> {
    let parse = |pairs: &[(String, String)]| from_pairs::<T, _>(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    parse(pairs).map_err(|e| {
        let repeated = pairs.iter().enumerate().find(|(i, (k, _))| pairs[..*i].iter().any(|(j, _)| j == k));
        let refused = || pairs.iter().find(|p| parse(std::slice::from_ref(p)).is_err());
        let field = repeated.map(|(_, p)| p).or_else(refused).map(|(k, _)| k.as_str());
        AppError::bad_request(e.to_string(), field)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_fields_are_read_from_the_core() {
        let f = scenario_fields();
        assert_eq!(&f[..5], ["model", "gpu", "phase", "batch", "ctx"]);
        assert!(f.contains(&"flash") && f.contains(&"kv") && f.contains(&"weights"));
        assert!(!f.contains(&CONFIG_KEY), "`config` must not collide with a scenario field");
        for page in crate::pages::PAGES {
            for k in page.keys {
                assert!(!f.contains(k) && *k != CONFIG_KEY, "page {}: key `{k}` collides", page.slug);
            }
        }
    }

    #[test]
    fn empty_values_mean_the_default_and_unknown_keys_are_refused_by_serde() {
        let q = PageQuery::parse(Some("batch=64&ctx=&kv=fp8"), &[]).unwrap();
        assert_eq!(q.scenario, [("batch".to_string(), "64".to_string()), ("kv".into(), "fp8".into())]);
        let r = q.request().unwrap();
        assert_eq!((r.batch.as_deref(), r.ctx, r.kv.as_deref()), (Some("64"), None, Some("fp8")));

        let e = PageQuery::parse(Some("batch=1&bacth=2"), &[]).unwrap().request().unwrap_err();
        assert!(e.message.starts_with("unknown field `bacth`, expected one of `model`, `gpu`"), "{}", e.message);
        assert_eq!(e.field.as_deref(), Some("bacth"));
        let e = PageQuery::parse(Some("batch=1&batch=2"), &[]).unwrap().request().unwrap_err();
        assert_eq!((e.message.as_str(), e.field.as_deref()), ("duplicate field `batch`", Some("batch")));
    }

    #[test]
    fn page_keys_and_config_are_split_off() {
        let q = PageQuery::parse(Some("format=csv&model=gpt2&config=abc"), &["format"]).unwrap();
        assert_eq!(q.extra("format"), Some("csv"));
        assert_eq!(q.get("model"), Some("gpt2"));
        assert_eq!(q.config.as_deref(), Some("abc"));
        assert!(PageQuery::parse(Some("format=csv"), &[]).unwrap().request().is_err());
        assert!(PageQuery::parse(Some("config=a&config=b"), &[]).is_err());
    }

    #[test]
    fn links_carry_the_state_with_overrides_in_field_order() {
        let q = PageQuery::parse(Some("kv=fp8&model=gpt2&config=Zm9v"), &[]).unwrap();
        assert_eq!(q.href("/ledger", &[]), "/ledger?kv=fp8&model=gpt2&config=Zm9v");
        assert_eq!(q.href("/ledger", &[("batch", Some("64")), ("model", None)]), "/ledger?batch=64&kv=fp8&config=Zm9v");
        assert_eq!(PageQuery::default().href("/gpus", &[]), "/gpus");
        assert_eq!(PageQuery::default().href("/", &[("contexts", Some("2048x8,100"))]), "/?contexts=2048x8%2C100");
    }

    #[test]
    fn page_links_keep_the_page_keys_with_their_overrides() {
        let q = PageQuery::parse(Some("batch=8&at=layer.0&x=1"), &["at", "x"]).unwrap();
        assert_eq!(q.href_page("/p", &[], &[]), "/p?batch=8&at=layer.0&x=1");
        assert_eq!(q.href_page("/p", &[("batch", None)], &[("at", Some("model")), ("x", None)]), "/p?at=model");
        // Empty page fields mean the default, as empty scenario fields do.
        let q = PageQuery::parse(Some("at=&batch="), &["at"]).unwrap();
        assert_eq!(q, PageQuery::default());
    }

    #[test]
    fn oversized_and_malformed_queries_are_refused() {
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        const _: () =
            assert!(MAX_QUERY_BYTES > upload::MAX_MINIFIED_CONFIG_BYTES * 4 / 3 + 2048 && MAX_QUERY_BYTES < 65_534);
        assert_eq!(PageQuery::parse(Some(&long), &[]).unwrap_err().status, StatusCode::URI_TOO_LONG);
        // Invalid UTF-8 in a percent-escape decodes to U+FFFD, which the core then refuses.
        let e = PageQuery::parse(Some("batch=%FF"), &[]).unwrap().resolve(&Catalog::builtin()).err().unwrap();
        assert_eq!(e.field.as_deref(), Some("batch"));
    }

    #[test]
    fn a_key_without_a_value_is_refused_and_controls_are_shown_escaped() {
        let e = PageQuery::parse(Some("kv=fp8&batch&ctx"), &[]).unwrap_err();
        assert_eq!(e.message, "`batch` needs `=value` (every key of the explorer takes a value)");
        assert_eq!((e.status, e.field.as_deref()), (StatusCode::BAD_REQUEST, Some("batch")));
        let e = PageQuery::parse(Some("%1B%5B2J"), &[]).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.field.as_deref()),
            ("`\\u{1b}[2J` needs `=value` (every key of the explorer takes a value)", Some("\\u{1b}[2J"))
        );
        assert!(PageQuery::parse(Some("&batch=8&&"), &[]).is_ok());

        let q = PageQuery::parse(Some("batch=8%1B&at=a%07&k%C2%9B=1"), &["at"]).unwrap();
        let shown = q.shown();
        assert_eq!(shown.get("batch"), Some("8\\u{1b}"));
        assert_eq!(shown.extra("at"), Some("a\\u{7}"));
        assert_eq!(shown.scenario[1].0, "k\\u{9b}");
        let plain = PageQuery::parse(Some("batch=8"), &[]).unwrap();
        assert!(matches!(plain.shown(), Cow::Borrowed(_)));
        assert_eq!(without_controls("batch=8\u{b}&kv=fp8\u{85}"), "batch=8%0B&kv=fp8%C2%85");
    }

    /// A page never shows `NaN` or `inf` with status 200; a non-finite number in
    /// a report is the explorer's internal error (500), named by its path.
    #[test]
    fn a_page_with_a_non_finite_number_is_an_internal_error() {
        #[derive(serde::Serialize)]
        struct Row {
            time_s: f64,
        }
        let q = PageQuery::default();
        assert!(q.checked(Row { time_s: 1.0 }).is_ok());
        let e = q.checked(Row { time_s: f64::NAN }).err().expect("NaN is refused");
        assert_eq!(e.status, axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        assert!(e.message.contains("time_s"), "{}", e.message);
        assert!(!e.message.contains('\n'), "{}", e.message);
    }
}
