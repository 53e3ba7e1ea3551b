// Command feedpipe is every feedpipe command in one binary: installed
// under each command's name (a link), it runs the command of that name;
// feedpipe COMMAND ARGS... runs one too. See internal/apps.
package main

import (
	"os"

	"github.com/feedpipe/feedpipe/internal/apps"
)

func main() { os.Exit(apps.Run()) }
