//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols×rows and returns its master and
// slave ends.
func openPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestDemoCommandOnATerminal runs `fusebox demo` as a process whose stdout
// is a 100×30 pseudo-terminal: it draws the live view (escape codes, the
// alternate screen), and every frame fits the terminal — no line wider
// than 100 cells, no frame taller than 30 lines — with the columns that
// did not fit named.
func TestDemoCommandOnATerminal(t *testing.T) {
	const cols, rows = 100, 30
	master, slave := openPTY(t, cols, rows)
	defer master.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, master); close(copied) }() //nolint:errcheck // ends with EIO when the slave closes

	var errb bytes.Buffer
	cmd := exec.Command(os.Args[0], "demo", "--duration", "5s", "--speedup", "150", "--jsonl", filepath.Join(t.TempDir(), "demo.jsonl"))
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	cmd.Stdout, cmd.Stderr = slave, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstderr: %s", err, errb.String())
	}
	slave.Close()
	<-copied

	s := strings.ReplaceAll(out.String(), "\r", "")
	if !strings.Contains(s, "\x1b[?1049h") || !strings.Contains(s, "\x1b[H") {
		t.Fatalf("no live view on the terminal: %q", s[:min(len(s), 300)])
	}
	csi := regexp.MustCompile("\x1b\\[[0-9;?]*[@-~]")
	frames := strings.Split(s, "\x1b[H")[1:]
	if len(frames) < 3 {
		t.Fatalf("%d frames in 5 s, want one a second", len(frames))
	}
	for i, f := range frames {
		f, _, _ = strings.Cut(f, "\x1b[J") // the frame ends with "clear to the end of the screen"
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) > rows {
			t.Errorf("frame %d: %d lines on a %d-line terminal", i, len(lines), rows)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(csi.ReplaceAllString(l, "")); n > cols {
				t.Errorf("frame %d: a line of %d cells on a %d-cell terminal: %q", i, n, cols, csi.ReplaceAllString(l, ""))
			}
		}
	}
	if !strings.Contains(csi.ReplaceAllString(s, ""), "left out: widen the terminal to 177") {
		t.Error("the view does not say that columns were left out")
	}
}
