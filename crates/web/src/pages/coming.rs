//! The placeholder of a page whose data has not landed yet.

use super::PageInfo;
use crate::query::PageQuery;
use maud::{html, Markup};

/// The placeholder body.
pub fn render(page: &PageInfo, issue: u32, plan: &str, q: &PageQuery) -> Markup {
    html! {
        h1 { (page.title) " " span.badge { "coming" } }
        p.lead { (page.summary) }
        div.placeholder #coming data-issue=(issue) {
            p { strong { "Coming with issue " (issue) ". " } (plan) }
            p {
                "Until then, the " a href=(q.href("/ledger", &[])) { "Ledger" }
                " shows the same scenario per operator, with its roofline."
            }
        }
    }
}
