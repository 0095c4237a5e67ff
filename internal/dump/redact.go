package dump

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// redacted replaces every secret value in a dump.
const redacted = "[REDACTED]"

// minSecretLen is the shortest Secret value scrubbed from free text: shorter
// ones ("true", a port) would blank out ordinary words and say nothing
// secret.
const minSecretLen = 8

// patterns match key material and credentials by their form, for what no
// Secret the dump read holds (a key a component printed, a token in a log).
// Each keeps its first group (the field name) and replaces the rest.
var patterns = []*regexp.Regexp{
	// PEM private keys of any kind, whole blocks.
	regexp.MustCompile(`()-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
	// kubeconfig credentials and bearer tokens.
	regexp.MustCompile(`((?:client-key-data|token|password|secret)["']?[ \t]*[:=][ \t]*["']?)[^\s"',}]+`),
	regexp.MustCompile(`((?i:authorization:[ \t]*bearer)[ \t]+)\S+`),
	// Bootstrap tokens (ID.secret).
	regexp.MustCompile(`()\b[a-z0-9]{6}\.[a-z0-9]{16}\b`),
	// Service-account tokens and other JWTs.
	regexp.MustCompile(`()\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
}

// Redactor scrubs the values of the Secrets it was shown, in their raw and
// base64 forms, and anything that looks like key material, from text.
type Redactor struct {
	values [][]byte
}

// Learn adds the values of s to what Scrub removes.
func (r *Redactor) Learn(s *corev1.Secret) {
	for _, v := range s.Data {
		r.learn(v)
	}
	for _, v := range s.StringData {
		r.learn([]byte(v))
	}
}

func (r *Redactor) learn(v []byte) {
	v = bytes.TrimSpace(v)
	if len(v) < minSecretLen {
		return
	}
	r.values = append(r.values, v, []byte(base64.StdEncoding.EncodeToString(v)))
	// A multi-line value (a PEM block) also appears line by line, e.g. in
	// a log that quoted it; every long line of it is scrubbed too.
	for line := range bytes.SplitSeq(v, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) >= 32 {
			r.values = append(r.values, line)
		}
	}
}

// Scrub returns data with every learned value and every key-material
// pattern replaced.
func (r *Redactor) Scrub(data []byte) []byte {
	// Longest first, so a value is never left half-scrubbed by a shorter
	// one contained in it.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	for _, v := range r.values {
		data = bytes.ReplaceAll(data, v, []byte(redacted))
	}
	for _, p := range patterns {
		data = p.ReplaceAll(data, []byte("${1}"+redacted))
	}
	return data
}

// RedactSecret returns a copy of s that keeps what identifies it (metadata,
// type, the names of its keys and their sizes) and none of its values.
func RedactSecret(s *corev1.Secret) *corev1.Secret {
	out := s.DeepCopy()
	out.Data = nil
	out.StringData = nil
	out.ManagedFields = nil
	// The last-applied annotation is a copy of the whole object.
	delete(out.Annotations, corev1.LastAppliedConfigAnnotation)
	if len(s.Data) > 0 {
		keys := make([]string, 0, len(s.Data))
		for k, v := range s.Data {
			keys = append(keys, k+" ("+strconv.Itoa(len(v))+" bytes)")
		}
		sort.Strings(keys)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations["dump.hypershift.dev/redacted-keys"] = strings.Join(keys, ", ")
	}
	return out
}
