package catalog

import (
	"database/sql"
	"fmt"
	"testing"
)

// TestWhere: conditions join with AND, and a parameter two conditions
// name is bound once, with the value the first gave.
func TestWhere(t *testing.T) {
	var w where
	w.and("a = :x", sql.Named("x", 1))
	w.and("(b > :y OR c = :x)", sql.Named("y", 2), sql.Named("x", 3))
	if got := w.sql(); got != "a = :x AND (b > :y OR c = :x)" {
		t.Errorf("sql %q", got)
	}
	if got := fmt.Sprint(w.args); got != "[{{} x 1} {{} y 2}]" {
		t.Errorf("args %s", got)
	}
	var l jsonInts
	if l.String() != "[]" {
		t.Errorf("empty list %s", l.String())
	}
	for _, n := range []int64{3, -1, 1 << 40} {
		l.add(n)
	}
	if l.String() != "[3,-1,1099511627776]" {
		t.Errorf("list %s", l.String())
	}
}
