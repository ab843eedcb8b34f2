#!/usr/bin/env bash
# CI: the client builds for every system it runs on, with CGO_ENABLED=0
# (issue 33). For each of linux/amd64, linux/arm64, darwin/arm64,
# darwin/amd64 and windows/amd64:
#   - make cross builds build/cudarepl-<os>-<arch>[.exe], and its build
#     information says that system, that architecture and no cgo;
#   - go vet ./... is clean (tests included, so each system's code is
#     type-checked as that system sees it);
#   - the test binary of every package the client is made of compiles and
#     links (go test -c; only Linux runs them, in make test).
# Then the binary for this machine runs 'version' and 'lessons'.
#
# CROSS_WINE=1 also runs the Windows binary and test binaries under Wine
# (Debian's wine64, and a 20-line bcryptprimitives.dll built with MinGW,
# which Wine 8 lacks and Go 1.22+ needs): 'version', 'lessons', 'device'
# and a piped REPL must replay, and package dl's tests and the process
# tests of gpu and internal/sysproc must pass. Wine is not Windows: this
# shows the binary starts, finds no GPU and replays; it says nothing of a
# Windows GPU.
#
# Exits non-zero if any step fails, after running the others; leaves
# nothing behind but build/.
set -uo pipefail
cd "$(dirname "$0")/../.."

targets="linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64"
export CGO_ENABLED=0

command -v go >/dev/null 2>&1 || { echo "cross.sh: Go is not installed; install Go 1.26 (the README's Set up says how)"; exit 1; }
command -v make >/dev/null 2>&1 || { echo "cross.sh: make is not installed; on Debian: apt-get install make"; exit 1; }
go version

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

failed=()
# step DESC CMD...: runs CMD, and records DESC if it fails.
step() {
	local desc="$1"
	shift
	echo "=== $desc"
	if ! "$@"; then
		echo "--- FAILED: $desc"
		failed+=("$desc")
	fi
}

# binary OS ARCH: the file make cross writes for OS/ARCH.
binary() {
	local out="build/cudarepl-$1-$2"
	[ "$1" != windows ] || out="$out.exe"
	echo "$out"
}

# buildinfo FILE OS ARCH: FILE's build information says OS, ARCH and no cgo.
buildinfo() {
	local info
	info="$(go version -m "$1")" || return 1
	for want in "GOOS=$2" "GOARCH=$3" "CGO_ENABLED=0"; do
		if ! grep -q "build[[:space:]]*$want\$" <<<"$info"; then
			echo "$1: its build information lacks $want:"
			echo "$info" | grep '^[[:space:]]*build'
			return 1
		fi
	done
}

# testc OS ARCH: compiles the test binaries of the client's own packages.
testc() {
	local pkgs
	pkgs="$(GOOS=$1 GOARCH=$2 go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/cudarepl | grep '^cudarepl')" || return 1
	echo "$(wc -w <<<"$pkgs") packages"
	mkdir -p "$tmp/test-$1-$2"
	# shellcheck disable=SC2086 # one package a word
	GOOS=$1 GOARCH=$2 go test -c -o "$tmp/test-$1-$2/" $pkgs
}

step "make cross" make cross CROSS_TARGETS="$targets"
for t in $targets; do
	os="${t%/*}" arch="${t#*/}"
	step "$t: build information" buildinfo "$(binary "$os" "$arch")" "$os" "$arch"
	step "$t: go vet ./..." env GOOS="$os" GOARCH="$arch" go vet ./...
	step "$t: go test -c" testc "$os" "$arch"
done

# runs FILE ARGS... WANT: FILE ARGS exits 0 and prints a line holding WANT.
runs() {
	local want="${*: -1}" out
	out="$("${@:1:$#-1}" 2>&1)" || { echo "$out"; echo "exit status $?"; return 1; }
	grep -q -- "$want" <<<"$out" || { echo "$out"; echo "no line holds \"$want\""; return 1; }
}

here="$(go env GOOS)/$(go env GOARCH)"
if [[ " $targets " == *" $here "* ]]; then
	bin="$(binary "${here%/*}" "${here#*/}")"
	step "$here: $bin version" runs "$bin" version "^driver"
	step "$here: $bin lessons" runs "$bin" lessons "vector-add"
fi

# wine: sets up Wine in $tmp, where Go's Windows programs can start.
wine_setup() {
	local need=()
	command -v wine >/dev/null 2>&1 || need+=(wine wine64)
	command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64-win32)
	if [ ${#need[@]} -gt 0 ]; then
		local sudo=""
		[ "$(id -u)" = 0 ] || sudo="sudo"
		$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || return 1
	fi
	export WINEPREFIX="$tmp/wine" WINEDEBUG=-all
	wineboot -i >/dev/null 2>&1 || true
	# Go's runtime needs ProcessPrng from bcryptprimitives.dll (Windows 10
	# on); Wine 8 has no such DLL. This one takes its bytes from RtlGenRandom.
	cat >"$tmp/prng.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T n) {
    while (n > 0) {
        ULONG k = n > 0x10000000 ? 0x10000000 : (ULONG)n;
        if (!SystemFunction036(data, k)) return FALSE;
        data += k; n -= k;
    }
    return TRUE;
}
EOF
	x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" "$tmp/prng.c" -ladvapi32
}

# wine_repl: the Windows REPL reads a piped script as lines and replays.
wine_repl() {
	local out
	out="$(printf 'device\nquit\n' | timeout 120 wine build/cudarepl-windows-amd64.exe 2>&1)" || { echo "$out"; return 1; }
	grep -q "replay mode: the lessons show" <<<"$out" || { echo "$out"; echo "the piped 'device' did not run"; return 1; }
}

if [ "${CROSS_WINE:-0}" = 1 ]; then
	if step "wine: set up" wine_setup; then
		step "wine: cudarepl.exe version" runs timeout 120 wine build/cudarepl-windows-amd64.exe version "^driver *no NVIDIA driver found"
		step "wine: cudarepl.exe lessons" runs timeout 120 wine build/cudarepl-windows-amd64.exe lessons "vector-add"
		step "wine: cudarepl.exe device" runs timeout 120 wine build/cudarepl-windows-amd64.exe device "replay mode"
		step "wine: cudarepl.exe, a piped REPL" wine_repl
		# Wine's file deletion fails Go's t.TempDir clean-up, so only the
		# tests that make no temporary folder run here.
		step "wine: internal/dl tests" runs timeout 120 wine "$tmp/test-windows-amd64/dl.test.exe" -test.run 'TestCheckHidden|TestOpenHidden|TestNamesFor|TestOpenMissing|TestNoNamesReason|TestOpenBindCall|TestMatchesLibrary' "^PASS"
		step "wine: gpu process tests" runs timeout 120 wine "$tmp/test-windows-amd64/gpu.test.exe" -test.run 'TestMapHost|TestWorkerRoundTrip|TestWorkerCloseLeavesNoProcess' "^PASS"
		step "wine: internal/sysproc tests" runs timeout 120 wine "$tmp/test-windows-amd64/sysproc.test.exe" -test.run 'TestWorkerPipes|TestKillTree' "^PASS"
		wineserver -k 2>/dev/null || true
	fi
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
	echo "cross.sh: ${#failed[@]} step(s) failed:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "cross.sh: every system builds, vets clean and compiles its tests"
