package counter

import (
	"encoding/json"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

type keySnap struct {
	Key schemas.Key
	count
}

// MarshalBinary writes every key's counts as JSON, in key order.
func (p *Processor) MarshalBinary() ([]byte, error) {
	out := []keySnap{}
	for _, k := range processors.SortedKeys(p.keys, nil) {
		out = append(out, keySnap{k, *p.keys[k]})
	}
	return json.Marshal(out)
}

// UnmarshalBinary replaces the state with a snapshot's.
func (p *Processor) UnmarshalBinary(b []byte) error {
	var in []keySnap
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	p.keys = make(map[schemas.Key]*count, len(in))
	for _, s := range in {
		c := s.count
		p.keys[s.Key] = &c
	}
	return nil
}
