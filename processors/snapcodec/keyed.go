package snapcodec

import (
	"fmt"

	"github.com/fusebox-dev/fusebox/schemas"
)

// PutKeyed writes a per-key state map: the count, then for each of keys —
// the map's keys in the caller's canonical order (processors.SortedKeys) —
// the key and the value as written by put (a method expression such as
// (*window.Store).Encode fits).
func PutKeyed[V any](e *Encoder, keys []schemas.Key, m map[schemas.Key]V, put func(V, *Encoder)) {
	e.Count(len(keys))
	for _, k := range keys {
		e.Key(k)
		put(m[k], e)
	}
}

// GetKeyed reads what PutKeyed wrote into a new map, each value read by
// get (which may call d.Failf on a value it rejects). minValueSize is the
// fewest bytes one encoded value takes, for the count check. A key present
// twice is an error; an error recorded while reading a key's value names
// the key. It returns nil when d has recorded an error.
func GetKeyed[V any](d *Decoder, minValueSize int, get func(*Decoder, schemas.Key) V) map[schemas.Key]V {
	n := d.Count(KeySize + minValueSize)
	m := make(map[schemas.Key]V, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.Key()
		if d.err != nil {
			break
		}
		if _, dup := m[k]; dup {
			d.Failf("key %q twice", k.String())
			break
		}
		m[k] = get(d, k)
		if d.err != nil {
			d.err = fmt.Errorf("key %q: %w", k.String(), d.err)
		}
	}
	if d.err != nil {
		return nil
	}
	return m
}
