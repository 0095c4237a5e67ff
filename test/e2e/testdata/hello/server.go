package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// serve says hello on standard output and to every HTTP request, naming
// the host (the pod), so a client tells the pods of a Service apart.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", ":8080", "address to serve HTTP on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _ := os.Hostname()
	fmt.Printf("hello from %s\n", host)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// DenyLabel marks the objects the webhook rejects: a test object labelled
// DenyLabel=deny is refused, every other object admitted.
const DenyLabel = "e2e.hypershift.dev/webhook"

// admissionReview is the part of admission.k8s.io/v1 AdmissionReview the
// webhook reads and writes (the full types would pull k8s.io/api into a
// workload that must stay small).
type admissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *admissionRequest  `json:"request,omitempty"`
	Response   *admissionResponse `json:"response,omitempty"`
}

type admissionRequest struct {
	UID  string `json:"uid"`
	Kind struct {
		Kind string `json:"kind"`
	} `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Operation string `json:"operation"`
	Object    struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	} `json:"object"`
}

type admissionResponse struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
	Status  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status,omitempty"`
}

// decide admits an object unless it is labelled DenyLabel=deny.
func decide(req *admissionRequest) (allowed bool, message string) {
	name := req.Object.Metadata.Name
	if name == "" {
		name = req.Name
	}
	what := fmt.Sprintf("%s %s/%s", req.Kind.Kind, req.Namespace, name)
	if req.Object.Metadata.Labels[DenyLabel] == "deny" {
		return false, fmt.Sprintf("denied by the e2e webhook: %s is labelled %s=deny", what, DenyLabel)
	}
	return true, "allowed " + what
}

// review answers one AdmissionReview.
func review(body []byte) ([]byte, string, error) {
	var in admissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, "", fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if in.Request == nil {
		return nil, "", fmt.Errorf("AdmissionReview without a request")
	}
	allowed, msg := decide(in.Request)
	out := admissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: &admissionResponse{UID: in.Request.UID, Allowed: allowed}}
	if !allowed {
		out.Response.Status = &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{Code: http.StatusForbidden, Message: msg}
	}
	data, err := json.Marshal(out)
	return data, msg, err
}

// webhook serves POST /validate over TLS and logs every decision, so a
// test sees in `kubectl logs` that an admitted object was asked about.
func webhook(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	listen := fs.String("listen", ":8443", "address to serve HTTPS on")
	cert := fs.String("cert", "/tls/tls.crt", "serving certificate")
	key := fs.String("key", "/tls/tls.key", "its key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, msg, err := review(body)
		if err != nil {
			fmt.Println("webhook: bad request:", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Println("webhook:", msg)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	fmt.Println("webhook: serving on", *listen)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServeTLS(*cert, *key)
}
