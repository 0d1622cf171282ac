#!/usr/bin/env bash
# Set up, then grade the sample submissions shipped in the repo. Results go to out/samples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out/samples
grade() {   # grade() SUBMISSION [--quiet]
    echo "================================================================ $1"
    .venv/bin/python -m autograder grade "$1" --results "out/samples/$(echo "$1" | tr '/' '_').json" "${@:2}"
    echo
}
grade source/self_attention --quiet        # the master notebooks, solutions in place: full marks
grade samples/unusual_style --quiet        # correct code in other idioms: full marks
grade assignments/self_attention --quiet   # the released stubs: zero, each check says which step is a stub
grade source/modern_attention --quiet      # the second assignment's masters: full marks
grade assignments/modern_attention --quiet # its stubs: zero
.venv/bin/python - <<'PY'
import json
print("first message for the stubs:", json.load(open("out/samples/assignments_self_attention.json"))["tests"][0]["output"], "\n")
PY
grade samples/lesson                       # the lesson's own code, with every message: its mistakes named
grade samples/modern_mistakes              # the second assignment with one named habit a step
