package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/testnotes"
)

// The package registries of the repository-environment examples (examples/env-*): a Go module proxy,
// an npm registry and a PEP 503 package index, each speaking its real protocol and serving a package
// built at test time from the sources in the example's registry/ folder. They answer as fast as this
// machine does: no latency is added.

// registry is one running package server.
type registry struct {
	srv  *http.Server
	ln   net.Listener
	url  string // http://host:port, no trailing slash
	addr string // host:port, for the operator's egress allowlist

	mu       sync.Mutex
	requests []string
	closed   bool
}

// hostIP is an address of this machine other than loopback. The servers listen there because the
// sandbox's commands reach the network through the egress proxy (HTTP_PROXY), which package managers
// skip for loopback addresses (NO_PROXY, and Go's rule for localhost): a loopback server would be
// looked for inside the sandbox's own network namespace, where nothing listens.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil && !ipn.IP.IsLinkLocalUnicast() {
			return ipn.IP.String()
		}
	}
	testnotes.Skip(t, "repository-environment examples", "this machine has no non-loopback IPv4 address for the local registries")
	return ""
}

// startRegistry serves h on an address of this machine and records every request's path.
func startRegistry(t *testing.T, h http.Handler) *registry {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(hostIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{ln: ln, addr: ln.Addr().String(), url: "http://" + ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(r.Close)
	return r
}

// Requests are the requests served so far.
func (r *registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Close stops the server: from then on a connection to it is refused.
func (r *registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		_ = r.srv.Close()
	}
}

// readTree reads the files under dir (slash paths relative to dir).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sortedNames(files map[string]string) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fixedTime is the modification time of every file in the archives built here, so that they are the
// same bytes on every run (the npm lock file and the requirements pin their hashes).
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// goModuleProxy serves the module in dir (its go.mod names it) at version over the GOPROXY protocol:
// $module/@v/list, .info, .mod and .zip.
func goModuleProxy(t *testing.T, dir, version string) *registry {
	t.Helper()
	files := readTree(t, dir)
	gomod := files["go.mod"]
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(gomod, "\n", 2)[0], "module"))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedNames(files) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: module + "@" + version + "/" + name, Method: zip.Deflate, Modified: fixedTime})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	modZip := buf.Bytes()
	base := "/" + module + "/@v/"
	mux := http.NewServeMux()
	mux.HandleFunc(base+"list", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, version) })
	mux.HandleFunc(base+version+".info", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"Version":%q,"Time":%q}`, version, fixedTime.Format(time.RFC3339))
	})
	mux.HandleFunc(base+version+".mod", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, gomod) })
	mux.HandleFunc(base+version+".zip", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(modZip)
	})
	return startRegistry(t, mux)
}

// npmTarball packs the package in dir as npm does (every file under package/), the same bytes on
// every run: fixed times, sorted names, gzip without compression (deflate's output may change with
// Go's version; stored blocks do not).
func npmTarball(t *testing.T, dir string) []byte {
	t.Helper()
	files := readTree(t, dir)
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	for _, name := range sortedNames(files) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), ModTime: fixedTime,
			Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npmIntegrity is a tarball's Subresource Integrity string, as package-lock.json holds it.
func npmIntegrity(tgz []byte) string {
	sum := sha512.Sum512(tgz)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// npmRegistry serves the package in dir (its package.json names it) over npm's registry protocol: the
// packument at /$name and the tarball at /$name/-/$name-$version.tgz.
func npmRegistry(t *testing.T, dir string) (*registry, []byte) {
	t.Helper()
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal([]byte(readTree(t, dir)["package.json"]), &pkg); err != nil {
		t.Fatal(err)
	}
	tgz := npmTarball(t, dir)
	sha1sum := sha1Hex(tgz)
	tarPath := "/" + pkg.Name + "/-/" + pkg.Name + "-" + pkg.Version + ".tgz"
	mux := http.NewServeMux()
	var r *registry
	mux.HandleFunc("/"+pkg.Name, func(w http.ResponseWriter, _ *http.Request) {
		doc, _ := json.Marshal(map[string]any{
			"name": pkg.Name, "dist-tags": map[string]string{"latest": pkg.Version},
			"versions": map[string]any{pkg.Version: map[string]any{"name": pkg.Name, "version": pkg.Version,
				"dist": map[string]string{"tarball": r.url + tarPath, "shasum": sha1sum, "integrity": npmIntegrity(tgz)}}},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	mux.HandleFunc(tarPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(tgz)
	})
	r = startRegistry(t, mux)
	return r, tgz
}

// wheel builds a pure-Python wheel of the package in dir: its packages, dir/METADATA as the
// dist-info's METADATA, a WHEEL file and the RECORD of them all. It returns the wheel's file name and
// bytes (the same on every run).
func wheel(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	files := readTree(t, dir)
	meta := files["METADATA"]
	delete(files, "METADATA")
	field := func(name string) string {
		for _, l := range strings.Split(meta, "\n") {
			if v, ok := strings.CutPrefix(l, name+": "); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("%s/METADATA has no %s", dir, name)
		return ""
	}
	dist := strings.ReplaceAll(field("Name"), "-", "_") + "-" + field("Version")
	info := dist + ".dist-info/"
	files[info+"METADATA"] = meta
	files[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: akira-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	var record strings.Builder
	for _, name := range sortedNames(files) {
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	files[info+"RECORD"] = record.String()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedNames(files) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: fixedTime})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return dist + "-py3-none-any.whl", buf.Bytes()
}

// packageIndex serves the wheel built from dir over PEP 503's simple repository API: /simple/$name/
// lists it with its sha256, /files/$wheel is the file. Like PyPI, the index page may be cached for 10
// minutes and the file for a year.
func packageIndex(t *testing.T, dir string) (*registry, []byte) {
	t.Helper()
	name, whl := wheel(t, dir)
	project := strings.ToLower(strings.ReplaceAll(strings.SplitN(name, "-", 2)[0], "_", "-"))
	sum := sha256.Sum256(whl)
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/"+project+"/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "max-age=600, public")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<html><body>\n<a href=\"/files/%s#sha256=%s\">%s</a>\n</body></html>\n", name, hex.EncodeToString(sum[:]), name)
	})
	mux.HandleFunc("/files/"+name, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Cache-Control", "max-age=365000000, immutable, public")
		_, _ = w.Write(whl)
	})
	return startRegistry(t, mux), whl
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
