package verify

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func fail(path string, line, col int, msg string) Annotation {
	return Annotation{Path: path, StartLine: line, EndLine: line, Column: col, Level: "failure", Message: msg}
}

func TestParseAnnotations(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   []Annotation
	}{
		{
			name: "go compiler and vet",
			output: "# example.com/m/pkg\n" +
				"pkg/x.go:3:2: undefined: y\n" +
				"./pkg/z.go:10:1: warning: unreachable code\n",
			want: []Annotation{
				fail("pkg/x.go", 3, 2, "undefined: y"),
				{Path: "pkg/z.go", StartLine: 10, EndLine: 10, Column: 1, Level: "warning", Message: "unreachable code"},
			},
		},
		{
			name: "go test failure without module knowledge keeps the file name",
			output: "--- FAIL: TestAdd (0.00s)\n" +
				"    add_test.go:12: want 1, got 2\n" +
				"FAIL\n" +
				"FAIL\texample.com/m/calc\t0.003s\n",
			want: []Annotation{fail("add_test.go", 12, 0, "want 1, got 2")},
		},
		{
			name:   "typescript tsc",
			output: "src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.\n",
			want:   []Annotation{fail("src/a.ts", 3, 5, "TS2322: Type 'string' is not assignable to type 'number'.")},
		},
		{
			name:   "typescript pretty with colors",
			output: "\x1b[96msrc/b.ts\x1b[0m:\x1b[93m7\x1b[0m:\x1b[93m1\x1b[0m - \x1b[91merror\x1b[0m\x1b[90m TS2304: \x1b[0mCannot find name 'x'.\n",
			want:   []Annotation{fail("src/b.ts", 7, 1, "TS2304: Cannot find name 'x'.")},
		},
		{
			name: "python traceback: last frame in the repository",
			output: "Traceback (most recent call last):\n" +
				"  File \"app/main.py\", line 9, in <module>\n" +
				"    run()\n" +
				"  File \"app/lib.py\", line 3, in run\n" +
				"    raise ValueError(\"boom\")\n" +
				"  File \"/usr/lib/python3.12/json/__init__.py\", line 346, in loads\n" +
				"    return _default_decoder.decode(s)\n" +
				"ValueError: boom\n",
			want: []Annotation{fail("app/lib.py", 3, 0, "ValueError: boom")},
		},
		{
			name:   "pytest short form",
			output: "tests/test_calc.py:7: AssertionError\n",
			want:   []Annotation{fail("tests/test_calc.py", 7, 0, "AssertionError")},
		},
		{
			name: "rust",
			output: "error[E0308]: mismatched types\n" +
				" --> src/main.rs:2:5\n" +
				"  |\n" +
				"2 |     \"x\"\n" +
				"warning: unused variable: `y`\n" +
				"  --> src/lib.rs:4:9\n" +
				"error: could not compile `demo` (bin \"demo\") due to 1 previous error\n",
			want: []Annotation{
				fail("src/main.rs", 2, 5, "error[E0308]: mismatched types"),
				{Path: "src/lib.rs", StartLine: 4, EndLine: 4, Column: 9, Level: "warning", Message: "warning: unused variable: `y`"},
			},
		},
		{
			name: "absolute paths, parents, urls and times are not files of the repository",
			output: "/usr/local/go/src/testing/testing.go:1934: panic\n" +
				"../outside/x.go:1:1: nope\n" +
				"see https://example.com:443: down\n" +
				"12:30:45: started\n" +
				"2024-01-02 10:11:12.123: log line\n",
			want: nil,
		},
		{
			name:   "duplicates collapse",
			output: "a.go:1:1: x\na.go:1:1: x\n",
			want:   []Annotation{fail("a.go", 1, 1, "x")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseAnnotations(tt.output)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseAnnotationsInWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	output := "--- FAIL: TestAdd (0.00s)\n" +
		"    add_test.go:12: want 1, got 2\n" +
		"FAIL\n" +
		"FAIL\texample.com/m/calc\t0.003s\n" +
		"--- FAIL: TestRoot (0.00s)\n" +
		"    root_test.go:5: broken\n" +
		"FAIL\texample.com/m\t0.001s\n" +
		filepath.Join(dir, "cmd", "main.go") + ":4:2: undefined: z\n" +
		"  File \"" + filepath.Join(dir, "tool.py") + "\", line 2, in <module>\n"
	want := []Annotation{
		fail("calc/add_test.go", 12, 0, "want 1, got 2"),
		fail("root_test.go", 5, 0, "broken"),
		fail("cmd/main.go", 4, 2, "undefined: z"),
	}
	if got := ParseAnnotationsIn(dir, output); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}
