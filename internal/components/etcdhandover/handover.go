// Package etcdhandover moves leadership away from an etcd member that is
// told to stop, before it stops.
package etcdhandover

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/osutil"
	"go.uber.org/zap"
)

// A member that is stopped while it leads keeps leading through its
// graceful stop — seconds, while it waits for its clients' watch streams —
// and hands leadership over only at the end: on a busy machine a leader
// that is shutting down answers late, and the hand-over at the end is an
// election the whole cluster waits for. So the first thing a member does
// when told to stop is hand leadership to the most up-to-date of the
// others, while it still leads well; then etcd stops as it always does.

// handOverTimeout bounds the whole hand-over: a stop is never held up
// longer than this by it (a hand-over between members that answer takes a
// fraction of it).
const handOverTimeout = 3 * time.Second

// Register makes etcd's interrupt handling (SIGTERM, SIGINT) move
// leadership away from the member of args (etcd's flags) before anything
// else: etcdmain runs the handlers in the order they were registered, and
// registers its own stop after this one. Call it before etcdmain.Main.
func Register(args []string) {
	member, ok := parseMemberFlags(args)
	if !ok {
		return
	}
	osutil.RegisterInterruptHandler(func() {
		// Made here, not at start: it is used only when the member stops.
		lg, err := zap.NewProduction()
		if err != nil {
			lg = zap.NewNop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), handOverTimeout)
		defer cancel()
		switch to, err := member.handOver(ctx); {
		case err != nil:
			lg.Warn("leadership not handed over before stopping", zap.String("member", member.name), zap.Error(err))
		case to != "":
			lg.Info("leadership handed over before stopping", zap.String("member", member.name), zap.String("to", to))
		}
	})
}

// memberFlags are the flags of this member the hand-over needs.
type memberFlags struct {
	name, clientURL, certFile, keyFile, caFile string
}

// parseMemberFlags reads them from etcd's arguments (--flag=value, as the
// control plane renders them); ok is false when one is missing.
func parseMemberFlags(args []string) (memberFlags, bool) {
	var m memberFlags
	for _, a := range args {
		name, value, found := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !found {
			continue
		}
		switch name {
		case "name":
			m.name = value
		case "advertise-client-urls":
			m.clientURL, _, _ = strings.Cut(value, ",")
		case "cert-file":
			m.certFile = value
		case "key-file":
			m.keyFile = value
		case "trusted-ca-file":
			m.caFile = value
		}
	}
	return m, m.name != "" && m.clientURL != "" && m.certFile != "" && m.keyFile != "" && m.caFile != ""
}

// handOver moves leadership from this member, when it leads, to the
// started voting member with the highest raft index that answers; it
// returns that member's name ("" when this one does not lead).
func (m memberFlags) handOver(ctx context.Context) (string, error) {
	cert, err := tls.LoadX509KeyPair(m.certFile, m.keyFile)
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(m.caFile)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", errors.New("no certificate in " + m.caFile)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.clientURL},
		DialTimeout: time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	self, err := cli.Status(ctx, m.clientURL)
	if err != nil {
		return "", fmt.Errorf("status: %w", err)
	}
	if self.Leader != self.Header.MemberId {
		return "", nil
	}
	// Serializable: this member's own view, with no round through a
	// quorum that may be stopping too (`hypershift down` stops all).
	members, err := cli.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return "", fmt.Errorf("member list: %w", err)
	}
	var best *clientv3.StatusResponse
	bestName, others := "", 0
	for _, mem := range members.Members {
		if mem.ID == self.Header.MemberId || mem.IsLearner || len(mem.ClientURLs) == 0 {
			continue
		}
		others++
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, mem.ClientURLs[0])
		cancel()
		if err == nil && (best == nil || st.RaftIndex > best.RaftIndex) {
			best, bestName = st, mem.Name
		}
	}
	switch {
	case others == 0:
		return "", nil // a single member: no one to hand over to
	case best == nil:
		return "", errors.New("no other member answers")
	}
	if _, err := cli.MoveLeader(ctx, best.Header.MemberId); err != nil {
		return "", fmt.Errorf("move leader to %s: %w", bestName, err)
	}
	return bestName, nil
}
