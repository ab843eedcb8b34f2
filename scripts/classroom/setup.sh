#!/bin/bash
# A class on one GPU server: JupyterHub (Debian's) in front of GoNB, one
# Unix account, Jupyter server, workspace and cudarepl worker per learner,
# a device-memory budget for each, and timings that take turns on the GPU.
# docs/classroom.md says what it does and why; run it as root:
#
#   sudo scripts/classroom/setup.sh --learners 30                  # or: sudo make classroom LEARNERS=30
#   sudo scripts/classroom/setup.sh remove                         # after the class: accounts, homes, the class's folder
#
# Run again with other settings, it keeps the accounts, their passwords
# and their work, and installs the course and the settings afresh.
set -euo pipefail

usage() {
	cat <<EOF
usage: setup.sh [options]          set up a class (again)
       setup.sh remove [options]   remove the class: its accounts (with their homes), its folder, its service

  --learners N        accounts <user-prefix>01 … <user-prefix>N (default 30)
  --names FILE        or these accounts, one name a line
  --user-prefix P     the accounts' names start with P (default learner)
  --teacher NAME      an existing account that may log in as the hub's admin (repeat for more)
  --mem-limit SIZE    each learner's device-memory budget, e.g. 4GiB (default: the GPU's memory shared
                      among the learners on it, less what each one's CUDA context takes; none without a GPU)
  --gpus LIST         the GPUs to share out, e.g. 0,1,2,3: learner i gets GPU i mod n
                      (default: every GPU where there are several; "" for none)
  --port N            where the hub listens (default 8000); --ip ADDR (default: every address)
  --hub-port N, --proxy-api-port N   the hub's own ports, on 127.0.0.1 (default 8081, 8001)
  --prefix DIR        the class's folder (default /opt/cudarepl-class)
  --no-apt            install no packages (they are there already)
  --no-service        start nothing: print how to start the hub instead
  --keep-homes        (remove) keep the learners' home folders
EOF
}

die() { echo "setup.sh: $*" >&2; exit 1; }
say() { echo "== $*"; }

cmd=install
if [ "${1:-}" = remove ]; then cmd=remove; shift; fi
prefix=/opt/cudarepl-class
learners=30 names_file="" user_prefix=learner teachers=()
mem_limit=auto gpus=auto port=8000 ip="" hub_port=8081 proxy_api_port=8001
apt=1 service=1 keep_homes=0
while [ $# -gt 0 ]; do
	case "$1" in
	--learners) learners="$2"; shift 2 ;;
	--names) names_file="$2"; shift 2 ;;
	--user-prefix) user_prefix="$2"; shift 2 ;;
	--teacher) teachers+=("$2"); shift 2 ;;
	--mem-limit) mem_limit="$2"; shift 2 ;;
	--gpus) gpus="$2"; shift 2 ;;
	--port) port="$2"; shift 2 ;;
	--ip) ip="$2"; shift 2 ;;
	--hub-port) hub_port="$2"; shift 2 ;;
	--proxy-api-port) proxy_api_port="$2"; shift 2 ;;
	--prefix) prefix="$2"; shift 2 ;;
	--no-apt) apt=0; shift ;;
	--no-service) service=0; shift ;;
	--keep-homes) keep_homes=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option $1" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run it as root (sudo): it makes accounts, installs packages and a service"
case "$prefix" in /*) ;; *) die "--prefix $prefix: give an absolute path" ;; esac
[ "$prefix" != / ] || die "--prefix /: give the class a folder of its own"
dropin=/etc/systemd/system/jupyterhub.service.d/cudarepl-class.conf
have_systemd() { [ -d /run/systemd/system ]; }

# json KEY: a value of the class's settings, one line per item of a list.
json() {
	/usr/bin/python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print("\n".join(v) if isinstance(v, list) else v)' "$prefix/classroom.json" "$1"
}

remove() {
	[ -f "$prefix/classroom.json" ] || die "$prefix/classroom.json not found: is $prefix a class's folder (--prefix)?"
	if [ -f "$dropin" ] && grep -q "$prefix/" "$dropin"; then
		say "stopping the hub"
		systemctl stop jupyterhub || true
		systemctl disable jupyterhub || true
		rm -f "$dropin"
		systemctl daemon-reload || true
	fi
	while read -r u; do
		[ -n "$u" ] && id "$u" >/dev/null 2>&1 || continue
		# A learner's server and kernels outlive the hub where it was
		# stopped without stopping them; userdel refuses a user who runs
		# anything.
		for pid in $(pgrep -u "$u" || true); do kill -KILL "$pid" 2>/dev/null || true; done
		# What their kernels left in the shared temporary folders (GoNB's
		# build folders, where a kernel was killed).
		find /tmp /var/tmp -mindepth 1 -maxdepth 1 -user "$u" -exec rm -rf {} + 2>/dev/null || true
		if [ "$keep_homes" = 1 ]; then userdel "$u"; else userdel -r "$u" 2>/dev/null || userdel "$u"; fi
		echo "removed account $u"
	done < <(json learners)
	rm -rf "$prefix"
	say "removed the class in $prefix"
}

find_go() {
	local g
	for g in "${GO:-}" "$(command -v go || true)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
		[ -n "$g" ] && [ -x "$g" ] && { echo "$g"; return; }
	done
	die "Go not found: install Go (the README's set-up names the version) or pass GO=/path/to/go"
}

# auto_gpus: every GPU's index where there are several; none (all of
# the one GPU, or no GPU) otherwise.
auto_gpus() {
	command -v nvidia-smi >/dev/null 2>&1 || return 0
	[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)" -gt 1 ] || return 0
	nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -
}

# auto_mem_limit GPUS N: the smallest of the GPUs' memory shared by the
# learners that each holds, less each learner's CUDA context and libraries.
auto_mem_limit() {
	command -v nvidia-smi >/dev/null 2>&1 || return 0
	local mib per ngpus
	ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	[ "$ngpus" -gt 0 ] || return 0
	if [ -n "$1" ]; then ngpus=$(echo "$1" | tr ',' '\n' | grep -c .); fi
	mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | sort -n | head -1)
	per=$(((${2} + ngpus - 1) / ngpus))
	# 1 GiB for the driver, then 768 MiB of each learner's share for their
	# CUDA context, cuBLAS and cuDNN handles and the L2 flush buffer,
	# which the budget does not count; in steps of 256 MiB.
	local share=$(((mib - 1024) / per - 768))
	share=$((share / 256 * 256))
	[ "$share" -ge 256 ] || share=256
	echo "${share}MiB"
}

install() {
	local src go go_bin names=() u pw i
	src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
	[ -f "$src/go.mod" ] && grep -q '^module cudarepl$' "$src/go.mod" || die "$src is not a cudarepl checkout (run the script from one)"

	if [ -n "$names_file" ]; then
		mapfile -t names < <(grep -v '^[[:space:]]*$' "$names_file")
	else
		[[ "$learners" =~ ^[0-9]+$ ]] && [ "$learners" -ge 1 ] || die "--learners $learners: give a number of learners, 1 or more"
		for i in $(seq 1 "$learners"); do names+=("$(printf '%s%02d' "$user_prefix" "$i")"); done
	fi
	for u in "${names[@]}" "${teachers[@]}"; do
		[[ "$u" =~ ^[a-z_][a-z0-9_-]*$ ]] || die "\"$u\" cannot be an account's name: lower-case letters, digits, _ and -"
	done
	for u in "${teachers[@]}"; do id "$u" >/dev/null 2>&1 || die "--teacher $u: no such account; make it first (adduser $u)"; done

	if [ "$apt" = 1 ]; then
		say "installing Debian's JupyterHub, its proxy, and Jupyter"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jupyterhub node-configurable-http-proxy \
			jupyter-notebook jupyter-nbconvert jupyter-client python3-terminado >/dev/null
	fi
	for f in /usr/bin/jupyterhub /usr/bin/jupyterhub-singleuser /usr/bin/configurable-http-proxy; do
		[ -x "$f" ] || die "$f is missing: apt-get install jupyterhub node-configurable-http-proxy jupyter-notebook"
	done
	go=$(find_go)
	go_bin=$(dirname "$go")
	export PATH="$go_bin:$PATH" GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
	mkdir -p "$prefix"/{bin,share/jupyter,state,secrets}
	chmod 0755 "$prefix" "$prefix"/{bin,share,share/jupyter}
	chmod 0700 "$prefix"/{state,secrets}

	say "the course, as each learner's copy starts: $prefix/course"
	rm -rf "$prefix/course.new"
	mkdir "$prefix/course.new"
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		# Tracked files and new ones git does not ignore, as they are in
		# the working tree (a file deleted there is not copied).
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null --no-recursion -T - -cf -) | tar -xf - -C "$prefix/course.new"
	else
		tar -C "$src" --exclude=./.git --exclude=./build -cf - . | tar -xf - -C "$prefix/course.new"
	fi
	chown -R root:root "$prefix/course.new"
	chmod -R a+rX,go-w "$prefix/course.new"
	rm -rf "$prefix/course"
	mv "$prefix/course.new" "$prefix/course"

	say "building cudarepl, GoNB and goimports with $("$go" version | cut -d' ' -f3) into $prefix/bin"
	(cd "$prefix/course" && GOBIN="$prefix/bin" "$go" install ./cmd/cudarepl github.com/janpfeifer/gonb golang.org/x/tools/cmd/goimports) ||
		die "could not build the course with $go: is it the Go that go.mod asks for?"

	say "the course's Go modules, for the learners' builds: $prefix/gomodcache"
	(cd "$prefix/course" && GOMODCACHE="$prefix/gomodcache" GOFLAGS=-modcacherw "$go" mod download)
	chmod -R a+rX,go-w "$prefix/gomodcache"

	say "the GoNB kernel, for every learner: $prefix/share/jupyter/kernels/gonb"
	JUPYTER_DATA_DIR="$prefix/share/jupyter" PATH="$prefix/bin:$PATH" "$prefix/bin/gonb" --install --force_deps >"$prefix/state/gonb-install.log" 2>&1 ||
		{ cat "$prefix/state/gonb-install.log"; die "gonb --install failed (its log is above)"; }
	local spec="$prefix/share/jupyter/kernels/gonb/kernel.json" kernel
	kernel=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["argv"][0])' "$spec")
	case "$kernel" in "$prefix"/*) [ -x "$kernel" ] ;; *) false ;; esac ||
		die "$spec starts $kernel, not GoNB in $prefix"
	chmod -R a+rX "$prefix/share"

	# Timed regions take turns through a lock file per GPU here, which
	# every learner must be able to make and open: sticky, as /tmp is.
	mkdir -p "$prefix/gpu-locks"
	chmod 1777 "$prefix/gpu-locks"
	[ -s "$prefix/secrets/api-token" ] || (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$prefix/secrets/api-token")

	say "accounts: ${names[*]}"
	touch "$prefix/secrets/learners.txt"
	chmod 0600 "$prefix/secrets/learners.txt"
	for u in "${names[@]}"; do
		if ! id "$u" >/dev/null 2>&1; then
			useradd --create-home --shell /bin/bash "$u"
			pw=$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')
			echo "$u:$pw" | chpasswd
			grep -v "^$u:" "$prefix/secrets/learners.txt" >"$prefix/secrets/learners.new" || true
			echo "$u:$pw" >>"$prefix/secrets/learners.new"
			mv "$prefix/secrets/learners.new" "$prefix/secrets/learners.txt"
		fi
		local h
		h=$(getent passwd "$u" | cut -d: -f6)
		chmod 0700 "$h" # no learner reads another's work
		if [ ! -e "$h/course" ]; then
			cp -a "$prefix/course" "$h/course"
			chown -R "$u:" "$h/course"
			chmod -R u+w "$h/course"
		fi
	done
	chmod 0600 "$prefix/secrets/learners.txt"

	if [ "$gpus" = auto ]; then gpus=$(auto_gpus); fi
	if [ "$mem_limit" = auto ]; then mem_limit=$(auto_mem_limit "$gpus" "${#names[@]}"); fi
	/usr/bin/python3 - "$prefix/classroom.json" <<EOF
import json, sys
json.dump({
    "prefix": "$prefix",
    "learners": "${names[*]}".split(),
    "teachers": "${teachers[*]:-}".split(),
    "mem_limit": "$mem_limit",
    "gpus": "$gpus",
    "ip": "$ip",
    "port": $port,
    "hub_port": $hub_port,
    "proxy_api_port": $proxy_api_port,
    "go_bin": "$go_bin",
}, open(sys.argv[1], "w"), indent=2)
EOF
	cp "$src/scripts/classroom/jupyterhub_config.py" "$prefix/jupyterhub_config.py"
	chmod 0644 "$prefix/classroom.json" "$prefix/jupyterhub_config.py"

	if [ "$service" = 1 ] && have_systemd; then
		say "Debian's jupyterhub service, started with the class's configuration"
		mkdir -p "$(dirname "$dropin")"
		# Debian's unit hides /dev from the hub and what it starts
		# (PrivateDevices), which would hide the GPUs from every learner.
		cat >"$dropin" <<EOF
[Service]
ExecStart=
ExecStart=/usr/bin/jupyterhub -f $prefix/jupyterhub_config.py
WorkingDirectory=$prefix/state
PrivateDevices=no
PrivateTmp=no
EOF
		systemctl daemon-reload
		systemctl enable jupyterhub >/dev/null 2>&1
		systemctl restart jupyterhub
	fi

	if [ "$service" = 0 ] && have_systemd && systemctl is-active --quiet jupyterhub; then
		echo "setup.sh: Debian's jupyterhub service runs, with Debian's configuration rather than the class's: stop it" >&2
		echo "(systemctl disable --now jupyterhub), or run setup.sh without --no-service" >&2
	fi
	echo
	echo "The class is set up: ${#names[@]} learner(s) in $prefix/classroom.json."
	if [ -n "$mem_limit" ]; then echo "Each learner's worker may allocate $mem_limit of device memory (CUDAREPL_MEM_LIMIT)."; else
		echo "No device-memory budget is set (no GPU seen, or --mem-limit \"\"): pass --mem-limit 4GiB to set one."; fi
	[ -z "$gpus" ] || echo "GPUs $gpus are shared out in turn: learner i gets GPU i mod $(echo "$gpus" | tr ',' '\n' | grep -c .)."
	echo "Their passwords (hand each one out; they can change it with passwd in a Jupyter terminal): $prefix/secrets/learners.txt"
	if [ "$service" = 1 ] && have_systemd; then
		echo "JupyterHub runs as Debian's jupyterhub service: http://$(hostname -f 2>/dev/null || hostname):$port/"
		echo "(put HTTPS in front of it before the class logs in over a network: /usr/share/doc/jupyterhub/README.Debian.md)"
	else
		echo "Start JupyterHub with:  cd $prefix/state && jupyterhub -f $prefix/jupyterhub_config.py"
	fi
	echo "Check a learner's server runs a cell:  sudo $src/scripts/classroom/run_cell.py --prefix $prefix --user ${names[0]}"
}

case "$cmd" in
install) install ;;
remove) remove ;;
esac
