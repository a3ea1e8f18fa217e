package decay

import (
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotFormat is the snapshot's header. Version 3 adds, after the
// keys' windows, the keys' calls without a score (nosamples.Tracker);
// version 2 (none such) is still read; version 1 was the layout before
// the shared codec.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.decay", Version: 3, Err: ErrCorrupt}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.decay", Version: 2, Err: ErrCorrupt}
)

// MarshalBinary snapshots every key's score window (window.Store.Encode),
// keys in Key.String order, in the snapcodec layout, then the calls
// without a score (nosamples.Tracker.Encode); equal states give equal
// bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, (*window.Store).Encode)
		p.unsampled.Encode(e)
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary
// (format 3, or 2 of before the calls without a score were kept) taken
// with the same Every and MaxSamplesPerSlot. On error, which wraps
// ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	var keys map[schemas.Key]*window.Store
	uns := nosamples.New(p.every, p.win)
	format, v2 := snapshotFormat, nosamples.IsFormat(data, snapshotFormatV2)
	if v2 {
		format = snapshotFormatV2
	}
	err := format.Unmarshal(data, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, window.MinEncodedSize, func(d *snapcodec.Decoder, _ schemas.Key) *window.Store {
			st := &window.Store{}
			st.Decode(d, p.every, p.cfg.MaxSamplesPerSlot)
			return st
		})
		if !v2 {
			uns.Decode(d)
		}
	})
	if err != nil {
		keys = map[schemas.Key]*window.Store{}
		uns = nosamples.New(p.every, p.win)
	}
	p.keys, p.unsampled = keys, uns
	return err
}
