package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// NewToken is a random token for the dashboard's URL: 32 bytes, URL-safe.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// requireToken serves only requests that carry token: in the URL once
// (?token=, as `hypershift dashboard` prints it), which sets a cookie and
// redirects to the same page without it, then in that cookie (the pages'
// own requests) or an Authorization: Bearer header (scripts). Other users
// of the machine reach the loopback port too; they do not have the token.
func requireToken(token string, addr net.Addr, next http.Handler) http.Handler {
	cookie := "hypershift-dashboard"
	if tcp, ok := addr.(*net.TCPAddr); ok {
		// Cookies are kept per host, not per port: one per dashboard.
		cookie += "-" + strconv.Itoa(tcp.Port)
	}
	matches := func(got string) bool {
		return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has("token") {
			if !matches(q.Get("token")) {
				http.Error(w, "wrong dashboard token: open the URL that `hypershift dashboard` printed", http.StatusUnauthorized)
				return
			}
			// Plain HTTP on loopback: a Secure cookie would never come back.
			http.SetCookie(w, &http.Cookie{Name: cookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}) //nolint:gosec // see above
			q.Del("token")
			// The same page of this dashboard: a path starting with // or
			// /\ would name another host.
			to := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/\\"), RawQuery: q.Encode()}
			http.Redirect(w, r, to.String(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(cookie); err == nil && matches(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && matches(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, "the dashboard needs its token: open the URL that `hypershift dashboard` printed", http.StatusUnauthorized)
	})
}
