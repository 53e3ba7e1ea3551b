package cmdkit

import (
	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/version"
)

func init() {
	// --version alone: -v is left free, and the text says what it does.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}
}

// Version is the binary's version, as --version prints it, feed-serve's
// /healthz reports it and the User-Agent carries its number
// (internal/version).
func Version() string { return version.String() }
