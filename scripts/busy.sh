#!/usr/bin/env bash
# Run a command while N CPU-bound processes compete with it (default 2: as many as this machine's
# cores), to prove that no test's verdict depends on the machine's speed (issue 27):
#     bash scripts/busy.sh 2 bash .ci/run
# The hogs are busy shell loops, killed when the command ends; its exit code is returned.
set -uo pipefail
n=${1:?usage: busy.sh N COMMAND...}
shift
hogs=()
for _ in $(seq "$n"); do
    (trap - INT; while :; do :; done) &
    hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
"$@"
