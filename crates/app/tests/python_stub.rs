//! The Python package's type stub (`crates/python/python/llm_ledger/__init__.pyi`) names each
//! command's own keywords as the app's input tables do: a keyword added to one but not the other
//! fails here (the Python tests check the stub against the package itself).

use llm_ledger_app::scenario::scenario_inputs;
use llm_ledger_app::{moe, plan, simulate, sweep, zoom, Input};

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

/// The stub's keywords of `name` that are not scenario inputs (nor the files they name, nor
/// `executor`: where a plan's candidates run, not an input of the command).
fn own(name: &str) -> Vec<String> {
    let scenario: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
    stub_keywords(name)
        .into_iter()
        .filter(|k| !scenario.contains(&k.as_str()) && !["revision", "profile", "executor"].contains(&k.as_str()))
        .collect()
}

/// The stub's own keywords of `name` are `tables`' inputs that are not scenario inputs, in order,
/// and the others (an axis named as a scenario input, `batch`) are keywords of `name` too.
fn assert_stub_is_tables(name: &str, tables: &[&[Input]]) {
    let scenario: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
    let inputs: Vec<&Input> = tables.iter().flat_map(|t| t.iter()).collect();
    let own_names: Vec<String> =
        inputs.iter().filter(|i| !scenario.contains(&i.name)).map(|i| i.name.to_string()).collect();
    assert_eq!(own(name), own_names, "{name}");
    let all = stub_keywords(name);
    for i in inputs {
        assert!(all.iter().any(|k| k == i.name), "{name} has no keyword `{}`", i.name);
    }
}

#[test]
fn the_stubs_command_keywords_are_the_apps_tables() {
    assert_stub_is_tables("simulate", &[simulate::inputs()]);
    assert_stub_is_tables("plan", &[plan::inputs(), plan::load_inputs()]);
    assert_stub_is_tables("sweep", &[sweep::inputs()]);
    assert_stub_is_tables("moe", &[moe::inputs()]);
    assert_stub_is_tables("zoom", &[zoom::inputs()]);
}
