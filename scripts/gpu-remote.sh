#!/usr/bin/env bash
# Issue 33 on a GPU host, from the repository root after `make gpu-build`:
# a live lesson through the worker's transports (a child over fds 3 and 4,
# `cudarepl worker` at the end of a pipe through --worker-cmd, and ssh to
# localhost when an sshd can be started here), the wall time each adds to
# a command and whether the timings (taken in the worker) move; two
# learners' benches at once with the GPU lock and without it; the memory
# budget refusing a size live; a fault and a hang through the pipe and
# through ssh, with the next command in the same REPL passing. Writes
# $OUT/r33/*.json and logs, and a summary last.
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
R=$OUT/r33
mkdir -p "$R"
export CUDAREPL_WORKSPACE=/tmp/ws33 CUDAREPL_CACHE=/tmp/cache33 NCCL_NVLS_ENABLE=0
C=$PWD/build/cudarepl
S=$R/summary.txt
: >"$S"
say() { echo "$*" | tee -a "$S"; }
secs() { # secs LOG command...: runs it, prints its wall time in seconds and exit status
  local log=$1 t0=$EPOCHREALTIME rc
  shift
  "$@" </dev/null >"$log" 2>&1
  rc=$?
  echo "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}') s, exit $rc"
}

# --- ssh to localhost, if an sshd can be had: the system's, or Debian's
# carried in .sshdebs/ (unpacked under /tmp, not /), keys thrown away.
SSH_OK=""
T=/tmp/ssh33
mkdir -p "$T"
SSHD=""
[ -z "${USE_SSHDEBS:-}" ] && SSHD=$(command -v sshd || ls /usr/sbin/sshd 2>/dev/null || true)
if [ -z "$SSHD" ] && ls .sshdebs/*.deb >/dev/null 2>&1; then
  for f in .sshdebs/*.deb; do dpkg -x "$f" "$T/root"; done
  mkdir -p "$T/lib"
  for lib in $(LD_LIBRARY_PATH= ldd "$T/root/usr/sbin/sshd" "$T/root/usr/bin/ssh" 2>/dev/null | awk '/not found/{print $1}' | sort -u); do
    cp "$(find "$T/root" -name "$lib" | head -1)" "$T/lib/" 2>/dev/null
  done
  export LD_LIBRARY_PATH="$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$T/root/usr/bin:$PATH"
  SSHD=$T/root/usr/sbin/sshd
fi
if [ -n "$SSHD" ] && command -v ssh >/dev/null; then
  id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null
  mkdir -p /run/sshd && chmod 755 /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$T/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$T/user_key"
  cp "$T/user_key.pub" "$T/authorized_keys"
  cat >"$T/sshd_config" <<EOC
Port 22233
ListenAddress 127.0.0.1
HostKey $T/host_key
AuthorizedKeysFile $T/authorized_keys
PidFile $T/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
PermitRootLogin prohibit-password
SetEnv CUDAREPL_WORKSPACE=/tmp/ws33r CUDAREPL_CACHE=/tmp/cache33r NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
EOC
  "$SSHD" -D -e -f "$T/sshd_config" 2>"$R/sshd.log" &
  SSHD_PID=$!
  cat >"$T/ssh_config" <<EOC
Host gpuhost
  HostName 127.0.0.1
  Port 22233
  User $(id -un)
  IdentityFile $T/user_key
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR
EOC
  export CUDAREPL_SSH_CONFIG=$T/ssh_config
  sleep 1
  if ssh -F "$T/ssh_config" -o BatchMode=yes gpuhost true 2>"$R/ssh-probe.log"; then SSH_OK=1; fi
fi
say "sshd: ${SSHD:-none}; ssh to localhost: ${SSH_OK:-no (see ssh-probe.log, sshd.log)}"

ways=(local pipe)
[ -n "$SSH_OK" ] && ways+=(ssh)
runway() { # runway WAY args...: cudarepl with WAY's transport
  local w=$1
  shift
  case $w in
  local) timeout 300 "$C" "$@" ;;
  pipe) timeout 300 "$C" --worker-cmd "$C worker" "$@" ;;
  ssh) timeout 300 "$C" --remote "gpuhost:$C" "$@" ;;
  esac
}

# --- 1. a live lesson through each transport: check vector-add three times
# a transport, in turns, then the benchmark once each (its GB/s should not move)
for i in 1 2 3; do
  for w in "${ways[@]}"; do
    say "check vector-add, $w, round $i: $(secs "$R/check-$w-$i.log" runway "$w" check vector-add)"
  done
done
for w in "${ways[@]}"; do
  say "bench vector-add --step 7, $w: $(secs "$R/bench-$w.log" runway "$w" bench vector-add --step 7 2^20 2^24 2^26 --json "$R/bench-$w.json")"
done
say "run vector-add (the whole lesson live), pipe: $(secs "$R/run-pipe.log" runway pipe run vector-add)"

# --- 2. two learners at once, with the GPU lock and without it
export CUDAREPL_GPU_LOCK=/tmp/lock33
mkdir -p /tmp/lock33
say "alone, lock on: $(secs "$R/alone.log" runway local bench vector-add --step 7 2^24 2^26 --json "$R/alone.json")"
t0=$EPOCHREALTIME
"$C" bench vector-add --step 7 2^24 2^26 --json "$R/two-a.json" >"$R/two-a.log" 2>&1 &
A=$!
"$C" bench vector-add --step 7 2^24 2^26 --json "$R/two-b.json" >"$R/two-b.log" 2>&1 &
B=$!
wait $A $B
say "two at once, lock on: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s; waits seen: $(grep -ci 'waiting for the GPU' "$R/two-a.log" "$R/two-b.log" | tr '\n' ' ')"
CUDAREPL_GPU_LOCK=off "$C" bench vector-add --step 7 2^24 2^26 --json "$R/nolock-a.json" >"$R/nolock-a.log" 2>&1 &
A=$!
CUDAREPL_GPU_LOCK=off "$C" bench vector-add --step 7 2^24 2^26 --json "$R/nolock-b.json" >"$R/nolock-b.log" 2>&1 &
B=$!
wait $A $B
say "two at once, lock off: done"

# --- 3. the memory budget, live
for w in "${ways[@]}"; do
  say "budget 8GiB, bench vector-add 2^30, $w: $(CUDAREPL_MEM_LIMIT=8GiB secs "$R/budget-$w.log" runway "$w" bench vector-add --step 7 2^30)"
  say "  $(grep -m1 -i 'budget\|refused\|GiB' "$R/budget-$w.log" | cut -c1-240)"
done

# --- 4. a fault and a hang, then a check that passes, in one REPL
for w in "${ways[@]}"; do
  printf 'check vector-add --kernel scripts/jobs/fault.cu\ncheck vector-add --kernel lessons/02-vector-add/testdata/endless.cu\ncheck vector-add --kernel lessons/02-vector-add/testdata/solution.cu\nquit\n' >"$T/repl.in"
  t0=$EPOCHREALTIME
  case $w in
  local) timeout 300 "$C" <"$T/repl.in" >"$R/repl-$w.log" 2>&1 ;;
  pipe) timeout 300 "$C" --worker-cmd "$C worker" <"$T/repl.in" >"$R/repl-$w.log" 2>&1 ;;
  ssh) timeout 300 "$C" --remote "gpuhost:$C" <"$T/repl.in" >"$R/repl-$w.log" 2>&1 ;;
  esac
  say "fault, hang, pass in one REPL, $w: exit $?, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s"
  grep -iE 'fault|illegal|time limit|passed|failed|lost|worker' "$R/repl-$w.log" | cut -c1-200 | sed 's/^/  /' | tee -a "$S"
done

[ -n "${SSHD_PID:-}" ] && kill "$SSHD_PID" 2>/dev/null
echo "--- summary"
cat "$S"
