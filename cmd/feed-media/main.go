// Command feed-media is internal/apps.FeedMedia: see feed-media --help. The
// feedpipe binary is every command in one, installed under each name.
package main

import (
	"github.com/feedpipe/feedpipe/internal/apps"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

func main() { cmdkit.Main(apps.FeedMedia()) }
