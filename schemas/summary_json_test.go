package schemas

import (
	"reflect"
	"testing"
)

func TestSummaryJSONRoundTrip(t *testing.T) {
	s := EvalSummary{SLO: "latency", Processor: "tail", AtUnixNano: 1_700_000_060_000_000_000, Partition: 3,
		Keys: []SummaryKey{{Key: Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "canary"}, Status: StatusBreach, Tripped: true},
			{Key: Key{Tenant: "acme", Service: "search", Model: "m", Variant: "baseline"}, Status: StatusOK}},
		Commands: []FuseCommand{{Target: Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "canary"}, Action: ActionTrip, Level: 2,
			State: StateOpen, Version: 7, IssuedAtUnixNano: 1_700_000_060_000_000_000, ExpiresAtUnixNano: 1_700_000_960_000_000_000,
			Reasons: []Reason{{VerdictID: "ab", Text: "3 of 10"}}, CorrelationIDs: []string{"inc", "slo:latency"}}},
	}
	b, err := MarshalSummaryJSON(&s)
	if err != nil {
		t.Fatal(err)
	}
	var back EvalSummary
	if err := UnmarshalSummaryJSON(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip:\n%+v\n%+v", back, s)
	}
	empty := EvalSummary{SLO: "latency", AtUnixNano: 60e9}
	b, _ = MarshalSummaryJSON(&empty)
	if err := UnmarshalSummaryJSON(b, &back); err != nil || !reflect.DeepEqual(back, empty) {
		t.Fatalf("empty summary: %v %+v", err, back)
	}
}
