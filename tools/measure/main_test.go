package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMain makes the test binary a helper when run by the tests below: it
// allocates and touches 64 MiB, then exits 3.
func TestMain(m *testing.M) {
	if os.Getenv("MEASURE_TEST_ALLOC") == "1" {
		b := make([]byte, 64<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		runtime.KeepAlive(b)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// measure runs run on argv and returns its status and the fields of the
// line it appended.
func measure(t *testing.T, stdin string, argv ...string) (int, []string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "m.tsv")
	var stdout, stderr bytes.Buffer
	status := run(append([]string{"-o", file, "--"}, argv...), strings.NewReader(stdin), &stdout, &stderr)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q (stderr %s)", len(lines), b, stderr.String())
	}
	fields := strings.Split(lines[0], "\t")
	if len(fields) != 6 {
		t.Fatalf("line %q has %d fields, want 6", lines[0], len(fields))
	}
	return status, fields, stdout.String()
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTrue(t *testing.T) {
	status, f, _ := measure(t, "", "/bin/true")
	if status != 0 || f[0] != "/bin/true" || num(t, f[1]) <= 0 || f[5] != "0" {
		t.Errorf("status %d, line %q", status, f)
	}
}

func TestAllocatingChild(t *testing.T) {
	t.Setenv("MEASURE_TEST_ALLOC", "1")
	status, f, _ := measure(t, "", os.Args[0], "-test.run=^$")
	if status != 3 || f[5] != "3" {
		t.Errorf("status %d, line %q; want 3", status, f)
	}
	if rss := num(t, f[1]); rss < 50*1024 {
		t.Errorf("max_rss_kb %v, want at least 50 MB", rss)
	}
	if num(t, f[2])+num(t, f[3]) <= 0 || num(t, f[4]) <= 0 {
		t.Errorf("no time recorded: %q", f)
	}
}

func TestStdioAndSignal(t *testing.T) {
	status, f, out := measure(t, "hello\n", "cat")
	if status != 0 || out != "hello\n" || f[0] != "cat" {
		t.Errorf("cat: status %d, stdout %q, line %q", status, out, f)
	}
	status, f, _ = measure(t, "", "/bin/sh", "-c", "kill -9 $$")
	if status != 137 || f[5] != "137" || f[0] != "/bin/sh -c kill -9 $$" {
		t.Errorf("killed: status %d, line %q; want 137", status, f)
	}
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	if s := run([]string{"--", "/bin/true"}, nil, nil, &stderr); s != 2 || !strings.Contains(stderr.String(), "usage") {
		t.Errorf("no -o: status %d, stderr %q", s, stderr.String())
	}
	file := filepath.Join(t.TempDir(), "m.tsv")
	if s := run([]string{"-o", file, "--", "/no/such/command"}, nil, nil, &stderr); s != 127 {
		t.Errorf("missing command: status %d, want 127", s)
	}
}
