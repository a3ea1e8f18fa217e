package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// FormatValue renders one cell. Dates print as 2006-01-02, date-times as
// 2006-01-02 15:04:05 (UTC); floats with up to sigDigits significant
// digits (-1: the shortest exact form); arrays as their elements joined by
// ";". A non-finite float prints as NaN or ±Inf: the reports are written so
// that none occurs.
func FormatValue(v any, chType string, sigDigits int) string {
	switch x := v.(type) {
	case time.Time:
		if strings.HasPrefix(chType, "Date") && !strings.HasPrefix(chType, "DateTime") {
			return x.UTC().Format("2006-01-02")
		}
		return x.UTC().Format("2006-01-02 15:04:05")
	case float64:
		return formatFloat(x, sigDigits)
	case float32:
		return formatFloat(float64(x), sigDigits)
	case string:
		return x
	case []string:
		return strings.Join(x, ";")
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = formatFloat(f, sigDigits)
		}
		return strings.Join(parts, ";")
	default:
		return fmt.Sprint(v)
	}
}

func formatFloat(f float64, sig int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if sig < 0 {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', sig, 64)
	if strings.ContainsAny(s, "e") {
		return s
	}
	// Drop zeros FormatFloat pads with, keeping at least one digit.
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// WriteCSV writes the table as CSV with a header row, floats in their
// shortest exact form.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Columns); err != nil {
		return err
	}
	rec := make([]string, len(t.Columns))
	for _, row := range t.Rows {
		for i, v := range row {
			rec[i] = FormatValue(v, t.Types[i], -1)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteText writes the table as aligned columns for a terminal, floats with
// 6 significant digits, numbers right-aligned.
func (t *Table) WriteText(w io.Writer) error {
	cells := make([][]string, 0, len(t.Rows)+1)
	cells = append(cells, t.Columns)
	for _, row := range t.Rows {
		r := make([]string, len(row))
		for i, v := range row {
			r[i] = FormatValue(v, t.Types[i], 6)
		}
		cells = append(cells, r)
	}
	width := make([]int, len(t.Columns))
	for _, r := range cells {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	numeric := make([]bool, len(t.Columns))
	for i, typ := range t.Types {
		numeric[i] = strings.HasPrefix(typ, "Int") || strings.HasPrefix(typ, "UInt") || strings.HasPrefix(typ, "Float")
	}
	var b strings.Builder
	for _, r := range cells {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if numeric[i] {
				b.WriteString(pad + c)
			} else if i == len(r)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		b.WriteByte('\n')
	}
	if len(t.Rows) == 0 {
		b.WriteString("(no rows)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
