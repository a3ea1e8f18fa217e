// Package testharness starts the real services integration tests talk to:
// a Kafka broker — franz-go's kfake in-process (StartKafka), or the one
// FUSEBOX_KAFKA=kfake|apache picks (StartBroker): Apache Kafka is a
// single-node KRaft broker in a JVM, its jars fetched once per machine by
// Maven from testing/kafka/pom.xml into .cache/, skipped with a message
// without java/mvn unless FUSEBOX_REQUIRE_APACHE_KAFKA=1 — and a
// ClickHouse server (StartClickHouse): FUSEBOX_CLICKHOUSE_ADDR, else
// clickhouse-server from PATH or /usr/sbin started on a free loopback port,
// else testcontainers where a Docker engine answers, else a skip that
// FUSEBOX_REQUIRE_CLICKHOUSE=1 turns into a failure.
//
// One ClickHouse server serves all tests of a test binary; each test takes
// its own database with NewDatabase. A package that uses it runs its tests
// through Main, which stops the server after the last test:
//
//	func TestMain(m *testing.M) { testharness.Main(m) }
//
//	func TestSink(t *testing.T) {
//		ch := testharness.StartClickHouse(t)
//		db := ch.NewDatabase(t)          // dropped when the test ends
//		conn := ch.ConnDatabase(t, db)   // clickhouse-go v2, native protocol
//		...
//	}
//
// The kfake cluster is internal/broker's (broker.StartWithKfakeOpts): the
// module starts kfake in that one package.
//
// A test that takes its broker from StartBroker is named TestKafka...
// (ConformancePrefix), and no other test is: scripts/test runs
// -run '^TestKafka' again with FUSEBOX_KAFKA=apache, and
// TestConformanceSetFollowsTheConvention holds the names to it.
//
// Tests wait with Eventually (or Poll, where the failure needs the state at
// the deadline): one polling helper that fails naming what was awaited and
// for how long. Wait on the event a test stands for, not a fixed time.
//
// Promtool finds Prometheus's promtool for the tests that lint /metrics
// and the alert rules, with the same skip-or-fail rule.
//
// Every integration test in the module uses it, so there is one place that
// knows how to bring the services up and down. It is for tests only.
package testharness
