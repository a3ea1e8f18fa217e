package pipeline

import (
	"log/slog"
	"slices"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/sinks/kafkasink"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newFuseGuard builds the fuse.Guard that follows the fuse topic and
// re-publishes, through the Kafka sink, the current command of any target
// whose latest record is not it (a tombstone, a replayed older command, a
// forgery): compaction then keeps fusebox's record. It runs whenever the
// Kafka sink does. Commands are told apart by the signer's keys; with
// unsigned commands (--insecure-unsigned) any unsigned command counts as
// fusebox's, so only ACLs protect the topic.
func newFuseGuard(topic string, kopt []kgo.Opt, sink *kafkasink.Sink, signer engine.Signer, log *slog.Logger) (*fuse.Guard, error) {
	v, ok := signer.(fuse.Verifier)
	if !ok {
		s, err := fuse.NewSigner(nil, fuse.AllowUnsigned())
		if err != nil {
			return nil, err
		}
		v = s
	}
	src := fuse.NewKgoSource(topic, slices.Clone(kopt)...)
	return fuse.NewGuard(src, v, sink.PublishFuseRecord, nil, log)
}
