package opml

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestExplore(t *testing.T) {
	root := "/work/shared/corpus"
	f, _ := os.Open(filepath.Join(root, "opml/INDEX.ndjson"))
	sc := bufio.NewScanner(f)
	re := regexp.MustCompile(`(?i)xmlurl\s*=\s*"([^"]*)"`)
	for sc.Scan() {
		var e struct {
			File     string `json:"file"`
			OK       bool   `json:"xml_ok"`
			Distinct int    `json:"distinct_xmlUrl"`
			Regex    int    `json:"xmlUrl_attrs_regex"`
		}
		json.Unmarshal(sc.Bytes(), &e)
		data, _ := os.ReadFile(filepath.Join(root, e.File))
		rd := map[string]bool{}
		for _, m := range re.FindAllSubmatch(data, -1) {
			if s := strings.TrimSpace(string(m[1])); s != "" {
				rd[s] = true
			}
		}
		res, err := Parse(strings.NewReader(string(data)))
		d := map[string]bool{}
		for _, o := range res.Outlines {
			d[o.URL] = true
		}
		flag := ""
		if e.OK && len(d) != e.Distinct || !e.OK && len(d) < len(rd) || e.OK && len(res.Warnings) > 0 || !e.OK && err == nil && len(res.Warnings) == 0 {
			flag = "  <<<<<"
		}
		fmt.Printf("%-75s ok=%v idx=%d re=%d rd=%d got=%d/%d warn=%d err=%v%s\n", e.File, e.OK, e.Distinct, e.Regex, len(rd), len(d), len(res.Outlines), len(res.Warnings), err, flag)
		if flag != "" {
			for _, w := range res.Warnings {
				fmt.Println("     ", w)
			}
		}
	}
}
