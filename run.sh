#!/usr/bin/env bash
# One entry point for a fresh machine: creates .venv, installs hfq and what it needs from PyPI.
#   bash run.sh demo    the demo: synthetic TAQ week -> CSV -> hfq, reads, point query, vs pickle
#   bash run.sh test    the test suite (what CI runs)
#   bash run.sh bench   the benchmark suite (benchmarks/run.py; pass its options after 'bench')
set -euo pipefail
cd "$(dirname "$0")"
cmd=${1:-help}; shift || true
venv=.venv
stamp=$venv/.hfq-installed
case "$cmd" in
    test)  extras=dev ;;
    bench) extras=dev,bench ;;
    *)     extras=cli ;;
esac
want="$(sha1sum pyproject.toml | cut -c1-40)-$extras"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
    echo "$want" > "$stamp"
fi
case "$cmd" in
    demo)  exec "$venv/bin/hfq" demo "$@" ;;
    test)  exec "$venv/bin/python" -m pytest "$@" ;;
    bench) exec "$venv/bin/python" benchmarks/run.py "$@" ;;
    *) echo "usage: bash run.sh demo|test|bench [args]"; exit 2 ;;
esac
