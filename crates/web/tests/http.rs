//! HTTP-level tests of every page and endpoint, through `app(state)` and `tower::ServiceExt::oneshot`
//! (no socket). Expected numbers come from the report types the CLI prints, for the same inputs.

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use llm_ledger_core::model::parse_config_json;
use llm_ledger_core::{Catalog, Ledger, ScenarioRequest};
use llm_ledger_report::{Format, LedgerReport, Report};
use llm_ledger_web::pages::PAGES;
use llm_ledger_web::{app, AppState};
use std::sync::Arc;
use tower::ServiceExt;

/// Every parameter of the core's `ScenarioRequest` (the CLI's scenario flags).
const SCENARIO_FIELDS: &[&str] = &[
    "model",
    "gpu",
    "phase",
    "batch",
    "ctx",
    "contexts",
    "weights",
    "kv",
    "activations",
    "flash",
    "causal",
    "logits",
    "counting",
    "mla",
    "compute_efficiency",
    "bandwidth_efficiency",
    "zipf",
];

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

fn router() -> Router {
    app(Arc::new(AppState::builtin()))
}

async fn send(req: Request<Body>) -> Reply {
    let res = router().oneshot(req).await.expect("the router is infallible");
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    Reply { status, headers, body: String::from_utf8(bytes.to_vec()).expect("UTF-8 body") }
}

async fn get(uri: &str) -> Reply {
    send(Request::get(uri).body(Body::empty()).unwrap()).await
}

/// The ledger the CLI prints for these flags (`llm-ledger ledger --flag value …`).
fn cli_report(pairs: &[(&str, &str)]) -> LedgerReport {
    let q = serde_urlencoded::to_string(pairs).unwrap();
    let req: ScenarioRequest = serde_urlencoded::from_str(&q).unwrap();
    let sc = req.resolve(&Catalog::builtin()).unwrap();
    LedgerReport::new(&sc, &Ledger::build(&sc))
}

/// The `data-value` of the element with `id`.
fn value_of(html: &str, id: &str) -> f64 {
    let at = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let rest = &html[at..];
    let v = rest.split("data-value=\"").nth(1).unwrap_or_else(|| panic!("#{id} has no data-value"));
    v[..v.find('"').unwrap()].parse().unwrap()
}

/// The error message shown on a page.
#[track_caller]
fn page_error(html: &str) -> String {
    let at = html.find("<span class=\"message\">").expect("an error box");
    let rest = &html[at + "<span class=\"message\">".len()..];
    rest[..rest.find("</span>").unwrap()]
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn assert_security_headers(h: &HeaderMap) {
    let csp = h.get(header::CONTENT_SECURITY_POLICY).expect("CSP").to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("script-src 'unsafe-inline'") && !csp.contains("script-src *"), "{csp}");
    assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
    assert_eq!(h[header::X_FRAME_OPTIONS], "DENY");
}

#[tokio::test]
async fn every_page_renders_with_the_navigation_and_security_headers() {
    for page in PAGES {
        let r = get(&page.path()).await;
        assert_eq!(r.status, StatusCode::OK, "{} {}", page.path(), r.body);
        assert_security_headers(&r.headers);
        assert!(r.headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/html"));
        for other in PAGES {
            assert!(
                r.body.contains(&format!("data-slug=\"{}\"", other.slug)),
                "{} lacks a link to {}",
                page.path(),
                other.slug
            );
        }
        assert!(r.body.contains(&format!("<title>{} · llm-ledger</title>", page.title)));
        // CSP: no inline script or style anywhere.
        assert!(
            !r.body.contains("<script>") && !r.body.contains(" style=") && !r.body.contains("<style"),
            "{}",
            page.path()
        );
        assert!(!r.body.contains("coming"), "{}: no placeholders are left", page.path());
        // The first link of the body skips the navigation and the controls to the result, which
        // takes the focus; an error page keeps it.
        let body = &r.body[r.body.find("<body>").expect("a body")..];
        let first_link = &body[body.find("<a ").expect("a link")..];
        assert!(
            first_link.starts_with("<a class=\"skip-link\" href=\"#content\">"),
            "{}: {}",
            page.path(),
            &first_link[..80]
        );
        assert!(r.body.contains("<main id=\"content\" tabindex=\"-1\">"), "{}", page.path());
        // Every slider is named after its control: no two controls share a name.
        let names: Vec<&str> = r.body.split(" aria-label=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).collect();
        let sliders: Vec<&&str> = names.iter().filter(|n| n.ends_with(", log scale")).collect();
        let mut distinct = sliders.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(sliders.len(), distinct.len(), "{}: {sliders:?}", page.path());
        if page.slug == "ledger" {
            assert_eq!(sliders.len(), 2, "{names:?}");
        }
    }
    let bad = get("/ledger?batch=0").await;
    assert!(bad.body.contains("<a class=\"skip-link\" href=\"#content\">") && bad.body.contains("id=\"error\""));
}

#[tokio::test]
async fn the_ledger_page_shows_the_clis_numbers() {
    for pairs in [
        vec![],
        vec![("batch", "64"), ("ctx", "8192"), ("kv", "fp8")],
        vec![("model", "mixtral-8x7b"), ("gpu", "b200"), ("phase", "prefill"), ("ctx", "512")],
    ] {
        let expected = cli_report(&pairs);
        let uri = format!("/ledger?{}", serde_urlencoded::to_string(&pairs).unwrap());
        let r = get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}");
        assert_eq!(value_of(&r.body, "step-time"), expected.step_time_s, "{uri}");
        assert_eq!(value_of(&r.body, "tokens-per-s"), expected.tokens_per_s);
        assert_eq!(value_of(&r.body, "total-bytes"), expected.total.bytes);
        assert_eq!(value_of(&r.body, "total-flops"), expected.total.flops);
        assert_eq!(
            r.body.matches("<tr data-op=").count(),
            expected.rows.len() + 1,
            "one row per operator plus the total"
        );
        assert!(r.body.contains(&expected.inputs.headline()));
        assert!(r.body.contains("<svg class=\"plot roofline\""), "the roofline is inline");
    }
}

#[tokio::test]
async fn the_seed_004_headline_numbers_are_on_the_page() {
    // The reference calculator: batch 1 at 2,048 tokens reads 15.3 GB and does 16 GFLOP per step (full counting: 16.1 GFLOP,
    // the reference calculator's rows plus norms, rope and residuals); the step is 5.71 ms at 60 %/80 % of peak on
    // the roofline clock, and the explorer's default (the measured clock) expects 6.62 ms.
    let r = get("/ledger?time_model=roofline").await;
    assert!(r.body.contains(">15.3 GB<"));
    assert!(r.body.contains(">16.1 GFLOP<"));
    assert!(r.body.contains(">5.71 ms<"));
    let r = get("/ledger").await;
    assert!(r.body.contains(">15.3 GB<") && r.body.contains(">6.62 ms<"));
}

#[tokio::test]
async fn the_json_endpoints_return_the_clis_documents() {
    for pairs in
        [vec![], vec![("batch", "64"), ("weights", "int4")], vec![("contexts", "2048x8,32768x2"), ("gpu", "h200")]]
    {
        let q = serde_urlencoded::to_string(&pairs).unwrap();
        let r = get(&format!("/api/ledger?{q}")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(r.body, cli_report(&pairs).render(Format::Json).unwrap(), "{q}");
        let csv = get(&format!("/api/ledger?{q}&format=csv")).await;
        assert_eq!(csv.body, cli_report(&pairs).render(Format::Csv).unwrap());
    }
    let c = Catalog::builtin();
    assert_eq!(
        get("/api/models").await.body,
        llm_ledger_report::catalog::ModelList::new(&c).render(Format::Json).unwrap()
    );
    assert_eq!(
        get("/api/gpus?format=md").await.body,
        llm_ledger_report::catalog::GpuList::new(&c).render(Format::Md).unwrap()
    );
    let svg = get("/plot/roofline.svg?batch=8").await;
    assert_eq!(svg.headers[header::CONTENT_TYPE], "image/svg+xml");
    assert!(svg.body.starts_with("<?xml") && svg.body.contains("<svg class=\"plot roofline\""));
}

/// Every refusal is the core's (or serde's) one-line message, on the page with status 400 and in
/// the API's JSON, naming the field.
#[tokio::test]
async fn bad_parameters_are_400_with_the_message_and_the_field() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("batch=0", "invalid `batch`: 0 (an integer from 1 to 1,073,741,824)", Some("batch")),
        ("batch=-3", "invalid `batch`: \"-3\" (a non-negative integer)", Some("batch")),
        ("gpu=h900", "unknown GPU `h900`; did you mean `h200`? (23 accepted)", Some("gpu")),
        ("model=llama-9", "unknown model `llama-9`; did you mean `llama-3-8b`", Some("model")),
        ("kv=int3", "unknown precision for `kv` `int3`; did you mean `int8` or `int4`? accepted:", Some("kv")),
        ("phase=train", "unknown phase `train`; accepted: decode, prefill", Some("phase")),
        ("phase=prefill&ctx=0", "invalid `ctx`: 0 (a prompt of at least 1 token in prefill)", Some("ctx")),
        ("contexts=2048x8&batch=2", "invalid `contexts`: given together with batch/ctx", Some("contexts")),
        ("flash=maybe", "unknown value for `flash` `maybe`; accepted: on, off", Some("flash")),
        (
            "compute_efficiency=1.5",
            "invalid `compute_efficiency`: 1.5 (a number in [0.01, 1])",
            Some("compute_efficiency"),
        ),
        ("bacth=64", "unknown field `bacth`, expected one of `model`, `gpu`, `phase`", Some("bacth")),
        ("batch=1&batch=2", "duplicate field `batch`", Some("batch")),
        ("config=%21%21", "invalid `config`: not base64url", Some("config")),
    ];
    for (q, message, field) in cases {
        let page = get(&format!("/ledger?{q}")).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{q}");
        assert_security_headers(&page.headers);
        assert!(page_error(&page.body).starts_with(message), "{q}: {}", page_error(&page.body));
        assert!(page.body.contains("<form id=\"controls\""), "the controls stay on an error page");
        if let Some(f) = field.filter(|f| *f != "bacth" && *f != "config") {
            assert!(page.body.contains(&format!("id=\"f-{f}\"")), "{q}");
            let control = &page.body[page.body.find(&format!("id=\"f-{f}\"")).unwrap()..];
            assert!(
                control[..control.find('>').unwrap()].contains("aria-invalid=\"true\""),
                "{q}: the control is marked"
            );
        }
        let api = get(&format!("/api/ledger?{q}")).await;
        assert_eq!(api.status, StatusCode::BAD_REQUEST, "{q}");
        let v: serde_json::Value = serde_json::from_str(&api.body).unwrap();
        assert!(v["error"]["message"].as_str().unwrap().starts_with(message), "{q}: {v}");
        assert_eq!(v["error"]["field"].as_str(), *field, "{q}");
    }
    // Every page checks the scenario, also those that only list.
    for page in PAGES {
        assert_eq!(
            get(&format!("{}?batch=zero", page.path())).await.status,
            StatusCode::BAD_REQUEST,
            "{}",
            page.path()
        );
    }
    let r = get("/api/models?batch=1").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("unknown field `batch`, expected `format` or `config`"));
    let r = get("/api/ledger?format=xml").await;
    assert!(r.body.contains("unknown format `xml`; accepted: table, json, csv, md"));
}

/// Control characters a terminal or a page would act on (`ESC`, `BEL`, the C1 `CSI`, a
/// bidirectional override).
const CONTROLS: [char; 4] = ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'];

#[track_caller]
fn assert_no_raw_controls(what: &str, body: &str) {
    if let Some(at) = body.find(CONTROLS) {
        let from = body[..at].char_indices().rev().nth(120).map_or(0, |(i, _)| i);
        panic!("{what}: a raw control character echoed: …{}…", body[from..(at + 40).min(body.len())].escape_debug());
    }
}

/// Whatever the explorer echoes of a request — an error message and its field, the form's boxes
/// and hidden fields, the scenario bar, a zoom notice, a search, a saved scenario, an uploaded
/// model's name — carries its control characters escaped as the core's messages write them
/// (`\u{1b}`), never raw: on every page, under every key it reads and an unknown one.
#[tokio::test]
async fn control_characters_in_a_query_are_never_echoed_raw() {
    let r = get("/ledger?model=llama%1B%5B31m").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(page_error(&r.body).starts_with("unknown model `llama\\u{1b}[31m`"), "{}", page_error(&r.body));
    assert!(r.body.contains("value=\"llama\\u{1b}[31m\""), "the form shows the value escaped");
    let (_, message, field) = api_error("/api/ledger?ba%1Btch=1").await;
    assert!(message.starts_with("unknown field `ba\\u{1b}tch`"), "{message}");
    assert_eq!(field.as_deref(), Some("ba\\u{1b}tch"));
    let values = ["a%1Bb", "8%1B", "%1B%5B2J", "layer.0%1B", "llama-3-8b%07", "8%C2%9B", "batch%3D8%E2%80%AE", "%1B"];
    for page in PAGES {
        let keys = SCENARIO_FIELDS.iter().chain(page.keys).chain(&["bad%1Bkey", "tp", "engine", "time_model"]);
        for key in keys {
            for value in values {
                let uri = format!("{}?{key}={value}", page.path());
                assert_no_raw_controls(&uri, &get(&uri).await.body);
            }
        }
    }
    // A saved scenario that resolves with a control character in it (a value's trailing vertical
    // tab is trimmed) is linked and written percent-encoded.
    let r = get("/compare?s1=batch%3D8%0B%26kv%3Dfp8").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    assert!(!r.body.contains('\u{b}'), "a raw vertical tab");
    assert!(r.body.contains("href=\"/ledger?batch=8%0B&amp;kv=fp8\""), "the saved scenario's ledger link");
    let r = get("/api/compare?s1=batch%3D8%0B%26kv%3Dfp8&format=csv").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(!r.body.contains('\u{b}') && r.body.contains("batch=8%0B&kv=fp8"), "{}", r.body);
    // An uploaded model's name (`_name_or_path`) is shown in every page and report.
    let config = r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "vocab_size": 50257, "_name_or_path": "evil\u001b[31m\u009b"}"#;
    for format in ["table", "md", "csv", "json"] {
        let req = Request::post(format!("/api/ledger?format={format}")).body(Body::from(config)).unwrap();
        let r = send(req).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_no_raw_controls(format, &r.body);
    }
    let r = send(multipart(&[("page", "ledger")], Some(config))).await;
    let to = r.headers[header::LOCATION].to_str().unwrap().to_string();
    let r = get(&to).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_no_raw_controls(&to, &r.body);
    assert!(r.body.contains("evil\\u{1b}[31m\\u{9b}"), "the name is shown escaped");
}

/// A query word without `=` (`?batch`) is not read as the default: it is refused, naming the key.
/// No key of the explorer is a flag. Empty segments are nothing.
#[tokio::test]
async fn a_query_key_without_a_value_is_refused_naming_it() {
    for (uri, key) in [
        ("/ledger?batch", "batch"),
        ("/ledger?model=gpt2&batch", "batch"),
        ("/ledger?ba+tch&batch=8", "ba tch"),
        ("/compare?s1", "s1"),
        ("/graph?expand", "expand"),
        ("/powers-of-ten?pin", "pin"),
        ("/gpus?format", "format"),
    ] {
        let r = get(uri).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(page_error(&r.body), format!("`{key}` needs `=value` (every key of the explorer takes a value)"));
        assert!(r.body.contains(&format!("data-field=\"{key}\"")), "{uri}");
    }
    let (status, message, field) = api_error("/api/ledger?kv=fp8&batch").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(message, "`batch` needs `=value` (every key of the explorer takes a value)");
    assert_eq!(field.as_deref(), Some("batch"));
    assert_eq!(api_error("/api/gpus?format").await.2.as_deref(), Some("format"));
    assert_eq!(api_error("/api/moe?experts=8&top_k=2&zipf").await.2.as_deref(), Some("zipf"));
    // A saved scenario is a query too: `s1=NaN` is not the default scenario.
    let r = get("/compare?s1=NaN").await;
    assert_page_refuses(
        &r,
        "saved scenario A (`s1` = `NaN`): `NaN` needs `=value` (every key of the explorer takes a value)",
        "s1",
    );
    // An upload's query too.
    let req = Request::post("/upload?page=ledger&batch")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"model_type": "gpt2"}"#))
        .unwrap();
    let r = send(req).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(page_error(&r.body), "`batch` needs `=value` (every key of the explorer takes a value)");
    // Empty segments and empty values are as before: the default.
    for uri in ["/ledger?&batch=8&", "/ledger?&&", "/ledger?batch=&kv=fp8", "/ledger?"] {
        assert_eq!(get(uri).await.status, StatusCode::OK, "{uri}");
    }
}

#[tokio::test]
async fn oversized_queries_and_unknown_paths_are_refused_cleanly() {
    let long = format!("/ledger?contexts={}", "1,".repeat(31_000));
    let r = get(&long).await;
    assert_eq!(r.status, StatusCode::URI_TOO_LONG);
    assert_security_headers(&r.headers);
    let r = get("/../../etc/passwd").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(!r.body.contains("root:"));
    let r = get("/assets/../Cargo.toml").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = get("/nope").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Titled as what it is, not as the page its navigation is drawn from.
    assert!(
        r.body.contains("<title>Not found · llm-ledger</title>") && r.body.contains("<h1>Not found</h1>"),
        "{}",
        r.body
    );
    // Every page names an empty icon, so no browser asks for /favicon.ico.
    assert!(get("/").await.body.contains(r#"<link rel="icon" href="data:,">"#));
}

/// The answer to `uri` asked for with `Accept-Encoding: encoding`: its headers and raw body.
async fn get_encoded(uri: &str, encoding: &str) -> (HeaderMap, Vec<u8>) {
    let req = Request::get(uri).header(header::ACCEPT_ENCODING, encoding).body(Body::empty()).unwrap();
    let res = router().oneshot(req).await.expect("the router is infallible");
    let headers = res.headers().clone();
    (headers, res.into_body().collect().await.expect("body").to_bytes().to_vec())
}

#[tokio::test]
async fn pages_assets_and_downloads_are_compressed_for_clients_that_accept_it() {
    use std::io::Read;
    let home = get("/").await.body;
    let css = home.split("rel=\"stylesheet\" href=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    for uri in ["/gemm-tiling", "/ledger", css.as_str(), "/api/ledger?batch=8", "/plot/roofline.svg?batch=8"] {
        let plain = get(uri).await;
        assert_eq!(plain.status, StatusCode::OK, "{uri}");
        // Without Accept-Encoding the answer is the identity.
        assert!(plain.headers.get(header::CONTENT_ENCODING).is_none(), "{uri}");
        for encoding in ["gzip", "br"] {
            let (headers, bytes) = get_encoded(uri, encoding).await;
            assert_eq!(headers[header::CONTENT_ENCODING], encoding, "{uri}");
            assert!(headers[header::VARY].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"), "{uri}");
            assert_security_headers(&headers);
            let mut text = String::new();
            match encoding {
                "gzip" => flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text),
                _ => brotli_decompressor::Decompressor::new(&bytes[..], 4096).read_to_string(&mut text),
            }
            .unwrap_or_else(|e| panic!("{uri} {encoding}: {e}"));
            assert_eq!(text, plain.body, "{uri} {encoding}");
            // A page of tables and inline SVG compresses several-fold, even at the fastest level.
            if plain.body.len() > 50_000 {
                assert!(
                    bytes.len() * 4 < plain.body.len(),
                    "{uri} {encoding}: {} of {}",
                    bytes.len(),
                    plain.body.len()
                );
            }
        }
    }
}

#[tokio::test]
async fn assets_are_embedded_and_cacheable() {
    let home = get("/").await.body;
    let css = home.split("rel=\"stylesheet\" href=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let js = home.split("<script src=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let r = get(&css).await;
    assert_eq!(
        (r.status, r.headers[header::CONTENT_TYPE].to_str().unwrap()),
        (StatusCode::OK, "text/css; charset=utf-8")
    );
    assert!(r.body.contains("prefers-color-scheme: dark"));
    let r = get(&js).await;
    assert_eq!(r.headers[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
    assert!(r.body.contains("history.pushState") && r.body.contains("popstate"));
    assert!(r.headers[header::CACHE_CONTROL].to_str().unwrap().contains("immutable"));
}

#[tokio::test]
async fn the_form_has_a_control_for_every_scenario_field_and_echoes_the_query() {
    let r = get("/ledger?gpu=H100&batch=7&kv=fp8&zipf=0.5").await;
    assert_eq!(r.status, StatusCode::OK);
    for f in SCENARIO_FIELDS {
        assert!(r.body.contains(&format!("name=\"{f}\"")), "no control for {f}");
    }
    assert!(r.body.contains("<option value=\"h100-sxm\" selected>"), "an alias selects its GPU");
    assert!(r.body.contains("<option value=\"fp8\" selected>"));
    assert!(r.body.contains("name=\"batch\" value=\"7\""));
    assert!(r.body.contains("<details open"), "an advanced field in the URL opens its section");
    let plain_form =
        get("/ledger?activations=bf16&causal=half&logits=last&counting=full&mla=auto&contexts=&zipf=").await;
    assert!(!plain_form.body.contains("<details open"), "defaults, as a plain form sends them, keep it closed");
    assert!(get("/ledger?causal=full").await.body.contains("<details open"));
    // Links carry the state to the other pages.
    assert!(r.body.contains("href=\"/models?gpu=H100&amp;batch=7&amp;kv=fp8&amp;zipf=0.5\""));
}

#[tokio::test]
async fn the_listings_link_to_the_ledger_and_mark_the_current_choice() {
    let r = get("/models?model=gpt2&batch=4").await;
    for p in Catalog::builtin().presets() {
        assert!(r.body.contains(&format!("data-model=\"{}\"", p.name)));
    }
    assert!(r.body.contains("<tr data-model=\"gpt2\" aria-current=\"true\">"));
    assert!(r.body.contains("href=\"/ledger?model=mistral-7b&amp;batch=4\""));
    let r = get("/gpus?gpu=l4").await;
    assert_eq!(r.body.matches("<tr data-gpu=").count(), Catalog::builtin().gpus().len());
    assert!(r.body.contains("<tr data-gpu=\"l4\" aria-current=\"true\">"));
}

const GPT2_CONFIG: &str = r#"{
  "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "_name_or_path": "my-gpt2",
  "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257
}"#;

fn multipart(fields: &[(&str, &str)], file: Option<&str>) -> Request<Body> {
    let b = "XyZboundary42";
    let mut body = String::new();
    for (k, v) in fields {
        body.push_str(&format!("--{b}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"));
    }
    if let Some(f) = file {
        body.push_str(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"config\"; filename=\"config.json\"\r\nContent-Type: application/json\r\n\r\n{f}\r\n"
        ));
    }
    body.push_str(&format!("--{b}--\r\n"));
    Request::post("/upload")
        .header(header::CONTENT_TYPE, format!("multipart/form-data; boundary={b}"))
        .body(Body::from(body))
        .unwrap()
}

/// The ledger the CLI prints for `--model config.json` with these flags.
fn cli_report_for_config(config: &str, pairs: &[(&str, &str)]) -> LedgerReport {
    let mut c = Catalog::builtin();
    let mut spec = parse_config_json(config, "uploaded").unwrap();
    spec.name = "uploaded".into();
    c.add_model(spec);
    let q = serde_urlencoded::to_string(pairs).unwrap();
    let mut req: ScenarioRequest = serde_urlencoded::from_str(&q).unwrap();
    req.model = Some("uploaded".into());
    let sc = req.resolve(&c).unwrap();
    LedgerReport::new(&sc, &Ledger::build(&sc))
}

#[tokio::test]
async fn an_uploaded_config_travels_in_the_url_and_gives_the_clis_numbers() {
    let r = send(multipart(&[("page", "ledger"), ("batch", "16"), ("model", "llama-3-8b")], Some(GPT2_CONFIG))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let location = r.headers[header::LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("/ledger?batch=16&config="), "{location}");
    let page = get(&location).await;
    assert_eq!(page.status, StatusCode::OK);
    let expected = cli_report_for_config(GPT2_CONFIG, &[("batch", "16")]);
    assert_eq!(value_of(&page.body, "step-time"), expected.step_time_s);
    assert!(page
        .body
        .contains("<option value=\"uploaded\" selected>uploaded — uploaded config.json (my-gpt2)</option>"));
    // The config rides along in the form and in every link, so later GETs keep the model.
    assert!(page.body.contains("<input type=\"hidden\" name=\"config\""));
    let cfg = location.split("config=").nth(1).unwrap();
    assert!(page.body.contains(&format!("href=\"/models?batch=16&amp;config={cfg}\"")));
    let api = get(&location.replacen("/ledger", "/api/ledger", 1)).await;
    assert_eq!(api.body, expected.render(Format::Json).unwrap());
    let models = get(&format!("/api/models?config={cfg}")).await;
    assert!(models.body.contains("\"name\": \"uploaded\""));

    // The same as a JSON body: to /upload (redirect) and to /api/ledger (the document).
    let r = send(
        Request::post("/upload?page=gpus&batch=16")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(GPT2_CONFIG))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.headers[header::LOCATION].to_str().unwrap().starts_with("/gpus?batch=16&config="));
    let r = send(
        Request::post("/api/ledger?batch=16")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(GPT2_CONFIG))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, expected.render(Format::Json).unwrap());
}

#[tokio::test]
async fn bad_uploads_are_refused_with_the_reason() {
    let r = send(multipart(&[("page", "ledger")], Some("{\"model_type\": \"llama\"}"))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        page_error(&r.body).starts_with("in the uploaded config.json: missing required field"),
        "{}",
        page_error(&r.body)
    );
    let r = send(multipart(&[("page", "ledger")], Some("not json"))).await;
    assert!(
        page_error(&r.body).starts_with("in the uploaded config.json: malformed config.json"),
        "{}",
        page_error(&r.body)
    );
    let r = send(multipart(&[("page", "ledger")], None)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(page_error(&r.body).starts_with("no config.json was uploaded"));
    let r = send(multipart(&[("page", "ledger"), ("batch", "0")], Some(GPT2_CONFIG))).await;
    assert!(page_error(&r.body).starts_with("invalid `batch`: 0"), "the other fields are checked too");
    // A page name is only ever matched against the page list.
    let r = send(multipart(&[("page", "../../etc")], Some(GPT2_CONFIG))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.headers[header::LOCATION].to_str().unwrap().starts_with("/?config="));
    // Too large: refused before parsing, with the limit in the message.
    let big = format!("{{\"model_type\": \"gpt2\", \"pad\": \"{}\"}}", "x".repeat(70 * 1024));
    let r = send(multipart(&[("page", "ledger")], Some(&big))).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.body);
    assert!(page_error(&r.body).contains("at most 65536 bytes (64 KiB)"), "{}", page_error(&r.body));
    let huge = "x".repeat(1 << 20);
    let r = send(
        Request::post("/api/ledger").header(header::CONTENT_TYPE, "application/json").body(Body::from(huge)).unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    /// The scenario's fields, every page's and endpoint's own keys, and one unknown key.
    fn fields() -> Vec<&'static str> {
        let own = PAGES.iter().flat_map(|p| p.keys.iter().copied());
        let api = ["batch", "ctx", "at", "m", "n", "k", "experts", "top_k"];
        let mut f: Vec<&str> =
            SCENARIO_FIELDS.iter().copied().chain(own).chain(api).chain(["config", "format", "x"]).collect();
        f.sort_unstable();
        f.dedup();
        f
    }

    /// Every JSON endpoint and plot.
    const ENDPOINTS: &[&str] = &[
        "/api/ledger",
        "/api/zoom",
        "/api/sweep",
        "/plot/batch-curve.svg",
        "/api/kv",
        "/api/cost",
        "/api/latency",
        "/api/tile",
        "/api/moe",
        "/plot/roofline.svg",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]
        /// Whatever the query, every page and the API answer 200 or a 4xx, never a 5xx.
        #[test]
        fn arbitrary_queries_never_make_a_server_error(
            pairs in proptest::collection::vec((0..64usize, "[ -~]{0,12}|[0-9]{1,25}|[0-9]{1,6}x[0-9]{1,6}|[0-9]{1,4}\\.\\.[0-9]{1,5}"), 0..4),
            page in 0..PAGES.len() + ENDPOINTS.len(),
        ) {
            let fields = fields();
            let q: Vec<(&str, String)> = pairs.iter().map(|(i, v)| (fields[*i % fields.len()], v.clone())).collect();
            let q = serde_urlencoded::to_string(&q).unwrap();
            let path = PAGES.get(page).map(|p| p.path()).unwrap_or_else(|| ENDPOINTS[page - PAGES.len()].into());
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let r = rt.block_on(get(&format!("{path}?{q}")));
            prop_assert!(r.status.is_success() || r.status.is_client_error(), "{path}?{q} → {}", r.status);
        }
    }
}

// ---- The pages of the zoom, sweeps, memory, money, tiling and MoE (and their endpoints). ----

/// The scenario the CLI resolves for these flags.
fn scenario(pairs: &[(&str, &str)]) -> llm_ledger_core::Scenario {
    let q = serde_urlencoded::to_string(pairs).unwrap();
    let req: ScenarioRequest = serde_urlencoded::from_str(&q).unwrap();
    req.resolve(&Catalog::builtin()).unwrap()
}

/// The error of a JSON endpoint: (status, message, field).
async fn api_error(uri: &str) -> (StatusCode, String, Option<String>) {
    let r = get(uri).await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{uri}: {e}: {}", r.body));
    (r.status, v["error"]["message"].as_str().unwrap_or("").to_string(), v["error"]["field"].as_str().map(String::from))
}

/// A page refusal: status 400, the message on the page and the control it names marked.
#[track_caller]
fn assert_page_refuses(r: &Reply, message: &str, field: &str) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", page_error(&r.body));
    assert!(page_error(&r.body).starts_with(message), "{}", page_error(&r.body));
    assert!(r.body.contains(&format!("data-field=\"{field}\"")), "field {field}: {}", page_error(&r.body));
}

/// `data-value`s of the cells with `class` (in document order).
fn values_of_class(html: &str, class: &str) -> Vec<f64> {
    let marker = format!("class=\"{class}\" data-value=\"");
    html.split(&marker).skip(1).map(|s| s[..s.find('"').unwrap()].parse().unwrap()).collect()
}

#[tokio::test]
async fn powers_of_ten_shows_the_zoom_report_at_every_level() {
    use llm_ledger_core::ZoomTree;
    use llm_ledger_report::ZoomReport;
    for (pairs, at) in [
        (vec![], "model"),
        (vec![], "layer.0"),
        (vec![], "layer.0.mlp"),
        (vec![], "layer.0.mlp.up"),
        (vec![], "layer.0.mlp.up.tiles"),
        (vec![("phase", "prefill"), ("ctx", "1000")], "layer.3.attn.attention.tiles"),
        (vec![("model", "mixtral-8x7b"), ("batch", "16")], "layer.0.mlp"),
    ] {
        let sc = scenario(&pairs);
        let tree = ZoomTree::build(&sc);
        let expected = ZoomReport::new(&sc, &tree, &tree.node(at).unwrap());
        let mut q = pairs.clone();
        q.push(("at", at));
        let q = serde_urlencoded::to_string(&q).unwrap();
        let r = get(&format!("/powers-of-ten?{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
        assert_eq!(value_of(&r.body, "node-flops"), expected.node.flops, "{q}");
        assert_eq!(value_of(&r.body, "node-bytes"), expected.node.bytes, "{q}");
        assert_eq!(value_of(&r.body, "node-time"), expected.node.time_s, "{q}");
        // One row per child, each a link one level down (tile classes are not); at layer level
        // under its block's heading.
        let rows = r.body.split("<table class=\"ledger results-first\" id=\"children\"").nth(1).unwrap();
        let rows = &rows[..rows.find("</tbody>").unwrap()];
        let headings = rows.matches("<tr class=\"block-heading").count();
        assert_eq!(rows.matches("<tr").count() - 1 - headings, expected.children.len(), "{q}");
        let blocks = expected.children.windows(2).filter(|w| w[0].block != w[1].block).count() + 1;
        assert_eq!(headings, if expected.level == llm_ledger_core::zoom::Level::Layer { blocks } else { 0 }, "{q}");
        for c in expected.children.iter().filter_map(|c| c.path.as_deref()) {
            assert!(rows.contains(&format!("at={c}\"")), "{q}: no link to {c}");
        }
        // The breadcrumb links back up every level but the current one.
        let crumbs = r.body.split("<ol id=\"breadcrumb\">").nth(1).unwrap();
        let crumbs = &crumbs[..crumbs.find("</ol>").unwrap()];
        assert_eq!(crumbs.matches("<a ").count(), expected.breadcrumb.len() - 1, "{q}");
        // The JSON and CSV are the CLI's `zoom --at` documents.
        let api = get(&format!("/api/zoom?{q}")).await;
        assert_eq!(api.body, expected.render(Format::Json).unwrap(), "{q}");
        assert_eq!(get(&format!("/api/zoom?{q}&format=csv")).await.body, expected.render(Format::Csv).unwrap());
        for line in &expected.explanation {
            let escaped = line.trim_start().replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
            assert!(r.body.contains(&escaped), "{q}: the add-up sentence {line:?} is on the page");
        }
    }
}

#[tokio::test]
async fn powers_of_ten_explains_the_tile_level_and_links_to_the_tiling_page() {
    let r = get("/powers-of-ten?at=layer.0.mlp.up.tiles").await;
    // Decode, batch 1: the up-projection is 1 × 14,336 × 4,096 (Llama 3 8B's intermediate and hidden sizes).
    assert!(
        r.body.contains("href=\"/gemm-tiling?weights=bf16&amp;activations=bf16&amp;m=1&amp;n=14336&amp;k=4096\""),
        "{}",
        r.body
    );
    // The add-up panel compares the operator with its tiles: bytes grow by the reuse factor.
    let sc = scenario(&[]);
    let tree = llm_ledger_core::ZoomTree::build(&sc);
    let op = tree.node("layer.0.mlp.up").unwrap();
    assert!(!op.addup.exact);
    assert_eq!(value_of(&r.body, "bytes-ratio"), op.addup.bytes_ratio());
    assert_eq!(value_of(&r.body, "flops-ratio"), op.addup.flops_ratio());
    let g = *op.op().unwrap().tiles.gemm().unwrap();
    assert_eq!(value_of(&r.body, "reuse-factor"), g.reuse_factor);
    assert_eq!(g.reuse_factor, g.tiled_bytes / g.ideal_bytes);
    assert!(
        r.body.contains("Why don&#39;t the bytes add up at the tile level?")
            || r.body.contains("Why don't the bytes add up")
    );
    // The model level explains FLOPs per token against 2 × parameters, part by part.
    let m = get("/powers-of-ten").await;
    assert!(m.body.contains("id=\"gap\""));
    assert!(m
        .body
        .contains("parameter count × 2? </strong>That shortcut counts the layer stack, which is what this page sums."));
    assert!(m.body.contains("data-exact=\"true\""), "model = Σ children exactly");
}

#[tokio::test]
async fn powers_of_ten_experiments_keep_the_zoom_path_and_show_the_intensity_after() {
    use llm_ledger_core::ZoomTree;
    use llm_ledger_report::ZoomReport;
    let r = get("/powers-of-ten?at=layer.0.mlp").await;
    // Switch to prefill: the link keeps `at`, and the page states the node's intensity after.
    let href = r.body.split("id=\"exp-phase\" href=\"").nth(1).unwrap();
    let href = href[..href.find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(href, "/powers-of-ten?phase=prefill&at=layer.0.mlp");
    let sc = scenario(&[("phase", "prefill")]);
    let tree = ZoomTree::build(&sc);
    let after = ZoomReport::new(&sc, &tree, &tree.node("layer.0.mlp").unwrap()).node.intensity.unwrap();
    let shown = r.body.split("class=\"after\" data-value=\"").nth(1).unwrap();
    assert_eq!(shown[..shown.find('"').unwrap()].parse::<f64>().unwrap(), after);
    // Decode to prefill raises the intensity by orders of magnitude (2,048 query rows share the weights).
    assert!(after > 100.0 * value_of(&r.body, "node-intensity"));
    for id in ["exp-batch", "exp-int4", "exp-tiles"] {
        assert!(r.body.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(r.body.contains("at=layer.0.mlp.up.tiles\""), "the tile experiment goes to the up-projection's tiles");
}

/// The `data-path` of the node Powers of ten shows.
fn node_path(html: &str) -> String {
    let at = html.find("id=\"node\" data-path=\"").expect("the node");
    let rest = &html[at + "id=\"node\" data-path=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// The zoom notice's text, if any.
fn zoom_notice(html: &str) -> Option<String> {
    let at = html.find("id=\"zoom-notice\"")?;
    let rest = &html[at..];
    let rest = &rest[rest.find('>').unwrap() + 1..];
    Some(rest[..rest.find("</p>").unwrap()].replace("&#39;", "'"))
}

/// A control change while zoomed keeps the deepest zoom path that still exists
/// and says what changed — never "unknown zoom path". The JSON endpoint, like `zoom --at`, still
/// refuses a path that is not there.
#[tokio::test]
async fn a_control_change_at_a_deep_zoom_keeps_the_deepest_valid_level() {
    let cases: &[(&str, &str, &str)] = &[
        // FlashAttention on (the default) fuses the unfused operators away.
        ("flash=on&at=layer.0.attn.scores", "layer.0.attn", "FlashAttention is on"),
        // Off, the fused operator and its tiles are gone.
        ("flash=off&at=layer.0.attn.attention.tiles", "layer.0.attn", "FlashAttention is off"),
        // A MoE model at a dense model's up-projection.
        ("model=mixtral-8x7b&at=layer.0.mlp.up.tiles", "layer.0.mlp", "mixture-of-experts"),
        // A model with fewer layers.
        ("at=layer.99&batch=4", "model", "has 32 layers"),
        // A layer another pipeline stage runs (the page shows one GPU of the busiest stage).
        ("pp=2&batch=4&at=layer.3.mlp.up", "model", "runs layer.16 … layer.31"),
        // Not a path at all.
        ("at=nonsense", "model", "no `nonsense`"),
    ];
    for (q, shown, why) in cases {
        let r = get(&format!("/powers-of-ten?{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
        assert!(!r.body.contains("unknown zoom path"), "{q}");
        assert_eq!(node_path(&r.body), *shown, "{q}");
        let notice = zoom_notice(&r.body).unwrap_or_else(|| panic!("{q}: no notice"));
        assert!(notice.contains(why), "{q}: {notice}");
        assert!(notice.contains(&format!("Showing `{shown}`")), "{q}: {notice}");
    }
    // A path that exists has no notice.
    let r = get("/powers-of-ten?flash=off&at=layer.0.attn.scores").await;
    assert_eq!(node_path(&r.body), "layer.0.attn.scores");
    assert!(zoom_notice(&r.body).is_none());
    // A MoE model's own operators are reachable as children (the level shown is a real one).
    let r = get("/powers-of-ten?model=mixtral-8x7b&at=layer.0.mlp.up.tiles").await;
    assert!(r.body.contains("data-path=\"layer.0.mlp."), "children of the MoE MLP are listed");
    let (status, message, field) = api_error("/api/zoom?at=layer.0.mlp.nope").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("at")));
    assert!(
        message.starts_with(
            "unknown zoom path `layer.0.mlp.nope`; did you mean `layer.0.mlp.norm`? accepted: layer.0.mlp.norm"
        ),
        "{message}"
    );
    let (status, _, field) = api_error("/api/zoom?at=model&batch=0").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("batch")));
}

/// A scenario that does not fit (Llama 3.1 405B on one L4) gets the banner on
/// every page that shows its numbers, from the core's fit rule; one that fits gets none.
#[tokio::test]
async fn every_page_says_when_the_scenario_does_not_fit() {
    // Pages whose numbers are not this scenario's step (one GEMM; a search over GPUs) have no banner.
    for page in PAGES.iter().filter(|p| p.controls && !matches!(p.fit, llm_ledger_web::pages::PageFit::None)) {
        let r = get(&format!("/{}?model=llama-3.1-405b&gpu=l4", page.slug)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", page.slug);
        assert!(r.body.contains("id=\"fit-banner\""), "/{}: no banner", page.slug);
        assert!(r.body.contains("Does not fit in memory."), "/{}", page.slug);
        let needed = value_attr(&r.body, "fit-banner", "data-needed");
        let sc = scenario(&[("model", "llama-3.1-405b"), ("gpu", "l4")]);
        let fit = llm_ledger_core::memory::Fit::step(&sc, 2e9);
        if page.slug != "cost" {
            assert_eq!(needed, fit.needed_bytes(), "/{}: the core's footprint", page.slug);
        }
        let ok = get(&format!("/{}", page.slug)).await;
        assert!(!ok.body.contains("id=\"fit-banner\""), "/{}: a banner for a scenario that fits", page.slug);
    }
    // The banner names the largest batch that fits when the batch is the problem.
    let r = get("/?batch=4096").await;
    assert!(r.body.contains("id=\"fit-max-batch\""), "{}", r.body);
    let sc = scenario(&[("batch", "4096")]);
    let fit = llm_ledger_core::memory::Fit::step(&sc, 2e9);
    assert_eq!(value_of(&r.body, "fit-max-batch"), fit.max_batch.unwrap() as f64);
}

/// Every control has a label in words (not the raw field name) and one line of
/// help, "more inputs" included; text boxes say what they accept.
#[tokio::test]
async fn every_control_has_a_label_and_help() {
    let r = get("/").await;
    let form = &r.body[r.body.find("id=\"controls\"").unwrap()..r.body.find("id=\"upload\"").unwrap()];
    let mut labels = 0;
    for part in form.split("<label for=\"f-").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        let text = &part[part.find('>').unwrap() + 1..part.find("</label>").unwrap()];
        assert!(!text.contains('_') && text != name || name.len() <= 3 && text.len() > 3, "{name}: label {text:?}");
        // A toggle's label points at its checked radio button (`f-phase-decode`); the help is the group's.
        let group =
            if form.contains(&format!("id=\"f-{name}-help\"")) { name } else { name.rsplit_once('-').unwrap().0 };
        let help = format!("id=\"f-{group}-help\">");
        let h = &form[form.find(&help).unwrap_or_else(|| panic!("{name}: no help")) + help.len()..];
        assert!(h.find("</small>").unwrap() > 10, "{name}: help too short");
        labels += 1;
    }
    // A toggle (a pair of radio buttons) is a group named by its label.
    for part in form.split("<span class=\"label\" id=\"f-").skip(1) {
        let id = &part[..part.find('"').unwrap()];
        let name = id.strip_suffix("-label").unwrap();
        assert!(form.contains(&format!("role=\"radiogroup\" aria-labelledby=\"f-{name}-label\"")), "{name}");
        assert!(form.contains(&format!("id=\"f-{name}-help\"")), "{name}: no help");
        labels += 1;
    }
    assert!(labels >= llm_ledger_core::scenario::scenario_inputs().len(), "{labels} labels");
    assert!(form.contains("Tensor-parallel GPUs (TP)"));
    assert!(form.contains("(a positive integer)"), "a text box says what it accepts");
}

/// The KV chart's caption speaks of the red line only when the chart draws it.
#[tokio::test]
async fn the_kv_caption_matches_the_wall_on_the_chart() {
    let near = get("/kv-cache?batch=64").await;
    assert!(near.body.contains("memory full: "), "the wall is drawn");
    assert!(near.body.contains("Past the red dashed line ("), "{}", near.body);
    let far = get("/kv-cache?batch=1").await;
    assert!(far.body.contains("memory full at "), "the wall is named at the edge");
    assert!(!far.body.contains("red dashed line") && far.body.contains("beyond the right edge of the chart"));
}

/// The no-JavaScript path: every control of the form is a form field
/// (the sliders, which have no name, are hidden until the script shows them; the toggles are radio
/// buttons), and every block of the picture but the node itself is a link to its zoom path.
#[tokio::test]
async fn without_javascript_every_control_is_a_field_and_every_block_a_link() {
    let r = get("/powers-of-ten?at=layer.0").await;
    let form = &r.body[r.body.find("id=\"controls\"").unwrap()..r.body.find("id=\"upload\"").unwrap()];
    for tag in form.split('<').filter(|t| t.starts_with("input ") || t.starts_with("select ")) {
        let tag = &tag[..tag.find('>').unwrap()];
        if tag.contains("class=\"slider\"") {
            assert!(tag.contains(" hidden") && !tag.contains(" name="), "a slider is the script's: {tag}");
        } else {
            assert!(tag.contains(" name=\""), "not a form field: {tag}");
        }
    }
    assert!(form.contains("type=\"radio\" name=\"flash\" value=\"off\""), "FlashAttention is a toggle");
    assert!(form.contains("id=\"f-batch-slider\""), "the batch has a slider");
    for at in ["model", "layer.0", "layer.0.attn"] {
        let r = get(&format!("/powers-of-ten?at={at}")).await;
        let svg = r.body.split("<svg class=\"plot icicle\"").nth(1).unwrap_or_else(|| panic!("{at}: no picture"));
        let svg = &svg[..svg.find("</svg>").unwrap()];
        let blocks = svg.matches("<rect class=\"blk").count();
        let links = svg.matches("<a href=\"/powers-of-ten?at=").count();
        assert!(blocks >= 3, "{at}: {blocks} blocks");
        assert_eq!(links, blocks - 1, "{at}: every block but the node is a link");
        assert!(svg.contains("<title>"), "{at}: numbers on hover");
    }
    // The operator's tile grid links to its tiles.
    let r = get("/powers-of-ten?at=layer.0.mlp.up").await;
    assert!(r.body.contains("class=\"zoomto\" href=\"/powers-of-ten?at=layer.0.mlp.up.tiles\""));
}

/// Identical layers are one block "× 32" (and one table row, the rest
/// folded until expanded); the model level is the layer stack (the Powers of Ten walk-through), the node itself, with
/// the rest of the step beside it and the step = the ledger's total.
#[tokio::test]
async fn identical_layers_fold_and_the_stack_is_the_model_level() {
    let r = get("/powers-of-ten").await;
    assert!(r.body.contains("layer.0–31 × 32"), "one block for 32 identical layers");
    assert_eq!(r.body.matches("class=\"repeat\"").count(), 31, "31 rows folded into layer.0's");
    assert!(r.body.contains("× 32</span>"));
    let expanded = get("/powers-of-ten?expand=1").await;
    assert_eq!(expanded.body.matches("class=\"repeat\"").count(), 0);
    assert!(!expanded.body.contains(" × 32"));
    let sc = scenario(&[]);
    let tree = llm_ledger_core::ZoomTree::build(&sc);
    // One model total on the page: the layer stack's, in the headline and in the rest panel.
    assert_eq!(value_of(&r.body, "node-flops"), tree.stack.cost.flops);
    assert!(!r.body.contains("id=\"cli-differs\""));
    let rest = &r.body[r.body.find("id=\"rest-of-step\"").expect("the rest of the step")..];
    for part in ["embedding", "final_norm", "lm_head"] {
        assert!(rest.contains(&format!("data-path=\"{part}\"")), "{part} beside the model");
    }
    assert_eq!(value_attr(&r.body, "step-check", "data-flops"), tree.step.step.cost.flops);
    assert_eq!(
        value_attr(&r.body, "step-check", "data-ledger-flops"),
        llm_ledger_core::Ledger::build(&sc).summary.cost.flops
    );
    assert!(r.body.contains("id=\"step-check\" data-exact=\"true\""));
    // Sizing by bytes keeps the zoom and the expansion in every link.
    let r = get("/powers-of-ten?at=layer.0&size=bytes").await;
    assert!(r.body.contains("data-size=\"bytes\""));
    assert!(r.body.contains("href=\"/powers-of-ten?at=layer.0.attn.q&amp;size=bytes\""), "zoom links keep the size");
}

/// Under tensor parallelism the page's model + rest is the ledger's step, the collectives
/// included, and the explorer labels each time by the clock that produced it.
#[tokio::test]
async fn powers_of_ten_under_tp_adds_up_to_the_ledger_and_names_its_clock() {
    let r = get("/powers-of-ten?tp=2").await;
    let sc = scenario(&[("tp", "2")]);
    let ledger = llm_ledger_core::Ledger::build(&sc).summary;
    assert_eq!(value_attr(&r.body, "step-check", "data-flops"), ledger.cost.flops);
    assert!(r.body.contains("id=\"step-check\" data-exact=\"true\""));
    let rest = &r.body[r.body.find("id=\"rest-of-step\"").unwrap()..];
    assert!(rest.contains("data-path=\"all_reduce_embedding\"") && rest.contains("data-path=\"all_gather_logits\""));
    // The default clock is the measured one: its time is the expected time, the roofline's beside it.
    assert!(r.body.contains("id=\"node-time-label\" data-clock=\"expected\""), "the expected clock");
    assert!(!r.body.contains(">roofline time<"), "no expected time labelled roofline");
    assert!(r.body.contains("id=\"node-roofline\""));
    let roof = get("/powers-of-ten?time_model=roofline").await;
    assert!(roof.body.contains("id=\"node-time-label\" data-clock=\"roofline\""));
    assert!(!roof.body.contains("id=\"node-roofline\""));
}

/// Every sentence of the experiments that says which way a number moves is written from the
/// numbers beside it: for a few scenarios and levels, each claim's word matches its before and
/// after.
#[tokio::test]
async fn no_experiment_sentence_contradicts_its_numbers() {
    let pages = [
        "/powers-of-ten",
        "/powers-of-ten?at=layer.0.mlp.up.tiles",
        "/powers-of-ten?at=layer.0.attn.attention&phase=prefill&ctx=4096",
        "/powers-of-ten?at=layer.0&batch=64&ctx=32768",
        "/powers-of-ten?model=mixtral-8x7b&at=layer.0.mlp",
        "/ledger",
        "/ledger?phase=prefill&ctx=512",
        "/ledger?batch=256&ctx=8192",
        "/",
    ];
    let mut claims = 0;
    for page in pages {
        let r = get(page).await;
        assert_eq!(r.status, StatusCode::OK, "{page}");
        for c in r.body.split("<span class=\"claim\" ").skip(1) {
            let attr = |name: &str| {
                let v = c.split(&format!("{name}=\"")).nth(1).unwrap();
                v[..v.find('"').unwrap()].to_string()
            };
            let (before, after): (f64, f64) =
                (attr("data-before").parse().unwrap(), attr("data-after").parse().unwrap());
            let word = &c[c.find('>').unwrap() + 1..c.find("</span>").unwrap()];
            let trend = attr("data-trend");
            let expected = if (after - before).abs() <= 0.01 * before.abs().max(after.abs()) {
                "flat"
            } else if after > before {
                "up"
            } else {
                "down"
            };
            assert_eq!(trend, expected, "{page}: {word:?} for {before} → {after}");
            let words: &[&str] = match expected {
                "up" => &["rises", "recovers", "climbs", "rise", "grow", "slows"],
                "down" => &["falls", "collapses", "fall", "shrink", "speeds up"],
                _ => &["barely moves", "barely move", "barely changes"],
            };
            assert!(words.contains(&word), "{page}: {word:?} says {expected}? {before} → {after}");
            claims += 1;
        }
    }
    assert!(claims >= 20, "{claims} claims checked");
    // The tile experiment is not offered as a link on the tile level itself.
    let r = get("/powers-of-ten?at=layer.0.mlp.up.tiles").await;
    assert!(!r.body.contains("id=\"exp-tiles\""), "no \"Go to the tile level\" at the tile level");
    assert!(r.body.contains("You are at the tile level of"));
}

/// A pinned scenario (in the URL) puts its numbers, the change and the ratio
/// beside every number of the node; the experiments compare with one click; the INT4 experiment
/// finds a batch where the up-projection really flips from memory- to compute-bound.
#[tokio::test]
async fn pin_and_compare() {
    use llm_ledger_core::ZoomTree;
    use llm_ledger_report::ZoomReport;
    let r = get("/powers-of-ten?at=layer.0.mlp.up").await;
    assert!(
        r.body.contains("id=\"pin\" href=\"/powers-of-ten?at=layer.0.mlp.up&amp;pin=default\""),
        "pin the default scenario"
    );
    let r = get("/powers-of-ten?batch=2&at=layer.0.mlp.up&pin=default").await;
    assert!(r.body.contains("id=\"node-time-delta\""), "the default scenario pinned");
    let r = get("/powers-of-ten?batch=8&at=layer.0.mlp.up&pin=batch%3D1").await;
    let node = |pairs: &[(&str, &str)]| {
        let sc = scenario(pairs);
        let tree = ZoomTree::build(&sc);
        ZoomReport::new(&sc, &tree, &tree.node("layer.0.mlp.up").unwrap()).node
    };
    let (now, then) = (node(&[("batch", "8")]), node(&[("batch", "1")]));
    assert_eq!(value_attr(&r.body, "node-time-delta", "data-pinned"), then.time_s);
    assert_eq!(value_attr(&r.body, "node-time-delta", "data-ratio"), now.time_s / then.time_s);
    assert_eq!(value_attr(&r.body, "node-flops-delta", "data-ratio"), now.flops / then.flops);
    assert!((now.flops / then.flops - 8.0).abs() < 1e-9, "8 × the rows, 8 × the FLOPs");
    assert!(r.body.contains("id=\"unpin\""));
    assert!(r.body.contains("data-pin=\"batch=1\""));
    // Links keep the pin; the experiments' compare links pin the scenario shown.
    assert!(r.body.contains("pin=batch%3D1\""), "links keep the pin");
    let cmp = r.body.split("id=\"cmp-int4\" href=\"").nth(1).unwrap();
    let cmp = cmp[..cmp.find('"').unwrap()].replace("&amp;", "&");
    assert!(cmp.contains("weights=int4") && cmp.contains("pin=batch%3D8"), "{cmp}");
    // The INT4 flip: at the batch the page names, memory-bound in bf16, compute-bound in INT4,
    // and at half that batch INT4 is still memory-bound.
    let r = get("/powers-of-ten").await;
    let flip = r.body.split("id=\"int4-flip\" data-batch=\"").nth(1).expect("a flip batch");
    let b: u64 = flip[..flip.find('"').unwrap()].parse().unwrap();
    let bound = |w: &str, b: u64| {
        let b = b.to_string();
        let mut p = vec![("batch", b.as_str())];
        if !w.is_empty() {
            p.push(("weights", w));
        }
        let sc = scenario(&p);
        let tree = ZoomTree::build(&sc);
        ZoomReport::new(&sc, &tree, &tree.node("layer.0.mlp.up").unwrap()).node.bound.unwrap()
    };
    assert_eq!(bound("", b), "memory", "batch {b}");
    assert_eq!(bound("int4", b), "compute", "batch {b}");
    assert_eq!(bound("int4", b / 2), "memory", "batch {b} is the first");
    // The card's sides carry the numbers that decide the bound, and they agree with it.
    let card = &r.body[r.body.find("id=\"int4-flip\"").unwrap()..];
    let card = &card[..card.find("</span></span>").unwrap_or(card.len())];
    for side in card.split("<span class=\"flip-side\" ").skip(1) {
        let attr = |name: &str| -> String {
            let v = side.split(&format!("{name}=\"")).nth(1).unwrap();
            v[..v.find('"').unwrap()].to_string()
        };
        let (compute, memory): (f64, f64) =
            (attr("data-compute").parse().unwrap(), attr("data-memory").parse().unwrap());
        assert_eq!(attr("data-bound"), if compute > memory { "compute" } else { "memory" }, "{side}");
    }
    // Under the roofline clock the flip is the roofline's: at its batch, INT4 is past the ridge
    // at 60 % / 80 % of peak (the intensity is what decides it there).
    let roof = get("/powers-of-ten?time_model=roofline").await;
    let flip = roof.body.split("id=\"int4-flip\" data-batch=\"").nth(1).expect("a roofline flip");
    let rb: u64 = flip[..flip.find('"').unwrap()].parse().unwrap();
    let roof_bound = |w: &str, b: u64| {
        let b = b.to_string();
        let sc = scenario(&[("batch", b.as_str()), ("weights", w), ("time_model", "roofline")]);
        let tree = ZoomTree::build(&sc);
        ZoomReport::new(&sc, &tree, &tree.node("layer.0.mlp.up").unwrap()).node.bound.unwrap()
    };
    assert_eq!((roof_bound("int4", rb), roof_bound("int4", rb / 2)), ("compute".to_string(), "memory".to_string()));
    let see = r.body.split("id=\"cmp-int4-flip\" href=\"").nth(1).unwrap();
    let see = see[..see.find('"').unwrap()].replace("&amp;", "&");
    let shown = get(&see).await;
    assert_eq!(shown.status, StatusCode::OK, "{see}");
    assert!(shown.body.contains("id=\"bound-flip\""), "the flip is shown against the pin: {see}");
}

/// The attribute `name` of the element with `id`, as a number.
fn value_attr(html: &str, id: &str, name: &str) -> f64 {
    let at = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let v = html[at..].split(&format!("{name}=\"")).nth(1).unwrap();
    v[..v.find('"').unwrap()].parse().unwrap()
}

#[tokio::test]
async fn batching_draws_the_sweep_with_the_wall_and_the_crossover() {
    use llm_ledger_app::sweep::SweepRequest;
    // Seed counting: the wall at (80e9 − 2e9 − 15.0 GB) ÷ 268,435,456 B = 234.6 → the first batch that
    // does not fit is 235; the crossover at 15,009,316,864 ÷ (2,048 × 131,072) = 55.9 sequences.
    let r = get("/batching?counting=seed&batches=1..512*2").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(value_of(&r.body, "memory-wall"), 235.0);
    assert_eq!(format!("{:.1}", value_of(&r.body, "kv-crossover")), "55.9");
    assert!(r.body.contains("<svg class=\"plot batch-curve\""));
    assert!(r.body.contains("memory wall: batch 235"));
    let base = scenario(&[("counting", "seed")]);
    let plan = SweepRequest { batch: Some("1..512*2".into()), ..Default::default() }.plan(base).unwrap();
    let points = plan.points(100).unwrap();
    assert_eq!(r.body.matches("<tr data-batch=").count(), points.len());
    for p in &points {
        assert!(r.body.contains(&format!("data-value=\"{}\"", p.step_time_s)), "batch {}", p.batch);
    }
    // The current batch (1) is marked.
    assert!(r.body.contains("<tr data-batch=\"1\" aria-current=\"true\">"));
    // The JSON link is the CLI's sweep, byte for byte.
    let href = r.body.split("These numbers as <a href=\"").nth(1).unwrap();
    let href = href[..href.find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(href, "/api/sweep?counting=seed&batch=1..512*2&ctx=2048");
    assert_eq!(get(&href).await.body, plan.render(Format::Json, 100).unwrap());
    assert_eq!(get(&format!("{href}&format=csv")).await.body, plan.render(Format::Csv, 100).unwrap());
    let svg = get(&href.replace("/api/sweep", "/plot/batch-curve.svg")).await;
    assert_eq!(svg.headers[header::CONTENT_TYPE], "image/svg+xml");
    assert!(svg.body.starts_with("<?xml") && svg.body.contains("memory wall: batch 235"));
    // Changing a control changes the curve.
    let long = get("/batching?counting=seed&batches=1..512*2&ctx=8192").await;
    assert_eq!(
        format!("{:.2}", value_of(&long.body, "kv-crossover")),
        format!("{:.2}", 15_009_316_864.0 / (8192.0 * 131_072.0))
    );
}

#[tokio::test]
async fn batching_refuses_bad_axes_and_context_mixes() {
    let r = get("/batching?batches=0..8").await;
    assert_page_refuses(&r, "invalid `batch`: 0 (values from 1 to 1,073,741,824)", "batches");
    let r = get("/batching?batches=1..100000").await;
    assert_page_refuses(&r, "invalid `batch`: 100000 points (at most 2048 points here", "batches");
    let r = get("/batching?contexts=2048x8").await;
    assert_page_refuses(
        &r,
        "invalid `contexts`: a fixed mix of contexts (a sweep varies `batch` and `ctx`",
        "contexts",
    );
    let r = get("/batching?reserve=90GB").await;
    assert_page_refuses(&r, "invalid `reserve`", "reserve");
    let (status, message, field) = api_error("/api/sweep?batch=1,2&ctx=1024,x").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("ctx")));
    assert!(message.starts_with("invalid `ctx`: \"x\" (a non-negative integer)"), "{message}");
    let (_, message, _) = api_error("/plot/batch-curve.svg?batch=1,2&ctx=1024,2048").await;
    assert!(
        message.starts_with("invalid `ctx`: \"1024,2048\" (2 values) (one context length for a batch curve)"),
        "{message}"
    );
    let (_, _, field) = api_error("/api/sweep?batches=1").await;
    assert_eq!(field.as_deref(), Some("batches"), "a page key is not an API key");
}

#[tokio::test]
async fn kv_cache_page_and_endpoint_are_the_kv_report() {
    use llm_ledger_report::kv::KvReport;
    for pairs in [
        vec![],
        vec![("batch", "64"), ("kv", "fp8")],
        vec![("model", "gpt-oss-20b"), ("ctx", "32768"), ("reserve", "4GB")],
    ] {
        let (scenario_pairs, reserve) = match pairs.iter().position(|(k, _)| *k == "reserve") {
            Some(i) => {
                let mut p = pairs.clone();
                p.remove(i);
                (p, 4e9)
            }
            None => (pairs.clone(), 2e9),
        };
        let expected = KvReport::new(&scenario(&scenario_pairs), reserve);
        let q = serde_urlencoded::to_string(&pairs).unwrap();
        let r = get(&format!("/kv-cache?{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}");
        assert_eq!(value_of(&r.body, "kv-per-token"), expected.row.kv_bytes_per_token);
        assert_eq!(value_of(&r.body, "crossover-tokens"), expected.row.crossover_tokens);
        assert_eq!(value_of(&r.body, "max-cached-tokens"), expected.row.max_cached_tokens as f64);
        assert_eq!(value_of(&r.body, "memory"), expected.row.memory_bytes);
        assert!(r.body.contains("<svg class=\"plot kv-chart\""));
        assert_eq!(get(&format!("/api/kv?{q}")).await.body, expected.render(Format::Json).unwrap(), "{q}");
    }
    // The reference calculator: 32 layers × 2 × 8 KV heads × 128 × 2 bytes = 131,072 B per token.
    assert_eq!(value_of(&get("/kv-cache").await.body, "kv-per-token"), 131_072.0);
    let r = get("/kv-cache?reserve=lots").await;
    assert_page_refuses(&r, "invalid `reserve`: \"lots\" (a size with a unit: B, kB, MB, GB", "reserve");
    // A bare number is not taken as bytes (the CLI's --reserve shares the parser).
    let r = get("/kv-cache?reserve=4").await;
    assert_page_refuses(&r, "invalid `reserve`: \"4\" (a size needs a unit, e.g. 4GB or 4GiB", "reserve");
    let (status, _, field) = api_error("/api/kv?reserve=81GB").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("reserve")));
}

#[tokio::test]
async fn cost_page_and_endpoints_are_the_cost_and_latency_reports() {
    use llm_ledger_core::serving::ServingRequest;
    use llm_ledger_report::cost::CostReport;
    use llm_ledger_report::latency::LatencyReport;
    let sc = scenario(&[("batch", "16")]);
    let serving = ServingRequest { usd_per_hour: Some("3".into()), tpot_ms: Some("20".into()), ..Default::default() }
        .resolve(&sc)
        .unwrap();
    let expected = CostReport::build(&sc, &serving).unwrap();
    let r = get("/cost?batch=16&usd_per_hour=3&tpot_ms=20").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(value_of(&r.body, "usd-per-million-output"), expected.usd_per_million_output_tokens.unwrap());
    assert_eq!(value_of(&r.body, "usd-per-million-input"), expected.usd_per_million_input_tokens);
    assert_eq!(value_of(&r.body, "usd-per-request"), expected.usd_per_request);
    assert_eq!(value_of(&r.body, "cheapest-batch"), expected.rows[1].batch as f64);
    assert!(expected.rows[1].tpot_s.unwrap() <= 0.020);
    assert_eq!(get("/api/cost?batch=16&usd_per_hour=3&tpot_ms=20").await.body, expected.render(Format::Json).unwrap());
    let latency = LatencyReport::build(&sc, &serving).unwrap();
    assert_eq!(value_of(&r.body, "ttft"), latency.latency.ttft_s);
    assert_eq!(value_of(&r.body, "tpot"), latency.latency.tpot_s.unwrap());
    assert_eq!(get("/api/latency?batch=16").await.body, latency.render(Format::Json).unwrap());
    // The JSON link is the CLI's cost with the page's serving keys.
    let href = r.body.split("These numbers as <a href=\"").nth(1).unwrap();
    assert_eq!(&href[..href.find('"').unwrap()], "/api/cost?batch=16&amp;usd_per_hour=3&amp;tpot_ms=20");
    // $/M output = $3/h ÷ 3600 × TPOT ÷ batch × 10⁶.
    let at = &expected.rows[0];
    assert!((at.usd_per_million_output_tokens.unwrap() - 3.0 / 3600.0 * at.tpot_s.unwrap() / 16.0 * 1e6).abs() < 1e-12);
    // The cost table's rows: batch 1, 2, 4 … up to the largest that fits, and 16.
    assert!(r.body.contains("<tr data-batch=\"16\" aria-current=\"true\">"));
}

#[tokio::test]
async fn cost_says_when_no_batch_meets_the_bound_and_refuses_step_shapes_in_the_api() {
    let r = get("/cost?tpot_ms=1").await;
    assert_eq!(r.status, StatusCode::OK, "the page answers the rest");
    assert!(r.body.contains("id=\"no-batch\""));
    assert!(
        r.body.contains("invalid `tpot_ms`: 1.000 ms (a bound that some batch meets: even batch 1 takes"),
        "{}",
        r.body
    );
    let (status, message, field) = api_error("/api/cost?tpot_ms=1").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("tpot_ms")));
    assert!(message.contains("even batch 1 takes"));
    // The page leaves the step's shape out (kept for the other pages); the API refuses it as the CLI does.
    let page = get("/cost?phase=prefill&ctx=512").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("class=\"field unused\""));
    assert_eq!(value_of(&page.body, "ttft"), value_of(&get("/cost").await.body, "ttft"));
    let (status, message, field) = api_error("/api/cost?ctx=512").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("ctx")));
    assert!(
        message.starts_with("invalid `ctx`: given to `cost` (it builds its steps from `prompt` and `output`"),
        "{message}"
    );
    let (_, message, _) = api_error("/api/latency?phase=decode").await;
    assert!(message.starts_with("invalid `phase`: given to `latency`"), "{message}");
    let (_, message, field) = api_error("/api/latency?tpot_ms=5").await;
    assert!(message.starts_with("unknown field `tpot_ms`"), "latency takes no bound: {message}");
    assert_eq!(field.as_deref(), Some("tpot_ms"));
    let r = get("/cost?output=0").await;
    assert_page_refuses(&r, "invalid `output`: 0 (an integer from 1 to 1,099,511,627,776)", "output");
    let r = get("/cost?usd_per_hour=-1").await;
    assert_page_refuses(&r, "invalid `usd_per_hour`: -1", "usd_per_hour");
}

#[tokio::test]
async fn gemm_tiling_draws_the_grid_and_shows_the_tile_report() {
    use llm_ledger_core::tiling::GemmRequest;
    use llm_ledger_report::TileReport;
    let gpu = Catalog::builtin().gpu("h100-sxm").unwrap();
    let req = |m: &str, n: &str, k: &str, tile: Option<&str>| GemmRequest {
        m: Some(m.into()),
        n: Some(n.into()),
        k: Some(k.into()),
        tile: tile.map(String::from),
        ..Default::default()
    };
    // The default GEMM: Llama 3 8B's up-projection for a 2,048-token prompt.
    let expected = TileReport::build(&req("2048", "14336", "4096", None).resolve().unwrap(), &gpu).unwrap();
    let r = get("/gemm-tiling").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(value_of(&r.body, "tiles"), expected.tiling.tiles as f64);
    assert_eq!(value_of(&r.body, "waves"), expected.tiling.waves as f64);
    assert_eq!(value_of(&r.body, "reuse-factor"), expected.tiling.reuse_factor);
    assert_eq!(value_of(&r.body, "time"), expected.tiling.time_s);
    assert!(r.body.contains("<svg class=\"plot tile-grid\""));
    assert_eq!(r.body.matches("<rect class=\"tile\"").count() as u64, expected.tiling.tiles, "one rectangle per tile");
    assert_eq!(get("/api/tile?m=2048&n=14336&k=4096").await.body, expected.render(Format::Json).unwrap());
    // A forced tile on an uneven GEMM: 1000 = 7·128 + 104, so 8 × 8 tiles, 2·1024³ FLOPs executed
    // for 2·10⁹ useful, and the last tile row and column padded.
    let r = get("/gemm-tiling?m=1000&n=1000&k=1000&tile=128x128x64x4").await;
    assert_eq!(value_of(&r.body, "tiles"), 64.0);
    assert_eq!(value_of(&r.body, "padded-flops"), 2.0 * 1024f64.powi(3));
    assert_eq!(r.body.matches("<rect class=\"pad\"").count(), 16);
    let forced =
        TileReport::build(&req("1000", "1000", "1000", Some("128x128x64x4")).resolve().unwrap(), &gpu).unwrap();
    assert!(forced.forced);
    assert_eq!(value_of(&r.body, "reuse-factor"), forced.tiling.reuse_factor);
    let href = r.body.split("These numbers as <a href=\"").nth(1).unwrap();
    let href = href[..href.find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(href, "/api/tile?m=1000&n=1000&k=1000&gpu=h100-sxm&tile=128x128x64x4");
    assert_eq!(get(&href).await.body, forced.render(Format::Json).unwrap());
    // The scenario's GPU and storage are the GEMM's.
    let b200 = get("/gemm-tiling?gpu=b200&weights=fp8&activations=fp8&m=64&n=4096&k=4096").await;
    let b = Catalog::builtin().gpu("b200").unwrap();
    let mut rq = req("64", "4096", "4096", None);
    rq.weights = Some("fp8".into());
    rq.activations = Some("fp8".into());
    let e = TileReport::build(&rq.resolve().unwrap(), &b).unwrap();
    assert_eq!(value_of(&b200.body, "time"), e.tiling.time_s);
    assert!(b200.body.contains("fp8 math"));
}

#[tokio::test]
async fn gemm_tiling_refuses_bad_shapes_and_tiles() {
    assert_page_refuses(&get("/gemm-tiling?m=0").await, "invalid `m`: 0 (an integer from 1 to 1,099,511,627,776)", "m");
    assert_page_refuses(&get("/gemm-tiling?tile=huge").await, "invalid `tile`: \"huge\"", "tile");
    assert_page_refuses(&get("/gemm-tiling?output=int3").await, "unknown precision for `output` `int3`", "output");
    let (status, message, field) = api_error("/api/tile?n=8&k=8").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("m")));
    assert_eq!(message, "missing required field `m` for a GEMM (m, n and k)");
    let (_, message, field) = api_error("/api/tile?m=1&n=8&k=8&batch=2").await;
    assert!(message.starts_with("unknown field `batch`, expected one of `m`, `n`, `k`"), "{message}");
    assert_eq!(field.as_deref(), Some("batch"));
    let (_, message, field) = api_error("/api/tile?m=1&n=8&k=8&gpu=h900").await;
    assert!(message.starts_with("unknown GPU `h900`"), "{message}");
    assert_eq!(field.as_deref(), Some("gpu"));
}

#[tokio::test]
async fn moe_page_counts_the_union_and_the_expert_bytes() {
    use llm_ledger_app::moe::MoeRequest;
    // The reference calculator: 8 experts, top-2 → 2.0, 5.5, 7.2, 7.9 experts touched at batch 1, 4, 8, 16.
    let r = get("/moe?experts=8&top_k=2&batches=1,4,8,16").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let touched: Vec<String> = values_of_class(&r.body, "num touched").iter().map(|v| format!("{v:.1}")).collect();
    assert_eq!(touched, ["2.0", "5.5", "7.2", "7.9"]);
    assert!(r.body.contains("<svg class=\"plot moe-curve\"") && r.body.contains("E = 8 experts: every expert read"));
    let href = r.body.split("These numbers as <a href=\"").nth(1).unwrap();
    let href = href[..href.find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(href, "/api/moe?batch=1%2C4%2C8%2C16&experts=8&top_k=2");
    // With a model: the CLI's report, expert weight bytes included.
    let base = scenario(&[("model", "mixtral-8x7b"), ("zipf", "1")]);
    let expected = MoeRequest::default().run(&base, false, 100).unwrap();
    let r = get("/moe?model=mixtral-8x7b&zipf=1").await;
    assert_eq!(
        values_of_class(&r.body, "num touched"),
        expected.points.iter().map(|p| p.union.experts_touched).collect::<Vec<_>>()
    );
    for p in &expected.points {
        let m = p.model.unwrap();
        assert!(r.body.contains(&format!("data-value=\"{}\"", m.expert_weight_bytes)), "batch {}", p.batch);
    }
    assert!(r.body.contains("uniform routing<"), "a skewed curve is drawn against the uniform one");
    assert_eq!(get("/api/moe?model=mixtral-8x7b&zipf=1").await.body, expected.render(Format::Json).unwrap());
    assert_eq!(get("/api/moe?model=mixtral-8x7b&zipf=1&format=csv").await.body, expected.render(Format::Csv).unwrap());
}

#[tokio::test]
async fn moe_explains_a_dense_model_and_refuses_what_the_cli_refuses() {
    let r = get("/moe").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("id=\"dense\"") && r.body.contains("has no mixture-of-experts layers"));
    assert!(r.body.contains("href=\"/moe?model=mixtral-8x7b\""));
    let (status, message, _) = api_error("/api/moe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        message.starts_with("unsupported model `llama-3-8b` for moe: it has no mixture-of-experts layers"),
        "{message}"
    );
    let (_, message, field) = api_error("/api/moe?model=mixtral-8x7b&experts=8&top_k=2").await;
    // The CLI's message, the inputs it names spelled as the query keys.
    assert_eq!(message, "invalid `experts`: given together with model (a model brings its own experts and top-k)");
    assert_eq!(field.as_deref(), Some("experts"));
    assert_page_refuses(&get("/moe?experts=8").await, "missing required field `top_k` for moe without model", "top_k");
    assert_page_refuses(&get("/moe?experts=8&top_k=9").await, "invalid `top_k`: 9", "top_k");
    assert_page_refuses(&get("/moe?model=mixtral-8x7b&batches=0..5").await, "invalid `batch`: 0", "batches");
    // The page ignores the model when E and k are given (and says so).
    let r = get("/moe?model=mixtral-8x7b&experts=64&top_k=4").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("the model is not used"));
}

#[tokio::test]
async fn only_loopback_host_names_are_answered_dns_rebinding() {
    let with_host = |host: &str| Request::builder().uri("/ledger").header("host", host).body(Body::empty()).unwrap();
    let ok = send(with_host("localhost:8765")).await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(send(with_host("127.0.0.1:8765")).await.status, StatusCode::OK);
    let evil = send(with_host("attacker.example:8765")).await;
    assert_eq!(evil.status, StatusCode::MISDIRECTED_REQUEST);
    assert!(evil.body.contains("answers only localhost"), "{}", evil.body);
    assert_security_headers(&evil.headers);
    // Bound elsewhere on purpose, the check is off.
    let open = llm_ledger_web::app(std::sync::Arc::new(llm_ledger_web::AppState {
        loopback_hosts_only: false,
        ..llm_ledger_web::AppState::builtin()
    }));
    use tower::ServiceExt;
    let r = open.oneshot(with_host("attacker.example:8765")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

/// The explorer's pages and API say which basis "fits" is decided on, as the CLI
/// does (the step for KV and Batching, the requests' peak for Cost).
#[tokio::test]
async fn pages_and_the_api_name_the_fit_basis() {
    let m = "model=llama-3.1-70b&gpu=a100-80gb-sxm&weights=fp8";
    for (page, rule) in [
        (format!("/kv-cache?{m}&batch=9"), "fit basis: this step — "),
        (format!("/batching?{m}&batches=8..10"), "fit basis: this step — "),
        (format!("/cost?{m}&batch=9"), "fit basis: the requests' peak — "),
    ] {
        let r = get(&page).await;
        assert_eq!(r.status, StatusCode::OK, "{page}: {}", r.body);
        let note = r.body.split("id=\"fit-basis\">").nth(1).unwrap_or_else(|| panic!("{page}: no fit-basis note"));
        assert!(note.starts_with(rule), "{page}: {}", &note[..note.len().min(200)]);
    }
    assert!(get(&format!("/cost?{m}&batch=9")).await.body.contains("; peak: prefill."));
    let kv: serde_json::Value = serde_json::from_str(&get(&format!("/api/kv?{m}&batch=9")).await.body).unwrap();
    assert_eq!((&kv["fits"], &kv["max_batch"], &kv["fit_basis"]), (&true.into(), &9.into(), &"step".into()));
    let l: serde_json::Value = serde_json::from_str(&get(&format!("/api/latency?{m}")).await.body).unwrap();
    assert_eq!((&l["max_batch"], &l["fit_basis"]), (&5.into(), &"request_peak".into()));
}

// ---- Bodies, connections, heavy work and hyper's own answers. ----

/// A body sent in chunks with no Content-Length (as `Transfer-Encoding: chunked`).
struct Chunked(Vec<axum::body::Bytes>);

impl axum::body::HttpBody for Chunked {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let next = if self.0.is_empty() { None } else { Some(self.0.remove(0)) };
        std::task::Poll::Ready(next.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

fn chunked(text: String) -> Body {
    let chunks = text.into_bytes().chunks(8 * 1024).map(axum::body::Bytes::copy_from_slice).collect();
    Body::new(Chunked(chunks))
}

#[tokio::test]
async fn oversized_bodies_are_413_however_they_are_sent() {
    let big = format!("{{\"model_type\": \"gpt2\", \"pad\": \"{}\"}}", "x".repeat(1 << 20));
    // Every path that reads a body: the upload form, the upload as JSON, and the API's POST.
    let b = "XyZboundary42";
    let form = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"page\"\r\n\r\nledger\r\n--{b}\r\nContent-Disposition: form-data; name=\"config\"; filename=\"config.json\"\r\n\r\n{big}\r\n--{b}--\r\n"
    );
    let requests = [
        ("/upload", format!("multipart/form-data; boundary={b}"), form),
        ("/upload?page=ledger", "application/json".to_string(), big.clone()),
        ("/api/ledger", "application/json".to_string(), big.clone()),
    ];
    for (uri, ctype, body) in requests {
        for sized in [false, true] {
            let mut req = Request::post(uri).header(header::CONTENT_TYPE, &ctype);
            if sized {
                req = req.header(header::CONTENT_LENGTH, body.len());
            }
            let body = if sized { Body::from(body.clone()) } else { chunked(body.clone()) };
            let r = send(req.body(body).unwrap()).await;
            assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{uri} sized={sized}: {}", r.body);
            assert_security_headers(&r.headers);
            assert!(
                r.body.contains("the request body is over 81920 bytes: a config.json is at most 65536 bytes (64 KiB)"),
                "{uri}: {}",
                r.body
            );
        }
    }
    // A small chunked upload still works.
    let r = send(
        Request::post("/api/ledger?batch=16")
            .header(header::CONTENT_TYPE, "application/json")
            .body(chunked(GPT2_CONFIG.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // A multipart body that is not one is a 400, not a 500.
    let r = send(
        Request::post("/upload")
            .header(header::CONTENT_TYPE, "multipart/form-data; boundary=nope")
            .body(chunked("garbage".into()))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}

#[tokio::test]
async fn two_host_headers_are_refused() {
    for state in [AppState::builtin(), AppState { loopback_hosts_only: false, ..AppState::builtin() }] {
        let req =
            Request::get("/ledger").header("host", "localhost").header("host", "evil.example").body(Body::empty());
        let res = app(Arc::new(state)).oneshot(req.unwrap()).await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_security_headers(res.headers());
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(String::from_utf8_lossy(&body), "more than one Host header: send exactly one");
    }
}

fn get_req(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// A valid request whose work is a few seconds in a debug build (a fraction in release):
/// 64 batch sizes × 65,536 Zipf-routed experts, the most one MoE request may ask.
const HEAVY: &str = "/moe?experts=65536&top_k=1&batches=1..64&zipf=1";

#[tokio::test]
async fn a_trivial_page_answers_while_heavy_ones_run() {
    // One thread for every request, as a worst case: heavy work must not run on it.
    let app = router();
    let t0 = std::time::Instant::now();
    let heavy: Vec<_> = (0..4).map(|_| tokio::spawn(app.clone().oneshot(get_req(HEAVY)))).collect();
    tokio::task::yield_now().await;
    let r = app.clone().oneshot(get_req("/gpus")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let waited = t0.elapsed();
    assert!(waited < std::time::Duration::from_secs(2), "a trivial page waited {waited:?} behind heavy ones");
    for h in heavy {
        let r = h.await.unwrap().unwrap();
        let status = r.status();
        let body = String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        // The answer, or (on a crowded machine) the deadline's one-line 503.
        match status {
            StatusCode::OK => assert!(body.contains("id=\"moe\""), "{body}"),
            StatusCode::SERVICE_UNAVAILABLE => assert!(page_error(&body).starts_with("no answer within 10 s")),
            s => panic!("heavy page answered {s}: {body}"),
        }
    }
}

#[tokio::test]
async fn heavy_requests_are_bounded_by_parameter_limits_and_the_deadline() {
    // Past the cost limit: one line naming the parameter and what is accepted.
    let r = get("/moe?experts=65536&top_k=1&batches=1..2048&zipf=1").await;
    assert_page_refuses(
        &r,
        "invalid `batch`: 2048 batch sizes with 65536 experts (at most 64 batch sizes with 65536 experts: batch sizes × experts ≤ 4194304 per request here)",
        "batches",
    );
    let (status, message, field) = api_error("/api/moe?experts=65536&top_k=1&batch=1..2048&zipf=1").await;
    assert_eq!((status, field.as_deref()), (StatusCode::BAD_REQUEST, Some("batch")));
    assert!(message.contains("at most 64 batch sizes with 65536 experts"), "{message}");
    assert_eq!(get("/moe?experts=2048&top_k=2&batches=1..2048").await.status, StatusCode::OK);

    // At the deadline (here: at once) heavy work is answered 503 with one line, in the
    // endpoint's own form; light pages are not held up by it.
    let limits = llm_ledger_web::Limits { request_timeout: std::time::Duration::ZERO, ..Default::default() };
    let app = app(Arc::new(AppState { limits, ..AppState::builtin() }));
    let page = app.clone().oneshot(get_req(HEAVY)).await.unwrap();
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_security_headers(page.headers());
    let body = String::from_utf8(page.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(page_error(&body).starts_with("no answer within 0 s, the explorer's limit per request"), "{body}");
    let api = app.clone().oneshot(get_req("/api/moe?experts=65536&top_k=1&batch=1..64&zipf=1")).await.unwrap();
    assert_eq!(api.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = api.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(v["error"]["message"].as_str().unwrap().starts_with("no answer within 0 s"), "{v}");
    assert_eq!(app.oneshot(get_req("/gpus")).await.unwrap().status(), StatusCode::OK);
}

/// Heavy work is not run for another site's page (it could send any number of them); the
/// explorer's own links (`same-origin`), a typed URL (`none`) and clients that send no fetch
/// metadata are served, and light pages are served to anyone.
#[tokio::test]
async fn heavy_requests_from_other_sites_are_refused() {
    let app = router();
    let with = |uri: &str, headers: &[(&str, &str)]| {
        let mut req = Request::get(uri).header("host", "127.0.0.1:8765");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(Body::empty()).unwrap()
    };
    let heavy = "/serving?requests=5&prompt=16&output=4";
    for other in [
        &[("sec-fetch-site", "cross-site")][..],
        &[("sec-fetch-site", "same-site")],
        &[("origin", "http://evil.example")],
    ] {
        let r = app.clone().oneshot(with(heavy, other)).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{other:?}");
        assert_security_headers(r.headers());
        let body = String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        assert!(
            page_error(&body).starts_with("this page computes on request and is not answered to other sites"),
            "{body:.300}"
        );
        let api = app.clone().oneshot(with("/api/moe?experts=8&top_k=2&batch=1..4", other)).await.unwrap();
        assert_eq!(api.status(), StatusCode::FORBIDDEN, "{other:?}");
        // A light page is not work: it is served.
        assert_eq!(app.clone().oneshot(with("/gpus", other)).await.unwrap().status(), StatusCode::OK);
    }
    for own in [&[("sec-fetch-site", "same-origin")][..], &[("sec-fetch-site", "none")], &[]] {
        let r = app.clone().oneshot(with(heavy, own)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{own:?}");
    }
}

/// A browser without Fetch Metadata marks another site's `<img>` or link by its `Referer` alone; a
/// repeated `Sec-Fetch-Site`, `Origin` or `Referer` is refused whatever its first value says; an
/// `Origin` must be this server's scheme (`http`), host and port. A cached answer is not a way
/// round the refusal.
#[tokio::test]
async fn heavy_requests_are_refused_by_a_foreign_referer_a_repeated_header_or_another_scheme() {
    let app = router();
    let with = |uri: &str, headers: &[(&str, &str)]| {
        let mut req = Request::get(uri).header("host", "127.0.0.1:8765");
        for (k, v) in headers {
            // Appended: a name given twice is sent twice.
            req = req.header(*k, *v);
        }
        req.body(Body::empty()).unwrap()
    };
    let (page, api) = ("/moe?experts=8&top_k=2&batches=1..4", "/api/moe?experts=8&top_k=2&batch=1..4");
    // Asked for first by the explorer itself, so both answers are in the cache.
    for uri in [page, api] {
        let r = app.clone().oneshot(with(uri, &[("sec-fetch-site", "same-origin")])).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{uri}");
    }
    for other in [
        &[("referer", "http://evil.example/cat.html")][..],
        &[("referer", "http://127.0.0.1:9999/")],
        &[("referer", "https://127.0.0.1:8765/moe")],
        &[("sec-fetch-site", "same-origin"), ("sec-fetch-site", "cross-site")],
        &[("sec-fetch-site", "none"), ("sec-fetch-site", "none")],
        &[("origin", "http://127.0.0.1:8765"), ("origin", "http://evil.example")],
        &[("origin", "http://127.0.0.1:8765"), ("origin", "http://127.0.0.1:8765")],
        &[("origin", "https://127.0.0.1:8765")],
        &[("origin", "ftp://127.0.0.1:8765")],
    ] {
        let r = app.clone().oneshot(with(page, other)).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{other:?}");
        let body = String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        assert!(
            page_error(&body).starts_with("this page computes on request and is not answered to other sites"),
            "{other:?}: {body:.300}"
        );
        let r = app.clone().oneshot(with(api, other)).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{other:?}");
        // A light page is not work: it is served.
        assert_eq!(app.clone().oneshot(with("/gpus", other)).await.unwrap().status(), StatusCode::OK, "{other:?}");
    }
    for own in [
        &[][..],
        &[("referer", "http://127.0.0.1:8765/moe?experts=8")],
        &[("origin", "http://127.0.0.1:8765")],
        &[("sec-fetch-site", "same-origin"), ("referer", "http://evil.example/")],
    ] {
        let r = app.clone().oneshot(with(page, own)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{own:?}");
    }
}

/// The issue's query (5,000 requests each decoding 460,000 tokens one at a time) is refused by
/// its estimate before it runs, naming `requests`.
#[tokio::test]
async fn a_serving_query_past_the_step_budget_is_refused_at_once() {
    let r = get("/serving?requests=5000&rate=1000000&prompt=1&output=460000&max_seqs=1").await;
    assert_page_refuses(&r, "invalid `requests`: 5000 (1 run of 5000 requests of 1 + 460000 tokens", "requests");
}

mod over_tcp {
    //! The server itself (`serve_listener`) on a loopback port: slow and idle clients, and the
    //! answers hyper writes below the router. Every wait is bounded.
    use super::*;
    use llm_ledger_web::{serve_listener, Limits};
    use std::net::SocketAddr;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::time::timeout;

    /// Longest wait for anything in these tests (a hang fails instead of blocking the suite).
    const BOUND: Duration = Duration::from_secs(10);

    /// A server under `limits`, stopped when the sender is dropped.
    async fn start(limits: Limits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(AppState { limits, ..AppState::builtin() });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_listener(listener, state, async {
            let _ = rx.await;
        }));
        (addr, tx)
    }

    /// Send `request` on a new connection and read until the server closes it. The server may
    /// answer and close before it has read everything (a head over its limit), so a failed write
    /// or a reset after the answer are not errors here.
    async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(request).await;
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match timeout(BOUND, s.read(&mut buf)).await.expect("the server answers and closes") {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) if !out.is_empty() => break,
                Err(e) => panic!("no answer: {e}"),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Whether the server has closed `s` (end of file or reset) within the bound.
    async fn closed_by_server(s: &mut TcpStream, deadline: tokio::time::Instant) -> bool {
        let mut buf = [0u8; 1024];
        loop {
            match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    fn assert_security_headers_in(answer: &str) {
        let head = answer.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        for h in [
            "content-security-policy: default-src 'none'",
            "x-content-type-options: nosniff",
            "x-frame-options: deny",
            "referrer-policy: no-referrer",
        ] {
            assert!(head.contains(h), "{h} missing in {head}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stalled_connections_are_closed_and_do_not_lock_out_new_ones() {
        let limits = Limits { header_read_timeout: Duration::from_secs(1), ..Limits::default() };
        assert_eq!(limits.max_connections, 256);
        let (addr, _stop) = start(limits).await;
        // More stalled clients than the connection limit, each with half a request head.
        let mut stalled = Vec::new();
        for _ in 0..300 {
            let mut s = timeout(BOUND, TcpStream::connect(addr)).await.expect("connect").unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: local").await.unwrap();
            stalled.push(s);
        }
        let t0 = std::time::Instant::now();
        let answer = exchange(addr, b"GET /gpus HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:.200}");
        assert!(t0.elapsed() < Duration::from_secs(3), "a new request waited {:?} behind stalled ones", t0.elapsed());
        // Every stalled connection is closed by the server: past the header timeout (1 s), or
        // earlier to admit a new connection at the limit.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        for (i, s) in stalled.iter_mut().enumerate() {
            assert!(closed_by_server(s, deadline).await, "stalled connection {i} is still open");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_keep_alive_connections_are_closed() {
        let limits = Limits { idle_timeout: Duration::from_secs(1), ..Limits::default() };
        let (addr, _stop) = start(limits).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        // Two requests on one keep-alive connection, then silence.
        for _ in 0..2 {
            s.write_all(b"GET /assets/none HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).contains("</html>") {
                let n = timeout(BOUND, s.read(&mut buf)).await.expect("an answer").unwrap();
                assert!(n > 0, "closed before the answer: {}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got.starts_with(b"HTTP/1.1 404"), "{}", String::from_utf8_lossy(&got));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        assert!(closed_by_server(&mut s, deadline).await, "an idle keep-alive connection stays open");
    }

    /// Read what the server sends on `s` until it closes it or `bound` passes.
    async fn read_answer(s: &mut TcpStream, bound: Duration) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        let deadline = tokio::time::Instant::now() + bound;
        while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    const UPLOAD_HEAD: &str =
        "POST /upload?page=ledger HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_upload_body_is_408_not_the_heavy_works_503() {
        let limits = Limits { body_read_timeout: Duration::from_secs(1), ..Limits::default() };
        let (addr, _stop) = start(limits).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("{UPLOAD_HEAD}Content-Length: 100\r\n\r\n{{\"model_type\"").as_bytes()).await.unwrap();
        let answer = read_answer(&mut s, BOUND).await;
        assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer:.300}");
        assert!(answer.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "{answer:.300}");
        assert!(answer.contains("the request body did not arrive within 1 s"), "{answer:.600}");
        assert_security_headers_in(&answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_oversized_content_length_is_413_before_100_continue() {
        let (addr, _stop) = start(Limits::default()).await;
        for path in ["/upload?page=ledger", "/api/ledger"] {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n"
            );
            s.write_all(head.as_bytes()).await.unwrap();
            // The client sends nothing more: the answer comes without the body.
            let answer = read_answer(&mut s, BOUND).await;
            assert!(answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n"), "{path}: {answer:.300}");
            assert!(!answer.contains("100 Continue"), "{path}: {answer:.300}");
            assert!(answer.contains("the request body is over 81920 bytes"), "{path}: {answer:.600}");
        }
    }

    /// The final answer in what a server sent: past any interim (1xx) answers, which are not
    /// the answer to the request.
    fn final_answer(answer: &str) -> &str {
        let mut rest = answer;
        while rest.starts_with("HTTP/1.1 1") {
            let Some((_, after)) = rest.split_once("\r\n\r\n") else { break };
            rest = after;
        }
        rest
    }

    /// A client that asks `Expect: 100-continue` and waits for it gets `100 Continue`, sends its
    /// body, and gets the final answer after the interim one: the upload and `POST /api/ledger`
    /// answer as without it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expect_100_continue_gets_the_interim_answer_then_the_final_one() {
        let (addr, _stop) = start(Limits::default()).await;
        let config = r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}"#;
        for (path, status) in [("/api/ledger", "200 OK"), ("/upload?page=ledger", "303 See Other")] {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
                config.len()
            );
            s.write_all(head.as_bytes()).await.unwrap();
            let mut interim = Vec::new();
            let mut buf = [0u8; 256];
            while !interim.ends_with(b"\r\n\r\n") {
                let n = timeout(BOUND, s.read(&mut buf)).await.expect("an interim answer").unwrap();
                assert!(n > 0, "{path}: closed before 100 Continue");
                interim.extend_from_slice(&buf[..n]);
            }
            assert_eq!(String::from_utf8_lossy(&interim), "HTTP/1.1 100 Continue\r\n\r\n", "{path}");
            s.write_all(config.as_bytes()).await.unwrap();
            let answer = format!("{}{}", String::from_utf8_lossy(&interim), read_answer(&mut s, BOUND).await);
            let last = final_answer(&answer);
            assert!(last.starts_with(&format!("HTTP/1.1 {status}\r\n")), "{path}: {answer:.400}");
            assert_security_headers_in(last);
        }
        assert_eq!(final_answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"), "HTTP/1.1 200 OK\r\n\r\n");
    }

    /// Stalled uploads hold at most their slots: the rest are answered 503 at once and closed, so
    /// a new client is not kept waiting behind them (before, with every connection a stalled
    /// upload, it waited for one to time out).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stalled_uploads_hold_only_their_own_slots() {
        let limits = Limits {
            max_connections: 24,
            upload_slots: 4,
            body_read_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            ..Limits::default()
        };
        let (addr, _stop) = start(limits).await;
        let mut stalled = Vec::new();
        for _ in 0..24 {
            let mut s = timeout(BOUND, TcpStream::connect(addr)).await.expect("connect").unwrap();
            s.write_all(format!("{UPLOAD_HEAD}Content-Length: 100\r\n\r\n{{").as_bytes()).await.unwrap();
            stalled.push(s);
        }
        // All but the four in slots are answered at once.
        let mut refused = 0;
        for s in stalled.iter_mut() {
            let answer = read_answer(s, Duration::from_millis(300)).await;
            if answer.starts_with("HTTP/1.1 503") {
                assert!(answer.contains("4 uploads are being read already"), "{answer:.600}");
                refused += 1;
            }
        }
        assert_eq!(refused, 20);
        let answer = exchange(addr, b"GET /gpus HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:.200}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hypers_own_answers_carry_the_security_headers() {
        let (addr, _stop) = start(Limits::default()).await;
        // `Connection: close` so that an answer that left the connection open could not hang the
        // read (hyper closes after its own answers either way).
        let long_uri = format!(
            "GET /ledger?batch={} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            "1".repeat(70_000)
        );
        let many_fields: String = (0..150).map(|i| format!("X-F{i}: v\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{many_fields}\r\n");
        // hyper checks its buffer against the limit before each read, and one read may add up
        // to the limit again: a head under twice the limit can complete inside that read and be
        // served (how far depends on how the bytes arrive), one over twice the limit never is.
        let huge = format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nCookie: {}\r\n\r\n",
            "c".repeat(2 * 128 * 1024 + 4096)
        );
        for (request, status, message) in [
            (long_uri.as_str(), "414 URI Too Long", "the URL is longer than 65534 bytes"),
            (many.as_str(), "431 Request Header Fields Too Large", "the request's headers are over"),
            (huge.as_str(), "431 Request Header Fields Too Large", "the request's headers are over"),
            ("NOT HTTP\r\n\r\n", "400 Bad Request", "malformed HTTP request"),
        ] {
            let answer = exchange(addr, request.as_bytes()).await;
            assert!(answer.starts_with(&format!("HTTP/1.1 {status}\r\n")), "{:.60}…: {answer:.300}", request);
            assert_security_headers_in(&answer);
            let body = answer.split("\r\n\r\n").nth(1).unwrap();
            assert!(body.starts_with(message) && body.ends_with('\n') && body.lines().count() == 1, "{body}");
        }
        // The router's own 414 (a query over its limit, under hyper's) keeps its page.
        let answer = exchange(
            addr,
            format!(
                "GET /ledger?contexts={} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                "1,".repeat(31_000)
            )
            .as_bytes(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{answer:.300}");
        assert_security_headers_in(&answer);
        assert!(answer.contains("<span class=\"message\">the query is"), "{answer:.300}");
        // Two Host headers on the wire, too.
        let answer =
            exchange(addr, b"GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
                .await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{answer:.300}");
        assert!(answer.ends_with("more than one Host header: send exactly one"), "{answer:.300}");
    }
}

// ---- The Serving page (the CLI's `simulate` at one rate). ----

/// The `simulate` configuration the CLI builds for these flags, with the CLI's defaults
/// (`SimConfig::poisson`, chunk = max batched tokens, prompt 2048, output 256, 2 GB reserve,
/// and the default engine's scheduler, TensorRT-LLM's).
fn sim_config(rate: f64, requests: u64, seed: u64) -> llm_ledger_core::simulate::SimConfig {
    use llm_ledger_core::simulate::SimConfig;
    let h100 = llm_ledger_core::Catalog::builtin().gpu("h100-sxm").expect("the catalogue's H100");
    SimConfig { requests, seed, ..SimConfig::poisson(rate).for_engine(llm_ledger_core::engine::Engine::Trtllm, &h100) }
}

#[tokio::test]
async fn serving_shows_the_simulators_numbers() {
    use llm_ledger_core::simulate::simulate;
    // Defaults: Poisson at 10 requests/s, 1,000 requests, seed 0, as `llm-ledger simulate`.
    for (uri, cfg) in
        [("/serving", sim_config(10.0, 1000, 0)), ("/serving?rate=4&requests=300&seed=7", sim_config(4.0, 300, 7))]
    {
        let r = get(uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        assert_security_headers(&r.headers);
        let s = simulate(&scenario(&[]), &cfg, |_| {}).unwrap().summary;
        assert_eq!(value_of(&r.body, "completed"), s.completed as f64, "{uri}");
        assert_eq!(value_of(&r.body, "requests-per-s"), s.requests_per_s, "{uri}");
        assert_eq!(value_of(&r.body, "output-tokens-per-s"), s.output_tokens_per_s, "{uri}");
        assert_eq!(value_of(&r.body, "goodput"), s.goodput_per_s, "{uri}");
        assert_eq!(value_of(&r.body, "preemptions"), s.preemptions as f64, "{uri}");
        assert_eq!(value_of(&r.body, "kv-utilisation"), s.mean_kv_utilisation, "{uri}");
        for (id, q) in [("ttft", &s.ttft_s), ("tpot", &s.tpot_s), ("itl", &s.itl_s), ("e2e", &s.e2e_s)] {
            assert_eq!(value_of(&r.body, &format!("{id}-p50")), q.p50, "{uri} {id}");
            assert_eq!(value_of(&r.body, &format!("{id}-p90")), q.p90, "{uri} {id}");
            assert_eq!(value_of(&r.body, &format!("{id}-p99")), q.p99, "{uri} {id}");
            assert_eq!(value_of(&r.body, &format!("{id}-mean")), q.mean, "{uri} {id}");
        }
        // The two plots the CLI draws: latency CDFs, batch and queue over time.
        assert!(
            r.body.contains(">TTFT<") && r.body.contains("running batch") && r.body.contains("waiting queue"),
            "{uri}"
        );
        assert!(r.body.matches("<svg").count() >= 2, "{uri}");
    }
    // The SLAs and the other controls reach the simulator: a tight TTFT bound lowers goodput.
    let r =
        get("/serving?requests=300&rate=30&ttft_ms=1&tpot_ms=50&schedule=prefill-first&max_seqs=64&chunk=512").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    let cfg = llm_ledger_core::simulate::SimConfig {
        max_seqs: 64,
        chunk_tokens: 512,
        schedule: llm_ledger_core::simulate::Schedule::PrefillFirst,
        ttft_slo_s: Some(1e-3),
        tpot_slo_s: Some(0.05),
        ..sim_config(30.0, 300, 0)
    };
    let s = simulate(&scenario(&[]), &cfg, |_| {}).unwrap().summary;
    assert_eq!(value_of(&r.body, "goodput"), s.goodput_per_s);
    assert!(s.goodput_per_s < s.requests_per_s);
    // The step's shape is not the simulation's: a batch changes nothing.
    let a = get("/serving?requests=100").await;
    let b = get("/serving?requests=100&batch=64&ctx=512").await;
    assert_eq!(value_of(&a.body, "ttft-p99"), value_of(&b.body, "ttft-p99"));
    assert!(b.body.contains("class=\"field unused\""));
}

#[tokio::test]
async fn serving_refuses_bad_inputs_in_one_line_naming_the_field() {
    let r = get("/serving?rate=0").await;
    assert_page_refuses(&r, "invalid `rate`: 0 (a number in [1e-300, 1e6])", "rate");
    let r = get("/serving?rate=-2").await;
    assert_page_refuses(&r, "invalid `rate`: -2", "rate");
    let r = get("/serving?rate=fast").await;
    assert_page_refuses(&r, "invalid `rate`", "rate");
    let r = get("/serving?requests=5001").await;
    assert_page_refuses(&r, "invalid `requests`: 5001 (an integer from 1 to 5,000 on the explorer", "requests");
    let r = get("/serving?requests=1000000000").await;
    assert_page_refuses(&r, "invalid `requests`", "requests");
    let r = get("/serving?arrivals=trace").await;
    assert_page_refuses(&r, "unknown", "arrivals");
    // A key of another arrival process is refused, as the CLI refuses it, not ignored.
    let r = get("/serving?cv=3").await;
    assert_page_refuses(&r, "invalid `cv`: given (it applies only to arrivals gamma)", "cv");
    let r = get("/serving?arrivals=closed&rate=5").await;
    assert_page_refuses(&r, "invalid `rate`: given (it applies only to arrivals poisson or gamma)", "rate");
    let r = get("/serving?arrivals=closed&concurrency=4&requests=50").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    let r = get("/serving?schedule=random").await;
    assert_page_refuses(&r, "unknown", "schedule");
    let r = get("/serving?prompt=uniform:5").await;
    assert_page_refuses(&r, "invalid `prompt`", "prompt");
    let r = get("/serving?ttft_ms=-1").await;
    assert_page_refuses(&r, "invalid `ttft_ms`", "ttft_ms");
    // 1,000,000 tokens of Llama 3 8B's KV cache (128 KiB each) do not fit an H100: the core's reason.
    let r = get("/serving?prompt=1000000&requests=1").await;
    assert_page_refuses(&r, "invalid `prompt`: a request of 1000000 prompt + 256 output tokens", "prompt");
    assert!(page_error(&r.body).contains("fits the KV capacity of"), "{}", page_error(&r.body));
}

#[tokio::test]
async fn serving_compares_a_disaggregated_split_with_aggregated_serving() {
    use llm_ledger_core::simulate::{simulate_deployment, Deployment, Disagg};
    let sc = scenario(&[]);
    let cfg = sim_config(8.0, 300, 0);
    let r = get("/serving?rate=8&requests=300&disagg=1:3&kv_link=network").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    let d = Disagg::of_inputs("1:3", Some("network"), &sc).unwrap();
    let split = Deployment::Disaggregated(d);
    let s = simulate_deployment(&sc, &cfg, &split, |_| {}).unwrap().summary;
    let a = simulate_deployment(&sc, &cfg, &split.aggregated_equivalent(), |_| {}).unwrap().summary;
    assert_eq!(value_of(&r.body, "disagg-ttft-p99"), s.ttft_s.p99);
    assert_eq!(value_of(&r.body, "aggregated-ttft-p99"), a.ttft_s.p99);
    assert_eq!(value_of(&r.body, "disagg-itl-p99"), s.itl_s.p99);
    assert_eq!(value_of(&r.body, "aggregated-itl-p99"), a.itl_s.p99);
    assert_eq!(value_of(&r.body, "disagg-kv-move-p99"), s.kv_transfer_s.unwrap().p99);
    // The page's headline numbers are the disaggregated run's.
    assert_eq!(value_of(&r.body, "tpot-p99"), s.tpot_s.p99);
    assert!(r.body.contains("InfiniBand"), "the link is named");
    // Bad splits and links are refused naming the key, as the CLI refuses them.
    let r = get("/serving?disagg=0:1").await;
    assert_page_refuses(&r, "invalid `disagg`: 0:1 (PREFILL:DECODE instances", "disagg");
    let r = get("/serving?disagg=1:1&kv_link=smoke").await;
    assert_page_refuses(&r, "unknown KV link", "kv_link");
    let r = get("/serving?kv_link=nvlink").await;
    assert_page_refuses(&r, "invalid `kv_link`: given", "kv_link");
}

#[tokio::test]
async fn serving_runs_on_the_heavy_pool_under_the_deadline() {
    assert!(PAGES.iter().any(|p| p.slug == "serving" && p.heavy), "the simulation runs off the answering threads");
    let limits = llm_ledger_web::Limits { request_timeout: std::time::Duration::ZERO, ..Default::default() };
    let app = app(Arc::new(AppState { limits, ..AppState::builtin() }));
    let page = app.clone().oneshot(get_req("/serving?requests=5000")).await.unwrap();
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = String::from_utf8(page.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(page_error(&body).starts_with("no answer within 0 s"), "{body}");
}

/// The inline SVG of class `class` in a page.
fn svg_of<'a>(html: &'a str, class: &str) -> Option<&'a str> {
    let start = html.find(&format!("<svg class=\"{class}\""))?;
    let rest = &html[start..];
    Some(&rest[..rest.find("</svg>")? + "</svg>".len()])
}

/// Every value of attribute `name` in `svg`, in order.
fn attrs<'a>(svg: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    svg.split(key.as_str()).skip(1).map(|s| &s[..s.find('"').unwrap()]).collect()
}

/// At layer level Powers of ten draws the layer as a dataflow diagram, every box
/// a link to its operator's zoom level (each of which exists: the page shows that node, with no
/// notice), arrows labelled with the ledger's bytes.
#[tokio::test]
async fn the_layer_page_draws_the_dataflow_and_its_links_resolve() {
    let r = get("/powers-of-ten?at=layer.0&batch=8").await;
    assert_eq!(r.status, StatusCode::OK);
    let svg = svg_of(&r.body, "plot dataflow").expect("the dataflow diagram at layer level");
    let hrefs: Vec<String> =
        svg.split("<a href=\"").skip(1).map(|s| s[..s.find('"').unwrap()].replace("&amp;", "&")).collect();
    assert!(hrefs.len() >= 12, "{} boxes", hrefs.len());
    for h in &hrefs {
        let page = get(h).await;
        assert_eq!(page.status, StatusCode::OK, "{h}");
        assert_eq!(zoom_notice(&page.body), None, "{h} is a zoom path of this scenario");
        let at = h.split("at=").nth(1).unwrap().split('&').next().unwrap();
        assert_eq!(node_path(&page.body), at, "{h}");
        assert!(h.contains("batch=8"), "links keep the scenario: {h}");
    }
    // Arrows carry the bytes the ledger says the operators write: the norm's output is x.
    let tree = llm_ledger_core::ZoomTree::build(&scenario(&[("batch", "8")]));
    let norm = tree.layer(0).unwrap().ops.iter().find(|o| o.name() == "norm").unwrap();
    let bytes: Vec<f64> = attrs(svg, "data-bytes").iter().map(|b| b.parse().unwrap()).collect();
    assert!(bytes.contains(&norm.op.cost.activation_written_bytes));
    assert_eq!(norm.op.cost.activation_written_bytes, 8.0 * 4096.0 * 2.0);
    // A block shows its part of the layer; model and operator levels have no diagram.
    let r = get("/powers-of-ten?at=layer.2.mlp").await;
    let svg = svg_of(&r.body, "plot dataflow").expect("the block's dataflow");
    assert!(attrs(svg, "data-path").iter().all(|p| p.starts_with("layer.2.mlp.")));
    for at in ["model", "layer.0.mlp.up", "layer.0.attn.norm"] {
        assert!(svg_of(&get(&format!("/powers-of-ten?at={at}")).await.body, "plot dataflow").is_none(), "{at}");
    }
}

/// FlashAttention on is one attention box and no score matrix on the arrows;
/// off, three boxes and the score matrix's bytes, as the ledger counts them, on the arrows.
#[tokio::test]
async fn flash_attention_fuses_or_splits_the_dataflow() {
    let q = "at=layer.0&phase=prefill&batch=2&ctx=1024";
    let on = get(&format!("/powers-of-ten?{q}")).await;
    let svg = svg_of(&on.body, "plot dataflow").unwrap();
    let paths = attrs(svg, "data-path");
    assert!(paths.contains(&"layer.0.attn.attention"));
    assert!(!paths.iter().any(|p| p.ends_with(".scores") || p.ends_with(".softmax")), "{paths:?}");
    assert!(!svg.contains("score matrix"));
    let toggle = on.body.split("id=\"flash-toggle\" href=\"").nth(1).expect("a FlashAttention toggle");
    let toggle = toggle[..toggle.find('"').unwrap()].replace("&amp;", "&");
    assert!(toggle.contains("flash=off") && toggle.contains("at=layer.0"), "one click splits them: {toggle}");
    let off = get(&format!("/powers-of-ten?{q}&flash=off")).await;
    let svg = svg_of(&off.body, "plot dataflow").unwrap();
    let paths = attrs(svg, "data-path");
    assert!(!paths.contains(&"layer.0.attn.attention"));
    for p in ["layer.0.attn.scores", "layer.0.attn.softmax", "layer.0.attn.values"] {
        assert!(paths.contains(&p), "{p}: {paths:?}");
    }
    let sc = scenario(&[("phase", "prefill"), ("batch", "2"), ("ctx", "1024"), ("flash", "off")]);
    let ledger = Ledger::build(&sc);
    let softmax = ledger.rows.iter().find(|r| r.op == llm_ledger_core::ops::OpKind::Softmax).unwrap();
    // The ledger's softmax row: all layers; it reads the score matrix and writes it back.
    let scores = softmax.cost.activation_bytes / softmax.instances as f64 / 2.0;
    assert!(scores > 2.0 * 32.0 * 1024.0 * 1024.0, "a real score matrix: {scores}");
    let arrows: Vec<&str> = svg.split("<g class=\"flow-arrow").skip(1).collect();
    let score_arrows: Vec<&&str> = arrows.iter().filter(|a| a.contains("score matrix")).collect();
    assert_eq!(score_arrows.len(), 1, "out of QKᵀ into the softmax");
    assert!(score_arrows[0].contains(&format!("data-bytes=\"{scores}\"")), "{}", score_arrows[0]);
    assert!(score_arrows[0].contains("data-to=\"layer.0.attn.softmax\""));
}

/// MoE, MLA and parallel-attention layers draw (no panic, every box a valid
/// zoom path).
#[tokio::test]
async fn moe_mla_and_parallel_layers_draw_a_dataflow() {
    for (model, at) in
        [("deepseek-v3", "layer.5"), ("mixtral-8x7b", "layer.0"), ("falcon-7b", "layer.0"), ("gpt-oss-20b", "layer.1")]
    {
        for flash in ["on", "off"] {
            let r = get(&format!("/powers-of-ten?model={model}&at={at}&flash={flash}")).await;
            assert_eq!(r.status, StatusCode::OK, "{model} {flash}");
            let svg = svg_of(&r.body, "plot dataflow").unwrap_or_else(|| panic!("{model}: no diagram"));
            let sc = scenario(&[("model", model), ("flash", flash)]);
            let tree = llm_ledger_core::ZoomTree::build(&sc);
            let paths = attrs(svg, "data-path");
            assert!(!paths.is_empty());
            for p in paths {
                assert!(tree.node(p).is_ok(), "{model}: {p}");
            }
        }
    }
    let r = get("/powers-of-ten?model=mixtral-8x7b&at=layer.0").await;
    assert!(svg_of(&r.body, "plot dataflow").unwrap().contains("data-path=\"layer.0.mlp.router\""));
}

/// With a pinned scenario the picture shows both — a dashed outline per block
/// at the pinned value on the same scale, with the pinned number on hover.
#[tokio::test]
async fn the_picture_shows_the_pinned_scenario() {
    use llm_ledger_core::ZoomTree;
    let plain = get("/powers-of-ten?at=layer.0&batch=8").await;
    assert!(!svg_of(&plain.body, "plot icicle").unwrap().contains("class=\"ghost\""), "no pin, no ghosts");
    let r = get("/powers-of-ten?at=layer.0&batch=8&pin=batch%3D1").await;
    let svg = svg_of(&r.body, "plot icicle").unwrap();
    let pinned = ZoomTree::build(&scenario(&[("batch", "1")]));
    let now = ZoomTree::build(&scenario(&[("batch", "8")]));
    let ghosts: Vec<&str> = svg.split("<rect class=\"ghost\"").skip(1).collect();
    assert!(ghosts.len() >= 3, "{} ghosts", ghosts.len());
    for g in &ghosts {
        let path = attrs(g, "data-path")[0];
        let p: f64 = attrs(g, "data-pinned")[0].parse().unwrap();
        let n: f64 = attrs(g, "data-now")[0].parse().unwrap();
        assert_eq!(p, pinned.node(path).unwrap().totals.timing.time_s, "{path}");
        assert_eq!(n, now.node(path).unwrap().totals.timing.time_s, "{path}");
        assert!(g.contains("<title>") && g.contains("pinned"), "numbers on hover");
    }
    assert!(ghosts.iter().any(|g| g.contains("data-path=\"layer.0.mlp.up\"")));
    assert!(r.body.contains("id=\"picture-pinned\""));
    // At model level the grouped layers' ghost is the pinned layer × 32.
    let r = get("/powers-of-ten?batch=8&pin=batch%3D1").await;
    let svg = svg_of(&r.body, "plot icicle").unwrap();
    let g = svg.split("<rect class=\"ghost\" data-path=\"layer.0\"").nth(1).expect("the layers' ghost");
    let p: f64 = attrs(g, "data-pinned")[0].parse().unwrap();
    assert!((p - 32.0 * pinned.node("layer.0").unwrap().totals.timing.time_s).abs() < 1e-12 * p.max(1.0));
}

/// On every page with a plot, every data mark has a hover text, and every
/// mark that links somewhere (a roofline operator → its row; a batch-curve, KV-chart or MoE
/// point → the page at that batch) resolves: GET it → 200, no error box, and a `#fragment`
/// names an element of the page.
#[tokio::test]
async fn every_plot_mark_has_a_tooltip_and_its_link_resolves() {
    use llm_ledger_report::plot::marks;
    // (page, the classes of marks that must link, at least how many links)
    let pages: &[(&str, &[&str], usize)] = &[
        ("/ledger?batch=64", &["op"], 10),
        ("/ledger?model=mixtral-8x7b&phase=prefill&ctx=512&time_model=roofline", &["op"], 10),
        ("/batching?ctx=4096", &["step", "rate", "wall", "crossover"], 20),
        ("/batching?batches=1,3,17&gpu=l4", &["step", "rate"], 6),
        ("/kv-cache?batch=64", &["batch", "crossover", "wall"], 5),
        ("/kv-cache?model=llama-3.1-70b&gpu=a100-80gb-sxm&weights=fp8&ctx=32768", &["batch"], 1),
        ("/moe?model=mixtral-8x7b&zipf=1", &["touched"], 8),
        ("/moe?experts=64&top_k=8&batches=1,2,4", &["touched"], 3),
        ("/serving?requests=200", &[], 0),
        ("/gemm-tiling?m=1000&n=1000&k=1000", &[], 0),
    ];
    for (uri, linked, at_least) in pages {
        let r = get(uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        let ms = marks(&r.body);
        let plot_marks: Vec<_> = ms.iter().filter(|m| !m.class.is_empty() && m.class != "legend").collect();
        assert!(!plot_marks.is_empty(), "{uri}: no marks");
        for m in &plot_marks {
            assert!(!m.tooltip.trim().is_empty(), "{uri}: a {} mark without text", m.class);
            assert!(m.tooltip.chars().any(|c| c.is_ascii_digit()), "{uri}: {:?} has no number", m.tooltip);
        }
        let links: Vec<&str> = ms.iter().filter_map(|m| m.href.as_deref()).collect();
        assert!(links.len() >= *at_least, "{uri}: {} links", links.len());
        for class in *linked {
            let of_class: Vec<_> = ms.iter().filter(|m| m.class == *class).collect();
            assert!(!of_class.is_empty(), "{uri}: no {class} marks");
            assert!(of_class.iter().all(|m| m.href.is_some()), "{uri}: a {class} mark without a link");
        }
        let mut seen = std::collections::HashSet::new();
        for link in links {
            assert!(link.starts_with('/'), "{uri}: {link} is not a path on this server");
            let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
            if !seen.insert(path.to_string()) && fragment.is_empty() {
                continue;
            }
            let target = get(path).await;
            assert_eq!(target.status, StatusCode::OK, "{uri} → {link}: {}", target.body);
            assert!(!target.body.contains("id=\"error\""), "{uri} → {link} shows an error");
            if !fragment.is_empty() {
                assert!(target.body.contains(&format!("id=\"{fragment}\"")), "{uri} → {link}: no #{fragment}");
            }
        }
    }
}

/// The links carry the scenario and go where the mark says — a roofline
/// operator to its own row, a batch-curve point to that batch (its table row marked), a KV-chart
/// batch to that batch, the crossover to the first batch past it.
#[tokio::test]
async fn plot_links_go_to_what_the_mark_stands_for() {
    use llm_ledger_report::plot::marks;
    let r = get("/ledger?batch=64&kv=fp8").await;
    let report = cli_report(&[("batch", "64"), ("kv", "fp8")]);
    let ops: Vec<_> = marks(&r.body).into_iter().filter(|m| m.class == "op").collect();
    for row in report.rows.iter().filter(|r| r.flops > 0.0 && r.bytes > 0.0) {
        let m = ops.iter().find(|m| m.tooltip.starts_with(&format!("{} × ", row.op))).expect(&row.op);
        let href = m.href.as_deref().unwrap();
        assert!(href.starts_with("/ledger?") && href.contains("batch=64") && href.contains("kv=fp8"), "{href}");
        assert!(href.ends_with(&format!("#op-{}", row.op)), "{href}");
        assert!(r.body.contains(&format!("<tr data-op=\"{}\" id=\"op-{}\"", row.op, row.op)));
    }

    let r = get("/batching?ctx=4096").await;
    let steps: Vec<_> = marks(&r.body).into_iter().filter(|m| m.class == "step").collect();
    let m = steps.iter().find(|m| m.tooltip.starts_with("batch 32\n")).expect("batch 32");
    let href = m.href.as_deref().unwrap();
    assert!(href.contains("batch=32") && href.contains("ctx=4096"), "{href}");
    let page = get(href).await;
    assert!(page.body.contains("<tr data-batch=\"32\" aria-current=\"true\""), "the batch's row is marked");

    let r = get("/kv-cache?batch=64").await;
    let ms = marks(&r.body);
    let kv = llm_ledger_report::kv::KvReport::new(
        &ScenarioRequest { batch: Some("64".into()), ..Default::default() }.resolve(&Catalog::builtin()).unwrap(),
        2e9,
    );
    let cross = ms.iter().find(|m| m.class == "crossover").expect("the crossover");
    let first = (kv.row.crossover_tokens / 2048.0).floor() as u64 + 1;
    assert!(cross.href.as_deref().unwrap().contains(&format!("batch={first}")), "{cross:?}");
    let page = get(cross.href.as_deref().unwrap()).await;
    assert!(value_of(&page.body, "side") > 1.0, "past the crossover, KV reads pass the weight reads");
    let wall = ms.iter().find(|m| m.class == "wall").expect("the wall");
    let max = kv.row.max_batch.unwrap();
    assert!(wall.href.as_deref().unwrap().contains(&format!("batch={max}")), "{wall:?}");
}

/// Under the measured clock each ledger row shows its roofline
/// time, its expected time and the achieved fraction (the CLI table's columns, the report's
/// numbers); under `time_model=roofline` one time column, as before.
#[tokio::test]
async fn the_ledger_page_shows_both_clocks_per_row() {
    let cell = |html: &str, op: &str, class: &str| -> Option<f64> {
        let at = html.find(&format!("<tr data-op=\"{op}\""))?;
        let row = &html[at..at + html[at..].find("</tr>")?];
        let c = row.find(&format!("class=\"num {class}\""))?;
        let tag = &row[c..c + row[c..].find('>')?];
        let v = tag.split("data-value=\"").nth(1)?;
        v[..v.find('"')?].parse().ok()
    };
    for pairs in [vec![], vec![("batch", "64"), ("engine", "vllm")], vec![("phase", "prefill"), ("ctx", "1024")]] {
        let q = serde_urlencoded::to_string(&pairs).unwrap();
        let r = get(&format!("/ledger?{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
        let report = cli_report(&pairs);
        assert!(report.inputs.engine.is_some(), "the measured clock is the default");
        for th in [
            "<th class=\"num\" scope=\"col\">roofline</th>",
            "<th class=\"num time\" scope=\"col\">expected</th>",
            "<th class=\"num\" scope=\"col\">achieved</th>",
        ] {
            assert!(r.body.contains(th), "{q}: {th}");
        }
        for row in report.rows.iter().chain([&report.total]) {
            assert_eq!(cell(&r.body, &row.op, "roofline"), Some(row.roofline_time_s), "{q} {}", row.op);
            assert_eq!(cell(&r.body, &row.op, "time"), Some(row.time_s), "{q} {}", row.op);
            assert_eq!(cell(&r.body, &row.op, "achieved"), row.achieved, "{q} {}", row.op);
        }
        // Achieved is a fraction of the hardware's peak: never above 1.
        assert!(report.rows.iter().all(|r| r.achieved.is_none_or(|a| a <= 1.0)), "{q}");
        assert!(r.body.contains(llm_ledger_report::ledger::ACHIEVED_RULE), "{q}");
    }
    let pairs = [("batch", "8"), ("time_model", "roofline")];
    let r = get("/ledger?batch=8&time_model=roofline").await;
    let report = cli_report(&pairs);
    assert!(report.inputs.engine.is_none());
    assert!(r.body.contains("<th class=\"num time\" scope=\"col\">time</th>"));
    assert!(!r.body.contains("scope=\"col\">achieved<") && !r.body.contains("scope=\"col\">expected<"));
    for row in &report.rows {
        assert_eq!(cell(&r.body, &row.op, "time"), Some(row.time_s), "{}", row.op);
        assert_eq!(cell(&r.body, &row.op, "roofline"), None, "{}", row.op);
    }
}

/// From a roofline point to its row, and from the row to the operator in Powers
/// of ten — every operator name of the ledger table that Powers of ten shows links to a zoom path
/// that opens that operator (its node's FLOPs are the row's FLOPs per layer).
#[tokio::test]
async fn ledger_rows_link_to_their_operator_in_powers_of_ten() {
    // DeepSeek-V3's first three layers are dense and the rest MoE: an expert operator's first
    // layer is layer 3 (its rows sum layers of different shapes, so only the link is checked).
    for pairs in [
        vec![("batch", "8")],
        vec![("model", "mixtral-8x7b"), ("flash", "off"), ("phase", "prefill"), ("ctx", "256")],
        vec![("model", "deepseek-v3"), ("gpu", "b200")],
    ] {
        let uniform = pairs.iter().all(|(_, v)| *v != "deepseek-v3");
        let q = serde_urlencoded::to_string(&pairs).unwrap();
        let r = get(&format!("/ledger?{q}")).await;
        let report = cli_report(&pairs);
        let mut linked = 0;
        for row in &report.rows {
            let at = r.body.find(&format!("<tr data-op=\"{}\"", row.op)).expect(&row.op);
            let tr = &r.body[at..at + r.body[at..].find("</tr>").unwrap()];
            let Some(h) = tr.split("<a class=\"zoomto\" href=\"").nth(1) else { continue };
            let href = h[..h.find('"').unwrap()].replace("&amp;", "&");
            assert!(href.starts_with("/powers-of-ten?") && href.contains("at="), "{href}");
            let page = get(&href).await;
            assert_eq!(page.status, StatusCode::OK, "{href}");
            assert!(!page.body.contains("id=\"zoom-notice\""), "{href} is a valid zoom path");
            if uniform {
                assert_eq!(value_of(&page.body, "node-flops"), row.flops / row.layers as f64, "{q} {href}");
            }
            linked += 1;
        }
        assert!(linked + 1 >= report.rows.len(), "{q}: {linked} of {} rows link", report.rows.len());
    }
}

// ---- Compare, the network graph, and what do I need. ----

/// The `data-value` of the cell of column `col` in the row with `id`.
fn cell(html: &str, id: &str, col: &str) -> Option<f64> {
    let at = html.find(&format!("<tr id=\"{id}\""))?;
    let row = &html[at..at + html[at..].find("</tr>")?];
    let marker = format!("data-col=\"{col}\"");
    let c = &row[..row.find(&marker)?];
    let v = c.rsplit("data-value=\"").next()?;
    // The value belongs to this cell only when no other cell began after it.
    if c.rfind("<td").unwrap_or(0) > c.rfind("data-value=\"").unwrap_or(0) {
        return None;
    }
    v[..v.find('"')?].parse().ok()
}

fn frontier(pairs: &[(&str, &str)], max_gpus: u64) -> llm_ledger_report::frontier::FrontierReport {
    use llm_ledger_core::serving::{Price, PriceSource};
    let sc = scenario(pairs);
    let price = Price { usd_per_hour: sc.gpu.usd_per_gpu_hour.unwrap(), source: PriceSource::CatalogueApproximate };
    llm_ledger_report::frontier::FrontierReport::build(&sc, price, 2e9, None, max_gpus, None).unwrap()
}

#[tokio::test]
async fn compare_lines_up_saved_scenarios_with_the_ledgers_numbers() {
    let uri = "/compare?s1=batch%3D8&s2=batch%3D64%26kv%3Dfp8&s3=default&s4=batch%3D8%26tp%3D2";
    let r = get(uri).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("data-columns=\"4\""));
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], f64);
    let cases: [Case; 4] = [
        ("A", &[("batch", "8")], 1.0),
        ("B", &[("batch", "64"), ("kv", "fp8")], 1.0),
        ("C", &[], 1.0),
        ("D", &[("batch", "8"), ("tp", "2")], 2.0),
    ];
    for (col, pairs, gpus) in cases {
        let l = cli_report(pairs);
        assert_eq!(cell(&r.body, "m-step", col), Some(l.step_time_s), "{col}");
        assert_eq!(cell(&r.body, "m-tokens", col), Some(l.tokens_per_s), "{col}");
        assert_eq!(cell(&r.body, "m-per-gpu", col), Some(l.tokens_per_s / gpus), "{col}");
        // Decode: one sequence sees one token per step.
        assert_eq!(cell(&r.body, "m-per-user", col), Some(1.0 / l.step_time_s), "{col}");
        assert_eq!(cell(&r.body, "m-memory", col), Some(l.fit.view.memory_bytes), "{col}");
    }
    // B differs from A (its ratio shown), and is the most tokens/s of the row.
    let step_row = &r.body[r.body.find("<tr id=\"m-tokens\"").unwrap()..];
    let step_row = &step_row[..step_row.find("</tr>").unwrap()];
    assert!(step_row.contains("class=\"num differs best\""), "{step_row}");
    // The controls' scenario is the third saved one; a fifth cannot be added.
    assert!(
        r.body.contains("The scenario set above is <strong>C</strong>"),
        "{}",
        &r.body[r.body.find("actions-line").unwrap()..][..300]
    );
    // Removing B renumbers the rest.
    assert!(r.body.contains("href=\"/compare?s1=batch%3D8&amp;s2=default&amp;s3=batch%3D8%26tp%3D2\""), "remove B");
    // The columns' document: 200, the same numbers.
    let json = get("/api/compare?s1=batch%3D8&s2=batch%3D64%26kv%3Dfp8&s3=default&s4=batch%3D8%26tp%3D2").await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v["columns"].as_array().unwrap().len(), 4);
    // (serde_json reads floats to within an ulp)
    let json_step = v["columns"][1]["step_time_s"].as_f64().unwrap();
    assert!((json_step - cell(&r.body, "m-step", "B").unwrap()).abs() < 1e-15, "{json_step}");
    let csv = get("/api/compare?s1=batch%3D8&format=csv").await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(csv.body.lines().count(), 2, "{}", csv.body);
    // Every download link of the page answers 200.
    for link in r.body.split("href=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).filter(|h| h.starts_with("/api/")) {
        let link = link.replace("&amp;", "&");
        assert_eq!(get(&link).await.status, StatusCode::OK, "{link}");
    }
    // With nothing saved: an invitation, and a link that adds the controls' scenario.
    let r = get("/compare?batch=16&kv=fp8").await;
    assert!(r.body.contains("id=\"no-saved\""));
    assert!(r.body.contains("href=\"/compare?batch=16&amp;kv=fp8&amp;s1=batch%3D16%26kv%3Dfp8\""), "add this");
}

#[tokio::test]
async fn compare_draws_the_pareto_front_of_plan() {
    use llm_ledger_report::plot::marks;
    let r = get("/compare?max_gpus=2").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let f = frontier(&[], 2);
    assert_eq!(value_of(&r.body, "deployments"), f.deployments.len() as f64);
    assert_eq!(value_of(&r.body, "front-count"), f.front.len() as f64);
    // Each deployment twice: in the wide plot and in the phone's.
    let ms: Vec<_> = marks(&r.body).into_iter().filter(|m| m.class.starts_with("deployment")).collect();
    assert_eq!(ms.len(), 2 * f.deployments.len());
    assert_eq!(ms.iter().filter(|m| m.class == "deployment front").count(), 2 * f.front.len());
    // The front is non-dominated: nothing is faster per user and more per GPU at once.
    for d in &f.front {
        assert!(!f.deployments.iter().any(|o| o.tokens_per_s_per_user > d.tokens_per_s_per_user
            && o.point.tokens_per_s_per_gpu > d.point.tokens_per_s_per_gpu));
    }
    // By hand for two layouts: tokens/s per GPU = batch ÷ step ÷ GPUs, the step the ledger's.
    let one = f.find(1, 1, 1, 1).unwrap();
    let step = cli_report(&[("batch", "1")]).step_time_s;
    assert_eq!(one.point.tpot_s, step);
    assert!((one.point.tokens_per_s_per_gpu - 1.0 / step).abs() < 1e-9 / step);
    let tp2 = f.find(2, 1, 1, 8).unwrap();
    let step = cli_report(&[("batch", "8"), ("tp", "2")]).step_time_s;
    assert!((tp2.point.tokens_per_s_per_gpu - 8.0 / step / 2.0).abs() < 1e-9 * tp2.point.tokens_per_s_per_gpu);
    assert!((tp2.tokens_per_s_per_user - 1.0 / step).abs() < 1e-9 / step);
    // Each point opens its scenario (the deployment's layout and batch) in the ledger.
    let m = ms.iter().find(|m| m.tooltip.starts_with("TP 2 (2 GPUs) at batch 8")).expect("TP 2 at batch 8");
    let href = m.href.as_deref().unwrap();
    assert_eq!(href, "/ledger?batch=8&tp=2");
    let page = get(href).await;
    assert_eq!(value_of(&page.body, "step-time"), step);
    // The front's table and its documents are plan --pareto's.
    let json = get("/api/plan?pareto=on&max_gpus=2").await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    assert_eq!(json.body, llm_ledger_report::Report::render(&f, Format::Json).unwrap());
    assert!(r.body.contains("href=\"/api/plan?pareto=on&amp;max_gpus=2\""), "the JSON link");
    assert_eq!(get("/api/plan?pareto=on&max_gpus=2&format=csv").await.status, StatusCode::OK);
    // The static plan takes requests' lengths: the decode step at their mean context, P + O/2.
    let by_lengths = get("/api/plan?tpot_ms=50&max_gpus=2&prompt=2000&output=300").await;
    assert_eq!(by_lengths.status, StatusCode::OK, "{}", by_lengths.body);
    assert_eq!(by_lengths.body, get("/api/plan?tpot_ms=50&max_gpus=2&ctx=2150").await.body);
    assert_eq!(r.body.matches("<tr data-tp=").count(), f.front.len(), "one row per point of the front");
    // A bound marks the deployments that miss it.
    let r = get("/compare?max_gpus=2&tpot_ms=8").await;
    assert!(r.body.contains("class=\"rejected\""), "a front point slower than 8 ms");
}

#[tokio::test]
async fn compare_refuses_bad_inputs_and_keeps_the_page() {
    let r = get("/compare?s1=batch%3D8&s2=batch%3D0").await;
    assert_page_refuses(&r, "saved scenario B (`s2` = `batch=0`): invalid `batch`: 0", "s2");
    assert!(r.body.contains("id=\"drop-key\""), "a link to start again without s2");
    assert!(r.body.contains("<title>Compare · error · llm-ledger</title>"));
    let r = get("/compare?max_gpus=0").await;
    assert_page_refuses(&r, "invalid `max_gpus`: 0", "max_gpus");
    let r = get("/compare?max_gpus=65").await;
    assert_page_refuses(&r, "invalid `max_gpus`: 65 (at most 64 GPUs per replica in one explorer answer", "max_gpus");
    assert_eq!(api_error("/api/plan?tpot_ms=50&max_gpus=1024").await.2.as_deref(), Some("max_gpus"));
    let r = get("/compare?reserve=lots").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Nothing fits within the budget: the page says so, and offers no download that would fail.
    let r = get("/compare?model=llama-3.1-405b&gpu=l4").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("id=\"no-front\""), "the refusal in words");
    assert!(!r.body.contains("/api/plan?"), "no link to a refused plan");
    assert_eq!(api_error("/api/compare?s1=batch%3D0").await.2.as_deref(), Some("s1"));
    assert_eq!(api_error("/api/compare?batch=1").await.2.as_deref(), Some("batch"));
    assert_eq!(api_error("/api/plan?tp=2&pareto=on").await.2.as_deref(), Some("tp"));
    assert_eq!(api_error("/api/plan?pareto=maybe").await.2.as_deref(), Some("pareto"));
    assert_eq!(api_error("/api/plan").await.2.as_deref(), Some("tpot_ms"));
    assert_eq!(api_error("/api/plan?rate=1&pareto=on&tpot_ms=50&ttft_ms=500").await.2.as_deref(), Some("pareto"));
    assert_eq!(
        api_error("/api/plan?rate=1&tpot_ms=50&ttft_ms=500&max_steps=90000000").await.2.as_deref(),
        Some("max_steps")
    );
    // The static plan is the CLI's.
    let r = get("/api/plan?tpot_ms=50&max_gpus=2").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let sc = scenario(&[]);
    let serving = llm_ledger_core::serving::ServingRequest { tpot_ms: Some("50".into()), ..Default::default() }
        .resolve(&sc)
        .unwrap();
    let plan = llm_ledger_report::plan::PlanReport::build(&sc, &serving, 2, None).unwrap();
    assert_eq!(r.body, plan.render(Format::Json).unwrap());
}

#[tokio::test]
async fn the_network_graph_is_the_zoom_tree_and_links_into_powers_of_ten() {
    use llm_ledger_report::plot::marks;
    let r = get("/graph?batch=8").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("data-parts=\"4\""), "embedding, the 32 layers as one, final norm, LM head");
    let tree = llm_ledger_core::ZoomTree::build(&scenario(&[("batch", "8")]));
    let parts: Vec<_> = marks(&r.body).into_iter().filter(|m| m.class.starts_with("graph-op")).collect();
    assert_eq!(parts.len(), 4);
    let paths: Vec<&str> = parts.iter().map(|m| m.href.as_deref().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "/powers-of-ten?batch=8&at=embedding",
            "/powers-of-ten?batch=8&at=layer.0",
            "/powers-of-ten?batch=8&at=final_norm",
            "/powers-of-ten?batch=8&at=lm_head"
        ]
    );
    // The layers' time is the stack's, and the parts add up to the step.
    let times: Vec<f64> = r
        .body
        .split("class=\"graph-op ")
        .skip(1)
        .map(|s| {
            let v = s.split("data-time-s=\"").nth(1).unwrap();
            v[..v.find('"').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(times[1], tree.groups[0].total.timing.time_s * 32.0);
    let step = cli_report(&[("batch", "8")]).step_time_s;
    assert!((times.iter().sum::<f64>() - step).abs() < 1e-9 * step);
    // Every operator of the layer's dataflow links to its zoom level, and they all answer.
    let mut seen = 0;
    for m in marks(&r.body).iter().filter(|m| m.class.starts_with("flow-op")) {
        let h = m.href.as_deref().unwrap();
        assert!(h.starts_with("/powers-of-ten?batch=8&at=layer.0."), "{h}");
        seen += 1;
    }
    assert!(seen >= 10, "{seen} operators");
    for p in paths {
        assert_eq!(get(p).await.status, StatusCode::OK, "{p}");
    }
    // The runs are folded until expanded.
    let r = get("/graph?expand=1").await;
    assert!(r.body.contains("data-parts=\"35\""));
    let r = get("/graph?model=deepseek-v3").await;
    assert_eq!(r.body.matches("data-layers=\"3\"").count() + r.body.matches("data-layers=\"58\"").count(), 2);
    // Its document is the zoom at the model.
    for f in ["", "&format=csv"] {
        let api = get(&format!("/api/zoom?batch=8&at=model{f}")).await;
        assert_eq!(api.status, StatusCode::OK);
    }
    assert!(get("/graph?batch=8").await.body.contains("href=\"/api/zoom?batch=8&amp;at=model\""));
}

#[tokio::test]
async fn the_graph_search_marks_the_operators_and_opens_their_layers() {
    let r = get("/graph?find=up").await;
    assert_eq!(r.status, StatusCode::OK);
    // up_proj in the layers (its box marked, its layers open); nothing else holds "up".
    assert!(r.body.contains("class=\"flow-op memory match\" data-path=\"layer.0.mlp.up\""), "the box is marked");
    assert!(r.body.contains("<details open>"), "the layers holding it are open");
    assert_eq!(value_attr(&r.body, "graph-count", "data-hits"), 1.0);
    assert!(r.body.contains("<a class=\"hit\" href=\"#g-layer.0\" data-path=\"layer.0.mlp.up\">up_proj</a>"));
    // A part's own name: the LM head.
    let r = get("/graph?find=lm_head").await;
    assert!(r.body.contains("class=\"graph-op memory match\" data-path=\"lm_head\""));
    assert!(!r.body.contains("<details open>"), "no layer holds it");
    // Nothing: said in words, every layer closed.
    let r = get("/graph?find=nothing-here").await;
    assert!(r.body.contains("Nothing matches “nothing-here”."));
    // Without JavaScript the search is a form that keeps the scenario.
    let r = get("/graph?batch=8&find=proj").await;
    assert!(r.body.contains(
        "<form class=\"graph-search\" id=\"graph-search\" role=\"search\" action=\"/graph\" method=\"get\">"
    ));
    assert!(r.body.contains("<input type=\"hidden\" name=\"batch\" value=\"8\">"));
    assert!(value_attr(&r.body, "graph-count", "data-hits") >= 7.0, "q, k, v, o, gate, up, down");
    let r = get("/graph?expand=2").await;
    assert_page_refuses(&r, "invalid `expand`: 2 (0 or 1)", "expand");
}

#[tokio::test]
async fn what_do_i_need_is_plans_answer_on_every_gpu() {
    use llm_ledger_core::plan::{fewest_gpus, plan, PlanRequest};
    use llm_ledger_core::serving::{Price, PriceSource};
    use llm_ledger_report::plot::marks;
    let r = get("/need?model=llama-3-70b&batch=16").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let sc = scenario(&[("model", "llama-3-70b"), ("batch", "16")]);
    let price = Price { usd_per_hour: sc.gpu.usd_per_gpu_hour.unwrap(), source: PriceSource::CatalogueApproximate };
    let req =
        PlanRequest { ctx: 2048, tpot_bound_s: f64::INFINITY, max_gpus: 64, price, reserve_bytes: 2e9, batches: None };
    let answer = fewest_gpus(&sc, &req, 16).unwrap().unwrap();
    // 141 GB of bf16 weights: two H100s.
    assert_eq!(answer.gpus, 2);
    assert_eq!(value_of(&r.body, "need-gpus"), 2.0);
    assert_eq!(value_of(&r.body, "need-tpot"), answer.tpot_s);
    // The plan's own point for that layout at that batch.
    let batches = Some(llm_ledger_core::sweep::Axis::single(16));
    let planned = plan(&sc, &PlanRequest { batches, ..req.clone() }).unwrap();
    let same = planned.ranked.iter().find(|p| (p.tp, p.pp, p.ep) == (answer.tp, answer.pp, answer.ep)).unwrap();
    assert_eq!(same.tpot_s, answer.tpot_s);
    assert_eq!(same.memory_bytes, value_of(&r.body, "need-memory"));
    // Every GPU of the catalogue has a row; the scenario's is marked.
    assert_eq!(r.body.matches("<tr data-gpu=").count(), Catalog::builtin().gpus().len());
    assert!(r.body.contains("<tr data-gpu=\"h100-sxm\" aria-current=\"true\""));
    // The memory wall is the memory model's at that layout.
    let layout = llm_ledger_core::plan::layouts(&sc, 2)
        .into_iter()
        .find(|l| (l.parallel.tp, l.parallel.pp, l.parallel.ep) == (answer.tp, answer.pp, answer.ep))
        .unwrap();
    let wall = llm_ledger_core::memory::max_batch(&layout, 2048, 2e9);
    assert_eq!(value_of(&r.body, "need-wall"), wall as f64);
    let fp =
        |b: u64| llm_ledger_core::memory::Footprint::of(&llm_ledger_core::memory::at_uniform(&layout, b, 2048), 2e9);
    assert!(fp(wall).fits && !fp(wall + 1).fits);
    let ms = marks(&r.body);
    let w = ms.iter().find(|m| m.class == "wall").expect("the wall's mark");
    assert!(w.href.as_deref().unwrap().contains(&format!("batch={wall}")), "{w:?}");
    let page = get(w.href.as_deref().unwrap()).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(value_of(&page.body, "need-gpus"), 2.0, "at the wall two still hold it");
    // On one GPU the default model: the ledger's step.
    let r = get("/need").await;
    assert_eq!(value_of(&r.body, "need-gpus"), 1.0);
    assert_eq!(value_of(&r.body, "need-tpot"), cli_report(&[]).step_time_s);
    // Its documents.
    let json = get("/api/need?model=llama-3-70b&batch=16").await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), Catalog::builtin().gpus().len());
    assert_eq!(get("/api/need?model=llama-3-70b&batch=16&format=csv").await.status, StatusCode::OK);
    for link in r.body.split("href=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).filter(|h| h.starts_with("/api/")) {
        let link = link.replace("&amp;", "&");
        assert_eq!(get(&link).await.status, StatusCode::OK, "{link}");
    }
}

#[tokio::test]
async fn what_do_i_need_refuses_bad_inputs_and_takes_an_uploaded_model() {
    assert_page_refuses(&get("/need?max_gpus=0").await, "invalid `max_gpus`: 0", "max_gpus");
    // The explorer's cap on one answer's search, as on Compare and /api/plan.
    let r = get("/need?max_gpus=65").await;
    assert_page_refuses(&r, "invalid `max_gpus`: 65 (at most 64 GPUs per replica in one explorer answer", "max_gpus");
    assert_eq!(api_error("/api/need?max_gpus=1024").await.2.as_deref(), Some("max_gpus"));
    assert_page_refuses(&get("/need?ttft_ms=500").await, "invalid `ttft_ms`: given", "ttft_ms");
    assert_page_refuses(&get("/need?rate=x").await, "invalid `rate`", "rate");
    assert_page_refuses(&get("/need?batch=0").await, "invalid `batch`: 0", "batch");
    // Nothing within the budget: each GPU says why, and the page is kept.
    let r = get("/need?model=llama-3.1-405b&gpu=l4&max_gpus=2").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("id=\"need-none\""));
    assert!(r.body.contains("no layout of at most 2 GPUs holds it"));
    // An uploaded config.json is a model like the presets.
    let r = send(multipart(&[("page", "need"), ("batch", "4")], Some(GPT2_CONFIG))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let location = r.headers[header::LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("/need?batch=4&config="), "{location}");
    let page = get(&location).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page_error(&page.body));
    assert!(page.body.contains("uploaded · decode · batch 4"), "the uploaded model in the headline");
    assert_eq!(value_of(&page.body, "need-gpus"), 1.0);
    assert_eq!(get(&location.replacen("/need", "/api/need", 1)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn what_do_i_need_plans_under_load_within_the_step_budget() {
    let r = get("/need?rate=2&ttft_ms=1000&tpot_ms=50&requests=100&max_gpus=2").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    assert!(r.body.contains("id=\"load-answer\""), "{}", &r.body[r.body.find("under-load").unwrap()..][..600]);
    let api = r.body.split("href=\"/api/plan?").nth(1).map(|s| format!("/api/plan?{}", &s[..s.find('"').unwrap()]));
    let api = api.expect("the plan under load's document").replace("&amp;", "&");
    assert!(api.contains("max_steps=50000000"), "{api}");
    let doc = get(&api).await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.body);
    let v: serde_json::Value = serde_json::from_str(&doc.body).unwrap();
    if let Some(best) = v["ranked"].get(0) {
        assert_eq!(value_of(&r.body, "load-gpus"), best["gpus"].as_f64().unwrap());
    }
    // Bounds nobody holds: said in the section, the page kept.
    let r = get("/need?rate=2&ttft_ms=0.001&tpot_ms=50&requests=100&max_gpus=2").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
}

/// The page's own example on a model whose whole search takes more than the explorer's step
/// budget once allowed (Llama 3.1 70B: over 2·10⁶ steps at every GPU count to 64) answers within
/// the deadline: the fewest GPUs are searched first, and a search cut short says so.
#[tokio::test]
async fn what_do_i_need_answers_its_own_example_for_a_large_model() {
    let r = get("/need?model=llama-3.1-70b&rate=2&ttft_ms=1000&tpot_ms=50").await;
    assert_eq!(r.status, StatusCode::OK, "{}", page_error(&r.body));
    let at = r.body.find("id=\"load-answer\"").expect("an answer under load");
    assert!(r.body[at..].contains("/M output"), "{}", &r.body[at..][..400]);
    assert!(!r.body.contains("raise it"), "no refusal that names a control the page lacks");
}

/// A phone's plots: `size=narrow` draws a plot 360 units wide with its legend below the plot
/// (the page's size is still the default), and every page with a line chart holds it at both
/// sizes, the narrow one with the same marks (numbers and links) as the wide one.
#[tokio::test]
async fn plots_come_at_a_phones_width_too() {
    use llm_ledger_report::plot::marks;
    for path in ["/plot/roofline.svg?batch=8", "/plot/batch-curve.svg?batch=1,8,64"] {
        let wide = get(path).await;
        assert_eq!(wide.status, StatusCode::OK, "{}", wide.body);
        assert!(wide.body.contains("viewBox=\"0 0 800 480\"") && !wide.body.contains("<g class=\"legend\">"));
        assert_eq!(get(&format!("{path}&size=wide")).await.body, wide.body, "wide is the default");
        let narrow = get(&format!("{path}&size=narrow")).await;
        assert_eq!(narrow.status, StatusCode::OK, "{}", narrow.body);
        assert_eq!(narrow.headers[header::CONTENT_TYPE], "image/svg+xml");
        assert!(narrow.body.starts_with("<?xml") && narrow.body.contains("viewBox=\"0 0 360 "), "{}", narrow.body);
        assert!(narrow.body.contains("<g class=\"legend\">"), "{}", narrow.body);
        let (status, message, field) = api_error(&format!("{path}&size=huge")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(message, "invalid `size`: \"huge\" is not `wide` or `narrow`");
        assert_eq!(field.as_deref(), Some("size"));
    }
    let pages = [
        ("/ledger?batch=64", "roofline"),
        ("/batching?ctx=4096", "batch-curve"),
        ("/kv-cache?batch=64", "kv-chart"),
        ("/moe?model=mixtral-8x7b&zipf=1", "moe-curve"),
        ("/serving?requests=200", "serving"),
        ("/need?model=llama-3-70b&batch=16", "memory-wall"),
    ];
    for (uri, class) in pages {
        let r = get(uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        let (wide, narrow) =
            (format!("<svg class=\"plot {class}\""), format!("<svg class=\"plot {class} plot-narrow\""));
        let (Some(w), Some(n)) = (r.body.find(&wide), r.body.find(&narrow)) else {
            panic!("{uri}: no {class} plot at both sizes");
        };
        assert!(w < n, "{uri}: the wide plot first");
        assert!(r.body.contains("<figure class=\"plot") && r.body.contains(" two-sizes\">"), "{uri}");
        let svg = |at: usize| &r.body[at..at + r.body[at..].find("</svg>").unwrap()];
        assert!(svg(n).contains("viewBox=\"0 0 360 ") && svg(n).contains("<g class=\"legend\">"), "{uri}");
        // (The wide roofline's legend dots carry their format's name; the narrow legend's do not.)
        let data = |svg: &str| marks(svg).into_iter().filter(|m| m.class != "legend").collect::<Vec<_>>();
        assert_eq!(data(svg(w)), data(svg(n)), "{uri}: the same marks at both sizes");
    }
    // The ledger's time and share columns are marked, for phones to show them first.
    let r = get("/ledger").await;
    assert!(r.body.contains("<table class=\"ledger results-first\" id=\"ledger\">"), "{}", r.body);
    let expected = if r.body.contains("<th class=\"num\" scope=\"col\">roofline</th>") { "expected" } else { "time" };
    assert!(r.body.contains(&format!("<th class=\"num time\" scope=\"col\">{expected}</th>")), "{}", r.body);
    let r = get("/ledger?time_model=roofline").await;
    assert!(r.body.contains("<th class=\"num time\" scope=\"col\">time</th>"), "{}", r.body);
    assert!(r.body.contains("<th class=\"share\" scope=\"col\">share of step</th>"));
}

/// A search abandoned at its deadline stops and frees its heavy-work slot: with one slot, two
/// plan searches of thousands of candidate batches are answered 503 at the deadline, and a heavy
/// request after them is answered within its own (before, each search held the slot until it
/// ended, seconds later, and every heavy page was 503 meanwhile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_searches_free_their_slot_at_the_deadline() {
    let limits = llm_ledger_web::Limits {
        heavy_workers: 1,
        request_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let app = app(Arc::new(AppState { limits, ..AppState::builtin() }));
    let search = "/api/plan?batch=1..2000&tpot_ms=1000&max_gpus=8";
    for _ in 0..2 {
        let r = app.clone().oneshot(get_req(search)).await.unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    // A short wait for the stopped search to hand its slot back (it checks its flag before each
    // step evaluation), well inside the next request's deadline of 300 ms.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let r = app.oneshot(get_req("/api/zoom?at=layer.0")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

/// The ledger page answers "which numbers are these?": each time carries where it came from
/// (a tooltip and `data-source`), and a legend says what each source means and which rows the
/// fitted model times.
#[tokio::test]
async fn the_ledger_page_says_where_each_time_comes_from() {
    let page = get("/ledger?model=mixtral-8x7b").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-source="table:h100_sxm/trtllm/1.3.0rc20/gemm""#), "no table source");
    // Mixtral's routed experts are a shape the MoE tables measured; its residual adds are fitted.
    assert!(page.body.contains(r#"data-source="table:h100_sxm/trtllm/1.3.0rc20/moe""#), "no MoE table source");
    assert!(page.body.contains("time from: fitted:vector"), "no fitted tooltip");
    assert!(page.body.contains(r#"id="sources""#) && page.body.contains("Which numbers are these?"));
    assert!(page.body.contains("Here the fitted model times"), "the legend names the fitted rows");
}
