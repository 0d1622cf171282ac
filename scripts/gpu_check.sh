#!/usr/bin/env bash
# The CUDA part of the kit's checks, for a machine with a GPU and a Python that has torch,
# numpy and pytest (no venv needed): the CUDA tests, then the torch steps graded with their
# device checks. Writes logs to ${OUT:-out/gpu}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
$py -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0)); print('numpy', numpy.__version__)"
$py -m pytest tests/suites/test_cuda.py -q -p no:cacheprovider 2>&1 | tee "$out/test_cuda.log"
for sub in source/self_attention samples/unusual_style samples/lesson; do
    name=$(echo "$sub" | tr '/' '_')
    start=$(date +%s%N)
    $py -m autograder grade "$sub" --steps 06_multi_head,07_full_module --results "$out/$name.json" > "$out/$name.txt" 2>&1
    end=$(date +%s%N)
    echo "== $sub: $(grep -E '^ +total' "$out/$name.txt") in $(( (end - start) / 1000000 )) ms"
done
$py - "$out" <<'PY'
import json, sys, glob
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(path))
    dev = [t for t in r["tests"] if "kind:device" in t["tags"]]
    print(path.split("/")[-1], "isolation:", r["extra_data"]["isolation"].get("mode"), r["extra_data"]["isolation"].get("namespaces"))
    for t in dev:
        tags = [g for g in t["tags"] if g.startswith("misconception:")]
        print(f"  {t['number']:5} {t['status']:6} {t['name'][:70]} {tags}")
        if t["status"] != "passed":
            print("        ", t["output"][:300].replace("\n", " | "))
PY
