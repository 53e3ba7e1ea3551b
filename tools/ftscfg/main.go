// ftscfg: experiment only.
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	db, err := sql.Open("sqlite", "file:"+os.Args[1])
	if err != nil {
		panic(err)
	}
	for _, q := range os.Args[2:] {
		if _, err := db.Exec(q); err != nil {
			fmt.Fprintln(os.Stderr, q, err)
			os.Exit(1)
		}
	}
	db.Close()
}
