package pipeline

import (
	"log/slog"
	"slices"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
)

// newFuseGuard builds the fuse.Guard that follows the fuse topic and
// re-publishes, through the Kafka sink, the current command of any target
// whose latest record is not it (a tombstone, a replayed older command, a
// forgery): compaction then keeps fusebox's record. It runs whenever the
// Kafka sink does. Commands are told apart by the signer's keys; with
// unsigned commands (--insecure-unsigned) any unsigned command counts as
// fusebox's, so only ACLs protect the topic.
func (p *Pipeline) newFuseGuard(signer engine.Signer, log *slog.Logger) (*fuse.Guard, error) {
	v, ok := signer.(fuse.Verifier)
	if !ok {
		s, err := fuse.NewSigner(nil, fuse.AllowUnsigned())
		if err != nil {
			return nil, err
		}
		v = s
	}
	src := fuse.NewKgoSource(p.cfg.Topics.Fuse, slices.Clone(p.kopt)...)
	return fuse.NewGuard(src, v, p.Kafka.PublishFuseRecord, nil, log)
}
