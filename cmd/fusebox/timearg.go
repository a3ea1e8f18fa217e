package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The time arguments of every command (report --from/--to, gen --start)
// are read by parseTimeArg, and the lengths of time (calibrate --last) by
// parseDays: one syntax everywhere, as docs/cli.md's "Time arguments" says.

// parseTimeArg reads a point in time:
//   - "now", or now plus or minus a duration: "now-1d", "now-90m",
//     "now+1h30m", "now-1w2d" (units as parseDays);
//   - RFC 3339, with or without fractional seconds: "2025-03-04T10:00:00Z",
//     "2025-03-04T10:00:00+02:00" (returned in UTC);
//   - a date, midnight UTC: "2025-03-04".
func parseTimeArg(s string, now time.Time) (time.Time, error) {
	if rest, ok := strings.CutPrefix(s, "now"); ok {
		if rest == "" {
			return now, nil
		}
		if rest[0] != '-' && rest[0] != '+' {
			return time.Time{}, fmt.Errorf("%q: want now, now-DURATION or now+DURATION (e.g. now-1d, now-90m)", s)
		}
		d, err := parseDays(rest[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want now, now-DURATION or now+DURATION (e.g. now-1d, now-90m): %v", s, err)
		}
		if rest[0] == '-' {
			d = -d
		}
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2025-03-04T10:00:00Z), a date (2025-03-04), now, or now-DURATION (now-1d, now-90m)", s)
}

// parseDays is time.ParseDuration with two more units, d (24 h) and w
// (7 d): "1d", "1w2d", "1d12h", "90m", "1.5d". Unsigned: a sign is the
// caller's.
func parseDays(s string) (time.Duration, error) {
	if s == "" || s[0] == '-' || s[0] == '+' {
		return 0, fmt.Errorf("duration %q: want e.g. 1d, 36h, 90m", s)
	}
	var total time.Duration
	var plain strings.Builder // the parts time.ParseDuration reads
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && (rest[i] == '.' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] == '.' || rest[j] >= '0' && rest[j] <= '9') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		var per time.Duration
		switch unit {
		case "d":
			per = 24 * time.Hour
		case "w":
			per = 7 * 24 * time.Hour
		default:
			plain.WriteString(num + unit)
			continue
		}
		n, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" {
			return 0, fmt.Errorf("duration %q: want e.g. 1d, 36h, 90m", s)
		}
		total += time.Duration(n * float64(per))
	}
	if plain.Len() > 0 {
		d, err := time.ParseDuration(plain.String())
		if err != nil {
			return 0, fmt.Errorf("duration %q: want e.g. 1d, 36h, 90m", s)
		}
		total += d
	}
	return total, nil
}

// daysValue is a flag.Value of a duration read by parseDays.
type daysValue time.Duration

func (d *daysValue) String() string { return time.Duration(*d).String() }

func (d *daysValue) Set(s string) error {
	v, err := parseDays(s)
	if err != nil {
		return err
	}
	*d = daysValue(v)
	return nil
}
