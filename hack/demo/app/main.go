// Command app is the demo's workload: it answers every HTTP request on
// :8080 with the pod and the node it runs on (from the downward API).
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	pod, node := os.Getenv("POD_NAME"), os.Getenv("NODE_NAME")
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from pod %s on node %s\n", pod, node)
	})
	srv := &http.Server{Addr: ":8080", ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
