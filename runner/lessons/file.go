package lessons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// FileStore keeps a repository's lessons in a JSON file: `akira run`'s memory, one file per
// repository under the user's configuration directory.
type FileStore struct {
	Path string
	mu   sync.Mutex
}

func (s *FileStore) load() ([]Lesson, error) {
	data, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	var ls []Lesson
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, fmt.Errorf("lessons: %s: %w", s.Path, err)
	}
	return ls, nil
}

func (s *FileStore) save(ls []Lesson) error {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("lessons: %w", err)
	}
	data, err := json.MarshalIndent(ls, "", "  ")
	if err != nil {
		return fmt.Errorf("lessons: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".lessons-*")
	if err != nil {
		return fmt.Errorf("lessons: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("lessons: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("lessons: %w", err)
	}
	return os.Rename(tmp.Name(), s.Path)
}

// List returns the lessons, oldest first.
func (s *FileStore) List(context.Context) ([]Lesson, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

// Add keeps l (the oldest go beyond MaxLessons) and returns it with its id.
func (s *FileStore) Add(_ context.Context, l Lesson) (Lesson, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls, err := s.load()
	if err != nil {
		return Lesson{}, err
	}
	l = Normalize(l, time.Now())
	// A lesson with the id of one kept already replaces it, as in the App's store.
	ls = append(slices.DeleteFunc(ls, func(o Lesson) bool { return o.ID == l.ID }), l)
	if len(ls) > MaxLessons {
		ls = ls[len(ls)-MaxLessons:]
	}
	return l, s.save(ls)
}

// Forget removes the lesson id, reporting whether there was one.
func (s *FileStore) Forget(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls, err := s.load()
	if err != nil {
		return false, err
	}
	n := len(ls)
	ls = slices.DeleteFunc(ls, func(l Lesson) bool { return l.ID == id })
	if len(ls) == n {
		return false, nil
	}
	return true, s.save(ls)
}

// FileFor is the file of a repository's lessons under dir: named by the repository's last path
// element and a hash of the whole address, so two repositories never share one.
func FileFor(dir, repo string) string {
	sum := sha256.Sum256([]byte(repo))
	name := filepath.Base(strings.TrimSuffix(strings.TrimRight(repo, "/"), ".git"))
	name = strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, name)
	return filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".json")
}
