package transfer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A Verifier remembers the tokens it accepted until they expire, so that none is used twice. In
// memory alone, a restart of the source node's agent would forget them: the journal keeps them in a
// file on the node (one "<id> <expiry, Unix seconds>" line each, synced before the token is
// accepted), read back when the agent starts.

// WithJournal makes v remember accepted tokens in the file path too, reading those of an earlier run
// that are not expired (and rewriting the file with them alone). A token is accepted only once its
// line is on disk.
func (v *Verifier) WithJournal(path string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if err := v.readJournal(path, now); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("transfer token journal: %w", err)
	}
	for id, exp := range v.used {
		if _, err := fmt.Fprintf(f, "%s %d\n", id, exp.Unix()); err != nil {
			return errors.Join(fmt.Errorf("transfer token journal: %w", err), f.Close())
		}
	}
	if err := errors.Join(f.Sync(), f.Close(), os.Rename(tmp, path)); err != nil {
		return fmt.Errorf("transfer token journal: %w", err)
	}
	if v.journal, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return fmt.Errorf("transfer token journal: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// readJournal adds the unexpired tokens of the journal at path to v.used; a missing file has none.
func (v *Verifier) readJournal(path string, now time.Time) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("transfer token journal: %w", err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		id, exp, ok := strings.Cut(s.Text(), " ")
		sec, err := strconv.ParseInt(exp, 10, 64)
		if !ok || err != nil || id == "" {
			continue // a line cut short by a crash: its token was never accepted
		}
		if t := time.Unix(sec, 0); now.Before(t) {
			v.used[id] = t
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("transfer token journal %s: %w", path, err)
	}
	return nil
}

// record appends the accepted token to the journal, if any, and syncs it. v.mu is held.
func (v *Verifier) record(id string, exp time.Time) error {
	if v.journal == nil {
		return nil
	}
	if _, err := fmt.Fprintf(v.journal, "%s %d\n", id, exp.Unix()); err != nil {
		return fmt.Errorf("record the used transfer token: %w", err)
	}
	if err := v.journal.Sync(); err != nil {
		return fmt.Errorf("record the used transfer token: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("transfer token journal: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}
