// Package statestore keeps the keyed stage's checkpoints in a compacted
// Kafka topic, one topic partition per keyed partition.
//
// A checkpoint (a worker snapshot) is written as chunks keyed
// "<deployment>/p<partition>/g<generation>/c<index>", then a manifest keyed
// "<deployment>/p<partition>/manifest" naming the deployment, the
// generation, the chunk count, the size and the SHA-256 of the whole.
// Keys are prefixed with the deployment (its kafka.group) so that two
// deployments sharing a state topic never read each other's checkpoints:
// Load skips and counts keys of another deployment. Only after the manifest is durable are the
// previous generation's chunks deleted (tombstones), so a crash at any
// point leaves the last complete checkpoint readable, and compaction keeps
// the topic at about one checkpoint per partition.
package statestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultChunkBytes is the largest chunk written, below Kafka's default
// 1 MiB message limit.
const DefaultChunkBytes = 512 << 10

// ErrCorrupt is returned when the newest manifest's chunks are missing or
// do not match its checksum.
var ErrCorrupt = errors.New("statestore: checkpoint corrupt")

// Store is a StateStore on a compacted topic.
type Store struct {
	topic   string
	cl      *kgo.Client
	seeds   []string
	opts    []kgo.Opt
	chunk   int
	mu      sync.Mutex
	gen     map[int32]manifest // newest generation written or read, per partition
	timeout time.Duration

	dep    string // "" writes and reads the unprefixed keys of earlier versions
	legacy bool   // read unprefixed keys when the deployment has none of its own
	// ns, when set, keeps this store's checkpoints under "<dep>/<ns>/"
	// (Namespace): another stage's, beside the keyed partitions' ones.
	ns      string
	log     *slog.Logger
	foreign atomic.Int64
}

type manifest struct {
	Deployment string `json:"deployment,omitempty"`
	Generation int64  `json:"generation"`
	Chunks     int    `json:"chunks"`
	Bytes      int    `json:"bytes"`
	SHA256     string `json:"sha256"`
}

// New returns a store writing with cl (idempotent producer; records are
// partitioned by hand, so cl must use kgo.ManualPartitioner) and reading
// with short-lived clients made from seeds and opts (TLS, SASL).
func New(cl *kgo.Client, topic string, seeds []string, opts ...kgo.Opt) *Store {
	return &Store{topic: topic, cl: cl, seeds: seeds, opts: opts, chunk: DefaultChunkBytes, gen: map[int32]manifest{}, timeout: time.Minute,
		log: slog.New(slog.DiscardHandler)}
}

// SetDeployment makes the store write and read the checkpoints of
// deployment dep only (keys "<dep>/p<N>/..."). With legacy, a partition
// that has no checkpoint of dep restores the unprefixed one of a fusebox
// from before deployment ids, once: its next checkpoint is written under
// dep. Keys of other deployments are skipped, counted (Foreign) and
// logged to log. Call it before the first Save or Load.
func (s *Store) SetDeployment(dep string, legacy bool, log *slog.Logger) {
	s.dep, s.legacy = dep, legacy
	if log != nil {
		s.log = log
	}
}

// Sizes returns, per partition, the size in bytes of the newest checkpoint
// this store wrote or read (the snapshot, before chunking); partitions it
// never saw are absent. Safe to call at any time.
func (s *Store) Sizes() map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int, len(s.gen))
	for p, m := range s.gen {
		out[p] = m.Bytes
	}
	return out
}

// Foreign is how many checkpoint records of other deployments Load skipped.
func (s *Store) Foreign() int64 { return s.foreign.Load() }

func (s *Store) prefix() string {
	if s.dep == "" {
		if s.ns != "" {
			return s.ns + "/"
		}
		return ""
	}
	if s.ns != "" {
		return s.dep + "/" + s.ns + "/"
	}
	return s.dep + "/"
}

// Namespace returns a store on the same topic and client whose
// checkpoints are keyed "<dep>/<ns>/p<N>/..." (call it after
// SetDeployment): the incident stage's, one per partition of its own
// topic, written to partition N of the state topic beside the keyed
// partition's (the keys differ; neither store counts the other's as
// foreign). ns must not start with "p" followed by a digit.
func (s *Store) Namespace(ns string) *Store {
	return &Store{topic: s.topic, cl: s.cl, seeds: s.seeds, opts: s.opts, chunk: s.chunk, gen: map[int32]manifest{}, timeout: s.timeout,
		dep: s.dep, log: s.log, ns: ns}
}

func (s *Store) manifestKey(p int32) string { return s.prefix() + legacyManifestKey(p) }

func (s *Store) chunkKey(p int32, gen int64, i int) string {
	return s.prefix() + legacyChunkKey(p, gen, i)
}

func legacyManifestKey(p int32) string { return "p" + strconv.Itoa(int(p)) + "/manifest" }

func legacyChunkKey(p int32, gen int64, i int) string {
	return "p" + strconv.Itoa(int(p)) + "/g" + strconv.FormatInt(gen, 10) + "/c" + strconv.Itoa(i)
}

// legacyKey matches the unprefixed keys of earlier versions.
var legacyKey = regexp.MustCompile(`^p[0-9]+/(manifest|g[0-9]+/c[0-9]+)$`)

// Save writes snap as partition p's newest checkpoint and returns once the
// manifest is durable.
func (s *Store) Save(ctx context.Context, p int32, snap []byte) error {
	s.mu.Lock()
	prev, hadPrev := s.gen[p]
	s.mu.Unlock()
	sum := sha256.Sum256(snap)
	m := manifest{Deployment: s.dep, Generation: prev.Generation + 1, Bytes: len(snap), SHA256: hex.EncodeToString(sum[:])}
	var recs []*kgo.Record
	for off := 0; off < len(snap) || m.Chunks == 0; off += s.chunk {
		end := min(off+s.chunk, len(snap))
		recs = append(recs, &kgo.Record{Topic: s.topic, Partition: p, Key: []byte(s.chunkKey(p, m.Generation, m.Chunks)), Value: nonNil(snap[off:end])})
		m.Chunks++
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("statestore: write chunks of partition %d: %w", p, err)
	}
	mv, _ := json.Marshal(m)
	if err := s.cl.ProduceSync(ctx, &kgo.Record{Topic: s.topic, Partition: p, Key: []byte(s.manifestKey(p)), Value: mv}).FirstErr(); err != nil {
		return fmt.Errorf("statestore: write manifest of partition %d: %w", p, err)
	}
	s.mu.Lock()
	s.gen[p] = m
	s.mu.Unlock()
	if hadPrev && prev.Deployment == s.dep {
		// The previous generation is no longer needed: tombstone it so
		// compaction can drop it. Losing these writes only wastes space.
		for i := 0; i < prev.Chunks; i++ {
			s.cl.Produce(context.WithoutCancel(ctx), &kgo.Record{Topic: s.topic, Partition: p, Key: []byte(s.chunkKey(p, prev.Generation, i))}, nil)
		}
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Load reads partition p's newest complete checkpoint; found is false when
// there is none.
func (s *Store) Load(ctx context.Context, p int32) (snap []byte, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(ctx, s.topic)
	if err != nil {
		return nil, false, fmt.Errorf("statestore: end offsets: %w", err)
	}
	end, ok := ends.Lookup(s.topic, p)
	if !ok || end.Err != nil {
		return nil, false, fmt.Errorf("statestore: partition %d of %s not found", p, s.topic)
	}
	if end.Offset == 0 {
		return nil, false, nil
	}
	rd, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(s.seeds...)}, s.opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: {p: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return nil, false, err
	}
	defer rd.Close()
	latest := map[string][]byte{}
	for done := false; !done; {
		// A poll that waits five seconds and brings nothing means the
		// rest of the partition up to end was compacted away.
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := rd.PollFetches(pctx)
		pcancel()
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("statestore: reading partition %d: %w", p, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, false, fmt.Errorf("statestore: reading partition %d: %w", p, ferr)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Value == nil {
				delete(latest, string(r.Key))
			} else {
				latest[string(r.Key)] = r.Value
			}
			if r.Offset+1 >= end.Offset {
				done = true
			}
		})
		if n == 0 {
			done = true
		}
	}
	s.countForeign(p, latest)
	chunkKey := s.chunkKey
	mv, ok := latest[s.manifestKey(p)]
	if !ok && s.dep != "" && s.legacy {
		if mv, ok = latest[legacyManifestKey(p)]; ok {
			chunkKey = func(p int32, gen int64, i int) string { return legacyChunkKey(p, gen, i) }
			s.log.Warn("restoring a checkpoint written before deployment ids (unprefixed keys); the next one is written under this deployment",
				"topic", s.topic, "partition", p, "deployment", s.dep)
		}
	}
	if !ok {
		return nil, false, nil
	}
	var m manifest
	if err := json.Unmarshal(mv, &m); err != nil {
		return nil, false, fmt.Errorf("%w: manifest of partition %d: %v", ErrCorrupt, p, err)
	}
	if m.Deployment != "" && m.Deployment != s.dep {
		return nil, false, fmt.Errorf("%w: manifest of partition %d names deployment %q, not %q", ErrCorrupt, p, m.Deployment, s.dep)
	}
	var buf bytes.Buffer
	for i := 0; i < m.Chunks; i++ {
		c, ok := latest[chunkKey(p, m.Generation, i)]
		if !ok {
			return nil, false, fmt.Errorf("%w: partition %d generation %d lacks chunk %d", ErrCorrupt, p, m.Generation, i)
		}
		buf.Write(c)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != m.Bytes || hex.EncodeToString(sum[:]) != m.SHA256 {
		return nil, false, fmt.Errorf("%w: partition %d generation %d checksum mismatch", ErrCorrupt, p, m.Generation)
	}
	s.mu.Lock()
	s.gen[p] = m
	s.mu.Unlock()
	return buf.Bytes(), true, nil
}

// countForeign counts and logs the live keys of partition p that belong to
// other deployments (or, without legacy, to a fusebox from before
// deployment ids).
func (s *Store) countForeign(p int32, latest map[string][]byte) {
	if s.dep == "" {
		return
	}
	own := s.dep + "/" // the deployment's: every namespace of it
	others := map[string]int{}
	for k := range latest {
		switch {
		case strings.HasPrefix(k, own):
		case legacyKey.MatchString(k):
			if !s.legacy {
				others["(before deployment ids)"]++
			}
		default:
			dep, _, _ := strings.Cut(k, "/p")
			others[dep]++
		}
	}
	for dep, n := range others {
		s.foreign.Add(int64(n))
		s.log.Warn("checkpoint records of another deployment skipped: two deployments share a state topic (give each its own topics.state)",
			"topic", s.topic, "partition", p, "deployment", s.dep, "foreign_deployment", dep, "records", n)
	}
}
