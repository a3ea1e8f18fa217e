// Package soak is `fusebox bench soak`: fusebox as its own process (`fusebox
// run`, every processor of the demo's SLO file on) fed live-paced traffic
// for a wall-clock duration — a day's pattern compressed into it, with an
// optional burst — while its resources are sampled every interval from
// /proc and its /metrics: resident memory, the GC heap goal, goroutines,
// open file descriptors, checkpoint size, the longest recent GC pause, the
// event-time lag and the verdicts written. After a warm-up (the SLO
// windows filling), a series "grows" when the minimum of its last third
// exceeds the maximum of its first third by a margin and the Theil–Sen
// slope of its second half is positive at 95% (its lower bound above 0):
// a plateau, a sawtooth or one spike is not growth, a leak is.
//
// The process under test is the only one measured: the broker (an
// embedded kfake, or the brokers given) and the traffic producer live in
// the calling process.
package soak
