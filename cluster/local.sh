#!/usr/bin/env bash
# A multi-node Ray cluster on this machine for hfq: one head and N-1 worker nodes, each Ray node
# with its own HFQ_NODE_ROOT (<root>/node<i>), as if each had its own local disk.
#
#   cluster/local.sh start  [--nodes N] [--cpus C] [--root DIR] [--dashboard-port P]
#                           [--object-store-mb M]
#   cluster/local.sh status [--root DIR]
#   cluster/local.sh stop   [--root DIR] [--keep-temp]
#
# --root defaults to $HFQ_CLUSTER_ROOT, else ./hfq_cluster.  What a start did is kept under
# <root>/.cluster/: the Ray temp dir (unique per start), the address, the dashboard URL, the pids,
# the token file and an `env` file to source (RAY_ADDRESS, auth) before `ray job submit` or
# `hfq.connect(address="auto")`.
#
# stop never runs `ray stop` (that kills every Ray cluster on the machine): it stops the
# processes whose command line or environment names this cluster's unique Ray temp dir, and
# every process descended from them (workers, job drivers), and nothing else.
#
# Token authentication stays on: each cluster gets its own token (<root>/.cluster/auth_token,
# mode 600) shared with every node through RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH, unless
# the caller exports RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH (used as given) or
# RAY_AUTH_MODE=disabled (tests only).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${RAY:-}" ]; then :
elif [ -x "$REPO/.venv/bin/ray" ]; then RAY=$REPO/.venv/bin/ray
else RAY=$(command -v ray || true)
fi
[ -n "$RAY" ] || { echo "local.sh: no 'ray' command (set RAY= or create $REPO/.venv)" >&2; exit 2; }
PYTHON=$(dirname "$RAY")/python
[ -x "$PYTHON" ] || PYTHON=python3

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "local.sh: $*" >&2; exit 1; }

cmd=${1:-}; [ $# -gt 0 ] && shift
NODES=2 CPUS=1 DASH_PORT="" STORE_MB=512 KEEP_TEMP=0
ROOT=${HFQ_CLUSTER_ROOT:-$PWD/hfq_cluster}
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) NODES=$2; shift 2 ;;
        --cpus) CPUS=$2; shift 2 ;;
        --root) ROOT=$2; shift 2 ;;
        --dashboard-port) DASH_PORT=$2; shift 2 ;;
        --object-store-mb) STORE_MB=$2; shift 2 ;;
        --keep-temp) KEEP_TEMP=1; shift ;;
        -h|--help) usage ;;
        *) echo "local.sh: unknown option $1" >&2; usage ;;
    esac
done
case "$NODES$CPUS$STORE_MB" in *[!0-9]*) die "--nodes, --cpus and --object-store-mb take integers" ;; esac
[ "$NODES" -ge 1 ] || die "--nodes must be at least 1"
[ "$cmd" != start ] || mkdir -p "$ROOT"
if [ -d "$ROOT" ]; then ROOT=$(cd "$ROOT" && pwd -P); else ROOT=$(realpath -m "$ROOT"); fi
STATE=$ROOT/.cluster

free_ports() {   # N distinct free TCP ports on 127.0.0.1 (closed again: a small race we accept)
    "$PYTHON" - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# Processes of the cluster whose Ray temp dir is $1: those naming it in their command line or
# carrying it in HFQ_LOCAL_CLUSTER, plus all their descendants; never this script or its callers.
cluster_pids() {
    local tmp=$1
    "$PYTHON" - "$tmp" "$$" <<'EOF'
import os, re, sys
tmp, me = sys.argv[1].encode(), int(sys.argv[2])
named = re.compile(re.escape(tmp) + rb"(/|\0|$)")          # the dir, not a longer name
marker = b"\0HFQ_LOCAL_CLUSTER=" + tmp + b"\0"
parent, roots = {}, set()
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    pid = int(entry)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            parent[pid] = int(f.read().rsplit(b")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        if named.search(cmdline):
            roots.add(pid)
            continue
        with open(f"/proc/{pid}/environ", "rb") as f:
            if marker in b"\0" + f.read() + b"\0":
                roots.add(pid)
    except (OSError, IndexError, ValueError):
        continue
spare, p = set(), me            # this shell and its ancestors (e.g. a job calling stop)
while p > 1 and p not in spare:
    spare.add(p)
    p = parent.get(p, 0)
children = {}
for pid, pp in parent.items():
    children.setdefault(pp, []).append(pid)
found, todo = set(), list(roots)
while todo:
    pid = todo.pop()
    if pid in found:
        continue
    found.add(pid)
    todo.extend(children.get(pid, []))
print(" ".join(str(p) for p in sorted(found - spare)))
EOF
}

start() {
    if [ -f "$STATE/temp_dir" ]; then
        local old; old=$(cat "$STATE/temp_dir")
        if [ -n "$(cluster_pids "$old")" ]; then
            die "a cluster is already running under $ROOT (stop it first: $0 stop --root $ROOT)"
        fi
        case "$old" in /tmp/hfq-ray-*) rm -rf "$old" ;; esac   # left by --keep-temp or a crash
    fi
    rm -rf "$STATE"
    mkdir -p "$STATE"
    # Unix socket paths must stay short (< 108 bytes), so the temp dir is under /tmp, not $ROOT.
    local tmp; tmp=$(mktemp -d /tmp/hfq-ray-XXXXXXXX)
    echo "$tmp" > "$STATE/temp_dir"

    export HFQ_LOCAL_CLUSTER=$tmp RAY_USAGE_STATS_ENABLED=0
    # job entrypoints (`ray job submit -- python x.py`) find the python Ray runs with
    PATH=$(dirname "$RAY"):$PATH
    if [ "${RAY_AUTH_MODE:-}" = "disabled" ]; then
        echo "local.sh: RAY_AUTH_MODE=disabled: token authentication is OFF (tests only)" >&2
    else
        export RAY_AUTH_MODE=token
        if [ -z "${RAY_AUTH_TOKEN:-}" ] && [ -z "${RAY_AUTH_TOKEN_PATH:-}" ]; then
            (umask 077; "$PYTHON" -c 'import secrets; print(secrets.token_hex(32), end="")' \
                > "$STATE/auth_token")
            export RAY_AUTH_TOKEN_PATH=$STATE/auth_token
        fi
    fi

    local ports; read -r -a ports <<< "$(free_ports $((NODES + 3)))"
    local gcs_port=${ports[0]} client_port=${ports[1]}
    [ -n "$DASH_PORT" ] || DASH_PORT=${ports[2]}
    local store=$((STORE_MB * 1024 * 1024))
    local common=(--num-cpus "$CPUS" --num-gpus 0 --object-store-memory "$store"
                  --disable-usage-stats
                  --min-worker-port 0 --max-worker-port 0)

    mkdir -p "$ROOT/node0"
    HFQ_NODE_ROOT=$ROOT/node0 "$RAY" start --head --port "$gcs_port" \
        --ray-client-server-port "$client_port" --include-dashboard true \
        --dashboard-host 127.0.0.1 --dashboard-port "$DASH_PORT" \
        --dashboard-agent-listen-port "${ports[3]}" --temp-dir "$tmp/node0" "${common[@]}" \
        > "$STATE/start-node0.log" 2>&1 \
        || { cat "$STATE/start-node0.log" >&2; stop_cluster; die "the head node did not start"; }
    # Ray binds the node's own IP, not loopback: the head wrote the address it really uses
    local address; address=$(cat "$tmp/node0/ray_current_cluster")
    local i pids=()
    for ((i = 1; i < NODES; i++)); do
        mkdir -p "$ROOT/node$i"
        HFQ_NODE_ROOT=$ROOT/node$i "$RAY" start --address "$address" \
            --dashboard-agent-listen-port "${ports[$((i + 3))]}" --temp-dir "$tmp/node$i" \
            "${common[@]}" \
            > "$STATE/start-node$i.log" 2>&1 &
        pids+=($!)
    done
    local failed=0
    for ((i = 1; i < NODES; i++)); do
        wait "${pids[$((i - 1))]}" || { cat "$STATE/start-node$i.log" >&2; failed=1; }
    done
    [ "$failed" = 0 ] || { stop_cluster; die "a worker node did not start"; }

    echo "$address" > "$STATE/address"
    echo "http://127.0.0.1:$DASH_PORT" > "$STATE/dashboard_url"
    {
        echo "export RAY_ADDRESS=$address"
        # the `ray` (and `python`) that started the cluster come first: `ray job submit` works
        # in a fresh shell without activating the venv
        echo "export PATH=\"$(dirname "$RAY"):\$PATH\""
        if [ -n "${RAY_AUTH_MODE:-}" ]; then echo "export RAY_AUTH_MODE=$RAY_AUTH_MODE"; fi
        if [ -n "${RAY_AUTH_TOKEN_PATH:-}" ]; then
            echo "export RAY_AUTH_TOKEN_PATH=$RAY_AUTH_TOKEN_PATH"
        fi
        echo "# dashboard / ray job submit: --address http://127.0.0.1:$DASH_PORT"
    } > "$STATE/env"
    wait_ready "http://127.0.0.1:$DASH_PORT" || { stop_cluster; die "the dashboard did not answer"; }
    cluster_pids "$tmp" > "$STATE/pids"
    echo "started $NODES nodes ($CPUS CPUs each) under $ROOT"
    echo "address: $address"
    echo "dashboard: http://127.0.0.1:$DASH_PORT"
    echo "env: source $STATE/env"
}

wait_ready() {   # every node is alive and the dashboard's job API answers
    local url=$1 deadline=$((SECONDS + 90))
    while [ $SECONDS -lt $deadline ]; do
        if "$PYTHON" - "$url" "$NODES" <<'EOF'
import json, os, sys, urllib.request
url, want = sys.argv[1], int(sys.argv[2])
path = os.environ.get("RAY_AUTH_TOKEN_PATH")
token = os.environ.get("RAY_AUTH_TOKEN") or (open(path).read().strip() if path else "")

def get(route):
    req = urllib.request.Request(url + route)
    if token and os.environ.get("RAY_AUTH_MODE") != "disabled":
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=2) as r:
        return json.load(r)

try:
    nodes = get("/nodes?view=summary").get("data", {}).get("summary", [])
    get("/api/jobs/")
except Exception:
    sys.exit(1)
alive = [n for n in nodes if n.get("raylet", {}).get("state") == "ALIVE"]
sys.exit(0 if len(alive) >= want else 1)
EOF
        then return 0; fi
        sleep 0.5
    done
    return 1
}

# Stop the processes listed in "$@" (TERM, then KILL after $grace s); zombies count as gone.
term_wait() {
    local grace=$1; shift
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    local deadline=$((SECONDS + grace)) p left
    while :; do
        left=()
        for p in "$@"; do running "$p" && left+=("$p"); done
        [ ${#left[@]} -gt 0 ] || return 0
        [ $SECONDS -lt $deadline ] || break
        sleep 0.2
    done
    kill -KILL "${left[@]}" 2>/dev/null || true
}

running() {   # the process exists and is not a zombie
    local state
    state=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

stop_cluster() {
    [ -f "$STATE/temp_dir" ] || { echo "no cluster recorded under $ROOT"; return 0; }
    local tmp p cmdline all raylets=() others=() rest=(); tmp=$(cat "$STATE/temp_dir")
    read -r -a all <<< "$(cluster_pids "$tmp")"
    # In three steps, each TERM then KILL after a grace: (1) the raylets, while the GCS still
    # answers (they unregister and end their workers); (2) the other head processes (dashboard,
    # autoscaler monitor, log monitors, which otherwise retry a dead GCS for many seconds);
    # (3) the GCS and anything forked meanwhile.
    for p in "${all[@]}"; do
        cmdline=$({ tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null) || continue
        case "$cmdline" in
            */raylet/raylet\ *) raylets+=("$p") ;;
            */gcs/gcs_server\ *) ;;
            *) others+=("$p") ;;
        esac
    done
    term_wait 5 "${raylets[@]}"
    term_wait 5 "${others[@]}"
    read -r -a rest <<< "$(cluster_pids "$tmp")"
    term_wait 5 "${rest[@]}"
    echo "stopped the cluster under $ROOT (${#all[@]} processes)"
    if [ "$KEEP_TEMP" = 0 ]; then
        case "$tmp" in /tmp/hfq-ray-*) rm -rf "$tmp" ;; esac
        rm -f "$STATE/temp_dir" "$STATE/pids"
    fi
}

status() {
    [ -f "$STATE/temp_dir" ] || { echo "no cluster recorded under $ROOT"; return 1; }
    local tmp pids; tmp=$(cat "$STATE/temp_dir")
    pids=$(cluster_pids "$tmp")
    if [ -z "$pids" ]; then echo "cluster under $ROOT: not running"; return 1; fi
    echo "cluster under $ROOT: running, $(echo "$pids" | wc -w) processes"
    echo "address: $(cat "$STATE/address" 2>/dev/null)"
    echo "dashboard: $(cat "$STATE/dashboard_url" 2>/dev/null)"
    echo "temp dir: $tmp"
    # shellcheck disable=SC1091
    (source "$STATE/env" && "$RAY" status --address "$(cat "$STATE/address")") || true
}

case "$cmd" in
    start) start ;;
    stop) stop_cluster ;;
    status) status ;;
    *) usage ;;
esac
