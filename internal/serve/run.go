package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Run serves until ctx is done, then shuts down, giving requests in
// flight a few seconds to finish.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := s.HTTPServer()
	addr := ln.Addr().String()
	shown := addr
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && host != "" {
		_, port, _ := net.SplitHostPort(addr)
		shown = net.JoinHostPort(host, port) // as given (0.0.0.0), not as Go listens for it ([::])
	}
	fmt.Fprintf(cfg.Msg, "feed-serve: listening on http://%s\n", shown)
	cfg.Log.Info("listening", "addr", shown)
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.Close() // ends the event streams, which Shutdown does not wait for
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// HTTPServer is an http.Server of the handler with the timeouts a server
// open to slow or hostile clients needs. The event stream lifts the write
// timeout for itself.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn),
	}
}
