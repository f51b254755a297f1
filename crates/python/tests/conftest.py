"""Test support: the CLI binary the Python numbers are checked against (`cargo build -p llm-ledger`
first; `.ci/python-tests` runs after `cargo test --workspace`, which builds it), and the repository
root."""

import importlib
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def cli_binary():
    explicit = os.environ.get("LLM_LEDGER_BIN")
    if explicit:
        return pathlib.Path(explicit)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    return target / "debug" / "llm-ledger"


@pytest.fixture(scope="session")
def cli():
    """Run the CLI with `args`; return its stdout (text), or raise with its stderr."""
    binary = cli_binary()
    assert binary.is_file(), f"{binary} is missing: run `cargo build -p llm-ledger` (or set LLM_LEDGER_BIN)"

    def run(*args, ok=True):
        p = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=120)
        if ok:
            assert p.returncode == 0, f"llm-ledger {' '.join(map(str, args))}: {p.stderr}"
            return p.stdout
        assert p.returncode == 2, f"llm-ledger {' '.join(map(str, args))} exited {p.returncode}: {p.stdout}"
        return p.stderr.strip()

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """The CLI's `--format json` of `args`, parsed."""

    def run(*args):
        return json.loads(cli(*args, "--format", "json"))

    return run


def optional_module(name, what):
    """`name` imported, for the tests of `what`: skipped loudly on a machine without it, a failure
    under CI (`.ci/python-tests` installs pandas, which brings NumPy), so a CI run never passes by
    skipping."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed, and CI must run the {what} tests")
        pytest.skip(f"SKIP: {name} is not installed (pip install {name} to run the {what} tests)")


@pytest.fixture
def pd():
    """pandas, for the `to_pandas()` tests."""
    return optional_module("pandas", "to_pandas()")


@pytest.fixture
def np():
    """NumPy, for the `arrays` tests."""
    return optional_module("numpy", "arrays")


def refuse_import(monkeypatch, refused):
    """Make `import refused` raise ImportError, as on a machine without it."""
    import builtins

    real = builtins.__import__

    def without(name, *a, **k):
        if name == refused:
            raise ImportError(f"No module named '{refused}'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", without)
