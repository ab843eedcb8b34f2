#!/usr/bin/env bash
# CI for --remote (issue 33): a real sshd on a spare localhost port, with a
# throw-away host key and user key, and cudarepl's worker reached through
# it. Everything lives in one temp folder; no system configuration is
# changed (openssh-server is installed if missing, without starting its
# service), and the sshd and everything started here are ended at exit.
#
# It checks, through ssh: the REPL and a notebook's cells replaying where
# the host has no GPU; a bad host, a refused key, an unknown host key, a
# closed port, no cudarepl there, another protocol's cudarepl and one
# without the worker command, each one sentence within seconds;
# --remote-install; the fake GPU's calls, faults and hangs, a connection
# cut in the middle of a command and the next command connecting again,
# in the REPL and in package gpu's tests; and the added latency of a
# remote command. Run it as root on Debian (or as a user with sudo), from
# anywhere; it exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

T=$(mktemp -d /tmp/cudarepl-remote.XXXXXX)
SSHD_PID=""
REPL_PID=""
MADE_RUN_SSHD=""
cleanup() {
  set +e
  [ -n "$REPL_PID" ] && kill "$REPL_PID" 2>/dev/null
  if [ -n "$SSHD_PID" ]; then
    kill "$SSHD_PID" 2>/dev/null
    wait "$SSHD_PID" 2>/dev/null
  fi
  [ -n "$MADE_RUN_SSHD" ] && $SUDO rmdir /run/sshd 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "remote.sh: FAIL: $*" >&2; exit 1; }
step() { echo "=== $*"; }

# --- openssh-server, its service not started (policy-rc.d, Debian's way)
if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
  step "installing openssh-server"
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    policy=1
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssh-server openssh-client >/dev/null
  [ -n "$policy" ] && $SUDO rm -f /usr/sbin/policy-rc.d
fi

# --- keys and a spare port
ssh-keygen -q -t ed25519 -N '' -C cudarepl-ci-host -f "$T/host_key"
ssh-keygen -q -t ed25519 -N '' -C cudarepl-ci-user -f "$T/user_key"
ssh-keygen -q -t ed25519 -N '' -C cudarepl-ci-other -f "$T/other_key"
cp "$T/user_key.pub" "$T/authorized_keys"
free_port() { # a port nothing listens on: one that refuses a connection
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
PORT=$(free_port)
CLOSED_PORT=$(free_port)
mkdir -p "$T/remote-cache" "$T/home"

# --- sshd: this user only, keys only, on 127.0.0.1:PORT
cat >"$T/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $T/host_key
AuthorizedKeysFile $T/authorized_keys
PidFile $T/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $(id -un)
SetEnv XDG_CACHE_HOME=$T/remote-cache
EOF
if [ ! -d /run/sshd ]; then # sshd's privilege separation folder
  $SUDO mkdir -p /run/sshd
  MADE_RUN_SSHD=1
fi
SSHD=/usr/sbin/sshd
[ "$(id -u)" = 0 ] || SSHD="$SUDO $SSHD" # sshd must start as root to log a user in
$SSHD -D -e -f "$T/sshd_config" 2>"$T/sshd.log" &
SSHD_PID=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done

# --- the client's configuration: what CUDAREPL_SSH_CONFIG names
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$T/host_key.pub")" >"$T/known_hosts"
: >"$T/no_known_hosts"
host_block() { # name key known_hosts port
  cat <<EOF
Host $1
  HostName 127.0.0.1
  Port $4
  User $(id -un)
  IdentityFile $T/$2
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $T/$3
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
EOF
}
{
  host_block localhost user_key known_hosts "$PORT"
  host_block refused other_key known_hosts "$PORT"
  host_block unknown-key user_key no_known_hosts "$PORT"
  host_block closed-port user_key known_hosts "$CLOSED_PORT"
} >"$T/ssh_config"
export CUDAREPL_SSH_CONFIG="$T/ssh_config"
ssh -F "$T/ssh_config" -o BatchMode=yes localhost true || { cat "$T/sshd.log"; fail "ssh to the test sshd"; }
echo "sshd on 127.0.0.1:$PORT ($T)"

# --- what runs on both ends (the same machine here)
step "building cudarepl and package gpu's tests"
mkdir -p "$T/bin"
go build -o "$T/bin/cudarepl" ./cmd/cudarepl
go test -c -o "$T/gpu.test" ./gpu
export HOME="$T/home" CUDAREPL_WORKSPACE="$T/home/cudarepl" XDG_CONFIG_HOME="$T/home/config" XDG_CACHE_HOME="$T/home/cache"
C="$T/bin/cudarepl"
R="localhost:$C" # the cudarepl there is this one, by its path: nothing lands in a real home

# --- package gpu through ssh: the fake GPU, faults, a killed ssh, failures, install
step "go tests through ssh (gpu: TestRemoteOverSSH, TestSSHFailures, TestSSHInstall)"
CUDAREPL_TEST_SSH=localhost "$T/gpu.test" -test.run '^(TestRemoteOverSSH|TestSSHFailures|TestSSHInstall|TestRemoteLatency)$' -test.v -test.count=1 |
  tee "$T/gotest.log" | grep -E '^(---|ok|FAIL|PASS)|median|reported' || true
grep -q '^PASS$' "$T/gotest.log" || { cat "$T/gotest.log"; fail "package gpu's tests through ssh"; }

# --- no GPU there: the REPL and a notebook replay through the pipe
step "the REPL through --remote (no GPU there: replay)"
printf 'open 2\nstep 6\ndevice\nquit\n' | "$C" --remote "$R" >"$T/repl.out" 2>&1 || { cat "$T/repl.out"; fail "the REPL through --remote"; }
head -1 "$T/repl.out"
grep -q "replay mode" "$T/repl.out" && grep -q "gpu: on localhost, no NVIDIA driver found" "$T/repl.out" ||
  { cat "$T/repl.out"; fail "the REPL did not say the host has no GPU, and replay"; }

step "a notebook's cells through CUDAREPL_REMOTE (cudarepl notebooks run, package notebook)"
CUDAREPL_REMOTE="$R" "$C" notebooks run notebooks/02-vector-add.ipynb --out "$T/02.ipynb" >"$T/nb.out" 2>&1 ||
  { cat "$T/nb.out"; fail "notebooks run through the remote"; }
grep -q "on localhost, no NVIDIA driver found" "$T/nb.out" && grep -q '"execution_count": 3' "$T/02.ipynb" ||
  { cat "$T/nb.out"; fail "the notebook's cells did not run through the remote"; }
tail -1 "$T/nb.out"

# --- one sentence each, within seconds, never a question
step "failures: one sentence each"
mkdir -p "$T/fakes"
cat >"$T/fakes/old" <<'EOF'
#!/bin/sh
echo "cudarepl-worker 0 0.0.1 linux/amd64"
exec cat >/dev/null
EOF
cat >"$T/fakes/noworker" <<'EOF'
#!/bin/sh
echo "cudarepl: unknown command \"worker\" (try 'cudarepl help')" >&2
exit 2
EOF
chmod 755 "$T/fakes/old" "$T/fakes/noworker"
expect_sentence() { # target, what the sentence says
  local start end out status
  start=$(date +%s)
  set +e
  out=$(timeout 60 "$C" --remote "$1" device </dev/null 2>&1 >/dev/null)
  status=$?
  set -e
  end=$(date +%s)
  echo "  $1 ($((end - start)) s, exit $status): $out"
  [ "$status" = 1 ] || fail "--remote $1: exit status $status, want 1"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "--remote $1: more than one line"
  [ $((end - start)) -lt 30 ] || fail "--remote $1 took $((end - start)) s"
  case "$out" in *"$2"*) ;; *) fail "--remote $1: want '$2'" ;; esac
}
expect_sentence nosuchhost.invalid "cannot reach nosuchhost.invalid over ssh: Could not resolve hostname"
expect_sentence refused "refused refused the ssh key"
expect_sentence unknown-key "the host key of unknown-key is not known here"
expect_sentence closed-port "cannot reach closed-port over ssh"
expect_sentence "localhost:$T/remote/cudarepl" "localhost has no cudarepl (looked for $T/remote/cudarepl): run cudarepl with --remote-install"
expect_sentence "localhost:$T/fakes/old" "the cudarepl on localhost (0.0.1) speaks worker protocol 0, and this one speaks 2"
expect_sentence "localhost:$T/fakes/noworker" "the cudarepl on localhost has no worker command"

step "--remote-install copies this cudarepl there, then it serves"
"$C" --remote "localhost:$T/remote/cudarepl" --remote-install device >"$T/install.out" 2>&1 || { cat "$T/install.out"; fail "--remote-install"; }
grep -q "copied this cudarepl to localhost:$T/remote/cudarepl" "$T/install.out" && grep -q "on localhost, no NVIDIA driver found" "$T/install.out" ||
  { cat "$T/install.out"; fail "--remote-install did not copy, or the copy did not serve"; }
cmp -s "$C" "$T/remote/cudarepl" || fail "the installed copy differs"

step "at a terminal, the same is offered, and done on 'y'"
(sleep 4; echo y) | timeout 60 script -qec "$C --remote localhost:$T/remote2/cudarepl device" /dev/null >"$T/offer.out" 2>&1 || true
grep -q 'Copy this cudarepl there, as --remote-install does? \[y/N\]' "$T/offer.out" &&
  grep -q "copied this cudarepl to localhost:$T/remote2/cudarepl" "$T/offer.out" && [ -x "$T/remote2/cudarepl" ] ||
  { cat "$T/offer.out"; fail "the offer at a terminal"; }
grep 'Copy this' "$T/offer.out"

# --- a live (fake) GPU there: what it has, a connection cut mid-command, a worker killed there
step "version describes the host's GPU and libraries"
"$C" --worker-cmd "ssh -F $T/ssh_config localhost env CUDAREPL_TEST_REMOTE_WORKER=fake $T/gpu.test -test.run=^TestRemoteWorkerProcess\$" version >"$T/version.out" 2>&1 ||
  { cat "$T/version.out"; fail "version through ssh"; }
cat "$T/version.out"
grep -q '^driver .*(fake GPU on localhost)' "$T/version.out" && grep -q '^NVRTC  *not found on localhost' "$T/version.out" ||
  fail "version does not describe the host"

step "the REPL on a fake GPU through ssh: the connection cut, then the worker killed, mid-command"
WCMD="ssh -F $T/ssh_config localhost env CUDAREPL_TEST_REMOTE_WORKER=fake-slow CUDAREPL_TEST_MEMINFO_DELAY=2s $T/gpu.test -test.run=^TestRemoteWorkerProcess\$"
mkfifo "$T/repl.in"
"$C" --worker-cmd "$WCMD" <"$T/repl.in" >"$T/live.out" 2>&1 &
REPL_PID=$!
exec 3>"$T/repl.in"
descendants() { # the processes under pid $1, deepest last
  local c
  for c in $(ps -o pid= --ppid "$1"); do
    echo "$c"
    descendants "$c"
  done
}
remote_worker() { # the fake worker under the sshd started here
  local p
  for p in $(descendants "$SSHD_PID"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q '^CUDAREPL_GPU_WORKER=fake-slow$'; then echo "$p"; fi
  done
}
sleep 3 # connected: the banner
echo mem >&3
sleep 3 # answered, after 2 s
echo mem >&3
sleep 1
SSH_PID=$(ps -o pid=,comm= --ppid "$REPL_PID" | awk '$2 == "ssh" {print $1}')
[ -n "$SSH_PID" ] || fail "no ssh under the REPL"
kill -9 "$SSH_PID"
sleep 2
echo mem >&3 # connects again
sleep 6
echo mem >&3
sleep 1
WORKER_PID=$(remote_worker | tail -1)
[ -n "$WORKER_PID" ] || fail "no fake worker under the sshd"
kill -9 "$WORKER_PID"
sleep 2
echo mem >&3 # a fresh worker there answers
sleep 4
# Kernels compile there, with its NVRTC; an error names the learner's line.
cp lessons/02-vector-add/testdata/syntax_error.cu "$T/"
printf 'device\nopen 2\ncheck %s\n' "$T/syntax_error.cu" >&3
sleep 10
echo quit >&3
exec 3>&-
wait "$REPL_PID" || fail "the REPL exited with $?"
REPL_PID=""
cat "$T/live.out"
grep -q "fake GPU on localhost" "$T/live.out" || fail "the banner does not name the fake GPU on localhost"
grep -q "error: gpu: meminfo: the connection to localhost was lost" "$T/live.out" || fail "the cut connection was not reported"
grep -q "error: gpu: meminfo killed the worker (signal: killed); a fresh worker was started" "$T/live.out" || fail "the killed worker was not reported"
[ "$(grep -c '^GPU memory: 1.00 GiB free of 2.00 GiB' "$T/live.out")" = 3 ] || fail "want 3 answers to mem: before the cut, after it, after the kill"
[ -z "$(remote_worker)" ] || fail "a worker is left on the host after the REPL quit"
grep -q '^GPU host  *localhost (kernels compile there, with its NVRTC)' "$T/live.out" || fail "device does not say where the GPU is"
if ldconfig -p | grep -q libnvrtc; then
  grep -q 'gpu: nvrtc: syntax_error.cu:3: expected a ";"' "$T/live.out" || fail "the compile error did not come back on the learner's line"
  ls "$T/remote-cache/cudarepl/kernels/"*.cubin >/dev/null 2>&1 || fail "nothing was compiled on the host (its NVRTC cache is empty)"
else
  grep -q "on localhost, NVRTC not found" "$T/live.out" || fail "a host without NVRTC was not said to have none"
fi

step "remote.sh: all passed"
