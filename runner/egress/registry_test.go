package egress_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// registryHost is the name the fake registry is reached by; the test's resolver maps it to
// 127.0.0.1, which the test allows by address and port, as an operator could.
const registryHost = "registry.akira.test"

// registry is a fake package registry over HTTPS: a file, a git repository (git's dumb HTTP
// protocol), an npm package and a Go module.
type registry struct {
	srv    *httptest.Server
	port   int
	caFile string
}

func startRegistry(t *testing.T) *registry {
	t.Helper()
	certPEM, keyPEM := selfSigned(t, registryHost)
	dir := t.TempDir()
	r := &registry{caFile: filepath.Join(dir, "ca.pem")}
	if err := os.WriteFile(r.caFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello from the registry") })
	mux.Handle("/git/", http.StripPrefix("/git/", http.FileServer(http.Dir(bareRepo(t)))))
	r.srv = httptest.NewUnstartedServer(mux)
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	r.port = r.srv.Listener.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("https://%s:%d", registryHost, r.port)

	tgz := npmTarball(t)
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	meta, _ := json.Marshal(map[string]any{
		"name": "left-pad", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{"name": "left-pad", "version": "1.0.0", "dist": map[string]string{
			"tarball": base + "/npm/left-pad/-/left-pad-1.0.0.tgz", "shasum": hex.EncodeToString(sha1sum[:]),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
		}}},
	})
	mux.HandleFunc("/npm/left-pad", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(meta)
	})
	mux.HandleFunc("/npm/left-pad/-/left-pad-1.0.0.tgz", func(w http.ResponseWriter, _ *http.Request) { w.Write(tgz) })

	gomod := "module example.com/hello\n\ngo 1.21\n"
	modZip := goModuleZip(t, "example.com/hello@v1.0.0", map[string]string{"go.mod": gomod, "hello.go": "package hello\n\nconst Hello = \"hi\"\n"})
	mux.HandleFunc("/gomod/example.com/hello/@v/list", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "v1.0.0") })
	mux.HandleFunc("/gomod/example.com/hello/@v/v1.0.0.info", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`)
	})
	mux.HandleFunc("/gomod/example.com/hello/@v/v1.0.0.mod", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, gomod) })
	mux.HandleFunc("/gomod/example.com/hello/@v/v1.0.0.zip", func(w http.ResponseWriter, _ *http.Request) { w.Write(modZip) })
	return r
}

func selfSigned(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// bareRepo is a bare repository with one commit, ready for git's dumb HTTP protocol.
func bareRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	work, bare := filepath.Join(dir, "work"), filepath.Join(dir, "repo.git")
	git := func(d string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = d
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	git(work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("cloned through the proxy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(work, "add", ".")
	git(work, "commit", "-qm", "first")
	git(dir, "clone", "-q", "--bare", work, bare)
	git(bare, "update-server-info")
	return dir
}

func npmTarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"left-pad","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = (s, n) => String(s).padStart(n)\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func goModuleZip(t *testing.T, prefix string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(prefix + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fakeResolver answers from a table and records every name it was asked about: a name the proxy
// refuses must never be looked up (that lookup would carry data out).
type fakeResolver struct {
	mu    sync.Mutex
	table map[string][]netip.Addr
	asked []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if a, ok := r.table[strings.ToLower(host)]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) Asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}
