#!/usr/bin/env bash
# Build the student's environment from requirements-student.txt: numpy, a CPU build of torch and
# JupyterLab; nothing of the kit, and no nbgrader (so JupyterLab shows no instructor tools).
#
#   bash scripts/student_env.sh [DIR]
#
# DIR defaults to $ATTENTION_KIT_STUDENT_VENV, else a cache folder outside the repo named after the
# requirements file's hash (~/.cache/attention-kit/student-venv-<hash>/), so that every clone on a
# machine, CI's included, shares one build. Idempotent: a finished build of the same requirements
# is reused at once. Prints DIR; open the notebooks with DIR/bin/jupyter lab assignments/self_attention
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=requirements-student.txt
PY=${PYTHON:-python3}
key=$({ cat "$REQ"; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
VENV=${1:-${ATTENTION_KIT_STUDENT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/attention-kit/student-venv-$key}}
done_stamp="$VENV/.built-from-$key"

mkdir -p "$VENV"
exec 9>"$VENV/.lock"          # the browser test and a person may build it at once: one builds, one waits
flock 9
if [ ! -f "$done_stamp" ]; then
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -qq "$@"; }
    # --no-compile: byte-compiling all of torch costs half the build; a kernel compiles what it imports
    # A bare torch requirement would pull a multi-GB CUDA build: as scripts/setup.sh does, take the CPU
    # build from a local wheel where pip is configured with one (find-links), else PyTorch's CPU index.
    TORCH_VERSION=$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' "$REQ")
    if pip install --dry-run --no-deps --no-index "torch==${TORCH_VERSION}+cpu" >/dev/null 2>&1; then
        pip install --no-compile "torch==${TORCH_VERSION}+cpu"
        pip install --no-compile -r "$REQ"
    else
        pip install --no-compile -r "$REQ" --extra-index-url https://download.pytorch.org/whl/cpu
    fi
    rm -f "$VENV"/.built-from-*
    touch "$done_stamp"
fi
echo "$VENV"
