package scrape

import (
	"testing"

	"github.com/feedpipe/feedpipe/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
