package processors

import "testing"

type tslot struct {
	start int64
	n     int
}

func tstart(s *tslot) int64  { return s.start }
func tnew(start int64) tslot { return tslot{start: start} }

func TestDropSlotsBefore(t *testing.T) {
	var slots []tslot
	for start := int64(-5000); start < 5000; start += 1000 {
		slots = append(slots, tnew(start))
	}
	// Width 1000: the slots ending at or before 0 go, the one holding 0 stays.
	slots = DropSlotsBefore(slots, 0, 1000, tstart)
	if len(slots) != 5 || slots[0].start != 0 {
		t.Fatalf("after dropping before 0: %v", slots)
	}
	if got := DropSlotsBefore(slots, 500, 1000, tstart); len(got) != 5 {
		t.Fatalf("a slot straddling t was dropped: %v", got)
	}
	if slots = DropSlotsBefore(slots, 1<<40, 1000, tstart); len(slots) != 0 {
		t.Fatalf("%d slots left", len(slots))
	}
}
