package drift

import (
	"errors"
	"math"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("drift: bad snapshot")

// snapshotFormat is the snapshot's header. Version 4 adds, per key after
// its store, the sequential detectors' statistics (cusum's two sides and
// slice's, F64 each); version 3 (none: restored at 0) and version 2
// (neither those nor the calls without a value) are still read; version
// 1 was the layout before the shared codec.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.drift", Version: 4, Err: ErrSnapshot}
	snapshotFormatV3 = snapcodec.Format{Name: "fusebox.drift", Version: 3, Err: ErrSnapshot}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.drift", Version: 2, Err: ErrSnapshot}
)

// MarshalBinary snapshots every key in the snapcodec layout: the header,
// then the keys in Key.String order, each with its k-consecutive counter
// (U32) and its window.Store (Store.Encode), then the calls without a
// value (nosamples.Tracker.Encode). Equal states give equal bytes. It
// never fails.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.U32(uint32(ks.consecutive))
			ks.store.Encode(e)
			e.F64(ks.hi)
			e.F64(ks.lo)
			e.F64(ks.bad)
		})
		p.unsampled.Encode(e)
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary
// (format 4, or 3 of before the sequential detectors, or 2 of before the
// calls without a value were kept). The snapshot must come from a
// processor with the same slot width (Interval) and cap per slot; otherwise, or when the bytes are damaged, it returns
// an error wrapping ErrSnapshot and leaves the state unchanged.
func (p *Processor) UnmarshalBinary(b []byte) error {
	var keys map[schemas.Key]*keyState
	uns := nosamples.New(p.every, p.window)
	format, v2, v3 := snapshotFormat, nosamples.IsFormat(b, snapshotFormatV2), nosamples.IsFormat(b, snapshotFormatV3)
	switch {
	case v2:
		format = snapshotFormatV2
	case v3:
		format = snapshotFormatV3
	}
	minKey := 4 + window.MinEncodedSize
	if !v2 && !v3 {
		minKey += 3 * 8
	}
	err := format.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, minKey, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			ks := &keyState{consecutive: int(d.U32())}
			ks.store.Decode(d, p.step, p.slotCap())
			if !v2 && !v3 {
				ks.hi, ks.lo, ks.bad = d.F64(), d.F64(), d.F64()
				for _, x := range []float64{ks.hi, ks.lo, ks.bad} {
					if !(x >= 0) || math.IsInf(x, 0) {
						d.Failf("sequential statistic %v: must be finite and non-negative", x)
					}
				}
			}
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
