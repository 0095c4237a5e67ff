package dashboard

import (
	"net"
	"net/http"
	"strings"
)

// guard serves only requests addressed to the dashboard itself — the Host
// header names its listening address, or localhost when that is loopback —
// so a web page elsewhere cannot reach it through a DNS name rebound to
// 127.0.0.1, and sets headers that keep the pages from being framed or
// from loading anything but their own assets.
func guard(addr net.Addr, next http.Handler) http.Handler {
	allowed := map[string]bool{}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		allowed[tcp.IP.String()] = true
		if tcp.IP.IsLoopback() {
			allowed["localhost"] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		if !allowed[strings.Trim(host, "[]")] {
			http.Error(w, "the dashboard answers requests addressed to its own address only", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
