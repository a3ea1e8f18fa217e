package decay

import (
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotFormat is the snapshot's header; version 1 was the layout before
// the shared codec.
var snapshotFormat = snapcodec.Format{Name: "fusebox.decay", Version: 2, Err: ErrCorrupt}

// MarshalBinary snapshots every key's score window (window.Store.Encode),
// keys in Key.String order, in the snapcodec layout; equal states give
// equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.Marshal(func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, (*window.Store).Encode)
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary
// taken with the same Every and MaxSamplesPerSlot. On error, which wraps
// ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	var keys map[schemas.Key]*window.Store
	err := snapshotFormat.Unmarshal(data, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, window.MinEncodedSize, func(d *snapcodec.Decoder, _ schemas.Key) *window.Store {
			st := &window.Store{}
			st.Decode(d, p.every, p.cfg.MaxSamplesPerSlot)
			return st
		})
	})
	if err != nil {
		keys = map[schemas.Key]*window.Store{}
	}
	p.keys = keys
	return err
}
