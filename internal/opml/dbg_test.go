package opml

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDbg(t *testing.T) {
	for _, f := range strings.Split(os.Getenv("DBG"), ",") {
		data, _ := os.ReadFile("/work/shared/corpus/" + f)
		res, err := Parse(strings.NewReader(string(data)))
		fmt.Println("==", f, err, res.Title, res.Warnings)
		for _, o := range res.Outlines {
			fmt.Printf("%d %q %q %q %q %q\n", o.Line, o.URL, o.Title, o.HTMLURL, o.Type, o.Labels)
		}
	}
}
