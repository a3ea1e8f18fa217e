package tail

import (
	"errors"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("tail: bad snapshot")

// snapshotFormat is the snapshot's header. Version 3 adds, after the
// keys' windows, the keys whose calls carry no value of the metric
// (MethodNoSamples); version 2 is still read (none such); version 1 was
// the layout before the shared codec.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.tail", Version: 3, Err: ErrSnapshot}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.tail", Version: 2, Err: ErrSnapshot}
)

// MarshalBinary snapshots every key's window in the snapcodec layout: the
// header, then the keys in Key.String order, each with its window.Store
// (Store.Encode). Equal states give equal bytes. It never fails.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			ks.store.Encode(e)
		})
		p.unsampled.Encode(e)
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary.
// The snapshot must come from a processor with the same Every and
// MaxSamplesPerSlot; otherwise, or when the bytes are damaged, it returns
// an error wrapping ErrSnapshot and leaves the state unchanged.
func (p *Processor) UnmarshalBinary(b []byte) error {
	var keys map[schemas.Key]*keyState
	uns := nosamples.New(p.every, p.window)
	format, v2 := snapshotFormat, nosamples.IsFormat(b, snapshotFormatV2)
	if v2 {
		format = snapshotFormatV2
	}
	err := format.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, window.MinEncodedSize, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			ks := &keyState{}
			ks.store.Decode(d, p.every, p.cfg.MaxSamplesPerSlot)
			return ks
		})
		if !v2 {
			uns.Decode(d)
		}
	})
	if err != nil {
		return err
	}
	p.keys, p.unsampled = keys, uns
	return nil
}
