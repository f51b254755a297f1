//! The shared page layout: head, navigation (every link carries the scenario), the controls, the
//! error box or the page's body, and the footer. Server-rendered with `maud`, which escapes every
//! interpolated value.

use crate::assets;
use crate::error::AppError;
use crate::form;
use crate::pages::{PageInfo, PAGES};
use crate::query::PageQuery;
use crate::AppState;
use maud::{html, Markup, DOCTYPE};

/// The whole document.
pub(crate) fn layout(
    state: &AppState,
    page: &'static PageInfo,
    query: &PageQuery,
    body: Result<Markup, AppError>,
) -> Markup {
    let error = body.as_ref().err();
    // An error page's links to the other pages leave out the input it refuses, so they show a
    // result (the refused value is still in this page's URL and its control).
    let refused = error.and_then(|e| e.field.as_deref()).filter(|f| crate::query::scenario_fields().contains(f));
    let links_query = refused.map(|f| query.clone_with(&[(f, None)]));
    let links_query = links_query.as_ref().unwrap_or(query);
    let title = match error {
        Some(e) if e.status == axum::http::StatusCode::NOT_FOUND => "Not found · llm-ledger".to_string(),
        Some(_) => format!("{} · error · llm-ledger", page.title),
        None => format!("{} · llm-ledger", page.title),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) }
                // No icon: an empty one, so that browsers do not ask for /favicon.ico (a 404).
                link rel="icon" href="data:,";
                link rel="stylesheet" href=(assets::css_path());
                script src=(assets::js_path()) defer {}
            }
            body {
                // The first stop for the keyboard: past the navigation and the controls.
                a.skip-link href="#content" { "Skip to the result" }
                div #page data-page=(page.slug) {
                    header.top {
                        a.brand href=(links_query.href("/", &[])) { "llm-ledger" }
                        span.tagline { "where the FLOPs, the bytes and the time of a forward pass go" }
                        @if page.controls {
                            // Shown by the script, which keeps the saved scenarios in the browser.
                            span.save-scenario {
                                button #save-scenario type="button" hidden data-keys=(page.keys.join(",")) { "Save for comparison" }
                                span #saved-note role="status" {}
                            }
                        }
                    }
                    (nav(page, links_query))
                    @if page.controls {
                        (form::controls(state, page, &query.shown(), error.and_then(|e| e.field.as_deref())))
                    }
                    main #content tabindex="-1" {
                        @match &body {
                            Ok(m) => {
                                @if let Some(b) = crate::fit::banner(state, page, query) { (b) }
                                (m)
                            },
                            Err(e) => (error_page(e, page, query)),
                        }
                    }
                    footer.bottom {
                        "Every number on these pages is the CLI's: "
                        code { "llm-ledger ledger" } " with the same inputs prints the same ledger. "
                        "Nothing you enter leaves this page's URL; nothing is stored."
                    }
                }
            }
        }
    }
}

fn nav(current: &PageInfo, query: &PageQuery) -> Markup {
    html! {
        nav.pages aria-label="pages" {
            ul {
                @for p in PAGES {
                    li {
                        @if std::ptr::eq(p, current) {
                            a href=(query.href(&p.path(), &[])) aria-current="page" data-slug=(p.slug) { (p.title) }
                        } @else {
                            a href=(query.href(&p.path(), &[])) data-slug=(p.slug) title=(p.summary) { (p.title) }
                        }
                    }
                }
            }
        }
    }
}

/// A page that cannot show its result: the page's heading and what it shows, the error, and
/// how to get back to a result (the control it is about, or the page without the input).
pub(crate) fn error_page(e: &AppError, page: &PageInfo, query: &PageQuery) -> Markup {
    let not_found = e.status == axum::http::StatusCode::NOT_FOUND;
    html! {
        h1 { (if not_found { "Not found" } else { page.title }) }
        p.lead { (if not_found { "There is no page at this address: the pages are listed above." } else { page.summary }) }
        (error_box(e, page, query))
        @if e.status.is_client_error() {
            p.note #error-help {
                "The page shows its result once every input is one it accepts. "
                @if let Some(f) = e.field.as_deref().filter(|f| crate::query::scenario_fields().contains(f) || page.keys.contains(f)) {
                    a #error-drop href=(drop_field(page, query, f)) { "Show it without " code { (f) } }
                    " (its default), or "
                }
                a href=(page.path()) { "start from the default scenario" } "."
            }
        }
    }
}

/// The page with the input `field` left out (its default).
fn drop_field(page: &PageInfo, query: &PageQuery, field: &str) -> String {
    if page.keys.contains(&field) {
        query.href_page(&page.path(), &[], &[(field, None)])
    } else {
        query.href_page(&page.path(), &[(field, None)], &[])
    }
}

/// The error, with a link to the control it is about (or, for a page key without a control such
/// as a zoom path, a link to the page without it).
pub(crate) fn error_box(e: &AppError, page: &PageInfo, query: &PageQuery) -> Markup {
    let hidden_key = e.field.as_deref().filter(|f| page.keys.contains(f) && !page.inputs.iter().any(|i| i.name == *f));
    html! {
        div.error #error role="alert" data-status=(e.status.as_u16()) data-field=[e.field.as_deref()] {
            strong { "Cannot show this page: " }
            span.message { (e.message) }
            @if let Some(f) = &e.field {
                @if page.controls && (crate::query::scenario_fields().contains(&f.as_str()) || page.inputs.iter().any(|i| i.name == f)) {
                    " " a.to-control href={ "#f-" (f) } data-control={ "f-" (f) } { "(go to " code { (f) } ")" }
                }
                @if let Some(k) = hidden_key {
                    " " a #drop-key href=(query.href_page(&page.path(), &[], &[(k, None)])) { "(start again without " code { (k) } ")" }
                }
            }
        }
    }
}
