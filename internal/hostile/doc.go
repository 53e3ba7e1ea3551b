// Package hostile holds the tests that feed every stage hostile records and
// a store with planted links, and check that nothing outside the store is
// ever read or written; it has no code of its own.
package hostile
