// Package jsonlsink is the JSON-lines file sink: verdicts and fuse
// commands appended to a file, one JSON object per line, in the encodings
// of the Kafka sink; Read decodes such a file.
package jsonlsink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// Sink appends verdicts, fuse commands and incident records to a file, one
// JSON object per line: {"verdict": {...}}, {"fuse_command": {...}} or
// {"incident": {...}}, in
// the encodings of the Kafka sink. Rollups are not written. Flush syncs the
// file, so a checkpoint is durable on disk.
type Sink struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	buf  []byte
	path string
	// lines written since the last successful Flush, lines made durable,
	// and failed writes or flushes (for Metrics).
	pending, written, errs int64
}

// Open opens (appends to) path.
func Open(path string) (*Sink, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sinks.jsonl.path: %w", err)
	}
	return &Sink{f: f, w: bufio.NewWriterSize(f, 256<<10), path: path}, nil
}

// Path is the file written.
func (j *Sink) Path() string { return j.path }

// Write appends the verdicts, then the commands, then the incident
// records ({"incident": {...}}, sinks.MarshalIncidentJSON).
func (j *Sink) Write(_ context.Context, out schemas.Output) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return sinks.ErrClosed
	}
	for i := range out.Verdicts {
		if err := j.writeLine(`{"verdict":`, func(b []byte) ([]byte, error) { return sinks.MarshalVerdictJSON(b, &out.Verdicts[i]) }); err != nil {
			return err
		}
	}
	for i := range out.Commands {
		if err := j.writeLine(`{"fuse_command":`, func(b []byte) ([]byte, error) {
			c, err := json.Marshal(out.Commands[i])
			return append(b, c...), err
		}); err != nil {
			return err
		}
	}
	for i := range out.Incidents {
		if err := j.writeLine(`{"incident":`, func(b []byte) ([]byte, error) { return sinks.MarshalIncidentJSON(b, &out.Incidents[i]) }); err != nil {
			return err
		}
	}
	return nil
}

// writeLine writes one line, prefix + the record marshal appends + "}\n",
// reusing j.buf. A marshal error is the record's (nothing written, not
// counted as a sink error); a write error is counted in errs.
func (j *Sink) writeLine(prefix string, marshal func([]byte) ([]byte, error)) error {
	var err error
	j.buf = append(j.buf[:0], prefix...)
	if j.buf, err = marshal(j.buf); err != nil {
		return err
	}
	j.buf = append(j.buf, "}\n"...)
	if _, err := j.w.Write(j.buf); err != nil {
		j.errs++
		return err
	}
	j.pending++
	return nil
}

// Flush writes the buffer and syncs the file.
func (j *Sink) Flush(context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return sinks.ErrClosed
	}
	err := j.w.Flush()
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		j.errs++
		return err
	}
	j.written += j.pending
	j.pending = 0
	return nil
}

// Metrics reports the lines made durable (flushed and synced) and the
// failed writes, labelled sink="jsonl" and topic=the file's path.
func (j *Sink) Metrics() []sinks.Metric {
	j.mu.Lock()
	defer j.mu.Unlock()
	l := []sinks.Label{{Name: "sink", Value: "jsonl"}, {Name: "topic", Value: j.path}}
	return []sinks.Metric{
		{Name: "fusebox_sink_records_total", Help: "Lines flushed and synced.", Kind: sinks.Counter, Labels: l, Value: float64(j.written)},
		{Name: "fusebox_sink_errors_total", Help: "Failed writes and flushes.", Kind: sinks.Counter, Labels: l, Value: float64(j.errs)},
	}
}

// Close flushes and closes the file.
func (j *Sink) Close(ctx context.Context) error {
	err := j.Flush(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		j.f = nil
	}
	return err
}

// Read decodes what a Sink wrote: the verdicts and the fuse
// commands, in file order. A last line without its newline (a write in
// progress) is ignored; any other undecodable line is an error naming its
// line number.
func Read(data []byte) ([]schemas.Verdict, []schemas.FuseCommand, error) {
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var vs []schemas.Verdict
	var cs []schemas.FuseCommand
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Verdict json.RawMessage `json:"verdict"`
			Fuse    json.RawMessage `json:"fuse_command"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, nil, fmt.Errorf("jsonl line %d: %w", n, err)
		}
		if line.Verdict != nil {
			v, err := sinks.UnmarshalVerdictJSON(line.Verdict)
			if err != nil {
				return nil, nil, fmt.Errorf("jsonl line %d: verdict: %w", n, err)
			}
			vs = append(vs, v)
		}
		if line.Fuse != nil {
			c, err := schemas.DecodeFuseCommand(line.Fuse)
			if err != nil {
				return nil, nil, fmt.Errorf("jsonl line %d: fuse_command: %w", n, err)
			}
			cs = append(cs, c)
		}
	}
	return vs, cs, sc.Err()
}

// ReadIncidents decodes the incident records of what a Sink wrote, in
// file order (the other lines are skipped; a last line without its
// newline is ignored).
func ReadIncidents(data []byte) ([]schemas.Incident, error) {
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var out []schemas.Incident
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Incident json.RawMessage `json:"incident"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("jsonl line %d: %w", n, err)
		}
		if line.Incident == nil {
			continue
		}
		inc, err := sinks.UnmarshalIncidentJSON(line.Incident)
		if err != nil {
			return nil, fmt.Errorf("jsonl line %d: incident: %w", n, err)
		}
		out = append(out, inc)
	}
	return out, sc.Err()
}
