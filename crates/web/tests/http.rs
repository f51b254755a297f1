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
        if !page.is_ready() {
            assert!(r.body.contains("id=\"coming\""), "{}", page.path());
            assert!(r.body.contains("Coming with issue"));
        }
    }
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
    // Seed 004: batch 1 at 2,048 tokens reads 15.3 GB and does 16 GFLOP per step (full counting: 16.1 GFLOP,
    // the seed's rows plus norms, rope and residuals); the step is 5.71 ms at 60 %/80 % of peak.
    let r = get("/ledger").await;
    assert!(r.body.contains(">15.3 GB<"));
    assert!(r.body.contains(">16.1 GFLOP<"));
    assert!(r.body.contains(">5.71 ms<"));
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
        assert_eq!(r.body, cli_report(&pairs).render(Format::Json), "{q}");
        let csv = get(&format!("/api/ledger?{q}&format=csv")).await;
        assert_eq!(csv.body, cli_report(&pairs).render(Format::Csv));
    }
    let c = Catalog::builtin();
    assert_eq!(get("/api/models").await.body, llm_ledger_report::catalog::ModelList::new(&c).render(Format::Json));
    assert_eq!(get("/api/gpus?format=md").await.body, llm_ledger_report::catalog::GpuList::new(&c).render(Format::Md));
    let svg = get("/plot/roofline.svg?batch=8").await;
    assert_eq!(svg.headers[header::CONTENT_TYPE], "image/svg+xml");
    assert!(svg.body.starts_with("<?xml") && svg.body.contains("<svg class=\"plot roofline\""));
}

/// Every refusal is the core's (or serde's) one-line message, on the page with status 400 and in
/// the API's JSON, naming the field.
#[tokio::test]
async fn bad_parameters_are_400_with_the_message_and_the_field() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("batch=0", "invalid `batch`: 0 (an integer in 1..=1073741824)", Some("batch")),
        ("batch=-3", "invalid `batch`: \"-3\" (a non-negative integer)", Some("batch")),
        ("gpu=h900", "unknown GPU `h900`; accepted: a100-40gb-sxm,", Some("gpu")),
        ("model=llama-9", "unknown model `llama-9`; accepted: llama-3-8b,", Some("model")),
        ("kv=int3", "unknown precision for `kv` `int3`; accepted:", Some("kv")),
        ("phase=train", "unknown phase `train`; accepted: decode, prefill", Some("phase")),
        ("phase=prefill&ctx=0", "invalid `ctx`: 0 (a prompt of at least 1 token in prefill)", Some("ctx")),
        ("contexts=2048x8&batch=2", "invalid `contexts`: given together with batch/ctx", Some("contexts")),
        ("flash=maybe", "unknown value for `flash` `maybe`; accepted: on, off", Some("flash")),
        (
            "compute_efficiency=1.5",
            "invalid `compute_efficiency`: 1.5 (a fraction in (0, 1])",
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
    // Every page checks the scenario, also those that only list or are still to come.
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
    assert_eq!(get("/nope").await.status, StatusCode::NOT_FOUND);
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
    assert_eq!(api.body, expected.render(Format::Json));
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
    assert_eq!(r.body, expected.render(Format::Json));
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

    /// The scenario's fields, the page keys, and one unknown key.
    fn fields() -> Vec<&'static str> {
        SCENARIO_FIELDS.iter().copied().chain(["config", "format", "x"]).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
        /// Whatever the query, every page and the API answer 200 or a 4xx, never a 5xx.
        #[test]
        fn arbitrary_queries_never_make_a_server_error(
            pairs in proptest::collection::vec((0..20usize, "[ -~]{0,12}|[0-9]{1,25}|[0-9]{1,6}x[0-9]{1,6}"), 0..4),
            page in 0..PAGES.len() + 1,
        ) {
            let fields = fields();
            let q: Vec<(&str, String)> = pairs.iter().map(|(i, v)| (fields[*i % fields.len()], v.clone())).collect();
            let q = serde_urlencoded::to_string(&q).unwrap();
            let path = PAGES.get(page).map(|p| p.path()).unwrap_or_else(|| "/api/ledger".into());
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let r = rt.block_on(get(&format!("{path}?{q}")));
            prop_assert!(r.status.is_success() || r.status.is_client_error(), "{path}?{q} → {}", r.status);
        }
    }
}
