package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
)

const corrTraceHex = "0af7651916cd43dd8448eb211c80319c"

// validCorrection is correction event i in the schema's JSON form, as an
// application would write it by hand.
func validCorrection(i int) []byte {
	if i%2 == 1 { // join by session, with the optional properties
		return []byte(fmt.Sprintf(`{"schema_version":1,"event_id":"ev-%d","time":"2025-10-09T08:00:00.5Z","tenant":"acme",`+
			`"session_id":"sess-%d","model":"gpt-x","variant":"canary","kind":"rephrase","context":{"screen":"chat","locale":"fr"}}`, i, i))
	}
	return []byte(fmt.Sprintf(`{"schema_version":1,"event_id":"ev-%d","time":"2025-10-09T08:00:00Z","tenant":"acme",`+
		`"trace_id":"%s","kind":"reject"}`, i, corrTraceHex))
}

// correctionCases are the own malformed corpus for correction topics.
func correctionCases(t testing.TB) []badCase {
	c := func(name string, kind ErrorKind, v string) badCase {
		return badCase{name: "correction: " + name, topic: DefaultCorrectionTopic, kind: kind, value: []byte(v)}
	}
	return []badCase{
		c("broken JSON", KindMalformed, `{"event_id":"x",`),
		c("not an object", KindInvalid, `["reject"]`), // valid JSON breaking "type": "object"
		c("invalid UTF-8", KindMalformed, "{\"schema_version\":1,\"event_id\":\"\xff\",\"time\":\"2025-10-09T08:00:00Z\",\"tenant\":\"a\",\"trace_id\":\""+corrTraceHex+"\",\"kind\":\"reject\"}"),
		c("unknown kind", KindInvalid, `{"schema_version":1,"event_id":"e","time":"2025-10-09T08:00:00Z","tenant":"acme","trace_id":"`+corrTraceHex+`","kind":"shrug"}`),
		c("no trace or session id", KindInvalid, `{"schema_version":1,"event_id":"e","time":"2025-10-09T08:00:00Z","tenant":"acme","kind":"reject"}`),
		c("time not RFC 3339", KindInvalid, `{"schema_version":1,"event_id":"e","time":"yesterday","tenant":"acme","trace_id":"`+corrTraceHex+`","kind":"reject"}`),
		c("unknown property", KindInvalid, `{"schema_version":1,"event_id":"e","time":"2025-10-09T08:00:00Z","tenant":"acme","trace_id":"`+corrTraceHex+`","kind":"reject","mood":"sad"}`),
		c("schema version 2", KindInvalid, `{"schema_version":2,"event_id":"e","time":"2025-10-09T08:00:00Z","tenant":"acme","trace_id":"`+corrTraceHex+`","kind":"reject"}`),
	}
}

// TestCorrections publishes correction events with kafka-go and reads them
// through ingest: every field arrives, in order.
func TestCorrections(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultCorrectionTopic, 2, nil)
	k.CreateTopic(t, DefaultDLQTopic, 1, nil)
	var msgs []kafka.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, msg(i%2, fmt.Sprint(i), validCorrection(i)))
	}
	newPublisher(t, k, DefaultCorrectionTopic).publish(t, msgs...)
	s := &sink{}
	r := start(t, k, "g-corr", SpanTopics(), Handlers(s.factory))
	testharness.Eventually(t, 30*time.Second, "every correction delivered", func() bool { return s.count() == len(msgs) })

	trace, err := schemas.ParseTraceID(corrTraceHex)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int32]int{0: -2, 1: -1}
	for _, rec := range s.snapshot() {
		if len(rec.Corrections) != 1 {
			t.Fatalf("%d/%d: %d corrections, want 1", rec.Partition, rec.Offset, len(rec.Corrections))
		}
		var i int
		got := rec.Corrections[0]
		if _, err := fmt.Sscanf(got.EventID, "ev-%d", &i); err != nil {
			t.Fatalf("event id %q", got.EventID)
		}
		if i != last[rec.Partition]+2 {
			t.Errorf("partition %d: event %d after %d", rec.Partition, i, last[rec.Partition])
		}
		last[rec.Partition] = i
		want := schemas.Correction{SchemaVersion: 1, EventID: got.EventID, Tenant: "acme",
			TimeUnixNano: time.Date(2025, 10, 9, 8, 0, 0, 0, time.UTC).UnixNano(), TraceID: trace, Kind: schemas.KindReject}
		if i%2 == 1 {
			want.TraceID = schemas.TraceID{}
			want.TimeUnixNano += 5e8
			want.SessionID, want.Model, want.Variant, want.Kind = fmt.Sprintf("sess-%d", i), "gpt-x", "canary", schemas.KindRephrase
			want.Context = []schemas.KV{{Key: "locale", Value: "fr"}, {Key: "screen", Value: "chat"}}
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("correction %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if st := r.c.Stats(); st.Corrections != int64(len(msgs)) {
		t.Errorf("Stats.Corrections = %d, want %d", st.Corrections, len(msgs))
	}
}
