package sinks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The stable JSON form of a verdict, as written to fusebox.verdicts. Field
// order is fixed; details keep the processor's order as an object:
//
//	{"id":"…","processor":"tail","slo":"chat-latency","metric":"duration_ms",
//	 "key":{"tenant":"t1","service":"chat","model":"m","variant":"canary"},
//	 "window_start_unix_nano":1700000000000000000,"window_end_unix_nano":…,
//	 "window_start":"2023-11-14T22:13:20Z","window_end":"…",
//	 "value":812.5,"threshold":800,"lower":790.1,"upper":850,"interval_level":0.95,
//	 "status":"warn","method":"gpd_mle_profile","n":12000,
//	 "details":{"xi":0.12,"sigma":31.5,"u":640},"config_version":"v7"}
//
// window_start and window_end are the unix-nano fields rendered as RFC 3339
// in UTC for people reading the topic; decoders read the unix-nano fields.
// Numbers use encoding/json's shortest round-trip form, so decoding gives
// back the same float64 bit for bit. Unknown fields are ignored on decode
// (forward compatibility); the encoding of a given verdict never changes
// within a schema version.

// VerdictJSONVersion names this encoding; bump it only with a new field set.
const VerdictJSONVersion = "fusebox.verdict.v1"

// MarshalVerdictJSON appends the stable JSON form of v to dst and returns the
// extended slice. It fails, appending nothing, when v does not pass
// Validate (a non-finite number has no JSON form).
func MarshalVerdictJSON(dst []byte, v *schemas.Verdict) ([]byte, error) {
	if err := v.Validate(); err != nil {
		return dst, err
	}
	b := dst
	b = append(b, `{"id":`...)
	b = schemas.AppendJSONString(b, v.ID)
	b = append(b, `,"processor":`...)
	b = schemas.AppendJSONString(b, v.Processor)
	b = append(b, `,"slo":`...)
	b = schemas.AppendJSONString(b, v.SLO)
	b = append(b, `,"metric":`...)
	b = schemas.AppendJSONString(b, v.Metric)
	b = append(b, `,"key":{"tenant":`...)
	b = schemas.AppendJSONString(b, v.Key.Tenant)
	b = append(b, `,"service":`...)
	b = schemas.AppendJSONString(b, v.Key.Service)
	b = append(b, `,"model":`...)
	b = schemas.AppendJSONString(b, v.Key.Model)
	b = append(b, `,"variant":`...)
	b = schemas.AppendJSONString(b, v.Key.Variant)
	b = append(b, `},"window_start_unix_nano":`...)
	b = strconv.AppendInt(b, v.WindowStartUnixNano, 10)
	b = append(b, `,"window_end_unix_nano":`...)
	b = strconv.AppendInt(b, v.WindowEndUnixNano, 10)
	b = append(b, `,"window_start":"`...)
	b = time.Unix(0, v.WindowStartUnixNano).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","window_end":"`...)
	b = time.Unix(0, v.WindowEndUnixNano).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","value":`...)
	b = schemas.AppendJSONFloat(b, v.Value)
	b = append(b, `,"threshold":`...)
	b = schemas.AppendJSONFloat(b, v.Threshold)
	b = append(b, `,"lower":`...)
	b = schemas.AppendJSONFloat(b, v.Lower)
	b = append(b, `,"upper":`...)
	b = schemas.AppendJSONFloat(b, v.Upper)
	b = append(b, `,"interval_level":`...)
	b = schemas.AppendJSONFloat(b, v.IntervalLevel)
	b = append(b, `,"status":`...)
	b = schemas.AppendJSONString(b, string(v.Status))
	b = append(b, `,"method":`...)
	b = schemas.AppendJSONString(b, v.Method)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, v.N, 10)
	b = append(b, `,"details":{`...)
	for i, d := range v.Details {
		if i > 0 {
			b = append(b, ',')
		}
		b = schemas.AppendJSONString(b, d.Name)
		b = append(b, ':')
		b = schemas.AppendJSONFloat(b, d.Value)
	}
	b = append(b, `},"config_version":`...)
	b = schemas.AppendJSONString(b, v.ConfigVersion)
	b = append(b, '}')
	return b, nil
}

// verdictJSON mirrors the encoding for decoding; details are parsed
// separately to keep their order.
type verdictJSON struct {
	ID        string `json:"id"`
	Processor string `json:"processor"`
	SLO       string `json:"slo"`
	Metric    string `json:"metric"`
	Key       struct {
		Tenant  string `json:"tenant"`
		Service string `json:"service"`
		Model   string `json:"model"`
		Variant string `json:"variant"`
	} `json:"key"`
	WindowStartUnixNano int64           `json:"window_start_unix_nano"`
	WindowEndUnixNano   int64           `json:"window_end_unix_nano"`
	Value               float64         `json:"value"`
	Threshold           float64         `json:"threshold"`
	Lower               float64         `json:"lower"`
	Upper               float64         `json:"upper"`
	IntervalLevel       float64         `json:"interval_level"`
	Status              string          `json:"status"`
	Method              string          `json:"method"`
	N                   int64           `json:"n"`
	Details             json.RawMessage `json:"details"`
	ConfigVersion       string          `json:"config_version"`
}

// UnmarshalVerdictJSON decodes the form written by MarshalVerdictJSON. The
// error wraps schemas.ErrMalformed for bytes that are not such an object and
// schemas.ErrInvalid for a verdict that decodes but fails Validate.
func UnmarshalVerdictJSON(data []byte) (schemas.Verdict, error) {
	var j verdictJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return schemas.Verdict{}, fmt.Errorf("%w: verdict json: %v", schemas.ErrMalformed, err)
	}
	details, err := decodeDetails(j.Details)
	if err != nil {
		return schemas.Verdict{}, fmt.Errorf("%w: verdict json: details: %v", schemas.ErrMalformed, err)
	}
	v := schemas.Verdict{
		ID: j.ID, Processor: j.Processor, SLO: j.SLO, Metric: j.Metric,
		Key:                 schemas.Key{Tenant: j.Key.Tenant, Service: j.Key.Service, Model: j.Key.Model, Variant: j.Key.Variant},
		WindowStartUnixNano: j.WindowStartUnixNano, WindowEndUnixNano: j.WindowEndUnixNano,
		Value: j.Value, Threshold: j.Threshold, Lower: j.Lower, Upper: j.Upper, IntervalLevel: j.IntervalLevel,
		Status: schemas.Status(j.Status), Method: j.Method, N: j.N, Details: details,
		ConfigVersion: j.ConfigVersion,
	}
	if err := v.Validate(); err != nil {
		return schemas.Verdict{}, err
	}
	return v, nil
}

// decodeDetails reads a JSON object of name → number keeping the order of
// its members (encoding/json's maps would lose it).
func decodeDetails(raw json.RawMessage) ([]schemas.Detail, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want an object")
	}
	var out []schemas.Detail
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errors.New("want a member name")
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("member %q: want a number", name)
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, fmt.Errorf("member %q: %v", name, err)
		}
		out = append(out, schemas.Detail{Name: name, Value: f})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return out, nil
}
