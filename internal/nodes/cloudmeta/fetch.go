package cloudmeta

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// fetcher sends requests to one metadata service: straight to it (never
// through a proxy of the environment), without following redirects, each
// within the request timeout, retried while the service is not there yet.
type fetcher struct {
	source    string // names the service in errors
	base      string
	http      *http.Client
	retryWait time.Duration
}

func (c Client) fetcher(source string) (*fetcher, error) {
	base := c.Endpoint
	if base == "" {
		base = DefaultEndpoint
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("%s: endpoint %q: want http://HOST[:PORT]", source, base)
	}
	return &fetcher{
		source: source,
		base:   strings.TrimSuffix(base, "/"),
		http: &http.Client{
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, ResponseHeaderTimeout: orDefault(c.RequestTimeout, DefaultRequestTimeout)},
			Timeout:   orDefault(c.RequestTimeout, DefaultRequestTimeout),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		retryWait: orDefault(c.RetryWait, DefaultRetryWait),
	}, nil
}

// statusError is an answer other than 200 OK.
type statusError struct {
	source, path string
	code         int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d", e.source, e.path, e.code)
}

// do sends method path with header and returns the body of a 200 answer,
// at most MaxResponse bytes, retrying until ctx ends.
func (f *fetcher) do(ctx context.Context, method, path string, header http.Header) ([]byte, error) {
	wait := f.retryWait
	for {
		body, again, err := f.once(ctx, method, path, header)
		if err == nil || !again {
			return body, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s %s: no answer in time: %w", f.source, path, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// once sends the request once; again says whether a failure may pass: the
// service is not listening yet, timed out, failed (5xx) or throttles
// (429). Any other answer would be the same again.
func (f *fetcher) once(ctx context.Context, method, path string, header http.Header) (body []byte, again bool, err error) {
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, http.NoBody)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", f.source, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("%s %s: %w", f.source, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		code := resp.StatusCode
		return nil, code >= 500 || code == http.StatusTooManyRequests, &statusError{f.source, path, code}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, true, fmt.Errorf("%s %s: %w", f.source, path, err)
	}
	if len(body) > MaxResponse {
		return nil, false, fmt.Errorf("%s %s: the answer is larger than %d bytes", f.source, path, MaxResponse)
	}
	return body, false, nil
}
