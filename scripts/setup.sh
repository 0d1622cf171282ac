#!/usr/bin/env bash
# Create .venv/ at the repo root with a CPU build of torch and the kit (idempotent, quiet).
# Installs go through uv (a Rust installer, from PyPI into the venv) where it can be had: a fresh
# venv in some 20 s instead of some 4.5 minutes with pip (issue 27); pip otherwise.
# Both leave every installed module compiled to bytecode (pip does it by default, uv when asked):
# where PYTHONDONTWRITEBYTECODE is set, nothing is ever cached, and each process that grades would
# compile torch's, nbformat's and Jupyter's Python afresh (torch's import 4.2 s instead of 1.5 s).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=2.13.0

if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check -qq "$@"; }

# uv reads none of pip's configuration: the same find-links, indexes, constraints and certificate
# are handed to it here (from PIP_* variables, else pip's config files), and it weighs every index
# as pip does (unsafe-best-match: the best version from any index, not the first index's only)
UV=()
if [ "${ATTENTION_KIT_NO_UV:-}" != 1 ] && { .venv/bin/python -m uv --version >/dev/null 2>&1 \
        || pip install uv >/dev/null 2>&1; } && .venv/bin/python -m uv --version >/dev/null 2>&1; then
    UV=(.venv/bin/python -m uv pip install --quiet --python .venv/bin/python --index-strategy unsafe-best-match
        --compile-bytecode)
    setting() {     # PIP_X, else pip's global.x
        local var="PIP_$(echo "$1" | tr 'a-z-' 'A-Z_')"
        if [ -n "${!var:-}" ]; then echo "${!var}"; else pip config get "global.$1" 2>/dev/null || true; fi
    }
    for v in $(setting find-links); do UV+=(--find-links "$v"); done
    for v in $(setting index-url); do UV+=(--index-url "$v"); done
    for v in $(setting extra-index-url); do UV+=(--extra-index-url "$v"); done
    for v in $(setting constraint); do [ -f "$v" ] && UV+=(--constraint "$v"); done
    cert=$(setting cert)
    if [ -n "$cert" ] && [ -z "${SSL_CERT_FILE:-}" ]; then export SSL_CERT_FILE="$cert"; fi
fi
install() {
    if [ ${#UV[@]} -gt 0 ]; then "${UV[@]}" "$@"; else pip install "$@"; fi
}

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    # Prefer a CPU build: a local wheel where pip is configured with one (find-links),
    # else PyTorch's CPU index. A bare `pip install torch` would pull a multi-GB CUDA build.
    if pip install --dry-run --no-deps --no-index "torch==${TORCH_VERSION}+cpu" >/dev/null 2>&1; then
        install "torch==${TORCH_VERSION}+cpu"
    else
        install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu \
            --extra-index-url https://pypi.org/simple
    fi
fi

# the kit itself (editable) and what releasing and the tests need; skipped when unchanged
stamp=.venv/.attention-kit-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # the oracle extra (transformers, tests/reference/test_decoder_oracle.py) with torch held where it
    # is: never a CUDA build
    echo "torch==${TORCH_VERSION}" > .venv/torch-constraint.txt
    install -e ".[dev,oracle]" --constraint .venv/torch-constraint.txt
    # jsonschema's optional IRI-syntax checker (pulled in by jupyter-events' format extra) builds 38
    # grammars with lark each time jsonschema is imported: 1.5 s in every process that reads a
    # notebook (nbformat), runs nbgrader or starts a kernel's client. No schema the kit or nbgrader
    # validates has an "iri" or "iri-reference" format; without it jsonschema skips those two checks.
    pip uninstall -y rfc3987-syntax >/dev/null 2>&1 || true
    touch "$stamp"
fi

# The kit's own Python compiled too (skipped when up to date): where PYTHONDONTWRITEBYTECODE is
# set, every grader process, batch worker and zygote would otherwise compile the grader, the
# suites and the references afresh (some 0.25 s of CPU per `grade`; issue 27)
.venv/bin/python -m compileall -q -j 0 autograder solutions >/dev/null
