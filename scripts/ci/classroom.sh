#!/bin/bash
# CI for the classroom recipe (issue 33, docs/classroom.md): sets up a class
# of two with scripts/classroom/setup.sh (Debian's jupyterhub and
# node-configurable-http-proxy, GoNB for every learner, two throw-away Unix
# accounts), starts JupyterHub on localhost with PAM, logs both learners
# in, starts their servers through the hub's REST API with the class's API
# token, runs notebook cells as each on their own GoNB kernel, and checks
# that:
#   - each kernel runs as its learner, with their own workspace, the
#     class's device-memory budget and GPU lock folder;
#   - the workspaces are separate, and one learner cannot read another's;
#   - one learner's faulting kernel (without a GPU: a CUDA compile error)
#     leaves the other's Jupyter kernel untouched: the same kernel, its
#     state kept, and its next cell runs.
# Everything it made (accounts, homes, processes, files) is removed on
# exit. Run as root on Debian 12 with Go installed; exits non-zero on a
# failure.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
[ "$(id -u)" = 0 ] || { echo "classroom.sh: run as root: it makes accounts and installs packages" >&2; exit 1; }
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || { echo "classroom.sh: Go is not installed (the README's set-up)" >&2; exit 1; }

prefix=$(mktemp -d /tmp/cudarepl-ci-class.XXXXXX)
out="$prefix.out" # run_cell.py's answers, outside the class's folder
mkdir -p "$out"
tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
up="crci${tag}x" # the learners: ${up}01, ${up}02
a="${up}01" b="${up}02"
hub_pid=""
passed=0 failed=0

cleanup() {
	local rc=$?
	set +e
	if [ -n "$hub_pid" ] && kill -0 "$hub_pid" 2>/dev/null; then
		# The hub stops the learners' servers as it exits; its process
		# group (it was started with setsid) holds the proxy.
		kill -TERM -- "-$hub_pid" 2>/dev/null
		for _ in $(seq 1 40); do kill -0 "$hub_pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL -- "-$hub_pid" 2>/dev/null
	fi
	if [ -f "$prefix/classroom.json" ]; then
		"$root/scripts/classroom/setup.sh" remove --prefix "$prefix" >/dev/null
	fi
	for u in "$a" "$b"; do id "$u" >/dev/null 2>&1 && userdel -r "$u" 2>/dev/null; done
	rm -rf "$prefix" "$out"
	exit $rc
}
trap cleanup EXIT

check() { # check DESCRIPTION COMMAND...: one line, ok or FAIL
	if "${@:2}"; then
		echo "ok: $1"
		passed=$((passed + 1))
	else
		echo "FAIL: $1"
		failed=$((failed + 1))
	fi
}

# field FILE N KEY: KEY of the N-th answer (from 1) in FILE.
field() { /usr/bin/python3 -c 'import json, sys
print(json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - 1])[sys.argv[3]])' "$@"; }
has() { # (not through grep -q, which leaves field's output half read: pipefail)
	local v
	v=$(field "$1" "$2" "$3")
	[[ "$v" == *"$4"* ]]
}
is() { [ "$(field "$1" "$2" "$3")" = "$4" ]; }

read -r port hub_port proxy_port < <(/usr/bin/python3 -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')

echo "== setting up a class of two ($a, $b) in $prefix"
"$root/scripts/classroom/setup.sh" --prefix "$prefix" --learners 2 --user-prefix "$up" --mem-limit 2GiB \
	--ip 127.0.0.1 --port "$port" --hub-port "$hub_port" --proxy-api-port "$proxy_port" --no-service

echo "== starting JupyterHub on 127.0.0.1:$port"
cd "$prefix/state"
setsid /usr/bin/jupyterhub -f "$prefix/jupyterhub_config.py" >"$out/hub.log" 2>&1 &
hub_pid=$!
cd "$root"
up_within() {
	for _ in $(seq 1 120); do
		/usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
			"http://127.0.0.1:$port/hub/api" 2>/dev/null && return 0
		kill -0 "$hub_pid" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}
if ! up_within; then
	tail -40 "$out/hub.log"
	echo "classroom.sh: JupyterHub did not answer on 127.0.0.1:$port within 60 s (its log is above)"
	exit 1
fi

run() { "$root/scripts/classroom/run_cell.py" --prefix "$prefix" "$@"; }
pw() { grep "^$1:" "$prefix/secrets/learners.txt" | cut -d: -f2; }

# Logging in: PAM takes each learner's password and refuses a wrong one.
check "$a logs in with their password" run --user "$a" --login "$(pw "$a")"
check "$b logs in with their password" run --user "$b" --login "$(pw "$b")"
check "a wrong password is refused" bash -c '! "$@"' _ "$root/scripts/classroom/run_cell.py" --prefix "$prefix" --user "$a" --login "not-$(pw "$a")"

# First cells, both learners at once (as a class starts): the notebook's
# set-up cell, state in the kernel, the workspace, a step of lesson 1
# (replayed without a GPU).
nb=course/notebooks/02-vector-add.ipynb
setup_cell='!*rm -f go.work && go work init && go work use . "${GONB_DIR}/.."
%goworkfix'
workspace_cell='import (
	"fmt"
	"os"
	"path/filepath"
)

%%
ws := os.Getenv("CUDAREPL_WORKSPACE")
if err := os.MkdirAll(ws, 0o755); err != nil {
	panic(err)
}
if err := os.WriteFile(filepath.Join(ws, "mark.txt"), []byte(mark), 0o644); err != nil {
	panic(err)
}
fmt.Printf("uid=%d workspace=%s budget=%s lock=%s\n", os.Getuid(), ws, os.Getenv("CUDAREPL_MEM_LIMIT"), os.Getenv("CUDAREPL_GPU_LOCK"))'
step_cell='import "cudarepl/notebook"

%%
notebook.Step("hello-gpu", 1)'
first() { # first USER: the first cells, as USER
	run --user "$1" --notebook "$nb" --cell "$setup_cell" --cell "var mark = \"$1\"" --cell "$workspace_cell" --cell "$step_cell" >"$out/$1.first" 2>"$out/$1.first.err"
}
echo "== first cells, as $a and $b at once (each compiles the course on first use)"
start=$(date +%s)
first "$a" &
pa=$!
first "$b" &
pb=$!
wait "$pa" || true
wait "$pb" || true
echo "   both done in $(($(date +%s) - start)) s"
for u in "$a" "$b"; do
	if [ "$(wc -l <"$out/$u.first")" != 4 ]; then
		cat "$out/$u.first" "$out/$u.first.err"
		tail -40 "$out/hub.log"
		echo "classroom.sh: the first cells as $u did not all run (above: their answers, then the hub's log)"
		exit 1
	fi
	uid=$(id -u "$u")
	home=$(getent passwd "$u" | cut -d: -f6)
	check "$u's set-up cell runs" is "$out/$u.first" 1 status ok
	check "$u's kernel runs as $u, in their workspace, with the class's budget and lock" \
		has "$out/$u.first" 3 stdout "uid=$uid workspace=$home/cudarepl budget=2GiB lock=$prefix/gpu-locks"
	check "$u's lesson 1 step replays" has "$out/$u.first" 4 stdout "The GPU the results were recorded on, replayed from"
	check "$u's workspace holds their own file" bash -c '[ "$(cat "$1")" = "$2" ] && [ "$(stat -c %U "$1")" = "$2" ]' _ "$home/cudarepl/mark.txt" "$u"
done
check "the two kernels are two" bash -c '[ "$1" != "$2" ]' _ "$(field "$out/$a.first" 1 kernel)" "$(field "$out/$b.first" 1 kernel)"
check "$b cannot read $a's workspace" bash -c '! runuser -u "$1" -- cat "$2" >/dev/null 2>&1' _ "$b" "$(getent passwd "$a" | cut -d: -f6)/cudarepl/mark.txt"
check "$a cannot write into $b's home" bash -c '! runuser -u "$1" -- touch "$2" 2>/dev/null' _ "$a" "$(getent passwd "$b" | cut -d: -f6)/intruder"

# A learner's kernel that does not compile (what faults without a GPU).
broken='import "cudarepl/notebook"

%%
kernel := `extern "C" __global__ void vadd_v1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) c[i] = a[i] + b[i];
}`
notebook.Try("vector-add", "vadd_v1", kernel, 256, "2^20")'
echo "== $a runs a kernel that does not compile"
run --user "$a" --notebook "$nb" --cell "$broken" >"$out/$a.broken" 2>&1 || true
check "$a is told their kernel does not compile, with the compiler's line" has "$out/$a.broken" 1 stdout 'vadd_v1 in your cell:3: expected a ";"'
check "$a's kernel is the same after its error" is "$out/$a.broken" 1 kernel "$(field "$out/$a.first" 1 kernel)"

echo "== $b's kernel after $a's error"
unchanged='import "cudarepl/notebook"

%%
kernel := `extern "C" __global__ void vadd_v1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}`
notebook.Try("vector-add", "vadd_v1", kernel, 256, "2^20")'
run --user "$b" --notebook "$nb" --cell '%%
fmt.Println("still", mark)' --cell "$unchanged" >"$out/$b.after" 2>&1 || true
check "$b's kernel is the same kernel" is "$out/$b.after" 1 kernel "$(field "$out/$b.first" 1 kernel)"
check "$b's kernel kept its state" has "$out/$b.after" 1 stdout "still $b"
check "$b's kernel compiles their kernel" has "$out/$b.after" 2 stdout "vadd_v1_yours.cu compiled:"
check "$a's kernel runs its next cell" bash -c 'r=$("${@:2}") && [[ "$r" == *"still $1"* ]]' _ "$a" \
	"$root/scripts/classroom/run_cell.py" --prefix "$prefix" --user "$a" --notebook "$nb" --cell '%%
fmt.Println("still", mark)'

if [ "$failed" != 0 ]; then
	for f in "$out"/*.first "$out"/*.broken "$out"/*.after; do echo "--- $f"; cut -c1-2000 "$f"; done
	echo "--- the hub's log"
	tail -60 "$out/hub.log"
fi
echo "classroom: $passed passed, $failed failed"
[ "$failed" = 0 ]
