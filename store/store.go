package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the store's file in the data directory.
const FileName = "deltafin.db"

// schema is the layout version this code writes (see doc.go).
const schema = "1"

var (
	bucketMeta    = []byte("meta")
	bucketJobs    = []byte("jobs")
	bucketTokens  = []byte("tokens")
	bucketPending = []byte("pending")
	// bucketConversations holds the web page's chats (conversations.go).
	bucketConversations = []byte("conversations")
	// allBuckets is every bucket this version knows.
	allBuckets = [][]byte{bucketMeta, bucketJobs, bucketTokens, bucketPending, bucketConversations}
)

var (
	// ErrNotFound: no job (or conversation) has that id.
	ErrNotFound = errors.New("store: not found")
	// ErrLocked: another process has the store open.
	ErrLocked = errors.New("store: in use by another process")
	// ErrSchema: the file was written by a newer, incompatible version.
	ErrSchema = errors.New("store: unknown schema")
)

// State is where a job is in its life.
type State string

// The states, as the Responses API names them.
const (
	Queued     State = "queued"
	InProgress State = "in_progress"
	Completed  State = "completed"
	Incomplete State = "incomplete" // stopped by its token limit
	Cancelled  State = "cancelled"
	Failed     State = "failed"
)

// Finished reports whether s is a final state.
func (s State) Finished() bool { return s != Queued && s != InProgress }

// Job is one unit of work of the job queue, as stored.
type Job struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // "response"
	// Background jobs run without a client connected.
	Background bool  `json:"background"`
	State      State `json:"state"`
	// Seq orders the jobs by arrival; Create assigns it.
	Seq     uint64    `json:"seq"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Request is what the job runs, in the owner's encoding (the server's
	// validated request with its prompt ids).
	Request json.RawMessage `json:"request"`
	// Result is the finished answer in the owner's encoding; Error says why
	// a job failed.
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Store is an open database. It is safe for concurrent use.
type Store struct {
	db        *bolt.DB
	now       func() time.Time
	recovered *Recovery
}

// Open opens (creating if needed) the store at path; a second process
// gets ErrLocked after a second. A damaged file (empty, zeroed, truncated,
// pages bbolt cannot read) is moved aside, what can be read of it is
// copied into a new store, and Recovered says so (recover.go): Open never
// panics on a file and never starts empty without saying why.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	now := time.Now
	reason := inspect(path)
	var db *bolt.DB
	if reason == "" {
		var err error
		if db, err = openChecked(path); errors.Is(err, ErrLocked) {
			return nil, err
		} else if err != nil {
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, berrors.ErrInvalid) && !errors.Is(err, berrors.ErrChecksum) &&
				!errors.Is(err, berrors.ErrVersionMismatch) {
				return nil, fmt.Errorf("store: open %s: %w", path, err)
			}
			reason = strings.ReplaceAll(err.Error(), "store: ", "") // said to users, who know no packages
		}
	}
	var rec *Recovery
	if reason != "" {
		recs := salvage(path)
		moved, err := moveAside(path, now())
		if err != nil {
			return nil, err
		}
		rec = &Recovery{Reason: reason, MovedTo: moved, At: now().UTC()}
		if db, err = openChecked(path); err != nil {
			return nil, fmt.Errorf("store: open a new %s after moving the damaged one aside: %w", path, err)
		}
		if err := restore(db, recs, rec); err != nil {
			return nil, errors.Join(fmt.Errorf("store: copy what was recovered: %w", err), db.Close())
		}
	}
	return &Store{db: db, now: now, recovered: rec}, nil
}

// openChecked opens path with bbolt under recover, sets up the buckets and
// reads the whole file through once: a page bbolt cannot read is found
// here, as ErrDamaged, not in the middle of serving.
func openChecked(path string) (db *bolt.DB, err error) {
	err = guarded(func() error {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := readThrough(db); err != nil {
		// A panic inside bbolt may leave its state half-changed: the file
		// is closed as well as can be and not used.
		_ = guarded(db.Close)
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get([]byte("schema")); {
		case v == nil:
			return meta.Put([]byte("schema"), []byte(schema))
		case string(v) != schema:
			return fmt.Errorf("%w %q in %s (this version reads %q)", ErrSchema, v, path, schema)
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("store: %w", err), db.Close())
	}
	return db, nil
}

// Recovered says what Open did with a damaged file, nil if it found none.
func (s *Store) Recovered() *Recovery { return s.recovered }

// Close closes the file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Path is the file's path.
func (s *Store) Path() string { return s.db.Path() }

// Create writes a new job, queued unless j.State says otherwise, and
// returns once it is on disk: the caller may then acknowledge it.
func (s *Store) Create(j *Job) error {
	if j.ID == "" {
		return fmt.Errorf("store: a job needs an id")
	}
	if j.State == "" {
		j.State = Queued
	}
	return s.update(func(tx *bolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		if jobs.Get([]byte(j.ID)) != nil {
			return fmt.Errorf("store: job %s exists", j.ID)
		}
		pending := tx.Bucket(bucketPending)
		seq, err := pending.NextSequence()
		if err != nil {
			return err
		}
		j.Seq = seq
		j.Created = s.now().UTC()
		j.Updated = j.Created
		if !j.State.Finished() {
			if err := pending.Put(seqKey(seq), []byte(j.ID)); err != nil {
				return err
			}
		}
		return putJob(jobs, j)
	})
}

// Get returns a job and the tokens it has generated so far.
func (s *Store) Get(id string) (*Job, []int, error) {
	var j *Job
	var toks []int
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if j, err = getJob(tx.Bucket(bucketJobs), id); err != nil {
			return err
		}
		toks = decodeTokens(tx.Bucket(bucketTokens).Get([]byte(id)))
		return nil
	})
	return j, toks, err
}

// Start marks a job in progress.
func (s *Store) Start(id string) error {
	return s.edit(id, func(_ *bolt.Tx, j *Job) error {
		j.State = InProgress
		return nil
	})
}

// AppendTokens adds generated tokens to a job's.
func (s *Store) AppendTokens(id string, toks []int) error {
	if len(toks) == 0 {
		return nil
	}
	return s.edit(id, func(tx *bolt.Tx, _ *Job) error { return appendTokens(tx, id, toks) })
}

func appendTokens(tx *bolt.Tx, id string, toks []int) error {
	b := tx.Bucket(bucketTokens)
	old := b.Get([]byte(id))
	buf := make([]byte, len(old), len(old)+4*len(toks))
	copy(buf, old)
	for _, t := range toks {
		if t < 0 || t > 1<<31 {
			return fmt.Errorf("store: token id %d out of range", t)
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
	}
	return b.Put([]byte(id), buf)
}

// Finish records a job's final state and result (and any last tokens) and
// takes it off the pending list, in one transaction.
func (s *Store) Finish(id string, st State, toks []int, result json.RawMessage, errMsg string) error {
	if !st.Finished() {
		return fmt.Errorf("store: %q is not a final state", st)
	}
	return s.edit(id, func(tx *bolt.Tx, j *Job) error {
		if err := appendTokens(tx, id, toks); err != nil {
			return err
		}
		j.State, j.Result, j.Error = st, result, errMsg
		return tx.Bucket(bucketPending).Delete(seqKey(j.Seq))
	})
}

// Delete removes a job, its tokens and its place in line.
func (s *Store) Delete(id string) error {
	return s.update(func(tx *bolt.Tx) error {
		j, err := getJob(tx.Bucket(bucketJobs), id)
		if err != nil {
			return err
		}
		return deleteJob(tx, j)
	})
}

// Pending returns the queued and running jobs in arrival order: what a
// restarted server resumes.
func (s *Store) Pending() ([]*Job, error) {
	var out []*Job
	err := s.db.View(func(tx *bolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		return tx.Bucket(bucketPending).ForEach(func(_, id []byte) error {
			j, err := getJob(jobs, string(id))
			if err != nil {
				return err
			}
			out = append(out, j)
			return nil
		})
	})
	return out, err
}

// Expire deletes the finished jobs last updated before cutoff and returns
// how many went.
func (s *Store) Expire(cutoff time.Time) (int, error) {
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		var old []*Job
		err := tx.Bucket(bucketJobs).ForEach(func(_, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
			if j.State.Finished() && j.Updated.Before(cutoff) {
				old = append(old, &j)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, j := range old {
			if err := deleteJob(tx, j); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}

// Check verifies the file's pages and that every pending entry names a
// job (a test and `deltafin doctor` aid).
func (s *Store) Check() error {
	return s.db.View(func(tx *bolt.Tx) error {
		var bad error
		for err := range tx.Check() { // drain: the checker runs until done
			bad = errors.Join(bad, err)
		}
		if bad != nil {
			return fmt.Errorf("store: corrupt: %w", bad)
		}
		jobs := tx.Bucket(bucketJobs)
		return tx.Bucket(bucketPending).ForEach(func(k, id []byte) error {
			if jobs.Get(id) == nil {
				return fmt.Errorf("store: pending entry %x names no job %q", k, id)
			}
			return nil
		})
	})
}

func (s *Store) update(f func(*bolt.Tx) error) error {
	if err := s.db.Update(f); err != nil {
		if errors.Is(err, ErrNotFound) {
			return err
		}
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// edit loads job id, applies f and writes it back, in one transaction.
func (s *Store) edit(id string, f func(*bolt.Tx, *Job) error) error {
	return s.update(func(tx *bolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		j, err := getJob(jobs, id)
		if err != nil {
			return err
		}
		if err := f(tx, j); err != nil {
			return err
		}
		j.Updated = s.now().UTC()
		return putJob(jobs, j)
	})
}

func deleteJob(tx *bolt.Tx, j *Job) error {
	if err := tx.Bucket(bucketPending).Delete(seqKey(j.Seq)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketTokens).Delete([]byte(j.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketJobs).Delete([]byte(j.ID))
}

func getJob(b *bolt.Bucket, id string) (*Job, error) { return getJSON[Job](b, "job", id) }

// getJSON reads the value under id as JSON; kind names it in errors.
func getJSON[T any](b *bolt.Bucket, kind, id string) (*T, error) {
	v := b.Get([]byte(id))
	if v == nil {
		return nil, fmt.Errorf("%w: %s %q", ErrNotFound, kind, id)
	}
	var x T
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, fmt.Errorf("store: %s %q: %w", kind, id, err)
	}
	return &x, nil
}

func putJob(b *bolt.Bucket, j *Job) error {
	v, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return b.Put([]byte(j.ID), v)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func decodeTokens(b []byte) []int {
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
