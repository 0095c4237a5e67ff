package health

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestServe: /healthz says ok while ready says nil, and 503 with its error
// otherwise.
func TestServe(t *testing.T) {
	var notYet atomic.Bool
	notYet.Store(true)
	srv, err := Serve("127.0.0.1:0", func() error {
		if notYet.Load() {
			return errors.New("the socket is not there yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	url := "http://" + srv.Addr + "/healthz"
	if code, body := get(t, url); code != http.StatusServiceUnavailable || body != "the socket is not there yet" {
		t.Errorf("not ready: %d %q, want 503 and the reason", code, body)
	}
	notYet.Store(false)
	if code, body := get(t, url); code != http.StatusOK || body != "ok" {
		t.Errorf("ready: %d %q, want 200 ok", code, body)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's loopback request
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}
