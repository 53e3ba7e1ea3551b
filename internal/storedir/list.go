package storedir

import "fmt"

// List returns the names in the directory at key (a directory of the
// store, such as "spool"), sorted; none for a directory that does not
// exist.
func (s *Store) List(key string) ([]string, error) { return s.list(key) }

// Rename renames the file at key to newKey, in the store.
func (s *Store) Rename(key, newKey string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkKey(newKey); err != nil {
		return err
	}
	if err := s.root.Rename(key, newKey); err != nil {
		return fmt.Errorf("store: rename %s: %w", key, unwrapPathError(err))
	}
	return nil
}
