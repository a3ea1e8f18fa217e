package replay

import (
	"fmt"
	"os"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Result is what the workers of every keyed partition produced.
type Result struct {
	// Output concatenates the partitions' outputs, partition 0 first, each
	// in the order its worker produced it.
	Output schemas.Output
	// Partitions holds each keyed partition's output.
	Partitions []schemas.Output
	// Stats sums the workers' counters (Watermark is the smallest).
	Stats engine.WorkerStats
}

// Drive applies each keyed partition's records to a fresh worker and
// collects everything the workers produce.
func Drive(cfg engine.WorkerConfig, keyed [][]engine.KeyedRecord) (Result, error) {
	var res Result
	res.Partitions = make([]schemas.Output, len(keyed))
	for p, recs := range keyed {
		w, err := engine.NewWorker(cfg, int32(p))
		if err != nil {
			return res, err
		}
		var out schemas.Output
		for i := range recs {
			w.Apply(&recs[i])
			take(&out, w.TakeOutput())
		}
		res.Partitions[p] = out
		take(&res.Output, out)
		addStats(&res.Stats, w.Stats(), p == 0)
	}
	return res, nil
}

func take(dst *schemas.Output, o schemas.Output) {
	dst.Verdicts = append(dst.Verdicts, o.Verdicts...)
	dst.Commands = append(dst.Commands, o.Commands...)
	dst.Rollups = append(dst.Rollups, o.Rollups...)
	dst.Summaries = append(dst.Summaries, o.Summaries...)
	dst.Incidents = append(dst.Incidents, o.Incidents...)
}

// addStats adds s to dst; dst's watermark is the lowest of the workers'.
func addStats(dst *engine.WorkerStats, s engine.WorkerStats, first bool) {
	dst.Add(s)
	if first || s.Watermark < dst.Watermark {
		dst.Watermark = s.Watermark
	}
}

// LoadWorkerConfig reads an SLO file and returns what every partition
// worker of `fusebox run` would run with it (config.WorkerConfig), and
// the loaded file.
func LoadWorkerConfig(path string) (engine.WorkerConfig, *config.File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return engine.WorkerConfig{}, nil, err
	}
	return ParseWorkerConfig(path, b)
}

// ParseWorkerConfig is LoadWorkerConfig on the file's bytes.
func ParseWorkerConfig(name string, b []byte) (engine.WorkerConfig, *config.File, error) {
	f, err := config.Parse(name, b)
	if err != nil {
		return engine.WorkerConfig{}, nil, err
	}
	wc, err := config.WorkerConfig(f)
	if err != nil {
		return engine.WorkerConfig{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	return wc, f, nil
}
