package ndjson

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestDocDocumentsEveryField keeps doc.go true: every JSON field of every
// record type must appear in it.
func TestDocDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z_0-9]+`).FindAllString(string(doc), -1) {
		words[w] = true
	}
	var check func(typ reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(Time{}) {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous {
				check(f.Type, path)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			if !words[name] {
				t.Errorf("doc.go does not document %s.%s", path, name)
			}
			check(f.Type, path+"."+name)
		}
	}
	for _, rec := range []any{Subscription{}, Due{}, Fetch{}, Entry{}, Event{}, Decision{}, FeedEvent{}, Media{}, BusAck{}} {
		typ := reflect.TypeOf(rec)
		check(typ, typ.Name())
	}
	for _, heading := range []string{TypeSubscription, TypeDue, TypeFetch, TypeEntry, TypeNewEntry + " and " + TypeUpdatedEntry, TypeDecision, TypeFeedDisabled + " and " + TypeFeedReenabled, TypeMedia, "bus and " + TypeBusAck} {
		if !regexp.MustCompile(`(?m)^// # ` + heading + `\b`).Match(doc) {
			t.Errorf("doc.go has no section headed %q", heading)
		}
	}
}
