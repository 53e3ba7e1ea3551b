// Command feed-bus is internal/apps.FeedBus: see feed-bus --help. The
// feedpipe binary is every command in one, installed under each name.
package main

import (
	"github.com/feedpipe/feedpipe/internal/apps"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

func main() { cmdkit.Main(apps.FeedBus()) }
