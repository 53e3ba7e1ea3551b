package apps

import (
	"testing"

	"github.com/feedpipe/feedpipe/internal/testenv"
)

// TestMain keeps the user's configuration file out of the tests.
func TestMain(m *testing.M) { testenv.Main(m) }
