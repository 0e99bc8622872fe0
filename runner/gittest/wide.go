package gittest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// WideSize is the size of the wide repository of `make bench` (see Wide): 100,000 files of 10 KiB,
// about 1 GiB of tree; BENCH_QUICK=1 makes it 2,000 files, BENCH_SCALE=0.1 a tenth.
func WideSize() (files, size int) {
	files, size = 100_000, 10<<10
	if os.Getenv("BENCH_QUICK") != "" {
		files = 2_000
	}
	if s, err := strconv.ParseFloat(os.Getenv("BENCH_SCALE"), 64); err == nil && s > 0 && s < 1 {
		files = max(1_000, int(float64(files)*s))
	}
	return files, size
}

// words are what Wide's files are written with: source-like text, which compresses as source does
// (about 3:1), not random bytes that would make the pack as big as the tree.
var words = strings.Fields(`func return if else for range var const type struct interface map string int error nil
	true false package import defer go select case switch default break continue len append make new ctx err
	value key name path file data buf out in opts config client server request response handler test want got`)

// Wide is a bare repository, of the test's own, whose main branch holds files files of about size
// bytes each under src/dNNN/ (a thousand to a directory) in one commit, then, when extra is not
// empty, one commit adding extra (path -> content). The big commit takes a minute or more to write at
// 100,000 files and 10 KiB each, so it is made once and kept in the user's cache directory
// (akira/bench; AKIRA_BENCH_CACHE names another); each call gets a repository whose objects
// borrow the kept one's (git alternates) and whose own new objects stay its own. It calls Isolate.
func Wide(tb testing.TB, files, size int, extra map[string]string) string {
	tb.Helper()
	Isolate(tb)
	base := wideBase(tb, files, size)
	remote := filepath.Join(tb.TempDir(), "wide.git")
	Git(tb, filepath.Dir(remote), "init", "--quiet", "--bare", "--initial-branch=main", remote)
	if err := os.WriteFile(filepath.Join(remote, "objects", "info", "alternates"), []byte(filepath.Join(base, "objects")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	head := Git(tb, base, "rev-parse", "refs/heads/main")
	Git(tb, remote, "update-ref", "refs/heads/main", head)
	if len(extra) > 0 {
		AppendCommit(tb, remote, "extra", extra)
	}
	return remote
}

// AppendCommit adds one commit to the main branch of the bare repository remote, writing files
// (path -> content), with git fast-import (no work tree needed, whatever the tree's size).
func AppendCommit(tb testing.TB, remote, message string, files map[string]string) {
	tb.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var in strings.Builder
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter Gen <gen@example.com> 1577836900 +0000\ndata %d\n%s\n", len(message), message)
	// Without from, fast-import would start main afresh instead of continuing it.
	in.WriteString("from refs/heads/main^0\n")
	for _, name := range names {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", name, len(files[name]), files[name])
	}
	fastImport(tb, remote, strings.NewReader(in.String()))
}

// wideBase is the kept repository of Wide, made when missing.
func wideBase(tb testing.TB, files, size int) string {
	tb.Helper()
	root := os.Getenv("AKIRA_BENCH_CACHE")
	if root == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			tb.Fatalf("no cache directory for the generated repository (set AKIRA_BENCH_CACHE): %v", err)
		}
		root = filepath.Join(dir, "akira", "bench")
	}
	dir := filepath.Join(root, fmt.Sprintf("wide-%d-%d.git", files, size))
	if _, err := os.Stat(filepath.Join(dir, "akira-complete")); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	// Written aside and renamed into place when whole: a run stopped half-way leaves no half repository.
	tmp, err := os.MkdirTemp(root, ".wide-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	Git(tb, tmp, "init", "--quiet", "--bare", "--initial-branch=main", ".")
	cmd, stdin := startFastImport(tb, tmp)
	w := bufio.NewWriterSize(stdin, 1<<20)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Gen <gen@example.com> 1577836800 +0000\ndata 4\nwide\n")
	rng := rand.New(rand.NewPCG(uint64(files), uint64(size)))
	var blob []byte
	for f := range files {
		blob = blob[:0]
		blob = fmt.Appendf(blob, "// file %d\n", f)
		for len(blob) < size {
			for range 12 {
				blob = append(blob, words[rng.IntN(len(words))]...)
				blob = append(blob, ' ')
			}
			blob = fmt.Appendf(blob, "%d\n", rng.Uint32())
		}
		fmt.Fprintf(w, "M 100644 inline src/d%03d/f%06d.go\ndata %d\n", f/1000, f, len(blob))
		w.Write(blob)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("git fast-import: %v", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "akira-complete"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func startFastImport(tb testing.TB, dir string) (*exec.Cmd, io.WriteCloser) {
	tb.Helper()
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return cmd, stdin
}

func fastImport(tb testing.TB, dir string, in *strings.Reader) {
	tb.Helper()
	cmd, stdin := startFastImport(tb, dir)
	if _, err := in.WriteTo(stdin); err != nil {
		tb.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("git fast-import: %v", err)
	}
}
