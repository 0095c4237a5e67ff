// Package blobtest serves real object-store servers for tests: Google
// Cloud Storage's protocol through fake-gcs-server (in process, on
// loopback) and Azure Blob Storage's through Azurite (Microsoft's
// emulator, a node program hack/install-deps.sh installs into
// bin/tools/azurite).
package blobtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"hypershift.dev/internal/testenv"
)

// GCS is a fake-gcs-server on loopback.
type GCS struct {
	Server *fakestorage.Server
	// Endpoint is the server's base URL, for a gs:// URL's endpoint option.
	Endpoint string
}

// StartGCS serves the GCS JSON and XML APIs on loopback until the test
// ends, with the given buckets made.
func StartGCS(t testing.TB, buckets ...string) *GCS {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1"})
	if err != nil {
		t.Fatalf("start fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	return &GCS{Server: srv, Endpoint: srv.URL()}
}

// URL is the gs:// archive URL of key in bucket on this server.
func (g *GCS) URL(bucket, key string) string {
	return "gs://" + bucket + "/" + key + "?endpoint=" + url.QueryEscape(g.Endpoint)
}

// Azurite's well-known development account (its documented default).
const (
	AzureAccount = "devstoreaccount1"
	AzureKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite is an Azurite blob server on loopback.
type Azurite struct {
	// Host is HOST:PORT, for an azblob:// URL's domain option.
	Host string
}

// AzuriteBinary is bin/tools/azurite's azurite-blob at the module root.
func AzuriteBinary() string {
	_, file, _, _ := runtime.Caller(0) //nolint:dogsled // only the file is needed
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "tools", "azurite", "node_modules", ".bin", "azurite-blob")
}

// StartAzurite starts azurite-blob on a free loopback port with its data
// in a temporary directory, makes the containers, and stops that process
// (only it) when the test ends. Without the program the test is skipped,
// unless CI=true: there `make test` installs it, so missing is a failure.
func StartAzurite(t testing.TB, containers ...string) *Azurite {
	t.Helper()
	bin := AzuriteBinary()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no Azurite at %s: run hack/install-deps.sh (npm install of azurite into bin/tools/azurite)", bin)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := testenv.FreePort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--location", dir, "--silent", "--skipApiVersionCheck", "--disableProductStyleUrl")
	cmd.Stdout, cmd.Stderr = nil, nil
	logFile, err := os.Create(filepath.Join(dir, "azurite.log"))
	if err == nil {
		cmd.Stdout, cmd.Stderr = logFile, logFile
	}
	// Its own process group: node may start children, and the group is
	// ours alone to stop. Pdeathsig: a test binary killed on its timeout
	// runs no cleanup, and the emulator must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// Once Wait has reaped it, its pid and group id may be another
		// process's: signal only while it is ours.
		select {
		case <-done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
		if logFile != nil {
			_ = logFile.Close()
		}
	})
	a := &Azurite{Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	client, err := a.Client()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range containers {
		for {
			_, err := client.CreateContainer(context.Background(), c, nil)
			if err == nil {
				break
			}
			select {
			case <-done:
				log, _ := os.ReadFile(filepath.Join(dir, "azurite.log"))
				t.Fatalf("azurite exited: %s", log)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("create container %s in Azurite at %s: %v", c, a.Host, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return a
}

// Client is a shared-key client of Azurite's development account.
func (a *Azurite) Client() (*azblob.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(AzureAccount, AzureKey)
	if err != nil {
		return nil, fmt.Errorf("azurite credential: %w", err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential("http://"+a.Host+"/"+AzureAccount+"/", cred, nil)
	if err != nil {
		return nil, fmt.Errorf("azurite client: %w", err)
	}
	return c, nil
}

// URL is the azblob:// archive URL of key in container on this server.
func (a *Azurite) URL(container, key string) string {
	return "azblob://" + container + "/" + key + "?protocol=http&domain=" + url.QueryEscape(a.Host)
}

// SASToken is an account SAS token of Azurite's development account for
// blobs, valid for an hour, with the permissions perms (e.g. "rwdlc").
func (a *Azurite) SASToken(perms string) (string, error) {
	cred, err := azblob.NewSharedKeyCredential(AzureAccount, AzureKey)
	if err != nil {
		return "", fmt.Errorf("azurite credential: %w", err)
	}
	q, err := sas.AccountSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions: perms, ResourceTypes: "sco",
	}.SignWithSharedKey(cred)
	if err != nil {
		return "", fmt.Errorf("sign SAS token: %w", err)
	}
	return q.Encode(), nil
}
