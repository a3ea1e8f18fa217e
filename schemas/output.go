package schemas

// Output is what the engine hands its sinks after processing a run of input
// records: the verdicts, the (signed) fuse commands that cite them, and the
// closed per-minute rollups. A sink makes Commands visible only after the
// Verdicts they cite (in this and earlier Outputs) are durable.
type Output struct {
	Verdicts []Verdict
	Commands []FuseCommand
	Rollups  []Rollup
	// Summaries are the workers' evaluation summaries (only with
	// incidents configured): the incident stage's input, not written by
	// the verdict sinks.
	Summaries []EvalSummary
	// Incidents are the incident stage's records.
	Incidents []Incident
}

// Empty reports whether there is nothing to write.
func (o *Output) Empty() bool {
	return len(o.Verdicts) == 0 && len(o.Commands) == 0 && len(o.Rollups) == 0 &&
		len(o.Summaries) == 0 && len(o.Incidents) == 0
}
