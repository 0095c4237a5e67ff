#!/usr/bin/env bash
# make test's run of every test (docs/testing.md): the end-to-end package
# (test/e2e) and every other package, side by side, as two go test runs whose
# -json streams testreport reads together.
#
# The end-to-end tests run without -race: their binary drives the hypershift
# binary and kubectl, which it runs as processes (built without -race, as
# users get them), and the race detector's cost there was its own CPU only
# (258 CPU-s of a run's 4,751) taken from the control planes under test. The
# other packages, where the controllers run in the test binary, run with
# -race, one at a time beside the end-to-end tests, at nice 10
# (hack/testexec).
#
# Environment: GO, BIN (the artifacts go to BIN/test-artifacts), and
# PACKAGES_PARALLEL (default 1).
set -uo pipefail
GO=${GO:-go}
BIN=${BIN:?BIN is the bin directory}
e2e=hypershift.dev/test/e2e
# Packages with tests: go test given a package without tests still compiles
# it, and under -race that meant compiling all of k8s.io/kubernetes a second
# time for no test.
others=$("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep -vx "$e2e")
art=$BIN/test-artifacts
mkdir -p "$art"

# Build (and run no test of) every test binary first: a compile at normal
# priority beside the end-to-end tests starved their control planes.
# shellcheck disable=SC2086 # a list of packages
"$GO" test -race -count=1 -run '^$' $others >/dev/null || exit
"$GO" test -count=1 -run '^$' ./test/e2e >/dev/null || exit

streams=$(mktemp -d)
trap 'rm -rf "$streams"' EXIT
mkfifo "$streams/e2e" "$streams/others"
"$GO" test -json -count=1 -timeout 80m -artifacts -outputdir "$art" ./test/e2e >"$streams/e2e" 2>&1 &
e2e_pid=$!
# shellcheck disable=SC2086 # a list of packages
"$GO" test -json -count=1 -race -p "${PACKAGES_PARALLEL:-1}" -exec "$PWD/hack/testexec" -timeout 80m \
	-artifacts -outputdir "$art" $others >"$streams/others" 2>&1 &
others_pid=$!
"$BIN/testreport" -json "$art/test.json" -report "$art/test-report.txt" "$streams/e2e" "$streams/others" | tee "$BIN/test.log"
report=$?
wait "$e2e_pid"
e2e_rc=$?
wait "$others_pid"
others_rc=$?
if [ "$report" -ne 0 ] || [ "$e2e_rc" -ne 0 ] || [ "$others_rc" -ne 0 ]; then
	echo "make test failed: report $report, go test of test/e2e $e2e_rc, of the other packages $others_rc" >&2
	exit 1
fi
