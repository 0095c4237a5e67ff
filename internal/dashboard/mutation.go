package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
)

// Header is the request header the pages' script sets on every change.
// A form or a link of another site cannot set it, and a script of another
// site cannot send it here without a CORS preflight, which the dashboard
// never answers.
const Header = "X-Hypershift-Dashboard"

// maxBody bounds a change's request body: the largest is a few hundred bytes.
const maxBody = 64 << 10

// requestError is a request the dashboard refuses before calling the
// management API.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &requestError{status: status, msg: fmt.Sprintf(format, args...)}
}

// origins are the dashboard's own origins at addr: those of the Host names
// guard admits.
func origins(addr net.Addr) map[string]bool {
	out := map[string]bool{}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return out
	}
	port := strconv.Itoa(tcp.Port)
	out["http://"+net.JoinHostPort(tcp.IP.String(), port)] = true
	if tcp.IP.IsLoopback() {
		out["http://"+net.JoinHostPort("localhost", port)] = true
	}
	return out
}

// checkMutation refuses a change that a page of another site could have
// made: it must carry Header, name no other origin (Origin, and
// Sec-Fetch-Site where the browser sends it), and be JSON. A cross-site
// form cannot send JSON nor the header; a cross-site script cannot send
// either without a preflight. The token (requireToken) is checked before.
func checkMutation(own map[string]bool, r *http.Request) error {
	if r.Header.Get(Header) != "1" {
		return refuse(http.StatusForbidden, "a change needs the header %s: 1, which the dashboard's pages send", Header)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !own[origin] {
		return refuse(http.StatusForbidden, "a change from origin %q: the dashboard takes changes from its own pages only", origin)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return refuse(http.StatusForbidden, "a change from a %s page: the dashboard takes changes from its own pages only", site)
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, "a change is a JSON body: Content-Type: application/json")
	}
	return nil
}

// decode reads one JSON object of at most maxBody bytes into v, refusing
// fields v does not have.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return refuse(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
		}
		return refuse(http.StatusBadRequest, "the request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return refuse(http.StatusBadRequest, "the request body has more than one JSON value")
	}
	return nil
}
