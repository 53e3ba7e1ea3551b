package main

import (
	"os"
	"testing"
)

// TestMain keeps the user's configuration file out of the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "feed-parse-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Unsetenv("FEEDPIPE_CONFIG")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
