"""Test support: the CLI binary the Python numbers are checked against (`cargo build -p llm-ledger`
first; `.ci/python-tests` runs after `cargo test --workspace`, which builds it), and the repository
root."""

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


@pytest.fixture
def pd():
    """pandas, for the `to_pandas()` tests: skipped loudly on a machine without it, a failure
    under CI (`.ci/python-tests` installs it), so a CI run never passes by skipping."""
    try:
        import pandas
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pandas is not installed, and CI must run the to_pandas() tests")
        pytest.skip("SKIP: pandas is not installed (pip install pandas to run the to_pandas() tests)")
    return pandas


@pytest.fixture
def np():
    """NumPy, for the `arrays` tests: skipped loudly on a machine without it, a failure under CI
    (`.ci/python-tests` installs pandas, which brings it)."""
    try:
        import numpy
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("NumPy is not installed, and CI must run the arrays tests")
        pytest.skip("SKIP: NumPy is not installed (pip install numpy to run the arrays tests)")
    return numpy
