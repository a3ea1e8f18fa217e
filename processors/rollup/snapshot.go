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

// snapshotFormat is the snapshot's header. Version 4 added the failed
// answers (four counters per minute); version 3 added the token kinds and
// the TPOT window. Version 3 and 2 snapshots (older builds) are still read,
// their minutes without what came later (zero counts, an empty TPOT
// window).
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.rollup", Version: 4, Err: ErrCorrupt}
	snapshotFormatV3 = snapcodec.Format{Name: "fusebox.rollup", Version: 3, Err: ErrCorrupt}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.rollup", Version: 2, Err: ErrCorrupt}
)

// Encoded sizes in bytes, for the decoder's count checks: a key's state
// without minutes (late count, minute count) and one minute (thirteen
// counters and three empty windows; nine and three in version 3, six and
// two in version 2).
const (
	keyStateSize = 8 + 8 + 4
	minuteSize   = 13*8 + 3*window.MinEncodedSize
	minuteSizeV3 = 9*8 + 3*window.MinEncodedSize
	minuteSizeV2 = 6*8 + 2*window.MinEncodedSize
)

// MarshalBinary snapshots every open minute in the snapcodec layout: in
// key order, the key, its carried late spans and corrections, and its
// minutes (start, n, errors, input and output tokens, corrections, cache
// read, cache write and reasoning tokens, failed answers, of them cut
// off, filtered and empty, the durations, TTFT and TPOT windows).
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.I64(ks.late)
			e.I64(ks.corrections)
			e.Count(len(ks.minutes))
			for _, m := range ks.minutes {
				for _, v := range [...]int64{m.start, m.n, m.errors, m.in, m.out, m.corrections, m.cacheRead, m.cacheWrite, m.reason,
					m.failed, m.failedLength, m.failedFilter, m.empty} {
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
		// An older build's snapshot? Keep the version-4 error if not.
		for _, old := range []struct {
			f      snapcodec.Format
			decode func(*snapcodec.Decoder, schemas.Key) *keyState
		}{{snapshotFormatV3, decodeKeyV3}, {snapshotFormatV2, decodeKeyV2}} {
			if errOld := old.f.Unmarshal(b, func(d *snapcodec.Decoder) {
				keys = snapcodec.GetKeyed(d, keyStateSize, old.decode)
			}); errOld == nil {
				p.keys = keys
				return nil
			}
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
			failed: d.I64(), failedLength: d.I64(), failedFilter: d.I64(), empty: d.I64(),
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

// decodeKeyV3 reads a key's state of a version-3 snapshot: no failed
// answers (zero counts for the minutes open at the upgrade).
func decodeKeyV3(d *snapcodec.Decoder, _ schemas.Key) *keyState {
	st := &keyState{late: d.I64(), corrections: d.I64()}
	for range d.Count(minuteSizeV3) {
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
