// Package plural words a count for people: "1 feed", "3 feeds".
package plural

import "strconv"

// Word is one when n is 1, else many.
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and its word: "1 feed", "0 feeds", "3 feeds".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Word(n, one, many)
}
