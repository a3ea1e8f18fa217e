package ui

import (
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// DefaultMaxIncidents is how many incidents the page keeps (Config's
// MaxIncidents): beyond, the least recently updated closed one is
// forgotten first, then the least recently updated.
const DefaultMaxIncidents = 100

// IncidentJSON is one incident of the page's list: its newest record.
type IncidentJSON struct {
	ID        string `json:"id"` // the incident id
	SLO       string `json:"slo"`
	Processor string `json:"processor"`
	Dimension string `json:"dimension"`
	Value     string `json:"value"`
	Status    string `json:"status"`
	// Breaching and Keys are the keys carrying the value that breach and
	// all of them; OtherBreaching and Others the same for the rest.
	Breaching      int64   `json:"breaching"`
	Keys           int64   `json:"keys"`
	OtherBreaching int64   `json:"other_breaching"`
	Others         int64   `json:"others"`
	PValue         float64 `json:"p_value"`
	First          int64   `json:"first"` // Unix ms of event time
	Last           int64   `json:"last"`
	At             int64   `json:"at"`
	MergedInto     string  `json:"merged_into,omitempty"`
}

// IncidentsResponse is GET /api/ui/incidents: newest opened first.
type IncidentsResponse struct {
	Incidents []IncidentJSON `json:"incidents"`
}

// addIncident keeps inc if it is the newest record of its incident. The
// caller holds s.mu.
func (s *Store) addIncident(inc *schemas.Incident) {
	s.seq++
	if old, ok := s.incidents[inc.IncidentID]; ok {
		if inc.AtUnixNano < old.rec.AtUnixNano {
			return
		}
		old.rec, old.seq = *inc, s.seq
		old.rec.Keys = nil // the page shows counts
		return
	}
	if len(s.incidents) >= s.cfg.MaxIncidents {
		var victim *incidentEntry
		for _, e := range s.incidents {
			closed := e.rec.Status == schemas.IncidentClosed
			if victim == nil || (closed && victim.rec.Status != schemas.IncidentClosed) ||
				(closed == (victim.rec.Status == schemas.IncidentClosed) && e.seq < victim.seq) {
				victim = e
			}
		}
		delete(s.incidents, victim.rec.IncidentID)
	}
	e := &incidentEntry{rec: *inc, seq: s.seq}
	e.rec.Keys = nil
	s.incidents[inc.IncidentID] = e
}

type incidentEntry struct {
	rec schemas.Incident
	seq uint64
}

// Incidents returns the IncidentsResponse of the store's content.
func (s *Store) Incidents() IncidentsResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := IncidentsResponse{Incidents: []IncidentJSON{}}
	for _, e := range s.incidents {
		i := &e.rec
		r.Incidents = append(r.Incidents, IncidentJSON{ID: i.IncidentID, SLO: i.SLO, Processor: i.Processor, Dimension: i.Dimension,
			Value: i.Value, Status: string(i.Status), Breaching: i.Breaching, Keys: i.Breaching + i.Healthy,
			OtherBreaching: i.OtherBreaching, Others: i.OtherBreaching + i.OtherHealthy, PValue: i.PValue,
			First: i.FirstUnixNano / 1e6, Last: i.LastUnixNano / 1e6, At: i.AtUnixNano / 1e6, MergedInto: i.MergedInto})
	}
	slices.SortFunc(r.Incidents, func(a, b IncidentJSON) int {
		if c := cmpInt(b.First, a.First); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return r
}
