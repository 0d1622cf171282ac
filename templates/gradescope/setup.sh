#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu, with this
# zip unpacked in /autograder/source). It installs Python, a CPU build of torch and the kit into
# /opt/attention-kit, at the versions in constraints.txt (those the zip was built with).
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q python3 python3-venv python3-pip
python3 -m venv /opt/attention-kit
pip() { /opt/attention-kit/bin/python -m pip --disable-pip-version-check -q "$@"; }
# A plain `pip install torch` would pull a multi-GB CUDA build: take the CPU one.
pip install -c constraints.txt torch --index-url https://download.pytorch.org/whl/cpu \
    --extra-index-url https://pypi.org/simple
pip install -c constraints.txt .
