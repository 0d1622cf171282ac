#!/usr/bin/env bash
# Create .venv/ at the repo root with a CPU build of torch and the kit (idempotent, quiet).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=2.13.0

if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check -qq "$@"; }

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    # Prefer a CPU build: a local wheel where pip is configured with one (find-links),
    # else PyTorch's CPU index. A bare `pip install torch` would pull a multi-GB CUDA build.
    if pip install --dry-run --no-deps --no-index "torch==${TORCH_VERSION}+cpu" >/dev/null 2>&1; then
        pip install "torch==${TORCH_VERSION}+cpu"
    else
        pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu \
            --extra-index-url https://pypi.org/simple
    fi
fi

# the kit itself (editable) and what releasing and the tests need; skipped when unchanged
stamp=.venv/.attention-kit-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # the oracle extra (transformers, tests/test_decoder_oracle.py) with torch held where it is: never a CUDA build
    echo "torch==${TORCH_VERSION}" > .venv/torch-constraint.txt
    pip install -e ".[dev,oracle]" -c .venv/torch-constraint.txt
    touch "$stamp"
fi
