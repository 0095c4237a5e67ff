// Command hello is the workload of the real-node test, built into an image
// by the test itself: it says hello, answers HTTP on :8080, and with
// arguments prints them (for `kubectl exec`).
package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Println(strings.Join(os.Args[1:], " "))
		return
	}
	host, _ := os.Hostname()
	fmt.Printf("hello from %s\n", host)
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	if err := http.ListenAndServe(":8080", nil); err != nil { //nolint:gosec // a test workload
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
