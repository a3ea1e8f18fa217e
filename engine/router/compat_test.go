package router

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestRouterWritesPreviousKeyedBatchVersion: a router with
// KeyedBatchVersion 2 (compat.write_formats: previous) writes keyed
// records of version 2 to the broker — what the pods of the build before
// Span.Scope read — whose spans decode with every field but the scope; a
// router without it writes version 3.
func TestRouterWritesPreviousKeyedBatchVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{
		Listen:     "127.0.0.1:0",
		Partitions: 1,
		Topics:     []broker.TopicSpec{{Name: "keyed-cur", Partitions: 1}, {Name: "keyed-prev", Partitions: 1}, {Name: "spans", Partitions: 1}},
		LogLevel:   "none",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base := int64(1_800_000_000e9)
	in := span("acme", base)
	in.Scope = "openlit.otel.tracing"
	for _, tc := range []struct {
		topic     string
		set, want byte
	}{{"keyed-cur", 0, schemas.KeyedBatchVersion}, {"keyed-prev", schemas.KeyedBatchVersion2, schemas.KeyedBatchVersion2}} {
		cl, err := kgo.NewClient(b.ClientOpts()...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		r, err := New(ctx, cl, Config{KeyedTopic: tc.topic, SourceTopics: []string{"spans"}, KeyedBatchVersion: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		h := r.Handler("spans", 0)
		if err := h.Handle(ctx, &ingest.Batch{Topic: "spans", NextOffset: 1,
			Records: []ingest.Record{{Topic: "spans", Offset: 0, Spans: []schemas.Span{in}}}}); err != nil {
			t.Fatal(err)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rd, err := kgo.NewClient(append(b.ClientOpts(), kgo.ConsumeTopics(tc.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		var got *kgo.Record
		for got == nil {
			fs := rd.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: no keyed record with spans: %v", tc.topic, err)
			}
			fs.EachRecord(func(rec *kgo.Record) {
				if len(rec.Value) > 0 && got == nil {
					got = rec
				}
			})
		}
		if got.Value[0] != tc.want {
			t.Fatalf("KeyedBatchVersion %d: the router wrote version %d, want %d", tc.set, got.Value[0], tc.want)
		}
		spans, _, err := schemas.DecodeKeyedBatch(got.Value, nil, nil)
		want := in
		if tc.want == schemas.KeyedBatchVersion2 {
			want.Scope = ""
		}
		if err != nil || len(spans) != 1 || spans[0] != want {
			t.Fatalf("version %d: %+v %v, want %+v", tc.want, spans, err, want)
		}
	}
}
