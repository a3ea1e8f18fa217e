//go:build !linux

package study

// threadCPU and processCPU are not measured off Linux: the table's CPU
// columns read 0.
func threadCPU() int64  { return 0 }
func processCPU() int64 { return 0 }
