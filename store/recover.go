package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Damaged files. bbolt trusts its file: a truncated one makes it fault on
// a page past the end of its memory map (SIGBUS, which no recover stops),
// a zeroed one is refused as invalid, a page of garbage panics ("invalid
// freelist page"), and an empty one is silently made a new database. So
// Open checks the file itself first (recognizable meta pages, a length
// that holds every page they name), opens bbolt under recover, and reads
// it through once. A file that fails any of that is moved aside as
// deltafin.db.damaged-<time>, what bbolt can still read of it is copied
// into a fresh store, and Recovered says what happened.

// Recovery is what Open did with a damaged file.
type Recovery struct {
	// Reason is what was wrong ("empty file", "truncated: ...").
	Reason string `json:"reason"`
	// MovedTo is where the damaged file now is.
	MovedTo string `json:"moved_to"`
	// Jobs and Conversations count the records salvaged into the new store.
	Jobs          int       `json:"jobs"`
	Conversations int       `json:"conversations"`
	At            time.Time `json:"at"`
}

// String says it in a sentence, for logs and the page.
func (r *Recovery) String() string {
	return fmt.Sprintf("the job store was damaged (%s): it was moved to %s and %d jobs and %d conversations were recovered from it",
		r.Reason, r.MovedTo, r.Jobs, r.Conversations)
}

// ErrDamaged: the store's file cannot be read as a database.
var ErrDamaged = errors.New("store: damaged file")

const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2
	metaOffset  = 16 // the page header before a meta page's body
	metaSumAt   = 56 // the checksum's offset in the meta body
)

// meta is what the recovery needs of a bbolt meta page.
type meta struct {
	pageSize uint32
	highPage uint64 // the first page id past the end of the data
	txid     uint64
}

// readMeta parses the meta page at off; ok is false unless it is whole
// and its checksum matches.
func readMeta(b []byte, off int) (m meta, ok bool) {
	if off < 0 || off+metaOffset+metaSumAt+8 > len(b) {
		return m, false
	}
	body := b[off+metaOffset:]
	le := binary.LittleEndian
	if le.Uint32(body[0:]) != boltMagic || le.Uint32(body[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(body[:metaSumAt])
	if h.Sum64() != le.Uint64(body[metaSumAt:]) {
		return m, false
	}
	return meta{pageSize: le.Uint32(body[8:]), highPage: le.Uint64(body[40:]), txid: le.Uint64(body[48:])}, true
}

// bestMeta is the newer valid meta page of the file's two.
func bestMeta(b []byte) (meta, bool) {
	m0, ok0 := readMeta(b, 0)
	var m1 meta
	ok1 := false
	for _, ps := range []int{int(m0.pageSize), 4096, 16384, 65536} {
		if ps > 0 {
			if m1, ok1 = readMeta(b, ps); ok1 {
				break
			}
		}
	}
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		return m1, true
	}
	return m0, ok0
}

// inspect says what is wrong with the file at path ("" if nothing can be
// seen without opening it, or it does not exist).
func inspect(path string) string {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		return "" // bbolt's own open reports it
	case len(b) == 0:
		return "empty file"
	}
	m, ok := bestMeta(b)
	if !ok {
		return fmt.Sprintf("no valid meta page in its %d bytes (zeroed or not a database)", len(b))
	}
	if need := m.highPage * uint64(m.pageSize); uint64(len(b)) < need {
		return fmt.Sprintf("truncated: %d bytes of the %d its pages need", len(b), need)
	}
	return ""
}

// guarded runs f, turning a panic into an error.
func guarded(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrDamaged, r)
		}
	}()
	return f()
}

// readThrough reads every record of every bucket of db, checks its pages,
// and returns the records by bucket; a bucket that panics partway keeps
// what came before. err is the first problem met.
func readThrough(db *bolt.DB) (out map[string][][2][]byte, err error) {
	out = map[string][][2][]byte{}
	tx, err := db.Begin(false)
	if err != nil {
		return out, err
	}
	defer func() { _ = tx.Rollback() }()
	for _, name := range allBuckets {
		perr := guarded(func() error {
			b := tx.Bucket(name)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if v != nil {
					out[string(name)] = append(out[string(name)], [2][]byte{append([]byte(nil), k...), append([]byte(nil), v...)})
				}
				return nil
			})
		})
		err = errors.Join(err, perr)
	}
	err = errors.Join(err, guarded(func() error {
		var bad error
		for e := range tx.Check() {
			bad = errors.Join(bad, e)
		}
		return bad
	}))
	return out, err
}

// salvage reads what it can of the damaged file at path: a copy padded to
// the length its meta page names (so no page lies past the end of the
// map), opened read-only under recover.
func salvage(path string) map[string][][2][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m, ok := bestMeta(b)
	if !ok {
		return nil // nothing says where the data is
	}
	if need := m.highPage * uint64(m.pageSize); uint64(len(b)) < need && need < 1<<34 {
		b = append(b, make([]byte, int(need)-len(b))...)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".salvage-*")
	if err != nil {
		return nil
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil
	}
	if err := tmp.Close(); err != nil {
		return nil
	}
	var out map[string][][2][]byte
	_ = guarded(func() error {
		db, err := bolt.Open(tmp.Name(), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			return err
		}
		defer db.Close()
		out, _ = readThrough(db)
		return nil
	})
	return out
}

// moveAside renames the damaged file out of the way.
func moveAside(path string, now time.Time) (string, error) {
	to := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	for i := 2; ; i++ {
		if _, err := os.Stat(to); errors.Is(err, os.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s.damaged-%s-%d", path, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("store: move the damaged file aside: %w", err)
	}
	return to, nil
}

// restore writes salvaged records into db and counts jobs and conversations.
func restore(db *bolt.DB, recs map[string][][2][]byte, r *Recovery) error {
	return db.Update(func(tx *bolt.Tx) error {
		for name, kvs := range recs {
			if name == string(bucketMeta) {
				continue // the fresh store wrote its own
			}
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				if err := b.Put(kv[0], kv[1]); err != nil {
					return err
				}
			}
			switch name {
			case string(bucketJobs):
				r.Jobs = len(kvs)
			case string(bucketConversations):
				r.Conversations = len(kvs)
			}
		}
		// A pending entry whose job was lost would stop Pending: drop it.
		jobs, pending := tx.Bucket(bucketJobs), tx.Bucket(bucketPending)
		var orphans [][]byte
		_ = pending.ForEach(func(k, id []byte) error {
			if jobs.Get(id) == nil {
				orphans = append(orphans, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range orphans {
			if err := pending.Delete(k); err != nil {
				return err
			}
		}
		// Keep the sequence past every salvaged job's.
		var last uint64
		_ = jobs.ForEach(func(_, v []byte) error {
			var j Job
			if json.Unmarshal(v, &j) == nil && j.Seq > last {
				last = j.Seq
			}
			return nil
		})
		if last > pending.Sequence() {
			return pending.SetSequence(last)
		}
		return nil
	})
}
