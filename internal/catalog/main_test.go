package catalog

import (
	"os"
	"testing"
)

// TestMain: every catalog the tests make from nothing is a copy of one
// migrated once (CopyFreshCatalogs), as in the other packages' tests
// (testenv.Main, which this package cannot import).
func TestMain(m *testing.M) {
	CopyFreshCatalogs()
	os.Exit(m.Run())
}
