package schemas

import "encoding/json"

// summaryJSON is the wire form of an EvalSummary on topics.summaries
// (encoding/json; fuse commands in their canonical JSON).
type summaryJSON struct {
	SLO        string           `json:"slo"`
	Processor  string           `json:"processor"`
	AtUnixNano int64            `json:"at_unix_nano"`
	Partition  int32            `json:"partition"`
	Keys       []summaryKeyJSON `json:"keys"`
	Commands   []FuseCommand    `json:"commands,omitempty"`
}

type summaryKeyJSON struct {
	Key     Key    `json:"key"`
	Status  Status `json:"status"`
	Tripped bool   `json:"tripped,omitempty"`
}

// MarshalSummaryJSON is the record value of s on topics.summaries.
func MarshalSummaryJSON(s *EvalSummary) ([]byte, error) {
	j := summaryJSON{SLO: s.SLO, Processor: s.Processor, AtUnixNano: s.AtUnixNano, Partition: s.Partition, Commands: s.Commands,
		Keys: make([]summaryKeyJSON, len(s.Keys))}
	for i, k := range s.Keys {
		j.Keys[i] = summaryKeyJSON(k)
	}
	return json.Marshal(j)
}

// UnmarshalSummaryJSON decodes what MarshalSummaryJSON wrote.
func UnmarshalSummaryJSON(b []byte, s *EvalSummary) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = EvalSummary{SLO: j.SLO, Processor: j.Processor, AtUnixNano: j.AtUnixNano, Partition: j.Partition, Commands: j.Commands}
	if len(j.Keys) > 0 {
		s.Keys = make([]SummaryKey, len(j.Keys))
		for i, k := range j.Keys {
			s.Keys[i] = SummaryKey(k)
		}
	}
	return nil
}
