package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmtCache keeps the prepared statements of the queries run most often.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (s *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if s.m == nil {
		s.m = map[string]*sql.Stmt{}
	}
	s.m[query] = st
	return st, nil
}

func (s *stmtCache) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		st.Close()
	}
	s.m = nil
}

// query runs a cached statement: for the queries of fixed text a server
// runs for most of its requests, which preparing each time cost as much
// as running some of them.
func (c *Catalog) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmts.get(ctx, c.db, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a cached statement that returns one row.
func (c *Catalog) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := c.stmts.get(ctx, c.db, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}
