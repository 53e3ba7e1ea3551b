// Package serve is feed-serve: the store over HTTP. A JSON API of the
// subscriptions, entries, fetches, payloads and events (errors as RFC 9457
// problem details); meta-feeds of any feed, label or the whole store in
// Atom, RSS and JSON Feed, served and published as files; Prometheus
// metrics. It reads the catalog and the taps, and changes subscriptions
// only through the functions feed-sub uses (internal/sub).
package serve
