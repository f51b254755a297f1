use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use llm_ledger_web::{app, AppState};
use std::sync::Arc;
use tower::ServiceExt;
#[tokio::main]
async fn main() {
    let uri = std::env::args().nth(1).unwrap();
    let res = app(Arc::new(AppState::builtin())).oneshot(Request::get(uri.as_str()).body(Body::empty()).unwrap()).await.unwrap();
    let b = res.into_body().collect().await.unwrap().to_bytes();
    print!("{}", String::from_utf8_lossy(&b));
}
