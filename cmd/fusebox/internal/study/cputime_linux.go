package study

import "golang.org/x/sys/unix"

// threadCPU is the calling OS thread's user+system CPU time in ns (the
// caller has locked its goroutine to the thread); 0 if unknown.
func threadCPU() int64 { return rusage(unix.RUSAGE_THREAD) }

// processCPU is the process's user+system CPU time in ns; 0 if unknown.
func processCPU() int64 { return rusage(unix.RUSAGE_SELF) }

func rusage(who int) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
