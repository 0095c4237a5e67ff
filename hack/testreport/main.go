// Command testreport reads `go test -json` on standard input, or from the
// files named as arguments side by side (one stream each, as go tool
// test2json writes it: make test runs the end-to-end package apart from
// the others), prints what a
// person needs while the tests run (package results, and the whole output of
// every test that fails), keeps the raw stream, and ends with where the time
// went: each package's wall time, the slowest tests, the skipped tests with
// their reasons, and the closing line `N passed, N failed, N skipped`.
//
// It exits non-zero when a test or package failed, a package did not build,
// or no test ran at all.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	jsonPath := flag.String("json", "", "also write the raw `go test -json` stream to this file")
	reportPath := flag.String("report", "", "also write the closing report to this file")
	slowest := flag.Int("slowest", 25, "how many of the slowest tests the report lists")
	flag.Parse()
	ins, err := inputs(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if err := run(ins, os.Stdout, *jsonPath, *reportPath, *slowest); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

func run(ins []io.Reader, out io.Writer, jsonPath, reportPath string, slowest int) error {
	raw := io.Discard
	var rawFile *os.File
	if jsonPath != "" {
		f, err := create(jsonPath)
		if err != nil {
			return err
		}
		raw, rawFile = f, f
	}
	s := newSummary(out)
	err := s.read(raw, ins...)
	if rawFile != nil {
		err = errors.Join(err, rawFile.Close())
	}
	if err != nil {
		return err
	}
	report := s.report(slowest)
	fmt.Fprint(out, report)
	if reportPath != "" {
		f, err := create(reportPath)
		if err != nil {
			return err
		}
		_, err = io.WriteString(f, report)
		if err = errors.Join(err, f.Close()); err != nil {
			return err
		}
	}
	return s.verdict()
}

func create(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

// inputs opens the streams named by args (standard input when none). A
// named pipe opens once its writer has opened it. The files stay open
// until the process ends.
func inputs(args []string) ([]io.Reader, error) {
	if len(args) == 0 {
		return []io.Reader{os.Stdin}, nil
	}
	ins := make([]io.Reader, 0, len(args))
	for _, path := range args {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		ins = append(ins, f)
	}
	return ins, nil
}
