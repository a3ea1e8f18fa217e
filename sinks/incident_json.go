package sinks

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/fusebox-dev/fusebox/schemas"
)

// IncidentJSONVersion names the JSON form of an incident record
// (schemas/incident.v1.schema.json).
const IncidentJSONVersion = "fusebox.incident.v1"

// incidentJSON is the stable JSON form of a schemas.Incident: fields in
// this order, numbers in encoding/json's shortest round-trip form, keys as
// {"tenant","service","model","variant"} objects.
type incidentJSON struct {
	Schema         string        `json:"schema"`
	ID             string        `json:"id"`
	IncidentID     string        `json:"incident_id"`
	SLO            string        `json:"slo"`
	Processor      string        `json:"processor"`
	Dimension      string        `json:"dimension"`
	Value          string        `json:"value"`
	Status         string        `json:"status"`
	Breaching      int64         `json:"breaching"`
	Healthy        int64         `json:"healthy"`
	OtherBreaching int64         `json:"other_breaching"`
	OtherHealthy   int64         `json:"other_healthy"`
	PValue         float64       `json:"p_value"`
	First          int64         `json:"first_unix_nano"`
	Last           int64         `json:"last_unix_nano"`
	At             int64         `json:"at_unix_nano"`
	Keys           []schemas.Key `json:"keys"`
	MergedInto     string        `json:"merged_into,omitempty"`
	Partial        bool          `json:"partial,omitempty"`
	ConfigVersion  string        `json:"config_version"`
}

// MarshalIncidentJSON appends the JSON form of inc to dst. It fails,
// appending nothing, on a record without ids or with a p-value that is not
// a probability.
func MarshalIncidentJSON(dst []byte, inc *schemas.Incident) ([]byte, error) {
	if inc.ID == "" || inc.IncidentID == "" {
		return dst, errors.New("incident: id missing")
	}
	if math.IsNaN(inc.PValue) || inc.PValue < 0 || inc.PValue > 1 {
		return dst, errors.New("incident: p_value not in [0, 1]")
	}
	keys := inc.Keys
	if keys == nil {
		keys = []schemas.Key{}
	}
	b, err := json.Marshal(incidentJSON{
		Schema: IncidentJSONVersion, ID: inc.ID, IncidentID: inc.IncidentID, SLO: inc.SLO, Processor: inc.Processor,
		Dimension: inc.Dimension, Value: inc.Value, Status: string(inc.Status),
		Breaching: inc.Breaching, Healthy: inc.Healthy, OtherBreaching: inc.OtherBreaching, OtherHealthy: inc.OtherHealthy,
		PValue: inc.PValue, First: inc.FirstUnixNano, Last: inc.LastUnixNano, At: inc.AtUnixNano,
		Keys: keys, MergedInto: inc.MergedInto, Partial: inc.Partial, ConfigVersion: inc.ConfigVersion,
	})
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// UnmarshalIncidentJSON decodes what MarshalIncidentJSON wrote; unknown
// fields are ignored (forward compatibility).
func UnmarshalIncidentJSON(data []byte) (schemas.Incident, error) {
	var j incidentJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return schemas.Incident{}, err
	}
	if j.Schema != IncidentJSONVersion {
		return schemas.Incident{}, errors.New("incident: schema " + j.Schema + ", want " + IncidentJSONVersion)
	}
	return schemas.Incident{
		ID: j.ID, IncidentID: j.IncidentID, SLO: j.SLO, Processor: j.Processor, Dimension: j.Dimension, Value: j.Value,
		Status: schemas.IncidentStatus(j.Status), Breaching: j.Breaching, Healthy: j.Healthy,
		OtherBreaching: j.OtherBreaching, OtherHealthy: j.OtherHealthy, PValue: j.PValue,
		FirstUnixNano: j.First, LastUnixNano: j.Last, AtUnixNano: j.At, Keys: j.Keys, MergedInto: j.MergedInto, Partial: j.Partial,
		ConfigVersion: j.ConfigVersion,
	}, nil
}
