#!/usr/bin/env bash
# make test's run of every test (docs/testing.md): the end-to-end package
# (test/e2e) and every other package, side by side, their JSON streams
# (go tool test2json) read together by testreport.
#
# The end-to-end tests run without -race: their binary drives the hypershift
# binary and kubectl, which it runs as processes (built without -race, as
# users get them), and the race detector's cost there was its own CPU only
# (258 CPU-s of a run's 4,751) taken from the control planes under test. The
# other packages, where the controllers run in the test binary, run with
# -race, one at a time beside the end-to-end tests, at nice 10
# (hack/testexec).
#
# Every test binary is built once, first (go test -c): a compile at normal
# priority beside the end-to-end tests starved their control planes, and
# a go test run links each binary again (about 6 CPU-seconds each, over 60
# packages), which this skips.
#
# Environment: GO, BIN (the artifacts go to BIN/test-artifacts).
set -uo pipefail
GO=${GO:-go}
BIN=${BIN:?BIN is the bin directory}
# go test puts its own toolchain first on the test binaries' PATH (tests run
# go list and go build); so does this.
PATH="$("$GO" env GOROOT)/bin:$PATH"
export PATH
[ -x "$BIN/testreport" ] || { echo "no $BIN/testreport: make builds it" >&2; exit 1; }
e2e=hypershift.dev/test/e2e
art=$BIN/test-artifacts
bins=$BIN/test-binaries
root=$PWD
mkdir -p "$art"
rm -rf "$bins" && mkdir -p "$bins/race" || exit

# Packages with tests, with their directories: go test given a package
# without tests still compiles it, and under -race that meant compiling all
# of k8s.io/kubernetes a second time for no test.
# shellcheck disable=SC2016 # a go list template
listing=$("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...) || exit
others=$(awk -v e2e="$e2e" '$1 != e2e {print $1}' <<<"$listing")
dir() { awk -v p="$1" '$1 == p {print $2}' <<<"$listing"; }
# go test -c -o DIR/ names a binary after the package's last element; the
# packages that share one are built apart, named after their import path.
shared=$(awk -F/ '{print $NF}' <<<"$others" | sort | uniq -d)
shares() { grep -qxF "${1##*/}" <<<"$shared"; }
binary() {
	if shares "$1"; then echo "$bins/race/${1//\//_}.test"; else echo "$bins/race/${1##*/}.test"; fi
}
apart=() together=()
for pkg in $others; do
	if shares "$pkg"; then apart+=("$pkg"); else together+=("$pkg"); fi
done
"$GO" test -race -c -o "$bins/race/" "${together[@]}" || exit
for pkg in "${apart[@]}"; do
	"$GO" test -race -c -o "$(binary "$pkg")" "$pkg" || exit
done
"$GO" test -c -o "$bins/e2e.test" ./test/e2e || exit
for pkg in $others; do
	[ -x "$(binary "$pkg")" ] || { echo "no test binary $(binary "$pkg") for $pkg" >&2; exit 1; }
done

streams=$(mktemp -d)
trap 'rm -rf "$streams"' EXIT
mkfifo "$streams/e2e" "$streams/others"
# A binary times itself out (-test.timeout). test2json then waits for
# every process holding the binary's output: tests give the processes
# they start pipes or files of their own, never the binary's stdout or
# stderr.
flags=(-test.v=test2json -test.count=1 -test.timeout=80m -test.paniconexit0 -test.artifacts "-test.outputdir=$art")
(cd test/e2e && exec "$GO" tool test2json -t -p "$e2e" "$bins/e2e.test" "${flags[@]}") >"$streams/e2e" 2>&1 &
e2e_pid=$!
(
	failed=0
	for pkg in $others; do
		(cd "$(dir "$pkg")" && "$GO" tool test2json -t -p "$pkg" "$root/hack/testexec" "$(binary "$pkg")" "${flags[@]}") 2>&1 || failed=1
	done
	exit $failed
) >"$streams/others" &
others_pid=$!
"$BIN/testreport" -json "$art/test.json" -report "$art/test-report.txt" "$streams/e2e" "$streams/others" | tee "$BIN/test.log"
report=$?
wait "$e2e_pid"
e2e_rc=$?
wait "$others_pid"
others_rc=$?
if [ "$report" -ne 0 ] || [ "$e2e_rc" -ne 0 ] || [ "$others_rc" -ne 0 ]; then
	echo "make test failed: report $report, test/e2e $e2e_rc, the other packages $others_rc" >&2
	exit 1
fi
