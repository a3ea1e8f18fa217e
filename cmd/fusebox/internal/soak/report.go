package soak

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// scale converts a series' raw value to its report unit.
func scale(unit string, v float64) float64 {
	switch unit {
	case "MiB":
		return v / mib
	case "ms":
		return v * 1e3
	}
	return v
}

func writeProgress(w io.Writer, s *Sample, calls int64) {
	fmt.Fprintf(w, "%8s  rss %6.1f MiB  heap goal %6.1f MiB  goroutines %4.0f  fds %3.0f  checkpoint %6.2f MiB  gc pause max %6.2f ms  lag %5.1f s  verdicts %8.0f  calls %d\n",
		s.At.Round(1e9), s.RSS/mib, s.HeapGoal/mib, s.Goroutines, s.FDs, s.Checkpoint/mib, s.GCPauseMax*1e3, s.Lag, s.Verdicts, calls)
}

// WriteTable writes the summary: per series its start, end and max, and
// whether it grew; then the child's exit.
func (r *Result) WriteTable(w io.Writer) {
	o := r.Options
	fmt.Fprintf(w, "Soak: %v of traffic at %.0f calls/s (daily swing ±%.0f%%", o.Duration, o.Rate, o.Amplitude*100)
	if o.Burst > 1 {
		if o.BurstFor == 0 {
			fmt.Fprintf(w, ", ×%.0f throughout", o.Burst)
		} else {
			fmt.Fprintf(w, ", ×%.0f for %v from %.0f%%", o.Burst, o.BurstFor, o.BurstAt*100)
		}
	}
	fmt.Fprintf(w, "), %d calls, %d samples every %v (%d failed), warm-up %v.\n\n", r.Calls, len(r.Samples), o.Every, r.FailedSamples, o.WarmUp)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "series\tunit\tstart\tend\tmax\tverdict")
	for _, s := range r.Series {
		verdict := "steady"
		switch {
		case !s.Judged:
			verdict = "(reported)"
		case s.Grows:
			verdict = "GROWS"
		case strings.HasPrefix(s.Why, "not judged"):
			verdict = "not judged"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%.4g\t%.4g\t%s\n", s.Name, s.Unit, scale(s.Unit, s.Start), scale(s.Unit, s.End), scale(s.Unit, s.Max), verdict)
	}
	tw.Flush()
	for _, s := range r.Series {
		if s.Grows {
			fmt.Fprintf(w, "\n%s grows: %s\n", s.Name, s.Why)
		}
	}
	if r.Exit != nil {
		fmt.Fprintf(w, "\nfusebox's exit after SIGTERM: %v (log: %s)\n", r.Exit, r.LogPath)
	} else {
		fmt.Fprintf(w, "\nfusebox exited 0 after SIGTERM (log: %s)\n", r.LogPath)
	}
}
