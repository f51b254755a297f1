//! The Python package's type stub (`crates/python/python/llm_ledger/__init__.pyi`) names each
//! command's own keywords as the app's input tables do: a keyword added to one but not the other
//! fails here (the Python tests check the stub against the package itself).

use llm_ledger_app::scenario::scenario_inputs;
use llm_ledger_app::{plan, simulate, Input};

/// The keyword names of `def NAME(` in the stub, in order.
fn stub_keywords(name: &str) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../python/python/llm_ledger/__init__.pyi");
    let stub = std::fs::read_to_string(path).expect("the Python stub");
    let start = stub.find(&format!("def {name}(")).unwrap_or_else(|| panic!("no `def {name}(` in the stub"));
    let body = &stub[start..];
    let end = body.find(") ->").expect("the end of the signature");
    body[..end]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.trim().to_string()))
        .filter(|k| !k.is_empty() && k != "*")
        .collect()
}

/// The stub's keywords of `name` that are not scenario inputs nor in `other`.
fn own(name: &str, other: &[&str]) -> Vec<String> {
    let scenario: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
    stub_keywords(name)
        .into_iter()
        .filter(|k| !scenario.contains(&k.as_str()) && !["revision", "profile"].contains(&k.as_str()))
        .filter(|k| !other.contains(&k.as_str()))
        .collect()
}

fn names(t: &[Input]) -> Vec<String> {
    t.iter().map(|i| i.name.to_string()).collect()
}

#[test]
fn the_stubs_simulate_keywords_are_the_apps_table() {
    assert_eq!(own("simulate", &[]), names(simulate::inputs()));
}

#[test]
fn the_stubs_plan_under_load_keywords_are_the_apps_table() {
    assert_eq!(own("plan", &["tpot_ms", "max_gpus", "usd_per_hour", "reserve"]), names(plan::load_inputs()));
}
