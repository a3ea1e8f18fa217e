package fuse

import "context"

// Record is one record of the fuse topic as a Source delivers it.
type Record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte // nil for a tombstone
	// Control marks a transaction marker: it carries no command, only
	// moves the partition's position (for the catch-up to the end offsets).
	Control bool
}

// Source delivers the fuse topic from the start of every partition, then
// follows it. A Client calls Open once (again after an error), then Poll
// until its context ends, then Close, all from one goroutine.
//
// Implementations: KgoSource (franz-go, the default) and, in package
// fuse/kafkago, one on segmentio/kafka-go.
type Source interface {
	// Open connects, positions every partition at its earliest offset, and
	// returns the end offset (exclusive) of each partition that holds
	// records at that moment. The client is ready once it has been given
	// the record at end-1 of each of them. A topic that does not exist yet
	// may be reported as empty (an empty map).
	Open(ctx context.Context) (map[int32]int64, error)
	// Poll blocks until it has records, an error, or ctx ends (then it
	// returns ctx's error). After Close it returns ErrSourceClosed.
	Poll(ctx context.Context) ([]Record, error)
	// Close releases the connections.
	Close() error
}
