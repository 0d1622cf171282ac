#!/usr/bin/env bash
# Set up, then grade the sample submissions shipped in the repo. Results go to out/samples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out/samples
for sub in source/self_attention samples/unusual_style samples/lesson assignments/self_attention; do
    name=$(echo "$sub" | tr '/' '_')
    echo "================================================================ $sub"
    .venv/bin/python -m autograder grade "$sub" --results "out/samples/$name.json" --quiet
    echo
done
echo "Full messages: .venv/bin/python -m autograder grade samples/lesson"
