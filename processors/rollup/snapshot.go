package rollup

import (
	"errors"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrCorrupt is wrapped by every UnmarshalBinary error.
var ErrCorrupt = errors.New("rollup: corrupt snapshot")

// snapshotFormat is the snapshot's header. Version 3 added the token kinds
// and the TPOT window; version 2 snapshots (older builds) are still read,
// their minutes without them.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.rollup", Version: 3, Err: ErrCorrupt}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.rollup", Version: 2, Err: ErrCorrupt}
)

// Encoded sizes in bytes, for the decoder's count checks: a key's state
// without minutes (late count, minute count) and one minute (nine counters
// and three empty windows; six and two in version 2).
const (
	keyStateSize = 8 + 8 + 4
	minuteSize   = 9*8 + 3*window.MinEncodedSize
	minuteSizeV2 = 6*8 + 2*window.MinEncodedSize
)

// MarshalBinary snapshots every open minute in the snapcodec layout: in
// key order, the key, its carried late spans and corrections, and its
// minutes (start, n, errors, input and output tokens, corrections, cache
// read, cache write and reasoning tokens, the durations, TTFT and TPOT
// windows).
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.Marshal(func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.I64(ks.late)
			e.I64(ks.corrections)
			e.Count(len(ks.minutes))
			for _, m := range ks.minutes {
				for _, v := range [...]int64{m.start, m.n, m.errors, m.in, m.out, m.corrections, m.cacheRead, m.cacheWrite, m.reason} {
					e.I64(v)
				}
				m.durations.Encode(e)
				m.ttfts.Encode(e)
				m.tpots.Encode(e)
			}
		})
	}), nil
}

// UnmarshalBinary restores a snapshot. The minute windows must be one
// minute wide; their cap is taken as written. On error, which wraps
// ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(b []byte) error {
	var keys map[schemas.Key]*keyState
	err := snapshotFormat.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, keyStateSize, decodeKey)
	})
	if err != nil {
		// An older build's snapshot? Keep the version-3 error if not.
		if errV2 := snapshotFormatV2.Unmarshal(b, func(d *snapcodec.Decoder) {
			keys = snapcodec.GetKeyed(d, keyStateSize, decodeKeyV2)
		}); errV2 == nil {
			p.keys = keys
			return nil
		}
	}
	if err != nil {
		keys = map[schemas.Key]*keyState{}
	}
	p.keys = keys
	return err
}

func decodeKey(d *snapcodec.Decoder, _ schemas.Key) *keyState {
	st := &keyState{late: d.I64(), corrections: d.I64()}
	for range d.Count(minuteSize) {
		m := minute{start: d.I64(), n: d.I64(), errors: d.I64(), in: d.I64(), out: d.I64(), corrections: d.I64(),
			cacheRead: d.I64(), cacheWrite: d.I64(), reason: d.I64(),
			durations: &window.Store{}, ttfts: &window.Store{}, tpots: &window.Store{}}
		m.durations.Decode(d, Minute, 0)
		m.ttfts.Decode(d, Minute, 0)
		m.tpots.Decode(d, Minute, 0)
		if d.Err() != nil {
			break
		}
		st.minutes = append(st.minutes, m)
	}
	return st
}

// decodeKeyV2 reads a key's state of a version-2 snapshot: no token kinds,
// and an empty TPOT window sized as the durations window.
func decodeKeyV2(d *snapcodec.Decoder, _ schemas.Key) *keyState {
	st := &keyState{late: d.I64(), corrections: d.I64()}
	for range d.Count(minuteSizeV2) {
		m := minute{start: d.I64(), n: d.I64(), errors: d.I64(), in: d.I64(), out: d.I64(), corrections: d.I64(),
			durations: &window.Store{}, ttfts: &window.Store{}}
		m.durations.Decode(d, Minute, 0)
		m.ttfts.Decode(d, Minute, 0)
		m.tpots, _ = window.New(Minute, max(1, m.durations.Cap))
		if d.Err() != nil {
			break
		}
		st.minutes = append(st.minutes, m)
	}
	return st
}
