#!/usr/bin/env bash
# One entry point for a fresh machine: creates .venv, installs hfq and what it needs from PyPI.
#   bash run.sh demo    the demo: synthetic TAQ week -> CSV -> hfq, reads, point query, vs pickle
#                       (writes to $HFQ_DEMO_DIR, else ~/.cache/hfq/demo: never into the clone)
#   bash run.sh test    the test suite (what CI runs)
#   bash run.sh bench   the benchmark suite (benchmarks/run.py; pass its options after 'bench')
# The commands run in any order in one clone: each installs the extras it needs on top of those
# already installed (.venv/.hfq-installed records them with pyproject.toml's checksum).
set -euo pipefail
cd "$(dirname "$0")"
cmd=${1:-help}; shift || true
venv=.venv
stamp=$venv/.hfq-installed
case "$cmd" in
    demo|test|bench) ;;
    *) echo "usage: bash run.sh demo|test|bench [args]"; exit 2 ;;
esac
case "$cmd" in
    test)  need=dev ;;
    bench) need=dev,bench ;;
    *)     need=cli ;;
esac
sha="$(sha1sum pyproject.toml | cut -c1-40)"
# the stamp is "<sha1 of pyproject.toml>-<extra>,<extra>..."
have=""
if [ -f "$stamp" ]; then
    line="$(cat "$stamp")"
    if [ "${line:0:40}" = "$sha" ]; then have="${line:41}"; fi
fi
missing=""
for extra in ${need//,/ }; do
    case ",$have," in *",$extra,"*) ;; *) missing="$missing $extra" ;; esac
done
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if [ -n "$missing" ]; then
    # install the union, so that switching between demo, test and bench reinstalls nothing
    extras="$(printf '%s\n' ${have//,/ } ${need//,/ } | sort -u | paste -sd, -)"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
    echo "$sha-$extras" > "$stamp"
fi
case "$cmd" in
    demo)  exec "$venv/bin/hfq" demo "$@" ;;
    test)  exec "$venv/bin/python" -m pytest "$@" ;;
    bench) exec "$venv/bin/python" benchmarks/run.py "$@" ;;
esac
