package schemas

// Output is what the engine hands its sinks after processing a run of input
// records: the verdicts, the (signed) fuse commands that cite them, and the
// closed per-minute rollups. A sink makes Commands visible only after the
// Verdicts they cite (in this and earlier Outputs) are durable.
type Output struct {
	Verdicts []Verdict
	Commands []FuseCommand
	Rollups  []Rollup
}

// Empty reports whether there is nothing to write.
func (o *Output) Empty() bool {
	return len(o.Verdicts) == 0 && len(o.Commands) == 0 && len(o.Rollups) == 0
}
