package pipeline

import (
	"errors"
	"log/slog"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/statestore"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/incident"
)

// incidentsNamespace keys the incident stage's checkpoints in the state
// topic: "<group>/incidents/p<N>/...", beside keyed partition N's.
const incidentsNamespace = "incidents"

// assembleIncidents builds the incident stage (incidents.enabled): one
// incident.Stage per partition of topics.summaries, consumed by the group
// <kafka.group>.incidents, checkpointed in a namespace of the state
// topic, writing to the pipeline's sinks.
func (p *Pipeline) assembleIncidents(f *config.File, parts Parts, log *slog.Logger) error {
	var store engine.StateStore
	switch s := parts.Store.(type) {
	case *statestore.Store:
		store = s.Namespace(incidentsNamespace)
	case interface {
		Namespace(string) engine.StateStore
	}:
		store = s.Namespace(incidentsNamespace)
	default:
		return errors.New("pipeline: incidents.enabled needs a state store with namespaces")
	}
	sc := config.IncidentStage(f, int(f.Topics.KeyedPartitions))
	var err error
	if p.incidents, err = engine.NewIncidents(engine.IncidentsConfig{
		New:   func() (engine.IncidentStage, error) { return incident.New(sc) },
		Store: store, Sinks: p.sinks, Signer: parts.Signer, CheckpointEvery: f.Time.CheckpointEvery,
		Logger: log.With("component", "incidents"),
	}); err != nil {
		return err
	}
	in := ingest.DefaultConfig()
	in.Brokers, in.Group = f.Kafka.Brokers, f.Kafka.Group+".incidents"
	in.SpanTopics, in.CorrectionTopics = nil, nil
	in.Decoders = map[string]ingest.Decoder{f.Topics.Summaries: engine.SummaryDecoder}
	in.DLQTopic, in.Handlers = f.Topics.DLQ, p.incidents.Handler
	in.Logger = log.With("component", "incidents-ingest")
	p.incidentsIn, err = parts.NewConsumer(in)
	return err
}
