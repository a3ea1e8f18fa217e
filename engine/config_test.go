package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

type nopSink struct{}

func (nopSink) Write(context.Context, schemas.Output) error { return nil }
func (nopSink) Flush(context.Context) error                 { return nil }
func (nopSink) Close(context.Context) error                 { return nil }

type nopStore struct{}

func (nopStore) Load(context.Context, int32) ([]byte, bool, error) { return nil, false, nil }
func (nopStore) Save(context.Context, int32, []byte) error         { return nil }

func TestKeyedConfigDefaultsAndValidate(t *testing.T) {
	c := KeyedConfig{Store: nopStore{}, Sinks: []Sink{nopSink{}}}
	k, err := NewKeyed(c)
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultKeyedConfig(); k.cfg.CheckpointEvery != d.CheckpointEvery || k.cfg.CheckpointRecords != d.CheckpointRecords || k.cfg.Logger == nil {
		t.Errorf("defaults not applied: %+v", k.cfg)
	}
	_, err = NewKeyed(KeyedConfig{Sinks: []Sink{nil}, Worker: WorkerConfig{AllowedLateness: -1}})
	for _, want := range []string{"Store: the keyed stage needs a state store", "Sinks[0]: is nil", "Worker.AllowedLateness: must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewKeyed error %v, want it to say %q", err, want)
		}
	}
}
