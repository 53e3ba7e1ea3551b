// Package media is feed-media: it queues the enclosures and images of the
// new entries of feeds with media settings (Run, the pipeline stage), and
// downloads them into the store, resumable, within limits (Drain, feed-media
// run).
package media
